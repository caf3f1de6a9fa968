/* profile.h - the IAM instance profile of an EC2NodeClass that names a
 * role (spec.role) instead of a profile (spec.instanceProfile).
 *
 * Karpenter v1 (pkg/providers/instanceprofile, pkg/controllers/nodeclass/
 * instanceprofile.go) makes one instance profile per such class, puts the
 * class's role in it, tags it, records its name in
 * status.instanceProfile, and removes it with the class.  We keep the
 * rules of Karpenter v1.0 - v1.6:
 *
 *   name   CLUSTER "_" decimal(FNV-1 64 of REGION NODECLASS), e.g.
 *          "prod_4067990795380418201" for prod / us-west-2 / default --
 *          hashstructure.Hash(region+name, FormatV2) is FNV-1 64 of the
 *          string's bytes.  The name is deterministic, so a restart (or a
 *          lost status write) finds the same profile again; nothing else
 *          is needed to reuse it.
 *   path   "/".
 *   tags   kubernetes.io/cluster/CLUSTER=owned, eks:eks-cluster-name=CLUSTER,
 *          karpenter.k8s.aws/ec2nodeclass=NODECLASS,
 *          topology.kubernetes.io/region=REGION (Karpenter's
 *          InstanceProfileTags), and karpenter.sh/managed-by=CLUSTER
 *          (ours: Karpenter v1 does not put it on profiles, so it marks
 *          the profiles this launcher may garbage-collect; a profile that
 *          Karpenter made for the same class is adopted by ensure, which
 *          adds the tag).
 *   role   a profile holds at most one role.  A different role is removed
 *          and the class's role added in its place (Karpenter <= v1.6;
 *          v1.7+ makes a fresh, randomly named profile per role change
 *          and garbage-collects by IAM path instead).  A role given with a
 *          path or as an ARN ("team/NodeRole", "arn:...:role/team/NodeRole")
 *          is added by its last segment, as Karpenter does.
 *
 * Errors: every function returns TLR_OK or a TLR_E_* code; an IAM refusal
 * (AccessDenied, NoSuchEntity for the role, LimitExceeded, ...) also fills
 * *err: err->code is the AWS code -- the reason of the class's
 * InstanceProfileReady=False condition -- and err->message says which
 * step failed and IAM's words ("adding role NodeRole to instance profile
 * prod_1: Role NodeRole not found").  err->code is "" when no AWS answer
 * came (transport, bad input): use tlr_errname(rc) as the reason then.
 * Nothing here logs; credentials never reach err.
 */
#ifndef LC_PROFILE_H
#define LC_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "tlr_awsquery.h"
#include "tlr_ec2.h"
#include "tlr_iam.h"
#include "tlr_labels.h"

#define LC_PROFILE_TAG_MANAGED_BY TLR_TAG_MANAGED_BY
#define LC_PROFILE_TAG_EKS_CLUSTER "eks:eks-cluster-name"
#define LC_PROFILE_TAG_NODECLASS TLR_LABEL_NODECLASS
#define LC_PROFILE_TAG_REGION TLR_LABEL_REGION
#define LC_PROFILE_NAME_MAX 128   /* IAM's ceiling on a profile name */

/* What the profile logic needs from IAM (tlr_iam.h), in an ordered
 * method table: filled by lc_iam_ops_init() (profile_iam.c) in the
 * service and by a recording fake in tests.  Pointers passed in are
 * borrowed; errors as the tlr_iam_* call of the same name. */
typedef struct lc_iam_ops {
    /* GetInstanceProfile; TLR_E_NOTFOUND when absent.  *out owned. */
    int (*get)(void *arg, const char *name, tlr_iam_profile *out, tlr_aws_error *err);
    /* CreateInstanceProfile with tags; TLR_E_EXISTS when present. */
    int (*create)(void *arg, const char *name, const char *path, const tlr_ec2_tag *tags,
                  size_t ntags, tlr_aws_error *err);
    int (*add_role)(void *arg, const char *profile, const char *role, tlr_aws_error *err);
    int (*remove_role)(void *arg, const char *profile, const char *role, tlr_aws_error *err);
    int (*tag)(void *arg, const char *profile, const tlr_ec2_tag *tags, size_t ntags,
               tlr_aws_error *err);
    int (*delete_profile)(void *arg, const char *profile, tlr_aws_error *err);
    /* Every profile of the account (all pages); *out owned.  Tags may be
     * missing (real IAM lists none): read a profile with get for them. */
    int (*list)(void *arg, tlr_iam_profiles *out, tlr_aws_error *err);
    void *arg;
} lc_iam_ops;

/* Fill *ops with the real IAM client iam (borrowed: it must outlive ops). */
void lc_iam_ops_init(lc_iam_ops *ops, tlr_iam *iam);

/* The profile name of nodeclass in cluster/region into buf (len bytes,
 * LC_PROFILE_NAME_MAX + 1 is enough).  TLR_E_INVAL when an argument is
 * empty or the name would pass IAM's 128 characters (a cluster name
 * longer than 107). */
int lc_profile_name(const char *cluster, const char *region, const char *nodeclass, char *buf,
                    size_t len);

/* Make the instance profile of nodeclass hold role, as above:
 *   absent               -> CreateInstanceProfile (path "/", the tags),
 *                           AddRoleToInstanceProfile
 *   no role              -> AddRoleToInstanceProfile
 *   another role         -> RemoveRoleFromInstanceProfile, AddRole...
 *   a tag missing/wrong  -> TagInstanceProfile of those tags
 *   all already right    -> nothing but the one GetInstanceProfile
 * A create that loses a race (EntityAlreadyExists) reads the profile and
 * goes on.  On TLR_OK *name_out (may be NULL) is the profile's name, new
 * and owned by the caller (free()): the class's status.instanceProfile.
 * Nothing is undone on failure: the name is deterministic, so the next
 * pass picks up where this one stopped. */
int lc_profile_ensure(const lc_iam_ops *ops, const char *cluster, const char *region,
                      const char *nodeclass, const char *role, char **name_out,
                      tlr_aws_error *err);

typedef struct lc_profile_gc_opts {
    const char *cluster;
    const char *region;
    /* The classes whose profiles must stay (borrowed): every EC2NodeClass
     * that exists, those being deleted included, for as long as instances
     * launched with its profile may still run. */
    const char *const *live;
    size_t nlive;
    /* Profiles created less than min_age_ms before now_ms are left alone:
     * a class created a moment ago may not be in a list read before
     * ensure made its profile (Karpenter's "protected" profiles). */
    int64_t now_ms;
    int64_t min_age_ms;
} lc_profile_gc_opts;

/* Delete the profiles this launcher made for classes that no longer
 * exist: ListInstanceProfiles, keep the names of the form CLUSTER_DIGITS,
 * read each (GetInstanceProfile: its tags), and delete those tagged
 * karpenter.sh/managed-by=CLUSTER, kubernetes.io/cluster/CLUSTER=owned and
 * topology.kubernetes.io/region=REGION whose karpenter.k8s.aws/ec2nodeclass
 * is not live -- removing their role first.  A profile that vanished
 * meanwhile is not an error.  One failing profile does not stop the
 * others: the first error is returned (and *err filled) after all were
 * tried.  *deleted (may be NULL) counts the profiles deleted. */
int lc_profile_gc(const lc_iam_ops *ops, const lc_profile_gc_opts *o, size_t *deleted,
                  tlr_aws_error *err);

#endif
