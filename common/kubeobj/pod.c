/* pod.c - core/v1 Pod to tailor.v1.Pod.
 *
 * The one subtle part is the effective request, which must match what
 * kube-scheduler computes (k8s.io/component-helpers resource.PodRequests)
 * or tailor would buy nodes the scheduler then refuses to use:
 *
 *   regular containers run together:     R = sum(containers)
 *   sidecars (init containers with restartPolicy Always) start in order
 *   and keep running, so they add to R:   R += sidecar
 *   a plain init container runs alone, beside the sidecars started
 *   before it:                            I = max(I, init + sidecars so far)
 *   and a sidecar's own start-up moment:  I = max(I, sidecars so far)
 *   effective = max(R, I) + spec.overhead, per resource; pods = 1.
 *
 * Before that, API defaulting: a container's limit stands in for a missing
 * request of the same resource (what the API server stores for a manifest
 * that sets only limits).  A request above its limit, a negative or
 * garbage quantity, is refused with the container and resource named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeobj_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

/* The annotations tailor acts on (pod.proto). */
static bool keep_pod_annotation(const char *k)
{
    return strcmp(k, TLR_ANNOTATION_DO_NOT_DISRUPT) == 0 ||
           strcmp(k, "controller.kubernetes.io/pod-deletion-cost") == 0 ||
           strcmp(k, "cluster-autoscaler.kubernetes.io/safe-to-evict") == 0;
}

static Tailor__V1__PodPhase phase_of(const char *s)
{
    static const struct { const char *n; Tailor__V1__PodPhase p; } t[] = {
        { "Pending", TAILOR__V1__POD_PHASE__POD_PHASE_PENDING },
        { "Running", TAILOR__V1__POD_PHASE__POD_PHASE_RUNNING },
        { "Succeeded", TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED },
        { "Failed", TAILOR__V1__POD_PHASE__POD_PHASE_FAILED },
        { "Unknown", TAILOR__V1__POD_PHASE__POD_PHASE_UNKNOWN },
    };
    for (size_t i = 0; s != NULL && i < sizeof(t) / sizeof(t[0]); i++)
        if (strcmp(s, t[i].n) == 0)
            return t[i].p;
    return TAILOR__V1__POD_PHASE__POD_PHASE_UNSPECIFIED;
}

/* A container's requests with its limits filling the gaps; checks
 * requests <= limits.  f names the container. */
static int container_requests(kctx *c, json_object *ctr, const char *f, kres *req, kres *lim)
{
    json_object *rq, *lm, *merged = NULL;
    char ff[KF];
    int rc;

    if ((rc = kobj(c, ctr, "resources.requests", f, &rq)) != TLR_OK ||
        (rc = kobj(c, ctr, "resources.limits", f, &lm)) != TLR_OK)
        return rc;
    kpath(ff, "%s.resources.limits", f);
    if ((rc = kres_read(c, lm, ff, lim)) != TLR_OK)
        return rc;
    if (lm != NULL) {
        merged = json_object_new_object();
        if (rq != NULL) {
            json_object_object_foreach(rq, k, v)
                json_object_object_add(merged, k, json_object_get(v));
        }
        json_object_object_foreach(lm, k2, v2) {
            if (!json_object_object_get_ex(merged, k2, NULL))
                json_object_object_add(merged, k2, json_object_get(v2));
        }
        rq = merged;
    }
    kpath(ff, "%s.resources.requests", f);
    rc = kres_read(c, rq, ff, req);
    if (rc == TLR_OK && lm != NULL) {
        json_object_object_foreach(lm, k3, v3) {
            (void)v3;
            int64_t want = 0, cap = 0;
            if (strcmp(k3, "cpu") == 0) {
                want = req->cpu;
                cap = lim->cpu;
            } else if (strcmp(k3, "memory") == 0) {
                want = req->mem;
                cap = lim->mem;
            } else if (strcmp(k3, "ephemeral-storage") == 0) {
                want = req->eph;
                cap = lim->eph;
            } else {
                continue;
            }
            if (want > cap) {
                kres_free(req);
                rc = kfail(c, TLR_E_INVAL, ff, "%s request is above its limit", k3);
                break;
            }
        }
    }
    json_object_put(merged);
    if (rc != TLR_OK)
        kres_free(lim);
    return rc;
}

