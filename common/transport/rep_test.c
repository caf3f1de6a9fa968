/* rep_test.c - tlr_rep_server and tlr_req_client in one process.
 *
 * The server's loop runs on a second thread; the test thread is the
 * client.  inproc:// is used because it delivers what TCP would refuse
 * (it does not enforce NNG_OPT_RECVMAXSZ), so the server's own TOOBIG
 * answer can be seen.  Counters are read after the loop thread stopped.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tailor/v1/common.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tlr_err.h"
#include "tlr_loop.h"
#include "tlr_rep.h"
#include "tlr_req.h"

#define MAX_MSG 4096

/* What the handlers do, chosen by the request's batch_id. */
typedef struct fixture {
    tlr_loop *loop;
    tlr_rep_server *srv;
    tlr_req_client *cli;
    pthread_t th;
    int reply_done_calls;
    int observed;
    int last_observed_code;
    char big[MAX_MSG * 2];
    Tailor__V1__SolveResponse resp;
    Tailor__V1__PingResponse pong;
} fixture;

static int solve(void *arg, const ProtobufCMessage *req,
                 const char *request_id, ProtobufCMessage **reply,
                 tlr_status *st)
{
    fixture *f = arg;
    const Tailor__V1__SolveRequest *rq = (const Tailor__V1__SolveRequest *)req;
    tailor__v1__solve_response__init(&f->resp);
    f->resp.solver_replica_id = "unit";
    if (strcmp(rq->batch_id, "fail-bare") == 0)
        return TLR_E_BUSY;                       /* no message given */
    if (strcmp(rq->batch_id, "fail-with-reply") == 0) {
        *reply = &f->resp.base;                  /* must still be returned */
        tlr_status_set(st, TLR_E_CAPACITY, "NoCapacity", "none left");
        return TLR_E_CAPACITY;
    }
    if (strcmp(rq->batch_id, "no-reply") == 0)
        return TLR_OK;
    if (strcmp(rq->batch_id, "big-reply") == 0) {
        memset(f->big, 'x', sizeof(f->big) - 1);
        f->big[sizeof(f->big) - 1] = '\0';
        f->resp.solver_replica_id = f->big;
    }
    *reply = &f->resp.base;
    return TLR_OK;
}

static void solve_done(void *arg, ProtobufCMessage *reply)
{
    fixture *f = arg;
    assert_ptr_equal(reply, &f->resp.base);
    f->reply_done_calls++;
}

static int my_ping(void *arg, const ProtobufCMessage *req,
                   const char *request_id, ProtobufCMessage **reply,
                   tlr_status *st)
{
    fixture *f = arg;
    tailor__v1__ping_response__init(&f->pong);
    f->pong.service = "custom";
    f->pong.leader = true;
    *reply = &f->pong.base;
    return TLR_OK;
}

static void observe(void *arg, const char *type, int code, double seconds)
{
    fixture *f = arg;
    f->observed++;
    f->last_observed_code = code;
    assert_true(seconds >= 0);
}

static void *loop_thread(void *arg)
{
    fixture *f = arg;
    tlr_loop_run(f->loop);
    return NULL;
}

static void start(fixture *f, const char *url, const tlr_rep_route *routes,
                  size_t nroutes)
{
    assert_int_equal(tlr_loop_create(&f->loop), TLR_OK);
    tlr_rep_opts o = {
        .listen = url, .max_msg = MAX_MSG, .sender = "unit/1",
        .service = "unit", .version = "9.9", .routes = routes,
        .nroutes = nroutes, .observe = observe, .observe_arg = f,
    };
    assert_int_equal(tlr_rep_server_create(f->loop, &o, &f->srv), TLR_OK);
    const char *urls[] = { url };
    /* The client's ceiling is higher than the server's on purpose. */
    assert_int_equal(tlr_req_client_create(&(tlr_req_opts){
                         .urls = urls, .nurls = 1, .timeout_ms = 2000,
                         .max_msg = MAX_MSG * 4, .sender = "unit/cli" },
                     &f->cli), TLR_OK);
    assert_int_equal(pthread_create(&f->th, NULL, loop_thread, f), 0);
}

static void stop(fixture *f)
{
    tlr_loop_stop(f->loop);
    assert_int_equal(pthread_join(f->th, NULL), 0);
}

