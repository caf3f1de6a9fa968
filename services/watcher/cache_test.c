/* cache_test.c - the compact cache: add, update, delete and relist, as a
 * script of informer events with what the cache must hold after each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache.h"
#include "tlr_err.h"
#include "tlr_log.h"

#define POD_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD
#define NODE_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE
#define CT(x) TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_##x

/* A pod in namespace d; node "" = unbound; unsched: marked Unschedulable. */
static json_object *pod(const char *name, const char *node, bool unsched, const char *cpu)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"d\",\"uid\":\"uid-%s\",\"resourceVersion\":\"7\","
             "\"labels\":{\"app\":\"web\"}},\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":"
             "\"%s\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"%s\",\"reason\":\"%s\"}]}}",
             name, name, node, cpu, node[0] ? "Running" : "Pending", unsched ? "False" : "True",
             unsched ? "Unschedulable" : "");
    json_object *o = json_tokener_parse(buf);
    assert_non_null(o);
    return o;
}

enum { END = 0 };

typedef struct step {
    int kind;
    tlr_kube_event_type type;
    const char *name;       /* pod name, NULL for RELIST_* */
    const char *node;       /* "" = unbound */
    bool unsched;
    const char *cpu;
    int want_rc;
    Tailor__V1__ChangeType want_change;
    size_t want_count, want_pending;
    bool want_became;
    const char *want_has;       /* key that must be held afterwards */
    const char *want_gone;      /* key that must not be */
} step;

typedef struct scenario {
    const char *name;
    step s[12];
} scenario;

static const scenario scenarios[] = {
    { "add pending, bind, delete",
      { { POD_K, TLR_KUBE_ADDED, "a", "", true, "1", TLR_OK, CT(ADDED), 1, 1, true, "d/a", NULL },
        { POD_K, TLR_KUBE_MODIFIED, "a", "", true, "1", TLR_OK, CT(MODIFIED), 1, 1, false, "d/a", NULL },
        { POD_K, TLR_KUBE_MODIFIED, "a", "n1", false, "1", TLR_OK, CT(MODIFIED), 1, 0, false, "d/a", NULL },
        { POD_K, TLR_KUBE_DELETED, "a", "n1", false, "1", TLR_OK, CT(DELETED), 0, 0, false, NULL, "d/a" },
        { POD_K, TLR_KUBE_DELETED, "a", "n1", false, "1", TLR_OK, CT(UNSPECIFIED), 0, 0, false, NULL, "d/a" },
        { END } } },
    { "a pod not yet tried by the scheduler is cached but not pending",
      { { POD_K, TLR_KUBE_ADDED, "b", "", false, "1", TLR_OK, CT(ADDED), 1, 0, false, "d/b", NULL },
        { POD_K, TLR_KUBE_MODIFIED, "b", "", true, "1", TLR_OK, CT(MODIFIED), 1, 1, true, "d/b", NULL },
        { POD_K, TLR_KUBE_DELETED, "b", "", true, "1", TLR_OK, CT(DELETED), 0, 0, false, NULL, "d/b" },
        { END } } },
    { "a relist drops objects that vanished and keeps the rest",
      { { POD_K, TLR_KUBE_ADDED, "a", "n1", false, "1", TLR_OK, CT(ADDED), 1, 0, false, "d/a", NULL },
        { POD_K, TLR_KUBE_ADDED, "b", "", true, "1", TLR_OK, CT(ADDED), 2, 1, true, "d/b", NULL },
        { POD_K, TLR_KUBE_ADDED, "c", "n1", false, "1", TLR_OK, CT(ADDED), 3, 1, false, "d/c", NULL },
        { POD_K, TLR_KUBE_RELIST_START, NULL, NULL, 0, NULL, TLR_OK, CT(UNSPECIFIED), 3, 1, false, NULL, NULL },
        { POD_K, TLR_KUBE_ADDED, "a", "n1", false, "1", TLR_OK, CT(MODIFIED), 3, 1, false, "d/a", NULL },
        { POD_K, TLR_KUBE_ADDED, "c", "n2", false, "1", TLR_OK, CT(MODIFIED), 3, 1, false, "d/c", NULL },
        { POD_K, TLR_KUBE_RELIST_DONE, NULL, NULL, 0, NULL, TLR_OK, CT(RESYNCED), 2, 0, false, "d/c", "d/b" },
        { END } } },
    { "an object that does not convert is refused; the previous version stays",
      { { POD_K, TLR_KUBE_ADDED, "a", "", true, "1", TLR_OK, CT(ADDED), 1, 1, true, "d/a", NULL },
        { POD_K, TLR_KUBE_MODIFIED, "a", "", true, "-1", TLR_E_PARSE, CT(UNSPECIFIED), 1, 1, false, "d/a", NULL },
        { POD_K, TLR_KUBE_ADDED, "z", "", true, "lots", TLR_E_PARSE, CT(UNSPECIFIED), 1, 1, false, NULL, "d/z" },
        { END } } },
};

