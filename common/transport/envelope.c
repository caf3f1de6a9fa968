/* envelope.c - pack and check the Envelope frame (see tlr_envelope.h).
 *
 * Packing serialises the payload first, then the Envelope around it,
 * straight into the body of a new nng message.  Unpacking checks, in this
 * order: size ceiling, protobuf decode, contract version, type present --
 * so a receiver can answer each kind of bad input with its own code.
 *
 * Every unpack goes through a counting ProtobufCAllocator (see "Bounded
 * decoding" in tlr_envelope.h).  It hands out plain malloc() blocks, so
 * what it decoded is freed as usual with the NULL (system) allocator; it
 * only refuses a block that would take the live total past the budget,
 * which protobuf-c turns into a failed unpack, freeing what it had built.
 */
#include "tlr_envelope.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"

void tlr_status_set(tlr_status *st, int code, const char *reason,
                    const char *fmt, ...)
{
    if (st == NULL)
        return;
    st->code = code;
    snprintf(st->reason, sizeof(st->reason), "%s", reason ? reason : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof(st->message), fmt, ap);
    va_end(ap);
}

void tlr_status_clear(tlr_status *st)
{
    if (st == NULL)
        return;
    st->code = TLR_OK;
    st->reason[0] = '\0';
    st->message[0] = '\0';
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

typedef struct alloc_budget {
    size_t limit, live, peak;
    bool exceeded;
} alloc_budget;

static void *budget_alloc(void *arg, size_t size)
{
    alloc_budget *b = arg;
    if (size > b->limit - b->live) {
        b->exceeded = true;
        return NULL;
    }
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        return NULL;
    b->live += malloc_usable_size(p);
    if (b->live > b->peak)
        b->peak = b->live;
    if (b->live > b->limit) {   /* malloc rounded it past the limit */
        b->exceeded = true;
        b->live -= malloc_usable_size(p);
        free(p);
        return NULL;
    }
    return p;
}

static void budget_free(void *arg, void *p)
{
    alloc_budget *b = arg;
    if (p == NULL)
        return;
    b->live -= malloc_usable_size(p);
    free(p);
}

size_t tlr_decode_budget(size_t wire)
{
    if (wire > (SIZE_MAX - TLR_DECODE_SLACK) / TLR_DECODE_RATIO)
        return SIZE_MAX;
    return wire * TLR_DECODE_RATIO + TLR_DECODE_SLACK;
}

int tlr_unpack_bounded(const ProtobufCMessageDescriptor *desc, const void *buf, size_t len,
                       size_t limit, ProtobufCMessage **out, size_t *peak)
{
    alloc_budget b = { .limit = limit };
    ProtobufCAllocator a = { budget_alloc, budget_free, &b };
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, &a, len, buf);
    if (peak != NULL)
        *peak = b.peak;
    if (m == NULL)
        return b.exceeded ? TLR_E_TOOBIG : TLR_E_DECODE;
    *out = m;
    return TLR_OK;
}

/* protobuf-c packs a const message; its string fields are plain char *. */
static char *str_or_empty(const char *s)
{
    return (char *)(s ? s : "");
}

/* Serialise env into the body of a new nng message. */
static int pack_frame(const Tailor__V1__Envelope *env, nng_msg **out)
{
    size_t n = protobuf_c_message_get_packed_size(&env->base);
    nng_msg *m = NULL;
    if (nng_msg_alloc(&m, n) != 0)
        return TLR_E_NOMEM;
    size_t got = protobuf_c_message_pack(&env->base, nng_msg_body(m));
    if (got != n) {
        /* protobuf-c computed one size and wrote another: a library bug. */
        nng_msg_free(m);
        return TLR_E_INTERNAL;
    }
    *out = m;
    return TLR_OK;
}

int tlr_envelope_pack(const char *type, const ProtobufCMessage *payload,
                      const char *request_id, const char *sender,
                      nng_msg **out)
{
    if (payload == NULL || payload->descriptor == NULL || out == NULL)
        return TLR_E_INVAL;

    int rc;
    size_t plen = protobuf_c_message_get_packed_size(payload);
    uint8_t *pbuf = tlr_malloc(plen ? plen : 1);
    protobuf_c_message_pack(payload, pbuf);

    Tailor__V1__Envelope env = TAILOR__V1__ENVELOPE__INIT;
    env.contract_version = TLR_CONTRACT_VERSION;
    env.type = str_or_empty(type ? type : payload->descriptor->name);
    env.payload.data = pbuf;
    env.payload.len = plen;
    env.request_id = str_or_empty(request_id);
    env.sender = str_or_empty(sender);
    env.sent_unix_ms = tlr_wall_ms();

    rc = pack_frame(&env, out);
    free(pbuf);
    return rc;
}

