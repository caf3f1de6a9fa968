/* client.c - blocking Kubernetes API verbs on libcurl.
 *
 * Each call builds its own curl easy handle, so any thread may call any
 * verb at any time; the only shared, mutable state is the credential
 * cache, guarded by a mutex:
 *
 *   - a static token from the kubeconfig never changes;
 *   - a token file (in-cluster service account, or kubeconfig tokenFile)
 *     is re-read when its inode, size or mtime changes, or a minute after
 *     the last read - kubelet rotates projected tokens by swapping a
 *     symlink, which a stat of the path notices;
 *   - an exec plugin's token is kept until one minute before its
 *     expirationTimestamp (forever when it has none), then the plugin runs
 *     again.  A 401 drops the cached token and the request is retried once
 *     with a fresh one, as client-go does.
 *
 * Responses are read into a buffer with a ceiling (opts.max_response); a
 * body past it aborts the transfer with TLR_E_TOOBIG.  Watches never
 * buffer: their bytes go straight into the incremental decoder (wdec.c),
 * one event at a time.  Tokens go only into the Authorization header,
 * never into a log line or an error message.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "kube_int.h"
#include "tlr_kube.h"
#include "tlr_log.h"
#include "tlr_time.h"

#define KUBE_TOKEN_SLACK_MS  60000      /* refresh this long before expiry */
#define KUBE_FILE_RECHECK_MS 60000
#define KUBE_EXEC_MAX_OUT    (1u << 20)
#define KUBE_EXEC_TIMEOUT_MS 60000
/* A 429 or 503 with Retry-After (API Priority and Fairness says "1") is
 * retried after that long, like client-go, but at most this often and
 * never waiting longer than the cap: the caller may be a controller that
 * should get on with its pass. */
#define KUBE_RETRY_AFTER_MAX     5
#define KUBE_RETRY_AFTER_CAP_MS  10000

extern char **environ;

struct tlr_kube {
    tlr_kube_config *cfg;
    tlr_logger *log;
    size_t max_response;
    long timeout_ms, connect_timeout_ms;
    char *user_agent;
    const tlr_fence *fence;      /* NULL: unfenced */
    pthread_mutex_t mu;          /* guards the token cache below */
    char *token;                 /* secret; current bearer token or NULL */
    int64_t token_expiry_ms;     /* wall; 0 = no expiry */
    int64_t token_read_ms;       /* mono; when the token file was read */
    struct stat token_st;        /* of the token file when read */
};

/* ------------------------------------------------------------------ */

int tlr_kube_http_err(long http)
{
    if (http >= 200 && http < 300)
        return TLR_OK;
    switch (http) {
    case 404: return TLR_E_NOTFOUND;
    case 409: return TLR_E_CONFLICT;
    case 410: return TLR_E_GONE;
    case 401:
    case 403: return TLR_E_AUTH;
    case 429: return TLR_E_THROTTLED;
    case 408:
    case 504: return TLR_E_TIMEOUT;
    case 413: return TLR_E_TOOBIG;
    }
    if (http >= 500)
        return TLR_E_UNAVAILABLE;
    if (http == 0)
        return TLR_E_IO;
    return TLR_E_INVAL;
}

/* A path segment from a name: none of "/?#% ", no control bytes, and not
 * "." or ".." (a dot segment would climb the path: "/namespaces/../pods"
 * is every namespace's pods once a URL library collapses it). */
static bool name_ok(const char *s)
{
    if (s == NULL)
        return true;
    if (!strcmp(s, ".") || !strcmp(s, ".."))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x21 || *p == 0x7f || strchr("/?#%\\", *p))
            return false;
    return true;
}

int tlr_kube_path(const tlr_kube_res *res, const char *ns, const char *name,
                  const char *sub, char *buf, size_t len)
{
    if (res == NULL || buf == NULL || !name_ok(ns) || !name_ok(name) ||
        !name_ok(sub) || (name != NULL && name[0] == '\0'))
        return TLR_E_INVAL;
    int n;
    const char *root = res->group[0] ? "/apis/" : "/api";
    bool in_ns = res->namespaced && ns != NULL && ns[0] != '\0';
    n = snprintf(buf, len, "%s%s%s%s%s%s/%s%s%s%s%s", root, res->group, "/",
                 res->version, in_ns ? "/namespaces/" : "", in_ns ? ns : "",
                 res->plural, name ? "/" : "", name ? name : "",
                 sub ? "/" : "", sub ? sub : "");
    if (n < 0 || (size_t)n >= len)
        return TLR_E_TOOBIG;
    return TLR_OK;
}

/* ------------------------------------------------------------------ */
/* Credentials                                                          */

static void set_token(tlr_kube *kc, char *tok, int64_t expiry_ms)
{
    if (kc->token != NULL) {
        OPENSSL_cleanse(kc->token, strlen(kc->token));
        free(kc->token);
    }
    kc->token = tok;
    kc->token_expiry_ms = expiry_ms;
    kc->token_read_ms = tlr_mono_ms();
}

