/* interruption.c - EC2 interruption events (interruption.h). */
#include "interruption.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "view.h"

#define SPOT_NOTICE_MS (2 * 60 * 1000)

/* ---- parse ---------------------------------------------------------------- */

static void copy(char *dst, size_t len, const char *s)
{
    snprintf(dst, len, "%s", s ? s : "");
}

int ds_intr_parse(const char *body, ds_intr_msg *out, char *err, size_t len)
{
    memset(out, 0, sizeof(*out));
    json_object *o = NULL;
    char perr[200];
    if (!body || tlr_json_parse(body, strlen(body), 1 << 20, &o, perr, sizeof(perr)) != TLR_OK) {
        snprintf(err, len, "not JSON: %s", body ? perr : "empty");
        return TLR_E_PARSE;
    }
    const char *dt = tlr_json_str(o, "detail-type"), *src = tlr_json_str(o, "source");
    if (!dt || !src || !tlr_json_obj(o, "detail")) {
        snprintf(err, len, "not an EventBridge event (no source, detail-type or detail)");
        json_object_put(o);
        return TLR_E_PARSE;
    }
    copy(out->type, sizeof(out->type), dt);
    const char *t = tlr_json_str(o, "time");
    if (t)
        tlr_time_parse(t, &out->time_ms);
    const char *inst = tlr_json_str(o, "detail.instance-id");
    if (!strcmp(dt, "EC2 Spot Instance Interruption Warning")) {
        out->kind = DS_INTR_SPOT;
    } else if (!strcmp(dt, "EC2 Instance Rebalance Recommendation")) {
        out->kind = DS_INTR_REBALANCE;
    } else if (!strcmp(dt, "EC2 Instance State-change Notification")) {
        const char *st = tlr_json_str(o, "detail.state");
        copy(out->state, sizeof(out->state), st);
        if (st && (!strcmp(st, "stopping") || !strcmp(st, "stopped") ||
                   !strcmp(st, "shutting-down") || !strcmp(st, "terminated")))
            out->kind = DS_INTR_STATE;
    } else if (!strcmp(dt, "AWS Health Event") && !strcmp(src, "aws.health")) {
        const char *cat = tlr_json_str(o, "detail.eventTypeCategory");
        const char *svc = tlr_json_str(o, "detail.service");
        json_object *ents = tlr_json_arr(o, "detail.affectedEntities");
        if (cat && !strcmp(cat, "scheduledChange") && svc && !strcmp(svc, "EC2") && ents &&
            json_object_array_length(ents) > 0) {
            out->kind = DS_INTR_SCHEDULED;
            inst = tlr_json_str(json_object_array_get_idx(ents, 0), "entityValue");
        }
    }
    if (out->kind != DS_INTR_NONE) {
        if (!inst || strncmp(inst, "i-", 2)) {
            snprintf(err, len, "%s without an instance id", dt);
            json_object_put(o);
            out->kind = DS_INTR_NONE;
            return TLR_E_PARSE;
        }
        copy(out->instance, sizeof(out->instance), inst);
    }
    json_object_put(o);
    return TLR_OK;
}

const char *ds_intr_kind_name(ds_intr_kind k, const char *state)
{
    switch (k) {
    case DS_INTR_SPOT:
        return "spot_interrupted";
    case DS_INTR_SCHEDULED:
        return "scheduled_change";
    case DS_INTR_REBALANCE:
        return "rebalance_recommendation";
    case DS_INTR_STATE:
        return state && (!strcmp(state, "stopping") || !strcmp(state, "stopped")) ? "instance_stopped"
                                                                                   : "instance_terminated";
    default:
        return "unknown";
    }
}

/* ---- act ------------------------------------------------------------------ */

struct ds_intr {
    ds_intr_opts o;
    tlr_metric_family *m_received, *m_deleted, *m_latency;
};

