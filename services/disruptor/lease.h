/* lease.h - active/passive replicas through a coordination.k8s.io/v1
 * Lease (client-go's protocol).
 *
 * Only the holder disrupts: it renews spec.renewTime every tick; a Lease
 * whose renewTime + leaseDurationSeconds has passed (or that names no
 * holder) is taken over by writing it back with its resourceVersion, so
 * of two contenders exactly one wins (the other gets 409).  On a clean
 * stop the holder releases the Lease (empty holder), so a restarted or
 * standby replica takes over at its next tick instead of after the
 * duration; after a crash it waits the duration out.  Every action of the
 * disruptor is idempotent and re-validated against Kubernetes, which
 * bounds the harm of the brief double leadership clock skew can cause.
 */
#ifndef DS_LEASE_H
#define DS_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "tlr_kube.h"

typedef enum ds_lease_action {
    DS_LEASE_FOLLOW = 0,   /* someone else holds a live lease */
    DS_LEASE_RENEW,        /* ours: renew */
    DS_LEASE_ACQUIRE,      /* free or expired: take it */
} ds_lease_action;

/* Pure.  holder NULL or "" = free. */
ds_lease_action ds_lease_decide(const char *holder, int64_t renew_ms, int duration_s,
                                const char *me, int64_t now_ms);

typedef struct ds_lease ds_lease;

/* kc borrowed; ns, name, identity copied.  *out owned: ds_lease_free(). */
void ds_lease_create(tlr_kube *kc, const char *ns, const char *name, const char *identity,
                     int duration_s, ds_lease **out);
void ds_lease_free(ds_lease *l);   /* NULL fine */
/* Read, then create / renew / take over as decided.  Returns whether we
 * hold it now.  On an API error we keep leading only while our last
 * renewal is younger than the duration. */
bool ds_lease_tick(ds_lease *l, int64_t now_ms);
/* Give it up if we hold it (clean stop). */
void ds_lease_release(ds_lease *l);

#endif
