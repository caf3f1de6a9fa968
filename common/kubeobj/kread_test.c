/* kread_test.c - tlr_kread.h: a full NodeClaim and Node read field by
 * field, an empty object and wrong-typed fields read as "" / 0 / false,
 * a copy that owns its strings, and a List read item by item. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kread.h"
#include "tlr_time.h"

static json_object *parse(const char *s)
{
    json_object *o = NULL;
    char err[256];
    if (tlr_json_parse(s, strlen(s), 1 << 20, &o, err, sizeof(err)) != TLR_OK)
        fail_msg("fixture does not parse: %s\n%s", err, s);
    return o;
}

static int64_t ts(const char *s)
{
    int64_t ms = 0;
    assert_int_equal(tlr_time_parse(s, &ms), TLR_OK);
    return ms;
}

static const char claim_json[] =
    "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\","
    " \"metadata\":{\"name\":\"default-abc12\",\"uid\":\"u-1\","
    "  \"creationTimestamp\":\"2024-05-01T10:00:00Z\","
    "  \"deletionTimestamp\":\"2024-05-01T11:00:00Z\","
    "  \"finalizers\":[\"example.com/other\",\"karpenter.sh/termination\"],"
    "  \"labels\":{\"karpenter.sh/nodepool\":\"default\","
    "   \"karpenter.k8s.aws/ec2nodeclass\":\"general\","
    "   \"topology.kubernetes.io/zone\":\"us-east-1a\","
    "   \"karpenter.sh/capacity-type\":\"spot\"},"
    "  \"annotations\":{\"karpenter.sh/nodeclaim-termination-timestamp\":\"2024-05-01T11:05:00Z\"}},"
    " \"spec\":{\"terminationGracePeriod\":\"5m\"},"
    " \"status\":{\"providerID\":\"aws:///us-east-1a/i-0abc\",\"nodeName\":\"ip-10-0-0-1\","
    "  \"conditions\":["
    "   {\"type\":\"Launched\",\"status\":\"True\"},"
    "   {\"type\":\"Initialized\",\"status\":\"True\"},"
    "   {\"type\":\"Drained\",\"status\":\"False\",\"message\":\"2 pods left\"},"
    "   {\"type\":\"InstanceTerminating\",\"status\":\"Unknown\"},"
    "   {\"type\":\"DisruptionReason\",\"status\":\"True\",\"reason\":\"Underutilized\"}]}}";

static void test_claim_full(void **state)
{
    (void)state;
    json_object *o = parse(claim_json);
    tlr_kclaim c;
    tlr_kclaim_read(o, &c);
    assert_string_equal(c.name, "default-abc12");
    assert_string_equal(c.uid, "u-1");
    assert_string_equal(c.nodepool, "default");
    assert_string_equal(c.nodeclass, "general");
    assert_string_equal(c.provider_id, "aws:///us-east-1a/i-0abc");
    assert_string_equal(c.instance_id, "i-0abc");
    assert_string_equal(c.node_name, "ip-10-0-0-1");
    assert_int_equal(c.creation_ms, ts("2024-05-01T10:00:00Z"));
    assert_int_equal(c.deletion_ms, ts("2024-05-01T11:00:00Z"));
    assert_true(c.finalizer);
    assert_int_equal(c.tgp_ms, 5 * 60 * 1000);
    assert_int_equal(c.term_ts_ms, ts("2024-05-01T11:05:00Z"));
    assert_true(c.initialized);
    assert_true(c.launched);
    assert_string_equal(c.drained, "False");
    assert_string_equal(c.drained_msg, "2 pods left");
    assert_string_equal(c.terminating, "Unknown");
    assert_string_equal(c.zone, "us-east-1a");
    assert_string_equal(c.capacity_type, "spot");
    assert_string_equal(c.disruption_reason, "Underutilized");

    tlr_kclaim d;
    tlr_kclaim_copy(&c, &d);
    tlr_kclaim_clear(&c);
    assert_null(c.name);
    assert_string_equal(d.name, "default-abc12");
    assert_string_equal(d.drained_msg, "2 pods left");
    assert_int_equal(d.term_ts_ms, ts("2024-05-01T11:05:00Z"));
    tlr_kclaims l = { calloc(1, sizeof(tlr_kclaim)), 1 };
    l.v[0] = d;
    tlr_kclaims_free(&l);
    assert_null(l.v);
    assert_int_equal(l.n, 0);
    json_object_put(o);
}

static const char node_json[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\","
    " \"metadata\":{\"name\":\"ip-10-0-0-1\",\"uid\":\"u-n\",\"resourceVersion\":\"4711\","
    "  \"creationTimestamp\":\"2024-05-01T10:01:00Z\","
    "  \"deletionTimestamp\":\"2024-05-01T11:00:30Z\","
    "  \"finalizers\":[\"karpenter.sh/termination\"],"
    "  \"labels\":{\"karpenter.sh/nodepool\":\"default\","
    "   \"topology.kubernetes.io/zone\":\"us-east-1b\",\"team\":7},"
    "  \"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}},"
    " \"spec\":{\"providerID\":\"aws:///us-east-1b/i-0def\",\"unschedulable\":true,"
    "  \"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"},"
    "   {\"key\":\"dedicated\",\"value\":\"gpu\",\"effect\":\"NoExecute\"},"
    "   {\"value\":\"no key: skipped\",\"effect\":\"NoSchedule\"}]},"
    " \"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"pods\":\"110\","
    "   \"ephemeral-storage\":\"20Gi\",\"hugepages-2Mi\":\"1\",\"nvidia.com/gpu\":\"1\","
    "   \"example.com/fpga\":\"0\"},"
    "  \"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
    "   {\"type\":\"Ready\",\"status\":\"True\"}]}}";

/* The value of label k, NULL when n has none. */
static const char *label(const tlr_knode *n, const char *k)
{
    for (size_t i = 0; i < n->nlabels; i++)
        if (!strcmp(n->label_keys[i], k))
            return n->label_values[i];
    return NULL;
}

