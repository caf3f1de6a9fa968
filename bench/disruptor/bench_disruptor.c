/* bench_disruptor.c - bench-disruptor: how long consolidation takes to
 * decide at hundreds to thousands of nodes (a benchmark, not a test: it
 * prints figures and ratios).
 *
 * The cluster (synthetic, on the real catalog ../shared/data/aws-
 * instance-types.json, us-east-1 on-demand): N m5.2xlarge nodes of one
 * NodePool, two thirds "busy" (25 pods of 250m / 256Mi each) and one
 * third "light" (10 such pods), so the light nodes' pods fit in the busy
 * nodes' free room: a third of the cluster is removable.  The pool allows
 * categories c, m and r on-demand, budget 100% (--budget).  At N = 5000
 * that is 100,000 pods (the bench/consolidate case).
 *
 * For each N it prints:
 *   view        building the disruptor's view of the snapshot;
 *   probe       one Simulate removing one light node, sent reduced (what
 *               the disruptor sends) and whole (what a full
 *               re-simulation sends): time and request bytes;
 *   decide-100  one consolidation decision as Karpenter bounds it (the
 *               first 100 candidates): time, Simulates, nodes removed,
 *               $/h saved;
 *   decide-all  one decision over every candidate (the full
 *               consolidation): the same figures, plus the cost after it
 *               against the solver's from-scratch plan for the same pods.
 * Every Simulate goes through protobuf packing and unpacking both ways,
 * as over nng (the catalog travels by hash, as in the service); the
 * engine is the one tailor-solver runs (tlr_simulate), in-process.
 *
 * Then (converge) the disruptor as it runs, pass after pass, on the same
 * cluster: each pass decides as the controller does (emptiness, drift,
 * consolidation, the first that decides wins) with the service defaults
 * (--min-savings 0.1, --max-candidates 100, no spot-to-spot, the pool's
 * budget), then carries the decision out on the snapshot as the cluster
 * would end up once it is executed: the candidates gone, their pods where
 * the Simulate put them (existing nodes, or a new node of the
 * replacement's cheapest type, in its cheapest allowed zone), the moved
 * pods recreated at the pass's time.  The pass clock moves one minute a
 * pass (validation delay, launch, drain).  Until a pass decides nothing
 * (or --max-passes).  One row per pass: what was decided, nodes deleted
 * and launched, pods moved, the cost after it and its ratio to the
 * from-scratch plan, the decision's time; then a summary per size.  The
 * placements come from running the decided Simulate once more (the
 * solver is deterministic; a different answer is reported and stops the
 * run); that Simulate is not counted in the decision's time.  Last, the
 * slowest pass against the goal of a second for any pass, and the final
 * pass (the one that decides nothing) on its own.
 *
 * Usage: bench-disruptor [--nodes N[,N...]] [--data DIR] [--no-scratch]
 *                        [--converge | --no-converge] [--max-passes N]
 *                        [--budget NODES]   (the pool's budget; "100%")
 * Default sizes 500,2000,5000, decision figures then converge.
 * --converge: converge only.  --quick: 200 nodes only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "methods.h"
#include "sim.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"
#include "tlr_solve.h"
#include "tlr_time.h"
#include "view.h"

#define NOW 1800000000000LL
#define MIB (1024LL * 1024)
#define TYPE "m5.2xlarge"

#define PUSH(arr, n, x) \
    do { (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr))); (arr)[(n)++] = (x); } while (0)

static Tailor__V1__Label *label(const char *k, const char *v)
{
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(k);
    l->value = tlr_strdup(v);
    return l;
}

static Tailor__V1__ResourceList *res(int64_t cpu, int64_t mem, int64_t pods)
{
    Tailor__V1__ResourceList *r = tlr_malloc(sizeof(*r));
    tailor__v1__resource_list__init(r);
    r->cpu_millis = cpu;
    r->memory_bytes = mem;
    r->pods = pods;
    return r;
}

static Tailor__V1__NodeSelectorRequirement *req_in(const char *key, const char *v1, const char *v2,
                                                   const char *v3)
{
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup(key);
    r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    const char *v[3] = { v1, v2, v3 };
    for (int i = 0; i < 3; i++)
        if (v[i])
            PUSH(r->values, r->n_values, tlr_strdup(v[i]));
    return r;
}

static Tailor__V1__Pod *pod(int node, int i)
{
    Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
    tailor__v1__pod__init(p);
    char b[96];
    snprintf(b, sizeof(b), "p-%d-%d", node, i);
    p->name = tlr_strdup(b);
    snprintf(b, sizeof(b), "uid-%d-%d", node, i);
    p->uid = tlr_strdup(b);
    p->namespace_ = tlr_strdup("default");
    p->phase = TAILOR__V1__POD_PHASE__POD_PHASE_RUNNING;
    p->ready = true;
    p->creation_unix_ms = NOW - 3600000;
    p->requests = res(250, 256 * MIB, 1);
    snprintf(b, sizeof(b), "app-%d", (node * 7 + i) % 50);
    PUSH(p->labels, p->n_labels, label("app", b));
    Tailor__V1__OwnerReference *o = tlr_malloc(sizeof(*o));
    tailor__v1__owner_reference__init(o);
    o->kind = tlr_strdup("ReplicaSet");
    o->api_version = tlr_strdup("apps/v1");
    o->name = tlr_strdup(b);
    o->controller = true;
    PUSH(p->owners, p->n_owners, o);
    return p;
}

/* The synthetic snapshot: n nodes, every third one light. */
static Tailor__V1__SnapshotResponse *cluster(int n, const Tailor__V1__InstanceType *it, const char *budget,
                                             size_t *npods)
{
    Tailor__V1__SnapshotResponse *s = tlr_malloc(sizeof(*s));
    tailor__v1__snapshot_response__init(s);
    Tailor__V1__ClusterState *cs = tlr_malloc(sizeof(*cs));
    tailor__v1__cluster_state__init(cs);
    s->cluster = cs;
    cs->synced = true;
    Tailor__V1__NodePool *np = tlr_malloc(sizeof(*np));
    tailor__v1__node_pool__init(np);
    np->name = tlr_strdup("default");
    np->node_class_ref = tlr_malloc(sizeof(*np->node_class_ref));
    tailor__v1__node_class_ref__init(np->node_class_ref);
    np->node_class_ref->name = tlr_strdup("default");
    np->expire_after_ms = 720LL * 3600 * 1000;
    PUSH(np->requirements, np->n_requirements,
         req_in("karpenter.k8s.aws/instance-category", "c", "m", "r"));
    PUSH(np->requirements, np->n_requirements, req_in("kubernetes.io/arch", "amd64", NULL, NULL));
    PUSH(np->requirements, np->n_requirements,
         req_in("karpenter.sh/capacity-type", "on-demand", NULL, NULL));
    np->disruption = tlr_malloc(sizeof(*np->disruption));
    tailor__v1__disruption__init(np->disruption);
    np->disruption->consolidation_policy =
        TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_WHEN_EMPTY_OR_UNDERUTILIZED;
    Tailor__V1__Budget *b = tlr_malloc(sizeof(*b));
    tailor__v1__budget__init(b);
    b->nodes = tlr_strdup(budget);
    PUSH(np->disruption->budgets, np->disruption->n_budgets, b);
    PUSH(cs->nodepools, cs->n_nodepools, np);
    Tailor__V1__NodeClass *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_class__init(nc);
    nc->name = tlr_strdup("default");
    nc->ready = true;
    PUSH(cs->node_classes, cs->n_node_classes, nc);
    static const char *const zones[] = { "us-east-1a", "us-east-1b", "us-east-1c" };
    *npods = 0;
    for (int i = 0; i < n; i++) {
        Tailor__V1__Node *nd = tlr_malloc(sizeof(*nd));
        tailor__v1__node__init(nd);
        char b2[96];
        snprintf(b2, sizeof(b2), "node-%05d", i);
        nd->name = tlr_strdup(b2);
        snprintf(b2, sizeof(b2), "aws:///%s/i-%05d", zones[i % 3], i);
        nd->provider_id = tlr_strdup(b2);
        nd->capacity = res(it->capacity->cpu_millis, it->capacity->memory_bytes, it->capacity->pods);
        nd->allocatable = res(it->allocatable->cpu_millis, it->allocatable->memory_bytes,
                              it->allocatable->pods);
        nd->ready = nd->managed = nd->initialized = true;
        nd->nodepool = tlr_strdup("default");
        nd->instance_type = tlr_strdup(TYPE);
        nd->zone = tlr_strdup(zones[i % 3]);
        nd->capacity_type = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
        nd->creation_unix_ms = NOW - 7200000;
        PUSH(nd->labels, nd->n_labels, label("karpenter.sh/capacity-type", "on-demand"));
        PUSH(nd->labels, nd->n_labels, label("karpenter.sh/nodepool", "default"));
        PUSH(nd->labels, nd->n_labels, label("kubernetes.io/arch", "amd64"));
        PUSH(nd->labels, nd->n_labels, label("kubernetes.io/os", "linux"));
        PUSH(nd->labels, nd->n_labels, label("node.kubernetes.io/instance-type", TYPE));
        PUSH(nd->labels, nd->n_labels, label("topology.kubernetes.io/zone", zones[i % 3]));
        int k = i % 3 == 2 ? 10 : 25;
        nd->requested = res(250LL * k, 256 * MIB * k, k);
        for (int j = 0; j < k; j++) {
            Tailor__V1__Pod *p = pod(i, j);
            p->node_name = tlr_strdup(nd->name);
            PUSH(nd->pods, nd->n_pods, p);
        }
        *npods += (size_t)k;
        PUSH(cs->nodes, cs->n_nodes, nd);
    }
    return s;
}

