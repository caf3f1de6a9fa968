/* tlr_awsquery.h - the AWS Query protocol client (EC2, STS, IAM, SQS,
 * Auto Scaling) over libcurl.
 *
 * A call is a POST of the form body "Action=X&Version=Y&k=v&..."
 * (application/x-www-form-urlencoded; charset=utf-8), signed with SigV4
 * (tlr_sigv4.h) using credentials from a tlr_aws_creds provider, to
 * https://SERVICE.REGION.amazonaws.com/ or to an endpoint override (moto:
 * http://127.0.0.1:PORT).  The answer is parsed into a tlr_xml document;
 * an error answer becomes a tlr_aws_error (code, message, request id) and
 * a TLR_E_* code:
 *   AUTH       AuthFailure, InvalidClientTokenId, SignatureDoesNotMatch,
 *              UnauthorizedOperation, AccessDenied, ExpiredToken, ...
 *   CAPACITY   InsufficientInstanceCapacity, InsufficientHostCapacity,
 *              MaxSpotInstanceCountExceeded, VcpuLimitExceeded,
 *              UnfulfillableCapacity, SpotMaxPriceTooLow
 *   THROTTLED  RequestLimitExceeded, Throttling, ThrottlingException, ...
 *   NOTFOUND   *.NotFound, NoSuchEntity
 *   EXISTS     EntityAlreadyExists, *.Duplicate
 *   INVAL      InvalidParameterValue, ValidationError, MissingParameter, ...
 *   UNAVAILABLE 5xx without a recognised code, ServiceUnavailable
 *   REMOTE     anything else
 * Throttling, 5xx and connection failures are retried up to max_attempts
 * with full-jitter exponential backoff (delay = random(0, min(cap,
 * base * 2^attempt))); a 429 or 503 carrying Retry-After (seconds or an
 * HTTP-date) waits at least that long, at most 60 s.
 *
 * Bounding a call (tlr_cancel.h; both this client and tlr_awsjson.h):
 *   - Deadline.  tlr_deadline_set(mono_ms) on the calling thread bounds
 *     every call it makes until tlr_deadline_clear(): no attempt starts
 *     after the deadline, each attempt's curl timeout (and connect
 *     timeout) is cut at it, and a retry whose sleep would end at or after
 *     it is not slept at all.  A call cut short returns TLR_E_TIMEOUT and
 *     err->message says "<service> <Action>: deadline passed (...)" with
 *     the last failure in the parentheses.  The deadline is per thread, so
 *     callers on several threads each set their own (the launcher's
 *     lc_par_run copies the caller's into its workers).
 *   - Shutdown.  A retry sleep ends within milliseconds of SIGTERM/SIGINT
 *     (tlr_service calls tlr_shutdown_request()) and the call returns
 *     TLR_E_CANCELED, err->message "<service> <Action>: shutting down
 *     (...)".  An attempt already on the wire is not interrupted: it ends
 *     by its own timeout.
 *
 * TLS peer and host verification are on unless the options turn them
 * off.  A client owns one curl handle and is not thread-safe: use one
 * client per thread.
 */
#ifndef TLR_AWSQUERY_H
#define TLR_AWSQUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "tlr_awscreds.h"
#include "tlr_fence.h"
#include "tlr_log.h"
#include "tlr_xml.h"

typedef struct tlr_aws_error {
    int  http_status;       /* 0 when nothing was received */
    char code[96];          /* "InsufficientInstanceCapacity"; "" if none */
    char message[512];
    char request_id[96];
} tlr_aws_error;

/* Map an AWS error code (and HTTP status, for codeless answers) to TLR_E_*. */
int tlr_aws_error_class(const char *code, int http_status);

/* Parameters of one call, in order.  Keys and values are copied. */
typedef struct tlr_aws_params tlr_aws_params;

