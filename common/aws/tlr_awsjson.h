/* tlr_awsjson.h - the AWS JSON protocols over libcurl: JSON 1.1 (SSM,
 * Pricing) and REST-JSON (EKS).
 *
 * A JSON 1.1 call (tlr_aws_json_call) is a POST of a JSON body to the
 * endpoint with
 *   Content-Type: application/x-amz-json-1.1
 *   X-Amz-Target: <target_prefix>.<Operation>
 * A REST-JSON call (tlr_aws_json_rest) is METHOD <endpoint path><path>
 * with "Accept: application/json", and for a body
 * "Content-Type: application/json"; no X-Amz-Target.  Both are signed
 * with SigV4 for the client's signing name and region.  The endpoint is,
 * first hit wins: opts.endpoint, AWS_ENDPOINT_URL_<SERVICE> (e.g.
 * AWS_ENDPOINT_URL_PRICING), AWS_ENDPOINT_URL, then
 * https://<host_prefix>.<region>.amazonaws.com/.
 *
 * An error answer is {"__type": "[ns#]Code", "message"|"Message": ...}
 * (or the X-Amzn-ErrorType header); it becomes a tlr_aws_error and the
 * TLR_E_* class of tlr_aws_error_class().  An answer that is not JSON at
 * all -- moto answers "404 Not Found" HTML for a service it does not
 * implement -- is TLR_E_UNAVAILABLE for a 404/5xx, else TLR_E_PARSE;
 * except that over REST, where the path names a resource, a 404 without
 * an error code is ResourceNotFoundException (TLR_E_NOTFOUND).
 * Throttling, 5xx and transport failures are retried as in
 * tlr_awsquery.h (full-jitter exponential backoff, Retry-After on 429/503),
 * and calls are bounded the same way: the calling thread's deadline
 * (tlr_deadline_set, tlr_cancel.h) cuts attempts and retry sleeps and
 * yields TLR_E_TIMEOUT "deadline passed"; shutdown ends a retry sleep with
 * TLR_E_CANCELED.  One curl handle per client: not thread-safe.
 */
#ifndef TLR_AWSJSON_H
#define TLR_AWSJSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "tlr_awscreds.h"
#include "tlr_fence.h"
#include "tlr_awsquery.h"
#include "tlr_log.h"

typedef struct tlr_aws_json_opts {
    const char *service;        /* signing name: "ssm", "pricing" */
    const char *target_prefix;  /* "AmazonSSM", "AWSPriceListService"; NULL = REST only */
    const char *host_prefix;    /* "ssm", "api.pricing"; NULL = service */
    const char *region;         /* NULL = AWS_REGION, AWS_DEFAULT_REGION, us-east-1 */
    const char *endpoint;       /* URL override; NULL = environment, then AWS */
    tlr_aws_creds *creds;       /* borrowed; required */
    tlr_logger *log;            /* borrowed; may be NULL */
    int    timeout_ms;          /* 0 = 30000 */
    int    max_attempts;        /* 0 = 5 */
    int    backoff_base_ms;     /* 0 = 100 */
    int    backoff_cap_ms;      /* 0 = 20000 */
    size_t max_response;        /* 0 = 64 MiB */
    bool   insecure;            /* skip TLS verification (tests only) */
    const tlr_fence *fence;     /* borrowed; NULL = unfenced: as
                                 * tlr_aws_query_opts.fence */
} tlr_aws_json_opts;

typedef struct tlr_aws_json tlr_aws_json;

/* On TLR_OK *out is new and owned: tlr_aws_json_free().  TLR_E_INVAL for a
 * missing service/creds or a malformed endpoint. */
int  tlr_aws_json_create(const tlr_aws_json_opts *o, tlr_aws_json **out);
void tlr_aws_json_free(tlr_aws_json *j);   /* NULL is fine */
const char *tlr_aws_json_endpoint(const tlr_aws_json *j);   /* borrowed */
/* scheme://host[:port] of the endpoint, without its path (borrowed). */
const char *tlr_aws_json_origin(const tlr_aws_json *j);

/* Call op with body (borrowed; NULL = {}).  On TLR_OK *out is the parsed
 * answer, new and owned (json_object_put).  Errors as described above;
 * *err (may be NULL) says what AWS said.  TLR_E_INVAL for a client
 * created without a target_prefix. */
int tlr_aws_json_call(tlr_aws_json *j, const char *op, json_object *body, json_object **out,
                      tlr_aws_error *err);

/* REST-JSON: method ("GET", "POST", ...) on path, which starts with '/',
 * is already URI-encoded (tlr_sigv4_uri_encode) and goes after the
 * endpoint's own path.  body (borrowed) is sent as JSON; NULL = no body.
 * op names the operation in messages and logs ("DescribeCluster").  On
 * TLR_OK *out is the parsed answer, new and owned (json_object_put);
 * errors and *err as for tlr_aws_json_call. */
int tlr_aws_json_rest(tlr_aws_json *j, const char *op, const char *method, const char *path,
                      json_object *body, json_object **out, tlr_aws_error *err);

/* Parse a 2xx answer body[0..len) (borrowed; may be NULL when len is 0)
 * as the calls above do.  On TLR_OK *out is new and owned
 * (json_object_put); TLR_E_PARSE when it is not JSON. */
int tlr_aws_json_answer_parse(const char *body, size_t len, json_object **out);

/* Parse an error answer (body may be NULL; type_header the
 * X-Amzn-ErrorType value or NULL) into *err.  Exposed for tests. */
void tlr_aws_json_error_parse(const char *body, size_t len, const char *type_header,
                              int http_status, tlr_aws_error *err);

#endif
