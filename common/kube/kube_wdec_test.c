/* kube_wdec_test.c - the incremental watch decoder: events split at every
 * possible chunk boundary come out whole and in order; garbage and
 * oversized events are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"

typedef struct seen {
    char log[4096];      /* "ADDED:a,MODIFIED:b," */
    int n;
} seen;

static int record(void *arg, tlr_kube_event_type t, json_object *obj)
{
    seen *s = arg;
    const char *name = tlr_json_str(obj, "metadata.name");
    size_t l = strlen(s->log);
    snprintf(s->log + l, sizeof(s->log) - l, "%s:%s,", tlr_kube_event_name(t),
             name ? name : "?");
    s->n++;
    return TLR_OK;
}

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b \\\"q\\\" \\u00e9\"}}}\n"
    "  {\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\r\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\"},\"spec\":{\"x\":[1,2,{\"y\":null}]}}}\n";
static const char want[] =
    "ADDED:a,MODIFIED:b \"q\" \xc3\xa9,BOOKMARK:?,DELETED:c,";

/* Split the stream into chunks of every size from 1 up, and also at every
 * single cut point into two pieces. */
static void test_chunk_boundaries(void **state)
{
    (void)state;
    size_t len = strlen(stream);
    for (size_t chunk = 1; chunk <= len; chunk++) {
        tlr_kube_wdec *d;
        seen s = { 0 };
        assert_int_equal(tlr_kube_wdec_create(0, &d), TLR_OK);
        for (size_t off = 0; off < len; off += chunk) {
            size_t n = len - off < chunk ? len - off : chunk;
            int rc = tlr_kube_wdec_feed(d, stream + off, n, record, &s);
            if (rc != TLR_OK)
                fail_msg("chunk %zu at %zu: got %s, want OK", chunk, off, tlr_errname(rc));
        }
        if (strcmp(s.log, want) != 0)
            fail_msg("chunk %zu:\n got  %s\n want %s", chunk, s.log, want);
        assert_int_equal(tlr_kube_wdec_pending(d), 0);
        tlr_kube_wdec_free(d);
    }
    for (size_t cut = 0; cut <= len; cut++) {
        tlr_kube_wdec *d;
        seen s = { 0 };
        tlr_kube_wdec_create(0, &d);
        assert_int_equal(tlr_kube_wdec_feed(d, stream, cut, record, &s), TLR_OK);
        assert_int_equal(tlr_kube_wdec_feed(d, stream + cut, len - cut, record, &s), TLR_OK);
        if (strcmp(s.log, want) != 0)
            fail_msg("cut %zu:\n got  %s\n want %s", cut, s.log, want);
        tlr_kube_wdec_free(d);
    }
}

static void test_partial_is_pending(void **state)
{
    (void)state;
    tlr_kube_wdec *d;
    seen s = { 0 };
    tlr_kube_wdec_create(0, &d);
    assert_int_equal(tlr_kube_wdec_feed(d, stream, 20, record, &s), TLR_OK);
    assert_int_equal(s.n, 0);
    assert_int_equal(tlr_kube_wdec_pending(d), 20);
    tlr_kube_wdec_free(d);
}

static void test_bad_input(void **state)
{
    (void)state;
    static const struct {
        const char *name, *in;
        int want;
        int events_before;
    } cases[] = {
        { "garbage", "hello world\n", TLR_E_PARSE, 0 },
        { "not an object", "[1,2]\n", TLR_E_PARSE, 0 },
        { "unknown type", "{\"type\":\"EXPLODED\",\"object\":{}}\n", TLR_E_PARSE, 0 },
        { "no object", "{\"type\":\"ADDED\"}\n", TLR_E_PARSE, 0 },
        { "garbage after a good event",
          "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n}{", TLR_E_PARSE, 1 },
        { "single quotes", "{'type':'ADDED'}", TLR_E_PARSE, 0 },
        { "nul byte", "{\"type\":\"ADD\0ED\"", TLR_E_PARSE, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tlr_kube_wdec *d;
        seen s = { 0 };
        tlr_kube_wdec_create(0, &d);
        size_t len = strlen(cases[i].in);
        if (strcmp(cases[i].name, "nul byte") == 0)
            len = 17;
        int rc = tlr_kube_wdec_feed(d, cases[i].in, len, record, &s);
        if (rc != cases[i].want || s.n != cases[i].events_before)
            fail_msg("%s: got %s with %d events, want %s with %d", cases[i].name,
                     tlr_errname(rc), s.n, tlr_errname(cases[i].want),
                     cases[i].events_before);
        /* once broken, it stays broken */
        assert_int_equal(tlr_kube_wdec_feed(d, stream, strlen(stream), record, &s),
                         TLR_E_PARSE);
        tlr_kube_wdec_free(d);
    }
}

static void test_oversized(void **state)
{
    (void)state;
    const size_t max = 200;
    char big[1024];
    int n = snprintf(big, sizeof(big), "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"");
    memset(big + n, 'x', 300);
    strcpy(big + n + 300, "\"}}}\n");
    /* whole, in one feed; and byte by byte */
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        tlr_kube_wdec *d;
        seen s = { 0 };
        tlr_kube_wdec_create(max, &d);
        int rc = TLR_OK;
        if (bytewise)
            for (size_t i = 0; i < strlen(big) && rc == TLR_OK; i++)
                rc = tlr_kube_wdec_feed(d, big + i, 1, record, &s);
        else
            rc = tlr_kube_wdec_feed(d, big, strlen(big), record, &s);
        if (rc != TLR_E_TOOBIG || s.n != 0)
            fail_msg("bytewise=%d: got %s, %d events; want TOOBIG, 0", bytewise,
                     tlr_errname(rc), s.n);
        assert_true(tlr_kube_wdec_pending(d) <= max + 1);
        tlr_kube_wdec_free(d);
    }
    /* an event just under the ceiling passes */
    tlr_kube_wdec *d;
    seen s = { 0 };
    tlr_kube_wdec_create(strlen(big), &d);
    assert_int_equal(tlr_kube_wdec_feed(d, big, strlen(big), record, &s), TLR_OK);
    assert_int_equal(s.n, 1);
    tlr_kube_wdec_free(d);
}

static int stop_at_second(void *arg, tlr_kube_event_type t, json_object *obj)
{
    seen *s = arg;
    record(arg, t, obj);
    return s->n == 2 ? TLR_E_CANCELED : TLR_OK;
}

static void test_callback_stops(void **state)
{
    (void)state;
    tlr_kube_wdec *d;
    seen s = { 0 };
    tlr_kube_wdec_create(0, &d);
    assert_int_equal(tlr_kube_wdec_feed(d, stream, strlen(stream), stop_at_second, &s),
                     TLR_E_CANCELED);
    assert_int_equal(s.n, 2);
    tlr_kube_wdec_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_boundaries),
        cmocka_unit_test(test_partial_is_pending),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_callback_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
