/* sigv4_test.c - tlr_sigv4 against the official AWS SigV4 test suite
 * (fetched with npm into the build tree by testdata/sigv4-suite.sh), the
 * IAM example from the AWS documentation, and bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_sigv4.h"

/* The two x-www-form-urlencoded cases of the suite disagree with
 * themselves: their .creq signs content-length (content-length;
 * content-type;host;x-amz-date) while their .authz lists SignedHeaders=
 * content-type;host;x-amz-date, so no signer can match both files.
 * They run like every other case; a mismatch there is expected and
 * printed, any other mismatch fails the test. */
static const char *const expected_mismatch[] = {
    "post-x-www-form-urlencoded",
    "post-x-www-form-urlencoded-parameters",
};

static bool is_expected_mismatch(const char *name)
{
    for (size_t i = 0; i < sizeof(expected_mismatch) / sizeof(expected_mismatch[0]); i++)
        if (strcmp(name, expected_mismatch[i]) == 0)
            return true;
    return false;
}

/* The suite's index.json path, or NULL (with a printed note) when npm or
 * the registry is unavailable. */
static char *suite_path(void)
{
    char script[4096], cmd[8192], line[4096];
    const char *cache = getenv("TAILOR_NPM_CACHE");
    const char *src = __FILE__;
    const char *slash = strrchr(src, '/');
    FILE *p;
    int status;

    snprintf(script, sizeof(script), "%.*s/testdata/sigv4-suite.sh",
             slash ? (int)(slash - src) : 1, slash ? src : ".");
    /* ctest runs unit tests in the build tree's common/ folder. */
    snprintf(cmd, sizeof(cmd), "sh '%s' '%s'", script, cache ? cache : "npm-cache");
    p = popen(cmd, "r");
    if (p == NULL)
        return NULL;
    line[0] = '\0';
    if (fgets(line, sizeof(line), p) == NULL)
        line[0] = '\0';
    status = pclose(p);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || line[0] == '\0') {
        printf("NOTE: AWS SigV4 test suite unavailable (npm missing or offline; "
               "exit %d): suite cases skipped\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return NULL;
    }
    line[strcspn(line, "\n")] = '\0';
    return tlr_strdup(line);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = tlr_malloc((size_t)n + 1);
        *len = fread(buf, 1, (size_t)n, f);
        buf[*len] = '\0';
    }
    fclose(f);
    return buf;
}

static int compare(const char *name, const char *what, const char *got, const char *want)
{
    if (want != NULL && strcmp(got, want) == 0)
        return 0;
    if (!is_expected_mismatch(name))
        printf("FAIL %s: %s\n--- got ---\n%s\n--- want ---\n%s\n", name, what, got,
               want ? want : "(missing)");
    return 1;
}

static void test_official_suite(void **state)
{
    char *path = suite_path();
    char *text = NULL;
    size_t len = 0;
    json_object *root = NULL, *all;
    char err[256];
    int failures = 0, ran = 0, expected_seen = 0;

    (void)state;
    if (path == NULL)
        skip();
    text = slurp(path, &len);
    assert_non_null(text);
    assert_int_equal(tlr_json_parse(text, len, 16 << 20, &root, err, sizeof(err)), TLR_OK);
    all = tlr_json_arr(root, "tests.all");
    assert_non_null(all);

    for (size_t i = 0; i < json_object_array_length(all); i++) {
        json_object *t = json_object_array_get_idx(all, i);
        json_object *hdrs = tlr_json_arr(t, "request.headers");
        const char *name = tlr_json_str(t, "name");
        const char *body = tlr_json_str(t, "request.body");
        size_t nh = hdrs ? json_object_array_length(hdrs) : 0;
        tlr_sigv4_header *h = tlr_calloc(nh + 1, sizeof(*h));
        tlr_sigv4_request r = {
            .method = tlr_json_str(t, "request.method"),
            .path = tlr_json_str(t, "request.path"),
            .query = tlr_json_str(t, "request.query"),
            .headers = h,
            .nheaders = nh,
            .body = body,
            .body_len = body ? strlen(body) : 0,
        };
        tlr_sigv4_key k = {
            .access_key_id = tlr_json_str(root, "config.accessKeyId"),
            .secret_access_key = tlr_json_str(root, "config.secretAccessKey"),
            .region = tlr_json_str(root, "config.region"),
            .service = tlr_json_str(root, "config.service"),
        };
        tlr_sigv4_result res = { 0 };
        int rc, bad = 0;

        for (size_t j = 0; j < nh; j++) {
            h[j].name = json_object_get_string(json_object_array_get_idx(
                            json_object_array_get_idx(hdrs, j), 0));
            h[j].value = json_object_get_string(
                json_object_array_get_idx(json_object_array_get_idx(hdrs, j), 1));
        }
        rc = tlr_sigv4_sign(&r, &k, &res);
        ran++;
        if (rc != TLR_OK) {
            printf("FAIL %s: sign returned %s\n", name, tlr_errname(rc));
            bad = 1;
        } else {
            bad += compare(name, "canonical request", res.canonical_request,
                           tlr_json_str(t, "creq"));
            bad += compare(name, "string to sign", res.string_to_sign, tlr_json_str(t, "sts"));
            bad += compare(name, "authorization", res.authorization, tlr_json_str(t, "authz"));
        }
        if (bad && is_expected_mismatch(name)) {
            printf("expected mismatch (inconsistent suite case): %s\n", name);
            expected_seen++;
        } else if (bad) {
            failures++;
        }
        tlr_sigv4_result_free(&res);
        free(h);
    }
    printf("sigv4 suite: %d cases, %d matched, %d expected mismatches, %d failed\n", ran,
           ran - failures - expected_seen, expected_seen, failures);
    assert_int_equal(ran, 28);
    assert_int_equal(failures, 0);
    json_object_put(root);
    free(text);
    free(path);
}

