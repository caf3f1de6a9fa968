/* claims.h - the launcher's own NodeClaims: the in-flight registry and
 * the karpenter.sh/v1 NodeClaim object written to Kubernetes.
 *
 * The registry holds every claim this process created or adopted, with
 * the pods it was planned for, until its node is Initialized (then the
 * watcher's cluster state covers it) or it is deleted.  Every Solve
 * carries the registry's claims (ARCHITECTURE.md principle 3): a pod
 * planned onto a claim that is not yet visible in the watcher's state is
 * not provisioned twice.
 */
#ifndef LC_CLAIMS_H
#define LC_CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/nodeclaim.pb-c.h"

typedef struct lc_claim {
    Tailor__V1__NodeClaim *nc;   /* owned; name set; status filled as it goes */
    int64_t created_ms;          /* wall clock when written to Kubernetes */
    int64_t launched_ms;         /* 0 = not launched */
    int64_t registered_ms;       /* 0 = not registered */
    int64_t initialized_ms;
    bool adopted;                /* taken over after a restart: no planned pods
                                  * known, so the watcher's copy goes to Solve */
} lc_claim;

typedef struct lc_claims lc_claims;

void lc_claims_create(lc_claims **out);      /* owned: lc_claims_free() */
void lc_claims_free(lc_claims *r);            /* NULL is fine */

/* Add nc (handed over: the registry owns and frees it).  Returns the
 * entry (borrowed), or NULL when a claim of that name is already there
 * (nc is then freed). */
lc_claim *lc_claims_add(lc_claims *r, Tailor__V1__NodeClaim *nc, int64_t now_ms);
/* Entries are stable: a pointer stays valid until that claim is removed. */
lc_claim *lc_claims_find(lc_claims *r, const char *name);   /* borrowed or NULL */
void      lc_claims_remove(lc_claims *r, const char *name); /* absent is fine */
size_t    lc_claims_count(const lc_claims *r);
lc_claim *lc_claims_at(lc_claims *r, size_t i);              /* 0 <= i < count */

/* A fresh claim name "<nodepool>-<5 lowercase letters/digits>", as
 * Kubernetes generateName would make it.  rnd: a random 64-bit value
 * (injected for tests).  buf >= 64 bytes; the pool name is cut to fit. */
void lc_claim_name(const char *nodepool, uint64_t rnd, char *buf, size_t len);

/* The NodeClaim object for Kubernetes, as JSON text: labels
 * (karpenter.sh/nodepool, karpenter.k8s.aws/ec2nodeclass, the claim's),
 * annotations (incl. the drift hashes), ownerReference to the NodePool
 * when its uid is known (pool_uid may be NULL), nodeClassRef,
 * requirements with minValues, resources.requests, taints, startupTaints,
 * expireAfter and terminationGracePeriod.  Returns new text owned by the
 * caller (free()). */
char *lc_claim_json(const Tailor__V1__NodeClaim *nc, const char *pool_uid);

/* The full status of c as a merge patch for the status subresource:
 * providerID, imageID, nodeName, and the conditions Launched, Registered,
 * Initialized (True with their times once reached, else Unknown) --
 * whole, because a merge patch replaces the conditions array.  New text
 * owned by the caller. */
char *lc_claim_status_json(const lc_claim *c);

/* Deep copy of a NodeClaim message (owned by the caller). */
Tailor__V1__NodeClaim *lc_claim_copy(const Tailor__V1__NodeClaim *nc);

#endif
