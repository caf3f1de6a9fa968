/* lease_test.c - who may lead: the pure Lease decision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lease.h"

static void test_decide_table(void **state)
{
    (void)state;
    static const struct {
        const char *holder;
        int64_t renew_ms, now_ms;
        ds_lease_action want;
    } t[] = {
        { NULL, 0, 1000, DS_LEASE_ACQUIRE },              /* no Lease holder */
        { "", 0, 1000, DS_LEASE_ACQUIRE },                /* released on a clean stop */
        { "me", 1000, 2000, DS_LEASE_RENEW },             /* ours */
        { "me", 1000, 99000, DS_LEASE_RENEW },            /* ours even if late */
        { "other", 1000, 15999, DS_LEASE_FOLLOW },        /* live: 15 s not yet over */
        { "other", 1000, 16000, DS_LEASE_ACQUIRE },       /* expired: take over */
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        ds_lease_action a = ds_lease_decide(t[i].holder, t[i].renew_ms, 15, "me", t[i].now_ms);
        if (a != t[i].want)
            fail_msg("case %zu: got %d, want %d", i, a, t[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_decide_table) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
