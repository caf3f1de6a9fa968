/* toml.c - TOML 1.0 to json-c and back (see tlr_toml.h for the subset).
 *
 * The parser is a recursive descent over the bytes, one "expression" (key
 * = value, [table] or [[array]]) per line.  Values nest only through
 * arrays and inline tables, whose depth is bounded, so the recursion is.
 *
 * TOML forbids defining a key or a table twice, and the rules depend on
 * how a table came to be: a [header] defines it; a header [a.b.c] creates
 * a and a.b implicitly (a later [a] may still define a, once); a dotted key
 * a.b = 1 defines a for good, but a later [a.c] header may add to it;
 * inline tables are closed; [[x]] appends only to arrays made by [[x]].
 * We keep that history as a few flag bits in json-c's per-object userdata
 * (objects and arrays carry none otherwise) and clear them before
 * returning, so the result is a plain json-c tree.
 *
 * The writer prints a table's plain keys before its sub-tables, so that a
 * key never lands in the wrong section, and names sub-tables by their full
 * dotted path; an array whose members are all objects becomes [[a.b]]
 * sections.  Its output reads back to the same tree.
 */
#include "tlr_toml.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"

/* How a table or array came to be (json-c userdata bits). */
enum {
    F_DEFINED  = 1 << 0,   /* by a [header] (or is an [[array]] member) */
    F_IMPLICIT = 1 << 1,   /* created as the parent in a header path */
    F_DOTTED   = 1 << 2,   /* created by a dotted key */
    F_INLINE   = 1 << 3,   /* an inline table or a value array: closed */
    F_AOT      = 1 << 4,   /* an array made by [[header]] */
};

static unsigned flags_of(json_object *o)
{
    return (unsigned)(uintptr_t)json_object_get_userdata(o);
}

static void flags_set(json_object *o, unsigned f)
{
    json_object_set_userdata(o, (void *)(uintptr_t)f, NULL);
}

static void flags_clear(json_object *o)
{
    if (json_object_is_type(o, json_type_object)) {
        json_object_set_userdata(o, NULL, NULL);
        json_object_object_foreach(o, k, v) {
            (void)k;
            flags_clear(v);
        }
    } else if (json_object_is_type(o, json_type_array)) {
        json_object_set_userdata(o, NULL, NULL);
        for (size_t i = 0; i < json_object_array_length(o); i++)
            flags_clear(json_object_array_get_idx(o, i));
    }
}

typedef struct tparser {
    const char *s;
    size_t len, pos;
    size_t line;          /* 1-based, of pos */
    json_object *root;    /* owned */
    json_object *cur;     /* borrowed: the table keys go into */
    int cur_depth;        /* nesting of cur below root */
    char *err;
    size_t errlen;
} tparser;

