/* simulate_test.c - tlr_simulate: delete-only and replace probes.
 *
 * Table-driven: each case builds a cluster with the testkit, removes some
 * nodes and checks feasibility, where the moved pods went, the number of
 * replacements and the costs before and after.  The zone spread cases
 * are what consolidation must get right: the removed nodes' pods no
 * longer count in their zones, and each moved pod is placed against the
 * counts on the nodes that stay, as kube-scheduler's PodTopologySpread
 * filter sees them when the evicted pod comes back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "solve_testkit.h"
#include "tlr_err.h"

typedef struct scase {
    const char *name;
    void (*build)(Tailor__V1__SolveRequest *r);
    const char *remove[3];
    bool allow_replacement;
    int max_replacements;
    bool want_feasible;
    int want_replacements;
    const char *pod;          /* a moved pod to locate, or NULL */
    const char *want_where;   /* "node:N", "replacement", "error:S" */
    bool want_savings;        /* savings_per_hour > 0 */
} scase;

/* Two 4-cpu nodes, each with one 1-cpu pod. */
static void b_two_light(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_node_pod(tk_node(r, "n1", "test-1a", 4000, 8), "a", 1000, 1024);
    tk_node_pod(tk_node(r, "n2", "test-1a", 4000, 8), "b", 1000, 1024);
}

/* Two 4-cpu nodes, each 3 cpu full: neither can take the other's pod. */
static void b_two_full(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_node_pod(tk_node(r, "n1", "test-1a", 4000, 8), "a", 3000, 1024);
    tk_node_pod(tk_node(r, "n2", "test-1a", 4000, 8), "b", 3000, 1024);
}

/* One big 16-cpu node with a 1-cpu pod, one small 4-cpu node nearly full. */
static void b_oversized(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    tk_node_pod(tk_node(r, "big", "test-1a", 16000, 32), "lonely", 1000, 1024);
    tk_node_pod(tk_node(r, "small", "test-1a", 4000, 8), "busy", 3500, 1024);
}

/* The moved pod is anti-affine to the pod on the only other node. */
static void b_anti(Tailor__V1__SolveRequest *r)
{
    b_two_light(r);
    Tailor__V1__Pod *a = r->cluster->nodes[0]->pods[0];
    tk_pod_label(r->cluster->nodes[1]->pods[0], "app", "x");
    tk_pod_podaff(a, true, K_HOST, "app", "x");
}

/* Zone spread {maxSkew 1, DoNotSchedule, app=web} over test-1a/b/c
 * (every type offered in all three): web pod `name` on node n. */
static void web(Tailor__V1__Node *n, const char *name)
{
    Tailor__V1__Pod *p = tk_node_pod(n, name, 500, 512);
    tk_pod_label(p, "app", "web");
    tk_pod_spread(p, K_ZONE, 1, false, "app", "web");
}

static void three_zones(Tailor__V1__SolveRequest *r)
{
    tk_ladder(r);
    tk_pool(r, "default", 0);
    Tailor__V1__Catalog *c = r->catalogs[0]->catalog;
    for (size_t i = 0; i < c->n_instance_types; i++)
        tk_offer(c->instance_types[i], "test-1c", TK_OD, c->instance_types[i]->offerings[0]->price_per_hour, true);
}

/* web 2/2/1 over a/b/c, one node per zone: c's pod would fit on a or b,
 * but zone c (the pool launches there) would then hold 0 against 3. */
static void b_spread_last_of_zone(Tailor__V1__SolveRequest *r)
{
    three_zones(r);
    Tailor__V1__Node *a = tk_node(r, "na", "test-1a", 4000, 8), *b = tk_node(r, "nb", "test-1b", 4000, 8);
    Tailor__V1__Node *c = tk_node(r, "nc", "test-1c", 4000, 8);
    web(a, "w1");
    web(a, "w2");
    web(b, "w3");
    web(b, "w4");
    web(c, "w5");
}

/* web 2/1/1 with zone a on two nodes: a's second node's pod joins its
 * first (a: 2, b: 1, c: 1). */
static void b_spread_within_skew(Tailor__V1__SolveRequest *r)
{
    three_zones(r);
    Tailor__V1__Node *a1 = tk_node(r, "na1", "test-1a", 4000, 8), *a2 = tk_node(r, "na2", "test-1a", 4000, 8);
    web(a1, "w1");
    web(a2, "w2");
    web(tk_node(r, "nb", "test-1b", 4000, 8), "w3");
    web(tk_node(r, "nc", "test-1c", 4000, 8), "w4");
}

/* web 2/2/2, zone c's two pods on one node, an empty node in c and one in
 * a with room: both evicted pods must go to c's other node, one after the
 * other (the first may not tip a: 3 against c: 1). */
static void b_spread_two_evicted(Tailor__V1__SolveRequest *r)
{
    three_zones(r);
    Tailor__V1__Node *a = tk_node(r, "na", "test-1a", 8000, 16), *b = tk_node(r, "nb", "test-1b", 4000, 8);
    Tailor__V1__Node *c = tk_node(r, "nc", "test-1c", 4000, 8);
    tk_node(r, "nc2", "test-1c", 4000, 8);
    web(a, "w1");
    web(a, "w2");
    web(b, "w3");
    web(b, "w4");
    web(c, "w5");
    web(c, "w6");
}

