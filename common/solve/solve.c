/* solve.c - the engine's entry points: tlr_solve() and tlr_simulate().
 *
 * Each call compiles the request into a model in a fresh arena
 * (compile.c), places the pods (place.c), emits the response (emit.c) and
 * frees the arena.  Nothing survives between calls: the engine is a pure
 * function of the request (apart from its own timeout clock).
 *
 * Memory: a response and everything it points to live in one arena of
 * its own, whose pointer sits just before the message (resp_alloc);
 * tlr_solve_response_free() frees that arena.  Responses must therefore
 * never be freed with protobuf-c's free_unpacked.
 *
 * Re-pricing: tailor orders classes and values packings by each class's
 * "unit" (its cheapest cost per pod packed alone).  That ignores what
 * mixing pods of different shapes saves.  For batches up to
 * SV_REPRICE_MAX_PODS pods a second pass runs with each class valued at
 * what its pods actually cost in the first plan (each new claim's price
 * split over its pods by their share of the node), the way column
 * generation re-prices with dual values; the cheaper plan is kept.  It
 * costs one more placement and saves 2-4 % on the benchmark shapes.
 *
 * LP-guided packing: when at least half the pods are free to move (no
 * topology constraint), one more tailor run first opens the whole nodes of
 * the configuration LP's solution for them (seed.c), then places the rest
 * as usual; the cheaper plan is kept.  On the real trace this is the
 * difference between 6.6 % and 1.5 % above the lower bound.
 *
 * Zone pre-assignment: when some pod has a zone topology spread, each
 * spread group is split over its zones up front (zonepin.c) and tailor
 * runs on pods pinned to their zones, plain and re-priced; the cheaper
 * plan is kept (zone_pin_plans).
 *
 * Insurance: with TLR_SOLVE_TAILOR, when the request is small enough that
 * running the baseline too costs little (see SV_INSURE_WORK), both
 * strategies run and the cheaper complete plan is kept, so tailor's plan is
 * never worse than the baseline's on those requests.
 *
 * First-fit decreasing (ffd.c) runs last, both its variants (claims that
 * grow to the largest type that holds them, and claims sized when they
 * open), and the cheaper plan is kept: tailor's plan is never dearer than
 * the plain packer's, which on workloads tailor was not tuned on (a
 * held-out trace, small batches with zone spreads) was up to 11 % cheaper
 * than tailor's own packing (issue 16).  Its movable pods go in runs, so
 * it is cheap next to tailor (tens of ms on 10^4-10^5 pods); its pods with
 * topology constraints scan the bins one by one, so it runs only while
 * those pods times the bins of tailor's plan stay under SV_FFD_SCAN_WORK.
 * TLR_SOLVE_FFD alone also runs both variants and keeps the cheaper.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solve_internal.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

/* pods x (types + existing nodes) under which the baseline runs as well */
#define SV_INSURE_WORK 2000000.0
/* First-fit decreasing runs too when its pods with topology, ports or a
 * pinned domain, which scan the bins one pod at a time, times the bins of
 * tailor's plan stay under this (the others go in runs, see ffd.c) */
#define SV_FFD_SCAN_WORK 2000000.0
/* the LP-guided plan runs when at least this share of pods is movable */
#define SV_SEED_MIN_SHARE 0.5
/* batches up to this many pods get a second, re-priced tailor pass */
#define SV_REPRICE_MAX_PODS 10000

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct sv_input {
    const Tailor__V1__ClusterState *cluster;
    const Tailor__V1__Pod *const *pods;
    size_t npods;
    const Tailor__V1__CatalogRef *const *cats;
    size_t ncats;
    const Tailor__V1__OfferingUnavailable *const *ice;
    size_t nice;
    const Tailor__V1__SolveOptions *opts;
    int64_t now_ms;
    int64_t start_ns;
    bool allow_new;
    int max_new;
    const char *const *removed;
    size_t nremoved;
    bool allow_uninit;
} sv_input;

/* Compile in's request into m (in arena ar), nothing placed yet. */
static void model_init(const sv_input *in, tlr_solve_strategy strategy, tlr_arena *ar, sv_model *m,
                       const double *hint, bool seed, bool sized)
{
    memset(m, 0, sizeof(*m));
    m->cats = in->cats;
    m->ncats = in->ncats;
    m->ice = in->ice;
    m->nice = in->nice;
    m->seed = seed && strategy == TLR_SOLVE_TAILOR;
    m->unit_hint = hint;
    m->ffd_sized = sized && strategy == TLR_SOLVE_FFD;
    m->ar = ar;
    m->cluster = in->cluster;
    m->now_ms = in->now_ms;
    m->strategy = strategy;
    const Tailor__V1__SolveOptions *o = in->opts;
    m->max_types = o && o->max_instance_types > 0 ? o->max_instance_types : 60;
    m->ignore_prefs = o && o->preference_policy == TAILOR__V1__PREFERENCE_POLICY__PREFERENCE_POLICY_IGNORE;
    m->best_effort_min_values =
        o && o->min_values_policy == TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT;
    int64_t tmo = o && o->timeout_ms > 0 ? o->timeout_ms : 60000;
    if (tmo > 86400000)
        tmo = 86400000;   /* a day: more cannot be meant, and ns must not overflow */
    m->deadline_ns = in->start_ns + tmo * 1000000;
    /* The LP may take a third of what is left of the budget. */
    m->seed_deadline_ns = mono_ns() + (m->deadline_ns - mono_ns()) / 3;
    m->allow_new = in->allow_new;
    m->max_new = in->max_new;
    m->removed = in->removed;
    m->nremoved = in->nremoved;
    m->allow_uninit = in->allow_uninit;
    sv_model_build(m, in->pods, in->npods, in->cats, in->ncats, in->ice, in->nice, NULL, 0);
}

static void model_run(const sv_input *in, tlr_solve_strategy strategy, tlr_arena *ar, sv_model *m,
                      const double *hint, bool seed, bool sized)
{
    model_init(in, strategy, ar, m, hint, seed, sized);
    sv_place_all(m);
}

static int unplaced(const sv_model *m)
{
    int n = 0;
    for (int i = 0; i < m->npods; i++)
        if (m->pods[i].bin == SV_NONE)
            n++;
    return n;
}

static double plan_cost(sv_model *m)
{
    double c = 0;
    for (int b = m->nexisting; b < m->nbins; b++)
        if (!m->bins[b].dead && m->bins[b].npods)
            c += sv_claim_cost(m, b);
    return c;
}

/* What each class's pods cost in plan m: every new claim's price split
 * over its pods by their share of the node (sum of normalized requests). */
