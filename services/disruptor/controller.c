/* controller.c - the disruption controller (controller.h). */
#include "controller.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidates.h"
#include "claimconds.h"
#include "hash.h"
#include "poolstatus.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubesem.h"

#define MAX_CMDS 16

typedef struct stale {
    char *node;
    int64_t first_ms;
    bool seen;
} stale;

struct ds_ctl {
    ds_ctl_opts o;
    ds_cmd *cmds[MAX_CMDS];
    size_t ncmds;
    unsigned seq;
    stale *stale;
    size_t nstale, capstale;
    tlr_metric_family *m_decisions, *m_by_pool, *m_disrupted, *m_eligible, *m_allowed, *m_duration, *m_sims;
    tlr_metric_family *m_consuming, *m_failed_valid, *m_queue_fail;
    tlr_metric_family *m_eval, *m_timeouts;
};

void ds_ctl_create(const ds_ctl_opts *o, ds_ctl **out)
{
    ds_ctl *c = tlr_calloc(1, sizeof(*c));
    c->o = *o;
    if (!c->o.replace_timeout_ms)
        c->o.replace_timeout_ms = 10 * 60 * 1000;
    if (!c->o.pending_grace_ms)
        c->o.pending_grace_ms = 120 * 1000;
    if (o->metrics) {
        /* Names, label names and values as Karpenter v1.14 (docs/metrics.md). */
        static const char *const dl[] = { "decision", "reason", "consolidation_type" };
        static const char *const pdl[] = { "nodepool", "decision", "reason", "consolidation_type" };
        static const char *const dis[] = { "reason", "nodepool", "capacity_type" };
        static const char *const rl[] = { "reason" };
        static const char *const pl[] = { "nodepool", "reason" };
        static const char *const ml[] = { "method" };
        static const double b[] = { .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30 };
        c->m_decisions = tlr_metrics_counter(o->metrics, "karpenter_voluntary_disruption_decisions_total",
                                             "Number of disruption decisions performed. Labeled by "
                                             "disruption decision, reason, and consolidation type.", 3, dl);
        c->m_by_pool = tlr_metrics_counter(o->metrics,
                                           "karpenter_voluntary_disruption_decisions_by_nodepool_total",
                                           "Number of disruption decisions performed by nodepool. "
                                           "Labeled by nodepool name, disruption decision, reason, and "
                                           "consolidation type.", 4, pdl);
        c->m_disrupted = tlr_metrics_counter(o->metrics, "karpenter_nodeclaims_disrupted_total",
                                             "Number of nodeclaims disrupted in total by Karpenter. "
                                             "Labeled by reason the nodeclaim was disrupted and the "
                                             "owning nodepool.", 3, dis);
        c->m_eligible = tlr_metrics_gauge(o->metrics, "karpenter_voluntary_disruption_eligible_nodes",
                                          "Number of nodes eligible for disruption by Karpenter. "
                                          "Labeled by disruption reason.", 1, rl);
        c->m_allowed = tlr_metrics_gauge(o->metrics, "karpenter_nodepools_allowed_disruptions",
                                         "The number of nodes for a given NodePool that can be "
                                         "concurrently disrupting at a point in time. Labeled by "
                                         "NodePool.", 2, pl);
        static const char *const ct[] = { "consolidation_type" };
        c->m_consuming = tlr_metrics_gauge(o->metrics, "karpenter_nodepools_nodes_consuming_budgets",
                                           "The number of nodes consuming the budget of a nodepool at a "
                                           "point in time. Labeled by NodePool.", 2, pl);
        c->m_failed_valid = tlr_metrics_counter(o->metrics,
                                                "karpenter_voluntary_disruption_failed_validations_total",
                                                "Number of candidates that were selected for disruption but "
                                                "failed validation. Labeled by consolidation type.", 1, ct);
        c->m_queue_fail = tlr_metrics_counter(o->metrics, "karpenter_voluntary_disruption_queue_failures_total",
                                              "The number of times that an enqueued disruption decision "
                                              "failed. Labeled by disruption method.", 3, dl);
        c->m_duration = tlr_metrics_histogram(o->metrics, "tailor_disruptor_decision_duration_seconds",
                                              "Time to a disruption decision, by method.", 1, ml, b,
                                              (int)(sizeof(b) / sizeof(b[0])));
        c->m_sims = tlr_metrics_counter(o->metrics, "tailor_disruptor_simulations_total",
                                        "Simulate requests sent to the solvers.", 0, NULL);
        /* Karpenter's DurationBuckets (pkg/metrics/constants.go). */
        static const double kb[] = {
            0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
            1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50,
            60, 120, 150, 300, 450, 600,
        };
        static const char *const rct[] = { "reason", "consolidation_type" };
        c->m_eval = tlr_metrics_histogram(o->metrics,
                                          "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
                                          "Duration of the disruption decision evaluation process in seconds. "
                                          "Labeled by method and consolidation type.", 2, rct, kb,
                                          (int)(sizeof(kb) / sizeof(kb[0])));
        c->m_timeouts = tlr_metrics_counter(o->metrics, "karpenter_voluntary_disruption_consolidation_timeouts_total",
                                            "Number of times the Consolidation algorithm has reached a timeout. "
                                            "Labeled by consolidation type.", 1, ct);
        /* Karpenter starts both at 0. */
        tlr_metrics_counter_add(c->m_timeouts, (const char *const[]){ "multi" }, 0);
        tlr_metrics_counter_add(c->m_timeouts, (const char *const[]){ "single" }, 0);
    }
    *out = c;
}

