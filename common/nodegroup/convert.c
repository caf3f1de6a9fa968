/* convert.c - node groups to NodePools and EC2NodeClasses (the plan).
 *
 * Two canonical strings are built per group: the node-class settings
 * (root volume, AMI, subnets, security groups, role or profile, kubelet,
 * tags, monitoring) and the pool settings (zones, GPU, capacity type,
 * labels, taints).  Groups with the same shape (shape.c), pool settings
 * and node-class settings share one NodePool; groups with the same
 * node-class settings share one EC2NodeClass.  Groups are sorted by name
 * first and every list is sorted, so the result does not depend on input
 * order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodegroup_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_labels.h"

typedef struct ng_class {
    char *key, *name;
    const tlr_ng_group *rep;     /* the first group with these settings */
    size_t ngroups;
} ng_class;

typedef struct ng_pool {
    char *key, *base, *name;
    size_t cls;                  /* index into classes */
    const tlr_ng_group **groups;
    size_t ngroups;
    char **families, **sizes, **zones;
    size_t nfamilies, nsizes, nzones;
    long long cpu, mem_mib, gpus, nodes;
    const char *gpu_taint;       /* "nvidia.com/gpu", "amd.com/gpu" or NULL */
} ng_pool;

struct tlr_ng_result {
    tlr_ng_group **groups;       /* borrowed pointers, sorted by name */
    size_t ngroups;
    ng_pool *pools;
    size_t npools;
    ng_class *classes;
    size_t nclasses;
    json_object *objects;        /* owned */
    size_t ndrops;
};

/* ---- canonical settings ---------------------------------------------------- */

static void add_list(tlr_buf *b, const char *tag, char *const *v, size_t n)
{
    tlr_buf_printf(b, "%s[", tag);
    for (size_t i = 0; i < n; i++)
        tlr_buf_printf(b, "%s%s", i ? "," : "", v[i]);
    tlr_buf_adds(b, "]");
}

static char *class_key(const tlr_ng_group *g, const tlr_ng_opts *o)
{
    tlr_buf b;
    tlr_buf_init(&b, 1u << 20);
    if (g->has_volume)
        tlr_buf_printf(&b, "vol[%s,%lld,%lld,%lld,%d,%s,%s]", g->volume_type,
                       (long long)g->volume_gib, (long long)g->iops, (long long)g->throughput,
                       g->encrypted, g->kms_key ? g->kms_key : "",
                       g->device_name ? g->device_name : "");
    tlr_buf_printf(&b, "ami[%s,%s]", g->ami_id ? g->ami_id : "",
                   g->ami_id ? (g->ami_family ? g->ami_family : "") : "");
    add_list(&b, "subnets", g->subnets, g->nsubnets);
    add_list(&b, "sgs", g->security_groups, g->nsecurity_groups);
    tlr_buf_printf(&b, "iam[%s,%s]pods[%lld]mon[%d]tags[", g->instance_profile ? g->instance_profile
                   : "", g->role ? g->role : "", (long long)g->max_pods, g->detailed_monitoring);
    for (size_t i = 0; i < g->ntags; i++)
        tlr_buf_printf(&b, "%s=%s;", g->tags[i].key, g->tags[i].value);
    tlr_buf_adds(&b, "]");
    (void)o;
    return tlr_buf_take(&b);
}

static char *pool_key(const tlr_ng_group *g, const char *shape, const char *ckey)
{
    tlr_buf b;
    tlr_buf_init(&b, 1u << 20);
    tlr_buf_printf(&b, "shape[%s]", shape);
    add_list(&b, "zones", g->zones, g->nzones);
    tlr_buf_printf(&b, "gpu[%d]cap[%s]labels[", g->gpu, g->capacity);
    for (size_t i = 0; i < g->nlabels; i++)
        tlr_buf_printf(&b, "%s=%s;", g->labels[i].key, g->labels[i].value);
    tlr_buf_adds(&b, "]taints[");
    for (size_t i = 0; i < g->ntaints; i++)
        tlr_buf_printf(&b, "%s=%s:%s;", g->taints[i].key, g->taints[i].value,
                       g->taints[i].effect);
    tlr_buf_printf(&b, "]class[%s]", ckey);
    return tlr_buf_take(&b);
}

/* ---- naming ------------------------------------------------------------------ */

