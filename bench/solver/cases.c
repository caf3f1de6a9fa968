/* cases.c - bench-solver's cluster-like cases on the real catalog.
 *
 * The Karpenter-benchmark shapes and the Alibaba trace are what the
 * solver was tuned on; these cases are not.  Each is built the way a
 * cluster's manifests read: requests in round numbers (100m..4 CPU,
 * 128Mi..16Gi, GPU pods larger), pods named and labelled by their
 * controller (app, pod-template-hash or controller-revision-hash, owner
 * references), the usual DaemonSets on every node, NodePools with the
 * requirements of Karpenter's documented examples.  Everything pending at
 * once: a cluster coming up, or a burst that needs new capacity.
 *
 * The catalog is the real one (aws-instance-types.json, us-east-1 on-
 * demand prices, zones a/b/c).  The file has no spot prices; where a pool
 * allows spot, each (type, zone) spot offering is priced at 28-55 % of
 * on-demand by a hash of its name and zone, so spot is cheaper, unevenly,
 * as it is in practice, and the cheapest zone differs from type to type.
 *
 * Cases (workload tables below; replicas scaled to the requested size,
 * the largest Deployment absorbing the rounding):
 *   zonespread   ten services over one on-demand pool: zone spreads with
 *                maxSkew 1 and 2, minDomains 3, matchLabelKeys
 *                [pod-template-hash] (one service mid-rollout: two
 *                template hashes spread independently), one spread whose
 *                pods may only run in two zones (required node affinity,
 *                nodeAffinityPolicy Honor: two domains), ScheduleAnyway
 *                spreads, hostname spreads hard and soft.
 *   statefulsets seven StatefulSets (postgres, kafka, zookeeper, ...) with
 *                required hostname anti-affinity to their own pods and a
 *                zone spread, beside Deployments.
 *   mix20        20 Deployments, replicas Zipf (rank^-2: a few with
 *                hundreds, half with 10 or fewer), shapes cpu-heavy
 *                (1 GiB per CPU), balanced (4) and memory-heavy (8), one
 *                pool allowing spot and on-demand.
 *   gpu-cpu-pools  a GPU pool (g4dn/g5/g6, tainted nvidia.com/gpu, limits
 *                on GPUs and CPU, weight 10), an on-demand pool (weight
 *                50, CPU limit 256) and a spot+on-demand pool (weight 20)
 *                that takes the overflow and the spot-only batch pods;
 *                GPU pods select a GPU model or not and tolerate the
 *                taint; the NVIDIA device plugin runs on GPU nodes only.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "tlr_alloc.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_labels.h"

#define CS_MIB (1024LL * 1024)
#define CS_PUSH(arr, n, x)                                      \
    do {                                                        \
        (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr))); \
        (arr)[(n)++] = (x);                                     \
    } while (0)

#define OP_IN TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
#define OP_GT TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT
#define CT_OD TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND
#define CT_SPOT TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
#define NO_SCHEDULE TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE
#define K_GPU "nvidia.com/gpu"

/* ---- small builders ---------------------------------------------------- */

typedef struct cs_ctx {
    Tailor__V1__SolveRequest *req;
    uint64_t rng;
    size_t uid;
} cs_ctx;

static uint64_t cs_rand(cs_ctx *cx)
{
    uint64_t x = cx->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return cx->rng = x;
}

/* n characters from the alphabet Kubernetes uses for generated names. */
static void cs_suffix(cs_ctx *cx, char *out, int n)
{
    static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
    for (int i = 0; i < n; i++)
        out[i] = alpha[cs_rand(cx) % (sizeof(alpha) - 1)];
    out[n] = 0;
}

static Tailor__V1__Label *cs_label(const char *k, const char *v)
{
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(k);
    l->value = tlr_strdup(v);
    return l;
}

static Tailor__V1__ResourceList *cs_res(int64_t cpu_m, int64_t mem_mib)
{
    Tailor__V1__ResourceList *r = tlr_malloc(sizeof(*r));
    tailor__v1__resource_list__init(r);
    r->cpu_millis = cpu_m;
    r->memory_bytes = mem_mib * CS_MIB;
    r->pods = 1;
    return r;
}

