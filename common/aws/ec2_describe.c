/* ec2_describe.c - the Describe* calls behind node-class resolution
 * (subnets, security groups, images) and the live catalog (instance
 * types, their zones, spot prices), with their decoders (tlr_ec2.h).
 *
 * Every call is one paging loop (paged_call) around an action-specific
 * parameter builder and decoder, so paging, the page ceiling and the
 * "answer is not the response we asked for" check are written once.
 * Decoders copy what they keep out of the XML document.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tlr_alloc.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_time.h"

#define MAX_PAGES 100

/* The client struct is private to ec2.c; it holds only the Query client,
 * which ec2.c hands out through tlr_ec2_query(). */

static int64_t num(const tlr_xml_node *n, const char *path)
{
    const char *t = tlr_xml_find_text(n, path);
    return t != NULL && t[0] != '\0' ? strtoll(t, NULL, 10) : 0;
}

static double dnum(const tlr_xml_node *n, const char *path)
{
    const char *t = tlr_xml_find_text(n, path);
    return t != NULL && t[0] != '\0' ? strtod(t, NULL) : 0;
}

static bool flag(const tlr_xml_node *n, const char *path)
{
    const char *t = tlr_xml_find_text(n, path);
    return t != NULL && strcmp(t, "true") == 0;
}

static int64_t when(const tlr_xml_node *n, const char *path)
{
    const char *t = tlr_xml_find_text(n, path);
    int64_t ms = 0;
    if (t == NULL || t[0] == '\0' || tlr_time_parse(t, &ms) != TLR_OK)
        return 0;
    return ms;
}

static void tags_of(const tlr_xml_node *it, tlr_ec2_tag **tags, size_t *ntags)
{
    size_t cap = 0;
    *tags = NULL;
    *ntags = 0;
    for (const tlr_xml_node *t = tlr_xml_find(it, "tagSet/item"); t != NULL;
         t = tlr_xml_next_named(t)) {
        const char *k = tlr_xml_find_text(t, "key");
        if (k == NULL)
            continue;
        TLR_GROW(*tags, cap, *ntags + 1);
        (*tags)[*ntags].key = tlr_strdup(k);
        (*tags)[*ntags].value = tlr_xml_find_dup(t, "value");
        (*ntags)++;
    }
}

static void tags_free(tlr_ec2_tag *tags, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(tags[i].key);
        free(tags[i].value);
    }
    free(tags);
}

const char *tlr_ec2_tag_get(const tlr_ec2_tag *tags, size_t ntags, const char *key)
{
    for (size_t i = 0; i < ntags; i++)
        if (strcmp(tags[i].key, key) == 0)
            return tags[i].value;
    return NULL;
}

static const char *next_of(const tlr_xml_node *root)
{
    const char *t = tlr_xml_find_text(root, "nextToken");
    return t != NULL && t[0] != '\0' ? t : NULL;
}

static bool is_response(const tlr_xml_node *root, const char *name)
{
    return root != NULL && strcmp(tlr_xml_name(root), name) == 0;
}

/* Append to a growing array: the arrays here double in place. */
#define APPEND(list, cap, item)                                   \
    do {                                                          \
        TLR_GROW((list)->v, (cap), (list)->n + 1);                \
        (list)->v[(list)->n++] = (item);                          \
    } while (0)

/* ---- subnets --------------------------------------------------------- */

int tlr_ec2_parse_subnets(const tlr_xml_node *root, tlr_ec2_subnets *out, char **next)
{
    if (!is_response(root, "DescribeSubnetsResponse") || out == NULL)
        return TLR_E_PARSE;
    size_t cap = out->n;   /* allocated >= n: TLR_GROW reallocates from there */
    for (const tlr_xml_node *it = tlr_xml_find(root, "subnetSet/item"); it != NULL;
         it = tlr_xml_next_named(it)) {
        const char *id = tlr_xml_find_text(it, "subnetId");
        if (id == NULL || id[0] == '\0')
            return TLR_E_PARSE;
        tlr_ec2_subnet s = { 0 };
        s.id = tlr_strdup(id);
        s.zone = tlr_xml_find_dup(it, "availabilityZone");
        s.zone_id = tlr_xml_find_dup(it, "availabilityZoneId");
        s.vpc_id = tlr_xml_find_dup(it, "vpcId");
        s.available_ips = num(it, "availableIpAddressCount");
        tags_of(it, &s.tags, &s.ntags);
        APPEND(out, cap, s);
    }
    if (next != NULL)
        *next = tlr_strdup(next_of(root));
    return TLR_OK;
}

