/* ami.c - amiSelectorTerms to AMIs (tlr_ami.h). */
#include "tlr_ami.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define MAX_PARAMS 8

const char *tlr_ami_k8s_arch(const char *a)
{
    if (!a)
        return "";
    if (!strcmp(a, "x86_64"))
        return "amd64";
    if (!strcmp(a, "arm64"))
        return "arm64";
    return a;
}

void tlr_amis_free(tlr_amis *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        free(a->v[i].id);
        free(a->v[i].name);
        free(a->v[i].arch);
        free(a->v[i].variant);
        free(a->v[i].source);
    }
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

const tlr_ami *tlr_amis_find(const tlr_amis *a, const char *id)
{
    for (size_t i = 0; a && id && i < a->n; i++)
        if (!strcmp(a->v[i].id, id))
            return &a->v[i];
    return NULL;
}

const tlr_ami *tlr_amis_pick(const tlr_amis *a, const char *arch, const char *variant)
{
    const tlr_ami *std = NULL, *any = NULL;
    for (size_t i = 0; a && i < a->n; i++) {
        const tlr_ami *x = &a->v[i];
        if (arch && arch[0] && x->arch[0] && strcmp(x->arch, arch))
            continue;
        if (variant && !strcmp(x->variant, variant))
            return x;
        if (!std && (!x->variant[0] || !strcmp(x->variant, "standard")))
            std = x;
        if (!any)
            any = x;
    }
    return std ? std : any;
}

/* ---- aliases ------------------------------------------------------------ */

static void param(tlr_ami_param *out, size_t max, size_t *n, const char *arch,
                  const char *variant, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void param(tlr_ami_param *out, size_t max, size_t *n, const char *arch,
                  const char *variant, const char *fmt, ...)
{
    if (*n >= max)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out[*n].name, sizeof(out[*n].name), fmt, ap);
    va_end(ap);
    snprintf(out[*n].arch, sizeof(out[*n].arch), "%s", arch);
    snprintf(out[*n].variant, sizeof(out[*n].variant), "%s", variant);
    (*n)++;
}

int tlr_ami_alias_parameters(const char *alias, const char *k8s, tlr_ami_param *out, size_t max,
                             size_t *n, char *err, size_t errlen)
{
    const char *at = strchr(alias, '@');
    char fam[32], ver[64];
    *n = 0;
    if (!at || at == alias || !at[1] || (size_t)(at - alias) >= sizeof(fam)) {
        snprintf(err, errlen, "alias \"%.60s\" is not family@version", alias);
        return TLR_E_INVAL;
    }
    snprintf(fam, sizeof(fam), "%.*s", (int)(at - alias), alias);
    snprintf(ver, sizeof(ver), "%s", at + 1);
    if (!k8s || !k8s[0]) {
        snprintf(err, errlen, "alias %s needs the cluster's Kubernetes version (--k8s-version)",
                 alias);
        return TLR_E_INVAL;
    }
    bool latest = !strcmp(ver, "latest");
    const char *v = ver[0] == 'v' ? ver + 1 : ver;   /* "v20240807" -> "20240807" */
    if (!strcmp(fam, "al2023")) {
        static const struct { const char *ec2, *k, *var; } sets[] = {
            { "x86_64", "amd64", "standard" }, { "arm64", "arm64", "standard" },
            { "x86_64", "amd64", "nvidia" },   { "arm64", "arm64", "nvidia" },
            { "x86_64", "amd64", "neuron" },
        };
        for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
            if (latest)
                param(out, max, n, sets[i].k, sets[i].var,
                      "/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/"
                      "image_id", k8s, sets[i].ec2, sets[i].var);
            else
                param(out, max, n, sets[i].k, sets[i].var,
                      "/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/"
                      "amazon-eks-node-al2023-%s-%s-%s-v%s/image_id",
                      k8s, sets[i].ec2, sets[i].var, sets[i].ec2, sets[i].var, k8s, v);
        }
    } else if (!strcmp(fam, "al2")) {
        static const struct { const char *suffix, *k, *var; } sets[] = {
            { "", "amd64", "standard" }, { "-arm64", "arm64", "standard" },
            { "-gpu", "amd64", "nvidia" },
        };
        for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
            if (latest)
                param(out, max, n, sets[i].k, sets[i].var,
                      "/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/recommended/image_id",
                      k8s, sets[i].suffix);
            else
                param(out, max, n, sets[i].k, sets[i].var,
                      "/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/amazon-eks%s-node-%s-"
                      "v%s/image_id", k8s, sets[i].suffix,
                      !strcmp(sets[i].suffix, "-arm64") ? "-arm64"
                      : !strcmp(sets[i].suffix, "-gpu") ? "-gpu" : "", k8s, v);
        }
    } else if (!strcmp(fam, "bottlerocket")) {
        static const struct { const char *ec2, *k, *flavor, *var; } sets[] = {
            { "x86_64", "amd64", "", "standard" }, { "arm64", "arm64", "", "standard" },
            { "x86_64", "amd64", "-nvidia", "nvidia" }, { "arm64", "arm64", "-nvidia", "nvidia" },
        };
        for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
            param(out, max, n, sets[i].k, sets[i].var,
                  "/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8s, sets[i].flavor,
                  sets[i].ec2, latest ? "latest" : ver[0] == 'v' ? ver + 1 : ver);
    } else if (!strcmp(fam, "windows2019") || !strcmp(fam, "windows2022") ||
               !strcmp(fam, "windows2025")) {
        if (!latest) {
            snprintf(err, errlen, "alias %s: Windows aliases only take @latest", alias);
            return TLR_E_INVAL;
        }
        param(out, max, n, "amd64", "standard",
              "/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/"
              "image_id", fam + 7, k8s);
    } else {
        snprintf(err, errlen, "alias %s: unknown family \"%s\" (al2023, al2, bottlerocket, "
                 "windows2019, windows2022, windows2025)", alias, fam);
        return TLR_E_INVAL;
    }
    return TLR_OK;
}

