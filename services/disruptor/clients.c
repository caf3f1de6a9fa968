/* clients.c - the disruptor's ops over the typed service clients
 * (clients.h). */
#include "clients.h"

#include "catalogs.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"

static int do_launch(void *arg, const Tailor__V1__LaunchRequest *req,
                     Tailor__V1__LaunchResponse **resp)
{
    ds_client *c = arg;
    return tlr_launcher_clnt_launch(&c->rpc, req, resp, NULL);
}

static int do_terminate(void *arg, const Tailor__V1__TerminateRequest *req,
                        Tailor__V1__TerminateResponse **resp)
{
    ds_client *c = arg;
    return tlr_launcher_clnt_terminate(&c->rpc, req, resp, NULL);
}

ds_launcher_ops ds_launcher_ops_of(ds_client *c)
{
    return (ds_launcher_ops){ do_launch, do_terminate, c };
}

/* Simulate, with the launcher's catalog shaped per EC2NodeClass
 * (catalogs.h), by hash under tlr_clnt.h's resend rule. */
static int do_simulate(void *arg, const Tailor__V1__SimulateRequest *req,
                       Tailor__V1__SimulateResponse **resp)
{
    ds_client *c = arg;
    if (!c->shaped)
        ds_catalogs_create(&c->shaped);
    tlr_clnt_cats cats = { 0 };
    ds_catalogs_name(c->shaped, c->catalog, req, &cats);
    int rc = tlr_solver_clnt_simulate_cats(&c->rpc, req, &cats, resp, NULL);
    tlr_clnt_cats_clear(&cats);
    return rc;
}

void ds_client_free(ds_client *c)
{
    if (!c)
        return;
    ds_catalogs_free(c->shaped);
    c->shaped = NULL;
}

ds_solver_ops ds_solver_ops_of(ds_client *c)
{
    return (ds_solver_ops){ do_simulate, c };
}

static int do_snapshot(void *arg, const Tailor__V1__SnapshotRequest *req,
                       Tailor__V1__SnapshotResponse **resp)
{
    ds_client *c = arg;
    return tlr_watcher_clnt_snapshot(&c->rpc, req, resp, NULL);
}

ds_watcher_ops ds_watcher_ops_of(ds_client *c)
{
    return (ds_watcher_ops){ do_snapshot, c };
}
