/* query_test.c - tlr_aws_query against a scripted loopback server: what is
 * sent (form body, SigV4 headers, session token), how answers are
 * classified, which are retried, the response ceiling.
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
#include "tlr_awsquery.h"
#include "tlr_err.h"
#include "tlr_time.h"

static const char ok_body[] =
    "<DescribeRegionsResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
    "<requestId>r1</requestId><regionInfo><item><regionName>us-east-1</regionName></item>"
    "</regionInfo></DescribeRegionsResponse>";
static const char ec2_throttle[] =
    "<?xml version=\"1.0\"?><Response><Errors><Error><Code>RequestLimitExceeded</Code>"
    "<Message>Request limit exceeded.</Message></Error></Errors><RequestID>t1</RequestID></Response>";
static const char ec2_auth[] =
    "<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate "
    "the provided access credentials</Message></Error></Errors><RequestID>a1</RequestID></Response>";
static const char ec2_capacity[] =
    "<Response><Errors><Error><Code>InsufficientInstanceCapacity</Code><Message>no m5.large"
    "</Message></Error></Errors><RequestID>c1</RequestID></Response>";
static const char sts_sig[] =
    "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type>"
    "<Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not "
    "match</Message></Error><RequestId>s1</RequestId></ErrorResponse>";
static const char iam_notfound[] =
    "<ErrorResponse><Error><Code>NoSuchEntity</Code><Message>The user with name x cannot be "
    "found.</Message></Error><RequestId>n1</RequestId></ErrorResponse>";

/* A script of answers and what the caller should see after them. */
static void test_answers(void **state)
{
    static const struct {
        const char *what;
        testsrv_resp resp[4];
        int nresp;
        int rc;              /* returned */
        int served;          /* requests the server saw (retries + 1) */
        const char *code;    /* err.code */
        int http;            /* err.http_status */
    } t[] = {
        { "ok", { { 200, ok_body } }, 1, TLR_OK, 1, "", 0 },
        { "throttled then ok", { { 503, ec2_throttle }, { 200, ok_body } }, 2, TLR_OK, 2, "", 0 },
        { "5xx then ok", { { 500, "oops" }, { 200, ok_body } }, 2, TLR_OK, 2, "", 0 },
        { "dropped connection then ok", { { 0, "" }, { 200, ok_body } }, 2, TLR_OK, 2, "", 0 },
        { "throttled to the end", { { 503, ec2_throttle }, { 503, ec2_throttle },
                                    { 503, ec2_throttle } }, 3, TLR_E_THROTTLED, 3,
          "RequestLimitExceeded", 503 },
        { "auth is final", { { 401, ec2_auth } }, 1, TLR_E_AUTH, 1, "AuthFailure", 401 },
        { "sts signature", { { 403, sts_sig } }, 1, TLR_E_AUTH, 1, "SignatureDoesNotMatch", 403 },
        { "capacity is final", { { 500, ec2_capacity } }, 1, TLR_E_CAPACITY, 1,
          "InsufficientInstanceCapacity", 500 },
        { "iam not found", { { 404, iam_notfound } }, 1, TLR_E_NOTFOUND, 1, "NoSuchEntity", 404 },
        { "codeless 400", { { 400, "<html>bad</html>" } }, 1, TLR_E_REMOTE, 1, "", 400 },
        { "malformed 200", { { 200, "<Describe><unclosed>" } }, 1, TLR_E_PARSE, 1, "", 200 },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        testsrv s;
        tlr_aws_creds *cr = NULL;
        tlr_aws_query *q = NULL;
        tlr_xml_doc *doc = NULL;
        tlr_aws_error err = { 0 };
        char url[64];
        int rc;

        testsrv_start(&s, t[i].resp, t[i].nresp);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
        tlr_aws_creds_create_static("AKID", "SECRET", NULL, &cr);
        assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                             .service = "ec2", .version = "2016-11-15", .region = "us-east-1",
                             .endpoint = url, .creds = cr, .max_attempts = 3,
                             .backoff_base_ms = 1, .backoff_cap_ms = 5, .timeout_ms = 3000 }, &q),
                         TLR_OK);
        rc = tlr_aws_query_call(q, "DescribeRegions", NULL, &doc, &err);
        testsrv_stop(&s);
        /* A malformed answer says what and where. */
        if (rc == TLR_E_PARSE &&
            strstr(err.message, "ec2 DescribeRegions: malformed response: line 1") == NULL) {
            printf("FAIL %s: message \"%s\" does not explain\n", t[i].what, err.message);
            failures++;
        }
        if (rc != t[i].rc || s.served != t[i].served ||
            (rc != TLR_OK && (strcmp(err.code, t[i].code) != 0 || err.http_status != t[i].http)) ||
            (rc == TLR_OK) != (doc != NULL)) {
            printf("FAIL %s: got %s after %d requests (code \"%s\", http %d, message \"%s\"), "
                   "want %s after %d (code \"%s\", http %d)\n", t[i].what, tlr_errname(rc),
                   s.served, err.code, err.http_status, err.message, tlr_errname(t[i].rc),
                   t[i].served, t[i].code, t[i].http);
            failures++;
        }
        if (rc == TLR_OK && strcmp(tlr_xml_find_text(tlr_xml_root(doc),
                                                     "regionInfo/item/regionName"), "us-east-1")) {
            printf("FAIL %s: document not the answer\n", t[i].what);
            failures++;
        }
        tlr_xml_free(doc);
        tlr_aws_query_free(q);
        tlr_aws_creds_free(cr);
        testsrv_free(&s);
    }
    assert_int_equal(failures, 0);
}

