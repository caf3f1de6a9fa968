/* base_test.c - errors, buffers, arena, time and duration parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_arena.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_time.h"

static void test_strerror(void **state)
{
    (void)state;
    assert_string_equal(tlr_strerror(TLR_OK), "success");
    assert_string_equal(tlr_strerror(TLR_E_TIMEOUT), "timed out");
    assert_string_equal(tlr_errname(TLR_E_VERSION), "VERSION");
    assert_int_equal(TLR_E_DECODE, 10);     /* wire numbers are fixed */
    assert_int_equal(TLR_E_VERSION, 11);
    assert_string_equal(tlr_strerror(9999), "unknown error");
    assert_string_equal(tlr_errname(-3), "UNKNOWN");
}

static void test_buf_ceiling(void **state)
{
    (void)state;
    tlr_buf b;
    tlr_buf_init(&b, 8);
    assert_int_equal(tlr_buf_adds(&b, "12345678"), TLR_OK);
    assert_int_equal(tlr_buf_addc(&b, 'x'), TLR_E_TOOBIG);
    assert_string_equal(tlr_buf_str(&b), "12345678");   /* unchanged */
    tlr_buf_reset(&b);
    assert_int_equal(tlr_buf_printf(&b, "%d-%s", 42, "ab"), TLR_OK);
    assert_string_equal(tlr_buf_str(&b), "42-ab");
    assert_int_equal(tlr_buf_printf(&b, "%s", "toolong"), TLR_E_TOOBIG);
    assert_string_equal(tlr_buf_str(&b), "42-ab");
    tlr_buf_free(&b);
}

/* U+FFFD, the replacement character, in UTF-8 */
#define R "\xef\xbf\xbd"

