/* sched.c - the scheduling pass and the scheduler module.
 *
 * Cost model (10k pods x 1k nodes per pass must stay cheap):
 *   - bound pods are parsed once per resourceVersion: their requests,
 *     labels and affinity are cached by uid (pod_info);
 *   - nodes likewise (node_info), with a fingerprint of what scheduling
 *     reads (labels, taints, cordon, readiness, allocatable);
 *   - the node-only verdicts (cordon, taints, node affinity) are computed
 *     once per distinct (nodeSelector, node affinity, tolerations) per
 *     pass, so the replicas of one Deployment share them;
 *   - a pending pod that found no node is tried again only when its own
 *     resourceVersion or the cluster fingerprint (nodes + bound pods) has
 *     moved since.
 * Per-node work for one pod is then integer comparisons plus, for pods
 * with spread or inter-pod constraints, array lookups (sched_topo.c).
 */
#include "sched.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/linkhash.h>

#include "ks_hooks.h"
#include "sched_filter.h"
#include "sched_topo.h"
#include "tlr_alloc.h"
#include "tlr_arena.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_json.h"
#include "tlr_time.h"

#define SCHEDULER_NAME "default-scheduler"
#define MSG_MAX 2048

typedef struct pod_info {
    char    *uid;          /* the cache key */
    uint64_t rv;
    uint64_t pass;         /* last pass that saw it */
    ks_res   req;
    int      req_rc;       /* TLR_OK or why req is unknown */
    char    *req_err;      /* owned, when req_rc != TLR_OK */
    json_object *labels;   /* owned reference, may be NULL */
    json_object *affinity; /* owned reference, may be NULL */
    uint64_t labels_hash;
    /* pending pods: the last attempt that found no node */
    uint64_t tried_rv;
    uint64_t tried_fp;
} pod_info;

typedef struct node_cache {
    char    *uid;
    uint64_t rv;
    uint64_t pass;
    json_object *node;     /* owned */
    uint64_t fp;
} node_cache;

struct ks_sched {
    ks_store *s;
    tlr_logger *lg;
    ks_resnames *names;
    struct lh_table *pods;     /* uid -> pod_info */
    struct lh_table *nodes;    /* uid -> node_cache */
    uint64_t pass;
    ks_fitmsg *fit;
};

/* Node-only verdicts for one (nodeSelector, affinity, tolerations). */
typedef struct static_verdict {
    const char **reason;   /* per node: NULL = passes */
    bool *aff_ok;          /* per node: node affinity/selector accepts */
} static_verdict;

/* One pass's view. */
typedef struct pass_ctx {
    ks_sched *sc;
    ks_node_info *ni;
    size_t nn;
    struct lh_table *by_name;    /* node name -> index + 1 */
    ks_topo *topo;
    struct lh_table *verdicts;   /* signature -> static_verdict (arena) */
    tlr_arena *arena;
    json_object *keep;           /* array: pending pods parsed this pass */
    uint64_t fp;
} pass_ctx;

