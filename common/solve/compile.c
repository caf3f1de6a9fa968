/* compile.c - turn a SolveRequest into the engine's compact model.
 *
 * Everything here runs once per solve and is linear in the size of the
 * request (times the number of distinct pod classes for the compatibility
 * tables).  The model lives in one arena that the caller frees at the end
 * of the pass; pointers into the request are borrowed for the same span.
 *
 * Label semantics (Karpenter's; docs/solver.md, "The model"): a node offered by
 * a NodePool carries the labels of its instance type, the NodePool's
 * template labels, one value of each NodePool requirement key, and the zone
 * and capacity type of the offering it is bought from.  A pod requirement
 * on a key nothing defines fails In/Exists/Gt/Lt and passes NotIn and
 * DoesNotExist.  Zone, zone id and capacity type are offering keys: they
 * are answered by a place mask rather than by the type's labels.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve_internal.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

#define K_ZONE    TLR_LABEL_ZONE
#define K_ZONE_ID TLR_LABEL_ZONE_ID
#define K_CT      TLR_LABEL_CAPACITY_TYPE
#define K_HOST    TLR_LABEL_HOSTNAME
#define K_TYPE    TLR_LABEL_INSTANCE_TYPE
#define K_POOL    TLR_LABEL_NODEPOOL
#define K_ARCH    TLR_LABEL_ARCH
#define K_OS      TLR_LABEL_OS

static const char *const ct_names[4] = { "", "on-demand", "spot", "reserved" };

/* ---- strings ---------------------------------------------------------- */

sv_id sv_intern(sv_model *m, const char *s)
{
    if (!s || !*s)
        return 0;
    if (m->nstrs * 2 >= m->hcap) {
        int ncap = m->hcap ? m->hcap * 2 : 1024;
        uint32_t *nt = tlr_arena_calloc(m->ar, (size_t)ncap, sizeof(*nt));
        for (int i = 1; i < m->nstrs; i++) {
            uint32_t h = tlr_fnv1a32_str(TLR_FNV32_BASIS, m->strs[i]) & (uint32_t)(ncap - 1);
            while (nt[h])
                h = (h + 1) & (uint32_t)(ncap - 1);
            nt[h] = (uint32_t)i;
        }
        m->htab = nt;
        m->hcap = ncap;
    }
    uint32_t h = tlr_fnv1a32_str(TLR_FNV32_BASIS, s) & (uint32_t)(m->hcap - 1);
    while (m->htab[h]) {
        if (strcmp(m->strs[m->htab[h]], s) == 0)
            return m->htab[h];
        h = (h + 1) & (uint32_t)(m->hcap - 1);
    }
    if (m->nstrs == m->cstrs) {
        int nc = m->cstrs * 2;
        char **ns = tlr_arena_alloc(m->ar, (size_t)nc * sizeof(*ns));
        memcpy(ns, m->strs, (size_t)m->nstrs * sizeof(*ns));
        m->strs = ns;
        m->cstrs = nc;
    }
    m->strs[m->nstrs] = tlr_arena_strdup(m->ar, s);
    m->htab[h] = (uint32_t)m->nstrs;
    return (sv_id)m->nstrs++;
}

const char *sv_str(const sv_model *m, sv_id id)
{
    return id && (int)id < m->nstrs ? m->strs[id] : "";
}

char *sv_arena_printf(tlr_arena *ar, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    return tlr_arena_strdup(ar, tmp);
}

/* ---- label domains ---------------------------------------------------- */

