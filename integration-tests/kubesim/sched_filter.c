/* sched_filter.c - resource arithmetic and node-only filters of the
 * scheduler (see sched_filter.h for what each follows in kube-scheduler).
 */
#include "sched_filter.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define TAINT_NOT_READY     "node.kubernetes.io/not-ready"
#define TAINT_UNSCHEDULABLE "node.kubernetes.io/unschedulable"

/* ------------------------------------------------------------------ */
/* Resource names                                                      */
/* ------------------------------------------------------------------ */

struct ks_resnames {
    char  *names[KS_RESNAMES_MAX];
    size_t n;
};

void ks_resnames_create(ks_resnames **out)
{
    *out = tlr_calloc(1, sizeof(ks_resnames));
}

void ks_resnames_free(ks_resnames *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t);
}

const char *ks_resnames_name(const ks_resnames *t, int id)
{
    if (!t || id < 0 || (size_t)id >= t->n)
        return NULL;
    return t->names[id];
}

/* The id of name, interned if new; -1 when the table is full. */
static int resnames_intern(ks_resnames *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->names[i], name) == 0)
            return (int)i;
    if (t->n == KS_RESNAMES_MAX)
        return -1;
    t->names[t->n] = tlr_strdup(name);
    return (int)t->n++;
}

/* ------------------------------------------------------------------ */
/* Resource vectors                                                    */
/* ------------------------------------------------------------------ */

enum { RES_CPU, RES_MEM, RES_EPH, RES_PODS, RES_SCALAR, RES_IGNORED };

/* Which of the fields above a resource name feeds.  Scalar resources are
 * what kube-scheduler tracks as ScalarResources: extended resources
 * (domain-qualified, outside kubernetes.io/), hugepages and attachable
 * volumes; other names are not checked by NodeResourcesFit. */
static int res_class(const char *name)
{
    if (strcmp(name, "cpu") == 0)
        return RES_CPU;
    if (strcmp(name, "memory") == 0)
        return RES_MEM;
    if (strcmp(name, "ephemeral-storage") == 0)
        return RES_EPH;
    if (strcmp(name, "pods") == 0)
        return RES_PODS;
    if (strncmp(name, "hugepages-", 10) == 0 || strncmp(name, "attachable-volumes-", 19) == 0)
        return RES_SCALAR;
    if (strchr(name, '/') && strncmp(name, "kubernetes.io/", 14) != 0 &&
        strncmp(name, "requests.", 9) != 0)
        return RES_SCALAR;
    return RES_IGNORED;
}

int64_t ks_res_ext(const ks_res *r, int id)
{
    for (int i = 0; i < r->n; i++)
        if (r->ext_id[i] == id)
            return r->ext_v[i];
    return 0;
}

/* The slot of scalar id in r, added (zero) if absent; -1 when full. */
static int res_slot(ks_res *r, int id)
{
    for (int i = 0; i < r->n; i++)
        if (r->ext_id[i] == id)
            return i;
    if (r->n == KS_RES_EXT_MAX)
        return -1;
    r->ext_id[r->n] = (uint16_t)id;
    r->ext_v[r->n] = 0;
    return r->n++;
}

/* Saturating add: nothing a user writes makes these wrap. */
static int64_t add_sat(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    return a + b;
}

/* Add (add=true) or raise to (add=false) value v of resource name. */
static int res_apply(ks_res *r, ks_resnames *names, const char *name, int64_t v,
                     bool add, char *err, size_t errlen)
{
    int64_t *slot = NULL;
    switch (res_class(name)) {
    case RES_CPU:  slot = &r->cpu_m; break;
    case RES_MEM:  slot = &r->mem;   break;
    case RES_EPH:  slot = &r->eph;   break;
    case RES_PODS: slot = &r->pods;  break;
    case RES_IGNORED: return TLR_OK;
    default: {
        int id = resnames_intern(names, name);
        int i = id < 0 ? -1 : res_slot(r, id);
        if (i < 0) {
            snprintf(err, errlen, "resource %s: too many distinct resources", name);
            return TLR_E_RANGE;
        }
        slot = &r->ext_v[i];
    }
    }
    *slot = add ? add_sat(*slot, v) : (v > *slot ? v : *slot);
    return TLR_OK;
}

