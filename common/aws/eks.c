/* eks.c - EKS DescribeCluster over libcurl (tlr_eks.h).
 *
 * The same loop as awsjson.c, for a REST-JSON GET: up to max_attempts
 * times fetch credentials, sign, GET, classify; only "try again" answers
 * (throttling, 5xx, transport) are retried.  A read, so a retry is safe.
 */
#include "tlr_eks.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "tlr_alloc.h"
#include "tlr_awsjson.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_sigv4.h"
#include "tlr_time.h"

#define EKS_MAX_RESPONSE ((size_t)4 << 20)

struct tlr_eks {
    char *region, *base, *host, *path;   /* base: scheme://host[:port] */
    tlr_aws_creds *creds;
    tlr_logger *log;
    int timeout_ms, max_attempts, backoff_base_ms, backoff_cap_ms;
    uint64_t rng;
    CURL *curl;
};

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* Split url into scheme://host[:port] (base), host[:port] and its path
 * without a trailing slash. */
static int split_url(const char *url, char **base, char **host, char **path)
{
    CURLU *u = curl_url();
    char *h = NULL, *port = NULL, *p = NULL, *scheme = NULL;
    int rc = TLR_E_INVAL;
    if (!u)
        abort();
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) ||
        curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &p, 0) != CURLUE_OK)
        goto out;
    size_t n = strlen(h) + 16;
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && port) {
        n += strlen(port);
        *host = tlr_malloc(n);
        snprintf(*host, n, "%s:%s", h, port);
    } else {
        *host = tlr_strdup(h);
    }
    n = strlen(scheme) + strlen(*host) + 4;
    *base = tlr_malloc(n);
    snprintf(*base, n, "%s://%s", scheme, *host);
    size_t pl = p ? strlen(p) : 0;
    while (pl > 0 && p[pl - 1] == '/')
        pl--;
    *path = tlr_malloc(pl + 1);
    memcpy(*path, p ? p : "", pl);
    (*path)[pl] = '\0';
    rc = TLR_OK;
out:
    curl_free(scheme);
    curl_free(h);
    curl_free(port);
    curl_free(p);
    curl_url_cleanup(u);
    return rc;
}

int tlr_eks_create(const tlr_eks_opts *o, tlr_eks **out)
{
    if (!o || !out || !o->creds)
        return TLR_E_INVAL;
    const char *region = o->region && o->region[0] ? o->region : env_nonempty("AWS_REGION");
    if (!region)
        region = env_nonempty("AWS_DEFAULT_REGION");
    if (!region)
        region = "us-east-1";
    char url[512];
    const char *endpoint = o->endpoint && o->endpoint[0] ? o->endpoint : NULL;
    if (!endpoint)
        endpoint = env_nonempty("AWS_ENDPOINT_URL_EKS");
    if (!endpoint)
        endpoint = env_nonempty("AWS_ENDPOINT_URL");
    if (!endpoint) {
        snprintf(url, sizeof(url), "https://eks.%s.amazonaws.com", region);
        endpoint = url;
    }
    tlr_eks *e = tlr_calloc(1, sizeof(*e));
    if (split_url(endpoint, &e->base, &e->host, &e->path) != TLR_OK) {
        free(e);
        return TLR_E_INVAL;
    }
    e->region = tlr_strdup(region);
    e->creds = o->creds;
    e->log = o->log;
    e->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 15000;
    e->max_attempts = o->max_attempts > 0 ? o->max_attempts : 4;
    e->backoff_base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : 200;
    e->backoff_cap_ms = o->backoff_cap_ms > 0 ? o->backoff_cap_ms : 5000;
    e->rng = (uint64_t)tlr_mono_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)e;
    if (!e->rng)
        e->rng = 0x9e3779b97f4a7c15ull;
    e->curl = curl_easy_init();
    if (!e->curl)
        abort();
    *out = e;
    return TLR_OK;
}

void tlr_eks_free(tlr_eks *e)
{
    if (!e)
        return;
    if (e->curl)
        curl_easy_cleanup(e->curl);
    free(e->region);
    free(e->base);
    free(e->host);
    free(e->path);
    free(e);
}

const char *tlr_eks_endpoint(const tlr_eks *e)
{
    return e->base;
}

void tlr_eks_cluster_clear(tlr_eks_cluster *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->endpoint);
    free(c->status);
    free(c->version);
    free(c->ca_b64);
    free(c->service_cidr_v4);
    free(c->service_cidr_v6);
    memset(c, 0, sizeof(*c));
}

