/* iam_test.c - the IAM instance-profile decoders on answers recorded from
 * moto 5.2 (the real-IAM list shape, without tags and with paging, is
 * written from the API reference), and the calls against a scripted
 * server: what each sends (form body, SigV4 scope us-east-1/iam), paging
 * by Marker, and how answers and errors come back. */
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
#include "tlr_iam.h"

#define NS "xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/\""
#define META "<ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>"

/* moto: GetInstanceProfile of a profile holding one role and two tags. */
static const char get_xml[] =
    "<GetInstanceProfileResponse " NS "><GetInstanceProfileResult><InstanceProfile>"
    "<Path>/</Path><InstanceProfileName>prod_123</InstanceProfileName>"
    "<InstanceProfileId>yey772rh1xf1qpi898vd</InstanceProfileId>"
    "<Arn>arn:aws:iam::123456789012:instance-profile/prod_123</Arn>"
    "<CreateDate>2026-12-03T14:10:34.916542Z</CreateDate>"
    "<Roles><member><Path>/</Path><RoleName>NodeRole</RoleName>"
    "<RoleId>AROARZPUZDIKMLR47DXQE</RoleId><Arn>arn:aws:iam::123456789012:role/NodeRole</Arn>"
    "<CreateDate>2026-12-03T14:10:34.890340Z</CreateDate>"
    "<AssumeRolePolicyDocument>{}</AssumeRolePolicyDocument>"
    "<MaxSessionDuration>3600</MaxSessionDuration><Tags/><RoleLastUsed/></member></Roles>"
    "<Tags><member><Key>k1</Key><Value>v1</Value></member>"
    "<member><Key>kubernetes.io/cluster/prod</Key><Value>owned</Value></member></Tags>"
    "</InstanceProfile></GetInstanceProfileResult>" META "</GetInstanceProfileResponse>";

/* moto: CreateInstanceProfile (no role yet). */
static const char create_xml[] =
    "<CreateInstanceProfileResponse " NS "><CreateInstanceProfileResult><InstanceProfile>"
    "<Path>/</Path><InstanceProfileName>prod_123</InstanceProfileName>"
    "<InstanceProfileId>yey772rh1xf1qpi898vd</InstanceProfileId>"
    "<Arn>arn:aws:iam::123456789012:instance-profile/prod_123</Arn>"
    "<CreateDate>2026-12-03T14:10:34.916542Z</CreateDate><Roles/>"
    "<Tags><member><Key>k1</Key><Value>v1</Value></member></Tags>"
    "</InstanceProfile></CreateInstanceProfileResult>" META "</CreateInstanceProfileResponse>";

/* Real IAM: a truncated first page (no tags in a list), then the last. */
static const char list1_xml[] =
    "<ListInstanceProfilesResponse " NS "><ListInstanceProfilesResult>"
    "<IsTruncated>true</IsTruncated><Marker>AAEAAQ==</Marker><InstanceProfiles>"
    "<member><InstanceProfileId>AIPA1</InstanceProfileId><Roles/>"
    "<InstanceProfileName>prod_1</InstanceProfileName><Path>/</Path>"
    "<Arn>arn:aws:iam::123456789012:instance-profile/prod_1</Arn>"
    "<CreateDate>2024-05-09T16:11:10Z</CreateDate></member>"
    "<member><InstanceProfileId>AIPA2</InstanceProfileId><Roles><member><RoleName>R</RoleName>"
    "<Path>/</Path></member></Roles><InstanceProfileName>prod_2</InstanceProfileName>"
    "<Path>/</Path><Arn>arn:aws:iam::123456789012:instance-profile/prod_2</Arn>"
    "<CreateDate>2024-05-09T16:11:11Z</CreateDate></member>"
    "</InstanceProfiles></ListInstanceProfilesResult>" META "</ListInstanceProfilesResponse>";
static const char list2_xml[] =
    "<ListInstanceProfilesResponse " NS "><ListInstanceProfilesResult>"
    "<IsTruncated>false</IsTruncated><InstanceProfiles>"
    "<member><InstanceProfileId>AIPA3</InstanceProfileId><Roles/>"
    "<InstanceProfileName>web</InstanceProfileName><Path>/app/</Path>"
    "<Arn>arn:aws:iam::123456789012:instance-profile/app/web</Arn>"
    "<CreateDate>2024-05-09T16:11:12Z</CreateDate></member>"
    "</InstanceProfiles></ListInstanceProfilesResult>" META "</ListInstanceProfilesResponse>";

#define ERR(code, msg)                                                                    \
    "<ErrorResponse " NS "><Error><Type>Sender</Type><Code>" code "</Code><Message>" msg \
    "</Message></Error><RequestId>e-1</RequestId></ErrorResponse>"