static int fail(tparser *p, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(tparser *p, int rc, const char *fmt, ...)
{
    if (p->err != NULL && p->errlen > 0 && p->err[0] == '\0') {
        int n = snprintf(p->err, p->errlen, "line %zu: ", p->line);
        if (n >= 0 && (size_t)n < p->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

static int peek(const tparser *p) { return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1; }
static int peek_at(const tparser *p, size_t k)
{
    return p->pos + k < p->len ? (unsigned char)p->s[p->pos + k] : -1;
}
static bool at(const tparser *p, const char *lit)
{
    size_t n = strlen(lit);
    return p->len - p->pos >= n && memcmp(p->s + p->pos, lit, n) == 0;
}

static void skip_ws(tparser *p)
{
    while (peek(p) == ' ' || peek(p) == '\t')
        p->pos++;
}

/* A comment runs to the end of the line; control characters other than tab
 * are not allowed in it. */
static int skip_comment(tparser *p)
{
    if (peek(p) != '#')
        return TLR_OK;
    for (; p->pos < p->len && p->s[p->pos] != '\n'; p->pos++) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if ((c < 0x20 && c != '\t' && !(c == '\r' && peek_at(p, 1) == '\n')) || c == 0x7f)
            return fail(p, TLR_E_PARSE, "control character in a comment");
    }
    return TLR_OK;
}

/* At a line end (LF or CRLF)?  Consumes it. */
static bool eat_newline(tparser *p)
{
    if (peek(p) == '\n') {
        p->pos++;
        p->line++;
        return true;
    }
    if (peek(p) == '\r' && peek_at(p, 1) == '\n') {
        p->pos += 2;
        p->line++;
        return true;
    }
    return false;
}

/* Blanks, comments and newlines, as allowed inside arrays. */
static int skip_ws_nl(tparser *p)
{
    for (;;) {
        skip_ws(p);
        int rc = skip_comment(p);
        if (rc != TLR_OK)
            return rc;
        if (!eat_newline(p))
            return TLR_OK;
    }
}

/* ---- strings ----------------------------------------------------------- */

static void add_utf8(tlr_buf *b, uint32_t cp)
{
    if (cp < 0x80) {
        tlr_buf_addc(b, (char)cp);
    } else if (cp < 0x800) {
        tlr_buf_addc(b, (char)(0xc0 | (cp >> 6)));
        tlr_buf_addc(b, (char)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        tlr_buf_addc(b, (char)(0xe0 | (cp >> 12)));
        tlr_buf_addc(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
        tlr_buf_addc(b, (char)(0x80 | (cp & 0x3f)));
    } else {
        tlr_buf_addc(b, (char)(0xf0 | (cp >> 18)));
        tlr_buf_addc(b, (char)(0x80 | ((cp >> 12) & 0x3f)));
        tlr_buf_addc(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
        tlr_buf_addc(b, (char)(0x80 | (cp & 0x3f)));
    }
}

static int escape(tparser *p, tlr_buf *b)
{
    int c = peek(p);
    int ndig = 0;

    p->pos++;
    switch (c) {
    case 'b': tlr_buf_addc(b, '\b'); return TLR_OK;
    case 't': tlr_buf_addc(b, '\t'); return TLR_OK;
    case 'n': tlr_buf_addc(b, '\n'); return TLR_OK;
    case 'f': tlr_buf_addc(b, '\f'); return TLR_OK;
    case 'r': tlr_buf_addc(b, '\r'); return TLR_OK;
    case '"': tlr_buf_addc(b, '"'); return TLR_OK;
    case '\\': tlr_buf_addc(b, '\\'); return TLR_OK;
    case 'u': ndig = 4; break;
    case 'U': ndig = 8; break;
    default:
        return fail(p, TLR_E_PARSE, "bad escape sequence \"\\%c\" in a string",
                    c > 0x20 && c < 0x7f ? c : '?');
    }
    uint32_t cp = 0;
    for (int i = 0; i < ndig; i++) {
        int d = peek(p), v;
        if (d >= '0' && d <= '9')
            v = d - '0';
        else if (d >= 'a' && d <= 'f')
            v = d - 'a' + 10;
        else if (d >= 'A' && d <= 'F')
            v = d - 'A' + 10;
        else
            return fail(p, TLR_E_PARSE, "\\%c needs %d hex digits", c, ndig);
        cp = cp * 16 + (uint32_t)v;
        p->pos++;
    }
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return fail(p, TLR_E_PARSE, "\\%c escape is not a Unicode scalar value", c);
    add_utf8(b, cp);
    return TLR_OK;
}

static bool bad_ctl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

/* A string of any of the four kinds; *out is new (with its length). */
static int parse_string(tparser *p, bool allow_multi, json_object **out, char **key)
{
    bool literal = peek(p) == '\'';
    char q = literal ? '\'' : '"';
    bool multi = allow_multi && (literal ? at(p, "'''") : at(p, "\"\"\""));
    tlr_buf b;
    int rc = TLR_OK;

    tlr_buf_init(&b, p->len + 1);
    p->pos += multi ? 3 : 1;
    if (multi)
        eat_newline(p);   /* a newline right after the opening is trimmed */
    for (;;) {
        int c = peek(p);
        if (c < 0) {
            rc = fail(p, TLR_E_PARSE, "unterminated string");
            goto out;
        }
        if (c == q) {
            if (!multi) {
                p->pos++;
                break;
            }
            if (at(p, literal ? "'''" : "\"\"\"")) {
                /* Up to two more quotes at the end belong to the string. */
                size_t extra = 0;
                while (extra < 2 && peek_at(p, 3 + extra) == q)
                    extra++;
                tlr_buf_add(&b, p->s + p->pos, extra);
                p->pos += 3 + extra;
                break;
            }
            tlr_buf_addc(&b, q);
            p->pos++;
            continue;
        }
        if (c == '\n' || (c == '\r' && peek_at(p, 1) == '\n')) {
            if (!multi) {
                rc = fail(p, TLR_E_PARSE, "newline in a single-line string");
                goto out;
            }
            eat_newline(p);
            tlr_buf_addc(&b, '\n');
            continue;
        }
        if (c == '\\' && !literal) {
            p->pos++;
            if (multi) {
                /* A line-ending backslash trims the break and what follows. */
                size_t save = p->pos, save_line = p->line;
                skip_ws(p);
                if (eat_newline(p)) {
                    for (;;) {
                        skip_ws(p);
                        if (!eat_newline(p))
                            break;
                    }
                    continue;
                }
                p->pos = save;
                p->line = save_line;
            }
            if ((rc = escape(p, &b)) != TLR_OK)
                goto out;
            continue;
        }
        if (bad_ctl((unsigned char)c)) {
            rc = fail(p, TLR_E_PARSE, "control character 0x%02x in a string", c);
            goto out;
        }
        tlr_buf_addc(&b, (char)c);
        p->pos++;
    }
    if (key != NULL) {
        if (memchr(tlr_buf_str(&b), '\0', b.len) != NULL) {
            rc = fail(p, TLR_E_PARSE, "NUL character in a key");
            goto out;
        }
        *key = tlr_buf_take(&b);
    } else {
        *out = json_object_new_string_len(tlr_buf_str(&b), (int)b.len);
    }
out:
    tlr_buf_free(&b);
    return rc;
}

/* ---- keys -------------------------------------------------------------- */

static bool bare_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

typedef struct keypath {
    char **seg;
    size_t n, cap;
} keypath;

static void keypath_free(keypath *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->seg[i]);
    free(k->seg);
    *k = (keypath){ 0 };
}

/* A dotted key: simple keys separated by '.', blanks around dots. */
static int parse_key(tparser *p, keypath *k)
{
    for (;;) {
        char *seg = NULL;
        int c;
        skip_ws(p);
        c = peek(p);
        if (c == '"' || c == '\'') {
            int rc = parse_string(p, false, NULL, &seg);
            if (rc != TLR_OK)
                return rc;
        } else if (bare_char(c)) {
            size_t st = p->pos;
            while (bare_char(peek(p)))
                p->pos++;
            seg = tlr_strndup(p->s + st, p->pos - st);
        } else {
            return fail(p, TLR_E_PARSE, "expected a key");
        }
        if (k->n >= TLR_TOML_MAX_DEPTH) {
            free(seg);
            return fail(p, TLR_E_TOOBIG, "key has more than %d parts", TLR_TOML_MAX_DEPTH);
        }
        TLR_GROW(k->seg, k->cap, k->n + 1);
        k->seg[k->n++] = seg;
        skip_ws(p);
        if (peek(p) != '.')
            return TLR_OK;
        p->pos++;
    }
}

/* ---- values ------------------------------------------------------------ */

static int parse_value(tparser *p, int depth, json_object **out);

/* Digits with single underscores between them, in base. */
static bool digits_ok(const char *s, size_t n, int base)
{
    if (n == 0 || s[0] == '_' || s[n - 1] == '_')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = c == '_' ? s[i + 1] != '_'
                : base == 16 ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                                (c >= 'A' && c <= 'F'))
                             : (c >= '0' && c < '0' + base);
        if (!ok)
            return false;
    }
    return true;
}

static char *without_underscores(const char *s, size_t n)
{
    char *o = tlr_malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            o[k++] = s[i];
    o[k] = '\0';
    return o;
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }

/* A date, time or date-time: kept as its text.  The grammar is checked
 * loosely (digits and separators in the shapes TOML allows). */
static bool looks_like_datetime(const tparser *p)
{
    const char *s = p->s + p->pos;
    size_t n = p->len - p->pos;
    if (n >= 5 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) &&
        s[4] == '-')
        return true;
    return n >= 3 && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':';
}

static int parse_datetime(tparser *p, json_object **out)
{
    size_t st = p->pos;
    for (;;) {
        int c = peek(p);
        if (is_digit(c) || c == '-' || c == ':' || c == '.' || c == 'T' || c == 't' ||
            c == 'Z' || c == 'z' || c == '+') {
            p->pos++;
        } else if (c == ' ' && is_digit(peek_at(p, 1)) && p->pos - st == 10) {
            p->pos++;   /* "1979-05-27 07:32:00": a space may separate date and time */
        } else {
            break;
        }
    }
    *out = json_object_new_string_len(p->s + st, (int)(p->pos - st));
    return TLR_OK;
}

/* A JSON double that prints in its shortest round-trip form (6.626e-34,
 * not 6.6259999999999998e-34), with a fraction when integral (2.0). */
static json_object *new_double(double d)
{
    char num[48];
    if (d == floor(d) && fabs(d) < 1e17) {
        snprintf(num, sizeof(num), "%.1f", d);
        return json_object_new_double_s(d, num);
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(num, sizeof(num), "%.*g", prec, d);
        if (strtod(num, NULL) == d)
            break;
    }
    return json_object_new_double_s(d, num);
}

/* Integers, floats, booleans, inf/nan (refused). */
static int parse_number_or_bool(tparser *p, json_object **out)
{
    size_t st = p->pos;
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (bare_char(c) || c == '.' || c == '+')
            p->pos++;
        else
            break;
    }
    const char *s = p->s + st;
    size_t n = p->pos - st;
    char tok[48];
    snprintf(tok, sizeof(tok), "%.*s", (int)(n < 40 ? n : 40), s);

    if (n == 0)
        return fail(p, TLR_E_PARSE, "expected a value");
    if ((n == 4 && memcmp(s, "true", 4) == 0) || (n == 5 && memcmp(s, "false", 5) == 0)) {
        *out = json_object_new_boolean(n == 4);
        return TLR_OK;
    }
    const char *body = s;
    size_t bn = n;
    bool neg = false;
    if (body[0] == '+' || body[0] == '-') {
        neg = body[0] == '-';
        body++;
        bn--;
    }
    if ((bn == 3 && (memcmp(body, "inf", 3) == 0 || memcmp(body, "nan", 3) == 0)))
        return fail(p, TLR_E_PARSE, "\"%s\": inf and nan are not allowed (JSON has neither)",
                    tok);
    if (bn > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'o' || body[1] == 'b')) {
        int base = body[1] == 'x' ? 16 : body[1] == 'o' ? 8 : 2;
        if (body != s || !digits_ok(body + 2, bn - 2, base))
            return fail(p, TLR_E_PARSE, "\"%s\" is not a valid integer", tok);
        char *d = without_underscores(body + 2, bn - 2);
        uint64_t v = 0;
        bool ok = true;
        for (char *q = d; *q != '\0'; q++) {
            int dv = *q <= '9' ? *q - '0' : (*q | 0x20) - 'a' + 10;
            if (v > (UINT64_MAX - (uint64_t)dv) / (uint64_t)base)
                ok = false;
            v = v * (uint64_t)base + (uint64_t)dv;
        }
        free(d);
        if (!ok || v > INT64_MAX)
            return fail(p, TLR_E_PARSE, "\"%s\" does not fit in 64 bits", tok);
        *out = json_object_new_int64((int64_t)v);
        return TLR_OK;
    }
    /* Decimal integer or float: int part, optional .frac, optional exp. */
    size_t i = 0;
    while (i < bn && (is_digit(body[i]) || body[i] == '_'))
        i++;
    size_t int_len = i;
    bool is_float = false;
    /* no leading zeros: "0" alone, or 0.5, but not 01 */
    bool ok = digits_ok(body, int_len, 10) && !(int_len > 1 && body[0] == '0');
    if (ok && i < bn && body[i] == '.') {
        size_t fs = ++i;
        while (i < bn && (is_digit(body[i]) || body[i] == '_'))
            i++;
        ok = digits_ok(body + fs, i - fs, 10);
        is_float = true;
    }
    if (ok && i < bn && (body[i] == 'e' || body[i] == 'E')) {
        i++;
        if (i < bn && (body[i] == '+' || body[i] == '-'))
            i++;
        size_t es = i;
        while (i < bn && (is_digit(body[i]) || body[i] == '_'))
            i++;
        ok = digits_ok(body + es, i - es, 10);
        is_float = true;
    }
    if (!ok || i != bn)
        return fail(p, TLR_E_PARSE, "\"%s\" is not a valid value", tok);
    char *d = without_underscores(s, n);
    if (is_float) {
        double v = strtod(d, NULL);
        free(d);
        if (!isfinite(v))
            return fail(p, TLR_E_PARSE, "\"%s\" is out of range", tok);
        *out = new_double(v);
        return TLR_OK;
    }
    /* d is [+-]digits: accumulate with an overflow check. */
    const char *q = d + (d[0] == '+' || d[0] == '-');
    uint64_t mag = 0;
    bool range = false;
    for (; *q != '\0'; q++) {
        if (mag > (UINT64_MAX - 9) / 10)
            range = true;
        mag = mag * 10 + (uint64_t)(*q - '0');
    }
    free(d);
    if (range || mag > (uint64_t)INT64_MAX + (neg ? 1 : 0))
        return fail(p, TLR_E_PARSE, "\"%s\" does not fit in 64 bits", tok);
    *out = json_object_new_int64(neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag)
                                     : (int64_t)mag);
    return TLR_OK;
}

