/* yaml.c - YAML streams to json-c values, typed the way kubectl types them.
 *
 * libyaml's event parser drives a small explicit stack (no recursion, so
 * deep input cannot overflow the C stack): a scalar or alias is a finished
 * value, a sequence or mapping start pushes a frame, its end pops the
 * frame and hands the container to the frame below.  A mapping frame
 * alternates between waiting for a key and holding the key until its
 * value arrives.
 *
 * Anchors are registered when their node is complete, so an alias can
 * never refer to a node that contains it (libyaml reports "&a [*a]" as an
 * unknown alias here, and so do we).  An alias shares the anchored
 * json_object by reference count instead of copying it, and each node
 * remembers how many nodes it stands for with every alias expanded.  The
 * sum of those sizes over all aliases is capped: a "billion laughs"
 * document (each level aliasing the previous one ten times) hits the cap
 * after a few levels, having allocated almost nothing.
 *
 * Scalar typing follows go-yaml v2's resolve() (what sigs.k8s.io/yaml and
 * so kubectl use), then encoding/json's view of the result; see tlr_yaml.h.
 */
#include "tlr_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

typedef struct anchor {
    char *name;          /* owned */
    json_object *val;    /* one reference owned (NULL for null) */
    size_t nodes;        /* nodes it stands for, aliases expanded */
} anchor;

typedef struct frame {
    json_object *obj;    /* owned: the container being built */
    bool is_map;
    bool have_key;       /* a mapping holds a key waiting for its value */
    bool key_is_merge;   /* that key is the plain scalar "<<" */
    char *key;           /* owned when have_key */
    char *anchor;        /* owned; registered when the container ends */
    size_t nodes;
    yaml_mark_t mark;    /* where the container starts, for messages */
} frame;

typedef struct ystate {
    tlr_yaml_limits lim;
    frame *stack;
    size_t depth, cap;
    anchor *anchors;
    size_t nanchors, acap;
    size_t alias_nodes;
    json_object *docs;    /* owned: the result */
    json_object *root;    /* owned: the current document's value */
    bool have_root;
    char *err;
    size_t errlen;
} ystate;

