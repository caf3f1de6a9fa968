/* ds_app.c - the disruptor process wired together (ds_app.h).
 *
 * Threads: one.  The termination pass, the disruption pass, the
 * interruption poll, the Lease and Explain requests all run on the service
 * loop, so the controllers need no locks; Kubernetes, AWS and req/rep
 * calls block the loop while they run.  Only the Lease holder acts; a
 * follower answers Explain from the watcher's state and acts on nothing.
 * The Lease is renewed by a thread of its own (tlr_lease.h), which
 * publishes "valid until" in a->fence; every Kubernetes write (taint,
 * eviction, NodeClaim delete, status) and SQS call checks it and is cut
 * at it, so a pass that is slow stops acting when the Lease does.
 * Terminations go through the launcher, whose own Lease fences them.
 *
 * Without its dependencies (no Kubernetes configuration, say) the
 * disruptor still serves -- Ping, metrics, Explain answering UNAVAILABLE
 * with what is missing -- the way a misconfigured controller stays up to
 * be inspected rather than crash-looping.
 */
#include "ds_app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients.h"
#include "ds_cloud.h"
#include "controller.h"
#include "explain.h"
#include "interruption.h"
#include "ds_kube.h"
#include "tlr_lease.h"
#include "protect.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_awscreds.h"
#include "termination.h"
#include "tlr_alloc.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_kube.h"
#include "tlr_pubsub.h"
#include "tlr_rep.h"
#include "tlr_req.h"

struct ds_app {
    ds_app_cfg *cfg;
    tlr_service *svc;
    tlr_logger *log;
    tlr_loop *loop;
    tlr_kube *kube;
    Tailor__V1__Catalog *catalog;
    tlr_req_client *r_launcher, *r_solver, *r_watcher;
    ds_client c_launcher, c_solver, c_watcher;
    ds_term *term;
    ds_protect *protect;
    ds_ctl *ctl;
    ds_intr *intr;
    ds_podevents *podevents;
    tlr_aws_creds *creds;
    ds_cloud *cloud;
    tlr_sub *sub;
    tlr_fence fence;         /* valid-until, written by the Lease thread */
    tlr_kube *lease_kube;    /* the Lease thread's own client */
    tlr_lease *lease;
    bool leading;            /* as last seen by on_lead (transitions) */
    tlr_rep_server *rep;
    tlr_pub *pub;
    tlr_timer_id t_term, t_lead, t_disr, t_intr, t_cat;
    bool term_idle;          /* the next termination pass is an idle one */
    tlr_metric *m_term_passes;
    int64_t term_at;         /* mono ms of the last termination pass */
    bool launcher_catalog;   /* a->catalog came from the launcher */
    char why[640];   /* what is missing; "" when configured */
};

ds_app *ds_app_new(ds_app_cfg *cfg)
{
    ds_app *a = tlr_calloc(1, sizeof(*a));
    a->cfg = cfg;
    tlr_fence_init(&a->fence);
    return a;
}

void ds_app_delete(ds_app *a)
{
    free(a);
}

static void publish_event(void *arg, const Tailor__V1__DisruptionEvent *ev)
{
    ds_app *a = arg;
    if (a->pub)
        tlr_pub_send(a->pub, "disruption", &ev->base);
}

/* Termination passes list every NodeClaim and Node: every
 * --termination-interval while something terminates, but only every
 * --termination-idle-interval while nothing does -- at thousands of nodes
 * a LIST a second is real load on the API server for nothing.  What
 * starts a termination (a NodeClaim or Node added, changed or deleted, as
 * the watcher's cluster topic reports; a decision or interruption of our
 * own) brings the next pass forward (term_soon), so a deletion is drained
 * as promptly as before.  Node status updates do not: at 5,000 nodes they
 * come many times a second.  Without the watcher's topic there is nothing to
 * bring a pass forward: never idle. */
/* Whether this replica may act now: the Lease is valid (or not used). */
static bool leading(const ds_app *a)
{
    return !a->cfg->leader_elect || tlr_lease_leading(a->lease);
}

