/* ctlprogress.h - progress of a long tailorctl command, on stderr.
 *
 * A step that ends within 0.5 s (terminal) or 2 s (elsewhere) shows
 * nothing, so quick commands stay quiet.  Past that, on a terminal one
 * line is redrawn in place (at most 10 times a second) and ends with the
 * step's result; elsewhere (a CI log, a pipe) a line is written every 2 s
 * while it runs and when it ends; with json set those lines are JSON
 * objects
 *   {"progress":{"command":"patch-check","step":"listing pods","done":1200,
 *    "total":0,"elapsed_ms":2010,"finished":false}}
 * so -o json stays machine-readable on both streams (stdout carries only
 * the result).  TAILORCTL_PROGRESS=off silences it; =tty forces the
 * terminal form; TAILORCTL_PROGRESS_AFTER_MS replaces the quiet time. */
#ifndef CTLPROGRESS_H
#define CTLPROGRESS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ctl_progress ctl_progress;

/* cmd (borrowed, must outlive p): "patch-check".  New, owned:
 * ctl_progress_free. */
ctl_progress *ctl_progress_new(const char *cmd, bool json);
void ctl_progress_free(ctl_progress *p);   /* NULL is fine; ends an open step */

/* A new step (the previous one ends); total 0 = unknown. */
void ctl_progress_step(ctl_progress *p, const char *step, size_t total);
/* done items of the step so far; cheap to call for every item. */
void ctl_progress_set(ctl_progress *p, size_t done);
/* The step ends; summary (may be NULL) says how. */
void ctl_progress_end(ctl_progress *p, const char *summary);

#endif
