/* controller_test.c - the disruption controller's life of a decision
 * against the fakes: proposed, validated after the delay, executed in
 * order (taint, launch, wait for Initialized, delete), aborted when the
 * cluster changed, budgets at validation, no decisions while pods are
 * freshly pending or the watcher is not synced, stale taints removed,
 * expiration forceful, hashes stamped, AMI drift judged on the images
 * the launcher publishes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller.h"
#include "ds_fake.h"
#include "hash.h"
#include "ds_testkit.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_metrics.h"
#include "metrics_testkit.h"

typedef struct fx {
    ds_fake f;
    Tailor__V1__Catalog *cat;
    ds_ctl *c;
} fx;

static int setup(void **state)
{
    fx *x = tlr_calloc(1, sizeof(*x));
    ds_fake_init(&x->f);
    x->f.now_ms = TK_NOW;
    x->cat = tk_catalog();
    x->f.catalog = x->cat;
    x->f.snap = tk_snapshot();
    Tailor__V1__ClusterState *cs = x->f.snap->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("default", "100%"));
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    ds_ctl_opts o = { .clock = &x->f.clock, .kube = ds_fake_kube(&x->f),
                      .launcher = ds_fake_launcher(&x->f), .solver = ds_fake_solver(&x->f),
                      .watcher = ds_fake_watcher(&x->f), .catalog = x->cat, .validation_ms = 5000,
                      .min_savings = 0.1 };
    ds_ctl_create(&o, &x->c);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    ds_ctl_free(x->c);
    ds_fake_clear(&x->f);
    protobuf_c_message_free_unpacked(&x->cat->base, NULL);
    free(x);
    return 0;
}

static Tailor__V1__Node *node(fx *x, const char *name, const char *type, int cpu, int mem, int pod_m)
{
    Tailor__V1__Node *n = tk_node(name, "default", type, cpu, mem, 0);
    if (pod_m) {
        char pn[64];
        snprintf(pn, sizeof(pn), "%s-p", name);
        tk_bind(n, tk_pod(pn, NULL, "app", 'r', "rs", pod_m, TK_GIB));
    }
    Tailor__V1__ClusterState *cs = x->f.snap->cluster;
    TK_PUSH(cs->nodes, cs->n_nodes, n);
    TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, tk_claim_for(n));
    char inst[64];
    snprintf(inst, sizeof(inst), "i-%s", name);
    ds_fake_add_node(&x->f, name, "default", inst);
    ds_fake_add_claim(&x->f, n->nodeclaim_name, "default", inst);
    return n;
}

static ds_ctl_stats pass(fx *x, int64_t advance_ms)
{
    x->f.now_ms += advance_ms;
    ds_ctl_stats st;
    int rc = ds_ctl_pass(x->c, &st);
    if (rc)
        fail_msg("pass: %s", tlr_strerror(rc));
    return st;
}

static size_t index_of(const ds_fake *f, const char *call)
{
    for (size_t i = 0; i < f->ncalls; i++)
        if (!strncmp(f->calls[i], call, strlen(call)))
            return i;
    return (size_t)-1;
}

static void test_delete_is_validated_then_executed(void **state)
{
    fx *x = *state;
    for (int i = 0; i < 4; i++) {
        char n[16];
        snprintf(n, sizeof(n), "m%d", i);
        node(x, n, "t.medium", 4, 8, 1000);
    }
    ds_ctl_stats st = pass(x, 0);
    assert_int_equal(st.proposed, 1);
    assert_int_equal(ds_fake_count(&x->f, "taint"), 0);          /* nothing acted yet */
    st = pass(x, 1000);                                           /* within the delay */
    assert_int_equal(st.executed + st.proposed, 0);
    ds_fake_forget_calls(&x->f);
    st = pass(x, 5000);
    assert_int_equal(st.executed, 1);
    assert_int_equal(ds_fake_count(&x->f, "taint"), 3);
    assert_int_equal(ds_fake_count(&x->f, "delete nodeclaim"), 3);
    assert_true(index_of(&x->f, "taint") < index_of(&x->f, "delete nodeclaim"));
    assert_non_null(ds_fake_call(&x->f, "event Node", 0));
    assert_non_null(strstr(ds_fake_call(&x->f, "event Node", 0), "DisruptionTerminating"));
}

