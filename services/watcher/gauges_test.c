/* gauges_test.c - Karpenter's cluster-state gauges from a cache built by
 * informer events: per-Node resources and requests (DaemonSet pods apart,
 * finished and pending pods not counted), NodePool limits and usage,
 * utilization, sync, and series that go with their Node. */
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
#include "gauges.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "metrics_testkit.h"

#define POD_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD
#define NODE_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE
#define POOL_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODEPOOL

static void apply(watcher_cache *c, int kind, tlr_kube_event_type type, const char *json)
{
    json_object *o = json_tokener_parse(json);
    if (!o)
        fail_msg("bad test JSON: %s", json);
    Tailor__V1__ClusterChange chg;
    bool became = false;
    int rc = watcher_cache_apply(c, kind, type, o, &chg, &became);
    if (rc != TLR_OK)
        fail_msg("apply %s: got %s want OK", json, tlr_strerror(rc));
    json_object_put(o);
}

static void node(watcher_cache *c, tlr_kube_event_type type, const char *name, const char *zone)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
             "\"labels\":{\"karpenter.sh/nodepool\":\"default\",\"topology.kubernetes.io/zone\":\"%s\","
             "\"node.kubernetes.io/instance-type\":\"m5.xlarge\",\"kubernetes.io/arch\":\"amd64\","
             "\"karpenter.sh/capacity-type\":\"spot\"}},"
             "\"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\"},"
             "\"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"15Gi\",\"pods\":\"58\"}}}",
             name, name, zone);
    apply(c, NODE_K, type, buf);
}

/* owner "" = none; phase "Running", "Succeeded", ... */
static void pod(watcher_cache *c, const char *name, const char *node_name, const char *cpu,
                const char *owner, const char *phase)
{
    char buf[1400], own[256] = "";
    if (owner[0])
        snprintf(own, sizeof(own),
                 ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"%s\",\"name\":\"o\","
                 "\"uid\":\"o1\",\"controller\":true}]", owner);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"d\",\"uid\":\"uid-%s\"%s},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"cpu\":\"%s\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":\"%s\",\"conditions\":"
             "[{\"type\":\"PodScheduled\",\"status\":\"%s\",\"reason\":\"%s\"}]}}",
             name, name, own, node_name, cpu, phase, node_name[0] ? "True" : "False",
             node_name[0] ? "" : "Unschedulable");
    apply(c, POD_K, TLR_KUBE_ADDED, buf);
}

static void test_gauges(void **state)
{
    (void)state;
    watcher_cache *c;
    watcher_cache_create(&(watcher_cache_opts){ .epoch_ms = 0 }, &c);
    tlr_metrics *m;
    tlr_metrics_create(&m);
    watcher_gauges *g;
    watcher_gauges_create(m, &g);

    node(c, TLR_KUBE_ADDED, "n1", "us-east-1a");
    node(c, TLR_KUBE_ADDED, "n2", "us-east-1b");
    pod(c, "web", "n1", "1", "ReplicaSet", "Running");
    pod(c, "ds", "n1", "100m", "DaemonSet", "Running");
    pod(c, "done", "n1", "2", "", "Succeeded");
    pod(c, "pending", "", "8", "", "Pending");
    apply(c, POOL_K, TLR_KUBE_ADDED,
          "{\"metadata\":{\"name\":\"default\",\"uid\":\"p1\"},\"spec\":{\"limits\":{\"cpu\":\"100\","
          "\"memory\":\"400Gi\"},\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
          "\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":[]}}},"
          "\"status\":{\"resources\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"116\"}}}");

    int64_t now = 1767225600000 + 3600 * 1000;   /* an hour after creation */
    watcher_gauges_update(g, c, true, now);
    char *page = mt_render(m);
    static const struct {
        const char *name;
        const char *want[4];
        double v;
    } cases[] = {
        { "karpenter_nodes_allocatable", { "node_name=\"n1\"", "resource_type=\"cpu\"", "zone=\"us-east-1a\"" }, 3.92 },
        { "karpenter_nodes_allocatable", { "node_name=\"n2\"", "resource_type=\"memory\"", "capacity_type=\"spot\"" },
          15.0 * 1024 * 1024 * 1024 },
        { "karpenter_nodes_system_overhead", { "node_name=\"n1\"", "resource_type=\"cpu\"" }, 0.08 },
        { "karpenter_nodes_total_pod_requests", { "node_name=\"n1\"", "resource_type=\"cpu\"" }, 1.1 },
        { "karpenter_nodes_total_pod_requests", { "node_name=\"n1\"", "resource_type=\"pods\"" }, 2 },
        { "karpenter_nodes_total_daemon_requests", { "node_name=\"n1\"", "resource_type=\"cpu\"" }, 0.1 },
        { "karpenter_nodes_current_lifetime_seconds", { "node_name=\"n2\"", "managed=\"true\"" }, 3600 },
        { "karpenter_nodepools_limit", { "nodepool=\"default\"", "resource_type=\"cpu\"" }, 100 },
        { "karpenter_nodepools_usage", { "nodepool=\"default\"", "resource_type=\"pods\"" }, 116 },
        { "karpenter_cluster_utilization_percent", { "resource_type=\"cpu\"" }, 100.0 * 1.1 / 7.84 },
        { "karpenter_cluster_state_node_count", { NULL }, 2 },
        { "karpenter_cluster_state_synced", { NULL }, 1 },
        { "karpenter_cluster_state_unsynced_time_seconds", { NULL }, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double got = mt_value(page, cases[i].name, cases[i].want);
        if (!(got > cases[i].v - 1e-6 && got < cases[i].v + 1e-6))
            fail_msg("case %zu %s{%s,...}: got %g want %g\n%s", i, cases[i].name,
                     cases[i].want[0] ? cases[i].want[0] : "", got, cases[i].v, page);
    }
    /* n2 runs no pod: no request series for it; no limit on pods. */
    static const char *const n2[] = { "node_name=\"n2\"", NULL };
    assert_true(isnan(mt_value(page, "karpenter_nodes_total_pod_requests", n2)));
    static const char *const lp[] = { "resource_type=\"pods\"", NULL };
    assert_true(isnan(mt_value(page, "karpenter_nodepools_limit", lp)));
    /* Karpenter's label names on a per-Node series, empty when unset. */
    assert_non_null(strstr(page, "instance_category=\"\""));
    assert_non_null(strstr(page, "node_phase=\"\""));
    free(page);

    /* n2 goes, the cache loses sync: its series go with it. */
    node(c, TLR_KUBE_DELETED, "n2", "us-east-1b");
    watcher_gauges_update(g, c, false, now + 1000);
    watcher_gauges_update(g, c, false, now + 3000);
    page = mt_render(m);
    assert_int_equal(mt_count_lines(page, "karpenter_nodes_allocatable{") , 3);   /* n1: cpu, memory, pods */
    assert_null(strstr(page, "node_name=\"n2\""));
    static const char *const none[] = { NULL };
    assert_true(mt_value(page, "karpenter_cluster_state_synced", none) == 0);
    assert_true(mt_value(page, "karpenter_cluster_state_unsynced_time_seconds", none) == 2);
    free(page);

    watcher_gauges_free(g);
    tlr_metrics_free(m);
    watcher_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gauges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
