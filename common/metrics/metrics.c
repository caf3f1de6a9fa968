/* metrics.c - the Prometheus registry behind tlr_metrics.h.
 *
 * Layout: the registry keeps its families in an array sorted by name, and
 * each family keeps its series in an array of pointers sorted by label
 * values.  Sorted arrays give binary-search lookup, deterministic render
 * order without a sort per scrape, and stable series addresses (only the
 * pointer array moves when it grows), which is what lets callers cache a
 * tlr_metric * forever.  Families are few and series are created rarely,
 * so the O(n) insert is not worth a hash table.
 *
 * Concurrency: one registry mutex guards the two arrays (creation and
 * rendering).  Sample values never take it: a counter or gauge value, and a
 * histogram's sum, are a double stored as its 64 bits in an atomic integer
 * and updated with a compare-and-swap loop (C11 has no atomic add for
 * floating types); histogram bucket counts are plain atomic integers.
 * Relaxed ordering is enough: a scrape only needs each value to be some
 * value it really had.
 */
#include "tlr_metrics.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_time.h"

/* Label names per family; more is certainly a mistake, and a fixed bound
 * lets lookups keep their scratch arrays on the stack.  Karpenter's
 * per-node gauges carry 41 (every well-known label, AWS ones included). */
#define MAX_LABELS 48

/* A summary's window: its quantiles are computed at render over at most
 * SUMMARY_WINDOW of the observations made in the last SUMMARY_MAX_AGE_MS
 * (client_golang's default MaxAge), newest first. */
#define SUMMARY_WINDOW 512
#define SUMMARY_MAX_AGE_MS (10 * 60 * 1000)
static const double summary_quantiles[] = { 0, 0.5, 0.9, 0.99, 1 };
#define SUMMARY_NQ ((int)(sizeof(summary_quantiles) / sizeof(summary_quantiles[0])))

typedef enum metric_kind {
    KIND_COUNTER,
    KIND_GAUGE,
    KIND_HISTOGRAM,
    KIND_SUMMARY,
} metric_kind;

struct tlr_metric {
    tlr_metric_family *fam;
    char **values;                  /* fam->nlabels owned strings */
    _Atomic uint64_t bits;          /* value (or histogram sum) as double bits */
    _Atomic uint64_t *counts;       /* histogram: nbounds + 1, last is +Inf;
                                     * summary: 1, the observation count */
    double *win_v;                  /* summary: SUMMARY_WINDOW ring, under mu */
    int64_t *win_t;                 /* its observation times, mono ms */
    size_t win_n, win_next;
    bool stale;                     /* marked and not updated since; under mu */
};

struct tlr_metric_family {
    tlr_metrics *reg;               /* borrowed: its mutex guards series */
    char *name;
    char *help;
    metric_kind kind;
    int nlabels;
    char **labels;
    double *bounds;                 /* histogram upper bounds, no +Inf */
    int nbounds;
    double (*fn)(void *arg);        /* set: value computed at render */
    void *fn_arg;
    tlr_metric **series;            /* sorted by label values */
    size_t nseries, cap;
    tlr_metric *overflow;           /* past max_series; not rendered */
    size_t max_series;              /* TLR_METRICS_MAX_SERIES unless raised */
};

struct tlr_metrics {
    pthread_mutex_t mu;
    tlr_metric_family **fams;       /* sorted by name */
    size_t nfams, cap;
};

const double tlr_metrics_default_buckets[] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
const int tlr_metrics_default_nbuckets =
    (int)(sizeof(tlr_metrics_default_buckets) / sizeof(tlr_metrics_default_buckets[0]));

static const char *const kind_names[] = {
    [KIND_COUNTER] = "counter",
    [KIND_GAUGE] = "gauge",
    [KIND_HISTOGRAM] = "histogram",
    [KIND_SUMMARY] = "summary",
};

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tlr_metrics: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* ---- doubles in atomic integers ---- */