static Tailor__V1__PortProtocol protocol_of(const char *s, bool *ok)
{
    *ok = true;
    if (s == NULL || strcmp(s, "TCP") == 0)
        return TAILOR__V1__PORT_PROTOCOL__PORT_PROTOCOL_TCP;
    if (strcmp(s, "UDP") == 0)
        return TAILOR__V1__PORT_PROTOCOL__PORT_PROTOCOL_UDP;
    if (strcmp(s, "SCTP") == 0)
        return TAILOR__V1__PORT_PROTOCOL__PORT_PROTOCOL_SCTP;
    *ok = false;
    return TAILOR__V1__PORT_PROTOCOL__PORT_PROTOCOL_UNSPECIFIED;
}

static int host_ports(kctx *c, json_object *ctr, const char *f, Tailor__V1__Pod *p)
{
    json_object *ports;
    char ff[KF];
    int rc = karr(c, ctr, "ports", f, &ports);
    size_t len = ports ? json_object_array_length(ports) : 0;

    for (size_t i = 0; rc == TLR_OK && i < len; i++) {
        json_object *po = json_object_array_get_idx(ports, i);
        int64_t hp = 0;
        bool has = false, ok;
        const char *proto, *ip;

        kpath(ff, "%s.ports[%zu]", f, i);
        if (!json_object_is_type(po, json_type_object))
            return kfail(c, TLR_E_PARSE, ff, "want an object");
        if ((rc = kint(c, po, "hostPort", ff, 0, 65535, &hp, &has)) != TLR_OK ||
            (rc = kstr(c, po, "protocol", ff, &proto)) != TLR_OK ||
            (rc = kstr(c, po, "hostIP", ff, &ip)) != TLR_OK)
            return rc;
        if (hp == 0)
            continue;
        Tailor__V1__PortProtocol pr = protocol_of(proto, &ok);
        if (!ok)
            return kfail(c, TLR_E_PARSE, ff, "protocol \"%.20s\" is not TCP, UDP or SCTP",
                         proto);
        Tailor__V1__HostPort *h = tlr_malloc(sizeof(*h));
        tailor__v1__host_port__init(h);
        h->port = (int32_t)hp;
        h->protocol = pr;
        kset(&h->host_ip, ip);
        p->host_ports = tlr_realloc(p->host_ports, (p->n_host_ports + 1) * sizeof(h));
        p->host_ports[p->n_host_ports++] = h;
    }
    return rc;
}

/* All containers of one list; adds to the pod's raw containers, host
 * ports and the running sums. */
static int containers(kctx *c, json_object *spec, const char *pre, bool init,
                      Tailor__V1__Pod *p, kres *regular, kres *sidecars, kres *initmax)
{
    json_object *arr;
    char f[KF];
    const char *list = init ? "initContainers" : "containers";
    int rc;

    kpath(f, "%sspec.%s", pre, list);
    if ((rc = karr(c, spec, list, f, &arr)) != TLR_OK)
        return rc;
    size_t len = arr ? json_object_array_length(arr) : 0;
    for (size_t i = 0; i < len; i++) {
        json_object *ctr = json_object_array_get_idx(arr, i);
        const char *name, *restart;
        kres req = { 0 }, lim = { 0 };

        kpath(f, "%sspec.%s[%zu]", pre, list, i);
        if (!json_object_is_type(ctr, json_type_object))
            return kfail(c, TLR_E_PARSE, f, "want an object");
        if ((rc = kstr(c, ctr, "name", f, &name)) != TLR_OK ||
            (rc = kstr(c, ctr, "restartPolicy", f, &restart)) != TLR_OK)
            return rc;
        if (restart != NULL && (!init || strcmp(restart, "Always") != 0))
            return kfail(c, TLR_E_INVAL, f, "restartPolicy \"%.20s\" is only allowed as "
                         "Always on an init container", restart);
        bool sidecar = init && restart != NULL;
        if ((rc = container_requests(c, ctr, f, &req, &lim)) != TLR_OK)
            return rc;
        if (!init || sidecar) {
            if ((rc = host_ports(c, ctr, f, p)) != TLR_OK) {
                kres_free(&req);
                kres_free(&lim);
                return rc;
            }
        }
        if (!init) {
            kres_add(regular, &req);
        } else if (sidecar) {
            kres_add(sidecars, &req);
            kres_max(initmax, sidecars);
        } else {
            kres alone = { 0 };
            kres_add(&alone, &req);
            kres_add(&alone, sidecars);
            kres_max(initmax, &alone);
            kres_free(&alone);
        }
        if (!c->opts->compact) {
            Tailor__V1__ContainerRequests *cr = tlr_malloc(sizeof(*cr));
            tailor__v1__container_requests__init(cr);
            kset(&cr->name, name);
            cr->kind = !init ? TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_REGULAR
                       : sidecar ? TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_SIDECAR
                                 : TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_INIT;
            cr->requests = kres_proto(&req);
            cr->limits = kres_proto(&lim);
            p->containers = tlr_realloc(p->containers, (p->n_containers + 1) * sizeof(cr));
            p->containers[p->n_containers++] = cr;
        }
        kres_free(&req);
        kres_free(&lim);
    }
    return TLR_OK;
}

