/* nodeclass.c - karpenter.k8s.aws/v1 EC2NodeClass to tailor.v1.NodeClass.
 *
 * Defaults (metadataOptions: endpoint enabled, IPv6 disabled, hop limit 1,
 * tokens required) are applied; the CRD's guards that matter to a launch
 * are enforced: amiSelectorTerms, subnetSelectorTerms and
 * securityGroupSelectorTerms are required and each term must select
 * something; an alias stands alone; exactly one of role and
 * instanceProfile; amiFamily is one of the enum, required without an
 * alias and consistent with it (nc->ami_family: as written, else the
 * alias's family).  status (resolved AMIs, subnets, security groups,
 * capacity reservations, instance profile) is read when present.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeobj_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

static int ami_terms(kctx *c, json_object *arr, Tailor__V1__NodeClass *nc)
{
    const char *field = "spec.amiSelectorTerms";
    size_t len = arr ? json_object_array_length(arr) : 0;
    char f[KF];
    int rc = TLR_OK;

    if (len == 0)
        return kfail(c, TLR_E_INVAL, field, "at least one term is required");
    nc->ami_selector_terms = tlr_calloc(len, sizeof(*nc->ami_selector_terms));
    for (size_t i = 0; rc == TLR_OK && i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        const char *alias, *id, *name, *owner, *ssm;

        kpath(f, "%s[%zu]", field, i);
        if (!json_object_is_type(o, json_type_object))
            return kfail(c, TLR_E_PARSE, f, "want an object");
        if ((rc = kstr(c, o, "alias", f, &alias)) || (rc = kstr(c, o, "id", f, &id)) ||
            (rc = kstr(c, o, "name", f, &name)) || (rc = kstr(c, o, "owner", f, &owner)) ||
            (rc = kstr(c, o, "ssmParameter", f, &ssm)))
            return rc;
        Tailor__V1__AmiSelectorTerm *t = tlr_malloc(sizeof(*t));
        tailor__v1__ami_selector_term__init(t);
        nc->ami_selector_terms[nc->n_ami_selector_terms++] = t;
        kset(&t->alias, alias);
        kset(&t->id, id);
        kset(&t->name, name);
        kset(&t->owner, owner);
        kset(&t->ssm_parameter, ssm);
        if ((rc = klabels(c, tlr_json_get(o, "tags"), f, NULL, &t->tags, &t->n_tags)))
            return rc;
        bool other = id || name || owner || ssm || t->n_tags > 0;
        if (alias != NULL && (other || len > 1))
            return kfail(c, TLR_E_INVAL, f, "alias must be the only term and the only field");
        if (alias == NULL && !other)
            return kfail(c, TLR_E_INVAL, f, "a term must set alias, id, name, tags or "
                         "ssmParameter");
        if (alias != NULL && strchr(alias, '@') == NULL)
            return kfail(c, TLR_E_PARSE, f, "alias \"%.40s\" is not family@version", alias);
    }
    return rc;
}

/* The AMI families an EC2NodeClass may name, and the alias family of each
 * (Karpenter v1's enum for spec.amiFamily). */
static const struct { const char *name, *alias; } families[] = {
    { "AL2", "al2" },
    { "AL2023", "al2023" },
    { "Bottlerocket", "bottlerocket" },
    { "Custom", NULL },
    { "Windows2019", "windows2019" },
    { "Windows2022", "windows2022" },
    { "Windows2025", "windows2025" },
};

/* spec.amiFamily against the CRD's rules: one of the enum; required when
 * no term is an alias; with an alias, either Custom or the alias's own
 * family.  nc->ami_family gets the family written, else the alias's. */