void ds_ctl_set_catalog(ds_ctl *c, const Tailor__V1__Catalog *cat)
{
    c->o.catalog = cat;
}

void ds_ctl_free(ds_ctl *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ncmds; i++)
        ds_cmd_free(c->cmds[i]);
    for (size_t i = 0; i < c->nstale; i++)
        free(c->stale[i].node);
    free(c->stale);
    free(c);
}

static int64_t now_ms(const ds_ctl *c)
{
    return c->o.clock->wall_ms(c->o.clock->arg);
}

static void ctl_publish(ds_ctl *c, Tailor__V1__DisruptionEventKind kind, const ds_cmd *cmd,
                        const char *msg)
{
    if (!c->o.publish)
        return;
    Tailor__V1__DisruptionEvent ev = TAILOR__V1__DISRUPTION_EVENT__INIT;
    ev.kind = kind;
    ev.decision_id = (char *)cmd->id;
    ev.method = cmd->method;
    ev.message = (char *)(msg ? msg : cmd->why);
    ev.event_unix_ms = now_ms(c);
    ev.decision = ds_cmd_decision(cmd);
    c->o.publish(c->o.publish_arg, &ev);
    protobuf_c_message_free_unpacked(&ev.decision->base, NULL);
}

static void events(ds_ctl *c, const ds_cmd *cmd, const char *type, const char *reason,
                   const char *msg)
{
    if (!c->o.kube.event)
        return;
    for (size_t i = 0; i < cmd->n; i++) {
        c->o.kube.event(c->o.kube.arg, "Node", "", cmd->c[i].node, "", type, reason, msg);
        if (cmd->c[i].claim[0])
            c->o.kube.event(c->o.kube.arg, "NodeClaim", "", cmd->c[i].claim, "", type, reason, msg);
    }
}

/* Karpenter's reason label value for a voluntary disruption:
 * "underutilized", "empty", "drifted" (its reason, lower-cased). */
static const char *reason_label(Tailor__V1__DisruptionReason r)
{
    switch (r) {
    case TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_UNDERUTILIZED:
        return "underutilized";
    case TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_EMPTY:
        return "empty";
    case TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_DRIFTED:
        return "drifted";
    default:
        return "";
    }
}

/* Karpenter's consolidation_type: "empty" for emptiness, "single" or
 * "multi" for consolidation, "" for drift. */
static const char *consolidation_type(const ds_cmd *cmd)
{
    switch (cmd->method) {
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EMPTINESS:
        return "empty";
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE:
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE:
        return cmd->n > 1 ? "multi" : "single";
    default:
        return "";
    }
}

/* karpenter_voluntary_disruption_decisions_total and its by-NodePool
 * twin, once per validated voluntary decision (expiration is not one: it
 * counts in karpenter_nodeclaims_disrupted_total only, as in Karpenter). */
static void count_decision(ds_ctl *c, const ds_cmd *cmd)
{
    if (!c->m_decisions || !cmd->reason)
        return;
    const char *decision = cmd->nrepl > 0 ? "replace" : "delete";
    const char *reason = reason_label(cmd->reason), *type = consolidation_type(cmd);
    tlr_metrics_counter_inc(c->m_decisions, (const char *const[]){ decision, reason, type });
    for (size_t i = 0; i < cmd->n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(cmd->c[j].pool, cmd->c[i].pool);
        if (!seen)
            tlr_metrics_counter_inc(c->m_by_pool,
                                    (const char *const[]){ cmd->c[i].pool, decision, reason, type });
    }
}

