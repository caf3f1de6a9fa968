/* lc_app.h - the launcher process: clients, provisioning core, routes,
 * subscription and timers, put together from settings (main.c). */
#ifndef LC_APP_H
#define LC_APP_H

#include <stdbool.h>
#include <stdint.h>

#include "tlr_conf.h"
#include "tlr_service.h"

typedef struct lc_app_cfg {
    tlr_service_conf svc;       /* must be first */
    char *listen, *publish;
    int max_msg_mib;
    tlr_strlist solvers;
    char *watcher;
    char *watcher_rep;              /* the watcher's REP URL (Snapshot by reference) */
    char *decisions;                /* the watcher's decisions listener; "" = none */
    char *kubeconfig;
    bool in_cluster;
    char *cluster;
    char *region, *endpoint;
    char *catalog;
    char *catalog_source;           /* auto | ec2 | file */
    int64_t catalog_refresh_ms;
    char *pricing_endpoint, *pricing_region;
    double spot_floor;
    tlr_strlist zones;
    double spot_discount;
    bool spot;                      /* false: no spot offerings in the catalog */
    char *default_ami, *k8s_version;
    int64_t solve_timeout_ms;
    int64_t solver_conn_age_ms;
    int64_t lifecycle_every_ms, gc_every_ms;
    int64_t ice_ttl_ms, resolve_ttl_ms;
    int parallel;
    bool fleet_batching;
    bool leader_elect;
    char *lease_namespace;
    int64_t lease_ms, lease_renew_deadline_ms, lease_retry_ms;
    /* cluster identity (empty = discovered: EKS DescribeCluster, kube-dns) */
    char *cluster_endpoint, *cluster_ca, *cluster_cidr, *cluster_dns;
    int64_t registration_ttl_ms;
    int64_t plan_gate_ms;          /* 0: no plan gates (plangate.h) */
    int min_values_policy;          /* 0 Strict, 1 BestEffort */
    int preference_policy;          /* 0 Respect, 1 Ignore */
} lc_app_cfg;

typedef struct lc_app lc_app;

/* tlr_service_ops.start / .stop for the launcher; app is an lc_app *
 * made by lc_app_new() around cfg (borrowed). */
lc_app *lc_app_new(lc_app_cfg *cfg);
void    lc_app_delete(lc_app *a);
int     lc_app_start(tlr_service *svc, void *app);
void    lc_app_stop(tlr_service *svc, void *app);

#endif
