/* sigv4.c - AWS Signature Version 4: canonical request, string to sign,
 * signing key, Authorization header.  See tlr_sigv4.h for the canonical
 * rules; the official AWS test suite checks them (sigv4_test.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_sigv4.h"

/* Requests we sign are small; the ceiling only guards against a caller
 * passing something absurd (a multi-megabyte query string). */
#define SIGV4_MAX_CANONICAL (1024 * 1024)

static const char HEX[] = "0123456789ABCDEF";
static const char hex_lower[] = "0123456789abcdef";

static void to_hex(const unsigned char *in, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex_lower[in[i] >> 4];
        out[2 * i + 1] = hex_lower[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void tlr_sigv4_sha256_hex(const void *data, size_t len, char *hex)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (EVP_Digest(data != NULL ? data : "", len, md, &mdlen, EVP_sha256(), NULL) != 1)
        abort();   /* SHA-256 cannot fail short of a broken OpenSSL */
    to_hex(md, mdlen, hex);
}

static void hmac_sha256(const void *key, size_t keylen, const char *msg, size_t msglen,
                        unsigned char out[32])
{
    unsigned int outlen = 0;

    if (HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, msglen, out,
             &outlen) == NULL || outlen != 32)
        abort();
}

void tlr_sigv4_amz_date(int64_t wall_ms, char *buf)
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, 17, "%Y%m%dT%H%M%SZ", &tm);
}

static bool is_unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

int tlr_sigv4_uri_encode(tlr_buf *b, const char *s, size_t len, bool keep_slash)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int rc;

        if (is_unreserved(c) || (keep_slash && c == '/')) {
            rc = tlr_buf_addc(b, (char)c);
        } else {
            char esc[3] = { '%', HEX[c >> 4], HEX[c & 15] };
            rc = tlr_buf_add(b, esc, 3);
        }
        if (rc != TLR_OK)
            return rc;
    }
    return TLR_OK;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decode s[0..len) into a new string (owned); NULL on a bad
 * escape. */
static char *pct_decode(const char *s, size_t len)
{
    char *out = tlr_malloc(len + 1);
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%') {
            int hi, lo;

            if (i + 2 >= len) {
                free(out);
                return NULL;
            }
            hi = hexval(s[i + 1]);
            lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0) {
                free(out);
                return NULL;
            }
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

/* --- path ------------------------------------------------------------ */

/* Remove dot segments and empty segments (RFC 3986 5.2.4 plus AWS's
 * collapsing of "//"), keeping a trailing slash.  Returns an owned
 * string. */
static char *normalize_path(const char *path)
{
    size_t len = strlen(path);
    const char **seg = tlr_calloc(len + 1, sizeof(*seg));
    size_t *seglen = tlr_calloc(len + 1, sizeof(*seglen));
    size_t nseg = 0;
    bool trailing = len > 0 && path[len - 1] == '/';
    char *out;
    size_t o = 0;

    for (size_t i = 0; i < len;) {
        size_t j = i;

        while (j < len && path[j] != '/')
            j++;
        if (j - i == 0 || (j - i == 1 && path[i] == '.')) {
            /* empty or "." segment: dropped */
        } else if (j - i == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (nseg > 0)
                nseg--;
        } else {
            seg[nseg] = path + i;
            seglen[nseg] = j - i;
            nseg++;
        }
        i = j + 1;
    }
    /* A path ending in "/.." or "/." names a directory too. */
    if (len >= 2 && (strcmp(path + len - 2, "/.") == 0 ||
                     (len >= 3 && strcmp(path + len - 3, "/..") == 0)))
        trailing = true;

    out = tlr_malloc(len + 2);
    for (size_t k = 0; k < nseg; k++) {
        out[o++] = '/';
        memcpy(out + o, seg[k], seglen[k]);
        o += seglen[k];
    }
    if (o == 0 || trailing)
        out[o++] = '/';
    out[o] = '\0';
    free(seg);
    free(seglen);
    return out;
}

/* --- query ----------------------------------------------------------- */

typedef struct qpair {
    char *key;     /* encoded, owned */
    char *value;   /* encoded, owned */
} qpair;

static int qpair_cmp(const void *a, const void *b)
{
    const qpair *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    return c != 0 ? c : strcmp(x->value, y->value);
}

static char *encode_owned(const char *s)
{
    tlr_buf b;

    tlr_buf_init(&b, SIGV4_MAX_CANONICAL);
    if (tlr_sigv4_uri_encode(&b, s, strlen(s), false) != TLR_OK) {
        tlr_buf_free(&b);
        return NULL;
    }
    return tlr_buf_take(&b);
}

