/* emit.c - turn a placed model into SolveResponse / SimulateResponse parts.
 *
 * Everything emitted is allocated from the response's own arena (m->out,
 * see solve.c), so a response of 100k pods costs a few bump allocations
 * instead of a million mallocs, and tlr_solve_response_free() frees it in
 * one go.  Unset strings stay protobuf-c's shared empty string.
 *
 * A new claim's options are every candidate type that still holds the
 * claim's pods plus the DaemonSets landing on it, has an available offering
 * in the claim's zones and capacity types, and (for a NodePool with limits)
 * is no larger than what was charged to the limits; cheapest first, at
 * most max_instance_types, with minValues kept by taking the cheapest type
 * of each missing value first.  Ranking walks the pool's types in price
 * order (one sorted list per place mask), and the option messages and
 * names are shared across claims (claim_opts_emit), so a response of
 * thousands of claims stays a few MiB.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve_internal.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_labels.h"

char *sv_ostrdup(tlr_arena *oa, const char *s)
{
    return tlr_arena_strdup(oa, s ? s : "");
}

static Tailor__V1__NodeSelectorRequirement *nsr_new(tlr_arena *oa, const char *key, int op, const char *const *vals,
                                                    size_t n, int minv)
{
    Tailor__V1__NodeSelectorRequirement *r = tlr_arena_alloc(oa, sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = sv_ostrdup(oa, key);
    r->operator_ = op;
    r->min_values = minv;
    r->n_values = n;
    r->values = n ? tlr_arena_alloc(oa, n * sizeof(char *)) : NULL;
    for (size_t i = 0; i < n; i++)
        r->values[i] = sv_ostrdup(oa, vals[i]);
    return r;
}

/* Like nsr_new, but vals (n of them, already in oa) become the values. */
static Tailor__V1__NodeSelectorRequirement *nsr_shared(tlr_arena *oa, const char *key, int op, char **vals,
                                                       size_t n, int minv)
{
    Tailor__V1__NodeSelectorRequirement *r = nsr_new(oa, key, op, NULL, 0, minv);
    r->n_values = n;
    r->values = vals;
    return r;
}

static Tailor__V1__NodeSelectorRequirement *nsr_copy(tlr_arena *oa, const Tailor__V1__NodeSelectorRequirement *s)
{
    return nsr_new(oa, s->key, s->operator_, (const char *const *)s->values, s->n_values, s->min_values);
}

static Tailor__V1__ResourceList *rl_new(const sv_model *m, const sv_res *r)
{
    tlr_arena *oa = m->out;
    Tailor__V1__ResourceList *l = tlr_arena_alloc(oa, sizeof(*l));
    tailor__v1__resource_list__init(l);
    l->cpu_millis = r->v[SV_DIM_CPU];
    l->memory_bytes = r->v[SV_DIM_MEM];
    l->pods = r->v[SV_DIM_PODS];
    l->ephemeral_storage_bytes = r->v[SV_DIM_EPH];
    for (int d = 4; d < m->ndim; d++)
        if (r->v[d])
            l->n_extended++;
    l->extended = l->n_extended ? tlr_arena_alloc(oa, l->n_extended * sizeof(*l->extended)) : NULL;
    size_t k = 0;
    for (int d = 4; d < m->ndim; d++)
        if (r->v[d]) {
            Tailor__V1__ExtendedResource *x = tlr_arena_alloc(oa, sizeof(*x));
            tailor__v1__extended_resource__init(x);
            x->name = sv_ostrdup(oa, m->dim_name[d]);
            x->value = r->v[d];
            l->extended[k++] = x;
        }
    /* sorted by name, as resources.proto asks */
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && strcmp(l->extended[j - 1]->name, l->extended[j]->name) > 0; j--) {
            Tailor__V1__ExtendedResource *t = l->extended[j];
            l->extended[j] = l->extended[j - 1];
            l->extended[j - 1] = t;
        }
    return l;
}

static Tailor__V1__Taint **taints_copy(tlr_arena *oa, Tailor__V1__Taint *const *src, size_t n)
{
    if (!n)
        return NULL;
    Tailor__V1__Taint **out = tlr_arena_alloc(oa, n * sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        out[i] = tlr_arena_alloc(oa, sizeof(**out));
        tailor__v1__taint__init(out[i]);
        out[i]->key = sv_ostrdup(oa, src[i]->key);
        out[i]->value = sv_ostrdup(oa, src[i]->value);
        out[i]->effect = src[i]->effect;
    }
    return out;
}

static Tailor__V1__Label *label_new(tlr_arena *oa, const char *k, const char *v)
{
    Tailor__V1__Label *l = tlr_arena_alloc(oa, sizeof(*l));
    tailor__v1__label__init(l);
    l->key = sv_ostrdup(oa, k);
    l->value = sv_ostrdup(oa, v);
    return l;
}

static int label_cmp(const void *a, const void *b)
{
    return strcmp((*(Tailor__V1__Label *const *)a)->key, (*(Tailor__V1__Label *const *)b)->key);
}

/* ---- claim options ---------------------------------------------------- */

typedef struct opt {
    int pt;
    int rank;       /* by name, for ties */
    double price;
} opt;

/* A pool's types with an offering in one place mask, cheapest first (ties
 * by name): claims with the same mask share it, so ranking a claim's
 * options is one walk that stops at the max_instance_types-th fitting type
 * instead of a price lookup, a selection and a sort per claim. */
typedef struct price_order {
    sv_pmask pm;
    opt *o;
    int n;
    struct price_order *next;
} price_order;

