/* transport_peers.h - count a socket's connections and know who they are
 * (transport-internal).
 *
 * nng calls the pipe callbacks on its own threads, so the count is atomic.
 * ADD_PRE and REM_POST are counted because nng 1.5.2 runs exactly one
 * REM_POST for every pipe that saw ADD_PRE (ADD_POST is skipped for a pipe
 * closed while being added), so the count never drifts.  nng_close() waits
 * for the callbacks, so a tlr_peers may live in the socket's owner.
 *
 * Identity (tlr_peers_guard).  nng allows one callback per event per
 * socket, so the same ADD_PRE callback also learns a TLS pipe's peer
 * identity (tlr_tls_pipe_identity), closes the pipe when the peer is not
 * verified or not in the allow list -- before the protocol ever sees it --
 * and records pipe id -> identity for tlr_peers_identity().  Pipes that are
 * not TLS (ipc, inproc, tcp with --insecure-transport) carry no identity
 * and are let through: refusing plaintext is the service's start-up check.
 *
 * Age (tlr_peers_track_age).  Every pipe's arrival time is kept too, so a
 * client can close its oldest connection (tlr_peers_oldest): behind a
 * Kubernetes Service, a redial is how a client reaches replicas added
 * since it connected.  Only a connection that has carried a reply counts
 * (tlr_peers_mark_used): closing one that never served a call spreads no
 * load, and with several connections taken in turn, an age limit shorter
 * than a full turn would otherwise close every new connection -- the one
 * that may reach a new replica -- before its first call.
 */
#ifndef TLR_TRANSPORT_PEERS_H
#define TLR_TRANSPORT_PEERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "tlr_log.h"
#include "tlr_tls.h"

typedef struct tlr_peer_id {
    nng_pipe pipe;
    int64_t added_ms;             /* tlr_mono_ms() at ADD_PRE */
    bool used;                    /* has carried a reply (tlr_peers_mark_used) */
    char id[TLR_TLS_ID_MAX];      /* "" when not TLS */
} tlr_peer_id;

typedef struct tlr_peers {
    atomic_size_t n;
    atomic_size_t refused;        /* pipes closed by the guard */
    /* Set by tlr_peers_guard, read-only afterwards. */
    bool guard;
    bool track_age;
    const char *const *allow;     /* borrowed; NULL: any verified peer */
    tlr_logger *log;              /* borrowed */
    char what[160];               /* "rep tls+tcp://..." for logs */
    pthread_mutex_t mu;           /* guards ids */
    tlr_peer_id *ids;
    size_t nids, cap;
} tlr_peers;

/* Before tlr_peers_watch: identify TLS pipes and refuse peers not in
 * allow (borrowed, NULL-terminated, must outlive the socket; NULL = any
 * verified peer).  what (copied) names the socket in log lines. */
void   tlr_peers_guard(tlr_peers *p, const char *const *allow, tlr_logger *log,
                       const char *what);
/* Before tlr_peers_watch: keep every pipe's arrival time. */
void   tlr_peers_track_age(tlr_peers *p);
/* Start counting s's pipes into p (borrowed; must outlive the socket).
 * Call before dialling or listening.  TLR_OK or TLR_E_IO. */
int    tlr_peers_watch(tlr_peers *p, nng_socket s);
/* After nng_close(): free the identity table.  Safe on a zeroed p. */
void   tlr_peers_fini(tlr_peers *p);
size_t tlr_peers_count(const tlr_peers *p);
/* Poll until at least n pipes: TLR_OK or TLR_E_TIMEOUT. */
int    tlr_peers_wait(const tlr_peers *p, size_t n, int timeout_ms);
/* The identity of pipe's peer into id: TLR_OK, or TLR_E_NOTFOUND (not a
 * TLS pipe, or already gone). */
int    tlr_peers_identity(tlr_peers *p, nng_pipe pipe, char id[TLR_TLS_ID_MAX]);
/* Note that pipe carried a reply (a no-op for a pipe not remembered). */
void   tlr_peers_mark_used(tlr_peers *p, nng_pipe pipe);
/* Of the pipes that have carried a reply, the one that arrived first, if
 * it arrived before added_before_ms (tlr_mono_ms clock): TLR_OK, or
 * TLR_E_NOTFOUND.  Needs track_age or a guard (only TLS pipes are
 * remembered then). */
int    tlr_peers_oldest(tlr_peers *p, int64_t added_before_ms, nng_pipe *out);

#endif