static int canonical_query(const char *q, tlr_buf *out)
{
    size_t len = q != NULL ? strlen(q) : 0;
    qpair *pairs = NULL;
    size_t n = 0, cap = 0;
    int rc = TLR_OK;

    for (size_t i = 0; i < len;) {
        size_t j = i, eq;
        char *k = NULL, *v = NULL;

        while (j < len && q[j] != '&')
            j++;
        if (j > i) {
            eq = i;
            while (eq < j && q[eq] != '=')
                eq++;
            k = pct_decode(q + i, eq - i);
            v = eq < j ? pct_decode(q + eq + 1, j - eq - 1) : tlr_strdup("");
            if (k == NULL || v == NULL) {
                free(k);
                free(v);
                rc = TLR_E_INVAL;
                goto out;
            }
            TLR_GROW(pairs, cap, n + 1);
            pairs[n].key = encode_owned(k);
            pairs[n].value = encode_owned(v);
            free(k);
            free(v);
            n++;
            if (pairs[n - 1].key == NULL || pairs[n - 1].value == NULL) {
                rc = TLR_E_TOOBIG;
                goto out;
            }
        }
        i = j + 1;
    }
    if (n > 0)
        qsort(pairs, n, sizeof(*pairs), qpair_cmp);
    for (size_t i = 0; i < n && rc == TLR_OK; i++)
        rc = tlr_buf_printf(out, "%s%s=%s", i ? "&" : "", pairs[i].key, pairs[i].value);
out:
    for (size_t i = 0; i < n; i++) {
        free(pairs[i].key);
        free(pairs[i].value);
    }
    free(pairs);
    return rc;
}

/* --- headers --------------------------------------------------------- */

typedef struct chdr {
    char  *name;    /* lower-cased, owned */
    tlr_buf value;  /* trimmed values joined with ',' */
    size_t order;   /* first appearance, to keep sorting stable */
} chdr;

static int chdr_cmp(const void *a, const void *b)
{
    const chdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    if (c != 0)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

static bool is_token_char(unsigned char c)
{
    return isalnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Append v trimmed, with runs of spaces and tabs collapsed to one space. */
static int add_trimmed(tlr_buf *b, const char *v)
{
    bool space = false, any = false;
    int rc = TLR_OK;

    for (const unsigned char *p = (const unsigned char *)v; *p && rc == TLR_OK; p++) {
        if (*p == ' ' || *p == '\t') {
            space = any;
            continue;
        }
        if (*p < 0x20 || *p == 0x7f)
            return TLR_E_INVAL;
        if (space)
            rc = tlr_buf_addc(b, ' ');
        if (rc == TLR_OK)
            rc = tlr_buf_addc(b, (char)*p);
        space = false;
        any = true;
    }
    return rc;
}

static bool valid_amz_date(const char *d)
{
    if (strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
        return false;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)d[i]))
            return false;
    return true;
}

void tlr_sigv4_result_free(tlr_sigv4_result *res)
{
    if (res == NULL)
        return;
    free(res->canonical_request);
    free(res->string_to_sign);
    if (res->authorization != NULL) {
        OPENSSL_cleanse(res->authorization, strlen(res->authorization));
        free(res->authorization);
    }
    memset(res, 0, sizeof(*res));
}

