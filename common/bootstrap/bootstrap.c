/* bootstrap.c - AMI families, the checks every family shares, and the
 * small formatting rules (quantities, durations, sorted maps) the family
 * writers in nodeadm.c, al2.c and bottlerocket.c have in common.
 *
 * tlr_bootstrap_user_data only checks and dispatches; see tlr_bootstrap.h
 * for what each family produces.  Everything that comes from a map is
 * sorted before it is written, because the launch template name hashes
 * the result: the same NodeClaim must always give the same bytes.
 */
#include "tlr_bootstrap.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bootstrap_impl.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_yaml.h"

static const struct {
    tlr_ami_family f;
    const char *name;
} families[] = {
    { TLR_AMI_FAMILY_AL2023, "AL2023" },
    { TLR_AMI_FAMILY_AL2, "AL2" },
    { TLR_AMI_FAMILY_BOTTLEROCKET, "Bottlerocket" },
    { TLR_AMI_FAMILY_CUSTOM, "Custom" },
    { TLR_AMI_FAMILY_WINDOWS2019, "Windows2019" },
    { TLR_AMI_FAMILY_WINDOWS2022, "Windows2022" },
    { TLR_AMI_FAMILY_WINDOWS2025, "Windows2025" },
};

tlr_ami_family tlr_ami_family_parse(const char *s)
{
    if (s == NULL)
        return TLR_AMI_FAMILY_UNKNOWN;
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
        if (strcasecmp(s, families[i].name) == 0)
            return families[i].f;
    return TLR_AMI_FAMILY_UNKNOWN;
}

const char *tlr_ami_family_name(tlr_ami_family f)
{
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
        if (families[i].f == f)
            return families[i].name;
    return "";
}

tlr_ami_family tlr_ami_family_of(const Tailor__V1__NodeClass *nc)
{
    if (nc == NULL)
        return TLR_AMI_FAMILY_UNKNOWN;
    if (nc->ami_family != NULL && nc->ami_family[0] != '\0')
        return tlr_ami_family_parse(nc->ami_family);
    for (size_t i = 0; i < nc->n_ami_selector_terms; i++) {
        const char *alias = nc->ami_selector_terms[i]->alias;
        const char *at;
        char fam[32];
        if (alias == NULL || alias[0] == '\0')
            continue;
        at = strchr(alias, '@');
        size_t n = at != NULL ? (size_t)(at - alias) : strlen(alias);
        if (n >= sizeof(fam))
            return TLR_AMI_FAMILY_UNKNOWN;
        memcpy(fam, alias, n);
        fam[n] = '\0';
        return tlr_ami_family_parse(fam);
    }
    return TLR_AMI_FAMILY_UNKNOWN;
}

/* Is domain d[0..n) dom or one of its subdomains? */
static bool in_domain(const char *d, size_t n, const char *dom)
{
    size_t m = strlen(dom);
    if (n == m)
        return strncasecmp(d, dom, n) == 0;
    return n > m && d[n - m - 1] == '.' && strncasecmp(d + n - m, dom, m) == 0;
}

bool tlr_bootstrap_label_allowed(const char *key)
{
    const char *slash;

    if (key == NULL || key[0] == '\0')
        return false;
    slash = strchr(key, '/');
    if (slash == NULL)
        return true;
    size_t n = (size_t)(slash - key);
    /* node-restriction.kubernetes.io is a subdomain of kubernetes.io. */
    return !in_domain(key, n, "kubernetes.io") && !in_domain(key, n, "k8s.io");
}

int bs_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

void bs_cpu_str(int64_t milli, char *buf, size_t len)
{
    if (milli % 1000 == 0)
        snprintf(buf, len, "%" PRId64, milli / 1000);
    else
        snprintf(buf, len, "%" PRId64 "m", milli);
}

void bs_bytes_str(int64_t bytes, char *buf, size_t len)
{
    static const struct {
        int64_t unit;
        const char *suffix;
    } units[] = { { 1LL << 40, "Ti" }, { 1LL << 30, "Gi" }, { 1LL << 20, "Mi" }, { 1LL << 10, "Ki" } };

    for (size_t i = 0; bytes != 0 && i < sizeof(units) / sizeof(units[0]); i++) {
        if (bytes % units[i].unit == 0) {
            snprintf(buf, len, "%" PRId64 "%s", bytes / units[i].unit, units[i].suffix);
            return;
        }
    }
    snprintf(buf, len, "%" PRId64, bytes);
}

