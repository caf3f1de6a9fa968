/* yamlout.c - json-c values to a YAML stream, with libyaml's emitter.
 *
 * kubectl and tlr_yaml_parse type plain scalars by YAML 1.1 rules, so a
 * string such as "100", "true", "no", "1e3" or "" written plainly would
 * come back as a number, a boolean or null.  Each string is therefore
 * tried as a plain scalar through tlr_yaml_parse (the reader this project
 * and kubectl agree on); anything that does not read back as the same
 * string is double-quoted.  Everything else is left to libyaml, which
 * quotes what cannot be plain at all (": ", leading "-", ...).
 */
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "tlr_err.h"
#include "tlr_nodegroup.h"
#include "tlr_yaml.h"

static int on_write(void *arg, unsigned char *p, size_t n)
{
    return tlr_buf_add(arg, p, n) == TLR_OK;
}

static bool reads_back(const char *s)
{
    json_object *docs = NULL;
    size_t n = strlen(s);
    bool ok = false;

    if (n == 0 || strchr(s, '\n'))
        return false;
    if (tlr_yaml_parse(s, n, NULL, &docs, NULL, 0) == TLR_OK &&
        json_object_array_length(docs) == 1) {
        json_object *v = json_object_array_get_idx(docs, 0);
        ok = json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), s);
    }
    json_object_put(docs);
    return ok;
}

static int scalar(yaml_emitter_t *em, const char *s, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                      style))
        return TLR_E_INTERNAL;
    return yaml_emitter_emit(em, &ev) ? TLR_OK : TLR_E_TOOBIG;
}

static int node(yaml_emitter_t *em, json_object *v)
{
    yaml_event_t ev;
    char num[64];
    int rc = TLR_OK;

    switch (json_object_get_type(v)) {
    case json_type_null:
        return scalar(em, "null", YAML_PLAIN_SCALAR_STYLE);
    case json_type_boolean:
        return scalar(em, json_object_get_boolean(v) ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
    case json_type_int:
        snprintf(num, sizeof(num), "%lld", (long long)json_object_get_int64(v));
        return scalar(em, num, YAML_PLAIN_SCALAR_STYLE);
    case json_type_double:
        snprintf(num, sizeof(num), "%.17g", json_object_get_double(v));
        return scalar(em, num, YAML_PLAIN_SCALAR_STYLE);
    case json_type_string: {
        const char *s = json_object_get_string(v);
        return scalar(em, s, reads_back(s) ? YAML_PLAIN_SCALAR_STYLE
                                           : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    }
    case json_type_array: {
        size_t n = json_object_array_length(v);
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                             n ? YAML_BLOCK_SEQUENCE_STYLE
                                               : YAML_FLOW_SEQUENCE_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return TLR_E_TOOBIG;
        for (size_t i = 0; i < n && rc == TLR_OK; i++)
            rc = node(em, json_object_array_get_idx(v, i));
        yaml_sequence_end_event_initialize(&ev);
        return rc == TLR_OK && !yaml_emitter_emit(em, &ev) ? TLR_E_TOOBIG : rc;
    }
    case json_type_object: {
        yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                            json_object_object_length(v)
                                                ? YAML_BLOCK_MAPPING_STYLE
                                                : YAML_FLOW_MAPPING_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return TLR_E_TOOBIG;
        json_object_object_foreach(v, k, val) {
            if ((rc = scalar(em, k, reads_back(k) ? YAML_PLAIN_SCALAR_STYLE
                                                  : YAML_DOUBLE_QUOTED_SCALAR_STYLE)) ||
                (rc = node(em, val)))
                return rc;
        }
        yaml_mapping_end_event_initialize(&ev);
        return yaml_emitter_emit(em, &ev) ? TLR_OK : TLR_E_TOOBIG;
    }
    }
    return TLR_E_INTERNAL;
}

int tlr_ng_yaml_write(json_object *docs, tlr_buf *out)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    int rc = TLR_OK;
    size_t n = json_object_array_length(docs);

    if (!yaml_emitter_initialize(&em))
        return TLR_E_NOMEM;
    yaml_emitter_set_output(&em, on_write, out);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);     /* never fold long lines */
    yaml_emitter_set_indent(&em, 2);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    if (!yaml_emitter_emit(&em, &ev))
        rc = TLR_E_TOOBIG;
    for (size_t i = 0; i < n && rc == TLR_OK; i++) {
        yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0);
        if (!yaml_emitter_emit(&em, &ev)) {
            rc = TLR_E_TOOBIG;
            break;
        }
        if ((rc = node(&em, json_object_array_get_idx(docs, i))) != TLR_OK)
            break;
        yaml_document_end_event_initialize(&ev, 1);
        if (!yaml_emitter_emit(&em, &ev))
            rc = TLR_E_TOOBIG;
    }
    if (rc == TLR_OK) {
        yaml_stream_end_event_initialize(&ev);
        if (!yaml_emitter_emit(&em, &ev) || !yaml_emitter_flush(&em))
            rc = TLR_E_TOOBIG;
    }
    yaml_emitter_delete(&em);
    return rc;
}