/* ------------------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static void pod_info_free(struct lh_entry *e)
{
    pod_info *pi = (pod_info *)lh_entry_v(e);
    free(pi->uid);
    free(pi->req_err);
    json_object_put(pi->labels);
    json_object_put(pi->affinity);
    free(pi);
}

static void node_cache_free(struct lh_entry *e)
{
    node_cache *nc = (node_cache *)lh_entry_v(e);
    free(nc->uid);
    json_object_put(nc->node);
    free(nc);
}

void ks_sched_create(ks_store *s, tlr_logger *lg, ks_sched **out)
{
    ks_sched *sc = tlr_calloc(1, sizeof(*sc));
    sc->s = s;
    sc->lg = lg;
    ks_resnames_create(&sc->names);
    sc->pods = lh_kchar_table_new(1024, pod_info_free);
    sc->nodes = lh_kchar_table_new(64, node_cache_free);
    ks_fitmsg_create(&sc->fit);
    *out = sc;
}

void ks_sched_free(ks_sched *sc)
{
    if (!sc)
        return;
    lh_table_free(sc->pods);
    lh_table_free(sc->nodes);
    ks_resnames_free(sc->names);
    ks_fitmsg_free(sc->fit);
    free(sc);
}

/* The cached parse of pod o, refreshed when its version moved. */
static pod_info *pod_cached(ks_sched *sc, const ks_obj *o, json_object *parsed)
{
    void *v = NULL;
    pod_info *pi;
    if (lh_table_lookup_ex(sc->pods, ks_obj_uid(o), &v)) {
        pi = v;
        pi->pass = sc->pass;
        if (pi->rv == ks_obj_rv(o))
            return pi;
    } else {
        pi = tlr_calloc(1, sizeof(*pi));
        pi->uid = tlr_strdup(ks_obj_uid(o));
        pi->pass = sc->pass;
        lh_table_insert(sc->pods, pi->uid, pi);
    }
    json_object *j = parsed ? json_object_get(parsed) : ks_obj_parse(o);
    char err[256] = "";
    pi->rv = ks_obj_rv(o);
    free(pi->req_err);
    pi->req_err = NULL;
    pi->req_rc = ks_pod_requests(j, sc->names, &pi->req, err, sizeof(err));
    if (pi->req_rc != TLR_OK) {
        memset(&pi->req, 0, sizeof(pi->req));
        pi->req.pods = 1;
        pi->req_err = tlr_strdup(err);
    }
    json_object_put(pi->labels);
    json_object_put(pi->affinity);
    pi->labels = json_object_get(tlr_json_obj(j, "metadata.labels"));
    pi->affinity = json_object_get(tlr_json_obj(j, "spec.affinity"));
    pi->labels_hash = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT,
                          pi->labels ? tlr_json_to_string(pi->labels, JSON_C_TO_STRING_PLAIN) : "");
    json_object_put(j);
    return pi;
}

static node_cache *node_cached(ks_sched *sc, const ks_obj *o)
{
    void *v = NULL;
    node_cache *nc;
    if (lh_table_lookup_ex(sc->nodes, ks_obj_uid(o), &v)) {
        nc = v;
        nc->pass = sc->pass;
        if (nc->rv == ks_obj_rv(o))
            return nc;
        json_object_put(nc->node);
    } else {
        nc = tlr_calloc(1, sizeof(*nc));
        nc->uid = tlr_strdup(ks_obj_uid(o));
        nc->pass = sc->pass;
        lh_table_insert(sc->nodes, nc->uid, nc);
    }
    nc->rv = ks_obj_rv(o);
    nc->node = ks_obj_parse(o);
    /* only what the filters read: a heartbeat does not retry every pod */
    uint64_t h = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, ks_obj_name(o));
    static const char *const parts[] = { "metadata.labels", "spec.taints", "spec.unschedulable",
                                         "status.allocatable" };
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        h = tlr_fnv1a64_str(h, tlr_json_to_string(tlr_json_get(nc->node, parts[i]), JSON_C_TO_STRING_PLAIN));
    ks_node_info tmp;
    char err[64];
    if (ks_node_info_init(nc->node, sc->names, &tmp, err, sizeof(err)) == TLR_OK && tmp.ready)
        h = tlr_fnv1a64_str(h, "ready");
    nc->fp = h;
    return nc;
}

