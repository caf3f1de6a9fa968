/* provision_test.c - the launcher's provisioning against recording fakes:
 * NodeClaim written before CreateFleet, re-plan after insufficient
 * capacity, no double launch for pods already covered, catalog-miss
 * resend, idempotent Launch/Terminate, lifecycle and GC passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lc_fake.h"
#include "fleet.h"
#include "provision.h"
#include "prov_int.h"
#include "lc_testkit.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "metrics_testkit.h"

#define IN TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN

typedef struct fixture {
    lc_fake f;
    Tailor__V1__Catalog *cat;
    lc_prov *p;
    uint64_t seq;
    Tailor__V1__NodeClaimPhase phases[32];
    size_t nphases;
} fixture;

static uint64_t seq_rand(void *arg)
{
    return ++((fixture *)arg)->seq;
}

static void on_event(void *arg, const Tailor__V1__LaunchEvent *ev)
{
    fixture *fx = arg;
    if (ev->kind == TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_PHASE_CHANGED &&
        fx->nphases < 32)
        fx->phases[fx->nphases++] = ev->phase;
}

static const tlr_cluster_identity test_identity = {
    "prod", "https://api.prod.example:443", "Q0EK", "10.100.0.0/16", "10.100.0.10"
};

/* The options every test's prov is made with. */
static lc_prov_opts base_opts(fixture *fx)
{
    lc_prov_opts o = { 0 };
    o.cluster = "prod";
    o.clock = &fx->f.clock;
    o.solver = lc_fake_solver(&fx->f);
    o.cloud = lc_fake_cloud(&fx->f);
    o.kube = lc_fake_kube(&fx->f);
    o.catalog = fx->cat;
    o.rand = seq_rand;
    o.rand_arg = fx;
    o.publish = on_event;
    o.publish_arg = fx;
    o.identity = &test_identity;
    return o;
}

static int setup(void **state)
{
    fixture *fx = tlr_calloc(1, sizeof(*fx));
    lc_fake_init(&fx->f);
    fx->cat = tk_catalog();
    lc_prov_opts o = base_opts(fx);
    lc_prov_create(&o, &fx->p);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    lc_prov_free(fx->p);
    lc_fake_clear(&fx->f);
    protobuf_c_message_free_unpacked(&fx->cat->base, NULL);
    free(fx);
    return 0;
}

/* Index of the first call starting with prefix, or -1. */
static long call_index(const lc_fake *f, const char *prefix)
{
    for (size_t i = 0; i < f->ncalls; i++)
        if (strncmp(f->calls[i], prefix, strlen(prefix)) == 0)
            return (long)i;
    return -1;
}

static void dump_calls(const lc_fake *f)
{
    for (size_t i = 0; i < f->ncalls; i++)
        print_message("  call %zu: %.200s\n", i, f->calls[i]);
}

static void test_claim_written_before_launch(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 2, "m5.large", "c5.large", NULL));
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(2), &r), TLR_OK);
    assert_int_equal(r.launched, 1);
    assert_int_equal(r.pods_nominated, 2);
    long created = call_index(&fx->f, "claim_create default-");
    long fleet = call_index(&fx->f, "create_fleet default-");
    if (created < 0 || fleet < 0 || created > fleet) {
            fail_msg("claim_create at %ld, create_fleet at %ld: want create first", created, fleet);
    }
    /* Spot is allowed and offered: spot m5.large, cheapest zone first. */
    const char *fl = fx->f.calls[fleet];
    if (!strstr(fl, " spot m5.large/us-east-1b@0 m5.large/us-east-1a@1"))
        fail_msg("fleet call: got [%s]", fl);
    assert_int_equal(lc_fake_count(&fx->f, "event Pod default/p1 Normal Nominated"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "event Pod default/p2 Normal Nominated"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "event NodeClaim /default-"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "claim_status default-"), 1);
    /* the NodeClaim object carries the pool's ownerReference and class */
    const char *obj = fx->f.calls[created];
    assert_non_null(strstr(obj, "\"kind\":\"NodeClaim\""));
    assert_non_null(strstr(obj, "\"uid\":\"uid-np\""));
    assert_non_null(strstr(obj, "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\""));
    assert_int_equal(fx->nphases, 2);
    assert_int_equal(fx->phases[0], TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_PENDING);
    assert_int_equal(fx->phases[1], TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_LAUNCHED);
    if (getenv("DUMP_CALLS"))
        dump_calls(&fx->f);
}

static void test_kube_refuses_claim_no_launch(void **state)
{
    fixture *fx = *state;
    fx->f.kube_create_rc = TLR_E_AUTH;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "m5.large", NULL, NULL));
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), &r), TLR_OK);
    assert_int_equal(r.launched, 0);
    assert_int_equal(r.failed, 1);
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 0);
}

static void test_ice_falls_back_within_claim(void **state)
{
    fixture *fx = *state;
    /* Both spot offerings of m5.large are out of capacity: the same claim
     * is relaunched on-demand at once, without a new Solve. */
    fx->f.ice_offerings[fx->f.nice++] = "m5.large/us-east-1a/spot";
    fx->f.ice_offerings[fx->f.nice++] = "m5.large/us-east-1b/spot";
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "m5.large", NULL, NULL));
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), &r), TLR_OK);
    if (r.solves != 1 || r.launched != 1) {
        dump_calls(&fx->f);
        fail_msg("got solves=%d launched=%d want 1 1", r.solves, r.launched);
    }
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet default-cbbbb spot"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet default-cbbbb on-demand m5.large/us-east-1a@0 m5.large/us-east-1b@1"), 1);
    assert_int_equal(lc_ice_count(lc_prov_ice(fx->p)), 2);
    const Tailor__V1__NodeClaimStatus *st = lc_claims_at(lc_prov_claims(fx->p), 0)->nc->status;
    assert_int_equal(st->capacity_type, TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND);
    /* the offering stays skipped for its TTL, and is tried again after */
    assert_true(lc_ice_unavailable(lc_prov_ice(fx->p), "m5.large", "us-east-1b",
                                   TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT));
    fx->f.now_ms += LC_ICE_TTL_MS;
    assert_false(lc_ice_unavailable(lc_prov_ice(fx->p), "m5.large", "us-east-1b",
                                    TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT));
}

static void test_ice_replans_onto_other_type(void **state)
{
    fixture *fx = *state;
    fx->f.ice_offerings[fx->f.nice++] = "m5.large/us-east-1a/spot";
    fx->f.ice_offerings[fx->f.nice++] = "m5.large/us-east-1b/spot";
    Tailor__V1__NodeClaim *first = tk_claim(NULL, 1, "m5.large", NULL, NULL);
    tk_req(first, "karpenter.sh/capacity-type", IN, "spot", NULL);
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(first);
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), &r), TLR_OK);
    if (r.solves != 2 || r.launched != 1 || r.failed != 1) {
        dump_calls(&fx->f);
        fail_msg("got solves=%d launched=%d failed=%d want 2 1 1", r.solves, r.launched,
                 r.failed);
    }
    /* the re-plan carried the ICE cache to the solver */
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=2"), 1);
    assert_int_equal(fx->f.last_solve->n_unavailable_offerings, 2);
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet default-"), 2);
    assert_int_equal(lc_fake_count(&fx->f, "event NodeClaim /default-cbbbb Warning InsufficientCapacity"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "event NodeClaim /default-dbbbb Normal Launched"), 1);
    assert_int_equal(lc_claims_count(lc_prov_claims(fx->p)), 1);
    assert_string_equal(lc_claims_at(lc_prov_claims(fx->p), 0)->nc->status->instance_type,
                        "c5.large");
}

static void test_no_double_launch(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 2, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(2), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 1);
    /* Same pods again, the watcher has not seen the claim yet.  The solver
     * must be told about it with its planned pods. */
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(2), &r), TLR_OK);
    const Tailor__V1__ClusterState *cs = fx->f.last_solve->cluster;
    assert_int_equal(cs->n_nodeclaims, 1);
    assert_int_equal(cs->nodeclaims[0]->n_planned_pod_uids, 2);
    assert_string_equal(cs->nodeclaims[0]->planned_pod_uids[1], "p2");
    assert_string_equal(cs->nodeclaims[0]->status->instance_type, "c5.large");
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 1);
    assert_int_equal(r.launched, 0);
}

