/* catalog_file_test.c - tlr_catalog_from_json / _file_load.
 *
 * Small inline documents check the mapping field by field; the real file
 * (../shared/data/aws-instance-types.json via TAILOR_SHARED_DATA) checks
 * counts and a few well-known types.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_catalog.h"
#include "tlr_err.h"

static const char doc[] =
    "[\n"
    "{\"name\":\"p3.2xlarge\",\"family\":\"p3\",\"category\":\"p\",\"generation\":3,"
    "\"size\":\"2xlarge\",\"arch\":\"amd64\",\"os\":\"linux\",\"vcpu\":8,\"memory_mib\":62464,"
    "\"gpu_count\":1,\"gpu_name\":\"v100\",\"gpu_manufacturer\":\"nvidia\","
    "\"gpu_memory_mib\":16384,\"max_pods\":58,\"ephemeral_storage_gib\":17,"
    "\"allocatable_cpu_millicores\":7910,\"allocatable_memory_mib\":56786,\"nvidia_gpu\":1,"
    "\"pod_eni\":0,\"od_price_usd_hr\":{\"us-east-1\":3.06}},\n"
    "{\"name\":\"a1.medium\",\"family\":\"a1\",\"category\":\"a\",\"generation\":1,"
    "\"size\":\"medium\",\"arch\":\"arm64\",\"os\":\"linux\",\"vcpu\":1,\"memory_mib\":2048,"
    "\"gpu_count\":0,\"gpu_name\":null,\"max_pods\":8,\"ephemeral_storage_gib\":17,"
    "\"allocatable_cpu_millicores\":940,\"allocatable_memory_mib\":1392,\"pod_eni\":10,"
    "\"od_price_usd_hr\":{\"us-east-1\":0.0255}},\n"
    "{\"name\":\"hpc7a.96xlarge\",\"vcpu\":192,\"memory_mib\":786432,\"max_pods\":100,"
    "\"allocatable_cpu_millicores\":191000,\"allocatable_memory_mib\":700000,"
    "\"od_price_usd_hr\":{}}\n"
    "]";

static const char *req_value(const Tailor__V1__InstanceType *t, const char *key)
{
    for (size_t i = 0; i < t->n_requirements; i++)
        if (strcmp(t->requirements[i]->key, key) == 0 && t->requirements[i]->n_values == 1)
            return t->requirements[i]->values[0];
    return NULL;
}

static int64_t ext(const Tailor__V1__ResourceList *l, const char *name)
{
    for (size_t i = 0; i < l->n_extended; i++)
        if (strcmp(l->extended[i]->name, name) == 0)
            return l->extended[i]->value;
    return 0;
}

static void test_mapping(void **state)
{
    (void)state;
    Tailor__V1__Catalog *c = NULL;
    char err[256] = "";
    int rc = tlr_catalog_from_json(doc, strlen(doc), NULL, &c, err, sizeof(err));
    if (rc != TLR_OK)
        printf("err: %s\n", err);
    assert_int_equal(rc, TLR_OK);
    /* hpc7a has no us-east-1 price: left out; the rest sorted by name. */
    assert_int_equal(c->n_instance_types, 2);
    assert_string_equal(c->instance_types[0]->name, "a1.medium");
    const Tailor__V1__InstanceType *p3 = c->instance_types[1];
    assert_string_equal(p3->name, "p3.2xlarge");
    assert_int_equal(p3->allocatable->cpu_millis, 7910);
    assert_int_equal(p3->allocatable->memory_bytes, 56786LL * 1024 * 1024);
    assert_int_equal(p3->allocatable->pods, 58);
    assert_int_equal(p3->allocatable->ephemeral_storage_bytes, 17LL << 30);
    assert_int_equal(ext(p3->allocatable, "nvidia.com/gpu"), 1);
    assert_int_equal(p3->capacity->cpu_millis, 8000);
    /* no eni_max_pods in this document: max_pods stands in for it */
    assert_int_equal(p3->eni_max_pods, 58);
    assert_int_equal(ext(c->instance_types[0]->allocatable, "vpc.amazonaws.com/pod-eni"), 10);
    assert_string_equal(req_value(p3, "node.kubernetes.io/instance-type"), "p3.2xlarge");
    assert_string_equal(req_value(p3, "karpenter.k8s.aws/instance-family"), "p3");
    assert_string_equal(req_value(p3, "karpenter.k8s.aws/instance-gpu-count"), "1");
    assert_string_equal(req_value(p3, "karpenter.k8s.aws/instance-gpu-name"), "v100");
    assert_string_equal(req_value(p3, "karpenter.k8s.aws/instance-memory"), "62464");
    assert_string_equal(req_value(c->instance_types[0], "kubernetes.io/arch"), "arm64");
    /* Three on-demand zones at the listed price. */
    assert_int_equal(p3->n_offerings, 3);
    assert_string_equal(p3->offerings[2]->zone, "us-east-1c");
    assert_true(p3->offerings[0]->price_per_hour == 3.06);
    assert_int_equal(p3->offerings[0]->capacity_type,
                     TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND);
    assert_int_equal(strlen(c->hash), 64);
    tlr_catalog_free(c);
}

