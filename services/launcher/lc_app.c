/* lc_app.c - the launcher process wired together (lc_app.h).
 *
 * Threads: the decisions run on one.  Pending batches from the watcher,
 * Launch / Terminate requests, the lifecycle, GC and Lease timers all run
 * on the service loop, so the provisioning core needs no locks.  Three
 * kinds of helper thread do blocking work for it: the fan-out of one
 * batch's CreateFleet / CreateTags / NodeClaim writes (par.h, joined
 * before the loop goes on), the Event writers (lc_kube.h), and the live
 * catalog fetch (catalog_src.h), whose result reaches the loop through an
 * eventfd and is swapped in there.  Only the Lease holder provisions; a
 * follower answers Launch/Terminate with UNAVAILABLE ("NotLeader") so the
 * disruptor retries on the leader.
 *
 * Fencing: the Lease is renewed by a thread of its own (tlr_lease.h) with
 * its own Kubernetes client, so a CreateFleet that retries for minutes
 * cannot hold a renewal up.  It publishes "valid until" in a->fence; the
 * EC2, SSM, IAM and Kubernetes clients all check it before every write
 * and cut a call at it, so whatever the loop is in the middle of stops
 * when the leadership does -- not when the loop next looks at a flag.
 */
#include "lc_app.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "catalog_src.h"
#include "lc_cloud.h"
#include "lc_kube.h"
#include "tlr_lease.h"
#include "provision.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_catalog.h"
#include "profile.h"
#include "tlr_eks.h"
#include "tlr_sigv4.h"
#include "tlr_err.h"
#include "tlr_pubsub.h"
#include "tlr_rep.h"
#include "tlr_clnt.h"
#include "tlr_req.h"

struct lc_app {
    lc_app_cfg *cfg;
    tlr_service *svc;
    tlr_logger *log;
    Tailor__V1__Catalog *file_catalog;   /* the catalog file; the fallback */
    Tailor__V1__Catalog *catalog;        /* in use: the live one or the file's */
    tlr_aws_creds *creds;
    lc_cloud *cloud;
    tlr_kube *kube;
    lc_kube *kops;
    /* the live catalog fetch */
    pthread_t fetch_th;
    bool fetching;
    int fetch_fd;                        /* eventfd: the fetch is done */
    Tailor__V1__Catalog *fetched;        /* handed from the thread to the loop */
    tlr_catalog_live_stats fetched_st;
    int fetch_rc;
    char fetch_why[512];
    tlr_timer_id t_cat;
    tlr_req_client *req;
    tlr_clnt solver;                 /* over req */
    tlr_clnt watcher;                /* over watcher_req */
    tlr_req_client *watcher_req;         /* Snapshot by reference */
    lc_prov *prov;
    tlr_fence fence;                     /* valid-until, written by the Lease thread */
    tlr_kube *lease_kube;                /* the Lease thread's own client */
    tlr_lease *leader;
    bool leading;                        /* as last seen by on_lead (transitions) */
    uint64_t term;
    tlr_rep_server *rep;
    tlr_pub *pub;
    tlr_pub *decisions;                  /* dials the watcher's listener; may be NULL */
    tlr_sub *sub;
    tlr_timer_id t_life, t_gc, t_lead;
    tlr_iam *iam;                        /* instance profiles of classes with a role */
    /* cluster identity */
    tlr_eks *eks;
    tlr_timer_id t_id;
    bool id_ok;
    char id_why[1024];
    char why[640];   /* why the dependencies are missing; "" when fine */
};

lc_app *lc_app_new(lc_app_cfg *cfg)
{
    lc_app *a = tlr_calloc(1, sizeof(*a));
    a->cfg = cfg;
    a->fetch_fd = -1;
    tlr_fence_init(&a->fence);
    return a;
}

void lc_app_delete(lc_app *a)
{
    free(a);
}

/* Transport authorization (docs/security.md).  Launch comes from the
 * disruptor (replacements before a drift, interruption or consolidation
 * takes a node away) or an operator: the launcher's own provisioning loop
 * calls it in-process. */