void ds_intr_create(const ds_intr_opts *o, ds_intr **out)
{
    ds_intr *i = tlr_calloc(1, sizeof(*i));
    i->o = *o;
    if (!i->o.margin_ms)
        i->o.margin_ms = 20000;
    if (o->metrics) {
        static const char *const mt[] = { "message_type" };
        i->m_received = tlr_metrics_counter(o->metrics, "karpenter_interruption_received_messages_total",
                                            "Interruption queue messages received, by type.", 1, mt);
        i->m_deleted = tlr_metrics_counter(o->metrics, "karpenter_interruption_deleted_messages_total",
                                           "Interruption queue messages deleted.", 0, NULL);
        /* Karpenter's DurationBuckets (pkg/metrics/constants.go). */
        static const double kb[] = {
            0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
            1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50,
            60, 120, 150, 300, 450, 600,
        };
        i->m_latency = tlr_metrics_histogram(o->metrics, "karpenter_interruption_message_queue_duration_seconds",
                                             "Amount of time an interruption message is on the queue before it "
                                             "is processed by karpenter.", 0, NULL, kb,
                                             (int)(sizeof(kb) / sizeof(kb[0])));
    }
    *out = i;
}

void ds_intr_set_catalog(ds_intr *i, const Tailor__V1__Catalog *cat)
{
    i->o.catalog = cat;
}

void ds_intr_free(ds_intr *i)
{
    free(i);
}

static int64_t now_ms(const ds_intr *i)
{
    return i->o.clock->wall_ms(i->o.clock->arg);
}

static const ds_vnode *node_of_instance(const ds_view *v, const char *inst)
{
    size_t il = strlen(inst);
    for (size_t k = 0; k < v->nnodes; k++) {
        const char *pid = v->nodes[k].node->provider_id;
        size_t pl = strlen(pid);
        if (pl > il && pid[pl - il - 1] == '/' && !strcmp(pid + pl - il, inst))
            return &v->nodes[k];
    }
    return NULL;
}

static const Tailor__V1__NodeClaim *claim_of_instance(const ds_view *v, const char *inst)
{
    for (size_t k = 0; v->cs && k < v->cs->n_nodeclaims; k++) {
        const Tailor__V1__NodeClaim *c = v->cs->nodeclaims[k];
        if (c->status && !strcmp(c->status->instance_id, inst))
            return c;
    }
    return NULL;
}

static void event2(ds_intr *i, const ds_vnode *x, const char *claim, const char *type,
                   const char *reason, const char *msg)
{
    if (!i->o.kube.event)
        return;
    if (x)
        i->o.kube.event(i->o.kube.arg, "Node", "", x->node->name, x->node->uid, type, reason, msg);
    if (claim && claim[0])
        i->o.kube.event(i->o.kube.arg, "NodeClaim", "", claim, "", type, reason, msg);
}

