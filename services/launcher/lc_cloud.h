/* lc_cloud.h - the real lc_cloud_ops: EC2 (and SSM for AMI parameters) over
 * common/aws.  The launcher calls it from its loop thread only; the batch
 * verbs (create_fleets, tag_instances) fan out on up to `parallel`
 * threads, each with an EC2 client of its own (the AWS clients are not
 * thread-safe; the credential provider is).
 *
 * Idempotency: CreateFleet carries ClientToken = NodeClaim name, and the
 * launcher also looks an instance up by its karpenter.sh/nodeclaim tag
 * before launching a claim it did not create in this process (moto
 * ignores ClientToken, and so would an EC2 token older than its window).
 */
#ifndef LC_CLOUD_H
#define LC_CLOUD_H

#include "lc_ops.h"
#include "tlr_awscreds.h"
#include "tlr_fence.h"
#include "tlr_log.h"

typedef struct lc_cloud_opts {
    const char *cluster;        /* borrowed; copied */
    const char *region;         /* NULL = environment default */
    const char *endpoint;       /* NULL = AWS default or AWS_ENDPOINT_URL */
    tlr_aws_creds *creds;       /* borrowed; outlives the cloud */
    tlr_logger *log;            /* borrowed */
    int timeout_ms;             /* per AWS call; 0 = 30000 */
    int parallel;               /* concurrent CreateFleet / CreateTags calls; 0 = 8 */
    const tlr_fence *fence;     /* borrowed; NULL = unfenced: every EC2 / SSM
                                 * call needs the Lease and ends with it */
} lc_cloud_opts;

typedef struct lc_cloud lc_cloud;

/* On TLR_OK *out is new and owned: lc_cloud_free(). */
int  lc_cloud_create(const lc_cloud_opts *o, lc_cloud **out);
void lc_cloud_free(lc_cloud *c);
lc_cloud_ops lc_cloud_ops_of(lc_cloud *c);   /* arg = c */

/* SSM GetParameter (JSON 1.1 protocol).  On TLR_OK *value is new and
 * owned.  TLR_E_NOTFOUND for ParameterNotFound. */
int lc_cloud_ssm_get(lc_cloud *c, const char *name, char **value, tlr_aws_error *err);

#endif
