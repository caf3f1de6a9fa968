/* snapshot_test.c - what a subscriber receives: a PendingBatch carries the
 * complete pending set (not just the pods that opened the window) and the
 * cluster state, with bound pods on their nodes, nodes and NodeClaims by
 * reference; a receiver that applies each batch's delta holds exactly the
 * nodes and claims a full snapshot would give; a SnapshotResponse holds
 * only the kinds asked for, or just {unchanged} for a cheap poll, and goes
 * by reference only when asked to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snapshot.h"
#include "tlr_cstate.h"
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
    watcher_snapshot_for_batch(c, &w, 7, 0, 999, &s);
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
    const Tailor__V1__ClusterState *bcs = b->cluster;
    assert_true(bcs->synced);
    assert_int_equal(bcs->watcher_epoch_unix_ms, 1234);
    assert_int_equal(bcs->generation, watcher_cache_generation(c));
    assert_int_equal(bcs->n_nodepools, 1);
    assert_int_equal(bcs->n_pdbs, 1);
    /* nodes go by reference; with no base, the delta is the whole state */
    assert_int_equal(bcs->n_nodes, 0);
    assert_non_null(bcs->by_ref);
    assert_true(bcs->by_ref->has_delta);
    assert_int_equal(bcs->by_ref->base_generation, 0);
    Tailor__V1__ClusterState view = { .nodes = bcs->by_ref->nodes, .n_nodes = bcs->by_ref->n_nodes };
    const Tailor__V1__ClusterState *cs = &view;
    assert_int_equal(cs->n_nodes, 2);
    assert_string_equal(cs->nodes[0]->name, "n1");   /* sorted by name */
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
    watcher_snapshot_for_batch(c, &w, 8, 0, 999, &s);
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

/* ---- by reference ---- */

static void add_node(watcher_cache *c, const char *name, const char *cpu)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\"},"
             "\"status\":{\"allocatable\":{\"cpu\":\"%s\"}}}", name, name, cpu);
    apply(c, K(NODE), TLR_KUBE_ADDED, buf);
}

static void del(watcher_cache *c, Tailor__V1__ClusterKind kind, const char *ns, const char *name)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"}}", name, ns);
    apply(c, kind, TLR_KUBE_DELETED, buf);
}

static void put_claim(watcher_cache *c, const char *name, const char *provider)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"nodeClassRef\":"
             "{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
             "\"requirements\":[]},\"status\":{\"providerID\":\"%s\"}}", name, provider);
    apply(c, K(NODECLAIM), TLR_KUBE_ADDED, buf);
}

/* msg through the wire: packed, then unpacked (malloc'd; free_unpacked). */
static ProtobufCMessage *wire(const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(len + 1);
    protobuf_c_message_pack(m, buf);
    ProtobufCMessage *u = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
    free(buf);
    assert_non_null(u);
    return u;
}

static bool same_bytes(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
    size_t la = protobuf_c_message_get_packed_size(a), lb = protobuf_c_message_get_packed_size(b);
    if (la != lb)
        return false;
    uint8_t *x = malloc(la + 1), *y = malloc(lb + 1);
    protobuf_c_message_pack(a, x);
    protobuf_c_message_pack(b, y);
    bool same = !memcmp(x, y, la);
    free(x);
    free(y);
    return same;
}

static int cmp_node(const void *a, const void *b)
{
    return strcmp((*(Tailor__V1__Node *const *)a)->name, (*(Tailor__V1__Node *const *)b)->name);
}

static int cmp_claim(const void *a, const void *b)
{
    return strcmp((*(Tailor__V1__NodeClaim *const *)a)->name,
                  (*(Tailor__V1__NodeClaim *const *)b)->name);
}

/* Does the receiver's view equal a full, inline snapshot taken now?  Says
 * what differs. */
