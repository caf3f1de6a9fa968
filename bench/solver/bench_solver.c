/* bench_solver.c - bench-solver: speed and cost of the solver engine.
 *
 * Not a test: it prints figures and ratios.  For every case it runs the
 * Karpenter-style baseline (TLR_SOLVE_KARPENTER), tailor's greedy alone
 * ("greedy": TLR_SOLVE_TAILOR without the LP-guided plan) and tailor
 * (TLR_SOLVE_TAILOR) on the same request and prints, per strategy: pods,
 * pods placed, new nodes, cost $/h, the lower bound (tlr_solve_lower_bound
 * over the pods the plan placed), cost/bound, solve time, pods/s, and the
 * number of violations tlr_plan_check finds; then tailor/baseline cost.
 * "ffd" is first-fit decreasing alone (TLR_SOLVE_FFD), the simple packer
 * tailor must never lose to: tailor/ffd cost is printed too, and a case
 * where tailor costs more than ffd (by more than 1e-6 relative) makes the
 * program exit 1, as an invalid plan does.
 * For every case where tailor placed every pod it also prints the
 * configuration LP's certified bound (tlr_solve_lower_bound_tight) and
 * tailor's and the baseline's cost over it: the honest yardstick, tighter
 * than the relaxation, but seconds to minutes on thousands of diverse
 * pods, so it runs in a child process killed after --bound-cap seconds
 * (default 20, 2 with --quick; 0 = never), printing "tight bound:
 * skipped (>Ns)" instead.  Any invalid plan makes the program exit 1.
 * Peak RSS (ru_maxrss) is printed after each case.
 *
 * Cases:
 *   karpenter-diverse-N  Karpenter's scheduling_benchmark_test.go shapes:
 *                        400 synthetic types (type i: i+1 vCPU, 2(i+1)
 *                        GiB, 10(i+1) pods; offerings test-zone-1/2 x
 *                        on-demand/spot; on-demand price = Karpenter's fake
 *                        PriceFromResources 0.1/vCPU + 0.1/GB, spot 30%
 *                        cheaper), pods cpu {100,250,500,1000,1500}m x
 *                        memory {100,256,512,1024,2048,4096}Mi, 1/5 each
 *                        generic, zone spread, hostname spread, zone pod
 *                        affinity, hostname anti-affinity (as Karpenter's
 *                        makeDiversePods, with a fixed-seed PRNG).
 *   karpenter-generic-N  the same catalog, generic pods only.
 *   alibaba-gpu          the real catalog (../shared/data/aws-instance-
 *                        types.json, us-east-1 on-demand, zones a/b/c) and
 *                        the real trace (workload-alibaba-gpu2023.csv):
 *                        GPUs as whole nvidia.com/gpu, shared GPUs
 *                        (gpu_milli < 1000) rounded up to 1.
 *   alibaba-cpu          the same trace with GPU requests dropped.
 * Cluster-like cases the solver was not developed on (cases.c: the real
 * catalog, us-east-1 zones a/b/c, spot priced at 28-55 % of on-demand
 * per type and zone; DaemonSets; fixed-seed PRNG):
 *   zonespread-N         ten services, zone spreads (maxSkew 1 and 2,
 *                        minDomains, matchLabelKeys pod-template-hash, one
 *                        limited to two zones by node affinity,
 *                        ScheduleAnyway) and hostname spreads; N = 110,
 *                        1000.
 *   statefulsets-N       seven StatefulSets with required hostname anti-
 *                        affinity and zone spread beside Deployments;
 *                        N = 200, 1000.
 *   mix20-N              20 Deployments, replicas Zipf (1/rank^2), cpu-
 *                        heavy, balanced and memory-heavy shapes, spot and
 *                        on-demand; N = 2000 (200 with --quick).
 *   gpu-cpu-pools        a tainted GPU pool (g4dn/g5/g6, GPU and CPU
 *                        limits, weight 10), an on-demand pool (weight 50,
 *                        CPU limit) and a spot+on-demand pool (weight 20);
 *                        GPU pods with tolerations and GPU-model
 *                        selectors, CPU pods, spot-only batch (442 pods).
 * --quick runs small sizes only (the ctest smoke run); --case PREFIX runs
 * the cases whose name starts with PREFIX; --data DIR points
 * at the shared data (default $TAILOR_SHARED_DATA, else ../shared/data);
 * --strategy tailor|baseline|ffd runs one strategy only (for profiling);
 * --repeat N times each solve N times and prints the fastest;
 * --bound-cap SECONDS caps the tight bound (above).
 */
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_plancheck.h"
#include "tlr_solve.h"

