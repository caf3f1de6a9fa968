/* conf.c - settings from defaults, a YAML file, the environment and flags.
 *
 * One loader, four sources, one text parser.  tlr_conf_load works in
 * stages so that each source overrides the one before it:
 *
 *   1. scan argv once without touching cfg: find -h/--help/--version,
 *      unknown flags and missing values, and remember each (setting, text)
 *      pair in order.  Help and version win over any error, so
 *      `prog --bad --help` still prints help.
 *   2. defaults: every field is set from its default text, or zeroed.
 *   3. the file, whose path is known only now (flag > env > default).
 *   4. environment variables.
 *   5. the flags remembered in step 1, in command-line order.
 *
 * Every stage goes through apply_text(), which parses into a temporary and
 * only then replaces (and frees) the field, so a field holds exactly one
 * allocation whatever the number of sources that set it.  On any error the
 * table's strings are freed: the caller sees either a complete config or a
 * message.
 *
 * Messages name the setting by its flag and the source it came from, so a
 * user can find the bad value whether it was typed, exported or written in
 * a file.  Values are quoted and clipped; secrets are never quoted (they are
 * strings, which cannot fail to parse, and NUL bytes are reported without
 * the value).
 */
#include "tlr_conf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"

#define CONF_FILE_MAX  (1024 * 1024)  /* a settings file is small; cap it */
#define HELP_WIDTH     80
#define HELP_COL_MAX   32             /* longer flag columns get their own line */

#define FIELD(cfg, s, T) ((T *)(void *)((char *)(cfg) + (s)->offset))
#define CFIELD(cfg, s, T) ((const T *)(const void *)((const char *)(cfg) + (s)->offset))

/* Where a value came from, for messages. */
typedef struct origin {
    const char *kind;    /* "flag", "env", "file", "default" */
    const char *where;   /* env var name or file path; NULL otherwise */
    size_t      line;    /* file line, 1-based; 0 = none */
} origin;

/* A flag seen on the command line, applied after the file and env. */
typedef struct flag_val {
    const tlr_setting *s;
    const char        *text;   /* borrowed from argv or a literal */
} flag_val;

typedef struct scan {
    flag_val *vals;            /* owned */
    size_t    nvals;
    bool     *positional;      /* owned; per argv index */
    int       npos;
    bool      help, version;
} scan;

/* The --config flag every program has when its table declares none. */
static const tlr_setting builtin_config = {
    .name = "config", .type = TLR_SET_CONFIG,
    .help = "read settings from FILE (YAML or JSON)",
};

static void set_err(tlr_conf_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_err(tlr_conf_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->err, sizeof(res->err), fmt, ap);
    va_end(ap);
}

static void origin_text(const origin *o, char *buf, size_t len)
{
    if (o->line)
        snprintf(buf, len, "%s %s:%zu", o->kind, o->where, o->line);
    else if (o->where)
        snprintf(buf, len, "%s %s", o->kind, o->where);
    else
        snprintf(buf, len, "%s", o->kind);
}

static int value_err(tlr_conf_result *res, const tlr_setting *s, const origin *o,
                     int rc, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* "--name: <detail> (from <origin>)"; returns rc. */
static int value_err(tlr_conf_result *res, const tlr_setting *s, const origin *o,
                     int rc, const char *fmt, ...)
{
    char detail[128], from[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    origin_text(o, from, sizeof(from));
    set_err(res, "--%s: %s (from %s)", s->name, detail, from);
    return rc;
}

static const tlr_setting *find_setting(const tlr_setting *table, size_t n,
                                       const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(table[i].name) == len && !memcmp(table[i].name, name, len))
            return &table[i];
    return NULL;
}

static const tlr_setting *find_config(const tlr_setting *table, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (table[i].type == TLR_SET_CONFIG)
            return &table[i];
    return NULL;
}

static const char *env_get(const char *const *envp, const char *name)
{
    if (!envp || !name)
        return NULL;
    size_t len = strlen(name);
    for (; *envp; envp++)
        if (!strncmp(*envp, name, len) && (*envp)[len] == '=')
            return *envp + len + 1;
    return NULL;
}

/* ---- parsing one value ------------------------------------------------ */

static int parse_bool(const char *t, bool *out)
{
    static const char *const yes[] = { "true", "yes", "on", "1", "t", "y" };
    static const char *const no[] = { "false", "no", "off", "0", "f", "n" };
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!strcasecmp(t, yes[i])) {
            *out = true;
            return TLR_OK;
        }
        if (!strcasecmp(t, no[i])) {
            *out = false;
            return TLR_OK;
        }
    }
    return TLR_E_PARSE;
}

