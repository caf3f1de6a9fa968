/* tlr_catalog.h - build a tailor.v1 Catalog from a catalog JSON file.
 *
 * The file format is that of ../shared/data/aws-instance-types.json: a JSON
 * array of objects, one per EC2 instance type, with label values
 * (family, category, generation, size, arch, os, vcpu, memory_mib, gpu_*,
 * hypervisor, ...), allocatable resources after Karpenter's overhead model
 * (allocatable_cpu_millicores, allocatable_memory_mib, max_pods,
 * ephemeral_storage_gib, nvidia_gpu, amd_gpu, neuron, neuroncore, efa,
 * pod_eni) and on-demand prices per region (od_price_usd_hr).
 *
 * Mapping (docs/solver.md, "Benchmarks", has the reasoning):
 *   - allocatable: cpu millicores, memory MiB -> bytes, pods = max_pods,
 *     ephemeral storage GiB -> bytes, the extended resources by their
 *     Kubernetes names (nvidia.com/gpu, amd.com/gpu, aws.amazon.com/neuron,
 *     aws.amazon.com/neuroncore, vpc.amazonaws.com/efa,
 *     vpc.amazonaws.com/pod-eni); capacity: vcpu, memory_mib, the same
 *     extended counts.
 *   - offerings: one on-demand offering per zone at the region's price
 *     and one spot offering per zone at price * (1 - spot_discount);
 *     spot_discount 0 prices spot at the on-demand price, which is what
 *     Karpenter assumes before it has a spot price.  no_spot leaves the
 *     spot offerings out.  A type without a price in the region gets no
 *     offerings and is left out of the catalog.  Each offering's zone_id
 *     is zone_ids[i] of its zone, "" when none is given: zone IDs are
 *     per account (us-east-1a is use1-az1 in one, use1-az4 in another),
 *     so the file cannot know them.
 *   - requirements: the labels Karpenter v1's aws provider gives the type
 *     (computeRequirements, pkg/providers/instancetype/types.go), each as
 *     key In [value...]; a label Karpenter leaves off is absent here too,
 *     so DoesNotExist matches it and Exists / In do not:
 *       always: node.kubernetes.io/instance-type, kubernetes.io/arch,
 *         kubernetes.io/os, topology.kubernetes.io/region,
 *         karpenter.k8s.aws/instance-{family,category,generation,size,cpu,
 *         memory,cpu-manufacturer,capability-flex ("-flex" in the family),
 *         tenancy (In [default, dedicated]: either may be chosen)};
 *       when the entry says: instance-{hypervisor (absent on metal),
 *         cpu-sustained-clock-speed-mhz, ebs-bandwidth, network-bandwidth,
 *         local-nvme, encryption-in-transit-supported ("true"/"false")},
 *         karpenter.k8s.aws/nitro-sandbox ("true"/"false"; Karpenter's
 *         key for NitroEnclavesSupport; the shared data file does not
 *         have it, the live catalog does);
 *       only with a GPU (gpu_name set): instance-gpu-{name,manufacturer,
 *         count,memory} (count may be "0": g6f's fractional GPUs);
 *       only with an accelerator (accelerator_name set):
 *         instance-accelerator-{name,manufacturer,count}.
 *     Zone, zone ID and capacity type are the offerings' (the solver
 *     reads them there).
 *   - instance types sorted by name; hash = lowercase hex SHA-256 of the
 *     packed catalog with hash "" (instancetype.proto).
 */
#ifndef TLR_CATALOG_H
#define TLR_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tlr_ec2.h"
#include "tlr_pricing.h"

/* The largest catalog file accepted. */
#define TLR_CATALOG_FILE_MAX (64u << 20)

typedef struct tlr_catalog_file_opts {
    const char *region;           /* NULL = "us-east-1" */
    const char *const *zones;     /* borrowed; NULL = region + "a", "b", "c" */
    size_t n_zones;
    double spot_discount;         /* spot = od x (1 - d), 0 <= d < 1; 0 = the od price */
    const char *price_source;     /* borrowed; copied; NULL = "file" */
    const char *const *zone_ids;  /* borrowed; parallel to zones[] (needs zones); NULL
                                   * or an entry NULL/"" = no zone ID for that zone */
    bool no_spot;                 /* true = on-demand offerings only */
} tlr_catalog_file_opts;

/* Parse buf[0..len) (borrowed).  o may be NULL (defaults).  On TLR_OK *out
 * is new and owned by the caller: free with tlr_catalog_free().  Errors:
 * TLR_E_PARSE (malformed JSON or an entry without a name / with a negative
 * or absurd quantity; err names the entry), TLR_E_TOOBIG, TLR_E_INVAL
 * (also spot_discount outside [0, 1), or zone_ids without zones). */
int tlr_catalog_from_json(const char *buf, size_t len, const tlr_catalog_file_opts *o,
                          Tailor__V1__Catalog **out, char *err, size_t errlen);

/* Read and parse the file at path (borrowed).  As above, plus TLR_E_IO. */
int tlr_catalog_file_load(const char *path, const tlr_catalog_file_opts *o,
                          Tailor__V1__Catalog **out, char *err, size_t errlen);

void tlr_catalog_free(Tailor__V1__Catalog *c);   /* NULL is fine */

