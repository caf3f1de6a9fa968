/* ds_app.h - the disruptor process: clients, controllers, routes and timers
 * put together from settings (main.c). */
#ifndef DS_APP_H
#define DS_APP_H

#include <stdbool.h>
#include <stdint.h>

#include "tlr_conf.h"
#include "tlr_service.h"

typedef struct ds_app_cfg {
    tlr_service_conf svc;       /* must be first */
    char *listen, *publish;
    int max_msg_mib;
    char *kubeconfig;
    bool in_cluster;
    char *watcher, *watcher_pub, *launcher;
    tlr_strlist solvers;
    char *catalog;
    tlr_strlist zones;
    double spot_discount;
    char *region, *endpoint;
    char *queue;
    int64_t termination_every_ms, disruption_every_ms, interruption_every_ms;
    int64_t termination_idle_ms;   /* pass period while nothing terminates; 0 = always termination_every_ms */
    int64_t catalog_every_ms;   /* ask the launcher for its catalog */
    int64_t validation_ms, min_drain_ms, replace_timeout_ms, event_every_ms;
    double min_savings;
    bool spot_to_spot;          /* replace spot nodes by spot nodes */
    int max_candidates;
    int rebalance;              /* 0 event, 1 drain */
    int min_values_policy;      /* 0 Strict, 1 BestEffort */
    int preference_policy;      /* 0 Respect, 1 Ignore */
    bool leader_elect;
    char *lease_namespace;
    int64_t lease_ms, lease_renew_deadline_ms, lease_retry_ms;
    bool dry_run;
    int64_t rpc_timeout_ms;
    int64_t solver_conn_age_ms;
} ds_app_cfg;

typedef struct ds_app ds_app;

/* cfg borrowed.  tlr_service_ops.start / .stop take the app. */
ds_app *ds_app_new(ds_app_cfg *cfg);
void    ds_app_delete(ds_app *a);
int     ds_app_start(tlr_service *svc, void *app);
void    ds_app_stop(tlr_service *svc, void *app);

#endif
