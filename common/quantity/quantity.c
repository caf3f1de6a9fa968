/* quantity.c - Kubernetes resource quantities: parse, print, convert.
 *
 * Kubernetes keeps a quantity as an arbitrary-precision decimal and rounds
 * it up to a whole number of nano-units when parsing.  Every value tailor
 * accepts is below 10^29 in magnitude, so the same thing fits in a 128-bit
 * count of nano-units (10^29 * 10^9 < 2^128): exact, no floating point, and
 * comparison and MilliValue()/Value() are integer division.
 *
 * Parsing mirrors apimachinery's ParseQuantity in three steps:
 *   1. scan: the same permissive scanner (sign, leading zeros, integer
 *      digits, '.', fraction digits, then a suffix made of the letters
 *      "eEinumkKMGTP", an optional sign and digits) - anything else is a
 *      syntax error;
 *   2. interpret the suffix (decimal SI, binary SI or an e/E exponent);
 *   3. compute the exact value from the significant digits, round it up
 *      to 1n (away from zero: we round the magnitude), and cap binary
 *      values at 2^63-1.
 * Kubernetes has a fast int64 path and a slow inf.Dec path; they agree on
 * every value, but only the slow path rejects a number without any digit
 * ("Ei", "e-10"), while the fast one reads it as zero ("Mi", "e5", "-").
 * check_no_digits() reproduces which inputs take the slow path.
 *
 * Binary suffixes multiply by up to 2^60, which can carry digits far below
 * 1n up above it, so the significant digits are kept as a decimal digit
 * string and multiplied exactly before rounding.
 */
#include "tlr_quantity.h"

#include <stdbool.h>
#include <string.h>

#include "tlr_err.h"

typedef unsigned __int128 u128;

#define NANO            1000000000ULL
/* Values must stay below 10^MAX_INT_DIGITS. */
#define MAX_INT_DIGITS  29
/* 2^60 has 19 decimal digits: room for the binary product. */
#define BIN_EXTRA       20

static const char *const dec_suffix[] = {   /* by exponent/3 + 3: 1e-9 .. 1e18 */
    "n", "u", "m", "", "k", "M", "G", "T", "P", "E",
};
static const char *const bin_suffix[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };

static u128 q_nanos(const tlr_quantity *q)
{
    return ((u128)q->nano_hi << 64) | q->nano_lo;
}

static tlr_quantity q_make(u128 nanos, bool neg, int fmt)
{
    tlr_quantity q = {
        .nano_hi = (uint64_t)(nanos >> 64),
        .nano_lo = (uint64_t)nanos,
        .neg = nanos != 0 && neg,
        .fmt = fmt,
    };
    return q;
}

