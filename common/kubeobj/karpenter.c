/* karpenter.c - the validation Karpenter v1.14 applies to its own objects,
 * for the NodePool, NodeClaim and EC2NodeClass converters.
 *
 * Karpenter guards its objects twice: the API server enforces the CRDs'
 * OpenAPI schema and CEL x-kubernetes-validations at admission, and the
 * controllers run a runtime validation (label and taint syntax, well-known
 * values, the kubelet map) that keeps a NodePool or EC2NodeClass from going
 * Ready.  tailor reads manifests that never met an API server (tailorctl,
 * kubesim, a cluster without the CRDs' CEL), so it applies both here and
 * refuses what Karpenter would refuse.  The rules are read from the v1.14
 * CRDs; where a CEL rule says less than its message (the selector-term
 * "mutually exclusive" rules test !all(), not !exists()), the rule wins,
 * so a manifest Karpenter admits is never refused here.
 *
 * Patterns are the CRDs' own, written as POSIX EREs ((?:...) becomes (...),
 * \s becomes [[:space:]]) and compiled per call: these objects are few and
 * change rarely.
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeobj_int.h"
#include "tlr_kubesem.h"
#include "tlr_err.h"
#include "tlr_labels.h"

bool kmatch(const char *ere, const char *s)
{
    regex_t re;
    bool ok;

    if (regcomp(&re, ere, REG_EXTENDED | REG_NOSUB) != 0)
        abort();   /* our own constant pattern: a bug */
    ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

int kpattern(kctx *c, json_object *o, const char *path, const char *field, const char *ere,
             const char *what)
{
    const char *s;
    int rc = kstr(c, o, path, field, &s);

    if (rc != TLR_OK || s == NULL)
        return rc;
    if (!kmatch(ere, s))
        return kfail(c, TLR_E_PARSE, field, "\"%.64s\" %s", s, what);
    return TLR_OK;
}

#define QNAME_ERE                                                                       \
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"             \
    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
#define LVALUE_ERE "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

bool kqualified_name(const char *s)
{
    const char *slash = strchr(s, '/');
    size_t name = slash ? strlen(slash + 1) : strlen(s);

    return strlen(s) <= 316 && name <= 63 && (slash == NULL || slash - s <= 253) &&
           kmatch(QNAME_ERE, s);
}

bool klabel_value(const char *s)
{
    return strlen(s) <= 63 && kmatch(LVALUE_ERE, s);
}

int kkarp_labels(kctx *c, json_object *map, const char *field)
{
    char f[KF];

    if (map == NULL || !json_object_is_type(map, json_type_object))
        return TLR_OK;   /* absent, or klabels() reports the type */
    if (json_object_object_length(map) > 100)
        return kfail(c, TLR_E_INVAL, field, "at most 100 labels");
    json_object_object_foreach(map, k, v) {
        const char *why = tlr_ks_restricted_label(k, false);
        const char *val = json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                     : "";
        kpath(f, "%s[%.64s]", field, k);
        if (why != NULL)
            return kfail(c, TLR_E_INVAL, f, "%s", why);
        if (!kqualified_name(k))
            return kfail(c, TLR_E_PARSE, f, "key is not a qualified name ([prefix/]name, "
                         "alphanumerics, '-', '_', '.')");
        if (!klabel_value(val))
            return kfail(c, TLR_E_PARSE, f, "value \"%.64s\" is not a label value (at most 63 "
                         "alphanumerics, '-', '_', '.', starting and ending alphanumeric)", val);
    }
    return TLR_OK;
}

/* Well-known labels whose values Karpenter knows: an In requirement naming
 * none of them can never launch anything (runtime validation). */
static const struct { const char *key, *values[4]; } known_values[] = {
    { TLR_LABEL_CAPACITY_TYPE, { "on-demand", "spot", "reserved", NULL } },
    { TLR_LABEL_INSTANCE_TENANCY, { "dedicated", "default", NULL, NULL } },
};

static size_t count_known(const Tailor__V1__NodeSelectorRequirement *r, bool *has_known)
{
    size_t n = 0;

    *has_known = false;
    for (size_t k = 0; k < sizeof(known_values) / sizeof(known_values[0]); k++) {
        if (strcmp(r->key, known_values[k].key) != 0)
            continue;
        *has_known = true;
        for (size_t i = 0; i < r->n_values; i++)
            for (size_t j = 0; known_values[k].values[j] != NULL; j++)
                if (strcmp(r->values[i], known_values[k].values[j]) == 0)
                    n++;
    }
    return n;
}