static int parse_ll(const char *t, long long *out)
{
    if (!*t || isspace((unsigned char)*t))
        return TLR_E_PARSE;
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (*end)
        return TLR_E_PARSE;
    if (errno == ERANGE)
        return TLR_E_RANGE;
    *out = v;
    return TLR_OK;
}

static int parse_double(const char *t, double *out)
{
    if (!*t || isspace((unsigned char)*t))
        return TLR_E_PARSE;
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    if (*end || isnan(v))
        return TLR_E_PARSE;
    if (!isfinite(v) || errno == ERANGE)
        return TLR_E_RANGE;
    *out = v;
    return TLR_OK;
}

static bool has_bounds(const tlr_setting *s)
{
    return s->min || s->max;
}

static void strlist_free(tlr_strlist *l)
{
    if (l->items)
        for (size_t i = 0; i < l->n; i++)
            free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static void strlist_push(tlr_strlist *l, size_t *cap, char *item)
{
    TLR_GROW(l->items, *cap, l->n + 2);
    l->items[l->n++] = item;
    l->items[l->n] = NULL;
}

/* "a, b,,c" -> {"a","b","c"}; the result is NULL-terminated even if empty. */
static void strlist_split(const char *t, tlr_strlist *out)
{
    tlr_strlist l = { tlr_calloc(1, sizeof(char *)), 0 };
    size_t cap = 1;
    while (*t) {
        const char *comma = strchr(t, ',');
        const char *end = comma ? comma : t + strlen(t);
        const char *b = t, *e = end;
        while (b < e && isspace((unsigned char)*b))
            b++;
        while (e > b && isspace((unsigned char)e[-1]))
            e--;
        if (e > b)
            strlist_push(&l, &cap, tlr_strndup(b, (size_t)(e - b)));
        t = comma ? comma + 1 : end;
    }
    *out = l;
}

static void field_zero(const tlr_setting *s, void *cfg)
{
    switch (s->type) {
    case TLR_SET_STR:
    case TLR_SET_SECRET:
    case TLR_SET_CONFIG: {
        char **f = FIELD(cfg, s, char *);
        free(*f);
        *f = NULL;
        break;
    }
    case TLR_SET_INT:
    case TLR_SET_ENUM:     *FIELD(cfg, s, int) = 0; break;
    case TLR_SET_BOOL:     *FIELD(cfg, s, bool) = false; break;
    case TLR_SET_DOUBLE:   *FIELD(cfg, s, double) = 0; break;
    case TLR_SET_DURATION: *FIELD(cfg, s, int64_t) = 0; break;
    case TLR_SET_LIST:     strlist_free(FIELD(cfg, s, tlr_strlist)); break;
    }
}

static int apply_int(const tlr_setting *s, void *cfg, const char *t, const origin *o,
                     tlr_conf_result *res)
{
    long long v;
    int rc = parse_ll(t, &v);
    if (rc == TLR_E_PARSE)
        return value_err(res, s, o, rc, "invalid integer \"%.64s\"", t);
    if (rc || v < INT_MIN || v > INT_MAX)
        return value_err(res, s, o, TLR_E_RANGE, "%.64s out of range", t);
    if (has_bounds(s) && (v < s->min || v > s->max))
        return value_err(res, s, o, TLR_E_RANGE, "%lld out of range [%lld, %lld]",
                         v, s->min, s->max);
    *FIELD(cfg, s, int) = (int)v;
    return TLR_OK;
}

static int apply_double(const tlr_setting *s, void *cfg, const char *t, const origin *o,
                        tlr_conf_result *res)
{
    double v;
    int rc = parse_double(t, &v);
    if (rc == TLR_E_PARSE)
        return value_err(res, s, o, rc, "invalid number \"%.64s\"", t);
    if (rc)
        return value_err(res, s, o, rc, "%.64s out of range", t);
    if (has_bounds(s) && (v < (double)s->min || v > (double)s->max))
        return value_err(res, s, o, TLR_E_RANGE, "%g out of range [%lld, %lld]",
                         v, s->min, s->max);
    *FIELD(cfg, s, double) = v;
    return TLR_OK;
}

static int apply_duration(const tlr_setting *s, void *cfg, const char *t, const origin *o,
                          tlr_conf_result *res)
{
    int64_t v;
    int rc = tlr_duration_parse(t, &v);
    if (rc == TLR_E_RANGE)
        return value_err(res, s, o, rc, "duration \"%.64s\" too large", t);
    if (rc)
        return value_err(res, s, o, TLR_E_PARSE, "invalid duration \"%.64s\"", t);
    if (has_bounds(s) && (v < s->min || v > s->max)) {
        char lo[32], hi[32];
        tlr_duration_format(s->min, lo, sizeof(lo));
        tlr_duration_format(s->max, hi, sizeof(hi));
        return value_err(res, s, o, TLR_E_RANGE, "%.64s out of range [%s, %s]", t, lo, hi);
    }
    *FIELD(cfg, s, int64_t) = v;
    return TLR_OK;
}

static int apply_enum(const tlr_setting *s, void *cfg, const char *t, const origin *o,
                      tlr_conf_result *res)
{
    char want[96] = "";
    size_t used = 0;
    for (int i = 0; s->choices && s->choices[i]; i++) {
        if (!strcasecmp(t, s->choices[i])) {
            *FIELD(cfg, s, int) = i;
            return TLR_OK;
        }
        int w = snprintf(want + used, sizeof(want) - used, "%s%s", i ? "|" : "",
                         s->choices[i]);
        if (w > 0)
            used = used + (size_t)w < sizeof(want) ? used + (size_t)w : sizeof(want) - 1;
    }
    return value_err(res, s, o, TLR_E_PARSE, "invalid value \"%.64s\" (want %s)", t, want);
}

/* Parse text t for setting s and store it in cfg, replacing what was there. */
static int apply_text(const tlr_setting *s, void *cfg, const char *t, const origin *o,
                      tlr_conf_result *res)
{
    switch (s->type) {
    case TLR_SET_STR:
    case TLR_SET_SECRET:
    case TLR_SET_CONFIG: {
        char **f = FIELD(cfg, s, char *);
        char *copy = tlr_strdup(t);
        free(*f);
        *f = copy;
        return TLR_OK;
    }
    case TLR_SET_INT:
        return apply_int(s, cfg, t, o, res);
    case TLR_SET_BOOL: {
        bool b;
        if (parse_bool(t, &b))
            return value_err(res, s, o, TLR_E_PARSE,
                             "invalid boolean \"%.64s\" (want true or false)", t);
        *FIELD(cfg, s, bool) = b;
        return TLR_OK;
    }
    case TLR_SET_DOUBLE:
        return apply_double(s, cfg, t, o, res);
    case TLR_SET_DURATION:
        return apply_duration(s, cfg, t, o, res);
    case TLR_SET_LIST: {
        tlr_strlist l;
        strlist_split(t, &l);
        strlist_free(FIELD(cfg, s, tlr_strlist));
        *FIELD(cfg, s, tlr_strlist) = l;
        return TLR_OK;
    }
    case TLR_SET_ENUM:
        return apply_enum(s, cfg, t, o, res);
    }
    return value_err(res, s, o, TLR_E_INTERNAL, "unknown setting type %d", (int)s->type);
}

/* ---- the command line ------------------------------------------------- */

static void scan_fail(tlr_conf_result *res, int *rc, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Keep the first error only: it is the one the user should fix first. */
static void scan_fail(tlr_conf_result *res, int *rc, int code, const char *fmt, ...)
{
    if (*rc)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->err, sizeof(res->err), fmt, ap);
    va_end(ap);
    *rc = code;
}

static int scan_args(const tlr_setting *table, size_t n, int argc, char **argv,
                     scan *sc, tlr_conf_result *res)
{
    bool have_config = find_config(table, n) != NULL;
    bool only_pos = false;
    int rc = TLR_OK;

    sc->vals = tlr_calloc(argc > 0 ? (size_t)argc : 1, sizeof(*sc->vals));
    sc->positional = tlr_calloc(argc > 0 ? (size_t)argc : 1, sizeof(bool));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0') {   /* "-" is stdin */
            sc->positional[i] = true;
            sc->npos++;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            sc->help = true;
            continue;
        }
        if (!strcmp(a, "--version")) {
            sc->version = true;
            continue;
        }
        if (a[1] != '-') {
            scan_fail(res, &rc, TLR_E_INVAL, "unknown flag %.64s", a);
            continue;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const tlr_setting *s = find_setting(table, n, name, len);
        if (!s && !have_config && len == 6 && !memcmp(name, "config", 6))
            s = &builtin_config;
        bool negated = false;
        if (!s && len > 3 && !memcmp(name, "no-", 3)) {
            s = find_setting(table, n, name + 3, len - 3);
            if (s && s->type != TLR_SET_BOOL)
                s = NULL;
            negated = s != NULL;
        }
        if (!s) {
            scan_fail(res, &rc, TLR_E_INVAL, "unknown flag --%.*s",
                      (int)(len > 64 ? 64 : len), name);
            continue;
        }
        const char *text;
        if (negated) {
            if (eq) {
                scan_fail(res, &rc, TLR_E_INVAL, "--no-%s takes no value", s->name);
                continue;
            }
            text = "false";
        } else if (eq) {
            text = eq + 1;
        } else if (s->type == TLR_SET_BOOL) {
            text = "true";
        } else if (i + 1 < argc) {
            text = argv[++i];
        } else {
            scan_fail(res, &rc, TLR_E_INVAL, "--%s: missing value (from flag)", s->name);
            continue;
        }
        sc->vals[sc->nvals++] = (flag_val){ s, text };
    }
    return rc;
}