static void on_term(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    ds_app *a = arg;
    (void)id;
    bool busy = true;
    a->term_at = tlr_mono_ms();
    if (leading(a) && !a->cfg->dry_run) {
        ds_term_stats st;
        int rc = ds_term_pass(a->term, &st);
        tlr_counter_inc(a->m_term_passes);
        if (rc == TLR_OK && (st.terminating || st.finalized))
            TLR_DEBUG(a->log, "termination pass", TLR_I("finalized", st.finalized),
                      TLR_I("terminating", st.terminating), TLR_I("blocked", st.blocked),
                      TLR_I("terminated", st.terminated), TLR_I("evicted", st.evicted));
        busy = rc != TLR_OK || st.terminating || st.finalized || st.terminated;
    }
    a->term_idle = !busy && a->sub && a->cfg->termination_idle_ms > a->cfg->termination_every_ms;
    a->t_term = tlr_loop_add_timer(loop, a->term_idle ? a->cfg->termination_idle_ms
                                                      : a->cfg->termination_every_ms, on_term, a);
}

/* Bring an idle termination pass forward: no sooner than
 * --termination-interval after the last one. */
static void term_soon(ds_app *a)
{
    if (!a->term_idle || !a->t_term)
        return;
    tlr_loop_cancel_timer(a->loop, a->t_term);
    int64_t wait = a->term_at + a->cfg->termination_every_ms - tlr_mono_ms();
    a->term_idle = false;
    a->t_term = tlr_loop_add_timer(a->loop, wait > 0 ? wait : 0, on_term, a);
}

static void on_disr(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    ds_app *a = arg;
    (void)id;
    if (leading(a)) {
        ds_ctl_stats st;
        int rc = ds_ctl_pass(a->ctl, &st);
        if (rc && rc != TLR_E_NOTREADY)
            TLR_DEBUG(a->log, "disruption pass skipped", TLR_ERR(rc));
        else if (st.expired || st.executed || st.done)
            term_soon(a);   /* claims deleted: their drains start now */
    }
    a->t_disr = tlr_loop_add_timer(loop, a->cfg->disruption_every_ms, on_disr, a);
}

static void on_intr(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    ds_app *a = arg;
    (void)id;
    if (leading(a) && !a->cfg->dry_run) {
        ds_intr_stats st;
        if (ds_intr_pass(a->intr, &st) == TLR_OK && st.received) {
            TLR_INFO(a->log, "interruption messages", TLR_I("received", st.received),
                     TLR_I("handled", st.handled), TLR_I("ignored", st.ignored),
                     TLR_I("failed", st.failed), TLR_I("replacements", st.replacements));
            if (st.handled)
                term_soon(a);
        }
    }
    a->t_intr = tlr_loop_add_timer(loop, a->cfg->interruption_every_ms, on_intr, a);
}

/* The launcher's catalog: the prices it plans with (live from EC2 and the
 * Pricing API, or its file), so that savings are judged on what the
 * launcher will pay.  Until it first answers, the catalog file (if any)
 * prices nodes and the launcher is asked again every CATALOG_RETRY_MS. */
#define CATALOG_RETRY_MS 10000

static void set_catalog(ds_app *a, Tailor__V1__Catalog *cat)
{
    Tailor__V1__Catalog *old = a->catalog;
    a->catalog = cat;
    a->c_solver.catalog = cat;
    ds_client_free(&a->c_solver);   /* shaped from the old catalog */
    ds_protect_set_catalog(a->protect, cat);
    ds_ctl_set_catalog(a->ctl, cat);
    if (a->intr)
        ds_intr_set_catalog(a->intr, cat);
    tlr_catalog_free(old);
}

static void on_catalog(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    ds_app *a = arg;
    (void)id;
    Tailor__V1__CatalogResponse *resp = NULL;
    const char *known = a->launcher_catalog && a->catalog ? a->catalog->hash : NULL;
    int rc = tlr_launcher_clnt_catalog(&a->c_launcher.rpc, known, &resp, NULL);
    if (rc == TLR_OK && resp->catalog && resp->catalog->n_instance_types > 0) {
        Tailor__V1__Catalog *cat = resp->catalog;
        resp->catalog = NULL;
        TLR_INFO(a->log, "catalog from the launcher", TLR_S("hash", cat->hash),
                 TLR_S("previous", a->catalog ? a->catalog->hash : ""),
                 TLR_S("price_source", cat->price_source),
                 TLR_I("instance_types", (int64_t)cat->n_instance_types));
        set_catalog(a, cat);
        a->launcher_catalog = true;
    } else if (rc == TLR_OK && resp->catalog) {
        TLR_WARN(a->log, "the launcher's catalog is empty; keeping the current one");
    }
    bool got = rc == TLR_OK && a->launcher_catalog;
    if (resp)
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    a->t_cat = tlr_loop_add_timer(loop, got ? a->cfg->catalog_every_ms : CATALOG_RETRY_MS, on_catalog, a);
}