static void test_replace_waits_for_initialized(void **state)
{
    fx *x = *state;
    node(x, "m", "t.medium", 4, 8, 1500);
    node(x, "full", "t.small", 2, 4, 1900);
    assert_int_equal(pass(x, 0).proposed, 1);
    ds_fake_forget_calls(&x->f);
    pass(x, 6000);
    const char *launch = ds_fake_call(&x->f, "launch ", 0);
    assert_non_null(launch);
    assert_non_null(strstr(launch, "t.small (consolidation-replace:d-"));
    assert_non_null(ds_fake_call(&x->f, "taint m on", 0));
    assert_int_equal(ds_fake_count(&x->f, "delete nodeclaim"), 0);
    char repl[96];
    sscanf(launch, "launch %95s", repl);
    /* the replacement shows up, not Initialized: still waiting */
    Tailor__V1__Node *rn = tk_node("r1", "default", "t.small", 2, 4, 0);
    free(rn->nodeclaim_name);
    rn->nodeclaim_name = tlr_strdup(repl);
    rn->initialized = false;
    TK_PUSH(x->f.snap->cluster->nodes, x->f.snap->cluster->n_nodes, rn);
    pass(x, 1000);
    assert_int_equal(ds_fake_count(&x->f, "delete nodeclaim"), 0);
    /* Initialized: the candidate's claim goes */
    rn->initialized = true;
    x->f.snap->cluster->nodes[0]->marked_for_deletion = true;   /* as the taint shows */
    pass(x, 1000);
    assert_non_null(ds_fake_call(&x->f, "delete nodeclaim nc-m", 0));
}

static void test_churn_aborts_on_validation(void **state)
{
    fx *x = *state;
    Tailor__V1__Node *a = node(x, "a", "t.medium", 4, 8, 1000);
    node(x, "b", "t.medium", 4, 8, 1000);
    assert_int_equal(pass(x, 0).proposed, 1);   /* both by one t.small */
    /* meanwhile someone protected a's pod: the decision is stale */
    tk_annotate_pod(a->pods[0], "karpenter.sh/do-not-disrupt", "true");
    ds_ctl_stats st = pass(x, 6000);
    assert_int_equal(st.aborted, 1);
    assert_int_equal(ds_fake_count(&x->f, "taint"), 0);
    assert_int_equal(ds_fake_count(&x->f, "delete"), 0);
}

static void test_no_decision_while_pods_pending_or_unsynced(void **state)
{
    fx *x = *state;
    node(x, "a", "t.medium", 4, 8, 0);
    Tailor__V1__Pod *p = tk_pod("new", NULL, "app", 'r', "rs", 100, 1);
    p->creation_unix_ms = TK_NOW - 10000;
    TK_PUSH(x->f.snap->pending_pods, x->f.snap->n_pending_pods, p);
    assert_int_equal(pass(x, 0).proposed, 0);   /* a fresh pending pod */
    p->creation_unix_ms = TK_NOW - 10 * 60 * 1000;   /* stuck for 10 min: not ours to wait for */
    assert_int_equal(pass(x, 0).proposed, 1);
    x->f.snap->cluster->synced = false;
    ds_ctl_stats st;
    assert_int_equal(ds_ctl_pass(x->c, &st), TLR_E_NOTREADY);
}

static void test_budget_checked_at_validation(void **state)
{
    fx *x = *state;
    node(x, "e1", "t.small", 2, 4, 0);
    node(x, "e2", "t.small", 2, 4, 0);
    assert_int_equal(pass(x, 0).proposed, 1);   /* both empty: one emptiness decision */
    /* the budget shrank to one node meanwhile */
    Tailor__V1__Budget *b = x->f.snap->cluster->nodepools[0]->disruption->budgets[0];
    free(b->nodes);
    b->nodes = tlr_strdup("1");
    ds_ctl_stats st = pass(x, 6000);
    assert_int_equal(st.aborted, 1);
    assert_int_equal(ds_fake_count(&x->f, "delete"), 0);
}