/* karpenter_nodeclaims_disrupted_total, per NodeClaim deleted. */
static void count_disrupted(ds_ctl *c, const ds_cmd *cmd)
{
    if (!c->m_disrupted)
        return;
    const char *reason = cmd->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EXPIRATION
                             ? "expired"
                             : reason_label(cmd->reason);
    for (size_t i = 0; i < cmd->n; i++)
        tlr_metrics_counter_inc(c->m_disrupted,
                                (const char *const[]){ reason, cmd->c[i].pool,
                                                       tlr_ks_capacity_type_name(cmd->c[i].ct) });
}

/* ---- execution ------------------------------------------------------------ */

static void untaint(ds_ctl *c, const ds_cmd *cmd)
{
    for (size_t i = 0; i < cmd->n; i++)
        c->o.kube.taint(c->o.kube.arg, cmd->c[i].node, false);
}

static void delete_claims(ds_ctl *c, ds_cmd *cmd)
{
    for (size_t i = 0; i < cmd->n; i++) {
        int rc = c->o.kube.remove(c->o.kube.arg, DS_KIND_NODECLAIM, cmd->c[i].claim);
        if (rc && rc != TLR_E_NOTFOUND)
            TLR_WARN(c->o.log, "could not delete nodeclaim", TLR_S("nodeclaim", cmd->c[i].claim),
                     TLR_S("decision", cmd->id), TLR_ERR(rc));
    }
    count_disrupted(c, cmd);
    cmd->state = DS_CMD_DONE;
    TLR_INFO(c->o.log, "disruption decision executed", TLR_S("decision", cmd->id),
             TLR_S("method", ds_method_name(cmd->method)), TLR_I("nodes", (int64_t)cmd->n),
             TLR_F("savings_per_hour", cmd->savings), TLR_S("why", cmd->why));
}

static void name_replacement(Tailor__V1__NodeClaim *nc, unsigned long rnd)
{
    static const char al[] = "bcdfghjklmnpqrstvwxz2456789";
    char sfx[6], name[96];
    for (int j = 0; j < 5; j++, rnd /= 27)
        sfx[j] = al[rnd % 27];
    sfx[5] = '\0';
    snprintf(name, sizeof(name), "%.60s-%s", nc->nodepool[0] ? nc->nodepool : "tailor", sfx);
    if (nc->name != protobuf_c_empty_string)   /* unpacked "": the static default */
        free(nc->name);
    nc->name = tlr_strdup(name);
}

/* DisruptionReason on the decision's claims: set (Karpenter's reason) when
 * it is carried out, removed when it is undone. */
static void disruption_reason(ds_ctl *c, const ds_cmd *cmd, bool set)
{
    const char *reason = ds_reason_name(cmd->reason);
    if (!c->o.kube.condition || !cmd->reason || !reason || !reason[0])
        return;
    for (size_t i = 0; i < cmd->n; i++)
        if (cmd->c[i].claim && cmd->c[i].claim[0])
            c->o.kube.condition(c->o.kube.arg, cmd->c[i].claim, "DisruptionReason",
                                set ? "True" : NULL, reason, reason);
}

static void fail_cmd(ds_ctl *c, ds_cmd *cmd, const char *why)
{
    if (c->m_queue_fail && cmd->reason)
        tlr_metrics_counter_inc(c->m_queue_fail,
                                (const char *const[]){ cmd->nrepl ? "replace" : "delete",
                                                       reason_label(cmd->reason), consolidation_type(cmd) });
    untaint(c, cmd);
    disruption_reason(c, cmd, false);
    for (size_t i = 0; i < cmd->nrepl; i++)
        if (cmd->repl[i]->name[0])
            c->o.kube.remove(c->o.kube.arg, DS_KIND_NODECLAIM, cmd->repl[i]->name);
    cmd->state = DS_CMD_FAILED;
    TLR_WARN(c->o.log, "disruption decision failed; undone", TLR_S("decision", cmd->id),
             TLR_S("why", why));
    ctl_publish(c, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_FAILED, cmd, why);
}

