/* aws_it.c - common/aws against a real moto server (started by moto_it.sh).
 *
 *   aws_it ENDPOINT
 *
 * While moto still lets the first calls through unauthenticated
 * (INITIAL_NO_AUTH_ACTION_COUNT), create an IAM user with an allow-all
 * policy and an access key, through our own Query client.  From then on
 * moto checks SigV4 for every call, so everything after proves the signer:
 * RunInstances of two instances tagged for a cluster, DescribeInstances
 * finds exactly them by tag, CreateTags, TerminateInstances, and calls
 * signed with a wrong secret or an unknown key are rejected as AUTH.
 * Then the launcher's managed instance profile (services/launcher/
 * profile.c) on moto's IAM, signed with the same key: ensure creates the
 * profile with its tags and role, a second ensure makes no write call, a
 * role change swaps the role in the same profile, a missing role comes
 * back as NoSuchEntity, and gc deletes the profile of a class that is gone
 * and nothing else.
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_awscreds.h"
#include "tlr_awsquery.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_awsjson.h"
#include "tlr_eks.h"
#include "tlr_iam.h"

#include "profile.h"   /* the launcher's instance-profile logic (tailor_launcher_logic) */

static int passed, failed;

#define CHECK(name, cond, ...)                                                \
    do {                                                                      \
        if (cond) {                                                           \
            printf("PASS: %s\n", name);                                       \
            passed++;                                                         \
        } else {                                                              \
            printf("FAIL: %s: ", name);                                       \
            printf(__VA_ARGS__);                                              \
            printf("\n");                                                     \
            failed++;                                                         \
        }                                                                     \
    } while (0)

static const char allow_all[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"*\","
    "\"Resource\":\"*\"}]}";

/* IAM calls made while moto does not check signatures yet. */
static int bootstrap_user(const char *endpoint, char **ak, char **sk)
{
    tlr_aws_creds *anon = NULL;
    tlr_aws_query *iam = NULL;
    tlr_aws_params *p = NULL;
    tlr_xml_doc *doc = NULL;
    tlr_aws_error err = { 0 };
    const char *a, *s;
    int rc;

    tlr_aws_creds_create_static("AKIABOOTSTRAP0000000", "bootstrap", NULL, &anon);
    rc = tlr_aws_query_create(&(tlr_aws_query_opts){ .service = "iam", .version = "2010-05-08",
                                                     .endpoint = endpoint, .creds = anon,
                                                     .max_attempts = 2 }, &iam);
    if (rc != TLR_OK)
        goto out;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "UserName", "tailor-it");
    rc = tlr_aws_query_call(iam, "CreateUser", p, &doc, &err);
    CHECK("iam CreateUser (unauthenticated phase)", rc == TLR_OK, "%s %s %s", tlr_errname(rc),
          err.code, err.message);
    tlr_xml_free(doc);
    doc = NULL;
    tlr_aws_params_add(p, "PolicyName", "allow-all");
    tlr_aws_params_add(p, "PolicyDocument", allow_all);
    rc = tlr_aws_query_call(iam, "PutUserPolicy", p, &doc, &err);
    CHECK("iam PutUserPolicy", rc == TLR_OK, "%s %s %s", tlr_errname(rc), err.code, err.message);
    tlr_xml_free(doc);
    doc = NULL;
    tlr_aws_params_free(p);
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "UserName", "tailor-it");
    rc = tlr_aws_query_call(iam, "CreateAccessKey", p, &doc, &err);
    a = tlr_xml_find_text(tlr_xml_root(doc), "CreateAccessKeyResult/AccessKey/AccessKeyId");
    s = tlr_xml_find_text(tlr_xml_root(doc), "CreateAccessKeyResult/AccessKey/SecretAccessKey");
    CHECK("iam CreateAccessKey returns a key", rc == TLR_OK && a != NULL && s != NULL,
          "%s %s %s", tlr_errname(rc), err.code, err.message);
    if (rc == TLR_OK && a != NULL && s != NULL) {
        *ak = strdup(a);
        *sk = strdup(s);
    } else if (rc == TLR_OK) {
        rc = TLR_E_PARSE;
    }
