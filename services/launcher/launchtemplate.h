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
 * replaces its nodes).  Pure: this file builds parameters; lc_cloud.c calls.
 *
 * AMI: the one the caller resolved for the claim's instance type
 * (nodeclass.h, lc_class_ami_for); user data: the bootstrap the caller
 * wrote for the claim (common/bootstrap), carried in nc->user_data; block
 * devices: the class's, else its AMI family's defaults
 * (tlr_node_shape_default_bdms).
 */
#ifndef LC_LAUNCHTEMPLATE_H
#define LC_LAUNCHTEMPLATE_H

#include "tailor/v1/nodepool.pb-c.h"
#include "tlr_awsquery.h"

typedef struct lc_lt_opts {
    const char *cluster;        /* borrowed */
    const char *ami;            /* borrowed; the resolved AMI id (required) */
} lc_lt_opts;

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
