/* solve_test.c - the solver engine, one constraint at a time.
 *
 * Table-driven: each case builds a small SolveRequest with the testkit
 * (solve_testkit.h), solves it with every strategy (tailor, the baseline
 * and first-fit decreasing honour the same constraints), runs the
 * independent plan checker (tlr_plancheck.h) on the plan, and checks where
 * each named pod went:
 *
 *   "node:N"      bound to existing node N
 *   "inflight:C"  bound to in-flight NodeClaim C
 *   "claim"       on a new claim;  "claim:T" whose cheapest option is T
 *   "same:P"      on the same new claim as pod P;  "diff:P" not with P
 *   "zone:Z"      on a new claim whose zone requirement is exactly Z
 *   "ct:C"        on a new claim whose capacity-type requirement is C
 *   "os:V"        on a new claim whose first kubernetes.io/os requirement
 *                 has exactly the values V (comma joined)
 *   "error:S"     unschedulable, with S in one of its NodePool reasons
 *
 * Every constraint has a case that must place and one that must not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "solve_testkit.h"
#include "tlr_err.h"

typedef struct want {
    const char *pod;
    const char *where;
} want;

#define BOTH 0          /* every strategy */
#define TAILOR_ONLY 1

typedef struct tcase {
    const char *name;
    void (*build)(Tailor__V1__SolveRequest *r);
    want w[8];
    int nclaims;            /* -1: not checked */
    int only;               /* BOTH or TAILOR_ONLY */
} tcase;

/* ---- builders, one per case -------------------------------------------- */

static void b_fit(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod(r, "p1", 1500, 1024);
}

static void b_too_big(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod(r, "big", 64000, 1024);
    tk_pod(r, "small", 100, 64);
}

static void b_gpu(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_rl_ext(tk_type(r, "g.1", 8, 32, 1.0)->allocatable, "nvidia.com/gpu", 1);
    tk_rl_ext(tk_type(r, "g.8", 64, 256, 10.0)->allocatable, "nvidia.com/gpu", 8);
    tk_pool(r, "default", 0);
    tk_pod_ext(tk_pod(r, "one", 1000, 1024), "nvidia.com/gpu", 1);
    tk_pod_ext(tk_pod(r, "eight", 1000, 1024), "nvidia.com/gpu", 8);
    tk_pod_ext(tk_pod(r, "sixteen", 1000, 1024), "nvidia.com/gpu", 16);
    tk_pod(r, "nogpu", 1000, 1024);
}

static void b_ephemeral(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    Tailor__V1__InstanceType *d = tk_type(r, "d.4", 4, 8, 0.30);
    d->allocatable->ephemeral_storage_bytes = 100 * TK_GIB;
    tk_pool(r, "default", 0);
    tk_pod(r, "disk", 500, 512)->requests->ephemeral_storage_bytes = 50 * TK_GIB;
    tk_pod(r, "huge-disk", 500, 512)->requests->ephemeral_storage_bytes = 500 * TK_GIB;
}

static void b_pods_dim(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "n1", "test-1a", 8000, 16);
    n->allocatable->pods = 2;
    tk_node_pod(n, "running", 100, 64);
    tk_pod(r, "a", 100, 64);
    tk_pod(r, "b", 100, 64);
}

static void b_containers(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Pod *p = tk_pod(r, "init", 0, 0);
    tailor__v1__resource_list__free_unpacked(p->requests, NULL);
    p->requests = NULL;
    const int kinds[3] = { TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_REGULAR,
                           TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_INIT,
                           TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_SIDECAR };
    const int64_t cpu[3] = { 1000, 3000, 500 };
    for (int i = 0; i < 3; i++) {
        Tailor__V1__ContainerRequests *c = calloc(1, sizeof(*c));
        tailor__v1__container_requests__init(c);
        c->name = tk_s("c");
        c->kind = kinds[i];
        c->requests = tk_rl(cpu[i], 256 * TK_MIB, 0);
        TK_PUSH(p->containers, p->n_containers, c);
    }
    /* init 3000 (the sidecar starts after it) vs 1000 + 500 -> 3000m: s.4 */
}

static void b_daemonset(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_daemonset(r, "logs", 900, 64);
    tk_pod(r, "p1", 1000, 512);
}

static void b_daemonset_elsewhere(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod_selector(tk_daemonset(r, "gpu-agent", 900, 64), "karpenter.k8s.aws/instance-family", "g");
    tk_pod(r, "p1", 1000, 512);
}

static void b_selector(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_type(r, "big.16", 16, 64, 1.20);
    tk_pool(r, "default", 0);
    tk_pod_selector(tk_pod(r, "fam", 500, 512), "karpenter.k8s.aws/instance-family", "big");
    tk_pod_selector(tk_pod(r, "nolabel", 500, 512), "team", "payments");
    tk_pod_selector(tk_pod(r, "zone", 500, 512), K_ZONE, "test-1b");
}

/* Types whose os label has several values (Karpenter's fake types carry
 * os In [linux, windows, darwin]): a claim narrows it as pods join.  "win"
 * cannot join "lin"'s claim; "notwin" (NotIn [windows], smallest, placed
 * last) can, and "lin2" (In [linux, darwin]) too; "bsd" fits no type. */
static void b_multi_value_label(Tailor__V1__SolveRequest *r)
{
    Tailor__V1__InstanceType *it = tk_type(r, "m.4", 4, 8, 0.20);
    tk_type_label(it, "kubernetes.io/os", "linux,windows,darwin");
    tk_pool(r, "default", 0);
    tk_pod_selector(tk_pod(r, "lin", 1000, 512), "kubernetes.io/os", "linux");
    tk_pod_selector(tk_pod(r, "win", 900, 512), "kubernetes.io/os", "windows");
    tk_pod_affinity(tk_pod(r, "lin2", 800, 512), "kubernetes.io/os", TK_IN, "linux,darwin");
    tk_pod_affinity(tk_pod(r, "notwin", 100, 64), "kubernetes.io/os", TK_NOTIN, "windows");
    tk_pod_selector(tk_pod(r, "bsd", 100, 64), "kubernetes.io/os", "freebsd");
}

/* Each pod is anti-affine to the others so that it gets its own claim and
 * the claim's cheapest option shows what its own requirement allowed. */
