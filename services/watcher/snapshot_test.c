/* snapshot_test.c - what a subscriber receives: a PendingBatch carries the
 * complete pending set (not just the pods that opened the window) and the
 * cluster state, with bound pods on their nodes; a SnapshotResponse holds
 * only the kinds asked for, or just {unchanged} for a cheap poll. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snapshot.h"
#include "tlr_err.h"

#define K(x) TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_##x

static void apply(watcher_cache *c, Tailor__V1__ClusterKind kind, tlr_kube_event_type t, const char *json)
{
    json_object *o = json ? json_tokener_parse(json) : NULL;
    if (json)
        assert_non_null(o);
    Tailor__V1__ClusterChange chg;
    bool became;
    int rc = watcher_cache_apply(c, kind, t, o, &chg, &became);
    if (rc)
        printf("FAIL applying %s: rc %d\n", json ? json : "(relist)", rc);
    assert_int_equal(rc, TLR_OK);
    json_object_put(o);
}

static void add_pod(watcher_cache *c, const char *name, const char *node, const char *phase, const char *app)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"d\",\"uid\":\"u-%s\",\"labels\":{\"app\":\"%s\"}},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"cpu\":\"250m\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\","
             "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}",
             name, name, app, node, phase);
    apply(c, K(POD), TLR_KUBE_ADDED, buf);
}

static watcher_cache *fixture(void)
{
    watcher_cache *c;
    watcher_cache_create(&(watcher_cache_opts){ .epoch_ms = 1234 }, &c);
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++)
        apply(c, k, TLR_KUBE_RELIST_START, NULL);
    apply(c, K(NODE), TLR_KUBE_ADDED,
          "{\"metadata\":{\"name\":\"n1\",\"uid\":\"nu1\"},\"status\":{\"allocatable\":{\"cpu\":\"4\"}}}");
    apply(c, K(NODE), TLR_KUBE_ADDED,
          "{\"metadata\":{\"name\":\"n2\",\"uid\":\"nu2\"},\"status\":{\"allocatable\":{\"cpu\":\"4\"}}}");
    apply(c, K(PDB), TLR_KUBE_ADDED,
          "{\"metadata\":{\"name\":\"web\",\"namespace\":\"d\"},\"spec\":{\"minAvailable\":1,"
          "\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}");
    apply(c, K(NODEPOOL), TLR_KUBE_ADDED,
          "{\"metadata\":{\"name\":\"general\"},\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":"
          "{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
          "\"requirements\":[]}}}}");
    add_pod(c, "b1", "n1", "Running", "web");
    add_pod(c, "b2", "n1", "Running", "db");
    add_pod(c, "b3", "n1", "Succeeded", "web");   /* terminal: not on the node */
    add_pod(c, "b4", "n2", "Running", "web");
    add_pod(c, "b5", "gone", "Running", "web");   /* node not cached: left out */
    add_pod(c, "p1", "", "Pending", "web");
    add_pod(c, "p2", "", "Pending", "db");
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++)
        apply(c, k, TLR_KUBE_RELIST_DONE, NULL);
    return c;
}

static const Tailor__V1__Node *node(const Tailor__V1__ClusterState *cs, const char *name)
{
    for (size_t i = 0; i < cs->n_nodes; i++)
        if (!strcmp(cs->nodes[i]->name, name))
            return cs->nodes[i];
    return NULL;
}

/* Sorted, comma-joined pod names of a list. */
static void names(Tailor__V1__Pod *const *p, size_t n, char *buf, size_t len)
{
    const char *v[64];
    for (size_t i = 0; i < n && i < 64; i++)
        v[i] = p[i]->name;
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
            const char *t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", v[i]);
}

