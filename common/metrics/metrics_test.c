/* metrics_test.c - registry behaviour, exact text output, escaping,
 * programmer-error aborts, concurrency, process metrics, and promtool's
 * verdict on everything the registry can render. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tlr_buf.h"
#include "tlr_err.h"
#include "metrics_testkit.h"
#include "tlr_metrics.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void assert_text(const char *got, const char *want)
{
    if (strcmp(got, want) != 0)
        fail_msg("render mismatch\n--- got ---\n%s--- want ---\n%s", got, want);
}

static void test_render_exact(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);

    /* Registered out of name order: output is sorted. */
    static const char *const hl[] = { "op" };
    static const double bounds[] = { 0.1, 1, 10 };
    tlr_metric_family *h = tlr_metrics_histogram(m, "tailor_solve_seconds",
                                                 "Solve duration.", 1, hl,
                                                 bounds, 3);
    static const char *const cl[] = { "nodepool", "reason" };
    tlr_metric_family *c = tlr_metrics_counter(m, "tailor_launches_total",
                                               "Launches by pool.", 2, cl);
    tlr_metric_family *g = tlr_metrics_gauge(m, "tailor_pending_pods",
                                             "Pods waiting.", 0, NULL);
    /* A labelled family with no series yet renders nothing. */
    tlr_metrics_counter(m, "tailor_unused_total", "Never touched.", 1, hl);

    tlr_metric *gpu = tlr_metric_series(c, (const char *const[]){ "gpu", "pending" });
    tlr_counter_add(gpu, 2);
    tlr_metrics_counter_inc(c, (const char *const[]){ "default", "pending" });
    tlr_metrics_counter_inc(c, (const char *const[]){ "default", "drift" });
    tlr_counter_inc(gpu);
    tlr_counter_add(gpu, -5);          /* ignored: counters only go up */
    tlr_counter_add(gpu, NAN);         /* ignored */

    tlr_gauge_set(tlr_metric_series(g, NULL), 7);
    tlr_gauge_add(tlr_metric_series(g, NULL), -2.5);

    tlr_metric *solve = tlr_metric_series(h, (const char *const[]){ "solve" });
    tlr_histogram_observe(solve, 0.05);
    tlr_histogram_observe(solve, 0.1);     /* on the bound: le="0.1" */
    tlr_histogram_observe(solve, 3);
    tlr_histogram_observe(solve, 50);      /* only +Inf */
    tlr_histogram_observe(solve, NAN);     /* ignored */
    tlr_metrics_histogram_observe(h, (const char *const[]){ "simulate" }, 0.5);

    char *got = mt_render(m);
    assert_text(got,
        "# HELP tailor_launches_total Launches by pool.\n"
        "# TYPE tailor_launches_total counter\n"
        "tailor_launches_total{nodepool=\"default\",reason=\"drift\"} 1\n"
        "tailor_launches_total{nodepool=\"default\",reason=\"pending\"} 1\n"
        "tailor_launches_total{nodepool=\"gpu\",reason=\"pending\"} 3\n"
        "# HELP tailor_pending_pods Pods waiting.\n"
        "# TYPE tailor_pending_pods gauge\n"
        "tailor_pending_pods 4.5\n"
        "# HELP tailor_solve_seconds Solve duration.\n"
        "# TYPE tailor_solve_seconds histogram\n"
        "tailor_solve_seconds_bucket{op=\"simulate\",le=\"0.1\"} 0\n"
        "tailor_solve_seconds_bucket{op=\"simulate\",le=\"1\"} 1\n"
        "tailor_solve_seconds_bucket{op=\"simulate\",le=\"10\"} 1\n"
        "tailor_solve_seconds_bucket{op=\"simulate\",le=\"+Inf\"} 1\n"
        "tailor_solve_seconds_sum{op=\"simulate\"} 0.5\n"
        "tailor_solve_seconds_count{op=\"simulate\"} 1\n"
        "tailor_solve_seconds_bucket{op=\"solve\",le=\"0.1\"} 2\n"
        "tailor_solve_seconds_bucket{op=\"solve\",le=\"1\"} 2\n"
        "tailor_solve_seconds_bucket{op=\"solve\",le=\"10\"} 3\n"
        "tailor_solve_seconds_bucket{op=\"solve\",le=\"+Inf\"} 4\n"
        "tailor_solve_seconds_sum{op=\"solve\"} 53.15\n"
        "tailor_solve_seconds_count{op=\"solve\"} 4\n");
    free(got);

    assert_int_equal(tlr_histogram_count(solve), 4);
    assert_true(fabs(tlr_histogram_sum(solve) - 53.15) < 1e-9);
    assert_true(tlr_metric_value(gpu) == 3.0);
    tlr_metrics_free(m);
}