/* Drop cache entries not seen in this pass (deleted objects). */
static void cache_sweep(struct lh_table *t, uint64_t pass, bool pods)
{
    struct lh_entry *e, *tmp;
    lh_foreach_safe(t, e, tmp) {
        uint64_t p = pods ? ((pod_info *)lh_entry_v(e))->pass
                          : ((node_cache *)lh_entry_v(e))->pass;
        if (p != pass)
            lh_table_delete(t, lh_entry_k(e));
    }
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

void ks_event_emit(ks_store *s, json_object *involved, const char *type,
                   const char *reason, const char *message, const char *component)
{
    const char *ns = tlr_json_str(involved, "metadata.namespace");
    const char *name = tlr_json_str(involved, "metadata.name");
    const char *kind = tlr_json_str(involved, "kind");
    const char *av = tlr_json_str(involved, "apiVersion");
    if (!name)
        return;
    if (!ns || !*ns)
        ns = "default";
    char now[32], ename[320];
    ks_now_rfc3339(now, sizeof(now));
    /* client-go names events NAME.<unix nanoseconds in hex> */
    static const char hex[] = "0123456789abcdef";
    uint64_t t = (uint64_t)tlr_wall_ms() * 1000000u + (uint64_t)(tlr_mono_ms() % 1000000);
    char suffix[17];
    for (int i = 15; i >= 0; i--, t >>= 4)
        suffix[i] = hex[t & 15];
    suffix[16] = 0;
    snprintf(ename, sizeof(ename), "%.250s.%s", name, suffix);
    json_object *ev = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string(ename));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(ev, "metadata", meta);
    json_object *io = json_object_new_object();
    json_object_object_add(io, "kind", json_object_new_string(kind ? kind : "Pod"));
    json_object_object_add(io, "namespace", json_object_new_string(ns));
    json_object_object_add(io, "name", json_object_new_string(name));
    const char *uid = tlr_json_str(involved, "metadata.uid");
    const char *rv = tlr_json_str(involved, "metadata.resourceVersion");
    if (uid)
        json_object_object_add(io, "uid", json_object_new_string(uid));
    json_object_object_add(io, "apiVersion", json_object_new_string(av ? av : "v1"));
    if (rv)
        json_object_object_add(io, "resourceVersion", json_object_new_string(rv));
    json_object_object_add(ev, "involvedObject", io);
    json_object_object_add(ev, "reason", json_object_new_string(reason));
    json_object_object_add(ev, "message", json_object_new_string(message));
    json_object_object_add(ev, "type", json_object_new_string(type));
    json_object *src = json_object_new_object();
    json_object_object_add(src, "component", json_object_new_string(component));
    json_object_object_add(ev, "source", src);
    json_object_object_add(ev, "firstTimestamp", json_object_new_string(now));
    json_object_object_add(ev, "lastTimestamp", json_object_new_string(now));
    json_object_object_add(ev, "count", json_object_new_int(1));
    json_object_object_add(ev, "reportingComponent", json_object_new_string(component));
    json_object_object_add(ev, "reportingInstance", json_object_new_string(component));
    ks_status st;
    if (ks_store_create_obj(s, KS_EVENT, ns, ev, 0, NULL, &st) != TLR_OK)
        TLR_WARN(ks_store_log(s), "event not recorded", TLR_S("reason", reason),
                 TLR_S("object", name), TLR_S("error", st.message));
    json_object_put(ev);
}

/* ------------------------------------------------------------------ */
/* Writes                                                              */
/* ------------------------------------------------------------------ */

/* Remove every condition of type from conds. */
static void conditions_del(json_object *conds, const char *type)
{
    for (size_t i = json_object_array_length(conds); i-- > 0;) {
        const char *t = tlr_json_str(json_object_array_get_idx(conds, i), "type");
        if (t && strcmp(t, type) == 0)
            json_object_array_del_idx(conds, i, 1);
    }
}

static json_object *status_conditions(json_object *pod)
{
    json_object *status = tlr_json_obj(pod, "status");
    if (!status) {
        status = json_object_new_object();
        json_object_object_add(pod, "status", status);
    }
    json_object *conds = tlr_json_arr(status, "conditions");
    if (!conds) {
        conds = json_object_new_array();
        json_object_object_add(status, "conditions", conds);
    }
    return conds;
}

static json_object *condition_new(const char *type, const char *status, const char *reason,
                                  const char *message)
{
    char now[32];
    json_object *c = json_object_new_object();
    json_object_object_add(c, "type", json_object_new_string(type));
    json_object_object_add(c, "status", json_object_new_string(status));
    json_object_object_add(c, "lastProbeTime", NULL);
    json_object_object_add(c, "lastTransitionTime",
                           json_object_new_string(ks_now_rfc3339(now, sizeof(now))));
    if (reason)
        json_object_object_add(c, "reason", json_object_new_string(reason));
    if (message)
        json_object_object_add(c, "message", json_object_new_string(message));
    return c;
}

