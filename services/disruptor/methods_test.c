/* methods_test.c - the disruption methods on small clusters, with the
 * real solver engine (in-process) answering Simulate: emptiness within
 * budgets, expiration, every kind of drift, multi- and single-node
 * consolidation (delete, replace, the shorter delete beating the longer
 * replace, a long replacement filling a big node where the binary search
 * finds none), and the no-churn rules (min savings, never the same type,
 * consolidateAfter, PDBs, WhenEmpty, spot replacements pinned to spot,
 * spot-to-spot gated and kept to the 15 cheapest types), plus what the
 * reduced simulation sends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "candidates.h"
#include "claimconds.h"
#include "ds_fake.h"
#include "hash.h"
#include "methods.h"
#include "ds_testkit.h"
#include "tlr_err.h"

typedef struct fx {
    ds_fake f;
    Tailor__V1__Catalog *cat;
    Tailor__V1__SnapshotResponse *snap;   /* built, then handed to the view */
    ds_view *v;
    ds_budgets b;
    ds_sim sim;
    ds_mctx m;
    unsigned seq;
} fx;

static int setup(void **state)
{
    fx *x = tlr_calloc(1, sizeof(*x));
    ds_fake_init(&x->f);
    x->cat = tk_catalog();
    x->f.catalog = x->cat;
    x->snap = tk_snapshot();
    Tailor__V1__ClusterState *cs = x->snap->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("default", "100%"));
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    ds_budgets_clear(&x->b);
    ds_view_free(x->v);
    if (!x->v && x->snap)
        protobuf_c_message_free_unpacked(&x->snap->base, NULL);
    ds_fake_clear(&x->f);
    protobuf_c_message_free_unpacked(&x->cat->base, NULL);
    free(x);
    return 0;
}

static Tailor__V1__NodePool *pool(fx *x)
{
    return x->snap->cluster->nodepools[0];
}

/* A t.<size> node with pods of the given cpu (tk_sized_node). */
static Tailor__V1__Node *node(fx *x, const char *name, const char *size, const int *pods)
{
    return tk_sized_node(x->snap->cluster, name, size, pods);
}

static Tailor__V1__NodeClaim *claim(fx *x, const char *node_name)
{
    char c[64];
    snprintf(c, sizeof(c), "nc-%s", node_name);
    for (size_t i = 0; i < x->snap->cluster->n_nodeclaims; i++)
        if (!strcmp(x->snap->cluster->nodeclaims[i]->name, c))
            return x->snap->cluster->nodeclaims[i];
    return NULL;
}

/* Freeze the snapshot into a view and a method context. */
static ds_mctx *ctx(fx *x)
{
    ds_view_build(x->snap, x->cat, NULL, TK_NOW, &x->v);
    ds_budgets_compute(x->v, &x->b);
    x->sim = (ds_sim){ .v = x->v, .solver = ds_fake_solver(&x->f) };
    x->m = (ds_mctx){ .v = x->v, .b = &x->b, .sim = &x->sim, .min_savings = 0.1, .seq = &x->seq };
    return &x->m;
}

static char *nodes_of(const ds_cmd *c)
{
    static char buf[512];
    buf[0] = '\0';
    for (size_t i = 0; c && i < c->n; i++)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? "," : "", c->c[i].node);
    return buf;
}

static void test_emptiness_within_budget(void **state)
{
    fx *x = *state;
    free(pool(x)->disruption->budgets[0]->nodes);
    pool(x)->disruption->budgets[0]->nodes = tlr_strdup("2");
    node(x, "a", "small", NULL);
    node(x, "b", "small", NULL);
    node(x, "c", "small", NULL);
    Tailor__V1__Node *ds = node(x, "d", "small", NULL);
    tk_bind(ds, tk_pod("logs", NULL, "logs", 'd', "logs", 100, TK_GIB));   /* DaemonSet only: empty */
    node(x, "busy", "small", (int[]){ 500, 0 });
    ds_cmd *c = ds_emptiness_decide(ctx(x));
    assert_non_null(c);
    assert_int_equal(c->n, 2);   /* the budget */
    assert_int_equal(c->method, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EMPTINESS);
    assert_int_equal(c->nrepl, 0);
    assert_false(strstr(nodes_of(c), "busy"));
    assert_int_equal(x->f.simulations, 0);   /* nothing moves: no simulation */
    ds_cmd_free(c);
}

static void test_emptiness_waits_consolidate_after(void **state)
{
    fx *x = *state;
    pool(x)->disruption->consolidate_after_ms = 30 * 60 * 1000;
    node(x, "a", "small", NULL);   /* made 1h ago: may go */
    Tailor__V1__Node *young = node(x, "b", "small", NULL);
    young->creation_unix_ms = TK_NOW - 60000;
    claim(x, "b")->creation_unix_ms = TK_NOW - 60000;
    ds_mctx *m = ctx(x);
    ds_cmd *c = ds_emptiness_decide(m);
    assert_string_equal(nodes_of(c), "a");
    ds_cmd_free(c);
    ds_blockers bl;
    assert_false(ds_candidate_check(m->v, ds_view_node(m->v, "b"), DS_USE_CONSOLIDATION, &bl));
    assert_int_equal(bl.v[0].kind, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_CONSOLIDATE_AFTER);
    assert_int_equal(bl.v[0].until_ms, TK_NOW - 60000 + 30 * 60 * 1000);
}