/* A claim's emitted options: k of them (pool types pts, prices), as the
 * option messages and the instance-type requirement's values. */
typedef struct emitted_opts {
    int k;
    int *pts;
    double *prices;
    Tailor__V1__InstanceTypeOption **msgs;
    char **names;
} emitted_opts;

/* A candidate type of a claim with the pods it holds (sv_minv_room). */
typedef struct minv_t {
    int pt;
    int q;
} minv_t;

/* Work arrays for one claim, sized for the largest pool, reused. */
typedef struct scratch {
    opt *o, *picked;
    bool *taken;
    sv_id *vals;
    int nvals;
    price_order **orders;      /* per pool: a short list, one per mask */
    /* Emitting: per pool and pool type, the response's copy of the type's
     * name and its last option message (shared by every claim offering the
     * type at that price); per pool, the last claim's option list, reused
     * whole by a claim with the same options.  All in the response arena. */
    char ***name;
    Tailor__V1__InstanceTypeOption ***msg;
    emitted_opts *last;
    /* minValues while placing (sv_minv_room): candidate types with the
     * pods each holds, and the distinct values seen of one key */
    minv_t *mq;
    sv_id *mseen;
    int nmseen;
} scratch;

static int opt_cmp(const void *a, const void *b)
{
    const opt *x = a, *y = b;
    if (x->price != y->price)
        return x->price < y->price ? -1 : 1;
    return x->rank - y->rank;
}

static int rank_cmp(const void *a, const void *b, void *arg)
{
    const sv_model *m = ((void **)arg)[0];
    const sv_pool *p = ((void **)arg)[1];
    return strcmp(sv_str(m, m->types[p->types[*(const int *)a]].name),
                  sv_str(m, m->types[p->types[*(const int *)b]].name));
}

static scratch *scratch_get(sv_model *m)
{
    if (m->scratch)
        return m->scratch;
    int max = 1;
    for (int i = 0; i < m->npools; i++)
        if (m->pools[i].ntypes + 1 > max)
            max = m->pools[i].ntypes + 1;
    scratch *s = tlr_arena_calloc(m->ar, 1, sizeof(*s));
    s->o = tlr_arena_alloc(m->ar, (size_t)max * sizeof(opt));
    s->picked = tlr_arena_alloc(m->ar, (size_t)max * sizeof(opt));
    s->taken = tlr_arena_alloc(m->ar, (size_t)max * sizeof(bool));
    /* distinct values of one key: a type may bring several (zones) */
    s->nvals = max + SV_MAXZONE * 4;
    s->vals = tlr_arena_alloc(m->ar, (size_t)s->nvals * sizeof(sv_id));
    s->orders = tlr_arena_calloc(m->ar, (size_t)m->npools + 1, sizeof(price_order *));
    s->mq = tlr_arena_alloc(m->ar, (size_t)max * sizeof(*s->mq));
    s->nmseen = max + SV_MAXZONE * 4;
    s->mseen = tlr_arena_alloc(m->ar, (size_t)s->nmseen * sizeof(sv_id));
    m->scratch = s;
    return s;
}

static const int *pool_rank(sv_model *m, sv_pool *p)
{
    if (p->rank)
        return p->rank;
    int *order = tlr_arena_alloc(m->ar, ((size_t)p->ntypes + 1) * sizeof(int));
    for (int i = 0; i < p->ntypes; i++)
        order[i] = i;
    const void *arg[2] = { m, p };
    qsort_r(order, (size_t)p->ntypes, sizeof(int), rank_cmp, arg);
    p->rank = tlr_arena_alloc(m->ar, ((size_t)p->ntypes + 1) * sizeof(int));
    for (int i = 0; i < p->ntypes; i++)
        p->rank[order[i]] = i;
    return p->rank;
}

static const price_order *order_for(sv_model *m, int pi, sv_pmask pm)
{
    scratch *s = scratch_get(m);
    for (price_order *po = s->orders[pi]; po; po = po->next)
        if (po->pm.w[0] == pm.w[0] && po->pm.w[1] == pm.w[1])
            return po;
    sv_pool *p = &m->pools[pi];
    const int *rank = pool_rank(m, p);
    price_order *po = tlr_arena_alloc(m->ar, sizeof(*po));
    po->pm = pm;
    po->o = tlr_arena_alloc(m->ar, ((size_t)p->ntypes + 1) * sizeof(opt));
    po->n = 0;
    for (int pt = 0; pt < p->ntypes; pt++) {
        double price = sv_type_price(m, p->types[pt], pm, NULL);
        if (price < 0)
            continue;
        po->o[po->n].pt = pt;
        po->o[po->n].rank = rank[pt];
        po->o[po->n++].price = price;
    }
    qsort(po->o, (size_t)po->n, sizeof(opt), opt_cmp);
    po->next = s->orders[pi];
    s->orders[pi] = po;
    return po;
}

/* The candidate options of new claim x, cheapest first in o[0..k) where k
 * is the return value capped at want (all of them when want < 0). */
static int claim_options(sv_model *m, const sv_bin *x, opt *o, int want)
{
    const sv_pool *p = &m->pools[x->pool];
    const price_order *po = order_for(m, x->pool, x->pmask);
    bool limited = p->limited;
    int n = 0;
    for (int i = 0; i < po->n && (want < 0 || n < want); i++) {
        int pt = po->o[i].pt;
        if (!sv_bit(x->cand, pt) || !sv_pool_type_fits(m, p, pt, &x->used))
            continue;
        if (limited) {
            bool ok = true;
            for (int d = 0; d < m->ndim && ok; d++)
                ok = m->types[p->types[pt]].cap.v[d] <= x->charged.v[d];
            if (!ok)
                continue;
        }
        o[n++] = po->o[i];
    }
    return n;
}