static const char *const only_ctl[] = { TLR_ID_CTL, NULL };
static const char *const disruptor_or_ctl[] = { TLR_ID_DISRUPTOR, TLR_ID_CTL, NULL };
static const char *const only_solver[] = { TLR_ID_SOLVER, NULL };
static const char *const only_watcher[] = { TLR_ID_WATCHER, NULL };

static void on_launch_event(void *arg, const Tailor__V1__LaunchEvent *ev)
{
    lc_app *a = arg;
    if (a->pub)
        tlr_pub_send(a->pub, "launch", &ev->base);
}

static void on_decisions(void *arg, const Tailor__V1__SchedulingDecisions *d)
{
    lc_app *a = arg;
    if (a->decisions)
        tlr_pub_send(a->decisions, "decisions", &d->base);
}

/* Whether this replica may act now: the Lease is valid (or not used). */
static bool leading(const lc_app *a)
{
    return !a->cfg->leader_elect || tlr_lease_leading(a->leader);
}

static void on_pending(void *arg, const char *topic, const Tailor__V1__Envelope *env)
{
    lc_app *a = arg;
    (void)topic;
    ProtobufCMessage *m = NULL;
    char err[256];
    if (tlr_envelope_payload(env, &tailor__v1__pending_batch__descriptor, &m, err,
                             sizeof(err))) {
        TLR_WARN(a->log, "bad pending batch dropped", TLR_S("why", err));
        return;
    }
    int64_t received = tlr_wall_ms();
    Tailor__V1__PendingBatch *b = (Tailor__V1__PendingBatch *)m;
    if (!leading(a)) {
        lc_prov_follow(a->prov, b);   /* b handed over */
        return;
    }
    char id[128];
    snprintf(id, sizeof(id), "%s", b->batch_id);
    size_t npods = b->n_pending_pods;
    if (b->cluster && !b->cluster->synced) {
        TLR_INFO(a->log, "batch from an unsynced watcher ignored", TLR_S("batch", id));
        protobuf_c_message_free_unpacked(m, NULL);
        return;
    }
    lc_batch_result r = { 0 };
    int rc = lc_prov_batch(a->prov, b, &r);   /* b handed over */
    TLR_INFO(a->log, "batch provisioned", TLR_S("batch", id), TLR_I("pods", (int64_t)npods),
             TLR_I("solves", r.solves), TLR_I("inflight", r.inflight), TLR_I("launched", r.launched),
             TLR_I("failed", r.failed), TLR_I("nominated", r.pods_nominated),
             TLR_I("unplaced", r.pods_unplaced), TLR_I("fleets", r.fleets), TLR_I("ice", r.ice),
             TLR_F("plan_cost_per_hour", r.plan_cost),
             TLR_I("solve_ms", r.solve_ms), TLR_I("solve_request_bytes", r.solve_bytes),
             TLR_I("solver_ms", r.solver_ms),
             TLR_I("claims_ms", r.claims_ms),
             TLR_I("launch_ms", r.launch_ms), TLR_I("to_fleets_ms", r.fleets_ms),
             TLR_I("to_issued_ms", r.issued_ms),
             TLR_I("received_unix_ms", received), TLR_I("done_unix_ms", tlr_wall_ms()),
             TLR_ERR(rc));
}

/* lc_solver_ops.solve and lc_watcher_ops.snapshot over the typed clients. */
static int lc_app_solve(void *arg, const Tailor__V1__SolveRequest *req,
                        Tailor__V1__SolveResponse **resp)
{
    return tlr_solver_clnt_solve(arg, req, resp, NULL);
}

static int lc_app_snapshot(void *arg, const Tailor__V1__SnapshotRequest *req,
                           Tailor__V1__SnapshotResponse **resp)
{
    return tlr_watcher_clnt_snapshot(arg, req, resp, NULL);
}

/* Launch and Terminate act only when the launcher is configured and holds
 * the Lease; otherwise they say which is missing. */
static int serving(const lc_app *a, tlr_status *st)
{
    if (!a->prov) {
        tlr_status_set(st, TLR_E_UNAVAILABLE, "NotConfigured", "%s", a->why);
        return TLR_E_UNAVAILABLE;
    }
    if (!leading(a)) {
        tlr_status_set(st, TLR_E_UNAVAILABLE, "NotLeader", "this launcher does not hold the Lease");
        return TLR_E_UNAVAILABLE;
    }
    return TLR_OK;
}

