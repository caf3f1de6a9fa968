/* tls_engine.c - an nng TLS engine on OpenSSL.
 *
 * Why an engine of our own.  Debian 12's nng 1.5.2 does TLS with a
 * built-in mbed TLS 2.28 engine: TLS 1.2 only, and -- the reason we cannot
 * use it -- no way to learn who the peer of a pipe is (NNG_OPT_TLS_PEER_CN
 * arrived in nng 1.6).  Authorization by peer identity needs that name.
 * nng exports a small engine interface (nng/supplemental/tls/engine.h):
 * configuration objects (mode, auth mode, CA, own certificate, versions)
 * and connection objects (handshake, recv, send, verified) whose bytes go
 * through nng_tls_engine_send/recv.  This file implements it with OpenSSL,
 * which tailor links anyway.
 *
 * How the identity gets out.  nng_pipe_get_bool(p, NNG_OPT_TLS_VERIFIED)
 * runs, synchronously on the calling thread, tlstran_pipe_getopt ->
 * tls_get -> tls_get_verified -> our conn_verified() (nng 1.5.2:
 * src/sp/transport/tls/tls.c, src/supplemental/tls/tls_common.c).
 * conn_verified() leaves the connection's peer CN in a thread-local slot,
 * and tlr_tls_engine_take_peer() -- called right after, on the same thread
 * -- takes it.  tls.c wraps the pair as tlr_tls_pipe_identity().  The CN is
 * read once, when the handshake completes.
 *
 * When registration takes effect.  nni_init() (run lazily by the first nng
 * call) resets the engine to the built-in one, and so does every init
 * after nng_fini(); nng_tls_config_alloc() takes whatever engine is
 * registered at that moment and the configuration keeps it.  So
 * tlr_tls_engine_use() first forces nni_init() (nng_tls_engine_name()
 * does) and then registers, and tls.c calls it before each config it
 * allocates.
 *
 * Policy baked in: TLS 1.2 minimum (1.3 allowed); TLS 1.2 cipher suites
 * ECDHE with AEAD only; no renegotiation.  Peer verification is what the
 * configuration's auth mode says (tailor asks REQUIRED on both sides).  The
 * server name is sent as SNI but not matched against the certificate:
 * tailor authorizes by identity (CN) signed by its own CA, not by DNS name.
 */
#include "tlr_tls.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <nng/supplemental/tls/engine.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tlr_err.h"

#define ENGINE_NAME "tailor-openssl"
#define TLS12_SUITES "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"  \
                     "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"  \
                     "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

struct nng_tls_engine_config {
    SSL_CTX *ctx;
    nng_tls_mode mode;
    char *server_name;
};

struct nng_tls_engine_conn {
    void *tls;               /* nng's handle for nng_tls_engine_send/recv */
    SSL *ssl;
    bool verified;
    char peer[TLR_TLS_ID_MAX];
};

static _Thread_local struct {
    bool set;
    bool verified;
    char id[TLR_TLS_ID_MAX];
} last_peer;

static pthread_once_t bio_once = PTHREAD_ONCE_INIT;
static BIO_METHOD *bio_nng;

/* ---- the BIO: OpenSSL's bytes in and out through nng ------------------ */

static int bio_write(BIO *b, const char *buf, int len)
{
    BIO_clear_retry_flags(b);
    size_t n = (size_t)len;
    int rv = nng_tls_engine_send(BIO_get_data(b), (const uint8_t *)buf, &n);
    if (rv == NNG_EAGAIN) {
        BIO_set_retry_write(b);
        return -1;
    }
    return rv == 0 ? (int)n : -1;
}

