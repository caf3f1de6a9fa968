/* log_test.c - every log line is one valid JSON object, whatever the
 * values: a 2 MiB string is cut with its length said, bytes that are not
 * UTF-8 become U+FFFD, a secret is redacted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "tlr_log.h"

/* Emit one line through a logger writing to a temporary file; return the
 * line read back (owned). */
static char *one_line(const char *msg, const tlr_kv *kv, int nkv)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    tlr_logger *lg;
    tlr_logger_create(&(tlr_log_opts){ .service = "test", .level = TLR_LOG_DEBUG, .fd = fileno(f) },
                      &lg);
    tlr_log_emit(lg, TLR_LOG_WARN, msg, kv, nkv);
    tlr_logger_free(lg);
    long n = ftell(f);
    assert_true(n > 0);
    char *s = calloc(1, (size_t)n + 1);
    rewind(f);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

static void test_lines_stay_json(void **state)
{
    (void)state;
    size_t big = 2u << 20;
    char *huge = malloc(big + 1);
    memset(huge, 'x', big);
    huge[big] = '\0';
    const tlr_kv kv[] = {
        TLR_S("type", huge),
        TLR_S("name", "bad\xff\xfe" "name"),
        TLR_SECRET("token"),
        TLR_I("n", 7),
    };
    char *line = one_line("request rejected", kv, 4);
    assert_true(strlen(line) < 64 * 1024);
    assert_int_equal(line[strlen(line) - 1], '\n');
    json_object *o = json_tokener_parse(line);
    if (!o)
        fail_msg("not JSON: %.200s", line);
    json_object *v;
    assert_true(json_object_object_get_ex(o, "type", &v));
    const char *t = json_object_get_string(v);
    assert_true(strlen(t) < 4096);
    assert_non_null(strstr(t, "...(2097152 bytes)"));
    assert_true(json_object_object_get_ex(o, "name", &v));
    assert_string_equal(json_object_get_string(v), "bad\xef\xbf\xbd\xef\xbf\xbd" "name");
    assert_true(json_object_object_get_ex(o, "token", &v));
    assert_string_equal(json_object_get_string(v), "[redacted]");
    assert_true(json_object_object_get_ex(o, "n", &v));
    assert_int_equal(json_object_get_int(v), 7);
    assert_true(json_object_object_get_ex(o, "msg", &v));
    assert_string_equal(json_object_get_string(v), "request rejected");
    json_object_put(o);
    free(line);
    free(huge);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_stay_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