double sv_claim_cost(sv_model *m, int b)
{
    scratch *s = scratch_get(m);
    int n = claim_options(m, &m->bins[b], s->o, 1);
    return n ? s->o[0].price : 0;
}

static int level_min_values(const sv_level *lv, const sv_req **out, int n, int max)
{
    for (int i = 0; i < lv->reqs.n && n < max; i++)
        if (lv->reqs.r[i].min_values > 0)
            out[n++] = &lv->reqs.r[i];
    return n;
}

/* minValues requirements in force on claim x: its pool's, then those of
 * its classes' levels when levels is set, then extra's (a level about to
 * join; may be NULL). */
static int claim_min_values(const sv_model *m, const sv_bin *x, bool levels, const sv_level *extra,
                            const sv_req **out, int max)
{
    int n = 0;
    const sv_pool *p = &m->pools[x->pool];
    for (int i = 0; i < p->reqs.n && n < max; i++)
        if (p->reqs.r[i].min_values > 0)
            out[n++] = &p->reqs.r[i];
    for (int c = 0; levels && c < x->nclasses; c++)
        n = level_min_values(&m->classes[x->classes[c]].levels[x->lvls[c]], out, n, max);
    if (levels && extra)
        n = level_min_values(extra, out, n, max);
    return n;
}

/* The values instance type t gives key, into out (at most max; returns
 * the count), as Karpenter's SatisfiesMinValues reads a type's own
 * requirements: a label's every value; for an offering key (zone, zone
 * id, capacity type) those of its available offerings, since a type's
 * requirements carry zone In [every zone it is offered in] whatever zone
 * the claim was narrowed to. */
static int type_values(const sv_model *m, int t, sv_id key, sv_id *out, int max)
{
    static const char *const ctn[4] = { "", "on-demand", "spot", "reserved" };
    const sv_type *ty = &m->types[t];
    int n = 0;
    if (key == m->k_zone || key == m->k_zone_id || key == m->k_ct) {
        for (int o = 0; o < ty->noffers && n < max; o++) {
            int pl = ty->offers[o].place;
            sv_id v = key == m->k_zone ? m->zones[pl / 4] : key == m->k_zone_id ? m->zone_ids[pl / 4]
                    : sv_intern((sv_model *)m, ctn[pl % 4]);
            bool dup = !v;
            for (int j = 0; j < n && !dup; j++)
                dup = out[j] == v;
            if (!dup)
                out[n++] = v;
        }
        return n;
    }
    const sv_dent *e = sv_dom_get(&ty->labels, key);
    for (int i = 0; e && i < e->nvals && n < max; i++)
        out[n++] = e->vals[i];
    return n;
}

/* Add to seen[0..*nv) the values type t gives key that it lacks, while
 * *nv < max; returns how many were added. */
static int seen_add(const sv_model *m, int t, sv_id key, sv_id *seen, int *nv, int max)
{
    sv_id v[SV_MAXZONE * 4];
    int n = type_values(m, t, key, v, SV_MAXZONE * 4), added = 0;
    for (int i = 0; i < n && *nv < max; i++) {
        bool dup = !v[i];
        for (int j = 0; j < *nv && !dup; j++)
            dup = seen[j] == v[i];
        if (!dup) {
            seen[(*nv)++] = v[i];
            added++;
        }
    }
    return added;
}

/* Pick at most max options keeping minValues; returns the count and sets
 * *short_by when some minValues cannot be met at all. */
static int pick_options(sv_model *m, const sv_bin *x, opt *o, int n, int max, const sv_req **mv, int nmv,
                        opt *picked, const sv_req **unmet)
{
    const sv_pool *p = &m->pools[x->pool];
    scratch *s = scratch_get(m);
    bool *taken = s->taken;
    memset(taken, 0, (size_t)n * sizeof(bool));
    int k = 0;
    *unmet = NULL;
    for (int r = 0; r < nmv; r++) {
        sv_id *vals = s->vals;
        int nv = 0, need = mv[r]->min_values < s->nvals ? mv[r]->min_values : s->nvals;
        for (int i = 0; i < k && nv < need; i++)
            seen_add(m, p->types[picked[i].pt], mv[r]->key, vals, &nv, need);
        for (int i = 0; i < n && nv < need && k < max; i++) {
            if (taken[i] || !seen_add(m, p->types[o[i].pt], mv[r]->key, vals, &nv, need))
                continue;
            taken[i] = true;
            picked[k++] = o[i];
        }
        if (nv < mv[r]->min_values && !*unmet)
            *unmet = mv[r];
    }
    for (int i = 0; i < n && k < max; i++)
        if (!taken[i])
            picked[k++] = o[i];
    if (nmv)   /* else picked is o's prefix, already cheapest first */
        qsort(picked, (size_t)k, sizeof(opt), opt_cmp);
    return k;
}

