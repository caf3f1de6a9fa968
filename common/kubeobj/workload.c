/* workload.c - manifests as a dry run sees them: decoding files into
 * objects, and expanding workloads into the pending pods they would make.
 *
 * Names and uids of generated pods are derived from a hash of the
 * workload's namespace, name and the pod's index (FNV-1a), so the same
 * input always gives the same pods and so the same plan.  The template is
 * converted once and copied per replica.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeobj_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_json.h"
#include "tlr_yaml.h"

static uint64_t fnv_idx(const char *ns, const char *name, size_t i, const char *salt)
{
    char num[32];
    uint64_t h = TLR_FNV64_BASIS;

    snprintf(num, sizeof(num), "/%zu/", i);
    h = tlr_fnv1a64_str(h, ns);
    h = tlr_fnv1a64_str(h, "/");
    h = tlr_fnv1a64_str(h, name);
    h = tlr_fnv1a64_str(h, num);
    return tlr_fnv1a64_str(h, salt);
}

/* Kubernetes' rand.String alphabet (no vowels, no confusable digits). */
static void suffix(uint64_t h, char *out, size_t n)
{
    static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
    for (size_t i = 0; i < n; i++) {
        out[i] = alpha[h % (sizeof(alpha) - 1)];
        h /= sizeof(alpha) - 1;
    }
    out[n] = '\0';
}

static char *make_uid(const char *ns, const char *name, size_t i)
{
    uint64_t a = fnv_idx(ns, name, i, "uid-a"), b = fnv_idx(ns, name, i, "uid-b");
    char buf[40];

    snprintf(buf, sizeof(buf), "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff, (unsigned)(b >> 48) & 0xfff,
             (unsigned long long)(b & 0xffffffffffffULL));
    return tlr_strdup(buf);
}

static void set_owner(Tailor__V1__Pod *p, const char *api, const char *kind, const char *name,
                      char *uid)
{
    for (size_t i = 0; i < p->n_owners; i++)
        tlr_kubeobj_free(p->owners[i]);
    free(p->owners);
    p->owners = tlr_calloc(1, sizeof(*p->owners));
    Tailor__V1__OwnerReference *o = tlr_malloc(sizeof(*o));
    tailor__v1__owner_reference__init(o);
    o->api_version = tlr_strdup(api);
    o->kind = tlr_strdup(kind);
    o->name = tlr_strdup(name);
    o->uid = uid;   /* handed over */
    o->controller = true;
    p->owners[0] = o;
    p->n_owners = 1;
}

static void replace_str(char **field, char *s)
{
    if (*field != NULL && *field != (const char *)protobuf_c_empty_string)
        free(*field);
    *field = s;
}

