/* autoscaling_test.c - the Auto Scaling decoders on answers recorded from
 * moto (testdata/asg_*.xml), and the calls against a scripted server:
 * what each sends (form body, SigV4 scope "autoscaling"), paging, and how
 * answers and errors come back. */
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
#include "tlr_autoscaling.h"
#include "tlr_err.h"

/* The recorded group: sizes, instances, tags, no next page. */
static void test_parse_group(void **state)
{
    (void)state;
    tlr_xml_doc *d = aws_fixture_xml("asg_describe.xml");
    tlr_asg_groups g = { 0 };
    char *next = (char *)"x";
    assert_int_equal(tlr_asg_parse_groups(tlr_xml_root(d), &g, &next), TLR_OK);
    assert_null(next);
    assert_int_equal(g.n, 1);
    const tlr_asg_group *a = tlr_asg_groups_find(&g, "legacy-a");
    assert_non_null(a);
    assert_null(tlr_asg_groups_find(&g, "legacy-b"));
    assert_int_equal(a->min, 2);
    assert_int_equal(a->max, 5);
    assert_int_equal(a->desired, 3);
    assert_int_equal(a->ninstances, 3);
    static const char *const ids[] = { "i-027e91c14719b835e", "i-f3107430196e80edd",
                                       "i-344756798fe545640" };
    for (size_t i = 0; i < 3; i++) {
        const tlr_asg_instance *in = tlr_asg_group_instance(a, ids[i]);
        assert_non_null(in);
        assert_string_equal(in->zone, "us-east-1a");
        assert_string_equal(in->type, "m5.large");
        assert_string_equal(in->lifecycle, "InService");
        assert_string_equal(in->health, "Healthy");
        assert_false(in->protected_from_scale_in);
    }
    assert_null(tlr_asg_group_instance(a, "i-0000"));
    assert_string_equal(tlr_ec2_tag_get(a->tags, a->ntags, "eks:nodegroup-name"), "legacy-a");
    tlr_asg_groups_free(&g);
    tlr_xml_free(d);
}

/* Pages accumulate; NextToken comes back; other documents are refused. */
static void test_parse_pages_and_wrong_documents(void **state)
{
    (void)state;
    tlr_xml_doc *p1 = aws_fixture_xml("asg_describe_page1.xml"), *p2 = aws_fixture_xml("asg_describe_page2.xml");
    tlr_asg_groups g = { 0 };
    char *next = NULL;
    assert_int_equal(tlr_asg_parse_groups(tlr_xml_root(p1), &g, &next), TLR_OK);
    assert_non_null(next);
    assert_string_equal(next, "legacy-a");
    free(next);
    assert_int_equal(tlr_asg_parse_groups(tlr_xml_root(p2), &g, &next), TLR_OK);
    assert_null(next);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.v[0].name, "legacy-a");
    assert_string_equal(g.v[1].name, "legacy-b");
    assert_int_equal(g.v[1].desired, 1);
    assert_int_equal(g.v[1].ninstances, 1);
    tlr_asg_groups_free(&g);
    tlr_xml_free(p1);
    tlr_xml_free(p2);

    static const struct { const char *what, *xml; } bad[] = {
        { "an update answer", "<UpdateAutoScalingGroupResponse/>" },
        { "no result", "<DescribeAutoScalingGroupsResponse/>" },
        { "a group without sizes",
          "<DescribeAutoScalingGroupsResponse><DescribeAutoScalingGroupsResult><AutoScalingGroups>"
          "<member><AutoScalingGroupName>x</AutoScalingGroupName></member></AutoScalingGroups>"
          "</DescribeAutoScalingGroupsResult></DescribeAutoScalingGroupsResponse>" },
        { "a negative size",
          "<DescribeAutoScalingGroupsResponse><DescribeAutoScalingGroupsResult><AutoScalingGroups>"
          "<member><AutoScalingGroupName>x</AutoScalingGroupName><MinSize>-1</MinSize><MaxSize>1"
          "</MaxSize><DesiredCapacity>1</DesiredCapacity></member></AutoScalingGroups>"
          "</DescribeAutoScalingGroupsResult></DescribeAutoScalingGroupsResponse>" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tlr_xml_doc *d = NULL;
        tlr_asg_groups out = { 0 };
        assert_int_equal(tlr_xml_parse(bad[i].xml, strlen(bad[i].xml), NULL, &d, NULL, 0),
                         TLR_OK);
        int rc = tlr_asg_parse_groups(tlr_xml_root(d), &out, NULL);
        if (rc != TLR_E_PARSE || out.n != 0) {
            printf("FAIL %s: got %s with %zu groups, want PARSE and none\n", bad[i].what,
                   tlr_errname(rc), out.n);
            failures++;
        }
        tlr_asg_groups_free(&out);
        tlr_xml_free(d);
    }
    assert_int_equal(failures, 0);
}

