/* bounded_it.c - a real service refuses what it cannot afford to decode.
 *
 * What an operator would notice: against real tailor-launcher and
 * tailor-solver processes,
 *   - a LaunchRequest over the Launch type's limit (1 MiB) is answered
 *     Status TOOBIG naming the type and the limit;
 *   - a LaunchRequest under that limit but made of empty claims (2 wire
 *     bytes, hundreds decoded) is answered TOOBIG "decode budget";
 *   - an 8 MiB SolveRequest of empty pods -- which would decode to ~1.7 GB
 *     -- is answered TOOBIG, and the solver's peak RSS stays far below;
 *   - after each, the service answers a Ping, and exits 0 on SIGTERM.
 * Usage: bounded_it PATH-TO-tailor-launcher PATH-TO-tailor-solver
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "tailor/v1/common.pb-c.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tlr_envelope.h"
#include "tlr_err.h"
#include "tlr_tls.h"
#include "../it_tls.h"

static const char *launcher_path, *solver_path;
static pid_t running;   /* the service under test, killed if a test fails */

typedef struct svc {
    pid_t pid;
    char url[64];
    nng_socket sock;
    tlr_tls *tls;   /* the client's: tailorctl, which may send Launch and Solve */
} svc;

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

/* Start the service at path as identity id, over mutual TLS (the
 * certificates of the tls_certs fixture), and dial it as tailorctl: the
 * sender of these requests is an authenticated peer, the case decoding
 * limits are for once the bus refuses everyone else. */
static void svc_start(svc *s, const char *path, const char *id, bool publish)
{
    char http[64], pub[64], ca[512], cert[512], key[512];
    snprintf(s->url, sizeof(s->url), "tls+tcp://127.0.0.1:%d", free_port());
    snprintf(http, sizeof(http), "127.0.0.1:%d", free_port());
    snprintf(pub, sizeof(pub), "tls+tcp://127.0.0.1:%d", free_port());
    it_tls_files(id, ca, cert, key, sizeof(ca));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("TAILOR_TLS_CA", ca, 1);
        setenv("TAILOR_TLS_CERT", cert, 1);
        setenv("TAILOR_TLS_KEY", key, 1);
        if (publish)
            execl(path, path, "--listen", s->url, "--http-listen", http, "--publish", pub,
                  "--log-level", "error", (char *)NULL);
        else
            execl(path, path, "--listen", s->url, "--http-listen", http, "--log-level",
                  "error", (char *)NULL);
        _exit(127);
    }
    s->pid = pid;
    running = pid;
    assert_int_equal(nng_req0_open(&s->sock), 0);
    assert_int_equal(nng_socket_set_ms(s->sock, NNG_OPT_RECVTIMEO, 20000), 0);
    assert_int_equal(nng_socket_set_ms(s->sock, NNG_OPT_REQ_RESENDTIME, 60000), 0);
    assert_int_equal(it_tls_as("tailorctl", NULL, &s->tls), TLR_OK);
    assert_int_equal(tlr_tls_dial(s->tls, s->sock, s->url), TLR_OK);
}

static void svc_stop(svc *s)
{
    nng_close(s->sock);
    tlr_tls_free(s->tls);
    kill(s->pid, SIGTERM);
    int st = 0;
    assert_int_equal(waitpid(s->pid, &st, 0), s->pid);
    running = 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s: got status 0x%x, want clean exit 0", s->url, st);
}

/* Send an envelope of type carrying payload[0..len) and return the reply
 * envelope (owned). */
static Tailor__V1__Envelope *call_raw(svc *s, const char *type, const uint8_t *payload,
                                      size_t len)
{
    Tailor__V1__Envelope env = TAILOR__V1__ENVELOPE__INIT;
    env.contract_version = TLR_CONTRACT_VERSION;
    env.type = (char *)type;
    env.payload.data = (uint8_t *)payload;
    env.payload.len = len;
    env.request_id = (char *)"bounded-it";
    size_t n = protobuf_c_message_get_packed_size(&env.base);
    uint8_t *wire = malloc(n);
    protobuf_c_message_pack(&env.base, wire);
    int rv = nng_send(s->sock, wire, n, 0);
    free(wire);
    if (rv != 0)
        fail_msg("send %s: %s", type, nng_strerror(rv));
    void *buf = NULL;
    size_t blen = 0;
    if ((rv = nng_recv(s->sock, &buf, &blen, NNG_FLAG_ALLOC)) != 0)
        fail_msg("no answer to %s of %zu bytes: %s", type, len, nng_strerror(rv));
    Tailor__V1__Envelope *out = NULL;
    char err[256];
    assert_int_equal(tlr_envelope_unpack(buf, blen, 0, &out, err, sizeof(err)), TLR_OK);
    nng_free(buf, blen);
    return out;
}

