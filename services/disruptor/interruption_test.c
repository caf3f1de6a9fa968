/* interruption_test.c - EventBridge messages from the queue: what each
 * kind of event parses to, and what the handler does for a spot warning
 * (replacement first, taint, deadline, delete), a rebalance (an Event
 * only), an instance tailor does not manage, junk, and a watcher that is
 * not there (the message stays for later). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ds_fake.h"
#include "interruption.h"
#include "ds_testkit.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_metrics.h"

#define EV(dt, src, detail) \
    "{\"version\":\"0\",\"id\":\"e1\",\"detail-type\":\"" dt "\",\"source\":\"" src "\"," \
    "\"account\":\"123456789012\",\"time\":\"2027-01-15T08:00:00Z\",\"region\":\"us-east-1\"," \
    "\"resources\":[],\"detail\":" detail "}"

static void test_parse_table(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int rc;
        ds_intr_kind kind;
        const char *instance, *label;
    } t[] = {
        { EV("EC2 Spot Instance Interruption Warning", "aws.ec2",
             "{\"instance-id\":\"i-0abc\",\"instance-action\":\"terminate\"}"),
          TLR_OK, DS_INTR_SPOT, "i-0abc", "spot_interrupted" },
        { EV("EC2 Instance Rebalance Recommendation", "aws.ec2", "{\"instance-id\":\"i-1\"}"), TLR_OK,
          DS_INTR_REBALANCE, "i-1", "rebalance_recommendation" },
        { EV("EC2 Instance State-change Notification", "aws.ec2",
             "{\"instance-id\":\"i-2\",\"state\":\"stopping\"}"),
          TLR_OK, DS_INTR_STATE, "i-2", "instance_stopped" },
        { EV("EC2 Instance State-change Notification", "aws.ec2",
             "{\"instance-id\":\"i-3\",\"state\":\"running\"}"),
          TLR_OK, DS_INTR_NONE, "", "unknown" },
        { EV("AWS Health Event", "aws.health",
             "{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\",\"affectedEntities\":"
             "[{\"entityValue\":\"i-4\"}]}"),
          TLR_OK, DS_INTR_SCHEDULED, "i-4", "scheduled_change" },
        { EV("AWS Health Event", "aws.health",
             "{\"service\":\"EC2\",\"eventTypeCategory\":\"issue\",\"affectedEntities\":[]}"),
          TLR_OK, DS_INTR_NONE, "", "unknown" },
        { EV("EC2 Spot Instance Interruption Warning", "aws.ec2", "{\"instance-action\":\"stop\"}"),
          TLR_E_PARSE, DS_INTR_NONE, "", NULL },
        { "{\"hello\":1}", TLR_E_PARSE, DS_INTR_NONE, "", NULL },
        { "not json", TLR_E_PARSE, DS_INTR_NONE, "", NULL },
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        ds_intr_msg m;
        char err[300] = "";
        int rc = ds_intr_parse(t[i].body, &m, err, sizeof(err));
        if (rc != t[i].rc || m.kind != t[i].kind || strcmp(m.instance, t[i].instance))
            fail_msg("case %zu: rc %d kind %d instance \"%s\" (%s)", i, rc, m.kind, m.instance, err);
        if (t[i].label)
            assert_string_equal(ds_intr_kind_name(m.kind, m.state), t[i].label);
        if (rc == TLR_OK && m.kind != DS_INTR_NONE)
            assert_int_equal(m.time_ms, 1800000000000LL);
    }
}

typedef struct fx {
    ds_fake f;
    Tailor__V1__Catalog *cat;
    ds_intr *i;
} fx;

static int setup(void **state)
{
    fx *x = tlr_calloc(1, sizeof(*x));
    ds_fake_init(&x->f);
    x->cat = tk_catalog();
    x->f.catalog = x->cat;
    x->f.snap = tk_snapshot();
    Tailor__V1__ClusterState *cs = x->f.snap->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("default", "10%"));
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    /* n1 is a spot node full of work; n2 has no room for it */
    Tailor__V1__Node *n1 = tk_node("n1", "default", "t.medium", 4, 8, 0);
    n1->capacity_type = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;
    tk_bind(n1, tk_pod("work", NULL, "work", 'r', "work-rs", 3000, TK_GIB));
    Tailor__V1__Node *n2 = tk_node("n2", "default", "t.small", 2, 4, 0);
    tk_bind(n2, tk_pod("other", NULL, "other", 'r', "other-rs", 1900, TK_GIB));
    TK_PUSH(cs->nodes, cs->n_nodes, n1);
    TK_PUSH(cs->nodes, cs->n_nodes, n2);
    TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, tk_claim_for(n1));
    TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, tk_claim_for(n2));
    ds_intr_opts o = { .clock = &x->f.clock, .kube = ds_fake_kube(&x->f),
                       .launcher = ds_fake_launcher(&x->f), .solver = ds_fake_solver(&x->f),
                       .watcher = ds_fake_watcher(&x->f), .cloud = ds_fake_cloud(&x->f),
                       .catalog = x->cat };
    ds_intr_create(&o, &x->i);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    ds_intr_free(x->i);
    ds_fake_clear(&x->f);
    protobuf_c_message_free_unpacked(&x->cat->base, NULL);
    free(x);
    return 0;
}

static size_t at(const ds_fake *f, const char *prefix)
{
    for (size_t i = 0; i < f->ncalls; i++)
        if (!strncmp(f->calls[i], prefix, strlen(prefix)))
            return i;
    fail_msg("no call \"%s\"", prefix);
    return 0;
}