/* Move the positionals to the end of argv, keeping both groups in order. */
static void permute_args(int argc, char **argv, const scan *sc)
{
    if (sc->npos == 0 || argc < 2)
        return;
    char **tmp = tlr_calloc((size_t)argc, sizeof(char *));
    int k = 1;
    for (int i = 1; i < argc; i++)
        if (!sc->positional[i])
            tmp[k++] = argv[i];
    for (int i = 1; i < argc; i++)
        if (sc->positional[i])
            tmp[k++] = argv[i];
    memcpy(argv + 1, tmp + 1, (size_t)(argc - 1) * sizeof(char *));
    free(tmp);
}

/* ---- the file --------------------------------------------------------- */

/* from: where the path came from, so a user can fix a wrong one. */
static int file_read(const char *path, const origin *from, tlr_buf *b,
                     tlr_conf_result *res)
{
    char where[128];
    origin_text(from, where, sizeof(where));
    FILE *f = fopen(path, "rb");
    if (!f) {
        set_err(res, "config file \"%s\": %s (from %s)", path, strerror(errno), where);
        return TLR_E_IO;
    }
    int rc = TLR_OK;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        rc = tlr_buf_add(b, chunk, got);
        if (rc) {
            set_err(res, "%s: larger than %d bytes", path, CONF_FILE_MAX);
            goto out;
        }
    }
    if (ferror(f)) {
        set_err(res, "config file \"%s\": %s (from %s)", path, strerror(errno), where);
        rc = TLR_E_IO;
    }
