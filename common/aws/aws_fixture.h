/* aws_fixture.h - recorded AWS answers for the aws unit tests only
 * (header-only, like aws_testsrv.h): common/aws/testdata/NAME. */
#ifndef AWS_FIXTURE_H
#define AWS_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_xml.h"

/* testdata/name beside this header, NUL-terminated; new, owned (free), or
 * NULL with a FAIL line when it cannot be read. */
static inline char *aws_fixture(const char *name)
{
    const char *src = __FILE__, *slash = strrchr(src, '/');
    char path[4096];
    snprintf(path, sizeof(path), "%.*s/testdata/%s", slash ? (int)(slash - src) : 1,
             slash ? src : ".", name);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        printf("FAIL: cannot open fixture %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = tlr_malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* The fixture parsed as XML (the test fails when it is not); owned:
 * tlr_xml_free. */
static inline tlr_xml_doc *aws_fixture_xml(const char *name)
{
    char *text = aws_fixture(name);
    tlr_xml_doc *d = NULL;
    assert_non_null(text);
    assert_int_equal(tlr_xml_parse(text, strlen(text), NULL, &d, NULL, 0), TLR_OK);
    free(text);
    return d;
}

#endif