static int ami_family(kctx *c, const char *fam, Tailor__V1__NodeClass *nc)
{
    const char *f = "spec.amiFamily";
    const char *alias = NULL;
    size_t nf = sizeof(families) / sizeof(families[0]), ai = nf, fi = nf;

    for (size_t i = 0; i < nc->n_ami_selector_terms && !alias; i++)
        if (nc->ami_selector_terms[i]->alias[0])
            alias = nc->ami_selector_terms[i]->alias;
    if (alias != NULL) {
        size_t alen = strcspn(alias, "@");
        for (ai = 0; ai < nf; ai++)
            if (families[ai].alias && strlen(families[ai].alias) == alen &&
                strncmp(families[ai].alias, alias, alen) == 0)
                break;
        if (ai == nf)
            return kfail(c, TLR_E_INVAL, "spec.amiSelectorTerms[0].alias",
                         "family of \"%.40s\" is not one of al2, al2023, bottlerocket, "
                         "windows2019, windows2022, windows2025", alias);
    }
    if (fam != NULL) {
        for (fi = 0; fi < nf; fi++)
            if (strcmp(families[fi].name, fam) == 0)
                break;
        if (fi == nf)
            return kfail(c, TLR_E_INVAL, f, "\"%.40s\" is not one of AL2, AL2023, "
                         "Bottlerocket, Custom, Windows2019, Windows2022, Windows2025", fam);
        if (alias != NULL && fi != ai && families[fi].alias != NULL)
            return kfail(c, TLR_E_INVAL, f, "must be '%s' or 'Custom' when using the alias "
                         "\"%.40s\"", families[ai].name, alias);
        kset(&nc->ami_family, families[fi].name);
        return TLR_OK;
    }
    if (alias == NULL)
        return kfail(c, TLR_E_INVAL, f, "must be set when amiSelectorTerms has no alias");
    kset(&nc->ami_family, families[ai].name);
    return TLR_OK;
}

/* subnet / security group / capacity reservation selector terms. */
static int sel_terms(kctx *c, json_object *o, const char *key, bool required, bool names,
                     const char *owner_key, Tailor__V1__SelectorTerm ***out, size_t *n)
{
    json_object *arr;
    char field[KF], f[KF];
    int rc;

    kpath(field, "spec.%s", key);
    if ((rc = karr(c, o, key, field, &arr)))
        return rc;
    size_t len = arr ? json_object_array_length(arr) : 0;
    if (len == 0 && required)
        return kfail(c, TLR_E_INVAL, field, "at least one term is required");
    if (len > 0)
        *out = tlr_calloc(len, sizeof(**out));
    for (size_t i = 0; i < len; i++) {
        json_object *t = json_object_array_get_idx(arr, i);
        const char *id, *name = NULL, *owner = NULL;

        kpath(f, "%s[%zu]", field, i);
        if (!json_object_is_type(t, json_type_object))
            return kfail(c, TLR_E_PARSE, f, "want an object");
        if ((rc = kstr(c, t, "id", f, &id)) ||
            (names && (rc = kstr(c, t, "name", f, &name))) ||
            (owner_key && (rc = kstr(c, t, owner_key, f, &owner))))
            return rc;
        Tailor__V1__SelectorTerm *x = tlr_malloc(sizeof(*x));
        tailor__v1__selector_term__init(x);
        (*out)[(*n)++] = x;
        kset(&x->id, id);
        kset(&x->name, name);
        kset(&x->owner, owner);
        if ((rc = klabels(c, tlr_json_get(t, "tags"), f, NULL, &x->tags, &x->n_tags)))
            return rc;
        if (id == NULL && name == NULL && x->n_tags == 0)
            return kfail(c, TLR_E_INVAL, f, "a term must set id%s or tags", names ? ", name" : "");
    }
    return TLR_OK;
}