static Tailor__V1__ExtendedResource *cs_ext(const char *name, int64_t v)
{
    Tailor__V1__ExtendedResource *e = tlr_malloc(sizeof(*e));
    tailor__v1__extended_resource__init(e);
    e->name = tlr_strdup(name);
    e->value = v;
    return e;
}

/* A requirement key op values, values comma separated. */
static Tailor__V1__NodeSelectorRequirement *cs_nsr(const char *key, int op, const char *vals)
{
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup(key);
    r->operator_ = op;
    const char *p = vals;
    while (p && *p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *v = tlr_malloc(len + 1);
        memcpy(v, p, len);
        v[len] = 0;
        CS_PUSH(r->values, r->n_values, v);
        p = e ? e + 1 : NULL;
    }
    return r;
}

static Tailor__V1__NodeSelectorTerm *cs_term(const char *key, int op, const char *vals)
{
    Tailor__V1__NodeSelectorTerm *t = tlr_malloc(sizeof(*t));
    tailor__v1__node_selector_term__init(t);
    CS_PUSH(t->match_expressions, t->n_match_expressions, cs_nsr(key, op, vals));
    return t;
}

static Tailor__V1__LabelSelector *cs_sel(const char *k, const char *v)
{
    Tailor__V1__LabelSelector *s = tlr_malloc(sizeof(*s));
    tailor__v1__label_selector__init(s);
    CS_PUSH(s->match_labels, s->n_match_labels, cs_label(k, v));
    return s;
}

/* A toleration: key Exists (value NULL) or key=value, effect NoSchedule;
 * key "" tolerates every taint, as DaemonSets commonly do. */
static Tailor__V1__Toleration *cs_toleration(const char *key, const char *value)
{
    Tailor__V1__Toleration *t = tlr_malloc(sizeof(*t));
    tailor__v1__toleration__init(t);
    t->key = tlr_strdup(key);
    t->value = tlr_strdup(value ? value : "");
    t->operator_ = value ? TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL
                         : TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS;
    if (key[0])
        t->effect = NO_SCHEDULE;
    return t;
}

/* ---- catalog, request, pools --------------------------------------------- */

/* Spot price as a share of on-demand, 0.28..0.55, fixed per (type, zone). */
static double spot_share(const char *type, const char *zone)
{
    uint64_t h = tlr_fnv1a64_str(tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, type), zone);
    return 0.28 + 0.27 * (double)(h % 1000) / 999.0;
}

static Tailor__V1__Catalog *real_catalog(const char *data)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/aws-instance-types.json", data);
    Tailor__V1__Catalog *cat = NULL;
    char err[256];
    /* spot_discount 0: spot offerings at the on-demand price, re-priced below. */
    tlr_catalog_file_opts o = {.price_source = "static:karpenter-2026-07-20"};
    if (tlr_catalog_file_load(path, &o, &cat, err, sizeof(err)) != TLR_OK) {
        fprintf(stderr, "bench-solver: %s\n", err);
        return NULL;
    }
    for (size_t i = 0; i < cat->n_instance_types; i++) {
        Tailor__V1__InstanceType *t = cat->instance_types[i];
        for (size_t k = 0; k < t->n_offerings; k++)
            if (t->offerings[k]->capacity_type == CT_SPOT)
                t->offerings[k]->price_per_hour *= spot_share(t->name, t->offerings[k]->zone);
    }
    tlr_catalog_set_hash(cat);
    return cat;
}

/* An empty, synced cluster and the catalog (handed over) for node class
 * "default". */
static Tailor__V1__SolveRequest *new_request(Tailor__V1__Catalog *cat)
{
    Tailor__V1__SolveRequest *req = tlr_malloc(sizeof(*req));
    tailor__v1__solve_request__init(req);
    req->cluster = tlr_malloc(sizeof(*req->cluster));
    tailor__v1__cluster_state__init(req->cluster);
    req->cluster->synced = 1;
    Tailor__V1__CatalogRef *ref = tlr_malloc(sizeof(*ref));
    tailor__v1__catalog_ref__init(ref);
    ref->hash = tlr_strdup(cat->hash);
    ref->catalog = cat;
    CS_PUSH(ref->node_classes, ref->n_node_classes, tlr_strdup("default"));
    CS_PUSH(req->catalogs, req->n_catalogs, ref);
    req->now_unix_ms = 1700000000000;
    return req;
}