#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)
#define PUSH(arr, n, x)                                         \
    do {                                                        \
        (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr))); \
        (arr)[(n)++] = (x);                                     \
    } while (0)

/* ---- tiny builders ------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

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

static void add_gpu(Tailor__V1__ResourceList *r, int64_t n)
{
    Tailor__V1__ExtendedResource *e = tlr_malloc(sizeof(*e));
    tailor__v1__extended_resource__init(e);
    e->name = tlr_strdup("nvidia.com/gpu");
    e->value = n;
    PUSH(r->extended, r->n_extended, e);
}

static Tailor__V1__LabelSelector *selector(const char *k, const char *v)
{
    Tailor__V1__LabelSelector *s = tlr_malloc(sizeof(*s));
    tailor__v1__label_selector__init(s);
    PUSH(s->match_labels, s->n_match_labels, label(k, v));
    return s;
}

static Tailor__V1__PodAffinity *affinity(const char *key, const char *k, const char *v)
{
    Tailor__V1__PodAffinityTerm *t = tlr_malloc(sizeof(*t));
    tailor__v1__pod_affinity_term__init(t);
    t->topology_key = tlr_strdup(key);
    t->label_selector = selector(k, v);
    Tailor__V1__PodAffinity *a = tlr_malloc(sizeof(*a));
    tailor__v1__pod_affinity__init(a);
    PUSH(a->required, a->n_required, t);
    return a;
}

static Tailor__V1__Pod *pod(const char *uid, int64_t cpu, int64_t mem)
{
    Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
    tailor__v1__pod__init(p);
    p->uid = tlr_strdup(uid);
    p->namespace_ = tlr_strdup("default");
    p->name = tlr_strdup(uid);
    p->requests = res(cpu, mem, 1);
    p->phase = TAILOR__V1__POD_PHASE__POD_PHASE_PENDING;
    p->unschedulable = 1;
    return p;
}

/* A request with one NodePool "default" using node class "default". */
static Tailor__V1__SolveRequest *request(Tailor__V1__Catalog *cat)
{
    Tailor__V1__SolveRequest *req = tlr_malloc(sizeof(*req));
    tailor__v1__solve_request__init(req);
    req->cluster = tlr_malloc(sizeof(*req->cluster));
    tailor__v1__cluster_state__init(req->cluster);
    req->cluster->synced = 1;
    Tailor__V1__NodePool *np = tlr_malloc(sizeof(*np));
    tailor__v1__node_pool__init(np);
    np->name = tlr_strdup("default");
    np->weight = 0;
    np->node_class_ref = tlr_malloc(sizeof(*np->node_class_ref));
    tailor__v1__node_class_ref__init(np->node_class_ref);
    np->node_class_ref->name = tlr_strdup("default");
    PUSH(req->cluster->nodepools, req->cluster->n_nodepools, np);
    Tailor__V1__CatalogRef *ref = tlr_malloc(sizeof(*ref));
    tailor__v1__catalog_ref__init(ref);
    ref->hash = tlr_strdup(cat->hash);
    ref->catalog = cat;   /* handed over: freed with the request */
    PUSH(ref->node_classes, ref->n_node_classes, tlr_strdup("default"));
    PUSH(req->catalogs, req->n_catalogs, ref);
    req->now_unix_ms = 1700000000000;
    return req;
}

/* ---- Karpenter's benchmark shapes ---------------------------------------- */

