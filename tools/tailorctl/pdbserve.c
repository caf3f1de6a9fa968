/* pdbserve.c - the admission webhook behind tailorctl pdb-check --serve.
 *
 * nng's HTTP server with a TLS configuration on tailor's OpenSSL engine
 * for nng (common/transport/tls_engine.c): POST /validate takes an AdmissionReview v1, GET /healthz answers
 * "ok".  For each review the namespace's pods, workloads and PDBs are
 * listed from the API server (when a kubeconfig or the in-cluster service
 * account works), so "minAvailable >= replicas" and overlaps can be
 * judged; without a cluster only the rules that need none apply, and the
 * response says so in a warning.  The decision itself is
 * tlr_pdbc_admit(), pure and unit-tested.
 *
 * Lookups are bounded so that a flood of reviews cannot become a flood
 * on the API server: what a namespace holds is cached for CACHE_TTL_MS
 * (a failed load too), at most CACHE_MAX namespaces; one load lists at
 * most LOAD_MAX_OBJECTS objects and gives up after LOAD_BUDGET_MS (the
 * webhook's timeoutSeconds is 5).  Requests run on nng's threads; the
 * cache and the decision run under one mutex, so at most one load is in
 * flight at a time.  The price: a PDB created less than CACHE_TTL_MS
 * before is not yet seen by the overlap rule.
 *
 * Failure policy belongs to the ValidatingWebhookConfiguration
 * (deploy/webhook/); a malformed review gets HTTP 400.  A review whose
 * namespace or name the API server itself would refuse (not a DNS-1123
 * label / subdomain) is answered "not allowed, 400 Invalid" and never
 * turned into an API call.
 *
 * TLS: the engine's policy, the same as the service bus's: TLS 1.2 or
 * 1.3, and TLS 1.2 only with ECDHE and AEAD suites (AES-GCM,
 * ChaCha20-Poly1305); no client certificate is asked for (the API server
 * presents none; deploy/webhook's NetworkPolicy admits only the control
 * plane).  The certificate and key are watched
 * (stat every RELOAD_SECS): when either file changes -- cert-manager or a
 * Secret volume rotates them -- both are read, checked with OpenSSL (a
 * certificate, a key, and the key belongs to the certificate), and a new
 * nng TLS configuration is put on the listener; handshakes after that use
 * the new certificate, connections already open keep the old one.  A
 * broken or half-written pair is logged and the old one kept; the next
 * change of either file is tried again.  With failurePolicy Ignore an
 * expired certificate would silently turn the checks off, so this matters.
 */
#include "pdbserve.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <nng/supplemental/tls/tls.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_log.h"
#include "tlr_tls.h"
#include "tlr_time.h"

#define REVIEW_MAX (4u << 20)
#define RELOAD_SECS 2
#define CACHE_TTL_MS 5000
#define CACHE_MAX 64
#define LOAD_MAX_OBJECTS 20000
#define LOAD_BUDGET_MS 3000

/* One namespace as last loaded: c NULL when the load failed (err). */
typedef struct ns_entry {
    char ns[64];            /* a DNS-1123 label: checked before it gets here */
    int64_t loaded_ms;      /* monotonic */
    tlr_pdbc *c;            /* owned */
    char err[512];
} ns_entry;

typedef struct server {
    tlr_kube *kc;           /* NULL: no cluster, static rules only */
    tlr_logger *log;
    pthread_mutex_t mu;     /* guards cache and every use of an entry's c */
    ns_entry cache[CACHE_MAX];
} server;

/* The entry for ns, loaded if missing or older than CACHE_TTL_MS (the
 * oldest entry makes room).  Called with s->mu held; the entry is
 * borrowed until it is released. */
static const ns_entry *cache_get(server *s, const char *ns)
{
    int64_t now = tlr_mono_ms();
    ns_entry *e = NULL, *oldest = &s->cache[0];
    for (size_t i = 0; i < CACHE_MAX && !e; i++) {
        if (!strcmp(s->cache[i].ns, ns))
            e = &s->cache[i];
        else if (s->cache[i].loaded_ms < oldest->loaded_ms)
            oldest = &s->cache[i];
    }
    if (e && now - e->loaded_ms < CACHE_TTL_MS)
        return e;
    if (!e)
        e = oldest;
    tlr_pdbc_free(e->c);
    *e = (ns_entry){ .loaded_ms = now };
    snprintf(e->ns, sizeof(e->ns), "%s", ns);
    tlr_pdbc_create(TLR_PDBC_LIVE, &e->c);
    if (pdbc_load_bounded(s->kc, ns, LOAD_MAX_OBJECTS, LOAD_BUDGET_MS, e->c, e->err,
                          sizeof(e->err)) != TLR_OK) {
        TLR_WARN(s->log, "cannot read the namespace; checking without it",
                 TLR_S("namespace", ns), TLR_S("cause", e->err));
        tlr_pdbc_free(e->c);
        e->c = NULL;
    }
    e->loaded_ms = tlr_mono_ms();
    return e;
}