static int bio_read(BIO *b, char *buf, int len)
{
    BIO_clear_retry_flags(b);
    size_t n = (size_t)len;
    int rv = nng_tls_engine_recv(BIO_get_data(b), (uint8_t *)buf, &n);
    if (rv == NNG_EAGAIN) {
        BIO_set_retry_read(b);
        return -1;
    }
    return rv == 0 ? (int)n : -1;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static void bio_method_init(void)
{
    bio_nng = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "nng");
    if (bio_nng == NULL)
        abort();
    BIO_meth_set_write(bio_nng, bio_write);
    BIO_meth_set_read(bio_nng, bio_read);
    BIO_meth_set_ctrl(bio_nng, bio_ctrl);
    BIO_meth_set_create(bio_nng, bio_create);
}

/* ---- configuration ---------------------------------------------------- */

static int cfg_init(nng_tls_engine_config *c, nng_tls_mode mode)
{
    c->mode = mode;
    c->ctx = SSL_CTX_new(mode == NNG_TLS_MODE_SERVER ? TLS_server_method() : TLS_client_method());
    if (c->ctx == NULL)
        return NNG_ENOMEM;
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(c->ctx, TLS1_3_VERSION);
    if (SSL_CTX_set_cipher_list(c->ctx, TLS12_SUITES) != 1) {
        SSL_CTX_free(c->ctx);
        c->ctx = NULL;
        ERR_clear_error();
        return NNG_ECRYPTO;
    }
    SSL_CTX_set_options(c->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* nng may offer the rest of a partly sent buffer from a new address. */
    SSL_CTX_set_mode(c->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* nng's defaults: a client verifies the server, a server does not
     * ask for a client certificate unless told to (tailor tells it). */
    SSL_CTX_set_verify(c->ctx, mode == NNG_TLS_MODE_SERVER ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       NULL);
    return 0;
}

static void cfg_fini(nng_tls_engine_config *c)
{
    SSL_CTX_free(c->ctx);
    free(c->server_name);
}

static int cfg_server(nng_tls_engine_config *c, const char *name)
{
    char *dup = strdup(name);
    if (dup == NULL)
        return NNG_ENOMEM;
    free(c->server_name);
    c->server_name = dup;
    return 0;
}

static int cfg_auth(nng_tls_engine_config *c, nng_tls_auth_mode mode)
{
    switch (mode) {
    case NNG_TLS_AUTH_MODE_NONE:
        SSL_CTX_set_verify(c->ctx, SSL_VERIFY_NONE, NULL);
        return 0;
    case NNG_TLS_AUTH_MODE_OPTIONAL:
        SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
        return 0;
    case NNG_TLS_AUTH_MODE_REQUIRED:
        SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        return 0;
    }
    return NNG_EINVAL;
}

static int cfg_ca_chain(nng_tls_engine_config *c, const char *certs, const char *crl)
{
    X509_STORE *store = SSL_CTX_get_cert_store(c->ctx);
    BIO *b = BIO_new_mem_buf(certs, -1);
    int n = 0;
    int rv = 0;
    X509 *x;
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        if (X509_STORE_add_cert(store, x) == 1)
            n++;
        X509_free(x);
    }
    BIO_free(b);
    ERR_clear_error();
    if (n == 0)
        return NNG_ECRYPTO;
    if (crl != NULL && crl[0] != '\0') {
        b = BIO_new_mem_buf(crl, -1);
        X509_CRL *cr;
        int ncrl = 0;
        while ((cr = PEM_read_bio_X509_CRL(b, NULL, NULL, NULL)) != NULL) {
            if (X509_STORE_add_crl(store, cr) == 1)
                ncrl++;
            X509_CRL_free(cr);
        }
        BIO_free(b);
        ERR_clear_error();
        if (ncrl == 0)
            rv = NNG_ECRYPTO;
        else
            X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
    }
    return rv;
}

static int cfg_own_cert(nng_tls_engine_config *c, const char *cert, const char *key,
                        const char *pass)
{
    int rv = NNG_ECRYPTO;
    BIO *cb = BIO_new_mem_buf(cert, -1);
    BIO *kb = BIO_new_mem_buf(key, -1);
    EVP_PKEY *pk = NULL;
    X509 *leaf = PEM_read_bio_X509(cb, NULL, NULL, NULL);
    if (leaf == NULL || SSL_CTX_use_certificate(c->ctx, leaf) != 1)
        goto out;
    X509 *extra;
    while ((extra = PEM_read_bio_X509(cb, NULL, NULL, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(c->ctx, extra) != 1) {
            X509_free(extra);
            goto out;
        }
    }
    pk = PEM_read_bio_PrivateKey(kb, NULL, NULL, (void *)pass);
    if (pk == NULL || SSL_CTX_use_PrivateKey(c->ctx, pk) != 1 ||
        SSL_CTX_check_private_key(c->ctx) != 1)
        goto out;
    rv = 0;
out:
    ERR_clear_error();
    EVP_PKEY_free(pk);
    X509_free(leaf);
    BIO_free(cb);
    BIO_free(kb);
    return rv;
}

static int cfg_version(nng_tls_engine_config *c, nng_tls_version lo, nng_tls_version hi)
{
    if (hi < NNG_TLS_1_2 || lo > hi)
        return NNG_ENOTSUP;
    /* Below 1.2 is never offered, whatever is asked. */
    int min = lo >= NNG_TLS_1_3 ? TLS1_3_VERSION : TLS1_2_VERSION;
    int max = hi >= NNG_TLS_1_3 ? TLS1_3_VERSION : TLS1_2_VERSION;
    if (SSL_CTX_set_min_proto_version(c->ctx, min) != 1 ||
        SSL_CTX_set_max_proto_version(c->ctx, max) != 1)
        return NNG_ENOTSUP;
    return 0;
}

/* ---- connections ------------------------------------------------------ */

static int conn_init(nng_tls_engine_conn *cn, void *tls, nng_tls_engine_config *c)
{
    cn->tls = tls;
    cn->ssl = SSL_new(c->ctx);
    if (cn->ssl == NULL)
        return NNG_ENOMEM;
    BIO *b = BIO_new(bio_nng);
    if (b == NULL) {
        SSL_free(cn->ssl);
        cn->ssl = NULL;
        return NNG_ENOMEM;
    }
    BIO_set_data(b, tls);
    SSL_set_bio(cn->ssl, b, b);
    if (c->mode == NNG_TLS_MODE_SERVER) {
        SSL_set_accept_state(cn->ssl);
    } else {
        SSL_set_connect_state(cn->ssl);
        if (c->server_name != NULL)
            SSL_set_tlsext_host_name(cn->ssl, c->server_name);
    }
    return 0;
}

static void conn_fini(nng_tls_engine_conn *cn)
{
    SSL_free(cn->ssl);
}

static void conn_close(nng_tls_engine_conn *cn)
{
    if (SSL_is_init_finished(cn->ssl))
        SSL_shutdown(cn->ssl);
    ERR_clear_error();
}

/* Map an SSL call's failure to an nng code; clears the error queue.
 *
 * The codes matter to nng 1.5.2's listener: when a connection fails while
 * being set up, the listener re-arms its accept at once for ECONNRESET,
 * ECONNABORTED and EPEERAUTH, after 100 ms for other codes, and NEVER for
 * ECLOSED (src/core/listener.c listener_accept_cb).  A peer that closes
 * (close_notify, or the TCP connection) is ECONNSHUT/ECONNRESET here, and
 * a failed handshake EPEERAUTH -- never ECLOSED, or one client that hangs
 * up during the handshake would leave the service deaf. */
static int ssl_fail(SSL *ssl, int ret, int fatal)
{
    int e = SSL_get_error(ssl, ret);
    ERR_clear_error();
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return NNG_EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return NNG_ECONNSHUT;
    default:
        return fatal;
    }
}

static void note_peer(nng_tls_engine_conn *cn)
{
    X509 *x = SSL_get1_peer_certificate(cn->ssl);
    cn->verified = x != NULL && SSL_get_verify_result(cn->ssl) == X509_V_OK;
    cn->peer[0] = '\0';
    if (x != NULL) {
        int n = X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn->peer,
                                          (int)sizeof(cn->peer));
        if (n < 0)
            cn->peer[0] = '\0';
        X509_free(x);
    }
    ERR_clear_error();
}