void tlr_ec2_subnets_free(tlr_ec2_subnets *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++) {
        tlr_ec2_subnet *s = &l->v[i];
        free(s->id);
        free(s->zone);
        free(s->zone_id);
        free(s->vpc_id);
        tags_free(s->tags, s->ntags);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- security groups ------------------------------------------------- */

int tlr_ec2_parse_security_groups(const tlr_xml_node *root, tlr_ec2_security_groups *out,
                                  char **next)
{
    if (!is_response(root, "DescribeSecurityGroupsResponse") || out == NULL)
        return TLR_E_PARSE;
    size_t cap = out->n;
    for (const tlr_xml_node *it = tlr_xml_find(root, "securityGroupInfo/item"); it != NULL;
         it = tlr_xml_next_named(it)) {
        const char *id = tlr_xml_find_text(it, "groupId");
        if (id == NULL || id[0] == '\0')
            return TLR_E_PARSE;
        tlr_ec2_security_group g = { 0 };
        g.id = tlr_strdup(id);
        g.name = tlr_xml_find_dup(it, "groupName");
        g.vpc_id = tlr_xml_find_dup(it, "vpcId");
        tags_of(it, &g.tags, &g.ntags);
        APPEND(out, cap, g);
    }
    if (next != NULL)
        *next = tlr_strdup(next_of(root));
    return TLR_OK;
}

void tlr_ec2_security_groups_free(tlr_ec2_security_groups *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].id);
        free(l->v[i].name);
        free(l->v[i].vpc_id);
        tags_free(l->v[i].tags, l->v[i].ntags);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- images ---------------------------------------------------------- */

int tlr_ec2_parse_images(const tlr_xml_node *root, tlr_ec2_images *out, char **next)
{
    if (!is_response(root, "DescribeImagesResponse") || out == NULL)
        return TLR_E_PARSE;
    size_t cap = out->n;
    for (const tlr_xml_node *it = tlr_xml_find(root, "imagesSet/item"); it != NULL;
         it = tlr_xml_next_named(it)) {
        const char *id = tlr_xml_find_text(it, "imageId");
        if (id == NULL || id[0] == '\0')
            return TLR_E_PARSE;
        tlr_ec2_image m = { 0 };
        m.id = tlr_strdup(id);
        m.name = tlr_xml_find_dup(it, "name");
        m.arch = tlr_xml_find_dup(it, "architecture");
        m.state = tlr_xml_find_dup(it, "imageState");
        m.owner = tlr_xml_find_dup(it, "imageOwnerId");
        m.creation_ms = when(it, "creationDate");
        m.deprecation_ms = when(it, "deprecationTime");
        tags_of(it, &m.tags, &m.ntags);
        APPEND(out, cap, m);
    }
    if (next != NULL)
        *next = tlr_strdup(next_of(root));
    return TLR_OK;
}