/* The watcher's "cluster" topic: a pod left a node -> its consolidateAfter
 * timer restarts (view.h); a NodeClaim or Node changed -> the termination
 * pass comes forward (on_term). */
static void on_cluster(void *arg, const char *topic, const Tailor__V1__Envelope *env)
{
    ds_app *a = arg;
    (void)topic;
    ProtobufCMessage *m = NULL;
    char err[256];
    if (tlr_envelope_payload(env, &tailor__v1__cluster_change__descriptor, &m, err, sizeof(err)))
        return;
    const Tailor__V1__ClusterChange *c = (const Tailor__V1__ClusterChange *)m;
    if (c->kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD &&
        c->type == TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_DELETED && c->node_name[0])
        ds_podevents_note(a->podevents, c->node_name,
                          c->event_unix_ms ? c->event_unix_ms : tlr_wall_ms());
    /* what termination acts on: a new object (its finalizer), one being
     * deleted, one gone -- not the status updates of thousands of nodes */
    if ((c->kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM ||
         c->kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE) &&
        (c->deleting || c->type == TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_ADDED ||
         c->type == TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_DELETED))
        term_soon(a);
    protobuf_c_message_free_unpacked(m, NULL);
}

/* Ping's leader flag follows the Lease thread's verdict; acting itself is
 * gated by the fence, not by this timer. */
static void on_lead(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    ds_app *a = arg;
    (void)id;
    bool now = leading(a);
    if (now != a->leading) {
        tlr_service_set_leader(a->svc, now);
        if (!now)
            TLR_WARN(a->log, "not leading: evictions, terminations and disruption stop",
                     TLR_S("identity", tlr_service_id(a->svc)));
    }
    a->leading = now;
    a->t_lead = tlr_loop_add_timer(loop, 250, on_lead, a);
}

/* The Lease thread with a Kubernetes client of its own, whose requests
 * time out well inside the renew deadline. */
static int start_lease(ds_app *a, tlr_service *svc)
{
    ds_app_cfg *cfg = a->cfg;
    char err[512];
    const char *kc = cfg->kubeconfig && cfg->kubeconfig[0] ? cfg->kubeconfig : NULL;
    tlr_kube_opts ko = { .log = a->log, .timeout_ms = (int)(cfg->lease_renew_deadline_ms / 2),
                         .connect_timeout_ms = (int)(cfg->lease_renew_deadline_ms / 2),
                         .user_agent = "tailor-disruptor/lease" };
    int rc = tlr_kube_connect(kc, cfg->in_cluster, &ko, &a->lease_kube, err, sizeof(err));
    if (rc) {
        snprintf(a->why, sizeof(a->why), "lease client: %s", err);
        return rc;
    }
    const char *ns = cfg->lease_namespace && cfg->lease_namespace[0]
                         ? cfg->lease_namespace : tlr_kube_namespace(a->kube);
    tlr_lease_opts lo = { a->lease_kube, ns, "tailor-disruptor", tlr_service_id(svc),
                          cfg->lease_ms, cfg->lease_renew_deadline_ms, cfg->lease_retry_ms,
                          &a->fence, a->log, tlr_service_metrics(svc) };
    if ((rc = tlr_lease_start(&lo, &a->lease, err, sizeof(err))))
        snprintf(a->why, sizeof(a->why), "%s", err);
    return rc;
}

