/* lifecycle_test.c - Launched -> Registered -> Initialized, and the
 * liveness timeouts that give up on a claim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lifecycle.h"
#include "plangate.h"
#include "prov_int.h"
#include "provision.h"
#include "lc_testkit.h"
#include "tlr_err.h"

#define MIN (60 * 1000)

static void test_decide(void **state)
{
    (void)state;
    const int64_t t0 = 1000000000;
    struct {
        const char *name;
        int64_t launched, registered;   /* offsets from t0; -1 = not yet */
        bool has_node, ready;
        const char *taint;              /* one taint on the node; NULL none */
        int64_t now;                    /* offset from t0 */
        lc_life_action want;
    } cases[] = {
        { "fresh claim waits", -1, -1, false, false, NULL, 4 * MIN, LC_LIFE_NONE },
        { "not launched in 5m", -1, -1, false, false, NULL, 5 * MIN, LC_LIFE_LAUNCH_TIMEOUT },
        { "launched, no node yet", 0, -1, false, false, NULL, 14 * MIN, LC_LIFE_NONE },
        { "not registered in 15m", 0, -1, false, false, NULL, 15 * MIN,
          LC_LIFE_REGISTER_TIMEOUT },
        { "node joined", 0, -1, true, false, NULL, MIN, LC_LIFE_REGISTERED },
        { "registered, not ready", 0, MIN, true, false, NULL, 2 * MIN, LC_LIFE_NONE },
        { "ready but startup taint left", 0, MIN, true, true, "example.com/agent-not-ready",
          2 * MIN, LC_LIFE_NONE },
        { "ready but unregistered taint", 0, MIN, true, true, "karpenter.sh/unregistered",
          2 * MIN, LC_LIFE_NONE },
        { "ready, taints gone", 0, MIN, true, true, NULL, 2 * MIN, LC_LIFE_INITIALIZED },
        { "registered never times out", 0, MIN, false, false, NULL, 60 * MIN, LC_LIFE_NONE },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        lc_claim c = { 0 };
        c.nc = tk_claim("np-abcde", 1, "m5.large", NULL, NULL);
        Tailor__V1__Taint *st = tlr_malloc(sizeof(*st));
        tailor__v1__taint__init(st);
        st->key = tlr_strdup("example.com/agent-not-ready");
        TK_PUSH(c.nc->startup_taints, c.nc->n_startup_taints, st);
        c.created_ms = t0;
        c.launched_ms = cases[i].launched < 0 ? 0 : t0 + cases[i].launched;
        c.registered_ms = cases[i].registered < 0 ? 0 : t0 + cases[i].registered;
        tlr_ktaint tk[1] = { { (char *)cases[i].taint, "", "NoSchedule" } };
        tlr_knode n = { .name = "ip-10-0-0-1", .provider_id = "aws:///us-east-1a/i-1",
                        .ready = cases[i].ready, .taints = tk,
                        .ntaints = cases[i].taint ? 1u : 0u };
        lc_life_action got = lc_lifecycle_decide(&c, cases[i].has_node ? &n : NULL, NULL, 0,
                                                 t0 + cases[i].now);
        if (got != cases[i].want)
            fail_msg("%s: got %d want %d", cases[i].name, got, cases[i].want);
        protobuf_c_message_free_unpacked(&c.nc->base, NULL);
    }
}

static void test_node_for_instance(void **state)
{
    (void)state;
    tlr_knode v[2] = { { .name = "a", .provider_id = "aws:///us-east-1a/i-11", .ready = true },
                       { .name = "b", .provider_id = "aws:///us-east-1b/i-1", .ready = true } };
    tlr_knodes nodes = { v, 2 };
    const tlr_knode *n = lc_node_for_instance(&nodes, "i-1");
    assert_non_null(n);
    assert_string_equal(n->name, "b");   /* i-11 must not match i-1 */
    assert_null(lc_node_for_instance(&nodes, "i-2"));
    assert_null(lc_node_for_instance(&nodes, ""));
}