static void test_scenarios(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        watcher_cache *c;
        watcher_cache_create(&(watcher_cache_opts){ .epoch_ms = 5 }, &c);
        uint64_t gen = 0;
        for (size_t k = 0; scenarios[i].s[k].kind != END; k++) {
            const step *st = &scenarios[i].s[k];
            json_object *o = st->name ? pod(st->name, st->node, st->unsched, st->cpu) : NULL;
            Tailor__V1__ClusterChange chg;
            bool became = false;
            int rc = watcher_cache_apply(c, st->kind, st->type, o, &chg, &became);
            size_t n = watcher_cache_count(c, st->kind), np = watcher_cache_pending(c);
            uint64_t g = watcher_cache_generation(c);
            bool bad = rc != st->want_rc || chg.type != st->want_change || n != st->want_count ||
                       np != st->want_pending || became != st->want_became ||
                       (st->want_has && !watcher_cache_has(c, st->kind, st->want_has)) ||
                       (st->want_gone && watcher_cache_has(c, st->kind, st->want_gone)) ||
                       (chg.type != CT(UNSPECIFIED)) != (g == gen + 1) ||
                       (st->name && chg.type != CT(UNSPECIFIED) && strcmp(chg.name, st->name));
            if (bad) {
                printf("FAIL %s, step %zu: got rc %d change %d count %zu pending %zu became %d gen +%llu;"
                       " want rc %d change %d count %zu pending %zu became %d (has %s, gone %s)\n",
                       scenarios[i].name, k, rc, chg.type, n, np, became, (unsigned long long)(g - gen),
                       st->want_rc, st->want_change, st->want_count, st->want_pending, st->want_became,
                       st->want_has ? st->want_has : "-", st->want_gone ? st->want_gone : "-");
                failed++;
            }
            gen = g;
            json_object_put(o);
        }
        watcher_cache_free(c);
    }
    assert_int_equal(failed, 0);
}

/* Bound pods are held packed (compact), unbound ones whole. */
static void count_forms(void *arg, const watcher_cache_item *it)
{
    size_t *n = arg;
    n[it->packed != NULL]++;
}

