/* seed.c - LP-guided packing: new claims from the configuration LP.
 *
 * The greedy (place.c) decides node types one class at a time, so it
 * cannot see that two shapes pack better together on a type neither
 * would pick alone.  The configuration LP does: its columns are integer
 * patterns "one node of (NodePool, type) holding a_g pods of each group
 * g", and its solution buys x_p nodes of pattern p at the least total
 * price (lower_bound.c, integer pricing).  Rounding down gives whole
 * nodes whose content is known; what is left over is small (at most one
 * node's worth per basic column) and the greedy places it.
 *
 * Only movable pods take part (no spread, pod affinity or anti-affinity,
 * host ports, no topology group selecting them: the LP ignores topology).
 * NodePool weights hold as in the greedy: each pod is offered only to the
 * first pool, by weight, that can take it, so the LP runs once per pool
 * over that pool's pods; a pod whose pool cannot open a node (limits)
 * stays for the greedy, which falls through to the next pool.
 * Existing capacity comes first: the movable pods are offered to existing
 * nodes and in-flight claims before the LP runs, and the LP sees only the
 * pods left, without existing capacity.  Every pod still goes through
 * room_at, at its first relaxation level, so a seeded claim honours every
 * constraint the greedy would (requirements, taints, DaemonSets, limits);
 * a pod the pattern cannot really take there simply stays for the greedy.
 *
 * solve.c runs this as one more candidate plan and keeps the cheapest, so
 * seeding never makes a plan worse.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_bound_internal.h"
#include "solve_internal.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

/* The pool and pool type of an LP column, or false. */
static bool col_target(const sv_model *m, const sv_lp_col *c, int *pi, int *pt)
{
    for (int p = 0; p < m->npools; p++) {
        const sv_pool *pool = &m->pools[p];
        if (pool->np != c->pool)
            continue;
        for (int t = 0; t < pool->ntypes; t++)
            if (m->types[pool->types[t]].it == c->type) {
                *pi = p;
                *pt = t;
                return true;
            }
    }
    return false;
}

/* Place up to want pods of LP group g from its list on claim b; pods are
 * taken in runs of one class.  Returns how many were placed. */
static int seed_group(sv_model *m, int b, int *list, int *nlist, int want)
{
    int placed = 0, i = 0;
    while (placed < want && i < *nlist) {
        int c = m->pods[list[i]].cls;
        int run = 0;
        while (i + run < *nlist && m->pods[list[i + run]].cls == c && run < want - placed)
            run++;
        int place;
        int r = sv_room_place(m, b, c, 0, run, &place);
        if (r > 0) {
            sv_place_pods(m, b, c, 0, list + i, r, place);
            placed += r;
            /* drop the placed pods from the list */
            memmove(list + i, list + i + r, (size_t)(*nlist - i - r) * sizeof(int));
            *nlist -= r;
        } else {
            i += run;
        }
    }
    return placed;
}

static int pod_cls_cmp(const void *a, const void *b, void *ctx)
{
    const sv_model *m = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int cx = m->pods[x].cls, cy = m->pods[y].cls;
    return cx != cy ? (cx < cy ? -1 : 1) : (x < y ? -1 : x > y);
}

/* The first NodePool, in weight order, that can take class c at its first
 * level (Karpenter tries pools by weight), or SV_NONE. */
static int first_pool(const sv_model *m, const sv_class *cl)
{
    for (int pi = 0; pi < m->npools; pi++)
        if (cl->nlevels > 0 && cl->levels[0].compat[pi])
            return pi;
    return SV_NONE;
}

