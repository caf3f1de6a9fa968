/* podmetrics.c - Karpenter's per-pod metrics (see podmetrics.h).
 *
 * The watcher's cache keeps a bound pod packed and drops what the solver
 * does not need, so this file keeps its own small record per pod, read
 * from the informer's JSON: name, namespace, owner, node, phase, creation
 * time, the Ready and PodScheduled conditions, and the two flags
 * Karpenter's controller keeps in sets (pendingPods, unscheduledPods):
 * "seen Pending, start not observed yet" and "seen Pending, binding not
 * observed yet".  An event applies Karpenter's transitions at once:
 *
 *   - phase Pending: both flags set.
 *   - seen Pending and now Ready: observe startup, Ready's
 *     lastTransitionTime minus creation; a terminal pod only clears the
 *     flag (its Ready is False: no observation, as Karpenter).
 *   - seen Pending and PodScheduled True: observe bound duration,
 *     PodScheduled's lastTransitionTime minus creation.
 *
 * The pod provisioning metrics count from two points in memory, as
 * Karpenter's do: the ack (the first time the watcher saw the pod Pending,
 * unbound, with PodScheduled False/Unschedulable: the pods Karpenter's
 * provisioner takes in) and the launcher's decisions (the "decisions"
 * topic, watcher_podmetrics_decided): the first decision observes
 * pods_scheduling_decision_duration_seconds (decision - ack); a scheduled
 * decision sets the schedulable time unless one is set, a failed one clears
 * it (Karpenter's MarkPodSchedulingDecisions).  Binding and start then
 * observe provisioning_bound_duration / provisioning_startup_duration from
 * the schedulable time, and a pass sets provisioning_unbound_time,
 * provisioning_unstarted_time (from the schedulable time) and
 * provisioning_scheduling_undecided_time (from the ack, while undecided).
 * The two clocks are the watcher's and the launcher's wall clocks.
 *
 * A pass then sets, between a mark and a sweep, pods_state for every pod,
 * unbound_time for pods Pending and not scheduled, and unstarted_time for
 * pods Pending or seen Pending and neither Ready nor terminal.  One
 * difference from Karpenter, on purpose: Karpenter stops updating a pod's
 * unbound_time when it binds but deletes the series only once the pod
 * leaves Pending, so a bound pod still pulling images shows a frozen
 * value; here the series goes when the pod is bound, and the bound
 * duration is observed then (the same value: both read PodScheduled's
 * lastTransitionTime).
 */
#include "podmetrics.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/node.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_hash.h"
#include "tlr_json.h"
#include "tlr_labels.h"
#include "tlr_time.h"

typedef struct pod_rec {
    struct pod_rec *next;          /* hash chain */
    char *key;                     /* "namespace/name", owned */
    char *ns, *name, *owner, *node;    /* owned */
    char *uid;                     /* owned; decisions for another uid are ignored */
    char phase[16];                /* status.phase as Kubernetes spells it */
    int64_t created_ms;
    bool ready, scheduled;         /* conditions Ready / PodScheduled True */
    bool unstarted, unbound;       /* seen Pending; start / binding not observed yet */
    int64_t ack_ms;                /* first seen provisionable; 0 = never */
    int64_t decided_ms;            /* the launcher's first decision; 0 = none */
    int64_t schedulable_ms;        /* first scheduled decision since the last failed one */
    uint64_t gen;                  /* relist generation it was last seen in */
} pod_rec;

struct watcher_podmetrics {
    tlr_metric_family *state, *unbound, *unstarted, *bound_dur, *startup;
    tlr_metric_family *decision_dur, *prov_bound_dur, *prov_startup_dur;
    tlr_metric_family *prov_unbound, *prov_unstarted, *undecided;
    pod_rec **buckets;             /* nbuckets, a power of two */
    size_t nbuckets, n;
    uint64_t gen;                  /* bumped at each RELIST_START */
};

static const char *const state_labels[] = {
    "name", "namespace", "owner", "node", "scheduled", "nodepool", "zone",
    "arch", "capacity_type", "instance_type", "phase", "ready", "managed",
};
#define NSTATE ((int)(sizeof(state_labels) / sizeof(state_labels[0])))

/* Karpenter's DurationBuckets (pkg/metrics/constants.go). */
static const double duration_buckets[] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120,
    150, 300, 450, 600,
};

