/* view.h - one pass's view of the cluster: the watcher's snapshot with
 * the joins every disruption decision needs done once.
 *
 * For every Node: its NodeClaim (by name, providerID or status.nodeName),
 * its NodePool, its price (the node's, its claim's, else the catalog's
 * offering for its type, zone and capacity type), whether it is
 * Initialized (Karpenter: its NodeClaim's Initialized condition; a node
 * tailor does not manage counts as initialized when Ready), whether it is
 * already being disrupted (the karpenter.sh/disrupted taint, or it or its
 * claim is being deleted), and when its pods last changed (the latest of
 * its claim's creation, its pods' creation, pod removals seen on the
 * watcher's "cluster" topic, and the disruptor's own start: after a
 * restart every node waits consolidateAfter again, never less).
 *
 * The view owns the snapshot and may adjust it for the solver: each
 * Node's `initialized` is set from the join above (the watcher only reads
 * the karpenter.sh/initialized label) and its price filled in.
 */
#ifndef DS_VIEW_H
#define DS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"

typedef struct ds_vnode {
    Tailor__V1__Node *node;                 /* borrowed from the snapshot */
    const Tailor__V1__NodeClaim *claim;     /* NULL when none */
    const Tailor__V1__NodePool *pool;       /* NULL when none */
    double price;                           /* USD/hour; 0 unknown */
    bool initialized;
    bool disrupting;
    bool do_not_disrupt;                    /* node annotation karpenter.sh/do-not-disrupt=true */
    int64_t last_pod_event_ms;
    size_t moving;                          /* reschedulable pods (not DaemonSet, not terminal) */
} ds_vnode;

/* Pod removals per node, fed from the "cluster" topic (memory only). */
typedef struct ds_podevents ds_podevents;
void ds_podevents_create(int64_t start_ms, ds_podevents **out);   /* owned */
void ds_podevents_free(ds_podevents *e);
void ds_podevents_note(ds_podevents *e, const char *node, int64_t at_ms);
int64_t ds_podevents_last(const ds_podevents *e, const char *node);  /* >= start */

typedef struct ds_view {
    Tailor__V1__SnapshotResponse *snap;     /* owned */
    Tailor__V1__ClusterState *cs;           /* borrowed from snap */
    ds_vnode *nodes;                        /* owned; one per cs->nodes[i], same order */
    size_t nnodes;
    const Tailor__V1__Catalog *catalog;     /* borrowed; may be NULL */
    int64_t now_ms;
    /* Some pod carries a required pod (anti-)affinity term: simulations
     * must see every node with its pods (sim.h). */
    bool affinity;
    void *by_name;                          /* node name -> ds_vnode (an lh_table) */
} ds_view;

/* Build over snap (handed over).  catalog and ev borrowed (may be NULL).
 * *out owned: ds_view_free(). */
void ds_view_build(Tailor__V1__SnapshotResponse *snap, const Tailor__V1__Catalog *catalog,
                   const ds_podevents *ev, int64_t now_ms, ds_view **out);
void ds_view_free(ds_view *v);   /* NULL fine */

ds_vnode *ds_view_node(const ds_view *v, const char *name);           /* borrowed or NULL */
ds_vnode *ds_view_node_of_claim(const ds_view *v, const char *claim); /* borrowed or NULL */
/* A NodeClaim still on its way (not Initialized, not deleting) created at
 * most within_ms before the view was taken: capacity about to appear.
 * Borrowed or NULL. */
const Tailor__V1__NodeClaim *ds_view_launching_claim(const ds_view *v, int64_t within_ms);
const Tailor__V1__NodePool *ds_view_pool(const ds_view *v, const char *name);
const Tailor__V1__NodeClass *ds_view_class(const ds_view *v, const char *name);
const Tailor__V1__PodDisruptionBudget *ds_view_pdb(const ds_view *v, const char *ns_name);

/* The catalog's price of type in zone for capacity type; 0 when unknown. */
double ds_catalog_price(const Tailor__V1__Catalog *c, const char *type, const char *zone,
                        Tailor__V1__CapacityType ct);
const Tailor__V1__InstanceType *ds_catalog_type(const Tailor__V1__Catalog *c, const char *type);

/* Is p a pod that must move when its node goes (not DaemonSet, not
 * terminal, not a mirror pod)? */
bool ds_pod_moves(const Tailor__V1__Pod *p);

#endif