static Tailor__V1__Pod *op_pod(Tailor__V1__SolveRequest *r, const char *name)
{
    Tailor__V1__Pod *p = tk_pod(r, name, 100, 64);
    tk_pod_label(p, "app", "ops");
    tk_pod_podaff(p, true, K_HOST, "app", "ops");
    return p;
}

static void b_affinity_ops(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod_affinity(op_pod(r, "gt"), "karpenter.k8s.aws/instance-cpu", TK_GT, "4");
    tk_pod_affinity(op_pod(r, "lt"), "karpenter.k8s.aws/instance-cpu", TK_LT, "2");
    tk_pod_affinity(op_pod(r, "notin"), K_TYPE, TK_NOTIN, "s.1,s.2");
    tk_pod_affinity(op_pod(r, "exists"), "karpenter.k8s.aws/instance-family", TK_EXISTS, NULL);
    tk_pod_affinity(op_pod(r, "dne"), "karpenter.k8s.aws/instance-family", TK_DNE, NULL);
    Tailor__V1__Pod *o = op_pod(r, "ored");
    tk_pod_affinity(o, "karpenter.k8s.aws/instance-family", TK_IN, "nope");
    tk_pod_affinity(o, K_TYPE, TK_IN, "s.16");
    tk_pod_affinity(op_pod(r, "gtbig"), "karpenter.k8s.aws/instance-cpu", TK_GT, "64");
}

static void b_preferred(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod_preferred(tk_pod(r, "pref-zone", 100, 64), 50, K_ZONE, TK_IN, "test-1b");
    tk_pod_preferred(tk_pod(r, "pref-none", 100, 64), 50, "karpenter.k8s.aws/instance-family", TK_IN, "nope");
}

static void b_preferred_ignore(Tailor__V1__SolveRequest *r)
{
    b_preferred(r);
    r->options = calloc(1, sizeof(*r->options));
    tailor__v1__solve_options__init(r->options);
    r->options->preference_policy = TAILOR__V1__PREFERENCE_POLICY__PREFERENCE_POLICY_IGNORE;
}

static void b_taints(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    Tailor__V1__NodePool *p = tk_pool(r, "gpu", 0);
    tk_pool_taint(p, "dedicated", "gpu", TK_NOSCHED);
    TK_PUSH(p->startup_taints, p->n_startup_taints, tk_taint("agent-not-ready", "", TK_NOSCHED));
    tk_pod(r, "plain", 100, 64);
    tk_pod_tolerate(tk_pod(r, "tolerant", 100, 64), "dedicated", "gpu", TK_NOSCHED);
}

static void b_node_taint(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "tainted", "test-1a", 8000, 16);
    TK_PUSH(n->taints, n->n_taints, tk_taint("maintenance", "", TK_NOSCHED));
    tk_pod(r, "plain", 100, 64);
    tk_pod_tolerate(tk_pod(r, "tolerant", 100, 64), "maintenance", NULL, 0);
}

static void b_prefer_noschedule(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool_taint(tk_pool(r, "soft", 0), "spotty", "", TK_PREFER);
    tk_pod(r, "p", 100, 64);
}

static void b_spread_zone(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    const char *n[4] = { "z1", "z2", "z3", "z4" };
    for (int i = 0; i < 4; i++) {
        Tailor__V1__Pod *p = tk_pod(r, n[i], 100, 64);
        tk_pod_label(p, "app", "web");
        tk_pod_spread(p, K_ZONE, 1, false, "app", "web");
    }
}

static void b_spread_mindomains(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    const char *n[3] = { "m1", "m2", "m3" };
    for (int i = 0; i < 3; i++) {
        Tailor__V1__Pod *p = tk_pod(r, n[i], 100, 64);
        tk_pod_label(p, "app", "web");
        tk_pod_spread(p, K_ZONE, 1, false, "app", "web");
        p->topology_spread_constraints[0]->min_domains = 3;
    }
}

static void b_spread_soft(Tailor__V1__SolveRequest *r)
{
    b_spread_mindomains(r);
    for (size_t i = 0; i < r->n_pending_pods; i++)
        r->pending_pods[i]->topology_spread_constraints[0]->when_unsatisfiable =
            TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_SCHEDULE_ANYWAY;
}

static void b_spread_host(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    const char *n[3] = { "h1", "h2", "h3" };
    for (int i = 0; i < 3; i++) {
        Tailor__V1__Pod *p = tk_pod(r, n[i], 100, 64);
        tk_pod_label(p, "app", "api");
        tk_pod_spread(p, K_HOST, 1, false, "app", "api");
    }
    tk_pod(r, "filler", 100, 64);
}

static void b_spread_ct(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    const char *n[2] = { "c1", "c2" };
    for (int i = 0; i < 2; i++) {
        Tailor__V1__Pod *p = tk_pod(r, n[i], 100, 64);
        tk_pod_label(p, "app", "q");
        tk_pod_spread(p, K_CT, 1, false, "app", "q");
    }
}

static void b_pod_affinity(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "dbnode", "test-1b", 1000, 2);
    tk_pod_label(tk_node_pod(n, "db-0", 1000, 1024), "app", "db");
    tk_pod_podaff(tk_pod(r, "near-db", 500, 256), false, K_ZONE, "app", "db");
    tk_pod_podaff(tk_pod(r, "near-ghost", 500, 256), false, K_ZONE, "app", "ghost");
    Tailor__V1__Pod *self = tk_pod(r, "self-1", 500, 256);
    tk_pod_label(self, "app", "pack");
    tk_pod_podaff(self, false, K_HOST, "app", "pack");
    self = tk_pod(r, "self-2", 500, 256);
    tk_pod_label(self, "app", "pack");
    tk_pod_podaff(self, false, K_HOST, "app", "pack");
}

static void b_anti(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "n1", "test-1a", 8000, 16);
    tk_pod_label(tk_node_pod(n, "web-0", 100, 64), "app", "web");
    tk_pod_podaff(tk_pod(r, "away", 100, 64), true, K_HOST, "app", "web");
    tk_pod_podaff(tk_pod(r, "fine", 100, 64), true, K_HOST, "app", "other");
    tk_pod_podaff(tk_pod(r, "zone-away", 100, 64), true, K_ZONE, "app", "web");
}