static void test_expiration_is_forceful(void **state)
{
    fx *x = *state;
    node(x, "old", "small", (int[]){ 500, 0 });
    claim(x, "old")->creation_unix_ms = TK_NOW - 721LL * 3600 * 1000;
    Tailor__V1__Node *keep = node(x, "kept", "small", (int[]){ 500, 0 });
    tk_annotate_pod(keep->pods[0], "karpenter.sh/do-not-disrupt", "true");
    claim(x, "kept")->creation_unix_ms = TK_NOW - 800LL * 3600 * 1000;   /* do-not-disrupt: expires anyway */
    node(x, "never", "small", NULL);
    claim(x, "never")->creation_unix_ms = TK_NOW - 900LL * 3600 * 1000;
    claim(x, "never")->expire_never = true;
    node(x, "young", "small", NULL);
    ds_cmd *c = ds_expiration_decide(ctx(x));
    assert_string_equal(nodes_of(c), "old,kept");
    assert_int_equal(c->reason, 0);   /* no budget */
    ds_cmd_free(c);
}

static void test_consolidation_multi_prefers_bigger_saving(void **state)
{
    fx *x = *state;
    /* four half-empty mediums: deleting three saves 0.57; replacing all
     * four by one large saves only 0.40 */
    for (int i = 0; i < 4; i++) {
        char n[16];
        snprintf(n, sizeof(n), "m%d", i);
        node(x, n, "medium", (int[]){ 1000, 0 });
    }
    ds_mctx *m = ctx(x);
    ds_cmd *c = ds_consolidation_decide(m);
    assert_non_null(c);
    assert_int_equal(c->method, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE);
    assert_int_equal(c->n, 3);
    assert_float_equal(c->savings, 0.57, 1e-9);
    assert_true(x->f.simulations <= 3);   /* binary search over 2..4 */
    ds_cmd_free(c);
}

static void test_consolidation_replace_cheaper_type(void **state)
{
    fx *x = *state;
    /* a medium running 1.5 cpu alone, a full small beside it: replace the
     * medium by a small (0.10 vs 0.19: 47% saved) */
    node(x, "m", "medium", (int[]){ 1500, 0 });
    node(x, "full", "small", (int[]){ 1900, 0 });
    ds_cmd *c = ds_consolidation_decide(ctx(x));
    assert_non_null(c);
    assert_int_equal(c->method, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE);
    assert_string_equal(nodes_of(c), "m");
    assert_int_equal(c->nrepl, 1);
    assert_string_equal(c->repl[0]->instance_type_options[0]->name, "t.small");
    /* the requirement agrees with the options left: no t.medium */
    for (size_t r = 0; r < c->repl[0]->n_requirements; r++)
        if (!strcmp(c->repl[0]->requirements[r]->key, "node.kubernetes.io/instance-type"))
            for (size_t v = 0; v < c->repl[0]->requirements[r]->n_values; v++)
                assert_string_not_equal(c->repl[0]->requirements[r]->values[v], "t.medium");
    assert_float_equal(c->savings, 0.09, 1e-9);
    assert_non_null(strstr(c->why, "by one t.small"));
    ds_cmd_free(c);
}

static void test_consolidation_multi_replace_fills_a_big_node(void **state)
{
    fx *x = *state;
    /* a cheaper family u (0.038/cpu against t.medium's 0.0475) in three
     * sizes, 4, 12 and 24 cpu; eight full t.mediums (3.6 cpu each), one of
     * them do-not-disrupt.  Replacing 3 by a u.c12 saves 20% ($0.114),
     * 6 by a u.c24 20% too ($0.228), but 2, 4 and 5 need a size that
     * saves under 10%: Karpenter's binary search over the 7 candidates
     * probes 4 and 2, finds neither worth it, and single-node would then
     * replace one node by a u.c4 ($0.038); the types the two probes were
     * offered point at 6. */
    tk_type(x->cat, "u.c12", 12, 24, 0.456);
    tk_type(x->cat, "u.c24", 24, 48, 0.912);
    tk_type(x->cat, "u.c4", 4, 8, 0.152);
    for (int i = 0; i < 8; i++) {
        char n[16];
        snprintf(n, sizeof(n), "n%d", i);
        Tailor__V1__Node *nd = node(x, n, "medium", (int[]){ 900, 900, 900, 900, 0 });
        if (i == 1)
            tk_annotate_pod(nd->pods[0], "karpenter.sh/do-not-disrupt", "true");
    }
    ds_mctx *m = ctx(x);
    ds_cmd *c = ds_consolidation_decide(m);
    assert_non_null(c);
    assert_int_equal(c->method, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE);
    assert_int_equal(c->n, 6);
    assert_false(strstr(nodes_of(c), "n1"));   /* do-not-disrupt stays */
    assert_int_equal(c->nrepl, 1);
    assert_string_equal(c->repl[0]->instance_type_options[0]->name, "u.c24");
    assert_float_equal(c->savings, 6 * 0.19 - 0.912, 1e-9);
    assert_true(c->after <= c->before * 0.9 + 1e-9);
    assert_true(x->f.simulations <= 6);   /* the search's 3 and 2 estimates */
    ds_cmd_free(c);
}

static void test_no_churn_rules(void **state)
{
    fx *x = *state;
    /* a small node running 1.5 cpu: the only type that fits is its own */
    node(x, "s", "small", (int[]){ 1500, 0 });
    ds_mctx *m = ctx(x);
    assert_null(ds_consolidation_decide(m));
    char why[512];
    ds_vnode *s = ds_view_node(m->v, "s");
    assert_null(ds_consolidation_evaluate(m, &s, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "no replacement saves 10%: the cheapest other plan that fits (1 node) costs $0.1900/h vs $0.1000/h now"));
}

