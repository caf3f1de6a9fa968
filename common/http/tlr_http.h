/* tlr_http.h - the small HTTP endpoint every service runs.
 *
 *   GET /healthz, /livez  200 "ok" while the process runs (liveness)
 *   GET /readyz           200 "ok" when ready, else 503 and the reason
 *   GET /metrics          the tlr_metrics registry, text format 0.0.4
 *   other paths           404; a known path with another method: 405
 *   (HEAD is answered like GET, without the body)
 *
 *   tlr_http *h;
 *   int rc = tlr_http_start(&(tlr_http_opts){ .listen = "0.0.0.0:8101",
 *                                             .metrics = m, .log = lg }, &h);
 *   tlr_http_set_ready(h, false, "waiting for first cache sync");
 *   ...                                 // service thread, once synced:
 *   tlr_http_set_ready(h, true, NULL);
 *   ...
 *   tlr_http_stop(h);
 *
 * Built on nng's HTTP server: requests are answered on nng's own threads,
 * never on the service's event loop, so a busy loop does not fail its
 * liveness probe and a scrape never waits for a pass to finish.  The
 * consequence is that everything the handlers touch is thread safe: the
 * metrics registry (atomics), readiness (a mutex), and any extra handler
 * added with tlr_http_add_handler() - which must be written for that.
 */
#ifndef TLR_HTTP_H
#define TLR_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "tlr_buf.h"
#include "tlr_log.h"
#include "tlr_metrics.h"

typedef struct tlr_http tlr_http;

typedef struct tlr_http_opts {
    /* "127.0.0.1:8101", "0.0.0.0:8101", ":8101" (all IPv4 interfaces) or
     * "[::1]:8101"; port 0 picks a free port (see tlr_http_port()).
     * Borrowed. */
    const char  *listen;
    tlr_metrics *metrics;   /* borrowed, may be NULL (then /metrics is 404);
                             * must outlive the server */
    tlr_logger  *log;       /* borrowed, may be NULL; must outlive the server */
} tlr_http_opts;

/* Bind, listen and start serving.  On TLR_OK *out is new and owned by the
 * caller: stop it with tlr_http_stop().  The server starts not ready, with
 * the reason "starting".  Errors: TLR_E_INVAL for a malformed listen
 * address; TLR_E_IO when the address cannot be bound (in use, not local,
 * no permission), logged with the address. */
int  tlr_http_start(const tlr_http_opts *o, tlr_http **out);

/* Stop serving and free h.  Waits for requests in flight to finish, so
 * once it returns no handler runs any more and the registry, the logger
 * and handler args may be freed.  NULL is fine. */
void tlr_http_stop(tlr_http *h);

/* The TCP port actually bound (useful with port 0). */
int  tlr_http_port(const tlr_http *h);

/* Set readiness; any thread.  reason is borrowed and copied (NULL is
 * fine); it is the 503 body while not ready. */
void tlr_http_set_ready(tlr_http *h, bool ready, const char *reason);

/* ---- extra endpoints (e.g. /debug/explain) ---- */

typedef struct tlr_http_request {
    const char *method;     /* "GET", "POST", ... */
    const char *path;       /* "/debug/explain", without the query */
    const char *query;      /* the raw text after '?', "" if none */
    const void *body;       /* the request body, body_len bytes; may be NULL */
    size_t      body_len;
} tlr_http_request;

typedef struct tlr_http_response {
    int         status;        /* preset to 200 */
    /* Preset to "text/plain; charset=utf-8".  Borrowed: point it at a
     * string literal or something else that outlives the call. */
    const char *content_type;
    tlr_buf     body;          /* preset empty, ceiling TLR_HTTP_MAX_RESPONSE */
} tlr_http_response;

/* Largest request body accepted (larger gets 400) and response produced. */
#define TLR_HTTP_MAX_BODY     (1u << 20)
#define TLR_HTTP_MAX_RESPONSE (64u << 20)

/* Fill res for req.  Runs on an nng thread, concurrently with the service
 * thread and possibly with itself: make it thread safe.  req and res are
 * borrowed for the call.  Return TLR_OK to send res; any other code
 * discards res and answers with a status derived from it (INVAL/PARSE 400,
 * NOTFOUND 404, TOOBIG 413, NOTREADY/UNAVAILABLE/BUSY 503, else 500) and
 * tlr_strerror() as the body. */
typedef int (*tlr_http_handler_fn)(void *arg, const tlr_http_request *req,
                                   tlr_http_response *res);

/* Route requests for exactly path (all methods) to fn(arg, ...).  Any
 * thread, any time; usually right after tlr_http_start().  path and arg
 * are borrowed; path is copied, arg must outlive the server.  Errors:
 * TLR_E_INVAL when path does not start with '/' or holds '?';
 * TLR_E_EXISTS when path is built in or already added. */
int  tlr_http_add_handler(tlr_http *h, const char *path,
                          tlr_http_handler_fn fn, void *arg);

#endif
