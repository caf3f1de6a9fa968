/* nodeshape_test.c - tlr_nodeshape.h: the default shape reproduces the
 * catalog file for every one of its 1,363 types; each kubelet setting,
 * block device and AMI family moves exactly the figures Karpenter's model
 * says; the shaped catalog's hash follows the shape.
 *
 * Types come from ../shared/data/aws-instance-types.json (TAILOR_SHARED_DATA),
 * every entry given a price so none is left out of the catalog.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_nodeshape.h"

#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)

typedef struct fx {
    json_object *file;          /* the JSON array as read */
    Tailor__V1__Catalog *cat;   /* all of its types */
} fx;

static int setup(void **state)
{
    const char *dir = getenv("TAILOR_SHARED_DATA");
    char path[1024];
    snprintf(path, sizeof(path), "%s/aws-instance-types.json", dir ? dir : "../shared/data");
    json_object *a = json_object_from_file(path);
    if (!a || !json_object_is_type(a, json_type_array)) {
        printf("FAIL: cannot read %s\n", path);
        return -1;
    }
    /* A price in us-east-1 for every entry, so the catalog keeps all. */
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *p = json_object_new_object();
        json_object_object_add(p, "us-east-1", json_object_new_double(1.0));
        json_object_object_add(json_object_array_get_idx(a, i), "od_price_usd_hr", p);
    }
    const char *txt = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN);
    fx *x = calloc(1, sizeof(*x));
    char err[256] = "";
    if (tlr_catalog_from_json(txt, strlen(txt), NULL, &x->cat, err, sizeof(err)) != TLR_OK) {
        printf("FAIL: %s\n", err);
        return -1;
    }
    x->file = a;
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    json_object_put(x->file);
    tlr_catalog_free(x->cat);
    free(x);
    return 0;
}

static int64_t jint(json_object *e, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(e, k, &v) && v ? json_object_get_int64(v) : 0;
}

/* A fresh copy of type name (owned: free_unpacked). */
static Tailor__V1__InstanceType *type_copy(const fx *x, const char *name)
{
    const Tailor__V1__InstanceType *t = tlr_catalog_find(x->cat, name);
    assert_non_null(t);
    uint8_t buf[65536];
    size_t n = tailor__v1__instance_type__pack(t, buf);
    assert_true(n < sizeof(buf));
    Tailor__V1__InstanceType *c = tailor__v1__instance_type__unpack(NULL, n, buf);
    assert_non_null(c);
    return c;
}

/* Figures of type name under shape s. */
typedef struct fig { int64_t cpu, mem, pods, eph, cap_mem, cap_eph; } fig;

static fig shape(const fx *x, const char *name, const tlr_node_shape *s)
{
    Tailor__V1__InstanceType *t = type_copy(x, name);
    tlr_node_shape_apply(t, s);
    fig f = { t->allocatable->cpu_millis, t->allocatable->memory_bytes, t->allocatable->pods,
              t->allocatable->ephemeral_storage_bytes, t->capacity->memory_bytes,
              t->capacity->ephemeral_storage_bytes };
    assert_int_equal(t->max_pods, f.pods);
    assert_int_equal(t->capacity->pods, f.pods);
    assert_int_equal(t->overhead->memory_bytes, f.cap_mem - f.mem);
    tailor__v1__instance_type__free_unpacked(t, NULL);
    return f;
}

static const tlr_node_shape dflt = { NULL, NULL, NULL, 0, false };

/* ---- the default shape is the file ------------------------------------ */

static void test_default_is_file(void **state)
{
    fx *x = *state;
    size_t n = json_object_array_length(x->file), same = 0;
    assert_int_equal(n, 1363);
    assert_int_equal(x->cat->n_instance_types, 1363);
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(x->file, i);
        const char *name = json_object_get_string(json_object_object_get(e, "name"));
        fig f = shape(x, name, &dflt);
        fig want = { jint(e, "allocatable_cpu_millicores"),
                     jint(e, "allocatable_memory_mib") * MIB, jint(e, "max_pods"),
                     jint(e, "ephemeral_storage_gib") * GIB, 0, 0 };
        if (f.cpu == want.cpu && f.mem == want.mem && f.pods == want.pods && f.eph == want.eph)
            same++;
        else
            printf("%s: got cpu %lld mem %lld pods %lld eph %lld, want %lld %lld %lld %lld\n",
                   name, (long long)f.cpu, (long long)f.mem, (long long)f.pods,
                   (long long)f.eph, (long long)want.cpu, (long long)want.mem,
                   (long long)want.pods, (long long)want.eph);
    }
    printf("default shape: %zu of %zu types as the file says\n", same, n);
    assert_int_equal(same, n);
    /* and the capacity is Karpenter's: m5.large 8192 MiB less 615 MiB VM overhead */
    fig m5 = shape(x, "m5.large", &dflt);
    assert_int_equal(m5.cap_mem, (8192 - 615) * MIB);
    assert_int_equal(m5.cap_eph, 20 * GIB);
}

