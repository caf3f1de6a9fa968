/* mime.c - the multipart/mixed subset of MIME that EC2 user data uses.
 *
 * Reading is line oriented.  A "line" is the text up to LF, with a CR
 * before the LF dropped, so CRLF and LF documents read the same.  The
 * document's headers come first; then the body is cut at delimiter lines.
 * What a part holds is everything between the line end of one delimiter
 * and the start of the line break that precedes the next one (RFC 2046
 * 5.1.1: that break is part of the delimiter), so a body that ended in a
 * newline keeps it and one that did not gains none: writing the parts
 * back gives the same bytes.
 *
 * Writing follows Go's mime/multipart writer with its CRs removed, which is
 * what Karpenter emits, so a document read and written again is stable.
 */
#include "tlr_mime.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tlr_alloc.h"
#include "tlr_base64.h"
#include "tlr_buf.h"
#include "tlr_err.h"

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* One line of text: [start, start+len) without its line break; next is
 * where the following line starts (end of input when there is none). */
typedef struct line {
    size_t start, len, next;
} line;

static bool line_at(const char *buf, size_t len, size_t pos, line *l)
{
    if (pos >= len)
        return false;
    const char *nl = memchr(buf + pos, '\n', len - pos);
    size_t end = nl != NULL ? (size_t)(nl - buf) : len;
    l->start = pos;
    l->next = nl != NULL ? end + 1 : len;
    if (end > pos && buf[end - 1] == '\r')
        end--;
    l->len = end - pos;
    return true;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

int tlr_mime_looks_like(const char *buf, size_t len)
{
    static const char *const starts[] = { "MIME-Version:", "Content-Type:" };
    size_t i = 0;

    if (buf == NULL)
        return 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    for (size_t k = 0; k < 2; k++) {
        size_t n = strlen(starts[k]);
        if (len - i >= n && strncasecmp(buf + i, starts[k], n) == 0)
            return 1;
    }
    return 0;
}

/* The headers we care about, as values owned here. */
typedef struct headers {
    char *content_type;
    char *encoding;      /* Content-Transfer-Encoding */
} headers;

static void headers_free(headers *h)
{
    free(h->content_type);
    free(h->encoding);
    h->content_type = h->encoding = NULL;
}

static char *trimmed_dup(const char *s, size_t n)
{
    while (n > 0 && is_blank(*s)) {
        s++;
        n--;
    }
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    return tlr_strndup(s, n);
}

/* Read the header block of buf[pos..len); *body is where the text after the
 * blank line starts (len when the block runs to the end).  lineno is the
 * 1-based line number of pos, for messages. */
static int headers_read(const char *buf, size_t len, size_t pos, size_t lineno, headers *h,
                        size_t *body, char *err, size_t errlen)
{
    char **last = NULL;   /* the header a folded line continues */
    char *ignored = NULL; /* stays NULL: stands for headers we do not keep */
    line l;

    *body = len;
    for (; line_at(buf, len, pos, &l); pos = l.next, lineno++) {
        const char *s = buf + l.start;
        if (l.len == 0) {
            *body = l.next;
            return TLR_OK;
        }
        if (is_blank(s[0])) {
            if (last == NULL)
                return fail(err, errlen, TLR_E_PARSE,
                            "line %zu: continuation line before any header", lineno);
            if (*last != NULL) {
                char *more = trimmed_dup(s, l.len);
                size_t a = strlen(*last), b = strlen(more);
                *last = tlr_realloc(*last, a + b + 2);
                (*last)[a] = ' ';
                memcpy(*last + a + 1, more, b + 1);
                free(more);
            }
            continue;
        }
        const char *colon = memchr(s, ':', l.len);
        if (colon == NULL || colon == s)
            return fail(err, errlen, TLR_E_PARSE,
                        "line %zu: malformed header line \"%.40s\" (no \"Name:\")", lineno, s);
        size_t nlen = (size_t)(colon - s);
        char **slot = NULL;
        if (nlen == 12 && strncasecmp(s, "Content-Type", 12) == 0)
            slot = &h->content_type;
        else if (nlen == 25 && strncasecmp(s, "Content-Transfer-Encoding", 25) == 0)
            slot = &h->encoding;
        if (slot != NULL && *slot == NULL) {   /* the first one counts, as in Go */
            *slot = trimmed_dup(colon + 1, l.len - nlen - 1);
            last = slot;
        } else {
            last = &ignored;   /* its continuation lines are dropped */
        }
    }
    return TLR_OK;
}

void tlr_mime_media_type(const char *content_type, char *out, size_t outlen)
{
    size_t n = 0;

    if (outlen == 0)
        return;
    if (content_type != NULL) {
        while (is_blank(*content_type))
            content_type++;
        for (; content_type[n] != '\0' && content_type[n] != ';' && n + 1 < outlen; n++)
            out[n] = (char)tolower((unsigned char)content_type[n]);
    }
    while (n > 0 && is_blank(out[n - 1]))
        n--;
    out[n] = '\0';
}

/* The value of parameter name in a Content-Type value; new, or NULL. */
static char *ct_param(const char *ct, const char *name)
{
    size_t nlen = strlen(name);
    const char *p = strchr(ct, ';');

    while (p != NULL) {
        p++;
        while (is_blank(*p))
            p++;
        if (strncasecmp(p, name, nlen) == 0) {
            const char *q = p + nlen;
            while (is_blank(*q))
                q++;
            if (*q == '=') {
                q++;
                while (is_blank(*q))
                    q++;
                if (*q == '"') {
                    tlr_buf b;
                    tlr_buf_init(&b, strlen(q) + 1);
                    for (q++; *q != '\0' && *q != '"'; q++) {
                        if (*q == '\\' && q[1] != '\0')
                            q++;
                        tlr_buf_addc(&b, *q);
                    }
                    if (*q != '"') {
                        tlr_buf_free(&b);
                        return NULL;
                    }
                    return tlr_buf_take(&b);
                }
                size_t n = strcspn(q, "; \t");
                return n > 0 ? tlr_strndup(q, n) : NULL;
            }
        }
        p = strchr(p, ';');
    }
    return NULL;
}

/* Is s[0..n) a delimiter line for boundary b?  *close: it is the last. */
static bool is_delim(const char *s, size_t n, const char *b, size_t blen, bool *close)
{
    if (n < blen + 2 || s[0] != '-' || s[1] != '-' || memcmp(s + 2, b, blen) != 0)
        return false;
    s += blen + 2;
    n -= blen + 2;
    *close = n >= 2 && s[0] == '-' && s[1] == '-';
    if (*close) {
        s += 2;
        n -= 2;
    }
    for (size_t i = 0; i < n; i++)
        if (!is_blank(s[i]))
            return false;
    return true;
}

/* Decode a base64 body s[0..n) into a new buffer.  This reader skips
 * every isspace() character and tolerates short or missing padding;
 * tlr_base64 skips blanks and line breaks but not \v and \f, so those go
 * first. */
static bool b64_body(const char *s, size_t n, char **out, size_t *outlen)
{
    char *t = tlr_malloc(n + 1);
    size_t k = 0;
    int rc;

    for (size_t i = 0; i < n; i++)
        if (s[i] != '\v' && s[i] != '\f')
            t[k++] = s[i];
    rc = tlr_base64_decode_lax(t, k, out, outlen);
    free(t);
    return rc == TLR_OK;
}

void tlr_mime_doc_free(tlr_mime_doc *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->parts[i].content_type);
        free(d->parts[i].body);
    }
    free(d->parts);
    d->parts = NULL;
    d->n = 0;
}

