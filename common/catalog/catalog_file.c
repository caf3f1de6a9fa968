/* catalog_file.c - tlr_catalog.h: a catalog JSON file -> tailor.v1 Catalog.
 *
 * One pass over the array; every entry becomes an InstanceType, validated
 * as it goes (a name, non-negative quantities below sane ceilings), then
 * the list is sorted by name and the catalog hashed.  All memory is
 * malloc'ed so the result is freed with protobuf-c's free_unpacked.
 */
#include "tlr_catalog.h"
#include "catalog_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_labels.h"

#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)
#define GB 1000000000LL
/* Sanity ceilings: larger values are a broken file, not a machine. */
#define MAX_VCPU 100000
#define MAX_MEM_MIB (1LL << 34)
#define MAX_COUNT 1000000

#define PUSH(arr, n, x)                                         \
    do {                                                        \
        (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr))); \
        (arr)[(n)++] = (x);                                     \
    } while (0)

static void add_req(Tailor__V1__InstanceType *t, const char *key, const char *value)
{
    if (!value || !value[0])
        return;
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup(key);
    r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    PUSH(r->values, r->n_values, tlr_strdup(value));
    PUSH(t->requirements, t->n_requirements, r);
}

static void add_req_int(Tailor__V1__InstanceType *t, const char *key, int64_t v)
{
    char b[32];
    snprintf(b, sizeof(b), "%" PRId64, v);
    add_req(t, key, b);
}

static void add_req_bool(Tailor__V1__InstanceType *t, const char *key, bool v)
{
    add_req(t, key, v ? "true" : "false");
}

/* key In [values...]: a label the node may take either value of. */
static void add_req_any(Tailor__V1__InstanceType *t, const char *key,
                        const char *const *values, size_t n)
{
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup(key);
    r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    for (size_t i = 0; i < n; i++)
        PUSH(r->values, r->n_values, tlr_strdup(values[i]));
    PUSH(t->requirements, t->n_requirements, r);
}

static void add_ext(Tailor__V1__ResourceList *l, const char *name, int64_t v)
{
    if (v <= 0)
        return;
    Tailor__V1__ExtendedResource *e = tlr_malloc(sizeof(*e));
    tailor__v1__extended_resource__init(e);
    e->name = tlr_strdup(name);
    e->value = v;
    PUSH(l->extended, l->n_extended, e);
}

/* An optional non-negative integer field (null/absent = 0). */
static int get_count(json_object *o, const char *key, int64_t max, int64_t *out)
{
    int64_t v = 0;
    int rc = tlr_json_int(o, key, &v);
    if (rc == TLR_E_NOTFOUND)
        v = 0;
    else if (rc != TLR_OK)
        return rc;
    if (v < 0 || v > max)
        return TLR_E_RANGE;
    *out = v;
    return TLR_OK;
}

/* An optional count whose absence means something (null = no label):
 * *present says whether it was given. */
static int get_opt_count(json_object *o, const char *key, int64_t max, int64_t *out,
                         bool *present)
{
    int rc = get_count(o, key, max, out);
    *present = rc == TLR_OK && tlr_json_get(o, key) != NULL;
    return rc;
}

/* An optional boolean: *present says whether it was given (null = no). */
static int get_opt_bool(json_object *o, const char *key, bool *out, bool *present)
{
    int rc = tlr_json_bool(o, key, out);
    *present = rc == TLR_OK;
    return rc == TLR_E_NOTFOUND ? TLR_OK : rc;
}

static const char *str_or(json_object *o, const char *key, const char *dflt)
{
    const char *s = tlr_json_str(o, key);
    return s ? s : dflt;
}

/* Extended resources: Kubernetes name and the file's field, by name. */
static const struct { const char *name, *field; } ext_fields[] = {
    {"amd.com/gpu", "amd_gpu"},
    {"aws.amazon.com/neuron", "neuron"},
    {"aws.amazon.com/neuroncore", "neuroncore"},
    {"nvidia.com/gpu", "nvidia_gpu"},
    {"vpc.amazonaws.com/efa", "efa"},
    {"vpc.amazonaws.com/pod-eni", "pod_eni"},
};

