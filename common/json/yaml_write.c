/* yaml_write.c - json-c values as block-style YAML (tlr_yaml_write).
 *
 * The output is for people (a NodeConfig someone may read on a node) and
 * for parsers we do not control (nodeadm's sigs.k8s.io/yaml, Python's
 * yaml), so it keeps to the part of YAML every parser agrees on: block
 * mappings and sequences, plain scalars only when they cannot be read as
 * anything but the same string, and otherwise double-quoted scalars with
 * JSON's escapes (a JSON string literal is a valid YAML double-quoted
 * scalar, YAML 1.1 and 1.2 alike).
 *
 * The plain-scalar test is deliberately conservative: anything that
 * starts like a number, a YAML indicator or a special word is quoted,
 * even where a given parser would have read it as a string.
 */
#include "tlr_yaml.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tlr_buf.h"
#include "tlr_err.h"

static const char *const special_words[] = {
    /* null, booleans (YAML 1.1 as go-yaml v2 reads them) and the merge key */
    "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
    "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
    "<<", "=", NULL,
};

/* Could s be read back as a number (int in any base, float, .inf/.nan)?
 * Conservative: a string made only of characters that occur in numbers and
 * starting like one is assumed to be one. */
static bool numberish(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (*p == '.')
        return true;   /* .5, .inf, .nan, and "..." (a document end marker) */
    if (!(*p >= '0' && *p <= '9'))
        return false;
    for (; *p != '\0'; p++)
        if (strchr("0123456789abcdefABCDEFxXoO_.+-:", *p) == NULL)
            return false;
    return true;   /* 12, 0x1F, 1e3, 1_000, 1:30 (sexagesimal in YAML 1.1) */
}

static bool needs_quotes(const char *s, size_t len)
{
    if (len == 0 || strlen(s) != len)
        return true;
    if (s[0] == ' ' || s[len - 1] == ' ')
        return true;
    if (strchr("-?:,[]{}#&*!|>'\"%@`", s[0]) != NULL)
        return true;
    for (const char *const *w = special_words; *w != NULL; w++)
        if (strcmp(s, *w) == 0)
            return true;
    if (numberish(s))
        return true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return true;   /* tabs, line breaks, control characters */
        if ((c == ':' && (i + 1 == len || s[i + 1] == ' ')) || (c == '#' && s[i - 1] == ' '))
            return true;
        if (c >= 0x80)
            return true;   /* Unicode blanks and line breaks (NEL, U+2028) are not plain-safe everywhere */
    }
    return false;
}

static void put_str(tlr_buf *b, const char *s, size_t len)
{
    if (!needs_quotes(s, len)) {
        tlr_buf_add(b, s, len);
        return;
    }
    /* A JSON string literal, by hand so that embedded NULs survive too. */
    tlr_buf_addc(b, '"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': tlr_buf_adds(b, "\\\""); break;
        case '\\': tlr_buf_adds(b, "\\\\"); break;
        case '\n': tlr_buf_adds(b, "\\n"); break;
        case '\t': tlr_buf_adds(b, "\\t"); break;
        case '\r': tlr_buf_adds(b, "\\r"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                tlr_buf_printf(b, "\\u%04x", c);
            else
                tlr_buf_addc(b, (char)c);   /* UTF-8 passes as is */
        }
    }
    tlr_buf_addc(b, '"');
}

static bool nonempty_container(json_object *v)
{
    return (json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0) ||
           (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0);
}

static int put_scalar(tlr_buf *b, json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        tlr_buf_adds(b, "null");
        break;
    case json_type_boolean:
        tlr_buf_adds(b, json_object_get_boolean(v) ? "true" : "false");
        break;
    case json_type_int:
        tlr_buf_adds(b, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        break;
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
        break;
    }
    case json_type_string:
        put_str(b, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        break;
    case json_type_object:
        tlr_buf_adds(b, "{}");
        break;
    case json_type_array:
        tlr_buf_adds(b, "[]");
        break;
    }
    return TLR_OK;
}

static void indent_to(tlr_buf *b, int n)
{
    for (int i = 0; i < n; i++)
        tlr_buf_addc(b, ' ');
}

/* Write the non-empty container v with its lines at column ind.  placed:
 * the cursor already stands at column ind on the first line (after "- "). */
static int put_node(tlr_buf *b, json_object *v, int ind, bool placed, int depth)
{
    int rc = TLR_OK;

    if (depth > TLR_YAML_DEFAULT_MAX_DEPTH)
        return TLR_E_TOOBIG;
    if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *e = json_object_array_get_idx(v, i);
            if (!(placed && i == 0))
                indent_to(b, ind);
            tlr_buf_adds(b, "- ");
            if (nonempty_container(e)) {
                rc = put_node(b, e, ind + 2, true, depth + 1);
            } else {
                rc = put_scalar(b, e);
                tlr_buf_addc(b, '\n');
            }
            if (rc != TLR_OK)
                return rc;
        }
        return TLR_OK;
    }
    bool first = true;
    json_object_object_foreach(v, k, e) {
        if (!(placed && first))
            indent_to(b, ind);
        first = false;
        put_str(b, k, strlen(k));
        if (nonempty_container(e)) {
            tlr_buf_adds(b, ":\n");
            rc = put_node(b, e, ind + 2, false, depth + 1);
        } else {
            tlr_buf_adds(b, ": ");
            rc = put_scalar(b, e);
            tlr_buf_addc(b, '\n');
        }
        if (rc != TLR_OK)
            return rc;
    }
    return TLR_OK;
}

int tlr_yaml_write(json_object *obj, char **out)
{
    tlr_buf b;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    tlr_buf_init(&b, (size_t)-1);
    if (nonempty_container(obj)) {
        rc = put_node(&b, obj, 0, false, 1);
    } else {
        rc = put_scalar(&b, obj);
        tlr_buf_addc(&b, '\n');
    }
    if (rc == TLR_OK)
        *out = tlr_buf_take(&b);
    tlr_buf_free(&b);
    return rc;
}
