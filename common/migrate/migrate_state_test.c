/* migrate_state_test.c - the migration checkpoint: every field survives the JSON
 * round trip (it is the ConfigMap a resumed run reads), a damaged
 * checkpoint is refused naming the field, and checkpoint names are valid
 * ConfigMap names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_migrate.h"

static void sample(tlr_mig_state *s)
{
    tlr_mig_state_init(s, "legacy-m5", "", "legacy-m5", 4, 1000);
    s->phase = TLR_MIG_PHASE_HALTED;
    free(s->message);
    s->message = tlr_strdup("batch 2: the health gate failed: pod \"a\" restarted");
    s->frozen = true;
    s->batch_no = 2;
    s->updated_ms = 2000;
    s->finished_ms = 0;
    free(s->holder.host);
    s->holder.host = tlr_strdup("runner-7");
    s->holder.pid = 4242;
    s->holder.heartbeat_ms = 1999;
    tlr_mig_state_add_asg(s, "legacy-m5", 3, 30, 20);
    tlr_mig_state_add_asg(s, "legacy-m5", 0, 20, 20);   /* a second record keeps the first */
    tlr_mig_nodev nodes[] = {
        { .name = "ip-1", .instance = "i-1", .zone = "us-east-1a", .asg = "legacy-m5",
          .selected = true },
        { .name = "ip-2", .instance = "i-2", .zone = "us-east-1b", .asg = "legacy-m5",
          .selected = true, .unschedulable = true },
    };
    tlr_mig_merge(s, nodes, 2, 1500);
    s->nodes[0].state = TLR_MIG_NODE_VERIFYING;
    s->nodes[0].batch = 2;
    s->nodes[0].pods = 7;
    s->nodes[0].started_ms = 1600;
    free(s->nodes[0].message);
    s->nodes[0].message = tlr_strdup("its pods are Ready on tailor's nodes");
    s->owners = tlr_calloc(1, sizeof(*s->owners));
    s->owners[0] = (tlr_mig_owner){ tlr_strdup("Deployment"), tlr_strdup("default"),
                                    tlr_strdup("web"), 8, 2, 3 };
    s->nowners = 1;
    s->baseline = tlr_calloc(1, sizeof(*s->baseline));
    s->baseline[0] = (tlr_mig_restart){ tlr_strdup("u-1"), tlr_strdup("default/web-1"), 3, true };
    s->nbaseline = 1;
}

static char *to_json(const tlr_mig_state *s)
{
    tlr_buf b;
    tlr_buf_init(&b, 1u << 20);
    assert_int_equal(tlr_mig_state_json(s, &b), TLR_OK);
    return tlr_buf_take(&b);
}