void watcher_podmetrics_create(tlr_metrics *m, watcher_podmetrics **out)
{
    watcher_podmetrics *pm = tlr_calloc(1, sizeof(*pm));
    static const char *const nn[] = { "name", "namespace" };
    pm->state = tlr_metrics_gauge(m, "karpenter_pods_state",
                                  "Pod state is the current state of pods. This metric can be used several ways "
                                  "as it is labeled by the pod name, namespace, owner, node, nodepool name, zone, "
                                  "architecture, capacity type, instance type, pod phase, and pod readiness.",
                                  NSTATE, state_labels);
    pm->unbound = tlr_metrics_gauge(m, "karpenter_pods_unbound_time_seconds",
                                    "The time from pod creation until the pod is bound.", 2, nn);
    pm->unstarted = tlr_metrics_gauge(m, "karpenter_pods_unstarted_time_seconds",
                                      "The time from pod creation until the pod is running.", 2, nn);
    pm->bound_dur = tlr_metrics_histogram(m, "karpenter_pods_bound_duration_seconds",
                                          "The time from pod creation until the pod is bound.", 0, NULL,
                                          duration_buckets,
                                          (int)(sizeof(duration_buckets) / sizeof(duration_buckets[0])));
    pm->startup = tlr_metrics_summary(m, "karpenter_pods_startup_duration_seconds",
                                      "The time from pod creation until the pod is running.", 0, NULL);
    const int nb = (int)(sizeof(duration_buckets) / sizeof(duration_buckets[0]));
    pm->decision_dur = tlr_metrics_histogram(
        m, "karpenter_pods_scheduling_decision_duration_seconds",
        "The time it takes for Karpenter to first try to schedule a pod after it's been seen.", 0, NULL,
        duration_buckets, nb);
    pm->prov_bound_dur = tlr_metrics_histogram(
        m, "karpenter_pods_provisioning_bound_duration_seconds",
        "The time from when Karpenter first thinks the pod can schedule until it binds. Note: this "
        "calculated from a point in memory, not by the pod creation timestamp.",
        0, NULL, duration_buckets, nb);
    pm->prov_startup_dur = tlr_metrics_histogram(
        m, "karpenter_pods_provisioning_startup_duration_seconds",
        "The time from when Karpenter first thinks the pod can schedule until the pod is running. "
        "Note: this calculated from a point in memory, not by the pod creation timestamp.",
        0, NULL, duration_buckets, nb);
    pm->prov_unbound = tlr_metrics_gauge(
        m, "karpenter_pods_provisioning_unbound_time_seconds",
        "The time from when Karpenter first thinks the pod can schedule until it binds. Note: this "
        "calculated from a point in memory, not by the pod creation timestamp.",
        2, nn);
    pm->prov_unstarted = tlr_metrics_gauge(
        m, "karpenter_pods_provisioning_unstarted_time_seconds",
        "The time from when Karpenter first thinks the pod can schedule until the pod is running. "
        "Note: this calculated from a point in memory, not by the pod creation timestamp.",
        2, nn);
    pm->undecided = tlr_metrics_gauge(
        m, "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
        "The time from when Karpenter has seen a pod without making a scheduling decision for the "
        "pod. Note: this calculated from a point in memory, not by the pod creation timestamp.",
        2, nn);
    tlr_metric_family *per_pod[] = { pm->state,        pm->unbound,        pm->unstarted,
                                     pm->prov_unbound, pm->prov_unstarted, pm->undecided };
    for (size_t i = 0; i < sizeof(per_pod) / sizeof(per_pod[0]); i++)
        tlr_metrics_family_set_max_series(per_pod[i], WATCHER_PODMETRICS_MAX_PODS);
    pm->nbuckets = 1024;
    pm->buckets = tlr_calloc(pm->nbuckets, sizeof(pm->buckets[0]));
    *out = pm;
}

static void rec_free(pod_rec *r)
{
    free(r->key);
    free(r->ns);
    free(r->name);
    free(r->owner);
    free(r->node);
    free(r->uid);
    free(r);
}

void watcher_podmetrics_free(watcher_podmetrics *pm)
{
    if (!pm)
        return;
    for (size_t i = 0; i < pm->nbuckets; i++)
        for (pod_rec *r = pm->buckets[i], *nx; r; r = nx) {
            nx = r->next;
            rec_free(r);
        }
    free(pm->buckets);
    free(pm);
}

size_t watcher_podmetrics_count(const watcher_podmetrics *pm)
{
    return pm->n;
}

