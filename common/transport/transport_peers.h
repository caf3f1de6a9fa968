/* transport_peers.h - count a socket's connections (transport-internal).
 *
 * nng calls the pipe callbacks on its own threads, so the count is atomic.
 * ADD_PRE and REM_POST are counted because nng 1.5.2 runs exactly one
 * REM_POST for every pipe that saw ADD_PRE (ADD_POST is skipped for a pipe
 * closed while being added), so the count never drifts.  nng_close() waits
 * for the callbacks, so a tlr_peers may live in the socket's owner.
 */
#ifndef TLR_TRANSPORT_PEERS_H
#define TLR_TRANSPORT_PEERS_H

#include <stdatomic.h>
#include <stddef.h>

#include <nng/nng.h>

typedef struct tlr_peers {
    atomic_size_t n;
} tlr_peers;

/* Start counting s's pipes into p (borrowed; must outlive the socket).
 * Call before dialling or listening.  TLR_OK or TLR_E_IO. */
int    tlr_peers_watch(tlr_peers *p, nng_socket s);
size_t tlr_peers_count(const tlr_peers *p);
/* Poll until at least n pipes: TLR_OK or TLR_E_TIMEOUT. */
int    tlr_peers_wait(const tlr_peers *p, size_t n, int timeout_ms);

#endif
