/* gauges.c - Karpenter's cluster-state gauges (see gauges.h).
 *
 * One update is one pass over the cache: the Nodes, sorted by name; every
 * bound, non-terminal pod unpacked once into a scratch arena and its
 * requests added to its Node (and to the Node's DaemonSet sum when a
 * DaemonSet owns it), as the snapshot does; then every family's series
 * set between a mark and a sweep (tlr_metrics_family_mark_stale), so a
 * Node or NodePool that went away takes its series with it and a scrape
 * never sees a half-written family.
 *
 * Label names are Karpenter's: the name part of every well-known label
 * (Karpenter's own and the AWS provider's, v1.14) in snake case, then
 * node_name, node_phase, managed and resource_type.  A label the Node does
 * not carry is "", as in Karpenter.  node_phase is always "": kubelets no
 * longer set Node.status.phase, and the cache does not keep it.  Values:
 * cpu in cores, everything else in its unit (bytes, count).
 */
#include "gauges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/node.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"
#include "tailor/v1/pod.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_arena.h"
#include "tlr_labels.h"

static const struct {
    const char *key, *name;
} well_known[] = {
    { TLR_LABEL_NODEPOOL, "nodepool" },
    { TLR_LABEL_ZONE, "zone" },
    { TLR_LABEL_REGION, "region" },
    { TLR_LABEL_INSTANCE_TYPE, "instance_type" },
    { TLR_LABEL_ARCH, "arch" },
    { TLR_LABEL_OS, "os" },
    { TLR_LABEL_CAPACITY_TYPE, "capacity_type" },
    { TLR_LABEL_WINDOWS_BUILD, "windows_build" },
    { TLR_LABEL_CAPACITY_RESERVATION_ID, "capacity_reservation_id" },
    { TLR_LABEL_CAPACITY_RESERVATION_TYPE, "capacity_reservation_type" },
    { TLR_LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE, "capacity_reservation_interruptible" },
    { TLR_LABEL_INSTANCE_HYPERVISOR, "instance_hypervisor" },
    { TLR_LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED,
      "instance_encryption_in_transit_supported" },
    { TLR_LABEL_INSTANCE_CATEGORY, "instance_category" },
    { TLR_LABEL_INSTANCE_CAPABILITY_FLEX, "instance_capability_flex" },
    { TLR_LABEL_INSTANCE_FAMILY, "instance_family" },
    { TLR_LABEL_INSTANCE_GENERATION, "instance_generation" },
    { TLR_LABEL_INSTANCE_SIZE, "instance_size" },
    { TLR_LABEL_INSTANCE_LOCAL_NVME, "instance_local_nvme" },
    { TLR_LABEL_INSTANCE_CPU, "instance_cpu" },
    { TLR_LABEL_INSTANCE_CPU_MANUFACTURER, "instance_cpu_manufacturer" },
    { TLR_LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
      "instance_cpu_sustained_clock_speed_mhz" },
    { TLR_LABEL_INSTANCE_MEMORY, "instance_memory" },
    { TLR_LABEL_INSTANCE_EBS_BANDWIDTH, "instance_ebs_bandwidth" },
    { TLR_LABEL_INSTANCE_NETWORK_BANDWIDTH, "instance_network_bandwidth" },
    { TLR_LABEL_INSTANCE_GPU_NAME, "instance_gpu_name" },
    { TLR_LABEL_INSTANCE_GPU_MANUFACTURER, "instance_gpu_manufacturer" },
    { TLR_LABEL_INSTANCE_GPU_COUNT, "instance_gpu_count" },
    { TLR_LABEL_INSTANCE_GPU_MEMORY, "instance_gpu_memory" },
    { TLR_LABEL_INSTANCE_ACCELERATOR_NAME, "instance_accelerator_name" },
    { TLR_LABEL_INSTANCE_ACCELERATOR_MANUFACTURER, "instance_accelerator_manufacturer" },
    { TLR_LABEL_INSTANCE_ACCELERATOR_COUNT, "instance_accelerator_count" },
    { TLR_LABEL_ZONE_ID, "zone_id" },
    { TLR_LABEL_INSTANCE_TENANCY, "instance_tenancy" },
    { TLR_LABEL_PLACEMENT_GROUP_ID, "placement_group_id" },
    { TLR_LABEL_PLACEMENT_GROUP_PARTITION, "placement_group_partition" },
};
#define NWK ((int)(sizeof(well_known) / sizeof(well_known[0])))
#define NNODE (NWK + 3)            /* + node_name, node_phase, managed */
#define NNODE_RES (NNODE + 1)      /* + resource_type */

