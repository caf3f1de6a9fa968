/* screen_test.c - the single-node screen (screen.h) on small clusters,
 * with the real solver engine answering Simulate: it passes over a node
 * no replacement can save on, still lets through a node that can be
 * replaced or deleted, counts pod slots and the NodePools' requirements,
 * a claim in flight as room, what at most so many new nodes hold, and on
 * a few hundred random clusters never refuses a node (or a pair) the full
 * evaluation would consolidate. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ds_fake.h"
#include "methods.h"
#include "screen.h"
#include "ds_testkit.h"

typedef struct fx {
    ds_fake f;
    Tailor__V1__Catalog *cat;
    Tailor__V1__SnapshotResponse *snap;   /* built, then handed to the view */
    ds_view *v;
    ds_budgets b;
    ds_sim sim;
    ds_mctx m;
    ds_screen *sc;
    unsigned seq;
} fx;

static void fx_init(fx *x)
{
    memset(x, 0, sizeof(*x));
    ds_fake_init(&x->f);
    x->cat = tk_catalog();
    x->f.catalog = x->cat;
    x->snap = tk_snapshot();
    Tailor__V1__ClusterState *cs = x->snap->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("default", "100%"));
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
}

static void fx_clear(fx *x)
{
    ds_screen_free(x->sc);
    ds_budgets_clear(&x->b);
    ds_view_free(x->v);
    if (!x->v && x->snap)
        protobuf_c_message_free_unpacked(&x->snap->base, NULL);
    ds_fake_clear(&x->f);
    protobuf_c_message_free_unpacked(&x->cat->base, NULL);
}

static int setup(void **state)
{
    fx *x = tlr_malloc(sizeof(*x));
    fx_init(x);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    fx_clear(x);
    free(x);
    return 0;
}

/* A t.<size> node with pods of the given cpu (tk_sized_node). */
static Tailor__V1__Node *node(fx *x, const char *name, const char *size, const int *pods)
{
    return tk_sized_node(x->snap->cluster, name, size, pods);
}

/* Freeze the snapshot into a view, a method context and a screen. */
static ds_mctx *ctx(fx *x)
{
    ds_view_build(x->snap, x->cat, NULL, TK_NOW, &x->v);
    ds_budgets_compute(x->v, &x->b);
    x->sim = (ds_sim){ .v = x->v, .solver = ds_fake_solver(&x->f) };
    x->m = (ds_mctx){ .v = x->v, .b = &x->b, .sim = &x->sim, .min_savings = 0.1, .seq = &x->seq };
    ds_screen_create(x->v, &x->sc);
    return &x->m;
}

static double floor_of(fx *x, const char *name)
{
    ds_vnode *n = ds_view_node(x->v, name);
    assert_non_null(n);
    return ds_screen_floor(x->sc, &n, 1);
}

/* What single_node() compares the floor with. */
static double ceiling_of(fx *x, const char *name)
{
    return ds_view_node(x->v, name)->price * (1.0 - x->m.min_savings) + 1e-9;
}

static void test_passes_over_what_no_replacement_saves_on(void **state)
{
    fx *x = *state;
    /* a large ($0.36) running 5 pods of 1.5 cpu, the other node full: the
     * cheapest cpu is t.xlarge's $0.04375 a core, 7.5 cores at least
     * $0.328, over the $0.324 a replacement may cost */
    node(x, "l", "large", (int[]){ 1500, 1500, 1500, 1500, 1500, 0 });
    node(x, "full", "small", (int[]){ 1950, 0 });
    ds_mctx *m = ctx(x);
    double f = floor_of(x, "l");
    assert_float_equal(f, 7.5 * 0.70 / 16, 1e-9);
    if (!(f > ceiling_of(x, "l")))
        fail_msg("floor $%.4f/h, want above the ceiling $%.4f/h", f, ceiling_of(x, "l"));
    /* the full evaluation agrees */
    char why[512];
    ds_vnode *l = ds_view_node(x->v, "l");
    ds_cmd *c = ds_consolidation_evaluate(m, &l, 1, why, sizeof(why));
    if (c)
        fail_msg("the screen refuses l, the evaluation took it: %s", c->why);
    /* and the pass simulates only the other candidate */
    c = ds_consolidation_decide(m);
    assert_null(c);
    assert_int_equal(m->single_screened, 1);
}

static void test_lets_through_what_can_be_consolidated(void **state)
{
    fx *x = *state;
    /* a large running 3.9 cpu: a t.medium ($0.19) replaces it; a medium
     * running 1 cpu beside a large with room: deleted */
    node(x, "l", "large", (int[]){ 1900, 2000, 0 });
    node(x, "full", "small", (int[]){ 1950, 0 });
    ds_mctx *m = ctx(x);
    assert_true(floor_of(x, "l") <= ceiling_of(x, "l"));
    ds_cmd *c = ds_consolidation_decide(m);
    assert_non_null(c);
    assert_int_equal(c->method, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE);
    assert_string_equal(c->c[0].node, "l");
    assert_string_equal(c->repl[0]->instance_type_options[0]->name, "t.medium");
    assert_int_equal(m->single_screened, 0);
    ds_cmd_free(c);
}