int tlr_sigv4_sign(const tlr_sigv4_request *r, const tlr_sigv4_key *k,
                   tlr_sigv4_result *out)
{
    chdr *h = NULL;
    size_t nh = 0;
    tlr_buf creq, sts, signed_hdrs, authz;
    char *path = NULL;
    const char *amz_date = NULL;
    char payload[65], creq_hash[65];
    unsigned char kdate[32], kregion[32], kservice[32], ksigning[32], sig[32];
    char date8[9], sighex[65];
    char *secret = NULL;
    size_t secret_len;
    int rc = TLR_OK;

    tlr_buf_init(&creq, SIGV4_MAX_CANONICAL);
    tlr_buf_init(&sts, SIGV4_MAX_CANONICAL);
    tlr_buf_init(&signed_hdrs, SIGV4_MAX_CANONICAL);
    tlr_buf_init(&authz, SIGV4_MAX_CANONICAL);
    if (r == NULL || k == NULL || out == NULL || r->method == NULL ||
        k->access_key_id == NULL || k->secret_access_key == NULL || k->region == NULL ||
        k->service == NULL || (r->nheaders > 0 && r->headers == NULL) ||
        (r->body == NULL && r->body_len > 0)) {
        rc = TLR_E_INVAL;
        goto out;
    }

    /* Headers: lower-case, merge repeats, sort. */
    h = tlr_calloc(r->nheaders + 1, sizeof(*h));
    for (size_t i = 0; i < r->nheaders; i++) {
        const tlr_sigv4_header *in = &r->headers[i];
        chdr *slot = NULL;
        char *lname;

        if (in->name == NULL || in->value == NULL || in->name[0] == '\0') {
            rc = TLR_E_INVAL;
            goto out;
        }
        lname = tlr_strdup(in->name);
        for (char *p = lname; *p; p++) {
            if (!is_token_char((unsigned char)*p)) {
                free(lname);
                rc = TLR_E_INVAL;
                goto out;
            }
            *p = (char)tolower((unsigned char)*p);
        }
        for (size_t j = 0; j < nh; j++)
            if (strcmp(h[j].name, lname) == 0)
                slot = &h[j];
        if (slot == NULL) {
            slot = &h[nh];
            slot->name = lname;
            slot->order = nh;
            tlr_buf_init(&slot->value, SIGV4_MAX_CANONICAL);
            nh++;
        } else {
            free(lname);
            if ((rc = tlr_buf_addc(&slot->value, ',')) != TLR_OK)
                goto out;
        }
        if ((rc = add_trimmed(&slot->value, in->value)) != TLR_OK)
            goto out;
    }
    qsort(h, nh, sizeof(*h), chdr_cmp);
    for (size_t i = 0; i < nh; i++)
        if (strcmp(h[i].name, "x-amz-date") == 0)
            amz_date = tlr_buf_str(&h[i].value);
    if (amz_date == NULL || !valid_amz_date(amz_date)) {
        rc = TLR_E_INVAL;
        goto out;
    }

    /* Canonical request. */
    path = r->no_normalize_path ? tlr_strdup(r->path != NULL && r->path[0] ? r->path : "/")
                                : normalize_path(r->path != NULL ? r->path : "/");
    if ((rc = tlr_buf_printf(&creq, "%s\n", r->method)) != TLR_OK ||
        (rc = tlr_sigv4_uri_encode(&creq, path, strlen(path), true)) != TLR_OK ||
        (rc = tlr_buf_addc(&creq, '\n')) != TLR_OK ||
        (rc = canonical_query(r->query, &creq)) != TLR_OK ||
        (rc = tlr_buf_addc(&creq, '\n')) != TLR_OK)
        goto out;
    for (size_t i = 0; i < nh; i++) {
        if ((rc = tlr_buf_printf(&creq, "%s:%s\n", h[i].name, tlr_buf_str(&h[i].value))) != TLR_OK ||
            (rc = tlr_buf_printf(&signed_hdrs, "%s%s", i ? ";" : "", h[i].name)) != TLR_OK)
            goto out;
    }
    if (r->payload_hash != NULL)
        snprintf(payload, sizeof(payload), "%s", r->payload_hash);
    else
        tlr_sigv4_sha256_hex(r->body, r->body_len, payload);
    if ((rc = tlr_buf_printf(&creq, "\n%s\n%s", tlr_buf_str(&signed_hdrs), payload)) != TLR_OK)
        goto out;

    /* String to sign. */
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    tlr_sigv4_sha256_hex(creq.data, creq.len, creq_hash);
    if ((rc = tlr_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amz_date,
                             date8, k->region, k->service, creq_hash)) != TLR_OK)
        goto out;

    /* Signing key: HMAC chain from "AWS4" + secret. */
    secret_len = strlen(k->secret_access_key) + 4;
    secret = tlr_malloc(secret_len + 1);
    snprintf(secret, secret_len + 1, "AWS4%s", k->secret_access_key);
    hmac_sha256(secret, secret_len, date8, 8, kdate);
    hmac_sha256(kdate, 32, k->region, strlen(k->region), kregion);
    hmac_sha256(kregion, 32, k->service, strlen(k->service), kservice);
    hmac_sha256(kservice, 32, "aws4_request", 12, ksigning);
    hmac_sha256(ksigning, 32, sts.data, sts.len, sig);

    to_hex(sig, 32, sighex);
    if ((rc = tlr_buf_printf(&authz,
                             "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
                             "SignedHeaders=%s, Signature=%s",
                             k->access_key_id, date8, k->region, k->service,
                             tlr_buf_str(&signed_hdrs), sighex)) != TLR_OK)
        goto out;
    memset(out, 0, sizeof(*out));
    memcpy(out->signature, sighex, sizeof(sighex));
    out->canonical_request = tlr_buf_take(&creq);
    out->string_to_sign = tlr_buf_take(&sts);
    out->authorization = tlr_buf_take(&authz);
out:
    if (secret != NULL) {
        OPENSSL_cleanse(secret, secret_len);
        free(secret);
    }
    OPENSSL_cleanse(kdate, sizeof(kdate));
    OPENSSL_cleanse(kregion, sizeof(kregion));
    OPENSSL_cleanse(kservice, sizeof(kservice));
    OPENSSL_cleanse(ksigning, sizeof(ksigning));
    for (size_t i = 0; i < nh; i++) {
        free(h[i].name);
        tlr_buf_free(&h[i].value);
    }
    free(h);
    free(path);
    tlr_buf_free(&creq);
    tlr_buf_free(&sts);
    tlr_buf_free(&signed_hdrs);
    tlr_buf_free(&authz);
    return rc;
}
