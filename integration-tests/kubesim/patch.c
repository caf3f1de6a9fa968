/* patch.c - JSON merge patch (RFC 7386), strategic merge patch (the parts
 * kubectl and tailor send) and JSON patch (RFC 6902).  See ks_patch.h.
 *
 * Strategic merge needs to know, per list, whether it merges and by which
 * key.  The real API reads the Go struct tags; we keep the table of the
 * lists that matter (merge_keys below), found by the list's field name
 * and, for `ports`, its parent.  Lists not in the table are replaced, as
 * upstream does for lists without a patch strategy (tolerations, taints).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ks_patch.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define PRIMITIVE_SET "$set" /* merge_key value: a set of scalars */

typedef struct merge_key {
    const char *field;
    const char *parent; /* NULL = any */
    const char *key;
} merge_key;

static const merge_key merge_keys[] = {
    { "containers", NULL, "name" },
    { "initContainers", NULL, "name" },
    { "ephemeralContainers", NULL, "name" },
    { "volumes", NULL, "name" },
    { "env", NULL, "name" },
    { "volumeMounts", NULL, "mountPath" },
    { "volumeDevices", NULL, "devicePath" },
    { "ports", "containers", "containerPort" },
    { "ports", "initContainers", "containerPort" },
    { "ports", NULL, "port" },
    { "conditions", NULL, "type" },
    { "addresses", NULL, "type" },
    { "imagePullSecrets", NULL, "name" },
    { "ownerReferences", NULL, "uid" },
    { "hostAliases", NULL, "ip" },
    { "finalizers", "metadata", PRIMITIVE_SET },
};

static const char *find_merge_key(const char *field, const char *parent)
{
    for (size_t i = 0; i < sizeof(merge_keys) / sizeof(merge_keys[0]); i++) {
        const merge_key *m = &merge_keys[i];
        if (strcmp(m->field, field))
            continue;
        if (m->parent && (!parent || strcmp(m->parent, parent)))
            continue;
        return m->key;
    }
    return NULL;
}

int ks_patch_type_parse(const char *ct, ks_patch_type *out)
{
    if (!ct)
        return TLR_E_INVAL;
    size_t n = strcspn(ct, ";");
    while (n && ct[n - 1] == ' ')
        n--;
    static const struct { const char *name; ks_patch_type t; } types[] = {
        { "application/merge-patch+json", KS_PATCH_MERGE },
        { "application/strategic-merge-patch+json", KS_PATCH_STRATEGIC },
        { "application/json-patch+json", KS_PATCH_JSON },
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strlen(types[i].name) == n && !strncasecmp(ct, types[i].name, n)) {
            *out = types[i].t;
            return TLR_OK;
        }
    return TLR_E_INVAL;
}

static json_object *copy(json_object *j)
{
    json_object *c = NULL;
    if (j)
        json_object_deep_copy(j, &c, NULL);
    return c;
}

/* ------------------------------------------------------------------ */
/* RFC 7386                                                            */
/* ------------------------------------------------------------------ */

/* Returns a new object: target (borrowed) merged with patch (borrowed). */
static json_object *merge(json_object *target, json_object *patch)
{
    if (!json_object_is_type(patch, json_type_object))
        return copy(patch);
    json_object *res = json_object_is_type(target, json_type_object) ? copy(target)
                                                                     : json_object_new_object();
    json_object_object_foreach(patch, k, v) {
        if (!v) {
            json_object_object_del(res, k);
            continue;
        }
        json_object *m = merge(json_object_object_get(res, k), v);
        json_object_object_add(res, k, m);
    }
    return res;
}

/* ------------------------------------------------------------------ */
/* strategic merge                                                     */
/* ------------------------------------------------------------------ */

static const char *directive(json_object *o)
{
    if (!json_object_is_type(o, json_type_object))
        return NULL;
    return tlr_json_str(o, "$patch");
}

static json_object *without_directives(json_object *o)
{
    json_object *c = copy(o);
    if (json_object_is_type(c, json_type_object))
        json_object_object_del(c, "$patch");
    return c;
}

