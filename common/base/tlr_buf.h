/* tlr_buf.h - a growable byte buffer with a ceiling.
 *
 * Every buffer that grows from outside input is created with a maximum
 * size (curl's dynbuf idea): appending past it fails with TLR_E_TOOBIG and
 * leaves the buffer as it was, so a hostile peer cannot make us allocate
 * without bound.  The content is always NUL-terminated for convenience.
 */
#ifndef TLR_BUF_H
#define TLR_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct tlr_buf {
    char  *data;   /* owned; NULL until the first append */
    size_t len;
    size_t cap;
    size_t max;    /* ceiling on len, set at init */
} tlr_buf;

void   tlr_buf_init(tlr_buf *b, size_t max);
void   tlr_buf_free(tlr_buf *b);                 /* back to empty; reusable */
void   tlr_buf_reset(tlr_buf *b);                /* len = 0, keeps memory */
int    tlr_buf_add(tlr_buf *b, const void *p, size_t n);
int    tlr_buf_adds(tlr_buf *b, const char *s);
int    tlr_buf_addc(tlr_buf *b, char c);
int    tlr_buf_printf(tlr_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int    tlr_buf_vprintf(tlr_buf *b, const char *fmt, va_list ap);
/* Length of the valid UTF-8 sequence at p (1..4), or 0 when p does not
 * start one (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
 * Reads past p only while the bytes still fit, so a NUL ends it. */
size_t tlr_utf8_len(const unsigned char *p);
/* Append s as a JSON string literal, quotes included.  JSON is UTF-8: a
 * byte that does not start or continue a valid UTF-8 sequence (overlong,
 * surrogate, past U+10FFFF, cut short) is written as U+FFFD, in UTF-8
 * like every other character past ASCII, so that a string read back and
 * written again gives the same bytes. */
int    tlr_buf_add_json_str(tlr_buf *b, const char *s);
/* The same with at most max bytes of s (cut on a character boundary);
 * a longer s ends in "...(N bytes)" inside the literal, N its length. */
int    tlr_buf_add_json_strn(tlr_buf *b, const char *s, size_t max);
/* Hand the content over: the caller owns the returned string (never NULL);
 * the buffer is left empty. */
char  *tlr_buf_take(tlr_buf *b);
static inline const char *tlr_buf_str(const tlr_buf *b) { return b->data ? b->data : ""; }

#endif