static Tailor__V1__NodePool *add_pool(Tailor__V1__SolveRequest *req, const char *name, int weight)
{
    Tailor__V1__NodePool *np = tlr_malloc(sizeof(*np));
    tailor__v1__node_pool__init(np);
    np->name = tlr_strdup(name);
    np->uid = tlr_strdup(name);
    np->weight = weight;
    np->expire_after_ms = 720LL * 3600 * 1000;
    np->node_class_ref = tlr_malloc(sizeof(*np->node_class_ref));
    tailor__v1__node_class_ref__init(np->node_class_ref);
    np->node_class_ref->group = tlr_strdup("karpenter.k8s.aws");
    np->node_class_ref->kind = tlr_strdup("EC2NodeClass");
    np->node_class_ref->name = tlr_strdup("default");
    CS_PUSH(req->cluster->nodepools, req->cluster->n_nodepools, np);
    return np;
}

static void pool_req(Tailor__V1__NodePool *np, const char *key, int op, const char *vals)
{
    CS_PUSH(np->requirements, np->n_requirements, cs_nsr(key, op, vals));
}

/* The general-purpose pool of Karpenter's examples: c/m/r, 6th generation
 * on, amd64 Linux, the capacity types given. */
static Tailor__V1__NodePool *general_pool(Tailor__V1__SolveRequest *req, const char *name, int weight,
                                          const char *capacity_types)
{
    Tailor__V1__NodePool *np = add_pool(req, name, weight);
    pool_req(np, TLR_LABEL_INSTANCE_CATEGORY, OP_IN, "c,m,r");
    pool_req(np, TLR_LABEL_INSTANCE_GENERATION, OP_GT, "5");
    pool_req(np, TLR_LABEL_ARCH, OP_IN, "amd64");
    pool_req(np, TLR_LABEL_OS, OP_IN, "linux");
    pool_req(np, TLR_LABEL_CAPACITY_TYPE, OP_IN, capacity_types);
    return np;
}

static void pool_limits(Tailor__V1__NodePool *np, int64_t cpus, int64_t gpus)
{
    np->limits = tlr_malloc(sizeof(*np->limits));
    tailor__v1__node_pool_limits__init(np->limits);
    np->limits->has_cpu = 1;
    np->limits->cpu_millis = cpus * 1000;
    if (gpus)
        CS_PUSH(np->limits->extended, np->limits->n_extended, cs_ext(K_GPU, gpus));
}

/* The DaemonSets of an EKS cluster with logging and metrics; with gpu,
 * also NVIDIA's device plugin, on GPU nodes only. */
static void add_daemonsets(Tailor__V1__SolveRequest *req, bool gpu)
{
    static const struct {
        const char *name, *ns;
        int64_t cpu_m, mem_mib;
    } ds[] = {
        {"aws-node", "kube-system", 25, 0},
        {"kube-proxy", "kube-system", 100, 0},
        {"ebs-csi-node", "kube-system", 30, 120},
        {"fluent-bit", "logging", 100, 128},
        {"node-exporter", "monitoring", 50, 64},
        {"nvidia-device-plugin", "kube-system", 50, 128},
    };
    for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
        bool plugin = i == sizeof(ds) / sizeof(ds[0]) - 1;
        if (plugin && !gpu)
            continue;
        Tailor__V1__DaemonSet *d = tlr_malloc(sizeof(*d));
        tailor__v1__daemon_set__init(d);
        d->name = tlr_strdup(ds[i].name);
        d->namespace_ = tlr_strdup(ds[i].ns);
        d->uid = tlr_strdup(ds[i].name);
        Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
        tailor__v1__pod__init(p);
        p->namespace_ = tlr_strdup(ds[i].ns);
        p->requests = cs_res(ds[i].cpu_m, ds[i].mem_mib);
        p->is_daemonset = 1;
        CS_PUSH(p->labels, p->n_labels, cs_label("app.kubernetes.io/name", ds[i].name));
        if (plugin) {
            CS_PUSH(p->tolerations, p->n_tolerations, cs_toleration(K_GPU, NULL));
            CS_PUSH(p->required_node_affinity, p->n_required_node_affinity,
                    cs_term(TLR_LABEL_INSTANCE_GPU_COUNT, OP_GT, "0"));
        } else {
            CS_PUSH(p->tolerations, p->n_tolerations, cs_toleration("", NULL));
        }
        d->pod_template = p;
        CS_PUSH(req->cluster->daemonsets, req->cluster->n_daemonsets, d);
    }
}