static void test_forms_and_sync(void **state)
{
    (void)state;
    watcher_cache *c;
    watcher_cache_create(NULL, &c);
    Tailor__V1__ClusterChange chg;
    bool became;
    char missing[256];
    assert_false(watcher_cache_all_synced(c, missing, sizeof(missing)));
    assert_string_equal(missing, "pods, nodes, nodeclaims, nodepools, ec2nodeclasses, "
                                 "poddisruptionbudgets, daemonsets");
    const char *names[] = { "a", "b", "c" };
    const char *nodes[] = { "n1", "", "n2" };
    for (int i = 0; i < 3; i++) {
        json_object *o = pod(names[i], nodes[i], nodes[i][0] == '\0', "500m");
        assert_int_equal(watcher_cache_apply(c, POD_K, TLR_KUBE_ADDED, o, &chg, &became), TLR_OK);
        json_object_put(o);
    }
    size_t forms[2] = { 0, 0 };
    watcher_cache_visit(c, POD_K, count_forms, forms);
    if (forms[0] != 1 || forms[1] != 2)
        printf("FAIL forms: got %zu whole, %zu packed; want 1, 2\n", forms[0], forms[1]);
    assert_int_equal(forms[0], 1);
    assert_int_equal(forms[1], 2);
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++) {
        if (k == NODE_K)
            continue;
        watcher_cache_apply(c, k, TLR_KUBE_RELIST_START, NULL, &chg, &became);
        watcher_cache_apply(c, k, TLR_KUBE_RELIST_DONE, NULL, &chg, &became);
    }
    assert_false(watcher_cache_all_synced(c, missing, sizeof(missing)));
    assert_string_equal(missing, "nodes");
    /* the pod relist above saw nothing: every pod is gone */
    assert_int_equal(watcher_cache_count(c, POD_K), 0);
    assert_int_equal(watcher_cache_pending(c), 0);
    watcher_cache_apply(c, NODE_K, TLR_KUBE_RELIST_START, NULL, &chg, &became);
    watcher_cache_apply(c, NODE_K, TLR_KUBE_RELIST_DONE, NULL, &chg, &became);
    assert_true(watcher_cache_all_synced(c, missing, sizeof(missing)));
    assert_string_equal(missing, "");
    watcher_cache_free(c);
}

/* Many pods: the table grows and every one is still found. */
static void test_growth(void **state)
{
    (void)state;
    watcher_cache *c;
    watcher_cache_create(NULL, &c);
    Tailor__V1__ClusterChange chg;
    bool became;
    char name[32], key[40];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        json_object *o = pod(name, "n1", false, "100m");
        watcher_cache_apply(c, POD_K, TLR_KUBE_ADDED, o, &chg, &became);
        json_object_put(o);
    }
    assert_int_equal(watcher_cache_count(c, POD_K), 2000);
    int missing = 0;
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof(key), "d/p%d", i);
        missing += !watcher_cache_has(c, POD_K, key);
    }
    assert_int_equal(missing, 0);
    watcher_cache_free(c);
}

/* A notice says whether the object is being deleted (the disruptor starts
 * a termination on it without a LIST). */
static void test_change_says_deleting(void **state)
{
    (void)state;
    watcher_cache *c;
    watcher_cache_create(NULL, &c);
    Tailor__V1__ClusterChange chg;
    bool became;
    json_object *o = json_tokener_parse(
        "{\"metadata\":{\"name\":\"n1\",\"uid\":\"u1\",\"resourceVersion\":\"3\","
        "\"finalizers\":[\"karpenter.sh/termination\"]},\"status\":{\"allocatable\":{\"cpu\":\"2\","
        "\"memory\":\"4Gi\",\"pods\":\"110\"}}}");
    assert_non_null(o);
    assert_int_equal(watcher_cache_apply(c, NODE_K, TLR_KUBE_ADDED, o, &chg, &became), TLR_OK);
    assert_int_equal(chg.type, CT(ADDED));
    assert_false(chg.deleting);
    json_object *md = json_object_object_get(o, "metadata");
    json_object_object_add(md, "deletionTimestamp", json_object_new_string("2026-12-03T06:00:00Z"));
    json_object_object_add(md, "resourceVersion", json_object_new_string("4"));
    assert_int_equal(watcher_cache_apply(c, NODE_K, TLR_KUBE_MODIFIED, o, &chg, &became), TLR_OK);
    assert_int_equal(chg.type, CT(MODIFIED));
    assert_string_equal(chg.name, "n1");
    assert_true(chg.deleting);
    json_object_put(o);
    watcher_cache_free(c);
}

/* A field tailor accepts but does not act on is logged with the object's
 * name and field, once: not again on every update of the object. */
