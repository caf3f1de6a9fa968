/* tlr_pubsub.h - topics: a publisher and loop-driven subscribers.
 *
 * One message on the wire is the topic, one NUL byte, then the Envelope:
 *
 *   "pending" 0x00 <tailor.v1.Envelope bytes>
 *
 * A subscriber subscribes to the prefix "<topic>\0", so "pending" never
 * matches "pending-v2".  Publishing never blocks: nng's pub drops a
 * message for a subscriber whose queue is full, and a subscriber only
 * gets what was published after its connection was set up -- everything
 * earlier is gone.  tailor's topics are level-triggered (every message
 * carries the complete state), so a lost message only delays; receivers
 * must not rely on seeing every message.
 *
 * A subscriber checks each message like a REP server checks a request
 * (size -- the topic's own limit when it has one --, decode within the
 * decode budget of tlr_envelope.h, contract version); what fails is logged
 * at warn, counted and dropped, and the subscriber carries on.
 */
#ifndef TLR_PUBSUB_H
#define TLR_PUBSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "tlr_envelope.h"
#include "tlr_log.h"
#include "tlr_loop.h"
#include "tlr_tls.h"

/* The longest topic name. */
#define TLR_TOPIC_MAX 64

/* Per-topic envelope limits (tlr_sub_opts.topic_max).  "pending" and
 * "cluster" carry whole cluster states and keep max_msg; "decisions" is
 * one short record per pending pod (~200 bytes): 16 MiB is 80k pods. */
#define TLR_TOPIC_MAX_DECISIONS ((size_t)16 << 20)

typedef struct tlr_pub tlr_pub;
typedef struct tlr_sub tlr_sub;

typedef struct tlr_pub_stats {
    uint64_t sent;       /* handed to nng (which may still drop per peer) */
    uint64_t failed;     /* too big, bad topic, or nng refused */
} tlr_pub_stats;

/* Listen on listen_url (borrowed; tcp port 0 picks one).  max_msg: 0 =
 * TLR_MSG_MAX_DEFAULT.  log borrowed (NULL: stderr); sender copied.
 * On TLR_OK *out is new and owned: free with tlr_pub_free().
 * Errors: TLR_E_INVAL (bad URL), TLR_E_IO. */
int  tlr_pub_create(const char *listen_url, size_t max_msg, tlr_logger *log,
                    const char *sender, tlr_pub **out);
void tlr_pub_free(tlr_pub *p);   /* NULL is fine */

/* The same, but the publisher dials url (in the background, reconnecting
 * as a subscriber does) where a subscriber listens (tlr_sub_opts.listen):
 * for many publishers -- the replicas of a service -- and one subscriber.
 * tlr_pub_port() is 0.  Errors: TLR_E_INVAL (bad URL), TLR_E_IO. */
int  tlr_pub_dial(const char *url, size_t max_msg, tlr_logger *log,
                  const char *sender, tlr_pub **out);

/* Everything about a publisher; tlr_pub_create and tlr_pub_dial are this
 * without TLS. */
typedef struct tlr_pub_opts {
    const char *url;            /* borrowed */
    bool dial;                  /* dial url (tlr_pub_dial) instead of listening */
    size_t max_msg;             /* 0 = TLR_MSG_MAX_DEFAULT */
    tlr_logger *log;            /* borrowed; NULL: stderr */
    const char *sender;         /* copied */
    tlr_tls *tls;               /* required for tls+tcp://; borrowed, must
                                 * outlive the publisher */
    const char *const *allow;   /* subscriber (or, dialling, listener)
                                 * identities served over TLS;
                                 * NULL-terminated, borrowed; NULL = any
                                 * verified peer.  Others are disconnected
                                 * before they see a message. */
} tlr_pub_opts;

/* On TLR_OK *out is new and owned: tlr_pub_free().  Errors: TLR_E_INVAL
 * (bad URL, tls+tcp:// without o->tls), TLR_E_IO. */
int  tlr_pub_open(const tlr_pub_opts *o, tlr_pub **out);

/* Publish msg (borrowed) on topic (borrowed; 1..TLR_TOPIC_MAX bytes).
 * Returns once nng has the message.  Errors: TLR_E_INVAL (bad topic),
 * TLR_E_TOOBIG (framed message over max_msg), TLR_E_IO. */
int  tlr_pub_send(tlr_pub *p, const char *topic, const ProtobufCMessage *msg);

int    tlr_pub_port(const tlr_pub *p);    /* bound TCP port; 0 if not TCP */
size_t tlr_pub_peers(const tlr_pub *p);   /* subscribers connected */
void   tlr_pub_stats_get(const tlr_pub *p, tlr_pub_stats *out);

/* Called on the loop thread for every good message.  topic and env are
 * borrowed for the call.  Decode the payload with tlr_envelope_payload(). */
typedef void (*tlr_sub_fn)(void *arg, const char *topic,
                           const Tailor__V1__Envelope *env);

typedef struct tlr_sub_opts {
    const char *const *urls;    /* publishers to dial; borrowed */
    size_t nurls;
    const char *const *topics;  /* borrowed; at least one */
    size_t ntopics;
    size_t max_msg;             /* 0 = TLR_MSG_MAX_DEFAULT */
    tlr_logger *log;            /* borrowed; NULL logs to stderr */
    tlr_sub_fn fn;
    void *arg;                  /* borrowed, passed to fn */
    bool listen;                /* listen on urls for dialing publishers
                                   (tlr_pub_dial) instead of dialing them */
    const size_t *topic_max;    /* borrowed; NULL or ntopics entries: the
                                   largest envelope of each topic, 0 = max_msg */
    tlr_tls *tls;               /* required for tls+tcp:// URLs; borrowed,
                                   must outlive the subscriber */
    const char *const *allow;   /* publisher identities accepted over TLS;
                                   NULL-terminated, borrowed; NULL = any
                                   verified peer */
} tlr_sub_opts;

typedef struct tlr_sub_stats {
    uint64_t received;   /* messages taken off the socket */
    uint64_t delivered;  /* passed to fn */
    uint64_t dropped;    /* bad framing, too big, garbage, wrong version */
} tlr_sub_stats;

/* Dial every URL in the background (or listen on each, o->listen), subscribe to every topic and watch
 * the socket on loop (borrowed; must outlive the subscriber).  On TLR_OK
 * *out is new and owned: free with tlr_sub_free().
 * Errors: TLR_E_INVAL (no URL, no topic, bad topic, bad URL), TLR_E_IO
 * (a listen address in use). */
int  tlr_sub_create(tlr_loop *loop, const tlr_sub_opts *o, tlr_sub **out);
void tlr_sub_free(tlr_sub *s);   /* NULL is fine */

size_t tlr_sub_peers(const tlr_sub *s);   /* publishers connected */
void   tlr_sub_stats_get(const tlr_sub *s, tlr_sub_stats *out);

/* Decode one published message body[0..len) (borrowed): the topic up to
 * its NUL (copied into topic, 1..TLR_TOPIC_MAX bytes), then the Envelope
 * (checked as tlr_envelope_unpack does, max_size as there).  On TLR_OK
 * *env is new and owned (tailor__v1__envelope__free_unpacked).  Errors:
 * TLR_E_DECODE with topic[0] == '\0' when there is no topic; otherwise
 * tlr_envelope_unpack's, err saying why. */
int tlr_sub_decode(const void *body, size_t len, size_t max_size,
                   char topic[TLR_TOPIC_MAX + 1], Tailor__V1__Envelope **env,
                   char *err, size_t errlen);

#endif