static int parse_array(tparser *p, int depth, json_object **out)
{
    json_object *arr = json_object_new_array();
    int rc;

    p->pos++;   /* [ */
    for (;;) {
        if ((rc = skip_ws_nl(p)) != TLR_OK)
            goto fail;
        if (peek(p) == ']') {
            p->pos++;
            break;
        }
        json_object *v = NULL;
        if ((rc = parse_value(p, depth + 1, &v)) != TLR_OK)
            goto fail;
        json_object_array_add(arr, v);
        if ((rc = skip_ws_nl(p)) != TLR_OK)
            goto fail;
        if (peek(p) == ',') {
            p->pos++;
            continue;
        }
        if (peek(p) == ']') {
            p->pos++;
            break;
        }
        rc = fail(p, TLR_E_PARSE, peek(p) < 0 ? "unterminated array"
                                              : "expected ',' or ']' in an array");
        goto fail;
    }
    flags_set(arr, F_INLINE);
    *out = arr;
    return TLR_OK;
fail:
    json_object_put(arr);
    return rc;
}

/* Walk (creating) the tables of k->seg[0..n-1) under t for a dotted key,
 * then add the value at the last segment. */
static int put_dotted(tparser *p, json_object *t, const keypath *k, json_object *v,
                      bool inline_table)
{
    for (size_t i = 0; i + 1 < k->n; i++) {
        json_object *next = NULL;
        if (!json_object_object_get_ex(t, k->seg[i], &next)) {
            next = json_object_new_object();
            flags_set(next, inline_table ? F_INLINE | F_DOTTED : F_DOTTED);
            json_object_object_add(t, k->seg[i], next);
        } else if (!json_object_is_type(next, json_type_object) ||
                   !(flags_of(next) & F_DOTTED)) {
            json_object_put(v);
            return fail(p, TLR_E_PARSE, "key \"%.60s\" is already defined", k->seg[i]);
        }
        t = next;
    }
    if (json_object_object_get_ex(t, k->seg[k->n - 1], NULL)) {
        json_object_put(v);
        return fail(p, TLR_E_PARSE, "key \"%.60s\" is defined twice", k->seg[k->n - 1]);
    }
    json_object_object_add(t, k->seg[k->n - 1], v);
    return TLR_OK;
}

