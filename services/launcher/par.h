/* par.h - run n independent calls on up to `threads` threads and wait.
 *
 * The launcher's decisions stay on its loop thread; only the blocking
 * calls that make up one decision's "act" step -- CreateFleet for every
 * group of claims, NodeClaim creates and status writes -- fan out here,
 * so a burst of hundreds of claims waits for the slowest call instead of
 * the sum of them.  fn(arg, i, worker) is called once for every i in
 * [0, n), on some thread; worker in [0, threads) identifies the thread so
 * a caller can keep one non-thread-safe client per worker (worker 0 runs
 * on the calling thread).  Every worker thread runs with the caller's
 * deadline (tlr_deadline_get(), tlr_cancel.h), so AWS calls fanned out
 * here are bounded like the caller's own.  Returns when every call has
 * returned.
 */
#ifndef LC_PAR_H
#define LC_PAR_H

#include <stddef.h>

#define LC_PAR_MAX 64

typedef void (*lc_par_fn)(void *arg, size_t i, int worker);

/* threads <= 1 (or n <= 1) runs everything on the calling thread. */
void lc_par_run(size_t n, int threads, lc_par_fn fn, void *arg);

#endif
