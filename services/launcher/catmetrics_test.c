/* catmetrics_test.c - the instance type metrics follow the NodePools:
 * cpu and memory for every type of a pool's catalog, offerings only where
 * the pool's requirements allow them, availability off for offerings in
 * the ICE cache, duplicates over pools merged, and series of offerings no
 * pool allows any more swept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>

#include "catmetrics.h"
#include "lc_testkit.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "metrics_testkit.h"

#define IN TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
#define SPOT TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT

static Tailor__V1__NodePool *pool(const char *key, const char *v1, const char *v2)
{
    Tailor__V1__NodePool *np = tlr_malloc(sizeof(*np));
    tailor__v1__node_pool__init(np);
    np->name = tlr_strdup("default");
    if (key) {
        Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
        tailor__v1__node_selector_requirement__init(r);
        r->key = tlr_strdup(key);
        r->operator_ = IN;
        TK_PUSH(r->values, r->n_values, tlr_strdup(v1));
        if (v2)
            TK_PUSH(r->values, r->n_values, tlr_strdup(v2));
        TK_PUSH(np->requirements, np->n_requirements, r);
    }
    return np;
}

static void test_catalog_metrics(void **state)
{
    (void)state;
    Tailor__V1__Catalog *cat = tk_catalog();
    for (size_t i = 0; i < cat->n_instance_types; i++) {
        cat->instance_types[i]->vcpu = 2;
        cat->instance_types[i]->memory_mib = 4096 * (int64_t)(i + 1);
    }
    tlr_metrics *m;
    tlr_metrics_create(&m);
    lc_catmetrics *cm;
    lc_catmetrics_create(m, &cm);
    lc_ice *ice;
    lc_ice_create(&tlr_clock_system, 0, &ice);

    /* A pool that buys only spot: the spot offerings (m5.large in a and
     * b); cpu and memory for all three types of its catalog. */
    Tailor__V1__NodePool *spot = pool("karpenter.sh/capacity-type", "spot", NULL);
    lc_catmetrics_pool pools[2] = { { spot, cat } };
    lc_catmetrics_update(cm, pools, 1, ice);
    char *page = mt_render(m);
    mt_expect(page, "karpenter_cloudprovider_instance_type_cpu_cores{instance_type=\"r5.large\"}", 2);
    mt_expect(page, "karpenter_cloudprovider_instance_type_memory_bytes{instance_type=\"m5.large\"}",
              8192.0 * 1024 * 1024);
    mt_expect(page, "karpenter_cloudprovider_instance_type_offering_price_estimate{instance_type=\"m5.large\","
                    "capacity_type=\"spot\",zone=\"us-east-1b\"}", 0.035);
    mt_expect(page, "karpenter_cloudprovider_instance_type_offering_available{instance_type=\"m5.large\","
                    "capacity_type=\"spot\",zone=\"us-east-1a\"}", 1);
    assert_int_equal(mt_count_lines(page, "karpenter_cloudprovider_instance_type_offering_price_estimate{"), 2);
    assert_int_equal(mt_count_lines(page, "karpenter_cloudprovider_instance_type_cpu_cores{"), 3);
    free(page);

    /* ICE on m5.large spot a: unavailable, price kept.  A second pool
     * allowing c5.large and r5.large adds their four on-demand offerings. */
    lc_ice_mark(ice, "m5.large", "us-east-1a", SPOT, "InsufficientInstanceCapacity");
    Tailor__V1__NodePool *types = pool("node.kubernetes.io/instance-type", "c5.large", "r5.large");
    pools[1] = (lc_catmetrics_pool){ types, cat };
    lc_catmetrics_update(cm, pools, 2, ice);
    page = mt_render(m);
    mt_expect(page, "karpenter_cloudprovider_instance_type_offering_available{instance_type=\"m5.large\","
                    "capacity_type=\"spot\",zone=\"us-east-1a\"}", 0);
    mt_expect(page, "karpenter_cloudprovider_instance_type_offering_price_estimate{instance_type=\"m5.large\","
                    "capacity_type=\"spot\",zone=\"us-east-1a\"}", 0.040);
    mt_expect(page, "karpenter_cloudprovider_instance_type_offering_available{instance_type=\"r5.large\","
                    "capacity_type=\"on-demand\",zone=\"us-east-1c\"}", 1);
    assert_int_equal(mt_count_lines(page, "karpenter_cloudprovider_instance_type_offering_available{"), 6);
    assert_int_equal(mt_count_lines(page, "karpenter_cloudprovider_instance_type_cpu_cores{"), 3);
    free(page);

    /* The spot pool goes: its offerings' series go with it. */
    pools[0] = pools[1];
    lc_catmetrics_update(cm, pools, 1, ice);
    page = mt_render(m);
    mt_expect(page, "karpenter_cloudprovider_instance_type_offering_available{instance_type=\"m5.large\","
                    "capacity_type=\"spot\",zone=\"us-east-1a\"}", NAN);
    assert_int_equal(mt_count_lines(page, "karpenter_cloudprovider_instance_type_offering_available{"), 4);
    free(page);

    /* No pools: no series at all. */
    lc_catmetrics_update(cm, NULL, 0, ice);
    page = mt_render(m);
    assert_int_equal(mt_count_lines(page, "karpenter_cloudprovider_instance_type_"), 0);
    free(page);

    protobuf_c_message_free_unpacked(&spot->base, NULL);
    protobuf_c_message_free_unpacked(&types->base, NULL);
    protobuf_c_message_free_unpacked(&cat->base, NULL);
    lc_ice_free(ice);
    lc_catmetrics_free(cm);
    tlr_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
