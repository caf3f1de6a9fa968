/* tlr_base64.h - base64 (RFC 4648 section 4: the standard alphabet, "="
 * padding), the one codec for EC2 user data, kubeconfig *-data fields,
 * CA bundles and MIME parts.
 *
 * Decoding skips whitespace (space, tab, CR, LF) anywhere, since EC2,
 * XML and MIME wrap long lines.  Bits left over in the last group are
 * not checked (no decoder tailor talks to sets them; Go and OpenSSL do
 * not check them either).
 */
#ifndef TLR_BASE64_H
#define TLR_BASE64_H

#include <stddef.h>

/* data[0..len) (borrowed; may be NULL when len is 0) in base64 with
 * padding and no line breaks.  The result is new, NUL-terminated and
 * owned by the caller (free()); never NULL. */
char *tlr_base64_encode(const void *data, size_t len);

/* Decode s[0..len) (borrowed; need not be NUL-terminated).  On TLR_OK
 * *out is new and owned by the caller (free()), NUL-terminated after its
 * *outlen bytes (which may hold NULs); outlen may be NULL.  Neither is
 * written on error.  TLR_E_PARSE: a character outside the alphabet (a NUL
 * included), bad padding ("=" not at the end, or not what the last group
 * needs) or a length, whitespace aside, that is not a multiple of 4.
 * TLR_E_INVAL: out is NULL, or s is NULL with len > 0. */
int tlr_base64_decode(const char *s, size_t len, char **out, size_t *outlen);

/* As tlr_base64_decode, but the padding is not checked: the last group
 * may be short (2 or 3 letters) and be followed by up to two "=",
 * needed or not ("QQ", "QQ=", "QUJD=" all decode).  A group of one
 * letter, more than two "=" or a letter after "=" is still TLR_E_PARSE.
 * For the readers that have always been that tolerant (EC2 user data,
 * MIME parts); new code wants tlr_base64_decode. */
int tlr_base64_decode_lax(const char *s, size_t len, char **out, size_t *outlen);

#endif
