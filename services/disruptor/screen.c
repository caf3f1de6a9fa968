/* screen.c - a lower bound on what new nodes for some nodes' pods cost
 * (screen.h says why each step is sound). */
#include "screen.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_labels.h"

/* A figure nothing reaches: unknown room.  Small enough that a few
 * thousand of them add up without overflowing. */
#define BIG (INT64_MAX / (1 << 20))

enum { CPU, MEM, PODS, NDIM };

typedef struct bin {
    int64_t v[NDIM];
} bin;

struct ds_screen {
    const ds_view *v;
    bin *node;                  /* owned; free room of v->nodes[i] */
    bin *claim;                 /* owned; NodeClaims of no node */
    size_t nclaim;
    double unit[NDIM];          /* USD/hour per milli-cpu, byte, pod slot; INFINITY: no type */
    int64_t big[NDIM];          /* the most of each any such type holds */
};

static int64_t clamp0(int64_t x)
{
    return x > 0 ? x : 0;
}

static int64_t max3(int64_t a, int64_t b, int64_t c)
{
    int64_t m = a > b ? a : b;
    return m > c ? m : c;
}

/* What the solver may take a type's allocatable to be, at most. */
static void type_alloc(const Tailor__V1__InstanceType *it, int64_t out[NDIM])
{
    const Tailor__V1__ResourceList *a = it->allocatable, *c = it->capacity;
    out[CPU] = max3(a ? a->cpu_millis : 0, c ? c->cpu_millis : 0, 0);
    out[MEM] = max3(a ? a->memory_bytes : 0, c ? c->memory_bytes : 0, 0);
    out[PODS] = max3(a ? a->pods : 0, c ? c->pods : 0, it->max_pods);
    if (!out[PODS])
        out[PODS] = 110;
}

static const Tailor__V1__InstanceType *find_type(const Tailor__V1__Catalog *cat, const char *name)
{
    for (size_t i = 0; cat && name && i < cat->n_instance_types; i++)
        if (!strcmp(cat->instance_types[i]->name, name))
            return cat->instance_types[i];
    return NULL;
}

/* ---- bins ---------------------------------------------------------------- */

static void node_room(const Tailor__V1__Node *nd, bin *b)
{
    const Tailor__V1__ResourceList *al = nd->allocatable, *rq = nd->requested;
    /* a figure the node does not report is filled in by the solver from
     * its claim: unbounded here */
    int64_t a[NDIM] = { al && al->cpu_millis ? al->cpu_millis : BIG,
                        al && al->memory_bytes ? al->memory_bytes : BIG,
                        al && al->pods ? al->pods : BIG };
    int64_t r[NDIM] = { rq ? rq->cpu_millis : 0, rq ? rq->memory_bytes : 0, rq ? rq->pods : 0 };
    for (int d = 0; d < NDIM; d++)
        b->v[d] = a[d] >= BIG ? BIG : clamp0(a[d] - r[d]);
}

/* Widen a to type name's allocatable; false when the catalog lacks it. */
static bool widen(const Tailor__V1__Catalog *cat, const char *name, int64_t a[NDIM])
{
    const Tailor__V1__InstanceType *it = find_type(cat, name);
    if (!it)
        return false;
    int64_t t[NDIM];
    type_alloc(it, t);
    for (int d = 0; d < NDIM; d++)
        a[d] = t[d] > a[d] ? t[d] : a[d];
    return true;
}

/* A claim in flight: the largest allocatable it may come with (its
 * status', its options', the types its requirements name), less its
 * requests.  Unbounded when nothing says, or a type is not in the
 * catalog. */
