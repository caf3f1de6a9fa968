/* toml_test.c - tlr_toml: the TOML 1.0 grammar user data uses, the
 * define-once rules, errors with line numbers, writing, round trips and
 * limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_toml.h"

typedef struct tcase {
    const char *in;
    int rc;
    const char *want;   /* OK: plain JSON; else a substring of err */
} tcase;

static int run_table(const tcase *t, size_t n)
{
    int failures = 0;

    for (size_t i = 0; i < n; i++) {
        json_object *o = NULL;
        char err[256] = "";
        int rc = tlr_toml_parse(t[i].in, strlen(t[i].in), &o, err, sizeof(err));
        if (rc != t[i].rc) {
            printf("FAIL toml(%s): got %s (%s), want %s\n", t[i].in, tlr_errname(rc), err,
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc == TLR_OK) {
            const char *got = tlr_json_to_string(o, JSON_C_TO_STRING_PLAIN);
            if (strcmp(got, t[i].want) != 0) {
                printf("FAIL toml(%s):\n  got  %s\n  want %s\n", t[i].in, got, t[i].want);
                failures++;
            }
        } else if (strstr(err, t[i].want) == NULL) {
            printf("FAIL toml(%s): got message \"%s\", want it to contain \"%s\"\n", t[i].in,
                   err, t[i].want);
            failures++;
        }
        json_object_put(o);
    }
    return failures;
}

static void test_values(void **state)
{
    static const tcase t[] = {
        { "", TLR_OK, "{}" },
        { "# only a comment\n\n", TLR_OK, "{}" },
        { "a = 1\nb = -17\nc = +3\nd = 1_000\ne = 0xDEAD_beef\nf = 0o17\ng = 0b101\nh = 0",
          TLR_OK, "{\"a\":1,\"b\":-17,\"c\":3,\"d\":1000,\"e\":3735928559,\"f\":15,\"g\":5,\"h\":0}" },
        { "a = 9223372036854775807\nb = -9223372036854775808", TLR_OK,
          "{\"a\":9223372036854775807,\"b\":-9223372036854775808}" },
        { "a = 1.5\nb = -2e3\nc = 6.626e-34\nd = 1_0.0_1", TLR_OK,
          "{\"a\":1.5,\"b\":-2000.0,\"c\":6.626e-34,\"d\":10.01}" },
        { "t = true\nf = false", TLR_OK, "{\"t\":true,\"f\":false}" },
        { "a = \"tab\\there \\\"q\\\" \\\\ \\u00e9 \\U0001F600\"", TLR_OK,
          "{\"a\":\"tab\\there \\\"q\\\" \\\\ \xc3\xa9 \xf0\x9f\x98\x80\"}" },
        { "a = 'C:\\path\\no escapes'", TLR_OK, "{\"a\":\"C:\\\\path\\\\no escapes\"}" },
        { "a = \"\"\"\nline1\nline2\\\n    continued\"\"\"", TLR_OK,
          "{\"a\":\"line1\\nline2continued\"}" },
        { "a = '''\nraw \\n\n'''", TLR_OK, "{\"a\":\"raw \\\\n\\n\"}" },
        { "a = \"\"\"x\"\"\"\"\"", TLR_OK, "{\"a\":\"x\\\"\\\"\"}" },
        { "d = 1979-05-27T07:32:00-08:00\ne = 1979-05-27 07:32:00Z\nf = 07:32:00\ng = 1979-05-27",
          TLR_OK,
          "{\"d\":\"1979-05-27T07:32:00-08:00\",\"e\":\"1979-05-27 07:32:00Z\",\"f\":\"07:32:00\","
          "\"g\":\"1979-05-27\"}" },
        { "a = [1, 2,\n  3, # comment\n]\nb = []\nc = [[1], ['x', \"y\"], {k = 1}]", TLR_OK,
          "{\"a\":[1,2,3],\"b\":[],\"c\":[[1],[\"x\",\"y\"],{\"k\":1}]}" },
        { "p = { x = 1, y.z = \"s\" }\nq = {}", TLR_OK,
          "{\"p\":{\"x\":1,\"y\":{\"z\":\"s\"}},\"q\":{}}" },
        { "a = 1 # trailing comment\r\nb = 2\r\n", TLR_OK, "{\"a\":1,\"b\":2}" },
    };
    (void)state;
    assert_int_equal(run_table(t, sizeof(t) / sizeof(t[0])), 0);
}

static void test_tables(void **state)
{
    static const tcase t[] = {
        { "[settings.kubernetes]\n\"cluster-name\" = \"c\"\nnode-labels.\"a.b/c\" = \"v\"\n"
          "[settings.kubernetes.node-taints]\ndedicated = [\"x:NoSchedule\"]",
          TLR_OK,
          "{\"settings\":{\"kubernetes\":{\"cluster-name\":\"c\",\"node-labels\":{\"a.b/c\":\"v\"},"
          "\"node-taints\":{\"dedicated\":[\"x:NoSchedule\"]}}}}" },
        { "[ a . \"b c\" . 'd' ]\nx = 1", TLR_OK, "{\"a\":{\"b c\":{\"d\":{\"x\":1}}}}" },
        /* implicit parent defined later, once */
        { "[a.b]\nx = 1\n[a]\ny = 2", TLR_OK, "{\"a\":{\"b\":{\"x\":1},\"y\":2}}" },
        /* a sub-table of a table made by dotted keys */
        { "[f]\napple.color = 'red'\n[f.apple.texture]\nsmooth = true", TLR_OK,
          "{\"f\":{\"apple\":{\"color\":\"red\",\"texture\":{\"smooth\":true}}}}" },
        { "[[p]]\nn = 1\n[p.d]\nx = 1\n[[p]]\nn = 2\n[[p.v]]\nc = 'r'", TLR_OK,
          "{\"p\":[{\"n\":1,\"d\":{\"x\":1}},{\"n\":2,\"v\":[{\"c\":\"r\"}]}]}" },
        { "a.b = 1\na.c = 2", TLR_OK, "{\"a\":{\"b\":1,\"c\":2}}" },
        /* defined twice */
        { "a = 1\na = 2", TLR_E_PARSE, "line 2: key \"a\" is defined twice" },
        { "[a]\n[a]", TLR_E_PARSE, "line 2: table [a] is defined twice" },
        { "[a]\nb.c = 1\n[a.b]", TLR_E_PARSE, "line 3: table [b] is defined twice" },
        { "[a.b]\n[a]\nb.c = 1", TLR_E_PARSE, "line 3: key \"b\" is already defined" },
        { "a = {x = 1}\n[a]", TLR_E_PARSE, "table [a] is defined twice" },
        { "a = {x = 1}\na.y = 2", TLR_E_PARSE, "key \"a\" is already defined" },
        { "a = [1]\n[[a]]", TLR_E_PARSE, "\"a\" is not an array of tables" },
        { "[[a]]\n[a]", TLR_E_PARSE, "table [a] is defined twice" },
        { "a = 1\n[a.b]", TLR_E_PARSE, "\"a\" is not a table" },
    };
    (void)state;
    assert_int_equal(run_table(t, sizeof(t) / sizeof(t[0])), 0);
}

static void test_malformed(void **state)
{
    static const tcase t[] = {
        { "a = 1\nb 2", TLR_E_PARSE, "line 2: expected '=' after key" },
        { "a =", TLR_E_PARSE, "line 1: expected a value" },
        { "a = \"open\nb = 1", TLR_E_PARSE, "line 1: newline in a single-line string" },
        { "a = \"\"\"never closed", TLR_E_PARSE, "unterminated string" },
        { "a = \"\\q\"", TLR_E_PARSE, "bad escape sequence \"\\q\"" },
        { "a = \"\\uD800\"", TLR_E_PARSE, "not a Unicode scalar value" },
        { "a = [1, 2", TLR_E_PARSE, "unterminated array" },
        { "a = {x = 1,}", TLR_E_PARSE, "expected a key" },
        { "a = {x = 1\n}", TLR_E_PARSE, "expected ',' or '}'" },
        { "a = 1 b = 2", TLR_E_PARSE, "expected a newline after the value" },
        { "a = inf", TLR_E_PARSE, "inf and nan are not allowed" },
        { "a = -nan", TLR_E_PARSE, "inf and nan are not allowed" },
        { "a = 01", TLR_E_PARSE, "\"01\" is not a valid value" },
        { "a = 1__0", TLR_E_PARSE, "is not a valid value" },
        { "a = 1.", TLR_E_PARSE, "is not a valid value" },
        { "a = -0x10", TLR_E_PARSE, "is not a valid integer" },
        { "a = 9223372036854775808", TLR_E_PARSE, "does not fit in 64 bits" },
        { "a = 0xFFFFFFFFFFFFFFFFF", TLR_E_PARSE, "does not fit in 64 bits" },
        { "a = bareword", TLR_E_PARSE, "\"bareword\" is not a valid value" },
        { "[a\nx = 1", TLR_E_PARSE, "line 1: expected ']' after table name" },
        { "[[a]\n", TLR_E_PARSE, "expected ']]' after table name" },
        { "= 1", TLR_E_PARSE, "expected a key" },
        { "a = \"x\x01y\"", TLR_E_PARSE, "control character 0x01 in a string" },
        { "\"a\\u0000\" = 1", TLR_E_PARSE, "NUL character in a key" },
        { "a = 1\rb = 2", TLR_E_PARSE, "bare carriage return" },
        { "# bad \x01 comment", TLR_E_PARSE, "control character in a comment" },
    };
    (void)state;
    assert_int_equal(run_table(t, sizeof(t) / sizeof(t[0])), 0);
}

static void test_limits(void **state)
{
    tlr_buf b;
    json_object *o = NULL;
    char err[256] = "";
    (void)state;

    /* nesting through arrays */
    tlr_buf_init(&b, (size_t)-1);
    tlr_buf_adds(&b, "a = ");
    for (int i = 0; i < 100; i++)
        tlr_buf_addc(&b, '[');
    assert_int_equal(tlr_toml_parse(b.data, b.len, &o, err, sizeof(err)), TLR_E_TOOBIG);
    assert_non_null(strstr(err, "nested deeper than 32 levels"));
    tlr_buf_reset(&b);
    /* and through a long dotted header */
    tlr_buf_adds(&b, "[a");
    for (int i = 0; i < 40; i++)
        tlr_buf_adds(&b, ".a");
    tlr_buf_adds(&b, "]\n");
    err[0] = '\0';
    assert_int_equal(tlr_toml_parse(b.data, b.len, &o, err, sizeof(err)), TLR_E_TOOBIG);
    assert_non_null(strstr(err, "more than 32 parts"));
    tlr_buf_free(&b);
    assert_int_equal(tlr_toml_parse("", TLR_TOML_MAX_BYTES + 1u, &o, err, sizeof(err)),
                     TLR_E_TOOBIG);
    assert_null(o);
    assert_int_equal(tlr_toml_parse(NULL, 0, &o, err, sizeof(err)), TLR_E_INVAL);
}

typedef struct wcase {
    const char *json;
    int rc;
    const char *want;
} wcase;

static void test_write(void **state)
{
    static const wcase t[] = {
        { "{}", TLR_OK, "" },
        { "{\"settings\":{\"kubernetes\":{\"cluster-name\":\"c\",\"max-pods\":110,"
          "\"node-labels\":{\"a.b/c\":\"v\"}},\"host-containers\":{\"admin\":{\"enabled\":true}}},"
          "\"top\":1.5}",
          TLR_OK,
          "top = 1.5\n\n[settings.kubernetes]\ncluster-name = \"c\"\nmax-pods = 110\n\n"
          "[settings.kubernetes.node-labels]\n\"a.b/c\" = \"v\"\n\n"
          "[settings.host-containers.admin]\nenabled = true\n" },
        { "{\"s\":\"q\\\" \\\\ \\n \\u0001\",\"n\":null,\"e\":{},\"d\":2.0,\"x\":[[1,\"a\"],{\"k\":false}]}",
          TLR_OK,
          "s = \"q\\\" \\\\ \\n \\u0001\"\nd = 2.0\nx = [[1, \"a\"], { k = false }]\n\n[e]\n" },
        { "{\"p\":[{\"n\":1,\"sub\":{\"x\":1}},{\"n\":2}]}", TLR_OK,
          "[[p]]\nn = 1\n\n[p.sub]\nx = 1\n\n[[p]]\nn = 2\n" },
        { "[1]", TLR_E_INVAL, "" },
        { "{\"a\":[1,null]}", TLR_E_INVAL, "" },
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *o = json_tokener_parse(t[i].json);
        char *got = NULL;
        int rc = tlr_toml_write(o, &got);
        if (rc != t[i].rc) {
            printf("FAIL write(%s): got %s, want %s\n", t[i].json, tlr_errname(rc),
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc == TLR_OK && strcmp(got, t[i].want) != 0) {
            printf("FAIL write(%s):\n  got  <<%s>>\n  want <<%s>>\n", t[i].json, got,
                   t[i].want);
            failures++;
        }
        free(got);
        json_object_put(o);
    }
    assert_int_equal(failures, 0);
}

/* parse(write(x)) == x, and write is deterministic. */
static void test_round_trip(void **state)
{
    static const char *const docs[] = {
        "{}",
        "{\"a\":1,\"b\":\"two\",\"c\":true,\"d\":-1.25,\"e\":[1,2,3],\"f\":[]}",
        "{\"settings\":{\"kubernetes\":{\"api-server\":\"https://x\",\"node-taints\":"
        "{\"k\":[\"v:NoSchedule\",\":NoExecute\"]},\"eviction-hard\":{\"memory.available\":\"5%\"}},"
        "\"bootstrap-commands\":{\"000-mount-instance-storage\":{\"commands\":[[\"apiclient\","
        "\"ephemeral-storage\",\"init\"]],\"essential\":true,\"mode\":\"always\"}}}}",
        "{\"x\":{\"y\":{\"z\":{}}},\"k with space\":{\"\\\"q\\\"\":\"\\t\"}}",
        "{\"aot\":[{\"a\":1,\"in\":[{\"b\":2},{\"b\":3}]},{\"a\":4}],\"mixed\":[{\"a\":1},2]}",
        "{\"u\":\"caf\xc3\xa9 \\u0000 nul\",\"big\":9223372036854775807,\"neg\":-9223372036854775808}",
        "{\"f\":1e+300,\"g\":5e-324}",
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_object *o = json_tokener_parse(docs[i]), *back = NULL;
        char *a = NULL, *b = NULL, err[256] = "";
        assert_non_null(o);
        assert_int_equal(tlr_toml_write(o, &a), TLR_OK);
        assert_int_equal(tlr_toml_write(o, &b), TLR_OK);
        if (strcmp(a, b) != 0) {
            printf("FAIL write not deterministic for %s\n", docs[i]);
            failures++;
        }
        int rc = tlr_toml_parse(a, strlen(a), &back, err, sizeof(err));
        if (rc != TLR_OK) {
            printf("FAIL round trip %s: reading back\n%s\ngave %s\n", docs[i], a, err);
            failures++;
        } else if (!json_object_equal(o, back)) {
            printf("FAIL round trip:\n  got  %s\n  want %s\n  via\n%s\n",
                   tlr_json_to_string(back, JSON_C_TO_STRING_PLAIN), docs[i], a);
            failures++;
        }
        json_object_put(back);
        json_object_put(o);
        free(a);
        free(b);
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),   cmocka_unit_test(test_tables),
        cmocka_unit_test(test_malformed), cmocka_unit_test(test_limits),
        cmocka_unit_test(test_write),    cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
