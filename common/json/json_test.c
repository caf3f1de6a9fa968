/* json_test.c - tlr_json: bounded strict parsing, path getters, quantities. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_err.h"
#include "tlr_json.h"

static void test_parse_table(void **state)
{
    static const struct {
        const char *in;
        size_t      max;
        int         rc;
        const char *err;   /* substring of the message, NULL: no check */
    } t[] = {
        { "{\"a\":1}",              1024, TLR_OK, NULL },
        { "  [1, 2, 3]\n",          1024, TLR_OK, NULL },
        { "12",                     1024, TLR_OK, NULL },   /* top-level number */
        { "\"x\"",                  1024, TLR_OK, NULL },
        { "null",                   1024, TLR_OK, NULL },
        { "{\"a\":\n tru}",         1024, TLR_E_PARSE, "offset 10 (line 2, column 5): boolean expected" },
        { "{\"a\":1,}",             1024, TLR_E_PARSE, "offset 7 (line 1, column 8)" },
        { "{\"a\":1} x",            1024, TLR_E_PARSE, "offset 8 (line 1, column 9)" },
        { "{} {}",                  1024, TLR_E_PARSE, "offset 3 (line 1, column 4)" },
        { "/* c */ {}",             1024, TLR_E_PARSE, "offset 0 " },
        { "",                       1024, TLR_E_PARSE, "offset 0 (line 1, column 1)" },
        { "   ",                    1024, TLR_E_PARSE, "offset 3 " },
        { "{\"a\":",                1024, TLR_E_PARSE, "offset 5 " },
        { "[1,\n2,\n\"abc",         1024, TLR_E_PARSE, "offset 11 (line 3, column 5)" },
        { "007",                    1024, TLR_E_PARSE, NULL },
        { "{\"a\":\"\xff\"}",       1024, TLR_E_PARSE, "offset 6 " },   /* bad UTF-8 */
        { "{\"a\":1}",              6,    TLR_E_TOOBIG, "7 bytes, more than the limit of 6" },
        { "{\"a\":1}",              7,    TLR_OK, NULL },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *o = NULL;
        char err[128] = "";
        int rc = tlr_json_parse(t[i].in, strlen(t[i].in), t[i].max, &o, err, sizeof(err));

        if (rc != t[i].rc) {
            printf("FAIL parse(%s): got %s (%s), want %s\n", t[i].in, tlr_errname(rc),
                   err, tlr_errname(t[i].rc));
            failures++;
        } else if (t[i].err != NULL && strstr(err, t[i].err) == NULL) {
            printf("FAIL parse(%s): got message \"%s\", want it to contain \"%s\"\n",
                   t[i].in, err, t[i].err);
            failures++;
        } else if (rc == TLR_OK && err[0] != '\0') {
            printf("FAIL parse(%s): message \"%s\" on success\n", t[i].in, err);
            failures++;
        }
        if (rc != TLR_OK && o != NULL) {
            printf("FAIL parse(%s): out written on error\n", t[i].in);
            failures++;
        }
        json_object_put(o);
    }
    assert_int_equal(failures, 0);
}