static void seed_pool(sv_model *m, int pool)
{
    int *sub = tlr_malloc(((size_t)m->npods + 1) * sizeof(int));
    int nsub = 0;
    for (int i = 0; i < m->npods; i++) {
        const sv_class *cl = &m->classes[m->pods[i].cls];
        if (m->pods[i].bin == SV_NONE && !cl->bad && sv_class_movable(cl) && first_pool(m, cl) == pool)
            sub[nsub++] = i;
    }
    if (nsub < 2) {
        free(sub);
        return;
    }
    /* The LP's request: the pods left, the cluster without existing
     * capacity (NodePools, DaemonSets and node classes stay). */
    Tailor__V1__Pod **pods = tlr_malloc((size_t)nsub * sizeof(*pods));
    for (int i = 0; i < nsub; i++)
        pods[i] = (Tailor__V1__Pod *)m->pods[sub[i]].pod;
    Tailor__V1__ClusterState cs;
    if (m->cluster)
        cs = *m->cluster;
    else
        tailor__v1__cluster_state__init(&cs);
    cs.n_nodes = 0;
    cs.nodes = NULL;
    cs.n_nodeclaims = 0;
    cs.nodeclaims = NULL;
    Tailor__V1__NodePool *np = (Tailor__V1__NodePool *)m->pools[pool].np;
    cs.n_nodepools = 1;
    cs.nodepools = &np;
    Tailor__V1__SolveRequest req;
    tailor__v1__solve_request__init(&req);
    req.cluster = &cs;
    req.pending_pods = pods;
    req.n_pending_pods = (size_t)nsub;
    req.catalogs = (Tailor__V1__CatalogRef **)m->cats;
    req.n_catalogs = m->ncats;
    req.unavailable_offerings = (Tailor__V1__OfferingUnavailable **)m->ice;
    req.n_unavailable_offerings = m->nice;
    req.now_unix_ms = m->now_ms;
    sv_lp_opts lo = { .integer = true, .deadline_ns = m->seed_deadline_ns };
    sv_lp_plan *plan = NULL;
    if (sv_lp_plan_solve(&req, &lo, &plan) != TLR_OK || !plan) {
        free(pods);
        free(sub);
        return;
    }
    /* Per LP group, its pods (model indices), sorted by class. */
    int ng = plan->ngroups;
    int *gstart = tlr_calloc((size_t)ng + 2, sizeof(int));
    int *glen = tlr_calloc((size_t)ng + 1, sizeof(int));
    int *gpods = tlr_malloc(((size_t)nsub + 1) * sizeof(int));
    for (int i = 0; i < nsub; i++)
        if (plan->pod_group[i] >= 0 && plan->pod_group[i] < ng)
            gstart[plan->pod_group[i] + 1]++;
    for (int g = 0; g < ng; g++)
        gstart[g + 1] += gstart[g];
    for (int i = 0; i < nsub; i++) {
        int g = plan->pod_group[i];
        if (g >= 0 && g < ng)
            gpods[gstart[g] + glen[g]++] = sub[i];
    }
    for (int g = 0; g < ng; g++)
        qsort_r(gpods + gstart[g], (size_t)glen[g], sizeof(int), pod_cls_cmp, m);
    /* Whole nodes of every column, most expensive types first (they carry
     * the most pods; the greedy is worst at choosing them). */
    int *order = tlr_malloc(((size_t)plan->ncols + 1) * sizeof(int));
    for (int i = 0; i < plan->ncols; i++)
        order[i] = i;
    for (int i = 1; i < plan->ncols; i++)
        for (int j = i; j > 0 && plan->cols[order[j]].price > plan->cols[order[j - 1]].price; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int oi = 0; oi < plan->ncols; oi++) {
        const sv_lp_col *c = &plan->cols[order[oi]];
        int pi, pt;
        int nodes = (int)floor(c->x + 1e-6);
        if (nodes < 1 || !col_target(m, c, &pi, &pt))
            continue;
        for (int k = 0; k < nodes; k++) {
            int b = sv_claim_open_target(m, pi, pt);
            if (b == SV_NONE)
                break;
            for (int j = 0; j < c->n; j++) {
                int g = c->group[j];
                int want = (int)floor(c->count[j] + 1e-6);
                if (g < 0 || g >= ng || want <= 0)
                    continue;
                (void)seed_group(m, b, gpods + gstart[g], &glen[g], want);
            }
            bool empty = m->bins[b].npods == 0;
            sv_claim_commit(m, b);
            if (empty)
                break;
        }
    }
    /* Then one node of each column with a fractional part, the largest
     * parts first, while movable pods are left: the pods those parts
     * stand for.  A node that ends up half full is downsized when its
     * options are emitted (the cheapest type holding its content). */
    int left = 0;
    for (int g = 0; g < ng; g++)
        left += glen[g];
    for (int i = 1; i < plan->ncols; i++)
        for (int j = i; j > 0; j--) {
            const sv_lp_col *a = &plan->cols[order[j]], *b = &plan->cols[order[j - 1]];
            double fa = a->x - floor(a->x + 1e-6), fb = b->x - floor(b->x + 1e-6);
            if (fa <= fb)
                break;
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int oi = 0; oi < plan->ncols && left > 0; oi++) {
        const sv_lp_col *c = &plan->cols[order[oi]];
        int pi, pt;
        if (c->x - floor(c->x + 1e-6) < 1e-6 || !col_target(m, c, &pi, &pt))
            continue;
        int b = sv_claim_open_target(m, pi, pt);
        if (b == SV_NONE)
            continue;
        for (int j = 0; j < c->n; j++) {
            int g = c->group[j];
            int want = (int)ceil(c->count[j] - 1e-6);
            if (g < 0 || g >= ng || want <= 0)
                continue;
            left -= seed_group(m, b, gpods + gstart[g], &glen[g], want);
        }
        sv_claim_commit(m, b);
    }
    free(order);
    free(gstart);
    free(glen);
    free(gpods);
    sv_lp_plan_free(plan);
    free(pods);
    free(sub);
}

void sv_seed(sv_model *m)
{
    /* Existing capacity first, for the movable classes, in class order. */
    for (int pos = 0; pos < m->nclasses; pos++) {
        int c = m->class_order[pos];
        if (!m->classes[c].bad && sv_class_movable(&m->classes[c]))
            sv_place_existing(m, c);
    }
    /* Then, pool by pool in weight order, the pods each pool comes first
     * for. */
    for (int pi = 0; pi < m->npools; pi++)
        seed_pool(m, pi);
}
