/* kubelet_test.c - the kubelet simulator on a real ks_store with a
 * scripted fake EC2 (instances, user data, AMI names) and an injected
 * clock: boot delay, which instances count, the Node it writes (name,
 * providerID, labels, taints and capacity from the bootstrap only, Ready),
 * instances whose bootstrap fails never registering (reason logged once),
 * the node's agents removing their taints and adding devices, removal
 * when the instance goes, and doing nothing when EC2 cannot be read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ks_kubelet.h"
#include "ks_store.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

/* --- the fake cloud ----------------------------------------------------- */

typedef struct fake_inst {
    const char *id, *type, *state, *zone, *dns, *ip;
    bool spot;
    int64_t launch_ms;
    const char *tags[8];   /* key, value, key, value, ..., NULL */
    const char *ud;        /* user data (@CA@ -> our CA in base64); NULL = none */
    const char *ami;       /* AMI name; NULL = moto's canned one */
} fake_inst;

typedef struct fake_ec2 {
    fake_inst inst[8];
    int n;
    int fail;              /* describe returns this error instead */
    int ud_fail;           /* user_data returns this error instead */
    int calls, ud_calls, ami_calls;
    char last_cluster[64];
} fake_ec2;

static const char ca_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBfjCCASSgAwIBAgIUb3VyIGt1YmVzaW0gQ0EgZm9yIHRlc3RzMAoGCCqGSM49\n"
    "-----END CERTIFICATE-----\n";
/* base64 of ca_pem */
static const char ca_b64[] =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmakNDQVNTZ0F3SUJBZ0lVYjNWeUlHdDFZbVZ6YVcwZ1EwRWdabT"
    "l5SUhSbGMzUnpNQW9HQ0NxR1NNNDkKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";
#define EP "https://127.0.0.1:6443"
#define NODECONFIG(extra)                                                                  \
    "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n"             \
    "    name: demo\n    apiServerEndpoint: " EP "\n    certificateAuthority: @CA@\n"      \
    "    cidr: 10.100.0.0/16\n" extra

static const fake_inst *find_fake(const fake_ec2 *f, const char *id)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->inst[i].id, id) == 0)
            return &f->inst[i];
    return NULL;
}

static int fake_describe(void *arg, const char *cluster, tlr_ec2_instances *out)
{
    fake_ec2 *f = arg;

    f->calls++;
    snprintf(f->last_cluster, sizeof(f->last_cluster), "%s", cluster);
    if (f->fail != TLR_OK)
        return f->fail;
    out->v = tlr_calloc((size_t)f->n + 1, sizeof(*out->v));
    out->n = (size_t)f->n;
    for (int i = 0; i < f->n; i++) {
        const fake_inst *s = &f->inst[i];
        tlr_ec2_instance *d = &out->v[i];
        size_t nt = 0;
        char img[64];

        snprintf(img, sizeof(img), "ami-%s", s->id);
        d->id = tlr_strdup(s->id);
        d->type = tlr_strdup(s->type);
        d->state = tlr_strdup(s->state);
        d->zone = tlr_strdup(s->zone);
        d->private_dns = tlr_strdup(s->dns ? s->dns : "");
        d->private_ip = tlr_strdup(s->ip ? s->ip : "");
        d->image_id = tlr_strdup(img);
        d->subnet_id = tlr_strdup("");
        d->spot = s->spot;
        d->launch_ms = s->launch_ms;
        while (s->tags[2 * nt] != NULL)
            nt++;
        d->tags = tlr_calloc(nt + 1, sizeof(*d->tags));
        for (size_t t = 0; t < nt; t++) {
            d->tags[t].key = tlr_strdup(s->tags[2 * t]);
            d->tags[t].value = tlr_strdup(s->tags[2 * t + 1]);
        }
        d->ntags = nt;
    }
    return TLR_OK;
}

