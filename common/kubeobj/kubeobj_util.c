/* kubeobj_util.c - readers for the Kubernetes types the converters share,
 * and the error context that names object and field in every message. */
#include "kubeobj_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubesem.h"
#include "tlr_quantity.h"
#include "tlr_time.h"

bool tlr_nodeclaim_allows(const Tailor__V1__NodeClaim *claim, const char *key, const char *value)
{
    for (size_t i = 0; i < claim->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = claim->requirements[i];
        if (strcmp(r->key, key) != 0)
            continue;
        bool listed = false;
        for (size_t j = 0; j < r->n_values; j++)
            if (strcmp(r->values[j], value) == 0)
                listed = true;
        switch (r->operator_) {
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN:
            if (!listed)
                return false;
            break;
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN:
            if (listed)
                return false;
            break;
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST:
            return false;
        default:
            break;
        }
    }
    return true;
}

void tlr_kubeobj_free(void *msg)
{
    if (msg != NULL)
        protobuf_c_message_free_unpacked(msg, NULL);
}

static const char *jstr(json_object *o, const char *path)
{
    return tlr_json_str(o, path);
}

void tlr_kubeobj_describe(json_object *o, char *buf, size_t len)
{
    const char *kind = jstr(o, "kind"), *ns = jstr(o, "metadata.namespace");
    const char *name = jstr(o, "metadata.name");

    if (name == NULL)
        name = jstr(o, "metadata.generateName");
    snprintf(buf, len, "%s %s%s%s", kind ? kind : "object", ns && *ns ? ns : "",
             ns && *ns ? "/" : "", name ? name : "(no name)");
}

void kctx_init(kctx *c, json_object *o, const char *kind, const tlr_kubeobj_opts *opts,
               char *err, size_t errlen)
{
    static const tlr_kubeobj_opts none = { 0 };
    const char *k = jstr(o, "kind"), *ns = jstr(o, "metadata.namespace");
    const char *name = jstr(o, "metadata.name");

    if (name == NULL)
        name = jstr(o, "metadata.generateName");
    snprintf(c->what, sizeof(c->what), "%s %s%s%s", k ? k : kind, ns && *ns ? ns : "",
             ns && *ns ? "/" : "", name ? name : "(no name)");
    c->err = err;
    c->errlen = errlen;
    c->opts = opts != NULL ? opts : &none;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
}

