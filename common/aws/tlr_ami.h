/* tlr_ami.h - which AMIs an EC2NodeClass's amiSelectorTerms resolve to.
 *
 * Karpenter's rules, for the launcher (which publishes the result as the
 * class's status.amis, what the disruptor's drift check reads) and for
 * tools that must judge AMIs without it (tailorctl patch-check, migrate's
 * preflight):
 *   - alias family@version (al2023, al2, bottlerocket, windows2019,
 *     windows2022): the EKS-optimized SSM parameters of that family for
 *     the cluster's Kubernetes version, one per architecture and variant
 *     (standard, nvidia, neuron); "latest" follows the recommended
 *     parameter, a version pins a release.  Parameters SSM does not have
 *     are skipped; an alias none of whose parameters exists fails;
 *   - ssmParameter: that parameter's value;
 *   - id: that image;
 *   - name / owner / tags (ANDed; tag value "*" = any value): every
 *     matching available image, the newest per architecture kept.
 * Terms are ORed.  Every id found is then described (DescribeImages) for
 * its architecture, creation and deprecation dates.
 *
 * Calls go through tlr_ami_ops so the rules are tested with a recording
 * fake; tlr_ami_ops_aws() fills the ops with the real EC2 and SSM clients.
 */
#ifndef TLR_AMI_H
#define TLR_AMI_H

#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/nodepool.pb-c.h"
#include "tlr_awsjson.h"
#include "tlr_ec2.h"

typedef struct tlr_ami {
    char *id;
    char *name;           /* "" when DescribeImages did not know it */
    char *arch;           /* Kubernetes spelling: "amd64", "arm64"; "" unknown */
    char *variant;        /* "standard", "nvidia", "neuron" (aliases); "" otherwise */
    char *source;         /* the term: "alias al2023@latest (/aws/...)", "id ami-..." */
    int64_t creation_ms;  /* 0 unknown */
    int64_t deprecation_ms;  /* 0 = not deprecated */
} tlr_ami;

typedef struct tlr_amis {
    tlr_ami *v;           /* owned; sorted by arch, variant, id */
    size_t n;
} tlr_amis;

void tlr_amis_free(tlr_amis *a);     /* contents; NULL fine */
/* The AMI with id in a, or NULL (borrowed). */
const tlr_ami *tlr_amis_find(const tlr_amis *a, const char *id);
/* The AMI a node of arch (Kubernetes spelling) and variant should run:
 * the same arch and variant, else the same arch's standard, else any of
 * the arch; NULL when none. */
const tlr_ami *tlr_amis_pick(const tlr_amis *a, const char *arch, const char *variant);

typedef struct tlr_ami_ops {
    /* SSM GetParameter: on TLR_OK *value is new (free()); TLR_E_NOTFOUND
     * when the parameter does not exist. */
    int (*ssm_get)(void *arg, const char *name, char **value, tlr_aws_error *err);
    /* DescribeImages, as tlr_ec2_describe_images. */
    int (*describe)(void *arg, const tlr_ec2_filter *f, size_t nf, const char *const *ids,
                    size_t nids, const char *const *owners, size_t nowners,
                    tlr_ec2_images *out, tlr_aws_error *err);
    void *arg;
} tlr_ami_ops;

/* The real ops: EC2 and SSM clients (borrowed; they must outlive ops). */
typedef struct tlr_ami_aws {
    tlr_ec2 *ec2;
    tlr_aws_json *ssm;
} tlr_ami_aws;
void tlr_ami_ops_aws(tlr_ami_aws *clients, tlr_ami_ops *out);

/* One SSM parameter an alias stands for. */
typedef struct tlr_ami_param {
    char name[256];
    char arch[8];         /* "amd64" / "arm64" */
    char variant[12];     /* "standard", "nvidia", "neuron" */
} tlr_ami_param;

/* The parameters of alias ("al2023@latest") for Kubernetes version k8s
 * ("1.31"), at most max, in a fixed order.  TLR_E_INVAL: not
 * family@version, an unknown family, or no k8s version (err says so). */
int tlr_ami_alias_parameters(const char *alias, const char *k8s, tlr_ami_param *out,
                             size_t max, size_t *n, char *err, size_t errlen);

/* Resolve terms[0..n) (borrowed).  k8s: the cluster's Kubernetes version,
 * needed by aliases.  On TLR_OK *out holds at least one AMI (owned).
 * TLR_E_NOTFOUND: the terms resolve to nothing; other codes: a call
 * failed (credentials, network) - err says which term and why. */
int tlr_ami_resolve(Tailor__V1__AmiSelectorTerm *const *terms, size_t n, const char *k8s,
                    const tlr_ami_ops *ops, tlr_amis *out, char *err, size_t errlen);

/* EC2's "x86_64"/"arm64" as Kubernetes spells it ("amd64"/"arm64"). */
const char *tlr_ami_k8s_arch(const char *ec2_arch);

#endif