static int block_devices(kctx *c, json_object *arr, Tailor__V1__NodeClass *nc)
{
    size_t len = arr ? json_object_array_length(arr) : 0;
    char f[KF];
    int rc = TLR_OK;

    if (len > 0)
        nc->block_device_mappings = tlr_calloc(len, sizeof(*nc->block_device_mappings));
    for (size_t i = 0; rc == TLR_OK && i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i), *ebs;
        const char *dev, *vt, *kms, *snap;
        int64_t iops = 0, tp = 0;
        protobuf_c_boolean enc = false, has_enc = false, dot = false, has_dot = false;

        kpath(f, "spec.blockDeviceMappings[%zu]", i);
        if (!json_object_is_type(o, json_type_object))
            return kfail(c, TLR_E_PARSE, f, "want an object");
        Tailor__V1__BlockDeviceMapping *m = tlr_malloc(sizeof(*m));
        tailor__v1__block_device_mapping__init(m);
        nc->block_device_mappings[nc->n_block_device_mappings++] = m;
        if ((rc = kstr(c, o, "deviceName", f, &dev)) ||
            (rc = kbool(c, o, "rootVolume", f, &m->root_volume, NULL)) ||
            (rc = kobj(c, o, "ebs", f, &ebs)))
            return rc;
        kset(&m->device_name, dev);
        if (ebs == NULL)
            continue;
        strncat(f, ".ebs", sizeof(f) - strlen(f) - 1);
        Tailor__V1__EbsVolume *e = tlr_malloc(sizeof(*e));
        tailor__v1__ebs_volume__init(e);
        m->ebs = e;
        if ((rc = kstr(c, ebs, "volumeType", f, &vt)) || (rc = kstr(c, ebs, "kmsKeyID", f, &kms)) ||
            (rc = kstr(c, ebs, "snapshotID", f, &snap)) ||
            (rc = kint(c, ebs, "iops", f, 0, INT32_MAX, &iops, NULL)) ||
            (rc = kint(c, ebs, "throughput", f, 0, INT32_MAX, &tp, NULL)) ||
            (rc = kbool(c, ebs, "encrypted", f, &enc, &has_enc)) ||
            (rc = kbool(c, ebs, "deleteOnTermination", f, &dot, &has_dot)))
            return rc;
        if (tlr_json_get(ebs, "volumeSize") != NULL) {
            tlr_quantity q;
            int64_t bytes;
            char ff[KF];
            kpath(ff, "%s.volumeSize", f);
            if (tlr_json_quantity(ebs, "volumeSize", &q) != TLR_OK || q.neg ||
                tlr_quantity_value(&q, &bytes) != TLR_OK)
                return kfail(c, TLR_E_PARSE, ff, "\"%.40s\" is not a size",
                             json_object_get_string(tlr_json_get(ebs, "volumeSize")));
            e->volume_size_bytes = bytes;
        }
        kset(&e->volume_type, vt);
        kset(&e->kms_key_id, kms);
        kset(&e->snapshot_id, snap);
        e->iops = (int32_t)iops;
        e->throughput_mibps = (int32_t)tp;
        e->has_encrypted = has_enc;
        e->encrypted = enc;
        e->has_delete_on_termination = has_dot;
        e->delete_on_termination = dot;
    }
    return rc;
}

static int metadata_options(kctx *c, json_object *o, Tailor__V1__NodeClass *nc)
{
    const char *f = "spec.metadataOptions", *ep, *v6, *tok;
    int64_t hop = 1;
    int rc;

    if ((rc = kstr(c, o, "httpEndpoint", f, &ep)) || (rc = kstr(c, o, "httpProtocolIPv6", f, &v6)) ||
        (rc = kstr(c, o, "httpTokens", f, &tok)) ||
        (rc = kint(c, o, "httpPutResponseHopLimit", f, 1, 64, &hop, NULL)))
        return rc;
    if (ep && strcmp(ep, "enabled") && strcmp(ep, "disabled"))
        return kfail(c, TLR_E_PARSE, f, "httpEndpoint \"%.20s\" is not enabled or disabled", ep);
    if (v6 && strcmp(v6, "enabled") && strcmp(v6, "disabled"))
        return kfail(c, TLR_E_PARSE, f, "httpProtocolIPv6 \"%.20s\" is not enabled or disabled",
                     v6);
    if (tok && strcmp(tok, "required") && strcmp(tok, "optional"))
        return kfail(c, TLR_E_PARSE, f, "httpTokens \"%.20s\" is not required or optional", tok);
    Tailor__V1__MetadataOptions *m = tlr_malloc(sizeof(*m));
    tailor__v1__metadata_options__init(m);
    nc->metadata_options = m;
    kset(&m->http_endpoint, ep ? ep : "enabled");
    kset(&m->http_protocol_ipv6, v6 ? v6 : "disabled");
    kset(&m->http_tokens, tok ? tok : "required");
    m->http_put_response_hop_limit = (int32_t)hop;
    return TLR_OK;
}

