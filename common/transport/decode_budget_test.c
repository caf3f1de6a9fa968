/* decode_budget_test.c - bounded decoding (tlr_envelope.h): a message
 * whose decoded form is far larger than its wire form is refused with
 * TLR_E_TOOBIG before it can exhaust memory, while every message a
 * service decodes -- fully populated, and a realistic cluster-sized
 * SolveRequest -- fits the budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <protobuf-c/protobuf-c.h>

#include "solve_testkit.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_envelope.h"
#include "tlr_err.h"

/* Every message a service decodes from its sockets (as envelope_fuzz.c). */
static const ProtobufCMessageDescriptor *const descs[] = {
    &tailor__v1__solve_request__descriptor,      &tailor__v1__solve_response__descriptor,
    &tailor__v1__simulate_request__descriptor,   &tailor__v1__simulate_response__descriptor,
    &tailor__v1__pending_batch__descriptor,      &tailor__v1__snapshot_request__descriptor,
    &tailor__v1__snapshot_response__descriptor,  &tailor__v1__cluster_change__descriptor,
    &tailor__v1__launch_request__descriptor,     &tailor__v1__launch_response__descriptor,
    &tailor__v1__terminate_request__descriptor,  &tailor__v1__terminate_response__descriptor,
    &tailor__v1__catalog_request__descriptor,    &tailor__v1__catalog_response__descriptor,
    &tailor__v1__launch_event__descriptor,       &tailor__v1__scheduling_decisions__descriptor,
    &tailor__v1__explain_request__descriptor,    &tailor__v1__explain_response__descriptor,
    &tailor__v1__disruption_event__descriptor,   &tailor__v1__ping_request__descriptor,
    &tailor__v1__ping_response__descriptor,      &tailor__v1__envelope__descriptor,
};
#define NDESCS (sizeof(descs) / sizeof(descs[0]))

/* --- a filler: every field set, repeated fields with three elements --- */

static unsigned counter;

static ProtobufCMessage *fill(const ProtobufCMessageDescriptor *d, int depth);

static size_t scalar_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

static void fill_value(const ProtobufCFieldDescriptor *f, void *dst, int depth)
{
    char s[32];
    counter++;
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING:
        snprintf(s, sizeof(s), "value-%u", counter);
        *(char **)dst = strdup(s);
        break;
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData *b = dst;
        b->data = (uint8_t *)strdup("bytes");
        b->len = 5;
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)dst = fill(f->descriptor, depth + 1);
        break;
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *e = f->descriptor;
        *(int *)dst = e->values[e->n_values - 1].value;
        break;
    }
    case PROTOBUF_C_TYPE_BOOL:
        *(protobuf_c_boolean *)dst = 1;
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        *(float *)dst = 1.5f;
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        *(double *)dst = 2.5;
        break;
    default:
        if (scalar_size(f->type) == 8)
            *(uint64_t *)dst = counter;
        else
            *(uint32_t *)dst = counter;
    }
}

static ProtobufCMessage *fill(const ProtobufCMessageDescriptor *d, int depth)
{
    ProtobufCMessage *m = calloc(1, d->sizeof_message);
    d->message_init(m);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char *base = (char *)m;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE && depth >= 6)
            continue;
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            if (*(uint32_t *)(base + f->quantifier_offset) != 0)
                continue;   /* one member of a oneof */
            *(uint32_t *)(base + f->quantifier_offset) = f->id;
            fill_value(f, base + f->offset, depth);
        } else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = 3, sz = scalar_size(f->type);
            char *arr = calloc(n, sz);
            for (size_t k = 0; k < n; k++)
                fill_value(f, arr + k * sz, depth);
            *(size_t *)(base + f->quantifier_offset) = n;
            *(void **)(base + f->offset) = arr;
        } else {
            if (f->quantifier_offset != 0 && f->label == PROTOBUF_C_LABEL_OPTIONAL)
                *(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
            fill_value(f, base + f->offset, depth);
        }
    }
    return m;
}

/* The packed bytes of a fully populated d; *len set.  Owned. */
static uint8_t *packed_full(const ProtobufCMessageDescriptor *d, size_t *len)
{
    ProtobufCMessage *m = fill(d, 0);
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*len ? *len : 1);
    protobuf_c_message_pack(m, buf);
    protobuf_c_message_free_unpacked(m, NULL);
    return buf;
}

/* --- tests ------------------------------------------------------------- */

static void test_every_type_fits(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < NDESCS; i++) {
        size_t len = 0, peak = 0;
        uint8_t *buf = packed_full(descs[i], &len);
        ProtobufCMessage *m = NULL;
        int rc = tlr_unpack_bounded(descs[i], buf, len, tlr_decode_budget(len), &m, &peak);
        /* The ratio alone (no slack) must hold a fully populated message. */
        if (rc != TLR_OK || peak > (size_t)TLR_DECODE_RATIO * len + 4096) {
            printf("FAIL %s: %zu wire bytes, peak %zu: %s\n", descs[i]->name, len, peak,
                   tlr_errname(rc));
            failures++;
        } else {
            /* Decoded faithfully: packs back to the same bytes. */
            uint8_t *again = malloc(len ? len : 1);
            assert_int_equal(protobuf_c_message_pack(m, again), len);
            assert_memory_equal(again, buf, len);
            free(again);
        }
        protobuf_c_message_free_unpacked(m, NULL);
        free(buf);
    }
    assert_int_equal(failures, 0);
}

/* A big cluster's SolveRequest: 20000 pending pods with uid, name,
 * namespace, requests and two labels. */