static int handle_explain(void *arg, const ProtobufCMessage *req, const char *rid,
                          ProtobufCMessage **reply, tlr_status *st)
{
    ds_app *a = arg;
    (void)rid;
    if (!a->ctl) {
        tlr_status_set(st, TLR_E_UNAVAILABLE, "NotConfigured", "%s", a->why);
        return TLR_E_UNAVAILABLE;
    }
    Tailor__V1__ExplainResponse *resp = NULL;
    char err[512] = "";
    int rc = ds_explain(a->ctl, a->term, (const Tailor__V1__ExplainRequest *)req, &resp, err,
                        sizeof(err));
    if (rc) {
        tlr_status_set(st, rc, rc == TLR_E_NOTFOUND ? "NotFound" : "NotAvailable", "%s", err);
        return rc;
    }
    *reply = &resp->base;
    return TLR_OK;
}

static void free_reply(void *arg, ProtobufCMessage *reply)
{
    (void)arg;
    protobuf_c_message_free_unpacked(reply, NULL);
}

/* Transport authorization (docs/security.md): who the disruptor talks to
 * and who may talk to it. */
static const char *const only_launcher[] = { TLR_ID_LAUNCHER, NULL };
static const char *const only_solver[] = { TLR_ID_SOLVER, NULL };
static const char *const only_watcher[] = { TLR_ID_WATCHER, NULL };
static const char *const only_ctl[] = { TLR_ID_CTL, NULL };

static int req_client(ds_app *a, const char *const *urls, size_t n, size_t max_msg,
                      const char *const *servers, int max_age_ms, tlr_req_client **out)
{
    tlr_req_opts ro = { urls, n, (int)a->cfg->rpc_timeout_ms, 0, max_msg, a->log,
                        tlr_service_id(a->svc), tlr_service_tls(a->svc), servers,
                        .max_conn_age_ms = max_age_ms };
    return tlr_req_client_create(&ro, out);
}

/* Kubernetes, the catalog, the service clients and the controllers.  On
 * failure a->why says what is missing. */
