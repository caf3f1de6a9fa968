/* tlr_kread.h - NodeClaims and Nodes read from Kubernetes JSON into plain
 * structs, for the controllers that act on them (launcher, disruptor).
 *
 * tlr_kubeobj.h converts objects into tailor.v1 messages with validation,
 * for the solver's view of the cluster.  The launcher and the disruptor
 * need less and need it lenient: a listed NodeClaim or Node is always read,
 * whatever it carries, and a field that is absent or of the wrong type
 * reads as "" (strings), 0 (times: a timestamp that does not parse is 0
 * too) or false.  One reader serves both services, so a field means the
 * same thing in each.
 *
 * Where an object lists a condition type twice, the first entry counts.
 *
 * Every string field is owned by the struct (tlr_kclaim_clear /
 * tlr_knode_clear, or the list's _free).  The readers fill every string
 * field, "" when absent, except tlr_knode.resource_version (NULL when
 * absent); clear and free also accept structs whose string fields were
 * left NULL (the services' recording fakes fill only what their side
 * uses).
 */
#ifndef TLR_KREAD_H
#define TLR_KREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* A NodeClaim (karpenter.sh/v1). */
typedef struct tlr_kclaim {
    char *name, *uid;
    char *nodepool;          /* karpenter.sh/nodepool label */
    char *nodeclass;         /* karpenter.k8s.aws/ec2nodeclass label */
    char *provider_id;       /* status.providerID as written; "" before launch */
    char *instance_id;       /* its last path element; "" before launch */
    char *node_name;         /* status.nodeName */
    int64_t creation_ms;     /* metadata.creationTimestamp */
    int64_t deletion_ms;     /* metadata.deletionTimestamp; 0 = not deleting */
    bool finalizer;          /* carries karpenter.sh/termination */
    int64_t tgp_ms;          /* spec.terminationGracePeriod; 0 = unset */
    int64_t term_ts_ms;      /* karpenter.sh/nodeclaim-termination-timestamp
                              * annotation; 0 = unset */
    bool initialized;        /* condition Initialized=True */
    bool launched;           /* condition Launched=True */
    /* The termination's conditions: status "True", "False", "Unknown" or
     * "" (absent), and Drained's message. */
    char drained[8], terminating[8];
    char *drained_msg;
    /* topology.kubernetes.io/zone and karpenter.sh/capacity-type labels
     * ("" until launched), and the reason of a DisruptionReason=True
     * condition ("" when absent); truncated to fit. */
    char zone[64], capacity_type[16], disruption_reason[48];
} tlr_kclaim;

typedef struct tlr_kclaims {
    tlr_kclaim *v;
    size_t n;
} tlr_kclaims;

/* A Node's spec.taints entry. */
typedef struct tlr_ktaint {
    char *key, *value, *effect;   /* effect as Kubernetes spells it: "NoSchedule" */
} tlr_ktaint;

/* A Node (core/v1). */
typedef struct tlr_knode {
    char *name, *uid;
    char *provider_id;       /* spec.providerID */
    char *nodepool;          /* karpenter.sh/nodepool label; "" = not managed */
    char *resource_version;  /* metadata.resourceVersion; NULL when absent */
    int64_t creation_ms;     /* metadata.creationTimestamp */
    int64_t deletion_ms;     /* metadata.deletionTimestamp; 0 = not deleting */
    bool finalizer;          /* carries karpenter.sh/termination */
    bool ready;              /* condition Ready=True */
    bool tainted;            /* carries karpenter.sh/disrupted:NoSchedule */
    bool unschedulable;      /* spec.unschedulable (cordoned) */
    bool do_not_disrupt;     /* annotation karpenter.sh/do-not-disrupt=true */
    char zone[64];           /* topology.kubernetes.io/zone label; truncated */
    tlr_ktaint *taints;      /* spec.taints with a key, ntaints of them */
    size_t ntaints;
    char **label_keys, **label_values;   /* metadata.labels ("" for a non-string value) */
    size_t nlabels;
    char **extended;         /* status.allocatable names that are neither cpu,
                              * memory, pods, ephemeral-storage, hugepages-*
                              * nor attachable-volumes-*, with a quantity > 0
                              * (nvidia.com/gpu, ...) */
    size_t nextended;
} tlr_knode;

typedef struct tlr_knodes {
    tlr_knode *v;
    size_t n;
} tlr_knodes;

/* Read a NodeClaim / Node.  obj borrowed (any JSON, NULL too); *out
 * overwritten whole, its strings new and owned (tlr_kclaim_clear /
 * tlr_knode_clear).  Never fails. */
void tlr_kclaim_read(json_object *obj, tlr_kclaim *out);
void tlr_knode_read(json_object *obj, tlr_knode *out);

/* Read item and append it to the tlr_kclaims / tlr_knodes list points
 * to: the shape of a list call's item callback (tlr_kube_item_cb), so a
 * List of NodeClaims or Nodes reads straight into a list.  item borrowed;
 * always TLR_OK.  The list grows by doubling from a zeroed one. */
int tlr_kclaims_add_item(void *list, json_object *item);
int tlr_knodes_add_item(void *list, json_object *item);

/* A deep copy of src into *out (overwritten whole; owned as a read one).
 * A NULL string or array in src stays NULL. */
void tlr_kclaim_copy(const tlr_kclaim *src, tlr_kclaim *out);
void tlr_knode_copy(const tlr_knode *src, tlr_knode *out);

/* Whether obj's metadata.finalizers lists karpenter.sh/termination (the
 * readers' finalizer field; also for a writer about to change the list).
 * obj borrowed. */
bool tlr_kread_has_finalizer(json_object *obj);

/* Free what the struct owns and zero it.  NULL fine. */
void tlr_kclaim_clear(tlr_kclaim *c);
void tlr_knode_clear(tlr_knode *n);

/* Clear every element, free the array, zero the list.  NULL fine. */
void tlr_kclaims_free(tlr_kclaims *l);
void tlr_knodes_free(tlr_knodes *l);

#endif