int tlr_envelope_pack_error(const tlr_status *st, const char *request_id,
                            const char *sender, nng_msg **out)
{
    if (st == NULL || out == NULL)
        return TLR_E_INVAL;
    Tailor__V1__Status status = TAILOR__V1__STATUS__INIT;
    status.code = (uint32_t)st->code;
    status.message = str_or_empty(st->message);
    status.reason = str_or_empty(st->reason[0] ? st->reason
                                               : tlr_errname(st->code));

    Tailor__V1__Envelope env = TAILOR__V1__ENVELOPE__INIT;
    env.contract_version = TLR_CONTRACT_VERSION;
    env.type = str_or_empty(TLR_STATUS_TYPE);
    env.status = &status;
    env.request_id = str_or_empty(request_id);
    env.sender = str_or_empty(sender);
    env.sent_unix_ms = tlr_wall_ms();
    return pack_frame(&env, out);
}

int tlr_envelope_pack_status(int code, const char *message,
                             const char *request_id, const char *sender,
                             nng_msg **out)
{
    tlr_status st;
    tlr_status_set(&st, code, NULL, "%s", message ? message : "");
    return tlr_envelope_pack_error(&st, request_id, sender, out);
}

int tlr_envelope_unpack(const void *buf, size_t len, size_t max_size,
                        Tailor__V1__Envelope **out, char *err, size_t errlen)
{
    if (max_size == 0)
        max_size = TLR_MSG_MAX_DEFAULT;
    if (len > max_size) {
        set_err(err, errlen, "message of %zu bytes exceeds the limit of %zu "
                "bytes", len, max_size);
        return TLR_E_TOOBIG;
    }
    if (buf == NULL && len > 0) {
        set_err(err, errlen, "no message bytes");
        return TLR_E_INVAL;
    }

    ProtobufCMessage *m = NULL;
    size_t budget = TLR_ENVELOPE_BUDGET(len), peak = 0;
    int rc = tlr_unpack_bounded(&tailor__v1__envelope__descriptor, buf, len, budget, &m,
                                &peak);
    if (rc == TLR_E_TOOBIG) {
        set_err(err, errlen, "message of %zu bytes needs more than %zu bytes to decode "
                "the envelope (the decode budget)", len, budget);
        return rc;
    }
    if (rc != TLR_OK) {
        set_err(err, errlen, "message of %zu bytes is not a valid "
                "tailor.v1.Envelope (malformed or truncated protobuf)", len);
        return TLR_E_DECODE;
    }
    Tailor__V1__Envelope *env = (Tailor__V1__Envelope *)m;
    if (env->contract_version != TLR_CONTRACT_VERSION) {
        set_err(err, errlen, "envelope contract_version %u, want %u",
                env->contract_version, TLR_CONTRACT_VERSION);
        tailor__v1__envelope__free_unpacked(env, NULL);
        return TLR_E_VERSION;
    }
    if (env->type == NULL || env->type[0] == '\0') {
        set_err(err, errlen, "envelope has no type");
        tailor__v1__envelope__free_unpacked(env, NULL);
        return TLR_E_DECODE;
    }
    *out = env;
    return TLR_OK;
}

int tlr_envelope_payload(const Tailor__V1__Envelope *env,
                         const ProtobufCMessageDescriptor *want,
                         ProtobufCMessage **out, char *err, size_t errlen)
{
    if (env == NULL || want == NULL || out == NULL) {
        set_err(err, errlen, "no envelope or no wanted type");
        return TLR_E_INVAL;
    }
    if (env->status != NULL && env->status->code != 0) {
        set_err(err, errlen, "%s", env->status->message ? env->status->message
                                                        : "");
        return TLR_E_REMOTE;
    }
    const char *type = env->type ? env->type : "";
    if (strcmp(type, want->name) != 0) {
        set_err(err, errlen, "message type \"%s\", want \"%s\"", type,
                want->name);
        return TLR_E_UNKNOWN_TYPE;
    }
    ProtobufCMessage *m = NULL;
    size_t budget = tlr_decode_budget(env->payload.len), peak = 0;
    int rc = tlr_unpack_bounded(want, env->payload.data, env->payload.len, budget, &m, &peak);
    if (rc == TLR_E_TOOBIG) {
        set_err(err, errlen, "%s of %zu bytes needs more than %zu bytes to decode (the "
                "decode budget: %d x its size + %zu KiB); refused", want->name,
                env->payload.len, budget, TLR_DECODE_RATIO, TLR_DECODE_SLACK >> 10);
        return rc;
    }
    if (rc != TLR_OK) {
        set_err(err, errlen, "payload of %zu bytes is not a valid %s",
                env->payload.len, want->name);
        return TLR_E_DECODE;
    }
    *out = m;
    return TLR_OK;
}
