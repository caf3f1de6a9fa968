/* ks_module.h - how a kubesim subsystem plugs into main.c.
 *
 * The API server itself is wired by main.c.  Each other subsystem
 * (scheduler, workload controllers, kubelet simulator) declares one ks_module in its own file: its settings table
 * (offsets relative to ITS OWN config struct, of cfg_size bytes), and a
 * start/stop pair.  main.c lists the modules in one array, merges their
 * settings into one tlr_conf table (rebasing each offset onto the
 * module's slice of one config block), loads flags/env/file, and calls
 * start in order (stop in reverse) with the module's config.
 *
 *   // sched.c
 *   typedef struct sched_cfg { int64_t period_ms; } sched_cfg;
 *   static const tlr_setting sched_settings[] = {
 *       { .name = "sched-period", .env = "KUBESIM_SCHED_PERIOD",
 *         .type = TLR_SET_DURATION, .offset = offsetof(sched_cfg, period_ms),
 *         .def = "100ms", .help = "how often the scheduler runs" },
 *   };
 *   static int sched_start(ks_store *s, const void *cfg, tlr_logger *lg, void **state);
 *   const ks_module ks_sched_module = {
 *       .name = "scheduler", .cfg_size = sizeof(sched_cfg),
 *       .settings = sched_settings, .nsettings = 2 ..., .start = sched_start,
 *   };
 *
 *   // main.c: add one line to `modules[]`:  &ks_sched_module,
 *
 * Setting names must be unique across modules (prefix them: sched-,
 * kubelet-).  start may register controllers with ks_store_add_controller;
 * they are joined before stop() runs.
 */
#ifndef KS_MODULE_H
#define KS_MODULE_H

#include <stddef.h>

#include "ks_store.h"
#include "tlr_conf.h"
#include "tlr_log.h"

typedef struct ks_module {
    const char *name;
    size_t cfg_size;                 /* bytes of the module's config struct */
    const tlr_setting *settings;     /* offsets into that struct; may be NULL */
    size_t nsettings;
    /* cfg: borrowed, loaded, lives until stop.  *state: the module's own,
     * handed to stop.  Non-zero return aborts start-up (logged by main). */
    int  (*start)(ks_store *s, const void *cfg, tlr_logger *lg, void **state);
    void (*stop)(void *state);       /* may be NULL */
} ks_module;

#endif