static int kubelet(kctx *c, json_object *o, Tailor__V1__NodeClass *nc)
{
    const char *f = "spec.kubelet";
    char ff[KF];
    int64_t mp = 0, ppc = 0, hi = 0, lo = 0, mpg = 0;
    json_object *v;
    int rc;

    if (o == NULL)
        return TLR_OK;
    Tailor__V1__KubeletConfig *k = tlr_malloc(sizeof(*k));
    tailor__v1__kubelet_config__init(k);
    nc->kubelet = k;
    if ((rc = kint(c, o, "maxPods", f, 0, INT32_MAX, &mp, NULL)) ||
        (rc = kint(c, o, "podsPerCore", f, 0, INT32_MAX, &ppc, NULL)) ||
        (rc = kint(c, o, "imageGCHighThresholdPercent", f, 0, 100, &hi, NULL)) ||
        (rc = kint(c, o, "imageGCLowThresholdPercent", f, 0, 100, &lo, NULL)) ||
        (rc = kint(c, o, "evictionMaxPodGracePeriod", f, 0, INT32_MAX, &mpg, NULL)) ||
        (rc = kbool(c, o, "cpuCFSQuota", f, &k->cpu_cfs_quota, &k->has_cpu_cfs_quota)) ||
        (rc = kobj(c, o, "systemReserved", f, &v)) ||
        (v && (rc = kresources(c, v, "spec.kubelet.systemReserved", &k->system_reserved))) ||
        (rc = kobj(c, o, "kubeReserved", f, &v)) ||
        (v && (rc = kresources(c, v, "spec.kubelet.kubeReserved", &k->kube_reserved))) ||
        (rc = klabels(c, tlr_json_get(o, "evictionHard"), "spec.kubelet.evictionHard", NULL,
                      &k->eviction_hard, &k->n_eviction_hard)) ||
        (rc = klabels(c, tlr_json_get(o, "evictionSoft"), "spec.kubelet.evictionSoft", NULL,
                      &k->eviction_soft, &k->n_eviction_soft)) ||
        (rc = karr(c, o, "clusterDNS", f, &v)) ||
        (rc = kstrings(c, v, "spec.kubelet.clusterDNS", &k->cluster_dns, &k->n_cluster_dns)))
        return rc;
    if (hi != 0 && lo != 0 && lo >= hi)
        return kfail(c, TLR_E_INVAL, f, "imageGCLowThresholdPercent must be below "
                     "imageGCHighThresholdPercent");
    k->max_pods = (int32_t)mp;
    k->pods_per_core = (int32_t)ppc;
    k->image_gc_high_threshold_percent = (int32_t)hi;
    k->image_gc_low_threshold_percent = (int32_t)lo;
    k->eviction_max_pod_grace_period = (int32_t)mpg;
    json_object *gp = tlr_json_obj(o, "evictionSoftGracePeriod");
    if (gp != NULL) {
        k->eviction_soft_grace_period =
            tlr_calloc((size_t)json_object_object_length(gp) + 1,
                       sizeof(*k->eviction_soft_grace_period));
        json_object_object_foreach(gp, sig, dur) {
            int64_t ms = 0;
            json_object *w = json_object_new_object();
            json_object_object_add(w, "d", json_object_get(dur));
            kpath(ff, "spec.kubelet.evictionSoftGracePeriod.%s", sig);
            rc = kduration(c, w, "d", ff, false, &ms, NULL, NULL);
            json_object_put(w);
            if (rc != TLR_OK)
                return rc;
            Tailor__V1__SignalDuration *sd = tlr_malloc(sizeof(*sd));
            tailor__v1__signal_duration__init(sd);
            sd->signal = tlr_strdup(sig);
            sd->duration_ms = ms;
            k->eviction_soft_grace_period[k->n_eviction_soft_grace_period++] = sd;
        }
    }
    return TLR_OK;
}

