/* tlr_awsfence.h - AWS calls that end with the Lease (tlr_fence.h).
 *
 * Shared by the Query and JSON clients.  A fenced transfer runs on a curl
 * multi handle and wakes at the fence's current deadline: when the fence
 * has moved on (the Lease was renewed meanwhile) the call goes on; when it
 * has run out the transfer is dropped there and then.  A call that started
 * while leading therefore never outlives the leadership, and one that
 * runs long while the Lease keeps being renewed is not cut for nothing.
 */
#ifndef TLR_AWSFENCE_H
#define TLR_AWSFENCE_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "tlr_fence.h"

/* curl_easy_perform(h), cut when f runs out (then *cut = true and
 * CURLE_ABORTED_BY_CALLBACK).  f NULL: a plain curl_easy_perform.  *multi
 * is created on first use and owned by the caller (curl_multi_cleanup). */
CURLcode tlr_aws_perform_fenced(CURL *h, CURLM **multi, const tlr_fence *f, bool *cut);

#endif