static void test_register_twice_same_family(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    static const char *const l[] = { "a" };
    tlr_metric_family *f1 = tlr_metrics_counter(m, "x_total", "X.", 1, l);
    tlr_metric_family *f2 = tlr_metrics_counter(m, "x_total", "X again.", 1, l);
    assert_ptr_equal(f1, f2);
    tlr_metric *s1 = tlr_metric_series(f1, (const char *const[]){ "v" });
    /* Other series created in between move the pointer array, not series. */
    for (int i = 0; i < 100; i++) {
        char v[16];
        snprintf(v, sizeof(v), "a%d", i);
        tlr_metric_series(f1, (const char *const[]){ v });
    }
    assert_ptr_equal(s1, tlr_metric_series(f2, (const char *const[]){ "v" }));

    tlr_metric_family *h1 = tlr_metrics_histogram(m, "h_seconds", "H.", 0, NULL, NULL, 0);
    static const double with_inf[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                       0.5, 1, 2.5, 5, 10, INFINITY };
    tlr_metric_family *h2 = tlr_metrics_histogram(m, "h_seconds", "H.", 0, NULL,
                                                  with_inf, (int)ARRAY_LEN(with_inf));
    assert_ptr_equal(h1, h2);     /* defaults; a trailing +Inf is implied */
    tlr_metrics_free(m);
}

static void test_escaping(void **state)
{
    (void)state;
    static const struct {
        const char *help, *value, *want;
    } cases[] = {
        { "plain", "v", "# HELP e_total plain\n# TYPE e_total counter\ne_total{l=\"v\"} 1\n" },
        { "back\\slash \"q\"\nline2", "a\\b\"c\nd",
          "# HELP e_total back\\\\slash \"q\"\\nline2\n# TYPE e_total counter\n"
          "e_total{l=\"a\\\\b\\\"c\\nd\"} 1\n" },
        { "utf8 ok: héllo", "naïve ✓", "# HELP e_total utf8 ok: héllo\n# TYPE e_total counter\n"
          "e_total{l=\"naïve ✓\"} 1\n" },
        /* Invalid UTF-8 from outside becomes U+FFFD, not a broken scrape. */
        { "bad", "x\xff" "y\xc3", "# HELP e_total bad\n# TYPE e_total counter\n"
          "e_total{l=\"x\xef\xbf\xbdy\xef\xbf\xbd\"} 1\n" },
        { "overlong", "\xc0\xaf", "# HELP e_total overlong\n# TYPE e_total counter\n"
          "e_total{l=\"\xef\xbf\xbd\xef\xbf\xbd\"} 1\n" },
        { "empty value", "", "# HELP e_total empty value\n# TYPE e_total counter\n"
          "e_total{l=\"\"} 1\n" },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        tlr_metrics *m;
        tlr_metrics_create(&m);
        static const char *const l[] = { "l" };
        tlr_metric_family *f = tlr_metrics_counter(m, "e_total", cases[i].help, 1, l);
        tlr_metrics_counter_inc(f, (const char *const[]){ cases[i].value });
        char *got = mt_render(m);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu: got\n%s want\n%s", i, got, cases[i].want);
        free(got);
        tlr_metrics_free(m);
    }
}