/* The request itself: form body, content type, SigV4 headers, token. */
static void test_request_shape(void **state)
{
    const testsrv_resp resp[] = { { 200, ok_body }, { 200, ok_body } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    tlr_aws_query *q = NULL;
    tlr_aws_params *p = NULL;
    tlr_xml_doc *doc = NULL;
    char url[64], host[64];

    (void)state;
    testsrv_start(&s, resp, 2);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);   /* no trailing slash */
    snprintf(host, sizeof(host), "Host: 127.0.0.1:%d\r\n", s.port);
    tlr_aws_creds_create_static("AKIDEXAMPLE", "SECRET", "SESSIONTOKEN", &cr);
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "ec2", .version = "2016-11-15", .region = "eu-west-1",
                         .endpoint = url, .creds = cr }, &q), TLR_OK);
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "Filter.1.Name", "tag:Name");
    tlr_aws_params_add(p, "Filter.1.Value.1", "a b&c=d/é");
    assert_int_equal(tlr_aws_query_call(q, "DescribeInstances", p, &doc, NULL), TLR_OK);
    tlr_xml_free(doc);
    doc = NULL;
    /* Unsigned client (STS AssumeRoleWithWebIdentity style). */
    tlr_aws_query_free(q);
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "sts", .version = "2011-06-15", .endpoint = url }, &q),
                     TLR_OK);
    assert_int_equal(tlr_aws_query_call(q, "GetCallerIdentity", NULL, &doc, NULL), TLR_OK);
    testsrv_stop(&s);

    assert_non_null(strstr(s.req[0], "POST / HTTP/1.1\r\n"));
    assert_non_null(strstr(s.req[0], host));
    assert_non_null(strstr(s.req[0],
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8\r\n"));
    assert_non_null(strstr(s.req[0], "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"));
    assert_non_null(strstr(s.req[0], "/eu-west-1/ec2/aws4_request, SignedHeaders=content-type;"
                                     "host;x-amz-date;x-amz-security-token, Signature="));
    assert_non_null(strstr(s.req[0], "X-Amz-Security-Token: SESSIONTOKEN\r\n"));
    assert_non_null(strstr(s.req[0], "X-Amz-Date: "));
    assert_non_null(strstr(s.req[0], "\r\n\r\nAction=DescribeInstances&Version=2016-11-15"
                                     "&Filter.1.Name=tag%3AName"
                                     "&Filter.1.Value.1=a+b%26c%3Dd%2F%C3%A9"));   /* space as + */
    assert_null(strstr(s.req[1], "Authorization:"));
    assert_non_null(strstr(s.req[1], "Action=GetCallerIdentity&Version=2011-06-15"));
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    tlr_aws_query_free(q);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
}

static void test_ceiling_and_refused(void **state)
{
    const testsrv_resp resp[] = { { 200, ok_body } };
    testsrv s;
    tlr_aws_query *q = NULL;
    tlr_xml_doc *doc = NULL;
    tlr_aws_error err = { 0 };
    char url[64];
    int port;

    (void)state;
    testsrv_start(&s, resp, 1);
    port = s.port;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "ec2", .version = "2016-11-15", .endpoint = url,
                         .max_response = 64, .max_attempts = 1 }, &q), TLR_OK);
    assert_int_equal(tlr_aws_query_call(q, "DescribeRegions", NULL, &doc, &err), TLR_E_TOOBIG);
    assert_non_null(strstr(err.message, "larger than 64 bytes"));
    assert_null(doc);
    testsrv_stop(&s);
    testsrv_free(&s);
    tlr_aws_query_free(q);

    /* Nothing listens any more: connection refused, retried, then IO. */
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "ec2", .version = "2016-11-15", .endpoint = url,
                         .max_attempts = 2, .backoff_base_ms = 1 }, &q), TLR_OK);
    assert_int_equal(tlr_aws_query_call(q, "DescribeRegions", NULL, &doc, &err), TLR_E_IO);
    assert_int_equal(err.http_status, 0);
    tlr_aws_query_free(q);

    /* Malformed endpoints are refused at creation. */
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "ec2", .version = "v", .endpoint = "ftp://x/" }, &q),
                     TLR_E_INVAL);
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "ec2", .version = "v", .endpoint = "not a url" }, &q),
                     TLR_E_INVAL);
}