static void test_single_node_split(void **state)
{
    fx *x = *state;
    /* an xlarge (0.70) left with 3 pods of 3.5 cpu: no single type both
     * fits them and costs 10% less, but a medium and a large do (0.55) */
    Tailor__V1__Node *n = node(x, "xl", "xlarge", (int[]){ 3500, 3500, 3500, 0 });
    (void)n;
    ds_cmd *c = ds_consolidation_decide(ctx(x));
    assert_non_null(c);
    assert_int_equal(c->method, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE);
    assert_true(c->nrepl >= 2);
    assert_true(c->after <= 0.70 * 0.9 + 1e-9);
    assert_non_null(strstr(c->why, "by nodes "));
    ds_cmd_free(c);
}

static void test_min_savings_blocks_small_gains(void **state)
{
    fx *x = *state;
    /* a large (0.36) alone running 3.9 cpu: a medium (0.19) saves 47%;
     * with min-savings 50% that is refused, with 40% it is done */
    node(x, "l", "large", (int[]){ 3900, 0 });
    ds_mctx *m = ctx(x);
    m->min_savings = 0.5;
    assert_null(ds_consolidation_decide(m));
    m->min_savings = 0.4;
    char why[512] = "";
    ds_vnode *l = ds_view_node(m->v, "l");
    ds_cmd *probe = ds_consolidation_evaluate(m, &l, 1, why, sizeof(why));
    if (!probe)
        fail_msg("large -> medium refused: %s", why);
    ds_cmd_free(probe);
    ds_cmd *c = ds_consolidation_decide(m);
    assert_non_null(c);
    assert_string_equal(c->repl[0]->instance_type_options[0]->name, "t.medium");
    ds_cmd_free(c);
}

static void test_blockers_keep_nodes(void **state)
{
    fx *x = *state;
    Tailor__V1__Node *a = node(x, "a", "medium", (int[]){ 500, 0 });
    Tailor__V1__Node *b = node(x, "b", "medium", (int[]){ 500, 0 });
    node(x, "c", "medium", (int[]){ 500, 0 });
    tk_annotate_pod(a->pods[0], "karpenter.sh/do-not-disrupt", "true");
    TK_PUSH(b->pods[0]->pdb_names, b->pods[0]->n_pdb_names, tlr_strdup("default/guard"));
    TK_PUSH(x->snap->cluster->pdbs, x->snap->cluster->n_pdbs, tk_pdb("guard", "app", 0));
    ds_mctx *m = ctx(x);
    ds_cmd *c = ds_consolidation_decide(m);
    assert_string_equal(nodes_of(c), "c");   /* a and b stay; c's pod fits on them */
    ds_cmd_free(c);
    ds_blockers bl;
    assert_false(ds_candidate_check(m->v, ds_view_node(m->v, "a"), DS_USE_CONSOLIDATION, &bl));
    assert_int_equal(bl.v[0].kind, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_DO_NOT_DISRUPT);
    assert_string_equal(bl.v[0].obj_name, "a-p0");
    assert_false(ds_candidate_check(m->v, ds_view_node(m->v, "b"), DS_USE_CONSOLIDATION, &bl));
    assert_int_equal(bl.v[0].kind, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_PDB);
    assert_string_equal(bl.v[0].obj_name, "guard");
    assert_non_null(strstr(bl.v[0].message, "PodDisruptionBudget default/guard allows no disruption"));
}

static void test_when_empty_policy(void **state)
{
    fx *x = *state;
    pool(x)->disruption->consolidation_policy =
        TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_WHEN_EMPTY;
    node(x, "a", "medium", (int[]){ 500, 0 });
    node(x, "b", "medium", (int[]){ 500, 0 });
    node(x, "e", "medium", NULL);
    ds_mctx *m = ctx(x);
    assert_null(ds_consolidation_decide(m));
    ds_cmd *c = ds_emptiness_decide(m);
    assert_string_equal(nodes_of(c), "e");
    ds_cmd_free(c);
    ds_blockers bl;
    ds_candidate_check(m->v, ds_view_node(m->v, "a"), DS_USE_CONSOLIDATION, &bl);
    assert_int_equal(bl.v[0].kind, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_CONSOLIDATION_POLICY);
}

static void test_drift_kinds(void **state)
{
    fx *x = *state;
    Tailor__V1__NodePool *p = pool(x);
    p->hash = tlr_strdup("new-pool");
    p->hash_version = tlr_strdup(DS_HASH_VERSION);
    Tailor__V1__NodeClass *nc = x->snap->cluster->node_classes[0];
    TK_PUSH(nc->amis, nc->n_amis, tk_ami("ami-new"));
    node(x, "hash", "medium", (int[]){ 500, 0 });
    claim(x, "hash")->nodepool_hash = tlr_strdup("old-pool");
    node(x, "ami", "medium", (int[]){ 500, 0 });
    claim(x, "ami")->status->image_id = tlr_strdup("ami-old");
    node(x, "ok", "medium", (int[]){ 500, 0 });
    claim(x, "ok")->status->image_id = tlr_strdup("ami-new");
    claim(x, "ok")->nodepool_hash = tlr_strdup("new-pool");
    /* the pool now allows only mediums and smalls: a large has drifted */
    TK_PUSH(p->requirements, p->n_requirements, tk_req("node.kubernetes.io/instance-type", "t.medium"));
    TK_PUSH(p->requirements[p->n_requirements - 1]->values, p->requirements[p->n_requirements - 1]->n_values,
            tlr_strdup("t.small"));
    node(x, "big", "large", (int[]){ 500, 0 });
    ds_mctx *m = ctx(x);
    char why[512];
    static const struct { const char *n; ds_drift_kind k; const char *say; } want[] = {
        { "hash", DS_DRIFT_NODEPOOL, "NodePool default changed" },
        { "ami", DS_DRIFT_AMI, "node runs image ami-old; EC2NodeClass default now resolves to ami-new" },
        { "big", DS_DRIFT_REQUIREMENTS, "no longer allows node.kubernetes.io/instance-type=t.large" },
        { "ok", DS_DRIFT_NONE, NULL },
    };
    for (size_t i = 0; i < 4; i++) {
        why[0] = '\0';
        ds_drift_kind k = ds_drifted(m, ds_view_node(m->v, want[i].n), why, sizeof(why));
        if (k != want[i].k || (want[i].say && !strstr(why, want[i].say)))
            fail_msg("%s: kind %d (%s), want %d (%s)", want[i].n, k, why, want[i].k,
                     want[i].say ? want[i].say : "-");
    }
    /* all three drifted go at once; their pods fit on "ok" and new nodes */
    ds_cmd *c = ds_drift_decide(m);
    assert_non_null(c);
    assert_int_equal(c->n, 3);
    assert_int_equal(c->reason, TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_DRIFTED);
    ds_cmd_free(c);
}

