/* ks_api.h - the Kubernetes REST surface over a ks_store, without sockets.
 *
 * http.c turns each HTTP request into a ks_request and writes the
 * ks_response back; the fuzz target and unit tests call ks_api_handle()
 * directly.  Watches answer with a ks_stream the transport pulls from.
 */
#ifndef KS_API_H
#define KS_API_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ks_store.h"
#include "tlr_buf.h"
#include "tlr_log.h"

/* The API server's request body limit (as kube-apiserver: 3 MiB). */
#define KS_MAX_BODY (3u << 20)

typedef struct ks_api ks_api;

typedef struct ks_api_opts {
    ks_store *store;        /* borrowed; outlives the api */
    const char *token;      /* copied; NULL or "" = no authentication */
    int bookmark_ms;        /* watch BOOKMARK interval; 0 = 60000 */
    tlr_logger *log;        /* borrowed, may be NULL */
} ks_api_opts;

/* On TLR_OK *out is new and owned: ks_api_free(). */
int  ks_api_create(const ks_api_opts *o, ks_api **out);
void ks_api_free(ks_api *a);              /* NULL is fine */

typedef struct ks_param {
    const char *key, *value;              /* decoded */
} ks_param;

typedef struct ks_request {
    const char *method;                   /* "GET" ... */
    const char *path;                     /* decoded path, no query */
    const ks_param *params;               /* query parameters */
    size_t nparams;
    const char *accept;                   /* headers, NULL when absent */
    const char *content_type;
    const char *authorization;
    const char *body;                     /* not NUL-terminated */
    size_t body_len;
    bool body_too_big;                    /* the transport cut it at KS_MAX_BODY */
} ks_request;

typedef struct ks_stream ks_stream;

typedef struct ks_response {
    int code;
    const char *content_type;             /* static */
    tlr_buf body;                         /* owned */
    ks_stream *stream;                    /* owned; non-NULL for a watch */
} ks_response;

/* Answer one request (every pointer in r borrowed).  Never fails: errors
 * are Status bodies.  Free out with ks_response_free(). */
void ks_api_handle(ks_api *a, const ks_request *r, ks_response *out);
void ks_response_free(ks_response *res);

/* Pull the next bytes of a watch into buf (up to max).  Blocks until
 * there is something to send; returns the byte count, or -1 at the end
 * of the stream (timeoutSeconds, store closed, ERROR sent). */
ssize_t ks_stream_read(ks_stream *w, char *buf, size_t max);
/* Like ks_stream_read but waits at most wait_ms; 0 when nothing came. */
ssize_t ks_stream_read_timed(ks_stream *w, char *buf, size_t max, int wait_ms);
void ks_stream_free(ks_stream *w);        /* NULL is fine */

/* Split "a=b&c=%20d" into decoded params.  On TLR_OK *out is a new array
 * of *n entries whose strings are owned with it: ks_params_free(*out, *n).
 * TLR_E_PARSE on a malformed escape; TLR_E_TOOBIG past 256 params. */
int  ks_query_parse(const char *q, ks_param **out, size_t *n);
void ks_params_free(ks_param *p, size_t n);

#endif
