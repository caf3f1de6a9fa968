/* kubesem.c - Kubernetes and Karpenter placement semantics (see
 * tlr_kubesem.h for the rules). */
#include "tlr_kubesem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_labels.h"

#define OP_IN       TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
#define OP_NOT_IN   TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN
#define OP_EXISTS   TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS
#define OP_DNE      TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST
#define OP_GT       TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT
#define OP_LT       TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT
#define OP_GTE      TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GTE
#define OP_LTE      TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LTE
#define EFF_NOSCHED TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE
#define EFF_NOEXEC  TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE
#define EFF_ANY     TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED
#define TOL_EXISTS  TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS

/* ---- label sets ---------------------------------------------------- */

void tlr_ks_labels_set(tlr_ks_labels *l, const char *key, const char *value)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i].key, key) == 0) {
            l->v[i].value = value;
            return;
        }
    }
    TLR_GROW(l->v, l->cap, l->n + 1);
    l->v[l->n].key = key;
    l->v[l->n].value = value;
    l->n++;
}

const char *tlr_ks_labels_get(const tlr_ks_labels *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].key, key) == 0)
            return l->v[i].value;
    return NULL;
}

void tlr_ks_labels_reset(tlr_ks_labels *l) { l->n = 0; }

void tlr_ks_labels_free(tlr_ks_labels *l)
{
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

const char *tlr_ks_label_get(Tailor__V1__Label *const *ls, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ls[i]->key, key) == 0)
            return ls[i]->value;
    return NULL;
}

const Tailor__V1__Condition *tlr_ks_condition(Tailor__V1__Condition *const *v, size_t n,
                                              const char *type)
{
    for (size_t i = 0; v && i < n; i++)
        if (v[i]->type && strcmp(v[i]->type, type) == 0)
            return v[i];
    return NULL;
}

/* ---- labels of new capacity ---------------------------------------- */

const char *tlr_ks_capacity_type_name(Tailor__V1__CapacityType ct)
{
    switch (ct) {
    case TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND: return "on-demand";
    case TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT: return "spot";
    case TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_RESERVED: return "reserved";
    default: return "";
    }
}

void tlr_ks_labels_set_single_in(tlr_ks_labels *l,
                                 Tailor__V1__NodeSelectorRequirement *const *rs, size_t n,
                                 bool only_absent)
{
    for (size_t i = 0; i < n; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = rs[i];
        if (r->operator_ != OP_IN || r->n_values != 1)
            continue;
        if (only_absent && tlr_ks_labels_get(l, r->key))
            continue;
        tlr_ks_labels_set(l, r->key, r->values[0]);
    }
}

void tlr_ks_labels_for_offering(tlr_ks_labels *l, const Tailor__V1__NodePool *pool,
                                const Tailor__V1__InstanceType *t,
                                const Tailor__V1__Offering *o)
{
    tlr_ks_labels_reset(l);
    if (pool) {
        for (size_t i = 0; i < pool->n_labels; i++)
            tlr_ks_labels_set(l, pool->labels[i]->key, pool->labels[i]->value);
        tlr_ks_labels_set_single_in(l, pool->requirements, pool->n_requirements, false);
        tlr_ks_labels_set(l, TLR_LABEL_NODEPOOL, pool->name);
    }
    if (t) {
        tlr_ks_labels_set_single_in(l, t->requirements, t->n_requirements, false);
        tlr_ks_labels_set(l, TLR_LABEL_INSTANCE_TYPE, t->name);
        if (t->arch && t->arch[0])
            tlr_ks_labels_set(l, TLR_LABEL_ARCH, t->arch);
        if (t->n_operating_systems == 1)
            tlr_ks_labels_set(l, TLR_LABEL_OS, t->operating_systems[0]);
    }
    if (o) {
        if (o->zone[0])
            tlr_ks_labels_set(l, TLR_LABEL_ZONE, o->zone);
        if (o->zone_id[0])
            tlr_ks_labels_set(l, TLR_LABEL_ZONE_ID, o->zone_id);
        const char *ct = tlr_ks_capacity_type_name(o->capacity_type);
        if (ct[0])
            tlr_ks_labels_set(l, TLR_LABEL_CAPACITY_TYPE, ct);
    }
}

