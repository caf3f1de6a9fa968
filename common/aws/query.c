/* query.c - tlr_aws_query: signed AWS Query calls over libcurl, with
 * retries, a response ceiling and error classification.
 *
 * One call = build the form body, then up to max_attempts times: fetch
 * credentials (cached by the provider), sign, POST, classify.  Only
 * answers that say "try again" are retried: throttling codes, 5xx, and
 * transport failures before any answer (connect refused, timeouts, reset
 * connections).  A 4xx with any other code is final.  AWS Query calls are
 * retried as a whole; the mutating EC2 calls we make carry a ClientToken,
 * so a retry after a lost answer does not launch twice.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "aws_retry.h"
#include "tlr_alloc.h"
#include "tlr_awscreds.h"
#include "tlr_awsfence.h"
#include "tlr_awsquery.h"
#include "tlr_buf.h"
#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_sigv4.h"
#include "tlr_time.h"

#define QUERY_MAX_BODY (4 << 20)   /* our own request bodies */

/* --- parameters ------------------------------------------------------ */

struct tlr_aws_params {
    char **kv;      /* key, value, key, value...; owned */
    size_t n, cap;  /* n counts strings */
};

void tlr_aws_params_create(tlr_aws_params **out)
{
    *out = tlr_calloc(1, sizeof(**out));
}

void tlr_aws_params_free(tlr_aws_params *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->kv[i]);
    free(p->kv);
    free(p);
}

void tlr_aws_params_add(tlr_aws_params *p, const char *key, const char *value)
{
    TLR_GROW(p->kv, p->cap, p->n + 2);
    p->kv[p->n++] = tlr_strdup(key);
    p->kv[p->n++] = tlr_strdup(value != NULL ? value : "");
}

void tlr_aws_params_addf(tlr_aws_params *p, const char *value, const char *keyfmt, ...)
{
    char key[512];
    va_list ap;

    va_start(ap, keyfmt);
    vsnprintf(key, sizeof(key), keyfmt, ap);
    va_end(ap);
    tlr_aws_params_add(p, key, value);
}

size_t tlr_aws_params_count(const tlr_aws_params *p)
{
    return p != NULL ? p->n / 2 : 0;
}

