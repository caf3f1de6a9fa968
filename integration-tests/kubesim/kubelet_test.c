/* kubelet_test.c - the kubelet simulator on a real ks_store with a
 * scripted fake EC2 and an injected clock: boot delay, which instances
 * count, the Node it writes (name, providerID, labels, capacity, Ready),
 * NodeClaim labels/taints/startup taints, removal when the instance goes,
 * and doing nothing when EC2 cannot be read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ks_kubelet.h"
#include "ks_store.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

/* --- the fake cloud ----------------------------------------------------- */

typedef struct fake_inst {
    const char *id, *type, *state, *zone, *dns, *ip;
    bool spot;
    int64_t launch_ms;
    const char *tags[8];   /* key, value, key, value, ..., NULL */
} fake_inst;

typedef struct fake_ec2 {
    fake_inst inst[8];
    int n;
    int fail;              /* return this error instead */
    int calls;
    char last_cluster[64];
} fake_ec2;

static int fake_describe(void *arg, const char *cluster, tlr_ec2_instances *out)
{
    fake_ec2 *f = arg;

    f->calls++;
    snprintf(f->last_cluster, sizeof(f->last_cluster), "%s", cluster);
    if (f->fail != TLR_OK)
        return f->fail;
    out->v = tlr_calloc((size_t)f->n + 1, sizeof(*out->v));
    out->n = (size_t)f->n;
    for (int i = 0; i < f->n; i++) {
        const fake_inst *s = &f->inst[i];
        tlr_ec2_instance *d = &out->v[i];
        size_t nt = 0;

        d->id = tlr_strdup(s->id);
        d->type = tlr_strdup(s->type);
        d->state = tlr_strdup(s->state);
        d->zone = tlr_strdup(s->zone);
        d->private_dns = tlr_strdup(s->dns ? s->dns : "");
        d->private_ip = tlr_strdup(s->ip ? s->ip : "");
        d->image_id = tlr_strdup("ami-1");
        d->subnet_id = tlr_strdup("");
        d->spot = s->spot;
        d->launch_ms = s->launch_ms;
        while (s->tags[2 * nt] != NULL)
            nt++;
        d->tags = tlr_calloc(nt + 1, sizeof(*d->tags));
        for (size_t t = 0; t < nt; t++) {
            d->tags[t].key = tlr_strdup(s->tags[2 * t]);
            d->tags[t].value = tlr_strdup(s->tags[2 * t + 1]);
        }
        d->ntags = nt;
    }
    return TLR_OK;
}

static int64_t now_ms;
static int64_t fake_clock(void *arg)
{
    (void)arg;
    return now_ms;
}

static const char catalog_json[] =
    "[{\"name\":\"m5.large\",\"family\":\"m5\",\"category\":\"m\",\"generation\":5,"
    "\"size\":\"large\",\"arch\":\"amd64\",\"os\":\"linux\",\"vcpu\":2,\"memory_mib\":8192,"
    "\"max_pods\":29,\"ephemeral_storage_gib\":17,\"allocatable_cpu_millicores\":1930,"
    "\"allocatable_memory_mib\":7134,\"od_price_usd_hr\":{\"us-east-1\":0.096}},"
    "{\"name\":\"g4dn.xlarge\",\"family\":\"g4dn\",\"category\":\"g\",\"generation\":4,"
    "\"size\":\"xlarge\",\"arch\":\"amd64\",\"os\":\"linux\",\"vcpu\":4,\"memory_mib\":16384,"
    "\"gpu_count\":1,\"max_pods\":29,\"ephemeral_storage_gib\":17,"
    "\"allocatable_cpu_millicores\":3920,\"allocatable_memory_mib\":14162,\"nvidia_gpu\":1,"
    "\"od_price_usd_hr\":{\"us-east-1\":0.526}},"
    "{\"name\":\"m6g.large\",\"family\":\"m6g\",\"category\":\"m\",\"generation\":6,"
    "\"size\":\"large\",\"arch\":\"arm64\",\"os\":\"linux\",\"vcpu\":2,\"memory_mib\":8192,"
    "\"max_pods\":29,\"allocatable_cpu_millicores\":1930,\"allocatable_memory_mib\":7134,"
    "\"od_price_usd_hr\":{\"us-east-1\":0.077}}]";