/* ---- the solver, in-process but through the wire format ----------------- */

typedef struct wire {
    const Tailor__V1__Catalog *cat;
    size_t bytes;             /* request bytes of the last call */
} wire;

static int w_simulate(void *arg, const Tailor__V1__SimulateRequest *req, Tailor__V1__SimulateResponse **out)
{
    wire *w = arg;
    size_t len = tailor__v1__simulate_request__get_packed_size(req);
    uint8_t *buf = tlr_malloc(len + 1);
    tailor__v1__simulate_request__pack(req, buf);
    w->bytes = len;
    Tailor__V1__SimulateRequest *in = tailor__v1__simulate_request__unpack(NULL, len, buf);
    free(buf);
    Tailor__V1__Catalog *saved = NULL;
    if (in->n_catalogs) {
        saved = in->catalogs[0]->catalog;
        in->catalogs[0]->catalog = (Tailor__V1__Catalog *)w->cat;   /* the solver's cache */
    }
    Tailor__V1__SimulateResponse *r = NULL;
    tlr_simulate(in, NULL, &r);
    if (in->n_catalogs)
        in->catalogs[0]->catalog = saved;
    protobuf_c_message_free_unpacked(&in->base, NULL);
    len = tailor__v1__simulate_response__get_packed_size(r);
    buf = tlr_malloc(len + 1);
    tailor__v1__simulate_response__pack(r, buf);
    tlr_simulate_response_free(r);
    *out = tailor__v1__simulate_response__unpack(NULL, len, buf);
    free(buf);
    return *out ? TLR_OK : TLR_E_DECODE;
}

