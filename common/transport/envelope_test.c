/* envelope_test.c - the Envelope frame: round trips and every rejection.
 *
 * Table-driven: each case builds some bytes, unpacks them (and, when that
 * succeeds, decodes the payload as a wanted type) and checks the code and
 * a fragment of the error text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tailor/v1/common.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tlr_envelope.h"
#include "tlr_err.h"
#include "tlr_time.h"

/* Bytes under test; owned by the case runner. */
typedef struct bytes {
    uint8_t *data;
    size_t len;
} bytes;

static bytes from_msg(nng_msg *m)
{
    bytes b = { .len = nng_msg_len(m) };
    b.data = malloc(b.len ? b.len : 1);
    memcpy(b.data, nng_msg_body(m), b.len);
    nng_msg_free(m);
    return b;
}

static void ping_fill(Tailor__V1__PingResponse *p)
{
    tailor__v1__ping_response__init(p);
    p->service = "solver";
    p->replica_id = "solver/host/42";
    p->version = "0.1.0";
    p->contract_version = 1;
    p->uptime_ms = 1234;
    p->ready = true;
}

static bytes good_ping(void)
{
    Tailor__V1__PingResponse p;
    ping_fill(&p);
    nng_msg *m = NULL;
    assert_int_equal(tlr_envelope_pack(NULL, &p.base, "req-1",
                                       "solver/host/42", &m), TLR_OK);
    return from_msg(m);
}

/* An Envelope packed by hand, for fields tlr_envelope_pack never writes. */
static bytes raw_envelope(uint32_t version, const char *type,
                          const uint8_t *payload, size_t plen)
{
    Tailor__V1__Envelope e = TAILOR__V1__ENVELOPE__INIT;
    e.contract_version = version;
    e.type = (char *)type;
    e.payload.data = (uint8_t *)payload;
    e.payload.len = plen;
    e.request_id = "req-raw";
    bytes b = { .len = tailor__v1__envelope__get_packed_size(&e) };
    b.data = malloc(b.len ? b.len : 1);
    tailor__v1__envelope__pack(&e, b.data);
    return b;
}

static bytes b_good(void) { return good_ping(); }

static bytes b_trunc_one(void)
{
    bytes b = good_ping();
    b.len -= 1;   /* cuts the last varint (sent_unix_ms) in half */
    return b;
}

static bytes b_trunc_half(void)
{
    bytes b = good_ping();
    b.len /= 2;   /* inside the payload's length-delimited bytes */
    return b;
}

static bytes b_garbage_ff(void)
{
    bytes b = { .len = 16 };
    b.data = malloc(b.len);
    memset(b.data, 0xff, b.len);   /* a tag varint that never ends */
    return b;
}

static bytes b_garbage_text(void)
{
    const char *s = "GET / HTTP/1.1\r\nHost: solver\r\n\r\n";
    bytes b = { .len = strlen(s) };
    b.data = malloc(b.len);
    memcpy(b.data, s, b.len);
    return b;
}

static bytes b_empty(void)
{
    bytes b = { .data = malloc(1), .len = 0 };
    return b;
}

static bytes b_version2(void)
{
    return raw_envelope(2, "tailor.v1.PingResponse", NULL, 0);
}

static bytes b_no_type(void)
{
    return raw_envelope(1, "", NULL, 0);
}

static bytes b_bad_payload(void)
{
    static const uint8_t junk[] = { 0x0a, 0x7f, 'x' };   /* len 127, 1 byte */
    return raw_envelope(1, "tailor.v1.PingResponse", junk, sizeof(junk));
}

static bytes b_status(void)
{
    nng_msg *m = NULL;
    assert_int_equal(tlr_envelope_pack_status(TLR_E_CAPACITY,
                                              "no c5.large in us-east-1a",
                                              "req-9", "launcher/x/1", &m),
                     TLR_OK);
    return from_msg(m);
}

static bytes b_custom_type(void)
{
    Tailor__V1__PingResponse p;
    ping_fill(&p);
    nng_msg *m = NULL;
    assert_int_equal(tlr_envelope_pack("tailor.v1.Other", &p.base, NULL, NULL,
                                       &m), TLR_OK);
    return from_msg(m);
}

typedef struct env_case {
    const char *name;
    bytes (*build)(void);
    size_t max;                 /* 0: the default ceiling */
    size_t max_delta;           /* >0: max = len - max_delta */
    int want_unpack;
    const char *want_unpack_err;     /* substring; NULL = don't check */
    const ProtobufCMessageDescriptor *want_type;   /* NULL: skip payload */
    int want_payload;
    const char *want_payload_err;
} env_case;

