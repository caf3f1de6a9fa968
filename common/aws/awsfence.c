/* awsfence.c - fenced transfers (tlr_awsfence.h); fenced retry sleeps are in retry.c. */
#include "tlr_awsfence.h"

#include <stdlib.h>

#include "tlr_time.h"

CURLcode tlr_aws_perform_fenced(CURL *h, CURLM **multi, const tlr_fence *f, bool *cut)
{
    *cut = false;
    if (!f)
        return curl_easy_perform(h);
    if (!*multi && !(*multi = curl_multi_init()))
        abort();
    CURLM *m = *multi;
    if (curl_multi_add_handle(m, h) != CURLM_OK)
        abort();
    CURLcode res = CURLE_OK;
    for (;;) {
        int running = 0, queued = 0;
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            res = CURLE_FAILED_INIT;
            break;
        }
        CURLMsg *msg = curl_multi_info_read(m, &queued);
        if (msg && msg->msg == CURLMSG_DONE) {
            res = msg->data.result;
            break;
        }
        int64_t left = tlr_fence_left_ms(f, tlr_mono_ms());
        if (left <= 0) {
            *cut = true;
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        /* Wake at the deadline at the latest, to look at it again. */
        curl_multi_poll(m, NULL, 0, (int)(left < 1000 ? left : 1000), NULL);
    }
    curl_multi_remove_handle(m, h);
    return res;
}