/* The per-Node families with resource_type, in this order. */
enum { F_ALLOC, F_OVERHEAD, F_POD_REQ, F_DAEMON_REQ, NRES_FAMS };

struct watcher_gauges {
    tlr_metric_family *res[NRES_FAMS];
    tlr_metric_family *lifetime, *limit, *usage, *util, *node_count, *synced, *unsynced;
    int64_t unsynced_since;        /* Unix ms the cache was first seen unsynced; 0 synced */
};

/* One resource's total: name as Karpenter spells it, value in its unit. */
typedef struct res_val {
    char name[96];
    double v;
} res_val;

typedef struct res_sum {
    res_val *v;
    size_t n, cap;
} res_sum;

/* Kubernetes resource name as a resource_type value: lower case, '-' as
 * '_' ("ephemeral-storage" -> "ephemeral_storage"). */
static void res_name(const char *k8s, char *out, size_t len)
{
    size_t i = 0;
    for (; k8s[i] && i + 1 < len; i++) {
        char c = k8s[i];
        out[i] = c == '-' ? '_' : (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    out[i] = '\0';
}

static void sum_add(res_sum *s, const char *k8s, double v)
{
    char name[96];
    res_name(k8s, name, sizeof(name));
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].name, name)) {
            s->v[i].v += v;
            return;
        }
    TLR_GROW(s->v, s->cap, s->n + 1);
    snprintf(s->v[s->n].name, sizeof(s->v[s->n].name), "%s", name);
    s->v[s->n++].v = v;
}

/* Add r's resources to s.  all: add cpu, memory and pods even at 0 (a
 * ResourceList from Kubernetes lists them); ephemeral storage and
 * extended resources only when not 0. */
static void sum_list(res_sum *s, const Tailor__V1__ResourceList *r, bool all)
{
    if (!r)
        return;
    if (all || r->cpu_millis)
        sum_add(s, "cpu", (double)r->cpu_millis / 1000.0);
    if (all || r->memory_bytes)
        sum_add(s, "memory", (double)r->memory_bytes);
    if (all || r->pods)
        sum_add(s, "pods", (double)r->pods);
    if (r->ephemeral_storage_bytes)
        sum_add(s, "ephemeral-storage", (double)r->ephemeral_storage_bytes);
    for (size_t i = 0; i < r->n_extended; i++)
        if (r->extended[i]->value)
            sum_add(s, r->extended[i]->name, (double)r->extended[i]->value);
}

static double sum_get(const res_sum *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].name, name))
            return s->v[i].v;
    return 0;
}

/* Requests summed over pods: the four fixed resources as integers (the
 * per-pod hot path), extended ones by name. */
typedef struct req_acc {
    int64_t cpu_millis, memory, pods, ephemeral;
    res_sum ext;
    size_t npods;
} req_acc;

typedef struct gnode {
    const Tailor__V1__Node *n;     /* borrowed from the cache */
    req_acc req, daemon;
} gnode;

static void acc_add(req_acc *a, const Tailor__V1__ResourceList *r)
{
    a->npods++;
    if (!r)
        return;
    a->cpu_millis += r->cpu_millis;
    a->memory += r->memory_bytes;
    a->pods += r->pods;
    a->ephemeral += r->ephemeral_storage_bytes;
    for (size_t i = 0; i < r->n_extended; i++)
        if (r->extended[i]->value)
            sum_add(&a->ext, r->extended[i]->name, (double)r->extended[i]->value);
}

