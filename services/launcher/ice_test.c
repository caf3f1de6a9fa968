/* ice_test.c - the ICE cache: marking, expiry after the TTL, merging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "ice.h"

#define OD TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND
#define SPOT TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT

static int64_t fake_now;
static int64_t now_fn(void *arg) { (void)arg; return fake_now; }
static const tlr_clock clk = { now_fn, now_fn, NULL };

static void test_mark_and_expire(void **state)
{
    (void)state;
    fake_now = 1000000;
    lc_ice *c;
    lc_ice_create(&clk, 0, &c);
    lc_ice_mark(c, "m5.large", "us-east-1a", SPOT, "InsufficientInstanceCapacity");
    struct { int64_t at; const char *type, *zone; Tailor__V1__CapacityType ct; bool want; } cases[] = {
        { 1000000, "m5.large", "us-east-1a", SPOT, true },
        { 1000000, "m5.large", "us-east-1b", SPOT, false },   /* other zone */
        { 1000000, "m5.large", "us-east-1a", OD, false },     /* other market */
        { 1000000, "c5.large", "us-east-1a", SPOT, false },
        { 1000000 + LC_ICE_TTL_MS - 1, "m5.large", "us-east-1a", SPOT, true },
        { 1000000 + LC_ICE_TTL_MS, "m5.large", "us-east-1a", SPOT, false },  /* expired */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fake_now = cases[i].at;
        bool got = lc_ice_unavailable(c, cases[i].type, cases[i].zone, cases[i].ct);
        if (got != cases[i].want)
            fail_msg("case %zu %s/%s at +%lld: got %d want %d", i, cases[i].type, cases[i].zone,
                     (long long)(cases[i].at - 1000000), got, cases[i].want);
    }
    assert_int_equal(lc_ice_count(c), 0);
    lc_ice_free(c);
}

static void test_remark_extends_and_list(void **state)
{
    (void)state;
    fake_now = 0;
    lc_ice *c;
    lc_ice_create(&clk, 1000, &c);
    lc_ice_mark(c, "m5.large", "us-east-1a", OD, "InsufficientInstanceCapacity");
    fake_now = 600;
    lc_ice_mark(c, "m5.large", "us-east-1a", OD, "InsufficientInstanceCapacity");
    fake_now = 1200;   /* past the first deadline, before the second */
    assert_true(lc_ice_unavailable(c, "m5.large", "us-east-1a", OD));
    Tailor__V1__OfferingUnavailable **v;
    size_t n;
    lc_ice_list(c, &v, &n);
    assert_int_equal(n, 1);
    assert_string_equal(v[0]->instance_type, "m5.large");
    assert_int_equal(v[0]->until_unix_ms, 1600);
    assert_string_equal(v[0]->reason, "InsufficientInstanceCapacity");
    lc_ice_list_free(v, n);
    lc_ice_free(c);
}

static void test_merge(void **state)
{
    (void)state;
    fake_now = 5000;
    lc_ice *c;
    lc_ice_create(&clk, 0, &c);
    Tailor__V1__OfferingUnavailable u = TAILOR__V1__OFFERING_UNAVAILABLE__INIT;
    u.instance_type = "c5.large";
    u.zone = "";               /* no zone: every zone of the type */
    u.capacity_type = SPOT;
    u.until_unix_ms = 9000;
    lc_ice_merge(c, &u);
    u.instance_type = "r5.large";
    u.until_unix_ms = 4000;    /* already expired: ignored */
    lc_ice_merge(c, &u);
    assert_true(lc_ice_unavailable(c, "c5.large", "us-east-1c", SPOT));
    assert_false(lc_ice_unavailable(c, "r5.large", "us-east-1c", SPOT));
    assert_int_equal(lc_ice_count(c), 1);
    fake_now = 9000;
    assert_false(lc_ice_unavailable(c, "c5.large", "us-east-1c", SPOT));
    /* A caller's far deadline (a year) lasts the cache's own TTL only. */
    u.instance_type = "m5.large";
    u.until_unix_ms = fake_now + 365LL * 24 * 3600 * 1000;
    lc_ice_merge(c, &u);
    fake_now += LC_ICE_TTL_MS - 1;
    assert_true(lc_ice_unavailable(c, "m5.large", "us-east-1a", SPOT));
    fake_now += 1;
    assert_false(lc_ice_unavailable(c, "m5.large", "us-east-1a", SPOT));
    lc_ice_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mark_and_expire),
        cmocka_unit_test(test_remark_extends_and_list),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
