/* tlr_rep.h - a REP server on the event loop: one route per request type.
 *
 * The server listens on one nng URL, joins the socket's NNG_OPT_RECVFD to
 * a tlr_loop and, on the loop thread, takes each request, checks its
 * envelope, finds the route for its type, calls the handler and sends the
 * reply.  It ALWAYS replies to a request it received:
 *
 *   bytes that are not an Envelope          Status DECODE
 *   contract_version != 1                   Status VERSION
 *   a type with no route                    Status UNKNOWN_TYPE (names it)
 *   a peer identity the route does not allow Status AUTH (names both)
 *   payload that does not decode            Status DECODE
 *   a request carrying an error status      Status DECODE
 *   envelope bigger than max_msg            Status TOOBIG (see below)
 *   request bigger than its route's         Status TOOBIG (names the type
 *     max_request                             and both sizes)
 *   payload needing more memory to decode   Status TOOBIG ("decode budget",
 *     than its budget                         tlr_envelope.h)
 *   handler error                           Status {handler's code, msg}
 *   reply bigger than max_msg               Status TOOBIG
 *
 * and logs one warn line per rejection.  Bad input never stops it.
 *
 * Oversize requests over TCP/IPC: max_msg is also the socket's
 * NNG_OPT_RECVMAXSZ, and nng 1.5.2's stream transports close the
 * connection when a frame header announces more than that -- before any
 * byte reaches us.  There is nothing to reply to; the requester sees its
 * pipe close, nng's req resends the request on the next connection (which
 * is closed again), and the requester finally times out.  tlr_req_call()
 * refuses to send a request bigger than its own max_msg, so a client and
 * server configured alike never get there.  inproc does not enforce
 * RECVMAXSZ; there the envelope check answers TOOBIG.
 *
 * Handlers run on the loop thread, one request at a time, and should be
 * quick: a slow handler holds up the loop.
 *
 * Ping.  Every server answers tailor.v1.PingRequest with a PingResponse
 * (service, replica_id = sender, version, contract_version, uptime,
 * ready = true, leader = false) unless the route table has its own
 * PingRequest route -- a service that knows about readiness or a Lease
 * registers one and it takes precedence.
 */
#ifndef TLR_REP_H
#define TLR_REP_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "tlr_envelope.h"
#include "tlr_log.h"
#include "tlr_loop.h"
#include "tlr_tls.h"

typedef struct tlr_rep_server tlr_rep_server;

/* One request type and what answers it.
 *
 * Ownership of a reply: the handler builds *reply however it likes (on the
 * stack of its context, in an arena, with malloc) and LENDS it to the
 * server.  The server packs it, then calls reply_done(arg, reply) -- the
 * handler's "end of the pass" hook, where it frees the reply or resets its
 * arena.  reply_done may be NULL when nothing needs freeing (the reply
 * lives in storage the handler reuses).  reply_done is also called when
 * the handler returns an error but still set *reply. */
typedef struct tlr_rep_route {
    /* The request message type; its name is matched against the
     * envelope type.  Borrowed (protoc-c descriptors are static). */
    const ProtobufCMessageDescriptor *request;
    /* Answer one request.  req and request_id are borrowed for the call
     * (the server frees req afterwards).  On TLR_OK set *reply (lent, see
     * above).  On error return a TLR_E_* code and fill st (code, message,
     * optional reason); the server replies with that Status.  st->code
     * left at 0 means "use the return value". */
    int (*handle)(void *arg, const ProtobufCMessage *req,
                  const char *request_id, ProtobufCMessage **reply,
                  tlr_status *st);
    void (*reply_done)(void *arg, ProtobufCMessage *reply);   /* may be NULL */
    void *arg;                                       /* borrowed */
    /* The largest request of this type, envelope included, checked before
     * the payload is decoded (whose memory is then bounded by
     * tlr_decode_budget of it); 0 = the server's max_msg.  Set it to what
     * the type can legitimately need: a Launch is kilobytes, a Solve may
     * be the whole cluster. */
    size_t max_request;
    /* Over TLS: the peer identities that may send this request type
     * (NULL-terminated, borrowed, must outlive the server); NULL = any
     * verified peer.  Any other identity is answered Status AUTH naming
     * the identity and the type.  Ignored for pipes without TLS. */
    const char *const *allow;
} tlr_rep_route;

