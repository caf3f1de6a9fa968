/* quantity_test.c - tlr_quantity against Kubernetes' own behaviour.
 *
 * Expectations come from k8s.io/apimachinery/pkg/api/resource
 * (quantity_test.go: TestQuantityParse, TestQuantityString,
 * TestQuantityParseEmit, TestMilliNewSet, TestNewSet) or from tracing
 * ParseQuantity / CanonicalizeBytes by hand; cases where tailor differs on
 * purpose are marked "tailor:".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_err.h"
#include "tlr_quantity.h"


enum { DSI = TLR_QFMT_DECIMAL_SI, BSI = TLR_QFMT_BINARY_SI, DEX = TLR_QFMT_DECIMAL_EXP };

typedef struct qcase {
    const char *in;
    int         rc;        /* from tlr_quantity_parse */
    const char *str;       /* canonical form */
    int         fmt;
    int         milli_rc;
    int64_t     milli;
    int         value_rc;
    int64_t     value;
} qcase;

#define OK_(in, str, fmt, milli, value) \
    { in, TLR_OK, str, fmt, TLR_OK, milli, TLR_OK, value }
/* MilliValue out of int64 range; Value fine */
#define OKRM(in, str, fmt, value) \
    { in, TLR_OK, str, fmt, TLR_E_RANGE, 0, TLR_OK, value }
/* both out of range */
#define OKRR(in, str, fmt) \
    { in, TLR_OK, str, fmt, TLR_E_RANGE, 0, TLR_E_RANGE, 0 }
#define BAD(in, rc) { in, rc, NULL, 0, 0, 0, 0, 0 }