static int read_token_file(tlr_kube *kc)
{
    struct stat st;
    const char *path = kc->cfg->token_file;
    if (stat(path, &st) != 0)
        return TLR_E_AUTH;
    bool same = kc->token != NULL && st.st_ino == kc->token_st.st_ino &&
                st.st_size == kc->token_st.st_size &&
                st.st_mtim.tv_sec == kc->token_st.st_mtim.tv_sec &&
                st.st_mtim.tv_nsec == kc->token_st.st_mtim.tv_nsec;
    if (same && tlr_mono_ms() - kc->token_read_ms < KUBE_FILE_RECHECK_MS)
        return TLR_OK;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return TLR_E_AUTH;
    tlr_buf b;
    tlr_buf_init(&b, 1u << 20);
    char chunk[4096];
    size_t n;
    int rc = TLR_OK;
    while (rc == TLR_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = tlr_buf_add(&b, chunk, n);
    fclose(f);
    while (b.len > 0 && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' ' ||
                         b.data[b.len - 1] == '\r'))
        b.data[--b.len] = '\0';
    if (rc != TLR_OK || b.len == 0) {
        tlr_buf_free(&b);
        return TLR_E_AUTH;
    }
    set_token(kc, tlr_buf_take(&b), 0);
    kc->token_st = st;
    return TLR_OK;
}

/* KUBERNETES_EXEC_INFO, the entry that tells the plugin it runs without a
 * terminal. */
static void kube_exec_info(const tlr_kube_exec *ex, char *info, size_t len)
{
    snprintf(info, len,
             "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
             "\"spec\":{\"interactive\":false}}",
             ex->api_version ? ex->api_version
                             : "client.authentication.k8s.io/v1beta1");
}

/* The plugin's environment: ours, the kubeconfig's env entries, then info.
 * Owned array (free()); its strings are borrowed from environ, ex and info. */
static char **kube_exec_envp(const tlr_kube_exec *ex, char *info)
{
    size_t nenv = 0;
    while (environ[nenv] != NULL)
        nenv++;
    char **envp = tlr_calloc(nenv + ex->nenv + 2, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        envp[k++] = environ[i];
    for (size_t i = 0; i < ex->nenv; i++)
        envp[k++] = ex->env[i];
    envp[k++] = info;
    return envp;
}

/* The plugin's argv: command, then args.  Owned array (free()); its
 * strings are borrowed from ex. */
static char **kube_exec_argv(const tlr_kube_exec *ex)
{
    char **argv = tlr_calloc(ex->nargs + 2, sizeof(char *));
    argv[0] = ex->command;
    for (size_t i = 0; i < ex->nargs; i++)
        argv[i + 1] = ex->args[i];
    return argv;
}

/* Fork and exec the plugin, its stdout into pipefd[1] and its stdin from
 * /dev/null.  Its pid, with pipefd[1] closed; -1 when fork fails, with
 * both ends closed. */
static pid_t kube_exec_spawn(char **argv, char **envp, const int pipefd[2])
{
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        sigset_t all;
        sigemptyset(&all);
        pthread_sigmask(SIG_SETMASK, &all, NULL);
        dup2(pipefd[1], 1);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        execvpe(argv[0], argv, envp);
        _exit(127);
    }
    close(pipefd[1]);
    return pid;
}

/* Read the plugin's stdout (fd, closed here) into out until it closes,
 * the deadline (mono ms) passes or out reaches its ceiling: true for the
 * last. */
static bool kube_exec_read(int fd, int64_t deadline, tlr_buf *out)
{
    bool toobig = false;
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int64_t left = deadline - tlr_mono_ms();
        if (left <= 0)
            break;
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        char chunk[4096];
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (tlr_buf_add(out, chunk, (size_t)n) != TLR_OK) {
            toobig = true;
            break;
        }
    }
    close(fd);
    return toobig;
}

/* Reap the plugin: TLR_OK when it exited 0 by the deadline (mono ms);
 * killed when it did not or wrote too much (toobig).  TLR_E_AUTH, logged,
 * when it failed. */
static int kube_exec_reap(tlr_kube *kc, pid_t pid, int64_t deadline, bool toobig)
{
    const tlr_kube_exec *ex = kc->cfg->exec;
    /* stdout closed: the plugin is exiting; give it until the deadline. */
    int status = 0;
    pid_t done = 0;
    while (!toobig && (done = waitpid(pid, &status, WNOHANG)) == 0 &&
           tlr_mono_ms() < deadline)
        usleep(2000);
    if (done != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        TLR_LOG(kc->log, TLR_LOG_ERROR, "kube exec plugin timed out or wrote too much",
                TLR_S("command", ex->command), TLR_B("toobig", toobig));
        return TLR_E_AUTH;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        TLR_LOG(kc->log, TLR_LOG_ERROR, "kube exec plugin failed",
                TLR_S("command", ex->command),
                TLR_I("status", WIFEXITED(status) ? WEXITSTATUS(status) : -1));
        return TLR_E_AUTH;
    }
    return TLR_OK;
}

/* Cache the token of the ExecCredential the plugin printed (out, secret;
 * borrowed).  TLR_E_AUTH, logged, when it has none. */