void tlr_ec2_images_free(tlr_ec2_images *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++) {
        tlr_ec2_image *m = &l->v[i];
        free(m->id);
        free(m->name);
        free(m->arch);
        free(m->state);
        free(m->owner);
        tags_free(m->tags, m->ntags);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- instance types -------------------------------------------------- */

static bool listed(const tlr_xml_node *it, const char *path, const char *value)
{
    for (const tlr_xml_node *v = tlr_xml_find(it, path); v != NULL; v = tlr_xml_next_named(v))
        if (strcmp(tlr_xml_text(v), value) == 0)
            return true;
    return false;
}

static void decode_type(const tlr_xml_node *it, tlr_ec2_type_info *t)
{
    const tlr_xml_node *net = tlr_xml_find(it, "networkInfo");
    int64_t dflt = num(net, "defaultNetworkCardIndex");

    t->name = tlr_xml_find_dup(it, "instanceType");
    t->arch = tlr_xml_find_dup(it, "processorInfo/supportedArchitectures/item");
    t->vcpu = (int32_t)num(it, "vCpuInfo/defaultVCpus");
    t->memory_mib = num(it, "memoryInfo/sizeInMiB");
    t->bare_metal = flag(it, "bareMetal");
    t->hypervisor = tlr_xml_find_dup(it, "hypervisor");
    t->cpu_manufacturer = tlr_xml_find_dup(it, "processorInfo/manufacturer");
    t->spot = listed(it, "supportedUsageClasses/item", "spot");
    t->on_demand = listed(it, "supportedUsageClasses/item", "on-demand");
    t->hvm = listed(it, "supportedVirtualizationTypes/item", "hvm");
    t->max_enis = (int32_t)num(net, "maximumNetworkInterfaces");
    t->ipv4_per_eni = (int32_t)num(net, "ipv4AddressesPerInterface");
    for (const tlr_xml_node *c = tlr_xml_find(net, "networkCards/item"); c != NULL;
         c = tlr_xml_next_named(c)) {
        if (num(c, "networkCardIndex") != dflt)
            continue;
        int64_t enis = num(c, "maximumNetworkInterfaces");
        if (enis > 0)
            t->max_enis = (int32_t)enis;
        t->network_mbps = (int64_t)(dnum(c, "baselineBandwidthInGbps") * 1000 + 0.5);
    }
    if (flag(net, "efaSupported"))
        t->efa = (int32_t)num(net, "efaInfo/maximumEfaInterfaces");
    const tlr_xml_node *st = tlr_xml_find(it, "instanceStorageInfo");
    const char *nvme = tlr_xml_find_text(st, "nvmeSupport");
    if (st != NULL && nvme != NULL && strcmp(nvme, "unsupported") != 0)
        t->local_nvme_gb = num(st, "totalSizeInGB");
    const tlr_xml_node *g = tlr_xml_find(it, "gpuInfo/gpus/item");
    t->gpu_count = (int32_t)num(g, "count");
    t->gpu_name = tlr_xml_find_dup(g, "name");
    t->gpu_manufacturer = tlr_xml_find_dup(g, "manufacturer");
    t->gpu_memory_mib = num(g, "memoryInfo/sizeInMiB");
    const tlr_xml_node *nd = tlr_xml_find(it, "neuronInfo/neuronDevices/item");
    t->neuron_devices = (int32_t)num(nd, "count");
    t->neuron_cores = t->neuron_devices * (int32_t)num(nd, "coreInfo/count");
    const tlr_xml_node *ia = tlr_xml_find(it, "inferenceAcceleratorInfo/accelerators/item");
    /* Neuron devices win over the inference accelerators (Karpenter). */
    if (ia != NULL && nd == NULL) {
        t->accelerator_count = (int32_t)num(ia, "count");
        t->accelerator_name = tlr_xml_find_dup(ia, "name");
        t->accelerator_manufacturer = tlr_xml_find_dup(ia, "manufacturer");
    } else {
        t->accelerator_count = t->neuron_devices;
        t->accelerator_name = tlr_xml_find_dup(nd, "name");
        t->accelerator_manufacturer = tlr_strdup(t->neuron_devices > 0 ? "AWS" : "");
    }
    const tlr_xml_node *ebs = tlr_xml_find(it, "ebsInfo");
    const char *opt = tlr_xml_find_text(ebs, "ebsOptimizedSupport");
    if (opt != NULL && strcmp(opt, "default") == 0)
        t->ebs_max_mbps = num(ebs, "ebsOptimizedInfo/maximumBandwidthInMbps");
    t->sustained_clock_mhz =
        (int32_t)(dnum(it, "processorInfo/sustainedClockSpeedInGhz") * 1000 + 0.5);
    t->encryption_in_transit = flag(net, "encryptionInTransitSupported");
    const char *ne = tlr_xml_find_text(it, "nitroEnclavesSupport");
    t->nitro_enclaves = ne != NULL && strcmp(ne, "supported") == 0;
}

int tlr_ec2_parse_instance_types(const tlr_xml_node *root, tlr_ec2_type_infos *out,
                                 char **next)
{
    if (!is_response(root, "DescribeInstanceTypesResponse") || out == NULL)
        return TLR_E_PARSE;
    size_t cap = out->n;
    for (const tlr_xml_node *it = tlr_xml_find(root, "instanceTypeSet/item"); it != NULL;
         it = tlr_xml_next_named(it)) {
        const char *name = tlr_xml_find_text(it, "instanceType");
        if (name == NULL || name[0] == '\0')
            return TLR_E_PARSE;
        tlr_ec2_type_info t = { 0 };
        decode_type(it, &t);
        APPEND(out, cap, t);
    }
    if (next != NULL)
        *next = tlr_strdup(next_of(root));
    return TLR_OK;
}

void tlr_ec2_type_infos_free(tlr_ec2_type_infos *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++) {
        tlr_ec2_type_info *t = &l->v[i];
        free(t->name);
        free(t->arch);
        free(t->hypervisor);
        free(t->cpu_manufacturer);
        free(t->gpu_name);
        free(t->gpu_manufacturer);
        free(t->accelerator_name);
        free(t->accelerator_manufacturer);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- offerings ------------------------------------------------------- */

int tlr_ec2_parse_type_offerings(const tlr_xml_node *root, tlr_ec2_type_offerings *out,
                                 char **next)
{
    if (!is_response(root, "DescribeInstanceTypeOfferingsResponse") || out == NULL)
        return TLR_E_PARSE;
    size_t cap = out->n;
    for (const tlr_xml_node *it = tlr_xml_find(root, "instanceTypeOfferingSet/item");
         it != NULL; it = tlr_xml_next_named(it)) {
        const char *type = tlr_xml_find_text(it, "instanceType");
        const char *loc = tlr_xml_find_text(it, "location");
        if (type == NULL || loc == NULL || type[0] == '\0' || loc[0] == '\0')
            return TLR_E_PARSE;
        tlr_ec2_type_offering o = { tlr_strdup(type), tlr_strdup(loc) };
        APPEND(out, cap, o);
    }
    if (next != NULL)
        *next = tlr_strdup(next_of(root));
    return TLR_OK;
}

void tlr_ec2_type_offerings_free(tlr_ec2_type_offerings *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].type);
        free(l->v[i].zone);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- spot prices ----------------------------------------------------- */

int tlr_ec2_parse_spot_prices(const tlr_xml_node *root, tlr_ec2_spot_prices *out,
                              char **next)
{
    if (!is_response(root, "DescribeSpotPriceHistoryResponse") || out == NULL)
        return TLR_E_PARSE;
    size_t cap = out->n;
    for (const tlr_xml_node *it = tlr_xml_find(root, "spotPriceHistorySet/item"); it != NULL;
         it = tlr_xml_next_named(it)) {
        const char *type = tlr_xml_find_text(it, "instanceType");
        const char *zone = tlr_xml_find_text(it, "availabilityZone");
        const char *price = tlr_xml_find_text(it, "spotPrice");
        if (type == NULL || zone == NULL || price == NULL)
            return TLR_E_PARSE;
        char *end = NULL;
        double p = strtod(price, &end);
        if (end == price || !(p >= 0))
            return TLR_E_PARSE;
        int64_t ts = when(it, "timestamp");
        /* History lists several prices per offering: keep the newest.  A
         * linear search is fine for one page (at most 1000 rows) against
         * what came before, but pages add up: search backwards, where the
         * same type's rows cluster. */
        bool merged = false;
        for (size_t i = out->n; i-- > 0 && !merged;) {
            tlr_ec2_spot_price *s = &out->v[i];
            if (strcmp(s->type, type) == 0 && strcmp(s->zone, zone) == 0) {
                if (ts > s->ts_ms) {
                    s->price = p;
                    s->ts_ms = ts;
                }
                merged = true;
            }
        }
        if (merged)
            continue;
        tlr_ec2_spot_price s = { tlr_strdup(type), tlr_strdup(zone), p, ts };
        APPEND(out, cap, s);
    }
    if (next != NULL)
        *next = tlr_strdup(next_of(root));
    return TLR_OK;
}

void tlr_ec2_spot_prices_free(tlr_ec2_spot_prices *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].type);
        free(l->v[i].zone);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- the calls ------------------------------------------------------- */