static double ms_since(int64_t t0)
{
    return (double)(tlr_mono_ms() - t0);
}

static double scratch_cost(const Tailor__V1__SnapshotResponse *s, const Tailor__V1__Catalog *cat,
                           double *ms)
{
    /* every pod pending, no node: what the solver buys from scratch */
    size_t n = 0;
    const Tailor__V1__ClusterState *cs = s->cluster;
    for (size_t i = 0; i < cs->n_nodes; i++)
        n += cs->nodes[i]->n_pods;
    Tailor__V1__Pod **pods = tlr_calloc(n + 1, sizeof(*pods));
    n = 0;
    for (size_t i = 0; i < cs->n_nodes; i++)
        for (size_t j = 0; j < cs->nodes[i]->n_pods; j++)
            pods[n++] = cs->nodes[i]->pods[j];
    Tailor__V1__ClusterState empty = *cs;
    empty.nodes = NULL;
    empty.n_nodes = 0;
    Tailor__V1__CatalogRef ref = TAILOR__V1__CATALOG_REF__INIT, *refs[1] = { &ref };
    char *classes[1] = { cs->node_classes[0]->name };
    ref.hash = cat->hash;
    ref.catalog = (Tailor__V1__Catalog *)cat;
    ref.node_classes = classes;
    ref.n_node_classes = 1;
    Tailor__V1__SolveRequest req = TAILOR__V1__SOLVE_REQUEST__INIT;
    req.pending_pods = pods;
    req.n_pending_pods = n;
    req.cluster = &empty;
    req.catalogs = refs;
    req.n_catalogs = 1;
    req.now_unix_ms = NOW;
    Tailor__V1__SolveResponse *r = NULL;
    int64_t t0 = tlr_mono_ms();
    tlr_solve_opts o = { .no_lower_bound = true };
    tlr_solve(&req, &o, &r);
    *ms = ms_since(t0);
    double c = r ? r->total_cost_per_hour : 0;
    if (r && r->n_pod_errors)
        fprintf(stderr, "bench-disruptor: the from-scratch plan left %zu pods out\n", r->n_pod_errors);
    tlr_solve_response_free(r);
    free(pods);
    return c;
}

