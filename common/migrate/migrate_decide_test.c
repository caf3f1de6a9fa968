/* migrate_decide_test.c - the step machine, table by table: which nodes a
 * merge adds and drops, what step comes next, when a batch's pods count as
 * back on tailor's nodes, the health gate, the lock, single-replica
 * protection and what a rollback undoes. */
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

/* A state with nodes n0..n(k-1) in the given states (batch = 1 when in
 * flight). */
static void with_nodes(tlr_mig_state *s, const tlr_mig_node_state *st, size_t k, bool frozen)
{
    tlr_mig_state_init(s, "m", "", "g", 2, 0);
    s->frozen = frozen;
    tlr_mig_nodev v[16];
    char names[16][24];
    for (size_t i = 0; i < k; i++) {
        snprintf(names[i], sizeof(names[i]), "n%zu", i);
        v[i] = (tlr_mig_nodev){ .name = names[i], .instance = "", .zone = "", .asg = "g",
                                .selected = true };
    }
    tlr_mig_merge(s, v, k, 0);
    for (size_t i = 0; i < k; i++) {
        s->nodes[i].state = st[i];
        if (st[i] >= TLR_MIG_NODE_DRAINING && st[i] <= TLR_MIG_NODE_REMOVING)
            s->nodes[i].batch = 1;
    }
    s->batch_no = 1;
}

static void test_merge(void **state)
{
    (void)state;
    tlr_mig_state s;
    tlr_mig_state_init(&s, "m", "sel", "", 1, 0);
    tlr_mig_nodev first[] = {
        { .name = "c", .instance = "i-c", .zone = "z", .asg = "g", .selected = true },
        { .name = "a", .instance = "i-a", .zone = "z", .asg = "g", .selected = true,
          .unschedulable = true },
        { .name = "t", .instance = "i-t", .zone = "z", .asg = "", .tailor = true },
        { .name = "b", .instance = "", .zone = "z", .asg = "", .selected = true },
    };
    assert_int_equal(tlr_mig_merge(&s, first, 4, 10), 3);
    /* New nodes in name order; tailor's and unselected ones left out. */
    assert_int_equal(s.nnodes, 3);
    assert_string_equal(s.nodes[0].name, "a");
    assert_true(s.nodes[0].was_cordoned);
    assert_string_equal(s.nodes[1].name, "b");
    assert_string_equal(s.nodes[2].name, "c");
    assert_false(s.nodes[2].was_cordoned);
    /* Later: b learns its instance, c is gone, a is in flight and gone, d new. */
    s.nodes[0].state = TLR_MIG_NODE_DRAINING;
    tlr_mig_nodev later[] = {
        { .name = "d", .instance = "i-d", .zone = "z", .asg = "g", .selected = true },
        { .name = "b", .instance = "i-b", .zone = "z", .asg = "g", .selected = true },
    };
    assert_int_equal(tlr_mig_merge(&s, later, 2, 20), 1);
    assert_int_equal(s.nnodes, 4);
    assert_string_equal(s.nodes[1].instance, "i-b");
    assert_int_equal(s.nodes[2].state, TLR_MIG_NODE_GONE);
    assert_int_equal(s.nodes[2].done_ms, 20);
    assert_int_equal(s.nodes[0].state, TLR_MIG_NODE_DRAINING);   /* in flight: left alone */
    assert_string_equal(s.nodes[3].name, "d");
    tlr_mig_state_clear(&s);
}

