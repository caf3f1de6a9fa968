/* main.c - tailor-solver: settings and wiring only.
 *
 * The solver answers Solve and Simulate (proto/tailor/v1/solver.proto) on
 * a REP socket; it is stateless, so any number of replicas can run behind
 * one client.  The engine is not built yet: both requests are answered
 * with Status UNIMPLEMENTED until the Solver issue lands.
 */
#include <stddef.h>

#include "tailor/v1/solver.pb-c.h"
#include "tlr_err.h"
#include "tlr_service.h"

typedef struct solver_cfg {
    tlr_service_conf svc;       /* must be first */
    char *listen;
    int max_msg_mib;
} solver_cfg;

typedef struct solver_app {
    solver_cfg cfg;
    tlr_rep_server *rep;
} solver_app;

static const tlr_setting settings[] = {
    { "listen", "TAILOR_LISTEN", TLR_SET_STR, offsetof(solver_cfg, listen),
      "tcp://127.0.0.1:7101", "nng URL to answer Solve and Simulate requests on" },
    { "max-message-mib", "TAILOR_MAX_MESSAGE_MIB", TLR_SET_INT,
      offsetof(solver_cfg, max_msg_mib), "64",
      "largest request or reply accepted, in MiB", .min = 1, .max = 2048 },
};

static int start(tlr_service *svc, void *arg)
{
    solver_app *app = arg;
    const tlr_rep_route routes[] = {
        tlr_service_route_unimplemented(svc, &tailor__v1__solve_request__descriptor),
        tlr_service_route_unimplemented(svc, &tailor__v1__simulate_request__descriptor),
    };
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
