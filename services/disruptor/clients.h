/* clients.h - the disruptor's clients of the other services, over the typed
 * clients (tlr_clnt.h): the launcher (Launch, Terminate, Catalog), the
 * solvers (Simulate, with the catalog shaped per EC2NodeClass and the
 * catalog-by-hash resend) and the watcher (Snapshot).
 *
 * A call to a service that has no connected replica fails at once with
 * UNAVAILABLE instead of waiting out the timeout (tlr_clnt.fail_fast):
 * the disruptor's loop is single-threaded and retries every pass anyway. */
#ifndef DS_CLIENTS_H
#define DS_CLIENTS_H

#include "ds_ops.h"
#include "tlr_clnt.h"

typedef struct ds_client {
    tlr_clnt rpc;                    /* its tlr_req client borrowed */
    const Tailor__V1__Catalog *catalog;   /* solver: sent on a catalog miss; borrowed */
    struct ds_catalogs *shaped;      /* solver: the catalog per class shape; owned, made
                                      * on first use (ds_client_free) */
} ds_client;

/* What a client owns (the shaped catalogs); the struct itself is the
 * caller's. */
void ds_client_free(ds_client *c);

/* c borrowed; must outlive the ops. */
ds_launcher_ops ds_launcher_ops_of(ds_client *c);
ds_solver_ops ds_solver_ops_of(ds_client *c);
ds_watcher_ops ds_watcher_ops_of(ds_client *c);

#endif