/* ---- minValues while placing ------------------------------------------ *
 *
 * Karpenter keeps minValues when a pod joins a NodeClaim, not only when the
 * claim is launched (nodeclaim.go, filterInstanceTypesByRequirements): the
 * instance types left once the pod's requests and requirements are added
 * must still carry at least minValues distinct values of every key that
 * has one, or the pod does not join; it tries the next claim or a new one,
 * and fails only when a claim of its own cannot meet minValues either.
 * Without that, a claim packed to the size of its target type may end up
 * holding content that only one or two families fit, and emitting it would
 * fail every pod on it.
 *
 * room_at (place.c) asks sv_minv_room the same question for k pods at once.
 * The types that hold k more pods shrink as k grows, so the answer is the
 * largest k whose types still meet every requirement.  With q(t) the pods
 * type t holds on top of the claim's content, a requirement's largest k is
 * the minValues-th largest, over distinct values v of its key, of the most
 * pods a type of value v holds: one pass in decreasing q.  The usual case,
 * where want pods leave enough values, is answered first by a scan that
 * stops as soon as every requirement has its values, without sorting.
 *
 * The type set is the one claim_options emits from: candidates of the
 * claim and of the joining level, with an offering in the claim's places
 * (narrowed to the place room_at pins), holding the pods plus the
 * DaemonSets, and for a NodePool with limits no larger than what the claim
 * charges. */

static void minv_scan(sv_model *m)
{
    m->minv_scanned = true;
    for (int i = 0; i < m->npools; i++)
        m->minv_pools |= m->pools[i].has_min_values;
    for (int c = 0; c < m->nclasses && !m->minv_levels; c++)
        for (int l = 0; l < m->classes[c].nlevels && !m->minv_levels; l++) {
            const sv_req *r[1];
            m->minv_levels = level_min_values(&m->classes[c].levels[l], r, 0, 1) > 0;
        }
}

/* Pods of request req that pool type pt holds on top of used, at most
 * want (sv_pool_type_fits' rule: a dimension nothing uses is not checked). */
static int type_room(const sv_model *m, const sv_pool *p, int pt, const sv_res *used, const sv_res *req, int want)
{
    const sv_type *t = &m->types[p->types[pt]];
    const sv_res *ds = &p->ds[pt];
    int k = want;
    for (int d = 0; d < m->ndim && k > 0; d++) {
        int64_t free = t->alloc.v[d] - ds->v[d] - used->v[d];
        if (req->v[d] > 0) {
            int64_t q = free < 0 ? 0 : free / req->v[d];
            if (q < k)
                k = (int)q;
        } else if (used->v[d] && free < 0)
            k = 0;
    }
    return k;
}

/* Over the types of t[0..n) that hold at least atleast pods: the q of the
 * one bringing the min_values-th distinct value of r's key (a type without
 * the label brings none), 0 when the values are too few.  With t sorted by
 * q descending that is the most pods r allows; unsorted, nonzero just
 * means "met". */
static int req_cap(const sv_model *m, const sv_pool *p, const minv_t *t, int n, const sv_req *r, int atleast,
                   sv_id *seen, int nseen)
{
    int nv = 0;
    if (r->min_values > nseen)
        return 0;
    for (int i = 0; i < n; i++) {
        if (t[i].q < atleast)
            continue;
        seen_add(m, p->types[t[i].pt], r->key, seen, &nv, r->min_values);
        if (nv >= r->min_values)
            return t[i].q;
    }
    return 0;
}

static int minv_cmp(const void *a, const void *b)
{
    const minv_t *x = a, *y = b;
    if (x->q != y->q)
        return x->q > y->q ? -1 : 1;
    return x->pt - y->pt;
}

/* sv_minv_room, with the requirement that stops the first pod in *unmet
 * (NULL when it is not minValues). */
static int minv_cap(sv_model *m, int b, int c, int lvi, int want, int place, const sv_req **unmet)
{
    *unmet = NULL;
    if (want <= 0 || m->best_effort_min_values)
        return want;
    if (!m->minv_scanned)
        minv_scan(m);
    if (!m->minv_pools && !m->minv_levels)
        return want;
    const sv_bin *x = &m->bins[b];
    if (x->kind != SV_BIN_NEW)
        return want;
    const sv_class *cl = &m->classes[c];
    const sv_level *lv = &cl->levels[lvi];
    const sv_req *mv[32];
    int nmv = claim_min_values(m, x, m->minv_levels, lv, mv, 32);
    if (!nmv)
        return want;
    int pi = x->pool;
    const sv_pool *p = &m->pools[pi];
    const uint64_t *compat = lv->compat[pi];
    if (!compat)
        return 0;
    sv_pmask pm = sv_pmask_and(x->pmask, lv->pmask[pi]);
    if (place >= 0 && cl->pin_zone && x->zone < 0) {   /* as place_n pins */
        sv_pmask zm = { { 0, 0 } };
        for (int k = 1; k < 4; k++)
            sv_pmask_set(&zm, SV_PLACE(place / 4, k));
        pm = sv_pmask_and(pm, zm);
    }
    if (place >= 0 && cl->pin_ct && x->ct < 0) {
        sv_pmask cm = { { 0, 0 } };
        for (int z = 0; z < m->nzones; z++)
            sv_pmask_set(&cm, SV_PLACE(z, place % 4));
        pm = sv_pmask_and(pm, cm);
    }
    /* limits: emit keeps the options no larger than the claim charges */
    const sv_res *bound = NULL;
    if (p->limited) {
        if (m->strategy == TLR_SOLVE_TAILOR && x->target >= 0)
            bound = &m->types[p->types[x->target]].cap;
        else if (x->npods)
            bound = &x->charged;
    }
    scratch *s = scratch_get(m);
    minv_t *t = s->mq;
    /* The usual answer, want, is found during the scan: it stops once every
     * requirement has its values among types holding all want pods (seen
     * lists side by side in mseen, when they fit; else after the scan). */
    int nv[32], off[32], need = 0, done = 0;
    for (int r = 0; r < nmv; r++) {
        off[r] = need;
        nv[r] = 0;
        need += mv[r]->min_values;
    }
    bool early = need <= s->nmseen;
    int n = 0;
    for (int w = 0; w <= (p->ntypes - 1) / 64; w++) {
        uint64_t bits = x->cand[w] & compat[w];
        while (bits) {
            int pt = w * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            int q = type_room(m, p, pt, &x->used, &cl->req, want);
            if (q <= 0 || sv_type_price(m, p->types[pt], pm, NULL) < 0)
                continue;
            bool ok = true;
            for (int d = 0; bound && d < m->ndim && ok; d++)
                ok = m->types[p->types[pt]].cap.v[d] <= bound->v[d];
            if (!ok)
                continue;
            t[n].pt = pt;
            t[n++].q = q;
            for (int r = 0; early && q == want && r < nmv; r++) {
                if (nv[r] >= mv[r]->min_values)
                    continue;
                seen_add(m, p->types[pt], mv[r]->key, s->mseen + off[r], &nv[r], mv[r]->min_values);
                if (nv[r] >= mv[r]->min_values && ++done == nmv)
                    return want;
            }
        }
    }
    /* the first requirement that want pods leave short of values */
    int r = 0;
    while (r < nmv && (early ? nv[r] >= mv[r]->min_values : req_cap(m, p, t, n, mv[r], want, s->mseen, s->nmseen) > 0))
        r++;
    if (r == nmv)
        return want;
    if (want == 1) {   /* no fewer pods to try: skip the sort */
        *unmet = mv[r];
        return 0;
    }
    qsort(t, (size_t)n, sizeof(minv_t), minv_cmp);
    int k = want;
    for (r = 0; r < nmv && k > 0; r++) {
        int kr = req_cap(m, p, t, n, mv[r], 1, s->mseen, s->nmseen);
        if (kr < k)
            k = kr;
        if (k <= 0)
            *unmet = mv[r];
    }
    return k;
}

