/* sched_module.c - the scheduler and pod lifecycle as a kubesim module:
 * settings and two store controllers (see sched.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sched.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

typedef struct sched_cfg {
    int64_t period_ms;
    int64_t start_delay_ms;
} sched_cfg;

static const tlr_setting sched_settings[] = {
    { .name = "sched-period", .env = "KUBESIM_SCHED_PERIOD", .type = TLR_SET_DURATION,
      .offset = offsetof(sched_cfg, period_ms), .def = "1s", .min = 10, .max = 3600000,
      .help = "run the scheduler at least this often (it also runs soon after pods or "
              "nodes change)" },
    { .name = "pod-start-delay", .env = "KUBESIM_POD_START_DELAY", .type = TLR_SET_DURATION,
      .offset = offsetof(sched_cfg, start_delay_ms), .def = "0s", .min = 0, .max = 3600000,
      .help = "how long a pod bound to a Ready node stays Pending before it runs and is "
              "Ready" },
};

typedef struct sched_state {
    ks_sched *sched;
    ks_podlife *life;
} sched_state;

static void sched_run(ks_store *s, void *arg)
{
    (void)s;
    ks_sched_pass(arg, NULL);
}

static void life_run(ks_store *s, void *arg)
{
    (void)s;
    ks_podlife_pass(arg);
}

static void sched_stop(void *state)
{
    sched_state *st = state;
    if (!st)
        return;
    ks_sched_free(st->sched);
    ks_podlife_free(st->life);
    free(st);
}

static int sched_start(ks_store *s, const void *cfgp, tlr_logger *lg, void **state)
{
    const sched_cfg *cfg = cfgp;
    sched_state *st = tlr_calloc(1, sizeof(*st));
    ks_sched_create(s, lg, &st->sched);
    ks_podlife_create(s, lg, cfg->start_delay_ms, &st->life);
    ks_controller sc = {
        .name = "scheduler", .period_ms = (int)cfg->period_ms,
        .wake_kinds = KS_KIND_BIT(KS_POD) | KS_KIND_BIT(KS_NODE), .min_gap_ms = 50,
        .fn = sched_run, .arg = st->sched,
    };
    /* the start delay is measured from when a pass first sees the pod
     * bound, so poll at least that finely */
    int life_period = cfg->start_delay_ms > 0 && cfg->start_delay_ms < 200
                          ? (int)cfg->start_delay_ms : 200;
    ks_controller lc = {
        .name = "pod-lifecycle", .period_ms = life_period,
        .wake_kinds = KS_KIND_BIT(KS_POD) | KS_KIND_BIT(KS_NODE), .min_gap_ms = 20,
        .fn = life_run, .arg = st->life,
    };
    int rc = ks_store_add_controller(s, &sc);
    if (rc == TLR_OK)
        rc = ks_store_add_controller(s, &lc);
    if (rc != TLR_OK)   /* start-up aborts; a started thread may still hold st */
        return rc;
    *state = st;
    return TLR_OK;
}

const ks_module ks_sched_module = {
    .name = "scheduler",
    .cfg_size = sizeof(sched_cfg),
    .settings = sched_settings,
    .nsettings = sizeof(sched_settings) / sizeof(sched_settings[0]),
    .start = sched_start,
    .stop = sched_stop,
};
