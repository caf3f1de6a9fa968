/* tls.c - certificates from files, reloaded; endpoints; peer identity.
 *
 * Reload without restart.  nng marks a TLS configuration read-only once a
 * connection used it, so a new certificate needs a new configuration.  In
 * nng 1.5.2 a listener's or dialer's NNG_OPT_TLS_CONFIG may be set again
 * while it runs (tls_listener_set_config / tls_dialer_set_config swap the
 * pointer under a lock and drop their hold on the old one; a connection
 * holds the configuration it was made with).  So a reload builds a new
 * pair of configurations and sets them on every endpoint made through this
 * tlr_tls: established connections are untouched, the next accept or dial
 * uses the new certificate.  (Closing and re-creating the listener would
 * also work but nng_listener_close closes every pipe it accepted.)
 * Endpoints are remembered by their nng ids; one whose socket was closed
 * answers NNG_ENOENT and is forgotten.
 *
 * Identity.  See tls_engine.c: nng 1.5.2 has no NNG_OPT_TLS_PEER_CN, so the
 * engine hands the CN over through a thread-local when nng asks it whether
 * the pipe is verified.  With nng >= 1.6 the option is used instead.
 */
#include "tlr_tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <nng/supplemental/tls/tls.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

#define FILE_MAX (1 << 20)    /* a PEM bundle bigger than this is not ours */

typedef struct file_sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} file_sig;

typedef struct endpoint {
    bool listener;
    uint32_t id;
} endpoint;

struct tlr_tls {
    pthread_mutex_t mu;
    char *files[3];              /* ca, cert, key */
    file_sig sig[3];             /* of the files last loaded */
    file_sig bad[3];             /* of files last refused: logged once */
    bool have_bad;
    nng_tls_config *server;      /* our hold; endpoints hold their own */
    nng_tls_config *client;
    char identity[TLR_TLS_ID_MAX];
    endpoint *eps;
    size_t neps, cap;
    tlr_logger *log;
};

static const char *const file_what[3] = { "CA", "certificate", "key" };

