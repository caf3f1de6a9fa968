/* cstate_test.c - cluster states by reference (tlr_cstate.h): a receiver
 * that follows a sender's deltas ends with the sender's state, node for
 * node; what it does not hold it says so; nonsense is refused; a view
 * survives eviction of its state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_cstate.h"
#include "tlr_err.h"

#define EPOCH 1700000000000LL

/* A node named name with cpu allocatable and one bound pod (uid pod). */
static Tailor__V1__Node *mk_node(const char *name, int64_t cpu, const char *pod)
{
    Tailor__V1__Node *n = calloc(1, sizeof(*n));
    tailor__v1__node__init(n);
    n->name = strdup(name);
    n->allocatable = calloc(1, sizeof(*n->allocatable));
    tailor__v1__resource_list__init(n->allocatable);
    n->allocatable->cpu_millis = cpu;
    if (pod) {
        n->pods = calloc(1, sizeof(*n->pods));
        n->pods[0] = calloc(1, sizeof(*n->pods[0]));
        tailor__v1__pod__init(n->pods[0]);
        n->pods[0]->uid = strdup(pod);
        n->pods[0]->node_name = strdup(name);
        n->n_pods = 1;
    }
    return n;
}

static Tailor__V1__NodeClaim *mk_claim(const char *name, const char *nodepool)
{
    Tailor__V1__NodeClaim *c = calloc(1, sizeof(*c));
    tailor__v1__node_claim__init(c);
    c->name = strdup(name);
    c->nodepool = strdup(nodepool);
    return c;
}

/* What a receiver gets off the wire: cs packed and unpacked (so every
 * part is malloc'd, as tailor's decoders make it). */
static Tailor__V1__ClusterState *wire(const Tailor__V1__ClusterState *cs)
{
    size_t n = tailor__v1__cluster_state__get_packed_size(cs);
    uint8_t *buf = malloc(n + 1);
    tailor__v1__cluster_state__pack(cs, buf);
    Tailor__V1__ClusterState *out = tailor__v1__cluster_state__unpack(NULL, n, buf);
    free(buf);
    assert_non_null(out);
    return out;
}

/* A by_ref ClusterState of generation gen: a delta from base with nodes
 * (owned by the caller's arrays; freed here after packing) and removed. */
static Tailor__V1__ClusterState *delta_msg(uint64_t gen, uint64_t base, Tailor__V1__Node **nodes,
                                           size_t nn, char **removed, size_t nr,
                                           Tailor__V1__NodeClaim **claims, size_t nc)
{
    Tailor__V1__ClusterRef ref = TAILOR__V1__CLUSTER_REF__INIT;
    ref.has_delta = true;
    ref.base_generation = base;
    ref.nodes = nodes;
    ref.n_nodes = nn;
    ref.removed_nodes = removed;
    ref.n_removed_nodes = nr;
    ref.nodeclaims = claims;
    ref.n_nodeclaims = nc;
    Tailor__V1__ClusterState cs = TAILOR__V1__CLUSTER_STATE__INIT;
    cs.generation = gen;
    cs.watcher_epoch_unix_ms = EPOCH;
    cs.synced = true;
    cs.by_ref = &ref;
    Tailor__V1__ClusterState *w = wire(&cs);
    for (size_t i = 0; i < nn; i++)
        tailor__v1__node__free_unpacked(nodes[i], NULL);
    for (size_t i = 0; i < nc; i++)
        tailor__v1__node_claim__free_unpacked(claims[i], NULL);
    return w;
}

static Tailor__V1__ClusterState *ref_only(uint64_t gen)
{
    Tailor__V1__ClusterRef ref = TAILOR__V1__CLUSTER_REF__INIT;
    Tailor__V1__ClusterState cs = TAILOR__V1__CLUSTER_STATE__INIT;
    cs.generation = gen;
    cs.watcher_epoch_unix_ms = EPOCH;
    cs.by_ref = &ref;
    return wire(&cs);
}

