/* handlers.c - Solve and Simulate on the REP socket, with the catalog cache.
 *
 * The engine (common/solve) wants every CatalogRef of a request to carry
 * its catalog.  The wire usually carries only hashes, so each handler
 * builds a shallow copy of the request whose CatalogRefs point at cached
 * catalogs, hands it to the engine and lends the engine's reply to the REP
 * server, which frees it through reply_done after packing.
 *
 * The cache is a small array searched linearly: a solver sees a handful of
 * NodeClass configurations, not thousands.  Each entry owns a deep copy of
 * a catalog (pack + unpack, so it no longer points into the request the
 * server frees) and its packed size.  Recency is a counter bumped on every
 * use; eviction drops the least recently used entries not needed by the
 * request being answered until both bounds hold.
 *
 * Cluster by reference: a request whose ClusterState carries by_ref is
 * resolved against the replica's store of cluster states (tlr_cstate.h,
 * the last few per watcher epoch); the engine gets the whole state as a
 * view.  What cannot be resolved is answered without solving: ClusterMiss
 * (with the generations held) or Invalid.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handlers.h"
#include "tlr_alloc.h"
#include "tlr_cstate.h"
#include "tlr_err.h"

typedef struct cat_entry {
    char *hash;                       /* owned */
    Tailor__V1__Catalog *cat;         /* owned (unpacked copy) */
    size_t bytes;
    uint64_t used;                    /* recency stamp */
} cat_entry;

struct solver_handlers {
    cat_entry *e;
    size_t n, cap;
    size_t max_entries, max_bytes, bytes;
    uint64_t clock;
    tlr_solve_strategy strategy;
    bool scheduler_replay;
    size_t lb_max_pods;
    char *replica_id;
    tlr_metric *hits, *misses, *stored, *evicted;
    tlr_cstate *states;               /* cluster states by reference */
    tlr_metric *cs_hit, *cs_built, *cs_miss, *cs_invalid;
    /* karpenter_scheduler_scheduling_duration_seconds: Solve is
     * Karpenter's provisioner simulation, Simulate its disruption one. */
    tlr_metric *sched_provisioner, *sched_disruption;
    /* karpenter_scheduler_queue_depth: a solve's pods while it runs (the
     * engine reports no progress, so it holds the count it started with
     * until the solve ends and the series goes, as Karpenter deletes its). */
    tlr_metric_family *queue;
};

void solver_handlers_create(const solver_handlers_opts *o, solver_handlers **out)
{
    solver_handlers *h = tlr_calloc(1, sizeof(*h));
    h->max_entries = o && o->cache_entries ? o->cache_entries : 16;
    h->max_bytes = o && o->cache_bytes ? o->cache_bytes : (size_t)1 << 30;
    h->strategy = o ? o->strategy : TLR_SOLVE_TAILOR;
    h->scheduler_replay = o && o->scheduler_replay;
    h->lb_max_pods = o ? o->lower_bound_max_pods : 0;
    h->replica_id = tlr_strdup(o && o->replica_id ? o->replica_id : "");
    tlr_cstate_create(o ? o->cluster_states : 0, &h->states);
    if (o && o->metrics) {
        static const char *const lbl[] = { "result" };
        tlr_metric_family *f = tlr_metrics_counter(o->metrics, "tailor_solver_catalog_cache_total",
                                                   "Catalog cache lookups and changes by result.", 1, lbl);
        h->hits = tlr_metric_series(f, (const char *const[]){ "hit" });
        h->misses = tlr_metric_series(f, (const char *const[]){ "miss" });
        h->stored = tlr_metric_series(f, (const char *const[]){ "stored" });
        h->evicted = tlr_metric_series(f, (const char *const[]){ "evicted" });
        tlr_metric_family *cf = tlr_metrics_counter(
            o->metrics, "tailor_solver_cluster_state_total",
            "Requests whose cluster went by reference, by result: hit (state held), built "
            "(from a delta), miss (answered ClusterMiss), invalid.", 1, lbl);
        h->cs_hit = tlr_metric_series(cf, (const char *const[]){ "hit" });
        h->cs_built = tlr_metric_series(cf, (const char *const[]){ "built" });
        h->cs_miss = tlr_metric_series(cf, (const char *const[]){ "miss" });
        h->cs_invalid = tlr_metric_series(cf, (const char *const[]){ "invalid" });
        /* Karpenter's DurationBuckets (controller-runtime's, up to 600 s). */
        static const double b[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4,
                                    0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5,
                                    3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50,
                                    60, 120, 150, 300, 450, 600 };
        static const char *const cl[] = { "controller" };
        tlr_metric_family *d = tlr_metrics_histogram(
            o->metrics, "karpenter_scheduler_scheduling_duration_seconds",
            "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
            1, cl, b, (int)(sizeof(b) / sizeof(b[0])));
        h->sched_provisioner = tlr_metric_series(d, (const char *const[]){ "provisioner" });
        h->sched_disruption = tlr_metric_series(d, (const char *const[]){ "disruption" });
        static const char *const ql[] = { "controller", "scheduling_id" };
        h->queue = tlr_metrics_gauge(o->metrics, "karpenter_scheduler_queue_depth",
                                     "The number of pods currently waiting to be scheduled.", 2, ql);
    }
    *out = h;
}

