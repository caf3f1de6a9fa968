/* awsjson.c - tlr_aws_json: signed AWS JSON 1.1 and REST-JSON calls
 * (tlr_awsjson.h).
 *
 * The same shape as query.c: up to max_attempts times fetch credentials,
 * sign, send, classify; only "try again" answers are retried.  Both
 * protocols are one request (struct request) through one exchange and
 * one retry loop; they differ only in the headers, the URL and what a
 * 404 means.  The calls tailor makes (SSM GetParameter, Pricing
 * GetProducts, EKS DescribeCluster) are reads, so a retry is always safe.
 */
#include "tlr_awsjson.h"
#include "tlr_awsfence.h"

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
#include "tlr_buf.h"
#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_sigv4.h"
#include "tlr_time.h"

struct tlr_aws_json {
    char *service, *target_prefix, *region, *url, *host, *path;
    char *origin;        /* scheme://host[:port] */
    char *rest_prefix;   /* path without its trailing '/'s: REST paths go after it */
    tlr_aws_creds *creds;
    tlr_logger *log;
    int timeout_ms, max_attempts, backoff_base_ms, backoff_cap_ms;
    size_t max_response;
    bool insecure;
    const tlr_fence *fence;   /* NULL: unfenced */
    CURLM *multi;             /* fenced transfers run on it (tlr_awsfence.h) */
    uint64_t rng;
    CURL *curl;
};

/* host[:port], scheme://host[:port] and path of url; TLR_E_INVAL when it
 * is not http(s). */
static int split_url(const char *url, char **host, char **origin, char **path)
{
    CURLU *u = curl_url();
    char *h = NULL, *port = NULL, *p = NULL, *scheme = NULL;
    int rc = TLR_E_INVAL;
    size_t n;

    if (u == NULL)
        abort();
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) ||
        curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &p, 0) != CURLUE_OK)
        goto out;
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && port != NULL) {
        n = strlen(h) + strlen(port) + 2;
        *host = tlr_malloc(n);
        snprintf(*host, n, "%s:%s", h, port);
    } else {
        *host = tlr_strdup(h);
    }
    n = strlen(scheme) + strlen(*host) + 4;
    *origin = tlr_malloc(n);
    snprintf(*origin, n, "%s://%s", scheme, *host);
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

int tlr_aws_json_create(const tlr_aws_json_opts *o, tlr_aws_json **out)
{
    if (o == NULL || out == NULL || o->service == NULL || o->service[0] == '\0' ||
        strlen(o->service) > 64 || o->creds == NULL)
        return TLR_E_INVAL;
    const char *region = tlr_aws_region(o->region);
    char url[512];
    const char *endpoint = tlr_aws_endpoint(o->service, o->endpoint);
    if (endpoint == NULL) {
        snprintf(url, sizeof(url), "https://%s.%s.amazonaws.com/",
                 o->host_prefix ? o->host_prefix : o->service, region);
        endpoint = url;
    }
    tlr_aws_json *j = tlr_calloc(1, sizeof(*j));
    if (split_url(endpoint, &j->host, &j->origin, &j->path) != TLR_OK) {
        free(j);
        return TLR_E_INVAL;
    }
    size_t pl = strlen(j->path);
    while (pl > 0 && j->path[pl - 1] == '/')
        pl--;
    j->rest_prefix = tlr_strndup(j->path, pl);
    j->service = tlr_strdup(o->service);
    j->target_prefix = o->target_prefix != NULL ? tlr_strdup(o->target_prefix) : NULL;
    j->region = tlr_strdup(region);
    j->url = tlr_strdup(endpoint);
    j->creds = o->creds;
    j->log = o->log;
    j->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    j->max_attempts = o->max_attempts > 0 ? o->max_attempts : 5;
    j->backoff_base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : 100;
    j->backoff_cap_ms = o->backoff_cap_ms > 0 ? o->backoff_cap_ms : 20000;
    j->max_response = o->max_response > 0 ? o->max_response : (size_t)64 << 20;
    j->insecure = o->insecure;
    j->fence = o->fence;
    j->rng = (uint64_t)tlr_mono_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)j;
    if (j->rng == 0)
        j->rng = 0x9e3779b97f4a7c15ull;
    j->curl = curl_easy_init();
    if (j->curl == NULL)
        abort();
    *out = j;
    return TLR_OK;
}