static const env_case cases[] = {
    { "round trip", b_good, 0, 0, TLR_OK, NULL,
      &tailor__v1__ping_response__descriptor, TLR_OK, NULL },
    { "truncated by one byte", b_trunc_one, 0, 0, TLR_E_DECODE,
      "not a valid tailor.v1.Envelope", NULL, 0, NULL },
    { "truncated to half", b_trunc_half, 0, 0, TLR_E_DECODE,
      "malformed or truncated", NULL, 0, NULL },
    { "garbage 0xff", b_garbage_ff, 0, 0, TLR_E_DECODE,
      "16 bytes", NULL, 0, NULL },
    { "garbage text", b_garbage_text, 0, 0, TLR_E_DECODE,
      "not a valid", NULL, 0, NULL },
    { "empty message", b_empty, 0, 0, TLR_E_VERSION,
      "contract_version 0, want 1", NULL, 0, NULL },
    { "wrong version", b_version2, 0, 0, TLR_E_VERSION,
      "contract_version 2, want 1", NULL, 0, NULL },
    { "no type", b_no_type, 0, 0, TLR_E_DECODE, "no type", NULL, 0, NULL },
    { "one byte over the limit", b_good, 0, 1, TLR_E_TOOBIG,
      "exceeds the limit", NULL, 0, NULL },
    { "wrong type", b_good, 0, 0, TLR_OK, NULL,
      &tailor__v1__solve_request__descriptor, TLR_E_UNKNOWN_TYPE,
      "\"tailor.v1.PingResponse\", want \"tailor.v1.SolveRequest\"" },
    { "bad payload", b_bad_payload, 0, 0, TLR_OK, NULL,
      &tailor__v1__ping_response__descriptor, TLR_E_DECODE,
      "payload of 3 bytes is not a valid tailor.v1.PingResponse" },
    { "status envelope", b_status, 0, 0, TLR_OK, NULL,
      &tailor__v1__solve_response__descriptor, TLR_E_REMOTE,
      "no c5.large in us-east-1a" },
    { "explicit type", b_custom_type, 0, 0, TLR_OK, NULL,
      &tailor__v1__ping_response__descriptor, TLR_E_UNKNOWN_TYPE,
      "\"tailor.v1.Other\"" },
};

static void check_code(const char *name, const char *what, int got, int want,
                       const char *err, const char *want_err)
{
    if (got != want)
        fail_msg("%s: %s: got %s, want %s (err \"%s\")", name, what,
                 tlr_errname(got), tlr_errname(want), err);
    if (want_err != NULL && strstr(err, want_err) == NULL)
        fail_msg("%s: %s: error \"%s\" does not contain \"%s\"", name, what,
                 err, want_err);
}

static void test_cases(void **state)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const env_case *c = &cases[i];
        bytes b = c->build();
        size_t max = c->max_delta ? b.len - c->max_delta : c->max;
        char err[256] = "";
        Tailor__V1__Envelope *env = NULL;
        int rc = tlr_envelope_unpack(b.data, b.len, max, &env, err,
                                     sizeof(err));
        check_code(c->name, "unpack", rc, c->want_unpack, err,
                   c->want_unpack_err);
        if (rc != TLR_OK) {
            if (env != NULL)
                fail_msg("%s: *out written on error", c->name);
            free(b.data);
            continue;
        }
        if (c->want_type != NULL) {
            ProtobufCMessage *m = NULL;
            err[0] = '\0';
            rc = tlr_envelope_payload(env, c->want_type, &m, err, sizeof(err));
            check_code(c->name, "payload", rc, c->want_payload, err,
                       c->want_payload_err);
            if (rc != TLR_OK && m != NULL)
                fail_msg("%s: payload *out written on error", c->name);
            protobuf_c_message_free_unpacked(m, NULL);
        }
        tailor__v1__envelope__free_unpacked(env, NULL);
        free(b.data);
    }
}