static Tailor__V1__Taint *taint(const char *key, Tailor__V1__TaintEffect e)
{
    Tailor__V1__Taint *t = tlr_malloc(sizeof(*t));
    tailor__v1__taint__init(t);
    t->key = tlr_strdup(key);
    t->effect = e;
    return t;
}

static Tailor__V1__Label *label(const char *k, const char *v)
{
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(k);
    l->value = tlr_strdup(v);
    return l;
}

#define NOSCHED TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE

/* The registration patch: labels and annotations synced, the claim's
 * taints and (the first time) startup taints added, the unregistered
 * taint removed, other taints kept, with the Node's resourceVersion. */
static void test_registration_patch(void **state)
{
    (void)state;
    lc_fake f;
    lc_fake_init(&f);
    lc_fake_add_node(&f, "n1", "aws:///us-east-1a/i-1", true, "karpenter.sh/unregistered");
    tlr_knode *n = lc_fake_node(&f, "n1");
    free(n->resource_version);
    n->resource_version = tlr_strdup("42");
    lc_claim c = { 0 };
    c.nc = tk_claim("np-abcde", 1, "m5.large", NULL, NULL);
    TK_PUSH(c.nc->labels, c.nc->n_labels, label("team", "a"));
    TK_PUSH(c.nc->labels, c.nc->n_labels, label("node.kubernetes.io/instance-type", "m5.large"));
    TK_PUSH(c.nc->annotations, c.nc->n_annotations, label("example.com/owner", "me"));
    TK_PUSH(c.nc->taints, c.nc->n_taints, taint("dedicated", NOSCHED));
    TK_PUSH(c.nc->startup_taints, c.nc->n_startup_taints, taint("agent-not-ready", NOSCHED));
    char *p = lc_registration_patch(&c, n);
    const char *want[] = {
        "\"resourceVersion\":\"42\"",
        "\"team\":\"a\"",
        "\"node.kubernetes.io\\/instance-type\":\"m5.large\"",
        "\"karpenter.sh\\/nodepool\":\"default\"",
        "\"karpenter.sh\\/registered\":\"true\"",
        "\"annotations\":{\"example.com\\/owner\":\"me\"}",
        ("\"taints\":[{\"key\":\"dedicated\",\"effect\":\"NoSchedule\"},"
         "{\"key\":\"agent-not-ready\",\"effect\":\"NoSchedule\"}]"),
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(p, want[i]))
            fail_msg("patch %s: want %s", p, want[i]);
    if (strstr(p, "unregistered"))
        fail_msg("patch keeps the unregistered taint: %s", p);
    free(p);
    /* Applied, then again: registered already -> the startup taint (since
     * removed by its agent) does not come back, the claim taint stays once. */
    lc_kube_ops k = lc_fake_kube(&f);
    p = lc_registration_patch(&c, n);
    assert_int_equal(k.node_patch(k.arg, "n1", p), TLR_OK);
    free(p);
    assert_int_equal(k.node_patch(k.arg, "n1", "{\"metadata\":{\"resourceVersion\":\"42\"}}"),
                     TLR_E_CONFLICT);   /* stale: the fake bumped it */
    assert_int_equal(n->ntaints, 2);
    assert_int_equal(k.node_patch(k.arg, "n1", "{\"spec\":{\"taints\":[{\"key\":\"dedicated\","
                                               "\"effect\":\"NoSchedule\"}]}}"), TLR_OK);
    p = lc_registration_patch(&c, n);
    if (!strstr(p, "\"taints\":[{\"key\":\"dedicated\",\"effect\":\"NoSchedule\"}]}"))
        fail_msg("second patch: %s", p);
    free(p);
    protobuf_c_message_free_unpacked(&c.nc->base, NULL);
    lc_fake_clear(&f);
}

