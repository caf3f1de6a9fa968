/* report_test.c - what users see about objects the watcher cannot use as
 * written: NodePools fed through the cache (real kubeobj conversion) with
 * a recording fake for the Event and status writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cache.h"
#include "report.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define NP_KIND TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODEPOOL
#define NC_KIND TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE_CLASS

/* A NodePool: name, uid, generation, resourceVersion, extra spec fields,
 * template labels, status conditions (JSON array text). */
static json_object *nodepool(const char *name, int gen, const char *rv, const char *disruption,
                             const char *labels, const char *conds)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"%s\","
             "\"uid\":\"uid-%s\",\"generation\":%d,\"resourceVersion\":\"%s\"},\"spec\":{%s%s"
             "\"template\":{\"metadata\":{\"labels\":{%s}},\"spec\":{\"nodeClassRef\":{\"group\":"
             "\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
             "\"requirements\":[]}}},\"status\":{\"conditions\":%s}}",
             name, name, gen, rv, disruption ? disruption : "", disruption ? "," : "",
             labels ? labels : "", conds ? conds : "[]");
    json_object *o = json_tokener_parse(buf);
    assert_non_null(o);
    return o;
}

#define BALANCED "\"disruption\":{\"consolidationPolicy\":\"Balanced\",\"consolidateAfter\":\"1m\"}"
#define RESTRICTED "\"karpenter.sh/team\":\"a\""
#define OTHER_COND "{\"type\":\"NodeClassReady\",\"status\":\"True\",\"reason\":\"NodeClassReady\"," \
                   "\"message\":\"\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}"

typedef struct recorder {
    char kind[32][64], api[32][64], name[32][64], uid[32][64], type[32][16], reason[32][64];
    char message[32][512];
    int nev;
    char res[8][64], obj[8][64], patch[8][4096];
    int npatch;
} recorder;

static int rec_event(void *arg, const tlr_kube_event_spec *e)
{
    recorder *r = arg;
    assert_true(r->nev < 32);
    int i = r->nev++;
    snprintf(r->kind[i], 64, "%s", e->kind);
    snprintf(r->api[i], 64, "%s", e->api_version);
    snprintf(r->name[i], 64, "%s", e->name);
    snprintf(r->uid[i], 64, "%s", e->uid ? e->uid : "");
    snprintf(r->type[i], 16, "%s", e->type);
    snprintf(r->reason[i], 64, "%s", e->reason);
    snprintf(r->message[i], 512, "%s", e->message);
    return TLR_OK;
}

static int rec_status(void *arg, const tlr_kube_res *res, const char *name, const char *patch)
{
    recorder *r = arg;
    assert_true(r->npatch < 8);
    int i = r->npatch++;
    snprintf(r->res[i], 64, "%s", res->plural);
    snprintf(r->obj[i], 64, "%s", name);
    snprintf(r->patch[i], 4096, "%s", patch);
    return TLR_OK;
}

typedef struct fixture {
    recorder rec;
    watcher_report *rep;
    watcher_cache *cache;
} fixture;

static int64_t fixed_now(void)
{
    return 1780000000000;
}

static int setup(void **state)
{
    fixture *f = tlr_calloc(1, sizeof(*f));
    const watcher_report_opts ro = { .ops = { rec_event, rec_status, &f->rec }, .now_ms = fixed_now };
    watcher_report_create(&ro, &f->rep);
    watcher_cache_create(&(watcher_cache_opts){ .report = f->rep }, &f->cache);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    watcher_cache_free(f->cache);
    watcher_report_free(f->rep);
    free(f);
    return 0;
}

static int apply(fixture *f, tlr_kube_event_type type, json_object *obj)
{
    Tailor__V1__ClusterChange chg;
    bool became;
    int rc = watcher_cache_apply(f->cache, NP_KIND, type, obj, &chg, &became);
    json_object_put(obj);
    return rc;
}

/* The condition of type in the patch's status.conditions, as
 * "status/reason/message", or "" when absent. */
