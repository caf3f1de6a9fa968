/* hash.h - the drift hashes: karpenter.sh/nodepool-hash on NodePools and
 * karpenter.k8s.aws/ec2nodeclass-hash on EC2NodeClasses, stamped on the
 * NodeClaims made from them.
 *
 * Karpenter's hash controllers keep these; in tailor the disruptor does
 * (the launcher copies a pool's hash onto every claim the solver plans, via
 * the watcher).  A hash is the first 16 hex digits of the SHA-256 of the
 * fields that, when changed, make existing nodes stale:
 *   NodePool      spec.template: labels, annotations, taints, startup
 *                 taints, nodeClassRef, expireAfter, terminationGracePeriod
 *                 (requirements are judged label by label instead: drift.c);
 *   EC2NodeClass  role (or instanceProfile), userData, blockDeviceMappings,
 *                 metadataOptions, tags, kubelet, instanceStorePolicy,
 *                 detailedMonitoring, associatePublicIPAddress (selector
 *                 terms are judged by what they resolve to: the AMI check).
 * Each carries DS_HASH_VERSION in the *-hash-version annotation.  A pool
 * or class whose version is not ours is given our hash and its claims are
 * re-stamped (no drift: nothing changed but the algorithm); a claim
 * without a hash is stamped with the current one.
 */
#ifndef DS_HASH_H
#define DS_HASH_H

#include <stddef.h>

#include "ds_ops.h"
#include "tlr_labels.h"
#include "view.h"

#define DS_HASH_VERSION "tailor-1"
#define DS_POOL_HASH TLR_ANNOTATION_NODEPOOL_HASH
#define DS_POOL_HASH_VERSION TLR_ANNOTATION_NODEPOOL_HASH_VERSION
#define DS_CLASS_HASH TLR_ANNOTATION_NODECLASS_HASH
#define DS_CLASS_HASH_VERSION TLR_ANNOTATION_NODECLASS_HASH_VERSION

/* buf >= 17 bytes. */
void ds_hash_nodepool(const Tailor__V1__NodePool *p, char *buf, size_t len);
void ds_hash_nodeclass(const Tailor__V1__NodeClass *c, char *buf, size_t len);

typedef struct ds_stamp {
    ds_kind kind;
    char name[256];
    const char *key;          /* static */
    char value[32];
} ds_stamp;

typedef struct ds_stamps {
    ds_stamp *v;              /* owned */
    size_t n, cap;
} ds_stamps;

/* The annotations to write so the view's pools, classes and claims carry
 * current hashes.  Pure.  *out filled (free out->v). */
void ds_hash_plan(const ds_view *v, ds_stamps *out);
/* Write them; returns how many succeeded. */
int ds_hash_apply(const ds_stamps *s, const ds_kube_ops *kube);

#endif
