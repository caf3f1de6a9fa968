/* echo_replica.c - a stand-in solver replica for the transport tests.
 *
 *   echo_replica --listen tcp://127.0.0.1:0 --id a [--max-msg BYTES]
 *
 * Serves, on a tlr_loop + tlr_rep_server:
 *   SolveRequest    -> SolveResponse{solver_replica_id = --id, one PodError
 *                      per pending pod: code UNSCHEDULABLE, reason "echo",
 *                      message "echo from <id>"}.  A pending pod named
 *                      "sleep-<ms>-<id>" makes replica <id> print
 *                      "sleeping <request_id>" on stdout and sleep <ms>
 *                      first (to kill it mid-request).
 *   SimulateRequest -> always the error CAPACITY "simulate refused by <id>"
 *                      (to check that remote codes cross the wire).
 *   PingRequest     -> the server's built-in PingResponse.
 * Prints "port <N>" on stdout once listening; exits 0 on SIGTERM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>

#include "tailor/v1/solver.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_log.h"
#include "tlr_loop.h"
#include "tlr_rep.h"

typedef struct echo {
    const char *id;
} echo;

/* A reply built with malloc; freed by reply_free(). */
typedef struct echo_reply {
    Tailor__V1__SolveResponse resp;
    Tailor__V1__PodError *errors;
    Tailor__V1__PodError **error_ptrs;
    Tailor__V1__Status *statuses;
    char *message;
} echo_reply;

static void maybe_sleep(const echo *e, const Tailor__V1__Pod *pod,
                        const char *request_id)
{
    long ms = 0;
    char who[64];
    if (sscanf(pod->name, "sleep-%ld-%63s", &ms, who) != 2 ||
        strcmp(who, e->id) != 0 || ms <= 0)
        return;
    printf("sleeping %s\n", request_id);
    fflush(stdout);
    struct timespec ts = { .tv_sec = ms / 1000,
                           .tv_nsec = (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int solve(void *arg, const ProtobufCMessage *req,
                 const char *request_id, ProtobufCMessage **reply,
                 tlr_status *st)
{
    const echo *e = arg;
    const Tailor__V1__SolveRequest *rq = (const Tailor__V1__SolveRequest *)req;
    size_t n = rq->n_pending_pods;

    echo_reply *r = tlr_calloc(1, sizeof(*r));
    tailor__v1__solve_response__init(&r->resp);
    r->errors = tlr_calloc(n ? n : 1, sizeof(*r->errors));
    r->error_ptrs = tlr_calloc(n ? n : 1, sizeof(*r->error_ptrs));
    r->statuses = tlr_calloc(n ? n : 1, sizeof(*r->statuses));
    size_t mlen = strlen(e->id) + 16;
    r->message = tlr_malloc(mlen);
    snprintf(r->message, mlen, "echo from %s", e->id);

    for (size_t i = 0; i < n; i++) {
        const Tailor__V1__Pod *pod = rq->pending_pods[i];
        maybe_sleep(e, pod, request_id);
        tailor__v1__status__init(&r->statuses[i]);
        r->statuses[i].code = TLR_E_UNSCHEDULABLE;
        r->statuses[i].reason = "echo";
        r->statuses[i].message = r->message;
        tailor__v1__pod_error__init(&r->errors[i]);
        r->errors[i].pod_uid = pod->uid;          /* borrowed from req: */
        r->errors[i].namespace_ = pod->namespace_; /* packed before req */
        r->errors[i].name = pod->name;            /* is freed */
        r->errors[i].status = &r->statuses[i];
        r->error_ptrs[i] = &r->errors[i];
    }
    r->resp.n_pod_errors = n;
    r->resp.pod_errors = r->error_ptrs;
    r->resp.solver_replica_id = (char *)e->id;
    *reply = &r->resp.base;
    return TLR_OK;
}

static void reply_free(void *arg, ProtobufCMessage *reply)
{
    echo_reply *r = (echo_reply *)reply;   /* resp is the first member */
    free(r->errors);
    free(r->error_ptrs);
    free(r->statuses);
    free(r->message);
    free(r);
}

static int simulate(void *arg, const ProtobufCMessage *req,
                    const char *request_id, ProtobufCMessage **reply,
                    tlr_status *st)
{
    const echo *e = arg;
    tlr_status_set(st, TLR_E_CAPACITY, "InsufficientCapacity",
                   "simulate refused by %s", e->id);
    return TLR_E_CAPACITY;
}

int main(int argc, char **argv)
{
    const char *listen = NULL;
    const char *id = NULL;
    size_t max_msg = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--listen") == 0)
            listen = argv[i + 1];
        else if (strcmp(argv[i], "--id") == 0)
            id = argv[i + 1];
        else if (strcmp(argv[i], "--max-msg") == 0)
            max_msg = strtoul(argv[i + 1], NULL, 10);
    }
    if (listen == NULL || id == NULL) {
        fprintf(stderr, "usage: echo_replica --listen URL --id ID "
                "[--max-msg BYTES]\n");
        return 2;
    }

    int rc = 1;
    tlr_loop *loop = NULL;
    tlr_logger *log = NULL;
    tlr_rep_server *srv = NULL;
    echo e = { .id = id };
    char sender[96];
    snprintf(sender, sizeof(sender), "echo/%s", id);

    tlr_logger_create(&(tlr_log_opts){ .service = "echo_replica",
                                       .level = TLR_LOG_WARN, .fd = 2 },
                      &log);
    /* The loop first: it blocks SIGTERM before nng starts its threads. */
    if (tlr_loop_create(&loop) != TLR_OK)
        goto out;
    const tlr_rep_route routes[] = {
        { .request = &tailor__v1__solve_request__descriptor,
          .handle = solve, .reply_done = reply_free, .arg = &e },
        { .request = &tailor__v1__simulate_request__descriptor,
          .handle = simulate, .arg = &e },
    };
    const tlr_rep_opts o = {
        .listen = listen, .max_msg = max_msg, .log = log, .sender = sender,
        .service = "echo", .version = "test", .routes = routes,
        .nroutes = sizeof(routes) / sizeof(routes[0]),
    };
    if (tlr_rep_server_create(loop, &o, &srv) != TLR_OK)
        goto out;
    printf("port %d\n", tlr_rep_server_port(srv));
    fflush(stdout);
    if (tlr_loop_run(loop) != TLR_OK)
        goto out;
    rc = 0;
out:
    tlr_rep_server_free(srv);
    tlr_loop_free(loop);
    tlr_logger_free(log);
    nng_fini();
    return rc;
}