/* Karpenter's MIN_VALUES_POLICY / PREFERENCE_POLICY reach the solver with
 * every Solve: BestEffort lets it relax minValues rather than refuse. */
static void test_policies_sent_with_solve(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 2, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(2), NULL), TLR_OK);
    const Tailor__V1__SolveOptions *o = fx->f.last_solve->options;
    assert_non_null(o);
    assert_int_equal(o->min_values_policy, TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_UNSPECIFIED);
    lc_prov_free(fx->p);
    lc_prov_opts po = base_opts(fx);
    po.min_values_policy = TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT;
    po.preference_policy = TAILOR__V1__PREFERENCE_POLICY__PREFERENCE_POLICY_IGNORE;
    lc_prov_create(&po, &fx->p);
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    o = fx->f.last_solve->options;
    assert_non_null(o);
    assert_int_equal(o->min_values_policy, TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT);
    assert_int_equal(o->preference_policy, TAILOR__V1__PREFERENCE_POLICY__PREFERENCE_POLICY_IGNORE);
}

/* ---- cluster by reference ------------------------------------------------ */

#define EPOCH 1700000000000LL

static Tailor__V1__Node *ref_node(const char *name, int64_t cpu_m)
{
    Tailor__V1__Node *n = tlr_malloc(sizeof(*n));
    tailor__v1__node__init(n);
    n->name = tlr_strdup(name);
    n->nodepool = tlr_strdup("default");
    n->capacity = tlr_malloc(sizeof(*n->capacity));
    tailor__v1__resource_list__init(n->capacity);
    n->capacity->cpu_millis = cpu_m;
    return n;
}

/* cs goes by reference as generation gen: a delta from base (0 = whole)
 * with nodes (comma-separated names, 2000m each; "" = none) changed and
 * removed (one name or NULL) removed. */
static void set_by_ref(Tailor__V1__ClusterState *cs, uint64_t gen, uint64_t base, const char *nodes,
                       const char *removed)
{
    Tailor__V1__ClusterRef *ref = tlr_malloc(sizeof(*ref));
    tailor__v1__cluster_ref__init(ref);
    ref->has_delta = true;
    ref->base_generation = base;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", nodes);
    for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
        TK_PUSH(ref->nodes, ref->n_nodes, ref_node(t, 2000));
    if (removed)
        TK_PUSH(ref->removed_nodes, ref->n_removed_nodes, tlr_strdup(removed));
    cs->by_ref = ref;
    cs->generation = gen;
    cs->watcher_epoch_unix_ms = EPOCH;
    cs->synced = true;
}

static Tailor__V1__PendingBatch *ref_batch(uint64_t gen, uint64_t base, const char *nodes,
                                           const char *removed)
{
    Tailor__V1__PendingBatch *b = tk_batch(1);
    set_by_ref(b->cluster, gen, base, nodes, removed);
    return b;
}

/* The whole cluster as the launcher saw it in its last batch. */
static const char *batch_nodes(const lc_prov *p, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->batch->cluster->n_nodes && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "",
                                p->batch->cluster->nodes[i]->name);
    return buf;
}

/* Batches whose cluster comes by reference: the launcher applies each
 * delta and sees the whole cluster; it sends the solvers a delta from the
 * state a solver last took (whole the first time); a solver that does not
 * hold that base gets a delta from one it does hold; a batch whose base
 * the launcher never saw (a lost batch) is followed by a Snapshot from
 * the watcher instead of being lost. */
static void test_cluster_by_reference(void **state)
{
    fixture *fx = *state;
    lc_prov_free(fx->p);
    lc_prov_opts o = base_opts(fx);
    o.watcher = lc_fake_watcher(&fx->f);
    lc_prov_create(&o, &fx->p);
    char buf[256];

    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(NULL);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(10, 0, "n-b,n-a,n-c", NULL), NULL), TLR_OK);
    assert_string_equal(batch_nodes(fx->p, buf, sizeof(buf)), "n-a,n-b,n-c");
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=10 base=0 nodes=3"), 1);

    /* one node changes, one goes: the solver gets just that */
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(NULL);
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(12, 10, "n-c", "n-b"), &r), TLR_OK);
    assert_string_equal(batch_nodes(fx->p, buf, sizeof(buf)), "n-a,n-c");
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=12 base=10 nodes=1 removed=1"), 1);
    assert_true(r.solve_bytes > 0);

    /* a batch from a base never seen: a Snapshot by reference from the
     * newest state held (12) gives the watcher's current state (21) */
    Tailor__V1__SnapshotResponse *snap = tlr_malloc(sizeof(*snap));
    tailor__v1__snapshot_response__init(snap);
    Tailor__V1__PendingBatch *tmp = tk_batch(0);   /* its NodePools and classes */
    snap->cluster = tmp->cluster;
    tmp->cluster = NULL;
    protobuf_c_message_free_unpacked(&tmp->base, NULL);
    set_by_ref(snap->cluster, 21, 12, "n-d", NULL);
    fx->f.snap_q[fx->f.nsnap_q++] = snap;
    /* ... and the replica asked has restarted: it holds only 10 */
    Tailor__V1__SolveResponse *miss = tk_resp(NULL);
    miss->cluster_miss = true;
    miss->held_generations = tlr_malloc(sizeof(uint64_t));
    miss->held_generations[0] = 10;
    miss->n_held_generations = 1;
    fx->f.solve_q[fx->f.nsolve_q++] = miss;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(NULL);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(20, 15, "n-e", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "snapshot by_reference=1 epoch=1700000000000 base=12"), 1);
    assert_string_equal(batch_nodes(fx->p, buf, sizeof(buf)), "n-a,n-c,n-d");
    dump_calls(&fx->f);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=21 base=12 nodes=1 removed=0"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=21 base=10 nodes=2 removed=1"), 1);

    /* a replica that predates by_ref solves against no nodes (its reply
     * names no cluster generation): not acted on, the whole state goes
     * inline and that answer is used */
    fx->f.solver_predates_by_ref = true;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "m5.large", NULL, NULL));
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(NULL);
    size_t claims_before = lc_fake_count(&fx->f, "claim_create");
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(22, 21, "n-a", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=22 base=21 nodes=1"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=inline"), 1);
    assert_int_equal(fx->f.last_solve->cluster->n_nodes, 3);
    assert_int_equal(lc_fake_count(&fx->f, "claim_create"), claims_before);
    fx->f.solver_predates_by_ref = false;

    /* the watcher cannot answer: the batch is skipped, nothing is solved,
     * and the launcher keeps the last cluster it knew */
    size_t solves = lc_fake_count(&fx->f, "solve ");
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(30, 25, "n-f", NULL), NULL), TLR_E_UNAVAILABLE);
    assert_int_equal(lc_fake_count(&fx->f, "solve "), solves);
    assert_string_equal(batch_nodes(fx->p, buf, sizeof(buf)), "n-a,n-c,n-d");
}

static Tailor__V1__SolveResponse *from_replica(const char *id, bool miss)
{
    Tailor__V1__SolveResponse *r = tk_resp(NULL);
    r->solver_replica_id = tlr_strdup(id);
    r->cluster_miss = miss;
    return r;
}

/* Solver replicas behind one URL: the transport picks which one answers.
 * A replica that holds nothing we named says so and gets the whole state
 * after a second miss; once each is known, one delta names every
 * replica's last state, so whichever answers can apply it. */
static void test_cluster_by_reference_replicas(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/a/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(10, 0, "n-a,n-b", NULL), NULL), TLR_OK);

    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/b/1", true);
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/b/1", true);
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/b/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(12, 10, "n-c", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=12 base=10 nodes=1"), 2);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=12 base=0 nodes=3"), 1);

    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/a/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(14, 12, "n-d", NULL), NULL), TLR_OK);
    const Tailor__V1__ClusterRef *ref = fx->f.last_solve->cluster->by_ref;
    assert_non_null(ref);
    uint64_t b0 = ref->base_generation, b1 = ref->n_also_applies_to ? ref->also_applies_to[0] : 0;
    assert_true((b0 == 10 && b1 == 12) || (b0 == 12 && b1 == 10));
    assert_int_equal(ref->n_nodes, 2);   /* n-c (new since 10) and n-d */
    assert_int_equal(lc_fake_count(&fx->f, "solve "), 5);
}