static char *jdup(json_object *o, const char *a, const char *b)
{
    json_object *x = NULL, *y = NULL;
    if (o && json_object_object_get_ex(o, a, &x)) {
        if (!b && json_object_is_type(x, json_type_string))
            return tlr_strdup(json_object_get_string(x));
        if (b && json_object_object_get_ex(x, b, &y) && json_object_is_type(y, json_type_string))
            return tlr_strdup(json_object_get_string(y));
    }
    return tlr_strdup("");
}

int tlr_eks_cluster_parse(const char *body, size_t len, tlr_eks_cluster *out)
{
    json_tokener *tok = json_tokener_new_ex(64);
    json_object *root = json_tokener_parse_ex(tok, body ? body : "", (int)len);
    json_tokener_free(tok);
    json_object *c = NULL;
    if (!root || !json_object_object_get_ex(root, "cluster", &c) ||
        !json_object_is_type(c, json_type_object)) {
        json_object_put(root);
        return TLR_E_PARSE;
    }
    tlr_eks_cluster r = { 0 };
    r.name = jdup(c, "name", NULL);
    r.endpoint = jdup(c, "endpoint", NULL);
    r.status = jdup(c, "status", NULL);
    r.version = jdup(c, "version", NULL);
    r.ca_b64 = jdup(c, "certificateAuthority", "data");
    r.service_cidr_v4 = jdup(c, "kubernetesNetworkConfig", "serviceIpv4Cidr");
    r.service_cidr_v6 = jdup(c, "kubernetesNetworkConfig", "serviceIpv6Cidr");
    json_object_put(root);
    *out = r;
    return TLR_OK;
}

typedef struct sink {
    tlr_buf body;
    bool toobig;
    char type_header[128];
} sink;

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
    if (b->data)
        memset(b->data, 0, b->len);
    tlr_buf_reset(b);
}

/* One signed GET of path; TLR_OK when an answer arrived (*status set). */
static int exchange(tlr_eks *e, const char *path, const tlr_aws_credentials *cr, sink *s,
                    long *status, char *curlerr)
{
    char date[17];
    tlr_sigv4_amz_date(tlr_wall_ms(), date);
    tlr_sigv4_header hs[3] = {
        { "host", e->host }, { "x-amz-date", date }, { "x-amz-security-token", cr->session_token },
    };
    size_t nh = cr->session_token ? 3 : 2;
    tlr_sigv4_request r = { "GET", path, NULL, hs, nh, NULL, 0, NULL, false };
    tlr_sigv4_key k = { cr->access_key_id, cr->secret_access_key, e->region, "eks" };
    tlr_sigv4_result sig = { 0 };
    int rc = tlr_sigv4_sign(&r, &k, &sig);
    if (rc != TLR_OK)
        return rc;
    struct curl_slist *hl = NULL;
    tlr_buf b;
    tlr_buf_init(&b, 1 << 16);
    for (size_t i = 1; i < nh; i++) {
        wipe(&b);
        tlr_buf_printf(&b, "%s: %s", hs[i].name, hs[i].value);
        hl = curl_slist_append(hl, tlr_buf_str(&b));
    }
    wipe(&b);
    tlr_buf_printf(&b, "Authorization: %s", sig.authorization);
    hl = curl_slist_append(hl, tlr_buf_str(&b));
    wipe(&b);
    tlr_buf_printf(&b, "Host: %s", e->host);
    hl = curl_slist_append(hl, tlr_buf_str(&b));
    hl = curl_slist_append(hl, "Accept: application/json");
    wipe(&b);
    tlr_buf_free(&b);
    if (!hl)
        abort();
    size_t ul = strlen(e->base) + strlen(path) + 1;
    char *url = tlr_malloc(ul);
    snprintf(url, ul, "%s%s", e->base, path);
    curl_easy_reset(e->curl);
    curl_easy_setopt(e->curl, CURLOPT_URL, url);
    curl_easy_setopt(e->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(e->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e->curl, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
    curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, curlerr);
    curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYHOST, 2L);
    curlerr[0] = '\0';
    CURLcode cc = curl_easy_perform(e->curl);
    if (cc == CURLE_OK) {
        curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, status);
    } else if (s->toobig) {
        rc = TLR_E_TOOBIG;
    } else {
        if (!curlerr[0])
            snprintf(curlerr, CURL_ERROR_SIZE, "%s", curl_easy_strerror(cc));
        rc = cc == CURLE_OPERATION_TIMEDOUT ? TLR_E_TIMEOUT : TLR_E_IO;
    }
    curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, NULL);
    for (struct curl_slist *l = hl; l; l = l->next)
        memset(l->data, 0, strlen(l->data));
    curl_slist_free_all(hl);
    tlr_sigv4_result_free(&sig);
    free(url);
    return rc;
}