static const char *names(const Tailor__V1__ClusterState *cs, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < cs->n_nodes && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s:%lld", i ? "," : "", cs->nodes[i]->name,
                                (long long)cs->nodes[i]->allocatable->cpu_millis);
    return buf;
}

/* A full state, then a delta that changes one node, removes one, adds one:
 * the view is the new state, sorted; the unchanged node is the very same
 * message (shared, not copied). */
static void test_full_then_delta(void **state)
{
    (void)state;
    tlr_cstate *c;
    tlr_cstate_create(0, &c);
    char err[256], buf[256];
    Tailor__V1__Node *n1[] = { mk_node("n-b", 2000, "p1"), mk_node("n-a", 1000, NULL),
                               mk_node("n-c", 4000, "p2") };
    Tailor__V1__NodeClaim *c1[] = { mk_claim("claim-a", "default") };
    Tailor__V1__ClusterState *m1 = delta_msg(10, 0, n1, 3, NULL, 0, c1, 1);
    tlr_cstate_view *v1 = NULL;
    assert_int_equal(tlr_cstate_resolve(c, m1, &v1, err, sizeof(err)), TLR_OK);
    const Tailor__V1__ClusterState *s1 = tlr_cstate_view_state(v1);
    assert_string_equal(names(s1, buf, sizeof(buf)), "n-a:1000,n-b:2000,n-c:4000");
    assert_int_equal(s1->n_nodeclaims, 1);
    assert_null(s1->by_ref);
    assert_int_equal(s1->nodes[1]->n_pods, 1);
    assert_string_equal(s1->nodes[1]->pods[0]->uid, "p1");
    const Tailor__V1__Node *a_before = s1->nodes[0];

    Tailor__V1__Node *n2[] = { mk_node("n-c", 8000, "p2"), mk_node("n-d", 500, NULL) };
    char *gone[] = { "n-b" };
    Tailor__V1__ClusterState *m2 = delta_msg(14, 10, n2, 2, gone, 1, NULL, 0);
    tlr_cstate_view *v2 = NULL;
    assert_int_equal(tlr_cstate_resolve(c, m2, &v2, err, sizeof(err)), TLR_OK);
    const Tailor__V1__ClusterState *s2 = tlr_cstate_view_state(v2);
    assert_string_equal(names(s2, buf, sizeof(buf)), "n-a:1000,n-c:8000,n-d:500");
    assert_ptr_equal(s2->nodes[0], a_before);
    assert_int_equal(s2->n_nodeclaims, 1);   /* claims unchanged: carried over */
    assert_string_equal(s2->nodeclaims[0]->name, "claim-a");
    /* the old view still reads the old state */
    assert_string_equal(names(s1, buf, sizeof(buf)), "n-a:1000,n-b:2000,n-c:4000");

    uint64_t held[4];
    assert_int_equal(tlr_cstate_held(c, EPOCH, held, 4), 2);
    assert_int_equal(held[0], 14);
    assert_int_equal(held[1], 10);
    assert_int_equal(tlr_cstate_held(c, EPOCH + 1, held, 4), 0);

    /* naming a held state without a delta is enough */
    Tailor__V1__ClusterState *m3 = ref_only(10);
    tlr_cstate_view *v3 = NULL;
    assert_int_equal(tlr_cstate_resolve(c, m3, &v3, err, sizeof(err)), TLR_OK);
    assert_string_equal(names(tlr_cstate_view_state(v3), buf, sizeof(buf)),
                        "n-a:1000,n-b:2000,n-c:4000");

    tlr_cstate_view_free(v1);
    tlr_cstate_view_free(v2);
    tlr_cstate_view_free(v3);
    tailor__v1__cluster_state__free_unpacked(m1, NULL);
    tailor__v1__cluster_state__free_unpacked(m2, NULL);
    tailor__v1__cluster_state__free_unpacked(m3, NULL);
    tlr_cstate_free(c);
}

/* What the receiver does not hold, it says: a bare reference or a delta
 * whose base is gone is NOTFOUND, and err names the generation. */
