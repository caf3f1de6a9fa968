/* tlr_eks.h - the one EKS call tailor makes: DescribeCluster, for the
 * cluster identity a node needs to join (API endpoint, CA bundle, service
 * CIDR).
 *
 * EKS speaks REST-JSON: GET /clusters/<name> on the endpoint, SigV4-signed
 * for service "eks", answering
 *   {"cluster": {"name", "endpoint", "status", "version",
 *                "certificateAuthority": {"data"},
 *                "kubernetesNetworkConfig": {"serviceIpv4Cidr", "serviceIpv6Cidr"}}}
 * The endpoint is, first hit wins: opts.endpoint, AWS_ENDPOINT_URL_EKS,
 * AWS_ENDPOINT_URL, then https://eks.<region>.amazonaws.com.  Errors are
 * the X-Amzn-ErrorType header or {"__type"|"code", "message"} and map to
 * TLR_E_* as tlr_aws_error_class() says (ResourceNotFoundException ->
 * TLR_E_NOTFOUND).  Throttling, 5xx and transport failures are retried
 * with full-jitter backoff.  TLS is verified.  Credentials and the CA are
 * never logged.  One curl handle per client: not thread-safe.
 */
#ifndef TLR_EKS_H
#define TLR_EKS_H

#include <stdbool.h>
#include <stddef.h>

#include "tlr_awscreds.h"
#include "tlr_awsquery.h"
#include "tlr_log.h"

typedef struct tlr_eks_opts {
    const char *region;         /* NULL = AWS_REGION, AWS_DEFAULT_REGION, us-east-1 */
    const char *endpoint;       /* URL override; NULL = environment, then AWS */
    tlr_aws_creds *creds;       /* borrowed; required */
    tlr_logger *log;            /* borrowed; may be NULL */
    int timeout_ms;             /* 0 = 15000 */
    int max_attempts;           /* 0 = 4 */
    int backoff_base_ms;        /* 0 = 200 */
    int backoff_cap_ms;         /* 0 = 5000 */
} tlr_eks_opts;

typedef struct tlr_eks tlr_eks;

/* What DescribeCluster says about a cluster; every string owned ("" when
 * the answer did not say).  tlr_eks_cluster_clear() frees them. */
typedef struct tlr_eks_cluster {
    char *name, *endpoint, *status, *version;
    char *ca_b64;               /* certificateAuthority.data: base64 of the PEM */
    char *service_cidr_v4, *service_cidr_v6;
} tlr_eks_cluster;

/* On TLR_OK *out is new and owned: tlr_eks_free().  TLR_E_INVAL for no
 * creds or a malformed endpoint. */
int  tlr_eks_create(const tlr_eks_opts *o, tlr_eks **out);
void tlr_eks_free(tlr_eks *e);                     /* NULL is fine */
const char *tlr_eks_endpoint(const tlr_eks *e);    /* borrowed */

/* DescribeCluster name.  On TLR_OK *out is filled (owned by the caller);
 * errors as above, *err (may be NULL) says what AWS said. */
int  tlr_eks_describe_cluster(tlr_eks *e, const char *name, tlr_eks_cluster *out,
                              tlr_aws_error *err);
void tlr_eks_cluster_clear(tlr_eks_cluster *c);    /* contents; NULL fine */

/* Decode a DescribeCluster answer body.  TLR_E_PARSE when it is not JSON
 * or has no "cluster" object.  Exposed for tests. */
int  tlr_eks_cluster_parse(const char *body, size_t len, tlr_eks_cluster *out);

#endif