static void test_node_full(void **state)
{
    (void)state;
    json_object *o = parse(node_json);
    tlr_knode n;
    tlr_knode_read(o, &n);
    assert_string_equal(n.name, "ip-10-0-0-1");
    assert_string_equal(n.uid, "u-n");
    assert_string_equal(n.provider_id, "aws:///us-east-1b/i-0def");
    assert_string_equal(n.nodepool, "default");
    assert_string_equal(n.resource_version, "4711");
    assert_int_equal(n.creation_ms, ts("2024-05-01T10:01:00Z"));
    assert_int_equal(n.deletion_ms, ts("2024-05-01T11:00:30Z"));
    assert_true(n.finalizer);
    assert_true(n.ready);
    assert_true(n.tainted);
    assert_true(n.unschedulable);
    assert_true(n.do_not_disrupt);
    assert_string_equal(n.zone, "us-east-1b");
    assert_int_equal(n.ntaints, 2);
    assert_string_equal(n.taints[0].key, "karpenter.sh/disrupted");
    assert_string_equal(n.taints[0].value, "");
    assert_string_equal(n.taints[0].effect, "NoSchedule");
    assert_string_equal(n.taints[1].key, "dedicated");
    assert_string_equal(n.taints[1].value, "gpu");
    assert_string_equal(n.taints[1].effect, "NoExecute");
    assert_int_equal(n.nlabels, 3);
    assert_string_equal(label(&n, "karpenter.sh/nodepool"), "default");
    assert_string_equal(label(&n, "topology.kubernetes.io/zone"), "us-east-1b");
    assert_string_equal(label(&n, "team"), "");   /* not a string */
    assert_int_equal(n.nextended, 1);             /* fpga "0" is not advertised */
    assert_string_equal(n.extended[0], "nvidia.com/gpu");

    tlr_knode d;
    tlr_knode_copy(&n, &d);
    tlr_knode_clear(&n);
    assert_null(n.taints);
    assert_int_equal(n.ntaints, 0);
    assert_string_equal(d.taints[1].value, "gpu");
    assert_string_equal(d.resource_version, "4711");
    assert_string_equal(label(&d, "karpenter.sh/nodepool"), "default");
    assert_string_equal(d.extended[0], "nvidia.com/gpu");
    tlr_knodes l = { calloc(1, sizeof(tlr_knode)), 1 };
    l.v[0] = d;
    tlr_knodes_free(&l);
    assert_null(l.v);
    json_object_put(o);
}