static bool matches_full(const watcher_cache *c, const Tailor__V1__ClusterState *got, const char *step)
{
    Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
    watcher_snapshot *s;
    watcher_snapshot_for_request(c, &req, 5, &s);
    Tailor__V1__ClusterState *want = (Tailor__V1__ClusterState *)wire(&watcher_snapshot_response(s)->cluster->base);
    watcher_snapshot_free(s);
    if (want->n_nodes)     /* qsort's base must not be NULL, even for none */
        qsort(want->nodes, want->n_nodes, sizeof(*want->nodes), cmp_node);
    if (want->n_nodeclaims)
        qsort(want->nodeclaims, want->n_nodeclaims, sizeof(*want->nodeclaims), cmp_claim);
    bool ok = got->n_nodes == want->n_nodes && got->n_nodeclaims == want->n_nodeclaims;
    if (!ok)
        printf("FAIL %s: got %zu nodes %zu claims, want %zu, %zu\n", step, got->n_nodes,
               got->n_nodeclaims, want->n_nodes, want->n_nodeclaims);
    for (size_t i = 0; ok && i < want->n_nodes; i++)
        if (strcmp(got->nodes[i]->name, want->nodes[i]->name) ||
            !same_bytes(&got->nodes[i]->base, &want->nodes[i]->base)) {
            printf("FAIL %s: node %zu: got %s (%zu pods), want %s (%zu pods)\n", step, i,
                   got->nodes[i]->name, got->nodes[i]->n_pods, want->nodes[i]->name, want->nodes[i]->n_pods);
            ok = false;
        }
    for (size_t i = 0; ok && i < want->n_nodeclaims; i++)
        if (strcmp(got->nodeclaims[i]->name, want->nodeclaims[i]->name) ||
            !same_bytes(&got->nodeclaims[i]->base, &want->nodeclaims[i]->base)) {
            printf("FAIL %s: claim %zu: got %s, want %s\n", step, i, got->nodeclaims[i]->name,
                   want->nodeclaims[i]->name);
            ok = false;
        }
    tailor__v1__cluster_state__free_unpacked(want, NULL);
    return ok;
}

/* A receiver (common/cstate, as the launcher) following the batches. */
typedef struct receiver {
    tlr_cstate *store;
    uint64_t last_gen;         /* the generation of the last batch: its next base */
    uint64_t seq;
} receiver;

/* Publish a batch as main.c does, receive and resolve it, and compare the
 * result with a full snapshot.  want_base: the base the batch must say
 * (-1: the receiver's last generation). */
static void publish(watcher_cache *c, receiver *r, int64_t want_base, const char *step)
{
    watcher_batch_window w = { 1, 2 };
    watcher_snapshot *s;
    watcher_snapshot_for_batch(c, &w, ++r->seq, r->last_gen, 9, &s);
    Tailor__V1__PendingBatch *b = (Tailor__V1__PendingBatch *)wire(&watcher_snapshot_batch(s)->base);
    watcher_snapshot_free(s);
    const Tailor__V1__ClusterRef *ref = b->cluster->by_ref;
    assert_non_null(ref);
    assert_int_equal(b->cluster->n_nodes, 0);
    assert_int_equal(b->cluster->n_nodeclaims, 0);
    uint64_t base = want_base < 0 ? r->last_gen : (uint64_t)want_base;
    /* nothing changed since the last batch: "you hold this state" */
    bool want_delta = !(want_base < 0 && b->cluster->generation == r->last_gen);
    if (ref->has_delta != want_delta || (want_delta && ref->base_generation != base)) {
        printf("FAIL %s: got has_delta %d base %llu, want has_delta %d base %llu\n", step,
               ref->has_delta, (unsigned long long)ref->base_generation, want_delta,
               (unsigned long long)base);
        fail();
    }
    tlr_cstate_view *v;
    char err[256] = "";
    int rc = tlr_cstate_resolve(r->store, b->cluster, &v, err, sizeof(err));
    if (rc)
        printf("FAIL %s: resolve: %s\n", step, err);
    assert_int_equal(rc, TLR_OK);
    bool ok = matches_full(c, tlr_cstate_view_state(v), step);
    r->last_gen = b->cluster->generation;
    tlr_cstate_view_free(v);
    tailor__v1__pending_batch__free_unpacked(b, NULL);
    assert_true(ok);
}