/* Launch what the node's pods need elsewhere; returns replacements launched. */
static int launch_replacements(ds_intr *i, const ds_view *v, const ds_vnode *x,
                               const ds_intr_msg *m)
{
    if (!x || !x->moving || !v->catalog || !i->o.launcher.launch)
        return 0;
    Tailor__V1__OfferingUnavailable ice = TAILOR__V1__OFFERING_UNAVAILABLE__INIT, *icep[1] = { &ice };
    ice.instance_type = x->node->instance_type;
    ice.zone = x->node->zone;
    ice.capacity_type = x->node->capacity_type;
    ice.until_unix_ms = now_ms(i) + 3 * 60 * 1000;   /* Karpenter's ICE time */
    ice.reason = (char *)"SpotInterruption";
    bool spot = m->kind == DS_INTR_SPOT;
    ds_sim s = { .v = v, .solver = i->o.solver, .ice = spot ? icep : NULL, .nice = spot ? 1 : 0,
                 .full_pods = i->o.full_pods, .full_pods_arg = i->o.full_pods_arg };
    const char *names[1] = { x->node->name };
    ds_sim_result r;
    int rc = ds_sim_run(&s, names, 1, true, 8, &r);
    int n = 0;
    if (rc || !r.feasible) {
        TLR_WARN(i->o.log, "interruption: no replacement plan; pods go pending",
                 TLR_S("node", x->node->name), TLR_S("why", r.why));
    } else if (r.nreplacements) {
        Tailor__V1__LaunchRequest lr = TAILOR__V1__LAUNCH_REQUEST__INIT;
        char reason[160], (*names2)[96] = tlr_calloc(r.nreplacements, sizeof(*names2));
        char **old = tlr_calloc(r.nreplacements, sizeof(char *));
        snprintf(reason, sizeof(reason), "interruption:%s", m->instance);
        for (size_t k = 0; k < r.nreplacements; k++) {
            Tailor__V1__NodeClaim *nc = r.resp->replacements[k];
            unsigned long rnd = (unsigned long)random();
            static const char al[] = "bcdfghjklmnpqrstvwxz2456789";
            char sfx[6];
            for (int j = 0; j < 5; j++, rnd /= 27)
                sfx[j] = al[rnd % 27];
            sfx[5] = '\0';
            snprintf(names2[k], sizeof(names2[k]), "%.60s-%s", nc->nodepool, sfx);
            old[k] = nc->name;
            nc->name = names2[k];
        }
        lr.nodeclaims = r.resp->replacements;
        lr.n_nodeclaims = r.nreplacements;
        lr.reason = reason;
        if (spot) {
            lr.unavailable_offerings = icep;
            lr.n_unavailable_offerings = 1;
        }
        Tailor__V1__LaunchResponse *resp = NULL;
        rc = i->o.launcher.launch(i->o.launcher.arg, &lr, &resp);
        for (size_t k = 0; k < r.nreplacements; k++) {
            if (rc == TLR_OK && k < resp->n_results && resp->results[k]->status &&
                resp->results[k]->status->code == TLR_OK)
                n++;
            TLR_INFO(i->o.log, "interruption: replacement launched", TLR_S("node", x->node->name),
                     TLR_S("nodeclaim", names2[k]), TLR_ERR(rc));
            r.resp->replacements[k]->name = old[k];
        }
        if (resp)
            protobuf_c_message_free_unpacked(&resp->base, NULL);
        free(names2);
        free(old);
    }
    ds_sim_result_clear(&s, &r);
    return n;
}

/* Steps 1-4 for one message.  Returns TLR_OK when the message may go. */
static int handle(ds_intr *i, const ds_view *v, const ds_intr_msg *m, ds_intr_stats *st)
{
    const ds_vnode *x = node_of_instance(v, m->instance);
    const Tailor__V1__NodeClaim *c = x && x->claim ? x->claim : claim_of_instance(v, m->instance);
    if (!x && !c) {
        TLR_INFO(i->o.log, "interruption event for an instance tailor does not manage",
                 TLR_S("instance", m->instance), TLR_S("type", m->type));
        st->ignored++;
        return TLR_OK;
    }
    const char *claim = c ? c->name : (x ? x->node->nodeclaim_name : "");
    char msg[400];
    if (m->kind == DS_INTR_REBALANCE && !i->o.rebalance_drains) {
        snprintf(msg, sizeof(msg), "EC2 recommends rebalancing instance %s (higher interruption "
                 "risk); the node stays", m->instance);
        event2(i, x, claim, "Normal", "RebalanceRecommendation", msg);
        st->handled++;
        return TLR_OK;
    }
    if (c && c->deletion_unix_ms) {
        st->handled++;
        return TLR_OK;   /* already going */
    }
    int64_t now = now_ms(i);
    int64_t deadline = 0;
    if (m->kind == DS_INTR_SPOT)
        deadline = (m->time_ms ? m->time_ms : now) + SPOT_NOTICE_MS - i->o.margin_ms;
    else if (m->kind == DS_INTR_STATE)
        deadline = now;
    st->replacements += launch_replacements(i, v, x, m);
    if (x) {
        int rc = i->o.kube.taint(i->o.kube.arg, x->node->name, true);
        if (rc && rc != TLR_E_NOTFOUND)
            return rc;
    }
    if (claim[0] && deadline) {
        int64_t cur = 0;
        if (c)
            for (size_t k = 0; k < c->n_annotations; k++)
                if (!strcmp(c->annotations[k]->key, DS_TERMINATION_TS))
                    tlr_time_parse(c->annotations[k]->value, &cur);
        if (!cur || deadline < cur) {
            char ts[TLR_TIME_BUFLEN];
            tlr_time_format_s(deadline < now ? now : deadline, ts);
            i->o.kube.annotate(i->o.kube.arg, DS_KIND_NODECLAIM, claim, DS_TERMINATION_TS, ts);
        }
    }
    if (claim[0]) {
        int rc = i->o.kube.remove(i->o.kube.arg, DS_KIND_NODECLAIM, claim);
        if (rc && rc != TLR_E_NOTFOUND)
            return rc;
    }
    snprintf(msg, sizeof(msg), "%s for instance %s%s%s%s: replacing and draining the node%s", m->type,
             m->instance, m->state[0] ? " (" : "", m->state, m->state[0] ? ")" : "",
             deadline ? " before the instance goes" : "");
    event2(i, x, claim, "Warning", m->kind == DS_INTR_SPOT ? "SpotInterrupted"
                                   : m->kind == DS_INTR_SCHEDULED ? "ScheduledChange"
                                   : m->kind == DS_INTR_STATE ? "InstanceStopping"
                                                              : "RebalanceRecommendation",
           msg);
    TLR_INFO(i->o.log, "interruption: node disrupted", TLR_S("instance", m->instance),
             TLR_S("node", x ? x->node->name : ""), TLR_S("nodeclaim", claim), TLR_S("type", m->type),
             TLR_I("deadline_unix_ms", deadline));
    if (i->o.publish) {
        Tailor__V1__DisruptionEvent ev = TAILOR__V1__DISRUPTION_EVENT__INIT;
        ev.kind = TAILOR__V1__DISRUPTION_EVENT_KIND__DISRUPTION_EVENT_KIND_DECIDED;
        ev.method = TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_INTERRUPTION;
        ev.node_name = (char *)(x ? x->node->name : "");
        ev.nodeclaim_name = (char *)claim;
        ev.message = msg;
        ev.event_unix_ms = now;
        i->o.publish(i->o.publish_arg, &ev);
    }
    st->handled++;
    return TLR_OK;
}