int sv_minv_room(sv_model *m, int b, int c, int lv, int want, int place)
{
    if (m->minv_scanned && !m->minv_pools && !m->minv_levels)
        return want;   /* the usual request: room_at's hot path */
    const sv_req *unmet;
    return minv_cap(m, b, c, lv, want, place, &unmet);
}

char *sv_minv_why(sv_model *m, int b, int c, int lv)
{
    const sv_req *unmet;
    if (minv_cap(m, b, c, lv, 1, SV_NONE, &unmet) > 0 || !unmet)
        return NULL;
    return sv_arena_printf(m->ar, "minValues %d for %s cannot be met by the instance types that fit",
                           unmet->min_values, sv_str(m, unmet->key));
}

static bool req_is_offering(const sv_model *m, sv_id key)
{
    return key == m->k_zone || key == m->k_ct || key == m->k_zone_id || key == m->k_type || key == m->k_pool;
}

static void push_req(tlr_arena *oa, Tailor__V1__NodeClaim *nc, size_t *cap,
                     Tailor__V1__NodeSelectorRequirement *r)
{
    if (nc->n_requirements == *cap) {
        size_t nc2 = *cap ? *cap * 2 : 8;
        Tailor__V1__NodeSelectorRequirement **v = tlr_arena_alloc(oa, nc2 * sizeof(*v));
        if (nc->n_requirements)
            memcpy(v, nc->requirements, nc->n_requirements * sizeof(*v));
        nc->requirements = v;
        *cap = nc2;
    }
    nc->requirements[nc->n_requirements++] = r;
}

/* The option messages and names of a claim of pool pi whose options are
 * picked[0..k).  A response of thousands of claims repeats the same few
 * hundred types: each name is copied once per response, each (type,
 * price) option message made once, and a claim whose options equal the
 * previous claim's of the pool shares its arrays.  The response is freed
 * as one arena and never modified after the solve, so sharing is safe. */
static const emitted_opts *claim_opts_emit(sv_model *m, int pi, const opt *picked, int k)
{
    tlr_arena *oa = m->out;
    scratch *s = scratch_get(m);
    const sv_pool *p = &m->pools[pi];
    if (!s->name) {
        s->name = tlr_arena_calloc(m->ar, (size_t)m->npools + 1, sizeof(*s->name));
        s->msg = tlr_arena_calloc(m->ar, (size_t)m->npools + 1, sizeof(*s->msg));
        s->last = tlr_arena_calloc(m->ar, (size_t)m->npools + 1, sizeof(*s->last));
    }
    if (!s->name[pi]) {
        s->name[pi] = tlr_arena_calloc(m->ar, (size_t)p->ntypes + 1, sizeof(char *));
        s->msg[pi] = tlr_arena_calloc(m->ar, (size_t)p->ntypes + 1, sizeof(*s->msg[pi]));
    }
    emitted_opts *last = &s->last[pi];
    bool same = last->msgs && last->k == k;
    for (int i = 0; i < k && same; i++)
        same = last->pts[i] == picked[i].pt && last->prices[i] == picked[i].price;
    if (same)
        return last;
    if (!last->pts || last->k < k) {
        last->pts = tlr_arena_alloc(m->ar, ((size_t)k + 1) * sizeof(int));
        last->prices = tlr_arena_alloc(m->ar, ((size_t)k + 1) * sizeof(double));
    }
    last->k = k;
    last->msgs = tlr_arena_alloc(oa, (size_t)k * sizeof(*last->msgs));
    last->names = tlr_arena_alloc(oa, (size_t)k * sizeof(char *));
    for (int i = 0; i < k; i++) {
        int pt = picked[i].pt;
        last->pts[i] = pt;
        last->prices[i] = picked[i].price;
        if (!s->name[pi][pt])
            s->name[pi][pt] = sv_ostrdup(oa, sv_str(m, m->types[p->types[pt]].name));
        Tailor__V1__InstanceTypeOption *io = s->msg[pi][pt];
        if (!io || io->price_per_hour != picked[i].price) {
            io = tlr_arena_alloc(oa, sizeof(*io));
            tailor__v1__instance_type_option__init(io);
            /* one copy of each name serves the options and requirements */
            io->name = s->name[pi][pt];
            io->price_per_hour = picked[i].price;
            s->msg[pi][pt] = io;
        }
        last->msgs[i] = io;
        last->names[i] = s->name[pi][pt];
    }
    return last;
}

