/* termination.c - the termination controller (termination.h). */
#include "termination.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/linkhash.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubesem.h"

/* ---- decide ------------------------------------------------------------ */

int ds_term_node_of(const tlr_kclaim *c, const tlr_knodes *nodes)
{
    if (c->provider_id[0])
        for (size_t i = 0; i < nodes->n; i++)
            if (!strcmp(nodes->v[i].provider_id, c->provider_id))
                return (int)i;
    if (c->node_name[0])
        for (size_t i = 0; i < nodes->n; i++)
            if (!strcmp(nodes->v[i].name, c->node_name))
                return (int)i;
    return -1;
}

int ds_term_claim_of(const tlr_knode *n, const tlr_kclaims *claims)
{
    for (size_t i = 0; i < claims->n; i++) {
        const tlr_kclaim *c = &claims->v[i];
        if ((n->provider_id[0] && !strcmp(c->provider_id, n->provider_id)) ||
            (c->node_name[0] && !strcmp(c->node_name, n->name)))
            return (int)i;
    }
    return -1;
}

int64_t ds_term_deadline(const tlr_kclaim *c)
{
    if (c->term_ts_ms)
        return c->term_ts_ms;
    if (c->deletion_ms && c->tgp_ms > 0)
        return c->deletion_ms + c->tgp_ms;
    return 0;
}

static void push(ds_term_plan *p, size_t *cap, ds_term_action a, int claim, int node)
{
    TLR_GROW(p->v, *cap, p->n + 1);
    p->v[p->n++] = (ds_term_item){ a, claim, node };
}

void ds_term_decide(const tlr_kclaims *claims, const tlr_knodes *nodes, bool manage_finalizers,
                    ds_term_plan *out)
{
    memset(out, 0, sizeof(*out));
    size_t cap = 0;
    for (size_t i = 0; i < claims->n; i++) {
        const tlr_kclaim *c = &claims->v[i];
        if (!c->deletion_ms && !c->finalizer && manage_finalizers)
            push(out, &cap, DS_TA_FINALIZE_CLAIM, (int)i, -1);
        else if (c->deletion_ms && c->finalizer)
            push(out, &cap, DS_TA_TERMINATE, (int)i, ds_term_node_of(c, nodes));
    }
    for (size_t i = 0; i < nodes->n; i++) {
        const tlr_knode *n = &nodes->v[i];
        if (!n->nodepool[0])
            continue;   /* not managed: never ours */
        int c = ds_term_claim_of(n, claims);
        if (!n->deletion_ms && !n->finalizer && manage_finalizers)
            push(out, &cap, DS_TA_FINALIZE_NODE, c, (int)i);
        else if (n->deletion_ms && n->finalizer) {
            if (c < 0)
                push(out, &cap, DS_TA_ORPHAN, -1, (int)i);
            else if (!claims->v[c].deletion_ms)
                push(out, &cap, DS_TA_DELETE_CLAIM, c, (int)i);
            else if (!claims->v[c].finalizer)
                push(out, &cap, DS_TA_ORPHAN, c, (int)i);   /* a claim we do not hold */
            /* else: handled by the claim's TERMINATE */
        }
    }
}

void ds_term_plan_clear(ds_term_plan *p)
{
    if (!p)
        return;
    free(p->v);
    memset(p, 0, sizeof(*p));
}

/* ---- memory per object in termination ---------------------------------- */

typedef struct tstate {
    char *key;                 /* claim name, or "node/<name>" for orphans */
    tlr_drain_state *drain;
    int64_t drain_started_ms;
    int64_t first_done_ms;     /* 0 = not yet seen drained */
    char *last_msg;            /* last blocker event sent */
    int64_t last_event_ms;
    char *status;              /* what it waits for now, for explain */
    bool blocked;              /* something blocks the drain (status says what) */
    bool seen;
    bool announced;            /* DRAIN_STARTED published */
    bool dnd_noted;
} tstate;

struct ds_term {
    ds_term_opts o;
    struct lh_table *st;
    tlr_metric_family *m_terminated, *m_drained, *m_evicted, *m_evict_req, *m_blocked;
    tlr_metric_family *m_claim_term_s, *m_node_term_s, *m_lifetime;
};

static void tstate_free(struct lh_entry *e)
{
    tstate *s = (tstate *)lh_entry_v(e);
    free(s->key);
    tlr_drain_state_free(s->drain);
    free(s->last_msg);
    free(s->status);
    free(s);
}