static const qcase cases[] = {
    /* the everyday ones */
    OK_("100m",     "100m",  DSI, 100, 1),
    OK_("1.5",      "1500m", DSI, 1500, 2),
    OK_("2Gi",      "2Gi",   BSI, 2147483648000LL, 2147483648LL),
    OK_("1e3",      "1e3",   DEX, 1000000, 1000),
    OK_("500M",     "500M",  DSI, 500000000000LL, 500000000),
    OK_("0.1m",     "100u",  DSI, 1, 1),          /* MilliValue rounds up */
    OK_("1Ki",      "1Ki",   BSI, 1024000, 1024),
    OK_("1.5Gi",    "1536Mi", BSI, 1610612736000LL, 1610612736LL),
    OK_("0.5Gi",    "512Mi", BSI, 536870912000LL, 536870912),
    OK_("1024Mi",   "1Gi",   BSI, 1073741824000LL, 1073741824LL),
    OK_("1536Mi",   "1536Mi", BSI, 1610612736000LL, 1610612736LL),
    OK_("1000m",    "1",     DSI, 1000, 1),
    OK_("1000k",    "1M",    DSI, 1000000000, 1000000),
    OK_("1000M",    "1G",    DSI, 1000000000000LL, 1000000000),
    OK_("1000000n", "1m",    DSI, 1, 1),
    OK_("1u",       "1u",    DSI, 1, 1),
    OK_("5n",       "5n",    DSI, 1, 1),
    OK_("0",        "0",     DSI, 0, 0),
    OK_("-1",       "-1",    DSI, -1000, -1),
    OK_("+1",       "1",     DSI, 1000, 1),       /* k8s String() echoes "+1" */
    OK_(".5",       "500m",  DSI, 500, 1),
    OK_("1.",       "1",     DSI, 1000, 1),
    OK_("1e-3",     "1e-3",  DEX, 1, 1),
    OK_("1E3",      "1e3",   DEX, 1000000, 1000),
    OK_("12e6",     "12e6",  DEX, 12000000000LL, 12000000),
    OK_("1.0001",   "1000100u", DSI, 1001, 2),
    OK_("1.2e3",    "1200",  DEX, 1200000, 1200),
    OK_("1.3E+6",   "1300e3", DEX, 1300000000, 1300000),
    OK_("1e0",      "1",     DEX, 1000, 1),
    OK_("1e13",     "10e12", DEX, 10000000000000000LL, 10000000000000LL),
    OKRR("1e28",    "10e27", DEX),                /* largest tailor accepts */
    OKRM("1E",       "1E",    DSI, 1000000000000000000LL),
    OKRR("12E",      "12E",   DSI),
    OK_("50k",      "50k",   DSI, 50000000, 50000),
    OK_("100.035k", "100035", DSI, 100035000, 100035),
    OK_("10.035M",  "10035k", DSI, 10035000000LL, 10035000),
    OK_("1.G",      "1G",    DSI, 1000000000000LL, 1000000000),
    OK_(".001",     "1m",    DSI, 1, 1),
    OK_("0.0005k",  "500m",  DSI, 500, 1),
    /* rounding up to 1n */
    OK_("3.001n",        "4n",   DSI, 1, 1),
    OK_("1.1E-9",        "2e-9", DEX, 1, 1),
    OK_("0.0000000001",  "1n",   DSI, 1, 1),
    OK_("0.5e-9",        "1e-9", DEX, 1, 1),
    OK_("0.00000012345", "124n", DSI, 1, 1),
    OK_("-0.1m",         "-100u", DSI, -1, -1),   /* away from zero */
    OK_("1e-1000000",    "1e-9", DEX, 1, 1),
    /* binary: fractions, canonical suffix, cap at 2^63-1 */
    OK_("1.5Ki",    "1536",     BSI, 1536000, 1536),
    OK_("0.3Ki",    "307200m",  BSI, 307200, 308),
    OK_("1.1Ki",    "1126400m", BSI, 1126400, 1127),
    OK_("100.035Ki", "102435840m", BSI, 102435840, 102436),
    OK_("0.05Gi",   "53687091200m", BSI, 53687091200LL, 53687092),
    OK_(".001Ki",   "1024m",    BSI, 1024, 2),
    OK_(".000000000001Ki", "2n", DSI, 1, 1),      /* below 1: becomes DecimalSI */
    OK_("0.5Ki",    "512",      BSI, 512000, 512),
    OK_("312.5Ki",  "320000",   BSI, 320000000, 320000),   /* not whole Ki: no suffix */
    OK_("-1.5Gi",   "-1536Mi",  BSI, -1610612736000LL, -1610612736LL),
    OKRM("7Ei",      "7Ei",      BSI, 8070450532247928832LL),
    OKRM("8Ei",      "9223372036854775807", BSI, INT64_MAX),
    OKRM("16Ei",     "9223372036854775807", BSI, INT64_MAX),
    OKRM("9223372036854775807Ki", "9223372036854775807", BSI, INT64_MAX),
    OKRM("-9Ei",     "-9223372036854775807", BSI, -INT64_MAX),
    /* 2^-60 Ei is exactly 1; one more digit far below 1n still rounds up */
    OK_("0.000000000000000000867361737988403547205962240695953369140625Ei",
        "1", BSI, 1000, 1),
    OK_("0.0000000000000000008673617379884035472059622406959533691406251Ei",
        "1000000001n", BSI, 1001, 2),
    /* int64 edges: parsing keeps them, conversions say RANGE */
    OKRM("9223372036854775807",  "9223372036854775807",  DSI, INT64_MAX),
    OKRR("9223372036854775808",  "9223372036854775808",  DSI),
    OKRM("-9223372036854775808", "-9223372036854775808", DSI, INT64_MIN),
    OK_("9223372036854775.807", "9223372036854775807m", DSI, INT64_MAX, 9223372036854776LL),
    OKRM("9223372036854775.808", "9223372036854775808m", DSI, 9223372036854776LL),
    /* Kubernetes reads these as zero (its fast path) */
    OK_("-000",  "0", DSI, 0, 0),
    OK_("-",     "0", DSI, 0, 0),
    OK_(".",     "0", DSI, 0, 0),
    OK_("Mi",    "0", BSI, 0, 0),
    OK_("0Ki",   "0", BSI, 0, 0),
    OK_("e-9",   "0", DEX, 0, 0),
    OK_("0e1000", "0", DEX, 0, 0),
    /* tailor: k8s prints "1" for these (drops the suffix) */
    OKRR("1000E",  "1000E",  DSI),
    OKRR("12345678901234567890123456789", "12345678901234567890123456789", DSI),
    /* ... which its slow path rejects */
    BAD("Ei",    TLR_E_PARSE),
    BAD("-.Pi",  TLR_E_PARSE),
    BAD("e-10",  TLR_E_PARSE),
    /* garbage */
    BAD("",      TLR_E_PARSE),
    BAD("1.2.3", TLR_E_PARSE),
    BAD("abc",   TLR_E_PARSE),
    BAD("aoeu",  TLR_E_PARSE),
    BAD("1Gb",   TLR_E_PARSE),
    BAD("- 1",   TLR_E_PARSE),
    BAD(" 1",    TLR_E_PARSE),
    BAD("1 ",    TLR_E_PARSE),
    BAD("1i",    TLR_E_PARSE),
    BAD(".5i",   TLR_E_PARSE),
    BAD("-3.01i", TLR_E_PARSE),
    BAD("-3.01e-", TLR_E_PARSE),
    BAD("0.1mi", TLR_E_PARSE),
    BAD("0.1am", TLR_E_PARSE),
    BAD("1.1.M", TLR_E_PARSE),
    BAD("1+1.0M", TLR_E_PARSE),
    BAD("12e-3m", TLR_E_PARSE),
    BAD("1e",    TLR_E_PARSE),
    BAD("1ee3",  TLR_E_PARSE),
    BAD("1e+",   TLR_E_PARSE),
    BAD("1Mi3",  TLR_E_PARSE),
    BAD("1k3",   TLR_E_PARSE),
    BAD("1e3.5", TLR_E_PARSE),
    BAD("0x10",  TLR_E_PARSE),
    BAD("1,5",   TLR_E_PARSE),
    BAD("1e99999999999999999999", TLR_E_PARSE),   /* k8s: ParseInt fails */
    /* tailor: beyond what we represent */
    BAD("1e29",  TLR_E_RANGE),
    BAD("100000000000E", TLR_E_RANGE),
    BAD("123456789012345678901234567890", TLR_E_RANGE),
    BAD("1e99999999999", TLR_E_RANGE),
    BAD("-1e3000000000", TLR_E_RANGE),
};

