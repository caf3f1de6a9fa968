/* pending_test.c - the pending predicate, one row per exclusion, built
 * from real Pod JSON through the same converter the watcher uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pending.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"

#define UNSCHED "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\"," \
                "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}"
#define SPEC "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]"

typedef struct row {
    const char *name;
    const char *json;
    const char *want;   /* NULL: pending; else the reason */
} row;

static const row rows[] = {
    { "unschedulable pod is pending",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"}," SPEC "}," UNSCHED "}", NULL },
    { "bound pod",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"}," SPEC ",\"nodeName\":\"n1\"}," UNSCHED "}",
      "bound to a node" },
    { "not yet tried by the scheduler",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"}," SPEC "},\"status\":{\"phase\":\"Pending\"}}",
      "not marked Unschedulable by the scheduler" },
    { "PodScheduled False for another reason",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"}," SPEC "},\"status\":{\"conditions\":[{\"type\":"
      "\"PodScheduled\",\"status\":\"False\",\"reason\":\"SchedulerError\"}]}}",
      "not marked Unschedulable by the scheduler" },
    { "owned by a DaemonSet",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\",\"ownerReferences\":[{\"kind\":\"DaemonSet\","
      "\"name\":\"ds\",\"uid\":\"u\",\"controller\":true,\"apiVersion\":\"apps/v1\"}]}," SPEC "}," UNSCHED "}",
      "owned by a DaemonSet" },
    { "owned by a ReplicaSet stays pending",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\",\"ownerReferences\":[{\"kind\":\"ReplicaSet\","
      "\"name\":\"rs\",\"uid\":\"u\",\"controller\":true,\"apiVersion\":\"apps/v1\"}]}," SPEC "}," UNSCHED "}",
      NULL },
    { "static pod",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\",\"ownerReferences\":[{\"kind\":\"Node\","
      "\"name\":\"n\",\"uid\":\"u\",\"controller\":true,\"apiVersion\":\"v1\"}]}," SPEC "}," UNSCHED "}",
      "static pod (owned by a Node)" },
    { "terminating",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},"
      SPEC "}," UNSCHED "}", "terminating" },
    { "nominated",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"}," SPEC "},\"status\":{\"nominatedNodeName\":\"n2\","
      "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}",
      "nominated to a node (preemption under way)" },
    { "failed",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"}," SPEC "},\"status\":{\"phase\":\"Failed\","
      "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}",
      "terminal" },
    { "scheduling gated",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"}," SPEC ",\"schedulingGates\":[{\"name\":\"g\"}]},"
      UNSCHED "}", "scheduling gated" },
};

static void test_pending_table(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *o = json_tokener_parse(rows[i].json);
        assert_non_null(o);
        Tailor__V1__Pod *p = NULL;
        char err[TLR_KUBEOBJ_ERRLEN];
        int rc = tlr_kubeobj_pod(o, NULL, &p, err, sizeof(err));
        json_object_put(o);
        if (rc) {
            printf("FAIL %s: convert: %s\n", rows[i].name, err);
            failed++;
            continue;
        }
        const char *got = watcher_pending_reason(p);
        if ((got == NULL) != (rows[i].want == NULL) || (got && strcmp(got, rows[i].want))) {
            printf("FAIL %s: got %s, want %s\n", rows[i].name, got ? got : "pending",
                   rows[i].want ? rows[i].want : "pending");
            failed++;
        }
        if (watcher_pod_pending(p) != (rows[i].want == NULL)) {
            printf("FAIL %s: watcher_pod_pending disagrees with the reason\n", rows[i].name);
            failed++;
        }
        tlr_kubeobj_free(p);
    }
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