/* As a ResourceList from Kubernetes: cpu, memory and pods always,
 * ephemeral storage and extended resources when not 0. */
static void acc_sum(const req_acc *a, res_sum *out)
{
    sum_add(out, "cpu", (double)a->cpu_millis / 1000.0);
    sum_add(out, "memory", (double)a->memory);
    sum_add(out, "pods", (double)a->pods);
    if (a->ephemeral)
        sum_add(out, "ephemeral-storage", (double)a->ephemeral);
    for (size_t i = 0; i < a->ext.n; i++)
        sum_add(out, a->ext.v[i].name, a->ext.v[i].v);
}

typedef struct pass {
    gnode *v;
    size_t n, cap;
    tlr_arena *scratch;
    ProtobufCAllocator pa;
} pass;

static void *arena_pb_alloc(void *data, size_t size)
{
    return tlr_arena_alloc(data, size ? size : 1);
}

static void arena_pb_free(void *data, void *p)
{
    (void)data;
    (void)p;
}

static void visit_node(void *arg, const watcher_cache_item *it)
{
    pass *p = arg;
    if (!it->msg)
        return;
    TLR_GROW(p->v, p->cap, p->n + 1);
    memset(&p->v[p->n], 0, sizeof(p->v[0]));
    p->v[p->n++].n = (const Tailor__V1__Node *)it->msg;
}

static int gnode_cmp(const void *a, const void *b)
{
    return strcmp(((const gnode *)a)->n->name, ((const gnode *)b)->n->name);
}

static gnode *node_named(pass *p, const char *name)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(p->v[mid].n->name, name);
        if (!c)
            return &p->v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A bound pod: its requests on its Node, as Karpenter's PodRequests and
 * DaemonSetRequests (non-terminal pods only). */
static void visit_pod(void *arg, const watcher_cache_item *it)
{
    pass *p = arg;
    if (it->msg || !it->packed)
        return;                    /* pending: bound to no Node */
    tlr_arena_reset(p->scratch);
    Tailor__V1__Pod *pod = tailor__v1__pod__unpack(&p->pa, it->packed_len, it->packed);
    if (!pod || pod->phase == TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED ||
        pod->phase == TAILOR__V1__POD_PHASE__POD_PHASE_FAILED)
        return;
    gnode *g = node_named(p, pod->node_name);
    if (!g)
        return;
    acc_add(&g->req, pod->requests);
    if (pod->is_daemonset)
        acc_add(&g->daemon, pod->requests);
}

static const char *label_of(const Tailor__V1__Node *n, const char *key)
{
    for (size_t i = 0; i < n->n_labels; i++)
        if (!strcmp(n->labels[i]->key, key))
            return n->labels[i]->value;
    return "";
}

/* Set fam's series for every resource in s, with the Node's label values
 * (vals: NNODE_RES, the last one is filled here). */
static void set_res(tlr_metric_family *fam, const char **vals, const res_sum *s)
{
    for (size_t i = 0; i < s->n; i++) {
        vals[NNODE] = s->v[i].name;
        tlr_metrics_gauge_set(fam, vals, s->v[i].v);
    }
}

static void node_gauges(watcher_gauges *g, const gnode *x, int64_t now_ms, res_sum *alloc_all,
                        res_sum *req_all)
{
    const Tailor__V1__Node *n = x->n;
    const char *vals[NNODE_RES];
    for (int i = 0; i < NWK; i++)
        vals[i] = label_of(n, well_known[i].key);
    vals[NWK] = n->name;
    vals[NWK + 1] = "";                 /* node_phase: see the top of the file */
    vals[NWK + 2] = n->managed ? "true" : "false";

    res_sum alloc = { 0 }, cap = { 0 }, over = { 0 }, req = { 0 }, daemon = { 0 };
    sum_list(&alloc, n->allocatable, true);
    sum_list(&cap, n->capacity, true);
    for (size_t i = 0; i < cap.n; i++)
        sum_add(&over, cap.v[i].name, cap.v[i].v - sum_get(&alloc, cap.v[i].name));
    set_res(g->res[F_ALLOC], vals, &alloc);
    set_res(g->res[F_OVERHEAD], vals, &over);
    if (x->req.npods) {
        acc_sum(&x->req, &req);
        set_res(g->res[F_POD_REQ], vals, &req);
    }
    if (x->daemon.npods) {
        acc_sum(&x->daemon, &daemon);
        set_res(g->res[F_DAEMON_REQ], vals, &daemon);
    }
    if (n->creation_unix_ms)
        tlr_metrics_gauge_set(g->lifetime, vals, (double)(now_ms - n->creation_unix_ms) / 1000.0);
    for (size_t i = 0; i < alloc.n; i++)
        sum_add(alloc_all, alloc.v[i].name, alloc.v[i].v);
    for (size_t i = 0; i < req.n; i++)
        sum_add(req_all, req.v[i].name, req.v[i].v);
    free(req.v);
    free(daemon.v);
    free(alloc.v);
    free(cap.v);
    free(over.v);
}

