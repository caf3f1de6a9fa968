/* xml_test.c - tlr_xml: well-formedness, ceilings, namespaces, paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_err.h"
#include "tlr_xml.h"

static void test_parse_table(void **state)
{
    static const struct {
        const char *what;
        const char *in;
        tlr_xml_limits lim;
        int rc;
        const char *err;   /* substring of the message; NULL = no check */
    } t[] = {
        { "simple", "<a><b>x</b></a>", { 0 }, TLR_OK, NULL },
        { "declaration", "<?xml version=\"1.0\"?>\n<a/>", { 0 }, TLR_OK, NULL },
        { "mismatched", "<a><b></a>", { 0 }, TLR_E_PARSE, "line 1, column 9: mismatched tag" },
        { "truncated", "<a><b>x</b>", { 0 }, TLR_E_PARSE, "no element found" },
        { "empty", "", { 0 }, TLR_E_PARSE, "line 1" },
        { "not xml", "{\"json\": true}", { 0 }, TLR_E_PARSE, "line 1, column 1: not well-formed" },
        { "two roots", "<a/><b/>", { 0 }, TLR_E_PARSE, "junk after document element" },
        { "doctype", "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", { 0 }, TLR_E_PARSE,
          "DOCTYPE not allowed" },
        { "undefined entity", "<a>&x;</a>", { 0 }, TLR_E_PARSE, "undefined entity" },
        { "bad utf-8", "<a>\xff</a>", { 0 }, TLR_E_PARSE, "not well-formed" },
        { "too many nodes", "<a><b/><b/><b/></a>", { .max_nodes = 3 }, TLR_E_TOOBIG,
          "too many elements" },
        { "just enough nodes", "<a><b/><b/><b/></a>", { .max_nodes = 4 }, TLR_OK, NULL },
        { "too deep", "<a><b><c/></b></a>", { .max_depth = 2 }, TLR_E_TOOBIG, "nested too deeply" },
        { "too big", "<a>0123456789</a>", { .max_bytes = 10 }, TLR_E_TOOBIG,
          "17 bytes, more than the limit of 10" },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_xml_doc *d = NULL;
        char err[160] = "";
        int rc = tlr_xml_parse(t[i].in, strlen(t[i].in), &t[i].lim, &d, err, sizeof(err));

        if (rc != t[i].rc) {
            printf("FAIL %s: got %s (%s), want %s\n", t[i].what, tlr_errname(rc), err,
                   tlr_errname(t[i].rc));
            failures++;
        } else if (t[i].err != NULL && strstr(err, t[i].err) == NULL) {
            printf("FAIL %s: got message \"%s\", want it to contain \"%s\"\n", t[i].what, err,
                   t[i].err);
            failures++;
        } else if ((rc == TLR_OK) != (d != NULL)) {
            printf("FAIL %s: document %s on %s\n", t[i].what, d ? "written" : "missing",
                   tlr_errname(rc));
            failures++;
        }
        tlr_xml_free(d);
    }
    assert_int_equal(failures, 0);
}

static void test_paths_and_lists(void **state)
{
    const char *x =
        "<R xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\" xmlns:p=\"urn:p\">"
        " <set><item><k>a</k></item><other/><item><k>b</k></item><item><k>c&amp;d</k></item></set>"
        " <p:prefixed>yes</p:prefixed>"
        " <mixed>one<i/>two</mixed>"
        " <deep><x><Error><Code>E</Code></Error></x></deep>"
        "</R>";
    tlr_xml_doc *d = NULL;
    const tlr_xml_node *r, *it;
    char got[64] = "";
    size_t n = 0;

    (void)state;
    assert_int_equal(tlr_xml_parse(x, strlen(x), NULL, &d, NULL, 0), TLR_OK);
    r = tlr_xml_root(d);
    assert_string_equal(tlr_xml_name(r), "R");   /* namespace dropped */
    for (it = tlr_xml_find(r, "set/item"); it != NULL; it = tlr_xml_next_named(it)) {
        strcat(got, tlr_xml_find_text(it, "k"));
        strcat(got, ",");
        n++;
    }
    assert_int_equal(n, 3);
    assert_string_equal(got, "a,b,c&d,");   /* <other/> skipped, entity decoded */
    assert_int_equal(tlr_xml_nchildren(tlr_xml_find(r, "set")), 4);
    assert_string_equal(tlr_xml_find_text(r, "prefixed"), "yes");
    assert_string_equal(tlr_xml_find_text(r, "mixed"), "onetwo");
    assert_null(tlr_xml_find(r, "set/nope"));
    assert_null(tlr_xml_find_text(r, "nope"));
    assert_string_equal(tlr_xml_find_text(r, "set/other"), "");
    char *dup = tlr_xml_find_dup(r, "prefixed"), *none = tlr_xml_find_dup(r, "nope");
    assert_string_equal(dup, "yes");
    assert_string_equal(none, "");   /* absent: "", not NULL */
    free(dup);
    free(none);
    assert_ptr_equal(tlr_xml_find(r, ""), r);
    assert_string_equal(tlr_xml_find_text(tlr_xml_find_deep(r, "Error"), "Code"), "E");
    assert_null(tlr_xml_find(NULL, "set"));
    tlr_xml_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_paths_and_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