static int kube_exec_token(tlr_kube *kc, const tlr_buf *out)
{
    const tlr_kube_exec *ex = kc->cfg->exec;
    char *tok = NULL;
    int64_t exp = 0;
    if (tlr_kube_exec_credential_parse(tlr_buf_str(out), out->len, &tok, &exp) != TLR_OK) {
        TLR_LOG(kc->log, TLR_LOG_ERROR,
                "kube exec plugin printed no ExecCredential with status.token",
                TLR_S("command", ex->command));
        return TLR_E_AUTH;
    }
    set_token(kc, tok, exp);
    TLR_LOG(kc->log, TLR_LOG_DEBUG, "kube exec credential refreshed",
            TLR_S("command", ex->command), TLR_SECRET("token"), TLR_I("expiry_ms", exp));
    return TLR_OK;
}

/* Run the exec plugin and parse its ExecCredential. */
static int run_exec(tlr_kube *kc)
{
    const tlr_kube_exec *ex = kc->cfg->exec;
    int pipefd[2];
    int rc;
    tlr_buf out;
    tlr_buf_init(&out, KUBE_EXEC_MAX_OUT);
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return TLR_E_IO;
    char info[256];
    kube_exec_info(ex, info, sizeof(info));
    /* Build argv and envp before fork: the child only execs. */
    char **envp = kube_exec_envp(ex, info);
    char **argv = kube_exec_argv(ex);
    pid_t pid = kube_exec_spawn(argv, envp, pipefd);
    if (pid < 0) {
        rc = TLR_E_IO;
        goto out;
    }
    int64_t deadline = tlr_mono_ms() + KUBE_EXEC_TIMEOUT_MS;
    bool toobig = kube_exec_read(pipefd[0], deadline, &out);
    rc = kube_exec_reap(kc, pid, deadline, toobig);
    if (rc == TLR_OK)
        rc = kube_exec_token(kc, &out);
out:
    if (out.data != NULL)
        OPENSSL_cleanse(out.data, out.len);
    tlr_buf_free(&out);
    free(envp);
    free(argv);
    return rc;
}

/* The bearer token to send now (copied into *out, owned, secret), or NULL
 * when the config uses none.  force: drop the cache first (after a 401). */
static int current_token(tlr_kube *kc, bool force, char **out)
{
    int rc = TLR_OK;
    *out = NULL;
    pthread_mutex_lock(&kc->mu);
    if (kc->cfg->exec != NULL) {
        bool stale = kc->token == NULL || force ||
                     (kc->token_expiry_ms != 0 &&
                      tlr_wall_ms() + KUBE_TOKEN_SLACK_MS >= kc->token_expiry_ms);
        if (stale)
            rc = run_exec(kc);
    } else if (kc->cfg->token_file != NULL) {
        if (force)
            kc->token_read_ms = INT64_MIN / 2;
        rc = read_token_file(kc);
        /* A static token next to an unreadable file still works. */
        if (rc != TLR_OK && kc->cfg->token != NULL && kc->token == NULL) {
            set_token(kc, tlr_strdup(kc->cfg->token), 0);
            rc = TLR_OK;
        }
    } else if (kc->cfg->token != NULL && kc->token == NULL) {
        set_token(kc, tlr_strdup(kc->cfg->token), 0);
    }
    if (rc == TLR_OK && kc->token != NULL)
        *out = tlr_strdup(kc->token);
    pthread_mutex_unlock(&kc->mu);
    return rc;
}