static int fake_user_data(void *arg, const char *id, char **out)
{
    fake_ec2 *f = arg;
    const fake_inst *in = find_fake(f, id);
    const char *ud, *at;

    f->ud_calls++;
    if (f->ud_fail != TLR_OK)
        return f->ud_fail;
    if (in == NULL)
        return TLR_E_NOTFOUND;
    ud = in->ud != NULL ? in->ud : "";
    if ((at = strstr(ud, "@CA@")) != NULL) {
        size_t n = strlen(ud) + sizeof(ca_b64);

        *out = tlr_malloc(n);
        snprintf(*out, n, "%.*s%s%s", (int)(at - ud), ud, ca_b64, at + 4);
    } else {
        *out = tlr_strdup(ud);
    }
    return TLR_OK;
}

static int fake_image_name(void *arg, const char *image_id, char **out)
{
    fake_ec2 *f = arg;
    const fake_inst *in = find_fake(f, image_id + 4);   /* "ami-" + instance id */

    f->ami_calls++;
    if (in == NULL)
        return TLR_E_NOTFOUND;
    *out = tlr_strdup(in->ami != NULL ? in->ami : "amzn-ami-hvm-2018.03.0.20180811-x86_64-gp2");
    return TLR_OK;
}

static int64_t now_ms;
static int64_t fake_clock(void *arg)
{
    (void)arg;
    return now_ms;
}

static const char catalog_json[] =
    "[{\"name\":\"m5.large\",\"family\":\"m5\",\"category\":\"m\",\"generation\":5,"
    "\"size\":\"large\",\"arch\":\"amd64\",\"os\":\"linux\",\"vcpu\":2,\"memory_mib\":8192,"
    "\"max_pods\":29,\"ephemeral_storage_gib\":17,\"allocatable_cpu_millicores\":1930,"
    "\"allocatable_memory_mib\":7134,\"od_price_usd_hr\":{\"us-east-1\":0.096}},"
    "{\"name\":\"g4dn.xlarge\",\"family\":\"g4dn\",\"category\":\"g\",\"generation\":4,"
    "\"size\":\"xlarge\",\"arch\":\"amd64\",\"os\":\"linux\",\"vcpu\":4,\"memory_mib\":16384,"
    "\"gpu_count\":1,\"max_pods\":29,\"ephemeral_storage_gib\":17,"
    "\"allocatable_cpu_millicores\":3920,\"allocatable_memory_mib\":14162,\"nvidia_gpu\":1,"
    "\"od_price_usd_hr\":{\"us-east-1\":0.526}},"
    "{\"name\":\"m6g.large\",\"family\":\"m6g\",\"category\":\"m\",\"generation\":6,"
    "\"size\":\"large\",\"arch\":\"arm64\",\"os\":\"linux\",\"vcpu\":2,\"memory_mib\":8192,"
    "\"max_pods\":29,\"allocatable_cpu_millicores\":1930,\"allocatable_memory_mib\":7134,"
    "\"od_price_usd_hr\":{\"us-east-1\":0.077}}]";

typedef struct fixture {
    ks_store *s;
    fake_ec2 ec2;
    Tailor__V1__Catalog *cat;
    ks_kubelet *k;
    tlr_clock clk;
    FILE *logf;
    tlr_logger *log;
} fixture;

static const ks_kubelet_ec2_ops *fake_ops(fake_ec2 *f)
{
    static ks_kubelet_ec2_ops ops;

    ops = (ks_kubelet_ec2_ops){ .describe_instances = fake_describe, .user_data = fake_user_data,
                                .image_name = fake_image_name, .arg = f };
    return &ops;
}