out:
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    tlr_aws_query_free(iam);
    tlr_aws_creds_free(anon);
    return rc;
}

/* The image of moto's first amazon-owned AMI, through the generic client. */
static char *any_image(tlr_aws_query *ec2q)
{
    tlr_aws_params *p;
    tlr_xml_doc *doc = NULL;
    tlr_aws_error err = { 0 };
    char *id = NULL;

    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "Owner.1", "amazon");
    if (tlr_aws_query_call(ec2q, "DescribeImages", p, &doc, &err) == TLR_OK) {
        const char *t = tlr_xml_find_text(tlr_xml_root(doc), "imagesSet/item/imageId");

        id = t != NULL ? strdup(t) : NULL;
    }
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    return id;
}

static int count_state(const tlr_ec2_instances *l, const char *state)
{
    int n = 0;

    for (size_t i = 0; i < l->n; i++)
        n += strcmp(l->v[i].state, state) == 0;
    return n;
}

/* --- the managed instance profile ------------------------------------- */

/* lc_iam_ops that count the write calls on their way to the real ones. */
typedef struct counting {
    lc_iam_ops real;
    int writes;
} counting;

static int c_get(void *a, const char *n, tlr_iam_profile *o, tlr_aws_error *e)
{
    counting *c = a;
    return c->real.get(c->real.arg, n, o, e);
}
static int c_create(void *a, const char *n, const char *p, const tlr_ec2_tag *t, size_t nt,
                    tlr_aws_error *e)
{
    counting *c = a;
    c->writes++;
    return c->real.create(c->real.arg, n, p, t, nt, e);
}
static int c_add(void *a, const char *p, const char *r, tlr_aws_error *e)
{
    counting *c = a;
    c->writes++;
    return c->real.add_role(c->real.arg, p, r, e);
}
static int c_remove(void *a, const char *p, const char *r, tlr_aws_error *e)
{
    counting *c = a;
    c->writes++;
    return c->real.remove_role(c->real.arg, p, r, e);
}
static int c_tag(void *a, const char *p, const tlr_ec2_tag *t, size_t nt, tlr_aws_error *e)
{
    counting *c = a;
    c->writes++;
    return c->real.tag(c->real.arg, p, t, nt, e);
}
static int c_delete(void *a, const char *p, tlr_aws_error *e)
{
    counting *c = a;
    c->writes++;
    return c->real.delete_profile(c->real.arg, p, e);
}
static int c_list(void *a, tlr_iam_profiles *o, tlr_aws_error *e)
{
    counting *c = a;
    return c->real.list(c->real.arg, o, e);
}

static void create_role(tlr_aws_query *iamq, const char *name)
{
    static const char trust[] =
        "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":"
        "{\"Service\":\"ec2.amazonaws.com\"},\"Action\":\"sts:AssumeRole\"}]}";
    tlr_aws_params *p = NULL;
    tlr_xml_doc *doc = NULL;
    tlr_aws_error err = { 0 };
    int rc;

    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "RoleName", name);
    tlr_aws_params_add(p, "AssumeRolePolicyDocument", trust);
    rc = tlr_aws_query_call(iamq, "CreateRole", p, &doc, &err);
    CHECK("iam CreateRole", rc == TLR_OK, "%s %s %s %s", name, tlr_errname(rc), err.code,
          err.message);
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
}

static const char *role_of(tlr_iam *iam, const char *profile, tlr_iam_profile *p)
{
    tlr_aws_error err = { 0 };

    tlr_iam_profile_free(p);
    if (tlr_iam_get_profile(iam, profile, p, &err) != TLR_OK)
        return "(no profile)";
    return p->nroles == 1 ? p->roles[0] : p->nroles == 0 ? "(none)" : "(several)";
}

