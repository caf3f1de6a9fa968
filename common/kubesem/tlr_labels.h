/* tlr_labels.h - the well-known Kubernetes, AWS and Karpenter keys (labels,
 * annotations, taints, tags, finalizers), spelled once.
 *
 * Every key is a string-literal macro so that it still concatenates into
 * messages and JSON ("label \"" TLR_LABEL_NODEPOOL "\" is restricted") and
 * works in static tables.  Tests may keep the literal where the literal is
 * the point (a fixture that reads like a user's manifest). */
#ifndef TLR_LABELS_H
#define TLR_LABELS_H

/* ---- Kubernetes ----------------------------------------------------- */

#define TLR_LABEL_HOSTNAME      "kubernetes.io/hostname"
#define TLR_LABEL_ARCH          "kubernetes.io/arch"
#define TLR_LABEL_OS            "kubernetes.io/os"
#define TLR_LABEL_INSTANCE_TYPE "node.kubernetes.io/instance-type"
#define TLR_LABEL_WINDOWS_BUILD "node.kubernetes.io/windows-build"
#define TLR_LABEL_ZONE          "topology.kubernetes.io/zone"
#define TLR_LABEL_REGION        "topology.kubernetes.io/region"

/* The deprecated aliases kubelets and cloud controllers still set, which
 * Karpenter reads as the stable keys above (its NormalizedLabels). */
#define TLR_LABEL_BETA_ARCH          "beta.kubernetes.io/arch"
#define TLR_LABEL_BETA_OS            "beta.kubernetes.io/os"
#define TLR_LABEL_BETA_INSTANCE_TYPE "beta.kubernetes.io/instance-type"
#define TLR_LABEL_BETA_ZONE          "failure-domain.beta.kubernetes.io/zone"
#define TLR_LABEL_BETA_REGION        "failure-domain.beta.kubernetes.io/region"

/* ---- AWS ------------------------------------------------------------ */

#define TLR_LABEL_ZONE_ID "topology.k8s.aws/zone-id"

/* ---- Karpenter (karpenter.sh) --------------------------------------- */

/* The restricted label domain, and the prefix of its keys. */
#define TLR_DOMAIN_KARPENTER "karpenter.sh"
#define TLR_PREFIX_KARPENTER TLR_DOMAIN_KARPENTER "/"

#define TLR_LABEL_NODEPOOL      "karpenter.sh/nodepool"       /* also an EC2 tag */
#define TLR_LABEL_CAPACITY_TYPE "karpenter.sh/capacity-type"
#define TLR_LABEL_REGISTERED    "karpenter.sh/registered"
#define TLR_LABEL_INITIALIZED   "karpenter.sh/initialized"

#define TLR_TAG_NODECLAIM  "karpenter.sh/nodeclaim"
#define TLR_TAG_MANAGED_BY "karpenter.sh/managed-by"
#define TLR_TAG_DISCOVERY  "karpenter.sh/discovery"

#define TLR_ANNOTATION_DO_NOT_DISRUPT         "karpenter.sh/do-not-disrupt"
#define TLR_ANNOTATION_MIN_VALUES_RELAXED     "karpenter.sh/nodeclaim-min-values-relaxed"
#define TLR_ANNOTATION_NODEPOOL_HASH          "karpenter.sh/nodepool-hash"
#define TLR_ANNOTATION_NODEPOOL_HASH_VERSION  "karpenter.sh/nodepool-hash-version"
#define TLR_ANNOTATION_TERMINATION_TIMESTAMP  "karpenter.sh/nodeclaim-termination-timestamp"
/* tailor's: a claim of a plan's second stage (solve.c, plangate.h) */
#define TLR_ANNOTATION_PLAN_STAGE             "tailor.sh/plan-stage"

#define TLR_TAINT_DISRUPTED    "karpenter.sh/disrupted"       /* NoSchedule */
#define TLR_TAINT_UNREGISTERED "karpenter.sh/unregistered"    /* NoExecute */

#define TLR_FINALIZER_TERMINATION "karpenter.sh/termination"

/* ---- Karpenter's AWS provider (karpenter.k8s.aws) ------------------- */

