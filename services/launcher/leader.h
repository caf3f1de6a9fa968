/* leader.h - leader election on a coordination.k8s.io/v1 Lease.
 *
 * Two launcher replicas may run; only the Lease holder launches,
 * terminates and collects garbage (the other answers requests with
 * UNAVAILABLE and keeps watching the Lease).  The protocol is client-go's:
 * the holder renews spec.renewTime every few seconds; a Lease whose
 * renewTime + leaseDurationSeconds has passed may be taken over by
 * writing it with its resourceVersion, so of two contenders exactly one
 * wins (the other gets 409 Conflict).  Clocks of different replicas are
 * compared through the API server's stored times, so a skew of more than
 * the lease duration could let two lead briefly -- the same limit
 * client-go has; launch idempotency (claim names) bounds the damage.
 */
#ifndef LC_LEADER_H
#define LC_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "tlr_kube.h"

typedef enum lc_lead_action {
    LC_LEAD_FOLLOW = 0,   /* someone else holds a live lease */
    LC_LEAD_RENEW,        /* we hold it: renew */
    LC_LEAD_ACQUIRE,      /* free or expired: take it */
} lc_lead_action;

/* Pure decision.  holder may be NULL or "" (no holder). */
lc_lead_action lc_leader_decide(const char *holder, int64_t renew_ms, int duration_s,
                                const char *me, int64_t now_ms);

typedef struct lc_leader lc_leader;

/* kc borrowed.  ns, name, identity copied.  *out owned: lc_leader_free(). */
void lc_leader_create(tlr_kube *kc, const char *ns, const char *name, const char *identity,
                      int duration_s, lc_leader **out);
void lc_leader_free(lc_leader *l);
/* One round trip: read the Lease, create / renew / take it over as
 * decided.  Returns whether we hold it now.  On an API error we keep
 * leading only while our last renewal is younger than the duration. */
bool lc_leader_tick(lc_leader *l, int64_t now_ms);

/* On a clean stop: if we hold the Lease, give it up (holderIdentity
 * emptied, as client-go's ReleaseOnCancel), so a successor need not wait
 * for it to expire.  Best effort. */
void lc_leader_release(lc_leader *l, int64_t now_ms);

#endif
