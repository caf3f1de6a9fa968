/* tlr_cancel.h - how a blocking call learns it must stop: the process is
 * shutting down, or the caller's deadline has passed.
 *
 * Shutdown is process-wide and latched.  tlr_service sets it from its
 * SIGTERM/SIGINT path (tlr_shutdown_request()); a SIGTERM or SIGINT that
 * is still pending -- blocked in every thread, not yet read by the
 * service loop's signalfd -- counts as well, so a thread sleeping inside
 * a call the loop thread itself made wakes before the loop sees the
 * signal.  tlr_sleep_until() waits on both and returns TLR_E_CANCELED
 * within milliseconds of either.
 *
 * A deadline is per thread: the caller sets it around the calls it wants
 * bounded and clears it afterwards.  It is a monotonic time (tlr_mono_ms
 * clock), so it is immune to wall-clock jumps.  Who honours it:
 *   - AWS calls (tlr_awsquery.h, tlr_awsjson.h): no attempt starts after
 *     it, each attempt's curl timeout and each retry sleep are cut at it,
 *     and a call cut short returns TLR_E_TIMEOUT with a message saying the
 *     deadline passed.
 *   - The launcher's fork/join (services/launcher/par.c) copies the
 *     caller's deadline into its worker threads.
 * Other blocking calls ignore it.  Typical use -- bound a pass by the
 * remaining leader lease:
 *
 *     tlr_deadline_set(lease_expires_mono_ms - safety_ms);
 *     rc = do_the_pass();              // every AWS call inside is bounded
 *     tlr_deadline_clear();
 *
 * Setting a deadline replaces the thread's previous one; a nested caller
 * that wants the tighter of two saves tlr_deadline_get() and restores it.
 */
#ifndef TLR_CANCEL_H
#define TLR_CANCEL_H

#include <stdbool.h>
#include <stdint.h>

/* Latch process shutdown and wake every tlr_sleep_until().  Thread-safe
 * and async-signal-safe; idempotent. */
void tlr_shutdown_request(void);
/* True once shutdown was requested, or while a SIGTERM/SIGINT is pending
 * for the process (blocked and not yet read); thread-safe. */
bool tlr_shutdown_requested(void);

/* This thread's deadline, a tlr_mono_ms() time; 0 = none. */
void    tlr_deadline_set(int64_t mono_ms);
void    tlr_deadline_clear(void);
int64_t tlr_deadline_get(void);
/* Milliseconds left before this thread's deadline (<= 0 once passed);
 * INT64_MAX when there is none. */
int64_t tlr_deadline_left_ms(void);
/* ms capped at what is left before the deadline (never below 0). */
int64_t tlr_deadline_cap_ms(int64_t ms);

/* Sleep until the monotonic time wake_mono_ms.  TLR_OK once it is
 * reached, TLR_E_CANCELED as soon as shutdown is requested (also when it
 * already was).  The deadline is not consulted: cap wake_mono_ms first. */
int tlr_sleep_until(int64_t wake_mono_ms);

#endif
