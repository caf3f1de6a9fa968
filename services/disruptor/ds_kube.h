/* ds_kube.h - the real ds_kube_ops over common/kube (tlr_kube): NodeClaims
 * and Nodes (finalizers, the disrupted taint, annotations, deletes),
 * core/v1 Events, workloads (ReplicaSet -> Deployment, StatefulSet) and
 * rolling restarts.  Blocking calls, made from the loop thread. */
#ifndef DS_KUBE_H
#define DS_KUBE_H

#include "ds_ops.h"
#include "tlr_kube.h"

/* kc borrowed; must outlive the ops. */
ds_kube_ops ds_kube_ops_of(tlr_kube *kc);

#endif
