/* base64_test.c - RFC 4648 vectors both ways, whitespace, every byte
 * value, and what the strict and the lax decoder each refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_base64.h"
#include "tlr_err.h"

/* RFC 4648 section 10. */
static const struct { const char *plain, *b64; } rfc[] = {
    { "", "" },
    { "f", "Zg==" },
    { "fo", "Zm8=" },
    { "foo", "Zm9v" },
    { "foob", "Zm9vYg==" },
    { "fooba", "Zm9vYmE=" },
    { "foobar", "Zm9vYmFy" },
};
#define NRFC (sizeof(rfc) / sizeof(rfc[0]))

static void test_rfc4648_encode(void **state)
{
    (void)state;
    for (size_t i = 0; i < NRFC; i++) {
        char *got = tlr_base64_encode(rfc[i].plain, strlen(rfc[i].plain));
        if (strcmp(got, rfc[i].b64) != 0)
            fail_msg("encode \"%s\": got \"%s\" want \"%s\"", rfc[i].plain, got, rfc[i].b64);
        free(got);
    }
    char *empty = tlr_base64_encode(NULL, 0);
    assert_string_equal(empty, "");
    free(empty);
}

static void test_rfc4648_decode(void **state)
{
    (void)state;
    for (size_t i = 0; i < NRFC; i++) {
        for (int lax = 0; lax < 2; lax++) {
            char *got = NULL;
            size_t n = 99;
            int rc = (lax ? tlr_base64_decode_lax : tlr_base64_decode)(
                rfc[i].b64, strlen(rfc[i].b64), &got, &n);
            if (rc != TLR_OK || n != strlen(rfc[i].plain) || strcmp(got, rfc[i].plain) != 0)
                fail_msg("decode%s \"%s\": got %s \"%s\" (%zu) want \"%s\"", lax ? "_lax" : "",
                         rfc[i].b64, tlr_errname(rc), got ? got : "", n, rfc[i].plain);
            free(got);
        }
    }
}

/* Every byte value, NULs included, through encode and decode. */
static void test_round_trip_binary(void **state)
{
    (void)state;
    unsigned char all[256];
    for (size_t i = 0; i < sizeof(all); i++)
        all[i] = (unsigned char)(255 - i);
    for (size_t len = 0; len <= sizeof(all); len += 17) {
        char *b64 = tlr_base64_encode(all, len), *back = NULL;
        size_t n = 0;
        assert_int_equal(strlen(b64), 4 * ((len + 2) / 3));
        assert_int_equal(tlr_base64_decode(b64, strlen(b64), &back, &n), TLR_OK);
        assert_int_equal(n, len);
        assert_memory_equal(back, all, len);
        assert_int_equal(back[n], '\0');
        free(b64);
        free(back);
    }
}

/* want / want_lax: the decoded text, or NULL for TLR_E_PARSE. */
static void test_decode_cases(void **state)
{
    (void)state;
    static const struct {
        const char *name, *in, *want, *want_lax;
    } cases[] = {
        { "wrapped lines", "aGVs\r\nbG8g\nd29y bGQ=\t\n", "hello world", "hello world" },
        { "only whitespace", " \r\n\t", "", "" },
        { "whitespace in padding", "Zg=\n=", "f", "f" },
        { "all the alphabet", "+/+/", "\xfb\xff\xbf", "\xfb\xff\xbf" },
        { "non-zero spare bits", "Zh==", "f", "f" },
        { "letter outside alphabet", "Zm9*", NULL, NULL },
        { "url-safe alphabet", "-_-_", NULL, NULL },
        { "vertical tab", "Zm9v\v", NULL, NULL },
        { "data after padding", "Zg==Zg==", NULL, NULL },
        { "letter after one pad", "Zm=v", NULL, NULL },
        { "three pads", "Zg===", NULL, NULL },
        { "pad only", "====", NULL, NULL },
        { "one stray letter", "Zm9vY", NULL, NULL },
        { "no padding", "Zm8", NULL, "fo" },
        { "no padding, two letters", "Zg", NULL, "f" },
        { "short padding", "Zg=", NULL, "f" },
        { "padding not needed", "Zm9v=", NULL, "foo" },
        { "one pad, two needed", "Zm9vYg=", NULL, "foob" },
        { "a lone pad", "=", NULL, "" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int lax = 0; lax < 2; lax++) {
            const char *want = lax ? cases[i].want_lax : cases[i].want;
            char *got = NULL;
            size_t n = 0;
            int rc = (lax ? tlr_base64_decode_lax : tlr_base64_decode)(
                cases[i].in, strlen(cases[i].in), &got, &n);
            int want_rc = want != NULL ? TLR_OK : TLR_E_PARSE;
            if (rc != want_rc || (want != NULL && (n != strlen(want) || strcmp(got, want) != 0)))
                fail_msg("%s%s: got %s \"%s\" want %s \"%s\"", cases[i].name,
                         lax ? " (lax)" : "", tlr_errname(rc), got ? got : "",
                         tlr_errname(want_rc), want ? want : "");
            if (rc != TLR_OK)
                assert_null(got);   /* not written on error */
            free(got);
        }
    }
}

static void test_decode_edges(void **state)
{
    (void)state;
    char *got = NULL;
    size_t n = 0;
    /* len is honoured: no NUL needed, and a NUL inside is not a letter */
    assert_int_equal(tlr_base64_decode("Zm9vXXXX", 4, &got, &n), TLR_OK);
    assert_string_equal(got, "foo");
    free(got);
    got = NULL;
    assert_int_equal(tlr_base64_decode("Zm\0v", 4, &got, &n), TLR_E_PARSE);
    assert_null(got);
    assert_int_equal(tlr_base64_decode("Zg==", 4, &got, NULL), TLR_OK);   /* outlen optional */
    assert_string_equal(got, "f");
    free(got);
    assert_int_equal(tlr_base64_decode(NULL, 0, &got, &n), TLR_OK);
    assert_string_equal(got, "");
    free(got);
    assert_int_equal(tlr_base64_decode(NULL, 1, &got, &n), TLR_E_INVAL);
    assert_int_equal(tlr_base64_decode("Zg==", 4, NULL, &n), TLR_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_encode),
        cmocka_unit_test(test_rfc4648_decode),
        cmocka_unit_test(test_round_trip_binary),
        cmocka_unit_test(test_decode_cases),
        cmocka_unit_test(test_decode_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