typedef struct extend_arg {
    tlr_fence *f;
    int64_t to;
} extend_arg;

/* A renewal 150 ms from now. */
static void *extend_later(void *arg)
{
    extend_arg *x = arg;
    usleep(150 * 1000);
    tlr_fence_set(x->f, x->to);
    return NULL;
}

/* A fenced client: nothing is sent once the lease is gone, and a call
 * that hangs is cut when the lease ends, not after 5 x 30 s. */
static void test_fence(void **state)
{
    (void)state;
    const testsrv_resp resp[] = { { 200, ok_body } };
    testsrv s;
    tlr_aws_query *q = NULL;
    tlr_xml_doc *doc = NULL;
    tlr_aws_error err = { 0 };
    char url[64];
    tlr_fence f;
    tlr_fence_init(&f);
    testsrv_start(&s, resp, 1);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "ec2", .version = "2016-11-15", .endpoint = url,
                         .fence = &f }, &q), TLR_OK);
    assert_int_equal(tlr_aws_query_call(q, "TerminateInstances", NULL, &doc, &err),
                     TLR_E_CANCELED);
    assert_non_null(strstr(err.message, "not sent"));
    tlr_fence_set(&f, tlr_mono_ms() + 5000);
    assert_int_equal(tlr_aws_query_call(q, "DescribeRegions", NULL, &doc, &err), TLR_OK);
    tlr_xml_free(doc);
    testsrv_stop(&s);
    assert_int_equal(s.served, 1);   /* only the call made while valid */
    testsrv_free(&s);
    tlr_aws_query_free(q);

    /* A server that takes the request and never answers. */
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(a.sin_port));
    assert_int_equal(tlr_aws_query_create(&(tlr_aws_query_opts){
                         .service = "ec2", .version = "2016-11-15", .endpoint = url,
                         .fence = &f, .timeout_ms = 30000, .max_attempts = 5 }, &q), TLR_OK);
    int64_t t0 = tlr_mono_ms();
    tlr_fence_set(&f, t0 + 300);
    assert_int_equal(tlr_aws_query_call(q, "CreateFleet", NULL, &doc, &err), TLR_E_CANCELED);
    int64_t took = tlr_mono_ms() - t0;
    if (took < 290 || took > 400)
        fail_msg("call took %lld ms with 300 ms of lease left", (long long)took);
    assert_non_null(strstr(err.message, "Lease ended"));
    /* Renewed while the call runs: it goes on to the new valid-until. */
    pthread_t th;
    extend_arg xa = { &f, 0 };
    t0 = tlr_mono_ms();
    tlr_fence_set(&f, t0 + 300);
    xa.to = t0 + 900;
    pthread_create(&th, NULL, extend_later, &xa);
    assert_int_equal(tlr_aws_query_call(q, "CreateFleet", NULL, &doc, &err), TLR_E_CANCELED);
    took = tlr_mono_ms() - t0;
    pthread_join(th, NULL);
    if (took < 890 || took > 1000)
        fail_msg("call took %lld ms, want cut at the renewed 900", (long long)took);
    tlr_aws_query_free(q);
    close(fd);
}

static void test_error_classes(void **state)
{
    static const struct {
        const char *code;
        int http, want;
    } t[] = {
        { "InsufficientInstanceCapacity", 500, TLR_E_CAPACITY },
        { "VcpuLimitExceeded", 400, TLR_E_CAPACITY },
        { "AuthFailure", 401, TLR_E_AUTH },
        { "InvalidClientTokenId", 403, TLR_E_AUTH },
        { "SignatureDoesNotMatch", 403, TLR_E_AUTH },
        { "UnauthorizedOperation", 403, TLR_E_AUTH },
        { "RequestLimitExceeded", 503, TLR_E_THROTTLED },
        { "Throttling", 400, TLR_E_THROTTLED },
        { "InvalidInstanceID.NotFound", 400, TLR_E_NOTFOUND },
        { "InvalidLaunchTemplateName.NotFoundException", 400, TLR_E_NOTFOUND },
        { "NoSuchEntity", 404, TLR_E_NOTFOUND },
        { "EntityAlreadyExists", 409, TLR_E_EXISTS },
        { "InvalidParameterValue", 400, TLR_E_INVAL },
        { "InvalidAMIID.Malformed", 400, TLR_E_INVAL },
        { "SomethingNew", 400, TLR_E_REMOTE },
        { "", 503, TLR_E_UNAVAILABLE },
        { "", 429, TLR_E_THROTTLED },
        { "", 403, TLR_E_AUTH },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int got = tlr_aws_error_class(t[i].code, t[i].http);

        if (got != t[i].want) {
            printf("FAIL class(%s, %d): got %s, want %s\n", t[i].code, t[i].http,
                   tlr_errname(got), tlr_errname(t[i].want));
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_classes),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_request_shape),
        cmocka_unit_test(test_ceiling_and_refused),
        cmocka_unit_test(test_fence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