static const char *cond_in(const char *patch, const char *type, char *buf, size_t len)
{
    json_object *p = json_tokener_parse(patch);
    json_object *a = tlr_json_arr(p, "status.conditions");
    buf[0] = '\0';
    for (size_t i = 0; a && i < json_object_array_length(a); i++) {
        json_object *c = json_object_array_get_idx(a, i);
        if (!strcmp(tlr_json_str(c, "type"), type))
            snprintf(buf, len, "%s/%s/%s", tlr_json_str(c, "status"), tlr_json_str(c, "reason"),
                     tlr_json_str(c, "message"));
    }
    json_object_put(p);
    return buf;
}

/* A field tailor does not act on: one Warning Event on the NodePool,
 * not again on a relist or a status update, again for a new spec. */
static void test_ignored_field_once_per_generation(void **state)
{
    fixture *f = *state;
    assert_int_equal(apply(f, TLR_KUBE_ADDED, nodepool("p", 1, "10", BALANCED, NULL, NULL)), TLR_OK);
    assert_int_equal(f->rec.nev, 1);
    assert_string_equal(f->rec.kind[0], "NodePool");
    assert_string_equal(f->rec.api[0], "karpenter.sh/v1");
    assert_string_equal(f->rec.name[0], "p");
    assert_string_equal(f->rec.uid[0], "uid-p");
    assert_string_equal(f->rec.type[0], "Warning");
    assert_string_equal(f->rec.reason[0], "IgnoredField");
    assert_non_null(strstr(f->rec.message[0], "NodePool p: spec.disruption.consolidationPolicy: "
                                              "Balanced is run as WhenEmptyOrUnderutilized"));
    /* a relist, then a status-only update (same generation) */
    apply(f, TLR_KUBE_RELIST_START, NULL);
    apply(f, TLR_KUBE_ADDED, nodepool("p", 1, "10", BALANCED, NULL, NULL));
    apply(f, TLR_KUBE_RELIST_DONE, NULL);
    apply(f, TLR_KUBE_MODIFIED, nodepool("p", 1, "11", BALANCED, NULL, "[" OTHER_COND "]"));
    assert_int_equal(f->rec.nev, 1);
    /* the spec changed and still says Balanced */
    apply(f, TLR_KUBE_MODIFIED, nodepool("p", 2, "12", BALANCED, "\"team\":\"a\"", NULL));
    assert_int_equal(f->rec.nev, 2);
    assert_string_equal(f->rec.reason[1], "IgnoredField");
    assert_int_equal(f->rec.npatch, 0);
    assert_int_equal(watcher_report_invalid_count(f->rep, NP_KIND), 0);
}

/* An invalid NodePool: a FailedValidation Event, ValidationSucceeded and
 * Ready False under its resourceVersion, its other conditions kept; our
 * own patch coming back writes nothing more; the cache keeps serving. */
