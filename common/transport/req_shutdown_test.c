/* req_shutdown_test.c - a REQ call waiting on a silent peer gives up when
 * the process is told to stop (its own binary: the shutdown latch is
 * process-wide).
 *
 * As in a service, SIGTERM is blocked in every thread, so it stays
 * pending; the call must notice the pending signal itself (the loop that
 * would read it is the thread stuck in the call) and return CANCELED
 * long before its 20 s timeout. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "tailor/v1/common.pb-c.h"
#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_req.h"
#include "tlr_time.h"

static void *term_later(void *arg)
{
    (void)arg;
    usleep(300 * 1000);
    kill(getpid(), SIGTERM);   /* blocked everywhere: stays pending */
    return NULL;
}

static void test_call_canceled_by_pending_sigterm(void **state)
{
    (void)state;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    assert_int_equal(pthread_sigmask(SIG_BLOCK, &set, NULL), 0);

    /* a peer that takes requests and never answers */
    nng_socket rep;
    assert_int_equal(nng_rep0_open(&rep), 0);
    const char *url = "inproc://req-shutdown";
    assert_int_equal(nng_listen(rep, url, NULL, 0), 0);

    tlr_req_client *c = NULL;
    assert_int_equal(tlr_req_client_create(&(tlr_req_opts){ .urls = &url, .nurls = 1,
                                                            .timeout_ms = 20000 },
                                           &c),
                     TLR_OK);
    assert_false(tlr_shutdown_requested());

    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, term_later, NULL), 0);
    Tailor__V1__PingRequest req = TAILOR__V1__PING_REQUEST__INIT;
    ProtobufCMessage *reply = NULL;
    tlr_status st = { 0 };
    int64_t t0 = tlr_mono_ms();
    int rc = tlr_req_call(c, &req.base, &tailor__v1__ping_response__descriptor, 0, &reply, &st);
    int64_t took = tlr_mono_ms() - t0;
    pthread_join(th, NULL);
    printf("call returned %s after %lld ms: %s\n", tlr_errname(rc), (long long)took,
           st.message);
    assert_int_equal(rc, TLR_E_CANCELED);
    assert_null(reply);
    assert_true(took < 5000);
    assert_true(tlr_shutdown_requested());

    tlr_req_client_free(c);
    nng_close(rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_call_canceled_by_pending_sigterm),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nng_fini();
    return rc;
}
