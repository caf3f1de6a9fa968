/* tls_test.c - tlr_tls and authorization over real loopback TLS.
 *
 * Certificates are made here with OpenSSL (a CA, leaf certificates with a
 * CN per identity, and a foreign CA) and written to a temporary
 * directory.  Cases: loading (good, missing, garbage, key not matching),
 * reload (nothing changed, a new certificate, a bad file kept out), URL
 * predicates, allow lists, and a REP server on tls+tcp:// whose route
 * allows one identity: that identity is served, another gets AUTH naming
 * both, a client of a foreign CA gets no connection; a publisher that
 * allows one subscriber identity delivers to it and not to another.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/req.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tailor/v1/common.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tlr_err.h"
#include "tlr_loop.h"
#include "tlr_pubsub.h"
#include "tlr_rep.h"
#include "tlr_req.h"
#include "tlr_time.h"
#include "tlr_tls.h"

static char dir[64];
static long serial = 1;

static EVP_PKEY *new_key(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    assert_non_null(k);
    return k;
}

/* A certificate for cn with key k, signed by (ca, cakey), or self-signed
 * when ca is NULL. */
static X509 *new_cert(const char *cn, EVP_PKEY *k, X509 *ca, EVP_PKEY *cakey, bool is_ca)
{
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : n);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca ? ca : x, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
                                            is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    assert_true(X509_sign(x, ca ? cakey : k, EVP_sha256()) > 0);
    return x;
}

static void write_pem(const char *name, X509 *x, EVP_PKEY *k)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s.tmp", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    if (x)
        PEM_write_X509(f, x);
    if (k)
        PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    char final[128];
    snprintf(final, sizeof(final), "%s/%s", dir, name);
    assert_int_equal(rename(path, final), 0);
}

static X509 *ca_cert, *foreign_cert;
static EVP_PKEY *ca_key, *foreign_key;

/* Issue <id>.crt/<id>.key from the CA (or the foreign CA). */
static void issue(const char *id, bool foreign)
{
    EVP_PKEY *k = new_key();
    X509 *x = new_cert(id, k, foreign ? foreign_cert : ca_cert, foreign ? foreign_key : ca_key,
                       false);
    char name[64];
    snprintf(name, sizeof(name), "%s%s.key", foreign ? "foreign-" : "", id);
    write_pem(name, NULL, k);
    snprintf(name, sizeof(name), "%s%s.crt", foreign ? "foreign-" : "", id);
    write_pem(name, x, NULL);
    X509_free(x);
    EVP_PKEY_free(k);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/tls_test.XXXXXX");
    assert_non_null(mkdtemp(dir));
    ca_key = new_key();
    ca_cert = new_cert("test-ca", ca_key, NULL, NULL, true);
    foreign_key = new_key();
    foreign_cert = new_cert("test-ca", foreign_key, NULL, NULL, true);
    write_pem("ca.crt", ca_cert, NULL);
    const char *ids[] = { "tailor-solver", "tailor-launcher", "tailor-watcher", "tailorctl" };
    for (size_t i = 0; i < 4; i++)
        issue(ids[i], false);
    issue("tailorctl", true);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    X509_free(ca_cert);
    X509_free(foreign_cert);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(foreign_key);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    nng_fini();
    return 0;
}

static tlr_logger *quiet(void)
{
    tlr_logger *l;
    tlr_logger_create(&(tlr_log_opts){ .service = "tls_test", .level = TLR_LOG_FATAL, .fd = 2 }, &l);
    return l;
}

static int open_as(const char *id, bool foreign, tlr_logger *log, tlr_tls **out, char *err,
                   size_t errlen)
{
    char ca[128], crt[128], key[128];
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    snprintf(crt, sizeof(crt), "%s/%s%s.crt", dir, foreign ? "foreign-" : "", id);
    snprintf(key, sizeof(key), "%s/%s%s.key", dir, foreign ? "foreign-" : "", id);
    return tlr_tls_create(&(tlr_tls_opts){ .ca_file = ca, .cert_file = crt, .key_file = key,
                                           .log = log },
                          out, err, errlen);
}

