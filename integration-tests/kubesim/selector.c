/* selector.c - label and field selectors, as the API's query strings and
 * LabelSelector objects spell them.
 *
 * Label grammar (k8s.io/apimachinery/pkg/labels): requirements separated
 * by commas, each one of
 *     key   !key   key=v   key==v   key!=v   key in (a,b)   key notin (a,b)
 *     key>3   key<3
 * `!=` and `notin` also match objects without the key, as upstream.
 * Field selectors take =, == and != on a fixed set of fields per kind.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ks_store.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

typedef enum sel_op { OP_EQ, OP_NEQ, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOTEXISTS, OP_GT, OP_LT } sel_op;

typedef struct sel_req {
    char *key;
    sel_op op;
    char **vals;
    size_t nvals;
} sel_req;

struct ks_selector {
    bool fields;     /* a field selector: keys are field paths */
    bool none;       /* selects nothing */
    sel_req *reqs;
    size_t n;
};

/* Longest selector text we parse; more is a 400. */
#define SEL_MAX 8192
#define SEL_MAX_VALUES 256

void ks_selector_free(ks_selector *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->reqs[i].key);
        for (size_t v = 0; v < s->reqs[i].nvals; v++)
            free(s->reqs[i].vals[v]);
        free(s->reqs[i].vals);
    }
    free(s->reqs);
    free(s);
}

bool ks_selector_empty(const ks_selector *s)
{
    return !s || (!s->none && s->n == 0);
}

static sel_req *add_req(ks_selector *s, const char *key, size_t klen, sel_op op)
{
    s->reqs = tlr_realloc(s->reqs, (s->n + 1) * sizeof(sel_req));
    sel_req *r = &s->reqs[s->n++];
    *r = (sel_req){ .key = tlr_strndup(key, klen), .op = op };
    return r;
}

static void add_val(sel_req *r, const char *v, size_t len)
{
    r->vals = tlr_realloc(r->vals, (r->nvals + 1) * sizeof(char *));
    r->vals[r->nvals++] = tlr_strndup(v, len);
}

static bool key_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.' || c == '/';
}

static bool val_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

static void skip_ws(const char **p)
{
    while (**p == ' ' || **p == '\t')
        (*p)++;
}

static int bad(ks_status *st, const char *what, const char *text)
{
    return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                         "unable to parse requirement: %s in selector \"%.200s\"", what, text);
}

/* Key: [prefix/]name, name 1..63 chars, prefix a DNS subdomain. */
static bool key_valid(const char *k, size_t len)
{
    if (len == 0 || len > 316)
        return false;
    const char *slash = memchr(k, '/', len);
    size_t nlen = slash ? len - (size_t)(slash - k) - 1 : len;
    if (slash && (slash == k || memchr(slash + 1, '/', nlen)))
        return false;
    if (nlen == 0 || nlen > 63)
        return false;
    const char *name = slash ? slash + 1 : k;
    return isalnum((unsigned char)name[0]) && isalnum((unsigned char)name[nlen - 1]);
}

static int parse_values_set(const char **pp, sel_req *r, const char *text, ks_status *st)
{
    const char *p = *pp;
    skip_ws(&p);
    if (*p != '(')
        return bad(st, "expected '('", text);
    p++;
    for (;;) {
        skip_ws(&p);
        const char *v = p;
        while (val_char(*p))
            p++;
        if (r->nvals >= SEL_MAX_VALUES)
            return bad(st, "too many values", text);
        add_val(r, v, (size_t)(p - v));
        skip_ws(&p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ')') {
            p++;
            break;
        }
        return bad(st, "expected ',' or ')'", text);
    }
    *pp = p;
    return TLR_OK;
}

