/* creds_test.c - the credential chain: environment, shared files and
 * profiles, web identity (STS on a scripted server), IMDSv2 (scripted),
 * expiry and renewal with an injected clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "aws_testsrv.h"
#include "tlr_awscreds.h"
#include "tlr_err.h"

static const char *const env_vars[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_STS", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_DISABLED",
    "AWS_REGION", "AWS_DEFAULT_REGION",
};

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
        unsetenv(env_vars[i]);
    /* Never reach a real metadata service or the user's ~/.aws. */
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    setenv("HOME", tmpdir, 1);
    return 0;
}

static void write_file(const char *name, const char *text, char *path, size_t len)
{
    FILE *f;

    snprintf(path, len, "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char cred_file[] =
    "# comment\n"
    "[default]\n"
    "aws_access_key_id = AKIDDEFAULT\n"
    "aws_secret_access_key = secret-default\n"
    "\n"
    "[dev]\n"
    "aws_access_key_id=AKIDDEV\n"
    "aws_secret_access_key=secret-dev\n"
    "aws_session_token = tok-dev\n"
    "[half]\n"
    "aws_access_key_id=AKIDHALF\n";
static const char config_file[] =
    "[default]\n"
    "region = us-west-2\n"
    "[profile ops]\n"
    "aws_access_key_id = AKIDOPS\n"
    "aws_secret_access_key = secret-ops\n"
    "[dev]\n"   /* not a profile section in config files */
    "aws_access_key_id = AKIDWRONG\n"
    "aws_secret_access_key = wrong\n";

static void test_chain_sources(void **state)
{
    char cpath[512], kpath[512];
    static const struct {
        const char *what;
        const char *env_ak, *env_sk, *profile;
        int use_files;
        int rc;
        const char *ak, *token, *source;
    } t[] = {
        { "environment wins", "AKIDENV", "secret-env", "dev", 1, TLR_OK, "AKIDENV", NULL, "env" },
        { "half environment ignored", "AKIDENV", NULL, NULL, 1, TLR_OK, "AKIDDEFAULT", NULL,
          "profile" },
        { "default profile", NULL, NULL, NULL, 1, TLR_OK, "AKIDDEFAULT", NULL, "profile" },
        { "named profile with token", NULL, NULL, "dev", 1, TLR_OK, "AKIDDEV", "tok-dev",
          "profile" },
        { "profile only in config", NULL, NULL, "ops", 1, TLR_OK, "AKIDOPS", NULL, "profile" },
        { "incomplete profile", NULL, NULL, "half", 1, TLR_E_NOTFOUND, NULL, NULL, NULL },
        { "unknown profile", NULL, NULL, "nope", 1, TLR_E_NOTFOUND, NULL, NULL, NULL },
        { "nothing at all", NULL, NULL, NULL, 0, TLR_E_NOTFOUND, NULL, NULL, NULL },
    };
    int failures = 0;

    write_file("credentials", cred_file, kpath, sizeof(kpath));
    write_file("config", config_file, cpath, sizeof(cpath));
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_aws_creds *c = NULL;
        tlr_aws_credentials got = { 0 };
        int rc;

        setup(state);
        if (t[i].env_ak)
            setenv("AWS_ACCESS_KEY_ID", t[i].env_ak, 1);
        if (t[i].env_sk)
            setenv("AWS_SECRET_ACCESS_KEY", t[i].env_sk, 1);
        if (t[i].profile)
            setenv("AWS_PROFILE", t[i].profile, 1);
        setenv("AWS_SHARED_CREDENTIALS_FILE", t[i].use_files ? kpath : "/nonexistent/c", 1);
        setenv("AWS_CONFIG_FILE", t[i].use_files ? cpath : "/nonexistent/c", 1);
        assert_int_equal(tlr_aws_creds_create(NULL, &c), TLR_OK);
        rc = tlr_aws_creds_get(c, &got);
        if (rc != t[i].rc ||
            (rc == TLR_OK && (strcmp(got.access_key_id, t[i].ak) != 0 ||
                              strcmp(got.source, t[i].source) != 0 ||
                              (t[i].token == NULL) != (got.session_token == NULL) ||
                              (t[i].token && strcmp(got.session_token, t[i].token) != 0)))) {
            printf("FAIL %s: got %s {%s, token %s, %s}, want %s {%s, token %s, %s}\n", t[i].what,
                   tlr_errname(rc), got.access_key_id ? got.access_key_id : "-",
                   got.session_token ? got.session_token : "-", got.source, tlr_errname(t[i].rc),
                   t[i].ak ? t[i].ak : "-", t[i].token ? t[i].token : "-",
                   t[i].source ? t[i].source : "-");
            failures++;
        }
        tlr_aws_credentials_clear(&got);
        tlr_aws_creds_free(c);
    }
    assert_int_equal(failures, 0);
}

static const char sts_ok[] =
    "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
    "<AssumeRoleWithWebIdentityResult><Credentials>"
    "<AccessKeyId>ASIAWEBID</AccessKeyId><SecretAccessKey>secret-web</SecretAccessKey>"
    "<SessionToken>tok-web</SessionToken><Expiration>2030-01-01T01:00:00Z</Expiration>"
    "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
static const char sts_denied[] =
    "<ErrorResponse><Error><Code>InvalidIdentityToken</Code><Message>bad token</Message>"
    "</Error></ErrorResponse>";

static void test_web_identity(void **state)
{
    const testsrv_resp resp[] = { { 200, sts_ok }, { 400, sts_denied } };
    char tpath[512], url[64];
    testsrv s;
    tlr_aws_creds *c = NULL;
    tlr_aws_credentials got = { 0 };

    (void)state;
    write_file("token", "eyJhbGciOiJSUzI1NiJ9.payload.sig\n", tpath, sizeof(tpath));
    testsrv_start(&s, resp, 2);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/tailor", 1);
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tpath, 1);
    setenv("AWS_ENDPOINT_URL_STS", url, 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/c", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/c", 1);

    assert_int_equal(tlr_aws_creds_create(NULL, &c), TLR_OK);
    assert_int_equal(tlr_aws_creds_get(c, &got), TLR_OK);
    assert_string_equal(got.access_key_id, "ASIAWEBID");
    assert_string_equal(got.session_token, "tok-web");
    assert_string_equal(got.source, "web-identity");
    assert_int_equal(got.expires_ms, 1893459600000LL);
    tlr_aws_credentials_clear(&got);

    /* Refused token: an AUTH error, no fall-through to other sources. */
    tlr_aws_creds_invalidate(c);
    assert_int_equal(tlr_aws_creds_get(c, &got), TLR_E_AUTH);
    testsrv_stop(&s);
    /* Unsigned POST carrying the role and the token (trimmed). */
    assert_null(strstr(s.req[0], "Authorization:"));
    assert_non_null(strstr(s.req[0], "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
                                     "&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Ftailor"));
    assert_non_null(strstr(s.req[0], "&WebIdentityToken=eyJhbGciOiJSUzI1NiJ9.payload.sig"));
    assert_null(strstr(s.req[0], "sig%0A"));
    tlr_aws_creds_free(c);
    testsrv_free(&s);
}