int ds_intr_pass(ds_intr *i, ds_intr_stats *stats)
{
    ds_intr_stats local = { 0 };
    ds_intr_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof(*st));
    ds_sqs_msgs msgs = { 0 };
    int rc = i->o.cloud.receive(i->o.cloud.arg, 10, &msgs);
    if (rc)
        return rc;
    st->received = (int)msgs.n;
    ds_view *v = NULL;
    for (size_t k = 0; k < msgs.n; k++) {
        ds_intr_msg m;
        char err[300];
        bool drop = false, parsed = true;
        if (ds_intr_parse(msgs.v[k].body, &m, err, sizeof(err)) != TLR_OK) {
            parsed = false;
            TLR_WARN(i->o.log, "interruption message dropped", TLR_S("id", msgs.v[k].id),
                     TLR_S("why", err));
            drop = true;
        } else if (m.kind == DS_INTR_NONE) {
            st->ignored++;
            drop = true;
        }
        if (i->m_received)
            tlr_counter_inc(tlr_metric_series(i->m_received,
                                              (const char *const[]){ ds_intr_kind_name(m.kind, m.state) }));
        if (!drop) {
            if (!v) {
                Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
                Tailor__V1__SnapshotResponse *resp = NULL;
                if (!i->o.watcher.snapshot ||
                    i->o.watcher.snapshot(i->o.watcher.arg, &req, &resp) != TLR_OK) {
                    st->failed += (int)(msgs.n - k);
                    break;   /* the messages come back after their visibility timeout */
                }
                ds_view_build(resp, i->o.catalog, NULL, now_ms(i), &v);
            }
            if (handle(i, v, &m, st) != TLR_OK) {
                st->failed++;
                continue;
            }
        }
        /* Karpenter: from the event's time until it was handled (parsed
         * messages only, ignored kinds included). */
        if (i->m_latency && parsed && m.time_ms > 0)
            tlr_metrics_histogram_observe(i->m_latency, NULL, (double)(now_ms(i) - m.time_ms) / 1000.0);
        if (i->o.cloud.delete_msg(i->o.cloud.arg, msgs.v[k].receipt) == TLR_OK && i->m_deleted)
            tlr_counter_inc(tlr_metric_series(i->m_deleted, NULL));
    }
    ds_view_free(v);
    ds_sqs_msgs_free(&msgs);
    return TLR_OK;
}
