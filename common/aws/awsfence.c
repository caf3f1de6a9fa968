/* awsfence.c - fenced transfers and sleeps (tlr_awsfence.h). */
#include "tlr_awsfence.h"

#include <stdlib.h>
#include <time.h>

#include "tlr_time.h"

static void nap(int64_t ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

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

bool tlr_aws_sleep_fenced(const tlr_fence *f, int64_t ms)
{
    int64_t end = tlr_mono_ms() + ms;
    for (;;) {
        int64_t now = tlr_mono_ms();
        if (now >= end)
            return true;
        int64_t left = tlr_fence_left_ms(f, now);
        if (left <= 0)
            return false;
        nap(end - now < left ? end - now : left);
    }
}