static int fail(ystate *st, int rc, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(ystate *st, int rc, yaml_mark_t mark, const char *fmt, ...)
{
    if (st->err != NULL && st->errlen > 0) {
        int n = snprintf(st->err, st->errlen, "line %zu, column %zu: ", mark.line + 1,
                         mark.column + 1);
        if (n >= 0 && (size_t)n < st->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(st->err + n, st->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

/* ---- scalar typing (go-yaml v2 resolve) -------------------------------- */

typedef enum rkind { R_STR, R_NULL, R_BOOL, R_INT, R_FLOAT, R_NONFINITE } rkind;

static bool in_list(const char *s, const char *const *list)
{
    for (; *list != NULL; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static const char *const null_words[] = { "~", "null", "Null", "NULL", NULL };
static const char *const true_words[] = { "y", "Y", "yes", "Yes", "YES", "true", "True",
                                          "TRUE", "on", "On", "ON", NULL };
static const char *const false_words[] = { "n", "N", "no", "No", "NO", "false", "False",
                                           "FALSE", "off", "Off", "OFF", NULL };
static const char *const nonfinite_words[] = { ".nan", ".NaN", ".NAN", ".inf", ".Inf",
                                               ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
                                               "-.Inf", "-.INF", NULL };

static int digit_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    return 99;
}

/* Go's strconv.ParseUint(s, 0, 64) for s without sign: base prefixes
 * 0x 0o 0b, a leading 0 means octal. */
static bool go_parse_uint(const char *s, uint64_t *out)
{
    int base = 10;
    uint64_t v = 0;

    if (s[0] == '0' && s[1] != '\0') {
        if (s[1] == 'x' || s[1] == 'X') {
            base = 16;
            s += 2;
        } else if (s[1] == 'o' || s[1] == 'O') {
            base = 8;
            s += 2;
        } else if (s[1] == 'b' || s[1] == 'B') {
            base = 2;
            s += 2;
        } else {
            base = 8;
            s += 1;
        }
    }
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++) {
        int d = digit_val(*s);
        if (d >= base)
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = v;
    return true;
}

/* Go's strconv.ParseInt(s, 0, 64). */
static bool go_parse_int(const char *s, int64_t *out)
{
    bool neg = false;
    uint64_t u;

    if (*s == '+' || *s == '-') {
        neg = *s == '-';
        s++;
    }
    if (!go_parse_uint(s, &u))
        return false;
    if (neg) {
        if (u > (uint64_t)INT64_MAX + 1)
            return false;
        *out = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
    } else {
        if (u > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)u;
    }
    return true;
}

/* go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_style_float(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (*s == '.') {
        s++;
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    } else {
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
        if (*s == '.') {
            s++;
            while (*s >= '0' && *s <= '9')
                s++;
        }
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    double d;

    errno = 0;
    d = strtod(s, &end);
    if (*end != '\0' || (errno == ERANGE && isinf(d)))
        return false;   /* Go's ParseFloat fails on overflow */
    *out = d;
    return true;
}

typedef struct resolved {
    rkind kind;
    bool b;
    int64_t i;
    uint64_t u;
    bool is_uint;
    double d;
} resolved;

/* Type the plain scalar s (NUL-terminated) as go-yaml v2 would. */
static void resolve_plain(const char *s, resolved *r)
{
    char c = s[0];

    memset(r, 0, sizeof(*r));
    r->kind = R_STR;
    if (c == '\0' || in_list(s, null_words)) {
        r->kind = R_NULL;
        return;
    }
    if (in_list(s, true_words) || in_list(s, false_words)) {
        r->kind = R_BOOL;
        r->b = in_list(s, true_words);
        return;
    }
    if (in_list(s, nonfinite_words)) {
        r->kind = R_NONFINITE;
        return;
    }
    if (c == '.') {
        if (yaml_style_float(s) && parse_double(s, &r->d))
            r->kind = R_FLOAT;
        return;
    }
    if (!(c == '+' || c == '-' || (c >= '0' && c <= '9')))
        return;

    size_t n = strlen(s);
    char *plain = tlr_malloc(n + 1), *p = plain;
    for (const char *q = s; *q != '\0'; q++)
        if (*q != '_')
            *p++ = *q;
    *p = '\0';
    if (go_parse_int(plain, &r->i)) {
        r->kind = R_INT;
    } else if (plain[0] != '+' && plain[0] != '-' && go_parse_uint(plain, &r->u)) {
        r->kind = R_INT;
        r->is_uint = true;
    } else if (yaml_style_float(plain) && parse_double(plain, &r->d)) {
        r->kind = R_FLOAT;
    }
    free(plain);
}

/* A JSON number for d as Go's encoding/json prints it: integral values
 * within int64 are integers, others keep their shortest round-trip text
 * (so 0.1 stays "0.1" and a quantity read from it is exactly 100m). */
static json_object *new_number(double d)
{
    char buf[40];

    if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
        return json_object_new_int64((int64_t)d);
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    return json_object_new_double_s(d, buf);
}

#define TAG_PREFIX "tag:yaml.org,2002:"

/* The json value of a scalar event: *out is new (NULL for null). */
static int scalar_value(ystate *st, const yaml_event_t *ev, json_object **out)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    const char *want = NULL;   /* explicit core tag, without prefix */
    resolved r;

    if (strlen(s) != len)
        return fail(st, TLR_E_PARSE, ev->start_mark, "NUL character in a scalar");
    if (tag != NULL && strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0)
        want = tag + strlen(TAG_PREFIX);
    if (want != NULL && (strcmp(want, "str") == 0 || strcmp(want, "binary") == 0)) {
        *out = json_object_new_string_len(s, (int)len);
        return TLR_OK;
    }
    bool typed = want != NULL && (strcmp(want, "int") == 0 || strcmp(want, "float") == 0 ||
                                  strcmp(want, "bool") == 0 || strcmp(want, "null") == 0);
    if (!typed && (tag != NULL || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)) {
        *out = json_object_new_string_len(s, (int)len);
        return TLR_OK;
    }
    resolve_plain(s, &r);
    if (typed) {
        bool ok = (strcmp(want, "int") == 0 && r.kind == R_INT) ||
                  (strcmp(want, "float") == 0 && (r.kind == R_INT || r.kind == R_FLOAT ||
                                                  r.kind == R_NONFINITE)) ||
                  (strcmp(want, "bool") == 0 && r.kind == R_BOOL) ||
                  (strcmp(want, "null") == 0 && r.kind == R_NULL);
        if (!ok)
            return fail(st, TLR_E_PARSE, ev->start_mark, "cannot read \"%.40s\" as !!%s", s,
                        want);
    }
    switch (r.kind) {
    case R_NULL:
        *out = NULL;
        break;
    case R_BOOL:
        *out = json_object_new_boolean(r.b);
        break;
    case R_INT:
        *out = r.is_uint ? json_object_new_uint64(r.u) : json_object_new_int64(r.i);
        break;
    case R_FLOAT:
        *out = new_number(r.d);
        break;
    case R_NONFINITE:
        return fail(st, TLR_E_PARSE, ev->start_mark,
                    "\"%.40s\" is not a number JSON can hold", s);
    case R_STR:
        *out = json_object_new_string_len(s, (int)len);
        break;
    }
    return TLR_OK;
}

/* ---- building ---------------------------------------------------------- */

static void add_anchor(ystate *st, const char *name, json_object *val, size_t nodes)
{
    TLR_GROW(st->anchors, st->acap, st->nanchors + 1);
    st->anchors[st->nanchors++] = (anchor){ tlr_strdup(name), json_object_get(val), nodes };
}

static const anchor *find_anchor(const ystate *st, const char *name)
{
    for (size_t i = st->nanchors; i-- > 0;)   /* a redefined anchor: the latest */
        if (strcmp(st->anchors[i].name, name) == 0)
            return &st->anchors[i];
    return NULL;
}

/* Merge the members of src (a mapping, or a sequence of mappings) that dst
 * does not have yet into dst. */
static int merge_into(ystate *st, json_object *dst, json_object *src, yaml_mark_t mark)
{
    if (json_object_is_type(src, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(src); i++) {
            json_object *m = json_object_array_get_idx(src, i);
            if (!json_object_is_type(m, json_type_object))
                return fail(st, TLR_E_PARSE, mark,
                            "merge key (<<) needs a mapping or a sequence of mappings");
            int rc = merge_into(st, dst, m, mark);
            if (rc != TLR_OK)
                return rc;
        }
        return TLR_OK;
    }
    if (!json_object_is_type(src, json_type_object))
        return fail(st, TLR_E_PARSE, mark,
                    "merge key (<<) needs a mapping or a sequence of mappings");
    json_object_object_foreach(src, k, v) {
        if (!json_object_object_get_ex(dst, k, NULL))
            json_object_object_add(dst, k, json_object_get(v));
    }
    return TLR_OK;
}

/* Hand the finished value v (handed over; NULL is JSON null) standing for
 * nodes nodes to whatever is being built.  merge_key: v is the plain
 * scalar "<<". */
static int deliver(ystate *st, json_object *v, size_t nodes, bool merge_key, yaml_mark_t mark)
{
    int rc = TLR_OK;

    if (st->depth == 0) {
        json_object_put(st->root);
        st->root = v;
        st->have_root = true;
        return TLR_OK;
    }
    frame *f = &st->stack[st->depth - 1];
    f->nodes += nodes;
    if (!f->is_map) {
        json_object_array_add(f->obj, v);
        return TLR_OK;
    }
    if (!f->have_key) {
        if (v != NULL && (json_object_is_type(v, json_type_object) ||
                          json_object_is_type(v, json_type_array))) {
            rc = fail(st, TLR_E_PARSE, mark, "a mapping key must be a scalar");
        } else {
            f->key = tlr_strdup(v == NULL ? "null" : json_object_get_string(v));
            f->have_key = true;
            f->key_is_merge = merge_key;
        }
        json_object_put(v);
        return rc;
    }
    if (f->key_is_merge) {
        rc = merge_into(st, f->obj, v, mark);
        json_object_put(v);
    } else {
        json_object_object_add(f->obj, f->key, v);
    }
    free(f->key);
    f->key = NULL;
    f->have_key = false;
    f->key_is_merge = false;
    return rc;
}

static int push(ystate *st, bool is_map, const char *anchor_name, yaml_mark_t mark)
{
    if (st->depth >= (size_t)st->lim.max_depth)
        return fail(st, TLR_E_TOOBIG, mark, "nested deeper than %d levels", st->lim.max_depth);
    TLR_GROW(st->stack, st->cap, st->depth + 1);
    st->stack[st->depth++] = (frame){
        .obj = is_map ? json_object_new_object() : json_object_new_array(),
        .is_map = is_map,
        .anchor = tlr_strdup(anchor_name),
        .nodes = 1,
        .mark = mark,
    };
    return TLR_OK;
}

static int pop(ystate *st)
{
    frame f = st->stack[--st->depth];

    free(f.key);   /* a dangling key cannot happen with libyaml; be safe */
    if (f.anchor != NULL) {
        add_anchor(st, f.anchor, f.obj, f.nodes);
        free(f.anchor);
    }
    return deliver(st, f.obj, f.nodes, false, f.mark);
}

static void clear_stack(ystate *st)
{
    while (st->depth > 0) {
        frame *f = &st->stack[--st->depth];
        json_object_put(f->obj);
        free(f->key);
        free(f->anchor);
    }
}

static void clear_anchors(ystate *st)
{
    for (size_t i = 0; i < st->nanchors; i++) {
        free(st->anchors[i].name);
        json_object_put(st->anchors[i].val);
    }
    st->nanchors = 0;
}

static int on_event(ystate *st, const yaml_event_t *ev)
{
    int rc = TLR_OK;

    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        st->have_root = false;
        st->root = NULL;
        break;
    case YAML_DOCUMENT_END_EVENT:
        /* Anchors do not cross documents. */
        clear_anchors(st);
        if (st->have_root && st->root != NULL) {
            if (json_object_array_length(st->docs) >= st->lim.max_docs)
                return fail(st, TLR_E_TOOBIG, ev->start_mark, "more than %zu documents",
                            st->lim.max_docs);
            json_object_array_add(st->docs, st->root);
        }
        st->root = NULL;
        st->have_root = false;
        break;
    case YAML_SCALAR_EVENT: {
        json_object *v = NULL;
        if ((rc = scalar_value(st, ev, &v)) != TLR_OK)
            return rc;
        if (ev->data.scalar.anchor != NULL)
            add_anchor(st, (const char *)ev->data.scalar.anchor, v, 1);
        bool merge = ev->data.scalar.tag == NULL &&
                     ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                     strcmp((const char *)ev->data.scalar.value, "<<") == 0;
        rc = deliver(st, v, 1, merge, ev->start_mark);
        break;
    }
    case YAML_ALIAS_EVENT: {
        const anchor *a = find_anchor(st, (const char *)ev->data.alias.anchor);
        if (a == NULL)
            return fail(st, TLR_E_PARSE, ev->start_mark, "unknown anchor \"%.40s\"",
                        (const char *)ev->data.alias.anchor);
        if (a->nodes > st->lim.max_alias_nodes - st->alias_nodes)
            return fail(st, TLR_E_TOOBIG, ev->start_mark,
                        "aliases expand to more than %zu nodes", st->lim.max_alias_nodes);
        st->alias_nodes += a->nodes;
        rc = deliver(st, json_object_get(a->val), a->nodes, false, ev->start_mark);
        break;
    }
    case YAML_SEQUENCE_START_EVENT:
        rc = push(st, false, (const char *)ev->data.sequence_start.anchor, ev->start_mark);
        break;
    case YAML_MAPPING_START_EVENT:
        rc = push(st, true, (const char *)ev->data.mapping_start.anchor, ev->start_mark);
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        rc = pop(st);
        break;
    default:
        break;
    }
    return rc;
}

int tlr_yaml_parse(const char *buf, size_t len, const tlr_yaml_limits *lim,
                   json_object **docs, char *err, size_t errlen)
{
    yaml_parser_t parser;
    ystate st = { .err = err, .errlen = errlen };
    bool done = false;
    int rc = TLR_OK;

    if (buf == NULL || docs == NULL)
        return TLR_E_INVAL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (lim != NULL)
        st.lim = *lim;
    if (st.lim.max_bytes == 0)
        st.lim.max_bytes = TLR_YAML_DEFAULT_MAX_BYTES;
    if (st.lim.max_depth <= 0)
        st.lim.max_depth = TLR_YAML_DEFAULT_MAX_DEPTH;
    if (st.lim.max_docs == 0)
        st.lim.max_docs = TLR_YAML_DEFAULT_MAX_DOCS;
    if (st.lim.max_alias_nodes == 0)
        st.lim.max_alias_nodes = TLR_YAML_DEFAULT_MAX_ALIAS_NODES;
    if (len > st.lim.max_bytes) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "input is %zu bytes, more than the limit of %zu", len,
                     st.lim.max_bytes);
        return TLR_E_TOOBIG;
    }
    const char *nul = memchr(buf, '\0', len);
    if (nul != NULL) {
        yaml_mark_t m = { .index = (size_t)(nul - buf) };
        for (const char *p = buf; p < nul; p++) {
            if (*p == '\n') {
                m.line++;
                m.column = 0;
            } else {
                m.column++;
            }
        }
        return fail(&st, TLR_E_PARSE, m, "NUL byte in input");
    }
    if (!yaml_parser_initialize(&parser))
        return TLR_E_NOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    st.docs = json_object_new_array();
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            const char *ctx = parser.context;
            yaml_mark_t m = parser.problem_mark;
            rc = fail(&st, parser.error == YAML_MEMORY_ERROR ? TLR_E_NOMEM : TLR_E_PARSE, m,
                      "%s%s%s", parser.problem ? parser.problem : "malformed YAML",
                      ctx ? " " : "", ctx ? ctx : "");
            break;
        }
        rc = on_event(&st, &ev);
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (rc != TLR_OK)
            break;
    }
    yaml_parser_delete(&parser);
    clear_stack(&st);
    clear_anchors(&st);
    free(st.stack);
    free(st.anchors);
    json_object_put(st.root);
    if (rc == TLR_OK) {
        *docs = st.docs;
        if (err != NULL && errlen > 0)
            err[0] = '\0';
    } else {
        json_object_put(st.docs);
    }
    return rc;
}
