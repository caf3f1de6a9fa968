/* tlr_lease.h - fenced leader election on a coordination.k8s.io/v1 Lease,
 * for the services that run active/passive (launcher, disruptor).
 *
 * Two replicas may run; only the Lease holder acts.  The protocol is
 * client-go's, with its three durations (lease 15 s, renew deadline 10 s,
 * retry 2 s by default):
 *   - the holder renews spec.renewTime every retry period, from a thread
 *     of its own with its own Kubernetes client, so no request the
 *     service is busy with can hold a renewal up;
 *   - a renewal proves leadership only until the moment it was SENT plus
 *     the renew deadline ("valid until", monotonic).  That moment is
 *     published in a tlr_fence (tlr_fence.h) which every mutating call
 *     checks before it starts and which caps how long it may run.  When
 *     the renewals stop succeeding the fence simply runs out: no thread
 *     has to notice for the replica to stop acting;
 *   - a contender never compares the holder's renewTime with its own wall
 *     clock.  It notes, on its own monotonic clock, when it last saw the
 *     Lease change (holder, renewTime or resourceVersion) and takes over
 *     only when nothing changed for leaseDurationSeconds since ("observed
 *     time", as client-go).  A takeover writes with the resourceVersion it
 *     read, so of two contenders exactly one wins (409 for the other).
 * Why it is safe: the holder stops acting at send + renew deadline; a
 * contender cannot have seen that renewal before it was sent, so it waits
 * at least send + lease duration -- the difference (5 s by default) covers
 * clock-rate drift between replicas and the last call being cut.
 */
#ifndef TLR_LEASE_H
#define TLR_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "tlr_fence.h"
#include "tlr_kube.h"
#include "tlr_metrics.h"

typedef enum tlr_lease_action {
    TLR_LEASE_FOLLOW = 0,   /* someone else holds a live lease */
    TLR_LEASE_RENEW,        /* we hold it: renew */
    TLR_LEASE_ACQUIRE,      /* free or expired: take it */
} tlr_lease_action;

/* What this replica has seen of the Lease, and when (local monotonic). */
typedef struct tlr_lease_seen {
    char holder[256], renew[64], rv[64];
    int64_t at_mono_ms;     /* when one of them last changed; 0 = never seen */
} tlr_lease_seen;

/* Note one read of the Lease at now.  Strings borrowed (NULL = "").
 * Returns whether the record differs from the last one seen (then
 * at_mono_ms = now). */
bool tlr_lease_observe(tlr_lease_seen *s, const char *holder, const char *renew,
                       const char *rv, int64_t now_mono_ms);

/* Pure decision on what was seen: free -> ACQUIRE; ours -> RENEW; another
 * holder's record unchanged for duration_ms since we saw it change ->
 * ACQUIRE; else FOLLOW. */
tlr_lease_action tlr_lease_decide(const tlr_lease_seen *s, int64_t duration_ms, const char *me,
                                  int64_t now_mono_ms);

/* Until when a write sent at sent_mono_ms and acknowledged at ack_mono_ms
 * proves leadership: sent + renew deadline, or 0 when the answer came too
 * late to prove anything. */
int64_t tlr_lease_valid_until(int64_t sent_mono_ms, int64_t ack_mono_ms,
                              int64_t renew_deadline_ms);

typedef struct tlr_lease_opts {
    tlr_kube *kc;                /* borrowed; used only from the Lease thread:
                                  * give it its own client whose per-request
                                  * timeout is below the renew deadline */
    const char *ns, *name, *identity;   /* copied */
    int64_t duration_ms;         /* 0: 15 s */
    int64_t renew_deadline_ms;   /* 0: 10 s; must be < duration */
    int64_t retry_ms;            /* 0: 2 s; must be < renew deadline */
    tlr_fence *fence;            /* borrowed; written: valid-until */
    tlr_logger *log;             /* borrowed; may be NULL */
    tlr_metrics *metrics;        /* borrowed; may be NULL */
} tlr_lease_opts;

typedef struct tlr_lease tlr_lease;

/* Check the durations, start the Lease thread.  On TLR_OK *out is new and
 * owned: tlr_lease_stop().  TLR_E_INVAL (and why) when the durations are
 * out of order. */
int tlr_lease_start(const tlr_lease_opts *o, tlr_lease **out, char *why, size_t whylen);

/* Whether the fence is valid now (a shortcut for tlr_fence_valid). */
bool tlr_lease_leading(const tlr_lease *l);
/* How many times this replica has acquired the Lease: a new term means
 * what the last leader left must be looked at afresh. */
uint64_t tlr_lease_term(const tlr_lease *l);

/* Stop the thread (at most one request timeout), revoke the fence, and if
 * we hold the Lease give it up (holderIdentity emptied, as client-go's
 * ReleaseOnCancel), so a successor need not wait for it to expire.  Frees
 * l; NULL is fine. */
void tlr_lease_stop(tlr_lease *l);

#endif