static void test_a_delete_is_never_screened(void **state)
{
    fx *x = *state;
    node(x, "m", "medium", (int[]){ 1000, 0 });
    node(x, "room", "large", (int[]){ 4000, 0 });
    ds_mctx *m = ctx(x);
    assert_float_equal(floor_of(x, "m"), 0, 0);
    char why[512] = "";
    ds_vnode *n = ds_view_node(x->v, "m");
    ds_cmd *c = ds_consolidation_evaluate(m, &n, 1, why, sizeof(why));
    if (!c)
        fail_msg("m not deleted: %s", why);
    assert_int_equal(c->method, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE);
    ds_cmd_free(c);
}

static void test_pod_slots_count(void **state)
{
    fx *x = *state;
    /* room has 12 free cores but no pod slot: it takes none of m's pods */
    node(x, "m", "medium", (int[]){ 900, 900, 900, 900, 0 });
    Tailor__V1__Node *r = node(x, "room", "xlarge", (int[]){ 4000, 0 });
    r->allocatable->pods = 1;
    ctx(x);
    double full = floor_of(x, "m");
    assert_float_equal(full, 3.6 * 0.70 / 16, 1e-9);
    ds_screen_free(x->sc);
    r->allocatable->pods = 110;
    ds_screen_create(x->v, &x->sc);
    assert_float_equal(floor_of(x, "m"), 0, 0);
}

static void test_pool_requirements_rule_types_out(void **state)
{
    fx *x = *state;
    /* an arm64 type at half the price a core: the pool (amd64) cannot
     * have it, so it does not lower the floor; a pool that allows arm64
     * does */
    Tailor__V1__InstanceType *a = tk_type(x->cat, "a.xlarge", 16, 32, 0.35);
    free(a->requirements[1]->values[0]);
    a->requirements[1]->values[0] = tlr_strdup("arm64");
    a->arch = tlr_strdup("arm64");
    node(x, "l", "large", (int[]){ 1500, 1500, 1500, 1500, 1500, 0 });
    ctx(x);
    assert_float_equal(floor_of(x, "l"), 7.5 * 0.70 / 16, 1e-9);
    ds_screen_free(x->sc);
    Tailor__V1__NodeSelectorRequirement *arch = x->v->cs->nodepools[0]->requirements[0];
    arch->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN;
    free(arch->values[0]);
    arch->values[0] = tlr_strdup("s390x");
    ds_screen_create(x->v, &x->sc);
    assert_float_equal(floor_of(x, "l"), 7.5 * 0.35 / 16, 1e-9);
}

static void test_what_new_nodes_can_hold(void **state)
{
    fx *x = *state;
    /* two xlarges of 15 cores each, the only nodes: one new node (16
     * cores at most) cannot hold both; four can hold one's */
    node(x, "a", "xlarge", (int[]){ 3000, 3000, 3000, 3000, 3000, 0 });
    node(x, "b", "xlarge", (int[]){ 3000, 3000, 3000, 3000, 3000, 0 });
    ctx(x);
    ds_vnode *two[2] = { ds_view_node(x->v, "a"), ds_view_node(x->v, "b") };
    assert_false(ds_screen_may_fit(x->sc, two, 2, 1));
    assert_true(ds_screen_may_fit(x->sc, two, 2, 2));
    assert_true(ds_screen_may_fit(x->sc, two, 1, 1));
    char why[512] = "";
    assert_null(ds_consolidation_evaluate(&x->m, two, 2, why, sizeof(why)));
}

static void test_one_new_node_up_to_the_largest(void **state)
{
    fx *x = *state;
    /* a cheaper family, up to 24 cores; seven full t.mediums (3.6 cores
     * each): six fit one u.c24 (21.6 cores) and are replaced by it, all
     * seven (25.2) fit no one node */
    tk_type(x->cat, "u.c12", 12, 24, 0.456);
    tk_type(x->cat, "u.c24", 24, 48, 0.912);
    for (int i = 0; i < 7; i++) {
        char n[16];
        snprintf(n, sizeof(n), "n%d", i);
        node(x, n, "medium", (int[]){ 900, 900, 900, 900, 0 });
    }
    ds_mctx *m = ctx(x);
    ds_vnode *set[7];
    for (int i = 0; i < 7; i++)
        set[i] = &x->v->nodes[i];
    char why[512] = "";
    assert_true(ds_screen_may_fit(x->sc, set, 6, 1));
    ds_cmd *c = ds_consolidation_evaluate(m, set, 6, why, sizeof(why));
    if (!c)
        fail_msg("six mediums not replaced: %s", why);
    assert_string_equal(c->repl[0]->instance_type_options[0]->name, "u.c24");
    ds_cmd_free(c);
    assert_false(ds_screen_may_fit(x->sc, set, 7, 1));
    assert_null(ds_consolidation_evaluate(m, set, 7, why, sizeof(why)));
}

