/* main.c - tailor-watcher: settings and wiring only.
 *
 * The watcher is the only reader of the Kubernetes watch streams.  One
 * informer per kind feeds the cache (cache.c) on the loop thread; each
 * applied change is announced on the "cluster" topic (one RESYNCED notice
 * per relist instead of one per listed object), a pod entering the
 * pending set (pending.c) triggers the batcher (batcher.c), and when the
 * batcher says so the whole pending set and cluster state go out on the
 * "pending" topic (snapshot.c): the Nodes and NodeClaims by reference, as
 * a delta from the previous batch (the whole state on the first one of
 * the process).  Snapshot requests are answered on REP; a launcher that
 * missed a batch's base asks there for the state by reference.
 * /readyz stays 503, naming the kinds not yet listed, until every
 * informer has synced; nothing is published before that.  What the cache
 * cannot use as written is said to users through report.c: Events and
 * status conditions, queued on a tlr_kube_writeq so the loop never waits
 * on the API server.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "batcher.h"
#include "cache.h"
#include "gauges.h"
#include "podmetrics.h"
#include "report.h"
#include "snapshot.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_err.h"
#include "tlr_kube.h"
#include "tlr_kube_writeq.h"
#include "tlr_pubsub.h"
#include "tlr_service.h"
#include "tlr_time.h"

typedef struct watcher_cfg {
    tlr_service_conf svc;       /* must be first */
    char *listen;
    char *publish;
    char *decisions;            /* SUB listener for the launchers' decisions; "" = none */
    int max_msg_mib;
    char *kubeconfig;
    bool in_cluster;
    int64_t batch_idle_ms;
    int64_t batch_max_ms;
    int64_t resync_ms;
    bool batch_by_ref;
} watcher_cfg;

typedef struct watcher_app watcher_app;

typedef struct kind_ctx {
    watcher_app *app;
    Tailor__V1__ClusterKind kind;
    tlr_kube_informer *inf;
    bool relisting;
    uint64_t restarts_seen;
    tlr_metric *objects, *restarts, *invalid;
} kind_ctx;

struct watcher_app {
    watcher_cfg cfg;
    tlr_service *svc;
    tlr_logger *log;
    tlr_loop *loop;
    tlr_kube *kube;
    tlr_rep_server *rep;
    tlr_pub *pub;
    tlr_sub *decisions;             /* the launchers' per-pod decisions */
    watcher_cache *cache;
    watcher_report *report;         /* Events and conditions about bad objects */
    tlr_kube_writeq *writes;        /* where report's writes queue */
    watcher_batcher *batcher;
    kind_ctx kinds[WATCHER_NKINDS];
    watcher_snapshot *inflight;     /* the reply lent to the REP server */
    bool ready;
    uint64_t sequence;
    uint64_t published_gen;         /* generation of the last batch sent; 0 = none */
    tlr_timer_id batch_timer, house_timer;
    int64_t batch_due;              /* mono ms the batch timer fires; 0 = none */
    tlr_metric *pending, *published;
    watcher_gauges *gauges;         /* Karpenter's cluster-state gauges */
    int64_t gauges_due;             /* mono ms of the next recompute */
    watcher_podmetrics *podm;       /* Karpenter's per-pod metrics */
};

/* Transport authorization (docs/security.md): the cluster state goes to
 * the launcher ("pending"; a Snapshot by reference when it does not hold
 * a batch's base) and the disruptor ("cluster", Snapshot); an operator
 * may ask for a Snapshot; decisions come from the launcher. */
static const char *const snapshot_callers[] = { TLR_ID_LAUNCHER, TLR_ID_DISRUPTOR, TLR_ID_CTL, NULL };
static const char *const topic_subscribers[] = { TLR_ID_LAUNCHER, TLR_ID_DISRUPTOR, NULL };
static const char *const decision_publishers[] = { TLR_ID_LAUNCHER, NULL };