static void unit_shares(sv_model *m, double *hint)
{
    int *cnt = tlr_calloc((size_t)m->nclasses + 1, sizeof(int));
    for (int b = m->nexisting; b < m->nbins; b++) {
        sv_bin *x = &m->bins[b];
        if (x->dead || !x->npods)
            continue;
        double price = sv_claim_cost(m, b);
        const sv_pool *p = &m->pools[x->pool];
        const sv_type *t = &m->types[p->types[x->target >= 0 ? x->target : 0]];
        double tot = 0;
        for (int i = 0; i < x->npods; i++) {
            const sv_class *c = &m->classes[m->pods[x->pods[i]].cls];
            for (int d = 0; d < m->ndim; d++)
                if (t->alloc.v[d] > 0 && d != SV_DIM_PODS)
                    tot += (double)c->req.v[d] / (double)t->alloc.v[d];
        }
        if (tot <= 0)
            continue;
        for (int i = 0; i < x->npods; i++) {
            int ci = m->pods[x->pods[i]].cls;
            const sv_class *c = &m->classes[ci];
            double w = 0;
            for (int d = 0; d < m->ndim; d++)
                if (t->alloc.v[d] > 0 && d != SV_DIM_PODS)
                    w += (double)c->req.v[d] / (double)t->alloc.v[d];
            hint[ci] += price * w / tot;
            cnt[ci]++;
        }
    }
    for (int c = 0; c < m->nclasses; c++)
        hint[c] = cnt[c] ? hint[c] / cnt[c] : 0;
    free(cnt);
}

static int new_claims(const sv_model *m)
{
    int n = 0;
    for (int b = m->nexisting; b < m->nbins; b++)
        n += !m->bins[b].dead && m->bins[b].npods > 0;
    return n;
}

/* Is plan a better than plan b: no more pods left out, and cheaper (by
 * more than rounding), or as cheap with fewer new nodes. */
static bool better(sv_model *a, sv_model *b)
{
    if (unplaced(a) > unplaced(b))
        return false;
    double ca = plan_cost(a), cb = plan_cost(b), eps = 1e-7 * (cb > 1 ? cb : 1);
    if (unplaced(a) < unplaced(b))
        return true;
    return ca < cb - eps || (ca <= cb + eps && new_claims(a) < new_claims(b));
}

/* The share of pending pods in movable classes (seed.c takes those). */
static double movable_share(const sv_model *m)
{
    int n = 0;
    for (int i = 0; i < m->npods; i++)
        if (!m->classes[m->pods[i].cls].bad && sv_class_movable(&m->classes[m->pods[i].cls]))
            n++;
    return m->npods ? (double)n / m->npods : 0;
}

/* The zone pre-assignment candidates (zonepin.c): each zone spread group
 * split over its zones up front, then packed as usual, and re-priced as
 * the first re-price pass does (on the cluster-like cases it wins on some
 * and loses on others, so both run).  Returns the best of best and them,
 * each placed in whichever model/arena the best plan does not use.
 * Skipped in disruption probes, when no zone spread group can be pinned
 * (checked on best's model before compiling another) and when less than
 * half of the time spent so far is left. */
static sv_model *zone_pin_plans(const sv_input *in, tlr_solve_strategy st, tlr_arena *a1, tlr_arena *a2,
                                sv_model *m1, sv_model *m2, sv_model *best)
{
    int64_t now = mono_ns();
    if (!in->allow_new || in->nremoved || now + (now - in->start_ns) / 2 >= best->deadline_ns ||
        !sv_zone_spread_any(in->pods, in->npods) || !sv_zone_pin_worth(best))
        return best;
    sv_model *spare = best == m1 ? m2 : m1;
    tlr_arena *sa = best == m1 ? a2 : a1;
    tlr_arena_reset(sa);
    model_init(in, st, sa, spare, NULL, false, false);
    sv_input zin = *in;
    zin.pods = sv_zone_pin(spare);
    if (!zin.pods)
        return best;
    model_run(&zin, st, sa, spare, NULL, false, false);
    if (spare->timed_out || in->npods > SV_REPRICE_MAX_PODS) {
        if (!spare->timed_out && sv_zone_pin_held(spare, in->pods) && better(spare, best))
            best = spare;
        return best;
    }
    double *hint = tlr_calloc((size_t)spare->nclasses + 1, sizeof(double));
    unit_shares(spare, hint);
    if (sv_zone_pin_held(spare, in->pods) && better(spare, best))
        best = spare;
    /* The same pods again, re-priced: in spare's arena as it is (the pinned
     * pods live there) unless spare now holds the best plan. */
    if (best == spare) {
        spare = best == m1 ? m2 : m1;
        sa = best == m1 ? a2 : a1;
        tlr_arena_reset(sa);
        zin.pods = sv_zone_pin_copy(sa, zin.pods, in->pods, in->npods);
    }
    model_run(&zin, st, sa, spare, hint, false, false);
    free(hint);
    if (!spare->timed_out && sv_zone_pin_held(spare, in->pods) && better(spare, best))
        best = spare;
    return best;
}

/* Run the strategy (with insurance); *winner is the model to emit from. */
static void solve_models(const sv_input *in, const tlr_solve_opts *o, tlr_arena *a1, tlr_arena *a2,
                         sv_model *m1, sv_model *m2, sv_model **winner)
{
    tlr_solve_strategy st = o ? o->strategy : TLR_SOLVE_TAILOR;
    model_run(in, st, a1, m1, NULL, false, false);
    sv_model *best = m1;
    double ffd_scan = (double)in->npods * (1 - movable_share(m1)) * (double)m1->nbins;
    if (st == TLR_SOLVE_FFD && !m1->timed_out && m1->nbins > m1->nexisting) {
        /* FFD is its two variants, the cheaper plan kept */
        model_run(in, st, a2, m2, NULL, false, true);
        if (!m2->timed_out && better(m2, m1))
            best = m2;
    }
    if (st != TLR_SOLVE_TAILOR || m1->timed_out || m1->nbins == m1->nexisting) {
        *winner = best;
        return;
    }
    /* Re-price: place again with each class valued at what its pods cost
     * in the first plan (see the file comment); keep the cheaper plan. */
    if (in->npods <= SV_REPRICE_MAX_PODS) {
        double *hint = tlr_calloc((size_t)m1->nclasses + 1, sizeof(double));
        unit_shares(m1, hint);
        model_run(in, st, a2, m2, hint, false, false);
        free(hint);
        if (!m2->timed_out && better(m2, m1))
            best = m2;
    }
    /* LP-guided: claims seeded from the configuration LP (seed.c), when
     * most pods are free to move (the LP knows no topology), keeping the
     * cheaper plan. */
    if (!(o && o->no_lp_guide) && in->allow_new && in->nremoved == 0 &&
        movable_share(m1) >= SV_SEED_MIN_SHARE) {
        sv_model *spare = best == m1 ? m2 : m1;
        tlr_arena *sa = best == m1 ? a2 : a1;
        tlr_arena_reset(sa);
        model_run(in, st, sa, spare, NULL, true, false);
        if (!spare->timed_out && better(spare, best))
            best = spare;
    }
    /* Zone pre-assignment (zonepin.c). */
    if (!(o && o->no_zone_pin))
        best = zone_pin_plans(in, st, a1, a2, m1, m2, best);
    /* Insurance: the baseline, in whichever model/arena the best plan
     * does not use. */
    double work = (double)in->npods * (double)(m1->ntypes + m1->nexisting);
    if (work <= SV_INSURE_WORK) {
        sv_model *spare = best == m1 ? m2 : m1;
        tlr_arena *sa = best == m1 ? a2 : a1;
        tlr_arena_reset(sa);
        model_run(in, TLR_SOLVE_KARPENTER, sa, spare, NULL, false, false);
        if (!spare->timed_out && better(spare, best))
            best = spare;
    }
    /* First-fit decreasing, both variants: the simple packer tailor must
     * never lose to. */
    for (int sized = 0; sized < 2 && !(o && o->no_ffd) && ffd_scan <= SV_FFD_SCAN_WORK; sized++) {
        sv_model *spare = best == m1 ? m2 : m1;
        tlr_arena *sa = best == m1 ? a2 : a1;
        tlr_arena_reset(sa);
        model_run(in, TLR_SOLVE_FFD, sa, spare, NULL, false, sized);
        if (!spare->timed_out && better(spare, best))
            best = spare;
    }
    *winner = best;
}

