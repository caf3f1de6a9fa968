/* ks_kubelet.h - the kubelet simulator: EC2 instances become Nodes.
 *
 * The simulator never covers for the product: a Node is built only from
 * what a real node knows about itself.  Per instance it reads exactly:
 *   - from DescribeInstances: id, state, type, zone, private DNS name and
 *     IP, image id, launch time and tags (the tags only to select the
 *     instances of this cluster, below);
 *   - its user data (DescribeInstanceAttribute userData) and its AMI's
 *     name (DescribeImages), once each, cached by instance id;
 *   - its root volume's size (DescribeVolumes), once;
 *   - its instance type's hardware from the catalog: vCPUs, memory,
 *     architecture, ENI max pods, local NVMe, GPUs/accelerators.
 * The boot agent the AMI carries (nodeagent.h: nodeadm, AL2 bootstrap.sh
 * or Bottlerocket) turns the user data into a kubelet configuration, or
 * refuses: another cluster's endpoint, CA or name, a missing field, a
 * malformed document, a label the kubelet refuses, no bootstrap at all.
 * A refused instance never joins; the reason is logged once (warn).
 * It never reads NodeClaims or any other API object.
 *
 * One reconcile pass (ks_kubelet_pass):
 *   - registers a Node for each running instance once boot_delay has
 *     passed since its launch (or since the simulator first saw it, which
 *     ever comes first), named like EC2's private DNS name
 *     (ip-10-0-1-7.ec2.internal; the instance id when there is none), with
 *     providerID aws:///ZONE/INSTANCE_ID; labels: those the kubelet and
 *     the cloud controller manager set (kubernetes.io/hostname, /arch,
 *     /os, node.kubernetes.io/instance-type, topology.kubernetes.io/zone,
 *     /region), the bootstrap's node labels and KS_KUBELET_INSTANCE_LABEL;
 *     taints: the bootstrap's registerWithTaints only; capacity and
 *     allocatable as the kubelet computes them (ks_nodeagent_resources);
 *     a Ready condition;
 *   - startup_taint_delay after registration does what the node's own
 *     agents do once they run: removes the taints whose keys are in
 *     agent_taints (CNI, CSI driver) and adds the extended resources
 *     (nvidia.com/gpu, aws.amazon.com/neuron...) a device plugin
 *     advertises;
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
 * --cluster-name, --kubelet-poll, --boot-delay, --startup-taint-delay,
 * --agent-taints and --catalog, and this kubesim's own API endpoint and
 * CA (ks_kubelet_cfg_set_apiserver, from main.c).  The module is idle
 * unless an AWS endpoint is configured (--aws-endpoint /
 * KUBESIM_AWS_ENDPOINT / AWS_ENDPOINT_URL), so kubesim runs without a
 * cloud by default.
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
/* Taints the node's own agents remove once they run (--agent-taints). */
#define KS_KUBELET_AGENT_TAINTS \
    "node.kubernetes.io/agent-not-ready,ebs.csi.aws.com/agent-not-ready,node.cilium.io/agent-not-ready"

typedef struct ks_kubelet_ec2_ops {
    /* The instances that may belong to cluster (any state; the simulator
     * filters).  On TLR_OK *out is filled and owned by the caller
     * (tlr_ec2_instances_free).  Any error: the pass changes nothing. */
    int (*describe_instances)(void *arg, const char *cluster, tlr_ec2_instances *out);
    /* The instance's user data, as the instance sees it (EC2's base64
     * removed).  On TLR_OK *out is new, NUL-terminated, owned by the
     * caller; "" when it has none.  TLR_E_NOTFOUND counts as none; other
     * errors: asked again next pass. */
    int (*user_data)(void *arg, const char *instance_id, char **out);
    /* The name of AMI image_id.  On TLR_OK *out is new and owned.
     * TLR_E_NOTFOUND (deregistered): the name is unknown ("").  May be
     * NULL: every name is unknown. */
    int (*image_name)(void *arg, const char *image_id, char **out);
    /* The sizes in bytes of the instance's root volume (/dev/xvda or
     * /dev/sda1) and of its data volume /dev/xvdb (*data 0 when it has
     * none): a node keeps pods' data on the root volume, Bottlerocket on
     * its data volume.  May be NULL, and any error: 20 GiB each. */
    int (*root_volume_bytes)(void *arg, const char *instance_id, int64_t *root, int64_t *data);
    void *arg;   /* borrowed */
} ks_kubelet_ec2_ops;

typedef struct ks_kubelet_opts {
    const char *cluster;            /* "kubesim"; copied */
    const char *region;             /* "us-east-1"; copied; NULL = zone minus letter */
    /* This kubesim as nodes must be told to reach it: "https://HOST:PORT"
     * and its CA certificate (PEM).  Copied.  NULL/"": not checked. */
    const char *api_endpoint;
    const char *ca_pem;
    /* Comma-separated taint keys the node's agents remove
     * startup_taint_delay after registration; NULL = KS_KUBELET_AGENT_TAINTS. */
    const char *agent_taints;
    int64_t boot_delay_ms;
    /* up to this much more per instance (a fixed share of it per instance
     * id): real instances launched together do not all boot at once */
    int64_t boot_jitter_ms;
    int64_t startup_taint_delay_ms;
    const tlr_clock *clock;         /* borrowed; NULL = system clock */
    /* The instance types' hardware comes from here (tlr_catalog.h); a
     * type it lacks, or a NULL catalog, gets a small default shape and a
     * warning.  Borrowed. */
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
    int untainted;     /* Nodes whose agents came up (taints gone, devices added) */
    int waiting;       /* running instances still booting */
    int refused;       /* running instances whose bootstrap never joins them */
} ks_kubelet_stats;

/* One reconcile pass (see above).  Returns the describe error when EC2
 * could not be read (nothing changed), else TLR_OK; stats may be NULL. */
int  ks_kubelet_pass(ks_kubelet *k, ks_kubelet_stats *stats);

extern const ks_module ks_kubelet_module;

/* For main.c, before the module starts: the API endpoint nodes reach this
 * kubesim at and its CA (PEM; NULL for plain HTTP).  cfg is the module's
 * settings block; both strings are borrowed and must outlive the module. */
void ks_kubelet_cfg_set_apiserver(void *cfg, const char *endpoint, const char *ca_pem);

#endif