static void test_a_claim_in_flight_is_room(void **state)
{
    fx *x = *state;
    node(x, "l", "large", (int[]){ 1500, 1500, 1500, 1500, 1500, 0 });
    Tailor__V1__NodeClaim *c = tk_claim_for(x->snap->cluster->nodes[0]);
    free(c->name);
    c->name = tlr_strdup("nc-flying");
    c->status->node_name[0] = '\0';
    c->status->provider_id[0] = '\0';
    c->status->allocatable = tk_res(16000, 32 * TK_GIB, 110);
    TK_PUSH(x->snap->cluster->nodeclaims, x->snap->cluster->n_nodeclaims, c);
    ctx(x);
    assert_float_equal(floor_of(x, "l"), 0, 0);
}

/* ---- never refuses what the evaluation takes ----------------------------- */

static void test_never_refuses_what_the_evaluation_takes(void **state)
{
    (void)state;
    static const char *const sizes[] = { "small", "medium", "large", "xlarge" };
    static const int cores[] = { 2, 4, 8, 16 };
    unsigned seed = 16;
    int screened = 0, taken = 0, unfit = 0, taken2 = 0;
    for (int round = 0; round < 300; round++) {
        fx x;
        fx_init(&x);
        int nn = 2 + rand_r(&seed) % 4;
        for (int i = 0; i < nn; i++) {
            /* filled to 70-100% of its cores (the screen's ground: a
             * node about full, the others too), by pods of 0.1 to 3 cores */
            int s = rand_r(&seed) % 4, pods[17] = { 0 }, np = 0, used = 0;
            int target = cores[s] * 10 * (70 + rand_r(&seed) % 31);
            for (int tries = 0; tries < 60 && np < 16; tries++) {
                int c = 100 * (1 + rand_r(&seed) % 30);
                if (used + c > target)
                    continue;
                used += c;
                pods[np++] = c;
            }
            char name[16];
            snprintf(name, sizeof(name), "n%d", i);
            Tailor__V1__Node *n = node(&x, name, sizes[s], pods);
            if (rand_r(&seed) % 5 == 0)
                n->allocatable->pods = n->requested->pods + rand_r(&seed) % 2;
        }
        ds_mctx *m = ctx(&x);
        for (size_t i = 0; i < x.v->nnodes; i++) {
            ds_vnode *c = &x.v->nodes[i];
            if (!c->moving)
                continue;
            double f = ds_screen_floor(x.sc, &c, 1), ceil = c->price * (1.0 - m->min_savings) + 1e-9;
            char why[512];
            ds_cmd *cmd = ds_consolidation_evaluate(m, &c, 1, why, sizeof(why));
            if (cmd && f > ceil * (1 + 1e-9))
                fail_msg("round %d: %s screened out (floor $%.4f/h over $%.4f/h) but evaluated: %s",
                         round, c->node->name, f, ceil, cmd->why);
            if (cmd && !ds_screen_may_fit(x.sc, &c, 1, 4))
                fail_msg("round %d: %s cannot fit, says the screen, but evaluated: %s", round,
                         c->node->name, cmd->why);
            screened += f > ceil * (1 + 1e-9);
            taken += cmd != NULL;
            ds_cmd_free(cmd);
            /* two nodes by at most one (multi-node) */
            for (size_t j = i + 1; j < x.v->nnodes; j++) {
                ds_vnode *two[2] = { c, &x.v->nodes[j] };
                bool may = ds_screen_may_fit(x.sc, two, 2, 1);
                cmd = ds_consolidation_evaluate(m, two, 2, why, sizeof(why));
                if (cmd && !may)
                    fail_msg("round %d: %s and %s cannot fit, says the screen, but evaluated: %s",
                             round, c->node->name, two[1]->node->name, cmd->why);
                unfit += !may;
                taken2 += cmd != NULL;
                ds_cmd_free(cmd);
            }
        }
        fx_clear(&x);
    }
    /* each kind happens, or the test proves nothing */
    if (screened < 20 || taken < 20 || unfit < 20 || taken2 < 20)
        fail_msg("screened %d, taken %d, pairs that cannot fit %d, pairs taken %d: want each at "
                 "least 20", screened, taken, unfit, taken2);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_passes_over_what_no_replacement_saves_on),
        T(test_lets_through_what_can_be_consolidated),
        T(test_a_delete_is_never_screened),
        T(test_pod_slots_count),
        T(test_pool_requirements_rule_types_out),
        T(test_what_new_nodes_can_hold),
        T(test_one_new_node_up_to_the_largest),
        T(test_a_claim_in_flight_is_room),
        cmocka_unit_test(test_never_refuses_what_the_evaluation_takes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