static int handle_launch(void *arg, const ProtobufCMessage *req, const char *rid,
                         ProtobufCMessage **reply, tlr_status *st)
{
    lc_app *a = arg;
    (void)rid;
    int rc = serving(a, st);
    if (rc)
        return rc;
    Tailor__V1__LaunchResponse *resp;
    lc_prov_launch(a->prov, (const Tailor__V1__LaunchRequest *)req, &resp);
    *reply = &resp->base;
    return TLR_OK;
}

static int handle_terminate(void *arg, const ProtobufCMessage *req, const char *rid,
                            ProtobufCMessage **reply, tlr_status *st)
{
    lc_app *a = arg;
    (void)rid;
    int rc = serving(a, st);
    if (rc)
        return rc;
    Tailor__V1__TerminateResponse *resp;
    lc_prov_terminate(a->prov, (const Tailor__V1__TerminateRequest *)req, &resp);
    *reply = &resp->base;
    return TLR_OK;
}

static void free_reply(void *arg, ProtobufCMessage *reply)
{
    (void)arg;
    protobuf_c_message_free_unpacked(reply, NULL);
}

/* Catalog: the catalog in use, lent (the reply is packed before the loop
 * can swap it), left out when the requester already has it.  Served by a
 * standby too: every replica fetches its own. */
static int handle_catalog(void *arg, const ProtobufCMessage *req, const char *rid,
                          ProtobufCMessage **reply, tlr_status *st)
{
    lc_app *a = arg;
    (void)rid;
    if (!a->catalog) {
        tlr_status_set(st, TLR_E_UNAVAILABLE, "NotConfigured", "%s", a->why);
        return TLR_E_UNAVAILABLE;
    }
    const Tailor__V1__CatalogRequest *q = (const Tailor__V1__CatalogRequest *)req;
    Tailor__V1__CatalogResponse *resp = tlr_malloc(sizeof(*resp));
    tailor__v1__catalog_response__init(resp);
    resp->hash = a->catalog->hash;
    if (!q->known_hash || strcmp(q->known_hash, a->catalog->hash))
        resp->catalog = a->catalog;
    *reply = &resp->base;
    return TLR_OK;
}

static void free_catalog_reply(void *arg, ProtobufCMessage *reply)
{
    (void)arg;
    free(reply);   /* only the envelope: hash and catalog are lent */
}

static void on_life(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    lc_app *a = arg;
    (void)id;
    if (leading(a)) {
        lc_prov_lifecycle(a->prov);
        lc_prov_classes_refresh(a->prov);
    }
    a->t_life = tlr_loop_add_timer(loop, a->cfg->lifecycle_every_ms, on_life, a);
}

static void on_gc(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    lc_app *a = arg;
    (void)id;
    if (leading(a)) {
        lc_prov_adopt(a->prov);
        lc_prov_gc(a->prov);
    }
    a->t_gc = tlr_loop_add_timer(loop, a->cfg->gc_every_ms, on_gc, a);
}

/* Follows the Lease thread's verdict for what only the loop may touch:
 * Ping's leader flag and the adoption state.  Acting itself is gated by
 * the fence, not by this timer. */
static void on_lead(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    lc_app *a = arg;
    (void)id;
    bool now = leading(a);
    uint64_t term = tlr_lease_term(a->leader);
    if (now != a->leading || term != a->term) {
        /* What the last leader left is ours to take over, once we lead. */
        lc_prov_forget_adoption(a->prov);
        tlr_service_set_leader(a->svc, now);
        if (!now)
            TLR_WARN(a->log, "not leading: launches, terminations and GC stop",
                     TLR_S("identity", tlr_service_id(a->svc)));
    }
    a->leading = now;
    a->term = term;
    a->t_lead = tlr_loop_add_timer(loop, 250, on_lead, a);
}

/* The Lease thread with a Kubernetes client of its own, whose requests
 * time out well inside the renew deadline. */