/* The worked example of the AWS documentation ("Examples of the complete
 * Version 4 signing process"): IAM ListUsers.  Runs without npm. */
static void test_documented_example(void **state)
{
    const tlr_sigv4_header h[] = {
        { "Content-Type", "application/x-www-form-urlencoded; charset=utf-8" },
        { "Host", "iam.amazonaws.com" },
        { "X-Amz-Date", "20150830T123600Z" },
    };
    tlr_sigv4_request r = {
        .method = "GET", .path = "/", .query = "Action=ListUsers&Version=2010-05-08",
        .headers = h, .nheaders = 3,
    };
    tlr_sigv4_key k = { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                        "us-east-1", "iam" };
    tlr_sigv4_result res = { 0 };

    (void)state;
    assert_int_equal(tlr_sigv4_sign(&r, &k, &res), TLR_OK);
    if (strcmp(res.signature,
               "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7") != 0)
        printf("FAIL doc example: got %s\ncreq:\n%s\n", res.signature, res.canonical_request);
    assert_string_equal(res.signature,
                        "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
    tlr_sigv4_result_free(&res);

    /* One byte of the secret changed: another signature. */
    k.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEZ";
    assert_int_equal(tlr_sigv4_sign(&r, &k, &res), TLR_OK);
    assert_string_not_equal(res.signature,
                            "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
    tlr_sigv4_result_free(&res);
}

static void test_bad_input(void **state)
{
    static const struct {
        const char *what;
        const char *hname, *hvalue;
        const char *query;
        int rc;
    } t[] = {
        { "no x-amz-date",       "Host", "h", NULL, TLR_E_INVAL },
        { "malformed date",      "X-Amz-Date", "2015-08-30T12:36:00Z", NULL, TLR_E_INVAL },
        { "space in name",       "Bad Name", "v", NULL, TLR_E_INVAL },
        { "newline in value",    "X-A", "a\nb", NULL, TLR_E_INVAL },
        { "truncated escape",    "X-A", "v", "a=%4", TLR_E_INVAL },
        { "bad escape",          "X-A", "v", "a=%zz", TLR_E_INVAL },
        { "fine",                "X-A", "v", "a=%41", TLR_OK },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        bool date_is_extra = strcmp(t[i].hname, "X-Amz-Date") != 0 &&
                             strcmp(t[i].what, "no x-amz-date") != 0;
        tlr_sigv4_header h[2] = { { t[i].hname, t[i].hvalue },
                                  { "X-Amz-Date", "20150830T123600Z" } };
        tlr_sigv4_request r = { .method = "GET", .path = "/", .query = t[i].query,
                                .headers = h, .nheaders = date_is_extra ? 2 : 1 };
        tlr_sigv4_key k = { "AK", "SK", "us-east-1", "ec2" };
        tlr_sigv4_result res = { 0 };
        int rc = tlr_sigv4_sign(&r, &k, &res);

        if (rc != t[i].rc) {
            printf("FAIL %s: got %s, want %s\n", t[i].what, tlr_errname(rc),
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc != TLR_OK && res.authorization != NULL) {
            printf("FAIL %s: output written on error\n", t[i].what);
            failures++;
        }
        tlr_sigv4_result_free(&res);
    }
    assert_int_equal(failures, 0);
}

static void test_uri_encode(void **state)
{
    static const struct {
        const char *in;
        bool keep_slash;
        const char *want;
    } t[] = {
        { "a b", false, "a%20b" },
        { "a/b", false, "a%2Fb" },
        { "a/b", true, "a/b" },
        { "-._~AZaz09", false, "-._~AZaz09" },
        { "a+b=c&d*", false, "a%2Bb%3Dc%26d%2A" },
        { "\xe1\x88\xb4", false, "%E1%88%B4" },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_buf b;

        tlr_buf_init(&b, 1024);
        assert_int_equal(tlr_sigv4_uri_encode(&b, t[i].in, strlen(t[i].in), t[i].keep_slash),
                         TLR_OK);
        if (strcmp(tlr_buf_str(&b), t[i].want) != 0) {
            printf("FAIL encode(%s): got %s, want %s\n", t[i].in, tlr_buf_str(&b), t[i].want);
            failures++;
        }
        tlr_buf_free(&b);
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_documented_example),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_uri_encode),
        cmocka_unit_test(test_official_suite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