out:
    fclose(f);
    return rc;
}

static void yaml_fail(const yaml_parser_t *p, const char *path, tlr_conf_result *res)
{
    const char *problem = p->problem ? p->problem : "malformed YAML";
    if (p->error == YAML_MEMORY_ERROR)
        set_err(res, "%s: out of memory while parsing", path);
    else if (p->error == YAML_READER_ERROR)
        set_err(res, "%s: byte %zu: %s", path, p->problem_offset, problem);
    else if (p->context)
        set_err(res, "%s:%zu:%zu: %s (%s)", path, p->problem_mark.line + 1,
                p->problem_mark.column + 1, problem, p->context);
    else
        set_err(res, "%s:%zu:%zu: %s", path, p->problem_mark.line + 1,
                p->problem_mark.column + 1, problem);
}

/* A plain ~, null or empty value means "not set here": the lower layer stays. */
static bool yaml_is_null(const yaml_node_t *v)
{
    if (v->type != YAML_SCALAR_NODE || v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *t = (const char *)v->data.scalar.value;
    return !*t || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") ||
           !strcmp(t, "NULL");
}

static bool yaml_has_nul(const yaml_node_t *v)
{
    return strlen((const char *)v->data.scalar.value) != v->data.scalar.length;
}

static int file_apply_node(const tlr_setting *s, void *cfg, yaml_document_t *doc,
                           yaml_node_t *v, const origin *o, tlr_conf_result *res)
{
    if (v->type == YAML_MAPPING_NODE)
        return value_err(res, s, o, TLR_E_PARSE, "want a value, not a mapping");
    if (v->type == YAML_SCALAR_NODE) {
        if (yaml_is_null(v))
            return TLR_OK;
        if (yaml_has_nul(v))
            return value_err(res, s, o, TLR_E_PARSE, "value contains a NUL byte");
        return apply_text(s, cfg, (const char *)v->data.scalar.value, o, res);
    }
    if (s->type != TLR_SET_LIST)
        return value_err(res, s, o, TLR_E_PARSE, "want a single value, not a list");

    tlr_strlist l = { tlr_calloc(1, sizeof(char *)), 0 };
    size_t cap = 1;
    for (yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top; it++) {
        yaml_node_t *item = yaml_document_get_node(doc, *it);
        if (!item || item->type != YAML_SCALAR_NODE || yaml_has_nul(item)) {
            strlist_free(&l);
            return value_err(res, s, o, TLR_E_PARSE, "list items must be plain values");
        }
        strlist_push(&l, &cap, tlr_strdup((const char *)item->data.scalar.value));
    }
    strlist_free(FIELD(cfg, s, tlr_strlist));
    *FIELD(cfg, s, tlr_strlist) = l;
    return TLR_OK;
}

static int file_apply_doc(const tlr_setting *table, size_t n, void *cfg,
                          yaml_document_t *doc, const char *path, tlr_conf_result *res)
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root || yaml_is_null(root))
        return TLR_OK;   /* an empty file sets nothing */
    if (root->type != YAML_MAPPING_NODE) {
        set_err(res, "%s:%zu: want a mapping of setting names to values", path,
                root->start_mark.line + 1);
        return TLR_E_PARSE;
    }
    int rc = TLR_OK;
    bool *seen = tlr_calloc(n ? n : 1, sizeof(bool));
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
         pr < root->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(doc, pr->value);
        if (!k || !v || k->type != YAML_SCALAR_NODE || yaml_has_nul(k)) {
            set_err(res, "%s:%zu: setting names must be plain text", path,
                    k ? k->start_mark.line + 1 : root->start_mark.line + 1);
            rc = TLR_E_PARSE;
            goto out;
        }
        const char *key = (const char *)k->data.scalar.value;
        size_t line = k->start_mark.line + 1;
        const tlr_setting *s = find_setting(table, n, key, k->data.scalar.length);
        if (!s) {
            set_err(res, "%s:%zu: unknown setting \"%.64s\"", path, line, key);
            rc = TLR_E_INVAL;
            goto out;
        }
        if (s->type == TLR_SET_CONFIG) {
            set_err(res, "%s:%zu: \"%s\" can only be set by flag or environment",
                    path, line, key);
            rc = TLR_E_INVAL;
            goto out;
        }
        size_t idx = (size_t)(s - table);
        if (seen[idx]) {
            set_err(res, "%s:%zu: \"%s\" is set twice", path, line, key);
            rc = TLR_E_INVAL;
            goto out;
        }
        seen[idx] = true;
        origin o = { "file", path, v->start_mark.line + 1 };
        rc = file_apply_node(s, cfg, doc, v, &o, res);
        if (rc)
            goto out;
    }
