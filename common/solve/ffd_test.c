/* ffd_test.c - first-fit decreasing (TLR_SOLVE_FFD) and the portfolio's
 * promise built on it: tailor's plan never costs more than the plain
 * packer's (issue 16).
 *
 * What a user notices: FFD takes the largest pods first and puts each in
 * the first node that holds it, the oldest claim first; every node is
 * launched as its cheapest type that holds its pods; its plans pass the
 * independent checker (tlr_plancheck.h) with zone spreads (maxSkew,
 * minDomains, matchLabelKeys, ScheduleAnyway); and where tailor's own
 * packing is dearer than FFD's, tailor returns a plan as cheap as FFD's.
 * Topology cases on other keys run FFD in solve_topo_test.c, minValues in
 * solve_minvalues_test.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "solve_testkit.h"
#include "tlr_err.h"

#define SPOT 0.4   /* the testkit's spot price: 40 % of on-demand */

static Tailor__V1__SolveResponse *solve(const Tailor__V1__SolveRequest *req, tlr_solve_strategy st, bool no_ffd)
{
    tlr_solve_opts o = { .strategy = st, .replica_id = "test", .no_lower_bound = true, .no_ffd = no_ffd };
    Tailor__V1__SolveResponse *s = NULL;
    assert_int_equal(tlr_solve(req, &o, &s), TLR_OK);
    assert_non_null(s);
    return s;
}

static double options_sum(const Tailor__V1__SolveResponse *s)
{
    double sum = 0;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++)
        sum += s->new_nodeclaims[i]->instance_type_options[0]->price_per_hour;
    return sum;
}

/* The ladder (s.N: N cpu, 2N GiB, 0.05 $/h per cpu on demand); pods of
 * 6, 6, 6 and 3 cpu, the small one first in the request.  FFD: the three
 * big ones first; the first claim takes two of them (12 of 16 cpu), the
 * third opens a second claim, and the small one goes back into the first
 * claim (15 cpu), not into the emptier second one as the baseline's
 * fewest-pods-first order would have it.  The second claim is launched as
 * s.8, the cheapest type holding 6 cpu; the first as s.16. */
static void test_first_fit_decreasing(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    tk_ladder(req);
    tk_pool(req, "default", 0);
    tk_pod(req, "small", 3000, 100);
    tk_pod(req, "big-1", 6000, 100);
    tk_pod(req, "big-2", 6000, 100);
    tk_pod(req, "big-3", 6000, 100);
    Tailor__V1__SolveResponse *s = solve(req, TLR_SOLVE_FFD, false);
    assert_int_equal(s->n_pod_errors, 0);
    assert_int_equal(s->n_new_nodeclaims, 2);
    int first = tk_claim_of(s, "big-1"), second = tk_claim_of(s, "big-3");
    assert_true(first >= 0 && second >= 0 && first != second);
    assert_int_equal(tk_claim_of(s, "big-2"), first);
    assert_int_equal(tk_claim_of(s, "small"), first);
    const Tailor__V1__NodeClaim *a = s->new_nodeclaims[first], *b = s->new_nodeclaims[second];
    assert_int_equal(b->n_planned_pod_uids, 1);
    assert_string_equal(a->instance_type_options[0]->name, "s.16");
    assert_string_equal(b->instance_type_options[0]->name, "s.8");
    assert_true(fabs(b->instance_type_options[0]->price_per_hour - 8 * 0.05 * SPOT) < 1e-9);
    /* the cheapest option first; no option too small for the pods */
    for (size_t i = 1; i < b->n_instance_type_options; i++) {
        assert_true(b->instance_type_options[i]->price_per_hour >= b->instance_type_options[0]->price_per_hour);
        assert_true(strcmp(b->instance_type_options[i]->name, "s.1") && strcmp(b->instance_type_options[i]->name, "s.2") &&
                    strcmp(b->instance_type_options[i]->name, "s.4"));
    }
    assert_true(fabs(s->total_cost_per_hour - (16 + 8) * 0.05 * SPOT) < 1e-9);
    assert_true(fabs(s->total_cost_per_hour - options_sum(s)) < 1e-9);
    assert_int_equal(tk_check(req, s), 0);
    tlr_solve_response_free(s);

    /* The baseline on the same pods: the small pod joins the emptier claim,
     * which then needs s.16 too. */
    s = solve(req, TLR_SOLVE_KARPENTER, false);
    assert_int_equal(tk_claim_of(s, "small"), tk_claim_of(s, "big-3"));
    assert_true(s->total_cost_per_hour > (16 + 8) * 0.05 * SPOT + 1e-9);
    tlr_solve_response_free(s);
    tk_free(req);
}