static int smp_obj(json_object *target, json_object *patch, const char *field,
                   json_object **out, ks_status *st);

static bool item_key_eq(json_object *a, json_object *b, const char *key)
{
    json_object *va = json_object_object_get(a, key), *vb = json_object_object_get(b, key);
    return va && vb && json_object_equal(va, vb);
}

/* Merge list `patch` into `target` (both borrowed) by key. */
static int smp_list(json_object *target, json_object *patch, const char *field,
                    const char *key, json_object **out, ks_status *st)
{
    size_t np = json_object_array_length(patch);
    for (size_t i = 0; i < np; i++) {
        const char *d = directive(json_object_array_get_idx(patch, i));
        if (d && !strcmp(d, "replace")) {
            json_object *res = json_object_new_array();
            for (size_t j = 0; j < np; j++) {
                json_object *it = json_object_array_get_idx(patch, j);
                if (!directive(it))
                    json_object_array_add(res, copy(it));
            }
            *out = res;
            return TLR_OK;
        }
    }
    json_object *res = json_object_is_type(target, json_type_array) ? copy(target)
                                                                    : json_object_new_array();
    if (!strcmp(key, PRIMITIVE_SET)) {
        for (size_t i = 0; i < np; i++) {
            json_object *v = json_object_array_get_idx(patch, i);
            bool have = false;
            for (size_t j = 0; j < json_object_array_length(res) && !have; j++)
                have = json_object_equal(json_object_array_get_idx(res, j), v);
            if (!have)
                json_object_array_add(res, copy(v));
        }
        *out = res;
        return TLR_OK;
    }
    for (size_t i = 0; i < np; i++) {
        json_object *it = json_object_array_get_idx(patch, i);
        if (!json_object_is_type(it, json_type_object) || !json_object_object_get(it, key)) {
            json_object_put(res);
            return ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                                 "map: %s: list item %zu has no merge key \"%s\"", field, i,
                                 key);
        }
        const char *d = directive(it);
        size_t found = (size_t)-1;
        for (size_t j = 0; j < json_object_array_length(res); j++)
            if (item_key_eq(json_object_array_get_idx(res, j), it, key)) {
                found = j;
                break;
            }
        if (d && !strcmp(d, "delete")) {
            if (found != (size_t)-1)
                json_object_array_del_idx(res, found, 1);
            continue;
        }
        if (found == (size_t)-1) {
            json_object_array_add(res, without_directives(it));
            continue;
        }
        json_object *merged = NULL;
        int rc = smp_obj(json_object_array_get_idx(res, found), it, field, &merged, st);
        if (rc) {
            json_object_put(res);
            return rc;
        }
        json_object_array_put_idx(res, found, merged);
    }
    *out = res;
    return TLR_OK;
}