/* AMI drift: the claim's status.imageID against its EC2NodeClass's
 * status.amis, as the launcher last published them; judged only when
 * both are there and the launcher does not say AMIsReady False. */
static void test_ami_drift_rule(void **state)
{
    fx *x = *state;
    static const struct {
        const char *amis[3];        /* the class's status.amis */
        int ready;                  /* AMIsReady: -1 absent, 0 False, 1 True */
        const char *image;          /* the claim's status.imageID; NULL = unset */
        ds_drift_kind want;
        const char *say;
    } cases[] = {
        { { "ami-new" }, -1, "ami-old", DS_DRIFT_AMI,
          "node runs image ami-old; EC2NodeClass c0 now resolves to ami-new" },
        { { "ami-new" }, 1, "ami-old", DS_DRIFT_AMI,
          "node runs image ami-old; EC2NodeClass c1 now resolves to ami-new" },
        { { "ami-new", "ami-arm" }, -1, "ami-old", DS_DRIFT_AMI,
          "node runs image ami-old; EC2NodeClass c2 now resolves to ami-new (and others)" },
        { { "ami-arm", "ami-new" }, 1, "ami-new", DS_DRIFT_NONE, NULL },
        { { NULL }, -1, "ami-old", DS_DRIFT_NONE, NULL },        /* not resolved yet */
        { { NULL }, 0, "ami-old", DS_DRIFT_NONE, NULL },         /* resolution failed */
        { { "ami-new" }, 0, "ami-old", DS_DRIFT_NONE, NULL },    /* AMIsReady False */
        { { "ami-new" }, 1, NULL, DS_DRIFT_NONE, NULL },         /* no imageID */
    };
    const size_t n = sizeof(cases) / sizeof(cases[0]);
    Tailor__V1__ClusterState *cs = x->snap->cluster;
    for (size_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%zu", i);
        Tailor__V1__NodeClass *nc = tk_nodeclass(name);
        for (size_t k = 0; k < 3 && cases[i].amis[k]; k++)
            TK_PUSH(nc->amis, nc->n_amis, tk_ami(cases[i].amis[k]));
        if (cases[i].ready >= 0)
            TK_PUSH(nc->conditions, nc->n_conditions, tk_cond("AMIsReady", cases[i].ready));
        TK_PUSH(cs->node_classes, cs->n_node_classes, nc);
        snprintf(name, sizeof(name), "n%zu", i);
        node(x, name, "medium", (int[]){ 500, 0 });
        Tailor__V1__NodeClaim *c = claim(x, name);
        free(c->node_class);
        c->node_class = tlr_strdup(nc->name);
        if (cases[i].image)
            c->status->image_id = tlr_strdup(cases[i].image);
    }
    ds_mctx *m = ctx(x);
    for (size_t i = 0; i < n; i++) {
        char name[16], why[512] = "";
        snprintf(name, sizeof(name), "n%zu", i);
        ds_drift_kind k = ds_drifted(m, ds_view_node(m->v, name), why, sizeof(why));
        if (k != cases[i].want || (cases[i].say && strcmp(why, cases[i].say)))
            fail_msg("case %zu: kind %d (%s), want %d (%s)", i, k, why, cases[i].want,
                     cases[i].say ? cases[i].say : "-");
    }
}

static void test_drift_budget_one_at_a_time(void **state)
{
    fx *x = *state;
    free(pool(x)->disruption->budgets[0]->nodes);
    pool(x)->disruption->budgets[0]->nodes = tlr_strdup("1");
    Tailor__V1__NodePool *p = pool(x);
    p->hash = tlr_strdup("v2");
    p->hash_version = tlr_strdup(DS_HASH_VERSION);
    for (int i = 0; i < 3; i++) {
        char n[16];
        snprintf(n, sizeof(n), "d%d", i);
        node(x, n, "medium", (int[]){ 2500, 0 });
            claim(x, n)->nodepool_hash = tlr_strdup("v1");
    }
    ds_cmd *c = ds_drift_decide(ctx(x));
    assert_non_null(c);
    assert_int_equal(c->n, 1);          /* the budget: one node */
    assert_int_equal(c->nrepl, 1);      /* its 2.5 cpu fit nowhere else */
    ds_cmd_free(c);
}

