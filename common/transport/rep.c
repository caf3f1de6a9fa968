/* rep.c - the REP server (see tlr_rep.h for the contract).
 *
 * Design.  nng's cooked rep0 socket remembers which connection the last
 * received request came from; the next nng_sendmsg() answers it.  So each
 * request is handled start to finish -- receive, check, route, reply --
 * before the next one is taken, all on the loop thread.  The socket's
 * RECVFD is readable (level-triggered) while a request waits; one wake-up
 * takes at most BATCH requests so a flood cannot starve timers and other
 * fds -- the fd stays readable and the loop comes back.
 *
 * Replies are sent with a bounded blocking send (send_timeout_ms): rep0
 * only waits when the connection is still writing the previous reply to
 * the same peer, which takes microseconds unless that peer stops reading.
 * A reply that cannot be sent is counted and dropped; the requester's
 * resend timer asks again.
 */
#include "tlr_rep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/protocol/reqrep0/rep.h>

#include "tailor/v1/common.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"
#include "transport_peers.h"

#define BATCH 64
#define SEND_TIMEOUT_DEFAULT_MS 1000

struct tlr_rep_server {
    tlr_loop *loop;
    nng_socket sock;
    nng_listener listener;
    int fd;                     /* RECVFD, watched by loop; -1 if not */
    size_t max_msg;
    tlr_logger *log;
    char *sender;
    char *url;
    char *service;
    char *version;
    int64_t started_wall_ms;
    int64_t started_mono_ms;
    tlr_rep_route *routes;        /* the caller's table, then Ping if absent */
    size_t nroutes;
    Tailor__V1__PingResponse pong;   /* the built-in Ping's reply */
    tlr_rep_observe_fn observe;
    void *observe_arg;
    tlr_rep_stats stats;
    tlr_peers peers;              /* connections and their identities */
    bool tls;                     /* listening with TLS: authorize */
};

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The built-in Ping route: the reply lives in the server and is refilled
 * for every request, so there is nothing to free (reply_done NULL). */
static int ping_handle(void *arg, const ProtobufCMessage *req,
                       const char *request_id, ProtobufCMessage **reply,
                       tlr_status *st)
{
    tlr_rep_server *s = arg;
    Tailor__V1__PingResponse *r = &s->pong;
    tailor__v1__ping_response__init(r);
    r->service = s->service;
    r->replica_id = s->sender;
    r->version = s->version;
    r->contract_version = TLR_CONTRACT_VERSION;
    r->started_unix_ms = s->started_wall_ms;
    r->uptime_ms = tlr_mono_ms() - s->started_mono_ms;
    r->ready = true;
    r->leader = false;
    *reply = &r->base;
    return TLR_OK;
}

static const tlr_rep_route *route_find(const tlr_rep_server *s,
                                       const char *type)
{
    for (size_t i = 0; i < s->nroutes; i++)
        if (strcmp(s->routes[i].request->name, type) == 0)
            return &s->routes[i];
    return NULL;
}

/* Send reply (handed over).  Counts and logs a failure. */
static void send_reply(tlr_rep_server *s, nng_msg *reply,
                       const char *request_id)
{
    int rv = nng_sendmsg(s->sock, reply, 0);
    if (rv != 0) {
        nng_msg_free(reply);
        s->stats.send_errors++;
        TLR_WARN(s->log, "reply not sent", TLR_S("url", s->url),
                 TLR_S("request_id", request_id),
                 TLR_S("nng_error", nng_strerror(rv)));
    }
}

/* Answer with a Status; *counter is the stats row the rejection falls
 * under (by where it arose, not by code: a reply too big is the
 * handler's problem, a request too big the requester's). */
static void reply_error(tlr_rep_server *s, const tlr_status *st,
                        uint64_t *counter, const char *type,
                        const char *request_id)
{
    (*counter)++;
    s->stats.replies_error++;
    TLR_WARN(s->log, "request rejected", TLR_S("url", s->url),
             TLR_S("type", type), TLR_S("request_id", request_id),
             TLR_ERR(st->code), TLR_S("reason", st->message));

    nng_msg *m = NULL;
    if (tlr_envelope_pack_error(st, request_id, s->sender, &m) != TLR_OK) {
        s->stats.send_errors++;
        return;
    }
    send_reply(s, m, request_id);
}

/* Refuse a request longer than its route allows, before its payload is
 * decoded.  TLR_OK, or TLR_E_TOOBIG with st filled. */
