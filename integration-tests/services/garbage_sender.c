/* garbage_sender.c - sends what a broken or hostile peer would to the
 * services' sockets, for garbage_it.sh.
 *
 *   garbage_sender [--count N] [--seed S] --rep NAME=URL ... [--pub URL]
 *
 * To each REP URL (a raw nng REQ socket, so nothing is checked on the way
 * out) it sends N requests, cycling through:
 *   - random bytes;
 *   - a valid PingRequest envelope cut short at a random length;
 *   - a valid request with a few bytes flipped;
 *   - every request type (Solve, Simulate, Snapshot, Launch, Terminate,
 *     Catalog, Explain, Ping) with a payload built from its descriptor:
 *     every string field (names, reasons, ids) non-UTF-8 bytes, every
 *     number random, one element in each list, three levels deep;
 *   - a request type with random bytes as its payload;
 *   - an envelope with contract version 0 or 7, no type, a non-UTF-8 type,
 *     an unknown type, or a Status as a request;
 *   - now and then an envelope whose type is a 2 MiB string.
 * Each request waits up to 2 s for its reply.  With --pub it dials that
 * URL as a publisher (a subscriber that listens: the watcher's
 * --decisions) and publishes the same kinds of garbage on the
 * "decisions" topic, on unknown topics and with no topic at all.
 * Last, each REP URL must answer a PingRequest with a PingResponse.
 * Prints one line per URL; exits 0 when every URL answered its Ping.
 *
 * Over tls+tcp:// it is an authenticated peer -- the case that matters
 * once the bus refuses everyone else: to REP URLs with the certificate in
 * TAILOR_TLS_CA/CERT/KEY (tailorctl's, which may send most request
 * types), to --pub with --pub-as ID's certificate from TAILOR_TEST_CERTS
 * (tailor-launcher's, the only publisher the decisions listener accepts).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../it_tls.h"

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/reqrep0/req.h>

#include "tailor/v1/common.pb-c.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_envelope.h"
#include "tlr_err.h"

static const ProtobufCMessageDescriptor *const requests[] = {
    &tailor__v1__solve_request__descriptor,    &tailor__v1__simulate_request__descriptor,
    &tailor__v1__snapshot_request__descriptor, &tailor__v1__launch_request__descriptor,
    &tailor__v1__terminate_request__descriptor, &tailor__v1__catalog_request__descriptor,
    &tailor__v1__explain_request__descriptor,  &tailor__v1__ping_request__descriptor,
    &tailor__v1__scheduling_decisions__descriptor,
};
#define NREQ (sizeof(requests) / sizeof(requests[0]))

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A NUL-terminated string that is not UTF-8: stray continuation bytes,
 * overlong forms, a lone surrogate, 0xff, control bytes, a quote. */
static char *bad_string(void)
{
    static const char *const parts[] = { "\xff", "\xc0\xaf", "\xed\xa0\x80", "\x80", "\x01",
                                         "\"", "\\", "\xe2\x82", "node-", "\x1b[31m",
                                         "\xf8\x88\x80\x80\x80" };
    size_t n = 1 + rnd() % 8;
    char *s = calloc(1, 8 * 8 + 1);
    for (size_t i = 0; i < n; i++)
        strcat(s, parts[rnd() % (sizeof(parts) / sizeof(parts[0]))]);
    return s;
}

/* A message of descriptor d with every field filled with nonsense (owned;
 * free with protobuf_c_message_free_unpacked(m, NULL)). */