static int setup(void **state)
{
    fixture *fx = tlr_calloc(1, sizeof(*fx));
    char err[128];

    now_ms = 1796223845000LL;   /* wall and monotonic move together here */
    fx->clk = (tlr_clock){ fake_clock, fake_clock, NULL };
    assert_int_equal(ks_store_create(NULL, &fx->s), TLR_OK);
    assert_int_equal(tlr_catalog_from_json(catalog_json, strlen(catalog_json), NULL, &fx->cat,
                                           err, sizeof(err)), TLR_OK);
    fx->logf = tmpfile();
    tlr_logger_create(&(tlr_log_opts){ .service = "kubesim", .level = TLR_LOG_INFO,
                                       .fd = fileno(fx->logf) }, &fx->log);
    assert_int_equal(ks_kubelet_create(fx->s, &(ks_kubelet_opts){
                                           .cluster = "demo", .region = "us-east-1",
                                           .api_endpoint = EP "/", .ca_pem = ca_pem,
                                           .boot_delay_ms = 2000, .startup_taint_delay_ms = 1000,
                                           .clock = &fx->clk, .catalog = fx->cat, .log = fx->log },
                                       fake_ops(&fx->ec2), &fx->k),
                     TLR_OK);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;

    ks_kubelet_free(fx->k);
    ks_store_free(fx->s);
    tlr_catalog_free(fx->cat);
    tlr_logger_free(fx->log);
    fclose(fx->logf);
    free(fx);
    return 0;
}

static json_object *node(fixture *fx, const char *name)
{
    json_object *o = NULL;

    if (ks_store_get_json(fx->s, KS_NODE, NULL, name, &o, NULL) != TLR_OK)
        return NULL;
    return o;
}

/* How many log lines hold both a and b. */
static int log_lines(fixture *fx, const char *a, const char *b)
{
    char line[4096];
    int n = 0;

    fflush(fx->logf);
    rewind(fx->logf);
    while (fgets(line, sizeof(line), fx->logf) != NULL)
        n += strstr(line, a) != NULL && strstr(line, b) != NULL;
    fseek(fx->logf, 0, SEEK_END);
    return n;
}

static void add_inst(fixture *fx, fake_inst in)
{
    fx->ec2.inst[fx->ec2.n++] = in;
}

#define OWNED "kubernetes.io/cluster/demo", "owned"

static void expect(const char *what, ks_kubelet_stats got, ks_kubelet_stats want, int *failures)
{
    if (memcmp(&got, &want, sizeof(got)) != 0) {
        printf("FAIL %s: got {instances %d registered %d removed %d untainted %d waiting %d "
               "refused %d}, want {%d %d %d %d %d %d}\n", what, got.instances, got.registered,
               got.removed, got.untainted, got.waiting, got.refused, want.instances,
               want.registered, want.removed, want.untainted, want.waiting, want.refused);
        (*failures)++;
    }
}

static const char ud_default[] = NODECONFIG(
    "  kubelet:\n    flags:\n    - --node-labels=karpenter.sh/nodepool=default,"
    "karpenter.sh/capacity-type=spot,karpenter.k8s.aws/ec2nodeclass=default\n");

static int check_paths(json_object *n, const char *const (*t)[2], size_t nt)
{
    int failures = 0;

    for (size_t i = 0; i < nt; i++) {
        const char *got = tlr_json_str(n, t[i][0]);

        if (t[i][1] == NULL ? got != NULL : got == NULL || strcmp(got, t[i][1]) != 0) {
            printf("FAIL node %s: got %s, want %s\n", t[i][0], got ? got : "(absent)",
                   t[i][1] ? t[i][1] : "(absent)");
            failures++;
        }
    }
    return failures;
}

/* Boot delay, the Node's shape (from the bootstrap only), removal on
 * termination. */
