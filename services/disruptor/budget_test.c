/* budget_test.c - cron schedules and NodePool disruption budgets: counts
 * and percentages rounded up, reasons, schedule windows, invalid budgets
 * failing closed, and what disrupting or NotReady nodes use up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "budget.h"
#include "cron.h"
#include "ds_testkit.h"
#include "tlr_err.h"
#include "tlr_time.h"

static int64_t at(const char *rfc3339)
{
    int64_t ms = 0;
    assert_int_equal(tlr_time_parse(rfc3339, &ms), TLR_OK);
    return ms;
}

static void test_cron_next_table(void **state)
{
    (void)state;
    static const struct { const char *sched, *from, *want; } t[] = {
        { "* * * * *", "2027-01-15T08:00:00Z", "2027-01-15T08:01:00Z" },
        { "* * * * *", "2027-01-15T08:00:30Z", "2027-01-15T08:01:00Z" },
        { "*/15 * * * *", "2027-01-15T08:01:00Z", "2027-01-15T08:15:00Z" },
        { "0 9 * * mon-fri", "2027-01-15T10:00:00Z", "2027-01-18T09:00:00Z" },   /* Fri -> Mon */
        { "30 2 1 * *", "2027-01-15T00:00:00Z", "2027-02-01T02:30:00Z" },
        { "@daily", "2027-12-31T23:59:00Z", "2028-01-01T00:00:00Z" },
        { "0 0 29 2 *", "2027-03-01T00:00:00Z", "2028-02-29T00:00:00Z" },       /* leap day */
        { "0 12 1 * 0", "2027-01-15T13:00:00Z", "2027-01-17T12:00:00Z" },       /* dom OR dow */
        { "0 0 * * 7", "2027-01-15T13:00:00Z", "2027-01-17T00:00:00Z" },        /* 7 = Sunday */
        { "5/20 3 * * *", "2027-01-15T03:06:00Z", "2027-01-15T03:25:00Z" },
        { "0 0 30 feb *", "2027-01-01T00:00:00Z", NULL },                       /* never */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        ds_cron c;
        char err[200];
        assert_int_equal(ds_cron_parse(t[i].sched, &c, err, sizeof(err)), TLR_OK);
        int64_t got = ds_cron_next(&c, at(t[i].from));
        int64_t want = t[i].want ? at(t[i].want) : 0;
        if (got != want) {
            char g[TLR_TIME_BUFLEN] = "never";
            if (got)
                tlr_time_format_s(got, g);
            print_message("\"%s\" after %s: got %s, want %s\n", t[i].sched, t[i].from, g,
                          t[i].want ? t[i].want : "never");
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

static void test_cron_rejects_with_field_name(void **state)
{
    (void)state;
    static const struct { const char *s, *want; } bad[] = {
        { "* * * *", "want 5 fields" },
        { "60 * * * *", "bad minute field" },
        { "* 24 * * *", "bad hour field" },
        { "* * 0 * *", "bad day of month field" },
        { "* * * foo *", "bad month field" },
        { "* * * * 8", "bad day of week field" },
        { "*/0 * * * *", "bad minute field" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ds_cron c;
        char err[200] = "";
        assert_int_equal(ds_cron_parse(bad[i].s, &c, err, sizeof(err)), TLR_E_PARSE);
        if (!strstr(err, bad[i].want))
            fail_msg("\"%s\": error \"%s\" lacks \"%s\"", bad[i].s, err, bad[i].want);
    }
}

static Tailor__V1__Budget *budget(const char *nodes, const char *sched, int64_t dur_ms,
                                  Tailor__V1__DisruptionReason reason)
{
    Tailor__V1__Budget *b = tlr_malloc(sizeof(*b));
    tailor__v1__budget__init(b);
    b->nodes = tlr_strdup(nodes);
    b->schedule = tlr_strdup(sched ? sched : "");
    b->duration_ms = dur_ms;
    if (reason) {
        b->reasons = tlr_malloc(sizeof(*b->reasons));
        b->reasons[0] = reason;
        b->n_reasons = 1;
    }
    return b;
}

static Tailor__V1__NodePool *pool_with(Tailor__V1__Budget **b, size_t n)
{
    Tailor__V1__NodePool *p = tk_pool("p", "10%");
    for (size_t i = 0; i < p->disruption->n_budgets; i++)
        protobuf_c_message_free_unpacked(&p->disruption->budgets[i]->base, NULL);
    free(p->disruption->budgets);
    p->disruption->budgets = tlr_malloc(n * sizeof(*b));
    memcpy(p->disruption->budgets, b, n * sizeof(*b));
    p->disruption->n_budgets = n;
    return p;
}

#define U TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_UNDERUTILIZED
#define E TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_EMPTY
#define D TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_DRIFTED

static void test_budget_allowed_table(void **state)
{
    (void)state;
    int64_t now = at("2027-01-15T10:30:00Z");   /* a Friday */
    struct {
        const char *name;
        Tailor__V1__Budget *b[3];
        int total;
        Tailor__V1__DisruptionReason r;
        int32_t want;
    } t[] = {
        { "10% of 25 rounds up to 3", { budget("10%", NULL, 0, 0) }, 25, U, 3 },
        { "10% of 5 still allows 1", { budget("10%", NULL, 0, 0) }, 5, D, 1 },
        { "a count", { budget("4", NULL, 0, 0) }, 100, E, 4 },
        { "the minimum of the budgets", { budget("50%", NULL, 0, 0), budget("3", NULL, 0, 0) }, 20, U, 3 },
        { "a budget for other reasons does not apply",
          { budget("0", NULL, 0, D), budget("5", NULL, 0, 0) }, 20, U, 5 },
        { "a budget for this reason applies", { budget("0", NULL, 0, D), budget("5", NULL, 0, 0) }, 20, D, 0 },
        { "a window that is open (09:00 + 2h)", { budget("0", "0 9 * * *", 2 * 3600000, 0) }, 20, U, 0 },
        { "a window that is closed (08:00 + 1h)", { budget("0", "0 8 * * *", 3600000, 0) }, 20, U, INT32_MAX },
        { "weekdays only, on a Friday", { budget("0", "0 0 * * mon-fri", 86400000, 0) }, 20, U, 0 },
        { "an invalid schedule fails closed", { budget("100%", "0 25 * * *", 3600000, D) }, 20, U, 0 },
        { "invalid nodes fail closed", { budget("lots", NULL, 0, 0) }, 20, U, 0 },
        { "100%", { budget("100%", NULL, 0, 0) }, 7, U, 7 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        size_t n = 0;
        while (n < 3 && t[i].b[n])
            n++;
        Tailor__V1__NodePool *p = pool_with(t[i].b, n);
        char why[200];
        int32_t got = ds_budget_allowed(p, t[i].total, t[i].r, now, why, sizeof(why));
        if (got != t[i].want) {
            print_message("%s: got %d, want %d (%s)\n", t[i].name, got, t[i].want, why);
            failed++;
        }
        protobuf_c_message_free_unpacked(&p->base, NULL);
    }
    assert_int_equal(failed, 0);
}

static void test_budgets_subtract_disrupting_and_not_ready(void **state)
{
    (void)state;
    Tailor__V1__SnapshotResponse *s = tk_snapshot();
    Tailor__V1__ClusterState *cs = s->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("p", "2"));
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        Tailor__V1__Node *n = tk_node(name, "p", "t.small", 2, 4, 0.1);
        if (i == 0)
            n->marked_for_deletion = true;   /* already disrupting */
        if (i == 5)
            n->initialized = false;          /* not counted at all */
        TK_PUSH(cs->nodes, cs->n_nodes, n);
    }
    ds_view *v;
    ds_view_build(s, NULL, NULL, TK_NOW, &v);
    ds_budgets b;
    ds_budgets_compute(v, &b);
    const ds_pool_budget *pb = ds_budgets_pool(&b, "p");
    assert_non_null(pb);
    assert_int_equal(pb->total, 5);
    assert_int_equal(pb->disrupting, 1);
    assert_int_equal(ds_budgets_left(&b, "p", U), 1);   /* 2 allowed - 1 disrupting */
    ds_budgets_take(&b, "p", 1);
    assert_int_equal(ds_budgets_left(&b, "p", U), 0);
    assert_int_equal(ds_budgets_left(&b, "nope", U), 0);
    ds_budgets_clear(&b);
    ds_view_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cron_next_table),
        cmocka_unit_test(test_cron_rejects_with_field_name),
        cmocka_unit_test(test_budget_allowed_table),
        cmocka_unit_test(test_budgets_subtract_disrupting_and_not_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
