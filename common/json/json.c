/* json.c - bounded, strict JSON parsing and path getters on json-c.
 *
 * json-c's tokener is incremental: a top-level number such as "12" is not
 * complete until it sees what follows, so after feeding the whole buffer we
 * feed one NUL byte to say "end of input".  NUL bytes inside the buffer are
 * refused up front so that this end marker cannot be forged.
 */
#include "tlr_json.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

/* "offset N (line L, column C): why" for position off in buf. */
static void set_err(char *err, size_t errlen, const char *buf, size_t off,
                    const char *why)
{
    size_t line = 1, col = 1;

    if (err == NULL || errlen == 0)
        return;
    for (size_t i = 0; i < off; i++) {
        if (buf[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(err, errlen, "offset %zu (line %zu, column %zu): %s", off, line, col, why);
}

static bool is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int tlr_json_parse(const char *buf, size_t len, size_t max, json_object **out,
                   char *err, size_t errlen)
{
    json_tokener *tok = NULL;
    json_object *o = NULL;
    enum json_tokener_error jerr;
    const char *nul;
    size_t end;
    int rc = TLR_E_PARSE;

    if (buf == NULL || out == NULL)
        return TLR_E_INVAL;
    if (len > max || len > INT_MAX) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "input is %zu bytes, more than the limit of %zu",
                     len, max < INT_MAX ? max : (size_t)INT_MAX);
        return TLR_E_TOOBIG;
    }
    if ((nul = memchr(buf, '\0', len)) != NULL) {
        set_err(err, errlen, buf, (size_t)(nul - buf), "NUL byte in input");
        return TLR_E_PARSE;
    }

    tok = json_tokener_new_ex(TLR_JSON_MAX_DEPTH);
    if (tok == NULL)
        return TLR_E_NOMEM;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

    o = json_tokener_parse_ex(tok, buf, (int)len);
    jerr = json_tokener_get_error(tok);
    end = json_tokener_get_parse_end(tok);
    if (jerr == json_tokener_continue) {
        /* everything consumed and still open: signal end of input */
        o = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        end = len;
    }
    if (jerr != json_tokener_success) {
        set_err(err, errlen, buf, end, json_tokener_error_desc(jerr));
        goto out;
    }
    for (; end < len; end++) {
        if (!is_json_space(buf[end])) {
            set_err(err, errlen, buf, end, "unexpected data after the JSON value");
            goto out;
        }
    }
    *out = o;
    o = NULL;
    rc = TLR_OK;
out:
    json_object_put(o);
    json_tokener_free(tok);
    return rc;
}

/* Copy the next segment of *path into seg (at least strlen(*path)+1 bytes),
 * undoing escapes, and advance *path past it.  Returns the segment length;
 * *more says whether a dot (and so another segment) followed. */
static size_t next_segment(const char **path, char *seg, bool *more)
{
    const char *p = *path;
    size_t n = 0;

    while (*p != '\0' && *p != '.') {
        if (*p == '\\' && p[1] != '\0')
            p++;
        seg[n++] = *p++;
    }
    seg[n] = '\0';
    *more = *p == '.';
    *path = *more ? p + 1 : p;
    return n;
}

/* seg as an array index, or -1. */
static long segment_index(const char *seg, size_t n)
{
    long v = 0;

    if (n == 0 || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (seg[i] < '0' || seg[i] > '9')
            return -1;
        v = v * 10 + (seg[i] - '0');
    }
    return v;
}

json_object *tlr_json_get(json_object *o, const char *path)
{
    char small[256], *seg = small;
    size_t len;
    bool more = true;

    if (o == NULL || path == NULL)
        return NULL;
    if (*path == '\0')
        return o;
    len = strlen(path);
    if (len >= sizeof(small))
        seg = tlr_malloc(len + 1);
    while (o != NULL && more) {
        json_object *next = NULL;
        size_t n = next_segment(&path, seg, &more);
        long idx;

        if (json_object_is_type(o, json_type_object)) {
            if (!json_object_object_get_ex(o, seg, &next))
                next = NULL;
        } else if (json_object_is_type(o, json_type_array) &&
                   (idx = segment_index(seg, n)) >= 0 &&
                   (size_t)idx < json_object_array_length(o)) {
            next = json_object_array_get_idx(o, (size_t)idx);
        }
        o = next;
    }
    if (seg != small)
        free(seg);
    return o;   /* json-c represents null as NULL, so null is absent */
}

const char *tlr_json_str(json_object *o, const char *path)
{
    json_object *v = tlr_json_get(o, path);

    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

json_object *tlr_json_obj(json_object *o, const char *path)
{
    json_object *v = tlr_json_get(o, path);

    return v != NULL && json_object_is_type(v, json_type_object) ? v : NULL;
}

json_object *tlr_json_arr(json_object *o, const char *path)
{
    json_object *v = tlr_json_get(o, path);

    return v != NULL && json_object_is_type(v, json_type_array) ? v : NULL;
}

int tlr_json_int(json_object *o, const char *path, int64_t *out)
{
    json_object *v = tlr_json_get(o, path);
    int64_t i;

    if (out == NULL)
        return TLR_E_INVAL;
    if (v == NULL)
        return TLR_E_NOTFOUND;
    if (!json_object_is_type(v, json_type_int))
        return TLR_E_PARSE;
    i = json_object_get_int64(v);
    /* json-c clamps: INT64_MAX may stand for a larger unsigned value */
    if (i == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
        return TLR_E_RANGE;
    *out = i;
    return TLR_OK;
}

int tlr_json_bool(json_object *o, const char *path, bool *out)
{
    json_object *v = tlr_json_get(o, path);

    if (out == NULL)
        return TLR_E_INVAL;
    if (v == NULL)
        return TLR_E_NOTFOUND;
    if (!json_object_is_type(v, json_type_boolean))
        return TLR_E_PARSE;
    *out = json_object_get_boolean(v) != 0;
    return TLR_OK;
}

/* Go's strings.TrimSpace, ASCII part (Kubernetes trims quantity strings). */
static bool is_go_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

int tlr_json_quantity(json_object *o, const char *path, tlr_quantity *out)
{
    json_object *v = tlr_json_get(o, path);
    char num[32], *s = NULL;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    if (v == NULL)
        return TLR_E_NOTFOUND;
    switch (json_object_get_type(v)) {
    case json_type_string: {
        const char *b = json_object_get_string(v);
        size_t n = (size_t)json_object_get_string_len(v);

        while (n > 0 && is_go_space(*b)) {
            b++;
            n--;
        }
        while (n > 0 && is_go_space(b[n - 1]))
            n--;
        if (memchr(b, '\0', n) != NULL)
            return TLR_E_PARSE;
        s = tlr_strndup(b, n);
        rc = tlr_quantity_parse(s, out);
        free(s);
        return rc;
    }
    case json_type_int: {
        int64_t i = json_object_get_int64(v);
        uint64_t u = json_object_get_uint64(v);

        /* json-c clamps out-of-range integers to these: not the real value */
        if (i == INT64_MIN || u == UINT64_MAX)
            return TLR_E_RANGE;
        if (i == INT64_MAX && u > (uint64_t)INT64_MAX)
            snprintf(num, sizeof(num), "%llu", (unsigned long long)u);
        else
            snprintf(num, sizeof(num), "%lld", (long long)i);
        return tlr_quantity_parse(num, out);
    }
    case json_type_double:
        /* json-c keeps the text it parsed ("1.5", "1e3"); NaN fails to parse */
        return tlr_quantity_parse(json_object_get_string(v), out);
    default:
        return TLR_E_PARSE;
    }
}

int tlr_json_quantity_milli(json_object *o, const char *path, int64_t *out)
{
    tlr_quantity q;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    if ((rc = tlr_json_quantity(o, path, &q)) != TLR_OK)
        return rc;
    return tlr_quantity_milli(&q, out);
}

int tlr_json_quantity_value(json_object *o, const char *path, int64_t *out)
{
    tlr_quantity q;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    if ((rc = tlr_json_quantity(o, path, &q)) != TLR_OK)
        return rc;
    return tlr_quantity_value(&q, out);
}

const char *tlr_json_to_string(json_object *o, int flags)
{
    return json_object_to_json_string_ext(o, flags | JSON_C_TO_STRING_NOSLASHESCAPE);
}
