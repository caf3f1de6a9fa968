/* claims_test.c - NodeClaim names, the karpenter.sh/v1 object written to
 * Kubernetes and its status patch, and the in-flight registry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "claims.h"
#include "lc_testkit.h"

static const char *jget(json_object *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    json_object *cur = o;
    for (char *tok = strtok(buf, "/"); tok && cur; tok = strtok(NULL, "/")) {
        json_object *next = NULL;
        if (json_object_is_type(cur, json_type_array))
            next = json_object_array_get_idx(cur, (size_t)atoi(tok));
        else
            json_object_object_get_ex(cur, tok, &next);
        cur = next;
    }
    return cur ? json_object_get_string(cur) : NULL;
}

static void test_names(void **state)
{
    (void)state;
    char a[64], b[64], c[64];
    lc_claim_name("default", 1, a, sizeof(a));
    lc_claim_name("default", 2, b, sizeof(b));
    assert_string_not_equal(a, b);
    assert_int_equal(strncmp(a, "default-", 8), 0);
    assert_int_equal(strlen(a), 13);
    lc_claim_name("a-very-long-nodepool-name-that-goes-on-and-on-and-on-and-on-forever", 7, c,
                  sizeof(c));
    assert_true(strlen(c) <= 63);   /* fits a label value and a tag */
}

static void test_object(void **state)
{
    (void)state;
    Tailor__V1__NodeClaim *nc = tk_claim("default-x1", 2, "m5.large", "c5.large", NULL);
    tk_req(nc, "karpenter.sh/capacity-type", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN,
           "spot", "on-demand");
    nc->resources_requested = tlr_malloc(sizeof(*nc->resources_requested));
    tailor__v1__resource_list__init(nc->resources_requested);
    nc->resources_requested->cpu_millis = 1500;
    nc->resources_requested->memory_bytes = 2LL << 30;
    nc->expire_after_ms = 720LL * 3600 * 1000;
    char *js = lc_claim_json(nc, "uid-np");
    json_object *o = json_tokener_parse(js);
    assert_non_null(o);
    struct { const char *path, *want; } cases[] = {
        { "apiVersion", "karpenter.sh/v1" },
        { "kind", "NodeClaim" },
        { "metadata/name", "default-x1" },
        { "metadata/ownerReferences/0/uid", "uid-np" },
        { "metadata/ownerReferences/0/kind", "NodePool" },
        { "spec/nodeClassRef/kind", "EC2NodeClass" },
        { "spec/nodeClassRef/name", "default" },
        { "spec/requirements/0/key", "karpenter.sh/capacity-type" },
        { "spec/requirements/0/operator", "In" },
        { "spec/requirements/0/values/1", "on-demand" },
        { "spec/resources/requests/cpu", "1500m" },
        { "spec/resources/requests/memory", "2Gi" },
        { "spec/expireAfter", "720h0m0s" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = jget(o, cases[i].path);
        if (!got || strcmp(got, cases[i].want) != 0)
            fail_msg("%s: got %s want %s", cases[i].path, got ? got : "(absent)", cases[i].want);
    }
    json_object *md, *labels, *pool;
    assert_true(json_object_object_get_ex(o, "metadata", &md));
    assert_true(json_object_object_get_ex(md, "labels", &labels));
    assert_true(json_object_object_get_ex(labels, "karpenter.sh/nodepool", &pool));
    assert_string_equal(json_object_get_string(pool), "default");
    json_object_put(o);
    free(js);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
}

static void test_status_and_registry(void **state)
{
    (void)state;
    lc_claims *r;
    lc_claims_create(&r);
    lc_claim *c = lc_claims_add(r, tk_claim("a", 1, "m5.large", NULL, NULL), 1000);
    assert_non_null(c);
    assert_null(lc_claims_add(r, tk_claim("a", 1, "m5.large", NULL, NULL), 1000));   /* dup */
    assert_non_null(lc_claims_add(r, tk_claim("b", 1, "m5.large", NULL, NULL), 1000));
    assert_int_equal(lc_claims_count(r), 2);
    c = lc_claims_find(r, "a");
    c->nc->status = tlr_malloc(sizeof(*c->nc->status));
    tailor__v1__node_claim_status__init(c->nc->status);
    c->nc->status->provider_id = tlr_strdup("aws:///us-east-1a/i-1");
    c->launched_ms = 1700000000000;
    char *st = lc_claim_status_json(c);
    json_object *o = json_tokener_parse(st);
    assert_string_equal(jget(o, "status/providerID"), "aws:///us-east-1a/i-1");
    assert_string_equal(jget(o, "status/conditions/0/type"), "Launched");
    assert_string_equal(jget(o, "status/conditions/0/status"), "True");
    assert_string_equal(jget(o, "status/conditions/1/type"), "Registered");
    assert_string_equal(jget(o, "status/conditions/1/status"), "Unknown");
    json_object_put(o);
    free(st);
    lc_claims_remove(r, "a");
    lc_claims_remove(r, "absent");
    assert_int_equal(lc_claims_count(r), 1);
    assert_string_equal(lc_claims_at(r, 0)->nc->name, "b");
    lc_claims_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_object),
        cmocka_unit_test(test_status_and_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