static const tlr_setting settings[] = {
    { "listen", "TAILOR_LISTEN", TLR_SET_STR, offsetof(watcher_cfg, listen),
      "tls+tcp://127.0.0.1:7111", "nng URL to answer Snapshot requests on" },
    { "publish", "TAILOR_PUBLISH", TLR_SET_STR, offsetof(watcher_cfg, publish),
      "tls+tcp://127.0.0.1:7112", "nng URL to publish the pending and cluster topics on" },
    { "decisions", "TAILOR_DECISIONS", TLR_SET_STR, offsetof(watcher_cfg, decisions), "",
      "nng URL to listen on for the launchers' per-pod scheduling decisions, for Karpenter's "
      "pod provisioning metrics (e.g. tcp://0.0.0.0:7113; empty: not listened for)" },
    TLR_SETTING_MAX_MESSAGE_MIB(watcher_cfg, max_msg_mib),
    TLR_SETTING_KUBECONFIG(watcher_cfg, kubeconfig),
    TLR_SETTING_IN_CLUSTER(watcher_cfg, in_cluster),
    { "batch-idle", "TAILOR_BATCH_IDLE", TLR_SET_DURATION, offsetof(watcher_cfg, batch_idle_ms), "1s",
      "close a batch window this long after the last new pending pod", .min = 1, .max = 3600000 },
    { "batch-max", "TAILOR_BATCH_MAX", TLR_SET_DURATION, offsetof(watcher_cfg, batch_max_ms), "10s",
      "close a batch window at the latest this long after it opened", .min = 1, .max = 3600000 },
    { "batch-by-reference", "TAILOR_BATCH_BY_REFERENCE", TLR_SET_BOOL,
      offsetof(watcher_cfg, batch_by_ref), "true",
      "send each pending batch's nodes and NodeClaims by reference, as a delta from the previous "
      "batch (off: the whole cluster state inline in every batch, as before; for comparison)" },
    { "resync", "TAILOR_RESYNC", TLR_SET_DURATION, offsetof(watcher_cfg, resync_ms), "30s",
      "publish the pending set again this often while pods stay pending", .min = 100,
      .max = 86400000 },
};

static void tick(watcher_app *app);

static void on_batch_timer(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    (void)loop;
    (void)id;
    watcher_app *app = arg;
    app->batch_timer = 0;
    app->batch_due = 0;
    tick(app);
}

static void publish_batch(watcher_app *app, const watcher_batch_window *w)
{
    watcher_snapshot *s;
    watcher_snapshot_for_batch(app->cache, w, ++app->sequence,
                               app->cfg.batch_by_ref ? app->published_gen : 0, tlr_wall_ms(), &s);
    Tailor__V1__PendingBatch *b = watcher_snapshot_batch(s);
    Tailor__V1__ClusterRef *ref = b->cluster->by_ref;
    if (!app->cfg.batch_by_ref) {
        /* a whole state (base 0) put inline: the arrays only move */
        b->cluster->nodes = ref->nodes;
        b->cluster->n_nodes = ref->n_nodes;
        b->cluster->nodeclaims = ref->nodeclaims;
        b->cluster->n_nodeclaims = ref->n_nodeclaims;
        b->cluster->by_ref = NULL;
    }
    size_t bytes = tailor__v1__pending_batch__get_packed_size(b);
    int rc = tlr_pub_send(app->pub, "pending", &b->base);
    if (rc)
        TLR_ERROR(app->log, "could not publish a pending batch", TLR_S("batch", b->batch_id), TLR_ERR(rc));
    else {
        /* The next batch is a delta from this one.  A subscriber that lost
         * it asks for a Snapshot by reference; after a failed send the
         * base stays the last batch that went out. */
        app->published_gen = b->cluster->generation;
        tlr_counter_inc(app->published);
        TLR_INFO(app->log, "published pending batch", TLR_S("batch", b->batch_id),
                 TLR_I("pods", (int64_t)b->n_pending_pods), TLR_I("nodes", (int64_t)ref->n_nodes),
                 TLR_I("removed", (int64_t)(ref->n_removed_nodes + ref->n_removed_nodeclaims)),
                 TLR_I("nodeclaims", (int64_t)ref->n_nodeclaims),
                 TLR_I("generation", (int64_t)b->cluster->generation),
                 TLR_I("base_generation", ref->has_delta ? (int64_t)ref->base_generation
                                                         : (int64_t)b->cluster->generation),
                 TLR_I("bytes", (int64_t)bytes),
                 TLR_I("window_ms", b->window_end_unix_ms - b->window_start_unix_ms));
    }
    watcher_snapshot_free(s);
}

/* Ask the batcher; publish if it says so; arm the timer for its next
 * deadline (kept when unchanged, so a burst of events does not churn it). */
static void tick(watcher_app *app)
{
    watcher_batch_window w;
    int64_t wait = -1;
    if (watcher_batcher_decide(app->batcher, watcher_cache_pending(app->cache), app->ready, &w, &wait))
        publish_batch(app, &w);
    int64_t due = wait >= 0 ? tlr_mono_ms() + wait : 0;
    if (due == app->batch_due)
        return;
    if (app->batch_timer)
        tlr_loop_cancel_timer(app->loop, app->batch_timer);
    app->batch_timer = due ? tlr_loop_add_timer(app->loop, wait, on_batch_timer, app) : 0;
    app->batch_due = due;
}

