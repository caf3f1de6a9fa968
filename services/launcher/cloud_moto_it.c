/* cloud_moto_it.c - the real EC2 ops (lc_cloud.c) against moto with SigV4
 * enforced: a launch template per node class (found again, not
 * duplicated), CreateFleet type instant through a launch template
 * launching a real instance with the claim's tags, lookup by claim tag,
 * TerminateInstances (twice: an instance already gone is success), SSM
 * GetParameter; node-network resolution by tag (DescribeSubnets /
 * DescribeSecurityGroups); identical claims batched into one CreateFleet
 * with a larger target, run in parallel with another, each instance then
 * tagged with its claim; the live catalog built from moto's
 * DescribeInstanceTypes / Offerings / SpotPriceHistory with the catalog
 * file as fallback, compared figure by figure with the file.
 *
 * Needs a running local cluster: run under `scripts/local-cluster.sh up`
 * with its `env` exported (AWS_ENDPOINT_URL, AWS_SHARED_CREDENTIALS_FILE,
 * TAILOR_CLUSTER_NAME), as integration-tests/launcher/launcher_it.sh does;
 * without AWS_ENDPOINT_URL every test fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "catalog_src.h"
#include "lc_cloud.h"
#include "fleet.h"
#include "lc_testkit.h"
#include "tlr_err.h"

typedef struct fixture {
    tlr_aws_creds *creds;
    lc_cloud *cloud;
    lc_cloud_ops ops;
    char cluster[128];
} fixture;

static int setup(void **state)
{
    const char *ep = getenv("AWS_ENDPOINT_URL");
    if (!ep || !ep[0])
        return 0;
    fixture *fx = tlr_calloc(1, sizeof(*fx));
    const char *cl = getenv("TAILOR_CLUSTER_NAME");
    snprintf(fx->cluster, sizeof(fx->cluster), "%s", cl ? cl : "tailor-local");
    assert_int_equal(tlr_aws_creds_create(NULL, &fx->creds), TLR_OK);
    lc_cloud_opts o = { fx->cluster, NULL, ep, fx->creds, NULL, 0, 2 };
    assert_int_equal(lc_cloud_create(&o, &fx->cloud), TLR_OK);
    fx->ops = lc_cloud_ops_of(fx->cloud);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    if (!fx)
        return 0;
    lc_cloud_free(fx->cloud);
    tlr_aws_creds_free(fx->creds);
    free(fx);
    return 0;
}

#define NEED_MOTO(fx) do { if (!(fx)) fail_msg("AWS_ENDPOINT_URL is not set: run under local-cluster.sh"); } while (0)

static Tailor__V1__NodeClass *nodeclass(const char *name)
{
    Tailor__V1__NodeClass *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_class__init(nc);
    nc->name = tlr_strdup(name);
    nc->user_data = tlr_strdup("#!/bin/bash\necho hello\n");
    Tailor__V1__BlockDeviceMapping *m = tlr_malloc(sizeof(*m));
    tailor__v1__block_device_mapping__init(m);
    m->device_name = tlr_strdup("/dev/xvda");
    m->root_volume = true;
    m->ebs = tlr_malloc(sizeof(*m->ebs));
    tailor__v1__ebs_volume__init(m->ebs);
    m->ebs->volume_size_bytes = 20LL << 30;
    m->ebs->volume_type = tlr_strdup("gp3");
    m->ebs->iops = 3000;
    m->ebs->throughput_mibps = 125;
    TK_PUSH(nc->block_device_mappings, nc->n_block_device_mappings, m);
    return nc;
}

static void test_launch_template_once(void **state)
{
    fixture *fx = *state;
    NEED_MOTO(fx);
    Tailor__V1__NodeClass *nc = nodeclass("lt-once");
    char *a = NULL, *b = NULL;
    tlr_aws_error err = { 0 };
    int rc = fx->ops.launch_template(fx->ops.arg, nc, "ami-12c6146b", &a, &err);
    if (rc)
        fail_msg("launch template: %s %s (%s)", err.code, err.message, tlr_strerror(rc));
    assert_int_equal(fx->ops.launch_template(fx->ops.arg, nc, "ami-12c6146b", &b, &err), TLR_OK);
    assert_string_equal(a, b);   /* found again by name, not created twice */
    free(b);
    b = NULL;
    /* A different configuration gets a different template. */
    free(nc->user_data);
    nc->user_data = tlr_strdup("#!/bin/bash\necho changed\n");
    assert_int_equal(fx->ops.launch_template(fx->ops.arg, nc, "ami-12c6146b", &b, &err), TLR_OK);
    assert_string_not_equal(a, b);
    free(a);
    free(b);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
}

