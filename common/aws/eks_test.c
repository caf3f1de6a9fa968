/* eks_test.c - DescribeCluster on a scripted server: the signed GET it
 * sends, the fields it reads from an answer of EKS's shape, the errors it
 * maps and what it retries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aws_testsrv.h"
#include "tlr_eks.h"
#include "tlr_err.h"

/* The shape EKS answers with (trimmed from the API reference's example). */
static const char ANSWER[] =
    "{\"cluster\":{\"name\":\"prod\",\"arn\":\"arn:aws:eks:us-west-2:012345678910:cluster/prod\","
    "\"createdAt\":1.7E9,\"version\":\"1.31\","
    "\"endpoint\":\"https://A95FBC180B680B58A6468EF929D6F0F1.gr7.us-west-2.eks.amazonaws.com\","
    "\"roleArn\":\"arn:aws:iam::012345678910:role/eks-service-role\","
    "\"resourcesVpcConfig\":{\"subnetIds\":[\"subnet-1\"],\"vpcId\":\"vpc-1\"},"
    "\"kubernetesNetworkConfig\":{\"serviceIpv4Cidr\":\"10.100.0.0/16\",\"ipFamily\":\"ipv4\"},"
    "\"status\":\"ACTIVE\",\"certificateAuthority\":{\"data\":\"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\"},"
    "\"platformVersion\":\"eks.5\",\"tags\":{}}}";

typedef struct env {
    testsrv s;
    tlr_aws_creds *cr;
    tlr_eks *e;
} env;

static void env_start(env *v, const testsrv_resp *r, int n, const char *token)
{
    char url[64];
    testsrv_start(&v->s, r, n);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", v->s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKIDEXAMPLE", "SECRET", token, &v->cr), TLR_OK);
    tlr_eks_opts o = { .region = "us-west-2", .endpoint = url, .creds = v->cr,
                       .backoff_base_ms = 1, .backoff_cap_ms = 2, .max_attempts = 3 };
    assert_int_equal(tlr_eks_create(&o, &v->e), TLR_OK);
}

static void env_stop(env *v)
{
    testsrv_stop(&v->s);
    testsrv_free(&v->s);
    tlr_eks_free(v->e);
    tlr_aws_creds_free(v->cr);
}

static void test_describe(void **state)
{
    (void)state;
    env v;
    testsrv_resp r[] = { { 200, ANSWER } };
    env_start(&v, r, 1, "TOKEN");
    tlr_eks_cluster c = { 0 };
    tlr_aws_error err = { 0 };
    assert_int_equal(tlr_eks_describe_cluster(v.e, "prod", &c, &err), TLR_OK);
    assert_string_equal(c.name, "prod");
    assert_string_equal(c.endpoint,
                        "https://A95FBC180B680B58A6468EF929D6F0F1.gr7.us-west-2.eks.amazonaws.com");
    assert_string_equal(c.ca_b64, "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==");
    assert_string_equal(c.service_cidr_v4, "10.100.0.0/16");
    assert_string_equal(c.service_cidr_v6, "");
    assert_string_equal(c.status, "ACTIVE");
    assert_string_equal(c.version, "1.31");
    const char *req = v.s.req[0];
    if (strncmp(req, "GET /clusters/prod HTTP/1.1\r\n", 29) != 0)
        fail_msg("request line: got [%.60s]", req);
    if (!strstr(req, "Credential=AKIDEXAMPLE/") || !strstr(req, "/us-west-2/eks/aws4_request"))
        fail_msg("not signed for eks in us-west-2: [%s]", req);
    assert_non_null(strstr(req, "x-amz-security-token: TOKEN"));
    assert_non_null(strstr(req, "SignedHeaders=host;x-amz-date;x-amz-security-token"));
    tlr_eks_cluster_clear(&c);
    env_stop(&v);
}

static void test_errors(void **state)
{
    (void)state;
    struct {
        const char *name;
        testsrv_resp r[3];
        int n;
        int want;
        const char *code;
        int served;
    } cases[] = {
        { "no such cluster",
          { { 404, "{\"message\":\"No cluster found for name: nope.\","
                   "\"__type\":\"ResourceNotFoundException\"}" } }, 1,
          TLR_E_NOTFOUND, "ResourceNotFoundException", 1 },
        { "denied",
          { { 403, "{\"message\":\"User is not authorized\",\"__type\":\"AccessDeniedException\"}" } },
          1, TLR_E_AUTH, "AccessDeniedException", 1 },
        { "throttled then fine",
          { { 429, "{\"__type\":\"ThrottlingException\",\"message\":\"slow down\"}" },
            { 200, ANSWER } }, 2, TLR_OK, "", 2 },
        { "5xx every time", { { 503, "oops" }, { 503, "oops" }, { 503, "oops" } }, 3,
          TLR_E_UNAVAILABLE, "", 3 },
        { "not JSON", { { 200, "<html>" } }, 1, TLR_E_PARSE, "", 1 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        env v;
        env_start(&v, cases[i].r, cases[i].n, NULL);
        tlr_eks_cluster c = { 0 };
        tlr_aws_error err = { 0 };
        int rc = tlr_eks_describe_cluster(v.e, "nope", &c, &err);
        if (rc != cases[i].want || strcmp(err.code, cases[i].code) != 0 ||
            v.s.served != cases[i].served)
            fail_msg("%s: got rc %d code [%s] served %d, want %d [%s] %d", cases[i].name, rc,
                     err.code, v.s.served, cases[i].want, cases[i].code, cases[i].served);
        tlr_eks_cluster_clear(&c);
        env_stop(&v);
    }
}

static void test_endpoint(void **state)
{
    (void)state;
    tlr_aws_creds *cr;
    assert_int_equal(tlr_aws_creds_create_static("A", "S", NULL, &cr), TLR_OK);
    unsetenv("AWS_ENDPOINT_URL_EKS");
    unsetenv("AWS_ENDPOINT_URL");
    tlr_eks *e;
    tlr_eks_opts o = { .region = "eu-west-1", .creds = cr };
    assert_int_equal(tlr_eks_create(&o, &e), TLR_OK);
    assert_string_equal(tlr_eks_endpoint(e), "https://eks.eu-west-1.amazonaws.com");
    tlr_eks_free(e);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000/", 1);
    assert_int_equal(tlr_eks_create(&o, &e), TLR_OK);
    assert_string_equal(tlr_eks_endpoint(e), "http://127.0.0.1:5000");
    tlr_eks_free(e);
    unsetenv("AWS_ENDPOINT_URL");
    o.endpoint = "ftp://x";
    assert_int_equal(tlr_eks_create(&o, &e), TLR_E_INVAL);
    o.endpoint = NULL;
    o.creds = NULL;
    assert_int_equal(tlr_eks_create(&o, &e), TLR_E_INVAL);
    tlr_aws_creds_free(cr);
    tlr_eks_cluster c;
    assert_int_equal(tlr_eks_cluster_parse("{\"x\":1}", 7, &c), TLR_E_PARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_endpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
