/* explain.h - the Explain request: what the disruptor thinks of one node.
 *
 * From a fresh snapshot: the node's NodeClaim and NodePool; every blocker
 * of voluntary disruption (candidates.h: PDB, do-not-disrupt on the node
 * or a pod, consolidateAfter with when it clears, policy, ...) plus the
 * pool's budget when it is spent; the methods it is eligible for
 * (expiration when past expireAfter, drift and why, emptiness,
 * consolidation); the decision in flight that holds it, if any; and, with
 * `simulate`, what consolidating it alone would do -- delete (its pods fit
 * elsewhere) or replace by which type, at what saving -- or why neither
 * (PODS_WOULD_NOT_FIT, NO_CHEAPER_REPLACEMENT).  A node being drained says
 * what its drain waits for.
 */
#ifndef DS_EXPLAIN_H
#define DS_EXPLAIN_H

#include "controller.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "termination.h"

/* Answer req (borrowed).  term may be NULL.  On TLR_OK *out is new and
 * owned (protobuf_c_message_free_unpacked); TLR_E_NOTFOUND when no such
 * node or NodeClaim; snapshot errors as they come. */
int ds_explain(ds_ctl *ctl, const ds_term *term, const Tailor__V1__ExplainRequest *req,
               Tailor__V1__ExplainResponse **out, char *err, size_t errlen);

#endif