int tlr_kubeobj_expand(json_object *o, const tlr_kubeobj_opts *opts, size_t max_pods,
                       Tailor__V1__Pod ***pods, size_t *npods, char *err, size_t errlen)
{
    static const struct { const char *kind, *api; } kinds[] = {
        { "Deployment", "apps/v1" }, { "ReplicaSet", "apps/v1" },
        { "StatefulSet", "apps/v1" }, { "ReplicationController", "v1" },
        { "Job", "batch/v1" },
    };
    const char *kind = tlr_json_str(o, "kind"), *name, *ns;
    Tailor__V1__Pod *tmpl = NULL, **out = NULL;
    json_object *t;
    int64_t n = 1, comp = 0;
    bool has_comp = false;
    size_t k;
    kctx c;
    int rc;

    kctx_init(&c, o, "object", opts, err, errlen);
    if (pods == NULL || npods == NULL || !json_object_is_type(o, json_type_object))
        return kfail(&c, TLR_E_INVAL, NULL, "not an object");
    if (kind != NULL && strcmp(kind, "Pod") == 0) {
        rc = tlr_kubeobj_pod(o, opts, &tmpl, err, errlen);
        if (rc != TLR_OK)
            return rc;
        /* A bare Pod is one pod: it never exceeds a non-zero max_pods. */
        if (tmpl->name[0] == '\0') {   /* generateName only */
            char sfx[6], *nm;
            const char *gn = tlr_json_str(o, "metadata.generateName");
            suffix(fnv_idx(tmpl->namespace_, gn, 0, "name"), sfx, 5);
            nm = tlr_malloc(strlen(gn) + 6);
            sprintf(nm, "%s%s", gn, sfx);
            replace_str(&tmpl->name, nm);
        }
        if (tmpl->uid[0] == '\0')
            replace_str(&tmpl->uid, make_uid(tmpl->namespace_, tmpl->name, 0));
        if (tlr_json_get(o, "status") == NULL) {   /* a manifest: not created yet */
            tmpl->phase = TAILOR__V1__POD_PHASE__POD_PHASE_PENDING;
            tmpl->unschedulable = tmpl->node_name[0] == '\0';
        }
        *pods = tlr_calloc(1, sizeof(**pods));
        (*pods)[0] = tmpl;
        *npods = 1;
        return TLR_OK;
    }
    for (k = 0; kind != NULL && k < sizeof(kinds) / sizeof(kinds[0]); k++)
        if (strcmp(kind, kinds[k].kind) == 0)
            break;
    if (kind == NULL || k == sizeof(kinds) / sizeof(kinds[0]))
        return TLR_E_NOTFOUND;
    name = tlr_json_str(o, "metadata.name");
    if (name == NULL || *name == '\0')
        return kfail(&c, TLR_E_INVAL, "metadata.name", "is required");
    ns = tlr_json_str(o, "metadata.namespace");
    if (ns == NULL || *ns == '\0')
        ns = c.opts->default_namespace ? c.opts->default_namespace : "default";
    bool job = strcmp(kind, "Job") == 0;
    if ((rc = kint(&c, o, job ? "spec.parallelism" : "spec.replicas",
                   job ? "spec.parallelism" : "spec.replicas", 0, INT32_MAX, &n, NULL)))
        return rc;
    if (job) {
        if ((rc = kint(&c, o, "spec.completions", "spec.completions", 0, INT32_MAX, &comp,
                       &has_comp)))
            return rc;
        if (has_comp && comp < n)
            n = comp;
    }
    if ((rc = kobj(&c, o, "spec.template", "spec.template", &t)))
        return rc;
    if (t == NULL)
        return kfail(&c, TLR_E_INVAL, "spec.template", "is required");
    if (max_pods != 0 && (uint64_t)n > max_pods)
        goto toobig;

    json_object *meta = json_object_new_object();
    json_object *tm = tlr_json_obj(t, "metadata");
    if (tm != NULL) {
        json_object_object_foreach(tm, mk, mv)
            json_object_object_add(meta, mk, json_object_get(mv));
    }
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_del(meta, "name");
    json_object_object_del(meta, "uid");
    rc = kpod_convert(&c, meta, tlr_json_obj(t, "spec"), NULL, "spec.template.", &tmpl);
    json_object_put(meta);
    if (rc != TLR_OK)
        return rc;
    tmpl->phase = TAILOR__V1__POD_PHASE__POD_PHASE_PENDING;
    tmpl->unschedulable = true;

    /* The controller the pods belong to: a Deployment's ReplicaSet. */
    char owner_name[300], sfx[11];
    const char *owner_kind = kind, *owner_api = kinds[k].api;
    if (strcmp(kind, "Deployment") == 0) {
        suffix(fnv_idx(ns, name, 0, tlr_json_to_string(t, JSON_C_TO_STRING_PLAIN)), sfx, 10);
        snprintf(owner_name, sizeof(owner_name), "%s-%s", name, sfx);
        owner_kind = "ReplicaSet";
    } else {
        snprintf(owner_name, sizeof(owner_name), "%s", name);
    }
    const char *ouid = tlr_json_str(o, "metadata.uid");
    set_owner(tmpl, owner_api, owner_kind, owner_name,
              ouid && strcmp(kind, "Deployment") != 0 ? tlr_strdup(ouid)
                                                       : make_uid(ns, owner_name, SIZE_MAX));
    if (n > 0)
        out = tlr_calloc((size_t)n, sizeof(*out));
    for (size_t i = 0; i < (size_t)n; i++) {
        Tailor__V1__Pod *p = kcopy(tmpl);
        char pname[340];
        if (strcmp(kind, "StatefulSet") == 0) {
            snprintf(pname, sizeof(pname), "%s-%zu", name, i);
        } else {
            suffix(fnv_idx(ns, owner_name, i, "pod"), sfx, 5);
            snprintf(pname, sizeof(pname), "%s-%s", owner_name, sfx);
        }
        replace_str(&p->name, tlr_strdup(pname));
        replace_str(&p->uid, make_uid(ns, pname, i));
        out[i] = p;
    }
    tlr_kubeobj_free(tmpl);
    *pods = out;
    *npods = (size_t)n;
    return TLR_OK;
toobig:
    tlr_kubeobj_free(tmpl);
    return kfail(&c, TLR_E_TOOBIG, "spec.replicas", "%lld pods are more than the limit of %zu",
                 (long long)n, max_pods);
}

