/* awsjson_test.c - the JSON 1.1 and REST-JSON client and the Pricing API
 * on a scripted server: what is sent and signed, how answers and errors
 * are read, what is retried, and GetProducts paging into sorted prices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aws_fixture.h"
#include "aws_testsrv.h"
#include "tlr_alloc.h"
#include "tlr_awsjson.h"
#include "tlr_err.h"
#include "tlr_pricing.h"

typedef struct env {
    testsrv s;
    tlr_aws_creds *cr;
    tlr_aws_json *j;
} env;

static void env_start(env *e, const testsrv_resp *r, int n, const char *service,
                      const char *target, const char *token)
{
    char url[64];
    testsrv_start(&e->s, r, n);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", e->s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKIDEXAMPLE", "SECRET", token, &e->cr), TLR_OK);
    tlr_aws_json_opts o = { .service = service, .target_prefix = target, .endpoint = url,
                            .creds = e->cr, .region = "us-east-1", .backoff_base_ms = 1,
                            .backoff_cap_ms = 2, .max_attempts = 3 };
    assert_int_equal(tlr_aws_json_create(&o, &e->j), TLR_OK);
}

static void env_stop(env *e)
{
    testsrv_stop(&e->s);
    tlr_aws_json_free(e->j);
    tlr_aws_creds_free(e->cr);
}

static void test_call_signed(void **state)
{
    (void)state;
    const testsrv_resp r[] = { { 200, "{\"Parameter\":{\"Value\":\"ami-1\"}}" } };
    env e;
    env_start(&e, r, 1, "ssm", "AmazonSSM", "TOKEN123");
    json_object *body = json_object_new_object(), *out = NULL;
    json_object_object_add(body, "Name", json_object_new_string("/a/b"));
    assert_int_equal(tlr_aws_json_call(e.j, "GetParameter", body, &out, NULL), TLR_OK);
    env_stop(&e);
    json_object *p = NULL, *v = NULL;
    assert_true(json_object_object_get_ex(out, "Parameter", &p) &&
                json_object_object_get_ex(p, "Value", &v));
    assert_string_equal(json_object_get_string(v), "ami-1");
    const char *req = e.s.req[0];
    assert_non_null(strstr(req, "POST / HTTP/1.1"));
    assert_non_null(strcasestr(req, "x-amz-target: AmazonSSM.GetParameter"));
    assert_non_null(strcasestr(req, "content-type: application/x-amz-json-1.1"));
    assert_non_null(strcasestr(req, "x-amz-security-token: TOKEN123"));
    assert_non_null(strstr(req, "Credential=AKIDEXAMPLE/"));
    assert_non_null(strstr(req, "/us-east-1/ssm/aws4_request"));
    assert_non_null(strstr(req, "SignedHeaders=content-type;host;x-amz-date;"
                                "x-amz-security-token;x-amz-target"));
    assert_non_null(strstr(req, "{\"Name\":\"\\/a\\/b\"}") ? strstr(req, "{\"Name\":\"\\/a\\/b\"}")
                                                          : strstr(req, "{\"Name\":\"/a/b\"}"));
    assert_null(strstr(req, "SECRET"));
    json_object_put(body);
    json_object_put(out);
    testsrv_free(&e.s);
}

/* Errors: how each answer is classified, and how many attempts it took. */
static void test_errors(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        testsrv_resp r[3];
        int n, rc, attempts;
        const char *code;
    } cases[] = {
        { "not found", { { 400, "{\"__type\":\"com.amazonaws.ssm#ParameterNotFound\","
                                "\"message\":\"no such parameter\"}" } }, 1, TLR_E_NOTFOUND, 1,
          "ParameterNotFound" },
        { "bad signature", { { 403, "{\"__type\":\"InvalidSignatureException\","
                                    "\"Message\":\"bad\"}" } }, 1, TLR_E_AUTH, 1,
          "InvalidSignatureException" },
        { "throttled then fine", { { 400, "{\"__type\":\"ThrottlingException\"}" },
                                   { 200, "{}" } }, 2, TLR_OK, 2, "" },
        { "5xx three times", { { 500, "{}" }, { 503, "oops" }, { 500, "{}" } }, 3,
          TLR_E_UNAVAILABLE, 3, "" },
        /* moto for a service it does not serve: an HTML 404, final. */
        { "no such service", { { 404, "<html><h1>Not Found</h1></html>" } }, 1,
          TLR_E_UNAVAILABLE, 1, "" },
        { "not JSON on 200", { { 200, "<xml/>" } }, 1, TLR_E_PARSE, 1, "" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        env e;
        env_start(&e, cases[i].r, cases[i].n, "pricing", "AWSPriceListService", NULL);
        json_object *out = NULL;
        tlr_aws_error err = { 0 };
        int rc = tlr_aws_json_call(e.j, "GetProducts", NULL, &out, &err);
        env_stop(&e);
        printf("%s: got rc %s after %d attempts code '%s'; want %s after %d '%s'\n",
               cases[i].name, tlr_errname(rc), e.s.served, err.code, tlr_errname(cases[i].rc),
               cases[i].attempts, cases[i].code);
        assert_int_equal(rc, cases[i].rc);
        assert_int_equal(e.s.served, cases[i].attempts);
        if (rc != TLR_OK)
            assert_string_equal(err.code, cases[i].code);
        json_object_put(out);
        testsrv_free(&e.s);
    }
}