static void test_stale_taint_removed(void **state)
{
    fx *x = *state;
    Tailor__V1__Node *n = node(x, "left", "t.small", 2, 4, 500);
    n->marked_for_deletion = true;   /* a crash left it tainted */
    pass(x, 0);
    assert_int_equal(ds_fake_count(&x->f, "taint left off"), 0);   /* seen once */
    pass(x, 6000);
    assert_int_equal(ds_fake_count(&x->f, "taint left off"), 1);
}

static void test_expiration_and_hashes(void **state)
{
    fx *x = *state;
    node(x, "old", "t.small", 2, 4, 500);
    x->f.snap->cluster->nodeclaims[0]->creation_unix_ms = TK_NOW - 721LL * 3600 * 1000;
    ds_ctl_stats st = pass(x, 0);
    assert_int_equal(st.expired, 1);
    assert_non_null(ds_fake_call(&x->f, "delete nodeclaim nc-old", 0));
    assert_int_equal(ds_fake_count(&x->f, "taint"), 0);   /* forceful: termination taints */
    /* the pool and class got tailor's hashes, the claim the pool's */
    char h[32];
    ds_hash_nodepool(x->f.snap->cluster->nodepools[0], h, sizeof(h));
    char want[128];
    snprintf(want, sizeof(want), "annotate default %s=%s", DS_POOL_HASH, h);
    assert_non_null(ds_fake_call(&x->f, want, 0));
    assert_non_null(ds_fake_call(&x->f, "annotate default karpenter.sh/nodepool-hash-version=tailor-1", 0));
    snprintf(want, sizeof(want), "annotate nc-old %s=%s", DS_POOL_HASH, h);
    assert_non_null(ds_fake_call(&x->f, want, 0));
}

/* The controller again, validating each decision after 5 s with the pods
 * read in full form from the fake's drain ops. */
static void ctl_validating_full_pods(fx *x)
{
    ds_ctl_free(x->c);
    tlr_drain_ops d = ds_fake_drain(&x->f);
    ds_ctl_opts o = { .clock = &x->f.clock, .kube = ds_fake_kube(&x->f),
                      .launcher = ds_fake_launcher(&x->f), .solver = ds_fake_solver(&x->f),
                      .watcher = ds_fake_watcher(&x->f), .catalog = x->cat, .validation_ms = 5000,
                      .min_savings = 0.1, .full_pods = d.list_pods, .full_pods_arg = d.arg };
    ds_ctl_create(&o, &x->c);
}

static void test_validation_reads_full_pods(void **state)
{
    fx *x = *state;
    /* compact pods (the snapshot) say a and b can go onto one small; the
     * pods as Kubernetes has them say a's needs disk=ssd, which only a has */
    ctl_validating_full_pods(x);
    Tailor__V1__Node *a = node(x, "a", "t.medium", 4, 8, 1000);
    node(x, "b", "t.medium", 4, 8, 1000);
    TK_PUSH(a->labels, a->n_labels, tk_label("disk", "ssd"));
    for (size_t i = 0; i < 2; i++) {
        Tailor__V1__Pod *p = tk_pod(i ? "b-p" : "a-p", i ? "b" : "a", "app", 'r', "rs", 1000, TK_GIB);
        if (!i)
            TK_PUSH(p->node_selector, p->n_node_selector, tk_label("disk", "ssd"));
        ds_fake_add_pod(&x->f, p);
        protobuf_c_message_free_unpacked(&p->base, NULL);
    }
    assert_int_equal(pass(x, 0).proposed, 1);
    ds_ctl_stats st = pass(x, 6000);
    assert_int_equal(st.aborted, 1);
    assert_int_equal(ds_fake_count(&x->f, "taint"), 0);
}

/* Drift's replacements are planned again with the pods' full form before
 * anything is touched: on the snapshot's compact pods the drifted node's
 * pod fits a replacement, as Kubernetes has it (nodeSelector disk=ssd,
 * which no instance type offers) it fits none, so the rotation waits
 * instead of draining a node whose pod would have nowhere to go. */