static void test_miss(void **state)
{
    (void)state;
    tlr_cstate *c;
    tlr_cstate_create(0, &c);
    char err[256];
    tlr_cstate_view *v = NULL;
    Tailor__V1__ClusterState *m = ref_only(7);
    assert_int_equal(tlr_cstate_resolve(c, m, &v, err, sizeof(err)), TLR_E_NOTFOUND);
    assert_non_null(strstr(err, "/7 is not held"));
    tailor__v1__cluster_state__free_unpacked(m, NULL);

    Tailor__V1__Node *n[] = { mk_node("n-a", 1000, NULL) };
    m = delta_msg(9, 8, n, 1, NULL, 0, NULL, 0);
    assert_int_equal(tlr_cstate_resolve(c, m, &v, err, sizeof(err)), TLR_E_NOTFOUND);
    assert_non_null(strstr(err, "base"));
    assert_null(v);
    tailor__v1__cluster_state__free_unpacked(m, NULL);
    tlr_cstate_free(c);
}

/* Nonsense is refused, naming what is wrong, and nothing is stored. */
static void test_refused(void **state)
{
    (void)state;
    tlr_cstate *c;
    tlr_cstate_create(0, &c);
    char err[256];
    tlr_cstate_view *v = NULL;

    Tailor__V1__Node *dup[] = { mk_node("n-a", 1000, NULL), mk_node("n-a", 2000, NULL) };
    Tailor__V1__ClusterState *m = delta_msg(3, 0, dup, 2, NULL, 0, NULL, 0);
    assert_int_equal(tlr_cstate_resolve(c, m, &v, err, sizeof(err)), TLR_E_INVAL);
    assert_non_null(strstr(err, "n-a is in the delta twice"));
    tailor__v1__cluster_state__free_unpacked(m, NULL);

    Tailor__V1__Node *both[] = { mk_node("n-b", 1000, NULL) };
    char *gone[] = { "n-b" };
    m = delta_msg(4, 0, both, 1, gone, 1, NULL, 0);
    assert_int_equal(tlr_cstate_resolve(c, m, &v, err, sizeof(err)), TLR_E_INVAL);
    assert_non_null(strstr(err, "both changed and removed"));
    tailor__v1__cluster_state__free_unpacked(m, NULL);

    Tailor__V1__Node *late[] = { mk_node("n-c", 1000, NULL) };
    m = delta_msg(5, 5, late, 1, NULL, 0, NULL, 0);
    assert_int_equal(tlr_cstate_resolve(c, m, &v, err, sizeof(err)), TLR_E_INVAL);
    assert_non_null(strstr(err, "not older"));
    tailor__v1__cluster_state__free_unpacked(m, NULL);

    Tailor__V1__ClusterState inline_cs = TAILOR__V1__CLUSTER_STATE__INIT;
    assert_int_equal(tlr_cstate_resolve(c, &inline_cs, &v, err, sizeof(err)), TLR_E_INVAL);

    uint64_t held[2];
    assert_int_equal(tlr_cstate_held(c, EPOCH, held, 2), 0);
    tlr_cstate_free(c);
}

/* The sender's side: a delta between two of its states carries only what
 * changed, and a receiver that holds the base and applies it ends with the
 * sender's state, byte for byte. */
