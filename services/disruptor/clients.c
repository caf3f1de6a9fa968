/* clients.c - Launch, Terminate, Catalog, Simulate and Snapshot over req/rep
 * (clients.h). */
#include "clients.h"

#include "catalogs.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

static int clients_call(ds_client *c, const ProtobufCMessage *req,
                        const ProtobufCMessageDescriptor *d, ProtobufCMessage **reply,
                        const char *what)
{
    if (!c->req || tlr_req_client_peers(c->req) == 0)
        return TLR_E_UNAVAILABLE;
    tlr_status st = { 0 };
    int rc = tlr_req_call(c->req, req, d, c->timeout_ms, reply, &st);
    if (rc == TLR_E_REMOTE)
        rc = st.code ? st.code : rc;
    if (rc)
        TLR_WARN(c->log, "request failed", TLR_S("request", what), TLR_ERR(rc),
                 TLR_S("reason", st.reason), TLR_S("message", st.message));
    return rc;
}

static int do_launch(void *arg, const Tailor__V1__LaunchRequest *req,
                     Tailor__V1__LaunchResponse **resp)
{
    return clients_call(arg, &req->base, &tailor__v1__launch_response__descriptor,
                        (ProtobufCMessage **)resp, "Launch");
}

static int do_terminate(void *arg, const Tailor__V1__TerminateRequest *req,
                        Tailor__V1__TerminateResponse **resp)
{
    return clients_call(arg, &req->base, &tailor__v1__terminate_response__descriptor,
                        (ProtobufCMessage **)resp, "Terminate");
}

int ds_launcher_catalog(ds_client *c, const char *known_hash, Tailor__V1__CatalogResponse **resp)
{
    Tailor__V1__CatalogRequest req = TAILOR__V1__CATALOG_REQUEST__INIT;
    req.known_hash = (char *)(known_hash ? known_hash : "");
    return clients_call(c, &req.base, &tailor__v1__catalog_response__descriptor,
                        (ProtobufCMessage **)resp, "Catalog");
}

ds_launcher_ops ds_launcher_ops_of(ds_client *c)
{
    return (ds_launcher_ops){ do_launch, do_terminate, c };
}

/* Simulate, with the launcher's catalog shaped per EC2NodeClass
 * (catalogs.h); on a catalog miss (a reply that says so, or a NOTFOUND
 * Status) resend once with every catalog filled in. */
static int do_simulate(void *arg, const Tailor__V1__SimulateRequest *req,
                       Tailor__V1__SimulateResponse **resp)
{
    ds_client *c = arg;
    ProtobufCMessage *reply = NULL;
    Tailor__V1__SimulateRequest copy = *req;
    Tailor__V1__CatalogRef **refs = NULL;
    size_t nrefs = 0;
    int rc;

    if (!c->shaped)
        ds_catalogs_create(&c->shaped);
    for (int full = 0; full < 2; full++) {
        ds_catalogs_refs(c->shaped, c->catalog, req, full, &refs, &nrefs);
        copy.catalogs = refs;
        copy.n_catalogs = nrefs;
        reply = NULL;
        rc = clients_call(c, &copy.base, &tailor__v1__simulate_response__descriptor, &reply,
                          "Simulate");
        ds_catalogs_refs_free(refs, nrefs);
        bool miss = rc == TLR_E_NOTFOUND ||
                    (rc == TLR_OK && ((Tailor__V1__SimulateResponse *)reply)->catalog_miss);
        if (!miss || !c->catalog || full)
            break;
        if (reply)
            protobuf_c_message_free_unpacked(reply, NULL);
    }
    if (rc == TLR_OK)
        *resp = (Tailor__V1__SimulateResponse *)reply;
    else if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    return rc;
}

static void free_sim(void *arg, Tailor__V1__SimulateResponse *resp)
{
    (void)arg;
    if (resp)
        protobuf_c_message_free_unpacked(&resp->base, NULL);
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
    return (ds_solver_ops){ do_simulate, free_sim, c };
}

static int do_snapshot(void *arg, const Tailor__V1__SnapshotRequest *req,
                       Tailor__V1__SnapshotResponse **resp)
{
    return clients_call(arg, &req->base, &tailor__v1__snapshot_response__descriptor,
                        (ProtobufCMessage **)resp, "Snapshot");
}

ds_watcher_ops ds_watcher_ops_of(ds_client *c)
{
    return (ds_watcher_ops){ do_snapshot, c };
}