static void test_parse_activity(void **state)
{
    (void)state;
    tlr_xml_doc *d = aws_fixture_xml("asg_terminate.xml");
    tlr_asg_activity a = { 0 };
    assert_int_equal(tlr_asg_parse_activity(tlr_xml_root(d), &a), TLR_OK);
    assert_string_equal(a.id, "de9b4a4b-0848-4d0d-8528-ca3e8c224c75");
    assert_string_equal(a.group, "legacy-a");
    assert_string_equal(a.status, "InProgress");
    assert_string_equal(a.description, "Terminating EC2 instance: i-027e91c14719b835e");
    tlr_asg_activity_free(&a);
    tlr_xml_free(d);
}

/* What each builder sends, and what it refuses. */
static void test_params(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        tlr_asg_sizes s;
        int rc;
        size_t nparams;    /* key/value pairs */
    } t[] = {
        { "all three", { 0, 3, 2 }, TLR_OK, 4 },
        { "min only", { 0, -1, -1 }, TLR_OK, 2 },
        { "nothing to change", { -1, -1, -1 }, TLR_E_INVAL, 0 },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_aws_params *p = NULL;
        tlr_aws_params_create(&p);
        int rc = tlr_asg_update_params("legacy-a", &t[i].s, p);
        if (rc != t[i].rc || (rc == TLR_OK && tlr_aws_params_count(p) != t[i].nparams)) {
            printf("FAIL %s: got %s with %zu params, want %s with %zu\n", t[i].what,
                   tlr_errname(rc), tlr_aws_params_count(p), tlr_errname(t[i].rc), t[i].nparams);
            failures++;
        }
        tlr_aws_params_free(p);
    }
    tlr_aws_params *p = NULL;
    tlr_aws_params_create(&p);
    assert_int_equal(tlr_asg_update_params(NULL, &t[0].s, p), TLR_E_INVAL);
    assert_int_equal(tlr_asg_update_params("", &t[0].s, p), TLR_E_INVAL);
    tlr_aws_params_free(p);
    assert_int_equal(failures, 0);
}

static tlr_asg *client_for(const testsrv *s, tlr_aws_creds **cr)
{
    char url[64];
    tlr_asg *a = NULL;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s->port);
    assert_int_equal(tlr_aws_creds_create_static("AKIDEXAMPLE", "SECRET", NULL, cr), TLR_OK);
    assert_int_equal(tlr_asg_create(&(tlr_aws_query_opts){ .region = "us-east-1", .endpoint = url,
                                                           .creds = *cr, .max_attempts = 2,
                                                           .backoff_base_ms = 1,
                                                           .backoff_cap_ms = 2,
                                                           .timeout_ms = 3000 }, &a),
                     TLR_OK);
    return a;
}

