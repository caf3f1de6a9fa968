/* launchtemplate_test.c - CreateLaunchTemplate parameters for a node
 * class (AMI, user data, gp3 volume, IMDSv2), the template name as a
 * configuration hash, and AMI selection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "launchtemplate.h"
#include "provision.h"
#include "lc_testkit.h"
#include "tlr_err.h"

static Tailor__V1__NodeClass *nodeclass(void)
{
    Tailor__V1__NodeClass *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_class__init(nc);
    nc->name = tlr_strdup("default");
    nc->user_data = tlr_strdup("hi");
    Tailor__V1__BlockDeviceMapping *m = tlr_malloc(sizeof(*m));
    tailor__v1__block_device_mapping__init(m);
    m->device_name = tlr_strdup("/dev/xvda");
    m->ebs = tlr_malloc(sizeof(*m->ebs));
    tailor__v1__ebs_volume__init(m->ebs);
    m->ebs->volume_size_bytes = (20LL << 30) + 1;   /* rounds up to 21 GiB */
    m->ebs->volume_type = tlr_strdup("gp3");
    m->ebs->iops = 4000;
    m->ebs->throughput_mibps = 250;
    TK_PUSH(nc->block_device_mappings, nc->n_block_device_mappings, m);
    return nc;
}

typedef struct kvs {
    char k[64][96];
    char v[64][96];
    size_t n;
} kvs;

static void collect(void *arg, const char *key, const char *value)
{
    kvs *s = arg;
    if (s->n < 64) {
        snprintf(s->k[s->n], 96, "%s", key);
        snprintf(s->v[s->n++], 96, "%s", value);
    }
}

static const char *get(const kvs *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->k[i], key) == 0)
            return s->v[i];
    return NULL;
}

static void test_params(void **state)
{
    (void)state;
    Tailor__V1__NodeClass *nc = nodeclass();
    lc_lt_opts o = { "prod", "ami-0abc" };
    kvs s = { .n = 0 };
    assert_int_equal(lc_lt_params(nc, &o, "tailor/prod/x", collect, &s), TLR_OK);
    struct { const char *k, *v; } want[] = {
        { "LaunchTemplateName", "tailor/prod/x" },
        { "LaunchTemplateData.ImageId", "ami-0abc" },
        { "LaunchTemplateData.UserData", "aGk=" },             /* base64("hi") */
        { "LaunchTemplateData.MetadataOptions.HttpTokens", "required" },   /* IMDSv2 */
        { "LaunchTemplateData.MetadataOptions.HttpPutResponseHopLimit", "1" },
        { "LaunchTemplateData.MetadataOptions.HttpEndpoint", "enabled" },
        { "LaunchTemplateData.BlockDeviceMapping.1.DeviceName", "/dev/xvda" },
        { "LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize", "21" },
        { "LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeType", "gp3" },
        { "LaunchTemplateData.BlockDeviceMapping.1.Ebs.Iops", "4000" },
        { "LaunchTemplateData.BlockDeviceMapping.1.Ebs.Throughput", "250" },
        { "LaunchTemplateData.BlockDeviceMapping.1.Ebs.DeleteOnTermination", "true" },
        { "TagSpecification.1.ResourceType", "launch-template" },
        { "TagSpecification.1.Tag.1.Key", "kubernetes.io/cluster/prod" },
        { "TagSpecification.1.Tag.1.Value", "owned" },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *got = get(&s, want[i].k);
        if (!got || strcmp(got, want[i].v) != 0)
            fail_msg("%s: got %s want %s", want[i].k, got ? got : "(absent)", want[i].v);
    }
    /* Missing AMI is refused, nothing sent. */
    lc_lt_opts none = { "prod", "" };
    kvs e = { .n = 0 };
    assert_int_equal(lc_lt_params(nc, &none, "x", collect, &e), TLR_E_INVAL);
    assert_int_equal(e.n, 0);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
}