static void test_drift_validation_reads_full_pods(void **state)
{
    fx *x = *state;
    ctl_validating_full_pods(x);
    Tailor__V1__NodeClass *nc = x->f.snap->cluster->node_classes[0];
    TK_PUSH(nc->amis, nc->n_amis, tk_ami("ami-new"));
    x->f.snap->cluster->nodepools[0]->disruption->consolidate_after_never = true;
    Tailor__V1__Node *a = node(x, "a", "t.medium", 4, 8, 1000);
    TK_PUSH(a->labels, a->n_labels, tk_label("disk", "ssd"));
    Tailor__V1__NodeClaimStatus *cst = x->f.snap->cluster->nodeclaims[0]->status;
    cst->image_id = tlr_strdup("ami-old");
    TK_PUSH(cst->conditions, cst->n_conditions, tk_cond("Launched", true));
    Tailor__V1__Pod *p = tk_pod("a-p", "a", "app", 'r', "rs", 1000, TK_GIB);
    TK_PUSH(p->node_selector, p->n_node_selector, tk_label("disk", "ssd"));
    ds_fake_add_pod(&x->f, p);
    protobuf_c_message_free_unpacked(&p->base, NULL);
    ds_ctl_stats st = pass(x, 0);
    assert_int_equal(st.proposed, 1);             /* compact: a replacement fits */
    const ds_cmd *cmd = ds_ctl_command_for(x->c, "a");
    assert_non_null(cmd);
    assert_int_equal(cmd->method, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_DRIFT);
    assert_int_equal(cmd->nrepl, 1);
    st = pass(x, 6000);
    assert_int_equal(st.aborted, 1);
    assert_int_equal(ds_fake_count(&x->f, "taint"), 0);
    assert_int_equal(ds_fake_count(&x->f, "launch"), 0);
}

/* AMI drift reads what the launcher published: the claim's imageID
 * against its class's status.amis; the disruptor asks AWS nothing. */
static void test_ami_drift_from_class_status(void **state)
{
    fx *x = *state;
    Tailor__V1__NodeClass *nc = x->f.snap->cluster->node_classes[0];
    TK_PUSH(nc->amis, nc->n_amis, tk_ami("ami-old"));
    x->f.snap->cluster->nodepools[0]->disruption->consolidate_after_never = true;
    node(x, "a", "t.medium", 4, 8, 1000);
    Tailor__V1__NodeClaimStatus *cst = x->f.snap->cluster->nodeclaims[0]->status;
    cst->image_id = tlr_strdup("ami-old");
    TK_PUSH(cst->conditions, cst->n_conditions, tk_cond("Launched", true));
    assert_int_equal(pass(x, 0).proposed, 0);     /* status and node agree: no drift */
    /* the launcher resolved the class again: a new image for its alias */
    tailor__v1__resolved_ami__free_unpacked(nc->amis[0], NULL);
    nc->amis[0] = tk_ami("ami-new");
    ds_ctl_stats st = pass(x, 1000);
    assert_int_equal(st.proposed, 1);
    const ds_cmd *cmd = ds_ctl_command_for(x->c, "a");
    assert_non_null(cmd);
    assert_int_equal(cmd->reason, TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_DRIFTED);
    if (!strstr(cmd->why, "node runs image ami-old; EC2NodeClass default now resolves to ami-new"))
        fail_msg("why: got \"%s\"", cmd->why);
    assert_non_null(ds_fake_call(&x->f, "condition nc-a Drifted=True AMIDrift", 0));
    assert_int_equal(ds_fake_count(&x->f, "sqs"), 0);
}

/* Nothing published for the class (not resolved yet, or resolution
 * failed: AMIsReady False) is never a reason to drift. */