static void add_ns(void *ctx, const char *ns)
{
    Tailor__V1__PodAffinityTerm *t = ctx;
    for (size_t i = 0; i < t->n_namespaces; i++)
        if (strcmp(t->namespaces[i], ns) == 0)
            return;
    t->namespaces = tlr_realloc(t->namespaces, (t->n_namespaces + 1) * sizeof(char *));
    t->namespaces[t->n_namespaces++] = tlr_strdup(ns);
}

static int affinity_term(kctx *c, json_object *o, const char *f,
                         Tailor__V1__PodAffinityTerm **out)
{
    json_object *ls, *ns, *nss, *mlk, *mmlk;
    const char *tk;
    char ff[KF];
    int rc;

    if (!json_object_is_type(o, json_type_object))
        return kfail(c, TLR_E_PARSE, f, "want an object");
    if ((rc = kobj(c, o, "labelSelector", f, &ls)) || (rc = karr(c, o, "namespaces", f, &ns)) ||
        (rc = kobj(c, o, "namespaceSelector", f, &nss)) ||
        (rc = karr(c, o, "matchLabelKeys", f, &mlk)) ||
        (rc = karr(c, o, "mismatchLabelKeys", f, &mmlk)) ||
        (rc = kstr(c, o, "topologyKey", f, &tk)))
        return rc;
    if (tk == NULL || *tk == '\0')
        return kfail(c, TLR_E_INVAL, f, "topologyKey is required");
    Tailor__V1__PodAffinityTerm *t = tlr_malloc(sizeof(*t));
    tailor__v1__pod_affinity_term__init(t);
    t->topology_key = tlr_strdup(tk);
    kpath(ff, "%s.labelSelector", f);
    rc = klabelselector(c, ls, ff, &t->label_selector);
    if (rc == TLR_OK)
        rc = kstrings(c, ns, f, &t->namespaces, &t->n_namespaces);
    if (rc == TLR_OK)
        rc = kstrings(c, mlk, f, &t->match_label_keys, &t->n_match_label_keys);
    if (rc == TLR_OK)
        rc = kstrings(c, mmlk, f, &t->mismatch_label_keys, &t->n_mismatch_label_keys);
    if (rc == TLR_OK && nss != NULL) {
        if (json_object_object_length(nss) == 0)
            t->all_namespaces = true;
        else if (c->opts->ns_resolver == NULL)
            t->all_namespaces = true;   /* see tlr_kubeobj_opts */
        else if ((rc = c->opts->ns_resolver(c->opts->ns_resolver_arg, nss, add_ns, t)) != 0)
            rc = kfail(c, rc, f, "namespaceSelector could not be resolved");
    }
    if (rc != TLR_OK) {
        tlr_kubeobj_free(t);
        return rc;
    }
    *out = t;
    return TLR_OK;
}