/* ---- workloads ----------------------------------------------------------- */

/* One topology spread constraint of a workload; skew 0 = none. */
typedef struct cs_spread {
    int skew;
    bool soft;           /* whenUnsatisfiable: ScheduleAnyway */
    int min_domains;
    bool by_hash;        /* matchLabelKeys: [pod-template-hash] */
} cs_spread;

typedef struct cs_workload {
    const char *name, *ns;
    bool stateful;       /* a StatefulSet: required hostname anti-affinity to itself */
    int replicas;        /* before scaling */
    int64_t cpu_m, mem_mib;
    int gpus;
    cs_spread zone, host;
    const char *zones;   /* required node affinity: zone In (comma list); NULL = any */
    const char *sel_key, *sel_value;   /* nodeSelector; NULL = none */
    bool tolerate_gpu;
    int old_pct;         /* share of replicas still on the previous template */
} cs_workload;

static void add_spread(Tailor__V1__Pod *p, const char *key, const cs_spread *s, const char *app)
{
    if (!s->skew)
        return;
    Tailor__V1__TopologySpreadConstraint *c = tlr_malloc(sizeof(*c));
    tailor__v1__topology_spread_constraint__init(c);
    c->max_skew = s->skew;
    c->topology_key = tlr_strdup(key);
    c->when_unsatisfiable =
        s->soft ? TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_SCHEDULE_ANYWAY
                : TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE;
    c->label_selector = cs_sel("app", app);
    c->min_domains = s->min_domains;
    if (s->by_hash)
        CS_PUSH(c->match_label_keys, c->n_match_label_keys, tlr_strdup("pod-template-hash"));
    CS_PUSH(p->topology_spread_constraints, p->n_topology_spread_constraints, c);
}

static void add_owner(Tailor__V1__Pod *p, const char *kind, const char *name)
{
    Tailor__V1__OwnerReference *o = tlr_malloc(sizeof(*o));
    tailor__v1__owner_reference__init(o);
    o->kind = tlr_strdup(kind);
    o->name = tlr_strdup(name);
    o->uid = tlr_strdup(name);
    o->controller = 1;
    o->api_version = tlr_strdup("apps/v1");
    CS_PUSH(p->owners, p->n_owners, o);
}