static int status_part(kctx *c, json_object *st, Tailor__V1__NodeClass *nc)
{
    json_object *arr;
    char f[KF];
    int rc;

    if (nc->instance_profile[0] == '\0')   /* the resolved profile of a role */
        kset(&nc->instance_profile, tlr_json_str(st, "instanceProfile"));
    if ((rc = karr(c, st, "amis", "status.amis", &arr)))
        return rc;
    size_t len = arr ? json_object_array_length(arr) : 0;
    if (len > 0)
        nc->amis = tlr_calloc(len, sizeof(*nc->amis));
    for (size_t i = 0; i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i), *req;
        kpath(f, "status.amis[%zu]", i);
        Tailor__V1__ResolvedAmi *a = tlr_malloc(sizeof(*a));
        tailor__v1__resolved_ami__init(a);
        nc->amis[nc->n_amis++] = a;
        kset(&a->id, tlr_json_str(o, "id"));
        kset(&a->name, tlr_json_str(o, "name"));
        if ((rc = kbool(c, o, "deprecated", f, &a->deprecated, NULL)) ||
            (rc = karr(c, o, "requirements", f, &req)) ||
            (rc = knsreqs(c, req, f, true, &a->requirements, &a->n_requirements)))
            return rc;
        for (size_t k = 0; k < a->n_requirements; k++) {
            Tailor__V1__NodeSelectorRequirement *r = a->requirements[k];
            if (strcmp(r->key, "kubernetes.io/arch") == 0 && r->n_values == 1 &&
                r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN)
                kset(&a->arch, r->values[0]);
        }
    }
    if ((rc = karr(c, st, "subnets", "status.subnets", &arr)))
        return rc;
    len = arr ? json_object_array_length(arr) : 0;
    if (len > 0)
        nc->subnets = tlr_calloc(len, sizeof(*nc->subnets));
    for (size_t i = 0; i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        Tailor__V1__ResolvedSubnet *s = tlr_malloc(sizeof(*s));
        tailor__v1__resolved_subnet__init(s);
        nc->subnets[nc->n_subnets++] = s;
        kset(&s->id, tlr_json_str(o, "id"));
        kset(&s->zone, tlr_json_str(o, "zone"));
        kset(&s->zone_id, tlr_json_str(o, "zoneID"));
    }
    if ((rc = karr(c, st, "securityGroups", "status.securityGroups", &arr)))
        return rc;
    len = arr ? json_object_array_length(arr) : 0;
    if (len > 0)
        nc->security_groups = tlr_calloc(len, sizeof(*nc->security_groups));
    for (size_t i = 0; i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        Tailor__V1__ResolvedSecurityGroup *g = tlr_malloc(sizeof(*g));
        tailor__v1__resolved_security_group__init(g);
        nc->security_groups[nc->n_security_groups++] = g;
        kset(&g->id, tlr_json_str(o, "id"));
        kset(&g->name, tlr_json_str(o, "name"));
    }
    if ((rc = karr(c, st, "capacityReservations", "status.capacityReservations", &arr)))
        return rc;
    len = arr ? json_object_array_length(arr) : 0;
    if (len > 0)
        nc->capacity_reservations = tlr_calloc(len, sizeof(*nc->capacity_reservations));
    for (size_t i = 0; i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        kpath(f, "status.capacityReservations[%zu]", i);
        Tailor__V1__ResolvedCapacityReservation *r = tlr_malloc(sizeof(*r));
        tailor__v1__resolved_capacity_reservation__init(r);
        nc->capacity_reservations[nc->n_capacity_reservations++] = r;
        kset(&r->id, tlr_json_str(o, "id"));
        kset(&r->instance_type, tlr_json_str(o, "instanceType"));
        kset(&r->zone, tlr_json_str(o, "availabilityZone"));
        kset(&r->owner_id, tlr_json_str(o, "ownerID"));
        kset(&r->reservation_type, tlr_json_str(o, "reservationType"));
        if ((rc = kint(c, o, "availableInstanceCount", f, 0, INT64_MAX, &r->available_count,
                       NULL)) ||
            (rc = ktime(c, o, "endTime", f, &r->end_unix_ms)))
            return rc;
    }
    if ((rc = karr(c, st, "conditions", "status.conditions", &arr)) ||
        (rc = kconditions(c, arr, "status.conditions", &nc->conditions, &nc->n_conditions)))
        return rc;
    const char *ready = kcondition_status(arr, "Ready", NULL);
    nc->ready = ready != NULL && strcmp(ready, "True") == 0;
    return TLR_OK;
}

