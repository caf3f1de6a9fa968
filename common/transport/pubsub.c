/* pubsub.c - topic publisher and subscriber (see tlr_pubsub.h).
 *
 * The publisher is a plain nng pub0 socket: nng_sendmsg() queues the
 * message for every connected subscriber and never blocks.  The
 * subscriber is a sub0 socket whose RECVFD joins the loop; like the REP
 * server it drains at most BATCH messages per wake-up.  Both sides use a
 * QUEUE_LEN-deep queue per connection: deep enough for bursts, shallow
 * enough that a stalled peer cannot pin much memory.
 */
#include "tlr_pubsub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "transport_peers.h"

#define BATCH 64
#define QUEUE_LEN 128
#define RECONN_MIN_MS 100
#define RECONN_MAX_MS 2000

struct tlr_pub {
    nng_socket sock;
    nng_listener listener;
    size_t max_msg;
    tlr_logger *log;
    char *sender;
    char *url;
    tlr_peers peers;
    tlr_pub_stats stats;
};

struct tlr_sub {
    tlr_loop *loop;
    nng_socket sock;
    int fd;                 /* RECVFD watched by loop; -1 if not */
    size_t max_msg;
    tlr_logger *log;
    tlr_sub_fn fn;
    void *arg;
    tlr_peers peers;
    tlr_sub_stats stats;
    char (*topics)[TLR_TOPIC_MAX + 1];   /* subscribed topics */
    size_t *topic_max;                  /* their limits (never 0) */
    size_t ntopics;
};

/* The envelope limit for topic: its own, else max_msg. */
static size_t topic_limit(const tlr_sub *s, const char *topic)
{
    for (size_t i = 0; i < s->ntopics; i++)
        if (strcmp(s->topics[i], topic) == 0)
            return s->topic_max[i];
    return s->max_msg;
}

static bool topic_ok(const char *topic)
{
    if (topic == NULL)
        return false;
    size_t n = strlen(topic);
    return n > 0 && n <= TLR_TOPIC_MAX;
}

static int nng_to_tlr(int rv)
{
    return rv == NNG_EINVAL || rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP
               ? TLR_E_INVAL : TLR_E_IO;
}

/* Refuse a tls+tcp:// URL without certificates, and guard the socket's
 * pipes by identity when it is TLS.  Before dialling or listening. */
static int tls_prepare(tlr_peers *peers, const char *url, tlr_tls *tls,
                       const char *const *allow, tlr_logger *log, const char *what)
{
    if (!tlr_tls_url(url))
        return TLR_OK;
    if (tls == NULL) {
        TLR_ERROR(log, "a tls+tcp:// URL needs a certificate (--tls-ca, --tls-cert, "
                  "--tls-key)", TLR_S("url", url));
        return TLR_E_INVAL;
    }
    char w[160];
    snprintf(w, sizeof(w), "%s %s", what, url);
    tlr_peers_guard(peers, allow, log, w);
    return TLR_OK;
}

static int ep_dial(tlr_tls *tls, nng_socket s, const char *url)
{
    return tlr_tls_url(url) ? tlr_tls_dial(tls, s, url)
                            : nng_dial(s, url, NULL, NNG_FLAG_NONBLOCK);
}

static int ep_listen(tlr_tls *tls, nng_socket s, const char *url, nng_listener *l)
{
    return tlr_tls_url(url) ? tlr_tls_listen(tls, s, url, l) : nng_listen(s, url, l, 0);
}