static void finish(fixture *f)
{
    tlr_req_client_free(f->cli);
    tlr_rep_server_free(f->srv);
    tlr_loop_free(f->loop);
}

static int call_solve(fixture *f, const char *batch_id, size_t pad,
                      tlr_status *st)
{
    Tailor__V1__SolveRequest rq = TAILOR__V1__SOLVE_REQUEST__INIT;
    char *padding = NULL;
    rq.batch_id = (char *)batch_id;
    if (pad > 0) {
        padding = malloc(pad + 1);
        memset(padding, 'p', pad);
        padding[pad] = '\0';
        rq.batch_id = padding;
    }
    ProtobufCMessage *out = NULL;
    int rc = tlr_req_call(f->cli, &rq.base,
                          &tailor__v1__solve_response__descriptor, 0, &out,
                          st);
    if (rc == TLR_OK) {
        const Tailor__V1__SolveResponse *r =
            (const Tailor__V1__SolveResponse *)out;
        assert_string_equal(r->solver_replica_id, "unit");
        protobuf_c_message_free_unpacked(out, NULL);
    }
    free(padding);
    return rc;
}

static void test_codes(void **state)
{
    fixture f = { 0 };
    const tlr_rep_route routes[] = {
        { .request = &tailor__v1__solve_request__descriptor, .handle = solve,
          .reply_done = solve_done, .arg = &f },
    };
    start(&f, "inproc://rep_test_codes", routes, 1);

    static const struct {
        const char *name;
        const char *batch_id;
        size_t pad;
        int want_rc, want_code;
        const char *want_msg;
    } rows[] = {
        { "ok", "ok", 0, TLR_OK, TLR_OK, "" },
        { "handler error without message", "fail-bare", 0, TLR_E_REMOTE,
          TLR_E_BUSY, "tailor.v1.SolveRequest failed: busy" },
        { "handler error with reply set", "fail-with-reply", 0, TLR_E_REMOTE,
          TLR_E_CAPACITY, "none left" },
        { "handler gave no reply", "no-reply", 0, TLR_E_REMOTE,
          TLR_E_INTERNAL, "returned no reply" },
        { "reply over the limit", "big-reply", 0, TLR_E_REMOTE, TLR_E_TOOBIG,
          "exceeds the limit of 4096 bytes" },
        { "request over the limit", NULL, MAX_MSG, TLR_E_REMOTE, TLR_E_TOOBIG,
          "exceeds the limit of 4096 bytes" },
        { "still serving", "ok", 0, TLR_OK, TLR_OK, "" },
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        tlr_status st;
        int rc = call_solve(&f, rows[i].batch_id, rows[i].pad, &st);
        if (rc != rows[i].want_rc || st.code != rows[i].want_code ||
            strstr(st.message, rows[i].want_msg) == NULL)
            fail_msg("%s: got %s/%s \"%s\", want %s/%s \"%s\"", rows[i].name,
                     tlr_errname(rc), tlr_errname(st.code), st.message,
                     tlr_errname(rows[i].want_rc),
                     tlr_errname(rows[i].want_code), rows[i].want_msg);
        if (rows[i].want_code == TLR_E_CAPACITY)
            assert_string_equal(st.reason, "NoCapacity");
    }

    /* The built-in ping. */
    Tailor__V1__PingRequest ping = TAILOR__V1__PING_REQUEST__INIT;
    ProtobufCMessage *out = NULL;
    assert_int_equal(tlr_req_call(f.cli, &ping.base,
                                  &tailor__v1__ping_response__descriptor, 0,
                                  &out, NULL), TLR_OK);
    const Tailor__V1__PingResponse *p = (const Tailor__V1__PingResponse *)out;
    assert_string_equal(p->service, "unit");
    assert_string_equal(p->replica_id, "unit/1");
    assert_string_equal(p->version, "9.9");
    assert_int_equal(p->contract_version, 1);
    assert_true(p->ready);
    assert_true(p->started_unix_ms > 0);
    protobuf_c_message_free_unpacked(out, NULL);
    stop(&f);

    /* ok, fail-with-reply, big-reply, still serving: reply lent 4 times. */
    assert_int_equal(f.reply_done_calls, 4);
    tlr_rep_stats s;
    tlr_rep_server_stats(f.srv, &s);
    assert_int_equal(s.requests, 8);
    assert_int_equal(s.replies_ok, 3);
    assert_int_equal(s.replies_error, 5);
    assert_int_equal(s.toobig, 1);            /* the request; the reply is */
    assert_int_equal(s.handler_errors, 4);    /* a handler-side failure */
    assert_int_equal(s.send_errors, 0);
    assert_int_equal(f.observed, 8);
    assert_int_equal(f.last_observed_code, TLR_OK);
    finish(&f);
}

