/* yaml_write_test.c - tlr_yaml_write: exact output for the shapes we emit,
 * quoting of strings that would read back as something else, and
 * tlr_yaml_parse(tlr_yaml_write(x)) == x for many values. */
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

typedef struct wcase {
    const char *json;
    const char *want;
} wcase;

static void test_exact(void **state)
{
    static const wcase t[] = {
        { "null", "null\n" },
        { "{}", "{}\n" },
        { "[]", "[]\n" },
        { "\"plain\"", "plain\n" },
        { "{\"apiVersion\":\"node.eks.aws/v1alpha1\",\"spec\":{\"cluster\":{\"name\":\"c\"},"
          "\"kubelet\":{\"config\":{\"maxPods\":110,\"clusterDNS\":[\"10.0.0.10\"]},"
          "\"flags\":[\"--node-labels=a=b\"]}}}",
          "apiVersion: node.eks.aws/v1alpha1\nspec:\n  cluster:\n    name: c\n  kubelet:\n"
          "    config:\n      maxPods: 110\n      clusterDNS:\n        - \"10.0.0.10\"\n"
          "    flags:\n      - \"--node-labels=a=b\"\n" },
        { "{\"t\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"},{\"key\":\"x\",\"value\":\"\"}]}",
          "t:\n  - key: k\n    effect: NoSchedule\n  - key: x\n    value: \"\"\n" },
        { "[[1,[2]],{\"a\":{}},[],{\"b\":[{\"c\":null}]}]",
          "- - 1\n  - - 2\n- a: {}\n- []\n- b:\n    - c: null\n" },
        { "{\"i\":-3,\"d\":1.5,\"e\":1e-07,\"b\":false,\"n\":null}",
          /* the key n is a YAML 1.1 boolean: quoted */
          "i: -3\nd: 1.5\ne: 1e-07\nb: false\n\"n\": null\n" },
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *o = json_tokener_parse(t[i].json);
        char *got = NULL;
        int rc = tlr_yaml_write(o, &got);
        if (rc != TLR_OK || strcmp(got, t[i].want) != 0) {
            printf("FAIL write(%s): rc %s\n  got  <<%s>>\n  want <<%s>>\n", t[i].json,
                   tlr_errname(rc), got ? got : "", t[i].want);
            failures++;
        }
        free(got);
        json_object_put(o);
    }
    assert_int_equal(failures, 0);
}

/* Strings: quoted exactly when a plain scalar would not read back. */
static void test_quoting(void **state)
{
    static const struct {
        const char *s;
        const char *want;
    } t[] = {
        { "hello", "hello" },
        { "500m", "500m" },
        { "1Gi", "1Gi" },
        { "node.eks.aws/v1alpha1", "node.eks.aws/v1alpha1" },
        { "a:b", "a:b" },
        { "memory.available", "memory.available" },
        { "", "\"\"" },
        { "true", "\"true\"" },
        { "yes", "\"yes\"" },
        { "N", "\"N\"" },
        { "Off", "\"Off\"" },
        { "~", "\"~\"" },
        { "null", "\"null\"" },
        { "12", "\"12\"" },
        { "0x1F", "\"0x1F\"" },
        { "1e3", "\"1e3\"" },
        { "-1.5", "\"-1.5\"" },
        { ".inf", "\".inf\"" },
        { "-.nan", "\"-.nan\"" },
        { "10.0.0.10", "\"10.0.0.10\"" },
        { "1:30", "\"1:30\"" },
        { " lead", "\" lead\"" },
        { "trail ", "\"trail \"" },
        { "- item", "\"- item\"" },
        { "a: b", "\"a: b\"" },
        { "ends:", "\"ends:\"" },
        { "x #y", "\"x #y\"" },
        { "#c", "\"#c\"" },
        { "&a", "\"&a\"" },
        { "*a", "\"*a\"" },
        { "!tag", "\"!tag\"" },
        { "{x}", "\"{x}\"" },
        { "<<", "\"<<\"" },
        { "two\nlines", "\"two\\nlines\"" },
        { "tab\there", "\"tab\\there\"" },
        { "q\"b\\", "q\"b\\" },
        { "\"q", "\"\\\"q\"" },
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *o = json_object_new_string(t[i].s);
        char *got = NULL;
        assert_int_equal(tlr_yaml_write(o, &got), TLR_OK);
        size_t n = strlen(got);
        if (n == 0 || got[n - 1] != '\n' || strlen(t[i].want) != n - 1 ||
            strncmp(got, t[i].want, n - 1) != 0) {
            printf("FAIL quote(%s): got <<%s>>, want <<%s>>\n", t[i].s, got, t[i].want);
            failures++;
        }
        free(got);
        json_object_put(o);
    }
    assert_int_equal(failures, 0);
}