int tlr_pub_open(const tlr_pub_opts *o, tlr_pub **out)
{
    if (o == NULL || o->url == NULL || o->url[0] == '\0' || out == NULL)
        return TLR_E_INVAL;
    const char *listen_url = o->url;
    bool dial = o->dial;
    size_t max_msg = o->max_msg;
    tlr_logger *log = o->log;
    const char *sender = o->sender;
    int rc;
    int rv;
    tlr_pub *p = tlr_calloc(1, sizeof(*p));
    p->max_msg = max_msg ? max_msg : TLR_MSG_MAX_DEFAULT;
    p->log = log;
    p->sender = tlr_strdup(sender ? sender : "");
    p->url = tlr_strdup(listen_url);

    if ((rv = nng_pub0_open(&p->sock)) != 0)
        goto nng_fail;
    if ((rc = tls_prepare(&p->peers, p->url, o->tls, o->allow, log, "publisher")) != TLR_OK)
        goto fail;
    if ((rc = tlr_peers_watch(&p->peers, p->sock)) != TLR_OK)
        goto fail;
    /* A publisher receives nothing, but a peer could still send: cap it. */
    if ((rv = nng_socket_set_size(p->sock, NNG_OPT_RECVMAXSZ, 1024)) != 0 ||
        (rv = nng_socket_set_int(p->sock, NNG_OPT_SENDBUF, QUEUE_LEN)) != 0)
        goto nng_fail;
    if (dial) {
        /* In the background, again and again until the listener is up. */
        if ((rv = nng_socket_set_ms(p->sock, NNG_OPT_RECONNMINT, RECONN_MIN_MS)) != 0 ||
            (rv = nng_socket_set_ms(p->sock, NNG_OPT_RECONNMAXT, RECONN_MAX_MS)) != 0)
            goto nng_fail;
        if ((rv = ep_dial(o->tls, p->sock, p->url)) != 0) {
            TLR_ERROR(p->log, "publisher dial failed", TLR_S("url", p->url),
                      TLR_S("nng_error", nng_strerror(rv)));
            rc = nng_to_tlr(rv);
            goto fail;
        }
        TLR_INFO(p->log, "publishing to a subscriber's listener", TLR_S("url", p->url));
        *out = p;
        return TLR_OK;
    }
    if ((rv = ep_listen(o->tls, p->sock, p->url, &p->listener)) != 0) {
        TLR_ERROR(p->log, "publisher listen failed", TLR_S("url", p->url),
                  TLR_S("nng_error", nng_strerror(rv)));
        rc = nng_to_tlr(rv);
        goto fail;
    }
    TLR_INFO(p->log, "publishing", TLR_S("url", p->url),
             TLR_I("port", tlr_pub_port(p)));
    *out = p;
    return TLR_OK;
nng_fail:
    TLR_ERROR(p->log, "pub socket setup failed",
              TLR_S("nng_error", nng_strerror(rv)));
    rc = TLR_E_IO;
fail:
    tlr_pub_free(p);
    return rc;
}

int tlr_pub_create(const char *listen_url, size_t max_msg, tlr_logger *log,
                   const char *sender, tlr_pub **out)
{
    return tlr_pub_open(&(tlr_pub_opts){ .url = listen_url, .max_msg = max_msg, .log = log,
                                         .sender = sender }, out);
}

int tlr_pub_dial(const char *url, size_t max_msg, tlr_logger *log, const char *sender,
                 tlr_pub **out)
{
    return tlr_pub_open(&(tlr_pub_opts){ .url = url, .dial = true, .max_msg = max_msg,
                                         .log = log, .sender = sender }, out);
}

void tlr_pub_free(tlr_pub *p)
{
    if (p == NULL)
        return;
    if (nng_socket_id(p->sock) > 0)
        nng_close(p->sock);
    tlr_peers_fini(&p->peers);
    free(p->sender);
    free(p->url);
    free(p);
}

int tlr_pub_send(tlr_pub *p, const char *topic, const ProtobufCMessage *msg)
{
    nng_msg *m = NULL;
    int rc;
    if (!topic_ok(topic) || msg == NULL) {
        rc = TLR_E_INVAL;
        goto fail;
    }
    if ((rc = tlr_envelope_pack(NULL, msg, NULL, p->sender, &m)) != TLR_OK)
        goto fail;
    if (nng_msg_insert(m, topic, strlen(topic) + 1) != 0) {
        rc = TLR_E_NOMEM;
        goto fail;
    }
    if (nng_msg_len(m) > p->max_msg) {
        TLR_WARN(p->log, "message too big to publish", TLR_S("topic", topic),
                 TLR_S("type", msg->descriptor->name),
                 TLR_I("bytes", (long long)nng_msg_len(m)),
                 TLR_I("limit", (long long)p->max_msg));
        rc = TLR_E_TOOBIG;
        goto fail;
    }
    int rv = nng_sendmsg(p->sock, m, 0);
    if (rv != 0) {
        TLR_WARN(p->log, "publish failed", TLR_S("topic", topic),
                 TLR_S("nng_error", nng_strerror(rv)));
        rc = TLR_E_IO;
        goto fail;
    }
    p->stats.sent++;
    return TLR_OK;
fail:
    nng_msg_free(m);
    p->stats.failed++;
    return rc;
}