/* ---- node requirements --------------------------------------------- */

static bool parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static bool in_values(const char *v, char *const *values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(values[i], v) == 0)
            return true;
    return false;
}

const char *tlr_ks_operator_name(int op)
{
    switch (op) {
    case OP_IN: return "In";
    case OP_NOT_IN: return "NotIn";
    case OP_EXISTS: return "Exists";
    case OP_DNE: return "DoesNotExist";
    case OP_GT: return "Gt";
    case OP_LT: return "Lt";
    case OP_GTE: return "Gte";
    case OP_LTE: return "Lte";
    default: return "?";
    }
}

bool tlr_ks_compare_holds(int op, int64_t a, int64_t b)
{
    switch (op) {
    case OP_GT: return a > b;
    case OP_LT: return a < b;
    case OP_GTE: return a >= b;
    case OP_LTE: return a <= b;
    default: return false;
    }
}

bool tlr_ks_requirement_holds(const Tailor__V1__NodeSelectorRequirement *r,
                              const tlr_ks_labels *l, bool lax)
{
    const char *v = tlr_ks_labels_get(l, r->key);
    if (!v && lax)
        return true;
    int64_t a, b;
    switch (r->operator_) {
    case OP_IN: return v && in_values(v, r->values, r->n_values);
    case OP_NOT_IN: return !v || !in_values(v, r->values, r->n_values);
    case OP_EXISTS: return v != NULL;
    case OP_DNE: return v == NULL;
    case OP_GT: case OP_LT: case OP_GTE: case OP_LTE:
        if (!v || r->n_values != 1 || !parse_i64(v, &a) || !parse_i64(r->values[0], &b))
            return false;
        return tlr_ks_compare_holds(r->operator_, a, b);
    default:
        return false;   /* an unknown operator never holds */
    }
}

bool tlr_ks_requirements_hold(Tailor__V1__NodeSelectorRequirement *const *rs, size_t n,
                              const tlr_ks_labels *l, bool lax)
{
    for (size_t i = 0; i < n; i++)
        if (!tlr_ks_requirement_holds(rs[i], l, lax))
            return false;
    return true;
}

bool tlr_ks_pod_node_affinity_holds(const Tailor__V1__Pod *p, const tlr_ks_labels *l,
                                    bool lax)
{
    for (size_t i = 0; i < p->n_node_selector; i++) {
        const char *v = tlr_ks_labels_get(l, p->node_selector[i]->key);
        if (!v && lax)
            continue;
        if (!v || strcmp(v, p->node_selector[i]->value) != 0)
            return false;
    }
    if (!tlr_ks_requirements_hold(p->volume_requirements, p->n_volume_requirements, l, lax))
        return false;
    if (p->n_required_node_affinity == 0)
        return true;
    for (size_t t = 0; t < p->n_required_node_affinity; t++) {
        const Tailor__V1__NodeSelectorTerm *term = p->required_node_affinity[t];
        /* An empty term matches nothing (Kubernetes); match_fields only
         * names metadata.name, which no new node has yet. */
        if (term->n_match_expressions == 0 && term->n_match_fields == 0)
            continue;
        if (term->n_match_fields && !lax)
            continue;
        if (tlr_ks_requirements_hold(term->match_expressions, term->n_match_expressions, l, lax))
            return true;
    }
    return false;
}

/* ---- taints and tolerations ---------------------------------------- */

static const char *str(const char *s) { return s ? s : ""; }

bool tlr_ks_toleration_matches(const Tailor__V1__Toleration *tol, const Tailor__V1__Taint *t)
{
    if (tol->effect != EFF_ANY && tol->effect != t->effect)
        return false;
    if (tol->operator_ == TOL_EXISTS)
        return str(tol->key)[0] == '\0' || strcmp(str(tol->key), str(t->key)) == 0;
    return strcmp(str(tol->key), str(t->key)) == 0 &&
           strcmp(str(tol->value), str(t->value)) == 0;
}