/* A table's own Ping route replaces the built-in one. */
/* A route's own max_request, below the server's max_msg. */
static void test_route_limit(void **state)
{
    (void)state;
    fixture f = { 0 };
    const tlr_rep_route routes[] = {
        { .request = &tailor__v1__solve_request__descriptor, .handle = solve,
          .reply_done = solve_done, .arg = &f, .max_request = 1024 },
    };
    start(&f, "inproc://rep_test_route_limit", routes, 1);
    tlr_status st;
    assert_int_equal(call_solve(&f, NULL, 2000, &st), TLR_E_REMOTE);
    assert_int_equal(st.code, TLR_E_TOOBIG);
    if (strstr(st.message, "tailor.v1.SolveRequest of ") == NULL ||
        strstr(st.message, "exceeds the limit of 1024 bytes for this request type") == NULL)
        fail_msg("got \"%s\"", st.message);
    assert_int_equal(call_solve(&f, "ok", 0, &st), TLR_OK);   /* still serving */
    stop(&f);
    tlr_rep_stats stats;
    tlr_rep_server_stats(f.srv, &stats);
    assert_int_equal(stats.toobig, 1);
    assert_int_equal(stats.replies_ok, 1);
    finish(&f);
}

static void test_ping_override(void **state)
{
    fixture f = { 0 };
    const tlr_rep_route routes[] = {
        { .request = &tailor__v1__ping_request__descriptor,
          .handle = my_ping, .arg = &f },
    };
    start(&f, "inproc://rep_test_ping", routes, 1);
    Tailor__V1__PingRequest ping = TAILOR__V1__PING_REQUEST__INIT;
    ProtobufCMessage *out = NULL;
    assert_int_equal(tlr_req_call(f.cli, &ping.base,
                                  &tailor__v1__ping_response__descriptor, 0,
                                  &out, NULL), TLR_OK);
    const Tailor__V1__PingResponse *p = (const Tailor__V1__PingResponse *)out;
    assert_string_equal(p->service, "custom");
    assert_true(p->leader);
    protobuf_c_message_free_unpacked(out, NULL);
    stop(&f);
    finish(&f);
}

/* A client with a connection age limit closes its oldest connection
 * before a call once it is past the limit and another one is up; nng
 * redials it, and no call fails for it.  Without the limit, nothing is
 * closed. */
static void test_connection_age(void **state)
{
    (void)state;
    fixture f = { 0 };
    const tlr_rep_route routes[] = {
        { .request = &tailor__v1__solve_request__descriptor, .handle = solve,
          .reply_done = solve_done, .arg = &f },
    };
    start(&f, "inproc://rep_test_age", routes, 1);
    const char *urls[] = { "inproc://rep_test_age", "inproc://rep_test_age" };
    tlr_req_client *aged = NULL;
    assert_int_equal(tlr_req_client_create(&(tlr_req_opts){ .urls = urls, .nurls = 2,
                                               .timeout_ms = 2000, .sender = "unit/aged",
                                               .max_conn_age_ms = 100 },
                                           &aged), TLR_OK);
    assert_int_equal(tlr_req_client_wait(aged, 2, 2000), TLR_OK);
    tlr_req_client *plain = f.cli;
    for (int i = 0; i < 20; i++) {
        tlr_status st;
        f.cli = aged;
        assert_int_equal(call_solve(&f, "ok", 0, &st), TLR_OK);
        f.cli = plain;
        assert_int_equal(call_solve(&f, "ok", 0, &st), TLR_OK);
        usleep(50 * 1000);
    }
    tlr_req_stats sa, sp;
    tlr_req_client_stats(aged, &sa);
    tlr_req_client_stats(plain, &sp);
    assert_int_equal(sa.ok, 20);
    assert_in_range(sa.recycled, 3, 20);   /* ~1 s of calls, 100 ms age */
    assert_int_equal(sp.recycled, 0);
    assert_int_equal(tlr_req_client_wait(aged, 2, 2000), TLR_OK);   /* redialled */
    stop(&f);
    tlr_req_client_free(aged);
    finish(&f);
}

