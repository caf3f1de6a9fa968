/* tlr_nodegroup.h - Cluster Autoscaler node-group configs to Karpenter v1.
 *
 * Platform teams describe their Auto Scaling Groups as ConfigMaps, one per
 * node group:
 *
 *   metadata: {name: m5.8xlarge-min-300-max-2500}
 *   data:
 *     k8s_instance_type: m6i.8xlarge
 *     k8s_root_volume_size: '100'
 *     k8s_min_node_number: '300'
 *     k8s_max_node_number: '2500'
 *     multi_az_provisioned_workers: 'false'
 *     gpu_enabled: 'false'
 *     ...
 *
 * This module turns many of them into karpenter.sh/v1 NodePools and
 * karpenter.k8s.aws/v1 EC2NodeClasses, in three pure steps:
 *
 *   1. tlr_ng_parse: one ConfigMap -> one tlr_ng_group.  Every data key is
 *      known (docs/migration.md lists them); an unknown key or a bad value
 *      is an error naming the file, the ConfigMap and the key.  Values that
 *      are well formed but cannot be carried over (a minimum size, the ASG
 *      launch type, IOPS on a gp2 volume, ...) are recorded on the group as
 *      drops, with the reason; decisions taken for the user (a single-AZ
 *      group pinned to a zone) as notes.
 *   2. tlr_ng_convert: groups that differ only in instance size or
 *      generation (same category, architecture, CPU maker, capability
 *      letters and GPU: m5, m6i, m7i are one shape; m6a and m7g are others)
 *      and agree on everything else become one flexible NodePool allowing
 *      the union of their families and sizes; its limits are the sum over
 *      its groups of max nodes x the type's vCPUs, memory (and GPUs) and a
 *      node count.  Identical node-class settings share one EC2NodeClass.
 *      Names are DNS-1123 labels of at most 63 characters (they are also
 *      the karpenter.sh/nodepool label value); when two pools of one shape
 *      differ in other settings each name gets an 8-hex suffix hashed from
 *      its settings, so names do not depend on input order.
 *   3. tlr_ng_result_yaml / _json / _report_*: the objects (NodePools by
 *      name, then EC2NodeClasses by name, keys in a fixed order) and the
 *      report: pools with their groups, and every drop and note.
 *
 * Output is deterministic: the same inputs, in any order, give the same
 * bytes.  Nothing here does I/O.
 */
#ifndef TLR_NODEGROUP_H
#define TLR_NODEGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tlr_buf.h"

#define TLR_NG_ERRLEN 512

typedef struct tlr_ng_opts {
    const Tailor__V1__Catalog *catalog;  /* borrowed; required */
    const char *const *zones;            /* borrowed; zones of a multi-AZ group */
    size_t nzones;                       /* >= 1 */
    const char *cluster;                 /* borrowed; karpenter.sh/discovery tag value */
    const char *role;                    /* borrowed; NULL = "KarpenterNodeRole-<cluster>" */
    const char *ami_alias;               /* borrowed; NULL = "al2023@latest" */
    const char *ami_family;              /* borrowed; with an AMI id; NULL = "AL2023" */
} tlr_ng_opts;

typedef struct tlr_ng_kv {
    char *key;     /* owned */
    char *value;   /* owned */
} tlr_ng_kv;

typedef struct tlr_ng_taint {
    char *key, *value, *effect;   /* owned; value may be "" */
} tlr_ng_taint;

/* A field of the source that is not carried into the output. */
typedef struct tlr_ng_drop {
    char *key;      /* owned: "k8s_min_node_number" */
    char *value;    /* owned: the source value, as text */
    char *reason;   /* owned: why, and what to do instead */
} tlr_ng_drop;

/* One node group as read (all strings owned; lists sorted, unique). */
typedef struct tlr_ng_group {
    char *file;                 /* where it was read */
    char *name;                 /* metadata.name */
    char *instance_type;
    const Tailor__V1__InstanceType *type;  /* borrowed from the catalog */
    int64_t min_nodes, max_nodes;
    /* root volume; has_volume when any volume key was given */
    bool has_volume;
    int64_t volume_gib;         /* 0 = not given */
    char *volume_type;          /* NULL = not given (gp3 is written) */
    int64_t iops, throughput;   /* 0 = not given / not carried */
    int encrypted;              /* -1 not given, 0, 1 */
    char *kms_key;
    char *device_name;          /* NULL = /dev/xvda */
    char **zones;               /* the zones this group may use */
    size_t nzones;
    bool gpu;                   /* gpu_enabled */
    char *capacity;             /* "on-demand", "spot" or "mixed" */
    tlr_ng_kv *labels;
    size_t nlabels;
    tlr_ng_taint *taints;
    size_t ntaints;
    tlr_ng_kv *tags;
    size_t ntags;
    char *ami_id;
    char *ami_family;
    char **subnets, **security_groups;
    size_t nsubnets, nsecurity_groups;
    char *instance_profile, *role;
    int64_t max_pods;           /* 0 = not given */
    int detailed_monitoring;    /* -1 not given, 0, 1 */
    tlr_ng_drop *drops;
    size_t ndrops;
    char **notes;
    size_t nnotes;
} tlr_ng_group;

