/* cancel.c - process shutdown latch, per-thread deadline, cancellable
 * sleep (tlr_cancel.h).
 *
 * A sleeper polls two descriptors:
 *   - an eventfd written once by tlr_shutdown_request() and never read, so
 *     it stays readable: the latch is level-triggered for every later
 *     sleep too;
 *   - a signalfd for SIGTERM and SIGINT that is polled but never read.
 *     poll() reports it readable while such a signal is pending for the
 *     process, without taking it, so the service loop's own signalfd still
 *     receives the signal.  This is what wakes a sleep on the loop thread
 *     itself, which cannot run its signal callback while it sleeps.
 * Both are created on first use; tlr_shutdown_request() before that only
 * sets the flag, which every sleep checks first.
 */
#include "tlr_cancel.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "tlr_err.h"
#include "tlr_time.h"

static atomic_bool shutdown_flag;
static atomic_int shutdown_evfd = -1;
static int term_sigfd = -1;
static pthread_once_t fds_once = PTHREAD_ONCE_INIT;

static _Thread_local int64_t thread_deadline;

static void make_fds(void)
{
    sigset_t mask;

    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    term_sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    atomic_store(&shutdown_evfd, fd);
    /* A request that raced with creation only set the flag: latch it. */
    if (fd >= 0 && atomic_load(&shutdown_flag)) {
        uint64_t one = 1;
        (void)!write(fd, &one, sizeof(one));
    }
}

void tlr_shutdown_request(void)
{
    int saved = errno;
    atomic_store(&shutdown_flag, true);
    int fd = atomic_load(&shutdown_evfd);
    if (fd >= 0) {
        uint64_t one = 1;
        (void)!write(fd, &one, sizeof(one));
    }
    errno = saved;
}

static bool term_pending(void)
{
    sigset_t pend;

    if (sigpending(&pend) != 0)
        return false;
    return sigismember(&pend, SIGTERM) == 1 || sigismember(&pend, SIGINT) == 1;
}

bool tlr_shutdown_requested(void)
{
    return atomic_load(&shutdown_flag) || term_pending();
}

void tlr_deadline_set(int64_t mono_ms) { thread_deadline = mono_ms > 0 ? mono_ms : 0; }
void tlr_deadline_clear(void) { thread_deadline = 0; }
int64_t tlr_deadline_get(void) { return thread_deadline; }

int64_t tlr_deadline_left_ms(void)
{
    return thread_deadline == 0 ? INT64_MAX : thread_deadline - tlr_mono_ms();
}

int64_t tlr_deadline_cap_ms(int64_t ms)
{
    int64_t left = tlr_deadline_left_ms();

    if (left < ms)
        ms = left;
    return ms > 0 ? ms : 0;
}

int tlr_sleep_until(int64_t wake_mono_ms)
{
    pthread_once(&fds_once, make_fds);
    for (;;) {
        if (tlr_shutdown_requested())
            return TLR_E_CANCELED;
        int64_t left = wake_mono_ms - tlr_mono_ms();
        if (left <= 0)
            return TLR_OK;
        struct pollfd p[2] = {
            { .fd = atomic_load(&shutdown_evfd), .events = POLLIN },
            { .fd = term_sigfd, .events = POLLIN },
        };
        /* Either fd may be -1 (creation failed): poll ignores it, and the
         * flag check above still catches a request within one slice. */
        int slice = left > 1000 ? 1000 : (int)left;
        if (p[0].fd < 0 || p[1].fd < 0)
            slice = slice > 50 ? 50 : slice;
        if (poll(p, 2, slice) < 0 && errno != EINTR)
            usleep((useconds_t)slice * 1000);   /* cannot happen; still sleep */
    }
}
