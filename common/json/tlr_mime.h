/* tlr_mime.h - MIME multipart/mixed documents, as cloud-init and nodeadm
 * read EC2 user data (RFC 2045/2046, the subset user data uses).
 *
 * Reading (tlr_mime_parse): the document starts with header lines
 * ("Name: value", folded continuation lines joined, names
 * case-insensitive; CRLF or LF line ends); a blank line ends the
 * headers.  It is multipart when its Content-Type's media type starts
 * with "multipart/" and it names a boundary parameter (quoted or not).
 * The body is split on lines "--BOUNDARY" (a delimiter line may carry
 * trailing blanks); "--BOUNDARY--" closes it; text before the first
 * delimiter (the preamble) and after the closing one is ignored.  Each
 * part has its own headers and a body; the line break before a delimiter
 * belongs to the delimiter, not to the part.  A part with
 * "Content-Transfer-Encoding: base64" is decoded.  A document that is not
 * multipart, or whose closing delimiter is missing, is TLR_E_PARSE with
 * the reason in err (Go's mime/multipart reports the missing close as
 * an unexpected EOF, and nodeadm then fails).
 *
 * Writing (tlr_mime_write): "MIME-Version: 1.0", "Content-Type:
 * multipart/mixed; boundary=\"B\"", a blank line, then per part
 * "--B", its "Content-Type: ..." header, a blank line, its body, and a
 * final "--B--".  LF line ends; byte-for-byte the same for the same
 * parts (user data must be deterministic).  The boundary is chosen by
 * the caller ("//" is Karpenter's) and must not occur in any body as a
 * delimiter line; TLR_E_INVAL if it does.
 */
#ifndef TLR_MIME_H
#define TLR_MIME_H

#include <stddef.h>

#define TLR_MIME_MAX_BYTES (16u << 20)   /* EC2 allows 16 KiB; be generous */
#define TLR_MIME_MAX_PARTS 64

typedef struct tlr_mime_part {
    char *content_type;     /* the full Content-Type header value, "" when absent */
    char *body;             /* NUL-terminated; may hold NULs only if binary */
    size_t len;             /* body length */
} tlr_mime_part;

typedef struct tlr_mime_doc {
    tlr_mime_part *parts;
    size_t n;
} tlr_mime_doc;

/* Does buf look like a MIME document (its first non-blank text starts with
 * "MIME-Version:" or "Content-Type:", case-insensitive)?  Karpenter and
 * nodeadm decide this way whether user data is MIME. */
int  tlr_mime_looks_like(const char *buf, size_t len);

/* Parse buf[0..len) (borrowed).  On TLR_OK *out is filled and owned by the
 * caller (tlr_mime_doc_free).  TLR_E_PARSE (not multipart, no boundary,
 * unterminated, bad base64) or TLR_E_TOOBIG (over TLR_MIME_MAX_BYTES or
 * TLR_MIME_MAX_PARTS), with a reason in err (errlen bytes, may be 0). */
int  tlr_mime_parse(const char *buf, size_t len, tlr_mime_doc *out, char *err, size_t errlen);
void tlr_mime_doc_free(tlr_mime_doc *d);   /* contents; NULL fine */

/* The media type of a Content-Type value, lowercased, without parameters,
 * into out (outlen bytes): "text/x-shellscript; charset=..." ->
 * "text/x-shellscript". */
void tlr_mime_media_type(const char *content_type, char *out, size_t outlen);

/* Write parts[0..n) (borrowed) as one multipart/mixed document with
 * boundary.  On TLR_OK *out is new, NUL-terminated, owned by the caller
 * (free()).  TLR_E_INVAL: the boundary occurs as a delimiter in a body. */
int  tlr_mime_write(const tlr_mime_part *parts, size_t n, const char *boundary, char **out);

#endif
