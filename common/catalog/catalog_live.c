/* catalog_live.c - a tailor.v1 Catalog from EC2's own answers, with the
 * catalog file as the fallback (tlr_catalog.h, "the live catalog").
 *
 * Design: every live type is first written as a catalog-file entry (the
 * JSON object the file loader reads), with the resource figures computed
 * here from DescribeInstanceTypes and the labels taken from the file when
 * it knows the type; the file loader's own entry parser turns it into an
 * InstanceType.  So both sources go through one conversion (labels,
 * requirements, extended resources) and a type looks the same to the
 * solver whichever source described it.  Only the offerings differ: they
 * are rebuilt from the live zones and prices.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "tlr_alloc.h"
#include "tlr_catalog.h"
#include "tlr_err.h"

#define DEFAULT_FLOOR 0.05
#define EPHEMERAL_GIB 17   /* 20 GiB root - 1 GiB kube-reserved - 10 % eviction */

const Tailor__V1__InstanceType *tlr_catalog_find(const Tailor__V1__Catalog *c,
                                                 const char *name)
{
    size_t lo = 0, hi = c ? c->n_instance_types : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->instance_types[mid]->name, name);
        if (r == 0)
            return c->instance_types[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- Karpenter's overhead model --------------------------------------- */

static int64_t max_pods(const tlr_ec2_type_info *t)
{
    if (t->max_enis <= 0 || t->ipv4_per_eni <= 1)
        return 110;   /* no ENI figures: the kubelet's default */
    return (int64_t)t->max_enis * (t->ipv4_per_eni - 1) + 2;
}

static int64_t alloc_cpu_millis(int32_t vcpu)
{
    static const struct { int64_t upto; double frac; } tiers[] = {
        { 1000, 0.06 }, { 1000, 0.01 }, { 2000, 0.005 }, { INT64_MAX, 0.0025 },
    };
    int64_t cpu = (int64_t)vcpu * 1000, left = cpu, reserved = 0;
    for (size_t i = 0; i < sizeof(tiers) / sizeof(tiers[0]) && left > 0; i++) {
        int64_t part = left < tiers[i].upto ? left : tiers[i].upto;
        reserved += (int64_t)((double)part * tiers[i].frac);
        left -= tiers[i].upto;
    }
    return cpu - reserved;
}

static int64_t alloc_memory_mib(const tlr_ec2_type_info *t, int64_t pods)
{
    int64_t mib = t->memory_mib;
    if (strcmp(t->arch, "arm64") == 0)
        mib -= 64;   /* Graviton reserves 64 MiB of CMA memory */
    mib -= (int64_t)ceil((double)mib * 0.075);
    mib -= 11 * pods + 255;
    mib -= 100;
    return mib > 0 ? mib : 0;
}

/* ---- labels ------------------------------------------------------------ */

/* Karpenter's lowerKabobCase: "Radeon Pro V520" -> "radeon-pro-v520". */
static char *lower(const char *s)
{
    char *d = tlr_strdup(s ? s : "");
    for (char *p = d; *p; p++)
        *p = *p == ' ' ? '-' : (char)tolower((unsigned char)*p);
    return d;
}

/* family, category, generation and size from "m7gd.2xlarge", by
 * Karpenter's rule: category = the leading letters, then an optional
 * "-<n>tb" (u-6tb1.56xlarge), then the generation digits; a name that
 * does not read so has neither label. */
static void name_labels(const char *name, json_object *e)
{
    const char *dot = strchr(name, '.');
    size_t fl = dot ? (size_t)(dot - name) : strlen(name);
    char fam[64], cat[64];
    snprintf(fam, sizeof(fam), "%.*s", (int)fl, name);
    size_t cl = 0;
    while (cl < fl && cl + 1 < sizeof(cat) && islower((unsigned char)name[cl]))
        cl++;
    snprintf(cat, sizeof(cat), "%.*s", (int)cl, name);
    const char *g = name + cl;
    if (*g == '-' && isdigit((unsigned char)g[1])) {   /* "-6tb" */
        const char *p = g + 1;
        while (isdigit((unsigned char)*p))
            p++;
        if (p[0] == 't' && p[1] == 'b')
            g = p + 2;
    }
    json_object_object_add(e, "family", json_object_new_string(fam));
    if (cl > 0 && dot && g < dot && isdigit((unsigned char)*g)) {
        json_object_object_add(e, "category", json_object_new_string(cat));
        json_object_object_add(e, "generation", json_object_new_int(atoi(g)));
    }
    json_object_object_add(e, "size", json_object_new_string(dot ? dot + 1 : ""));
}

static int64_t ext_of(const Tailor__V1__InstanceType *ft, const char *name)
{
    const Tailor__V1__ResourceList *a = ft ? ft->allocatable : NULL;
    for (size_t i = 0; a && i < a->n_extended; i++)
        if (strcmp(a->extended[i]->name, name) == 0)
            return a->extended[i]->value;
    return 0;
}

static double file_od_price(const Tailor__V1__InstanceType *ft)
{
    for (size_t i = 0; ft && i < ft->n_offerings; i++)
        if (ft->offerings[i]->capacity_type == TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND)
            return ft->offerings[i]->price_per_hour;
    return -1;
}

static void add_s(json_object *e, const char *k, const char *v)
{
    if (v && v[0])
        json_object_object_add(e, k, json_object_new_string(v));
}

static void add_i(json_object *e, const char *k, int64_t v)
{
    json_object_object_add(e, k, json_object_new_int64(v));
}

/* The catalog-file entry for live type t; ft is the file's type of the
 * same name or NULL. */
static json_object *entry_of(const tlr_ec2_type_info *t, const Tailor__V1__InstanceType *ft,
                             const char *region, double od_price)
{
    json_object *e = json_object_new_object();
    add_s(e, "name", t->name);
    if (ft) {
        add_s(e, "family", ft->family);
        add_s(e, "category", ft->category);
        add_i(e, "generation", ft->generation);
        add_s(e, "size", ft->size);
    } else {
        name_labels(t->name, e);
    }
    add_s(e, "arch", strcmp(t->arch, "arm64") == 0 ? "arm64" : "amd64");
    add_s(e, "os", "linux");
    add_i(e, "vcpu", t->vcpu);
    add_i(e, "memory_mib", t->memory_mib);
    int64_t pods = max_pods(t);
    add_i(e, "max_pods", pods);
    if (t->max_enis > 0 && t->ipv4_per_eni > 1)
        add_i(e, "eni_max_pods", pods);   /* else unknown: the loader uses max_pods */
    add_i(e, "allocatable_cpu_millicores", alloc_cpu_millis(t->vcpu));
    add_i(e, "allocatable_memory_mib", alloc_memory_mib(t, pods));
    add_i(e, "ephemeral_storage_gib", ft && ft->allocatable
                                          ? ft->allocatable->ephemeral_storage_bytes >> 30
                                          : EPHEMERAL_GIB);
    /* GPU and accelerator labels only when EC2 lists one (the loader
     * leaves them off otherwise, as Karpenter does). */
    add_i(e, "gpu_count", t->gpu_count);
    char *gname = lower(t->gpu_name), *gman = lower(t->gpu_manufacturer);
    add_s(e, "gpu_name", gname);
    add_s(e, "gpu_manufacturer", gman);
    if (t->gpu_memory_mib)
        add_i(e, "gpu_memory_mib", t->gpu_memory_mib);
    bool nvidia = strcmp(gman, "nvidia") == 0, amd = strcmp(gman, "amd") == 0;
    add_i(e, "nvidia_gpu", nvidia ? t->gpu_count : 0);
    add_i(e, "amd_gpu", amd ? t->gpu_count : 0);
    free(gname);
    free(gman);
    add_i(e, "accelerator_count", t->accelerator_count);
    char *aname = lower(t->accelerator_name), *aman = lower(t->accelerator_manufacturer);
    add_s(e, "accelerator_name", aname);
    add_s(e, "accelerator_manufacturer", aman);
    free(aname);
    free(aman);
    add_i(e, "neuron", t->neuron_devices ? t->neuron_devices : t->accelerator_count);
    add_i(e, "neuroncore", t->neuron_cores);
    add_i(e, "efa", t->efa);
    add_i(e, "pod_eni", ext_of(ft, "vpc.amazonaws.com/pod-eni"));
    if (t->local_nvme_gb)
        add_i(e, "local_nvme_gib", t->local_nvme_gb);
    /* Karpenter reads the bandwidth from its generated table, which the
     * file's figure is (p4d.24xlarge: 400000, all four cards); the
     * description's default card is only the fallback for a type the
     * file does not know. */
    int64_t net = ft && ft->network_bandwidth_mbps ? ft->network_bandwidth_mbps
                                                   : t->network_mbps;
    if (net)
        add_i(e, "network_bandwidth_mbps", net);
    if (t->ebs_max_mbps > 0)
        add_i(e, "ebs_bandwidth_mbps", t->ebs_max_mbps);
    /* Karpenter labels the clock speed whenever EC2 describes the
     * processor, 0 when it gives no figure. */
    add_i(e, "cpu_sustained_clock_mhz", t->sustained_clock_mhz);
    json_object_object_add(e, "encryption_in_transit",
                           json_object_new_boolean(t->encryption_in_transit));
    json_object_object_add(e, "nitro_enclaves_supported",
                           json_object_new_boolean(t->nitro_enclaves));
    add_s(e, "hypervisor", t->hypervisor);
    json_object_object_add(e, "bare_metal", json_object_new_boolean(t->bare_metal));
    char *cm = lower(t->cpu_manufacturer);
    add_s(e, "cpu_manufacturer", cm);
    free(cm);
    json_object *p = json_object_new_object();
    json_object_object_add(p, region, json_object_new_double(od_price));
    json_object_object_add(e, "od_price_usd_hr", p);
    return e;
}

/* ---- offerings --------------------------------------------------------- */

static bool zone_allowed(const tlr_catalog_live_in *in, const char *zone)
{
    if (!in->zones)
        return true;
    for (size_t i = 0; i < in->n_zones; i++)
        if (strcmp(in->zones[i], zone) == 0)
            return true;
    return false;
}

static const char *zone_id_of(const tlr_catalog_live_in *in, const char *zone)
{
    for (size_t i = 0; in->az_names && in->az_ids && i < in->n_az; i++)
        if (in->az_names[i] && strcmp(in->az_names[i], zone) == 0)
            return in->az_ids[i];
    return NULL;
}

static void add_offering(const tlr_catalog_live_in *in, Tailor__V1__InstanceType *it,
                         const char *zone, Tailor__V1__CapacityType ct, double price)
{
    Tailor__V1__Offering *o = tlr_malloc(sizeof(*o));
    tailor__v1__offering__init(o);
    o->zone = tlr_strdup(zone);
    const char *zid = zone_id_of(in, zone);
    if (zid && zid[0])
        o->zone_id = tlr_strdup(zid);
    o->capacity_type = ct;
    o->price_per_hour = price;
    o->available = true;
    it->offerings = tlr_realloc(it->offerings, (it->n_offerings + 1) * sizeof(o));
    it->offerings[it->n_offerings++] = o;
}

static const tlr_ec2_spot_price *spot_of(const tlr_catalog_live_in *in, const char *type,
                                         const char *zone)
{
    for (size_t i = 0; in->spot && i < in->spot->n; i++)
        if (strcmp(in->spot->v[i].type, type) == 0 && strcmp(in->spot->v[i].zone, zone) == 0)
            return &in->spot->v[i];
    return NULL;
}

/* Index of each type's offerings and spot rows, so building is linear:
 * both lists are sorted by type once. */
typedef struct zrow {
    const char *type, *zone;
    const tlr_ec2_spot_price *spot;
} zrow;

static int by_type_zone(const void *a, const void *b)
{
    const zrow *x = a, *y = b;
    int c = strcmp(x->type, y->type);
    return c ? c : strcmp(x->zone, y->zone);
}

static void set_offerings(const tlr_catalog_live_in *in, Tailor__V1__InstanceType *it,
                          const tlr_ec2_type_info *t, double od, const zrow *zr, size_t nzr,
                          tlr_catalog_live_stats *st)
{
    for (size_t i = 0; i < it->n_offerings; i++)
        tailor__v1__offering__free_unpacked(it->offerings[i], NULL);
    free(it->offerings);
    it->offerings = NULL;
    it->n_offerings = 0;
    double floor = in->spot_floor > 0 ? in->spot_floor : DEFAULT_FLOOR;
    for (size_t i = 0; i < nzr; i++) {
        const char *zone = zr[i].zone;
        if (!zone_allowed(in, zone))
            continue;
        if (t->on_demand)
            add_offering(in, it, zone, TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND, od);
        if (!t->spot || in->no_spot)
            continue;
        const tlr_ec2_spot_price *sp = zr[i].spot ? zr[i].spot : spot_of(in, t->name, zone);
        if (sp && sp->price >= od * floor && sp->price > 0) {
            add_offering(in, it, zone, TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT, sp->price);
            st->spot_live++;
            continue;
        }
        if (sp)
            st->spot_implausible++;
        add_offering(in, it, zone, TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT,
                     od * (1 - in->spot_discount));
        st->spot_fallback++;
    }
}

static int by_info_name(const void *a, const void *b)
{
    const tlr_ec2_type_info *x = *(const tlr_ec2_type_info *const *)a;
    const tlr_ec2_type_info *y = *(const tlr_ec2_type_info *const *)b;
    return strcmp(x->name, y->name);
}

int tlr_catalog_from_ec2(const tlr_catalog_live_in *in, Tailor__V1__Catalog **out,
                         tlr_catalog_live_stats *stp, char *err, size_t errlen)
{
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    if (!in || !in->types || !out)
        return TLR_E_INVAL;
    if (!(in->spot_discount >= 0 && in->spot_discount < 1)) {
        snprintf(err, errlen, "spot discount %g not in [0, 1)", in->spot_discount);
        return TLR_E_INVAL;
    }
    tlr_catalog_live_stats st = { 0 };
    const char *region = in->region ? in->region : "us-east-1";
    /* The loader's offerings are replaced by set_offerings: none wanted. */
    tlr_catalog_file_opts fo = { region, in->zones, in->n_zones, 0, NULL, NULL, true };

    /* (type, zone) rows: the offerings, or every allowed zone for every
     * type when EC2 did not say; the spot row of each attached. */
    size_t nzr = 0;
    zrow *zr = NULL;
    if (in->offerings) {
        zr = tlr_calloc(in->offerings->n + 1, sizeof(*zr));
        for (size_t i = 0; i < in->offerings->n; i++)
            zr[nzr++] = (zrow){ in->offerings->v[i].type, in->offerings->v[i].zone, NULL };
    } else {
        size_t nz = in->zones ? in->n_zones : 3;
        zr = tlr_calloc(in->types->n * nz + 1, sizeof(*zr));
        char **names = tlr_calloc(nz + 1, sizeof(char *));
        for (size_t z = 0; z < nz; z++) {
            if (in->zones) {
                names[z] = tlr_strdup(in->zones[z]);
            } else {
                names[z] = tlr_malloc(strlen(region) + 2);
                sprintf(names[z], "%s%c", region, (char)('a' + z)); /* a, b, c */
            }
        }
        for (size_t i = 0; i < in->types->n; i++)
            for (size_t z = 0; z < nz; z++)
                zr[nzr++] = (zrow){ in->types->v[i].name, names[z], NULL };
        /* The zone names must outlive zr: keep them until the end. */
        fo.zones = (const char *const *)names;
        fo.n_zones = nz;
    }
    qsort(zr, nzr, sizeof(*zr), by_type_zone);
    if (in->spot) {
        zrow *sp = tlr_calloc(in->spot->n + 1, sizeof(*sp));
        for (size_t i = 0; i < in->spot->n; i++)
            sp[i] = (zrow){ in->spot->v[i].type, in->spot->v[i].zone, &in->spot->v[i] };
        qsort(sp, in->spot->n, sizeof(*sp), by_type_zone);
        for (size_t i = 0, j = 0; i < nzr && j < in->spot->n;) {
            int c = by_type_zone(&zr[i], &sp[j]);
            if (c == 0)
                zr[i++].spot = sp[j++].spot;
            else if (c < 0)
                i++;
            else
                j++;
        }
        free(sp);
    }

    Tailor__V1__Catalog *c = tlr_malloc(sizeof(*c));
    tailor__v1__catalog__init(c);
    c->region = tlr_strdup(region);
    c->price_source = tlr_strdup(in->on_demand ? "ec2+pricing-api" : "ec2+file");
    c->instance_types = tlr_calloc(in->types->n + 1, sizeof(*c->instance_types));
    int rc = TLR_OK;
    size_t zi = 0;
    /* Walk the types in name order so the (sorted) zone rows are read once. */
    const tlr_ec2_type_info **order = tlr_calloc(in->types->n + 1, sizeof(*order));
    for (size_t i = 0; i < in->types->n; i++)
        order[i] = &in->types->v[i];
    qsort(order, in->types->n, sizeof(*order), by_info_name);
    for (size_t i = 0; i < in->types->n; i++) {
        const tlr_ec2_type_info *t = order[i];
        st.types_seen++;
        while (zi < nzr && strcmp(zr[zi].type, t->name) < 0)
            zi++;
        size_t z0 = zi;
        while (zi < nzr && strcmp(zr[zi].type, t->name) == 0)
            zi++;
        if (!t->hvm || (strcmp(t->arch, "x86_64") != 0 && strcmp(t->arch, "arm64") != 0) ||
            t->vcpu <= 0 || t->memory_mib <= 0) {
            st.unsupported++;
            continue;
        }
        const Tailor__V1__InstanceType *ft = tlr_catalog_find(in->fallback, t->name);
        double od = in->on_demand ? tlr_prices_find(in->on_demand, t->name) : -1;
        if (od > 0) {
            st.od_live++;
        } else if ((od = file_od_price(ft)) > 0) {
            st.od_fallback++;
        } else {
            st.unpriced++;
            if (!in->keep_unpriced)
                continue;
            od = 0;
        }
        json_object *e = entry_of(t, ft, region, od);
        Tailor__V1__InstanceType *it = NULL;
        rc = tlr_catalog_parse_entry(e, i, &fo, &it, err, errlen);
        json_object_put(e);
        if (rc != TLR_OK)
            break;
        if (!it)
            continue;
        set_offerings(in, it, t, od, zr + z0, zi - z0, &st);
        if (it->n_offerings == 0) {
            tailor__v1__instance_type__free_unpacked(it, NULL);
            continue;
        }
        c->instance_types[c->n_instance_types++] = it;
        st.types_kept++;
    }
    free(order);
    if (!in->offerings) {
        for (size_t z = 0; z < fo.n_zones; z++)
            free((char *)fo.zones[z]);
        free((char **)fo.zones);
    }
    free(zr);
    if (rc == TLR_OK && c->n_instance_types == 0) {
        snprintf(err, errlen, "no instance type is both described and priced");
        rc = TLR_E_NOTFOUND;
    }
    if (rc == TLR_OK)
        rc = tlr_catalog_finish(c, err, errlen);
    if (rc != TLR_OK) {
        tlr_catalog_free(c);
        return rc;
    }
    if (stp)
        *stp = st;
    *out = c;
    return TLR_OK;
}

Tailor__V1__Catalog *tlr_catalog_restrict_zones(const Tailor__V1__Catalog *c,
                                                const char *const *zones, size_t n_zones)
{
    /* A deep copy by pack/unpack: simple, and a catalog is packed anyway
     * to be hashed. */
    size_t n = protobuf_c_message_get_packed_size(&c->base);
    uint8_t *buf = tlr_malloc(n + 1);
    protobuf_c_message_pack(&c->base, buf);
    Tailor__V1__Catalog *r = tailor__v1__catalog__unpack(NULL, n, buf);
    free(buf);
    if (!r)
        abort();   /* we packed it ourselves */
    size_t w = 0;
    for (size_t i = 0; i < r->n_instance_types; i++) {
        Tailor__V1__InstanceType *it = r->instance_types[i];
        size_t k = 0;
        for (size_t j = 0; j < it->n_offerings; j++) {
            bool keep = false;
            for (size_t z = 0; z < n_zones && !keep; z++)
                keep = strcmp(it->offerings[j]->zone, zones[z]) == 0;
            if (keep)
                it->offerings[k++] = it->offerings[j];
            else
                tailor__v1__offering__free_unpacked(it->offerings[j], NULL);
        }
        it->n_offerings = k;
        if (k == 0)
            tailor__v1__instance_type__free_unpacked(it, NULL);
        else
            r->instance_types[w++] = it;
    }
    r->n_instance_types = w;
    tlr_catalog_set_hash(r);
    return r;
}