/* The value of one ResourceList entry: millicores for cpu, else units. */
static int res_value(const char *name, json_object *q, int64_t *out, char *err,
                     size_t errlen)
{
    int rc = strcmp(name, "cpu") == 0 ? tlr_json_quantity_milli(q, "", out)
                                      : tlr_json_quantity_value(q, "", out);
    if (rc != TLR_OK) {
        snprintf(err, errlen, "resource %s: %s quantity %s", name,
                 rc == TLR_E_RANGE ? "out of range" : "malformed",
                 json_object_to_json_string_ext(q, JSON_C_TO_STRING_PLAIN));
        return rc;
    }
    if (*out < 0) {
        snprintf(err, errlen, "resource %s: must be non-negative", name);
        return TLR_E_RANGE;
    }
    return TLR_OK;
}

/* Apply every entry of list to r; `skip` (may be NULL) names a list whose
 * keys are skipped (requests win over limits). */
static int res_apply_list(ks_res *r, ks_resnames *names, json_object *list,
                          json_object *skip, bool add, char *err, size_t errlen)
{
    if (!list)
        return TLR_OK;
    if (!json_object_is_type(list, json_type_object)) {
        snprintf(err, errlen, "resource list is not an object");
        return TLR_E_PARSE;
    }
    json_object_object_foreach(list, name, q) {
        if (skip && json_object_object_get_ex(skip, name, NULL))
            continue;
        int64_t v;
        int rc = res_value(name, q, &v, err, errlen);
        if (rc == TLR_OK)
            rc = res_apply(r, names, name, v, add, err, errlen);
        if (rc != TLR_OK)
            return rc;
    }
    return TLR_OK;
}

int ks_res_from_list(json_object *list, ks_resnames *names, ks_res *out,
                     char *err, size_t errlen)
{
    ks_res r = { 0 };
    int rc = res_apply_list(&r, names, list, NULL, true, err, errlen);
    if (rc == TLR_OK)
        *out = r;
    return rc;
}

/* r += b, or r = max(r, b) per resource. */
static int res_combine(ks_res *r, const ks_res *b, bool add, ks_resnames *names,
                       char *err, size_t errlen)
{
    int64_t *rf[] = { &r->cpu_m, &r->mem, &r->eph, &r->pods };
    const int64_t bf[] = { b->cpu_m, b->mem, b->eph, b->pods };
    for (size_t i = 0; i < 4; i++)
        *rf[i] = add ? add_sat(*rf[i], bf[i]) : (bf[i] > *rf[i] ? bf[i] : *rf[i]);
    for (int i = 0; i < b->n; i++) {
        int s = res_slot(r, b->ext_id[i]);
        if (s < 0) {
            snprintf(err, errlen, "resource %s: too many distinct resources",
                     ks_resnames_name(names, b->ext_id[i]));
            return TLR_E_RANGE;
        }
        r->ext_v[s] = add ? add_sat(r->ext_v[s], b->ext_v[i])
                          : (b->ext_v[i] > r->ext_v[s] ? b->ext_v[i] : r->ext_v[s]);
    }
    return TLR_OK;
}

/* The requests of one container, limits standing in for absent requests. */
static int container_requests(json_object *c, ks_resnames *names, ks_res *out,
                              char *err, size_t errlen)
{
    ks_res r = { 0 };
    json_object *req = tlr_json_obj(c, "resources.requests");
    int rc = res_apply_list(&r, names, req, NULL, true, err, errlen);
    if (rc == TLR_OK)
        rc = res_apply_list(&r, names, tlr_json_obj(c, "resources.limits"), req, true,
                            err, errlen);
    if (rc == TLR_OK)
        *out = r;
    return rc;
}

int ks_pod_requests(json_object *pod, ks_resnames *names, ks_res *out,
                    char *err, size_t errlen)
{
    ks_res sum = { 0 }, sidecars = { 0 }, init_max = { 0 }, c;
    int rc = TLR_OK;
    json_object *arr = tlr_json_arr(pod, "spec.containers");
    for (size_t i = 0; arr && i < json_object_array_length(arr) && rc == TLR_OK; i++) {
        rc = container_requests(json_object_array_get_idx(arr, i), names, &c, err, errlen);
        if (rc == TLR_OK)
            rc = res_combine(&sum, &c, true, names, err, errlen);
    }
    /* Init containers run one at a time, each beside the sidecars
     * (restartPolicy Always) started before it; sidecars keep running
     * with the app containers, so they also add to the sum. */
    arr = tlr_json_arr(pod, "spec.initContainers");
    for (size_t i = 0; arr && i < json_object_array_length(arr) && rc == TLR_OK; i++) {
        json_object *ic = json_object_array_get_idx(arr, i);
        rc = container_requests(ic, names, &c, err, errlen);
        if (rc != TLR_OK)
            break;
        const char *rp = tlr_json_str(ic, "restartPolicy");
        if (rp && strcmp(rp, "Always") == 0) {
            rc = res_combine(&sum, &c, true, names, err, errlen);
            if (rc == TLR_OK)
                rc = res_combine(&sidecars, &c, true, names, err, errlen);
            if (rc == TLR_OK)
                rc = res_combine(&init_max, &sidecars, false, names, err, errlen);
        } else {
            rc = res_combine(&c, &sidecars, true, names, err, errlen);
            if (rc == TLR_OK)
                rc = res_combine(&init_max, &c, false, names, err, errlen);
        }
    }
    if (rc == TLR_OK)
        rc = res_combine(&sum, &init_max, false, names, err, errlen);
    if (rc == TLR_OK)
        rc = res_apply_list(&sum, names, tlr_json_obj(pod, "spec.overhead"), NULL, true,
                            err, errlen);
    if (rc != TLR_OK)
        return rc;
    sum.pods = 1;
    *out = sum;
    return TLR_OK;
}