static void test_spot_warning_replaces_first(void **state)
{
    fx *x = *state;
    ds_fake_add_sqs(&x->f, "m1", EV("EC2 Spot Instance Interruption Warning", "aws.ec2",
                                    "{\"instance-id\":\"i-n1\",\"instance-action\":\"terminate\"}"));
    ds_intr_stats st;
    assert_int_equal(ds_intr_pass(x->i, &st), TLR_OK);
    assert_int_equal(st.handled, 1);
    assert_int_equal(st.replacements, 1);
    /* replacement launched, then taint, deadline, delete, message gone */
    size_t l = at(&x->f, "launch "), t = at(&x->f, "taint n1 on");
    size_t a = at(&x->f, "annotate nc-n1 karpenter.sh/nodeclaim-termination-timestamp=2027-01-15T08:01:40Z");
    size_t d = at(&x->f, "delete nodeclaim nc-n1"), q = at(&x->f, "sqs delete rh-m1");
    assert_true(l < t && t < a && a < d && d < q);
    assert_non_null(strstr(x->f.calls[l], "(interruption:i-n1)"));
    assert_non_null(ds_fake_call(&x->f, "event Node n1 Warning SpotInterrupted", 0));
    assert_non_null(ds_fake_call(&x->f, "event NodeClaim nc-n1 Warning SpotInterrupted", 0));
    assert_int_equal(x->f.sqs.n, 0);
}

static void test_rebalance_is_an_event(void **state)
{
    fx *x = *state;
    ds_fake_add_sqs(&x->f, "m1", EV("EC2 Instance Rebalance Recommendation", "aws.ec2",
                                    "{\"instance-id\":\"i-n1\"}"));
    ds_intr_pass(x->i, NULL);
    assert_non_null(ds_fake_call(&x->f, "event Node n1 Normal RebalanceRecommendation", 0));
    assert_int_equal(ds_fake_count(&x->f, "taint"), 0);
    assert_int_equal(ds_fake_count(&x->f, "delete nodeclaim"), 0);
    assert_int_equal(x->f.sqs.n, 0);
}

static void test_foreign_and_junk_messages_are_dropped(void **state)
{
    fx *x = *state;
    ds_fake_add_sqs(&x->f, "m1", EV("EC2 Spot Instance Interruption Warning", "aws.ec2",
                                    "{\"instance-id\":\"i-elsewhere\"}"));
    ds_fake_add_sqs(&x->f, "m2", "garbage");
    ds_intr_stats st;
    ds_intr_pass(x->i, &st);
    assert_int_equal(st.received, 2);
    assert_int_equal(st.ignored, 1);
    assert_int_equal(ds_fake_count(&x->f, "sqs delete"), 2);
    assert_int_equal(ds_fake_count(&x->f, "delete nodeclaim"), 0);
}

static void test_without_watcher_messages_stay(void **state)
{
    fx *x = *state;
    protobuf_c_message_free_unpacked(&x->f.snap->base, NULL);
    x->f.snap = NULL;   /* the watcher does not answer */
    ds_fake_add_sqs(&x->f, "m1", EV("EC2 Spot Instance Interruption Warning", "aws.ec2",
                                    "{\"instance-id\":\"i-n1\"}"));
    ds_intr_stats st;
    ds_intr_pass(x->i, &st);
    assert_int_equal(st.failed, 1);
    assert_int_equal(x->f.sqs.n, 1);   /* comes back after its visibility timeout */
}

/* karpenter_interruption_message_queue_duration_seconds: from the event's
 * time to its handling, one observation per parsed message (an ignored
 * kind included), none for junk. */
static void test_queue_duration_metric(void **state)
{
    fx *x = *state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    ds_intr_free(x->i);
    ds_intr_opts o = { .clock = &x->f.clock, .kube = ds_fake_kube(&x->f),
                       .launcher = ds_fake_launcher(&x->f), .solver = ds_fake_solver(&x->f),
                       .watcher = ds_fake_watcher(&x->f), .cloud = ds_fake_cloud(&x->f),
                       .catalog = x->cat, .metrics = m };
    ds_intr_create(&o, &x->i);
    x->f.now_ms = TK_NOW + 7000;       /* the events' time + 7 s */
    ds_fake_add_sqs(&x->f, "m1", EV("EC2 Instance Rebalance Recommendation", "aws.ec2",
                                    "{\"instance-id\":\"i-n1\"}"));
    ds_fake_add_sqs(&x->f, "m2", EV("EC2 Spot Instance Interruption Warning", "aws.ec2",
                                    "{\"instance-id\":\"i-elsewhere\"}"));
    ds_fake_add_sqs(&x->f, "m3", "garbage");
    ds_intr_pass(x->i, NULL);
    tlr_buf b;
    tlr_buf_init(&b, 1 << 20);
    assert_int_equal(tlr_metrics_render(m, &b), TLR_OK);
    char *page = tlr_buf_take(&b);
    static const char *const want[] = {
        "karpenter_interruption_message_queue_duration_seconds_count 2\n",
        "karpenter_interruption_message_queue_duration_seconds_sum 14\n",
        "karpenter_interruption_message_queue_duration_seconds_bucket{le=\"6\"} 0\n",
        "karpenter_interruption_message_queue_duration_seconds_bucket{le=\"7\"} 2\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(page, want[i]))
            fail_msg("no line %s in:\n%s", want[i], page);
    free(page);
    ds_intr_free(x->i);
    x->i = NULL;
    tlr_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test_setup_teardown(test_spot_warning_replaces_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rebalance_is_an_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_and_junk_messages_are_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_watcher_messages_stay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_duration_metric, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