static int parse_inline_table(tparser *p, int depth, json_object **out)
{
    json_object *t = json_object_new_object();
    keypath k = { 0 };
    int rc = TLR_OK;

    p->pos++;   /* { */
    skip_ws(p);
    if (peek(p) == '}') {
        p->pos++;
        goto done;
    }
    for (;;) {
        json_object *v = NULL;
        if ((rc = parse_key(p, &k)) != TLR_OK)
            goto fail;
        if (depth + (int)k.n > TLR_TOML_MAX_DEPTH) {
            rc = fail(p, TLR_E_TOOBIG, "nested deeper than %d levels", TLR_TOML_MAX_DEPTH);
            goto fail;
        }
        if (peek(p) != '=') {
            rc = fail(p, TLR_E_PARSE, "expected '=' after key");
            goto fail;
        }
        p->pos++;
        skip_ws(p);
        if ((rc = parse_value(p, depth + (int)k.n, &v)) != TLR_OK)
            goto fail;
        if ((rc = put_dotted(p, t, &k, v, true)) != TLR_OK)
            goto fail;
        keypath_free(&k);
        skip_ws(p);
        if (peek(p) == ',') {
            p->pos++;
            continue;
        }
        if (peek(p) == '}') {
            p->pos++;
            break;
        }
        rc = fail(p, TLR_E_PARSE, "expected ',' or '}' in an inline table");
        goto fail;
    }
done:
    flags_set(t, F_INLINE);
    *out = t;
    return TLR_OK;
fail:
    keypath_free(&k);
    json_object_put(t);
    return rc;
}