static int check_request_size(const tlr_rep_server *s, const tlr_rep_route *r,
                              size_t len, tlr_status *st)
{
    size_t max = r->max_request > 0 && r->max_request < s->max_msg ? r->max_request
                                                                   : s->max_msg;
    if (len <= max)
        return TLR_OK;
    tlr_status_set(st, TLR_E_TOOBIG, NULL, "%s of %zu bytes exceeds the limit of %zu "
                   "bytes for this request type", r->request->name, len, max);
    return TLR_E_TOOBIG;
}

/* Authorization: may the peer that sent msg (borrowed) send r's type?
 * On false st says who was refused for what. */
static bool peer_allowed(tlr_rep_server *s, const tlr_rep_route *r, nng_msg *msg,
                         tlr_status *st)
{
    if (!s->tls)
        return true;
    char id[TLR_TLS_ID_MAX];
    if (tlr_peers_identity(&s->peers, nng_msg_get_pipe(msg), id) != TLR_OK) {
        tlr_status_set(st, TLR_E_AUTH, "Unauthorized", "%s refused: the peer's "
                       "connection carries no verified identity", r->request->name);
        return false;
    }
    if (tlr_tls_allowed(r->allow, id))
        return true;
    char allowed[256];
    tlr_tls_allow_str(r->allow, allowed, sizeof(allowed));
    tlr_status_set(st, TLR_E_AUTH, "Unauthorized", "identity \"%s\" may not send %s "
                   "(allowed: %s)", id, r->request->name, allowed);
    return false;
}

/* Call the route's handler on req (borrowed) and pack its reply.  On
 * TLR_OK *out is the packed reply, new and owned by the caller; otherwise
 * st says why. */
static int run_handler(tlr_rep_server *s, const tlr_rep_route *r,
                       const Tailor__V1__Envelope *env,
                       const ProtobufCMessage *req, nng_msg **out,
                       tlr_status *st)
{
    ProtobufCMessage *reply = NULL;
    nng_msg *m = NULL;

    tlr_status_clear(st);
    int rc = r->handle(r->arg, req, env->request_id, &reply, st);
    if (rc != TLR_OK) {
        if (st->code == TLR_OK)
            st->code = rc;
        if (st->message[0] == '\0')
            snprintf(st->message, sizeof(st->message), "%s failed: %s",
                     env->type, tlr_strerror(st->code));
        goto out;
    }
    if (reply == NULL) {
        tlr_status_set(st, TLR_E_INTERNAL, NULL,
                       "handler for %s returned no reply", env->type);
        rc = TLR_E_INTERNAL;
        goto out;
    }
    rc = tlr_envelope_pack(NULL, reply, env->request_id, s->sender, &m);
    if (rc != TLR_OK) {
        tlr_status_set(st, rc, NULL, "packing the %s reply failed",
                       reply->descriptor->name);
        goto out;
    }
    if (nng_msg_len(m) > s->max_msg) {
        tlr_status_set(st, TLR_E_TOOBIG, NULL, "reply %s of %zu bytes "
                       "exceeds the limit of %zu bytes",
                       reply->descriptor->name, nng_msg_len(m), s->max_msg);
        nng_msg_free(m);
        rc = TLR_E_TOOBIG;
        goto out;
    }
    *out = m;
out:
    if (reply != NULL && r->reply_done != NULL)
        r->reply_done(r->arg, reply);
    return rc;
}