static void execute(ds_ctl *c, ds_cmd *cmd)
{
    for (size_t i = 0; i < cmd->n; i++) {
        int rc = c->o.kube.taint(c->o.kube.arg, cmd->c[i].node, true);
        if (rc) {
            fail_cmd(c, cmd, "a candidate could not be tainted");
            return;
        }
    }
    disruption_reason(c, cmd, true);
    char msg[900];
    snprintf(msg, sizeof(msg), "disrupting (%s, decision %s): %s", ds_method_name(cmd->method), cmd->id,
             cmd->why);
    events(c, cmd, "Normal", "DisruptionTerminating", msg);
    if (!cmd->nrepl) {
        delete_claims(c, cmd);
        return;
    }
    for (size_t i = 0; i < cmd->nrepl; i++)
        name_replacement(cmd->repl[i], (unsigned long)random());
    Tailor__V1__LaunchRequest lr = TAILOR__V1__LAUNCH_REQUEST__INIT;
    char reason[160];
    snprintf(reason, sizeof(reason), "%s:%s", ds_method_name(cmd->method), cmd->id);
    lr.nodeclaims = cmd->repl;
    lr.n_nodeclaims = cmd->nrepl;
    lr.reason = reason;
    Tailor__V1__LaunchResponse *resp = NULL;
    int rc = c->o.launcher.launch ? c->o.launcher.launch(c->o.launcher.arg, &lr, &resp)
                                  : TLR_E_UNAVAILABLE;
    bool ok = rc == TLR_OK && resp->n_results == cmd->nrepl;
    for (size_t i = 0; ok && i < resp->n_results; i++)
        ok = resp->results[i]->status && resp->results[i]->status->code == TLR_OK;
    if (resp)
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    if (!ok) {
        fail_cmd(c, cmd, rc ? tlr_strerror(rc) : "a replacement could not be launched");
        return;
    }
    cmd->state = DS_CMD_WAITING;
    cmd->launched_ms = now_ms(c);
    TLR_INFO(c->o.log, "replacements launched; waiting for them to be Initialized",
             TLR_S("decision", cmd->id), TLR_I("replacements", (int64_t)cmd->nrepl),
             TLR_S("first", cmd->repl[0]->name));
}

static bool replacements_ready(const ds_view *v, const ds_cmd *cmd, bool *gone)
{
    bool all = true;
    *gone = false;
    for (size_t i = 0; i < cmd->nrepl; i++) {
        const Tailor__V1__NodeClaim *found = NULL;
        for (size_t k = 0; v->cs && k < v->cs->n_nodeclaims; k++)
            if (!strcmp(v->cs->nodeclaims[k]->name, cmd->repl[i]->name))
                found = v->cs->nodeclaims[k];
        const ds_vnode *x = ds_view_node_of_claim(v, cmd->repl[i]->name);
        if (!found && !x) {
            all = false;
            *gone = true;
            continue;
        }
        if (!x || !x->initialized || !x->node->ready)
            all = false;
    }
    return all;
}

/* ---- validation ------------------------------------------------------------ */

static ds_cand_use use_of(const ds_cmd *cmd)
{
    return cmd->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_DRIFT ? DS_USE_DRIFT
                                                                               : DS_USE_CONSOLIDATION;
}

