/* replicas_it.c - two real tailor-solver replicas behind one REQ client.
 *
 * What a user of the launcher would notice:
 *   - a request naming a catalog the replica has not seen is answered with
 *     a catalog miss, and the same request carrying the catalog is solved;
 *   - requests are spread over both replicas (solver_replica_id says who
 *     answered) and every plan places the pods and passes the independent
 *     plan checker;
 *   - after one replica is killed with SIGKILL, every further request is
 *     answered by the survivor;
 *   - the survivor exits 0 on SIGTERM.
 * Usage: replicas_it PATH-TO-tailor-solver
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>

#include "solve_testkit.h"
#include "tlr_err.h"
#include "tlr_log.h"
#include "tlr_req.h"
#include "../it_tls.h"

static const char *solver_path;

typedef struct replica {
    pid_t pid;
    char url[64];
} replica;

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void replica_start(replica *r)
{
    char http[64];
    snprintf(r->url, sizeof(r->url), "tls+tcp://127.0.0.1:%d", free_port());
    char ca[512], cert[512], key[512];
    it_tls_files("tailor-solver", ca, cert, key, sizeof(ca));
    snprintf(http, sizeof(http), "127.0.0.1:%d", free_port());
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(solver_path, solver_path, "--listen", r->url, "--http-listen", http,
              "--log-level", "warn", "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key,
              (char *)NULL);
        _exit(127);
    }
    r->pid = pid;
}

static void replica_kill(replica *r)
{
    kill(r->pid, SIGKILL);
    int st = 0;
    assert_int_equal(waitpid(r->pid, &st, 0), r->pid);
    r->pid = 0;
}

static void replica_stop(replica *r)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, SIGTERM);
    int st = 0;
    assert_int_equal(waitpid(r->pid, &st, 0), r->pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("solver replica: got status 0x%x, want clean exit 0", st);
    r->pid = 0;
}

/* Four pods on the standard ladder; the catalog travels only when asked. */
static Tailor__V1__SolveRequest *request(bool with_catalog)
{
    Tailor__V1__SolveRequest *r = tk_new();
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_pod(r, "web-1", 1500, 1024);
    tk_pod(r, "web-2", 1500, 1024);
    tk_pod(r, "api-1", 500, 4096);
    tk_pod(r, "api-2", 500, 4096);
    if (!with_catalog) {
        tailor__v1__catalog__free_unpacked(r->catalogs[0]->catalog, NULL);
        r->catalogs[0]->catalog = NULL;
    }
    return r;
}

static Tailor__V1__SolveResponse *call(tlr_req_client *c, const Tailor__V1__SolveRequest *req,
                                       int *rc_out, tlr_status *st)
{
    ProtobufCMessage *reply = NULL;
    int rc = tlr_req_call(c, &req->base, &tailor__v1__solve_response__descriptor, 5000, &reply, st);
    *rc_out = rc;
    return (Tailor__V1__SolveResponse *)reply;
}

/* A solved request: every pod placed, the plan valid, the answer named. */
static void assert_solved(const Tailor__V1__SolveRequest *req, const Tailor__V1__SolveResponse *resp)
{
    assert_false(resp->catalog_miss);
    if (resp->n_pod_errors)
        fail_msg("pod %s not placed: %s", resp->pod_errors[0]->name,
                 resp->pod_errors[0]->status ? resp->pod_errors[0]->status->message : "");
    size_t planned = 0;
    for (size_t i = 0; i < resp->n_new_nodeclaims; i++)
        planned += resp->new_nodeclaims[i]->n_planned_pod_uids;
    assert_int_equal(planned, req->n_pending_pods);
    assert_true(resp->total_cost_per_hour > 0);
    assert_int_equal(tk_check(req, resp), 0);
    assert_non_null(resp->solver_replica_id);
    assert_true(resp->solver_replica_id[0] != '\0');
}

static void test_two_replicas(void **state)
{
    (void)state;
    replica a = { 0 }, b = { 0 };
    replica_start(&a);
    replica_start(&b);
    tlr_logger *lg;
    tlr_logger_create(&(tlr_log_opts){ .service = "replicas_it", .level = TLR_LOG_ERROR, .fd = 2 },
                      &lg);
    const char *urls[] = { a.url, b.url };
    tlr_req_client *c = NULL;
    tlr_tls *tls = NULL;
    assert_int_equal(it_tls_as("tailor-launcher", lg, &tls), TLR_OK);
    assert_int_equal(tlr_req_client_create(&(tlr_req_opts){ .urls = urls, .nurls = 2,
                                                           .timeout_ms = 5000, .retries = 1,
                                                           .log = lg, .sender = "replicas_it",
                                                           .tls = tls },
                                           &c),
                     TLR_OK);
    assert_int_equal(tlr_req_client_wait(c, 2, 10000), TLR_OK);

    Tailor__V1__SolveRequest *bare = request(false);
    Tailor__V1__SolveRequest *full = request(true);
    tlr_status st;
    int rc;

    /* A replica that never saw the catalog says so, naming the hash. */
    Tailor__V1__SolveResponse *r = call(c, bare, &rc, &st);
    assert_int_equal(rc, TLR_OK);
    assert_true(r->catalog_miss);
    assert_int_equal(r->n_missing_catalog_hashes, 1);
    assert_string_equal(r->missing_catalog_hashes[0], "testhash");
    protobuf_c_message_free_unpacked(&r->base, NULL);

    /* With the catalog every request is solved; both replicas answer. */
    char first[128] = "", other[128] = "";
    for (int i = 0; i < 20; i++) {
        r = call(c, full, &rc, &st);
        if (rc != TLR_OK)
            fail_msg("request %d: %s", i, st.message);
        assert_solved(full, r);
        if (!first[0])
            snprintf(first, sizeof(first), "%s", r->solver_replica_id);
        else if (strcmp(first, r->solver_replica_id) && !other[0])
            snprintf(other, sizeof(other), "%s", r->solver_replica_id);
        protobuf_c_message_free_unpacked(&r->base, NULL);
    }
    if (!other[0])
        fail_msg("all 20 requests went to %s; want both replicas", first);

    /* One replica dies: every request still gets a plan from the other. */
    replica_kill(&a);
    for (int i = 0; i < 10; i++) {
        r = call(c, full, &rc, &st);
        if (rc != TLR_OK)
            fail_msg("after kill, request %d: %s", i, st.message);
        assert_solved(full, r);
        protobuf_c_message_free_unpacked(&r->base, NULL);
    }

    tk_free(bare);
    tk_free(full);
    tlr_req_client_free(c);
    tlr_tls_free(tls);
    tlr_logger_free(lg);
    replica_stop(&b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-tailor-solver\n", argv[0]);
        return 2;
    }
    solver_path = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_replicas),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nng_fini();
    return rc;
}
