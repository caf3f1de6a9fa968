/* knapsack.c - bounded integer multi-dimensional knapsack by LP-based
 * branch and bound (see knapsack.h for the problem).
 *
 * Each node of the search is a box lo <= k <= hi of integer counts.  Its
 * linear relaxation (max v.x over R x <= cap, lo <= x <= hi) is solved by
 * a dense primal simplex with bounded variables over the D capacity rows
 * (a variable at its upper bound is substituted by hi - x, "flipped"), so
 * a node costs a few pivots of O(D n).  A relaxation no better than the
 * best solution found cuts the node; an integral one is a solution.
 * Otherwise the node is split on a fractional count x_j into k_j >=
 * ceil(x_j) (searched first) and k_j <= floor(x_j).  At every node the
 * relaxation's solution, rounded down and completed greedily in order of
 * efficiency v_j / (r_j . y), offers a solution too, so good incumbents
 * come early.  At most D counts are fractional in a basic solution,
 * which keeps the tree small when D is small.
 *
 * Every cut uses a relaxation of the node, so a search that finishes is
 * exact (up to the relative margin KN_CUT used against rounding).  One
 * that spends its node budget returns the best found and, as its upper
 * bound, the root relaxation's value.
 */
#include "knapsack.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"

#define KN_MAXD 32
#define KN_TOL  1e-9
#define KN_CUT  1e-7    /* relative margin before a bound may cut */
#define KN_INT  1e-7    /* distance to an integer that counts as integral */
#define KN_LP_ITERS 256

struct sv_knap {
    size_t cap_n;
    size_t *ord;            /* items by efficiency */
    double *eff;
    int *lo, *hi;           /* the current node's box */
    int *best, *trial;
    double *x;              /* the node relaxation's solution */
    double *T;              /* LP tableau */
    size_t tcap;
    size_t *basis;
    unsigned char *flip;
    unsigned char *isbasic;
    size_t *fcol;           /* LP column -> item */
    size_t nf;
    int *fix;               /* stack of (item, lo, hi) to restore */
    size_t nfix, fixcap;
    /* per call */
    const sv_knap_in *in;
    double best_v;
    double gap;
    bool swaps;
    long nodes;
    bool stopped;
};

void sv_knap_create(sv_knap **out)
{
    *out = tlr_calloc(1, sizeof(sv_knap));
}

void sv_knap_free(sv_knap *k)
{
    if (!k)
        return;
    free(k->ord);
    free(k->eff);
    free(k->lo);
    free(k->hi);
    free(k->best);
    free(k->trial);
    free(k->x);
    free(k->T);
    free(k->basis);
    free(k->flip);
    free(k->isbasic);
    free(k->fcol);
    free(k->fix);
    free(k);
}

static void knap_reserve(sv_knap *k, size_t n)
{
    if (n + 1 <= k->cap_n)
        return;
    size_t c = (n + 1) * 2;
    k->ord = tlr_realloc(k->ord, c * sizeof(size_t));
    k->eff = tlr_realloc(k->eff, c * sizeof(double));
    k->lo = tlr_realloc(k->lo, c * sizeof(int));
    k->hi = tlr_realloc(k->hi, c * sizeof(int));
    k->best = tlr_realloc(k->best, c * sizeof(int));
    k->trial = tlr_realloc(k->trial, c * sizeof(int));
    k->x = tlr_realloc(k->x, c * sizeof(double));
    k->flip = tlr_realloc(k->flip, c + KN_MAXD);
    k->isbasic = tlr_realloc(k->isbasic, c + KN_MAXD);
    k->fcol = tlr_realloc(k->fcol, c * sizeof(size_t));
    k->basis = tlr_realloc(k->basis, (KN_MAXD + 1) * sizeof(size_t));
    k->cap_n = c;
}