static void test_lifecycle(void **state)
{
    fixture *fx = *state;
    ks_kubelet_stats st;
    json_object *n;
    int failures = 0;

    add_inst(fx, (fake_inst){ "i-01", "m5.large", "running", "us-east-1a",
                              "ip-10-0-1-7.ec2.internal", "10.0.1.7", true, now_ms,
                              { OWNED, "karpenter.sh/nodepool", "default",
                                "karpenter.k8s.aws/ec2nodeclass", "default", NULL },
                              ud_default, "amazon-eks-node-al2023-x86_64-standard-1.31-v1" });
    assert_int_equal(ks_kubelet_pass(fx->k, &st), TLR_OK);
    expect("just launched", st, (ks_kubelet_stats){ .instances = 1, .waiting = 1 }, &failures);
    assert_null(node(fx, "ip-10-0-1-7.ec2.internal"));
    assert_string_equal(fx->ec2.last_cluster, "demo");
    assert_int_equal(fx->ec2.ud_calls, 0);   /* nothing read before it boots */

    now_ms += 1999;
    ks_kubelet_pass(fx->k, &st);
    expect("1.999s later", st, (ks_kubelet_stats){ .instances = 1, .waiting = 1 }, &failures);
    now_ms += 1;
    ks_kubelet_pass(fx->k, &st);
    expect("boot delay over", st, (ks_kubelet_stats){ .instances = 1, .registered = 1 }, &failures);
    ks_kubelet_pass(fx->k, &st);
    expect("steady", st, (ks_kubelet_stats){ .instances = 1 }, &failures);
    assert_int_equal(failures, 0);

    n = node(fx, "ip-10-0-1-7.ec2.internal");
    assert_non_null(n);
    {
        static const char *const t[][2] = {
            { "spec.providerID", "aws:///us-east-1a/i-01" },
            { "metadata.labels.kubernetes\\.io/hostname", "ip-10-0-1-7.ec2.internal" },
            { "metadata.labels.node\\.kubernetes\\.io/instance-type", "m5.large" },
            { "metadata.labels.topology\\.kubernetes\\.io/zone", "us-east-1a" },
            { "metadata.labels.topology\\.kubernetes\\.io/region", "us-east-1" },
            { "metadata.labels.kubernetes\\.io/arch", "amd64" },
            { "metadata.labels.kubernetes\\.io/os", "linux" },
            { "metadata.labels.kubesim\\.tailor\\.dev/instance-id", "i-01" },
            /* what the bootstrap's --node-labels say, nothing else */
            { "metadata.labels.karpenter\\.sh/capacity-type", "spot" },
            { "metadata.labels.karpenter\\.sh/nodepool", "default" },
            { "metadata.labels.karpenter\\.k8s\\.aws/ec2nodeclass", "default" },
            { "metadata.labels.karpenter\\.k8s\\.aws/instance-family", NULL },
            { "status.capacity.cpu", "2" },
            { "status.capacity.memory", "7758848Ki" },   /* 8192Mi less 7.5 % */
            { "status.capacity.pods", "29" },
            { "status.capacity.ephemeral-storage", "20Gi" },
            { "status.allocatable.cpu", "1930m" },
            { "status.allocatable.memory", "7068672Ki" },
            { "status.allocatable.ephemeral-storage", "17Gi" },   /* 20 - 1 - 10 % */
            { "status.conditions.0.type", "Ready" },
            { "status.conditions.0.status", "True" },
            { "status.addresses.0.address", "10.0.1.7" },
            { "status.nodeInfo.kubeletVersion", "v1.33.0-kubesim" },
        };
        failures += check_paths(n, t, sizeof(t) / sizeof(t[0]));
    }
    assert_null(tlr_json_get(n, "spec.taints"));
    json_object_put(n);
    assert_int_equal(failures, 0);
    assert_int_equal(fx->ec2.ud_calls, 1);
    assert_int_equal(fx->ec2.ami_calls, 1);

    /* Terminated: the Node goes. */
    fx->ec2.inst[0].state = "shutting-down";
    ks_kubelet_pass(fx->k, &st);
    expect("terminating", st, (ks_kubelet_stats){ .removed = 1 }, &failures);
    assert_null(node(fx, "ip-10-0-1-7.ec2.internal"));
    ks_kubelet_pass(fx->k, &st);
    expect("after removal", st, (ks_kubelet_stats){ 0 }, &failures);
    assert_int_equal(failures, 0);
    assert_int_equal(fx->ec2.calls, 6);
}

