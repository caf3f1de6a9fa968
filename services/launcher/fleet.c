/* fleet.c - build the CreateFleet request for one NodeClaim (fleet.h). */
#include "fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"
#include "tlr_labels.h"
#include "tlr_sigv4.h"


const Tailor__V1__InstanceType *lc_catalog_find(const Tailor__V1__Catalog *cat,
                                                const char *name)
{
    size_t lo = 0, hi = cat->n_instance_types;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(cat->instance_types[mid]->name, name);
        if (c == 0)
            return cat->instance_types[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The subnet of zone with the most free addresses; NULL when the
 * NodeClass has none there. */
static const char *best_subnet(const Tailor__V1__NodeClass *nc, const char *zone)
{
    const Tailor__V1__ResolvedSubnet *best = NULL;
    if (!nc)
        return NULL;
    for (size_t i = 0; i < nc->n_subnets; i++) {
        const Tailor__V1__ResolvedSubnet *s = nc->subnets[i];
        if (strcmp(s->zone, zone) != 0)
            continue;
        if (!best || s->available_ips > best->available_ips)
            best = s;
    }
    return best ? best->id : NULL;
}

static bool usable(const lc_fleet_in *in, const char *type, const Tailor__V1__Offering *o,
                   Tailor__V1__CapacityType ct)
{
    if (o->capacity_type != ct || !o->available)
        return false;
    if (!tlr_nodeclaim_allows(in->claim, TLR_LABEL_ZONE, o->zone))
        return false;
    /* With subnets resolved, a zone without one cannot be launched in. */
    if (in->nodeclass && in->nodeclass->n_subnets > 0 && !best_subnet(in->nodeclass, o->zone))
        return false;
    return !(in->ice && lc_ice_unavailable(in->ice, type, o->zone, ct));
}

/* Count (and with f, append) the usable overrides of capacity type ct. */
static size_t collect(const lc_fleet_in *in, Tailor__V1__CapacityType ct, lc_fleet *f)
{
    size_t n = 0;
    for (size_t i = 0; i < in->claim->n_instance_type_options; i++) {
        const char *type = in->claim->instance_type_options[i]->name;
        const Tailor__V1__InstanceType *it = lc_catalog_find(in->catalog, type);
        if (!it || (in->arch && in->arch[0] && it->arch[0] && strcmp(it->arch, in->arch) != 0))
            continue;
        for (size_t j = 0; j < it->n_offerings; j++) {
            const Tailor__V1__Offering *o = it->offerings[j];
            if (!usable(in, type, o, ct))
                continue;
            if (f) {
                tlr_ec2_fleet_override *ov = &f->ov[f->nov];
                ov->instance_type = it->name;
                ov->zone = o->zone;
                ov->subnet_id = best_subnet(in->nodeclass, o->zone);
                ov->priority = -1;
                f->price[f->nov++] = o->price_per_hour;
            }
            n++;
        }
    }
    return n;
}

static void sort_by_price(lc_fleet *f)
{
    /* Insertion sort: stable (ties keep the solver's ranking) and n is
     * at most a few hundred. */
    for (size_t i = 1; i < f->nov; i++) {
        tlr_ec2_fleet_override ov = f->ov[i];
        double p = f->price[i];
        size_t j = i;
        while (j > 0 && f->price[j - 1] > p) {
            f->ov[j] = f->ov[j - 1];
            f->price[j] = f->price[j - 1];
            j--;
        }
        f->ov[j] = ov;
        f->price[j] = p;
    }
}

static void add_tag(lc_fleet *f, const char *key, const char *value)
{
    for (size_t i = 0; i < f->ntags; i++)
        if (strcmp(f->tags[i].key, key) == 0)
            return;   /* first writer wins: ours come first */
    f->tags[f->ntags].key = (char *)key;
    f->tags[f->ntags].value = (char *)value;
    f->ntags++;
}

int lc_fleet_build(const lc_fleet_in *in, lc_fleet *out)
{
    const Tailor__V1__NodeClaim *c = in->claim;
    if (!c->name || !c->name[0] || c->n_instance_type_options == 0)
        return TLR_E_INVAL;

    Tailor__V1__CapacityType ct = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
    size_t n = 0;
    if (tlr_nodeclaim_allows(c, TLR_LABEL_CAPACITY_TYPE, "spot"))
        n = collect(in, TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT, NULL);
    if (n > 0)
        ct = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;
    else if (tlr_nodeclaim_allows(c, TLR_LABEL_CAPACITY_TYPE, "on-demand"))
        n = collect(in, ct, NULL);
    if (n == 0)
        return TLR_E_CAPACITY;

    lc_fleet f = { 0 };
    f.capacity_type = ct;
    f.ov = tlr_calloc(n, sizeof(*f.ov));
    f.price = tlr_calloc(n, sizeof(*f.price));
    collect(in, ct, &f);
    sort_by_price(&f);
    if (f.nov > LC_FLEET_MAX_OVERRIDES)
        f.nov = LC_FLEET_MAX_OVERRIDES;
    for (size_t i = 0; i < f.nov; i++)
        f.ov[i].priority = (double)i;

    size_t nctags = in->nodeclass ? in->nodeclass->n_tags : 0;
    f.tags = tlr_calloc(6 + nctags, sizeof(*f.tags));
    size_t len = strlen(in->cluster) + sizeof("kubernetes.io/cluster/");
    f.cluster_tag = tlr_malloc(len);
    snprintf(f.cluster_tag, len, "kubernetes.io/cluster/%s", in->cluster);
    len = strlen(c->nodepool) + strlen(c->name) + 2;
    f.name_tag = tlr_malloc(len);
    snprintf(f.name_tag, len, "%s/%s", c->nodepool, c->name);
    add_tag(&f, f.cluster_tag, "owned");
    add_tag(&f, TLR_LABEL_NODEPOOL, c->nodepool);
    add_tag(&f, TLR_TAG_NODECLAIM, c->name);
    add_tag(&f, TLR_LABEL_NODECLASS, c->node_class);
    add_tag(&f, "eks:eks-cluster-name", in->cluster);
    add_tag(&f, "Name", f.name_tag);
    for (size_t i = 0; i < nctags; i++)
        add_tag(&f, in->nodeclass->tags[i]->key, in->nodeclass->tags[i]->value);

    f.req.launch_template_id = in->launch_template_id;
    f.req.overrides = f.ov;
    f.req.noverrides = f.nov;
    f.req.target_capacity = 1;
    f.req.spot = ct == TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;
    f.req.spot_allocation = "price-capacity-optimized";
    f.req.on_demand_allocation = "lowest-price";
    f.req.tags = f.tags;
    f.req.ntags = f.ntags;
    f.req.client_token = c->name;
    *out = f;
    return TLR_OK;
}

void lc_fleet_clear(lc_fleet *f)
{
    if (!f)
        return;
    free(f->ov);
    free(f->price);
    free(f->tags);
    free(f->cluster_tag);
    free(f->name_tag);
    memset(f, 0, sizeof(*f));
}

double lc_fleet_price(const lc_fleet *f, const char *type, const char *zone)
{
    for (size_t i = 0; i < f->nov; i++)
        if (strcmp(f->ov[i].instance_type, type) == 0 &&
            (!zone || !zone[0] || strcmp(f->ov[i].zone, zone) == 0))
            return f->price[i];
    return 0;
}

void lc_fleet_key(const lc_fleet *f, char *hex)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 22);
    tlr_buf_printf(&b, "%d|%s|", (int)f->capacity_type, f->req.launch_template_id
                                                             ? f->req.launch_template_id : "");
    for (size_t i = 0; i < f->nov; i++)
        tlr_buf_printf(&b, "%s/%s/%s/%g;", f->ov[i].instance_type,
                       f->ov[i].subnet_id ? f->ov[i].subnet_id : "",
                       f->ov[i].zone ? f->ov[i].zone : "", f->ov[i].priority);
    tlr_sigv4_sha256_hex(b.data ? b.data : "", b.len, hex);
    tlr_buf_free(&b);
}

size_t lc_fleet_shared_tags(const lc_fleet *f, tlr_ec2_tag *out)
{
    size_t n = 0;
    for (size_t i = 0; i < f->ntags; i++)
        if (strcmp(f->tags[i].key, TLR_TAG_NODECLAIM) != 0 &&
            strcmp(f->tags[i].key, "Name") != 0)
            out[n++] = f->tags[i];
    return n;
}