static void free_secret(char *s)
{
    if (s != NULL) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

/* ------------------------------------------------------------------ */
/* Client lifetime                                                      */

int tlr_kube_create(tlr_kube_config *cfg, const tlr_kube_opts *o, tlr_kube **out)
{
    if (cfg == NULL || out == NULL) {
        tlr_kube_config_free(cfg);
        return TLR_E_INVAL;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    tlr_kube *kc = tlr_calloc(1, sizeof(*kc));
    kc->cfg = cfg;
    kc->log = o ? o->log : NULL;
    kc->max_response = o && o->max_response ? o->max_response : (64u << 20);
    kc->timeout_ms = o && o->timeout_ms ? o->timeout_ms : 30000;
    kc->connect_timeout_ms = o && o->connect_timeout_ms ? o->connect_timeout_ms : 10000;
    kc->user_agent = tlr_strdup(o && o->user_agent ? o->user_agent : "tailor/1");
    kc->fence = o ? o->fence : NULL;
    pthread_mutex_init(&kc->mu, NULL);
    if (cfg->insecure)
        TLR_LOG(kc->log, TLR_LOG_WARN,
                "kubeconfig sets insecure-skip-tls-verify: the API server's certificate is not "
                "verified", TLR_S("server", cfg->server));
    *out = kc;
    return TLR_OK;
}

int tlr_kube_connect(const char *kubeconfig, bool in_cluster,
                     const tlr_kube_opts *o, tlr_kube **out, char *err,
                     size_t errlen)
{
    tlr_kube_config *cfg = NULL;
    int rc = in_cluster ? tlr_kube_config_incluster(NULL, &cfg, err, errlen)
                        : tlr_kube_config_load(kubeconfig, NULL, &cfg, err, errlen);
    if (rc != TLR_OK)
        return rc;
    return tlr_kube_create(cfg, o, out);
}

void tlr_kube_free(tlr_kube *kc)
{
    if (kc == NULL)
        return;
    free_secret(kc->token);
    pthread_mutex_destroy(&kc->mu);
    tlr_kube_config_free(kc->cfg);
    free(kc->user_agent);
    free(kc);
}

const char *tlr_kube_namespace(const tlr_kube *kc)
{
    return kc->cfg->namespace_ ? kc->cfg->namespace_ : "default";
}

/* ------------------------------------------------------------------ */
/* One HTTP exchange                                                    */

typedef struct xfer {
    tlr_kube *kc;
    CURL *h;
    tlr_buf body;               /* non-watch body, or a watch's error body */
    bool toobig;
    /* watch streaming */
    tlr_kube_wdec *dec;
    tlr_kube_event_cb cb;
    void *cb_arg;
    int cb_rc;
    bool (*cancel)(void *);
    void *cancel_arg;
    bool canceled;
    bool silent;                /* a watch ended by the low-speed limit */
    int64_t retry_after_ms;     /* the answer's Retry-After; -1 = none */
} xfer;

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    static const char name[] = "retry-after:";
    xfer *x = arg;
    size_t len = size * n;
    char v[64];
    if (len > sizeof(name) - 1 && len - (sizeof(name) - 1) < sizeof(v) &&
        strncasecmp(p, name, sizeof(name) - 1) == 0) {
        size_t vl = len - (sizeof(name) - 1);
        memcpy(v, p + sizeof(name) - 1, vl);
        while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
            vl--;
        v[vl] = '\0';
        int64_t ms;
        if (tlr_retry_after_parse(v, tlr_wall_ms(), &ms) == TLR_OK)
            x->retry_after_ms = ms;
    }
    return len;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    xfer *x = arg;
    size_t len = size * n;
    long code = 0;
    if (x->dec != NULL) {
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
        if (code == 200) {
            int rc = tlr_kube_wdec_feed(x->dec, p, len, x->cb, x->cb_arg);
            if (rc != TLR_OK) {
                x->cb_rc = rc;
                return 0;
            }
            return len;
        }
    }
    if (tlr_buf_add(&x->body, p, len) != TLR_OK) {
        x->toobig = true;
        return 0;
    }
    return len;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
                       curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    xfer *x = arg;
    if (x->cancel != NULL && x->cancel(x->cancel_arg)) {
        x->canceled = true;
        return 1;
    }
    return 0;
}

static void status_from_body(const tlr_buf *b, tlr_kube_status *st,
                             const char **reason)
{
    json_object *o = NULL;
    *reason = NULL;
    if (b->len == 0 ||
        tlr_json_parse(b->data, b->len, b->max, &o, NULL, 0) != TLR_OK)
        return;
    const char *r = tlr_json_str(o, "reason");
    const char *m = tlr_json_str(o, "message");
    if (st != NULL) {
        snprintf(st->reason, sizeof(st->reason), "%s", r ? r : "");
        snprintf(st->message, sizeof(st->message), "%s", m ? m : "");
    }
    if (r != NULL && strcmp(r, "AlreadyExists") == 0)
        *reason = "AlreadyExists";
    json_object_put(o);
}

typedef struct req {
    const char *method, *path, *ctype, *body;
    long timeout_ms;           /* 0: none */
    long idle_s;               /* watches: no byte for this long ends it; 0: none */
} req;

/* The request's URL: the server, then r->path.  *out owned (free()). */
static int kube_url(const tlr_kube *kc, const req *r, char **out)
{
    tlr_buf url_b;
    tlr_buf_init(&url_b, 1u << 16);
    if (tlr_buf_printf(&url_b, "%s%s", kc->cfg->server, r->path) != TLR_OK) {
        tlr_buf_free(&url_b);
        return TLR_E_TOOBIG;
    }
    *out = tlr_buf_take(&url_b);
    return TLR_OK;
}

/* What to send where (url borrowed until the handle is cleaned up), the
 * timeouts and keepalive, and the callbacks that take the answer into x. */
static void kube_set_transfer(const tlr_kube *kc, const req *r, xfer *x, CURL *h,
                              const char *url)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, kc->user_agent);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, kc->connect_timeout_ms);
    if (r->timeout_ms > 0)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    if (r->idle_s > 0) {
        /* Below 1 byte/s for idle_s: curl measures the speed over its
         * last ~6 s, so this is "nothing at all" for idle_s + up to 6 s. */
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, r->idle_s);
    }
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);   /* paths are sent as built */
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
}

/* The server's CA and the client certificate and key, from the config. */
static void kube_set_tls(CURL *h, const tlr_kube_config *c)
{
    struct curl_blob blob;
    if (c->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->ca_data != NULL) {
        blob = (struct curl_blob){ c->ca_data, c->ca_len, CURL_BLOB_COPY };
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    } else if (c->ca_file != NULL) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    }
    if (c->cert_data != NULL) {
        blob = (struct curl_blob){ c->cert_data, c->cert_len, CURL_BLOB_COPY };
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &blob);
    } else if (c->cert_file != NULL) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
    }
    if (c->key_data != NULL) {
        blob = (struct curl_blob){ c->key_data, c->key_len, CURL_BLOB_COPY };
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &blob);
    } else if (c->key_file != NULL) {
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
    }
}

