/* tlr_bootstrap.h - the user data that makes an EC2 instance join the
 * cluster as a Node, per AMI family, with the semantics of Karpenter's
 * pkg/providers/amifamily/bootstrap (the rules, not its code):
 *
 *   AL2023        a MIME multipart/mixed document (boundary "//"): the
 *                 user's parts first, then tailor's NodeConfig
 *                 (node.eks.aws/v1alpha1, Content-Type
 *                 application/node.eks.aws) last, so nodeadm, which merges
 *                 NodeConfigs in order with later values winning, takes
 *                 tailor's cluster identity and kubelet settings over the
 *                 user's and keeps every other field the user set.  The
 *                 user's userData is taken as: a MIME document (its parts,
 *                 kept as they are), else a YAML mapping (one NodeConfig
 *                 part), else a shell script part.  tailor's NodeConfig:
 *                 spec.cluster {name, apiServerEndpoint, certificateAuthority
 *                 (the CA bundle, base64), cidr (service CIDR; required)},
 *                 spec.kubelet.config {maxPods, clusterDNS, registerWithTaints
 *                 and the kubelet fields of the EC2NodeClass},
 *                 spec.kubelet.flags ["--node-labels=k=v,..."] (sorted),
 *                 spec.instance.localStorage.strategy RAID0 when asked.
 *   AL2           a MIME document: the user's parts, then a shell part
 *                 running /etc/eks/bootstrap.sh 'CLUSTER' --apiserver-endpoint
 *                 '...' --b64-cluster-ca '...' [--dns-cluster-ip '...']
 *                 [--use-max-pods false] --kubelet-extra-args '--node-labels=...
 *                 --register-with-taints=... --max-pods=N ...' [--local-disks raid0].
 *   Bottlerocket  TOML: the user's TOML with settings.kubernetes
 *                 {cluster-name, api-server, cluster-certificate} set,
 *                 node-labels merged (tailor's win), node-taints replaced by
 *                 tailor's, max-pods, cluster-dns-ip, kube-reserved,
 *                 system-reserved, eviction-hard/-soft/-soft-grace-period,
 *                 eviction-max-pod-grace-period, image-gc-*-threshold-percent,
 *                 cpu-cfs-quota-enforced when set; RAID0 adds the
 *                 settings.bootstrap-commands entry that binds instance
 *                 storage.  Every other setting of the user's is kept.
 *   Custom        the user's userData, untouched (possibly empty).
 *   Windows*      refused: TLR_E_UNIMPLEMENTED with a reason (tailor does not
 *                 launch Windows nodes; the EC2NodeClass gets a condition).
 *
 * Output is deterministic: the same input gives the same bytes (labels
 * sorted by key, taints in the order given, maps in key order), so the
 * launch template name that hashes it is stable and drift does not loop.
 * The text is returned plain; EC2 wants it base64 (the caller encodes).
 */
#ifndef TLR_BOOTSTRAP_H
#define TLR_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/common.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"
#include "tlr_labels.h"

typedef enum tlr_ami_family {
    TLR_AMI_FAMILY_UNKNOWN = 0,
    TLR_AMI_FAMILY_AL2023,
    TLR_AMI_FAMILY_AL2,
    TLR_AMI_FAMILY_BOTTLEROCKET,
    TLR_AMI_FAMILY_CUSTOM,
    TLR_AMI_FAMILY_WINDOWS2019,
    TLR_AMI_FAMILY_WINDOWS2022,
    TLR_AMI_FAMILY_WINDOWS2025,
} tlr_ami_family;

/* "AL2023" / "al2023" (an alias family) -> TLR_AMI_FAMILY_AL2023, ...;
 * NULL or unknown -> TLR_AMI_FAMILY_UNKNOWN. */
tlr_ami_family tlr_ami_family_parse(const char *s);
/* The EC2NodeClass spelling: "AL2023", "AL2", "Bottlerocket", "Custom",
 * "Windows2019", ...; "" for UNKNOWN. */
const char *tlr_ami_family_name(tlr_ami_family f);
/* The family of NodeClass nc: spec.amiFamily (nc->ami_family) when set,
 * else the alias term's family; UNKNOWN when neither says. */
tlr_ami_family tlr_ami_family_of(const Tailor__V1__NodeClass *nc);

/* The cluster a node joins. */
typedef struct tlr_cluster_identity {
    const char *name;            /* EKS cluster name */
    const char *endpoint;        /* https://... API server */
    const char *ca_b64;          /* the CA bundle (PEM), base64 as EKS gives it */
    const char *service_cidr;    /* "10.100.0.0/16"; required by AL2023 */
    const char *dns_ip;          /* kube-dns ClusterIP; NULL/"" = the node's default */
} tlr_cluster_identity;

typedef struct tlr_bootstrap_in {
    tlr_ami_family family;
    const tlr_cluster_identity *cluster;           /* borrowed */
    const Tailor__V1__KubeletConfig *kubelet;      /* spec.kubelet; may be NULL */
    /* Max pods for the instance types this user data serves (Karpenter
     * groups types by it): 0 = leave it to the node (its ENI default). */
    int32_t max_pods;
    /* Node labels to register with (restricted kubernetes.io / k8s.io
     * labels already dropped by the caller: tlr_bootstrap_label_allowed). */
    const Tailor__V1__Label *const *labels;
    size_t nlabels;
    /* Taints to register with, in order: the NodeClaim's taints, its
     * startup taints and karpenter.sh/unregistered:NoExecute. */
    const Tailor__V1__Taint *const *taints;
    size_t ntaints;
    const char *user_data;                         /* spec.userData; may be NULL */
    bool raid0;                                    /* instanceStorePolicy: RAID0 */
} tlr_bootstrap_in;

/* The user data for in (borrowed).  On TLR_OK *out is new, NUL-terminated
 * and owned by the caller (free()); it may be "" for Custom without
 * userData.  Errors, with a one-line reason in err (errlen bytes):
 * TLR_E_INVAL (no cluster name/endpoint/CA, AL2023 without a service CIDR,
 * unknown family), TLR_E_PARSE (the user's userData is malformed: bad MIME,
 * bad TOML for Bottlerocket), TLR_E_UNIMPLEMENTED (Windows). */
int tlr_bootstrap_user_data(const tlr_bootstrap_in *in, char **out, char *err, size_t errlen);

/* May a node register itself with label key (what Karpenter's
 * RejectForbiddenLabels keeps)?  False for keys in the kubernetes.io,
 * k8s.io and node-restriction.kubernetes.io domains and their
 * subdomains; those reach the Node through the launcher's sync. */
bool tlr_bootstrap_label_allowed(const char *key);

#endif
