/* wdec_fuzz.c - libFuzzer target for the watch-stream decoder
 * (tlr_kube_wdec_feed), which reads what an API server -- or whatever
 * answers in its place -- streams for minutes.
 *
 * The first byte picks the event ceiling and the chunk size; the rest is
 * the stream.  It is decoded twice: in one piece, and in chunks of that
 * size (a watch response arrives cut anywhere).  Properties beyond "no
 * crash, no leak, no UB":
 *   - when the whole decode succeeds, the piecewise one does too and
 *     delivers the same events (type and object) in the same order;
 *     when it fails, the piecewise one delivered the same events first;
 *   - after a failure the decoder refuses further input;
 *   - without a failure, the bytes pending are the same.
 * The stream is ended with a newline, as every event of a watch response
 * is.  When the whole decode fails, the piecewise one need only agree up
 * to that failure: json-c 0.16 fed in pieces misreads some malformed
 * numbers -- "[1" then "-2," gives 1, "82" then "-0" or "--." leave it
 * waiting until the event ceiling -- where fed at once it refuses them
 * (found by wdec_fuzz).  An API server sends valid JSON; a hostile stream
 * gains nothing it could not send as valid JSON, and the ceiling bounds
 * what waiting costs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int record(void *arg, tlr_kube_event_type t, json_object *obj)
{
    tlr_buf *log = arg;
    const char *name = tlr_kube_event_name(t);
    const char *js = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
    if (tlr_buf_add(log, name, strlen(name)) != TLR_OK || tlr_buf_add(log, " ", 1) != TLR_OK ||
        tlr_buf_add(log, js, strlen(js)) != TLR_OK || tlr_buf_add(log, "\n", 1) != TLR_OK)
        abort();
    return TLR_OK;
}

/* Feed data in chunks of chunk bytes (0: all at once); the decoder's
 * answer: OK, or the first error. */
static int decode(const char *data, size_t size, size_t max, size_t chunk, tlr_buf *log,
                  size_t *pending)
{
    tlr_kube_wdec *d = NULL;
    int rc = TLR_OK;

    if (tlr_kube_wdec_create(max, &d) != TLR_OK)
        abort();
    if (chunk == 0)
        chunk = size;
    for (size_t off = 0; off < size && rc == TLR_OK; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        rc = tlr_kube_wdec_feed(d, data + off, n, record, log);
    }
    if (rc != TLR_OK && tlr_kube_wdec_feed(d, "{}", 2, record, log) == TLR_OK)
        abort();   /* a broken decoder took more input */
    *pending = tlr_kube_wdec_pending(d);
    tlr_kube_wdec_free(d);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t maxes[] = { 0, 64, 512, 4096 };
    tlr_buf whole, cut;
    size_t pw = 0, pc = 0;

    if (size < 1 || size > 1 << 20)
        return 0;
    size_t max = maxes[data[0] & 3];
    size_t chunk = 1 + (data[0] >> 2);   /* 1..64 */
    char *s = malloc(size);
    if (s == NULL)
        abort();
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\n';

    tlr_buf_init(&whole, 64u << 20);
    tlr_buf_init(&cut, 64u << 20);
    int rw = decode(s, size, max, 0, &whole, &pw);
    int rcut = decode(s, size, max, chunk, &cut, &pc);
    if (rw == TLR_OK) {
        if (rcut != TLR_OK || pw != pc || whole.len != cut.len ||
            (whole.len && memcmp(whole.data, cut.data, whole.len) != 0))
            abort();   /* a valid stream read differently in pieces */
    } else if (whole.len > cut.len ||
               (whole.len && memcmp(whole.data, cut.data, whole.len) != 0)) {
        abort();   /* the events before the failure differ */
    }
    tlr_buf_free(&whole);
    tlr_buf_free(&cut);
    free(s);
    return 0;
}