static tstate *state_of(ds_term *t, const char *key)
{
    void *v = NULL;
    if (lh_table_lookup_ex(t->st, key, &v))
        return v;
    tstate *s = tlr_calloc(1, sizeof(*s));
    s->key = tlr_strdup(key);
    tlr_drain_state_create(&s->drain);
    lh_table_insert(t->st, s->key, s);
    return s;
}

static void set_status(tstate *s, const char *msg)
{
    free(s->status);
    s->status = tlr_strdup(msg);
}

void ds_term_create(const ds_term_opts *o, ds_term **out)
{
    ds_term *t = tlr_calloc(1, sizeof(*t));
    t->o = *o;
    if (!t->o.event_every_ms)
        t->o.event_every_ms = 60000;
    t->st = lh_kchar_table_new(64, tstate_free);
    if (o->metrics) {
        /* Names, label names and label values as Karpenter v1 exposes
         * them (docs/metrics.md), so its dashboards work unchanged. */
        static const char *const pool[] = { "nodepool" };
        static const char *const pool_zone[] = { "nodepool", "zone" };
        static const char *const reason[] = { "reason" };
        static const char *const code[] = { "code" };
        t->m_terminated = tlr_metrics_counter(o->metrics, "karpenter_nodes_terminated_total",
                                              "Number of nodes terminated in total by Karpenter. "
                                              "Labeled by owning nodepool and zone.", 2, pool_zone);
        t->m_drained = tlr_metrics_counter(o->metrics, "karpenter_nodes_drained_total",
                                           "The total number of nodes drained by Karpenter", 1, pool);
        t->m_evicted = tlr_metrics_counter(o->metrics, "karpenter_pods_drained_total",
                                           "The total number of pods drained during node termination "
                                           "by Karpenter, labeled by reason", 1, reason);
        /* Karpenter's ExponentialBuckets(1, 2, 12): 1 s .. 2048 s. */
        static const double exp12[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048 };
        t->m_claim_term_s = tlr_metrics_histogram(o->metrics,
                                                  "karpenter_nodeclaims_termination_duration_seconds",
                                                  "Duration of NodeClaim termination in seconds.", 1, pool,
                                                  exp12, 12);
        /* Karpenter's lifetime buckets: 15 min .. 30 days. */
        static const double life[] = { 900, 1800, 2700, 3600, 7200, 14400, 21600, 28800, 36000,
                                       43200, 57600, 72000, 86400, 172800, 259200, 432000,
                                       864000, 1296000, 1728000, 2160000, 2592000 };
        t->m_node_term_s = tlr_metrics_summary(o->metrics, "karpenter_nodes_termination_duration_seconds",
                                               "The time taken between a node's deletion request and "
                                               "the removal of its finalizer", 1, pool);
        t->m_lifetime = tlr_metrics_histogram(o->metrics, "karpenter_nodes_lifetime_duration_seconds",
                                              "The lifetime duration of the nodes since creation.", 1,
                                              pool, life, (int)(sizeof(life) / sizeof(life[0])));
        t->m_evict_req = tlr_metrics_counter(o->metrics, "karpenter_pods_eviction_requests_total",
                                             "The total number of pod eviction requests made by "
                                             "Karpenter, labeled by response code", 1, code);
        t->m_blocked = tlr_metrics_gauge(o->metrics, "tailor_disruptor_drains_blocked",
                                         "Nodes whose drain is blocked now (PDB, do-not-disrupt, "
                                         "single-replica protection).", 0, NULL);
    }
    *out = t;
}

void ds_term_free(ds_term *t)
{
    if (!t)
        return;
    lh_table_free(t->st);
    free(t);
}

bool ds_term_status(const ds_term *t, const char *claim, char *buf, size_t len)
{
    void *v = NULL;
    if (!lh_table_lookup_ex(t->st, claim, &v))
        return false;
    const tstate *s = v;
    snprintf(buf, len, "%s", s->status ? s->status : "");
    return true;
}

/* ---- act --------------------------------------------------------------- */

static int64_t now_ms(const ds_term *t)
{
    return t->o.clock->wall_ms(t->o.clock->arg);
}