/* *out: new merged object, or NULL when the patch deletes it. */
static int smp_obj(json_object *target, json_object *patch, const char *field,
                   json_object **out, ks_status *st)
{
    if (!json_object_is_type(patch, json_type_object)) {
        *out = copy(patch);
        return TLR_OK;
    }
    const char *d = directive(patch);
    if (d && !strcmp(d, "replace")) {
        *out = without_directives(patch);
        return TLR_OK;
    }
    if (d && !strcmp(d, "delete")) {
        *out = NULL;
        return TLR_OK;
    }
    if (d && strcmp(d, "merge"))
        return ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                             "map: %s: unknown patch directive \"%s\"", field ? field : "",
                             d);
    json_object *res = json_object_is_type(target, json_type_object) ? copy(target)
                                                                     : json_object_new_object();
    json_object_object_foreach(patch, k, v) {
        if (!strcmp(k, "$patch") || !strcmp(k, "$retainKeys") ||
            !strncmp(k, "$setElementOrder/", 17))
            continue;
        if (!strncmp(k, "$deleteFromPrimitiveList/", 25)) {
            const char *f = k + 25;
            json_object *arr = json_object_object_get(res, f);
            if (!json_object_is_type(arr, json_type_array) ||
                !json_object_is_type(v, json_type_array))
                continue;
            for (size_t i = json_object_array_length(arr); i-- > 0;)
                for (size_t j = 0; j < json_object_array_length(v); j++)
                    if (json_object_equal(json_object_array_get_idx(arr, i),
                                          json_object_array_get_idx(v, j))) {
                        json_object_array_del_idx(arr, i, 1);
                        break;
                    }
            continue;
        }
        if (k[0] == '$') {
            json_object_put(res);
            return ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                                 "unknown patch directive \"%s\"", k);
        }
        if (!v) {
            json_object_object_del(res, k);
            continue;
        }
        json_object *m = NULL;
        int rc = TLR_OK;
        if (json_object_is_type(v, json_type_array)) {
            const char *key = find_merge_key(k, field);
            if (key)
                rc = smp_list(json_object_object_get(res, k), v, k, key, &m, st);
            else
                m = copy(v);
        } else if (json_object_is_type(v, json_type_object)) {
            rc = smp_obj(json_object_object_get(res, k), v, k, &m, st);
            if (!rc && !m) {
                json_object_object_del(res, k);
                continue;
            }
        } else {
            m = copy(v);
        }
        if (rc) {
            json_object_put(res);
            return rc;
        }
        json_object_object_add(res, k, m);
    }
    *out = res;
    return TLR_OK;
}

/* ------------------------------------------------------------------ */
/* RFC 6902                                                            */
/* ------------------------------------------------------------------ */

/* Split a JSON pointer into unescaped tokens.  *toks owned (free each). */
static int pointer_split(const char *ptr, char ***toks, size_t *n)
{
    *toks = NULL;
    *n = 0;
    if (!*ptr)
        return TLR_OK;
    if (*ptr != '/')
        return TLR_E_PARSE;
    const char *p = ptr + 1;
    for (;;) {
        size_t len = strcspn(p, "/");
        char *t = tlr_malloc(len + 1), *w = t;
        for (size_t i = 0; i < len; i++) {
            if (p[i] == '~') {
                if (i + 1 < len && p[i + 1] == '0')
                    *w++ = '~';
                else if (i + 1 < len && p[i + 1] == '1')
                    *w++ = '/';
                else {
                    free(t);
                    for (size_t j = 0; j < *n; j++)
                        free((*toks)[j]);
                    free(*toks);
                    *toks = NULL;
                    *n = 0;
                    return TLR_E_PARSE;
                }
                i++;
            } else {
                *w++ = p[i];
            }
        }
        *w = 0;
        *toks = tlr_realloc(*toks, (*n + 1) * sizeof(char *));
        (*toks)[(*n)++] = t;
        if (!p[len])
            break;
        p += len + 1;
    }
    return TLR_OK;
}

static void toks_free(char **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(t[i]);
    free(t);
}

/* Array index token: digits without leading zeros, < len (or <= len when
 * inserting). */
static bool parse_index(const char *t, size_t len, bool insert, size_t *out)
{
    if (!*t || (t[0] == '0' && t[1]) || strspn(t, "0123456789") != strlen(t) || strlen(t) > 9)
        return false;
    size_t v = (size_t)strtoul(t, NULL, 10);
    if (insert ? v > len : v >= len)
        return false;
    *out = v;
    return true;
}

/* The container holding the pointer's last token; NULL if absent. */
static json_object *walk(json_object *doc, char **toks, size_t n)
{
    json_object *cur = doc;
    for (size_t i = 0; i + 1 < n; i++) {
        if (json_object_is_type(cur, json_type_object)) {
            if (!json_object_object_get_ex(cur, toks[i], &cur))
                return NULL;
        } else if (json_object_is_type(cur, json_type_array)) {
            size_t idx;
            if (!parse_index(toks[i], json_object_array_length(cur), false, &idx))
                return NULL;
            cur = json_object_array_get_idx(cur, idx);
        } else {
            return NULL;
        }
        if (!cur)
            return NULL;
    }
    return cur;
}

