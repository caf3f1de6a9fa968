/* podmetrics_test.c - Karpenter's per-pod metrics follow the pod's life:
 * a pending pod appears in unbound and unstarted time, leaves unbound when
 * bound (one bound-duration observation), leaves unstarted when Ready (one
 * startup observation); pods_state carries its owner, node and the Node's
 * labels; deleted pods, and pods a relist no longer lists, lose their
 * series. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include "cache.h"
#include "podmetrics.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "metrics_testkit.h"

#define NODE_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE
#define T0 1767225600000           /* 2026-01-01T00:00:00Z, every pod's creation */

static json_object *parse(const char *json)
{
    json_object *o = json_tokener_parse(json);
    if (!o)
        fail_msg("bad test JSON: %s", json);
    return o;
}

static void add_node(watcher_cache *c)
{
    json_object *o = parse(
        "{\"metadata\":{\"name\":\"n1\",\"uid\":\"u-n1\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
        "\"labels\":{\"karpenter.sh/nodepool\":\"default\",\"topology.kubernetes.io/zone\":\"us-east-1a\","
        "\"node.kubernetes.io/instance-type\":\"m5.xlarge\",\"kubernetes.io/arch\":\"amd64\","
        "\"karpenter.sh/capacity-type\":\"spot\"}},"
        "\"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\"},"
        "\"allocatable\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\"}}}");
    Tailor__V1__ClusterChange chg;
    bool became = false;
    assert_int_equal(watcher_cache_apply(c, NODE_K, TLR_KUBE_ADDED, o, &chg, &became), TLR_OK);
    json_object_put(o);
}

/* A pod event.  node "" = unbound; sched_s / ready_s: seconds after
 * creation the condition turned True, -1 = not True. */
static void pod_at(watcher_podmetrics *pm, tlr_kube_event_type type, const char *name, const char *node,
                   const char *phase, int sched_s, int ready_s, int now_s)
{
    char buf[2048], sched[160], ready[160];
    if (sched_s >= 0)
        snprintf(sched, sizeof(sched),
                 "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:00:%02dZ\"}",
                 sched_s);
    else
        snprintf(sched, sizeof(sched), "{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}");
    if (ready_s >= 0)
        snprintf(ready, sizeof(ready),
                 ",{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:00:%02dZ\"}",
                 ready_s);
    else
        snprintf(ready, sizeof(ready), ",{\"type\":\"Ready\",\"status\":\"False\"}");
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"d\",\"uid\":\"uid-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
             "\"kind\":\"ReplicaSet\",\"name\":\"%s-abc\",\"uid\":\"o1\",\"controller\":true}]},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\"}]},"
             "\"status\":{\"phase\":\"%s\",\"conditions\":[%s%s]}}",
             name, name, name, node, phase, sched, ready);
    json_object *o = parse(buf);
    watcher_podmetrics_apply(pm, type, o, T0 + (int64_t)now_s * 1000);
    json_object_put(o);
}

static void pod(watcher_podmetrics *pm, tlr_kube_event_type type, const char *name, const char *node,
                const char *phase, int sched_s, int ready_s)
{
    pod_at(pm, type, name, node, phase, sched_s, ready_s, 3600);
}

static void decided(watcher_podmetrics *pm, const char *name, const char *uid, bool scheduled, int at_s)
{
    watcher_podmetrics_decided(pm, "d", name, uid, scheduled, T0 + (int64_t)at_s * 1000);
}

static char *pass(watcher_podmetrics *pm, watcher_cache *c, tlr_metrics *m, int at_s)
{
    watcher_podmetrics_update(pm, c, T0 + (int64_t)at_s * 1000);
    return mt_render(m);
}

#define WANT(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void expect(const char *page, const char *name, const char *const *want, double v)
{
    double got = mt_value(page, name, want);
    if (isnan(v) ? !isnan(got) : got != v)
        fail_msg("%s{%s...}: got %g want %g\n%s", name, want[0] ? want[0] : "", got, v, page);
}