static void test_sender_delta_round_trip(void **state)
{
    (void)state;
    tlr_cstate *snd, *rcv;
    tlr_cstate_create(0, &snd);
    tlr_cstate_create(0, &rcv);
    char err[256];
    enum { N = 200 };
    Tailor__V1__Node *n1[N];
    for (int i = 0; i < N; i++) {
        char name[32], pod[32];
        snprintf(name, sizeof(name), "node-%03d", i);
        snprintf(pod, sizeof(pod), "pod-%03d", i);
        n1[i] = mk_node(name, 1000 + i, pod);
    }
    Tailor__V1__NodeClaim *c1[] = { mk_claim("c-1", "a"), mk_claim("c-2", "a") };
    Tailor__V1__ClusterState *m1 = delta_msg(100, 0, n1, N, NULL, 0, c1, 2);
    tlr_cstate_view *s1 = NULL, *r1 = NULL;
    assert_int_equal(tlr_cstate_resolve(snd, m1, &s1, err, sizeof(err)), TLR_OK);

    /* the sender sends its first state whole; the receiver builds it */
    Tailor__V1__ClusterRef ref = TAILOR__V1__CLUSTER_REF__INIT;
    tlr_cstate_delta(snd, s1, NULL, 0, &ref);
    assert_int_equal(ref.base_generation, 0);
    assert_int_equal(ref.n_nodes, N);
    assert_int_equal(ref.n_nodeclaims, 2);
    Tailor__V1__ClusterState out = TAILOR__V1__CLUSTER_STATE__INIT;
    tlr_cstate_by_ref(s1, NULL, 0, &ref, &out);
    Tailor__V1__ClusterState *w1 = wire(&out);
    tlr_cstate_ref_clear(&ref);
    assert_int_equal(tlr_cstate_resolve(rcv, w1, &r1, err, sizeof(err)), TLR_OK);

    /* two nodes change, one goes, a claim goes */
    Tailor__V1__Node *n2[] = { mk_node("node-005", 9999, "pod-x"), mk_node("node-150", 1, NULL) };
    char *gone[] = { "node-077" };
    Tailor__V1__ClusterRef r2 = TAILOR__V1__CLUSTER_REF__INIT;
    r2.has_delta = true;
    r2.base_generation = 100;
    r2.nodes = n2;
    r2.n_nodes = 2;
    r2.removed_nodes = gone;
    r2.n_removed_nodes = 1;
    char *cgone[] = { "c-2" };
    r2.removed_nodeclaims = cgone;
    r2.n_removed_nodeclaims = 1;
    Tailor__V1__ClusterState cs2 = TAILOR__V1__CLUSTER_STATE__INIT;
    cs2.generation = 130;
    cs2.watcher_epoch_unix_ms = EPOCH;
    cs2.by_ref = &r2;
    Tailor__V1__ClusterState *m2 = wire(&cs2);
    tailor__v1__node__free_unpacked(n2[0], NULL);
    tailor__v1__node__free_unpacked(n2[1], NULL);
    tlr_cstate_view *s2 = NULL, *r2v = NULL;
    assert_int_equal(tlr_cstate_resolve(snd, m2, &s2, err, sizeof(err)), TLR_OK);

    /* the launcher's own claim rides along as an override */
    Tailor__V1__NodeClaim *own = mk_claim("c-9", "b");
    tlr_cstate_delta(snd, s2, (const uint64_t[]){ 100 }, 1, &ref);
    assert_int_equal(ref.base_generation, 100);
    assert_int_equal(ref.n_nodes, 2);
    assert_int_equal(ref.n_removed_nodes, 1);
    assert_string_equal(ref.removed_nodes[0], "node-077");
    assert_int_equal(ref.n_nodeclaims, 0);
    assert_int_equal(ref.n_removed_nodeclaims, 1);
    tlr_cstate_by_ref(s2, &own, 1, &ref, &out);
    Tailor__V1__ClusterState *w2 = wire(&out);
    size_t delta_bytes = tailor__v1__cluster_state__get_packed_size(w2);
    tlr_cstate_ref_clear(&ref);
    assert_int_equal(tlr_cstate_resolve(rcv, w2, &r2v, err, sizeof(err)), TLR_OK);

    const Tailor__V1__ClusterState *a = tlr_cstate_view_state(s2), *b = tlr_cstate_view_state(r2v);
    assert_int_equal(a->n_nodes, N - 1);
    assert_int_equal(b->n_nodes, N - 1);
    size_t full_bytes = 0;
    for (size_t i = 0; i < a->n_nodes; i++) {
        size_t la = tailor__v1__node__get_packed_size(a->nodes[i]);
        size_t lb = tailor__v1__node__get_packed_size(b->nodes[i]);
        full_bytes += la;
        assert_int_equal(la, lb);
        uint8_t *pa = malloc(la + 1), *pb = malloc(lb + 1);
        tailor__v1__node__pack(a->nodes[i], pa);
        tailor__v1__node__pack(b->nodes[i], pb);
        assert_memory_equal(pa, pb, la);
        free(pa);
        free(pb);
    }
    /* the receiver sees c-1 from the state plus the sender's own c-9 */
    assert_int_equal(b->n_nodeclaims, 2);
    assert_string_equal(b->nodeclaims[0]->name, "c-1");
    assert_string_equal(b->nodeclaims[1]->name, "c-9");
    assert_true(delta_bytes * 10 < full_bytes);

    tlr_cstate_view_free(s1);
    tlr_cstate_view_free(s2);
    tlr_cstate_view_free(r1);
    tlr_cstate_view_free(r2v);
    tailor__v1__node_claim__free_unpacked(own, NULL);
    tailor__v1__cluster_state__free_unpacked(m1, NULL);
    tailor__v1__cluster_state__free_unpacked(m2, NULL);
    tailor__v1__cluster_state__free_unpacked(w1, NULL);
    tailor__v1__cluster_state__free_unpacked(w2, NULL);
    tlr_cstate_free(snd);
    tlr_cstate_free(rcv);
}