static uint64_t next_rand(tlr_eks *e)
{
    e->rng ^= e->rng << 13;
    e->rng ^= e->rng >> 7;
    e->rng ^= e->rng << 17;
    return e->rng;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int tlr_eks_describe_cluster(tlr_eks *e, const char *name, tlr_eks_cluster *out,
                             tlr_aws_error *err)
{
    if (!e || !name || !name[0] || !out)
        return TLR_E_INVAL;
    tlr_buf pb;
    tlr_buf_init(&pb, 4096);
    tlr_buf_printf(&pb, "%s/clusters/", e->path);
    if (tlr_sigv4_uri_encode(&pb, name, strlen(name), false) != TLR_OK) {
        tlr_buf_free(&pb);
        return TLR_E_INVAL;
    }
    char *path = tlr_strdup(tlr_buf_str(&pb));
    tlr_buf_free(&pb);
    tlr_aws_error ae = { 0 };
    int rc = TLR_OK;
    for (int attempt = 0; attempt < e->max_attempts; attempt++) {
        tlr_aws_credentials cr = { 0 };
        char curlerr[CURL_ERROR_SIZE];
        sink s = { .toobig = false };
        long status = 0;
        memset(&ae, 0, sizeof(ae));
        if ((rc = tlr_aws_creds_get(e->creds, &cr)) != TLR_OK) {
            snprintf(ae.message, sizeof(ae.message), "no credentials: %s", tlr_strerror(rc));
            break;
        }
        tlr_buf_init(&s.body, EKS_MAX_RESPONSE);
        rc = exchange(e, path, &cr, &s, &status, curlerr);
        tlr_aws_credentials_clear(&cr);
        if (rc == TLR_OK) {
            ae.http_status = (int)status;
            if (status >= 200 && status < 300) {
                rc = tlr_eks_cluster_parse(s.body.data, s.body.len, out);
                if (rc)
                    snprintf(ae.message, sizeof(ae.message),
                             "eks DescribeCluster: malformed answer");
            } else {
                tlr_aws_json_error_parse(s.body.data, s.body.len, s.type_header, (int)status,
                                         &ae);
                if (!ae.code[0] && status == 404)
                    snprintf(ae.code, sizeof(ae.code), "ResourceNotFoundException");
                rc = ae.code[0] ? tlr_aws_error_class(ae.code, (int)status)
                     : status >= 500 ? TLR_E_UNAVAILABLE : TLR_E_REMOTE;
            }
        } else if (rc == TLR_E_TOOBIG) {
            snprintf(ae.message, sizeof(ae.message), "eks DescribeCluster: answer too large");
        } else {
            snprintf(ae.message, sizeof(ae.message), "eks DescribeCluster: %s", curlerr);
        }
        tlr_buf_free(&s.body);
        if (rc == TLR_OK)
            break;
        bool retry = rc == TLR_E_THROTTLED || rc == TLR_E_IO || rc == TLR_E_TIMEOUT ||
                     rc == TLR_E_UNAVAILABLE;
        if (rc == TLR_E_AUTH && (strcmp(ae.code, "ExpiredToken") == 0 ||
                                 strcmp(ae.code, "ExpiredTokenException") == 0))
            tlr_aws_creds_invalidate(e->creds);
        if (!retry || attempt + 1 >= e->max_attempts)
            break;
        int64_t ceiling = (int64_t)e->backoff_base_ms << (attempt < 20 ? attempt : 20);
        if (ceiling > e->backoff_cap_ms)
            ceiling = e->backoff_cap_ms;
        int64_t delay = (int64_t)(next_rand(e) % (uint64_t)(ceiling + 1));
        TLR_WARN(e->log, "aws call retried", TLR_S("service", "eks"),
                 TLR_S("action", "DescribeCluster"), TLR_S("aws_code", ae.code), TLR_ERR(rc),
                 TLR_I("http_status", ae.http_status), TLR_I("attempt", attempt + 1),
                 TLR_I("delay_ms", delay));
        sleep_ms(delay);
    }
    free(path);
    if (rc != TLR_OK && err)
        *err = ae;
    return rc;
}
