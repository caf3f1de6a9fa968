/* mime_test.c - tlr_mime: detection, parsing (folding, CRLF, preamble,
 * base64, errors), writing, round trips and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_mime.h"

/* The parts of d as "ct|body;ct|body;" for comparison. */
static char *describe(const tlr_mime_doc *d)
{
    tlr_buf b;
    tlr_buf_init(&b, (size_t)-1);
    for (size_t i = 0; i < d->n; i++) {
        tlr_buf_printf(&b, "%s|", d->parts[i].content_type);
        tlr_buf_add(&b, d->parts[i].body, d->parts[i].len);
        tlr_buf_addc(&b, ';');
    }
    return tlr_buf_take(&b);
}

typedef struct pcase {
    const char *in;
    int rc;
    const char *want;   /* OK: describe(); else a substring of err */
} pcase;

static void test_parse(void **state)
{
    static const pcase t[] = {
        { "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
          "--//\nContent-Type: text/x-shellscript\n\necho hi\n--//--\n",
          TLR_OK, "text/x-shellscript|echo hi;" },
        /* CRLF, unquoted boundary, preamble and epilogue ignored */
        { "Content-Type: multipart/mixed; boundary=XYZ\r\n\r\npreamble\r\n--XYZ\r\n"
          "Content-Type: a/b\r\n\r\nline1\r\nline2\r\n--XYZ  \r\nContent-Type: c/d\r\n\r\n"
          "x\r\n--XYZ--\r\nepilogue",
          TLR_OK, "a/b|line1\r\nline2;c/d|x;" },
        /* folded header, case-insensitive names, first Content-Type wins */
        { "mime-version: 1.0\ncontent-type: multipart/mixed;\n boundary=\"b\"\n\n--b\n"
          "CONTENT-TYPE: text/plain;\n\tcharset=us-ascii\nContent-Type: other\n\nbody\n\n--b--",
          TLR_OK, "text/plain; charset=us-ascii|body\n;" },
        /* a part without headers and an empty part */
        { "Content-Type: multipart/mixed; boundary=b\n\n--b\n\nnaked\n--b\nContent-Type: x/y\n\n\n--b--\n",
          TLR_OK, "|naked;x/y|;" },
        /* base64 parts are decoded */
        { "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: x/y\n"
          "Content-Transfer-Encoding: base64\n\naGVsbG8g\nd29ybGQ=\n--b--\n",
          TLR_OK, "x/y|hello world;" },
        { "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Transfer-Encoding: BASE64\n\n"
          "!!!\n--b--\n", TLR_E_PARSE, "line 4: part 1: bad base64 body" },
        /* a line that only starts like the delimiter is body text */
        { "Content-Type: multipart/mixed; boundary=b\n\n--b\n\n--bx\n--b --\n--b--\n",
          TLR_OK, "|--bx\n--b --;" },
        /* errors */
        { "Content-Type: text/plain\n\nhello", TLR_E_PARSE, "is not multipart" },
        { "MIME-Version: 1.0\n\nhello", TLR_E_PARSE, "no Content-Type header" },
        { "Content-Type: multipart/mixed\n\n--b\n--b--\n", TLR_E_PARSE, "names no boundary" },
        { "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: x/y\n\nbody\n",
          TLR_E_PARSE, "no closing delimiter \"--b--\"" },
        { "Content-Type: multipart/mixed; boundary=b\nnot a header\n\n--b--\n", TLR_E_PARSE,
          "line 2: malformed header line" },
        { "Content-Type: multipart/mixed; boundary=b\n\n--b\nbroken header line\n\nx\n--b--\n",
          TLR_E_PARSE, "line 4: malformed header line" },
        { " folded first\n", TLR_E_PARSE, "line 1: continuation line before any header" },
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_mime_doc d = { 0 };
        char err[256] = "";
        int rc = tlr_mime_parse(t[i].in, strlen(t[i].in), &d, err, sizeof(err));
        if (rc != t[i].rc) {
            printf("FAIL parse #%zu: got %s (%s), want %s\n", i, tlr_errname(rc), err,
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc == TLR_OK) {
            char *got = describe(&d);
            if (strcmp(got, t[i].want) != 0) {
                printf("FAIL parse #%zu:\n  got  %s\n  want %s\n", i, got, t[i].want);
                failures++;
            }
            free(got);
        } else if (strstr(err, t[i].want) == NULL) {
            printf("FAIL parse #%zu: got message \"%s\", want it to contain \"%s\"\n", i, err,
                   t[i].want);
            failures++;
        }
        tlr_mime_doc_free(&d);
    }
    assert_int_equal(failures, 0);
}

static void test_looks_like_and_media_type(void **state)
{
    static const struct {
        const char *in;
        int want;
    } t[] = {
        { "MIME-Version: 1.0\n", 1 },
        { "\n\n  content-type: multipart/mixed\n", 1 },
        { "#!/bin/bash\nMIME-Version: 1.0", 0 },
        { "apiVersion: node.eks.aws/v1alpha1", 0 },
        { "", 0 },
        { "Content-Type", 0 },
    };
    int failures = 0;
    char mt[64];
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int got = tlr_mime_looks_like(t[i].in, strlen(t[i].in));
        if (got != t[i].want) {
            printf("FAIL looks_like(%s): got %d, want %d\n", t[i].in, got, t[i].want);
            failures++;
        }
    }
    tlr_mime_media_type("Text/X-ShellScript ; charset=\"us-ascii\"", mt, sizeof(mt));
    if (strcmp(mt, "text/x-shellscript") != 0) {
        printf("FAIL media_type: got \"%s\", want \"text/x-shellscript\"\n", mt);
        failures++;
    }
    tlr_mime_media_type("application/node.eks.aws", mt, 8);
    if (strcmp(mt, "applica") != 0) {
        printf("FAIL media_type (truncated): got \"%s\", want \"applica\"\n", mt);
        failures++;
    }
    assert_int_equal(failures, 0);
}