/* ---- plans the scheduler will keep (replay.c) --------------------------
 *
 * A plan whose nodes the launcher releases together (a new claim holds a
 * pod with a DoNotSchedule spread, and there are two or more: plangate.h)
 * is replayed as kube-scheduler will bind it (replay.c); the replay's
 * placement becomes the plan: the claims' planned pods, requests and
 * instance-type options follow it, and a claim it leaves empty is not
 * bought.  The pods it leaves without room are what a second provisioning
 * round would buy for once the scheduler has bound the rest: tailor buys
 * for them now (the full engine on those pods, the replay's placement of
 * the others fixed) as the plan's second stage, annotated
 * tailor.sh/plan-stage=2, which the launcher releases only once the first
 * stage's pods are bound (plangate.h), so that they go where the replay
 * said and the leftovers to the second stage's nodes.  The plan then costs
 * what the cluster will, and the second stage boots with the first instead
 * of a round later.  tlr_solve judges tailor's plan, tailor's without zone
 * pre-assignment and first-fit decreasing this way and answers the
 * cheapest (plan_best).  When the replay times out or the engine cannot
 * place a leftover, the packing's plan stands.  Skipped when a pod asks
 * for an extended resource (a GPU) and above SV_REPLAY_WORK (pods x
 * bins). */

#define SV_REPLAY_WORK   2000000.0

typedef struct plan_claim {
    Tailor__V1__NodeClaim *nc;   /* in the response arena */
    const char *zone;            /* where its cheapest option launches */
    sv_res ds;                   /* its DaemonSets' requests (4 dims) */
    double price;
} plan_claim;

typedef struct plan_vec {
    plan_claim *v;
    size_t n, cap;
} plan_vec;

static int model_type(sv_model *m, const char *name)
{
    sv_id id = sv_intern(m, name);
    for (int t = 0; t < m->ntypes; t++)
        if (m->types[t].name == id)
            return t;
    return SV_NONE;
}

/* The claims model m emitted (ncs, n): price, zone and DaemonSet share. */
static void plan_capture(sv_model *m, Tailor__V1__NodeClaim **ncs, size_t n, plan_vec *pv)
{
    size_t k = 0;
    for (int b = m->nexisting; b < m->nbins && k < n; b++) {
        sv_bin *x = &m->bins[b];
        if (x->dead || !x->npods)
            continue;
        TLR_GROW(pv->v, pv->cap, pv->n + 1);
        plan_claim *pc = &pv->v[pv->n++];
        memset(pc, 0, sizeof(*pc));
        pc->nc = ncs[k++];
        pc->price = sv_claim_cost(m, b);
        int t = pc->nc->n_instance_type_options ? model_type(m, pc->nc->instance_type_options[0]->name)
                                                : SV_NONE;
        int place = SV_NONE;
        if (t != SV_NONE && sv_type_price(m, t, x->pmask, &place) >= 0 && place >= 0)
            pc->zone = sv_ostrdup(m->out, sv_str(m, m->zones[place / 4]));
        const Tailor__V1__ResourceList *rr = pc->nc->resources_requested;
        if (rr) {
            pc->ds.v[SV_DIM_CPU] = rr->cpu_millis - x->used.v[SV_DIM_CPU];
            pc->ds.v[SV_DIM_MEM] = rr->memory_bytes - x->used.v[SV_DIM_MEM];
            pc->ds.v[SV_DIM_PODS] = rr->pods - x->used.v[SV_DIM_PODS];
            pc->ds.v[SV_DIM_EPH] = rr->ephemeral_storage_bytes - x->used.v[SV_DIM_EPH];
        }
    }
}

static Tailor__V1__ResourceList *rl_of(tlr_arena *ar, const sv_res *r)
{
    Tailor__V1__ResourceList *l = tlr_arena_alloc(ar, sizeof(*l));
    tailor__v1__resource_list__init(l);
    l->cpu_millis = r->v[SV_DIM_CPU];
    l->memory_bytes = r->v[SV_DIM_MEM];
    l->pods = r->v[SV_DIM_PODS];
    l->ephemeral_storage_bytes = r->v[SV_DIM_EPH];
    return l;
}

/* What model m placed on bin b: summed requests (4 dims). */
static sv_res bin_used(const sv_model *m, int b)
{
    sv_res u = { { 0 } };
    const sv_bin *x = &m->bins[b];
    for (int i = 0; i < x->npods; i++)
        for (int d = 0; d < 4; d++)
            u.v[d] += m->classes[m->pods[x->pods[i]].cls].req.v[d];
    return u;
}

/* The request's cluster with the plan's claims in flight (named
 * "plan/<i>", which no Kubernetes name can be) on their cheapest option
 * in its zone.  With placed (a replay model), each claim, Node and claim
 * already in flight also holds what the replay put on it, and *pods keeps
 * only the pods that went to claims (a Node's go onto the Node). */
