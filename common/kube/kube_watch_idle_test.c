/* kube_watch_idle_test.c - a watch stream that goes silent is noticed
 * after the idle limit, not after the server's timeoutSeconds, and the
 * informer resumes it from the last resourceVersion it saw.  The API
 * server is the scripted loopback server of the aws tests; its watch
 * answers stay open and silent, as a dead connection would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aws_testsrv.h"
#include "tlr_err.h"
#include "tlr_kube.h"
#include "tlr_loop.h"
#include "tlr_time.h"

static tlr_kube *connect_to(const testsrv *s)
{
    char path[] = "/tmp/kube_watch_idle_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
               "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:%d\n"
               "users:\n- name: u\n  user:\n    token: t0ken\n"
               "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n", s->port);
    fclose(f);
    tlr_kube *kc = NULL;
    char err[256];
    assert_int_equal(tlr_kube_connect(path, false, NULL, &kc, err, sizeof(err)), TLR_OK);
    unlink(path);
    return kc;
}

static int64_t ms_between(const struct timespec *a, const struct timespec *b)
{
    return (int64_t)(b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

static const char list_body[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"100\"},"
    "\"items\":[]}";
static const char event_body[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
    "{\"name\":\"p\",\"namespace\":\"default\",\"resourceVersion\":\"101\"}}}\n";

static int count_event(void *arg, tlr_kube_event_type t, json_object *obj)
{
    (void)obj;
    if (t == TLR_KUBE_ADDED)
        (*(int *)arg)++;
    return TLR_OK;
}

/* tlr_kube_watch itself: one event, then silence -> TLR_OK after idle_s. */
static void test_watch_returns_on_silence(void **state)
{
    (void)state;
    const testsrv_resp resp[] = { { 200, event_body, NULL, 0, 1 } };
    testsrv s;
    testsrv_start(&s, resp, 1);
    tlr_kube *kc = connect_to(&s);
    tlr_kube_res pods = TLR_KUBE_RES_PODS;
    tlr_kube_watch_opts wo = { .resource_version = "100", .allow_bookmarks = true,
                               .timeout_s = 300, .idle_s = 2 };
    int added = 0;
    char *last = NULL;
    int64_t t0 = tlr_mono_ms();
    tlr_kube_status st = { 0 };
    int rc = tlr_kube_watch(kc, &pods, "default", &wo, count_event, &added, &last, &st);
    int64_t took = tlr_mono_ms() - t0;
    tlr_kube_free(kc);
    testsrv_stop(&s);
    /* The request asked for bookmarks and a server-side timeout. */
    assert_non_null(strstr(s.req[0], "allowWatchBookmarks=true"));
    assert_non_null(strstr(s.req[0], "timeoutSeconds=300"));
    testsrv_free(&s);
    printf("silent watch ended after %lld ms\n", (long long)took);
    assert_int_equal(rc, TLR_OK);
    assert_int_equal(added, 1);
    assert_string_equal(last, "101");
    free(last);
    assert_true(took >= 1500 && took < 10000);   /* idle_s + curl's ~6 s speed window */
}

/* The informer: list, watch, silence, and a new watch from rv 101 within
 * the limit. */
static void test_informer_resumes_silent_watch(void **state)
{
    (void)state;
    const testsrv_resp resp[] = {
        { 200, list_body, NULL, 0, 0 },
        { 200, event_body, NULL, 0, 1 },
        { 200, "", NULL, 0, 1 },
    };
    testsrv s;
    testsrv_start(&s, resp, 3);
    tlr_kube *kc = connect_to(&s);
    tlr_loop *loop = NULL;
    assert_int_equal(tlr_loop_create(&loop), TLR_OK);
    int added = 0;
    tlr_kube_informer_opts o = { .res = TLR_KUBE_RES_PODS, .ns = "default",
                                 .watch_idle_s = 2, .handler = count_event, .arg = &added };
    tlr_kube_informer *inf = NULL;
    assert_int_equal(tlr_kube_informer_start(kc, loop, &o, &inf), TLR_OK);
    for (int i = 0; i < 100 && s.served < 3; i++)
        usleep(100 * 1000);
    tlr_kube_informer_free(inf);
    tlr_loop_free(loop);
    tlr_kube_free(kc);
    testsrv_stop(&s);
    assert_int_equal(s.served, 3);
    int64_t gap = ms_between(&s.at[1], &s.at[2]);
    printf("silent watch resumed after %lld ms\n", (long long)gap);
    assert_true(gap >= 1500 && gap < 10000);
    assert_non_null(strstr(s.req[2], "resourceVersion=101"));
    testsrv_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_returns_on_silence),
        cmocka_unit_test(test_informer_resumes_silent_watch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
