/* time.c - clocks, RFC 3339 and Go-style durations. */
#include "tlr_time.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlr_err.h"

int64_t tlr_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tlr_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t sys_mono(void *arg) { (void)arg; return tlr_mono_ms(); }
static int64_t sys_wall(void *arg) { (void)arg; return tlr_wall_ms(); }

const tlr_clock tlr_clock_system = { sys_mono, sys_wall, NULL };

static void fmt(int64_t wall_ms, char *buf, int with_ms)
{
    time_t s = (time_t)(wall_ms / 1000);
    int ms = (int)(wall_ms % 1000);
    if (ms < 0) {
        ms += 1000;
        s -= 1;
    }
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(buf, TLR_TIME_BUFLEN, "%Y-%m-%dT%H:%M:%S", &tm);
    if (with_ms)
        snprintf(buf + n, TLR_TIME_BUFLEN - n, ".%03dZ", ms);
    else
        snprintf(buf + n, TLR_TIME_BUFLEN - n, "Z");
}

void tlr_time_format_ms(int64_t wall_ms, char *buf) { fmt(wall_ms, buf, 1); }
void tlr_time_format_s(int64_t wall_ms, char *buf) { fmt(wall_ms, buf, 0); }

int tlr_time_parse(const char *s, int64_t *wall_ms)
{
    struct tm tm = { 0 };
    int n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
        return TLR_E_PARSE;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return TLR_E_RANGE;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    const char *p = s + n;
    int64_t ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (*p - '0');
        if (digits == 0)
            return TLR_E_PARSE;
        for (; digits < 3; digits++)
            ms *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm, k;
        if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &k) != 2)
            return TLR_E_PARSE;
        off = (hh * 60 + mm) * 60 * (*p == '-' ? -1 : 1);
        p += 1 + k;
    } else {
        return TLR_E_PARSE;
    }
    if (*p)
        return TLR_E_PARSE;
    *wall_ms = ((int64_t)timegm(&tm) - off) * 1000 + ms;
    return TLR_OK;
}

int tlr_duration_parse(const char *s, int64_t *ms)
{
    static const struct { const char *u; double ms; } units[] = {
        { "ns", 1e-6 }, { "us", 1e-3 }, { "µs", 1e-3 }, { "ms", 1 },
        { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
    };
    if (!s || !*s)
        return TLR_E_PARSE;
    const char *p = s;
    int neg = 0;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (!strcmp(p, "0")) {
        *ms = 0;
        return TLR_OK;
    }
    double total = 0;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p) && *p != '.')
            return TLR_E_PARSE;
        double v = strtod(p, &end);
        if (end == p)
            return TLR_E_PARSE;
        p = end;
        size_t best = 0, bi = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t l = strlen(units[i].u);
            if (!strncmp(p, units[i].u, l) && l > best) {
                best = l;
                bi = i;
            }
        }
        if (!best)
            return TLR_E_PARSE;   /* a unit is required, as in Go */
        total += v * units[bi].ms;
        p += best;
        if (total > 9.2e15)
            return TLR_E_RANGE;
    }
    *ms = (int64_t)llround(neg ? -total : total);
    return TLR_OK;
}

void tlr_duration_format(int64_t ms, char *buf, size_t len)
{
    if (ms == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    const char *sign = ms < 0 ? "-" : "";
    uint64_t u = ms < 0 ? (uint64_t)(-(ms + 1)) + 1 : (uint64_t)ms;
    if (u < 1000) {
        snprintf(buf, len, "%s%llums", sign, (unsigned long long)u);
        return;
    }
    uint64_t h = u / 3600000, m = (u / 60000) % 60, s = (u / 1000) % 60, r = u % 1000;
    char sec[24];
    if (r) {
        /* Go prints the shortest fraction: 2.5s, not 2.500s. */
        int digits = 3;
        while (r % 10 == 0) {
            r /= 10;
            digits--;
        }
        snprintf(sec, sizeof(sec), "%llu.%0*llus", (unsigned long long)s, digits,
                 (unsigned long long)r);
    } else
        snprintf(sec, sizeof(sec), "%llus", (unsigned long long)s);
    if (h)
        snprintf(buf, len, "%s%lluh%llum%s", sign, (unsigned long long)h, (unsigned long long)m, sec);
    else if (m)
        snprintf(buf, len, "%s%llum%s", sign, (unsigned long long)m, sec);
    else
        snprintf(buf, len, "%s%s", sign, sec);
}

int tlr_retry_after_parse(const char *v, int64_t now_wall_ms, int64_t *delay_ms)
{
    static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
    if (v == NULL)
        return TLR_E_PARSE;
    while (*v == ' ' || *v == '\t')
        v++;
    if (isdigit((unsigned char)*v)) {
        int64_t s = 0;
        for (; isdigit((unsigned char)*v); v++) {
            if (s > INT64_MAX / 10000)   /* absurd: saturate, the caller caps it */
                s = INT64_MAX / 10000;
            else
                s = s * 10 + (*v - '0');
        }
        while (*v == ' ' || *v == '\t')
            v++;
        if (*v != '\0')
            return TLR_E_PARSE;
        *delay_ms = s * 1000;
        return TLR_OK;
    }
    /* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
    char wd[4], mon[4], zone[4];
    struct tm tm = { 0 };
    int n = 0;
    if (sscanf(v, "%3[A-Za-z], %2d %3s %4d %2d:%2d:%2d %3s%n", wd, &tm.tm_mday, mon,
               &tm.tm_year, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, zone, &n) != 8 ||
        strlen(wd) != 3 || strcmp(zone, "GMT") != 0)
        return TLR_E_PARSE;
    for (v += n; *v == ' ' || *v == '\t'; v++)
        ;
    if (*v != '\0')
        return TLR_E_PARSE;
    tm.tm_mon = -1;
    for (int i = 0; i < 12; i++)
        if (strcmp(mon, months[i]) == 0)
            tm.tm_mon = i;
    if (tm.tm_mon < 0 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60 || tm.tm_year < 1970)
        return TLR_E_PARSE;
    tm.tm_year -= 1900;
    int64_t at = (int64_t)timegm(&tm) * 1000;
    *delay_ms = at > now_wall_ms ? at - now_wall_ms : 0;
    return TLR_OK;
}