static void test_batch_carries_the_whole_state(void **state)
{
    (void)state;
    watcher_cache *c = fixture();
    watcher_batch_window w = { 100, 200 };
    watcher_snapshot *s;
    watcher_snapshot_for_batch(c, &w, 7, 999, &s);
    Tailor__V1__PendingBatch *sent = watcher_snapshot_batch(s);
    assert_non_null(sent);
    assert_null(watcher_snapshot_response(s));
    /* read it as a subscriber does: packed, then unpacked */
    size_t len = tailor__v1__pending_batch__get_packed_size(sent);
    uint8_t *buf = malloc(len);
    tailor__v1__pending_batch__pack(sent, buf);
    Tailor__V1__PendingBatch *b = tailor__v1__pending_batch__unpack(NULL, len, buf);
    free(buf);
    watcher_snapshot_free(s);
    assert_non_null(b);
    char got[256];
    names(b->pending_pods, b->n_pending_pods, got, sizeof(got));
    if (strcmp(got, "p1,p2"))
        printf("FAIL pending: got %s, want p1,p2\n", got);
    assert_string_equal(got, "p1,p2");
    assert_string_equal(b->batch_id, "1234-7");
    assert_int_equal(b->sequence, 7);
    assert_int_equal(b->window_start_unix_ms, 100);
    assert_int_equal(b->window_end_unix_ms, 200);
    const Tailor__V1__ClusterState *cs = b->cluster;
    assert_true(cs->synced);
    assert_int_equal(cs->watcher_epoch_unix_ms, 1234);
    assert_int_equal(cs->generation, watcher_cache_generation(c));
    assert_int_equal(cs->n_nodes, 2);
    assert_int_equal(cs->n_nodepools, 1);
    assert_int_equal(cs->n_pdbs, 1);
    const Tailor__V1__Node *n1 = node(cs, "n1");
    assert_non_null(n1);
    assert_int_equal(n1->base.n_unknown_fields, 0);   /* pods arrive as Node.pods */
    names(n1->pods, n1->n_pods, got, sizeof(got));
    if (strcmp(got, "b1,b2"))
        printf("FAIL n1 pods: got %s, want b1,b2\n", got);
    assert_string_equal(got, "b1,b2");
    names(node(cs, "n2")->pods, node(cs, "n2")->n_pods, got, sizeof(got));
    assert_string_equal(got, "b4");
    assert_int_equal(n1->requested->cpu_millis, 500);
    assert_int_equal(n1->requested->memory_bytes, 2LL << 30);
    assert_int_equal(n1->requested->pods, 2);
    assert_int_equal(n1->requested->n_extended, 1);
    assert_string_equal(n1->requested->extended[0]->name, "nvidia.com/gpu");
    assert_int_equal(n1->requested->extended[0]->value, 2);
    /* pdb_names: the web PDB selects b1 and p1, not b2 or p2 */
    for (size_t i = 0; i < n1->n_pods; i++) {
        const Tailor__V1__Pod *p = n1->pods[i];
        bool web = !strcmp(p->name, "b1");
        assert_int_equal(p->n_pdb_names, web ? 1 : 0);
        if (web)
            assert_string_equal(p->pdb_names[0], "d/web");
        assert_int_equal(p->requests->cpu_millis, 250);   /* compact form intact */
    }
    for (size_t i = 0; i < b->n_pending_pods; i++)
        assert_int_equal(b->pending_pods[i]->n_pdb_names, !strcmp(b->pending_pods[i]->name, "p1"));
    tailor__v1__pending_batch__free_unpacked(b, NULL);
    /* the pending set is level-triggered: a pod seen long ago is still in */
    add_pod(c, "p3", "", "Pending", "web");
    watcher_snapshot_for_batch(c, &w, 8, 999, &s);
    Tailor__V1__PendingBatch *b8 = watcher_snapshot_batch(s);
    names(b8->pending_pods, b8->n_pending_pods, got, sizeof(got));
    assert_string_equal(got, "p1,p2,p3");
    watcher_snapshot_free(s);
    watcher_cache_free(c);
}

static void test_request_kinds_and_unchanged(void **state)
{
    (void)state;
    watcher_cache *c = fixture();
    Tailor__V1__ClusterKind kinds[] = { K(NODEPOOL) };
    Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
    req.kinds = kinds;
    req.n_kinds = 1;
    watcher_snapshot *s;
    watcher_snapshot_for_request(c, &req, 5, &s);
    Tailor__V1__SnapshotResponse *r = watcher_snapshot_response(s);
    assert_non_null(r);
    assert_false(r->unchanged);
    assert_int_equal(r->cluster->n_nodes, 0);
    assert_int_equal(r->cluster->n_pdbs, 0);
    assert_int_equal(r->cluster->n_nodepools, 1);
    assert_int_equal(r->n_pending_pods, 0);
    watcher_snapshot_free(s);

    req.n_kinds = 0;
    req.include_pending_pods = true;
    watcher_snapshot_for_request(c, &req, 5, &s);
    r = watcher_snapshot_response(s);
    assert_int_equal(r->cluster->n_nodes, 2);
    assert_int_equal(r->n_pending_pods, 2);
    watcher_snapshot_free(s);

    req.if_changed_since_generation = watcher_cache_generation(c);
    req.watcher_epoch_unix_ms = 1234;
    watcher_snapshot_for_request(c, &req, 5, &s);
    r = watcher_snapshot_response(s);
    assert_true(r->unchanged);
    assert_null(r->cluster);
    watcher_snapshot_free(s);

    req.watcher_epoch_unix_ms = 1;    /* another watcher process: full answer */
    watcher_snapshot_for_request(c, &req, 5, &s);
    r = watcher_snapshot_response(s);
    assert_false(r->unchanged);
    assert_non_null(r->cluster);
    watcher_snapshot_free(s);
    watcher_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_carries_the_whole_state),
        cmocka_unit_test(test_request_kinds_and_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