static ProtobufCMessage *nonsense(const ProtobufCMessageDescriptor *d, int depth)
{
    ProtobufCMessage *m = calloc(1, d->sizeof_message);
    d->message_init(m);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char *p = (char *)m + f->offset;
        bool rep = f->label == PROTOBUF_C_LABEL_REPEATED;
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
            continue;
        if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) {
            void *v;
            if (f->type == PROTOBUF_C_TYPE_STRING)
                v = bad_string();
            else if (depth < 3)
                v = nonsense(f->descriptor, depth + 1);
            else
                continue;
            if (rep) {
                void **arr = malloc(sizeof(void *));
                arr[0] = v;
                *(size_t *)((char *)m + f->quantifier_offset) = 1;
                *(void ***)p = arr;
            } else {
                *(void **)p = v;
            }
            continue;
        }
        if (rep)
            continue;
        if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
            *(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
        uint64_t r = rnd();
        switch (f->type) {
        case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_ENUM:
            *(uint32_t *)p = (r & 1) ? (uint32_t)r : (uint32_t)-1;
            break;
        case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
            *(uint64_t *)p = (r & 1) ? r : (uint64_t)INT64_MIN;
            break;
        case PROTOBUF_C_TYPE_DOUBLE: {
            static const double odd[] = { -1.0, 1e308, 0.0, 3.5, -0.0 };
            *(double *)p = odd[r % 5];
            break;
        }
        case PROTOBUF_C_TYPE_FLOAT:
            *(float *)p = -1.0f;
            break;
        case PROTOBUF_C_TYPE_BOOL:
            *(protobuf_c_boolean *)p = 1;
            break;
        default:
            break;
        }
    }
    return m;
}

/* An Envelope's bytes (owned, *len) with the given fields. */
static uint8_t *envelope(uint32_t version, char *type, const uint8_t *payload, size_t plen,
                         bool status, size_t *len)
{
    Tailor__V1__Envelope e = TAILOR__V1__ENVELOPE__INIT;
    Tailor__V1__Status st = TAILOR__V1__STATUS__INIT;
    e.contract_version = version;
    e.type = type ? type : "";
    e.payload.data = (uint8_t *)payload;
    e.payload.len = plen;
    e.request_id = "garbage";
    e.sender = "garbage_sender";
    if (status) {
        st.code = 10;
        st.message = "\xff\xfe status as a request";
        e.status = &st;
    }
    *len = tailor__v1__envelope__get_packed_size(&e);
    uint8_t *b = malloc(*len ? *len : 1);
    tailor__v1__envelope__pack(&e, b);
    return b;
}

static uint8_t *packed(const ProtobufCMessageDescriptor *d, size_t *len)
{
    ProtobufCMessage *m = nonsense(d, 0);
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *p = malloc(n ? n : 1);
    protobuf_c_message_pack(m, p);
    protobuf_c_message_free_unpacked(m, NULL);
    uint8_t *b = envelope(TLR_CONTRACT_VERSION, (char *)d->name, p, n, false, len);
    free(p);
    return b;
}

/* The i-th piece of garbage (owned, *len). */
static uint8_t *garbage(unsigned i, size_t *len)
{
    uint8_t *b;
    switch (i % 8) {
    case 0:
        *len = rnd() % 400;
        b = malloc(*len + 1);
        for (size_t k = 0; k < *len; k++)
            b[k] = (uint8_t)rnd();
        return b;
    case 1: {
        Tailor__V1__PingRequest ping = TAILOR__V1__PING_REQUEST__INIT;
        size_t n = 0;
        uint8_t p[1];
        size_t pl = protobuf_c_message_pack(&ping.base, p);
        b = envelope(TLR_CONTRACT_VERSION, "tailor.v1.PingRequest", p, pl, false, &n);
        *len = n ? rnd() % n : 0;
        return b;
    }
    case 2:
        b = packed(requests[rnd() % NREQ], len);
        for (int k = 0; k < 1 + (int)(rnd() % 8) && *len; k++)
            b[rnd() % *len] ^= (uint8_t)(1 + rnd() % 255);
        return b;
    case 3:
    case 4:
        return packed(requests[(i / 8) % NREQ], len);
    case 5: {
        uint8_t junk[64];
        for (size_t k = 0; k < sizeof(junk); k++)
            junk[k] = (uint8_t)rnd();
        return envelope(TLR_CONTRACT_VERSION, (char *)requests[rnd() % NREQ]->name, junk,
                        rnd() % sizeof(junk), false, len);
    }
    case 6: {
        if (i % 64 == 6) {   /* a 2 MiB type */
            size_t n = 2u << 20;
            char *t = malloc(n + 1);
            memset(t, 'T', n);
            t[n] = '\0';
            b = envelope(TLR_CONTRACT_VERSION, t, NULL, 0, false, len);
            free(t);
            return b;
        }
        char *t = bad_string();
        b = envelope(TLR_CONTRACT_VERSION, t, NULL, 0, false, len);
        free(t);
        return b;
    }
    default: {
        static char *types[] = { "", "tailor.v1.Nope", "tailor.v1.Status",
                                 "tailor.v1.PingRequest", "tailor.v2.SolveRequest" };
        unsigned k = (i / 8) % 5;
        uint32_t version = (i / 8) % 3 == 0 ? 0 : (i / 8) % 3 == 1 ? 7 : TLR_CONTRACT_VERSION;
        return envelope(version, types[k], NULL, 0, k == 2, len);
    }
    }
}

