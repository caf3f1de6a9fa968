/* knapsack_test.c - the integer knapsack against exhaustive enumeration.
 *
 * Random small instances (2-4 dimensions, 2-6 items, bounded counts) are
 * solved by sv_knap_solve and by enumerating every count vector; the
 * optimum must agree, the counts returned must fit and add up to the value
 * reported, "beat" must report only better solutions, and a search cut
 * short by its node budget must still return an upper bound on the
 * optimum.  A few hand cases pin down the boundaries.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "knapsack.h"

#define MAXN 8
#define MAXD 4

typedef struct inst {
    size_t n, D;
    double cap[MAXD], y[MAXD], v[MAXN], r[MAXN * MAXD];
    int kmax[MAXN];
} inst;

static uint64_t rng = 88172645463325252ULL;
static double rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* A y with r_j . y >= v_j for every item: value per unit of the item's
 * largest relative dimension, the way the fractional dual is repaired. */
static void inst_y(inst *p)
{
    for (size_t d = 0; d < p->D; d++)
        p->y[d] = 0;
    for (size_t j = 0; j < p->n; j++) {
        double ry = 0;
        size_t best = 0;
        for (size_t d = 0; d < p->D; d++) {
            ry += p->r[j * MAXD + d] * p->y[d];
            if (p->r[j * MAXD + d] / p->cap[d] > p->r[j * MAXD + best] / p->cap[best])
                best = d;
        }
        if (ry < p->v[j])
            p->y[best] += (p->v[j] - ry) / p->r[j * MAXD + best];
    }
}

static void inst_random(inst *p)
{
    p->n = 2 + (size_t)(rnd() * 5);
    p->D = 2 + (size_t)(rnd() * 3);
    for (size_t d = 0; d < p->D; d++)
        p->cap[d] = 1;
    for (size_t j = 0; j < p->n; j++) {
        for (size_t d = 0; d < p->D; d++)
            p->r[j * MAXD + d] = 0.05 + rnd() * 0.6;
        p->v[j] = 0.1 + rnd();
        p->kmax[j] = 1 + (int)(rnd() * 5);
    }
    inst_y(p);
}

static bool fits(const inst *p, const int *k)
{
    for (size_t d = 0; d < p->D; d++) {
        double s = 0;
        for (size_t j = 0; j < p->n; j++)
            s += k[j] * p->r[j * MAXD + d];
        if (s > p->cap[d] * (1 + 1e-9) + 1e-12)
            return false;
    }
    return true;
}

static double value(const inst *p, const int *k)
{
    double s = 0;
    for (size_t j = 0; j < p->n; j++)
        s += k[j] * p->v[j];
    return s;
}

/* The optimum by enumerating every count vector. */
static double brute(const inst *p)
{
    int k[MAXN] = {0};
    double best = 0;
    for (;;) {
        if (fits(p, k) && value(p, k) > best)
            best = value(p, k);
        size_t j = 0;
        while (j < p->n && ++k[j] > p->kmax[j])
            k[j++] = 0;
        if (j == p->n)
            return best;
    }
}

static sv_knap_in in_of(const inst *p, long budget, double beat)
{
    sv_knap_in in = { .D = p->D, .cap = p->cap, .y = p->y, .n = p->n, .v = p->v, .r = p->r,
                      .stride = MAXD, .kmax = p->kmax, .budget = budget, .beat = beat, .gap = 1e-9,
                      .swaps = true };
    return in;
}

static void test_random_exact(void **state)
{
    (void)state;
    sv_knap *k;
    sv_knap_create(&k);
    int bad = 0;
    for (int t = 0; t < 400; t++) {
        inst p;
        inst_random(&p);
        double want = brute(&p);
        sv_knap_in in = in_of(&p, 1000000, 0);
        int cnt[MAXN];
        sv_knap_out o;
        sv_knap_solve(k, &in, cnt, &o);
        bool ok = o.exact && fabs(o.value - want) <= 1e-7 * (want > 1 ? want : 1) && fits(&p, cnt) &&
                  fabs(value(&p, cnt) - o.value) <= 1e-9 && o.upper >= want - 1e-9;
        for (size_t j = 0; j < p.n; j++)
            ok = ok && cnt[j] >= 0 && cnt[j] <= p.kmax[j];
        if (!ok) {
            fprintf(stderr, "instance %d (n=%zu D=%zu): want %.9f, got %.9f (exact %d, upper %.9f, fits %d)\n",
                    t, p.n, p.D, want, o.value, o.exact, o.upper, fits(&p, cnt));
            bad++;
        }
    }
    sv_knap_free(k);
    assert_int_equal(bad, 0);
}