static void test_number_format(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        { 0, "0" },
        { 1.5, "1.5" },
        { -2, "-2" },
        { 0.1, "0.1" },
        { 1e-7, "1e-07" },
        { 123456789012.0, "123456789012" },
        { 9007199254740993.0, "9007199254740992" },   /* 2^53+1 rounds */
        { 1.0 / 3.0, "0.33333333333333331" },         /* needs 17 digits */
        { NAN, "NaN" },
        { INFINITY, "+Inf" },
        { -INFINITY, "-Inf" },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        tlr_metrics *m;
        tlr_metrics_create(&m);
        tlr_metric_family *g = tlr_metrics_gauge(m, "n", "N.", 0, NULL);
        tlr_gauge_set(tlr_metric_series(g, NULL), cases[i].v);
        char *got = mt_render(m);
        char want[128];
        snprintf(want, sizeof(want), "# HELP n N.\n# TYPE n gauge\nn %s\n", cases[i].want);
        if (strcmp(got, want) != 0)
            fail_msg("case %zu: got %s want %s", i, got, want);
        /* What we print must read back as the same number. */
        if (!isnan(cases[i].v)) {
            const char *num = strrchr(got, ' ') + 1;
            double back = strcmp(num, "+Inf\n") == 0 ? INFINITY : strtod(num, NULL);
            if (back != cases[i].v)
                fail_msg("case %zu: %s does not read back as %.17g", i, num, cases[i].v);
        }
        free(got);
        tlr_metrics_free(m);
    }
}

static void test_render_ceiling(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    tlr_metrics_gauge(m, "some_gauge", "A gauge with a long enough help text.", 0, NULL);
    tlr_buf b;
    tlr_buf_init(&b, 16);
    assert_int_equal(tlr_metrics_render(m, &b), TLR_E_TOOBIG);
    tlr_buf_free(&b);
    tlr_metrics_free(m);
}

static void test_series_ceiling(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    static const char *const l[] = { "id" };
    tlr_metric_family *f = tlr_metrics_counter(m, "flood_total", "F.", 1, l);
    for (int i = 0; i < TLR_METRICS_MAX_SERIES + 50; i++) {
        char v[16];
        snprintf(v, sizeof(v), "%06d", i);
        tlr_metric *s = tlr_metric_series(f, (const char *const[]){ v });
        assert_non_null(s);
        tlr_counter_inc(s);
    }
    char *got = mt_render(m);
    size_t lines = 0;
    for (const char *p = got; *p; p++)
        lines += *p == '\n';
    free(got);
    if (lines != (size_t)TLR_METRICS_MAX_SERIES + 2)
        fail_msg("got %zu lines want %d", lines, TLR_METRICS_MAX_SERIES + 2);
    tlr_metrics_free(m);
}

/* A raised ceiling holds more series than the default; lowering is
 * ignored; sweeping makes room again. */
static void test_series_ceiling_raised(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    static const char *const l[] = { "id" };
    tlr_metric_family *f = tlr_metrics_gauge(m, "pods_state", "P.", 1, l);
    tlr_metrics_family_set_max_series(f, TLR_METRICS_MAX_SERIES + 20);
    tlr_metrics_family_set_max_series(f, 5);
    for (int i = 0; i < TLR_METRICS_MAX_SERIES + 50; i++) {
        char v[16];
        snprintf(v, sizeof(v), "%06d", i);
        tlr_metrics_gauge_set(f, (const char *const[]){ v }, 1);
    }
    char *got = mt_render(m);
    size_t lines = 0;
    for (const char *p = got; *p; p++)
        lines += *p == '\n';
    if (lines != (size_t)TLR_METRICS_MAX_SERIES + 20 + 2)
        fail_msg("got %zu lines want %d", lines, TLR_METRICS_MAX_SERIES + 22);
    if (strstr(got, "id=\"010020\""))
        fail_msg("a series past the raised ceiling was rendered");
    free(got);
    tlr_metrics_family_mark_stale(f);
    tlr_metrics_gauge_set(f, (const char *const[]){ "000000" }, 1);
    assert_int_equal(tlr_metrics_family_sweep_stale(f), TLR_METRICS_MAX_SERIES + 19);
    tlr_metrics_gauge_set(f, (const char *const[]){ "010049" }, 2);
    got = mt_render(m);
    if (!strstr(got, "pods_state{id=\"010049\"} 2\n"))
        fail_msg("after the sweep a new series was not rendered:\n%.300s", got);
    free(got);
    tlr_metrics_free(m);
}

/* ---- programmer errors abort with a message ---- */

typedef struct abort_case {
    const char *what;
    void (*fn)(tlr_metrics *m);
    const char *want_msg;        /* substring of the stderr message */
} abort_case;