static void instance_profiles(const char *endpoint, tlr_aws_creds *creds)
{
    tlr_aws_query *iamq = NULL;
    tlr_iam *iam = NULL;
    counting cnt = { 0 };
    lc_iam_ops ops = { .get = c_get, .create = c_create, .add_role = c_add,
                       .remove_role = c_remove, .tag = c_tag, .delete_profile = c_delete,
                       .list = c_list, .arg = &cnt };
    tlr_iam_profile p = { 0 };
    tlr_aws_error err = { 0 };
    char *name = NULL, *orphan = NULL, *again = NULL;
    const char *live[] = { "default" };
    size_t deleted = 0;
    int rc;

    tlr_aws_query_create(&(tlr_aws_query_opts){ .service = "iam", .version = TLR_IAM_API_VERSION,
                                                .endpoint = endpoint, .creds = creds }, &iamq);
    rc = tlr_iam_create(&(tlr_aws_query_opts){ .endpoint = endpoint, .creds = creds }, &iam);
    CHECK("tlr_iam_create", rc == TLR_OK, "%s", tlr_errname(rc));
    if (rc != TLR_OK)
        goto out;
    lc_iam_ops_init(&cnt.real, iam);
    create_role(iamq, "it-node");
    create_role(iamq, "it-node-2");
    create_role(iamq, "it-orphan");

    rc = lc_profile_ensure(&ops, "it-cluster", "us-east-1", "default", "it-node", &name, &err);
    CHECK("ensure creates the profile and adds the role",
          rc == TLR_OK && cnt.writes == 2 && strcmp(role_of(iam, name, &p), "it-node") == 0,
          "%s %s %s writes=%d", tlr_errname(rc), err.code, err.message, cnt.writes);
    if (rc != TLR_OK)
        goto out;
    CHECK("the profile carries the five tags, path /",
          p.ntags == 5 && strcmp(p.path, "/") == 0 &&
          tlr_ec2_tag_get(p.tags, p.ntags, "kubernetes.io/cluster/it-cluster") != NULL &&
          strcmp(tlr_ec2_tag_get(p.tags, p.ntags, "karpenter.k8s.aws/ec2nodeclass"),
                 "default") == 0 &&
          strcmp(tlr_ec2_tag_get(p.tags, p.ntags, "karpenter.sh/managed-by"), "it-cluster") == 0,
          "ntags=%zu path=%s", p.ntags, p.path);

    cnt.writes = 0;
    rc = lc_profile_ensure(&ops, "it-cluster", "us-east-1", "default", "it-node", &again, &err);
    CHECK("ensure again: same profile, no write call", rc == TLR_OK && cnt.writes == 0 &&
          again != NULL && strcmp(again, name) == 0,
          "%s writes=%d", tlr_errname(rc), cnt.writes);
    free(again);
    again = NULL;

    cnt.writes = 0;
    rc = lc_profile_ensure(&ops, "it-cluster", "us-east-1", "default", "it-node-2", &again, &err);
    CHECK("role change: the new role replaces the old in the same profile",
          rc == TLR_OK && cnt.writes == 2 && again != NULL && strcmp(again, name) == 0 &&
          strcmp(role_of(iam, name, &p), "it-node-2") == 0,
          "%s %s %s writes=%d role=%s", tlr_errname(rc), err.code, err.message, cnt.writes,
          role_of(iam, name, &p));
    free(again);
    again = NULL;

    rc = lc_profile_ensure(&ops, "it-cluster", "us-east-1", "default", "it-no-such-role", NULL,
                           &err);
    CHECK("a missing role: NoSuchEntity for the condition", rc == TLR_E_NOTFOUND &&
          strcmp(err.code, "NoSuchEntity") == 0 && strstr(err.message, "it-no-such-role") != NULL,
          "%s [%s] %s", tlr_errname(rc), err.code, err.message);
    printf("  (condition: InstanceProfileReady=False reason=%s message=%s)\n", err.code,
           err.message);
    rc = lc_profile_ensure(&ops, "it-cluster", "us-east-1", "default", "it-node-2", NULL, &err);
    CHECK("fixed role: the next ensure puts it back", rc == TLR_OK &&
          strcmp(role_of(iam, name, &p), "it-node-2") == 0, "%s %s", tlr_errname(rc), err.code);

    /* An orphan: the profile of a class that no longer exists, with its
     * role; and a profile of our name pattern we did not make. */
    rc = lc_profile_ensure(&ops, "it-cluster", "us-east-1", "deleted-class", "it-orphan",
                           &orphan, &err);
    CHECK("the orphan-to-be is made", rc == TLR_OK, "%s %s", tlr_errname(rc), err.code);
    rc = tlr_iam_create_profile(iam, "it-cluster_42", "/", NULL, 0, NULL, &err);
    CHECK("an untagged profile of our name pattern", rc == TLR_OK, "%s %s", tlr_errname(rc),
          err.code);
    if (orphan == NULL)
        goto out;

    cnt.writes = 0;
    rc = lc_profile_gc(&ops, &(lc_profile_gc_opts){ .cluster = "it-cluster",
                                                    .region = "us-east-1", .live = live,
                                                    .nlive = 1 }, &deleted, &err);
    CHECK("gc deletes exactly the orphan (role removed, then the profile)",
          rc == TLR_OK && deleted == 1 && cnt.writes == 2 &&
          strcmp(role_of(iam, orphan, &p), "(no profile)") == 0,
          "%s %s %s deleted=%zu writes=%d", tlr_errname(rc), err.code, err.message, deleted,
          cnt.writes);
    CHECK("gc keeps the live class's profile and the one it did not make",
          strcmp(role_of(iam, name, &p), "it-node-2") == 0 &&
          strcmp(role_of(iam, "it-cluster_42", &p), "(none)") == 0, "%s",
          role_of(iam, name, &p));
    cnt.writes = 0;
    rc = lc_profile_gc(&ops, &(lc_profile_gc_opts){ .cluster = "it-cluster",
                                                    .region = "us-east-1", .live = live,
                                                    .nlive = 1 }, &deleted, &err);
    CHECK("gc again: nothing to do", rc == TLR_OK && deleted == 0 && cnt.writes == 0,
          "%s deleted=%zu writes=%d", tlr_errname(rc), deleted, cnt.writes);
out:
    tlr_iam_profile_free(&p);
    free(name);
    free(orphan);
    tlr_iam_free(iam);
    tlr_aws_query_free(iamq);
}