out:
    free(seen);
    return rc;
}

static int file_load(const tlr_setting *table, size_t n, void *cfg, const char *path,
                     const origin *from, tlr_conf_result *res)
{
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    bool have_parser = false, have_doc = false;
    tlr_buf b;
    int rc;

    tlr_buf_init(&b, CONF_FILE_MAX);
    rc = file_read(path, from, &b, res);
    if (rc)
        goto out;
    if (!yaml_parser_initialize(&parser))
        abort();   /* only fails when out of memory: same policy as tlr_malloc */
    have_parser = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)tlr_buf_str(&b), b.len);
    if (!yaml_parser_load(&parser, &doc)) {
        yaml_fail(&parser, path, res);
        rc = TLR_E_PARSE;
        goto out;
    }
    have_doc = true;
    if (yaml_document_get_root_node(&doc)) {
        /* A second document would be silently ignored: refuse it. */
        if (!yaml_parser_load(&parser, &extra)) {
            yaml_fail(&parser, path, res);
            rc = TLR_E_PARSE;
            goto out;
        }
        yaml_node_t *root2 = yaml_document_get_root_node(&extra);
        size_t line2 = root2 ? root2->start_mark.line + 1 : 0;
        yaml_document_delete(&extra);
        if (root2) {
            set_err(res, "%s:%zu: only one YAML document is allowed", path, line2);
            rc = TLR_E_PARSE;
            goto out;
        }
    }
    rc = file_apply_doc(table, n, cfg, &doc, path, res);