static void b_anti_inverse(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "n1", "test-1a", 8000, 16);
    tk_pod_podaff(tk_node_pod(n, "loner", 100, 64), true, K_HOST, "app", "web");
    tk_pod_label(tk_pod(r, "web", 100, 64), "app", "web");
    tk_pod_label(tk_pod(r, "other", 100, 64), "app", "other");
}

static void b_anti_self(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    const char *n[3] = { "a1", "a2", "a3" };
    for (int i = 0; i < 3; i++) {
        Tailor__V1__Pod *p = tk_pod(r, n[i], 100, 64);
        tk_pod_label(p, "app", "solo");
        tk_pod_podaff(p, true, K_HOST, "app", "solo");
    }
}

/* Preferred pod affinity: honoured when it can be, relaxed when not. */
static void b_pref_podaff(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "dbnode", "test-1b", 1000, 2);
    tk_pod_label(tk_node_pod(n, "db-0", 1000, 1024), "app", "db");
    tk_pod_podpref(tk_pod(r, "near-db", 500, 256), false, K_ZONE, "app", "db", 50);
    tk_pod_podpref(tk_pod(r, "near-ghost", 500, 256), false, K_ZONE, "app", "ghost", 50);
}

/* Preferred pod anti-affinity: honoured when it can be (even though the
 * existing node has room), relaxed when a requirement leaves no choice. */
static void b_pref_anti(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "n1", "test-1a", 8000, 16);
    tk_pod_label(tk_node_pod(n, "web-0", 100, 64), "app", "web");
    tk_pod_podpref(tk_pod(r, "away", 100, 64), true, K_HOST, "app", "web", 10);
    tk_pod_podpref(tk_pod(r, "zone-away", 100, 64), true, K_ZONE, "app", "web", 10);
    Tailor__V1__Pod *stuck = tk_pod(r, "stuck", 100, 64);
    tk_pod_selector(stuck, K_ZONE, "test-1a");
    tk_pod_podpref(stuck, true, K_ZONE, "app", "web", 10);
}

static void b_ports(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "n1", "test-1a", 8000, 16);
    tk_pod_port(tk_node_pod(n, "ingress", 100, 64), 80);
    tk_pod_port(tk_pod(r, "p80", 100, 64), 80);
    tk_pod_port(tk_pod(r, "p81", 100, 64), 81);
    tk_pod_port(tk_pod(r, "p80b", 100, 64), 80);
}

static void b_pool_reqs(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_type(r, "big.16", 16, 64, 1.20);
    Tailor__V1__NodePool *p = tk_pool(r, "default", 0);
    tk_pool_req(p, K_CT, TK_IN, "on-demand", 0);
    tk_pool_req(p, "karpenter.k8s.aws/instance-family", TK_IN, "s", 0);
    tk_pod(r, "od", 100, 64);
    tk_pod_selector(tk_pod(r, "wants-big", 100, 64), "karpenter.k8s.aws/instance-family", "big");
    tk_pod_selector(tk_pod(r, "wants-spot", 100, 64), K_CT, "spot");
}

static void b_pool_custom(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool_req(tk_pool(r, "default", 0), "team", TK_IN, "a,b", 0);
    tk_pod_selector(tk_pod(r, "ta", 100, 64), "team", "a");
    tk_pod_selector(tk_pod(r, "tb", 100, 64), "team", "b");
    tk_pod_selector(tk_pod(r, "ta2", 100, 64), "team", "a");
    tk_pod_selector(tk_pod(r, "tc", 100, 64), "team", "c");
}

static void b_limits(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool_limit_cpu(tk_pool(r, "capped", 0), 4000);
    tk_pod(r, "small", 1500, 512);
    tk_pod(r, "big", 6000, 512);
}

static void b_weights(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_type(r, "big.16", 16, 64, 1.20);
    tk_pool_req(tk_pool(r, "preferred", 50), "karpenter.k8s.aws/instance-family", TK_IN, "big", 0);
    tk_pool(r, "fallback", 10);
    tk_pod(r, "any", 100, 64);
    tk_pod_selector(tk_pod(r, "small-only", 100, 64), "karpenter.k8s.aws/instance-family", "s");
}

static void b_weights_ice(Tailor__V1__SolveRequest *r)
{
    b_weights(r);
    const char *zones[2] = { "test-1a", "test-1b" };
    for (int z = 0; z < 2; z++)
        for (int ct = 1; ct <= 2; ct++) {
            Tailor__V1__OfferingUnavailable *u = calloc(1, sizeof(*u));
            tailor__v1__offering_unavailable__init(u);
            u->instance_type = tk_s("big.16");
            u->zone = tk_s(zones[z]);
            u->capacity_type = ct;
            u->until_unix_ms = r->now_unix_ms + 60000;
            TK_PUSH(r->unavailable_offerings, r->n_unavailable_offerings, u);
        }
}

static void b_ice_expired(Tailor__V1__SolveRequest *r)
{
    b_weights_ice(r);
    for (size_t i = 0; i < r->n_unavailable_offerings; i++)
        r->unavailable_offerings[i]->until_unix_ms = r->now_unix_ms - 1;
}

static void b_min_values(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_type(r, "m.4", 4, 8, 0.22);
    tk_type(r, "c.4", 4, 8, 0.24);
    tk_pool_req(tk_pool(r, "default", 0), "karpenter.k8s.aws/instance-family", TK_EXISTS, NULL, 3);
    tk_pod(r, "p", 3000, 1024);
}

static void b_min_values_strict(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool_req(tk_pool(r, "default", 0), "karpenter.k8s.aws/instance-family", TK_EXISTS, NULL, 3);
    tk_pod(r, "p", 3000, 1024);
}

static void b_min_values_best(Tailor__V1__SolveRequest *r)
{
    b_min_values_strict(r);
    r->options = calloc(1, sizeof(*r->options));
    tailor__v1__solve_options__init(r->options);
    r->options->min_values_policy = TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT;
}

static void b_spot(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod(r, "cheap", 100, 64);
    tk_pod_selector(tk_pod(r, "od", 100, 64), K_CT, "on-demand");
    tk_pod_selector(tk_pod(r, "reserved", 100, 64), K_CT, "reserved");
}