int ks_label_selector_parse(const char *text, ks_selector **out, ks_status *st)
{
    if (text && strlen(text) > SEL_MAX)
        return bad(st, "selector too long", "");
    ks_selector *s = tlr_calloc(1, sizeof(*s));
    const char *p = text ? text : "";
    int rc = TLR_OK;
    skip_ws(&p);
    while (*p) {
        bool neg = false;
        if (*p == '!') {
            neg = true;
            p++;
            skip_ws(&p);
        }
        const char *k = p;
        while (key_char(*p))
            p++;
        size_t klen = (size_t)(p - k);
        if (!key_valid(k, klen)) {
            rc = bad(st, "invalid label key", text);
            goto out;
        }
        skip_ws(&p);
        if (neg) {
            add_req(s, k, klen, OP_NOTEXISTS);
        } else if (*p == ',' || !*p) {
            add_req(s, k, klen, OP_EXISTS);
        } else if (!strncmp(p, "==", 2) || *p == '=' || !strncmp(p, "!=", 2) || *p == '>' ||
                   *p == '<') {
            sel_op op = OP_EQ;
            if (!strncmp(p, "==", 2) || !strncmp(p, "!=", 2)) {
                op = *p == '!' ? OP_NEQ : OP_EQ;
                p += 2;
            } else {
                op = *p == '=' ? OP_EQ : (*p == '>' ? OP_GT : OP_LT);
                p++;
            }
            skip_ws(&p);
            const char *v = p;
            while (val_char(*p))
                p++;
            size_t vlen = (size_t)(p - v);
            if (vlen > 63) {
                rc = bad(st, "label value too long", text);
                goto out;
            }
            if ((op == OP_GT || op == OP_LT) && vlen == 0) {
                rc = bad(st, "a number is required", text);
                goto out;
            }
            sel_req *r = add_req(s, k, klen, op);
            add_val(r, v, vlen);
        } else if (!strncmp(p, "in", 2) && (p[2] == ' ' || p[2] == '(')) {
            p += 2;
            sel_req *r = add_req(s, k, klen, OP_IN);
            if ((rc = parse_values_set(&p, r, text, st)))
                goto out;
        } else if (!strncmp(p, "notin", 5) && (p[5] == ' ' || p[5] == '(')) {
            p += 5;
            sel_req *r = add_req(s, k, klen, OP_NOTIN);
            if ((rc = parse_values_set(&p, r, text, st)))
                goto out;
        } else {
            rc = bad(st, "unexpected character after key", text);
            goto out;
        }
        skip_ws(&p);
        if (*p == ',') {
            p++;
            skip_ws(&p);
            if (!*p) {
                rc = bad(st, "trailing ','", text);
                goto out;
            }
        } else if (*p) {
            rc = bad(st, "expected ','", text);
            goto out;
        }
    }
out:
    if (rc) {
        ks_selector_free(s);
        return rc;
    }
    *out = s;
    return TLR_OK;
}

static const char *const pod_fields[] = { "spec.nodeName", "status.phase", NULL };

int ks_field_selector_parse(ks_kind_id kind, const char *text, ks_selector **out,
                            ks_status *st)
{
    if (text && strlen(text) > SEL_MAX)
        return bad(st, "selector too long", "");
    ks_selector *s = tlr_calloc(1, sizeof(*s));
    s->fields = true;
    const char *p = text ? text : "";
    int rc = TLR_OK;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *op = NULL;
        size_t oplen = 0;
        for (size_t i = 0; i < len; i++) {
            if (p[i] == '!' && i + 1 < len && p[i + 1] == '=') {
                op = p + i;
                oplen = 2;
                break;
            }
            if (p[i] == '=') {
                op = p + i;
                oplen = i + 1 < len && p[i + 1] == '=' ? 2 : 1;
                break;
            }
        }
        if (!op) {
            rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                               "invalid selector: '%.200s'; can't understand '%.*s'", text,
                               (int)(len > 200 ? 200 : len), p);
            goto out;
        }
        size_t klen = (size_t)(op - p);
        while (klen && p[klen - 1] == ' ')
            klen--;
        const char *k = p;
        while (klen && *k == ' ') {
            k++;
            klen--;
        }
        bool ok = (klen == 13 && !strncmp(k, "metadata.name", 13)) ||
                  (klen == 18 && !strncmp(k, "metadata.namespace", 18));
        for (int i = 0; !ok && kind == KS_POD && pod_fields[i]; i++)
            ok = strlen(pod_fields[i]) == klen && !strncmp(k, pod_fields[i], klen);
        if (!ok) {
            rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                               "field label not supported: %.*s", (int)(klen > 200 ? 200 : klen),
                               k);
            goto out;
        }
        sel_req *r = add_req(s, k, klen, op[0] == '!' ? OP_NEQ : OP_EQ);
        const char *v = op + oplen;
        size_t vlen = len - (size_t)(v - p);
        add_val(r, v, vlen);
        p += len;
        if (*p == ',')
            p++;
    }
out:
    if (rc) {
        ks_selector_free(s);
        return rc;
    }
    *out = s;
    return TLR_OK;
}

