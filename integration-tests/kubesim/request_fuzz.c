/* request_fuzz.c - libFuzzer target: one HTTP request through the API
 * dispatcher, no sockets.
 *
 * Input: "METHOD PATH[?QUERY]\nCONTENT-TYPE\nBODY".  The query goes
 * through ks_query_parse, everything through ks_api_handle against one
 * store that lives for the whole run; watch responses are pulled once
 * without blocking.  Any crash, leak or sanitizer report is a bug: bad
 * input must only ever produce a Status.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ks_api.h"
#include "ks_store.h"
#include "tlr_alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ks_store *store;
static ks_api *api;

static void fuzz_init(void)
{
    if (store)
        return;
    ks_store_create(&(ks_store_opts){ .history = 1024 }, &store);
    ks_api_create(&(ks_api_opts){ .store = store, .token = NULL, .bookmark_ms = 10 }, &api);
    ks_store_create_text(store, KS_NODE, NULL,
                         "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"a\":\"b\"}}}", NULL, NULL);
    ks_store_create_text(store, KS_POD, "default",
                         "{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"containers\":[{\"name\":"
                         "\"c\"}]}}",
                         NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    char *in = tlr_malloc(size + 1);
    memcpy(in, data, size);
    in[size] = 0;
    char *line1 = in, *ct = NULL, *body = NULL;
    char *nl = memchr(in, '\n', size);
    if (nl) {
        *nl = 0;
        ct = nl + 1;
        char *nl2 = memchr(ct, '\n', size - (size_t)(ct - in));
        if (nl2) {
            *nl2 = 0;
            body = nl2 + 1;
        }
    }
    char *sp = strchr(line1, ' ');
    const char *method = "GET", *target = line1;
    if (sp) {
        *sp = 0;
        method = line1;
        target = sp + 1;
    }
    char *q = strchr(target, '?');
    ks_param *params = NULL;
    size_t np = 0;
    if (q)
        *q++ = 0;
    if (q && ks_query_parse(q, &params, &np))
        np = 0;
    ks_request r = {
        .method = method,
        .path = target,
        .params = params,
        .nparams = np,
        .accept = ct && strstr(ct, "Table") ? "application/json;as=Table;v=v1;g=meta.k8s.io" : NULL,
        .content_type = ct,
        .body = body,
        .body_len = body ? size - (size_t)(body - in) : 0,
    };
    ks_response res;
    ks_api_handle(api, &r, &res);
    if (res.stream) {
        char buf[4096];
        for (int i = 0; i < 4 && ks_stream_read_timed(res.stream, buf, sizeof(buf), 0) > 0; i++)
            ;
    }
    ks_response_free(&res);
    ks_params_free(params, np);
    free(in);
    return 0;
}