static void test_receiver_follows_deltas(void **state)
{
    (void)state;
    watcher_cache *c = fixture();
    receiver r = { 0 };
    tlr_cstate_create(0, &r.store);
    put_claim(c, "c1", "");
    publish(c, &r, 0, "first batch: the whole state");
    add_pod(c, "b6", "n2", "Running", "db");
    publish(c, &r, -1, "a pod bound to a node");
    del(c, K(POD), "d", "b2");
    publish(c, &r, -1, "a pod deleted");
    add_pod(c, "b1", "n2", "Running", "web");
    publish(c, &r, -1, "a pod moved between nodes");
    publish(c, &r, -1, "nothing changed: the receiver holds the state");
    add_pod(c, "p9", "", "Pending", "web");
    publish(c, &r, -1, "only the pending set changed");
    add_node(c, "n3", "8");
    add_pod(c, "b7", "n3", "Running", "web");
    publish(c, &r, -1, "a node added");
    del(c, K(NODE), "", "n1");
    publish(c, &r, -1, "a node deleted");
    add_node(c, "n1", "2");
    del(c, K(NODE), "", "n3");
    add_node(c, "n3", "16");
    publish(c, &r, -1, "a node re-added; one deleted and re-added");
    put_claim(c, "c2", "");
    put_claim(c, "c1", "aws:///us-east-1a/i-1");
    publish(c, &r, -1, "claims added and modified");
    del(c, K(NODECLAIM), "", "c2");
    publish(c, &r, -1, "a claim deleted");
    uint64_t before_pdb = watcher_cache_generation(c);
    apply(c, K(PDB), TLR_KUBE_ADDED,
          "{\"metadata\":{\"name\":\"db\",\"namespace\":\"d\"},\"spec\":{\"minAvailable\":1,"
          "\"selector\":{\"matchLabels\":{\"app\":\"db\"}}}}");
    assert_false(watcher_cache_delta_computable(c, before_pdb));
    publish(c, &r, 0, "a PDB added: whole");
    add_pod(c, "b8", "n1", "Running", "db");
    publish(c, &r, -1, "after the PDB");
    /* relists: the pods' drops b4 (and re-sends the rest), the claims' c1 */
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++)
        if (k == K(POD) || k == K(NODECLAIM))
            apply(c, k, TLR_KUBE_RELIST_START, NULL);
    add_pod(c, "b1", "n2", "Running", "web");
    add_pod(c, "b6", "n2", "Running", "db");
    add_pod(c, "b7", "n3", "Running", "web");
    add_pod(c, "b8", "n1", "Running", "db");
    add_pod(c, "p1", "", "Pending", "web");
    apply(c, K(POD), TLR_KUBE_RELIST_DONE, NULL);
    apply(c, K(NODECLAIM), TLR_KUBE_RELIST_DONE, NULL);
    publish(c, &r, -1, "relists that drop a pod and a claim");
    tlr_cstate_free(r.store);
    watcher_cache_free(c);
}

typedef struct ref_batch {
    watcher_snapshot *s;
    const Tailor__V1__ClusterRef *ref;
} ref_batch;

static void batch_from(const watcher_cache *c, uint64_t base, ref_batch *rb)
{
    watcher_batch_window w = { 1, 2 };
    watcher_snapshot_for_batch(c, &w, 1, base, 9, &rb->s);
    rb->ref = watcher_snapshot_batch(rb->s)->cluster->by_ref;
    assert_non_null(rb->ref);
}

static void strs(char *const *v, size_t n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", v[i]);
}

/* A delta is as small as the change; a base the cache cannot serve gets
 * the whole state. */
static void test_delta_size_removed_and_horizon(void **state)
{
    (void)state;
    watcher_cache *c;
    watcher_cache_create(&(watcher_cache_opts){ .epoch_ms = 77, .max_tombstones = 4 }, &c);
    char name[32], got[256];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "n%02d", i);
        add_node(c, name, "4");
        snprintf(name, sizeof(name), "b%02d", i);
        char nn[32];
        snprintf(nn, sizeof(nn), "n%02d", i);
        add_pod(c, name, nn, "Running", "web");
    }
    put_claim(c, "c1", "");
    put_claim(c, "c2", "");
    uint64_t g0 = watcher_cache_generation(c);
    ref_batch rb;
    batch_from(c, 0, &rb);
    assert_int_equal(rb.ref->n_nodes, 100);
    assert_int_equal(rb.ref->n_nodeclaims, 2);
    watcher_snapshot_free(rb.s);

    add_pod(c, "x", "n42", "Running", "db");
    batch_from(c, g0, &rb);
    assert_true(rb.ref->has_delta);
    assert_int_equal(rb.ref->base_generation, g0);
    if (rb.ref->n_nodes != 1)
        printf("FAIL one pod added: got %zu nodes, want 1\n", rb.ref->n_nodes);
    assert_int_equal(rb.ref->n_nodes, 1);
    assert_string_equal(rb.ref->nodes[0]->name, "n42");
    assert_int_equal(rb.ref->nodes[0]->base.n_unknown_fields, 2);    /* b42 and x */
    assert_int_equal(rb.ref->n_nodeclaims, 0);
    assert_int_equal(rb.ref->n_removed_nodes + rb.ref->n_removed_nodeclaims, 0);
    watcher_snapshot_free(rb.s);

    /* nothing changed since the base: "you hold it" */
    uint64_t g1 = watcher_cache_generation(c);
    batch_from(c, g1, &rb);
    assert_false(rb.ref->has_delta);
    assert_int_equal(rb.ref->n_nodes, 0);
    watcher_snapshot_free(rb.s);

    /* removed names: only those not held now, once each */
    del(c, K(NODE), "", "n07");
    del(c, K(NODE), "", "n08");
    add_node(c, "n08", "4");           /* back: changed, not removed */
    del(c, K(NODECLAIM), "", "c2");
    batch_from(c, g1, &rb);
    strs(rb.ref->removed_nodes, rb.ref->n_removed_nodes, got, sizeof(got));
    assert_string_equal(got, "n07");
    strs(rb.ref->removed_nodeclaims, rb.ref->n_removed_nodeclaims, got, sizeof(got));
    assert_string_equal(got, "c2");
    assert_int_equal(rb.ref->n_nodes, 1);
    assert_string_equal(rb.ref->nodes[0]->name, "n08");
    watcher_snapshot_free(rb.s);

    /* two more removals: four tombstones kept, the first is gone; g1 is
     * behind the horizon, a later base is not */
    del(c, K(NODE), "", "n09");
    uint64_t g2 = watcher_cache_generation(c);
    del(c, K(NODE), "", "n10");
    batch_from(c, g1, &rb);
    assert_true(rb.ref->has_delta);
    assert_int_equal(rb.ref->base_generation, 0);
    assert_int_equal(rb.ref->n_nodes, 97);
    assert_int_equal(rb.ref->n_removed_nodes, 0);
    watcher_snapshot_free(rb.s);
    batch_from(c, g2, &rb);
    assert_int_equal(rb.ref->base_generation, g2);
    strs(rb.ref->removed_nodes, rb.ref->n_removed_nodes, got, sizeof(got));
    assert_string_equal(got, "n10");
    watcher_snapshot_free(rb.s);
    /* a base from the future is not one */
    batch_from(c, watcher_cache_generation(c) + 5, &rb);
    assert_int_equal(rb.ref->base_generation, 0);
    watcher_snapshot_free(rb.s);
    watcher_cache_free(c);
}