static void test_ignored_field_warned_once(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    tlr_logger *lg;
    tlr_logger_create(&(tlr_log_opts){ .service = "watcher", .level = TLR_LOG_INFO, .fd = fds[1] },
                      &lg);
    watcher_cache *c;
    watcher_cache_create(&(watcher_cache_opts){ .log = lg }, &c);
    Tailor__V1__ClusterChange chg;
    bool became;
    for (int rv = 1; rv <= 3; rv++) {
        char buf[1024];
        snprintf(buf, sizeof(buf),
                 "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\","
                 "\"metadata\":{\"name\":\"analytics\",\"uid\":\"u1\",\"resourceVersion\":\"%d\"},"
                 "\"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}],"
                 "\"role\":\"NodeRole\",\"subnetSelectorTerms\":[{\"tags\":{\"a\":\"b\"}}],"
                 "\"securityGroupSelectorTerms\":[{\"tags\":{\"a\":\"b\"}}],"
                 "\"placementGroupSelector\":{\"name\":\"analytics\"}}}", rv);
        json_object *o = json_tokener_parse(buf);
        assert_non_null(o);
        assert_int_equal(watcher_cache_apply(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE_CLASS,
                                             rv == 1 ? TLR_KUBE_ADDED : TLR_KUBE_MODIFIED, o, &chg,
                                             &became), TLR_OK);
        json_object_put(o);
    }
    watcher_cache_free(c);
    tlr_logger_free(lg);
    close(fds[1]);
    char out[8192];
    ssize_t n = read(fds[0], out, sizeof(out) - 1);
    close(fds[0]);
    assert_true(n > 0);
    out[n] = '\0';
    const char *first = strstr(out, "spec.placementGroupSelector");
    assert_non_null(first);
    assert_non_null(strstr(out, "EC2NodeClass analytics"));
    assert_null(strstr(first + 1, "spec.placementGroupSelector"));
}

/* ---- what changed since a generation (deltas) ---- */

#define CLAIM_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM
#define PDB_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB

static void put(watcher_cache *c, int kind, tlr_kube_event_type t, json_object *o)
{
    Tailor__V1__ClusterChange chg;
    bool became;
    int rc = watcher_cache_apply(c, kind, t, o, &chg, &became);
    if (rc)
        printf("FAIL applying kind %d event %d: rc %d\n", kind, t, rc);
    assert_int_equal(rc, TLR_OK);
    json_object_put(o);
}

static json_object *jnode(const char *name, const char *cpu)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\"},"
             "\"status\":{\"allocatable\":{\"cpu\":\"%s\"}}}", name, name, cpu);
    return json_tokener_parse(buf);
}

static json_object *jclaim(const char *name, const char *provider)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"nodeClassRef\":"
             "{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
             "\"requirements\":[]},\"status\":{\"providerID\":\"%s\"}}", name, provider);
    return json_tokener_parse(buf);
}

typedef struct removed_log {
    char buf[256];
} removed_log;

static void log_removed(void *arg, Tailor__V1__ClusterKind kind, const char *name, uint64_t gen)
{
    (void)gen;
    removed_log *l = arg;
    snprintf(l->buf + strlen(l->buf), sizeof(l->buf) - strlen(l->buf), "%s%s:%s",
             l->buf[0] ? "," : "", kind == NODE_K ? "node" : "claim", name);
}

static const char *removed_since(const watcher_cache *c, uint64_t since, removed_log *l)
{
    l->buf[0] = '\0';
    watcher_cache_visit_removed(c, since, log_removed, l);
    return l->buf;
}

typedef struct changed_of {
    const char *key;
    uint64_t changed;
} changed_of;

static void find_changed(void *arg, const watcher_cache_item *it)
{
    changed_of *w = arg;
    if (!strcmp(it->key, w->key))
        w->changed = it->changed;
}

static uint64_t changed_gen(const watcher_cache *c, int kind, const char *key)
{
    changed_of w = { key, 0 };
    watcher_cache_visit(c, kind, find_changed, &w);
    return w.changed;
}

/* A node changes when it does or when a pod bound to it (before or after)
 * does; an update that converts to the same bytes changes nothing. */