static void test_fleet_tags_terminate(void **state)
{
    fixture *fx = *state;
    NEED_MOTO(fx);
    Tailor__V1__NodeClass *nc = nodeclass("fleet");
    char *lt = NULL;
    tlr_aws_error err = { 0 };
    assert_int_equal(fx->ops.launch_template(fx->ops.arg, nc, "ami-12c6146b", &lt, &err), TLR_OK);
    Tailor__V1__Catalog *cat = tk_catalog();
    char name[64];
    snprintf(name, sizeof(name), "default-m%ld", (long)(tlr_wall_ms() % 100000));
    Tailor__V1__NodeClaim *claim = tk_claim(name, 1, "c5.large", "m5.large", NULL);
    tk_req(claim, "karpenter.sh/capacity-type", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN,
           "on-demand", NULL);
    lc_fleet f;
    lc_fleet_in in = { claim, cat, nc, NULL, fx->cluster, lt, NULL };
    assert_int_equal(lc_fleet_build(&in, &f), TLR_OK);
    tlr_ec2_fleet_result res = { 0 };
    int rc = fx->ops.create_fleet(fx->ops.arg, &f.req, &res, &err);
    if (rc)
        fail_msg("CreateFleet: %s %s (%s)", err.code, err.message, tlr_strerror(rc));
    if (res.ninstances != 1)
        fail_msg("CreateFleet: got %zu instances (%zu errors: %s) want 1", res.ninstances,
                 res.nerrors, res.nerrors ? res.errors[0].code : "");
    char id[64];
    snprintf(id, sizeof(id), "%s", res.instances[0].id);
    /* the cheapest override wins: c5.large in the first zone */
    assert_string_equal(res.instances[0].instance_type, "c5.large");

    tlr_ec2_instances l = { 0 };
    assert_int_equal(fx->ops.instances(fx->ops.arg, name, &l, &err), TLR_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0].id, id);
    assert_string_equal(l.v[0].image_id, "ami-12c6146b");   /* from the template */
    char ctag[200];
    snprintf(ctag, sizeof(ctag), "kubernetes.io/cluster/%s", fx->cluster);
    struct { const char *k, *v; } want[] = {
        { ctag, "owned" }, { "karpenter.sh/nodepool", "default" },
        { "karpenter.sh/nodeclaim", name }, { "karpenter.k8s.aws/ec2nodeclass", "default" },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *got = tlr_ec2_instance_tag(&l.v[0], want[i].k);
        if (!got || strcmp(got, want[i].v) != 0)
            fail_msg("tag %s: got %s want %s", want[i].k, got ? got : "(none)", want[i].v);
    }
    tlr_ec2_instances_free(&l);

    const char *ids[1] = { id };
    assert_int_equal(fx->ops.terminate(fx->ops.arg, ids, 1, &err), TLR_OK);
    assert_int_equal(fx->ops.terminate(fx->ops.arg, ids, 1, &err), TLR_OK);   /* again */
    const char *absent[1] = { "i-0123456789abcdef0" };
    assert_int_equal(fx->ops.terminate(fx->ops.arg, absent, 1, &err), TLR_OK);
    memset(&l, 0, sizeof(l));
    assert_int_equal(fx->ops.instances(fx->ops.arg, name, &l, &err), TLR_OK);
    assert_int_equal(l.n, 0);   /* no longer pending/running */
    tlr_ec2_instances_free(&l);

    tlr_ec2_fleet_result_free(&res);
    lc_fleet_clear(&f);
    free(lt);
    protobuf_c_message_free_unpacked(&claim->base, NULL);
    protobuf_c_message_free_unpacked(&cat->base, NULL);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
}

static void test_ssm_get(void **state)
{
    fixture *fx = *state;
    NEED_MOTO(fx);
    char *v = NULL;
    tlr_aws_error err = { 0 };
    int rc = lc_cloud_ssm_get(fx->cloud,
                              "/aws/service/ami-amazon-linux-latest/amzn2-ami-hvm-x86_64-gp2",
                              &v, &err);
    if (rc)
        fail_msg("GetParameter: %s (%s)", err.code, tlr_strerror(rc));
    assert_true(strncmp(v, "ami-", 4) == 0);
    free(v);
    assert_int_equal(lc_cloud_ssm_get(fx->cloud, "/no/such/parameter", &v, &err),
                     TLR_E_NOTFOUND);
}

