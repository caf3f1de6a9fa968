/* lower_bound_test.c - tlr_solve_lower_bound on hand-computed cases.
 *
 * Each case builds a small request and states the LP optimum worked out by
 * hand in its comment; the bound must equal it (the LP is solved to
 * optimality on such small inputs) and must never exceed it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plancheck_testkit.h"
#include "tlr_err.h"
#include "tlr_solve.h"

static void add_pods(Tailor__V1__SolveRequest *req, const char *prefix, int n, int64_t cpu,
                     int64_t mem, int64_t gpu)
{
    for (int i = 0; i < n; i++) {
        char uid[64];
        snprintf(uid, sizeof(uid), "%s-%d", prefix, i);
        kit_add_pod(req, kit_pod(uid, cpu, mem, gpu));
    }
}

/* One type, 4 cpu / 16 GiB at $0.20; 10 pods of 1 cpu / 1 GiB: cpu binds,
 * 10/4 = 2.5 machines -> $0.50. */
static void one_type(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("t4", 4000, 16384, 110, 0, 0.20));
    add_pods(req, "p", 10, 1000, 1024, 0);
}

/* Mixing is cheaper: C = 8 cpu / 8 GiB $0.40, M = 2 cpu / 32 GiB $0.40.
 * A: 16 x (1 cpu, 1 GiB); B: 4 x (0.25 cpu, 15 GiB) - B fits only M.
 * With a_M pods of A on M: x_C = (16 - a_M)/8, x_M = max((a_M + 1)/2,
 * (a_M + 60)/32).  The cost falls while memory binds on M and rises once
 * cpu does; the kink is a_M = 44/15, x_M = 59/30, x_C = 49/30, total 3.6
 * machines = $1.44.  Only M would cost 8.5 x 0.40 = $3.40; C alone cannot
 * hold B. */
static void mixing(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("c", 8000, 8192, 110, 0, 0.40));
    kit_add_type(req, kit_type("m", 2000, 32768, 110, 0, 0.40));
    add_pods(req, "a", 16, 1000, 1024, 0);
    add_pods(req, "b", 4, 250, 15360, 0);
}

/* GPU pods can use only the GPU type: cpu 16c/64G $0.50, gpu 8c/32G/1 GPU
 * $3.00.  2 GPU pods (1c, 4G, 1 GPU) force 2 GPU machines ($6), whose
 * spare 14c/56G take 14 of the 16 cpu pods (1c, 4G); the last 2 need
 * 2/16 of a cpu machine ($0.0625).  Total $6.0625. */
static void gpu_only(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("cpu16", 16000, 65536, 110, 0, 0.50));
    kit_add_type(req, kit_type("gpu8", 8000, 32768, 110, 1, 3.00));
    add_pods(req, "g", 2, 1000, 4096, 1);
    add_pods(req, "c", 16, 1000, 4096, 0);
}

/* Shapes that complement each other on one type (4c / 4G, $1): A = 4 x
 * (0.9c, 0.1G), B = 4 x (0.1c, 0.9G).  Together they fill exactly one
 * machine: $1.00.  Bounding each group on its own would claim 0.9 + 0.9 =
 * $1.80, above the true optimum - the bound must not do that. */
static void complementary(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("t", 4000, 4096, 110, 0, 1.00));
    add_pods(req, "a", 4, 900, 102, 0);
    add_pods(req, "b", 4, 100, 922, 0);
}

/* Free capacity: an existing node has 4c / 16G free; 8 pods of 1c / 1G;
 * type 4c / 16G at $1: half the pods ride free, the rest need 1 machine. */
static void existing_capacity(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("t", 4000, 16384, 110, 0, 1.00));
    add_pods(req, "p", 8, 1000, 1024, 0);
    Tailor__V1__Node *n = kit_node("n1", kit_res(8000, 32768, 110, 0),
                                   kit_res(4000, 16384, 5, 0));
    KIT_PUSH(req->cluster->nodes, req->cluster->n_nodes, n);
}

/* Hostname self-anti-affinity: 3 pods of 0.1c must each have their own
 * node: 3 machines at $1 (without the slot dimension it would be $0.075). */
static void anti_affinity(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("t", 4000, 16384, 110, 0, 1.00));
    for (int i = 0; i < 3; i++) {
        char uid[16];
        snprintf(uid, sizeof(uid), "w-%d", i);
        Tailor__V1__Pod *p = kit_pod(uid, 100, 128, 0);
        KIT_PUSH(p->labels, p->n_labels, kit_label("app", "web"));
        p->pod_anti_affinity = kit_affinity(kit_term("kubernetes.io/hostname", "web"));
        kit_add_pod(req, p);
    }
}