static Tailor__V1__ClusterState *plan_cluster(const sv_input *in, const plan_vec *pv, tlr_arena *ar,
                                              sv_model *placed, const Tailor__V1__Pod ***pods,
                                              size_t *npods)
{
    Tailor__V1__ClusterState *cs = tlr_arena_alloc(ar, sizeof(*cs));
    if (in->cluster)
        *cs = *in->cluster;
    else
        tailor__v1__cluster_state__init(cs);
    size_t norig = cs->n_nodeclaims;
    Tailor__V1__NodeClaim **ncs = tlr_arena_alloc(ar, (norig + pv->n + 1) * sizeof(*ncs));
    for (size_t i = 0; i < norig; i++)
        ncs[i] = cs->nodeclaims[i];
    for (size_t k = 0; k < pv->n; k++) {
        const plan_claim *pc = &pv->v[k];
        Tailor__V1__NodeClaim *c = tlr_arena_alloc(ar, sizeof(*c));
        *c = *pc->nc;
        c->name = sv_arena_printf(ar, "plan/%zu", k);
        c->n_instance_type_options = c->n_instance_type_options ? 1 : 0;
        c->n_planned_pod_uids = 0;
        c->planned_pod_uids = NULL;
        c->resources_requested = rl_of(ar, &pc->ds);
        Tailor__V1__NodeClaimStatus *st = tlr_arena_alloc(ar, sizeof(*st));
        tailor__v1__node_claim_status__init(st);
        st->zone = (char *)(pc->zone ? pc->zone : "");
        c->status = st;
        ncs[norig + k] = c;
    }
    cs->nodeclaims = ncs;
    cs->n_nodeclaims = norig + pv->n;
    if (!placed)
        return cs;
    /* The replay's placement, fixed for the buying run. */
    Tailor__V1__Node **nodes = tlr_arena_alloc(ar, (cs->n_nodes + 1) * sizeof(*nodes));
    for (size_t i = 0; i < cs->n_nodes; i++)
        nodes[i] = cs->nodes[i];
    cs->nodes = nodes;
    const Tailor__V1__Pod **keep = tlr_arena_alloc(ar, ((size_t)placed->npods + 1) * sizeof(*keep));
    size_t nkeep = 0;
    for (int i = 0; i < placed->npods; i++)
        if (placed->pods[i].bin == SV_NONE || placed->bins[placed->pods[i].bin].kind != SV_BIN_NODE)
            keep[nkeep++] = placed->pods[i].pod;
    for (int b = 0; b < placed->nexisting; b++) {
        const sv_bin *x = &placed->bins[b];
        if (!x->npods)
            continue;
        sv_res u = bin_used(placed, b);
        if (x->kind == SV_BIN_NODE) {
            size_t ni = 0;   /* a Node bin's idx is in place.c's sorted order: find it by name */
            while (ni < cs->n_nodes && strcmp(nodes[ni]->name, x->name))
                ni++;
            if (ni == cs->n_nodes)
                continue;
            Tailor__V1__Node *n = tlr_arena_alloc(ar, sizeof(*n));
            *n = *nodes[ni];
            Tailor__V1__Pod **np = tlr_arena_alloc(ar, (n->n_pods + (size_t)x->npods) * sizeof(*np));
            for (size_t j = 0; j < n->n_pods; j++)
                np[j] = n->pods[j];
            for (int j = 0; j < x->npods; j++)
                np[n->n_pods + (size_t)j] = (Tailor__V1__Pod *)placed->pods[x->pods[j]].pod;
            sv_res r = u;
            if (n->requested) {
                r.v[SV_DIM_CPU] += n->requested->cpu_millis;
                r.v[SV_DIM_MEM] += n->requested->memory_bytes;
                r.v[SV_DIM_EPH] += n->requested->ephemeral_storage_bytes;
            }
            r.v[SV_DIM_PODS] = (int64_t)(n->n_pods + (size_t)x->npods);
            Tailor__V1__ResourceList *rl = rl_of(ar, &r);
            if (n->requested) {
                rl->n_extended = n->requested->n_extended;
                rl->extended = n->requested->extended;
            }
            n->requested = rl;
            n->pods = np;
            n->n_pods += (size_t)x->npods;
            nodes[ni] = n;
            continue;
        }
        /* a claim in flight: the request's own or one of the plan's */
        Tailor__V1__NodeClaim *c = tlr_arena_alloc(ar, sizeof(*c));
        *c = *ncs[x->idx];
        char **uids = tlr_arena_alloc(ar, (c->n_planned_pod_uids + (size_t)x->npods) * sizeof(*uids));
        for (size_t j = 0; j < c->n_planned_pod_uids; j++)
            uids[j] = c->planned_pod_uids[j];
        for (int j = 0; j < x->npods; j++)
            uids[c->n_planned_pod_uids + (size_t)j] = placed->pods[x->pods[j]].pod->uid;
        c->planned_pod_uids = uids;
        c->n_planned_pod_uids += (size_t)x->npods;
        if (c->resources_requested) {
            const Tailor__V1__ResourceList *o = c->resources_requested;
            sv_res r = u;
            r.v[SV_DIM_CPU] += o->cpu_millis;
            r.v[SV_DIM_MEM] += o->memory_bytes;
            r.v[SV_DIM_PODS] += o->pods;
            r.v[SV_DIM_EPH] += o->ephemeral_storage_bytes;
            Tailor__V1__ResourceList *rl = rl_of(ar, &r);
            rl->n_extended = o->n_extended;
            rl->extended = o->extended;
            c->resources_requested = rl;
        }
        ncs[x->idx] = c;
    }
    *pods = keep;
    *npods = nkeep;
    return cs;
}

/* Claim k of the plan takes what replay model m put on bin b: its planned
 * pods and requests, and the options that still hold them. */
static void replay_claim(sv_model *m, const int *pods, int npods, plan_claim *pc, tlr_arena *oa)
{
    Tailor__V1__NodeClaim *nc = pc->nc;
    sv_res used = { { 0 } };
    nc->planned_pod_uids = tlr_arena_alloc(oa, ((size_t)npods + 1) * sizeof(char *));
    nc->n_planned_pod_uids = (size_t)npods;
    for (int i = 0; i < npods; i++) {
        nc->planned_pod_uids[i] = sv_ostrdup(oa, m->pods[pods[i]].pod->uid);
        for (int d = 0; d < m->ndim; d++)
            used.v[d] += m->classes[m->pods[pods[i]].cls].req.v[d];
    }
    sv_res rr = pc->ds;
    for (int d = 0; d < 4; d++)
        rr.v[d] += used.v[d];
    nc->resources_requested = rl_of(oa, &rr);
    /* The replay counted the claim in the zone it assumed: a pod whose
     * placement needs a zone (a zone spread, affinity) holds it there. */
    bool pin = false;
    for (int i = 0; i < npods && !pin; i++)
        pin = m->classes[m->pods[pods[i]].cls].pin_zone;
    if (pin && pc->zone && *pc->zone)
        for (size_t j = 0; j < nc->n_requirements; j++)
            if (!strcmp(nc->requirements[j]->key, TLR_LABEL_ZONE) &&
                nc->requirements[j]->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN &&
                nc->requirements[j]->n_values > 1) {
                Tailor__V1__NodeSelectorRequirement *z = tlr_arena_alloc(oa, sizeof(*z));
                *z = *nc->requirements[j];
                z->values = tlr_arena_alloc(oa, sizeof(char *));
                z->values[0] = (char *)pc->zone;
                z->n_values = 1;
                Tailor__V1__NodeSelectorRequirement **reqs =
                    tlr_arena_alloc(oa, (nc->n_requirements + 1) * sizeof(*reqs));
                memcpy(reqs, nc->requirements, nc->n_requirements * sizeof(*reqs));
                reqs[j] = z;
                nc->requirements = reqs;
            }
    /* the options whose type still holds the pods with its DaemonSets */
    int pi = SV_NONE;
    for (int p = 0; p < m->npools && pi == SV_NONE; p++)
        if (!strcmp(m->pools[p].np->name, nc->nodepool))
            pi = p;
    if (pi == SV_NONE)
        return;
    const sv_pool *p = &m->pools[pi];
    Tailor__V1__InstanceTypeOption **opts =
        tlr_arena_alloc(oa, (nc->n_instance_type_options + 1) * sizeof(*opts));
    char **names = tlr_arena_alloc(oa, (nc->n_instance_type_options + 1) * sizeof(*names));
    size_t k = 0;
    for (size_t j = 0; j < nc->n_instance_type_options; j++) {
        sv_id id = sv_intern(m, nc->instance_type_options[j]->name);
        bool fits = false;
        for (int pt = 0; pt < p->ntypes && !fits; pt++)
            if (m->types[p->types[pt]].name == id)
                fits = sv_pool_type_fits(m, p, pt, &used);
        if (fits || j == 0) {
            opts[k] = nc->instance_type_options[j];
            names[k++] = nc->instance_type_options[j]->name;
        }
    }
    if (k == nc->n_instance_type_options)
        return;
    Tailor__V1__NodeSelectorRequirement **reqs =
        tlr_arena_alloc(oa, (nc->n_requirements + 1) * sizeof(*reqs));
    for (size_t j = 0; j < nc->n_requirements; j++) {
        reqs[j] = nc->requirements[j];
        if (strcmp(reqs[j]->key, TLR_LABEL_INSTANCE_TYPE) ||
            reqs[j]->operator_ != TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN)
            continue;
        if ((size_t)reqs[j]->min_values > k)
            return;   /* minValues needs the options the replay would drop: keep them all */
        Tailor__V1__NodeSelectorRequirement *r = tlr_arena_alloc(oa, sizeof(*r));
        *r = *reqs[j];
        r->values = names;
        r->n_values = k;
        reqs[j] = r;
    }
    nc->requirements = reqs;
    nc->instance_type_options = opts;
    nc->n_instance_type_options = k;
}