static Tailor__V1__Catalog *synthetic_catalog(void)
{
    Tailor__V1__Catalog *c = tlr_malloc(sizeof(*c));
    tailor__v1__catalog__init(c);
    c->hash = tlr_strdup("karpenter-fake-400");
    c->region = tlr_strdup("test");
    for (int i = 0; i < 400; i++) {
        Tailor__V1__InstanceType *t = tlr_malloc(sizeof(*t));
        tailor__v1__instance_type__init(t);
        char name[32];
        snprintf(name, sizeof(name), "fake-it-%03d", i);
        t->name = tlr_strdup(name);
        t->arch = tlr_strdup("amd64");
        PUSH(t->operating_systems, t->n_operating_systems, tlr_strdup("linux"));
        t->vcpu = i + 1;
        t->memory_mib = 2048LL * (i + 1);
        t->max_pods = 10 * (i + 1);
        t->allocatable = res(1000LL * (i + 1), 2 * GIB * (i + 1), 10 * (i + 1));
        t->capacity = res(1000LL * (i + 1), 2 * GIB * (i + 1), 10 * (i + 1));
        Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
        tailor__v1__node_selector_requirement__init(r);
        r->key = tlr_strdup("node.kubernetes.io/instance-type");
        r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
        PUSH(r->values, r->n_values, tlr_strdup(name));
        PUSH(t->requirements, t->n_requirements, r);
        double od = 0.1 * (i + 1) + 0.1 * (2.0 * GIB * (i + 1)) / 1e9;
        for (int z = 0; z < 2; z++) {
            for (int spot = 0; spot < 2; spot++) {
                Tailor__V1__Offering *o = tlr_malloc(sizeof(*o));
                tailor__v1__offering__init(o);
                o->zone = tlr_strdup(z ? "test-zone-2" : "test-zone-1");
                o->capacity_type = spot ? TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
                                        : TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
                o->price_per_hour = spot ? od * 0.7 : od;
                o->available = 1;
                PUSH(t->offerings, t->n_offerings, o);
            }
        }
        PUSH(c->instance_types, c->n_instance_types, t);
    }
    return c;
}

static const char *const label_values[] = {"a", "b", "c", "d", "e", "f", "g"};

static Tailor__V1__Pod *karpenter_pod(uint64_t *rng, size_t idx, int kind)
{
    static const int cpus[] = {100, 250, 500, 1000, 1500};
    static const int mems[] = {100, 256, 512, 1024, 2048, 4096};
    char uid[32];
    snprintf(uid, sizeof(uid), "pod-%06zu", idx);
    /* Karpenter draws the labels before the resources. */
    const char *l1 = label_values[rng_next(rng) % 7];
    const char *l2 = label_values[rng_next(rng) % 7];
    int64_t cpu = cpus[rng_next(rng) % 5];
    int64_t mem = mems[rng_next(rng) % 6] * MIB;
    Tailor__V1__Pod *p = pod(uid, cpu, mem);
    switch (kind) {
    case 1: case 2: {   /* topology spread, zone / hostname */
        PUSH(p->labels, p->n_labels, label("my-label", l1));
        Tailor__V1__TopologySpreadConstraint *c = tlr_malloc(sizeof(*c));
        tailor__v1__topology_spread_constraint__init(c);
        c->max_skew = 1;
        c->topology_key = tlr_strdup(kind == 1 ? "topology.kubernetes.io/zone"
                                               : "kubernetes.io/hostname");
        c->when_unsatisfiable =
            TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE;
        c->label_selector = selector("my-label", l2);
        PUSH(p->topology_spread_constraints, p->n_topology_spread_constraints, c);
        break;
    }
    case 3:             /* zone self-affinity */
        PUSH(p->labels, p->n_labels, label("my-affininity", l1));
        p->pod_affinity = affinity("topology.kubernetes.io/zone", "my-affininity", l1);
        break;
    case 4:             /* hostname anti-affinity, all pods against each other */
        PUSH(p->labels, p->n_labels, label("app", "nginx"));
        p->pod_anti_affinity = affinity("kubernetes.io/hostname", "app", "nginx");
        break;
    default:
        break;
    }
    return p;
}