static bool validate(ds_ctl *c, ds_mctx *m, ds_cmd *cmd, char *why, size_t len)
{
    const ds_view *v = m->v;
    ds_vnode **set = tlr_calloc(cmd->n + 1, sizeof(*set));
    bool ok = true;
    for (size_t i = 0; i < cmd->n && ok; i++) {
        ds_vnode *x = ds_view_node(v, cmd->c[i].node);
        ds_blockers bl;
        if (!x) {
            snprintf(why, len, "node %s is gone", cmd->c[i].node);
            ok = false;
        } else if (!ds_candidate_check(v, x, use_of(cmd), &bl)) {
            snprintf(why, len, "%s", bl.v[0].message);
            ok = false;
        } else if (cmd->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EMPTINESS && x->moving) {
            snprintf(why, len, "node %s is not empty any more", x->node->name);
            ok = false;
        } else if (cmd->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_DRIFT &&
                   ds_drifted(m, x, why, len) == DS_DRIFT_NONE) {
            snprintf(why, len, "node %s has not drifted any more", x->node->name);
            ok = false;
        }
        set[i] = x;
    }
    /* budgets: the candidates are not disrupting yet, so they count on top */
    for (size_t i = 0; i < cmd->n && ok && cmd->reason; i++) {
        int need = 0;
        for (size_t k = 0; k < cmd->n; k++)
            need += !strcmp(cmd->c[k].pool, cmd->c[i].pool);
        if (ds_budgets_left(m->b, cmd->c[i].pool, cmd->reason) < need) {
            snprintf(why, len, "NodePool %s's %s budget no longer allows %d node%s", cmd->c[i].pool,
                     ds_reason_name(cmd->reason), need, need == 1 ? "" : "s");
            ok = false;
        }
    }
    bool consolidation = cmd->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE ||
                         cmd->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE;
    bool drift = cmd->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_DRIFT;
    if (ok && (consolidation || drift)) {
        /* Plan again with the pods as Kubernetes has them, constraints and
         * all: the snapshot's compact pods have no node selector, affinity,
         * tolerations or spread constraints, so a replacement planned on
         * them may be one the pods cannot use (a spot-only pod on an
         * on-demand node). */
        m->sim->full_pods = c->o.full_pods;
        m->sim->full_pods_arg = c->o.full_pods_arg;
        ds_cmd *again = drift ? ds_drift_evaluate(m, set, cmd->n, why, len)
                              : ds_consolidation_evaluate(m, set, cmd->n, why, len);
        m->sim->full_pods = NULL;
        if (!again) {
            ok = false;
        } else if (again->method != cmd->method) {
            snprintf(why, len, "the simulation now says %s instead of %s", ds_method_name(again->method),
                     ds_method_name(cmd->method));
            ok = false;
        } else {
            /* act on the fresh plan */
            Tailor__V1__NodeClaim **r = cmd->repl;
            size_t nr = cmd->nrepl;
            cmd->repl = again->repl;
            cmd->nrepl = again->nrepl;
            again->repl = r;
            again->nrepl = nr;
            cmd->after = again->after;
            cmd->savings = again->savings;
            if (!drift)   /* drift's why names the image; the plan is what changed */
                snprintf(cmd->why, sizeof(cmd->why), "%s", again->why);
        }
        ds_cmd_free(again);
    }
    free(set);
    return ok;
}

/* ---- the pass -------------------------------------------------------------- */

static bool holds(const ds_ctl *c, const char *node)
{
    for (size_t i = 0; i < c->ncmds; i++)
        if ((c->cmds[i]->state == DS_CMD_WAITING || c->cmds[i]->state == DS_CMD_PROPOSED) &&
            ds_cmd_has_node(c->cmds[i], node))
            return true;
    return false;
}

