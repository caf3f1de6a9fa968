/* loop.c - the single-threaded event loop.
 *
 * epoll watches the registered fds, a signalfd (SIGTERM/SIGINT/SIGHUP) and
 * an eventfd used by tlr_loop_wake()/tlr_loop_stop() from other threads.
 * Timers live in a binary min-heap keyed on (deadline, id); a cancelled
 * timer is removed from the heap at once, so the heap never holds dead
 * entries.  Callbacks may add and remove fds and timers freely: fd
 * callbacks are looked up again after every callback, so removing an fd
 * from inside another fd's callback is safe.
 */
#include "tlr_loop.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"

typedef struct fd_watch {
    int fd;
    tlr_fd_cb cb;
    void *arg;
} fd_watch;

typedef struct timer {
    int64_t deadline;
    tlr_timer_id id;
    tlr_timer_cb cb;
    void *arg;
} timer;

struct tlr_loop {
    int epfd;
    int sigfd;
    int wakefd;
    sigset_t oldmask;
    fd_watch *fds;
    size_t nfds, capfds;
    timer *heap;
    size_t nheap, capheap;
    tlr_timer_id next_id;
    tlr_signal_cb sig_cb;
    void *sig_arg;
    atomic_bool stop;
};

int tlr_loop_create(tlr_loop **out)
{
    tlr_loop *l = tlr_calloc(1, sizeof(*l));
    l->epfd = l->sigfd = l->wakefd = -1;
    l->next_id = 1;
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &mask, &l->oldmask) != 0)
        goto fail;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->epfd < 0 || l->sigfd < 0 || l->wakefd < 0)
        goto fail;
    struct epoll_event ev = { .events = EPOLLIN };
    ev.data.fd = l->sigfd;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->sigfd, &ev) < 0)
        goto fail;
    ev.data.fd = l->wakefd;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) < 0)
        goto fail;
    *out = l;
    return TLR_OK;
fail:
    tlr_loop_free(l);
    return TLR_E_IO;
}

void tlr_loop_free(tlr_loop *l)
{
    if (!l)
        return;
    pthread_sigmask(SIG_SETMASK, &l->oldmask, NULL);
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->sigfd >= 0)
        close(l->sigfd);
    if (l->wakefd >= 0)
        close(l->wakefd);
    free(l->fds);
    free(l->heap);
    free(l);
}

static fd_watch *find_fd(tlr_loop *l, int fd)
{
    for (size_t i = 0; i < l->nfds; i++)
        if (l->fds[i].fd == fd)
            return &l->fds[i];
    return NULL;
}

int tlr_loop_add_fd(tlr_loop *l, int fd, tlr_fd_cb cb, void *arg)
{
    if (fd < 0 || !cb)
        return TLR_E_INVAL;
    fd_watch *w = find_fd(l, fd);
    if (!w) {
        struct epoll_event ev = { .events = EPOLLIN };
        ev.data.fd = fd;
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
            return TLR_E_IO;
        TLR_GROW(l->fds, l->capfds, l->nfds + 1);
        w = &l->fds[l->nfds++];
        w->fd = fd;
    }
    w->cb = cb;
    w->arg = arg;
    return TLR_OK;
}

void tlr_loop_remove_fd(tlr_loop *l, int fd)
{
    for (size_t i = 0; i < l->nfds; i++) {
        if (l->fds[i].fd == fd) {
            epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
            l->fds[i] = l->fds[--l->nfds];
            return;
        }
    }
}

static int timer_less(const timer *a, const timer *b)
{
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->id < b->id);
}

static void heap_swap(tlr_loop *l, size_t i, size_t j)
{
    timer t = l->heap[i];
    l->heap[i] = l->heap[j];
    l->heap[j] = t;
}

static void sift_up(tlr_loop *l, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!timer_less(&l->heap[i], &l->heap[p]))
            break;
        heap_swap(l, i, p);
        i = p;
    }
}