bool tlr_ks_pod_tolerates(const Tailor__V1__Pod *p, Tailor__V1__Taint *const *taints,
                          size_t n_taints)
{
    for (size_t i = 0; i < n_taints; i++) {
        const Tailor__V1__Taint *t = taints[i];
        if (t->effect != EFF_NOSCHED && t->effect != EFF_NOEXEC)
            continue;
        bool ok = false;
        for (size_t j = 0; j < p->n_tolerations && !ok; j++)
            ok = tlr_ks_toleration_matches(p->tolerations[j], t);
        if (!ok)
            return false;
    }
    return true;
}

/* ---- label selectors ----------------------------------------------- */

bool tlr_ks_selector_matches(const Tailor__V1__LabelSelector *s,
                             Tailor__V1__Label *const *labels, size_t n_labels)
{
    if (!s)
        return false;
    for (size_t i = 0; i < s->n_match_labels; i++) {
        const char *v = tlr_ks_label_get(labels, n_labels, s->match_labels[i]->key);
        if (!v || strcmp(v, s->match_labels[i]->value) != 0)
            return false;
    }
    for (size_t i = 0; i < s->n_match_expressions; i++) {
        const Tailor__V1__LabelSelectorRequirement *r = s->match_expressions[i];
        const char *v = tlr_ks_label_get(labels, n_labels, r->key);
        bool ok;
        switch (r->operator_) {
        case OP_IN: ok = v && in_values(v, r->values, r->n_values); break;
        case OP_NOT_IN: ok = !v || !in_values(v, r->values, r->n_values); break;
        case OP_EXISTS: ok = v != NULL; break;
        case OP_DNE: ok = v == NULL; break;
        default: ok = false; break;
        }
        if (!ok)
            return false;
    }
    return true;
}

/* ---- label aliases ------------------------------------------------- */

const char *tlr_ks_normalized_key(const char *key)
{
    static const struct { const char *alias, *key; } norm[] = {
        { TLR_LABEL_BETA_ZONE, TLR_LABEL_ZONE },
        { TLR_LABEL_BETA_ARCH, TLR_LABEL_ARCH },
        { TLR_LABEL_BETA_OS, TLR_LABEL_OS },
        { TLR_LABEL_BETA_INSTANCE_TYPE, TLR_LABEL_INSTANCE_TYPE },
        { TLR_LABEL_BETA_REGION, TLR_LABEL_REGION },
    };
    for (size_t i = 0; key && i < sizeof(norm) / sizeof(norm[0]); i++)
        if (strcmp(key, norm[i].alias) == 0)
            return norm[i].key;
    return key;
}

/* ---- restricted labels --------------------------------------------- */

/* The karpenter.k8s.aws labels the CEL rules let a pool use. */
static const char *const aws_labels[] = {
    TLR_LABEL_INSTANCE_TENANCY,
    TLR_LABEL_CAPACITY_RESERVATION_TYPE,
    TLR_LABEL_CAPACITY_RESERVATION_ID,
    TLR_LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
    TLR_LABEL_NODECLASS,
    TLR_LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED,
    TLR_LABEL_NITRO_SANDBOX,
    TLR_LABEL_INSTANCE_CATEGORY,
    TLR_LABEL_INSTANCE_HYPERVISOR,
    TLR_LABEL_INSTANCE_FAMILY,
    TLR_LABEL_INSTANCE_GENERATION,
    TLR_LABEL_INSTANCE_LOCAL_NVME,
    TLR_LABEL_INSTANCE_SIZE,
    TLR_LABEL_INSTANCE_CPU,
    TLR_LABEL_INSTANCE_CPU_MANUFACTURER,
    TLR_LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
    TLR_LABEL_INSTANCE_MEMORY,
    TLR_LABEL_INSTANCE_EBS_BANDWIDTH,
    TLR_LABEL_INSTANCE_NETWORK_BANDWIDTH,
    TLR_LABEL_INSTANCE_GPU_NAME,
    TLR_LABEL_INSTANCE_GPU_MANUFACTURER,
    TLR_LABEL_INSTANCE_GPU_COUNT,
    TLR_LABEL_INSTANCE_GPU_MEMORY,
    TLR_LABEL_INSTANCE_ACCELERATOR_NAME,
    TLR_LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
    TLR_LABEL_INSTANCE_ACCELERATOR_COUNT,
    TLR_LABEL_INSTANCE_CAPABILITY_FLEX,
    TLR_LABEL_PLACEMENT_GROUP_ID,
    TLR_LABEL_PLACEMENT_GROUP_PARTITION,
};