/* Calls take the solver connections in turn, so the resend after a miss
 * is usually answered by another replica: the one that missed (a replica
 * added by a scale-out) would miss every call by reference and never
 * solve.  Until it answers one, Solves carry the whole cluster state and
 * the catalogs; then deltas by hash resume. */
static void test_cluster_replica_starved(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/a/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(10, 0, "n-a,n-b", NULL), NULL), TLR_OK);

    /* b is new: it misses, and the resend reaches a */
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/b/1", true);
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/a/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(12, 10, "n-c", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=12 base=10 nodes=1"), 2);

    /* b still holds nothing: the next Solves go whole, with catalogs,
     * until b answers one (here the second) */
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/a/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(14, 12, "n-d", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=full cluster=ref gen=14 base=0 nodes=4"), 1);
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/b/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(16, 14, "n-e", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=full cluster=ref gen=16 base=0 nodes=5"), 1);

    /* both hold a state now: a delta by hash again */
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/a/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(18, 16, "n-f", NULL), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash cluster=ref gen=18"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "solve "), 6);
}

/* A replica that missed and was scaled in stops forcing whole Solves
 * after LC_REPLICA_STARVED_SOLVES answers from the others. */
static void test_cluster_replica_starved_expires(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/b/1", true);
    fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/a/1", false);
    assert_int_equal(lc_prov_batch(fx->p, ref_batch(10, 0, "n-a", NULL), NULL), TLR_OK);
    uint64_t gen = 10;
    for (int i = 0; i < LC_REPLICA_STARVED_SOLVES + 2; i++) {
        fx->f.solve_q[fx->f.nsolve_q++] = from_replica("solver/a/1", false);
        assert_int_equal(lc_prov_batch(fx->p, ref_batch(gen + 1, gen, "", NULL), NULL), TLR_OK);
        gen++;
    }
    /* the Solves after the miss went whole, then by hash again */
    assert_null(fx->f.last_solve->catalogs[0]->catalog);
    assert_int_equal(fx->f.last_solve->cluster->by_ref->base_generation, gen - 1);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=full"),
                     LC_REPLICA_STARVED_SOLVES - 1);
}

static void test_catalog_miss_resend(void **state)
{
    fixture *fx = *state;
    Tailor__V1__SolveResponse *miss = tk_resp(NULL);
    miss->catalog_miss = true;
    fx->f.solve_q[fx->f.nsolve_q++] = miss;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), &r), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=hash"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "solve pods=1 claims=0 ice=0 catalog=full"), 1);
    assert_string_equal(fx->f.last_solve->catalogs[0]->catalog->hash, "cafe01");
    assert_string_equal(fx->f.last_solve->catalogs[0]->node_classes[0], "default");
    assert_int_equal(r.launched, 1);
}

/* Send a LaunchRequest of ncs[0..n) (borrowed), as the disruptor does
 * for a replacement; the response (owned) has one result per claim. */
static Tailor__V1__LaunchResponse *launch_claims(fixture *fx, Tailor__V1__NodeClaim **ncs,
                                                 size_t n)
{
    Tailor__V1__LaunchRequest req = TAILOR__V1__LAUNCH_REQUEST__INIT;
    req.nodeclaims = ncs;
    req.n_nodeclaims = n;
    req.reason = "consolidation-replace:d1";
    Tailor__V1__LaunchResponse *resp;
    lc_prov_launch(fx->p, &req, &resp);
    assert_int_equal(resp->n_results, n);
    return resp;
}

static void test_launch_request_idempotent(void **state)
{
    fixture *fx = *state;
    Tailor__V1__NodeClaim *nc = tk_claim("repl-1", 1, "c5.large", NULL, NULL);
    for (int round = 0; round < 2; round++) {
        Tailor__V1__LaunchResponse *resp = launch_claims(fx, &nc, 1);
        assert_int_equal(resp->results[0]->status->code, TLR_OK);
        assert_string_equal(resp->results[0]->instance_id, "i-00001");
        assert_string_equal(resp->results[0]->provider_id, "aws:///us-east-1a/i-00001");
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 1);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
}

/* A LaunchRequest (the disruptor's replacement) re-checks its NodePool's
 * limits with what runs and what is in flight before buying: the first
 * replacement fits exactly, the second would pass the cpu limit and is
 * refused, naming the pool and the limit, with nothing bought or written. */
static void test_launch_request_limits(void **state)
{
    fixture *fx = *state;
    for (size_t i = 0; i < fx->cat->n_instance_types; i++) {
        Tailor__V1__InstanceType *it = fx->cat->instance_types[i];
        it->capacity = tlr_malloc(sizeof(*it->capacity));
        tailor__v1__resource_list__init(it->capacity);
        it->capacity->cpu_millis = 2000;
    }
    /* The batch that shows the pool: limit 10 cpu, one Node of 8 up. */
    Tailor__V1__PendingBatch *b = tk_batch(1);
    Tailor__V1__NodePool *np = b->cluster->nodepools[0];
    np->limits = tlr_malloc(sizeof(*np->limits));
    tailor__v1__node_pool_limits__init(np->limits);
    np->limits->has_cpu = true;
    np->limits->cpu_millis = 10000;
    Tailor__V1__Node *n = tlr_malloc(sizeof(*n));
    tailor__v1__node__init(n);
    n->name = tlr_strdup("old");
    n->nodepool = tlr_strdup("default");
    n->capacity = tlr_malloc(sizeof(*n->capacity));
    tailor__v1__resource_list__init(n->capacity);
    n->capacity->cpu_millis = 8000;
    TK_PUSH(b->cluster->nodes, b->cluster->n_nodes, n);
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(NULL);
    assert_int_equal(lc_prov_batch(fx->p, b, NULL), TLR_OK);

    const char *names[2] = { "repl-1", "repl-2" };
    const int want[2] = { TLR_OK, TLR_E_CAPACITY };
    for (int i = 0; i < 2; i++) {
        Tailor__V1__NodeClaim *nc = tk_claim(names[i], 1, "c5.large", NULL, NULL);
        Tailor__V1__LaunchResponse *resp = launch_claims(fx, &nc, 1);
        const Tailor__V1__Status *st = resp->results[0]->status;
        if ((int)st->code != want[i])
            fail_msg("%s: got %d %s (%s), want %d", names[i], (int)st->code, st->reason, st->message,
                     want[i]);
        if (i == 1) {
            assert_string_equal(st->reason, "NodePoolLimitExceeded");
            assert_non_null(strstr(st->message, "NodePool default limit cpu 10000m"));
            assert_non_null(strstr(st->message, "10000m in use or in flight"));
        }
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        protobuf_c_message_free_unpacked(&nc->base, NULL);
    }
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "claim_create repl-2"), 0);
    assert_int_equal(lc_fake_count(&fx->f, "claim_create repl-1"), 1);
}

/* A LaunchRequest claim whose name the API server would refuse (a path
 * segment, bytes that are not text, upper case) is refused InvalidName:
 * no NodeClaim written, nothing bought, the bytes not echoed in the
 * message; a good name in the same request is launched. */
static void test_launch_request_names(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(NULL);
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    const char *names[4] = { "../nodes", "bad\xff\xfename", "Repl-1", "repl-ok" };
    Tailor__V1__NodeClaim *ncs[4];
    for (int i = 0; i < 4; i++)
        ncs[i] = tk_claim(names[i], 1, "c5.large", NULL, NULL);
    Tailor__V1__LaunchResponse *resp = launch_claims(fx, ncs, 4);
    for (int i = 0; i < 3; i++) {
        const Tailor__V1__Status *st = resp->results[i]->status;
        assert_int_equal((int)st->code, TLR_E_INVAL);
        assert_string_equal(st->reason, "InvalidName");
        assert_null(strstr(st->message, names[i]));
    }
    assert_int_equal((int)resp->results[3]->status->code, TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "claim_create repl-ok"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "claim_create ../nodes"), 0);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    for (int i = 0; i < 4; i++)
        protobuf_c_message_free_unpacked(&ncs[i]->base, NULL);
}