/* Add doc (borrowed) to objs, flattening lists. */
static int add_doc(json_object *objs, json_object *doc, size_t idx, char *err, size_t errlen)
{
    if (json_object_is_type(doc, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(doc); i++) {
            int rc = add_doc(objs, json_object_array_get_idx(doc, i), idx, err, errlen);
            if (rc != TLR_OK)
                return rc;
        }
        return TLR_OK;
    }
    if (!json_object_is_type(doc, json_type_object)) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "document %zu is not an object (it is %s)", idx + 1,
                     doc == NULL ? "null" : json_type_to_name(json_object_get_type(doc)));
        return TLR_E_PARSE;
    }
    const char *kind = tlr_json_str(doc, "kind");
    json_object *items = tlr_json_get(doc, "items");
    size_t kl = kind ? strlen(kind) : 0;
    if (kl >= 4 && strcmp(kind + kl - 4, "List") == 0 && items != NULL) {
        if (!json_object_is_type(items, json_type_array)) {
            if (err != NULL && errlen > 0)
                snprintf(err, errlen, "document %zu: %s items is not a list", idx + 1, kind);
            return TLR_E_PARSE;
        }
        return add_doc(objs, items, idx, err, errlen);
    }
    json_object_array_add(objs, json_object_get(doc));
    return TLR_OK;
}

int tlr_kubeobj_decode(const char *buf, size_t len, size_t max, json_object **objs,
                       char *err, size_t errlen)
{
    json_object *docs = NULL, *res = NULL;
    size_t i = 0;
    int rc;

    if (buf == NULL || objs == NULL)
        return TLR_E_INVAL;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
        i++;
    if (i < len && (buf[i] == '{' || buf[i] == '[')) {
        json_object *one = NULL;
        rc = tlr_json_parse(buf, len, max, &one, err, errlen);
        if (rc != TLR_OK)
            return rc;
        docs = json_object_new_array();
        json_object_array_add(docs, one);
    } else {
        tlr_yaml_limits lim = { .max_bytes = max };
        rc = tlr_yaml_parse(buf, len, &lim, &docs, err, errlen);
        if (rc != TLR_OK)
            return rc;
    }
    res = json_object_new_array();
    for (size_t d = 0; d < json_object_array_length(docs); d++) {
        rc = add_doc(res, json_object_array_get_idx(docs, d), d, err, errlen);
        if (rc != TLR_OK)
            break;
    }
    json_object_put(docs);
    if (rc != TLR_OK) {
        json_object_put(res);
        return rc;
    }
    *objs = res;
    return TLR_OK;
}