int ks_label_selector_from_json(json_object *sel, bool null_selects_all, ks_selector **out,
                                ks_status *st)
{
    ks_selector *s = tlr_calloc(1, sizeof(*s));
    int rc = TLR_OK;
    if (!sel) {
        s->none = !null_selects_all;
        goto out;
    }
    if (!json_object_is_type(sel, json_type_object)) {
        rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid", "selector: must be an object");
        goto out;
    }
    json_object *ml = json_object_object_get(sel, "matchLabels");
    if (ml && json_object_is_type(ml, json_type_object)) {
        json_object_object_foreach(ml, k, v) {
            if (!json_object_is_type(v, json_type_string)) {
                rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                                   "selector.matchLabels.%s: must be a string", k);
                goto out;
            }
            sel_req *r = add_req(s, k, strlen(k), OP_EQ);
            add_val(r, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        }
    }
    json_object *me = json_object_object_get(sel, "matchExpressions");
    for (size_t i = 0; me && json_object_is_type(me, json_type_array) &&
                       i < json_object_array_length(me);
         i++) {
        json_object *e = json_object_array_get_idx(me, i);
        const char *key = tlr_json_str(e, "key");
        const char *op = tlr_json_str(e, "operator");
        sel_op o;
        if (!key || !op) {
            rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                               "selector.matchExpressions[%zu]: key and operator required", i);
            goto out;
        }
        if (!strcmp(op, "In"))
            o = OP_IN;
        else if (!strcmp(op, "NotIn"))
            o = OP_NOTIN;
        else if (!strcmp(op, "Exists"))
            o = OP_EXISTS;
        else if (!strcmp(op, "DoesNotExist"))
            o = OP_NOTEXISTS;
        else {
            rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                               "selector.matchExpressions[%zu].operator: Invalid value: \"%s\"",
                               i, op);
            goto out;
        }
        sel_req *r = add_req(s, key, strlen(key), o);
        json_object *vals = tlr_json_arr(e, "values");
        for (size_t v = 0; vals && v < json_object_array_length(vals); v++) {
            const char *sv = json_object_get_string(json_object_array_get_idx(vals, v));
            add_val(r, sv ? sv : "", sv ? strlen(sv) : 0);
        }
    }
out:
    if (rc) {
        ks_selector_free(s);
        return rc;
    }
    *out = s;
    return TLR_OK;
}

typedef const char *(*lookup_fn)(const void *src, const char *key);

static bool req_matches(const sel_req *r, const char *v)
{
    switch (r->op) {
    case OP_EXISTS: return v != NULL;
    case OP_NOTEXISTS: return v == NULL;
    case OP_EQ: return v && !strcmp(v, r->vals[0]);
    case OP_NEQ: return !v || strcmp(v, r->vals[0]);
    case OP_IN:
    case OP_NOTIN: {
        bool in = false;
        for (size_t i = 0; v && i < r->nvals && !in; i++)
            in = !strcmp(v, r->vals[i]);
        return r->op == OP_IN ? in : !in;
    }
    case OP_GT:
    case OP_LT: {
        if (!v)
            return false;
        char *e1, *e2;
        long long a = strtoll(v, &e1, 10), b = strtoll(r->vals[0], &e2, 10);
        if (*e1 || *e2 || !*v)
            return false;
        return r->op == OP_GT ? a > b : a < b;
    }
    }
    return false;
}

static bool matches(const ks_selector *s, lookup_fn fn, const void *src)
{
    if (!s)
        return true;
    if (s->none)
        return false;
    for (size_t i = 0; i < s->n; i++)
        if (!req_matches(&s->reqs[i], fn(src, s->reqs[i].key)))
            return false;
    return true;
}

static const char *obj_field(const void *src, const char *key)
{
    const ks_obj *o = src;
    if (!strcmp(key, "metadata.name"))
        return ks_obj_name(o);
    if (!strcmp(key, "metadata.namespace"))
        return ks_obj_namespace(o);
    if (!strcmp(key, "spec.nodeName"))
        return ks_obj_node_name(o);
    if (!strcmp(key, "status.phase"))
        return ks_obj_phase(o);
    return "";
}

static const char *obj_label(const void *src, const char *key)
{
    return ks_obj_label(src, key);
}

static const char *json_label(const void *src, const char *key)
{
    json_object *v = src ? json_object_object_get((json_object *)src, key) : NULL;
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

bool ks_selector_matches_obj(const ks_selector *s, const ks_obj *o)
{
    return matches(s, s && s->fields ? obj_field : obj_label, o);
}

bool ks_selector_matches_labels(const ks_selector *s, json_object *labels)
{
    if (labels && !json_object_is_type(labels, json_type_object))
        labels = NULL;
    return matches(s, json_label, labels);
}