static void test_terminate(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    char name[64];
    snprintf(name, sizeof(name), "%s", lc_claims_at(lc_prov_claims(fx->p), 0)->nc->name);
    Tailor__V1__TerminateItem a = TAILOR__V1__TERMINATE_ITEM__INIT, b = a;
    a.nodeclaim_name = name;
    b.nodeclaim_name = "never-existed";
    Tailor__V1__TerminateItem *items[2] = { &a, &b };
    Tailor__V1__TerminateRequest req = TAILOR__V1__TERMINATE_REQUEST__INIT;
    req.items = items;
    req.n_items = 2;
    Tailor__V1__TerminateResponse *resp;
    lc_prov_terminate(fx->p, &req, &resp);
    assert_int_equal(resp->n_results, 2);
    assert_int_equal(resp->results[0]->status->code, TLR_OK);
    assert_string_equal(resp->results[0]->instance_id, "i-00001");
    assert_int_equal(resp->results[1]->status->code, TLR_OK);   /* absent: success */
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-00001"), 1);
    assert_int_equal(lc_claims_count(lc_prov_claims(fx->p)), 0);
}

/* The launcher's port terminates only what is the cluster's: a bare
 * instance id that no claim tag marks (another team's instance, or one of
 * an ASG) is refused; one tagged for a claim is terminated; a claim name
 * with a caller's instance id that is not the claim's leaves that
 * instance alone. */
static void test_terminate_only_ours(void **state)
{
    fixture *fx = *state;
    lc_fake_add_instance(&fx->f, "i-stranger", NULL, fx->f.now_ms - 60000);
    lc_fake_add_instance(&fx->f, "i-orphan", "gone-claim", fx->f.now_ms - 60000);
    Tailor__V1__TerminateItem a = TAILOR__V1__TERMINATE_ITEM__INIT, b = a, c = a, d = a;
    a.instance_id = "i-stranger";
    b.instance_id = "i-orphan";
    c.nodeclaim_name = "unknown-claim";
    c.instance_id = "i-stranger";
    d.instance_id = "i-nonexistent";
    Tailor__V1__TerminateItem *items[4] = { &a, &b, &c, &d };
    Tailor__V1__TerminateRequest req = TAILOR__V1__TERMINATE_REQUEST__INIT;
    req.items = items;
    req.n_items = 4;
    Tailor__V1__TerminateResponse *resp;
    lc_prov_terminate(fx->p, &req, &resp);
    assert_int_equal(resp->n_results, 4);
    assert_int_equal(resp->results[0]->status->code, TLR_E_AUTH);
    assert_string_equal(resp->results[0]->status->reason, "NotOwned");
    assert_int_equal(resp->results[1]->status->code, TLR_OK);
    assert_int_equal(resp->results[2]->status->code, TLR_OK);   /* the claim: absent, fine */
    assert_string_equal(resp->results[2]->instance_id, "");
    assert_int_equal(resp->results[3]->status->code, TLR_E_AUTH);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-stranger"), 0);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-nonexistent"), 0);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-orphan"), 1);
}

static void test_lifecycle_pass(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    lc_prov_lifecycle(fx->p);   /* no node yet */
    assert_int_equal(lc_claims_count(lc_prov_claims(fx->p)), 1);
    lc_fake_add_node(&fx->f, "ip-10-0-0-9", "aws:///us-east-1a/i-00001", false, NULL);
    lc_prov_lifecycle(fx->p);
    assert_int_equal(lc_claims_at(lc_prov_claims(fx->p), 0)->nc->status->phase,
                     TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_REGISTERED);
    fx->f.nodes.v[0].ready = true;
    lc_prov_lifecycle(fx->p);
    assert_int_equal(fx->phases[fx->nphases - 1],
                     TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_INITIALIZED);
    /* Initialized, but p1 still shows pending in the next batch (taken
     * before the scheduler bound it): still in flight, nothing bought. */
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(fx->f.last_solve->cluster->n_nodeclaims, 1);
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 1);
    /* Once p1 is bound (no longer pending) the claim is settled. */
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(0), NULL), TLR_OK);
    assert_int_equal(fx->f.last_solve->cluster->n_nodeclaims, 0);
    assert_int_equal(lc_claims_count(lc_prov_claims(fx->p)), 0);
}

static void test_liveness_and_gc(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    fx->f.now_ms += 15 * 60 * 1000;   /* never registered */
    lc_prov_lifecycle(fx->p);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-00001"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "claim_delete default-"), 1);
    assert_int_equal(lc_claims_count(lc_prov_claims(fx->p)), 0);
    /* A leaked instance (its claim never written) is collected after 30 s. */
    lc_fake_add_instance(&fx->f, "i-leak", "ghost", fx->f.now_ms - 31000);
    lc_prov_gc(fx->p);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-leak"), 1);
}

/* Between GC's two reads a NodeClaim recording the "leaked" instance is
 * written (a launch that finished meanwhile, or a replica that led a
 * moment ago): the two reads disagree, nothing is terminated. */
static void written_meanwhile(lc_fake *f, int nth)
{
    if (nth == 2)
        lc_fake_add_claim(f, "late", "i-late", f->now_ms, false);
}

static void test_gc_rechecks(void **state)
{
    fixture *fx = *state;
    lc_fake_add_instance(&fx->f, "i-late", "late", fx->f.now_ms - 31000);
    fx->f.on_claims_list = written_meanwhile;
    lc_prov_gc(fx->p);
    assert_int_equal(lc_fake_count(&fx->f, "claims_list"), 2);
    assert_int_equal(lc_fake_count(&fx->f, "terminate"), 0);
    /* The next pass sees the claim both times: still nothing to collect. */
    lc_prov_gc(fx->p);
    assert_int_equal(lc_fake_count(&fx->f, "terminate"), 0);
}

/* A replica that lost the Lease and got it back does not trust its memory:
 * the other leader deleted its claim and terminated the instance in
 * between, so the claim is no longer in flight -- its pod is planned
 * again instead of being taken as covered. */
static void test_new_term_forgets(void **state)
{
    fixture *fx = *state;
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(lc_claims_count(lc_prov_claims(fx->p)), 1);
    char name[64];
    snprintf(name, sizeof(name), "%s", lc_claims_at(lc_prov_claims(fx->p), 0)->nc->name);
    lc_prov_forget_adoption(fx->p);   /* lost the Lease */
    /* The other leader's work. */
    lc_kube_ops k = lc_fake_kube(&fx->f);
    lc_cloud_ops c = lc_fake_cloud(&fx->f);
    const char *ids[1] = { "i-00001" };
    tlr_aws_error err;
    assert_int_equal(k.claim_delete(k.arg, name), TLR_OK);
    assert_int_equal(c.terminate(c.arg, ids, 1, &err), TLR_OK);
    lc_prov_forget_adoption(fx->p);   /* leading again */
    assert_int_equal(lc_claims_count(lc_prov_claims(fx->p)), 0);
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(fx->f.last_solve->cluster->n_nodeclaims, 0);   /* nothing stale in flight */
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 2);
}

/* Two leaders (or a retry) terminating the same bare instance: the
 * second finds it shutting down and answers success without another
 * TerminateInstances; a stranger's instance that is shutting down is
 * still not ours. */