int tlr_catalog_parse_entry(json_object *e, size_t idx, const tlr_catalog_file_opts *o,
                            Tailor__V1__InstanceType **out, char *err, size_t errlen)
{
    const char *name = tlr_json_str(e, "name");
    if (!name || !name[0]) {
        snprintf(err, errlen, "entry %zu: no name", idx);
        return TLR_E_PARSE;
    }
    struct { const char *k; int64_t max; int64_t v; } n[] = {
        {"vcpu", MAX_VCPU, 0}, {"memory_mib", MAX_MEM_MIB, 0},
        {"allocatable_cpu_millicores", MAX_VCPU * 1000LL, 0},
        {"allocatable_memory_mib", MAX_MEM_MIB, 0}, {"max_pods", MAX_COUNT, 0},
        {"ephemeral_storage_gib", 1 << 24, 0}, {"gpu_count", MAX_COUNT, 0},
        {"gpu_memory_mib", MAX_MEM_MIB, 0}, {"generation", MAX_COUNT, 0},
        {"local_nvme_gib", 1 << 24, 0}, {"network_bandwidth_mbps", 1LL << 40, 0},
        {"accelerator_count", MAX_COUNT, 0}, {"eni_max_pods", MAX_COUNT, 0},
    };
    enum { VCPU, MEM, ACPU, AMEM, PODS, EPH, GPUS, GPUMEM, GEN, NVME, NET, ACC, ENIPODS };
    for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
        int rc = get_count(e, n[i].k, n[i].max, &n[i].v);
        if (rc != TLR_OK) {
            snprintf(err, errlen, "instance type %s: %s is not a count in [0, %" PRId64 "]",
                     name, n[i].k, n[i].max);
            return TLR_E_PARSE;
        }
    }
    int64_t ext[sizeof(ext_fields) / sizeof(ext_fields[0])];
    for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        if (get_count(e, ext_fields[i].field, MAX_COUNT, &ext[i]) != TLR_OK) {
            snprintf(err, errlen, "instance type %s: %s is not a count", name,
                     ext_fields[i].field);
            return TLR_E_PARSE;
        }
    }
    int64_t ebs = 0, clock = 0;
    bool has_ebs = false, has_clock = false, eit = false, has_eit = false, nitro = false,
         has_nitro = false;
    const char *bad = NULL;
    if (get_opt_count(e, "ebs_bandwidth_mbps", 1LL << 40, &ebs, &has_ebs) != TLR_OK)
        bad = "ebs_bandwidth_mbps";
    else if (get_opt_count(e, "cpu_sustained_clock_mhz", MAX_COUNT, &clock, &has_clock) != TLR_OK)
        bad = "cpu_sustained_clock_mhz";
    else if (get_opt_bool(e, "encryption_in_transit", &eit, &has_eit) != TLR_OK)
        bad = "encryption_in_transit";
    else if (get_opt_bool(e, "nitro_enclaves_supported", &nitro, &has_nitro) != TLR_OK)
        bad = "nitro_enclaves_supported";
    if (bad) {
        snprintf(err, errlen, "instance type %s: %s is not valid", name, bad);
        return TLR_E_PARSE;
    }
    const char *region = o && o->region ? o->region : "us-east-1";
    json_object *prices = tlr_json_obj(e, "od_price_usd_hr");
    json_object *pv = prices ? json_object_object_get(prices, region) : NULL;
    double price = -1;
    if (pv) {
        if (!json_object_is_type(pv, json_type_double) && !json_object_is_type(pv, json_type_int)) {
            snprintf(err, errlen, "instance type %s: price for %s is not a number", name, region);
            return TLR_E_PARSE;
        }
        price = json_object_get_double(pv);
        if (!(price >= 0 && price < 1e6)) {
            snprintf(err, errlen, "instance type %s: price %g out of range", name, price);
            return TLR_E_PARSE;
        }
    }
    if (price < 0) {
        *out = NULL;   /* not sold in this region */
        return TLR_OK;
    }

    Tailor__V1__InstanceType *t = tlr_malloc(sizeof(*t));
    tailor__v1__instance_type__init(t);
    t->name = tlr_strdup(name);
    t->family = tlr_strdup(str_or(e, "family", ""));
    t->category = tlr_strdup(str_or(e, "category", ""));
    t->generation = (int32_t)n[GEN].v;
    t->size = tlr_strdup(str_or(e, "size", ""));
    t->arch = tlr_strdup(str_or(e, "arch", "amd64"));
    PUSH(t->operating_systems, t->n_operating_systems, tlr_strdup(str_or(e, "os", "linux")));
    t->vcpu = (int32_t)n[VCPU].v;
    t->memory_mib = n[MEM].v;
    t->gpu_count = (int32_t)n[GPUS].v;
    t->gpu_name = tlr_strdup(str_or(e, "gpu_name", ""));
    t->gpu_manufacturer = tlr_strdup(str_or(e, "gpu_manufacturer", ""));
    t->gpu_memory_mib = n[GPUMEM].v;
    t->max_pods = (int32_t)n[PODS].v;
    /* The raw ENI figure the node model starts from; files that predate
     * it (and the types vpclimits does not list) have max_pods only. */
    t->eni_max_pods = (int32_t)(n[ENIPODS].v ? n[ENIPODS].v : n[PODS].v);
    /* "local_nvme_gib" holds EC2's TotalSizeInGB (Karpenter's
     * instance-local-nvme label, c5d.large = 50): decimal gigabytes. */
    t->local_nvme_bytes = n[NVME].v * GB;
    t->network_bandwidth_mbps = n[NET].v;
    t->hypervisor = tlr_strdup(str_or(e, "hypervisor", ""));
    bool bm = false;
    (void)tlr_json_bool(e, "bare_metal", &bm);
    t->bare_metal = bm;
    t->cpu_manufacturer = tlr_strdup(str_or(e, "cpu_manufacturer", ""));

    t->allocatable = tlr_malloc(sizeof(*t->allocatable));
    tailor__v1__resource_list__init(t->allocatable);
    t->allocatable->cpu_millis = n[ACPU].v;
    t->allocatable->memory_bytes = n[AMEM].v * MIB;
    t->allocatable->pods = n[PODS].v;
    t->allocatable->ephemeral_storage_bytes = n[EPH].v * GIB;
    t->capacity = tlr_malloc(sizeof(*t->capacity));
    tailor__v1__resource_list__init(t->capacity);
    t->capacity->cpu_millis = n[VCPU].v * 1000;
    t->capacity->memory_bytes = n[MEM].v * MIB;
    t->capacity->pods = n[PODS].v;
    t->capacity->ephemeral_storage_bytes = n[EPH].v * GIB;
    for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        add_ext(t->allocatable, ext_fields[i].name, ext[i]);
        add_ext(t->capacity, ext_fields[i].name, ext[i]);
    }

    /* Karpenter's computeRequirements (tlr_catalog.h lists the rules). */
    add_req(t, TLR_LABEL_INSTANCE_TYPE, t->name);
    add_req(t, TLR_LABEL_ARCH, t->arch);
    add_req(t, TLR_LABEL_OS, t->operating_systems[0]);
    add_req(t, TLR_LABEL_REGION, region);
    add_req(t, TLR_LABEL_INSTANCE_FAMILY, t->family);
    add_req(t, TLR_LABEL_INSTANCE_CATEGORY, t->category);
    if (t->generation > 0)
        add_req_int(t, TLR_LABEL_INSTANCE_GENERATION, t->generation);
    add_req(t, TLR_LABEL_INSTANCE_SIZE, t->size);
    add_req_int(t, TLR_LABEL_INSTANCE_CPU, t->vcpu);
    add_req_int(t, TLR_LABEL_INSTANCE_MEMORY, t->memory_mib);
    /* A GPU is one DescribeInstanceTypes lists, even with count 0 (g6f's
     * fractional GPUs are labelled gpu-count 0); none, no GPU label. */
    if (t->gpu_name[0] || t->gpu_count > 0) {
        add_req(t, TLR_LABEL_INSTANCE_GPU_NAME, t->gpu_name);
        add_req(t, TLR_LABEL_INSTANCE_GPU_MANUFACTURER, t->gpu_manufacturer);
        add_req_int(t, TLR_LABEL_INSTANCE_GPU_COUNT, t->gpu_count);
        if (t->gpu_memory_mib)
            add_req_int(t, TLR_LABEL_INSTANCE_GPU_MEMORY, t->gpu_memory_mib);
    }
    const char *acc_name = str_or(e, "accelerator_name", "");
    if (acc_name[0] || n[ACC].v > 0) {
        add_req(t, TLR_LABEL_INSTANCE_ACCELERATOR_NAME, acc_name);
        add_req(t, TLR_LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
                str_or(e, "accelerator_manufacturer", ""));
        add_req_int(t, TLR_LABEL_INSTANCE_ACCELERATOR_COUNT, n[ACC].v);
    }
    add_req(t, TLR_LABEL_INSTANCE_HYPERVISOR, t->hypervisor);
    add_req(t, TLR_LABEL_INSTANCE_CPU_MANUFACTURER, t->cpu_manufacturer);
    if (has_clock)
        add_req_int(t, TLR_LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ, clock);
    if (n[NVME].v)
        add_req_int(t, TLR_LABEL_INSTANCE_LOCAL_NVME, n[NVME].v);
    if (n[NET].v)
        add_req_int(t, TLR_LABEL_INSTANCE_NETWORK_BANDWIDTH, n[NET].v);
    if (has_ebs)
        add_req_int(t, TLR_LABEL_INSTANCE_EBS_BANDWIDTH, ebs);
    if (has_eit)
        add_req_bool(t, TLR_LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED, eit);
    if (has_nitro)
        add_req_bool(t, TLR_LABEL_NITRO_SANDBOX, nitro);
    /* Karpenter: "-flex" in the part of the name before the dot. */
    const char *dot = strchr(t->name, '.');
    size_t fam_len = dot ? (size_t)(dot - t->name) : strlen(t->name);
    const char *flex = strstr(t->name, "-flex");
    add_req_bool(t, TLR_LABEL_INSTANCE_CAPABILITY_FLEX,
                 flex && (size_t)(flex - t->name) + 5 <= fam_len);
    static const char *const tenancies[] = {"default", "dedicated"};
    add_req_any(t, TLR_LABEL_INSTANCE_TENANCY, tenancies, 2);

    static const char *const dflt_suffix[] = {"a", "b", "c"};
    size_t nz = o && o->zones ? o->n_zones : 3;
    double discount = o ? o->spot_discount : 0;
    for (int spot = 0; spot < 2; spot++) {
        if (spot && o && o->no_spot)
            break;
        for (size_t z = 0; z < nz; z++) {
            Tailor__V1__Offering *of = tlr_malloc(sizeof(*of));
            tailor__v1__offering__init(of);
            char zone[128];
            if (o && o->zones)
                snprintf(zone, sizeof(zone), "%s", o->zones[z]);
            else
                snprintf(zone, sizeof(zone), "%s%s", region, dflt_suffix[z]);
            of->zone = tlr_strdup(zone);
            if (o && o->zones && o->zone_ids && o->zone_ids[z] && o->zone_ids[z][0])
                of->zone_id = tlr_strdup(o->zone_ids[z]);
            of->capacity_type = spot ? TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
                                     : TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
            of->price_per_hour = spot ? price * (1 - discount) : price;
            of->available = 1;
            PUSH(t->offerings, t->n_offerings, of);
        }
    }
    *out = t;
    return TLR_OK;
}