int tlr_pub_port(const tlr_pub *p)
{
    int port = 0;
    if (nng_listener_get_int(p->listener, NNG_OPT_TCP_BOUND_PORT, &port) != 0)
        return 0;
    return port;
}

size_t tlr_pub_peers(const tlr_pub *p)
{
    return tlr_peers_count(&p->peers);
}

void tlr_pub_stats_get(const tlr_pub *p, tlr_pub_stats *out)
{
    *out = p->stats;
}

/* Split body[0..len) into its topic (copied to topic) and the envelope
 * bytes after the NUL (*rest, *restlen, borrowed).  TLR_E_DECODE with
 * topic "" when there is no topic of 1..TLR_TOPIC_MAX bytes. */
static int split_topic(const void *body, size_t len, char topic[TLR_TOPIC_MAX + 1],
                       const void **rest, size_t *restlen, char *err, size_t errlen)
{
    size_t scan = len < TLR_TOPIC_MAX + 1 ? len : TLR_TOPIC_MAX + 1;
    const char *nul = body ? memchr(body, '\0', scan) : NULL;

    topic[0] = '\0';
    if (nul == NULL || nul == (const char *)body) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "no topic of 1..%d bytes before a NUL", TLR_TOPIC_MAX);
        return TLR_E_DECODE;
    }
    size_t tlen = (size_t)(nul - (const char *)body);
    memcpy(topic, body, tlen);
    topic[tlen] = '\0';
    *rest = nul + 1;
    *restlen = len - tlen - 1;
    return TLR_OK;
}

int tlr_sub_decode(const void *body, size_t len, size_t max_size,
                   char topic[TLR_TOPIC_MAX + 1], Tailor__V1__Envelope **env,
                   char *err, size_t errlen)
{
    const void *rest;
    size_t restlen;
    int rc = split_topic(body, len, topic, &rest, &restlen, err, errlen);
    if (rc != TLR_OK)
        return rc;
    return tlr_envelope_unpack(rest, restlen, max_size, env, err, errlen);
}

/* Check one received message (borrowed) and pass it on. */
static void sub_handle(tlr_sub *s, nng_msg *m)
{
    char err[256];
    char topic[TLR_TOPIC_MAX + 1];
    size_t len = nng_msg_len(m);
    Tailor__V1__Envelope *env = NULL;

    s->stats.received++;
    const void *rest = NULL;
    size_t restlen = 0;
    int rc = split_topic(nng_msg_body(m), len, topic, &rest, &restlen, err, sizeof(err));
    if (rc != TLR_OK && topic[0] == '\0') {
        s->stats.dropped++;
        TLR_WARN(s->log, "dropped message without a topic",
                 TLR_I("bytes", (long long)len));
        return;
    }
    if (rc == TLR_OK)
        rc = tlr_envelope_unpack(rest, restlen, topic_limit(s, topic), &env, err, sizeof(err));
    if (rc != TLR_OK) {
        s->stats.dropped++;
        TLR_WARN(s->log, "dropped bad message", TLR_S("topic", topic),
                 TLR_ERR(rc), TLR_S("reason", err));
        return;
    }
    s->stats.delivered++;
    s->fn(s->arg, topic, env);
    tailor__v1__envelope__free_unpacked(env, NULL);
}

static void sub_on_readable(tlr_loop *loop, int fd, void *arg)
{
    tlr_sub *s = arg;
    for (int i = 0; i < BATCH; i++) {
        nng_msg *m = NULL;
        int rv = nng_recvmsg(s->sock, &m, NNG_FLAG_NONBLOCK);
        if (rv == NNG_EAGAIN)
            return;
        if (rv != 0) {
            TLR_ERROR(s->log, "subscriber receive failed",
                      TLR_S("nng_error", nng_strerror(rv)));
            return;
        }
        sub_handle(s, m);
        nng_msg_free(m);
    }
}

