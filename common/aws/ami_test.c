/* ami_test.c - amiSelectorTerms resolution against a recording fake of
 * SSM and DescribeImages: which parameters an alias asks for, which
 * images a term keeps, and how failures read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_ami.h"
#include "tlr_err.h"

typedef struct fake_img {
    const char *id, *name, *arch;
    int64_t created;
    const char *tag_key, *tag_value;
} fake_img;

typedef struct fake {
    const char *const *params;     /* name, value, name, value, ..., NULL */
    const fake_img *imgs;
    size_t nimgs;
    int ssm_rc;                    /* forced error, 0 = none */
    char calls[4096];              /* "ssm NAME;" "describe ids=..|filters=..;" */
} fake;

static int f_ssm(void *arg, const char *name, char **value, tlr_aws_error *err)
{
    fake *f = arg;
    snprintf(f->calls + strlen(f->calls), sizeof(f->calls) - strlen(f->calls), "ssm %s;", name);
    if (f->ssm_rc) {
        snprintf(err->code, sizeof(err->code), "AccessDeniedException");
        return f->ssm_rc;
    }
    for (size_t i = 0; f->params && f->params[i]; i += 2)
        if (!strcmp(f->params[i], name)) {
            *value = tlr_strdup(f->params[i + 1]);
            return TLR_OK;
        }
    return TLR_E_NOTFOUND;
}

static bool glob(const char *pat, const char *s)
{
    if (*pat == '\0')
        return *s == '\0';
    if (*pat == '*')
        return glob(pat + 1, s) || (*s && glob(pat, s + 1));
    return *s == *pat && glob(pat + 1, s + 1);
}

static int f_describe(void *arg, const tlr_ec2_filter *flt, size_t nf, const char *const *ids,
                      size_t nids, const char *const *owners, size_t nowners,
                      tlr_ec2_images *out, tlr_aws_error *err)
{
    fake *f = arg;
    (void)err;
    char *c = f->calls + strlen(f->calls);
    size_t room = sizeof(f->calls) - strlen(f->calls);
    int w = snprintf(c, room, "describe");
    for (size_t i = 0; i < nids; i++)
        w += snprintf(c + w, room - (size_t)w, " id=%s", ids[i]);
    for (size_t i = 0; i < nf; i++)
        w += snprintf(c + w, room - (size_t)w, " %s=%s", flt[i].name, flt[i].values[0]);
    for (size_t i = 0; i < nowners; i++)
        w += snprintf(c + w, room - (size_t)w, " owner=%s", owners[i]);
    snprintf(c + w, room - (size_t)w, ";");
    memset(out, 0, sizeof(*out));
    out->v = tlr_calloc(f->nimgs + 1, sizeof(*out->v));
    for (size_t i = 0; i < f->nimgs; i++) {
        const fake_img *im = &f->imgs[i];
        bool ok = true;
        if (nids) {
            ok = false;
            for (size_t k = 0; k < nids; k++)
                ok |= !strcmp(ids[k], im->id);
        }
        for (size_t k = 0; k < nf && ok; k++) {
            if (!strcmp(flt[k].name, "name"))
                ok = glob(flt[k].values[0], im->name);
            else if (!strcmp(flt[k].name, "tag-key"))
                ok = im->tag_key && !strcmp(im->tag_key, flt[k].values[0]);
            else if (!strncmp(flt[k].name, "tag:", 4))
                ok = im->tag_key && !strcmp(im->tag_key, flt[k].name + 4) &&
                     !strcmp(im->tag_value, flt[k].values[0]);
        }
        if (!ok)
            continue;
        tlr_ec2_image *x = &out->v[out->n++];
        x->id = tlr_strdup(im->id);
        x->name = tlr_strdup(im->name);
        x->arch = tlr_strdup(im->arch);
        x->state = tlr_strdup("available");
        x->owner = tlr_strdup("123456789012");
        x->creation_ms = im->created;
    }
    if (nids && out->n == 0) {
        tlr_ec2_images_free(out);
        snprintf(err->code, sizeof(err->code), "InvalidAMIID.NotFound");
        return TLR_E_NOTFOUND;
    }
    return TLR_OK;
}

