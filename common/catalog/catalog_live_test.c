/* catalog_live_test.c - the live catalog: resources computed from
 * DescribeInstanceTypes (recorded from moto) must equal the catalog
 * file's for the same types (Karpenter's numbers); prices come from the
 * Pricing API, else the file; implausible spot prices are refused; zones
 * follow DescribeInstanceTypeOfferings; the hash is stable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_alloc.h"
#include "tlr_catalog.h"
#include "tlr_err.h"

typedef struct fx {
    Tailor__V1__Catalog *file;
    tlr_ec2_type_infos types;
} fx;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = tlr_malloc((size_t)n + 1);
    b[fread(b, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return b;
}

static int setup(void **state)
{
    fx *x = tlr_calloc(1, sizeof(*x));
    const char *data = getenv("TAILOR_SHARED_DATA");
    char path[4096], err[256];
    snprintf(path, sizeof(path), "%s/aws-instance-types.json", data ? data : "../shared/data");
    tlr_catalog_file_opts o = { "us-east-1", NULL, 0, 0.6, NULL };
    if (tlr_catalog_file_load(path, &o, &x->file, err, sizeof(err)) != TLR_OK) {
        printf("FAIL: catalog file %s: %s\n", path, err);
        return -1;
    }
    const char *src = __FILE__, *slash = strrchr(src, '/');
    snprintf(path, sizeof(path), "%.*s/../aws/testdata/describe_instance_types.xml",
             (int)(slash - src), src);
    char *xml = slurp(path);
    tlr_xml_doc *d = NULL;
    if (!xml || tlr_xml_parse(xml, strlen(xml), NULL, &d, NULL, 0) != TLR_OK ||
        tlr_ec2_parse_instance_types(tlr_xml_root(d), &x->types, NULL) != TLR_OK) {
        printf("FAIL: fixture %s\n", path);
        return -1;
    }
    free(xml);
    tlr_xml_free(d);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    tlr_catalog_free(x->file);
    tlr_ec2_type_infos_free(&x->types);
    free(x);
    return 0;
}

static const Tailor__V1__NodeSelectorRequirement *req_of(const Tailor__V1__InstanceType *t,
                                                           const char *key)
{
    for (size_t i = 0; t && i < t->n_requirements; i++)
        if (strcmp(t->requirements[i]->key, key) == 0)
            return t->requirements[i];
    return NULL;
}

static int64_t ext(const Tailor__V1__ResourceList *r, const char *name)
{
    for (size_t i = 0; r && i < r->n_extended; i++)
        if (strcmp(r->extended[i]->name, name) == 0)
            return r->extended[i]->value;
    return 0;
}

static double price_of(const Tailor__V1__InstanceType *t, const char *zone,
                       Tailor__V1__CapacityType ct);
#define OD TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND
#define SPOT TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT

/* Every figure the solver uses, live vs file, for the five fixture types
 * (x86, Graviton, NVIDIA, Inferentia2, a 4-card 8-GPU EFA machine). */