/* Initialized waits for the launched type's GPUs and the startup taints. */
static void test_initialized_waits(void **state)
{
    (void)state;
    const int64_t t0 = 1000000000;
    lc_claim c = { 0 };
    c.nc = tk_claim("np-abcde", 1, "p3.2xlarge", NULL, NULL);
    TK_PUSH(c.nc->startup_taints, c.nc->n_startup_taints, taint("agent-not-ready", NOSCHED));
    c.created_ms = c.launched_ms = t0;
    c.registered_ms = t0 + MIN;
    Tailor__V1__InstanceType *it = tlr_malloc(sizeof(*it));
    tailor__v1__instance_type__init(it);
    it->capacity = tlr_malloc(sizeof(*it->capacity));
    tailor__v1__resource_list__init(it->capacity);
    Tailor__V1__ExtendedResource *gpu = tlr_malloc(sizeof(*gpu));
    tailor__v1__extended_resource__init(gpu);
    gpu->name = tlr_strdup("nvidia.com/gpu");
    gpu->value = 1;
    TK_PUSH(it->capacity->extended, it->capacity->n_extended, gpu);
    lc_fake f;
    lc_fake_init(&f);
    lc_fake_add_node(&f, "n1", "aws:///us-east-1a/i-1", true, "agent-not-ready");
    tlr_knode *n = lc_fake_node(&f, "n1");
    char buf[128];
    assert_int_equal(lc_lifecycle_decide(&c, n, it, 0, t0 + 2 * MIN), LC_LIFE_NONE);
    assert_string_equal(lc_lifecycle_waiting(&c, n, it, buf, sizeof(buf)),
                        "StartupTaintsExist agent-not-ready");
    n->ntaints = 0;   /* the agent removed it (the fake frees on clear) */
    free(n->taints[0].key);
    free(n->taints[0].value);
    free(n->taints[0].effect);
    assert_int_equal(lc_lifecycle_decide(&c, n, it, 0, t0 + 2 * MIN), LC_LIFE_NONE);
    assert_string_equal(lc_lifecycle_waiting(&c, n, it, buf, sizeof(buf)),
                        "ResourceNotRegistered nvidia.com/gpu");
    assert_int_equal(lc_lifecycle_decide(&c, n, NULL, 0, t0 + 2 * MIN), LC_LIFE_INITIALIZED);
    lc_fake_node_add_extended(&f, "n1", "nvidia.com/gpu");
    assert_int_equal(lc_lifecycle_decide(&c, n, it, 0, t0 + 2 * MIN), LC_LIFE_INITIALIZED);
    protobuf_c_message_free_unpacked(&it->base, NULL);
    protobuf_c_message_free_unpacked(&c.nc->base, NULL);
    lc_fake_clear(&f);
}

/* Through the provisioner: launch, the Node registers with the
 * unregistered taint, one patch syncs it (a 409 retried next pass), then
 * Initialized labels it; a claim whose Node never comes is deleted at the
 * registration TTL with an Event that says why. */
