/* informer.c - list + watch one resource kind for a tlr_loop service.
 *
 * Design.  The verbs in client.c block, and a watch blocks for minutes, so
 * each informer owns one background thread that does nothing but talk to
 * the API server:
 *
 *     relist:  RELIST_START, list all pages (ADDED per item), RELIST_DONE
 *     watch:   from the list's resourceVersion, with bookmarks; every
 *              event's resourceVersion becomes the resume point
 *     the server closes the watch (timeoutSeconds)  -> watch again from rv
 *     410 Gone, or an ERROR event with code 410      -> relist
 *     any other failure                              -> jittered backoff
 *                                                       (doubling, capped),
 *                                                       then watch from rv
 *
 * The thread never touches the caller's state.  It appends events (type +
 * a reference to the json object) to a bounded FIFO and writes to an
 * eventfd; the eventfd is registered with the caller's tlr_loop, so the
 * handler runs on the loop thread, in order, and the service needs no
 * locks.  When the FIFO is full the thread waits: a slow loop slows the
 * watch down (TCP pushes back to the API server) instead of growing memory
 * without bound.  Only whole events are queued; a list is never held - it
 * arrives a page (page_limit items) at a time and each item is queued as
 * it is parsed.
 *
 * Relist semantics are handed to the handler: between RELIST_START and
 * RELIST_DONE it sees every object that exists; anything it holds that it
 * did not see in between was deleted while we were not watching.
 *
 * Stopping: tlr_kube_informer_free sets a flag the curl transfer polls
 * (through the progress callback, about once a second) and wakes a
 * producer waiting on a full queue, joins the thread, then drops whatever
 * is still queued.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "kube_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"
#include "tlr_log.h"
#include "tlr_time.h"

typedef struct qitem {
    tlr_kube_event_type type;
    json_object *obj;          /* owned reference; NULL for RELIST_* */
} qitem;

struct tlr_kube_informer {
    tlr_kube *kc;
    tlr_loop *loop;
    tlr_kube_informer_opts o;
    char *ns, *lsel, *fsel;    /* owned copies of the opts' strings */
    int efd;
    pthread_t thread;
    bool thread_started;
    atomic_bool stop;
    atomic_bool synced;
    atomic_uint_fast64_t restarts;
    pthread_mutex_t mu;
    pthread_cond_t not_full;
    qitem *q;                  /* ring of o.queue_max */
    size_t head, count;
    uint64_t seed;             /* jitter PRNG state */
};

/* ---- the queue --------------------------------------------------- */

/* Producer side.  Takes over the reference to obj.  TLR_E_CANCELED when
 * the informer is stopping (obj is dropped). */
static int push(tlr_kube_informer *inf, tlr_kube_event_type t, json_object *obj)
{
    pthread_mutex_lock(&inf->mu);
    while (inf->count == inf->o.queue_max && !atomic_load(&inf->stop))
        pthread_cond_wait(&inf->not_full, &inf->mu);
    if (atomic_load(&inf->stop)) {
        pthread_mutex_unlock(&inf->mu);
        json_object_put(obj);
        return TLR_E_CANCELED;
    }
    inf->q[(inf->head + inf->count) % inf->o.queue_max] = (qitem){ t, obj };
    inf->count++;
    pthread_mutex_unlock(&inf->mu);
    uint64_t one = 1;
    ssize_t w = write(inf->efd, &one, sizeof(one));
    (void)w;    /* EAGAIN only when the counter is huge: already readable */
    return TLR_OK;
}

/* Consumer side, on the loop thread. */
static void on_ready(tlr_loop *loop, int fd, void *arg)
{
    (void)loop;
    tlr_kube_informer *inf = arg;
    uint64_t n;
    ssize_t r = read(fd, &n, sizeof(n));
    (void)r;
    for (;;) {
        pthread_mutex_lock(&inf->mu);
        if (inf->count == 0) {
            pthread_mutex_unlock(&inf->mu);
            break;
        }
        qitem it = inf->q[inf->head];
        inf->head = (inf->head + 1) % inf->o.queue_max;
        inf->count--;
        pthread_cond_signal(&inf->not_full);
        pthread_mutex_unlock(&inf->mu);
        inf->o.handler(inf->o.arg, it.type, it.obj);
        if (it.type == TLR_KUBE_RELIST_DONE)
            atomic_store(&inf->synced, true);
        json_object_put(it.obj);
    }
}

