/* ctlprogress.c - progress lines on stderr (ctlprogress.h). */
#include "ctlprogress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_time.h"

#define TTY_EVERY_MS  100
#define LOG_EVERY_MS  2000
/* A step shorter than this shows nothing: quick commands stay quiet. */
#define TTY_AFTER_MS  500
#define LOG_AFTER_MS  2000

enum { PG_OFF, PG_TTY, PG_LINES, PG_JSON };

struct ctl_progress {
    const char *cmd;
    int mode;
    char step[128];
    bool open, shown;
    int64_t after_ms;   /* -1: the mode's default */
    size_t done, total;
    int64_t t0, last;
};

ctl_progress *ctl_progress_new(const char *cmd, bool json)
{
    ctl_progress *p = tlr_calloc(1, sizeof(*p));
    const char *env = getenv("TAILORCTL_PROGRESS");
    const char *after = getenv("TAILORCTL_PROGRESS_AFTER_MS");
    p->cmd = cmd;
    p->after_ms = after && *after ? strtoll(after, NULL, 10) : -1;
    if (env && !strcmp(env, "off"))
        p->mode = PG_OFF;
    else if ((env && !strcmp(env, "tty")) || isatty(STDERR_FILENO))
        p->mode = PG_TTY;
    else
        p->mode = json ? PG_JSON : PG_LINES;
    return p;
}

static void pg_emit(ctl_progress *p, bool finished, const char *summary)
{
    int64_t el = tlr_mono_ms() - p->t0;
    char count[64] = "";
    if (p->total)
        snprintf(count, sizeof(count), ": %zu/%zu", p->done, p->total);
    else if (p->done)
        snprintf(count, sizeof(count), ": %zu", p->done);
    switch (p->mode) {
    case PG_TTY:
        fprintf(stderr, "\r\033[Ktailorctl %s: %s%s (%.1fs)%s%s%s", p->cmd, p->step, count,
                (double)el / 1000.0, summary ? ": " : "", summary ? summary : "",
                finished ? "\n" : "");
        break;
    case PG_LINES:
        fprintf(stderr, "tailorctl %s: %s%s (%.1fs)%s%s\n", p->cmd, p->step, count,
                (double)el / 1000.0, summary ? ": " : finished ? ": done" : "",
                summary ? summary : "");
        break;
    case PG_JSON: {
        tlr_buf b;
        tlr_buf_init(&b, 4096);
        tlr_buf_adds(&b, "{\"progress\":{\"command\":");
        tlr_buf_add_json_str(&b, p->cmd);
        tlr_buf_adds(&b, ",\"step\":");
        tlr_buf_add_json_str(&b, p->step);
        tlr_buf_printf(&b, ",\"done\":%zu,\"total\":%zu,\"elapsed_ms\":%lld,\"finished\":%s",
                       p->done, p->total, (long long)el, finished ? "true" : "false");
        if (summary) {
            tlr_buf_adds(&b, ",\"summary\":");
            tlr_buf_add_json_str(&b, summary);
        }
        tlr_buf_adds(&b, "}}\n");
        fputs(tlr_buf_str(&b), stderr);
        tlr_buf_free(&b);
        break;
    }
    default:
        return;
    }
    fflush(stderr);
}

void ctl_progress_step(ctl_progress *p, const char *step, size_t total)
{
    if (!p)
        return;
    if (p->open)
        ctl_progress_end(p, NULL);
    snprintf(p->step, sizeof(p->step), "%s", step);
    p->open = true;
    p->shown = false;
    p->done = 0;
    p->total = total;
    p->t0 = p->last = tlr_mono_ms();
}

static int64_t pg_after(const ctl_progress *p)
{
    if (p->after_ms >= 0)
        return p->after_ms;
    return p->mode == PG_TTY ? TTY_AFTER_MS : LOG_AFTER_MS;
}

void ctl_progress_set(ctl_progress *p, size_t done)
{
    if (!p || !p->open)
        return;
    p->done = done;
    int64_t now = tlr_mono_ms();
    if (!p->shown && now - p->t0 < pg_after(p))
        return;
    if (p->shown && now - p->last < (p->mode == PG_TTY ? TTY_EVERY_MS : LOG_EVERY_MS))
        return;
    p->last = now;
    p->shown = true;
    pg_emit(p, false, NULL);
}

void ctl_progress_end(ctl_progress *p, const char *summary)
{
    if (!p || !p->open)
        return;
    p->open = false;
    if (p->shown || tlr_mono_ms() - p->t0 >= pg_after(p))
        pg_emit(p, true, summary);
}

void ctl_progress_free(ctl_progress *p)
{
    if (!p)
        return;
    ctl_progress_end(p, NULL);
    free(p);
}