static int connect_deps(ds_app *a, size_t max_msg)
{
    ds_app_cfg *cfg = a->cfg;
    char err[512];
    int rc;
    const char *kc = cfg->kubeconfig && cfg->kubeconfig[0] ? cfg->kubeconfig : NULL;
    /* Every write to Kubernetes and SQS is fenced by the Lease. */
    const tlr_fence *fence = cfg->leader_elect ? &a->fence : NULL;
    tlr_kube_opts ko = { .log = a->log, .fence = fence };
    if ((rc = tlr_kube_connect(kc, cfg->in_cluster, &ko, &a->kube, err, sizeof(err)))) {
        snprintf(a->why, sizeof(a->why), "kubernetes config: %s", err);
        return rc;
    }
    tlr_catalog_file_opts co = { cfg->region, (const char *const *)cfg->zones.items, cfg->zones.n,
                                 cfg->spot_discount, "file" };
    if (tlr_catalog_file_load(cfg->catalog, &co, &a->catalog, err, sizeof(err)) != TLR_OK) {
        /* Termination needs no catalog; consolidation does. */
        TLR_WARN(a->log, "no instance catalog: consolidation and explain cannot price nodes",
                 TLR_S("catalog", cfg->catalog ? cfg->catalog : ""), TLR_S("why", err));
        a->catalog = NULL;
    }
    const char *lu[1] = { cfg->launcher }, *wu[1] = { cfg->watcher };
    if ((rc = req_client(a, lu, 1, max_msg, only_launcher, 0, &a->r_launcher)) ||
        (rc = req_client(a, (const char *const *)cfg->solvers.items, cfg->solvers.n, max_msg,
                         only_solver, (int)cfg->solver_conn_age_ms, &a->r_solver)) ||
        (rc = req_client(a, wu, 1, max_msg, only_watcher, 0, &a->r_watcher))) {
        snprintf(a->why, sizeof(a->why), "service URLs: %s", tlr_strerror(rc));
        return rc;
    }
    int tmo = (int)cfg->rpc_timeout_ms;
    a->c_launcher = (ds_client){ { a->r_launcher, tmo, a->log, true }, NULL, NULL };
    a->c_solver = (ds_client){ { a->r_solver, tmo, a->log, true }, a->catalog, NULL };
    a->c_watcher = (ds_client){ { a->r_watcher, tmo, a->log, true }, NULL, NULL };

    ds_protect_opts po = { .clock = &tlr_clock_system, .kube = ds_kube_ops_of(a->kube),
                           .watcher = ds_watcher_ops_of(&a->c_watcher),
                           .solver = ds_solver_ops_of(&a->c_solver),
                           .launcher = ds_launcher_ops_of(&a->c_launcher), .catalog = a->catalog,
                           .log = a->log, .metrics = tlr_service_metrics(a->svc) };
    tlr_drain_ops kd = tlr_drain_kube_ops(a->kube);
    po.full_pods = kd.list_pods;
    po.full_pods_arg = kd.arg;
    ds_protect_create(&po, &a->protect);
    ds_term_opts to = { 0 };
    to.clock = &tlr_clock_system;
    to.kube = ds_kube_ops_of(a->kube);
    to.launcher = ds_launcher_ops_of(&a->c_launcher);
    to.drain = tlr_drain_kube_ops(a->kube);
    to.drain.guard = ds_protect_guard;
    to.drain.guard_arg = a->protect;
    to.log = a->log;
    to.metrics = tlr_service_metrics(a->svc);
    to.min_drain_ms = cfg->min_drain_ms;
    to.event_every_ms = cfg->event_every_ms;
    to.manage_finalizers = true;
    to.publish = publish_event;
    to.publish_arg = a;
    ds_term_create(&to, &a->term);

    /* AWS: the interruption queue.  Without credentials the disruptor
     * works on without it. */
    tlr_aws_creds_opts cro = { .log = a->log, .region = cfg->region };
    if (tlr_aws_creds_create(&cro, &a->creds) == TLR_OK) {
        ds_cloud_opts clo = { cfg->region, cfg->endpoint, cfg->queue, a->creds, a->log, fence };
        if (ds_cloud_create(&clo, &a->cloud) != TLR_OK)
            a->cloud = NULL;
    }
    if (!a->cloud)
        TLR_WARN(a->log, "no AWS client: no interruption queue");
    ds_podevents_create(tlr_wall_ms(), &a->podevents);
    ds_ctl_opts co2 = { 0 };
    co2.clock = &tlr_clock_system;
    co2.kube = ds_kube_ops_of(a->kube);
    co2.launcher = ds_launcher_ops_of(&a->c_launcher);
    co2.solver = ds_solver_ops_of(&a->c_solver);
    co2.watcher = ds_watcher_ops_of(&a->c_watcher);
    co2.catalog = a->catalog;
    co2.podevents = a->podevents;
    co2.full_pods = to.drain.list_pods;
    co2.full_pods_arg = to.drain.arg;
    co2.validation_ms = cfg->validation_ms;
    co2.replace_timeout_ms = cfg->replace_timeout_ms;
    co2.min_savings = cfg->min_savings;
    co2.spot_to_spot = cfg->spot_to_spot;
    co2.min_values_policy = cfg->min_values_policy == 1
                                ? TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT
                                : TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_STRICT;
    co2.preference_policy = cfg->preference_policy == 1
                                ? TAILOR__V1__PREFERENCE_POLICY__PREFERENCE_POLICY_IGNORE
                                : TAILOR__V1__PREFERENCE_POLICY__PREFERENCE_POLICY_RESPECT;
    co2.max_candidates = cfg->max_candidates;
    co2.dry_run = cfg->dry_run;
    co2.log = a->log;
    co2.metrics = tlr_service_metrics(a->svc);
    co2.publish = publish_event;
    co2.publish_arg = a;
    ds_ctl_create(&co2, &a->ctl);
    if (a->cloud && cfg->queue && cfg->queue[0]) {
        ds_intr_opts io = { 0 };
        io.clock = &tlr_clock_system;
        io.kube = co2.kube;
        io.launcher = co2.launcher;
        io.solver = co2.solver;
        io.watcher = co2.watcher;
        io.cloud = ds_cloud_ops_of(a->cloud);
        io.catalog = a->catalog;
        io.full_pods = to.drain.list_pods;
        io.full_pods_arg = to.drain.arg;
        io.rebalance_drains = cfg->rebalance == 1;
        io.log = a->log;
        io.metrics = co2.metrics;
        io.publish = publish_event;
        io.publish_arg = a;
        ds_intr_create(&io, &a->intr);
    }
    return TLR_OK;
}