/* --- error classes --------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);

    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool in_list(const char *code, const char *const *list)
{
    for (; *list != NULL; list++)
        if (strcmp(code, *list) == 0)
            return true;
    return false;
}

int tlr_aws_error_class(const char *code, int http_status)
{
    static const char *const auth[] = {
        "AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch",
        "UnauthorizedOperation", "AccessDenied", "AccessDeniedException",
        "ExpiredToken", "ExpiredTokenException", "InvalidAccessKeyId",
        "MissingAuthenticationToken", "IncompleteSignature", "UnrecognizedClientException",
        "InvalidIdentityToken", "OptInRequired", "RequestExpired", "Blocked",
        "InvalidSignatureException", NULL,
    };
    static const char *const capacity[] = {
        "InsufficientInstanceCapacity", "InsufficientHostCapacity",
        "InsufficientReservedInstanceCapacity", "InsufficientCapacity",
        "MaxSpotInstanceCountExceeded", "VcpuLimitExceeded", "UnfulfillableCapacity",
        "SpotMaxPriceTooLow", "InsufficientFreeAddressesInSubnet", NULL,
    };
    static const char *const throttled[] = {
        "RequestLimitExceeded", "Throttling", "ThrottlingException", "ThrottledException",
        "RequestThrottled", "RequestThrottledException", "TooManyRequestsException",
        "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException",
        "BandwidthLimitExceeded", NULL,
    };
    static const char *const inval[] = {
        "InvalidParameterValue", "InvalidParameter", "InvalidParameterCombination",
        "ValidationError", "ValidationException", "MissingParameter", "MissingAction",
        "InvalidAction", "MalformedQueryString", "InvalidQueryParameter",
        "InvalidAMIID.Malformed", "InvalidInstanceID.Malformed", "UnknownParameter", NULL,
    };
    static const char *const unavailable[] = {
        "ServiceUnavailable", "Unavailable", "InternalError", "InternalFailure",
        "ServiceUnavailableException", "InternalServerError", NULL,
    };

    if (code != NULL && code[0] != '\0') {
        if (in_list(code, auth))
            return TLR_E_AUTH;
        if (in_list(code, capacity))
            return TLR_E_CAPACITY;
        if (in_list(code, throttled))
            return TLR_E_THROTTLED;
        if (in_list(code, unavailable))
            return TLR_E_UNAVAILABLE;
        if (ends_with(code, ".NotFound") || ends_with(code, "NotFound") ||
            strcmp(code, "NoSuchEntity") == 0 || ends_with(code, "NotFoundException"))
            return TLR_E_NOTFOUND;
        if (strcmp(code, "EntityAlreadyExists") == 0 || ends_with(code, ".Duplicate") ||
            ends_with(code, "AlreadyExists") || strcmp(code, "IdempotentParameterMismatch") == 0)
            return TLR_E_EXISTS;
        if (in_list(code, inval) || ends_with(code, ".Malformed"))
            return TLR_E_INVAL;
        return TLR_E_REMOTE;
    }
    if (http_status == 429)
        return TLR_E_THROTTLED;
    if (http_status == 401 || http_status == 403)
        return TLR_E_AUTH;
    if (http_status == 404)
        return TLR_E_NOTFOUND;
    if (http_status >= 500)
        return TLR_E_UNAVAILABLE;
    return TLR_E_REMOTE;
}

static void copy_field(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src != NULL ? src : "");
}

int tlr_aws_error_parse(const tlr_xml_node *root, int http_status, tlr_aws_error *err)
{
    const tlr_xml_node *e = tlr_xml_find_deep(root, "Error");
    const char *rid;

    if (e == NULL || err == NULL)
        return TLR_E_NOTFOUND;
    memset(err, 0, sizeof(*err));
    err->http_status = http_status;
    copy_field(err->code, sizeof(err->code), tlr_xml_find_text(e, "Code"));
    copy_field(err->message, sizeof(err->message), tlr_xml_find_text(e, "Message"));
    rid = tlr_xml_find_text(root, "RequestID");
    if (rid == NULL)
        rid = tlr_xml_find_text(root, "RequestId");
    if (rid == NULL)
        rid = tlr_xml_find_text(root, "requestId");
    copy_field(err->request_id, sizeof(err->request_id), rid);
    return TLR_OK;
}

/* --- the client ------------------------------------------------------ */

struct tlr_aws_query {
    char *service, *version, *region, *sign_region;
    char *url;            /* "http://127.0.0.1:5000/" */
    char *host;           /* Host header: "127.0.0.1:5000" */
    char *path;           /* "/" */
    tlr_aws_creds *creds;
    tlr_logger *log;
    int timeout_ms, connect_timeout_ms, max_attempts, backoff_base_ms, backoff_cap_ms;
    size_t max_response;
    bool insecure;
    char *ca_file;
    CURL *curl;
    uint64_t rng;         /* xorshift state for jitter */
    const tlr_fence *fence;   /* NULL: unfenced */
    CURLM *multi;             /* fenced transfers run on it (tlr_awsfence.h) */
};

/* Split url into Host header value and path; TLR_E_INVAL if malformed. */
static int split_url(const char *url, char **host, char **path)
{
    CURLU *u = curl_url();
    char *h = NULL, *port = NULL, *p = NULL, *scheme = NULL;
    int rc = TLR_E_INVAL;

    if (u == NULL)
        abort();
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) ||
        curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &p, 0) != CURLUE_OK)
        goto out;
    /* Without CURLU_DEFAULT_PORT only an explicit port is returned, and
     * curl's Host header carries exactly that. */
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && port != NULL) {
        size_t n = strlen(h) + strlen(port) + 2;

        *host = tlr_malloc(n);
        snprintf(*host, n, "%s:%s", h, port);
    } else {
        *host = tlr_strdup(h);
    }
    *path = tlr_strdup(p != NULL && p[0] ? p : "/");
    rc = TLR_OK;