static int start_lease(lc_app *a, tlr_service *svc)
{
    lc_app_cfg *cfg = a->cfg;
    char err[512];
    tlr_kube_opts ko = { .log = a->log, .timeout_ms = (int)(cfg->lease_renew_deadline_ms / 2),
                         .connect_timeout_ms = (int)(cfg->lease_renew_deadline_ms / 2),
                         .user_agent = "tailor-launcher/lease" };
    int rc = tlr_kube_connect(cfg->kubeconfig, cfg->in_cluster, &ko, &a->lease_kube, err,
                              sizeof(err));
    if (rc) {
        snprintf(a->why, sizeof(a->why), "lease client: %s", err);
        return rc;
    }
    const char *ns = cfg->lease_namespace && cfg->lease_namespace[0]
                         ? cfg->lease_namespace : tlr_kube_namespace(a->kube);
    tlr_lease_opts lo = { a->lease_kube, ns, "tailor-launcher", tlr_service_id(svc),
                          cfg->lease_ms, cfg->lease_renew_deadline_ms, cfg->lease_retry_ms,
                          &a->fence, a->log, tlr_service_metrics(svc) };
    if ((rc = tlr_lease_start(&lo, &a->leader, err, sizeof(err))))
        snprintf(a->why, sizeof(a->why), "%s", err);
    return rc;
}

/* ---- the cluster identity ------------------------------------------------ */

static const char *set_or(const char *v)
{
    return v && v[0] ? v : NULL;
}

/* Settings first; what they leave out from EKS DescribeCluster (endpoint,
 * CA, service CIDR) and from Service kube-system/kube-dns (DNS IP; absent
 * = none: the node's default).  Runs on the loop: DescribeCluster is one
 * short call, made at start and then once a minute until the identity is
 * complete.  Until then nothing launches and /readyz says why. */
static void resolve_identity(lc_app *a)
{
    lc_app_cfg *cfg = a->cfg;
    const char *endpoint = set_or(cfg->cluster_endpoint), *ca = set_or(cfg->cluster_ca);
    const char *cidr = set_or(cfg->cluster_cidr), *dns = set_or(cfg->cluster_dns);
    tlr_eks_cluster ec = { 0 };
    tlr_aws_error err = { 0 };
    char eks_why[700] = "";
    const char *source = "settings";
    if (!endpoint || !ca || !cidr) {
        int rc = TLR_OK;
        if (!a->eks) {
            tlr_eks_opts eo = { .region = cfg->region, .endpoint = cfg->endpoint,
                                .creds = a->creds, .log = a->log, .timeout_ms = 10000,
                                .max_attempts = 2 };
            rc = tlr_eks_create(&eo, &a->eks);
        }
        if (rc == TLR_OK)
            rc = tlr_eks_describe_cluster(a->eks, cfg->cluster, &ec, &err);
        if (rc == TLR_OK) {
            source = "eks";
            endpoint = endpoint ? endpoint : set_or(ec.endpoint);
            ca = ca ? ca : set_or(ec.ca_b64);
            cidr = cidr ? cidr : set_or(ec.service_cidr_v4) ? ec.service_cidr_v4
                                                              : set_or(ec.service_cidr_v6);
        } else {
            snprintf(eks_why, sizeof(eks_why), "EKS DescribeCluster %.64s: %s %.300s", cfg->cluster,
                     err.code[0] ? err.code : tlr_strerror(rc), err.message);
        }
    }
    char *dns_found = NULL;
    lc_kube_ops ko = lc_kube_ops_of(a->kops);
    if (!dns && ko.service_ip(ko.arg, "kube-system", "kube-dns", &dns_found) == TLR_OK)
        dns = dns_found;
    tlr_cluster_identity id = { cfg->cluster, endpoint, ca, cidr, dns };
    lc_prov_set_identity(a->prov, &id);
    char why[300];
    a->id_ok = lc_prov_identity_ok(a->prov, why, sizeof(why));
    if (a->id_ok) {
        /* The CA is a public certificate, but a log is no place for it:
         * its size and digest identify it. */
        char hex[65];
        tlr_sigv4_sha256_hex(ca, strlen(ca), hex);
        TLR_INFO(a->log, "cluster identity", TLR_S("cluster", cfg->cluster),
                 TLR_S("endpoint", endpoint), TLR_I("ca_bytes", (int64_t)strlen(ca)),
                 TLR_S("ca_sha256", hex), TLR_S("service_cidr", cidr),
                 TLR_S("cluster_dns", dns ? dns : "(node default)"), TLR_S("source", source));
        a->id_why[0] = '\0';
        tlr_service_set_ready(a->svc, true, NULL);
    } else {
        snprintf(a->id_why, sizeof(a->id_why), "%s%s%s", why, eks_why[0] ? "; " : "", eks_why);
        TLR_WARN(a->log, "not launching until the cluster identity is known",
                 TLR_S("why", a->id_why));
        tlr_service_set_ready(a->svc, false, a->id_why);
    }
    free(dns_found);
    tlr_eks_cluster_clear(&ec);
}

