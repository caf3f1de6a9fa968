/* tlr_envelope.h - the frame around every message tailor's services send.
 *
 * Every nng message (req/rep and pub/sub) carries exactly one
 * tailor.v1.Envelope (proto/tailor/v1/envelope.proto).  A receiver checks
 * the size, that the bytes decode, the contract version and the type before
 * it decodes the payload, and answers what it does not understand with a
 * Status, never a crash.  These functions are the only place that knows
 * the framing; tlr_rep, tlr_req and tlr_pubsub are built on them.
 *
 *   nng_msg *m;
 *   tlr_envelope_pack(NULL, &solve_req.base, "r-17", "launcher/a/1", &m);
 *   ...
 *   Tailor__V1__Envelope *env;
 *   if (tlr_envelope_unpack(buf, len, max, &env, err, sizeof err) == TLR_OK &&
 *       tlr_envelope_payload(env, &tailor__v1__solve_request__descriptor,
 *                            &msg, err, sizeof err) == TLR_OK) ...
 */
#ifndef TLR_ENVELOPE_H
#define TLR_ENVELOPE_H

#include <stddef.h>

#include <nng/nng.h>
#include <protobuf-c/protobuf-c.h>

#include "tailor/v1/envelope.pb-c.h"

/* The major contract version this build speaks (tailor.v1). */
#define TLR_CONTRACT_VERSION 1u
/* The type of an error reply; its payload is empty, status is set. */
#define TLR_STATUS_TYPE "tailor.v1.Status"
/* The default ceiling on one message (envelope included): 64 MiB. */
#define TLR_MSG_MAX_DEFAULT ((size_t)64 << 20)

/* Bounded decoding.  protobuf-c allocates as it decodes, and a small wire
 * can ask for a lot: an empty repeated message is 2 bytes on the wire and
 * a few hundred decoded (a Pod struct alone is 384 bytes), so 8 MiB of
 * them would need over a GiB.  Every unpack here -- the envelope, a
 * payload, a subscriber's message -- runs with a budget of
 *     TLR_DECODE_RATIO * wire bytes + TLR_DECODE_SLACK
 * of memory live at once (malloc's usable sizes, protobuf-c's scratch
 * included).  Real messages need a few times their wire size (a fully
 * populated one about 2x; one of mostly empty pods up to ~10x); past the
 * budget the unpack stops and the caller gets TLR_E_TOOBIG. */
#define TLR_DECODE_RATIO 16
#define TLR_DECODE_SLACK ((size_t)1 << 20)

/* TLR_DECODE_RATIO * wire + TLR_DECODE_SLACK, saturating. */
size_t tlr_decode_budget(size_t wire);

/* The envelope itself is a handful of scalars and strings around the
 * payload bytes: it decodes to about its wire size, so its budget is
 * tighter -- 2 * wire + 64 KiB.  Otherwise a 64 MiB envelope made of one
 * field repeated millions of times would hold ~1 GiB of protobuf-c's
 * per-field scratch before the per-type limits (tlr_rep.h) could look at
 * its type. */
#define TLR_ENVELOPE_BUDGET(wire) ((wire) * 2 + ((size_t)64 << 10))

/* Unpack buf[0..len) (borrowed) as desc with at most budget bytes live.
 * On TLR_OK *out is new and owned: protobuf_c_message_free_unpacked(*out,
 * NULL).  *peak (may be NULL) is the most memory it held, also on failure.
 * Errors: TLR_E_TOOBIG (the budget ran out), TLR_E_DECODE (malformed). */
int tlr_unpack_bounded(const ProtobufCMessageDescriptor *desc, const void *buf, size_t len,
                       size_t budget, ProtobufCMessage **out, size_t *peak);

/* An outcome carried across the transport: a TLR_E_* code plus the words a
 * person needs.  Mirrors tailor.v1.Status. */
typedef struct tlr_status {
    int  code;          /* TLR_OK or a TLR_E_* code (possibly a remote one) */
    char reason[64];    /* short machine-readable reason; "" when none */
    char message[512];  /* human-readable, names the object concerned */
} tlr_status;

/* Fill st (NULL is fine: then nothing happens).  reason may be NULL. */
void tlr_status_set(tlr_status *st, int code, const char *reason,
                    const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void tlr_status_clear(tlr_status *st);   /* code TLR_OK, empty strings */

/* Pack payload into an Envelope in a new nng message.
 * type: borrowed; NULL means payload->descriptor->name (the full protobuf
 * name, e.g. "tailor.v1.SolveRequest").  payload, request_id, sender:
 * borrowed; request_id and sender may be NULL (sent empty).
 * On TLR_OK *out is new and owned by the caller (nng_msg_free, or hand it
 * to nng_sendmsg).  Errors: TLR_E_INVAL (payload NULL). */
int tlr_envelope_pack(const char *type, const ProtobufCMessage *payload,
                      const char *request_id, const char *sender,
                      nng_msg **out);

/* Pack an error reply: type "tailor.v1.Status", empty payload, status
 * {code, message, reason = tlr_errname(code)}.  message, request_id and
 * sender are borrowed and may be NULL.  On TLR_OK *out is new and owned. */
int tlr_envelope_pack_status(int code, const char *message,
                             const char *request_id, const char *sender,
                             nng_msg **out);

/* Like tlr_envelope_pack_status() but from a tlr_status (borrowed); an
 * empty st->reason becomes tlr_errname(st->code). */
int tlr_envelope_pack_error(const tlr_status *st, const char *request_id,
                            const char *sender, nng_msg **out);

/* Decode and check the envelope in buf[0..len) (borrowed).
 * max_size: the ceiling on len; 0 means TLR_MSG_MAX_DEFAULT.
 * On TLR_OK *out is new and owned by the caller: free it with
 * tailor__v1__envelope__free_unpacked(*out, NULL).
 * Errors (err, errlen >= 1, gets a one-line reason; err may be NULL):
 *   TLR_E_TOOBIG   len > max_size, or decoding needs more than the budget
 *   TLR_E_DECODE   the bytes are not a protobuf Envelope, or it has no type
 *   TLR_E_VERSION  contract_version is not TLR_CONTRACT_VERSION */
int tlr_envelope_unpack(const void *buf, size_t len, size_t max_size,
                        Tailor__V1__Envelope **out, char *err, size_t errlen);

/* Decode env's payload (env borrowed) as the message want describes.
 * On TLR_OK *out is new and owned by the caller: free it with
 * protobuf_c_message_free_unpacked(*out, NULL).
 * Errors (err as above):
 *   TLR_E_REMOTE        env carries a non-zero status; err = its message
 *                       (read env->status->code for the remote code)
 *   TLR_E_UNKNOWN_TYPE  env->type is not want->name
 *   TLR_E_TOOBIG        decoding needs more memory than the budget
 *                       (tlr_decode_budget of the payload size)
 *   TLR_E_DECODE        the payload bytes do not decode */
int tlr_envelope_payload(const Tailor__V1__Envelope *env,
                         const ProtobufCMessageDescriptor *want,
                         ProtobufCMessage **out, char *err, size_t errlen);

#endif