/* Three families c (2 GiB per cpu), m (4) and r (8) of 2, 4, 8 and 16
 * cpu; a cpu costs 0.04 and a GiB 0.005 on demand. */
static void b_families(Tailor__V1__SolveRequest *req)
{
    static const char *const fam[3] = { "c", "m", "r" };
    static const int ratio[3] = { 2, 4, 8 }, sz[4] = { 2, 4, 8, 16 };
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < 4; i++) {
            char n[16];
            snprintf(n, sizeof n, "%s.%d", fam[f], sz[i]);
            tk_type(req, n, sz[i], ratio[f] * sz[i], 0.04 * sz[i] + 0.005 * ratio[f] * sz[i]);
        }
}

static void spread_pod(Tailor__V1__SolveRequest *req, const char *name, int64_t cpu_m, int64_t mem_mib,
                       int skew, bool soft)
{
    Tailor__V1__Pod *p = tk_pod(req, name, cpu_m, mem_mib);
    tk_pod_label(p, "app", "web");
    tk_pod_spread(p, K_ZONE, skew, soft, "app", "web");
}

/* Five pods on the ladder: 3.75, 2.75, 2, 1 and 1 cpu (10.5 in all). */
static void b_ladder_five(Tailor__V1__SolveRequest *req)
{
    tk_ladder(req);
    tk_pool(req, "default", 0);
    tk_pod(req, "p0", 1000, 1280);
    tk_pod(req, "p1", 2750, 3840);
    tk_pod(req, "p2", 3750, 1280);
    tk_pod(req, "p3", 1000, 3584);
    tk_pod(req, "p4", 2000, 256);
}

/* Four pods, three with zone spreads (two ScheduleAnyway), on the
 * families. */
static void b_zone_four(Tailor__V1__SolveRequest *req)
{
    b_families(req);
    tk_pool(req, "default", 0);
    spread_pod(req, "p0", 2250, 3328, 1, true);
    spread_pod(req, "p1", 3000, 5632, 1, true);
    spread_pod(req, "p2", 1750, 1024, 1, false);
    tk_pod(req, "p3", 1750, 1536);
}

typedef struct pcase {
    const char *name;
    void (*build)(Tailor__V1__SolveRequest *req);
} pcase;

/* Small batches where tailor's packing alone (its greedy, re-priced and
 * LP-guided plans and the baseline's) costs more than FFD's: the
 * portfolio returns a plan as cheap as FFD's, and a valid one. */
static void test_portfolio_keeps_ffd(void **state)
{
    (void)state;
    static const pcase cases[] = {
        { "ladder, five pods", b_ladder_five },
        { "zone spreads, four pods", b_zone_four },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Tailor__V1__SolveRequest *req = tk_new();
        cases[i].build(req);
        Tailor__V1__SolveResponse *f = solve(req, TLR_SOLVE_FFD, false);
        Tailor__V1__SolveResponse *alone = solve(req, TLR_SOLVE_TAILOR, true);
        Tailor__V1__SolveResponse *t = solve(req, TLR_SOLVE_TAILOR, false);
        assert_int_equal(f->n_pod_errors + alone->n_pod_errors + t->n_pod_errors, 0);
        double cf = f->total_cost_per_hour, ca = alone->total_cost_per_hour, ct = t->total_cost_per_hour;
        if (!(ca > cf + 1e-9))
            fail_msg("%s: the case needs tailor alone dearer than FFD: got tailor alone %.4f, FFD %.4f",
                     cases[i].name, ca, cf);
        if (fabs(ct - cf) > 1e-9)
            fail_msg("%s: tailor: want FFD's cost %.4f, got %.4f", cases[i].name, cf, ct);
        assert_true(fabs(ct - options_sum(t)) < 1e-9);
        assert_int_equal(tk_check(req, f), 0);
        assert_int_equal(tk_check(req, t), 0);
        tlr_solve_response_free(f);
        tlr_solve_response_free(alone);
        tlr_solve_response_free(t);
        tk_free(req);
    }
}

