/* ec2_test.c - EC2 decoders on recorded-shape XML fixtures, CreateFleet
 * parameters, DescribeInstances paging and DescribeInstanceAttribute
 * (userData) against a scripted server.
 */
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
#include "tlr_ec2.h"
#include "tlr_err.h"

static tlr_xml_doc *parse(const char *text)
{
    tlr_xml_doc *d = NULL;
    char err[160];

    if (tlr_xml_parse(text, strlen(text), NULL, &d, err, sizeof(err)) != TLR_OK)
        printf("FAIL: fixture does not parse: %s\n", err);
    return d;
}

static void test_describe_two_reservations(void **state)
{
    static const struct {
        const char *id, *type, *state, *zone, *dns, *ip;
        bool spot;
        size_t ntags;
        int64_t launch_ms;
    } want[] = {
        { "i-0a1b2c3d4e5f60001", "m5.large", "running", "us-east-1a", "ip-10-0-1-7.ec2.internal",
          "10.0.1.7", false, 3, 1796223845000 },
        { "i-0a1b2c3d4e5f60002", "m5.xlarge", "pending", "us-east-1a", "ip-10-0-1-8.ec2.internal",
          "10.0.1.8", true, 0, 1796223846000 },
        { "i-0a1b2c3d4e5f60003", "c6g.2xlarge", "terminated", "us-east-1c", "", "", false, 1,
          1796220000000 },
    };
    char *text = aws_fixture("describe_instances_2res.xml");
    tlr_xml_doc *d = text ? parse(text) : NULL;
    tlr_ec2_instances l = { 0 };
    char *next = NULL;
    int failures = 0;

    (void)state;
    assert_non_null(d);
    assert_int_equal(tlr_ec2_parse_instances(tlr_xml_root(d), &l, &next), TLR_OK);
    assert_int_equal(l.n, 3);
    for (size_t i = 0; i < 3; i++) {
        const tlr_ec2_instance *g = &l.v[i];

        if (strcmp(g->id, want[i].id) || strcmp(g->type, want[i].type) ||
            strcmp(g->state, want[i].state) || strcmp(g->zone, want[i].zone) ||
            strcmp(g->private_dns, want[i].dns) || strcmp(g->private_ip, want[i].ip) ||
            g->spot != want[i].spot || g->ntags != want[i].ntags ||
            g->launch_ms != want[i].launch_ms) {
            printf("FAIL instance %zu: got {%s %s %s %s %s %s spot=%d tags=%zu launch=%lld}, "
                   "want {%s %s %s %s %s %s spot=%d tags=%zu launch=%lld}\n", i, g->id, g->type,
                   g->state, g->zone, g->private_dns, g->private_ip, g->spot, g->ntags,
                   (long long)g->launch_ms, want[i].id, want[i].type, want[i].state,
                   want[i].zone, want[i].dns, want[i].ip, want[i].spot, want[i].ntags,
                   (long long)want[i].launch_ms);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
    assert_string_equal(tlr_ec2_instance_tag(&l.v[0], "kubernetes.io/cluster/demo"), "owned");
    assert_string_equal(tlr_ec2_instance_tag(&l.v[0], "Name"), "a & b");
    assert_string_equal(tlr_ec2_instance_tag(&l.v[2], "karpenter.sh/nodeclaim"), "default-x7k2p");
    assert_null(tlr_ec2_instance_tag(&l.v[1], "Name"));
    assert_string_equal(l.v[0].image_id, "ami-0abcdef1234567890");
    assert_string_equal(next, "eyJ2IjoiMiJ9");
    free(next);
    tlr_ec2_instances_free(&l);
    tlr_xml_free(d);
    free(text);
}

static void test_create_fleet_partial(void **state)
{
    char *text = aws_fixture("create_fleet_partial.xml");
    tlr_xml_doc *d = text ? parse(text) : NULL;
    tlr_ec2_fleet_result r = { 0 };

    (void)state;
    assert_non_null(d);
    assert_int_equal(tlr_ec2_parse_create_fleet(tlr_xml_root(d), &r), TLR_OK);
    assert_string_equal(r.fleet_id, "fleet-12345678-90ab-cdef-1234-567890abcdef");
    assert_int_equal(r.ninstances, 2);
    assert_string_equal(r.instances[0].id, "i-0f00000000000000a");
    assert_string_equal(r.instances[1].id, "i-0f00000000000000b");
    assert_string_equal(r.instances[1].instance_type, "m5a.large");
    assert_string_equal(r.instances[1].zone, "us-east-1b");
    assert_string_equal(r.instances[1].subnet_id, "subnet-0bbb");
    assert_true(r.instances[0].spot);
    assert_int_equal(r.nerrors, 2);
    assert_string_equal(r.errors[0].code, "InsufficientInstanceCapacity");
    assert_int_equal(r.errors[0].tlr_code, TLR_E_CAPACITY);
    assert_string_equal(r.errors[0].instance_type, "m5.large");
    assert_string_equal(r.errors[0].zone, "us-east-1a");
    assert_true(r.errors[0].spot);
    assert_int_equal(r.errors[1].tlr_code, TLR_E_AUTH);
    assert_string_equal(r.errors[1].instance_type, "");   /* no override named */
    tlr_ec2_fleet_result_free(&r);
    tlr_xml_free(d);
    free(text);
}

static void test_wrong_documents(void **state)
{
    static const struct {
        const char *what, *xml;
        int rc;
    } t[] = {
        { "other response", "<TerminateInstancesResponse/>", TLR_E_PARSE },
        { "instance without id",
          "<DescribeInstancesResponse><reservationSet><item><instancesSet><item>"
          "<instanceType>m5.large</instanceType></item></instancesSet></item></reservationSet>"
          "</DescribeInstancesResponse>", TLR_E_PARSE },
        { "empty answer", "<DescribeInstancesResponse><reservationSet/></DescribeInstancesResponse>",
          TLR_OK },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_xml_doc *d = parse(t[i].xml);
        tlr_ec2_instances l = { 0 };
        int rc = tlr_ec2_parse_instances(tlr_xml_root(d), &l, NULL);

        if (rc != t[i].rc || l.n != 0) {
            printf("FAIL %s: got %s (%zu instances), want %s\n", t[i].what, tlr_errname(rc), l.n,
                   tlr_errname(t[i].rc));
            failures++;
        }
        tlr_ec2_instances_free(&l);
        tlr_xml_free(d);
    }
    assert_int_equal(failures, 0);
}

/* The parameters CreateFleet sends: what the EC2 API reference names. */
static void test_fleet_params(void **state)
{
    const tlr_ec2_fleet_override ov[] = {
        { "m5.large", "subnet-a", "us-east-1a", 1 },
        { "m5a.large", "subnet-b", "us-east-1b", -1 },
    };
    const tlr_ec2_tag tags[] = { { "karpenter.sh/nodeclaim", "default-abc" } };
    tlr_ec2_fleet_req r = {
        .launch_template_name = "tailor-default", .overrides = ov, .noverrides = 2,
        .target_capacity = 1, .spot = true, .tags = tags, .ntags = 1,
        .client_token = "default-abc",
    };
    tlr_aws_params *p;
    tlr_ec2_fleet_req bad = r;

    (void)state;
    tlr_aws_params_create(&p);
    assert_int_equal(tlr_ec2_fleet_params(&r, p), TLR_OK);
    /* Type, total, default type, spot target, spot strategy, LT name,
     * LT version, 3 + 3 override fields minus one priority, 3 tag specs of
     * 3 params, client token. */
    assert_int_equal(tlr_aws_params_count(p), 7 + 7 + 9 + 1);
    tlr_aws_params_free(p);

    bad.noverrides = 0;
    tlr_aws_params_create(&p);
    assert_int_equal(tlr_ec2_fleet_params(&bad, p), TLR_E_INVAL);
    tlr_aws_params_free(p);
}

static const char page1[] =
    "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
    "<reservationSet><item><instancesSet><item><instanceId>i-1</instanceId>"
    "<instanceState><name>running</name></instanceState></item></instancesSet></item>"
    "</reservationSet><nextToken>tok/2+</nextToken></DescribeInstancesResponse>";
static const char page2[] =
    "<DescribeInstancesResponse><reservationSet><item><instancesSet>"
    "<item><instanceId>i-2</instanceId></item><item><instanceId>i-3</instanceId></item>"
    "</instancesSet></item></reservationSet></DescribeInstancesResponse>";

static void test_describe_pages(void **state)
{
    const testsrv_resp resp[] = { { 200, page1 }, { 200, page2 } };
    const char *const vals[] = { "running", "pending" };
    const tlr_ec2_filter f[] = { { "instance-state-name", vals, 2 },
                                 { "tag-key", (const char *const[]){ "karpenter.sh/nodepool" }, 1 } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    tlr_ec2 *e = NULL;
    tlr_ec2_instances l = { 0 };
    tlr_aws_error err = { 0 };
    char url[64];

    (void)state;
    testsrv_start(&s, resp, 2);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKID", "SECRET", NULL, &cr), TLR_OK);
    assert_int_equal(tlr_ec2_create(&(tlr_aws_query_opts){ .endpoint = url, .creds = cr,
                                                          .region = "us-east-1" }, &e), TLR_OK);
    assert_int_equal(tlr_ec2_describe_instances(e, f, 2, NULL, 0, 0, &l, &err), TLR_OK);
    testsrv_stop(&s);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[2].id, "i-3");
    /* Filters numbered from 1, the token sent back encoded. */
    assert_non_null(strstr(s.req[0], "Action=DescribeInstances&Version=2016-11-15"));
    assert_non_null(strstr(s.req[0], "Filter.1.Name=instance-state-name&Filter.1.Value.1=running"
                                     "&Filter.1.Value.2=pending&Filter.2.Name=tag-key"));
    assert_null(strstr(s.req[0], "NextToken"));
    assert_non_null(strstr(s.req[1], "NextToken=tok%2F2%2B"));
    tlr_ec2_instances_free(&l);
    tlr_ec2_free(e);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
}

/* The shape EC2 answers DescribeInstanceAttribute Attribute=userData with
 * (value: "#!/bin/bash\necho hi\n" in base64, wrapped as some SDKs do). */
static const char user_data_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<DescribeInstanceAttributeResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">\n"
    "    <requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId>\n"
    "    <instanceId>i-1234567890abcdef0</instanceId>\n"
    "    <userData>\n"
    "        <value>IyEvYmluL2Jhc2gK\nZWNobyBoaQo=</value>\n"
    "    </userData>\n"
    "</DescribeInstanceAttributeResponse>";

static void test_user_data_decode(void **state)
{
    static const struct {
        const char *what, *xml, *want;   /* want NULL: TLR_E_PARSE */
    } t[] = {
        { "recorded", user_data_xml, "#!/bin/bash\necho hi\n" },
        { "none (moto answers an empty element)",
          "<DescribeInstanceAttributeResponse><instanceId>i-1</instanceId><userData/>"
          "</DescribeInstanceAttributeResponse>", "" },
        { "no userData at all",
          "<DescribeInstanceAttributeResponse><instanceId>i-1</instanceId>"
          "</DescribeInstanceAttributeResponse>", "" },
        { "one padding byte", "<DescribeInstanceAttributeResponse><userData><value>YWI="
          "</value></userData></DescribeInstanceAttributeResponse>", "ab" },
        { "not base64", "<DescribeInstanceAttributeResponse><userData><value>a*b"
          "</value></userData></DescribeInstanceAttributeResponse>", NULL },
        { "data after padding", "<DescribeInstanceAttributeResponse><userData><value>YQ==YQ=="
          "</value></userData></DescribeInstanceAttributeResponse>", NULL },
        { "other response", "<DescribeInstancesResponse/>", NULL },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_xml_doc *d = parse(t[i].xml);
        char *got = NULL;
        int rc = tlr_ec2_parse_user_data(tlr_xml_root(d), &got);

        if (t[i].want == NULL ? rc != TLR_E_PARSE
                              : rc != TLR_OK || strcmp(got, t[i].want) != 0) {
            printf("FAIL %s: got %s \"%s\", want \"%s\"\n", t[i].what, tlr_errname(rc),
                   got ? got : "", t[i].want ? t[i].want : "(TLR_E_PARSE)");
            failures++;
        }
        free(got);
        tlr_xml_free(d);
    }
    assert_int_equal(failures, 0);
}

/* What goes on the wire, and EC2's NotFound for an unknown instance. */
static void test_user_data_call(void **state)
{
    static const char notfound[] =
        "<Response><Errors><Error><Code>InvalidInstanceID.NotFound</Code>"
        "<Message>The instance ID 'i-9' does not exist</Message></Error></Errors>"
        "<RequestID>r</RequestID></Response>";
    const testsrv_resp resp[] = { { 200, user_data_xml }, { 400, notfound } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    tlr_ec2 *e = NULL;
    tlr_aws_error err = { 0 };
    char url[64], *ud = NULL;

    (void)state;
    testsrv_start(&s, resp, 2);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKID", "SECRET", NULL, &cr), TLR_OK);
    assert_int_equal(tlr_ec2_create(&(tlr_aws_query_opts){ .endpoint = url, .creds = cr,
                                                          .region = "us-east-1",
                                                          .max_attempts = 1 }, &e), TLR_OK);
    assert_int_equal(tlr_ec2_instance_user_data(e, "i-1234567890abcdef0", &ud, &err), TLR_OK);
    assert_string_equal(ud, "#!/bin/bash\necho hi\n");
    free(ud);
    ud = NULL;
    assert_int_equal(tlr_ec2_instance_user_data(e, "i-9", &ud, &err), TLR_E_NOTFOUND);
    assert_null(ud);
    testsrv_stop(&s);
    assert_string_equal(err.code, "InvalidInstanceID.NotFound");
    assert_true(strncmp(s.req[0], "POST ", 5) == 0);
    assert_non_null(strstr(s.req[0], "Action=DescribeInstanceAttribute&Version=2016-11-15"));
    assert_non_null(strstr(s.req[0], "InstanceId=i-1234567890abcdef0"));
    assert_non_null(strstr(s.req[0], "Attribute=userData"));
    assert_int_equal(tlr_ec2_instance_user_data(e, "", &ud, &err), TLR_E_INVAL);
    tlr_ec2_free(e);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe_two_reservations),
        cmocka_unit_test(test_create_fleet_partial),
        cmocka_unit_test(test_wrong_documents),
        cmocka_unit_test(test_fleet_params),
        cmocka_unit_test(test_describe_pages),
        cmocka_unit_test(test_user_data_decode),
        cmocka_unit_test(test_user_data_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