static void b_unavailable(Tailor__V1__SolveRequest *r)
{
    Tailor__V1__InstanceType *t = tk_type_raw(r, "s.2", 2, 4);
    tk_offer(t, "test-1a", TK_OD, 0.10, false);
    tk_type(r, "s.4", 4, 8, 0.20);
    tk_pool(r, "default", 0);
    tk_pod(r, "p", 1500, 1024);
}

static void b_existing_first(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "roomy", "test-1a", 4000, 8);
    tk_node_pod(n, "running", 1000, 1024);
    Tailor__V1__Node *cordoned = tk_node(r, "cordoned", "test-1a", 8000, 16);
    cordoned->unschedulable = true;
    tk_pod(r, "fits", 2500, 1024);
    tk_pod(r, "spills", 2500, 1024);
}

static void b_inflight(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__NodeClaim *c = tk_inflight(r, "claim-1", "default", "s.4", "test-1a");
    TK_PUSH(c->planned_pod_uids, c->n_planned_pod_uids, tk_s("covered"));
    c->resources_requested->cpu_millis = 2000;
    c->resources_requested->memory_bytes = 1 * TK_GIB;
    tk_pod(r, "covered", 2000, 1024);
    tk_pod(r, "joins", 1500, 1024);
    tk_pod(r, "new", 1500, 1024);
}

/* A node that registered a moment ago: its NodeClaim is in the request
 * (linked by status.nodeName and the Node's owner reference), it is not
 * initialized, NotReady, still carries its startup taint and the
 * not-ready taint, and its device plugin has not advertised the GPU yet.
 * Karpenter counts it as in-flight capacity: the pending pods go to it,
 * and neither a second launch nor its claim as a second bin. */
static Tailor__V1__Node *booting_node(Tailor__V1__SolveRequest *r, int gpus)
{
    tk_ladder(r);
    Tailor__V1__NodePool *np = tk_pool(r, "default", 0);
    TK_PUSH(np->startup_taints, np->n_startup_taints,
            tk_taint("example.com/agent", "starting", TK_NOSCHED));
    Tailor__V1__Node *n = tk_node(r, "boot-1", "test-1a", 4000, 8);
    n->managed = true;
    n->nodepool = tk_s("default");
    n->nodeclaim_name = tk_s("claim-boot");
    n->ready = false;
    n->initialized = false;
    TK_PUSH(n->labels, n->n_labels, tk_label("karpenter.sh/nodepool", "default"));
    TK_PUSH(n->labels, n->n_labels, tk_label("karpenter.sh/registered", "true"));
    TK_PUSH(n->taints, n->n_taints, tk_taint("example.com/agent", "starting", TK_NOSCHED));
    TK_PUSH(n->taints, n->n_taints, tk_taint("node.kubernetes.io/not-ready", "", TK_NOSCHED));
    Tailor__V1__NodeClaim *c = tk_inflight(r, "claim-boot", "default", "s.4", "test-1a");
    TK_PUSH(c->startup_taints, c->n_startup_taints,
            tk_taint("example.com/agent", "starting", TK_NOSCHED));
    c->status = calloc(1, sizeof(*c->status));
    tailor__v1__node_claim_status__init(c->status);
    c->status->node_name = tk_s("boot-1");
    c->status->allocatable = tk_rl(4000, 8 * TK_GIB, 110);
    if (gpus)
        tk_rl_ext(c->status->allocatable, "nvidia.com/gpu", gpus);
    c->status->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_REGISTERED;
    TK_PUSH(c->planned_pod_uids, c->n_planned_pod_uids, tk_s("waiting"));
    c->resources_requested->cpu_millis = 1500;
    return n;
}

static void b_booting(Tailor__V1__SolveRequest *r)
{
    booting_node(r, 1);
    tk_pod(r, "waiting", 1500, 1024);
    Tailor__V1__Pod *g = tk_pod(r, "gpu", 500, 256);
    tk_rl_ext(g->requests, "nvidia.com/gpu", 1);
}

/* The node, not its claim, is the capacity: 4 vCPU once, so of 2 x 2.5
 * vCPU one pod launches a node. */
static void b_booting_once(Tailor__V1__SolveRequest *r)
{
    booting_node(r, 0);
    tk_pod(r, "first", 2500, 1024);
    tk_pod(r, "second", 2500, 1024);
}

/* Initialized, the startup taint counts again (it came back). */
static void b_booting_done(Tailor__V1__SolveRequest *r)
{
    Tailor__V1__Node *n = booting_node(r, 0);
    n->initialized = true;
    n->ready = true;
    tailor__v1__taint__free_unpacked(n->taints[--n->n_taints], NULL);   /* not-ready went */
    tk_pod(r, "waiting", 1500, 1024);
}

/* A node no NodePool manages never carries karpenter.sh/initialized (the
 * watcher's Node.initialized is false): Karpenter takes it as initialized. */
static void b_unmanaged(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "mng-1", "test-1a", 4000, 8);
    n->initialized = false;
    tk_pod(r, "p", 1000, 1024);
}

/* A Node with a NodePool label that no NodeClaim owns (an instance
 * launched twice after a lost CreateFleet reply; GC will terminate it):
 * not Karpenter's (StateNode.Managed), so initialized, and its
 * karpenter.sh/unregistered taint, which nothing will ever remove,
 * counts.  The pod gets a claim of its own instead of waiting on it. */
static void b_unclaimed(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Node *n = tk_node(r, "extra-1", "test-1a", 4000, 8);
    n->managed = true;
    n->nodepool = tk_s("default");
    n->initialized = false;
    TK_PUSH(n->labels, n->n_labels, tk_label("karpenter.sh/nodepool", "default"));
    TK_PUSH(n->taints, n->n_taints, tk_taint("karpenter.sh/unregistered", "", TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE));
    tk_pod(r, "p", 1000, 1024);
}

static void b_empty_catalog(Tailor__V1__SolveRequest *r)
{
    tk_catalog(r);
    tk_pool(r, "default", 0);
    tk_pod(r, "p", 100, 64);
}

static void b_no_pool(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pod(r, "p", 100, 64);
}

static void b_no_catalog_for_class(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    Tailor__V1__NodePool *p = tk_pool(r, "other", 0);
    free(p->node_class_ref->name);
    p->node_class_ref->name = tk_s("windows");
    tk_pod(r, "p", 100, 64);
}