/* The credentials (the bearer token, secret and borrowed, or the config's
 * basic auth), the Accept and Content-Type headers and the body (r->body
 * borrowed until the transfer ends).  The header list is owned
 * (curl_slist_free_all()) and must outlive the transfer. */
static struct curl_slist *kube_set_headers(CURL *h, const tlr_kube_config *c, const req *r,
                                           const char *token)
{
    struct curl_slist *hdrs = NULL;
    if (token != NULL) {
        tlr_buf hb;
        tlr_buf_init(&hb, 1u << 20);
        tlr_buf_printf(&hb, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, tlr_buf_str(&hb));
        OPENSSL_cleanse(hb.data, hb.len);
        tlr_buf_free(&hb);
    } else if (c->username != NULL) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, c->username);
        curl_easy_setopt(h, CURLOPT_PASSWORD, c->password ? c->password : "");
    }
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (r->body != NULL) {
        char ct[128];
        snprintf(ct, sizeof(ct), "Content-Type: %s",
                 r->ctype ? r->ctype : "application/json");
        hdrs = curl_slist_append(hdrs, ct);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    return hdrs;
}

/* What a finished transfer (curl_easy_perform() said cc) comes to: TLR_OK
 * or a TLR_E_* code, with the HTTP status and the answer's reason and
 * message in *st (may be NULL). */
static int kube_outcome(CURL *h, xfer *x, CURLcode cc, tlr_kube_status *st)
{
    int rc;
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (st != NULL) {
        st->http = code;
        st->reason[0] = st->message[0] = '\0';
    }
    if (x->canceled) {
        rc = TLR_E_CANCELED;
    } else if (x->toobig) {
        rc = TLR_E_TOOBIG;
        if (st != NULL)
            snprintf(st->message, sizeof(st->message),
                     "response larger than %zu bytes", x->body.max);
    } else if (x->cb_rc != TLR_OK) {
        rc = x->cb_rc;
    } else if (cc != CURLE_OK && code == 0) {
        rc = cc == CURLE_OPERATION_TIMEDOUT ? TLR_E_TIMEOUT : TLR_E_IO;
        if (st != NULL)
            snprintf(st->message, sizeof(st->message), "%s", curl_easy_strerror(cc));
    } else if (cc == CURLE_OPERATION_TIMEDOUT && x->dec != NULL) {
        rc = TLR_OK;    /* a watch past its deadline or silent too long simply ends */
        x->silent = true;
    } else if (cc != CURLE_OK && code >= 200 && code < 300 && x->dec == NULL) {
        rc = TLR_E_IO;
        if (st != NULL)
            snprintf(st->message, sizeof(st->message), "%s", curl_easy_strerror(cc));
    } else {
        rc = tlr_kube_http_err(code);
        if (rc != TLR_OK) {
            const char *reason;
            status_from_body(&x->body, st, &reason);
            if (rc == TLR_E_CONFLICT && reason != NULL)
                rc = TLR_E_EXISTS;
        }
    }
    return rc;
}

/* One attempt at r on a fresh curl handle: the answer goes into x, its
 * status into *st (may be NULL).  force_token: drop the cached token
 * first (after a 401). */
static int perform(tlr_kube *kc, const req *r, xfer *x, tlr_kube_status *st,
                   bool force_token)
{
    char *token = NULL, *url = NULL;
    struct curl_slist *hdrs = NULL;
    CURL *h = NULL;
    int rc = current_token(kc, force_token, &token);
    if (rc != TLR_OK) {
        if (st != NULL)
            snprintf(st->message, sizeof(st->message), "no credentials: %s",
                     tlr_strerror(rc));
        goto out;
    }
    h = curl_easy_init();
    if (h == NULL)
        abort();
    x->h = h;
    rc = kube_url(kc, r, &url);
    if (rc != TLR_OK)
        goto out;
    kube_set_transfer(kc, r, x, h, url);
    kube_set_tls(h, kc->cfg);
    hdrs = kube_set_headers(h, kc->cfg, r, token);
    CURLcode cc = curl_easy_perform(h);
    rc = kube_outcome(h, x, cc, st);
out:
    curl_slist_free_all(hdrs);
    if (h != NULL)
        curl_easy_cleanup(h);
    x->h = NULL;
    free(url);
    free_secret(token);
    return rc;
}

/* Wait out a 429/503 that carries Retry-After, as the API server asks:
 * true when the request should be sent again.  Not past the calling
 * thread's deadline (tlr_cancel.h), and *rc becomes TLR_E_CANCELED when
 * shutdown ends the wait. */