/* DaemonSet overhead: 4c type at $1 with a 1c DaemonSet leaves 3c; six 1c
 * pods need 2 machines: $2. */
static void daemonset(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("t", 4000, 16384, 110, 0, 1.00));
    add_pods(req, "p", 6, 1000, 512, 0);
    KIT_PUSH(req->cluster->daemonsets, req->cluster->n_daemonsets,
             kit_daemonset("ds", 1000, 128));
}

/* A tainted pool and pods without the toleration: nothing can be bought
 * for them, so nothing new costs anything: $0. */
static void taint_blocks(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("t", 4000, 16384, 110, 0, 1.00));
    Tailor__V1__NodePool *pool = req->cluster->nodepools[0];
    KIT_PUSH(pool->taints, pool->n_taints, kit_taint("gpu", "true"));
    add_pods(req, "p", 4, 1000, 512, 0);
}

/* The same with the toleration: 4c of pods on a 4c type: $1. */
static void taint_tolerated(Tailor__V1__SolveRequest *req)
{
    taint_blocks(req);
    for (size_t i = 0; i < req->n_pending_pods; i++) {
        Tailor__V1__Pod *p = req->pending_pods[i];
        KIT_PUSH(p->tolerations, p->n_tolerations, kit_toleration("gpu", "true"));
    }
}

/* Offerings: the cheapest offering is in the ICE cache, so the next one
 * prices the type: 2 pods of 2c on a 4c type: 1 machine at $0.70. */
static void ice_cache(Tailor__V1__SolveRequest *req)
{
    Tailor__V1__InstanceType *t = kit_type("t", 4000, 16384, 110, 0, 1.00);
    kit_offer(t, "zone-b", KIT_SPOT, 0.30);
    kit_offer(t, "zone-c", KIT_SPOT, 0.70);
    kit_add_type(req, t);
    add_pods(req, "p", 2, 2000, 512, 0);
    Tailor__V1__OfferingUnavailable *u = tlr_malloc(sizeof(*u));
    tailor__v1__offering_unavailable__init(u);
    u->instance_type = tlr_strdup("t");
    u->zone = tlr_strdup("zone-b");
    u->capacity_type = KIT_SPOT;
    u->until_unix_ms = 2000;
    req->now_unix_ms = 1000;
    KIT_PUSH(req->unavailable_offerings, req->n_unavailable_offerings, u);
}

/* Node selector: pods ask for arch arm64; only the $2 arm type qualifies
 * (the $1 amd64 type has the same size): 4c of pods -> $2. */
static void node_selector(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("amd", 4000, 16384, 110, 0, 1.00));
    Tailor__V1__InstanceType *arm = kit_type("arm", 4000, 16384, 110, 0, 2.00);
    free(arm->arch);
    arm->arch = tlr_strdup("arm64");
    kit_add_type(req, arm);
    add_pods(req, "p", 4, 1000, 512, 0);
    for (size_t i = 0; i < req->n_pending_pods; i++) {
        Tailor__V1__Pod *p = req->pending_pods[i];
        KIT_PUSH(p->node_selector, p->n_node_selector, kit_label("kubernetes.io/arch", "arm64"));
    }
}

/* No pending pods: $0. */
static void nothing(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("t", 4000, 16384, 110, 0, 1.00));
}

typedef struct lbcase {
    const char *name;
    void (*build)(Tailor__V1__SolveRequest *req);
    double want;
} lbcase;

static const lbcase cases[] = {
    {"one type", one_type, 0.50},
    {"two types, mixing cheaper", mixing, 1.44},
    {"gpu groups restricted to gpu types", gpu_only, 6.0625},
    {"complementary shapes share a node", complementary, 1.00},
    {"existing free capacity", existing_capacity, 1.00},
    {"hostname anti-affinity", anti_affinity, 3.00},
    {"daemonset overhead", daemonset, 2.00},
    {"taint not tolerated", taint_blocks, 0.00},
    {"taint tolerated", taint_tolerated, 1.00},
    {"ICE cache skips the cheapest offering", ice_cache, 0.70},
    {"node selector arm64", node_selector, 2.00},
    {"no pending pods", nothing, 0.00},
};

static void test_table(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__SolveRequest *req = kit_request();
        cases[i].build(req);
        double got = -1;
        int rc = tlr_solve_lower_bound(req, &got);
        if (rc != TLR_OK || fabs(got - cases[i].want) > 1e-6 * (1 + cases[i].want) ||
            got > cases[i].want * (1 + 1e-12)) {
            printf("case '%s': got rc=%d bound=%.9f, want %.9f\n", cases[i].name, rc, got,
                   cases[i].want);
            failed++;
        }
        tailor__v1__solve_request__free_unpacked(req, NULL);
    }
    assert_int_equal(failed, 0);
}