/* tlr_yaml_parse(tlr_yaml_write(x)) == x. */
static void test_round_trip(void **state)
{
    static const char *const docs[] = {
        "null", "true", "false", "0", "-42", "9223372036854775807", "-9223372036854775808",
        "18446744073709551615", "1.5", "-0.001", "6.02e+23", "\"\"", "\"s\"", "{}", "[]",
        "[null,true,1,\"1\",\"true\",\"yes\",\"~\",\"null\",\"0o17\",\"017\",\"1_000\",\"+7\"]",
        "[\".5\",\"1.\",\"-\",\"+\",\"...\",\"---\",\"a---\",\"-a\",\"?\",\":\",\"%x\",\"@x\",\"`x`\"]",
        "[\"x: y\",\"x :y\",\"x#y\",\"x #y\",\"#\",\"'q'\",\"\\\"q\\\"\",\"a\\\\b\",\"\\u0001\",\"\\u007f\"]",
        "[\"line1\\nline2\\n\",\"\\r\\n\",\"\\t\",\" \",\"a  b\",\"caf\xc3\xa9\",\"\xe2\x80\xa8\"]",
        "[\"2026-01-02\",\"12:30:00\",\"1e\",\"0x\",\"0xZZ\",\"1.2.3\",\"Infinity\",\"NaN\",\".Inf\"]",
        "{\"true\":1,\"null\":2,\"1\":3,\"\":4,\"a b\":5,\"a: b\":6,\"<<\":7,\"- x\":8,\"k\\n2\":9}",
        "{\"a\":{\"b\":{\"c\":[{\"d\":[[],{},[{}],[[1]]]}]}},\"e\":[{\"f\":{\"g\":\"h\"},\"i\":[1,2]}]}",
        "{\"spec\":{\"kubelet\":{\"config\":{\"registerWithTaints\":[{\"effect\":\"NoExecute\","
        "\"key\":\"karpenter.sh/unregistered\"}],\"evictionHard\":{\"memory.available\":\"5%\"},"
        "\"kubeReserved\":{\"cpu\":\"100m\",\"memory\":\"1Gi\"}}}}}",
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_object *o = json_tokener_parse(docs[i]), *back = NULL;
        char *y = NULL, *y2 = NULL, err[256] = "";
        if (o == NULL && strcmp(docs[i], "null") != 0) {
            printf("FAIL bad test JSON %s\n", docs[i]);
            failures++;
            continue;
        }
        assert_int_equal(tlr_yaml_write(o, &y), TLR_OK);
        assert_int_equal(tlr_yaml_write(o, &y2), TLR_OK);
        if (strcmp(y, y2) != 0) {
            printf("FAIL not deterministic: %s\n", docs[i]);
            failures++;
        }
        int rc = tlr_yaml_parse(y, strlen(y), NULL, &back, err, sizeof(err));
        if (rc != TLR_OK) {
            printf("FAIL round trip %s: reading back\n%s\ngave %s\n", docs[i], y, err);
            failures++;
        } else {
            /* A null document is "empty" to the parser: no documents. */
            json_object *got = json_object_array_length(back) > 0
                                   ? json_object_array_get_idx(back, 0) : NULL;
            if (!json_object_equal(got, o)) {
                printf("FAIL round trip:\n  got  %s\n  want %s\n  via\n%s", 
                       tlr_json_to_string(got, JSON_C_TO_STRING_PLAIN), docs[i], y);
                failures++;
            }
        }
        json_object_put(back);
        json_object_put(o);
        free(y);
        free(y2);
    }
    assert_int_equal(failures, 0);
}

static void test_refuses(void **state)
{
    json_object *o = json_object_new_double(1.0 / 0.0), *deep = json_object_new_array();
    json_object *cur = deep;
    char *out = NULL;
    (void)state;

    assert_int_equal(tlr_yaml_write(o, &out), TLR_E_INVAL);
    assert_null(out);
    assert_int_equal(tlr_yaml_write(o, NULL), TLR_E_INVAL);
    for (int i = 0; i < TLR_YAML_DEFAULT_MAX_DEPTH + 5; i++) {
        json_object *next = json_object_new_array();
        json_object_array_add(cur, next);
        cur = next;
    }
    json_object_array_add(cur, json_object_new_int(1));
    assert_int_equal(tlr_yaml_write(deep, &out), TLR_E_TOOBIG);
    assert_null(out);
    json_object_put(o);
    json_object_put(deep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact),
        cmocka_unit_test(test_quoting),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
