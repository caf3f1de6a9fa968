/* poolstatus_test.c - NodePool status.resources, status.nodes and the
 * Ready / NodeClassReady / ValidationSucceeded conditions, as `kubectl get
 * nodepools` shows them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <json-c/json.h>
#include <string.h>

#include "poolstatus.h"
#include "ds_testkit.h"
#include "tlr_json.h"
#include "tlr_time.h"

typedef struct fx {
    Tailor__V1__SnapshotResponse *snap;
    ds_view *v;
    ds_pool_writes w;
} fx;

static void build(fx *f)
{
    ds_view_build(f->snap, NULL, NULL, TK_NOW, &f->v);
    f->snap = NULL;
    ds_poolstatus_plan(f->v, &f->w);
}

static void done(fx *f)
{
    ds_pool_writes_clear(&f->w);
    ds_view_free(f->v);
}

static json_object *write_for(const fx *f, const char *pool)
{
    for (size_t i = 0; i < f->w.n; i++)
        if (!strcmp(f->w.v[i].name, pool)) {
            json_object *j = NULL;
            assert_int_equal(tlr_json_parse(f->w.v[i].status, strlen(f->w.v[i].status),
                                            strlen(f->w.v[i].status) + 1, &j, NULL, 0), 0);
            return j;
        }
    return NULL;
}

static const char *cond(json_object *st, const char *type, const char *field)
{
    json_object *a = tlr_json_arr(st, "conditions");
    for (size_t i = 0; a && i < json_object_array_length(a); i++) {
        json_object *c = json_object_array_get_idx(a, i);
        if (!strcmp(tlr_json_str(c, "type"), type))
            return tlr_json_str(c, field);
    }
    return NULL;
}

/* Two initialized nodes and one claim still launching count; a node being
 * deleted and another pool's node do not. */
static void test_resources_and_nodes(void **state)
{
    (void)state;
    fx f = { tk_snapshot(), NULL, { 0 } };
    Tailor__V1__ClusterState *cs = f.snap->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("general", "10%"));
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("other", "10%"));
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    Tailor__V1__Node *a = tk_node("a", "general", "m.large", 8, 16, 0.36);
    Tailor__V1__Node *b = tk_node("b", "general", "m.medium", 4, 8, 0.19);
    Tailor__V1__Node *gone = tk_node("gone", "general", "m.large", 8, 16, 0.36);
    gone->deletion_unix_ms = TK_NOW - 1000;
    Tailor__V1__Node *o = tk_node("o", "other", "m.small", 2, 4, 0.10);
    Tailor__V1__Node *nodes[] = { a, b, gone, o };
    for (int i = 0; i < 4; i++) {
        TK_PUSH(cs->nodes, cs->n_nodes, nodes[i]);
        TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, tk_claim_for(nodes[i]));
    }
    Tailor__V1__NodeClaim *launching = tk_claim_for(a);
    free(launching->name);
    launching->name = tlr_strdup("nc-launching");
    free(launching->status->node_name);
    launching->status->node_name = tlr_strdup("");
    free(launching->status->provider_id);
    launching->status->provider_id = tlr_strdup("");
    launching->status->capacity = tk_res(2000, 4 * TK_GIB, 29);
    TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, launching);
    build(&f);

    json_object *st = write_for(&f, "general");
    assert_non_null(st);
    assert_string_equal(tlr_json_str(st, "resources.cpu"), "14");
    assert_string_equal(tlr_json_str(st, "resources.memory"), "28Gi");
    assert_string_equal(tlr_json_str(st, "resources.pods"), "249");
    assert_string_equal(tlr_json_str(st, "resources.nodes"), "3");
    int64_t n = 0;
    assert_int_equal(tlr_json_int(st, "nodes", &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(cond(st, "Ready", "status"), "True");
    assert_string_equal(cond(st, "NodeClassReady", "status"), "True");
    assert_string_equal(cond(st, "ValidationSucceeded", "status"), "True");
    json_object_put(st);

    st = write_for(&f, "other");
    assert_non_null(st);
    assert_string_equal(tlr_json_str(st, "resources.cpu"), "2");
    assert_string_equal(tlr_json_str(st, "resources.nodes"), "1");
    json_object_put(st);
    done(&f);
}

/* An empty pool still shows Karpenter's base resources at zero. */
static void test_empty_pool(void **state)
{
    (void)state;
    fx f = { tk_snapshot(), NULL, { 0 } };
    Tailor__V1__ClusterState *cs = f.snap->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("general", "10%"));
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    build(&f);
    json_object *st = write_for(&f, "general");
    assert_non_null(st);
    const char *keys[] = { "cpu", "memory", "pods", "ephemeral-storage", "nodes" };
    for (int i = 0; i < 5; i++) {
        char path[64];
        snprintf(path, sizeof(path), "resources.%s", keys[i]);
        assert_string_equal(tlr_json_str(st, path), "0");
    }
    json_object_put(st);
    done(&f);
}

/* A missing class and a class not ready make the pool not Ready, with the
 * reason the user needs. */