static void test_node_touched_by_its_pods(void **state)
{
    (void)state;
    watcher_cache *c;
    watcher_cache_create(&(watcher_cache_opts){ .epoch_ms = 5 }, &c);
    put(c, NODE_K, TLR_KUBE_ADDED, jnode("n1", "4"));
    put(c, NODE_K, TLR_KUBE_ADDED, jnode("n2", "4"));
    put(c, NODE_K, TLR_KUBE_ADDED, jnode("n3", "4"));
    put(c, POD_K, TLR_KUBE_ADDED, pod("a", "n1", false, "1"));
    uint64_t g0 = watcher_cache_generation(c);
    assert_false(watcher_cache_node_changed_since(c, "n1", g0));
    assert_true(watcher_cache_node_changed_since(c, "n1", g0 - 1));
    assert_true(watcher_cache_delta_computable(c, g0));
    /* the pod moves: its old node and its new one changed, not n3 */
    put(c, POD_K, TLR_KUBE_MODIFIED, pod("a", "n2", false, "1"));
    assert_true(watcher_cache_node_changed_since(c, "n1", g0));
    assert_true(watcher_cache_node_changed_since(c, "n2", g0));
    assert_false(watcher_cache_node_changed_since(c, "n3", g0));
    /* the same pod again (a relist re-sends it): nothing changed */
    uint64_t g1 = watcher_cache_generation(c);
    put(c, POD_K, TLR_KUBE_MODIFIED, pod("a", "n2", false, "1"));
    assert_int_equal(watcher_cache_generation(c), g1 + 1);
    assert_false(watcher_cache_node_changed_since(c, "n2", g1));
    put(c, NODE_K, TLR_KUBE_MODIFIED, jnode("n3", "4"));
    assert_false(watcher_cache_node_changed_since(c, "n3", g1));
    put(c, NODE_K, TLR_KUBE_MODIFIED, jnode("n3", "8"));
    assert_true(watcher_cache_node_changed_since(c, "n3", g1));
    /* a pod deleted changes its node */
    uint64_t g2 = watcher_cache_generation(c);
    put(c, POD_K, TLR_KUBE_DELETED, pod("a", "n2", false, "1"));
    assert_true(watcher_cache_node_changed_since(c, "n2", g2));
    assert_false(watcher_cache_node_changed_since(c, "n1", g2));
    /* an unbound pod is on no node */
    uint64_t g3 = watcher_cache_generation(c);
    put(c, POD_K, TLR_KUBE_ADDED, pod("p", "", true, "1"));
    assert_false(watcher_cache_node_changed_since(c, "n1", g3) ||
                 watcher_cache_node_changed_since(c, "n2", g3) ||
                 watcher_cache_node_changed_since(c, "n3", g3));
    /* many nodes: the touch table grows and forgets nothing */
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "m%d", i);
        put(c, NODE_K, TLR_KUBE_ADDED, jnode(name, "1"));
    }
    assert_true(watcher_cache_node_changed_since(c, "n3", g1));
    assert_true(watcher_cache_node_changed_since(c, "m0", g3));
    assert_false(watcher_cache_node_changed_since(c, "m0", watcher_cache_generation(c)));
    watcher_cache_free(c);
}

/* Removed Nodes and NodeClaims are remembered, boundedly; PDB changes and
 * lost tombstones make older bases unusable. */