static void test_next(void **state)
{
    (void)state;
#define P TLR_MIG_NODE_PENDING
#define D TLR_MIG_NODE_DRAINING
#define R TLR_MIG_NODE_REPLACING
#define V TLR_MIG_NODE_VERIFYING
#define M TLR_MIG_NODE_REMOVING
#define X TLR_MIG_NODE_DONE
#define G TLR_MIG_NODE_GONE
    static const struct {
        const char *what;
        bool frozen;
        tlr_mig_node_state nodes[6];
        size_t n;
        int batch, max_nodes, started;
        tlr_mig_step want;
        const char *want_nodes;   /* indexes, "01" */
    } t[] = {
        { "first: freeze", false, { P, P }, 2, 2, 0, 0, TLR_MIG_STEP_FREEZE, "" },
        { "a batch of two", true, { P, P, P }, 3, 2, 0, 0, TLR_MIG_STEP_START, "01" },
        { "done and gone skipped", true, { X, G, P, P }, 4, 2, 0, 0, TLR_MIG_STEP_START, "23" },
        { "the last node alone", true, { X, X, P }, 3, 2, 0, 0, TLR_MIG_STEP_START, "2" },
        { "a batch in flight first", true, { D, D, P }, 3, 2, 0, 0, TLR_MIG_STEP_DRAIN, "01" },
        { "least advanced node says", true, { R, M, P }, 3, 2, 0, 0, TLR_MIG_STEP_WAIT, "01" },
        { "verifying", true, { V, V }, 2, 2, 0, 0, TLR_MIG_STEP_HEALTH, "01" },
        { "removing", true, { X, M }, 2, 2, 0, 0, TLR_MIG_STEP_REMOVE, "1" },
        { "all done", true, { X, G, X }, 3, 2, 0, 0, TLR_MIG_STEP_DONE, "" },
        { "max nodes caps the batch", true, { P, P, P }, 3, 2, 1, 0, TLR_MIG_STEP_START, "0" },
        { "max nodes reached: pause", true, { X, P }, 2, 2, 1, 1, TLR_MIG_STEP_PAUSE, "" },
        { "max nodes reached, none left", true, { X, X }, 2, 2, 1, 1, TLR_MIG_STEP_DONE, "" },
        { "a batch in flight beats the cap", true, { D, P }, 2, 1, 1, 1, TLR_MIG_STEP_DRAIN, "0" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_mig_state s;
        tlr_mig_next nx;
        char got[16] = "";
        with_nodes(&s, t[i].nodes, t[i].n, t[i].frozen);
        tlr_mig_decide_next(&s, &(tlr_mig_next_opts){ t[i].batch, t[i].max_nodes, t[i].started },
                            &nx);
        for (size_t k = 0; k < nx.n && k < 15; k++)
            got[k] = (char)('0' + nx.nodes[k]);
        if (nx.step != t[i].want || strcmp(got, t[i].want_nodes) != 0) {
            printf("FAIL %s: got %s [%s], want %s [%s]\n", t[i].what, tlr_mig_step_name(nx.step),
                   got, tlr_mig_step_name(t[i].want), t[i].want_nodes);
            failures++;
        }
        tlr_mig_next_clear(&nx);
        tlr_mig_state_clear(&s);
    }
    assert_int_equal(failures, 0);
}

/* The cluster the batch tests look at: legacy nodes L1 (in the batch), L2
 * (not yet) and tailor's T1. */
static const tlr_mig_nodev cluster_nodes[] = {
    { .name = "L1", .instance = "i-1", .zone = "a", .asg = "g", .selected = true },
    { .name = "L2", .instance = "i-2", .zone = "a", .asg = "g", .selected = true },
    { .name = "T1", .instance = "i-9", .zone = "a", .asg = "", .tailor = true },
};

#define POD(uid, node, kind, owner, ready) \
    { uid, "default", uid, node, kind, owner, ready, false, false, 0, false }

static void begin(tlr_mig_state *s, const tlr_mig_podv *pods, size_t n)
{
    tlr_mig_state_init(s, "m", "", "g", 1, 0);
    s->frozen = true;
    tlr_mig_merge(s, cluster_nodes, 3, 0);
    size_t idx[1] = { 0 };   /* L1 */
    tlr_mig_batch_begin(s, idx, 1, pods, n, cluster_nodes, 3, 100);
}

static void test_batch_begin(void **state)
{
    (void)state;
    tlr_mig_podv before[] = {
        POD("w1", "L1", "Deployment", "web", true),
        POD("w2", "L1", "Deployment", "web", true),
        POD("w3", "L2", "Deployment", "web", true),
        POD("w4", "T1", "Deployment", "web", true),
        POD("d1", "L1", "DaemonSet", "agent", true),
        POD("o1", "L1", "", "", true),
        POD("j1", "L1", "Job", "nightly", false),
    };
    before[0].restarts = 2;
    before[6].crashloop = true;
    tlr_mig_state s;
    begin(&s, before, 7);
    assert_int_equal(s.batch_no, 1);
    assert_int_equal(s.nodes[0].state, TLR_MIG_NODE_DRAINING);
    assert_int_equal(s.nodes[0].batch, 1);
    assert_int_equal(s.nodes[0].started_ms, 100);
    assert_int_equal(s.nodes[0].pods, 4);   /* DaemonSet pods stay */
    assert_int_equal(s.nodes[1].state, TLR_MIG_NODE_PENDING);
    /* Only Ready pods of workloads that come back are waited for. */
    assert_int_equal(s.nowners, 1);
    assert_string_equal(s.owners[0].name, "web");
    assert_int_equal(s.owners[0].ready_before, 4);
    assert_int_equal(s.owners[0].tailor_before, 1);
    assert_int_equal(s.owners[0].displaced, 2);
    /* The baseline holds only pods with restarts or a crash loop. */
    assert_int_equal(s.nbaseline, 2);
    assert_string_equal(s.baseline[0].pod, "default/w1");
    assert_int_equal(s.baseline[0].restarts, 2);
    assert_true(s.baseline[1].crashloop);
    tlr_mig_state_clear(&s);
}

static void test_replaced(void **state)
{
    (void)state;
    const tlr_mig_podv before[] = {
        POD("w1", "L1", "Deployment", "web", true),
        POD("w2", "L1", "Deployment", "web", true),
        POD("w3", "L2", "Deployment", "web", true),
    };
    static const struct {
        const char *what;
        tlr_mig_podv now[4];
        size_t n;
        bool want;
        const char *why;
    } t[] = {
        { "both back on tailor", { POD("w3", "L2", "Deployment", "web", true),
                                   POD("n1", "T1", "Deployment", "web", true),
                                   POD("n2", "T1", "Deployment", "web", true) }, 3, true, "" },
        { "one still on the node", { POD("w1", "L1", "Deployment", "web", true),
                                     POD("w3", "L2", "Deployment", "web", true),
                                     POD("n1", "T1", "Deployment", "web", true) }, 3, false,
          "Deployment default/web: 1 pod still on L1" },
        { "one replacement starting", { POD("w3", "L2", "Deployment", "web", true),
                                        POD("n1", "T1", "Deployment", "web", true),
                                        POD("n2", "", "Deployment", "web", false) }, 3, false,
          "Deployment default/web: 2 of 3 pods Ready (1 starting or pending)" },
        { "a replacement landed on a legacy node",
          { POD("w3", "L2", "Deployment", "web", true), POD("n1", "T1", "Deployment", "web", true),
            POD("n2", "L2", "Deployment", "web", true) }, 3, false,
          "Deployment default/web: 1 of 2 displaced pods Ready on tailor's nodes (2 Ready on "
          "other nodes, 0 starting or pending)" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_mig_state s;
        char why[512];
        begin(&s, before, 3);
        bool got = tlr_mig_replaced(&s, t[i].now, t[i].n, cluster_nodes, 3, why, sizeof(why));
        if (got != t[i].want || (!got && strcmp(why, t[i].why) != 0)) {
            printf("FAIL %s: got %d \"%s\", want %d \"%s\"\n", t[i].what, got, why, t[i].want,
                   t[i].why);
            failures++;
        }
        tlr_mig_state_clear(&s);
    }
    /* A terminating old pod on the node does not hold the batch up. */
    tlr_mig_state s;
    char why[512];
    begin(&s, before, 3);
    tlr_mig_podv going[] = { POD("w1", "L1", "Deployment", "web", false),
                             POD("w3", "L2", "Deployment", "web", true),
                             POD("n1", "T1", "Deployment", "web", true),
                             POD("n2", "T1", "Deployment", "web", true) };
    going[0].deleting = true;
    assert_true(tlr_mig_replaced(&s, going, 4, cluster_nodes, 3, why, sizeof(why)));
    tlr_mig_state_clear(&s);
    assert_int_equal(failures, 0);
}

static void test_health(void **state)
{
    (void)state;
    tlr_mig_podv before[] = { POD("a", "L2", "Deployment", "web", true),
                              POD("b", "L2", "Deployment", "web", true) };
    before[0].restarts = 3;
    before[1].crashloop = true;
    static const struct {
        const char *what;
        int restarts_a, restarts_n;
        bool crash_b, crash_n, pending_n;
        int max_pending, threshold;
        bool ok;
        const char *problem;
    } t[] = {
        { "as before", 3, 0, true, false, false, 0, 1, true, NULL },
        { "an old crash loop is not new", 3, 0, true, false, false, 0, 1, true, NULL },
        { "restarts grew", 4, 0, true, false, false, 0, 1, false,
          "pod default/a restarted 1 time since batch 1 began" },
        { "growth under the threshold", 4, 0, true, false, false, 0, 2, true, NULL },
        { "a new pod restarting", 3, 2, true, false, false, 0, 2, false,
          "pod default/n restarted 2 times since batch 1 began" },
        { "a new pod crash-looping", 3, 0, true, true, false, 0, 1, false,
          "pod default/n is in CrashLoopBackOff (it was not when batch 1 began)" },
        { "one pending, none allowed", 3, 0, true, false, true, 0, 1, false,
          "1 pods pending (at most 0 allowed)" },
        { "one pending, one allowed", 3, 0, true, false, true, 1, 1, true, NULL },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_mig_state s;
        begin(&s, before, 2);
        tlr_mig_podv now[3] = { POD("a", "L2", "Deployment", "web", true),
                                POD("b", "L2", "Deployment", "web", true),
                                POD("n", "T1", "Deployment", "web", true) };
        now[0].restarts = t[i].restarts_a;
        now[1].crashloop = t[i].crash_b;
        now[2].restarts = t[i].restarts_n;
        now[2].crashloop = t[i].crash_n;
        if (t[i].pending_n) {
            now[2].node = "";
            now[2].ready = false;
        }
        tlr_mig_health h;
        tlr_mig_health_check(&s, now, 3, &(tlr_mig_health_opts){ t[i].max_pending,
                                                                 t[i].threshold }, &h);
        bool match = h.ok == t[i].ok;
        if (t[i].problem)
            match &= h.nproblems > 0 && strcmp(h.problems[0], t[i].problem) == 0;
        if (!match) {
            printf("FAIL %s: got ok=%d \"%s\", want ok=%d \"%s\"\n", t[i].what, h.ok,
                   h.nproblems ? h.problems[0] : "", t[i].ok, t[i].problem ? t[i].problem : "");
            failures++;
        }
        tlr_mig_health_clear(&h);
        tlr_mig_state_clear(&s);
    }
    assert_int_equal(failures, 0);
}

static void test_lock(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        const char *host;
        int64_t pid, heartbeat;
        bool alive;
        int want;
    } t[] = {
        { "nobody", "", 0, 0, false, TLR_OK },
        { "ours", "me", 10, 9000, true, TLR_OK },
        { "a live run here", "me", 11, 9000, true, TLR_E_BUSY },
        { "a dead run here (SIGKILL)", "me", 11, 9000, false, TLR_OK },
        { "a run elsewhere, fresh", "ci-2", 10, 9000, true, TLR_E_BUSY },
        { "a run elsewhere, stale", "ci-2", 10, 1000, true, TLR_OK },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_mig_holder h = { (char *)t[i].host, t[i].pid, t[i].heartbeat };
        char why[256];
        int rc = tlr_mig_lock_decide(&h, "me", 10, t[i].alive, 10000, 5000, why, sizeof(why));
        if (rc != t[i].want || (rc == TLR_E_BUSY && strstr(why, t[i].host) == NULL)) {
            printf("FAIL %s: got %s \"%s\"\n", t[i].what, tlr_errname(rc), why);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_needs_restart(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        tlr_mig_podv pods[3];
        size_t n;
        bool want;
    } t[] = {
        { "the only Ready pod of a Deployment", { POD("s", "L1", "Deployment", "solo", true) }, 1,
          true },
        { "two Ready pods", { POD("s", "L1", "Deployment", "web", true),
                              POD("t", "T1", "Deployment", "web", true) }, 2, false },
        { "the other is not Ready", { POD("s", "L1", "Deployment", "web", true),
                                      POD("t", "T1", "Deployment", "web", false) }, 2, true },
        { "a StatefulSet: evicted", { POD("s", "L1", "StatefulSet", "db", true) }, 1, false },
        { "not Ready itself", { POD("s", "L1", "Deployment", "solo", false) }, 1, false },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        bool got = tlr_mig_needs_restart(&t[i].pods[0], t[i].pods, t[i].n);
        if (got != t[i].want) {
            printf("FAIL %s: got %d, want %d\n", t[i].what, got, t[i].want);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_rollback(void **state)
{
    (void)state;
    tlr_mig_state s;
    tlr_mig_node_state st[] = { TLR_MIG_NODE_DONE, TLR_MIG_NODE_DRAINING, TLR_MIG_NODE_PENDING,
                                TLR_MIG_NODE_PENDING, TLR_MIG_NODE_PENDING };
    with_nodes(&s, st, 5, true);
    s.nodes[3].was_cordoned = true;   /* cordoned before: stays */
    tlr_mig_state_add_asg(&s, "g", 2, 10, 5);
    tlr_mig_nodev now[] = {
        { .name = "n0", .selected = true, .unschedulable = true },   /* done: its node lingers */
        { .name = "n1", .selected = true, .unschedulable = true },
        { .name = "n2", .selected = true, .unschedulable = true },
        { .name = "n3", .selected = true, .unschedulable = true },
        { .name = "n4", .selected = true, .unschedulable = false },  /* never cordoned */
    };
    tlr_mig_rollback rb;
    tlr_mig_rollback_plan(&s, now, 5, &rb);
    assert_int_equal(rb.nuncordon, 2);
    assert_string_equal(s.nodes[rb.uncordon[0]].name, "n1");
    assert_string_equal(s.nodes[rb.uncordon[1]].name, "n2");
    assert_int_equal(rb.nrestore, 1);
    assert_int_equal(s.asgs[rb.restore[0]].desired, 5);
    tlr_mig_rollback_clear(&rb);
    tlr_mig_state_clear(&s);
}

static void test_status_render(void **state)
{
    (void)state;
    tlr_mig_state s;
    tlr_mig_node_state st[] = { TLR_MIG_NODE_DONE, TLR_MIG_NODE_DRAINING, TLR_MIG_NODE_PENDING };
    with_nodes(&s, st, 3, true);
    s.phase = TLR_MIG_PHASE_RUNNING;
    tlr_mig_state_add_asg(&s, "g", 2, 10, 3);
    tlr_buf b;
    tlr_buf_init(&b, 1u << 20);
    tlr_mig_status_text(&s, 5000, &b);
    assert_non_null(strstr(tlr_buf_str(&b), "Migration m: Running after 5s; 3 nodes: 1 done, 1 in "
                                            "flight, 1 pending, 0 gone"));
    assert_non_null(strstr(tlr_buf_str(&b), "ASG g: min 2, max 10, desired 3 before the migration"));
    assert_non_null(strstr(tlr_buf_str(&b), "draining"));
    tlr_buf_free(&b);
    tlr_buf_init(&b, 1u << 20);
    tlr_mig_status_json(&s, &b);
    assert_non_null(strstr(tlr_buf_str(&b), "\"counts\":{\"total\":3,\"pending\":1,\"in_flight\":1,"
                                            "\"done\":1,\"gone\":0}}"));
    assert_non_null(strstr(tlr_buf_str(&b), "\"phase\":\"Running\""));
    tlr_buf_free(&b);
    tlr_mig_state_clear(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_next),
        cmocka_unit_test(test_batch_begin),
        cmocka_unit_test(test_replaced),
        cmocka_unit_test(test_health),
        cmocka_unit_test(test_lock),
        cmocka_unit_test(test_needs_restart),
        cmocka_unit_test(test_rollback),
        cmocka_unit_test(test_status_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