static void test_write_and_round_trip(void **state)
{
    const tlr_mime_part parts[] = {
        { "text/x-shellscript; charset=\"us-ascii\"", "#!/bin/bash\necho hi\n", 20 },
        { "application/node.eks.aws", "kind: NodeConfig", 16 },
        { "", "", 0 },
        { "x/bin", "a\0b", 3 },
    };
    static const char want[] =
        "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
        "--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho hi\n\n"
        "--//\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\n"
        "--//\n\n\n"
        "--//\nContent-Type: x/bin\n\na\0b\n--//--\n";
    const size_t want_len = sizeof(want) - 1;   /* want holds a NUL */
    char *got = NULL, *again = NULL;
    tlr_mime_doc d = { 0 };
    char err[128] = "";
    (void)state;

    assert_int_equal(tlr_mime_write(parts, 4, "//", &got), TLR_OK);
    if (memcmp(got, want, want_len) != 0)
        printf("FAIL write:\n  got  %s\n  want %s\n", got, want);
    assert_memory_equal(got, want, want_len);
    size_t got_len = want_len;

    /* read back: the same parts, byte for byte; written again: the same text */
    assert_int_equal(tlr_mime_parse(got, got_len, &d, err, sizeof(err)), TLR_OK);
    assert_int_equal(d.n, 4);
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(d.parts[i].content_type, parts[i].content_type) != 0 ||
            d.parts[i].len != parts[i].len ||
            memcmp(d.parts[i].body, parts[i].body, parts[i].len) != 0) {
            printf("FAIL round trip part %zu: got \"%s\" (%zu bytes), want \"%s\" (%zu)\n", i,
                   d.parts[i].content_type, d.parts[i].len, parts[i].content_type,
                   parts[i].len);
            fail();
        }
    }
    assert_int_equal(tlr_mime_write(d.parts, d.n, "//", &again), TLR_OK);
    assert_memory_equal(again, got, want_len);
    free(again);
    free(got);
    tlr_mime_doc_free(&d);

    /* no parts at all */
    assert_int_equal(tlr_mime_write(NULL, 0, "b", &got), TLR_OK);
    assert_string_equal(got, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b--\n");
    free(got);
}

static void test_write_refuses(void **state)
{
    const tlr_mime_part with_delim[] = { { "text/plain", "a\n--//\nb", 8 } };
    const tlr_mime_part with_close[] = { { "text/plain", "--//--  ", 8 } };
    const tlr_mime_part harmless[] = { { "text/plain", "a --// b\n--//x", 14 } };
    const tlr_mime_part bad_ct[] = { { "text/plain\nX-Evil: 1", "a", 1 } };
    char *out = NULL;
    (void)state;

    assert_int_equal(tlr_mime_write(with_delim, 1, "//", &out), TLR_E_INVAL);
    assert_int_equal(tlr_mime_write(with_close, 1, "//", &out), TLR_E_INVAL);
    assert_int_equal(tlr_mime_write(bad_ct, 1, "//", &out), TLR_E_INVAL);
    assert_int_equal(tlr_mime_write(harmless, 1, "", &out), TLR_E_INVAL);
    assert_null(out);
    assert_int_equal(tlr_mime_write(harmless, 1, "//", &out), TLR_OK);
    free(out);
}

static void test_limits(void **state)
{
    tlr_buf b;
    tlr_mime_doc d = { 0 };
    char err[128] = "";
    (void)state;

    tlr_buf_init(&b, (size_t)-1);
    tlr_buf_adds(&b, "Content-Type: multipart/mixed; boundary=b\n\n");
    for (int i = 0; i < TLR_MIME_MAX_PARTS + 1; i++)
        tlr_buf_adds(&b, "--b\n\nx\n");
    tlr_buf_adds(&b, "--b--\n");
    assert_int_equal(tlr_mime_parse(b.data, b.len, &d, err, sizeof(err)), TLR_E_TOOBIG);
    assert_non_null(strstr(err, "more than 64 parts"));
    assert_int_equal(tlr_mime_parse(b.data, TLR_MIME_MAX_BYTES + 1u, &d, err, sizeof(err)),
                     TLR_E_TOOBIG);
    assert_int_equal(d.n, 0);
    tlr_buf_free(&b);
    /* a tiny err buffer is fine */
    assert_int_equal(tlr_mime_parse("x", 1, &d, err, 1), TLR_E_PARSE);
    assert_int_equal(tlr_mime_parse("x", 1, &d, NULL, 0), TLR_E_PARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_looks_like_and_media_type),
        cmocka_unit_test(test_write_and_round_trip),
        cmocka_unit_test(test_write_refuses),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