/* Which instances count, and what happens to Nodes that are not ours. */
static void test_selection(void **state)
{
    fixture *fx = *state;
    ks_kubelet_stats st;
    json_object *n;
    int failures = 0;
    int64_t old = now_ms - 3600 * 1000;   /* launched an hour ago: no wait */
    static const char ud_ng[] = NODECONFIG(
        "  kubelet:\n    flags: [\"--node-labels=eks.amazonaws.com/nodegroup=legacy-m5\"]\n");

    add_inst(fx, (fake_inst){ "i-owned", "m6g.large", "running", "us-west-2b", "", "", false,
                              old, { OWNED, NULL }, NODECONFIG(""), NULL });
    add_inst(fx, (fake_inst){ "i-pool", "g4dn.xlarge", "running", "us-west-2c",
                              "ip-10-0-2-1.ec2.internal", "10.0.2.1", false, old,
                              { "karpenter.sh/nodepool", "gpu", NULL }, NODECONFIG(""), NULL });
    add_inst(fx, (fake_inst){ "i-shared", "m5.large", "running", "us-west-2a", "x", "", false,
                              old, { "kubernetes.io/cluster/demo", "shared", NULL }, ud_default });
    add_inst(fx, (fake_inst){ "i-other", "m5.large", "running", "us-west-2a", "y", "", false,
                              old, { "kubernetes.io/cluster/other", "owned", NULL }, ud_default });
    add_inst(fx, (fake_inst){ "i-pending", "m5.large", "pending", "us-west-2a", "z", "", false,
                              old, { OWNED, NULL }, ud_default });
    add_inst(fx, (fake_inst){ "i-unknown", "zz9.huge", "running", "us-west-2a", "", "", false,
                              old, { OWNED, NULL }, NODECONFIG(""), NULL });
    /* An EKS node group's instance: the tag alone says nothing to the
     * node; its bootstrap's --node-labels do. */
    add_inst(fx, (fake_inst){ "i-asg", "m5.large", "running", "us-west-2a", "asg-node", "", false,
                              old, { OWNED, "eks:nodegroup-name", "legacy-m5",
                                     "aws:autoscaling:groupName", "legacy-m5", NULL },
                              ud_ng, NULL });
    assert_int_equal(ks_store_create_text(fx->s, KS_NODE, NULL,
                                          "{\"metadata\":{\"name\":\"static-node\"}}", NULL, NULL),
                     TLR_OK);
    ks_kubelet_pass(fx->k, &st);
    expect("selection", st, (ks_kubelet_stats){ .instances = 5, .registered = 4 }, &failures);
    assert_int_equal(failures, 0);
    n = node(fx, "asg-node");
    assert_non_null(n);
    assert_string_equal(tlr_json_str(n, "metadata.labels.eks\\.amazonaws\\.com/nodegroup"),
                        "legacy-m5");
    assert_null(tlr_json_str(n, "metadata.labels.karpenter\\.sh/nodepool"));
    json_object_put(n);

    /* No private DNS name: named by the instance id; arm64 from the catalog;
     * region from the option, not the zone; a node group tag without the
     * label in the bootstrap gives no label. */
    n = node(fx, "i-owned");
    assert_non_null(n);
    assert_null(tlr_json_str(n, "metadata.labels.eks\\.amazonaws\\.com/nodegroup"));
    assert_null(tlr_json_str(n, "metadata.labels.karpenter\\.sh/capacity-type"));
    assert_string_equal(tlr_json_str(n, "metadata.labels.kubernetes\\.io/arch"), "arm64");
    assert_string_equal(tlr_json_str(n, "status.capacity.memory"), "7698432Ki");
    json_object_put(n);
    /* The GPU is not there until the device plugin runs. */
    n = node(fx, "ip-10-0-2-1.ec2.internal");
    assert_non_null(n);
    assert_null(tlr_json_str(n, "status.capacity.nvidia\\.com/gpu"));
    assert_null(tlr_json_str(n, "metadata.labels.karpenter\\.sh/nodepool"));
    json_object_put(n);
    /* A type the catalog lacks still gets a usable Node. */
    n = node(fx, "i-unknown");
    assert_non_null(n);
    assert_string_equal(tlr_json_str(n, "status.allocatable.pods"), "110");
    json_object_put(n);
    assert_null(node(fx, "x"));
    assert_null(node(fx, "y"));
    assert_null(node(fx, "z"));

    /* EC2 unreadable: nothing changes, the error is returned. */
    fx->ec2.fail = TLR_E_AUTH;
    assert_int_equal(ks_kubelet_pass(fx->k, &st), TLR_E_AUTH);
    assert_int_equal(ks_store_count(fx->s, KS_NODE), 5);
    /* EC2 says nothing is running: our Nodes go, the static one stays. */
    fx->ec2.fail = TLR_OK;
    fx->ec2.n = 0;
    ks_kubelet_pass(fx->k, &st);
    expect("all gone", st, (ks_kubelet_stats){ .removed = 4 }, &failures);
    assert_int_equal(ks_store_count(fx->s, KS_NODE), 1);
    n = node(fx, "static-node");
    assert_non_null(n);
    json_object_put(n);
    assert_int_equal(failures, 0);
}