static Tailor__V1__SolveRequest *karpenter_case(size_t n, bool diverse)
{
    Tailor__V1__SolveRequest *req = request(synthetic_catalog());
    uint64_t rng = 42 * 0x9E3779B97F4A7C15ULL;
    size_t per = diverse ? n / 5 : 0, idx = 0;
    for (int kind = 0; kind < 5 && diverse; kind++)
        for (size_t i = 0; i < per; i++, idx++)
            PUSH(req->pending_pods, req->n_pending_pods, karpenter_pod(&rng, idx, kind));
    while (idx < n) {
        PUSH(req->pending_pods, req->n_pending_pods, karpenter_pod(&rng, idx, 0));
        idx++;
    }
    return req;
}

/* ---- the real catalog and trace ------------------------------------------ */

static Tailor__V1__SolveRequest *alibaba_case(const char *data, bool gpus, size_t limit)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/aws-instance-types.json", data);
    Tailor__V1__Catalog *cat = NULL;
    char err[256];
    tlr_catalog_file_opts o = {.price_source = "static:karpenter-2026-07-20", .no_spot = true};
    if (tlr_catalog_file_load(path, &o, &cat, err, sizeof(err)) != TLR_OK) {
        fprintf(stderr, "bench-solver: %s\n", err);
        return NULL;
    }
    snprintf(path, sizeof(path), "%s/workload-alibaba-gpu2023.csv", data);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench-solver: cannot open %s\n", path);
        tlr_catalog_free(cat);
        return NULL;
    }
    Tailor__V1__SolveRequest *req = request(cat);
    char line[1024];
    bool header = true;
    while (fgets(line, sizeof(line), f) && req->n_pending_pods < limit) {
        if (header) {
            header = false;
            continue;
        }
        char name[128];
        long long cpu, mem, ngpu, gmilli;
        if (sscanf(line, "%127[^,],%lld,%lld,%lld,%lld", name, &cpu, &mem, &ngpu, &gmilli) != 5)
            continue;
        Tailor__V1__Pod *p = pod(name, cpu, mem * MIB);
        if (gpus && ngpu > 0)
            add_gpu(p->requests, ngpu);   /* shared (gpu_milli < 1000) = 1 whole GPU */
        PUSH(req->pending_pods, req->n_pending_pods, p);
    }
    fclose(f);
    return req;
}

/* ---- measuring -------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

typedef struct result {
    double cost, bound, secs, lb_secs;
    size_t placed, nodes, errors;
    int violations;
    bool ok;
} result;

/* The bound over the pods the plan placed (tlr_solve_lower_bound_placed),
 * timed. */
static double bound_for_placed(Tailor__V1__SolveRequest *req, const Tailor__V1__SolveResponse *r,
                               double *secs)
{
    double lb = 0, t0 = now_s();
    (void)tlr_solve_lower_bound_placed(req, r, false, &lb);
    *secs = now_s() - t0;
    return lb;
}

/* With TAILOR_BENCH_TYPES set: the plan's new nodes by cheapest option. */
static void print_types(const Tailor__V1__SolveResponse *r)
{
    const char *name[512];
    int count[512];
    double price[512];
    int n = 0;
    for (size_t i = 0; i < r->n_new_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = r->new_nodeclaims[i];
        if (!c->n_instance_type_options)
            continue;
        const char *t = c->instance_type_options[0]->name;
        int k = 0;
        while (k < n && strcmp(name[k], t) != 0)
            k++;
        if (k == n && n < 512) {
            name[n] = t;
            count[n] = 0;
            price[n++] = c->instance_type_options[0]->price_per_hour;
        }
        if (k < n)
            count[k]++;
    }
    for (int k = 0; k < n; k++)
        fprintf(stderr, "  plan %-20s %6d x %8.4f = %9.2f\n", name[k], count[k], price[k],
                count[k] * price[k]);
}