static void entry_free(cat_entry *e)
{
    free(e->hash);
    tailor__v1__catalog__free_unpacked(e->cat, NULL);
}

void solver_handlers_free(solver_handlers *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        entry_free(&h->e[i]);
    free(h->e);
    free(h->replica_id);
    tlr_cstate_free(h->states);
    free(h);
}

size_t solver_handlers_cached(const solver_handlers *h)
{
    return h->n;
}

static void count(tlr_metric *m)
{
    if (m)
        tlr_counter_inc(m);
}

static cat_entry *cache_find(solver_handlers *h, const char *hash)
{
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->e[i].hash, hash)) {
            h->e[i].used = ++h->clock;
            return &h->e[i];
        }
    return NULL;
}

/* Is hash one of the request's refs? (such entries are not evicted) */
static bool wanted(const Tailor__V1__CatalogRef *const *refs, size_t n, const char *hash)
{
    for (size_t i = 0; i < n; i++)
        if (refs[i]->hash && !strcmp(refs[i]->hash, hash))
            return true;
    return false;
}

static void cache_evict(solver_handlers *h, const Tailor__V1__CatalogRef *const *refs, size_t nrefs)
{
    while (h->n > h->max_entries || h->bytes > h->max_bytes) {
        size_t victim = h->n;
        for (size_t i = 0; i < h->n; i++)
            if (!wanted(refs, nrefs, h->e[i].hash) && (victim == h->n || h->e[i].used < h->e[victim].used))
                victim = i;
        if (victim == h->n)
            return;   /* everything cached is in use by this request */
        h->bytes -= h->e[victim].bytes;
        entry_free(&h->e[victim]);
        h->e[victim] = h->e[--h->n];
        count(h->evicted);
    }
}

/* Store a deep copy of cat under hash (replacing an entry of that hash). */
static int cache_store(solver_handlers *h, const char *hash, const Tailor__V1__Catalog *cat)
{
    size_t len = tailor__v1__catalog__get_packed_size(cat);
    uint8_t *buf = tlr_malloc(len ? len : 1);
    tailor__v1__catalog__pack(cat, buf);
    Tailor__V1__Catalog *copy = tailor__v1__catalog__unpack(NULL, len, buf);
    free(buf);
    if (!copy)
        return TLR_E_DECODE;
    cat_entry *old = cache_find(h, hash);
    if (old) {
        h->bytes -= old->bytes;
        tailor__v1__catalog__free_unpacked(old->cat, NULL);
        old->cat = copy;
        old->bytes = len;
        h->bytes += len;
        return TLR_OK;
    }
    TLR_GROW(h->e, h->cap, h->n + 1);
    cat_entry *e = &h->e[h->n++];
    e->hash = tlr_strdup(hash);
    e->cat = copy;
    e->bytes = len;
    e->used = ++h->clock;
    h->bytes += len;
    count(h->stored);
    return TLR_OK;
}