static u128 pow10_u128(int n)
{
    u128 v = 1;
    while (n-- > 0)
        v *= 10;
    return v;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* What the scanner found; pointers borrow from the input string. */
typedef struct qscan {
    bool        neg;
    bool        has_digit;   /* any digit at all, leading zeros included */
    const char *num;         /* integer digits after leading zeros */
    size_t      nnum;
    const char *den;         /* fraction digits */
    size_t      nden;
    const char *suf;
    size_t      nsuf;
} qscan;

/* Step 1: Kubernetes' parseQuantityString. */
static int scan_quantity(const char *s, qscan *sc)
{
    size_t pos = 0, end = strlen(s);

    memset(sc, 0, sizeof(*sc));
    sc->num = sc->den = sc->suf = s + end;
    if (s[0] == '-' || s[0] == '+') {
        sc->neg = s[0] == '-';
        pos++;
    }
    while (pos < end && s[pos] == '0') {
        sc->has_digit = true;
        pos++;
    }
    if (pos == end)
        return TLR_OK;   /* only a sign and zeros: zero, no suffix */

    sc->num = s + pos;
    while (pos < end && is_digit(s[pos]))
        pos++;
    sc->nnum = (size_t)(s + pos - sc->num);
    if (pos < end && s[pos] == '.') {
        pos++;
        sc->den = s + pos;
        while (pos < end && is_digit(s[pos]))
            pos++;
        sc->nden = (size_t)(s + pos - sc->den);
    }
    if (sc->nnum > 0 || sc->nden > 0)
        sc->has_digit = true;

    sc->suf = s + pos;
    while (pos < end && strchr("eEinumkKMGTP", s[pos]) != NULL)
        pos++;
    if (pos < end && (s[pos] == '-' || s[pos] == '+'))
        pos++;
    while (pos < end && is_digit(s[pos]))
        pos++;
    if (pos != end)
        return TLR_E_PARSE;
    sc->nsuf = end - (size_t)(sc->suf - s);
    return TLR_OK;
}

/* Go's strconv.ParseInt(s, 10, 64) on n bytes: optional sign, digits. */
static int parse_int64(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0, lim;

    if (i < n && (s[i] == '+' || s[i] == '-')) {
        neg = s[i] == '-';
        i++;
    }
    if (i == n)
        return TLR_E_PARSE;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        if (!is_digit(s[i]))
            return TLR_E_PARSE;
        if (v > (lim - (uint64_t)(s[i] - '0')) / 10)
            return TLR_E_PARSE;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return TLR_OK;
}

/* Step 2: the suffix as a power of ten (*exp10) or of two (*exp2 > 0). */
static int interpret_suffix(const char *suf, size_t n, int64_t *exp10, int *exp2,
                            int *fmt)
{
    static const struct { const char *s; int e10, e2; } table[] = {
        { "",   0, 0 }, { "n", -9, 0 }, { "u", -6, 0 }, { "m", -3, 0 },
        { "k",  3, 0 }, { "M",  6, 0 }, { "G",  9, 0 }, { "T", 12, 0 },
        { "P", 15, 0 }, { "E", 18, 0 },
        { "Ki", 0, 10 }, { "Mi", 0, 20 }, { "Gi", 0, 30 }, { "Ti", 0, 40 },
        { "Pi", 0, 50 }, { "Ei", 0, 60 },
    };
    int64_t e;
    int rc;

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strlen(table[i].s) == n && memcmp(table[i].s, suf, n) == 0) {
            *exp10 = table[i].e10;
            *exp2 = table[i].e2;
            *fmt = table[i].e2 ? TLR_QFMT_BINARY_SI : TLR_QFMT_DECIMAL_SI;
            return TLR_OK;
        }
    }
    if (n < 2 || (suf[0] != 'e' && suf[0] != 'E'))
        return TLR_E_PARSE;
    if ((rc = parse_int64(suf + 1, n - 1, &e)) != TLR_OK)
        return rc;
    /* Kubernetes truncates the exponent to int32; we refuse instead. */
    if (e > INT32_MAX || e < INT32_MIN)
        return TLR_E_RANGE;
    *exp10 = e;
    *exp2 = 0;
    *fmt = TLR_QFMT_DECIMAL_EXP;
    return TLR_OK;
}

/* Kubernetes reads a digitless number ("", ".") as zero on its fast path
 * and rejects it on its slow path; this says which one it would take. */
static int check_no_digits(int64_t exp10, int exp2)
{
    if (exp2 > 0)
        /* binary fast path needs 15 - 1 - exp2*3/10 - 1 >= 0 */
        return exp2 * 3 / 10 > 13 ? TLR_E_PARSE : TLR_OK;
    return exp10 < -9 ? TLR_E_PARSE : TLR_OK;
}

/* The significant digits of a number: value = d[0..n) * 10^exp10. */
typedef struct qdigits {
    unsigned char d[TLR_QUANTITY_MAX_DIGITS + BIN_EXTRA];
    size_t        n;
    int64_t       exp10;
} qdigits;

static int collect_digits(const qscan *sc, int64_t exp10, qdigits *g)
{
    size_t pending = 0;   /* zeros seen since the last non-zero digit */

    g->n = 0;
    for (size_t i = 0; i < sc->nnum + sc->nden; i++) {
        char c = i < sc->nnum ? sc->num[i] : sc->den[i - sc->nnum];

        if (c == '0') {
            if (g->n > 0)
                pending++;
            continue;
        }
        if (g->n + pending + 1 > TLR_QUANTITY_MAX_DIGITS)
            return TLR_E_RANGE;
        while (pending > 0) {
            g->d[g->n++] = 0;
            pending--;
        }
        g->d[g->n++] = (unsigned char)(c - '0');
    }
    /* The string is bounded by memory, so these sizes fit easily. */
    g->exp10 = exp10 - (int64_t)sc->nden + (int64_t)pending;
    return TLR_OK;
}