/* Handle one received request (handed over) and reply to it. */
static void handle_one(tlr_rep_server *s, nng_msg *msg)
{
    double t0 = mono_seconds();
    char err[256];
    tlr_status st;
    Tailor__V1__Envelope *env = NULL;
    ProtobufCMessage *req = NULL;
    const char *type = "";
    const char *request_id = "";

    s->stats.requests++;
    int rc = tlr_envelope_unpack(nng_msg_body(msg), nng_msg_len(msg),
                                 s->max_msg, &env, err, sizeof(err));
    if (rc != TLR_OK) {
        tlr_status_set(&st, rc, NULL, "%s", err);
        reply_error(s, &st, rc == TLR_E_TOOBIG   ? &s->stats.toobig
                            : rc == TLR_E_VERSION ? &s->stats.version
                                                  : &s->stats.decode,
                    type, request_id);
        goto out;
    }
    type = env->type;
    request_id = env->request_id ? env->request_id : "";

    const tlr_rep_route *r = route_find(s, type);
    if (r == NULL) {
        rc = TLR_E_UNKNOWN_TYPE;
        tlr_status_set(&st, rc, NULL, "no handler for message type \"%s\" "
                       "on %s", type, s->url);
        reply_error(s, &st, &s->stats.unknown_type, type, request_id);
        goto out;
    }
    if (!peer_allowed(s, r, msg, &st)) {
        rc = TLR_E_AUTH;
        reply_error(s, &st, &s->stats.auth, type, request_id);
        goto out;
    }
    if ((rc = check_request_size(s, r, nng_msg_len(msg), &st)) != TLR_OK) {
        reply_error(s, &st, &s->stats.toobig, type, request_id);
        goto out;
    }
    rc = tlr_envelope_payload(env, r->request, &req, err, sizeof(err));
    if (rc == TLR_E_REMOTE) {
        rc = TLR_E_DECODE;
        tlr_status_set(&st, rc, NULL, "a %s request must not carry an "
                       "error status (%s)", type, err);
    } else if (rc != TLR_OK) {
        tlr_status_set(&st, rc, NULL, "%s", err);
    }
    if (rc != TLR_OK) {
        reply_error(s, &st, rc == TLR_E_TOOBIG ? &s->stats.toobig : &s->stats.decode, type,
                    request_id);
        goto out;
    }
    nng_msg *reply = NULL;
    rc = run_handler(s, r, env, req, &reply, &st);
    if (rc != TLR_OK) {
        rc = st.code;
        reply_error(s, &st, &s->stats.handler_errors, type, request_id);
        goto out;
    }
    s->stats.replies_ok++;
    send_reply(s, reply, request_id);
out:
    if (s->observe != NULL)
        s->observe(s->observe_arg, type, rc, mono_seconds() - t0);
    protobuf_c_message_free_unpacked(req, NULL);
    tailor__v1__envelope__free_unpacked(env, NULL);
    nng_msg_free(msg);
}

static void on_readable(tlr_loop *loop, int fd, void *arg)
{
    tlr_rep_server *s = arg;
    for (int i = 0; i < BATCH; i++) {
        nng_msg *msg = NULL;
        int rv = nng_recvmsg(s->sock, &msg, NNG_FLAG_NONBLOCK);
        if (rv == NNG_EAGAIN)
            return;
        if (rv != 0) {
            TLR_ERROR(s->log, "receive failed", TLR_S("url", s->url),
                      TLR_S("nng_error", nng_strerror(rv)));
            return;
        }
        handle_one(s, msg);
    }
}

/* Listen on s->url: with TLS (and identities) for tls+tcp://. */
static int rep_listen(tlr_rep_server *s, tlr_tls *tls)
{
    int rv;
    s->tls = tlr_tls_url(s->url);
    if (s->tls && tls == NULL) {
        TLR_ERROR(s->log, "a tls+tcp:// URL needs a certificate (--tls-ca, --tls-cert, "
                  "--tls-key)", TLR_S("url", s->url));
        return TLR_E_INVAL;
    }
    if (s->tls)
        tlr_peers_guard(&s->peers, NULL, s->log, s->url);   /* per type below */
    if (tlr_peers_watch(&s->peers, s->sock) != TLR_OK)
        return TLR_E_IO;
    rv = s->tls ? tlr_tls_listen(tls, s->sock, s->url, &s->listener)
                : nng_listen(s->sock, s->url, &s->listener, 0);
    if (rv != 0) {
        TLR_ERROR(s->log, "listen failed", TLR_S("url", s->url),
                  TLR_S("nng_error", nng_strerror(rv)));
        return rv == NNG_EINVAL || rv == NNG_EADDRINVAL ||
               rv == NNG_ENOTSUP ? TLR_E_INVAL : TLR_E_IO;
    }
    return TLR_OK;
}

static int check_routes(const tlr_rep_opts *o, tlr_logger *log)
{
    if (o->nroutes > 0 && o->routes == NULL)
        return TLR_E_INVAL;
    for (size_t i = 0; i < o->nroutes; i++) {
        const tlr_rep_route *r = &o->routes[i];
        if (r->request == NULL || r->handle == NULL) {
            TLR_ERROR(log, "route without descriptor or handler",
                      TLR_I("route", i));
            return TLR_E_INVAL;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(o->routes[j].request->name, r->request->name) == 0) {
                TLR_ERROR(log, "two routes for one type",
                          TLR_S("type", r->request->name));
                return TLR_E_INVAL;
            }
        }
    }
    return TLR_OK;
}