static void test_terminate_twice(void **state)
{
    fixture *fx = *state;
    lc_fake_add_instance(&fx->f, "i-orphan", "gone-claim", fx->f.now_ms - 60000);
    lc_fake_add_instance(&fx->f, "i-stranger", NULL, fx->f.now_ms - 60000);
    lc_cloud_ops c = lc_fake_cloud(&fx->f);
    const char *ids[1] = { "i-stranger" };
    tlr_aws_error err;
    assert_int_equal(c.terminate(c.arg, ids, 1, &err), TLR_OK);   /* its owner's doing */
    Tailor__V1__TerminateItem a = TAILOR__V1__TERMINATE_ITEM__INIT, b = a;
    a.instance_id = "i-orphan";
    b.instance_id = "i-stranger";
    Tailor__V1__TerminateItem *items[2] = { &a, &b };
    Tailor__V1__TerminateRequest req = TAILOR__V1__TERMINATE_REQUEST__INIT;
    req.items = items;
    req.n_items = 2;
    for (int round = 0; round < 2; round++) {
        Tailor__V1__TerminateResponse *resp;
        lc_prov_terminate(fx->p, &req, &resp);
        assert_int_equal(resp->results[0]->status->code, TLR_OK);
        assert_string_equal(resp->results[0]->instance_state, "shutting-down");
        assert_int_equal(resp->results[1]->status->code, TLR_E_AUTH);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-orphan"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-stranger"), 1);   /* only the owner's */
}

/* A plan of three c5.large claims alike (pods p1, p2, p3) and one
 * m5.large claim, which differs. */
static Tailor__V1__SolveResponse *three_alike(void)
{
    Tailor__V1__SolveResponse *resp = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    for (int i = 2; i <= 3; i++) {
        Tailor__V1__NodeClaim *nc = tk_claim(NULL, 0, "c5.large", NULL, NULL);
        char u[16];
        snprintf(u, sizeof(u), "p%d", i);
        TK_PUSH(nc->planned_pod_uids, nc->n_planned_pod_uids, tlr_strdup(u));
        TK_PUSH(resp->new_nodeclaims, resp->n_new_nodeclaims, nc);
    }
    TK_PUSH(resp->new_nodeclaims, resp->n_new_nodeclaims, tk_claim(NULL, 0, "m5.large", NULL, NULL));
    return resp;
}

/* Three claims alike (same pool, options, zone rule): one CreateFleet with
 * target 3, each claim its own instance, each instance its claim's tag. */
static void test_identical_claims_batched(void **state)
{
    fixture *fx = *state;
    Tailor__V1__SolveResponse *resp = three_alike();
    fx->f.solve_q[fx->f.nsolve_q++] = resp;
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(3), &r), TLR_OK);
    if (r.launched != 4 || r.fleets != 2) {
        dump_calls(&fx->f);
        fail_msg("got launched=%d fleets=%d want 4 2", r.launched, r.fleets);
    }
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet tailor-"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet default-"), 1);
    long batched = call_index(&fx->f, "create_fleet tailor-");
    assert_non_null(strstr(fx->f.calls[batched], " x3"));
    /* a launch template per class and AMI, made once */
    assert_int_equal(lc_fake_count(&fx->f, "launch_template default ami-x86"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "tag i-0000"), 3);
    assert_int_equal(lc_fake_count(&fx->f, "claim_status default-"), 4);
    lc_claims *cl = lc_prov_claims(fx->p);
    assert_int_equal(lc_claims_count(cl), 4);
    for (size_t i = 0; i < 4; i++)
        for (size_t j = i + 1; j < 4; j++)
            assert_string_not_equal(lc_claims_at(cl, i)->nc->status->instance_id,
                                    lc_claims_at(cl, j)->nc->status->instance_id);
    /* every batched instance carries its own claim's tag */
    for (size_t i = 0; i < 4; i++) {
        const lc_claim *c = lc_claims_at(cl, i);
        const tlr_ec2_instance *in = NULL;
        for (size_t k = 0; k < fx->f.instances.n; k++)
            if (strcmp(fx->f.instances.v[k].id, c->nc->status->instance_id) == 0)
                in = &fx->f.instances.v[k];
        assert_non_null(in);
        assert_string_equal(tlr_ec2_instance_tag(in, "karpenter.sh/nodeclaim"), c->nc->name);
    }
}

/* The EC2NodeClass gets its resolved subnets, security groups and AMIs and
 * Ready conditions; the fleet uses the fullest subnet of each zone. */
static void test_nodeclass_resolved(void **state)
{
    fixture *fx = *state;
    Tailor__V1__NodeClaim *nc = tk_claim(NULL, 1, "c5.large", NULL, NULL);
    tk_req(nc, "karpenter.sh/capacity-type", IN, "on-demand", NULL);
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(nc);
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    long st = call_index(&fx->f, "nodeclass_status default ");
    assert_true(st >= 0);
    const char *js = fx->f.calls[st];
    static const char *const want[] = {
        "{\"id\":\"subnet-b\",\"zone\":\"us-east-1b\"}", "\"securityGroups\":[{\"id\":\"sg-1\"",
        "\"amis\":[{\"id\":\"ami-x86\"", "\"values\":[\"amd64\"]",
        "{\"type\":\"SubnetsReady\",\"status\":\"True\"",
        "{\"type\":\"Ready\",\"status\":\"True\"",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(js, want[i]))
            fail_msg("status patch lacks %s: got %s", want[i], js);
    lc_class *c = lc_classes_get(lc_prov_classes(fx->p), "default");
    assert_non_null(c);
    assert_true(c->ready);
    /* zone a: subnet-a (200 free) over subnet-a2 (50) */
    lc_fleet f;
    lc_fleet_in in = { lc_claims_at(lc_prov_claims(fx->p), 0)->nc, fx->cat, c->nc, NULL, "prod",
                       "lt-1", NULL };
    assert_int_equal(lc_fleet_build(&in, &f), TLR_OK);
    for (size_t i = 0; i < f.nov; i++) {
        const char *want_subnet = strcmp(f.ov[i].zone, "us-east-1a") == 0   ? "subnet-a"
                                  : strcmp(f.ov[i].zone, "us-east-1b") == 0 ? "subnet-b"
                                                                            : "subnet-c";
        assert_string_equal(f.ov[i].subnet_id, want_subnet);
    }
    lc_fleet_clear(&f);
    /* the same again within the refresh time: no new Describe calls, no new status */
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "subnets "), 1);
    assert_int_equal(lc_fake_count(&fx->f, "nodeclass_status "), 1);
}

/* EC2 refuses our credentials: the class is not ready, says why, is in no
 * catalog, and is not asked again before its back-off. */
static void test_nodeclass_auth_failure(void **state)
{
    fixture *fx = *state;
    fx->f.describe_rc = TLR_E_AUTH;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(fx->f.last_solve->n_catalogs, 0);
    long st = call_index(&fx->f, "nodeclass_status default ");
    assert_true(st >= 0);
    assert_non_null(strstr(fx->f.calls[st], "{\"type\":\"SubnetsReady\",\"status\":\"False\","
                                            "\"reason\":\"SubnetsNotResolved\",\"message\":\"AuthFailure: "));
    assert_int_equal(lc_fake_count(&fx->f, "event EC2NodeClass /default Warning NotReady"), 1);
    for (int i = 0; i < 5; i++) {
        fx->f.now_ms += 1000;
        assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    }
    assert_int_equal(lc_fake_count(&fx->f, "subnets "), 1);   /* backing off: 10 s */
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 0);
    /* credentials fixed: after the back-off the class resolves and is ready */
    fx->f.describe_rc = 0;
    fx->f.now_ms += 10000;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "subnets "), 2);
    assert_int_equal(fx->f.last_solve->n_catalogs, 1);
    assert_int_equal(lc_fake_count(&fx->f, "event EC2NodeClass /default Normal Ready"), 1);
}

/* An AMI selector that matches nothing: AMIsReady False, nothing launched. */
static void test_bad_ami_selector(void **state)
{
    fixture *fx = *state;
    Tailor__V1__PendingBatch *b = tk_batch(1);
    Tailor__V1__NodeClass *nc = b->cluster->node_classes[0];
    free(nc->ami_selector_terms[0]->id);
    nc->ami_selector_terms[0]->id = tlr_strdup("ami-doesnotexist");
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    assert_int_equal(lc_prov_batch(fx->p, b, NULL), TLR_OK);
    assert_int_equal(fx->f.last_solve->n_catalogs, 0);
    long st = call_index(&fx->f, "nodeclass_status default ");
    assert_non_null(strstr(fx->f.calls[st], "{\"type\":\"AMIsReady\",\"status\":\"False\","
                                            "\"reason\":\"AMINotFound\",\"message\":\"AMISelector did not match any AMIs: "
                                            "amiSelectorTerms resolve to no image: image ami-doesnotexist does not exist\""));
    assert_non_null(strstr(fx->f.calls[st], "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"AMINotFound\""));
    /* the solver's claim (it had no catalog for the class, but say it
     * answered one anyway): refused before any EC2 call */
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 0);
    assert_int_equal(lc_fake_count(&fx->f, "launch_template"), 0);
}

