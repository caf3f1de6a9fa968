/* nodepool.c - karpenter.sh/v1 NodePool to tailor.v1.NodePool.
 *
 * Karpenter's CRD defaults are applied here so every consumer sees
 * effective values (contracts.md: defaults are applied by the producer):
 * expireAfter 720h, consolidationPolicy WhenEmptyOrUnderutilized,
 * consolidateAfter 0s, budgets [{nodes: "10%"}].  Karpenter v1.14's CRD
 * schema, CEL rules and runtime checks are enforced (karpenter.c has the
 * shared ones): weight 1..100, nodeClassRef group/kind/name, restricted
 * label domains, requirement keys, operators and values, minValues 1..50,
 * taint syntax, duration patterns, budget nodes/schedule/duration/reasons.
 * Static NodePools (spec.replicas) are refused: tailor only provisions for
 * pending pods.  consolidationPolicy Balanced has no scoring in tailor's
 * disruptor: it runs as WhenEmptyOrUnderutilized, with a warning, and
 * Disruption.consolidation_policy_as_written keeps BALANCED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeobj_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define DEFAULT_EXPIRE_MS (720LL * 3600 * 1000)

/* The CRD's patterns for a budget's duration and schedule.  The schedule's
 * alternation is unanchored in the CRD: "@daily..." or anything holding
 * five whitespace-separated parts. */
#define BUDGET_DURATION_ERE "^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
#define BUDGET_SCHEDULE_ERE                                                   \
    "^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|"              \
    "((.+)[[:space:]](.+)[[:space:]](.+)[[:space:]](.+)[[:space:]](.+))$"

/* "10%", "100%" or a count such as "5" (the CRD's pattern). */
static bool budget_nodes_ok(const char *s)
{
    size_t n = strlen(s), digits = 0;

    while (digits < n && s[digits] >= '0' && s[digits] <= '9')
        digits++;
    if (digits == 0)
        return false;
    if (digits == n)
        return true;
    return digits + 1 == n && s[n - 1] == '%' && (digits <= 2 || strcmp(s, "100%") == 0);
}

static int budgets(kctx *c, json_object *arr, Tailor__V1__Disruption *d)
{
    char f[KF];
    int rc = TLR_OK;
    size_t len = arr ? json_object_array_length(arr) : 0;

    if (arr == NULL) {   /* the CRD default */
        d->budgets = tlr_calloc(1, sizeof(*d->budgets));
        Tailor__V1__Budget *b = tlr_malloc(sizeof(*b));
        tailor__v1__budget__init(b);
        b->nodes = tlr_strdup("10%");
        d->budgets[d->n_budgets++] = b;
        return TLR_OK;
    }
    if (len > 50)
        return kfail(c, TLR_E_INVAL, "spec.disruption.budgets", "at most 50 budgets");
    if (len > 0)
        d->budgets = tlr_calloc(len, sizeof(*d->budgets));
    for (size_t i = 0; rc == TLR_OK && i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i), *reasons;
        const char *nodes, *sched;
        int64_t dur = 0;
        bool has_dur = false;

        kpath(f, "spec.disruption.budgets[%zu]", i);
        if (!json_object_is_type(o, json_type_object))
            return kfail(c, TLR_E_PARSE, f, "want an object");
        char fd[KF], fs[KF];
        kpath(fd, "%s.duration", f);
        kpath(fs, "%s.schedule", f);
        if ((rc = kstr(c, o, "nodes", f, &nodes)) || (rc = kstr(c, o, "schedule", f, &sched)) ||
            (rc = kpattern(c, o, "schedule", fs, BUDGET_SCHEDULE_ERE,
                           "is not a cron schedule (5 fields or @daily, @hourly, ...)")) ||
            (rc = kpattern(c, o, "duration", fd, BUDGET_DURATION_ERE,
                           "is not a duration in whole hours and minutes (e.g. 1h30m)")) ||
            (rc = kduration(c, o, "duration", f, false, &dur, NULL, &has_dur)) ||
            (rc = karr(c, o, "reasons", f, &reasons)))
            return rc;
        if (nodes == NULL)
            nodes = "10%";
        if (!budget_nodes_ok(nodes))
            return kfail(c, TLR_E_PARSE, f, "nodes \"%.20s\" is not a count or a percentage",
                         nodes);
        if ((sched != NULL) != has_dur)
            return kfail(c, TLR_E_INVAL, f, "schedule and duration must be set together");
        Tailor__V1__Budget *b = tlr_malloc(sizeof(*b));
        tailor__v1__budget__init(b);
        d->budgets[d->n_budgets++] = b;
        b->nodes = tlr_strdup(nodes);
        kset(&b->schedule, sched);
        b->duration_ms = dur;
        size_t nr = reasons ? json_object_array_length(reasons) : 0;
        if (nr > 50)
            return kfail(c, TLR_E_INVAL, f, "at most 50 reasons");
        if (nr > 0)
            b->reasons = tlr_calloc(nr, sizeof(*b->reasons));
        for (size_t k = 0; k < nr; k++) {
            const char *r = json_object_get_string(json_object_array_get_idx(reasons, k));
            Tailor__V1__DisruptionReason dr;
            if (r != NULL && strcmp(r, "Underutilized") == 0)
                dr = TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_UNDERUTILIZED;
            else if (r != NULL && strcmp(r, "Empty") == 0)
                dr = TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_EMPTY;
            else if (r != NULL && strcmp(r, "Drifted") == 0)
                dr = TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_DRIFTED;
            else
                return kfail(c, TLR_E_PARSE, f, "reason \"%.20s\" is not Underutilized, "
                             "Empty or Drifted", r ? r : "");
            for (size_t j = 0; j < b->n_reasons; j++)
                if (b->reasons[j] == dr)   /* x-kubernetes-list-type: set */
                    return kfail(c, TLR_E_INVAL, f, "reason %s is listed twice", r);
            b->reasons[b->n_reasons++] = dr;
        }
    }
    return rc;
}