static void class_base(const tlr_ng_group *g, char *out, size_t len)
{
    if (g->has_volume)
        snprintf(out, len, "%s-%lldgi", g->volume_type, (long long)g->volume_gib);
    else
        snprintf(out, len, "default");
}

/* Give each item a name: its base when no other item shares the base;
 * else base-<descriptor> when the descriptors (what a person would tell
 * the items apart by: a label value, a zone) tell every item sharing the
 * base apart (one of them may have none and keeps the bare base); else
 * base-<hash of its key>.  Names end up
 * distinct. */
static void assign_names(char **bases, char **descs, char **keys, size_t n, char **names)
{
    for (size_t i = 0; i < n; i++) {
        size_t same = 0, empty = 0;
        bool desc_ok = true;
        for (size_t k = 0; k < n; k++) {
            if (strcmp(bases[i], bases[k]))
                continue;
            same++;
            empty += descs[k][0] == '\0';
            for (size_t j = k + 1; j < n; j++)
                if (!strcmp(bases[k], bases[j]) && !strcmp(descs[k], descs[j]))
                    desc_ok = false;
        }
        char raw[200], hex[9], out[64];
        if (same > 1 && desc_ok && empty <= 1) {
            /* at most one keeps the bare base: the one nothing tells apart */
            snprintf(raw, sizeof(raw), "%.50s%s%s", bases[i], descs[i][0] ? "-" : "", descs[i]);
        } else if (same > 1) {
            ng_hash_hex8(keys[i], hex);
            snprintf(raw, sizeof(raw), "%.50s-%s", bases[i], hex);
        } else {
            snprintf(raw, sizeof(raw), "%s", bases[i]);
        }
        tlr_ng_dns_label(raw, 63, out);
        names[i] = tlr_strdup(out);
    }
    /* Cutting to 63 characters (or a hash collision) could still make two
     * names equal; names must be unique. */
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++)
            if (!strcmp(names[i], names[k])) {
                char out[80], hex[9], fixed[64];
                ng_hash_hex8(keys[k], hex);
                snprintf(out, sizeof(out), "%.50s-%s", names[k], hex);
                free(names[k]);
                tlr_ng_dns_label(out, 63, fixed);
                names[k] = tlr_strdup(fixed);
            }
}

/* What tells a pool apart from others of its shape: its label values and,
 * when it does not use every zone, its zones. */
static char *pool_desc(const tlr_ng_group *g, const tlr_ng_opts *o)
{
    tlr_buf b;
    tlr_buf_init(&b, 4096);
    for (size_t i = 0; i < g->nlabels; i++)
        tlr_buf_printf(&b, "%s%s", b.len ? "-" : "", g->labels[i].value);
    if (g->nzones < o->nzones)
        for (size_t i = 0; i < g->nzones; i++)
            tlr_buf_printf(&b, "%s%s", b.len ? "-" : "", g->zones[i]);
    return b.len ? tlr_buf_take(&b) : (tlr_buf_free(&b), tlr_strdup(""));
}

/* A node class's: its instance profile or role, when it names one. */
static char *class_desc(const tlr_ng_group *g)
{
    return tlr_strdup(g->instance_profile ? g->instance_profile : g->role ? g->role : "");
}

/* ---- objects ------------------------------------------------------------------ */

static json_object *str(const char *s)
{
    return json_object_new_string(s);
}

static json_object *str_array(char *const *v, size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, str(v[i]));
    return a;
}

static json_object *requirement(const char *key, const char *op, json_object *values)
{
    json_object *r = json_object_new_object();
    json_object_object_add(r, "key", str(key));
    json_object_object_add(r, "operator", str(op));
    json_object_object_add(r, "values", values);
    return r;
}

static json_object *selector_terms(char *const *ids, size_t n, const char *cluster)
{
    json_object *a = json_object_new_array();
    if (n == 0) {
        json_object *t = json_object_new_object(), *tags = json_object_new_object();
        json_object_object_add(tags, TLR_TAG_DISCOVERY, str(cluster));
        json_object_object_add(t, "tags", tags);
        json_object_array_add(a, t);
    }
    for (size_t i = 0; i < n; i++) {
        json_object *t = json_object_new_object();
        json_object_object_add(t, "id", str(ids[i]));
        json_object_array_add(a, t);
    }
    return a;
}