out:
    if (have_doc)
        yaml_document_delete(&doc);
    if (have_parser)
        yaml_parser_delete(&parser);
    tlr_buf_free(&b);
    return rc;
}

/* ---- the loader ------------------------------------------------------- */

/* Stages 2-5 of the file-top comment. */
static int load_sources(const tlr_setting *table, size_t n, void *cfg,
                        const char *const *envp, const scan *sc, tlr_conf_result *res)
{
    const tlr_setting *cs = find_config(table, n);
    int rc;

    for (size_t i = 0; i < n; i++) {
        const tlr_setting *s = &table[i];
        field_zero(s, cfg);
        if (s->def && s->type != TLR_SET_CONFIG) {
            origin o = { "default", NULL, 0 };
            rc = apply_text(s, cfg, s->def, &o, res);
            if (rc)
                return rc;
        }
    }

    const char *path = NULL;
    origin from = { "flag", NULL, 0 };
    for (size_t i = 0; i < sc->nvals; i++)
        if (sc->vals[i].s->type == TLR_SET_CONFIG)
            path = sc->vals[i].text;
    if (!path && cs) {
        const char *e = env_get(envp, cs->env);
        if (e && *e)
            from = (origin){ "env", cs->env, 0 };
        else
            from = (origin){ "default", NULL, 0 };
        path = e && *e ? e : cs->def;
    }
    if (path) {
        if (cs) {
            apply_text(cs, cfg, path, &from, res);   /* a string: cannot fail */
            path = *FIELD(cfg, cs, char *);
        }
        rc = file_load(table, n, cfg, path, &from, res);
        if (rc)
            return rc;
    }

    for (size_t i = 0; i < n; i++) {
        const tlr_setting *s = &table[i];
        const char *e = env_get(envp, s->env);
        if (s->type == TLR_SET_CONFIG || !e || !*e)
            continue;
        origin o = { "env", s->env, 0 };
        rc = apply_text(s, cfg, e, &o, res);
        if (rc)
            return rc;
    }

    for (size_t i = 0; i < sc->nvals; i++) {
        const flag_val *fv = &sc->vals[i];
        if (fv->s->type == TLR_SET_CONFIG)
            continue;
        origin o = { "flag", NULL, 0 };
        rc = apply_text(fv->s, cfg, fv->text, &o, res);
        if (rc)
            return rc;
    }
    res->config_path = path;
    return TLR_OK;
}

int tlr_conf_load(const tlr_setting *table, size_t n, void *cfg,
                  int argc, char **argv, const char *const *envp,
                  tlr_conf_result *res)
{
    scan sc = { 0 };
    int rc;

    memset(res, 0, sizeof(*res));
    rc = scan_args(table, n, argc, argv, &sc, res);
    if (sc.help || sc.version) {
        res->help = sc.help;
        res->version = sc.version;
        res->err[0] = '\0';
        rc = TLR_OK;
        goto out;
    }
    if (rc)
        goto out;
    rc = load_sources(table, n, cfg, envp, &sc, res);
    if (rc) {
        res->config_path = NULL;
        tlr_conf_free(table, n, cfg);
        goto out;
    }
    permute_args(argc, argv, &sc);
    res->argc = sc.npos;
    res->argv = argc > 0 ? argv + argc - sc.npos : argv;
out:
    free(sc.vals);
    free(sc.positional);
    return rc;
}

