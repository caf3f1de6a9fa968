/* peers.c - count a socket's connections, know who they are (see
 * transport_peers.h). */
#include "transport_peers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"

static void remember(tlr_peers *p, nng_pipe pipe, const char *id)
{
    pthread_mutex_lock(&p->mu);
    if (p->nids == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->ids = tlr_realloc(p->ids, p->cap * sizeof(*p->ids));
    }
    tlr_peer_id *e = &p->ids[p->nids++];
    e->pipe = pipe;
    e->added_ms = tlr_mono_ms();
    e->used = false;
    snprintf(e->id, sizeof(e->id), "%s", id);
    pthread_mutex_unlock(&p->mu);
}

/* ADD_PRE of a guarded socket: false when the pipe was refused (closed). */
static bool admit(tlr_peers *p, nng_pipe pipe)
{
    char id[TLR_TLS_ID_MAX];
    int rc = tlr_tls_pipe_identity(pipe, id);
    if (rc == TLR_E_UNAVAILABLE) {
        if (p->track_age)   /* not TLS: nothing to check */
            remember(p, pipe, "");
        return true;
    }
    if (rc == TLR_OK && tlr_tls_allowed(p->allow, id)) {
        remember(p, pipe, id);
        return true;
    }
    char allowed[256];
    tlr_tls_allow_str(p->allow, allowed, sizeof(allowed));
    atomic_fetch_add(&p->refused, 1);
    TLR_WARN(p->log, "peer refused", TLR_S("socket", p->what),
             TLR_S("identity", rc == TLR_OK ? id : "(unverified)"), TLR_S("allowed", allowed));
    nng_pipe_close(pipe);
    return false;
}

static void forget(tlr_peers *p, nng_pipe pipe)
{
    int pid = nng_pipe_id(pipe);
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nids; i++) {
        if (nng_pipe_id(p->ids[i].pipe) == pid) {
            p->ids[i] = p->ids[--p->nids];
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
}

static void on_pipe(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
    tlr_peers *p = arg;
    if (ev == NNG_PIPE_EV_ADD_PRE) {
        /* Counted even when refused: REM_POST follows either way. */
        atomic_fetch_add(&p->n, 1);
        if (p->guard)
            admit(p, pipe);
        else if (p->track_age)
            remember(p, pipe, "");
    } else if (ev == NNG_PIPE_EV_REM_POST) {
        if (p->guard || p->track_age)
            forget(p, pipe);
        atomic_fetch_sub(&p->n, 1);
    }
}

void tlr_peers_guard(tlr_peers *p, const char *const *allow, tlr_logger *log, const char *what)
{
    p->guard = true;
    p->allow = allow;
    p->log = log;
    snprintf(p->what, sizeof(p->what), "%s", what ? what : "");
}

void tlr_peers_track_age(tlr_peers *p)
{
    p->track_age = true;
}

int tlr_peers_watch(tlr_peers *p, nng_socket s)
{
    atomic_init(&p->n, 0);
    atomic_init(&p->refused, 0);
    pthread_mutex_init(&p->mu, NULL);
    p->ids = NULL;
    p->nids = p->cap = 0;
    if (nng_pipe_notify(s, NNG_PIPE_EV_ADD_PRE, on_pipe, p) != 0 ||
        nng_pipe_notify(s, NNG_PIPE_EV_REM_POST, on_pipe, p) != 0)
        return TLR_E_IO;
    return TLR_OK;
}

void tlr_peers_fini(tlr_peers *p)
{
    free(p->ids);
    p->ids = NULL;
    p->nids = p->cap = 0;
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

int tlr_peers_identity(tlr_peers *p, nng_pipe pipe, char id[TLR_TLS_ID_MAX])
{
    int pid = nng_pipe_id(pipe);
    int rc = TLR_E_NOTFOUND;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nids; i++) {
        if (nng_pipe_id(p->ids[i].pipe) == pid) {
            if (p->ids[i].id[0]) {   /* "" : a pipe kept only for its age */
                memcpy(id, p->ids[i].id, TLR_TLS_ID_MAX);
                rc = TLR_OK;
            }
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void tlr_peers_mark_used(tlr_peers *p, nng_pipe pipe)
{
    int pid = nng_pipe_id(pipe);
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nids; i++) {
        if (nng_pipe_id(p->ids[i].pipe) == pid) {
            p->ids[i].used = true;
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
}

int tlr_peers_oldest(tlr_peers *p, int64_t added_before_ms, nng_pipe *out)
{
    int rc = TLR_E_NOTFOUND;
    int64_t best = added_before_ms;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nids; i++) {
        if (p->ids[i].used && p->ids[i].added_ms < best) {
            best = p->ids[i].added_ms;
            *out = p->ids[i].pipe;
            rc = TLR_OK;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}
