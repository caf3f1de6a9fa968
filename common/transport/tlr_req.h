/* tlr_req.h - a REQ client: one synchronous call to any of N replicas.
 *
 * The client's nng req socket dials every URL in the background (an absent
 * replica is redialled by nng until it appears) and spreads requests over
 * the connected replicas, round-robin.  tlr_req_call() packs the request
 * in an Envelope, waits for the reply and decodes it.
 *
 * Timeouts and retries.  Each call has a per-attempt timeout T and a
 * number of retries R; it gives up after T * (R + 1).  nng does the
 * retrying (NNG_OPT_REQ_RESENDTIME = T): a request that got no reply
 * within T is sent again, to the next replica.  Independently of R, when
 * the connection carrying a request closes (the replica died), nng 1.5.2
 * resends it at once on another connection -- a killed replica costs a
 * reconnect, not a timeout.  So a request may reach a server more than
 * once: only use this for idempotent requests (every tailor request is).
 *
 * Use from one thread at a time (the client holds one nng context and one
 * aio).  The call blocks that thread for up to T * (R + 1).
 */
#ifndef TLR_REQ_H
#define TLR_REQ_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "tlr_envelope.h"
#include "tlr_log.h"
#include "tlr_tls.h"

typedef struct tlr_req_client tlr_req_client;

typedef struct tlr_req_opts {
    const char *const *urls;  /* nng URLs, borrowed; at least one */
    size_t nurls;
    int timeout_ms;           /* per attempt; 0 = 5000 */
    int retries;              /* resends after a silent attempt; < 0 = 0 */
    size_t max_msg;           /* request and reply ceiling; 0 = 64 MiB */
    tlr_logger *log;          /* borrowed; NULL logs to stderr */
    const char *sender;       /* copied; put in every request envelope */
    /* For tls+tcp:// URLs (required there; borrowed, must outlive the
     * client): our certificate, and the server identities accepted
     * (NULL-terminated, borrowed; NULL = any verified peer). */
    tlr_tls *tls;
    const char *const *allow;
    /* Connection age limit, ms; 0 = keep connections.  Before a call, when
     * another connection is up, the oldest one past this age that has
     * served a call is closed and nng redials it.  Behind a Kubernetes Service each dial may land on
     * another replica, so replicas added since (a scaled-out solver) get a
     * share of the calls -- gRPC's MAX_CONNECTION_AGE, from the client.
     * Nothing is in flight then (one call at a time), so nothing is lost. */
    int max_conn_age_ms;
} tlr_req_opts;

typedef struct tlr_req_stats tlr_req_stats;

typedef struct tlr_req_stats {
    uint64_t calls;
    uint64_t ok;
    uint64_t timeouts;        /* TLR_E_TIMEOUT */
    uint64_t unavailable;     /* TLR_E_UNAVAILABLE */
    uint64_t remote_errors;   /* TLR_E_REMOTE */
    uint64_t bad_replies;     /* DECODE, VERSION, UNKNOWN_TYPE, TOOBIG */
    uint64_t recycled;        /* connections closed for their age */
} tlr_req_stats;

/* Open the socket and start dialling every URL.  On TLR_OK *out is new
 * and owned: free with tlr_req_client_free().  Errors: TLR_E_INVAL (no
 * URLs, a URL nng cannot parse or has no transport for, a tls+tcp:// URL
 * without o->tls), TLR_E_IO. */
int  tlr_req_client_create(const tlr_req_opts *o, tlr_req_client **out);
/* NULL is fine.  Known nng 1.5.2 limit: freeing a client whose dial is in
 * the middle of its connection handshake leaks that half-made connection
 * (a few hundred bytes, once).  Services keep their clients for the life
 * of the process, so this only shows in short-lived test clients. */
void tlr_req_client_free(tlr_req_client *c);

/* Send req (borrowed) and wait for a reply of type reply_desc (borrowed).
 * timeout_ms: per attempt for this call; 0 = the client's.
 * On TLR_OK *reply is new and owned by the caller: free it with
 * protobuf_c_message_free_unpacked(*reply, NULL); st (may be NULL) is
 * cleared.  On error *reply is untouched and st says why:
 *   TLR_E_TOOBIG       the packed request exceeds max_msg (nothing sent)
 *   TLR_E_UNAVAILABLE  no replica was connected for the whole call
 *   TLR_E_TIMEOUT      replicas were connected but none replied in time
 *   TLR_E_REMOTE       the server replied with a Status: st->code is the
 *                      REMOTE code (e.g. TLR_E_UNKNOWN_TYPE, TLR_E_CAPACITY),
 *                      st->reason and st->message are the server's words
 *   TLR_E_DECODE / TLR_E_VERSION / TLR_E_UNKNOWN_TYPE
 *                      the reply itself was bad (not an Envelope, wrong
 *                      contract version, not a reply_desc)
 * For every code but TLR_E_REMOTE, st->code is the returned code. */
int  tlr_req_call(tlr_req_client *c, const ProtobufCMessage *req,
                  const ProtobufCMessageDescriptor *reply_desc, int timeout_ms,
                  ProtobufCMessage **reply, tlr_status *st);

/* Connections currently open (or being set up) to replicas. */
size_t tlr_req_client_peers(const tlr_req_client *c);
/* Wait until at least n connections are open: TLR_OK or TLR_E_TIMEOUT. */
int  tlr_req_client_wait(const tlr_req_client *c, size_t n, int timeout_ms);

void tlr_req_client_stats(const tlr_req_client *c, tlr_req_stats *out);

#endif
