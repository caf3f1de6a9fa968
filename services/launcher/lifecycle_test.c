/* lifecycle_test.c - Launched -> Registered -> Initialized, and the
 * liveness timeouts that give up on a claim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "lifecycle.h"
#include "testkit.h"

#define MIN (60 * 1000)

static void test_decide(void **state)
{
    (void)state;
    const int64_t t0 = 1000000000;
    struct {
        const char *name;
        int64_t launched, registered;   /* offsets from t0; -1 = not yet */
        bool has_node, ready;
        const char *taint;              /* one taint on the node; NULL none */
        int64_t now;                    /* offset from t0 */
        lc_life_action want;
    } cases[] = {
        { "fresh claim waits", -1, -1, false, false, NULL, 4 * MIN, LC_LIFE_NONE },
        { "not launched in 5m", -1, -1, false, false, NULL, 5 * MIN, LC_LIFE_LAUNCH_TIMEOUT },
        { "launched, no node yet", 0, -1, false, false, NULL, 14 * MIN, LC_LIFE_NONE },
        { "not registered in 15m", 0, -1, false, false, NULL, 15 * MIN,
          LC_LIFE_REGISTER_TIMEOUT },
        { "node joined", 0, -1, true, false, NULL, MIN, LC_LIFE_REGISTERED },
        { "registered, not ready", 0, MIN, true, false, NULL, 2 * MIN, LC_LIFE_NONE },
        { "ready but startup taint left", 0, MIN, true, true, "example.com/agent-not-ready",
          2 * MIN, LC_LIFE_NONE },
        { "ready but unregistered taint", 0, MIN, true, true, "karpenter.sh/unregistered",
          2 * MIN, LC_LIFE_NONE },
        { "ready, taints gone", 0, MIN, true, true, NULL, 2 * MIN, LC_LIFE_INITIALIZED },
        { "registered never times out", 0, MIN, false, false, NULL, 60 * MIN, LC_LIFE_NONE },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        lc_claim c = { 0 };
        c.nc = tk_claim("np-abcde", 1, "m5.large", NULL, NULL);
        Tailor__V1__Taint *st = tlr_malloc(sizeof(*st));
        tailor__v1__taint__init(st);
        st->key = tlr_strdup("example.com/agent-not-ready");
        TK_PUSH(c.nc->startup_taints, c.nc->n_startup_taints, st);
        c.created_ms = t0;
        c.launched_ms = cases[i].launched < 0 ? 0 : t0 + cases[i].launched;
        c.registered_ms = cases[i].registered < 0 ? 0 : t0 + cases[i].registered;
        char *tk[1] = { (char *)cases[i].taint };
        lc_node n = { "ip-10-0-0-1", "aws:///us-east-1a/i-1", cases[i].ready, tk,
                      cases[i].taint ? 1u : 0u };
        lc_life_action got = lc_lifecycle_decide(&c, cases[i].has_node ? &n : NULL,
                                                 t0 + cases[i].now);
        if (got != cases[i].want)
            fail_msg("%s: got %d want %d", cases[i].name, got, cases[i].want);
        protobuf_c_message_free_unpacked(&c.nc->base, NULL);
    }
}

static void test_node_for_instance(void **state)
{
    (void)state;
    lc_node v[2] = { { "a", "aws:///us-east-1a/i-11", true, NULL, 0 },
                     { "b", "aws:///us-east-1b/i-1", true, NULL, 0 } };
    lc_nodes nodes = { v, 2 };
    const lc_node *n = lc_node_for_instance(&nodes, "i-1");
    assert_non_null(n);
    assert_string_equal(n->name, "b");   /* i-11 must not match i-1 */
    assert_null(lc_node_for_instance(&nodes, "i-2"));
    assert_null(lc_node_for_instance(&nodes, ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_node_for_instance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