static json_object *class_object(const ng_class *c, const tlr_ng_opts *o)
{
    const tlr_ng_group *g = c->rep;
    json_object *obj = json_object_new_object(), *meta = json_object_new_object(),
                *spec = json_object_new_object(), *terms = json_object_new_array(),
                *term = json_object_new_object();
    char role[256];

    json_object_object_add(obj, "apiVersion", str("karpenter.k8s.aws/v1"));
    json_object_object_add(obj, "kind", str("EC2NodeClass"));
    json_object_object_add(meta, "name", str(c->name));
    json_object_object_add(obj, "metadata", meta);
    if (g->ami_id) {
        json_object_object_add(spec, "amiFamily",
                               str(g->ami_family ? g->ami_family
                                   : o->ami_family ? o->ami_family : "AL2023"));
        json_object_object_add(term, "id", str(g->ami_id));
    } else {
        json_object_object_add(term, "alias", str(o->ami_alias ? o->ami_alias : "al2023@latest"));
    }
    json_object_array_add(terms, term);
    json_object_object_add(spec, "amiSelectorTerms", terms);
    if (g->instance_profile) {
        json_object_object_add(spec, "instanceProfile", str(g->instance_profile));
    } else {
        if (g->role)
            snprintf(role, sizeof(role), "%s", g->role);
        else if (o->role)
            snprintf(role, sizeof(role), "%s", o->role);
        else
            snprintf(role, sizeof(role), "KarpenterNodeRole-%s", o->cluster);
        json_object_object_add(spec, "role", str(role));
    }
    json_object_object_add(spec, "subnetSelectorTerms",
                           selector_terms(g->subnets, g->nsubnets, o->cluster));
    json_object_object_add(spec, "securityGroupSelectorTerms",
                           selector_terms(g->security_groups, g->nsecurity_groups, o->cluster));
    if (g->has_volume) {
        json_object *bdms = json_object_new_array(), *bdm = json_object_new_object(),
                    *ebs = json_object_new_object();
        char size[32];
        snprintf(size, sizeof(size), "%lldGi", (long long)g->volume_gib);
        json_object_object_add(bdm, "deviceName",
                               str(g->device_name ? g->device_name : "/dev/xvda"));
        json_object_object_add(bdm, "rootVolume", json_object_new_boolean(1));
        json_object_object_add(ebs, "volumeSize", str(size));
        json_object_object_add(ebs, "volumeType", str(g->volume_type));
        if (g->iops)
            json_object_object_add(ebs, "iops", json_object_new_int64(g->iops));
        if (g->throughput)
            json_object_object_add(ebs, "throughput", json_object_new_int64(g->throughput));
        if (g->encrypted >= 0)
            json_object_object_add(ebs, "encrypted", json_object_new_boolean(g->encrypted));
        if (g->kms_key)
            json_object_object_add(ebs, "kmsKeyID", str(g->kms_key));
        json_object_object_add(ebs, "deleteOnTermination", json_object_new_boolean(1));
        json_object_object_add(bdm, "ebs", ebs);
        json_object_array_add(bdms, bdm);
        json_object_object_add(spec, "blockDeviceMappings", bdms);
    }
    if (g->max_pods) {
        json_object *k = json_object_new_object();
        json_object_object_add(k, "maxPods", json_object_new_int64(g->max_pods));
        json_object_object_add(spec, "kubelet", k);
    }
    if (g->detailed_monitoring >= 0)
        json_object_object_add(spec, "detailedMonitoring",
                               json_object_new_boolean(g->detailed_monitoring));
    if (g->ntags) {
        json_object *t = json_object_new_object();
        for (size_t i = 0; i < g->ntags; i++)
            json_object_object_add(t, g->tags[i].key, str(g->tags[i].value));
        json_object_object_add(spec, "tags", t);
    }
    json_object_object_add(obj, "spec", spec);
    return obj;
}

static void memory_text(long long mib, char *buf, size_t len)
{
    if (mib % 1024 == 0)
        snprintf(buf, len, "%lldGi", mib / 1024);
    else
        snprintf(buf, len, "%lldMi", mib);
}

