/* yaml_test.c - tlr_yaml_parse: kubectl's typing of scalars, documents,
 * anchors and merge keys, limits, and malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_yaml.h"

typedef struct ycase {
    const char *in;
    int rc;
    const char *want;   /* rc OK: the documents as plain JSON; else a substring of err */
} ycase;

static int run_table(const ycase *t, size_t n, const tlr_yaml_limits *lim)
{
    int failures = 0;

    for (size_t i = 0; i < n; i++) {
        json_object *docs = NULL;
        char err[256] = "";
        int rc = tlr_yaml_parse(t[i].in, strlen(t[i].in), lim, &docs, err, sizeof(err));

        if (rc != t[i].rc) {
            printf("FAIL yaml(%s): got %s (%s), want %s\n", t[i].in, tlr_errname(rc), err,
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc == TLR_OK) {
            const char *got = tlr_json_to_string(docs, JSON_C_TO_STRING_PLAIN);
            if (strcmp(got, t[i].want) != 0) {
                printf("FAIL yaml(%s):\n  got  %s\n  want %s\n", t[i].in, got, t[i].want);
                failures++;
            }
        } else if (strstr(err, t[i].want) == NULL) {
            printf("FAIL yaml(%s): got message \"%s\", want it to contain \"%s\"\n", t[i].in,
                   err, t[i].want);
            failures++;
        }
        json_object_put(docs);
    }
    return failures;
}

static void test_scalars(void **state)
{
    static const ycase t[] = {
        /* strings stay strings when quoted, whatever they look like */
        { "a: \"true\"\nb: '12'\nc: \"null\"\nd: '0x10'", TLR_OK,
          "[{\"a\":\"true\",\"b\":\"12\",\"c\":\"null\",\"d\":\"0x10\"}]" },
        { "a: |\n  12\nb: >\n  yes\n", TLR_OK, "[{\"a\":\"12\\n\",\"b\":\"yes\\n\"}]" },
        /* YAML 1.1 booleans as go-yaml v2 (and so kubectl) reads them */
        { "[true, False, YES, no, on, Off, y, N, tRue]", TLR_OK,
          "[[true,false,true,false,true,false,true,false,\"tRue\"]]" },
        { "[~, null, NULL, Null, nil, \"\"]", TLR_OK, "[[null,null,null,null,\"nil\",\"\"]]" },
        { "a:\nb: ", TLR_OK, "[{\"a\":null,\"b\":null}]" },
        /* integers: Go ParseInt base 0 after removing underscores */
        { "[12, -3, +7, 0x1F, 0o17, 017, 0b101, 1_000, 0]", TLR_OK,
          "[[12,-3,7,31,15,15,5,1000,0]]" },
        { "[9223372036854775807, -9223372036854775808, 18446744073709551615]", TLR_OK,
          "[[9223372036854775807,-9223372036854775808,18446744073709551615]]" },
        /* 08 is not octal: a float (8), printed as an integer by Go */
        { "[08, 1.5, .5, -2e3, 1e3, 0.1, 1., 18446744073709551616]", TLR_OK,
          "[[8,1.5,0.5,-2000,1000,0.1,1,1.8446744073709552e+19]]" },
        /* things that look numeric but are not: strings */
        { "[1.2.3, 1e, 0x, 12abc, 1e999, -, +, 2026-01-02, 1:30, 0xZZ]", TLR_OK,
          "[[\"1.2.3\",\"1e\",\"0x\",\"12abc\",\"1e999\",\"-\",\"+\",\"2026-01-02\",\"1:30\","
          "\"0xZZ\"]]" },
        { "cpu: 500m\nmemory: 1Gi\nimage: nginx:1.25", TLR_OK,
          "[{\"cpu\":\"500m\",\"memory\":\"1Gi\",\"image\":\"nginx:1.25\"}]" },
        /* explicit tags */
        { "[!!str 12, !!int \"12\", !!float 3, !!bool \"yes\", !!null ~, !custom 5]", TLR_OK,
          "[[\"12\",12,3,true,null,\"5\"]]" },
        { "a: !!int abc", TLR_E_PARSE, "line 1, column 4: cannot read \"abc\" as !!int" },
        { "a: !!bool 1", TLR_E_PARSE, "as !!bool" },
        /* non-finite floats: JSON cannot hold them */
        { "a: .inf", TLR_E_PARSE, "line 1, column 4: \".inf\" is not a number JSON can hold" },
        { "a: -.Inf", TLR_E_PARSE, "not a number JSON can hold" },
        { "a: .NaN", TLR_E_PARSE, "not a number JSON can hold" },
        { "a: \".inf\"", TLR_OK, "[{\"a\":\".inf\"}]" },
    };
    (void)state;
    assert_int_equal(run_table(t, sizeof(t) / sizeof(t[0]), NULL), 0);
}

static void test_keys_and_structure(void **state)
{
    static const ycase t[] = {
        { "1: a\ntrue: b\n~: c\n1.5: d", TLR_OK,
          "[{\"1\":\"a\",\"true\":\"b\",\"null\":\"c\",\"1.5\":\"d\"}]" },
        { "a: 1\na: 2", TLR_OK, "[{\"a\":2}]" },   /* last one wins */
        { "? [a]\n: 1", TLR_E_PARSE, "line 1, column 3: a mapping key must be a scalar" },
        { "{a: [1, {b: c}], d: {}}", TLR_OK, "[{\"a\":[1,{\"b\":\"c\"}],\"d\":{}}]" },
        { "- a\n- - b\n  - c\n", TLR_OK, "[[\"a\",[\"b\",\"c\"]]]" },
        { "{\"kind\": \"Pod\", \"n\": [1, 2.5, true, null]}", TLR_OK,
          "[{\"kind\":\"Pod\",\"n\":[1,2.5,true,null]}]" },
        { "just a string", TLR_OK, "[\"just a string\"]" },
        { "a: \"caf\xc3\xa9\"", TLR_OK, "[{\"a\":\"caf\xc3\xa9\"}]" },
        /* kubectl's gotcha, kept: a plain n or y is a boolean, even as a name */
        { "metadata: {name: n, namespace: y}", TLR_OK,
          "[{\"metadata\":{\"name\":false,\"namespace\":true}}]" },
    };
    (void)state;
    assert_int_equal(run_table(t, sizeof(t) / sizeof(t[0]), NULL), 0);
}

static void test_documents(void **state)
{
    static const ycase t[] = {
        { "a: 1\n---\nb: 2\n---\n", TLR_OK, "[{\"a\":1},{\"b\":2}]" },
        { "---\na: 1\n...\n---\nb: 2", TLR_OK, "[{\"a\":1},{\"b\":2}]" },
        { "", TLR_OK, "[]" },
        { "# only a comment\n", TLR_OK, "[]" },
        { "---\n---\n# c\n---\nnull\n---\nk: v\n", TLR_OK, "[{\"k\":\"v\"}]" },
        { "%YAML 1.1\n---\na: yes\n", TLR_OK, "[{\"a\":true}]" },
    };
    (void)state;
    assert_int_equal(run_table(t, sizeof(t) / sizeof(t[0]), NULL), 0);
}

static void test_anchors(void **state)
{
    static const ycase t[] = {
        { "a: &x {k: 1}\nb: *x\nc: &s str\nd: *s", TLR_OK,
          "[{\"a\":{\"k\":1},\"b\":{\"k\":1},\"c\":\"str\",\"d\":\"str\"}]" },
        /* merge keys: explicit keys win, whether before or after the merge */
        { "base: &b {cpu: 1, mem: 2, zone: a}\nx:\n  mem: 9\n  <<: *b\n  zone: z", TLR_OK,
          "[{\"base\":{\"cpu\":1,\"mem\":2,\"zone\":\"a\"},\"x\":{\"mem\":9,\"cpu\":1,"
          "\"zone\":\"z\"}}]" },
        { "a: &a {p: 1}\nb: &b {p: 2, q: 2}\nc:\n  <<: [*a, *b]", TLR_OK,
          "[{\"a\":{\"p\":1},\"b\":{\"p\":2,\"q\":2},\"c\":{\"p\":1,\"q\":2}}]" },
        /* a quoted "<<" is an ordinary key */
        { "a: &a {p: 1}\nc: {\"<<\": *a}", TLR_OK, "[{\"a\":{\"p\":1},\"c\":{\"<<\":{\"p\":1}}}]" },
        { "a: &a 5\nc: {<<: *a}", TLR_E_PARSE, "merge key (<<) needs a mapping" },
        { "a: *nope", TLR_E_PARSE, "line 1, column 4: unknown anchor \"nope\"" },
        /* anchors do not cross documents */
        { "a: &x 1\n---\nb: *x", TLR_E_PARSE, "line 3, column 4: unknown anchor" },
        /* an anchor redefined: later aliases see the new value */
        { "- &a 1\n- *a\n- &a 2\n- *a", TLR_OK, "[[1,1,2,2]]" },
    };
    (void)state;
    assert_int_equal(run_table(t, sizeof(t) / sizeof(t[0]), NULL), 0);
}

static void test_malformed(void **state)
{
    static const ycase t[] = {
        { "a: b: c", TLR_E_PARSE, "line 1, column 5: mapping values are not allowed" },
        { "a:\n  - b\n c: d", TLR_E_PARSE, "line 3, column 2:" },
        { "[1, 2", TLR_E_PARSE, "did not find expected ',' or ']'" },
        { "{a: 1", TLR_E_PARSE, "line 2, column 1: did not find expected ',' or '}'" },
        { "a: \"unterminated", TLR_E_PARSE, "found unexpected end of stream" },
        { "\tkey: v", TLR_E_PARSE, "line 1, column 1:" },
        { "a: @x", TLR_E_PARSE, "cannot start any token" },
        { "a: 1\x00", TLR_E_PARSE, "" },   /* strlen stops at the NUL: parses "a: 1" */
        { "a: \"\xff\xfe\"", TLR_E_PARSE, "line 1, column" },
        { "- &a [*a]", TLR_E_PARSE, "unknown anchor \"a\"" },
        { "key: [1, 2]]", TLR_E_PARSE, "line 1, column 12:" },
    };
    (void)state;
    /* The NUL row: strlen() makes it valid; the real NUL case is below. */
    ycase fixed[sizeof(t) / sizeof(t[0])];
    memcpy(fixed, t, sizeof(t));
    fixed[7] = (ycase){ "a: 1\x00", TLR_OK, "[{\"a\":1}]" };
    assert_int_equal(run_table(fixed, sizeof(t) / sizeof(t[0]), NULL), 0);

    json_object *docs = NULL;
    char err[128];
    assert_int_equal(tlr_yaml_parse("a: 1\nb\0: 2", 11, NULL, &docs, err, sizeof(err)),
                     TLR_E_PARSE);
    if (strstr(err, "line 2, column 2: NUL byte") == NULL)
        fail_msg("NUL: got \"%s\"", err);
    assert_null(docs);
    assert_int_equal(tlr_yaml_parse(NULL, 0, NULL, &docs, NULL, 0), TLR_E_INVAL);
    assert_int_equal(tlr_yaml_parse("a", 1, NULL, NULL, NULL, 0), TLR_E_INVAL);
}

/* Billion laughs, deep nesting, many documents, size: all stop at the
 * configured ceilings with TOOBIG and a message saying which. */
static void test_limits(void **state)
{
    (void)state;
    char laughs[2048];
    int n = snprintf(laughs, sizeof(laughs), "a0: &a0 [lol]\n");
    for (int i = 1; i < 20; i++)
        n += snprintf(laughs + n, sizeof(laughs) - (size_t)n,
                      "a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n", i, i,
                      i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    const ycase big[] = {
        { laughs, TLR_E_TOOBIG, "aliases expand to more than 100000 nodes" },
    };
    assert_int_equal(run_table(big, 1, NULL), 0);

    tlr_yaml_limits lim = { .max_depth = 3, .max_docs = 2, .max_bytes = 64,
                            .max_alias_nodes = 5 };
    const ycase t[] = {
        { "[[[1]]]", TLR_OK, "[[[[1]]]]" },
        { "[[[[1]]]]", TLR_E_TOOBIG, "line 1, column 4: nested deeper than 3 levels" },
        { "a\n---\nb\n", TLR_OK, "[\"a\",\"b\"]" },
        { "a\n---\nb\n---\nc\n", TLR_E_TOOBIG, "more than 2 documents" },
        { "a: &a [1, 2]\nb: *a\n", TLR_OK, "[{\"a\":[1,2],\"b\":[1,2]}]" },
        { "a: &a [1, 2]\nb: *a\nc: *a\n", TLR_E_TOOBIG, "line 3, column 4: aliases expand" },
        { "a: 1234567890123456789012345678901234567890123456789012345678901234567", TLR_E_TOOBIG,
          "more than the limit of 64" },
    };
    assert_int_equal(run_table(t, sizeof(t) / sizeof(t[0]), &lim), 0);

    /* Deep nesting far past the default does not crash either. */
    size_t deep = 100000;
    char *d = malloc(deep * 2 + 1);
    assert_non_null(d);
    memset(d, '[', deep);
    memset(d + deep, ']', deep);
    d[deep * 2] = '\0';
    json_object *docs = NULL;
    char err[128];
    assert_int_equal(tlr_yaml_parse(d, deep * 2, NULL, &docs, err, sizeof(err)), TLR_E_TOOBIG);
    assert_non_null(strstr(err, "nested deeper than 100 levels"));
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_keys_and_structure),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_anchors),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