void tlr_aws_params_create(tlr_aws_params **out);   /* owned; _free() */
void tlr_aws_params_free(tlr_aws_params *p);        /* NULL is fine */
void tlr_aws_params_add(tlr_aws_params *p, const char *key, const char *value);
void tlr_aws_params_addf(tlr_aws_params *p, const char *value, const char *keyfmt, ...)
    __attribute__((format(printf, 3, 4)));
size_t tlr_aws_params_count(const tlr_aws_params *p);

typedef struct tlr_aws_query tlr_aws_query;

typedef struct tlr_aws_query_opts {
    const char *service;        /* signing name and host prefix: "ec2", "sts", "iam" */
    const char *version;        /* API version: "2016-11-15" */
    const char *region;         /* NULL = AWS_REGION, AWS_DEFAULT_REGION, "us-east-1" */
    const char *endpoint;       /* URL override; NULL = AWS_ENDPOINT_URL_<SERVICE>,
                                 * AWS_ENDPOINT_URL, then the AWS default */
    tlr_aws_creds *creds;       /* borrowed; NULL = unsigned requests */
    tlr_logger *log;            /* borrowed; may be NULL */
    int    timeout_ms;          /* whole request; 0 = 30000 */
    int    connect_timeout_ms;  /* 0 = 5000 */
    int    max_attempts;        /* 0 = 5 */
    int    backoff_base_ms;     /* 0 = 100 */
    int    backoff_cap_ms;      /* 0 = 20000 */
    size_t max_response;        /* body ceiling; 0 = 32 MiB */
    bool   insecure;            /* skip TLS verification (never in production) */
    const char *ca_file;        /* extra CA bundle; NULL = system */
    const tlr_fence *fence;     /* borrowed; NULL = unfenced.  A call is
                                 * refused unsent (TLR_E_CANCELED) once the
                                 * fence has run out; a transfer or a retry
                                 * sleep still going when it runs out is
                                 * cut there (TLR_E_CANCELED), one the
                                 * Lease's renewals keep valid goes on
                                 * (tlr_awsfence.h, tlr_lease.h) */
} tlr_aws_query_opts;

/* On TLR_OK *out is new and owned: tlr_aws_query_free().  TLR_E_INVAL on
 * a missing service/version or a malformed endpoint URL. */
int  tlr_aws_query_create(const tlr_aws_query_opts *o, tlr_aws_query **out);
void tlr_aws_query_free(tlr_aws_query *q);   /* NULL is fine */
/* The same for one service's client: o (may be NULL) with its service and
 * version replaced by these (borrowed, static strings). */
int  tlr_aws_query_create_for(const tlr_aws_query_opts *o, const char *service,
                              const char *version, tlr_aws_query **out);

/* The endpoint URL in use ("http://127.0.0.1:5000/"); borrowed. */
const char *tlr_aws_query_endpoint(const tlr_aws_query *q);
const char *tlr_aws_query_region(const tlr_aws_query *q);

/* Call action with params (borrowed; may be NULL).  On TLR_OK *out is the
 * parsed response document, new and owned by the caller (tlr_xml_free()).
 * On an AWS error, *err (may be NULL) is filled and the class above is
 * returned; TLR_E_PARSE for a malformed answer, TLR_E_TOOBIG for one past
 * max_response, TLR_E_IO / TLR_E_TIMEOUT when the endpoint could not be
 * reached after all attempts; credential errors as tlr_aws_creds_get. */
int  tlr_aws_query_call(tlr_aws_query *q, const char *action, const tlr_aws_params *params,
                        tlr_xml_doc **out, tlr_aws_error *err);

/* Parse an AWS Query error document (EC2's <Response><Errors><Error> or
 * the <ErrorResponse><Error> of STS/IAM) into *err; TLR_E_NOTFOUND if it
 * holds no <Error>.  Exposed for tests. */
int  tlr_aws_error_parse(const tlr_xml_node *root, int http_status, tlr_aws_error *err);

#endif