/* A NodePool status condition (type, True/False). */
static void pool_cond(Tailor__V1__NodePool *p, const char *type, bool ok, const char *reason)
{
    if (!p->status) {
        p->status = calloc(1, sizeof(*p->status));
        tailor__v1__node_pool_status__init(p->status);
    }
    Tailor__V1__Condition *c = calloc(1, sizeof(*c));
    tailor__v1__condition__init(c);
    c->type = tk_s(type);
    c->status = ok ? TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE
                   : TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE;
    c->reason = tk_s(reason);
    p->status->conditions = realloc(p->status->conditions,
                                    (p->status->n_conditions + 1) * sizeof(*p->status->conditions));
    p->status->conditions[p->status->n_conditions++] = c;
}

/* Ready=False for a reason of its own (validation): the pool is left out. */
static void b_pool_not_ready(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    Tailor__V1__NodePool *p = tk_pool(r, "default", 0);
    pool_cond(p, "ValidationSucceeded", false, "NodePoolValidationFailed");
    pool_cond(p, "Ready", false, "UnhealthyDependents");
    tk_pod(r, "p", 100, 64);
}

/* Ready=False only because the NodeClass was not Ready when the status was
 * written: the class's catalog in the request is what counts. */
static void b_pool_class_caught_up(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    Tailor__V1__NodePool *p = tk_pool(r, "default", 0);
    pool_cond(p, "ValidationSucceeded", true, "ValidationSucceeded");
    pool_cond(p, "NodeClassReady", false, "NodeClassReadinessUnknown");
    pool_cond(p, "Ready", false, "UnhealthyDependents");
    tk_pod(r, "p", 100, 64);
}

static void b_contradiction(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Pod *p = tk_pod(r, "contra", 100, 64);
    tk_pod_selector(p, K_TYPE, "s.2");
    tk_pod_affinity(p, K_TYPE, TK_NOTIN, "s.2");
    tk_pod(r, "ok", 100, 64);
}

static void b_absurd(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod(r, "huge", INT64_MAX / 2, 64);
    tk_pod(r, "negative", -5, 64);
    tk_pod_ext(tk_pod(r, "exotic", 100, 64), "example.com/fpga", 1);
    tk_pod(r, "ok", 100, 64);
}

static void b_packing(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    char n[16];
    for (int i = 0; i < 16; i++) {
        snprintf(n, sizeof n, "w%d", i);
        tk_pod(r, n, 900, 1024);
    }
}

/* ---- the table -------------------------------------------------------- */

