/* ks_kubelet.h - the kubelet simulator: EC2 instances become Nodes.
 *
 * One reconcile pass (ks_kubelet_pass) reads the instances tagged for the
 * cluster from EC2 (moto locally) and the Nodes it manages from the store,
 * then:
 *   - registers a Node for each running instance once boot_delay has
 *     passed since its launch (or since the simulator first saw it, which
 *     ever comes first), named like EC2's private DNS name
 *     (ip-10-0-1-7.ec2.internal; the instance id when there is none), with
 *     providerID aws:///ZONE/INSTANCE_ID, the well-known labels, capacity
 *     and allocatable from the instance catalog, a Ready condition, and the
 *     labels, taints and startup taints of its NodeClaim (found by
 *     status.providerID or by the instance's karpenter.sh/nodeclaim tag),
 *     and eks.amazonaws.com/nodegroup for an instance of an EKS node group
 *     (tag eks:nodegroup-name, as Auto Scaling propagates it);
 *   - removes the NodeClaim's startup taints startup_taint_delay after
 *     registration (what a CNI or device plugin does on a real node);
 *   - deletes the Node of every instance that is no longer pending or
 *     running (terminated, stopped, or gone from EC2).  The workload
 *     controllers then delete its pods and their owners recreate them.
 * An instance is "tagged for the cluster" when it has the tag
 * kubernetes.io/cluster/<cluster> = owned, or a karpenter.sh/nodepool tag.
 * Nodes it manages carry the label kubesim.tailor.dev/instance-id, which
 * is how a restarted simulator finds them again; other Nodes are never
 * touched.  When EC2 cannot be read the pass changes nothing.
 *
 * EC2 is reached through an ops struct so tests can script it (Karpenter's
 * fake cloud provider pattern); ks_kubelet_module wires the real client
 * (common/aws) with settings --aws-endpoint, --aws-region,
 * --cluster-name, --kubelet-poll, --boot-delay, --startup-taint-delay and
 * --catalog.  The module is idle unless an AWS endpoint is configured
 * (--aws-endpoint / KUBESIM_AWS_ENDPOINT / AWS_ENDPOINT_URL), so kubesim
 * runs without a cloud by default.
 */
#ifndef KS_KUBELET_H
#define KS_KUBELET_H

#include <stdint.h>

#include "ks_module.h"
#include "ks_store.h"
#include "tlr_catalog.h"
#include "tlr_ec2.h"
#include "tlr_log.h"
#include "tlr_time.h"

/* The label that ties a simulated Node to its instance. */
#define KS_KUBELET_INSTANCE_LABEL "kubesim.tailor.dev/instance-id"
/* An instance tagged eks:nodegroup-name=NAME (as EKS managed node groups
 * tag theirs) becomes a Node labelled eks.amazonaws.com/nodegroup=NAME. */
#define KS_KUBELET_NODEGROUP_TAG "eks:nodegroup-name"
#define KS_KUBELET_NODEGROUP_LABEL "eks.amazonaws.com/nodegroup"

typedef struct ks_kubelet_ec2_ops {
    /* The instances that may belong to cluster (any state; the simulator
     * filters).  On TLR_OK *out is filled and owned by the caller
     * (tlr_ec2_instances_free).  Any error: the pass changes nothing. */
    int (*describe_instances)(void *arg, const char *cluster, tlr_ec2_instances *out);
    void *arg;   /* borrowed */
} ks_kubelet_ec2_ops;

typedef struct ks_kubelet_opts {
    const char *cluster;            /* "kubesim"; copied */
    const char *region;             /* "us-east-1"; copied; NULL = zone minus letter */
    int64_t boot_delay_ms;
    int64_t startup_taint_delay_ms;
    const tlr_clock *clock;         /* borrowed; NULL = system clock */
    /* Capacity, allocatable and the instance-type labels come from here
     * (tlr_catalog.h); a type it lacks, or a NULL catalog, gets a small
     * default shape and a warning.  Borrowed. */
    const Tailor__V1__Catalog *catalog;
    tlr_logger *log;                /* borrowed; may be NULL */
} ks_kubelet_opts;

typedef struct ks_kubelet ks_kubelet;

/* s and ops->arg are borrowed and must outlive the simulator.  On TLR_OK
 * *out is new and owned: ks_kubelet_free(). */
int  ks_kubelet_create(ks_store *s, const ks_kubelet_opts *o, const ks_kubelet_ec2_ops *ops,
                       ks_kubelet **out);
void ks_kubelet_free(ks_kubelet *k);   /* NULL is fine */

/* Counts from one pass, for tests and logs. */
typedef struct ks_kubelet_stats {
    int instances;     /* tagged for the cluster and pending/running */
    int registered;    /* Nodes created this pass */
    int removed;       /* Nodes deleted this pass */
    int untainted;     /* Nodes whose startup taints were removed */
    int waiting;       /* running instances still booting */
} ks_kubelet_stats;

/* One reconcile pass (see above).  Returns the describe error when EC2
 * could not be read (nothing changed), else TLR_OK; stats may be NULL. */
int  ks_kubelet_pass(ks_kubelet *k, ks_kubelet_stats *stats);

extern const ks_module ks_kubelet_module;

#endif