/* A launch-template failure (not capacity) pauses the class: the next
 * batches leave it out of the catalogs instead of launching and failing. */
static void test_launch_failure_backs_off(void **state)
{
    fixture *fx = *state;
    fx->f.lt_rc = TLR_E_AUTH;
    fx->f.lt_code = "UnauthorizedOperation";
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", NULL, NULL));
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), &r), TLR_OK);
    assert_int_equal(r.failed, 1);
    assert_int_equal(lc_fake_count(&fx->f, "event NodeClaim /default-cbbbb Warning LaunchFailed"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "claim_delete default-cbbbb"), 1);
    long st = -1;
    for (size_t i = 0; i < fx->f.ncalls; i++)
        if (strncmp(fx->f.calls[i], "nodeclass_status", 16) == 0)
            st = (long)i;
    assert_non_null(strstr(fx->f.calls[st], "{\"type\":\"ValidationSucceeded\",\"status\":\"False\","
                                            "\"reason\":\"UnauthorizedOperation\""));
    for (int i = 0; i < 5; i++) {
        fx->f.now_ms += 1000;
        assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
        assert_int_equal(fx->f.last_solve->n_catalogs, 0);
    }
    assert_int_equal(lc_fake_count(&fx->f, "launch_template"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "claim_create"), 1);
}

/* After a restart: a claim with a live instance is tracked again, one
 * written but never launched is deleted, an initialized one is left. */
static void test_adoption(void **state)
{
    fixture *fx = *state;
    lc_fake_add_instance(&fx->f, "i-old1", "old-1", fx->f.now_ms - 5000);
    lc_fake_add_claim(&fx->f, "old-1", NULL, fx->f.now_ms - 6000, false);   /* status never written */
    lc_fake_add_claim(&fx->f, "old-2", NULL, fx->f.now_ms - 6000, false);   /* never launched */
    lc_fake_add_instance(&fx->f, "i-old3", "old-3", fx->f.now_ms - 600000);
    lc_fake_add_claim(&fx->f, "old-3", "i-old3", fx->f.now_ms - 600000, true);
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(0), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "claim_delete old-2"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "claim_delete old-1"), 0);
    assert_int_equal(lc_fake_count(&fx->f, "claim_status old-1 {\"status\":{\"providerID\":\"aws:\\/\\/\\/us-east-1a\\/i-old1\""), 1);
    lc_claims *cl = lc_prov_claims(fx->p);
    assert_int_equal(lc_claims_count(cl), 1);
    assert_true(lc_claims_at(cl, 0)->adopted);
    /* adopted claims are not sent as ours (the watcher's copy is) */
    assert_int_equal(fx->f.last_solve->cluster->n_nodeclaims, 0);
    /* its node joins: tracked to Initialized like any claim */
    lc_fake_add_node(&fx->f, "n1", "aws:///us-east-1a/i-old1", true, NULL);
    lc_prov_lifecycle(fx->p);   /* registers */
    lc_prov_lifecycle(fx->p);   /* initializes */
    assert_int_equal(fx->phases[fx->nphases - 1],
                     TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_INITIALIZED);
    /* adoption runs once */
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(0), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "claims_list"), 1);
}

/* A refreshed catalog: the next Solve names it by its new hash. */
static void test_catalog_swap(void **state)
{
    fixture *fx = *state;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_string_equal(fx->f.last_solve->catalogs[0]->hash, "cafe01");
    Tailor__V1__Catalog *fresh = tk_catalog();
    free(fresh->hash);
    fresh->hash = tlr_strdup("beef02");
    lc_prov_set_catalog(fx->p, fresh);
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_string_equal(fx->f.last_solve->catalogs[0]->hash, "beef02");
    lc_prov_set_catalog(fx->p, fx->cat);
    protobuf_c_message_free_unpacked(&fresh->base, NULL);
}

/* Make fx's provisioner anew with a metrics registry (the caller's to
 * free). */
static tlr_metrics *with_metrics(fixture *fx)
{
    tlr_metrics *m;
    tlr_metrics_create(&m);
    lc_prov_free(fx->p);
    lc_prov_opts o = base_opts(fx);
    o.metrics = m;
    lc_prov_create(&o, &fx->p);
    return m;
}

/* The solver's error for pod uid (in namespace default, named uid). */
static Tailor__V1__PodError *pod_error(const char *uid, const char *reason, const char *message)
{
    Tailor__V1__PodError *e = tlr_malloc(sizeof(*e));
    tailor__v1__pod_error__init(e);
    e->pod_uid = tlr_strdup(uid);
    e->namespace_ = tlr_strdup("default");
    e->name = tlr_strdup(uid);
    e->status = tlr_malloc(sizeof(*e->status));
    tailor__v1__status__init(e->status);
    e->status->reason = tlr_strdup(reason);
    e->status->message = tlr_strdup(message);
    return e;
}

/* A pod nothing can be planned for is told why once, not every batch. */
static void test_unplaced_told_once(void **state)
{
    fixture *fx = *state;
    for (int i = 0; i < 3; i++) {
        Tailor__V1__SolveResponse *r = tk_resp(NULL);
        Tailor__V1__PodError *e = pod_error("p1", "Unschedulable", "no NodePool fits");
        Tailor__V1__NodePoolReason *nr = tlr_malloc(sizeof(*nr));
        tailor__v1__node_pool_reason__init(nr);
        nr->nodepool = tlr_strdup("default");
        nr->reason = tlr_strdup("NodePool limit cpu reached");
        TK_PUSH(e->reasons, e->n_reasons, nr);
        TK_PUSH(r->pod_errors, r->n_pod_errors, e);
        fx->f.solve_q[fx->f.nsolve_q++] = r;
    }
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    fx->f.now_ms += 60000;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "event Pod default/p1 Warning FailedScheduling "
                                           "Failed to schedule pod, no NodePool fits; default: "
                                           "NodePool limit cpu reached"), 1);
    fx->f.now_ms += 5 * 60000;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    assert_int_equal(lc_fake_count(&fx->f, "event Pod default/p1 Warning FailedScheduling"), 2);
}

/* Pods Karpenter's provisioner ignores: counted apart from the
 * unschedulable ones; told why, but a pod that avoids Karpenter's nodes on
 * purpose (karpenter.sh/nodepool DoesNotExist) gets no Event. */
static void test_ignored_pods(void **state)
{
    fixture *fx = *state;
    tlr_metrics *m = with_metrics(fx);
    assert_true(mt_sample(m, "karpenter_scheduler_ignored_pods_count") == 0);

    Tailor__V1__PendingBatch *b = tk_batch(3);
    Tailor__V1__NodeSelectorRequirement *dne = tlr_malloc(sizeof(*dne));
    tailor__v1__node_selector_requirement__init(dne);
    dne->key = tlr_strdup("karpenter.sh/nodepool");
    dne->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST;
    Tailor__V1__NodeSelectorTerm *t = tlr_malloc(sizeof(*t));
    tailor__v1__node_selector_term__init(t);
    TK_PUSH(t->match_expressions, t->n_match_expressions, dne);
    TK_PUSH(b->pending_pods[1]->required_node_affinity, b->pending_pods[1]->n_required_node_affinity, t);
    Tailor__V1__SolveResponse *r = tk_resp(NULL);
    TK_PUSH(r->pod_errors, r->n_pod_errors, pod_error("p1", "Unschedulable", "no NodePool fits"));
    TK_PUSH(r->pod_errors, r->n_pod_errors,
            pod_error("p2", "Ignored", "ignoring pod, it requires karpenter.sh/nodepool DoesNotExist"));
    TK_PUSH(r->pod_errors, r->n_pod_errors,
            pod_error("p3", "Ignored", "ignoring pod, nodeSelector: key kubernetes.io/hostname: "
                                       "label \"kubernetes.io/hostname\" is restricted"));
    fx->f.solve_q[fx->f.nsolve_q++] = r;
    assert_int_equal(lc_prov_batch(fx->p, b, NULL), TLR_OK);

    assert_true(mt_sample(m, "karpenter_scheduler_ignored_pods_count") == 2);
    assert_true(mt_sample(m, "karpenter_scheduler_unschedulable_pods_count{controller=\"provisioner\"}") == 1);
    assert_int_equal(lc_fake_count(&fx->f, "event Pod default/p1 Warning FailedScheduling"), 1);
    assert_int_equal(lc_fake_count(&fx->f, "event Pod default/p2 "), 0);
    assert_int_equal(lc_fake_count(&fx->f, "event Pod default/p3 Warning FailedScheduling "
                                           "Failed to schedule pod, ignoring pod, nodeSelector: key "
                                           "kubernetes.io/hostname"), 1);
    lc_prov_free(fx->p);
    fx->p = NULL;
    tlr_metrics_free(m);
}