/* Resolve refs into a new array of shallow CatalogRef copies pointing at
 * cached catalogs (or left without a catalog: a miss).  *out (owned by the
 * caller, free() it) holds n entries; the catalogs stay owned by the cache
 * and are valid until the next request. */
static Tailor__V1__CatalogRef **resolve_catalogs(solver_handlers *h,
                                                 Tailor__V1__CatalogRef *const *refs, size_t n,
                                                 Tailor__V1__CatalogRef *store)
{
    for (size_t i = 0; i < n; i++)
        if (refs[i]->catalog && refs[i]->hash && *refs[i]->hash)
            cache_store(h, refs[i]->hash, refs[i]->catalog);
    cache_evict(h, (const Tailor__V1__CatalogRef *const *)refs, n);
    Tailor__V1__CatalogRef **v = tlr_malloc((n + 1) * sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        store[i] = *refs[i];
        v[i] = &store[i];
        if (refs[i]->catalog && (!refs[i]->hash || !*refs[i]->hash))
            continue;   /* unnamed catalog: used as sent, not cached */
        cat_entry *e = cache_find(h, refs[i]->hash ? refs[i]->hash : "");
        store[i].catalog = e ? e->cat : NULL;
        count(e ? h->hits : h->misses);
    }
    return v;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void queue_begin(solver_handlers *h, const char *controller, const char *id, size_t pods)
{
    if (h->queue)
        tlr_metrics_gauge_set(h->queue, (const char *const[]){ controller, id ? id : "" },
                              (double)pods);
}

static void queue_end(solver_handlers *h)
{
    if (!h->queue)
        return;
    tlr_metrics_family_mark_stale(h->queue);
    tlr_metrics_family_sweep_stale(h->queue);
}

/* The generations of epoch held, newest first, in held[16]; how many. */
static size_t held_gens(solver_handlers *h, int64_t epoch, uint64_t held[16])
{
    size_t n = tlr_cstate_held(h->states, epoch, held, 16);
    return n < 16 ? n : 16;
}

/* Why a request's cluster by reference was not resolved. */
typedef struct refusal {
    const char *reason;        /* "ClusterMiss" or "Invalid" */
    char why[512];
    uint64_t held[16];         /* ClusterMiss: the generations held */
    size_t nheld;
} refusal;

/* Resolve a request's cluster sent by reference (cs->by_ref; cs is the
 * request's, which the REP server frees after the reply: the delta's
 * messages move into the store).  TLR_OK: *view is the whole state (NULL
 * when cs is inline).  Otherwise *rf says why. */
static int resolve_cluster(solver_handlers *h, const Tailor__V1__ClusterState *cs,
                           tlr_cstate_view **view, refusal *rf)
{
    *view = NULL;
    rf->nheld = 0;
    if (!cs || !cs->by_ref)
        return TLR_OK;
    uint64_t before[16];
    size_t nb = held_gens(h, cs->watcher_epoch_unix_ms, before);
    bool was_held = false;
    for (size_t i = 0; i < nb; i++)
        was_held |= before[i] == cs->generation;
    int rc = tlr_cstate_resolve(h->states, (Tailor__V1__ClusterState *)cs, view, rf->why,
                                sizeof(rf->why));
    if (rc == TLR_OK) {
        count(was_held ? h->cs_hit : h->cs_built);
        return TLR_OK;
    }
    if (rc == TLR_E_NOTFOUND) {
        count(h->cs_miss);
        rf->reason = "ClusterMiss";
        rf->nheld = held_gens(h, cs->watcher_epoch_unix_ms, rf->held);
    } else {
        count(h->cs_invalid);
        rf->reason = "Invalid";
    }
    return rc;
}

static int handle_solve(void *arg, const ProtobufCMessage *msg, const char *request_id,
                        ProtobufCMessage **reply, tlr_status *st)
{
    (void)st;
    solver_handlers *h = arg;
    const Tailor__V1__SolveRequest *req = (const Tailor__V1__SolveRequest *)msg;
    tlr_solve_opts o = { .strategy = h->strategy, .replica_id = h->replica_id,
                         .no_lower_bound = req->n_pending_pods > h->lb_max_pods,
                         .replay = h->scheduler_replay };
    tlr_cstate_view *view;
    refusal rf;
    int rc = resolve_cluster(h, req->cluster, &view, &rf);
    if (rc) {
        *reply = &tlr_solve_refusal(&o, rc, rf.reason, rf.why, rf.held, rf.nheld)->base;
        return TLR_OK;
    }
    queue_begin(h, "provisioner", req->batch_id[0] ? req->batch_id : request_id,
                req->n_pending_pods);
    Tailor__V1__CatalogRef *store = tlr_malloc((req->n_catalogs + 1) * sizeof(*store));
    Tailor__V1__SolveRequest copy = *req;
    copy.catalogs = resolve_catalogs(h, req->catalogs, req->n_catalogs, store);
    if (view)
        copy.cluster = (Tailor__V1__ClusterState *)tlr_cstate_view_state(view);
    Tailor__V1__SolveResponse *resp = NULL;
    /* A catalog miss or a malformed request still comes back as a
     * SolveResponse with its status set: that is the reply. */
    double t0 = now_s();
    tlr_solve(&copy, &o, &resp);
    if (view)
        resp->cluster_generation = req->cluster->generation;
    if (h->sched_provisioner)
        tlr_histogram_observe(h->sched_provisioner, now_s() - t0);
    queue_end(h);
    tlr_cstate_view_free(view);
    free(copy.catalogs);
    free(store);
    *reply = &resp->base;
    return TLR_OK;
}

static int handle_simulate(void *arg, const ProtobufCMessage *msg, const char *request_id,
                           ProtobufCMessage **reply, tlr_status *st)
{
    (void)request_id;
    (void)st;
    solver_handlers *h = arg;
    const Tailor__V1__SimulateRequest *req = (const Tailor__V1__SimulateRequest *)msg;
    tlr_solve_opts o = { .strategy = h->strategy, .replica_id = h->replica_id };
    tlr_cstate_view *view;
    refusal rf;
    int rc = resolve_cluster(h, req->cluster, &view, &rf);
    if (rc) {
        *reply = &tlr_simulate_refusal(&o, rc, rf.reason, rf.why, rf.held, rf.nheld)->base;
        return TLR_OK;
    }
    Tailor__V1__CatalogRef *store = tlr_malloc((req->n_catalogs + 1) * sizeof(*store));
    Tailor__V1__SimulateRequest copy = *req;
    copy.catalogs = resolve_catalogs(h, req->catalogs, req->n_catalogs, store);
    if (view)
        copy.cluster = (Tailor__V1__ClusterState *)tlr_cstate_view_state(view);
    Tailor__V1__SimulateResponse *resp = NULL;
    double t0 = now_s();
    tlr_simulate(&copy, &o, &resp);
    if (view)
        resp->cluster_generation = req->cluster->generation;
    if (h->sched_disruption)
        tlr_histogram_observe(h->sched_disruption, now_s() - t0);
    tlr_cstate_view_free(view);
    free(copy.catalogs);
    free(store);
    *reply = &resp->base;
    return TLR_OK;
}

static void solve_done(void *arg, ProtobufCMessage *reply)
{
    (void)arg;
    tlr_solve_response_free((Tailor__V1__SolveResponse *)reply);
}

static void simulate_done(void *arg, ProtobufCMessage *reply)
{
    (void)arg;
    tlr_simulate_response_free((Tailor__V1__SimulateResponse *)reply);
}

tlr_rep_route solver_handlers_solve_route(solver_handlers *h)
{
    tlr_rep_route r = { &tailor__v1__solve_request__descriptor, handle_solve, solve_done, h };
    return r;
}

tlr_rep_route solver_handlers_simulate_route(solver_handlers *h)
{
    tlr_rep_route r = { &tailor__v1__simulate_request__descriptor, handle_simulate, simulate_done, h };
    return r;
}