static void test_invalid_nodepool(void **state)
{
    fixture *f = *state;
    apply(f, TLR_KUBE_ADDED, nodepool("good", 1, "5", NULL, NULL, NULL));
    assert_int_equal(apply(f, TLR_KUBE_ADDED, nodepool("bad", 3, "20", NULL, RESTRICTED, "[" OTHER_COND "]")),
                     TLR_E_PARSE);
    assert_int_equal(watcher_cache_count(f->cache, NP_KIND), 1);
    assert_true(watcher_cache_has(f->cache, NP_KIND, "good"));
    assert_int_equal(watcher_report_invalid_count(f->rep, NP_KIND), 1);
    const char *why = "NodePool bad: spec.template.metadata.labels[karpenter.sh/team]: "
                      "label domain \"karpenter.sh\" is restricted";
    assert_int_equal(f->rec.nev, 1);
    assert_string_equal(f->rec.reason[0], "FailedValidation");
    assert_string_equal(f->rec.name[0], "bad");
    assert_string_equal(f->rec.message[0], why);
    assert_int_equal(f->rec.npatch, 1);
    assert_string_equal(f->rec.res[0], "nodepools");
    assert_string_equal(f->rec.obj[0], "bad");
    char c[700], want[700];
    snprintf(want, sizeof(want), "False/NodePoolValidationFailed/%s", why);
    assert_string_equal(cond_in(f->rec.patch[0], "ValidationSucceeded", c, sizeof(c)), want);
    assert_string_equal(cond_in(f->rec.patch[0], "Ready", c, sizeof(c)),
                        "False/UnhealthyDependents/ValidationSucceeded=False");
    assert_string_equal(cond_in(f->rec.patch[0], "NodeClassReady", c, sizeof(c)), "True/NodeClassReady/");
    json_object *p = json_tokener_parse(f->rec.patch[0]);
    assert_string_equal(tlr_json_str(p, "metadata.resourceVersion"), "20");
    json_object_put(p);

    /* Our patch comes back as a MODIFIED with the conditions set. */
    char conds[2048];
    json_object *pa = json_tokener_parse(f->rec.patch[0]);
    snprintf(conds, sizeof(conds), "%s",
             json_object_to_json_string_ext(tlr_json_arr(pa, "status.conditions"), JSON_C_TO_STRING_PLAIN));
    json_object_put(pa);
    apply(f, TLR_KUBE_MODIFIED, nodepool("bad", 3, "21", NULL, RESTRICTED, conds));
    /* and a relist sees it again */
    apply(f, TLR_KUBE_RELIST_START, NULL);
    apply(f, TLR_KUBE_ADDED, nodepool("good", 1, "5", NULL, NULL, NULL));
    apply(f, TLR_KUBE_ADDED, nodepool("bad", 3, "21", NULL, RESTRICTED, conds));
    apply(f, TLR_KUBE_RELIST_DONE, NULL);
    assert_int_equal(f->rec.nev, 1);
    assert_int_equal(f->rec.npatch, 1);
    assert_int_equal(watcher_report_invalid_count(f->rep, NP_KIND), 1);

    /* Fixed: out of the error state, into the cache, and the watcher
     * turns its own ValidationSucceeded=False back to True. */
    assert_int_equal(apply(f, TLR_KUBE_MODIFIED, nodepool("bad", 4, "22", NULL, NULL, conds)), TLR_OK);
    assert_int_equal(watcher_report_invalid_count(f->rep, NP_KIND), 0);
    assert_true(watcher_cache_has(f->cache, NP_KIND, "bad"));
    assert_int_equal(f->rec.npatch, 2);
    assert_string_equal(cond_in(f->rec.patch[1], "ValidationSucceeded", c, sizeof(c)),
                        "True/ValidationSucceeded/");
    assert_string_equal(cond_in(f->rec.patch[1], "NodeClassReady", c, sizeof(c)), "True/NodeClassReady/");
    assert_int_equal(f->rec.nev, 1);
}

/* A ValidationSucceeded=False another writer set (the launcher, say) is
 * not the watcher's to clear. */
static void test_valid_leaves_others_false_alone(void **state)
{
    fixture *f = *state;
    apply(f, TLR_KUBE_ADDED,
          nodepool("p", 1, "5", NULL, NULL,
                   "[{\"type\":\"ValidationSucceeded\",\"status\":\"False\",\"reason\":\"Other\","
                   "\"message\":\"m\"}]"));
    assert_int_equal(f->rec.npatch, 0);
    assert_int_equal(f->rec.nev, 0);
}

/* An invalid object deleted, or gone by the next relist, leaves the
 * error state. */