static int bind_mutate(json_object *pod, void *arg, ks_status *st)
{
    const char *node = arg;
    const char *name = tlr_json_str(pod, "metadata.name");
    const char *cur = tlr_json_str(pod, "spec.nodeName");
    if (!name)
        name = "";
    if (cur && *cur)
        return ks_status_set(st, TLR_E_CONFLICT, 409, "Conflict",
                             "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is "
                             "already assigned to node \"%s\"", name, name, cur);
    if (tlr_json_str(pod, "metadata.deletionTimestamp"))
        return ks_status_set(st, TLR_E_CONFLICT, 409, "Conflict",
                             "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is "
                             "being deleted, cannot be assigned to a host", name, name);
    json_object *spec = tlr_json_obj(pod, "spec");
    if (!spec) {
        spec = json_object_new_object();
        json_object_object_add(pod, "spec", spec);
    }
    json_object_object_add(spec, "nodeName", json_object_new_string(node));
    json_object *conds = status_conditions(pod);
    conditions_del(conds, "PodScheduled");
    json_object_array_add(conds, condition_new("PodScheduled", "True", NULL, NULL));
    return TLR_OK;
}

int ks_sched_bind(ks_store *s, const char *ns, const char *name, const char *node,
                  ks_status *st)
{
    if (!node || !*node)
        return ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                             "Binding \"%s\" is invalid: target.name: Required value", name);
    return ks_store_modify(s, KS_POD, ns, name, KS_W_ALL, bind_mutate, (void *)node, NULL, st);
}

int ks_pods_bind(ks_store *s, const char *ns, const char *name, json_object *binding,
                 ks_status *st)
{
    const char *kind = tlr_json_str(binding, "target.kind");
    if (kind && *kind && strcmp(kind, "Node") != 0)
        return ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                             "Binding \"%s\" is invalid: target.kind: Unsupported value: "
                             "\"%s\": supported values: \"Node\"", name, kind);
    return ks_sched_bind(s, ns, name, tlr_json_str(binding, "target.name"), st);
}

typedef struct unsched_arg {
    const char *message;
    const char *reason;
} unsched_arg;

static int unsched_mutate(json_object *pod, void *arg, ks_status *st)
{
    (void)st;
    const unsched_arg *a = arg;
    const char *node = tlr_json_str(pod, "spec.nodeName");
    if (node && *node)
        return TLR_E_CANCELED;   /* bound meanwhile */
    json_object *conds = status_conditions(pod);
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        const char *r = tlr_json_str(c, "reason"), *m = tlr_json_str(c, "message");
        if (t && strcmp(t, "PodScheduled") == 0 && s && strcmp(s, "False") == 0 && r &&
            strcmp(r, a->reason) == 0 && m && strcmp(m, a->message) == 0)
            return TLR_E_CANCELED;   /* already says so: no churn */
    }
    conditions_del(conds, "PodScheduled");
    json_object_array_add(conds, condition_new("PodScheduled", "False", a->reason, a->message));
    json_object *status = tlr_json_obj(pod, "status");
    if (!tlr_json_str(status, "phase"))
        json_object_object_add(status, "phase", json_object_new_string("Pending"));
    return TLR_OK;
}

/* Mark pod unschedulable; emit the event only when the status changed.
 * Returns the pod's resourceVersion afterwards (0 if unknown). */
static uint64_t mark_unschedulable(ks_sched *sc, const ks_obj *o, json_object *pod,
                                   const char *reason, const char *msg)
{
    unsched_arg a = { msg, reason };
    ks_obj *after = NULL;
    ks_status st;
    int rc = ks_store_modify(sc->s, KS_POD, ks_obj_namespace(o), ks_obj_name(o), KS_W_STATUS,
                             unsched_mutate, &a, &after, &st);
    uint64_t rv = 0;
    if (rc == TLR_OK && after) {
        rv = ks_obj_rv(after);
        if (rv != ks_obj_rv(o) && strcmp(reason, "Unschedulable") == 0)
            ks_event_emit(sc->s, pod, "Warning", "FailedScheduling", msg, SCHEDULER_NAME);
    } else if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
        TLR_WARN(sc->lg, "pod status not written", TLR_S("pod", ks_obj_name(o)),
                 TLR_S("error", st.message));
    }
    ks_obj_unref(after);
    return rv;
}

/* ------------------------------------------------------------------ */
/* The pass                                                            */
/* ------------------------------------------------------------------ */

static size_t node_index(pass_ctx *px, const char *name)
{
    void *v = NULL;
    if (!lh_table_lookup_ex(px->by_name, name, &v))
        return SIZE_MAX;
    return (size_t)(uintptr_t)v - 1;
}