static void term_publish(ds_term *t, Tailor__V1__DisruptionEventKind kind, const char *node,
                         const char *claim, const tlr_drain_report *r, const char *msg)
{
    if (!t->o.publish)
        return;
    Tailor__V1__DisruptionEvent ev = TAILOR__V1__DISRUPTION_EVENT__INIT;
    ev.kind = kind;
    ev.node_name = (char *)(node ? node : "");
    ev.nodeclaim_name = (char *)(claim ? claim : "");
    ev.message = (char *)(msg ? msg : "");
    ev.event_unix_ms = now_ms(t);
    Tailor__V1__Blocker *bl = NULL, **blp = NULL;
    Tailor__V1__ObjectRef *refs = NULL;
    if (r) {
        ev.pods_total = (int32_t)r->pods;
        ev.pods_remaining = (int32_t)r->waiting;
        ev.pods_evicted = (int32_t)(r->evicted + r->deleted);
        if (r->nblockers) {
            bl = tlr_calloc(r->nblockers, sizeof(*bl));
            blp = tlr_calloc(r->nblockers, sizeof(*blp));
            refs = tlr_calloc(r->nblockers, sizeof(*refs));
            for (size_t i = 0; i < r->nblockers; i++) {
                const tlr_drain_blocker *b = &r->blockers[i];
                tailor__v1__blocker__init(&bl[i]);
                tailor__v1__object_ref__init(&refs[i]);
                bool pdb = b->kind == TLR_DRAIN_BLOCK_PDB && b->object[0];
                bl[i].kind = b->kind == TLR_DRAIN_BLOCK_DO_NOT_DISRUPT
                                 ? TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_DO_NOT_DISRUPT
                             : b->kind == TLR_DRAIN_BLOCK_PDB || b->kind == TLR_DRAIN_BLOCK_MULTIPLE_PDBS
                                 ? TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_PDB
                                 : TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_UNEVICTABLE_POD;
                refs[i].kind = (char *)(pdb ? "PodDisruptionBudget" : "Pod");
                refs[i].namespace_ = b->pod_ns;
                refs[i].name = pdb ? strchr(b->object, '/') + 1 : b->pod_name;
                bl[i].object = &refs[i];
                bl[i].message = b->message;
                blp[i] = &bl[i];
            }
            ev.blockers = blp;
            ev.n_blockers = r->nblockers;
        }
    }
    t->o.publish(t->o.publish_arg, &ev);
    free(bl);
    free(blp);
    free(refs);
}

static void event(ds_term *t, const char *kind, const char *name, const char *uid,
                  const char *type, const char *reason, const char *msg)
{
    if (t->o.kube.event)
        t->o.kube.event(t->o.kube.arg, kind, "", name, uid, type, reason, msg);
}

/* Blocker events on the claim and its node, when the message changed or
 * event_every_ms passed. */
static void blocked_events(ds_term *t, tstate *s, const tlr_kclaim *c, const tlr_knode *n,
                           const char *msg)
{
    int64_t now = now_ms(t);
    if (s->last_msg && !strcmp(s->last_msg, msg) && now - s->last_event_ms < t->o.event_every_ms)
        return;
    free(s->last_msg);
    s->last_msg = tlr_strdup(msg);
    s->last_event_ms = now;
    if (c)
        event(t, "NodeClaim", c->name, c->uid, "Warning", "FailedDraining", msg);
    if (n)
        event(t, "Node", n->name, n->uid, "Warning", "FailedDraining", msg);
    TLR_INFO(t->o.log, "drain blocked", TLR_S("nodeclaim", c ? c->name : ""),
             TLR_S("node", n ? n->name : ""), TLR_S("why", msg));
}

static void count(tlr_metric_family *f, const char *pool, double v)
{
    if (f)
        tlr_counter_add(tlr_metric_series(f, (const char *const[]){ pool ? pool : "" }), v);
}

/* The Node's termination metrics as Karpenter keeps them, when tailor
 * deletes it: its count, the time since its termination was asked for
 * (the Node's deletionTimestamp, or its NodeClaim's, which in Karpenter
 * deletes the Node at once) and its lifetime. */
static void count_node_gone(ds_term *t, const tlr_kclaim *c, const tlr_knode *n)
{
    if (!t->m_terminated)
        return;
    int64_t now = now_ms(t), asked = n->deletion_ms;
    if (!asked || (c->deletion_ms && c->deletion_ms < asked))
        asked = c->deletion_ms;
    const char *pool[] = { n->nodepool };
    tlr_metrics_counter_inc(t->m_terminated, (const char *const[]){ n->nodepool, n->zone });
    if (asked)
        tlr_metrics_summary_observe(t->m_node_term_s, pool, (double)(now - asked) / 1000.0);
    if (n->creation_ms)
        tlr_metrics_histogram_observe(t->m_lifetime, pool, (double)(now - n->creation_ms) / 1000.0);
}

