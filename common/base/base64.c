/* base64.c - RFC 4648 base64 (tlr_base64.h), plain C: common/base sits
 * below OpenSSL's users and its EVP_DecodeBlock() is too lenient anyway
 * ("=" decodes as a letter anywhere). */
#include "tlr_base64.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *tlr_base64_encode(const void *data, size_t len)
{
    const unsigned char *p = data;
    char *out, *o;

    if (len > (SIZE_MAX - 4) / 4 * 3)
        abort();   /* no caller has such a buffer: a bug */
    out = o = tlr_malloc(4 * ((len + 2) / 3) + 1);
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;

        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        *o++ = ALPHABET[(v >> 18) & 63];
        *o++ = ALPHABET[(v >> 12) & 63];
        *o++ = i + 1 < len ? ALPHABET[(v >> 6) & 63] : '=';
        *o++ = i + 2 < len ? ALPHABET[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static int decode(const char *s, size_t len, bool lax, char **out, size_t *outlen)
{
    size_t k = 0, nlet = 0, npad = 0;   /* bytes out, letters, "=" seen */
    uint32_t acc = 0;
    char *buf;

    if (out == NULL || (s == NULL && len > 0))
        return TLR_E_INVAL;
    buf = tlr_malloc(len / 4 * 3 + 3);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int v;

        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        if (c == '=') {
            npad++;
            continue;
        }
        if (npad > 0 || (v = sextet(c)) < 0)
            goto bad;   /* a letter after padding, or not a letter */
        acc = acc << 6 | (uint32_t)v;
        if (++nlet % 4 == 0) {
            buf[k++] = (char)(acc >> 16);
            buf[k++] = (char)(acc >> 8 & 0xff);
            buf[k++] = (char)(acc & 0xff);
            acc = 0;
        }
    }
    /* The last group: 0, 2 or 3 letters (one letter cannot make a byte),
     * padded to four unless lax. */
    size_t r = nlet % 4;
    if (r == 1 || npad > 2 || (!lax && npad != (4 - r) % 4))
        goto bad;
    if (r == 2) {
        buf[k++] = (char)(acc >> 4 & 0xff);
    } else if (r == 3) {
        buf[k++] = (char)(acc >> 10 & 0xff);
        buf[k++] = (char)(acc >> 2 & 0xff);
    }
    buf[k] = '\0';
    *out = buf;
    if (outlen != NULL)
        *outlen = k;
    return TLR_OK;
bad:
    free(buf);
    return TLR_E_PARSE;
}

int tlr_base64_decode(const char *s, size_t len, char **out, size_t *outlen)
{
    return decode(s, len, false, out, outlen);
}

int tlr_base64_decode_lax(const char *s, size_t len, char **out, size_t *outlen)
{
    return decode(s, len, true, out, outlen);
}