void tlr_conf_free(const tlr_setting *table, size_t n, void *cfg)
{
    for (size_t i = 0; i < n; i++) {
        const tlr_setting *s = &table[i];
        if (s->type == TLR_SET_STR || s->type == TLR_SET_SECRET ||
            s->type == TLR_SET_CONFIG || s->type == TLR_SET_LIST)
            field_zero(s, cfg);
    }
}

/* ---- help ------------------------------------------------------------- */

static void help_left(const tlr_setting *s, tlr_buf *b)
{
    tlr_buf_reset(b);
    switch (s->type) {
    case TLR_SET_BOOL:     tlr_buf_printf(b, "  --[no-]%s", s->name); return;
    case TLR_SET_STR:
    case TLR_SET_SECRET:   tlr_buf_printf(b, "  --%s STRING", s->name); return;
    case TLR_SET_INT:      tlr_buf_printf(b, "  --%s INT", s->name); return;
    case TLR_SET_DOUBLE:   tlr_buf_printf(b, "  --%s NUMBER", s->name); return;
    case TLR_SET_DURATION: tlr_buf_printf(b, "  --%s DURATION", s->name); return;
    case TLR_SET_LIST:     tlr_buf_printf(b, "  --%s LIST", s->name); return;
    case TLR_SET_CONFIG:   tlr_buf_printf(b, "  --%s FILE", s->name); return;
    case TLR_SET_ENUM:
        tlr_buf_printf(b, "  --%s ", s->name);
        for (int i = 0; s->choices && s->choices[i]; i++)
            tlr_buf_printf(b, "%s%s", i ? "|" : "", s->choices[i]);
        return;
    }
    tlr_buf_printf(b, "  --%s VALUE", s->name);
}

static void help_text(const tlr_setting *s, tlr_buf *b)
{
    tlr_buf_reset(b);
    tlr_buf_adds(b, s->help ? s->help : "");
    bool secret = s->type == TLR_SET_SECRET;
    bool show_def = s->def && !secret;
    if (!s->env && !show_def && !secret)
        return;
    tlr_buf_adds(b, b->len ? " (" : "(");
    if (s->env)
        tlr_buf_printf(b, "env %s", s->env);
    if (secret)
        tlr_buf_printf(b, "%sdefault: none shown", s->env ? ", " : "");
    else if (show_def)
        tlr_buf_printf(b, "%sdefault %s", s->env ? ", " : "", *s->def ? s->def : "\"\"");
    tlr_buf_addc(b, ')');
}

/* left, padded to col, then text word-wrapped at HELP_WIDTH. */
static void help_entry(FILE *out, const char *left, const char *text, size_t col)
{
    size_t pos = strlen(left);
    fputs(left, out);
    if (pos + 2 > col) {
        fputc('\n', out);
        pos = 0;
    }
    for (; pos < col; pos++)
        fputc(' ', out);
    bool line_start = true;
    const char *w = text;
    while (*w) {
        while (*w == ' ')
            w++;
        if (!*w)
            break;
        size_t wl = strcspn(w, " ");
        if (!line_start && pos + 1 + wl > HELP_WIDTH) {
            fputc('\n', out);
            for (pos = 0; pos < col; pos++)
                fputc(' ', out);
            line_start = true;
        }
        if (!line_start) {
            fputc(' ', out);
            pos++;
        }
        fwrite(w, 1, wl, out);
        pos += wl;
        line_start = false;
        w += wl;
    }
    fputc('\n', out);
}