static json_object *ptr_get(json_object *doc, char **toks, size_t n, bool *found)
{
    *found = false;
    if (n == 0) {
        *found = true;
        return doc;
    }
    json_object *c = walk(doc, toks, n), *v = NULL;
    if (json_object_is_type(c, json_type_object)) {
        *found = json_object_object_get_ex(c, toks[n - 1], &v);
    } else if (json_object_is_type(c, json_type_array)) {
        size_t idx;
        if (parse_index(toks[n - 1], json_object_array_length(c), false, &idx)) {
            *found = true;
            v = json_object_array_get_idx(c, idx);
        }
    }
    return v;
}

/* json-c 0.16 has no insert: shift the tail up by one, then put. */
static void array_insert(json_object *arr, size_t idx, json_object *val)
{
    for (size_t i = json_object_array_length(arr); i > idx; i--) {
        json_object *prev = json_object_array_get_idx(arr, i - 1);
        json_object_array_put_idx(arr, i, json_object_get(prev));
    }
    json_object_array_put_idx(arr, idx, val);
}

/* Insert val (handed over) at the pointer; *doc may be replaced. */
static int ptr_add(json_object **doc, char **toks, size_t n, json_object *val, bool replace)
{
    if (n == 0) {
        json_object_put(*doc);
        *doc = val;
        return TLR_OK;
    }
    json_object *c = walk(*doc, toks, n);
    const char *last = toks[n - 1];
    if (json_object_is_type(c, json_type_object)) {
        if (replace && !json_object_object_get_ex(c, last, NULL))
            goto bad;
        json_object_object_add(c, last, val);
        return TLR_OK;
    }
    if (json_object_is_type(c, json_type_array)) {
        size_t len = json_object_array_length(c), idx;
        if (replace) {
            if (!parse_index(last, len, false, &idx))
                goto bad;
            json_object_array_put_idx(c, idx, val);
            return TLR_OK;
        }
        if (!strcmp(last, "-")) {
            json_object_array_add(c, val);
            return TLR_OK;
        }
        if (!parse_index(last, len, true, &idx))
            goto bad;
        if (idx == len)
            json_object_array_add(c, val);
        else
            array_insert(c, idx, val);
        return TLR_OK;
    }
bad:
    json_object_put(val);
    return TLR_E_NOTFOUND;
}

static int ptr_remove(json_object *doc, char **toks, size_t n)
{
    if (n == 0)
        return TLR_E_INVAL;
    json_object *c = walk(doc, toks, n);
    const char *last = toks[n - 1];
    if (json_object_is_type(c, json_type_object)) {
        if (!json_object_object_get_ex(c, last, NULL))
            return TLR_E_NOTFOUND;
        json_object_object_del(c, last);
        return TLR_OK;
    }
    if (json_object_is_type(c, json_type_array)) {
        size_t idx;
        if (!parse_index(last, json_object_array_length(c), false, &idx))
            return TLR_E_NOTFOUND;
        json_object_array_del_idx(c, idx, 1);
        return TLR_OK;
    }
    return TLR_E_NOTFOUND;
}

