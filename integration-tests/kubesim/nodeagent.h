/* nodeagent.h - what a node's boot agent makes of its EC2 user data, for
 * the kubelet simulator.
 *
 * A real node knows only its user data, its AMI (which agent is baked in),
 * its instance type's hardware and its tags.  ks_nodeagent_run is that
 * node's boot, as a pure function: from the user data bytes, the AMI name
 * and the hardware facts to either a node configuration (what the kubelet
 * would start with) or a refusal with a one-line reason (the node never
 * joins).  Which agent runs:
 *   AMI name contains "bottlerocket"            Bottlerocket (TOML settings)
 *   "al2023"                                    nodeadm (NodeConfig)
 *   "amazon-eks-node-", "amazon-eks-gpu-node-",
 *   "amazon-eks-arm64-node-"                    AL2 /etc/eks/bootstrap.sh
 *   "windows"                                   refused: not simulated
 *   anything else (moto's canned AMIs)          decided by the user data's
 *                                               format
 * (names compared case-insensitively).  The rules per agent follow
 * nodeadm (awslabs/amazon-eks-ami nodeadm/internal), AL2's bootstrap.sh
 * and Bottlerocket's settings; see nodeagent.c.
 *
 * The node only joins a cluster it can reach and trust: the endpoint must
 * be this kubesim's (scheme://host:port), the CA this kubesim's CA
 * certificate, the cluster name this kubesim's --cluster-name; labels the
 * kubelet refuses under NodeRestriction make it exit at start.
 *
 * ks_nodeagent_resources is the kubelet's side: capacity and allocatable
 * from the configuration and the hardware.
 */
#ifndef KS_NODEAGENT_H
#define KS_NODEAGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* An extended resource the hardware brings (a device plugin advertises it). */
typedef struct ks_na_ext {
    const char *name;      /* "nvidia.com/gpu", "aws.amazon.com/neuron" */
    int64_t count;
} ks_na_ext;

/* The instance type's hardware, from the catalog.  All borrowed. */
typedef struct ks_na_hw {
    const char *type;      /* "m5.large" (for messages) */
    int32_t vcpu;
    int64_t memory_mib;    /* advertised */
    const char *arch;      /* "amd64" | "arm64" */
    int32_t eni_max_pods;  /* the VPC CNI's figure; 0 = unknown (110) */
    int64_t nvme_bytes;    /* local NVMe instance store, total; 0 = none */
    const ks_na_ext *ext;
    size_t next;
} ks_na_hw;

/* The cluster the simulator is: what a node must be told to join it. */
typedef struct ks_na_cluster {
    const char *name;      /* --cluster-name */
    const char *endpoint;  /* "https://127.0.0.1:6443"; NULL/"" = accept any */
    const char *ca_pem;    /* PEM; NULL/"" = accept any */
} ks_na_cluster;

typedef enum ks_na_agent {
    KS_NA_NONE = 0,
    KS_NA_NODEADM,
    KS_NA_AL2,
    KS_NA_BOTTLEROCKET,
} ks_na_agent;

const char *ks_na_agent_name(ks_na_agent a);   /* "nodeadm", "al2", ... */

/* A booted node's configuration.  Owned by whoever ks_nodeagent_run
 * filled it: ks_na_config_free. */
typedef struct ks_na_config {
    ks_na_agent agent;
    json_object *labels;          /* {key: "value"}: the bootstrap's node labels */
    json_object *taints;          /* [{key, value?, effect}]: registerWithTaints */
    int32_t max_pods;
    int32_t pods_per_core;        /* 0 = unset */
    json_object *kube_reserved;   /* {cpu|memory|ephemeral-storage: "quantity"} */
    json_object *system_reserved; /* same; may be empty */
    json_object *eviction_hard;   /* {memory.available: "100Mi", nodefs.available: "10%"} */
    bool raid0;                   /* instance-store NVMe as one RAID0 ephemeral volume */
    char **ran;                   /* what it ran, in order: "nodeadm: NodeConfig 1/2", ... */
    size_t nran;
} ks_na_config;

void ks_na_config_free(ks_na_config *c);   /* contents; NULL fine */

/* Boot a node: ud[0..len) is the user data as the instance sees it
 * (EC2's transport base64 already removed); ami_name may be NULL or "".
 * All borrowed.  On TLR_OK *out is filled (owned; ks_na_config_free).
 * Otherwise the node never joins and reason (reasonlen bytes, always
 * NUL-terminated) says why in one line: TLR_E_NOTFOUND no bootstrap in
 * the user data; TLR_E_PARSE malformed document; TLR_E_INVAL a required
 * field missing or a label the kubelet refuses; TLR_E_AUTH another
 * cluster's endpoint, CA or name; TLR_E_UNIMPLEMENTED not simulated
 * (Windows, bootstrap.sh asking EKS for the cluster). */
int ks_nodeagent_run(const char *ud, size_t len, const char *ami_name, const ks_na_hw *hw,
                     const ks_na_cluster *cluster, ks_na_config *out, char *reason,
                     size_t reasonlen);

/* The Node's status.capacity and status.allocatable as the kubelet
 * computes them.  The simulator's hardware model: the OS reports
 * memory_mib (minus 64 MiB on arm64) less 7.5 % (rounded up) for the
 * kernel and firmware.  Ephemeral storage is the NVMe total with RAID0,
 * else root_bytes (0 = 20 GiB).  Extended resources only when with_ext
 * (once the device plugin runs).  allocatable = capacity - kubeReserved -
 * systemReserved - evictionHard (memory.available, nodefs.available;
 * percentages of capacity), never below 0.  On TLR_OK *capacity and
 * *allocatable are new JSON objects of quantity strings (owned). */
int ks_nodeagent_resources(const ks_na_config *c, const ks_na_hw *hw, int64_t root_bytes,
                           bool with_ext, json_object **capacity, json_object **allocatable);

/* Exposed for tests: does a --node-labels key pass the kubelet's
 * NodeRestriction check (non-kubernetes.io/k8s.io keys always do)? */
bool ks_nodeagent_label_allowed(const char *key);

#endif