static void test_buf_json(void **state)
{
    (void)state;
    static const struct { const char *in, *want; } cases[] = {
        { "plain", "\"plain\"" },
        { "q\"b\\s", "\"q\\\"b\\\\s\"" },
        { "nl\n\t", "\"nl\\n\\t\"" },
        { "\x01", "\"\\u0001\"" },
        { "", "\"\"" },
        /* UTF-8 passes; what is not UTF-8 becomes U+FFFD, byte by byte */
        { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
        { "a\xff" "b", ("\"a" R "b\"") },
        { "\xc3", ("\"" R "\"") },             /* cut short */
        { "\xc0\xaf", ("\"" R R "\"") },       /* overlong '/' */
        { "\xed\xa0\x80", ("\"" R R R "\"") }, /* a surrogate */
        { "\xf4\x90\x80\x80", ("\"" R R R R "\"") }, /* past U+10FFFF */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tlr_buf b;
        tlr_buf_init(&b, 1024);
        assert_int_equal(tlr_buf_add_json_str(&b, cases[i].in), TLR_OK);
        if (strcmp(tlr_buf_str(&b), cases[i].want))
            fail_msg("case %zu: got %s want %s", i, tlr_buf_str(&b), cases[i].want);
        tlr_buf_free(&b);
    }
    tlr_buf b;
    tlr_buf_init(&b, 4);
    assert_int_equal(tlr_buf_add_json_str(&b, "abcdef"), TLR_E_TOOBIG);
    assert_int_equal(b.len, 0);         /* all or nothing */
    tlr_buf_free(&b);
    /* Capped: cut on a character boundary, the length said. */
    tlr_buf_init(&b, 1024);
    assert_int_equal(tlr_buf_add_json_strn(&b, "ab\xc3\xa9" "cd", 3), TLR_OK);
    assert_string_equal(tlr_buf_str(&b), "\"ab...(6 bytes)\"");
    tlr_buf_free(&b);
    tlr_buf_init(&b, 1024);
    assert_int_equal(tlr_buf_add_json_strn(&b, "abc", 3), TLR_OK);
    assert_string_equal(tlr_buf_str(&b), "\"abc\"");
    tlr_buf_free(&b);
}
#undef R

static void test_arena(void **state)
{
    (void)state;
    tlr_arena *a;
    tlr_arena_create(128, &a);
    char *s = tlr_arena_strdup(a, "hello");
    assert_string_equal(s, "hello");
    for (int i = 0; i < 100; i++) {
        uint64_t *p = tlr_arena_alloc(a, sizeof(uint64_t) * 3);
        assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
        p[2] = (uint64_t)i;
    }
    void *big = tlr_arena_calloc(a, 1000, 8);   /* larger than a block */
    assert_non_null(big);
    assert_true(tlr_arena_used(a) >= 8000);
    tlr_arena_reset(a);
    assert_int_equal(tlr_arena_used(a), 0);
    assert_string_equal(tlr_arena_strdup(a, "again"), "again");
    tlr_arena_free(a);
}

static void test_duration(void **state)
{
    (void)state;
    static const struct { const char *in; int rc; int64_t ms; } cases[] = {
        { "1s", TLR_OK, 1000 },
        { "300ms", TLR_OK, 300 },
        { "1.5s", TLR_OK, 1500 },
        { "2m", TLR_OK, 120000 },
        { "1h30m", TLR_OK, 5400000 },
        { "720h", TLR_OK, 2592000000LL },
        { "0", TLR_OK, 0 },
        { "-1s", TLR_OK, -1000 },
        { "1000us", TLR_OK, 1 },
        { "", TLR_E_PARSE, 0 },
        { "5", TLR_E_PARSE, 0 },
        { "1x", TLR_E_PARSE, 0 },
        { "s", TLR_E_PARSE, 0 },
        { "1s2", TLR_E_PARSE, 0 },
        { "99999999999h", TLR_E_RANGE, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t ms = -42;
        int rc = tlr_duration_parse(cases[i].in, &ms);
        if (rc != cases[i].rc || (rc == TLR_OK && ms != cases[i].ms))
            fail_msg("%s: got rc=%d ms=%lld want rc=%d ms=%lld", cases[i].in, rc,
                     (long long)ms, cases[i].rc, (long long)cases[i].ms);
    }
    char buf[32];
    tlr_duration_format(5400000, buf, sizeof(buf));
    assert_string_equal(buf, "1h30m0s");
    tlr_duration_format(1500, buf, sizeof(buf));
    assert_string_equal(buf, "1.5s");
    tlr_duration_format(61025, buf, sizeof(buf));
    assert_string_equal(buf, "1m1.025s");
    tlr_duration_format(250, buf, sizeof(buf));
    assert_string_equal(buf, "250ms");
}

static void test_time(void **state)
{
    (void)state;
    char buf[TLR_TIME_BUFLEN];
    tlr_time_format_ms(1764687845123LL, buf);
    assert_string_equal(buf, "2025-12-02T15:04:05.123Z");
    tlr_time_format_s(1764687845123LL, buf);
    assert_string_equal(buf, "2025-12-02T15:04:05Z");
    int64_t ms;
    assert_int_equal(tlr_time_parse("2025-12-02T15:04:05Z", &ms), TLR_OK);
    assert_int_equal(ms, 1764687845000LL);
    assert_int_equal(tlr_time_parse("2025-12-02T15:04:05.5+01:00", &ms), TLR_OK);
    assert_int_equal(ms, 1764687845500LL - 3600000);
    assert_int_equal(tlr_time_parse("2025-13-02T15:04:05Z", &ms), TLR_E_RANGE);
    assert_int_equal(tlr_time_parse("yesterday", &ms), TLR_E_PARSE);
    assert_int_equal(tlr_time_parse("2025-12-02T15:04:05", &ms), TLR_E_PARSE);
}

static void test_retry_after(void **state)
{
    (void)state;
    /* now = Sun, 06 Nov 1994 08:49:37 GMT */
    const int64_t now = 784111777000;
    static const struct {
        const char *in;
        int rc;
        int64_t ms;
    } t[] = {
        { "120", TLR_OK, 120000 },
        { " 0 ", TLR_OK, 0 },
        { "Sun, 06 Nov 1994 08:49:47 GMT", TLR_OK, 10000 },
        { "Sun, 06 Nov 1994 08:00:00 GMT", TLR_OK, 0 },   /* in the past */
        { "Mon, 07 Nov 1994 08:49:37 GMT", TLR_OK, 86400000 },
        { "-5", TLR_E_PARSE, 0 },
        { "1.5", TLR_E_PARSE, 0 },
        { "soon", TLR_E_PARSE, 0 },
        { "", TLR_E_PARSE, 0 },
        { "Sunday, 06-Nov-94 08:49:37 GMT", TLR_E_PARSE, 0 },   /* obsolete RFC 850 */
        { "Sun, 06 Nov 1994 08:49:37 PST", TLR_E_PARSE, 0 },
        { "Sun, 06 Xyz 1994 08:49:37 GMT", TLR_E_PARSE, 0 },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int64_t ms = -1;
        int rc = tlr_retry_after_parse(t[i].in, now, &ms);
        if (rc != t[i].rc || (rc == TLR_OK && ms != t[i].ms)) {
            printf("FAIL retry-after \"%s\": got %s %lld, want %s %lld\n", t[i].in,
                   tlr_errname(rc), (long long)ms, tlr_errname(t[i].rc), (long long)t[i].ms);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void strv_addf(char ***v, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tlr_strv_vaddf(v, n, fmt, ap);
    va_end(ap);
}

/* Formatted strings are as long as they need to be: no truncation. */
/* A string list keeps copies in order, finds them, and is empty again
 * after free (and may be reused). */
static void test_strvec(void **state)
{
    (void)state;
    tlr_strvec l = { 0 };
    char buf[16];
    for (int i = 0; i < 20; i++) {
        snprintf(buf, sizeof(buf), "s%d", i);
        tlr_strvec_add(&l, buf);
    }
    buf[0] = 'x';   /* the list holds copies */
    assert_int_equal(l.n, 20);
    assert_string_equal(l.v[0], "s0");
    assert_string_equal(l.v[19], "s19");
    assert_int_equal(tlr_strvec_find(&l, "s7"), 7);
    assert_int_equal(tlr_strvec_find(&l, "s20"), -1);
    tlr_strvec_free(&l);
    assert_int_equal(l.n, 0);
    assert_null(l.v);
    tlr_strvec_add(&l, "again");
    assert_int_equal(tlr_strvec_find(&l, "again"), 0);
    tlr_strvec_free(&l);
}

static void test_strdupf(void **state)
{
    (void)state;
    char *s = tlr_strdupf("%s-%d", "node", 7);
    assert_string_equal(s, "node-7");
    free(s);
    char big[10000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    s = tlr_strdupf("<%s>", big);
    assert_int_equal(strlen(s), sizeof(big) + 1);
    free(s);
    char **v = NULL;
    size_t n = 0;
    strv_addf(&v, &n, "a%d", 1);
    strv_addf(&v, &n, "%s", big);
    assert_int_equal(n, 2);
    assert_string_equal(v[0], "a1");
    assert_int_equal(strlen(v[1]), sizeof(big) - 1);
    free(v[0]);
    free(v[1]);
    free(v);
}

/* The published FNV test vectors (draft-eastlake-fnv), and values that
 * persisted names depend on: they must never change. */
static void test_fnv(void **state)
{
    (void)state;
    assert_int_equal(tlr_fnv1a64_str(TLR_FNV64_BASIS, ""), 0xcbf29ce484222325ULL);
    assert_int_equal(tlr_fnv1a64_str(TLR_FNV64_BASIS, "a"), 0xaf63dc4c8601ec8cULL);
    assert_int_equal(tlr_fnv1a64_str(TLR_FNV64_BASIS, "foobar"), 0x85944171f73967e8ULL);
    assert_int_equal(tlr_fnv1a64_str(tlr_fnv1a64_str(TLR_FNV64_BASIS, "foo"), "bar"),
                     0x85944171f73967e8ULL);
    assert_int_equal(tlr_fnv1a64(TLR_FNV64_BASIS, "foobar", 6), 0x85944171f73967e8ULL);
    assert_int_equal(tlr_fnv1a64_str(TLR_FNV64_BASIS, NULL), TLR_FNV64_BASIS);
    assert_int_equal(tlr_fnv1a32_str(TLR_FNV32_BASIS, "a"), 0xe40c292cu);
    assert_int_equal(tlr_fnv1a32_str(TLR_FNV32_BASIS, "foobar"), 0xbf9cf968u);
    assert_int_equal(tlr_fnv1a32(TLR_FNV32_BASIS, "foobar", 6), 0xbf9cf968u);
    assert_int_equal(tlr_fnv1_64_str(TLR_FNV64_BASIS, "a"), 0xaf63bd4c8601b7beULL);
    assert_int_equal(tlr_fnv1_64_str(TLR_FNV64_BASIS, "foobar"), 0x340d8765a4dda9c2ULL);
    /* tailor's short basis (the disruptor's protection-room suffixes) */
    assert_int_equal(tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, "ip-10-0-0-1.ec2.internal"),
                     0x4f2935f9802ee0d5ULL);
    assert_int_equal(tlr_fnv1a64_word(TLR_FNV64_BASIS_SHORT, 7), 0x44bd2cd473ccf94cULL);
}

/* Pages joining a list: each page's elements after what is there, in
 * order, the page's array freed (ASan/valgrind would see it leak); an
 * empty page changes nothing. */
static void test_move_onto(void **state)
{
    (void)state;
    int *all = NULL;
    size_t n = 0;
    for (int page = 0; page < 3; page++) {
        int *got = tlr_malloc(4 * sizeof(*got));
        for (int k = 0; k < 4; k++)
            got[k] = page * 10 + k;
        TLR_MOVE_ONTO(all, n, got, page == 1 ? 0 : 4);
    }
    assert_int_equal(n, 8);
    static const int want[] = { 0, 1, 2, 3, 20, 21, 22, 23 };
    for (size_t k = 0; k < n; k++)
        assert_int_equal(all[k], want[k]);
    free(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_buf_ceiling),
        cmocka_unit_test(test_buf_json),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_fnv),
        cmocka_unit_test(test_strdupf),
        cmocka_unit_test(test_strvec),
        cmocka_unit_test(test_move_onto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