/* Each test's cache (one Node, n1), registry and pod metrics. */
typedef struct {
    watcher_cache *c;
    tlr_metrics *m;
    watcher_podmetrics *pm;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    watcher_cache_create(&(watcher_cache_opts){ .epoch_ms = 0 }, &f->c);
    add_node(f->c);
    tlr_metrics_create(&f->m);
    watcher_podmetrics_create(f->m, &f->pm);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    watcher_podmetrics_free(f->pm);
    tlr_metrics_free(f->m);
    watcher_cache_free(f->c);
    free(f);
    return 0;
}

static void test_pod_life(void **state)
{
    fixture *f = *state;
    watcher_cache *c = f->c;
    tlr_metrics *m = f->m;
    watcher_podmetrics *pm = f->pm;

    /* Pending, unbound: in both time gauges, seconds since creation. */
    pod(pm, TLR_KUBE_ADDED, "web", "", "Pending", -1, -1);
    char *page = pass(pm, c, m, 30);
    expect(page, "karpenter_pods_unbound_time_seconds", WANT("name=\"web\"", "namespace=\"d\""), 30);
    expect(page, "karpenter_pods_unstarted_time_seconds", WANT("name=\"web\""), 30);
    expect(page, "karpenter_pods_state",
           WANT("name=\"web\"", "owner=\"/apis/apps/v1/namespaces/d/replicasets/web-abc\"", "node=\"\"",
                "scheduled=\"false\"", "phase=\"Pending\"", "ready=\"false\"", "managed=\"false\"",
                "nodepool=\"\""), 1);
    expect(page, "karpenter_pods_bound_duration_seconds_count", WANT(""), 0);
    free(page);

    /* Bound 12 s after creation: out of unbound, one bound observation of
     * 12 s; still unstarted; pods_state has the Node's labels. */
    pod(pm, TLR_KUBE_MODIFIED, "web", "n1", "Pending", 12, -1);
    page = pass(pm, c, m, 40);
    expect(page, "karpenter_pods_unbound_time_seconds", WANT("name=\"web\""), NAN);
    expect(page, "karpenter_pods_unstarted_time_seconds", WANT("name=\"web\""), 40);
    expect(page, "karpenter_pods_bound_duration_seconds_count", WANT(""), 1);
    expect(page, "karpenter_pods_bound_duration_seconds_sum", WANT(""), 12);
    expect(page, "karpenter_pods_bound_duration_seconds_bucket", WANT("le=\"10\""), 0);
    expect(page, "karpenter_pods_bound_duration_seconds_bucket", WANT("le=\"15\""), 1);
    expect(page, "karpenter_pods_state",
           WANT("name=\"web\"", "node=\"n1\"", "scheduled=\"true\"", "nodepool=\"default\"", "zone=\"us-east-1a\"",
                "arch=\"amd64\"", "capacity_type=\"spot\"", "instance_type=\"m5.xlarge\"", "managed=\"true\""), 1);
    assert_int_equal(mt_count_lines(page, "karpenter_pods_state{"), 1);
    free(page);

    /* Running but not Ready yet: still unstarted.  Ready at 50 s: out of
     * unstarted, one startup observation of 50 s.  A repeat of the event
     * observes nothing more. */
    pod(pm, TLR_KUBE_MODIFIED, "web", "n1", "Running", 12, -1);
    page = pass(pm, c, m, 45);
    expect(page, "karpenter_pods_unstarted_time_seconds", WANT("name=\"web\""), 45);
    free(page);
    pod(pm, TLR_KUBE_MODIFIED, "web", "n1", "Running", 12, 50);
    pod(pm, TLR_KUBE_MODIFIED, "web", "n1", "Running", 12, 50);
    page = pass(pm, c, m, 60);
    expect(page, "karpenter_pods_unstarted_time_seconds", WANT("name=\"web\""), NAN);
    expect(page, "karpenter_pods_startup_duration_seconds_count", WANT(""), 1);
    expect(page, "karpenter_pods_startup_duration_seconds_sum", WANT(""), 50);
    expect(page, "karpenter_pods_startup_duration_seconds", WANT("quantile=\"0.5\""), 50);
    expect(page, "karpenter_pods_bound_duration_seconds_count", WANT(""), 1);
    expect(page, "karpenter_pods_state", WANT("name=\"web\"", "phase=\"Running\"", "ready=\"true\""), 1);
    free(page);

    /* Already running when first seen: no observation.  Pending, then
     * Failed: leaves unstarted without one either. */
    pod(pm, TLR_KUBE_ADDED, "old", "n1", "Running", 1, 2);
    pod(pm, TLR_KUBE_ADDED, "crash", "n1", "Pending", 3, -1);
    page = pass(pm, c, m, 61);
    expect(page, "karpenter_pods_unstarted_time_seconds", WANT("name=\"crash\""), 61);
    free(page);
    pod(pm, TLR_KUBE_MODIFIED, "crash", "n1", "Failed", 3, -1);
    page = pass(pm, c, m, 62);
    expect(page, "karpenter_pods_unstarted_time_seconds", WANT("name=\"crash\""), NAN);
    expect(page, "karpenter_pods_startup_duration_seconds_count", WANT(""), 1);
    expect(page, "karpenter_pods_bound_duration_seconds_count", WANT(""), 2);   /* crash was bound at 3 s */
    assert_int_equal(mt_count_lines(page, "karpenter_pods_state{"), 3);
    free(page);

    /* Deleted: its series go at the next pass.  A relist that no longer
     * lists a pod drops it too. */
    pod(pm, TLR_KUBE_DELETED, "web", "n1", "Running", 12, 50);
    watcher_podmetrics_apply(pm, TLR_KUBE_RELIST_START, NULL, T0);
    pod(pm, TLR_KUBE_ADDED, "old", "n1", "Running", 1, 2);
    watcher_podmetrics_apply(pm, TLR_KUBE_RELIST_DONE, NULL, T0);
    assert_int_equal(watcher_podmetrics_count(pm), 1);
    page = pass(pm, c, m, 70);
    assert_int_equal(mt_count_lines(page, "karpenter_pods_state{"), 1);
    expect(page, "karpenter_pods_state", WANT("name=\"old\""), 1);
    assert_null(strstr(page, "name=\"web\""));
    assert_null(strstr(page, "name=\"crash\""));
    free(page);

}

