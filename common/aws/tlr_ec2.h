/* tlr_ec2.h - typed EC2 calls on the AWS Query client.
 *
 * The calls the kubelet simulator and the launcher need, with their
 * answers decoded into plain structs.  The decoders are exposed
 * (tlr_ec2_parse_*) so they can be tested on recorded XML.  EC2 API
 * version 2016-11-15.
 *
 * Result structs own all their strings; free them with the matching
 * *_free().  A tlr_ec2 client is a tlr_aws_query: one per thread.
 */
#ifndef TLR_EC2_H
#define TLR_EC2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tlr_awsquery.h"
#include "tlr_xml.h"

#define TLR_EC2_API_VERSION "2016-11-15"

typedef struct tlr_ec2_tag {
    char *key;
    char *value;
} tlr_ec2_tag;

typedef struct tlr_ec2_instance {
    char *id;              /* "i-0123..." */
    char *type;            /* "m5.large" */
    char *state;           /* pending running shutting-down terminated stopping stopped */
    char *zone;            /* "us-east-1a" */
    char *private_dns;     /* "ip-10-0-1-7.ec2.internal"; may be "" */
    char *private_ip;      /* may be "" */
    char *image_id;
    char *subnet_id;       /* may be "" */
    int64_t launch_ms;     /* wall clock; 0 if absent */
    bool spot;             /* instanceLifecycle == spot */
    tlr_ec2_tag *tags;
    size_t ntags;
} tlr_ec2_instance;

typedef struct tlr_ec2_instances {
    tlr_ec2_instance *v;
    size_t n;
} tlr_ec2_instances;

void tlr_ec2_instances_free(tlr_ec2_instances *l);   /* frees contents; NULL fine */
/* The value of tag key on inst, or NULL. Borrowed. */
const char *tlr_ec2_instance_tag(const tlr_ec2_instance *inst, const char *key);

typedef struct tlr_ec2_filter {
    const char *name;              /* "tag-key", "tag:Name", "instance-state-name" */
    const char *const *values;
    size_t nvalues;
} tlr_ec2_filter;

typedef struct tlr_ec2 tlr_ec2;

/* opts->service and ->version are filled in (ec2, 2016-11-15); the rest
 * as tlr_aws_query_create.  On TLR_OK *out is new and owned. */
int  tlr_ec2_create(const tlr_aws_query_opts *opts, tlr_ec2 **out);
void tlr_ec2_free(tlr_ec2 *e);   /* NULL is fine */

/* DescribeInstances with filters (borrowed, may be NULL) and/or instance
 * ids, following NextToken to the end (at most max_pages pages of 1000;
 * 0 = 100).  On TLR_OK *out is filled (owned by the caller). */
int tlr_ec2_describe_instances(tlr_ec2 *e, const tlr_ec2_filter *filters, size_t nfilters,
                               const char *const *ids, size_t nids, int max_pages,
                               tlr_ec2_instances *out, tlr_aws_error *err);

typedef struct tlr_ec2_run_opts {
    const char *image_id;       /* required */
    const char *instance_type;  /* required */
    int count;                  /* >= 1 */
    const char *subnet_id;      /* may be NULL */
    const char *zone;           /* Placement.AvailabilityZone; may be NULL */
    const tlr_ec2_tag *tags;    /* TagSpecification for the instances */
    size_t ntags;
    const char *client_token;   /* idempotency; may be NULL */
} tlr_ec2_run_opts;

/* RunInstances; on TLR_OK *out holds the launched instances. */
int tlr_ec2_run_instances(tlr_ec2 *e, const tlr_ec2_run_opts *o, tlr_ec2_instances *out,
                          tlr_aws_error *err);

/* TerminateInstances.  An id that does not exist is success (terminate is
 * idempotent for us): InvalidInstanceID.NotFound maps to TLR_OK. */
int tlr_ec2_terminate_instances(tlr_ec2 *e, const char *const *ids, size_t nids,
                                tlr_aws_error *err);