/* ---- the record table: a chained hash on "namespace/name" ---- */

static size_t hash_key(const char *s)
{
    return (size_t)tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, s);
}

static pod_rec **slot_of(watcher_podmetrics *pm, const char *key)
{
    pod_rec **p = &pm->buckets[hash_key(key) & (pm->nbuckets - 1)];
    while (*p && strcmp((*p)->key, key))
        p = &(*p)->next;
    return p;
}

static void grow(watcher_podmetrics *pm)
{
    size_t nb = pm->nbuckets * 2;
    pod_rec **b = tlr_calloc(nb, sizeof(b[0]));
    for (size_t i = 0; i < pm->nbuckets; i++)
        for (pod_rec *r = pm->buckets[i], *nx; r; r = nx) {
            nx = r->next;
            size_t j = hash_key(r->key) & (nb - 1);
            r->next = b[j];
            b[j] = r;
        }
    free(pm->buckets);
    pm->buckets = b;
    pm->nbuckets = nb;
}

static void remove_key(watcher_podmetrics *pm, const char *key)
{
    pod_rec **p = slot_of(pm, key);
    if (!*p)
        return;
    pod_rec *r = *p;
    *p = r->next;
    rec_free(r);
    pm->n--;
}

/* Drop the pods a relist did not see again (deleted while nobody watched). */
static void drop_unseen(watcher_podmetrics *pm)
{
    for (size_t i = 0; i < pm->nbuckets; i++)
        for (pod_rec **p = &pm->buckets[i]; *p;) {
            if ((*p)->gen != pm->gen) {
                pod_rec *r = *p;
                *p = r->next;
                rec_free(r);
                pm->n--;
            } else
                p = &(*p)->next;
        }
}

/* ---- one event ---- */

/* Condition type's status is "True"; *ltt_ms its lastTransitionTime (or
 * now_ms when it has none that parses). */
static bool condition_true(json_object *pod, const char *type, int64_t now_ms, int64_t *ltt_ms)
{
    json_object *conds = tlr_json_arr(pod, "status.conditions");
    size_t n = conds ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *st = tlr_json_str(c, "status");
        if (!t || strcmp(t, type))
            continue;
        if (!st || strcmp(st, "True"))
            return false;
        const char *ltt = tlr_json_str(c, "lastTransitionTime");
        if (!ltt || tlr_time_parse(ltt, ltt_ms) != 0)
            *ltt_ms = now_ms;
        return true;
    }
    return false;
}

/* PodScheduled is False with reason Unschedulable: the scheduler tried
 * and found no Node (what makes a pod provisionable). */
static bool unschedulable(json_object *pod)
{
    json_object *conds = tlr_json_arr(pod, "status.conditions");
    size_t n = conds ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *st = tlr_json_str(c, "status"),
                   *why = tlr_json_str(c, "reason");
        if (t && !strcmp(t, "PodScheduled"))
            return st && !strcmp(st, "False") && why && !strcmp(why, "Unschedulable");
    }
    return false;
}

static double seconds(int64_t ms)
{
    return ms > 0 ? (double)ms / 1000.0 : 0.0;
}

/* Karpenter's owner label: a self link made from the first owner
 * reference, "/apis/<apiVersion>/namespaces/<ns>/<kind lower case>s/<name>". */