/* The replay's placement is the plan (see above): the plan's claims take
 * the pods m put on them, a claim it leaves empty is dropped, and the
 * claims bought for what it left, more (nmore, of cost more_cost,
 * emitted from buy model bm), follow as the plan's second stage.  bm
 * (NULL when the replay placed everything) holds the replay's placement
 * plus where the leftovers go: it is read for every bin but the Nodes,
 * whose replayed pods it carries as bound. */
static void replay_adopt(sv_model *m, sv_model *bm, size_t norig, plan_vec *pv, size_t nfirst,
                         Tailor__V1__NodeClaim **more, size_t nmore, double more_cost,
                         Tailor__V1__SolveResponse *r, tlr_arena *oa)
{
    sv_model *cm = bm ? bm : m;   /* where the claims' pods are read */
    /* per plan claim, the pods on it */
    int *cnt = tlr_calloc(nfirst + 1, sizeof(int)), *off = tlr_calloc(nfirst + 2, sizeof(int));
    int *lst = tlr_calloc((size_t)cm->npods + 1, sizeof(int));
    for (int i = 0; i < cm->npods; i++) {
        int b = cm->pods[i].bin;
        if (b != SV_NONE && cm->bins[b].kind == SV_BIN_INFLIGHT && (size_t)cm->bins[b].idx >= norig)
            cnt[(size_t)cm->bins[b].idx - norig]++;
    }
    for (size_t k = 0; k < nfirst; k++)
        off[k + 1] = off[k] + cnt[k];
    memset(cnt, 0, (nfirst + 1) * sizeof(int));
    for (int i = 0; i < cm->npods; i++) {
        int b = cm->pods[i].bin;
        if (b != SV_NONE && cm->bins[b].kind == SV_BIN_INFLIGHT && (size_t)cm->bins[b].idx >= norig) {
            size_t k = (size_t)cm->bins[b].idx - norig;
            lst[off[k] + cnt[k]++] = i;
        }
    }
    Tailor__V1__NodeClaim **ncs = tlr_arena_alloc(oa, (nfirst + nmore + 1) * sizeof(*ncs));
    size_t nn = 0;
    double cost = more_cost;
    for (size_t k = 0; k < nfirst; k++) {
        if (!cnt[k])
            continue;   /* the scheduler would leave it empty: not bought */
        replay_claim(cm, lst + off[k], cnt[k], &pv->v[k], oa);
        ncs[nn++] = pv->v[k].nc;
        cost += pv->v[k].price;
    }
    for (size_t k = 0; k < nmore; k++) {
        Tailor__V1__NodeClaim *nc = more[k];
        Tailor__V1__Label **an = tlr_arena_alloc(oa, (nc->n_annotations + 1) * sizeof(*an));
        size_t na = 0;
        for (size_t j = 0; j < nc->n_annotations; j++)
            if (strcmp(nc->annotations[j]->key, TLR_ANNOTATION_PLAN_STAGE) < 0)
                an[na++] = nc->annotations[j];
        Tailor__V1__Label *l = tlr_arena_alloc(oa, sizeof(*l));
        tailor__v1__label__init(l);
        l->key = sv_ostrdup(oa, TLR_ANNOTATION_PLAN_STAGE);
        l->value = sv_ostrdup(oa, "2");
        an[na++] = l;
        for (size_t j = 0; j < nc->n_annotations; j++)
            if (strcmp(nc->annotations[j]->key, TLR_ANNOTATION_PLAN_STAGE) > 0)
                an[na++] = nc->annotations[j];
        nc->annotations = an;
        nc->n_annotations = na;
        ncs[nn++] = nc;
    }
    /* bindings: Nodes and the request's claims in flight -- the replay's
     * Node placements from m, the rest from cm (which, when it is bm,
     * carries the replay's Node placements as bound) */
    Tailor__V1__Binding **binds =
        tlr_arena_alloc(oa, ((size_t)m->npods + (bm ? (size_t)bm->npods : 0) + 1) * sizeof(*binds));
    size_t k = 0;
    for (int pass = 0; pass < (bm ? 2 : 1); pass++) {
        sv_model *bmod = pass ? bm : m;
        for (int i = 0; i < bmod->npods; i++) {
            int b = bmod->pods[i].bin;
            if (b == SV_NONE)
                continue;
            const sv_bin *x = &bmod->bins[b];
            bool node = x->kind == SV_BIN_NODE, orig = x->kind == SV_BIN_INFLIGHT && (size_t)x->idx < norig;
            if (node || (orig && (pass == 1 || !bm)))
                binds[k++] = sv_binding_new(oa, bmod->pods[i].pod, x);
        }
    }
    free(cnt);
    free(off);
    free(lst);
    r->new_nodeclaims = ncs;
    r->n_new_nodeclaims = nn;
    r->total_cost_per_hour = cost;
    r->bindings = binds;
    r->n_bindings = k;
}

/* The pods of pods[0..n) that plan r gave no PodError (new, free() it;
 * *nk their count): what the plan placed. */