/* Dial url with s: with tls (may be NULL) over mutual TLS. */
static int dial(nng_socket s, const char *url, tlr_tls *tls)
{
    if (tls != NULL && tlr_tls_url(url))
        return tlr_tls_dial(tls, s, url);
    return nng_dial(s, url, NULL, 0);
}

static int req_open(const char *url, tlr_tls *tls, nng_socket *s)
{
    int rv;
    if ((rv = nng_req0_open(s)) != 0)
        return rv;
    nng_socket_set_ms(*s, NNG_OPT_RECVTIMEO, 2000);
    nng_socket_set_ms(*s, NNG_OPT_SENDTIMEO, 2000);
    nng_socket_set_ms(*s, NNG_OPT_REQ_RESENDTIME, 60000);
    nng_socket_set_size(*s, NNG_OPT_RECVMAXSZ, 64u << 20);
    if ((rv = dial(*s, url, tls)) != 0)
        nng_close(*s);
    return rv;
}

/* Send one request and wait for its reply; true when one came. */
static bool ask(nng_socket s, const uint8_t *b, size_t len, char *type, size_t tlen)
{
    void *r = NULL;
    size_t rl = 0;
    if (nng_send(s, (void *)b, len, 0) != 0)
        return false;
    if (nng_recv(s, &r, &rl, NNG_FLAG_ALLOC) != 0)
        return false;
    Tailor__V1__Envelope *env = NULL;
    if (type != NULL && tlr_envelope_unpack(r, rl, 0, &env, NULL, 0) == TLR_OK) {
        snprintf(type, tlen, "%s", env->type);
        tailor__v1__envelope__free_unpacked(env, NULL);
    }
    nng_free(r, rl);
    return true;
}

static bool rep_garbage(const char *name, const char *url, tlr_tls *tls, unsigned count)
{
    nng_socket s;
    int rv;
    if ((rv = req_open(url, tls, &s)) != 0) {
        printf("rep %s: cannot dial %s: %s\n", name, url, nng_strerror(rv));
        return false;
    }
    unsigned replies = 0, statuses = 0;
    for (unsigned i = 0; i < count; i++) {
        size_t len = 0;
        char type[64] = "";
        uint8_t *b = garbage(i, &len);
        if (ask(s, b, len, type, sizeof(type))) {
            replies++;
            statuses += strcmp(type, TLR_STATUS_TYPE) == 0;
        }
        free(b);
    }
    /* Still serving? */
    bool pong = false;
    for (int tries = 0; tries < 5 && !pong; tries++) {
        Tailor__V1__PingRequest ping = TAILOR__V1__PING_REQUEST__INIT;
        nng_msg *m = NULL;
        char type[64] = "";
        if (tlr_envelope_pack(NULL, &ping.base, "final-ping", "garbage_sender", &m) != TLR_OK)
            abort();
        pong = ask(s, nng_msg_body(m), nng_msg_len(m), type, sizeof(type)) &&
               strcmp(type, "tailor.v1.PingResponse") == 0;
        nng_msg_free(m);
    }
    printf("rep %s: sent %u, replies %u (error replies %u), final ping %s\n", name, count,
           replies, statuses, pong ? "answered" : "NOT answered");
    nng_close(s);
    return pong;
}