int tlr_rep_server_create(tlr_loop *loop, const tlr_rep_opts *o,
                          tlr_rep_server **out)
{
    if (loop == NULL || o == NULL || out == NULL || o->listen == NULL ||
        o->listen[0] == '\0')
        return TLR_E_INVAL;
    int rc = check_routes(o, o->log);
    if (rc != TLR_OK)
        return rc;

    tlr_rep_server *s = tlr_calloc(1, sizeof(*s));
    s->loop = loop;
    s->fd = -1;
    s->log = o->log;
    s->max_msg = o->max_msg ? o->max_msg : TLR_MSG_MAX_DEFAULT;
    s->sender = tlr_strdup(o->sender ? o->sender : "");
    s->url = tlr_strdup(o->listen);
    s->observe = o->observe;
    s->observe_arg = o->observe_arg;
    s->service = tlr_strdup(o->service ? o->service : "");
    s->version = tlr_strdup(o->version ? o->version : "");
    s->started_wall_ms = tlr_wall_ms();
    s->started_mono_ms = tlr_mono_ms();
    s->routes = tlr_calloc(o->nroutes + 1, sizeof(*s->routes));
    if (o->nroutes > 0)
        memcpy(s->routes, o->routes, o->nroutes * sizeof(*s->routes));
    s->nroutes = o->nroutes;
    if (route_find(s, tailor__v1__ping_request__descriptor.name) == NULL) {
        s->routes[s->nroutes++] = (tlr_rep_route){
            .request = &tailor__v1__ping_request__descriptor,
            .handle = ping_handle,
            .arg = s,
            .max_request = TLR_REQ_MAX_PING,
        };
    }

    int rv = nng_rep0_open(&s->sock);
    if (rv != 0) {
        TLR_ERROR(s->log, "rep socket open failed",
                  TLR_S("nng_error", nng_strerror(rv)));
        rc = TLR_E_IO;
        goto fail;
    }
    int send_ms = o->send_timeout_ms > 0 ? o->send_timeout_ms
                                         : SEND_TIMEOUT_DEFAULT_MS;
    if ((rv = nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ,
                                  s->max_msg)) != 0 ||
        (rv = nng_socket_set_ms(s->sock, NNG_OPT_SENDTIMEO, send_ms)) != 0) {
        TLR_ERROR(s->log, "rep socket options failed",
                  TLR_S("nng_error", nng_strerror(rv)));
        rc = TLR_E_IO;
        goto fail;
    }
    if ((rc = rep_listen(s, o->tls)) != TLR_OK)
        goto fail;
    /* With port 0 nng reports the bound URL: log that one. */
    char *bound = NULL;
    if (nng_listener_get_string(s->listener, NNG_OPT_URL, &bound) == 0) {
        free(s->url);
        s->url = tlr_strdup(bound);
        nng_strfree(bound);
    }
    int fd = -1;
    if ((rv = nng_socket_get_int(s->sock, NNG_OPT_RECVFD, &fd)) != 0) {
        TLR_ERROR(s->log, "rep socket has no receive fd",
                  TLR_S("nng_error", nng_strerror(rv)));
        rc = TLR_E_IO;
        goto fail;
    }
    if ((rc = tlr_loop_add_fd(loop, fd, on_readable, s)) != TLR_OK)
        goto fail;
    s->fd = fd;
    TLR_INFO(s->log, "serving", TLR_S("url", s->url), TLR_B("tls", s->tls),
             TLR_I("port", tlr_rep_server_port(s)),
             TLR_I("routes", (long long)s->nroutes));
    *out = s;
    return TLR_OK;
fail:
    tlr_rep_server_free(s);
    return rc;
}

void tlr_rep_server_free(tlr_rep_server *s)
{
    if (s == NULL)
        return;
    if (s->fd >= 0)
        tlr_loop_remove_fd(s->loop, s->fd);
    if (nng_socket_id(s->sock) > 0)
        nng_close(s->sock);
    tlr_peers_fini(&s->peers);
    free(s->routes);
    free(s->sender);
    free(s->url);
    free(s->service);
    free(s->version);
    free(s);
}

void tlr_rep_server_stats(const tlr_rep_server *s, tlr_rep_stats *out)
{
    *out = s->stats;
}

int tlr_rep_server_port(const tlr_rep_server *s)
{
    int port = 0;
    if (nng_listener_get_int(s->listener, NNG_OPT_TCP_BOUND_PORT, &port) != 0)
        return 0;
    return port;
}