out:
    curl_free(scheme);
    curl_free(h);
    curl_free(port);
    curl_free(p);
    curl_url_cleanup(u);
    return rc;
}

int tlr_aws_query_create_for(const tlr_aws_query_opts *o, const char *service,
                             const char *version, tlr_aws_query **out)
{
    tlr_aws_query_opts c = { 0 };
    if (o != NULL)
        c = *o;
    c.service = service;
    c.version = version;
    return tlr_aws_query_create(&c, out);
}

int tlr_aws_query_create(const tlr_aws_query_opts *o, tlr_aws_query **out)
{
    tlr_aws_query *q;
    char url[512];
    const char *endpoint, *region;
    int rc;

    if (o == NULL || out == NULL || o->service == NULL || o->version == NULL ||
        o->service[0] == '\0' || strlen(o->service) > 64)
        return TLR_E_INVAL;
    region = tlr_aws_region(o->region);
    endpoint = tlr_aws_endpoint(o->service, o->endpoint);
    if (endpoint == NULL) {
        if (strcmp(o->service, "iam") == 0)
            snprintf(url, sizeof(url), "https://iam.amazonaws.com/");
        else
            snprintf(url, sizeof(url), "https://%s.%s.amazonaws.com/", o->service, region);
        endpoint = url;
    }

    q = tlr_calloc(1, sizeof(*q));
    if ((rc = split_url(endpoint, &q->host, &q->path)) != TLR_OK) {
        free(q);
        return rc;
    }
    q->service = tlr_strdup(o->service);
    q->version = tlr_strdup(o->version);
    q->region = tlr_strdup(region);
    /* IAM is global and signs for us-east-1 whatever the client's region. */
    q->sign_region = tlr_strdup(strcmp(o->service, "iam") == 0 && o->endpoint == NULL &&
                                getenv("AWS_ENDPOINT_URL") == NULL ? "us-east-1" : region);
    q->url = tlr_strdup(endpoint);
    q->creds = o->creds;
    q->log = o->log;
    q->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    q->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 5000;
    q->max_attempts = o->max_attempts > 0 ? o->max_attempts : 5;
    q->backoff_base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : 100;
    q->backoff_cap_ms = o->backoff_cap_ms > 0 ? o->backoff_cap_ms : 20000;
    q->max_response = o->max_response > 0 ? o->max_response : (size_t)32 << 20;
    q->insecure = o->insecure;
    q->ca_file = tlr_strdup(o->ca_file);
    q->fence = o->fence;
    q->rng = (uint64_t)tlr_mono_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)q;
    if (q->rng == 0)
        q->rng = 0x9e3779b97f4a7c15ull;
    q->curl = curl_easy_init();
    if (q->curl == NULL)
        abort();
    *out = q;
    return TLR_OK;
}

void tlr_aws_query_free(tlr_aws_query *q)
{
    if (q == NULL)
        return;
    if (q->curl != NULL)
        curl_easy_cleanup(q->curl);
    if (q->multi != NULL)
        curl_multi_cleanup(q->multi);
    free(q->service);
    free(q->version);
    free(q->region);
    free(q->sign_region);
    free(q->url);
    free(q->host);
    free(q->path);
    free(q->ca_file);
    free(q);
}

const char *tlr_aws_query_endpoint(const tlr_aws_query *q)
{
    return q->url;
}

const char *tlr_aws_query_region(const tlr_aws_query *q)
{
    return q->region;
}

typedef struct sink {
    tlr_buf body;
    bool toobig;
    int64_t retry_after_ms;   /* -1 = no Retry-After header */
} sink;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    sink *s = ud;

    if (tlr_buf_add(&s->body, ptr, size * nmemb) != TLR_OK) {
        s->toobig = true;
        return 0;   /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    return size * nmemb;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    sink *s = ud;
    int64_t ms;

    if (aws_retry_after_header(ptr, size * nmemb, &ms))
        s->retry_after_ms = ms;
    return size * nmemb;
}

/* application/x-www-form-urlencoded: RFC 3986 unreserved characters as
 * they are, a space as '+', everything else %XX.  The '+' matters: AWS
 * reads either spelling, but moto re-encodes the form it parsed to check
 * the payload hash, and it writes spaces as '+'. */