void bs_duration_str(int64_t ms, char *buf, size_t len)
{
    const char *sign = "";
    uint64_t u;
    char sec[32];

    if (ms == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    if (ms < 0) {
        sign = "-";
        u = (uint64_t)0 - (uint64_t)ms;
    } else {
        u = (uint64_t)ms;
    }
    if (u < 1000) {
        snprintf(buf, len, "%s%" PRIu64 "ms", sign, u);
        return;
    }
    uint64_t h = u / 3600000, m = u / 60000 % 60, s = u / 1000 % 60, frac = u % 1000;
    if (frac == 0) {
        snprintf(sec, sizeof(sec), "%" PRIu64 "s", s);
    } else {
        char f[8];
        snprintf(f, sizeof(f), "%03" PRIu64, frac);
        for (size_t i = strlen(f); i > 0 && f[i - 1] == '0'; i--)
            f[i - 1] = '\0';
        snprintf(sec, sizeof(sec), "%" PRIu64 ".%ss", s, f);
    }
    if (h > 0)
        snprintf(buf, len, "%s%" PRIu64 "h%" PRIu64 "m%s", sign, h, m, sec);
    else if (m > 0)
        snprintf(buf, len, "%s%" PRIu64 "m%s", sign, m, sec);
    else
        snprintf(buf, len, "%s%s", sign, sec);
}

const char *bs_effect_name(int effect)
{
    switch (effect) {
    case TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE: return "NoSchedule";
    case TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE: return "PreferNoSchedule";
    case TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE: return "NoExecute";
    default: return NULL;
    }
}

int32_t bs_max_pods(const tlr_bootstrap_in *in)
{
    if (in->max_pods > 0)
        return in->max_pods;
    if (in->kubelet != NULL && in->kubelet->max_pods > 0)
        return in->kubelet->max_pods;
    return 0;
}

const char *const *bs_cluster_dns(const tlr_bootstrap_in *in, size_t *n)
{
    if (in->kubelet != NULL && in->kubelet->n_cluster_dns > 0) {
        *n = in->kubelet->n_cluster_dns;
        return (const char *const *)in->kubelet->cluster_dns;
    }
    if (in->cluster->dns_ip != NULL && in->cluster->dns_ip[0] != '\0') {
        *n = 1;
        return &in->cluster->dns_ip;
    }
    *n = 0;
    return NULL;
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_object *bs_sorted(json_object *o)
{
    size_t n = (size_t)json_object_object_length(o), k = 0;
    const char **keys = tlr_calloc(n > 0 ? n : 1, sizeof(*keys));
    json_object *r = json_object_new_object();

    json_object_object_foreach(o, key, v) {
        (void)v;
        keys[k++] = key;
    }
    qsort(keys, k, sizeof(*keys), cmp_keys);
    for (size_t i = 0; i < k; i++)
        json_object_object_add(r, keys[i], json_object_get(json_object_object_get(o, keys[i])));
    free(keys);
    return r;
}

/* o (handed over) sorted, or NULL when it is empty. */
static json_object *sorted_or_null(json_object *o)
{
    json_object *r = NULL;
    if (json_object_object_length(o) > 0)
        r = bs_sorted(o);
    json_object_put(o);
    return r;
}

json_object *bs_resource_map(const Tailor__V1__ResourceList *rl)
{
    json_object *o;
    char q[64];

    if (rl == NULL)
        return NULL;
    o = json_object_new_object();
    if (rl->cpu_millis > 0) {
        bs_cpu_str(rl->cpu_millis, q, sizeof(q));
        json_object_object_add(o, "cpu", json_object_new_string(q));
    }
    if (rl->memory_bytes > 0) {
        bs_bytes_str(rl->memory_bytes, q, sizeof(q));
        json_object_object_add(o, "memory", json_object_new_string(q));
    }
    if (rl->ephemeral_storage_bytes > 0) {
        bs_bytes_str(rl->ephemeral_storage_bytes, q, sizeof(q));
        json_object_object_add(o, "ephemeral-storage", json_object_new_string(q));
    }
    /* pods is not something the kubelet reserves: left out. */
    for (size_t i = 0; i < rl->n_extended; i++) {
        const Tailor__V1__ExtendedResource *e = rl->extended[i];
        if (e->value <= 0 || e->name == NULL || e->name[0] == '\0')
            continue;
        snprintf(q, sizeof(q), "%" PRId64, e->value);
        json_object_object_add(o, e->name, json_object_new_string(q));
    }
    return sorted_or_null(o);
}

json_object *bs_label_map(Tailor__V1__Label *const *l, size_t n)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; i < n; i++)
        if (l[i]->key != NULL && l[i]->key[0] != '\0')
            json_object_object_add(o, l[i]->key, json_object_new_string(l[i]->value));
    return sorted_or_null(o);
}

json_object *bs_duration_map(Tailor__V1__SignalDuration *const *d, size_t n)
{
    json_object *o = json_object_new_object();
    char s[64];
    for (size_t i = 0; i < n; i++) {
        if (d[i]->signal == NULL || d[i]->signal[0] == '\0')
            continue;
        bs_duration_str(d[i]->duration_ms, s, sizeof(s));
        json_object_object_add(o, d[i]->signal, json_object_new_string(s));
    }
    return sorted_or_null(o);
}

