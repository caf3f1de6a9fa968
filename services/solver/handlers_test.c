/* handlers_test.c - tailor-solver's Solve/Simulate handlers and the
 * catalog-by-hash protocol, through the same route functions the REP
 * server calls.
 *
 * Each step of a scenario sends one request (with or without the catalog),
 * frees it right away as the server does, and checks the reply: a miss
 * naming the hash, or a plan.  ASan catches a cache that kept pointers into
 * a freed request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "handlers.h"
#include "solve_testkit.h"
#include "tlr_err.h"

/* A request for one 1500m pod; with_catalog false strips the catalog so
 * only the hash travels.  hash renames the catalog. */
static Tailor__V1__SolveRequest *request(const char *hash, bool with_catalog)
{
    Tailor__V1__SolveRequest *r = tk_new();
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod(r, "p1", 1500, 1024);
    Tailor__V1__CatalogRef *ref = r->catalogs[0];
    free(ref->hash);
    ref->hash = tk_s(hash);
    if (!with_catalog) {
        tailor__v1__catalog__free_unpacked(ref->catalog, NULL);
        ref->catalog = NULL;
    }
    return r;
}

typedef struct step {
    const char *hash;
    bool with_catalog;
    bool want_miss;
    size_t want_cached;
} step;

typedef struct scenario {
    const char *name;
    size_t cache_entries;
    step steps[6];
} scenario;

static const scenario scenarios[] = {
    { "miss, resend, then served from the cache", 16,
      { { "A", false, true, 0 }, { "A", true, false, 1 }, { "A", false, false, 1 }, { NULL, 0, 0, 0 } } },
    { "catalog sent up front warms the cache", 16,
      { { "A", true, false, 1 }, { "B", true, false, 2 }, { "A", false, false, 2 }, { "B", false, false, 2 },
        { "C", false, true, 2 }, { NULL, 0, 0, 0 } } },
    { "least recently used is evicted", 2,
      { { "A", true, false, 1 }, { "B", true, false, 2 }, { "A", false, false, 2 }, { "C", true, false, 2 },
        { "B", false, true, 2 }, { "A", false, false, 2 } } },
};

static int run_step(const scenario *sc, int i, solver_handlers *h, tlr_rep_route *route)
{
    const step *s = &sc->steps[i];
    Tailor__V1__SolveRequest *req = request(s->hash, s->with_catalog);
    ProtobufCMessage *reply = NULL;
    tlr_status st;
    tlr_status_clear(&st);
    int rc = route->handle(route->arg, &req->base, "r", &reply, &st);
    tk_free(req);   /* the server frees the request before packing */
    int bad = 0;
    Tailor__V1__SolveResponse *resp = (Tailor__V1__SolveResponse *)reply;
    if (rc != TLR_OK || !resp) {
        fprintf(stderr, "%s step %d: handler: want OK, got %s\n", sc->name, i, tlr_strerror(rc));
        return 1;
    }
    if (resp->catalog_miss != s->want_miss) {
        fprintf(stderr, "%s step %d (%s): catalog_miss: want %d, got %d\n", sc->name, i, s->hash,
                s->want_miss, resp->catalog_miss);
        bad++;
    }
    if (s->want_miss) {
        if (resp->n_missing_catalog_hashes != 1 || strcmp(resp->missing_catalog_hashes[0], s->hash) ||
            resp->status->code != TLR_E_NOTFOUND || strcmp(resp->status->reason, "CatalogMiss") ||
            resp->n_new_nodeclaims) {
            fprintf(stderr, "%s step %d: want a miss naming %s with status NOTFOUND/CatalogMiss and no plan\n",
                    sc->name, i, s->hash);
            bad++;
        }
    } else if (resp->n_new_nodeclaims != 1 ||
               strcmp(resp->new_nodeclaims[0]->instance_type_options[0]->name, "s.2") ||
               strcmp(resp->solver_replica_id, "solver/test/1")) {
        fprintf(stderr, "%s step %d: want one claim on s.2 from solver/test/1, got %zu claims\n", sc->name, i,
                resp->n_new_nodeclaims);
        bad++;
    }
    if (solver_handlers_cached(h) != s->want_cached) {
        fprintf(stderr, "%s step %d: cached: want %zu, got %zu\n", sc->name, i, s->want_cached,
                solver_handlers_cached(h));
        bad++;
    }
    route->reply_done(route->arg, reply);
    return bad;
}

static void test_catalog_protocol(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t k = 0; k < sizeof(scenarios) / sizeof(scenarios[0]); k++) {
        const scenario *sc = &scenarios[k];
        solver_handlers_opts o = { .cache_entries = sc->cache_entries, .replica_id = "solver/test/1" };
        solver_handlers *h = NULL;
        solver_handlers_create(&o, &h);
        tlr_rep_route route = solver_handlers_solve_route(h);
        for (int i = 0; i < 6 && sc->steps[i].hash; i++)
            bad += run_step(sc, i, h, &route);
        solver_handlers_free(h);
    }
    assert_int_equal(bad, 0);
}

