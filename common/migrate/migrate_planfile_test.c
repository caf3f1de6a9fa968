/* migrate_planfile_test.c - the plan file (clusters in waves): defaults
 * applied, every mistake named with its path, and the gate between waves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_err.h"
#include "tlr_migrate.h"

static const char good[] =
    "apiVersion: tailor.dev/v1alpha1\n"
    "kind: MigrationPlan\n"
    "metadata: {name: fleet}\n"
    "spec:\n"
    "  defaults:\n"
    "    kubeconfig: /etc/kube/fleet\n"
    "    asg: legacy-m5\n"
    "    batch: 2\n"
    "    drainTimeout: 15m\n"
    "  waves:\n"
    "  - name: dev\n"
    "    clusters:\n"
    "    - {context: dev-east}\n"
    "    - {context: dev-west, batch: 5, selector: 'eks.amazonaws.com/nodegroup=ng-1'}\n"
    "  - name: prod\n"
    "    gate: {wait: 30m, approval: true}\n"
    "    clusters:\n"
    "    - {name: prod-east-1, context: prod-east, kubeconfig: /etc/kube/prod, maxPending: 3}\n";

static void test_parse_good(void **state)
{
    (void)state;
    tlr_mig_plan p;
    char err[512];
    assert_int_equal(tlr_mig_plan_parse(good, strlen(good), "plan.yaml", &p, err, sizeof(err)),
                     TLR_OK);
    assert_string_equal(p.name, "fleet");
    assert_int_equal(p.nwaves, 2);
    const tlr_mig_wave *dev = &p.waves[0], *prod = &p.waves[1];
    assert_string_equal(dev->name, "dev");
    assert_true(dev->gate.require_done);
    assert_false(dev->gate.approval);
    assert_int_equal(dev->nclusters, 2);
    /* Defaults fill what a cluster leaves out; the name is the context. */
    const tlr_mig_cluster *a = &dev->clusters[0], *b = &dev->clusters[1];
    assert_string_equal(a->name, "dev-east");
    assert_string_equal(a->kubeconfig, "/etc/kube/fleet");
    assert_string_equal(a->asg, "legacy-m5");
    assert_null(a->selector);
    assert_int_equal(a->batch, 2);
    assert_int_equal(a->drain_timeout_ms, 15 * 60 * 1000);
    assert_int_equal(a->max_pending, -1);
    /* A cluster's own selector replaces the default asg. */
    assert_string_equal(b->selector, "eks.amazonaws.com/nodegroup=ng-1");
    assert_null(b->asg);
    assert_int_equal(b->batch, 5);
    assert_true(prod->gate.require_done);
    assert_true(prod->gate.approval);
    assert_int_equal(prod->gate.wait_ms, 30 * 60 * 1000);
    assert_string_equal(prod->clusters[0].name, "prod-east-1");
    assert_string_equal(prod->clusters[0].kubeconfig, "/etc/kube/prod");
    assert_int_equal(prod->clusters[0].max_pending, 3);
    tlr_mig_plan_clear(&p);
}

