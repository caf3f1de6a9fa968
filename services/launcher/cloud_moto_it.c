/* cloud_moto_it.c - the real EC2 ops (cloud.c) against moto with SigV4
 * enforced: a launch template per node class (found again, not
 * duplicated), CreateFleet type instant through a launch template
 * launching a real instance with the claim's tags, lookup by claim tag,
 * TerminateInstances (twice: an instance already gone is success), SSM
 * GetParameter.
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

#include "cloud.h"
#include "fleet.h"
#include "testkit.h"
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
    lc_cloud_opts o = { fx->cluster, NULL, ep, fx->creds, NULL, "ami-12c6146b", "1.31", 0 };
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
    int rc = fx->ops.launch_template(fx->ops.arg, nc, &a, &err);
    if (rc)
        fail_msg("launch template: %s %s (%s)", err.code, err.message, tlr_strerror(rc));
    assert_int_equal(fx->ops.launch_template(fx->ops.arg, nc, &b, &err), TLR_OK);
    assert_string_equal(a, b);   /* found again by name, not created twice */
    free(b);
    b = NULL;
    /* A different configuration gets a different template. */
    free(nc->user_data);
    nc->user_data = tlr_strdup("#!/bin/bash\necho changed\n");
    assert_int_equal(fx->ops.launch_template(fx->ops.arg, nc, &b, &err), TLR_OK);
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
    assert_int_equal(fx->ops.launch_template(fx->ops.arg, nc, &lt, &err), TLR_OK);
    Tailor__V1__Catalog *cat = tk_catalog();
    char name[64];
    snprintf(name, sizeof(name), "default-m%ld", (long)(tlr_wall_ms() % 100000));
    Tailor__V1__NodeClaim *claim = tk_claim(name, 1, "c5.large", "m5.large", NULL);
    tk_req(claim, "karpenter.sh/capacity-type", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN,
           "on-demand", NULL);
    lc_fleet f;
    lc_fleet_in in = { claim, cat, nc, NULL, fx->cluster, lt };
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_launch_template_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fleet_tags_terminate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssm_get, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