static const tcase cases[] = {
    { "resources: cheapest type that fits", b_fit, { { "p1", "claim:s.2" } }, 1, BOTH },
    { "resources: bigger than every type", b_too_big,
      { { "big", "error:no instance type has 64000m cpu" }, { "small", "claim:s.1" } }, 1, BOTH },
    { "gpu: extended resources", b_gpu,
      { { "one", "claim:g.1" }, { "eight", "claim:g.8" },
        { "sixteen", "error:no instance type has 16 nvidia.com/gpu" }, { "nogpu", "claim" } }, -1, BOTH },
    { "ephemeral storage", b_ephemeral,
      { { "disk", "claim:d.4" }, { "huge-disk", "error:ephemeral storage" } }, 1, BOTH },
    { "pods dimension of a node", b_pods_dim, { { "a", "node:n1" }, { "b", "claim" } }, 1, BOTH },
    { "effective request from init containers", b_containers, { { "init", "claim:s.4" } }, 1, BOTH },
    { "daemonset overhead on new nodes", b_daemonset, { { "p1", "claim:s.2" } }, 1, BOTH },
    { "daemonset selecting other nodes adds nothing", b_daemonset_elsewhere, { { "p1", "claim:s.1" } }, 1, BOTH },
    { "nodeSelector", b_selector,
      { { "fam", "claim:big.16" }, { "nolabel", "error:team In [payments] matches no instance type" },
        { "zone", "zone:test-1b" } }, -1, BOTH },
    { "multi-valued type label: a claim narrows it as pods join", b_multi_value_label,
      { { "win", "diff:lin" }, { "lin2", "same:lin" }, { "notwin", "same:lin" }, { "lin", "os:linux" },
        { "win", "os:windows" }, { "bsd", "error:freebsd" } }, 2, BOTH },
    { "required node affinity operators and ORed terms", b_affinity_ops,
      { { "gt", "claim:s.8" }, { "lt", "claim:s.1" }, { "notin", "claim:s.4" }, { "exists", "claim:s.1" },
        { "dne", "error:instance-family DoesNotExist" }, { "ored", "claim:s.16" },
        { "gtbig", "error:instance-cpu Gt [64]" } }, -1, BOTH },
    { "preferred node affinity: kept, then relaxed", b_preferred,
      { { "pref-zone", "zone:test-1b" }, { "pref-none", "claim" } }, -1, BOTH },
    { "preference policy Ignore", b_preferred_ignore,
      { { "pref-zone", "claim" }, { "pref-none", "same:pref-zone" } }, 1, BOTH },
    { "NodePool taints; startup taints do not block", b_taints,
      { { "plain", "error:taint dedicated=gpu:NoSchedule not tolerated" }, { "tolerant", "claim" } }, 1, BOTH },
    { "node taints", b_node_taint, { { "plain", "claim" }, { "tolerant", "node:tainted" } }, 1, BOTH },
    { "PreferNoSchedule is relaxed", b_prefer_noschedule, { { "p", "claim" } }, 1, BOTH },
    { "zone spread, maxSkew 1", b_spread_zone,
      { { "z1", "claim" }, { "z2", "claim" }, { "z3", "claim" }, { "z4", "claim" } }, 2, BOTH },
    { "zone spread with minDomains above the zone count", b_spread_mindomains,
      { { "m3", "error:topology" } }, 2, BOTH },
    { "ScheduleAnyway spread is relaxed", b_spread_soft,
      { { "m1", "claim" }, { "m2", "claim" }, { "m3", "claim" } }, -1, BOTH },
    { "hostname spread", b_spread_host,
      { { "h1", "diff:h2" }, { "h2", "diff:h3" }, { "h1", "diff:h3" }, { "filler", "claim" } }, 3, BOTH },
    { "capacity-type spread", b_spread_ct, { { "c1", "diff:c2" } }, 2, BOTH },
    { "pod affinity (zone, hostname, missing target)", b_pod_affinity,
      { { "near-db", "zone:test-1b" }, { "near-ghost", "error:topology" }, { "self-2", "same:self-1" } }, -1, BOTH },
    { "pod anti-affinity counts existing pods", b_anti,
      { { "away", "claim" }, { "fine", "node:n1" }, { "zone-away", "zone:test-1b" } }, -1, BOTH },
    { "anti-affinity of existing pods (inverse)", b_anti_inverse,
      { { "web", "claim" }, { "other", "node:n1" } }, 1, BOTH },
    { "self anti-affinity: one per node", b_anti_self,
      { { "a1", "diff:a2" }, { "a2", "diff:a3" }, { "a1", "diff:a3" } }, 3, BOTH },
    { "preferred pod affinity: honoured, else relaxed", b_pref_podaff,
      { { "near-db", "zone:test-1b" }, { "near-ghost", "claim" } }, -1, BOTH },
    { "preferred pod anti-affinity: honoured, else relaxed", b_pref_anti,
      { { "away", "claim" }, { "zone-away", "zone:test-1b" }, { "stuck", "node:n1" } }, -1, BOTH },
    { "host ports", b_ports,
      { { "p81", "node:n1" }, { "p80", "claim" }, { "p80b", "diff:p80" } }, 2, BOTH },
    { "NodePool requirements", b_pool_reqs,
      { { "od", "ct:on-demand" }, { "wants-big", "error:matches no instance type" },
        { "wants-spot", "error:matches no offering" } }, 1, BOTH },
    { "NodePool custom label values are narrowed per claim", b_pool_custom,
      { { "ta", "same:ta2" }, { "tb", "diff:ta" }, { "tc", "error:team In [c] matches no instance type" } }, 2, BOTH },
    { "NodePool limits", b_limits,
      { { "small", "claim" }, { "big", "error:NodePool limit cpu reached" } }, 1, BOTH },
    { "NodePool weights with fallback", b_weights,
      { { "any", "claim:big.16" }, { "small-only", "claim:s.1" } }, 2, BOTH },
    { "weights: fall back when the preferred pool has no offering", b_weights_ice,
      { { "any", "claim:s.1" } }, -1, BOTH },
    { "expired unavailable offerings are ignored", b_ice_expired, { { "any", "claim:big.16" } }, -1, BOTH },
    { "minValues kept in the options", b_min_values, { { "p", "claim:s.4" } }, 1, BOTH },
    { "minValues Strict fails", b_min_values_strict, { { "p", "error:minValues" } }, 0, BOTH },
    { "minValues BestEffort relaxes", b_min_values_best, { { "p", "claim:s.4" } }, 1, BOTH },
    { "spot vs on-demand", b_spot,
      { { "cheap", "claim" }, { "od", "ct:on-demand" },
        { "reserved", "error:karpenter.sh/capacity-type In [reserved] matches no offering" } }, -1, BOTH },
    { "unavailable offerings are skipped", b_unavailable, { { "p", "claim:s.4" } }, 1, BOTH },
    { "existing capacity first", b_existing_first,
      { { "fits", "node:roomy" }, { "spills", "claim" } }, 1, BOTH },
    { "in-flight claims: covered pods and free room", b_inflight,
      { { "covered", "inflight:claim-1" }, { "joins", "inflight:claim-1" }, { "new", "claim" } }, 1, BOTH },
    { "booting node with its claim: pods go to the node, no second launch", b_booting,
      { { "waiting", "node:boot-1" }, { "gpu", "node:boot-1" } }, 0, BOTH },
    { "booting node and its claim are one node's capacity", b_booting_once,
      { { "first", "node:boot-1" }, { "second", "claim" } }, 1, BOTH },
    { "initialized node: a startup taint back again blocks", b_booting_done,
      { { "waiting", "claim" } }, 1, BOTH },
    { "node without a NodePool counts as initialized", b_unmanaged, { { "p", "node:mng-1" } }, 0, BOTH },
    { "node with a NodePool label but no NodeClaim: its unregistered taint counts", b_unclaimed,
      { { "p", "claim" } }, 1, BOTH },
    { "empty catalog", b_empty_catalog, { { "p", "error:no instance type" } }, 0, BOTH },
    { "no NodePool", b_no_pool, { { "p", "error:no NodePool" } }, 0, BOTH },
    { "NodeClass without a catalog", b_no_catalog_for_class, { { "p", "error:has no catalog" } }, 0, BOTH },
    { "NodePool Ready=False: left out, as Karpenter", b_pool_not_ready,
      { { "p", "error:NodePool default is not Ready (UnhealthyDependents)" } }, 0, BOTH },
    { "NodePool Ready=False only for its NodeClass: the catalog decides", b_pool_class_caught_up,
      { { "p", "claim" } }, 1, BOTH },
    { "contradictory requirements", b_contradiction,
      { { "contra", "error:matches no instance type" }, { "ok", "claim" } }, 1, BOTH },
    { "absurd quantities", b_absurd,
      { { "huge", "error:no instance type has" }, { "negative", "error:negative request" },
        { "exotic", "error:no instance type has 1 example.com/fpga" }, { "ok", "claim" } }, 1, BOTH },
    { "packing: 16 x 900m pods", b_packing, { { "w0", "claim" } }, -1, BOTH },
};

/* ---- running a case --------------------------------------------------- */

static int fail_where(const tcase *tc, const char *strat, const want *w, const char *got)
{
    fprintf(stderr, "case \"%s\" (%s): pod %s: want %s, got %s\n", tc->name, strat, w->pod, w->where, got);
    return 1;
}

