/* nodeclass.h - EC2NodeClasses as the launcher uses them: selector terms
 * resolved against EC2, readiness, launch back-off, and the catalog each
 * class can buy from.
 *
 * Resolution (Karpenter's nodeclass controller, done here because the
 * launcher is the one that talks to EC2):
 *   - subnetSelectorTerms -> DescribeSubnets, securityGroupSelectorTerms
 *     -> DescribeSecurityGroups, one call per term with the term's fields
 *     as filters (tags as tag:KEY=VALUE, "*" as tag-key=KEY; id as
 *     subnet-id / group-id; name as group-name); terms are ORed, the
 *     fields of one term ANDed; results are merged by id;
 *   - amiSelectorTerms: alias and ssmParameter through SSM GetParameter
 *     (then DescribeImages for the AMI's architecture), id / name / tags /
 *     owner through DescribeImages; the newest available image per
 *     architecture is kept;
 *   - role: the class's instance profile is ensured (profile.h: made,
 *     tagged, its role set; one GetInstanceProfile when all is right) and
 *     its name goes to status.instanceProfile; profiles of classes that
 *     are gone are deleted (LC_NC_PROFILE_GC_MS apart);
 *   - the class is Ready when all four resolved; otherwise the failing
 *     condition (SubnetsReady, SecurityGroupsReady, AMIsReady,
 *     InstanceProfileReady) says why, as Karpenter v1's conditions do;
 *     an amiFamily tailor cannot bootstrap (Windows) fails AMIsReady with
 *     reason AMIFamilyNotSupported, so nothing half-configured launches.
 * The outcome goes to the EC2NodeClass's status (subnets, securityGroups,
 * amis, conditions) -- written only when it changed -- and to an Event on
 * the class when readiness changes.  Resolution runs again after
 * resolve_ttl_ms (subnet free IPs change as nodes come and go), when the
 * class's spec changes, and after a failure with a back-off (10 s,
 * doubling, at most 5 min), so a broken class costs a few Describe calls,
 * not a storm.
 *
 * Launch back-off: a launch that fails for a reason other than capacity
 * (credentials, a missing launch template parameter, ...) blocks the
 * class for 10 s, doubling up to 5 min; condition ValidationSucceeded is
 * then False with the AWS error.  A blocked or unready class is left out
 * of every SolveRequest's catalogs, so the solver gives its pods a
 * per-pod reason instead of the launcher buying and failing again.
 *
 * Catalog: a class buys only in the zones of its subnets, so its catalog
 * is the launcher's catalog restricted to those zones (cached per base
 * catalog hash and zone set); the solver then plans zone spreads onto
 * zones the launcher can really launch in.
 */
#ifndef LC_NODECLASS_H
#define LC_NODECLASS_H

#include <stdbool.h>
#include <stdint.h>

#include "lc_ops.h"
#include "profile.h"
#include "tailor/v1/cluster.pb-c.h"
#include "tailor/v1/instancetype.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"
#include "tlr_log.h"
#include "tlr_time.h"

#define LC_NC_RESOLVE_TTL_MS (60 * 1000)
#define LC_NC_BACKOFF_MIN_MS (10 * 1000)
#define LC_NC_BACKOFF_MAX_MS (5 * 60 * 1000)
#define LC_NC_MAX_FILTERS 24
#define LC_NC_PROFILE_GC_MS (10 * 60 * 1000)       /* profile GC period, and the youngest it deletes */

/* ---- pure: selector terms -> EC2 filters ------------------------------ */

typedef enum lc_nc_kind { LC_NC_SUBNETS, LC_NC_SECURITY_GROUPS, LC_NC_IMAGES } lc_nc_kind;

/* The filters of one term.  Names and values point into the term or into
 * the struct's own storage: valid while both live. */
typedef struct lc_nc_filters {
    tlr_ec2_filter f[LC_NC_MAX_FILTERS];
    size_t n;
    char *owned[LC_NC_MAX_FILTERS];      /* "tag:KEY" strings */
    const char *vals[LC_NC_MAX_FILTERS]; /* one value per filter */
} lc_nc_filters;

/* Filters for a subnet / security-group term.  TLR_E_INVAL when the term
 * selects nothing (no id, name or tag) or has too many fields. */
int  lc_nc_term_filters(lc_nc_kind kind, const Tailor__V1__SelectorTerm *t, lc_nc_filters *out);
/* Filters for an AMI term with id, name, owner or tags (not alias/SSM). */
int  lc_nc_ami_filters(const Tailor__V1__AmiSelectorTerm *t, lc_nc_filters *out);
void lc_nc_filters_clear(lc_nc_filters *f);

/* ---- the registry ------------------------------------------------------ */