/* Steps 2-3 for one node: taint and drain.  Returns true when drained
 * (for min_drain_ms). */
static bool drain_node(ds_term *t, tstate *s, const tlr_kclaim *c, const tlr_knode *n,
                       int64_t deadline, ds_term_stats *st)
{
    int64_t now = now_ms(t);
    if (!n->tainted) {
        int rc = t->o.kube.taint(t->o.kube.arg, n->name, true);
        if (rc && rc != TLR_E_NOTFOUND) {
            TLR_WARN(t->o.log, "could not taint node", TLR_S("node", n->name), TLR_ERR(rc));
            return false;
        }
    }
    if (!s->announced) {
        s->announced = true;
        s->drain_started_ms = now;
        TLR_INFO(t->o.log, "draining node", TLR_S("node", n->name),
                 TLR_S("nodeclaim", c ? c->name : ""), TLR_I("deadline_unix_ms", deadline));
        term_publish(t, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_DRAIN_STARTED, n->name,
                     c ? c->name : NULL, NULL, NULL);
    }
    if (n->do_not_disrupt && !s->dnd_noted) {
        s->dnd_noted = true;
        event(t, "Node", n->name, n->uid, "Normal", "DoNotDisruptOverridden",
              "the node carries karpenter.sh/do-not-disrupt but is being deleted: draining it");
    }
    tlr_drain_report r;
    tlr_drain_opts dopt = { .now_ms = now, .deadline_ms = deadline };
    int rc = tlr_drain_pass(&t->o.drain, n->name, s->drain, &dopt, &r);
    if (rc) {
        TLR_WARN(t->o.log, "could not list the node's pods", TLR_S("node", n->name), TLR_ERR(rc));
        return false;
    }
    st->evicted += (int)(r.evicted + r.deleted);
    if (t->m_evicted && (r.evicted + r.deleted)) {
        /* Karpenter labels a drained pod with its NodeClaim's
         * DisruptionReason condition, or "Forceful Termination" without
         * one (a NodeClaim or Node deleted by hand, expiry, interruption). */
        const char *why = c && c->disruption_reason[0] ? c->disruption_reason : "Forceful Termination";
        tlr_metrics_counter_add(t->m_evicted, (const char *const[]){ why },
                                (double)(r.evicted + r.deleted));
    }
    if (t->m_evict_req && r.evicted)
        tlr_metrics_counter_add(t->m_evict_req, (const char *const[]){ "200" }, (double)r.evicted);
    if (t->m_evict_req && r.refused)
        tlr_metrics_counter_add(t->m_evict_req, (const char *const[]){ "429" }, (double)r.refused);
    bool done = r.done;
    s->blocked = !done && r.nblockers;
    if (!done) {
        s->first_done_ms = 0;
        char msg[2048], full[2300];
        if (r.nblockers) {
            st->blocked++;
            tlr_drain_report_summary(&r, 4, msg, sizeof(msg));
            snprintf(full, sizeof(full), "drain of node %s blocked: %s", n->name, msg);
            blocked_events(t, s, c, n, full);
            set_status(s, full);
            term_publish(t, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_DRAIN_BLOCKED,
                         n->name, c ? c->name : NULL, &r, full);
        } else {
            snprintf(full, sizeof(full), "draining node %s: %zu pods left", n->name, r.waiting);
            set_status(s, full);
        }
    } else {
        if (!s->first_done_ms) {
            s->first_done_ms = now;
            count(t->m_drained, n->nodepool, 1);
            term_publish(t, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_DRAINED, n->name,
                         c ? c->name : NULL, &r, NULL);
        }
        set_status(s, "drained; terminating the instance");
    }
    tlr_drain_report_clear(&r);
    return done && now - s->first_done_ms >= t->o.min_drain_ms;
}

