/* tlr_json.h - small helpers on json-c for Kubernetes objects and config.
 *
 * Parsing is strict (RFC 8259 as json-c's strict mode sees it, UTF-8
 * checked), bounded (a ceiling on the input size and nesting depth) and
 * explains itself: a malformed document yields "offset 17 (line 2,
 * column 5): boolean expected".
 *
 * Getters take a path of member names separated by dots, as in
 * "metadata.name".  A backslash takes the next character literally, for
 * label and annotation keys that contain dots:
 *     "metadata.labels.karpenter\\.sh/nodepool"   (C source spelling)
 * A segment of decimal digits indexes an array ("spec.containers.0.name").
 * The empty path names o itself.  JSON null counts as absent, as it does
 * for Go's encoding/json with omitempty fields.
 *
 * Every json_object pointer passed in is borrowed; every one returned is
 * borrowed from it (valid while the root lives and is not modified) unless
 * said otherwise.
 */
#ifndef TLR_JSON_H
#define TLR_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tlr_quantity.h"

/* Deepest nesting tlr_json_parse accepts (managedFields nest deeply). */
#define TLR_JSON_MAX_DEPTH 64

/* Parse exactly one JSON value (surrounding whitespace allowed) from
 * buf[0..len); buf is borrowed and need not be NUL-terminated.
 * On TLR_OK *out is new and owned by the caller: json_object_put() it.
 * TLR_E_TOOBIG: len > max.  TLR_E_PARSE: malformed (including NUL bytes,
 * trailing data, nesting deeper than TLR_JSON_MAX_DEPTH).  On error, if err
 * is not NULL, a one-line reason is written to err (errlen bytes, always
 * NUL-terminated, truncated if need be).  TLR_E_INVAL on NULL buf/out. */
int tlr_json_parse(const char *buf, size_t len, size_t max, json_object **out,
                   char *err, size_t errlen);

/* The value at path under o, of any type; NULL if absent or null. */
json_object *tlr_json_get(json_object *o, const char *path);

/* The string at path; NULL if absent or not a string. */
const char *tlr_json_str(json_object *o, const char *path);

/* The object / array at path; NULL if absent or of another type. */
json_object *tlr_json_obj(json_object *o, const char *path);
json_object *tlr_json_arr(json_object *o, const char *path);

/* The integer at path.  TLR_E_NOTFOUND: absent or null.  TLR_E_PARSE: not
 * a JSON integer (strings, 1.0 and 1e3 included, as in Go).  TLR_E_RANGE:
 * beyond int64.  *out written only on TLR_OK. */
int tlr_json_int(json_object *o, const char *path, int64_t *out);

/* The boolean at path; errors as tlr_json_int. */
int tlr_json_bool(json_object *o, const char *path, bool *out);

/* The Kubernetes quantity at path, given as a JSON string ("1.5Gi", with
 * surrounding whitespace trimmed as Kubernetes does) or a JSON number (1.5,
 * 1e3).  TLR_E_NOTFOUND: absent or null.  TLR_E_PARSE: another type or not
 * a quantity.  TLR_E_RANGE: as tlr_quantity_parse, or a number json-c could
 * only hold clamped.  The _milli/_value forms then convert as
 * tlr_quantity_milli/_value.  *out written only on TLR_OK. */
int tlr_json_quantity(json_object *o, const char *path, tlr_quantity *out);
int tlr_json_quantity_milli(json_object *o, const char *path, int64_t *out);
int tlr_json_quantity_value(json_object *o, const char *path, int64_t *out);

/* o serialised with json-c flags (JSON_C_TO_STRING_PLAIN, ...), without
 * escaping '/'.  Borrowed: valid until o is modified or freed.  "null" for
 * a NULL o. */
const char *tlr_json_to_string(json_object *o, int flags);

#endif