/* ---- kubelet settings ---------------------------------------------------- */

static void test_max_pods(void **state)
{
    fx *x = *state;
    Tailor__V1__KubeletConfig k = TAILOR__V1__KUBELET_CONFIG__INIT;
    k.max_pods = 5;
    tlr_node_shape al = { "AL2023", &k, NULL, 0, false };
    fig d = shape(x, "m5.xlarge", &dflt), f = shape(x, "m5.xlarge", &al);
    assert_int_equal(d.pods, 58);
    assert_int_equal(f.pods, 5);
    /* AL2023's bootstrap reserves memory by the ENI figure (58) whatever maxPods says */
    assert_int_equal(f.mem, d.mem);
    assert_int_equal(f.cpu, d.cpu);
    /* Bottlerocket reserves by the pods it runs: 53 fewer x 11 MiB back */
    tlr_node_shape br = { "Bottlerocket", &k, NULL, 0, false };
    fig b = shape(x, "m5.xlarge", &br);
    assert_int_equal(b.pods, 5);
    assert_int_equal(b.mem, d.mem + 53 * 11 * MIB);
    /* Bottlerocket without maxPods: ENI pods, as AL2023 */
    tlr_node_shape br0 = { "Bottlerocket", NULL, NULL, 0, false };
    fig b0 = shape(x, "m5.xlarge", &br0);
    assert_int_equal(b0.pods, 58);
    assert_int_equal(b0.mem, d.mem);
    assert_int_equal(b0.eph, d.eph);   /* pods' storage on the 20 GiB xvdb */
}

static void test_reservations(void **state)
{
    fx *x = *state;
    fig d = shape(x, "m5.xlarge", &dflt);
    assert_int_equal(d.cpu, 3920);

    Tailor__V1__ResourceList sr = TAILOR__V1__RESOURCE_LIST__INIT;
    sr.cpu_millis = 1000;
    Tailor__V1__KubeletConfig k = TAILOR__V1__KUBELET_CONFIG__INIT;
    k.system_reserved = &sr;
    tlr_node_shape s = { NULL, &k, NULL, 0, false };
    fig f = shape(x, "m5.xlarge", &s);
    assert_int_equal(f.cpu, 2920);
    assert_int_equal(f.mem, d.mem);

    sr.memory_bytes = 512 * MIB;
    sr.ephemeral_storage_bytes = GIB;
    f = shape(x, "m5.xlarge", &s);
    assert_int_equal(f.mem, d.mem - 512 * MIB);
    assert_int_equal(f.eph, d.eph - GIB);

    /* kubeReserved replaces the formula, resource by resource */
    Tailor__V1__ResourceList kr = TAILOR__V1__RESOURCE_LIST__INIT;
    kr.cpu_millis = 500;
    Tailor__V1__KubeletConfig k2 = TAILOR__V1__KUBELET_CONFIG__INIT;
    k2.kube_reserved = &kr;
    tlr_node_shape s2 = { NULL, &k2, NULL, 0, false };
    f = shape(x, "m5.xlarge", &s2);
    assert_int_equal(f.cpu, 3500);
    assert_int_equal(f.mem, d.mem);
    kr.memory_bytes = 1 * GIB;
    kr.ephemeral_storage_bytes = 2 * GIB;
    f = shape(x, "m5.xlarge", &s2);
    assert_int_equal(f.mem, f.cap_mem - GIB - 100 * MIB);
    assert_int_equal(f.eph, 20 * GIB - 2 * GIB - 2 * GIB);

    /* a reservation larger than the node: nothing left, not negative */
    sr.cpu_millis = 100000;
    f = shape(x, "m5.xlarge", &s);
    assert_int_equal(f.cpu, 0);
}

