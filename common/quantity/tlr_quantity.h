/* tlr_quantity.h - Kubernetes resource quantities ("100m", "1.5Gi", "12e6").
 *
 * Parses and prints quantities the way k8s.io/apimachinery/pkg/api/resource
 * does, so that tailor adds up pod requests exactly as the scheduler does:
 *
 *   - grammar: [+-] digits [. digits] suffix, where suffix is a binary SI
 *     suffix (Ki Mi Gi Ti Pi Ei), a decimal SI suffix (n u m "" k M G T P E)
 *     or a decimal exponent (e3, E-3, e+6).  Kubernetes' grammar is looser
 *     than it looks and we accept exactly what it accepts: "1.", ".5", "+1",
 *     and even a bare sign, "." or "Mi", all of which mean zero;
 *   - values are exact decimals rounded up (away from zero) to a multiple of
 *     1n, so "0.1n" is 1n and you always get some of what you asked for;
 *   - binary-suffixed values are capped at 2^63-1 ("16Ei" prints as
 *     "9223372036854775807"); a binary value below 1 becomes DecimalSI;
 *   - the suffix family (decimal SI, binary SI, exponent) is remembered and
 *     used again when printing, in canonical form: no fractional digits and
 *     the largest suffix that loses nothing ("1.5" -> "1500m",
 *     "1024Mi" -> "1Gi", "1.5Gi" -> "1536Mi", "1e3" -> "1e3").
 *
 * Where tailor differs from Kubernetes, on purpose:
 *   - magnitudes of 10^29 or more are refused with TLR_E_RANGE (Kubernetes
 *     keeps arbitrary precision; no resource comes near this), as are
 *     inputs with more than TLR_QUANTITY_MAX_DIGITS significant digits and
 *     exponents that do not fit in 32 bits (Kubernetes silently truncates
 *     those);
 *   - a decimal SI value of 1000E or more prints as e.g. "1000E" where
 *     Kubernetes drops the suffix (and so the value) altogether;
 *   - Kubernetes' String() sometimes echoes the input verbatim when it
 *     guesses the input was canonical ("+1", "05", "1.500" print as such);
 *     tlr_quantity_format always prints the canonical form ("1", "5",
 *     "1500m"), which is what Kubernetes prints for any computed value.
 *   - Value()/MilliValue() on out-of-range values wrap silently in
 *     Kubernetes; here they fail with TLR_E_RANGE.
 *
 * A tlr_quantity is a small value type: copy it freely, no free needed.
 * Its fields are private to quantity.c.
 */
#ifndef TLR_QUANTITY_H
#define TLR_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* The suffix family a quantity prints with (Kubernetes' Format). */
typedef enum tlr_quantity_fmt {
    TLR_QFMT_DECIMAL_SI  = 0,  /* 12M, 100m, 5  */
    TLR_QFMT_BINARY_SI   = 1,  /* 12Mi, 1536Mi  */
    TLR_QFMT_DECIMAL_EXP = 2,  /* 12e6, 1e-3    */
} tlr_quantity_fmt;

typedef struct tlr_quantity {
    uint64_t nano_hi;   /* |value| in units of 1e-9, as a 128-bit integer */
    uint64_t nano_lo;
    int      neg;       /* 1 if the value is below zero (never for zero) */
    int      fmt;       /* a tlr_quantity_fmt */
} tlr_quantity;

/* Significant digits accepted by the parser (k8s has no limit). */
#define TLR_QUANTITY_MAX_DIGITS 512

/* Room for any string tlr_quantity_format can produce, NUL included. */
#define TLR_QUANTITY_STR_MAX 64

/* Parse s (borrowed, NUL-terminated).  On TLR_OK *out is written.
 * TLR_E_PARSE: not a quantity (empty, "1.2.3", "1Gb", " 1", "1i", NULL s).
 * TLR_E_RANGE: well formed but beyond what tailor represents (see above). */
int tlr_quantity_parse(const char *s, tlr_quantity *out);

/* Canonical Kubernetes string of q into buf (borrowed, len bytes).
 * TLR_E_TOOBIG if buf is too small (TLR_QUANTITY_STR_MAX always suffices);
 * TLR_E_INVAL on a NULL argument. */
int tlr_quantity_format(const tlr_quantity *q, char *buf, size_t len);

/* Kubernetes' MilliValue(): ceil(q * 1000), rounding away from zero.
 * TLR_E_RANGE if it does not fit an int64. */
int tlr_quantity_milli(const tlr_quantity *q, int64_t *out);

/* Kubernetes' Value(): q rounded up (away from zero) to an integer.
 * TLR_E_RANGE if it does not fit an int64. */
int tlr_quantity_value(const tlr_quantity *q, int64_t *out);

/* -1, 0 or 1 as a is less than, equal to or greater than b (by value; the
 * format does not take part). */
int tlr_quantity_cmp(const tlr_quantity *a, const tlr_quantity *b);

/* A quantity of milli/1000 (like NewMilliQuantity) or of value (like
 * NewQuantity) printing with fmt.  Cannot fail. */
tlr_quantity tlr_quantity_from_milli(int64_t milli, tlr_quantity_fmt fmt);
tlr_quantity tlr_quantity_from_value(int64_t value, tlr_quantity_fmt fmt);

/* Parse s and return its MilliValue (cpu millicores) or Value (bytes).
 * Errors as tlr_quantity_parse, then as tlr_quantity_milli/_value. */
int tlr_quantity_parse_milli(const char *s, int64_t *out);
int tlr_quantity_parse_value(const char *s, int64_t *out);

/* What Kubernetes prints for NewMilliQuantity(milli, DecimalSI) (cpu:
 * 1500 -> "1500m", 2000 -> "2") and NewQuantity(bytes, BinarySI) (memory:
 * 1073741824 -> "1Gi", 1500 -> "1500", and, below 1Ki, decimal: 1000 -> "1k").
 * Errors as tlr_quantity_format. */
int tlr_quantity_format_milli(int64_t milli, char *buf, size_t len);
int tlr_quantity_format_bytes(int64_t bytes, char *buf, size_t len);

#endif
