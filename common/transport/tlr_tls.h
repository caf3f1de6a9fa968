/* tlr_tls.h - mutual TLS for the nng sockets, and who is on the other end.
 *
 * A tlr_tls holds this process's certificate, key and CA (read from files)
 * as nng TLS configurations -- one for listening, one for dialling, both
 * requiring and verifying the peer's certificate (mTLS), TLS 1.2 minimum,
 * TLS 1.2 suites ECDHE + AEAD only.  The endpoints built through it
 * (tlr_tls_listen, tlr_tls_dial) are remembered; tlr_tls_reload() checks
 * the files and, when they changed, builds new configurations and puts
 * them on every live endpoint, so new connections use the new certificate
 * while established ones carry on.  A bad new file is logged and the old
 * certificate kept.
 *
 * Identity.  A peer's identity is the subject CN of its verified
 * certificate (tailor-watcher, tailor-solver, tailor-launcher,
 * tailor-disruptor, tailorctl).  tlr_tls_pipe_identity() learns it for an
 * nng pipe; the REP server, the publisher and the subscriber use it to
 * refuse peers and requests (see tls.c for how the name gets out of nng).
 */
#ifndef TLR_TLS_H
#define TLR_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <nng/nng.h>

#include "tlr_log.h"

/* The identities: subject CN of each component's certificate. */
#define TLR_ID_WATCHER   "tailor-watcher"
#define TLR_ID_SOLVER    "tailor-solver"
#define TLR_ID_LAUNCHER  "tailor-launcher"
#define TLR_ID_DISRUPTOR "tailor-disruptor"
#define TLR_ID_CTL       "tailorctl"

/* The longest identity kept (a CN is at most 64 bytes). */
#define TLR_TLS_ID_MAX 65

typedef struct tlr_tls tlr_tls;

typedef struct tlr_tls_opts {
    const char *ca_file;     /* PEM CA bundle that peers must chain to */
    const char *cert_file;   /* PEM certificate (chain) of this process */
    const char *key_file;    /* PEM private key, unencrypted */
    tlr_logger *log;         /* borrowed; NULL logs to stderr */
} tlr_tls_opts;

/* Read the three files.  On TLR_OK *out is new and owned: free with
 * tlr_tls_free() (endpoints made through it keep working; only reloading
 * stops).  Errors: TLR_E_INVAL (a file missing, unreadable, not PEM, the
 * key not matching the certificate; the reason is logged and, when err is
 * not NULL, written there). */
int  tlr_tls_create(const tlr_tls_opts *o, tlr_tls **out, char *err, size_t errlen);
void tlr_tls_free(tlr_tls *t);   /* NULL is fine */

/* The subject CN of this process's certificate (borrowed, valid until the
 * next reload; "" if none). */
const char *tlr_tls_identity(const tlr_tls *t);

/* Thread-safe.  If any of the files changed since the last load, load them
 * again and, when they are good, use them for every new connection of
 * every endpoint made through t (logging subject and notAfter).  TLR_OK:
 * nothing changed or reloaded; TLR_E_INVAL: the new files are bad (logged
 * once per change; the old certificate stays in use). */
int  tlr_tls_reload(tlr_tls *t);

/* Listen on url (tls+tcp://) with s, using t's certificate and requiring a
 * client certificate.  *l (may be NULL) is the listener.  Thread-safe.
 * Returns an nng error code (0 on success). */
int  tlr_tls_listen(tlr_tls *t, nng_socket s, const char *url, nng_listener *l);
/* Dial url (tls+tcp://) with s in the background (NNG_FLAG_NONBLOCK),
 * presenting t's certificate and verifying the server's.  Returns an nng
 * error code. */
int  tlr_tls_dial(tlr_tls *t, nng_socket s, const char *url);

/* True when url needs TLS (tls+tcp://, tls+tcp4://, tls+tcp6://). */
bool tlr_tls_url(const char *url);
/* True when url is plaintext over the network (tcp://, tcp4://, tcp6://,
 * ws://): what --insecure-transport must allow.  ipc:// and inproc:// are
 * local and are not. */
bool tlr_tls_url_plaintext(const char *url);

/* The identity of pipe p's peer, written to id (TLR_TLS_ID_MAX bytes).
 * Returns TLR_OK (a verified TLS peer), TLR_E_AUTH (TLS but not verified),
 * TLR_E_UNAVAILABLE (not a TLS pipe: ipc, inproc, tcp; id is "").  Call it
 * from an NNG_PIPE_EV_ADD_PRE callback or later while the pipe lives. */
int  tlr_tls_pipe_identity(nng_pipe p, char id[TLR_TLS_ID_MAX]);

/* allow: NULL-terminated identities, or NULL for any verified peer. */
bool tlr_tls_allowed(const char *const *allow, const char *id);
/* "a, b, c" (or "any verified peer") into buf, for messages. */
void tlr_tls_allow_str(const char *const *allow, char *buf, size_t len);

/* ---- the OpenSSL engine (tls_engine.c) -------------------------------- */

/* Make nng use tailor's OpenSSL TLS engine for TLS configurations made
 * from now on.  Idempotent and cheap; call before every
 * nng_tls_config_alloc() (nng_fini() forgets the engine). */
int  tlr_tls_engine_use(void);
/* The peer identity the engine reported last on this thread (see tls.c),
 * then forgotten: TLR_OK and id filled, or TLR_E_NOTFOUND. */
int  tlr_tls_engine_take_peer(char id[TLR_TLS_ID_MAX], bool *verified);

#endif