/* The node network local-cluster.sh made: 4 subnets (a twice, b, c) and a
 * security group, found by their karpenter.sh/discovery tag. */
static void test_node_network(void **state)
{
    fixture *fx = *state;
    NEED_MOTO(fx);
    const char *tag = getenv("DISCOVERY_TAG");
    const char *vals[1] = { tag && tag[0] ? tag : "demo" };
    tlr_ec2_filter f[1] = { { "tag:karpenter.sh/discovery", vals, 1 } };
    tlr_ec2_subnets sn = { 0 };
    tlr_aws_error err = { 0 };
    assert_int_equal(fx->ops.subnets(fx->ops.arg, f, 1, &sn, &err), TLR_OK);
    size_t za = 0, zb = 0, zc = 0;
    for (size_t i = 0; i < sn.n; i++) {
        printf("subnet %s %s free %lld\n", sn.v[i].id, sn.v[i].zone, (long long)sn.v[i].available_ips);
        za += strcmp(sn.v[i].zone, "us-east-1a") == 0;
        zb += strcmp(sn.v[i].zone, "us-east-1b") == 0;
        zc += strcmp(sn.v[i].zone, "us-east-1c") == 0;
    }
    assert_int_equal(sn.n, 4);
    assert_true(za == 2 && zb == 1 && zc == 1);
    tlr_ec2_subnets_free(&sn);
    tlr_ec2_security_groups sg = { 0 };
    assert_int_equal(fx->ops.security_groups(fx->ops.arg, f, 1, &sg, &err), TLR_OK);
    assert_int_equal(sg.n, 1);
    assert_string_equal(sg.v[0].name, "tailor-nodes");
    tlr_ec2_security_groups_free(&sg);
}

/* Three identical claims in one CreateFleet (target 3) and one alone, both
 * calls in flight at once; every instance then carries its own claim. */
static void test_batched_fleets(void **state)
{
    fixture *fx = *state;
    NEED_MOTO(fx);
    Tailor__V1__NodeClass *nc = nodeclass("batch");
    char *lt = NULL;
    tlr_aws_error err = { 0 };
    assert_int_equal(fx->ops.launch_template(fx->ops.arg, nc, "ami-12c6146b", &lt, &err), TLR_OK);
    Tailor__V1__Catalog *cat = tk_catalog();
    Tailor__V1__NodeClaim *claim = tk_claim("batch-a", 1, "c5.large", NULL, NULL);
    Tailor__V1__NodeClaim *lone = tk_claim("batch-lone", 1, "m5.large", NULL, NULL);
    tk_req(claim, "karpenter.sh/capacity-type", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN,
           "on-demand", NULL);
    tk_req(lone, "karpenter.sh/capacity-type", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN,
           "on-demand", NULL);
    lc_fleet f1, f2;
    lc_fleet_in in1 = { claim, cat, nc, NULL, fx->cluster, lt, NULL };
    lc_fleet_in in2 = { lone, cat, nc, NULL, fx->cluster, lt, NULL };
    assert_int_equal(lc_fleet_build(&in1, &f1), TLR_OK);
    assert_int_equal(lc_fleet_build(&in2, &f2), TLR_OK);
    tlr_ec2_tag shared[8];
    f1.req.ntags = lc_fleet_shared_tags(&f1, shared);
    f1.req.tags = shared;
    f1.req.target_capacity = 3;
    f1.req.client_token = "tailor-batch-it";
    const tlr_ec2_fleet_req *reqs[2] = { &f1.req, &f2.req };
    tlr_ec2_fleet_result outs[2] = { { 0 } };
    int rcs[2];
    tlr_aws_error errs[2] = { { 0 } };
    int64_t issued = 0;
    fx->ops.create_fleets(fx->ops.arg, 2, reqs, outs, rcs, errs, &issued);
    assert_true(issued > 0);
    assert_int_equal(rcs[0], TLR_OK);
    assert_int_equal(rcs[1], TLR_OK);
    assert_int_equal(outs[0].ninstances, 3);
    assert_int_equal(outs[1].ninstances, 1);
    const char *ids[3];
    char names[3][32];
    tlr_ec2_tag tags[3][1];
    const tlr_ec2_tag *tagp[3];
    size_t ntags[3] = { 1, 1, 1 };
    int trc[3];
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof(names[i]), "batch-%c", 'a' + i);
        ids[i] = outs[0].instances[i].id;
        tags[i][0] = (tlr_ec2_tag){ (char *)"karpenter.sh/nodeclaim", names[i] };
        tagp[i] = tags[i];
    }
    fx->ops.tag_instances(fx->ops.arg, 3, ids, tagp, ntags, trc);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(trc[i], TLR_OK);
        tlr_ec2_instances l = { 0 };
        assert_int_equal(fx->ops.instances(fx->ops.arg, names[i], &l, &err), TLR_OK);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.v[0].id, ids[i]);
        /* the shared tags came with the fleet */
        assert_string_equal(tlr_ec2_instance_tag(&l.v[0], "karpenter.sh/nodepool"), "default");
        const char *del[1] = { l.v[0].id };
        assert_int_equal(fx->ops.terminate(fx->ops.arg, del, 1, &err), TLR_OK);
        tlr_ec2_instances_free(&l);
    }
    const char *del[1] = { outs[1].instances[0].id };
    assert_int_equal(fx->ops.terminate(fx->ops.arg, del, 1, &err), TLR_OK);
    tlr_ec2_fleet_result_free(&outs[0]);
    tlr_ec2_fleet_result_free(&outs[1]);
    lc_fleet_clear(&f1);
    lc_fleet_clear(&f2);
    free(lt);
    protobuf_c_message_free_unpacked(&claim->base, NULL);
    protobuf_c_message_free_unpacked(&lone->base, NULL);
    protobuf_c_message_free_unpacked(&cat->base, NULL);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
}