/* g *= 2^exp2 (exp2 <= 60), exactly. */
static void digits_mul_pow2(qdigits *g, int exp2)
{
    unsigned char carry_digits[BIN_EXTRA];
    size_t nc = 0;
    u128 carry = 0, m = (u128)1 << exp2;

    for (size_t i = g->n; i-- > 0;) {
        u128 t = g->d[i] * m + carry;

        g->d[i] = (unsigned char)(t % 10);
        carry = t / 10;
    }
    while (carry > 0) {
        carry_digits[nc++] = (unsigned char)(carry % 10);
        carry /= 10;
    }
    memmove(g->d + nc, g->d, g->n);
    for (size_t i = 0; i < nc; i++)
        g->d[i] = carry_digits[nc - 1 - i];
    g->n += nc;
}

/* Step 3: round g up to a whole number of nano-units.  TLR_E_RANGE if the
 * value is 10^MAX_INT_DIGITS or more. */
static int digits_to_nanos(const qdigits *g, u128 *out)
{
    int64_t top = (int64_t)g->n + g->exp10;   /* value < 10^top */
    bool sticky = false;
    u128 v = 0;

    if (top > MAX_INT_DIGITS)
        return TLR_E_RANGE;
    for (size_t i = 0; i < g->n; i++) {
        int64_t place = top - 1 - (int64_t)i;

        if (place >= -9)
            v = v * 10 + g->d[i];
        else if (g->d[i] != 0)
            sticky = true;
    }
    if (g->exp10 > -9)
        v *= pow10_u128((int)(g->exp10 + 9));
    if (sticky)
        v++;
    if (v >= pow10_u128(MAX_INT_DIGITS + 9))
        return TLR_E_RANGE;
    *out = v;
    return TLR_OK;
}

int tlr_quantity_parse(const char *s, tlr_quantity *out)
{
    const u128 max_bin = (u128)INT64_MAX * NANO;
    qdigits g;
    qscan sc;
    int64_t exp10;
    int exp2, fmt, rc;
    u128 nanos;

    if (out == NULL)
        return TLR_E_INVAL;
    if (s == NULL || s[0] == '\0')
        return TLR_E_PARSE;
    if ((rc = scan_quantity(s, &sc)) != TLR_OK)
        return rc;
    if ((rc = interpret_suffix(sc.suf, sc.nsuf, &exp10, &exp2, &fmt)) != TLR_OK)
        return rc;
    if (!sc.has_digit && (rc = check_no_digits(exp10, exp2)) != TLR_OK)
        return rc;
    if ((rc = collect_digits(&sc, exp10, &g)) != TLR_OK)
        return rc;
    if (g.n == 0) {
        *out = q_make(0, false, fmt);
        return TLR_OK;
    }
    if (exp2 == 0) {
        if ((rc = digits_to_nanos(&g, &nanos)) != TLR_OK)
            return rc;
    } else {
        digits_mul_pow2(&g, exp2);
        /* too big for digits_to_nanos means far above the cap */
        if (digits_to_nanos(&g, &nanos) != TLR_OK || nanos > max_bin)
            nanos = max_bin;
        if (nanos < NANO)
            fmt = TLR_QFMT_DECIMAL_SI;   /* "0.5Ki" is 512, not a fraction of Ki */
    }
    *out = q_make(nanos, sc.neg, fmt);
    return TLR_OK;
}

/* ceil(|q| / div), signed, into an int64. */
static int q_scaled(const tlr_quantity *q, u128 div, int64_t *out)
{
    u128 n, v;

    if (q == NULL || out == NULL)
        return TLR_E_INVAL;
    n = q_nanos(q);
    v = n / div + (n % div != 0);
    if (!q->neg) {
        if (v > (u128)INT64_MAX)
            return TLR_E_RANGE;
        *out = (int64_t)v;
    } else {
        if (v > (u128)INT64_MAX + 1)
            return TLR_E_RANGE;
        *out = v == (u128)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    }
    return TLR_OK;
}

int tlr_quantity_milli(const tlr_quantity *q, int64_t *out)
{
    return q_scaled(q, NANO / 1000, out);
}

int tlr_quantity_value(const tlr_quantity *q, int64_t *out)
{
    return q_scaled(q, NANO, out);
}

int tlr_quantity_cmp(const tlr_quantity *a, const tlr_quantity *b)
{
    u128 x = q_nanos(a), y = q_nanos(b);
    int sa = x == 0 ? 0 : a->neg ? -1 : 1;
    int sb = y == 0 ? 0 : b->neg ? -1 : 1;

    if (sa != sb)
        return sa < sb ? -1 : 1;
    if (x == y)
        return 0;
    /* same sign: larger magnitude is larger only when positive */
    return (x < y) == (sa > 0) ? -1 : 1;
}