static void set_err(char *err, size_t len, const char *fmt, ...)
{
    if (err == NULL || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

static int file_stat(const char *path, file_sig *s)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    *s = (file_sig){ st.st_dev, st.st_ino, st.st_size, st.st_mtim };
    return 0;
}

static bool sig_eq(const file_sig *a, const file_sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Read path into a new NUL-terminated string (owned by the caller). */
static char *file_read(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = tlr_malloc(FILE_MAX + 1);
    size_t n = fread(buf, 1, FILE_MAX + 1, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || n > FILE_MAX) {
        set_err(err, errlen, "%s: %s", path, bad ? "read error" : "larger than 1 MiB");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* What a certificate says about itself, for the log. */
typedef struct cert_info {
    char subject[256];
    char cn[TLR_TLS_ID_MAX];
    char not_after[64];
} cert_info;

static int cert_describe(const char *pem, cert_info *ci)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    if (x == NULL) {
        ERR_clear_error();
        return TLR_E_INVAL;
    }
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_oneline(name, ci->subject, sizeof(ci->subject));
    if (X509_NAME_get_text_by_NID(name, NID_commonName, ci->cn, sizeof(ci->cn)) < 0)
        ci->cn[0] = '\0';
    BIO *mb = BIO_new(BIO_s_mem());
    ASN1_TIME_print(mb, X509_get0_notAfter(x));
    int n = BIO_read(mb, ci->not_after, sizeof(ci->not_after) - 1);
    ci->not_after[n > 0 ? n : 0] = '\0';
    BIO_free(mb);
    X509_free(x);
    ERR_clear_error();
    return TLR_OK;
}

static int config_make(nng_tls_mode mode, const char *ca, const char *cert, const char *key,
                       nng_tls_config **out, char *err, size_t errlen)
{
    nng_tls_config *c = NULL;
    int rv;
    if (tlr_tls_engine_use() != TLR_OK || (rv = nng_tls_config_alloc(&c, mode)) != 0) {
        set_err(err, errlen, "TLS engine unavailable");
        return TLR_E_IO;
    }
    const char *what = "the TLS versions";
    if ((rv = nng_tls_config_version(c, NNG_TLS_1_2, NNG_TLS_1_3)) != 0)
        goto fail;
    what = "the CA bundle (no PEM certificate in it?)";
    if ((rv = nng_tls_config_ca_chain(c, ca, NULL)) != 0)
        goto fail;
    what = "the certificate and key (not PEM, or the key does not match?)";
    if ((rv = nng_tls_config_own_cert(c, cert, key, NULL)) != 0)
        goto fail;
    what = "the client-certificate requirement";
    if ((rv = nng_tls_config_auth_mode(c, NNG_TLS_AUTH_MODE_REQUIRED)) != 0)
        goto fail;
    *out = c;
    return TLR_OK;
fail:
    set_err(err, errlen, "cannot use %s: %s", what, nng_strerror(rv));
    nng_tls_config_free(c);
    return TLR_E_INVAL;
}

/* Load the files; on TLR_OK the new configurations replace t's (caller
 * holds t->mu or owns t alone) and sigs are recorded. */
static int load(tlr_tls *t, const file_sig sigs[3], char *err, size_t errlen)
{
    char *pem[3] = { NULL, NULL, NULL };
    nng_tls_config *srv = NULL;
    nng_tls_config *cli = NULL;
    cert_info ci;
    cert_info ca;
    int rc = TLR_E_INVAL;
    for (int i = 0; i < 3; i++)
        if ((pem[i] = file_read(t->files[i], err, errlen)) == NULL)
            goto out;
    if (cert_describe(pem[1], &ci) != TLR_OK) {
        set_err(err, errlen, "%s: no PEM certificate", t->files[1]);
        goto out;
    }
    if (cert_describe(pem[0], &ca) != TLR_OK) {
        set_err(err, errlen, "%s: no PEM certificate", t->files[0]);
        goto out;
    }
    if ((rc = config_make(NNG_TLS_MODE_SERVER, pem[0], pem[1], pem[2], &srv, err, errlen)) ||
        (rc = config_make(NNG_TLS_MODE_CLIENT, pem[0], pem[1], pem[2], &cli, err, errlen)))
        goto out;
    if (t->server != NULL)
        nng_tls_config_free(t->server);
    if (t->client != NULL)
        nng_tls_config_free(t->client);
    t->server = srv;
    t->client = cli;
    srv = cli = NULL;
    memcpy(t->sig, sigs, sizeof(t->sig));
    t->have_bad = false;
    snprintf(t->identity, sizeof(t->identity), "%s", ci.cn);
    TLR_INFO(t->log, "TLS certificate loaded", TLR_S("subject", ci.subject),
             TLR_S("not_after", ci.not_after), TLR_S("identity", ci.cn),
             TLR_S("ca_subject", ca.subject), TLR_S("cert_file", t->files[1]));
    rc = TLR_OK;
out:
    if (srv != NULL)
        nng_tls_config_free(srv);
    if (cli != NULL)
        nng_tls_config_free(cli);
    for (int i = 0; i < 3; i++) {
        if (pem[i] != NULL)
            OPENSSL_cleanse(pem[i], strlen(pem[i]));   /* the key was one */
        free(pem[i]);
    }
    return rc;
}

static int stat_all(tlr_tls *t, file_sig sigs[3], char *err, size_t errlen)
{
    for (int i = 0; i < 3; i++) {
        if (file_stat(t->files[i], &sigs[i]) != 0) {
            set_err(err, errlen, "%s file %s: %s", file_what[i], t->files[i], strerror(errno));
            return TLR_E_INVAL;
        }
    }
    return TLR_OK;
}

int tlr_tls_create(const tlr_tls_opts *o, tlr_tls **out, char *err, size_t errlen)
{
    if (o == NULL || out == NULL || o->ca_file == NULL || o->cert_file == NULL ||
        o->key_file == NULL || !o->ca_file[0] || !o->cert_file[0] || !o->key_file[0]) {
        set_err(err, errlen, "TLS needs a CA, a certificate and a key file");
        return TLR_E_INVAL;
    }
    tlr_tls *t = tlr_calloc(1, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
    t->log = o->log;
    t->files[0] = tlr_strdup(o->ca_file);
    t->files[1] = tlr_strdup(o->cert_file);
    t->files[2] = tlr_strdup(o->key_file);
    char why[512] = "";
    file_sig sigs[3];
    int rc = stat_all(t, sigs, why, sizeof(why));
    if (rc == TLR_OK)
        rc = load(t, sigs, why, sizeof(why));
    if (rc != TLR_OK) {
        TLR_ERROR(t->log, "TLS certificate not loaded", TLR_S("reason", why));
        set_err(err, errlen, "%s", why);
        tlr_tls_free(t);
        return rc;
    }
    *out = t;
    return TLR_OK;
}

void tlr_tls_free(tlr_tls *t)
{
    if (t == NULL)
        return;
    if (t->server != NULL)
        nng_tls_config_free(t->server);
    if (t->client != NULL)
        nng_tls_config_free(t->client);
    for (int i = 0; i < 3; i++)
        free(t->files[i]);
    free(t->eps);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

const char *tlr_tls_identity(const tlr_tls *t)
{
    return t ? t->identity : "";
}

/* Put the current configuration on every endpoint; forget closed ones. */
static void apply_all(tlr_tls *t)
{
    size_t keep = 0;
    for (size_t i = 0; i < t->neps; i++) {
        endpoint e = t->eps[i];
        int rv;
        if (e.listener)
            rv = nng_listener_set_ptr((nng_listener){ .id = e.id }, NNG_OPT_TLS_CONFIG, t->server);
        else
            rv = nng_dialer_set_ptr((nng_dialer){ .id = e.id }, NNG_OPT_TLS_CONFIG, t->client);
        if (rv == NNG_ENOENT || rv == NNG_ECLOSED)
            continue;
        if (rv != 0)
            TLR_WARN(t->log, "endpoint keeps its old TLS certificate",
                     TLR_S("nng_error", nng_strerror(rv)));
        t->eps[keep++] = e;
    }
    t->neps = keep;
}

int tlr_tls_reload(tlr_tls *t)
{
    file_sig sigs[3];
    char why[512] = "";
    pthread_mutex_lock(&t->mu);
    int rc = stat_all(t, sigs, why, sizeof(why));
    if (rc == TLR_OK) {
        bool same = true;
        for (int i = 0; i < 3; i++)
            same = same && sig_eq(&sigs[i], &t->sig[i]);
        if (same)
            goto out;
        bool known_bad = t->have_bad;
        for (int i = 0; i < 3 && known_bad; i++)
            known_bad = sig_eq(&sigs[i], &t->bad[i]);
        if (known_bad) {
            rc = TLR_E_INVAL;
            goto out;
        }
        rc = load(t, sigs, why, sizeof(why));
        if (rc == TLR_OK) {
            apply_all(t);
            goto out;
        }
        memcpy(t->bad, sigs, sizeof(t->bad));
        t->have_bad = true;
    } else if (t->have_bad) {
        goto out;   /* a missing file was logged already */
    } else {
        t->have_bad = true;
        memset(t->bad, 0, sizeof(t->bad));
    }
    TLR_ERROR(t->log, "new TLS certificate files refused; keeping the old certificate",
              TLR_S("reason", why), TLR_S("cert_file", t->files[1]));
out:
    pthread_mutex_unlock(&t->mu);
    return rc;
}

static void remember(tlr_tls *t, bool listener, uint32_t id)
{
    if (t->neps == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        t->eps = tlr_realloc(t->eps, t->cap * sizeof(*t->eps));
    }
    t->eps[t->neps++] = (endpoint){ listener, id };
}

int tlr_tls_listen(tlr_tls *t, nng_socket s, const char *url, nng_listener *out)
{
    nng_listener l;
    tlr_tls_engine_use();
    int rv = nng_listener_create(&l, s, url);
    if (rv != 0)
        return rv;
    pthread_mutex_lock(&t->mu);
    rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, t->server);
    if (rv == 0)
        remember(t, true, (uint32_t)nng_listener_id(l));
    pthread_mutex_unlock(&t->mu);
    if (rv == 0)
        rv = nng_listener_start(l, 0);
    if (rv != 0) {
        nng_listener_close(l);
        return rv;
    }
    if (out != NULL)
        *out = l;
    return 0;
}

int tlr_tls_dial(tlr_tls *t, nng_socket s, const char *url)
{
    nng_dialer d;
    tlr_tls_engine_use();
    int rv = nng_dialer_create(&d, s, url);
    if (rv != 0)
        return rv;
    pthread_mutex_lock(&t->mu);
    rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, t->client);
    if (rv == 0)
        remember(t, false, (uint32_t)nng_dialer_id(d));
    pthread_mutex_unlock(&t->mu);
    if (rv == 0)
        rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK);
    if (rv != 0) {
        nng_dialer_close(d);
        return rv;
    }
    return 0;
}

bool tlr_tls_url(const char *url)
{
    return url != NULL && strncmp(url, "tls+", 4) == 0;
}

bool tlr_tls_url_plaintext(const char *url)
{
    if (url == NULL)
        return false;
    static const char *const schemes[] = { "tcp://", "tcp4://", "tcp6://", "ws://", "ws4://",
                                           "ws6://" };
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
        if (strncmp(url, schemes[i], strlen(schemes[i])) == 0)
            return true;
    return false;
}

int tlr_tls_pipe_identity(nng_pipe p, char id[TLR_TLS_ID_MAX])
{
    id[0] = '\0';
#ifdef NNG_OPT_TLS_PEER_CN
    char *cn = NULL;
    bool ok = false;
    if (nng_pipe_get_bool(p, NNG_OPT_TLS_VERIFIED, &ok) != 0)
        return TLR_E_UNAVAILABLE;
    if (!ok)
        return TLR_E_AUTH;
    if (nng_pipe_get_string(p, NNG_OPT_TLS_PEER_CN, &cn) != 0 || cn == NULL)
        return TLR_E_AUTH;
    snprintf(id, TLR_TLS_ID_MAX, "%s", cn);
    nng_strfree(cn);
    return TLR_OK;
#else
    bool verified = false;
    bool ok = false;
    char tmp[TLR_TLS_ID_MAX];
    tlr_tls_engine_take_peer(tmp, &verified);   /* drop anything stale */
    if (nng_pipe_get_bool(p, NNG_OPT_TLS_VERIFIED, &ok) != 0)
        return TLR_E_UNAVAILABLE;
    /* Only our engine reports an identity; a pipe made by another engine
     * (none in tailor) stays unidentified and is refused. */
    if (tlr_tls_engine_take_peer(tmp, &verified) != TLR_OK || !ok || !verified ||
        tmp[0] == '\0')
        return TLR_E_AUTH;
    memcpy(id, tmp, TLR_TLS_ID_MAX);
    return TLR_OK;
#endif
}

bool tlr_tls_allowed(const char *const *allow, const char *id)
{
    if (allow == NULL)
        return true;
    for (size_t i = 0; allow[i] != NULL; i++)
        if (strcmp(allow[i], id) == 0)
            return true;
    return false;
}

void tlr_tls_allow_str(const char *const *allow, char *buf, size_t len)
{
    if (allow == NULL) {
        snprintf(buf, len, "any verified peer");
        return;
    }
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; allow[i] != NULL && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", allow[i]);
    if (allow[0] == NULL)
        snprintf(buf, len, "nobody");
}
