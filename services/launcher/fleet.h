/* fleet.h - the CreateFleet request for one NodeClaim.
 *
 * From the claim's ranked instance-type options, the NodeClass's subnets,
 * the catalog's offerings and the ICE cache, decide what to ask EC2 for:
 *   - capacity type: spot when the claim allows it (karpenter.sh/
 *     capacity-type) and some option has an available spot offering not
 *     in the ICE cache; otherwise on-demand (Karpenter's rule: spot is
 *     preferred whenever it is allowed and offered);
 *   - overrides: instance type x zone for every option, zone allowed by
 *     the claim (topology.kubernetes.io/zone), offering available and not
 *     ICE'd, each with the NodeClass subnet of that zone holding the most
 *     free addresses; sorted by price, priority = rank (0 = cheapest);
 *     at most LC_FLEET_MAX_OVERRIDES;
 *   - allocation strategy: spot price-capacity-optimized, on-demand
 *     lowest-price; TotalTargetCapacity 1; ClientToken = claim name;
 *   - tags on instance and volumes: kubernetes.io/cluster/<cluster>=owned,
 *     karpenter.sh/nodepool, karpenter.sh/nodeclaim,
 *     karpenter.k8s.aws/ec2nodeclass, eks:eks-cluster-name, Name, plus the
 *     NodeClass's own tags (which never override ours).
 * Pure: no I/O.
 */
#ifndef LC_FLEET_H
#define LC_FLEET_H

#include <stddef.h>

#include "ice.h"
#include "tailor/v1/instancetype.pb-c.h"
#include "tailor/v1/nodeclaim.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"
#include "tlr_ec2.h"

#define LC_FLEET_MAX_OVERRIDES 150

typedef struct lc_fleet_in {
    const Tailor__V1__NodeClaim *claim;     /* borrowed; name set */
    const Tailor__V1__Catalog *catalog;     /* borrowed; types sorted by name */
    const Tailor__V1__NodeClass *nodeclass; /* borrowed; may be NULL (no subnets) */
    lc_ice *ice;                            /* borrowed; may be NULL */
    const char *cluster;                    /* borrowed */
    const char *launch_template_id;         /* borrowed */
    const char *arch;                       /* borrowed; only types of this
                                             * kubernetes.io/arch (the AMI's);
                                             * NULL or "" = any */
} lc_fleet_in;

/* A built request.  req points into the struct's own storage and into
 * the lc_fleet_in's borrowed objects, which must outlive it. */
typedef struct lc_fleet {
    tlr_ec2_fleet_req req;
    Tailor__V1__CapacityType capacity_type;
    tlr_ec2_fleet_override *ov;   /* owned array, req.overrides */
    double *price;                /* owned; price of ov[i], USD/h */
    size_t nov;
    tlr_ec2_tag *tags;            /* owned array; values borrowed or in keybuf */
    size_t ntags;
    char *cluster_tag;            /* owned */
    char *name_tag;               /* owned */
} lc_fleet;

/* Build; on TLR_OK *out is filled (lc_fleet_clear() it).  TLR_E_CAPACITY
 * when no offering is left (all ICE'd, unavailable or not allowed);
 * TLR_E_INVAL for a claim without a name or options. */
int  lc_fleet_build(const lc_fleet_in *in, lc_fleet *out);
void lc_fleet_clear(lc_fleet *f);   /* NULL is fine */

/* Two claims whose fleets have the same key can share one CreateFleet:
 * same capacity type, launch template and overrides (type, subnet, zone,
 * priority) -- all but the per-claim tags and client token.  hex: 65
 * bytes, the SHA-256 of that. */
void lc_fleet_key(const lc_fleet *f, char *hex);

/* The tags of f that are not about one claim (all but
 * karpenter.sh/nodeclaim and Name), copied into out (room for f->ntags);
 * returns how many.  Strings borrowed from f. */
size_t lc_fleet_shared_tags(const lc_fleet *f, tlr_ec2_tag *out);

/* Price of the override (type, zone); 0 when not among them. */
double lc_fleet_price(const lc_fleet *f, const char *type, const char *zone);

/* The catalog's instance type of that name, or NULL (binary search). */
const Tailor__V1__InstanceType *lc_catalog_find(const Tailor__V1__Catalog *cat,
                                                const char *name);

#endif