static json_object *pool_object(const ng_pool *p, const ng_class *c)
{
    const tlr_ng_group *g = p->groups[0];
    json_object *obj = json_object_new_object(), *meta = json_object_new_object(),
                *ann = json_object_new_object(), *spec = json_object_new_object(),
                *tmpl = json_object_new_object(), *ts = json_object_new_object(),
                *ref = json_object_new_object(), *reqs = json_object_new_array(),
                *limits = json_object_new_object();
    tlr_buf src;
    char num[64];

    json_object_object_add(obj, "apiVersion", str("karpenter.sh/v1"));
    json_object_object_add(obj, "kind", str("NodePool"));
    json_object_object_add(meta, "name", str(p->name));
    tlr_buf_init(&src, 64u << 20);
    for (size_t i = 0; i < p->ngroups; i++)
        tlr_buf_printf(&src, "%s%s", i ? "," : "", p->groups[i]->name);
    json_object_object_add(ann, "tailor.dev/converted-from", str(tlr_buf_str(&src)));
    tlr_buf_free(&src);
    json_object_object_add(meta, "annotations", ann);
    json_object_object_add(obj, "metadata", meta);

    if (g->nlabels) {
        json_object *tm = json_object_new_object(), *labels = json_object_new_object();
        for (size_t i = 0; i < g->nlabels; i++)
            json_object_object_add(labels, g->labels[i].key, str(g->labels[i].value));
        json_object_object_add(tm, "labels", labels);
        json_object_object_add(tmpl, "metadata", tm);
    }
    json_object_object_add(ref, "group", str("karpenter.k8s.aws"));
    json_object_object_add(ref, "kind", str("EC2NodeClass"));
    json_object_object_add(ref, "name", str(c->name));
    json_object_object_add(ts, "nodeClassRef", ref);

    json_object_array_add(reqs, requirement(TLR_LABEL_INSTANCE_FAMILY, "In",
                                            str_array(p->families, p->nfamilies)));
    json_object_array_add(reqs, requirement(TLR_LABEL_INSTANCE_SIZE, "In",
                                            str_array(p->sizes, p->nsizes)));
    json_object *arch = json_object_new_array(), *os = json_object_new_array(),
                *ct = json_object_new_array();
    json_object_array_add(arch, str(g->type->arch));
    json_object_array_add(reqs, requirement(TLR_LABEL_ARCH, "In", arch));
    json_object_array_add(os, str("linux"));
    json_object_array_add(reqs, requirement(TLR_LABEL_OS, "In", os));
    if (!strcmp(g->capacity, "mixed")) {
        json_object_array_add(ct, str("on-demand"));
        json_object_array_add(ct, str("spot"));
    } else {
        json_object_array_add(ct, str(g->capacity));
    }
    json_object_array_add(reqs, requirement(TLR_LABEL_CAPACITY_TYPE, "In", ct));
    json_object_array_add(reqs, requirement(TLR_LABEL_ZONE, "In",
                                            str_array(p->zones, p->nzones)));
    if (g->type->gpu_count > 0) {
        json_object *zero = json_object_new_array();
        json_object_array_add(zero, str("0"));
        json_object_array_add(reqs, requirement(TLR_LABEL_INSTANCE_GPU_COUNT, "Gt",
                                                zero));
    }
    json_object_object_add(ts, "requirements", reqs);

    /* Taints: the group's, plus the device plugin's for GPU groups. */
    size_t nt = g->ntaints;
    bool have_gpu_taint = false;
    for (size_t i = 0; i < nt; i++)
        have_gpu_taint |= p->gpu_taint && !strcmp(g->taints[i].key, p->gpu_taint) &&
                          !strcmp(g->taints[i].effect, "NoSchedule");
    if (nt || (p->gpu_taint && !have_gpu_taint)) {
        json_object *taints = json_object_new_array();
        bool placed = have_gpu_taint || !p->gpu_taint;
        for (size_t i = 0; i <= nt; i++) {
            if (!placed && (i == nt || strcmp(p->gpu_taint, g->taints[i].key) < 0)) {
                json_object *t = json_object_new_object();
                json_object_object_add(t, "key", str(p->gpu_taint));
                json_object_object_add(t, "effect", str("NoSchedule"));
                json_object_array_add(taints, t);
                placed = true;
            }
            if (i == nt)
                break;
            json_object *t = json_object_new_object();
            json_object_object_add(t, "key", str(g->taints[i].key));
            if (g->taints[i].value[0])
                json_object_object_add(t, "value", str(g->taints[i].value));
            json_object_object_add(t, "effect", str(g->taints[i].effect));
            json_object_array_add(taints, t);
        }
        json_object_object_add(ts, "taints", taints);
    }
    json_object_object_add(tmpl, "spec", ts);
    json_object_object_add(spec, "template", tmpl);

    snprintf(num, sizeof(num), "%lld", p->cpu);
    json_object_object_add(limits, "cpu", str(num));
    memory_text(p->mem_mib, num, sizeof(num));
    json_object_object_add(limits, "memory", str(num));
    if (p->gpu_taint) {
        snprintf(num, sizeof(num), "%lld", p->gpus);
        json_object_object_add(limits, p->gpu_taint, str(num));
    }
    snprintf(num, sizeof(num), "%lld", p->nodes);
    json_object_object_add(limits, "nodes", str(num));
    json_object_object_add(spec, "limits", limits);
    json_object_object_add(obj, "spec", spec);
    return obj;
}