/* ---- resolution --------------------------------------------------------- */

static void add(tlr_amis *a, const char *id, const char *arch, const char *variant,
                const char *source)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->v[i].id, id) && !strcmp(a->v[i].variant, variant))
            return;
    a->v = tlr_realloc(a->v, (a->n + 1) * sizeof(*a->v));
    tlr_ami *x = &a->v[a->n++];
    memset(x, 0, sizeof(*x));
    x->id = tlr_strdup(id);
    x->name = tlr_strdup("");
    x->arch = tlr_strdup(arch ? arch : "");
    x->variant = tlr_strdup(variant ? variant : "");
    x->source = tlr_strdup(source);
}

static void image_into(tlr_ami *x, const tlr_ec2_image *im)
{
    free(x->name);
    x->name = tlr_strdup(im->name ? im->name : "");
    if (im->arch && im->arch[0]) {
        free(x->arch);
        x->arch = tlr_strdup(tlr_ami_k8s_arch(im->arch));
    }
    x->creation_ms = im->creation_ms;
    x->deprecation_ms = im->deprecation_ms;
}

static int cmp_ami(const void *a, const void *b)
{
    const tlr_ami *x = a, *y = b;
    int c;
    if ((c = strcmp(x->arch, y->arch)) || (c = strcmp(x->variant, y->variant)))
        return c;
    return strcmp(x->id, y->id);
}