static bool wait_retry_after(tlr_kube *kc, const req *r, xfer *x, const tlr_kube_status *st,
                             int attempt, int *rc)
{
    if ((st->http != 429 && st->http != 503) || x->retry_after_ms < 0 ||
        attempt >= KUBE_RETRY_AFTER_MAX)
        return false;
    int64_t ms = x->retry_after_ms < KUBE_RETRY_AFTER_CAP_MS ? x->retry_after_ms
                                                             : KUBE_RETRY_AFTER_CAP_MS;
    if (tlr_deadline_left_ms() <= ms)
        return false;
    TLR_LOG(kc->log, TLR_LOG_INFO, "kube request retried after Retry-After",
            TLR_S("method", r->method), TLR_S("path", r->path), TLR_I("http", st->http),
            TLR_I("delay_ms", ms), TLR_I("attempt", attempt + 1));
    if (tlr_sleep_until(tlr_mono_ms() + ms) != TLR_OK) {
        *rc = TLR_E_CANCELED;
        return false;
    }
    return true;
}

/* perform(), retried once with fresh credentials after a 401, and after
 * the wait a 429/503 asks for (wait_retry_after). */
static int exchange(tlr_kube *kc, const req *r, xfer *x, tlr_kube_status *st)
{
    tlr_kube_status local;
    if (st == NULL)
        st = &local;
    bool refreshable = kc->cfg->exec != NULL || kc->cfg->token_file != NULL;
    int rc;
    for (int attempt = 0;; attempt++) {
        x->retry_after_ms = -1;
        rc = perform(kc, r, x, st, false);
        if (rc == TLR_E_AUTH && st->http == 401 && refreshable) {
            tlr_buf_reset(&x->body);
            x->retry_after_ms = -1;
            rc = perform(kc, r, x, st, true);
        }
        if (rc == TLR_OK || !wait_retry_after(kc, r, x, st, attempt, &rc))
            break;
        tlr_buf_reset(&x->body);
    }
    if (rc != TLR_OK && rc != TLR_E_CANCELED)
        TLR_LOG(kc->log, TLR_LOG_DEBUG, "kube request failed", TLR_S("method", r->method),
                TLR_S("path", r->path), TLR_I("http", st->http), TLR_ERR(rc),
                TLR_S("reason", st->reason), TLR_S("message", st->message));
    return rc;
}

static int request_json(tlr_kube *kc, const req *r, json_object **out,
                        tlr_kube_status *st, bool (*cancel)(void *), void *cancel_arg)
{
    xfer x = { .kc = kc, .cancel = cancel, .cancel_arg = cancel_arg };
    tlr_buf_init(&x.body, kc->max_response);
    int rc = exchange(kc, r, &x, st);
    if (rc == TLR_OK && out != NULL) {
        json_object *o = NULL;
        if (x.body.len > 0) {
            char err[128];
            rc = tlr_json_parse(x.body.data, x.body.len, x.body.max, &o, err,
                                sizeof(err));
            if (rc != TLR_OK) {
                if (st != NULL)
                    snprintf(st->message, sizeof(st->message), "response: %s", err);
                rc = TLR_E_PARSE;
            }
        }
        if (rc == TLR_OK)
            *out = o;
    }
    tlr_buf_free(&x.body);
    return rc;
}