static int parse_value(tparser *p, int depth, json_object **out)
{
    int c = peek(p);

    if (depth > TLR_TOML_MAX_DEPTH)
        return fail(p, TLR_E_TOOBIG, "nested deeper than %d levels", TLR_TOML_MAX_DEPTH);
    if (c == '"' || c == '\'')
        return parse_string(p, true, out, NULL);
    if (c == '[')
        return parse_array(p, depth, out);
    if (c == '{')
        return parse_inline_table(p, depth, out);
    if (c < 0 || c == '\n' || c == '\r' || c == '#')
        return fail(p, TLR_E_PARSE, "expected a value");
    if (looks_like_datetime(p))
        return parse_datetime(p, out);
    return parse_number_or_bool(p, out);
}

/* ---- expressions ------------------------------------------------------- */

static int parse_header(tparser *p)
{
    bool aot = at(p, "[[");
    keypath k = { 0 };
    json_object *t = p->root;
    int rc;

    p->pos += aot ? 2 : 1;
    if ((rc = parse_key(p, &k)) != TLR_OK)
        goto out;
    if (aot ? !at(p, "]]") : peek(p) != ']') {
        rc = fail(p, TLR_E_PARSE, "expected '%s' after table name", aot ? "]]" : "]");
        goto out;
    }
    p->pos += aot ? 2 : 1;
    for (size_t i = 0; i + 1 < k.n; i++) {
        json_object *next = NULL;
        if (!json_object_object_get_ex(t, k.seg[i], &next)) {
            next = json_object_new_object();
            flags_set(next, F_IMPLICIT);
            json_object_object_add(t, k.seg[i], next);
        } else if (json_object_is_type(next, json_type_array) && (flags_of(next) & F_AOT)) {
            next = json_object_array_get_idx(next, json_object_array_length(next) - 1);
        } else if (!json_object_is_type(next, json_type_object) ||
                   (flags_of(next) & F_INLINE)) {
            rc = fail(p, TLR_E_PARSE, "\"%.60s\" is not a table", k.seg[i]);
            goto out;
        }
        t = next;
    }
    const char *last = k.seg[k.n - 1];
    json_object *have = NULL;
    bool exists = json_object_object_get_ex(t, last, &have);
    if (aot) {
        if (!exists) {
            have = json_object_new_array();
            flags_set(have, F_AOT);
            json_object_object_add(t, last, have);
        } else if (!json_object_is_type(have, json_type_array) || !(flags_of(have) & F_AOT)) {
            rc = fail(p, TLR_E_PARSE, "\"%.60s\" is not an array of tables", last);
            goto out;
        }
        json_object *elem = json_object_new_object();
        flags_set(elem, F_DEFINED);
        json_object_array_add(have, elem);
        t = elem;
    } else if (!exists) {
        have = json_object_new_object();
        flags_set(have, F_DEFINED);
        json_object_object_add(t, last, have);
        t = have;
    } else if (json_object_is_type(have, json_type_object) &&
               flags_of(have) == F_IMPLICIT) {
        flags_set(have, F_DEFINED);
        t = have;
    } else {
        rc = fail(p, TLR_E_PARSE, "table [%.60s] is defined twice", last);
        goto out;
    }
    p->cur = t;
    p->cur_depth = (int)k.n;
out:
    keypath_free(&k);
    return rc;
}