static void claim_room(const Tailor__V1__Catalog *cat, const Tailor__V1__NodeClaim *nc, bin *b)
{
    int64_t a[NDIM] = { 0, 0, 0 };
    bool known = false, unknown = false;
    const Tailor__V1__ResourceList *st = nc->status ? nc->status->allocatable : NULL;
    if (st && (st->cpu_millis || st->memory_bytes)) {
        a[CPU] = st->cpu_millis;
        a[MEM] = st->memory_bytes;
        a[PODS] = st->pods ? st->pods : 110;
        known = true;
    }
    for (size_t i = 0; i < nc->n_instance_type_options; i++) {
        bool ok = widen(cat, nc->instance_type_options[i]->name, a);
        known = known || ok;
        unknown = unknown || !ok;
    }
    for (size_t r = 0; r < nc->n_requirements; r++) {
        const Tailor__V1__NodeSelectorRequirement *q = nc->requirements[r];
        if (strcmp(q->key, TLR_LABEL_INSTANCE_TYPE) ||
            q->operator_ != TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN)
            continue;
        for (size_t j = 0; j < q->n_values; j++) {
            bool ok = widen(cat, q->values[j], a);
            known = known || ok;
            unknown = unknown || !ok;
        }
    }
    if (!known || unknown) {
        for (int d = 0; d < NDIM; d++)
            b->v[d] = BIG;
        return;
    }
    const Tailor__V1__ResourceList *rq = nc->resources_requested;
    b->v[CPU] = clamp0(a[CPU] - (rq ? rq->cpu_millis : 0));
    b->v[MEM] = clamp0(a[MEM] - (rq ? rq->memory_bytes : 0));
    b->v[PODS] = clamp0(a[PODS] - (rq ? rq->pods : 0));
}

/* ---- unit prices ----------------------------------------------------------- */

static bool has_value(const Tailor__V1__NodeSelectorRequirement *q, const char *v)
{
    for (size_t i = 0; v && i < q->n_values; i++)
        if (!strcmp(q->values[i], v))
            return true;
    return false;
}

/* Does requirement q (In or NotIn) rule out every value of vals[0..n)?
 * Other operators, and no values known, rule out nothing. */
static bool rules_out(const Tailor__V1__NodeSelectorRequirement *q, const char *const *vals, size_t n)
{
    bool in = q->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    bool notin = q->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN;
    if ((!in && !notin) || !n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (has_value(q, vals[i]) == in)
            return false;   /* this value is allowed */
    return true;
}

/* The values type it defines for key (at most max), as labels. */
static size_t type_values(const Tailor__V1__InstanceType *it, const char *key, const char **out, size_t max)
{
    size_t n = 0;
    if (!strcmp(key, TLR_LABEL_INSTANCE_TYPE) && n < max)
        out[n++] = it->name;
    if (!strcmp(key, TLR_LABEL_ARCH) && it->arch && *it->arch && n < max)
        out[n++] = it->arch;
    if (!strcmp(key, TLR_LABEL_OS)) {
        for (size_t i = 0; i < it->n_operating_systems && n < max; i++)
            out[n++] = it->operating_systems[i];
        if (!it->n_operating_systems && n < max)
            out[n++] = "linux";
    }
    for (size_t r = 0; r < it->n_requirements; r++) {
        const Tailor__V1__NodeSelectorRequirement *q = it->requirements[r];
        if (strcmp(q->key, key) || q->operator_ != TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN)
            continue;
        for (size_t j = 0; j < q->n_values && n < max; j++)
            out[n++] = q->values[j];
    }
    return n;
}

static bool pool_rules_out_type(const Tailor__V1__NodePool *p, const Tailor__V1__InstanceType *it)
{
    for (size_t r = 0; r < p->n_requirements; r++) {
        const Tailor__V1__NodeSelectorRequirement *q = p->requirements[r];
        /* zone and capacity type are per offering (offer_allowed) */
        if (!strcmp(q->key, TLR_LABEL_ZONE) || !strcmp(q->key, TLR_LABEL_CAPACITY_TYPE))
            continue;
        const char *vals[64];
        size_t n = type_values(it, q->key, vals, 64);
        if (n < 64 && rules_out(q, vals, n))
            return true;
    }
    return false;
}

static bool offer_allowed(const Tailor__V1__NodePool *p, const Tailor__V1__Offering *o)
{
    static const char *const cts[] = { "", "on-demand", "spot", "reserved" };
    const char *ct = o->capacity_type >= 1 && o->capacity_type <= 3 ? cts[o->capacity_type] : NULL;
    for (size_t r = 0; r < p->n_requirements; r++) {
        const Tailor__V1__NodeSelectorRequirement *q = p->requirements[r];
        if (!strcmp(q->key, TLR_LABEL_ZONE) && o->zone && *o->zone &&
            rules_out(q, (const char *const[]){ o->zone }, 1))
            return false;
        if (!strcmp(q->key, TLR_LABEL_CAPACITY_TYPE) && ct && rules_out(q, &ct, 1))
            return false;
    }
    return true;
}

static void unit_prices(const ds_view *v, double unit[NDIM], int64_t big[NDIM])
{
    for (int d = 0; d < NDIM; d++) {
        unit[d] = INFINITY;
        big[d] = 0;
    }
    const Tailor__V1__Catalog *cat = v->catalog;
    const Tailor__V1__ClusterState *cs = v->cs;
    for (size_t t = 0; cat && cs && t < cat->n_instance_types; t++) {
        const Tailor__V1__InstanceType *it = cat->instance_types[t];
        double price = INFINITY;
        for (size_t p = 0; p < cs->n_nodepools; p++) {
            const Tailor__V1__NodePool *np = cs->nodepools[p];
            if (pool_rules_out_type(np, it))
                continue;
            for (size_t o = 0; o < it->n_offerings; o++) {
                const Tailor__V1__Offering *of = it->offerings[o];
                if (of->price_per_hour >= 0 && of->price_per_hour < price && offer_allowed(np, of))
                    price = of->price_per_hour;
            }
        }
        if (isinf(price))
            continue;
        int64_t a[NDIM];
        type_alloc(it, a);
        for (int d = 0; d < NDIM; d++) {
            double u = a[d] > 0 ? price / (double)a[d] : 0;   /* holds none: no bound from d */
            if (u < unit[d])
                unit[d] = u;
            if (a[d] > big[d])
                big[d] = a[d];
        }
    }
}

/* ---- the bound ---------------------------------------------------------------- */

static int by_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
    return x < y ? -1 : x > y;
}

