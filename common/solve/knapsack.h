/* knapsack.h - bounded integer multi-dimensional knapsack by branch and
 * bound, the pricing step of the configuration LP (lower_bound.c).
 * Not a public header: only common/solve includes it.
 *
 *   max  sum_j v_j k_j   s.t.  sum_j k_j r_j <= cap (every dimension),
 *                              k_j integer, 0 <= k_j <= kmax_j
 *
 * The search is depth first over the items in decreasing order of
 * v_j / (r_j . y), where y >= 0 are multipliers with r_j . y >= v_j for
 * every item (the dual of the fractional knapsack does this).  A subtree
 * is cut when no completion can beat the best found, by the smallest of
 * three upper bounds on what the items left can add with capacity c left:
 *   y . c                        (surrogate: v_j <= r_j . y),
 *   c_d * max_j v_j / r_jd       (one dimension d every item left uses),
 *   sum_j v_j kmax_j             (everything left at its limit).
 * All three are valid for any integer completion, so a finished search is
 * exact; an unfinished one (node budget spent) returns the best found and
 * says so.
 */
#ifndef SV_KNAPSACK_H
#define SV_KNAPSACK_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sv_knap sv_knap;

/* A reusable search context; *out is owned by the caller. */
void sv_knap_create(sv_knap **out);
void sv_knap_free(sv_knap *k);   /* NULL is fine */

typedef struct sv_knap_in {
    size_t D;              /* dimensions */
    const double *cap;     /* D capacities */
    const double *y;       /* D multipliers, r_j . y >= v_j for every item */
    size_t n;              /* items */
    const double *v;       /* n values (> 0) */
    const double *r;       /* n x stride weights, dimension d at r[j*stride+d] */
    size_t stride;
    const int *kmax;       /* n limits (>= 0) */
    long budget;           /* search nodes before giving up (> 0) */
    double beat;           /* only solutions worth more than this count (0: any) */
    double gap;            /* relative: a node that cannot beat the best by
                            * more than this is cut (>= 1e-7) */
    bool swaps;            /* improve the root's solution by 1-swaps */
} sv_knap_in;

typedef struct sv_knap_out {
    double value;          /* best value found above in->beat, else 0 */
    double upper;          /* an upper bound on the optimum: max(value, beat)
                            * times (1 + gap) when exact, else the root's
                            * bound */
    bool exact;            /* the search finished */
    long nodes;            /* nodes visited */
} sv_knap_out;

/* Solve in. count (n ints, caller-owned) gets the best solution found
 * worth more than in->beat (all 0 when none).  With beat > 0 the search
 * only proves or disproves that some solution beats it, which cuts far
 * more.  Always succeeds. */
void sv_knap_solve(sv_knap *k, const sv_knap_in *in, int *count, sv_knap_out *out);

/* One Gauss-Jordan pivot of a dense (rows x W) tableau on (r, e): row r
 * is divided by T[r][e], then subtracted from every other row so column e
 * becomes the unit vector.  Shared by the knapsack's relaxation and the
 * bound's fractional pricing. */
static inline void sv_tableau_pivot(double *T, size_t rows, size_t W, size_t r, size_t e)
{
    double pv = T[r * W + e];
    for (size_t j = 0; j < W; j++)
        T[r * W + j] /= pv;
    for (size_t d = 0; d < rows; d++) {
        if (d == r)
            continue;
        double f = T[d * W + e];
        if (f == 0)
            continue;
        for (size_t j = 0; j < W; j++)
            T[d * W + j] -= f * T[r * W + j];
    }
}

#endif