static const Tailor__V1__Pod **pods_placed(const Tailor__V1__Pod *const *pods, size_t n,
                                           const Tailor__V1__SolveResponse *r, size_t *nk)
{
    const char **failed = tlr_malloc((r->n_pod_errors + 1) * sizeof(*failed));
    size_t nf = 0;
    for (size_t i = 0; i < r->n_pod_errors; i++)
        if (r->pod_errors[i]->pod_uid)
            failed[nf++] = r->pod_errors[i]->pod_uid;
    qsort(failed, nf, sizeof(*failed), tlr_cmp_strp);
    const Tailor__V1__Pod **kept = tlr_malloc((n + 1) * sizeof(*kept));
    *nk = 0;
    for (size_t i = 0; i < n; i++) {
        const char *uid = pods[i] && pods[i]->uid ? pods[i]->uid : "";
        if (!nf || !bsearch(&uid, failed, nf, sizeof(*failed), tlr_cmp_strp))
            kept[(*nk)++] = pods[i];
    }
    free(failed);
    return kept;
}

/* Will the launcher release plan r's nodes together (plangate.h)? */
static bool plan_gated(const sv_input *in, const Tailor__V1__SolveResponse *r)
{
    if (r->n_new_nodeclaims < 2)
        return false;
    size_t n = 0;
    const char **gated = tlr_malloc((in->npods + 1) * sizeof(*gated));
    for (size_t i = 0; i < in->npods; i++)
        if (in->pods[i]->uid && tlr_ks_pod_spread_hard(in->pods[i]))
            gated[n++] = in->pods[i]->uid;
    qsort(gated, n, sizeof(*gated), tlr_cmp_strp);
    bool any = false;
    for (size_t i = 0; i < r->n_new_nodeclaims && !any && n; i++)
        for (size_t j = 0; j < r->new_nodeclaims[i]->n_planned_pod_uids && !any; j++) {
            const char *u = r->new_nodeclaims[i]->planned_pod_uids[j];
            any = bsearch(&u, gated, n, sizeof(*gated), tlr_cmp_strp) != NULL;
        }
    free(gated);
    return any;
}

static void solve_models(const sv_input *in, const tlr_solve_opts *o, tlr_arena *a1, tlr_arena *a2,
                         sv_model *m1, sv_model *m2, sv_model **winner);

/* Does the replay apply to plan r, emitted from model won? */
static bool replay_wanted(const sv_input *in, const sv_model *won, const Tailor__V1__SolveResponse *r)
{
    for (int c = 0; c < won->nclasses; c++)
        for (int d = 4; d < won->ndim; d++)
            if (won->classes[c].req.v[d])
                return false;   /* extended resources: not replayed (see above) */
    return !won->timed_out && plan_gated(in, r) &&
           (double)in->npods * (double)(won->nbins + 1) <= SV_REPLAY_WORK;
}

/* Replay plan r (emitted from model won) and adopt what holds (see
 * above); *wanted says whether the replay applied to it. */
static bool replay_plan(const sv_input *in, const tlr_solve_opts *o, sv_model *won,
                        Tailor__V1__SolveResponse *r, tlr_arena *oa, bool *wanted)
{
    *wanted = replay_wanted(in, won, r);
    if (!*wanted)
        return false;
    bool adopted = false;
    plan_vec pv = { 0 };
    plan_capture(won, r->new_nodeclaims, r->n_new_nodeclaims, &pv);
    /* the pods the plan placed (not those with an error): the scheduler
     * gets those */
    size_t np;
    const Tailor__V1__Pod **pods = pods_placed(in->pods, in->npods, r, &np);
    size_t norig = in->cluster ? in->cluster->n_nodeclaims : 0;
    tlr_arena *ra, *b1, *b2;
    tlr_arena_create(1 << 20, &ra);
    tlr_arena_create(1 << 20, &b1);
    tlr_arena_create(1 << 20, &b2);
    size_t nfirst = pv.n;
    sv_input rin = *in;
    rin.pods = pods;
    rin.npods = np;
    rin.cluster = plan_cluster(in, &pv, ra, NULL, NULL, NULL);
    rin.allow_new = false;
    sv_model rm;
    model_init(&rin, TLR_SOLVE_TAILOR, ra, &rm, NULL, false, false);
    int left = sv_replay_all(&rm);
    if (!rm.timed_out && left == 0) {
        replay_adopt(&rm, NULL, norig, &pv, nfirst, NULL, 0, 0, r, oa);
        adopted = true;
    } else if (!rm.timed_out) {
        /* the second stage: bought for the pods left, the others where
         * the replay put them */
        sv_input bin = *in;
        const Tailor__V1__Pod **bpods = NULL;
        bin.cluster = plan_cluster(in, &pv, ra, &rm, &bpods, &bin.npods);
        bin.pods = bpods;
        sv_model bm1, bm2, *bm;
        solve_models(&bin, o, b1, b2, &bm1, &bm2, &bm);
        if (!bm->timed_out && !unplaced(bm)) {
            bm->out = oa;
            Tailor__V1__NodeClaim **more;
            size_t nmore;
            double c;
            sv_emit_claims(bm, &more, &nmore, &c);
            if (!unplaced(bm)) {
                replay_adopt(&rm, bm, norig, &pv, nfirst, more, nmore, c, r, oa);
                adopted = true;
            }
        }
    }
    tlr_arena_free(ra);
    tlr_arena_free(b1);
    tlr_arena_free(b2);
    free(pods);
    free(pv.v);
    return adopted;
}

/* Solve in with o into r's plan fields (claims, bindings, errors,
 * timed_out; in oa), replayed when that applies (*wanted); true when the
 * replay's placement is the plan. */
static bool plan_into(const sv_input *in, const tlr_solve_opts *o, Tailor__V1__SolveResponse *r,
                      tlr_arena *oa, bool replay, bool *wanted)
{
    *wanted = false;
    tlr_arena *a1, *a2;
    tlr_arena_create(1 << 20, &a1);
    tlr_arena_create(1 << 20, &a2);
    sv_model m1, m2, *m;
    solve_models(in, o, a1, a2, &m1, &m2, &m);
    m->out = oa;
    sv_emit_claims(m, &r->new_nodeclaims, &r->n_new_nodeclaims, &r->total_cost_per_hour);
    sv_emit_bindings(m, &r->bindings, &r->n_bindings);
    sv_emit_errors(m, &r->pod_errors, &r->n_pod_errors);
    r->timed_out = m->timed_out;
    bool adopted = replay && replay_plan(in, o, m, r, oa, wanted);
    tlr_arena_free(a1);
    tlr_arena_free(a2);
    return adopted;
}

/* The plan tlr_solve answers: tailor's, and when the replay applies, the
 * cheapest of the candidates below whose replay holds: the packing that is
 * cheapest on paper can be the dearest once the scheduler has spread it
 * (a zone pre-assignment's plan is tight per zone, and LeastAllocated
 * undoes it), so each is judged by what the scheduler will make of it. */
