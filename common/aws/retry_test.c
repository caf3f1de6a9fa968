/* retry_test.c - how long an AWS call may take: the caller's deadline
 * (tlr_cancel.h) cuts attempts and retry sleeps, Retry-After on 429/503
 * is obeyed, and SIGTERM or a shutdown request ends a retry sleep with
 * TLR_E_CANCELED.  Both protocol clients (Query, JSON) against the
 * scripted loopback server.
 *
 * The shutdown latch is process-wide and cannot be undone, so the test
 * that sets it runs last.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "aws_testsrv.h"
#include "tlr_awsjson.h"
#include "tlr_awsquery.h"
#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_time.h"

static const char ok_body[] =
    "<DescribeRegionsResponse><requestId>r1</requestId></DescribeRegionsResponse>";
static const char throttle[] =
    "<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>slow down"
    "</Message></Error></Errors><RequestID>t1</RequestID></Response>";
static const char json_throttle[] =
    "{\"__type\":\"ThrottlingException\",\"message\":\"Rate exceeded\"}";

typedef struct run {
    int rc;
    int served;
    int64_t elapsed_ms;
    tlr_aws_error err;
} run;

/* One DescribeRegions through a Query client on a server answering resp. */
static run query_run(const testsrv_resp *resp, int n, int64_t deadline_in_ms)
{
    testsrv s;
    tlr_aws_query *q = NULL;
    tlr_xml_doc *doc = NULL;
    char url[64];
    run r = { 0 };

    testsrv_start(&s, resp, n);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "ec2", .version = "2016-11-15", .endpoint = url,
                         .max_attempts = 4, .backoff_base_ms = 1, .backoff_cap_ms = 2 }, &q),
                     TLR_OK);
    int64_t t0 = tlr_mono_ms();
    if (deadline_in_ms != 0)
        tlr_deadline_set(t0 + deadline_in_ms);
    r.rc = tlr_aws_query_call(q, "DescribeRegions", NULL, &doc, &r.err);
    r.elapsed_ms = tlr_mono_ms() - t0;
    tlr_deadline_clear();
    tlr_xml_free(doc);
    tlr_aws_query_free(q);
    testsrv_stop(&s);
    r.served = s.served;
    testsrv_free(&s);
    return r;
}

/* The same through a JSON 1.1 client (SSM GetParameter). */
static run json_run(const testsrv_resp *resp, int n, int64_t deadline_in_ms)
{
    testsrv s;
    tlr_aws_creds *cr = NULL;
    tlr_aws_json *j = NULL;
    json_object *out = NULL;
    char url[64];
    run r = { 0 };

    testsrv_start(&s, resp, n);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKIDEXAMPLE", "SECRET", NULL, &cr), TLR_OK);
    assert_int_equal(tlr_aws_json_create(&(tlr_aws_json_opts){
                         .service = "ssm", .target_prefix = "AmazonSSM", .endpoint = url,
                         .creds = cr, .max_attempts = 4, .backoff_base_ms = 1,
                         .backoff_cap_ms = 2 }, &j), TLR_OK);
    int64_t t0 = tlr_mono_ms();
    if (deadline_in_ms != 0)
        tlr_deadline_set(t0 + deadline_in_ms);
    r.rc = tlr_aws_json_call(j, "GetParameter", NULL, &out, &r.err);
    r.elapsed_ms = tlr_mono_ms() - t0;
    tlr_deadline_clear();
    json_object_put(out);
    tlr_aws_json_free(j);
    tlr_aws_creds_free(cr);
    testsrv_stop(&s);
    r.served = s.served;
    testsrv_free(&s);
    return r;
}

static void http_date(int64_t wall_ms, char *buf, size_t n)
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "Retry-After: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
}

static void check(const char *what, run r, int rc, int served, int64_t min_ms, int64_t max_ms,
                  const char *msg, int *failures)
{
    if (r.rc != rc || r.served != served || r.elapsed_ms < min_ms || r.elapsed_ms > max_ms ||
        (msg != NULL && strstr(r.err.message, msg) == NULL)) {
        printf("FAIL %s: got rc %s served %d in %lld ms \"%s\"; want rc %s served %d in "
               "[%lld, %lld] ms \"%s\"\n", what, tlr_errname(r.rc), r.served,
               (long long)r.elapsed_ms, r.err.message, tlr_errname(rc), served,
               (long long)min_ms, (long long)max_ms, msg != NULL ? msg : "");
        (*failures)++;
    }
}