/* Simulate goes through the same cache: a miss, then a delete-only probe
 * that fits the removed node's pod on the other node. */
static void test_simulate_route(void **state)
{
    (void)state;
    solver_handlers_opts o = { .replica_id = "solver/test/1" };
    solver_handlers *h = NULL;
    solver_handlers_create(&o, &h);
    tlr_rep_route route = solver_handlers_simulate_route(h);
    for (int with = 0; with < 2; with++) {
        Tailor__V1__SolveRequest *base = request("A", with);
        Tailor__V1__Node *keep = tk_node(base, "keep", "test-1a", 4000, 8);
        Tailor__V1__Node *gone = tk_node(base, "gone", "test-1a", 4000, 8);
        (void)keep;
        tk_node_pod(gone, "moving", 1000, 1024);
        Tailor__V1__SimulateRequest req = TAILOR__V1__SIMULATE_REQUEST__INIT;
        req.cluster = base->cluster;
        req.catalogs = base->catalogs;
        req.n_catalogs = base->n_catalogs;
        char *rm[1] = { "gone" };
        req.remove_node_names = rm;
        req.n_remove_node_names = 1;
        req.now_unix_ms = base->now_unix_ms;
        ProtobufCMessage *reply = NULL;
        tlr_status st;
        tlr_status_clear(&st);
        assert_int_equal(route.handle(route.arg, &req.base, "r", &reply, &st), TLR_OK);
        Tailor__V1__SimulateResponse *resp = (Tailor__V1__SimulateResponse *)reply;
        if (!with) {
            assert_true(resp->catalog_miss);
            assert_false(resp->feasible);
        } else {
            assert_false(resp->catalog_miss);
            assert_true(resp->feasible);
            assert_int_equal(resp->n_placements, 1);
            assert_string_equal(resp->placements[0]->node_name, "keep");
            assert_int_equal(resp->n_replacements, 0);
        }
        route.reply_done(route.arg, reply);
        tk_free(base);
    }
    solver_handlers_free(h);
}

/* The lower bound comes with replies up to the configured batch size:
 * one 1500m pod needs at least 1.5/2 of s.2's spot price. */
static void test_lower_bound_gate(void **state)
{
    (void)state;
    size_t limits[3] = { 0, 1, 5000 };
    for (int i = 0; i < 3; i++) {
        solver_handlers_opts o = { .replica_id = "solver/test/1", .lower_bound_max_pods = limits[i] };
        solver_handlers *h = NULL;
        solver_handlers_create(&o, &h);
        tlr_rep_route route = solver_handlers_solve_route(h);
        Tailor__V1__SolveRequest *req = request("A", true);
        tk_pod(req, "p2", 1500, 1024);   /* two pods */
        ProtobufCMessage *reply = NULL;
        tlr_status st;
        tlr_status_clear(&st);
        assert_int_equal(route.handle(route.arg, &req->base, "r", &reply, &st), TLR_OK);
        Tailor__V1__SolveResponse *resp = (Tailor__V1__SolveResponse *)reply;
        double lb = resp->lower_bound_cost_per_hour;
        if (limits[i] >= 2) {
            /* 3 cpu at $0.05 x 0.4 per spot vCPU = $0.06 */
            if (!(lb > 0.06 - 1e-9 && lb <= resp->total_cost_per_hour + 1e-9))
                fprintf(stderr, "limit %zu: bound %g, plan %g\n", limits[i], lb, resp->total_cost_per_hour);
            assert_true(lb > 0.06 - 1e-9 && lb <= resp->total_cost_per_hour + 1e-9);
        } else {
            assert_true(lb == 0);
        }
        route.reply_done(route.arg, reply);
        tk_free(req);
        solver_handlers_free(h);
    }
}

/* ---- cluster by reference ------------------------------------------------ */

#define EPOCH 1700000000000LL

/* A Solve for one 1000m pod whose cluster goes by reference as generation
 * gen: with a delta from base (0 = whole) holding node n1 (2000m, a 500m
 * pod bound) when with_n1, removing removed (may be NULL); or, when
 * !with_delta, the bare reference. */
