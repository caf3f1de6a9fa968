/* patch_test.c - merge, strategic merge and JSON patch, table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ks_patch.h"
#include "tlr_err.h"
#include "tlr_json.h"

typedef struct patch_case {
    const char *name;
    ks_patch_type type;
    ks_kind_id kind;
    const char *doc, *patch;
    const char *want; /* JSON, or NULL for an error */
    int want_code;    /* HTTP code of the error */
} patch_case;

static const patch_case cases[] = {
    { "merge sets and deletes", KS_PATCH_MERGE, KS_POD, "{\"a\":1,\"b\":{\"c\":2,\"d\":3}}",
      "{\"b\":{\"c\":null,\"e\":4},\"f\":[1]}", "{\"a\":1,\"b\":{\"d\":3,\"e\":4},\"f\":[1]}" },
    { "merge replaces lists", KS_PATCH_MERGE, KS_POD, "{\"l\":[1,2]}", "{\"l\":[3]}",
      "{\"l\":[3]}" },
    { "merge must be an object", KS_PATCH_MERGE, KS_POD, "{}", "[1]", NULL, 400 },
    { "malformed patch", KS_PATCH_MERGE, KS_POD, "{}", "{bad", NULL, 400 },
    { "smp merges containers by name", KS_PATCH_STRATEGIC, KS_POD,
      "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"}]}}",
      "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
      "\"containers\":[{\"name\":\"b\",\"image\":\"z\"}]}}",
      "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"z\"}]}}" },
    { "smp $patch delete in list", KS_PATCH_STRATEGIC, KS_POD,
      "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
      "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"delete\"}]}}",
      "{\"spec\":{\"containers\":[{\"name\":\"b\"}]}}" },
    { "smp conditions by type", KS_PATCH_STRATEGIC, KS_NODE,
      "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},{\"type\":\"X\",\"status\":\"True\"}]}}",
      "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
      "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"X\",\"status\":\"True\"}]}}" },
    { "smp taints replace", KS_PATCH_STRATEGIC, KS_NODE,
      "{\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"}]}}",
      "{\"spec\":{\"taints\":[{\"key\":\"b\",\"effect\":\"NoSchedule\"}]}}",
      "{\"spec\":{\"taints\":[{\"key\":\"b\",\"effect\":\"NoSchedule\"}]}}" },
    { "smp finalizers as a set", KS_PATCH_STRATEGIC, KS_POD,
      "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
      "{\"metadata\":{\"finalizers\":[\"c\",\"a\"],\"$deleteFromPrimitiveList/finalizers\":[\"b\"]}}",
      "{\"metadata\":{\"finalizers\":[\"a\",\"c\"]}}" },
    { "smp $patch replace map", KS_PATCH_STRATEGIC, KS_POD,
      "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}",
      "{\"metadata\":{\"labels\":{\"$patch\":\"replace\",\"c\":\"3\"}}}",
      "{\"metadata\":{\"labels\":{\"c\":\"3\"}}}" },
    { "smp on a CRD is 415", KS_PATCH_STRATEGIC, KS_NODEPOOL, "{}", "{}", NULL, 415 },
    { "json add/replace/remove", KS_PATCH_JSON, KS_POD, "{\"a\":[1,3],\"b\":1,\"c\":2}",
      "[{\"op\":\"add\",\"path\":\"/a/1\",\"value\":2},{\"op\":\"add\",\"path\":\"/a/-\",\"value\":4},"
      "{\"op\":\"replace\",\"path\":\"/b\",\"value\":9},{\"op\":\"remove\",\"path\":\"/c\"}]",
      "{\"a\":[1,2,3,4],\"b\":9}" },
    { "json escapes", KS_PATCH_JSON, KS_POD, "{\"l\":{}}",
      "[{\"op\":\"add\",\"path\":\"/l/karpenter.sh~1nodepool\",\"value\":\"x\"}]",
      "{\"l\":{\"karpenter.sh/nodepool\":\"x\"}}" },
    { "json move and copy", KS_PATCH_JSON, KS_POD, "{\"a\":1}",
      "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b\"},{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/c\"}]",
      "{\"b\":1,\"c\":1}" },
    { "json test passes", KS_PATCH_JSON, KS_POD, "{\"a\":1}",
      "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1},{\"op\":\"add\",\"path\":\"/z\",\"value\":0}]",
      "{\"a\":1,\"z\":0}" },
    { "json test fails", KS_PATCH_JSON, KS_POD, "{\"a\":1}",
      "[{\"op\":\"test\",\"path\":\"/a\",\"value\":2}]", NULL, 422 },
    { "json remove missing", KS_PATCH_JSON, KS_POD, "{}",
      "[{\"op\":\"remove\",\"path\":\"/x\"}]", NULL, 422 },
    { "json index out of range", KS_PATCH_JSON, KS_POD, "{\"a\":[]}",
      "[{\"op\":\"add\",\"path\":\"/a/5\",\"value\":1}]", NULL, 422 },
    { "json not an array", KS_PATCH_JSON, KS_POD, "{}", "{\"op\":\"add\"}", NULL, 400 },
    { "json unknown op", KS_PATCH_JSON, KS_POD, "{}",
      "[{\"op\":\"frob\",\"path\":\"/a\"}]", NULL, 400 },
    { "json bad escape", KS_PATCH_JSON, KS_POD, "{}",
      "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", NULL, 400 },
};

static void test_patches(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const patch_case *c = &cases[i];
        json_object *doc = json_tokener_parse(c->doc), *out = NULL;
        ks_status st = { 0 };
        int rc = ks_patch_apply(c->type, c->kind, doc, c->patch, strlen(c->patch), &out, &st);
        if (c->want) {
            if (rc)
                fail_msg("%s: failed: %s", c->name, st.message);
            json_object *want = json_tokener_parse(c->want);
            if (!json_object_equal(out, want))
                fail_msg("%s:\n got  %s\n want %s", c->name,
                         json_object_to_json_string(out), c->want);
            json_object_put(want);
        } else if (!rc || st.code != c->want_code) {
            fail_msg("%s: got rc %d code %d, want code %d", c->name, rc, st.code, c->want_code);
        }
        /* the input document is never modified */
        json_object *orig = json_tokener_parse(c->doc);
        if (!json_object_equal(doc, orig))
            fail_msg("%s: input modified", c->name);
        json_object_put(orig);
        json_object_put(out);
        json_object_put(doc);
    }
}

static void test_patch_type_parse(void **state)
{
    (void)state;
    ks_patch_type t;
    assert_int_equal(ks_patch_type_parse("application/merge-patch+json", &t), TLR_OK);
    assert_int_equal(t, KS_PATCH_MERGE);
    assert_int_equal(ks_patch_type_parse("application/strategic-merge-patch+json; charset=utf-8", &t), TLR_OK);
    assert_int_equal(t, KS_PATCH_STRATEGIC);
    assert_int_equal(ks_patch_type_parse("application/json-patch+json", &t), TLR_OK);
    assert_int_equal(t, KS_PATCH_JSON);
    assert_int_equal(ks_patch_type_parse("application/apply-patch+yaml", &t), TLR_E_INVAL);
    assert_int_equal(ks_patch_type_parse(NULL, &t), TLR_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patches),
        cmocka_unit_test(test_patch_type_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
