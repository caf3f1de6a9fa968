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
/* Decode a CreateFleetResponse root into *out (owned). */
int tlr_ec2_parse_create_fleet(const tlr_xml_node *root, tlr_ec2_fleet_result *out);

#endif