int tlr_kubeobj_nodeclass(json_object *o, const tlr_kubeobj_opts *opts,
                          Tailor__V1__NodeClass **out, char *err, size_t errlen)
{
    kctx c;
    Tailor__V1__NodeClass *nc = NULL;
    const char *s, *role, *prof, *kind = tlr_json_str(o, "kind");
    json_object *spec, *v;
    int rc;

    kctx_init(&c, o, "EC2NodeClass", opts, err, errlen);
    if (out == NULL || !json_object_is_type(o, json_type_object))
        return kfail(&c, TLR_E_INVAL, NULL, "not an object");
    if (kind != NULL && strcmp(kind, "EC2NodeClass") != 0)
        return kfail(&c, TLR_E_INVAL, "kind", "want EC2NodeClass");
    if ((rc = kstr(&c, o, "metadata.name", "metadata.name", &s)) != TLR_OK)
        return rc;
    if (s == NULL || *s == '\0')
        return kfail(&c, TLR_E_INVAL, "metadata.name", "is required");
    if ((rc = kobj(&c, o, "spec", "spec", &spec)) != TLR_OK)
        return rc;
    if (spec == NULL)
        return kfail(&c, TLR_E_INVAL, "spec", "is required");
    nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_class__init(nc);
    nc->name = tlr_strdup(s);
    kset(&nc->uid, tlr_json_str(o, "metadata.uid"));
    kset(&nc->resource_version, tlr_json_str(o, "metadata.resourceVersion"));
    kset(&nc->hash, tlr_json_str(o, "metadata.annotations.karpenter\\.k8s\\.aws/ec2nodeclass-hash"));
    kset(&nc->hash_version,
         tlr_json_str(o, "metadata.annotations.karpenter\\.k8s\\.aws/ec2nodeclass-hash-version"));
    if ((rc = karr(&c, spec, "amiSelectorTerms", "spec.amiSelectorTerms", &v)) ||
        (rc = ami_terms(&c, v, nc)) ||
        (rc = sel_terms(&c, spec, "subnetSelectorTerms", true, false, NULL,
                        &nc->subnet_selector_terms, &nc->n_subnet_selector_terms)) ||
        (rc = sel_terms(&c, spec, "securityGroupSelectorTerms", true, true, NULL,
                        &nc->security_group_selector_terms,
                        &nc->n_security_group_selector_terms)) ||
        (rc = sel_terms(&c, spec, "capacityReservationSelectorTerms", false, false, "ownerID",
                        &nc->capacity_reservation_selector_terms,
                        &nc->n_capacity_reservation_selector_terms)))
        goto out;
    if ((rc = kstr(&c, spec, "role", "spec.role", &role)) ||
        (rc = kstr(&c, spec, "instanceProfile", "spec.instanceProfile", &prof)))
        goto out;
    if ((role == NULL || *role == '\0') == (prof == NULL || *prof == '\0')) {
        rc = kfail(&c, TLR_E_INVAL, "spec.role", "exactly one of role and instanceProfile "
                   "must be set");
        goto out;
    }
    kset(&nc->role, role);
    kset(&nc->instance_profile, prof);
    if ((rc = kstr(&c, spec, "userData", "spec.userData", &s)))
        goto out;
    kset(&nc->user_data, s);
    if ((rc = klabels(&c, tlr_json_get(spec, "tags"), "spec.tags", NULL, &nc->tags,
                      &nc->n_tags)) ||
        (rc = karr(&c, spec, "blockDeviceMappings", "spec.blockDeviceMappings", &v)) ||
        (rc = block_devices(&c, v, nc)) ||
        (rc = kobj(&c, spec, "metadataOptions", "spec.metadataOptions", &v)) ||
        (rc = metadata_options(&c, v, nc)) ||
        (rc = kobj(&c, spec, "kubelet", "spec.kubelet", &v)) || (rc = kubelet(&c, v, nc)) ||
        (rc = kbool(&c, spec, "detailedMonitoring", "spec.detailedMonitoring",
                    &nc->detailed_monitoring, NULL)) ||
        (rc = kbool(&c, spec, "associatePublicIPAddress", "spec.associatePublicIPAddress",
                    &nc->associate_public_ip_address, &nc->has_associate_public_ip_address)) ||
        (rc = kstr(&c, spec, "instanceStorePolicy", "spec.instanceStorePolicy", &s)))
        goto out;
    if (s != NULL && strcmp(s, "RAID0") != 0) {
        rc = kfail(&c, TLR_E_PARSE, "spec.instanceStorePolicy", "\"%.20s\" is not RAID0", s);
        goto out;
    }
    if (s != NULL)
        nc->instance_store_policy = TAILOR__V1__INSTANCE_STORE_POLICY__INSTANCE_STORE_POLICY_RAID0;
    if ((rc = kstr(&c, spec, "amiFamily", "spec.amiFamily", &s)) ||
        (rc = ami_family(&c, s, nc)))
        goto out;
    if ((v = tlr_json_obj(o, "status")) != NULL) {
        if ((rc = status_part(&c, v, nc)))
            goto out;
    }
    *out = nc;
    nc = NULL;
out:
    tlr_kubeobj_free(nc);
    return rc;
}