static int pod_affinity(kctx *c, json_object *o, const char *f, Tailor__V1__PodAffinity **out)
{
    json_object *req, *pref;
    char ff[KF];
    int rc;

    *out = NULL;
    if (o == NULL)
        return TLR_OK;
    if ((rc = karr(c, o, "requiredDuringSchedulingIgnoredDuringExecution", f, &req)) ||
        (rc = karr(c, o, "preferredDuringSchedulingIgnoredDuringExecution", f, &pref)))
        return rc;
    Tailor__V1__PodAffinity *a = tlr_malloc(sizeof(*a));
    tailor__v1__pod_affinity__init(a);
    size_t nr = req ? json_object_array_length(req) : 0;
    size_t np = pref ? json_object_array_length(pref) : 0;
    if (nr > 0)
        a->required = tlr_calloc(nr, sizeof(*a->required));
    if (np > 0)
        a->preferred = tlr_calloc(np, sizeof(*a->preferred));
    for (size_t i = 0; rc == TLR_OK && i < nr; i++) {
        kpath(ff, "%s.requiredDuringSchedulingIgnoredDuringExecution[%zu]", f, i);
        rc = affinity_term(c, json_object_array_get_idx(req, i), ff,
                           &a->required[a->n_required]);
        if (rc == TLR_OK)
            a->n_required++;
    }
    for (size_t i = 0; rc == TLR_OK && i < np; i++) {
        json_object *w = json_object_array_get_idx(pref, i);
        json_object *term;
        int64_t weight = 0;
        bool has = false;

        kpath(ff, "%s.preferredDuringSchedulingIgnoredDuringExecution[%zu]", f, i);
        if ((rc = kint(c, w, "weight", ff, 1, 100, &weight, &has)) != TLR_OK)
            break;
        if (!has) {
            rc = kfail(c, TLR_E_INVAL, ff, "weight is required");
            break;
        }
        term = tlr_json_obj(w, "podAffinityTerm");
        if (term == NULL) {
            rc = kfail(c, TLR_E_INVAL, ff, "podAffinityTerm is required");
            break;
        }
        Tailor__V1__WeightedPodAffinityTerm *wt = tlr_malloc(sizeof(*wt));
        tailor__v1__weighted_pod_affinity_term__init(wt);
        wt->weight = (int32_t)weight;
        a->preferred[a->n_preferred++] = wt;
        strncat(ff, ".podAffinityTerm", sizeof(ff) - strlen(ff) - 1);
        rc = affinity_term(c, term, ff, &wt->term);
    }
    if (rc != TLR_OK) {
        tlr_kubeobj_free(a);
        return rc;
    }
    *out = a;
    return TLR_OK;
}

static int node_affinity(kctx *c, json_object *na, const char *f, Tailor__V1__Pod *p)
{
    json_object *terms, *pref;
    char ff[KF];
    int rc;

    if (na == NULL)
        return TLR_OK;
    if ((rc = karr(c, na, "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", f,
                   &terms)) ||
        (rc = karr(c, na, "preferredDuringSchedulingIgnoredDuringExecution", f, &pref)))
        return rc;
    if (tlr_json_get(na, "requiredDuringSchedulingIgnoredDuringExecution") != NULL &&
        (terms == NULL || json_object_array_length(terms) == 0))
        return kfail(c, TLR_E_INVAL, f, "requiredDuringSchedulingIgnoredDuringExecution "
                     "needs at least one nodeSelectorTerm");
    size_t nt = terms ? json_object_array_length(terms) : 0;
    size_t np = pref ? json_object_array_length(pref) : 0;
    if (nt > 0)
        p->required_node_affinity = tlr_calloc(nt, sizeof(*p->required_node_affinity));
    if (np > 0)
        p->preferred_node_affinity = tlr_calloc(np, sizeof(*p->preferred_node_affinity));
    for (size_t i = 0; rc == TLR_OK && i < nt; i++) {
        kpath(ff, "%s.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%zu]", f,
              i);
        rc = knsterm(c, json_object_array_get_idx(terms, i), ff,
                     &p->required_node_affinity[p->n_required_node_affinity]);
        if (rc == TLR_OK)
            p->n_required_node_affinity++;
    }
    for (size_t i = 0; rc == TLR_OK && i < np; i++) {
        json_object *w = json_object_array_get_idx(pref, i);
        int64_t weight = 0;
        bool has = false;

        kpath(ff, "%s.preferredDuringSchedulingIgnoredDuringExecution[%zu]", f, i);
        if ((rc = kint(c, w, "weight", ff, 1, 100, &weight, &has)) != TLR_OK)
            break;
        if (!has || tlr_json_obj(w, "preference") == NULL) {
            rc = kfail(c, TLR_E_INVAL, ff, "weight and preference are required");
            break;
        }
        Tailor__V1__PreferredSchedulingTerm *t = tlr_malloc(sizeof(*t));
        tailor__v1__preferred_scheduling_term__init(t);
        t->weight = (int32_t)weight;
        p->preferred_node_affinity[p->n_preferred_node_affinity++] = t;
        strncat(ff, ".preference", sizeof(ff) - strlen(ff) - 1);
        rc = knsterm(c, tlr_json_obj(w, "preference"), ff, &t->preference);
    }
    return rc;
}