static uint64_t rng(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* A workload like issue 16's: about 110 pods in Deployments whose pods
 * spread over the zones (maxSkew 1 or 2, some with minDomains 2, some
 * ScheduleAnyway, matchLabelKeys pod-template-hash so each rollout counts
 * alone), plus pods with no constraint; three zones, families c/m/r. */
static void b_deployments(Tailor__V1__SolveRequest *req, uint64_t seed)
{
    b_families(req);
    Tailor__V1__Catalog *c = tk_catalog(req);
    for (size_t i = 0; i < c->n_instance_types; i++) {
        double od = c->instance_types[i]->offerings[0]->price_per_hour;
        tk_offer(c->instance_types[i], "test-1c", TK_OD, od, true);
        tk_offer(c->instance_types[i], "test-1c", TK_SPOT, od * SPOT, true);
    }
    tk_pool(req, "default", 0);
    int pods = 0;
    for (int d = 0; pods < 110; d++) {
        char app[16], hash[16];
        snprintf(app, sizeof app, "app-%d", d);
        snprintf(hash, sizeof hash, "h%d", (int)(rng(&seed) % 2));
        int n = 2 + (int)(rng(&seed) % 14);
        int64_t cpu = 250 * (1 + (int64_t)(rng(&seed) % 12)), mem = 256 * (1 + (int64_t)(rng(&seed) % 24));
        int kind = (int)(rng(&seed) % 4);   /* 0: none, 1: hard, 2: hard + minDomains, 3: ScheduleAnyway */
        int skew = 1 + (int)(rng(&seed) % 2);
        for (int i = 0; i < n; i++, pods++) {
            char name[32];
            snprintf(name, sizeof name, "%s-%d", app, i);
            Tailor__V1__Pod *p = tk_pod(req, name, cpu, mem);
            tk_pod_label(p, "app", app);
            tk_pod_label(p, "pod-template-hash", hash);
            if (!kind)
                continue;
            tk_pod_spread(p, K_ZONE, skew, kind == 3, "app", app);
            Tailor__V1__TopologySpreadConstraint *t = p->topology_spread_constraints[0];
            if (kind == 2)
                t->min_domains = 2;
            TK_PUSH(t->match_label_keys, t->n_match_label_keys, tk_s("pod-template-hash"));
        }
    }
}

/* On zone-spread workloads FFD's plans are valid, and tailor's never cost
 * more. */
static void test_zone_spreads(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_deployments(req, seed * 0x9e3779b97f4a7c15ULL);
        Tailor__V1__SolveResponse *f = solve(req, TLR_SOLVE_FFD, false);
        Tailor__V1__SolveResponse *t = solve(req, TLR_SOLVE_TAILOR, false);
        if (f->n_pod_errors || t->n_pod_errors)
            fail_msg("seed %d: pods left out: FFD %zu, tailor %zu", (int)seed, f->n_pod_errors, t->n_pod_errors);
        if (tk_check(req, f) || tk_check(req, t))
            fail_msg("seed %d: the plan checker found violations (above)", (int)seed);
        if (t->total_cost_per_hour > f->total_cost_per_hour * (1 + 1e-9))
            fail_msg("seed %d: tailor %.4f costs more than FFD %.4f", (int)seed, t->total_cost_per_hour,
                     f->total_cost_per_hour);
        tlr_solve_response_free(f);
        tlr_solve_response_free(t);
        tk_free(req);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_fit_decreasing),
        cmocka_unit_test(test_portfolio_keeps_ffd),
        cmocka_unit_test(test_zone_spreads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