/* A clock the test moves by hand. */
static int64_t fake_now;
static int64_t fake_ms(void *arg)
{
    (void)arg;
    return fake_now;
}

static void test_imds_and_refresh(void **state)
{
    const testsrv_resp resp[] = {
        { 200, "TOKEN-1" },
        { 200, "tailor-node-role\n" },
        { 200, "{\"Code\":\"Success\",\"AccessKeyId\":\"ASIAIMDS1\",\"SecretAccessKey\":\"s1\","
               "\"Token\":\"t1\",\"Expiration\":\"2030-01-01T01:00:00Z\"}" },
        { 200, "TOKEN-2" },
        { 200, "tailor-node-role" },
        { 200, "{\"Code\":\"Success\",\"AccessKeyId\":\"ASIAIMDS2\",\"SecretAccessKey\":\"s2\","
               "\"Token\":\"t2\",\"Expiration\":\"2030-01-01T02:00:00Z\"}" },
    };
    const tlr_clock clk = { fake_ms, fake_ms, NULL };
    char url[64];
    testsrv s;
    tlr_aws_creds *c = NULL;
    tlr_aws_credentials got = { 0 };
    const int64_t exp1 = 1893459600000LL;   /* 2030-01-01T01:00:00Z */

    (void)state;
    testsrv_start(&s, resp, 6);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
    unsetenv("AWS_EC2_METADATA_DISABLED");
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url, 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/c", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/c", 1);
    fake_now = exp1 - 60 * 60 * 1000;
    assert_int_equal(tlr_aws_creds_create(&(tlr_aws_creds_opts){
                         .clock = &clk, .refresh_before_ms = 5 * 60 * 1000 }, &c), TLR_OK);
    assert_int_equal(tlr_aws_creds_get(c, &got), TLR_OK);
    assert_string_equal(got.access_key_id, "ASIAIMDS1");
    assert_string_equal(got.source, "imds");
    tlr_aws_credentials_clear(&got);

    /* 10 minutes before expiry: cached, no request. */
    fake_now = exp1 - 10 * 60 * 1000;
    assert_int_equal(tlr_aws_creds_get(c, &got), TLR_OK);
    assert_string_equal(got.access_key_id, "ASIAIMDS1");
    tlr_aws_credentials_clear(&got);
    /* 4 minutes before: inside the refresh window, renewed. */
    fake_now = exp1 - 4 * 60 * 1000;
    assert_int_equal(tlr_aws_creds_get(c, &got), TLR_OK);
    assert_string_equal(got.access_key_id, "ASIAIMDS2");
    tlr_aws_credentials_clear(&got);
    /* Renewal failing (server gone) while still valid: keep the current. */
    testsrv_stop(&s);
    fake_now = exp1 + 60 * 60 * 1000 - 60 * 1000;
    assert_int_equal(tlr_aws_creds_get(c, &got), TLR_OK);
    assert_string_equal(got.access_key_id, "ASIAIMDS2");
    tlr_aws_credentials_clear(&got);
    /* Expired and not renewable: an error. */
    fake_now = exp1 + 2 * 60 * 60 * 1000;
    assert_int_not_equal(tlr_aws_creds_get(c, &got), TLR_OK);

    assert_int_equal(s.served, 6);
    assert_non_null(strstr(s.req[0], "PUT /latest/api/token HTTP/1.1\r\n"));
    assert_non_null(strstr(s.req[0], "X-aws-ec2-metadata-token-ttl-seconds: 21600"));
    assert_non_null(strstr(s.req[1], "GET /latest/meta-data/iam/security-credentials/ HTTP"));
    assert_non_null(strstr(s.req[1], "X-aws-ec2-metadata-token: TOKEN-1\r\n"));
    assert_non_null(strstr(s.req[2], "GET /latest/meta-data/iam/security-credentials/"
                                     "tailor-node-role HTTP"));
    assert_non_null(strstr(s.req[5], "X-aws-ec2-metadata-token: TOKEN-2\r\n"));
    tlr_aws_creds_free(c);
    testsrv_free(&s);
}

static void test_static(void **state)
{
    tlr_aws_creds *c = NULL;
    tlr_aws_credentials got = { 0 };

    (void)state;
    assert_int_equal(tlr_aws_creds_create_static("AK", NULL, NULL, &c), TLR_E_INVAL);
    assert_int_equal(tlr_aws_creds_create_static("AK", "SK", NULL, &c), TLR_OK);
    tlr_aws_creds_invalidate(c);   /* static keys cannot be forgotten */
    assert_int_equal(tlr_aws_creds_get(c, &got), TLR_OK);
    assert_string_equal(got.secret_access_key, "SK");
    assert_null(got.session_token);
    tlr_aws_credentials_clear(&got);
    tlr_aws_creds_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_chain_sources, setup),
        cmocka_unit_test_setup(test_web_identity, setup),
        cmocka_unit_test_setup(test_imds_and_refresh, setup),
        cmocka_unit_test_setup(test_static, setup),
    };
    int rc;

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/tlr-creds-test-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    {
        char cmd[300];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return rc;
}