static result run(Tailor__V1__SolveRequest *req, tlr_solve_strategy s, bool print_violations, int repeat,
                  bool greedy)
{
    result out = {0};
    /* The bound is computed (and timed) separately below, over the pods
     * the plan placed; "solve ms" is the plan alone: the fastest of
     * `repeat` solves (the engine is deterministic, so every solve gives
     * the same plan; the minimum filters out a shared machine's noise). */
    tlr_solve_opts o = {.strategy = s, .replica_id = "bench", .no_lower_bound = true, .no_lp_guide = greedy};
    Tailor__V1__SolveResponse *r = NULL;
    int rc = TLR_OK;
    for (int i = 0; i < (repeat > 0 ? repeat : 1); i++) {
        tlr_solve_response_free(r);
        r = NULL;
        double t0 = now_s();
        rc = tlr_solve(req, &o, &r);
        double dt = now_s() - t0;
        if (i == 0 || dt < out.secs)
            out.secs = dt;
        if (rc != TLR_OK)
            break;
    }
    if (rc != TLR_OK || !r) {
        fprintf(stderr, "  tlr_solve failed: %s\n", tlr_strerror(rc));
        tlr_solve_response_free(r);
        return out;
    }
    if (getenv("TAILOR_BENCH_TYPES"))
        print_types(r);
    out.cost = r->total_cost_per_hour;
    out.nodes = r->n_new_nodeclaims;
    out.errors = r->n_pod_errors;
    out.placed = req->n_pending_pods - r->n_pod_errors;
    out.bound = out.errors == 0 || out.errors < req->n_pending_pods
                    ? bound_for_placed(req, r, &out.lb_secs) : 0;
    tlr_buf v;
    tlr_buf_init(&v, 1 << 16);
    out.violations = tlr_plan_check(req, r, &v);
    if (out.violations && print_violations) {
        /* The first few lines are enough to start debugging. */
        const char *txt = tlr_buf_str(&v), *end = txt;
        for (int lines = 0; lines < 8 && *end; lines++) {
            const char *nl = strchr(end, '\n');
            end = nl ? nl + 1 : end + strlen(end);
        }
        fprintf(stderr, "  %s: plan violations (%d), first ones:\n%.*s",
                s == TLR_SOLVE_TAILOR ? "tailor" : s == TLR_SOLVE_FFD ? "ffd" : "baseline", out.violations,
                (int)(end - txt), txt);
    }
    tlr_buf_free(&v);
    out.ok = true;
    tlr_solve_response_free(r);
    return out;
}

/* The steady state of a burst: while its nodes boot, the same pods come
 * again (level-triggered batches) with the plan's claims in flight.  The
 * solve must bind every pod to them and buy nothing. */
static void resolve_in_flight(Tailor__V1__SolveRequest *req, const char *name)
{
    tlr_solve_opts o = {.strategy = TLR_SOLVE_TAILOR, .replica_id = "bench", .no_lower_bound = true};
    Tailor__V1__SolveResponse *r = NULL;
    if (tlr_solve(req, &o, &r) != TLR_OK || !r) {
        tlr_solve_response_free(r);
        return;
    }
    Tailor__V1__ClusterState *cs = req->cluster;
    size_t before = cs->n_nodeclaims;
    cs->nodeclaims = tlr_realloc(cs->nodeclaims, (before + r->n_new_nodeclaims + 1) * sizeof(*cs->nodeclaims));
    for (size_t i = 0; i < r->n_new_nodeclaims; i++) {
        size_t len = tailor__v1__node_claim__get_packed_size(r->new_nodeclaims[i]);
        uint8_t *buf = tlr_malloc(len + 1);
        tailor__v1__node_claim__pack(r->new_nodeclaims[i], buf);
        Tailor__V1__NodeClaim *c = tailor__v1__node_claim__unpack(NULL, len, buf);
        free(buf);
        char n[32];
        snprintf(n, sizeof n, "inflight-%zu", i);
        if (c->name != protobuf_c_empty_string)
            free(c->name);
        c->name = tlr_strdup(n);
        cs->nodeclaims[cs->n_nodeclaims++] = c;
    }
    tlr_solve_response_free(r);
    r = NULL;
    double t0 = now_s();
    int rc = tlr_solve(req, &o, &r);
    double dt = now_s() - t0;
    if (rc == TLR_OK && r)
        printf("%-24s again with its plan in flight (%zu claims): %.1f ms, %zu bound, %zu new claims\n", name,
               cs->n_nodeclaims - before, dt * 1e3, r->n_bindings, r->n_new_nodeclaims);
    tlr_solve_response_free(r);
    for (size_t i = before; i < cs->n_nodeclaims; i++)
        tailor__v1__node_claim__free_unpacked(cs->nodeclaims[i], NULL);
    cs->n_nodeclaims = before;
}

