/* metrics_testkit.h - reading a rendered /metrics page in cmocka tests.
 *
 * Header-only, for *_test.c files (include after <cmocka.h>): render a
 * registry to text, find one sample's value by its labels or exactly as
 * written, count the lines of a family.  The page is the text exposition format tlr_metrics_render
 * writes; nothing here parses it more strictly than a test needs. */
#ifndef TLR_METRICS_TESTKIT_H
#define TLR_METRICS_TESTKIT_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_metrics.h"

/* The whole page of m (up to 16 MiB); free() it. */
static inline char *mt_render(tlr_metrics *m)
{
    tlr_buf b;
    tlr_buf_init(&b, 16 << 20);
    assert_int_equal(tlr_metrics_render(m, &b), TLR_OK);
    return tlr_buf_take(&b);
}

/* The value on the first line of metric name whose labels include every
 * "k=\"v\"" in want (NULL-terminated); NAN when there is none. */
static inline double mt_value(const char *page, const char *name, const char *const *want)
{
    size_t nl = strlen(name);
    for (const char *l = page; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, name, nl) || (l[nl] != '{' && l[nl] != ' '))
            continue;
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char line[4096];
        snprintf(line, sizeof(line), "%.*s", (int)len, l);
        bool all = true;
        for (int i = 0; want[i] && all; i++)
            all = strstr(line, want[i]) != NULL;
        if (all)
            return strtod(strrchr(line, ' ') + 1, NULL);
    }
    return NAN;
}

/* The value of the line written exactly as sample ("name{a=\"x\"}",
 * labels in the page's order); NAN when there is none. */
static inline double mt_exact(const char *page, const char *sample)
{
    size_t n = strlen(sample);
    for (const char *l = page; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, sample, n) && l[n] == ' ')
            return strtod(l + n + 1, NULL);
    return NAN;
}

/* mt_exact on m's page rendered now. */
static inline double mt_sample(tlr_metrics *m, const char *sample)
{
    char *page = mt_render(m);
    double v = mt_exact(page, sample);
    free(page);
    return v;
}

/* Fail unless sample's value on the page is want (NAN: no such line). */
static inline void mt_expect(const char *page, const char *sample, double want)
{
    double got = mt_exact(page, sample);
    if (isnan(want) ? !isnan(got) : got != want)
        fail_msg("%s: got %g want %g\n%s", sample, got, want, page);
}

/* How many lines of the page start with prefix. */
static inline int mt_count_lines(const char *page, const char *prefix)
{
    int n = 0;
    size_t pl = strlen(prefix);
    for (const char *l = page; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        n += !strncmp(l, prefix, pl);
    return n;
}

#endif