static void test_name_is_config_hash(void **state)
{
    (void)state;
    Tailor__V1__NodeClass *nc = nodeclass();
    lc_lt_opts o = { "prod", "ami-0abc" };
    char a[128], b[128], c[128], d[128];
    lc_lt_name(nc, &o, a, sizeof(a));
    lc_lt_name(nc, &o, b, sizeof(b));
    assert_string_equal(a, b);                       /* stable */
    assert_int_equal(strncmp(a, "tailor/prod/", 12), 0);
    assert_int_equal(strlen(a), 12 + 16);
    nc->block_device_mappings[0]->ebs->iops = 5000;  /* a config change */
    lc_lt_name(nc, &o, c, sizeof(c));
    assert_string_not_equal(a, c);
    lc_lt_opts o2 = { "prod", "ami-0def" };          /* a new AMI */
    lc_lt_name(nc, &o2, d, sizeof(d));
    assert_string_not_equal(c, d);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
}

/* A class that names no blockDeviceMappings is launched with its
 * family's default volumes (Karpenter's DefaultBlockDeviceMappings), and
 * the template name changes with them. */
static void test_default_block_devices(void **state)
{
    (void)state;
    struct { const char *family; const char *want; } cases[] = {
        { "AL2023", "/dev/xvda:20:gp3:true" },
        { "", "/dev/xvda:20:gp3:true" },
        { "Bottlerocket", "/dev/xvda:4:gp3:true,/dev/xvdb:20:gp3:true" },
        { "Custom", "" },
    };
    char names[4][128];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__NodeClass nc = TAILOR__V1__NODE_CLASS__INIT;
        nc.name = "c";
        nc.ami_family = (char *)cases[i].family;
        lc_lt_opts o = { "prod", "ami-1" };
        kvs r = { .n = 0 };
        assert_int_equal(lc_lt_params(&nc, &o, "lt", collect, &r), TLR_OK);
        char got[256] = "";
        for (int k = 1; k <= 4; k++) {
            char key[96];
            snprintf(key, sizeof(key), "LaunchTemplateData.BlockDeviceMapping.%d.DeviceName", k);
            const char *dev = get(&r, key);
            if (!dev)
                break;
            snprintf(key, sizeof(key), "LaunchTemplateData.BlockDeviceMapping.%d.Ebs.VolumeSize", k);
            const char *size = get(&r, key);
            snprintf(key, sizeof(key), "LaunchTemplateData.BlockDeviceMapping.%d.Ebs.VolumeType", k);
            const char *type = get(&r, key);
            snprintf(key, sizeof(key), "LaunchTemplateData.BlockDeviceMapping.%d.Ebs.Encrypted", k);
            const char *enc = get(&r, key);
            size_t off = strlen(got);
            snprintf(got + off, sizeof(got) - off, "%s%s:%s:%s:%s", off ? "," : "", dev,
                     size ? size : "-", type ? type : "-", enc ? enc : "-");
        }
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("%s: got %s, want %s", cases[i].family, got, cases[i].want);
        lc_lt_name(&nc, &o, names[i], sizeof(names[i]));
    }
    assert_string_equal(names[0], names[1]);        /* unset = AL2023 */
    assert_string_not_equal(names[0], names[2]);
    assert_string_not_equal(names[0], names[3]);
}

/* ---- through the provisioner: the user data a claim boots with ---- */

typedef struct pfx {
    lc_fake f;
    Tailor__V1__Catalog *cat;
    lc_prov *p;
} pfx;

static const tlr_cluster_identity ID = { "prod", "https://api.prod.example", "Q0EK",
                                         "10.100.0.0/16", "10.100.0.10" };

static void pfx_init(pfx *x, const tlr_cluster_identity *id)
{
    lc_fake_init(&x->f);
    x->cat = tk_catalog();
    /* m5.large as the live catalog has it: arch, labels, resources */
    Tailor__V1__InstanceType *it = x->cat->instance_types[1];
    it->arch = tlr_strdup("amd64");
    it->capacity = tlr_malloc(sizeof(*it->capacity));
    tailor__v1__resource_list__init(it->capacity);
    it->capacity->cpu_millis = 2000;
    it->capacity->memory_bytes = 8LL << 30;
    it->capacity->pods = 29;
    it->allocatable = tlr_malloc(sizeof(*it->allocatable));
    tailor__v1__resource_list__init(it->allocatable);
    it->allocatable->cpu_millis = 1930;
    it->allocatable->memory_bytes = 7LL << 30;
    it->allocatable->pods = 29;
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup("karpenter.k8s.aws/instance-family");
    r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    TK_PUSH(r->values, r->n_values, tlr_strdup("m5"));
    TK_PUSH(it->requirements, it->n_requirements, r);
    lc_prov_opts o = { 0 };
    o.cluster = "prod";
    o.clock = &x->f.clock;
    o.solver = lc_fake_solver(&x->f);
    o.cloud = lc_fake_cloud(&x->f);
    o.kube = lc_fake_kube(&x->f);
    o.catalog = x->cat;
    o.identity = id;
    o.no_fleet_batching = true;
    lc_prov_create(&o, &x->p);
}

