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
#include "testkit.h"
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

static void test_ami_selection(void **state)
{
    (void)state;
    struct { const char *alias, *id, *ssm; const char *want_direct, *want_param; } cases[] = {
        { NULL, "ami-1", NULL, "ami-1", NULL },
        { "al2023@latest", NULL, NULL, NULL,
          "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id" },
        { "bottlerocket@v1.20.0", NULL, NULL, NULL,
          "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/v1.20.0/image_id" },
        { NULL, NULL, "/my/ami", NULL, "/my/ami" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__NodeClass nc = TAILOR__V1__NODE_CLASS__INIT;
        Tailor__V1__AmiSelectorTerm t = TAILOR__V1__AMI_SELECTOR_TERM__INIT;
        Tailor__V1__AmiSelectorTerm *tp = &t;
        if (cases[i].alias) t.alias = (char *)cases[i].alias;
        if (cases[i].id) t.id = (char *)cases[i].id;
        if (cases[i].ssm) t.ssm_parameter = (char *)cases[i].ssm;
        nc.ami_selector_terms = &tp;
        nc.n_ami_selector_terms = 1;
        const char *d = lc_lt_direct_ami(&nc);
        char *sp = lc_lt_ssm_parameter(&nc, "1.31", "x86_64");
        bool ok_d = (!d && !cases[i].want_direct) || (d && cases[i].want_direct && !strcmp(d, cases[i].want_direct));
        bool ok_p = (!sp && !cases[i].want_param) || (sp && cases[i].want_param && !strcmp(sp, cases[i].want_param));
        if (!ok_d || !ok_p)
            fail_msg("case %zu: got direct=%s param=%s want %s %s", i, d ? d : "-", sp ? sp : "-",
                     cases[i].want_direct ? cases[i].want_direct : "-",
                     cases[i].want_param ? cases[i].want_param : "-");
        free(sp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_name_is_config_hash),
        cmocka_unit_test(test_ami_selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
