/* batcher.h - when to publish a pending batch (Karpenter's batcher).
 *
 * A window opens when a pod becomes pending that was not pending before.
 * It closes idle_ms after the last such pod, or max_ms after it opened,
 * whichever comes first: a burst of pods arriving over a few seconds is
 * planned once, yet a steady trickle cannot hold planning back for more
 * than max_ms.  When the window closes the caller publishes the COMPLETE
 * pending set (level-triggered), not just the pods that opened it.
 *
 * Nothing is published before every informer has synced: a window that
 * closes earlier waits and is published the moment sync completes.
 * While pods stay pending and no window is open, a batch is published
 * again every resync_ms, so a lost message only delays.
 *
 * The batcher only decides; it holds no pods, sends nothing and never
 * reads a clock other than the one it was given, so tests drive it with a
 * fake clock.
 */
#ifndef WATCHER_BATCHER_H
#define WATCHER_BATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tlr_time.h"

typedef struct watcher_batcher watcher_batcher;

typedef struct watcher_batcher_opts {
    int64_t idle_ms;           /* 0: 1000 */
    int64_t max_ms;            /* 0: 10000 */
    int64_t resync_ms;         /* 0: 30000 */
    const tlr_clock *clock;    /* borrowed, must outlive the batcher; NULL: system */
} watcher_batcher_opts;

/* o is borrowed and may be NULL.  *out is new and owned:
 * watcher_batcher_free() it. */
void watcher_batcher_create(const watcher_batcher_opts *o, watcher_batcher **out);
void watcher_batcher_free(watcher_batcher *b);      /* NULL is fine */

/* A pod became pending that was not pending before: open a window, or
 * push its idle deadline out (never past the window's max). */
void watcher_batcher_trigger(watcher_batcher *b);

/* The window a published batch covers, in Unix ms. */
typedef struct watcher_batch_window {
    int64_t start_ms;
    int64_t end_ms;
} watcher_batch_window;

/* Decide now.  npending: the size of the current pending set; synced:
 * every informer has listed once.  Returns true when a batch must be
 * published now: *win (written only then) is its window, and the batcher
 * counts it as published.  *wait_ms is always written: how long until
 * another call could return true without a new trigger or sync (-1: not
 * before one). */
bool watcher_batcher_decide(watcher_batcher *b, size_t npending, bool synced,
                            watcher_batch_window *win, int64_t *wait_ms);

/* True while a window is open (for logs and tests). */
bool watcher_batcher_open(const watcher_batcher *b);

#endif