/* ---- the live catalog (catalog_live.c) ------------------------------
 *
 * The same Catalog built from what EC2 says now: DescribeInstanceTypes
 * (which types exist and what they hold), DescribeInstanceTypeOfferings
 * (in which zones), DescribeSpotPriceHistory (spot prices per zone) and
 * the Pricing API (on-demand prices).  The catalog file is the fallback,
 * type by type:
 *   - resources are computed from the live description with Karpenter's
 *     overhead model (types.go): allocatable memory = memory (- 64 MiB on
 *     arm64) - ceil(7.5 %) VM overhead - kube-reserved (11 MiB x pods +
 *     255 MiB) - 100 MiB eviction threshold; allocatable cpu = vCPUs -
 *     kube-reserved (6 % of the first core, 1 % of the second, 0.5 % of
 *     the next two, 0.25 % of the rest); pods = ENIs of the default
 *     network card x (IPv4 per ENI - 1) + 2; ephemeral storage 17 GiB
 *     (the default 20 GiB root volume less reservations);
 *   - labels are taken from the file's entry when it has the type (they
 *     are Karpenter's), else derived from the name and the description;
 *     vpc.amazonaws.com/pod-eni comes from the file only (no EC2 API
 *     says it);
 *   - on-demand price: the Pricing API's; for a type it does not price,
 *     or when on_demand is NULL (the API failed), the file's on-demand
 *     price; a type priced by neither is left out;
 *   - spot price per zone: the newest history price, unless it is below
 *     spot_floor x on-demand (EC2 never discounts that deep; moto answers
 *     0.00001 for every type), then on-demand x (1 - spot_discount), as
 *     for a zone without history (spot_discount 0: at the on-demand
 *     price, as Karpenter before its first spot price update).  A type EC2
 *     does not sell as spot, or every type with no_spot, gets no spot
 *     offering;
 *   - zones: those DescribeInstanceTypeOfferings lists for the type,
 *     kept only when in zones[] (NULL = all); each offering's zone_id
 *     from az_names[] / az_ids[] (DescribeAvailabilityZones or the
 *     subnets' AvailabilityZoneId), "" for a zone not listed there;
 *   - labels as for the file (above), from the description: GPU labels
 *     when DescribeInstanceTypes lists a GPU, accelerator labels for
 *     NeuronInfo (manufacturer "aws") or else InferenceAcceleratorInfo,
 *     ebs-bandwidth = EbsOptimizedInfo.MaximumBandwidthInMbps when EBS
 *     optimisation is on by default, cpu-sustained-clock-speed-mhz =
 *     SustainedClockSpeedInGhz x 1000 rounded, encryption-in-transit and
 *     nitro-sandbox from NetworkInfo / NitroEnclavesSupport; names are
 *     lower-kebab-case ("Radeon Pro V520" -> "radeon-pro-v520").
 * The hash is computed as for the file, so solvers cache it the same way;
 * price_source says which prices were used ("ec2+pricing-api" or
 * "ec2+file"). */


typedef struct tlr_catalog_live_in {
    const char *region;                      /* NULL = "us-east-1" */
    const tlr_ec2_type_infos *types;         /* required */
    const tlr_ec2_type_offerings *offerings; /* NULL = every zone in zones[] */
    const tlr_ec2_spot_prices *spot;         /* NULL = no history */
    const tlr_prices *on_demand;             /* NULL = the Pricing API failed */
    const Tailor__V1__Catalog *fallback;     /* the catalog file; may be NULL */
    const char *const *zones;                /* borrowed; NULL = all offered */
    size_t n_zones;
    double spot_discount;                    /* without a usable price: od x (1 - d);
                                              * 0 <= d < 1, 0 = the od price */
    double spot_floor;                       /* 0 = 0.05 */
    const char *const *az_names;             /* borrowed; zone names, parallel to */
    const char *const *az_ids;               /* zone IDs ("use1-az1"); NULL = none */
    size_t n_az;
    bool no_spot;                            /* true = on-demand offerings only */
    bool keep_unpriced;                      /* a type priced nowhere is kept at $0
                                              * (counted as unpriced): for tools
                                              * that size, never price (convert) */
} tlr_catalog_live_in;

typedef struct tlr_catalog_live_stats {
    size_t types_seen;       /* described by EC2 */
    size_t types_kept;       /* in the catalog */
    size_t od_live;          /* priced by the Pricing API */
    size_t od_fallback;      /* priced by the file */
    size_t unpriced;         /* left out: no price anywhere */
    size_t unsupported;      /* left out: not hvm, not x86_64/arm64 */
    size_t spot_live;        /* spot offerings at the history price */
    size_t spot_fallback;    /* spot offerings at on-demand x (1 - discount) */
    size_t spot_implausible; /* history prices refused by the floor */
} tlr_catalog_live_stats;

/* Build; on TLR_OK *out is new and owned (tlr_catalog_free) and *st (may
 * be NULL) says where each figure came from.  TLR_E_INVAL without types
 * or with spot_discount outside [0, 1); TLR_E_NOTFOUND when no type is
 * left. */
int tlr_catalog_from_ec2(const tlr_catalog_live_in *in, Tailor__V1__Catalog **out,
                         tlr_catalog_live_stats *st, char *err, size_t errlen);

/* The InstanceType of that name in c (sorted), or NULL; borrowed. */
const Tailor__V1__InstanceType *tlr_catalog_find(const Tailor__V1__Catalog *c,
                                                 const char *name);

/* A copy of c keeping only the offerings in zones[] (a type left without
 * offerings is dropped), hashed afresh; price_source kept.  New, owned. */
Tailor__V1__Catalog *tlr_catalog_restrict_zones(const Tailor__V1__Catalog *c,
                                                const char *const *zones, size_t n_zones);

/* Rehash c after changing it: hash = hex SHA-256 of c packed with hash "". */
void tlr_catalog_set_hash(Tailor__V1__Catalog *c);

#endif
