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
#include "tlr_labels.h"
#include "tlr_quantity.h"

static int ami_terms(kctx *c, json_object *arr, Tailor__V1__NodeClass *nc)
{
    const char *field = "spec.amiSelectorTerms";
    size_t len = arr ? json_object_array_length(arr) : 0;
    char f[KF];
    int rc = TLR_OK;

    if (len == 0)
        return kfail(c, TLR_E_INVAL, field, "at least one term is required");
    if (len > 30)
        return kfail(c, TLR_E_INVAL, field, "at most 30 terms");
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
        json_object *tags = tlr_json_get(o, "tags");
        char ft[KF];
        kpath(ft, "%s.tags", f);
        if ((rc = kkarp_tags(c, tags, ft)) ||
            (rc = klabels(c, tags, f, NULL, &t->tags, &t->n_tags)))
            return rc;
        /* has(x.tags) is true for an empty map too */
        bool has_tags = tags != NULL;
        if (!has_tags && !id && !name && !alias && !ssm)
            return kfail(c, TLR_E_INVAL, f, "a term must set alias, id, name, tags or "
                         "ssmParameter (owner alone selects nothing)");
        /* CEL leaves ssmParameter beside alias alone; the alias wins. */
        if (alias != NULL && (id || has_tags || name || owner || len > 1))
            return kfail(c, TLR_E_INVAL, f, "alias must be the only term and the only field");
        if (id != NULL && (alias || has_tags || name || owner))
            return kfail(c, TLR_E_INVAL, f, "'id' is mutually exclusive, cannot be set with a "
                         "combination of other fields in amiSelectorTerms");
        if (alias != NULL && ssm != NULL)
            kwarn(c, f, "ssmParameter is ignored beside alias: tailor resolves the alias");
        if (id != NULL && !kmatch("ami-[0-9a-z]+", id))
            return kfail(c, TLR_E_PARSE, f, "id \"%.40s\" is not an AMI id (ami-...)", id);
        if (alias != NULL && (strlen(alias) > 30 || !kmatch("^[a-zA-Z0-9]+@.+$", alias)))
            return kfail(c, TLR_E_PARSE, f, "alias \"%.40s\" is not family@version (at most "
                         "30 characters)", alias);
        if (alias != NULL && strncmp(alias, "windows", 7) == 0 &&
            strcmp(strchr(alias, '@'), "@latest") != 0)
            return kfail(c, TLR_E_INVAL, f, "alias \"%.40s\": windows families may only "
                         "specify version 'latest'", alias);
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

/* subnet / security group / capacity reservation selector terms.  Each
 * kind has its own fields and CEL rules (see sel_kinds). */
typedef struct sel_kind {
    const char *key;          /* "subnetSelectorTerms" */
    bool required;
    const char *id_ere;       /* the CRD's pattern for id */
    const char *id_what;
    bool names;               /* security groups: name */
    bool cr;                  /* capacity reservations: ownerID, instanceMatchCriteria */
} sel_kind;

static const sel_kind SUBNETS = { "subnetSelectorTerms", true, "subnet-[0-9a-z]+",
                                  "a subnet id (subnet-...)", false, false };
static const sel_kind SGS = { "securityGroupSelectorTerms", true, "sg-[0-9a-z]+",
                              "a security group id (sg-...)", true, false };
static const sel_kind CRS = { "capacityReservationSelectorTerms", false, "^cr-[0-9a-z]+$",
                              "a capacity reservation id (cr-...)", false, true };

static int sel_terms(kctx *c, json_object *o, const sel_kind *k,
                     Tailor__V1__SelectorTerm ***out, size_t *n)
{
    json_object *arr;
    char field[KF], f[KF], ft[KF];
    bool all_id_mixed = true, all_name_mixed = true;
    int rc;

    kpath(field, "spec.%s", k->key);
    if ((rc = karr(c, o, k->key, field, &arr)))
        return rc;
    size_t len = arr ? json_object_array_length(arr) : 0;
    if (len == 0 && k->required)
        return kfail(c, TLR_E_INVAL, field, "at least one term is required");
    if (len > 30)
        return kfail(c, TLR_E_INVAL, field, "at most 30 terms");
    if (len > 0)
        *out = tlr_calloc(len, sizeof(**out));
    for (size_t i = 0; i < len; i++) {
        json_object *t = json_object_array_get_idx(arr, i), *tags;
        const char *id, *name = NULL, *owner = NULL, *imc = NULL;

        kpath(f, "%s[%zu]", field, i);
        kpath(ft, "%s.tags", f);
        if (!json_object_is_type(t, json_type_object))
            return kfail(c, TLR_E_PARSE, f, "want an object");
        if ((rc = kstr(c, t, "id", f, &id)) ||
            (k->names && (rc = kstr(c, t, "name", f, &name))) ||
            (k->cr && (rc = kstr(c, t, "ownerID", f, &owner))) ||
            (k->cr && (rc = kstr(c, t, "instanceMatchCriteria", f, &imc))))
            return rc;
        tags = tlr_json_get(t, "tags");
        Tailor__V1__SelectorTerm *x = tlr_malloc(sizeof(*x));
        tailor__v1__selector_term__init(x);
        (*out)[(*n)++] = x;
        kset(&x->id, id);
        kset(&x->name, name);
        kset(&x->owner, owner);
        if ((rc = kkarp_tags(c, tags, ft)) ||
            (rc = klabels(c, tags, f, NULL, &x->tags, &x->n_tags)))
            return rc;
        if (id == NULL && name == NULL && tags == NULL && imc == NULL)
            return kfail(c, TLR_E_INVAL, f, "a term must set id%s%s or tags",
                         k->names ? ", name" : "", k->cr ? ", instanceMatchCriteria" : "");
        if (id != NULL && !kmatch(k->id_ere, id))
            return kfail(c, TLR_E_PARSE, f, "id \"%.40s\" is not %s", id, k->id_what);
        if (owner != NULL && !kmatch("^[0-9]{12}$", owner))
            return kfail(c, TLR_E_PARSE, f, "ownerID \"%.40s\" is not a 12-digit account id",
                         owner);
        if (imc != NULL && strcmp(imc, "open") != 0 && strcmp(imc, "targeted") != 0)
            return kfail(c, TLR_E_PARSE, f, "instanceMatchCriteria \"%.20s\" is not open or "
                         "targeted", imc);
        all_id_mixed &= id != NULL && (tags != NULL || name != NULL || owner != NULL ||
                                       imc != NULL);
        all_name_mixed &= name != NULL && (tags != NULL || id != NULL);
    }
    /* The CRD's CEL is !self.all(...): the mix is refused only when every
     * term has it.  Refusing more would refuse what Karpenter admits. */
    if (len > 0 && all_id_mixed)
        return kfail(c, TLR_E_INVAL, field, "'id' is mutually exclusive, cannot be set with a "
                     "combination of other fields in a selector term");
    if (len > 0 && k->names && all_name_mixed)
        return kfail(c, TLR_E_INVAL, field, "'name' is mutually exclusive, cannot be set with a "
                     "combination of other fields in a security group selector term");
    return TLR_OK;
}

static int block_devices(kctx *c, json_object *arr, Tailor__V1__NodeClass *nc)
{
    size_t len = arr ? json_object_array_length(arr) : 0;
    char f[KF];
    int rc = TLR_OK;

    size_t roots = 0;
    if (len > 50)
        return kfail(c, TLR_E_INVAL, "spec.blockDeviceMappings", "at most 50");
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
        if (m->root_volume && ++roots > 1)
            return kfail(c, TLR_E_INVAL, "spec.blockDeviceMappings",
                         "must have only one blockDeviceMappings with rootVolume");
        if (ebs == NULL)
            continue;
        strncat(f, ".ebs", sizeof(f) - strlen(f) - 1);
        int64_t vir = 0;
        bool has_vir = false;
        if ((rc = kint(c, ebs, "volumeInitializationRate", f, 100, 300, &vir, &has_vir)))
            return rc;
        if (tlr_json_get(ebs, "snapshotID") == NULL && tlr_json_get(ebs, "volumeSize") == NULL)
            return kfail(c, TLR_E_INVAL, f, "snapshotID or volumeSize must be defined");
        if (has_vir) {
            const char *sid = tlr_json_str(ebs, "snapshotID");
            if (sid == NULL || *sid == '\0')
                return kfail(c, TLR_E_INVAL, f, "snapshotID must be set when "
                             "volumeInitializationRate is set");
            kwarn(c, f, "volumeInitializationRate is ignored: tailor does not pass it to EC2, "
                  "the volume initializes at the default rate");
        }
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
        if (vt != NULL && !kmatch("^(standard|io1|io2|gp2|sc1|st1|gp3)$", vt))
            return kfail(c, TLR_E_PARSE, f, "volumeType \"%.20s\" is not one of standard, io1, "
                         "io2, gp2, sc1, st1, gp3", vt);
        if (tlr_json_get(ebs, "volumeSize") != NULL) {
            tlr_quantity q;
            int64_t bytes;
            char ff[KF];
            kpath(ff, "%s.volumeSize", f);
            /* The CRD's pattern: whole Gi up to 59000, G up to 64000, Ti up
             * to 58, T up to 64 (its empty alternatives let a bare "Ti" or
             * "T" through; the quantity parse below refuses those). */
            const char *vs = json_object_get_string(tlr_json_get(ebs, "volumeSize"));
            if (!json_object_is_type(tlr_json_get(ebs, "volumeSize"), json_type_string) ||
                !kmatch("^(([1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|"
                        "([1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|"
                        "([1-9]|[1-5][0-7]|58)Ti|([1-9]|[1-5][0-9]|6[0-3]|64)T)$", vs))
                return kfail(c, TLR_E_PARSE, ff, "\"%.40s\" is not a size (1-59000Gi, "
                             "1-64000G, 1-58Ti or 1-64T)", vs);
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

/* spec.kubelet is an open map in the v1.14 CRD: the API server checks
 * nothing, and Karpenter's controller (ValidateKubeletConfig) refuses the
 * class.  These are its rules, for the fields tailor reads; any other
 * kubelet field is warned about, as tailor's bootstrap does not pass it on. */
static const char *const kubelet_fields[] = {
    "maxPods", "podsPerCore", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent",
    "evictionMaxPodGracePeriod", "cpuCFSQuota", "systemReserved", "kubeReserved",
    "evictionHard", "evictionSoft", "evictionSoftGracePeriod", "clusterDNS",
};
static const char *const eviction_signals[] = {
    "memory.available", "nodefs.available", "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "pid.available",
};

static bool in_list(const char *s, const char *const *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, l[i]) == 0)
            return true;
    return false;
}

/* An eviction map (absent: fine): signals as keys; thresholds a
 * percentage 0..100 or a non-negative quantity, unless durations. */
static int eviction_map(kctx *c, json_object *o, const char *key, bool durations)
{
    json_object *m = tlr_json_get(o, key);
    char f[KF];

    if (m == NULL || !json_object_is_type(m, json_type_object))
        return TLR_OK;   /* klabels() reports the type */
    json_object_object_foreach(m, sig, v) {
        const char *val = json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                     : "";
        size_t n = strlen(val);
        kpath(f, "spec.kubelet.%s[%.40s]", key, sig);
        if (!in_list(sig, eviction_signals, sizeof(eviction_signals) / sizeof(eviction_signals[0])))
            return kfail(c, TLR_E_INVAL, f, "\"%.40s\" isn't a valid eviction signal, must be "
                         "one of memory.available, nodefs.available, nodefs.inodesFree, "
                         "imagefs.available, imagefs.inodesFree, pid.available", sig);
        if (durations)
            continue;   /* kduration() reads them */
        if (n > 0 && val[n - 1] == '%') {
            char *end;
            double pct = strtod(val, &end);
            if (end != val + n - 1 || end == val || pct < 0 || pct > 100)
                return kfail(c, TLR_E_PARSE, f, "\"%.40s\" must be a percentage or a resource "
                             "quantity", val);
            continue;
        }
        tlr_quantity q;
        if (tlr_quantity_parse(val, &q) != TLR_OK)
            return kfail(c, TLR_E_PARSE, f, "\"%.40s\" must be a percentage or a resource "
                         "quantity", val);
        if (q.neg)
            return kfail(c, TLR_E_PARSE, f, "\"%.40s\" can't be a negative resource quantity",
                         val);
    }
    return TLR_OK;
}

static int kubelet_rules(kctx *c, json_object *o)
{
    const char *reserved[] = { "cpu", "memory", "ephemeral-storage", "pid" };
    const char *rmaps[] = { "kubeReserved", "systemReserved" };
    json_object *soft = tlr_json_obj(o, "evictionSoft"), *grace;
    char f[KF];
    int rc;

    if (tlr_json_get(o, "registerWithTaints") != NULL)
        return kfail(c, TLR_E_INVAL, "spec.kubelet.registerWithTaints", "can't be set, the "
                     "node registers with the NodeClaim's taints so it stays unschedulable "
                     "until it's ready");
    if (json_object_is_type(tlr_json_get(o, "maxPods"), json_type_string))
        return kfail(c, TLR_E_INVAL, "spec.kubelet.maxPods", "CEL expressions are not "
                     "supported by tailor: set an integer");
    if ((rc = eviction_map(c, o, "evictionHard", false)) ||
        (rc = eviction_map(c, o, "evictionSoft", false)) ||
        (rc = eviction_map(c, o, "evictionSoftGracePeriod", true)) ||
        (rc = eviction_map(c, o, "evictionMinimumReclaim", false)))
        return rc;
    grace = tlr_json_obj(o, "evictionSoftGracePeriod");
    if (soft != NULL) {
        json_object_object_foreach(soft, sig, v) {
            (void)v;
            if (grace == NULL || !json_object_object_get_ex(grace, sig, NULL)) {
                kpath(f, "spec.kubelet.evictionSoft[%.40s]", sig);
                return kfail(c, TLR_E_INVAL, f, "has no matching evictionSoftGracePeriod");
            }
        }
    }
    if (grace != NULL) {
        json_object_object_foreach(grace, sig, v) {
            (void)v;
            if (soft == NULL || !json_object_object_get_ex(soft, sig, NULL)) {
                kpath(f, "spec.kubelet.evictionSoftGracePeriod[%.40s]", sig);
                return kfail(c, TLR_E_INVAL, f, "has no matching evictionSoft");
            }
        }
    }
    for (size_t i = 0; i < 2; i++) {
        json_object *m = tlr_json_obj(o, rmaps[i]);
        if (m == NULL)
            continue;
        json_object_object_foreach(m, res, v) {
            (void)v;
            if (!in_list(res, reserved, 4)) {
                kpath(f, "spec.kubelet.%s", rmaps[i]);
                return kfail(c, TLR_E_INVAL, f, "\"%.40s\" isn't a reservable resource, must be "
                             "one of cpu, memory, ephemeral-storage, pid", res);
            }
        }
    }
    json_object_object_foreach(o, key, v) {
        (void)v;
        if (strcmp(key, "evictionMinimumReclaim") == 0) {
            kwarn(c, "spec.kubelet.evictionMinimumReclaim", "ignored: tailor does not pass it "
                  "to the kubelet");
        } else if (!in_list(key, kubelet_fields,
                            sizeof(kubelet_fields) / sizeof(kubelet_fields[0]))) {
            kpath(f, "spec.kubelet.%.64s", key);
            kwarn(c, f, "ignored: tailor passes only maxPods, podsPerCore, the reservations, "
                  "the eviction settings, the image GC thresholds, cpuCFSQuota and clusterDNS "
                  "to the kubelet");
        }
    }
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
    if ((rc = kubelet_rules(c, o)))
        return rc;
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
    if (tlr_json_get(o, "imageGCHighThresholdPercent") != NULL &&
        tlr_json_get(o, "imageGCLowThresholdPercent") != NULL && lo >= hi)
        return kfail(c, TLR_E_INVAL, f, "imageGCHighThresholdPercent (%lld) must be greater "
                     "than imageGCLowThresholdPercent (%lld)", (long long)hi, (long long)lo);
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

/* spec.tags: the CRD's restricted keys, which tailor sets itself. */
static int spec_tags(kctx *c, json_object *tags)
{
    const char *f = "spec.tags";

    if (tags == NULL || !json_object_is_type(tags, json_type_object))
        return TLR_OK;
    json_object_object_foreach(tags, k, v) {
        (void)v;
        if (k[0] == '\0')
            return kfail(c, TLR_E_INVAL, f, "empty tag keys aren't supported");
        if (strcmp(k, "eks:eks-cluster-name") == 0 || strncmp(k, "kubernetes.io/cluster", 21) == 0 ||
            strcmp(k, TLR_LABEL_NODEPOOL) == 0 || strcmp(k, TLR_TAG_NODECLAIM) == 0 ||
            strcmp(k, TLR_LABEL_NODECLASS) == 0)
            return kfail(c, TLR_E_INVAL, f, "tag contains a restricted tag matching %.64s", k);
    }
    return TLR_OK;
}

/* The fields of the v1.14 CRD that tailor does not act on: validated like
 * the CRD does, so a manifest that is wrong is still refused, then warned
 * about (the launcher does not pass them to EC2). */
static int unused_fields(kctx *c, json_object *spec, const Tailor__V1__NodeClass *nc)
{
    json_object *v;
    int64_t x;
    bool has;
    char f[KF];
    int rc;

    if (nc->n_capacity_reservation_selector_terms > 0)
        kwarn(c, "spec.capacityReservationSelectorTerms", "ignored: tailor does not launch "
              "into capacity reservations (no reserved capacity type is offered)");
    if ((rc = kobj(c, spec, "placementGroupSelector", "spec.placementGroupSelector", &v)))
        return rc;
    if (v != NULL) {
        const char *id, *name;
        if ((rc = kstr(c, v, "id", "spec.placementGroupSelector.id", &id)) ||
            (rc = kstr(c, v, "name", "spec.placementGroupSelector.name", &name)))
            return rc;
        if ((id == NULL) == (name == NULL))
            return kfail(c, TLR_E_INVAL, "spec.placementGroupSelector", "set exactly one of "
                         "name and id");
        if (id != NULL && !kmatch("^pg-[0-9a-z]+$", id))
            return kfail(c, TLR_E_PARSE, "spec.placementGroupSelector.id", "\"%.40s\" is not "
                         "a placement group id (pg-...)", id);
        if (name != NULL && *name == '\0')
            return kfail(c, TLR_E_INVAL, "spec.placementGroupSelector.name", "may not be empty");
        kwarn(c, "spec.placementGroupSelector", "ignored: tailor does not launch into "
              "placement groups");
    }
    if ((rc = kobj(c, spec, "connectionTracking", "spec.connectionTracking", &v)))
        return rc;
    if (v != NULL) {
        bool a, b, d;
        if ((rc = kint(c, v, "tcpEstablishedTimeout",
                       "spec.connectionTracking.tcpEstablishedTimeout", 60, 432000, &x, &a)) ||
            (rc = kint(c, v, "udpStreamTimeout", "spec.connectionTracking.udpStreamTimeout", 60,
                       180, &x, &b)) ||
            (rc = kint(c, v, "udpTimeout", "spec.connectionTracking.udpTimeout", 30, 60, &x, &d)))
            return rc;
        if (!a && !b && !d)
            return kfail(c, TLR_E_INVAL, "spec.connectionTracking", "at least one of "
                         "tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set");
        kwarn(c, "spec.connectionTracking", "ignored: tailor launches with EC2's default "
              "connection tracking timeouts");
    }
    if ((rc = kobj(c, spec, "cpuOptions", "spec.cpuOptions", &v)))
        return rc;
    if (v != NULL) {
        if ((rc = kpattern(c, v, "nestedVirtualization", "spec.cpuOptions.nestedVirtualization",
                           "^(enabled|disabled)$", "is not enabled or disabled")))
            return rc;
        kwarn(c, "spec.cpuOptions", "ignored: tailor launches with the instance type's default "
              "CPU options");
    }
    if ((rc = kint(c, spec, "ipPrefixCount", "spec.ipPrefixCount", 0, INT32_MAX, &x, &has)))
        return rc;
    if (has)
        kwarn(c, "spec.ipPrefixCount", "ignored: tailor assigns no IPv4 prefixes");
    if ((rc = karr(c, spec, "networkInterfaces", "spec.networkInterfaces", &v)))
        return rc;
    size_t len = v ? json_object_array_length(v) : 0;
    bool primary = false;
    if (len > 150)
        return kfail(c, TLR_E_INVAL, "spec.networkInterfaces", "at most 150");
    for (size_t i = 0; i < len; i++) {
        json_object *ni = json_object_array_get_idx(v, i);
        int64_t dev = 0, card = 0;
        bool hd, hc;
        const char *type;
        kpath(f, "spec.networkInterfaces[%zu]", i);
        if (!json_object_is_type(ni, json_type_object))
            return kfail(c, TLR_E_PARSE, f, "want an object");
        if ((rc = kint(c, ni, "deviceIndex", f, 0, INT32_MAX, &dev, &hd)) ||
            (rc = kint(c, ni, "networkCardIndex", f, 0, INT32_MAX, &card, &hc)) ||
            (rc = kstr(c, ni, "interfaceType", f, &type)))
            return rc;
        if (!hd || !hc || type == NULL)
            return kfail(c, TLR_E_INVAL, f, "deviceIndex, networkCardIndex and interfaceType "
                         "are required");
        if (strcmp(type, "interface") != 0 && strcmp(type, "efa-only") != 0)
            return kfail(c, TLR_E_PARSE, f, "interfaceType \"%.20s\" is not interface or "
                         "efa-only", type);
        primary |= dev == 0 && card == 0 && strcmp(type, "interface") == 0;
        for (size_t j = 0; j < i; j++) {
            json_object *o2 = json_object_array_get_idx(v, j);
            int64_t d2 = 0, c2 = 0;
            const char *t2 = tlr_json_str(o2, "interfaceType");
            (void)tlr_json_int(o2, "deviceIndex", &d2);
            (void)tlr_json_int(o2, "networkCardIndex", &c2);
            if (c2 == card && (d2 == dev || (strcmp(type, "efa-only") == 0 && t2 != NULL &&
                                             strcmp(t2, "efa-only") == 0)))
                return kfail(c, TLR_E_INVAL, "spec.networkInterfaces", "networkInterfaces must "
                             "not have duplicate networkCardIndex and deviceIndex pairs, and can "
                             "have at most one efa device per network card");
        }
    }
    if (len > 0 && !primary)
        return kfail(c, TLR_E_INVAL, "spec.networkInterfaces", "networkInterfaces must include "
                     "a primary interface with interfaceType='interface'");
    if (len > 0)
        kwarn(c, "spec.networkInterfaces", "ignored: tailor launches with one primary network "
              "interface");
    const char *ctx;
    if ((rc = kstr(c, spec, "context", "spec.context", &ctx)))
        return rc;
    if (ctx != NULL)
        kwarn(c, "spec.context", "ignored: tailor passes no launch context to EC2");
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
            if (strcmp(r->key, TLR_LABEL_ARCH) == 0 && r->n_values == 1 &&
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
        (rc = sel_terms(&c, spec, &SUBNETS, &nc->subnet_selector_terms,
                        &nc->n_subnet_selector_terms)) ||
        (rc = sel_terms(&c, spec, &SGS, &nc->security_group_selector_terms,
                        &nc->n_security_group_selector_terms)) ||
        (rc = sel_terms(&c, spec, &CRS, &nc->capacity_reservation_selector_terms,
                        &nc->n_capacity_reservation_selector_terms)))
        goto out;
    if ((rc = kstr(&c, spec, "role", "spec.role", &role)) ||
        (rc = kstr(&c, spec, "instanceProfile", "spec.instanceProfile", &prof)))
        goto out;
    if ((role == NULL) == (prof == NULL)) {
        rc = kfail(&c, TLR_E_INVAL, "spec.role", "exactly one of role and instanceProfile "
                   "must be set");
        goto out;
    }
    if ((role != NULL && *role == '\0') || (prof != NULL && *prof == '\0')) {
        rc = kfail(&c, TLR_E_INVAL, role ? "spec.role" : "spec.instanceProfile",
                   "cannot be empty");
        goto out;
    }
    kset(&nc->role, role);
    kset(&nc->instance_profile, prof);
    if ((rc = kstr(&c, spec, "userData", "spec.userData", &s)))
        goto out;
    kset(&nc->user_data, s);
    if ((rc = spec_tags(&c, tlr_json_get(spec, "tags"))) ||
        (rc = klabels(&c, tlr_json_get(spec, "tags"), "spec.tags", NULL, &nc->tags,
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
        (rc = ami_family(&c, s, nc)) || (rc = unused_fields(&c, spec, nc)))
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