/* --ice-ttl: the offering comes back after the configured time. */
static void test_ice_ttl_option(void **state)
{
    fixture *fx = *state;
    lc_prov_free(fx->p);
    lc_prov_opts o = { 0 };
    o.cluster = "prod";
    o.clock = &fx->f.clock;
    o.solver = lc_fake_solver(&fx->f);
    o.cloud = lc_fake_cloud(&fx->f);
    o.kube = lc_fake_kube(&fx->f);
    o.catalog = fx->cat;
    o.ice_ttl_ms = 20000;
    o.identity = &test_identity;
    lc_prov_create(&o, &fx->p);
    fx->f.ice_offerings[fx->f.nice++] = "c5.large/us-east-1a/on-demand";
    Tailor__V1__NodeClaim *nc = tk_claim(NULL, 1, "c5.large", NULL, NULL);
    tk_req(nc, "karpenter.sh/capacity-type", IN, "on-demand", NULL);
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(nc);
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), NULL), TLR_OK);
    lc_ice *ice = lc_prov_ice(fx->p);
    const Tailor__V1__CapacityType od = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
    assert_true(lc_ice_unavailable(ice, "c5.large", "us-east-1a", od));
    fx->f.now_ms += 19000;
    assert_true(lc_ice_unavailable(ice, "c5.large", "us-east-1a", od));
    fx->f.now_ms += 2000;
    assert_false(lc_ice_unavailable(ice, "c5.large", "us-east-1a", od));
}

/* A NodePool's usage for its limits: its Nodes plus its NodeClaims without
 * a Node yet (ours in flight at their largest option). */
static void test_pool_usage(void **state)
{
    fixture *fx = *state;
    for (size_t i = 0; i < fx->cat->n_instance_types; i++) {
        Tailor__V1__InstanceType *it = fx->cat->instance_types[i];
        it->capacity = tlr_malloc(sizeof(*it->capacity));
        tailor__v1__resource_list__init(it->capacity);
        it->capacity->cpu_millis = strcmp(it->name, "r5.large") == 0 ? 4000 : 2000;
        it->capacity->memory_bytes = 8LL << 30;
    }
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "c5.large", "r5.large", NULL));
    Tailor__V1__PendingBatch *b = tk_batch(1);
    Tailor__V1__NodePool *np = b->cluster->nodepools[0];
    np->limits = tlr_malloc(sizeof(*np->limits));
    tailor__v1__node_pool_limits__init(np->limits);
    np->limits->has_cpu = true;
    np->limits->cpu_millis = 100000;
    assert_int_equal(lc_prov_batch(fx->p, b, NULL), TLR_OK);
    const Tailor__V1__NodePoolStatus *st = fx->f.last_solve->cluster->nodepools[0]->status;
    assert_non_null(st);
    assert_int_equal(st->usage->cpu_millis, 0);
    /* Next batch: our claim is in flight (launched as c5.large) and a Node
     * of the pool from before is up: both count. */
    b = tk_batch(1);
    np = b->cluster->nodepools[0];
    np->limits = tlr_malloc(sizeof(*np->limits));
    tailor__v1__node_pool_limits__init(np->limits);
    np->limits->has_cpu = true;
    np->limits->cpu_millis = 100000;
    Tailor__V1__Node *n = tlr_malloc(sizeof(*n));
    tailor__v1__node__init(n);
    n->name = tlr_strdup("old");
    n->nodepool = tlr_strdup("default");
    n->provider_id = tlr_strdup("aws:///us-east-1a/i-old");
    n->capacity = tlr_malloc(sizeof(*n->capacity));
    tailor__v1__resource_list__init(n->capacity);
    n->capacity->cpu_millis = 8000;
    TK_PUSH(b->cluster->nodes, b->cluster->n_nodes, n);
    assert_int_equal(lc_prov_batch(fx->p, b, NULL), TLR_OK);
    st = fx->f.last_solve->cluster->nodepools[0]->status;
    printf("usage: got cpu %lld nodes %lld, want 10000 2\n", (long long)st->usage->cpu_millis,
           (long long)st->nodes);
    assert_int_equal(st->usage->cpu_millis, 8000 + 2000);
    assert_int_equal(st->nodes, 2);
    /* A NodeClaim linked to its Node only by status.nodeName counts once. */
    b = tk_batch(1);
    np = b->cluster->nodepools[0];
    np->limits = tlr_malloc(sizeof(*np->limits));
    tailor__v1__node_pool_limits__init(np->limits);
    np->limits->has_cpu = true;
    np->limits->cpu_millis = 100000;
    n = tlr_malloc(sizeof(*n));
    tailor__v1__node__init(n);
    n->name = tlr_strdup("old");
    n->nodepool = tlr_strdup("default");
    n->capacity = tlr_malloc(sizeof(*n->capacity));
    tailor__v1__resource_list__init(n->capacity);
    n->capacity->cpu_millis = 8000;
    TK_PUSH(b->cluster->nodes, b->cluster->n_nodes, n);
    Tailor__V1__NodeClaim *theirs = tlr_malloc(sizeof(*theirs));
    tailor__v1__node_claim__init(theirs);
    theirs->name = tlr_strdup("theirs");
    theirs->nodepool = tlr_strdup("default");
    theirs->status = tlr_malloc(sizeof(*theirs->status));
    tailor__v1__node_claim_status__init(theirs->status);
    theirs->status->node_name = tlr_strdup("old");
    theirs->status->capacity = tlr_malloc(sizeof(*theirs->status->capacity));
    tailor__v1__resource_list__init(theirs->status->capacity);
    theirs->status->capacity->cpu_millis = 8000;
    TK_PUSH(b->cluster->nodeclaims, b->cluster->n_nodeclaims, theirs);
    assert_int_equal(lc_prov_batch(fx->p, b, NULL), TLR_OK);
    st = fx->f.last_solve->cluster->nodepools[0]->status;
    assert_int_equal(st->usage->cpu_millis, 8000 + 2000);
    assert_int_equal(st->nodes, 2);
}

/* Karpenter's launch and termination failure counters and the instance
 * type metrics, on a prov with a registry: each ICE'd CreateFleet
 * offering counts once, with its zone's ID from the catalog; a refused
 * TerminateInstances counts with the claim's zone; the batch's pool gets
 * offering series, availability off once the ICE cache holds it. */