static int read_pem(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return TLR_E_IO;
    tlr_buf b;
    tlr_buf_init(&b, 1u << 20);
    char chunk[4096];
    size_t n;
    int rc = TLR_OK;
    while (rc == TLR_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = tlr_buf_add(&b, chunk, n);
    fclose(f);
    if (rc == TLR_OK && b.len == 0)
        rc = TLR_E_PARSE;
    if (rc != TLR_OK) {
        tlr_buf_free(&b);
        return rc;
    }
    *out = tlr_buf_take(&b);
    return TLR_OK;
}

static void respond(nng_aio *aio, uint16_t status, const char *type, const char *body)
{
    nng_http_res *res = NULL;
    int rv;
    if ((rv = nng_http_res_alloc(&res)) == 0 && (rv = nng_http_res_set_status(res, status)) == 0 &&
        (rv = nng_http_res_set_header(res, "Content-Type", type)) == 0 &&
        (rv = nng_http_res_copy_data(res, body, strlen(body))) == 0) {
        nng_aio_set_output(aio, 0, res);
        res = NULL;
    }
    if (res)
        nng_http_res_free(res);
    nng_aio_finish(aio, rv);
}

static void on_healthz(nng_aio *aio)
{
    respond(aio, 200, "text/plain; charset=utf-8", "ok\n");
}

static void on_validate(nng_aio *aio)
{
    nng_http_req *req = nng_aio_get_input(aio, 0);
    nng_http_handler *hd = nng_aio_get_input(aio, 1);
    server *s = nng_http_handler_get_data(hd);
    void *body = NULL;
    size_t len = 0;
    json_object *review = NULL;
    const tlr_pdbc *cluster = NULL;   /* borrowed from the cache, under s->mu */
    char err[512] = "", *answer = NULL;

    nng_http_req_get_data(req, &body, &len);
    if (tlr_json_parse(body, len, REVIEW_MAX, &review, err, sizeof(err)) != TLR_OK) {
        TLR_WARN(s->log, "admission review is not JSON", TLR_S("cause", err));
        respond(aio, 400, "text/plain; charset=utf-8", "request body is not JSON\n");
        return;
    }
    const char *ns = tlr_pdbc_review_namespace(review);
    const char *note = NULL;
    char why[300];
    bool names_ok = tlr_pdbc_review_names(review, why, sizeof(why));
    if (!names_ok)
        TLR_WARN(s->log, "admission review with a name the API server would refuse; no lookup",
                 TLR_S("uid", tlr_json_str(review, "request.uid")), TLR_S("cause", why));
    pthread_mutex_lock(&s->mu);
    if (s->kc && ns && names_ok) {
        const ns_entry *e = cache_get(s, ns);
        cluster = e->c;
        if (!cluster)
            note = "tailor pdb-check could not read the namespace: only maxUnavailable 0 and "
                   "minAvailable 100% were checked";
    }
    int rc = tlr_pdbc_admit(review, cluster, &answer, err, sizeof(err));
    cluster = NULL;   /* the cache's */
    pthread_mutex_unlock(&s->mu);
    if (rc != TLR_OK) {
        TLR_WARN(s->log, "bad admission review", TLR_S("cause", err));
        char msg[600];
        snprintf(msg, sizeof(msg), "%s\n", err);
        respond(aio, 400, "text/plain; charset=utf-8", msg);
    } else {
        json_object *a = NULL;
        bool allowed = true;
        if (tlr_json_parse(answer, strlen(answer), REVIEW_MAX, &a, NULL, 0) == TLR_OK) {
            tlr_json_bool(a, "response.allowed", &allowed);
            if (note) {
                json_object *resp = tlr_json_obj(a, "response"), *w = tlr_json_arr(resp, "warnings");
                if (!w) {
                    w = json_object_new_array();
                    json_object_object_add(resp, "warnings", w);
                }
                json_object_array_add(w, json_object_new_string(note));
                free(answer);
                answer = tlr_strdup(tlr_json_to_string(a, JSON_C_TO_STRING_PLAIN));
            }
        }
        TLR_INFO(s->log, "admission review", TLR_S("uid", tlr_json_str(review, "request.uid")),
                 TLR_S("operation", tlr_json_str(review, "request.operation")),
                 TLR_S("namespace", ns ? ns : ""),
                 TLR_S("name", tlr_json_str(review, "request.object.metadata.name")),
                 TLR_B("allowed", allowed),
                 TLR_S("reason", tlr_json_str(a, "response.status.message")));
        json_object_put(a);
        respond(aio, 200, "application/json", answer);
    }
    free(answer);
    json_object_put(review);
}

/* What identifies one version of a file: a rename over it (a Secret
 * volume's ..data swap) changes the inode, an edit the mtime or size. */
typedef struct file_sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} file_sig;