/* Read one ConfigMap (borrowed; kind ConfigMap or no kind) found in file
 * (borrowed, for messages).  On TLR_OK *out is new and owned: free with
 * tlr_ng_group_free().  TLR_E_INVAL: not a ConfigMap, no name or no data,
 * an unknown key, a required key missing, or contradictory keys;
 * TLR_E_PARSE: a value of the wrong form; TLR_E_RANGE: out of range;
 * TLR_E_NOTFOUND: the instance type is not in the catalog.  err gets
 * "FILE: ConfigMap NAME: data.KEY: what is wrong". */
int  tlr_ng_parse(json_object *cm, const char *file, const tlr_ng_opts *o,
                  tlr_ng_group **out, char *err, size_t errlen);
void tlr_ng_group_free(tlr_ng_group *g);   /* NULL is fine */

/* The shape key and name of an instance type (borrowed): types of one
 * shape differ only in size or generation.  key/name are written to the
 * buffers (NUL-terminated; >= 96 bytes each is enough).  Name example:
 * "m-intel", "r-amd-d", "c-graviton-n", "g-nvidia-a10g". */
void tlr_ng_shape(const Tailor__V1__InstanceType *t, char *key, size_t keylen,
                  char *name, size_t namelen);

/* Make s a DNS-1123 label of at most max (<= 63) characters: lowercase,
 * runs of other characters become one '-', no leading/trailing '-'.  When
 * it had to be cut, the last 9 characters become "-" + 8 hex digits of a
 * hash of the whole input, so distinct long inputs stay distinct.  An
 * input with no usable character becomes "x".  out >= max + 1 bytes. */
void tlr_ng_dns_label(const char *s, size_t max, char *out);
/* Is s a valid DNS-1123 label (1-63 of [a-z0-9-], alphanumeric ends)? */
bool tlr_ng_is_dns_label(const char *s);
/* Is s a valid label value (0-63 of [A-Za-z0-9._-], alphanumeric ends)? */
bool tlr_ng_is_label_value(const char *s);
/* Is s a valid qualified label key ([prefix/]name, name <= 63, prefix a
 * DNS-1123 subdomain <= 253)? */
bool tlr_ng_is_label_key(const char *s);

typedef struct tlr_ng_result tlr_ng_result;

/* Plan the NodePools and EC2NodeClasses for groups[0..n) (borrowed; they
 * must outlive the result).  On TLR_OK *out is new and owned: free with
 * tlr_ng_result_free().  TLR_E_INVAL: n == 0, or two groups share a name
 * (err names both files). */
int  tlr_ng_convert(tlr_ng_group *const *groups, size_t n, const tlr_ng_opts *o,
                    tlr_ng_result **out, char *err, size_t errlen);
void tlr_ng_result_free(tlr_ng_result *r);   /* NULL is fine */

/* Counts. */
size_t tlr_ng_result_groups(const tlr_ng_result *r);
size_t tlr_ng_result_nodepools(const tlr_ng_result *r);
size_t tlr_ng_result_nodeclasses(const tlr_ng_result *r);
size_t tlr_ng_result_drops(const tlr_ng_result *r);   /* over all groups */

/* The objects as a JSON array: NodePools sorted by name, then
 * EC2NodeClasses sorted by name.  Borrowed from r. */
json_object *tlr_ng_result_objects(const tlr_ng_result *r);

/* The name of the NodePool group name went into, or NULL.  Borrowed. */
const char *tlr_ng_result_pool_of(const tlr_ng_result *r, const char *group_name);

/* Append the objects as a YAML stream (each document starts with "---")
 * or as one JSON List (pretty, 2-space indent).  TLR_E_TOOBIG when out's
 * ceiling is reached. */
int tlr_ng_result_yaml(const tlr_ng_result *r, tlr_buf *out);
int tlr_ng_result_json(const tlr_ng_result *r, tlr_buf *out);

/* Append the report: a JSON object (docs/migration.md documents its
 * fields), or text for a terminal (summary, pools, drops, notes).  The
 * JSON lists not_sized (n of them, borrowed: why each group left out of
 * the conversion could not be sized) when n > 0. */
int tlr_ng_result_report_json(const tlr_ng_result *r, char *const *not_sized, size_t n,
                              tlr_buf *out);
int tlr_ng_result_report_text(const tlr_ng_result *r, tlr_buf *out);

/* Append docs (borrowed JSON array of objects) to out as a YAML stream;
 * strings that YAML would read as another type are double-quoted, so the
 * text reads back (tlr_yaml_parse, kubectl) as exactly docs. */
int tlr_ng_yaml_write(json_object *docs, tlr_buf *out);

#endif