static void on_identity(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    lc_app *a = arg;
    (void)id;
    a->t_id = 0;
    resolve_identity(a);
    if (!a->id_ok)
        a->t_id = tlr_loop_add_timer(loop, 60000, on_identity, a);
}

/* ---- the live catalog --------------------------------------------------- */

static void *fetch_main(void *arg)
{
    lc_app *a = arg;
    lc_app_cfg *cfg = a->cfg;
    lc_catsrc_opts o = { cfg->region, cfg->endpoint, cfg->pricing_endpoint, cfg->pricing_region,
                         a->creds, a->log, (const char *const *)cfg->zones.items, cfg->zones.n,
                         cfg->spot_discount, cfg->spot_floor, 0, !cfg->spot };
    a->fetch_rc = lc_catsrc_fetch(&o, a->file_catalog, &a->fetched, &a->fetched_st, a->fetch_why,
                                  sizeof(a->fetch_why));
    uint64_t one = 1;
    if (write(a->fetch_fd, &one, sizeof(one)) < 0)
        TLR_WARN(a->log, "catalog fetch: eventfd write failed");
    return NULL;
}

static void start_fetch(lc_app *a)
{
    if (a->fetching || a->fetch_fd < 0)
        return;
    a->fetched = NULL;
    a->fetching = pthread_create(&a->fetch_th, NULL, fetch_main, a) == 0;
}

static void on_fetched(tlr_loop *loop, int fd, void *arg)
{
    lc_app *a = arg;
    (void)loop;
    uint64_t v;
    if (read(fd, &v, sizeof(v)) < 0 || !a->fetching)
        return;
    pthread_join(a->fetch_th, NULL);
    a->fetching = false;
    if (a->fetch_rc != TLR_OK) {
        TLR_WARN(a->log, "live catalog not built; keeping the current one",
                 TLR_S("why", a->fetch_why), TLR_S("hash", a->catalog->hash),
                 TLR_S("price_source", a->catalog->price_source), TLR_ERR(a->fetch_rc));
        return;
    }
    const tlr_catalog_live_stats *st = &a->fetched_st;
    TLR_INFO(a->log, "catalog refreshed", TLR_S("hash", a->fetched->hash),
             TLR_S("previous", a->catalog->hash), TLR_S("price_source", a->fetched->price_source),
             TLR_I("types", (int64_t)a->fetched->n_instance_types),
             TLR_I("od_live", (int64_t)st->od_live), TLR_I("od_file", (int64_t)st->od_fallback),
             TLR_I("unpriced", (int64_t)st->unpriced), TLR_I("spot_live", (int64_t)st->spot_live),
             TLR_I("spot_discount", (int64_t)st->spot_fallback),
             TLR_I("spot_refused", (int64_t)st->spot_implausible));
    lc_prov_set_catalog(a->prov, a->fetched);
    if (a->catalog != a->file_catalog)
        tlr_catalog_free(a->catalog);
    a->catalog = a->fetched;
    a->fetched = NULL;
}

static void on_catalog_timer(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    lc_app *a = arg;
    (void)id;
    start_fetch(a);
    a->t_cat = tlr_loop_add_timer(loop, a->cfg->catalog_refresh_ms, on_catalog_timer, a);
}

/* Catalog, AWS, Kubernetes, solvers and the provisioning core.  On
 * failure a->why says what is missing (logged by the caller). */
