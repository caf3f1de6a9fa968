/* tlr_sigv4.h - AWS Signature Version 4 (HMAC-SHA256) on OpenSSL.
 *
 * The signer is a pure function: given the request as it will be sent
 * (method, path, query, the headers to sign, the body) and the
 * credentials, it builds the canonical request, the string to sign, the
 * signing key and the Authorization header value.  It does not add headers
 * itself: the caller sends exactly the headers it passed in (Host,
 * X-Amz-Date, X-Amz-Security-Token for session credentials, ...) plus the
 * returned Authorization.  The date is taken from the x-amz-date header,
 * which must be among them, so a signature is reproducible in tests.
 *
 * Canonical form (docs.aws.amazon.com "Create a canonical request"):
 *  - path: as sent on the wire; dot segments and repeated slashes removed
 *    (normalize_path=true, every service but S3), then every byte outside
 *    A-Z a-z 0-9 - . _ ~ / percent-encoded (uppercase hex).  An
 *    already-encoded path is thus encoded a second time, which is what
 *    AWS asks for every service except S3.
 *  - query: split on '&' and the first '=', each part percent-decoded then
 *    re-encoded strictly, pairs sorted by key then value.
 *  - headers: names lower-cased, values trimmed with inner runs of spaces
 *    collapsed, repeated headers joined with ',' in the order given,
 *    sorted by name; all of them are signed.
 *  - payload: lowercase hex SHA-256 of the body, or a given hash such as
 *    "UNSIGNED-PAYLOAD".
 */
#ifndef TLR_SIGV4_H
#define TLR_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tlr_buf.h"

typedef struct tlr_sigv4_header {
    const char *name;    /* borrowed; any case */
    const char *value;   /* borrowed */
} tlr_sigv4_header;

typedef struct tlr_sigv4_request {
    const char *method;                 /* "POST" */
    const char *path;                   /* "/" as on the wire; NULL = "/" */
    const char *query;                  /* "a=1&b=2" without '?'; NULL = none */
    const tlr_sigv4_header *headers;    /* must include x-amz-date and host */
    size_t nheaders;
    const void *body;                   /* may be NULL when body_len is 0 */
    size_t body_len;
    const char *payload_hash;           /* NULL = SHA-256 of body */
    bool no_normalize_path;             /* S3 style: keep the path as is */
} tlr_sigv4_request;

typedef struct tlr_sigv4_key {
    const char *access_key_id;          /* borrowed */
    const char *secret_access_key;      /* borrowed; never logged */
    const char *region;                 /* "us-east-1" */
    const char *service;                /* "ec2" */
} tlr_sigv4_key;

/* What tlr_sigv4_sign produces; every string owned, free with
 * tlr_sigv4_result_free(). */
typedef struct tlr_sigv4_result {
    char *canonical_request;
    char *string_to_sign;
    char *authorization;                /* the Authorization header value */
    char  signature[65];                /* lowercase hex */
} tlr_sigv4_result;

/* Sign r with k.  On TLR_OK *out is filled (owned by the caller).
 * TLR_E_INVAL: a NULL field, no x-amz-date header or one not of the form
 * YYYYMMDDTHHMMSSZ, a header name with a character outside the token set,
 * a value with a control character, or a bad %XX escape in the query. */
int  tlr_sigv4_sign(const tlr_sigv4_request *r, const tlr_sigv4_key *k,
                    tlr_sigv4_result *out);
void tlr_sigv4_result_free(tlr_sigv4_result *res);   /* NULL is fine */

/* wall_ms as X-Amz-Date "20150830T123600Z"; buf holds >= 17 bytes. */
void tlr_sigv4_amz_date(int64_t wall_ms, char *buf);

/* Lowercase hex SHA-256 of data[0..len) into hex (65 bytes). */
void tlr_sigv4_sha256_hex(const void *data, size_t len, char *hex);

/* Append s to b percent-encoded as AWS wants (unreserved kept, space as
 * %20, everything else %XX uppercase); keep_slash leaves '/' as is.
 * Returns the tlr_buf error (TLR_E_TOOBIG past its ceiling). */
int  tlr_sigv4_uri_encode(tlr_buf *b, const char *s, size_t len, bool keep_slash);

#endif