/* Every field survives pack -> unpack -> payload. */
static void test_round_trip_fields(void **state)
{
    Tailor__V1__PingResponse p;
    ping_fill(&p);
    nng_msg *m = NULL;
    int64_t before = tlr_wall_ms();
    assert_int_equal(tlr_envelope_pack(NULL, &p.base, "req-1", "solver/h/42",
                                       &m), TLR_OK);
    Tailor__V1__Envelope *env = NULL;
    char err[128];
    assert_int_equal(tlr_envelope_unpack(nng_msg_body(m), nng_msg_len(m), 0,
                                         &env, err, sizeof(err)), TLR_OK);
    assert_int_equal(env->contract_version, TLR_CONTRACT_VERSION);
    assert_string_equal(env->type, "tailor.v1.PingResponse");
    assert_string_equal(env->request_id, "req-1");
    assert_string_equal(env->sender, "solver/h/42");
    assert_null(env->status);
    assert_in_range(env->sent_unix_ms, before, tlr_wall_ms());

    ProtobufCMessage *out = NULL;
    assert_int_equal(tlr_envelope_payload(env,
                                          &tailor__v1__ping_response__descriptor,
                                          &out, err, sizeof(err)), TLR_OK);
    Tailor__V1__PingResponse *q = (Tailor__V1__PingResponse *)out;
    assert_string_equal(q->service, "solver");
    assert_string_equal(q->replica_id, "solver/host/42");
    assert_string_equal(q->version, "0.1.0");
    assert_int_equal(q->uptime_ms, 1234);
    assert_true(q->ready);
    protobuf_c_message_free_unpacked(out, NULL);
    tailor__v1__envelope__free_unpacked(env, NULL);
    nng_msg_free(m);
}

/* A status envelope carries code, message and a reason. */
static void test_status_fields(void **state)
{
    static const struct {
        int code;
        const char *message;
        const char *reason;   /* empty: default to the code's name */
        const char *want_reason;
    } rows[] = {
        { TLR_E_UNKNOWN_TYPE, "no handler for x.Y", "", "UNKNOWN_TYPE" },
        { TLR_E_CAPACITY, "no c5.large", "InsufficientCapacity",
          "InsufficientCapacity" },
        { TLR_E_VERSION, "", "", "VERSION" },
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        tlr_status st;
        tlr_status_set(&st, rows[i].code, rows[i].reason, "%s",
                       rows[i].message);
        nng_msg *m = NULL;
        assert_int_equal(tlr_envelope_pack_error(&st, "r", "s", &m), TLR_OK);
        Tailor__V1__Envelope *env = NULL;
        assert_int_equal(tlr_envelope_unpack(nng_msg_body(m), nng_msg_len(m),
                                             0, &env, NULL, 0), TLR_OK);
        assert_string_equal(env->type, TLR_STATUS_TYPE);
        assert_non_null(env->status);
        if ((int)env->status->code != rows[i].code)
            fail_msg("row %zu: code got %u want %d", i, env->status->code,
                     rows[i].code);
        assert_string_equal(env->status->message, rows[i].message);
        assert_string_equal(env->status->reason, rows[i].want_reason);
        assert_int_equal(env->payload.len, 0);
        tailor__v1__envelope__free_unpacked(env, NULL);
        nng_msg_free(m);
    }
}

/* Random bytes never crash and never come back as a valid envelope with
 * a bogus version: the only outcomes are OK (with version 1), DECODE and
 * VERSION. */
static void test_random_garbage(void **state)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    uint8_t buf[256];
    for (int round = 0; round < 20000; round++) {
        size_t len = (size_t)(x % sizeof(buf));
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            buf[i] = (uint8_t)x;
        }
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        Tailor__V1__Envelope *env = NULL;
        char err[128];
        int rc = tlr_envelope_unpack(buf, len, 0, &env, err, sizeof(err));
        if (rc == TLR_OK) {
            assert_int_equal(env->contract_version, 1);
            assert_true(env->type[0] != '\0');
            tailor__v1__envelope__free_unpacked(env, NULL);
        } else if (rc != TLR_E_DECODE && rc != TLR_E_VERSION) {
            fail_msg("round %d: got %s, want DECODE or VERSION", round,
                     tlr_errname(rc));
        }
    }
}

static void test_bad_arguments(void **state)
{
    nng_msg *m = NULL;
    assert_int_equal(tlr_envelope_pack(NULL, NULL, NULL, NULL, &m),
                     TLR_E_INVAL);
    assert_null(m);
    char err[64];
    Tailor__V1__Envelope *env = NULL;
    assert_int_equal(tlr_envelope_unpack(NULL, 5, 0, &env, err, sizeof(err)),
                     TLR_E_INVAL);
    assert_null(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_round_trip_fields),
        cmocka_unit_test(test_status_fields),
        cmocka_unit_test(test_random_garbage),
        cmocka_unit_test(test_bad_arguments),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nng_fini();
    return rc;
}