static void plan_best(const sv_input *in, const tlr_solve_opts *o, Tailor__V1__SolveResponse *r,
                      tlr_arena *oa)
{
    bool wanted;
    bool held = plan_into(in, o, r, oa, o && o->replay, &wanted);
    tlr_solve_strategy st = o ? o->strategy : TLR_SOLVE_TAILOR;
    if (!wanted || st != TLR_SOLVE_TAILOR)
        return;   /* the replay did not apply: no other candidate is judged */
    for (int v = 0; v < 2; v++) {
        tlr_solve_opts vo = o ? *o : (tlr_solve_opts){ 0 };
        if (v == 0)
            vo.no_zone_pin = true;
        else
            vo.strategy = TLR_SOLVE_FFD;
        Tailor__V1__SolveResponse alt;
        tailor__v1__solve_response__init(&alt);
        bool alt_wanted;
        bool alt_held = plan_into(in, &vo, &alt, oa, true, &alt_wanted);
        if (!alt_held || alt.timed_out || alt.n_pod_errors > r->n_pod_errors)
            continue;
        if (held && alt.total_cost_per_hour >= r->total_cost_per_hour - 1e-7)
            continue;
        r->new_nodeclaims = alt.new_nodeclaims;
        r->n_new_nodeclaims = alt.n_new_nodeclaims;
        r->total_cost_per_hour = alt.total_cost_per_hour;
        r->bindings = alt.bindings;
        r->n_bindings = alt.n_bindings;
        r->pod_errors = alt.pod_errors;
        r->n_pod_errors = alt.n_pod_errors;
        held = true;
    }
}

#define RESP_HDR sizeof(max_align_t)

/* A new message of size bytes at the start of a new arena (*oa). */
static void *resp_alloc(size_t size, tlr_arena **oa)
{
    tlr_arena_create(1 << 20, oa);
    char *blk = tlr_arena_alloc(*oa, RESP_HDR + size);
    *(tlr_arena **)(void *)blk = *oa;
    return blk + RESP_HDR;
}

static void resp_free(void *r)
{
    if (r)
        tlr_arena_free(*(tlr_arena **)(void *)((char *)r - RESP_HDR));
}

static Tailor__V1__Status *status_new(tlr_arena *oa, int code, const char *reason, const char *msg)
{
    Tailor__V1__Status *s = tlr_arena_alloc(oa, sizeof(*s));
    tailor__v1__status__init(s);
    s->code = (uint32_t)code;
    s->reason = sv_ostrdup(oa, reason);
    s->message = sv_ostrdup(oa, msg);
    return s;
}

/* Catalog refs without a catalog: their hashes, or 0. */
static size_t missing_catalogs(tlr_arena *oa, const Tailor__V1__CatalogRef *const *cats, size_t n, char ***out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!cats[i]->catalog)
            k++;
    if (!k)
        return 0;
    char **v = tlr_arena_alloc(oa, k * sizeof(char *));
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (!cats[i]->catalog)
            v[k++] = sv_ostrdup(oa, cats[i]->hash);
    *out = v;
    return k;
}

/* The catalog-miss answer both Solve and Simulate give (solver.proto):
 * fills the response's miss fields and status and returns true when some
 * catalog ref came without its catalog. */
static bool catalog_miss(tlr_arena *oa, const Tailor__V1__CatalogRef *const *cats, size_t n,
                         protobuf_c_boolean *miss, char ***hashes, size_t *nhashes,
                         Tailor__V1__Status **status)
{
    size_t k = missing_catalogs(oa, cats, n, hashes);
    if (!k)
        return false;
    *miss = true;
    *nhashes = k;
    *status = status_new(oa, TLR_E_NOTFOUND, "CatalogMiss",
                         "the solver does not hold some catalogs: resend with CatalogRef.catalog");
    return true;
}

/* The fields a refusal fills in either response (tlr_solve_refusal). */
typedef struct refusal_fields {
    char **replica;
    Tailor__V1__Status **status;
    protobuf_c_boolean *cluster_miss;
    uint64_t **held;
    size_t *nheld;
} refusal_fields;

static void refusal_fill(tlr_arena *oa, const refusal_fields *f, const tlr_solve_opts *o, int code,
                         const char *reason, const char *msg, const uint64_t *held, size_t nheld)
{
    *f->replica = sv_ostrdup(oa, o && o->replica_id ? o->replica_id : "");
    *f->status = status_new(oa, code, reason, msg);
    if (strcmp(reason, "ClusterMiss"))
        return;
    *f->cluster_miss = true;
    *f->held = tlr_arena_alloc(oa, (nheld + 1) * sizeof(uint64_t));
    if (nheld)
        memcpy(*f->held, held, nheld * sizeof(uint64_t));
    *f->nheld = nheld;
}

Tailor__V1__SolveResponse *tlr_solve_refusal(const tlr_solve_opts *o, int code, const char *reason,
                                             const char *msg, const uint64_t *held, size_t nheld)
{
    tlr_arena *oa;
    Tailor__V1__SolveResponse *r = resp_alloc(sizeof(*r), &oa);
    tailor__v1__solve_response__init(r);
    refusal_fields f = { &r->solver_replica_id, &r->status, &r->cluster_miss, &r->held_generations,
                         &r->n_held_generations };
    refusal_fill(oa, &f, o, code, reason, msg, held, nheld);
    return r;
}

Tailor__V1__SimulateResponse *tlr_simulate_refusal(const tlr_solve_opts *o, int code,
                                                   const char *reason, const char *msg,
                                                   const uint64_t *held, size_t nheld)
{
    tlr_arena *oa;
    Tailor__V1__SimulateResponse *r = resp_alloc(sizeof(*r), &oa);
    tailor__v1__simulate_response__init(r);
    refusal_fields f = { &r->solver_replica_id, &r->status, &r->cluster_miss, &r->held_generations,
                         &r->n_held_generations };
    refusal_fill(oa, &f, o, code, reason, msg, held, nheld);
    return r;
}

/* The engine reads a whole ClusterState: one by reference must have been
 * resolved by whoever received it (the solver service, tlr_cstate.h). */
#define BY_REF_MSG "the cluster state is by reference (by_ref) and was not resolved"

int tlr_solve(const Tailor__V1__SolveRequest *req, const tlr_solve_opts *o, Tailor__V1__SolveResponse **out)
{
    int64_t t0 = mono_ns();
    tlr_arena *oa;
    Tailor__V1__SolveResponse *r = resp_alloc(sizeof(*r), &oa);
    tailor__v1__solve_response__init(r);
    r->solver_replica_id = sv_ostrdup(oa, o && o->replica_id ? o->replica_id : "");
    if (!req) {
        r->status = status_new(oa, TLR_E_INVAL, "Invalid", "no SolveRequest");
        *out = r;
        return TLR_E_INVAL;
    }
    for (size_t i = 0; i < req->n_pending_pods; i++)
        if (!req->pending_pods[i]) {
            r->status = status_new(oa, TLR_E_INVAL, "Invalid", "a pending pod is empty");
            *out = r;
            return TLR_E_INVAL;
        }
    if (req->cluster && req->cluster->by_ref) {
        r->status = status_new(oa, TLR_E_INVAL, "Invalid", BY_REF_MSG);
        *out = r;
        return TLR_E_INVAL;
    }
    const Tailor__V1__CatalogRef *const *cats = (const Tailor__V1__CatalogRef *const *)req->catalogs;
    if (catalog_miss(oa, cats, req->n_catalogs, &r->catalog_miss, &r->missing_catalog_hashes,
                     &r->n_missing_catalog_hashes, &r->status)) {
        *out = r;
        return TLR_E_NOTFOUND;
    }
    sv_input in = {
        .cluster = req->cluster,
        .pods = (const Tailor__V1__Pod *const *)req->pending_pods,
        .npods = req->n_pending_pods,
        .cats = cats,
        .ncats = req->n_catalogs,
        .ice = (const Tailor__V1__OfferingUnavailable *const *)req->unavailable_offerings,
        .nice = req->n_unavailable_offerings,
        .opts = req->options,
        .now_ms = req->now_unix_ms,
        .start_ns = t0,
        .allow_new = true,
        /* Provisioning counts a node still booting as capacity (Karpenter's
         * in-flight nodes); only a disruption probe must not rely on it. */
        .allow_uninit = true,
    };
    plan_best(&in, o, r, oa);
    double lb = 0;
    if (!(o && o->no_lower_bound) && tlr_solve_lower_bound_placed(req, r, false, &lb) == TLR_OK)
        r->lower_bound_cost_per_hour = lb;
    r->status = status_new(oa, TLR_OK, "", "");
    r->solve_duration_ms = (mono_ns() - t0) / 1000000;
    *out = r;
    return TLR_OK;
}

