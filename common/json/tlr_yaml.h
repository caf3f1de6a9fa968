/* tlr_yaml.h - YAML streams to json-c, the way kubectl reads manifests.
 *
 * kubectl turns YAML into JSON before it looks at a manifest
 * (sigs.k8s.io/yaml, built on go-yaml v2), so a value means whatever that
 * conversion makes of it.  tlr_yaml_parse does the same:
 *
 *   - a stream holds many documents separated by "---"; empty documents
 *     (nothing, only comments, or a bare null) are left out, as kubectl
 *     skips them;
 *   - quoted, literal (|) and folded (>) scalars are strings, always;
 *   - plain scalars are typed by go-yaml v2's YAML 1.1 rules:
 *       null:  "" ~ null Null NULL
 *       bool:  true/false, yes/no, on/off, y/n (in lower, Title and UPPER
 *              case: "yes" is true, as kubectl reads it)
 *       int:   Go's ParseInt with base prefixes after "_" are removed:
 *              12, -3, +7, 0x1F, 0o17, 017 (octal), 0b101, 1_000;
 *              beyond int64 an unsigned 64-bit value, beyond that a float
 *       float: 1.5, .5, -2e3, 1e3 (a float with an integral value that
 *              fits exactly becomes a JSON integer, as Go's encoder prints
 *              it: replicas: 1e1 means 10);  .inf and .nan are refused,
 *              JSON has no such numbers
 *       everything else, timestamps included, is a string;
 *   - explicit tags: !!str, !!int, !!float, !!bool, !!null force a type
 *     (a value that is not of that type is an error); other tags are
 *     ignored and the scalar is a string, as go-yaml v2 does;
 *   - mapping keys become strings (an int key 1 is "1", true is "true");
 *     a sequence or mapping as a key is an error; a repeated key: the last
 *     one wins;
 *   - anchors (&a), aliases (*a) and merge keys (<<: *a, or a sequence of
 *     aliases) work; explicit keys win over merged ones;
 *   - limits: input size, nesting depth, documents, and the number of
 *     nodes aliases may expand to (counted as if every alias were copied),
 *     which stops "billion laughs" documents at a fixed, small cost.
 *
 * Errors name the line and column (1-based) and say what is wrong:
 *   "line 3, column 5: mapping values are not allowed in this context".
 */
#ifndef TLR_YAML_H
#define TLR_YAML_H

#include <stddef.h>

#include <json-c/json.h>

#define TLR_YAML_DEFAULT_MAX_BYTES       (64u << 20)   /* 64 MiB */
#define TLR_YAML_DEFAULT_MAX_DEPTH       100
#define TLR_YAML_DEFAULT_MAX_DOCS        100000
#define TLR_YAML_DEFAULT_MAX_ALIAS_NODES 100000

/* Ceilings; a zero field takes the default above. */
typedef struct tlr_yaml_limits {
    size_t max_bytes;        /* input length */
    int    max_depth;        /* nested sequences and mappings */
    size_t max_docs;         /* non-empty documents in the stream */
    size_t max_alias_nodes;  /* nodes added by alias expansion, in total */
} tlr_yaml_limits;

/* Parse the YAML stream buf[0..len) (borrowed; need not be NUL-terminated;
 * JSON is valid YAML and parses too).  lim is borrowed and may be NULL.
 * On TLR_OK *docs is a new JSON array, owned by the caller (json_object_put
 * it), holding one value per non-empty document in order; aliased values
 * may be shared between places in it (json-c reference counts), so treat
 * the result as read-only.
 * TLR_E_PARSE: malformed YAML, a bad tagged value, an unknown alias, a
 * non-scalar key, .inf/.nan, NUL bytes.  TLR_E_TOOBIG: input, depth,
 * documents or alias expansion over the limits.  TLR_E_INVAL: NULL buf or
 * docs.  On error a one-line reason with line and column goes to err
 * (errlen bytes, always NUL-terminated) when err is not NULL. */
int tlr_yaml_parse(const char *buf, size_t len, const tlr_yaml_limits *lim,
                   json_object **docs, char *err, size_t errlen);

/* Write obj (borrowed; NULL is JSON null) as one YAML document in block
 * style: 2-space indent, mapping keys in the object's order, sequences
 * of mappings as "- key: value".  Strings are plain where that reads back
 * as the same string under the rules above, and JSON-escaped double-quoted
 * scalars otherwise (values that look like null, booleans or numbers,
 * leading or trailing blanks, YAML indicators, line breaks, "").
 * Integers, doubles, booleans and null are plain; empty objects and arrays
 * are {} and [].  tlr_yaml_parse of the text gives obj back (except that
 * a double with an integral value, 2.0, reads back as the integer 2, as it
 * would in kubectl).  On TLR_OK *out is new, NUL-terminated and ends in a
 * newline, owned by the caller (free()).  TLR_E_INVAL: NULL out, a
 * non-finite double.  TLR_E_TOOBIG: nested deeper than
 * TLR_YAML_DEFAULT_MAX_DEPTH. */
int tlr_yaml_write(json_object *obj, char **out);

#endif