static void test_reduced_simulation_request(void **state)
{
    fx *x = *state;
    node(x, "gone", "medium", (int[]){ 1000, 0 });
    node(x, "room", "medium", (int[]){ 500, 0 });
    node(x, "full", "small", (int[]){ 1950, 0 });   /* 50m free: no 1-cpu pod fits */
    Tailor__V1__Node *nr = node(x, "notready", "medium", NULL);
    nr->ready = false;
    ds_mctx *m = ctx(x);
    const char *names[1] = { "gone" };
    Tailor__V1__SimulateRequest req;
    m->sim->min_values_policy = TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT;
    ds_sim_request(m->sim, names, 1, true, 1, &req);
    /* the replacements are planned under the launcher's minValues policy */
    assert_int_equal(req.options->min_values_policy,
                     TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT);
    /* room only (without its pods); gone's pod goes as the pod to place */
    assert_int_equal(req.cluster->n_nodes, 1);
    assert_string_equal(req.cluster->nodes[0]->name, "room");
    assert_int_equal(req.cluster->nodes[0]->n_pods, 0);
    assert_int_equal(req.cluster->nodes[0]->requested->cpu_millis, 500);
    assert_int_equal(req.n_remove_node_names, 0);
    assert_int_equal(req.n_pending_pods, 1);
    assert_string_equal(req.pending_pods[0]->name, "gone-p0");
    ds_sim_request_free(&req);
    /* and the answer is the same as with everything sent */
    ds_sim_result a, b;
    assert_int_equal(ds_sim_run(m->sim, names, 1, true, 1, &a), TLR_OK);
    m->sim->no_reduce = true;
    assert_int_equal(ds_sim_run(m->sim, names, 1, true, 1, &b), TLR_OK);
    assert_true(a.feasible && b.feasible);
    assert_int_equal(a.nreplacements, b.nreplacements);
    assert_int_equal(a.sent_nodes, 1);
    assert_int_equal(b.sent_nodes, 4);
    assert_float_equal(a.before, b.before, 1e-9);
    ds_sim_result_clear(m->sim, &a);
    ds_sim_result_clear(m->sim, &b);
}

/* ---- zone topology spread ------------------------------------------------ */

/* Every type offered in us-east-1a, b and c at its price. */
static void three_zones(fx *x)
{
    for (size_t i = 0; i < x->cat->n_instance_types; i++) {
        Tailor__V1__InstanceType *it = x->cat->instance_types[i];
        double price = it->offerings[0]->price_per_hour;
        tk_offer(it, "us-east-1b", 'o', price);
        tk_offer(it, "us-east-1c", 'o', price);
    }
}

/* A t.<size> node in zone (a, b or c). */
static Tailor__V1__Node *zone_node(fx *x, const char *name, const char *size, char zone)
{
    Tailor__V1__Node *n = node(x, name, size, NULL);
    char z[16];
    snprintf(z, sizeof(z), "us-east-1%c", zone);
    free(n->zone);
    n->zone = tlr_strdup(z);
    for (size_t i = 0; i < n->n_labels; i++)
        if (!strcmp(n->labels[i]->key, TLR_LABEL_ZONE)) {
            free(n->labels[i]->value);
            n->labels[i]->value = tlr_strdup(z);
        }
    return n;
}

/* Spread p over zones: {maxSkew: 1, DoNotSchedule, app=web}. */
static Tailor__V1__Pod *zone_spread(Tailor__V1__Pod *p)
{
    Tailor__V1__TopologySpreadConstraint *t = tlr_malloc(sizeof(*t));
    tailor__v1__topology_spread_constraint__init(t);
    t->max_skew = 1;
    t->topology_key = tlr_strdup(TLR_LABEL_ZONE);
    t->when_unsatisfiable =
        TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE;
    t->label_selector = tlr_malloc(sizeof(*t->label_selector));
    tailor__v1__label_selector__init(t->label_selector);
    TK_PUSH(t->label_selector->match_labels, t->label_selector->n_match_labels, tk_label("app", "web"));
    TK_PUSH(p->topology_spread_constraints, p->n_topology_spread_constraints, t);
    return p;
}

/* A pod of Deployment web (app=web, 500m, zone_spread) on node n: in the
 * snapshot (compact: the spread is kept) and in the fake Kubernetes (full
 * form, read at validation). */
static void web_pod(fx *x, Tailor__V1__Node *n, const char *name)
{
    Tailor__V1__Pod *p = zone_spread(tk_pod(name, n->name, "web", 'r', "web-rs", 500, TK_GIB));
    ds_fake_add_pod(&x->f, p);
    protobuf_c_message_free_unpacked(&p->base, NULL);
    tk_bind(n, zone_spread(tk_pod(name, NULL, "web", 'r', "web-rs", 500, TK_GIB)));
}

/* Read the moving pods in full form from the fake Kubernetes (what
 * validation does before anything is touched), or not (the search's
 * probes, on the snapshot's compact pods). */
static ds_mctx *full_form(ds_mctx *m, ds_fake *f, bool on)
{
    tlr_drain_ops d = ds_fake_drain(f);
    m->sim->full_pods = on ? d.list_pods : NULL;
    m->sim->full_pods_arg = on ? d.arg : NULL;
    return m;
}

/* Consolidating these nodes alone. */
static ds_cmd *evaluate(ds_mctx *m, const char *const *names, size_t n, char *why, size_t len)
{
    ds_vnode *set[4];
    for (size_t i = 0; i < n; i++)
        set[i] = ds_view_node(m->v, names[i]);
    return ds_consolidation_evaluate(m, set, n, why, len);
}

/* web 2/2/1 over zones a/b/c, one node per zone.  The pod on c's only
 * node fits on a's or b's node, but kube-scheduler's PodTopologySpread
 * filter then sees a: 3, b: 2, c: 0 (zone c stays a domain: the pool
 * launches there, and the node is still there while it drains): skew 3.
 * So deleting that node would evict a pod that goes Pending and makes
 * the launcher buy a node in c again: no delete.  A cheaper node in c is
 * a valid replacement. */