static int parse_keyval(tparser *p)
{
    keypath k = { 0 };
    json_object *v = NULL;
    int rc;

    if ((rc = parse_key(p, &k)) != TLR_OK)
        goto out;
    if (peek(p) != '=') {
        rc = fail(p, TLR_E_PARSE, "expected '=' after key");
        goto out;
    }
    p->pos++;
    skip_ws(p);
    if ((rc = parse_value(p, p->cur_depth + (int)k.n, &v)) != TLR_OK)
        goto out;
    rc = put_dotted(p, p->cur, &k, v, false);
out:
    keypath_free(&k);
    return rc;
}

int tlr_toml_parse(const char *buf, size_t len, json_object **out, char *err, size_t errlen)
{
    tparser p = { .s = buf, .len = len, .line = 1, .err = err, .errlen = errlen };
    int rc = TLR_OK;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (buf == NULL || out == NULL)
        return TLR_E_INVAL;
    if (len > TLR_TOML_MAX_BYTES)
        return fail(&p, TLR_E_TOOBIG, "input is %zu bytes, more than the limit of %u", len,
                    TLR_TOML_MAX_BYTES);
    p.root = json_object_new_object();
    p.cur = p.root;
    while (p.pos < p.len) {
        skip_ws(&p);
        int c = peek(&p);
        if (c == '[')
            rc = parse_header(&p);
        else if (c != '#' && c != '\n' && c != '\r' && c >= 0)
            rc = parse_keyval(&p);
        if (rc != TLR_OK)
            break;
        skip_ws(&p);
        if ((rc = skip_comment(&p)) != TLR_OK)
            break;
        if (p.pos < p.len && !eat_newline(&p)) {
            rc = fail(&p, TLR_E_PARSE, peek(&p) == '\r' ? "bare carriage return"
                                                        : "expected a newline after the value");
            break;
        }
    }
    if (rc != TLR_OK) {
        json_object_put(p.root);
        return rc;
    }
    flags_clear(p.root);
    *out = p.root;
    return TLR_OK;
}

