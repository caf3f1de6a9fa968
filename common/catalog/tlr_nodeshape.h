/* tlr_nodeshape.h - what a node of an instance type can hold under one
 * EC2NodeClass: capacity and allocatable computed from the type's raw
 * figures (vCPUs, memory, ENI-limited pods, instance storage) and the
 * class's AMI family, kubelet settings and block devices, with Karpenter's
 * model (pkg/providers/instancetype/types.go; the formulas, not its code):
 *
 *   pods       kubelet.maxPods if set, else the ENI-limited pods (AL2023,
 *              AL2, Bottlerocket) or 110 (Windows, Custom: ENI-limited as
 *              AL2023); then min(podsPerCore x vCPUs, that) when podsPerCore
 *              is set and the family honours it (not Bottlerocket);
 *   cpu        vCPUs;
 *   memory     MiB (- 64 MiB on arm64) - ceil(7.5 %) VM overhead;
 *   ephemeral  RAID0 with instance storage: the NVMe total (GB, 10^9);
 *              else the root volume's size (a mapping with rootVolume, else
 *              the family's root device: /dev/xvda, /dev/xvdb for
 *              Bottlerocket's data volume, the last mapping for Custom);
 *              else the family's default (20 GiB);
 *   kube-reserved  cpu 6 % of the first core, 1 % of the second, 0.5 % of
 *              the next two, 0.25 % of the rest; memory 11 MiB x pods +
 *              255 MiB, where pods is the ENI-limited figure for AL2023 and
 *              AL2 (their bootstrap reserves by it whatever maxPods says)
 *              and the pods above for the others; ephemeral 1 GiB; each
 *              overridden by kubelet.kubeReserved;
 *   system-reserved  kubelet.systemReserved (none by default);
 *   eviction   memory.available 100 MiB, nodefs.available 10 % of the
 *              ephemeral storage; evictionHard's memory.available /
 *              nodefs.available override (a percentage of capacity, 100 %
 *              meaning off); evictionSoft does not count;
 *   allocatable = capacity - kube-reserved - system-reserved - eviction,
 *              never below 0; extended resources (GPUs, Neuron, EFA,
 *              pod-ENI) as the catalog has them.
 * With no kubelet settings, AL2023 and no block devices the result is the
 * catalog file's own allocatable (which assumes exactly that).
 */
#ifndef TLR_NODESHAPE_H
#define TLR_NODESHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"

typedef struct tlr_node_shape {
    const char *ami_family;                        /* "AL2023" (NULL = AL2023), "AL2", ... */
    const Tailor__V1__KubeletConfig *kubelet;      /* borrowed; may be NULL */
    Tailor__V1__BlockDeviceMapping *const *bdms;   /* borrowed; may be NULL */
    size_t n_bdms;
    bool raid0;                                    /* instanceStorePolicy: RAID0 */
} tlr_node_shape;

/* One volume a launch gets by default. */
typedef struct tlr_default_bdm {
    const char *device;        /* "/dev/xvda" */
    int64_t size_bytes;
} tlr_default_bdm;

/* The volumes an instance of ami_family (NULL = AL2023) is launched with
 * when its EC2NodeClass names no blockDeviceMappings, as Karpenter's
 * DefaultBlockDeviceMappings: AL2023 and AL2 /dev/xvda 20 GiB;
 * Bottlerocket /dev/xvda 4 GiB (OS) and /dev/xvdb 20 GiB (data); Windows
 * /dev/sda1 50 GiB; Custom none (the AMI's own).  All gp3, encrypted.
 * *out points at static storage; returns how many. */
size_t tlr_node_shape_default_bdms(const char *ami_family, const tlr_default_bdm **out);

/* The shape of NodeClass nc (borrowed; the result points into it). */
tlr_node_shape tlr_node_shape_of(const Tailor__V1__NodeClass *nc);

/* Is s the default shape (AL2023, no kubelet settings, no block devices,
 * no RAID0), for which the catalog needs no change? */
bool tlr_node_shape_is_default(const tlr_node_shape *s);

/* A short identity of s (lowercase hex SHA-256 of the settings the model
 * reads, 64 characters + NUL) into out[TLR_NODE_SHAPE_KEY_LEN]: equal for
 * shapes that size nodes alike, so a cache of shaped catalogs can be keyed
 * by it.  Every default shape has the same key. */
#define TLR_NODE_SHAPE_KEY_LEN 65
void tlr_node_shape_key(const tlr_node_shape *s, char out[TLR_NODE_SHAPE_KEY_LEN]);

/* Recompute it's (modified in place) max_pods, capacity, allocatable and
 * overhead for shape s (borrowed).  Extended resources are kept. */
void tlr_node_shape_apply(Tailor__V1__InstanceType *it, const tlr_node_shape *s);

/* A copy of c (borrowed) with every type shaped by s and hashed afresh;
 * new, owned by the caller (tlr_catalog_free).  For a default shape the
 * copy is c unchanged (same hash): c already is that shape. */
Tailor__V1__Catalog *tlr_catalog_shaped(const Tailor__V1__Catalog *c, const tlr_node_shape *s);

#endif