/* EKS DescribeCluster against a cluster moto made: the identity the
 * launcher reads when --cluster-endpoint/-ca-bundle/-cidr are unset.
 * endpoint: a moto that does not enforce SigV4 (it cannot verify signed
 * GETs; see moto_it.sh); the requests are signed all the same. */
static void eks_describe(const char *endpoint, tlr_aws_creds *creds)
{
    tlr_aws_json *rest = NULL;
    tlr_eks *eks = NULL;
    tlr_aws_error err = { 0 };
    json_object *ans = NULL;
    tlr_eks_cluster c = { 0 };
    int rc = tlr_aws_json_create(&(tlr_aws_json_opts){ .service = "eks", .endpoint = endpoint,
                                                       .creds = creds }, &rest);
    CHECK("eks REST client", rc == TLR_OK, "%s", tlr_errname(rc));
    if (rc)
        return;
    json_object *body = json_tokener_parse(
        "{\"name\": \"it-cluster\", \"roleArn\": \"arn:aws:iam::123456789012:role/eks\","
        " \"resourcesVpcConfig\": {\"subnetIds\": []},"
        " \"kubernetesNetworkConfig\": {\"serviceIpv4Cidr\": \"10.100.0.0/16\"}}");
    rc = tlr_aws_json_rest(rest, "CreateCluster", "POST", "/clusters", body, &ans, &err);
    CHECK("eks CreateCluster (setup)", rc == TLR_OK, "%s %s %s", tlr_errname(rc), err.code,
          err.message);
    json_object_put(body);
    json_object_put(ans);
    rc = tlr_eks_create(&(tlr_eks_opts){ .endpoint = endpoint, .creds = creds }, &eks);
    CHECK("tlr_eks_create", rc == TLR_OK, "%s", tlr_errname(rc));
    if (rc == TLR_OK) {
        rc = tlr_eks_describe_cluster(eks, "it-cluster", &c, &err);
        CHECK("DescribeCluster: endpoint, CA bundle and service CIDR",
              rc == TLR_OK && strncmp(c.endpoint, "https://", 8) == 0 && strlen(c.ca_b64) > 16 &&
                  strcmp(c.service_cidr_v4, "10.100.0.0/16") == 0 &&
                  strcmp(c.name, "it-cluster") == 0,
              "%s %s %s endpoint=%s cidr=%s", tlr_errname(rc), err.code, err.message,
              c.endpoint ? c.endpoint : "-", c.service_cidr_v4 ? c.service_cidr_v4 : "-");
        tlr_eks_cluster_clear(&c);
        memset(&err, 0, sizeof(err));
        rc = tlr_eks_describe_cluster(eks, "no-such-cluster", &c, &err);
        CHECK("DescribeCluster of an absent cluster is NOTFOUND", rc == TLR_E_NOTFOUND,
              "%s %s %s", tlr_errname(rc), err.code, err.message);
        tlr_eks_cluster_clear(&c);
    }
    tlr_eks_free(eks);
    tlr_aws_json_free(rest);
}