typedef void (*add_params_fn)(tlr_aws_params *p, const void *arg);
typedef int (*decode_fn)(const tlr_xml_node *root, void *out, char **next);

static void add_filters(tlr_aws_params *p, const tlr_ec2_filter *f, size_t nf)
{
    for (size_t i = 0; i < nf; i++) {
        tlr_aws_params_addf(p, f[i].name, "Filter.%zu.Name", i + 1);
        for (size_t v = 0; v < f[i].nvalues; v++)
            tlr_aws_params_addf(p, f[i].values[v], "Filter.%zu.Value.%zu", i + 1, v + 1);
    }
}

typedef struct std_args {
    const tlr_ec2_filter *f;
    size_t nf;
    const char *const *ids;
    size_t nids;
    const char *id_key;          /* "SubnetId", "GroupId", "ImageId" */
    const char *const *owners;
    size_t nowners;
    const char *max_results;     /* NULL: none (ids given, or not allowed) */
    const char *const *extra;    /* key, value pairs; NULL-terminated */
} std_args;

static void std_params(tlr_aws_params *p, const void *arg)
{
    const std_args *a = arg;
    add_filters(p, a->f, a->nf);
    for (size_t i = 0; i < a->nids; i++)
        tlr_aws_params_addf(p, a->ids[i], "%s.%zu", a->id_key, i + 1);
    for (size_t i = 0; i < a->nowners; i++)
        tlr_aws_params_addf(p, a->owners[i], "Owner.%zu", i + 1);
    if (a->max_results != NULL && a->nids == 0)
        tlr_aws_params_add(p, "MaxResults", a->max_results);
    for (size_t i = 0; a->extra != NULL && a->extra[i] != NULL; i += 2)
        tlr_aws_params_add(p, a->extra[i], a->extra[i + 1]);
}