static void test_class_not_ready(void **state)
{
    (void)state;
    fx f = { tk_snapshot(), NULL, { 0 } };
    Tailor__V1__ClusterState *cs = f.snap->cluster;
    Tailor__V1__NodePool *missing = tk_pool("missing", "10%");
    free(missing->node_class_ref->name);
    missing->node_class_ref->name = tlr_strdup("nope");
    TK_PUSH(cs->nodepools, cs->n_nodepools, missing);
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("general", "10%"));
    Tailor__V1__NodeClass *nc = tk_nodeclass("default");
    nc->ready = false;
    Tailor__V1__Condition *r = tlr_malloc(sizeof(*r));
    tailor__v1__condition__init(r);
    r->type = tlr_strdup("Ready");
    r->status = TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE;
    r->reason = tlr_strdup("AMINotFound");
    r->message = tlr_strdup("no AMI matches amiSelectorTerms");
    TK_PUSH(nc->conditions, nc->n_conditions, r);
    TK_PUSH(cs->node_classes, cs->n_node_classes, nc);
    build(&f);

    json_object *st = write_for(&f, "missing");
    assert_string_equal(cond(st, "NodeClassReady", "status"), "False");
    assert_string_equal(cond(st, "NodeClassReady", "reason"), "NodeClassNotFound");
    assert_string_equal(cond(st, "Ready", "status"), "False");
    assert_string_equal(cond(st, "Ready", "reason"), "UnhealthyDependents");
    assert_non_null(strstr(cond(st, "Ready", "message"), "NodeClassReady=False"));
    json_object_put(st);
    st = write_for(&f, "general");
    assert_string_equal(cond(st, "NodeClassReady", "reason"), "AMINotFound");
    assert_string_equal(cond(st, "NodeClassReady", "message"), "no AMI matches amiSelectorTerms");
    assert_string_equal(cond(st, "Ready", "status"), "False");
    json_object_put(st);
    done(&f);
}

/* What the pool already shows is not written again, and a condition whose
 * status did not change keeps its lastTransitionTime; other writers'
 * condition types are kept. */
static void test_unchanged_not_written(void **state)
{
    (void)state;
    fx f = { tk_snapshot(), NULL, { 0 } };
    Tailor__V1__ClusterState *cs = f.snap->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("general", "10%"));
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    build(&f);
    json_object *st = write_for(&f, "general");
    assert_non_null(st);
    json_object_put(st);
    done(&f);

    /* The same pool, now carrying that status (as the watcher parses it),
     * with a condition of another controller. */
    fx g = { tk_snapshot(), NULL, { 0 } };
    cs = g.snap->cluster;
    Tailor__V1__NodePool *p = tk_pool("general", "10%");
    p->status = tlr_malloc(sizeof(*p->status));
    tailor__v1__node_pool_status__init(p->status);
    p->status->usage = tk_res(0, 0, 0);
    const char *types[] = { "ValidationSucceeded", "NodeClassReady", "Ready",
                            "NodeRegistrationHealthy" };
    for (int i = 0; i < 4; i++) {
        Tailor__V1__Condition *c = tlr_malloc(sizeof(*c));
        tailor__v1__condition__init(c);
        c->type = tlr_strdup(types[i]);
        c->status = i < 3 ? TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE
                          : TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_UNKNOWN;
        c->reason = tlr_strdup(i < 3 ? types[i] : "AwaitingReconciliation");
        c->message = tlr_strdup("");
        c->last_transition_unix_ms = TK_NOW - 86400000;
        TK_PUSH(p->status->conditions, p->status->n_conditions, c);
    }
    TK_PUSH(cs->nodepools, cs->n_nodepools, p);
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    build(&g);
    assert_int_equal(g.w.n, 0);
    done(&g);

    /* A node joins: resources change, the conditions keep their times. */
    fx h = { tk_snapshot(), NULL, { 0 } };
    cs = h.snap->cluster;
    p = tk_pool("general", "10%");
    p->status = tlr_malloc(sizeof(*p->status));
    tailor__v1__node_pool_status__init(p->status);
    p->status->usage = tk_res(0, 0, 0);
    Tailor__V1__Condition *c = tlr_malloc(sizeof(*c));
    tailor__v1__condition__init(c);
    c->type = tlr_strdup("Ready");
    c->status = TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE;
    c->reason = tlr_strdup("Ready");
    c->message = tlr_strdup("");
    c->last_transition_unix_ms = TK_NOW - 86400000;
    TK_PUSH(p->status->conditions, p->status->n_conditions, c);
    TK_PUSH(cs->nodepools, cs->n_nodepools, p);
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    Tailor__V1__Node *n = tk_node("a", "general", "m.large", 8, 16, 0.36);
    TK_PUSH(cs->nodes, cs->n_nodes, n);
    TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, tk_claim_for(n));
    build(&h);
    st = write_for(&h, "general");
    assert_non_null(st);
    assert_string_equal(tlr_json_str(st, "resources.nodes"), "1");
    char ts[TLR_TIME_BUFLEN];
    tlr_time_format_s(TK_NOW - 86400000, ts);
    assert_string_equal(cond(st, "Ready", "lastTransitionTime"), ts);
    json_object_put(st);
    done(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resources_and_nodes),
        cmocka_unit_test(test_empty_pool),
        cmocka_unit_test(test_class_not_ready),
        cmocka_unit_test(test_unchanged_not_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