int main(int argc, char **argv)
{
    const char *endpoint;
    char *ak = NULL, *sk = NULL, *image = NULL;
    tlr_aws_creds *good = NULL, *wrong = NULL, *unknown = NULL;
    tlr_aws_query *ec2q = NULL;
    tlr_ec2 *ec2 = NULL, *bad = NULL;
    tlr_ec2_instances run = { 0 }, found = { 0 };
    tlr_aws_error err = { 0 };
    const tlr_ec2_tag tags[] = { { "kubernetes.io/cluster/it-cluster", "owned" },
                                 { "karpenter.sh/nodepool", "default" } };
    const char *const owned[] = { "owned" };
    const tlr_ec2_filter by_cluster[] = { { "tag:kubernetes.io/cluster/it-cluster", owned, 1 } };
    const char *const running[] = { "running", "pending" };
    const tlr_ec2_filter live[] = { { "tag-key", (const char *const[]){ "karpenter.sh/nodepool" }, 1 },
                                    { "instance-state-name", running, 2 } };
    const char *ids[2] = { NULL, NULL };
    int rc;

    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: aws_it ENDPOINT [UNAUTHENTICATED-ENDPOINT]\n");
        return 2;
    }
    endpoint = argv[1];
    if (bootstrap_user(endpoint, &ak, &sk) != TLR_OK)
        goto out;

    tlr_aws_creds_create_static(ak, sk, NULL, &good);
    tlr_aws_query_create(&(tlr_aws_query_opts){ .service = "ec2", .version = TLR_EC2_API_VERSION,
                                                .endpoint = endpoint, .creds = good }, &ec2q);
    tlr_ec2_create(&(tlr_aws_query_opts){ .endpoint = endpoint, .creds = good }, &ec2);
    image = any_image(ec2q);
    CHECK("signed DescribeImages with the new key", image != NULL, "no image");
    if (image == NULL)
        goto out;

    rc = tlr_ec2_run_instances(ec2, &(tlr_ec2_run_opts){ .image_id = image,
                                                        .instance_type = "m5.large", .count = 2,
                                                        .tags = tags, .ntags = 2 }, &run, &err);
    CHECK("RunInstances launches 2", rc == TLR_OK && run.n == 2, "%s %s %s (n=%zu)",
          tlr_errname(rc), err.code, err.message, run.n);
    if (rc != TLR_OK || run.n != 2)
        goto out;
    ids[0] = run.v[0].id;
    ids[1] = run.v[1].id;

    rc = tlr_ec2_describe_instances(ec2, by_cluster, 1, NULL, 0, 0, &found, &err);
    CHECK("DescribeInstances by cluster tag finds both", rc == TLR_OK && found.n == 2 &&
          (strcmp(found.v[0].id, ids[0]) == 0 || strcmp(found.v[0].id, ids[1]) == 0),
          "%s %s (n=%zu)", tlr_errname(rc), err.code, found.n);
    CHECK("instances carry type, zone, private dns and tags",
          found.n == 2 && strcmp(found.v[0].type, "m5.large") == 0 && found.v[0].zone[0] &&
          strncmp(found.v[0].private_dns, "ip-", 3) == 0 &&
          tlr_ec2_instance_tag(&found.v[0], "karpenter.sh/nodepool") != NULL &&
          found.v[0].launch_ms > 0,
          "first: type %s zone %s dns %s", found.n ? found.v[0].type : "-",
          found.n ? found.v[0].zone : "-", found.n ? found.v[0].private_dns : "-");
    tlr_ec2_instances_free(&found);

    rc = tlr_ec2_create_tags(ec2, ids, 1, (const tlr_ec2_tag[]){ { "karpenter.sh/nodeclaim",
                                                                  "default-abcde" } }, 1, &err);
    CHECK("CreateTags", rc == TLR_OK, "%s %s", tlr_errname(rc), err.code);
    rc = tlr_ec2_describe_instances(ec2, NULL, 0, ids, 1, 0, &found, &err);
    CHECK("DescribeInstances by id sees the new tag",
          rc == TLR_OK && found.n == 1 &&
          tlr_ec2_instance_tag(&found.v[0], "karpenter.sh/nodeclaim") != NULL,
          "%s n=%zu", tlr_errname(rc), found.n);
    tlr_ec2_instances_free(&found);

    /* Wrong secret for a real key, and a key moto never issued. */
    tlr_aws_creds_create_static(ak, "0000000000000000000000000000000000000000", NULL, &wrong);
    tlr_ec2_create(&(tlr_aws_query_opts){ .endpoint = endpoint, .creds = wrong }, &bad);
    rc = tlr_ec2_describe_instances(bad, NULL, 0, NULL, 0, 0, &found, &err);
    CHECK("wrong secret is rejected as AUTH", rc == TLR_E_AUTH, "got %s %s %s", tlr_errname(rc),
          err.code, err.message);
    printf("  (moto said: %s: %s)\n", err.code, err.message);
    tlr_ec2_instances_free(&found);
    tlr_ec2_free(bad);
    tlr_aws_creds_create_static("AKIANEVERISSUED00000", sk, NULL, &unknown);
    tlr_ec2_create(&(tlr_aws_query_opts){ .endpoint = endpoint, .creds = unknown }, &bad);
    rc = tlr_ec2_describe_instances(bad, NULL, 0, NULL, 0, 0, &found, &err);
    CHECK("unknown key is rejected as AUTH", rc == TLR_E_AUTH, "got %s %s %s", tlr_errname(rc),
          err.code, err.message);
    printf("  (moto said: %s: %s)\n", err.code, err.message);
    tlr_ec2_instances_free(&found);

    rc = tlr_ec2_terminate_instances(ec2, ids, 2, &err);
    CHECK("TerminateInstances", rc == TLR_OK, "%s %s %s", tlr_errname(rc), err.code, err.message);
    rc = tlr_ec2_describe_instances(ec2, live, 2, NULL, 0, 0, &found, &err);
    CHECK("no live tagged instance after terminate", rc == TLR_OK && found.n == 0,
          "%s n=%zu", tlr_errname(rc), found.n);
    tlr_ec2_instances_free(&found);
    rc = tlr_ec2_describe_instances(ec2, NULL, 0, ids, 2, 0, &found, &err);
    CHECK("both instances terminated", rc == TLR_OK && count_state(&found, "terminated") == 2,
          "%s n=%zu", tlr_errname(rc), found.n);
    tlr_ec2_instances_free(&found);
    rc = tlr_ec2_terminate_instances(ec2, (const char *const[]){ "i-0000000000deadbee" }, 1, &err);
    CHECK("terminating an absent instance is success", rc == TLR_OK, "%s %s", tlr_errname(rc),
          err.code);

    instance_profiles(endpoint, good);
    if (argc > 2)
        eks_describe(argv[2], good);
out:
    tlr_ec2_instances_free(&run);
    tlr_ec2_free(bad);
    tlr_ec2_free(ec2);
    tlr_aws_query_free(ec2q);
    tlr_aws_creds_free(good);
    tlr_aws_creds_free(wrong);
    tlr_aws_creds_free(unknown);
    free(ak);
    free(sk);
    free(image);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