int tlr_solve_lower_bound_placed(const Tailor__V1__SolveRequest *req,
                                 const Tailor__V1__SolveResponse *r, bool tight,
                                 double *cost_per_hour)
{
    int (*bound)(const Tailor__V1__SolveRequest *, double *) =
        tight ? tlr_solve_lower_bound_tight : tlr_solve_lower_bound;
    if (!r || !r->n_pod_errors)
        return bound(req, cost_per_hour);
    size_t nk;
    const Tailor__V1__Pod **kept =
        pods_placed((const Tailor__V1__Pod *const *)req->pending_pods, req->n_pending_pods, r, &nk);
    Tailor__V1__SolveRequest sub = *req;
    sub.pending_pods = (Tailor__V1__Pod **)kept;
    sub.n_pending_pods = nk;
    int rc = bound(&sub, cost_per_hour);
    free(kept);
    return rc;
}

void tlr_solve_response_free(Tailor__V1__SolveResponse *r)
{
    resp_free(r);
}

static bool pod_is_moving(const Tailor__V1__Pod *p)
{
    return !p->is_daemonset && p->phase != TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED &&
           p->phase != TAILOR__V1__POD_PHASE__POD_PHASE_FAILED;
}

int tlr_simulate(const Tailor__V1__SimulateRequest *req, const tlr_solve_opts *o,
                 Tailor__V1__SimulateResponse **out)
{
    int64_t t0 = mono_ns();
    tlr_arena *oa;
    Tailor__V1__SimulateResponse *r = resp_alloc(sizeof(*r), &oa);
    tailor__v1__simulate_response__init(r);
    r->solver_replica_id = sv_ostrdup(oa, o && o->replica_id ? o->replica_id : "");
    if (!req) {
        r->status = status_new(oa, TLR_E_INVAL, "Invalid", "no SimulateRequest");
        *out = r;
        return TLR_E_INVAL;
    }
    if (req->cluster && req->cluster->by_ref) {
        r->status = status_new(oa, TLR_E_INVAL, "Invalid", BY_REF_MSG);
        *out = r;
        return TLR_E_INVAL;
    }
    const Tailor__V1__CatalogRef *const *cats = (const Tailor__V1__CatalogRef *const *)req->catalogs;
    if (catalog_miss(oa, cats, req->n_catalogs, &r->catalog_miss, &r->missing_catalog_hashes,
                     &r->n_missing_catalog_hashes, &r->status)) {
        *out = r;
        return TLR_E_NOTFOUND;
    }
    /* Pods to place: the pending pods, then the reschedulable pods of the
     * removed nodes (a pending pod with the same uid wins: it carries the
     * full form, the node's copy is compact). */
    const Tailor__V1__ClusterState *cs = req->cluster;
    size_t cap = req->n_pending_pods + 1;
    for (size_t i = 0; cs && i < cs->n_nodes; i++)
        cap += cs->nodes[i]->n_pods;
    const Tailor__V1__Pod **pods = tlr_malloc(cap * sizeof(*pods));
    size_t np = 0;
    for (size_t i = 0; i < req->n_pending_pods; i++)
        if (req->pending_pods[i])
            pods[np++] = req->pending_pods[i];
    for (size_t i = 0; cs && i < cs->n_nodes; i++) {
        const Tailor__V1__Node *n = cs->nodes[i];
        bool gone = false;
        for (size_t j = 0; j < req->n_remove_node_names && !gone; j++)
            gone = !strcmp(req->remove_node_names[j], n->name ? n->name : "");
        if (!gone)
            continue;
        r->cost_before_per_hour += n->price_per_hour;
        for (size_t j = 0; j < n->n_pods; j++) {
            const Tailor__V1__Pod *p = n->pods[j];
            if (!pod_is_moving(p))
                continue;
            bool dup = false;
            for (size_t k = 0; k < req->n_pending_pods && !dup; k++)
                dup = req->pending_pods[k] && p->uid && *p->uid && !strcmp(req->pending_pods[k]->uid, p->uid);
            if (!dup)
                pods[np++] = p;
        }
    }
    sv_input in = {
        .cluster = cs,
        .pods = pods,
        .npods = np,
        .cats = cats,
        .ncats = req->n_catalogs,
        .ice = (const Tailor__V1__OfferingUnavailable *const *)req->unavailable_offerings,
        .nice = req->n_unavailable_offerings,
        .opts = req->options,
        .now_ms = req->now_unix_ms,
        .start_ns = t0,
        .allow_new = req->allow_replacement,
        .max_new = req->allow_replacement ? (req->max_replacements > 0 ? req->max_replacements : 1) : 0,
        .removed = (const char *const *)req->remove_node_names,
        .nremoved = req->n_remove_node_names,
        .allow_uninit = req->allow_uninitialized_targets,
    };
    tlr_arena *a1, *a2;
    tlr_arena_create(1 << 20, &a1);
    tlr_arena_create(1 << 20, &a2);
    sv_model m1, m2, *m;
    solve_models(&in, o, a1, a2, &m1, &m2, &m);
    m->out = oa;
    sv_emit_claims(m, &r->replacements, &r->n_replacements, &r->cost_after_per_hour);
    sv_emit_bindings(m, &r->placements, &r->n_placements);
    sv_emit_errors(m, &r->pod_errors, &r->n_pod_errors);
    r->timed_out = m->timed_out;
    r->feasible = r->n_pod_errors == 0 && !r->timed_out;
    /* An infeasible probe saves nothing: its partial plan is no option. */
    r->savings_per_hour = r->feasible ? r->cost_before_per_hour - r->cost_after_per_hour : 0;
    tlr_arena_free(a1);
    tlr_arena_free(a2);
    free(pods);
    r->status = status_new(oa, TLR_OK, "", "");
    r->solve_duration_ms = (mono_ns() - t0) / 1000000;
    *out = r;
    return TLR_OK;
}

void tlr_simulate_response_free(Tailor__V1__SimulateResponse *r)
{
    resp_free(r);
}