/* beat: only a solution worth more counts; none is reported when the
 * optimum does not exceed it, and then upper still bounds the optimum. */
static void test_beat(void **state)
{
    (void)state;
    sv_knap *k;
    sv_knap_create(&k);
    int bad = 0;
    for (int t = 0; t < 200; t++) {
        inst p;
        inst_random(&p);
        double opt = brute(&p);
        double beat = opt * (t % 2 ? 1.01 : 0.97);
        sv_knap_in in = in_of(&p, 1000000, beat);
        int cnt[MAXN];
        sv_knap_out o;
        sv_knap_solve(k, &in, cnt, &o);
        bool ok;
        if (opt > beat)
            ok = fabs(o.value - opt) <= 1e-7 * (opt > 1 ? opt : 1) && fits(&p, cnt);
        else
            ok = o.value == 0 && value(&p, cnt) == 0 && o.upper >= opt - 1e-9;
        if (!ok) {
            fprintf(stderr, "instance %d: opt %.9f beat %.9f: got value %.9f upper %.9f\n", t, opt, beat,
                    o.value, o.upper);
            bad++;
        }
    }
    sv_knap_free(k);
    assert_int_equal(bad, 0);
}

/* A budget of one node cannot finish a hard instance: not exact, and the
 * upper bound it reports is still at least the optimum. */
static void test_budget(void **state)
{
    (void)state;
    sv_knap *k;
    sv_knap_create(&k);
    int unfinished = 0, bad = 0;
    for (int t = 0; t < 200; t++) {
        inst p;
        inst_random(&p);
        double opt = brute(&p);
        sv_knap_in in = in_of(&p, 1, 0);
        int cnt[MAXN];
        sv_knap_out o;
        sv_knap_solve(k, &in, cnt, &o);
        unfinished += !o.exact;
        if (o.upper < opt - 1e-9 || o.value > opt + 1e-9 || !fits(&p, cnt)) {
            fprintf(stderr, "instance %d: opt %.9f, got value %.9f upper %.9f\n", t, opt, o.value, o.upper);
            bad++;
        }
    }
    sv_knap_free(k);
    assert_int_equal(bad, 0);
    assert_true(unfinished > 0);
}

/* Hand cases: nothing fits; one item limited by its count; two shapes
 * that only fill the bin together. */
static void test_hand(void **state)
{
    (void)state;
    sv_knap *k;
    sv_knap_create(&k);
    int cnt[MAXN];
    sv_knap_out o;
    inst p = { .n = 1, .D = 2, .cap = { 1, 1 }, .v = { 1 }, .r = { 1.5, 0.1 }, .kmax = { 3 } };
    inst_y(&p);
    sv_knap_in in = in_of(&p, 1000, 0);
    sv_knap_solve(k, &in, cnt, &o);
    assert_true(o.exact);
    assert_true(o.value == 0 && cnt[0] == 0);

    inst q = { .n = 1, .D = 2, .cap = { 1, 1 }, .v = { 2 }, .r = { 0.1, 0.1 }, .kmax = { 3 } };
    inst_y(&q);
    in = in_of(&q, 1000, 0);
    sv_knap_solve(k, &in, cnt, &o);
    assert_int_equal(cnt[0], 3);
    assert_true(fabs(o.value - 6) < 1e-9);

    /* A = (0.6, 0.2), B = (0.2, 0.6), value 1 each: A+B fits (0.8, 0.8),
     * two of either does not (1.2 in one dimension); the relaxation would
     * take 1.25 of each. */
    inst w = { .n = 2, .D = 2, .cap = { 1, 1 }, .v = { 1, 1 }, .r = { 0.6, 0.2, 0, 0, 0.2, 0.6 },
               .kmax = { 5, 5 } };
    w.r[MAXD + 0] = 0.2;
    w.r[MAXD + 1] = 0.6;
    inst_y(&w);
    in = in_of(&w, 1000, 0);
    sv_knap_solve(k, &in, cnt, &o);
    assert_true(o.exact);
    assert_int_equal(cnt[0], 1);
    assert_int_equal(cnt[1], 1);
    assert_true(fabs(o.value - 2) < 1e-9);
    sv_knap_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_exact),
        cmocka_unit_test(test_beat),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