/* NodePool limits (only the limited resources, "nodes" included) and
 * usage (status.resources, as Karpenter reads it). */
static void visit_pool(void *arg, const watcher_cache_item *it)
{
    watcher_gauges *g = arg;
    const Tailor__V1__NodePool *np = (const Tailor__V1__NodePool *)it->msg;
    if (!np)
        return;
    const Tailor__V1__NodePoolLimits *l = np->limits;
    if (l) {
        res_sum s = { 0 };
        if (l->has_cpu)
            sum_add(&s, "cpu", (double)l->cpu_millis / 1000.0);
        if (l->has_memory)
            sum_add(&s, "memory", (double)l->memory_bytes);
        if (l->has_pods)
            sum_add(&s, "pods", (double)l->pods);
        if (l->has_ephemeral_storage)
            sum_add(&s, "ephemeral-storage", (double)l->ephemeral_storage_bytes);
        if (l->has_nodes)
            sum_add(&s, "nodes", (double)l->nodes);
        for (size_t i = 0; i < l->n_extended; i++)
            sum_add(&s, l->extended[i]->name, (double)l->extended[i]->value);
        for (size_t i = 0; i < s.n; i++)
            tlr_metrics_gauge_set(g->limit, (const char *const[]){ s.v[i].name, np->name }, s.v[i].v);
        free(s.v);
    }
    if (np->status && np->status->usage) {
        res_sum s = { 0 };
        sum_list(&s, np->status->usage, true);
        for (size_t i = 0; i < s.n; i++)
            tlr_metrics_gauge_set(g->usage, (const char *const[]){ s.v[i].name, np->name }, s.v[i].v);
        free(s.v);
    }
}