static void test_no_ami_drift_without_published_amis(void **state)
{
    fx *x = *state;
    Tailor__V1__NodeClass *nc = x->f.snap->cluster->node_classes[0];
    x->f.snap->cluster->nodepools[0]->disruption->consolidate_after_never = true;
    node(x, "a", "t.medium", 4, 8, 1000);
    Tailor__V1__NodeClaimStatus *cst = x->f.snap->cluster->nodeclaims[0]->status;
    cst->image_id = tlr_strdup("ami-old");
    TK_PUSH(cst->conditions, cst->n_conditions, tk_cond("Launched", true));
    assert_int_equal(pass(x, 0).proposed, 0);     /* status.amis empty */
    assert_int_equal(ds_fake_count(&x->f, "condition nc-a Drifted=True"), 0);
    /* a status.amis beside AMIsReady False is not trusted either */
    TK_PUSH(nc->amis, nc->n_amis, tk_ami("ami-new"));
    TK_PUSH(nc->conditions, nc->n_conditions, tk_cond("AMIsReady", false));
    assert_int_equal(pass(x, 1000).proposed, 0);
    assert_int_equal(ds_fake_count(&x->f, "condition nc-a Drifted=True"), 0);
    /* resolved: now it has drifted */
    nc->conditions[0]->status = TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE;
    assert_int_equal(pass(x, 1000).proposed, 1);
    assert_int_equal(ds_fake_count(&x->f, "condition nc-a Drifted=True AMIDrift"), 1);
}

static void expect_metric(tlr_metrics *m, const char *sample, double want)
{
    double got = mt_sample(m, sample);
    if (got != want)
        fail_msg("%s: got %g want %g", sample, got, want);
}

/* Karpenter's evaluation durations, one observation per method a pass
 * evaluates (consolidation as its multi- and single-node searches), and
 * consolidation timeouts: 0 for both types from the start, the
 * single-node search counted when it runs out of its time budget. */
static void test_evaluation_metrics(void **state)
{
    fx *x = *state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    ds_ctl_free(x->c);
    ds_ctl_opts o = { .clock = &x->f.clock, .kube = ds_fake_kube(&x->f),
                      .launcher = ds_fake_launcher(&x->f), .solver = ds_fake_solver(&x->f),
                      .watcher = ds_fake_watcher(&x->f), .catalog = x->cat, .validation_ms = 5000,
                      .min_savings = 0.1, .metrics = m, .time_budget_ms = 1 };
    ds_ctl_create(&o, &x->c);
    expect_metric(m, "karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type=\"multi\"}", 0);
    expect_metric(m, "karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type=\"single\"}", 0);

    /* Three full nodes of the cheapest type: nothing to do; every
     * method evaluated once, the single-node search (each Simulate 3 ms
     * against a 1 ms budget) stops after its first candidate. */
    for (int i = 0; i < 3; i++) {
        char n[16];
        snprintf(n, sizeof(n), "s%d", i);
        node(x, n, "t.small", 2, 4, 1900);
    }
    x->f.simulate_delay_ms = 3;
    ds_ctl_stats st = pass(x, 0);
    assert_int_equal(st.proposed, 0);
    static const char *const once[] = {
        "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count{reason=\"empty\",consolidation_type=\"empty\"}",
        "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count{reason=\"drifted\",consolidation_type=\"\"}",
        "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count{reason=\"underutilized\",consolidation_type=\"multi\"}",
        "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count{reason=\"underutilized\",consolidation_type=\"single\"}",
    };
    for (size_t i = 0; i < 4; i++)
        expect_metric(m, once[i], 1);
    expect_metric(m, "karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type=\"single\"}", 1);
    expect_metric(m, "karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type=\"multi\"}", 0);
    assert_true(mt_sample(m, "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_sum{reason="
                            "\"underutilized\",consolidation_type=\"single\"}") >= 0.003);

    ds_ctl_free(x->c);
    x->c = NULL;
    tlr_metrics_free(m);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_delete_is_validated_then_executed),
        T(test_replace_waits_for_initialized),
        T(test_churn_aborts_on_validation),
        T(test_no_decision_while_pods_pending_or_unsynced),
        T(test_budget_checked_at_validation),
        T(test_stale_taint_removed),
        T(test_expiration_and_hashes),
        T(test_drift_validation_reads_full_pods),
        T(test_ami_drift_from_class_status),
        T(test_no_ami_drift_without_published_amis),
        T(test_validation_reads_full_pods),
        T(test_evaluation_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