/* ---- converge: decide, carry the decision out, decide again ------------ */

#define PASS_MS 60000   /* one pass: validation delay, launch, drain */
#define GOAL_MS 1000    /* what any one pass may take to decide (issue 16) */
#define SPLIT_MAX 4     /* consolidation.c's DS_SPLIT_MAX: what it asks the Simulate */
#define CT_LABEL "karpenter.sh/capacity-type"
#define ZONE_LABEL "topology.kubernetes.io/zone"

static double cluster_cost(const Tailor__V1__ClusterState *cs)
{
    double c = 0;
    for (size_t i = 0; i < cs->n_nodes; i++)
        c += cs->nodes[i]->price_per_hour;
    return c;
}

typedef struct moving {
    const char *uid;            /* borrowed from p */
    Tailor__V1__Pod *p;         /* borrowed from its (removed) node */
    Tailor__V1__Node *to;       /* borrowed: where the Simulate put it */
} moving;

static int by_uid(const void *a, const void *b)
{
    return strcmp(((const moving *)a)->uid, ((const moving *)b)->uid);
}

static moving *find_moving(moving *mv, size_t n, const char *uid)
{
    moving key = { uid, NULL, NULL };
    return bsearch(&key, mv, n, sizeof(*mv), by_uid);
}

/* p (moved off a removed node) lands on nd, recreated at now. */
static void place(Tailor__V1__Node *nd, Tailor__V1__Pod *p, int64_t now)
{
    free(p->node_name);
    p->node_name = tlr_strdup(nd->name);
    p->creation_unix_ms = now;
    PUSH(nd->pods, nd->n_pods, p);
    if (p->requests) {
        nd->requested->cpu_millis += p->requests->cpu_millis;
        nd->requested->memory_bytes += p->requests->memory_bytes;
    }
    nd->requested->pods++;
}

/* The node a replacement claim becomes: its cheapest option, at that
 * type's cheapest available offering of the claim's capacity type in a
 * zone the claim allows (what the launcher buys).  New, or NULL when the
 * catalog has no such offering. */
static Tailor__V1__Node *launch(const Tailor__V1__Catalog *cat, const Tailor__V1__NodeClaim *nc,
                                int seq, int64_t now)
{
    if (!nc->n_instance_type_options)
        return NULL;
    const char *type = nc->instance_type_options[0]->name;
    const Tailor__V1__InstanceType *it = ds_catalog_type(cat, type);
    Tailor__V1__CapacityType ct = tlr_nodeclaim_allows(nc, CT_LABEL, "on-demand")
                                      ? TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND
                                      : TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;
    const Tailor__V1__Offering *best = NULL;
    for (size_t i = 0; it && i < it->n_offerings; i++) {
        const Tailor__V1__Offering *o = it->offerings[i];
        if (o->available && o->capacity_type == ct && tlr_nodeclaim_allows(nc, ZONE_LABEL, o->zone) &&
            (!best || o->price_per_hour < best->price_per_hour))
            best = o;
    }
    if (!best)
        return NULL;
    Tailor__V1__Node *nd = tlr_malloc(sizeof(*nd));
    tailor__v1__node__init(nd);
    char b[128];
    snprintf(b, sizeof(b), "repl-%05d", seq);
    nd->name = tlr_strdup(b);
    snprintf(b, sizeof(b), "aws:///%s/i-r%05d", best->zone, seq);
    nd->provider_id = tlr_strdup(b);
    nd->capacity = res(it->capacity->cpu_millis, it->capacity->memory_bytes, it->capacity->pods);
    nd->allocatable = res(it->allocatable->cpu_millis, it->allocatable->memory_bytes,
                          it->allocatable->pods);
    nd->requested = res(0, 0, 0);
    nd->ready = nd->managed = nd->initialized = true;
    nd->nodepool = tlr_strdup(nc->nodepool);
    nd->instance_type = tlr_strdup(type);
    nd->zone = tlr_strdup(best->zone);
    nd->capacity_type = ct;
    nd->price_per_hour = best->price_per_hour;
    nd->creation_unix_ms = now;
    bool spot = ct == TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;
    PUSH(nd->labels, nd->n_labels, label(CT_LABEL, spot ? "spot" : "on-demand"));
    PUSH(nd->labels, nd->n_labels, label("karpenter.sh/nodepool", nc->nodepool));
    PUSH(nd->labels, nd->n_labels, label("kubernetes.io/arch", it->arch));
    PUSH(nd->labels, nd->n_labels, label("kubernetes.io/os", "linux"));
    PUSH(nd->labels, nd->n_labels, label("node.kubernetes.io/instance-type", type));
    PUSH(nd->labels, nd->n_labels, label(ZONE_LABEL, best->zone));
    return nd;
}