static void test_spot_and_hash(void **state)
{
    (void)state;
    tlr_catalog_file_opts o = {.spot_discount = 0.6};
    Tailor__V1__Catalog *a = NULL, *b = NULL, *d = NULL;
    assert_int_equal(tlr_catalog_from_json(doc, strlen(doc), &o, &a, NULL, 0), TLR_OK);
    assert_int_equal(tlr_catalog_from_json(doc, strlen(doc), &o, &b, NULL, 0), TLR_OK);
    assert_int_equal(tlr_catalog_from_json(doc, strlen(doc), NULL, &d, NULL, 0), TLR_OK);
    const Tailor__V1__InstanceType *p3 = a->instance_types[1];
    assert_int_equal(p3->n_offerings, 6);
    assert_int_equal(p3->offerings[3]->capacity_type, TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT);
    assert_true(p3->offerings[3]->price_per_hour > 1.2239 && p3->offerings[3]->price_per_hour < 1.2241);
    assert_string_equal(a->hash, b->hash);          /* same content, same hash */
    assert_string_not_equal(a->hash, d->hash);      /* different offerings */
    tlr_catalog_free(a);
    tlr_catalog_free(b);
    tlr_catalog_free(d);
}

static void test_bad_input(void **state)
{
    (void)state;
    static const struct { const char *json; const char *want; } bad[] = {
        {"{}", "array"},
        {"[1]", "entry 0"},
        {"[{\"vcpu\":1}]", "no name"},
        {"[{\"name\":\"x\",\"vcpu\":-4}]", "x: vcpu"},
        {"[{\"name\":\"x\",\"memory_mib\":\"lots\"}]", "x: memory_mib"},
        {"[{\"name\":\"x\",\"od_price_usd_hr\":{\"us-east-1\":\"cheap\"}}]", "not a number"},
        {"[{\"name\":\"x\",\"od_price_usd_hr\":{\"us-east-1\":1}},"
         "{\"name\":\"x\",\"od_price_usd_hr\":{\"us-east-1\":1}}]", "twice"},
        {"[{\"name\":", "offset"},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        Tailor__V1__Catalog *c = (Tailor__V1__Catalog *)0x1;
        char err[256] = "";
        int rc = tlr_catalog_from_json(bad[i].json, strlen(bad[i].json), NULL, &c, err,
                                       sizeof(err));
        if (rc == TLR_OK || c != (Tailor__V1__Catalog *)0x1 || !strstr(err, bad[i].want)) {
            printf("case %zu: got rc=%d err='%s', want an error naming '%s'\n", i, rc, err,
                   bad[i].want);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

static void test_real_file(void **state)
{
    (void)state;
    const char *dir = getenv("TAILOR_SHARED_DATA");
    char path[1024];
    snprintf(path, sizeof(path), "%s/aws-instance-types.json", dir ? dir : "../shared/data");
    Tailor__V1__Catalog *c = NULL;
    char err[256] = "";
    int rc = tlr_catalog_file_load(path, NULL, &c, err, sizeof(err));
    if (rc != TLR_OK)
        printf("%s\n", err);
    assert_int_equal(rc, TLR_OK);
    /* README: 1,363 types, 1,345 with a us-east-1 on-demand price. */
    assert_int_equal(c->n_instance_types, 1345);
    const Tailor__V1__InstanceType *m5 = NULL;
    for (size_t i = 0; i < c->n_instance_types; i++)
        if (strcmp(c->instance_types[i]->name, "m5.large") == 0)
            m5 = c->instance_types[i];
    assert_non_null(m5);
    assert_int_equal(m5->vcpu, 2);
    assert_int_equal(m5->eni_max_pods, 29);
    /* local NVMe is EC2's TotalSizeInGB: c5d.large's 50 GB, decimal */
    const Tailor__V1__InstanceType *c5d = NULL;
    for (size_t i = 0; i < c->n_instance_types; i++)
        if (strcmp(c->instance_types[i]->name, "c5d.large") == 0)
            c5d = c->instance_types[i];
    assert_non_null(c5d);
    assert_int_equal(c5d->local_nvme_bytes, 50000000000LL);
    assert_true(m5->offerings[0]->price_per_hour == 0.096);
    char e2[64];
    assert_int_equal(tlr_catalog_file_load("/nonexistent/x.json", NULL, &c, e2, sizeof(e2)),
                     TLR_E_IO);
    tlr_catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mapping),
        cmocka_unit_test(test_spot_and_hash),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_real_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
