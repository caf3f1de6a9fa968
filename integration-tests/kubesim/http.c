/* http.c - libmicrohttpd front end for ks_api (see ks_http.h). */
#include <arpa/inet.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "ks_http.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

struct ks_http {
    struct MHD_Daemon *d;
    ks_api *api;
    tlr_logger *log;
    int port;
};

typedef struct conn_ctx {
    tlr_buf body;
    bool too_big;
} conn_ctx;

typedef struct param_vec {
    ks_param *p;
    size_t n;
    bool overflow;
} param_vec;

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    param_vec *v = cls;
    if (v->n == 256) {
        v->overflow = true;
        return MHD_NO;
    }
    v->p = tlr_realloc(v->p, (v->n + 1) * sizeof(ks_param));
    v->p[v->n++] = (ks_param){ key, value ? value : "" };
    return MHD_YES;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    ssize_t n = ks_stream_read(cls, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void stream_free(void *cls)
{
    ks_stream_free(cls);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    ks_http *h = cls;
    conn_ctx *ctx = *con_cls;
    if (!ctx) {
        ctx = tlr_calloc(1, sizeof(*ctx));
        tlr_buf_init(&ctx->body, KS_MAX_BODY);
        *con_cls = ctx;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!ctx->too_big && tlr_buf_add(&ctx->body, upload, *upload_size))
            ctx->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
    param_vec pv = { 0 };
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_param, &pv);
    ks_request r = {
        .method = method,
        .path = url,
        .params = pv.p,
        .nparams = pv.n,
        .accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept"),
        .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"),
        .authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
        .body = ctx->body.data,
        .body_len = ctx->body.len,
        .body_too_big = ctx->too_big,
    };
    ks_response res;
    ks_api_handle(h->api, &r, &res);
    free(pv.p);
    struct MHD_Response *resp;
    if (res.stream) {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader,
                                                 res.stream, stream_free);
        res.stream = NULL;
    } else {
        size_t len = res.body.len;
        char *data = tlr_buf_take(&res.body);
        resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    }
    ks_response_free(&res);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", res.content_type);
    MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)res.code, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    conn_ctx *ctx = *con_cls;
    if (ctx) {
        tlr_buf_free(&ctx->body);
        free(ctx);
        *con_cls = NULL;
    }
}

/* libmicrohttpd's own messages (a client that went away mid-watch ...)
 * become debug lines in the JSON log. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    ks_http *h = cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = 0;
    TLR_DEBUG(h->log, "http", TLR_S("detail", msg));
}

static int parse_listen(const char *listen, struct sockaddr_in *sa)
{
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    if (!colon)
        return TLR_E_INVAL;
    char host[64];
    size_t hl = (size_t)(colon - listen);
    if (hl >= sizeof(host))
        return TLR_E_INVAL;
    memcpy(host, listen, hl);
    host[hl] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || end == colon + 1)
        return TLR_E_INVAL;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!hl || !strcmp(host, "localhost"))
        snprintf(host, sizeof(host), "%s", hl ? "127.0.0.1" : "0.0.0.0");
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return TLR_E_INVAL;
    return TLR_OK;
}

int ks_http_start(ks_api *api, const char *listen, const char *cert_pem, const char *key_pem,
                  tlr_logger *lg, ks_http **out)
{
    struct sockaddr_in sa;
    if (!api || !out || parse_listen(listen, &sa))
        return TLR_E_INVAL;
    bool tls = cert_pem && key_pem;
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return TLR_E_UNIMPLEMENTED;
    ks_http *h = tlr_calloc(1, sizeof(*h));
    h->api = api;
    h->log = lg;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_ERROR_LOG;
    if (tls)
        flags |= MHD_USE_TLS;
    if (tls)
        h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h,
                                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, h,
                                MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0,
                                MHD_OPTION_HTTPS_MEM_KEY, key_pem,
                                MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
                                MHD_OPTION_END);
    else
        h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h,
                                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, h,
                                MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0,
                                MHD_OPTION_END);
    if (!h->d) {
        free(h);
        return TLR_E_IO;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : ntohs(sa.sin_port);
    *out = h;
    return TLR_OK;
}

int ks_http_port(const ks_http *h)
{
    return h->port;
}

void ks_http_stop(ks_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