/* ---- the plan ------------------------------------------------------------------ */

static int cmp_group(const void *a, const void *b)
{
    const tlr_ng_group *x = *(tlr_ng_group *const *)a, *y = *(tlr_ng_group *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->file, y->file);
}

static int cmp_pool(const void *a, const void *b)
{
    return strcmp(((const ng_pool *)a)->name, ((const ng_pool *)b)->name);
}

static int cmp_class(const void *a, const void *b)
{
    return strcmp(((const ng_class *)a)->name, ((const ng_class *)b)->name);
}

int tlr_ng_convert(tlr_ng_group *const *groups, size_t n, const tlr_ng_opts *o,
                   tlr_ng_result **out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (n == 0 || o == NULL || o->cluster == NULL) {
        if (err && errlen)
            snprintf(err, errlen, "no node groups to convert");
        return TLR_E_INVAL;
    }
    tlr_ng_result *r = tlr_calloc(1, sizeof(*r));
    r->groups = tlr_calloc(n, sizeof(*r->groups));
    memcpy(r->groups, groups, n * sizeof(*groups));
    r->ngroups = n;
    qsort(r->groups, n, sizeof(*r->groups), cmp_group);
    for (size_t i = 0; i + 1 < n; i++)
        if (!strcmp(r->groups[i]->name, r->groups[i + 1]->name)) {
            if (err && errlen)
                snprintf(err, errlen, "node group %s is defined twice: in %s and in %s",
                         r->groups[i]->name, r->groups[i]->file, r->groups[i + 1]->file);
            tlr_ng_result_free(r);
            return TLR_E_INVAL;
        }

    r->classes = tlr_calloc(n, sizeof(*r->classes));
    r->pools = tlr_calloc(n, sizeof(*r->pools));
    for (size_t i = 0; i < n; i++) {
        const tlr_ng_group *g = r->groups[i];
        r->ndrops += g->ndrops;
        char *ck = class_key(g, o);
        size_t c;
        for (c = 0; c < r->nclasses; c++)
            if (!strcmp(r->classes[c].key, ck))
                break;
        if (c == r->nclasses) {
            r->classes[c].key = ck;
            r->classes[c].rep = g;
            r->nclasses++;
        } else {
            free(ck);
        }
        r->classes[c].ngroups++;

        char shape[128], sname[64];
        tlr_ng_shape(g->type, shape, sizeof(shape), sname, sizeof(sname));
        char *pk = pool_key(g, shape, r->classes[c].key);
        size_t p;
        for (p = 0; p < r->npools; p++)
            if (!strcmp(r->pools[p].key, pk))
                break;
        ng_pool *pl = &r->pools[p];
        if (p == r->npools) {
            pl->key = pk;
            pl->cls = c;
            char base[96];
            snprintf(base, sizeof(base), "%s%s", sname,
                     !strcmp(g->capacity, "spot") ? "-spot"
                     : !strcmp(g->capacity, "mixed") ? "-mixed" : "");
            pl->base = tlr_strdup(base);
            if (g->gpu)
                pl->gpu_taint = !strcmp(g->type->gpu_manufacturer, "amd") ? "amd.com/gpu"
                                                                          : "nvidia.com/gpu";
            r->npools++;
        } else {
            free(pk);
        }
        pl->groups = tlr_realloc(pl->groups, (pl->ngroups + 1) * sizeof(*pl->groups));
        pl->groups[pl->ngroups++] = g;
        ng_strset_add(&pl->families, &pl->nfamilies, g->type->family);
        ng_strset_add(&pl->sizes, &pl->nsizes, g->type->size);
        for (size_t z = 0; z < g->nzones; z++)
            ng_strset_add(&pl->zones, &pl->nzones, g->zones[z]);
        pl->cpu += (long long)g->max_nodes * g->type->vcpu;
        pl->mem_mib += (long long)g->max_nodes * g->type->memory_mib;
        pl->gpus += (long long)g->max_nodes * g->type->gpu_count;
        pl->nodes += g->max_nodes;
    }

    /* Names. */
    char **bases = tlr_calloc(n + 1, sizeof(char *)), **keys = tlr_calloc(n + 1, sizeof(char *)),
         **descs = tlr_calloc(n + 1, sizeof(char *)), **names = tlr_calloc(n + 1, sizeof(char *));
    for (size_t c = 0; c < r->nclasses; c++) {
        char b[96];
        class_base(r->classes[c].rep, b, sizeof(b));
        bases[c] = tlr_strdup(b);
        keys[c] = r->classes[c].key;
        descs[c] = class_desc(r->classes[c].rep);
    }
    assign_names(bases, descs, keys, r->nclasses, names);
    for (size_t c = 0; c < r->nclasses; c++) {
        r->classes[c].name = names[c];
        free(bases[c]);
        free(descs[c]);
    }
    for (size_t p = 0; p < r->npools; p++) {
        bases[p] = r->pools[p].base;
        keys[p] = r->pools[p].key;
        descs[p] = pool_desc(r->pools[p].groups[0], o);
    }
    assign_names(bases, descs, keys, r->npools, names);
    for (size_t p = 0; p < r->npools; p++) {
        r->pools[p].name = names[p];
        free(descs[p]);
    }
    free(bases);
    free(keys);
    free(descs);
    free(names);

    /* Sort classes by name and renumber the pools' references; then pools
     * by name; then build the objects in that order. */
    size_t *newidx = tlr_calloc(r->nclasses, sizeof(*newidx));
    for (size_t c = 0; c < r->nclasses; c++)
        for (size_t k = 0; k < r->nclasses; k++)
            newidx[c] += strcmp(r->classes[k].name, r->classes[c].name) < 0;
    for (size_t p = 0; p < r->npools; p++)
        r->pools[p].cls = newidx[r->pools[p].cls];
    free(newidx);
    qsort(r->classes, r->nclasses, sizeof(*r->classes), cmp_class);
    qsort(r->pools, r->npools, sizeof(*r->pools), cmp_pool);
    r->objects = json_object_new_array();
    for (size_t p = 0; p < r->npools; p++)
        json_object_array_add(r->objects, pool_object(&r->pools[p],
                                                      &r->classes[r->pools[p].cls]));
    for (size_t c = 0; c < r->nclasses; c++)
        json_object_array_add(r->objects, class_object(&r->classes[c], o));
    *out = r;
    return TLR_OK;
}