static void test_load(void **state)
{
    (void)state;
    tlr_logger *log = quiet();
    tlr_tls *t = NULL;
    char err[256] = "";
    assert_int_equal(open_as("tailor-solver", false, log, &t, err, sizeof(err)), TLR_OK);
    assert_string_equal(tlr_tls_identity(t), "tailor-solver");
    tlr_tls_free(t);

    t = NULL;
    assert_int_equal(open_as("nobody", false, log, &t, err, sizeof(err)), TLR_E_INVAL);
    assert_null(t);
    if (strstr(err, "nobody.crt") == NULL)
        fail_msg("missing file: got \"%s\", want the path named", err);

    /* The solver's certificate with the launcher's key. */
    char ca[128], crt[128], key[128];
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    snprintf(crt, sizeof(crt), "%s/tailor-solver.crt", dir);
    snprintf(key, sizeof(key), "%s/tailor-launcher.key", dir);
    assert_int_equal(tlr_tls_create(&(tlr_tls_opts){ .ca_file = ca, .cert_file = crt,
                                                     .key_file = key, .log = log },
                                    &t, err, sizeof(err)),
                     TLR_E_INVAL);
    if (strstr(err, "does not match") == NULL)
        fail_msg("mismatched key: got \"%s\"", err);
    /* A CA file that is not PEM. */
    assert_int_equal(tlr_tls_create(&(tlr_tls_opts){ .ca_file = key, .cert_file = crt,
                                                     .key_file = key, .log = log },
                                    &t, err, sizeof(err)),
                     TLR_E_INVAL);
    assert_int_equal(tlr_tls_create(&(tlr_tls_opts){ .ca_file = ca, .log = log }, &t, err,
                                    sizeof(err)),
                     TLR_E_INVAL);
    tlr_logger_free(log);
}

static void test_reload(void **state)
{
    (void)state;
    tlr_logger *log = quiet();
    tlr_tls *t = NULL;
    char err[256];
    issue("tailor-watcher", false);
    assert_int_equal(open_as("tailor-watcher", false, log, &t, err, sizeof(err)), TLR_OK);
    assert_int_equal(tlr_tls_reload(t), TLR_OK);            /* nothing changed */

    /* A bad certificate file: refused, the old one kept. */
    char path[128];
    snprintf(path, sizeof(path), "%s/tailor-watcher.crt", dir);
    FILE *f = fopen(path, "w");
    fputs("garbage\n", f);
    fclose(f);
    assert_int_equal(tlr_tls_reload(t), TLR_E_INVAL);
    assert_int_equal(tlr_tls_reload(t), TLR_E_INVAL);       /* still bad, logged once */
    assert_string_equal(tlr_tls_identity(t), "tailor-watcher");

    /* Re-issued in place (the tailorctl pair under the watcher's names):
     * the new identity shows without a new tlr_tls. */
    EVP_PKEY *k = new_key();
    X509 *x = new_cert("tailor-watcher-2", k, ca_cert, ca_key, false);
    write_pem("tailor-watcher.key", NULL, k);
    write_pem("tailor-watcher.crt", x, NULL);
    X509_free(x);
    EVP_PKEY_free(k);
    assert_int_equal(tlr_tls_reload(t), TLR_OK);
    assert_string_equal(tlr_tls_identity(t), "tailor-watcher-2");
    tlr_tls_free(t);
    issue("tailor-watcher", false);
    tlr_logger_free(log);
}

static void test_urls_and_allow(void **state)
{
    (void)state;
    assert_true(tlr_tls_url("tls+tcp://127.0.0.1:1"));
    assert_false(tlr_tls_url("tcp://127.0.0.1:1"));
    assert_true(tlr_tls_url_plaintext("tcp://127.0.0.1:1"));
    assert_true(tlr_tls_url_plaintext("tcp6://[::1]:1"));
    assert_false(tlr_tls_url_plaintext("tls+tcp://127.0.0.1:1"));
    assert_false(tlr_tls_url_plaintext("ipc:///tmp/x"));
    assert_false(tlr_tls_url_plaintext("inproc://x"));
    const char *const two[] = { TLR_ID_LAUNCHER, TLR_ID_CTL, NULL };
    const char *const none[] = { NULL };
    assert_true(tlr_tls_allowed(two, "tailorctl"));
    assert_false(tlr_tls_allowed(two, "tailor-solver"));
    assert_false(tlr_tls_allowed(none, "tailorctl"));
    assert_true(tlr_tls_allowed(NULL, "anyone"));
    char buf[64];
    tlr_tls_allow_str(two, buf, sizeof(buf));
    assert_string_equal(buf, "tailor-launcher, tailorctl");
    tlr_tls_allow_str(NULL, buf, sizeof(buf));
    assert_string_equal(buf, "any verified peer");
}

/* ---- loopback: REP authorization, refused clients, pub/sub ------------ */

static Tailor__V1__SolveResponse resp;

static int solve(void *arg, const ProtobufCMessage *req, const char *request_id,
                 ProtobufCMessage **reply, tlr_status *st)
{
    (void)arg, (void)req, (void)request_id, (void)st;
    tailor__v1__solve_response__init(&resp);
    resp.solver_replica_id = "tls";
    *reply = &resp.base;
    return TLR_OK;
}

static void *run_loop(void *arg)
{
    tlr_loop_run(arg);
    return NULL;
}