/* name / owner / tags: the newest available image per architecture. */
static int by_filters(const Tailor__V1__AmiSelectorTerm *t, const tlr_ami_ops *ops,
                      tlr_amis *out, char *err, size_t errlen)
{
    tlr_ec2_filter f[24];
    const char *vals[24];
    char keys[24][160];
    size_t nf = 0;
    const char *owners[1] = { t->owner };
    static const char *const available[] = { "available" };

    f[nf++] = (tlr_ec2_filter){ "state", available, 1 };
    if (t->name[0]) {
        vals[nf] = t->name;
        f[nf] = (tlr_ec2_filter){ "name", &vals[nf], 1 };
        nf++;
    }
    for (size_t i = 0; i < t->n_tags && nf < 24; i++) {
        if (!strcmp(t->tags[i]->value, "*")) {
            vals[nf] = t->tags[i]->key;
            f[nf] = (tlr_ec2_filter){ "tag-key", &vals[nf], 1 };
        } else {
            snprintf(keys[nf], sizeof(keys[nf]), "tag:%s", t->tags[i]->key);
            vals[nf] = t->tags[i]->value;
            f[nf] = (tlr_ec2_filter){ keys[nf], &vals[nf], 1 };
        }
        nf++;
    }
    tlr_ec2_images imgs = { 0 };
    tlr_aws_error ae = { 0 };
    int rc = ops->describe(ops->arg, f, nf, NULL, 0, t->owner[0] ? owners : NULL,
                           t->owner[0] ? 1 : 0, &imgs, &ae);
    if (rc != TLR_OK) {
        snprintf(err, errlen, "DescribeImages for name \"%s\" owner \"%s\": %s%s%s", t->name,
                 t->owner, tlr_strerror(rc), ae.code[0] ? ": " : "", ae.code);
        return rc;
    }
    /* newest per architecture */
    for (size_t i = 0; i < imgs.n; i++) {
        const tlr_ec2_image *im = &imgs.v[i];
        const char *arch = tlr_ami_k8s_arch(im->arch);
        bool newest = true;
        for (size_t k = 0; k < imgs.n && newest; k++)
            if (k != i && !strcmp(tlr_ami_k8s_arch(imgs.v[k].arch), arch) &&
                (imgs.v[k].creation_ms > im->creation_ms ||
                 (imgs.v[k].creation_ms == im->creation_ms && strcmp(imgs.v[k].id, im->id) > 0)))
                newest = false;
        if (!newest)
            continue;
        char src[300];
        snprintf(src, sizeof(src), "name \"%s\"%s%s%s", t->name, t->owner[0] ? " owner " : "",
                 t->owner, t->n_tags ? " and tags" : "");
        add(out, im->id, arch, "", src);
        image_into(&out->v[out->n - 1], im);
    }
    tlr_ec2_images_free(&imgs);
    return TLR_OK;
}