static int by_name(const void *a, const void *b)
{
    const Tailor__V1__InstanceType *x = *(Tailor__V1__InstanceType *const *)a;
    const Tailor__V1__InstanceType *y = *(Tailor__V1__InstanceType *const *)b;
    return strcmp(x->name, y->name);
}

void tlr_catalog_set_hash(Tailor__V1__Catalog *c)
{
    /* The hash is over the catalog packed with hash "". */
    if (c->hash && c->hash != protobuf_c_empty_string)
        free(c->hash);
    c->hash = (char *)protobuf_c_empty_string;
    size_t n = protobuf_c_message_get_packed_size(&c->base);
    uint8_t *buf = tlr_malloc(n + 1);
    protobuf_c_message_pack(&c->base, buf);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(buf, n, md, &mdlen, EVP_sha256(), NULL) != 1)
        mdlen = 0;
    free(buf);
    char *hex = tlr_malloc(2 * mdlen + 1);
    for (unsigned int i = 0; i < mdlen; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    hex[2 * mdlen] = '\0';
    c->hash = hex;
}

int tlr_catalog_finish(Tailor__V1__Catalog *c, char *err, size_t errlen)
{
    if (c->n_instance_types > 1)
        qsort(c->instance_types, c->n_instance_types, sizeof(*c->instance_types), by_name);
    for (size_t i = 1; i < c->n_instance_types; i++) {
        if (strcmp(c->instance_types[i - 1]->name, c->instance_types[i]->name) == 0) {
            snprintf(err, errlen, "instance type %s: listed twice", c->instance_types[i]->name);
            return TLR_E_PARSE;
        }
    }
    tlr_catalog_set_hash(c);
    return TLR_OK;
}