/* Emit claim b; NULL when STRICT minValues cannot be met (pods then fail). */
static Tailor__V1__NodeClaim *claim_emit(sv_model *m, int b, double *cost)
{
    tlr_arena *oa = m->out;
    sv_bin *x = &m->bins[b];
    const sv_pool *p = &m->pools[x->pool];
    const Tailor__V1__NodePool *np = p->np;
    scratch *s = scratch_get(m);
    const sv_req *mv[32];
    int nmv = claim_min_values(m, x, true, NULL, mv, 32);
    opt *o = s->o, *picked = s->picked;
    /* minValues may need types beyond the cheapest max_types */
    int n = claim_options(m, x, o, nmv ? -1 : m->max_types);
    const sv_req *unmet = NULL;
    int k = pick_options(m, x, o, n, m->max_types, mv, nmv, picked, &unmet);
    if (!k)
        return NULL;
    if (unmet) {
        if (!m->best_effort_min_values) {
            for (int i = 0; i < x->npods; i++)
                m->classes[m->pods[x->pods[i]].cls].fail[x->pool] =
                    sv_arena_printf(m->ar, "minValues %d for %s cannot be met by the instance types "
                                    "that fit", unmet->min_values, sv_str(m, unmet->key));
            return NULL;
        }
        x->min_values_relaxed = true;
    }
    Tailor__V1__NodeClaim *nc = tlr_arena_alloc(oa, sizeof(*nc));
    tailor__v1__node_claim__init(nc);
    nc->nodepool = sv_ostrdup(oa, np->name);
    nc->node_class = sv_ostrdup(oa, np->node_class_ref ? np->node_class_ref->name : "");
    const emitted_opts *eo = claim_opts_emit(m, x->pool, picked, k);
    nc->n_instance_type_options = (size_t)k;
    nc->instance_type_options = eo->msgs;
    char **names = eo->names;
    *cost = picked[0].price;
    /* Requirements: pool ∩ pods, then the computed type/zone/capacity. */
    size_t cap = 0;
    const char *pn = np->name;
    push_req(oa, nc, &cap, nsr_new(oa, TLR_LABEL_NODEPOOL,
                               TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN, &pn, 1, 0));
    int type_min = 0;
    for (int i = 0; i < nmv; i++)
        if (mv[i]->key == m->k_type && mv[i]->min_values > type_min)
            type_min = mv[i]->min_values;
    push_req(oa, nc, &cap, nsr_shared(oa, TLR_LABEL_INSTANCE_TYPE,
                                      TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN, names, (size_t)k,
                                      type_min));
    const char *zs[SV_MAXZONE], *cs[3];
    size_t nz = 0, ncs = 0;
    static const char *const ctn[4] = { "", "on-demand", "spot", "reserved" };
    for (int z = 0; z < m->nzones; z++) {
        bool any = false;
        for (int i = 0; i < k && !any; i++) {
            const sv_type *t = &m->types[p->types[picked[i].pt]];
            for (int q = 0; q < t->noffers && !any; q++)
                any = t->offers[q].place / 4 == z && sv_pmask_has(x->pmask, t->offers[q].place);
        }
        if (any)
            zs[nz++] = sv_str(m, m->zones[z]);
    }
    for (int ct = 1; ct < 4; ct++) {
        bool any = false;
        for (int i = 0; i < k && !any; i++) {
            const sv_type *t = &m->types[p->types[picked[i].pt]];
            for (int q = 0; q < t->noffers && !any; q++)
                any = t->offers[q].place % 4 == ct && sv_pmask_has(x->pmask, t->offers[q].place);
        }
        if (any)
            cs[ncs++] = ctn[ct];
    }
    push_req(oa, nc, &cap, nsr_new(oa, TLR_LABEL_ZONE,
                               TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN, zs, nz, 0));
    push_req(oa, nc, &cap, nsr_new(oa, TLR_LABEL_CAPACITY_TYPE,
                               TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN, cs, ncs, 0));
    for (int i = 0; i < p->reqs.n; i++)
        if (!req_is_offering(m, p->reqs.r[i].key))
            push_req(oa, nc, &cap, nsr_copy(oa, p->reqs.r[i].src));
    /* A multi-valued type label the pods narrowed: key In [what pool and
     * pods allow together], as Karpenter's claim requirements read after
     * intersecting (not expressible as In while "no label" is allowed too:
     * the pods' own requirements below say it then).  Pushed before the
     * pods' requirements so a pod's identical one is not repeated. */
    for (int q = 0; q < p->ntmv; q++) {
        uint64_t mk = x->tmv[q];
        if (mk == p->tmv_pool[q] || (mk & 1))
            continue;
        const char *vs[63];
        size_t nv = 0;
        for (int j = 0; j < p->tmv_nvals[q]; j++)
            if ((mk >> (j + 1)) & 1)
                vs[nv++] = sv_str(m, p->tmv_vals[q][j]);
        push_req(oa, nc, &cap, nsr_new(oa, sv_str(m, p->tmv_key[q]),
                                       TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN, vs, nv, 0));
    }
    for (int c = 0; c < x->nclasses; c++) {
        const sv_level *lv = &m->classes[x->classes[c]].levels[x->lvls[c]];
        for (int i = 0; i < lv->reqs.n; i++) {
            const sv_req *r = &lv->reqs.r[i];
            if (req_is_offering(m, r->key))
                continue;
            bool dup = false;
            for (size_t j = 0; j < nc->n_requirements && !dup; j++) {
                const Tailor__V1__NodeSelectorRequirement *e = nc->requirements[j];
                if (strcmp(e->key, r->src->key) || e->operator_ != r->src->operator_ ||
                    e->n_values != r->src->n_values)
                    continue;
                dup = true;
                for (size_t v = 0; v < e->n_values && dup; v++)
                    dup = !strcmp(e->values[v], r->src->values[v]);
            }
            if (!dup)
                push_req(oa, nc, &cap, nsr_copy(oa, r->src));
        }
    }
    /* The topology domain chosen for the claim (a spread on a pool's In
     * values or an instance-type label): key In [value], so the node gets
     * the label. */
    sv_id tk_key[SV_MAXTK], tk_val[SV_MAXTK];
    for (int i = 0, ntk = sv_claim_topo_labels(m, b, tk_key, tk_val, SV_MAXTK); i < ntk; i++) {
        const char *v = sv_str(m, tk_val[i]);
        push_req(oa, nc, &cap, nsr_new(oa, sv_str(m, tk_key[i]), TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN,
                                       &v, 1, 0));
    }
    /* Resources: the pods plus the DaemonSets of the cheapest option. */
    sv_res rr = x->used;
    for (int d = 0; d < m->ndim; d++)
        rr.v[d] += p->ds[picked[0].pt].v[d];
    nc->resources_requested = rl_new(m, &rr);
    nc->n_taints = np->n_taints;
    nc->taints = taints_copy(oa, np->taints, np->n_taints);
    nc->n_startup_taints = np->n_startup_taints;
    nc->startup_taints = taints_copy(oa, np->startup_taints, np->n_startup_taints);
    nc->labels = tlr_arena_alloc(oa, (np->n_labels + 1) * sizeof(*nc->labels));
    for (size_t i = 0; i < np->n_labels; i++)
        nc->labels[nc->n_labels++] = label_new(oa, np->labels[i]->key, np->labels[i]->value);
    nc->labels[nc->n_labels++] = label_new(oa, TLR_LABEL_NODEPOOL, np->name);
    qsort(nc->labels, nc->n_labels, sizeof(*nc->labels), label_cmp);
    nc->annotations = tlr_arena_alloc(oa, (np->n_annotations + 1) * sizeof(*nc->annotations));
    for (size_t i = 0; i < np->n_annotations; i++)
        nc->annotations[nc->n_annotations++] = label_new(oa, np->annotations[i]->key, np->annotations[i]->value);
    if (x->min_values_relaxed)
        nc->annotations[nc->n_annotations++] =
            label_new(oa, TLR_ANNOTATION_MIN_VALUES_RELAXED, "true");
    qsort(nc->annotations, nc->n_annotations, sizeof(*nc->annotations), label_cmp);
    nc->n_planned_pod_uids = (size_t)x->npods;
    nc->planned_pod_uids = x->npods ? tlr_arena_alloc(oa, (size_t)x->npods * sizeof(char *)) : NULL;
    for (int i = 0; i < x->npods; i++)
        nc->planned_pod_uids[i] = sv_ostrdup(oa, m->pods[x->pods[i]].pod->uid);
    nc->expire_after_ms = np->expire_after_ms;
    nc->expire_never = np->expire_never;
    nc->termination_grace_period_ms = np->termination_grace_period_ms;
    nc->nodepool_hash = sv_ostrdup(oa, np->hash);
    nc->creation_unix_ms = m->now_ms;
    return nc;
}

