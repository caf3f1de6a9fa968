/* launchtemplate.h - one EC2 launch template per node-class configuration.
 *
 * Everything a launch needs that is not per claim -- AMI, user data,
 * block devices, IMDS options, security groups, instance profile,
 * monitoring, tags -- goes into a launch template named
 * "tailor/<cluster>/<hash>", where hash is the SHA-256 (first 16 hex
 * digits) of that configuration.  Same configuration, same name: a
 * restarted launcher or a second replica finds the template with
 * DescribeLaunchTemplates instead of creating another, and a changed
 * NodeClass gets a new template (the old one is left for GC; drift
 * replaces its nodes).  Pure: this file builds parameters; cloud.c calls.
 *
 * AMI: the first resolved AMI of the NodeClass (the watcher's
 * status.amis), else the first amiSelectorTerm with an id, else an
 * ssmParameter term (resolved by the caller through SSM GetParameter and
 * passed as ami_override), else the launcher's --default-ami.  Aliases
 * ("al2023@latest") need the cluster's Kubernetes version to pick the SSM
 * parameter and are resolved only when the caller maps them to a
 * parameter (see lc_lt_alias_parameter).
 */
#ifndef LC_LAUNCHTEMPLATE_H
#define LC_LAUNCHTEMPLATE_H

#include "tailor/v1/nodepool.pb-c.h"
#include "tlr_awsquery.h"

typedef struct lc_lt_opts {
    const char *cluster;        /* borrowed */
    const char *ami;            /* borrowed; the resolved AMI id (required) */
} lc_lt_opts;

/* The AMI id the NodeClass names directly (status.amis[0], or a term
 * with an id), or NULL (borrowed from nc). */
const char *lc_lt_direct_ami(const Tailor__V1__NodeClass *nc);
/* The SSM parameter to resolve for nc's AMI, or NULL: an ssmParameter
 * term as is, or an alias "<family>@<version>" mapped with the Kubernetes
 * version k8s (e.g. "1.31") and arch "x86_64"/"arm64".  New text (free()). */
char *lc_lt_ssm_parameter(const Tailor__V1__NodeClass *nc, const char *k8s, const char *arch);

/* The template name for nc under o: "tailor/<cluster>/<16 hex>".
 * buf >= 128 bytes. */
void lc_lt_name(const Tailor__V1__NodeClass *nc, const lc_lt_opts *o, char *buf, size_t len);

/* Receives one parameter (key and value borrowed for the call). */
typedef void (*lc_lt_add_fn)(void *arg, const char *key, const char *value);

/* The CreateLaunchTemplate parameters for nc (borrowed) named name, in
 * order, each handed to add(arg, ...).  TLR_E_INVAL when o->ami is empty
 * (nothing is added). */
int lc_lt_params(const Tailor__V1__NodeClass *nc, const lc_lt_opts *o, const char *name,
                 lc_lt_add_fn add, void *arg);

#endif