/* CEL's x.find("^([^/]+)").endsWith(domain): the part before the first
 * '/' (the whole key when it has none) ends with domain.  Note: no dot is
 * required, so "notkarpenter.sh/x" is restricted too, as in Karpenter. */
static bool domain_ends_with(const char *key, const char *domain)
{
    size_t kl = strcspn(key, "/"), dl = strlen(domain);

    return kl >= dl && strncmp(key + kl - dl, domain, dl) == 0;
}

const char *tlr_ks_restricted_label(const char *key, bool nodepool_key_ok)
{
    if (!nodepool_key_ok && strcmp(key, TLR_LABEL_NODEPOOL) == 0)
        return "label \"" TLR_LABEL_NODEPOOL "\" is restricted";
    if (strcmp(key, TLR_LABEL_HOSTNAME) == 0)
        return "label \"" TLR_LABEL_HOSTNAME "\" is restricted";
    if (domain_ends_with(key, TLR_DOMAIN_KARPENTER) && strcmp(key, TLR_LABEL_CAPACITY_TYPE) != 0 &&
        strcmp(key, TLR_LABEL_NODEPOOL) != 0)
        return "label domain \"" TLR_DOMAIN_KARPENTER "\" is restricted";
    if (domain_ends_with(key, TLR_DOMAIN_KARPENTER_AWS)) {
        for (size_t i = 0; i < sizeof(aws_labels) / sizeof(aws_labels[0]); i++)
            if (strcmp(key, aws_labels[i]) == 0)
                return NULL;
        return "label domain \"" TLR_DOMAIN_KARPENTER_AWS "\" is restricted";
    }
    return NULL;
}

/* ---- pods Karpenter's provisioner ignores --------------------------- */

#define OP(x) TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_##x

/* Karpenter's ValidateRequirement, as far as a pod the API server admitted
 * can break it: the operator, a restricted key, In without values, a
 * comparison without one non-negative integer. */
static bool req_invalid(const Tailor__V1__NodeSelectorRequirement *r, char *buf, size_t n)
{
    const char *key = r->key ? r->key : "";
    const char *why = tlr_ks_restricted_label(key, true);
    int64_t v;

    if (r->operator_ < OP(IN) || r->operator_ > OP(LTE))
        snprintf(buf, n, "key %s has an unsupported operator", key);
    else if (why)
        snprintf(buf, n, "key %s: %s", key, why);
    else if (r->operator_ == OP(IN) && r->n_values == 0)
        snprintf(buf, n, "key %s with operator In must have a value defined", key);
    else if (r->operator_ >= OP(GT) &&
             (r->n_values != 1 || !parse_i64(r->values[0], &v) || v < 0))
        snprintf(buf, n, "key %s with operator %s must have a single positive integer value", key,
                 tlr_ks_operator_name(r->operator_));
    else
        return false;
    return true;
}

static bool term_avoids_karpenter(const Tailor__V1__NodeSelectorTerm *t)
{
    for (size_t i = 0; t && i < t->n_match_expressions; i++)
        if (t->match_expressions[i]->operator_ == OP(DOES_NOT_EXIST) &&
            strcmp(t->match_expressions[i]->key ? t->match_expressions[i]->key : "",
                   TLR_LABEL_NODEPOOL) == 0)
            return true;
    return false;
}