/* Readiness follows sync; while not ready /readyz names what is missing. */
static void update_ready(watcher_app *app)
{
    char missing[256], reason[300];
    bool all = watcher_cache_all_synced(app->cache, missing, sizeof(missing));
    snprintf(reason, sizeof(reason), "informers not synced: %s", missing);
    tlr_service_set_ready(app->svc, all, all ? NULL : reason);
    if (all && !app->ready)
        TLR_INFO(app->log, "every informer synced; publishing enabled");
    app->ready = all;
}

/* Capacity appeared or went away: a Node joined or left, or a NodeClaim
 * changed phase (the launcher marks it Initialized when its node is
 * Ready).  Pods still pending then deserve a new plan now, against the
 * capacity that really exists, not at the next resync: the scheduler may
 * have packed a new node differently than the plan did.  Node status
 * heartbeats (MODIFIED) do not count, or a busy cluster would keep every
 * window open until its max. */
static bool capacity_changed(Tailor__V1__ClusterKind kind, tlr_kube_event_type type)
{
    if (kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE)
        return type == TLR_KUBE_ADDED || type == TLR_KUBE_DELETED;
    return kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM &&
           (type == TLR_KUBE_ADDED || type == TLR_KUBE_MODIFIED || type == TLR_KUBE_DELETED);
}

static int on_event(void *arg, tlr_kube_event_type type, json_object *obj)
{
    kind_ctx *k = arg;
    watcher_app *app = k->app;
    Tailor__V1__ClusterChange chg;
    bool became = false;
    if (type == TLR_KUBE_RELIST_START)
        k->relisting = true;
    watcher_cache_apply(app->cache, k->kind, type, obj, &chg, &became);
    if (k->kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD)
        watcher_podmetrics_apply(app->podm, type, obj, tlr_wall_ms());
    if (type == TLR_KUBE_RELIST_DONE)
        k->relisting = false;
    if (chg.type != TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_UNSPECIFIED && !k->relisting) {
        chg.event_unix_ms = tlr_wall_ms();
        int rc = tlr_pub_send(app->pub, "cluster", &chg.base);
        if (rc)
            TLR_WARN(app->log, "could not publish a cluster change", TLR_ERR(rc));
    }
    if (became || (!k->relisting && capacity_changed(k->kind, type) &&
                   watcher_cache_pending(app->cache) > 0))
        watcher_batcher_trigger(app->batcher);
    tlr_gauge_set(k->objects, (double)watcher_cache_count(app->cache, k->kind));
    tlr_gauge_set(k->invalid, (double)watcher_report_invalid_count(app->report, k->kind));
    tlr_gauge_set(app->pending, (double)watcher_cache_pending(app->cache));
    if (type == TLR_KUBE_RELIST_DONE)
        update_ready(app);
    tick(app);
    return TLR_OK;
}

static void on_house(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    (void)id;
    watcher_app *app = arg;
    for (int i = WATCHER_KIND_FIRST; i <= WATCHER_KIND_LAST; i++) {
        kind_ctx *k = &app->kinds[i];
        uint64_t r = tlr_kube_informer_restarts(k->inf);
        if (r > k->restarts_seen)
            tlr_counter_add(k->restarts, (double)(r - k->restarts_seen));
        k->restarts_seen = r;
    }
    /* Every 5 s, as Karpenter's metrics controllers, but never more than
     * 5% of the loop: a pass unpacks every bound pod (about 0.3 s for
     * 100k pods on 2000 nodes). */
    int64_t t0 = tlr_mono_ms();
    if (t0 >= app->gauges_due) {
        watcher_gauges_update(app->gauges, app->cache, app->ready, tlr_wall_ms());
        watcher_podmetrics_update(app->podm, app->cache, tlr_wall_ms());
        int64_t took = tlr_mono_ms() - t0;
        app->gauges_due = t0 + (took * 20 > 5000 ? took * 20 : 5000);
    }
    app->house_timer = tlr_loop_add_timer(loop, 1000, on_house, app);
}

static int handle_snapshot(void *arg, const ProtobufCMessage *msg, const char *request_id,
                           ProtobufCMessage **reply, tlr_status *st)
{
    (void)request_id;
    (void)st;
    watcher_app *app = arg;
    watcher_snapshot_for_request(app->cache, (const Tailor__V1__SnapshotRequest *)msg, tlr_wall_ms(),
                                 &app->inflight);
    *reply = &watcher_snapshot_response(app->inflight)->base;
    return TLR_OK;
}