static void test_failure_metrics(void **state)
{
    fixture *fx = *state;
    for (size_t i = 0; i < fx->cat->n_instance_types; i++)
        for (size_t j = 0; j < fx->cat->instance_types[i]->n_offerings; j++) {
            Tailor__V1__Offering *o = fx->cat->instance_types[i]->offerings[j];
            o->zone_id = tlr_strdup(!strcmp(o->zone, "us-east-1a") ? "use1-az1"
                                    : !strcmp(o->zone, "us-east-1b") ? "use1-az2" : "use1-az3");
        }
    tlr_metrics *m = with_metrics(fx);

    fx->f.ice_offerings[fx->f.nice++] = "m5.large/us-east-1a/spot";
    fx->f.ice_offerings[fx->f.nice++] = "m5.large/us-east-1b/spot";
    fx->f.solve_q[fx->f.nsolve_q++] = tk_resp(tk_claim(NULL, 1, "m5.large", NULL, NULL));
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(1), &r), TLR_OK);
    assert_int_equal(r.launched, 1);
    static const char *const fails[] = {
        "karpenter_cloudprovider_instance_launch_failures_total{zone=\"us-east-1a\",zone_id=\"use1-az1\",capacity_type=\"spot\",reason=\"LaunchFailed\"}",
        "karpenter_cloudprovider_instance_launch_failures_total{zone=\"us-east-1b\",zone_id=\"use1-az2\",capacity_type=\"spot\",reason=\"LaunchFailed\"}",
    };
    for (int i = 0; i < 2; i++)
        if (mt_sample(m, fails[i]) != 1)
            fail_msg("%s: got %g want 1", fails[i], mt_sample(m, fails[i]));
    /* Before the launch both spot offerings were available; the next
     * lifecycle pass sees them in the ICE cache. */
    const char *avail = "karpenter_cloudprovider_instance_type_offering_available{instance_type=\"m5.large\","
                        "capacity_type=\"spot\",zone=\"us-east-1a\"}";
    assert_true(mt_sample(m, avail) == 1);
    fx->f.now_ms += 30000;
    lc_prov_lifecycle(fx->p);
    assert_true(mt_sample(m, avail) == 0);
    assert_true(mt_sample(m, "karpenter_cloudprovider_instance_type_offering_price_estimate{instance_type="
                            "\"c5.large\",capacity_type=\"on-demand\",zone=\"us-east-1c\"}") == 0.085);

    /* TerminateInstances refused: counted with the claim's zone (the
     * launch went on-demand in us-east-1a); the claim stays. */
    char name[64];
    snprintf(name, sizeof(name), "%s", lc_claims_at(lc_prov_claims(fx->p), 0)->nc->name);
    fx->f.terminate_rc = TLR_E_AUTH;
    Tailor__V1__TerminateItem a = TAILOR__V1__TERMINATE_ITEM__INIT;
    a.nodeclaim_name = name;
    Tailor__V1__TerminateItem *items[1] = { &a };
    Tailor__V1__TerminateRequest req = TAILOR__V1__TERMINATE_REQUEST__INIT;
    req.items = items;
    req.n_items = 1;
    Tailor__V1__TerminateResponse *resp;
    lc_prov_terminate(fx->p, &req, &resp);
    assert_int_not_equal(resp->results[0]->status->code, TLR_OK);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    const char *tf = "karpenter_cloudprovider_instance_termination_failures_total{zone=\"us-east-1a\","
                     "zone_id=\"use1-az1\"}";
    if (mt_sample(m, tf) != 1)
        fail_msg("%s: got %g want 1", tf, mt_sample(m, tf));
    assert_int_equal(lc_claims_count(lc_prov_claims(fx->p)), 1);

    lc_prov_free(fx->p);
    fx->p = NULL;
    tlr_metrics_free(m);
}

/* tailor_launcher_gc_instances_terminated_total counts the leaked
 * instances GC terminated: not one whose TerminateInstances was refused
 * (the next pass tries again), and the retry that succeeds once. */
static void test_gc_metric(void **state)
{
    fixture *fx = *state;
    tlr_metrics *m = with_metrics(fx);
    const char *gc = "tailor_launcher_gc_instances_terminated_total";
    assert_true(mt_sample(m, gc) == 0);
    lc_fake_add_instance(&fx->f, "i-leak", "ghost", fx->f.now_ms - 31000);
    fx->f.terminate_rc = TLR_E_UNAVAILABLE;
    lc_prov_gc(fx->p);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-leak"), 1);
    if (mt_sample(m, gc) != 0)
        fail_msg("refused terminate: got %g want 0", mt_sample(m, gc));
    fx->f.terminate_rc = TLR_OK;
    lc_prov_gc(fx->p);
    assert_int_equal(lc_fake_count(&fx->f, "terminate i-leak"), 2);
    if (mt_sample(m, gc) != 1)
        fail_msg("terminated: got %g want 1", mt_sample(m, gc));
    lc_prov_free(fx->p);
    fx->p = NULL;
    tlr_metrics_free(m);
}

/* Karpenter's create_fleet batcher metrics: three alike claims in one
 * CreateFleet, the fourth in its own: sizes 3 and 1, two windows. */
static void test_fleet_batch_metrics(void **state)
{
    fixture *fx = *state;
    tlr_metrics *m = with_metrics(fx);
    Tailor__V1__SolveResponse *resp = three_alike();
    fx->f.solve_q[fx->f.nsolve_q++] = resp;
    lc_batch_result r;
    assert_int_equal(lc_prov_batch(fx->p, tk_batch(3), &r), TLR_OK);
    assert_int_equal(r.fleets, 2);
    static const struct {
        const char *sample;
        double want;
    } cases[] = {
        { "karpenter_cloudprovider_batcher_batch_size_count{batcher=\"create_fleet\"}", 2 },
        { "karpenter_cloudprovider_batcher_batch_size_sum{batcher=\"create_fleet\"}", 4 },
        { "karpenter_cloudprovider_batcher_batch_size_bucket{batcher=\"create_fleet\",le=\"1\"}", 1 },
        { "karpenter_cloudprovider_batcher_batch_size_bucket{batcher=\"create_fleet\",le=\"2\"}", 1 },
        { "karpenter_cloudprovider_batcher_batch_size_bucket{batcher=\"create_fleet\",le=\"4\"}", 2 },
        { "karpenter_cloudprovider_batcher_batch_time_seconds_count{batcher=\"create_fleet\"}", 2 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (mt_sample(m, cases[i].sample) != cases[i].want)
            fail_msg("%s: got %g want %g", cases[i].sample, mt_sample(m, cases[i].sample), cases[i].want);
    lc_prov_free(fx->p);
    fx->p = NULL;
    tlr_metrics_free(m);
}

/* Karpenter's reasons for CreateFleet errors (ToReasonMessage). */
static void test_launch_failure_reason(void **state)
{
    (void)state;
    static const struct {
        const char *code, *msg, *want;
    } cases[] = {
        { "InsufficientInstanceCapacity", "no capacity", "LaunchFailed" },
        { "UnauthorizedOperation", "You are not authorized", "Unauthorized" },
        { "AuthFailure.ServiceLinkedRoleCreationNotPermitted", "x", "SpotSLRCreationFailed" },
        { "UnauthorizedOperation", "Not authorized for images: [ami-1]", "AMIAuthorizationFailure" },
        { "InvalidAMIID.NotFound", "The image id does not exist", "AMINotFound" },
        { "InvalidParameter", "sg and subnet belong to different networks", "SecurityGroupSubnetVPCMismatch" },
        { "InvalidParameter", "something else", "LaunchFailed" },
        { "VcpuLimitExceeded", "quota", "VCPULimitExceeded" },
        { "MaxSpotInstanceCountExceeded", "quota", "SpotQuotaExceeded" },
        { "InsufficientFreeAddressesInSubnet", "full", "InsufficientFreeAddressesInSubnet" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = lc_launch_failure_reason(cases[i].code, cases[i].msg);
        if (strcmp(got, cases[i].want))
            fail_msg("%s: %s: got %s want %s", cases[i].code, cases[i].msg, got, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claim_written_before_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_refuses_claim_no_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ice_falls_back_within_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ice_replans_onto_other_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_double_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policies_sent_with_solve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_catalog_miss_resend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_by_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_by_reference_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_replica_starved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_replica_starved_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_request_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_request_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_request_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gc_rechecks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_term_forgets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminate_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminate_only_ours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lifecycle_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_liveness_and_gc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identical_claims_batched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodeclass_resolved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodeclass_auth_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_ami_selector, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_failure_backs_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adoption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_catalog_swap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unplaced_told_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ignored_pods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ice_ttl_option, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_metrics, setup, teardown),
        cmocka_unit_test(test_launch_failure_reason),
        cmocka_unit_test_setup_teardown(test_fleet_batch_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gc_metric, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
