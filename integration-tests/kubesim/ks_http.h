/* ks_http.h - the HTTP(S) transport in front of ks_api (libmicrohttpd).
 *
 * One thread per connection: a watch is a chunked response whose reader
 * blocks in ks_stream_read, so thousands of idle watchers cost threads,
 * not CPU.  Bodies are collected up to KS_MAX_BODY; beyond that the rest
 * is discarded and the request answered 413.
 */
#ifndef KS_HTTP_H
#define KS_HTTP_H

#include "ks_api.h"
#include "tlr_log.h"

typedef struct ks_http ks_http;

/* Listen on "host:port" (port 0 = any free port).  cert_pem/key_pem:
 * borrowed PEM text for HTTPS, both NULL for plain HTTP.  api borrowed,
 * must outlive the server.  On TLR_OK *out is new and owned
 * (ks_http_stop).  TLR_E_INVAL: bad address; TLR_E_UNIMPLEMENTED: TLS
 * asked for but libmicrohttpd has none; TLR_E_IO: cannot listen. */
int  ks_http_start(ks_api *api, const char *listen, const char *cert_pem,
                   const char *key_pem, tlr_logger *lg, ks_http **out);
int  ks_http_port(const ks_http *h);   /* the bound port */
void ks_http_stop(ks_http *h);         /* NULL is fine; joins every connection */

#endif