/* Instances whose bootstrap would not join this cluster never register;
 * each reason is logged once; nothing is read twice. */
static void test_refusals(void **state)
{
    fixture *fx = *state;
    ks_kubelet_stats st;
    int failures = 0;
    int64_t old = now_ms - 60 * 1000;

    add_inst(fx, (fake_inst){ "i-ep", "m5.large", "running", "us-east-1a", "ip-ep", "", false,
                              old, { OWNED, NULL },
                              "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n"
                              "  cluster:\n    name: demo\n"
                              "    apiServerEndpoint: https://ABCD.gr7.us-east-1.eks.amazonaws.com\n"
                              "    certificateAuthority: @CA@\n    cidr: 10.100.0.0/16\n" });
    add_inst(fx, (fake_inst){ "i-ca", "m5.large", "running", "us-east-1a", "ip-ca", "", false,
                              old, { OWNED, NULL },
                              "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n"
                              "  cluster:\n    name: demo\n    apiServerEndpoint: " EP "\n"
                              "    certificateAuthority: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk"
                              "1JSUJmZm9vCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K\n"
                              "    cidr: 10.100.0.0/16\n" });
    add_inst(fx, (fake_inst){ "i-none", "m5.large", "running", "us-east-1a", "ip-none", "", false,
                              old, { OWNED, "karpenter.sh/nodepool", "default", NULL }, NULL });
    ks_kubelet_pass(fx->k, &st);
    expect("refused", st, (ks_kubelet_stats){ .instances = 3, .refused = 3 }, &failures);
    ks_kubelet_pass(fx->k, &st);
    ks_kubelet_pass(fx->k, &st);
    expect("still refused", st, (ks_kubelet_stats){ .instances = 3, .refused = 3 }, &failures);
    assert_int_equal(failures, 0);
    assert_int_equal(ks_store_count(fx->s, KS_NODE), 0);
    assert_int_equal(fx->ec2.ud_calls, 3);
    assert_int_equal(log_lines(fx, "never joins", "i-ep"), 1);
    assert_int_equal(log_lines(fx, "i-ep", "is not this cluster's (" EP "/)"), 1);
    assert_int_equal(log_lines(fx, "never joins", "i-ca"), 1);
    assert_int_equal(log_lines(fx, "i-ca", "not this cluster's CA"), 1);
    assert_int_equal(log_lines(fx, "never joins", "i-none"), 1);
    assert_int_equal(log_lines(fx, "i-none", "no bootstrap in user data"), 1);
    assert_int_equal(log_lines(fx, "\"level\":\"warn\"", "never joins"), 3);
}

/* EC2 failing to give the user data is not a refusal: asked again. */
static void test_user_data_retry(void **state)
{
    fixture *fx = *state;
    ks_kubelet_stats st;
    int failures = 0;

    add_inst(fx, (fake_inst){ "i-r", "m5.large", "running", "us-east-1a", "ip-r", "", false,
                              now_ms - 60000, { OWNED, NULL }, ud_default, NULL });
    fx->ec2.ud_fail = TLR_E_IO;
    ks_kubelet_pass(fx->k, &st);
    expect("EC2 down", st, (ks_kubelet_stats){ .instances = 1 }, &failures);
    fx->ec2.ud_fail = TLR_OK;
    ks_kubelet_pass(fx->k, &st);
    expect("EC2 back", st, (ks_kubelet_stats){ .instances = 1, .registered = 1 }, &failures);
    assert_int_equal(failures, 0);
    assert_int_equal(fx->ec2.ud_calls, 2);
}