int tlr_kube_request(tlr_kube *kc, const char *method, const char *path,
                     const char *content_type, const char *body,
                     json_object **out, tlr_kube_status *st)
{
    if (kc == NULL || method == NULL || path == NULL)
        return TLR_E_INVAL;
    req r = { method, path, content_type, body, kc->timeout_ms };
    if (kc->fence && strcmp(method, "GET") != 0) {
        /* Fenced: a write only while this replica leads, and no longer. */
        int64_t left = tlr_fence_left_ms(kc->fence, tlr_mono_ms());
        if (left <= 0) {
            if (st != NULL) {
                memset(st, 0, sizeof(*st));
                snprintf(st->reason, sizeof(st->reason), "NotLeader");
                snprintf(st->message, sizeof(st->message),
                         "%s %s not sent: this replica's Lease is not valid", method, path);
            }
            return TLR_E_CANCELED;
        }
        if (r.timeout_ms <= 0 || left < r.timeout_ms)
            r.timeout_ms = (long)left;
    }
    return request_json(kc, &r, out, st, NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* Verbs                                                                */

int tlr_kube_get(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                 const char *name, json_object **out, tlr_kube_status *st)
{
    char path[1024];
    if (name == NULL || out == NULL)
        return TLR_E_INVAL;
    int rc = tlr_kube_path(res, ns, name, NULL, path, sizeof(path));
    if (rc != TLR_OK)
        return rc;
    return tlr_kube_request(kc, "GET", path, NULL, NULL, out, st);
}

/* Append "&key=escaped(value)" (or "?" first) when value is set. */
static void add_query(tlr_buf *b, const char *key, const char *value)
{
    if (value == NULL || value[0] == '\0')
        return;
    char *esc = curl_easy_escape(NULL, value, 0);
    tlr_buf_printf(b, "%c%s=%s", strchr(tlr_buf_str(b), '?') ? '&' : '?', key,
                   esc ? esc : "");
    curl_free(esc);
}

static int list_page(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                     const tlr_kube_list_opts *lo, const char *cont,
                     json_object **out, tlr_kube_status *st,
                     bool (*cancel)(void *), void *cancel_arg)
{
    char path[1024], num[32];
    int rc = tlr_kube_path(res, ns, NULL, NULL, path, sizeof(path));
    if (rc != TLR_OK)
        return rc;
    tlr_buf b;
    tlr_buf_init(&b, 1u << 16);
    tlr_buf_adds(&b, path);
    snprintf(num, sizeof(num), "%lld",
             (long long)(lo && lo->limit > 0 ? lo->limit : 500));
    add_query(&b, "limit", num);
    if (lo != NULL) {
        add_query(&b, "labelSelector", lo->label_selector);
        add_query(&b, "fieldSelector", lo->field_selector);
        if (cont == NULL)
            add_query(&b, "resourceVersion", lo->resource_version);
    }
    add_query(&b, "continue", cont);
    req r = { "GET", tlr_buf_str(&b), NULL, NULL, kc->timeout_ms };
    rc = request_json(kc, &r, out, st, cancel, cancel_arg);
    tlr_buf_free(&b);
    return rc;
}

int tlr_kube_list_page(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                       const tlr_kube_list_opts *lo, json_object **out,
                       tlr_kube_status *st)
{
    if (kc == NULL || res == NULL || out == NULL)
        return TLR_E_INVAL;
    return list_page(kc, res, ns, lo, lo ? lo->continue_token : NULL, out, st,
                     NULL, NULL);
}

int tlr_kube_list_cancelable(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                             const tlr_kube_list_opts *lo, tlr_kube_item_cb cb,
                             void *arg, char **rv, tlr_kube_status *st,
                             bool (*cancel)(void *), void *cancel_arg)
{
    char *cont = NULL, *first_rv = NULL;
    int rc;
    if (kc == NULL || res == NULL || cb == NULL)
        return TLR_E_INVAL;
    for (;;) {
        json_object *page = NULL;
        rc = list_page(kc, res, ns, lo, cont, &page, st, cancel, cancel_arg);
        if (rc != TLR_OK)
            goto out;
        if (page == NULL) {
            rc = TLR_E_PARSE;
            goto out;
        }
        const char *prv = tlr_json_str(page, "metadata.resourceVersion");
        if (first_rv == NULL && prv != NULL)
            first_rv = tlr_strdup(prv);
        json_object *items = tlr_json_arr(page, "items");
        for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
            rc = cb(arg, json_object_array_get_idx(items, i));
            if (rc != TLR_OK) {
                json_object_put(page);
                goto out;
            }
        }
        const char *next = tlr_json_str(page, "metadata.continue");
        free(cont);
        cont = next != NULL && next[0] != '\0' ? tlr_strdup(next) : NULL;
        json_object_put(page);
        if (cont == NULL)
            break;
    }
    if (rv != NULL) {
        *rv = first_rv;
        first_rv = NULL;
    }
    rc = TLR_OK;
out:
    free(cont);
    free(first_rv);
    return rc;
}

int tlr_kube_list(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                  const tlr_kube_list_opts *lo, tlr_kube_item_cb cb, void *arg,
                  char **rv, tlr_kube_status *st)
{
    return tlr_kube_list_cancelable(kc, res, ns, lo, cb, arg, rv, st, NULL, NULL);
}

typedef struct watch_ctx {
    tlr_kube_event_cb cb;
    void *arg;
    char *last_rv;
} watch_ctx;

static int watch_event(void *arg, tlr_kube_event_type t, json_object *obj)
{
    watch_ctx *w = arg;
    if (t == TLR_KUBE_ERROR) {
        int64_t code = 0;
        tlr_json_int(obj, "code", &code);
        return code == 410 ? TLR_E_GONE : tlr_kube_http_err(code ? code : 500);
    }
    const char *rv = tlr_json_str(obj, "metadata.resourceVersion");
    if (rv != NULL) {
        free(w->last_rv);
        w->last_rv = tlr_strdup(rv);
    }
    return w->cb(w->arg, t, obj);
}

int tlr_kube_watch(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                   const tlr_kube_watch_opts *wo, tlr_kube_event_cb cb, void *arg,
                   char **last_rv, tlr_kube_status *st)
{
    char path[1024], num[32];
    if (kc == NULL || res == NULL || cb == NULL)
        return TLR_E_INVAL;
    int rc = tlr_kube_path(res, ns, NULL, NULL, path, sizeof(path));
    if (rc != TLR_OK)
        return rc;
    int timeout_s = wo && wo->timeout_s > 0 ? wo->timeout_s : 300;
    int idle_s = wo && wo->idle_s > 0 ? wo->idle_s : TLR_KUBE_WATCH_IDLE_S;
    tlr_buf q;
    tlr_buf_init(&q, 1u << 16);
    tlr_buf_printf(&q, "%s?watch=1", path);
    snprintf(num, sizeof(num), "%d", timeout_s);
    add_query(&q, "timeoutSeconds", num);
    if (wo != NULL) {
        add_query(&q, "labelSelector", wo->label_selector);
        add_query(&q, "fieldSelector", wo->field_selector);
        add_query(&q, "resourceVersion", wo->resource_version);
        if (wo->allow_bookmarks)
            add_query(&q, "allowWatchBookmarks", "true");
    }
    watch_ctx w = { cb, arg, NULL };
    xfer x = { .kc = kc, .cb = watch_event, .cb_arg = &w,
               .cancel = wo ? wo->cancel : NULL, .cancel_arg = wo ? wo->cancel_arg : NULL };
    tlr_buf_init(&x.body, 1u << 20);
    tlr_kube_wdec_create(kc->max_response, &x.dec);
    /* The server ends the watch after timeoutSeconds; our own deadline is
     * later.  A connection gone silent is caught after idle_s. */
    req r = { "GET", tlr_buf_str(&q), NULL, NULL, (long)(timeout_s + 30) * 1000, idle_s };
    rc = exchange(kc, &r, &x, st);
    if (rc == TLR_OK && x.silent)
        TLR_LOG(kc->log, TLR_LOG_INFO, "kube watch went silent; resuming",
                TLR_S("path", path), TLR_I("idle_s", idle_s));
    tlr_kube_wdec_free(x.dec);
    tlr_buf_free(&x.body);
    tlr_buf_free(&q);
    if (last_rv != NULL) {
        *last_rv = w.last_rv;
        w.last_rv = NULL;
    }
    free(w.last_rv);
    return rc;
}

static int with_body(tlr_kube *kc, const char *method, const tlr_kube_res *res,
                     const char *ns, const char *name, const char *sub,
                     const char *ctype, const char *body, json_object **out,
                     tlr_kube_status *st)
{
    char path[1024];
    int rc = tlr_kube_path(res, ns, name, sub, path, sizeof(path));
    if (rc != TLR_OK)
        return rc;
    json_object *o = NULL;
    rc = tlr_kube_request(kc, method, path, ctype, body, out ? &o : NULL, st);
    if (rc == TLR_OK && out != NULL)
        *out = o;
    return rc;
}

int tlr_kube_create_obj(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                        json_object *body, json_object **out, tlr_kube_status *st)
{
    if (body == NULL)
        return TLR_E_INVAL;
    return with_body(kc, "POST", res, ns, NULL, NULL, NULL,
                     tlr_json_to_string(body, JSON_C_TO_STRING_PLAIN), out, st);
}

int tlr_kube_update(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                    const char *name, const char *sub, json_object *body,
                    json_object **out, tlr_kube_status *st)
{
    if (body == NULL || name == NULL)
        return TLR_E_INVAL;
    return with_body(kc, "PUT", res, ns, name, sub, NULL,
                     tlr_json_to_string(body, JSON_C_TO_STRING_PLAIN), out, st);
}

int tlr_kube_patch(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                   const char *name, const char *sub, tlr_kube_patch_type pt,
                   const char *patch, json_object **out, tlr_kube_status *st)
{
    static const char *types[] = {
        [TLR_KUBE_PATCH_MERGE] = "application/merge-patch+json",
        [TLR_KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
        [TLR_KUBE_PATCH_JSON] = "application/json-patch+json",
    };
    if (patch == NULL || name == NULL || (unsigned)pt > TLR_KUBE_PATCH_JSON)
        return TLR_E_INVAL;
    return with_body(kc, "PATCH", res, ns, name, sub, types[pt], patch, out, st);
}

int tlr_kube_delete(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                    const char *name, const char *propagation, tlr_kube_status *st)
{
    char body[160];
    if (name == NULL)
        return TLR_E_INVAL;
    if (propagation != NULL)
        snprintf(body, sizeof(body),
                 "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                 "\"propagationPolicy\":\"%s\"}", propagation);
    return with_body(kc, "DELETE", res, ns, name, NULL, NULL,
                     propagation ? body : NULL, NULL, st);
}

int tlr_kube_evict(tlr_kube *kc, const char *ns, const char *name,
                   tlr_kube_status *st)
{
    if (ns == NULL || name == NULL)
        return TLR_E_INVAL;
    tlr_buf b;
    tlr_buf_init(&b, 4096);
    tlr_buf_adds(&b, "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
                     "\"metadata\":{\"name\":");
    tlr_buf_add_json_str(&b, name);
    tlr_buf_adds(&b, ",\"namespace\":");
    tlr_buf_add_json_str(&b, ns);
    tlr_buf_adds(&b, "}}");
    tlr_kube_res pods = TLR_KUBE_RES_PODS;
    int rc = with_body(kc, "POST", &pods, ns, name, "eviction", NULL,
                       tlr_buf_str(&b), NULL, st);
    tlr_buf_free(&b);
    return rc;
}

int tlr_kube_bind(tlr_kube *kc, const char *ns, const char *name,
                  const char *node, tlr_kube_status *st)
{
    if (ns == NULL || name == NULL || node == NULL)
        return TLR_E_INVAL;
    tlr_buf b;
    tlr_buf_init(&b, 4096);
    tlr_buf_adds(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":");
    tlr_buf_add_json_str(&b, name);
    tlr_buf_adds(&b, ",\"namespace\":");
    tlr_buf_add_json_str(&b, ns);
    tlr_buf_adds(&b, "},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":");
    tlr_buf_add_json_str(&b, node);
    tlr_buf_adds(&b, "}}");
    tlr_kube_res pods = TLR_KUBE_RES_PODS;
    int rc = with_body(kc, "POST", &pods, ns, name, "binding", NULL,
                       tlr_buf_str(&b), NULL, st);
    tlr_buf_free(&b);
    return rc;
}
