/* kube_retry_test.c - the Kubernetes client waits as a 429/503 with
 * Retry-After asks (seconds or HTTP-date), retries, and stops at the
 * caller's deadline; without Retry-After the error is the caller's at
 * once.  Against the scripted loopback server of the aws tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "aws_testsrv.h"
#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_kube.h"
#include "tlr_time.h"

typedef struct outcome {
    int rc, served;
    long http;
    int64_t elapsed_ms;
} outcome;

static outcome get_pod(const testsrv_resp *resp, int n, int64_t deadline_in_ms)
{
    testsrv s;
    char path[] = "/tmp/kube_retry_test_XXXXXX";
    testsrv_start(&s, resp, n);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
               "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:%d\n"
               "users:\n- name: u\n  user:\n    token: t0ken\n"
               "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n", s.port);
    fclose(f);
    tlr_kube *kc = NULL;
    char err[256];
    assert_int_equal(tlr_kube_connect(path, false, NULL, &kc, err, sizeof(err)), TLR_OK);
    unlink(path);
    json_object *o = NULL;
    tlr_kube_status st = { 0 };
    int64_t t0 = tlr_mono_ms();
    if (deadline_in_ms != 0)
        tlr_deadline_set(t0 + deadline_in_ms);
    outcome r = { 0 };
    r.rc = tlr_kube_request(kc, "GET", "/api/v1/namespaces/default/pods/p", NULL, NULL, &o, &st);
    r.elapsed_ms = tlr_mono_ms() - t0;
    tlr_deadline_clear();
    r.http = st.http;
    json_object_put(o);
    tlr_kube_free(kc);
    testsrv_stop(&s);
    r.served = s.served;
    testsrv_free(&s);
    return r;
}

static void test_retry_after(void **state)
{
    (void)state;
    static const char pod[] = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}";
    static const char busy[] = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\","
                               "\"message\":\"too many requests, please try again later\"}";
    char date[96];
    time_t t = (time_t)(tlr_wall_ms() / 1000) + 4;   /* the first case takes ~1 s */
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "Retry-After: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
    const struct {
        const char *what;
        testsrv_resp resp[3];
        int n;
        int64_t deadline_in_ms;
        int rc, served;
        int64_t min_ms, max_ms;
    } t_[] = {
        { "429 Retry-After 1 then ok", { { 429, busy, "Retry-After: 1\r\n", 0 }, { 200, pod, NULL, 0 } },
          2, 0, TLR_OK, 2, 950, 3000 },
        { "503 Retry-After date then ok", { { 503, busy, date, 0 }, { 200, pod, NULL, 0 } },
          2, 0, TLR_OK, 2, 900, 5000 },
        { "429 without Retry-After is final", { { 429, busy, NULL, 0 } }, 1, 0,
          TLR_E_THROTTLED, 1, 0, 900 },
        { "500 with Retry-After is final", { { 500, busy, "Retry-After: 1\r\n", 0 } }, 1, 0,
          TLR_E_UNAVAILABLE, 1, 0, 900 },
        { "Retry-After past the deadline is not waited", { { 429, busy, "Retry-After: 5\r\n", 0 },
          { 200, pod, NULL, 0 } }, 2, 1000, TLR_E_THROTTLED, 1, 0, 900 },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t_) / sizeof(t_[0]); i++) {
        outcome o = get_pod(t_[i].resp, t_[i].n, t_[i].deadline_in_ms);
        if (o.rc != t_[i].rc || o.served != t_[i].served || o.elapsed_ms < t_[i].min_ms ||
            o.elapsed_ms > t_[i].max_ms) {
            printf("FAIL %s: got %s served %d in %lld ms (http %ld); want %s served %d in "
                   "[%lld, %lld] ms\n", t_[i].what, tlr_errname(o.rc), o.served,
                   (long long)o.elapsed_ms, o.http, tlr_errname(t_[i].rc), t_[i].served,
                   (long long)t_[i].min_ms, (long long)t_[i].max_ms);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