/* The taint only counts as disrupted with NoSchedule; a Ready=False node
 * is not ready; "false" does not protect. */
static void test_node_not(void **state)
{
    (void)state;
    json_object *o = parse(
        "{\"metadata\":{\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"false\"}},"
        " \"spec\":{\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoExecute\"}]},"
        " \"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}");
    tlr_knode n;
    tlr_knode_read(o, &n);
    assert_false(n.tainted);
    assert_false(n.ready);
    assert_false(n.do_not_disrupt);
    assert_int_equal(n.ntaints, 1);
    assert_null(n.resource_version);
    tlr_knode_clear(&n);
    json_object_put(o);
}

static void assert_claim_empty(const tlr_kclaim *c)
{
    const char *const s[] = { c->name, c->uid, c->nodepool, c->nodeclass, c->provider_id,
                              c->instance_id, c->node_name, c->drained_msg, c->drained,
                              c->terminating, c->zone, c->capacity_type, c->disruption_reason };
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        if (!s[i] || s[i][0])
            fail_msg("claim string field %zu: got %s%s%s want \"\"", i, s[i] ? "\"" : "",
                     s[i] ? s[i] : "NULL", s[i] ? "\"" : "");
    }
    assert_int_equal(c->creation_ms, 0);
    assert_int_equal(c->deletion_ms, 0);
    assert_int_equal(c->tgp_ms, 0);
    assert_int_equal(c->term_ts_ms, 0);
    assert_false(c->finalizer);
    assert_false(c->initialized);
    assert_false(c->launched);
}

static void assert_node_empty(const tlr_knode *n)
{
    const char *const s[] = { n->name, n->uid, n->provider_id, n->nodepool, n->zone };
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        if (!s[i] || s[i][0])
            fail_msg("node string field %zu: got %s want \"\"", i, s[i] ? s[i] : "NULL");
    }
    assert_null(n->resource_version);
    assert_int_equal(n->creation_ms, 0);
    assert_int_equal(n->deletion_ms, 0);
    assert_false(n->finalizer);
    assert_false(n->ready);
    assert_false(n->tainted);
    assert_false(n->unschedulable);
    assert_false(n->do_not_disrupt);
    assert_int_equal(n->ntaints, 0);
    assert_int_equal(n->nlabels, 0);
    assert_int_equal(n->nextended, 0);
}

/* Empty, NULL, not an object, and every field of the wrong type: nothing
 * is read, nothing crashes. */