typedef struct fixture {
    ks_store *s;
    fake_ec2 ec2;
    Tailor__V1__Catalog *cat;
    ks_kubelet *k;
    tlr_clock clk;
} fixture;

static int setup(void **state)
{
    fixture *fx = tlr_calloc(1, sizeof(*fx));
    char err[128];

    now_ms = 1796223845000LL;   /* wall and monotonic move together here */
    fx->clk = (tlr_clock){ fake_clock, fake_clock, NULL };
    assert_int_equal(ks_store_create(NULL, &fx->s), TLR_OK);
    assert_int_equal(tlr_catalog_from_json(catalog_json, strlen(catalog_json), NULL, &fx->cat,
                                           err, sizeof(err)), TLR_OK);
    assert_int_equal(ks_kubelet_create(fx->s, &(ks_kubelet_opts){
                                           .cluster = "demo", .region = "us-east-1",
                                           .boot_delay_ms = 2000, .startup_taint_delay_ms = 1000,
                                           .clock = &fx->clk, .catalog = fx->cat },
                                       &(ks_kubelet_ec2_ops){ fake_describe, &fx->ec2 }, &fx->k),
                     TLR_OK);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;

    ks_kubelet_free(fx->k);
    ks_store_free(fx->s);
    tlr_catalog_free(fx->cat);
    free(fx);
    return 0;
}

static json_object *node(fixture *fx, const char *name)
{
    json_object *o = NULL;

    if (ks_store_get_json(fx->s, KS_NODE, NULL, name, &o, NULL) != TLR_OK)
        return NULL;
    return o;
}

static void add_inst(fixture *fx, fake_inst in)
{
    fx->ec2.inst[fx->ec2.n++] = in;
}

#define OWNED "kubernetes.io/cluster/demo", "owned"

static void expect(const char *what, ks_kubelet_stats got, ks_kubelet_stats want, int *failures)
{
    if (memcmp(&got, &want, sizeof(got)) != 0) {
        printf("FAIL %s: got {instances %d registered %d removed %d untainted %d waiting %d}, "
               "want {%d %d %d %d %d}\n", what, got.instances, got.registered, got.removed,
               got.untainted, got.waiting, want.instances, want.registered, want.removed,
               want.untainted, want.waiting);
        (*failures)++;
    }
}

