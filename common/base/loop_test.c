/* loop_test.c - timers fire in order, fds wake the loop, SIGTERM stops it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "tlr_err.h"
#include "tlr_loop.h"
#include "tlr_time.h"

typedef struct rec {
    int order[16];
    int n;
    tlr_timer_id cancel_me;
} rec;

static void on_timer(tlr_loop *l, tlr_timer_id id, void *arg)
{
    rec *r = arg;
    r->order[r->n++] = (int)id;
    if (r->cancel_me)
        tlr_loop_cancel_timer(l, r->cancel_me);
    r->cancel_me = 0;
}

static void on_stop(tlr_loop *l, tlr_timer_id id, void *arg)
{
    (void)id;
    (void)arg;
    tlr_loop_stop(l);
}

static void test_timers_order_and_cancel(void **state)
{
    (void)state;
    tlr_loop *l;
    assert_int_equal(tlr_loop_create(&l), TLR_OK);
    rec r = { 0 };
    tlr_timer_id t30 = tlr_loop_add_timer(l, 30, on_timer, &r);
    tlr_timer_id t10 = tlr_loop_add_timer(l, 10, on_timer, &r);
    tlr_timer_id t20 = tlr_loop_add_timer(l, 20, on_timer, &r);
    tlr_timer_id t25 = tlr_loop_add_timer(l, 25, on_timer, &r);
    r.cancel_me = t25;                     /* cancelled by the first callback */
    tlr_loop_add_timer(l, 60, on_stop, NULL);
    int64_t t0 = tlr_mono_ms();
    assert_int_equal(tlr_loop_run(l), TLR_OK);
    assert_true(tlr_mono_ms() - t0 >= 55);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.order[0], (int)t10);
    assert_int_equal(r.order[1], (int)t20);
    assert_int_equal(r.order[2], (int)t30);
    tlr_loop_free(l);
}

typedef struct fdrec {
    int reads;
    char last;
} fdrec;

static void on_readable(tlr_loop *l, int fd, void *arg)
{
    fdrec *f = arg;
    char c;
    if (read(fd, &c, 1) == 1) {
        f->reads++;
        f->last = c;
    }
    if (f->reads == 2)
        tlr_loop_stop(l);
}

static void write_later(tlr_loop *l, tlr_timer_id id, void *arg)
{
    (void)l;
    (void)id;
    int fd = *(int *)arg;
    assert_int_equal(write(fd, "ab", 2), 2);
}

static void test_fd_readable(void **state)
{
    (void)state;
    tlr_loop *l;
    assert_int_equal(tlr_loop_create(&l), TLR_OK);
    int p[2];
    assert_int_equal(pipe(p), 0);
    fdrec f = { 0 };
    assert_int_equal(tlr_loop_add_fd(l, p[0], on_readable, &f), TLR_OK);
    tlr_loop_add_timer(l, 5, write_later, &p[1]);
    assert_int_equal(tlr_loop_run(l), TLR_OK);
    assert_int_equal(f.reads, 2);
    assert_int_equal(f.last, 'b');
    assert_int_equal(tlr_loop_add_fd(l, -1, on_readable, &f), TLR_E_INVAL);
    tlr_loop_remove_fd(l, p[0]);
    close(p[0]);
    close(p[1]);
    tlr_loop_free(l);
}

static void send_term(tlr_loop *l, tlr_timer_id id, void *arg)
{
    (void)l;
    (void)id;
    (void)arg;
    kill(getpid(), SIGTERM);
}

static void on_sig(tlr_loop *l, int signo, void *arg)
{
    *(int *)arg = signo;
    tlr_loop_stop(l);
}

static void test_sigterm_stops(void **state)
{
    (void)state;
    tlr_loop *l;
    assert_int_equal(tlr_loop_create(&l), TLR_OK);
    int got = 0;
    tlr_loop_on_signal(l, on_sig, &got);
    tlr_loop_add_timer(l, 5, send_term, NULL);
    assert_int_equal(tlr_loop_run(l), TLR_OK);
    assert_int_equal(got, SIGTERM);
    assert_true(tlr_loop_stopping(l));
    tlr_loop_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timers_order_and_cancel),
        cmocka_unit_test(test_fd_readable),
        cmocka_unit_test(test_sigterm_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