void tlr_ng_result_free(tlr_ng_result *r)
{
    if (!r)
        return;
    for (size_t p = 0; p < r->npools; p++) {
        ng_pool *pl = &r->pools[p];
        free(pl->key);
        free(pl->base);
        free(pl->name);
        free(pl->groups);
        ng_strv_free(pl->families, pl->nfamilies);
        ng_strv_free(pl->sizes, pl->nsizes);
        ng_strv_free(pl->zones, pl->nzones);
    }
    for (size_t c = 0; c < r->nclasses; c++) {
        free(r->classes[c].key);
        free(r->classes[c].name);
    }
    free(r->pools);
    free(r->classes);
    free(r->groups);
    json_object_put(r->objects);
    free(r);
}

size_t tlr_ng_result_groups(const tlr_ng_result *r) { return r->ngroups; }
size_t tlr_ng_result_nodepools(const tlr_ng_result *r) { return r->npools; }
size_t tlr_ng_result_nodeclasses(const tlr_ng_result *r) { return r->nclasses; }
size_t tlr_ng_result_drops(const tlr_ng_result *r) { return r->ndrops; }
json_object *tlr_ng_result_objects(const tlr_ng_result *r) { return r->objects; }

const char *tlr_ng_result_pool_of(const tlr_ng_result *r, const char *group_name)
{
    for (size_t p = 0; p < r->npools; p++)
        for (size_t i = 0; i < r->pools[p].ngroups; i++)
            if (!strcmp(r->pools[p].groups[i]->name, group_name))
                return r->pools[p].name;
    return NULL;
}