/* Pods planned on an in-flight claim are already covered. */
static void test_inflight_planned_pods_excluded(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = kit_request();
    one_type(req);   /* $0.50 for 10 pods */
    Tailor__V1__NodeClaim *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_claim__init(nc);
    nc->name = tlr_strdup("inflight");
    for (int i = 0; i < 6; i++) {
        char uid[16];
        snprintf(uid, sizeof(uid), "p-%d", i);
        KIT_PUSH(nc->planned_pod_uids, nc->n_planned_pod_uids, tlr_strdup(uid));
    }
    KIT_PUSH(req->cluster->nodeclaims, req->cluster->n_nodeclaims, nc);
    double got = -1;
    assert_int_equal(tlr_solve_lower_bound(req, &got), TLR_OK);
    /* 4 remaining pods of 1c on a 4c type at $0.20. */
    if (fabs(got - 0.20) > 1e-6)
        printf("got %.9f, want 0.2\n", got);
    assert_true(fabs(got - 0.20) <= 1e-6);
    tailor__v1__solve_request__free_unpacked(req, NULL);
}

/* Integrality: 6 pods of 1.5 cpu on a 4-cpu type at $1.  The relaxation
 * packs 2.67 pods a node ($2.25); whole pods fit 2 a node: $3.00. */
static void whole_pods(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("t4", 4000, 16384, 110, 0, 1.00));
    add_pods(req, "p", 6, 1500, 1024, 0);
}

/* 12 GPU pods of 13 cpu / 1 GPU; g: 48 cpu, 4 GPUs, $4; s: 16 cpu, 1 GPU,
 * $1.50.  Fractionally g holds 48/13 = 3.69 pods ($1.083 a pod): $13.00.
 * Whole pods: 3 on g ($1.333 a pod), 1 on s ($1.50): 4 g nodes, $16.00. */
static void gpu_whole(Tailor__V1__SolveRequest *req)
{
    kit_add_type(req, kit_type("g", 48000, 196608, 110, 4, 4.00));
    kit_add_type(req, kit_type("s", 16000, 65536, 110, 1, 1.50));
    add_pods(req, "p", 12, 13000, 1024, 1);
}

/* The tight bound: the configuration LP's optimum where it differs, and
 * everywhere at least the relaxation and at most what a plan costs. */
static void test_tight(void **state)
{
    (void)state;
    static const lbcase tight[] = {
        {"whole pods", whole_pods, 3.00},
        {"gpu whole pods", gpu_whole, 16.00},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(tight) / sizeof(tight[0]); i++) {
        Tailor__V1__SolveRequest *req = kit_request();
        tight[i].build(req);
        double frac = -1, got = -1;
        assert_int_equal(tlr_solve_lower_bound(req, &frac), TLR_OK);
        int rc = tlr_solve_lower_bound_tight(req, &got);
        if (rc != TLR_OK || fabs(got - tight[i].want) > 1e-6 * (1 + tight[i].want) || !(frac < got)) {
            printf("case '%s': got rc=%d tight=%.9f (relaxation %.9f), want %.9f\n", tight[i].name, rc, got,
                   frac, tight[i].want);
            failed++;
        }
        tailor__v1__solve_request__free_unpacked(req, NULL);
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__SolveRequest *req = kit_request();
        cases[i].build(req);
        double got = -1;
        Tailor__V1__SolveResponse *plan = NULL;
        tlr_solve_opts o = {.no_lower_bound = true};
        int rc = tlr_solve_lower_bound_tight(req, &got);
        assert_int_equal(tlr_solve(req, &o, &plan), TLR_OK);
        if (rc != TLR_OK || got < cases[i].want * (1 - 1e-6) - 1e-9 ||
            (plan->n_pod_errors == 0 && got > plan->total_cost_per_hour * (1 + 1e-9) + 1e-9)) {
            printf("case '%s': tight %.9f, relaxation %.9f, plan %.9f\n", cases[i].name, got, cases[i].want,
                   plan->total_cost_per_hour);
            failed++;
        }
        tlr_solve_response_free(plan);
        tailor__v1__solve_request__free_unpacked(req, NULL);
    }
    assert_int_equal(failed, 0);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    double v = 42;
    assert_int_equal(tlr_solve_lower_bound(NULL, &v), TLR_E_INVAL);
    assert_int_equal(tlr_solve_lower_bound_tight(NULL, &v), TLR_E_INVAL);
    assert_true(v == 42);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_inflight_planned_pods_excluded),
        cmocka_unit_test(test_tight),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
