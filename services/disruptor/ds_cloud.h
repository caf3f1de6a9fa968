/* ds_cloud.h - the real ds_cloud_ops over common/aws: the interruption queue
 * (SQS: resolved from a name once, short polls).  AMI drift needs no AWS
 * call: it reads the images the launcher publishes (drift.c).  Blocking
 * calls from the loop thread; one client (tlr_aws_query is not
 * thread-safe). */
#ifndef DS_CLOUD_H
#define DS_CLOUD_H

#include "ds_ops.h"
#include "tlr_awscreds.h"
#include "tlr_fence.h"
#include "tlr_log.h"

typedef struct ds_cloud ds_cloud;

typedef struct ds_cloud_opts {
    const char *region;       /* copied */
    const char *endpoint;     /* copied; NULL = AWS_ENDPOINT_URL / AWS */
    const char *queue;        /* name or URL; NULL = no queue (receive returns nothing) */
    tlr_aws_creds *creds;     /* borrowed */
    tlr_logger *log;          /* borrowed */
    const tlr_fence *fence;   /* borrowed; NULL = unfenced (tlr_fence.h): SQS */
} ds_cloud_opts;

int  ds_cloud_create(const ds_cloud_opts *o, ds_cloud **out);
void ds_cloud_free(ds_cloud *c);
ds_cloud_ops ds_cloud_ops_of(ds_cloud *c);

#endif