/* Count a pod's requests as used on n.  A node has room for
 * KS_RES_EXT_MAX scalar resources; requests beyond what it offers never
 * fit anyway, so dropping them from `used` changes no verdict. */
static void node_account(ks_node_info *n, const ks_res *r)
{
    ks_res *u = &n->used;
    u->cpu_m += r->cpu_m;
    u->mem += r->mem;
    u->eph += r->eph;
    for (int i = 0; i < r->n; i++) {
        int slot = -1;
        for (int j = 0; j < u->n; j++)
            if (u->ext_id[j] == r->ext_id[i])
                slot = j;
        if (slot < 0 && u->n < KS_RES_EXT_MAX) {
            slot = u->n++;
            u->ext_id[slot] = r->ext_id[i];
            u->ext_v[slot] = 0;
        }
        if (slot >= 0)
            u->ext_v[slot] += r->ext_v[i];
    }
    n->npods++;
}

static const static_verdict *verdict_for(pass_ctx *px, json_object *pod)
{
    json_object *spec = tlr_json_obj(pod, "spec");
    tlr_buf key;
    tlr_buf_init(&key, 8u << 20);
    tlr_buf_adds(&key, tlr_json_to_string(tlr_json_get(spec, "nodeSelector"), 0));
    tlr_buf_addc(&key, '|');
    tlr_buf_adds(&key, tlr_json_to_string(tlr_json_get(spec, "affinity.nodeAffinity."
                 "requiredDuringSchedulingIgnoredDuringExecution"), 0));
    tlr_buf_addc(&key, '|');
    tlr_buf_adds(&key, tlr_json_to_string(tlr_json_get(spec, "tolerations"), 0));
    void *v = NULL;
    if (lh_table_lookup_ex(px->verdicts, tlr_buf_str(&key), &v)) {
        tlr_buf_free(&key);
        return v;
    }
    static_verdict *sv = tlr_arena_calloc(px->arena, 1, sizeof(*sv));
    size_t n = px->nn ? px->nn : 1;
    sv->reason = tlr_arena_calloc(px->arena, n, sizeof(char *));
    sv->aff_ok = tlr_arena_calloc(px->arena, n, sizeof(bool));
    char buf[600];
    for (size_t i = 0; i < px->nn; i++) {
        const char *r = ks_filter_node(pod, &px->ni[i], buf, sizeof(buf));
        sv->reason[i] = r == buf ? tlr_arena_strdup(px->arena, buf) : r;
        sv->aff_ok[i] = ks_node_affinity_matches(spec, &px->ni[i]);
    }
    lh_table_insert(px->verdicts, tlr_arena_strdup(px->arena, tlr_buf_str(&key)), sv);
    tlr_buf_free(&key);
    return sv;
}

/* Filter and score pod on every node: the index of the chosen node, or
 * SIZE_MAX with msg filled. */
static size_t place(pass_ctx *px, json_object *pod, const pod_info *pi, char *msg, size_t len)
{
    ks_sched *sc = px->sc;
    if (pi->req_rc != TLR_OK) {
        snprintf(msg, len, "invalid resource requests: %s", pi->req_err);
        return SIZE_MAX;
    }
    const static_verdict *sv = verdict_for(px, pod);
    ks_topo_pod *tp = NULL;
    char err[256];
    if (ks_topo_pod_prepare(px->topo, pod, sv->aff_ok, &tp, err, sizeof(err)) != TLR_OK) {
        snprintf(msg, len, "invalid scheduling constraints: %s", err);
        return SIZE_MAX;
    }
    bool topo = ks_topo_pod_constrained(tp);
    ks_fitmsg_reset(sc->fit);
    size_t best = SIZE_MAX;
    int best_score = -1;
    for (size_t i = 0; i < px->nn; i++) {
        if (sv->reason[i]) {
            ks_fitmsg_add(sc->fit, sv->reason[i]);
            continue;
        }
        const char *reasons[8];
        char scratch[512];
        int k = ks_filter_fit(&pi->req, &px->ni[i], sc->names, reasons, 8, scratch,
                              sizeof(scratch));
        if (k > 0) {
            for (int j = 0; j < k && j < 8; j++)
                ks_fitmsg_add(sc->fit, reasons[j]);
            continue;
        }
        const char *r = topo ? ks_topo_pod_filter(tp, i) : NULL;
        if (r) {
            ks_fitmsg_add(sc->fit, r);
            continue;
        }
        int score = ks_score_node(&pi->req, &px->ni[i]);
        if (score > best_score) {
            best = i;
            best_score = score;
        }
    }
    ks_topo_pod_free(tp);
    if (best == SIZE_MAX)
        ks_fitmsg_format(sc->fit, px->nn, msg, len);
    return best;
}