int tlr_catalog_from_json(const char *buf, size_t len, const tlr_catalog_file_opts *o,
                          Tailor__V1__Catalog **out, char *err, size_t errlen)
{
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    if (!buf || !out)
        return TLR_E_INVAL;
    if (o && (!(o->spot_discount >= 0 && o->spot_discount < 1) || (o->zone_ids && !o->zones))) {
        snprintf(err, errlen, "catalog: spot discount %g not in [0, 1), or zone IDs without "
                 "zones", o->spot_discount);
        return TLR_E_INVAL;
    }
    json_object *root = NULL;
    int rc = tlr_json_parse(buf, len, TLR_CATALOG_FILE_MAX, &root, err, errlen);
    if (rc != TLR_OK)
        return rc;
    Tailor__V1__Catalog *c = NULL;
    if (!json_object_is_type(root, json_type_array)) {
        snprintf(err, errlen, "catalog: a JSON array of instance types expected");
        rc = TLR_E_PARSE;
        goto out;
    }
    c = tlr_malloc(sizeof(*c));
    tailor__v1__catalog__init(c);
    c->region = tlr_strdup(o && o->region ? o->region : "us-east-1");
    c->price_source = tlr_strdup(o && o->price_source ? o->price_source : "file");
    size_t n = json_object_array_length(root);
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(root, i);
        if (!json_object_is_type(e, json_type_object)) {
            snprintf(err, errlen, "entry %zu: an object expected", i);
            rc = TLR_E_PARSE;
            goto out;
        }
        Tailor__V1__InstanceType *t = NULL;
        if ((rc = tlr_catalog_parse_entry(e, i, o, &t, err, errlen)) != TLR_OK)
            goto out;
        if (t)
            PUSH(c->instance_types, c->n_instance_types, t);
    }
    if ((rc = tlr_catalog_finish(c, err, errlen)) != TLR_OK)
        goto out;
    *out = c;
    c = NULL;
    rc = TLR_OK;
out:
    tlr_catalog_free(c);
    json_object_put(root);
    return rc;
}

int tlr_catalog_file_load(const char *path, const tlr_catalog_file_opts *o,
                          Tailor__V1__Catalog **out, char *err, size_t errlen)
{
    if (!path || !out)
        return TLR_E_INVAL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return TLR_E_IO;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = TLR_OK;
    for (;;) {
        if (len + 65536 > cap) {
            if (cap > TLR_CATALOG_FILE_MAX) {
                if (err)
                    snprintf(err, errlen, "%s: larger than %u bytes", path, TLR_CATALOG_FILE_MAX);
                rc = TLR_E_TOOBIG;
                goto out;
            }
            cap = cap ? cap * 2 : 1 << 20;
            buf = tlr_realloc(buf, cap);
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                if (err)
                    snprintf(err, errlen, "%s: read error", path);
                rc = TLR_E_IO;
                goto out;
            }
            break;
        }
    }
    rc = tlr_catalog_from_json(buf, len, o, out, err, errlen);
out:
    free(buf);
    fclose(f);
    return rc;
}

void tlr_catalog_free(Tailor__V1__Catalog *c)
{
    if (c)
        tailor__v1__catalog__free_unpacked(c, NULL);
}
