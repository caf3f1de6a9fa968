/* tlr_service_internal.h - the skeleton's state, shared by its own files
 * (service.c, endpoints.c) and by nobody else. */
#ifndef TLR_SERVICE_INTERNAL_H
#define TLR_SERVICE_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "tailor/v1/common.pb-c.h"
#include "tlr_http.h"
#include "tlr_service.h"

struct tlr_service {
    const tlr_service_ops *ops;
    tlr_logger *log;
    tlr_loop *loop;
    tlr_metrics *metrics;
    tlr_http *http;
    tlr_metric_family *rpc_requests;
    tlr_metric_family *rpc_duration;
    char id[128];
    int64_t started_ms;        /* monotonic */
    int64_t started_wall_ms;
    atomic_bool ready;
    atomic_bool leader;          /* Ping's leader: this replica may act */
    Tailor__V1__PingResponse pong;   /* the Ping reply, refilled per request */
    tlr_tls *tls;              /* NULL without certificates */
    tlr_timer_id tls_timer;
};

#endif
