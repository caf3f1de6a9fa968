/* req.c - the REQ client (see tlr_req.h for the contract).
 *
 * One nng req socket dials every URL with NNG_FLAG_NONBLOCK, so a replica
 * that is not up yet is redialled in the background (RECONN_MIN_MS,
 * backing off to RECONN_MAX_MS).  A call runs on one nng context and one
 * aio: send (which completes once the request is handed to a connection,
 * so a send that times out means no replica was connected), then receive.
 * The context's resend time makes nng repeat an unanswered request; see
 * the header for the arithmetic.
 */
#include "tlr_req.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <nng/protocol/reqrep0/req.h>

#include "tlr_alloc.h"
#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_time.h"
#include "transport_peers.h"

#define TIMEOUT_DEFAULT_MS 5000
#define RECONN_MIN_MS 100
#define RECONN_MAX_MS 2000

struct tlr_req_client {
    nng_socket sock;
    nng_ctx ctx;
    nng_aio *aio;
    pthread_mutex_t mu;   /* done, set by nng's thread when aio completes */
    pthread_cond_t cv;
    bool done;
    bool sync_init;
    bool ctx_open;
    int timeout_ms;
    int retries;
    int max_age_ms;
    size_t max_msg;
    tlr_logger *log;
    char *sender;
    char *urls;           /* "a,b" for messages */
    uint64_t rid_prefix;  /* random: request ids differ across restarts */
    uint64_t seq;
    tlr_peers peers;
    tlr_req_stats stats;
};

/* nng's completion callback for c->aio (on nng's thread). */
static void req_aio_done(void *arg)
{
    tlr_req_client *c = arg;
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Start op on c->aio (nng_ctx_send or nng_ctx_recv) and wait for it like
 * nng_aio_wait, except that a shutdown request (SIGTERM, even one the
 * blocked loop has not read yet: tlr_shutdown_requested) cancels it: a
 * service must not sit out a whole call timeout - 30 s and more - after
 * it was told to stop.  True when it was cancelled so. */
static bool req_aio_run(tlr_req_client *c, void (*op)(nng_ctx, nng_aio *))
{
    bool canceled = false;
    pthread_mutex_lock(&c->mu);
    c->done = false;
    pthread_mutex_unlock(&c->mu);
    op(c->ctx, c->aio);
    pthread_mutex_lock(&c->mu);
    while (!c->done) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        if (!c->done && !canceled && tlr_shutdown_requested()) {
            canceled = true;
            pthread_mutex_unlock(&c->mu);
            nng_aio_cancel(c->aio);
            pthread_mutex_lock(&c->mu);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return canceled;
}

static char *join_urls(const char *const *urls, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(urls[i]) + 1;
    char *s = tlr_malloc(len);
    s[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            strcat(s, ",");
        strcat(s, urls[i]);
    }
    return s;
}

int tlr_req_client_create(const tlr_req_opts *o, tlr_req_client **out)
{
    if (o == NULL || out == NULL || o->urls == NULL || o->nurls == 0)
        return TLR_E_INVAL;
    for (size_t i = 0; i < o->nurls; i++)
        if (o->urls[i] == NULL || o->urls[i][0] == '\0')
            return TLR_E_INVAL;

    int rc = TLR_OK;
    int rv;
    tlr_req_client *c = tlr_calloc(1, sizeof(*c));
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : TIMEOUT_DEFAULT_MS;
    c->retries = o->retries > 0 ? o->retries : 0;
    c->max_msg = o->max_msg ? o->max_msg : TLR_MSG_MAX_DEFAULT;
    c->max_age_ms = o->max_conn_age_ms > 0 ? o->max_conn_age_ms : 0;
    c->log = o->log;
    c->sender = tlr_strdup(o->sender ? o->sender : "");
    c->urls = join_urls(o->urls, o->nurls);
    if (getrandom(&c->rid_prefix, sizeof(c->rid_prefix), 0) !=
        (ssize_t)sizeof(c->rid_prefix))
        c->rid_prefix = (uint64_t)tlr_wall_ms();

    if ((rv = nng_req0_open(&c->sock)) != 0) {
        TLR_ERROR(c->log, "req socket open failed",
                  TLR_S("nng_error", nng_strerror(rv)));
        rc = TLR_E_IO;
        goto fail;
    }
    if (o->tls != NULL)
        tlr_peers_guard(&c->peers, o->allow, c->log, c->urls);
    if (c->max_age_ms > 0)
        tlr_peers_track_age(&c->peers);
    if ((rc = tlr_peers_watch(&c->peers, c->sock)) != TLR_OK)
        goto fail;
    if ((rv = nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ,
                                  c->max_msg)) != 0 ||
        (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT,
                                RECONN_MIN_MS)) != 0 ||
        (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT,
                                RECONN_MAX_MS)) != 0)
        goto nng_fail;
    if ((rv = nng_ctx_open(&c->ctx, c->sock)) != 0)
        goto nng_fail;
    c->ctx_open = true;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->sync_init = true;
    if ((rv = nng_aio_alloc(&c->aio, req_aio_done, c)) != 0)
        goto nng_fail;
    for (size_t i = 0; i < o->nurls; i++) {
        if (tlr_tls_url(o->urls[i]) && o->tls == NULL) {
            TLR_ERROR(c->log, "a tls+tcp:// URL needs a certificate (--tls-ca, --tls-cert, "
                      "--tls-key)", TLR_S("url", o->urls[i]));
            rc = TLR_E_INVAL;
            goto fail;
        }
        rv = tlr_tls_url(o->urls[i])
                 ? tlr_tls_dial(o->tls, c->sock, o->urls[i])
                 : nng_dial(c->sock, o->urls[i], NULL, NNG_FLAG_NONBLOCK);
        if (rv != 0) {
            TLR_ERROR(c->log, "dial failed", TLR_S("url", o->urls[i]),
                      TLR_S("nng_error", nng_strerror(rv)));
            rc = rv == NNG_EINVAL || rv == NNG_EADDRINVAL ||
                 rv == NNG_ENOTSUP ? TLR_E_INVAL : TLR_E_IO;
            goto fail;
        }
    }
    *out = c;
    return TLR_OK;