static int check_want(const tcase *tc, const char *strat, const Tailor__V1__SolveResponse *s, const want *w)
{
    char got[4096];
    const char *b = tk_bound_to(s, w->pod);
    int c = tk_claim_of(s, w->pod);
    const Tailor__V1__PodError *e = tk_error_of(s, w->pod);
    if (b)
        snprintf(got, sizeof got, "bound to %s", b);
    else if (c >= 0) {
        const Tailor__V1__NodeClaim *nc = s->new_nodeclaims[c];
        const char *z = tk_claim_req(nc, K_ZONE);
        char zz[1024];
        snprintf(zz, sizeof zz, "%s", z ? z : "");
        snprintf(got, sizeof got, "claim %d (cheapest %s, zone %s, ct %s)", c,
                 nc->n_instance_type_options ? nc->instance_type_options[0]->name : "-", zz,
                 tk_claim_req(nc, K_CT) ? tk_claim_req(nc, K_CT) : "");
    } else if (e)
        snprintf(got, sizeof got, "error: %s", tk_reasons(e));
    else
        snprintf(got, sizeof got, "nothing (pod missing from the plan)");
    const char *arg = strchr(w->where, ':');
    arg = arg ? arg + 1 : NULL;
    if (!strncmp(w->where, "node:", 5) || !strncmp(w->where, "inflight:", 9))
        return b && !strcmp(b, arg) ? 0 : fail_where(tc, strat, w, got);
    if (!strncmp(w->where, "error:", 6))
        return e && strstr(tk_reasons(e), arg) ? 0 : fail_where(tc, strat, w, got);
    if (c < 0)
        return fail_where(tc, strat, w, got);
    const Tailor__V1__NodeClaim *nc = s->new_nodeclaims[c];
    if (!strcmp(w->where, "claim"))
        return 0;
    if (!strncmp(w->where, "claim:", 6))
        return nc->n_instance_type_options && !strcmp(nc->instance_type_options[0]->name, arg)
               ? 0 : fail_where(tc, strat, w, got);
    if (!strncmp(w->where, "zone:", 5)) {
        const char *z = tk_claim_req(nc, K_ZONE);
        return z && !strcmp(z, arg) ? 0 : fail_where(tc, strat, w, got);
    }
    if (!strncmp(w->where, "ct:", 3)) {
        const char *z = tk_claim_req(nc, K_CT);
        return z && !strcmp(z, arg) ? 0 : fail_where(tc, strat, w, got);
    }
    if (!strncmp(w->where, "os:", 3)) {
        const char *z = tk_claim_req(nc, "kubernetes.io/os");
        return z && !strcmp(z, arg) ? 0 : fail_where(tc, strat, w, got);
    }
    if (!strncmp(w->where, "same:", 5))
        return tk_claim_of(s, arg) == c ? 0 : fail_where(tc, strat, w, got);
    if (!strncmp(w->where, "diff:", 5))
        return tk_claim_of(s, arg) != c ? 0 : fail_where(tc, strat, w, got);
    return fail_where(tc, strat, w, "(bad want)");
}

static int run_case(const tcase *tc, tlr_solve_strategy st)
{
    const char *strat = st == TLR_SOLVE_TAILOR ? "tailor" : st == TLR_SOLVE_FFD ? "ffd" : "karpenter";
    Tailor__V1__SolveRequest *req = tk_new();
    tc->build(req);
    tlr_solve_opts o = { .strategy = st, .replica_id = "test" };
    Tailor__V1__SolveResponse *s = NULL;
    int rc = tlr_solve(req, &o, &s);
    int bad = 0;
    if (rc != TLR_OK || !s) {
        fprintf(stderr, "case \"%s\" (%s): tlr_solve: want OK, got %s\n", tc->name, strat, tlr_strerror(rc));
        bad = 1;
        goto out;
    }
    for (int i = 0; i < 8 && tc->w[i].pod; i++)
        bad += check_want(tc, strat, s, &tc->w[i]);
    if (tc->nclaims >= 0 && (int)s->n_new_nodeclaims != tc->nclaims) {
        fprintf(stderr, "case \"%s\" (%s): new claims: want %d, got %zu\n", tc->name, strat, tc->nclaims,
                s->n_new_nodeclaims);
        bad++;
    }
    /* every pod has exactly one outcome, and the plan is legal */
    size_t outcomes = s->n_bindings + s->n_pod_errors;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++)
        outcomes += s->new_nodeclaims[i]->n_planned_pod_uids;
    if (outcomes != req->n_pending_pods) {
        fprintf(stderr, "case \"%s\" (%s): outcomes: want %zu, got %zu\n", tc->name, strat,
                req->n_pending_pods, outcomes);
        bad++;
    }
    double sum = 0;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++)
        sum += s->new_nodeclaims[i]->instance_type_options[0]->price_per_hour;
    if (sum < s->total_cost_per_hour - 1e-9 || sum > s->total_cost_per_hour + 1e-9) {
        fprintf(stderr, "case \"%s\" (%s): total cost: want %g, got %g\n", tc->name, strat, sum,
                s->total_cost_per_hour);
        bad++;
    }
    if (tk_check(req, s)) {
        fprintf(stderr, "case \"%s\" (%s): the plan checker found violations (above)\n", tc->name, strat);
        bad++;
    }
out:
    tlr_solve_response_free(s);
    tk_free(req);
    return bad;
}

static void test_cases(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bad += run_case(&cases[i], TLR_SOLVE_TAILOR);
        if (cases[i].only == BOTH) {
            bad += run_case(&cases[i], TLR_SOLVE_KARPENTER);
            bad += run_case(&cases[i], TLR_SOLVE_FFD);
        }
    }
    assert_int_equal(bad, 0);
}

/* The packing case: tailor is never dearer than the baseline, and both
 * pack 16 x 900m pods (14.4 vCPU) into at most 16 vCPU of nodes' worth of
 * money at on-demand spot price. */
static void test_tailor_not_dearer(void **state)
{
    (void)state;
    void (*builds[])(Tailor__V1__SolveRequest *) = { b_packing, b_spread_zone, b_anti_self, b_gpu };
    for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
        double cost[2];
        for (int st = 0; st < 2; st++) {
            Tailor__V1__SolveRequest *req = tk_new();
            builds[i](req);
            tlr_solve_opts o = { .strategy = (tlr_solve_strategy)st };
            Tailor__V1__SolveResponse *s = NULL;
            assert_int_equal(tlr_solve(req, &o, &s), TLR_OK);
            cost[st] = s->total_cost_per_hour;
            tlr_solve_response_free(s);
            tk_free(req);
        }
        if (cost[0] > cost[1] + 1e-9)
            fprintf(stderr, "build %zu: tailor %g > karpenter %g\n", i, cost[0], cost[1]);
        assert_true(cost[0] <= cost[1] + 1e-9);
    }
}

