/* tlr_toml.h - TOML documents to json-c and back, for Bottlerocket user
 * data (its settings are TOML: [settings.kubernetes] ...).
 *
 * Parsing (tlr_toml_parse) accepts TOML 1.0 as user data uses it:
 * comments; bare, quoted ("..." and '...') and dotted keys; [tables],
 * [dotted.tables] and [[arrays.of.tables]]; basic strings with escapes
 * (\b \t \n \f \r \" \\ \uXXXX \UXXXXXXXX), literal strings, multi-line
 * basic and literal strings; integers (decimal with _, 0x, 0o, 0b);
 * floats (with exponent, inf and nan refused: JSON has neither);
 * booleans; arrays (across lines, trailing comma); inline tables.
 * Offset date-times are kept as strings.  Defining a key twice, or a
 * table twice, is an error, as TOML says.  Errors name the line:
 * "line 4: expected '=' after key".
 *
 * The result is a json-c object: tables are objects, arrays arrays,
 * strings strings, integers int64, floats doubles, booleans booleans.
 *
 * Writing (tlr_toml_write) is the inverse for a JSON object whose leaves
 * are strings, integers, doubles, booleans and arrays of those (or of
 * objects, written as arrays of tables): scalars of a table first, each
 * "key = value", keys in the object's order, then its sub-tables as
 * [a.b] sections, depth first.  Keys that are not bare (A-Za-z0-9_-) are
 * quoted.  The same object always gives the same bytes.  null values are
 * left out.  TLR_E_INVAL when the root is not an object.
 */
#ifndef TLR_TOML_H
#define TLR_TOML_H

#include <stddef.h>

#include <json-c/json.h>

#define TLR_TOML_MAX_BYTES (1u << 20)
#define TLR_TOML_MAX_DEPTH 32

/* Parse buf[0..len) (borrowed).  On TLR_OK *out is a new JSON object owned
 * by the caller (json_object_put).  TLR_E_PARSE with "line N: reason" in
 * err; TLR_E_TOOBIG over the limits. */
int tlr_toml_parse(const char *buf, size_t len, json_object **out, char *err, size_t errlen);

/* Write obj (borrowed) as TOML.  On TLR_OK *out is new, NUL-terminated,
 * owned (free()). */
int tlr_toml_write(json_object *obj, char **out);

#endif