int kkarp_reqs(kctx *c, Tailor__V1__NodeSelectorRequirement **r, size_t n, const char *field,
               bool nodepool_key_ok)
{
    char f[KF];

    for (size_t i = 0; i < n; i++) {
        const Tailor__V1__NodeSelectorRequirement *x = r[i];
        const char *why = tlr_ks_restricted_label(x->key, nodepool_key_ok);
        bool has_known;

        kpath(f, "%s[%zu]", field, i);
        if (why != NULL)
            return kfail(c, TLR_E_INVAL, f, "key %.64s: %s", x->key, why);
        if (!kqualified_name(x->key))
            return kfail(c, TLR_E_PARSE, f, "key \"%.64s\" is not a qualified name", x->key);
        switch (x->operator_) {
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT:
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT:
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GTE:
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LTE: {
            /* one integer value (knsreqs checked) that CEL's int() reads
             * as >= 0; int() of an out-of-range number is an error */
            errno = 0;
            long long v = strtoll(x->values[0], NULL, 10);
            if (errno == ERANGE || v < 0)
                return kfail(c, TLR_E_INVAL, f, "key %.64s: 'Gt', 'Lt', 'Gte' and 'Lte' need a "
                             "single non-negative integer value", x->key);
            break;
        }
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN: {
            size_t ok = count_known(x, &has_known);
            if (has_known && ok == 0)
                return kfail(c, TLR_E_INVAL, f, "key %.64s: none of the values is one "
                             "Karpenter knows", x->key);
            if (has_known && x->min_values > 0 && ok < (size_t)x->min_values)
                return kfail(c, TLR_E_INVAL, f, "key %.64s: fewer known values than minValues "
                             "%d", x->key, x->min_values);
            break;
        }
        default:
            break;
        }
        /* Karpenter's runtime validation (the CRD's pattern on values sits
         * on the list, where the API server ignores it). */
        for (size_t j = 0; j < x->n_values; j++)
            if (!klabel_value(x->values[j]))
                return kfail(c, TLR_E_PARSE, f, "value \"%.64s\" of key %.64s is not a label "
                             "value", x->values[j], x->key);
    }
    return TLR_OK;
}

static int taint_list(kctx *c, Tailor__V1__Taint **t, size_t n, const char *field)
{
    char f[KF];

    for (size_t i = 0; i < n; i++) {
        kpath(f, "%s[%zu]", field, i);
        if (!kqualified_name(t[i]->key))
            return kfail(c, TLR_E_PARSE, f, "key \"%.64s\" is not a qualified name", t[i]->key);
        /* The CRD gives value the key's pattern; Karpenter's runtime
         * validation holds it to a qualified name, lengths included. */
        if (t[i]->value[0] != '\0' && !kqualified_name(t[i]->value))
            return kfail(c, TLR_E_PARSE, f, "value \"%.64s\" is not a qualified name",
                         t[i]->value);
    }
    return TLR_OK;
}

int kkarp_taints(kctx *c, Tailor__V1__Taint **t, size_t nt, const char *tfield,
                 Tailor__V1__Taint **st, size_t nst, const char *stfield)
{
    int rc;

    if ((rc = taint_list(c, t, nt, tfield)) || (rc = taint_list(c, st, nst, stfield)))
        return rc;
    for (size_t i = 0; i < nt + nst; i++) {
        const Tailor__V1__Taint *a = i < nt ? t[i] : st[i - nt];
        for (size_t j = 0; j < i; j++) {
            const Tailor__V1__Taint *b = j < nt ? t[j] : st[j - nt];
            if (strcmp(a->key, b->key) == 0 && a->effect == b->effect) {
                char f[KF];
                kpath(f, "%s[%zu]", i < nt ? tfield : stfield, i < nt ? i : i - nt);
                return kfail(c, TLR_E_INVAL, f, "duplicate taint key/effect pair %.64s", a->key);
            }
        }
    }
    return TLR_OK;
}

int kkarp_nodeclassref(kctx *c, json_object *o, const char *path, const char *field,
                       const char **group, const char **kind, const char **name)
{
    json_object *ref;
    const char *part[3] = { "group", "kind", "name" };
    const char **out[3] = { group, kind, name };
    char f[KF];
    int rc;

    if ((rc = kobj(c, o, path, field, &ref)))
        return rc;
    if (ref == NULL)
        return kfail(c, TLR_E_INVAL, field, "is required");
    for (size_t i = 0; i < 3; i++) {
        kpath(f, "%s.%s", field, part[i]);
        if ((rc = kstr(c, ref, part[i], f, out[i])))
            return rc;
        if (*out[i] == NULL)
            return kfail(c, TLR_E_INVAL, f, "is required");
        if (**out[i] == '\0')
            return kfail(c, TLR_E_INVAL, f, "%s may not be empty", part[i]);
    }
    if (strchr(*group, '/') != NULL)
        return kfail(c, TLR_E_PARSE, field, "group \"%.64s\" is an API group, without a "
                     "version (\"karpenter.k8s.aws\", not \"karpenter.k8s.aws/v1\")", *group);
    return TLR_OK;
}

int kkarp_duration(kctx *c, json_object *o, const char *path, const char *field,
                   bool never_ok, int64_t *ms, protobuf_c_boolean *never, bool *present)
{
    int rc = kpattern(c, o, path, field,
                      never_ok ? "^(([0-9]+(s|m|h))+|Never)$" : "^([0-9]+(s|m|h))+$",
                      never_ok ? "is not a duration in h, m and s (e.g. 720h, 1h30m) or Never"
                               : "is not a duration in h, m and s (e.g. 48h, 1h30m)");

    if (rc != TLR_OK)
        return rc;
    return kduration(c, o, path, field, never_ok, ms, never, present);
}

int kkarp_tags(kctx *c, json_object *map, const char *field)
{
    if (map == NULL || !json_object_is_type(map, json_type_object))
        return TLR_OK;
    if (json_object_object_length(map) > 20)
        return kfail(c, TLR_E_INVAL, field, "at most 20 tags");
    json_object_object_foreach(map, k, v) {
        if (k[0] == '\0' || !json_object_is_type(v, json_type_string) ||
            json_object_get_string(v)[0] == '\0')
            return kfail(c, TLR_E_INVAL, field, "empty tag keys or values aren't supported");
    }
    return TLR_OK;
}