static int connect_deps(lc_app *a, tlr_service *svc, size_t max_msg)
{
    lc_app_cfg *cfg = a->cfg;
    char err[512];
    int rc;

    /* The catalog file: the documented fallback, and the catalog in use
     * until the live one is fetched (catalog_src.h). */
    const char *src = cfg->catalog_source && cfg->catalog_source[0] ? cfg->catalog_source : "auto";
    if (strcmp(src, "auto") != 0 && strcmp(src, "ec2") != 0 && strcmp(src, "file") != 0) {
        snprintf(a->why, sizeof(a->why), "--catalog-source %s: want auto, ec2 or file", src);
        return TLR_E_INVAL;
    }
    tlr_catalog_file_opts co = { cfg->region, (const char *const *)cfg->zones.items,
                                 cfg->zones.n, cfg->spot_discount, "file", NULL, !cfg->spot };
    if ((rc = tlr_catalog_file_load(cfg->catalog, &co, &a->file_catalog, err, sizeof(err)))) {
        snprintf(a->why, sizeof(a->why), "catalog %s: %s", cfg->catalog, err);
        return rc;
    }
    a->catalog = a->file_catalog;
    TLR_INFO(a->log, "catalog loaded", TLR_S("source", "file"), TLR_S("hash", a->catalog->hash),
             TLR_I("types", (int64_t)a->catalog->n_instance_types));
    tlr_aws_creds_opts cro = { .log = a->log, .region = cfg->region };
    if ((rc = tlr_aws_creds_create(&cro, &a->creds))) {
        snprintf(a->why, sizeof(a->why), "aws credentials: %s", tlr_strerror(rc));
        return rc;
    }
    if (strcmp(src, "ec2") == 0) {
        /* Live or nothing: fetch now, before serving. */
        lc_catsrc_opts so = { cfg->region, cfg->endpoint, cfg->pricing_endpoint,
                              cfg->pricing_region, a->creds, a->log,
                              (const char *const *)cfg->zones.items, cfg->zones.n,
                              cfg->spot_discount, cfg->spot_floor, 0, !cfg->spot };
        Tailor__V1__Catalog *live = NULL;
        if ((rc = lc_catsrc_fetch(&so, a->file_catalog, &live, NULL, err, sizeof(err)))) {
            snprintf(a->why, sizeof(a->why), "live catalog: %s", err);
            return rc;
        }
        a->catalog = live;
        TLR_INFO(a->log, "catalog loaded", TLR_S("source", "ec2"), TLR_S("hash", live->hash),
                 TLR_S("price_source", live->price_source),
                 TLR_I("types", (int64_t)live->n_instance_types));
    }
    /* Every write to EC2, IAM and Kubernetes is fenced by the Lease. */
    const tlr_fence *fence = cfg->leader_elect ? &a->fence : NULL;
    lc_cloud_opts clo = { cfg->cluster, cfg->region, cfg->endpoint, a->creds, a->log, 0,
                          cfg->parallel, fence };
    if ((rc = lc_cloud_create(&clo, &a->cloud))) {
        snprintf(a->why, sizeof(a->why), "ec2 client: %s", tlr_strerror(rc));
        return rc;
    }
    tlr_kube_opts ko = { .log = a->log, .fence = fence };
    if ((rc = tlr_kube_connect(cfg->kubeconfig, cfg->in_cluster, &ko, &a->kube, err,
                               sizeof(err)))) {
        snprintf(a->why, sizeof(a->why), "kubernetes config: %s", err);
        return rc;
    }
    lc_kube_opts kopts = { a->kube, a->log, cfg->parallel, 0, 0 };
    lc_kube_create(&kopts, &a->kops);
    tlr_req_opts ro = { (const char *const *)cfg->solvers.items, cfg->solvers.n,
                        (int)cfg->solve_timeout_ms, 1, max_msg, a->log, tlr_service_id(svc),
                        tlr_service_tls(svc), only_solver,
                        .max_conn_age_ms = (int)cfg->solver_conn_age_ms };
    if ((rc = tlr_req_client_create(&ro, &a->req))) {
        snprintf(a->why, sizeof(a->why), "solver URLs: %s", tlr_strerror(rc));
        return rc;
    }
    a->solver = (tlr_clnt){ a->req, (int)cfg->solve_timeout_ms, a->log, false };
    if (cfg->watcher_rep && cfg->watcher_rep[0]) {
        const char *wurl[1] = { cfg->watcher_rep };
        tlr_req_opts wo = { wurl, 1, 30000, 1, max_msg, a->log, tlr_service_id(svc),
                            tlr_service_tls(svc), only_watcher };
        if ((rc = tlr_req_client_create(&wo, &a->watcher_req))) {
            snprintf(a->why, sizeof(a->why), "watcher REP URL: %s", tlr_strerror(rc));
            return rc;
        }
    }

    tlr_aws_query_opts io = { .region = cfg->region, .endpoint = cfg->endpoint,
                              .creds = a->creds, .log = a->log, .timeout_ms = 10000,
                              .max_attempts = 2, .fence = fence };
    if ((rc = tlr_iam_create(&io, &a->iam))) {
        snprintf(a->why, sizeof(a->why), "iam client: %s", tlr_strerror(rc));
        return rc;
    }
    lc_prov_opts po = { 0 };
    po.cluster = cfg->cluster;
    po.region = cfg->region;
    lc_iam_ops_init(&po.iam, a->iam);
    po.clock = &tlr_clock_system;
    po.solver = (lc_solver_ops){ lc_app_solve, &a->solver };
    if (a->watcher_req) {
        a->watcher = (tlr_clnt){ a->watcher_req, 30000, a->log, false };
        po.watcher = (lc_watcher_ops){ lc_app_snapshot, &a->watcher };
    }
    po.cloud = lc_cloud_ops_of(a->cloud);
    po.kube = lc_kube_ops_of(a->kops);
    po.catalog = a->catalog;
    po.ice_ttl_ms = cfg->ice_ttl_ms;
    po.resolve_ttl_ms = cfg->resolve_ttl_ms;
    po.default_ami = cfg->default_ami;
    po.k8s_version = cfg->k8s_version;
    po.no_fleet_batching = !cfg->fleet_batching;
    po.register_ttl_ms = cfg->registration_ttl_ms;
    po.plan_gate_ms = cfg->plan_gate_ms;
    po.min_values_policy = cfg->min_values_policy == 1
                               ? TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT
                               : TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_STRICT;
    po.preference_policy = cfg->preference_policy == 1
                               ? TAILOR__V1__PREFERENCE_POLICY__PREFERENCE_POLICY_IGNORE
                               : TAILOR__V1__PREFERENCE_POLICY__PREFERENCE_POLICY_RESPECT;
    po.log = a->log;
    po.metrics = tlr_service_metrics(svc);
    po.publish = on_launch_event;
    po.publish_decisions = on_decisions;
    po.publish_arg = a;
    srandom((unsigned)(getpid() ^ tlr_wall_ms()));
    lc_prov_create(&po, &a->prov);
    if (strcmp(src, "auto") == 0 || strcmp(src, "ec2") == 0) {
        a->fetch_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (a->fetch_fd < 0 ||
            tlr_loop_add_fd(tlr_service_loop(svc), a->fetch_fd, on_fetched, a) != TLR_OK)
            TLR_WARN(a->log, "no eventfd: the catalog will not be refreshed");
    }
    return TLR_OK;
}