static Tailor__V1__AmiSelectorTerm *term(const char *alias, const char *id, const char *name,
                                         const char *owner, const char *ssm)
{
    Tailor__V1__AmiSelectorTerm *t = tlr_malloc(sizeof(*t));
    tailor__v1__ami_selector_term__init(t);
    t->alias = (char *)(alias ? alias : "");
    t->id = (char *)(id ? id : "");
    t->name = (char *)(name ? name : "");
    t->owner = (char *)(owner ? owner : "");
    t->ssm_parameter = (char *)(ssm ? ssm : "");
    return t;
}

static const fake_img images[] = {
    { "ami-0000000000000a001", "amazon-eks-node-al2023-x86_64-standard-1.31-v20240807", "x86_64",
      1000, NULL, NULL },
    { "ami-0000000000000a002", "amazon-eks-node-al2023-arm64-standard-1.31-v20240807", "arm64",
      1000, NULL, NULL },
    { "ami-0000000000000a003", "amazon-eks-node-al2023-x86_64-nvidia-1.31-v20240807", "x86_64",
      1000, NULL, NULL },
    { "ami-0000000000000b001", "tailor-node-2024-01", "x86_64", 1000, "team", "platform" },
    { "ami-0000000000000b002", "tailor-node-2024-02", "x86_64", 2000, "team", "platform" },
    { "ami-0000000000000b003", "tailor-node-2024-02-arm", "arm64", 1500, "team", "platform" },
    { "ami-0000000000000b004", "other-image", "x86_64", 3000, NULL, NULL },
};
static const char *const params[] = {
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id",
    "ami-0000000000000a001",
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/recommended/image_id",
    "ami-0000000000000a002",
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
    "ami-0000000000000a003",
    "/tailor/golden-ami", "ami-0000000000000b002",
    NULL,
};

typedef struct resolve_case {
    const char *name;
    const char *alias, *id, *tname, *owner, *ssm;
    const char *k8s;
    int ssm_rc;
    int want_rc;
    const char *want;      /* "arch/variant/id," for each AMI, or the error substring */
    const char *want_call; /* substring of the recorded calls, or NULL */
} resolve_case;

static const resolve_case cases[] = {
    { "alias al2023@latest", "al2023@latest", NULL, NULL, NULL, NULL, "1.31", 0, TLR_OK,
      "amd64/nvidia/ami-0000000000000a003,amd64/standard/ami-0000000000000a001,"
      "arm64/standard/ami-0000000000000a002,",
      "ssm /aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/neuron/recommended/"
      "image_id;" },
    { "alias of a version SSM lacks", "al2023@latest", NULL, NULL, NULL, NULL, "1.99", 0,
      TLR_E_NOTFOUND, "al2023@latest: no SSM parameter found", NULL },
    { "alias needs the Kubernetes version", "al2023@latest", NULL, NULL, NULL, NULL, NULL, 0,
      TLR_E_INVAL, "needs the cluster's Kubernetes version", NULL },
    { "unknown family", "ubuntu@latest", NULL, NULL, NULL, NULL, "1.31", 0, TLR_E_INVAL,
      "unknown family \"ubuntu\"", NULL },
    { "id that exists", NULL, "ami-0000000000000b001", NULL, NULL, NULL, NULL, 0, TLR_OK,
      "amd64//ami-0000000000000b001,", "describe id=ami-0000000000000b001;" },
    { "id that does not exist", NULL, "ami-00000000000000bad", NULL, NULL, NULL, NULL, 0,
      TLR_E_NOTFOUND, "image ami-00000000000000bad does not exist", NULL },
    { "name with a wildcard: newest per arch", NULL, NULL, "tailor-node-*", "self", NULL, NULL,
      0, TLR_OK, "amd64//ami-0000000000000b002,arm64//ami-0000000000000b003,",
      "describe state=available name=tailor-node-* owner=self;" },
    { "ssmParameter", NULL, NULL, NULL, NULL, "/tailor/golden-ami", NULL, 0, TLR_OK,
      "amd64//ami-0000000000000b002,", "ssm /tailor/golden-ami;" },
    { "SSM refuses: the error says which parameter", "al2023@latest", NULL, NULL, NULL, NULL,
      "1.31", TLR_E_AUTH, TLR_E_AUTH, "SSM GetParameter /aws/service/eks/optimized-ami/1.31/"
      "amazon-linux-2023/x86_64/standard/recommended/image_id: authentication", NULL },
};

