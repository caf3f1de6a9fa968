/* lifecycle.h - where a launched NodeClaim stands, decided purely.
 *
 * Launched -> Registered (a Node with the claim's providerID joined) ->
 * Initialized (that Node is Ready and none of the claim's startup taints,
 * nor karpenter.sh/unregistered, is left on it).  Liveness, as Karpenter:
 * a claim not launched LC_LAUNCH_TTL after creation, or not registered
 * LC_REGISTER_TTL after launch, is deleted and its instance terminated,
 * so the pods it was planned for are provisioned again.
 */
#ifndef LC_LIFECYCLE_H
#define LC_LIFECYCLE_H

#include <stdint.h>

#include "claims.h"
#include "ops.h"

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
 * providerID yet) at wall time now_ms.  Returns what to do next. */
lc_life_action lc_lifecycle_decide(const lc_claim *c, const lc_node *node, int64_t now_ms);

/* The Node in nodes whose providerID names instance_id, or NULL. */
const lc_node *lc_node_for_instance(const lc_nodes *nodes, const char *instance_id);

#endif
