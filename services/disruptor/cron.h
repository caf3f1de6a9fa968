/* cron.h - standard 5-field cron schedules (UTC), for disruption budget
 * windows.
 *
 * minute hour day-of-month month day-of-week, each a list of `*`, `n`,
 * `a-b`, with an optional `/step` (`*\/15`, `1-10/2`); months and weekdays
 * also by name (jan..dec, sun..sat; 7 is Sunday too); and the macros
 * @yearly @annually @monthly @weekly @daily @midnight @hourly.  When both
 * day fields are restricted, a day matches either (as cron and Karpenter's
 * robfig/cron do).
 */
#ifndef DS_CRON_H
#define DS_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ds_cron {
    uint64_t minute;     /* bit m: 0..59 */
    uint32_t hour;       /* 0..23 */
    uint32_t dom;        /* 1..31 */
    uint16_t month;      /* 1..12 */
    uint8_t dow;         /* 0..6, Sunday 0 */
    bool dom_star, dow_star;
} ds_cron;

/* Parse text.  TLR_OK, or TLR_E_PARSE with err (len bytes) saying which
 * field is wrong. */
int ds_cron_parse(const char *text, ds_cron *out, char *err, size_t len);
/* The first minute strictly after t_ms (Unix ms) the schedule fires at;
 * 0 when none within 5 years (e.g. February 30). */
int64_t ds_cron_next(const ds_cron *c, int64_t t_ms);
/* Karpenter's Budget.IsActive: the schedule fired within the last
 * duration_ms, i.e. next(now - duration) <= now. */
bool ds_cron_active(const ds_cron *c, int64_t duration_ms, int64_t now_ms);

#endif
