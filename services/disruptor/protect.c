/* protect.c - single-replica protection (protect.h). */
#include "protect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_hash.h"

/* Answers are cached this long: a drain pass asks about every pod of a
 * node, and a workload's status does not change within one pass. */
#define CACHE_MS 300
/* A NodeClaim not Initialized this long after its creation is the
 * launcher's to give up on (registration TTL); no longer worth waiting for. */
#define LAUNCHING_MS (15 * 60 * 1000)

typedef struct wl_entry {
    char *key;                /* "ns/kind/name" */
    int rc;
    ds_workload w;
} wl_entry;

struct ds_protect {
    ds_protect_opts o;
    wl_entry *wl;
    size_t nwl, capwl;
    int64_t wl_at;
    ds_view *view;            /* make-room snapshot, cached like workloads */
    int64_t view_at;
    tlr_metric_family *m_restarts, *m_rooms;
};

void ds_protect_create(const ds_protect_opts *o, ds_protect **out)
{
    ds_protect *p = tlr_calloc(1, sizeof(*p));
    p->o = *o;
    if (o->metrics) {
        p->m_restarts = tlr_metrics_counter(o->metrics, "tailor_disruptor_rolling_restarts_total",
                                            "Rolling restarts made so a single-replica Deployment "
                                            "never has zero Ready pods.", 0, NULL);
        p->m_rooms = tlr_metrics_counter(o->metrics, "tailor_disruptor_room_launches_total",
                                         "NodeClaims launched so a single-replica pod has a home "
                                         "before it is evicted.", 0, NULL);
    }
    *out = p;
}

static void wl_clear(ds_protect *p)
{
    for (size_t i = 0; i < p->nwl; i++) {
        free(p->wl[i].key);
        ds_workload_clear(&p->wl[i].w);
    }
    p->nwl = 0;
}

void ds_protect_set_catalog(ds_protect *p, const Tailor__V1__Catalog *cat)
{
    ds_view_free(p->view);
    p->view = NULL;
    p->o.catalog = cat;
}

void ds_protect_free(ds_protect *p)
{
    if (!p)
        return;
    wl_clear(p);
    free(p->wl);
    ds_view_free(p->view);
    free(p);
}

static int64_t now_ms(const ds_protect *p)
{
    return p->o.clock->wall_ms(p->o.clock->arg);
}

static const wl_entry *workload(ds_protect *p, const char *ns, const char *kind, const char *name)
{
    int64_t now = now_ms(p);
    if (now - p->wl_at > CACHE_MS) {
        wl_clear(p);
        p->wl_at = now;
    }
    char key[600];
    snprintf(key, sizeof(key), "%s/%s/%s", ns, kind, name);
    for (size_t i = 0; i < p->nwl; i++)
        if (!strcmp(p->wl[i].key, key))
            return &p->wl[i];
    TLR_GROW(p->wl, p->capwl, p->nwl + 1);
    wl_entry *e = &p->wl[p->nwl++];
    memset(e, 0, sizeof(*e));
    e->key = tlr_strdup(key);
    e->rc = p->o.kube.workload(p->o.kube.arg, ns, kind, name, &e->w);
    return e;
}

static const Tailor__V1__OwnerReference *controller_of(const Tailor__V1__Pod *pod)
{
    for (size_t i = 0; i < pod->n_owners; i++)
        if (pod->owners[i]->controller)
            return pod->owners[i];
    return pod->n_owners ? pod->owners[0] : NULL;
}

void ds_protect_room_name(const char *pool, const char *node, char *buf, size_t len)
{
    /* FNV-1a of the node name: a stable, short suffix. */
    uint64_t h = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, node);
    static const char al[] = "bcdfghjklmnpqrstvwxz2456789";
    char sfx[6];
    for (int i = 0; i < 5; i++) {
        sfx[i] = al[h % (sizeof(al) - 1)];
        h /= sizeof(al) - 1;
    }
    sfx[5] = '\0';
    snprintf(buf, len, "%.40s-room-%s", pool && pool[0] ? pool : "tailor", sfx);
}

static const ds_view *room_view(ds_protect *p)
{
    int64_t now = now_ms(p);
    if (p->view && now - p->view_at <= CACHE_MS)
        return p->view;
    ds_view_free(p->view);
    p->view = NULL;
    if (!p->o.watcher.snapshot || !p->o.catalog)
        return NULL;
    Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
    Tailor__V1__SnapshotResponse *resp = NULL;
    if (p->o.watcher.snapshot(p->o.watcher.arg, &req, &resp) != TLR_OK)
        return NULL;
    if (!resp->cluster || !resp->cluster->synced) {
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        return NULL;
    }
    ds_view_build(resp, p->o.catalog, NULL, now, &p->view);
    p->view_at = now;
    return p->view;
}

/* Hold until the node's pods have a home on Initialized capacity: TLR_OK
 * once they do.  Both paths ask it -- the surge path before its restart,
 * so the new pod lands on a Ready node instead of going pending while a
 * replacement for the old one is already launching (two nodes bought for
 * one pod). */
