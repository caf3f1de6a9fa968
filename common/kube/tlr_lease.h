/* tlr_lease.h - leader election on a coordination.k8s.io/v1 Lease, for
 * the services that run active/passive (launcher, disruptor).
 *
 * Two replicas may run; only the Lease holder acts (the launcher
 * launches, terminates and collects garbage; the disruptor disrupts), the
 * other keeps watching the Lease.  The protocol is client-go's:
 * the holder renews spec.renewTime every few seconds; a Lease whose
 * renewTime + leaseDurationSeconds has passed may be taken over by
 * writing it with its resourceVersion, so of two contenders exactly one
 * wins (the other gets 409 Conflict).  Clocks of different replicas are
 * compared through the API server's stored times, so a skew of more than
 * the lease duration could let two lead briefly -- the same limit
 * client-go has; idempotent actions (claim names, re-validated decisions)
 * bound the damage.
 */
#ifndef TLR_LEASE_H
#define TLR_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "tlr_kube.h"

typedef enum tlr_lease_action {
    TLR_LEASE_FOLLOW = 0,   /* someone else holds a live lease */
    TLR_LEASE_RENEW,        /* we hold it: renew */
    TLR_LEASE_ACQUIRE,      /* free or expired: take it */
} tlr_lease_action;

/* Pure decision.  holder may be NULL or "" (no holder). */
tlr_lease_action tlr_lease_decide(const char *holder, int64_t renew_ms, int duration_s,
                                const char *me, int64_t now_ms);

typedef struct tlr_lease tlr_lease;

/* kc borrowed.  ns, name, identity copied.  *out owned: tlr_lease_free(). */
void tlr_lease_create(tlr_kube *kc, const char *ns, const char *name, const char *identity,
                      int duration_s, tlr_lease **out);
void tlr_lease_free(tlr_lease *l);
/* One round trip: read the Lease, create / renew / take it over as
 * decided.  Returns whether we hold it now.  On an API error we keep
 * leading only while our last renewal is younger than the duration. */
bool tlr_lease_tick(tlr_lease *l, int64_t now_ms);

/* On a clean stop: if we hold the Lease, give it up (holderIdentity
 * emptied, as client-go's ReleaseOnCancel), so a successor need not wait
 * for it to expire.  Best effort. */
void tlr_lease_release(tlr_lease *l, int64_t now_ms);

#endif
