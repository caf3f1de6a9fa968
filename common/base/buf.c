/* buf.c - growable buffer with a ceiling. */
#include "tlr_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

void tlr_buf_init(tlr_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void tlr_buf_free(tlr_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void tlr_buf_reset(tlr_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int ensure(tlr_buf *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return TLR_E_TOOBIG;
    size_t need = b->len + extra + 1;
    if (need > b->cap) {
        size_t ncap = b->cap ? b->cap : 64;
        while (ncap < need)
            ncap *= 2;
        b->data = tlr_realloc(b->data, ncap);
        b->cap = ncap;
    }
    return TLR_OK;
}

int tlr_buf_add(tlr_buf *b, const void *p, size_t n)
{
    int rc = ensure(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return TLR_OK;
}

int tlr_buf_adds(tlr_buf *b, const char *s)
{
    return tlr_buf_add(b, s, strlen(s));
}

int tlr_buf_addc(tlr_buf *b, char c)
{
    return tlr_buf_add(b, &c, 1);
}

int tlr_buf_vprintf(tlr_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return TLR_E_INVAL;
    int rc = ensure(b, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return TLR_OK;
}

int tlr_buf_printf(tlr_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = tlr_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

size_t tlr_utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (size_t k = 1; k < n; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

int tlr_buf_add_json_strn(tlr_buf *b, const char *s, size_t max)
{
    static const char hex[] = "0123456789abcdef";
    size_t start = b->len;
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *begin = p;
    int rc = tlr_buf_addc(b, '"');
    while (!rc && *p) {
        size_t n = tlr_utf8_len(p);
        if ((size_t)(p - begin) + (n ? n : 1) > max)
            break;
        switch (*p) {
        case '"':  rc = tlr_buf_add(b, "\\\"", 2); break;
        case '\\': rc = tlr_buf_add(b, "\\\\", 2); break;
        case '\n': rc = tlr_buf_add(b, "\\n", 2); break;
        case '\r': rc = tlr_buf_add(b, "\\r", 2); break;
        case '\t': rc = tlr_buf_add(b, "\\t", 2); break;
        default:
            if (*p < 0x20) {
                char esc[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };
                rc = tlr_buf_add(b, esc, 6);
            } else if (n == 0) {
                rc = tlr_buf_add(b, "\xef\xbf\xbd", 3);   /* U+FFFD */
            } else {
                rc = tlr_buf_add(b, (const char *)p, n);
            }
        }
        p += n ? n : 1;
    }
    if (!rc && *p)
        rc = tlr_buf_printf(b, "...(%zu bytes)", (size_t)(p - begin) + strlen((const char *)p));
    if (!rc)
        rc = tlr_buf_addc(b, '"');
    if (rc) {               /* all or nothing */
        b->len = start;
        if (b->data)
            b->data[start] = '\0';
    }
    return rc;
}

int tlr_buf_add_json_str(tlr_buf *b, const char *s)
{
    return tlr_buf_add_json_strn(b, s, SIZE_MAX);
}

char *tlr_buf_take(tlr_buf *b)
{
    char *s = b->data ? b->data : tlr_strdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}