static int policy_of(kctx *c, json_object *o, const char *key, const char *f,
                     Tailor__V1__NodeInclusionPolicy *out)
{
    const char *s;
    int rc = kstr(c, o, key, f, &s);

    if (rc != TLR_OK)
        return rc;
    if (s == NULL)
        *out = TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_UNSPECIFIED;
    else if (strcmp(s, "Honor") == 0)
        *out = TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_HONOR;
    else if (strcmp(s, "Ignore") == 0)
        *out = TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_IGNORE;
    else
        return kfail(c, TLR_E_PARSE, f, "%s \"%.20s\" is not Honor or Ignore", key, s);
    return TLR_OK;
}

static int spread(kctx *c, json_object *arr, const char *field, Tailor__V1__Pod *p)
{
    size_t len = arr ? json_object_array_length(arr) : 0;
    char f[KF], ff[KF];
    int rc = TLR_OK;

    if (len > 0)
        p->topology_spread_constraints = tlr_calloc(len, sizeof(*p->topology_spread_constraints));
    for (size_t i = 0; rc == TLR_OK && i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i), *ls, *mlk;
        int64_t skew = 0, mind = 0;
        bool has_skew = false, has_mind = false;
        const char *tk, *when;

        kpath(f, "%s[%zu]", field, i);
        if (!json_object_is_type(o, json_type_object))
            return kfail(c, TLR_E_PARSE, f, "want an object");
        if ((rc = kint(c, o, "maxSkew", f, INT32_MIN, INT32_MAX, &skew, &has_skew)) ||
            (rc = kint(c, o, "minDomains", f, INT32_MIN, INT32_MAX, &mind, &has_mind)) ||
            (rc = kstr(c, o, "topologyKey", f, &tk)) ||
            (rc = kstr(c, o, "whenUnsatisfiable", f, &when)) ||
            (rc = kobj(c, o, "labelSelector", f, &ls)) ||
            (rc = karr(c, o, "matchLabelKeys", f, &mlk)))
            return rc;
        kpath(ff, "%s.maxSkew", f);
        if (skew <= 0)
            return kfail(c, TLR_E_INVAL, ff, "must be greater than zero");
        if (tk == NULL || *tk == '\0')
            return kfail(c, TLR_E_INVAL, f, "topologyKey is required");
        Tailor__V1__UnsatisfiableConstraintAction act;
        if (when != NULL && strcmp(when, "DoNotSchedule") == 0)
            act = TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE;
        else if (when != NULL && strcmp(when, "ScheduleAnyway") == 0)
            act = TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_SCHEDULE_ANYWAY;
        else
            return kfail(c, TLR_E_INVAL, f, "whenUnsatisfiable \"%.20s\" is not DoNotSchedule "
                         "or ScheduleAnyway", when ? when : "");
        kpath(ff, "%s.minDomains", f);
        if (has_mind && mind <= 0)
            return kfail(c, TLR_E_INVAL, ff, "must be greater than zero");
        if (has_mind && act != TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE)
            return kfail(c, TLR_E_INVAL, ff, "only allowed with whenUnsatisfiable DoNotSchedule");
        Tailor__V1__TopologySpreadConstraint *t = tlr_malloc(sizeof(*t));
        tailor__v1__topology_spread_constraint__init(t);
        p->topology_spread_constraints[p->n_topology_spread_constraints++] = t;
        t->max_skew = (int32_t)skew;
        t->min_domains = (int32_t)mind;
        t->topology_key = tlr_strdup(tk);
        t->when_unsatisfiable = act;
        kpath(ff, "%s.labelSelector", f);
        if ((rc = klabelselector(c, ls, ff, &t->label_selector)) ||
            (rc = kstrings(c, mlk, f, &t->match_label_keys, &t->n_match_label_keys)) ||
            (rc = policy_of(c, o, "nodeAffinityPolicy", f, &t->node_affinity_policy)) ||
            (rc = policy_of(c, o, "nodeTaintsPolicy", f, &t->node_taints_policy)))
            return rc;
    }
    return rc;
}