static void test_cluster_sized_request_fits(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *r = tk_new();
    tk_ladder(r);
    tk_pool(r, "default", 0);
    char name[64];
    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof(name), "web-7d9f8c6b5-%05d", i);
        Tailor__V1__Pod *p = tk_pod(r, name, 250, 512);
        tk_pod_label(p, "app", "web");
        tk_pod_label(p, "pod-template-hash", "7d9f8c6b5");
    }
    size_t len = protobuf_c_message_get_packed_size(&r->base), peak = 0;
    uint8_t *buf = malloc(len);
    protobuf_c_message_pack(&r->base, buf);
    ProtobufCMessage *m = NULL;
    assert_int_equal(tlr_unpack_bounded(&tailor__v1__solve_request__descriptor, buf, len,
                                        tlr_decode_budget(len), &m, &peak), TLR_OK);
    printf("cluster-sized SolveRequest: %zu wire bytes, %zu decoded (%.1fx)\n", len, peak,
           (double)peak / (double)len);
    assert_true(peak < (size_t)TLR_DECODE_RATIO * len);
    assert_int_equal(((Tailor__V1__SolveRequest *)m)->n_pending_pods, 20000);
    protobuf_c_message_free_unpacked(m, NULL);
    free(buf);
    tailor__v1__solve_request__free_unpacked(r, NULL);
}

/* n copies of the 2-byte field "tag, length 0": an empty message in a
 * repeated field.  Owned. */
static uint8_t *empty_elements(uint8_t tag, size_t n)
{
    uint8_t *b = malloc(2 * n);
    for (size_t i = 0; i < n; i++) {
        b[2 * i] = tag;
        b[2 * i + 1] = 0;
    }
    return b;
}

static void test_allocation_heavy_refused(void **state)
{
    (void)state;
    static const struct {
        const ProtobufCMessageDescriptor *d;
        uint8_t tag;   /* field number << 3 | 2 (length-delimited) */
    } t[] = {
        { &tailor__v1__launch_request__descriptor, 0x0a },   /* nodeclaims = 1 */
        { &tailor__v1__solve_request__descriptor, 0x12 },    /* pending_pods = 2 */
        { &tailor__v1__pending_batch__descriptor, 0x2a },    /* pending_pods = 5 */
    };
    const size_t n = 512 << 10;   /* 1 MiB on the wire */
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        uint8_t *b = empty_elements(t[i].tag, n);
        size_t budget = tlr_decode_budget(2 * n), peak = 0;
        ProtobufCMessage *m = NULL;
        int rc = tlr_unpack_bounded(t[i].d, b, 2 * n, budget, &m, &peak);
        if (rc != TLR_E_TOOBIG || peak > budget)
            fail_msg("%s of empty elements: got %s, peak %zu; want TOOBIG within %zu",
                     t[i].d->name, tlr_errname(rc), peak, budget);
        /* Without the budget it would have taken far more. */
        if (i == 0) {
            m = protobuf_c_message_unpack(t[i].d, NULL, 2 * n, b);
            assert_non_null(m);
            assert_true(((Tailor__V1__LaunchRequest *)m)->n_nodeclaims == n);
            protobuf_c_message_free_unpacked(m, NULL);
        }
        free(b);
    }
}

/* Through an envelope: the payload is refused with TOOBIG and a message
 * saying why; the envelope itself (bytes) decodes within its budget. */
static void test_envelope_payload_refused(void **state)
{
    (void)state;
    const size_t n = 256 << 10;
    uint8_t *b = empty_elements(0x0a, n);
    Tailor__V1__Envelope env = TAILOR__V1__ENVELOPE__INIT;
    env.contract_version = TLR_CONTRACT_VERSION;
    env.type = (char *)"tailor.v1.LaunchRequest";
    env.payload.data = b;
    env.payload.len = 2 * n;
    size_t len = protobuf_c_message_get_packed_size(&env.base);
    uint8_t *wire = malloc(len);
    protobuf_c_message_pack(&env.base, wire);

    Tailor__V1__Envelope *got = NULL;
    char err[256];
    assert_int_equal(tlr_envelope_unpack(wire, len, 0, &got, err, sizeof(err)), TLR_OK);
    ProtobufCMessage *m = NULL;
    assert_int_equal(tlr_envelope_payload(got, &tailor__v1__launch_request__descriptor, &m, err,
                                          sizeof(err)), TLR_E_TOOBIG);
    assert_null(m);
    if (strstr(err, "tailor.v1.LaunchRequest of 524288 bytes needs more than") == NULL ||
        strstr(err, "decode budget") == NULL)
        fail_msg("error message: got \"%s\"", err);
    tailor__v1__envelope__free_unpacked(got, NULL);

    /* An envelope of one string field repeated (the type, 2 bytes each
     * time): protobuf-c's scratch alone would be 16x; refused by the
     * envelope's own, tighter budget. */
    uint8_t *rep = malloc(2 << 20);
    for (size_t i = 0; i < (1 << 20); i++) {
        rep[2 * i] = 0x12;   /* type = 2, length-delimited */
        rep[2 * i + 1] = 0;
    }
    got = NULL;
    assert_int_equal(tlr_envelope_unpack(rep, 2 << 20, 0, &got, err, sizeof(err)),
                     TLR_E_TOOBIG);
    assert_null(got);
    assert_non_null(strstr(err, "the decode budget"));
    free(rep);

    /* Garbage is still DECODE, not TOOBIG. */
    static const uint8_t junk[] = { 0x0a, 0x7f, 0x01 };
    assert_int_equal(tlr_unpack_bounded(&tailor__v1__launch_request__descriptor, junk,
                                        sizeof(junk), 1 << 20, &m, NULL), TLR_E_DECODE);
    free(wire);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type_fits),
        cmocka_unit_test(test_cluster_sized_request_fits),
        cmocka_unit_test(test_allocation_heavy_refused),
        cmocka_unit_test(test_envelope_payload_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