static uint64_t dbl_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static double bits_dbl(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

static double atomic_dbl_load(const _Atomic uint64_t *a)
{
    return bits_dbl(atomic_load_explicit(a, memory_order_relaxed));
}

static void atomic_dbl_store(_Atomic uint64_t *a, double v)
{
    atomic_store_explicit(a, dbl_bits(v), memory_order_relaxed);
}

static void atomic_dbl_add(_Atomic uint64_t *a, double v)
{
    uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(
        a, &old, dbl_bits(bits_dbl(old) + v), memory_order_relaxed,
        memory_order_relaxed)) {
        /* old was reloaded by the failed exchange; retry */
    }
}

/* ---- names and label values ---- */

static bool name_valid(const char *s, bool colon_ok)
{
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  (colon_ok && c == ':') || (p != s && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

static bool utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = tlr_utf8_len(p);
        if (!n)
            return false;
        p += n;
    }
    return true;
}

/* A copy of s with every byte that is not part of valid UTF-8 replaced by
 * U+FFFD; owned by the caller. */
static char *utf8_sanitize(const char *s)
{
    tlr_buf b;
    tlr_buf_init(&b, (size_t)-1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = tlr_utf8_len(p);
        if (n) {
            tlr_buf_add(&b, p, n);
            p += n;
        } else {
            tlr_buf_adds(&b, "\xEF\xBF\xBD");
            p++;
        }
    }
    return tlr_buf_take(&b);
}

/* ---- families ---- */

static int values_cmp(int n, char *const *a, const char *const *b)
{
    for (int i = 0; i < n; i++) {
        int c = strcmp(a[i], b[i]);
        if (c)
            return c;
    }
    return 0;
}

static tlr_metric *series_new(tlr_metric_family *f, const char *const *values)
{
    tlr_metric *s = tlr_calloc(1, sizeof(*s));
    s->fam = f;
    s->values = tlr_calloc((size_t)f->nlabels + 1, sizeof(char *));
    for (int i = 0; i < f->nlabels; i++)
        s->values[i] = tlr_strdup(values[i]);
    atomic_init(&s->bits, dbl_bits(0.0));
    if (f->kind == KIND_HISTOGRAM || f->kind == KIND_SUMMARY) {
        s->counts = tlr_calloc((size_t)f->nbounds + 1, sizeof(*s->counts));
        for (int i = 0; i <= f->nbounds; i++)
            atomic_init(&s->counts[i], 0);
    }
    if (f->kind == KIND_SUMMARY) {
        s->win_v = tlr_calloc(SUMMARY_WINDOW, sizeof(*s->win_v));
        s->win_t = tlr_calloc(SUMMARY_WINDOW, sizeof(*s->win_t));
    }
    return s;
}

static void series_free(tlr_metric *s, int nlabels)
{
    if (!s)
        return;
    for (int i = 0; i < nlabels; i++)
        free(s->values[i]);
    free(s->values);
    free(s->counts);
    free(s->win_v);
    free(s->win_t);
    free(s);
}