static void test_eviction(void **state)
{
    fx *x = *state;
    fig d = shape(x, "m5.xlarge", &dflt);
    Tailor__V1__Label l = TAILOR__V1__LABEL__INIT, *ls[] = { &l };
    Tailor__V1__KubeletConfig k = TAILOR__V1__KUBELET_CONFIG__INIT;
    k.eviction_hard = ls;
    k.n_eviction_hard = 1;
    tlr_node_shape s = { NULL, &k, NULL, 0, false };
    static const struct { const char *key, *value; int64_t mem_delta, eph_delta; } cases[] = {
        { "memory.available", "500Mi", -400 * MIB, 0 },
        { "memory.available", "100Mi", 0, 0 },
        { "memory.available", "100%", 100 * MIB, 0 },   /* 100 % = off */
        { "memory.available", "lots", 0, 0 },           /* unparseable: the default */
        { "nodefs.available", "5Gi", 0, 2 * GIB - 5 * GIB },
        { "nodefs.available", "15%", 0, 2 * GIB - 3 * GIB },
        { "memory.available-soft", "1Gi", 0, 0 },       /* not a signal the model reads */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        l.key = (char *)cases[i].key;
        l.value = (char *)cases[i].value;
        fig f = shape(x, "m5.xlarge", &s);
        if (f.mem - d.mem != cases[i].mem_delta || f.eph - d.eph != cases[i].eph_delta) {
            printf("%s=%s: got mem %+lld eph %+lld, want %+lld %+lld\n", cases[i].key,
                   cases[i].value, (long long)(f.mem - d.mem), (long long)(f.eph - d.eph),
                   (long long)cases[i].mem_delta, (long long)cases[i].eph_delta);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
    /* a percentage of memory capacity (after the VM overhead), rounded up */
    l.key = "memory.available";
    l.value = "10%";
    fig f = shape(x, "m5.xlarge", &s);
    int64_t cap = d.cap_mem, ev = cap / 10 + (cap % 10 != 0);
    assert_int_equal(f.mem, d.mem + 100 * MIB - ev);
    /* evictionSoft does not count */
    Tailor__V1__KubeletConfig k2 = TAILOR__V1__KUBELET_CONFIG__INIT;
    k2.eviction_soft = ls;
    k2.n_eviction_soft = 1;
    tlr_node_shape s2 = { NULL, &k2, NULL, 0, false };
    assert_int_equal(shape(x, "m5.xlarge", &s2).mem, d.mem);
    assert_true(tlr_node_shape_is_default(&s2));
}

static void test_pods_per_core(void **state)
{
    fx *x = *state;
    Tailor__V1__KubeletConfig k = TAILOR__V1__KUBELET_CONFIG__INIT;
    k.pods_per_core = 2;
    tlr_node_shape al = { "AL2023", &k, NULL, 0, false };
    fig d = shape(x, "m5.large", &dflt), f = shape(x, "m5.large", &al);
    assert_int_equal(f.pods, 4);
    assert_int_equal(f.mem, d.mem);   /* reserved by the ENI figure still */
    tlr_node_shape br = { "Bottlerocket", &k, NULL, 0, false };
    assert_int_equal(shape(x, "m5.large", &br).pods, 29);   /* not honoured */
    /* the smaller of maxPods and podsPerCore x vCPUs */
    k.max_pods = 3;
    assert_int_equal(shape(x, "m5.large", &al).pods, 3);
    k.max_pods = 100;
    assert_int_equal(shape(x, "m5.large", &al).pods, 4);
}

/* ---- block devices and instance stores ------------------------------------ */

static void test_ephemeral(void **state)
{
    fx *x = *state;
    Tailor__V1__EbsVolume big = TAILOR__V1__EBS_VOLUME__INIT, small = TAILOR__V1__EBS_VOLUME__INIT;
    big.volume_size_bytes = 100 * GIB;
    small.volume_size_bytes = 40 * GIB;
    Tailor__V1__BlockDeviceMapping root = TAILOR__V1__BLOCK_DEVICE_MAPPING__INIT;
    root.device_name = "/dev/xvda";
    root.root_volume = true;
    root.ebs = &big;
    Tailor__V1__BlockDeviceMapping *one[] = { &root };
    tlr_node_shape s = { NULL, NULL, one, 1, false };
    fig f = shape(x, "m5.large", &s);
    assert_int_equal(f.cap_eph, 100 * GIB);
    assert_int_equal(f.eph, 100 * GIB - GIB - 10 * GIB);

    /* no rootVolume flag: the family's device counts */
    Tailor__V1__BlockDeviceMapping xvdb = TAILOR__V1__BLOCK_DEVICE_MAPPING__INIT;
    xvdb.device_name = "/dev/xvdb";
    xvdb.ebs = &small;
    root.root_volume = false;
    Tailor__V1__BlockDeviceMapping *two[] = { &root, &xvdb };
    tlr_node_shape al = { "AL2023", NULL, two, 2, false };
    assert_int_equal(shape(x, "m5.large", &al).cap_eph, 100 * GIB);
    tlr_node_shape br = { "Bottlerocket", NULL, two, 2, false };
    assert_int_equal(shape(x, "m5.large", &br).cap_eph, 40 * GIB);
    /* Custom: the last mapping */
    tlr_node_shape cu = { "Custom", NULL, two, 2, false };
    assert_int_equal(shape(x, "m5.large", &cu).cap_eph, 40 * GIB);
    /* a mapping of another device only: the family's default */
    Tailor__V1__BlockDeviceMapping *other[] = { &xvdb };
    tlr_node_shape al2 = { "AL2023", NULL, other, 1, false };
    assert_int_equal(shape(x, "m5.large", &al2).cap_eph, 20 * GIB);

    /* RAID0: the NVMe total, in decimal gigabytes */
    tlr_node_shape r = { NULL, NULL, one, 1, true };
    f = shape(x, "c5d.large", &r);
    assert_int_equal(f.cap_eph, 50000000000LL);
    assert_int_equal(f.eph, 50000000000LL - GIB - 5000000000LL);
    /* ... and the root volume where there is no instance store */
    assert_int_equal(shape(x, "m5.large", &r).cap_eph, 100 * GIB);
}

/* ---- families ------------------------------------------------------------ */

static void test_families(void **state)
{
    fx *x = *state;
    /* arm64: 64 MiB less before the VM overhead (m6g.large vs m5.large,
     * both 8 GiB and 29 pods) */
    fig m5 = shape(x, "m5.large", &dflt), m6g = shape(x, "m6g.large", &dflt);
    assert_int_equal(m6g.cap_mem, (8192 - 64 - 610) * MIB);
    assert_int_equal(m5.cap_mem - m6g.cap_mem, (64 - 5) * MIB);
    assert_int_equal(m6g.mem, 6844 * MIB);

    /* Windows: 110 pods, memory reserved by them, a 50 GiB C: drive */
    tlr_node_shape w = { "Windows2022", NULL, NULL, 0, false };
    fig f = shape(x, "m5.large", &w);
    assert_int_equal(f.pods, 110);
    assert_int_equal(f.mem, m5.mem - (110 - 29) * 11 * MIB);
    assert_int_equal(f.cap_eph, 50 * GIB);
    assert_false(tlr_node_shape_is_default(&w));

    /* AL2 sizes as AL2023; Custom takes ENI pods and the 20 GiB default */
    tlr_node_shape a2 = { "AL2", NULL, NULL, 0, false }, cu = { "Custom", NULL, NULL, 0, false };
    f = shape(x, "m5.large", &a2);
    assert_true(f.pods == m5.pods && f.mem == m5.mem && f.eph == m5.eph);
    assert_true(tlr_node_shape_is_default(&a2));
    f = shape(x, "m5.large", &cu);
    assert_true(f.pods == m5.pods && f.mem == m5.mem && f.eph == m5.eph);

    /* a type without an ENI figure: 110 */
    Tailor__V1__InstanceType *t = type_copy(x, "m5.large");
    t->eni_max_pods = 0;
    tlr_node_shape_apply(t, &dflt);
    assert_int_equal(t->allocatable->pods, 110);
    tailor__v1__instance_type__free_unpacked(t, NULL);
}

static void test_shape_of(void **state)
{
    (void)state;
    static const struct { const char *family, *alias, *want; } cases[] = {
        { "", NULL, "AL2023" },
        { "", "al2023@latest", "AL2023" },
        { "", "al2@v20240807", "AL2" },
        { "", "bottlerocket@latest", "Bottlerocket" },
        { "", "windows2022@latest", "Windows2022" },
        { "Custom", "bottlerocket@latest", "Custom" },   /* spec.amiFamily wins */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__NodeClass nc = TAILOR__V1__NODE_CLASS__INIT;
        Tailor__V1__AmiSelectorTerm id = TAILOR__V1__AMI_SELECTOR_TERM__INIT,
                                    al = TAILOR__V1__AMI_SELECTOR_TERM__INIT;
        id.id = "ami-0123";
        Tailor__V1__AmiSelectorTerm *terms[] = { &id, &al };
        nc.ami_family = (char *)cases[i].family;
        if (cases[i].alias) {
            al.alias = (char *)cases[i].alias;
            nc.ami_selector_terms = terms;
            nc.n_ami_selector_terms = 2;
        }
        tlr_node_shape s = tlr_node_shape_of(&nc);
        if (strcmp(s.ami_family, cases[i].want) != 0) {
            printf("case %zu: got %s, want %s\n", i, s.ami_family, cases[i].want);
            failed++;
        }
    }
    assert_int_equal(failed, 0);

    Tailor__V1__NodeClass nc = TAILOR__V1__NODE_CLASS__INIT;
    Tailor__V1__KubeletConfig k = TAILOR__V1__KUBELET_CONFIG__INIT;
    char *dns[] = { "10.0.0.10" };
    k.cluster_dns = dns;
    k.n_cluster_dns = 1;
    nc.kubelet = &k;
    tlr_node_shape s = tlr_node_shape_of(&nc);
    assert_ptr_equal(s.kubelet, &k);
    assert_true(tlr_node_shape_is_default(&s));   /* clusterDNS sizes nothing */
    nc.instance_store_policy = TAILOR__V1__INSTANCE_STORE_POLICY__INSTANCE_STORE_POLICY_RAID0;
    s = tlr_node_shape_of(&nc);
    assert_true(s.raid0);
    assert_false(tlr_node_shape_is_default(&s));
}

/* ---- the shaped catalog -------------------------------------------------- */

static void test_catalog_hash(void **state)
{
    fx *x = *state;
    Tailor__V1__KubeletConfig dns = TAILOR__V1__KUBELET_CONFIG__INIT;
    char *ip[] = { "10.0.0.10" };
    dns.cluster_dns = ip;
    dns.n_cluster_dns = 1;
    tlr_node_shape same = { "AL2023", &dns, NULL, 0, false };
    Tailor__V1__Catalog *d = tlr_catalog_shaped(x->cat, &same);
    assert_string_equal(d->hash, x->cat->hash);   /* no change, no new catalog */
    char k1[TLR_NODE_SHAPE_KEY_LEN], k2[TLR_NODE_SHAPE_KEY_LEN];
    tlr_node_shape_key(&dflt, k1);
    tlr_node_shape_key(&same, k2);
    assert_string_equal(k1, k2);
    assert_int_equal(strlen(k1), 64);

    Tailor__V1__KubeletConfig k = TAILOR__V1__KUBELET_CONFIG__INIT;
    k.max_pods = 5;
    tlr_node_shape five = { NULL, &k, NULL, 0, false };
    Tailor__V1__Catalog *a = tlr_catalog_shaped(x->cat, &five);
    Tailor__V1__Catalog *b = tlr_catalog_shaped(x->cat, &five);
    assert_string_not_equal(a->hash, x->cat->hash);
    assert_string_equal(a->hash, b->hash);   /* deterministic */
    assert_int_equal(a->n_instance_types, x->cat->n_instance_types);
    for (size_t i = 0; i < a->n_instance_types; i++) {
        assert_int_equal(a->instance_types[i]->allocatable->pods, 5);
        /* extended resources and offerings kept */
        assert_int_equal(a->instance_types[i]->allocatable->n_extended,
                         x->cat->instance_types[i]->allocatable->n_extended);
        assert_int_equal(a->instance_types[i]->n_offerings,
                         x->cat->instance_types[i]->n_offerings);
    }
    tlr_node_shape_key(&five, k2);
    assert_string_not_equal(k1, k2);
    k.max_pods = 6;
    Tailor__V1__Catalog *c = tlr_catalog_shaped(x->cat, &five);
    assert_string_not_equal(c->hash, a->hash);
    tlr_node_shape_key(&five, k1);
    assert_string_not_equal(k1, k2);
    tlr_catalog_free(a);
    tlr_catalog_free(b);
    tlr_catalog_free(c);
    tlr_catalog_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_file),
        cmocka_unit_test(test_max_pods),
        cmocka_unit_test(test_reservations),
        cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_pods_per_core),
        cmocka_unit_test(test_ephemeral),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_shape_of),
        cmocka_unit_test(test_catalog_hash),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