static void test_parse_nul_and_depth(void **state)
{
    static const char with_nul[] = "{\"a\":\"x\0y\"}";
    json_object *o = NULL;
    char err[128], deep[2 * (TLR_JSON_MAX_DEPTH + 1) + 1];
    size_t n = 0;

    (void)state;
    assert_int_equal(tlr_json_parse(with_nul, sizeof(with_nul) - 1, 1024, &o, err, sizeof(err)),
                     TLR_E_PARSE);
    assert_non_null(strstr(err, "offset 7 (line 1, column 8): NUL byte"));
    assert_null(o);

    /* not NUL-terminated: only len bytes are read */
    assert_int_equal(tlr_json_parse("[1]]]]", 3, 1024, &o, err, sizeof(err)), TLR_OK);
    assert_int_equal(json_object_array_length(o), 1);
    json_object_put(o);
    o = NULL;

    for (int i = 0; i <= TLR_JSON_MAX_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i <= TLR_JSON_MAX_DEPTH; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    assert_int_equal(tlr_json_parse(deep, n, 1024, &o, err, sizeof(err)), TLR_E_PARSE);
    assert_non_null(strstr(err, "nesting"));
    /* one level less is fine */
    assert_int_equal(tlr_json_parse(deep + 1, n - 2, 1024, &o, err, sizeof(err)), TLR_OK);
    json_object_put(o);

    /* a tiny error buffer is truncated, not overrun; NULL err is fine */
    {
        char tiny[8];

        assert_int_equal(tlr_json_parse("[", 1, 10, &o, tiny, sizeof(tiny)), TLR_E_PARSE);
        assert_string_equal(tiny, "offset ");
        assert_int_equal(tlr_json_parse("[", 1, 10, &o, NULL, 0), TLR_E_PARSE);
    }
}

static const char node_json[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\","
    " \"metadata\":{\"name\":\"ip-10-0-0-1\",\"generation\":3,"
    "   \"labels\":{\"karpenter.sh/nodepool\":\"default\",\"a\\\\b\":\"bs\",\"\":\"empty\"},"
    "   \"deletionTimestamp\":null},"
    " \"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"k1\"},{\"key\":\"k2\"}]},"
    " \"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":110,"
    "   \"ephemeral-storage\":\" 20Gi \",\"gpu\":1.5,\"weird\":1e3,\"bad\":\"1Gb\","
    "   \"flag\":true,\"big\":9223372036854775808,\"huge\":99999999999999999999999},"
    "   \"ratio\":0.5,\"count\":\"3\",\"neg\":-7,\"n1\":1.0}}";

static json_object *load_node(void)
{
    json_object *o = NULL;
    char err[128] = "";

    if (tlr_json_parse(node_json, strlen(node_json), 1 << 20, &o, err, sizeof(err)) != TLR_OK) {
        printf("node fixture does not parse: %s\n", err);
        fail();
    }
    return o;
}

static void test_str_paths(void **state)
{
    static const struct { const char *path; const char *want; } t[] = {
        { "kind",                                   "Node" },
        { "metadata.name",                          "ip-10-0-0-1" },
        { "metadata.labels.karpenter\\.sh/nodepool", "default" },
        { "metadata.labels.karpenter.sh/nodepool",  NULL },      /* unescaped dot */
        { "metadata.labels.a\\\\b",                 "bs" },      /* escaped backslash */
        { "metadata.labels.",                       "empty" },   /* empty key */
        { "spec.taints.1.key",                      "k2" },
        { "spec.taints.2.key",                      NULL },
        { "spec.taints.x.key",                      NULL },
        { "metadata.generation",                    NULL },      /* wrong type */
        { "metadata",                               NULL },
        { "metadata.deletionTimestamp",             NULL },      /* null */
        { "nope.deeper",                            NULL },
        { "kind.deeper",                            NULL },
    };
    json_object *o = load_node();
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        const char *got = tlr_json_str(o, t[i].path);

        if ((got == NULL) != (t[i].want == NULL) ||
            (got != NULL && strcmp(got, t[i].want) != 0)) {
            printf("FAIL str(%s): got %s, want %s\n", t[i].path, got ? got : "NULL",
                   t[i].want ? t[i].want : "NULL");
            failures++;
        }
    }
    assert_ptr_equal(tlr_json_get(o, ""), o);
    assert_non_null(tlr_json_obj(o, "metadata.labels"));
    assert_null(tlr_json_obj(o, "spec.taints"));
    assert_int_equal(json_object_array_length(tlr_json_arr(o, "spec.taints")), 2);
    assert_null(tlr_json_arr(o, "metadata"));
    assert_null(tlr_json_str(NULL, "kind"));
    assert_null(tlr_json_str(o, NULL));
    {
        /* a path longer than the getter's stack buffer */
        char longpath[600];

        memset(longpath, 'x', sizeof(longpath) - 1);
        longpath[sizeof(longpath) - 1] = '\0';
        assert_null(tlr_json_get(o, longpath));
    }
    json_object_put(o);
    assert_int_equal(failures, 0);
}

static void test_int_bool(void **state)
{
    static const struct { const char *path; int rc; int64_t want; } ints[] = {
        { "metadata.generation",        TLR_OK, 3 },
        { "status.capacity.pods",       TLR_OK, 110 },
        { "status.neg",                 TLR_OK, -7 },
        { "status.missing",             TLR_E_NOTFOUND, 0 },
        { "metadata.deletionTimestamp", TLR_E_NOTFOUND, 0 },
        { "status.count",               TLR_E_PARSE, 0 },   /* a string */
        { "status.n1",                  TLR_E_PARSE, 0 },   /* 1.0 is not an int */
        { "status.capacity.weird",      TLR_E_PARSE, 0 },   /* 1e3 neither */
        { "status.capacity.flag",       TLR_E_PARSE, 0 },
        { "status.capacity.big",        TLR_E_RANGE, 0 },
        { "status.capacity.huge",       TLR_E_RANGE, 0 },
    };
    json_object *o = load_node();
    int failures = 0;
    bool b = false;

    (void)state;
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        int64_t v = 12345;
        int rc = tlr_json_int(o, ints[i].path, &v);

        if (rc != ints[i].rc || (rc == TLR_OK && v != ints[i].want) ||
            (rc != TLR_OK && v != 12345)) {
            printf("FAIL int(%s): got %s %lld, want %s %lld\n", ints[i].path,
                   tlr_errname(rc), (long long)v, tlr_errname(ints[i].rc),
                   (long long)ints[i].want);
            failures++;
        }
    }
    assert_int_equal(tlr_json_bool(o, "spec.unschedulable", &b), TLR_OK);
    assert_true(b);
    assert_int_equal(tlr_json_bool(o, "spec.missing", &b), TLR_E_NOTFOUND);
    assert_int_equal(tlr_json_bool(o, "metadata.name", &b), TLR_E_PARSE);
    assert_true(b);
    json_object_put(o);
    assert_int_equal(failures, 0);
}

