/* node.c - core/v1 Node to tailor.v1.Node, and binding pods to it.
 *
 * The Karpenter view of a node comes from its well-known labels: a node
 * with karpenter.sh/nodepool is managed; instance type, zone and capacity
 * type are labels too; its NodeClaim is its owner reference of that kind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeobj_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_labels.h"

static bool keep_node_annotation(const char *k)
{
    return strncmp(k, TLR_PREFIX_KARPENTER, sizeof(TLR_PREFIX_KARPENTER) - 1) == 0 ||
           strncmp(k, TLR_PREFIX_KARPENTER_AWS, sizeof(TLR_PREFIX_KARPENTER_AWS) - 1) == 0;
}

static const char *label(const Tailor__V1__Node *n, const char *key)
{
    for (size_t i = 0; i < n->n_labels; i++)
        if (strcmp(n->labels[i]->key, key) == 0)
            return n->labels[i]->value;
    return NULL;
}

/* karpenter.sh/capacity-type values. */
static Tailor__V1__CapacityType capacity_type_of(const char *s)
{
    if (s == NULL)
        return TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_UNSPECIFIED;
    if (strcmp(s, "spot") == 0)
        return TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;
    if (strcmp(s, "on-demand") == 0)
        return TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
    if (strcmp(s, "reserved") == 0)
        return TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_RESERVED;
    return TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_UNSPECIFIED;
}

int tlr_kubeobj_node(json_object *o, const tlr_kubeobj_opts *opts, Tailor__V1__Node **out,
                     char *err, size_t errlen)
{
    kctx c;
    Tailor__V1__Node *n = NULL;
    const char *s, *kind = tlr_json_str(o, "kind");
    json_object *v;
    int rc;

    kctx_init(&c, o, "Node", opts, err, errlen);
    if (out == NULL || !json_object_is_type(o, json_type_object))
        return kfail(&c, TLR_E_INVAL, NULL, "not an object");
    if (kind != NULL && strcmp(kind, "Node") != 0)
        return kfail(&c, TLR_E_INVAL, "kind", "want Node");
    if ((rc = kstr(&c, o, "metadata.name", "metadata.name", &s)) != TLR_OK)
        return rc;
    if (s == NULL || *s == '\0')
        return kfail(&c, TLR_E_INVAL, "metadata.name", "is required");
    n = tlr_malloc(sizeof(*n));
    tailor__v1__node__init(n);
    n->name = tlr_strdup(s);
    if ((rc = kstr(&c, o, "metadata.uid", "metadata.uid", &s)))
        goto out;
    kset(&n->uid, s);
    if ((rc = kstr(&c, o, "spec.providerID", "spec.providerID", &s)))
        goto out;
    kset(&n->provider_id, s);
    if ((rc = kstr(&c, o, "metadata.resourceVersion", "metadata.resourceVersion", &s)))
        goto out;
    kset(&n->resource_version, s);
    if ((rc = klabels(&c, tlr_json_get(o, "metadata.labels"), "metadata.labels", NULL,
                      &n->labels, &n->n_labels)) ||
        (rc = klabels(&c, tlr_json_get(o, "metadata.annotations"), "metadata.annotations",
                      keep_node_annotation, &n->annotations, &n->n_annotations)) ||
        (rc = karr(&c, o, "spec.taints", "spec.taints", &v)) ||
        (rc = ktaints(&c, v, "spec.taints", &n->taints, &n->n_taints)) ||
        (rc = kobj(&c, o, "status.capacity", "status.capacity", &v)) ||
        (rc = kresources(&c, v, "status.capacity", &n->capacity)) ||
        (rc = kobj(&c, o, "status.allocatable", "status.allocatable", &v)) ||
        (rc = kresources(&c, v, "status.allocatable", &n->allocatable)) ||
        (rc = karr(&c, o, "status.conditions", "status.conditions", &v)) ||
        (rc = kconditions(&c, v, "status.conditions", &n->conditions, &n->n_conditions)) ||
        (rc = kbool(&c, o, "spec.unschedulable", "spec.unschedulable", &n->unschedulable,
                    NULL)) ||
        (rc = ktime(&c, o, "metadata.creationTimestamp", "metadata.creationTimestamp",
                    &n->creation_unix_ms)) ||
        (rc = ktime(&c, o, "metadata.deletionTimestamp", "metadata.deletionTimestamp",
                    &n->deletion_unix_ms)))
        goto out;
    s = kcondition_status(tlr_json_get(o, "status.conditions"), "Ready", NULL);
    n->ready = s != NULL && strcmp(s, "True") == 0;
    n->requested = kres_proto(&(kres){ 0 });

    kset(&n->nodepool, label(n, TLR_LABEL_NODEPOOL));
    n->managed = label(n, TLR_LABEL_NODEPOOL) != NULL;
    kset(&n->instance_type, label(n, TLR_LABEL_INSTANCE_TYPE));
    kset(&n->zone, label(n, TLR_LABEL_ZONE));
    n->capacity_type = capacity_type_of(label(n, TLR_LABEL_CAPACITY_TYPE));
    s = label(n, TLR_LABEL_INITIALIZED);
    n->initialized = s != NULL && strcmp(s, "true") == 0;
    for (size_t i = 0; i < n->n_taints; i++)
        if (strcmp(n->taints[i]->key, TLR_TAINT_DISRUPTED) == 0)
            n->marked_for_deletion = true;
    v = tlr_json_arr(o, "metadata.ownerReferences");
    for (size_t i = 0; v != NULL && i < json_object_array_length(v); i++) {
        json_object *ref = json_object_array_get_idx(v, i);
        const char *k = tlr_json_str(ref, "kind");
        if (k != NULL && strcmp(k, "NodeClaim") == 0)
            kset(&n->nodeclaim_name, tlr_json_str(ref, "name"));
    }
    *out = n;
    n = NULL;
out:
    tlr_kubeobj_free(n);
    return rc;
}

void tlr_kubeobj_node_add_pod(Tailor__V1__Node *node, const Tailor__V1__Pod *pod)
{
    kres sum, add;

    if (pod->phase == TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED ||
        pod->phase == TAILOR__V1__POD_PHASE__POD_PHASE_FAILED)
        return;
    kres_from_proto(node->requested, &sum);
    kres_from_proto(pod->requests, &add);
    kres_add(&sum, &add);
    tlr_kubeobj_free(node->requested);
    node->requested = kres_proto(&sum);
    kres_free(&sum);
    kres_free(&add);
    node->pods = tlr_realloc(node->pods, (node->n_pods + 1) * sizeof(*node->pods));
    Tailor__V1__Pod *copy = kcopy(pod);
    kpod_compact(copy);
    node->pods[node->n_pods++] = copy;
}