static void sift_down(tlr_loop *l, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1, m = i;
        if (c < l->nheap && timer_less(&l->heap[c], &l->heap[m]))
            m = c;
        if (c + 1 < l->nheap && timer_less(&l->heap[c + 1], &l->heap[m]))
            m = c + 1;
        if (m == i)
            return;
        heap_swap(l, i, m);
        i = m;
    }
}

static void heap_remove(tlr_loop *l, size_t i)
{
    l->heap[i] = l->heap[--l->nheap];
    if (i < l->nheap) {
        sift_down(l, i);
        sift_up(l, i);
    }
}

tlr_timer_id tlr_loop_add_timer(tlr_loop *l, int64_t delay_ms, tlr_timer_cb cb, void *arg)
{
    TLR_GROW(l->heap, l->capheap, l->nheap + 1);
    timer *t = &l->heap[l->nheap++];
    t->deadline = tlr_mono_ms() + (delay_ms > 0 ? delay_ms : 0);
    t->id = l->next_id++;
    t->cb = cb;
    t->arg = arg;
    tlr_timer_id id = t->id;
    sift_up(l, l->nheap - 1);
    return id;
}

void tlr_loop_cancel_timer(tlr_loop *l, tlr_timer_id id)
{
    for (size_t i = 0; i < l->nheap; i++) {
        if (l->heap[i].id == id) {
            heap_remove(l, i);
            return;
        }
    }
}

void tlr_loop_on_signal(tlr_loop *l, tlr_signal_cb cb, void *arg)
{
    l->sig_cb = cb;
    l->sig_arg = arg;
}

static void handle_signals(tlr_loop *l)
{
    struct signalfd_siginfo si;
    while (read(l->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int signo = (int)si.ssi_signo;
        if (l->sig_cb)
            l->sig_cb(l, signo, l->sig_arg);
        else if (signo == SIGTERM || signo == SIGINT)
            tlr_loop_stop(l);
    }
}

static void run_timers(tlr_loop *l)
{
    int64_t now = tlr_mono_ms();
    /* Only timers due now; a callback that re-arms with delay 0 runs on the
     * next iteration, so fds are never starved. */
    tlr_timer_id limit = l->next_id;
    while (l->nheap && l->heap[0].deadline <= now && l->heap[0].id < limit &&
           !atomic_load(&l->stop)) {
        timer t = l->heap[0];
        heap_remove(l, 0);
        t.cb(l, t.id, t.arg);
    }
}

int tlr_loop_run(tlr_loop *l)
{
    struct epoll_event evs[32];
    while (!atomic_load(&l->stop)) {
        int timeout = -1;
        if (l->nheap) {
            int64_t d = l->heap[0].deadline - tlr_mono_ms();
            timeout = d <= 0 ? 0 : (d > 60000 ? 60000 : (int)d);
        }
        int n = epoll_wait(l->epfd, evs, 32, timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return TLR_E_IO;
        }
        for (int i = 0; i < n && !atomic_load(&l->stop); i++) {
            int fd = evs[i].data.fd;
            if (fd == l->sigfd) {
                handle_signals(l);
            } else if (fd == l->wakefd) {
                uint64_t v;
                while (read(l->wakefd, &v, sizeof(v)) == (ssize_t)sizeof(v))
                    ;
            } else {
                fd_watch *w = find_fd(l, fd);   /* may have been removed */
                if (w)
                    w->cb(l, fd, w->arg);
            }
        }
        run_timers(l);
    }
    return TLR_OK;
}

void tlr_loop_stop(tlr_loop *l)
{
    atomic_store(&l->stop, true);
    tlr_loop_wake(l);
}

void tlr_loop_wake(tlr_loop *l)
{
    uint64_t one = 1;
    ssize_t rc = write(l->wakefd, &one, sizeof(one));
    (void)rc;   /* a full counter already means "wake" */
}

bool tlr_loop_stopping(const tlr_loop *l)
{
    return atomic_load(&((tlr_loop *)l)->stop);
}