static void bad_metric_name(tlr_metrics *m) { tlr_metrics_counter(m, "1abc", "h", 0, NULL); }
static void bad_metric_dash(tlr_metrics *m) { tlr_metrics_gauge(m, "a-b", "h", 0, NULL); }
static void bad_metric_empty(tlr_metrics *m) { tlr_metrics_gauge(m, "", "h", 0, NULL); }
static void bad_label_dunder(tlr_metrics *m)
{
    tlr_metrics_counter(m, "ok_total", "h", 1, (const char *const[]){ "__x" });
}
static void bad_label_colon(tlr_metrics *m)
{
    tlr_metrics_counter(m, "ok_total", "h", 1, (const char *const[]){ "a:b" });
}
static void bad_label_le(tlr_metrics *m)
{
    tlr_metrics_histogram(m, "ok_seconds", "h", 1, (const char *const[]){ "le" }, NULL, 0);
}
static void bad_label_quantile(tlr_metrics *m)
{
    tlr_metrics_summary(m, "ok_seconds", "h", 1, (const char *const[]){ "quantile" });
}
static void bad_label_dup(tlr_metrics *m)
{
    tlr_metrics_counter(m, "ok_total", "h", 2, (const char *const[]){ "a", "a" });
}
static void bad_kind_change(tlr_metrics *m)
{
    tlr_metrics_counter(m, "x", "h", 0, NULL);
    tlr_metrics_gauge(m, "x", "h", 0, NULL);
}
static void bad_labels_change(tlr_metrics *m)
{
    tlr_metrics_counter(m, "x_total", "h", 1, (const char *const[]){ "a" });
    tlr_metrics_counter(m, "x_total", "h", 1, (const char *const[]){ "b" });
}
static void bad_buckets(tlr_metrics *m)
{
    tlr_metrics_histogram(m, "h_seconds", "h", 0, NULL, (const double[]){ 1, 1 }, 2);
}
static void bad_null_value(tlr_metrics *m)
{
    tlr_metric_family *f = tlr_metrics_counter(m, "x_total", "h", 1, (const char *const[]){ "a" });
    tlr_metric_series(f, (const char *const[]){ NULL });
}
static void bad_wrong_kind(tlr_metrics *m)
{
    tlr_metric_family *f = tlr_metrics_gauge(m, "g", "h", 0, NULL);
    tlr_counter_inc(tlr_metric_series(f, NULL));
}

static void test_programmer_errors_abort(void **state)
{
    (void)state;
    static const abort_case cases[] = {
        { "name starts with digit", bad_metric_name, "invalid metric name \"1abc\"" },
        { "name with dash", bad_metric_dash, "invalid metric name \"a-b\"" },
        { "empty name", bad_metric_empty, "invalid metric name \"\"" },
        { "label starts with __", bad_label_dunder, "invalid label name \"__x\"" },
        { "label with colon", bad_label_colon, "invalid label name \"a:b\"" },
        { "le on histogram", bad_label_le, "\"le\" is reserved" },
        { "quantile on summary", bad_label_quantile, "\"quantile\" is reserved" },
        { "duplicate label", bad_label_dup, "duplicate label name \"a\"" },
        { "kind changed", bad_kind_change, "x registered twice" },
        { "labels changed", bad_labels_change, "x_total registered twice" },
        { "buckets not increasing", bad_buckets, "strictly increasing" },
        { "NULL label value", bad_null_value, "value of label \"a\" is NULL" },
        { "counter op on gauge", bad_wrong_kind, "counter add on a gauge" },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            dup2(fds[1], 2);
            close(fds[0]);
            tlr_metrics *m;
            tlr_metrics_create(&m);
            cases[i].fn(m);
            _exit(0);          /* did not abort */
        }
        close(fds[1]);
        char msg[4096];
        size_t len = 0;
        ssize_t n;
        while (len + 1 < sizeof(msg) &&
               (n = read(fds[0], msg + len, sizeof(msg) - 1 - len)) > 0)
            len += (size_t)n;
        msg[len] = '\0';
        close(fds[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT)
            fail_msg("case %zu (%s): got status 0x%x want SIGABRT", i, cases[i].what, st);
        if (!strstr(msg, "tlr_metrics: ") || !strstr(msg, cases[i].want_msg))
            fail_msg("case %zu (%s): got message %s want one containing %s", i,
                     cases[i].what, msg, cases[i].want_msg);
    }
}

static void test_valid_names(void **state)
{
    (void)state;
    static const char *const names[] = { "a", "_x", ":x", "a:b_c9", "Z9:_" };
    tlr_metrics *m;
    tlr_metrics_create(&m);
    for (size_t i = 0; i < ARRAY_LEN(names); i++) {
        static const char *const l[] = { "_l", "Ab9" };
        assert_non_null(tlr_metrics_gauge(m, names[i], "h", 2, l));
    }
    tlr_metrics_free(m);
}