static tlr_xml_doc *parse(const char *xml)
{
    tlr_xml_doc *d = NULL;
    assert_int_equal(tlr_xml_parse(xml, strlen(xml), NULL, &d, NULL, 0), TLR_OK);
    return d;
}

static void test_parse_profile(void **state)
{
    (void)state;
    tlr_xml_doc *d = parse(get_xml);
    tlr_iam_profile p = { 0 };
    assert_int_equal(tlr_iam_parse_profile(tlr_xml_root(d), "GetInstanceProfile", &p), TLR_OK);
    assert_string_equal(p.name, "prod_123");
    assert_string_equal(p.id, "yey772rh1xf1qpi898vd");
    assert_string_equal(p.arn, "arn:aws:iam::123456789012:instance-profile/prod_123");
    assert_string_equal(p.path, "/");
    assert_true(p.created_ms > 1700000000000LL);
    assert_int_equal(p.nroles, 1);
    assert_string_equal(p.roles[0], "NodeRole");
    assert_int_equal(p.ntags, 2);
    assert_string_equal(tlr_ec2_tag_get(p.tags, p.ntags, "kubernetes.io/cluster/prod"), "owned");
    /* The role's own <Tags/> are not the profile's. */
    assert_null(tlr_ec2_tag_get(p.tags, p.ntags, "RoleLastUsed"));
    tlr_iam_profile_free(&p);
    /* The same document for another action is refused. */
    assert_int_equal(tlr_iam_parse_profile(tlr_xml_root(d), "CreateInstanceProfile", &p),
                     TLR_E_PARSE);
    tlr_xml_free(d);

    d = parse(create_xml);
    assert_int_equal(tlr_iam_parse_profile(tlr_xml_root(d), "CreateInstanceProfile", &p), TLR_OK);
    assert_int_equal(p.nroles, 0);
    assert_int_equal(p.ntags, 1);
    tlr_iam_profile_free(&p);
    tlr_xml_free(d);
}

static void test_parse_list_and_wrong_documents(void **state)
{
    (void)state;
    tlr_xml_doc *d1 = parse(list1_xml), *d2 = parse(list2_xml);
    tlr_iam_profiles l = { 0 };
    char *marker = NULL;
    assert_int_equal(tlr_iam_parse_profiles(tlr_xml_root(d1), &l, &marker), TLR_OK);
    assert_non_null(marker);
    assert_string_equal(marker, "AAEAAQ==");
    free(marker);
    assert_int_equal(tlr_iam_parse_profiles(tlr_xml_root(d2), &l, &marker), TLR_OK);
    assert_null(marker);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[0].name, "prod_1");
    assert_int_equal(l.v[0].nroles, 0);
    assert_int_equal(l.v[0].ntags, 0);
    assert_string_equal(l.v[1].roles[0], "R");
    assert_string_equal(l.v[2].path, "/app/");
    tlr_iam_profiles_free(&l);
    tlr_xml_free(d1);
    tlr_xml_free(d2);

    static const struct { const char *what, *xml; } bad[] = {
        { "a get answer", "<GetInstanceProfileResponse/>" },
        { "no result", "<ListInstanceProfilesResponse/>" },
        { "truncated without a marker",
          "<ListInstanceProfilesResponse><ListInstanceProfilesResult><IsTruncated>true"
          "</IsTruncated><InstanceProfiles/></ListInstanceProfilesResult>"
          "</ListInstanceProfilesResponse>" },
        { "a nameless profile",
          "<ListInstanceProfilesResponse><ListInstanceProfilesResult><InstanceProfiles>"
          "<member><Path>/</Path></member></InstanceProfiles></ListInstanceProfilesResult>"
          "</ListInstanceProfilesResponse>" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tlr_xml_doc *d = parse(bad[i].xml);
        tlr_iam_profiles out = { 0 };
        int rc = tlr_iam_parse_profiles(tlr_xml_root(d), &out, NULL);
        if (rc != TLR_E_PARSE || out.n != 0) {
            printf("FAIL %s: got %s with %zu profiles, want PARSE and none\n", bad[i].what,
                   tlr_errname(rc), out.n);
            failures++;
        }
        tlr_iam_profiles_free(&out);
        tlr_xml_free(d);
    }
    assert_int_equal(failures, 0);
}

