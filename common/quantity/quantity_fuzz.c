/* quantity_fuzz.c - libFuzzer target for tlr_quantity.
 *
 * Property: whatever parses prints, and what it prints parses back to the
 * same value.  The string itself is a fixed point only from the second
 * round: a BinarySI value that is not a whole number of Ki prints without
 * suffix ("312.5Ki" -> "320000") and so reads back as DecimalSI, which
 * prints as "320k" - Kubernetes does the same.  MilliValue/Value must not
 * crash on anything that parses.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s, buf[TLR_QUANTITY_STR_MAX], buf2[TLR_QUANTITY_STR_MAX];
    char buf3[TLR_QUANTITY_STR_MAX];
    tlr_quantity q, q2, q3;
    int64_t v;

    if (size > 4096)
        return 0;
    s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    if (tlr_quantity_parse(s, &q) != TLR_OK)
        goto out;
    (void)tlr_quantity_milli(&q, &v);
    (void)tlr_quantity_value(&q, &v);
    if (tlr_quantity_format(&q, buf, sizeof(buf)) != TLR_OK)
        abort();
    if (tlr_quantity_parse(buf, &q2) != TLR_OK)
        abort();
    if (tlr_quantity_cmp(&q, &q2) != 0)
        abort();
    if (tlr_quantity_format(&q2, buf2, sizeof(buf2)) != TLR_OK)
        abort();
    if (tlr_quantity_parse(buf2, &q3) != TLR_OK || tlr_quantity_cmp(&q, &q3) != 0)
        abort();
    if (tlr_quantity_format(&q3, buf3, sizeof(buf3)) != TLR_OK || strcmp(buf2, buf3) != 0)
        abort();
out:
    free(s);
    return 0;
}