void sv_emit_claims(sv_model *m, Tailor__V1__NodeClaim ***out, size_t *n, double *cost)
{
    tlr_arena *oa = m->out;
    size_t cnt = 0;
    for (int b = m->nexisting; b < m->nbins; b++)
        if (!m->bins[b].dead && m->bins[b].npods)
            cnt++;
    Tailor__V1__NodeClaim **v = cnt ? tlr_arena_alloc(oa, cnt * sizeof(*v)) : NULL;
    size_t k = 0;
    double total = 0;
    for (int b = m->nexisting; b < m->nbins; b++) {
        sv_bin *x = &m->bins[b];
        if (x->dead || !x->npods)
            continue;
        double c = 0;
        Tailor__V1__NodeClaim *nc = claim_emit(m, b, &c);
        if (!nc) {
            for (int i = 0; i < x->npods; i++) {
                m->pods[x->pods[i]].bin = SV_NONE;
                m->pods[x->pods[i]].err = TLR_E_UNSCHEDULABLE;
            }
            x->dead = true;
            continue;
        }
        v[k++] = nc;
        total += c;
    }
    *out = v;
    *n = k;
    *cost = total;
}

/* ---- pod errors ------------------------------------------------------- */

static Tailor__V1__NodePoolReason *reason_new(tlr_arena *oa, const char *pool, const char *why)
{
    Tailor__V1__NodePoolReason *r = tlr_arena_alloc(oa, sizeof(*r));
    tailor__v1__node_pool_reason__init(r);
    r->nodepool = sv_ostrdup(oa, pool);
    r->reason = sv_ostrdup(oa, why);
    return r;
}