void tlr_aws_json_free(tlr_aws_json *j)
{
    if (j == NULL)
        return;
    if (j->curl != NULL)
        curl_easy_cleanup(j->curl);
    if (j->multi)
        curl_multi_cleanup(j->multi);
    free(j->service);
    free(j->target_prefix);
    free(j->region);
    free(j->url);
    free(j->host);
    free(j->path);
    free(j->origin);
    free(j->rest_prefix);
    free(j);
}

const char *tlr_aws_json_endpoint(const tlr_aws_json *j)
{
    return j->url;
}

const char *tlr_aws_json_origin(const tlr_aws_json *j)
{
    return j->origin;
}

void tlr_aws_json_error_parse(const char *body, size_t len, const char *type_header,
                              int http_status, tlr_aws_error *err)
{
    memset(err, 0, sizeof(*err));
    err->http_status = http_status;
    json_object *o = NULL;
    if (body != NULL && len > 0) {
        json_tokener *tok = json_tokener_new();
        o = json_tokener_parse_ex(tok, body, (int)len);
        json_tokener_free(tok);
    }
    const char *type = type_header;
    json_object *v;
    if ((type == NULL || type[0] == '\0') && o != NULL &&
        json_object_object_get_ex(o, "__type", &v))
        type = json_object_get_string(v);
    if (type != NULL) {
        /* "com.amazonaws.ssm#ParameterNotFound" or "ParameterNotFound:http://..." */
        const char *hash = strrchr(type, '#');
        const char *t = hash ? hash + 1 : type;
        size_t n = strcspn(t, ":");
        snprintf(err->code, sizeof(err->code), "%.*s", (int)n, t);
    }
    if (o != NULL && (json_object_object_get_ex(o, "message", &v) ||
                      json_object_object_get_ex(o, "Message", &v)))
        snprintf(err->message, sizeof(err->message), "%s", json_object_get_string(v));
    else if (o == NULL && body != NULL)
        snprintf(err->message, sizeof(err->message), "HTTP %d: %.*s", http_status,
                 (int)(len < 200 ? len : 200), body);   /* body[0..len) has no NUL */
    json_object_put(o);
}

typedef struct sink {
    tlr_buf body;
    bool toobig;
    char type_header[128];
    int64_t retry_after_ms;   /* -1 = no Retry-After header */
} sink;

int tlr_aws_json_answer_parse(const char *body, size_t len, json_object **out)
{
    json_tokener *tok = json_tokener_new_ex(64);
    json_object *o = json_tokener_parse_ex(tok, body ? body : "", (int)len);
    json_tokener_free(tok);
    if (o == NULL)
        return TLR_E_PARSE;
    *out = o;
    return TLR_OK;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    sink *s = ud;
    if (tlr_buf_add(&s->body, ptr, size * nmemb) != TLR_OK) {
        s->toobig = true;
        return 0;
    }
    return size * nmemb;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    sink *s = ud;
    size_t n = size * nmemb;
    static const char name[] = "x-amzn-errortype:";
    int64_t ms;
    if (aws_retry_after_header(ptr, n, &ms))
        s->retry_after_ms = ms;
    if (n > sizeof(name) - 1 && strncasecmp(ptr, name, sizeof(name) - 1) == 0) {
        const char *v = ptr + sizeof(name) - 1;
        size_t vl = n - (sizeof(name) - 1);
        while (vl > 0 && (*v == ' ' || *v == '\t')) {
            v++;
            vl--;
        }
        while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        snprintf(s->type_header, sizeof(s->type_header), "%.*s", (int)vl, v);
    }
    return n;
}