static int form_encode(tlr_buf *b, const char *s)
{
    int rc = TLR_OK;
    while (rc == TLR_OK && *s) {
        size_t run = strcspn(s, " ");
        if (run > 0)
            rc = tlr_sigv4_uri_encode(b, s, run, false);
        s += run;
        if (rc == TLR_OK && *s == ' ') {
            rc = tlr_buf_addc(b, '+');
            s++;
        }
    }
    return rc;
}

static int build_body(const tlr_aws_query *q, const char *action, const tlr_aws_params *params,
                      tlr_buf *b)
{
    int rc = tlr_buf_adds(b, "Action=");

    if (rc == TLR_OK)
        rc = tlr_sigv4_uri_encode(b, action, strlen(action), false);
    if (rc == TLR_OK)
        rc = tlr_buf_adds(b, "&Version=");
    if (rc == TLR_OK)
        rc = tlr_sigv4_uri_encode(b, q->version, strlen(q->version), false);
    for (size_t i = 0; params != NULL && i + 1 < params->n && rc == TLR_OK; i += 2) {
        rc = tlr_buf_addc(b, '&');
        if (rc == TLR_OK)
            rc = form_encode(b, params->kv[i]);
        if (rc == TLR_OK)
            rc = tlr_buf_addc(b, '=');
        if (rc == TLR_OK)
            rc = form_encode(b, params->kv[i + 1]);
    }
    return rc;
}

/* One HTTP exchange bounded by timeout_ms.  Returns TLR_OK when an answer
 * arrived (any status; *status set), or the transport error. */