static int json_patch(json_object *doc, json_object *ops, json_object **out, ks_status *st)
{
    if (!json_object_is_type(ops, json_type_array))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "json patch must be an array of operations");
    json_object *res = copy(doc);
    int rc = TLR_OK;
    for (size_t i = 0; i < json_object_array_length(ops); i++) {
        json_object *op = json_object_array_get_idx(ops, i);
        const char *name = tlr_json_str(op, "op");
        const char *path = tlr_json_str(op, "path");
        if (!name || !path) {
            rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                               "json patch operation %zu: \"op\" and \"path\" (strings) are "
                               "required",
                               i);
            break;
        }
        char **toks = NULL, **ftoks = NULL;
        size_t nt = 0, nf = 0;
        if (pointer_split(path, &toks, &nt)) {
            rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                               "json patch operation %zu: invalid path \"%.200s\"", i, path);
            break;
        }
        json_object *value = NULL;
        bool has_value = json_object_object_get_ex(op, "value", &value);
        const char *from = tlr_json_str(op, "from");
        int r = TLR_OK;
        bool found;
        if (!strcmp(name, "add") || !strcmp(name, "replace")) {
            if (!has_value) {
                rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                                   "json patch operation %zu (%s): missing value", i, name);
            } else {
                r = ptr_add(&res, toks, nt, copy(value), name[0] == 'r');
            }
        } else if (!strcmp(name, "remove")) {
            r = ptr_remove(res, toks, nt);
        } else if (!strcmp(name, "test")) {
            json_object *cur = ptr_get(res, toks, nt, &found);
            if (!found || !json_object_equal(cur, value))
                rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                                   "the server rejected our request due to an error in our "
                                   "request: testing value %.200s failed: test failed",
                                   path);
        } else if (!strcmp(name, "move") || !strcmp(name, "copy")) {
            if (!from || pointer_split(from, &ftoks, &nf)) {
                rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                                   "json patch operation %zu (%s): invalid from", i, name);
            } else if (name[0] == 'm' && nf < nt && strncmp(path, from, strlen(from)) == 0 &&
                       path[strlen(from)] == '/') {
                rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                                   "json patch operation %zu: cannot move a value into itself",
                                   i);
            } else {
                json_object *v = copy(ptr_get(res, ftoks, nf, &found));
                if (!found) {
                    r = TLR_E_NOTFOUND;
                } else {
                    if (name[0] == 'm')
                        r = ptr_remove(res, ftoks, nf);
                    if (!r)
                        r = ptr_add(&res, toks, nt, v, false);
                    else
                        json_object_put(v);
                    v = NULL;
                }
                json_object_put(v);
            }
        } else {
            rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                               "json patch operation %zu: unknown op \"%.40s\"", i, name);
        }
        if (!rc && r)
            rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                               "the server rejected our request due to an error in our request: "
                               "json patch operation %zu (%s): path \"%.200s\" does not exist",
                               i, name, path);
        toks_free(toks, nt);
        toks_free(ftoks, nf);
        if (rc)
            break;
    }
    if (rc) {
        json_object_put(res);
        return rc;
    }
    *out = res;
    return TLR_OK;
}

int ks_patch_apply(ks_patch_type type, ks_kind_id kind, json_object *doc, const char *patch,
                   size_t len, json_object **out, ks_status *st)
{
    if (len > KS_PATCH_MAX)
        return ks_status_set(st, TLR_E_TOOBIG, 413, "RequestEntityTooLarge",
                             "the patch is larger than %u bytes", KS_PATCH_MAX);
    const ks_kind *k = ks_kind_get(kind);
    if (type == KS_PATCH_STRATEGIC && k && !strncmp(k->group, "karpenter.", 10))
        return ks_status_set(st, TLR_E_UNIMPLEMENTED, 415, "UnsupportedMediaType",
                             "the body of the request was in an unknown format - accepted "
                             "media types include: application/json-patch+json, "
                             "application/merge-patch+json, application/apply-patch+yaml");
    json_object *p = NULL;
    char err[200];
    if (tlr_json_parse(patch ? patch : "", patch ? len : 0, KS_PATCH_MAX, &p, err, sizeof(err)))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest", "error decoding patch: %s",
                             err);
    int rc = TLR_OK;
    json_object *res = NULL;
    switch (type) {
    case KS_PATCH_MERGE:
    case KS_PATCH_STRATEGIC:
        if (!json_object_is_type(p, json_type_object)) {
            rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                               "error decoding patch: a merge patch must be a JSON object");
            break;
        }
        if (type == KS_PATCH_MERGE)
            res = merge(doc, p);
        else
            rc = smp_obj(doc, p, NULL, &res, st);
        if (!rc && !res)
            rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                               "the patch deletes the whole object");
        break;
    case KS_PATCH_JSON:
        rc = json_patch(doc, p, &res, st);
        break;
    default:
        rc = ks_status_set(st, TLR_E_INVAL, 415, "UnsupportedMediaType", "unknown patch type");
    }
    json_object_put(p);
    if (rc)
        return rc;
    *out = res;
    return TLR_OK;
}
