/* endpoints.c - REP and PUB sockets as every service sets them up:
 * sender id, logger, size ceiling, request metrics and Ping. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/common.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_service_internal.h"
#include "tlr_time.h"

static int ping_handle(void *arg, const ProtobufCMessage *req, const char *request_id,
                       ProtobufCMessage **reply, tlr_status *st)
{
    (void)req;
    (void)request_id;
    (void)st;
    tlr_service *svc = arg;
    Tailor__V1__PingResponse *r = &svc->pong;
    tailor__v1__ping_response__init(r);
    r->service = (char *)svc->ops->name;
    r->replica_id = svc->id;
    r->version = TLR_VERSION;
    r->contract_version = TLR_CONTRACT_VERSION;
    r->uptime_ms = tlr_mono_ms() - svc->started_ms;
    r->started_unix_ms = svc->started_wall_ms;
    r->ready = atomic_load(&svc->ready);
    r->leader = atomic_load(&svc->leader);
    *reply = &r->base;    /* lives in svc; nothing to free */
    return TLR_OK;
}

static void observe(void *arg, const char *type, int code, double seconds)
{
    tlr_service *svc = arg;
    const char *t = type && *type ? type : "undecodable";
    tlr_metrics_counter_inc(svc->rpc_requests, (const char *[]){ t, tlr_errname(code) });
    tlr_metrics_histogram_observe(svc->rpc_duration, (const char *[]){ t }, seconds);
}

int tlr_service_listen(tlr_service *svc, const char *url, size_t max_msg,
                       const tlr_rep_route *routes, size_t nroutes, tlr_rep_server **out)
{
    tlr_rep_route *all = tlr_calloc(nroutes + 1, sizeof(*all));
    if (nroutes)
        memcpy(all, routes, nroutes * sizeof(*all));
    all[nroutes] = (tlr_rep_route){ .request = &tailor__v1__ping_request__descriptor,
                                    .handle = ping_handle, .arg = svc };
    int rc = tlr_rep_server_create(svc->loop,
                                   &(tlr_rep_opts){ .listen = url, .max_msg = max_msg,
                                                    .log = svc->log, .sender = svc->id,
                                                    .routes = all, .nroutes = nroutes + 1,
                                                    .observe = observe, .observe_arg = svc,
                                                    .tls = svc->tls },
                                   out);
    free(all);
    return rc;
}

int tlr_service_publish(tlr_service *svc, const char *url, size_t max_msg,
                        const char *const *allow, tlr_pub **out)
{
    return tlr_pub_open(&(tlr_pub_opts){ .url = url, .max_msg = max_msg, .log = svc->log,
                                         .sender = svc->id, .tls = svc->tls, .allow = allow },
                        out);
}

int tlr_service_publish_dial(tlr_service *svc, const char *url, size_t max_msg,
                             const char *const *allow, tlr_pub **out)
{
    return tlr_pub_open(&(tlr_pub_opts){ .url = url, .dial = true, .max_msg = max_msg,
                                         .log = svc->log, .sender = svc->id, .tls = svc->tls,
                                         .allow = allow },
                        out);
}

static int unimplemented(void *arg, const ProtobufCMessage *req, const char *request_id,
                         ProtobufCMessage **reply, tlr_status *st)
{
    (void)reply;
    (void)request_id;
    tlr_service *svc = arg;
    char msg[256];
    snprintf(msg, sizeof(msg), "%s is not implemented by tailor-%s %s yet",
             req->descriptor->name, svc->ops->name, TLR_VERSION);
    tlr_status_set(st, TLR_E_UNIMPLEMENTED, "Unimplemented", "%s", msg);
    return TLR_E_UNIMPLEMENTED;
}

tlr_rep_route tlr_service_route_unimplemented(tlr_service *svc,
                                              const ProtobufCMessageDescriptor *request)
{
    return (tlr_rep_route){ .request = request, .handle = unimplemented, .arg = svc };
}