static void test_error_header(void **state)
{
    (void)state;
    tlr_aws_error err;
    tlr_aws_json_error_parse(NULL, 0, "ExpiredTokenException:http://internal.amazon.com/",
                             400, &err);
    assert_string_equal(err.code, "ExpiredTokenException");
    tlr_aws_json_error_parse("{\"__type\":\"X\"}", 14, "", 400, &err);
    assert_string_equal(err.code, "X");
}

static void test_pricing_pages(void **state)
{
    (void)state;
    char *p1 = aws_fixture("get_products_1.json"), *p2 = aws_fixture("get_products_2.json");
    const testsrv_resp r[] = { { 200, p1 }, { 200, p2 } };
    env e;
    env_start(&e, r, 2, "pricing", "AWSPriceListService", NULL);
    tlr_prices got = { 0 };
    assert_int_equal(tlr_pricing_ec2_on_demand(e.j, "eu-west-1", &got, NULL), TLR_OK);
    env_stop(&e);
    static const struct { const char *type; double price; } want[] = {
        { "c5.large", 0.085 }, { "m5.large", 0.096 }, { "r5.large", 0.126 },
    };
    assert_int_equal(got.n, 3);   /* the 0.00 SKU and the entry without terms are dropped */
    for (size_t i = 0; i < 3; i++) {
        printf("%s: got %.4f want %.4f\n", got.v[i].type, got.v[i].usd_per_hour, want[i].price);
        assert_string_equal(got.v[i].type, want[i].type);
        assert_true(got.v[i].usd_per_hour > want[i].price - 1e-9 &&
                    got.v[i].usd_per_hour < want[i].price + 1e-9);
    }
    assert_true(tlr_prices_find(&got, "m5.large") > 0.09);
    assert_true(tlr_prices_find(&got, "m5.xlarge") < 0);
    const char *q = strstr(e.s.req[0], "\r\n\r\n");
    assert_non_null(q);
    assert_non_null(strstr(q, "\"Field\":\"regionCode\",\"Value\":\"eu-west-1\""));
    assert_non_null(strstr(q, "\"Field\":\"capacitystatus\",\"Value\":\"Used\""));
    assert_null(strstr(q, "NextToken"));
    assert_non_null(strstr(e.s.req[1], "\"NextToken\":\"page-2\""));
    assert_non_null(strcasestr(e.s.req[0], "x-amz-target: AWSPriceListService.GetProducts"));
    tlr_prices_free(&got);
    free(p1);
    free(p2);
    testsrv_free(&e.s);
}

/* REST-JSON: the method and path (after the endpoint's own path) as sent,
 * signed for the service, no X-Amz-Target; a body is application/json; a
 * bare 404 names a missing resource. */