/* Two complementary shapes on one pool: A is cpu-heavy, B memory-heavy;
 * each alone packs best on its own special type, together they fill the
 * balanced b.8 (8 cpu, 16 GiB, $0.50) nearly full: 48 A (1 cpu, 0.4 GiB)
 * and 56 B (0.2 cpu, 1.9 GiB) fill 8 b.8 (each 6 A + 7 B = 7.4 cpu,
 * 15.7 GiB) for $4.00, where the specialised types cost $0.40 per 8 A
 * (c.8: 8 cpu, 4 GiB) and $0.40 per 8 B (m.2: 2 cpu, 16 GiB): $5.20.  The
 * configuration LP sees the mix; the plan may not cost more than $4.00. */
static void b_complementary(Tailor__V1__SolveRequest *r)
{
    tk_type(r, "c.8", 8, 4, 1.0)->allocatable->memory_bytes = 4 * TK_GIB;
    tk_type(r, "m.2", 2, 16, 1.0);
    tk_type(r, "b.8", 8, 16, 1.25);
    tk_pool(r, "default", 0);
    char n[16];
    for (int i = 0; i < 48; i++) {
        snprintf(n, sizeof n, "a%d", i);
        tk_pod(r, n, 1000, 410);
    }
    for (int i = 0; i < 56; i++) {
        snprintf(n, sizeof n, "b%d", i);
        tk_pod(r, n, 200, 1946);
    }
}

/* LP-guided packing: never dearer than the greedy alone, and on the
 * complementary shapes as cheap as the mix. */
static void test_lp_guided(void **state)
{
    (void)state;
    void (*builds[])(Tailor__V1__SolveRequest *) = { b_complementary, b_packing, b_gpu, b_weights, b_limits };
    for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
        double cost[2];
        for (int g = 0; g < 2; g++) {
            Tailor__V1__SolveRequest *req = tk_new();
            builds[i](req);
            tlr_solve_opts o = { .strategy = TLR_SOLVE_TAILOR, .no_lp_guide = g == 1, .no_lower_bound = true };
            Tailor__V1__SolveResponse *s = NULL;
            assert_int_equal(tlr_solve(req, &o, &s), TLR_OK);
            cost[g] = s->total_cost_per_hour;
            assert_int_equal(tk_check(req, s), 0);
            tlr_solve_response_free(s);
            tk_free(req);
        }
        if (i == 0)
            printf("complementary: lp-guided %.4f, greedy %.4f (want <= %.4f)\n", cost[0], cost[1], 8 * 1.25 * 0.4);
        assert_true(cost[0] <= cost[1] + 1e-9);
        if (i == 0)
            assert_true(cost[0] <= 8 * 1.25 * 0.4 + 1e-9);
    }
}

/* A catalog reference without its catalog is a miss, not a solve. */
static void test_catalog_miss(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    b_fit(req);
    Tailor__V1__CatalogRef *ref = req->catalogs[0];
    tailor__v1__catalog__free_unpacked(ref->catalog, NULL);
    ref->catalog = NULL;
    Tailor__V1__SolveResponse *s = NULL;
    assert_int_equal(tlr_solve(req, NULL, &s), TLR_E_NOTFOUND);
    assert_non_null(s);
    assert_true(s->catalog_miss);
    assert_int_equal(s->n_missing_catalog_hashes, 1);
    assert_string_equal(s->missing_catalog_hashes[0], "testhash");
    assert_int_equal(s->status->code, TLR_E_NOTFOUND);
    assert_string_equal(s->status->reason, "CatalogMiss");
    assert_int_equal(s->n_new_nodeclaims, 0);
    tlr_solve_response_free(s);
    tk_free(req);
}

/* The response's lower bound covers the pods the plan placed: pods no
 * node can take (a custom label no NodePool sets: unschedulable in
 * Karpenter; a hostname selector: ignored) do not raise it above the plan,
 * though a bound over every pending pod (keys a pool may still set count
 * as met there) does. */
static void test_bound_over_placed(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    b_packing(req);
    char n[16];
    for (int i = 0; i < 8; i++) {
        snprintf(n, sizeof n, "team%d", i);
        tk_pod_selector(tk_pod(req, n, 900, 1024), "team", "a");
    }
    tk_pod_selector(tk_pod(req, "pinned", 900, 1024), "kubernetes.io/hostname", "ip-10-0-0-1");
    Tailor__V1__SolveResponse *s = NULL;
    assert_int_equal(tlr_solve(req, NULL, &s), TLR_OK);
    assert_int_equal(s->n_pod_errors, 9);
    const Tailor__V1__PodError *pinned = tk_error_of(s, "pinned");
    assert_non_null(pinned);
    assert_string_equal(pinned->status->reason, "Ignored");
    assert_string_equal(tk_error_of(s, "team0")->status->reason, "Unschedulable");
    assert_true(s->lower_bound_cost_per_hour > 0);
    assert_true(s->lower_bound_cost_per_hour <= s->total_cost_per_hour * (1 + 1e-9));
    double all = 0;
    assert_int_equal(tlr_solve_lower_bound(req, &all), TLR_OK);
    assert_true(all > s->total_cost_per_hour);
    tlr_solve_response_free(s);
    tk_free(req);
}

/* Identical requests give identical plans. */
static void test_deterministic(void **state)
{
    (void)state;
    uint8_t *bytes[2] = { NULL, NULL };
    size_t len[2];
    for (int i = 0; i < 2; i++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_spread_zone(req);
        b_anti(req);
        Tailor__V1__SolveResponse *s = NULL;
        assert_int_equal(tlr_solve(req, NULL, &s), TLR_OK);
        s->solve_duration_ms = 0;
        len[i] = tailor__v1__solve_response__get_packed_size(s);
        bytes[i] = malloc(len[i]);
        tailor__v1__solve_response__pack(s, bytes[i]);
        tlr_solve_response_free(s);
        tk_free(req);
    }
    assert_int_equal(len[0], len[1]);
    assert_memory_equal(bytes[0], bytes[1], len[0]);
    free(bytes[0]);
    free(bytes[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_tailor_not_dearer),
        cmocka_unit_test(test_lp_guided),
        cmocka_unit_test(test_catalog_miss),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_bound_over_placed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
