/* lifecycle.h - where a launched NodeClaim stands, decided purely.
 *
 * Launched -> Registered -> Initialized, as Karpenter v1:
 *   - every node boots with the taint karpenter.sh/unregistered:NoExecute
 *     (its user data registers it so) and only the labels the
 *     NodeRestriction admission lets a kubelet set;
 *   - when a Node with the claim's providerID appears, the launcher syncs
 *     the claim onto it in ONE JSON merge patch carrying the Node's
 *     resourceVersion (a merge patch replaces the taints list whole, so a
 *     concurrent change must make it fail with 409 and be retried next
 *     pass, never be overwritten): labels += the claim's labels and
 *     karpenter.sh/registered=true, annotations += the claim's, taints +=
 *     the claim's taints that are missing (matched by key and effect) and,
 *     on the first registration, its startup taints; the unregistered
 *     taint removed.  Then the claim is Registered;
 *   - Initialized once the Node is Ready, no startup taint of the claim,
 *     no unregistered taint and no known ephemeral taint (not-ready,
 *     unreachable, cloud-provider uninitialized) is left, and every
 *     extended resource the launched type has (nvidia.com/gpu,
 *     aws.amazon.com/neuron, ...) is advertised in the Node's allocatable;
 *     then the Node is labelled karpenter.sh/initialized=true.
 * Liveness, as Karpenter: a claim not launched LC_LAUNCH_TTL after
 * creation, or not registered within the registration TTL
 * (--registration-ttl, default LC_REGISTER_TTL) after launch, is deleted
 * and its instance terminated, so the pods it was planned for are
 * provisioned again.
 */
#ifndef LC_LIFECYCLE_H
#define LC_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "claims.h"
#include "lc_ops.h"
#include "tailor/v1/instancetype.pb-c.h"
#include "tlr_labels.h"

#define LC_LAUNCH_TTL_MS   (5 * 60 * 1000)
#define LC_REGISTER_TTL_MS (15 * 60 * 1000)

typedef enum lc_life_action {
    LC_LIFE_NONE = 0,
    LC_LIFE_REGISTERED,        /* record Registered (node_name from the node) */
    LC_LIFE_INITIALIZED,       /* record Initialized */
    LC_LIFE_LAUNCH_TIMEOUT,    /* delete the claim (nothing to terminate) */
    LC_LIFE_REGISTER_TIMEOUT,  /* delete the claim, terminate its instance */
} lc_life_action;

/* Decide for claim c (borrowed) given its Node (NULL when none has the
 * providerID yet), the catalog entry of its launched type (NULL when
 * unknown: no extended resources are waited for) and the registration TTL
 * (0 = LC_REGISTER_TTL_MS) at wall time now_ms.  Returns what to do next. */
lc_life_action lc_lifecycle_decide(const lc_claim *c, const tlr_knode *node,
                                   const Tailor__V1__InstanceType *it, int64_t register_ttl_ms,
                                   int64_t now_ms);

/* Why a registered claim is not Initialized yet, for logs ("NodeNotReady",
 * "StartupTaintsExist", "ResourceNotRegistered nvidia.com/gpu", ...), or
 * NULL when it is.  Borrowed static text or text in buf. */
const char *lc_lifecycle_waiting(const lc_claim *c, const tlr_knode *node,
                                 const Tailor__V1__InstanceType *it, char *buf, size_t len);

/* The JSON merge patch that registers node n for claim c (above).  New
 * text owned by the caller. */
char *lc_registration_patch(const lc_claim *c, const tlr_knode *n);

/* The patch that labels an initialized node karpenter.sh/initialized=true. */
#define LC_INITIALIZED_PATCH "{\"metadata\":{\"labels\":{\"" TLR_LABEL_INITIALIZED "\":\"true\"}}}"

/* The Node in nodes whose providerID names instance_id, or NULL. */
const tlr_knode *lc_node_for_instance(const tlr_knodes *nodes, const char *instance_id);

#endif