static int call_as(const char *id, bool foreign, const char *url, tlr_logger *log,
                   tlr_status *st)
{
    tlr_tls *t = NULL;
    char err[256];
    assert_int_equal(open_as(id, foreign, log, &t, err, sizeof(err)), TLR_OK);
    const char *urls[] = { url };
    tlr_req_client *c = NULL;
    assert_int_equal(tlr_req_client_create(&(tlr_req_opts){ .urls = urls, .nurls = 1,
                                                            .timeout_ms = 1500, .log = log,
                                                            .sender = id, .tls = t },
                                           &c),
                     TLR_OK);
    Tailor__V1__SolveRequest rq = TAILOR__V1__SOLVE_REQUEST__INIT;
    ProtobufCMessage *reply = NULL;
    int rc = tlr_req_call(c, &rq.base, &tailor__v1__solve_response__descriptor, 0, &reply, st);
    protobuf_c_message_free_unpacked(reply, NULL);
    tlr_req_client_free(c);
    tlr_tls_free(t);
    return rc;
}

/* A client with a certificate from another CA (named id) asks url: the
 * handshake fails, so no request is ever answered.  A plain req0 socket
 * that redials only every 10 s, so no attempt is in the middle of a
 * handshake when it closes (nng 1.5.2 leaks a connection closed
 * mid-handshake, tlr_req.h).  Returns nng_recv's error. */
static int foreign_call(const char *id, const char *url, tlr_logger *log)
{
    tlr_tls *t = NULL;
    char err[256];
    assert_int_equal(open_as(id, true, log, &t, err, sizeof(err)), TLR_OK);
    nng_socket c;
    assert_int_equal(nng_req0_open(&c), 0);
    assert_int_equal(nng_socket_set_ms(c, NNG_OPT_RECONNMINT, 10000), 0);
    assert_int_equal(nng_socket_set_ms(c, NNG_OPT_RECONNMAXT, 10000), 0);
    assert_int_equal(nng_socket_set_ms(c, NNG_OPT_SENDTIMEO, 1500), 0);
    assert_int_equal(nng_socket_set_ms(c, NNG_OPT_RECVTIMEO, 1500), 0);
    assert_int_equal(tlr_tls_dial(t, c, url), 0);
    Tailor__V1__SolveRequest rq = TAILOR__V1__SOLVE_REQUEST__INIT;
    nng_msg *m = NULL;
    assert_int_equal(tlr_envelope_pack(NULL, &rq.base, "r-1", id, &m), TLR_OK);
    int rv = nng_sendmsg(c, m, 0);
    if (rv != 0) {
        nng_msg_free(m);
    } else {
        nng_msg *r = NULL;
        rv = nng_recvmsg(c, &r, 0);
        if (rv == 0)
            nng_msg_free(r);
    }
    nng_close(c);
    tlr_tls_free(t);
    return rv;
}

static void test_rep_authorization(void **state)
{
    (void)state;
    tlr_logger *log = quiet();
    tlr_loop *loop = NULL;
    assert_int_equal(tlr_loop_create(&loop), TLR_OK);
    tlr_tls *srv_tls = NULL;
    char err[256];
    assert_int_equal(open_as("tailor-solver", false, log, &srv_tls, err, sizeof(err)), TLR_OK);
    static const char *const launcher_only[] = { TLR_ID_LAUNCHER, NULL };
    tlr_rep_route routes[] = {
        { .request = &tailor__v1__solve_request__descriptor, .handle = solve,
          .allow = launcher_only },
    };
    tlr_rep_server *s = NULL;
    assert_int_equal(tlr_rep_server_create(loop, &(tlr_rep_opts){ .listen = "tls+tcp://127.0.0.1:0",
                                                                   .log = log, .routes = routes,
                                                                   .nroutes = 1, .tls = srv_tls },
                                           &s),
                     TLR_OK);
    /* Without certificates a tls+tcp:// server is refused. */
    tlr_rep_server *none = NULL;
    assert_int_equal(tlr_rep_server_create(loop, &(tlr_rep_opts){ .listen = "tls+tcp://127.0.0.1:0",
                                                                   .log = log, .routes = routes,
                                                                   .nroutes = 1 },
                                           &none),
                     TLR_E_INVAL);
    char url[64];
    snprintf(url, sizeof(url), "tls+tcp://127.0.0.1:%d", tlr_rep_server_port(s));
    pthread_t th;
    pthread_create(&th, NULL, run_loop, loop);

    tlr_status st = { 0 };
    assert_int_equal(call_as("tailor-launcher", false, url, log, &st), TLR_OK);
    int rc = call_as("tailor-watcher", false, url, log, &st);
    assert_int_equal(rc, TLR_E_REMOTE);
    assert_int_equal(st.code, TLR_E_AUTH);
    if (strstr(st.message, "\"tailor-watcher\"") == NULL ||
        strstr(st.message, "tailor.v1.SolveRequest") == NULL)
        fail_msg("AUTH message: got \"%s\", want identity and type", st.message);
    /* Same name, another CA: no connection at all. */
    rc = foreign_call("tailorctl", url, log);
    if (rc != NNG_ETIMEDOUT)
        fail_msg("foreign CA: got %s, want no answer", nng_strerror(rc));
    assert_int_equal(call_as("tailor-launcher", false, url, log, &st), TLR_OK);

    tlr_loop_stop(loop);
    pthread_join(th, NULL);
    tlr_rep_stats stats;
    tlr_rep_server_stats(s, &stats);
    assert_int_equal(stats.auth, 1);
    assert_int_equal(stats.replies_ok, 2);
    tlr_rep_server_free(s);
    tlr_tls_free(srv_tls);
    tlr_loop_free(loop);
    tlr_logger_free(log);
}