static void test_roundtrip(void **state)
{
    (void)state;
    tlr_mig_state s, back;
    char err[256];
    sample(&s);
    char *j1 = to_json(&s);
    assert_int_equal(tlr_mig_state_parse(j1, strlen(j1), &back, err, sizeof(err)), TLR_OK);
    char *j2 = to_json(&back);
    if (strcmp(j1, j2) != 0)
        printf("FAIL round trip:\n got %s\nwant %s\n", j2, j1);
    assert_string_equal(j1, j2);
    /* What a resumed run depends on, field by field. */
    assert_int_equal(back.phase, TLR_MIG_PHASE_HALTED);
    assert_true(back.frozen);
    assert_int_equal(back.batch_no, 2);
    assert_int_equal(back.nasgs, 1);
    assert_int_equal(back.asgs[0].min, 3);
    assert_int_equal(back.asgs[0].max, 30);
    assert_int_equal(back.asgs[0].desired, 20);
    assert_int_equal(back.nnodes, 2);
    assert_string_equal(back.nodes[0].name, "ip-1");
    assert_int_equal(back.nodes[0].state, TLR_MIG_NODE_VERIFYING);
    assert_false(back.nodes[0].was_cordoned);
    assert_true(back.nodes[1].was_cordoned);
    assert_int_equal(back.owners[0].displaced, 3);
    assert_true(back.baseline[0].crashloop);
    assert_string_equal(back.holder.host, "runner-7");
    assert_int_equal(back.holder.pid, 4242);
    tlr_mig_counts c;
    tlr_mig_state_counts(&back, &c);
    assert_int_equal(c.total, 2);
    assert_int_equal(c.in_flight, 1);
    assert_int_equal(c.pending, 1);
    free(j1);
    free(j2);
    tlr_mig_state_clear(&back);
    tlr_mig_state_clear(&s);
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *what, *json, *err;
        int rc;
    } t[] = {
        { "not JSON", "{nope", "not JSON", TLR_E_PARSE },
        { "an array", "[1]", "not a JSON object", TLR_E_PARSE },
        { "newer version", "{\"version\":9}", "newer tailorctl", TLR_E_VERSION },
        { "phase unknown", "{\"version\":1,\"phase\":\"Sleeping\"}", "phase: unknown value",
          TLR_E_PARSE },
        { "phase not a string", "{\"version\":1,\"phase\":3}", "phase: not a string",
          TLR_E_PARSE },
        { "batch_no a string", "{\"version\":1,\"batch_no\":\"2\"}", "batch_no: not an integer",
          TLR_E_PARSE },
        { "frozen a string", "{\"version\":1,\"frozen\":\"yes\"}", "frozen: not a boolean",
          TLR_E_PARSE },
        { "nodes not a list", "{\"version\":1,\"nodes\":{}}", "nodes: not a list", TLR_E_PARSE },
        { "a node not an object", "{\"version\":1,\"nodes\":[1]}", "nodes[0].: not an object",
          TLR_E_PARSE },
        { "a node state unknown",
          "{\"version\":1,\"nodes\":[{\"name\":\"a\",\"state\":\"melted\"}]}",
          "nodes[0].state: unknown value", TLR_E_PARSE },
        { "a node without a name", "{\"version\":1,\"nodes\":[{\"state\":\"done\"}]}",
          "a node without a name", TLR_E_PARSE },
        { "asg min not a number", "{\"version\":1,\"asgs\":[{\"name\":\"g\",\"min\":\"x\"}]}",
          "asgs[0].min: not an integer", TLR_E_PARSE },
        { "negative batch", "{\"version\":1,\"batch_no\":-3}", "negative", TLR_E_PARSE },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_mig_state s;
        char err[256] = "";
        int rc = tlr_mig_state_parse(t[i].json, strlen(t[i].json), &s, err, sizeof(err));
        if (rc != t[i].rc || strstr(err, t[i].err) == NULL) {
            printf("FAIL %s: got %s \"%s\", want %s containing \"%s\"\n", t[i].what,
                   tlr_errname(rc), err, tlr_errname(t[i].rc), t[i].err);
            failures++;
        }
        if (rc == TLR_OK)
            tlr_mig_state_clear(&s);
    }
    /* Absent optional fields are fine: defaults. */
    tlr_mig_state s;
    char err[256];
    const char *min = "{\"version\":1,\"name\":\"x\"}";
    assert_int_equal(tlr_mig_state_parse(min, strlen(min), &s, err, sizeof(err)), TLR_OK);
    assert_int_equal(s.phase, TLR_MIG_PHASE_PENDING);
    assert_int_equal(s.nnodes, 0);
    assert_string_equal(s.holder.host, "");
    tlr_mig_state_clear(&s);
    assert_int_equal(failures, 0);
}

static void test_configmap_names(void **state)
{
    (void)state;
    static const struct { const char *in, *want; } t[] = {
        { "legacy-m5", "tailor-migrate-legacy-m5" },
        { "Legacy_M5.large", "tailor-migrate-legacy-m5-large" },
        { "--a--b--", "tailor-migrate-a-b" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char got[128];
        tlr_mig_configmap_name(t[i].in, got, sizeof(got));
        if (strcmp(got, t[i].want) != 0) {
            printf("FAIL %s: got %s, want %s\n", t[i].in, got, t[i].want);
            failures++;
        }
    }
    /* Long and empty names: at most 63 characters, lowercase, distinct. */
    const char *longs[] = {
        "m5.8xlarge-min-300-max-2500-in-us-east-1-for-the-payments-team-a",
        "m5.8xlarge-min-300-max-2500-in-us-east-1-for-the-payments-team-b", "", "///" };
    char seen[4][128];
    for (size_t i = 0; i < 4; i++) {
        tlr_mig_configmap_name(longs[i], seen[i], sizeof(seen[i]));
        size_t n = strlen(seen[i]);
        bool ok = n <= 63 && seen[i][n - 1] != '-' && strncmp(seen[i], "tailor-migrate-", 15) == 0;
        for (size_t k = 0; k < n; k++)
            ok &= (seen[i][k] >= 'a' && seen[i][k] <= 'z') ||
                  (seen[i][k] >= '0' && seen[i][k] <= '9') || seen[i][k] == '-';
        if (!ok) {
            printf("FAIL \"%s\": %s is not a valid name\n", longs[i], seen[i]);
            failures++;
        }
    }
    assert_string_not_equal(seen[0], seen[1]);
    assert_string_not_equal(seen[2], seen[3]);
    assert_int_equal(failures, 0);
}

static void test_exit_codes(void **state)
{
    (void)state;
    static const struct { int code; const char *name; } t[] = {
        { 0, "OK" }, { 1, "FAIL" }, { 2, "USAGE" }, { 3, "INVALID" }, { 4, "HALTED" },
        { 5, "GATE" }, { 6, "LOCKED" }, { 7, "PAUSED" }, { 99, "UNKNOWN" },
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        assert_string_equal(tlr_mig_exit_name(t[i].code), t[i].name);
    assert_non_null(strstr(tlr_mig_exit_text(3), "nothing was touched"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_configmap_names),
        cmocka_unit_test(test_exit_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
