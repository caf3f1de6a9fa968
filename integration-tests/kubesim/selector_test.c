/* selector_test.c - label and field selectors against stored objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ks_store.h"
#include "tlr_err.h"

typedef struct sel_case {
    const char *sel;
    const char *labels; /* JSON object */
    int want;           /* 1 match, 0 no match, -1 parse error */
} sel_case;

static const sel_case label_cases[] = {
    { "", "{}", 1 },
    { "app=web", "{\"app\":\"web\"}", 1 },
    { "app==web", "{\"app\":\"web\"}", 1 },
    { "app=web", "{\"app\":\"db\"}", 0 },
    { "app!=web", "{}", 1 },
    { "app!=web", "{\"app\":\"web\"}", 0 },
    { "tier in (a, b)", "{\"tier\":\"b\"}", 1 },
    { "tier in (a,b)", "{\"tier\":\"c\"}", 0 },
    { "tier notin (a,b)", "{}", 1 },
    { "tier notin (a,b)", "{\"tier\":\"a\"}", 0 },
    { "!canary", "{\"canary\":\"x\"}", 0 },
    { "!canary", "{}", 1 },
    { "canary", "{\"canary\":\"\"}", 1 },
    { "karpenter.sh/nodepool=default,app", "{\"karpenter.sh/nodepool\":\"default\",\"app\":\"x\"}", 1 },
    { "karpenter.sh/nodepool=default,app", "{\"karpenter.sh/nodepool\":\"default\"}", 0 },
    { "gen>3", "{\"gen\":\"5\"}", 1 },
    { "gen<3", "{\"gen\":\"5\"}", 0 },
    { "app=", "{\"app\":\"\"}", 1 },
    { "app=web,", "{}", -1 },
    { "tier in (a", "{}", -1 },
    { "=x", "{}", -1 },
    { "a b", "{}", -1 },
    { "app=w@b", "{}", -1 },
};

static void test_label_selectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(label_cases) / sizeof(label_cases[0]); i++) {
        const sel_case *c = &label_cases[i];
        ks_selector *s = NULL;
        ks_status st;
        int rc = ks_label_selector_parse(c->sel, &s, &st);
        int got;
        if (rc) {
            got = -1;
            if (st.code != 400)
                fail_msg("%s: error code %d, want 400", c->sel, st.code);
        } else {
            json_object *l = json_tokener_parse(c->labels);
            got = ks_selector_matches_labels(s, l);
            json_object_put(l);
        }
        if (got != c->want)
            fail_msg("selector \"%s\" on %s: got %d, want %d", c->sel, c->labels, got, c->want);
        ks_selector_free(s);
    }
}

typedef struct field_case {
    ks_kind_id kind;
    const char *sel;
    int want;
} field_case;

static void test_field_selectors(void **state)
{
    (void)state;
    ks_store *st = NULL;
    assert_int_equal(ks_store_create(NULL, &st), TLR_OK);
    ks_obj *pod = NULL;
    assert_int_equal(ks_store_create_text(st, KS_POD, "default",
                                          "{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"nodeName\":"
                                          "\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]},"
                                          "\"status\":{\"phase\":\"Running\"}}",
                                          &pod, NULL),
                     TLR_OK);
    static const field_case cases[] = {
        { KS_POD, "spec.nodeName=n1", 1 },
        { KS_POD, "spec.nodeName==n1", 1 },
        { KS_POD, "spec.nodeName!=n1", 0 },
        { KS_POD, "spec.nodeName=", 0 },
        { KS_POD, "status.phase=Running,metadata.name=p1", 1 },
        { KS_POD, "status.phase!=Running", 0 },
        { KS_POD, "metadata.namespace=default", 1 },
        { KS_POD, "spec.schedulerName=x", -1 },
        { KS_NODE, "spec.nodeName=n1", -1 },
        { KS_POD, "nonsense", -1 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ks_selector *s = NULL;
        int got = ks_field_selector_parse(cases[i].kind, cases[i].sel, &s, NULL)
                      ? -1
                      : ks_selector_matches_obj(s, pod);
        if (got != cases[i].want)
            fail_msg("field selector \"%s\": got %d, want %d", cases[i].sel, got, cases[i].want);
        ks_selector_free(s);
    }
    ks_obj_unref(pod);
    ks_store_free(st);
}

static void test_label_selector_json(void **state)
{
    (void)state;
    json_object *sel = json_tokener_parse(
        "{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":[{\"key\":\"tier\","
        "\"operator\":\"NotIn\",\"values\":[\"db\"]}]}");
    ks_selector *s = NULL;
    assert_int_equal(ks_label_selector_from_json(sel, false, &s, NULL), TLR_OK);
    json_object *a = json_tokener_parse("{\"app\":\"web\",\"tier\":\"fe\"}");
    json_object *b = json_tokener_parse("{\"app\":\"web\",\"tier\":\"db\"}");
    assert_true(ks_selector_matches_labels(s, a));
    assert_false(ks_selector_matches_labels(s, b));
    ks_selector_free(s);
    assert_int_equal(ks_label_selector_from_json(NULL, false, &s, NULL), TLR_OK);
    assert_false(ks_selector_matches_labels(s, a)); /* null selects nothing */
    ks_selector_free(s);
    json_object_put(a);
    json_object_put(b);
    json_object_put(sel);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_selectors),
        cmocka_unit_test(test_field_selectors),
        cmocka_unit_test(test_label_selector_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