static void test_consolidation_keeps_zone_spread(void **state)
{
    fx *x = *state;
    three_zones(x);
    Tailor__V1__Node *a = zone_node(x, "za", "medium", 'a'), *b = zone_node(x, "zb", "medium", 'b');
    Tailor__V1__Node *c = zone_node(x, "zc", "medium", 'c');
    web_pod(x, a, "web-a1");
    web_pod(x, a, "web-a2");
    web_pod(x, b, "web-b1");
    web_pod(x, b, "web-b2");
    web_pod(x, c, "web-c1");
    ds_mctx *m = ctx(x);
    for (int full = 0; full < 2; full++) {
        char why[512] = "";
        const char *names[1] = { "zc" };
        ds_cmd *cmd = evaluate(full_form(m, &x->f, full), names, 1, why, sizeof(why));
        if (cmd && cmd->method != TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE)
            fail_msg("consolidating zc (%s pods): got %s (%s), want no delete", full ? "full" : "compact",
                     ds_method_name(cmd->method), cmd->why);
        if (cmd) {
            /* the replacement is in zone c, where the pod may go */
            assert_int_equal(cmd->nrepl, 1);
            bool in_c = false, elsewhere = false;
            const Tailor__V1__NodeClaim *r = cmd->repl[0];
            for (size_t i = 0; i < r->n_requirements; i++)
                if (!strcmp(r->requirements[i]->key, TLR_LABEL_ZONE))
                    for (size_t k = 0; k < r->requirements[i]->n_values; k++) {
                        in_c = in_c || !strcmp(r->requirements[i]->values[k], "us-east-1c");
                        elsewhere = elsewhere || strcmp(r->requirements[i]->values[k], "us-east-1c");
                    }
            if (!in_c || elsewhere)
                fail_msg("replacement of zc (%s pods): want zone us-east-1c only (%s)",
                         full ? "full" : "compact", cmd->why);
        }
        ds_cmd_free(cmd);
        /* two nodes at once: their three pods cannot leave a and c with none */
        const char *two[2] = { "za", "zc" };
        cmd = evaluate(m, two, 2, why, sizeof(why));
        if (cmd && cmd->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE)
            fail_msg("consolidating za,zc (%s pods): got delete (%s), want none", full ? "full" : "compact",
                     cmd->why);
        ds_cmd_free(cmd);
    }
    /* and what a pass decides (multi-node, then single-node) keeps it */
    ds_cmd *d = ds_consolidation_decide(full_form(m, &x->f, false));
    if (d && d->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE)
        fail_msg("decide: got delete of %s (%s), want none", nodes_of(d), d->why);
    ds_cmd_free(d);
}

/* A valid consolidation under the same spread is still taken: web 2/1/1
 * with zone a on two nodes; a's second node goes, its pod joins a's first
 * (a: 2, b: 1, c: 1, skew 1).  The nodes are of the cheapest type, so no
 * replacement competes: deleting za1 or za2 is the only move there is. */
static void test_consolidation_within_zone_spread(void **state)
{
    fx *x = *state;
    three_zones(x);
    Tailor__V1__Node *a1 = zone_node(x, "za1", "small", 'a'), *a2 = zone_node(x, "za2", "small", 'a');
    Tailor__V1__Node *b = zone_node(x, "zb", "small", 'b'), *c = zone_node(x, "zc", "small", 'c');
    web_pod(x, a1, "web-a1");
    web_pod(x, a2, "web-a2");
    web_pod(x, b, "web-b1");
    web_pod(x, c, "web-c1");
    ds_mctx *m = ctx(x);
    for (int full = 0; full < 2; full++) {
        char why[512] = "";
        const char *names[1] = { "za2" };
        ds_cmd *cmd = evaluate(full_form(m, &x->f, full), names, 1, why, sizeof(why));
        if (!cmd || cmd->method != TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE)
            fail_msg("consolidating za2 (%s pods): got %s (%s), want delete", full ? "full" : "compact",
                     cmd ? ds_method_name(cmd->method) : "none", cmd ? cmd->why : why);
        ds_cmd_free(cmd);
    }
    /* a pass finds it: deleting za1 or za2 is the only valid move */
    ds_cmd *d = ds_consolidation_decide(full_form(m, &x->f, false));
    if (!d || d->method != TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE || d->n != 1 ||
        strncmp(d->c[0].node, "za", 2))
        fail_msg("decide: got %s of %s (%s), want delete of za1 or za2",
                 d ? ds_method_name(d->method) : "none", nodes_of(d), d ? d->why : "");
    ds_cmd_free(d);
}

/* A NodeClaim carries its allocatable and the requests it was launched
 * for: a reduced request that sent the claim of a node it leaves out
 * would have the solver plan the node's pods back onto it (an in-flight
 * claim to the solver) and call the node deletable. */