const char *tlr_ks_pod_ignored(const Tailor__V1__Pod *p, char *buf, size_t n, bool *quiet)
{
    *quiet = false;
    if (!p || p->is_daemonset)
        return NULL;
    /* The requirements Karpenter schedules with: the nodeSelector, the
     * heaviest preferred term (the first of equal weight) and the first
     * required term. */
    const Tailor__V1__PreferredSchedulingTerm *heavy = NULL;
    for (size_t i = 0; i < p->n_preferred_node_affinity; i++)
        if (!heavy || p->preferred_node_affinity[i]->weight > heavy->weight)
            heavy = p->preferred_node_affinity[i];
    if ((heavy && term_avoids_karpenter(heavy->preference)) ||
        (p->n_required_node_affinity && term_avoids_karpenter(p->required_node_affinity[0]))) {
        *quiet = true;
        snprintf(buf, n, "ignoring pod, it requires %s DoesNotExist: it avoids Karpenter's nodes",
                 TLR_LABEL_NODEPOOL);
        return buf;
    }
    char why[384];
    for (size_t i = 0; i < p->n_node_selector; i++) {
        Tailor__V1__NodeSelectorRequirement r = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT;
        char *v = p->node_selector[i]->value;
        r.key = p->node_selector[i]->key;
        r.operator_ = OP(IN);
        r.values = &v;
        r.n_values = 1;
        if (req_invalid(&r, why, sizeof(why))) {
            snprintf(buf, n, "ignoring pod, nodeSelector: %s", why);
            return buf;
        }
    }
    for (size_t i = 0; i < p->n_required_node_affinity; i++) {
        const Tailor__V1__NodeSelectorTerm *t = p->required_node_affinity[i];
        if (t->n_match_fields) {
            snprintf(buf, n, "ignoring pod, node selector term with matchFields is not supported");
            return buf;
        }
        for (size_t j = 0; j < t->n_match_expressions; j++)
            if (req_invalid(t->match_expressions[j], why, sizeof(why))) {
                snprintf(buf, n, "ignoring pod, required node affinity: %s", why);
                return buf;
            }
    }
    return NULL;
}

/* ---- provider IDs ------------------------------------------------- */

#define AWS_SCHEME "aws://"

/* ---- object names ---------------------------------------------------- */

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n), of any length: a label's
 * shape, the part of a subdomain between dots. */
static bool dns1123_part(const char *s, size_t n)
{
    if (n == 0 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

bool tlr_ks_dns1123_label(const char *s, size_t n)
{
    return n <= 63 && dns1123_part(s, n);
}

/* As apimachinery's IsDNS1123Subdomain: only the whole is limited (253);
 * a part between dots may be longer than a label's 63. */
bool tlr_ks_dns1123_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    for (const char *p = s;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (!dns1123_part(p, len))
            return false;
        if (!dot)
            return true;
        p = dot + 1;
    }
}

const char *tlr_provider_id_instance(const char *provider_id)
{
    if (!provider_id || strncmp(provider_id, AWS_SCHEME, sizeof(AWS_SCHEME) - 1) != 0)
        return NULL;
    const char *id = strrchr(provider_id, '/') + 1;   /* the scheme has one */
    return strncmp(id, "i-", 2) == 0 && id[2] ? id : NULL;
}

char *tlr_provider_id_format(char *buf, size_t len, const char *zone, const char *instance)
{
    snprintf(buf, len, AWS_SCHEME "/%s/%s", zone ? zone : "", instance ? instance : "");
    return buf;
}

bool tlr_ks_pod_spread_hard(const Tailor__V1__Pod *p)
{
    for (size_t i = 0; p && i < p->n_topology_spread_constraints; i++)
        if (p->topology_spread_constraints[i]->when_unsatisfiable ==
            TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE)
            return true;
    return false;
}