/* Per-type request ceilings the services use (see max_request). */
#define TLR_REQ_MAX_PING   ((size_t)4 << 10)     /* PingRequest: empty */
#define TLR_REQ_MAX_SMALL  ((size_t)64 << 10)    /* Snapshot, Explain, Catalog */
#define TLR_REQ_MAX_CLAIMS ((size_t)1 << 20)     /* Launch, Terminate: a burst of
                                                  * claims, each a few KiB */

/* Called after every request (answered or rejected), e.g. for metrics.
 * type: the envelope type or "" when it did not decode (borrowed for the
 * call); code: TLR_OK or the code replied; seconds: time spent. */
typedef void (*tlr_rep_observe_fn)(void *arg, const char *type, int code,
                                   double seconds);

typedef struct tlr_rep_opts {
    const char *listen;            /* nng URL, e.g. "tls+tcp://0.0.0.0:7100";
                                    * port 0 picks one (tlr_rep_server_port) */
    size_t max_msg;                /* 0 = TLR_MSG_MAX_DEFAULT (64 MiB) */
    int send_timeout_ms;           /* how long a reply may wait for a busy
                                    * connection; 0 = 1000 */
    tlr_logger *log;               /* borrowed; NULL logs to stderr */
    const char *sender;            /* copied; put in every reply envelope
                                    * and the Ping replica_id */
    const char *service;           /* copied; Ping's service, e.g. "solver" */
    const char *version;           /* copied; Ping's software version */
    const tlr_rep_route *routes;   /* copied (the table, not the args) */
    size_t nroutes;
    tlr_rep_observe_fn observe;    /* may be NULL */
    void *observe_arg;
    tlr_tls *tls;                  /* required for a tls+tcp:// listen URL;
                                    * borrowed, must outlive the server */
} tlr_rep_opts;

typedef struct tlr_rep_stats {
    uint64_t requests;        /* messages taken off the socket */
    uint64_t replies_ok;      /* answered by a route */
    uint64_t replies_error;   /* answered with a Status (all rows below) */
    uint64_t toobig;          /* ...because the request was too big (for
                               * max_msg, its type, or its decode budget) */
    uint64_t decode;          /* ...because it (or its payload) was garbage,
                               * or a request carried an error status */
    uint64_t version;         /* ...because of the contract version */
    uint64_t unknown_type;    /* ...because no route had its type */
    uint64_t handler_errors;  /* ...because the handler failed or its reply
                               * was unusable (none, over max_msg) */
    uint64_t send_errors;     /* replies nng could not send (peer gone/slow) */
    uint64_t auth;            /* ...because the peer's identity may not
                               * send that type (Status AUTH) */
} tlr_rep_stats;

/* Listen on o->listen and watch the socket on loop (borrowed; must outlive
 * the server).  On TLR_OK *out is new and owned: free with
 * tlr_rep_server_free().  Errors: TLR_E_INVAL (no URL, a route without a
 * descriptor or handler, two routes for one type, a tls+tcp:// URL without
 * o->tls), TLR_E_IO (nng could not open or listen; the message is logged).
 * Over TLS a client must present a certificate from the CA; a client
 * without one never gets a connection. */
int  tlr_rep_server_create(tlr_loop *loop, const tlr_rep_opts *o,
                           tlr_rep_server **out);
/* Stop listening, leave the loop, close the socket.  NULL is fine. */
void tlr_rep_server_free(tlr_rep_server *s);

/* Copy the counters into *out. */
void tlr_rep_server_stats(const tlr_rep_server *s, tlr_rep_stats *out);

/* The TCP port actually bound (useful with port 0); 0 if not TCP. */
int  tlr_rep_server_port(const tlr_rep_server *s);

#endif
