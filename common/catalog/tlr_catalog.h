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
 *   - offerings: one on-demand offering per zone at the region's price;
 *     with spot_discount > 0 also one spot offering per zone at
 *     price * (1 - spot_discount).  A type without a price in the region
 *     gets no offerings and is left out of the catalog.
 *   - requirements: node.kubernetes.io/instance-type, kubernetes.io/arch,
 *     kubernetes.io/os and the karpenter.k8s.aws/instance-* labels, each
 *     as key In [value].
 *   - instance types sorted by name; hash = lowercase hex SHA-256 of the
 *     packed catalog with hash "" (instancetype.proto).
 */
#ifndef TLR_CATALOG_H
#define TLR_CATALOG_H

#include <stddef.h>

#include "tailor/v1/instancetype.pb-c.h"

/* The largest catalog file accepted. */
#define TLR_CATALOG_FILE_MAX (64u << 20)

typedef struct tlr_catalog_file_opts {
    const char *region;           /* NULL = "us-east-1" */
    const char *const *zones;     /* borrowed; NULL = region + "a", "b", "c" */
    size_t n_zones;
    double spot_discount;         /* 0 = on-demand offerings only; 0 < d < 1 */
    const char *price_source;     /* borrowed; copied; NULL = "file" */
} tlr_catalog_file_opts;

/* Parse buf[0..len) (borrowed).  o may be NULL (defaults).  On TLR_OK *out
 * is new and owned by the caller: free with tlr_catalog_free().  Errors:
 * TLR_E_PARSE (malformed JSON or an entry without a name / with a negative
 * or absurd quantity; err names the entry), TLR_E_TOOBIG, TLR_E_INVAL. */
int tlr_catalog_from_json(const char *buf, size_t len, const tlr_catalog_file_opts *o,
                          Tailor__V1__Catalog **out, char *err, size_t errlen);

/* Read and parse the file at path (borrowed).  As above, plus TLR_E_IO. */
int tlr_catalog_file_load(const char *path, const tlr_catalog_file_opts *o,
                          Tailor__V1__Catalog **out, char *err, size_t errlen);

void tlr_catalog_free(Tailor__V1__Catalog *c);   /* NULL is fine */

#endif