int kfail(kctx *c, int rc, const char *field, const char *fmt, ...)
{
    if (c->err != NULL && c->errlen > 0) {
        int n = snprintf(c->err, c->errlen, "%s: %s%s", c->what, field ? field : "",
                         field ? ": " : "");
        if (n >= 0 && (size_t)n < c->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

void kwarn(kctx *c, const char *field, const char *fmt, ...)
{
    char msg[TLR_KUBEOBJ_ERRLEN];
    int n;

    if (c->opts->warn == NULL)
        return;
    n = snprintf(msg, sizeof(msg), "%s: %s%s", c->what, field ? field : "", field ? ": " : "");
    if (n >= 0 && (size_t)n < sizeof(msg)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    c->opts->warn(c->opts->warn_arg, msg);
}

void kpath(char *dst, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(dst, KF, fmt, ap);
    va_end(ap);
}

void kset(char **field, const char *s)
{
    if (s != NULL && *s != '\0')
        *field = tlr_strdup(s);
}

static const char *type_name(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_boolean: return "a boolean";
    case json_type_double:  return "a number";
    case json_type_int:     return "an integer";
    case json_type_object:  return "an object";
    case json_type_array:   return "a list";
    case json_type_string:  return "a string";
    default:                return "null";
    }
}

int kstr(kctx *c, json_object *o, const char *path, const char *field, const char **s)
{
    json_object *v = tlr_json_get(o, path);

    if (v == NULL) {
        *s = NULL;
        return TLR_OK;
    }
    if (!json_object_is_type(v, json_type_string)) {
        /* Return the code itself, not kfail's result: kfail is variadic and
         * never inlined, so only a literal lets the compiler see that the
         * callers' out-param is set whenever this returns TLR_OK. */
        kfail(c, TLR_E_PARSE, field, "want a string, got %s", type_name(v));
        return TLR_E_PARSE;
    }
    *s = json_object_get_string(v);
    return TLR_OK;
}

int kint(kctx *c, json_object *o, const char *path, const char *field, int64_t min,
         int64_t max, int64_t *v, bool *present)
{
    int64_t x;
    int rc = tlr_json_int(o, path, &x);

    if (present != NULL)
        *present = rc == TLR_OK;
    if (rc == TLR_E_NOTFOUND)
        return TLR_OK;
    if (rc == TLR_E_PARSE)
        return kfail(c, rc, field, "want an integer, got %s",
                     type_name(tlr_json_get(o, path)));
    if (rc != TLR_OK || x < min || x > max)
        return kfail(c, TLR_E_RANGE, field, "%s is outside %lld..%lld",
                     json_object_get_string(tlr_json_get(o, path)), (long long)min,
                     (long long)max);
    *v = x;
    return TLR_OK;
}

int kbool(kctx *c, json_object *o, const char *path, const char *field,
          protobuf_c_boolean *v, protobuf_c_boolean *present)
{
    bool x;
    int rc = tlr_json_bool(o, path, &x);

    if (present != NULL)
        *present = rc == TLR_OK;
    if (rc == TLR_E_NOTFOUND)
        return TLR_OK;
    if (rc != TLR_OK)
        return kfail(c, TLR_E_PARSE, field, "want true or false, got %s",
                     type_name(tlr_json_get(o, path)));
    *v = x;
    return TLR_OK;
}

int ktime(kctx *c, json_object *o, const char *path, const char *field, int64_t *ms)
{
    const char *s;
    int64_t t;
    int rc = kstr(c, o, path, field, &s);

    if (rc != TLR_OK)
        return rc;
    *ms = 0;
    if (s == NULL || *s == '\0')
        return TLR_OK;
    if (tlr_time_parse(s, &t) != TLR_OK)
        return kfail(c, TLR_E_PARSE, field, "\"%.64s\" is not an RFC 3339 time", s);
    *ms = t;
    return TLR_OK;
}

int kduration(kctx *c, json_object *o, const char *path, const char *field, bool never_ok,
              int64_t *ms, protobuf_c_boolean *never, bool *present)
{
    const char *s;
    int64_t d;
    int rc = kstr(c, o, path, field, &s);

    if (present != NULL)
        *present = false;
    if (rc != TLR_OK || s == NULL)
        return rc;
    if (never_ok && strcmp(s, "Never") == 0) {
        *never = true;
        if (present != NULL)
            *present = true;
        return TLR_OK;
    }
    if (tlr_duration_parse(s, &d) != TLR_OK || d < 0)
        return kfail(c, TLR_E_PARSE, field, "\"%.64s\" is not a duration%s", s,
                     never_ok ? " or Never" : "");
    *ms = d;
    if (never != NULL)
        *never = false;
    if (present != NULL)
        *present = true;
    return TLR_OK;
}

int karr(kctx *c, json_object *o, const char *path, const char *field, json_object **arr)
{
    json_object *v = tlr_json_get(o, path);

    *arr = NULL;
    if (v == NULL)
        return TLR_OK;
    if (!json_object_is_type(v, json_type_array))
        return kfail(c, TLR_E_PARSE, field, "want a list, got %s", type_name(v));
    *arr = v;
    return TLR_OK;
}

int kobj(kctx *c, json_object *o, const char *path, const char *field, json_object **obj)
{
    json_object *v = tlr_json_get(o, path);

    *obj = NULL;
    if (v == NULL)
        return TLR_OK;
    if (!json_object_is_type(v, json_type_object))
        return kfail(c, TLR_E_PARSE, field, "want an object, got %s", type_name(v));
    *obj = v;
    return TLR_OK;
}

static int cmp_label(const void *a, const void *b)
{
    return strcmp((*(Tailor__V1__Label *const *)a)->key, (*(Tailor__V1__Label *const *)b)->key);
}

int klabels(kctx *c, json_object *map, const char *field, bool (*keep)(const char *key),
            Tailor__V1__Label ***out, size_t *n)
{
    Tailor__V1__Label **l = NULL;
    size_t cnt = 0;

    if (map == NULL)
        return TLR_OK;
    if (!json_object_is_type(map, json_type_object))
        return kfail(c, TLR_E_PARSE, field, "want a map of strings, got %s", type_name(map));
    size_t total = (size_t)json_object_object_length(map);
    if (total > 0)
        l = tlr_calloc(total, sizeof(*l));
    json_object_object_foreach(map, k, v) {
        if (keep != NULL && !keep(k))
            continue;
        if (v != NULL && !json_object_is_type(v, json_type_string)) {
            for (size_t i = 0; i < cnt; i++)
                tlr_kubeobj_free(l[i]);
            free(l);
            return kfail(c, TLR_E_PARSE, field, "value of \"%.64s\": want a string, got %s", k,
                         type_name(v));
        }
        Tailor__V1__Label *lab = tlr_malloc(sizeof(*lab));
        tailor__v1__label__init(lab);
        lab->key = tlr_strdup(k);
        kset(&lab->value, v ? json_object_get_string(v) : NULL);
        l[cnt++] = lab;
    }
    if (cnt > 1)
        qsort(l, cnt, sizeof(*l), cmp_label);
    if (cnt == 0) {
        free(l);
        l = NULL;
    }
    *out = l;
    *n = cnt;
    return TLR_OK;
}

int kstrings(kctx *c, json_object *arr, const char *field, char ***out, size_t *n)
{
    char **s = NULL;
    size_t len;

    *out = NULL;
    *n = 0;
    if (arr == NULL)
        return TLR_OK;
    if (!json_object_is_type(arr, json_type_array))
        return kfail(c, TLR_E_PARSE, field, "want a list of strings, got %s", type_name(arr));
    len = json_object_array_length(arr);
    if (len == 0)
        return TLR_OK;
    for (size_t i = 0; i < len; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        if (!json_object_is_type(v, json_type_string))
            return kfail(c, TLR_E_PARSE, field, "item %zu: want a string, got %s", i,
                         type_name(v));
    }
    s = tlr_calloc(len, sizeof(*s));
    for (size_t i = 0; i < len; i++)
        s[i] = tlr_strdup(json_object_get_string(json_object_array_get_idx(arr, i)));
    *out = s;
    *n = len;
    return TLR_OK;
}

/* ---- resources --------------------------------------------------------- */

void kres_free(kres *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->ext[i].name);
    free(r->ext);
    memset(r, 0, sizeof(*r));
}

/* The slot for name, created at 0 if missing (keeps ext sorted). */
static int64_t *kres_slot(kres *r, const char *name)
{
    size_t i = 0;

    while (i < r->n && strcmp(r->ext[i].name, name) < 0)
        i++;
    if (i < r->n && strcmp(r->ext[i].name, name) == 0)
        return &r->ext[i].v;
    TLR_GROW(r->ext, r->cap, r->n + 1);
    memmove(&r->ext[i + 1], &r->ext[i], (r->n - i) * sizeof(r->ext[0]));
    r->ext[i].name = tlr_strdup(name);
    r->ext[i].v = 0;
    r->n++;
    return &r->ext[i].v;
}

/* Saturating: absurd sums stay absurd instead of wrapping. */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t s;
    return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

void kres_add(kres *dst, const kres *src)
{
    dst->cpu = sat_add(dst->cpu, src->cpu);
    dst->mem = sat_add(dst->mem, src->mem);
    dst->pods = sat_add(dst->pods, src->pods);
    dst->eph = sat_add(dst->eph, src->eph);
    for (size_t i = 0; i < src->n; i++) {
        int64_t *s = kres_slot(dst, src->ext[i].name);
        *s = sat_add(*s, src->ext[i].v);
    }
}

void kres_max(kres *dst, const kres *src)
{
#define KMAX(f) if (src->f > dst->f) dst->f = src->f
    KMAX(cpu);
    KMAX(mem);
    KMAX(pods);
    KMAX(eph);
#undef KMAX
    for (size_t i = 0; i < src->n; i++) {
        int64_t *s = kres_slot(dst, src->ext[i].name);
        if (src->ext[i].v > *s)
            *s = src->ext[i].v;
    }
}

int kres_read(kctx *c, json_object *map, const char *field, kres *out)
{
    kres r = { 0 };
    char f[KF];

    if (map == NULL) {
        *out = r;
        return TLR_OK;
    }
    if (!json_object_is_type(map, json_type_object))
        return kfail(c, TLR_E_PARSE, field, "want a map of quantities, got %s",
                     type_name(map));
    json_object_object_foreach(map, k, v) {
        tlr_quantity q;
        int64_t x;
        int rc;
        bool is_cpu = strcmp(k, "cpu") == 0;

        kpath(f, "%s.%s", field, k);
        if (v == NULL)
            continue;
        /* tlr_json_quantity wants a path; the key may contain dots, so
         * hand it the value through a one-member wrapper. */
        json_object *w = json_object_new_object();
        json_object_object_add(w, "v", json_object_get(v));
        rc = tlr_json_quantity(w, "v", &q);
        json_object_put(w);
        if (rc == TLR_OK && q.neg) {
            kres_free(&r);
            return kfail(c, TLR_E_PARSE, f, "\"%.40s\" is negative", json_object_get_string(v));
        }
        if (rc == TLR_OK)
            rc = is_cpu ? tlr_quantity_milli(&q, &x) : tlr_quantity_value(&q, &x);
        if (rc != TLR_OK) {
            kres_free(&r);
            if (rc == TLR_E_RANGE)
                return kfail(c, rc, f, "\"%.40s\" is too large", json_object_get_string(v));
            return kfail(c, TLR_E_PARSE, f, "\"%.40s\" is not a quantity",
                         json_object_get_string(v));
        }
        if (is_cpu)
            r.cpu = x;
        else if (strcmp(k, "memory") == 0)
            r.mem = x;
        else if (strcmp(k, "pods") == 0)
            r.pods = x;
        else if (strcmp(k, "ephemeral-storage") == 0)
            r.eph = x;
        else
            *kres_slot(&r, k) = x;
    }
    *out = r;
    return TLR_OK;
}

int kres_int_or_string(kctx *c, json_object *map, const char *field)
{
    char f[KF];

    if (map == NULL || !json_object_is_type(map, json_type_object))
        return TLR_OK;   /* kres_read names the wrong type */
    json_object_object_foreach(map, k, v) {
        if (v == NULL || json_object_is_type(v, json_type_int) ||
            json_object_is_type(v, json_type_string))
            continue;
        kpath(f, "%s.%s", field, k);
        if (json_object_is_type(v, json_type_double))
            return kfail(c, TLR_E_PARSE, f, "want an integer or a quantity string, got the "
                         "number %.40s (write it as a string: \"%.40s\")",
                         json_object_get_string(v), json_object_get_string(v));
        return kfail(c, TLR_E_PARSE, f, "want an integer or a quantity string, got %s",
                     type_name(v));
    }
    return TLR_OK;
}

Tailor__V1__ResourceList *kres_proto(const kres *r)
{
    Tailor__V1__ResourceList *p = tlr_malloc(sizeof(*p));
    size_t n = 0;

    tailor__v1__resource_list__init(p);
    p->cpu_millis = r->cpu;
    p->memory_bytes = r->mem;
    p->pods = r->pods;
    p->ephemeral_storage_bytes = r->eph;
    for (size_t i = 0; i < r->n; i++)
        n += r->ext[i].v != 0;
    if (n > 0) {
        p->extended = tlr_calloc(n, sizeof(*p->extended));
        for (size_t i = 0; i < r->n; i++) {
            if (r->ext[i].v == 0)
                continue;
            Tailor__V1__ExtendedResource *e = tlr_malloc(sizeof(*e));
            tailor__v1__extended_resource__init(e);
            e->name = tlr_strdup(r->ext[i].name);
            e->value = r->ext[i].v;
            p->extended[p->n_extended++] = e;
        }
    }
    return p;
}

void kres_from_proto(const Tailor__V1__ResourceList *p, kres *out)
{
    memset(out, 0, sizeof(*out));
    if (p == NULL)
        return;
    out->cpu = p->cpu_millis;
    out->mem = p->memory_bytes;
    out->pods = p->pods;
    out->eph = p->ephemeral_storage_bytes;
    for (size_t i = 0; i < p->n_extended; i++)
        *kres_slot(out, p->extended[i]->name) = p->extended[i]->value;
}

int kresources(kctx *c, json_object *map, const char *field, Tailor__V1__ResourceList **out)
{
    kres r;
    int rc = kres_read(c, map, field, &r);

    if (rc != TLR_OK)
        return rc;
    *out = kres_proto(&r);
    kres_free(&r);
    return TLR_OK;
}

/* ---- taints, tolerations, selectors ------------------------------------ */

static int effect_of(const char *s, Tailor__V1__TaintEffect *e)
{
    if (s == NULL || *s == '\0')
        *e = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED;
    else if (strcmp(s, "NoSchedule") == 0)
        *e = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE;
    else if (strcmp(s, "PreferNoSchedule") == 0)
        *e = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE;
    else if (strcmp(s, "NoExecute") == 0)
        *e = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE;
    else
        return TLR_E_PARSE;
    return TLR_OK;
}

#define FREE_LIST(arr, n)                       \
    do {                                        \
        for (size_t i_ = 0; i_ < (n); i_++)     \
            tlr_kubeobj_free((arr)[i_]);        \
        free(arr);                              \
    } while (0)

/* One element of a JSON list -> one new message (owned by the caller) in
 * *out.  f names the element ("spec.taints[2]").  On error the function
 * has reported it with kfail() and freed whatever it had built. */
typedef int (*kitem_fn)(kctx *c, json_object *o, const char *f, void *arg, void **out);

/* The loop every list converter shares: absent -> empty, not an array ->
 * error, each element through item (elements must be objects when
 * objects is set), all or nothing.  On TLR_OK *out (owned) holds *n
 * messages; on error nothing is left allocated. */
static int klist(kctx *c, json_object *arr, const char *field, bool objects, kitem_fn item,
                 void *arg, void ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (arr == NULL)
        return TLR_OK;
    if (!json_object_is_type(arr, json_type_array))
        return kfail(c, TLR_E_PARSE, field, "want a list, got %s", type_name(arr));
    size_t len = json_object_array_length(arr);
    if (len == 0)
        return TLR_OK;
    void **r = tlr_calloc(len, sizeof(*r));
    size_t cnt = 0;
    int rc = TLR_OK;
    char f[KF];
    for (size_t i = 0; i < len; i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        kpath(f, "%s[%zu]", field, i);
        if (objects && !json_object_is_type(o, json_type_object)) {
            rc = kfail(c, TLR_E_PARSE, f, "want an object, got %s", type_name(o));
            break;
        }
        if ((rc = item(c, o, f, arg, &r[cnt])) != TLR_OK)
            break;
        cnt++;
    }
    if (rc != TLR_OK) {
        FREE_LIST(r, cnt);
        return rc;
    }
    *out = r;
    *n = cnt;
    return TLR_OK;
}

static int taint_item(kctx *c, json_object *o, const char *f, void *arg, void **out)
{
    (void)arg;
    const char *key, *val, *eff;
    Tailor__V1__TaintEffect e;
    int rc;

    if ((rc = kstr(c, o, "key", f, &key)) != TLR_OK ||
        (rc = kstr(c, o, "value", f, &val)) != TLR_OK ||
        (rc = kstr(c, o, "effect", f, &eff)) != TLR_OK)
        return rc;
    if (key == NULL || *key == '\0')
        return kfail(c, TLR_E_INVAL, f, "key is required");
    if (eff == NULL || effect_of(eff, &e) != TLR_OK ||
        e == TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED)
        return kfail(c, TLR_E_PARSE, f, "effect \"%.40s\" is not NoSchedule, "
                     "PreferNoSchedule or NoExecute", eff ? eff : "");
    Tailor__V1__Taint *x = tlr_malloc(sizeof(*x));
    tailor__v1__taint__init(x);
    kset(&x->key, key);
    kset(&x->value, val);
    x->effect = e;
    if ((rc = ktime(c, o, "timeAdded", f, &x->time_added_unix_ms)) != TLR_OK) {
        tlr_kubeobj_free(x);
        return rc;
    }
    *out = x;
    return TLR_OK;
}

int ktaints(kctx *c, json_object *arr, const char *field, Tailor__V1__Taint ***out, size_t *n)
{
    return klist(c, arr, field, true, taint_item, NULL, (void ***)out, n);
}

static int toleration_item(kctx *c, json_object *o, const char *f, void *arg, void **out)
{
    (void)arg;
    const char *key, *op, *val, *eff;
    Tailor__V1__TaintEffect e;
    int64_t secs = 0;
    bool has_secs = false;
    int rc;

    if ((rc = kstr(c, o, "key", f, &key)) != TLR_OK ||
        (rc = kstr(c, o, "operator", f, &op)) != TLR_OK ||
        (rc = kstr(c, o, "value", f, &val)) != TLR_OK ||
        (rc = kstr(c, o, "effect", f, &eff)) != TLR_OK ||
        (rc = kint(c, o, "tolerationSeconds", f, INT64_MIN / 1000, INT64_MAX / 1000, &secs,
                   &has_secs)) != TLR_OK)
        return rc;
    if (effect_of(eff, &e) != TLR_OK)
        return kfail(c, TLR_E_PARSE, f, "effect \"%.40s\" is not NoSchedule, "
                     "PreferNoSchedule or NoExecute", eff);
    Tailor__V1__TolerationOperator top;
    if (op == NULL || *op == '\0' || strcmp(op, "Equal") == 0) {
        top = TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL;
        if (key == NULL || *key == '\0')
            return kfail(c, TLR_E_INVAL, f, "operator must be Exists when key is empty");
    } else if (strcmp(op, "Exists") == 0) {
        top = TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS;
        if (val != NULL && *val != '\0')
            return kfail(c, TLR_E_INVAL, f, "value must be empty when operator is Exists");
    } else {
        return kfail(c, TLR_E_PARSE, f, "unknown operator \"%.40s\" (want Equal or Exists)",
                     op);
    }
    if (has_secs && e != TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE)
        return kfail(c, TLR_E_INVAL, f, "tolerationSeconds needs effect NoExecute");
    Tailor__V1__Toleration *x = tlr_malloc(sizeof(*x));
    tailor__v1__toleration__init(x);
    x->operator_ = top;
    kset(&x->key, key);
    kset(&x->value, val);
    x->effect = e;
    x->has_toleration_seconds = has_secs;
    x->toleration_seconds = secs;
    *out = x;
    return TLR_OK;
}

int ktolerations(kctx *c, json_object *arr, const char *field,
                 Tailor__V1__Toleration ***out, size_t *n)
{
    return klist(c, arr, field, true, toleration_item, NULL, (void ***)out, n);
}

static const struct {
    const char *name;
    Tailor__V1__SelectorOperator op;
    bool karpenter_only;
} operators[] = {
    { "In", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN, false },
    { "NotIn", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN, false },
    { "Exists", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS, false },
    { "DoesNotExist", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST, false },
    { "Gt", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT, false },
    { "Lt", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT, false },
    { "Gte", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GTE, true },
    { "Lte", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LTE, true },
};

static bool is_int_string(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* One requirement; label selectors (!node) take only the set operators. */
static int one_req(kctx *c, json_object *o, const char *f, bool node, bool karpenter,
                   Tailor__V1__SelectorOperator *op_out, const char **key_out,
                   char ***vals, size_t *nvals, int64_t *min_values)
{
    const char *key, *op;
    json_object *va;
    size_t k;
    int rc;

    if (!json_object_is_type(o, json_type_object))
        return kfail(c, TLR_E_PARSE, f, "want an object, got %s", type_name(o));
    if ((rc = kstr(c, o, "key", f, &key)) != TLR_OK || (rc = kstr(c, o, "operator", f, &op)))
        return rc;
    if (key == NULL || *key == '\0')
        return kfail(c, TLR_E_INVAL, f, "key is required");
    for (k = 0; k < sizeof(operators) / sizeof(operators[0]); k++)
        if (op != NULL && strcmp(op, operators[k].name) == 0 &&
            (!operators[k].karpenter_only || karpenter) && (node || k < 4))
            break;
    if (k == sizeof(operators) / sizeof(operators[0]))
        return kfail(c, TLR_E_PARSE, f, "unknown operator \"%.40s\" for key %.64s",
                     op ? op : "", key);
    if ((rc = karr(c, o, "values", f, &va)) != TLR_OK ||
        (rc = kstrings(c, va, f, vals, nvals)) != TLR_OK)
        return rc;
    size_t n = *nvals;
    bool bad = false;
    const char *why = "";
    if (k <= 1 && n == 0) {
        bad = true;
        why = "needs at least one value";
    } else if ((k == 2 || k == 3) && n != 0) {
        bad = true;
        why = "takes no values";
    } else if (k >= 4 && (n != 1 || !is_int_string((*vals)[0]))) {
        bad = true;
        why = "needs exactly one integer value";
    }
    if (!bad && karpenter) {
        bool has = false;
        if ((rc = kint(c, o, "minValues", f, 1, 50, min_values, &has)) != TLR_OK)
            goto fail;
        if (has && k <= 1 && *min_values > (int64_t)n && k == 0) {
            bad = true;
            why = "minValues is larger than the number of values";
        }
    }
    if (bad) {
        rc = kfail(c, TLR_E_INVAL, f, "operator %s %s (key %.64s)", operators[k].name, why, key);
        goto fail;
    }
    *op_out = operators[k].op;
    *key_out = key;
    return TLR_OK;
fail:
    for (size_t i = 0; i < *nvals; i++)
        free((*vals)[i]);
    free(*vals);
    *vals = NULL;
    *nvals = 0;
    return rc;
}

static int nsreq_item(kctx *c, json_object *o, const char *f, void *arg, void **out)
{
    bool karpenter = *(const bool *)arg;
    Tailor__V1__SelectorOperator op;
    const char *key;
    char **vals = NULL;
    size_t nvals = 0;
    int64_t minv = 0;
    int rc = one_req(c, o, f, true, karpenter, &op, &key, &vals, &nvals, &minv);
    if (rc != TLR_OK)
        return rc;
    Tailor__V1__NodeSelectorRequirement *x = tlr_malloc(sizeof(*x));
    tailor__v1__node_selector_requirement__init(x);
    x->key = tlr_strdup(tlr_ks_normalized_key(key));
    x->operator_ = op;
    x->values = vals;
    x->n_values = nvals;
    x->min_values = (int32_t)minv;
    *out = x;
    return TLR_OK;
}

int knsreqs(kctx *c, json_object *arr, const char *field, bool karpenter,
            Tailor__V1__NodeSelectorRequirement ***out, size_t *n)
{
    return klist(c, arr, field, false, nsreq_item, &karpenter, (void ***)out, n);
}

int knsterm(kctx *c, json_object *term, const char *field, Tailor__V1__NodeSelectorTerm **out)
{
    Tailor__V1__NodeSelectorTerm *t;
    json_object *me, *mf;
    char f[KF];
    int rc;

    if (!json_object_is_type(term, json_type_object))
        return kfail(c, TLR_E_PARSE, field, "want an object, got %s", type_name(term));
    if ((rc = karr(c, term, "matchExpressions", field, &me)) != TLR_OK ||
        (rc = karr(c, term, "matchFields", field, &mf)) != TLR_OK)
        return rc;
    t = tlr_malloc(sizeof(*t));
    tailor__v1__node_selector_term__init(t);
    kpath(f, "%s.matchExpressions", field);
    rc = knsreqs(c, me, f, false, &t->match_expressions, &t->n_match_expressions);
    if (rc == TLR_OK) {
        kpath(f, "%s.matchFields", field);
        rc = knsreqs(c, mf, f, false, &t->match_fields, &t->n_match_fields);
    }
    if (rc != TLR_OK) {
        tlr_kubeobj_free(t);
        return rc;
    }
    *out = t;
    return TLR_OK;
}

int klabelselector(kctx *c, json_object *sel, const char *field,
                   Tailor__V1__LabelSelector **out)
{
    Tailor__V1__LabelSelector *s;
    json_object *ml, *me;
    char f[KF];
    int rc;

    *out = NULL;
    if (sel == NULL)
        return TLR_OK;
    if (!json_object_is_type(sel, json_type_object))
        return kfail(c, TLR_E_PARSE, field, "want an object, got %s", type_name(sel));
    if ((rc = kobj(c, sel, "matchLabels", field, &ml)) != TLR_OK ||
        (rc = karr(c, sel, "matchExpressions", field, &me)) != TLR_OK)
        return rc;
    s = tlr_malloc(sizeof(*s));
    tailor__v1__label_selector__init(s);
    kpath(f, "%s.matchLabels", field);
    rc = klabels(c, ml, f, NULL, &s->match_labels, &s->n_match_labels);
    size_t len = me ? json_object_array_length(me) : 0;
    if (rc == TLR_OK && len > 0)
        s->match_expressions = tlr_calloc(len, sizeof(*s->match_expressions));
    for (size_t i = 0; rc == TLR_OK && i < len; i++) {
        Tailor__V1__SelectorOperator op;
        const char *key;
        char **vals = NULL;
        size_t nvals = 0;
        int64_t minv = 0;

        kpath(f, "%s.matchExpressions[%zu]", field, i);
        rc = one_req(c, json_object_array_get_idx(me, i), f, false, false, &op, &key, &vals,
                     &nvals, &minv);
        if (rc != TLR_OK)
            break;
        Tailor__V1__LabelSelectorRequirement *x = tlr_malloc(sizeof(*x));
        tailor__v1__label_selector_requirement__init(x);
        x->key = tlr_strdup(key);
        x->operator_ = op;
        x->values = vals;
        x->n_values = nvals;
        s->match_expressions[s->n_match_expressions++] = x;
    }
    if (rc != TLR_OK) {
        tlr_kubeobj_free(s);
        return rc;
    }
    *out = s;
    return TLR_OK;
}

static Tailor__V1__ConditionStatus cond_status(const char *s)
{
    if (s == NULL)
        return TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_UNSPECIFIED;
    if (strcmp(s, "True") == 0)
        return TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE;
    if (strcmp(s, "False") == 0)
        return TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE;
    return TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_UNKNOWN;
}

static int condition_item(kctx *c, json_object *o, const char *f, void *arg, void **out)
{
    (void)arg;
    const char *type, *status, *reason, *msg;
    int64_t og = 0;
    int rc;

    if ((rc = kstr(c, o, "type", f, &type)) || (rc = kstr(c, o, "status", f, &status)) ||
        (rc = kstr(c, o, "reason", f, &reason)) || (rc = kstr(c, o, "message", f, &msg)) ||
        (rc = kint(c, o, "observedGeneration", f, 0, INT64_MAX, &og, NULL)))
        return rc;
    Tailor__V1__Condition *x = tlr_malloc(sizeof(*x));
    tailor__v1__condition__init(x);
    kset(&x->type, type);
    x->status = cond_status(status);
    kset(&x->reason, reason);
    kset(&x->message, msg);
    x->observed_generation = og;
    if ((rc = ktime(c, o, "lastTransitionTime", f, &x->last_transition_unix_ms)) != TLR_OK) {
        tlr_kubeobj_free(x);
        return rc;
    }
    *out = x;
    return TLR_OK;
}

int kconditions(kctx *c, json_object *arr, const char *field, Tailor__V1__Condition ***out,
                size_t *n)
{
    return klist(c, arr, field, true, condition_item, NULL, (void ***)out, n);
}

const char *kcondition_status(json_object *conds, const char *type, const char **reason)
{
    size_t len = json_object_is_type(conds, json_type_array) ? json_object_array_length(conds)
                                                              : 0;
    for (size_t i = 0; i < len; i++) {
        json_object *o = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(o, "type");
        if (t != NULL && strcmp(t, type) == 0) {
            if (reason != NULL)
                *reason = tlr_json_str(o, "reason");
            return tlr_json_str(o, "status");
        }
    }
    return NULL;
}

static int owner_item(kctx *c, json_object *o, const char *f, void *arg, void **out)
{
    (void)arg;
    const char *kind, *name, *uid, *api;
    protobuf_c_boolean ctl = false;
    int rc;

    if ((rc = kstr(c, o, "kind", f, &kind)) || (rc = kstr(c, o, "name", f, &name)) ||
        (rc = kstr(c, o, "uid", f, &uid)) || (rc = kstr(c, o, "apiVersion", f, &api)) ||
        (rc = kbool(c, o, "controller", f, &ctl, NULL)))
        return rc;
    Tailor__V1__OwnerReference *x = tlr_malloc(sizeof(*x));
    tailor__v1__owner_reference__init(x);
    kset(&x->kind, kind);
    kset(&x->name, name);
    kset(&x->uid, uid);
    kset(&x->api_version, api);
    x->controller = ctl;
    *out = x;
    return TLR_OK;
}

int kowners(kctx *c, json_object *arr, const char *field, Tailor__V1__OwnerReference ***out,
            size_t *n)
{
    return klist(c, arr, field, true, owner_item, NULL, (void ***)out, n);
}

int kintorstr(kctx *c, json_object *o, const char *path, const char *field,
              Tailor__V1__IntOrString **out)
{
    json_object *v = tlr_json_get(o, path);
    Tailor__V1__IntOrString *x;

    *out = NULL;
    if (v == NULL)
        return TLR_OK;
    x = tlr_malloc(sizeof(*x));
    tailor__v1__int_or_string__init(x);
    if (json_object_is_type(v, json_type_int)) {
        int64_t i = json_object_get_int64(v);
        if (i < 0 || i > INT32_MAX) {
            free(x);
            return kfail(c, TLR_E_RANGE, field, "%lld is outside 0..%d", (long long)i,
                         INT32_MAX);
        }
        x->value_case = TAILOR__V1__INT_OR_STRING__VALUE_INT_VALUE;
        x->int_value = (int32_t)i;
    } else if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        size_t n = strlen(s);
        char *end = NULL;
        long pct = n > 1 && s[n - 1] == '%' ? strtol(s, &end, 10) : -1;
        if (pct < 0 || end != s + n - 1 || s[0] < '0' || s[0] > '9' || pct > 100) {
            free(x);
            return kfail(c, TLR_E_PARSE, field, "\"%.40s\" is not a count or a percentage", s);
        }
        x->value_case = TAILOR__V1__INT_OR_STRING__VALUE_STR_VALUE;
        x->str_value = tlr_strdup(s);
    } else {
        free(x);
        return kfail(c, TLR_E_PARSE, field, "want an integer or a percentage, got %s",
                     type_name(v));
    }
    *out = x;
    return TLR_OK;
}

void *kcopy(const void *msg)
{
    const ProtobufCMessage *m = msg;
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = tlr_malloc(len);
    ProtobufCMessage *copy;

    protobuf_c_message_pack(m, buf);
    copy = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
    free(buf);
    if (copy == NULL)
        abort();   /* we just packed it: only allocation failure gets here */
    return copy;
}