/* Empty b, zeroing what it held (a session token, a signature). */
static void wipe(tlr_buf *b)
{
    if (b->data != NULL)
        memset(b->data, 0, b->len);
    tlr_buf_reset(b);
}

/* One request of either protocol. */
typedef struct request {
    const char *op;       /* in messages and logs */
    const char *method;   /* "POST", "GET", ... */
    const char *url;      /* as sent */
    const char *path;     /* as signed */
    const char *target;   /* X-Amz-Target value (JSON 1.1); NULL = REST-JSON */
    const char *body;     /* NULL = none */
} request;

/* One exchange bounded by timeout_ms; TLR_OK when an answer arrived
 * (*status set). */
static int exchange(tlr_aws_json *j, const request *rq, const tlr_aws_credentials *cr,
                    long timeout_ms, sink *s, long *status, char *curlerr)
{
    const char *ctype = rq->target != NULL ? "application/x-amz-json-1.1"
                        : rq->body != NULL ? "application/json"
                                           : NULL;
    size_t blen = rq->body != NULL ? strlen(rq->body) : 0, nh = 0;
    char date[17];
    tlr_sigv4_header hs[5];

    tlr_sigv4_amz_date(tlr_wall_ms(), date);
    hs[nh++] = (tlr_sigv4_header){ "host", j->host };
    hs[nh++] = (tlr_sigv4_header){ "x-amz-date", date };
    if (ctype != NULL)
        hs[nh++] = (tlr_sigv4_header){ "content-type", ctype };
    if (rq->target != NULL)
        hs[nh++] = (tlr_sigv4_header){ "x-amz-target", rq->target };
    if (cr->session_token != NULL)
        hs[nh++] = (tlr_sigv4_header){ "x-amz-security-token", cr->session_token };
    tlr_sigv4_request r = { rq->method, rq->path, NULL, hs, nh, rq->body, blen, NULL, false };
    tlr_sigv4_key k = { cr->access_key_id, cr->secret_access_key, j->region, j->service };
    tlr_sigv4_result sig = { 0 };
    struct curl_slist *hl = NULL;
    int rc = tlr_sigv4_sign(&r, &k, &sig);
    if (rc != TLR_OK)
        return rc;
    tlr_buf b;
    tlr_buf_init(&b, 1 << 16);
    /* hs[0] is Host: curl sends it from the URL. */
    for (size_t i = 1; i < nh; i++) {
        wipe(&b);
        tlr_buf_printf(&b, "%s: %s", hs[i].name, hs[i].value);
        hl = curl_slist_append(hl, tlr_buf_str(&b));
    }
    wipe(&b);
    tlr_buf_printf(&b, "Authorization: %s", sig.authorization);
    hl = curl_slist_append(hl, tlr_buf_str(&b));
    wipe(&b);
    tlr_buf_printf(&b, "Host: %s", j->host);
    hl = curl_slist_append(hl, tlr_buf_str(&b));
    wipe(&b);
    tlr_buf_free(&b);
    if (rq->body != NULL)
        hl = curl_slist_append(hl, "Expect:");
    if (rq->target == NULL)
        hl = curl_slist_append(hl, "Accept: application/json");
    if (hl == NULL)
        abort();
    curl_easy_reset(j->curl);
    curl_easy_setopt(j->curl, CURLOPT_URL, rq->url);
    if (rq->body != NULL) {
        curl_easy_setopt(j->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(j->curl, CURLOPT_POSTFIELDS, rq->body);
        curl_easy_setopt(j->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    } else {
        curl_easy_setopt(j->curl, CURLOPT_HTTPGET, 1L);
    }
    if (strcmp(rq->method, rq->body != NULL ? "POST" : "GET") != 0)
        curl_easy_setopt(j->curl, CURLOPT_CUSTOMREQUEST, rq->method);
    curl_easy_setopt(j->curl, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(j->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(j->curl, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(j->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(j->curl, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(j->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(j->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000L);
    curl_easy_setopt(j->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(j->curl, CURLOPT_ERRORBUFFER, curlerr);
    curl_easy_setopt(j->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(j->curl, CURLOPT_SSL_VERIFYPEER, j->insecure ? 0L : 1L);
    curl_easy_setopt(j->curl, CURLOPT_SSL_VERIFYHOST, j->insecure ? 0L : 2L);
    curlerr[0] = '\0';
    bool cut;
    CURLcode cc = tlr_aws_perform_fenced(j->curl, &j->multi, j->fence, &cut);
    if (cc == CURLE_OK) {
        curl_easy_getinfo(j->curl, CURLINFO_RESPONSE_CODE, status);
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
    curl_easy_setopt(j->curl, CURLOPT_HTTPHEADER, NULL);
    for (struct curl_slist *l = hl; l != NULL; l = l->next)
        OPENSSL_cleanse(l->data, strlen(l->data));   /* the session token was in there */
    curl_slist_free_all(hl);
    tlr_sigv4_result_free(&sig);
    return rc;
}

/* Send rq until it succeeds, fails for good or runs out of attempts. */
static int send_request(tlr_aws_json *j, const request *rq, json_object **out,
                        tlr_aws_error *err)
{
    tlr_aws_error e = { 0 };
    char what[160];   /* "ssm GetParameter", for messages */
    int rc = TLR_OK;
    snprintf(what, sizeof(what), "%s %s", j->service, rq->op);
    for (int attempt = 0; attempt < j->max_attempts; attempt++) {
        tlr_aws_credentials cr = { 0 };
        char curlerr[CURL_ERROR_SIZE];
        sink s = { .toobig = false, .retry_after_ms = -1 };
        long status = 0, timeout_ms;
        int cut;
        memset(&e, 0, sizeof(e));
        /* Fenced: no attempt once the Lease is gone (and none outlives
         * it: exchange cuts the transfer). */
        if (!tlr_fence_valid(j->fence, tlr_mono_ms())) {
            rc = TLR_E_CANCELED;
            snprintf(e.message, sizeof(e.message), "%s %s not sent: this replica's Lease is not "
                     "valid", j->service, rq->op);
            break;
        }
        if (aws_attempt_timeout(j->timeout_ms, &timeout_ms, &cut) != TLR_OK) {
            rc = TLR_E_TIMEOUT;
            aws_deadline_message(e.message, sizeof(e.message), what,
                                 attempt == 0 ? "before the call" : "before a retry");
            break;
        }
        if ((rc = tlr_aws_creds_get(j->creds, &cr)) != TLR_OK) {
            snprintf(e.message, sizeof(e.message), "no credentials: %s", tlr_strerror(rc));
            break;
        }
        tlr_buf_init(&s.body, j->max_response);
        rc = exchange(j, rq, &cr, timeout_ms, &s, &status, curlerr);
        tlr_aws_credentials_clear(&cr);
        if (rc == TLR_OK) {
            e.http_status = (int)status;
            if (status >= 200 && status < 300) {
                rc = tlr_aws_json_answer_parse(s.body.data, s.body.len, out);
                if (rc != TLR_OK)
                    snprintf(e.message, sizeof(e.message), "%s %s: malformed JSON answer",
                             j->service, rq->op);
            } else {
                tlr_aws_json_error_parse(s.body.data, s.body.len, s.type_header, (int)status,
                                         &e);
                /* REST: the path names a resource, so a bare 404 is "no such one". */
                if (e.code[0] == '\0' && status == 404 && rq->target == NULL)
                    snprintf(e.code, sizeof(e.code), "ResourceNotFoundException");
                if (e.code[0] != '\0')
                    rc = tlr_aws_error_class(e.code, (int)status);
                else
                    rc = status == 404 || status >= 500 ? TLR_E_UNAVAILABLE : TLR_E_REMOTE;
            }
        } else if (rc == TLR_E_TOOBIG) {
            snprintf(e.message, sizeof(e.message), "%s %s: answer larger than %zu bytes",
                     j->service, rq->op, j->max_response);
        } else if (rc == TLR_E_TIMEOUT && cut) {
            aws_deadline_message(e.message, sizeof(e.message), what, curlerr);
            tlr_buf_free(&s.body);
            break;
        } else {
            snprintf(e.message, sizeof(e.message), "%s %s: %s", j->service, rq->op, curlerr);
        }
        tlr_buf_free(&s.body);
        if (rc == TLR_OK)
            break;
        /* JSON 1.1: a 404 is "no such service here" (moto's HTML answer): final. */
        bool retry = rc == TLR_E_THROTTLED || rc == TLR_E_IO || rc == TLR_E_TIMEOUT ||
                     (rc == TLR_E_UNAVAILABLE && (rq->target == NULL || e.http_status != 404));
        if (rc == TLR_E_AUTH && (strcmp(e.code, "ExpiredToken") == 0 ||
                                 strcmp(e.code, "ExpiredTokenException") == 0))
            tlr_aws_creds_invalidate(j->creds);
        if (!retry || attempt + 1 >= j->max_attempts)
            break;
        int64_t delay = aws_backoff_ms(&j->rng, attempt, j->backoff_base_ms, j->backoff_cap_ms);
        int64_t ra = e.http_status == 429 || e.http_status == 503 ? s.retry_after_ms : -1;
        if (ra > AWS_RETRY_AFTER_CAP_MS)
            ra = AWS_RETRY_AFTER_CAP_MS;
        TLR_WARN(j->log, "aws call retried", TLR_S("service", j->service),
                 TLR_S("action", rq->op), TLR_S("aws_code", e.code), TLR_ERR(rc),
                 TLR_I("http_status", e.http_status), TLR_I("attempt", attempt + 1),
                 TLR_I("delay_ms", delay > ra ? delay : ra));
        int src = aws_retry_sleep(delay, ra, j->fence, NULL);
        if (src != TLR_OK) {
            aws_retry_stopped_message(e.message, sizeof(e.message), what, src, j->fence);
            rc = src;
            break;
        }
    }
    if (rc != TLR_OK && err != NULL)
        *err = e;
    return rc;
}

int tlr_aws_json_call(tlr_aws_json *j, const char *op, json_object *body, json_object **out,
                      tlr_aws_error *err)
{
    char target[256];

    if (j == NULL || op == NULL || out == NULL || j->target_prefix == NULL)
        return TLR_E_INVAL;
    snprintf(target, sizeof(target), "%s.%s", j->target_prefix, op);
    request rq = { op, "POST", j->url, j->path, target,
                   body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : "{}" };
    return send_request(j, &rq, out, err);
}

int tlr_aws_json_rest(tlr_aws_json *j, const char *op, const char *method, const char *path,
                      json_object *body, json_object **out, tlr_aws_error *err)
{
    if (j == NULL || op == NULL || method == NULL || path == NULL || path[0] != '/' ||
        out == NULL)
        return TLR_E_INVAL;
    size_t pl = strlen(j->rest_prefix) + strlen(path) + 1;
    size_t ul = strlen(j->origin) + pl;
    char *full = tlr_malloc(pl), *url = tlr_malloc(ul);
    snprintf(full, pl, "%s%s", j->rest_prefix, path);
    snprintf(url, ul, "%s%s", j->origin, full);
    request rq = { op, method, url, full, NULL,
                   body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL };
    int rc = send_request(j, &rq, out, err);
    free(full);
    free(url);
    return rc;
}
