/* main.c - tailor-solver: settings and wiring only.
 *
 * The solver answers Solve and Simulate (proto/tailor/v1/solver.proto) on
 * a REP socket; it is stateless apart from a catalog cache (handlers.c),
 * so any number of replicas can run behind one client.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "handlers.h"
#include "tailor/v1/solver.pb-c.h"
#include "tlr_err.h"
#include "tlr_service.h"

typedef struct solver_cfg {
    tlr_service_conf svc;       /* must be first */
    char *listen;
    int max_msg_mib;
    int cache_entries;
    int cache_mib;
    char *strategy;
    int lower_bound_max_pods;
    bool scheduler_replay;
} solver_cfg;

typedef struct solver_app {
    solver_cfg cfg;
    solver_handlers *handlers;
    tlr_rep_server *rep;
} solver_app;

/* Who may ask for a plan (docs/security.md). */
static const char *const solve_callers[] = { TLR_ID_LAUNCHER, TLR_ID_DISRUPTOR, TLR_ID_CTL, NULL };

static const tlr_setting settings[] = {
    { "listen", "TAILOR_LISTEN", TLR_SET_STR, offsetof(solver_cfg, listen),
      "tls+tcp://127.0.0.1:7101", "nng URL to answer Solve and Simulate requests on" },
    TLR_SETTING_MAX_MESSAGE_MIB(solver_cfg, max_msg_mib),
    { "catalog-cache-entries", "TAILOR_CATALOG_CACHE_ENTRIES", TLR_SET_INT,
      offsetof(solver_cfg, cache_entries), "16",
      "most instance-type catalogs kept in the cache (least recently used go first)",
      .min = 1, .max = 4096 },
    { "catalog-cache-mib", "TAILOR_CATALOG_CACHE_MIB", TLR_SET_INT,
      offsetof(solver_cfg, cache_mib), "1024", "most MiB of catalogs kept in the cache",
      .min = 1, .max = 65536 },
    { "strategy", "TAILOR_SOLVER_STRATEGY", TLR_SET_STR, offsetof(solver_cfg, strategy), "tailor",
      "packing strategy: tailor, or karpenter (the baseline, for comparisons)" },
    { "lower-bound-max-pods", "TAILOR_SOLVER_LOWER_BOUND_MAX_PODS", TLR_SET_INT,
      offsetof(solver_cfg, lower_bound_max_pods), "5000",
      "compute the cost lower bound (an LP) in Solve replies with at most this many pending pods; 0 = never",
      .min = 0, .max = 100000000 },
    { "scheduler-replay", "TAILOR_SOLVER_SCHEDULER_REPLAY", TLR_SET_BOOL,
      offsetof(solver_cfg, scheduler_replay), "true",
      "plan a batch whose nodes register together (a DoNotSchedule spread) as kube-scheduler will bind "
      "it, buying what it would leave pending as a second stage (docs/solver.md)" },
};

static int start(tlr_service *svc, void *arg)
{
    solver_app *app = arg;
    tlr_solve_strategy strategy;
    if (!strcmp(app->cfg.strategy, "tailor"))
        strategy = TLR_SOLVE_TAILOR;
    else if (!strcmp(app->cfg.strategy, "karpenter"))
        strategy = TLR_SOLVE_KARPENTER;
    else {
        TLR_ERROR(tlr_service_log(svc), "unknown strategy (want tailor or karpenter)",
                  TLR_S("strategy", app->cfg.strategy));
        return TLR_E_INVAL;
    }
    const solver_handlers_opts ho = {
        .cache_entries = (size_t)app->cfg.cache_entries,
        .cache_bytes = (size_t)app->cfg.cache_mib << 20,
        .strategy = strategy,
        .lower_bound_max_pods = (size_t)app->cfg.lower_bound_max_pods,
        .scheduler_replay = app->cfg.scheduler_replay,
        .replica_id = tlr_service_id(svc),
        .metrics = tlr_service_metrics(svc),
    };
    solver_handlers_create(&ho, &app->handlers);
    tlr_rep_route routes[] = {
        solver_handlers_solve_route(app->handlers),
        solver_handlers_simulate_route(app->handlers),
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        routes[i].allow = solve_callers;
    int rc = tlr_service_listen(svc, app->cfg.listen, (size_t)app->cfg.max_msg_mib << 20,
                                routes, sizeof(routes) / sizeof(routes[0]), &app->rep);
    if (rc)
        return rc;
    tlr_service_set_ready(svc, true, NULL);
    return TLR_OK;
}

static void stop(tlr_service *svc, void *arg)
{
    (void)svc;
    solver_app *app = arg;
    tlr_rep_server_free(app->rep);
    app->rep = NULL;
    solver_handlers_free(app->handlers);
    app->handlers = NULL;
}

int main(int argc, char **argv)
{
    solver_app app = { 0 };
    const tlr_service_ops ops = {
        .name = "solver",
        .summary = "Plans the cheapest set of nodes for pending pods (Solve) and "
                   "answers what-if questions for consolidation (Simulate).",
        .http_default = "127.0.0.1:8101",
        .settings = settings,
        .nsettings = sizeof(settings) / sizeof(settings[0]),
        .cfg = &app.cfg,
        .start = start,
        .stop = stop,
        .app = &app,
    };
    return tlr_service_main(argc, argv, &ops);
}
