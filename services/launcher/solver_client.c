/* solver_client.c - Solve over req/rep (solver_client.h). */
#include "solver_client.h"

#include <stdlib.h>

#include "tlr_err.h"

static int do_solve(void *arg, const Tailor__V1__SolveRequest *req,
                    Tailor__V1__SolveResponse **resp)
{
    lc_solver_client *c = arg;
    ProtobufCMessage *reply = NULL;
    tlr_status st = { 0 };
    int rc = tlr_req_call(c->req, &req->base, &tailor__v1__solve_response__descriptor,
                          c->timeout_ms, &reply, &st);
    if (rc == TLR_E_REMOTE && st.code == TLR_E_NOTFOUND) {
        /* A catalog miss may come back as a NOTFOUND Status rather than a
         * reply: hand the caller a reply that says so, so it resends. */
        Tailor__V1__SolveResponse *r = malloc(sizeof(*r));
        if (!r)
            abort();
        tailor__v1__solve_response__init(r);
        r->catalog_miss = 1;
        *resp = r;
        return TLR_OK;
    }
    if (rc) {
        TLR_WARN(c->log, "solve failed", TLR_ERR(rc), TLR_S("reason", st.reason),
                 TLR_S("message", st.message));
        return rc;
    }
    *resp = (Tailor__V1__SolveResponse *)reply;
    return TLR_OK;
}

lc_solver_ops lc_solver_ops_of(lc_solver_client *c)
{
    return (lc_solver_ops){ do_solve, c };
}