typedef struct pending {
    ks_obj *obj;          /* borrowed from the pod list */
    json_object *pod;     /* owned by px->keep */
    int64_t priority;
    const char *created;
} pending;

static int cmp_pending(const void *a, const void *b)
{
    const pending *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    int c = strcmp(x->created ? x->created : "", y->created ? y->created : "");
    if (c)
        return c;
    c = strcmp(ks_obj_namespace(x->obj), ks_obj_namespace(y->obj));
    return c ? c : strcmp(ks_obj_name(x->obj), ks_obj_name(y->obj));
}

/* Whether this scheduler should place the pod now. */
static bool ours(ks_sched *sc, const ks_obj *o, json_object *pod)
{
    const char *sn = tlr_json_str(pod, "spec.schedulerName");
    if (sn && *sn && strcmp(sn, SCHEDULER_NAME) != 0)
        return false;
    json_object *gates = tlr_json_arr(pod, "spec.schedulingGates");
    if (gates && json_object_array_length(gates) > 0) {
        mark_unschedulable(sc, o, pod, "SchedulingGated",
                           "Scheduling is blocked due to non-empty scheduling gates");
        return false;
    }
    return true;
}

static void schedule_one(pass_ctx *px, pending *p, ks_sched_stats *stats)
{
    ks_sched *sc = px->sc;
    pod_info *pi = pod_cached(sc, p->obj, p->pod);
    char msg[MSG_MAX];
    stats->attempted++;
    size_t best = place(px, p->pod, pi, msg, sizeof(msg));
    if (best == SIZE_MAX) {
        stats->unschedulable++;
        uint64_t rv = mark_unschedulable(sc, p->obj, p->pod, "Unschedulable", msg);
        pi->tried_rv = rv ? rv : ks_obj_rv(p->obj);
        pi->tried_fp = px->fp;
        return;
    }
    ks_node_info *n = &px->ni[best];
    ks_status st;
    int rc = ks_sched_bind(sc->s, ks_obj_namespace(p->obj), ks_obj_name(p->obj), n->name, &st);
    if (rc != TLR_OK) {
        if (rc != TLR_E_NOTFOUND && rc != TLR_E_CONFLICT)
            TLR_WARN(sc->lg, "bind failed", TLR_S("pod", ks_obj_name(p->obj)),
                     TLR_S("node", n->name), TLR_S("error", st.message));
        return;
    }
    stats->bound++;
    /* the node's free resources and the spread counts now include it */
    node_account(n, &pi->req);
    ks_topo_add_pod(px->topo, best, ks_obj_namespace(p->obj), pi->labels, false, pi->affinity);
    snprintf(msg, sizeof(msg), "Successfully assigned %s/%s to %s", ks_obj_namespace(p->obj),
             ks_obj_name(p->obj), n->name);
    ks_event_emit(sc->s, p->pod, "Normal", "Scheduled", msg, SCHEDULER_NAME);
}