void tlr_conf_help(const char *prog, const char *summary,
                   const tlr_setting *table, size_t n, FILE *out)
{
    static const char *const builtin_left[] = { "  -h, --help", "  --version" };
    static const char *const builtin_help[] = { "show this help and exit",
                                                "print the version and exit" };
    bool have_config = find_config(table, n) != NULL;
    tlr_buf left, text;
    tlr_buf_init(&left, SIZE_MAX / 2);
    tlr_buf_init(&text, SIZE_MAX / 2);

    size_t widest = strlen("  -h, --help");
    for (size_t i = 0; i <= n; i++) {
        if (i == n && have_config)
            break;
        help_left(i < n ? &table[i] : &builtin_config, &left);
        if (left.len + 2 <= HELP_COL_MAX && left.len > widest)
            widest = left.len;
    }
    size_t col = widest + 3 < HELP_COL_MAX ? widest + 3 : HELP_COL_MAX;

    fprintf(out, "Usage: %s [OPTIONS]\n", prog ? prog : "program");
    if (summary && *summary)
        fprintf(out, "\n%s\n", summary);
    fputs("\nOptions:\n", out);
    for (size_t i = 0; i <= n; i++) {
        if (i == n && have_config)
            break;
        const tlr_setting *s = i < n ? &table[i] : &builtin_config;
        help_left(s, &left);
        help_text(s, &text);
        help_entry(out, tlr_buf_str(&left), tlr_buf_str(&text), col);
    }
    for (size_t i = 0; i < 2; i++)
        help_entry(out, builtin_left[i], builtin_help[i], col);
    tlr_buf_free(&left);
    tlr_buf_free(&text);
}

/* ---- JSON dump -------------------------------------------------------- */

/* The shortest %g text that reads back as the same double. */
static int dump_double(tlr_buf *out, double v)
{
    char s[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    return tlr_buf_adds(out, s);
}

static int dump_value(const tlr_setting *s, const void *cfg, tlr_buf *out)
{
    switch (s->type) {
    case TLR_SET_STR:
    case TLR_SET_CONFIG: {
        const char *v = *CFIELD(cfg, s, char *);
        return v ? tlr_buf_add_json_str(out, v) : tlr_buf_adds(out, "null");
    }
    case TLR_SET_SECRET:
        return tlr_buf_adds(out, *CFIELD(cfg, s, char *) ? "\"[redacted]\"" : "null");
    case TLR_SET_INT:
        return tlr_buf_printf(out, "%d", *CFIELD(cfg, s, int));
    case TLR_SET_BOOL:
        return tlr_buf_adds(out, *CFIELD(cfg, s, bool) ? "true" : "false");
    case TLR_SET_DOUBLE:
        return dump_double(out, *CFIELD(cfg, s, double));
    case TLR_SET_DURATION: {
        char d[32];
        tlr_duration_format(*CFIELD(cfg, s, int64_t), d, sizeof(d));
        return tlr_buf_add_json_str(out, d);
    }
    case TLR_SET_LIST: {
        const tlr_strlist *l = CFIELD(cfg, s, tlr_strlist);
        int rc = tlr_buf_addc(out, '[');
        for (size_t i = 0; !rc && l->items && i < l->n; i++) {
            if (i)
                rc = tlr_buf_addc(out, ',');
            if (!rc)
                rc = tlr_buf_add_json_str(out, l->items[i]);
        }
        return rc ? rc : tlr_buf_addc(out, ']');
    }
    case TLR_SET_ENUM: {
        int v = *CFIELD(cfg, s, int);
        int count = 0;
        while (s->choices && s->choices[count])
            count++;
        if (v >= 0 && v < count)
            return tlr_buf_add_json_str(out, s->choices[v]);
        return tlr_buf_printf(out, "%d", v);
    }
    }
    return tlr_buf_adds(out, "null");
}

int tlr_conf_dump_json(const tlr_setting *table, size_t n, const void *cfg, tlr_buf *out)
{
    size_t start = out->len;
    int rc = tlr_buf_addc(out, '{');
    for (size_t i = 0; !rc && i < n; i++) {
        if (i)
            rc = tlr_buf_addc(out, ',');
        if (!rc)
            rc = tlr_buf_add_json_str(out, table[i].name);
        if (!rc)
            rc = tlr_buf_addc(out, ':');
        if (!rc)
            rc = dump_value(&table[i], cfg, out);
    }
    if (!rc)
        rc = tlr_buf_addc(out, '}');
    if (rc) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    }
    return rc;
}
