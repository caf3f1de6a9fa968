/* lc_testkit.h - builders of catalogs, claims and batches for the launcher's
 * tests.  Every builder returns a message owned by the caller
 * (protobuf_c_message_free_unpacked), made with malloc'd strings. */
#ifndef LC_TESTKIT_H
#define LC_TESTKIT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tailor/v1/nodeclaim.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "lc_fake.h"
#include "tlr_alloc.h"

#define TK_PUSH(arr, n, x) \
    do { (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr))); (arr)[(n)++] = (x); } while (0)

/* Add offering "zone:ct:price" to it (ct 'o' on-demand, 's' spot). */
static inline void tk_offer(Tailor__V1__InstanceType *it, const char *zone, char ct, double price)
{
    Tailor__V1__Offering *o = tlr_malloc(sizeof(*o));
    tailor__v1__offering__init(o);
    o->zone = tlr_strdup(zone);
    o->capacity_type = ct == 's' ? TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
                                 : TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
    o->price_per_hour = price;
    o->available = true;
    TK_PUSH(it->offerings, it->n_offerings, o);
}

/* Append a type; names must be added in sorted order. */
static inline Tailor__V1__InstanceType *tk_type(Tailor__V1__Catalog *c, const char *name)
{
    Tailor__V1__InstanceType *it = tlr_malloc(sizeof(*it));
    tailor__v1__instance_type__init(it);
    it->name = tlr_strdup(name);
    TK_PUSH(c->instance_types, c->n_instance_types, it);
    return it;
}

/* c5.large: on-demand 0.085 in a, b, c.  m5.large: on-demand 0.096 in a, b;
 * spot 0.040 in a, 0.035 in b.  r5.large: on-demand 0.126 in c. */
static inline Tailor__V1__Catalog *tk_catalog(void)
{
    Tailor__V1__Catalog *c = tlr_malloc(sizeof(*c));
    tailor__v1__catalog__init(c);
    c->hash = tlr_strdup("cafe01");
    Tailor__V1__InstanceType *it = tk_type(c, "c5.large");
    tk_offer(it, "us-east-1a", 'o', 0.085);
    tk_offer(it, "us-east-1b", 'o', 0.085);
    tk_offer(it, "us-east-1c", 'o', 0.085);
    it = tk_type(c, "m5.large");
    tk_offer(it, "us-east-1a", 'o', 0.096);
    tk_offer(it, "us-east-1b", 'o', 0.096);
    tk_offer(it, "us-east-1a", 's', 0.040);
    tk_offer(it, "us-east-1b", 's', 0.035);
    it = tk_type(c, "r5.large");
    tk_offer(it, "us-east-1c", 'o', 0.126);
    return c;
}

static inline void tk_req(Tailor__V1__NodeClaim *nc, const char *key, Tailor__V1__SelectorOperator op,
                          const char *v1, const char *v2)
{
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup(key);
    r->operator_ = op;
    if (v1)
        TK_PUSH(r->values, r->n_values, tlr_strdup(v1));
    if (v2)
        TK_PUSH(r->values, r->n_values, tlr_strdup(v2));
    TK_PUSH(nc->requirements, nc->n_requirements, r);
}

/* A claim of pool "default", class "default", options as given (NULL
 * ends), planned pods "p1".."pN". */
static inline Tailor__V1__NodeClaim *tk_claim(const char *name, int npods, const char *opt1,
                                              const char *opt2, const char *opt3)
{
    Tailor__V1__NodeClaim *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_claim__init(nc);
    if (name)
        nc->name = tlr_strdup(name);
    nc->nodepool = tlr_strdup("default");
    nc->node_class = tlr_strdup("default");
    const char *opts[3] = { opt1, opt2, opt3 };
    for (int i = 0; i < 3 && opts[i]; i++) {
        Tailor__V1__InstanceTypeOption *o = tlr_malloc(sizeof(*o));
        tailor__v1__instance_type_option__init(o);
        o->name = tlr_strdup(opts[i]);
        TK_PUSH(nc->instance_type_options, nc->n_instance_type_options, o);
    }
    for (int i = 1; i <= npods; i++) {
        char b[16];
        snprintf(b, sizeof(b), "p%d", i);
        TK_PUSH(nc->planned_pod_uids, nc->n_planned_pod_uids, tlr_strdup(b));
    }
    return nc;
}

static inline Tailor__V1__Pod *tk_pod(const char *uid)
{
    Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
    tailor__v1__pod__init(p);
    p->uid = tlr_strdup(uid);
    p->namespace_ = tlr_strdup("default");
    p->name = tlr_strdup(uid);
    return p;
}

/* A batch with pods p1..pN and one NodePool "default" -> class "default". */
static inline Tailor__V1__PendingBatch *tk_batch(int npods)
{
    Tailor__V1__PendingBatch *b = tlr_malloc(sizeof(*b));
    tailor__v1__pending_batch__init(b);
    b->batch_id = tlr_strdup("b-1");
    for (int i = 1; i <= npods; i++) {
        char u[16];
        snprintf(u, sizeof(u), "p%d", i);
        TK_PUSH(b->pending_pods, b->n_pending_pods, tk_pod(u));
    }
    b->cluster = tlr_malloc(sizeof(*b->cluster));
    tailor__v1__cluster_state__init(b->cluster);
    Tailor__V1__NodePool *np = tlr_malloc(sizeof(*np));
    tailor__v1__node_pool__init(np);
    np->name = tlr_strdup("default");
    np->uid = tlr_strdup("uid-np");
    np->node_class_ref = tlr_malloc(sizeof(*np->node_class_ref));
    tailor__v1__node_class_ref__init(np->node_class_ref);
    np->node_class_ref->name = tlr_strdup("default");
    TK_PUSH(b->cluster->nodepools, b->cluster->n_nodepools, np);
    TK_PUSH(b->cluster->node_classes, b->cluster->n_node_classes,
            lc_fake_nodeclass("default", NULL));
    return b;
}

/* A SolveResponse proposing claim (handed over; may be NULL). */
static inline Tailor__V1__SolveResponse *tk_resp(Tailor__V1__NodeClaim *claim)
{
    Tailor__V1__SolveResponse *r = tlr_malloc(sizeof(*r));
    tailor__v1__solve_response__init(r);
    if (claim) {
        if (claim->name[0]) {   /* the solver never names claims */
            free(claim->name);
            claim->name = (char *)protobuf_c_empty_string;
        }
        TK_PUSH(r->new_nodeclaims, r->n_new_nodeclaims, claim);
    }
    return r;
}

#endif