static void test_tombstones_and_horizon(void **state)
{
    (void)state;
    watcher_cache *c;
    removed_log l;
    watcher_cache_create(&(watcher_cache_opts){ .epoch_ms = 5, .max_tombstones = 3 }, &c);
    assert_false(watcher_cache_delta_computable(c, 0));
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++)
        put(c, k, TLR_KUBE_RELIST_START, NULL);
    put(c, NODE_K, TLR_KUBE_ADDED, jnode("n1", "4"));
    put(c, NODE_K, TLR_KUBE_ADDED, jnode("n2", "4"));
    put(c, CLAIM_K, TLR_KUBE_ADDED, jclaim("c1", ""));
    put(c, CLAIM_K, TLR_KUBE_ADDED, jclaim("c2", ""));
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++)
        put(c, k, TLR_KUBE_RELIST_DONE, NULL);
    uint64_t g0 = watcher_cache_generation(c);
    assert_true(watcher_cache_delta_computable(c, g0));
    assert_false(watcher_cache_delta_computable(c, g0 + 1));
    /* a claim's generation of last change */
    uint64_t c1 = changed_gen(c, CLAIM_K, "c1");
    assert_true(c1 > 0 && c1 <= g0);
    put(c, CLAIM_K, TLR_KUBE_MODIFIED, jclaim("c1", ""));
    assert_int_equal(changed_gen(c, CLAIM_K, "c1"), c1);
    put(c, CLAIM_K, TLR_KUBE_MODIFIED, jclaim("c1", "aws:///us-east-1a/i-1"));
    assert_int_equal(changed_gen(c, CLAIM_K, "c1"), watcher_cache_generation(c));
    /* removals since g0 */
    put(c, CLAIM_K, TLR_KUBE_DELETED, jclaim("c2", ""));
    put(c, NODE_K, TLR_KUBE_DELETED, jnode("n1", "4"));
    uint64_t g1 = watcher_cache_generation(c);
    assert_string_equal(removed_since(c, g0, &l), "claim:c2,node:n1");
    assert_string_equal(removed_since(c, g1 - 1, &l), "node:n1");
    assert_string_equal(removed_since(c, g1, &l), "");
    /* a relist that no longer sees n2 removes it */
    put(c, NODE_K, TLR_KUBE_RELIST_START, NULL);
    put(c, NODE_K, TLR_KUBE_RELIST_DONE, NULL);
    assert_string_equal(removed_since(c, g1, &l), "node:n2");
    assert_true(watcher_cache_node_changed_since(c, "n2", g1));
    assert_true(watcher_cache_delta_computable(c, g0));
    /* a fourth tombstone drops the oldest: g0 is behind the horizon now */
    put(c, CLAIM_K, TLR_KUBE_DELETED, jclaim("c1", ""));
    assert_false(watcher_cache_delta_computable(c, g0));
    assert_true(watcher_cache_delta_computable(c, g1));
    assert_string_equal(removed_since(c, g1 - 1, &l), "node:n1,node:n2,claim:c1");
    /* a PDB changes pods' pdb_names on every node */
    uint64_t g2 = watcher_cache_generation(c);
    put(c, PDB_K, TLR_KUBE_ADDED, json_tokener_parse(
        "{\"metadata\":{\"name\":\"web\",\"namespace\":\"d\"},\"spec\":{\"minAvailable\":1,"
        "\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}"));
    uint64_t g3 = watcher_cache_generation(c);
    assert_false(watcher_cache_delta_computable(c, g2));
    assert_true(watcher_cache_delta_computable(c, g3));
    /* ...but the same PDB listed again does not */
    put(c, PDB_K, TLR_KUBE_RELIST_START, NULL);
    put(c, PDB_K, TLR_KUBE_MODIFIED, json_tokener_parse(
        "{\"metadata\":{\"name\":\"web\",\"namespace\":\"d\"},\"spec\":{\"minAvailable\":1,"
        "\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}"));
    put(c, PDB_K, TLR_KUBE_RELIST_DONE, NULL);
    assert_true(watcher_cache_delta_computable(c, g3));
    /* a relist that drops it does */
    put(c, PDB_K, TLR_KUBE_RELIST_START, NULL);
    put(c, PDB_K, TLR_KUBE_RELIST_DONE, NULL);
    assert_false(watcher_cache_delta_computable(c, g3));
    assert_true(watcher_cache_delta_computable(c, watcher_cache_generation(c)));
    watcher_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_change_says_deleting),
        cmocka_unit_test(test_ignored_field_warned_once),
        cmocka_unit_test(test_scenarios),
        cmocka_unit_test(test_forms_and_sync),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_node_touched_by_its_pods),
        cmocka_unit_test(test_tombstones_and_horizon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