/* Turn the text of one part (delimiters and the break before the next one
 * excluded) into doc's next part. */
static int part_add(tlr_mime_doc *doc, size_t *cap, const char *buf, size_t start, size_t end,
                    size_t lineno, char *err, size_t errlen)
{
    headers h = { 0 };
    size_t body;
    int rc;

    if (doc->n >= TLR_MIME_MAX_PARTS)
        return fail(err, errlen, TLR_E_TOOBIG, "more than %d parts", TLR_MIME_MAX_PARTS);
    rc = headers_read(buf, end, start, lineno, &h, &body, err, errlen);
    if (rc != TLR_OK)
        goto out;
    TLR_GROW(doc->parts, *cap, doc->n + 1);
    tlr_mime_part *p = &doc->parts[doc->n];
    if (h.encoding != NULL && strcasecmp(h.encoding, "base64") == 0) {
        if (!b64_body(buf + body, end - body, &p->body, &p->len)) {
            rc = fail(err, errlen, TLR_E_PARSE, "line %zu: part %zu: bad base64 body", lineno,
                      doc->n + 1);
            goto out;
        }
    } else {
        p->len = end - body;
        p->body = tlr_malloc(p->len + 1);   /* not strndup: a body may hold NULs */
        memcpy(p->body, buf + body, p->len);
        p->body[p->len] = '\0';
    }
    p->content_type = h.content_type != NULL ? h.content_type : tlr_strdup("");
    h.content_type = NULL;
    doc->n++;
out:
    headers_free(&h);
    return rc;
}