static void test_parse_errors(void **state)
{
    (void)state;
#define HEAD "apiVersion: tailor.dev/v1alpha1\nkind: MigrationPlan\n"
    static const struct {
        const char *what, *yaml, *err;
    } t[] = {
        { "not YAML", "a: [", "plan.yaml: line" },
        { "two documents", HEAD "---\n" HEAD, "want one YAML document" },
        { "wrong kind", "apiVersion: tailor.dev/v1alpha1\nkind: Plan\nspec: {}\n",
          "plan.yaml: kind: must be MigrationPlan" },
        { "wrong apiVersion", "apiVersion: v1\nkind: MigrationPlan\nspec: {}\n",
          "apiVersion: must be tailor.dev/v1alpha1" },
        { "an unknown top key", HEAD "specs: {}\n", "plan.yaml: specs: unknown key" },
        { "no waves", HEAD "spec: {waves: []}\n", "spec.waves: must be a non-empty list" },
        { "a typo in a cluster",
          HEAD "spec:\n  waves:\n  - name: dev\n    clusters:\n    - {context: c, asgg: g}\n",
          "plan.yaml: spec.waves[0].clusters[0].asgg: unknown key (known: name, context" },
        { "a typo in the gate",
          HEAD "spec:\n  waves:\n  - name: dev\n    gate: {aproval: true}\n    clusters:\n"
          "    - {context: c, asg: g}\n", "spec.waves[0].gate.aproval: unknown key" },
        { "a bad duration",
          HEAD "spec:\n  waves:\n  - name: dev\n    gate: {wait: soon}\n    clusters:\n"
          "    - {context: c, asg: g}\n", "spec.waves[0].gate.wait: must be a duration" },
        { "batch out of range",
          HEAD "spec:\n  waves:\n  - name: dev\n    clusters:\n    - {context: c, asg: g, batch: 0}\n",
          "spec.waves[0].clusters[0].batch: must be an integer in 1..100" },
        { "neither asg nor selector",
          HEAD "spec:\n  waves:\n  - name: dev\n    clusters:\n    - {context: c}\n",
          "spec.waves[0].clusters[0]: needs exactly one of selector and asg" },
        { "both asg and selector",
          HEAD "spec:\n  waves:\n  - name: dev\n    clusters:\n    - {context: c, asg: g, selector: x=y}\n",
          "needs exactly one of selector and asg" },
        { "no context or kubeconfig",
          HEAD "spec:\n  waves:\n  - name: dev\n    clusters:\n    - {asg: g}\n",
          "needs a context or a kubeconfig" },
        { "a wave without a name",
          HEAD "spec:\n  waves:\n  - clusters:\n    - {context: c, asg: g}\n",
          "spec.waves[0].name: every wave needs a name" },
        { "a wave named twice",
          HEAD "spec:\n  waves:\n  - name: a\n    clusters: [{context: c, asg: g}]\n"
          "  - name: a\n    clusters: [{context: d, asg: g}]\n", "wave a is named twice" },
        { "a cluster listed twice",
          HEAD "spec:\n  waves:\n  - name: a\n    clusters: [{context: c, asg: g}]\n"
          "  - name: b\n    clusters: [{context: c, asg: h}]\n",
          "spec.waves[1].clusters[0]: cluster c is listed twice" },
        { "a default name",
          HEAD "spec:\n  defaults: {name: x}\n  waves:\n  - name: a\n    clusters: [{context: c, asg: g}]\n",
          "spec.defaults.name: a name is per cluster" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_mig_plan p;
        char err[512] = "";
        int rc = tlr_mig_plan_parse(t[i].yaml, strlen(t[i].yaml), "plan.yaml", &p, err,
                                    sizeof(err));
        if (rc == TLR_OK || strstr(err, t[i].err) == NULL) {
            printf("FAIL %s: got %s \"%s\", want an error containing \"%s\"\n", t[i].what,
                   tlr_errname(rc), err, t[i].err);
            failures++;
        }
        if (rc == TLR_OK)
            tlr_mig_plan_clear(&p);
    }
    assert_int_equal(failures, 0);
}

static void test_gates(void **state)
{
    (void)state;
    const int64_t now = 10000000000LL, min = 60000;
    static const struct {
        const char *what;
        bool first, require_done, approval, approved;
        int64_t wait_ms;
        size_t clusters, done;
        int64_t finished_ago;   /* ms before now; < 0: none */
        tlr_mig_gate_verdict want;
        int64_t until;          /* WAIT */
        const char *why;
    } t[] = {
        { "the first wave opens", true, true, false, false, 30 * min, 0, 0, -1,
          TLR_MIG_GATE_OPEN, 0, "" },
        { "the first wave still needs its approval", true, true, true, false, 0, 0, 0, -1,
          TLR_MIG_GATE_APPROVAL, 0, "wave w needs an approval: run again with --approve-wave w" },
        { "earlier not done", false, true, false, false, 0, 3, 2, 10, TLR_MIG_GATE_BLOCKED, 0,
          "2 of 3 clusters of the earlier waves are Done" },
        { "earlier not done, not required", false, false, false, false, 0, 3, 2, 10,
          TLR_MIG_GATE_OPEN, 0, "" },
        { "soaking", false, true, false, false, 30 * min, 3, 3, 10 * min, TLR_MIG_GATE_WAIT,
          10000000000LL + 20 * 60000, "wave w waits 20m0s more" },
        { "soaked", false, true, false, false, 30 * min, 3, 3, 31 * min, TLR_MIG_GATE_OPEN, 0,
          "" },
        { "soaked, approval missing", false, true, true, false, 30 * min, 3, 3, 31 * min,
          TLR_MIG_GATE_APPROVAL, 0, "--approve-wave w" },
        { "soaked, approved", false, true, true, true, 30 * min, 3, 3, 31 * min,
          TLR_MIG_GATE_OPEN, 0, "" },
        { "approval does not skip the soak", false, true, true, true, 30 * min, 3, 3, 0,
          TLR_MIG_GATE_WAIT, 10000000000LL + 30 * 60000, "waits 30m0s more" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_mig_wave w = { .name = "w", .gate = { t[i].require_done, t[i].wait_ms,
                                                  t[i].approval } };
        tlr_mig_waves_done e = { t[i].clusters, t[i].done,
                                 t[i].finished_ago < 0 ? 0 : now - t[i].finished_ago };
        int64_t until = -1;
        char why[256];
        tlr_mig_gate_verdict v = tlr_mig_gate_decide(&w, t[i].first, &e, t[i].approved, now,
                                                     &until, why, sizeof(why));
        if (v != t[i].want || (v == TLR_MIG_GATE_WAIT && until != t[i].until) ||
            strstr(why, t[i].why) == NULL) {
            printf("FAIL %s: got %d until %lld \"%s\", want %d until %lld \"%s\"\n", t[i].what,
                   v, (long long)until, why, t[i].want, (long long)t[i].until, t[i].why);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_gates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