static int make_room(ds_protect *p, const Tailor__V1__Pod *pod, const char *what, char *why,
                     size_t len)
{
    const ds_view *v = room_view(p);
    if (!v) {
        /* Without the cluster state we cannot tell; never block forever on it. */
        TLR_WARN(p->o.log, "single-replica pod evicted without a room check (no snapshot)",
                 TLR_S("pod", pod->name), TLR_S("workload", what));
        return TLR_OK;
    }
    ds_sim s = { .v = v, .solver = p->o.solver, .full_pods = p->o.full_pods,
                 .full_pods_arg = p->o.full_pods_arg };
    const char *names[1] = { pod->node_name };
    ds_sim_result r;
    int rc = ds_sim_run(&s, names, 1, true, 1, &r);
    if (rc) {
        snprintf(why, len, "%s has one Ready pod; checking where it can go failed: %s", what, r.why);
        ds_sim_result_clear(&s, &r);
        return TLR_E_BUSY;
    }
    if (r.feasible && r.nreplacements == 0) {
        ds_sim_result_clear(&s, &r);
        return TLR_OK;   /* its new home exists: the gap is its own start-up */
    }
    if (!r.feasible) {
        snprintf(why, len, "%s has one Ready pod and it would have nowhere to go: %s", what, r.why);
        ds_sim_result_clear(&s, &r);
        return TLR_E_BUSY;
    }
    /* Capacity already on its way (the interruption's or a consolidation's
     * replacement, an earlier room claim, a launch for pending pods): wait
     * for it rather than launch a second home for the same pods. */
    const Tailor__V1__NodeClaim *coming = ds_view_launching_claim(v, LAUNCHING_MS);
    if (coming) {
        snprintf(why, len, "%s has one Ready pod; waiting for NodeClaim %s to be Initialized", what,
                 coming->name);
        ds_sim_result_clear(&s, &r);
        return TLR_E_BUSY;
    }
    const ds_vnode *vn = ds_view_node(v, pod->node_name);
    char name[96];
    ds_protect_room_name(vn ? vn->node->nodepool : "", pod->node_name, name, sizeof(name));
    Tailor__V1__NodeClaim *nc = r.resp->replacements[0];
    char *old = nc->name;
    nc->name = name;
    Tailor__V1__NodeClaim *ncs[1] = { nc };
    Tailor__V1__LaunchRequest lr = TAILOR__V1__LAUNCH_REQUEST__INIT;
    char reason[300];
    snprintf(reason, sizeof(reason), "single-replica-room:%s", pod->node_name);
    lr.nodeclaims = ncs;
    lr.n_nodeclaims = 1;
    lr.reason = reason;
    Tailor__V1__LaunchResponse *resp = NULL;
    rc = p->o.launcher.launch ? p->o.launcher.launch(p->o.launcher.arg, &lr, &resp) : TLR_E_UNAVAILABLE;
    nc->name = old;
    if (resp)
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    if (rc == TLR_OK && p->m_rooms)
        tlr_counter_inc(tlr_metric_series(p->m_rooms, NULL));
    snprintf(why, len, "%s has one Ready pod; making room first: NodeClaim %s%s", what, name,
             rc ? " could not be launched yet" : " must be Initialized");
    ds_sim_result_clear(&s, &r);
    return TLR_E_BUSY;
}

int ds_protect_guard(void *arg, const Tailor__V1__Pod *pod, char *why, size_t len)
{
    ds_protect *p = arg;
    const Tailor__V1__OwnerReference *o = controller_of(pod);
    if (!o || pod->is_daemonset || !pod->ready)
        return TLR_OK;
    const wl_entry *e = workload(p, pod->namespace_, o->kind, o->name);
    if (e->rc || e->w.ready > 1)
        return TLR_OK;
    char what[400];
    snprintf(what, sizeof(what), "%s %s/%s", e->w.kind, e->w.ns, e->w.name);
    if (!strcmp(e->w.kind, "Deployment") && e->w.surge) {
        char key[160];
        snprintf(key, sizeof(key), "drain/%s", pod->uid);
        if (strcmp(e->w.restarted_for, key)) {
            int rc = make_room(p, pod, what, why, len);
            if (rc)
                return rc;
            char at[TLR_TIME_BUFLEN];
            tlr_time_format_s(now_ms(p), at);
            rc = p->o.kube.restart(p->o.kube.arg, e->w.ns, e->w.name, at, key);
            if (rc) {
                snprintf(why, len, "%s has one Ready pod; its rolling restart failed: %s", what,
                         tlr_strerror(rc));
                return TLR_E_BUSY;
            }
            if (p->m_restarts)
                tlr_counter_inc(tlr_metric_series(p->m_restarts, NULL));
            TLR_INFO(p->o.log, "single-replica workload: rolling restart before eviction",
                     TLR_S("workload", what), TLR_S("pod", pod->name), TLR_S("node", pod->node_name));
            char msg[600];
            snprintf(msg, sizeof(msg),
                     "rolling restart so that pod %s/%s on draining node %s is replaced before it goes",
                     pod->namespace_, pod->name, pod->node_name);
            if (p->o.kube.event)
                p->o.kube.event(p->o.kube.arg, "Pod", pod->namespace_, pod->name, pod->uid, "Normal",
                                "SingleReplicaRestart", msg);
            /* The cached answer is stale now: remember the restart. */
            free(((wl_entry *)e)->w.restarted_for);
            ((wl_entry *)e)->w.restarted_for = tlr_strdup(key);
            snprintf(why, len, "%s has one Ready pod; rolling restart started, waiting for the new "
                     "pod to be Ready", what);
        } else {
            snprintf(why, len, "%s has one Ready pod; waiting for the restarted pod to be Ready", what);
        }
        return TLR_E_BUSY;
    }
    return make_room(p, pod, what, why, len);
}
