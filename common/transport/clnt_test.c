/* clnt_test.c - the typed clients (tlr_clnt.h) against a REP server in the
 * same process: what a caller gets back for a plan, a catalog miss in
 * either of its two wire forms, a Status, and no replica at all. */
#include <pthread.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_clnt.h"
#include "tlr_loop.h"
#include "tlr_rep.h"

typedef struct fixture {
    tlr_loop *loop;
    tlr_rep_server *srv;
    tlr_req_client *cli;
    pthread_t th;
    Tailor__V1__SolveResponse solve;
    Tailor__V1__SimulateResponse sim;
    Tailor__V1__Status status;
    int sims, sims_full;   /* Simulates, and those with every catalog in full */
} fixture;

/* By batch_id: "plan" answers with a replica id, "miss" a reply with
 * catalog_miss, "bare-miss" a NOTFOUND Status alone, "bad" INVAL. */
static int h_solve(void *arg, const ProtobufCMessage *req, const char *rid,
                   ProtobufCMessage **reply, tlr_status *st)
{
    fixture *f = arg;
    (void)rid;
    const Tailor__V1__SolveRequest *rq = (const Tailor__V1__SolveRequest *)req;
    tailor__v1__solve_response__init(&f->solve);
    f->solve.solver_replica_id = "unit/solver";
    if (!strcmp(rq->batch_id, "bare-miss")) {
        tlr_status_set(st, TLR_E_NOTFOUND, "CatalogMiss", "no catalog cafe");
        return TLR_E_NOTFOUND;
    }
    if (!strcmp(rq->batch_id, "bad")) {
        tlr_status_set(st, TLR_E_INVAL, "Invalid", "pod p: no containers");
        return TLR_E_INVAL;
    }
    f->solve.catalog_miss = !strcmp(rq->batch_id, "miss");
    *reply = &f->solve.base;
    return TLR_OK;
}

/* Simulate: a miss unless every catalog is sent in full, and always for
 * a catalog named "gone" (a replica that cannot take it). */
static int h_simulate(void *arg, const ProtobufCMessage *req, const char *rid,
                      ProtobufCMessage **reply, tlr_status *st)
{
    fixture *f = arg;
    (void)rid;
    (void)st;
    const Tailor__V1__SimulateRequest *rq = (const Tailor__V1__SimulateRequest *)req;
    tailor__v1__simulate_response__init(&f->sim);
    f->sim.solver_replica_id = "unit/solver";
    f->sims++;
    bool full = true;
    for (size_t i = 0; i < rq->n_catalogs; i++)
        if (!rq->catalogs[i]->catalog || !strcmp(rq->catalogs[i]->hash, "gone"))
            full = false;
    f->sims_full += full && rq->n_catalogs > 0;
    f->sim.catalog_miss = !full;
    *reply = &f->sim.base;
    return TLR_OK;
}

static void *loop_thread(void *arg)
{
    tlr_loop_run(((fixture *)arg)->loop);
    return NULL;
}

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof(f));
    static const tlr_rep_route routes[] = {
        { .request = &tailor__v1__solve_request__descriptor, .handle = h_solve, .arg = &f },
        { .request = &tailor__v1__simulate_request__descriptor, .handle = h_simulate, .arg = &f },
    };
    assert_int_equal(tlr_loop_create(&f.loop), TLR_OK);
    tlr_rep_opts o = { .listen = "inproc://clnt_test", .sender = "unit/1", .service = "unit",
                       .version = "9.9", .routes = routes, .nroutes = 2 };
    assert_int_equal(tlr_rep_server_create(f.loop, &o, &f.srv), TLR_OK);
    const char *urls[] = { "inproc://clnt_test" };
    assert_int_equal(tlr_req_client_create(&(tlr_req_opts){ .urls = urls, .nurls = 1,
                                               .timeout_ms = 2000, .sender = "unit/cli" },
                                           &f.cli), TLR_OK);
    assert_int_equal(tlr_req_client_wait(f.cli, 1, 2000), TLR_OK);
    assert_int_equal(pthread_create(&f.th, NULL, loop_thread, &f), 0);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tlr_loop_stop(f->loop);
    pthread_join(f->th, NULL);
    tlr_req_client_free(f->cli);
    tlr_rep_server_free(f->srv);
    tlr_loop_free(f->loop);
    return 0;
}

static int solve(fixture *f, const char *batch, Tailor__V1__SolveResponse **resp, tlr_status *st)
{
    Tailor__V1__SolveRequest rq = TAILOR__V1__SOLVE_REQUEST__INIT;
    rq.batch_id = (char *)batch;
    *resp = NULL;
    return tlr_solver_clnt_solve(&(tlr_clnt){ f->cli, 0, NULL, false }, &rq, resp, st);
}

/* A plan, and a catalog miss in both wire forms, come back as a reply
 * the caller frees the same way; a miss has catalog_miss set. */