static file_sig sig_of(const char *path)
{
    struct stat st;
    file_sig f = { 0 };
    if (stat(path, &st) == 0)
        f = (file_sig){ st.st_dev, st.st_ino, st.st_size, st.st_mtim };
    return f;
}

static bool sig_same(const file_sig *a, const file_sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void free_key(char *key)
{
    if (key) {
        OPENSSL_cleanse(key, strlen(key));   /* the private key does not outlive its use */
        free(key);
    }
}

/* Is cert a PEM certificate and key a PEM private key that belongs to it? */
static bool pair_ok(const char *cert, const char *key, const char **why)
{
    BIO *bc = BIO_new_mem_buf(cert, -1), *bk = BIO_new_mem_buf(key, -1);
    X509 *x = bc ? PEM_read_bio_X509(bc, NULL, NULL, NULL) : NULL;
    EVP_PKEY *k = bk ? PEM_read_bio_PrivateKey(bk, NULL, NULL, NULL) : NULL;
    bool ok = false;
    if (!x)
        *why = "the certificate file holds no PEM certificate";
    else if (!k)
        *why = "the key file holds no PEM private key";
    else if (X509_check_private_key(x, k) != 1)
        *why = "the key does not belong to the certificate";
    else
        ok = true;
    EVP_PKEY_free(k);
    X509_free(x);
    BIO_free(bk);
    BIO_free(bc);
    return ok;
}

/* A new server TLS configuration from the files o names: TLS 1.2 at
 * least.  On TLR_OK *out is new and owned (nng_tls_config_free). */
static int tls_load(const pdbserve_opts *o, nng_tls_config **out, const char **why)
{
    char *cert = NULL, *key = NULL;
    nng_tls_config *tls = NULL;
    int rc = TLR_E_INVAL, rv;
    if (read_pem(o->cert, &cert) != TLR_OK || read_pem(o->key, &key) != TLR_OK) {
        *why = "cannot read the certificate or key file";
        rc = TLR_E_IO;
        goto out;
    }
    if (!pair_ok(cert, key, why))
        goto out;
    if (tlr_tls_engine_use() != TLR_OK) {
        *why = "cannot register the OpenSSL TLS engine with nng";
        goto out;
    }
    if ((rv = nng_tls_config_alloc(&tls, NNG_TLS_MODE_SERVER)) != 0 ||
        (rv = nng_tls_config_version(tls, NNG_TLS_1_2, NNG_TLS_1_3)) != 0 ||
        (rv = nng_tls_config_own_cert(tls, cert, key, NULL)) != 0) {
        *why = nng_strerror(rv);
        goto out;
    }
    *out = tls;
    tls = NULL;
    rc = TLR_OK;
out:
    if (tls)
        nng_tls_config_free(tls);
    free(cert);
    free_key(key);
    return rc;
}

/* The files changed since *cur: put their new pair on srv, or keep the
 * old one (logged). */
static void tls_reload(server *s, const pdbserve_opts *o, nng_http_server *srv, file_sig cur[2])
{
    file_sig now[2] = { sig_of(o->cert), sig_of(o->key) };
    if (sig_same(&now[0], &cur[0]) && sig_same(&now[1], &cur[1]))
        return;
    cur[0] = now[0];
    cur[1] = now[1];
    nng_tls_config *tls = NULL;
    const char *why = "";
    int rv;
    if (tls_load(o, &tls, &why) != TLR_OK) {
        TLR_ERROR(s->log, "the TLS certificate or key changed but cannot be used; serving the "
                  "old one", TLR_S("cert", o->cert), TLR_S("key", o->key), TLR_S("cause", why));
        return;
    }
    /* The listener holds its own reference; ours goes either way. */
    if ((rv = nng_http_server_set_tls(srv, tls)) != 0)
        TLR_ERROR(s->log, "cannot put the new TLS certificate on the listener; serving the old one",
                  TLR_S("cause", nng_strerror(rv)));
    else
        TLR_INFO(s->log, "TLS certificate reloaded", TLR_S("cert", o->cert));
    nng_tls_config_free(tls);
}

int pdbserve_run(const pdbserve_opts *o)
{
    server s = { 0 };
    char url[300], err[512] = "";
    const char *why = "";
    nng_url *u = NULL;
    nng_http_server *srv = NULL;
    nng_tls_config *tls = NULL;
    nng_http_handler *hv = NULL, *hh = NULL;
    int exit_code = 1, rv;
    sigset_t sigs;
    file_sig files[2] = { sig_of(o->cert), sig_of(o->key) };

    pthread_mutex_init(&s.mu, NULL);
    tlr_logger_create(&(tlr_log_opts){ .service = "tailorctl-pdb-webhook", .level = TLR_LOG_INFO,
                                       .fd = 2 }, &s.log);
    if (tls_load(o, &tls, &why) != TLR_OK) {
        TLR_ERROR(s.log, "cannot use the TLS certificate or key", TLR_S("cert", o->cert),
                  TLR_S("key", o->key), TLR_S("cause", why));
        exit_code = 2;
        goto out;
    }
    if (pdbc_connect(o->kubeconfig, o->context, o->in_cluster, LOAD_BUDGET_MS, &s.kc, err,
                     sizeof(err)) != TLR_OK) {
        TLR_WARN(s.log, "no cluster: only the rules that need none are applied",
                 TLR_S("cause", err));
        s.kc = NULL;
    }

    /* Signals go to sigwait below, not to nng's threads. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    snprintf(url, sizeof(url), "https://%s", o->listen);
    if ((rv = nng_url_parse(&u, url)) != 0 || (rv = nng_http_server_hold(&srv, u)) != 0 ||
        (rv = nng_http_server_set_tls(srv, tls)) != 0 ||
        (rv = nng_http_handler_alloc(&hv, "/validate", on_validate)) != 0 ||
        (rv = nng_http_handler_set_method(hv, "POST")) != 0 ||
        (rv = nng_http_handler_collect_body(hv, true, REVIEW_MAX)) != 0 ||
        (rv = nng_http_handler_set_data(hv, &s, NULL)) != 0 ||
        (rv = nng_http_server_add_handler(srv, hv)) != 0) {
        TLR_ERROR(s.log, "cannot set up the webhook server", TLR_S("listen", o->listen),
                  TLR_S("cause", nng_strerror(rv)));
        goto out;
    }
    hv = NULL;   /* the server owns it now */
    if ((rv = nng_http_handler_alloc(&hh, "/healthz", on_healthz)) != 0 ||
        (rv = nng_http_server_add_handler(srv, hh)) != 0) {
        TLR_ERROR(s.log, "cannot add /healthz", TLR_S("cause", nng_strerror(rv)));
        goto out;
    }
    hh = NULL;
    if ((rv = nng_http_server_start(srv)) != 0) {
        TLR_ERROR(s.log, "cannot listen", TLR_S("listen", o->listen),
                  TLR_S("cause", nng_strerror(rv)));
        goto out;
    }
    TLR_INFO(s.log, "serving PDB admission reviews", TLR_S("url", url),
             TLR_B("cluster", s.kc != NULL));
    int sig;
    const struct timespec tick = { RELOAD_SECS, 0 };
    while ((sig = sigtimedwait(&sigs, NULL, &tick)) < 0)
        tls_reload(&s, o, srv, files);
    TLR_INFO(s.log, "stopping", TLR_I("signal", sig));
    nng_http_server_stop(srv);
    exit_code = 0;
out:
    if (hv)
        nng_http_handler_free(hv);
    if (hh)
        nng_http_handler_free(hh);
    if (srv)
        nng_http_server_release(srv);
    if (tls)
        nng_tls_config_free(tls);
    nng_url_free(u);
    tlr_kube_free(s.kc);
    for (size_t i = 0; i < CACHE_MAX; i++)
        tlr_pdbc_free(s.cache[i].c);
    pthread_mutex_destroy(&s.mu);
    tlr_logger_free(s.log);
    nng_fini();
    return exit_code;
}
