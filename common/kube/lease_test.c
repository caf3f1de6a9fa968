/* lease_test.c - who leads: free, own, live and expired Leases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "tlr_lease.h"

static void test_decide(void **state)
{
    (void)state;
    struct { const char *holder; int64_t renew, now; tlr_lease_action want; } cases[] = {
        { NULL, 0, 1000, TLR_LEASE_ACQUIRE },
        { "", 0, 1000, TLR_LEASE_ACQUIRE },
        { "me", 1000, 1000 + 60000, TLR_LEASE_RENEW },       /* ours: renew even if late */
        { "other", 1000, 1000 + 14999, TLR_LEASE_FOLLOW },   /* live */
        { "other", 1000, 1000 + 15000, TLR_LEASE_ACQUIRE },  /* expired */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tlr_lease_action got = tlr_lease_decide(cases[i].holder, cases[i].renew, 15, "me",
                                              cases[i].now);
        if (got != cases[i].want)
            fail_msg("case %zu (%s): got %d want %d", i, cases[i].holder ? cases[i].holder : "-",
                     got, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_decide) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