typedef struct conv_step {
    size_t moved, launched;
    char launched_types[128];
} conv_step;

/* Carry c out on v's snapshot, as the cluster ends up once it is
 * executed.  The pods go where the same Simulate puts them; false (and
 * why printed, the snapshot untouched) when it now answers otherwise, or
 * a pod is left without a place.  v's snapshot is changed: rebuild the
 * view before deciding again. */
static bool apply(ds_view *v, ds_sim *s, const ds_cmd *c, const Tailor__V1__Catalog *cat,
                  int64_t now, int *launch_seq, conv_step *st)
{
    Tailor__V1__ClusterState *cs = v->cs;
    const char **names = ds_cmd_nodes(c);
    bool ok = false;
    ds_sim_result r = { 0 };
    moving *mv = NULL;
    size_t nmv = 0;
    Tailor__V1__Node **added = NULL;
    size_t nadded = 0;
    memset(st, 0, sizeof(*st));
    for (size_t i = 0; i < c->n; i++) {
        const ds_vnode *x = ds_view_node(v, c->c[i].node);
        for (size_t j = 0; x && j < x->node->n_pods; j++)
            if (ds_pod_moves(x->node->pods[j]))
                PUSH(mv, nmv, ((moving){ x->node->pods[j]->uid, x->node->pods[j], NULL }));
    }
    if (nmv) {
        int maxr = c->n == 1 ? SPLIT_MAX : 1;
        if (ds_sim_run(s, names, c->n, true, maxr, &r) || !r.feasible || r.nreplacements != c->nrepl) {
            fprintf(stderr, "bench-disruptor: the decided Simulate answered otherwise the second "
                            "time (feasible %d, %zu replacements, decided %zu): %s\n",
                    r.feasible, r.nreplacements, c->nrepl, r.why);
            goto out;
        }
        qsort(mv, nmv, sizeof(*mv), by_uid);
        for (size_t i = 0; i < r.resp->n_placements; i++) {
            const Tailor__V1__Binding *bd = r.resp->placements[i];
            moving *m = find_moving(mv, nmv, bd->pod_uid);
            ds_vnode *to = bd->target_case == TAILOR__V1__BINDING__TARGET_NODE_NAME
                               ? ds_view_node(v, bd->node_name) : NULL;
            if (m && to)
                m->to = to->node;
        }
        for (size_t k = 0; k < c->nrepl; k++) {
            Tailor__V1__Node *nd = launch(cat, c->repl[k], (*launch_seq)++, now);
            if (!nd) {
                fprintf(stderr, "bench-disruptor: no offering for the replacement %s\n",
                        c->repl[k]->n_instance_type_options ? c->repl[k]->instance_type_options[0]->name : "?");
                goto out;
            }
            PUSH(added, nadded, nd);
            size_t l = strlen(st->launched_types);
            snprintf(st->launched_types + l, sizeof(st->launched_types) - l, "%s%s", k ? "," : "",
                     nd->instance_type);
            for (size_t j = 0; j < c->repl[k]->n_planned_pod_uids; j++) {
                moving *m = find_moving(mv, nmv, c->repl[k]->planned_pod_uids[j]);
                if (m)
                    m->to = nd;
            }
        }
        for (size_t i = 0; i < nmv; i++)
            if (!mv[i].to) {
                fprintf(stderr, "bench-disruptor: pod %s has no place in the decided Simulate\n",
                        mv[i].uid);
                goto out;
            }
        for (size_t i = 0; i < nmv; i++)
            place(mv[i].to, mv[i].p, now);
    }
    /* the candidates go, with what did not move (nothing in this cluster) */
    size_t k = 0;
    for (size_t i = 0; i < cs->n_nodes; i++) {
        Tailor__V1__Node *nd = cs->nodes[i];
        if (!ds_cmd_has_node(c, nd->name)) {
            cs->nodes[k++] = nd;
            continue;
        }
        size_t kept = 0;
        for (size_t j = 0; j < nd->n_pods; j++)
            if (!ds_pod_moves(nd->pods[j]))
                nd->pods[kept++] = nd->pods[j];
        nd->n_pods = kept;
        protobuf_c_message_free_unpacked(&nd->base, NULL);
    }
    cs->n_nodes = k;
    for (size_t i = 0; i < nadded; i++)
        PUSH(cs->nodes, cs->n_nodes, added[i]);
    nadded = 0;
    st->moved = nmv;
    st->launched = c->nrepl;
    ok = true;
out:
    for (size_t i = 0; i < nadded; i++)
        protobuf_c_message_free_unpacked(&added[i]->base, NULL);
    free(added);
    free(mv);
    free(names);
    ds_sim_result_clear(s, &r);
    return ok;
}