/* Find or create the series for values; mu held.  values are valid UTF-8. */
static tlr_metric *series_get_locked(tlr_metric_family *f,
                                     const char *const *values)
{
    size_t lo = 0, hi = f->nseries;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = values_cmp(f->nlabels, f->series[mid]->values, values);
        if (c == 0) {
            f->series[mid]->stale = false;
            return f->series[mid];
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (f->nseries >= f->max_series) {
        if (!f->overflow)
            f->overflow = series_new(f, values);
        return f->overflow;
    }
    TLR_GROW(f->series, f->cap, f->nseries + 1);
    memmove(&f->series[lo + 1], &f->series[lo],
            (f->nseries - lo) * sizeof(f->series[0]));
    f->series[lo] = series_new(f, values);
    f->nseries++;
    return f->series[lo];
}

static void family_free(tlr_metric_family *f)
{
    for (size_t i = 0; i < f->nseries; i++)
        series_free(f->series[i], f->nlabels);
    series_free(f->overflow, f->nlabels);
    free(f->series);
    for (int i = 0; i < f->nlabels; i++)
        free(f->labels[i]);
    free(f->labels);
    free(f->bounds);
    free(f->name);
    free(f->help);
    free(f);
}

static void check_labels(const char *name, metric_kind kind, int nlabels,
                         const char *const *labels)
{
    if (nlabels < 0 || nlabels > MAX_LABELS || (nlabels > 0 && !labels))
        die("%s: %d label names (want 0..%d, names given)", name, nlabels,
            MAX_LABELS);
    for (int i = 0; i < nlabels; i++) {
        const char *l = labels[i];
        if (!name_valid(l, false) || strncmp(l, "__", 2) == 0)
            die("%s: invalid label name \"%s\" (want [a-zA-Z_][a-zA-Z0-9_]*, "
                "not starting with __)", name, l ? l : "(null)");
        if (kind == KIND_HISTOGRAM && strcmp(l, "le") == 0)
            die("%s: label name \"le\" is reserved on a histogram", name);
        if (kind == KIND_SUMMARY && strcmp(l, "quantile") == 0)
            die("%s: label name \"quantile\" is reserved on a summary", name);
        for (int j = 0; j < i; j++)
            if (strcmp(labels[j], l) == 0)
                die("%s: duplicate label name \"%s\"", name, l);
    }
}

/* The bounds to use: defaults, or the caller's with a trailing +Inf dropped;
 * aborts unless strictly increasing and not NaN. */
static int check_bounds(const char *name, const double **bounds, int n)
{
    if (!*bounds && n == 0) {
        *bounds = tlr_metrics_default_buckets;
        return tlr_metrics_default_nbuckets;
    }
    if (!*bounds || n < 0)
        die("%s: %d buckets given without bounds", name, n);
    if (n > 0 && isinf((*bounds)[n - 1]) && (*bounds)[n - 1] > 0)
        n--;
    for (int i = 0; i < n; i++) {
        double b = (*bounds)[i];
        if (isnan(b) || (i > 0 && !(b > (*bounds)[i - 1])))
            die("%s: bucket bounds must be strictly increasing (bound %d is %g)",
                name, i, b);
    }
    return n;
}

/* Same kind, labels, bounds and function? */
static bool family_same_shape(const tlr_metric_family *f, metric_kind kind,
                              int nlabels, const char *const *labels,
                              const double *bounds, int nbounds,
                              double (*fn)(void *), void *arg)
{
    if (f->kind != kind || f->nlabels != nlabels || f->nbounds != nbounds ||
        f->fn != fn || f->fn_arg != arg)
        return false;
    for (int i = 0; i < nlabels; i++)
        if (strcmp(f->labels[i], labels[i]) != 0)
            return false;
    for (int i = 0; i < nbounds; i++)
        if (f->bounds[i] != bounds[i])
            return false;
    return true;
}

static tlr_metric_family *family_register(tlr_metrics *m, metric_kind kind,
                                          const char *name, const char *help,
                                          int nlabels, const char *const *labels,
                                          const double *bounds, int nbounds,
                                          double (*fn)(void *), void *arg)
{
    if (!name_valid(name, true))
        die("invalid metric name \"%s\" (want [a-zA-Z_:][a-zA-Z0-9_:]*)",
            name ? name : "(null)");
    check_labels(name, kind, nlabels, labels);
    if (kind == KIND_HISTOGRAM)
        nbounds = check_bounds(name, &bounds, nbounds);
    else
        nbounds = 0;

    tlr_metric_family *f = NULL;
    pthread_mutex_lock(&m->mu);
    size_t lo = 0, hi = m->nfams;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->fams[mid]->name, name);
        if (c == 0) {
            f = m->fams[mid];
            if (!family_same_shape(f, kind, nlabels, labels, bounds, nbounds, fn, arg))
                die("%s registered twice with different kind, labels, buckets "
                    "or function", name);
            goto out;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }

    f = tlr_calloc(1, sizeof(*f));
    f->reg = m;
    f->name = tlr_strdup(name);
    f->help = tlr_strdup(help ? help : "");
    f->kind = kind;
    f->nlabels = nlabels;
    f->labels = tlr_calloc((size_t)nlabels + 1, sizeof(char *));
    for (int i = 0; i < nlabels; i++)
        f->labels[i] = tlr_strdup(labels[i]);
    if (nbounds > 0) {
        f->bounds = tlr_malloc((size_t)nbounds * sizeof(double));
        memcpy(f->bounds, bounds, (size_t)nbounds * sizeof(double));
    }
    f->nbounds = nbounds;
    f->fn = fn;
    f->fn_arg = arg;
    f->max_series = TLR_METRICS_MAX_SERIES;
    if (!fn && nlabels == 0)
        series_get_locked(f, NULL);

    TLR_GROW(m->fams, m->cap, m->nfams + 1);
    memmove(&m->fams[lo + 1], &m->fams[lo], (m->nfams - lo) * sizeof(m->fams[0]));
    m->fams[lo] = f;
    m->nfams++;
out:
    pthread_mutex_unlock(&m->mu);
    return f;
}