int ks_sched_pass(ks_sched *sc, ks_sched_stats *stats_out)
{
    ks_sched_stats stats = { 0 };
    ks_objlist nodes = { 0 }, pods = { 0 };
    ks_status st;
    pass_ctx px = { .sc = sc };
    pending *pend = NULL;
    size_t npend = 0, cappend = 0;
    int rc;
    sc->pass++;
    if ((rc = ks_store_list(sc->s, KS_NODE, NULL, &nodes, &st)) != TLR_OK ||
        (rc = ks_store_list(sc->s, KS_POD, NULL, &pods, &st)) != TLR_OK)
        goto out;
    px.ni = tlr_calloc(nodes.n ? nodes.n : 1, sizeof(ks_node_info));
    px.by_name = lh_kchar_table_new(nodes.n ? (int)nodes.n * 2 : 16, NULL);
    px.verdicts = lh_kchar_table_new(64, NULL);
    px.keep = json_object_new_array();
    tlr_arena_create(0, &px.arena);
    uint64_t fp = 0;
    for (size_t i = 0; i < nodes.n; i++) {
        node_cache *nc = node_cached(sc, nodes.items[i]);
        char err[256];
        if (ks_node_info_init(nc->node, sc->names, &px.ni[px.nn], err, sizeof(err)) != TLR_OK) {
            TLR_WARN(sc->lg, "node ignored", TLR_S("node", ks_obj_name(nodes.items[i])),
                     TLR_S("reason", err));
            continue;
        }
        lh_table_insert(px.by_name, px.ni[px.nn].name, (void *)(uintptr_t)(px.nn + 1));
        fp += mix(nc->fp);
        px.nn++;
    }
    stats.nodes = px.nn;
    ks_topo_create(px.ni, px.nn, &px.topo);
    for (size_t i = 0; i < pods.n; i++) {
        ks_obj *o = pods.items[i];
        const char *phase = ks_obj_phase(o), *node = ks_obj_node_name(o);
        if (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)
            continue;
        if (*node) {
            size_t idx = node_index(&px, node);
            if (idx == SIZE_MAX)
                continue;   /* its node is gone: the pod GC removes it */
            pod_info *pi = pod_cached(sc, o, NULL);
            ks_node_info *n = &px.ni[idx];
            node_account(n, &pi->req);
            ks_topo_add_pod(px.topo, idx, ks_obj_namespace(o), pi->labels, ks_obj_deleting(o),
                            pi->affinity);
            fp += mix(tlr_fnv1a64_str(tlr_fnv1a64_str(pi->labels_hash, ks_obj_uid(o)), node) +
                      (ks_obj_deleting(o) ? 1 : 0));
        } else if (!ks_obj_deleting(o)) {
            stats.pending++;
            TLR_GROW(pend, cappend, npend + 1);
            pend[npend++] = (pending){ .obj = o };
        }
    }
    px.fp = fp;
    /* parse the pending pods that need an attempt, then go in queue order */
    size_t nwork = 0;
    for (size_t i = 0; i < npend; i++) {
        void *v = NULL;
        if (lh_table_lookup_ex(sc->pods, ks_obj_uid(pend[i].obj), &v)) {
            pod_info *pi = v;
            pi->pass = sc->pass;
            if (pi->tried_rv == ks_obj_rv(pend[i].obj) && pi->tried_fp == fp)
                continue;
        }
        json_object *pod = ks_obj_parse(pend[i].obj);
        json_object_array_add(px.keep, pod);
        if (!ours(sc, pend[i].obj, pod))
            continue;
        pend[nwork] = pend[i];
        pend[nwork].pod = pod;
        (void)tlr_json_int(pod, "spec.priority", &pend[nwork].priority);
        pend[nwork].created = tlr_json_str(pod, "metadata.creationTimestamp");
        nwork++;
    }
    if (nwork > 1)
        qsort(pend, nwork, sizeof(*pend), cmp_pending);
    for (size_t i = 0; i < nwork; i++)
        schedule_one(&px, &pend[i], &stats);
    cache_sweep(sc->pods, sc->pass, true);
    cache_sweep(sc->nodes, sc->pass, false);
    if (stats.bound || stats.unschedulable)
        TLR_DEBUG(sc->lg, "scheduling pass", TLR_I("nodes", stats.nodes),
                  TLR_I("pending", stats.pending), TLR_I("bound", stats.bound),
                  TLR_I("unschedulable", stats.unschedulable));
out:
    ks_topo_free(px.topo);
    if (px.by_name)
        lh_table_free(px.by_name);
    if (px.verdicts)
        lh_table_free(px.verdicts);
    tlr_arena_free(px.arena);
    json_object_put(px.keep);
    free(px.ni);
    free(pend);
    ks_objlist_free(&nodes);
    ks_objlist_free(&pods);
    if (rc == TLR_OK && stats_out)
        *stats_out = stats;
    return rc;
}