/* The provisioning metrics count from the watcher's first sight of a
 * provisionable pod (ack) and the launcher's decisions: undecided time
 * until the first decision (one decision-duration observation), then
 * provisioning unbound/unstarted time from the schedulable time, which a
 * failed decision clears; binding and start observe from it. */
static void test_provisioning(void **state)
{
    fixture *f = *state;
    watcher_cache *c = f->c;
    tlr_metrics *m = f->m;
    watcher_podmetrics *pm = f->pm;

    pod_at(pm, TLR_KUBE_ADDED, "api", "", "Pending", -1, -1, 2);     /* acked at 2 s */
    char *page = pass(pm, c, m, 3);
    expect(page, "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
           WANT("name=\"api\"", "namespace=\"d\""), 1);
    expect(page, "karpenter_pods_provisioning_unbound_time_seconds", WANT("name=\"api\""), NAN);
    free(page);

    /* First decision at 4 s, a failed one: 2 s after the ack; no longer
     * undecided, not schedulable. */
    decided(pm, "api", "uid-api", false, 4);
    page = pass(pm, c, m, 5);
    expect(page, "karpenter_pods_scheduling_decision_duration_seconds_count", WANT(""), 1);
    expect(page, "karpenter_pods_scheduling_decision_duration_seconds_sum", WANT(""), 2);
    expect(page, "karpenter_pods_provisioning_scheduling_undecided_time_seconds", WANT("name=\"api\""), NAN);
    expect(page, "karpenter_pods_provisioning_unbound_time_seconds", WANT("name=\"api\""), NAN);
    free(page);

    /* Scheduled at 6 s; a decision for another pod of that name (uid)
     * changes nothing; the decision duration is observed once only. */
    decided(pm, "api", "uid-api", true, 6);
    decided(pm, "api", "uid-other", false, 7);
    page = pass(pm, c, m, 10);
    expect(page, "karpenter_pods_provisioning_unbound_time_seconds", WANT("name=\"api\""), 4);
    expect(page, "karpenter_pods_provisioning_unstarted_time_seconds", WANT("name=\"api\""), 4);
    expect(page, "karpenter_pods_scheduling_decision_duration_seconds_count", WANT(""), 1);
    free(page);

    /* Failed again at 7 s (its claim could not launch), scheduled at 8 s:
     * the schedulable time starts over. */
    decided(pm, "api", "uid-api", false, 7);
    decided(pm, "api", "uid-api", true, 8);
    decided(pm, "api", "uid-api", true, 9);
    page = pass(pm, c, m, 10);
    expect(page, "karpenter_pods_provisioning_unbound_time_seconds", WANT("name=\"api\""), 2);
    free(page);

    /* Bound at 12 s, Ready at 20 s: 4 s and 12 s from the schedulable time
     * (12 s and 20 s from creation). */
    pod_at(pm, TLR_KUBE_MODIFIED, "api", "n1", "Pending", 12, -1, 12);
    page = pass(pm, c, m, 13);
    expect(page, "karpenter_pods_provisioning_bound_duration_seconds_count", WANT(""), 1);
    expect(page, "karpenter_pods_provisioning_bound_duration_seconds_sum", WANT(""), 4);
    expect(page, "karpenter_pods_bound_duration_seconds_sum", WANT(""), 12);
    expect(page, "karpenter_pods_provisioning_unbound_time_seconds", WANT("name=\"api\""), NAN);
    expect(page, "karpenter_pods_provisioning_unstarted_time_seconds", WANT("name=\"api\""), 5);
    free(page);
    pod_at(pm, TLR_KUBE_MODIFIED, "api", "n1", "Running", 12, 20, 20);
    /* A late decision for a bound pod restarts nothing. */
    decided(pm, "api", "uid-api", true, 21);
    page = pass(pm, c, m, 22);
    expect(page, "karpenter_pods_provisioning_startup_duration_seconds_count", WANT(""), 1);
    expect(page, "karpenter_pods_provisioning_startup_duration_seconds_sum", WANT(""), 12);
    expect(page, "karpenter_pods_provisioning_unstarted_time_seconds", WANT("name=\"api\""), NAN);
    assert_int_equal(mt_count_lines(page, "karpenter_pods_provisioning_unbound_time_seconds{"), 0);
    assert_int_equal(mt_count_lines(page, "karpenter_pods_provisioning_unstarted_time_seconds{"), 0);
    free(page);

    /* A pod the scheduler placed itself (never Unschedulable) is never
     * acked: no undecided time, and its decision observes no duration. */
    pod_at(pm, TLR_KUBE_ADDED, "quick", "n1", "Pending", 1, -1, 1);
    decided(pm, "unknown", "uid-unknown", true, 2);
    page = pass(pm, c, m, 30);
    expect(page, "karpenter_pods_provisioning_scheduling_undecided_time_seconds", WANT("name=\"quick\""), NAN);
    expect(page, "karpenter_pods_scheduling_decision_duration_seconds_count", WANT(""), 1);
    free(page);

}