static void expect_status(Tailor__V1__Envelope *e, int code, const char *msg)
{
    int got = e->status != NULL ? (int)e->status->code : 0;
    const char *m = e->status != NULL && e->status->message ? e->status->message : "";
    if (got != code || strstr(m, msg) == NULL)
        fail_msg("got %s \"%s\", want %s \"%s\"", tlr_errname(got), m, tlr_errname(code), msg);
    tailor__v1__envelope__free_unpacked(e, NULL);
}

static void expect_pong(svc *s)
{
    Tailor__V1__Envelope *e = call_raw(s, "tailor.v1.PingRequest", NULL, 0);
    if (e->status != NULL && e->status->code != 0)
        fail_msg("Ping answered %s", e->status->message);
    assert_string_equal(e->type, "tailor.v1.PingResponse");
    tailor__v1__envelope__free_unpacked(e, NULL);
}

/* Peak resident memory of pid in KiB (VmHWM). */
static long peak_rss_kib(pid_t pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* n empty messages in the repeated field whose key (field << 3 | 2) is tag. */
static uint8_t *empty_elements(uint8_t tag, size_t n)
{
    uint8_t *b = malloc(2 * n);
    for (size_t i = 0; i < n; i++) {
        b[2 * i] = tag;
        b[2 * i + 1] = 0;  /* of length 0 */
    }
    return b;
}

static void test_launcher(void **state)
{
    (void)state;
    svc s;
    svc_start(&s, launcher_path, "tailor-launcher", true);
    expect_pong(&s);

    /* A real claim with a 2 MiB annotation: over Launch's 1 MiB. */
    Tailor__V1__NodeClaim nc = TAILOR__V1__NODE_CLAIM__INIT;
    Tailor__V1__Label big = TAILOR__V1__LABEL__INIT, *bigp = &big;
    char *v = malloc(2 << 20);
    memset(v, 'x', (2 << 20) - 1);
    v[(2 << 20) - 1] = '\0';
    big.key = (char *)"note";
    big.value = v;
    nc.name = (char *)"claim-1";
    nc.annotations = &bigp;
    nc.n_annotations = 1;
    Tailor__V1__NodeClaim *ncp = &nc;
    Tailor__V1__LaunchRequest lr = TAILOR__V1__LAUNCH_REQUEST__INIT;
    lr.nodeclaims = &ncp;
    lr.n_nodeclaims = 1;
    size_t n = protobuf_c_message_get_packed_size(&lr.base);
    uint8_t *p = malloc(n);
    protobuf_c_message_pack(&lr.base, p);
    expect_status(call_raw(&s, "tailor.v1.LaunchRequest", p, n), TLR_E_TOOBIG,
                  "exceeds the limit of 1048576 bytes for this request type");
    free(p);
    free(v);
    expect_pong(&s);

    /* Under the limit, but 480k empty claims. */
    p = empty_elements(0x0a, 480 << 10);   /* nodeclaims = 1 */
    expect_status(call_raw(&s, "tailor.v1.LaunchRequest", p, 2 * (480 << 10)), TLR_E_TOOBIG,
                  "decode budget");
    free(p);
    expect_pong(&s);
    long kib = peak_rss_kib(s.pid);
    printf("launcher peak RSS %ld MiB\n", kib >> 10);
    assert_true(kib > 0 && kib < (200 << 10));
    svc_stop(&s);
}

static void test_solver(void **state)
{
    (void)state;
    svc s;
    svc_start(&s, solver_path, "tailor-solver", false);
    expect_pong(&s);
    /* 8 MiB of empty pods: ~1.7 GB decoded without a budget. */
    size_t n = 4 << 20;
    uint8_t *p = empty_elements(0x12, n);   /* pending_pods = 2 */
    expect_status(call_raw(&s, "tailor.v1.SolveRequest", p, 2 * n), TLR_E_TOOBIG,
                  "tailor.v1.SolveRequest of 8388608 bytes needs more than");
    free(p);
    expect_pong(&s);
    long kib = peak_rss_kib(s.pid);
    printf("solver peak RSS %ld MiB\n", kib >> 10);
    assert_true(kib > 0 && kib < (400 << 10));
    svc_stop(&s);
}

static int kill_running(void **state)
{
    (void)state;
    if (running > 0) {
        kill(running, SIGKILL);
        waitpid(running, NULL, 0);
        running = 0;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s PATH-TO-tailor-launcher PATH-TO-tailor-solver\n", argv[0]);
        return 2;
    }
    launcher_path = argv[1];
    solver_path = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_launcher, kill_running),
        cmocka_unit_test_teardown(test_solver, kill_running),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