nng_fail:
    TLR_ERROR(c->log, "req socket setup failed",
              TLR_S("nng_error", nng_strerror(rv)));
    rc = TLR_E_IO;
fail:
    tlr_req_client_free(c);
    return rc;
}

void tlr_req_client_free(tlr_req_client *c)
{
    if (c == NULL)
        return;
    if (c->aio != NULL) {
        nng_aio_stop(c->aio);
        nng_aio_free(c->aio);
    }
    if (c->sync_init) {
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
    }
    if (c->ctx_open)
        nng_ctx_close(c->ctx);
    if (nng_socket_id(c->sock) > 0)
        nng_close(c->sock);
    tlr_peers_fini(&c->peers);
    free(c->sender);
    free(c->urls);
    free(c);
}

/* Close the oldest connection past the age limit that has served a call,
 * if another one is up (tlr_req_opts.max_conn_age_ms): nng redials it,
 * maybe to another replica. */
static void recycle(tlr_req_client *c)
{
    nng_pipe old;
    if (c->max_age_ms <= 0 || tlr_peers_count(&c->peers) < 2 ||
        tlr_peers_oldest(&c->peers, tlr_mono_ms() - c->max_age_ms, &old) != TLR_OK)
        return;
    c->stats.recycled++;
    TLR_DEBUG(c->log, "connection recycled for its age", TLR_S("urls", c->urls),
              TLR_I("max_age_ms", c->max_age_ms));
    nng_pipe_close(old);
}