/* A connection past the age limit that has not served a call yet is kept:
 * closing it would spread no load, and with an age shorter than a turn
 * through all connections, every fresh connection (the one that may reach
 * a new replica) would be closed before its first call.  Four connections,
 * all older than the limit: each call closes at most the connection that
 * served the one before. */
static void test_connection_age_unused_kept(void **state)
{
    (void)state;
    fixture f = { 0 };
    const tlr_rep_route routes[] = {
        { .request = &tailor__v1__solve_request__descriptor, .handle = solve,
          .reply_done = solve_done, .arg = &f },
    };
    start(&f, "inproc://rep_test_age4", routes, 1);
    const char *urls[] = { "inproc://rep_test_age4", "inproc://rep_test_age4",
                           "inproc://rep_test_age4", "inproc://rep_test_age4" };
    tlr_req_client *aged = NULL;
    assert_int_equal(tlr_req_client_create(&(tlr_req_opts){ .urls = urls, .nurls = 4,
                                               .timeout_ms = 2000, .sender = "unit/aged4",
                                               .max_conn_age_ms = 50 },
                                           &aged), TLR_OK);
    assert_int_equal(tlr_req_client_wait(aged, 4, 2000), TLR_OK);
    usleep(100 * 1000);                 /* every connection is past the age */
    tlr_req_client *plain = f.cli;
    f.cli = aged;
    tlr_req_stats sa;
    for (int i = 0; i < 4; i++) {
        tlr_status st;
        assert_int_equal(call_solve(&f, "ok", 0, &st), TLR_OK);
        tlr_req_client_stats(aged, &sa);
        /* The first call finds no connection that served one. */
        assert_int_equal(sa.recycled, (uint64_t)i);
    }
    f.cli = plain;
    stop(&f);
    tlr_req_client_free(aged);
    finish(&f);
}

static void test_bad_opts(void **state)
{
    tlr_loop *loop = NULL;
    assert_int_equal(tlr_loop_create(&loop), TLR_OK);
    fixture f = { 0 };
    const tlr_rep_route dup[] = {
        { .request = &tailor__v1__solve_request__descriptor, .handle = solve,
          .arg = &f },
        { .request = &tailor__v1__solve_request__descriptor, .handle = solve,
          .arg = &f },
    };
    const tlr_rep_route no_handler[] = {
        { .request = &tailor__v1__solve_request__descriptor },
    };
    static const struct {
        const char *name;
        const char *url;
        int which;     /* 0 none, 1 dup, 2 no handler */
        int want;
    } rows[] = {
        { "no url", NULL, 0, TLR_E_INVAL },
        { "bad scheme", "nope://x", 0, TLR_E_INVAL },
        { "two routes for one type", "inproc://bad1", 1, TLR_E_INVAL },
        { "route without handler", "inproc://bad2", 2, TLR_E_INVAL },
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        tlr_rep_opts o = { .listen = rows[i].url };
        if (rows[i].which == 1) {
            o.routes = dup;
            o.nroutes = 2;
        } else if (rows[i].which == 2) {
            o.routes = no_handler;
            o.nroutes = 1;
        }
        tlr_rep_server *s = NULL;
        int rc = tlr_rep_server_create(loop, &o, &s);
        if (rc != rows[i].want)
            fail_msg("%s: got %s, want %s", rows[i].name, tlr_errname(rc),
                     tlr_errname(rows[i].want));
        assert_null(s);
    }
    tlr_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes),
        cmocka_unit_test(test_route_limit),
        cmocka_unit_test(test_ping_override),
        cmocka_unit_test(test_connection_age),
        cmocka_unit_test(test_connection_age_unused_kept),
        cmocka_unit_test(test_bad_opts),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nng_fini();
    return rc;
}
