/* tlr_loop.h - a single-threaded event loop: fds, timers, signals.
 *
 * Service logic runs on one thread, so it needs no locks: every callback
 * (an fd became readable, a timer fired, SIGTERM arrived) runs on the
 * thread that called tlr_loop_run().  nng sockets join the loop through
 * their NNG_OPT_RECVFD descriptor.  Other threads (the HTTP server) may
 * only call tlr_loop_wake() and tlr_loop_stop().
 */
#ifndef TLR_LOOP_H
#define TLR_LOOP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tlr_loop tlr_loop;
typedef uint64_t tlr_timer_id;           /* 0 is never a valid id */

typedef void (*tlr_fd_cb)(tlr_loop *loop, int fd, void *arg);
typedef void (*tlr_timer_cb)(tlr_loop *loop, tlr_timer_id id, void *arg);
typedef void (*tlr_signal_cb)(tlr_loop *loop, int signo, void *arg);

/* On TLR_OK *out is new and owned: free with tlr_loop_free().  Blocks
 * SIGTERM, SIGINT and SIGHUP in the calling thread (call before creating
 * other threads so they inherit the mask) and delivers them to the loop. */
int  tlr_loop_create(tlr_loop **out);
void tlr_loop_free(tlr_loop *loop);     /* NULL is fine */

/* Watch fd for readability; cb runs until the fd is removed. */
int  tlr_loop_add_fd(tlr_loop *loop, int fd, tlr_fd_cb cb, void *arg);
void tlr_loop_remove_fd(tlr_loop *loop, int fd);

/* One-shot timer after delay_ms (monotonic).  Re-arm from the callback for
 * periodic work.  Returns the id (never 0). */
tlr_timer_id tlr_loop_add_timer(tlr_loop *loop, int64_t delay_ms,
                                tlr_timer_cb cb, void *arg);
void tlr_loop_cancel_timer(tlr_loop *loop, tlr_timer_id id);

/* Called for SIGTERM, SIGINT and SIGHUP.  Without a handler SIGTERM and
 * SIGINT stop the loop and SIGHUP is ignored. */
void tlr_loop_on_signal(tlr_loop *loop, tlr_signal_cb cb, void *arg);

/* Run until tlr_loop_stop().  Returns TLR_OK, or an error if the loop
 * itself failed (epoll). */
int  tlr_loop_run(tlr_loop *loop);
/* Thread-safe: ask the loop to return after the current callback. */
void tlr_loop_stop(tlr_loop *loop);
/* Thread-safe: make the loop wake up (e.g. a queue has work). */
void tlr_loop_wake(tlr_loop *loop);
bool tlr_loop_stopping(const tlr_loop *loop);

#endif