int tlr_ng_result_yaml(const tlr_ng_result *r, tlr_buf *out)
{
    return tlr_ng_yaml_write(r->objects, out);
}

int tlr_ng_result_json(const tlr_ng_result *r, tlr_buf *out)
{
    json_object *list = json_object_new_object();
    json_object_object_add(list, "apiVersion", str("v1"));
    json_object_object_add(list, "kind", str("List"));
    json_object_object_add(list, "items", json_object_get(r->objects));
    int rc = tlr_buf_adds(out, json_object_to_json_string_ext(
                                   list, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                             JSON_C_TO_STRING_NOSLASHESCAPE));
    if (rc == TLR_OK)
        rc = tlr_buf_addc(out, '\n');
    json_object_put(list);
    return rc;
}

/* ---- the report ------------------------------------------------------------- */

int tlr_ng_result_report_json(const tlr_ng_result *r, char *const *not_sized, size_t n,
                              tlr_buf *out)
{
    json_object *rep = json_object_new_object(), *pools = json_object_new_array(),
                *classes = json_object_new_array(), *drops = json_object_new_array(),
                *notes = json_object_new_array();
    json_object_object_add(rep, "node_groups", json_object_new_int64((int64_t)r->ngroups));
    json_object_object_add(rep, "nodepools", json_object_new_int64((int64_t)r->npools));
    json_object_object_add(rep, "ec2nodeclasses", json_object_new_int64((int64_t)r->nclasses));
    json_object_object_add(rep, "merged", json_object_new_int64((int64_t)(r->ngroups - r->npools)));
    for (size_t p = 0; p < r->npools; p++) {
        const ng_pool *pl = &r->pools[p];
        json_object *o = json_object_new_object(), *gs = json_object_new_array(),
                    *lim = json_object_new_object();
        json_object_object_add(o, "name", str(pl->name));
        json_object_object_add(o, "ec2nodeclass", str(r->classes[pl->cls].name));
        for (size_t i = 0; i < pl->ngroups; i++)
            json_object_array_add(gs, str(pl->groups[i]->name));
        json_object_object_add(o, "node_groups", gs);
        json_object_object_add(o, "families", str_array(pl->families, pl->nfamilies));
        json_object_object_add(o, "sizes", str_array(pl->sizes, pl->nsizes));
        json_object_object_add(o, "zones", str_array(pl->zones, pl->nzones));
        json_object_object_add(lim, "cpu", json_object_new_int64(pl->cpu));
        json_object_object_add(lim, "memory_mib", json_object_new_int64(pl->mem_mib));
        json_object_object_add(lim, "gpus", json_object_new_int64(pl->gpus));
        json_object_object_add(lim, "nodes", json_object_new_int64(pl->nodes));
        json_object_object_add(o, "limits", lim);
        json_object_array_add(pools, o);
    }
    for (size_t c = 0; c < r->nclasses; c++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", str(r->classes[c].name));
        json_object_object_add(o, "node_groups",
                               json_object_new_int64((int64_t)r->classes[c].ngroups));
        json_object_array_add(classes, o);
    }
    for (size_t i = 0; i < r->ngroups; i++) {
        const tlr_ng_group *g = r->groups[i];
        for (size_t k = 0; k < g->ndrops; k++) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "node_group", str(g->name));
            json_object_object_add(o, "file", str(g->file));
            json_object_object_add(o, "key", str(g->drops[k].key));
            json_object_object_add(o, "value", str(g->drops[k].value));
            json_object_object_add(o, "reason", str(g->drops[k].reason));
            json_object_array_add(drops, o);
        }
        for (size_t k = 0; k < g->nnotes; k++) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "node_group", str(g->name));
            json_object_object_add(o, "file", str(g->file));
            json_object_object_add(o, "note", str(g->notes[k]));
            json_object_array_add(notes, o);
        }
    }
    json_object_object_add(rep, "pools", pools);
    json_object_object_add(rep, "classes", classes);
    json_object_object_add(rep, "not_carried", drops);
    json_object_object_add(rep, "notes", notes);
    if (n > 0)
        json_object_object_add(rep, "not_sized", str_array(not_sized, n));
    int rc = tlr_buf_adds(out, json_object_to_json_string_ext(
                                   rep, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                            JSON_C_TO_STRING_NOSLASHESCAPE));
    if (rc == TLR_OK)
        rc = tlr_buf_addc(out, '\n');
    json_object_put(rep);
    return rc;
}