static int eff_cmp(const void *a, const void *b, void *ctx)
{
    const sv_knap *k = ctx;
    size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
    double x = k->eff[ia], y = k->eff[ib];
    if (x != y)
        return x > y ? -1 : 1;
    double vx = k->in->v[ia], vy = k->in->v[ib];
    if (vx != vy)
        return vx > vy ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

static const double *item_r(const sv_knap *k, size_t j)
{
    return k->in->r + j * k->in->stride;
}

/* The node's relaxation: max v.x over R x <= c, lo <= x <= hi.  Returns
 * -1 when infeasible (lo does not fit), 0 when the simplex did not reach
 * the optimum, 1 with *val the optimum and k->x its solution. */
static int knap_lp(sv_knap *k, double *val)
{
    const sv_knap_in *in = k->in;
    size_t D = in->D, n = in->n;
    double c[KN_MAXD];
    double base = 0;
    for (size_t d = 0; d < D; d++)
        c[d] = in->cap[d];
    /* Only the counts still free are columns: a fixed one is a constant. */
    size_t nf = 0;
    for (size_t j = 0; j < n; j++) {
        if (k->hi[j] > k->lo[j])
            k->fcol[nf++] = j;
        if (!k->lo[j])
            continue;
        const double *r = item_r(k, j);
        for (size_t d = 0; d < D; d++)
            c[d] -= k->lo[j] * r[d];
        base += k->lo[j] * in->v[j];
    }
    k->nf = nf;
    for (size_t d = 0; d < D; d++) {
        if (c[d] < -KN_TOL * (in->cap[d] > 1 ? in->cap[d] : 1))
            return -1;
        if (c[d] < 0)
            c[d] = 0;
    }
    size_t W = nf + D + 1;
    size_t need = (D + 1) * W;
    TLR_GROW(k->T, k->tcap, need);
    double *T = k->T;
    memset(T, 0, need * sizeof(double));
    for (size_t d = 0; d < D; d++) {
        for (size_t j = 0; j < nf; j++)
            T[d * W + j] = item_r(k, k->fcol[j])[d];
        T[d * W + nf + d] = 1;
        T[d * W + W - 1] = c[d];
        k->basis[d] = nf + d;
    }
    for (size_t j = 0; j < nf; j++) {
        T[D * W + j] = -in->v[k->fcol[j]];
        k->flip[j] = 0;
    }
    for (int it = 0;; it++) {
        if (it >= KN_LP_ITERS)
            return 0;
        size_t e = SIZE_MAX;
        double most = -1e-12;
        for (size_t j = 0; j < nf + D; j++)
            if (T[D * W + j] < most) {
                most = T[D * W + j];
                e = j;
            }
        if (e == SIZE_MAX)
            break;
        /* Ratio test: a basic variable reaching 0 or its bound, or the
         * entering variable reaching its own bound. */
        double ub_e = e < nf ? (double)(k->hi[k->fcol[e]] - k->lo[k->fcol[e]]) : INFINITY;
        double theta = ub_e;
        size_t r = SIZE_MAX;
        bool to_upper = false;
        for (size_t d = 0; d < D; d++) {
            double a = T[d * W + e];
            double b = T[d * W + W - 1];
            if (a > 1e-12) {
                double q = b / a;
                if (q < theta) {
                    theta = q;
                    r = d;
                    to_upper = false;
                }
            } else if (a < -1e-12 && k->basis[d] < nf) {
                size_t bj = k->fcol[k->basis[d]];
                double ubb = k->hi[bj] - k->lo[bj];
                double q = (ubb - b) / -a;
                if (q < theta) {
                    theta = q;
                    r = d;
                    to_upper = true;
                }
            }
        }
        if (theta == INFINITY)
            return 0;   /* cannot happen: every item uses some capacity */
        if (r == SIZE_MAX) {
            for (size_t d = 0; d <= D; d++) {
                T[d * W + W - 1] -= T[d * W + e] * ub_e;
                T[d * W + e] = -T[d * W + e];
            }
            k->flip[e] ^= 1;
            continue;
        }
        sv_tableau_pivot(T, D + 1, W, r, e);
        size_t leave = k->basis[r];
        k->basis[r] = e;
        if (to_upper) {
            size_t lj = k->fcol[leave];
            double ubl = k->hi[lj] - k->lo[lj];
            for (size_t d = 0; d <= D; d++) {
                T[d * W + W - 1] -= T[d * W + leave] * ubl;
                T[d * W + leave] = -T[d * W + leave];
            }
            k->flip[leave] ^= 1;
        }
    }
    /* The solution, in the original variables. */
    for (size_t j = 0; j < n; j++)
        k->x[j] = k->lo[j];
    for (size_t jc = 0; jc < nf; jc++)
        if (k->flip[jc])
            k->x[k->fcol[jc]] = k->hi[k->fcol[jc]];
    for (size_t d = 0; d < D; d++) {
        size_t jc = k->basis[d];
        if (jc >= nf)
            continue;
        size_t j = k->fcol[jc];
        double b = T[d * W + W - 1];
        k->x[j] = k->flip[jc] ? k->hi[j] - b : k->lo[j] + b;
    }
    *val = base + T[D * W + W - 1];
    return 1;
}

/* A solution from the relaxation: its counts rounded down (within the
 * box), then items added greedily by efficiency while they fit. */
static void knap_round(sv_knap *k)
{
    const sv_knap_in *in = k->in;
    size_t D = in->D, n = in->n;
    double c[KN_MAXD];
    memcpy(c, in->cap, D * sizeof(double));
    double v = 0;
    for (size_t j = 0; j < n; j++) {
        int t = (int)floor(k->x[j] + KN_INT);
        if (t < k->lo[j])
            t = k->lo[j];
        if (t > k->hi[j])
            t = k->hi[j];
        k->trial[j] = t;
        const double *r = item_r(k, j);
        for (size_t d = 0; d < D; d++)
            c[d] -= t * r[d];
        v += t * in->v[j];
    }
    for (size_t d = 0; d < D; d++)
        if (c[d] < -KN_TOL * (in->cap[d] > 1 ? in->cap[d] : 1))
            return;   /* rounding overshot by more than rounding error */
    for (size_t p = 0; p < n; p++) {
        size_t j = k->ord[p];
        const double *r = item_r(k, j);
        int q = k->hi[j] - k->trial[j];
        for (size_t d = 0; d < D && q > 0; d++)
            if (r[d] > 0) {
                double f = floor(c[d] / r[d] * (1 + KN_TOL) + KN_TOL);
                if (f < q)
                    q = f > 0 ? (int)f : 0;
            }
        if (q <= 0)
            continue;
        k->trial[j] += q;
        for (size_t d = 0; d < D; d++)
            c[d] -= q * r[d];
        v += q * in->v[j];
    }
    /* At the root, 1-swaps: one copy of an item out, the room refilled
     * greedily, while that gains (a cheap local search that finds much
     * better patterns than the rounding alone when the budget is small). */
    if (k->swaps && k->nodes <= 1) {
        bool improved = true;
        for (int pass = 0; pass < 3 && improved; pass++) {
            improved = false;
            for (size_t i = 0; i < n; i++) {
                if (k->trial[i] <= k->lo[i])
                    continue;
                const double *ri = item_r(k, i);
                double c2[KN_MAXD];
                for (size_t d = 0; d < D; d++)
                    c2[d] = c[d] + ri[d];
                double gain = -in->v[i];
                int add[KN_MAXD * 4];
                size_t nadd = 0;
                for (size_t p = 0; p < n && nadd < KN_MAXD * 2; p++) {
                    size_t j = k->ord[p];
                    if (j == i)
                        continue;
                    const double *r = item_r(k, j);
                    int q = k->hi[j] - k->trial[j];
                    for (size_t d = 0; d < D && q > 0; d++)
                        if (r[d] > 0) {
                            double f = floor(c2[d] / r[d] * (1 + KN_TOL) + KN_TOL);
                            if (f < q)
                                q = f > 0 ? (int)f : 0;
                        }
                    if (q <= 0)
                        continue;
                    for (size_t d = 0; d < D; d++)
                        c2[d] -= q * r[d];
                    gain += q * in->v[j];
                    add[nadd * 2] = (int)j;
                    add[nadd * 2 + 1] = q;
                    nadd++;
                }
                if (gain > 1e-12 * (v > 1 ? v : 1)) {
                    k->trial[i]--;
                    for (size_t a = 0; a < nadd; a++)
                        k->trial[add[a * 2]] += add[a * 2 + 1];
                    memcpy(c, c2, D * sizeof(double));
                    v += gain;
                    improved = true;
                }
            }
        }
    }
    if (v > k->best_v) {
        k->best_v = v;
        memcpy(k->best, k->trial, n * sizeof(int));
    }
}

/* Reduced-cost fixing: after the node's relaxation (tableau k->T), a
 * nonbasic count whose reduced profit is -d_j < 0 cannot move more than
 * slack / d_j away from its bound in any solution better than the cut, so
 * its box shrinks to that for the node's subtree (undone by knap_unfix). */
static void knap_fix(sv_knap *k, double slack)
{
    const sv_knap_in *in = k->in;
    size_t D = in->D, nf = k->nf, W = nf + D + 1;
    const double *T = k->T;
    for (size_t jc = 0; jc < nf; jc++)
        k->isbasic[jc] = 0;
    for (size_t d = 0; d < D; d++)
        if (k->basis[d] < nf)
            k->isbasic[k->basis[d]] = 1;
    for (size_t jc = 0; jc < nf; jc++) {
        size_t j = k->fcol[jc];
        if (k->isbasic[jc] || k->hi[j] <= k->lo[j])
            continue;
        double dj = T[D * W + jc];
        if (!(dj > 1e-12))
            continue;
        double f = floor(slack / dj + 1e-9);
        if (f >= (double)(k->hi[j] - k->lo[j]))
            continue;
        int delta = f > 0 ? (int)f : 0;
        TLR_GROW(k->fix, k->fixcap, (k->nfix + 1) * 3);
        k->fix[k->nfix * 3] = (int)j;
        k->fix[k->nfix * 3 + 1] = k->lo[j];
        k->fix[k->nfix * 3 + 2] = k->hi[j];
        k->nfix++;
        if (!k->flip[jc])
            k->hi[j] = k->lo[j] + delta;
        else
            k->lo[j] = k->hi[j] - delta;
    }
}

static void knap_unfix(sv_knap *k, size_t mark)
{
    while (k->nfix > mark) {
        k->nfix--;
        int j = k->fix[k->nfix * 3];
        k->lo[j] = k->fix[k->nfix * 3 + 1];
        k->hi[j] = k->fix[k->nfix * 3 + 2];
    }
}

static void knap_node(sv_knap *k)
{
    const sv_knap_in *in = k->in;
    size_t mark = SIZE_MAX;
    if (k->stopped)
        return;
    if (++k->nodes > in->budget) {
        k->stopped = true;
        return;
    }
    double val;
    int st = knap_lp(k, &val);
    if (st < 0)
        return;
    if (st == 0) {
        /* No optimum in reach (numerics): split the first open count. */
        for (size_t j = 0; j < in->n; j++)
            if (k->hi[j] > k->lo[j]) {
                k->x[j] = k->lo[j] + 0.5;
                break;
            }
    } else {
        double slack = val - (k->best_v + k->gap * (k->best_v > 1 ? k->best_v : 1));
        if (slack <= 0)
            return;
        mark = k->nfix;
        knap_fix(k, slack);
        knap_round(k);
    }
    /* Split on the fractional count worth most. */
    size_t bj = SIZE_MAX;
    double bw = -1;
    for (size_t j = 0; j < in->n; j++) {
        double f = k->x[j] - floor(k->x[j]);
        if (f < KN_INT || f > 1 - KN_INT)
            continue;
        double w = in->v[j] * (f < 0.5 ? f : 1 - f);
        if (w > bw) {
            bw = w;
            bj = j;
        }
    }
    if (bj == SIZE_MAX) {
        if (mark != SIZE_MAX)
            knap_unfix(k, mark);
        return;   /* integral: knap_round already took it */
    }
    double xf = k->x[bj];
    int lo = k->lo[bj], hi = k->hi[bj];
    int up = (int)ceil(xf), down = (int)floor(xf);
    if (up <= hi) {
        k->lo[bj] = up;
        knap_node(k);
        k->lo[bj] = lo;
    }
    if (down >= lo && !k->stopped) {
        k->hi[bj] = down;
        knap_node(k);
        k->hi[bj] = hi;
    }
    if (mark != SIZE_MAX)
        knap_unfix(k, mark);
}

void sv_knap_solve(sv_knap *k, const sv_knap_in *in, int *count, sv_knap_out *out)
{
    size_t n = in->n, D = in->D;
    memset(out, 0, sizeof(*out));
    memset(count, 0, n * sizeof(int));
    out->exact = true;
    if (n == 0 || D == 0 || D > KN_MAXD)
        return;
    knap_reserve(k, n);
    k->in = in;
    for (size_t j = 0; j < n; j++) {
        double ry = 0;
        const double *r = item_r(k, j);
        for (size_t d = 0; d < D; d++)
            ry += r[d] * in->y[d];
        k->ord[j] = j;
        k->eff[j] = ry > 0 ? in->v[j] / ry : INFINITY;
        /* The box: at most what fits alone. */
        int q = in->kmax[j];
        for (size_t d = 0; d < D; d++)
            if (r[d] > 0) {
                double f = floor(in->cap[d] / r[d] * (1 + KN_TOL) + KN_TOL);
                if (f < q)
                    q = f > 0 ? (int)f : 0;
            }
        k->lo[j] = 0;
        k->hi[j] = q;
        k->best[j] = 0;
    }
    qsort_r(k->ord, n, sizeof(size_t), eff_cmp, k);
    k->nfix = 0;
    k->best_v = in->beat > 0 ? in->beat : 0;
    k->gap = in->gap > KN_CUT ? in->gap : KN_CUT;
    k->swaps = in->swaps;
    k->nodes = 0;
    k->stopped = false;
    double root = INFINITY;
    {
        double val;
        if (knap_lp(k, &val) == 1)
            root = val;
    }
    if (root == INFINITY) {
        /* Without a root relaxation, the sum of every item at its limit. */
        root = 0;
        for (size_t j = 0; j < n; j++)
            root += in->v[j] * k->hi[j];
    }
    knap_node(k);
    bool found = k->best_v > (in->beat > 0 ? in->beat : 0);
    if (found)
        memcpy(count, k->best, n * sizeof(int));
    out->value = found ? k->best_v : 0;
    out->nodes = k->nodes;
    out->exact = !k->stopped;
    double tol = k->gap * (k->best_v > 1 ? k->best_v : 1);
    out->upper = out->exact ? k->best_v + tol : root * (1 + KN_TOL) + KN_TOL;
    if (out->upper < k->best_v)
        out->upper = k->best_v;
    k->in = NULL;
}