/* ------------------------------------------------------------------ */
/* Nodes                                                               */
/* ------------------------------------------------------------------ */

/* Whether the object's status.conditions has type `type` with status True. */
static bool condition_true(json_object *o, const char *type)
{
    json_object *conds = tlr_json_arr(o, "status.conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        if (t && s && strcmp(t, type) == 0)
            return strcmp(s, "True") == 0;
    }
    return false;
}

int ks_node_info_init(json_object *node, ks_resnames *names, ks_node_info *out,
                      char *err, size_t errlen)
{
    ks_node_info n = { 0 };
    n.node = node;
    n.name = tlr_json_str(node, "metadata.name");
    if (!n.name || !*n.name) {
        snprintf(err, errlen, "node without metadata.name");
        return TLR_E_INVAL;
    }
    n.labels = tlr_json_obj(node, "metadata.labels");
    n.taints = tlr_json_arr(node, "spec.taints");
    n.ready = condition_true(node, "Ready");
    bool b = false;
    n.unschedulable = tlr_json_bool(node, "spec.unschedulable", &b) == TLR_OK && b;
    int rc = ks_res_from_list(tlr_json_obj(node, "status.allocatable"), names, &n.alloc,
                              err, errlen);
    if (rc != TLR_OK)
        return rc;
    *out = n;
    return TLR_OK;
}