static int conn_handshake(nng_tls_engine_conn *cn)
{
    int ret = SSL_do_handshake(cn->ssl);
    if (ret == 1) {
        note_peer(cn);
        return 0;
    }
    return ssl_fail(cn->ssl, ret, NNG_EPEERAUTH);
}

static int conn_recv(nng_tls_engine_conn *cn, uint8_t *buf, size_t *szp)
{
    size_t got = 0;
    int ret = SSL_read_ex(cn->ssl, buf, *szp, &got);
    if (ret != 1)
        return ssl_fail(cn->ssl, ret, NNG_ECONNRESET);
    *szp = got;
    return 0;
}

static int conn_send(nng_tls_engine_conn *cn, const uint8_t *buf, size_t *szp)
{
    size_t put = 0;
    int ret = SSL_write_ex(cn->ssl, buf, *szp, &put);
    if (ret != 1)
        return ssl_fail(cn->ssl, ret, NNG_ECONNRESET);
    *szp = put;
    return 0;
}

static bool conn_verified(nng_tls_engine_conn *cn)
{
    last_peer.set = true;
    last_peer.verified = cn->verified;
    memcpy(last_peer.id, cn->peer, sizeof(last_peer.id));
    return cn->verified;
}

#ifdef NNG_OPT_TLS_PEER_CN
/* nng >= 1.6 asks the engine for the name itself (NNG_OPT_TLS_PEER_CN,
 * freed by the caller with nng_strfree, i.e. free). */
