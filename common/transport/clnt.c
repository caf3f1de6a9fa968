/* clnt.c - typed clients of tailor's services (tlr_clnt.h). */
#include "tlr_clnt.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

/* A Solve or Simulate: a miss that came as a bare NOTFOUND Status comes
 * back as a reply of type d with catalog_miss set, as a new replica's. */
static int clnt_solver_call(const tlr_clnt *c, const char *rpc, const ProtobufCMessage *req,
                            const ProtobufCMessageDescriptor *d, ProtobufCMessage **reply,
                            tlr_status *st)
{
    int rc = clnt_call(c, rpc, req, d, reply, st, true);
    if (rc != TLR_E_NOTFOUND)
        return rc;
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(d, "catalog_miss");
    ProtobufCMessage *r = tlr_malloc(d->sizeof_message);
    d->message_init(r);
    *(protobuf_c_boolean *)((char *)r + f->offset) = 1;
    *reply = r;
    return TLR_OK;
}

int tlr_solver_clnt_solve(const tlr_clnt *c, const Tailor__V1__SolveRequest *req,
                          Tailor__V1__SolveResponse **resp, tlr_status *st)
{
    return clnt_solver_call(c, "Solve", &req->base, &tailor__v1__solve_response__descriptor,
                            (ProtobufCMessage **)resp, st);
}

int tlr_solver_clnt_simulate(const tlr_clnt *c, const Tailor__V1__SimulateRequest *req,
                             Tailor__V1__SimulateResponse **resp, tlr_status *st)
{
    return clnt_solver_call(c, "Simulate", &req->base,
                            &tailor__v1__simulate_response__descriptor, (ProtobufCMessage **)resp,
                            st);
}

/* ---- catalogs by hash ---------------------------------------------------- */

static Tailor__V1__CatalogRef *cats_add(tlr_clnt_cats *s, const Tailor__V1__Catalog *cat)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4;
        s->refs = tlr_realloc(s->refs, s->cap * sizeof(*s->refs));
        s->cat = tlr_realloc(s->cat, s->cap * sizeof(*s->cat));
    }
    Tailor__V1__CatalogRef *r = tlr_malloc(sizeof(*r));
    tailor__v1__catalog_ref__init(r);
    s->cat[s->n] = cat;
    s->refs[s->n++] = r;
    return r;
}

void tlr_clnt_cats_name(tlr_clnt_cats *s, const Tailor__V1__Catalog *cat, const char *cls)
{
    Tailor__V1__CatalogRef *r = NULL;
    for (size_t i = 0; i < s->n && !r; i++)
        if (s->cat[i] && strcmp(s->refs[i]->hash, cat->hash) == 0)
            r = s->refs[i];
    if (!r) {
        r = cats_add(s, cat);
        r->hash = cat->hash;
        r->catalog = s->full ? (Tailor__V1__Catalog *)cat : NULL;
    }
    if (cls) {
        r->node_classes =
            tlr_realloc(r->node_classes, (r->n_node_classes + 1) * sizeof(*r->node_classes));
        r->node_classes[r->n_node_classes++] = (char *)cls;
    }
}

void tlr_clnt_cats_pass(tlr_clnt_cats *s, const Tailor__V1__CatalogRef *ref)
{
    Tailor__V1__CatalogRef *r = cats_add(s, NULL);
    *r = *ref;
    r->node_classes = tlr_calloc(ref->n_node_classes + 1, sizeof(*r->node_classes));
    if (ref->n_node_classes)   /* memcpy from NULL is undefined, even of 0 bytes */
        memcpy(r->node_classes, ref->node_classes,
               ref->n_node_classes * sizeof(*r->node_classes));
}

void tlr_clnt_cats_inline(tlr_clnt_cats *s)
{
    s->full = true;
    for (size_t i = 0; i < s->n; i++)
        if (s->cat[i])
            s->refs[i]->catalog = (Tailor__V1__Catalog *)s->cat[i];
}

bool tlr_clnt_cats_resend(tlr_clnt_cats *s, bool catalog_miss, bool other_miss)
{
    if (!catalog_miss || other_miss || s->full)
        return false;
    size_t ours = 0;   /* refs passed on as they came cannot be filled in */
    for (size_t i = 0; i < s->n; i++)
        ours += s->cat[i] != NULL;
    if (ours == 0)
        return false;
    tlr_clnt_cats_inline(s);
    return true;
}

void tlr_clnt_cats_clear(tlr_clnt_cats *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->refs[i]->node_classes);
        free(s->refs[i]);
    }
    free(s->refs);
    free(s->cat);
    *s = (tlr_clnt_cats){ 0 };
}

int tlr_solver_clnt_simulate_cats(const tlr_clnt *c, const Tailor__V1__SimulateRequest *req,
                                  tlr_clnt_cats *cats, Tailor__V1__SimulateResponse **resp,
                                  tlr_status *st)
{
    Tailor__V1__SimulateRequest copy = *req;
    Tailor__V1__SimulateResponse *r = NULL;
    int rc;
    for (;;) {
        copy.catalogs = cats->refs;
        copy.n_catalogs = cats->n;
        rc = tlr_solver_clnt_simulate(c, &copy, &r, st);
        if (rc != TLR_OK || !tlr_clnt_cats_resend(cats, r->catalog_miss, false))
            break;
        tlr_clnt_free(r);
        r = NULL;
    }
    if (rc == TLR_OK && r->catalog_miss) {   /* even in full: nothing to act on */
        TLR_WARN(c->log, "request failed", TLR_S("request", "Simulate"),
                 TLR_ERR(TLR_E_NOTFOUND), TLR_S("reason", "CatalogMiss"),
                 TLR_S("solver", r->solver_replica_id));
        if (st)
            tlr_status_set(st, TLR_E_NOTFOUND, "CatalogMiss",
                           "the solver misses a catalog sent in full");
        tlr_clnt_free(r);
        return TLR_E_NOTFOUND;
    }
    if (rc == TLR_OK)
        *resp = r;
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