static int limits(kctx *c, json_object *map, Tailor__V1__NodePoolLimits **out)
{
    kres r;
    int rc;

    *out = NULL;
    if (map == NULL)
        return TLR_OK;
    if ((rc = kres_int_or_string(c, map, "spec.limits")) != TLR_OK ||
        (rc = kres_read(c, map, "spec.limits", &r)) != TLR_OK)
        return rc;
    Tailor__V1__NodePoolLimits *l = tlr_malloc(sizeof(*l));
    tailor__v1__node_pool_limits__init(l);
    l->has_cpu = json_object_object_get_ex(map, "cpu", NULL);
    l->cpu_millis = r.cpu;
    l->has_memory = json_object_object_get_ex(map, "memory", NULL);
    l->memory_bytes = r.mem;
    l->has_pods = json_object_object_get_ex(map, "pods", NULL);
    l->pods = r.pods;
    l->has_ephemeral_storage = json_object_object_get_ex(map, "ephemeral-storage", NULL);
    l->ephemeral_storage_bytes = r.eph;
    if (r.n > 0)
        l->extended = tlr_calloc(r.n, sizeof(*l->extended));
    for (size_t i = 0; i < r.n; i++) {
        if (strcmp(r.ext[i].name, "nodes") == 0) {
            l->has_nodes = true;
            l->nodes = r.ext[i].v;
            continue;
        }
        Tailor__V1__ExtendedResource *e = tlr_malloc(sizeof(*e));
        tailor__v1__extended_resource__init(e);
        e->name = tlr_strdup(r.ext[i].name);
        e->value = r.ext[i].v;   /* listed even at 0: a limit of 0 */
        l->extended[l->n_extended++] = e;
    }
    kres_free(&r);
    *out = l;
    return TLR_OK;
}