#define TLR_DOMAIN_KARPENTER_AWS "karpenter.k8s.aws"
#define TLR_PREFIX_KARPENTER_AWS TLR_DOMAIN_KARPENTER_AWS "/"

#define TLR_LABEL_NODECLASS "karpenter.k8s.aws/ec2nodeclass"  /* also an EC2 tag */
#define TLR_ANNOTATION_NODECLASS_HASH         "karpenter.k8s.aws/ec2nodeclass-hash"
#define TLR_ANNOTATION_NODECLASS_HASH_VERSION "karpenter.k8s.aws/ec2nodeclass-hash-version"

/* The instance-type labels (Karpenter's v1 well-known labels of the AWS
 * provider). */
#define TLR_LABEL_INSTANCE_CATEGORY          "karpenter.k8s.aws/instance-category"
#define TLR_LABEL_INSTANCE_FAMILY            "karpenter.k8s.aws/instance-family"
#define TLR_LABEL_INSTANCE_GENERATION        "karpenter.k8s.aws/instance-generation"
#define TLR_LABEL_INSTANCE_SIZE              "karpenter.k8s.aws/instance-size"
#define TLR_LABEL_INSTANCE_CPU               "karpenter.k8s.aws/instance-cpu"
#define TLR_LABEL_INSTANCE_CPU_MANUFACTURER  "karpenter.k8s.aws/instance-cpu-manufacturer"
#define TLR_LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ \
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
#define TLR_LABEL_INSTANCE_MEMORY            "karpenter.k8s.aws/instance-memory"
#define TLR_LABEL_INSTANCE_HYPERVISOR        "karpenter.k8s.aws/instance-hypervisor"
#define TLR_LABEL_INSTANCE_LOCAL_NVME        "karpenter.k8s.aws/instance-local-nvme"
#define TLR_LABEL_INSTANCE_NETWORK_BANDWIDTH "karpenter.k8s.aws/instance-network-bandwidth"
#define TLR_LABEL_INSTANCE_EBS_BANDWIDTH     "karpenter.k8s.aws/instance-ebs-bandwidth"
#define TLR_LABEL_INSTANCE_GPU_NAME          "karpenter.k8s.aws/instance-gpu-name"
#define TLR_LABEL_INSTANCE_GPU_MANUFACTURER  "karpenter.k8s.aws/instance-gpu-manufacturer"
#define TLR_LABEL_INSTANCE_GPU_COUNT         "karpenter.k8s.aws/instance-gpu-count"
#define TLR_LABEL_INSTANCE_GPU_MEMORY        "karpenter.k8s.aws/instance-gpu-memory"
#define TLR_LABEL_INSTANCE_ACCELERATOR_NAME  "karpenter.k8s.aws/instance-accelerator-name"
#define TLR_LABEL_INSTANCE_ACCELERATOR_MANUFACTURER \
    "karpenter.k8s.aws/instance-accelerator-manufacturer"
#define TLR_LABEL_INSTANCE_ACCELERATOR_COUNT "karpenter.k8s.aws/instance-accelerator-count"
#define TLR_LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED \
    "karpenter.k8s.aws/instance-encryption-in-transit-supported"
#define TLR_LABEL_INSTANCE_CAPABILITY_FLEX   "karpenter.k8s.aws/instance-capability-flex"
#define TLR_LABEL_INSTANCE_TENANCY           "karpenter.k8s.aws/instance-tenancy"
#define TLR_LABEL_NITRO_SANDBOX              "karpenter.k8s.aws/nitro-sandbox"
#define TLR_LABEL_CAPACITY_RESERVATION_ID    "karpenter.k8s.aws/capacity-reservation-id"
#define TLR_LABEL_CAPACITY_RESERVATION_TYPE  "karpenter.k8s.aws/capacity-reservation-type"
#define TLR_LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE \
    "karpenter.k8s.aws/capacity-reservation-interruptible"
#define TLR_LABEL_PLACEMENT_GROUP_ID         "karpenter.k8s.aws/placement-group-id"
#define TLR_LABEL_PLACEMENT_GROUP_PARTITION  "karpenter.k8s.aws/placement-group-partition"

#endif