/* Many pods: the table grows, each pending pod has its series, and all
 * go when the pods are bound. */
static void test_many_pods(void **state)
{
    fixture *f = *state;
    watcher_cache *c = f->c;
    tlr_metrics *m = f->m;
    watcher_podmetrics *pm = f->pm;
    enum { N = 12000 };                 /* past the registry's default ceiling */
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "p%05d", i);
        pod(pm, TLR_KUBE_ADDED, name, "", "Pending", -1, -1);
    }
    assert_int_equal(watcher_podmetrics_count(pm), N);
    char *page = pass(pm, c, m, 5);
    assert_int_equal(mt_count_lines(page, "karpenter_pods_unbound_time_seconds{"), N);
    assert_int_equal(mt_count_lines(page, "karpenter_pods_state{"), N);
    free(page);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "p%05d", i);
        pod(pm, TLR_KUBE_MODIFIED, name, "n1", "Pending", 4, -1);
    }
    page = pass(pm, c, m, 6);
    assert_int_equal(mt_count_lines(page, "karpenter_pods_unbound_time_seconds{"), 0);
    assert_int_equal(mt_count_lines(page, "karpenter_pods_unstarted_time_seconds{"), N);
    expect(page, "karpenter_pods_bound_duration_seconds_count", WANT(""), N);
    free(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pod_life, setup, teardown),
        cmocka_unit_test_setup_teardown(test_provisioning, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_pods, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
