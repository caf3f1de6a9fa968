/* batcher_test.c - the batch window on a fake clock.  Each scenario is a
 * script of steps at fake times: a trigger (a new pending pod) or a
 * decision (with the pending count and sync state) and what it must say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "batcher.h"

#define WALL0 1700000000000LL   /* wall = WALL0 + mono */

typedef struct fake_clock {
    int64_t now;
} fake_clock;

static int64_t fake_mono(void *arg)
{
    return ((fake_clock *)arg)->now;
}

static int64_t fake_wall(void *arg)
{
    return WALL0 + ((fake_clock *)arg)->now;
}

enum { END = 0, TRIG, DECIDE };

typedef struct step {
    int op;
    int64_t at;
    size_t npending;
    bool synced;
    bool want_pub;
    int64_t want_start, want_end;   /* mono ms, when want_pub */
    int64_t want_wait;
} step;

typedef struct scenario {
    const char *name;
    step s[24];
} scenario;

#define T(at) { TRIG, at, 0, 0, 0, 0, 0, 0 }
#define NO(at, n, sy, wait) { DECIDE, at, n, sy, false, 0, 0, wait }
#define PUB(at, n, st, en, wait) { DECIDE, at, n, true, true, st, en, wait }

static const scenario scenarios[] = {
    { "idle close: 1 s after the only pod",
      { T(0), NO(0, 1, true, 1000), NO(999, 1, true, 1), PUB(1000, 1, 0, 1000, 30000), { END } } },
    { "a new pod extends the idle window",
      { T(0), T(800), NO(1000, 2, true, 800), PUB(1800, 2, 0, 1800, 30000), { END } } },
    { "max close: a steady trickle cannot hold the window past 10 s",
      { T(0), T(900), T(1800), T(2700), T(3600), T(4500), T(5400), T(6300), T(7200),
        T(8100), T(9000), NO(9500, 11, true, 500), T(9900), NO(9999, 12, true, 1),
        PUB(10000, 12, 0, 10000, 30000), { END } } },
    { "no publish before synced; published the moment sync completes",
      { T(0), NO(1000, 3, false, -1), NO(4000, 3, false, -1), PUB(5000, 3, 0, 1000, 30000),
        { END } } },
    { "window closed with nothing pending any more: nothing published",
      { T(0), NO(1000, 0, true, -1), NO(40000, 0, true, -1), { END } } },
    { "resync while pods stay pending",
      { T(0), PUB(1000, 2, 0, 1000, 30000), NO(30999, 2, true, 1),
        PUB(31000, 2, 31000, 31000, 30000), { END } } },
    { "no resync once nothing is pending",
      { T(0), PUB(1000, 2, 0, 1000, 30000), NO(31000, 0, true, -1), { END } } },
    { "a window open at resync time wins: published when it closes",
      { T(0), PUB(1000, 1, 0, 1000, 30000), T(30500), NO(31000, 2, true, 500),
        PUB(31500, 2, 30500, 31500, 30000), { END } } },
};

static void test_scenarios(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        fake_clock fc = { 0 };
        tlr_clock clk = { fake_mono, fake_wall, &fc };
        watcher_batcher_opts o = { .idle_ms = 1000, .max_ms = 10000, .resync_ms = 30000,
                                   .clock = &clk };
        watcher_batcher *b;
        watcher_batcher_create(&o, &b);
        for (size_t k = 0; scenarios[i].s[k].op != END; k++) {
            const step *st = &scenarios[i].s[k];
            fc.now = st->at;
            if (st->op == TRIG) {
                watcher_batcher_trigger(b);
                continue;
            }
            watcher_batch_window w = { -1, -1 };
            int64_t wait = -2;
            bool pub = watcher_batcher_decide(b, st->npending, st->synced, &w, &wait);
            bool bad = pub != st->want_pub || wait != st->want_wait ||
                       (pub && (w.start_ms != WALL0 + st->want_start ||
                                w.end_ms != WALL0 + st->want_end));
            if (bad) {
                printf("FAIL %s, step %zu at %lld: got publish %d window [%lld,%lld] wait %lld;"
                       " want publish %d window [%lld,%lld] wait %lld\n",
                       scenarios[i].name, k, (long long)st->at, pub,
                       pub ? (long long)(w.start_ms - WALL0) : -1LL,
                       pub ? (long long)(w.end_ms - WALL0) : -1LL, (long long)wait, st->want_pub,
                       st->want_pub ? (long long)st->want_start : -1LL,
                       st->want_pub ? (long long)st->want_end : -1LL, (long long)st->want_wait);
                failed++;
            }
        }
        watcher_batcher_free(b);
    }
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenarios),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