static void test_parse_table(void **state)
{
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const qcase *c = &cases[i];
        tlr_quantity q;
        char buf[TLR_QUANTITY_STR_MAX];
        int64_t v = 0;
        int rc = tlr_quantity_parse(c->in, &q);

        if (rc != c->rc) {
            printf("FAIL parse(\"%s\"): got rc %s, want %s\n", c->in,
                   tlr_errname(rc), tlr_errname(c->rc));
            failures++;
            continue;
        }
        if (rc != TLR_OK)
            continue;
        rc = tlr_quantity_format(&q, buf, sizeof(buf));
        if (rc != TLR_OK || strcmp(buf, c->str) != 0) {
            printf("FAIL format(\"%s\"): got \"%s\" (%s), want \"%s\"\n", c->in,
                   rc == TLR_OK ? buf : "", tlr_errname(rc), c->str);
            failures++;
        }
        if (q.fmt != c->fmt) {
            printf("FAIL fmt(\"%s\"): got %d, want %d\n", c->in, q.fmt, c->fmt);
            failures++;
        }
        rc = tlr_quantity_milli(&q, &v);
        if (rc != c->milli_rc || (rc == TLR_OK && v != c->milli)) {
            printf("FAIL milli(\"%s\"): got %s %lld, want %s %lld\n", c->in,
                   tlr_errname(rc), (long long)v, tlr_errname(c->milli_rc),
                   (long long)c->milli);
            failures++;
        }
        v = 0;
        rc = tlr_quantity_value(&q, &v);
        if (rc != c->value_rc || (rc == TLR_OK && v != c->value)) {
            printf("FAIL value(\"%s\"): got %s %lld, want %s %lld\n", c->in,
                   tlr_errname(rc), (long long)v, tlr_errname(c->value_rc),
                   (long long)c->value);
            failures++;
        }
        /* the canonical string parses back to the same value */
        {
            tlr_quantity q2;

            if (tlr_quantity_parse(buf, &q2) != TLR_OK || tlr_quantity_cmp(&q, &q2) != 0) {
                printf("FAIL round trip(\"%s\" -> \"%s\")\n", c->in, buf);
                failures++;
            }
        }
    }
    assert_int_equal(failures, 0);
}

