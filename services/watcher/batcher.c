/* batcher.c - the batch window state machine (see batcher.h).
 *
 * States: idle (no window), open (start, last trigger), closed-unsent (the
 * window closed before sync, or before the caller asked).  Publishing
 * returns to idle and restarts the resync period.
 */
#include <stdlib.h>

#include "batcher.h"
#include "tlr_alloc.h"

struct watcher_batcher {
    int64_t idle_ms, max_ms, resync_ms;
    tlr_clock clock;
    bool open;                 /* a window is collecting pods */
    int64_t start_mono, last_mono, start_wall;
    bool closed;               /* a window closed and is not published yet */
    watcher_batch_window done; /* ...its span */
    bool published_once;
    int64_t last_pub_mono;
};

void watcher_batcher_create(const watcher_batcher_opts *o, watcher_batcher **out)
{
    watcher_batcher *b = tlr_calloc(1, sizeof(*b));
    b->idle_ms = o && o->idle_ms > 0 ? o->idle_ms : 1000;
    b->max_ms = o && o->max_ms > 0 ? o->max_ms : 10000;
    b->resync_ms = o && o->resync_ms > 0 ? o->resync_ms : 30000;
    b->clock = o && o->clock ? *o->clock : tlr_clock_system;
    *out = b;
}

void watcher_batcher_free(watcher_batcher *b)
{
    free(b);
}

void watcher_batcher_trigger(watcher_batcher *b)
{
    int64_t now = b->clock.mono_ms(b->clock.arg);
    if (!b->open) {
        b->open = true;
        b->start_mono = now;
        b->start_wall = b->clock.wall_ms(b->clock.arg);
    }
    b->last_mono = now;
}

bool watcher_batcher_open(const watcher_batcher *b)
{
    return b->open;
}

static int64_t close_at(const watcher_batcher *b)
{
    int64_t idle = b->last_mono + b->idle_ms, max = b->start_mono + b->max_ms;
    return idle < max ? idle : max;
}

bool watcher_batcher_decide(watcher_batcher *b, size_t npending, bool synced,
                            watcher_batch_window *win, int64_t *wait_ms)
{
    int64_t now = b->clock.mono_ms(b->clock.arg);
    if (b->open && now >= close_at(b)) {
        b->open = false;
        /* A window that closes while an older one waits for sync merges
         * into it: one batch, spanning both. */
        if (!b->closed)
            b->done.start_ms = b->start_wall;
        b->done.end_ms = b->clock.wall_ms(b->clock.arg);
        b->closed = true;
    }
    bool publish = false;
    watcher_batch_window w = { 0 };
    if (b->closed && synced) {
        b->closed = false;
        if (npending > 0) {
            publish = true;
            w = b->done;
        }
    } else if (!b->open && !b->closed && synced && npending > 0 && b->published_once &&
               now >= b->last_pub_mono + b->resync_ms) {
        publish = true;
        w.start_ms = w.end_ms = b->clock.wall_ms(b->clock.arg);
    }
    if (publish) {
        b->published_once = true;
        b->last_pub_mono = now;
        *win = w;
    }
    if (b->open)
        *wait_ms = close_at(b) - now;
    else if (b->closed)
        *wait_ms = -1;             /* waits for sync, not for time */
    else if (npending > 0 && b->published_once)
        *wait_ms = b->last_pub_mono + b->resync_ms - now;
    else
        *wait_ms = -1;
    return publish;
}