/* Free what the compact form does not carry (pod.proto). */
void kpod_compact(Tailor__V1__Pod *p)
{
    Tailor__V1__Pod z = TAILOR__V1__POD__INIT;
    Tailor__V1__Pod tmp = z;

    tmp.containers = p->containers;
    tmp.n_containers = p->n_containers;
    tmp.overhead = p->overhead;
    tmp.node_selector = p->node_selector;
    tmp.n_node_selector = p->n_node_selector;
    tmp.required_node_affinity = p->required_node_affinity;
    tmp.n_required_node_affinity = p->n_required_node_affinity;
    tmp.preferred_node_affinity = p->preferred_node_affinity;
    tmp.n_preferred_node_affinity = p->n_preferred_node_affinity;
    tmp.tolerations = p->tolerations;
    tmp.n_tolerations = p->n_tolerations;
    tmp.volume_requirements = p->volume_requirements;
    tmp.n_volume_requirements = p->n_volume_requirements;
    tmp.priority_class_name = p->priority_class_name;
    tmp.nominated_node_name = p->nominated_node_name;
    tmp.scheduling_gates = p->scheduling_gates;
    tmp.n_scheduling_gates = p->n_scheduling_gates;
    tmp.scheduler_name = p->scheduler_name;
    tmp.resource_version = p->resource_version;
    if (p->pod_affinity != NULL) {
        Tailor__V1__PodAffinity *a = p->pod_affinity;
        for (size_t i = 0; i < a->n_preferred; i++)
            tlr_kubeobj_free(a->preferred[i]);
        free(a->preferred);
        a->preferred = NULL;
        a->n_preferred = 0;
    }
    if (p->pod_anti_affinity != NULL) {
        Tailor__V1__PodAffinity *a = p->pod_anti_affinity;
        for (size_t i = 0; i < a->n_preferred; i++)
            tlr_kubeobj_free(a->preferred[i]);
        free(a->preferred);
        a->preferred = NULL;
        a->n_preferred = 0;
    }
    Tailor__V1__Pod *holder = tlr_malloc(sizeof(*holder));
    *holder = tmp;
    tlr_kubeobj_free(holder);
    Tailor__V1__Pod keep = *p;
    *p = z;
    p->uid = keep.uid;
    p->namespace_ = keep.namespace_;
    p->name = keep.name;
    p->labels = keep.labels;
    p->n_labels = keep.n_labels;
    p->requests = keep.requests;
    p->host_ports = keep.host_ports;
    p->n_host_ports = keep.n_host_ports;
    p->owners = keep.owners;
    p->n_owners = keep.n_owners;
    p->priority = keep.priority;
    p->annotations = keep.annotations;
    p->n_annotations = keep.n_annotations;
    p->pdb_names = keep.pdb_names;
    p->n_pdb_names = keep.n_pdb_names;
    p->is_daemonset = keep.is_daemonset;
    p->phase = keep.phase;
    p->node_name = keep.node_name;
    p->creation_unix_ms = keep.creation_unix_ms;
    p->deletion_unix_ms = keep.deletion_unix_ms;
    p->ready = keep.ready;
    p->pod_affinity = keep.pod_affinity;
    p->pod_anti_affinity = keep.pod_anti_affinity;
    /* a pod the disruptor would move must land within its spread's skew
     * (services/disruptor/sim.c): its constraints go with it */
    p->topology_spread_constraints = keep.topology_spread_constraints;
    p->n_topology_spread_constraints = keep.n_topology_spread_constraints;
    p->unschedulable = keep.unschedulable;
    p->termination_grace_period_ms = keep.termination_grace_period_ms;
}