static void snapshot_done(void *arg, ProtobufCMessage *reply)
{
    (void)reply;
    watcher_app *app = arg;
    watcher_snapshot_free(app->inflight);
    app->inflight = NULL;
}

static void on_decisions(void *arg, const char *topic, const Tailor__V1__Envelope *env)
{
    (void)topic;
    watcher_app *app = arg;
    ProtobufCMessage *m = NULL;
    char err[256];
    if (tlr_envelope_payload(env, &tailor__v1__scheduling_decisions__descriptor, &m, err,
                             sizeof(err))) {
        TLR_WARN(app->log, "bad scheduling decisions dropped", TLR_S("sender", env->sender),
                 TLR_S("why", err));
        return;
    }
    const Tailor__V1__SchedulingDecisions *d = (const Tailor__V1__SchedulingDecisions *)m;
    for (size_t i = 0; i < d->n_decisions; i++) {
        const Tailor__V1__PodSchedulingDecision *p = d->decisions[i];
        watcher_podmetrics_decided(app->podm, p->namespace_, p->name, p->uid, p->scheduled,
                                   d->decided_unix_ms);
    }
    protobuf_c_message_free_unpacked(m, NULL);
}

static void metrics_init(watcher_app *app)
{
    tlr_metrics *m = tlr_service_metrics(app->svc);
    static const char *const kl[] = { "kind" };
    app->pending = tlr_metric_series(
        tlr_metrics_gauge(m, "tailor_watcher_pending_pods", "Pods in the pending set now.", 0, NULL), NULL);
    app->published = tlr_metric_series(
        tlr_metrics_counter(m, "tailor_watcher_batches_published_total",
                            "Pending batches published on the pending topic.", 0, NULL), NULL);
    tlr_metric_family *objs = tlr_metrics_gauge(m, "tailor_watcher_cache_objects",
                                                "Objects held in the cache, by kind.", 1, kl);
    tlr_metric_family *rs = tlr_metrics_counter(m, "tailor_watcher_watch_restarts_total",
                                                "Watches restarted (errors, 410 Gone, timeouts), by kind.", 1, kl);
    tlr_metric_family *bad = tlr_metrics_gauge(
        m, "tailor_watcher_invalid_objects",
        "Objects that do not convert (a FailedValidation Event said why), by kind.", 1, kl);
    for (int i = WATCHER_KIND_FIRST; i <= WATCHER_KIND_LAST; i++) {
        const char *name = watcher_kind_name(i);
        app->kinds[i].invalid = tlr_metric_series(bad, (const char *const[]){ name });
        app->kinds[i].objects = tlr_metric_series(objs, (const char *const[]){ name });
        app->kinds[i].restarts = tlr_metric_series(rs, (const char *const[]){ name });
    }
    watcher_gauges_create(m, &app->gauges);
    watcher_podmetrics_create(m, &app->podm);
}

/* report's writes: queued, never written on the loop thread. */
static int queue_event(void *arg, const tlr_kube_event_spec *e)
{
    watcher_app *app = arg;
    return app->writes ? tlr_kube_writeq_event(app->writes, e) : TLR_E_UNAVAILABLE;
}

static int queue_status(void *arg, const tlr_kube_res *res, const char *name, const char *patch)
{
    watcher_app *app = arg;
    return app->writes ? tlr_kube_writeq_patch(app->writes, res, NULL, name, "status",
                                                TLR_KUBE_PATCH_MERGE, patch)
                       : TLR_E_UNAVAILABLE;
}

