/* sqs_test.c - the SQS calls against a scripted server: the form bodies
 * sent (signed, QueueUrl named), the messages decoded, empty receives,
 * queue URLs, and the errors mapped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "aws_testsrv.h"
#include "tlr_awscreds.h"
#include "tlr_err.h"
#include "tlr_sqs.h"

static const char two[] =
    "<ReceiveMessageResponse><ReceiveMessageResult>"
    "<Message><MessageId>m-1</MessageId><ReceiptHandle>rh+1/a</ReceiptHandle>"
    "<MD5OfBody>abc</MD5OfBody><Body>{&quot;detail-type&quot;:&quot;EC2 Spot Instance "
    "Interruption Warning&quot;}</Body></Message>"
    "<Message><MessageId>m-2</MessageId><ReceiptHandle>rh-2</ReceiptHandle><Body>x</Body></Message>"
    "</ReceiveMessageResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>"
    "</ReceiveMessageResponse>";
static const char none[] =
    "<ReceiveMessageResponse><ReceiveMessageResult/></ReceiveMessageResponse>";
static const char url_ok[] =
    "<GetQueueUrlResponse><GetQueueUrlResult><QueueUrl>http://q/123/interrupt</QueueUrl>"
    "</GetQueueUrlResult></GetQueueUrlResponse>";
static const char no_queue[] =
    "<ErrorResponse><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code>"
    "<Message>The specified queue does not exist.</Message></Error><RequestId>r</RequestId>"
    "</ErrorResponse>";
static const char deleted[] = "<DeleteMessageResponse><ResponseMetadata/></DeleteMessageResponse>";
static const char stale[] =
    "<ErrorResponse><Error><Code>ReceiptHandleIsInvalid</Code><Message>gone</Message></Error>"
    "</ErrorResponse>";

typedef struct fx {
    testsrv s;
    tlr_aws_creds *cr;
    tlr_sqs *q;
} fx;

static void start(fx *x, const testsrv_resp *r, int n)
{
    char url[64];
    testsrv_start(&x->s, r, n);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", x->s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKID", "SECRET", NULL, &x->cr), TLR_OK);
    assert_int_equal(tlr_sqs_create(&(tlr_aws_query_opts){ .endpoint = url, .creds = x->cr,
                                                          .region = "us-east-1", .max_attempts = 1 },
                                    &x->q),
                     TLR_OK);
}

static void stop(fx *x)
{
    tlr_sqs_free(x->q);
    tlr_aws_creds_free(x->cr);
    testsrv_free(&x->s);
}

static void test_receive_then_delete(void **state)
{
    (void)state;
    fx x;
    const testsrv_resp r[] = { { 200, two }, { 200, none }, { 200, deleted }, { 400, stale } };
    start(&x, r, 4);
    tlr_sqs_messages m = { 0 };
    tlr_aws_error err = { 0 };
    assert_int_equal(tlr_sqs_receive(x.q, "http://q/123/interrupt", 10, 0, 30, &m, &err), TLR_OK);
    assert_int_equal(m.n, 2);
    assert_string_equal(m.v[0].id, "m-1");
    assert_string_equal(m.v[0].receipt, "rh+1/a");
    assert_string_equal(m.v[0].body, "{\"detail-type\":\"EC2 Spot Instance Interruption Warning\"}");
    assert_string_equal(m.v[1].md5, "");
    tlr_sqs_messages_free(&m);
    assert_int_equal(tlr_sqs_receive(x.q, "http://q/123/interrupt", 1, 0, 0, &m, &err), TLR_OK);
    assert_int_equal(m.n, 0);
    assert_int_equal(tlr_sqs_delete(x.q, "http://q/123/interrupt", "rh+1/a", &err), TLR_OK);
    assert_int_equal(tlr_sqs_delete(x.q, "http://q/123/interrupt", "rh-old", &err), TLR_OK);
    testsrv_stop(&x.s);
    /* signed form bodies naming the queue */
    assert_non_null(strstr(x.s.req[0], "Authorization: AWS4-HMAC-SHA256 Credential=AKID/"));
    assert_non_null(strstr(x.s.req[0], "/us-east-1/sqs/aws4_request"));
    assert_non_null(strstr(x.s.req[0], "Action=ReceiveMessage&Version=2012-11-05&QueueUrl=http%3A%2F%2Fq"
                                       "%2F123%2Finterrupt&MaxNumberOfMessages=10&WaitTimeSeconds=0"
                                       "&VisibilityTimeout=30"));
    assert_null(strstr(x.s.req[1], "VisibilityTimeout"));
    assert_non_null(strstr(x.s.req[2], "Action=DeleteMessage&Version=2012-11-05&QueueUrl="));
    assert_non_null(strstr(x.s.req[2], "&ReceiptHandle=rh%2B1%2Fa"));
    stop(&x);
}

static void test_queue_url_and_errors(void **state)
{
    (void)state;
    fx x;
    const testsrv_resp r[] = { { 200, url_ok }, { 400, no_queue } };
    start(&x, r, 2);
    char *url = NULL;
    tlr_aws_error err = { 0 };
    assert_int_equal(tlr_sqs_queue_url(x.q, "interrupt", &url, &err), TLR_OK);
    assert_string_equal(url, "http://q/123/interrupt");
    free(url);
    assert_int_equal(tlr_sqs_queue_url(x.q, "nope", &url, &err), TLR_E_NOTFOUND);
    assert_string_equal(err.code, "AWS.SimpleQueueService.NonExistentQueue");
    testsrv_stop(&x.s);
    assert_non_null(strstr(x.s.req[0], "Action=GetQueueUrl&Version=2012-11-05&QueueName=interrupt"));
    tlr_sqs_messages m = { 0 };
    assert_int_equal(tlr_sqs_receive(x.q, "u", 11, 0, 0, &m, &err), TLR_E_INVAL);
    assert_int_equal(tlr_sqs_receive(x.q, "u", 1, 21, 0, &m, &err), TLR_E_INVAL);
    stop(&x);
}

static void test_parse_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "<SendMessageResponse/>",
        "<ReceiveMessageResponse><ReceiveMessageResult><Message><MessageId>m</MessageId>"
        "<Body>b</Body></Message></ReceiveMessageResult></ReceiveMessageResponse>",
    };
    for (size_t i = 0; i < 2; i++) {
        tlr_xml_doc *doc = NULL;
        assert_int_equal(tlr_xml_parse(bad[i], strlen(bad[i]), NULL, &doc, NULL, 0), TLR_OK);
        tlr_sqs_messages m;
        assert_int_equal(tlr_sqs_parse_receive(tlr_xml_root(doc), &m), TLR_E_PARSE);
        tlr_xml_free(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_receive_then_delete),
        cmocka_unit_test(test_queue_url_and_errors),
        cmocka_unit_test(test_parse_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
