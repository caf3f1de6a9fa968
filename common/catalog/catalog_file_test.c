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

#include "solve_testkit.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_solve.h"

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

static const Tailor__V1__NodeSelectorRequirement *req_of(const Tailor__V1__InstanceType *t,
                                                           const char *key)
{
    for (size_t i = 0; i < t->n_requirements; i++)
        if (strcmp(t->requirements[i]->key, key) == 0)
            return t->requirements[i];
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
    /* Three on-demand zones at the listed price, then three spot ones at
     * the same price: no discount given, Karpenter's assumption. */
    assert_int_equal(p3->n_offerings, 6);
    assert_string_equal(p3->offerings[2]->zone, "us-east-1c");
    assert_int_equal(p3->offerings[4]->capacity_type, TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT);
    assert_true(p3->offerings[4]->price_per_hour == 3.06);
    assert_string_equal(p3->offerings[0]->zone_id, "");
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

/* Label presence as Karpenter's computeRequirements has it: no GPU or
 * accelerator label on a type without one, gpu-count 0 on a fractional
 * GPU, optional figures only when the file gives them. */
static const char label_doc[] =
    "[\n"
    "{\"name\":\"c5.large\",\"family\":\"c5\",\"category\":\"c\",\"generation\":5,"
    "\"size\":\"large\",\"vcpu\":2,\"memory_mib\":4096,\"gpu_count\":0,\"gpu_name\":null,"
    "\"accelerator_count\":0,\"accelerator_name\":null,\"ebs_bandwidth_mbps\":null,"
    "\"cpu_sustained_clock_mhz\":3600,\"encryption_in_transit\":false,"
    "\"hypervisor\":\"nitro\",\"od_price_usd_hr\":{\"us-east-1\":0.085}},\n"
    "{\"name\":\"g6f.large\",\"family\":\"g6f\",\"category\":\"g\",\"generation\":6,"
    "\"size\":\"large\",\"vcpu\":2,\"memory_mib\":8192,\"gpu_count\":0,\"gpu_name\":\"l4\","
    "\"gpu_manufacturer\":\"nvidia\",\"gpu_memory_mib\":2861,\"ebs_bandwidth_mbps\":5000,"
    "\"encryption_in_transit\":true,\"od_price_usd_hr\":{\"us-east-1\":0.2}},\n"
    "{\"name\":\"inf2.xlarge\",\"family\":\"inf2\",\"category\":\"inf\",\"generation\":2,"
    "\"size\":\"xlarge\",\"vcpu\":4,\"memory_mib\":16384,\"accelerator_count\":1,"
    "\"accelerator_name\":\"inferentia2\",\"accelerator_manufacturer\":\"aws\","
    "\"nitro_enclaves_supported\":true,\"od_price_usd_hr\":{\"us-east-1\":0.76}},\n"
    "{\"name\":\"c7i-flex.large\",\"family\":\"c7i-flex\",\"vcpu\":2,\"memory_mib\":4096,"
    "\"od_price_usd_hr\":{\"us-east-1\":0.08}}\n"
    "]";

static void test_label_presence(void **state)
{
    (void)state;
    tlr_catalog_file_opts o = {.region = "us-east-1", .no_spot = true};
    Tailor__V1__Catalog *c = NULL;
    char err[256] = "";
    int rc = tlr_catalog_from_json(label_doc, strlen(label_doc), &o, &c, err, sizeof(err));
    if (rc != TLR_OK)
        printf("err: %s\n", err);
    assert_int_equal(rc, TLR_OK);
    const Tailor__V1__InstanceType *c5 = tlr_catalog_find(c, "c5.large");
    const Tailor__V1__InstanceType *g6f = tlr_catalog_find(c, "g6f.large");
    const Tailor__V1__InstanceType *inf2 = tlr_catalog_find(c, "inf2.xlarge");
    const Tailor__V1__InstanceType *flex = tlr_catalog_find(c, "c7i-flex.large");
    assert_non_null(c5);
    assert_non_null(g6f);
    assert_non_null(inf2);
    assert_non_null(flex);
#define K "karpenter.k8s.aws/"
    static const struct { const char *type, *key, *want; } cases[] = {
        /* want NULL = the label is absent */
        {"c5.large", K "instance-gpu-count", NULL},
        {"c5.large", K "instance-gpu-name", NULL},
        {"c5.large", K "instance-gpu-manufacturer", NULL},
        {"c5.large", K "instance-gpu-memory", NULL},
        {"c5.large", K "instance-accelerator-count", NULL},
        {"c5.large", K "instance-accelerator-name", NULL},
        {"c5.large", K "instance-accelerator-manufacturer", NULL},
        {"c5.large", K "instance-ebs-bandwidth", NULL},
        {"c5.large", K "nitro-sandbox", NULL},
        {"c5.large", K "instance-cpu-sustained-clock-speed-mhz", "3600"},
        {"c5.large", K "instance-encryption-in-transit-supported", "false"},
        {"c5.large", K "instance-capability-flex", "false"},
        {"c5.large", K "instance-generation", "5"},
        {"c5.large", "topology.kubernetes.io/region", "us-east-1"},
        {"g6f.large", K "instance-gpu-count", "0"},
        {"g6f.large", K "instance-gpu-name", "l4"},
        {"g6f.large", K "instance-gpu-manufacturer", "nvidia"},
        {"g6f.large", K "instance-gpu-memory", "2861"},
        {"g6f.large", K "instance-accelerator-count", NULL},
        {"g6f.large", K "instance-ebs-bandwidth", "5000"},
        {"g6f.large", K "instance-encryption-in-transit-supported", "true"},
        {"g6f.large", K "instance-cpu-sustained-clock-speed-mhz", NULL},
        {"inf2.xlarge", K "instance-accelerator-count", "1"},
        {"inf2.xlarge", K "instance-accelerator-name", "inferentia2"},
        {"inf2.xlarge", K "instance-accelerator-manufacturer", "aws"},
        {"inf2.xlarge", K "instance-gpu-count", NULL},
        {"inf2.xlarge", K "nitro-sandbox", "true"},
        {"inf2.xlarge", K "instance-hypervisor", NULL},
        {"c7i-flex.large", K "instance-capability-flex", "true"},
        {"c7i-flex.large", K "instance-family", "c7i-flex"},
        {"c7i-flex.large", K "instance-generation", NULL},
        {"c7i-flex.large", K "instance-category", NULL},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const Tailor__V1__NodeSelectorRequirement *r =
            req_of(tlr_catalog_find(c, cases[i].type), cases[i].key);
        const char *got = r ? (r->n_values == 1 ? r->values[0] : "(several)") : NULL;
        if (r && r->operator_ != TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN)
            got = "(not In)";
        if ((got == NULL) != (cases[i].want == NULL) ||
            (got && strcmp(got, cases[i].want) != 0)) {
            printf("%s %s: got %s, want %s\n", cases[i].type, cases[i].key,
                   got ? got : "(absent)", cases[i].want ? cases[i].want : "(absent)");
            failed++;
        }
    }
    /* Tenancy: In [default, dedicated] on every type, either may be had. */
    for (size_t i = 0; i < c->n_instance_types; i++) {
        const Tailor__V1__NodeSelectorRequirement *t =
            req_of(c->instance_types[i], K "instance-tenancy");
        assert_non_null(t);
        assert_int_equal(t->n_values, 2);
        assert_string_equal(t->values[0], "default");
        assert_string_equal(t->values[1], "dedicated");
    }
#undef K
    assert_int_equal(failed, 0);
    tlr_catalog_free(c);
}

/* spot_discount 0 = spot at the on-demand price; no_spot = none; a
 * discount outside [0, 1) is refused; zone IDs land on the offerings. */
static void test_spot_modes_and_zone_ids(void **state)
{
    (void)state;
    const char *zones[] = {"us-east-1a", "us-east-1b"};
    const char *ids[] = {"use1-az6", NULL};
    static const struct {
        double discount;
        bool no_spot;
        int rc;
        size_t offerings;
        double spot_price;   /* p3's, -1 = no spot offering */
    } cases[] = {
        {0, false, TLR_OK, 4, 3.06},
        {0.5, false, TLR_OK, 4, 1.53},
        {0, true, TLR_OK, 2, -1},
        {0.5, true, TLR_OK, 2, -1},
        {1, false, TLR_E_INVAL, 0, -1},
        {-0.1, false, TLR_E_INVAL, 0, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tlr_catalog_file_opts o = {.zones = zones, .n_zones = 2, .zone_ids = ids,
                                   .spot_discount = cases[i].discount,
                                   .no_spot = cases[i].no_spot};
        Tailor__V1__Catalog *c = NULL;
        char err[256] = "";
        int rc = tlr_catalog_from_json(doc, strlen(doc), &o, &c, err, sizeof(err));
        printf("case %zu: discount %g no_spot %d: rc %d %s\n", i, cases[i].discount,
               cases[i].no_spot, rc, err);
        assert_int_equal(rc, cases[i].rc);
        if (rc != TLR_OK) {
            assert_null(c);
            continue;
        }
        const Tailor__V1__InstanceType *p3 = tlr_catalog_find(c, "p3.2xlarge");
        assert_int_equal(p3->n_offerings, cases[i].offerings);
        double spot = -1;
        for (size_t j = 0; j < p3->n_offerings; j++) {
            const Tailor__V1__Offering *of = p3->offerings[j];
            if (of->capacity_type == TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT)
                spot = of->price_per_hour;
            assert_string_equal(of->zone_id,
                                strcmp(of->zone, "us-east-1a") == 0 ? "use1-az6" : "");
        }
        assert_true(spot > cases[i].spot_price - 1e-9 && spot < cases[i].spot_price + 1e-9);
        tlr_catalog_free(c);
    }
    /* zone IDs need the zones they are parallel to */
    tlr_catalog_file_opts bad = {.zone_ids = ids};
    Tailor__V1__Catalog *c = NULL;
    assert_int_equal(tlr_catalog_from_json(doc, strlen(doc), &bad, &c, NULL, 0), TLR_E_INVAL);
}

/* Every label of m5.large exactly as Karpenter's instance-types reference
 * page lists it (website/content/en/docs/reference/instance-types.md),
 * plus the three it leaves off the page: region, tenancy (two values)
 * and no nitro-sandbox (not in the data file). */
static void test_real_file_labels(void **state)
{
    (void)state;
    const char *dir = getenv("TAILOR_SHARED_DATA");
    char path[1024];
    snprintf(path, sizeof(path), "%s/aws-instance-types.json", dir ? dir : "../shared/data");
    Tailor__V1__Catalog *c = NULL;
    char err[256] = "";
    tlr_catalog_file_opts o = {.no_spot = true};
    assert_int_equal(tlr_catalog_file_load(path, &o, &c, err, sizeof(err)), TLR_OK);
    static const char *const m5[][2] = {
        {"karpenter.k8s.aws/instance-capability-flex", "false"},
        {"karpenter.k8s.aws/instance-category", "m"},
        {"karpenter.k8s.aws/instance-cpu", "2"},
        {"karpenter.k8s.aws/instance-cpu-manufacturer", "intel"},
        {"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "3100"},
        {"karpenter.k8s.aws/instance-ebs-bandwidth", "4750"},
        {"karpenter.k8s.aws/instance-encryption-in-transit-supported", "false"},
        {"karpenter.k8s.aws/instance-family", "m5"},
        {"karpenter.k8s.aws/instance-generation", "5"},
        {"karpenter.k8s.aws/instance-hypervisor", "nitro"},
        {"karpenter.k8s.aws/instance-memory", "8192"},
        {"karpenter.k8s.aws/instance-network-bandwidth", "750"},
        {"karpenter.k8s.aws/instance-size", "large"},
        {"kubernetes.io/arch", "amd64"},
        {"kubernetes.io/os", "linux"},
        {"node.kubernetes.io/instance-type", "m5.large"},
        {"topology.kubernetes.io/region", "us-east-1"},
        {"karpenter.k8s.aws/instance-tenancy", NULL},
    };
    const Tailor__V1__InstanceType *t = tlr_catalog_find(c, "m5.large");
    assert_non_null(t);
    int failed = 0;
    for (size_t i = 0; i < t->n_requirements; i++)
        printf("  %s = %s%s\n", t->requirements[i]->key, t->requirements[i]->values[0],
               t->requirements[i]->n_values > 1 ? ", ..." : "");
    size_t n = sizeof(m5) / sizeof(m5[0]);
    for (size_t i = 0; i < n; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = req_of(t, m5[i][0]);
        if (!r || (m5[i][1] && (r->n_values != 1 || strcmp(r->values[0], m5[i][1]) != 0))) {
            printf("m5.large %s: got %s, want %s\n", m5[i][0], r ? r->values[0] : "(absent)",
                   m5[i][1] ? m5[i][1] : "(present)");
            failed++;
        }
    }
    if (t->n_requirements != n)
        printf("m5.large: got %zu labels, want %zu\n", t->n_requirements, n);
    assert_int_equal(t->n_requirements, n);
    assert_int_equal(failed, 0);
    /* No type without a GPU has a GPU label; none without an accelerator
     * an accelerator label. */
    size_t gpus = 0, accs = 0;
    for (size_t i = 0; i < c->n_instance_types; i++) {
        const Tailor__V1__InstanceType *it = c->instance_types[i];
        bool g = req_of(it, "karpenter.k8s.aws/instance-gpu-count") != NULL;
        bool a = req_of(it, "karpenter.k8s.aws/instance-accelerator-count") != NULL;
        assert_true(g == (it->gpu_name[0] != '\0'));
        gpus += g;
        accs += a;
    }
    printf("types with a GPU label %zu, with an accelerator label %zu\n", gpus, accs);
    assert_true(gpus > 30 && gpus < 100);
    assert_true(accs > 5 && accs < 20);
    tlr_catalog_free(c);
}

/* What a solve makes of it: a pod with instance-gpu-count DoesNotExist
 * fits c5.large / m5.large, one with Exists does not; it gets g4dn. */
static void test_solve_gpu_presence(void **state)
{
    (void)state;
    const char *dir = getenv("TAILOR_SHARED_DATA");
    char path[1024];
    snprintf(path, sizeof(path), "%s/aws-instance-types.json", dir ? dir : "../shared/data");
    Tailor__V1__Catalog *cat = NULL;
    tlr_catalog_file_opts o = {.no_spot = true};
    assert_int_equal(tlr_catalog_file_load(path, &o, &cat, NULL, 0), TLR_OK);
    static const struct {
        const char *pool_types;
        int op;
        const char *want;   /* the only family among the claim's options; NULL = unplaced */
    } cases[] = {
        {"c5.large,m5.large", TK_DNE, "c5|m5"},
        {"c5.large,m5.large", TK_EXISTS, NULL},
        {"c5.large", TK_EXISTS, NULL},
        {"c5.large,m5.large,g4dn.xlarge", TK_DNE, "c5|m5"},
        {"c5.large,m5.large,g4dn.xlarge", TK_EXISTS, "g4dn"},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__SolveRequest *req = tk_new();
        Tailor__V1__CatalogRef *ref = NULL;
        (void)tk_catalog(req);
        ref = req->catalogs[0];
        tlr_catalog_free(ref->catalog);
        free(ref->hash);
        /* a packed copy, so each request owns its catalog */
        size_t n = protobuf_c_message_get_packed_size(&cat->base);
        uint8_t *buf = malloc(n + 1);
        protobuf_c_message_pack(&cat->base, buf);
        ref->catalog = tailor__v1__catalog__unpack(NULL, n, buf);
        free(buf);
        ref->hash = strdup(cat->hash);
        Tailor__V1__NodePool *p = tk_pool(req, "default", 0);
        tk_pool_req(p, K_TYPE, TK_IN, cases[i].pool_types, 0);
        Tailor__V1__Pod *pod = tk_pod(req, "p", 500, 512);
        tk_pod_affinity(pod, "karpenter.k8s.aws/instance-gpu-count", cases[i].op, NULL);
        Tailor__V1__SolveResponse *s = NULL;
        assert_int_equal(tlr_solve(req, NULL, &s), TLR_OK);
        int ci = tk_claim_of(s, "p");
        char got[4096] = "";
        if (ci < 0) {
            const Tailor__V1__PodError *e = tk_error_of(s, "p");
            snprintf(got, sizeof(got), "unplaced (%s)", e ? tk_reasons(e) : "no error");
        } else {
            const Tailor__V1__NodeClaim *nc = s->new_nodeclaims[ci];
            for (size_t k = 0; k < nc->n_instance_type_options; k++)
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? "," : "",
                         nc->instance_type_options[k]->name);
        }
        bool ok = true;
        if (!cases[i].want) {
            ok = ci < 0 && tk_error_of(s, "p") != NULL;
        } else if (ci < 0) {
            ok = false;
        } else {
            const Tailor__V1__NodeClaim *nc = s->new_nodeclaims[ci];
            for (size_t k = 0; k < nc->n_instance_type_options; k++) {
                const char *nm = nc->instance_type_options[k]->name;
                bool g4 = strncmp(nm, "g4dn.", 5) == 0;
                ok &= strcmp(cases[i].want, "g4dn") == 0 ? g4 : !g4;
            }
        }
        printf("case %zu: pool [%s], gpu-count %s: got %s\n", i, cases[i].pool_types,
               cases[i].op == TK_DNE ? "DoesNotExist" : "Exists", got);
        if (!ok) {
            printf("  want %s\n", cases[i].want ? cases[i].want : "unplaced");
            failed++;
        }
        tlr_solve_response_free(s);
        tk_free(req);
    }
    tlr_catalog_free(cat);
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mapping),
        cmocka_unit_test(test_spot_and_hash),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_real_file),
        cmocka_unit_test(test_label_presence),
        cmocka_unit_test(test_spot_modes_and_zone_ids),
        cmocka_unit_test(test_real_file_labels),
        cmocka_unit_test(test_solve_gpu_presence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