/* Boot delay, the Node's shape, removal on termination. */
static void test_lifecycle(void **state)
{
    fixture *fx = *state;
    ks_kubelet_stats st;
    json_object *n;
    int failures = 0;

    add_inst(fx, (fake_inst){ "i-01", "m5.large", "running", "us-east-1a",
                              "ip-10-0-1-7.ec2.internal", "10.0.1.7", true, now_ms,
                              { OWNED, "karpenter.sh/nodepool", "default",
                                "karpenter.k8s.aws/ec2nodeclass", "default", NULL } });
    assert_int_equal(ks_kubelet_pass(fx->k, &st), TLR_OK);
    expect("just launched", st, (ks_kubelet_stats){ .instances = 1, .waiting = 1 }, &failures);
    assert_null(node(fx, "ip-10-0-1-7.ec2.internal"));
    assert_string_equal(fx->ec2.last_cluster, "demo");

    now_ms += 1999;
    ks_kubelet_pass(fx->k, &st);
    expect("1.999s later", st, (ks_kubelet_stats){ .instances = 1, .waiting = 1 }, &failures);
    now_ms += 1;
    ks_kubelet_pass(fx->k, &st);
    expect("boot delay over", st, (ks_kubelet_stats){ .instances = 1, .registered = 1 }, &failures);
    ks_kubelet_pass(fx->k, &st);
    expect("steady", st, (ks_kubelet_stats){ .instances = 1 }, &failures);
    assert_int_equal(failures, 0);

    n = node(fx, "ip-10-0-1-7.ec2.internal");
    assert_non_null(n);
    {
        static const struct { const char *path, *want; } t[] = {
            { "spec.providerID", "aws:///us-east-1a/i-01" },
            { "metadata.labels.kubernetes\\.io/hostname", "ip-10-0-1-7.ec2.internal" },
            { "metadata.labels.node\\.kubernetes\\.io/instance-type", "m5.large" },
            { "metadata.labels.topology\\.kubernetes\\.io/zone", "us-east-1a" },
            { "metadata.labels.topology\\.kubernetes\\.io/region", "us-east-1" },
            { "metadata.labels.kubernetes\\.io/arch", "amd64" },
            { "metadata.labels.kubernetes\\.io/os", "linux" },
            { "metadata.labels.karpenter\\.sh/capacity-type", "spot" },
            { "metadata.labels.karpenter\\.sh/nodepool", "default" },
            { "metadata.labels.karpenter\\.k8s\\.aws/ec2nodeclass", "default" },
            { "metadata.labels.karpenter\\.k8s\\.aws/instance-family", "m5" },
            { "status.capacity.cpu", "2" },
            { "status.capacity.memory", "8Gi" },
            { "status.capacity.pods", "29" },
            { "status.allocatable.cpu", "1930m" },
            { "status.allocatable.memory", "7134Mi" },
            { "status.allocatable.ephemeral-storage", "17Gi" },
            { "status.conditions.0.type", "Ready" },
            { "status.conditions.0.status", "True" },
            { "status.addresses.0.address", "10.0.1.7" },
            { "status.nodeInfo.kubeletVersion", "v1.33.0-kubesim" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
            const char *got = tlr_json_str(n, t[i].path);

            if (got == NULL || strcmp(got, t[i].want) != 0) {
                printf("FAIL node %s: got %s, want %s\n", t[i].path, got ? got : "(absent)",
                       t[i].want);
                failures++;
            }
        }
    }
    assert_null(tlr_json_get(n, "spec.taints"));
    json_object_put(n);
    assert_int_equal(failures, 0);

    /* Terminated: the Node goes. */
    fx->ec2.inst[0].state = "shutting-down";
    ks_kubelet_pass(fx->k, &st);
    expect("terminating", st, (ks_kubelet_stats){ .removed = 1 }, &failures);
    assert_null(node(fx, "ip-10-0-1-7.ec2.internal"));
    ks_kubelet_pass(fx->k, &st);
    expect("after removal", st, (ks_kubelet_stats){ 0 }, &failures);
    assert_int_equal(failures, 0);
    assert_int_equal(fx->ec2.calls, 6);
}

/* Which instances count, and what happens to Nodes that are not ours. */
static void test_selection(void **state)
{
    fixture *fx = *state;
    ks_kubelet_stats st;
    json_object *n;
    int failures = 0;
    int64_t old = now_ms - 3600 * 1000;   /* launched an hour ago: no wait */

    add_inst(fx, (fake_inst){ "i-owned", "m6g.large", "running", "us-west-2b", "", "", false,
                              old, { OWNED, NULL } });
    add_inst(fx, (fake_inst){ "i-pool", "g4dn.xlarge", "running", "us-west-2c",
                              "ip-10-0-2-1.ec2.internal", "10.0.2.1", false, old,
                              { "karpenter.sh/nodepool", "gpu", NULL } });
    add_inst(fx, (fake_inst){ "i-shared", "m5.large", "running", "us-west-2a", "x", "", false,
                              old, { "kubernetes.io/cluster/demo", "shared", NULL } });
    add_inst(fx, (fake_inst){ "i-other", "m5.large", "running", "us-west-2a", "y", "", false,
                              old, { "kubernetes.io/cluster/other", "owned", NULL } });
    add_inst(fx, (fake_inst){ "i-pending", "m5.large", "pending", "us-west-2a", "z", "", false,
                              old, { OWNED, NULL } });
    add_inst(fx, (fake_inst){ "i-unknown", "zz9.huge", "running", "us-west-2a", "", "", false,
                              old, { OWNED, NULL } });
    /* An ASG instance of an EKS node group: its Node carries the group. */
    add_inst(fx, (fake_inst){ "i-asg", "m5.large", "running", "us-west-2a", "asg-node", "", false,
                              old, { OWNED, "eks:nodegroup-name", "legacy-m5",
                                     "aws:autoscaling:groupName", "legacy-m5", NULL } });
    assert_int_equal(ks_store_create_text(fx->s, KS_NODE, NULL,
                                          "{\"metadata\":{\"name\":\"static-node\"}}", NULL, NULL),
                     TLR_OK);
    ks_kubelet_pass(fx->k, &st);
    expect("selection", st, (ks_kubelet_stats){ .instances = 5, .registered = 4 }, &failures);
    assert_int_equal(failures, 0);
    n = node(fx, "asg-node");
    assert_non_null(n);
    assert_string_equal(tlr_json_str(n, "metadata.labels.eks\\.amazonaws\\.com/nodegroup"),
                        "legacy-m5");
    assert_null(tlr_json_str(n, "metadata.labels.karpenter\\.sh/nodepool"));
    json_object_put(n);

    /* No private DNS name: named by the instance id; arm64 from the catalog;
     * region from the option, not the zone. */
    n = node(fx, "i-owned");
    assert_non_null(n);
    assert_null(tlr_json_str(n, "metadata.labels.eks\\.amazonaws\\.com/nodegroup"));
    assert_string_equal(tlr_json_str(n, "metadata.labels.kubernetes\\.io/arch"), "arm64");
    assert_string_equal(tlr_json_str(n, "metadata.labels.karpenter\\.sh/capacity-type"),
                        "on-demand");
    json_object_put(n);
    n = node(fx, "ip-10-0-2-1.ec2.internal");
    assert_non_null(n);
    assert_string_equal(tlr_json_str(n, "status.capacity.nvidia\\.com/gpu"), "1");
    json_object_put(n);
    /* A type the catalog lacks still gets a usable Node. */
    n = node(fx, "i-unknown");
    assert_non_null(n);
    assert_string_equal(tlr_json_str(n, "status.allocatable.pods"), "110");
    json_object_put(n);
    assert_null(node(fx, "x"));
    assert_null(node(fx, "y"));
    assert_null(node(fx, "z"));

    /* EC2 unreadable: nothing changes, the error is returned. */
    fx->ec2.fail = TLR_E_AUTH;
    assert_int_equal(ks_kubelet_pass(fx->k, &st), TLR_E_AUTH);
    assert_int_equal(ks_store_count(fx->s, KS_NODE), 5);
    /* EC2 says nothing is running: our Nodes go, the static one stays. */
    fx->ec2.fail = TLR_OK;
    fx->ec2.n = 0;
    ks_kubelet_pass(fx->k, &st);
    expect("all gone", st, (ks_kubelet_stats){ .removed = 4 }, &failures);
    assert_int_equal(ks_store_count(fx->s, KS_NODE), 1);
    n = node(fx, "static-node");
    assert_non_null(n);
    json_object_put(n);
    assert_int_equal(failures, 0);
}

static const char claim_by_pid[] =
    "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"gpu-abc\","
    "\"labels\":{\"karpenter.sh/nodepool\":\"gpu\",\"team\":\"ml\"}},"
    "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"}],"
    "\"startupTaints\":[{\"key\":\"node.cilium.io/agent-not-ready\",\"value\":\"true\","
    "\"effect\":\"NoExecute\"}],\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
    "\"kind\":\"EC2NodeClass\",\"name\":\"default\"}},"
    "\"status\":{\"providerID\":\"aws:///us-east-1b/i-c1\"}}";
