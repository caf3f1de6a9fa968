/* cron.c - 5-field cron schedules (cron.h). */
#include "cron.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tlr_err.h"

static const char *const months[] = { "jan", "feb", "mar", "apr", "may", "jun",
                                      "jul", "aug", "sep", "oct", "nov", "dec" };
static const char *const days[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat" };

/* One number or name at *s; advances *s. */
static bool number(const char **s, int names, int *out)
{
    const char *p = *s;
    if (isdigit((unsigned char)*p)) {
        long v = strtol(p, (char **)&p, 10);
        *out = (int)v;
        *s = p;
        return true;
    }
    const char *const *tab = names == 1 ? months : names == 2 ? days : NULL;
    int n = names == 1 ? 12 : 7;
    for (int i = 0; tab && i < n; i++)
        if (!strncasecmp(p, tab[i], 3)) {
            *out = names == 1 ? i + 1 : i;
            *s = p + 3;
            return true;
        }
    return false;
}

/* Parse one field into bits lo..hi. */
static bool field(const char *f, int lo, int hi, int names, uint64_t *bits, bool *star)
{
    *bits = 0;
    *star = false;
    const char *s = f;
    while (*s) {
        int a, b, step = 1;
        if (*s == '*') {
            a = lo;
            b = hi;
            s++;
            if (*s != '/')
                *star = true;
        } else {
            if (!number(&s, names, &a))
                return false;
            b = a;
            if (*s == '-') {
                s++;
                if (!number(&s, names, &b))
                    return false;
            }
        }
        if (*s == '/') {
            s++;
            if (!isdigit((unsigned char)*s))
                return false;
            step = (int)strtol(s, (char **)&s, 10);
            if (step < 1)
                return false;
            if (a == b && f[0] != '*')
                b = hi;   /* "5/10" = from 5 to the end */
        }
        if (a < lo || b > (names == 2 ? 7 : hi) || a > b)
            return false;
        for (int v = a; v <= b; v += step)
            *bits |= 1ULL << (names == 2 && v == 7 ? 0 : v);   /* 7 is Sunday too */
        if (*s == ',')
            s++;
        else if (*s)
            return false;
    }
    return *bits != 0;
}

int ds_cron_parse(const char *text, ds_cron *out, char *err, size_t len)
{
    static const struct { const char *m, *x; } macros[] = {
        { "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
        { "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" },   { "@midnight", "0 0 * * *" },
        { "@hourly", "0 * * * *" },
    };
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", text ? text : "");
    for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
        if (!strcasecmp(buf, macros[i].m))
            snprintf(buf, sizeof(buf), "%s", macros[i].x);
    char *f[6] = { 0 };
    int n = 0;
    for (char *tok = strtok(buf, " \t"); tok && n < 6; tok = strtok(NULL, " \t"))
        f[n++] = tok;
    if (n != 5) {
        snprintf(err, len, "schedule \"%s\": want 5 fields (minute hour day month weekday), got %d",
                 text ? text : "", n);
        return TLR_E_PARSE;
    }
    static const char *const names[] = { "minute", "hour", "day of month", "month", "day of week" };
    static const int lo[] = { 0, 0, 1, 1, 0 }, hi[] = { 59, 23, 31, 12, 6 }, nm[] = { 0, 0, 0, 1, 2 };
    uint64_t bits[5];
    bool star[5];
    for (int i = 0; i < 5; i++)
        if (!field(f[i], lo[i], hi[i], nm[i], &bits[i], &star[i])) {
            snprintf(err, len, "schedule \"%s\": bad %s field \"%s\"", text, names[i], f[i]);
            return TLR_E_PARSE;
        }
    out->minute = bits[0];
    out->hour = (uint32_t)bits[1];
    out->dom = (uint32_t)bits[2];
    out->month = (uint16_t)bits[3];
    out->dow = (uint8_t)bits[4];
    out->dom_star = star[2];
    out->dow_star = star[4];
    return TLR_OK;
}

static bool day_ok(const ds_cron *c, const struct tm *t)
{
    bool d = c->dom >> t->tm_mday & 1, w = c->dow >> t->tm_wday & 1;
    if (c->dom_star || c->dow_star)
        return d && w;
    return d || w;
}

int64_t ds_cron_next(const ds_cron *c, int64_t t_ms)
{
    time_t t = (time_t)(t_ms / 1000);
    t = t - t % 60 + 60;   /* the next whole minute strictly after t_ms */
    time_t limit = t + (time_t)5 * 366 * 86400;
    while (t < limit) {
        struct tm tm;
        gmtime_r(&t, &tm);
        if (!(c->month >> (tm.tm_mon + 1) & 1)) {
            tm.tm_mon++;
            tm.tm_mday = 1;
            tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
            t = timegm(&tm);
            continue;
        }
        if (!day_ok(c, &tm)) {
            tm.tm_mday++;
            tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
            t = timegm(&tm);
            continue;
        }
        if (!(c->hour >> tm.tm_hour & 1)) {
            tm.tm_hour++;
            tm.tm_min = tm.tm_sec = 0;
            t = timegm(&tm);
            continue;
        }
        if (!(c->minute >> tm.tm_min & 1)) {
            t += 60;
            continue;
        }
        return (int64_t)t * 1000;
    }
    return 0;
}

bool ds_cron_active(const ds_cron *c, int64_t duration_ms, int64_t now_ms)
{
    int64_t next = ds_cron_next(c, now_ms - duration_ms);
    return next && next <= now_ms;
}