static void test_empty_and_wrong_types(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "{}",
        "[]",
        "\"NodeClaim\"",
        "{\"metadata\":\"x\",\"spec\":7,\"status\":[]}",
        /* parenthesized: one entry made of several literals */
        ("{\"metadata\":{\"name\":1,\"uid\":true,\"labels\":\"karpenter.sh/nodepool=default\","
        "  \"annotations\":[\"karpenter.sh/do-not-disrupt\"],\"finalizers\":\"karpenter.sh/termination\","
        "  \"creationTimestamp\":17,\"deletionTimestamp\":\"yesterday\",\"resourceVersion\":5},"
        " \"spec\":{\"providerID\":[],\"taints\":{\"key\":\"x\"},\"unschedulable\":\"true\","
        "  \"terminationGracePeriod\":300},"
        " \"status\":{\"providerID\":{},\"nodeName\":null,\"allocatable\":[\"nvidia.com/gpu\"],"
        "  \"conditions\":{\"type\":\"Ready\",\"status\":\"True\"}}}"),
        ("{\"status\":{\"conditions\":[7,\"Ready\",{\"type\":\"Ready\"},"
         "  {\"type\":\"Initialized\",\"status\":1}]}}"),
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *o = parse(cases[i]);
        tlr_kclaim c;
        tlr_knode n;
        tlr_kclaim_read(o, &c);
        tlr_knode_read(o, &n);
        print_message("case %zu: %s\n", i, cases[i]);
        assert_claim_empty(&c);
        assert_node_empty(&n);
        tlr_kclaim_clear(&c);
        tlr_knode_clear(&n);
        json_object_put(o);
    }
    tlr_kclaim c;
    tlr_knode n;
    tlr_kclaim_read(NULL, &c);
    tlr_knode_read(NULL, &n);
    assert_claim_empty(&c);
    assert_node_empty(&n);
    tlr_kclaim_clear(&c);
    tlr_knode_clear(&n);
}

/* What the services' fakes build: only some strings set.  Copy, clear and
 * free take the NULLs. */
static void test_partial_structs(void **state)
{
    (void)state;
    tlr_kclaim c = { .name = strdup("nc-1") }, cc;
    tlr_kclaim_copy(&c, &cc);
    assert_null(cc.uid);
    assert_null(cc.drained_msg);
    assert_string_equal(cc.name, "nc-1");
    tlr_kclaim_clear(&c);
    tlr_kclaim_clear(&cc);
    tlr_knode n = { .name = strdup("n1") }, nc;
    tlr_knode_copy(&n, &nc);
    assert_null(nc.taints);
    assert_null(nc.label_keys);
    tlr_knode_clear(&n);
    tlr_knode_clear(&nc);
    tlr_kclaim_clear(NULL);
    tlr_knode_clear(NULL);
    tlr_kclaims_free(NULL);
    tlr_knodes_free(NULL);
    tlr_kclaims el = { 0 };
    tlr_kclaims_free(&el);
}

/* A List read item by item: every item kept, in order, as the array
 * grows past its first sizes (4, 8, 16, 32); under ASan an overrun of
 * the growth rule would stop the test. */
static void test_list_items(void **state)
{
    (void)state;
    tlr_kclaims claims = { 0 };
    tlr_knodes nodes = { 0 };
    for (int i = 0; i < 37; i++) {
        char js[160];
        snprintf(js, sizeof(js),
                 "{\"metadata\":{\"name\":\"x-%d\"},\"spec\":{\"providerID\":"
                 "\"aws:///us-east-1a/i-%04d\"}}", i, i);
        json_object *o = parse(js);
        assert_int_equal(tlr_kclaims_add_item(&claims, o), TLR_OK);
        assert_int_equal(tlr_knodes_add_item(&nodes, o), TLR_OK);
        json_object_put(o);
    }
    assert_int_equal(claims.n, 37);
    assert_int_equal(nodes.n, 37);
    for (int i = 0; i < 37; i++) {
        char want[16];
        snprintf(want, sizeof(want), "x-%d", i);
        assert_string_equal(claims.v[i].name, want);
        assert_string_equal(nodes.v[i].name, want);
    }
    assert_string_equal(nodes.v[36].provider_id, "aws:///us-east-1a/i-0036");
    tlr_kclaims_free(&claims);
    tlr_knodes_free(&nodes);
    assert_null(claims.v);
    assert_int_equal(claims.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_full),
        cmocka_unit_test(test_node_full),
        cmocka_unit_test(test_node_not),
        cmocka_unit_test(test_empty_and_wrong_types),
        cmocka_unit_test(test_partial_structs),
        cmocka_unit_test(test_list_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
