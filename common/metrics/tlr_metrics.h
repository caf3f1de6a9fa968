/* tlr_metrics.h - a Prometheus metrics registry: counters, gauges, histograms.
 *
 * Every service owns one registry and serves it on /metrics (tlr_http).
 * A metric *family* has a name, help text and zero or more label names; a
 * *series* is one tuple of label values within it.  Register families once
 * at start-up, look up the series you update often once, and keep the
 * handle: updating a cached handle is one atomic operation, no lock and no
 * allocation.
 *
 *   tlr_metrics *m;
 *   tlr_metrics_create(&m);
 *   tlr_metrics_register_process(m);
 *   static const char *const lbl[] = { "nodepool" };
 *   tlr_metric_family *created = tlr_metrics_counter(m,
 *       "karpenter_nodeclaims_created_total", "NodeClaims created.", 1, lbl);
 *   tlr_metric *c = tlr_metric_series(created, (const char *const[]){ "default" });
 *   tlr_counter_inc(c);                       // hot path: cached handle
 *   tlr_metrics_counter_inc(created, (const char *const[]){ "gpu" });  // one-off
 *   ...
 *   tlr_metrics_render(m, &buf);              // text format 0.0.4
 *   tlr_metrics_free(m);
 *
 * Threads: any thread may update series, create series and render at the
 * same time.  Values are C11 atomics (a double is kept as its 64 bits and
 * updated with compare-and-swap); a mutex guards family and series creation
 * and rendering.  A histogram's _count is the sum of its buckets as read
 * during rendering, so _count always equals the +Inf bucket; _sum is read
 * separately and may lag by the observation in flight.
 *
 * Programmer errors abort with a message on stderr: an invalid metric name
 * ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name ([a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__", and no "le" on a histogram), a duplicate label name,
 * buckets that are not strictly increasing, registering a name again with
 * another kind, labels or buckets, a NULL label value, or using a series of
 * one kind as another.  Label *values* may come from outside: bytes that
 * are not valid UTF-8 are replaced with U+FFFD, and a family holds at most
 * TLR_METRICS_MAX_SERIES series (unless raised for it, see
 * tlr_metrics_family_set_max_series) - past that, tlr_metric_series() returns a
 * per-family overflow series that is never rendered, so a flood of distinct
 * values cannot grow memory without bound and callers never see NULL.
 *
 * Families render sorted by name and series sorted by label values, so
 * the output is deterministic.  Prometheus conventions (counters end in
 * _total, units in the name) are the caller's to follow; promtool's lint
 * checks them.
 */
#ifndef TLR_METRICS_H
#define TLR_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "tlr_buf.h"

/* Series per family before tlr_metric_series() starts returning the
 * overflow series. */
#define TLR_METRICS_MAX_SERIES 10000

typedef struct tlr_metrics tlr_metrics;
typedef struct tlr_metric_family tlr_metric_family;
typedef struct tlr_metric tlr_metric;

/* On return *out is new and owned by the caller: free with
 * tlr_metrics_free(). */
void tlr_metrics_create(tlr_metrics **out);
/* Frees the registry with every family and series; every handle obtained
 * from it becomes invalid.  NULL is fine. */
void tlr_metrics_free(tlr_metrics *m);

/* Register a family, or return the one already registered under name if it
 * has the same kind and label names (and buckets).  name, help and
 * label_names are borrowed and copied; label_names holds nlabels names
 * (may be NULL when nlabels is 0).  The family is borrowed from the
 * registry and lives as long as it.  A family without labels has its one
 * series from the start, so it renders 0 before the first update. */
tlr_metric_family *tlr_metrics_counter(tlr_metrics *m, const char *name,
                                       const char *help, int nlabels,
                                       const char *const *label_names);
tlr_metric_family *tlr_metrics_gauge(tlr_metrics *m, const char *name,
                                     const char *help, int nlabels,
                                     const char *const *label_names);
/* buckets: nbuckets strictly increasing upper bounds, borrowed and copied;
 * a trailing +Inf is implied (and dropped if given).  buckets NULL with
 * nbuckets 0 selects tlr_metrics_default_buckets. */
tlr_metric_family *tlr_metrics_histogram(tlr_metrics *m, const char *name,
                                         const char *help, int nlabels,
                                         const char *const *label_names,
                                         const double *buckets, int nbuckets);

/* A summary (Prometheus type summary), for metrics other projects define
 * as one (Karpenter's *_duration_seconds with quantile labels): renders
 * quantile="0", "0.5", "0.9", "0.99", "1" over the last 512 observations
 * made in the last 10 minutes (NaN when there are none), then _sum and
 * _count over all time.  Label name "quantile" is reserved.  An
 * observation takes the registry lock: not for hot paths; prefer a
 * histogram for tailor's own metrics. */