/* The live catalog from moto, signed requests all the way: every type moto
 * describes and the file prices, with the file's resource figures; spot
 * history read (moto's 0.00001 refused by the floor); Pricing unavailable
 * on moto, so on-demand prices come from the file. */
static void test_live_catalog(void **state)
{
    fixture *fx = *state;
    NEED_MOTO(fx);
    const char *data = getenv("TAILOR_SHARED_DATA");
    char path[4096], why[512] = "";
    if (data && data[0]) {
        snprintf(path, sizeof(path), "%s/aws-instance-types.json", data);
    } else {   /* beside the checkout: <repo>/../shared/data */
        const char *src = __FILE__, *slash = strrchr(src, '/');
        snprintf(path, sizeof(path), "%.*s/../../../shared/data/aws-instance-types.json",
                 (int)(slash - src), src);
    }
    Tailor__V1__Catalog *file = NULL;
    const char *zones[3] = { "us-east-1a", "us-east-1b", "us-east-1c" };
    tlr_catalog_file_opts fo = { "us-east-1", zones, 3, 0.6, "file" };
    assert_int_equal(tlr_catalog_file_load(path, &fo, &file, why, sizeof(why)), TLR_OK);
    lc_catsrc_opts o = { NULL, getenv("AWS_ENDPOINT_URL"), NULL, NULL, fx->creds, NULL,
                         zones, 3, 0.6, 0.05, 0 };
    Tailor__V1__Catalog *live = NULL;
    tlr_catalog_live_stats st = { 0 };
    int rc = lc_catsrc_fetch(&o, file, &live, &st, why, sizeof(why));
    if (rc)
        fail_msg("live catalog: %s", why);
    size_t both = 0, same = 0;
    for (size_t i = 0; i < live->n_instance_types; i++) {
        const Tailor__V1__InstanceType *l = live->instance_types[i];
        const Tailor__V1__InstanceType *f = tlr_catalog_find(file, l->name);
        if (!f)
            continue;
        both++;
        same += l->allocatable->cpu_millis == f->allocatable->cpu_millis &&
                l->allocatable->memory_bytes == f->allocatable->memory_bytes &&
                l->allocatable->pods == f->allocatable->pods;
    }
    printf("live catalog: %zu types (%zu described, %zu unpriced, %zu unsupported), "
           "price source %s; od from file %zu, from Pricing %zu; spot history %zu refused, "
           "%zu at the discount; resources equal to the file's for %zu of %zu shared types\n",
           live->n_instance_types, st.types_seen, st.unpriced, st.unsupported, live->price_source,
           st.od_fallback, st.od_live, st.spot_implausible, st.spot_fallback, same, both);
    assert_true(live->n_instance_types > 1000);
    assert_string_equal(live->price_source, "ec2+file");
    assert_true(st.spot_implausible > 0);   /* history read: signed with spaces in values */
    assert_true(same * 100 >= both * 95);
    tlr_catalog_free(live);
    tlr_catalog_free(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_launch_template_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fleet_tags_terminate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssm_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_network, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batched_fleets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_catalog, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