/* Snapshot by reference: a delta from a base the requester holds, of this
 * epoch; without by_reference, inline as always. */
static void test_request_by_reference(void **state)
{
    (void)state;
    watcher_cache *c = fixture();
    put_claim(c, "c1", "");
    uint64_t g0 = watcher_cache_generation(c);
    add_pod(c, "b9", "n2", "Running", "db");
    Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
    req.by_reference = true;
    req.delta_base_generation = g0;
    req.watcher_epoch_unix_ms = 1234;
    req.include_pending_pods = true;
    watcher_snapshot *s;
    watcher_snapshot_for_request(c, &req, 5, &s);
    Tailor__V1__ClusterState *cs = watcher_snapshot_response(s)->cluster;
    assert_int_equal(cs->n_nodes, 0);
    assert_int_equal(cs->n_nodeclaims, 0);
    assert_non_null(cs->by_ref);
    assert_true(cs->by_ref->has_delta);
    assert_int_equal(cs->by_ref->base_generation, g0);
    assert_int_equal(cs->by_ref->n_nodes, 1);
    assert_string_equal(cs->by_ref->nodes[0]->name, "n2");
    assert_int_equal(cs->by_ref->n_nodeclaims, 0);
    assert_int_equal(cs->n_pdbs, 1);                           /* small kinds inline */
    assert_int_equal(cs->n_nodepools, 1);
    assert_int_equal(watcher_snapshot_response(s)->n_pending_pods, 2);
    watcher_snapshot_free(s);

    req.watcher_epoch_unix_ms = 1;      /* another watcher process's generation */
    watcher_snapshot_for_request(c, &req, 5, &s);
    cs = watcher_snapshot_response(s)->cluster;
    assert_int_equal(cs->by_ref->base_generation, 0);
    assert_int_equal(cs->by_ref->n_nodes, 2);
    assert_int_equal(cs->by_ref->n_nodeclaims, 1);
    watcher_snapshot_free(s);

    req.watcher_epoch_unix_ms = 1234;
    req.delta_base_generation = 0;      /* holds nothing */
    watcher_snapshot_for_request(c, &req, 5, &s);
    cs = watcher_snapshot_response(s)->cluster;
    assert_true(cs->by_ref->has_delta);
    assert_int_equal(cs->by_ref->base_generation, 0);
    assert_int_equal(cs->by_ref->n_nodes, 2);
    watcher_snapshot_free(s);

    req.by_reference = false;           /* the disruptor, tailorctl */
    watcher_snapshot_for_request(c, &req, 5, &s);
    cs = watcher_snapshot_response(s)->cluster;
    assert_null(cs->by_ref);
    assert_int_equal(cs->n_nodes, 2);
    assert_int_equal(cs->n_nodeclaims, 1);
    watcher_snapshot_free(s);
    watcher_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_carries_the_whole_state),
        cmocka_unit_test(test_request_kinds_and_unchanged),
        cmocka_unit_test(test_receiver_follows_deltas),
        cmocka_unit_test(test_delta_size_removed_and_horizon),
        cmocka_unit_test(test_request_by_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