static void pfx_clear(pfx *x)
{
    lc_prov_free(x->p);
    lc_fake_clear(&x->f);
    protobuf_c_message_free_unpacked(&x->cat->base, NULL);
}

/* A claim of pool "default" with pool label team=<team>, a single-valued
 * instance-type requirement and a startup taint. */
static Tailor__V1__NodeClaim *claim(const char *team)
{
    Tailor__V1__NodeClaim *nc = tk_claim(NULL, 1, "m5.large", NULL, NULL);
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup("team");
    l->value = tlr_strdup(team);
    TK_PUSH(nc->labels, nc->n_labels, l);
    tk_req(nc, "node.kubernetes.io/instance-type",
           TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN, "m5.large", NULL);
    tk_req(nc, "karpenter.sh/capacity-type", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN,
           "on-demand", NULL);
    Tailor__V1__Taint *t = tlr_malloc(sizeof(*t));
    tailor__v1__taint__init(t);
    t->key = tlr_strdup("example.com/agent-not-ready");
    t->effect = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE;
    TK_PUSH(nc->startup_taints, nc->n_startup_taints, t);
    return nc;
}

static Tailor__V1__PendingBatch *batch_family(const char *family, const char *user_data)
{
    Tailor__V1__PendingBatch *b = tk_batch(1);
    Tailor__V1__NodeClass *nc = b->cluster->node_classes[0];
    nc->ami_family = tlr_strdup(family);
    if (user_data)
        nc->user_data = tlr_strdup(user_data);
    return b;
}

static const char *find_call(const lc_fake *f, const char *prefix)
{
    for (size_t i = 0; i < f->ncalls; i++)
        if (strncmp(f->calls[i], prefix, strlen(prefix)) == 0)
            return f->calls[i];
    return NULL;
}

