/* retry.c - backoff, Retry-After, deadline and cancellable sleep shared
 * by the AWS protocol clients (aws_retry.h). */
#include "aws_retry.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_time.h"

int64_t aws_backoff_ms(uint64_t *rng, int attempt, int base_ms, int cap_ms)
{
    int64_t ceiling = (int64_t)base_ms << (attempt < 20 ? attempt : 20);

    if (ceiling > cap_ms)
        ceiling = cap_ms;
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    return (int64_t)(*rng % (uint64_t)(ceiling + 1));
}

int aws_attempt_timeout(int timeout_ms, long *ms, int *cut)
{
    int64_t left = tlr_deadline_left_ms();

    if (left <= 0)
        return TLR_E_TIMEOUT;
    *cut = left < timeout_ms;
    *ms = (long)(*cut ? left : timeout_ms);
    return TLR_OK;
}

int aws_retry_sleep(int64_t delay_ms, int64_t retry_after_ms, const tlr_fence *fence,
                    int64_t *slept_ms)
{
    if (retry_after_ms > AWS_RETRY_AFTER_CAP_MS)
        retry_after_ms = AWS_RETRY_AFTER_CAP_MS;
    if (retry_after_ms > delay_ms)
        delay_ms = retry_after_ms;
    if (slept_ms != NULL)
        *slept_ms = delay_ms;
    if (tlr_shutdown_requested())
        return TLR_E_CANCELED;
    /* Sleeping up to the deadline only to give up then helps nobody. */
    if (tlr_deadline_left_ms() <= delay_ms)
        return TLR_E_TIMEOUT;
    int64_t end = tlr_mono_ms() + delay_ms;
    for (;;) {
        int64_t now = tlr_mono_ms();
        if (now >= end)
            return TLR_OK;
        int64_t left = tlr_fence_left_ms(fence, now);
        if (left <= 0)
            return TLR_E_CANCELED;
        int rc = tlr_sleep_until(end - now < left ? end : now + left);
        if (rc != TLR_OK)
            return rc;
    }
}

void aws_retry_stopped_message(char *msg, size_t n, const char *what, int src,
                               const tlr_fence *fence)
{
    char last[512];

    snprintf(last, sizeof(last), "%s", msg);
    if (src == TLR_E_TIMEOUT)
        aws_deadline_message(msg, n, what, last);
    else if (!tlr_fence_valid(fence, tlr_mono_ms()))
        snprintf(msg, n, "%s not retried: this replica's Lease ended (%.300s)", what, last);
    else
        snprintf(msg, n, "%s: shutting down (%.300s)", what, last);
}

void aws_deadline_message(char *msg, size_t n, const char *what, const char *detail)
{
    snprintf(msg, n, "%s: deadline passed (%s)", what, detail);
}

int aws_retry_after_header(const char *line, size_t n, int64_t *ms)
{
    static const char name[] = "retry-after:";
    char v[128];

    if (n <= sizeof(name) - 1 || strncasecmp(line, name, sizeof(name) - 1) != 0)
        return 0;
    line += sizeof(name) - 1;
    n -= sizeof(name) - 1;
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
        n--;
    if (n >= sizeof(v))
        return 0;
    memcpy(v, line, n);
    v[n] = '\0';
    return tlr_retry_after_parse(v, tlr_wall_ms(), ms) == TLR_OK;
}