static const scase cases[] = {
    { "delete-only: the pod fits elsewhere", b_two_light, { "n2" }, false, 0, true, 0, "b", "node:n1", true },
    { "delete-only: no room elsewhere", b_two_full, { "n2" }, false, 0, false, 0, "b", "error:not allowed", false },
    { "replace: one cheaper node", b_oversized, { "big" }, true, 0, true, 1, "lonely", "replacement", true },
    { "replace refused: delete-only asked", b_oversized, { "big" }, false, 0, false, 0, "lonely", "error:", false },
    { "two nodes into one replacement", b_two_full, { "n1", "n2" }, true, 1, true, 1, "a", "replacement", true },
    { "anti-affinity blocks the only other node", b_anti, { "n1" }, false, 0, false, 0, "a", "error:", false },
    { "zone spread: a zone's last pod cannot leave it", b_spread_last_of_zone, { "nc" }, false, 0, false, 0, "w5",
      "error:", false },
    { "zone spread: replaced in its zone", b_spread_last_of_zone, { "nc" }, true, 1, true, 1, "w5", "replacement",
      true },
    { "zone spread: moved within skew", b_spread_within_skew, { "na2" }, false, 0, true, 0, "w2", "node:na1", true },
    { "zone spread: two evicted pods stay in their zone", b_spread_two_evicted, { "nc" }, false, 0, true, 0, "w6",
      "node:nc2", true },
};

static int run(const scase *c, tlr_solve_strategy st)
{
    Tailor__V1__SolveRequest *base = tk_new();
    c->build(base);
    Tailor__V1__SimulateRequest req = TAILOR__V1__SIMULATE_REQUEST__INIT;
    req.cluster = base->cluster;
    req.catalogs = base->catalogs;
    req.n_catalogs = base->n_catalogs;
    req.now_unix_ms = base->now_unix_ms;
    req.remove_node_names = (char **)c->remove;
    while (req.n_remove_node_names < 3 && c->remove[req.n_remove_node_names])
        req.n_remove_node_names++;
    req.allow_replacement = c->allow_replacement;
    req.max_replacements = c->max_replacements;
    tlr_solve_opts o = { .strategy = st };
    Tailor__V1__SimulateResponse *s = NULL;
    int bad = 0;
    const char *sn = st == TLR_SOLVE_TAILOR ? "tailor" : st == TLR_SOLVE_FFD ? "ffd" : "karpenter";
    if (tlr_simulate(&req, &o, &s) != TLR_OK) {
        fprintf(stderr, "%s (%s): tlr_simulate failed\n", c->name, sn);
        bad = 1;
        goto out;
    }
    if (s->feasible != c->want_feasible) {
        fprintf(stderr, "%s (%s): feasible: want %d, got %d\n", c->name, sn, c->want_feasible, s->feasible);
        bad++;
    }
    if ((int)s->n_replacements != c->want_replacements) {
        fprintf(stderr, "%s (%s): replacements: want %d, got %zu\n", c->name, sn, c->want_replacements,
                s->n_replacements);
        bad++;
    }
    double before = 0;
    for (size_t i = 0; i < base->cluster->n_nodes; i++)
        for (size_t j = 0; j < req.n_remove_node_names; j++)
            if (!strcmp(base->cluster->nodes[i]->name, c->remove[j]))
                before += base->cluster->nodes[i]->price_per_hour;
    if (s->cost_before_per_hour < before - 1e-9 || s->cost_before_per_hour > before + 1e-9 ||
        (s->savings_per_hour > 1e-9) != c->want_savings) {
        fprintf(stderr, "%s (%s): cost before %g (want %g), savings %g (want %s)\n", c->name, sn,
                s->cost_before_per_hour, before, s->savings_per_hour, c->want_savings ? "> 0" : "<= 0");
        bad++;
    }
    if (c->pod) {
        const char *where = NULL;
        for (size_t i = 0; i < s->n_placements; i++)
            if (!strcmp(s->placements[i]->pod_uid, c->pod))
                where = s->placements[i]->node_name;
        bool in_repl = false;
        for (size_t i = 0; i < s->n_replacements; i++)
            for (size_t j = 0; j < s->replacements[i]->n_planned_pod_uids; j++)
                in_repl |= !strcmp(s->replacements[i]->planned_pod_uids[j], c->pod);
        const Tailor__V1__PodError *e = NULL;
        for (size_t i = 0; i < s->n_pod_errors; i++)
            if (!strcmp(s->pod_errors[i]->pod_uid, c->pod))
                e = s->pod_errors[i];
        bool ok;
        if (!strncmp(c->want_where, "node:", 5))
            ok = where && !strcmp(where, c->want_where + 5);
        else if (!strcmp(c->want_where, "replacement"))
            ok = in_repl;
        else
            ok = e && strstr(tk_reasons(e), c->want_where + 6);
        if (!ok) {
            fprintf(stderr, "%s (%s): pod %s: want %s, got %s%s%s\n", c->name, sn, c->pod, c->want_where,
                    where ? where : "", in_repl ? "replacement" : "", e ? tk_reasons(e) : "");
            bad++;
        }
    }
out:
    tlr_simulate_response_free(s);
    tk_free(base);
    return bad;
}

static void test_simulate(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bad += run(&cases[i], TLR_SOLVE_TAILOR);
        bad += run(&cases[i], TLR_SOLVE_KARPENTER);
        bad += run(&cases[i], TLR_SOLVE_FFD);
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simulate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