typedef struct got {
    int n;
} got;

static void on_msg(void *arg, const char *topic, const Tailor__V1__Envelope *env)
{
    (void)topic, (void)env;
    ((got *)arg)->n++;
}

static void test_pub_allow(void **state)
{
    (void)state;
    tlr_logger *log = quiet();
    char err[256];
    tlr_tls *pt = NULL, *good_t = NULL, *bad_t = NULL;
    assert_int_equal(open_as("tailor-watcher", false, log, &pt, err, sizeof(err)), TLR_OK);
    assert_int_equal(open_as("tailor-launcher", false, log, &good_t, err, sizeof(err)), TLR_OK);
    assert_int_equal(open_as("tailor-solver", false, log, &bad_t, err, sizeof(err)), TLR_OK);
    static const char *const launcher_only[] = { TLR_ID_LAUNCHER, NULL };
    static const char *const watcher_only[] = { TLR_ID_WATCHER, NULL };
    tlr_pub *p = NULL;
    assert_int_equal(tlr_pub_open(&(tlr_pub_opts){ .url = "tls+tcp://127.0.0.1:0", .log = log,
                                                   .sender = "t", .tls = pt,
                                                   .allow = launcher_only },
                                  &p),
                     TLR_OK);
    char url[64];
    snprintf(url, sizeof(url), "tls+tcp://127.0.0.1:%d", tlr_pub_port(p));
    const char *urls[] = { url };
    const char *topics[] = { "pending" };
    tlr_loop *loop = NULL;
    assert_int_equal(tlr_loop_create(&loop), TLR_OK);
    got g = { 0 };
    tlr_sub *good = NULL;
    assert_int_equal(tlr_sub_create(loop, &(tlr_sub_opts){ .urls = urls, .nurls = 1,
                                                           .topics = topics, .ntopics = 1,
                                                           .log = log, .fn = on_msg, .arg = &g,
                                                           .tls = good_t, .allow = watcher_only },
                                    &good),
                     TLR_OK);
    /* The solver's subscription: a plain sub0 socket with the solver's
     * certificate that redials only every 10 s, so no attempt of it is in
     * the middle of a handshake when the test closes (nng 1.5.2 leaks a
     * connection closed mid-handshake, tlr_req.h). */
    nng_socket bad;
    assert_int_equal(nng_sub0_open(&bad), 0);
    assert_int_equal(nng_socket_set(bad, NNG_OPT_SUB_SUBSCRIBE, "pending", 8), 0);
    assert_int_equal(nng_socket_set_ms(bad, NNG_OPT_RECONNMINT, 10000), 0);
    assert_int_equal(nng_socket_set_ms(bad, NNG_OPT_RECONNMAXT, 10000), 0);
    assert_int_equal(tlr_tls_dial(bad_t, bad, url), 0);
    pthread_t th;
    pthread_create(&th, NULL, run_loop, loop);
    /* Wait for the launcher's subscription; the solver's keeps being
     * refused (each attempt counts as a peer only until it is closed). */
    for (int i = 0; i < 300 && tlr_sub_peers(good) == 0; i++)
        usleep(10000);
    usleep(300000);
    Tailor__V1__PingRequest m = TAILOR__V1__PING_REQUEST__INIT;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(tlr_pub_send(p, "pending", &m.base), TLR_OK);
        usleep(20000);
    }
    for (int i = 0; i < 200 && g.n < 5; i++)
        usleep(10000);
    tlr_loop_stop(loop);
    pthread_join(th, NULL);
    assert_int_equal(g.n, 5);
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(nng_recv(bad, &buf, &len, NNG_FLAG_NONBLOCK | NNG_FLAG_ALLOC), NNG_EAGAIN);
    tlr_sub_free(good);
    nng_close(bad);
    tlr_pub_free(p);
    tlr_loop_free(loop);
    tlr_tls_free(pt);
    tlr_tls_free(good_t);
    tlr_tls_free(bad_t);
    tlr_logger_free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_urls_and_allow),
        cmocka_unit_test(test_rep_authorization),
        cmocka_unit_test(test_pub_allow),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