int tlr_sub_create(tlr_loop *loop, const tlr_sub_opts *o, tlr_sub **out)
{
    if (loop == NULL || o == NULL || out == NULL || o->fn == NULL ||
        o->urls == NULL || o->nurls == 0 || o->topics == NULL ||
        o->ntopics == 0)
        return TLR_E_INVAL;
    for (size_t i = 0; i < o->ntopics; i++)
        if (!topic_ok(o->topics[i]))
            return TLR_E_INVAL;
    for (size_t i = 0; i < o->nurls; i++)
        if (o->urls[i] == NULL || o->urls[i][0] == '\0')
            return TLR_E_INVAL;

    int rc;
    int rv;
    int fd = -1;
    tlr_sub *s = tlr_calloc(1, sizeof(*s));
    s->loop = loop;
    s->fd = -1;
    s->max_msg = o->max_msg ? o->max_msg : TLR_MSG_MAX_DEFAULT;
    s->log = o->log;
    s->fn = o->fn;
    s->arg = o->arg;
    s->ntopics = o->ntopics;
    s->topics = tlr_calloc(o->ntopics, sizeof(*s->topics));
    s->topic_max = tlr_calloc(o->ntopics, sizeof(*s->topic_max));
    for (size_t i = 0; i < o->ntopics; i++) {
        snprintf(s->topics[i], sizeof(s->topics[i]), "%s", o->topics[i]);
        size_t m = o->topic_max != NULL ? o->topic_max[i] : 0;
        s->topic_max[i] = m > 0 && m < s->max_msg ? m : s->max_msg;
    }

    if ((rv = nng_sub0_open(&s->sock)) != 0)
        goto nng_fail;
    for (size_t i = 0; i < o->nurls; i++)
        if ((rc = tls_prepare(&s->peers, o->urls[i], o->tls, o->allow, s->log,
                              "subscriber")) != TLR_OK)
            goto fail;
    if ((rc = tlr_peers_watch(&s->peers, s->sock)) != TLR_OK)
        goto fail;
    /* The frame is topic + NUL + envelope: allow for the topic. */
    if ((rv = nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ,
                                  s->max_msg + TLR_TOPIC_MAX + 1)) != 0 ||
        (rv = nng_socket_set_int(s->sock, NNG_OPT_RECVBUF, QUEUE_LEN)) != 0 ||
        (rv = nng_socket_set_ms(s->sock, NNG_OPT_RECONNMINT,
                                RECONN_MIN_MS)) != 0 ||
        (rv = nng_socket_set_ms(s->sock, NNG_OPT_RECONNMAXT,
                                RECONN_MAX_MS)) != 0)
        goto nng_fail;
    for (size_t i = 0; i < o->ntopics; i++) {
        /* The prefix includes the NUL, so "pending" != "pending-v2". */
        rv = nng_socket_set(s->sock, NNG_OPT_SUB_SUBSCRIBE, o->topics[i],
                            strlen(o->topics[i]) + 1);
        if (rv != 0)
            goto nng_fail;
    }
    for (size_t i = 0; i < o->nurls; i++) {
        rv = o->listen ? ep_listen(o->tls, s->sock, o->urls[i], NULL)
                       : ep_dial(o->tls, s->sock, o->urls[i]);
        if (rv != 0) {
            TLR_ERROR(s->log, o->listen ? "subscriber listen failed" : "subscriber dial failed",
                      TLR_S("url", o->urls[i]),
                      TLR_S("nng_error", nng_strerror(rv)));
            rc = nng_to_tlr(rv);
            goto fail;
        }
    }
    if ((rv = nng_socket_get_int(s->sock, NNG_OPT_RECVFD, &fd)) != 0)
        goto nng_fail;
    if ((rc = tlr_loop_add_fd(loop, fd, sub_on_readable, s)) != TLR_OK)
        goto fail;
    s->fd = fd;
    *out = s;
    return TLR_OK;
nng_fail:
    TLR_ERROR(s->log, "sub socket setup failed",
              TLR_S("nng_error", nng_strerror(rv)));
    rc = TLR_E_IO;
fail:
    tlr_sub_free(s);
    return rc;
}

void tlr_sub_free(tlr_sub *s)
{
    if (s == NULL)
        return;
    if (s->fd >= 0)
        tlr_loop_remove_fd(s->loop, s->fd);
    if (nng_socket_id(s->sock) > 0)
        nng_close(s->sock);
    free(s->topics);
    free(s->topic_max);
    tlr_peers_fini(&s->peers);
    free(s);
}

size_t tlr_sub_peers(const tlr_sub *s)
{
    return tlr_peers_count(&s->peers);
}

void tlr_sub_stats_get(const tlr_sub *s, tlr_sub_stats *out)
{
    *out = s->stats;
}