static double run(int n, const Tailor__V1__Catalog *cat, const char *budget, bool scratch)
{
    const Tailor__V1__InstanceType *it = ds_catalog_type(cat, TYPE);
    size_t npods;
    Tailor__V1__SnapshotResponse *snap = cluster(n, it, budget, &npods);
    double price = ds_catalog_price(cat, TYPE, "us-east-1a", TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND);
    double scratch_ms = 0, scratch_c = scratch ? scratch_cost(snap, cat, &scratch_ms) : 0;
    int64_t t0 = tlr_mono_ms();
    ds_view *v;
    ds_view_build(snap, cat, NULL, NOW, &v);
    double view_ms = ms_since(t0);
    wire w = { cat, 0 };
    ds_solver_ops ops = { w_simulate, &w };
    printf("\n== %d nodes (%s, $%.3f/h each), %zu pods, cost $%.2f/h\n", n, TYPE, price, npods,
           price * n);
    printf("  view          %8.1f ms\n", view_ms);

    /* one probe, reduced and whole */
    const char *one[1] = { v->nodes[2].node->name };
    for (int whole = 0; whole < 2; whole++) {
        ds_sim s = { .v = v, .solver = ops, .no_reduce = whole };
        ds_sim_result r;
        t0 = tlr_mono_ms();
        ds_sim_run(&s, one, 1, true, 1, &r);
        double ms = ms_since(t0);
        printf("  probe %-7s %8.1f ms  %9zu request bytes  %5zu nodes sent  feasible=%d\n",
               whole ? "whole" : "reduced", ms, w.bytes, r.sent_nodes, r.feasible);
        ds_sim_result_clear(&s, &r);
    }
    int maxes[2] = { 100, n };
    for (int k = 0; k < 2; k++) {
        ds_budgets b;
        ds_budgets_compute(v, &b);
        ds_sim s = { .v = v, .solver = ops };
        unsigned seq = 0;
        ds_mctx m = { .v = v, .b = &b, .sim = &s, .min_savings = 0.1, .max_candidates = maxes[k],
                      .seq = &seq };
        ds_vnode **cands = NULL;
        size_t nc = ds_consolidation_candidates(&m, &cands);
        free(cands);
        t0 = tlr_mono_ms();
        ds_cmd *c = ds_consolidation_decide(&m);
        double ms = ms_since(t0);
        printf("  decide-%-5s %8.1f ms  %3d Simulates (%.1f ms in them)  %zu candidates  -> %s %zu nodes, "
               "saves $%.2f/h\n",
               k ? "all" : "100", ms, s.calls, s.ms, nc, c ? ds_method_name(c->method) : "nothing",
               c ? c->n : 0, c ? c->savings : 0.0);
        if (k == 1 && scratch) {
            double after = price * n - (c ? c->savings : 0);
            printf("  after         $%.2f/h  from scratch $%.2f/h (solve %.0f ms)  after/scratch %.3f\n",
                   after, scratch_c, scratch_ms, scratch_c > 0 ? after / scratch_c : 0);
        }
        ds_cmd_free(c);
        ds_budgets_clear(&b);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("  peak RSS      %ld MiB\n", ru.ru_maxrss / 1024);
    ds_view_free(v);
    return scratch_c;
}

/* The disruptor pass after pass on an n-node cluster until a pass decides
 * nothing; scratch_c: the from-scratch plan's cost (<= 0: compute it). */
static void converge(int n, const Tailor__V1__Catalog *cat, const char *budget, double scratch_c,
                     int max_passes)
{
    const Tailor__V1__InstanceType *it = ds_catalog_type(cat, TYPE);
    size_t npods;
    Tailor__V1__SnapshotResponse *snap = cluster(n, it, budget, &npods);
    for (size_t i = 0; i < snap->cluster->n_nodes; i++) {   /* as the view prices them */
        Tailor__V1__Node *nd = snap->cluster->nodes[i];
        nd->price_per_hour = ds_catalog_price(cat, nd->instance_type, nd->zone, nd->capacity_type);
    }
    double scratch_ms = 0;
    if (scratch_c <= 0)
        scratch_c = scratch_cost(snap, cat, &scratch_ms);
    wire w = { cat, 0 };
    ds_solver_ops ops = { w_simulate, &w };
    static const struct {
        const char *name;
        ds_cmd *(*decide)(ds_mctx *);
    } methods[] = {   /* the controller's voluntary methods, in its order */
        { "emptiness", ds_emptiness_decide },
        { "drift", ds_drift_decide },
        { "consolidation", ds_consolidation_decide },
    };
    unsigned seq = 0;
    int launch_seq = 0, passes = 0;
    int64_t now = NOW;
    size_t deleted = 0, launched = 0, moved = 0;
    double total_ms = 0, slowest = 0, final_ms = -1, cost = cluster_cost(snap->cluster);
    bool stuck = false;
    printf("\n== converge: %d nodes, %zu pods, cost $%.2f/h, from scratch $%.2f/h (%.3fx)\n", n,
           npods, cost, scratch_c, scratch_c > 0 ? cost / scratch_c : 0);
    printf("  %4s  %-22s %7s %8s %7s %10s %8s %9s %5s  %s\n", "pass", "decision", "deleted",
           "launched", "moved", "$/h after", "/scratch", "decide ms", "sims", "launched types");
    for (int pass = 1; pass <= max_passes; pass++) {
        ds_view *v;
        ds_view_build(snap, cat, NULL, now, &v);
        snap = NULL;
        ds_budgets b;
        ds_budgets_compute(v, &b);
        ds_sim s = { .v = v, .solver = ops };
        ds_mctx m = { .v = v, .b = &b, .sim = &s, .min_savings = 0.1, .max_candidates = 100,
                      .seq = &seq };
        ds_cmd *c = NULL;
        int64_t t0 = tlr_mono_ms();
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]) && !c; i++)
            c = methods[i].decide(&m);
        double ms = ms_since(t0);
        int sims = s.calls;
        total_ms += ms;
        slowest = ms > slowest ? ms : slowest;
        conv_step st = { 0 };
        if (c && !apply(v, &s, c, cat, now, &launch_seq, &st))
            stuck = true;
        if (c && !stuck) {
            passes++;
            deleted += c->n;
            launched += st.launched;
            moved += st.moved;
            cost = cluster_cost(v->cs);
            char kind[48];
            snprintf(kind, sizeof(kind), "%s %zu->%zu", ds_method_name(c->method), c->n, c->nrepl);
            printf("  %4d  %-22s %7zu %8zu %7zu %10.2f %8.3f %9.1f %5d  %s\n", pass, kind, c->n,
                   st.launched, st.moved, cost, scratch_c > 0 ? cost / scratch_c : 0, ms, sims,
                   st.launched_types);
        } else if (!c) {
            final_ms = ms;
            printf("  %4d  %-22s %7s %8s %7s %10.2f %8.3f %9.1f %5d  (multi-node %lld ms, single-node "
                   "%lld ms, %d candidates screened out%s)\n", pass, "nothing", "-", "-", "-", cost,
                   scratch_c > 0 ? cost / scratch_c : 0, ms, sims, (long long)m.multi_ms,
                   (long long)m.single_ms, m.single_screened,
                   m.single_timed_out ? ", stopped at its 5 s budget" : "");
        }
        fflush(stdout);
        ds_cmd_free(c);
        ds_budgets_clear(&b);
        snap = v->snap;   /* the cluster as the decision left it */
        v->snap = NULL;
        ds_view_free(v);
        now += PASS_MS;
        if (!c || stuck)
            break;
    }
    printf("  summary %d nodes: %d passes, %zu nodes touched (%zu deleted, %zu launched), %zu pods "
           "moved, $%.2f/h = %.3fx scratch, %.0f ms deciding, slowest decision %.0f ms%s\n",
           n, passes, deleted + launched, deleted, launched, moved, cost,
           scratch_c > 0 ? cost / scratch_c : 0, total_ms, slowest,
           stuck ? " (stopped: a decision could not be carried out)"
                 : passes == max_passes ? " (stopped at --max-passes)" : "");
    /* the goal (issue 16): every pass, the last one that finds nothing
     * included, under a second */
    printf("  passes %d nodes: slowest %.0f ms = %.2fx the %d ms goal (%s), final pass %s%.0f ms\n", n,
           slowest, slowest / GOAL_MS, GOAL_MS, slowest < GOAL_MS ? "met" : "MISSED",
           final_ms < 0 ? "(none: stopped before) " : "", final_ms < 0 ? 0 : final_ms);
    /* what is left, by type: count, cpu requested / allocatable */
    const Tailor__V1__ClusterState *cs = snap->cluster;
    printf("  left:");
    bool *done = tlr_calloc(cs->n_nodes + 1, sizeof(*done));
    for (size_t i = 0; i < cs->n_nodes; i++) {
        if (done[i])
            continue;
        size_t cnt = 0;
        int64_t req = 0, al = 0;
        for (size_t j = i; j < cs->n_nodes; j++)
            if (!done[j] && !strcmp(cs->nodes[j]->instance_type, cs->nodes[i]->instance_type)) {
                done[j] = true;
                cnt++;
                req += cs->nodes[j]->requested->cpu_millis;
                al += cs->nodes[j]->allocatable->cpu_millis;
            }
        printf(" %zu %s (cpu %.0f%%)", cnt, cs->nodes[i]->instance_type, al ? 100.0 * (double)req / (double)al : 0);
    }
    printf("\n");
    free(done);
    protobuf_c_message_free_unpacked(&snap->base, NULL);
}