static void test_resolve(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const resolve_case *c = &cases[i];
        fake f = { params, images, sizeof(images) / sizeof(images[0]), c->ssm_rc, "" };
        tlr_ami_ops ops = { f_ssm, f_describe, &f };
        Tailor__V1__AmiSelectorTerm *t = term(c->alias, c->id, c->tname, c->owner, c->ssm);
        tlr_amis got = { 0 };
        char err[512] = "", desc[1024] = "";
        int rc = tlr_ami_resolve(&t, 1, c->k8s, &ops, &got, err, sizeof(err));
        for (size_t k = 0; k < got.n; k++)
            snprintf(desc + strlen(desc), sizeof(desc) - strlen(desc), "%s/%s/%s,",
                     got.v[k].arch, got.v[k].variant, got.v[k].id);
        const char *have = rc == TLR_OK ? desc : err;
        bool ok = rc == c->want_rc && (rc == TLR_OK ? !strcmp(desc, c->want)
                                                    : strstr(err, c->want) != NULL);
        if (c->want_call && !strstr(f.calls, c->want_call))
            ok = false;
        if (!ok) {
            print_error("case %s: got rc %d \"%s\" calls [%s], want rc %d \"%s\" call \"%s\"\n",
                        c->name, rc, have, f.calls, c->want_rc, c->want,
                        c->want_call ? c->want_call : "");
            failed++;
        }
        tlr_amis_free(&got);
        free(t);
    }
    assert_int_equal(failed, 0);
}

static void test_alias_parameters(void **state)
{
    (void)state;
    static const struct { const char *alias, *want0; size_t n; } pcases[] = {
        { "al2023@v20240807",
          "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/"
          "amazon-eks-node-al2023-x86_64-standard-1.30-v20240807/image_id", 5 },
        { "al2@latest", "/aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id",
          3 },
        { "bottlerocket@v1.20.0", "/aws/service/bottlerocket/aws-k8s-1.30/x86_64/1.20.0/image_id",
          4 },
        { "windows2022@latest", "/aws/service/ami-windows-latest/Windows_Server-2022-English-"
          "Core-EKS_Optimized-1.30/image_id", 1 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
        tlr_ami_param p[8];
        size_t n = 0;
        char err[256];
        int rc = tlr_ami_alias_parameters(pcases[i].alias, "1.30", p, 8, &n, err, sizeof(err));
        if (rc != TLR_OK || n != pcases[i].n || strcmp(p[0].name, pcases[i].want0)) {
            print_error("%s: got rc %d n %zu [%s], want n %zu [%s]\n", pcases[i].alias, rc, n,
                        n ? p[0].name : "", pcases[i].n, pcases[i].want0);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

static void test_pick(void **state)
{
    (void)state;
    tlr_ami v[] = {
        { "ami-a", "", "amd64", "standard", "", 0, 0 },
        { "ami-b", "", "amd64", "nvidia", "", 0, 0 },
        { "ami-c", "", "arm64", "standard", "", 0, 0 },
    };
    tlr_amis a = { v, 3 };
    assert_string_equal(tlr_amis_pick(&a, "amd64", "nvidia")->id, "ami-b");
    assert_string_equal(tlr_amis_pick(&a, "amd64", "standard")->id, "ami-a");
    assert_string_equal(tlr_amis_pick(&a, "arm64", "nvidia")->id, "ami-c");   /* fallback */
    assert_null(tlr_amis_pick(&a, "s390x", "standard"));
    assert_non_null(tlr_amis_find(&a, "ami-c"));
    assert_null(tlr_amis_find(&a, "ami-z"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_alias_parameters),
        cmocka_unit_test(test_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