static char *conn_peer_cn(nng_tls_engine_conn *cn)
{
    return cn->peer[0] ? strdup(cn->peer) : NULL;
}

static char **conn_peer_alt_names(nng_tls_engine_conn *cn)
{
    (void)cn;
    return NULL;   /* tailor authorizes by CN only */
}
#endif

int tlr_tls_engine_take_peer(char id[TLR_TLS_ID_MAX], bool *verified)
{
    if (!last_peer.set)
        return TLR_E_NOTFOUND;
    memcpy(id, last_peer.id, TLR_TLS_ID_MAX);
    *verified = last_peer.verified;
    last_peer.set = false;
    return TLR_OK;
}

static nng_tls_engine_config_ops config_ops = {
    .size = sizeof(nng_tls_engine_config),
    .init = cfg_init,
    .fini = cfg_fini,
    .server = cfg_server,
    .auth = cfg_auth,
    .ca_chain = cfg_ca_chain,
    .own_cert = cfg_own_cert,
    .version = cfg_version,
};

static nng_tls_engine_conn_ops conn_ops = {
    .size = sizeof(nng_tls_engine_conn),
    .init = conn_init,
    .fini = conn_fini,
    .close = conn_close,
    .handshake = conn_handshake,
    .recv = conn_recv,
    .send = conn_send,
    .verified = conn_verified,
#ifdef NNG_OPT_TLS_PEER_CN
    .peer_cn = conn_peer_cn,
    .peer_alt_names = conn_peer_alt_names,
#endif
};

static const nng_tls_engine engine = {
    .version = NNG_TLS_ENGINE_VERSION,
    .config_ops = &config_ops,
    .conn_ops = &conn_ops,
    .name = ENGINE_NAME,
    .description = "OpenSSL (tailor)",
    .fips_mode = false,
};

int tlr_tls_engine_use(void)
{
    pthread_once(&bio_once, bio_method_init);
    /* nng_tls_engine_name() runs nni_init(), which would otherwise reset
     * a registration made before it. */
    if (strcmp(nng_tls_engine_name(), ENGINE_NAME) == 0)
        return TLR_OK;
    return nng_tls_engine_register(&engine) == 0 ? TLR_OK : TLR_E_IO;
}