static bool pub_garbage(const char *url, tlr_tls *tls, unsigned count)
{
    nng_socket s;
    int rv;
    if ((rv = nng_pub0_open(&s)) != 0 || (rv = dial(s, url, tls)) != 0) {
        printf("pub: cannot dial %s: %s\n", url, nng_strerror(rv));
        return false;
    }
    struct timespec ts = { 0, 300 * 1000000L };   /* let the subscription settle */
    nanosleep(&ts, NULL);
    static const char *const topics[] = { "decisions", "decisions", "decisions", "pending",
                                          "\xff\xfe", "" };
    for (unsigned i = 0; i < count; i++) {
        size_t len = 0;
        uint8_t *b = (i % 8 == 3 || i % 8 == 4)
                         ? packed(&tailor__v1__scheduling_decisions__descriptor, &len)
                         : garbage(i, &len);
        const char *t = topics[(i / 8) % 6];
        size_t tl = strlen(t) + ((i % 16 == 15) ? 0 : 1);   /* sometimes no NUL at all */
        uint8_t *m = malloc(tl + len + 1);
        memcpy(m, t, tl);
        memcpy(m + tl, b, len);
        nng_send(s, m, tl + len, 0);
        free(m);
        free(b);
        struct timespec gap = { 0, 2 * 1000000L };   /* pub drops what a full queue cannot take */
        nanosleep(&gap, NULL);
    }
    nanosleep(&ts, NULL);
    printf("pub %s: published %u\n", url, count);
    nng_close(s);
    return true;
}

int main(int argc, char **argv)
{
    unsigned count = 300;
    const char *pub = NULL, *pub_as = "tailor-launcher";
    const char *reps[16];
    size_t nreps = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng = strtoull(argv[++i], NULL, 10) | 1;
        else if (!strcmp(argv[i], "--rep") && i + 1 < argc && nreps < 16)
            reps[nreps++] = argv[++i];
        else if (!strcmp(argv[i], "--pub") && i + 1 < argc)
            pub = argv[++i];
        else if (!strcmp(argv[i], "--pub-as") && i + 1 < argc)
            pub_as = argv[++i];
        else {
            fprintf(stderr, "usage: garbage_sender [--count N] [--seed S] --rep NAME=URL ... "
                            "[--pub URL [--pub-as ID]]\n");
            return 2;
        }
    }
    tlr_tls *tls = NULL, *pub_tls = NULL;
    if (it_tls_from_env(NULL, &tls) != TLR_OK ||
        (pub != NULL && tlr_tls_url(pub) && it_tls_as(pub_as, NULL, &pub_tls) != TLR_OK))
        return 2;
    bool ok = true;
    if (pub != NULL)
        ok = pub_garbage(pub, pub_tls, count) && ok;
    for (size_t i = 0; i < nreps; i++) {
        char name[64];
        const char *eq = strchr(reps[i], '=');
        if (eq == NULL || eq - reps[i] >= (long)sizeof(name)) {
            fprintf(stderr, "garbage_sender: --rep wants NAME=URL, got %s\n", reps[i]);
            return 2;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(eq - reps[i]), reps[i]);
        ok = rep_garbage(name, eq + 1, tls, count) && ok;
    }
    tlr_tls_free(pub_tls);
    tlr_tls_free(tls);
    return ok ? 0 : 1;
}
