/* peers.c - count a socket's connections (see transport_peers.h). */
#include "transport_peers.h"

#include <time.h>

#include "tlr_err.h"
#include "tlr_time.h"

static void on_pipe(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
    tlr_peers *p = arg;
    if (ev == NNG_PIPE_EV_ADD_PRE)
        atomic_fetch_add(&p->n, 1);
    else if (ev == NNG_PIPE_EV_REM_POST)
        atomic_fetch_sub(&p->n, 1);
}

int tlr_peers_watch(tlr_peers *p, nng_socket s)
{
    atomic_init(&p->n, 0);
    if (nng_pipe_notify(s, NNG_PIPE_EV_ADD_PRE, on_pipe, p) != 0 ||
        nng_pipe_notify(s, NNG_PIPE_EV_REM_POST, on_pipe, p) != 0)
        return TLR_E_IO;
    return TLR_OK;
}

size_t tlr_peers_count(const tlr_peers *p)
{
    return atomic_load(&p->n);
}

int tlr_peers_wait(const tlr_peers *p, size_t n, int timeout_ms)
{
    int64_t deadline = tlr_mono_ms() + timeout_ms;
    const struct timespec tick = { .tv_sec = 0, .tv_nsec = 5 * 1000 * 1000 };
    while (tlr_peers_count(p) < n) {
        if (tlr_mono_ms() >= deadline)
            return TLR_E_TIMEOUT;
        nanosleep(&tick, NULL);
    }
    return TLR_OK;
}