void watcher_gauges_create(tlr_metrics *m, watcher_gauges **out)
{
    watcher_gauges *g = tlr_calloc(1, sizeof(*g));
    const char *node[NNODE_RES];
    for (int i = 0; i < NWK; i++)
        node[i] = well_known[i].name;
    node[NWK] = "node_name";
    node[NWK + 1] = "node_phase";
    node[NWK + 2] = "managed";
    node[NNODE] = "resource_type";
    static const struct {
        const char *name, *help;
    } res[NRES_FAMS] = {
        [F_ALLOC] = { "karpenter_nodes_allocatable", "Node allocatable are the resources allocatable by nodes." },
        [F_OVERHEAD] = { "karpenter_nodes_system_overhead",
                         "Node system daemon overhead are the resources reserved for system overhead, the "
                         "difference between the node's capacity and allocatable values are reported by the "
                         "status." },
        [F_POD_REQ] = { "karpenter_nodes_total_pod_requests",
                        "Node total pod requests are the resources requested by pods bound to nodes, "
                        "including the DaemonSet pods." },
        [F_DAEMON_REQ] = { "karpenter_nodes_total_daemon_requests",
                           "Node total daemon requests are the resource requested by DaemonSet pods bound to "
                           "nodes." },
    };
    for (int i = 0; i < NRES_FAMS; i++)
        g->res[i] = tlr_metrics_gauge(m, res[i].name, res[i].help, NNODE_RES, node);
    g->lifetime = tlr_metrics_gauge(m, "karpenter_nodes_current_lifetime_seconds", "Node age in seconds",
                                    NNODE, node);
    static const char *const rp[] = { "resource_type", "nodepool" };
    static const char *const rt[] = { "resource_type" };
    g->limit = tlr_metrics_gauge(m, "karpenter_nodepools_limit",
                                 "Limits specified on the nodepool that restrict the quantity of resources "
                                 "provisioned. Labeled by nodepool name and resource type.", 2, rp);
    g->usage = tlr_metrics_gauge(m, "karpenter_nodepools_usage",
                                 "The amount of resources that have been provisioned for a nodepool. "
                                 "Labeled by nodepool name and resource type.", 2, rp);
    g->util = tlr_metrics_gauge(m, "karpenter_cluster_utilization_percent",
                                "Utilization of allocatable resources by pod requests", 1, rt);
    g->node_count = tlr_metrics_gauge(m, "karpenter_cluster_state_node_count",
                                      "Current count of nodes in cluster state", 0, NULL);
    g->synced = tlr_metrics_gauge(m, "karpenter_cluster_state_synced",
                                  "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that "
                                  "nodeclaims and nodes that are stored in the APIServer have the same "
                                  "representation as Karpenter's cluster state", 0, NULL);
    g->unsynced = tlr_metrics_gauge(m, "karpenter_cluster_state_unsynced_time_seconds",
                                    "The time for which cluster state is not synced", 0, NULL);
    *out = g;
}

void watcher_gauges_free(watcher_gauges *g)
{
    free(g);
}

static void mark_all(watcher_gauges *g, bool sweep)
{
    tlr_metric_family *all[] = { g->res[0], g->res[1], g->res[2], g->res[3],
                                 g->lifetime, g->limit, g->usage, g->util };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (sweep)
            tlr_metrics_family_sweep_stale(all[i]);
        else
            tlr_metrics_family_mark_stale(all[i]);
    }
}

void watcher_gauges_update(watcher_gauges *g, const watcher_cache *c, bool synced, int64_t now_ms)
{
    pass p = { 0 };
    tlr_arena_create(0, &p.scratch);
    p.pa = (ProtobufCAllocator){ arena_pb_alloc, arena_pb_free, p.scratch };
    watcher_cache_visit(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE, visit_node, &p);
    if (p.n)
        qsort(p.v, p.n, sizeof(p.v[0]), gnode_cmp);
    watcher_cache_visit(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD, visit_pod, &p);
    tlr_arena_free(p.scratch);

    mark_all(g, false);
    res_sum alloc_all = { 0 }, req_all = { 0 };
    for (size_t i = 0; i < p.n; i++)
        node_gauges(g, &p.v[i], now_ms, &alloc_all, &req_all);
    /* Karpenter: 100 * requests / allocatable over all Nodes, per resource
     * with allocatable > 0. */
    for (size_t i = 0; i < alloc_all.n; i++)
        if (alloc_all.v[i].v > 0)
            tlr_metrics_gauge_set(g->util, (const char *const[]){ alloc_all.v[i].name },
                                  100.0 * sum_get(&req_all, alloc_all.v[i].name) / alloc_all.v[i].v);
    watcher_cache_visit(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODEPOOL, visit_pool, g);
    mark_all(g, true);

    tlr_metrics_gauge_set(g->node_count, NULL, (double)p.n);
    tlr_metrics_gauge_set(g->synced, NULL, synced ? 1 : 0);
    if (synced)
        g->unsynced_since = 0;
    else if (!g->unsynced_since)
        g->unsynced_since = now_ms;
    tlr_metrics_gauge_set(g->unsynced, NULL,
                          g->unsynced_since ? (double)(now_ms - g->unsynced_since) / 1000.0 : 0);

    for (size_t i = 0; i < p.n; i++) {
        free(p.v[i].req.ext.v);
        free(p.v[i].daemon.ext.v);
    }
    free(p.v);
    free(alloc_all.v);
    free(req_all.v);
}