/* registerWithTaints reach the Node; startup_taint_delay later the node's
 * agents remove theirs (the others stay) and the GPU appears. */
static void test_agents(void **state)
{
    fixture *fx = *state;
    ks_kubelet_stats st;
    json_object *n, *taints;
    int failures = 0;
    static const char ud[] = NODECONFIG(
        "  kubelet:\n    config:\n      registerWithTaints:\n"
        "      - {key: nvidia.com/gpu, effect: NoSchedule}\n"
        "      - {key: node.cilium.io/agent-not-ready, value: \"true\", effect: NoExecute}\n"
        "    flags: [\"--node-labels=team=ml\"]\n");

    add_inst(fx, (fake_inst){ "i-g", "g4dn.xlarge", "running", "us-east-1b", "ip-g", "", false,
                              now_ms - 60000, { "karpenter.sh/nodepool", "gpu", NULL }, ud,
                              "amazon-eks-node-al2023-x86_64-nvidia-1.31-v1" });
    ks_kubelet_pass(fx->k, &st);
    expect("registered", st, (ks_kubelet_stats){ .instances = 1, .registered = 1 }, &failures);
    n = node(fx, "ip-g");
    assert_non_null(n);
    assert_string_equal(tlr_json_str(n, "metadata.labels.team"), "ml");
    taints = tlr_json_arr(n, "spec.taints");
    assert_non_null(taints);
    assert_int_equal(json_object_array_length(taints), 2);
    assert_null(tlr_json_str(n, "status.capacity.nvidia\\.com/gpu"));
    json_object_put(n);

    now_ms += 999;
    ks_kubelet_pass(fx->k, &st);
    expect("before the agents", st, (ks_kubelet_stats){ .instances = 1 }, &failures);
    now_ms += 1;
    ks_kubelet_pass(fx->k, &st);
    expect("agents up", st, (ks_kubelet_stats){ .instances = 1, .untainted = 1 }, &failures);
    ks_kubelet_pass(fx->k, &st);
    expect("only once", st, (ks_kubelet_stats){ .instances = 1 }, &failures);
    n = node(fx, "ip-g");
    taints = tlr_json_arr(n, "spec.taints");
    assert_non_null(taints);
    assert_int_equal(json_object_array_length(taints), 1);
    assert_string_equal(tlr_json_str(n, "spec.taints.0.key"), "nvidia.com/gpu");
    assert_string_equal(tlr_json_str(n, "status.capacity.nvidia\\.com/gpu"), "1");
    assert_string_equal(tlr_json_str(n, "status.allocatable.nvidia\\.com/gpu"), "1");
    json_object_put(n);
    assert_int_equal(failures, 0);
}

/* A restarted simulator adopts the Nodes it finds instead of duplicating. */
static void test_restart_adopts(void **state)
{
    fixture *fx = *state;
    ks_kubelet *k2 = NULL;
    ks_kubelet_stats st;
    int failures = 0;

    add_inst(fx, (fake_inst){ "i-r", "m5.large", "running", "us-east-1a", "ip-r", "", false,
                              now_ms - 60000, { OWNED, NULL }, ud_default, NULL });
    ks_kubelet_pass(fx->k, &st);
    expect("first", st, (ks_kubelet_stats){ .instances = 1, .registered = 1 }, &failures);
    assert_int_equal(ks_kubelet_create(fx->s, &(ks_kubelet_opts){ .cluster = "demo",
                                           .api_endpoint = EP, .ca_pem = ca_pem,
                                           .boot_delay_ms = 2000, .clock = &fx->clk,
                                           .catalog = fx->cat },
                                       fake_ops(&fx->ec2), &k2),
                     TLR_OK);
    ks_kubelet_pass(k2, &st);
    expect("restarted", st, (ks_kubelet_stats){ .instances = 1 }, &failures);
    assert_int_equal(ks_store_count(fx->s, KS_NODE), 1);
    ks_kubelet_free(k2);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_data_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_agents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_adopts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