/* Step 4: the launcher terminates the instance (and deletes the claim). */
static bool terminate_instance(ds_term *t, tstate *s, const char *claim, const char *instance,
                               const char *why)
{
    if (!t->o.launcher.terminate)
        return false;
    Tailor__V1__TerminateItem it = TAILOR__V1__TERMINATE_ITEM__INIT;
    it.nodeclaim_name = (char *)(claim ? claim : "");
    it.instance_id = (char *)(instance ? instance : "");
    Tailor__V1__TerminateItem *items[1] = { &it };
    Tailor__V1__TerminateRequest req = TAILOR__V1__TERMINATE_REQUEST__INIT;
    req.items = items;
    req.n_items = 1;
    req.reason = (char *)why;
    Tailor__V1__TerminateResponse *resp = NULL;
    int rc = t->o.launcher.terminate(t->o.launcher.arg, &req, &resp);
    if (rc == TLR_OK && resp->n_results == 1 && resp->results[0]->status &&
        resp->results[0]->status->code != TLR_OK)
        rc = resp->results[0]->status->code;
    if (resp)
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    if (rc) {
        char msg[300];
        snprintf(msg, sizeof(msg), "drained; the launcher could not terminate the instance yet: %s",
                 tlr_strerror(rc));
        set_status(s, msg);
        TLR_WARN(t->o.log, "terminate failed; retrying", TLR_S("nodeclaim", claim ? claim : ""),
                 TLR_S("instance", instance ? instance : ""), TLR_ERR(rc));
    }
    return rc == TLR_OK;
}

static void release(ds_term *t, ds_kind kind, const char *name)
{
    int rc = t->o.kube.finalizer(t->o.kube.arg, kind, name, false);
    if (rc && rc != TLR_E_NOTFOUND)
        TLR_WARN(t->o.log, "could not remove the finalizer",
                 TLR_S("kind", kind == DS_KIND_NODE ? "Node" : "NodeClaim"), TLR_S("name", name),
                 TLR_ERR(rc));
}

/* Set a NodeClaim condition unless it already reads so (as listed this
 * pass): Karpenter's Drained and InstanceTerminating, so that `kubectl get
 * nodeclaim -o yaml` says where a termination stands. */
static void claim_condition(ds_term *t, const tlr_kclaim *c, const char *type, const char *have,
                            const char *have_msg, const char *status, const char *reason,
                            const char *msg)
{
    if (!t->o.kube.condition || (!strcmp(have, status) && !strcmp(have_msg ? have_msg : "", msg)))
        return;
    int rc = t->o.kube.condition(t->o.kube.arg, c->name, type, status, reason, msg);
    if (rc && rc != TLR_E_NOTFOUND)
        TLR_DEBUG(t->o.log, "could not set the NodeClaim condition; next pass",
                  TLR_S("nodeclaim", c->name), TLR_S("condition", type), TLR_ERR(rc));
}

static void terminate_claim(ds_term *t, const tlr_kclaim *c, const tlr_knode *n, ds_term_stats *st)
{
    tstate *s = state_of(t, c->name);
    s->seen = true;
    st->terminating++;
    int64_t deadline = ds_term_deadline(c);
    if (!c->term_ts_ms && deadline) {
        char ts[TLR_TIME_BUFLEN];
        tlr_time_format_s(deadline, ts);
        int rc = t->o.kube.annotate(t->o.kube.arg, DS_KIND_NODECLAIM, c->name, DS_TERMINATION_TS, ts);
        if (rc)
            TLR_WARN(t->o.log, "could not record the drain deadline", TLR_S("nodeclaim", c->name),
                     TLR_ERR(rc));
    }
    if (n) {
        bool go = drain_node(t, s, c, n, deadline, st);
        if (s->first_done_ms)
            claim_condition(t, c, "Drained", c->drained, c->drained_msg, "True", "Drained", "");
        else
            claim_condition(t, c, "Drained", c->drained, c->drained_msg, "Unknown", "Draining",
                            s->blocked ? s->status : "evicting pods");
        if (!go)
            return;
    }
    char why[320];
    snprintf(why, sizeof(why), "termination:%s", c->name);
    if (c->instance_id[0])
        claim_condition(t, c, "InstanceTerminating", c->terminating, "", "True",
                        "InstanceTerminating", "");
    if (!terminate_instance(t, s, c->name, c->instance_id, why))
        return;
    if (n) {
        release(t, DS_KIND_NODE, n->name);
        int rc = t->o.kube.remove(t->o.kube.arg, DS_KIND_NODE, n->name);
        if (rc && rc != TLR_E_NOTFOUND)
            TLR_WARN(t->o.log, "could not delete node", TLR_S("node", n->name), TLR_ERR(rc));
    }
    release(t, DS_KIND_NODECLAIM, c->name);
    if (n)
        count_node_gone(t, c, n);
    if (t->m_claim_term_s && c->deletion_ms)
        tlr_metrics_histogram_observe(t->m_claim_term_s, (const char *const[]){ c->nodepool },
                                      (double)(now_ms(t) - c->deletion_ms) / 1000.0);
    st->terminated++;
    TLR_INFO(t->o.log, "nodeclaim terminated", TLR_S("nodeclaim", c->name),
             TLR_S("node", n ? n->name : ""), TLR_S("instance", c->instance_id));
    term_publish(t, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_TERMINATED,
                 n ? n->name : NULL, c->name, NULL, NULL);
    lh_table_delete(t->st, c->name);
}

