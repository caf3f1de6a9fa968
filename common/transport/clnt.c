/* clnt.c - typed clients of tailor's services (tlr_clnt.h). */
#include "tlr_clnt.h"

#include <stddef.h>

#include "tlr_alloc.h"

void tlr_clnt_free(void *resp)
{
    if (resp)
        protobuf_c_message_free_unpacked(resp, NULL);
}

/* One call: the reply of type d into *reply, or the code (a Status's own
 * code for TLR_E_REMOTE) with st filled.  A failure is logged unless
 * quiet_notfound and it is a NOTFOUND Status (a catalog miss). */
static int clnt_call(const tlr_clnt *c, const char *rpc, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *d, ProtobufCMessage **reply,
                     tlr_status *st, bool quiet_notfound)
{
    tlr_status local = { 0 };
    if (!st)
        st = &local;
    if (c->req == NULL || (c->fail_fast && tlr_req_client_peers(c->req) == 0)) {
        tlr_status_set(st, TLR_E_UNAVAILABLE, tlr_errname(TLR_E_UNAVAILABLE),
                       "%s: no replica connected", rpc);
        return TLR_E_UNAVAILABLE;
    }
    int rc = tlr_req_call(c->req, req, d, c->timeout_ms, reply, st);
    if (rc == TLR_E_REMOTE)
        rc = st->code ? st->code : rc;
    if (rc && !(quiet_notfound && rc == TLR_E_NOTFOUND))
        TLR_WARN(c->log, "request failed", TLR_S("request", rpc), TLR_ERR(rc),
                 TLR_S("reason", st->reason), TLR_S("message", st->message));
    return rc;
}

int tlr_clnt_ping(const tlr_clnt *c, Tailor__V1__PingResponse **resp, tlr_status *st)
{
    Tailor__V1__PingRequest req = TAILOR__V1__PING_REQUEST__INIT;
    return clnt_call(c, "Ping", &req.base, &tailor__v1__ping_response__descriptor,
                     (ProtobufCMessage **)resp, st, false);
}

int tlr_solver_clnt_solve(const tlr_clnt *c, const Tailor__V1__SolveRequest *req,
                          Tailor__V1__SolveResponse **resp, tlr_status *st)
{
    int rc = clnt_call(c, "Solve", &req->base, &tailor__v1__solve_response__descriptor,
                       (ProtobufCMessage **)resp, st, true);
    if (rc == TLR_E_NOTFOUND) {   /* a miss as a bare Status: as a reply */
        Tailor__V1__SolveResponse *r = tlr_malloc(sizeof(*r));
        tailor__v1__solve_response__init(r);
        r->catalog_miss = true;
        *resp = r;
        rc = TLR_OK;
    }
    return rc;
}

int tlr_solver_clnt_simulate(const tlr_clnt *c, const Tailor__V1__SimulateRequest *req,
                             Tailor__V1__SimulateResponse **resp, tlr_status *st)
{
    int rc = clnt_call(c, "Simulate", &req->base, &tailor__v1__simulate_response__descriptor,
                       (ProtobufCMessage **)resp, st, true);
    if (rc == TLR_E_NOTFOUND) {
        Tailor__V1__SimulateResponse *r = tlr_malloc(sizeof(*r));
        tailor__v1__simulate_response__init(r);
        r->catalog_miss = true;
        *resp = r;
        rc = TLR_OK;
    }
    return rc;
}

int tlr_launcher_clnt_launch(const tlr_clnt *c, const Tailor__V1__LaunchRequest *req,
                             Tailor__V1__LaunchResponse **resp, tlr_status *st)
{
    return clnt_call(c, "Launch", &req->base, &tailor__v1__launch_response__descriptor,
                     (ProtobufCMessage **)resp, st, false);
}

int tlr_launcher_clnt_terminate(const tlr_clnt *c, const Tailor__V1__TerminateRequest *req,
                                Tailor__V1__TerminateResponse **resp, tlr_status *st)
{
    return clnt_call(c, "Terminate", &req->base, &tailor__v1__terminate_response__descriptor,
                     (ProtobufCMessage **)resp, st, false);
}

int tlr_launcher_clnt_catalog(const tlr_clnt *c, const char *known_hash,
                              Tailor__V1__CatalogResponse **resp, tlr_status *st)
{
    Tailor__V1__CatalogRequest req = TAILOR__V1__CATALOG_REQUEST__INIT;
    req.known_hash = (char *)(known_hash ? known_hash : "");
    return clnt_call(c, "Catalog", &req.base, &tailor__v1__catalog_response__descriptor,
                     (ProtobufCMessage **)resp, st, false);
}

int tlr_watcher_clnt_snapshot(const tlr_clnt *c, const Tailor__V1__SnapshotRequest *req,
                              Tailor__V1__SnapshotResponse **resp, tlr_status *st)
{
    return clnt_call(c, "Snapshot", &req->base, &tailor__v1__snapshot_response__descriptor,
                     (ProtobufCMessage **)resp, st, false);
}

int tlr_disruptor_clnt_explain(const tlr_clnt *c, const Tailor__V1__ExplainRequest *req,
                               Tailor__V1__ExplainResponse **resp, tlr_status *st)
{
    return clnt_call(c, "Explain", &req->base, &tailor__v1__explain_response__descriptor,
                     (ProtobufCMessage **)resp, st, false);
}