/* replicas pending pods of workload w. */
static void add_workload(cs_ctx *cx, const cs_workload *w, int replicas)
{
    char hash_new[16], hash_old[16], owner[160];
    cs_suffix(cx, hash_new, 10);
    cs_suffix(cx, hash_old, 10);
    int old = replicas * w->old_pct / 100;
    for (int i = 0; i < replicas; i++) {
        const char *hash = i < old ? hash_old : hash_new;
        char name[160], uid[32], sfx[8];
        if (w->stateful) {
            snprintf(name, sizeof(name), "%s-%d", w->name, i);
        } else {
            cs_suffix(cx, sfx, 5);
            snprintf(name, sizeof(name), "%s-%s-%s", w->name, hash, sfx);
        }
        snprintf(uid, sizeof(uid), "uid-%06zu", cx->uid++);
        Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
        tailor__v1__pod__init(p);
        p->uid = tlr_strdup(uid);
        p->namespace_ = tlr_strdup(w->ns);
        p->name = tlr_strdup(name);
        p->requests = cs_res(w->cpu_m, w->mem_mib);
        if (w->gpus)
            CS_PUSH(p->requests->extended, p->requests->n_extended, cs_ext(K_GPU, w->gpus));
        p->phase = TAILOR__V1__POD_PHASE__POD_PHASE_PENDING;
        p->unschedulable = 1;
        p->creation_unix_ms = 1700000000000 - 60000;
        CS_PUSH(p->labels, p->n_labels, cs_label("app", w->name));
        if (w->stateful) {
            snprintf(owner, sizeof(owner), "%s-%s", w->name, hash);
            CS_PUSH(p->labels, p->n_labels, cs_label("controller-revision-hash", owner));
            CS_PUSH(p->labels, p->n_labels, cs_label("statefulset.kubernetes.io/pod-name", name));
            add_owner(p, "StatefulSet", w->name);
        } else {
            CS_PUSH(p->labels, p->n_labels, cs_label("pod-template-hash", hash));
            snprintf(owner, sizeof(owner), "%s-%s", w->name, hash);
            add_owner(p, "ReplicaSet", owner);
        }
        add_spread(p, TLR_LABEL_ZONE, &w->zone, w->name);
        add_spread(p, TLR_LABEL_HOSTNAME, &w->host, w->name);
        if (w->stateful) {
            Tailor__V1__PodAffinityTerm *t = tlr_malloc(sizeof(*t));
            tailor__v1__pod_affinity_term__init(t);
            t->topology_key = tlr_strdup(TLR_LABEL_HOSTNAME);
            t->label_selector = cs_sel("app", w->name);
            p->pod_anti_affinity = tlr_malloc(sizeof(*p->pod_anti_affinity));
            tailor__v1__pod_affinity__init(p->pod_anti_affinity);
            CS_PUSH(p->pod_anti_affinity->required, p->pod_anti_affinity->n_required, t);
        }
        if (w->zones)
            CS_PUSH(p->required_node_affinity, p->n_required_node_affinity,
                    cs_term(TLR_LABEL_ZONE, OP_IN, w->zones));
        if (w->sel_key)
            CS_PUSH(p->node_selector, p->n_node_selector, cs_label(w->sel_key, w->sel_value));
        if (w->tolerate_gpu)
            CS_PUSH(p->tolerations, p->n_tolerations, cs_toleration(K_GPU, NULL));
        CS_PUSH(cx->req->pending_pods, cx->req->n_pending_pods, p);
    }
}

/* Add the workloads of w[0..nw) with the replicas of the scaled ones
 * (scale[i]) multiplied so that they hold `target` pods together (at least
 * one each, the largest absorbing the rounding); the others as written
 * times `fixed_mult`. */
static void add_workloads(cs_ctx *cx, const cs_workload *w, size_t nw, const bool *scale, long target,
                          int fixed_mult)
{
    long base = 0;
    for (size_t i = 0; i < nw; i++)
        if (scale[i])
            base += w[i].replicas;
    int *reps = tlr_calloc(nw, sizeof(int));
    long sum = 0;
    size_t largest = 0;
    for (size_t i = 0; i < nw; i++) {
        if (!scale[i]) {
            reps[i] = w[i].replicas * fixed_mult;
            continue;
        }
        long r = base > 0 ? lround((double)w[i].replicas * (double)target / (double)base) : 0;
        reps[i] = r < 1 ? 1 : (int)r;
        sum += reps[i];
        if (!scale[largest] || reps[i] > reps[largest])
            largest = i;
    }
    if (base > 0 && reps[largest] + (target - sum) >= 1)
        reps[largest] += (int)(target - sum);
    for (size_t i = 0; i < nw; i++)
        add_workload(cx, &w[i], reps[i]);
    free(reps);
}

/* ---- the cases ----------------------------------------------------------- */