/* Count the outcome of a call and fill st for a local failure. */
static int fail_call(tlr_req_client *c, int rc, tlr_status *st,
                     const char *type, const char *rid, const char *msg)
{
    switch (rc) {
    case TLR_E_TIMEOUT:     c->stats.timeouts++; break;
    case TLR_E_UNAVAILABLE: c->stats.unavailable++; break;
    case TLR_E_REMOTE:      c->stats.remote_errors++; break;
    default:                c->stats.bad_replies++; break;
    }
    if (rc != TLR_E_REMOTE)
        tlr_status_set(st, rc, tlr_errname(rc), "%s", msg);
    TLR_WARN(c->log, "request failed", TLR_S("type", type),
             TLR_S("request_id", rid), TLR_S("urls", c->urls), TLR_ERR(rc),
             TLR_S("reason", st ? st->message : msg));
    return rc;
}

/* Send msg (handed over) and wait for the reply: on TLR_OK *out is the
 * reply message, new and owned by the caller. */
static int exchange(tlr_req_client *c, nng_msg *msg, int attempt_ms,
                    nng_msg **out, char *why, size_t whylen)
{
    int64_t total = (int64_t)attempt_ms * (c->retries + 1);
    if (total > INT32_MAX)
        total = INT32_MAX;
    int64_t deadline = tlr_mono_ms() + total;
    /* Without retries, the timer must not resend before we give up; but
     * the resend on a closed connection only happens with a positive
     * resend time, so keep it positive and beyond the deadline. */
    nng_duration resend = c->retries > 0 ? attempt_ms : (nng_duration)total + 1000;
    if (resend < 0)
        resend = INT32_MAX;
    nng_ctx_set_ms(c->ctx, NNG_OPT_REQ_RESENDTIME, resend);

    nng_aio_set_msg(c->aio, msg);
    nng_aio_set_timeout(c->aio, (nng_duration)total);
    bool stop = req_aio_run(c, nng_ctx_send);
    int rv = nng_aio_result(c->aio);
    if (rv != 0) {
        nng_msg_free(nng_aio_get_msg(c->aio));
        nng_aio_set_msg(c->aio, NULL);
        if (stop && rv == NNG_ECANCELED) {
            snprintf(why, whylen, "shutting down");
            return TLR_E_CANCELED;
        }
        if (rv == NNG_ETIMEDOUT) {
            snprintf(why, whylen, "no replica connected within %" PRId64
                     " ms (dialling %s)", total, c->urls);
            return TLR_E_UNAVAILABLE;
        }
        snprintf(why, whylen, "send failed: %s", nng_strerror(rv));
        return TLR_E_UNAVAILABLE;
    }

    int64_t left = deadline - tlr_mono_ms();
    nng_aio_set_timeout(c->aio, left > 0 ? (nng_duration)left : 1);
    stop = req_aio_run(c, nng_ctx_recv);
    rv = nng_aio_result(c->aio);
    if (rv == 0) {
        *out = nng_aio_get_msg(c->aio);
        nng_aio_set_msg(c->aio, NULL);
        if (c->max_age_ms > 0)
            tlr_peers_mark_used(&c->peers, nng_msg_get_pipe(*out));
        return TLR_OK;
    }
    if (stop && rv == NNG_ECANCELED) {
        snprintf(why, whylen, "shutting down");
        return TLR_E_CANCELED;
    }
    if (rv == NNG_ETIMEDOUT && tlr_peers_count(&c->peers) > 0) {
        snprintf(why, whylen, "no reply within %" PRId64 " ms (%d attempt%s "
                 "of %d ms; %s)", total, c->retries + 1,
                 c->retries ? "s" : "", attempt_ms, c->urls);
        return TLR_E_TIMEOUT;
    }
    snprintf(why, whylen, "no replica reachable (%s): %s", c->urls,
             nng_strerror(rv));
    return TLR_E_UNAVAILABLE;
}