void ds_screen_create(const ds_view *v, ds_screen **out)
{
    ds_screen *s = tlr_calloc(1, sizeof(*s));
    s->v = v;
    s->node = tlr_calloc(v->nnodes + 1, sizeof(*s->node));
    for (size_t i = 0; i < v->nnodes; i++)
        node_room(v->nodes[i].node, &s->node[i]);
    const Tailor__V1__ClusterState *cs = v->cs;
    size_t nc = cs ? cs->n_nodeclaims : 0;
    s->claim = tlr_calloc(nc + 1, sizeof(*s->claim));
    /* the claims of no node: a node's claim is its node (sim.h) */
    const Tailor__V1__NodeClaim **linked = tlr_calloc(v->nnodes + 1, sizeof(*linked));
    size_t nl = 0;
    for (size_t i = 0; i < v->nnodes; i++)
        if (v->nodes[i].claim)
            linked[nl++] = v->nodes[i].claim;
    qsort(linked, nl, sizeof(*linked), by_ptr);
    for (size_t i = 0; i < nc; i++) {
        const Tailor__V1__NodeClaim *c = cs->nodeclaims[i];
        if (!bsearch(&c, linked, nl, sizeof(*linked), by_ptr))
            claim_room(v->catalog, c, &s->claim[s->nclaim++]);
    }
    free(linked);
    unit_prices(v, s->unit, s->big);
    *out = s;
}

void ds_screen_free(ds_screen *s)
{
    if (!s)
        return;
    free(s->node);
    free(s->claim);
    free(s);
}

static int by_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

typedef struct need {
    int64_t total[NDIM];
    int64_t min_cpu, min_mem;
    int64_t *top_cpu, *top_mem;   /* top_x[k]: the k largest requests summed */
    size_t n;
} need;