void sv_emit_errors(sv_model *m, Tailor__V1__PodError ***out, size_t *n)
{
    tlr_arena *oa = m->out;
    size_t cnt = 0;
    for (int i = 0; i < m->npods; i++)
        if (m->pods[i].bin == SV_NONE)
            cnt++;
    Tailor__V1__PodError **v = cnt ? tlr_arena_alloc(oa, cnt * sizeof(*v)) : NULL;
    size_t k = 0;
    for (int i = 0; i < m->npods; i++) {
        sv_podst *ps = &m->pods[i];
        if (ps->bin != SV_NONE)
            continue;
        sv_class *cl = &m->classes[ps->cls];
        int lvi = ps->level < cl->nlevels ? ps->level : cl->nlevels - 1;
        sv_level *lv = lvi >= 0 ? &cl->levels[lvi] : NULL;
        Tailor__V1__PodError *e = tlr_arena_alloc(oa, sizeof(*e));
        tailor__v1__pod_error__init(e);
        e->pod_uid = sv_ostrdup(oa, ps->pod->uid);
        e->namespace_ = sv_ostrdup(oa, ps->pod->namespace_);
        e->name = sv_ostrdup(oa, ps->pod->name);
        e->reasons = tlr_arena_alloc(oa, ((size_t)m->npools + 1) * sizeof(*e->reasons));
        const char *first = NULL;
        if (ps->err != TLR_E_TIMEOUT && !cl->ignored) {
            for (int pi = 0; pi < m->npools; pi++) {
                const char *why = lv && lv->why[pi] ? lv->why[pi] : cl->fail[pi] ? cl->fail[pi]
                                : cl->bad ? cl->bad
                                : "no new node of this NodePool can take the pod with the other pods";
                if (!first)
                    first = why;
                e->reasons[e->n_reasons++] = reason_new(oa, m->pools[pi].np->name, why);
            }
            if (!m->npools) {
                first = cl->bad ? cl->bad : "no NodePool in the request and no existing node fits";
                e->reasons[e->n_reasons++] = reason_new(oa, "", first);
            }
        }
        e->status = tlr_arena_alloc(oa, sizeof(*e->status));
        tailor__v1__status__init(e->status);
        if (cl->ignored && ps->err != TLR_E_TIMEOUT) {
            /* Karpenter's provisioner drops such a pod before scheduling:
             * its own message, no per-NodePool reasons. */
            e->status->code = TLR_E_INVAL;
            e->status->reason = sv_ostrdup(oa, "Ignored");
            e->status->message = sv_ostrdup(oa, cl->bad);
            v[k++] = e;
            continue;
        }
        e->status->code = (uint32_t)(ps->err ? ps->err : TLR_E_UNSCHEDULABLE);
        e->status->reason = sv_ostrdup(oa, ps->err == TLR_E_TIMEOUT ? "Timeout" : "Unschedulable");
        e->status->message = ps->err == TLR_E_TIMEOUT
            ? sv_arena_printf(oa, "pod %s/%s: the solve ran out of time before placing it",
                        ps->pod->namespace_, ps->pod->name)
            : sv_arena_printf(oa, "pod %s/%s cannot be scheduled: %s", ps->pod->namespace_, ps->pod->name,
                        first ? first : "no node fits");
        v[k++] = e;
    }
    *out = v;
    *n = k;
}

Tailor__V1__Binding *sv_binding_new(tlr_arena *oa, const Tailor__V1__Pod *pod, const sv_bin *x)
{
    Tailor__V1__Binding *b = tlr_arena_alloc(oa, sizeof(*b));
    tailor__v1__binding__init(b);
    b->pod_uid = sv_ostrdup(oa, pod->uid);
    b->namespace_ = sv_ostrdup(oa, pod->namespace_);
    b->name = sv_ostrdup(oa, pod->name);
    if (x->kind == SV_BIN_NODE) {
        b->target_case = TAILOR__V1__BINDING__TARGET_NODE_NAME;
        b->node_name = sv_ostrdup(oa, x->name);
    } else {
        b->target_case = TAILOR__V1__BINDING__TARGET_NODECLAIM_NAME;
        b->nodeclaim_name = sv_ostrdup(oa, x->name);
    }
    return b;
}

void sv_emit_bindings(sv_model *m, Tailor__V1__Binding ***out, size_t *n)
{
    tlr_arena *oa = m->out;
    size_t cnt = 0;
    for (int i = 0; i < m->npods; i++)
        if (m->pods[i].bin != SV_NONE && m->pods[i].bin < m->nexisting)
            cnt++;
    Tailor__V1__Binding **v = cnt ? tlr_arena_alloc(oa, cnt * sizeof(*v)) : NULL;
    size_t k = 0;
    for (int i = 0; i < m->npods; i++)
        if (m->pods[i].bin != SV_NONE && m->pods[i].bin < m->nexisting)
            v[k++] = sv_binding_new(m->out, m->pods[i].pod, &m->bins[m->pods[i].bin]);
    *out = v;
    *n = k;
}