static int exchange(tlr_aws_query *q, const tlr_buf *body, const tlr_aws_credentials *cr,
                    long timeout_ms, sink *s, long *status, char *curlerr)
{
    char amz_date[17], hdr_date[64], hdr_host[600], *hdr_auth = NULL, *hdr_token = NULL;
    const char *ctype = "application/x-www-form-urlencoded; charset=utf-8";
    tlr_sigv4_header sh[4];
    size_t nsh = 0;
    struct curl_slist *hl = NULL;
    CURLcode cc;
    int rc = TLR_OK;

    tlr_sigv4_amz_date(tlr_wall_ms(), amz_date);
    sh[nsh++] = (tlr_sigv4_header){ "Content-Type", ctype };
    sh[nsh++] = (tlr_sigv4_header){ "Host", q->host };
    sh[nsh++] = (tlr_sigv4_header){ "X-Amz-Date", amz_date };
    if (cr != NULL && cr->session_token != NULL)
        sh[nsh++] = (tlr_sigv4_header){ "X-Amz-Security-Token", cr->session_token };
    if (cr != NULL) {
        tlr_sigv4_request r = { .method = "POST", .path = q->path, .headers = sh,
                                .nheaders = nsh, .body = body->data, .body_len = body->len };
        tlr_sigv4_key k = { cr->access_key_id, cr->secret_access_key, q->sign_region,
                            q->service };
        tlr_sigv4_result res = { 0 };
        size_t n;

        if ((rc = tlr_sigv4_sign(&r, &k, &res)) != TLR_OK)
            return rc;
        n = strlen(res.authorization) + 32;
        hdr_auth = tlr_malloc(n);
        snprintf(hdr_auth, n, "Authorization: %s", res.authorization);
        tlr_sigv4_result_free(&res);
        hl = curl_slist_append(hl, hdr_auth);
        if (cr->session_token != NULL) {
            n = strlen(cr->session_token) + 32;
            hdr_token = tlr_malloc(n);
            snprintf(hdr_token, n, "X-Amz-Security-Token: %s", cr->session_token);
            hl = curl_slist_append(hl, hdr_token);
        }
    }
    snprintf(hdr_date, sizeof(hdr_date), "X-Amz-Date: %s", amz_date);
    snprintf(hdr_host, sizeof(hdr_host), "Host: %s", q->host);
    hl = curl_slist_append(hl, hdr_date);
    hl = curl_slist_append(hl, hdr_host);
    hl = curl_slist_append(hl, "Content-Type: application/x-www-form-urlencoded; charset=utf-8");
    hl = curl_slist_append(hl, "Expect:");   /* no 100-continue round trip */
    if (hl == NULL)
        abort();

    curl_easy_reset(q->curl);
    curl_easy_setopt(q->curl, CURLOPT_URL, q->url);
    curl_easy_setopt(q->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(q->curl, CURLOPT_POSTFIELDS, body->data != NULL ? body->data : "");
    curl_easy_setopt(q->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    curl_easy_setopt(q->curl, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(q->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(q->curl, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(q->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(q->curl, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(q->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(q->curl, CURLOPT_CONNECTTIMEOUT_MS,
                     q->connect_timeout_ms < timeout_ms ? (long)q->connect_timeout_ms : timeout_ms);
    curl_easy_setopt(q->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(q->curl, CURLOPT_ERRORBUFFER, curlerr);
    curl_easy_setopt(q->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(q->curl, CURLOPT_SSL_VERIFYPEER, q->insecure ? 0L : 1L);
    curl_easy_setopt(q->curl, CURLOPT_SSL_VERIFYHOST, q->insecure ? 0L : 2L);
    if (q->ca_file != NULL)
        curl_easy_setopt(q->curl, CURLOPT_CAINFO, q->ca_file);
    curlerr[0] = '\0';
    bool cut;
    cc = tlr_aws_perform_fenced(q->curl, &q->multi, q->fence, &cut);
    if (cc == CURLE_OK) {
        curl_easy_getinfo(q->curl, CURLINFO_RESPONSE_CODE, status);
    } else if (cut) {
        snprintf(curlerr, CURL_ERROR_SIZE, "cut: this replica's Lease ended");
        rc = TLR_E_CANCELED;
    } else if (s->toobig) {
        rc = TLR_E_TOOBIG;
    } else {
        if (curlerr[0] == '\0')
            snprintf(curlerr, CURL_ERROR_SIZE, "%s", curl_easy_strerror(cc));
        rc = cc == CURLE_OPERATION_TIMEDOUT ? TLR_E_TIMEOUT : TLR_E_IO;
    }
    curl_easy_setopt(q->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    if (hdr_auth != NULL) {
        free(hdr_auth);
    }
    if (hdr_token != NULL) {
        OPENSSL_cleanse(hdr_token, strlen(hdr_token));
        free(hdr_token);
    }
    return rc;
}

int tlr_aws_query_call(tlr_aws_query *q, const char *action, const tlr_aws_params *params,
                       tlr_xml_doc **out, tlr_aws_error *err)
{
    tlr_buf body;
    tlr_aws_error e = { 0 };
    tlr_xml_doc *doc = NULL;
    char what[160];   /* "ec2 RunInstances", for messages */
    int rc = TLR_OK;

    if (q == NULL || action == NULL || out == NULL)
        return TLR_E_INVAL;
    snprintf(what, sizeof(what), "%s %s", q->service, action);
    tlr_buf_init(&body, QUERY_MAX_BODY);
    if ((rc = build_body(q, action, params, &body)) != TLR_OK)
        goto out;

    for (int attempt = 0; attempt < q->max_attempts; attempt++) {
        tlr_aws_credentials cr = { 0 };
        char curlerr[CURL_ERROR_SIZE], xerr[160];
        sink s = { .toobig = false, .retry_after_ms = -1 };
        long status = 0, timeout_ms;
        int cut;
        bool retry;

        memset(&e, 0, sizeof(e));
        /* Fenced: no attempt once the Lease is gone (and none outlives
         * it: exchange cuts the transfer). */
        if (!tlr_fence_valid(q->fence, tlr_mono_ms())) {
            rc = TLR_E_CANCELED;
            snprintf(e.message, sizeof(e.message), "%s %s not sent: this replica's Lease is not "
                     "valid", q->service, action);
            goto out;
        }
        if (aws_attempt_timeout(q->timeout_ms, &timeout_ms, &cut) != TLR_OK) {
            rc = TLR_E_TIMEOUT;
            aws_deadline_message(e.message, sizeof(e.message), what,
                                 attempt == 0 ? "before the call" : "before a retry");
            goto out;
        }
        if (q->creds != NULL && (rc = tlr_aws_creds_get(q->creds, &cr)) != TLR_OK) {
            snprintf(e.message, sizeof(e.message), "no credentials: %s", tlr_strerror(rc));
            goto out;
        }
        tlr_buf_init(&s.body, q->max_response);
        rc = exchange(q, &body, q->creds != NULL ? &cr : NULL, timeout_ms, &s, &status,
                      curlerr);
        tlr_aws_credentials_clear(&cr);
        if (rc == TLR_OK) {
            e.http_status = (int)status;
            doc = NULL;
            if (status >= 200 && status < 300) {
                rc = tlr_xml_parse(s.body.data != NULL ? s.body.data : "", s.body.len, NULL,
                                   &doc, xerr, sizeof(xerr));
                if (rc != TLR_OK)
                    snprintf(e.message, sizeof(e.message), "%s %s: malformed response: %s",
                             q->service, action, xerr);
            } else {
                tlr_xml_doc *ed = NULL;

                if (tlr_xml_parse(s.body.data != NULL ? s.body.data : "", s.body.len, NULL,
                                  &ed, NULL, 0) != TLR_OK ||
                    tlr_aws_error_parse(tlr_xml_root(ed), (int)status, &e) != TLR_OK) {
                    e.http_status = (int)status;
                    snprintf(e.message, sizeof(e.message), "HTTP %ld: %.200s", status,
                             tlr_buf_str(&s.body));
                }
                tlr_xml_free(ed);
                rc = tlr_aws_error_class(e.code, (int)status);
            }
        } else if (rc == TLR_E_TOOBIG) {
            snprintf(e.message, sizeof(e.message), "%s %s: response larger than %zu bytes",
                     q->service, action, q->max_response);
        } else if (rc == TLR_E_TIMEOUT && cut) {
            aws_deadline_message(e.message, sizeof(e.message), what, curlerr);
            tlr_buf_free(&s.body);
            goto out;
        } else {
            snprintf(e.message, sizeof(e.message), "%s %s: %s", q->service, action, curlerr);
        }
        tlr_buf_free(&s.body);
        if (rc == TLR_OK) {
            *out = doc;
            goto out;
        }
        /* A 5xx with a code we classify otherwise (capacity, auth) is final. */
        retry = rc == TLR_E_THROTTLED || rc == TLR_E_IO || rc == TLR_E_TIMEOUT ||
                rc == TLR_E_UNAVAILABLE || (e.http_status >= 500 && rc == TLR_E_REMOTE);
        if (rc == TLR_E_AUTH && q->creds != NULL &&
            (strcmp(e.code, "ExpiredToken") == 0 || strcmp(e.code, "RequestExpired") == 0))
            tlr_aws_creds_invalidate(q->creds);
        if (!retry || attempt + 1 >= q->max_attempts)
            break;
        {
            int64_t delay = aws_backoff_ms(&q->rng, attempt, q->backoff_base_ms,
                                           q->backoff_cap_ms);
            int64_t ra = e.http_status == 429 || e.http_status == 503 ? s.retry_after_ms : -1;
            int src;

            if (ra > AWS_RETRY_AFTER_CAP_MS)
                ra = AWS_RETRY_AFTER_CAP_MS;

            TLR_WARN(q->log, "aws call retried", TLR_S("service", q->service),
                     TLR_S("action", action), TLR_S("aws_code", e.code), TLR_ERR(rc),
                     TLR_I("http_status", e.http_status), TLR_I("attempt", attempt + 1),
                     TLR_I("delay_ms", delay > ra ? delay : ra));
            if ((src = aws_retry_sleep(delay, ra, q->fence, NULL)) != TLR_OK) {
                aws_retry_stopped_message(e.message, sizeof(e.message), what, src, q->fence);
                rc = src;
                break;
            }
        }
    }
out:
    if (rc != TLR_OK && err != NULL)
        *err = e;
    tlr_buf_free(&body);
    return rc;
}