static u128 abs_i64(int64_t v)
{
    return v < 0 ? (u128)(0 - (uint64_t)v) : (u128)v;
}

tlr_quantity tlr_quantity_from_milli(int64_t milli, tlr_quantity_fmt fmt)
{
    return q_make(abs_i64(milli) * (NANO / 1000), milli < 0, fmt);
}

tlr_quantity tlr_quantity_from_value(int64_t value, tlr_quantity_fmt fmt)
{
    return q_make(abs_i64(value) * NANO, value < 0, fmt);
}

/* Decimal digits of v at p; returns the count.  p has room for 40. */
static size_t u128_digits(u128 v, char *p)
{
    char tmp[40];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v > 0);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

/* Kubernetes' CanonicalizeBytes into tmp (TLR_QUANTITY_STR_MAX bytes). */
static void q_canonical(const tlr_quantity *q, char *tmp)
{
    u128 n = q_nanos(q), m;
    int fmt = q->fmt, e = -9;
    size_t len = 0;

    if (n == 0) {
        strcpy(tmp, "0");
        return;
    }
    if (q->neg)
        tmp[len++] = '-';
    if (fmt == TLR_QFMT_BINARY_SI) {
        if (n < (u128)1024 * NANO || n % NANO != 0) {
            /* below 1Ki, or a fraction: binary would round or confuse */
            fmt = TLR_QFMT_DECIMAL_SI;
        } else {
            int k = 0;

            m = n / NANO;
            while (m % 1024 == 0 && k < 6) {
                m /= 1024;
                k++;
            }
            len += u128_digits(m, tmp + len);
            strcpy(tmp + len, bin_suffix[k]);
            return;
        }
    } else if (fmt != TLR_QFMT_DECIMAL_SI) {
        fmt = TLR_QFMT_DECIMAL_EXP;   /* as Kubernetes does for unknown formats */
    }

    m = n;
    while (m % 10 == 0) {
        m /= 10;
        e++;
    }
    while (e % 3 != 0) {   /* largest multiple of 3 not above e */
        m *= 10;
        e--;
    }
    if (fmt == TLR_QFMT_DECIMAL_SI && e > 18) {
        /* Kubernetes prints no suffix here, which changes the value */
        m *= pow10_u128(e - 18);
        e = 18;
    }
    len += u128_digits(m, tmp + len);
    if (fmt == TLR_QFMT_DECIMAL_SI) {
        strcpy(tmp + len, dec_suffix[e / 3 + 3]);
    } else if (e != 0) {
        tmp[len++] = 'e';
        if (e < 0) {
            tmp[len++] = '-';
            e = -e;
        }
        len += u128_digits((u128)e, tmp + len);
        tmp[len] = '\0';
    } else {
        tmp[len] = '\0';
    }
}

int tlr_quantity_format(const tlr_quantity *q, char *buf, size_t len)
{
    char tmp[TLR_QUANTITY_STR_MAX];
    size_t n;

    if (q == NULL || buf == NULL)
        return TLR_E_INVAL;
    q_canonical(q, tmp);
    n = strlen(tmp);
    if (n + 1 > len)
        return TLR_E_TOOBIG;
    memcpy(buf, tmp, n + 1);
    return TLR_OK;
}

int tlr_quantity_parse_milli(const char *s, int64_t *out)
{
    tlr_quantity q;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    if ((rc = tlr_quantity_parse(s, &q)) != TLR_OK)
        return rc;
    return tlr_quantity_milli(&q, out);
}

int tlr_quantity_parse_value(const char *s, int64_t *out)
{
    tlr_quantity q;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    if ((rc = tlr_quantity_parse(s, &q)) != TLR_OK)
        return rc;
    return tlr_quantity_value(&q, out);
}

int tlr_quantity_format_milli(int64_t milli, char *buf, size_t len)
{
    tlr_quantity q = tlr_quantity_from_milli(milli, TLR_QFMT_DECIMAL_SI);

    return tlr_quantity_format(&q, buf, len);
}

int tlr_quantity_format_bytes(int64_t bytes, char *buf, size_t len)
{
    tlr_quantity q = tlr_quantity_from_value(bytes, TLR_QFMT_BINARY_SI);

    return tlr_quantity_format(&q, buf, len);
}