static int cmp_labels(const void *a, const void *b)
{
    const Tailor__V1__Label *x = *(const Tailor__V1__Label *const *)a;
    const Tailor__V1__Label *y = *(const Tailor__V1__Label *const *)b;
    return strcmp(x->key, y->key);
}

const Tailor__V1__Label **bs_sorted_labels(const tlr_bootstrap_in *in)
{
    const Tailor__V1__Label **l = tlr_calloc(in->nlabels > 0 ? in->nlabels : 1, sizeof(*l));
    for (size_t i = 0; i < in->nlabels; i++)
        l[i] = in->labels[i];
    qsort(l, in->nlabels, sizeof(*l), cmp_labels);
    return l;
}

void bs_doc_add(tlr_mime_doc *doc, const char *ct, const char *body, size_t len)
{
    char *copy = tlr_malloc(len + 1);

    memcpy(copy, body, len);
    copy[len] = '\0';
    doc->parts = tlr_realloc(doc->parts, (doc->n + 1) * sizeof(*doc->parts));
    doc->parts[doc->n++] = (tlr_mime_part){
        .content_type = tlr_strdup(ct),
        .body = copy,
        .len = len,
    };
}

static bool is_yaml_mapping(const char *s, size_t len)
{
    json_object *docs = NULL;
    bool yes = false;

    if (tlr_yaml_parse(s, len, NULL, &docs, NULL, 0) == TLR_OK)
        yes = json_object_array_length(docs) >= 1 &&
              json_object_is_type(json_object_array_get_idx(docs, 0), json_type_object);
    json_object_put(docs);
    return yes;
}

int bs_user_parts(const char *user_data, const char *yaml_ct, tlr_mime_doc *doc, char *err,
                  size_t errlen)
{
    size_t len = user_data != NULL ? strlen(user_data) : 0;
    char why[200];
    int rc;

    *doc = (tlr_mime_doc){ 0 };
    if (len == 0)
        return TLR_OK;
    if (tlr_mime_looks_like(user_data, len)) {
        rc = tlr_mime_parse(user_data, len, doc, why, sizeof(why));
        if (rc != TLR_OK)
            return bs_fail(err, errlen, rc, "userData: %s", why);
        return TLR_OK;
    }
    if (yaml_ct != NULL && is_yaml_mapping(user_data, len))
        bs_doc_add(doc, yaml_ct, user_data, len);
    else
        bs_doc_add(doc, BS_CT_SHELL, user_data, len);
    return TLR_OK;
}

int tlr_bootstrap_user_data(const tlr_bootstrap_in *in, char **out, char *err, size_t errlen)
{
    const tlr_cluster_identity *c;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (in == NULL || out == NULL)
        return bs_fail(err, errlen, TLR_E_INVAL, "no input");
    switch (in->family) {
    case TLR_AMI_FAMILY_CUSTOM:
        *out = tlr_strdup(in->user_data != NULL ? in->user_data : "");
        return TLR_OK;
    case TLR_AMI_FAMILY_WINDOWS2019:
    case TLR_AMI_FAMILY_WINDOWS2022:
    case TLR_AMI_FAMILY_WINDOWS2025:
        return bs_fail(err, errlen, TLR_E_UNIMPLEMENTED,
                       "Windows AMI families are not supported by tailor");
    case TLR_AMI_FAMILY_AL2023:
    case TLR_AMI_FAMILY_AL2:
    case TLR_AMI_FAMILY_BOTTLEROCKET:
        break;
    default:
        return bs_fail(err, errlen, TLR_E_INVAL, "unknown AMI family %d", (int)in->family);
    }
    c = in->cluster;
    if (c == NULL || c->name == NULL || c->name[0] == '\0')
        return bs_fail(err, errlen, TLR_E_INVAL, "cluster name is not set");
    if (c->endpoint == NULL || c->endpoint[0] == '\0')
        return bs_fail(err, errlen, TLR_E_INVAL, "cluster endpoint is not set");
    if (c->ca_b64 == NULL || c->ca_b64[0] == '\0')
        return bs_fail(err, errlen, TLR_E_INVAL, "cluster CA bundle is not set");
    for (size_t i = 0; i < in->ntaints; i++)
        if (bs_effect_name(in->taints[i]->effect) == NULL || in->taints[i]->key[0] == '\0')
            return bs_fail(err, errlen, TLR_E_INVAL, "taint %zu (\"%.60s\"): no key or effect",
                           i, in->taints[i]->key);
    if (in->family == TLR_AMI_FAMILY_AL2023)
        return bs_nodeadm(in, out, err, errlen);
    if (in->family == TLR_AMI_FAMILY_AL2)
        return bs_al2(in, out, err, errlen);
    return bs_bottlerocket(in, out, err, errlen);
}