static tlr_iam *client_for(const testsrv *s, tlr_aws_creds **cr)
{
    char url[64];
    tlr_iam *c = NULL;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s->port);
    assert_int_equal(tlr_aws_creds_create_static("AKIDEXAMPLE", "SECRET", NULL, cr), TLR_OK);
    /* The caller's region is not IAM's: the client signs for us-east-1. */
    assert_int_equal(tlr_iam_create(&(tlr_aws_query_opts){ .region = "eu-west-1", .endpoint = url,
                                                           .creds = *cr, .max_attempts = 2,
                                                           .backoff_base_ms = 1,
                                                           .backoff_cap_ms = 2,
                                                           .timeout_ms = 3000 }, &c),
                     TLR_OK);
    return c;
}

/* List follows Marker, signs for us-east-1/iam, and refuses a page past
 * the ceiling. */
static void test_list_pages(void **state)
{
    (void)state;
    testsrv_resp resp[] = { { 200, list1_xml }, { 200, list2_xml }, { 200, list1_xml } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    testsrv_start(&s, resp, 3);
    tlr_iam *c = client_for(&s, &cr);
    tlr_iam_profiles l = { 0 };
    tlr_aws_error err = { 0 };
    assert_int_equal(tlr_iam_list_profiles(c, NULL, 0, &l, &err), TLR_OK);
    assert_int_equal(l.n, 3);
    tlr_iam_profiles_free(&l);
    assert_int_equal(tlr_iam_list_profiles(c, "/karpenter/", 1, &l, &err), TLR_E_TOOBIG);
    assert_int_equal(l.n, 0);
    testsrv_stop(&s);
    assert_int_equal(s.served, 3);
    assert_non_null(strstr(s.req[0], "/us-east-1/iam/aws4_request"));
    assert_non_null(strstr(s.req[0], "\r\n\r\nAction=ListInstanceProfiles&Version=2010-05-08"
                                     "&PathPrefix=%2F&MaxItems=1000"));
    assert_null(strstr(s.req[0], "Marker="));
    assert_non_null(strstr(s.req[1], "&MaxItems=1000&Marker=AAEAAQ%3D%3D"));
    assert_non_null(strstr(s.req[2], "&PathPrefix=%2Fkarpenter%2F&"));
    tlr_iam_free(c);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
}

/* Every call: the body it sends and what its answer becomes. */
static void test_calls(void **state)
{
    (void)state;
    static const char add_ok[] = "<AddRoleToInstanceProfileResponse " NS ">" META
                                 "</AddRoleToInstanceProfileResponse>";
    static const char rm_ok[] = "<RemoveRoleFromInstanceProfileResponse " NS ">" META
                                "</RemoveRoleFromInstanceProfileResponse>";
    static const char tag_ok[] = "<TagInstanceProfileResponse " NS ">" META
                                 "</TagInstanceProfileResponse>";
    static const char del_ok[] = "<DeleteInstanceProfileResponse " NS ">" META
                                 "</DeleteInstanceProfileResponse>";
    testsrv_resp resp[] = {
        { 200, get_xml },
        { 404, ERR("NoSuchEntity", "Instance profile nope not found") },
        { 200, create_xml },
        { 409, ERR("EntityAlreadyExists", "Instance Profile prod_123 already exists.") },
        { 200, add_ok },
        { 404, ERR("NoSuchEntity", "Role Nope not found") },
        { 409, ERR("LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1") },
        { 403, ERR("AccessDenied", "User: arn:aws:iam::123456789012:user/x is not authorized "
                                   "to perform: iam:AddRoleToInstanceProfile") },
        { 200, rm_ok },
        { 200, tag_ok },
        { 409, ERR("DeleteConflict", "Cannot delete entity, must remove roles from instance "
                                     "profile first.") },
        { 200, del_ok },
        { 200, tag_ok },   /* the wrong answer for a delete */
    };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    testsrv_start(&s, resp, (int)(sizeof(resp) / sizeof(resp[0])));
    tlr_iam *c = client_for(&s, &cr);
    tlr_iam_profile p = { 0 };
    tlr_aws_error err = { 0 };
    tlr_ec2_tag tags[] = { { "k1", "v1" }, { "kubernetes.io/cluster/prod", "owned" } };

    assert_int_equal(tlr_iam_get_profile(c, "prod_123", &p, &err), TLR_OK);
    assert_string_equal(p.roles[0], "NodeRole");
    tlr_iam_profile_free(&p);
    assert_int_equal(tlr_iam_get_profile(c, "nope", &p, &err), TLR_E_NOTFOUND);
    assert_string_equal(err.code, "NoSuchEntity");
    assert_int_equal(tlr_iam_create_profile(c, "prod_123", NULL, tags, 2, &p, &err), TLR_OK);
    assert_string_equal(p.name, "prod_123");
    tlr_iam_profile_free(&p);
    assert_int_equal(tlr_iam_create_profile(c, "prod_123", "/", NULL, 0, NULL, &err),
                     TLR_E_EXISTS);
    assert_int_equal(tlr_iam_add_role(c, "prod_123", "NodeRole", &err), TLR_OK);
    assert_int_equal(tlr_iam_add_role(c, "prod_123", "Nope", &err), TLR_E_NOTFOUND);
    assert_string_equal(err.message, "Role Nope not found");
    assert_int_equal(tlr_iam_add_role(c, "prod_123", "Other", &err), TLR_E_REMOTE);
    assert_string_equal(err.code, "LimitExceeded");
    assert_int_equal(tlr_iam_add_role(c, "prod_123", "Other", &err), TLR_E_AUTH);
    assert_string_equal(err.code, "AccessDenied");
    assert_int_equal(tlr_iam_remove_role(c, "prod_123", "NodeRole", &err), TLR_OK);
    assert_int_equal(tlr_iam_tag_profile(c, "prod_123", tags, 1, &err), TLR_OK);
    assert_int_equal(tlr_iam_delete_profile(c, "prod_123", &err), TLR_E_REMOTE);
    assert_string_equal(err.code, "DeleteConflict");
    assert_int_equal(tlr_iam_delete_profile(c, "prod_123", &err), TLR_OK);
    assert_int_equal(tlr_iam_delete_profile(c, "prod_123", &err), TLR_E_PARSE);
    testsrv_stop(&s);
    assert_int_equal(s.served, 13);

    static const struct { int i; const char *body; } want[] = {
        { 0, "Action=GetInstanceProfile&Version=2010-05-08&InstanceProfileName=prod_123" },
        { 2, "Action=CreateInstanceProfile&Version=2010-05-08&InstanceProfileName=prod_123"
             "&Path=%2F&Tags.member.1.Key=k1&Tags.member.1.Value=v1"
             "&Tags.member.2.Key=kubernetes.io%2Fcluster%2Fprod&Tags.member.2.Value=owned" },
        { 4, "Action=AddRoleToInstanceProfile&Version=2010-05-08&InstanceProfileName=prod_123"
             "&RoleName=NodeRole" },
        { 8, "Action=RemoveRoleFromInstanceProfile&Version=2010-05-08"
             "&InstanceProfileName=prod_123&RoleName=NodeRole" },
        { 9, "Action=TagInstanceProfile&Version=2010-05-08&InstanceProfileName=prod_123"
             "&Tags.member.1.Key=k1&Tags.member.1.Value=v1" },
        { 11, "Action=DeleteInstanceProfile&Version=2010-05-08&InstanceProfileName=prod_123" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *body = strstr(s.req[want[i].i], "\r\n\r\n");
        if (body == NULL || strcmp(body + 4, want[i].body) != 0) {
            printf("FAIL request %d: got %s, want %s\n", want[i].i, body ? body + 4 : "(none)",
                   want[i].body);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
    tlr_iam_free(c);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
}

/* Bad input never reaches the wire. */
static void test_refused_locally(void **state)
{
    (void)state;
    testsrv_resp none[] = { { 0, "" } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    testsrv_start(&s, none, 1);
    tlr_iam *c = client_for(&s, &cr);
    tlr_iam_profile p = { 0 };
    tlr_ec2_tag many[TLR_IAM_MAX_TAGS + 1];
    char longname[200];
    for (size_t i = 0; i < TLR_IAM_MAX_TAGS + 1; i++)
        many[i] = (tlr_ec2_tag){ "k", "v" };
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(tlr_iam_get_profile(c, "", &p, NULL), TLR_E_INVAL);
    assert_int_equal(tlr_iam_get_profile(c, longname, &p, NULL), TLR_E_INVAL);
    assert_int_equal(tlr_iam_create_profile(c, "x", "/", many, TLR_IAM_MAX_TAGS + 1, NULL, NULL),
                     TLR_E_INVAL);
    assert_int_equal(tlr_iam_create_profile(c, "x", "/", &(tlr_ec2_tag){ "", "v" }, 1, NULL, NULL),
                     TLR_E_INVAL);
    assert_int_equal(tlr_iam_tag_profile(c, "x", NULL, 0, NULL), TLR_E_INVAL);
    assert_int_equal(tlr_iam_add_role(c, "x", "", NULL), TLR_E_INVAL);
    assert_int_equal(tlr_iam_remove_role(c, NULL, "r", NULL), TLR_E_INVAL);
    assert_int_equal(tlr_iam_delete_profile(NULL, "x", NULL), TLR_E_INVAL);
    testsrv_stop(&s);
    assert_int_equal(s.served, 0);
    tlr_iam_free(c);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_profile),
        cmocka_unit_test(test_parse_list_and_wrong_documents),
        cmocka_unit_test(test_list_pages),
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_refused_locally),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
