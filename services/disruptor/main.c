/* main.c - tailor-disruptor: settings and wiring only.
 *
 * The disruptor answers Explain on its REP socket and publishes the
 * "disruption" topic.  Disruption is not built yet: Explain is answered
 * with Status UNIMPLEMENTED until the disruptor issue lands.
 */
#include <stddef.h>

#include "tailor/v1/disruptor.pb-c.h"
#include "tlr_err.h"
#include "tlr_service.h"

typedef struct disruptor_cfg {
    tlr_service_conf svc;       /* must be first */
    char *listen;
    char *publish;
    int max_msg_mib;
} disruptor_cfg;

typedef struct disruptor_app {
    disruptor_cfg cfg;
    tlr_rep_server *rep;
    tlr_pub *pub;
} disruptor_app;

static const tlr_setting settings[] = {
    { "listen", "TAILOR_LISTEN", TLR_SET_STR, offsetof(disruptor_cfg, listen),
      "tcp://127.0.0.1:7131", "nng URL to answer requests on" },
    { "publish", "TAILOR_PUBLISH", TLR_SET_STR, offsetof(disruptor_cfg, publish),
      "tcp://127.0.0.1:7132", "nng URL to publish events on" },
    { "max-message-mib", "TAILOR_MAX_MESSAGE_MIB", TLR_SET_INT,
      offsetof(disruptor_cfg, max_msg_mib), "64",
      "largest message sent or accepted, in MiB", .min = 1, .max = 2048 },
};

static int start(tlr_service *svc, void *arg)
{
    disruptor_app *app = arg;
    size_t max_msg = (size_t)app->cfg.max_msg_mib << 20;
    const tlr_rep_route routes[] = {
        tlr_service_route_unimplemented(svc, &tailor__v1__explain_request__descriptor),
    };
    int rc = tlr_service_listen(svc, app->cfg.listen, max_msg, routes,
                                sizeof(routes) / sizeof(routes[0]), &app->rep);
    if (rc)
        return rc;
    if ((rc = tlr_service_publish(svc, app->cfg.publish, max_msg, &app->pub)))
        return rc;
    tlr_service_set_ready(svc, true, NULL);
    return TLR_OK;
}

static void stop(tlr_service *svc, void *arg)
{
    (void)svc;
    disruptor_app *app = arg;
    tlr_pub_free(app->pub);
    tlr_rep_server_free(app->rep);
}

int main(int argc, char **argv)
{
    disruptor_app app = { 0 };
    const tlr_service_ops ops = {
        .name = "disruptor",
        .summary = "Drains and removes nodes safely: emptiness, expiration, drift, interruption, consolidation.",
        .http_default = "127.0.0.1:8131",
        .settings = settings,
        .nsettings = sizeof(settings) / sizeof(settings[0]),
        .cfg = &app.cfg,
        .start = start,
        .stop = stop,
        .app = &app,
    };
    return tlr_service_main(argc, argv, &ops);
}