static void test_quantities(void **state)
{
    static const struct {
        const char *path;
        int rc_milli; int64_t milli;
        int rc_value; int64_t value;
    } t[] = {
        { "status.capacity.cpu",               TLR_OK, 4000, TLR_OK, 4 },
        { "status.capacity.memory",            TLR_OK, 17179869184000LL, TLR_OK, 17179869184LL },
        { "status.capacity.pods",              TLR_OK, 110000, TLR_OK, 110 },      /* JSON int */
        { "status.capacity.ephemeral-storage", TLR_OK, 21474836480000LL, TLR_OK, 21474836480LL },
        { "status.capacity.gpu",               TLR_OK, 1500, TLR_OK, 2 },          /* JSON 1.5 */
        { "status.capacity.weird",             TLR_OK, 1000000, TLR_OK, 1000 },    /* JSON 1e3 */
        { "status.ratio",                      TLR_OK, 500, TLR_OK, 1 },
        { "status.capacity.big",               TLR_E_RANGE, 0, TLR_E_RANGE, 0 },
        { "status.capacity.huge",              TLR_E_RANGE, 0, TLR_E_RANGE, 0 },   /* clamped */
        { "status.capacity.bad",               TLR_E_PARSE, 0, TLR_E_PARSE, 0 },
        { "status.capacity.flag",              TLR_E_PARSE, 0, TLR_E_PARSE, 0 },
        { "status.capacity",                   TLR_E_PARSE, 0, TLR_E_PARSE, 0 },
        { "status.capacity.none",              TLR_E_NOTFOUND, 0, TLR_E_NOTFOUND, 0 },
        { "metadata.deletionTimestamp",        TLR_E_NOTFOUND, 0, TLR_E_NOTFOUND, 0 },
    };
    json_object *o = load_node();
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int64_t m = -42, v = -42;
        int rm = tlr_json_quantity_milli(o, t[i].path, &m);
        int rv = tlr_json_quantity_value(o, t[i].path, &v);

        if (rm != t[i].rc_milli || (rm == TLR_OK ? m != t[i].milli : m != -42)) {
            printf("FAIL quantity_milli(%s): got %s %lld, want %s %lld\n", t[i].path,
                   tlr_errname(rm), (long long)m, tlr_errname(t[i].rc_milli),
                   (long long)t[i].milli);
            failures++;
        }
        if (rv != t[i].rc_value || (rv == TLR_OK ? v != t[i].value : v != -42)) {
            printf("FAIL quantity_value(%s): got %s %lld, want %s %lld\n", t[i].path,
                   tlr_errname(rv), (long long)v, tlr_errname(t[i].rc_value),
                   (long long)t[i].value);
            failures++;
        }
    }
    {
        tlr_quantity q;
        char buf[TLR_QUANTITY_STR_MAX];

        assert_int_equal(tlr_json_quantity(o, "status.capacity.weird", &q), TLR_OK);
        assert_int_equal(tlr_quantity_format(&q, buf, sizeof(buf)), TLR_OK);
        assert_string_equal(buf, "1e3");   /* the number's own spelling counts */
    }
    json_object_put(o);
    assert_int_equal(failures, 0);
}

static void test_to_string(void **state)
{
    static const char in[] = "{ \"k\" : \"a/b\", \"n\" : [1, 2] }";
    json_object *o = NULL;

    (void)state;
    assert_int_equal(tlr_json_parse(in, strlen(in), 100, &o, NULL, 0), TLR_OK);
    assert_string_equal(tlr_json_to_string(o, JSON_C_TO_STRING_PLAIN),
                        "{\"k\":\"a/b\",\"n\":[1,2]}");
    assert_string_equal(tlr_json_to_string(NULL, JSON_C_TO_STRING_PLAIN), "null");
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_parse_nul_and_depth),
        cmocka_unit_test(test_str_paths),
        cmocka_unit_test(test_int_bool),
        cmocka_unit_test(test_quantities),
        cmocka_unit_test(test_to_string),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