int lc_app_start(tlr_service *svc, void *arg)
{
    lc_app *a = arg;
    lc_app_cfg *cfg = a->cfg;
    a->svc = svc;
    a->log = tlr_service_log(svc);
    size_t max_msg = (size_t)cfg->max_msg_mib << 20;
    int rc;

    /* Without its dependencies the launcher still serves (Ping, metrics,
     * Launch/Terminate answered UNAVAILABLE naming what is missing), the
     * way a misconfigured controller stays up to be inspected rather than
     * crash-looping. */
    if ((rc = connect_deps(a, svc, max_msg)) != TLR_OK)
        TLR_ERROR(a->log, "launcher not configured: not provisioning", TLR_S("why", a->why),
                  TLR_ERR(rc));

    const tlr_rep_route routes[] = {
        { &tailor__v1__launch_request__descriptor, handle_launch, free_reply, a,
          .max_request = TLR_REQ_MAX_CLAIMS, .allow = disruptor_or_ctl },
        { &tailor__v1__terminate_request__descriptor, handle_terminate, free_reply, a,
          .max_request = TLR_REQ_MAX_CLAIMS, .allow = disruptor_or_ctl },
        { &tailor__v1__catalog_request__descriptor, handle_catalog, free_catalog_reply, a,
          .max_request = TLR_REQ_MAX_SMALL, .allow = disruptor_or_ctl },
    };
    if ((rc = tlr_service_listen(svc, cfg->listen, max_msg, routes, 3, &a->rep)))
        return rc;
    if ((rc = tlr_service_publish(svc, cfg->publish, max_msg, only_ctl, &a->pub)))
        return rc;
    if (cfg->decisions && cfg->decisions[0] &&
        (rc = tlr_service_publish_dial(svc, cfg->decisions, max_msg, only_watcher, &a->decisions)))
        return rc;
    tlr_service_set_ready(svc, true, NULL);
    if (!a->prov)
        return TLR_OK;
    on_identity(tlr_service_loop(svc), 0, a);

    const char *urls[1] = { cfg->watcher };
    const char *topics[1] = { "pending" };
    tlr_sub_opts so = { urls, 1, topics, 1, max_msg, a->log, on_pending, a, false,
                        .tls = tlr_service_tls(svc), .allow = only_watcher };
    if ((rc = tlr_sub_create(tlr_service_loop(svc), &so, &a->sub)))
        return rc;
    tlr_loop *loop = tlr_service_loop(svc);
    if (cfg->leader_elect) {
        if ((rc = start_lease(a, svc))) {
            TLR_ERROR(a->log, "leader election not started", TLR_S("why", a->why), TLR_ERR(rc));
            return rc;
        }
        on_lead(loop, 0, a);
    } else {
        a->leading = true;
        tlr_service_set_leader(svc, true);
    }
    a->t_life = tlr_loop_add_timer(loop, cfg->lifecycle_every_ms, on_life, a);
    a->t_gc = tlr_loop_add_timer(loop, cfg->gc_every_ms, on_gc, a);
    if (a->fetch_fd >= 0) {
        /* auto: fetch now (the file serves meanwhile); ec2: fetched at start, refresh later. */
        const char *src = cfg->catalog_source && cfg->catalog_source[0] ? cfg->catalog_source
                                                                         : "auto";
        if (strcmp(src, "auto") == 0)
            start_fetch(a);
        a->t_cat = tlr_loop_add_timer(loop, cfg->catalog_refresh_ms, on_catalog_timer, a);
    }
    return TLR_OK;
}

