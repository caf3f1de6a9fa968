/* cluster.c - the smaller cluster objects: karpenter.sh/v1 NodeClaim,
 * policy/v1 PodDisruptionBudget and apps/v1 DaemonSet.  A NodeClaim's spec
 * is held to Karpenter v1.14's CRD (karpenter.c), as a NodePool's template
 * is, except that its requirements may name karpenter.sh/nodepool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeobj_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubesem.h"

static int check_head(kctx *c, json_object *o, const char *kind, bool named)
{
    const char *k = tlr_json_str(o, "kind"), *n = tlr_json_str(o, "metadata.name");

    if (!json_object_is_type(o, json_type_object))
        return kfail(c, TLR_E_INVAL, NULL, "not an object");
    if (k != NULL && strcmp(k, kind) != 0)
        return kfail(c, TLR_E_INVAL, "kind", "want %s", kind);
    if (named && (n == NULL || *n == '\0'))
        return kfail(c, TLR_E_INVAL, "metadata.name", "is required");
    return TLR_OK;
}

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

static bool is_true(json_object *conds, const char *type)
{
    const char *s = kcondition_status(conds, type, NULL);
    return s != NULL && strcmp(s, "True") == 0;
}

int tlr_kubeobj_nodeclaim(json_object *o, const tlr_kubeobj_opts *opts,
                          Tailor__V1__NodeClaim **out, char *err, size_t errlen)
{
    kctx c;
    Tailor__V1__NodeClaim *n = NULL;
    json_object *spec, *v;
    int rc;

    kctx_init(&c, o, "NodeClaim", opts, err, errlen);
    if (out == NULL)
        return kfail(&c, TLR_E_INVAL, NULL, "no output");
    if ((rc = check_head(&c, o, "NodeClaim", true)) || (rc = kobj(&c, o, "spec", "spec", &spec)))
        return rc;
    const char *ncg, *nck, *ncn;
    if (spec == NULL)
        return kfail(&c, TLR_E_INVAL, "spec", "is required");
    if ((rc = kkarp_nodeclassref(&c, spec, "nodeClassRef", "spec.nodeClassRef", &ncg, &nck,
                                 &ncn)))
        return rc;
    if (tlr_json_get(spec, "requirements") == NULL)
        return kfail(&c, TLR_E_INVAL, "spec.requirements", "is required");
    n = tlr_malloc(sizeof(*n));
    tailor__v1__node_claim__init(n);
    n->name = tlr_strdup(tlr_json_str(o, "metadata.name"));
    kset(&n->uid, tlr_json_str(o, "metadata.uid"));
    kset(&n->resource_version, tlr_json_str(o, "metadata.resourceVersion"));
    kset(&n->nodepool, tlr_json_str(o, "metadata.labels.karpenter\\.sh/nodepool"));
    kset(&n->node_class, tlr_json_str(spec, "nodeClassRef.name"));
    kset(&n->nodepool_hash, tlr_json_str(o, "metadata.annotations.karpenter\\.sh/nodepool-hash"));
    kset(&n->node_class_hash,
         tlr_json_str(o, "metadata.annotations.karpenter\\.k8s\\.aws/ec2nodeclass-hash"));
    n->expire_after_ms = 720LL * 3600 * 1000;
    if ((rc = klabels(&c, tlr_json_get(o, "metadata.labels"), "metadata.labels", NULL,
                      &n->labels, &n->n_labels)) ||
        (rc = klabels(&c, tlr_json_get(o, "metadata.annotations"), "metadata.annotations", NULL,
                      &n->annotations, &n->n_annotations)) ||
        (rc = karr(&c, spec, "requirements", "spec.requirements", &v)) ||
        (rc = knsreqs(&c, v, "spec.requirements", true, &n->requirements, &n->n_requirements)) ||
        (n->n_requirements > 100 &&
         (rc = kfail(&c, TLR_E_INVAL, "spec.requirements", "at most 100"))) ||
        (rc = kkarp_reqs(&c, n->requirements, n->n_requirements, "spec.requirements", true)) ||
        (rc = kobj(&c, spec, "resources", "spec.resources", &v)) ||
        (rc = kobj(&c, spec, "resources.requests", "spec.resources.requests", &v)) ||
        (rc = kres_int_or_string(&c, v, "spec.resources.requests")) ||
        (rc = kresources(&c, v, "spec.resources.requests", &n->resources_requested)) ||
        (rc = karr(&c, spec, "taints", "spec.taints", &v)) ||
        (rc = ktaints(&c, v, "spec.taints", &n->taints, &n->n_taints)) ||
        (rc = karr(&c, spec, "startupTaints", "spec.startupTaints", &v)) ||
        (rc = ktaints(&c, v, "spec.startupTaints", &n->startup_taints, &n->n_startup_taints)) ||
        (rc = kkarp_taints(&c, n->taints, n->n_taints, "spec.taints", n->startup_taints,
                           n->n_startup_taints, "spec.startupTaints")) ||
        (rc = kkarp_duration(&c, spec, "expireAfter", "spec.expireAfter", true,
                             &n->expire_after_ms, &n->expire_never, NULL)) ||
        (rc = kkarp_duration(&c, spec, "terminationGracePeriod", "spec.terminationGracePeriod",
                             false, &n->termination_grace_period_ms, NULL, NULL)) ||
        (rc = ktime(&c, o, "metadata.creationTimestamp", "metadata.creationTimestamp",
                    &n->creation_unix_ms)) ||
        (rc = ktime(&c, o, "metadata.deletionTimestamp", "metadata.deletionTimestamp",
                    &n->deletion_unix_ms)))
        goto out;

    json_object *st = tlr_json_obj(o, "status");
    Tailor__V1__NodeClaimStatus *s = tlr_malloc(sizeof(*s));
    tailor__v1__node_claim_status__init(s);
    n->status = s;
    kset(&s->provider_id, tlr_json_str(st, "providerID"));
    kset(&s->node_name, tlr_json_str(st, "nodeName"));
    kset(&s->image_id, tlr_json_str(st, "imageID"));
    kset(&s->instance_type, tlr_json_str(o, "metadata.labels.node\\.kubernetes\\.io/instance-type"));
    kset(&s->zone, tlr_json_str(o, "metadata.labels.topology\\.kubernetes\\.io/zone"));
    s->capacity_type = capacity_type_of(tlr_json_str(o, "metadata.labels.karpenter\\.sh/capacity-type"));
    const char *inst = tlr_provider_id_instance(tlr_json_str(st, "providerID"));
    if (inst)
        kset(&s->instance_id, inst);
    json_object *conds = tlr_json_get(st, "conditions");
    if ((rc = kobj(&c, st, "capacity", "status.capacity", &v)) ||
        (v && (rc = kresources(&c, v, "status.capacity", &s->capacity))) ||
        (rc = kobj(&c, st, "allocatable", "status.allocatable", &v)) ||
        (v && (rc = kresources(&c, v, "status.allocatable", &s->allocatable))) ||
        (rc = karr(&c, st, "conditions", "status.conditions", &v)) ||
        (rc = kconditions(&c, v, "status.conditions", &s->conditions, &s->n_conditions)))
        goto out;
    if (n->deletion_unix_ms != 0)
        s->phase = is_true(conds, "InstanceTerminating")
                       ? TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_TERMINATING
                       : TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_DRAINING;
    else if (is_true(conds, "Initialized"))
        s->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_INITIALIZED;
    else if (is_true(conds, "Registered"))
        s->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_REGISTERED;
    else if (is_true(conds, "Launched"))
        s->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_LAUNCHED;
    else if (kcondition_status(conds, "Launched", NULL) != NULL &&
             strcmp(kcondition_status(conds, "Launched", NULL), "False") == 0)
        s->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_FAILED;
    else
        s->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_PENDING;
    *out = n;
    n = NULL;
out:
    tlr_kubeobj_free(n);
    return rc;
}

int tlr_kubeobj_pdb(json_object *o, const tlr_kubeobj_opts *opts,
                    Tailor__V1__PodDisruptionBudget **out, char *err, size_t errlen)
{
    kctx c;
    Tailor__V1__PodDisruptionBudget *p = NULL;
    const char *s;
    json_object *v;
    int64_t i64;
    int rc;

    kctx_init(&c, o, "PodDisruptionBudget", opts, err, errlen);
    if (out == NULL)
        return kfail(&c, TLR_E_INVAL, NULL, "no output");
    if ((rc = check_head(&c, o, "PodDisruptionBudget", true)))
        return rc;
    p = tlr_malloc(sizeof(*p));
    tailor__v1__pod_disruption_budget__init(p);
    p->name = tlr_strdup(tlr_json_str(o, "metadata.name"));
    s = tlr_json_str(o, "metadata.namespace");
    kset(&p->namespace_, s && *s ? s
                          : c.opts->default_namespace ? c.opts->default_namespace : "default");
    kset(&p->uid, tlr_json_str(o, "metadata.uid"));
    if ((rc = kobj(&c, o, "spec.selector", "spec.selector", &v)) ||
        (rc = klabelselector(&c, v, "spec.selector", &p->selector)) ||
        (rc = kintorstr(&c, o, "spec.minAvailable", "spec.minAvailable", &p->min_available)) ||
        (rc = kintorstr(&c, o, "spec.maxUnavailable", "spec.maxUnavailable",
                        &p->max_unavailable)))
        goto out;
    if (p->min_available != NULL && p->max_unavailable != NULL) {
        rc = kfail(&c, TLR_E_INVAL, "spec", "minAvailable and maxUnavailable cannot both be set");
        goto out;
    }
#define I32(path, dst)                                                                  \
    do {                                                                                \
        i64 = 0;                                                                        \
        if ((rc = kint(&c, o, path, path, INT32_MIN, INT32_MAX, &i64, NULL)) != TLR_OK) \
            goto out;                                                                   \
        dst = (int32_t)i64;                                                             \
    } while (0)
    I32("status.disruptionsAllowed", p->disruptions_allowed);
    I32("status.currentHealthy", p->current_healthy);
    I32("status.desiredHealthy", p->desired_healthy);
    I32("status.expectedPods", p->expected_pods);
#undef I32
    if ((rc = kint(&c, o, "metadata.generation", "metadata.generation", 0, INT64_MAX,
                   &p->generation, NULL)) ||
        (rc = kint(&c, o, "status.observedGeneration", "status.observedGeneration", 0,
                   INT64_MAX, &p->observed_generation, NULL)) ||
        (rc = kstr(&c, o, "spec.unhealthyPodEvictionPolicy", "spec.unhealthyPodEvictionPolicy",
                   &s)))
        goto out;
    if (s == NULL || strcmp(s, "IfHealthyBudget") == 0) {
        p->unhealthy_pod_eviction_policy =
            TAILOR__V1__UNHEALTHY_POD_EVICTION_POLICY__UNHEALTHY_POD_EVICTION_POLICY_IF_HEALTHY_BUDGET;
    } else if (strcmp(s, "AlwaysAllow") == 0) {
        p->unhealthy_pod_eviction_policy =
            TAILOR__V1__UNHEALTHY_POD_EVICTION_POLICY__UNHEALTHY_POD_EVICTION_POLICY_ALWAYS_ALLOW;
    } else {
        rc = kfail(&c, TLR_E_PARSE, "spec.unhealthyPodEvictionPolicy",
                   "\"%.20s\" is not IfHealthyBudget or AlwaysAllow", s);
        goto out;
    }
    *out = p;
    p = NULL;
out:
    tlr_kubeobj_free(p);
    return rc;
}

int tlr_kubeobj_daemonset(json_object *o, const tlr_kubeobj_opts *opts,
                          Tailor__V1__DaemonSet **out, char *err, size_t errlen)
{
    kctx c;
    Tailor__V1__DaemonSet *d = NULL;
    Tailor__V1__Pod *tmpl = NULL;
    json_object *t;
    const char *s;
    int rc;

    kctx_init(&c, o, "DaemonSet", opts, err, errlen);
    if (out == NULL)
        return kfail(&c, TLR_E_INVAL, NULL, "no output");
    if ((rc = check_head(&c, o, "DaemonSet", true)) ||
        (rc = kobj(&c, o, "spec.template", "spec.template", &t)))
        return rc;
    if (t == NULL)
        return kfail(&c, TLR_E_INVAL, "spec.template", "is required");
    /* The template's pods are the DaemonSet's: namespace and owner. */
    json_object *meta = json_object_new_object();
    json_object *tm = tlr_json_obj(t, "metadata");
    if (tm != NULL) {
        json_object_object_foreach(tm, k, v)
            json_object_object_add(meta, k, json_object_get(v));
    }
    json_object_object_del(meta, "name");
    json_object_object_del(meta, "uid");
    s = tlr_json_str(o, "metadata.namespace");
    if (s != NULL)
        json_object_object_add(meta, "namespace", json_object_new_string(s));
    json_object *owner = json_object_new_object();
    json_object_object_add(owner, "apiVersion", json_object_new_string("apps/v1"));
    json_object_object_add(owner, "kind", json_object_new_string("DaemonSet"));
    json_object_object_add(owner, "name",
                           json_object_new_string(tlr_json_str(o, "metadata.name")));
    if ((s = tlr_json_str(o, "metadata.uid")) != NULL)
        json_object_object_add(owner, "uid", json_object_new_string(s));
    json_object_object_add(owner, "controller", json_object_new_boolean(1));
    json_object *owners = json_object_new_array();
    json_object_array_add(owners, owner);
    json_object_object_add(meta, "ownerReferences", owners);
    rc = kpod_convert(&c, meta, tlr_json_obj(t, "spec"), NULL, "spec.template.", &tmpl);
    json_object_put(meta);
    if (rc != TLR_OK)
        return rc;
    d = tlr_malloc(sizeof(*d));
    tailor__v1__daemon_set__init(d);
    d->name = tlr_strdup(tlr_json_str(o, "metadata.name"));
    d->namespace_ = tlr_strdup(tmpl->namespace_);
    kset(&d->uid, tlr_json_str(o, "metadata.uid"));
    d->pod_template = tmpl;
    *out = d;
    return TLR_OK;
}