int tlr_mime_parse(const char *buf, size_t len, tlr_mime_doc *out, char *err, size_t errlen)
{
    tlr_mime_doc doc = { 0 };
    headers h = { 0 };
    char *boundary = NULL;
    char media[64];
    size_t pos = 0, lineno = 1, body, cap = 0, blen;
    size_t part_start = 0, part_line = 0;
    bool in_part = false, closed = false;
    line l;
    int rc;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (buf == NULL || out == NULL)
        return fail(err, errlen, TLR_E_INVAL, "no input");
    if (len > TLR_MIME_MAX_BYTES)
        return fail(err, errlen, TLR_E_TOOBIG, "%zu bytes, more than the limit of %u", len,
                    TLR_MIME_MAX_BYTES);
    /* Blank lines before the headers: tlr_mime_looks_like skips them too. */
    while (line_at(buf, len, pos, &l) && l.len == 0) {
        pos = l.next;
        lineno++;
    }
    rc = headers_read(buf, len, pos, lineno, &h, &body, err, errlen);
    if (rc != TLR_OK)
        goto out;
    for (size_t i = pos; i < body; i++)
        lineno += buf[i] == '\n';
    if (h.content_type == NULL) {
        rc = fail(err, errlen, TLR_E_PARSE, "no Content-Type header");
        goto out;
    }
    tlr_mime_media_type(h.content_type, media, sizeof(media));
    if (strncmp(media, "multipart/", 10) != 0) {
        rc = fail(err, errlen, TLR_E_PARSE, "Content-Type \"%.60s\" is not multipart", media);
        goto out;
    }
    boundary = ct_param(h.content_type, "boundary");
    if (boundary == NULL || boundary[0] == '\0') {
        rc = fail(err, errlen, TLR_E_PARSE, "multipart Content-Type names no boundary");
        goto out;
    }
    blen = strlen(boundary);
    for (pos = body; !closed && line_at(buf, len, pos, &l); pos = l.next, lineno++) {
        bool close;
        if (!is_delim(buf + l.start, l.len, boundary, blen, &close))
            continue;
        if (in_part) {
            /* The break before the delimiter belongs to the delimiter. */
            size_t end = l.start;
            if (end > part_start && buf[end - 1] == '\n')
                end--;
            if (end > part_start && buf[end - 1] == '\r')
                end--;
            if (end < part_start)
                end = part_start;
            rc = part_add(&doc, &cap, buf, part_start, end, part_line, err, errlen);
            if (rc != TLR_OK)
                goto out;
        }
        closed = close;
        in_part = true;
        part_start = l.next;
        part_line = lineno + 1;
    }
    if (!closed) {
        rc = fail(err, errlen, TLR_E_PARSE,
                  "line %zu: unexpected end: no closing delimiter \"--%.60s--\"",
                  lineno > 1 ? lineno - 1 : lineno, boundary);   /* the last line read */
        goto out;
    }
    *out = doc;
    doc = (tlr_mime_doc){ 0 };
out:
    tlr_mime_doc_free(&doc);
    headers_free(&h);
    free(boundary);
    return rc;
}

/* Does body hold a line that a reader would take for a delimiter? */
static bool body_has_delim(const char *body, size_t len, const char *b)
{
    size_t blen = strlen(b), pos = 0;
    bool close;
    line l;

    for (; line_at(body, len, pos, &l); pos = l.next)
        if (is_delim(body + l.start, l.len, b, blen, &close))
            return true;
    return false;
}

int tlr_mime_write(const tlr_mime_part *parts, size_t n, const char *boundary, char **out)
{
    tlr_buf b;
    int rc = TLR_OK;

    if (out == NULL || boundary == NULL || boundary[0] == '\0' ||
        strpbrk(boundary, "\"\\\r\n") != NULL || (n > 0 && parts == NULL))
        return TLR_E_INVAL;
    for (size_t i = 0; i < n; i++) {
        const char *ct = parts[i].content_type != NULL ? parts[i].content_type : "";
        if (strpbrk(ct, "\r\n") != NULL ||
            (parts[i].len > 0 && body_has_delim(parts[i].body, parts[i].len, boundary)))
            return TLR_E_INVAL;
    }
    tlr_buf_init(&b, (size_t)-1);
    tlr_buf_printf(&b, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"%s\"\n\n",
                   boundary);
    for (size_t i = 0; i < n; i++) {
        const char *ct = parts[i].content_type != NULL ? parts[i].content_type : "";
        if (i > 0)
            tlr_buf_addc(&b, '\n');
        tlr_buf_printf(&b, "--%s\n", boundary);
        if (ct[0] != '\0')
            tlr_buf_printf(&b, "Content-Type: %s\n", ct);
        tlr_buf_addc(&b, '\n');
        if (parts[i].len > 0)
            tlr_buf_add(&b, parts[i].body, parts[i].len);
    }
    tlr_buf_printf(&b, "%s--%s--\n", n > 0 ? "\n" : "", boundary);
    *out = tlr_buf_take(&b);
    return rc;
}
