/* sub_limit_test.c - a subscriber holds each topic to its own limit
 * (tlr_sub_opts.topic_max): a message over its topic's limit is dropped
 * and counted, the same size on a topic without one is delivered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tailor/v1/common.pb-c.h"
#include "tlr_err.h"
#include "tlr_loop.h"
#include "tlr_pubsub.h"
#include "tlr_time.h"

typedef struct got {
    int small, big;
} got;

static void on_msg(void *arg, const char *topic, const Tailor__V1__Envelope *env)
{
    got *g = arg;
    (void)topic;
    if (env->payload.len > 1000)
        g->big++;
    else
        g->small++;
}

static void stop(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    (void)id;
    (void)arg;
    tlr_loop_stop(loop);
}

static void run_for(tlr_loop *loop, int ms)
{
    tlr_loop_add_timer(loop, ms, stop, NULL);
    tlr_loop_run(loop);
}

static void test_topic_limits(void **state)
{
    (void)state;
    tlr_loop *loop = NULL;
    tlr_pub *pub = NULL;
    tlr_sub *sub = NULL;
    got g = { 0 };
    assert_int_equal(tlr_loop_create(&loop), TLR_OK);
    assert_int_equal(tlr_pub_create("inproc://sub_limit", 0, NULL, "test", &pub), TLR_OK);
    const char *urls[] = { "inproc://sub_limit" };
    const char *topics[] = { "small", "large" };
    const size_t topic_max[] = { 4096, 0 };
    const tlr_sub_opts so = { .urls = urls, .nurls = 1, .topics = topics, .ntopics = 2,
                              .fn = on_msg, .arg = &g, .topic_max = topic_max };
    assert_int_equal(tlr_sub_create(loop, &so, &sub), TLR_OK);
    /* Peers are counted by nng's pipe callbacks, not the loop (which runs
     * only once: tlr_loop_stop latches). */
    for (int i = 0; i < 200 && tlr_pub_peers(pub) == 0; i++)
        usleep(10 * 1000);
    assert_int_equal(tlr_pub_peers(pub), 1);

    char *text = malloc(8192);
    memset(text, 'x', 8191);
    text[8191] = '\0';
    Tailor__V1__Status big = TAILOR__V1__STATUS__INIT, small = TAILOR__V1__STATUS__INIT;
    big.message = text;
    small.message = (char *)"ok";
    assert_int_equal(tlr_pub_send(pub, "small", &big.base), TLR_OK);    /* over 4 KiB */
    assert_int_equal(tlr_pub_send(pub, "small", &small.base), TLR_OK);
    assert_int_equal(tlr_pub_send(pub, "large", &big.base), TLR_OK);
    run_for(loop, 300);

    tlr_sub_stats st;
    tlr_sub_stats_get(sub, &st);
    assert_int_equal(g.small, 1);
    assert_int_equal(g.big, 1);      /* only the one on "large" */
    assert_int_equal(st.received, 3);
    assert_int_equal(st.dropped, 1);
    free(text);
    tlr_sub_free(sub);
    tlr_pub_free(pub);
    tlr_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topic_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