/* ---- the thread -------------------------------------------------- */

static bool stopping(void *arg)
{
    tlr_kube_informer *inf = arg;
    return atomic_load(&inf->stop);
}

static int on_item(void *arg, json_object *item)
{
    return push(arg, TLR_KUBE_ADDED, json_object_get(item));
}

static int on_event(void *arg, tlr_kube_event_type t, json_object *obj)
{
    return push(arg, t, json_object_get(obj));
}

/* Sleep ms, waking early when stopping. */
static void nap(tlr_kube_informer *inf, int64_t ms)
{
    int64_t end = tlr_mono_ms() + ms;
    while (!atomic_load(&inf->stop)) {
        int64_t left = end - tlr_mono_ms();
        if (left <= 0)
            break;
        struct timespec ts = { 0, (left > 100 ? 100 : left) * 1000000L };
        nanosleep(&ts, NULL);
    }
}

/* Full jitter: uniform in [d/2, d]. */
static int64_t jitter(tlr_kube_informer *inf, int64_t d)
{
    inf->seed ^= inf->seed << 13;
    inf->seed ^= inf->seed >> 7;
    inf->seed ^= inf->seed << 17;
    return d / 2 + (int64_t)(inf->seed % (uint64_t)(d / 2 + 1));
}

static void *run(void *arg)
{
    tlr_kube_informer *inf = arg;
    char *rv = NULL;
    int64_t backoff = inf->o.backoff_min_ms;
    char what[128];
    snprintf(what, sizeof(what), "%s%s%s", inf->o.res.plural,
             inf->o.res.group[0] ? "." : "", inf->o.res.group);

    while (!atomic_load(&inf->stop)) {
        tlr_kube_status st = { 0 };
        int rc;
        if (rv == NULL) {
            if (push(inf, TLR_KUBE_RELIST_START, NULL) != TLR_OK)
                break;
            tlr_kube_list_opts lo = { .label_selector = inf->lsel,
                                      .field_selector = inf->fsel,
                                      .limit = inf->o.page_limit };
            rc = tlr_kube_list_cancelable(inf->kc, &inf->o.res, inf->ns, &lo, on_item,
                                          inf, &rv, &st, stopping, inf);
            if (rc == TLR_OK && rv == NULL)
                rv = tlr_strdup("0");
            if (rc == TLR_OK)
                rc = push(inf, TLR_KUBE_RELIST_DONE, NULL);
            if (rc == TLR_E_CANCELED || atomic_load(&inf->stop))
                break;
            if (rc != TLR_OK) {
                free(rv);
                rv = NULL;
                atomic_fetch_add(&inf->restarts, 1);
                TLR_LOG(inf->o.log, TLR_LOG_WARN, "kube list failed; retrying",
                        TLR_S("kind", what), TLR_ERR(rc), TLR_I("http", st.http),
                        TLR_S("message", st.message), TLR_I("backoff_ms", backoff));
                nap(inf, jitter(inf, backoff));
                backoff = backoff * 2 > inf->o.backoff_max_ms ? inf->o.backoff_max_ms
                                                             : backoff * 2;
                continue;
            }
            backoff = inf->o.backoff_min_ms;
        }
        tlr_kube_watch_opts wo = { .label_selector = inf->lsel,
                                   .field_selector = inf->fsel,
                                   .resource_version = rv,
                                   .allow_bookmarks = true,
                                   .timeout_s = inf->o.watch_timeout_s,
                                   .idle_s = inf->o.watch_idle_s,
                                   .cancel = stopping, .cancel_arg = inf };
        char *last = NULL;
        rc = tlr_kube_watch(inf->kc, &inf->o.res, inf->ns, &wo, on_event, inf, &last, &st);
        if (last != NULL) {
            free(rv);
            rv = last;
            backoff = inf->o.backoff_min_ms;    /* it made progress */
        }
        if (rc == TLR_E_CANCELED || atomic_load(&inf->stop))
            break;
        atomic_fetch_add(&inf->restarts, 1);
        if (rc == TLR_OK)
            continue;
        if (rc == TLR_E_GONE) {
            TLR_LOG(inf->o.log, TLR_LOG_INFO, "kube watch expired; relisting",
                    TLR_S("kind", what));
            free(rv);
            rv = NULL;
            continue;
        }
        TLR_LOG(inf->o.log, TLR_LOG_WARN, "kube watch failed; retrying",
                TLR_S("kind", what), TLR_ERR(rc), TLR_I("http", st.http),
                TLR_S("message", st.message), TLR_I("backoff_ms", backoff));
        if (rc == TLR_E_PARSE || rc == TLR_E_TOOBIG) {
            free(rv);       /* we may have missed an event: start over */
            rv = NULL;
        }
        nap(inf, jitter(inf, backoff));
        backoff = backoff * 2 > inf->o.backoff_max_ms ? inf->o.backoff_max_ms : backoff * 2;
    }
    free(rv);
    return NULL;
}