static void test_prov_registration(void **state)
{
    (void)state;
    lc_fake f;
    lc_fake_init(&f);
    Tailor__V1__Catalog *cat = tk_catalog();
    static const tlr_cluster_identity id = { "prod", "https://api.prod.example", "Q0EK",
                                             "10.100.0.0/16", NULL };
    lc_prov_opts o = { 0 };
    o.cluster = "prod";
    o.clock = &f.clock;
    o.solver = lc_fake_solver(&f);
    o.cloud = lc_fake_cloud(&f);
    o.kube = lc_fake_kube(&f);
    o.catalog = cat;
    o.identity = &id;
    o.register_ttl_ms = 60000;
    lc_prov *p;
    lc_prov_create(&o, &p);
    f.solve_q[f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    f.solve_q[f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "r5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(lc_prov_batch(p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(lc_claims_count(lc_prov_claims(p)), 2);
    lc_fake_add_node(&f, "n1", "aws:///us-east-1a/i-00001", true, "karpenter.sh/unregistered");
    f.node_patch_rc = TLR_E_CONFLICT;
    f.now_ms += 30000;
    lc_prov_lifecycle(p);
    if (lc_fake_count(&f, "node_patch n1") != 1) {
        for (size_t i = 0; i < f.ncalls; i++)
            print_message("  %.200s\n", f.calls[i]);
        fail_msg("want one node_patch");
    }
    assert_int_equal(lc_fake_count(&f, "claim_status default-"), 2);   /* launch only */
    lc_prov_lifecycle(p);   /* retried: registered */
    assert_int_equal(lc_fake_count(&f, "node_patch n1 {\"metadata\":{\"resourceVersion\":\"1\""),
                     2);
    assert_int_equal(lc_fake_count(&f, "node_patch n1 " LC_INITIALIZED_PATCH), 0);
    lc_prov_lifecycle(p);   /* ready, no taint left: initialized */
    assert_int_equal(lc_fake_count(&f, "node_patch n1 " LC_INITIALIZED_PATCH), 1);
    /* the second claim's node never comes: deleted at 60 s, with why */
    f.now_ms += 31000;
    lc_prov_lifecycle(p);
    assert_int_equal(lc_fake_count(&f, "terminate i-00002"), 1);
    assert_int_equal(lc_fake_count(&f, "claim_delete default-"), 1);
    const char *want = "Warning RegistrationTimeout instance i-00002 launched 1m1s ago but no "
                       "Node registered with providerID aws:///us-east-1c/i-00002; check the "
                       "node's bootstrap (cluster endpoint https://api.prod.example, CA, "
                       "security groups)";
    bool found = false;
    for (size_t i = 0; i < f.ncalls; i++)
        found |= strstr(f.calls[i], want) != NULL;
    if (!found) {
        for (size_t i = 0; i < f.ncalls; i++)
            print_message("  %.300s\n", f.calls[i]);
        fail_msg("no event [%s]", want);
    }
    assert_int_equal(lc_claims_count(lc_prov_claims(p)), 1);
    lc_prov_free(p);
    protobuf_c_message_free_unpacked(&cat->base, NULL);
    lc_fake_clear(&f);
}

/* A pod with a zone spread the scheduler must not break (DoNotSchedule). */
static void spread_pod(Tailor__V1__PendingBatch *b, const char *uid, int action)
{
    for (size_t i = 0; i < b->n_pending_pods; i++) {
        Tailor__V1__Pod *pod = b->pending_pods[i];
        if (strcmp(pod->uid, uid) != 0)
            continue;
        Tailor__V1__TopologySpreadConstraint *t = tlr_malloc(sizeof(*t));
        tailor__v1__topology_spread_constraint__init(t);
        t->max_skew = 1;
        t->topology_key = tlr_strdup("topology.kubernetes.io/zone");
        t->when_unsatisfiable = action;
        TK_PUSH(pod->topology_spread_constraints, pod->n_topology_spread_constraints, t);
    }
}

/* One plan of three claims: one pod each, p1 and p2 zone-spread, p3 not;
 * with stage2, p3's claim is the plan's second stage (solve.c). */
static Tailor__V1__SolveResponse *three_claims(bool stage2)
{
    Tailor__V1__SolveResponse *r = tk_resp(NULL);
    for (int i = 1; i <= 3; i++) {
        Tailor__V1__NodeClaim *nc = tk_claim(NULL, 0, "c5.large", NULL, NULL);
        char u[16];
        snprintf(u, sizeof(u), "p%d", i);
        TK_PUSH(nc->planned_pod_uids, nc->n_planned_pod_uids, tlr_strdup(u));
        if (stage2 && i == 3) {
            Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
            tailor__v1__label__init(l);
            l->key = tlr_strdup("tailor.sh/plan-stage");
            l->value = tlr_strdup("2");
            TK_PUSH(nc->annotations, nc->n_annotations, l);
        }
        TK_PUSH(r->new_nodeclaims, r->n_new_nodeclaims, nc);
    }
    return r;
}

typedef struct gate_fix {
    lc_fake f;
    Tailor__V1__Catalog *cat;
    lc_prov *p;
    lc_claim *c[3];   /* the claims of p1, p2, p3 */
} gate_fix;

static void gate_start2(gate_fix *g, int64_t gate_ms, int action, bool stage2)
{
    static const tlr_cluster_identity id = { "prod", "https://api.prod.example", "Q0EK",
                                             "10.100.0.0/16", NULL };
    lc_fake_init(&g->f);
    g->cat = tk_catalog();
    lc_prov_opts o = { 0 };
    o.cluster = "prod";
    o.clock = &g->f.clock;
    o.solver = lc_fake_solver(&g->f);
    o.cloud = lc_fake_cloud(&g->f);
    o.kube = lc_fake_kube(&g->f);
    o.catalog = g->cat;
    o.identity = &id;
    o.plan_gate_ms = gate_ms;
    lc_prov_create(&o, &g->p);
    g->f.solve_q[g->f.nsolve_q++] = three_claims(stage2);
    Tailor__V1__PendingBatch *b = tk_batch(3);
    spread_pod(b, "p1", action);
    spread_pod(b, "p2", action);
    assert_int_equal(lc_prov_batch(g->p, b, NULL), TLR_OK);
    lc_claims *cs = lc_prov_claims(g->p);
    assert_int_equal(lc_claims_count(cs), 3);
    for (size_t i = 0; i < 3; i++) {
        lc_claim *c = lc_claims_at(cs, i);
        int k = c->nc->planned_pod_uids[0][1] - '1';
        g->c[k] = c;
        assert_non_null(c->nc->status);
        assert_true(c->nc->status->instance_id[0]);
    }
}

static void gate_start(gate_fix *g, int64_t gate_ms, int action)
{
    gate_start2(g, gate_ms, action, false);
}

static void gate_node(gate_fix *g, int k, const char *name)
{
    lc_fake_add_node(&g->f, name, g->c[k]->nc->status->provider_id, true, "karpenter.sh/unregistered");
}

static size_t patches(const gate_fix *g, const char *node)
{
    char pre[64];
    snprintf(pre, sizeof(pre), "node_patch %s {\"metadata\":{\"resourceVersion\"", node);
    return lc_fake_count(&g->f, pre);
}

static void gate_stop(gate_fix *g)
{
    lc_prov_free(g->p);
    protobuf_c_message_free_unpacked(&g->cat->base, NULL);
    lc_fake_clear(&g->f);
}

/* A plan with zone-spread pods registers together: all its claims join
 * one gate (written to Kubernetes with the annotation); a node keeps its
 * unregistered taint while another node of the plan is missing, then all
 * register in one pass. */
static void test_plan_gate_together(void **state)
{
    (void)state;
    gate_fix g;
    gate_start(&g, 90000,
               TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE);
    const char *g1 = lc_plan_gate_of(g.c[0]->nc);
    assert_non_null(g1);
    for (int k = 1; k < 3; k++) {
        assert_non_null(lc_plan_gate_of(g.c[k]->nc));
        assert_string_equal(lc_plan_gate_of(g.c[k]->nc), g1);
    }
    size_t annotated = 0;
    for (size_t i = 0; i < g.f.ncalls; i++)
        annotated += strncmp(g.f.calls[i], "claim_create ", 13) == 0 &&
                     strstr(g.f.calls[i], "plan-gate\":\"default-") != NULL;
    assert_int_equal(annotated, 3);

    gate_node(&g, 0, "n1");
    gate_node(&g, 2, "n3");
    g.f.now_ms += 5000;
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1"), 0);   /* both wait for p2's node */
    assert_int_equal(patches(&g, "n3"), 0);
    assert_int_equal(g.c[0]->registered_ms, 0);
    g.f.now_ms += 5000;
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1") + patches(&g, "n3"), 0);
    gate_node(&g, 1, "n2");
    lc_prov_lifecycle(g.p);
    for (int k = 0; k < 3; k++) {
        char n[16];
        snprintf(n, sizeof(n), "n%d", k + 1);
        assert_int_equal(patches(&g, n), 1);
        assert_true(g.c[k]->registered_ms > 0);
        /* the registration took the unregistered taint off */
        const tlr_knode *node = lc_fake_node(&g.f, n);
        for (size_t i = 0; i < node->ntaints; i++)
            assert_string_not_equal(node->taints[i].key, "karpenter.sh/unregistered");
    }
    gate_stop(&g);
}

/* A plan's second stage comes after its first: the first stage's nodes
 * register without waiting for it; the second-stage node waits while a
 * first-stage claim has not registered, then while the first stage's pods
 * may still be binding (no batch since shows them bound), at most
 * LC_PLAN_STAGE_SETTLE_MS after the first stage's last registration. */
static void test_plan_gate_second_stage(void **state)
{
    (void)state;
    gate_fix g;
    gate_start2(&g, 90000,
                TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE, true);
    assert_int_equal(lc_plan_stage(g.c[2]->nc), 2);
    assert_int_equal(lc_plan_stage(g.c[0]->nc), 1);
    gate_node(&g, 0, "n1");
    gate_node(&g, 2, "n3");
    g.f.now_ms += 1000;
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1") + patches(&g, "n3"), 0);   /* p2's node is missing */
    gate_node(&g, 1, "n2");
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1"), 1);   /* the first stage, together */
    assert_int_equal(patches(&g, "n2"), 1);
    assert_int_equal(patches(&g, "n3"), 0);   /* p1 and p2 may still be binding */
    g.f.now_ms += LC_PLAN_STAGE_SETTLE_MS - 1000;
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n3"), 0);
    g.f.now_ms += 1000;
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n3"), 1);
    gate_stop(&g);
}

/* A sibling that never gets a Node holds the gate only until the gate
 * timeout after launch; a failed sibling not at all.  No gate without
 * the option, nor for ScheduleAnyway spreads. */
static void test_plan_gate_bounded(void **state)
{
    (void)state;
    gate_fix g;
    const int dns =
        TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE;
    gate_start(&g, 30000, dns);
    gate_node(&g, 0, "n1");
    g.f.now_ms += 29000;
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1"), 0);
    g.f.now_ms += 1000;
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1"), 1);   /* timed out: registered alone */
    gate_stop(&g);

    gate_start(&g, 30000, dns);
    lc_prov_set_phase(g.p, g.c[1], TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_FAILED);
    gate_node(&g, 0, "n1");
    g.f.now_ms += 1000;
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1"), 0);   /* p3's node is still missing */
    lc_prov_set_phase(g.p, g.c[2], TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_FAILED);
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1"), 1);   /* failed siblings hold nothing */
    gate_stop(&g);

    gate_start(&g, 0, dns);
    assert_null(lc_plan_gate_of(g.c[0]->nc));
    gate_stop(&g);
    gate_start(&g, 30000,
               TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_SCHEDULE_ANYWAY);
    for (int k = 0; k < 3; k++)
        assert_null(lc_plan_gate_of(g.c[k]->nc));
    gate_node(&g, 0, "n1");
    lc_prov_lifecycle(g.p);
    assert_int_equal(patches(&g, "n1"), 1);   /* no gate: registered at once */
    gate_stop(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_node_for_instance),
        cmocka_unit_test(test_registration_patch),
        cmocka_unit_test(test_initialized_waits),
        cmocka_unit_test(test_prov_registration),
        cmocka_unit_test(test_plan_gate_together),
        cmocka_unit_test(test_plan_gate_bounded),
        cmocka_unit_test(test_plan_gate_second_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