int kpod_convert(kctx *c, json_object *meta, json_object *spec, json_object *status,
                 const char *pre, Tailor__V1__Pod **out)
{
    Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
    kres regular = { 0 }, sidecars = { 0 }, initmax = { 0 }, over = { 0 };
    json_object *v;
    const char *s;
    char f[KF];
    int64_t i64 = 0;
    bool has;
    int rc;

    tailor__v1__pod__init(p);
#define F(x) (kpath(f, "%s%s", pre, x), f)
    if (spec == NULL) {
        rc = kfail(c, TLR_E_INVAL, F("spec"), "is required");
        goto out;
    }
    /* identity and metadata */
    if ((rc = kstr(c, meta, "uid", F("metadata.uid"), &s)) != TLR_OK)
        goto out;
    kset(&p->uid, s);
    if ((rc = kstr(c, meta, "name", F("metadata.name"), &s)) != TLR_OK)
        goto out;
    kset(&p->name, s);
    if ((rc = kstr(c, meta, "namespace", F("metadata.namespace"), &s)) != TLR_OK)
        goto out;
    if (s == NULL || *s == '\0')
        s = c->opts->default_namespace ? c->opts->default_namespace : "default";
    kset(&p->namespace_, s);
    if ((rc = klabels(c, tlr_json_get(meta, "labels"), F("metadata.labels"), NULL, &p->labels,
                      &p->n_labels)) ||
        (rc = klabels(c, tlr_json_get(meta, "annotations"), F("metadata.annotations"),
                      keep_pod_annotation, &p->annotations, &p->n_annotations)) ||
        (rc = kowners(c, tlr_json_get(meta, "ownerReferences"), F("metadata.ownerReferences"),
                      &p->owners, &p->n_owners)) ||
        (rc = ktime(c, meta, "creationTimestamp", F("metadata.creationTimestamp"),
                    &p->creation_unix_ms)) ||
        (rc = ktime(c, meta, "deletionTimestamp", F("metadata.deletionTimestamp"),
                    &p->deletion_unix_ms)))
        goto out;
    if ((rc = kstr(c, meta, "resourceVersion", F("metadata.resourceVersion"), &s)) != TLR_OK)
        goto out;
    kset(&p->resource_version, s);
    for (size_t i = 0; i < p->n_owners; i++)
        if (p->owners[i]->controller && strcmp(p->owners[i]->kind, "DaemonSet") == 0)
            p->is_daemonset = true;

    /* requests */
    if ((rc = containers(c, spec, pre, false, p, &regular, &sidecars, &initmax)) ||
        (rc = containers(c, spec, pre, true, p, &regular, &sidecars, &initmax)))
        goto out;
    if (tlr_json_get(spec, "containers") == NULL ||
        json_object_array_length(tlr_json_get(spec, "containers")) == 0) {
        rc = kfail(c, TLR_E_INVAL, F("spec.containers"), "at least one container is required");
        goto out;
    }
    if ((rc = kobj(c, spec, "overhead", F("spec.overhead"), &v)) ||
        (rc = kres_read(c, v, f, &over)))
        goto out;
    if (!c->opts->compact)
        p->overhead = kres_proto(&over);
    kres_add(&regular, &sidecars);
    kres_max(&regular, &initmax);
    kres_add(&regular, &over);
    regular.pods = 1;
    p->requests = kres_proto(&regular);

    /* placement */
    if ((rc = kobj(c, spec, "nodeSelector", F("spec.nodeSelector"), &v)) ||
        (rc = klabels(c, v, f, NULL, &p->node_selector, &p->n_node_selector)) ||
        (rc = kobj(c, spec, "affinity.nodeAffinity", F("spec.affinity.nodeAffinity"), &v)) ||
        (rc = node_affinity(c, v, f, p)) ||
        (rc = kobj(c, spec, "affinity.podAffinity", F("spec.affinity.podAffinity"), &v)) ||
        (rc = pod_affinity(c, v, f, &p->pod_affinity)) ||
        (rc = kobj(c, spec, "affinity.podAntiAffinity", F("spec.affinity.podAntiAffinity"),
                   &v)) ||
        (rc = pod_affinity(c, v, f, &p->pod_anti_affinity)) ||
        (rc = karr(c, spec, "tolerations", F("spec.tolerations"), &v)) ||
        (rc = ktolerations(c, v, f, &p->tolerations, &p->n_tolerations)) ||
        (rc = karr(c, spec, "topologySpreadConstraints", F("spec.topologySpreadConstraints"),
                   &v)) ||
        (rc = spread(c, v, f, p)))
        goto out;
    /* Karpenter reads deprecated aliases as the stable keys
     * (beta.kubernetes.io/os: linux is kubernetes.io/os); requirements
     * are normalized as they are read (knsreqs), the nodeSelector here. */
    for (size_t k = 0; k < p->n_node_selector; k++) {
        const char *nk = tlr_ks_normalized_key(p->node_selector[k]->key);
        if (nk != p->node_selector[k]->key) {
            free(p->node_selector[k]->key);
            p->node_selector[k]->key = tlr_strdup(nk);
        }
    }

    /* scheduling state */
    if ((rc = kint(c, spec, "priority", F("spec.priority"), INT32_MIN, INT32_MAX, &i64, NULL)))
        goto out;
    p->priority = (int32_t)i64;
    if ((rc = kstr(c, spec, "priorityClassName", F("spec.priorityClassName"), &s)))
        goto out;
    kset(&p->priority_class_name, s);
    if ((rc = kstr(c, spec, "nodeName", F("spec.nodeName"), &s)))
        goto out;
    kset(&p->node_name, s);
    if ((rc = kstr(c, spec, "schedulerName", F("spec.schedulerName"), &s)))
        goto out;
    kset(&p->scheduler_name, s);
    i64 = 0;
    if ((rc = kint(c, spec, "terminationGracePeriodSeconds",
                   F("spec.terminationGracePeriodSeconds"), 0, INT64_MAX / 1000, &i64, &has)))
        goto out;
    p->termination_grace_period_ms = has ? i64 * 1000 : 30000;   /* API default 30 s */
    if ((rc = karr(c, spec, "schedulingGates", F("spec.schedulingGates"), &v)))
        goto out;
    for (size_t i = 0; v != NULL && i < json_object_array_length(v); i++) {
        const char *g = tlr_json_str(json_object_array_get_idx(v, i), "name");
        if (g == NULL) {
            rc = kfail(c, TLR_E_INVAL, f, "item %zu has no name", i);
            goto out;
        }
        p->scheduling_gates = tlr_realloc(p->scheduling_gates,
                                          (p->n_scheduling_gates + 1) * sizeof(char *));
        p->scheduling_gates[p->n_scheduling_gates++] = tlr_strdup(g);
    }
    if (status != NULL) {
        const char *reason = NULL, *st;
        if ((rc = kstr(c, status, "phase", F("status.phase"), &s)))
            goto out;
        p->phase = phase_of(s);
        if ((rc = kstr(c, status, "nominatedNodeName", F("status.nominatedNodeName"), &s)))
            goto out;
        kset(&p->nominated_node_name, s);
        json_object *conds = tlr_json_get(status, "conditions");
        st = kcondition_status(conds, "PodScheduled", &reason);
        p->unschedulable = st != NULL && strcmp(st, "False") == 0 && reason != NULL &&
                           strcmp(reason, "Unschedulable") == 0;
        st = kcondition_status(conds, "Ready", NULL);
        p->ready = st != NULL && strcmp(st, "True") == 0;
    }
#undef F
    if (c->opts->compact)
        kpod_compact(p);
    *out = p;
    p = NULL;
out:
    kres_free(&regular);
    kres_free(&sidecars);
    kres_free(&initmax);
    kres_free(&over);
    tlr_kubeobj_free(p);
    return rc;
}

int tlr_kubeobj_pod(json_object *o, const tlr_kubeobj_opts *opts, Tailor__V1__Pod **out,
                    char *err, size_t errlen)
{
    kctx c;
    const char *kind = tlr_json_str(o, "kind");

    kctx_init(&c, o, "Pod", opts, err, errlen);
    if (out == NULL || !json_object_is_type(o, json_type_object))
        return kfail(&c, TLR_E_INVAL, NULL, "not an object");
    if (kind != NULL && strcmp(kind, "Pod") != 0)
        return kfail(&c, TLR_E_INVAL, "kind", "want Pod");
    const char *name = tlr_json_str(o, "metadata.name");
    const char *gen = tlr_json_str(o, "metadata.generateName");
    if ((name == NULL || name[0] == '\0') && (gen == NULL || gen[0] == '\0'))
        return kfail(&c, TLR_E_INVAL, "metadata.name", "is required");
    return kpod_convert(&c, tlr_json_get(o, "metadata"), tlr_json_obj(o, "spec"),
                        tlr_json_obj(o, "status"), "", out);
}