int tlr_ng_result_report_text(const tlr_ng_result *r, tlr_buf *out)
{
    size_t nnotes = 0;
    tlr_buf_printf(out, "%zu node groups -> %zu NodePools, %zu EC2NodeClasses (%zu node groups "
                   "merged away)\n", r->ngroups, r->npools, r->nclasses, r->ngroups - r->npools);
    for (size_t p = 0; p < r->npools; p++) {
        const ng_pool *pl = &r->pools[p];
        tlr_buf_printf(out, "  nodepool %s (ec2nodeclass %s): %zu node group%s; families ",
                       pl->name, r->classes[pl->cls].name, pl->ngroups,
                       pl->ngroups == 1 ? "" : "s");
        for (size_t i = 0; i < pl->nfamilies; i++)
            tlr_buf_printf(out, "%s%s", i ? "," : "", pl->families[i]);
        tlr_buf_adds(out, "; sizes ");
        for (size_t i = 0; i < pl->nsizes; i++)
            tlr_buf_printf(out, "%s%s", i ? "," : "", pl->sizes[i]);
        tlr_buf_printf(out, "; limit %lld nodes, %lld vCPU\n", pl->nodes, pl->cpu);
        for (size_t i = 0; i < pl->ngroups; i++)
            tlr_buf_printf(out, "    %s (%s)\n", pl->groups[i]->name, pl->groups[i]->file);
    }
    /* Fields not carried over, one entry per (key, reason), with the node
     * groups and values it covers; the JSON report has one entry each. */
    tlr_buf_printf(out, "Not carried over (%zu fields):\n", r->ndrops);
    size_t total = r->ndrops, done = 0;
    bool *seen = tlr_calloc(total + 1, sizeof(bool));
    size_t idx = 0;
    for (size_t i = 0; i < r->ngroups; i++) {
        const tlr_ng_group *g = r->groups[i];
        nnotes += g->nnotes;
        for (size_t k = 0; k < g->ndrops; k++, idx++) {
            if (seen[idx])
                continue;
            const tlr_ng_drop *d = &g->drops[k];
            size_t count = 0, jdx = idx;
            tlr_buf who;
            tlr_buf_init(&who, 1u << 20);
            for (size_t i2 = i; i2 < r->ngroups; i2++) {
                const tlr_ng_group *g2 = r->groups[i2];
                for (size_t k2 = i2 == i ? k : 0; k2 < g2->ndrops; k2++, jdx++) {
                    const tlr_ng_drop *d2 = &g2->drops[k2];
                    if (seen[jdx] || strcmp(d2->key, d->key) || strcmp(d2->reason, d->reason))
                        continue;
                    seen[jdx] = true;
                    if (count++ < 8)
                        tlr_buf_printf(&who, "%s%s=%s", count > 1 ? ", " : "", g2->name,
                                       d2->value);
                }
            }
            if (count > 8)
                tlr_buf_printf(&who, " and %zu more", count - 8);
            tlr_buf_printf(out, "  %s (%zu node group%s): %s\n      %s\n", d->key, count,
                           count == 1 ? "" : "s", d->reason, tlr_buf_str(&who));
            tlr_buf_free(&who);
            done += count;
        }
    }
    free(seen);
    (void)done;
    tlr_buf_printf(out, "Notes (%zu):\n", nnotes);
    for (size_t i = 0; i < r->ngroups; i++) {
        const tlr_ng_group *g = r->groups[i];
        for (size_t k = 0; k < g->nnotes; k++)
            tlr_buf_printf(out, "  %s (%s): %s\n", g->name, g->file, g->notes[k]);
    }
    return tlr_buf_adds(out, "Karpenter replaces nodes older than expireAfter (720h unless "
                        "set) and consolidates under-used ones; ASG nodes did neither. Review "
                        "spec.disruption and expireAfter before applying.\n");
}