/* DescribeInstanceAttribute Attribute=userData for instance_id: the
 * instance's user data, decoded from EC2's base64.  On TLR_OK *out is new,
 * NUL-terminated and owned by the caller (free()); "" when the instance
 * has none.  Binary user data (gzip) is cut at its first NUL byte: the
 * callers read text.  TLR_E_NOTFOUND for an unknown instance (EC2's
 * InvalidInstanceID.NotFound); TLR_E_PARSE for an answer that is not a
 * DescribeInstanceAttributeResponse or whose value is not base64. */
int tlr_ec2_instance_user_data(tlr_ec2 *e, const char *instance_id, char **out,
                               tlr_aws_error *err);

/* CreateTags on resources. */
int tlr_ec2_create_tags(tlr_ec2 *e, const char *const *resource_ids, size_t nids,
                        const tlr_ec2_tag *tags, size_t ntags, tlr_aws_error *err);

/* --- CreateFleet (type instant) -------------------------------------- */

typedef struct tlr_ec2_fleet_override {
    const char *instance_type;
    const char *subnet_id;      /* may be NULL */
    const char *zone;           /* may be NULL */
    double priority;            /* < 0: not sent */
} tlr_ec2_fleet_override;

typedef struct tlr_ec2_fleet_req {
    const char *launch_template_id;     /* one of id or name */
    const char *launch_template_name;
    const char *launch_template_version;  /* NULL = "$Latest" */
    const tlr_ec2_fleet_override *overrides;
    size_t noverrides;
    int target_capacity;                /* total, >= 1 */
    bool spot;                          /* default target capacity type */
    const char *spot_allocation;        /* NULL = "price-capacity-optimized" */
    const char *on_demand_allocation;   /* NULL = "lowest-price" */
    const tlr_ec2_tag *tags;            /* tagged on instance and volume */
    size_t ntags;
    const char *client_token;           /* NodeClaim name */
} tlr_ec2_fleet_req;

typedef struct tlr_ec2_fleet_error {
    char *code;              /* "InsufficientInstanceCapacity" */
    char *message;
    char *instance_type;     /* the override that failed; may be "" */
    char *zone;
    char *subnet_id;
    bool spot;
    int  tlr_code;           /* tlr_aws_error_class(code, 0) */
} tlr_ec2_fleet_error;

typedef struct tlr_ec2_fleet_instance {
    char *id;
    char *instance_type;
    char *zone;              /* from the override; may be "" */
    char *subnet_id;
    bool spot;
} tlr_ec2_fleet_instance;

typedef struct tlr_ec2_fleet_result {
    char *fleet_id;
    tlr_ec2_fleet_instance *instances;
    size_t ninstances;
    tlr_ec2_fleet_error *errors;
    size_t nerrors;
} tlr_ec2_fleet_result;

void tlr_ec2_fleet_result_free(tlr_ec2_fleet_result *r);   /* contents; NULL fine */

/* CreateFleet Type=instant.  TLR_OK whenever EC2 answered 200, even with
 * no instance: the per-override errors are in out->errors. */
int tlr_ec2_create_fleet(tlr_ec2 *e, const tlr_ec2_fleet_req *r, tlr_ec2_fleet_result *out,
                         tlr_aws_error *err);

/* Build the CreateFleet parameters (exposed for tests). */
int tlr_ec2_fleet_params(const tlr_ec2_fleet_req *r, tlr_aws_params *p);

/* --- decoders -------------------------------------------------------- */

/* Append the instances of a DescribeInstancesResponse (reservationSet)
 * or RunInstancesResponse (instancesSet) root to *out; *next_token
 * (may be NULL) gets an owned copy of nextToken or NULL.  TLR_E_PARSE
 * when the root is neither, or an instance lacks its id. */
int tlr_ec2_parse_instances(const tlr_xml_node *root, tlr_ec2_instances *out,
                            char **next_token);