/* ---- public: registry ---- */

void tlr_metrics_create(tlr_metrics **out)
{
    tlr_metrics *m = tlr_calloc(1, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
}

void tlr_metrics_free(tlr_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nfams; i++)
        family_free(m->fams[i]);
    free(m->fams);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

tlr_metric_family *tlr_metrics_counter(tlr_metrics *m, const char *name,
                                       const char *help, int nlabels,
                                       const char *const *label_names)
{
    return family_register(m, KIND_COUNTER, name, help, nlabels, label_names,
                           NULL, 0, NULL, NULL);
}

tlr_metric_family *tlr_metrics_gauge(tlr_metrics *m, const char *name,
                                     const char *help, int nlabels,
                                     const char *const *label_names)
{
    return family_register(m, KIND_GAUGE, name, help, nlabels, label_names,
                           NULL, 0, NULL, NULL);
}

tlr_metric_family *tlr_metrics_histogram(tlr_metrics *m, const char *name,
                                         const char *help, int nlabels,
                                         const char *const *label_names,
                                         const double *buckets, int nbuckets)
{
    return family_register(m, KIND_HISTOGRAM, name, help, nlabels, label_names,
                           buckets, nbuckets, NULL, NULL);
}

tlr_metric_family *tlr_metrics_summary(tlr_metrics *m, const char *name,
                                       const char *help, int nlabels,
                                       const char *const *label_names)
{
    return family_register(m, KIND_SUMMARY, name, help, nlabels, label_names,
                           NULL, 0, NULL, NULL);
}

tlr_metric_family *tlr_metrics_gauge_func(tlr_metrics *m, const char *name,
                                          const char *help,
                                          double (*fn)(void *arg), void *arg)
{
    if (!fn)
        die("%s: gauge function is NULL", name ? name : "(null)");
    return family_register(m, KIND_GAUGE, name, help, 0, NULL, NULL, 0, fn, arg);
}

tlr_metric_family *tlr_metrics_counter_func(tlr_metrics *m, const char *name,
                                            const char *help,
                                            double (*fn)(void *arg), void *arg)
{
    if (!fn)
        die("%s: counter function is NULL", name ? name : "(null)");
    return family_register(m, KIND_COUNTER, name, help, 0, NULL, NULL, 0, fn, arg);
}

tlr_metric *tlr_metric_series(tlr_metric_family *f,
                              const char *const *label_values)
{
    if (f->fn)
        die("%s: a function metric has no series", f->name);
    if (f->nlabels > 0 && !label_values)
        die("%s: label values are NULL", f->name);

    const char *vals[MAX_LABELS];
    char *owned[MAX_LABELS] = { 0 };
    for (int i = 0; i < f->nlabels; i++) {
        if (!label_values[i])
            die("%s: value of label \"%s\" is NULL", f->name, f->labels[i]);
        vals[i] = label_values[i];
        if (!utf8_valid(vals[i]))
            vals[i] = owned[i] = utf8_sanitize(vals[i]);
    }

    pthread_mutex_lock(&f->reg->mu);
    tlr_metric *s = series_get_locked(f, vals);
    pthread_mutex_unlock(&f->reg->mu);
    for (int i = 0; i < f->nlabels; i++)
        free(owned[i]);
    return s;
}

/* ---- public: updates ---- */

static void check_kind(const tlr_metric *s, metric_kind want, const char *op)
{
    if (s->fam->kind != want)
        die("%s: %s on a %s", s->fam->name, op, kind_names[s->fam->kind]);
}

void tlr_counter_add(tlr_metric *s, double v)
{
    check_kind(s, KIND_COUNTER, "counter add");
    if (!(v >= 0))      /* negative or NaN: a counter never goes down */
        return;
    atomic_dbl_add(&s->bits, v);
}

void tlr_counter_inc(tlr_metric *s)
{
    tlr_counter_add(s, 1.0);
}

void tlr_gauge_set(tlr_metric *s, double v)
{
    check_kind(s, KIND_GAUGE, "gauge set");
    atomic_dbl_store(&s->bits, v);
}

void tlr_gauge_add(tlr_metric *s, double v)
{
    check_kind(s, KIND_GAUGE, "gauge add");
    atomic_dbl_add(&s->bits, v);
}

void tlr_gauge_inc(tlr_metric *s)
{
    tlr_gauge_add(s, 1.0);
}

void tlr_gauge_dec(tlr_metric *s)
{
    tlr_gauge_add(s, -1.0);
}

void tlr_histogram_observe(tlr_metric *s, double v)
{
    check_kind(s, KIND_HISTOGRAM, "histogram observe");
    if (isnan(v))       /* would poison _sum forever */
        return;
    const tlr_metric_family *f = s->fam;
    int lo = 0, hi = f->nbounds;        /* first bound >= v; nbounds is +Inf */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (f->bounds[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    atomic_fetch_add_explicit(&s->counts[lo], 1, memory_order_relaxed);
    atomic_dbl_add(&s->bits, v);
}

void tlr_summary_observe(tlr_metric *s, double v)
{
    check_kind(s, KIND_SUMMARY, "summary_observe");
    if (isnan(v))
        return;
    pthread_mutex_lock(&s->fam->reg->mu);
    s->win_v[s->win_next] = v;
    s->win_t[s->win_next] = tlr_mono_ms();
    s->win_next = (s->win_next + 1) % SUMMARY_WINDOW;
    if (s->win_n < SUMMARY_WINDOW)
        s->win_n++;
    pthread_mutex_unlock(&s->fam->reg->mu);
    atomic_fetch_add_explicit(&s->counts[0], 1, memory_order_relaxed);
    atomic_dbl_add(&s->bits, v);
}

void tlr_metrics_summary_observe(tlr_metric_family *f,
                                 const char *const *label_values, double v)
{
    tlr_summary_observe(tlr_metric_series(f, label_values), v);
}

void tlr_metrics_family_set_max_series(tlr_metric_family *f, size_t max)
{
    pthread_mutex_lock(&f->reg->mu);
    if (max > f->max_series)
        f->max_series = max;
    pthread_mutex_unlock(&f->reg->mu);
}

void tlr_metrics_family_mark_stale(tlr_metric_family *f)
{
    pthread_mutex_lock(&f->reg->mu);
    for (size_t i = 0; i < f->nseries; i++)
        f->series[i]->stale = true;
    pthread_mutex_unlock(&f->reg->mu);
}

size_t tlr_metrics_family_sweep_stale(tlr_metric_family *f)
{
    size_t kept = 0, gone;
    pthread_mutex_lock(&f->reg->mu);
    for (size_t i = 0; i < f->nseries; i++) {
        if (f->series[i]->stale)
            series_free(f->series[i], f->nlabels);
        else
            f->series[kept++] = f->series[i];
    }
    gone = f->nseries - kept;
    f->nseries = kept;
    if (f->nlabels == 0 && kept == 0)   /* an unlabelled family keeps its series */
        series_get_locked(f, NULL);
    pthread_mutex_unlock(&f->reg->mu);
    return gone;
}

void tlr_metrics_counter_inc(tlr_metric_family *f, const char *const *label_values)
{
    tlr_counter_inc(tlr_metric_series(f, label_values));
}

void tlr_metrics_counter_add(tlr_metric_family *f, const char *const *label_values,
                             double v)
{
    tlr_counter_add(tlr_metric_series(f, label_values), v);
}

void tlr_metrics_gauge_set(tlr_metric_family *f, const char *const *label_values,
                           double v)
{
    tlr_gauge_set(tlr_metric_series(f, label_values), v);
}

void tlr_metrics_histogram_observe(tlr_metric_family *f,
                                   const char *const *label_values, double v)
{
    tlr_histogram_observe(tlr_metric_series(f, label_values), v);
}

double tlr_metric_value(const tlr_metric *s)
{
    if (s->fam->kind == KIND_HISTOGRAM || s->fam->kind == KIND_SUMMARY)
        die("%s: value of a %s (use tlr_histogram_count/sum)", s->fam->name,
            kind_names[s->fam->kind]);
    return atomic_dbl_load(&s->bits);
}

uint64_t tlr_histogram_count(const tlr_metric *s)
{
    if (s->fam->kind != KIND_SUMMARY)
        check_kind(s, KIND_HISTOGRAM, "histogram count");
    uint64_t n = 0;
    for (int i = 0; i <= s->fam->nbounds; i++)
        n += atomic_load_explicit(&s->counts[i], memory_order_relaxed);
    return n;
}

double tlr_histogram_sum(const tlr_metric *s)
{
    if (s->fam->kind != KIND_SUMMARY)
        check_kind(s, KIND_HISTOGRAM, "histogram sum");
    return atomic_dbl_load(&s->bits);
}

/* ---- rendering ---- */

/* Go's strconv.FormatFloat(v, 'g', -1, 64) in spirit: the shorter of %.15g
 * and %.17g that reads back as v; Prometheus spellings for the specials. */
#define DOUBLE_BUFLEN 40
static const char *format_double(double v, char buf[DOUBLE_BUFLEN])
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    snprintf(buf, DOUBLE_BUFLEN, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, DOUBLE_BUFLEN, "%.17g", v);
    return buf;
}

/* HELP text escapes backslash and newline; label values also escape the
 * double quote. */
static int add_escaped(tlr_buf *b, const char *s, bool quote)
{
    int rc = TLR_OK;
    const char *run = s;
    for (const char *p = s; *p && rc == TLR_OK; p++) {
        const char *esc = NULL;
        if (*p == '\\')
            esc = "\\\\";
        else if (*p == '\n')
            esc = "\\n";
        else if (*p == '"' && quote)
            esc = "\\\"";
        if (!esc)
            continue;
        rc = tlr_buf_add(b, run, (size_t)(p - run));
        if (rc == TLR_OK)
            rc = tlr_buf_adds(b, esc);
        run = p + 1;
    }
    if (rc == TLR_OK)
        rc = tlr_buf_adds(b, run);
    return rc;
}

/* One sample line: name+suffix{labels...,extra="..."} value; extra is
 * le (histogram buckets) or quantile (summaries). */
static int add_sample_x(tlr_buf *b, const tlr_metric_family *f, const char *suffix,
                        const tlr_metric *s, const char *xname, const char *le, double v)
{
    int rc = tlr_buf_adds(b, f->name);
    if (rc == TLR_OK)
        rc = tlr_buf_adds(b, suffix);
    int nlabels = s ? f->nlabels : 0;
    if (rc == TLR_OK && (nlabels > 0 || le)) {
        rc = tlr_buf_addc(b, '{');
        for (int i = 0; i < nlabels && rc == TLR_OK; i++) {
            rc = tlr_buf_printf(b, "%s%s=\"", i ? "," : "", f->labels[i]);
            if (rc == TLR_OK)
                rc = add_escaped(b, s->values[i], true);
            if (rc == TLR_OK)
                rc = tlr_buf_addc(b, '"');
        }
        if (rc == TLR_OK && le)
            rc = tlr_buf_printf(b, "%s%s=\"%s\"", nlabels ? "," : "", xname, le);
        if (rc == TLR_OK)
            rc = tlr_buf_addc(b, '}');
    }
    if (rc == TLR_OK)
        rc = tlr_buf_addc(b, ' ');
    char num[DOUBLE_BUFLEN];
    if (rc == TLR_OK)
        rc = tlr_buf_adds(b, format_double(v, num));
    if (rc == TLR_OK)
        rc = tlr_buf_addc(b, '\n');
    return rc;
}

static int add_sample(tlr_buf *b, const tlr_metric_family *f, const char *suffix,
                      const tlr_metric *s, const char *le, double v)
{
    return add_sample_x(b, f, suffix, s, "le", le, v);
}

static int add_sample_q(tlr_buf *b, const tlr_metric_family *f, const tlr_metric *s,
                        const char *q, double v)
{
    return add_sample_x(b, f, "", s, "quantile", q, v);
}

static int render_histogram(tlr_buf *b, const tlr_metric_family *f,
                            const tlr_metric *s)
{
    int rc = TLR_OK;
    uint64_t acc = 0;
    for (int i = 0; i <= f->nbounds && rc == TLR_OK; i++) {
        acc += atomic_load_explicit(&s->counts[i], memory_order_relaxed);
        char num[DOUBLE_BUFLEN];
        const char *le = i < f->nbounds ? format_double(f->bounds[i], num) : "+Inf";
        rc = add_sample(b, f, "_bucket", s, le, (double)acc);
    }
    if (rc == TLR_OK)
        rc = add_sample(b, f, "_sum", s, NULL, atomic_dbl_load(&s->bits));
    if (rc == TLR_OK)
        rc = add_sample(b, f, "_count", s, NULL, (double)acc);
    return rc;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A summary's quantiles over its window (nearest rank; NaN when the window
 * holds nothing younger than SUMMARY_MAX_AGE_MS), then _sum and _count.
 * mu held, so the window is still. */
static int render_summary(tlr_buf *b, const tlr_metric_family *f, const tlr_metric *s)
{
    double v[SUMMARY_WINDOW];
    size_t n = 0;
    int64_t now = tlr_mono_ms();
    for (size_t i = 0; i < s->win_n; i++)
        if (now - s->win_t[i] <= SUMMARY_MAX_AGE_MS)
            v[n++] = s->win_v[i];
    qsort(v, n, sizeof(v[0]), dbl_cmp);
    int rc = TLR_OK;
    for (int q = 0; q < SUMMARY_NQ && rc == TLR_OK; q++) {
        double x = NAN;
        if (n) {
            double r = ceil(summary_quantiles[q] * (double)n);
            size_t k = r < 1 ? 0 : (size_t)r - 1;
            x = v[k < n ? k : n - 1];
        }
        char qs[DOUBLE_BUFLEN];
        rc = add_sample_q(b, f, s, format_double(summary_quantiles[q], qs), x);
    }
    if (rc == TLR_OK)
        rc = add_sample(b, f, "_sum", s, NULL, atomic_dbl_load(&s->bits));
    if (rc == TLR_OK)
        rc = add_sample(b, f, "_count", s, NULL,
                        (double)atomic_load_explicit(&s->counts[0], memory_order_relaxed));
    return rc;
}

static int render_family(tlr_buf *b, const tlr_metric_family *f)
{
    if (!f->fn && f->nseries == 0)
        return TLR_OK;      /* nothing observed yet: no samples, no header */
    int rc = tlr_buf_printf(b, "# HELP %s ", f->name);
    if (rc == TLR_OK)
        rc = add_escaped(b, f->help, false);
    if (rc == TLR_OK)
        rc = tlr_buf_printf(b, "\n# TYPE %s %s\n", f->name, kind_names[f->kind]);
    if (rc == TLR_OK && f->fn)
        rc = add_sample(b, f, "", NULL, NULL, f->fn(f->fn_arg));
    for (size_t i = 0; i < f->nseries && rc == TLR_OK; i++) {
        const tlr_metric *s = f->series[i];
        if (f->kind == KIND_HISTOGRAM)
            rc = render_histogram(b, f, s);
        else if (f->kind == KIND_SUMMARY)
            rc = render_summary(b, f, s);
        else
            rc = add_sample(b, f, "", s, NULL, atomic_dbl_load(&s->bits));
    }
    return rc;
}

int tlr_metrics_render(tlr_metrics *m, tlr_buf *out)
{
    int rc = TLR_OK;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->nfams && rc == TLR_OK; i++)
        rc = render_family(out, m->fams[i]);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* ---- process metrics ---- */

/* Read a small /proc file whole into buf (NUL-terminated); false on error. */
static bool read_small_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = 0;
    while (len + 1 < size) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return len > 0;
}

/* Field n (1-based, as in proc(5)) of /proc/self/stat.  The command name
 * (field 2) may hold spaces and parentheses, so count from the last ')'. */
static bool proc_stat_field(int n, unsigned long long *out)
{
    char buf[1024];
    if (n < 3 || !read_small_file("/proc/self/stat", buf, sizeof(buf)))
        return false;
    char *p = strrchr(buf, ')');
    if (!p)
        return false;
    p++;
    for (int field = 3; field <= n; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return false;
        if (field == n) {
            char *end;
            *out = strtoull(p, &end, 10);
            return end != p;
        }
        while (*p && *p != ' ')
            p++;
    }
    return false;
}

/* Field n (1-based) of /proc/self/statm, in pages. */
static double statm_bytes(int n)
{
    char buf[256];
    if (!read_small_file("/proc/self/statm", buf, sizeof(buf)))
        return NAN;
    char *p = buf;
    unsigned long long v = 0;
    for (int i = 1; i <= n; i++) {
        char *end;
        v = strtoull(p, &end, 10);
        if (end == p)
            return NAN;
        p = end;
    }
    return (double)v * (double)sysconf(_SC_PAGESIZE);
}

static double proc_resident_bytes(void *arg)
{
    return statm_bytes(2);
}

static double proc_virtual_bytes(void *arg)
{
    return statm_bytes(1);
}

static double proc_cpu_seconds(void *arg)
{
    unsigned long long utime, stime;
    if (!proc_stat_field(14, &utime) || !proc_stat_field(15, &stime))
        return NAN;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static double proc_open_fds(void *arg)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return NAN;
    double n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;       /* the directory stream's own descriptor */
}

static double proc_max_fds(void *arg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return NAN;
    return rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur;
}

/* Boot time (/proc/stat btime) plus the process start in clock ticks since
 * boot (/proc/self/stat field 22). */
static double proc_start_time(void)
{
    unsigned long long start;
    if (!proc_stat_field(22, &start))
        return NAN;
    char buf[8192];
    if (!read_small_file("/proc/stat", buf, sizeof(buf)))
        return NAN;
    const char *p = strstr(buf, "\nbtime ");
    if (!p)
        return NAN;
    double btime = strtod(p + 7, NULL);
    return btime + (double)start / (double)sysconf(_SC_CLK_TCK);
}

void tlr_metrics_register_process(tlr_metrics *m)
{
    tlr_metrics_counter_func(m, "process_cpu_seconds_total",
                             "Total user and system CPU time spent in seconds.",
                             proc_cpu_seconds, NULL);
    tlr_metrics_gauge_func(m, "process_resident_memory_bytes",
                           "Resident memory size in bytes.", proc_resident_bytes, NULL);
    tlr_metrics_gauge_func(m, "process_virtual_memory_bytes",
                           "Virtual memory size in bytes.", proc_virtual_bytes, NULL);
    tlr_metrics_gauge_func(m, "process_open_fds", "Number of open file descriptors.",
                           proc_open_fds, NULL);
    tlr_metrics_gauge_func(m, "process_max_fds",
                           "Maximum number of open file descriptors.", proc_max_fds, NULL);
    /* Fixed for the life of the process: compute once. */
    tlr_metric_family *start = tlr_metrics_gauge(
        m, "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.", 0, NULL);
    tlr_gauge_set(tlr_metric_series(start, NULL), proc_start_time());
}