Tailor__V1__SolveRequest *bench_case_zonespread(const char *data, size_t n)
{
    /* Replicas at 1,000 pods. */
    static const cs_workload w[] = {
        {"frontend", "web", false, 120, 500, 512, 0, {1, false, 0, true}, {1, true, 0, false}},
        {"api", "web", false, 200, 1000, 1024, 0, {1, false, 3, true}, {0}, .old_pct = 25},
        {"checkout", "shop", false, 80, 250, 256, 0, {2, false, 0, false}, {1, false, 0, false}},
        {"search", "search", false, 60, 2000, 4096, 0, {1, false, 3, false}, {1, true, 0, false}},
        {"session-cache", "data", false, 40, 500, 8192, 0, {1, false, 0, false}, {0},
         .zones = "us-east-1a,us-east-1b"},
        {"worker", "batch", false, 250, 1000, 2048, 0, {2, true, 0, false}, {0}},
        {"auth", "web", false, 30, 100, 128, 0, {1, false, 0, true}, {1, false, 0, false}},
        {"ingest", "obs", false, 50, 2000, 4096, 0, {1, false, 3, false}, {0}},
        {"notifications", "shop", false, 70, 200, 256, 0, {0}, {0}},
        {"reports", "batch", false, 100, 1500, 3072, 0, {0}, {0}},
    };
    static const bool scale[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    Tailor__V1__Catalog *cat = real_catalog(data);
    if (!cat)
        return NULL;
    cs_ctx cx = {.req = new_request(cat), .rng = 0x5EED2026ULL * 0x9E3779B97F4A7C15ULL};
    general_pool(cx.req, "default", 0, "on-demand");
    add_daemonsets(cx.req, false);
    add_workloads(&cx, w, sizeof(w) / sizeof(w[0]), scale, (long)n, 1);
    return cx.req;
}

Tailor__V1__SolveRequest *bench_case_statefulsets(const char *data, size_t n)
{
    static const cs_workload w[] = {
        {"postgres", "db", true, 3, 2000, 8192, 0, {1, false, 0, false}, {0}},
        {"kafka", "streaming", true, 9, 4000, 16384, 0, {1, false, 0, false}, {0}},
        {"zookeeper", "streaming", true, 3, 500, 1024, 0, {1, false, 0, false}, {0}},
        {"elasticsearch", "logging", true, 12, 2000, 16384, 0, {1, false, 0, false}, {0}},
        {"redis", "cache", true, 6, 1000, 4096, 0, {1, true, 0, false}, {0}},
        {"cassandra", "db", true, 6, 2000, 8192, 0, {1, false, 3, false}, {0}},
        {"etcd", "infra", true, 5, 500, 2048, 0, {1, false, 0, false}, {0}},
        {"web", "web", false, 300, 500, 512, 0, {1, true, 0, true}, {0}},
        {"api", "web", false, 250, 1000, 1024, 0, {1, false, 0, true}, {0}},
        {"consumer", "streaming", false, 200, 500, 1024, 0, {0}, {0}},
        {"indexer", "logging", false, 100, 1000, 2048, 0, {0}, {0}},
        {"cron-runner", "batch", false, 50, 250, 512, 0, {0}, {0}},
    };
    static const bool scale[] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    Tailor__V1__Catalog *cat = real_catalog(data);
    if (!cat)
        return NULL;
    /* The StatefulSets grow with the cluster, Deployments fill the rest. */
    int mult = n >= 800 ? (int)(n / 400) : 1;
    long stateful = 0;
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
        if (!scale[i])
            stateful += (long)w[i].replicas * mult;
    cs_ctx cx = {.req = new_request(cat), .rng = 0x57A7EFULL * 0x9E3779B97F4A7C15ULL};
    general_pool(cx.req, "default", 0, "on-demand");
    add_daemonsets(cx.req, false);
    add_workloads(&cx, w, sizeof(w) / sizeof(w[0]), scale, (long)n - stateful, mult);
    return cx.req;
}

Tailor__V1__SolveRequest *bench_case_mix20(const char *data, size_t n)
{
    static const struct {
        const char *kind;
        int64_t cpu_m, mem_mib;
    } shapes[] = {
        {"cpu", 500, 512},    {"cpu", 1000, 1024},  {"cpu", 2000, 2048},  {"cpu", 4000, 4096},
        {"bal", 250, 1024},   {"bal", 500, 2048},   {"bal", 1000, 4096},  {"bal", 2000, 8192},
        {"mem", 250, 2048},   {"mem", 500, 4096},   {"mem", 1000, 8192},  {"mem", 2000, 16384},
        {"small", 100, 128},  {"small", 100, 256},  {"small", 200, 256},
    };
    static const char *const names[20] = {
        "storefront", "catalog",  "cart",     "pricing",   "recommender", "image-resize", "geo",
        "inventory",  "ledger",   "payments", "fraud",     "mailer",      "pdf-render",   "tax",
        "loyalty",    "coupons",  "reviews",  "shipping",  "audit",       "admin",
    };
    Tailor__V1__Catalog *cat = real_catalog(data);
    if (!cat)
        return NULL;
    cs_ctx cx = {.req = new_request(cat), .rng = 0x20202020ULL * 0x9E3779B97F4A7C15ULL};
    general_pool(cx.req, "default", 0, "spot,on-demand");
    add_daemonsets(cx.req, false);
    /* Zipf: the Deployment of rank k gets replicas proportional to 1/k^2;
     * the names are dealt to ranks and the shapes drawn by the PRNG. */
    cs_workload w[20];
    bool scale[20];
    size_t order[20];
    for (size_t i = 0; i < 20; i++)
        order[i] = i;
    for (size_t i = 19; i > 0; i--) {
        size_t j = cs_rand(&cx) % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t k = 0; k < 20; k++) {
        size_t s = cs_rand(&cx) % (sizeof(shapes) / sizeof(shapes[0]));
        w[k] = (cs_workload){.name = names[order[k]], .ns = "shop", .cpu_m = shapes[s].cpu_m,
                             .mem_mib = shapes[s].mem_mib,
                             .replicas = (int)lround(100000.0 / (double)((k + 1) * (k + 1)))};
        scale[k] = true;
    }
    add_workloads(&cx, w, 20, scale, (long)n, 1);
    return cx.req;
}

Tailor__V1__SolveRequest *bench_case_gpu_cpu_pools(const char *data)
{
    static const cs_workload w[] = {
        /* GPU: inference pinned to a GPU model, training on 4-GPU nodes,
         * notebooks on whatever GPU is cheapest. */
        {"inference-t4", "ml", false, 24, 4000, 16384, 1, {1, true, 0, false}, {0},
         .sel_key = TLR_LABEL_INSTANCE_GPU_NAME, .sel_value = "t4", .tolerate_gpu = true},
        {"inference-a10g", "ml", false, 16, 8000, 32768, 1, {1, true, 0, false}, {0},
         .sel_key = TLR_LABEL_INSTANCE_GPU_NAME, .sel_value = "a10g", .tolerate_gpu = true},
        {"training", "ml", false, 4, 40000, 163840, 4, {0}, {0}, .tolerate_gpu = true},
        {"notebook", "ml", false, 8, 2000, 8192, 1, {0}, {0}, .tolerate_gpu = true},
        /* CPU: services on on-demand (the general pool first, by weight,
         * up to its limit), batch on spot only. */
        {"web", "web", false, 120, 500, 1024, 0, {1, false, 0, false}, {0}},
        {"api", "web", false, 80, 1000, 2048, 0, {1, false, 0, true}, {0}},
        {"batch", "batch", false, 150, 2000, 4096, 0, {0}, {0},
         .sel_key = TLR_LABEL_CAPACITY_TYPE, .sel_value = "spot"},
        {"etl", "batch", false, 40, 4000, 16384, 0, {0}, {0}},
    };
    static const bool scale[] = {0, 0, 0, 0, 0, 0, 0, 0};
    Tailor__V1__Catalog *cat = real_catalog(data);
    if (!cat)
        return NULL;
    cs_ctx cx = {.req = new_request(cat), .rng = 0x69B0ULL * 0x9E3779B97F4A7C15ULL};
    Tailor__V1__NodePool *gpu = add_pool(cx.req, "gpu", 10);
    pool_req(gpu, TLR_LABEL_INSTANCE_FAMILY, OP_IN, "g4dn,g5,g6");
    pool_req(gpu, TLR_LABEL_ARCH, OP_IN, "amd64");
    pool_req(gpu, TLR_LABEL_OS, OP_IN, "linux");
    pool_req(gpu, TLR_LABEL_CAPACITY_TYPE, OP_IN, "on-demand");
    Tailor__V1__Taint *t = tlr_malloc(sizeof(*t));
    tailor__v1__taint__init(t);
    t->key = tlr_strdup(K_GPU);
    t->value = tlr_strdup("true");
    t->effect = NO_SCHEDULE;
    CS_PUSH(gpu->taints, gpu->n_taints, t);
    pool_limits(gpu, 1000, 80);
    pool_limits(general_pool(cx.req, "general", 50, "on-demand"), 256, 0);
    pool_limits(general_pool(cx.req, "flex", 20, "spot,on-demand"), 1000, 0);
    add_daemonsets(cx.req, true);
    add_workloads(&cx, w, sizeof(w) / sizeof(w[0]), scale, 0, 1);
    return cx.req;
}
