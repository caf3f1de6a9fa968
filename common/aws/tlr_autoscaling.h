/* tlr_autoscaling.h - typed EC2 Auto Scaling calls on the AWS Query client.
 *
 * What `tailorctl migrate` needs to shrink an Auto Scaling Group while its
 * nodes move to tailor: read a group (sizes, instances, tags), change its
 * sizes, and terminate one instance with or without decrementing the
 * desired capacity.  API version 2011-01-01, signing name "autoscaling";
 * the endpoint is https://autoscaling.REGION.amazonaws.com/ unless
 * AWS_ENDPOINT_URL_AUTOSCALING or AWS_ENDPOINT_URL (moto) says otherwise.
 *
 * Auto Scaling answers in <ActionResponse><ActionResult>...: lists are
 * <member> elements, errors <ErrorResponse><Error>.  The decoders are
 * exposed (tlr_asg_parse_*) so they can be tested on recorded XML.
 *
 * Result structs own their strings; free them with the matching *_free().
 * A tlr_asg client is one tlr_aws_query: one per thread.
 */
#ifndef TLR_AUTOSCALING_H
#define TLR_AUTOSCALING_H

#include <stdbool.h>
#include <stddef.h>

#include "tlr_awsquery.h"
#include "tlr_ec2.h"
#include "tlr_xml.h"

#define TLR_ASG_API_VERSION "2011-01-01"
/* The tag Auto Scaling puts on every instance it launches. */
#define TLR_ASG_NAME_TAG "aws:autoscaling:groupName"

typedef struct tlr_asg_instance {
    char *id;              /* "i-0123..." */
    char *type;            /* "m5.large"; "" when not said */
    char *zone;
    char *lifecycle;       /* "InService", "Pending", "Terminating", "Standby", ... */
    char *health;          /* "Healthy" / "Unhealthy" */
    bool protected_from_scale_in;
} tlr_asg_instance;

typedef struct tlr_asg_group {
    char *name;
    int min, max, desired;
    tlr_asg_instance *instances;
    size_t ninstances;
    tlr_ec2_tag *tags;     /* the group's tags (key, value) */
    size_t ntags;
    char *status;          /* "Delete in progress" while being deleted; "" otherwise */
} tlr_asg_group;

typedef struct tlr_asg_groups {
    tlr_asg_group *v;
    size_t n;
} tlr_asg_groups;

void tlr_asg_groups_free(tlr_asg_groups *g);   /* contents; NULL fine */
/* The group named name in g, or NULL (borrowed). */
const tlr_asg_group *tlr_asg_groups_find(const tlr_asg_groups *g, const char *name);
/* The instance id of group g, or NULL (borrowed). */
const tlr_asg_instance *tlr_asg_group_instance(const tlr_asg_group *g, const char *id);

/* What TerminateInstanceInAutoScalingGroup started. */
typedef struct tlr_asg_activity {
    char *id;
    char *group;
    char *status;          /* "InProgress", "Successful", ... */
    char *description;
} tlr_asg_activity;

void tlr_asg_activity_free(tlr_asg_activity *a);   /* contents; NULL fine */

typedef struct tlr_asg tlr_asg;

/* opts->service and ->version are filled in (autoscaling, 2011-01-01);
 * the rest as tlr_aws_query_create.  On TLR_OK *out is new and owned. */
int  tlr_asg_create(const tlr_aws_query_opts *opts, tlr_asg **out);
void tlr_asg_free(tlr_asg *a);   /* NULL is fine */

/* DescribeAutoScalingGroups of names[0..nnames) (borrowed; nnames 0 =
 * every group), following NextToken (at most max_pages pages; 0 = 100).
 * On TLR_OK *out is filled (owned by the caller).  A name that does not
 * exist is simply absent from the answer. */
int tlr_asg_describe(tlr_asg *a, const char *const *names, size_t nnames, int max_pages,
                     tlr_asg_groups *out, tlr_aws_error *err);

/* UpdateAutoScalingGroup: sizes < 0 are left as they are (not sent). */
typedef struct tlr_asg_sizes {
    int min, max, desired;
} tlr_asg_sizes;
int tlr_asg_update(tlr_asg *a, const char *group, const tlr_asg_sizes *s, tlr_aws_error *err);

/* SetDesiredCapacity. */
int tlr_asg_set_desired(tlr_asg *a, const char *group, int desired, bool honor_cooldown,
                        tlr_aws_error *err);

/* TerminateInstanceInAutoScalingGroup.  decrement: the group's desired
 * capacity goes down by one instead of a replacement being launched.
 * TLR_E_NOTFOUND when the instance is in no group (AWS answers a
 * ValidationError "... not found"); *out (may be NULL) gets the activity. */
int tlr_asg_terminate_instance(tlr_asg *a, const char *instance_id, bool decrement,
                               tlr_asg_activity *out, tlr_aws_error *err);

/* --- parameters and decoders (exposed for tests) ----------------------- */

/* The parameters of the calls above (p from tlr_aws_params_create). */
void tlr_asg_describe_params(const char *const *names, size_t nnames, const char *next_token,
                             tlr_aws_params *p);
int  tlr_asg_update_params(const char *group, const tlr_asg_sizes *s, tlr_aws_params *p);
void tlr_asg_terminate_params(const char *instance_id, bool decrement, tlr_aws_params *p);

/* Append the groups of a DescribeAutoScalingGroupsResponse root to *out;
 * *next (may be NULL) gets an owned NextToken or NULL.  TLR_E_PARSE when
 * root is another document or a group lacks its name or sizes. */
int tlr_asg_parse_groups(const tlr_xml_node *root, tlr_asg_groups *out, char **next);
/* Decode a TerminateInstanceInAutoScalingGroupResponse root. */
int tlr_asg_parse_activity(const tlr_xml_node *root, tlr_asg_activity *out);

#endif
