/* tls_call.c - send one request of a given type to a tailor service, as
 * the identity whose certificate TAILOR_TLS_CERT/KEY name (lib.sh tls_as).
 *
 *   tls_call URL ping|solve|simulate|launch|terminate|catalog|snapshot|explain
 *
 * The request is empty: what matters is whether the service lets this
 * identity send that type.  Prints "OK" or "<CODE>: <message>" and exits
 * 0 (answered by the route), 3 (the service replied with a Status), 1
 * (no answer), 2 (usage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "../it_tls.h"
#include "tailor/v1/common.pb-c.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_req.h"

typedef struct kind {
    const char *name;
    const ProtobufCMessageDescriptor *req, *reply;
} kind;

static const kind kinds[] = {
    { "ping", &tailor__v1__ping_request__descriptor, &tailor__v1__ping_response__descriptor },
    { "solve", &tailor__v1__solve_request__descriptor, &tailor__v1__solve_response__descriptor },
    { "simulate", &tailor__v1__simulate_request__descriptor,
      &tailor__v1__simulate_response__descriptor },
    { "launch", &tailor__v1__launch_request__descriptor, &tailor__v1__launch_response__descriptor },
    { "terminate", &tailor__v1__terminate_request__descriptor,
      &tailor__v1__terminate_response__descriptor },
    { "catalog", &tailor__v1__catalog_request__descriptor,
      &tailor__v1__catalog_response__descriptor },
    { "snapshot", &tailor__v1__snapshot_request__descriptor,
      &tailor__v1__snapshot_response__descriptor },
    { "explain", &tailor__v1__explain_request__descriptor,
      &tailor__v1__explain_response__descriptor },
};

int main(int argc, char **argv)
{
    const kind *k = NULL;
    for (size_t i = 0; argc == 3 && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(argv[2], kinds[i].name) == 0)
            k = &kinds[i];
    if (k == NULL) {
        fprintf(stderr, "usage: tls_call URL ping|solve|simulate|launch|terminate|catalog|"
                        "snapshot|explain\n");
        return 2;
    }
    tlr_logger *quiet;
    tlr_logger_create(&(tlr_log_opts){ .service = "tls_call", .level = TLR_LOG_FATAL, .fd = 2 },
                      &quiet);
    tlr_tls *tls = NULL;
    tlr_req_client *c = NULL;
    int out = 1;
    const char *urls[] = { argv[1] };
    if (it_tls_from_env(quiet, &tls) != TLR_OK ||
        tlr_req_client_create(&(tlr_req_opts){ .urls = urls, .nurls = 1, .timeout_ms = 3000,
                                                .log = quiet, .sender = "tls_call", .tls = tls },
                              &c) != TLR_OK) {
        printf("SETUP: cannot make a client for %s\n", argv[1]);
        goto done;
    }
    ProtobufCMessage *req = tlr_calloc(1, k->req->sizeof_message);
    protobuf_c_message_init(k->req, req);
    ProtobufCMessage *reply = NULL;
    tlr_status st = { 0 };
    int rc = tlr_req_call(c, req, k->reply, 0, &reply, &st);
    free(req);
    if (rc == TLR_OK) {
        printf("OK\n");
        protobuf_c_message_free_unpacked(reply, NULL);
        out = 0;
    } else {
        printf("%s: %s\n", tlr_errname(rc == TLR_E_REMOTE ? st.code : rc), st.message);
        out = rc == TLR_E_REMOTE ? 3 : 1;
    }
done:
    tlr_req_client_free(c);
    tlr_tls_free(tls);
    tlr_logger_free(quiet);
    nng_fini();
    return out;
}