/* The configuration LP's certified bound (tlr_solve_lower_bound_tight) of
 * req, computed in a child process so that a case where it would take
 * longer than cap_s seconds is skipped instead of stalling the run (the
 * call has no deadline of its own).  1: *lb and *secs set; 0: past the
 * cap (child killed); -1: the child failed. */
static int tight_bound_capped(const Tailor__V1__SolveRequest *req, double cap_s, double *lb, double *secs)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    double t0 = now_s();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        double v = 0;
        bool ok = tlr_solve_lower_bound_tight(req, &v) == TLR_OK &&
                  write(fd[1], &v, sizeof(v)) == (ssize_t)sizeof(v);
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    int rc = -1;
    for (;;) {
        int left_ms = (int)((cap_s - (now_s() - t0)) * 1e3);
        struct pollfd p = {.fd = fd[0], .events = POLLIN};
        int n = left_ms > 0 ? poll(&p, 1, left_ms) : 0;
        if (n < 0)
            continue;   /* EINTR */
        if (n == 0) {
            rc = 0;
        } else {
            double v;
            if (read(fd[0], &v, sizeof(v)) == (ssize_t)sizeof(v)) {
                *lb = v;
                rc = 1;
            }
        }
        break;
    }
    *secs = now_s() - t0;
    if (rc != 1)
        kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fd[0]);
    return rc;
}

static void print_row(const char *name, const char *strategy, size_t pods, const result *r)
{
    double ratio = r->bound > 0 ? r->cost / r->bound : NAN;
    printf("%-24s %-9s %7zu %7zu %6zu %11.3f %11.3f %7.4f %9.1f %10.0f %6.1f %5d\n", name,
           strategy, pods, r->placed, r->nodes, r->cost, r->bound, ratio, r->secs * 1e3,
           r->secs > 0 ? pods / r->secs : 0.0, r->lb_secs * 1e3, r->violations);
}

enum { CASE_ZONESPREAD = 3, CASE_STATEFULSETS, CASE_MIX20, CASE_GPU_CPU_POOLS };

typedef struct bench_case {
    const char *name;
    size_t pods;
    bool diverse;
    int real;           /* 0 synthetic, 1 alibaba-gpu, 2 alibaba-cpu, 3.. cases.c (CASE_*) */
    const char *target; /* printed next to the result */
} bench_case;