static Tailor__V1__SolveRequest *byref_request(uint64_t gen, bool with_delta, uint64_t base,
                                               bool with_n1, const char *removed)
{
    Tailor__V1__SolveRequest *r = tk_new();
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod(r, "p1", 1000, 512);
    if (with_n1)
        tk_node_pod(tk_node(r, "n1", "us-east-1a", 2000, 4), "bound", 500, 256);
    Tailor__V1__ClusterRef *ref = calloc(1, sizeof(*ref));
    tailor__v1__cluster_ref__init(ref);
    ref->has_delta = with_delta;
    ref->base_generation = base;
    ref->nodes = r->cluster->nodes;
    ref->n_nodes = r->cluster->n_nodes;
    r->cluster->nodes = NULL;
    r->cluster->n_nodes = 0;
    if (removed) {
        ref->removed_nodes = calloc(1, sizeof(char *));
        ref->removed_nodes[0] = tk_s(removed);
        ref->n_removed_nodes = 1;
    }
    r->cluster->by_ref = ref;
    r->cluster->generation = gen;
    r->cluster->watcher_epoch_unix_ms = EPOCH;
    return r;
}

/* Send req through the route (the request is freed right after, as the
 * server does) and return the reply; *where: "n1", "claim" or "" (none). */
static Tailor__V1__SolveResponse *send_solve(tlr_rep_route *route, Tailor__V1__SolveRequest *req,
                                             const char **where)
{
    ProtobufCMessage *reply = NULL;
    tlr_status st;
    tlr_status_clear(&st);
    assert_int_equal(route->handle(route->arg, &req->base, "r", &reply, &st), TLR_OK);
    tk_free(req);
    Tailor__V1__SolveResponse *resp = (Tailor__V1__SolveResponse *)reply;
    const char *b = tk_bound_to(resp, "p1");
    *where = b ? b : tk_claim_of(resp, "p1") >= 0 ? "claim" : "";
    return resp;
}

/* The protocol, as a launcher meets it: a bare reference to a state the
 * replica never saw is a ClusterMiss with nothing solved; the resend with
 * the whole state is solved against it (the pod goes on n1); the bare
 * reference then hits; a delta that removes n1 is applied (the pod needs
 * a new node); an unknown generation is a miss naming the two held; a
 * delta that makes no sense is Invalid. */
static void test_cluster_by_reference(void **state)
{
    (void)state;
    solver_handlers_opts o = { .replica_id = "solver/test/1" };
    solver_handlers *h = NULL;
    solver_handlers_create(&o, &h);
    tlr_rep_route route = solver_handlers_solve_route(h);
    const char *where;

    Tailor__V1__SolveResponse *r = send_solve(&route, byref_request(5, false, 0, false, NULL), &where);
    assert_true(r->cluster_miss);
    assert_int_equal(r->status->code, TLR_E_NOTFOUND);
    assert_string_equal(r->status->reason, "ClusterMiss");
    assert_int_equal(r->n_held_generations, 0);
    assert_string_equal(where, "");
    route.reply_done(route.arg, &r->base);

    r = send_solve(&route, byref_request(5, true, 0, true, NULL), &where);
    assert_false(r->cluster_miss);
    assert_int_equal(r->status ? r->status->code : 0, 0);
    assert_string_equal(where, "n1");
    assert_int_equal(r->cluster_generation, 5);   /* says which state it solved */
    route.reply_done(route.arg, &r->base);

    r = send_solve(&route, byref_request(5, false, 0, false, NULL), &where);
    assert_false(r->cluster_miss);
    assert_string_equal(where, "n1");
    route.reply_done(route.arg, &r->base);

    r = send_solve(&route, byref_request(6, true, 5, false, "n1"), &where);
    assert_false(r->cluster_miss);
    assert_string_equal(where, "claim");
    route.reply_done(route.arg, &r->base);

    r = send_solve(&route, byref_request(9, false, 0, false, NULL), &where);
    assert_true(r->cluster_miss);
    assert_int_equal(r->n_held_generations, 2);
    assert_int_equal(r->held_generations[0], 6);
    assert_int_equal(r->held_generations[1], 5);
    route.reply_done(route.arg, &r->base);

    r = send_solve(&route, byref_request(7, true, 6, true, "n1"), &where);
    assert_false(r->cluster_miss);
    assert_int_equal(r->status->code, TLR_E_INVAL);
    assert_non_null(strstr(r->status->message, "n1 is both changed and removed"));
    assert_string_equal(where, "");
    route.reply_done(route.arg, &r->base);

    solver_handlers_free(h);

    /* the engine itself refuses an unresolved reference, it does not
     * solve against an empty cluster */
    Tailor__V1__SolveRequest *req = byref_request(5, true, 0, true, NULL);
    Tailor__V1__SolveResponse *direct = NULL;
    assert_int_equal(tlr_solve(req, NULL, &direct), TLR_E_INVAL);
    assert_non_null(strstr(direct->status->message, "by reference"));
    tlr_solve_response_free(direct);
    tk_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog_protocol),
        cmocka_unit_test(test_lower_bound_gate),
        cmocka_unit_test(test_simulate_route),
        cmocka_unit_test(test_cluster_by_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