/* Check and decode the reply envelope in m (borrowed). */
static int decode_reply(tlr_req_client *c, nng_msg *m, const char *rid,
                        const ProtobufCMessageDescriptor *reply_desc,
                        ProtobufCMessage **reply, tlr_status *st,
                        char *why, size_t whylen)
{
    char err[384];
    Tailor__V1__Envelope *env = NULL;
    int rc = tlr_envelope_unpack(nng_msg_body(m), nng_msg_len(m), c->max_msg,
                                 &env, err, sizeof(err));
    if (rc != TLR_OK) {
        snprintf(why, whylen, "bad reply: %s", err);
        return rc;
    }
    if (env->request_id != NULL && env->request_id[0] != '\0' &&
        strcmp(env->request_id, rid) != 0) {
        snprintf(why, whylen, "reply is for request %s, want %s",
                 env->request_id, rid);
        rc = TLR_E_DECODE;
        goto out;
    }
    if (env->status != NULL && env->status->code != 0) {
        tlr_status_set(st, (int)env->status->code, env->status->reason,
                       "%s (from %s)", env->status->message,
                       env->sender && env->sender[0] ? env->sender : "server");
        snprintf(why, whylen, "%s: %s", tlr_errname((int)env->status->code),
                 env->status->message);
        rc = TLR_E_REMOTE;
        goto out;
    }
    rc = tlr_envelope_payload(env, reply_desc, reply, err, sizeof(err));
    if (rc != TLR_OK)
        snprintf(why, whylen, "bad reply: %s", err);
out:
    tailor__v1__envelope__free_unpacked(env, NULL);
    return rc;
}

int tlr_req_call(tlr_req_client *c, const ProtobufCMessage *req,
                 const ProtobufCMessageDescriptor *reply_desc, int timeout_ms,
                 ProtobufCMessage **reply, tlr_status *st)
{
    if (c == NULL || req == NULL || reply_desc == NULL || reply == NULL) {
        tlr_status_set(st, TLR_E_INVAL, NULL, "tlr_req_call: missing argument");
        return TLR_E_INVAL;
    }
    const char *type = req->descriptor->name;
    char rid[48];
    char why[640];
    nng_msg *m = NULL;
    nng_msg *rm = NULL;
    ProtobufCMessage *got = NULL;
    int attempt_ms = timeout_ms > 0 ? timeout_ms : c->timeout_ms;

    c->stats.calls++;
    recycle(c);
    snprintf(rid, sizeof(rid), "%016" PRIx64 "-%" PRIu64, c->rid_prefix,
             ++c->seq);
    int rc = tlr_envelope_pack(NULL, req, rid, c->sender, &m);
    if (rc != TLR_OK) {
        tlr_status_set(st, rc, NULL, "packing %s failed", type);
        return rc;
    }
    if (nng_msg_len(m) > c->max_msg) {
        snprintf(why, sizeof(why), "request %s of %zu bytes exceeds the "
                 "limit of %zu bytes", type, nng_msg_len(m), c->max_msg);
        nng_msg_free(m);
        return fail_call(c, TLR_E_TOOBIG, st, type, rid, why);
    }
    rc = exchange(c, m, attempt_ms, &rm, why, sizeof(why));
    m = NULL;   /* handed over */
    if (rc != TLR_OK)
        return fail_call(c, rc, st, type, rid, why);

    rc = decode_reply(c, rm, rid, reply_desc, &got, st, why, sizeof(why));
    nng_msg_free(rm);
    if (rc != TLR_OK)
        return fail_call(c, rc, st, type, rid, why);
    c->stats.ok++;
    tlr_status_clear(st);
    *reply = got;
    return TLR_OK;
}

size_t tlr_req_client_peers(const tlr_req_client *c)
{
    return tlr_peers_count(&c->peers);
}

int tlr_req_client_wait(const tlr_req_client *c, size_t n, int timeout_ms)
{
    return tlr_peers_wait(&c->peers, n, timeout_ms);
}

void tlr_req_client_stats(const tlr_req_client *c, tlr_req_stats *out)
{
    *out = c->stats;
}