int ds_app_start(tlr_service *svc, void *arg)
{
    ds_app *a = arg;
    ds_app_cfg *cfg = a->cfg;
    a->svc = svc;
    a->log = tlr_service_log(svc);
    a->loop = tlr_service_loop(svc);
    size_t max_msg = (size_t)cfg->max_msg_mib << 20;
    int rc;
    srandom((unsigned)(getpid() ^ tlr_wall_ms()));
    if ((rc = connect_deps(a, max_msg)) != TLR_OK)
        TLR_ERROR(a->log, "disruptor not configured: not disrupting", TLR_S("why", a->why),
                  TLR_ERR(rc));
    const tlr_rep_route routes[] = {
        { &tailor__v1__explain_request__descriptor, handle_explain, free_reply, a,
          .max_request = TLR_REQ_MAX_SMALL, .allow = only_ctl },
    };
    if ((rc = tlr_service_listen(svc, cfg->listen, max_msg, routes, 1, &a->rep)))
        return rc;
    if ((rc = tlr_service_publish(svc, cfg->publish, max_msg, only_ctl, &a->pub)))
        return rc;
    tlr_service_set_ready(svc, true, NULL);
    if (!a->term)
        return TLR_OK;
    if (cfg->leader_elect) {
        if ((rc = start_lease(a, svc))) {
            TLR_ERROR(a->log, "leader election not started", TLR_S("why", a->why), TLR_ERR(rc));
            return rc;
        }
        on_lead(a->loop, 0, a);
    } else {
        a->leading = true;
        tlr_service_set_leader(svc, true);
    }
    tlr_metric_family *tp = tlr_metrics_counter(tlr_service_metrics(svc),
                                                "tailor_disruptor_termination_passes_total",
                                                "Termination passes (each lists NodeClaims and Nodes).",
                                                0, NULL);
    a->m_term_passes = tlr_metric_series(tp, NULL);
    a->t_term = tlr_loop_add_timer(a->loop, 0, on_term, a);
    a->t_disr = tlr_loop_add_timer(a->loop, cfg->disruption_every_ms, on_disr, a);
    if (a->intr)
        a->t_intr = tlr_loop_add_timer(a->loop, cfg->interruption_every_ms, on_intr, a);
    a->t_cat = tlr_loop_add_timer(a->loop, 0, on_catalog, a);
    if (cfg->watcher_pub && cfg->watcher_pub[0]) {
        const char *urls[1] = { cfg->watcher_pub };
        const char *topics[1] = { "cluster" };
        tlr_sub_opts so = { urls, 1, topics, 1, max_msg, a->log, on_cluster, a, false,
                            .tls = tlr_service_tls(svc), .allow = only_watcher };
        if ((rc = tlr_sub_create(a->loop, &so, &a->sub)))
            TLR_WARN(a->log, "cannot subscribe to the watcher's cluster topic", TLR_ERR(rc));
    }
    return TLR_OK;
}

void ds_app_stop(tlr_service *svc, void *arg)
{
    ds_app *a = arg;
    (void)svc;
    if (a->t_term)
        tlr_loop_cancel_timer(a->loop, a->t_term);
    if (a->t_lead)
        tlr_loop_cancel_timer(a->loop, a->t_lead);
    if (a->t_disr)
        tlr_loop_cancel_timer(a->loop, a->t_disr);
    if (a->t_intr)
        tlr_loop_cancel_timer(a->loop, a->t_intr);
    if (a->t_cat)
        tlr_loop_cancel_timer(a->loop, a->t_cat);
    tlr_lease_stop(a->lease);   /* stop acting first, then let the Lease go */
    a->lease = NULL;
    tlr_sub_free(a->sub);
    tlr_pub_free(a->pub);
    tlr_rep_server_free(a->rep);
    ds_term_free(a->term);
    ds_protect_free(a->protect);
    ds_ctl_free(a->ctl);
    ds_intr_free(a->intr);
    ds_podevents_free(a->podevents);
    ds_cloud_free(a->cloud);
    tlr_aws_creds_free(a->creds);
    tlr_kube_free(a->lease_kube);
    tlr_req_client_free(a->r_launcher);
    ds_client_free(&a->c_solver);
    tlr_req_client_free(a->r_solver);
    tlr_req_client_free(a->r_watcher);
    tlr_kube_free(a->kube);
    tlr_catalog_free(a->catalog);
}