static int clean_taints(ds_ctl *c, const ds_view *v)
{
    int64_t now = now_ms(c);
    int n = 0;
    for (size_t i = 0; i < c->nstale; i++)
        c->stale[i].seen = false;
    for (size_t i = 0; i < v->nnodes; i++) {
        const ds_vnode *x = &v->nodes[i];
        const Tailor__V1__Node *nd = x->node;
        bool stale_taint = nd->marked_for_deletion && !nd->deletion_unix_ms &&
                           !(x->claim && x->claim->deletion_unix_ms) && !holds(c, nd->name);
        if (!stale_taint)
            continue;
        stale *s = NULL;
        for (size_t k = 0; k < c->nstale && !s; k++)
            if (!strcmp(c->stale[k].node, nd->name))
                s = &c->stale[k];
        if (!s) {
            TLR_GROW(c->stale, c->capstale, c->nstale + 1);
            s = &c->stale[c->nstale++];
            s->node = tlr_strdup(nd->name);
            s->first_ms = now;
        }
        s->seen = true;
        if (now - s->first_ms >= 5000 && !c->o.dry_run &&
            c->o.kube.taint(c->o.kube.arg, nd->name, false) == TLR_OK) {
            TLR_INFO(c->o.log, "removed a disrupted taint no decision holds", TLR_S("node", nd->name));
            n++;
            s->seen = false;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < c->nstale; i++) {
        if (c->stale[i].seen)
            c->stale[k++] = c->stale[i];
        else
            free(c->stale[i].node);
    }
    c->nstale = k;
    return n;
}

/* Nodes draining now whose pods every probe must place too. */
static const char **draining(const ds_view *v, size_t *n)
{
    const char **d = tlr_calloc(v->nnodes + 1, sizeof(*d));
    *n = 0;
    for (size_t i = 0; i < v->nnodes; i++)
        if (v->nodes[i].disrupting && v->nodes[i].moving)
            d[(*n)++] = v->nodes[i].node->name;
    return d;
}

static bool fresh_pending(const ds_ctl *c, const ds_view *v)
{
    for (size_t i = 0; i < v->snap->n_pending_pods; i++)
        if (v->now_ms - v->snap->pending_pods[i]->creation_unix_ms < c->o.pending_grace_ms)
            return true;
    return false;
}

int ds_ctl_view(ds_ctl *c, ds_view **out)
{
    if (!c->o.watcher.snapshot)
        return TLR_E_UNAVAILABLE;
    Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
    req.include_pending_pods = true;
    Tailor__V1__SnapshotResponse *resp = NULL;
    int rc = c->o.watcher.snapshot(c->o.watcher.arg, &req, &resp);
    if (rc)
        return rc;
    if (!resp->cluster) {
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        return TLR_E_NOTREADY;
    }
    ds_view_build(resp, c->o.catalog, c->o.podevents, now_ms(c), out);
    return TLR_OK;
}

void ds_ctl_mctx(ds_ctl *c, const ds_view *v, ds_budgets *b, ds_sim *sim, ds_mctx *m)
{
    ds_budgets_compute(v, b);
    memset(sim, 0, sizeof(*sim));
    sim->v = v;
    sim->solver = c->o.solver;
    sim->min_values_policy = c->o.min_values_policy;
    sim->preference_policy = c->o.preference_policy;
    memset(m, 0, sizeof(*m));
    m->v = v;
    m->b = b;
    m->sim = sim;
    m->min_savings = c->o.min_savings;
    m->spot_to_spot = c->o.spot_to_spot;
    m->max_candidates = c->o.max_candidates;
    m->time_budget_ms = c->o.time_budget_ms;
    m->seq = &c->seq;
    m->log = c->o.log;
}

const ds_cmd *ds_ctl_command_for(const ds_ctl *c, const char *node)
{
    for (size_t i = 0; i < c->ncmds; i++)
        if (ds_cmd_has_node(c->cmds[i], node))
            return c->cmds[i];
    return NULL;
}

/* Karpenter's decision_evaluation_duration_seconds{reason,consolidation_type}
 * for one method's evaluation (ms long): emptiness as reason "empty",
 * type "empty"; drift as "drifted", ""; consolidation split into its
 * multi-node and single-node searches as Karpenter's two methods
 * ("underutilized", "multi" / "single"), with a single-node search that
 * ran out of time counted in consolidation_timeouts_total.  tailor's
 * multi-node search has no time limit, so its timeouts stay 0. */
static void evaluation_metrics(ds_ctl *c, const ds_mctx *m, const char *method, double ms)
{
    if (!c->m_eval)
        return;
    if (!strcmp(method, "emptiness"))
        tlr_metrics_histogram_observe(c->m_eval, (const char *const[]){ "empty", "empty" }, ms / 1000.0);
    else if (!strcmp(method, "drift"))
        tlr_metrics_histogram_observe(c->m_eval, (const char *const[]){ "drifted", "" }, ms / 1000.0);
    else if (!strcmp(method, "consolidation")) {
        if (m->multi_ms >= 0)
            tlr_metrics_histogram_observe(c->m_eval, (const char *const[]){ "underutilized", "multi" },
                                          (double)m->multi_ms / 1000.0);
        if (m->single_ms >= 0)
            tlr_metrics_histogram_observe(c->m_eval, (const char *const[]){ "underutilized", "single" },
                                          (double)m->single_ms / 1000.0);
        if (m->single_timed_out)
            tlr_metrics_counter_inc(c->m_timeouts, (const char *const[]){ "single" });
    }
}

static void eligible_gauges(ds_ctl *c, ds_mctx *m)
{
    if (!c->m_eligible)
        return;
    int cons = 0, drift = 0, empty = 0;
    char why[256];
    for (size_t i = 0; i < m->v->nnodes; i++) {
        const ds_vnode *x = &m->v->nodes[i];
        ds_blockers bl;
        if (ds_candidate_check(m->v, x, DS_USE_CONSOLIDATION, &bl)) {
            if (x->moving)
                cons++;
            else
                empty++;
        }
        if (ds_candidate_check(m->v, x, DS_USE_DRIFT, &bl) &&
            ds_drifted(m, x, why, sizeof(why)) != DS_DRIFT_NONE)
            drift++;
    }
    tlr_gauge_set(tlr_metric_series(c->m_eligible, (const char *const[]){ "underutilized" }), cons);
    tlr_gauge_set(tlr_metric_series(c->m_eligible, (const char *const[]){ "empty" }), empty);
    tlr_gauge_set(tlr_metric_series(c->m_eligible, (const char *const[]){ "drifted" }), drift);
    /* Per NodePool and budget reason (Karpenter's spelling): what the
     * budgets allow now, and the nodes already disrupting that they count.
     * A NodePool that is gone takes its series with it. */
    tlr_metrics_family_mark_stale(c->m_allowed);
    tlr_metrics_family_mark_stale(c->m_consuming);
    for (size_t i = 0; i < m->b->n; i++)
        for (int r = 1; r < DS_NREASONS; r++) {
            const char *lv[] = { m->b->v[i].pool, ds_reason_name((Tailor__V1__DisruptionReason)r) };
            tlr_metrics_gauge_set(c->m_allowed, lv,
                                  ds_budgets_left(m->b, m->b->v[i].pool, (Tailor__V1__DisruptionReason)r));
            tlr_metrics_gauge_set(c->m_consuming, lv, m->b->v[i].disrupting);
        }
    tlr_metrics_family_sweep_stale(c->m_allowed);
    tlr_metrics_family_sweep_stale(c->m_consuming);
}

/* Hashes, NodePool status and NodeClaim conditions: those the view calls
 * for, written unless dry-run. */
static void ctl_write_status(ds_ctl *c, const ds_mctx *m, ds_ctl_stats *st)
{
    ds_stamps stamps;
    ds_hash_plan(m->v, &stamps);
    if (!c->o.dry_run)
        st->stamps = ds_hash_apply(&stamps, &c->o.kube);
    free(stamps.v);
    ds_pool_writes pw;
    ds_poolstatus_plan(m->v, &pw);
    if (!c->o.dry_run)
        st->pool_status = ds_poolstatus_apply(&pw, &c->o.kube);
    ds_pool_writes_clear(&pw);
    ds_cond_writes cw;
    ds_claimconds_plan(m, &cw);
    if (!c->o.dry_run)
        st->claim_conditions = ds_claimconds_apply(&cw, &c->o.kube);
    free(cw.v);
}

/* Expiration: forceful. */
static void ctl_expire(ds_ctl *c, ds_mctx *m, ds_ctl_stats *st)
{
    ds_cmd *exp = ds_expiration_decide(m);
    if (!exp)
        return;
    st->expired = (int)exp->n;
    ctl_publish(c, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_DECIDED, exp, NULL);
    if (!c->o.dry_run) {
        events(c, exp, "Normal", "Expired", "the NodeClaim is older than its expireAfter: deleting it");
        delete_claims(c, exp);
    }
    ds_cmd_free(exp);
}

/* One command in flight: a proposed one due for validation is
 * validated, then executed (or aborted); a waiting one deletes its nodes
 * once its replacements are ready, or fails when they do not come.
 * st->done counts a command this step left done, except a validated one
 * in dry-run. */
static void ctl_step_command(ds_ctl *c, ds_mctx *m, ds_cmd *cmd, ds_ctl_stats *st)
{
    int64_t now = m->v->now_ms;
    char why[768];
    if (cmd->state == DS_CMD_PROPOSED && now - cmd->created_ms >= c->o.validation_ms) {
        if (!validate(c, m, cmd, why, sizeof(why))) {
            cmd->state = DS_CMD_ABORTED;
            st->aborted++;
            if (c->m_failed_valid)
                tlr_metrics_counter_add(c->m_failed_valid,
                                        (const char *const[]){ consolidation_type(cmd) }, (double)cmd->n);
            TLR_INFO(c->o.log, "disruption decision aborted on validation", TLR_S("decision", cmd->id),
                     TLR_S("why", why));
            ctl_publish(c, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_ABORTED, cmd, why);
            return;
        }
        cmd->validated_ms = now;
        ctl_publish(c, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_VALIDATED, cmd, NULL);
        count_decision(c, cmd);
        for (size_t k = 0; k < cmd->n && cmd->reason; k++)
            ds_budgets_take(m->b, cmd->c[k].pool, 1);
        if (c->o.dry_run) {
            cmd->state = DS_CMD_DONE;
            return;
        }
        execute(c, cmd);
        st->executed++;
    } else if (cmd->state == DS_CMD_WAITING) {
        bool gone;
        if (replacements_ready(m->v, cmd, &gone)) {
            delete_claims(c, cmd);
        } else if (now - cmd->launched_ms > c->o.replace_timeout_ms ||
                   (gone && now - cmd->launched_ms > 60000)) {
            fail_cmd(c, cmd, gone ? "a replacement NodeClaim disappeared"
                                  : "the replacements were not Initialized in time");
            st->failed++;
        }
    }
    if (cmd->state == DS_CMD_DONE)
        st->done++;
}

static bool in_flight(const ds_cmd *cmd)
{
    return cmd->state == DS_CMD_PROPOSED || cmd->state == DS_CMD_WAITING;
}

/* The commands in flight: steps each, then drops those that finished.
 * Returns whether any is still in flight. */
static bool ctl_advance_commands(ds_ctl *c, ds_mctx *m, ds_ctl_stats *st)
{
    bool busy = false;
    for (size_t i = 0; i < c->ncmds; i++) {
        ctl_step_command(c, m, c->cmds[i], st);
        if (in_flight(c->cmds[i]))
            busy = true;
    }
    size_t k = 0;
    for (size_t i = 0; i < c->ncmds; i++) {
        if (in_flight(c->cmds[i]))
            c->cmds[k++] = c->cmds[i];
        else
            ds_cmd_free(c->cmds[i]);
    }
    c->ncmds = k;
    return busy;
}

/* The voluntary methods, in order, until one proposes a command. */
static void ctl_propose(ds_ctl *c, ds_mctx *m, ds_ctl_stats *st)
{
    static const struct {
        const char *name;
        ds_cmd *(*decide)(ds_mctx *);
    } methods[] = {
        { "emptiness", ds_emptiness_decide },
        { "drift", ds_drift_decide },
        { "consolidation", ds_consolidation_decide },
    };
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        int64_t t0 = tlr_mono_ms();
        ds_cmd *cmd = methods[i].decide(m);
        double ms = (double)(tlr_mono_ms() - t0);
        st->decide_ms += ms;
        if (c->m_duration)
            tlr_histogram_observe(tlr_metric_series(c->m_duration,
                                                    (const char *const[]){ methods[i].name }),
                                  ms / 1000.0);
        evaluation_metrics(c, m, methods[i].name, ms);
        if (!cmd)
            continue;
        cmd->created_ms = m->v->now_ms;
        c->cmds[c->ncmds++] = cmd;
        st->proposed++;
        TLR_INFO(c->o.log, "disruption decision proposed", TLR_S("decision", cmd->id),
                 TLR_S("method", ds_method_name(cmd->method)), TLR_I("nodes", (int64_t)cmd->n),
                 TLR_I("replacements", (int64_t)cmd->nrepl), TLR_F("savings_per_hour", cmd->savings),
                 TLR_F("decide_ms", ms), TLR_I("simulations", m->sim->calls), TLR_S("why", cmd->why));
        ctl_publish(c, TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_DECIDED, cmd, NULL);
        break;
    }
}