static void test_deleted_and_relisted_away(void **state)
{
    fixture *f = *state;
    apply(f, TLR_KUBE_ADDED, nodepool("a", 1, "5", NULL, RESTRICTED, NULL));
    apply(f, TLR_KUBE_ADDED, nodepool("b", 1, "6", NULL, RESTRICTED, NULL));
    assert_int_equal(watcher_report_invalid_count(f->rep, NP_KIND), 2);
    apply(f, TLR_KUBE_DELETED, nodepool("a", 1, "7", NULL, RESTRICTED, NULL));
    assert_int_equal(watcher_report_invalid_count(f->rep, NP_KIND), 1);
    apply(f, TLR_KUBE_RELIST_START, NULL);
    apply(f, TLR_KUBE_RELIST_DONE, NULL);
    assert_int_equal(watcher_report_invalid_count(f->rep, NP_KIND), 0);
    /* b recreated with the same spec is said again: another object */
    apply(f, TLR_KUBE_ADDED, nodepool("b", 1, "8", NULL, RESTRICTED, NULL));
    assert_int_equal(f->rec.nev, 3);
}

/* An EC2NodeClass: its own apiVersion and reason. */
static void test_invalid_nodeclass(void **state)
{
    fixture *f = *state;
    json_object *o = json_tokener_parse(
        "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"nc\","
        "\"uid\":\"u1\",\"generation\":1,\"resourceVersion\":\"3\"},\"spec\":{\"tags\":{\"\":\"x\"}}}");
    Tailor__V1__ClusterChange chg;
    bool became;
    assert_int_equal(watcher_cache_apply(f->cache, NC_KIND, TLR_KUBE_ADDED, o, &chg, &became), TLR_E_PARSE);
    json_object_put(o);
    assert_int_equal(f->rec.nev, 1);
    assert_string_equal(f->rec.kind[0], "EC2NodeClass");
    assert_string_equal(f->rec.api[0], "karpenter.k8s.aws/v1");
    assert_int_equal(f->rec.npatch, 1);
    assert_string_equal(f->rec.res[0], "ec2nodeclasses");
    char c[700];
    assert_non_null(strstr(cond_in(f->rec.patch[0], "ValidationSucceeded", c, sizeof(c)),
                           "False/NodeClassValidationFailed/EC2NodeClass nc: "));
    assert_int_equal(watcher_report_invalid_count(f->rep, NC_KIND), 1);
}

/* A pending pod whose cpu request is a quantity the API server accepts
 * but tailor cannot use (1e308 cores): one FailedValidation Event on the
 * Pod naming the field, so `kubectl describe pod` says why it stays
 * Pending; a relist of the same pod says nothing again. */
static void test_invalid_pod(void **state)
{
    fixture *f = *state;
    const char *text =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"huge\",\"namespace\":"
        "\"shop\",\"uid\":\"pu1\",\"generation\":1,\"resourceVersion\":\"9\"},\"spec\":{"
        "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"requests\":"
        "{\"cpu\":\"1e308\"}}}]},\"status\":{\"phase\":\"Pending\"}}";
    Tailor__V1__ClusterChange chg;
    bool became;
    for (int i = 0; i < 2; i++) {
        json_object *o = json_tokener_parse(text);
        assert_int_equal(watcher_cache_apply(f->cache, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD,
                                             i ? TLR_KUBE_MODIFIED : TLR_KUBE_ADDED, o, &chg, &became),
                         TLR_E_PARSE);
        json_object_put(o);
    }
    assert_int_equal(f->rec.nev, 1);
    assert_string_equal(f->rec.kind[0], "Pod");
    assert_string_equal(f->rec.api[0], "v1");
    assert_string_equal(f->rec.name[0], "huge");
    assert_string_equal(f->rec.uid[0], "pu1");
    assert_string_equal(f->rec.type[0], "Warning");
    assert_string_equal(f->rec.reason[0], "FailedValidation");
    if (!strstr(f->rec.message[0], "spec.containers[0].resources.requests.cpu"))
        fail_msg("got message %s, want one naming spec.containers[0].resources.requests.cpu",
                 f->rec.message[0]);
    assert_int_equal(f->rec.npatch, 0);   /* a Pod has no validation condition */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ignored_field_once_per_generation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_nodepool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_valid_leaves_others_false_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_and_relisted_away, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_nodeclass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_pod, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
