/* http.c - /healthz, /readyz, /metrics (and extra routes) on nng's HTTP server.
 *
 * One nng handler is registered for the whole tree ("/", every method) and
 * this file routes by itself.  That keeps the answers plain text and under
 * our control (nng's own 404/405 pages are HTML and carry no Allow header),
 * and lets routes be added while the server runs.
 *
 * Two properties of nng 1.5.2 this file depends on:
 *  - nng_http_server_hold() shares one server among all holders of the
 *    same host and port in a process.  A second tlr_http on an address
 *    this process already serves would silently join the first; it is
 *    refused instead because adding our catch-all handler to a server that
 *    already has one fails with NNG_EADDRINUSE, which we report as the
 *    address being in use (TLR_E_IO), as the kernel would for another
 *    process.
 *  - nng_http_server_stop() closes every connection and waits until they
 *    are reaped, and reaping stops each connection's aios, so no handler
 *    callback is running or will run after it returns.  That is what makes
 *    freeing the tlr_http (and the caller freeing the registry) safe right
 *    after tlr_http_stop().  nng_http_server_stop() must be called only
 *    after a successful start: it decrements a start count.
 * Known nng 1.5.2 flaw: a request whose dispatch races the close in
 * nng_http_server_stop() keeps a reference on our handler, so nng never
 * frees it (about 240 bytes).  It happens at most once per stop, i.e. at
 * process exit, so we live with it; tests avoid the race on purpose.
 */
#include "tlr_http.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"

typedef struct route {
    char *path;                 /* owned */
    tlr_http_handler_fn fn;
    void *arg;                  /* borrowed */
} route;

struct tlr_http {
    nng_http_server *srv;       /* one hold reference, owned */
    bool started;               /* nng_http_server_start succeeded */
    int port;
    tlr_metrics *metrics;       /* borrowed */
    tlr_logger *log;            /* borrowed */

    pthread_mutex_t mu;         /* guards everything below */
    bool ready;
    char *reason;               /* owned; NULL when ready */
    route *routes;
    size_t nroutes, cap;
};

static const char *const builtin_paths[] = {
    "/healthz", "/livez", "/readyz", "/metrics",
};

static bool is_builtin(const char *path)
{
    for (size_t i = 0; i < sizeof(builtin_paths) / sizeof(builtin_paths[0]); i++)
        if (strcmp(path, builtin_paths[i]) == 0)
            return true;
    return false;
}

/* ---- listen address ---- */

/* "host:port" -> "http://host:port" in url (len bytes).  An empty host
 * means every IPv4 interface.  TLR_E_INVAL when malformed. */
static int listen_url(const char *listen, char *url, size_t len)
{
    if (!listen)
        return TLR_E_INVAL;
    const char *colon = strrchr(listen, ':');
    if (!colon || colon[1] == '\0' || strlen(colon + 1) > 5)
        return TLR_E_INVAL;
    long port = 0;
    for (const char *p = colon + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return TLR_E_INVAL;
        port = port * 10 + (*p - '0');
    }
    if (port > 65535)
        return TLR_E_INVAL;
    size_t hostlen = (size_t)(colon - listen);
    const char *host = listen;
    if (hostlen == 0) {
        host = "0.0.0.0";
        hostlen = strlen(host);
    }
    /* An IPv6 literal must be bracketed, else its colons are ambiguous. */
    if (memchr(host, ':', hostlen) && host[0] != '[')
        return TLR_E_INVAL;
    for (size_t i = 0; i < hostlen; i++)
        if (host[i] == '/' || host[i] == '@' || host[i] == '?' || host[i] == '#' ||
            host[i] == ' ')
            return TLR_E_INVAL;
    int n = snprintf(url, len, "http://%.*s:%ld", (int)hostlen, host, port);
    if (n < 0 || (size_t)n >= len)
        return TLR_E_INVAL;
    return TLR_OK;
}

static int bound_port(nng_http_server *srv)
{
    nng_sockaddr sa;
    if (nng_http_server_get_addr(srv, &sa) != 0)
        return 0;
    if (sa.s_family == NNG_AF_INET)
        return ntohs(sa.s_in.sa_port);
    if (sa.s_family == NNG_AF_INET6)
        return ntohs(sa.s_in6.sa_port);
    return 0;
}

/* ---- request handling ---- */

static int status_for(int rc)
{
    switch (rc) {
    case TLR_E_INVAL:
    case TLR_E_PARSE:
        return 400;
    case TLR_E_NOTFOUND:
        return 404;
    case TLR_E_TOOBIG:
        return 413;
    case TLR_E_NOTREADY:
    case TLR_E_UNAVAILABLE:
    case TLR_E_BUSY:
        return 503;
    default:
        return 500;
    }
}