/* Decode a DescribeInstanceAttributeResponse root's userData/value
 * (base64) into *out (new, NUL-terminated, owned; "" when absent). */
int tlr_ec2_parse_user_data(const tlr_xml_node *root, char **out);
/* Decode a CreateFleetResponse root into *out (owned). */
int tlr_ec2_parse_create_fleet(const tlr_xml_node *root, tlr_ec2_fleet_result *out);

/* --- Describe* for node classes and the live catalog (ec2_describe.c) --
 *
 * Each call follows NextToken to the end (at most 100 pages) and returns
 * owned structs.  Filters as for DescribeInstances ("tag:Name",
 * "subnet-id", "group-name", ...); ids may be NULL.  The decoders append
 * one page to *out and give back nextToken (owned) or NULL. */

typedef struct tlr_ec2_subnet {
    char *id, *zone, *zone_id, *vpc_id;
    int64_t available_ips;
    tlr_ec2_tag *tags;
    size_t ntags;
} tlr_ec2_subnet;

typedef struct tlr_ec2_subnets {
    tlr_ec2_subnet *v;
    size_t n;
} tlr_ec2_subnets;

typedef struct tlr_ec2_security_group {
    char *id, *name, *vpc_id;
    tlr_ec2_tag *tags;
    size_t ntags;
} tlr_ec2_security_group;

typedef struct tlr_ec2_security_groups {
    tlr_ec2_security_group *v;
    size_t n;
} tlr_ec2_security_groups;

typedef struct tlr_ec2_image {
    char *id, *name, *arch, *state, *owner;   /* arch "x86_64" | "arm64" */
    int64_t creation_ms;                      /* 0 if absent */
    int64_t deprecation_ms;                   /* 0 = not deprecated */
    tlr_ec2_tag *tags;
    size_t ntags;
} tlr_ec2_image;

typedef struct tlr_ec2_images {
    tlr_ec2_image *v;
    size_t n;
} tlr_ec2_images;

/* What DescribeInstanceTypes says about one type, as the catalog needs it. */
typedef struct tlr_ec2_type_info {
    char *name;                 /* "m5.large" */
    char *arch;                 /* first supported architecture: "x86_64", "arm64", ... */
    int32_t vcpu;
    int64_t memory_mib;
    bool bare_metal;
    char *hypervisor;           /* "nitro", "xen", "" */
    char *cpu_manufacturer;     /* as EC2 spells it: "Intel", "AMD", "AWS" */
    bool spot, on_demand;       /* supportedUsageClasses */
    bool hvm;                   /* supportedVirtualizationTypes holds hvm */
    int32_t max_enis;           /* default network card's ENIs (else the type's) */
    int32_t ipv4_per_eni;
    int64_t network_mbps;       /* default card's baseline bandwidth, Mbit/s */
    int32_t efa;                /* maximumEfaInterfaces when EFA is supported */
    int64_t local_nvme_gb;      /* instance store total when NVMe; 0 = none */
    int32_t gpu_count;          /* first GPU entry */
    char *gpu_name, *gpu_manufacturer;
    int64_t gpu_memory_mib;     /* per GPU */
    int32_t neuron_devices, neuron_cores;   /* neuronInfo (Inferentia2/Trainium) */
    int32_t accelerator_count;  /* inferenceAcceleratorInfo (Inferentia1), else neuron devices */
    char *accelerator_name, *accelerator_manufacturer;
    int64_t ebs_max_mbps;       /* ebsOptimizedInfo/maximumBandwidthInMbps when EBS
                                 * optimisation is on by default; 0 = not */
    int32_t sustained_clock_mhz;  /* processorInfo's GHz x 1000, rounded; 0 = not given */
    bool encryption_in_transit; /* networkInfo/encryptionInTransitSupported */
    bool nitro_enclaves;        /* nitroEnclavesSupport = supported */
} tlr_ec2_type_info;