int tlr_kubeobj_nodepool(json_object *o, const tlr_kubeobj_opts *opts,
                         Tailor__V1__NodePool **out, char *err, size_t errlen)
{
    kctx c;
    Tailor__V1__NodePool *p = NULL;
    const char *s, *kind = tlr_json_str(o, "kind");
    json_object *v, *ts;
    int64_t w = 0;
    bool has;
    int rc;

    kctx_init(&c, o, "NodePool", opts, err, errlen);
    if (out == NULL || !json_object_is_type(o, json_type_object))
        return kfail(&c, TLR_E_INVAL, NULL, "not an object");
    if (kind != NULL && strcmp(kind, "NodePool") != 0)
        return kfail(&c, TLR_E_INVAL, "kind", "want NodePool");
    if ((rc = kstr(&c, o, "metadata.name", "metadata.name", &s)) != TLR_OK)
        return rc;
    if (s == NULL || *s == '\0')
        return kfail(&c, TLR_E_INVAL, "metadata.name", "is required");
    p = tlr_malloc(sizeof(*p));
    tailor__v1__node_pool__init(p);
    p->name = tlr_strdup(s);
    if ((rc = kstr(&c, o, "metadata.uid", "metadata.uid", &s)))
        goto out;
    kset(&p->uid, s);
    if ((rc = kstr(&c, o, "metadata.resourceVersion", "metadata.resourceVersion", &s)))
        goto out;
    kset(&p->resource_version, s);
    kset(&p->hash, tlr_json_str(o, "metadata.annotations.karpenter\\.sh/nodepool-hash"));
    kset(&p->hash_version,
         tlr_json_str(o, "metadata.annotations.karpenter\\.sh/nodepool-hash-version"));
    if (tlr_json_get(o, "spec.replicas") != NULL) {
        rc = kfail(&c, TLR_E_INVAL, "spec.replicas",
                   "static NodePools (spec.replicas) are not supported by tailor");
        goto out;
    }
    if ((rc = kint(&c, o, "spec.weight", "spec.weight", 1, 100, &w, &has)))
        goto out;
    p->weight = (int32_t)w;

    /* Reading through a path takes a list or a string for an absent
     * object; the CRD refuses it, so check the objects read that way. */
    if ((rc = kobj(&c, o, "spec.template.metadata", "spec.template.metadata", &v)) ||
        (rc = kobj(&c, o, "spec.disruption", "spec.disruption", &v)) ||
        (rc = kobj(&c, o, "spec.template.spec", "spec.template.spec", &ts)))
        goto out;
    if (ts == NULL) {
        rc = kfail(&c, TLR_E_INVAL, "spec.template.spec", "is required");
        goto out;
    }
    if ((rc = karr(&c, ts, "requirements", "spec.template.spec.requirements", &v)))
        goto out;
    if (v == NULL) {
        rc = kfail(&c, TLR_E_INVAL, "spec.template.spec.requirements", "is required");
        goto out;
    }
    if ((rc = knsreqs(&c, v, "spec.template.spec.requirements", true, &p->requirements,
                      &p->n_requirements)) ||
        (rc = kkarp_reqs(&c, p->requirements, p->n_requirements,
                         "spec.template.spec.requirements", false)) ||
        (rc = kkarp_labels(&c, tlr_json_get(o, "spec.template.metadata.labels"),
                           "spec.template.metadata.labels")) ||
        (rc = klabels(&c, tlr_json_get(o, "spec.template.metadata.labels"),
                      "spec.template.metadata.labels", NULL, &p->labels, &p->n_labels)) ||
        (rc = klabels(&c, tlr_json_get(o, "spec.template.metadata.annotations"),
                      "spec.template.metadata.annotations", NULL, &p->annotations,
                      &p->n_annotations)) ||
        (rc = karr(&c, ts, "taints", "spec.template.spec.taints", &v)) ||
        (rc = ktaints(&c, v, "spec.template.spec.taints", &p->taints, &p->n_taints)) ||
        (rc = karr(&c, ts, "startupTaints", "spec.template.spec.startupTaints", &v)) ||
        (rc = ktaints(&c, v, "spec.template.spec.startupTaints", &p->startup_taints,
                      &p->n_startup_taints)) ||
        (rc = kkarp_taints(&c, p->taints, p->n_taints, "spec.template.spec.taints",
                           p->startup_taints, p->n_startup_taints,
                           "spec.template.spec.startupTaints")))
        goto out;
    if (p->n_requirements > 100) {
        rc = kfail(&c, TLR_E_INVAL, "spec.template.spec.requirements", "at most 100");
        goto out;
    }

    /* nodeClassRef: required, all three parts */
    const char *g, *k, *n;
    if ((rc = kkarp_nodeclassref(&c, ts, "nodeClassRef", "spec.template.spec.nodeClassRef", &g,
                                 &k, &n)))
        goto out;
    p->node_class_ref = tlr_malloc(sizeof(*p->node_class_ref));
    tailor__v1__node_class_ref__init(p->node_class_ref);
    kset(&p->node_class_ref->group, g);
    kset(&p->node_class_ref->kind, k);
    kset(&p->node_class_ref->name, n);

    p->expire_after_ms = DEFAULT_EXPIRE_MS;
    if ((rc = kkarp_duration(&c, ts, "expireAfter", "spec.template.spec.expireAfter", true,
                             &p->expire_after_ms, &p->expire_never, NULL)) ||
        (rc = kkarp_duration(&c, ts, "terminationGracePeriod",
                        "spec.template.spec.terminationGracePeriod", false,
                        &p->termination_grace_period_ms, NULL, NULL)))
        goto out;

    /* disruption */
    Tailor__V1__Disruption *d = tlr_malloc(sizeof(*d));
    tailor__v1__disruption__init(d);
    p->disruption = d;
    if ((rc = kstr(&c, o, "spec.disruption.consolidationPolicy",
                   "spec.disruption.consolidationPolicy", &s)))
        goto out;
    if (s == NULL || strcmp(s, "WhenEmptyOrUnderutilized") == 0) {
        d->consolidation_policy =
            TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_WHEN_EMPTY_OR_UNDERUTILIZED;
    } else if (strcmp(s, "WhenEmpty") == 0) {
        d->consolidation_policy = TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_WHEN_EMPTY;
    } else if (strcmp(s, "Balanced") == 0) {
        /* The nearest tailor has: Balanced consolidates a subset of what
         * WhenEmptyOrUnderutilized does (only moves whose savings outweigh
         * the disruption). */
        d->consolidation_policy =
            TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_WHEN_EMPTY_OR_UNDERUTILIZED;
        kwarn(&c, "spec.disruption.consolidationPolicy",
              "Balanced is run as WhenEmptyOrUnderutilized: tailor has no Balanced scoring, so "
              "it may consolidate nodes whose savings Karpenter would judge too small");
    } else {
        rc = kfail(&c, TLR_E_PARSE, "spec.disruption.consolidationPolicy",
                   "\"%.40s\" is not WhenEmpty, WhenEmptyOrUnderutilized or Balanced", s);
        goto out;
    }
    d->consolidation_policy_as_written =
        s != NULL && strcmp(s, "Balanced") == 0
            ? TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_BALANCED
            : d->consolidation_policy;
    /* The CRD defaults the whole disruption block to {consolidateAfter: 0s}
     * but requires consolidateAfter in a block that is written. */
    if (tlr_json_obj(o, "spec.disruption") != NULL &&
        tlr_json_get(o, "spec.disruption.consolidateAfter") == NULL) {
        rc = kfail(&c, TLR_E_INVAL, "spec.disruption.consolidateAfter", "is required");
        goto out;
    }
    if ((rc = kkarp_duration(&c, o, "spec.disruption.consolidateAfter",
                        "spec.disruption.consolidateAfter", true, &d->consolidate_after_ms,
                        &d->consolidate_after_never, NULL)) ||
        (rc = karr(&c, o, "spec.disruption.budgets", "spec.disruption.budgets", &v)) ||
        (rc = budgets(&c, v, d)))
        goto out;

    if ((rc = kobj(&c, o, "spec.limits", "spec.limits", &v)) || (rc = limits(&c, v, &p->limits)))
        goto out;

    /* status, when the object came from a cluster */
    if (tlr_json_obj(o, "status") != NULL) {
        Tailor__V1__NodePoolStatus *st = tlr_malloc(sizeof(*st));
        tailor__v1__node_pool_status__init(st);
        p->status = st;
        if ((rc = kobj(&c, o, "status.resources", "status.resources", &v)) ||
            (rc = kresources(&c, v, "status.resources", &st->usage)) ||
            (rc = kint(&c, o, "status.nodes", "status.nodes", 0, INT64_MAX, &st->nodes, NULL)) ||
            (rc = karr(&c, o, "status.conditions", "status.conditions", &v)) ||
            (rc = kconditions(&c, v, "status.conditions", &st->conditions, &st->n_conditions)))
            goto out;
        s = kcondition_status(v, "Ready", NULL);
        st->ready = s != NULL && strcmp(s, "True") == 0;
    }
    *out = p;
    p = NULL;
out:
    tlr_kubeobj_free(p);
    return rc;
}
