/* kube.h - the real lc_kube_ops over common/kube (tlr_kube): NodeClaims
 * (karpenter.sh/v1), Nodes, core/v1 Events.  Blocking calls, made from
 * the launcher's loop thread. */
#ifndef LC_KUBE_H
#define LC_KUBE_H

#include "ops.h"
#include "tlr_kube.h"

/* kc borrowed; must outlive the ops. */
lc_kube_ops lc_kube_ops_of(tlr_kube *kc);

/* Decoders, exposed for tests.  obj borrowed; out filled (owned strings). */
void lc_kube_claim_decode(json_object *obj, lc_kclaim *out);
void lc_kube_node_decode(json_object *obj, lc_node *out);

#endif