static void test_reduced_simulation_leaves_unsent_claims_out(void **state)
{
    fx *x = *state;
    node(x, "gone", "medium", (int[]){ 1000, 500, 0 });
    node(x, "room", "small", (int[]){ 1200, 0 });    /* 800m free: not both pods */
    Tailor__V1__Node *nr = node(x, "notready", "medium", NULL);
    nr->ready = false;
    claim(x, "gone")->status->allocatable = tk_res(4000, 8 * TK_GIB, 110);
    claim(x, "notready")->status->allocatable = tk_res(4000, 8 * TK_GIB, 110);
    Tailor__V1__NodeClaim *fly = tk_claim_for(nr);   /* really in flight: no Node */
    free(fly->name);
    fly->name = tlr_strdup("nc-flying");
    fly->status->node_name[0] = '\0';
    fly->status->provider_id[0] = '\0';
    TK_PUSH(x->snap->cluster->nodeclaims, x->snap->cluster->n_nodeclaims, fly);
    ds_mctx *m = ctx(x);
    const char *names[1] = { "gone" };
    Tailor__V1__SimulateRequest req;
    ds_sim_request(m->sim, names, 1, true, 1, &req);
    /* room and its claim; the claim in flight; not gone's nor notready's */
    assert_int_equal(req.cluster->n_nodes, 1);
    assert_int_equal(req.cluster->n_nodeclaims, 2);
    assert_string_equal(req.cluster->nodeclaims[0]->name, "nc-room");
    assert_string_equal(req.cluster->nodeclaims[1]->name, "nc-flying");
    ds_sim_request_free(&req);
    char why[512] = "";
    ds_vnode *g = ds_view_node(m->v, "gone");
    ds_cmd *c = ds_consolidation_evaluate(m, &g, 1, why, sizeof(why));
    if (c && c->method == TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE)
        fail_msg("got %s, want no delete: the pods fit nowhere but on gone's own claim", c->why);
    ds_cmd_free(c);
}

/* ---- capacity types ---------------------------------------------------- */

/* Every catalog type also offered as spot at half its on-demand price. */
static void add_spot(fx *x)
{
    for (size_t i = 0; i < x->cat->n_instance_types; i++) {
        Tailor__V1__InstanceType *it = x->cat->instance_types[i];
        tk_offer(it, "us-east-1a", 's', it->offerings[0]->price_per_hour / 2);
    }
}

static const Tailor__V1__NodeSelectorRequirement *req_of(const Tailor__V1__NodeClaim *nc, const char *key)
{
    for (size_t r = 0; r < nc->n_requirements; r++)
        if (!strcmp(nc->requirements[r]->key, key))
            return nc->requirements[r];
    return NULL;
}

static void test_replacement_that_may_be_spot_is_spot(void **state)
{
    fx *x = *state;
    add_spot(x);
    /* an on-demand medium (0.19) running 1.5 cpu beside a full small: the
     * pool allows both capacity types, so the solver's replacement does;
     * it must launch as spot (a small at 0.05) -- never fall back to an
     * on-demand node that was not what the saving was computed on */
    node(x, "m", "medium", (int[]){ 1500, 0 });
    node(x, "full", "small", (int[]){ 1900, 0 });
    ds_mctx *m = ctx(x);
    ds_vnode *v = ds_view_node(m->v, "m");
    char why[512] = "";
    ds_cmd *c = ds_consolidation_evaluate(m, &v, 1, why, sizeof(why));
    if (!c)
        fail_msg("medium not replaced: %s", why);
    assert_int_equal(c->nrepl, 1);
    const Tailor__V1__NodeSelectorRequirement *ct = req_of(c->repl[0], "karpenter.sh/capacity-type");
    assert_non_null(ct);
    assert_int_equal(ct->n_values, 1);
    assert_string_equal(ct->values[0], "spot");
    assert_string_equal(c->repl[0]->instance_type_options[0]->name, "t.small");
    assert_float_equal(c->repl[0]->instance_type_options[0]->price_per_hour, 0.05, 1e-9);
    assert_float_equal(c->after, 0.05, 1e-9);
    ds_cmd_free(c);
}

/* A spot medium running 1.5 cpu beside a full spot small. */
static ds_vnode *spot_medium(fx *x, ds_mctx **mp)
{
    Tailor__V1__Node *m = node(x, "m", "medium", (int[]){ 1500, 0 });
    Tailor__V1__Node *f = node(x, "full", "small", (int[]){ 1900, 0 });
    m->capacity_type = f->capacity_type = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;
    *mp = ctx(x);
    return ds_view_node((*mp)->v, "m");
}

static void test_spot_to_spot_is_gated(void **state)
{
    fx *x = *state;
    add_spot(x);
    ds_mctx *m;
    ds_vnode *s = spot_medium(x, &m);
    char why[512] = "";
    /* deleting a spot node is allowed (the small's pod fits on the
     * medium); replacing one by spot is not */
    ds_cmd *c = ds_consolidation_decide(m);
    if (c && c->method != TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE)
        fail_msg("replaced with spot-to-spot off: %s", c->why);
    ds_cmd_free(c);
    assert_null(ds_consolidation_evaluate(m, &s, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "spot-to-spot consolidation is off"));
    /* allowed, but a single spot node needs 15 cheaper types: only the
     * small is (0.05 < 0.095 * 0.9) */
    m->spot_to_spot = true;
    assert_null(ds_consolidation_evaluate(m, &s, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "spot-to-spot consolidation needs 15 cheaper instance types, got 1"));
}

static void test_spot_to_spot_keeps_the_15_cheapest(void **state)
{
    fx *x = *state;
    add_spot(x);
    /* 20 more 2-cpu spot-only types, 0.020 .. 0.039 (names sort after t.*) */
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof(name), "u.n%02d", i);
        Tailor__V1__InstanceType *it = tk_type(x->cat, name, 2, 4, 0.5);
        it->offerings[0]->capacity_type = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;
        it->offerings[0]->price_per_hour = 0.039 - 0.001 * i;
    }
    ds_mctx *m;
    ds_vnode *s = spot_medium(x, &m);
    m->spot_to_spot = true;
    char why[512] = "";
    ds_cmd *c = ds_consolidation_evaluate(m, &s, 1, why, sizeof(why));
    if (!c)
        fail_msg("spot medium not replaced: %s", why);
    assert_int_equal(c->nrepl, 1);
    const Tailor__V1__NodeClaim *q = c->repl[0];
    assert_int_equal(q->n_instance_type_options, 15);
    assert_string_equal(q->instance_type_options[0]->name, "u.n19");
    assert_float_equal(q->instance_type_options[0]->price_per_hour, 0.020, 1e-9);
    for (size_t i = 1; i < q->n_instance_type_options; i++)
        assert_true(q->instance_type_options[i - 1]->price_per_hour <= q->instance_type_options[i]->price_per_hour);
    assert_int_equal(req_of(q, "node.kubernetes.io/instance-type")->n_values, 15);
    assert_string_equal(req_of(q, "karpenter.sh/capacity-type")->values[0], "spot");
    ds_cmd_free(c);
}

