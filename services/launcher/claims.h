/* claims.h - the launcher's own NodeClaims: the in-flight registry and
 * the karpenter.sh/v1 NodeClaim object written to Kubernetes.
 *
 * The registry holds every claim this process created or adopted, with
 * the pods it was planned for, until its node is Initialized (then the
 * watcher's cluster state covers it) or it is deleted.  Every Solve
 * carries the registry's claims (docs/launcher.md, what a Solve carries): a pod
 * planned onto a claim that is not yet visible in the watcher's state is
 * not provisioned twice.
 */
#ifndef LC_CLAIMS_H
#define LC_CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/instancetype.pb-c.h"
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
 * providerID, imageID, nodeName, capacity and allocatable (when known:
 * the launched type's), and the conditions Launched, Registered,
 * Initialized (True with their times once reached, else Unknown) --
 * whole, because a merge patch replaces the conditions array.  New text
 * owned by the caller. */
char *lc_claim_status_json(const lc_claim *c);

/* Kubernetes' spelling of a taint effect: "NoSchedule", ... */
const char *lc_taint_effect_name(Tailor__V1__TaintEffect e);

/* Set label key=value on nc (replacing a value already there). */
void lc_claim_label_set(Tailor__V1__NodeClaim *nc, const char *key, const char *value);
/* The value of label key on nc (borrowed) or NULL. */
const char *lc_claim_label(const Tailor__V1__NodeClaim *nc, const char *key);

/* The labels a NodeClaim is created with, as Karpenter's
 * NodeClaimTemplate gives them, added to nc->labels (the NodePool template
 * labels the solver put there stay): karpenter.sh/nodepool,
 * karpenter.k8s.aws/ec2nodeclass, and every requirement with operator In
 * and exactly one value whose key a label may have (restricted
 * kubernetes.io / k8s.io keys other than the well-known ones are not). */
void lc_claim_fill_labels(Tailor__V1__NodeClaim *nc);

/* After launch: the labels of the instance claim nc got, added to
 * nc->labels -- node.kubernetes.io/instance-type, kubernetes.io/arch,
 * kubernetes.io/os, the single-valued requirements of its catalog entry
 * it (karpenter.k8s.aws/instance-*; it may be NULL),
 * topology.kubernetes.io/zone and /region, karpenter.sh/capacity-type --
 * as the AWS provider's instanceToNodeClaim does.  nc->status must hold
 * the instance (type, zone, capacity type).  region may be NULL (then
 * the zone without its letter). */
void lc_claim_add_instance_labels(Tailor__V1__NodeClaim *nc, const Tailor__V1__InstanceType *it,
                                  const char *region);

/* {"metadata":{"labels":{...every label of nc...}}}: the merge patch that
 * writes the claim's labels.  New text owned by the caller. */
char *lc_claim_labels_patch(const Tailor__V1__NodeClaim *nc);

/* Deep copy of a NodeClaim message (owned by the caller). */
Tailor__V1__NodeClaim *lc_claim_copy(const Tailor__V1__NodeClaim *nc);

#endif