/* A store keeps at most its bound of states; the least recently used goes
 * first, but a view still reading it keeps it alive (ASan would see a use
 * after free otherwise). */
static void test_eviction_keeps_viewed_state(void **state)
{
    (void)state;
    tlr_cstate *c;
    tlr_cstate_create(2, &c);
    char err[256], buf[64];
    Tailor__V1__Node *n[] = { mk_node("n-1", 1, NULL) };
    Tailor__V1__ClusterState *m1 = delta_msg(1, 0, n, 1, NULL, 0, NULL, 0);
    tlr_cstate_view *v1 = NULL;
    assert_int_equal(tlr_cstate_resolve(c, m1, &v1, err, sizeof(err)), TLR_OK);
    Tailor__V1__ClusterState *m[3];
    for (int g = 2; g <= 4; g++) {
        Tailor__V1__Node *x[] = { mk_node("n-1", g, NULL) };
        m[g - 2] = delta_msg((uint64_t)g, (uint64_t)g - 1, x, 1, NULL, 0, NULL, 0);
        tlr_cstate_view *v = NULL;
        assert_int_equal(tlr_cstate_resolve(c, m[g - 2], &v, err, sizeof(err)), TLR_OK);
        tlr_cstate_view_free(v);
    }
    uint64_t held[4];
    assert_int_equal(tlr_cstate_held(c, EPOCH, held, 4), 2);
    assert_int_equal(held[0], 4);
    assert_int_equal(held[1], 3);
    assert_string_equal(names(tlr_cstate_view_state(v1), buf, sizeof(buf)), "n-1:1");
    tlr_cstate_view_free(v1);
    tailor__v1__cluster_state__free_unpacked(m1, NULL);
    for (int i = 0; i < 3; i++)
        tailor__v1__cluster_state__free_unpacked(m[i], NULL);
    tlr_cstate_free(c);
}

/* Receivers that hold different earlier states (solver replicas each
 * answering some of a launcher's requests) all follow one delta naming
 * every base: even an object added and removed again between the bases,
 * or changed since only one of them, ends right. */