static int start(tlr_service *svc, void *arg)
{
    watcher_app *app = arg;
    size_t max_msg = (size_t)app->cfg.max_msg_mib << 20;
    char err[512] = "";
    app->svc = svc;
    app->log = tlr_service_log(svc);
    app->loop = tlr_service_loop(svc);
    const watcher_report_opts ro = { .ops = { queue_event, queue_status, app }, .log = app->log };
    watcher_report_create(&ro, &app->report);
    watcher_cache_create(&(watcher_cache_opts){ .log = app->log, .epoch_ms = tlr_wall_ms(),
                                                .report = app->report },
                         &app->cache);
    const watcher_batcher_opts bo = { .idle_ms = app->cfg.batch_idle_ms, .max_ms = app->cfg.batch_max_ms,
                                      .resync_ms = app->cfg.resync_ms };
    watcher_batcher_create(&bo, &app->batcher);
    metrics_init(app);
    update_ready(app);

    const char *kc = app->cfg.kubeconfig && app->cfg.kubeconfig[0] ? app->cfg.kubeconfig : NULL;
    int rc = tlr_kube_connect(kc, app->cfg.in_cluster, &(tlr_kube_opts){ .log = app->log }, &app->kube,
                              err, sizeof(err));
    if (rc) {
        TLR_ERROR(app->log, "cannot reach Kubernetes", TLR_S("kubeconfig", kc ? kc : "(default)"),
                  TLR_S("error", err), TLR_ERR(rc));
        return rc;
    }
    const tlr_kube_writeq_opts wo = { .kc = app->kube, .log = app->log, .max = 10000,
                                      .source = "tailor-watcher", .reporting = "tailor-watcher" };
    tlr_kube_writeq_create(&wo, &app->writes);
    const tlr_rep_route routes[] = {
        { &tailor__v1__snapshot_request__descriptor, handle_snapshot, snapshot_done, app,
          .max_request = TLR_REQ_MAX_SMALL, .allow = snapshot_callers },
    };
    if ((rc = tlr_service_listen(svc, app->cfg.listen, max_msg, routes, 1, &app->rep)) ||
        (rc = tlr_service_publish(svc, app->cfg.publish, max_msg, topic_subscribers, &app->pub)))
        return rc;
    if (app->cfg.decisions && app->cfg.decisions[0]) {
        const char *urls[] = { app->cfg.decisions };
        const char *topics[] = { "decisions" };
        const size_t topic_max[] = { TLR_TOPIC_MAX_DECISIONS };
        const tlr_sub_opts so = { .urls = urls, .nurls = 1, .topics = topics, .ntopics = 1,
                                  .max_msg = max_msg, .log = app->log, .fn = on_decisions,
                                  .arg = app, .listen = true, .topic_max = topic_max,
                                  .tls = tlr_service_tls(svc), .allow = decision_publishers };
        if ((rc = tlr_sub_create(app->loop, &so, &app->decisions)))
            return rc;
    }
    for (int i = WATCHER_KIND_FIRST; i <= WATCHER_KIND_LAST; i++) {
        kind_ctx *k = &app->kinds[i];
        k->app = app;
        k->kind = i;
        const tlr_kube_informer_opts io = { .res = watcher_kind_res(i), .handler = on_event, .arg = k,
                                            .log = app->log };
        if ((rc = tlr_kube_informer_start(app->kube, app->loop, &io, &k->inf))) {
            TLR_ERROR(app->log, "cannot start informer", TLR_S("kind", watcher_kind_name(i)), TLR_ERR(rc));
            return rc;
        }
    }
    app->house_timer = tlr_loop_add_timer(app->loop, 1000, on_house, app);
    return TLR_OK;
}

static void stop(tlr_service *svc, void *arg)
{
    (void)svc;
    watcher_app *app = arg;
    for (int i = WATCHER_KIND_FIRST; i <= WATCHER_KIND_LAST; i++) {
        tlr_kube_informer_free(app->kinds[i].inf);
        app->kinds[i].inf = NULL;
    }
    if (app->batch_timer)
        tlr_loop_cancel_timer(app->loop, app->batch_timer);
    if (app->house_timer)
        tlr_loop_cancel_timer(app->loop, app->house_timer);
    tlr_sub_free(app->decisions);
    app->decisions = NULL;
    tlr_pub_free(app->pub);
    tlr_rep_server_free(app->rep);
    tlr_kube_writeq_free(app->writes);     /* flushes, then stops using the client */
    app->writes = NULL;
    tlr_kube_free(app->kube);
    watcher_snapshot_free(app->inflight);
    watcher_batcher_free(app->batcher);
    watcher_cache_free(app->cache);
    watcher_report_free(app->report);
    watcher_gauges_free(app->gauges);
    app->gauges = NULL;
    watcher_podmetrics_free(app->podm);
    app->podm = NULL;
}

int main(int argc, char **argv)
{
    watcher_app app = { 0 };
    const tlr_service_ops ops = {
        .name = "watcher",
        .summary = "Watches pods, nodes and Karpenter resources; publishes pending pods in batches and serves snapshots.",
        .http_default = "127.0.0.1:8111",
        .settings = settings,
        .nsettings = sizeof(settings) / sizeof(settings[0]),
        .cfg = &app.cfg,
        .start = start,
        .stop = stop,
        .app = &app,
    };
    return tlr_service_main(argc, argv, &ops);
}