int tlr_ami_resolve(Tailor__V1__AmiSelectorTerm *const *terms, size_t n, const char *k8s,
                    const tlr_ami_ops *ops, tlr_amis *out, char *err, size_t errlen)
{
    tlr_amis got = { 0 };
    int rc = TLR_OK;
    char tried[512] = "";

    if (err && errlen)
        err[0] = '\0';
    for (size_t i = 0; i < n && rc == TLR_OK; i++) {
        const Tailor__V1__AmiSelectorTerm *t = terms[i];
        if (t->alias[0] || t->ssm_parameter[0]) {
            tlr_ami_param ps[MAX_PARAMS];
            size_t np = 0;
            if (t->alias[0]) {
                if ((rc = tlr_ami_alias_parameters(t->alias, k8s, ps, MAX_PARAMS, &np, err,
                                                   errlen)) != TLR_OK)
                    break;
            } else {
                snprintf(ps[0].name, sizeof(ps[0].name), "%s", t->ssm_parameter);
                ps[0].arch[0] = ps[0].variant[0] = '\0';
                np = 1;
            }
            size_t found = 0;
            for (size_t k = 0; k < np && rc == TLR_OK; k++) {
                char *id = NULL, src[360];
                tlr_aws_error ae = { 0 };
                int r = ops->ssm_get(ops->arg, ps[k].name, &id, &ae);
                if (r == TLR_E_NOTFOUND)
                    continue;
                if (r != TLR_OK) {
                    snprintf(err, errlen, "SSM GetParameter %s: %s%s%s", ps[k].name,
                             tlr_strerror(r), ae.code[0] ? ": " : "", ae.code);
                    rc = r;
                    break;
                }
                snprintf(src, sizeof(src), "%s %.64s (%.256s)",
                         t->alias[0] ? "alias" : "ssmParameter",
                         t->alias[0] ? t->alias : t->ssm_parameter, ps[k].name);
                add(&got, id, ps[k].arch, ps[k].variant, src);
                free(id);
                found++;
            }
            if (rc == TLR_OK && found == 0)
                snprintf(tried, sizeof(tried), "%s: no SSM parameter found (first tried: %s)",
                         t->alias[0] ? t->alias : t->ssm_parameter, np ? ps[0].name : "");
        } else if (t->id[0]) {
            char src[96];
            snprintf(src, sizeof(src), "id %s", t->id);
            add(&got, t->id, "", "", src);
        } else {
            rc = by_filters(t, ops, &got, err, errlen);
        }
    }
    if (rc != TLR_OK) {
        tlr_amis_free(&got);
        return rc;
    }
    /* Describe every id not described yet: architecture and dates. */
    const char **ids = tlr_calloc(got.n + 1, sizeof(*ids));
    size_t nids = 0;
    for (size_t i = 0; i < got.n; i++)
        if (!got.v[i].name[0])
            ids[nids++] = got.v[i].id;
    if (nids > 0) {
        tlr_ec2_images imgs = { 0 };
        tlr_aws_error ae = { 0 };
        int r = ops->describe(ops->arg, NULL, 0, ids, nids, NULL, 0, &imgs, &ae);
        if (r == TLR_OK) {
            for (size_t k = 0; k < imgs.n; k++)
                for (size_t i = 0; i < got.n; i++)
                    if (!strcmp(got.v[i].id, imgs.v[k].id))
                        image_into(&got.v[i], &imgs.v[k]);
            /* An id term whose image EC2 does not know resolves to nothing. */
            for (size_t i = 0; i < got.n;) {
                bool known = false;
                for (size_t k = 0; k < imgs.n && !known; k++)
                    known = !strcmp(got.v[i].id, imgs.v[k].id);
                if (!known && !strncmp(got.v[i].source, "id ", 3)) {
                    snprintf(tried, sizeof(tried), "image %s does not exist", got.v[i].id);
                    free(got.v[i].id);
                    free(got.v[i].name);
                    free(got.v[i].arch);
                    free(got.v[i].variant);
                    free(got.v[i].source);
                    memmove(&got.v[i], &got.v[i + 1], (got.n - i - 1) * sizeof(*got.v));
                    got.n--;
                    continue;
                }
                i++;
            }
        } else if (r != TLR_E_NOTFOUND) {
            snprintf(err, errlen, "DescribeImages: %s%s%s", tlr_strerror(r),
                     ae.code[0] ? ": " : "", ae.code);
            rc = r;
        } else {
            /* InvalidAMIID.NotFound: every id asked for is unknown */
            for (size_t i = 0; i < got.n;) {
                if (!strncmp(got.v[i].source, "id ", 3) && !got.v[i].name[0]) {
                    snprintf(tried, sizeof(tried), "image %s does not exist", got.v[i].id);
                    free(got.v[i].id);
                    free(got.v[i].name);
                    free(got.v[i].arch);
                    free(got.v[i].variant);
                    free(got.v[i].source);
                    memmove(&got.v[i], &got.v[i + 1], (got.n - i - 1) * sizeof(*got.v));
                    got.n--;
                    continue;
                }
                i++;
            }
        }
        tlr_ec2_images_free(&imgs);
    }
    free(ids);
    if (rc == TLR_OK && got.n == 0) {
        snprintf(err, errlen, "amiSelectorTerms resolve to no image%s%s", tried[0] ? ": " : "",
                 tried);
        rc = TLR_E_NOTFOUND;
    }
    if (rc != TLR_OK) {
        tlr_amis_free(&got);
        return rc;
    }
    qsort(got.v, got.n, sizeof(*got.v), cmp_ami);
    *out = got;
    return TLR_OK;
}

/* ---- the real calls ------------------------------------------------------- */

static int aws_ssm_get(void *arg, const char *name, char **value, tlr_aws_error *err)
{
    tlr_ami_aws *c = arg;
    json_object *req = json_object_new_object(), *resp = NULL;
    json_object_object_add(req, "Name", json_object_new_string(name));
    int rc = tlr_aws_json_call(c->ssm, "GetParameter", req, &resp, err);
    json_object_put(req);
    if (rc != TLR_OK) {
        if (err && !strcmp(err->code, "ParameterNotFound"))
            rc = TLR_E_NOTFOUND;
        return rc;
    }
    const char *v = tlr_json_str(resp, "Parameter.Value");
    if (v && v[0])
        *value = tlr_strdup(v);
    else
        rc = TLR_E_PARSE;
    json_object_put(resp);
    return rc;
}

static int aws_describe(void *arg, const tlr_ec2_filter *f, size_t nf, const char *const *ids,
                        size_t nids, const char *const *owners, size_t nowners,
                        tlr_ec2_images *out, tlr_aws_error *err)
{
    tlr_ami_aws *c = arg;
    return tlr_ec2_describe_images(c->ec2, f, nf, ids, nids, owners, nowners, out, err);
}

void tlr_ami_ops_aws(tlr_ami_aws *clients, tlr_ami_ops *out)
{
    out->ssm_get = aws_ssm_get;
    out->describe = aws_describe;
    out->arg = clients;
}