static char *owner_link(json_object *pod, const char *ns)
{
    json_object *owners = tlr_json_arr(pod, "metadata.ownerReferences");
    if (!owners || json_object_array_length(owners) == 0)
        return tlr_strdup("");
    json_object *o = json_object_array_get_idx(owners, 0);
    const char *av = tlr_json_str(o, "apiVersion"), *kind = tlr_json_str(o, "kind"),
               *name = tlr_json_str(o, "name");
    char lower[128];
    size_t i = 0;
    for (; kind && kind[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (kind[i] >= 'A' && kind[i] <= 'Z') ? (char)(kind[i] - 'A' + 'a') : kind[i];
    lower[i] = '\0';
    size_t len = strlen(av ? av : "") + strlen(ns) + strlen(lower) + strlen(name ? name : "") + 32;
    char *s = tlr_malloc(len);
    snprintf(s, len, "/apis/%s/namespaces/%s/%ss/%s", av ? av : "", ns, lower, name ? name : "");
    return s;
}

static void set_str(char **dst, const char *v)
{
    if (*dst && !strcmp(*dst, v))
        return;
    free(*dst);
    *dst = tlr_strdup(v);
}

void watcher_podmetrics_apply(watcher_podmetrics *pm, tlr_kube_event_type type, json_object *obj,
                              int64_t now_ms)
{
    if (type == TLR_KUBE_RELIST_START) {
        pm->gen++;
        return;
    }
    if (type == TLR_KUBE_RELIST_DONE) {
        drop_unseen(pm);
        return;
    }
    if (!obj || (type != TLR_KUBE_ADDED && type != TLR_KUBE_MODIFIED && type != TLR_KUBE_DELETED))
        return;
    const char *name = tlr_json_str(obj, "metadata.name");
    const char *ns = tlr_json_str(obj, "metadata.namespace");
    if (!name || !*name)
        return;
    if (!ns)
        ns = "";
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (type == TLR_KUBE_DELETED) {
        remove_key(pm, key);
        return;
    }

    pod_rec **slot = slot_of(pm, key);
    pod_rec *r = *slot;
    if (!r) {
        r = tlr_calloc(1, sizeof(*r));
        r->key = tlr_strdup(key);
        r->ns = tlr_strdup(ns);
        r->name = tlr_strdup(name);
        r->next = NULL;
        *slot = r;
        if (++pm->n > pm->nbuckets)
            grow(pm);
    }
    r->gen = pm->gen;
    const char *uid = tlr_json_str(obj, "metadata.uid");
    set_str(&r->uid, uid ? uid : "");
    free(r->owner);
    r->owner = owner_link(obj, ns);
    const char *node = tlr_json_str(obj, "spec.nodeName");
    set_str(&r->node, node ? node : "");
    const char *phase = tlr_json_str(obj, "status.phase");
    snprintf(r->phase, sizeof(r->phase), "%s", phase ? phase : "");
    const char *created = tlr_json_str(obj, "metadata.creationTimestamp");
    if (!created || tlr_time_parse(created, &r->created_ms) != 0)
        r->created_ms = now_ms;
    int64_t ready_ms = 0, sched_ms = 0;
    r->ready = condition_true(obj, "Ready", now_ms, &ready_ms);
    r->scheduled = condition_true(obj, "PodScheduled", now_ms, &sched_ms);

    bool pending = !strcmp(r->phase, "Pending");
    bool terminal = !strcmp(r->phase, "Succeeded") || !strcmp(r->phase, "Failed");
    if (pending && !r->ack_ms && !r->node[0] && unschedulable(obj))
        r->ack_ms = now_ms;
    if (pending) {
        r->unstarted = true;
        r->unbound = true;
    } else if (r->unstarted && (r->ready || terminal)) {
        if (r->ready) {
            tlr_metrics_summary_observe(pm->startup, NULL, (double)(ready_ms - r->created_ms) / 1000.0);
            if (r->schedulable_ms)
                tlr_metrics_histogram_observe(pm->prov_startup_dur, NULL,
                                              seconds(ready_ms - r->schedulable_ms));
        }
        r->unstarted = false;
    }
    if (r->unbound && r->scheduled) {
        tlr_metrics_histogram_observe(pm->bound_dur, NULL, (double)(sched_ms - r->created_ms) / 1000.0);
        if (r->schedulable_ms)
            tlr_metrics_histogram_observe(pm->prov_bound_dur, NULL,
                                          seconds(sched_ms - r->schedulable_ms));
        r->unbound = false;
    }
}

void watcher_podmetrics_decided(watcher_podmetrics *pm, const char *ns, const char *name,
                                const char *uid, bool scheduled, int64_t at_ms)
{
    if (!ns || !name || !uid)
        return;
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    pod_rec *r = *slot_of(pm, key);
    /* Unknown (deleted since), another pod of the same name, or bound
     * already (a late decision must not restart its clocks). */
    if (!r || strcmp(r->uid ? r->uid : "", uid) || r->scheduled || r->node[0])
        return;
    if (!r->decided_ms) {
        r->decided_ms = at_ms > 0 ? at_ms : 1;
        if (r->ack_ms)
            tlr_metrics_histogram_observe(pm->decision_dur, NULL, seconds(r->decided_ms - r->ack_ms));
    }
    if (!scheduled)
        r->schedulable_ms = 0;
    else if (!r->schedulable_ms)
        r->schedulable_ms = at_ms > 0 ? at_ms : 1;
}

/* ---- one pass ---- */

typedef struct node_list {
    const Tailor__V1__Node **v;
    size_t n, cap;
} node_list;

static void visit_node(void *arg, const watcher_cache_item *it)
{
    node_list *l = arg;
    if (!it->msg)
        return;
    TLR_GROW(l->v, l->cap, l->n + 1);
    l->v[l->n++] = (const Tailor__V1__Node *)it->msg;
}

static int node_cmp(const void *a, const void *b)
{
    return strcmp((*(const Tailor__V1__Node *const *)a)->name, (*(const Tailor__V1__Node *const *)b)->name);
}

static const Tailor__V1__Node *node_named(const node_list *l, const char *name)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->v[mid]->name, name);
        if (!c)
            return l->v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static const char *node_label(const Tailor__V1__Node *n, const char *key)
{
    for (size_t i = 0; n && i < n->n_labels; i++)
        if (!strcmp(n->labels[i]->key, key))
            return n->labels[i]->value;
    return "";
}

/* By name, then namespace: the order of the families' first two labels,
 * so a pass over a new registry appends each series at the end. */
static int rec_cmp(const void *a, const void *b)
{
    const pod_rec *x = *(const pod_rec *const *)a, *y = *(const pod_rec *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->ns, y->ns);
}

void watcher_podmetrics_update(watcher_podmetrics *pm, const watcher_cache *c, int64_t now_ms)
{
    node_list nodes = { 0 };
    watcher_cache_visit(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE, visit_node, &nodes);
    if (nodes.n)
        qsort(nodes.v, nodes.n, sizeof(nodes.v[0]), node_cmp);
    pod_rec **all = tlr_malloc((pm->n ? pm->n : 1) * sizeof(all[0]));
    size_t n = 0;
    for (size_t i = 0; i < pm->nbuckets; i++)
        for (pod_rec *r = pm->buckets[i]; r; r = r->next)
            all[n++] = r;
    qsort(all, n, sizeof(all[0]), rec_cmp);

    tlr_metric_family *per_pod[] = { pm->state,        pm->unbound,        pm->unstarted,
                                     pm->prov_unbound, pm->prov_unstarted, pm->undecided };
    const size_t nper = sizeof(per_pod) / sizeof(per_pod[0]);
    for (size_t i = 0; i < nper; i++)
        tlr_metrics_family_mark_stale(per_pod[i]);
    for (size_t i = 0; i < n; i++) {
        const pod_rec *r = all[i];
        const Tailor__V1__Node *nd = r->node[0] ? node_named(&nodes, r->node) : NULL;
        const char *pool = node_label(nd, TLR_LABEL_NODEPOOL);
        const char *vals[NSTATE] = {
            r->name, r->ns, r->owner, r->node, r->node[0] ? "true" : "false", pool,
            node_label(nd, TLR_LABEL_ZONE), node_label(nd, TLR_LABEL_ARCH),
            node_label(nd, TLR_LABEL_CAPACITY_TYPE), node_label(nd, TLR_LABEL_INSTANCE_TYPE),
            r->phase, r->ready ? "true" : "false", pool[0] ? "true" : "false",
        };
        tlr_metrics_gauge_set(pm->state, vals, 1);
        bool pending = !strcmp(r->phase, "Pending");
        bool terminal = !strcmp(r->phase, "Succeeded") || !strcmp(r->phase, "Failed");
        double age = (double)(now_ms - r->created_ms) / 1000.0;
        double since = seconds(now_ms - r->schedulable_ms);
        if (pending && !r->scheduled) {
            tlr_metrics_gauge_set(pm->unbound, vals, age);
            if (r->schedulable_ms)
                tlr_metrics_gauge_set(pm->prov_unbound, vals, since);
        }
        if (pending || (r->unstarted && !r->ready && !terminal)) {
            tlr_metrics_gauge_set(pm->unstarted, vals, age);
            if (r->schedulable_ms)
                tlr_metrics_gauge_set(pm->prov_unstarted, vals, since);
        }
        if (r->ack_ms && !r->decided_ms && !r->scheduled && !r->node[0] && !terminal)
            tlr_metrics_gauge_set(pm->undecided, vals, seconds(now_ms - r->ack_ms));
    }
    for (size_t i = 0; i < nper; i++)
        tlr_metrics_family_sweep_stale(per_pod[i]);
    free(all);
    free(nodes.v);
}