static void add_cond(Tailor__V1__NodeClaim *c, const char *type, const char *reason)
{
    Tailor__V1__Condition *k = tlr_malloc(sizeof(*k));
    tailor__v1__condition__init(k);
    k->type = tlr_strdup(type);
    k->status = TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE;
    k->reason = tlr_strdup(reason);
    /* Karpenter's SetTrue: reason = type, no message; SetTrueWithReason:
     * the reason as message too */
    k->message = tlr_strdup(strcmp(type, reason) ? reason : "");
    TK_PUSH(c->status->conditions, c->status->n_conditions, k);
}

static const ds_cond_write *cond_write(const ds_cond_writes *w, const char *claim, const char *type)
{
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->v[i].claim, claim) && !strcmp(w->v[i].type, type))
            return &w->v[i];
    return NULL;
}

/* Drifted and Consolidatable as Karpenter's nodeclaim disruption
 * controllers set them: only launched claims drift, only initialized ones
 * past consolidateAfter are consolidatable, stale conditions go, and what
 * the claim already shows is not written again. */
static void test_claim_conditions(void **state)
{
    fx *x = *state;
    Tailor__V1__NodePool *p = pool(x);
    p->hash = tlr_strdup("new-pool");
    p->hash_version = tlr_strdup(DS_HASH_VERSION);
    p->disruption->consolidate_after_ms = 600000;   /* 10 min */
    node(x, "drifted", "medium", (int[]){ 500, 0 });
    claim(x, "drifted")->nodepool_hash = tlr_strdup("old-pool");
    add_cond(claim(x, "drifted"), "Launched", "Launched");
    node(x, "unlaunched", "medium", (int[]){ 500, 0 });
    claim(x, "unlaunched")->nodepool_hash = tlr_strdup("old-pool");
    node(x, "healed", "medium", (int[]){ 500, 0 });
    claim(x, "healed")->nodepool_hash = tlr_strdup("new-pool");
    add_cond(claim(x, "healed"), "Launched", "Launched");
    add_cond(claim(x, "healed"), "Drifted", "NodePoolDrifted");
    add_cond(claim(x, "healed"), "Consolidatable", "Consolidatable");
    Tailor__V1__Node *busy = node(x, "busy", "medium", (int[]){ 500, 0 });
    busy->pods[0]->creation_unix_ms = TK_NOW - 60000;   /* a pod one minute ago */
    ds_mctx *m = ctx(x);
    ds_cond_writes w;
    ds_claimconds_plan(m, &w);

    const ds_cond_write *d = cond_write(&w, "nc-drifted", "Drifted");
    assert_non_null(d);
    assert_true(d->set);
    assert_string_equal(d->reason, "NodePoolDrifted");
    assert_null(cond_write(&w, "nc-unlaunched", "Drifted"));
    d = cond_write(&w, "nc-healed", "Drifted");
    assert_non_null(d);
    assert_false(d->set);
    /* consolidateAfter passed for the hour-old nodes, not for "busy" */
    d = cond_write(&w, "nc-drifted", "Consolidatable");
    assert_non_null(d);
    assert_true(d->set);
    assert_null(cond_write(&w, "nc-healed", "Consolidatable"));   /* already shows it */
    assert_null(cond_write(&w, "nc-busy", "Consolidatable"));
    assert_int_equal(ds_claimconds_apply(&w, &(ds_kube_ops){ 0 }), 0);
    ds_kube_ops k = ds_fake_kube(&x->f);
    ds_claimconds_apply(&w, &k);
    bool removed = false, set = false;
    for (size_t i = 0; i < x->f.ncalls; i++) {
        removed = removed || strstr(x->f.calls[i], "condition nc-healed Drifted=(removed)");
        set = set || strstr(x->f.calls[i], "condition nc-drifted Drifted=True NodePoolDrifted");
    }
    assert_true(removed);
    assert_true(set);
    free(w.v);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_emptiness_within_budget),
        T(test_emptiness_waits_consolidate_after),
        T(test_expiration_is_forceful),
        T(test_consolidation_multi_prefers_bigger_saving),
        T(test_consolidation_replace_cheaper_type),
        T(test_consolidation_multi_replace_fills_a_big_node),
        T(test_no_churn_rules),
        T(test_min_savings_blocks_small_gains),
        T(test_single_node_split),
        T(test_blockers_keep_nodes),
        T(test_when_empty_policy),
        T(test_drift_kinds),
        T(test_ami_drift_rule),
        T(test_drift_budget_one_at_a_time),
        T(test_reduced_simulation_request),
        T(test_reduced_simulation_leaves_unsent_claims_out),
        T(test_consolidation_keeps_zone_spread),
        T(test_consolidation_within_zone_spread),
        T(test_replacement_that_may_be_spot_is_spot),
        T(test_spot_to_spot_is_gated),
        T(test_spot_to_spot_keeps_the_15_cheapest),
        T(test_claim_conditions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
