/* tlr_fence.h - "may I still act, and for how long": a monotonic deadline
 * shared between one writer (the Lease thread, tlr_lease.h) and any
 * number of readers (the AWS and Kubernetes clients, on any thread).
 *
 * A replica that leads through a Lease may act only until the moment its
 * last successful renewal proves (the renewal's send time + the renew
 * deadline, see lease.c).  The writer moves that moment forward on each
 * renewal and to 0 when it loses the Lease; a reader asks before each
 * mutating call and caps the call's own timeout with what is left, so no
 * call started while leading outlives the leadership.  A NULL fence means
 * "not fenced" (leader election off): always valid, no limit.
 */
#ifndef TLR_FENCE_H
#define TLR_FENCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct tlr_fence {
    _Atomic int64_t until_mono_ms;   /* 0: not valid */
} tlr_fence;

static inline void tlr_fence_init(tlr_fence *f)
{
    atomic_init(&f->until_mono_ms, 0);
}

/* until: a tlr_mono_ms() time; 0 revokes at once. */
static inline void tlr_fence_set(tlr_fence *f, int64_t until_mono_ms)
{
    atomic_store(&f->until_mono_ms, until_mono_ms);
}

/* The deadline (0 = not valid); INT64_MAX for a NULL fence. */
static inline int64_t tlr_fence_until(const tlr_fence *f)
{
    return f ? atomic_load(&((tlr_fence *)f)->until_mono_ms) : INT64_MAX;
}

/* Milliseconds left at now (<= 0: act no more); INT64_MAX when unfenced. */
static inline int64_t tlr_fence_left_ms(const tlr_fence *f, int64_t now_mono_ms)
{
    int64_t u = tlr_fence_until(f);
    return u == INT64_MAX ? INT64_MAX : u - now_mono_ms;
}

static inline bool tlr_fence_valid(const tlr_fence *f, int64_t now_mono_ms)
{
    return tlr_fence_left_ms(f, now_mono_ms) > 0;
}

#endif
