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
    tlr_arena *a1, *a2;
    tlr_arena_create(1 << 20, &a1);
    tlr_arena_create(1 << 20, &a2);
    sv_model m1, m2, *m;
    solve_models(&in, o, a1, a2, &m1, &m2, &m);
    m->out = oa;
    sv_emit_claims(m, &r->new_nodeclaims, &r->n_new_nodeclaims, &r->total_cost_per_hour);
    sv_emit_bindings(m, &r->bindings, &r->n_bindings);
    sv_emit_errors(m, &r->pod_errors, &r->n_pod_errors);
    r->timed_out = m->timed_out;
    tlr_arena_free(a1);
    tlr_arena_free(a2);
    double lb = 0;
    if (!(o && o->no_lower_bound) && tlr_solve_lower_bound_placed(req, r, false, &lb) == TLR_OK)
        r->lower_bound_cost_per_hour = lb;
    r->status = status_new(oa, TLR_OK, "", "");
    r->solve_duration_ms = (mono_ns() - t0) / 1000000;
    *out = r;
    return TLR_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tlr_solve_lower_bound_placed(const Tailor__V1__SolveRequest *req,
                                 const Tailor__V1__SolveResponse *r, bool tight,
                                 double *cost_per_hour)
{
    int (*bound)(const Tailor__V1__SolveRequest *, double *) =
        tight ? tlr_solve_lower_bound_tight : tlr_solve_lower_bound;
    if (!r || !r->n_pod_errors)
        return bound(req, cost_per_hour);
    char **failed = tlr_malloc(r->n_pod_errors * sizeof(*failed));
    size_t nf = 0;
    for (size_t i = 0; i < r->n_pod_errors; i++)
        if (r->pod_errors[i]->pod_uid)
            failed[nf++] = r->pod_errors[i]->pod_uid;
    qsort(failed, nf, sizeof(*failed), cmp_str);
    Tailor__V1__Pod **kept = tlr_malloc((req->n_pending_pods + 1) * sizeof(*kept));
    size_t nk = 0;
    for (size_t i = 0; i < req->n_pending_pods; i++) {
        Tailor__V1__Pod *p = req->pending_pods[i];
        const char *uid = p && p->uid ? p->uid : "";
        if (!bsearch(&uid, failed, nf, sizeof(*failed), cmp_str))
            kept[nk++] = p;
    }
    Tailor__V1__SolveRequest sub = *req;
    sub.pending_pods = kept;
    sub.n_pending_pods = nk;
    int rc = bound(&sub, cost_per_hour);
    free(kept);
    free(failed);
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
