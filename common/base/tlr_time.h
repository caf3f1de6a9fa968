/* tlr_time.h - clocks and time formatting.
 *
 * Logic that depends on time takes a tlr_clock so tests can inject a fake
 * one (Karpenter's batcher-with-injected-clock pattern).  Monotonic time
 * is for deadlines and durations; wall time only for timestamps shown to
 * people and written to Kubernetes.
 */
#ifndef TLR_TIME_H
#define TLR_TIME_H

#include <stddef.h>
#include <stdint.h>

typedef struct tlr_clock {
    int64_t (*mono_ms)(void *arg);   /* monotonic milliseconds */
    int64_t (*wall_ms)(void *arg);   /* Unix epoch milliseconds */
    void *arg;
} tlr_clock;

/* The real clocks. */
extern const tlr_clock tlr_clock_system;

int64_t tlr_mono_ms(void);
int64_t tlr_wall_ms(void);

/* RFC 3339 UTC with milliseconds, e.g. 2026-12-02T15:04:05.123Z.
 * buf must hold at least TLR_TIME_BUFLEN bytes. */
#define TLR_TIME_BUFLEN 32
void tlr_time_format_ms(int64_t wall_ms, char *buf);
/* RFC 3339 UTC seconds, e.g. 2026-12-02T15:04:05Z (Kubernetes style). */
void tlr_time_format_s(int64_t wall_ms, char *buf);
/* Parse RFC 3339 ("2026-12-02T15:04:05Z", fractions and offsets allowed). */
int  tlr_time_parse(const char *s, int64_t *wall_ms);

/* Go-style durations: "300ms", "1.5s", "2m", "1h30m", "720h".  "0" is 0. */
int  tlr_duration_parse(const char *s, int64_t *ms);
/* Format ms as a Go-style duration ("1m30s"); buf >= 32 bytes. */
void tlr_duration_format(int64_t ms, char *buf, size_t len);

/* An HTTP Retry-After value (RFC 9110 10.2.3): delay-seconds ("120") or
 * an IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT"), taken relative to
 * now_wall_ms.  On TLR_OK *delay_ms is >= 0 (a date in the past is 0);
 * TLR_E_PARSE for anything else, including the obsolete date forms. */
int  tlr_retry_after_parse(const char *value, int64_t now_wall_ms, int64_t *delay_ms);

#endif