static void test_one_delta_for_several_bases(void **state)
{
    (void)state;
    tlr_cstate *snd, *r1, *r2;
    tlr_cstate_create(0, &snd);
    tlr_cstate_create(0, &r1);
    tlr_cstate_create(0, &r2);
    char err[256], buf[256];
    tlr_cstate_view *s1, *s2, *s3, *v1, *v2, *w1, *w2;
    Tailor__V1__Node *n1[] = { mk_node("a", 1, NULL), mk_node("b", 1, NULL), mk_node("c", 1, NULL) };
    Tailor__V1__ClusterState *m1 = delta_msg(10, 0, n1, 3, NULL, 0, NULL, 0);
    assert_int_equal(tlr_cstate_resolve(snd, m1, &s1, err, sizeof(err)), TLR_OK);
    Tailor__V1__Node *n2[] = { mk_node("b", 2, NULL), mk_node("d", 1, NULL) };
    char *g2[] = { "c" };
    Tailor__V1__ClusterState *m2 = delta_msg(20, 10, n2, 2, g2, 1, NULL, 0);
    assert_int_equal(tlr_cstate_resolve(snd, m2, &s2, err, sizeof(err)), TLR_OK);
    Tailor__V1__Node *n3[] = { mk_node("e", 1, NULL) };
    char *g3[] = { "d" };
    Tailor__V1__ClusterState *m3 = delta_msg(30, 20, n3, 1, g3, 1, NULL, 0);
    assert_int_equal(tlr_cstate_resolve(snd, m3, &s3, err, sizeof(err)), TLR_OK);

    /* r1 holds 10, r2 holds 20: each from the sender's deltas */
    Tailor__V1__ClusterRef ref = TAILOR__V1__CLUSTER_REF__INIT;
    Tailor__V1__ClusterState out;
    tlr_cstate_delta(snd, s1, NULL, 0, &ref);
    tlr_cstate_by_ref(s1, NULL, 0, &ref, &out);
    Tailor__V1__ClusterState *w = wire(&out);
    tlr_cstate_ref_clear(&ref);
    assert_int_equal(tlr_cstate_resolve(r1, w, &v1, err, sizeof(err)), TLR_OK);
    tailor__v1__cluster_state__free_unpacked(w, NULL);
    tlr_cstate_delta(snd, s2, NULL, 0, &ref);
    tlr_cstate_by_ref(s2, NULL, 0, &ref, &out);
    w = wire(&out);
    tlr_cstate_ref_clear(&ref);
    assert_int_equal(tlr_cstate_resolve(r2, w, &v2, err, sizeof(err)), TLR_OK);
    tailor__v1__cluster_state__free_unpacked(w, NULL);

    /* one delta to 30 from 20 or 10 (and a base never held: left out) */
    tlr_cstate_delta(snd, s3, (const uint64_t[]){ 20, 10, 15 }, 3, &ref);
    assert_int_equal(ref.base_generation, 20);
    assert_int_equal(ref.n_also_applies_to, 1);
    assert_int_equal(ref.also_applies_to[0], 10);
    assert_int_equal(ref.n_nodes, 2);           /* b (changed since 10), e */
    assert_int_equal(ref.n_removed_nodes, 2);   /* c (since 10), d (since 20) */
    tlr_cstate_by_ref(s3, NULL, 0, &ref, &out);
    Tailor__V1__ClusterState *wa = wire(&out), *wb = wire(&out);
    tlr_cstate_ref_clear(&ref);
    assert_int_equal(tlr_cstate_resolve(r1, wa, &w1, err, sizeof(err)), TLR_OK);
    assert_int_equal(tlr_cstate_resolve(r2, wb, &w2, err, sizeof(err)), TLR_OK);
    assert_string_equal(names(tlr_cstate_view_state(w1), buf, sizeof(buf)), "a:1,b:2,e:1");
    assert_string_equal(names(tlr_cstate_view_state(w2), buf, sizeof(buf)), "a:1,b:2,e:1");

    tlr_cstate_view *views[] = { s1, s2, s3, v1, v2, w1, w2 };
    for (size_t i = 0; i < 7; i++)
        tlr_cstate_view_free(views[i]);
    Tailor__V1__ClusterState *msgs[] = { m1, m2, m3, wa, wb };
    for (size_t i = 0; i < 5; i++)
        tailor__v1__cluster_state__free_unpacked(msgs[i], NULL);
    tlr_cstate_free(snd);
    tlr_cstate_free(r1);
    tlr_cstate_free(r2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_then_delta),
        cmocka_unit_test(test_miss),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_sender_delta_round_trip),
        cmocka_unit_test(test_eviction_keeps_viewed_state),
        cmocka_unit_test(test_one_delta_for_several_bases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