/* What bin b can take of the moving pods, at most, into got. */
static void take(const need *nd, const bin *b, int64_t got[NDIM])
{
    int64_t k = b->v[PODS] < (int64_t)nd->n ? b->v[PODS] : (int64_t)nd->n;
    if (nd->min_cpu > 0 && b->v[CPU] / nd->min_cpu < k)
        k = b->v[CPU] / nd->min_cpu;
    if (nd->min_mem > 0 && b->v[MEM] / nd->min_mem < k)
        k = b->v[MEM] / nd->min_mem;
    got[CPU] += b->v[CPU] < nd->top_cpu[k] ? b->v[CPU] : nd->top_cpu[k];
    got[MEM] += b->v[MEM] < nd->top_mem[k] ? b->v[MEM] : nd->top_mem[k];
    got[PODS] += k;
}

/* What of the moving pods' cpu, memory and pod count of set[0..n) the
 * other capacity cannot take, at least, into left. */
static void residual(const ds_screen *s, ds_vnode *const *set, size_t n, int64_t left[NDIM])
{
    const ds_view *v = s->v;
    need nd = { .min_cpu = INT64_MAX, .min_mem = INT64_MAX };
    for (size_t i = 0; i < n; i++)
        nd.n += set[i]->node->n_pods;
    int64_t *cpu = tlr_calloc(nd.n + 1, sizeof(*cpu)), *mem = tlr_calloc(nd.n + 1, sizeof(*mem));
    nd.n = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < set[i]->node->n_pods; j++) {
            const Tailor__V1__Pod *p = set[i]->node->pods[j];
            if (!ds_pod_moves(p))
                continue;
            cpu[nd.n] = p->requests ? clamp0(p->requests->cpu_millis) : 0;
            mem[nd.n] = p->requests ? clamp0(p->requests->memory_bytes) : 0;
            nd.min_cpu = cpu[nd.n] < nd.min_cpu ? cpu[nd.n] : nd.min_cpu;
            nd.min_mem = mem[nd.n] < nd.min_mem ? mem[nd.n] : nd.min_mem;
            nd.total[CPU] += cpu[nd.n];
            nd.total[MEM] += mem[nd.n];
            nd.n++;
        }
    nd.total[PODS] = (int64_t)nd.n;
    for (int d = 0; d < NDIM; d++)
        left[d] = 0;
    if (!nd.n)
        goto out;
    qsort(cpu, nd.n, sizeof(*cpu), by_desc);
    qsort(mem, nd.n, sizeof(*mem), by_desc);
    nd.top_cpu = tlr_calloc(nd.n + 1, sizeof(int64_t));
    nd.top_mem = tlr_calloc(nd.n + 1, sizeof(int64_t));
    for (size_t k = 0; k < nd.n; k++) {
        nd.top_cpu[k + 1] = nd.top_cpu[k] + cpu[k];
        nd.top_mem[k + 1] = nd.top_mem[k] + mem[k];
    }
    bool *in = tlr_calloc(v->nnodes + 1, sizeof(*in));
    for (size_t i = 0; i < n; i++)
        in[set[i] - v->nodes] = true;
    int64_t got[NDIM] = { 0, 0, 0 };
    for (size_t i = 0; i < v->nnodes; i++)
        if (!in[i])
            take(&nd, &s->node[i], got);
    for (size_t i = 0; i < s->nclaim; i++)
        take(&nd, &s->claim[i], got);
    free(in);
    for (int d = 0; d < NDIM; d++)
        left[d] = clamp0(nd.total[d] - got[d]);
    free(nd.top_cpu);
    free(nd.top_mem);
out:
    free(cpu);
    free(mem);
}

double ds_screen_floor(const ds_screen *s, ds_vnode *const *set, size_t n)
{
    int64_t left[NDIM];
    residual(s, set, n, left);
    double floor = 0;
    for (int d = 0; d < NDIM; d++) {
        double f = left[d] ? (double)left[d] * s->unit[d] : 0;
        if (f > floor)
            floor = f;
    }
    return floor;
}

bool ds_screen_may_fit(const ds_screen *s, ds_vnode *const *set, size_t n, int max_new)
{
    int64_t left[NDIM];
    residual(s, set, n, left);
    /* max_new nodes hold at most max_new times the largest of each (a
     * type's figures are far below INT64_MAX / DS_SPLIT_MAX) */
    for (int d = 0; d < NDIM; d++)
        if (left[d] > (max_new > 0 ? max_new : 0) * s->big[d])
            return false;
    return true;
}