static void test_rest(void **state)
{
    (void)state;
    const testsrv_resp r[] = { { 200, "{\"cluster\":{\"name\":\"a b\"}}" },
                               { 201, "{}" },
                               { 404, "" } };
    testsrv s;
    tlr_aws_creds *cr;
    tlr_aws_json *j;
    char url[64], origin[64];
    testsrv_start(&s, r, 3);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/base/", s.port);
    snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKIDEXAMPLE", "SECRET", "TOKEN123", &cr),
                     TLR_OK);
    tlr_aws_json_opts o = { .service = "eks", .endpoint = url, .creds = cr,
                            .region = "us-west-2", .backoff_base_ms = 1, .backoff_cap_ms = 2,
                            .max_attempts = 3 };   /* no target_prefix: REST only */
    assert_int_equal(tlr_aws_json_create(&o, &j), TLR_OK);
    assert_string_equal(tlr_aws_json_origin(j), origin);

    json_object *out = NULL, *c = NULL, *v = NULL;
    assert_int_equal(tlr_aws_json_rest(j, "DescribeCluster", "GET", "/clusters/a%20b", NULL,
                                       &out, NULL), TLR_OK);
    assert_true(json_object_object_get_ex(out, "cluster", &c) &&
                json_object_object_get_ex(c, "name", &v));
    assert_string_equal(json_object_get_string(v), "a b");
    json_object_put(out);

    json_object *body = json_object_new_object();
    json_object_object_add(body, "k", json_object_new_string("v"));
    out = NULL;
    assert_int_equal(tlr_aws_json_rest(j, "Tag", "POST", "/tags", body, &out, NULL), TLR_OK);
    json_object_put(out);
    json_object_put(body);

    tlr_aws_error err = { 0 };
    out = NULL;
    assert_int_equal(tlr_aws_json_rest(j, "DescribeCluster", "GET", "/clusters/gone", NULL, &out,
                                       &err), TLR_E_NOTFOUND);
    assert_string_equal(err.code, "ResourceNotFoundException");
    assert_int_equal(err.http_status, 404);
    assert_null(out);
    assert_int_equal(tlr_aws_json_rest(j, "X", "GET", "no-slash", NULL, &out, NULL), TLR_E_INVAL);
    assert_int_equal(tlr_aws_json_call(j, "X", NULL, &out, NULL), TLR_E_INVAL);   /* no target */
    testsrv_stop(&s);
    tlr_aws_json_free(j);
    tlr_aws_creds_free(cr);
    assert_int_equal(s.served, 3);   /* the 404 was final */

    const char *get = s.req[0], *post = s.req[1];
    if (strncmp(get, "GET /base/clusters/a%20b HTTP/1.1\r\n", 35) != 0)
        fail_msg("GET request line: got [%.60s]", get);
    assert_null(strcasestr(get, "x-amz-target"));
    assert_null(strcasestr(get, "content-type"));
    assert_non_null(strcasestr(get, "accept: application/json"));
    assert_non_null(strstr(get, "Credential=AKIDEXAMPLE/"));
    assert_non_null(strstr(get, "/us-west-2/eks/aws4_request"));
    assert_non_null(strstr(get, "SignedHeaders=host;x-amz-date;x-amz-security-token,"));
    assert_non_null(strcasestr(get, "x-amz-security-token: TOKEN123"));
    assert_null(strstr(get, "SECRET"));
    if (strncmp(post, "POST /base/tags HTTP/1.1\r\n", 26) != 0)
        fail_msg("POST request line: got [%.60s]", post);
    assert_null(strcasestr(post, "x-amz-target"));
    assert_non_null(strcasestr(post, "content-type: application/json\r\n"));
    assert_non_null(strstr(post, "SignedHeaders=content-type;host;x-amz-date;"
                                 "x-amz-security-token,"));
    assert_non_null(strstr(post, "\r\n\r\n{\"k\":\"v\"}"));
    testsrv_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_call_signed),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_error_header),
        cmocka_unit_test(test_pricing_pages),
        cmocka_unit_test(test_rest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