static void test_solve_replies_and_misses(void **state)
{
    fixture *f = *state;
    Tailor__V1__SolveResponse *r;
    tlr_status st;
    assert_int_equal(solve(f, "plan", &r, &st), TLR_OK);
    assert_string_equal(r->solver_replica_id, "unit/solver");
    assert_false(r->catalog_miss);
    tlr_clnt_free(r);
    assert_int_equal(solve(f, "miss", &r, &st), TLR_OK);
    assert_true(r->catalog_miss);
    tlr_clnt_free(r);
    assert_int_equal(solve(f, "bare-miss", &r, &st), TLR_OK);
    assert_true(r->catalog_miss);
    tlr_clnt_free(r);
}

/* A Status is returned as its own code, with the service's words. */
static void test_solve_status(void **state)
{
    fixture *f = *state;
    Tailor__V1__SolveResponse *r;
    tlr_status st;
    assert_int_equal(solve(f, "bad", &r, &st), TLR_E_INVAL);
    assert_null(r);
    assert_string_equal(st.reason, "Invalid");
    assert_non_null(strstr(st.message, "pod p: no containers"));   /* "(from unit/1)" added */
}

/* Simulate names its catalogs by hash; a miss is resent once with every
 * catalog in full, and that is answered.  The classes of one catalog
 * share one ref. */
static void test_simulate_resend_rule(void **state)
{
    fixture *f = *state;
    Tailor__V1__Catalog a = TAILOR__V1__CATALOG__INIT, b = TAILOR__V1__CATALOG__INIT;
    a.hash = "aaaa";
    b.hash = "bbbb";
    tlr_clnt_cats cats = { 0 };
    tlr_clnt_cats_name(&cats, &a, "default");
    tlr_clnt_cats_name(&cats, &b, "gpu");
    tlr_clnt_cats_name(&cats, &a, "batch");
    assert_int_equal(cats.n, 2);
    assert_int_equal(cats.refs[0]->n_node_classes, 2);
    assert_string_equal(cats.refs[0]->node_classes[1], "batch");
    assert_null(cats.refs[0]->catalog);

    Tailor__V1__SimulateRequest rq = TAILOR__V1__SIMULATE_REQUEST__INIT;
    tlr_clnt c = { f->cli, 0, NULL, false };
    Tailor__V1__SimulateResponse *r = NULL;
    assert_int_equal(tlr_solver_clnt_simulate_cats(&c, &rq, &cats, &r, NULL), TLR_OK);
    assert_false(r->catalog_miss);
    assert_int_equal(f->sims, 2);
    assert_int_equal(f->sims_full, 1);
    assert_ptr_equal(cats.refs[1]->catalog, &b);
    tlr_clnt_free(r);
    tlr_clnt_cats_clear(&cats);
}

/* A replica that misses even the catalogs in full: one resend, then
 * NOTFOUND and no reply -- never a plan made without the catalog.  A ref
 * passed on as it came cannot be filled in, so it is not resent. */
static void test_simulate_miss_in_full(void **state)
{
    fixture *f = *state;
    Tailor__V1__Catalog gone = TAILOR__V1__CATALOG__INIT;
    gone.hash = "gone";
    tlr_clnt_cats cats = { 0 };
    tlr_clnt_cats_name(&cats, &gone, NULL);
    Tailor__V1__SimulateRequest rq = TAILOR__V1__SIMULATE_REQUEST__INIT;
    tlr_clnt c = { f->cli, 0, NULL, false };
    Tailor__V1__SimulateResponse *r = NULL;
    tlr_status st = { 0 };
    assert_int_equal(tlr_solver_clnt_simulate_cats(&c, &rq, &cats, &r, &st), TLR_E_NOTFOUND);
    assert_null(r);
    assert_int_equal(f->sims, 2);
    assert_string_equal(st.reason, "CatalogMiss");
    tlr_clnt_cats_clear(&cats);

    Tailor__V1__CatalogRef theirs = TAILOR__V1__CATALOG_REF__INIT;
    theirs.hash = "cccc";
    tlr_clnt_cats_pass(&cats, &theirs);
    assert_int_equal(tlr_solver_clnt_simulate_cats(&c, &rq, &cats, &r, NULL), TLR_E_NOTFOUND);
    assert_int_equal(f->sims, 3);
    tlr_clnt_cats_clear(&cats);
}

/* No replica: UNAVAILABLE -- at once with fail_fast, naming the RPC. */
static void test_no_replica(void **state)
{
    (void)state;
    const char *urls[] = { "inproc://clnt_test_nobody" };
    tlr_req_client *lonely = NULL;
    assert_int_equal(tlr_req_client_create(&(tlr_req_opts){ .urls = urls, .nurls = 1,
                                               .timeout_ms = 60000, .sender = "unit/cli" },
                                           &lonely), TLR_OK);
    Tailor__V1__SnapshotRequest rq = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
    Tailor__V1__SnapshotResponse *r = NULL;
    tlr_status st;
    assert_int_equal(tlr_watcher_clnt_snapshot(&(tlr_clnt){ lonely, 0, NULL, true }, &rq, &r, &st),
                     TLR_E_UNAVAILABLE);
    assert_null(r);
    assert_non_null(strstr(st.message, "Snapshot"));
    tlr_req_client_free(lonely);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_solve_replies_and_misses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_solve_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_simulate_resend_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_simulate_miss_in_full, setup, teardown),
        cmocka_unit_test(test_no_replica),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