typedef struct tlr_ec2_type_infos {
    tlr_ec2_type_info *v;
    size_t n;
} tlr_ec2_type_infos;

/* One (instance type, zone) of DescribeInstanceTypeOfferings. */
typedef struct tlr_ec2_type_offering {
    char *type, *zone;
} tlr_ec2_type_offering;

typedef struct tlr_ec2_type_offerings {
    tlr_ec2_type_offering *v;
    size_t n;
} tlr_ec2_type_offerings;

typedef struct tlr_ec2_spot_price {
    char *type, *zone;
    double price;               /* USD per hour */
    int64_t ts_ms;
} tlr_ec2_spot_price;

typedef struct tlr_ec2_spot_prices {
    tlr_ec2_spot_price *v;
    size_t n;
} tlr_ec2_spot_prices;

void tlr_ec2_subnets_free(tlr_ec2_subnets *l);           /* contents; NULL fine */
void tlr_ec2_security_groups_free(tlr_ec2_security_groups *l);
void tlr_ec2_images_free(tlr_ec2_images *l);
void tlr_ec2_type_infos_free(tlr_ec2_type_infos *l);
void tlr_ec2_type_offerings_free(tlr_ec2_type_offerings *l);
void tlr_ec2_spot_prices_free(tlr_ec2_spot_prices *l);
/* The value of tag key among tags, or NULL (borrowed). */
const char *tlr_ec2_tag_get(const tlr_ec2_tag *tags, size_t ntags, const char *key);

int tlr_ec2_describe_subnets(tlr_ec2 *e, const tlr_ec2_filter *f, size_t nf,
                             const char *const *ids, size_t nids, tlr_ec2_subnets *out,
                             tlr_aws_error *err);
int tlr_ec2_describe_security_groups(tlr_ec2 *e, const tlr_ec2_filter *f, size_t nf,
                                     const char *const *ids, size_t nids,
                                     tlr_ec2_security_groups *out, tlr_aws_error *err);
/* owners (may be NULL): "self", "amazon", account ids. */
int tlr_ec2_describe_images(tlr_ec2 *e, const tlr_ec2_filter *f, size_t nf,
                            const char *const *ids, size_t nids, const char *const *owners,
                            size_t nowners, tlr_ec2_images *out, tlr_aws_error *err);
int tlr_ec2_describe_instance_types(tlr_ec2 *e, const tlr_ec2_filter *f, size_t nf,
                                    tlr_ec2_type_infos *out, tlr_aws_error *err);
/* LocationType availability-zone. */
int tlr_ec2_describe_instance_type_offerings(tlr_ec2 *e, tlr_ec2_type_offerings *out,
                                             tlr_aws_error *err);
/* Linux/UNIX prices from start_ms (0 = now) on; the newest per (type, zone). */
int tlr_ec2_describe_spot_price_history(tlr_ec2 *e, int64_t start_ms,
                                        tlr_ec2_spot_prices *out, tlr_aws_error *err);

int tlr_ec2_parse_subnets(const tlr_xml_node *root, tlr_ec2_subnets *out, char **next);
int tlr_ec2_parse_security_groups(const tlr_xml_node *root, tlr_ec2_security_groups *out,
                                  char **next);
int tlr_ec2_parse_images(const tlr_xml_node *root, tlr_ec2_images *out, char **next);
int tlr_ec2_parse_instance_types(const tlr_xml_node *root, tlr_ec2_type_infos *out,
                                 char **next);
int tlr_ec2_parse_type_offerings(const tlr_xml_node *root, tlr_ec2_type_offerings *out,
                                 char **next);
/* Keeps only the newest price per (type, zone) across pages. */
int tlr_ec2_parse_spot_prices(const tlr_xml_node *root, tlr_ec2_spot_prices *out,
                              char **next);

/* The underlying Query client (borrowed), for actions not wrapped here. */
tlr_aws_query *tlr_ec2_query(tlr_ec2 *e);

#endif
