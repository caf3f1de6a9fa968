/* aws_retry.h - what query.c and awsjson.c share about retrying a call:
 * the backoff delay, Retry-After, the caller's deadline (tlr_cancel.h)
 * and a sleep that shutdown interrupts.  Internal to common/aws.
 */
#ifndef AWS_RETRY_H
#define AWS_RETRY_H

#include <stddef.h>
#include <stdint.h>

#include "tlr_fence.h"

/* The longest Retry-After we obey; a longer one is cut to this (the
 * caller's deadline may cut it further). */
#define AWS_RETRY_AFTER_CAP_MS 60000

/* Full-jitter backoff before retry number attempt+1 (attempt counts from
 * 0): random(0, min(cap_ms, base_ms * 2^attempt)).  *rng is xorshift
 * state, never 0. */
int64_t aws_backoff_ms(uint64_t *rng, int attempt, int base_ms, int cap_ms);

/* The curl timeout for an attempt: timeout_ms cut at the deadline.  On
 * TLR_OK *ms is > 0 and *cut says whether the deadline cut it; TLR_E_TIMEOUT
 * when the deadline has passed (no attempt may start). */
int aws_attempt_timeout(int timeout_ms, long *ms, int *cut);

/* Sleep before a retry: delay_ms, or retry_after_ms when that is longer
 * (-1 = none; capped at AWS_RETRY_AFTER_CAP_MS).  TLR_OK when the retry may
 * go ahead; TLR_E_TIMEOUT at once when it would start at or after the
 * thread's deadline; TLR_E_CANCELED when shutdown is requested or when the
 * fence (borrowed; NULL = unfenced) runs out while sleeping -- a Lease
 * renewed meanwhile moves the fence on and the sleep goes on.  *slept_ms
 * (may be NULL) is the delay chosen. */
int aws_retry_sleep(int64_t delay_ms, int64_t retry_after_ms, const tlr_fence *fence,
                    int64_t *slept_ms);

/* Say in msg (n bytes) why a retry sleep ended the call: src is what
 * aws_retry_sleep() returned (TLR_E_TIMEOUT: the deadline; TLR_E_CANCELED:
 * the fence ran out, or shutdown).  msg holds the last failure on entry;
 * it is kept in parentheses. */
void aws_retry_stopped_message(char *msg, size_t n, const char *what, int src,
                               const tlr_fence *fence);

/* Fill msg with "<what>: deadline passed (<detail>)" for a call cut short. */
void aws_deadline_message(char *msg, size_t n, const char *what, const char *detail);

/* A Retry-After header line ("Retry-After: 5\r\n"): on a match sets
 * *ms (>= 0) and returns 1; 0 for any other header. */
int aws_retry_after_header(const char *line, size_t n, int64_t *ms);

#endif