typedef struct lc_class {
    char *name;
    Tailor__V1__NodeClass *nc;       /* owned: the watcher's, with subnets (free IPs),
                                      * security groups and AMIs as resolved; NULL
                                      * until first seen */
    bool ready;                      /* subnets, security groups and AMIs resolved */
    char reason[64];                 /* the first failing condition's reason, or "" */
    char message[512];
    int64_t resolved_ms;             /* last resolution (wall) */
    int64_t retry_ms;                /* resolve again no earlier than this */
    int resolve_failures;
    int64_t blocked_until_ms;        /* launch back-off */
    int launch_failures;
    char block_reason[96], block_message[512];
    char *spec_key;                  /* hash of the spec last resolved */
    char *status_written;            /* last status patch written; NULL = none */
    bool rewrite;                    /* the cluster's status disagrees with it: write again */
    struct lc_cond { char type[32]; int status; char reason[96]; int64_t since_ms; } conds[6];
    /* catalog view */
    Tailor__V1__Catalog *view;
    char *view_key;                  /* base hash + node shape key + zones */
    /* launch templates by AMI and user data ("<ami>/<hash>" in ami) */
    struct lc_class_lt { char *ami, *id; } *lts;
    size_t nlts, caplts;
} lc_class;

typedef struct lc_classes_opts {
    lc_cloud_ops cloud;
    lc_kube_ops kube;
    const tlr_clock *clock;          /* borrowed */
    tlr_logger *log;                 /* borrowed; may be NULL */
    const char *default_ami;         /* used when AMI terms resolve to none; may be NULL */
    const char *k8s_version;         /* for aliases; may be NULL */
    int64_t resolve_ttl_ms;          /* 0 = LC_NC_RESOLVE_TTL_MS */
    /* Instance profiles for classes that name a role (profile.h): made,
     * reused and collected with these.  iam.get NULL = not managed (the
     * class's status.instanceProfile, if any, is used as it is). */
    lc_iam_ops iam;
    const char *cluster, *region;    /* borrowed; for the profiles' names and tags */
} lc_classes_opts;

typedef struct lc_classes lc_classes;

void lc_classes_create(const lc_classes_opts *o, lc_classes **out);   /* owned */
void lc_classes_free(lc_classes *cs);                                  /* NULL fine */

/* Resolve every NodeClass of st (borrowed) that is new, changed, past
 * its TTL or past its retry time; write status and Events for what
 * changed.  Classes no longer in st are forgotten. */
void lc_classes_sync(lc_classes *cs, const Tailor__V1__ClusterState *st);

/* Resolve again every class already seen whose TTL or retry time has
 * passed, reading it from Kubernetes: batches come only while pods are
 * pending, and a quiet cluster still needs its status.amis republished
 * when a new AMI is released (the disruptor's AMI drift reads it).  A
 * class Kubernetes does not answer for is tried again after the minimum
 * back-off; one that is gone is forgotten by the next sync. */
void lc_classes_refresh(lc_classes *cs);

/* The entry for name (borrowed), or NULL when never seen. */
lc_class *lc_classes_get(lc_classes *cs, const char *name);

/* The entry for name, reading the EC2NodeClass from Kubernetes and
 * resolving it when no batch has shown it yet (a LaunchRequest right
 * after a restart).  NULL when Kubernetes does not have it. */
lc_class *lc_classes_ensure(lc_classes *cs, const char *name);

/* May claims of class c launch now?  false with *why (borrowed, may be
 * NULL) saying why not. */
bool lc_class_usable(const lc_class *c, int64_t now_ms, const char **why);

/* A launch of class name failed with AWS code/message (non-capacity):
 * back off and say so in the status.  ok: a launch succeeded, clear it. */
void lc_classes_launch_failed(lc_classes *cs, const char *name, const char *code,
                              const char *message);
void lc_classes_launch_ok(lc_classes *cs, const char *name);

/* The catalog class c buys from: base restricted to the zones of its
 * subnets (none resolved: all), then shaped by the class's kubelet
 * settings, AMI family and block devices (tlr_nodeshape.h); base itself
 * when neither changes anything.  Borrowed: valid until the next call for
 * c or until base changes. */
const Tailor__V1__Catalog *lc_class_catalog(lc_class *c, const Tailor__V1__Catalog *base);

/* The resolved AMI (borrowed from c->nc->amis) an instance of type it
 * boots: the newest one whose requirements the type meets -- its
 * architecture, and the variant: an NVIDIA GPU type takes the nvidia AMI,
 * a Neuron/Inferentia/Trainium type the neuron AMI, any other type the
 * standard one (Karpenter's Variant requirements).  An AMI without
 * requirements serves every type of its architecture (or of any, when
 * its architecture is unknown).  NULL when none fits; it NULL = the
 * first AMI. */
const Tailor__V1__ResolvedAmi *lc_class_ami_for(const lc_class *c,
                                                const Tailor__V1__InstanceType *it);

/* Launch template cache of class c per (AMI id, hash of the user data the
 * template carries: claims of different pools boot with different labels
 * and taints).  get: borrowed or NULL. */
const char *lc_class_lt_get(const lc_class *c, const char *ami, const char *ud_hash);
void        lc_class_lt_put(lc_class *c, const char *ami, const char *ud_hash,
                            const char *lt_id);

/* The status merge patch for c as it stands (new text, owned).  Exposed
 * for tests. */
char *lc_class_status_json(const lc_class *c);

#endif