static void test_out_untouched_on_error(void **state)
{
    tlr_quantity q = tlr_quantity_from_value(42, TLR_QFMT_BINARY_SI), before = q;
    int64_t v = 7;

    (void)state;
    assert_int_equal(tlr_quantity_parse("1.2.3", &q), TLR_E_PARSE);
    assert_memory_equal(&q, &before, sizeof(q));
    assert_int_equal(tlr_quantity_parse(NULL, &q), TLR_E_PARSE);
    assert_int_equal(tlr_quantity_parse("1", NULL), TLR_E_INVAL);
    assert_int_equal(tlr_quantity_parse_milli("9223372036854775808", &v), TLR_E_RANGE);
    assert_int_equal(v, 7);
    assert_int_equal(tlr_quantity_parse_value("1Gb", &v), TLR_E_PARSE);
    assert_int_equal(v, 7);
}

static void test_parse_helpers(void **state)
{
    static const struct { const char *in; int milli_rc; int64_t milli; int value_rc; int64_t value; } t[] = {
        { "250m",  TLR_OK, 250,         TLR_OK, 1 },
        { "2",     TLR_OK, 2000,        TLR_OK, 2 },
        { "1.0001", TLR_OK, 1001,       TLR_OK, 2 },
        { "4Gi",   TLR_OK, 4294967296000LL, TLR_OK, 4294967296LL },
        { "8Ei",   TLR_E_RANGE, 0,      TLR_OK, INT64_MAX },
        { "x",     TLR_E_PARSE, 0,      TLR_E_PARSE, 0 },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int64_t m = 0, v = 0;
        int rm = tlr_quantity_parse_milli(t[i].in, &m);
        int rv = tlr_quantity_parse_value(t[i].in, &v);

        if (rm != t[i].milli_rc || (rm == TLR_OK && m != t[i].milli)) {
            printf("FAIL parse_milli(\"%s\"): got %s %lld, want %s %lld\n", t[i].in,
                   tlr_errname(rm), (long long)m, tlr_errname(t[i].milli_rc),
                   (long long)t[i].milli);
            failures++;
        }
        if (rv != t[i].value_rc || (rv == TLR_OK && v != t[i].value)) {
            printf("FAIL parse_value(\"%s\"): got %s %lld, want %s %lld\n", t[i].in,
                   tlr_errname(rv), (long long)v, tlr_errname(t[i].value_rc),
                   (long long)t[i].value);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_format_helpers(void **state)
{
    static const struct { int bytes; int64_t v; const char *want; } t[] = {
        /* NewMilliQuantity(v, DecimalSI) */
        { 0, 1500, "1500m" },
        { 0, 2000, "2" },
        { 0, 100, "100m" },
        { 0, 0, "0" },
        { 0, -250, "-250m" },
        { 0, 1000000, "1k" },
        { 0, 1234000, "1234" },
        { 0, INT64_MAX, "9223372036854775807m" },
        { 0, INT64_MIN, "-9223372036854775808m" },
        /* NewQuantity(v, BinarySI) */
        { 1, 1073741824LL, "1Gi" },
        { 1, 1024, "1Ki" },
        { 1, 1048576, "1Mi" },
        { 1, 1500, "1500" },
        { 1, 1000, "1k" },          /* below 1Ki prints as DecimalSI */
        { 1, 512, "512" },
        { 1, 0, "0" },
        { 1, 1536 * 1024, "1536Ki" },
        { 1, 1000000000, "1000000000" },
        { 1, -2048, "-2Ki" },
        { 1, INT64_MAX, "9223372036854775807" },
        { 1, 8070450532247928832LL, "7Ei" },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char buf[TLR_QUANTITY_STR_MAX] = "";
        int rc = t[i].bytes ? tlr_quantity_format_bytes(t[i].v, buf, sizeof(buf))
                            : tlr_quantity_format_milli(t[i].v, buf, sizeof(buf));

        if (rc != TLR_OK || strcmp(buf, t[i].want) != 0) {
            printf("FAIL format_%s(%lld): got \"%s\" (%s), want \"%s\"\n",
                   t[i].bytes ? "bytes" : "milli", (long long)t[i].v, buf,
                   tlr_errname(rc), t[i].want);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_format_other(void **state)
{
    tlr_quantity q;
    char buf[TLR_QUANTITY_STR_MAX];
    char small[3] = "xx";

    (void)state;
    /* TestMilliNewSet: BinarySI milli values below 1Ki change format */
    q = tlr_quantity_from_milli(1024, TLR_QFMT_BINARY_SI);
    assert_int_equal(tlr_quantity_format(&q, buf, sizeof(buf)), TLR_OK);
    assert_string_equal(buf, "1024m");
    q = tlr_quantity_from_milli(1024 * 1024, TLR_QFMT_BINARY_SI);
    assert_int_equal(tlr_quantity_format(&q, buf, sizeof(buf)), TLR_OK);
    assert_string_equal(buf, "1048576m");
    /* an unknown format prints as DecimalExponent */
    q = tlr_quantity_from_milli(1000000, (tlr_quantity_fmt)7);
    assert_int_equal(tlr_quantity_format(&q, buf, sizeof(buf)), TLR_OK);
    assert_string_equal(buf, "1e3");
    q = tlr_quantity_from_value(1000000, TLR_QFMT_DECIMAL_EXP);
    assert_int_equal(tlr_quantity_format(&q, buf, sizeof(buf)), TLR_OK);
    assert_string_equal(buf, "1e6");
    /* too small a buffer: error, buffer untouched */
    q = tlr_quantity_from_milli(1500, TLR_QFMT_DECIMAL_SI);
    assert_int_equal(tlr_quantity_format(&q, small, sizeof(small)), TLR_E_TOOBIG);
    assert_string_equal(small, "xx");
    assert_int_equal(tlr_quantity_format(&q, buf, 6), TLR_OK);
    assert_string_equal(buf, "1500m");
    assert_int_equal(tlr_quantity_format(NULL, buf, sizeof(buf)), TLR_E_INVAL);
}

static void test_cmp(void **state)
{
    static const struct { const char *a, *b; int want; } t[] = {
        { "1",     "1000m",  0 },
        { "1Ki",   "1024",   0 },
        { "1e3",   "1k",     0 },
        { "-0",    "0Mi",    0 },
        { "1.5Gi", "1536Mi", 0 },
        { "100m",  "0.1",    0 },
        { "1",     "2",     -1 },
        { "-1",    "-2",     1 },
        { "-1",    "0",     -1 },
        { "1n",    "0",      1 },
        { "8Ei",   "9223372036854775807", 0 },
        { "9223372036854775808", "8Ei", 1 },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_quantity a, b;
        int got;

        assert_int_equal(tlr_quantity_parse(t[i].a, &a), TLR_OK);
        assert_int_equal(tlr_quantity_parse(t[i].b, &b), TLR_OK);
        got = tlr_quantity_cmp(&a, &b);
        if (got != t[i].want || tlr_quantity_cmp(&b, &a) != -t[i].want) {
            printf("FAIL cmp(\"%s\", \"%s\"): got %d, want %d\n", t[i].a, t[i].b,
                   got, t[i].want);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

/* Every value Kubernetes can print for an int64 milli/byte count parses
 * back to that count. */
static void test_int64_round_trip(void **state)
{
    static const int64_t vals[] = {
        0, 1, -1, 7, 999, 1000, 1001, 1023, 1024, 1025, 4096, 123456789,
        1LL << 40, (1LL << 40) + 1, 1000000000000LL, INT64_MAX, INT64_MIN + 1,
        INT64_MAX / 1000, -(INT64_MAX / 1000),
    };

    (void)state;
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        char buf[TLR_QUANTITY_STR_MAX];
        int64_t got = 0;

        assert_int_equal(tlr_quantity_format_bytes(vals[i], buf, sizeof(buf)), TLR_OK);
        if (tlr_quantity_parse_value(buf, &got) != TLR_OK || got != vals[i]) {
            printf("FAIL bytes %lld -> \"%s\" -> %lld\n", (long long)vals[i], buf,
                   (long long)got);
            fail();
        }
        assert_int_equal(tlr_quantity_format_milli(vals[i], buf, sizeof(buf)), TLR_OK);
        if (tlr_quantity_parse_milli(buf, &got) != TLR_OK || got != vals[i]) {
            printf("FAIL milli %lld -> \"%s\" -> %lld\n", (long long)vals[i], buf,
                   (long long)got);
            fail();
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_out_untouched_on_error),
        cmocka_unit_test(test_parse_helpers),
        cmocka_unit_test(test_format_helpers),
        cmocka_unit_test(test_format_other),
        cmocka_unit_test(test_cmp),
        cmocka_unit_test(test_int64_round_trip),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