tlr_metric_family *tlr_metrics_summary(tlr_metrics *m, const char *name,
                                       const char *help, int nlabels,
                                       const char *const *label_names);

/* Prometheus' default latency buckets, in seconds:
 * .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10 */
extern const double tlr_metrics_default_buckets[];
extern const int tlr_metrics_default_nbuckets;

/* A gauge (or counter) without labels whose value fn(arg) computes at each
 * render.  fn runs on the rendering thread with the registry lock held: it
 * must be quick and must not call into this registry.  arg is borrowed and
 * must outlive the registry.  Registering the same name again with the
 * same fn and arg returns the existing family. */
tlr_metric_family *tlr_metrics_gauge_func(tlr_metrics *m, const char *name,
                                          const char *help,
                                          double (*fn)(void *arg), void *arg);
tlr_metric_family *tlr_metrics_counter_func(tlr_metrics *m, const char *name,
                                            const char *help,
                                            double (*fn)(void *arg), void *arg);

/* The standard process_* metrics, read from /proc/self at render time:
 * process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds and
 * process_start_time_seconds.  A value that cannot be read renders NaN. */
void tlr_metrics_register_process(tlr_metrics *m);

/* The series for label_values (the family's nlabels values, borrowed and
 * copied; NULL when nlabels is 0), created at 0 on first use.  The handle
 * is borrowed from the registry and stays valid until tlr_metrics_free():
 * cache it.  Never NULL (see TLR_METRICS_MAX_SERIES). */
tlr_metric *tlr_metric_series(tlr_metric_family *f,
                              const char *const *label_values);

/* Counters only go up: a negative or NaN v is ignored. */
void tlr_counter_add(tlr_metric *s, double v);
void tlr_counter_inc(tlr_metric *s);
void tlr_gauge_set(tlr_metric *s, double v);
void tlr_gauge_add(tlr_metric *s, double v);     /* v may be negative */
void tlr_gauge_inc(tlr_metric *s);
void tlr_gauge_dec(tlr_metric *s);
void tlr_histogram_observe(tlr_metric *s, double v);
void tlr_summary_observe(tlr_metric *s, double v);     /* NaN is ignored */

/* One-off updates that look the series up each time (a lock and a binary
 * search); fine off the hot path. */
void tlr_metrics_counter_inc(tlr_metric_family *f,
                             const char *const *label_values);
void tlr_metrics_counter_add(tlr_metric_family *f,
                             const char *const *label_values, double v);
void tlr_metrics_gauge_set(tlr_metric_family *f,
                           const char *const *label_values, double v);
void tlr_metrics_histogram_observe(tlr_metric_family *f,
                                   const char *const *label_values, double v);
void tlr_metrics_summary_observe(tlr_metric_family *f,
                                 const char *const *label_values, double v);

/* Series that follow a set of objects (one per Node, say) and must go when
 * the object goes.  Mark the family, set every current series (the one-off
 * calls or tlr_metric_series() clear the mark), then sweep: the series
 * still marked are freed.  Until the sweep a scrape still sees the old
 * values, so it never sees a half-updated family.  A swept series' handle
 * is invalid: do not cache handles of families that are swept, and let one
 * thread do the whole mark-set-sweep.  sweep returns how many went. */
void   tlr_metrics_family_mark_stale(tlr_metric_family *f);
size_t tlr_metrics_family_sweep_stale(tlr_metric_family *f);

/* Raise f's series ceiling to max (never lowers it): for families with
 * one series per object of a kind that can number more than
 * TLR_METRICS_MAX_SERIES (Karpenter's per-pod karpenter_pods_state).
 * The caller bounds the memory instead: size max for the objects it
 * expects and sweep the series of objects that are gone. */
void tlr_metrics_family_set_max_series(tlr_metric_family *f, size_t max);

/* Read back a counter's or gauge's value (tests, debug endpoints). */
double   tlr_metric_value(const tlr_metric *s);
/* A histogram's (or summary's) observation count and sum. */
uint64_t tlr_histogram_count(const tlr_metric *s);
double   tlr_histogram_sum(const tlr_metric *s);

/* Append the whole registry to out in the Prometheus text exposition
 * format 0.0.4.  Returns TLR_OK, or TLR_E_TOOBIG when out's ceiling is
 * reached (out then holds a truncated, unusable prefix). */
int tlr_metrics_render(tlr_metrics *m, tlr_buf *out);

/* The Content-Type to serve the rendered text with. */
#define TLR_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