/* ---- lifetime ---------------------------------------------------- */

int tlr_kube_informer_start(tlr_kube *kc, tlr_loop *loop,
                            const tlr_kube_informer_opts *o,
                            tlr_kube_informer **out)
{
    if (kc == NULL || loop == NULL || o == NULL || o->handler == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_kube_informer *inf = tlr_calloc(1, sizeof(*inf));
    inf->kc = kc;
    inf->loop = loop;
    inf->o = *o;
    inf->ns = tlr_strdup(o->ns && o->ns[0] ? o->ns : NULL);
    inf->lsel = tlr_strdup(o->label_selector);
    inf->fsel = tlr_strdup(o->field_selector);
    inf->o.ns = inf->ns;
    inf->o.label_selector = inf->lsel;
    inf->o.field_selector = inf->fsel;
    if (inf->o.queue_max == 0)
        inf->o.queue_max = 4096;
    if (inf->o.backoff_min_ms <= 0)
        inf->o.backoff_min_ms = 200;
    if (inf->o.backoff_max_ms < inf->o.backoff_min_ms)
        inf->o.backoff_max_ms = inf->o.backoff_min_ms > 30000 ? inf->o.backoff_min_ms : 30000;
    inf->q = tlr_calloc(inf->o.queue_max, sizeof(qitem));
    inf->seed = (uint64_t)tlr_mono_ms() * 0x9E3779B97F4A7C15ull + (uintptr_t)inf;
    if (inf->seed == 0)
        inf->seed = 1;
    pthread_mutex_init(&inf->mu, NULL);
    pthread_cond_init(&inf->not_full, NULL);
    inf->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int rc = TLR_E_IO;
    if (inf->efd < 0)
        goto fail;
    if ((rc = tlr_loop_add_fd(loop, inf->efd, on_ready, inf)) != TLR_OK)
        goto fail;
    if (pthread_create(&inf->thread, NULL, run, inf) != 0) {
        tlr_loop_remove_fd(loop, inf->efd);
        rc = TLR_E_IO;
        goto fail;
    }
    inf->thread_started = true;
    *out = inf;
    return TLR_OK;
fail:
    tlr_kube_informer_free(inf);
    return rc;
}

bool tlr_kube_informer_synced(const tlr_kube_informer *inf)
{
    return atomic_load(&((tlr_kube_informer *)inf)->synced);
}

uint64_t tlr_kube_informer_restarts(const tlr_kube_informer *inf)
{
    return atomic_load(&((tlr_kube_informer *)inf)->restarts);
}

void tlr_kube_informer_free(tlr_kube_informer *inf)
{
    if (inf == NULL)
        return;
    atomic_store(&inf->stop, true);
    pthread_mutex_lock(&inf->mu);
    pthread_cond_broadcast(&inf->not_full);
    pthread_mutex_unlock(&inf->mu);
    if (inf->thread_started) {
        pthread_join(inf->thread, NULL);
        tlr_loop_remove_fd(inf->loop, inf->efd);
    }
    for (size_t i = 0; i < inf->count; i++)
        json_object_put(inf->q[(inf->head + i) % inf->o.queue_max].obj);
    if (inf->efd >= 0)
        close(inf->efd);
    pthread_cond_destroy(&inf->not_full);
    pthread_mutex_destroy(&inf->mu);
    free(inf->q);
    free(inf->ns);
    free(inf->lsel);
    free(inf->fsel);
    free(inf);
}