/* ---- writing ----------------------------------------------------------- */

static void put_key(tlr_buf *b, const char *k)
{
    bool bare = k[0] != '\0';
    for (const char *c = k; *c != '\0'; c++)
        bare = bare && bare_char((unsigned char)*c);
    if (bare) {
        tlr_buf_adds(b, k);
        return;
    }
    tlr_buf_addc(b, '"');
    for (const unsigned char *c = (const unsigned char *)k; *c != '\0'; c++) {
        switch (*c) {
        case '"': tlr_buf_adds(b, "\\\""); break;
        case '\\': tlr_buf_adds(b, "\\\\"); break;
        case '\b': tlr_buf_adds(b, "\\b"); break;
        case '\t': tlr_buf_adds(b, "\\t"); break;
        case '\n': tlr_buf_adds(b, "\\n"); break;
        case '\f': tlr_buf_adds(b, "\\f"); break;
        case '\r': tlr_buf_adds(b, "\\r"); break;
        default:
            if (*c < 0x20 || *c == 0x7f)
                tlr_buf_printf(b, "\\u%04x", *c);
            else
                tlr_buf_addc(b, (char)*c);
        }
    }
    tlr_buf_addc(b, '"');
}

static void put_string(tlr_buf *b, const char *s, size_t n)
{
    tlr_buf_addc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': tlr_buf_adds(b, "\\\""); break;
        case '\\': tlr_buf_adds(b, "\\\\"); break;
        case '\b': tlr_buf_adds(b, "\\b"); break;
        case '\t': tlr_buf_adds(b, "\\t"); break;
        case '\n': tlr_buf_adds(b, "\\n"); break;
        case '\f': tlr_buf_adds(b, "\\f"); break;
        case '\r': tlr_buf_adds(b, "\\r"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                tlr_buf_printf(b, "\\u%04x", c);
            else
                tlr_buf_addc(b, (char)c);
        }
    }
    tlr_buf_addc(b, '"');
}

static bool is_table(json_object *v) { return json_object_is_type(v, json_type_object); }

/* An array written as [[sections]]: non-empty, all members objects. */
static bool is_aot(json_object *v)
{
    size_t n;
    if (!json_object_is_type(v, json_type_array) || (n = json_object_array_length(v)) == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_table(json_object_array_get_idx(v, i)))
            return false;
    return true;
}

static int put_value(tlr_buf *b, json_object *v, int depth);

static int put_inline_table(tlr_buf *b, json_object *o, int depth)
{
    bool first = true;
    tlr_buf_addc(b, '{');
    json_object_object_foreach(o, k, v) {
        if (v == NULL)
            continue;
        tlr_buf_adds(b, first ? " " : ", ");
        first = false;
        put_key(b, k);
        tlr_buf_adds(b, " = ");
        int rc = put_value(b, v, depth + 1);
        if (rc != TLR_OK)
            return rc;
    }
    tlr_buf_adds(b, first ? "}" : " }");
    return TLR_OK;
}