/* Describe follows NextToken and signs for "autoscaling". */
static void test_describe_pages(void **state)
{
    (void)state;
    char *b1 = aws_fixture("asg_describe_page1.xml"), *b2 = aws_fixture("asg_describe_page2.xml");
    testsrv_resp resp[] = { { 200, b1 }, { 200, b2 } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    testsrv_start(&s, resp, 2);
    tlr_asg *a = client_for(&s, &cr);
    tlr_asg_groups g = { 0 };
    tlr_aws_error err = { 0 };
    const char *names[] = { "legacy-a", "legacy-b" };
    assert_int_equal(tlr_asg_describe(a, names, 2, 0, &g, &err), TLR_OK);
    testsrv_stop(&s);
    assert_int_equal(s.served, 2);
    assert_int_equal(g.n, 2);
    assert_non_null(strstr(s.req[0], "/us-east-1/autoscaling/aws4_request"));
    assert_non_null(strstr(s.req[0], "\r\n\r\nAction=DescribeAutoScalingGroups&Version=2011-01-01"
                                     "&AutoScalingGroupNames.member.1=legacy-a"
                                     "&AutoScalingGroupNames.member.2=legacy-b&MaxRecords=100"));
    assert_null(strstr(s.req[0], "NextToken"));
    assert_non_null(strstr(s.req[1], "&MaxRecords=100&NextToken=legacy-a"));
    tlr_asg_groups_free(&g);
    tlr_asg_free(a);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
    free(b1);
    free(b2);
}

/* A page ceiling is never a silently partial answer. */
static void test_describe_page_ceiling(void **state)
{
    (void)state;
    char *b1 = aws_fixture("asg_describe_page1.xml");
    testsrv_resp resp[] = { { 200, b1 } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    testsrv_start(&s, resp, 1);
    tlr_asg *a = client_for(&s, &cr);
    tlr_asg_groups g = { 0 };
    assert_int_equal(tlr_asg_describe(a, NULL, 0, 1, &g, NULL), TLR_E_TOOBIG);
    testsrv_stop(&s);
    assert_int_equal(g.n, 0);
    tlr_asg_free(a);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
    free(b1);
}

/* Update, set-desired, terminate: the body each sends, and the result. */
static void test_mutations(void **state)
{
    (void)state;
    char *upd = aws_fixture("asg_update.xml"), *set = aws_fixture("asg_set_desired.xml");
    char *term = aws_fixture("asg_terminate.xml"), *verr = aws_fixture("asg_error.xml");
    /* AWS's answer for an instance in no group (moto answers 500 there). */
    static const char not_found[] =
        "<ErrorResponse xmlns=\"http://autoscaling.amazonaws.com/doc/2011-01-01/\"><Error>"
        "<Type>Sender</Type><Code>ValidationError</Code><Message>Instance Id not found - No "
        "managed instance found for instance ID: i-0000dead</Message></Error>"
        "<RequestId>r</RequestId></ErrorResponse>";
    testsrv_resp resp[] = { { 200, upd }, { 200, set }, { 200, term }, { 400, not_found },
                            { 400, verr }, { 200, set } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    testsrv_start(&s, resp, 6);
    tlr_asg *a = client_for(&s, &cr);
    tlr_aws_error err = { 0 };
    tlr_asg_activity act = { 0 };

    assert_int_equal(tlr_asg_update(a, "legacy-a", &(tlr_asg_sizes){ 0, -1, 3 }, &err), TLR_OK);
    assert_int_equal(tlr_asg_set_desired(a, "legacy-a", 1, false, &err), TLR_OK);
    assert_int_equal(tlr_asg_terminate_instance(a, "i-027e91c14719b835e", true, &act, &err),
                     TLR_OK);
    assert_string_equal(act.status, "InProgress");
    tlr_asg_activity_free(&act);
    assert_int_equal(tlr_asg_terminate_instance(a, "i-0000dead", true, NULL, &err),
                     TLR_E_NOTFOUND);
    assert_string_equal(err.code, "ValidationError");
    assert_int_equal(tlr_asg_update(a, "nope", &(tlr_asg_sizes){ 0, -1, -1 }, &err),
                     TLR_E_INVAL);
    assert_string_equal(err.code, "ValidationError");
    assert_string_equal(err.message, "AutoScalingGroup name not found - null");
    /* The wrong document for the action is a parse error, not success. */
    assert_int_equal(tlr_asg_update(a, "legacy-a", &(tlr_asg_sizes){ 1, -1, -1 }, &err),
                     TLR_E_PARSE);
    testsrv_stop(&s);
    assert_int_equal(s.served, 6);
    assert_non_null(strstr(s.req[0], "Action=UpdateAutoScalingGroup&Version=2011-01-01"
                                     "&AutoScalingGroupName=legacy-a&MinSize=0&DesiredCapacity=3"));
    assert_null(strstr(s.req[0], "MaxSize"));
    assert_non_null(strstr(s.req[1], "Action=SetDesiredCapacity&Version=2011-01-01"
                                     "&AutoScalingGroupName=legacy-a&DesiredCapacity=1"
                                     "&HonorCooldown=false"));
    assert_non_null(strstr(s.req[2], "Action=TerminateInstanceInAutoScalingGroup"
                                     "&Version=2011-01-01&InstanceId=i-027e91c14719b835e"
                                     "&ShouldDecrementDesiredCapacity=true"));
    tlr_asg_free(a);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
    free(upd);
    free(set);
    free(term);
    free(verr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_group),
        cmocka_unit_test(test_parse_pages_and_wrong_documents),
        cmocka_unit_test(test_parse_activity),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_describe_pages),
        cmocka_unit_test(test_describe_page_ceiling),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
