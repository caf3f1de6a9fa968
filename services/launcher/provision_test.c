/* provision_test.c - the launcher's provisioning against recording fakes:
 * NodeClaim written before CreateFleet, re-plan after insufficient
 * capacity, no double launch for pods already covered, catalog-miss
 * resend, idempotent Launch/Terminate, lifecycle and GC passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fake.h"
#include "provision.h"
#include "testkit.h"
#include "tlr_err.h"

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

static int setup(void **state)
{
    fixture *fx = tlr_calloc(1, sizeof(*fx));
    lc_fake_init(&fx->f);
    fx->cat = tk_catalog();
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
        dump_calls(&fx->f);
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

static void test_launch_request_idempotent(void **state)
{
    fixture *fx = *state;
    Tailor__V1__NodeClaim *nc = tk_claim("repl-1", 1, "c5.large", NULL, NULL);
    Tailor__V1__LaunchRequest req = TAILOR__V1__LAUNCH_REQUEST__INIT;
    req.nodeclaims = &nc;
    req.n_nodeclaims = 1;
    req.reason = "consolidation-replace:d1";
    for (int round = 0; round < 2; round++) {
        Tailor__V1__LaunchResponse *resp;
        lc_prov_launch(fx->p, &req, &resp);
        assert_int_equal(resp->n_results, 1);
        assert_int_equal(resp->results[0]->status->code, TLR_OK);
        assert_string_equal(resp->results[0]->instance_id, "i-00001");
        assert_string_equal(resp->results[0]->provider_id, "aws:///us-east-1a/i-00001");
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    assert_int_equal(lc_fake_count(&fx->f, "create_fleet"), 1);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claim_written_before_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_refuses_claim_no_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ice_falls_back_within_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ice_replans_onto_other_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_double_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_catalog_miss_resend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_request_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lifecycle_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_liveness_and_gc, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