const char *ks_node_label(const ks_node_info *n, const char *key)
{
    json_object *v;
    if (!n->labels || !json_object_object_get_ex(n->labels, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* ------------------------------------------------------------------ */
/* Taints and tolerations                                              */
/* ------------------------------------------------------------------ */

/* "" for an absent string member. */
static const char *str_or_empty(json_object *o, const char *key)
{
    const char *s = tlr_json_str(o, key);
    return s ? s : "";
}

bool ks_tolerates(json_object *tolerations, const char *key, const char *value,
                  const char *effect)
{
    for (size_t i = 0; tolerations && i < json_object_array_length(tolerations); i++) {
        json_object *t = json_object_array_get_idx(tolerations, i);
        const char *te = str_or_empty(t, "effect"), *tk = str_or_empty(t, "key");
        const char *op = str_or_empty(t, "operator");
        if (*te && strcmp(te, effect) != 0)
            continue;
        if (*tk && strcmp(tk, key) != 0)
            continue;
        if (strcmp(op, "Exists") == 0)
            return true;
        if ((!*op || strcmp(op, "Equal") == 0) && strcmp(str_or_empty(t, "value"), value) == 0)
            return true;
    }
    return false;
}

bool ks_untolerated_taint(json_object *tolerations, const ks_node_info *n,
                          char *buf, size_t len)
{
    bool has_not_ready = false;
    for (size_t i = 0; n->taints && i < json_object_array_length(n->taints); i++) {
        json_object *t = json_object_array_get_idx(n->taints, i);
        const char *k = str_or_empty(t, "key"), *v = str_or_empty(t, "value");
        const char *e = str_or_empty(t, "effect");
        if (strcmp(k, TAINT_NOT_READY) == 0)
            has_not_ready = true;
        if (strcmp(e, "NoSchedule") != 0 && strcmp(e, "NoExecute") != 0)
            continue;
        if (!ks_tolerates(tolerations, k, v, e)) {
            snprintf(buf, len, "node(s) had untolerated taint {%s: %s}", k, v);
            return true;
        }
    }
    if (!n->ready && !has_not_ready &&
        !ks_tolerates(tolerations, TAINT_NOT_READY, "", "NoSchedule")) {
        snprintf(buf, len, "node(s) had untolerated taint {%s: }", TAINT_NOT_READY);
        return true;
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* Node affinity                                                       */
/* ------------------------------------------------------------------ */

/* strconv.ParseInt(s, 10, 64) */
static bool parse_int64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
        return false;
    *out = v;
    return true;
}

static bool values_contain(json_object *values, const char *s)
{
    for (size_t i = 0; values && i < json_object_array_length(values); i++) {
        const char *v = json_object_get_string(json_object_array_get_idx(values, i));
        if (v && strcmp(v, s) == 0)
            return true;
    }
    return false;
}

/* One NodeSelectorRequirement against a value (NULL = label absent). */
static bool requirement_matches(json_object *req, const char *have, bool fields)
{
    const char *op = str_or_empty(req, "operator");
    json_object *values = tlr_json_arr(req, "values");
    if (strcmp(op, "In") == 0)
        return have && values_contain(values, have);
    if (strcmp(op, "NotIn") == 0)
        return !have || !values_contain(values, have);
    if (fields)
        return false;   /* matchFields takes only In and NotIn */
    if (strcmp(op, "Exists") == 0)
        return have != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return have == NULL;
    if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) {
        int64_t a, b;
        if (!have || !values || json_object_array_length(values) != 1 ||
            !parse_int64(have, &a) ||
            !parse_int64(json_object_get_string(json_object_array_get_idx(values, 0)), &b))
            return false;
        return op[0] == 'G' ? a > b : a < b;
    }
    return false;
}

static bool term_matches(json_object *term, const ks_node_info *n)
{
    json_object *exprs = tlr_json_arr(term, "matchExpressions");
    json_object *fields = tlr_json_arr(term, "matchFields");
    size_t ne = exprs ? json_object_array_length(exprs) : 0;
    size_t nf = fields ? json_object_array_length(fields) : 0;
    if (ne == 0 && nf == 0)
        return false;   /* an empty term matches no objects */
    for (size_t i = 0; i < ne; i++) {
        json_object *r = json_object_array_get_idx(exprs, i);
        const char *key = tlr_json_str(r, "key");
        if (!key || !requirement_matches(r, ks_node_label(n, key), false))
            return false;
    }
    for (size_t i = 0; i < nf; i++) {
        json_object *r = json_object_array_get_idx(fields, i);
        const char *key = str_or_empty(r, "key");
        if (strcmp(key, "metadata.name") != 0 || !requirement_matches(r, n->name, true))
            return false;
    }
    return true;
}

bool ks_node_affinity_matches(json_object *spec, const ks_node_info *n)
{
    json_object *sel = tlr_json_obj(spec, "nodeSelector");
    if (sel) {
        json_object_object_foreach(sel, k, v) {
            const char *have = ks_node_label(n, k);
            const char *want = json_object_get_string(v);
            if (!have || !want || strcmp(have, want) != 0)
                return false;
        }
    }
    json_object *req = tlr_json_obj(
        spec, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution");
    if (!req)
        return true;
    json_object *terms = tlr_json_arr(req, "nodeSelectorTerms");
    for (size_t i = 0; terms && i < json_object_array_length(terms); i++)
        if (term_matches(json_object_array_get_idx(terms, i), n))
            return true;
    return false;   /* terms are ORed; none (or an empty list) matched */
}

const char *ks_filter_node(json_object *pod, const ks_node_info *n, char *buf, size_t len)
{
    json_object *spec = tlr_json_obj(pod, "spec");
    json_object *tols = tlr_json_arr(spec, "tolerations");
    if (n->unschedulable && !ks_tolerates(tols, TAINT_UNSCHEDULABLE, "", "NoSchedule"))
        return "node(s) were unschedulable";
    if (ks_untolerated_taint(tols, n, buf, len))
        return buf;
    if (!ks_node_affinity_matches(spec, n))
        return "node(s) didn't match Pod's node affinity/selector";
    return NULL;
}

/* ------------------------------------------------------------------ */
/* NodeResourcesFit                                                    */
/* ------------------------------------------------------------------ */

int ks_filter_fit(const ks_res *req, const ks_node_info *n,
                  const ks_resnames *names, const char **reasons, int max,
                  char *scratch, size_t scratch_len)
{
    int k = 0;
#define REASON(s) do { if (k < max) reasons[k] = (s); k++; } while (0)
    if (n->npods + 1 > n->alloc.pods)
        REASON("Too many pods");
    if (req->cpu_m == 0 && req->mem == 0 && req->eph == 0 && req->n == 0)
        return k;
    if (req->cpu_m > 0 && req->cpu_m > n->alloc.cpu_m - n->used.cpu_m)
        REASON("Insufficient cpu");
    if (req->mem > 0 && req->mem > n->alloc.mem - n->used.mem)
        REASON("Insufficient memory");
    if (req->eph > 0 && req->eph > n->alloc.eph - n->used.eph)
        REASON("Insufficient ephemeral-storage");
    size_t off = 0;
    /* scalars in id order, so the message does not depend on how the
     * pod spelled its requests */
    for (int id = 0, seen = 0; seen < req->n && id < KS_RESNAMES_MAX; id++) {
        int64_t want = 0;
        bool present = false;
        for (int i = 0; i < req->n; i++)
            if (req->ext_id[i] == id) {
                want = req->ext_v[i];
                present = true;
            }
        if (!present)
            continue;
        seen++;
        if (want == 0 || want <= ks_res_ext(&n->alloc, id) - ks_res_ext(&n->used, id))
            continue;
        const char *name = ks_resnames_name(names, id);
        int w = snprintf(scratch + off, scratch_len - off, "Insufficient %s", name ? name : "?");
        if (w < 0 || (size_t)w >= scratch_len - off) {
            REASON("Insufficient resources");
            continue;
        }
        REASON(scratch + off);
        off += (size_t)w + 1;
    }
#undef REASON
    return k;
}

int ks_score_least_allocated(const ks_res *req, const ks_node_info *n)
{
    const int64_t a[2] = { n->alloc.cpu_m, n->alloc.mem };
    const int64_t u[2] = { add_sat(n->used.cpu_m, req->cpu_m), add_sat(n->used.mem, req->mem) };
    int s = 0;
    for (int i = 0; i < 2; i++)
        if (a[i] > 0 && u[i] < a[i])   /* __int128: a * 100 may not fit */
            s += (int)((__int128)(a[i] - u[i]) * 100 / a[i]);
    return s / 2;
}

int ks_score_balanced(const ks_res *req, const ks_node_info *n)
{
    const int64_t a[2] = { n->alloc.cpu_m, n->alloc.mem };
    const int64_t u[2] = { add_sat(n->used.cpu_m, req->cpu_m), add_sat(n->used.mem, req->mem) };
    double f[2];
    int nf = 0;
    for (int i = 0; i < 2; i++) {
        if (a[i] <= 0)
            continue;
        double fr = (double)u[i] / (double)a[i];
        f[nf++] = fr > 1 ? 1 : fr;
    }
    double std = nf == 2 ? fabs(f[0] - f[1]) / 2 : 0;
    return (int)((1 - std) * 100);
}

int ks_score_node(const ks_res *req, const ks_node_info *n)
{
    return ks_score_least_allocated(req, n) + ks_score_balanced(req, n);
}

/* ------------------------------------------------------------------ */
/* FitError message                                                    */
/* ------------------------------------------------------------------ */

struct ks_fitmsg {
    json_object *counts;   /* reason -> count */
};

void ks_fitmsg_create(ks_fitmsg **out)
{
    ks_fitmsg *m = tlr_calloc(1, sizeof(*m));
    m->counts = json_object_new_object();
    *out = m;
}

void ks_fitmsg_free(ks_fitmsg *m)
{
    if (!m)
        return;
    json_object_put(m->counts);
    free(m);
}

void ks_fitmsg_reset(ks_fitmsg *m)
{
    json_object_put(m->counts);
    m->counts = json_object_new_object();
}

void ks_fitmsg_add(ks_fitmsg *m, const char *reason)
{
    json_object *c;
    if (json_object_object_get_ex(m->counts, reason, &c))
        json_object_set_int64(c, json_object_get_int64(c) + 1);
    else
        json_object_object_add(m->counts, reason, json_object_new_int64(1));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void ks_fitmsg_format(ks_fitmsg *m, size_t nnodes, char *buf, size_t len)
{
    if (len == 0)
        return;
    if (nnodes == 0) {
        snprintf(buf, len, "no nodes available to schedule pods");
        return;
    }
    size_t n = (size_t)json_object_object_length(m->counts), i = 0;
    char **items = tlr_calloc(n ? n : 1, sizeof(char *));
    json_object_object_foreach(m->counts, reason, c) {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "%" PRId64 " ", json_object_get_int64(c));
        items[i] = tlr_malloc(strlen(tmp) + strlen(reason) + 1);
        strcpy(items[i], tmp);
        strcat(items[i], reason);
        i++;
    }
    qsort(items, n, sizeof(char *), cmp_str);
    size_t off = (size_t)snprintf(buf, len, "0/%zu nodes are available:", nnodes);
    for (i = 0; i < n; i++) {
        if (off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : " ", items[i]);
        free(items[i]);
    }
    if (off < len)
        snprintf(buf + off, len - off, ".");
    free(items);
}