void lc_app_stop(tlr_service *svc, void *arg)
{
    lc_app *a = arg;
    tlr_loop *loop = tlr_service_loop(svc);
    if (a->t_life)
        tlr_loop_cancel_timer(loop, a->t_life);
    if (a->t_gc)
        tlr_loop_cancel_timer(loop, a->t_gc);
    if (a->t_lead)
        tlr_loop_cancel_timer(loop, a->t_lead);
    if (a->t_cat)
        tlr_loop_cancel_timer(loop, a->t_cat);
    if (a->t_id)
        tlr_loop_cancel_timer(loop, a->t_id);
    tlr_eks_free(a->eks);
    if (a->fetching) {
        pthread_join(a->fetch_th, NULL);   /* at most one AWS call timeout away */
        tlr_catalog_free(a->fetched);
    }
    if (a->fetch_fd >= 0) {
        tlr_loop_remove_fd(loop, a->fetch_fd);
        close(a->fetch_fd);
    }
    tlr_lease_stop(a->leader);   /* stop acting first, then let the Lease go */
    a->leader = NULL;
    tlr_sub_free(a->sub);
    tlr_pub_free(a->decisions);
    tlr_pub_free(a->pub);
    tlr_rep_server_free(a->rep);
    lc_prov_free(a->prov);
    tlr_kube_free(a->lease_kube);
    tlr_req_client_free(a->req);
    tlr_req_client_free(a->watcher_req);
    lc_kube_free(a->kops);
    tlr_kube_free(a->kube);
    lc_cloud_free(a->cloud);
    tlr_iam_free(a->iam);
    tlr_aws_creds_free(a->creds);
    if (a->catalog != a->file_catalog)
        tlr_catalog_free(a->catalog);
    tlr_catalog_free(a->file_catalog);
}