static int paged_call(tlr_ec2 *e, const char *action, add_params_fn add, const void *arg,
                      decode_fn decode, void *out, tlr_aws_error *err)
{
    char *token = NULL;
    int rc = TLR_OK;
    tlr_aws_query *q = tlr_ec2_query(e);

    for (int page = 0; page < MAX_PAGES; page++) {
        tlr_aws_params *p;
        tlr_xml_doc *doc = NULL;
        char *next = NULL;

        tlr_aws_params_create(&p);
        add(p, arg);
        if (token != NULL)
            tlr_aws_params_add(p, "NextToken", token);
        rc = tlr_aws_query_call(q, action, p, &doc, err);
        tlr_aws_params_free(p);
        if (rc == TLR_OK) {
            rc = decode(tlr_xml_root(doc), out, &next);
            if (rc != TLR_OK && err != NULL) {
                memset(err, 0, sizeof(*err));
                snprintf(err->message, sizeof(err->message), "%s: unexpected answer", action);
            }
        }
        tlr_xml_free(doc);
        free(token);
        token = next;
        if (rc != TLR_OK || token == NULL)
            break;
    }
    free(token);
    return rc;
}

int tlr_ec2_describe_subnets(tlr_ec2 *e, const tlr_ec2_filter *f, size_t nf,
                             const char *const *ids, size_t nids, tlr_ec2_subnets *out,
                             tlr_aws_error *err)
{
    if (e == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_ec2_subnets got = { 0 };
    std_args a = { f, nf, ids, nids, "SubnetId", NULL, 0, "1000", NULL };
    int rc = paged_call(e, "DescribeSubnets", std_params, &a,
                        (decode_fn)tlr_ec2_parse_subnets, &got, err);
    if (rc != TLR_OK) {
        tlr_ec2_subnets_free(&got);
        return rc;
    }
    *out = got;
    return TLR_OK;
}

int tlr_ec2_describe_security_groups(tlr_ec2 *e, const tlr_ec2_filter *f, size_t nf,
                                     const char *const *ids, size_t nids,
                                     tlr_ec2_security_groups *out, tlr_aws_error *err)
{
    if (e == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_ec2_security_groups got = { 0 };
    std_args a = { f, nf, ids, nids, "GroupId", NULL, 0, "1000", NULL };
    int rc = paged_call(e, "DescribeSecurityGroups", std_params, &a,
                        (decode_fn)tlr_ec2_parse_security_groups, &got, err);
    if (rc != TLR_OK) {
        tlr_ec2_security_groups_free(&got);
        return rc;
    }
    *out = got;
    return TLR_OK;
}

int tlr_ec2_describe_images(tlr_ec2 *e, const tlr_ec2_filter *f, size_t nf,
                            const char *const *ids, size_t nids, const char *const *owners,
                            size_t nowners, tlr_ec2_images *out, tlr_aws_error *err)
{
    if (e == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_ec2_images got = { 0 };
    std_args a = { f, nf, ids, nids, "ImageId", owners, nowners, "1000", NULL };
    int rc = paged_call(e, "DescribeImages", std_params, &a,
                        (decode_fn)tlr_ec2_parse_images, &got, err);
    if (rc != TLR_OK) {
        tlr_ec2_images_free(&got);
        return rc;
    }
    *out = got;
    return TLR_OK;
}

int tlr_ec2_describe_instance_types(tlr_ec2 *e, const tlr_ec2_filter *f, size_t nf,
                                    tlr_ec2_type_infos *out, tlr_aws_error *err)
{
    if (e == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_ec2_type_infos got = { 0 };
    std_args a = { f, nf, NULL, 0, NULL, NULL, 0, "100", NULL };
    int rc = paged_call(e, "DescribeInstanceTypes", std_params, &a,
                        (decode_fn)tlr_ec2_parse_instance_types, &got, err);
    if (rc != TLR_OK) {
        tlr_ec2_type_infos_free(&got);
        return rc;
    }
    *out = got;
    return TLR_OK;
}

int tlr_ec2_describe_instance_type_offerings(tlr_ec2 *e, tlr_ec2_type_offerings *out,
                                             tlr_aws_error *err)
{
    if (e == NULL || out == NULL)
        return TLR_E_INVAL;
    static const char *const extra[] = { "LocationType", "availability-zone", NULL };
    tlr_ec2_type_offerings got = { 0 };
    std_args a = { NULL, 0, NULL, 0, NULL, NULL, 0, "1000", extra };
    int rc = paged_call(e, "DescribeInstanceTypeOfferings", std_params, &a,
                        (decode_fn)tlr_ec2_parse_type_offerings, &got, err);
    if (rc != TLR_OK) {
        tlr_ec2_type_offerings_free(&got);
        return rc;
    }
    *out = got;
    return TLR_OK;
}

int tlr_ec2_describe_spot_price_history(tlr_ec2 *e, int64_t start_ms,
                                        tlr_ec2_spot_prices *out, tlr_aws_error *err)
{
    if (e == NULL || out == NULL)
        return TLR_E_INVAL;
    char ts[TLR_TIME_BUFLEN];
    tlr_time_format_s(start_ms > 0 ? start_ms : tlr_wall_ms(), ts);
    const char *const extra[] = { "ProductDescription.1", "Linux/UNIX",
                                  "ProductDescription.2", "Linux/UNIX (Amazon VPC)",
                                  "StartTime", ts, NULL };
    tlr_ec2_spot_prices got = { 0 };
    std_args a = { NULL, 0, NULL, 0, NULL, NULL, 0, "1000", extra };
    int rc = paged_call(e, "DescribeSpotPriceHistory", std_params, &a,
                        (decode_fn)tlr_ec2_parse_spot_prices, &got, err);
    if (rc != TLR_OK) {
        tlr_ec2_spot_prices_free(&got);
        return rc;
    }
    *out = got;
    return TLR_OK;
}