int main(int argc, char **argv)
{
    const char *data = getenv("TAILOR_SHARED_DATA");
    char sizes[256] = "500,2000,5000";
    bool scratch = true, figures = true, conv = true;
    int max_passes = 1000;
    const char *budget = "100%";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            snprintf(sizes, sizeof(sizes), "%s", argv[++i]);
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            snprintf(sizes, sizeof(sizes), "200");
        else if (!strcmp(argv[i], "--no-scratch"))
            scratch = false;
        else if (!strcmp(argv[i], "--converge"))
            figures = false;
        else if (!strcmp(argv[i], "--no-converge"))
            conv = false;
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
            budget = argv[++i];
        else if (!strcmp(argv[i], "--max-passes") && i + 1 < argc)
            max_passes = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench-disruptor [--nodes N[,N...]] [--data DIR] [--quick] "
                            "[--no-scratch] [--converge | --no-converge] [--max-passes N] "
                            "[--budget NODES]\n");
            return 2;
        }
    }
    char path[1024];
    snprintf(path, sizeof(path), "%s/aws-instance-types.json", data ? data : "../shared/data");
    const char *const zones[] = { "us-east-1a", "us-east-1b", "us-east-1c" };
    tlr_catalog_file_opts co = { "us-east-1", zones, 3, 0, "file", NULL, true };   /* on-demand */
    Tailor__V1__Catalog *cat = NULL;
    char err[512];
    if (tlr_catalog_file_load(path, &co, &cat, err, sizeof(err)) != TLR_OK) {
        fprintf(stderr, "bench-disruptor: %s: %s\n", path, err);
        return 1;
    }
    if (!ds_catalog_type(cat, TYPE)) {
        fprintf(stderr, "bench-disruptor: the catalog has no %s\n", TYPE);
        return 1;
    }
    printf("bench-disruptor: consolidation decisions on the %zu-type catalog (%s)\n",
           cat->n_instance_types, path);
    for (char *tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
        int n = atoi(tok);
        if (n < 3)
            continue;
        double scratch_c = figures ? run(n, cat, budget, scratch) : 0;
        if (conv)
            converge(n, cat, budget, scratch_c, max_passes);
    }
    tlr_catalog_free(cat);
    return 0;
}