static void terminate_orphan(ds_term *t, const tlr_knode *n, ds_term_stats *st)
{
    char key[300];
    snprintf(key, sizeof(key), "node/%s", n->name);
    tstate *s = state_of(t, key);
    s->seen = true;
    st->terminating++;
    if (!drain_node(t, s, NULL, n, 0, st))
        return;
    const char *id = tlr_provider_id_instance(n->provider_id);
    if (id && !terminate_instance(t, s, NULL, id, "termination:orphan-node"))
        return;
    release(t, DS_KIND_NODE, n->name);
    st->terminated++;
    TLR_INFO(t->o.log, "node without nodeclaim terminated", TLR_S("node", n->name));
    lh_table_delete(t->st, key);
}

int ds_term_pass(ds_term *t, ds_term_stats *stats)
{
    ds_term_stats local = { 0 };
    ds_term_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof(*st));
    tlr_kclaims claims = { 0 };
    tlr_knodes nodes = { 0 };
    int rc = t->o.kube.claims_list(t->o.kube.arg, &claims);
    if (!rc)
        rc = t->o.kube.nodes_list(t->o.kube.arg, &nodes);
    if (rc) {
        TLR_WARN(t->o.log, "termination: could not list nodeclaims and nodes", TLR_ERR(rc));
        tlr_kclaims_free(&claims);
        return rc;
    }
    struct lh_entry *e;
    lh_foreach(t->st, e)
        ((tstate *)lh_entry_v(e))->seen = false;
    ds_term_plan plan;
    ds_term_decide(&claims, &nodes, t->o.manage_finalizers, &plan);
    for (size_t i = 0; i < plan.n; i++) {
        const ds_term_item *it = &plan.v[i];
        const tlr_kclaim *c = it->claim >= 0 ? &claims.v[it->claim] : NULL;
        const tlr_knode *n = it->node >= 0 ? &nodes.v[it->node] : NULL;
        switch (it->action) {
        case DS_TA_FINALIZE_CLAIM:
        case DS_TA_FINALIZE_NODE: {
            bool node = it->action == DS_TA_FINALIZE_NODE;
            int frc = t->o.kube.finalizer(t->o.kube.arg, node ? DS_KIND_NODE : DS_KIND_NODECLAIM,
                                          node ? n->name : c->name, true);
            if (frc == TLR_OK)
                st->finalized++;
            else if (frc != TLR_E_NOTFOUND && frc != TLR_E_CONFLICT)
                TLR_WARN(t->o.log, "could not add the termination finalizer",
                         TLR_S("name", node ? n->name : c->name), TLR_ERR(frc));
            break;
        }
        case DS_TA_DELETE_CLAIM: {
            int drc = t->o.kube.remove(t->o.kube.arg, DS_KIND_NODECLAIM, c->name);
            TLR_INFO(t->o.log, "node deleted: deleting its nodeclaim", TLR_S("node", n->name),
                     TLR_S("nodeclaim", c->name), TLR_ERR(drc));
            break;
        }
        case DS_TA_TERMINATE:
            terminate_claim(t, c, n, st);
            break;
        case DS_TA_ORPHAN:
            terminate_orphan(t, n, st);
            break;
        }
    }
    /* Forget what is no longer terminating (released elsewhere, or gone). */
    struct lh_entry *tmp;
    lh_foreach_safe(t->st, e, tmp) {
        tstate *s = (tstate *)lh_entry_v(e);
        if (!s->seen)
            lh_table_delete(t->st, s->key);
    }
    if (t->m_blocked)
        tlr_gauge_set(tlr_metric_series(t->m_blocked, NULL), st->blocked);
    ds_term_plan_clear(&plan);
    tlr_kclaims_free(&claims);
    tlr_knodes_free(&nodes);
    return TLR_OK;
}