int ds_ctl_pass(ds_ctl *c, ds_ctl_stats *stats)
{
    ds_ctl_stats local = { 0 };
    ds_ctl_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof(*st));
    ds_view *v = NULL;
    int rc = ds_ctl_view(c, &v);
    if (rc)
        return rc;
    if (!v->cs->synced) {
        ds_view_free(v);
        return TLR_E_NOTREADY;
    }
    st->synced = true;
    ds_budgets b;
    ds_sim sim;
    ds_mctx m;
    ds_ctl_mctx(c, v, &b, &sim, &m);
    size_t nextra;
    const char **extra = draining(v, &nextra);
    sim.extra = extra;
    sim.nextra = nextra;

    ctl_write_status(c, &m, st);
    ctl_expire(c, &m, st);
    bool busy = ctl_advance_commands(c, &m, st);
    /* what this pass did is not in its view: decide again next pass */
    if (st->executed || st->expired)
        busy = true;
    st->untainted = clean_taints(c, v);
    eligible_gauges(c, &m);
    if (!busy && c->ncmds < MAX_CMDS && !fresh_pending(c, v))
        ctl_propose(c, &m, st);

    if (!st->proposed && !busy)
        TLR_DEBUG(c->o.log, "disruption pass: nothing to do", TLR_I("nodes", (int64_t)v->nnodes),
                  TLR_I("pending", (int64_t)v->snap->n_pending_pods), TLR_B("fresh_pending", fresh_pending(c, v)),
                  TLR_I("draining", (int64_t)nextra), TLR_I("simulations", sim.calls),
                  TLR_F("decide_ms", st->decide_ms));
    st->simulations = sim.calls;
    if (c->m_sims && sim.calls)
        tlr_counter_add(tlr_metric_series(c->m_sims, NULL), sim.calls);
    free(extra);
    ds_budgets_clear(&b);
    ds_view_free(v);
    return TLR_OK;
}