static int put_value(tlr_buf *b, json_object *v, int depth)
{
    if (depth > TLR_TOML_MAX_DEPTH)
        return TLR_E_TOOBIG;
    switch (json_object_get_type(v)) {
    case json_type_string:
        put_string(b, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        return TLR_OK;
    case json_type_int:
        tlr_buf_adds(b, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        return TLR_OK;
    case json_type_boolean:
        tlr_buf_adds(b, json_object_get_boolean(v) ? "true" : "false");
        return TLR_OK;
    case json_type_double: {
        double d = json_object_get_double(v);
        char num[40];
        if (!isfinite(d))
            return TLR_E_INVAL;
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(num, sizeof(num), "%.*g", prec, d);
            if (strtod(num, NULL) == d)
                break;
        }
        tlr_buf_adds(b, num);
        if (strpbrk(num, ".e") == NULL)
            tlr_buf_adds(b, ".0");   /* TOML needs a fraction or exponent */
        return TLR_OK;
    }
    case json_type_array: {
        size_t n = json_object_array_length(v);
        tlr_buf_addc(b, '[');
        for (size_t i = 0, k = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(v, i);
            if (e == NULL)
                return TLR_E_INVAL;   /* TOML has no null, and dropping it would shift the rest */
            tlr_buf_adds(b, k++ > 0 ? ", " : "");
            int rc = put_value(b, e, depth + 1);
            if (rc != TLR_OK)
                return rc;
        }
        tlr_buf_addc(b, ']');
        return TLR_OK;
    }
    case json_type_object:
        return put_inline_table(b, v, depth);
    case json_type_null:
        break;
    }
    return TLR_E_INVAL;
}

/* path: the dotted, quoted name of o so far ("" for the root). */
static int put_table(tlr_buf *b, json_object *o, tlr_buf *path, bool header, bool aot_member,
                     int depth)
{
    size_t plen = path->len;
    int rc = TLR_OK;
    bool has_plain = false, has_sub = false;

    if (depth > TLR_TOML_MAX_DEPTH)
        return TLR_E_TOOBIG;
    json_object_object_foreach(o, k0, v0) {
        (void)k0;
        if (v0 == NULL)
            continue;
        if (is_table(v0) || is_aot(v0))
            has_sub = true;
        else
            has_plain = true;
    }
    /* A table with keys of its own needs its header; so does an empty one
     * (or it would vanish) and each member of an array of tables. */
    if (header && (has_plain || !has_sub || aot_member)) {
        if (b->len > 0)
            tlr_buf_addc(b, '\n');
        tlr_buf_printf(b, aot_member ? "[[%s]]\n" : "[%s]\n", tlr_buf_str(path));
    }
    json_object_object_foreach(o, k, v) {
        if (v == NULL || is_table(v) || is_aot(v))
            continue;
        put_key(b, k);
        tlr_buf_adds(b, " = ");
        if ((rc = put_value(b, v, depth + 1)) != TLR_OK)
            return rc;
        tlr_buf_addc(b, '\n');
    }
    json_object_object_foreach(o, k2, v2) {
        if (v2 == NULL || !(is_table(v2) || is_aot(v2)))
            continue;
        if (path->len > 0)
            tlr_buf_addc(path, '.');
        put_key(path, k2);
        if (is_table(v2)) {
            rc = put_table(b, v2, path, true, false, depth + 1);
        } else {
            for (size_t i = 0; rc == TLR_OK && i < json_object_array_length(v2); i++)
                rc = put_table(b, json_object_array_get_idx(v2, i), path, true, true,
                               depth + 1);
        }
        path->len = plen;
        if (path->data != NULL)
            path->data[plen] = '\0';
        if (rc != TLR_OK)
            return rc;
    }
    return TLR_OK;
}

int tlr_toml_write(json_object *obj, char **out)
{
    tlr_buf b, path;
    int rc;

    if (out == NULL || !json_object_is_type(obj, json_type_object))
        return TLR_E_INVAL;
    tlr_buf_init(&b, (size_t)-1);
    tlr_buf_init(&path, (size_t)-1);
    rc = put_table(&b, obj, &path, false, false, 0);
    if (rc == TLR_OK)
        *out = tlr_buf_take(&b);
    tlr_buf_free(&b);
    tlr_buf_free(&path);
    return rc;
}