static int dent_cmp(const void *a, const void *b)
{
    const sv_dent *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

const sv_dent *sv_dom_get(const sv_dom *d, sv_id key)
{
    if (!d)
        return NULL;
    int lo = 0, hi = d->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (d->e[mid].key == key)
            return &d->e[mid];
        if (d->e[mid].key < key)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* A domain under construction: later adds of a key already present are
 * ignored (first definition wins). */
typedef struct dom_b {
    sv_dent *e;
    int n, cap;
} dom_b;

static void domb_add(sv_model *m, dom_b *b, sv_id key, const sv_id *vals, int nvals, bool any)
{
    if (!key)
        return;
    for (int i = 0; i < b->n; i++)
        if (b->e[i].key == key)
            return;
    if (b->n == b->cap) {
        int nc = b->cap ? b->cap * 2 : 16;
        sv_dent *ne = tlr_arena_alloc(m->ar, (size_t)nc * sizeof(*ne));
        if (b->n)
            memcpy(ne, b->e, (size_t)b->n * sizeof(*ne));
        b->e = ne;
        b->cap = nc;
    }
    sv_dent *d = &b->e[b->n++];
    d->key = key;
    d->any = any;
    d->nvals = nvals;
    d->vals = NULL;
    if (nvals) {
        d->vals = tlr_arena_alloc(m->ar, (size_t)nvals * sizeof(sv_id));
        memcpy(d->vals, vals, (size_t)nvals * sizeof(sv_id));
    }
}

static void domb_add1(sv_model *m, dom_b *b, const char *k, const char *v)
{
    sv_id vid = sv_intern(m, v);
    domb_add(m, b, sv_intern(m, k), &vid, 1, false);
}

static sv_dom domb_done(dom_b *b)
{
    if (b->n > 1)
        qsort(b->e, (size_t)b->n, sizeof(*b->e), dent_cmp);
    sv_dom d = { b->e, b->n };
    return d;
}

static sv_dom dom_from_labels(sv_model *m, Tailor__V1__Label *const *l, size_t n, dom_b *b)
{
    for (size_t i = 0; i < n; i++)
        if (l[i] && l[i]->key)
            domb_add1(m, b, l[i]->key, l[i]->value);
    return domb_done(b);
}

/* ---- requirements ----------------------------------------------------- */

static bool parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return false;
    *out = v;
    return true;
}

static void req_compile(sv_model *m, const Tailor__V1__NodeSelectorRequirement *src, sv_req *r)
{
    memset(r, 0, sizeof(*r));
    r->src = src;
    r->key = sv_intern(m, src->key);
    r->op = src->operator_;
    r->min_values = src->min_values;
    r->nvals = (int)src->n_values;
    r->vals = r->nvals ? tlr_arena_alloc(m->ar, (size_t)r->nvals * sizeof(sv_id)) : NULL;
    for (int i = 0; i < r->nvals; i++)
        r->vals[i] = sv_intern(m, src->values[i]);
    if (r->nvals >= 1)
        r->num_ok = parse_i64(src->values[0], &r->num);
    r->kind = r->key == m->k_zone ? SV_KEY_ZONE : r->key == m->k_zone_id ? SV_KEY_ZONE_ID
            : r->key == m->k_ct ? SV_KEY_CT : SV_KEY_LABEL;
}

/* "key In [value]" for one label (a nodeSelector entry, a template label),
 * compiled; r->src is NULL (the source lives only for the call). */
static void req_of_label(sv_model *m, const char *key, const char *value, sv_req *r)
{
    Tailor__V1__NodeSelectorRequirement nr = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT;
    char *v = (char *)value;
    nr.key = (char *)key;
    nr.operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    nr.n_values = 1;
    nr.values = &v;
    req_compile(m, &nr, r);
    r->src = NULL;
}

static bool in_vals(const sv_id *v, int n, sv_id x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

static bool num_ok(const sv_req *r, sv_id val, const sv_model *m)
{
    int64_t x;
    if (!r->num_ok || !parse_i64(sv_str(m, val), &x))
        return false;
    return tlr_ks_compare_holds(r->op, x, r->num);
}

bool sv_req_ok(const sv_model *m, const sv_req *r, const sv_dom *d1, const sv_dom *d2)
{
    const sv_dent *e = sv_dom_get(d1, r->key);
    if (!e)
        e = sv_dom_get(d2, r->key);
    switch (r->op) {
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN:
        if (!e)
            return false;
        if (e->any)
            return r->nvals > 0;
        for (int i = 0; i < e->nvals; i++)
            if (in_vals(r->vals, r->nvals, e->vals[i]))
                return true;
        return false;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN:
        if (!e || e->any)
            return true;
        for (int i = 0; i < e->nvals; i++)
            if (!in_vals(r->vals, r->nvals, e->vals[i]))
                return true;
        return false;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS:
        return e != NULL;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST:
        return e == NULL;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT:
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT:
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GTE:
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LTE:
        if (!e)
            return false;
        if (e->any)
            return r->num_ok;
        for (int i = 0; i < e->nvals; i++)
            if (num_ok(r, e->vals[i], m))
                return true;
        return false;
    default:
        return false;
    }
}

/* The places (zone x capacity type) an offering requirement allows. */
static sv_pmask req_pmask(const sv_model *m, const sv_req *r)
{
    sv_pmask pm = { { 0, 0 } };
    for (int z = 0; z < m->nzones; z++)
        for (int ct = 1; ct < 4; ct++) {
            sv_id v = r->kind == SV_KEY_ZONE ? m->zones[z] : r->kind == SV_KEY_ZONE_ID
                    ? m->zone_ids[z] : sv_intern((sv_model *)m, ct_names[ct]);
            sv_dent e = { r->key, false, 1, &v };
            sv_dom d = { &e, 1 };
            if (v && sv_req_ok(m, r, &d, NULL))
                sv_pmask_set(&pm, SV_PLACE(z, ct));
        }
    return pm;
}

static sv_pmask pmask_all(const sv_model *m)
{
    sv_pmask pm = { { 0, 0 } };
    for (int z = 0; z < m->nzones; z++)
        for (int ct = 1; ct < 4; ct++)
            sv_pmask_set(&pm, SV_PLACE(z, ct));
    return pm;
}

static int zone_index(sv_model *m, const char *zone, const char *zone_id)
{
    sv_id z = sv_intern(m, zone);
    if (!z)
        return SV_NONE;
    for (int i = 0; i < m->nzones; i++)
        if (m->zones[i] == z)
            return i;
    if (m->nzones == SV_MAXZONE)
        return SV_NONE;
    m->zones[m->nzones] = z;
    m->zone_ids[m->nzones] = sv_intern(m, zone_id);
    return m->nzones++;
}

/* ---- taints and selectors --------------------------------------------- */

bool sv_tolerates(const Tailor__V1__Toleration *const *tols, size_t ntols,
                  const Tailor__V1__Taint *t)
{
    for (size_t i = 0; i < ntols; i++)
        if (tlr_ks_toleration_matches(tols[i], t))
            return true;
    return false;
}

bool sv_selector_match(const sv_model *m, const Tailor__V1__LabelSelector *sel,
                       const sv_reqset *extra, const sv_dom *labels)
{
    if (!sel)
        return false;
    for (size_t i = 0; i < sel->n_match_labels; i++) {
        const sv_dent *e = sv_dom_get(labels, sv_intern((sv_model *)m, sel->match_labels[i]->key));
        if (!e || e->nvals != 1 ||
            strcmp(sv_str(m, e->vals[0]), sel->match_labels[i]->value ? sel->match_labels[i]->value : ""))
            return false;
    }
    for (size_t i = 0; i < sel->n_match_expressions; i++) {
        const Tailor__V1__LabelSelectorRequirement *x = sel->match_expressions[i];
        Tailor__V1__NodeSelectorRequirement nr = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT;
        nr.key = x->key;
        nr.operator_ = x->operator_;
        nr.n_values = x->n_values;
        nr.values = x->values;
        sv_req r;
        req_compile((sv_model *)m, &nr, &r);
        if (!sv_req_ok(m, &r, labels, NULL))
            return false;
    }
    for (int i = 0; extra && i < extra->n; i++)
        if (!sv_req_ok(m, &extra->r[i], labels, NULL))
            return false;
    return true;
}

bool sv_group_ns_ok(const sv_group *g, sv_id ns)
{
    if (g->all_ns)
        return true;
    for (int i = 0; i < g->nns; i++)
        if (g->ns[i] == ns)
            return true;
    return false;
}

/* ---- resources -------------------------------------------------------- */

static int dim_of(sv_model *m, const char *name, bool add)
{
    for (int d = 4; d < m->ndim; d++)
        if (strcmp(m->dim_name[d], name) == 0)
            return d;
    if (!add || m->ndim == SV_NDIM)
        return SV_NONE;
    m->dim_name[m->ndim] = tlr_arena_strdup(m->ar, name);
    return m->ndim++;
}

/* a + b and a - b, held at INT64_MAX / INT64_MIN instead of overflowing:
 * quantities come from the request, and a caller can send any int64. */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX - 1 : INT64_MIN;   /* INT64_MAX means "no limit" */
    return r;
}

/* Convert rl; *unknown gets the first extended name with no dimension. */
static void res_from(sv_model *m, const Tailor__V1__ResourceList *rl, sv_res *out,
                     bool add, const char **unknown)
{
    memset(out, 0, sizeof(*out));
    if (!rl)
        return;
    out->v[SV_DIM_CPU] = rl->cpu_millis;
    out->v[SV_DIM_MEM] = rl->memory_bytes;
    out->v[SV_DIM_PODS] = rl->pods;
    out->v[SV_DIM_EPH] = rl->ephemeral_storage_bytes;
    for (size_t i = 0; i < rl->n_extended; i++) {
        const Tailor__V1__ExtendedResource *x = rl->extended[i];
        if (!x || !x->name || x->value == 0)
            continue;
        int d = dim_of(m, x->name, add);
        if (d == SV_NONE) {
            if (unknown && !*unknown)
                *unknown = x->name;
            continue;
        }
        out->v[d] = sat_add(out->v[d], x->value);
    }
}

/* The effective request of a pod: Pod.requests when set, otherwise
 * computed from its containers as kube-scheduler does (pod.proto). */
static void pod_request(sv_model *m, const Tailor__V1__Pod *p, sv_res *out, const char **unknown)
{
    res_from(m, p->requests, out, true, unknown);
    bool any = false;
    for (int d = 0; d < m->ndim; d++)
        if (d != SV_DIM_PODS && out->v[d])
            any = true;
    if (!any && p->n_containers) {
        sv_res reg = { { 0 } }, side = { { 0 } }, init = { { 0 } }, r;
        for (size_t i = 0; i < p->n_containers; i++) {
            const Tailor__V1__ContainerRequests *c = p->containers[i];
            res_from(m, c->requests, &r, true, unknown);
            for (int d = 0; d < SV_NDIM; d++) {
                if (c->kind == TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_INIT) {
                    int64_t v = sat_add(r.v[d], side.v[d]);
                    if (v > init.v[d])
                        init.v[d] = v;
                } else if (c->kind == TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_SIDECAR) {
                    side.v[d] = sat_add(side.v[d], r.v[d]);
                    if (side.v[d] > init.v[d])
                        init.v[d] = side.v[d];
                } else {
                    reg.v[d] = sat_add(reg.v[d], r.v[d]);
                }
            }
        }
        sv_res oh;
        res_from(m, p->overhead, &oh, true, unknown);
        for (int d = 0; d < SV_NDIM; d++) {
            int64_t a = sat_add(reg.v[d], side.v[d]);
            out->v[d] = sat_add(a > init.v[d] ? a : init.v[d], oh.v[d]);
        }
    }
    out->v[SV_DIM_PODS] = 1;
}

/* ---- instance types --------------------------------------------------- */

static int offer_cmp(const void *a, const void *b)
{
    const sv_offer *x = a, *y = b;
    return x->price < y->price ? -1 : x->price > y->price ? 1 : x->place - y->place;
}

static bool ice_blocked(const sv_model *m, const Tailor__V1__OfferingUnavailable *const *ice,
                        size_t nice, const char *type, const char *zone, int ct)
{
    for (size_t i = 0; i < nice; i++) {
        const Tailor__V1__OfferingUnavailable *u = ice[i];
        if (u->until_unix_ms <= m->now_ms)
            continue;
        if ((int)u->capacity_type == ct && strcmp(u->instance_type ? u->instance_type : "", type) == 0 &&
            strcmp(u->zone ? u->zone : "", zone) == 0)
            return true;
    }
    return false;
}

static void type_build(sv_model *m, const Tailor__V1__InstanceType *it, sv_type *t,
                       const Tailor__V1__OfferingUnavailable *const *ice, size_t nice)
{
    memset(t, 0, sizeof(*t));
    t->it = it;
    t->name = sv_intern(m, it->name);
    res_from(m, it->allocatable, &t->alloc, true, NULL);
    res_from(m, it->capacity, &t->cap, true, NULL);
    if (!t->alloc.v[SV_DIM_CPU] && !t->alloc.v[SV_DIM_MEM])
        t->alloc = t->cap;
    if (!t->alloc.v[SV_DIM_PODS])
        t->alloc.v[SV_DIM_PODS] = it->max_pods > 0 ? it->max_pods : 110;
    if (!t->cap.v[SV_DIM_CPU])
        t->cap = t->alloc;
    dom_b b = { 0 };
    for (size_t i = 0; i < it->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = it->requirements[i];
        if (r->operator_ != TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN || !r->n_values)
            continue;
        sv_id vals[16];
        int n = 0;
        for (size_t j = 0; j < r->n_values && n < 16; j++)
            vals[n++] = sv_intern(m, r->values[j]);
        domb_add(m, &b, sv_intern(m, r->key), vals, n, false);
    }
    domb_add1(m, &b, K_TYPE, it->name);
    if (it->arch && *it->arch)
        domb_add1(m, &b, K_ARCH, it->arch);
    domb_add1(m, &b, K_OS, it->n_operating_systems ? it->operating_systems[0] : "linux");
    t->labels = domb_done(&b);
    t->offers = tlr_arena_alloc(m->ar, (it->n_offerings + 1) * sizeof(sv_offer));
    for (size_t i = 0; i < it->n_offerings; i++) {
        const Tailor__V1__Offering *o = it->offerings[i];
        int ct = (int)o->capacity_type;
        if (!o->available || ct < 1 || ct > 3 || !(o->price_per_hour >= 0))
            continue;
        int z = zone_index(m, o->zone, o->zone_id);
        if (z == SV_NONE || ice_blocked(m, ice, nice, it->name ? it->name : "", o->zone, ct))
            continue;
        t->offers[t->noffers].place = SV_PLACE(z, ct);
        t->offers[t->noffers++].price = o->price_per_hour;
    }
    qsort(t->offers, (size_t)t->noffers, sizeof(sv_offer), offer_cmp);
}

double sv_type_price(const sv_model *m, int t, sv_pmask pm, int *place)
{
    const sv_type *ty = &m->types[t];
    for (int i = 0; i < ty->noffers; i++)
        if (sv_pmask_has(pm, ty->offers[i].place)) {
            if (place)
                *place = ty->offers[i].place;
            return ty->offers[i].price;
        }
    return -1;
}

int sv_pool_type_fits(const sv_model *m, const sv_pool *p, int pt, const sv_res *used)
{
    const sv_type *t = &m->types[p->types[pt]];
    const sv_res *ds = &p->ds[pt];
    for (int d = 0; d < m->ndim; d++)
        if (used->v[d] && sat_add(used->v[d], ds->v[d]) > t->alloc.v[d])
            return 0;
    return 1;
}

/* ---- NodePools -------------------------------------------------------- */

static bool taint_blocks(const Tailor__V1__Taint *t, bool prefer)
{
    return t->effect == TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE ||
           t->effect == TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE ||
           (prefer && t->effect == TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE);
}

static const char *effect_name(int e)
{
    switch (e) {
    case TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE: return "NoSchedule";
    case TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE: return "PreferNoSchedule";
    case TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE: return "NoExecute";
    default: return "?";
    }
}

static int pool_cmp(const void *a, const void *b)
{
    const sv_pool *x = a, *y = b;
    if (x->np->weight != y->np->weight)
        return y->np->weight - x->np->weight;
    return strcmp(x->np->name ? x->np->name : "", y->np->name ? y->np->name : "");
}

static const Tailor__V1__Catalog *pool_catalog(const Tailor__V1__NodePool *np,
                                               const Tailor__V1__CatalogRef *const *cats,
                                               size_t ncats, int *ci)
{
    const char *cls = np->node_class_ref && np->node_class_ref->name ? np->node_class_ref->name : "";
    for (size_t i = 0; i < ncats; i++)
        for (size_t j = 0; j < cats[i]->n_node_classes; j++)
            if (strcmp(cats[i]->node_classes[j], cls) == 0) {
                *ci = (int)i;
                return cats[i]->catalog;
            }
    /* A lone catalog that names no NodeClass serves every pool (the
     * offline dry-run and tests send one catalog). */
    if (ncats == 1 && cats[0]->n_node_classes == 0) {
        *ci = 0;
        return cats[0]->catalog;
    }
    return NULL;
}

/* Does DaemonSet pod template ds land on a node of pool p, type t? */
static bool ds_lands(sv_model *m, const Tailor__V1__Pod *ds, const sv_pool *p, const sv_type *t)
{
    for (size_t i = 0; i < p->np->n_taints; i++)
        if (taint_blocks(p->np->taints[i], false) &&
            !sv_tolerates((const Tailor__V1__Toleration *const *)ds->tolerations, ds->n_tolerations,
                          p->np->taints[i]))
            return false;
    for (size_t i = 0; i < ds->n_node_selector; i++) {
        sv_req r;
        req_of_label(m, ds->node_selector[i]->key, ds->node_selector[i]->value, &r);
        if (r.kind == SV_KEY_LABEL && !sv_req_ok(m, &r, &t->labels, &p->dom))
            return false;
    }
    if (ds->n_required_node_affinity) {
        bool any = false;
        for (size_t i = 0; i < ds->n_required_node_affinity && !any; i++) {
            const Tailor__V1__NodeSelectorTerm *term = ds->required_node_affinity[i];
            bool ok = true;
            for (size_t j = 0; j < term->n_match_expressions && ok; j++) {
                sv_req r;
                req_compile(m, term->match_expressions[j], &r);
                if (r.kind == SV_KEY_LABEL)
                    ok = sv_req_ok(m, &r, &t->labels, &p->dom);
                else
                    ok = sv_pmask_any(sv_pmask_and(req_pmask(m, &r), p->pmask));
            }
            any = ok;
        }
        if (!any)
            return false;
    }
    return true;
}

static const Tailor__V1__Condition *pool_cond(const Tailor__V1__NodePool *np, const char *type)
{
    return np->status ? tlr_ks_condition(np->status->conditions, np->status->n_conditions, type)
                      : NULL;
}

/* The pool's Ready condition when it is False, else NULL: Karpenter leaves
 * such a pool out of scheduling.  A pool whose status says nothing yet is
 * used (the disruptor writes Ready a pass after the pool appears).  When
 * Ready is False only because of its NodeClass (ValidationSucceeded True),
 * the request's catalogs already say it live: a class that is not Ready
 * has no catalog here (docs/launcher.md), one that just became Ready has
 * one before the pool's status catches up. */
static const Tailor__V1__Condition *pool_not_ready(const Tailor__V1__NodePool *np)
{
    const Tailor__V1__Condition *r = pool_cond(np, "Ready");
    if (!r || r->status != TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE)
        return NULL;
    const Tailor__V1__Condition *v = pool_cond(np, "ValidationSucceeded");
    if (v && v->status == TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE &&
        pool_cond(np, "NodeClassReady"))
        return NULL;
    return r;
}

/* The values of pool p's multi-valued type key k (bit 0: no label) that
 * every requirement of rs on the key allows; all of them when rs has none. */
static uint64_t tmv_allowed(const sv_model *m, const sv_pool *p, int k, const sv_reqset *rs)
{
    uint64_t mk = 0;
    for (int v = 0; v <= p->tmv_nvals[k]; v++) {
        sv_dent one = { p->tmv_key[k], false, 1, v ? &p->tmv_vals[k][v - 1] : NULL };
        sv_dom d = { &one, v ? 1 : 0 };
        bool ok = true;
        for (int i = 0; i < rs->n && ok; i++)
            if (rs->r[i].key == p->tmv_key[k])
                ok = sv_req_ok(m, &rs->r[i], &d, NULL);
        if (ok)
            mk |= (uint64_t)1 << v;
    }
    return mk;
}

/* Find the label keys on which some type of pool p carries several values
 * (sv_pool.tmv_*).  Offering keys, keys the pool itself sets, keys past
 * SV_MAXTMV and keys with more than 63 values across the pool are left
 * out: a type then matches each pod on its own, as before. */
static void tmv_build(sv_model *m, sv_pool *p)
{
    bool over[SV_MAXTMV] = { false };
    for (int pt = 0; pt < p->ntypes; pt++) {
        const sv_dom *d = &m->types[p->types[pt]].labels;
        for (int i = 0; i < d->n; i++) {
            const sv_dent *e = &d->e[i];
            if (e->nvals < 2 || e->key == m->k_zone || e->key == m->k_zone_id || e->key == m->k_ct ||
                e->key == m->k_type || e->key == m->k_pool || sv_dom_get(&p->dom, e->key))
                continue;
            int k = 0;
            while (k < p->ntmv && p->tmv_key[k] != e->key)
                k++;
            if (k == p->ntmv) {
                if (k == SV_MAXTMV)
                    continue;
                p->tmv_key[k] = e->key;
                p->tmv_vals[k] = tlr_arena_alloc(m->ar, 63 * sizeof(sv_id));
                p->ntmv++;
            }
            for (int j = 0; j < e->nvals && !over[k]; j++) {
                int v = 0;
                while (v < p->tmv_nvals[k] && p->tmv_vals[k][v] != e->vals[j])
                    v++;
                if (v < p->tmv_nvals[k])
                    continue;
                if (v == 63)
                    over[k] = true;
                else
                    p->tmv_vals[k][p->tmv_nvals[k]++] = e->vals[j];
            }
        }
    }
    int n = 0;
    for (int k = 0; k < p->ntmv; k++)
        if (!over[k]) {
            p->tmv_key[n] = p->tmv_key[k];
            p->tmv_vals[n] = p->tmv_vals[k];
            p->tmv_nvals[n++] = p->tmv_nvals[k];
        }
    p->ntmv = n;
    if (!n)
        return;
    p->tmv_type = tlr_arena_alloc(m->ar, (size_t)p->ntypes * (size_t)n * sizeof(uint64_t) + 1);
    for (int pt = 0; pt < p->ntypes; pt++)
        for (int k = 0; k < n; k++) {
            const sv_dent *e = sv_dom_get(&m->types[p->types[pt]].labels, p->tmv_key[k]);
            uint64_t mk = 0;
            if (!e)
                mk = 1;
            else if (e->any)
                mk = ~(uint64_t)1;
            for (int j = 0; e && j < e->nvals; j++)
                for (int v = 0; v < p->tmv_nvals[k]; v++)
                    if (p->tmv_vals[k][v] == e->vals[j])
                        mk |= (uint64_t)1 << (v + 1);
            p->tmv_type[(size_t)pt * (size_t)n + (size_t)k] = mk;
        }
    for (int k = 0; k < n; k++)
        p->tmv_pool[k] = tmv_allowed(m, p, k, &p->reqs);
}

static void pools_build(sv_model *m, const Tailor__V1__CatalogRef *const *cats, size_t ncats,
                        const int *cat_type0, const int *cat_ntypes)
{
    const Tailor__V1__ClusterState *cs = m->cluster;
    size_t n = cs ? cs->n_nodepools : 0;
    m->pools = tlr_arena_calloc(m->ar, n + 1, sizeof(sv_pool));
    uint8_t *typekey = tlr_arena_calloc(m->ar, (size_t)m->nstrs + 1, 1);
    for (int t = 0; t < m->ntypes; t++)
        for (int i = 0; i < m->types[t].labels.n; i++)
            typekey[m->types[t].labels.e[i].key] = 1;
    int ntypekeys = m->nstrs;
    for (size_t i = 0; i < n; i++) {
        const Tailor__V1__NodePool *np = cs->nodepools[i];
        if (!np || !np->name)
            continue;
        sv_pool *p = &m->pools[m->npools++];
        p->np = np;
        p->idx = (int)i;
        p->reqs.n = (int)np->n_requirements;
        p->reqs.r = tlr_arena_calloc(m->ar, np->n_requirements + 1, sizeof(sv_req));
        p->pmask = pmask_all(m);
        dom_b b = { 0 };
        domb_add1(m, &b, K_POOL, np->name);
        for (size_t j = 0; j < np->n_labels; j++) {
            domb_add1(m, &b, np->labels[j]->key, np->labels[j]->value);
            /* A template label on an offering key (zone, zone id, capacity
             * type) pins the pool's offerings to its value: Karpenter adds
             * template labels to a claim's requirements. */
            sv_req lr;
            req_of_label(m, np->labels[j]->key, np->labels[j]->value, &lr);
            if (lr.kind != SV_KEY_LABEL)
                p->pmask = sv_pmask_and(p->pmask, req_pmask(m, &lr));
        }
        for (int j = 0; j < p->reqs.n; j++) {
            sv_req *r = &p->reqs.r[j];
            req_compile(m, np->requirements[j], r);
            if (r->min_values > 0)
                p->has_min_values = true;
            if (r->kind != SV_KEY_LABEL) {
                p->pmask = sv_pmask_and(p->pmask, req_pmask(m, r));
                continue;
            }
            if ((int)r->key < ntypekeys && typekey[r->key])
                continue;
            if (r->op == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN)
                domb_add(m, &b, r->key, r->vals, r->nvals, false);
            else if (r->op != TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST)
                domb_add(m, &b, r->key, NULL, 0, true);
        }
        p->dom = domb_done(&b);
        for (int j = 0; j < p->dom.n; j++)
            if (p->dom.e[j].nvals > 1)
                p->ncustom++;
        p->custom_key = tlr_arena_calloc(m->ar, (size_t)p->ncustom + 1, sizeof(sv_id));
        p->custom_dent = tlr_arena_calloc(m->ar, (size_t)p->ncustom + 1, sizeof(sv_dent *));
        for (int j = 0, k = 0; j < p->dom.n; j++)
            if (p->dom.e[j].nvals > 1) {
                p->custom_key[k] = p->dom.e[j].key;
                p->custom_dent[k++] = &p->dom.e[j];
            }
        int ci = -1;
        const Tailor__V1__Catalog *cat = pool_catalog(np, cats, ncats, &ci);
        if (!cat) {
            p->no_catalog = true;
            p->types = tlr_arena_alloc(m->ar, sizeof(int));
        } else {
            p->types = tlr_arena_alloc(m->ar, (size_t)(cat_ntypes[ci] + 1) * sizeof(int));
            for (int t = cat_type0[ci]; t < cat_type0[ci] + cat_ntypes[ci]; t++) {
                const sv_type *ty = &m->types[t];
                bool ok = true;
                for (int j = 0; j < p->reqs.n && ok; j++) {
                    const sv_req *r = &p->reqs.r[j];
                    if (r->kind == SV_KEY_LABEL && (int)r->key < ntypekeys && typekey[r->key])
                        ok = sv_req_ok(m, r, &ty->labels, NULL);
                }
                if (ok)
                    p->types[p->ntypes++] = t;
            }
        }
        tmv_build(m, p);
        if (p->ntypes / 64 + 1 > m->pwords_max)
            m->pwords_max = p->ntypes / 64 + 1;
        /* DaemonSet overhead per pool type. */
        p->ds = tlr_arena_calloc(m->ar, (size_t)p->ntypes + 1, sizeof(sv_res));
        for (size_t d = 0; cs && d < cs->n_daemonsets; d++) {
            const Tailor__V1__Pod *tpl = cs->daemonsets[d]->pod_template;
            if (!tpl)
                continue;
            sv_res r;
            pod_request(m, tpl, &r, NULL);
            for (int pt = 0; pt < p->ntypes; pt++)
                if (ds_lands(m, tpl, p, &m->types[p->types[pt]]))
                    for (int k = 0; k < SV_NDIM; k++)
                        p->ds[pt].v[k] = sat_add(p->ds[pt].v[k], r.v[k]);
        }
        /* Limits: what is left after the pool's current usage. */
        for (int d = 0; d < SV_NDIM; d++)
            p->limit_left.v[d] = INT64_MAX;
        p->nodes_left = INT64_MAX;
        const Tailor__V1__NodePoolLimits *l = np->limits;
        if (l) {
            sv_res use;
            res_from(m, np->status ? np->status->usage : NULL, &use, true, NULL);
            if (l->has_cpu)
                p->limit_left.v[SV_DIM_CPU] = sat_sub(l->cpu_millis, use.v[SV_DIM_CPU]);
            if (l->has_memory)
                p->limit_left.v[SV_DIM_MEM] = sat_sub(l->memory_bytes, use.v[SV_DIM_MEM]);
            if (l->has_pods)
                p->limit_left.v[SV_DIM_PODS] = sat_sub(l->pods, use.v[SV_DIM_PODS]);
            if (l->has_ephemeral_storage)
                p->limit_left.v[SV_DIM_EPH] = sat_sub(l->ephemeral_storage_bytes, use.v[SV_DIM_EPH]);
            for (size_t j = 0; j < l->n_extended; j++) {
                int d = dim_of(m, l->extended[j]->name, true);
                if (d != SV_NONE)
                    p->limit_left.v[d] = sat_sub(l->extended[j]->value, use.v[d]);
            }
            if (l->has_nodes)
                p->nodes_left = sat_sub(l->nodes, np->status ? np->status->nodes : 0);
        }
        for (int d = 0; d < SV_NDIM; d++)
            if (p->limit_left.v[d] != INT64_MAX)
                p->limited = true;
    }
    qsort(m->pools, (size_t)m->npools, sizeof(sv_pool), pool_cmp);
}

/* ---- pod classes ------------------------------------------------------ */

/* The bytes that decide where a pod may go: the pod with its identity and
 * bookkeeping fields cleared. */
static size_t class_key(const Tailor__V1__Pod *p, uint8_t **buf, size_t *cap)
{
    Tailor__V1__Pod k = *p;
    k.uid = k.name = k.resource_version = k.node_name = k.nominated_node_name = (char *)"";
    k.priority_class_name = (char *)"";
    k.n_containers = 0;
    k.n_annotations = 0;
    k.n_owners = 0;
    k.n_pdb_names = 0;
    k.creation_unix_ms = k.deletion_unix_ms = 0;
    k.termination_grace_period_ms = 0;
    k.unschedulable = false;
    k.ready = false;
    k.phase = 0;
    size_t n = tailor__v1__pod__get_packed_size(&k);
    if (n + 1 > *cap) {
        *cap = (n + 1) * 2;
        *buf = tlr_realloc(*buf, *cap);
    }
    tailor__v1__pod__pack(&k, *buf);
    if (p->n_containers && !p->requests) {
        /* effective requests come from the containers */
        Tailor__V1__Pod c = TAILOR__V1__POD__INIT;
        c.n_containers = p->n_containers;
        c.containers = p->containers;
        size_t n2 = tailor__v1__pod__get_packed_size(&c);
        if (n + n2 + 1 > *cap) {
            *cap = (n + n2 + 1) * 2;
            *buf = tlr_realloc(*buf, *cap);
        }
        tailor__v1__pod__pack(&c, *buf + n);
        n += n2;
    }
    return n;
}

/* Add a topology group (deduplicated); returns its index. */
static int group_get(sv_model *m, int tk, int tki, const Tailor__V1__LabelSelector *sel,
                     const sv_reqset *extra, bool all_ns, char *const *nss, size_t nns,
                     sv_id own_ns)
{
    sv_id ns[64];
    int nn = 0;
    if (!all_ns) {
        for (size_t i = 0; i < nns && nn < 64; i++)
            ns[nn++] = sv_intern(m, nss[i]);
        if (!nn)
            ns[nn++] = own_ns;
    }
    for (int g = 0; g < m->ngroups; g++) {
        sv_group *x = &m->groups[g];
        if (x->tk != tk || x->tki != tki || x->all_ns != all_ns || x->nns != nn || x->extra.n != extra->n)
            continue;
        if (nn && memcmp(x->ns, ns, (size_t)nn * sizeof(sv_id)))
            continue;
        bool same = (x->sel == NULL) == (sel == NULL);
        if (same && sel && x->sel != sel) {
            size_t a = tailor__v1__label_selector__get_packed_size(x->sel);
            size_t b = tailor__v1__label_selector__get_packed_size(sel);
            if (a != b)
                same = false;
            else if (a) {
                uint8_t *ba = tlr_malloc(a), *bb = tlr_malloc(b);
                tailor__v1__label_selector__pack(x->sel, ba);
                tailor__v1__label_selector__pack(sel, bb);
                same = memcmp(ba, bb, a) == 0;
                free(ba);
                free(bb);
            }
        }
        for (int i = 0; same && i < extra->n; i++)
            same = x->extra.r[i].key == extra->r[i].key && x->extra.r[i].op == extra->r[i].op &&
                   x->extra.r[i].vals[0] == extra->r[i].vals[0];
        if (same)
            return g;
    }
    if (m->ngroups == m->cgroups) {
        int nc = m->cgroups ? m->cgroups * 2 : 16;
        sv_group *ng = tlr_arena_calloc(m->ar, (size_t)nc, sizeof(*ng));
        if (m->ngroups)
            memcpy(ng, m->groups, (size_t)m->ngroups * sizeof(*ng));
        m->groups = ng;
        m->cgroups = nc;
    }
    sv_group *x = &m->groups[m->ngroups];
    memset(x, 0, sizeof(*x));
    x->tk = tk;
    x->tki = tki;
    x->sel = sel;
    x->extra.n = extra->n;
    x->extra.r = tlr_arena_alloc(m->ar, (size_t)(extra->n + 1) * sizeof(sv_req));
    memcpy(x->extra.r, extra->r, (size_t)extra->n * sizeof(sv_req));
    x->all_ns = all_ns;
    x->nns = nn;
    x->ns = tlr_arena_alloc(m->ar, (size_t)(nn + 1) * sizeof(sv_id));
    memcpy(x->ns, ns, (size_t)nn * sizeof(sv_id));
    return m->ngroups++;
}

/* The kind of topology key key; *tki gets its tkey index for SV_TK_LABEL
 * (registered on first sight; SV_NONE past SV_MAXTK keys), else SV_NONE. */
static int topo_kind(sv_model *m, const char *key, int *tki)
{
    sv_id k = sv_intern(m, key);
    *tki = SV_NONE;
    if (k == m->k_zone)
        return SV_TK_ZONE;
    if (k == m->k_host)
        return SV_TK_HOST;
    if (k == m->k_ct)
        return SV_TK_CT;
    for (int i = 0; i < m->ntkeys; i++)
        if (m->tkeys[i].key == k) {
            *tki = i;
            return SV_TK_LABEL;
        }
    if (k && m->ntkeys < SV_MAXTK && !m->tk_built) {
        *tki = m->ntkeys;
        m->tkeys[m->ntkeys++].key = k;
    }
    return SV_TK_LABEL;
}

/* A key topo_kind could not take (empty, or past SV_MAXTK keys). */
#define TK_UNUSABLE(tk, tki) ((tk) == SV_TK_LABEL && (tki) == SV_NONE)

/* match_label_keys (In the pod's value) and mismatch_label_keys (NotIn). */
static sv_reqset label_keys(sv_model *m, const sv_dom *labels, char *const *keys, size_t nkeys,
                            char *const *mis, size_t nmis)
{
    sv_reqset rs = { tlr_arena_calloc(m->ar, nkeys + nmis + 1, sizeof(sv_req)), 0 };
    for (size_t i = 0; i < nkeys + nmis; i++) {
        const char *k = i < nkeys ? keys[i] : mis[i - nkeys];
        const sv_dent *e = sv_dom_get(labels, sv_intern(m, k));
        if (!e || e->nvals != 1)
            continue;
        sv_req *r = &rs.r[rs.n++];
        r->key = e->key;
        r->op = i < nkeys ? TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
                          : TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN;
        r->nvals = 1;
        r->vals = tlr_arena_alloc(m->ar, sizeof(sv_id));
        r->vals[0] = e->vals[0];
    }
    return rs;
}

static void cons_add(sv_model *m, sv_class *c, sv_cons *cn)
{
    sv_cons *nc = tlr_arena_alloc(m->ar, (size_t)(c->ncons + 1) * sizeof(*nc));
    if (c->ncons)
        memcpy(nc, c->cons, (size_t)c->ncons * sizeof(*nc));
    nc[c->ncons++] = *cn;
    c->cons = nc;
}

static int wterm_cmp(const void *a, const void *b);

static void class_topology(sv_model *m, sv_class *c)
{
    const Tailor__V1__Pod *p = c->pod;
    for (size_t i = 0; i < p->n_topology_spread_constraints; i++) {
        const Tailor__V1__TopologySpreadConstraint *t = p->topology_spread_constraints[i];
        bool soft = t->when_unsatisfiable ==
                    TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_SCHEDULE_ANYWAY;
        if (soft && m->ignore_prefs)
            continue;
        int tki;
        int tk = topo_kind(m, t->topology_key, &tki);
        if (TK_UNUSABLE(tk, tki)) {
            if (!soft && !c->bad)
                c->bad = sv_arena_printf(m->ar, "topology spread key '%s' is not supported (empty, or "
                                         "more than %d distinct topology keys)", t->topology_key, SV_MAXTK);
            continue;
        }
        sv_reqset extra = label_keys(m, &c->labels, t->match_label_keys, t->n_match_label_keys, NULL, 0);
        sv_cons cn = { SV_C_SPREAD, group_get(m, tk, tki, t->label_selector, &extra, false, NULL, 0, c->ns),
                       t->max_skew > 0 ? t->max_skew : 1, t->min_domains, soft, false, 0,
                       t->node_affinity_policy == TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_IGNORE,
                       t->node_taints_policy == TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_HONOR };
        cons_add(m, c, &cn);
    }
    for (int anti = 0; anti < 2; anti++) {
        const Tailor__V1__PodAffinity *a = anti ? p->pod_anti_affinity : p->pod_affinity;
        for (size_t i = 0; a && i < a->n_required; i++) {
            const Tailor__V1__PodAffinityTerm *t = a->required[i];
            int tki;
            int tk = topo_kind(m, t->topology_key, &tki);
            if (TK_UNUSABLE(tk, tki)) {
                if (!c->bad)
                    c->bad = sv_arena_printf(m->ar, "pod %saffinity topology key '%s' is not supported "
                                             "(empty, or more than %d distinct topology keys)",
                                             anti ? "anti-" : "", t->topology_key, SV_MAXTK);
                continue;
            }
            sv_reqset extra = label_keys(m, &c->labels, t->match_label_keys, t->n_match_label_keys,
                                         t->mismatch_label_keys, t->n_mismatch_label_keys);
            sv_cons cn = { anti ? SV_C_ANTI : SV_C_AFFINITY,
                           group_get(m, tk, tki, t->label_selector, &extra, t->all_namespaces,
                                     t->namespaces, t->n_namespaces, c->ns),
                           0, 0, false, false, 0, false, false };
            cons_add(m, c, &cn);
        }
        /* Preferred terms: enforced like required ones until relaxation
         * drops them, heaviest first (class_levels).  A preference whose
         * topology key is not supported is left out (it only ever
         * expressed a wish). */
        size_t np = m->ignore_prefs || !a ? 0 : a->n_preferred;
        const Tailor__V1__WeightedPodAffinityTerm **w = tlr_arena_alloc(m->ar, (np + 1) * sizeof(*w));
        for (size_t i = 0; i < np; i++)
            w[i] = a->preferred[i];
        if (np > 1)
            qsort(w, np, sizeof(*w), wterm_cmp);
        int rank = 0;
        for (size_t i = 0; i < np; i++) {
            const Tailor__V1__PodAffinityTerm *t = w[i]->term;
            int tki = SV_NONE, tk = t ? topo_kind(m, t->topology_key, &tki) : SV_TK_LABEL;
            if (!t || TK_UNUSABLE(tk, tki))
                continue;
            sv_reqset extra = label_keys(m, &c->labels, t->match_label_keys, t->n_match_label_keys,
                                         t->mismatch_label_keys, t->n_mismatch_label_keys);
            sv_cons cn = { anti ? SV_C_ANTI : SV_C_AFFINITY,
                           group_get(m, tk, tki, t->label_selector, &extra,
                                     t->all_namespaces, t->namespaces, t->n_namespaces, c->ns),
                           0, 0, false, false, ++rank, false, false };
            cons_add(m, c, &cn);
        }
    }
}

/* Preferred pod terms by weight, heaviest first (stable on ties by the
 * pointers' order in the request, which qsort does not promise: the
 * weight is the key that matters). */
static int wterm_cmp(const void *a, const void *b)
{
    const Tailor__V1__WeightedPodAffinityTerm *x = *(const Tailor__V1__WeightedPodAffinityTerm *const *)a;
    const Tailor__V1__WeightedPodAffinityTerm *y = *(const Tailor__V1__WeightedPodAffinityTerm *const *)b;
    if (x->weight != y->weight)
        return y->weight - x->weight;
    return x < y ? -1 : x > y;
}

/* ---- relaxation levels and compatibility ------------------------------ */

static int pref_cmp(const void *a, const void *b)
{
    const Tailor__V1__PreferredSchedulingTerm *x = *(const Tailor__V1__PreferredSchedulingTerm *const *)a;
    const Tailor__V1__PreferredSchedulingTerm *y = *(const Tailor__V1__PreferredSchedulingTerm *const *)b;
    return y->weight - x->weight;
}

static void reqs_append(sv_model *m, sv_reqset *rs, const Tailor__V1__NodeSelectorRequirement *const *src,
                        size_t n)
{
    sv_req *nr = tlr_arena_alloc(m->ar, ((size_t)rs->n + n + 1) * sizeof(sv_req));
    if (rs->n)
        memcpy(nr, rs->r, (size_t)rs->n * sizeof(sv_req));
    for (size_t i = 0; i < n; i++)
        req_compile(m, src[i], &nr[rs->n + i]);
    rs->r = nr;
    rs->n += (int)n;
}

static const char *op_name(int op)
{
    static const char *const n[] = { "?", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte" };
    return op >= 0 && op <= 8 ? n[op] : "?";
}

static char *req_text(sv_model *m, const sv_req *r)
{
    char buf[256];
    int o = snprintf(buf, sizeof buf, "%s %s", sv_str(m, r->key), op_name(r->op));
    if (r->nvals) {
        o += snprintf(buf + o, sizeof buf - (size_t)o, " [");
        for (int i = 0; i < r->nvals && o < (int)sizeof buf - 8; i++)
            o += snprintf(buf + o, sizeof buf - (size_t)o, "%s%s", i ? "," : "", sv_str(m, r->vals[i]));
        snprintf(buf + o, sizeof buf - (size_t)o, "]");
    }
    return tlr_arena_strdup(m->ar, buf);
}

static char *res_text(sv_model *m, int d, int64_t v)
{
    switch (d) {
    case SV_DIM_CPU: return sv_arena_printf(m->ar, "%" PRId64 "m cpu", v);
    case SV_DIM_MEM: return sv_arena_printf(m->ar, "%" PRId64 "Mi memory", (v + 1048575) / 1048576);
    case SV_DIM_PODS: return sv_arena_printf(m->ar, "room for %" PRId64 " pods", v);
    case SV_DIM_EPH: return sv_arena_printf(m->ar, "%" PRId64 "Mi ephemeral storage", (v + 1048575) / 1048576);
    default: return sv_arena_printf(m->ar, "%" PRId64 " %s", v, m->dim_name[d]);
    }
}

/* One remembered compatibility bitset (level_compat). */
typedef struct sv_cmemo {
    int pi;                      /* SV_NONE: empty slot */
    sv_pmask pm;
    sv_res req;
    uint64_t *bits;
} sv_cmemo;

/* The memo slot for (pool pi, mask pm, requests req): *slot is the bitset
 * when known, else NULL for the caller to fill.  NULL when the table is
 * full (the caller then just computes). */
static uint64_t **compat_memo_slot(sv_model *m, int pi, sv_pmask pm, const sv_res *req)
{
    if (!m->cmemo) {
        m->cmemo_cap = 1024;
        m->cmemo = tlr_arena_alloc(m->ar, (size_t)m->cmemo_cap * sizeof(sv_cmemo));
        for (int i = 0; i < m->cmemo_cap; i++)
            m->cmemo[i].pi = SV_NONE;
    }
    uint64_t h = tlr_fnv1a64_word(TLR_FNV64_BASIS_SHORT, (uint64_t)pi);
    h = tlr_fnv1a64_word(h, pm.w[0]);
    h = tlr_fnv1a64_word(h, pm.w[1]);
    for (int d = 0; d < m->ndim; d++)
        h = tlr_fnv1a64_word(h, (uint64_t)req->v[d]);
    int mask = m->cmemo_cap - 1;
    for (int i = (int)(h & (uint64_t)mask), probes = 0; probes < 64; i = (i + 1) & mask, probes++) {
        sv_cmemo *e = &m->cmemo[i];
        if (e->pi == SV_NONE) {
            if (m->cmemo_n * 2 >= m->cmemo_cap)
                return NULL;   /* full enough: stop remembering */
            e->pi = pi;
            e->pm = pm;
            e->req = *req;
            e->bits = NULL;
            m->cmemo_n++;
            return &e->bits;
        }
        if (e->pi == pi && !memcmp(&e->pm, &pm, sizeof(pm)) && !memcmp(&e->req, req, sizeof(*req)))
            return &e->bits;
    }
    return NULL;
}

/* Fill lv->compat etc. for every pool. */
static void level_compat(sv_model *m, sv_class *c, sv_level *lv)
{
    int np = m->npools;
    lv->compat = tlr_arena_calloc(m->ar, (size_t)np + 1, sizeof(uint64_t *));
    lv->pmask = tlr_arena_calloc(m->ar, (size_t)np + 1, sizeof(sv_pmask));
    lv->custom = tlr_arena_calloc(m->ar, (size_t)np + 1, sizeof(uint64_t *));
    lv->tmv = tlr_arena_calloc(m->ar, (size_t)np + 1, sizeof(uint64_t *));
    lv->why = tlr_arena_calloc(m->ar, (size_t)np + 1, sizeof(char *));
    for (int pi = 0; pi < np; pi++) {
        sv_pool *p = &m->pools[pi];
        if (c->bad) {
            lv->why[pi] = c->bad;
            continue;
        }
        if (p->no_catalog) {
            lv->why[pi] = sv_arena_printf(m->ar, "NodeClass %s has no catalog in the request",
                                          p->np->node_class_ref && p->np->node_class_ref->name
                                          ? p->np->node_class_ref->name : "(none)");
            continue;
        }
        const Tailor__V1__Condition *nr = pool_not_ready(p->np);
        if (nr) {
            lv->why[pi] = sv_arena_printf(m->ar, "NodePool %s is not Ready (%s%s%s)", p->np->name,
                                          nr->reason && nr->reason[0] ? nr->reason : "False",
                                          nr->message && nr->message[0] ? ": " : "",
                                          nr->message ? nr->message : "");
            continue;
        }
        const Tailor__V1__Taint *bad = NULL;
        for (size_t i = 0; i < p->np->n_taints && !bad; i++)
            if (taint_blocks(p->np->taints[i], lv->prefer_noschedule) &&
                !sv_tolerates(c->tols, c->ntols, p->np->taints[i]))
                bad = p->np->taints[i];
        if (bad) {
            lv->why[pi] = sv_arena_printf(m->ar, "taint %s%s%s:%s not tolerated", bad->key,
                                          bad->value && *bad->value ? "=" : "", bad->value ? bad->value : "",
                                          effect_name(bad->effect));
            continue;
        }
        sv_pmask pm = p->pmask;
        for (int i = 0; i < lv->reqs.n; i++)
            if (lv->reqs.r[i].kind != SV_KEY_LABEL)
                pm = sv_pmask_and(pm, req_pmask(m, &lv->reqs.r[i]));
        lv->pmask[pi] = pm;
        uint64_t *cust = tlr_arena_alloc(m->ar, ((size_t)p->ncustom + 1) * sizeof(uint64_t));
        for (int k = 0; k < p->ncustom; k++) {
            const sv_dent *e = p->custom_dent[k];
            uint64_t mk = 0;
            for (int v = 0; v < e->nvals && v < 64; v++) {
                bool ok = true;
                for (int i = 0; i < lv->reqs.n && ok; i++)
                    if (lv->reqs.r[i].key == e->key) {
                        sv_dent one = { e->key, false, 1, &e->vals[v] };
                        sv_dom d = { &one, 1 };
                        ok = sv_req_ok(m, &lv->reqs.r[i], &d, NULL);
                    }
                if (ok)
                    mk |= (uint64_t)1 << v;
            }
            cust[k] = mk;
        }
        lv->custom[pi] = cust;
        uint64_t *tmv = NULL;
        if (p->ntmv) {
            tmv = tlr_arena_alloc(m->ar, (size_t)p->ntmv * sizeof(uint64_t));
            for (int k = 0; k < p->ntmv; k++)
                tmv[k] = tmv_allowed(m, p, k, &lv->reqs) & p->tmv_pool[k];
            lv->tmv[pi] = tmv;
        }
        int words = p->ntypes / 64 + 1;
        /* Without label requirements the bitset depends only on the pool,
         * the place mask and the requests: classes that share them (the
         * diverse benchmark: ~3,200 classes of 30 request shapes) share one
         * read-only bitset. */
        uint64_t **memo = !lv->reqs.n ? compat_memo_slot(m, pi, pm, &c->req) : NULL;
        if (memo && *memo) {
            lv->compat[pi] = *memo;
            continue;
        }
        uint64_t *bits = tlr_arena_calloc(m->ar, (size_t)words, sizeof(uint64_t));
        int nlab = 0, nres = 0, nok = 0;
        int first_bad_req = -1;
        int64_t best[SV_NDIM] = { 0 };
        for (int pt = 0; pt < p->ntypes; pt++) {
            const sv_type *t = &m->types[p->types[pt]];
            bool ok = true;
            for (int i = 0; i < lv->reqs.n && ok; i++) {
                const sv_req *r = &lv->reqs.r[i];
                if (r->kind == SV_KEY_LABEL && !sv_req_ok(m, r, &t->labels, &p->dom)) {
                    ok = false;
                    if (first_bad_req < 0)
                        first_bad_req = i;
                }
            }
            /* a multi-valued label must keep a value both the pool and
             * the pod allow, not one each */
            for (int k = 0; k < p->ntmv && ok; k++)
                if (!(p->tmv_type[(size_t)pt * (size_t)p->ntmv + (size_t)k] & tmv[k])) {
                    ok = false;
                    for (int i = 0; i < lv->reqs.n && first_bad_req < 0; i++)
                        if (lv->reqs.r[i].key == p->tmv_key[k])
                            first_bad_req = i;
                }
            if (!ok)
                continue;
            nlab++;
            bool fits = true;
            for (int d = 0; d < m->ndim; d++) {
                int64_t room = t->alloc.v[d] - p->ds[pt].v[d];
                if (room > best[d])
                    best[d] = room;
                if (c->req.v[d] > room)
                    fits = false;
            }
            if (!fits)
                continue;
            nres++;
            if (sv_type_price(m, p->types[pt], pm, NULL) < 0)
                continue;
            nok++;
            sv_bit_set(bits, pt);
        }
        if (nok) {
            lv->compat[pi] = bits;
            if (memo)
                *memo = bits;
            continue;
        }
        bool cust_empty = false;
        for (int k = 0; k < p->ncustom; k++)
            if (!cust[k])
                cust_empty = true;
        if (!p->ntypes)
            lv->why[pi] = tlr_arena_strdup(m->ar, "no instance type satisfies the NodePool requirements");
        else if (!nlab)
            lv->why[pi] = sv_arena_printf(m->ar, "requirement %s matches no instance type of this NodePool",
                                          first_bad_req >= 0 ? req_text(m, &lv->reqs.r[first_bad_req]) : "?");
        else if (!nres) {
            for (int d = 0; d < m->ndim; d++)
                if (c->req.v[d] > best[d]) {
                    lv->why[pi] = sv_arena_printf(m->ar, "no instance type has %s", res_text(m, d, c->req.v[d]));
                    break;
                }
            if (!lv->why[pi])
                lv->why[pi] = tlr_arena_strdup(m->ar, "no instance type has room for the pod");
        } else {
            /* Some type fits: the zone / capacity-type requirements (the
             * pod's or the pool's) or availability leave no offering. */
            for (int i = 0; i < lv->reqs.n && !lv->why[pi]; i++) {
                const sv_req *r = &lv->reqs.r[i];
                if (r->kind == SV_KEY_LABEL)
                    continue;
                sv_pmask rm = sv_pmask_and(p->pmask, req_pmask(m, r));
                bool any = false;
                for (int pt = 0; pt < p->ntypes && !any; pt++)
                    any = sv_type_price(m, p->types[pt], rm, NULL) >= 0;
                if (!any)
                    lv->why[pi] = sv_arena_printf(m->ar, "requirement %s matches no offering",
                                                  req_text(m, r));
            }
            for (int i = 0; i < p->reqs.n && !lv->why[pi]; i++) {
                const sv_req *r = &p->reqs.r[i];
                if (r->kind == SV_KEY_LABEL)
                    continue;
                bool any = false;
                for (int pt = 0; pt < p->ntypes && !any; pt++)
                    any = sv_type_price(m, p->types[pt], req_pmask(m, r), NULL) >= 0;
                if (!any)
                    lv->why[pi] = sv_arena_printf(m->ar, "NodePool requirement %s matches no offering",
                                                  req_text(m, r));
            }
            if (!lv->why[pi] && !sv_pmask_any(pm))
                lv->why[pi] = tlr_arena_strdup(m->ar, "the pod's zone and capacity-type requirements "
                                               "conflict with the NodePool's");
            if (!lv->why[pi])
                lv->why[pi] = tlr_arena_strdup(m->ar, "no available offering (zone, capacity type, "
                                               "unavailable offerings) for the instance types that fit");
        }
        if (cust_empty && !lv->why[pi])
            lv->why[pi] = tlr_arena_strdup(m->ar, "requirements conflict with the NodePool's");
    }
}

static void class_levels(sv_model *m, sv_class *c)
{
    const Tailor__V1__Pod *p = c->pod;
    sv_reqset base = { NULL, 0 };
    /* nodeSelector entries become key In [value]. */
    if (p->n_node_selector) {
        Tailor__V1__NodeSelectorRequirement **ns = tlr_arena_alloc(m->ar, p->n_node_selector * sizeof(*ns));
        for (size_t i = 0; i < p->n_node_selector; i++) {
            Tailor__V1__NodeSelectorRequirement *r = tlr_arena_alloc(m->ar, sizeof(*r));
            tailor__v1__node_selector_requirement__init(r);
            r->key = p->node_selector[i]->key;
            r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
            r->n_values = 1;
            r->values = &p->node_selector[i]->value;
            ns[i] = r;
        }
        reqs_append(m, &base, (const Tailor__V1__NodeSelectorRequirement *const *)ns, p->n_node_selector);
    }
    reqs_append(m, &base, (const Tailor__V1__NodeSelectorRequirement *const *)p->volume_requirements,
                p->n_volume_requirements);
    size_t nreq = p->n_required_node_affinity ? p->n_required_node_affinity : 1;
    size_t npref = m->ignore_prefs ? 0 : p->n_preferred_node_affinity;
    const Tailor__V1__PreferredSchedulingTerm **prefs =
        tlr_arena_alloc(m->ar, (npref + 1) * sizeof(*prefs));
    for (size_t i = 0; i < npref; i++)
        prefs[i] = p->preferred_node_affinity[i];
    if (npref > 1)
        qsort(prefs, npref, sizeof(*prefs), pref_cmp);
    bool has_soft = false;
    int npaff = 0, nanti = 0;
    for (int i = 0; i < c->ncons; i++) {
        if (c->cons[i].soft)
            has_soft = true;
        if (c->cons[i].pref && c->cons[i].kind == SV_C_ANTI && c->cons[i].pref > nanti)
            nanti = c->cons[i].pref;
        else if (c->cons[i].pref && c->cons[i].kind != SV_C_ANTI && c->cons[i].pref > npaff)
            npaff = c->cons[i].pref;
    }
    int max = (int)(nreq + npref + 3) + npaff + nanti;
    c->levels = tlr_arena_calloc(m->ar, (size_t)max, sizeof(sv_level));
    c->nreqterms = (int)nreq;
    bool prefs_on = !m->ignore_prefs;
    /* Karpenter's relaxation order: drop required ORed terms (keeping the
     * heaviest preference), then preferred pod affinity and anti-affinity
     * terms, then node preferences one at a time, then ScheduleAnyway
     * spreads, then tolerate PreferNoSchedule. */
    for (size_t r = 0; r < nreq; r++) {
        sv_level *lv = &c->levels[c->nlevels++];
        lv->reqs = base;
        if (p->n_required_node_affinity)
            reqs_append(m, &lv->reqs, (const Tailor__V1__NodeSelectorRequirement *const *)
                        p->required_node_affinity[r]->match_expressions,
                        p->required_node_affinity[r]->n_match_expressions);
        lv->nstrict = lv->reqs.n;
        if (npref && prefs[0]->preference)
            reqs_append(m, &lv->reqs, (const Tailor__V1__NodeSelectorRequirement *const *)
                        prefs[0]->preference->match_expressions, prefs[0]->preference->n_match_expressions);
        lv->soft_tsc = has_soft;
        lv->prefer_noschedule = prefs_on;
    }
    sv_reqset last = base;
    if (p->n_required_node_affinity)
        reqs_append(m, &last, (const Tailor__V1__NodeSelectorRequirement *const *)
                    p->required_node_affinity[nreq - 1]->match_expressions,
                    p->required_node_affinity[nreq - 1]->n_match_expressions);
    /* Then the preferred pod affinity terms, then the anti-affinity
     * ones, heaviest first, with the heaviest node preference kept. */
    sv_reqset lastpref = last;
    if (npref && prefs[0]->preference)
        reqs_append(m, &lastpref, (const Tailor__V1__NodeSelectorRequirement *const *)
                    prefs[0]->preference->match_expressions, prefs[0]->preference->n_match_expressions);
    for (int i = 1; i <= npaff + nanti; i++) {
        sv_level *lv = &c->levels[c->nlevels++];
        lv->reqs = lastpref;
        lv->nstrict = last.n;
        lv->paff_off = i <= npaff ? i : npaff;
        lv->anti_off = i <= npaff ? 0 : i - npaff;
        lv->soft_tsc = has_soft;
        lv->prefer_noschedule = prefs_on;
    }
    for (size_t i = 1; i <= npref; i++) {
        sv_level *lv = &c->levels[c->nlevels++];
        lv->paff_off = npaff;
        lv->anti_off = nanti;
        lv->reqs = last;
        lv->nstrict = last.n;
        if (i < npref && prefs[i]->preference)
            reqs_append(m, &lv->reqs, (const Tailor__V1__NodeSelectorRequirement *const *)
                        prefs[i]->preference->match_expressions, prefs[i]->preference->n_match_expressions);
        lv->soft_tsc = has_soft;
        lv->prefer_noschedule = prefs_on;
    }
    if (has_soft) {
        sv_level *lv = &c->levels[c->nlevels++];
        lv->reqs = last;
        lv->nstrict = last.n;
        lv->paff_off = npaff;
        lv->anti_off = nanti;
        lv->prefer_noschedule = prefs_on;
    }
    if (prefs_on) {
        sv_level *lv = &c->levels[c->nlevels++];
        lv->reqs = last;
        lv->nstrict = last.n;
        lv->paff_off = npaff;
        lv->anti_off = nanti;
    }
    for (int i = 0; i < c->nlevels; i++)
        level_compat(m, c, &c->levels[i]);
}

sv_level *sv_level_strict(sv_model *m, sv_class *c, sv_level *lv)
{
    if (lv->nstrict >= lv->reqs.n)
        return lv;
    if (!lv->strict) {
        sv_level *s = tlr_arena_calloc(m->ar, 1, sizeof(*s));
        s->reqs.r = lv->reqs.r;
        s->reqs.n = s->nstrict = lv->nstrict;
        s->soft_tsc = lv->soft_tsc;
        s->paff_off = lv->paff_off;
        s->anti_off = lv->anti_off;
        s->prefer_noschedule = lv->prefer_noschedule;
        level_compat(m, c, s);
        lv->strict = s;
    }
    return lv->strict;
}

static int cls_cmp(const void *a, const void *b, void *arg)
{
    const sv_model *m = arg;
    const sv_class *x = &m->classes[*(const int *)a], *y = &m->classes[*(const int *)b];
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static void classes_build(sv_model *m, const Tailor__V1__Pod *const *pods, size_t npods)
{
    m->pods = tlr_arena_calloc(m->ar, npods + 1, sizeof(sv_podst));
    m->npods = (int)npods;
    m->classes = tlr_arena_calloc(m->ar, npods + 1, sizeof(sv_class));
    int hcap = 64;
    while (hcap < (int)npods * 2)
        hcap *= 2;
    int *ht = tlr_malloc((size_t)hcap * sizeof(int));
    uint64_t *hh = tlr_malloc((size_t)hcap * sizeof(uint64_t));
    for (int i = 0; i < hcap; i++)
        ht[i] = -1;
    uint8_t *buf = NULL;
    size_t cap = 0;
    uint8_t **keys = tlr_malloc((npods + 1) * sizeof(uint8_t *));
    size_t *klen = tlr_malloc((npods + 1) * sizeof(size_t));
    int *count = tlr_calloc(npods + 1, sizeof(int));
    for (size_t i = 0; i < npods; i++) {
        sv_podst *ps = &m->pods[i];
        ps->pod = pods[i];
        ps->bin = SV_NONE;
        size_t n = class_key(pods[i], &buf, &cap);
        uint64_t h = tlr_fnv1a64(TLR_FNV64_BASIS_SHORT, buf, n);
        uint32_t s = (uint32_t)h & (uint32_t)(hcap - 1);
        int c = -1;
        while (ht[s] >= 0) {
            if (hh[s] == h && klen[ht[s]] == n && memcmp(keys[ht[s]], buf, n) == 0) {
                c = ht[s];
                break;
            }
            s = (s + 1) & (uint32_t)(hcap - 1);
        }
        if (c < 0) {
            c = m->nclasses++;
            ht[s] = c;
            hh[s] = h;
            keys[c] = tlr_arena_alloc(m->ar, n + 1);
            memcpy(keys[c], buf, n);
            klen[c] = n;
            m->classes[c].pod = pods[i];
        }
        ps->cls = c;
        count[c]++;
    }
    free(buf);
    free(ht);
    free(hh);
    free(keys);
    free(klen);
    for (int c = 0; c < m->nclasses; c++) {
        m->classes[c].pods = tlr_arena_alloc(m->ar, (size_t)count[c] * sizeof(int));
    }
    for (int i = 0; i < m->npods; i++) {
        sv_class *c = &m->classes[m->pods[i].cls];
        c->pods[c->npods++] = i;
    }
    free(count);
    /* Per class: requests, labels, tolerations, ports, topology. */
    double maxd[SV_NDIM] = { 0 };
    for (int t = 0; t < m->ntypes; t++)
        for (int d = 0; d < SV_NDIM; d++)
            if ((double)m->types[t].alloc.v[d] > maxd[d])
                maxd[d] = (double)m->types[t].alloc.v[d];
    for (int ci = 0; ci < m->nclasses; ci++) {
        sv_class *c = &m->classes[ci];
        const Tailor__V1__Pod *p = c->pod;
        const char *unknown = NULL;
        char ign[512];
        bool quiet;
        if (tlr_ks_pod_ignored(p, ign, sizeof(ign), &quiet)) {
            c->bad = sv_arena_printf(m->ar, "%s", ign);
            c->ignored = true;
        }
        pod_request(m, p, &c->req, &unknown);
        for (int d = 0; d < SV_NDIM; d++)
            if (c->req.v[d] < 0 && !c->bad)
                c->bad = sv_arena_printf(m->ar, "negative request for %s",
                                         d < 4 ? (const char *[]){ "cpu", "memory", "pods", "ephemeral-storage" }[d]
                                               : m->dim_name[d]);
        if (unknown && !c->bad)
            c->bad = sv_arena_printf(m->ar, "no instance type has %s (too many distinct extended "
                                     "resources in one request)", unknown);
        for (int d = 0; d < m->ndim; d++)
            if (maxd[d] > 0 && (double)c->req.v[d] / maxd[d] > c->size)
                c->size = (double)c->req.v[d] / maxd[d];
        c->ns = sv_intern(m, p->namespace_);
        dom_b b = { 0 };
        c->labels = dom_from_labels(m, p->labels, p->n_labels, &b);
        c->tols = (const Tailor__V1__Toleration *const *)p->tolerations;
        c->ntols = p->n_tolerations;
        c->nports = (int)p->n_host_ports;
        c->ports = tlr_arena_calloc(m->ar, p->n_host_ports + 1, sizeof(sv_port));
        for (size_t i = 0; i < p->n_host_ports; i++) {
            c->ports[i].port = p->host_ports[i]->port;
            c->ports[i].proto = p->host_ports[i]->protocol ? p->host_ports[i]->protocol : 1;
            c->ports[i].ip = strcmp(p->host_ports[i]->host_ip ? p->host_ports[i]->host_ip : "", "0.0.0.0")
                             ? sv_intern(m, p->host_ports[i]->host_ip) : 0;
        }
        class_topology(m, c);
    }
    m->class_order = tlr_arena_alloc(m->ar, ((size_t)m->nclasses + 1) * sizeof(int));
    for (int c = 0; c < m->nclasses; c++)
        m->class_order[c] = c;
    qsort_r(m->class_order, (size_t)m->nclasses, sizeof(int), cls_cmp, m);
}

/* Groups an existing pod (compact form) carries as anti-affinity owner. */
static void existing_anti_groups(sv_model *m)
{
    const Tailor__V1__ClusterState *cs = m->cluster;
    for (size_t n = 0; cs && n < cs->n_nodes; n++)
        for (size_t i = 0; i < cs->nodes[n]->n_pods; i++) {
            const Tailor__V1__Pod *p = cs->nodes[n]->pods[i];
            const Tailor__V1__PodAffinity *a = p->pod_anti_affinity;
            for (size_t j = 0; a && j < a->n_required; j++) {
                const Tailor__V1__PodAffinityTerm *t = a->required[j];
                int tki;
                int tk = topo_kind(m, t->topology_key, &tki);
                if (TK_UNUSABLE(tk, tki))
                    continue;
                dom_b b = { 0 };
                sv_dom l = dom_from_labels(m, p->labels, p->n_labels, &b);
                sv_reqset extra = label_keys(m, &l, t->match_label_keys, t->n_match_label_keys,
                                             t->mismatch_label_keys, t->n_mismatch_label_keys);
                group_get(m, tk, tki, t->label_selector, &extra, t->all_namespaces, t->namespaces,
                          t->n_namespaces, sv_intern(m, p->namespace_));
            }
        }
}

static void class_matches(sv_model *m)
{
    for (int ci = 0; ci < m->nclasses; ci++) {
        sv_class *c = &m->classes[ci];
        c->match = tlr_arena_alloc(m->ar, ((size_t)m->ngroups + 1) * sizeof(int));
        for (int g = 0; g < m->ngroups; g++) {
            sv_group *x = &m->groups[g];
            if (sv_group_ns_ok(x, c->ns) && sv_selector_match(m, x->sel, &x->extra, &c->labels)) {
                c->match[c->nmatch++] = g;
                if (x->tk == SV_TK_ZONE)
                    c->pin_zone = true;
                if (x->tk == SV_TK_CT)
                    c->pin_ct = true;
                if (x->tk == SV_TK_LABEL)
                    c->pin_tk |= (uint64_t)1 << x->tki;
            }
        }
        c->owns = tlr_arena_alloc(m->ar, ((size_t)c->ncons + 1) * sizeof(int));
        for (int i = 0; i < c->ncons; i++) {
            sv_cons *cn = &c->cons[i];
            for (int j = 0; j < c->nmatch; j++)
                if (c->match[j] == cn->group)
                    cn->self_match = true;
            if (cn->kind == SV_C_ANTI && cn->pref == 0)
                c->owns[c->nowns++] = cn->group;
            int tk = m->groups[cn->group].tk;
            if (tk == SV_TK_ZONE)
                c->pin_zone = true;
            if (tk == SV_TK_CT)
                c->pin_ct = true;
            if (tk == SV_TK_LABEL)
                c->pin_tk |= (uint64_t)1 << m->groups[cn->group].tki;
        }
    }
}

/* ---- topology keys other than zone, hostname, capacity type ----------- */

static int tk_val_index(const sv_tkey *k, sv_id v)
{
    for (int i = 0; i < k->nvals; i++)
        if (k->vals[i] == v)
            return i;
    return SV_NONE;
}

static void tk_val_add(sv_model *m, sv_tkey *k, int *cap, sv_id v)
{
    if (!v || tk_val_index(k, v) != SV_NONE)
        return;
    if (k->nvals == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        sv_id *nv = tlr_arena_alloc(m->ar, (size_t)nc * sizeof(sv_id));
        if (k->nvals)
            memcpy(nv, k->vals, (size_t)k->nvals * sizeof(sv_id));
        k->vals = nv;
        *cap = nc;
    }
    k->vals[k->nvals++] = v;
}

static void tk_dent_add(sv_model *m, sv_tkey *k, int *cap, const sv_dent *e)
{
    for (int i = 0; e && !e->any && i < e->nvals; i++)
        tk_val_add(m, k, cap, e->vals[i]);
}

/* The domains of every SV_TK_LABEL key (what NodePools, instance types,
 * existing nodes and in-flight claims give it, as Karpenter's
 * buildDomainGroups and countDomains find them), the groups' per-value
 * counters, and how each pool's claims get a value. */
static void tkeys_build(sv_model *m)
{
    const Tailor__V1__ClusterState *cs = m->cluster;
    for (int i = 0; i < m->ntkeys; i++) {
        sv_tkey *k = &m->tkeys[i];
        int cap = 0;
        for (int pi = 0; pi < m->npools; pi++) {
            const sv_pool *p = &m->pools[pi];
            const sv_dent *e = sv_dom_get(&p->dom, k->key);
            if (e) {
                tk_dent_add(m, k, &cap, e);
                continue;
            }
            for (int pt = 0; pt < p->ntypes; pt++)
                tk_dent_add(m, k, &cap, sv_dom_get(&m->types[p->types[pt]].labels, k->key));
        }
        const char *ks = sv_str(m, k->key);
        for (size_t n = 0; cs && n < cs->n_nodes; n++) {
            const Tailor__V1__Node *nd = cs->nodes[n];
            for (size_t j = 0; j < nd->n_labels; j++)
                if (nd->labels[j]->key && !strcmp(nd->labels[j]->key, ks))
                    tk_val_add(m, k, &cap, sv_intern(m, nd->labels[j]->value));
            if (k->key == m->k_type && nd->instance_type && *nd->instance_type)
                tk_val_add(m, k, &cap, sv_intern(m, nd->instance_type));
        }
        for (size_t n = 0; cs && n < cs->n_nodeclaims; n++) {
            const Tailor__V1__NodeClaim *nc = cs->nodeclaims[n];
            for (size_t j = 0; j < nc->n_labels; j++)
                if (nc->labels[j]->key && !strcmp(nc->labels[j]->key, ks))
                    tk_val_add(m, k, &cap, sv_intern(m, nc->labels[j]->value));
            for (size_t j = 0; j < nc->n_requirements; j++) {
                const Tailor__V1__NodeSelectorRequirement *r = nc->requirements[j];
                if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN && r->n_values == 1 &&
                    !strcmp(r->key, ks))
                    tk_val_add(m, k, &cap, sv_intern(m, r->values[0]));
            }
        }
    }
    m->tk_built = true;   /* domains are final: no key joins later */
    for (int g = 0; g < m->ngroups; g++) {
        sv_group *x = &m->groups[g];
        if (x->tk != SV_TK_LABEL || x->tki == SV_NONE)
            continue;
        int nv = m->tkeys[x->tki].nvals;
        x->lab_match = tlr_arena_calloc(m->ar, (size_t)nv + 1, sizeof(int));
        x->lab_owner = tlr_arena_calloc(m->ar, (size_t)nv + 1, sizeof(int));
    }
    for (int pi = 0; pi < m->npools && m->ntkeys; pi++) {
        sv_pool *p = &m->pools[pi];
        p->tk_mode = tlr_arena_calloc(m->ar, (size_t)m->ntkeys, sizeof(int));
        p->tk_arg = tlr_arena_calloc(m->ar, (size_t)m->ntkeys, sizeof(int));
        p->tk_tval = tlr_arena_calloc(m->ar, (size_t)m->ntkeys, sizeof(int *));
        for (int i = 0; i < m->ntkeys; i++) {
            const sv_tkey *k = &m->tkeys[i];
            const sv_dent *e = sv_dom_get(&p->dom, k->key);
            p->tk_arg[i] = SV_NONE;
            if (e) {
                if (e->any || e->nvals == 0)
                    continue;   /* Exists, NotIn, Gt...: no value known in advance */
                if (e->nvals == 1) {
                    p->tk_mode[i] = SV_TKM_FIXED;
                    p->tk_arg[i] = tk_val_index(k, e->vals[0]);
                    continue;
                }
                for (int j = 0; j < p->ncustom; j++)
                    if (p->custom_key[j] == k->key)
                        p->tk_arg[i] = j;
                if (p->tk_arg[i] != SV_NONE)
                    p->tk_mode[i] = SV_TKM_CUSTOM;
                continue;
            }
            int *tv = tlr_arena_alloc(m->ar, ((size_t)p->ntypes + 1) * sizeof(int));
            bool any = false;
            for (int pt = 0; pt < p->ntypes; pt++) {
                tv[pt] = sv_tk_value(m, i, &m->types[p->types[pt]].labels);
                any |= tv[pt] != SV_NONE;
            }
            if (any) {
                p->tk_mode[i] = SV_TKM_TYPE;
                p->tk_tval[i] = tv;
            }
        }
    }
}

int sv_tk_value(const sv_model *m, int tki, const sv_dom *d)
{
    const sv_dent *e = sv_dom_get(d, m->tkeys[tki].key);
    if (!e || e->any || e->nvals != 1)
        return SV_NONE;
    return tk_val_index(&m->tkeys[tki], e->vals[0]);
}

int *sv_tk_values(sv_model *m, const sv_dom *d)
{
    if (!m->ntkeys)
        return NULL;
    int *v = tlr_arena_alloc(m->ar, (size_t)m->ntkeys * sizeof(int));
    for (int i = 0; i < m->ntkeys; i++)
        v[i] = sv_tk_value(m, i, d);
    return v;
}

/* ---- the whole model -------------------------------------------------- */

int sv_model_build(sv_model *m, const Tailor__V1__Pod *const *pods, size_t npods,
                   const Tailor__V1__CatalogRef *const *cats, size_t ncats,
                   const Tailor__V1__OfferingUnavailable *const *ice, size_t nice,
                   char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    m->cstrs = 256;
    m->strs = tlr_arena_alloc(m->ar, (size_t)m->cstrs * sizeof(char *));
    m->strs[0] = (char *)"";
    m->nstrs = 1;
    m->k_zone = sv_intern(m, K_ZONE);
    m->k_zone_id = sv_intern(m, K_ZONE_ID);
    m->k_ct = sv_intern(m, K_CT);
    m->k_host = sv_intern(m, K_HOST);
    m->k_type = sv_intern(m, K_TYPE);
    m->k_pool = sv_intern(m, K_POOL);
    m->k_arch = sv_intern(m, K_ARCH);
    m->k_os = sv_intern(m, K_OS);
    m->ndim = 4;
    m->dim_name[0] = "cpu";
    m->dim_name[1] = "memory";
    m->dim_name[2] = "pods";
    m->dim_name[3] = "ephemeral-storage";
    /* Resource names requested by pods come first so they get dimensions. */
    for (size_t i = 0; i < npods; i++) {
        const Tailor__V1__ResourceList *rl = pods[i]->requests;
        for (size_t j = 0; rl && j < rl->n_extended; j++)
            if (rl->extended[j]->value)
                dim_of(m, rl->extended[j]->name, true);
    }
    size_t ntot = 0;
    for (size_t i = 0; i < ncats; i++)
        if (cats[i]->catalog)
            ntot += cats[i]->catalog->n_instance_types;
    m->types = tlr_arena_calloc(m->ar, ntot + 1, sizeof(sv_type));
    int *t0 = tlr_arena_calloc(m->ar, ncats + 1, sizeof(int));
    int *tn = tlr_arena_calloc(m->ar, ncats + 1, sizeof(int));
    for (size_t i = 0; i < ncats; i++) {
        t0[i] = m->ntypes;
        const Tailor__V1__Catalog *cat = cats[i]->catalog;
        for (size_t j = 0; cat && j < cat->n_instance_types; j++)
            if (cat->instance_types[j] && cat->instance_types[j]->name)
                type_build(m, cat->instance_types[j], &m->types[m->ntypes++], ice, nice);
        tn[i] = m->ntypes - t0[i];
    }
    pools_build(m, cats, ncats, t0, tn);
    if (m->pwords_max < 1)
        m->pwords_max = 1;
    classes_build(m, pods, npods);
    existing_anti_groups(m);
    class_matches(m);
    tkeys_build(m);
    for (int c = 0; c < m->nclasses; c++)
        class_levels(m, &m->classes[c]);
    return TLR_OK;
}

/* ---- helpers for place.c ---------------------------------------------- */

sv_dom sv_labels_dom(sv_model *m, Tailor__V1__Label *const *l, size_t n)
{
    dom_b b = { 0 };
    return dom_from_labels(m, l, n, &b);
}

sv_dom sv_dom_extend(sv_model *m, const sv_dom *base, const char *const *k, const char *const *v, int n)
{
    dom_b b = { 0 };
    for (int i = 0; i < base->n; i++)
        domb_add(m, &b, base->e[i].key, base->e[i].vals, base->e[i].nvals, base->e[i].any);
    for (int i = 0; i < n; i++)
        if (v[i] && *v[i])
            domb_add1(m, &b, k[i], v[i]);
    return domb_done(&b);
}

int sv_pod_anti_groups(sv_model *m, const Tailor__V1__Pod *p, const sv_dom *labels, int *out, int max)
{
    int n = 0;
    const Tailor__V1__PodAffinity *a = p->pod_anti_affinity;
    for (size_t j = 0; a && j < a->n_required && n < max; j++) {
        const Tailor__V1__PodAffinityTerm *t = a->required[j];
        int tki;
        int tk = topo_kind(m, t->topology_key, &tki);
        if (TK_UNUSABLE(tk, tki))
            continue;
        sv_reqset extra = label_keys(m, labels, t->match_label_keys, t->n_match_label_keys,
                                     t->mismatch_label_keys, t->n_mismatch_label_keys);
        out[n++] = group_get(m, tk, tki, t->label_selector, &extra, t->all_namespaces, t->namespaces,
                             t->n_namespaces, sv_intern(m, p->namespace_));
    }
    return n;
}