static const char claim_by_tag[] =
    "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"default-xyz\","
    "\"labels\":{\"env\":\"prod\"}},\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
    "\"kind\":\"EC2NodeClass\",\"name\":\"default\"}}}";

/* A NodeClaim's labels, taints and startup taints reach the Node. */
static void test_nodeclaims(void **state)
{
    fixture *fx = *state;
    ks_kubelet_stats st;
    json_object *n, *taints;
    int failures = 0;
    int64_t old = now_ms - 60 * 1000;

    assert_int_equal(ks_store_create_text(fx->s, KS_NODECLAIM, NULL, claim_by_pid, NULL, NULL),
                     TLR_OK);
    assert_int_equal(ks_store_create_text(fx->s, KS_NODECLAIM, NULL, claim_by_tag, NULL, NULL),
                     TLR_OK);
    add_inst(fx, (fake_inst){ "i-c1", "g4dn.xlarge", "running", "us-east-1b", "ip-c1", "", false,
                              old, { "karpenter.sh/nodepool", "gpu", NULL } });
    add_inst(fx, (fake_inst){ "i-c2", "m5.large", "running", "us-east-1a", "ip-c2", "", false,
                              old, { OWNED, "karpenter.sh/nodeclaim", "default-xyz", NULL } });
    ks_kubelet_pass(fx->k, &st);
    expect("claims", st, (ks_kubelet_stats){ .instances = 2, .registered = 2 }, &failures);

    n = node(fx, "ip-c1");
    assert_non_null(n);
    assert_string_equal(tlr_json_str(n, "metadata.labels.team"), "ml");
    taints = tlr_json_arr(n, "spec.taints");
    assert_non_null(taints);
    assert_int_equal(json_object_array_length(taints), 2);
    json_object_put(n);
    n = node(fx, "ip-c2");
    assert_string_equal(tlr_json_str(n, "metadata.labels.env"), "prod");
    assert_null(tlr_json_get(n, "spec.taints"));
    json_object_put(n);

    /* Startup taints go after the delay; the NodeClaim's taint stays. */
    now_ms += 999;
    ks_kubelet_pass(fx->k, &st);
    expect("before taint delay", st, (ks_kubelet_stats){ .instances = 2 }, &failures);
    now_ms += 1;
    ks_kubelet_pass(fx->k, &st);
    expect("taint delay over", st, (ks_kubelet_stats){ .instances = 2, .untainted = 1 }, &failures);
    ks_kubelet_pass(fx->k, &st);
    expect("only once", st, (ks_kubelet_stats){ .instances = 2 }, &failures);
    n = node(fx, "ip-c1");
    taints = tlr_json_arr(n, "spec.taints");
    assert_non_null(taints);
    assert_int_equal(json_object_array_length(taints), 1);
    assert_string_equal(tlr_json_str(n, "spec.taints.0.key"), "nvidia.com/gpu");
    json_object_put(n);
    assert_int_equal(failures, 0);
}

/* A restarted simulator adopts the Nodes it finds instead of duplicating. */
static void test_restart_adopts(void **state)
{
    fixture *fx = *state;
    ks_kubelet *k2 = NULL;
    ks_kubelet_stats st;
    int failures = 0;

    add_inst(fx, (fake_inst){ "i-r", "m5.large", "running", "us-east-1a", "ip-r", "", false,
                              now_ms - 60000, { OWNED, NULL } });
    ks_kubelet_pass(fx->k, &st);
    expect("first", st, (ks_kubelet_stats){ .instances = 1, .registered = 1 }, &failures);
    assert_int_equal(ks_kubelet_create(fx->s, &(ks_kubelet_opts){ .cluster = "demo",
                                           .boot_delay_ms = 2000, .clock = &fx->clk,
                                           .catalog = fx->cat },
                                       &(ks_kubelet_ec2_ops){ fake_describe, &fx->ec2 }, &k2),
                     TLR_OK);
    ks_kubelet_pass(k2, &st);
    expect("restarted", st, (ks_kubelet_stats){ .instances = 1 }, &failures);
    assert_int_equal(ks_store_count(fx->s, KS_NODE), 1);
    ks_kubelet_free(k2);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodeclaims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_adopts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