int main(int argc, char **argv)
{
    bool quick = false;
    const char *only = NULL;
    const char *strategy = NULL;   /* NULL: both */
    int repeat = 1;
    double bound_cap = -1;         /* seconds; < 0: the default below */
    const char *data = getenv("TAILOR_SHARED_DATA");
    if (!data)
        data = "../shared/data";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
            data = argv[++i];
        } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            repeat = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--bound-cap") == 0 && i + 1 < argc && atof(argv[i + 1]) >= 0) {
            bound_cap = atof(argv[++i]);
        } else if (strcmp(argv[i], "--strategy") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "tailor") == 0 || strcmp(argv[i + 1], "baseline") == 0 ||
                    strcmp(argv[i + 1], "ffd") == 0)) {
            strategy = argv[++i];
        } else {
            fprintf(stderr, "usage: bench-solver [--quick] [--case NAME-PREFIX] [--data DIR] "
                            "[--strategy tailor|baseline|ffd] [--repeat N] [--bound-cap SECONDS]\n");
            return 2;
        }
    }
    static const bench_case full[] = {
        {"karpenter-diverse-1", 1, true, 0, NULL},
        {"karpenter-diverse-100", 100, true, 0, NULL},
        {"karpenter-diverse-1000", 1000, true, 0, "Karpenter 0.78 s"},
        {"karpenter-diverse-5000", 5000, true, 0, "Karpenter 3.74 s"},
        {"karpenter-diverse-10000", 10000, true, 0, "Karpenter 8.1 s"},
        {"karpenter-diverse-20000", 20000, true, 0, "target < 0.2 s (Karpenter 20.2 s)"},
        {"karpenter-generic-20000", 20000, false, 0, NULL},
        {"karpenter-generic-100000", 100000, false, 0, "target < 1 s"},
        {"alibaba-gpu", SIZE_MAX, false, 1, "target cost/bound <= 1.02"},
        {"alibaba-cpu", SIZE_MAX, false, 2, "target cost/bound <= 1.02"},
        {"zonespread-110", 110, false, CASE_ZONESPREAD, NULL},
        {"zonespread-1000", 1000, false, CASE_ZONESPREAD, NULL},
        {"statefulsets-200", 200, false, CASE_STATEFULSETS, NULL},
        {"statefulsets-1000", 1000, false, CASE_STATEFULSETS, NULL},
        {"mix20-2000", 2000, false, CASE_MIX20, NULL},
        {"gpu-cpu-pools", 0, false, CASE_GPU_CPU_POOLS, NULL},
    };
    static const bench_case small[] = {
        {"karpenter-diverse-1", 1, true, 0, NULL},
        {"karpenter-diverse-100", 100, true, 0, NULL},
        {"karpenter-generic-500", 500, false, 0, NULL},
        {"alibaba-gpu-300", 300, false, 1, NULL},
        {"zonespread-110", 110, false, CASE_ZONESPREAD, NULL},
        {"statefulsets-200", 200, false, CASE_STATEFULSETS, NULL},
        {"mix20-200", 200, false, CASE_MIX20, NULL},
        {"gpu-cpu-pools", 0, false, CASE_GPU_CPU_POOLS, NULL},
    };
    const bench_case *cases = quick ? small : full;
    size_t n_cases = quick ? sizeof(small) / sizeof(small[0]) : sizeof(full) / sizeof(full[0]);
    if (bound_cap < 0)
        bound_cap = quick ? 2 : 20;

    printf("%-24s %-9s %7s %7s %6s %11s %11s %7s %9s %10s %6s %5s\n", "case", "strategy",
           "pods", "placed", "nodes", "cost$/h", "bound$/h", "c/bound", "solve ms", "pods/s",
           "lb ms", "viol");
    int bad = 0;
    for (size_t c = 0; c < n_cases; c++) {
        const bench_case *bc = &cases[c];
        if (only && strncmp(bc->name, only, strlen(only)) != 0)
            continue;
        fprintf(stderr, "[%zu/%zu] %s: building...\n", c + 1, n_cases, bc->name);
        Tailor__V1__SolveRequest *req =
            bc->real == CASE_ZONESPREAD      ? bench_case_zonespread(data, bc->pods)
            : bc->real == CASE_STATEFULSETS  ? bench_case_statefulsets(data, bc->pods)
            : bc->real == CASE_MIX20         ? bench_case_mix20(data, bc->pods)
            : bc->real == CASE_GPU_CPU_POOLS ? bench_case_gpu_cpu_pools(data)
            : bc->real                       ? alibaba_case(data, bc->real == 1, bc->pods)
                                             : karpenter_case(bc->pods, bc->diverse);
        if (!req) {
            bad++;
            continue;
        }
        fprintf(stderr, "[%zu/%zu] %s: %zu pods, solving (baseline, then tailor)...\n", c + 1,
                n_cases, bc->name, req->n_pending_pods);
        bool want_k = !strategy || strcmp(strategy, "baseline") == 0;
        bool want_t = !strategy || strcmp(strategy, "tailor") == 0;
        bool want_f = !strategy || strcmp(strategy, "ffd") == 0;
        result k = want_k ? run(req, TLR_SOLVE_KARPENTER, true, repeat, false) : (result){.ok = true};
        result f = want_f ? run(req, TLR_SOLVE_FFD, true, repeat, false) : (result){.ok = true};
        result g = want_t ? run(req, TLR_SOLVE_TAILOR, true, repeat, true) : (result){.ok = true};
        result t = want_t ? run(req, TLR_SOLVE_TAILOR, true, repeat, false) : (result){.ok = true};
        if (want_k)
            print_row(bc->name, "baseline", req->n_pending_pods, &k);
        if (want_f)
            print_row(bc->name, "ffd", req->n_pending_pods, &f);
        if (want_t) {
            print_row(bc->name, "greedy", req->n_pending_pods, &g);
            print_row(bc->name, "tailor", req->n_pending_pods, &t);
        }
        if (want_t && !quick && (bc->real || bc->pods >= 20000))
            resolve_in_flight(req, bc->name);
        if (want_t && t.ok && t.errors == 0 && bound_cap > 0) {
            /* The configuration LP's certified bound: tighter, seconds
             * (minutes on the largest cases: capped). */
            double tight = 0, secs = 0;
            int got = tight_bound_capped(req, bound_cap, &tight, &secs);
            /* The baseline's ratio only when it placed the same pods. */
            char kr[64] = "";
            if (want_k && k.ok && k.errors == 0)
                snprintf(kr, sizeof(kr), ", baseline cost/tight %.4f", tight > 0 ? k.cost / tight : NAN);
            if (got == 1)
                printf("%-24s tight bound %.3f (%.1f s): tailor cost/tight %.4f%s, relaxation/tight %.4f\n",
                       bc->name, tight, secs, tight > 0 ? t.cost / tight : NAN, kr,
                       tight > 0 ? t.bound / tight : NAN);
            else if (got == 0)
                printf("%-24s tight bound: skipped (>%.0f s)\n", bc->name, bound_cap);
            else
                printf("%-24s tight bound: failed (%.1f s)\n", bc->name, secs);
        } else if (want_t && t.ok && t.errors > 0) {
            printf("%-24s tight bound: skipped (tailor left %zu pods out)\n", bc->name, t.errors);
        }
        if (!f.ok || f.violations)
            bad++;
        if (want_t && want_f) {
            double rf = f.cost > 0 ? t.cost / f.cost : NAN;
            /* more pods placed may cost more */
            bool dearer = t.placed <= f.placed && t.cost > f.cost * (1 + 1e-6);
            printf("%-24s tailor/ffd cost %.4f%s\n", bc->name, rf, dearer ? "  ** TAILOR DEARER THAN FFD **" : "");
            if (dearer) {
                fprintf(stderr, "%s: tailor's plan (%.3f $/h) costs more than first-fit decreasing's (%.3f $/h)\n",
                        bc->name, t.cost, f.cost);
                bad++;
            }
        }
        if (!want_k || !want_t) {
            fflush(stdout);
            if (!k.ok || !t.ok || !g.ok || k.violations || t.violations || g.violations)
                bad++;
            tailor__v1__solve_request__free_unpacked(req, NULL);
            continue;
        }
        double ratio = k.cost > 0 ? t.cost / k.cost : NAN;
        printf("%-24s tailor/baseline cost %.4f%s  peak RSS %ld MiB%s%s\n", bc->name, ratio,
               ratio > 1 + 1e-9 ? "  ** TAILOR MORE EXPENSIVE **" : "",
               peak_rss_mib(), bc->target ? "  | " : "", bc->target ? bc->target : "");
        if (t.placed < k.placed)
            printf("%-24s ** tailor placed fewer pods (%zu < %zu) **\n", bc->name, t.placed,
                   k.placed);
        fflush(stdout);
        if (!k.ok || !t.ok || !g.ok || k.violations || t.violations || g.violations)
            bad++;
        tailor__v1__solve_request__free_unpacked(req, NULL);
    }
    printf("peak RSS %ld MiB; %s\n", peak_rss_mib(),
           bad ? "SOME PLANS INVALID OR FAILED, OR TAILOR DEARER THAN FFD" : "all plans valid");
    return bad ? 1 : 0;
}