static void test_resources_match_file(void **state)
{
    fx *x = *state;
    Tailor__V1__Catalog *live = NULL;
    tlr_catalog_live_stats st;
    char err[256] = "";
    tlr_catalog_live_in in = { .region = "us-east-1", .types = &x->types, .fallback = x->file,
                               .spot_discount = 0.6 };
    assert_int_equal(tlr_catalog_from_ec2(&in, &live, &st, err, sizeof(err)), TLR_OK);
    assert_int_equal(st.types_seen, 5);
    assert_int_equal(live->n_instance_types, 5);
    assert_int_equal(st.od_fallback, 5);   /* no Pricing answer: every price from the file */
    assert_string_equal(live->price_source, "ec2+file");
    static const char *const exts[] = { "nvidia.com/gpu", "aws.amazon.com/neuron",
                                        "aws.amazon.com/neuroncore", "vpc.amazonaws.com/efa",
                                        "vpc.amazonaws.com/pod-eni" };
    for (size_t i = 0; i < live->n_instance_types; i++) {
        const Tailor__V1__InstanceType *l = live->instance_types[i];
        const Tailor__V1__InstanceType *f = tlr_catalog_find(x->file, l->name);
        assert_non_null(f);
        printf("%s: cpu %lld/%lld mem %lld/%lld pods %lld/%lld (live/file)\n", l->name,
               (long long)l->allocatable->cpu_millis, (long long)f->allocatable->cpu_millis,
               (long long)(l->allocatable->memory_bytes >> 20),
               (long long)(f->allocatable->memory_bytes >> 20),
               (long long)l->allocatable->pods, (long long)f->allocatable->pods);
        assert_int_equal(l->allocatable->cpu_millis, f->allocatable->cpu_millis);
        assert_int_equal(l->allocatable->memory_bytes, f->allocatable->memory_bytes);
        assert_int_equal(l->allocatable->pods, f->allocatable->pods);
        assert_int_equal(l->allocatable->ephemeral_storage_bytes,
                         f->allocatable->ephemeral_storage_bytes);
        assert_int_equal(l->capacity->memory_bytes, f->capacity->memory_bytes);
        /* the raw ENI figure the node model starts from */
        assert_int_equal(l->eni_max_pods, f->eni_max_pods);
        assert_true(l->eni_max_pods > 0);
        assert_int_equal(l->local_nvme_bytes, f->local_nvme_bytes);
        assert_string_equal(l->arch, f->arch);
        assert_string_equal(l->family, f->family);
        assert_string_equal(l->category, f->category);
        assert_int_equal(l->generation, f->generation);
        assert_string_equal(l->gpu_name, f->gpu_name);
        assert_string_equal(l->gpu_manufacturer, f->gpu_manufacturer);
        for (size_t e = 0; e < sizeof(exts) / sizeof(exts[0]); e++) {
            if (ext(l->allocatable, exts[e]) != ext(f->allocatable, exts[e]))
                printf("  %s: got %lld want %lld\n", exts[e],
                       (long long)ext(l->allocatable, exts[e]),
                       (long long)ext(f->allocatable, exts[e]));
            assert_int_equal(ext(l->allocatable, exts[e]), ext(f->allocatable, exts[e]));
        }
        /* Every label the file has, live has with the same values; live
         * has one more, nitro-sandbox, which the file does not know. */
        for (size_t r = 0; r < f->n_requirements; r++) {
            const Tailor__V1__NodeSelectorRequirement *fr = f->requirements[r];
            const Tailor__V1__NodeSelectorRequirement *lr = req_of(l, fr->key);
            bool same = lr && lr->n_values == fr->n_values;
            for (size_t v = 0; same && v < fr->n_values; v++)
                same = strcmp(lr->values[v], fr->values[v]) == 0;
            if (!same)
                printf("  %s: got %s, want %s\n", fr->key, lr ? lr->values[0] : "(absent)",
                       fr->values[0]);
            assert_true(same);
        }
        assert_int_equal(l->n_requirements, f->n_requirements + 1);
        assert_non_null(req_of(l, "karpenter.k8s.aws/nitro-sandbox"));
    }
    /* What DescribeInstanceTypes says beyond the file: m5.large has no
     * Nitro Enclaves, g4dn.xlarge has; neither has a GPU label missing or
     * extra. */
    static const struct { const char *type, *key, *want; } cases[] = {
        { "m5.large", "karpenter.k8s.aws/nitro-sandbox", "false" },
        { "g4dn.xlarge", "karpenter.k8s.aws/nitro-sandbox", "true" },
        { "m5.large", "karpenter.k8s.aws/instance-gpu-count", NULL },
        { "m5.large", "karpenter.k8s.aws/instance-accelerator-count", NULL },
        { "g4dn.xlarge", "karpenter.k8s.aws/instance-gpu-count", "1" },
        { "g4dn.xlarge", "karpenter.k8s.aws/instance-ebs-bandwidth", "3500" },
        { "inf2.xlarge", "karpenter.k8s.aws/instance-accelerator-manufacturer", "aws" },
        { "inf2.xlarge", "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "3600" },
        { "m6g.large", "karpenter.k8s.aws/instance-encryption-in-transit-supported", "false" },
        { "p4d.24xlarge", "karpenter.k8s.aws/instance-encryption-in-transit-supported", "true" },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const Tailor__V1__NodeSelectorRequirement *r =
            req_of(tlr_catalog_find(live, cases[i].type), cases[i].key);
        const char *got = r ? r->values[0] : NULL;
        if ((got == NULL) != (cases[i].want == NULL) ||
            (got && strcmp(got, cases[i].want) != 0)) {
            printf("%s %s: got %s, want %s\n", cases[i].type, cases[i].key,
                   got ? got : "(absent)", cases[i].want ? cases[i].want : "(absent)");
            failed++;
        }
    }
    assert_int_equal(failed, 0);
    tlr_catalog_free(live);
}

/* A type the file does not know: labels from the description alone, in
 * Karpenter's spelling ("Radeon Pro V520" -> radeon-pro-v520; the
 * "-6tb" of u-6tb1 is not the generation). */
static void test_labels_without_file(void **state)
{
    fx *x = *state;
    tlr_ec2_type_info t = x->types.v[0];   /* g4dn.xlarge's figures, renamed */
    t.name = (char *)"u-6tb1.56xlarge";
    t.gpu_name = (char *)"Radeon Pro V520";
    t.gpu_manufacturer = (char *)"AMD";
    tlr_ec2_type_infos one = { &t, 1 };
    tlr_price pv[] = { { (char *)"u-6tb1.56xlarge", 40.0 } };
    tlr_prices od = { pv, 1 };
    tlr_catalog_live_in in = { .region = "us-west-2", .types = &one, .on_demand = &od };
    Tailor__V1__Catalog *c = NULL;
    char err[256] = "";
    assert_int_equal(tlr_catalog_from_ec2(&in, &c, NULL, err, sizeof(err)), TLR_OK);
    const Tailor__V1__InstanceType *it = c->instance_types[0];
    static const struct { const char *key, *want; } cases[] = {
        { "karpenter.k8s.aws/instance-family", "u-6tb1" },
        { "karpenter.k8s.aws/instance-category", "u" },
        { "karpenter.k8s.aws/instance-generation", "1" },
        { "karpenter.k8s.aws/instance-size", "56xlarge" },
        { "karpenter.k8s.aws/instance-gpu-name", "radeon-pro-v520" },
        { "karpenter.k8s.aws/instance-gpu-manufacturer", "amd" },
        { "karpenter.k8s.aws/instance-capability-flex", "false" },
        { "topology.kubernetes.io/region", "us-west-2" },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const Tailor__V1__NodeSelectorRequirement *r = req_of(it, cases[i].key);
        if (!r || strcmp(r->values[0], cases[i].want) != 0) {
            printf("%s: got %s, want %s\n", cases[i].key, r ? r->values[0] : "(absent)",
                   cases[i].want);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
    tlr_catalog_free(c);
}

/* Spot without a usable price: discount 0 = the on-demand price; no_spot
 * = no spot offering even with a history price; zone IDs by zone name. */
static void test_spot_modes_and_zone_ids(void **state)
{
    fx *x = *state;
    tlr_ec2_spot_price sv[] = { { (char *)"m5.large", (char *)"us-east-1a", 0.05, 1 } };
    tlr_ec2_spot_prices spot = { sv, 1 };
    const char *names[] = { "us-east-1b", "us-east-1a" }, *ids[] = { "use1-az4", "use1-az6" };
    const char *zones[] = { "us-east-1a", "us-east-1b" };
    for (int no_spot = 0; no_spot < 2; no_spot++) {
        tlr_catalog_live_in in = { .types = &x->types, .fallback = x->file, .spot = &spot,
                                   .zones = zones, .n_zones = 2, .az_names = names,
                                   .az_ids = ids, .n_az = 2, .no_spot = no_spot };
        Tailor__V1__Catalog *c = NULL;
        assert_int_equal(tlr_catalog_from_ec2(&in, &c, NULL, NULL, 0), TLR_OK);
        const Tailor__V1__InstanceType *m5 = tlr_catalog_find(c, "m5.large");
        double od = price_of(m5, "us-east-1b", OD);
        assert_true(od > 0);
        if (no_spot) {
            assert_true(price_of(m5, "us-east-1a", SPOT) < 0);
            assert_true(price_of(m5, "us-east-1b", SPOT) < 0);
        } else {
            assert_true(price_of(m5, "us-east-1a", SPOT) == 0.05);   /* history */
            assert_true(price_of(m5, "us-east-1b", SPOT) == od);     /* none: od */
        }
        for (size_t i = 0; i < m5->n_offerings; i++)
            assert_string_equal(m5->offerings[i]->zone_id,
                                strcmp(m5->offerings[i]->zone, "us-east-1a") == 0 ? "use1-az6"
                                                                                  : "use1-az4");
        tlr_catalog_free(c);
    }
    tlr_catalog_live_in bad = { .types = &x->types, .spot_discount = 1 };
    Tailor__V1__Catalog *c = NULL;
    assert_int_equal(tlr_catalog_from_ec2(&bad, &c, NULL, NULL, 0), TLR_E_INVAL);
}

static double price_of(const Tailor__V1__InstanceType *t, const char *zone,
                       Tailor__V1__CapacityType ct)
{
    for (size_t i = 0; t && i < t->n_offerings; i++)
        if (t->offerings[i]->capacity_type == ct && strcmp(t->offerings[i]->zone, zone) == 0)
            return t->offerings[i]->price_per_hour;
    return -1;
}

/* Where each price comes from, and which zones are offered. */
static void test_prices_and_zones(void **state)
{
    fx *x = *state;
    tlr_price pv[] = { { (char *)"m5.large", 0.2 } };   /* sorted; one type priced live */
    tlr_prices od = { pv, 1 };
    tlr_ec2_spot_price sv[] = {
        { (char *)"m5.large", (char *)"us-east-1a", 0.05, 1 },     /* plausible */
        { (char *)"m5.large", (char *)"us-east-1b", 0.00001, 1 },  /* moto's: refused */
        { (char *)"m6g.large", (char *)"us-east-1a", 0.03, 1 },
    };
    tlr_ec2_spot_prices spot = { sv, 3 };
    tlr_ec2_type_offering ov[] = {
        { (char *)"m5.large", (char *)"us-east-1a" }, { (char *)"m5.large", (char *)"us-east-1b" },
        { (char *)"m5.large", (char *)"us-east-1e" }, { (char *)"m6g.large", (char *)"us-east-1a" },
        { (char *)"g4dn.xlarge", (char *)"us-east-1d" },
    };
    tlr_ec2_type_offerings offs = { ov, 5 };
    const char *zones[] = { "us-east-1a", "us-east-1b", "us-east-1c" };
    tlr_catalog_live_in in = { .region = "us-east-1", .types = &x->types, .offerings = &offs,
                               .spot = &spot, .on_demand = &od, .fallback = x->file,
                               .zones = zones, .n_zones = 3, .spot_discount = 0.5 };
    Tailor__V1__Catalog *c = NULL;
    tlr_catalog_live_stats st;
    assert_int_equal(tlr_catalog_from_ec2(&in, &c, &st, NULL, 0), TLR_OK);
    assert_string_equal(c->price_source, "ec2+pricing-api");
    const Tailor__V1__InstanceType *m5 = tlr_catalog_find(c, "m5.large");
    const Tailor__V1__InstanceType *m6g = tlr_catalog_find(c, "m6g.large");
    double m6g_file = price_of(tlr_catalog_find(x->file, "m6g.large"), "us-east-1a", OD);
    static const struct { const char *what; double got, want; } cases[] = {
        { "m5 od a (Pricing API)", 0, 0.2 },
        { "m5 spot a (history)", 0, 0.05 },
        { "m5 spot b (history refused: 0.5 x od)", 0, 0.1 },
        { "m5 od e (zone not allowed)", 0, -1 },
        { "m5 od c (not offered there)", 0, -1 },
        { "m6g od a (file)", 0, 0 },
        { "m6g spot a (history)", 0, 0.03 },
    };
    double got[] = { price_of(m5, "us-east-1a", OD), price_of(m5, "us-east-1a", SPOT),
                     price_of(m5, "us-east-1b", SPOT), price_of(m5, "us-east-1e", OD),
                     price_of(m5, "us-east-1c", OD), price_of(m6g, "us-east-1a", OD),
                     price_of(m6g, "us-east-1a", SPOT) };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double want = i == 5 ? m6g_file : cases[i].want;
        printf("%s: got %.5f want %.5f\n", cases[i].what, got[i], want);
        assert_true(got[i] > want - 1e-9 && got[i] < want + 1e-9);
    }
    assert_true(m6g_file > 0);
    /* g4dn is offered only in us-east-1d, outside the zones: left out;
     * inf2 and p4d have no offerings at all. */
    assert_null(tlr_catalog_find(c, "g4dn.xlarge"));
    assert_int_equal(c->n_instance_types, 2);
    assert_int_equal(st.od_live, 1);
    assert_int_equal(st.spot_live, 2);
    assert_int_equal(st.spot_implausible, 1);
    tlr_catalog_free(c);
}

/* Same input, same hash; a changed price, another hash; a zone subset is
 * a different catalog with its own hash. */
static void test_hash(void **state)
{
    fx *x = *state;
    tlr_catalog_live_in in = { .types = &x->types, .fallback = x->file, .spot_discount = 0.6 };
    Tailor__V1__Catalog *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(tlr_catalog_from_ec2(&in, &a, NULL, NULL, 0), TLR_OK);
    assert_int_equal(tlr_catalog_from_ec2(&in, &b, NULL, NULL, 0), TLR_OK);
    assert_string_equal(a->hash, b->hash);
    assert_int_equal(strlen(a->hash), 64);
    tlr_price pv[] = { { (char *)"m5.large", 0.5 } };
    tlr_prices od = { pv, 1 };
    in.on_demand = &od;
    assert_int_equal(tlr_catalog_from_ec2(&in, &c, NULL, NULL, 0), TLR_OK);
    assert_string_not_equal(a->hash, c->hash);
    const char *z[] = { "us-east-1a" };
    Tailor__V1__Catalog *r = tlr_catalog_restrict_zones(a, z, 1);
    assert_string_not_equal(r->hash, a->hash);
    for (size_t i = 0; i < r->n_instance_types; i++)
        for (size_t j = 0; j < r->instance_types[i]->n_offerings; j++)
            assert_string_equal(r->instance_types[i]->offerings[j]->zone, "us-east-1a");
    Tailor__V1__Catalog *r2 = tlr_catalog_restrict_zones(a, z, 1);
    assert_string_equal(r->hash, r2->hash);
    tlr_catalog_free(a);
    tlr_catalog_free(b);
    tlr_catalog_free(c);
    tlr_catalog_free(r);
    tlr_catalog_free(r2);
}

/* A type neither source prices is left out; nothing priced at all is an
 * error, not an empty catalog. */
static void test_unpriced(void **state)
{
    fx *x = *state;
    tlr_catalog_live_in in = { .types = &x->types, .fallback = NULL };
    Tailor__V1__Catalog *c = NULL;
    char err[128] = "";
    assert_int_equal(tlr_catalog_from_ec2(&in, &c, NULL, err, sizeof(err)), TLR_E_NOTFOUND);
    assert_null(c);
    assert_non_null(strstr(err, "priced"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resources_match_file),
        cmocka_unit_test(test_prices_and_zones),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_unpriced),
        cmocka_unit_test(test_labels_without_file),
        cmocka_unit_test(test_spot_modes_and_zone_ids),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