/* ---- concurrency ---- */

typedef struct worker {
    tlr_metric *counter;
    tlr_metric *hist;
    tlr_metric_family *fam;
    int n;
    pthread_barrier_t *go;      /* both writers start together */
} worker;

static void *worker_run(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->go);
    for (int i = 0; i < w->n; i++) {
        tlr_counter_inc(w->counter);
        tlr_histogram_observe(w->hist, (double)(i % 4));
        if (i % 1000 == 0)      /* series creation races rendering too */
            tlr_metrics_counter_inc(w->fam, (const char *const[]){ i % 2000 ? "b" : "a" });
    }
    return NULL;
}

typedef struct scraper {
    tlr_metrics *m;
    _Atomic int *stop;
    int renders;
} scraper;

static void *scraper_run(void *arg)
{
    scraper *sc = arg;
    while (!*sc->stop) {
        char *txt = mt_render(sc->m);
        free(txt);
        sc->renders++;
    }
    return NULL;
}

static void test_concurrency(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    tlr_metric_family *c = tlr_metrics_counter(m, "hits_total", "H.", 0, NULL);
    tlr_metric_family *h = tlr_metrics_histogram(m, "lat_seconds", "L.", 0, NULL,
                                                 (const double[]){ 0.5, 1.5, 2.5 }, 3);
    static const char *const l[] = { "k" };
    tlr_metric_family *lab = tlr_metrics_counter(m, "lab_total", "L.", 1, l);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    worker w = { tlr_metric_series(c, NULL), tlr_metric_series(h, NULL), lab, 100000, &go };
    _Atomic int stop = 0;
    scraper sc = { m, &stop, 0 };
    pthread_t t1, t2, t3;
    assert_int_equal(pthread_create(&t3, NULL, scraper_run, &sc), 0);
    assert_int_equal(pthread_create(&t1, NULL, worker_run, &w), 0);
    assert_int_equal(pthread_create(&t2, NULL, worker_run, &w), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    stop = 1;
    pthread_join(t3, NULL);
    pthread_barrier_destroy(&go);

    double got = tlr_metric_value(w.counter);
    if (got != 200000.0)
        fail_msg("counter: got %.17g want 200000", got);
    assert_int_equal(tlr_histogram_count(w.hist), 200000);
    /* Each thread observes 0,1,2,3 25000 times each: sum 150000. */
    assert_true(tlr_histogram_sum(w.hist) == 300000.0);
    assert_true(tlr_metric_value(tlr_metric_series(lab, (const char *const[]){ "a" })) +
                tlr_metric_value(tlr_metric_series(lab, (const char *const[]){ "b" })) == 200.0);
    char *txt = mt_render(m);
    assert_non_null(strstr(txt, "hits_total 200000\n"));
    assert_non_null(strstr(txt, "lat_seconds_bucket{le=\"0.5\"} 50000\n"));
    assert_non_null(strstr(txt, "lat_seconds_bucket{le=\"+Inf\"} 200000\n"));
    assert_non_null(strstr(txt, "lat_seconds_count 200000\n"));
    free(txt);
    print_message("concurrency: %d renders raced the writers\n", sc.renders);
    tlr_metrics_free(m);
}

/* ---- process metrics ---- */

static double sample(const char *txt, const char *name)
{
    char key[128];
    snprintf(key, sizeof(key), "\n%s ", name);
    const char *p = strstr(txt, key);
    if (!p)
        fail_msg("no sample %s in:\n%s", name, txt);
    return strtod(p + strlen(key), NULL);
}

static double fixed_gauge(void *arg)
{
    return *(double *)arg;
}

static void test_process_and_func(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    tlr_metrics_register_process(m);
    tlr_metrics_register_process(m);    /* idempotent */
    double val = 42;
    tlr_metrics_gauge_func(m, "answer", "The answer.", fixed_gauge, &val);
    char *txt = mt_render(m);
    double now = (double)time(NULL);
    struct { const char *name; double lo, hi; } want[] = {
        { "process_resident_memory_bytes", 1 << 20, 1e12 },
        { "process_virtual_memory_bytes", 1 << 20, 1e15 },
        { "process_open_fds", 3, 1e6 },
        { "process_max_fds", 3, 1e12 },
        { "process_cpu_seconds_total", 0, 3600 },
        { "process_start_time_seconds", now - 600, now + 1 },
        { "answer", 42, 42 },
    };
    for (size_t i = 0; i < ARRAY_LEN(want); i++) {
        double v = sample(txt, want[i].name);
        if (!(v >= want[i].lo && v <= want[i].hi))
            fail_msg("%s: got %.17g want in [%g, %g]", want[i].name, v, want[i].lo, want[i].hi);
    }
    assert_non_null(strstr(txt, "# TYPE process_cpu_seconds_total counter\n"));
    assert_non_null(strstr(txt, "# TYPE process_open_fds gauge\n"));
    free(txt);
    val = 43;           /* computed at scrape time */
    txt = mt_render(m);
    assert_true(sample(txt, "answer") == 43);
    free(txt);
    tlr_metrics_free(m);
}

/* ---- promtool ---- */

static bool promtool_found(void)
{
    return system("command -v promtool >/dev/null 2>&1") == 0;
}

/* Summaries: nearest-rank quantiles over the window, _sum and _count;
 * NaN quantiles before any observation. */
static void test_summary(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    static const char *const l[] = { "nodepool" };
    tlr_metric_family *f = tlr_metrics_summary(m, "k_seconds", "Durations.", 1, l);
    tlr_metric_family *u = tlr_metrics_summary(m, "u_seconds", "Unlabelled.", 0, NULL);
    for (int i = 100; i >= 1; i--)          /* 1..100, out of order */
        tlr_metrics_summary_observe(f, (const char *const[]){ "a" }, i);
    tlr_metrics_summary_observe(f, (const char *const[]){ "a" }, NAN);   /* ignored */
    char *got = mt_render(m);
    assert_text(got,
                "# HELP k_seconds Durations.\n# TYPE k_seconds summary\n"
                "k_seconds{nodepool=\"a\",quantile=\"0\"} 1\n"
                "k_seconds{nodepool=\"a\",quantile=\"0.5\"} 50\n"
                "k_seconds{nodepool=\"a\",quantile=\"0.9\"} 90\n"
                "k_seconds{nodepool=\"a\",quantile=\"0.99\"} 99\n"
                "k_seconds{nodepool=\"a\",quantile=\"1\"} 100\n"
                "k_seconds_sum{nodepool=\"a\"} 5050\n"
                "k_seconds_count{nodepool=\"a\"} 100\n"
                "# HELP u_seconds Unlabelled.\n# TYPE u_seconds summary\n"
                "u_seconds{quantile=\"0\"} NaN\nu_seconds{quantile=\"0.5\"} NaN\n"
                "u_seconds{quantile=\"0.9\"} NaN\nu_seconds{quantile=\"0.99\"} NaN\n"
                "u_seconds{quantile=\"1\"} NaN\nu_seconds_sum 0\nu_seconds_count 0\n");
    free(got);
    /* The window keeps the newest 512; count and sum keep everything. */
    tlr_metric *s = tlr_metric_series(u, NULL);
    for (int i = 0; i < 1000; i++)
        tlr_summary_observe(s, i < 488 ? 1e6 : 1);
    assert_int_equal(tlr_histogram_count(s), 1000);
    got = mt_render(m);
    assert_non_null(strstr(got, "u_seconds{quantile=\"1\"} 1\n"));
    free(got);
    tlr_metrics_free(m);
}

/* Mark, set the live series, sweep: the others go, scrapes between see
 * the old values, an unlabelled family keeps its one series. */
static void test_sweep_stale(void **state)
{
    (void)state;
    tlr_metrics *m;
    tlr_metrics_create(&m);
    static const char *const l[] = { "node" };
    tlr_metric_family *g = tlr_metrics_gauge(m, "n_bytes", "Per node.", 1, l);
    tlr_metric_family *one = tlr_metrics_gauge(m, "one", "Unlabelled.", 0, NULL);
    static const struct {
        const char *pass[3];
        const char *want;
        size_t swept;
    } cases[] = {
        { { "a", "b", "c" }, "n_bytes{node=\"a\"} 1\nn_bytes{node=\"b\"} 1\nn_bytes{node=\"c\"} 1\n", 0 },
        { { "b", NULL }, "n_bytes{node=\"b\"} 2\n", 2 },
        { { "d", "a", NULL }, "n_bytes{node=\"a\"} 3\nn_bytes{node=\"d\"} 3\n", 1 },
        { { NULL }, "", 2 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        tlr_metrics_family_mark_stale(g);
        tlr_metrics_family_mark_stale(one);
        for (int k = 0; k < 3 && cases[i].pass[k]; k++)
            tlr_metrics_gauge_set(g, (const char *const[]){ cases[i].pass[k] }, (double)i + 1);
        size_t swept = tlr_metrics_family_sweep_stale(g);
        tlr_metrics_family_sweep_stale(one);
        char want[512];
        snprintf(want, sizeof(want), "%s%s# HELP one Unlabelled.\n# TYPE one gauge\none 0\n",
                 cases[i].want[0] ? "# HELP n_bytes Per node.\n# TYPE n_bytes gauge\n" : "",
                 cases[i].want);
        char *got = mt_render(m);
        if (strcmp(got, want) || swept != cases[i].swept)
            fail_msg("case %zu: swept %zu want %zu\n--- got ---\n%s--- want ---\n%s", i, swept,
                     cases[i].swept, got, want);
        free(got);
    }
    tlr_metrics_free(m);
}

static void test_promtool_accepts(void **state)
{
    (void)state;
    if (!promtool_found()) {
        print_message("promtool not on PATH: skipping promtool check\n");
        skip();
    }
    tlr_metrics *m;
    tlr_metrics_create(&m);
    tlr_metrics_register_process(m);
    static const char *const l[] = { "nodepool", "capacity_type" };
    tlr_metric_family *c = tlr_metrics_counter(m, "tailor_nodeclaims_created_total",
                                               "NodeClaims created.\nSecond \\ line.", 2, l);
    tlr_metrics_counter_inc(c, (const char *const[]){ "default", "spot" });
    tlr_metrics_counter_add(c, (const char *const[]){ "we\"ird\\\nvalue", "on-demand" }, 3);
    tlr_metrics_counter(m, "tailor_plain_total", "Plain counter.", 0, NULL);
    tlr_metric_family *g = tlr_metrics_gauge(m, "tailor_pending_pods", "Pending pods.", 1, l);
    tlr_metrics_gauge_set(g, (const char *const[]){ "a", "b" }, -1.25);
    tlr_metrics_gauge_set(g, (const char *const[]){ "a", "c" }, INFINITY);
    tlr_metric_family *h = tlr_metrics_histogram(m, "tailor_solve_duration_seconds",
                                                 "Solve duration.", 1, l, NULL, 0);
    for (int i = 0; i < 50; i++)
        tlr_metrics_histogram_observe(h, (const char *const[]){ "x" }, i * 0.37);
    tlr_metrics_histogram(m, "tailor_empty_seconds", "Unlabelled histogram.", 0, NULL,
                          (const double[]){ 1e-3, 1e3, INFINITY }, 3);
    tlr_metric_family *sm = tlr_metrics_summary(m, "tailor_termination_duration_seconds",
                                                "A summary.", 1, l);
    tlr_metrics_summary_observe(sm, (const char *const[]){ "x" }, 2.5);
    tlr_metrics_summary(m, "tailor_idle_wait_seconds", "Unlabelled summary.", 0, NULL);
    char *txt = mt_render(m);

    char path[] = "/tmp/tlr_metrics_promtool_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "promtool check metrics > %s 2>&1", path);
    FILE *p = popen(cmd, "w");
    assert_non_null(p);
    fputs(txt, p);
    int st = pclose(p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char out[4096] = "";
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(out, 1, sizeof(out) - 1, f);
            out[n] = '\0';
            fclose(f);
        }
        unlink(path);
        fail_msg("promtool check metrics: status 0x%x\n%s\ninput:\n%s", st, out, txt);
    }
    unlink(path);
    free(txt);
    tlr_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_exact),
        cmocka_unit_test(test_register_twice_same_family),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_number_format),
        cmocka_unit_test(test_render_ceiling),
        cmocka_unit_test(test_series_ceiling),
        cmocka_unit_test(test_programmer_errors_abort),
        cmocka_unit_test(test_valid_names),
        cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_process_and_func),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_sweep_stale),
        cmocka_unit_test(test_series_ceiling_raised),
        cmocka_unit_test(test_promtool_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