static void test_deadline(void **state)
{
    (void)state;
    int failures = 0;
    char date[128];
    const testsrv_resp slow[] = { { 200, ok_body, NULL, 1500 } };
    const testsrv_resp ra30[] = { { 503, throttle, "Retry-After: 30\r\n", 0 },
                                  { 200, ok_body, NULL, 0 } };
    const testsrv_resp ok[] = { { 200, ok_body, NULL, 0 } };
    const testsrv_resp slow_json[] = { { 200, "{}", NULL, 1500 } };
    const testsrv_resp ra30_json[] = { { 429, json_throttle, "Retry-After: 30\r\n", 0 },
                                       { 200, "{}", NULL, 0 } };

    /* An attempt on the wire is cut at the deadline, not at its 30 s timeout. */
    check("query slow answer", query_run(slow, 1, 300), TLR_E_TIMEOUT, 1, 250, 1200,
          "ec2 DescribeRegions: deadline passed", &failures);
    check("json slow answer", json_run(slow_json, 1, 300), TLR_E_TIMEOUT, 1, 250, 1200,
          "ssm GetParameter: deadline passed", &failures);
    /* A retry that could only start after the deadline is not waited for. */
    check("query retry past deadline", query_run(ra30, 2, 2000), TLR_E_TIMEOUT, 1, 0, 1000,
          "deadline passed (slow down)", &failures);
    check("json retry past deadline", json_run(ra30_json, 2, 2000), TLR_E_TIMEOUT, 1, 0, 1000,
          "deadline passed (Rate exceeded)", &failures);
    /* A passed deadline: no attempt at all. */
    check("query deadline already passed", query_run(ok, 1, -1), TLR_E_TIMEOUT, 0, 0, 200,
          "deadline passed (before the call)", &failures);
    check("json deadline already passed", json_run(ok, 1, -1), TLR_E_TIMEOUT, 0, 0, 200,
          "deadline passed (before the call)", &failures);
    /* Within the deadline nothing changes. */
    check("query within deadline", query_run(ok, 1, 5000), TLR_OK, 1, 0, 1000, NULL, &failures);
    /* Without a deadline Retry-After is obeyed (seconds, then HTTP-date). */
    const testsrv_resp ra1[] = { { 503, throttle, "Retry-After: 1\r\n", 0 },
                                 { 200, ok_body, NULL, 0 } };
    check("query Retry-After seconds", query_run(ra1, 2, 0), TLR_OK, 2, 950, 3000, NULL,
          &failures);
    http_date(tlr_wall_ms() + 2000, date, sizeof(date));
    const testsrv_resp radate[] = { { 429, json_throttle, date, 0 }, { 200, "{}", NULL, 0 } };
    check("json Retry-After date", json_run(radate, 2, 0), TLR_OK, 2, 900, 3500, NULL,
          &failures);
    /* Retry-After only on 429/503: a 500 retries after its short backoff. */
    const testsrv_resp ra500[] = { { 500, "oops", "Retry-After: 30\r\n", 0 },
                                   { 200, ok_body, NULL, 0 } };
    check("query Retry-After ignored on 500", query_run(ra500, 2, 0), TLR_OK, 2, 0, 1000, NULL,
          &failures);
    assert_int_equal(failures, 0);
}

/* The deadline belongs to the thread that set it. */
static void *other_thread(void *arg)
{
    *(int64_t *)arg = tlr_deadline_get();
    return NULL;
}

static void test_deadline_per_thread(void **state)
{
    (void)state;
    int64_t seen = -1;
    pthread_t th;
    tlr_deadline_set(tlr_mono_ms() + 1000);
    pthread_create(&th, NULL, other_thread, &seen);
    pthread_join(th, NULL);
    assert_true(tlr_deadline_get() > 0);
    assert_int_equal(seen, 0);
    tlr_deadline_clear();
    assert_int_equal(tlr_deadline_get(), 0);
}

static void *send_sigterm(void *arg)
{
    (void)arg;
    usleep(300 * 1000);
    kill(getpid(), SIGTERM);
    return NULL;
}

static void *request_shutdown(void *arg)
{
    (void)arg;
    usleep(300 * 1000);
    tlr_shutdown_request();
    return NULL;
}

/* SIGTERM, blocked as in a service and not yet read by its loop, ends a
 * retry sleep on the very thread that would read it. */
static void test_sigterm_wakes_retry(void **state)
{
    (void)state;
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    const testsrv_resp ra30[] = { { 503, throttle, "Retry-After: 30\r\n", 0 },
                                  { 200, ok_body, NULL, 0 } };
    pthread_t th;
    pthread_create(&th, NULL, send_sigterm, NULL);
    run r = query_run(ra30, 1, 0);
    pthread_join(th, NULL);
    int failures = 0;
    check("query SIGTERM during retry sleep", r, TLR_E_CANCELED, 1, 250, 1500,
          "ec2 DescribeRegions: shutting down", &failures);
    /* The signal is still there for the service loop to read. */
    struct timespec zero = { 0, 0 };
    assert_int_equal(sigtimedwait(&mask, NULL, &zero), SIGTERM);
    assert_false(tlr_shutdown_requested());
    assert_int_equal(failures, 0);
}

/* tlr_shutdown_request() from another thread (the service's signal
 * path) does the same; and it latches.  Runs last. */
static void test_shutdown_request_latches(void **state)
{
    (void)state;
    const testsrv_resp ra30[] = { { 429, json_throttle, "Retry-After: 30\r\n", 0 },
                                  { 200, "{}", NULL, 0 } };
    pthread_t th;
    pthread_create(&th, NULL, request_shutdown, NULL);
    run r = json_run(ra30, 1, 0);
    pthread_join(th, NULL);
    int failures = 0;
    check("json shutdown during retry sleep", r, TLR_E_CANCELED, 1, 250, 1500,
          "ssm GetParameter: shutting down", &failures);
    assert_true(tlr_shutdown_requested());
    int64_t t0 = tlr_mono_ms();
    assert_int_equal(tlr_sleep_until(t0 + 5000), TLR_E_CANCELED);
    assert_true(tlr_mono_ms() - t0 < 100);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_deadline_per_thread),
        cmocka_unit_test(test_sigterm_wakes_retry),
        cmocka_unit_test(test_shutdown_request_latches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