static void set_text(tlr_http_response *res, int status, const char *text)
{
    res->status = status;
    res->content_type = TEXT_PLAIN;
    tlr_buf_reset(&res->body);
    tlr_buf_adds(&res->body, text);
}

static void serve_builtin(tlr_http *h, const char *path, tlr_http_response *res)
{
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0) {
        set_text(res, 200, "ok");
    } else if (strcmp(path, "/readyz") == 0) {
        pthread_mutex_lock(&h->mu);
        if (h->ready)
            set_text(res, 200, "ok");
        else
            set_text(res, 503, h->reason && *h->reason ? h->reason : "not ready");
        pthread_mutex_unlock(&h->mu);
    } else if (!h->metrics) {
        set_text(res, 404, "no metrics registry");
    } else {
        res->status = 200;
        res->content_type = TLR_METRICS_CONTENT_TYPE;
        int rc = tlr_metrics_render(h->metrics, &res->body);
        if (rc) {
            TLR_ERROR(h->log, "cannot render metrics", TLR_ERR(rc));
            set_text(res, 500, "metrics too large");
        }
    }
}

static void serve(tlr_http *h, const tlr_http_request *rq, tlr_http_response *res)
{
    if (is_builtin(rq->path)) {
        if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0) {
            set_text(res, 405, "method not allowed");
            return;
        }
        serve_builtin(h, rq->path, res);
        return;
    }

    tlr_http_handler_fn fn = NULL;
    void *arg = NULL;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nroutes; i++) {
        if (strcmp(h->routes[i].path, rq->path) == 0) {
            fn = h->routes[i].fn;
            arg = h->routes[i].arg;
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    if (!fn) {
        set_text(res, 404, "not found");
        return;
    }
    int rc = fn(arg, rq, res);
    if (rc) {
        set_text(res, status_for(rc), tlr_strerror(rc));
    } else if (res->status < 100 || res->status > 599 || !res->content_type) {
        TLR_ERROR(h->log, "http handler returned a bad response", TLR_S("path", rq->path),
                  TLR_I("status", res->status));
        set_text(res, 500, "internal error");
    }
}

/* nng's handler callback: runs on an nng thread for every request. */
static void on_request(nng_aio *aio)
{
    nng_http_req *req = nng_aio_get_input(aio, 0);
    nng_http_handler *hd = nng_aio_get_input(aio, 1);
    tlr_http *h = nng_http_handler_get_data(hd);
    nng_http_res *out = NULL;
    char *path = NULL;
    int rv;

    /* Split the raw request target; an absolute-form or "*" target simply
     * matches no route. */
    const char *uri = nng_http_req_get_uri(req);
    const char *q = strchr(uri, '?');
    path = tlr_strndup(uri, q ? (size_t)(q - uri) : strlen(uri));
    void *body = NULL;
    size_t body_len = 0;
    nng_http_req_get_data(req, &body, &body_len);
    tlr_http_request rq = {
        .method = nng_http_req_get_method(req),
        .path = path,
        .query = q ? q + 1 : "",
        .body = body,
        .body_len = body_len,
    };
    tlr_http_response res = { .status = 200, .content_type = TEXT_PLAIN };
    tlr_buf_init(&res.body, TLR_HTTP_MAX_RESPONSE);

    serve(h, &rq, &res);

    if ((rv = nng_http_res_alloc(&out)) != 0 ||
        (rv = nng_http_res_set_status(out, (uint16_t)res.status)) != 0 ||
        (rv = nng_http_res_set_header(out, "Content-Type", res.content_type)) != 0)
        goto out;
    if (res.status == 405 && (rv = nng_http_res_set_header(out, "Allow", "GET, HEAD")) != 0)
        goto out;
    /* nng cannot copy zero bytes (its allocator returns NULL for 0). */
    if (res.body.len > 0)
        rv = nng_http_res_copy_data(out, res.body.data, res.body.len);
    else
        rv = nng_http_res_set_data(out, NULL, 0);
    if (rv)
        goto out;
    nng_aio_set_output(aio, 0, out);
    out = NULL;     /* handed over to nng */
out:
    if (out)
        nng_http_res_free(out);
    if (rv)
        TLR_ERROR(h->log, "cannot build http response", TLR_S("path", path),
                  TLR_S("cause", nng_strerror(rv)));
    tlr_buf_free(&res.body);
    free(path);
    nng_aio_finish(aio, rv);    /* an error makes nng drop the connection */
}

/* ---- public ---- */

static void http_free(tlr_http *h)
{
    for (size_t i = 0; i < h->nroutes; i++)
        free(h->routes[i].path);
    free(h->routes);
    free(h->reason);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

int tlr_http_start(const tlr_http_opts *o, tlr_http **out)
{
    char urlstr[300];
    nng_url *url = NULL;
    nng_http_handler *hd = NULL;
    tlr_http *h = NULL;
    const char *what = NULL;
    int nrv = 0;
    int rc = listen_url(o->listen, urlstr, sizeof(urlstr));
    if (rc) {
        TLR_ERROR(o->log, "malformed http listen address (want host:port)",
                  TLR_S("listen", o->listen ? o->listen : "(null)"));
        return rc;
    }

    h = tlr_calloc(1, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    h->metrics = o->metrics;
    h->log = o->log;
    h->reason = tlr_strdup("starting");

    if ((nrv = nng_url_parse(&url, urlstr)) != 0) {
        what = "cannot parse http listen address";
        rc = TLR_E_INVAL;
        goto out;
    }
    if ((nrv = nng_http_server_hold(&h->srv, url)) != 0) {
        what = "cannot create http server";
        rc = nrv == NNG_EADDRINVAL ? TLR_E_INVAL : TLR_E_IO;
        goto out;
    }
    if ((nrv = nng_http_handler_alloc(&hd, "/", on_request)) != 0 ||
        (nrv = nng_http_handler_set_method(hd, NULL)) != 0 ||
        (nrv = nng_http_handler_set_tree(hd)) != 0 ||
        (nrv = nng_http_handler_collect_body(hd, true, TLR_HTTP_MAX_BODY)) != 0 ||
        (nrv = nng_http_handler_set_data(hd, h, NULL)) != 0) {
        what = "cannot create http handler";
        rc = TLR_E_INTERNAL;
        goto out;
    }
    if ((nrv = nng_http_server_add_handler(h->srv, hd)) != 0) {
        /* Another tlr_http in this process already serves this address. */
        what = "cannot listen for http: address in use";
        rc = TLR_E_IO;
        goto out;
    }
    hd = NULL;      /* the server owns it now */
    if ((nrv = nng_http_server_start(h->srv)) != 0) {
        what = "cannot listen for http";
        rc = TLR_E_IO;
        goto out;
    }
    h->started = true;
    h->port = bound_port(h->srv);
    TLR_INFO(h->log, "http listening", TLR_S("listen", o->listen), TLR_I("port", h->port));
    *out = h;
    h = NULL;
out:
    if (what)
        TLR_ERROR(o->log, what, TLR_S("listen", o->listen), TLR_S("cause", nng_strerror(nrv)),
                  TLR_ERR(rc));
    if (hd)
        nng_http_handler_free(hd);
    if (h) {
        if (h->srv)
            nng_http_server_release(h->srv);
        http_free(h);
    }
    nng_url_free(url);
    return rc;
}

void tlr_http_stop(tlr_http *h)
{
    if (!h)
        return;
    if (h->started)
        nng_http_server_stop(h->srv);   /* waits: no callback runs after this */
    nng_http_server_release(h->srv);
    http_free(h);
}

int tlr_http_port(const tlr_http *h)
{
    return h->port;
}

void tlr_http_set_ready(tlr_http *h, bool ready, const char *reason)
{
    char *copy = ready ? NULL : tlr_strdup(reason ? reason : "not ready");
    pthread_mutex_lock(&h->mu);
    char *old = h->reason;
    h->ready = ready;
    h->reason = copy;
    pthread_mutex_unlock(&h->mu);
    free(old);
}

int tlr_http_add_handler(tlr_http *h, const char *path, tlr_http_handler_fn fn, void *arg)
{
    if (!path || path[0] != '/' || strchr(path, '?') || !fn)
        return TLR_E_INVAL;
    if (is_builtin(path))
        return TLR_E_EXISTS;
    int rc = TLR_OK;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nroutes; i++) {
        if (strcmp(h->routes[i].path, path) == 0) {
            rc = TLR_E_EXISTS;
            goto out;
        }
    }
    TLR_GROW(h->routes, h->cap, h->nroutes + 1);
    h->routes[h->nroutes++] = (route){ .path = tlr_strdup(path), .fn = fn, .arg = arg };
out:
    pthread_mutex_unlock(&h->mu);
    return rc;
}