static void test_user_data_al2023(void **state)
{
    (void)state;
    pfx x;
    pfx_init(&x, &ID);
    x.f.solve_q[x.f.nsolve_q++] = tk_resp(claim("a"));
    assert_int_equal(lc_prov_batch(x.p, batch_family("AL2023", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&x.f, "create_fleet"), 1);
    const char *ud = x.f.lt_user_data;
    assert_non_null(ud);
    const char *want[] = { "application/node.eks.aws", "apiServerEndpoint: https://api.prod.example",
                           "team=a", "karpenter.sh/nodepool=default",
                           "karpenter.sh/unregistered", "NoExecute",
                           "example.com/agent-not-ready", "10.100.0.0/16" };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(ud, want[i]))
            fail_msg("user data lacks [%s]:\n%s", want[i], ud);
    if (strstr(ud, "node.kubernetes.io/instance-type="))
        fail_msg("a restricted label reached --node-labels:\n%s", ud);
    /* Same pool, same labels: the cached template.  Another team: another. */
    x.f.solve_q[x.f.nsolve_q++] = tk_resp(claim("a"));
    assert_int_equal(lc_prov_batch(x.p, batch_family("AL2023", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&x.f, "launch_template"), 1);
    x.f.solve_q[x.f.nsolve_q++] = tk_resp(claim("b"));
    assert_int_equal(lc_prov_batch(x.p, batch_family("AL2023", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&x.f, "launch_template"), 2);
    assert_non_null(strstr(x.f.lt_user_data, "team=b"));
    /* After launch: the instance's labels and the type's resources on the claim. */
    const char *lp = find_call(&x.f, "claim_patch default-");
    assert_non_null(lp);
    const char *labels[] = { "\"node.kubernetes.io\\/instance-type\":\"m5.large\"",
                             "\"kubernetes.io\\/arch\":\"amd64\"", "\"kubernetes.io\\/os\":\"linux\"",
                             "\"karpenter.k8s.aws\\/instance-family\":\"m5\"",
                             "\"topology.kubernetes.io\\/zone\":\"us-east-1",
                             "\"topology.kubernetes.io\\/region\":\"us-east-1\"",
                             "\"karpenter.sh\\/capacity-type\":\"on-demand\"", "\"team\":\"a\"" };
    for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
        if (!strstr(lp, labels[i]))
            fail_msg("claim labels lack [%s]: %s", labels[i], lp);
    const char *st = find_call(&x.f, "claim_status default-");
    assert_non_null(st);
    if (!strstr(st, "\"capacity\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"pods\":\"29\"}") ||
        !strstr(st, "\"allocatable\":{\"cpu\":\"1930m\",\"memory\":\"7Gi\",\"pods\":\"29\"}"))
        fail_msg("status: %s", st);
    const char *cr = find_call(&x.f, "claim_create default-");
    if (!strstr(cr, "\"karpenter.sh\\/capacity-type\":\"on-demand\"") ||
        !strstr(cr, "\"karpenter.k8s.aws\\/ec2nodeclass\":\"default\""))
        fail_msg("claim created without its requirement labels: %s", cr);
    pfx_clear(&x);
}

static void test_identity_missing(void **state)
{
    (void)state;
    pfx x;
    pfx_init(&x, NULL);
    x.f.solve_q[x.f.nsolve_q++] = tk_resp(claim("a"));
    assert_int_equal(lc_prov_batch(x.p, batch_family("AL2023", NULL), NULL), TLR_E_NOTREADY);
    assert_int_equal(lc_fake_count(&x.f, "claim_create"), 0);
    assert_int_equal(lc_fake_count(&x.f, "create_fleet"), 0);
    char why[256];
    assert_false(lc_prov_identity_ok(x.p, why, sizeof(why)));
    assert_non_null(strstr(why, "API endpoint"));
    lc_prov_set_identity(x.p, &ID);   /* discovered a minute later */
    assert_int_equal(lc_prov_batch(x.p, batch_family("AL2023", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&x.f, "create_fleet"), 1);
    pfx_clear(&x);
}

/* A user-data error fails the claim and pauses its class, whose status
 * says why; the next batch does not try again. */
static void test_user_data_errors(void **state)
{
    (void)state;
    struct { const char *family, *ud, *reason; } cases[] = {
        /* refused by class resolution already (AMIFamilyNotSupported), else by
         * the user data (AMIFamilyUnsupported) */
        { "Windows2022", NULL, "AMIFamily" },
        { "Bottlerocket", "[settings.kubernetes\nthis is = = not toml", "UserDataInvalid" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pfx x;
        pfx_init(&x, &ID);
        x.f.solve_q[x.f.nsolve_q++] = tk_resp(claim("a"));
        assert_int_equal(lc_prov_batch(x.p, batch_family(cases[i].family, cases[i].ud), NULL),
                         TLR_OK);
        assert_int_equal(lc_fake_count(&x.f, "create_fleet"), 0);
        assert_int_equal(lc_fake_count(&x.f, "claim_delete default-"), 1);
        bool said = false;
        for (size_t k = 0; k < x.f.ncalls; k++)
            said |= strncmp(x.f.calls[k], "nodeclass_status default", 24) == 0 &&
                    strstr(x.f.calls[k], cases[i].reason) != NULL;
        if (!said) {
            for (size_t k = 0; k < x.f.ncalls; k++)
                print_message("  %.400s\n", x.f.calls[k]);
            fail_msg("%s: no class status with %s", cases[i].family, cases[i].reason);
        }
        x.f.solve_q[x.f.nsolve_q++] = tk_resp(claim("a"));
        assert_int_equal(lc_prov_batch(x.p, batch_family(cases[i].family, cases[i].ud), NULL),
                         TLR_OK);
        assert_int_equal(x.f.last_solve->n_catalogs, 0);   /* paused: out of the solve */
        assert_int_equal(lc_fake_count(&x.f, "create_fleet"), 0);
        assert_int_equal(lc_fake_count(&x.f, "launch_template"), 0);
        pfx_clear(&x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_name_is_config_hash),
        cmocka_unit_test(test_default_block_devices),
        cmocka_unit_test(test_user_data_al2023),
        cmocka_unit_test(test_identity_missing),
        cmocka_unit_test(test_user_data_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
