/* tlr_service.h - the skeleton every tailor service runs in.
 *
 * main.c of a service declares its settings and hands a tlr_service_ops to
 * tlr_service_main(), which owns everything that is the same in all four:
 *   - settings: the service's table plus the common ones (--log-level,
 *     --http-listen, --config, --tls-ca/--tls-cert/--tls-key,
 *     --insecure-transport), --help and --version;
 *   - transport security: every setting whose value is a plaintext nng URL
 *     (tcp://) is refused at start (exit 2) unless --insecure-transport,
 *     which logs a warning per URL; a tls+tcp:// URL needs the three TLS
 *     files.  The certificate files are checked every few seconds and
 *     reloaded when they change (tlr_tls_reload);
 *   - the JSON logger, the event loop, the metrics registry and the HTTP
 *     endpoint with /healthz, /readyz and /metrics;
 *   - signals: SIGTERM and SIGINT shut down cleanly (ops->stop, then every
 *     resource freed and nng_fini(), so valgrind sees no leak); SIGHUP is
 *     logged and ignored;
 *   - exit codes: 0 after a clean shutdown or --help, 2 for bad settings,
 *     1 when the service failed to start or its loop failed.
 *
 * The service's config struct must begin with a tlr_service_conf member so
 * the common settings can be stored in it:
 *
 *   typedef struct solver_cfg {
 *       tlr_service_conf svc;      // first member
 *       char *listen;
 *   } solver_cfg;
 */
#ifndef TLR_SERVICE_H
#define TLR_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tlr_conf.h"
#include "tlr_log.h"
#include "tlr_loop.h"
#include "tlr_metrics.h"

#define TLR_VERSION "0.1.0"

/* The commit this binary was built from: "4f1c1f6a2b3c", with "-dirty"
 * when tracked files differed from it, or "unknown" (cmake/gitcommit.cmake). */
const char *tlr_build_commit(void);
/* Writes what --version prints: "PROG 0.1.0 (commit C, contract tailor.v1)". */
void tlr_version_print(FILE *out, const char *prog);

typedef struct tlr_service_conf {
    char *config;        /* --config FILE */
    char *log_level;     /* --log-level */
    char *http_listen;   /* --http-listen host:port for /healthz etc. */
    char *tls_ca;        /* --tls-ca FILE: CA that peers' certificates chain to */
    char *tls_cert;      /* --tls-cert FILE: this service's certificate */
    char *tls_key;       /* --tls-key FILE: its private key */
    bool insecure_transport;   /* --insecure-transport: allow tcp:// */
} tlr_service_conf;

typedef struct tlr_service tlr_service;

typedef struct tlr_service_ops {
    const char *name;          /* "solver": binary tailor-solver */
    const char *summary;       /* one line for --help */
    const char *http_default;  /* default --http-listen, e.g. "127.0.0.1:8101" */
    const tlr_setting *settings;
    size_t nsettings;
    void *cfg;                 /* borrowed; begins with tlr_service_conf */
    /* Called once everything common is up.  Register fds and timers on
     * tlr_service_loop(svc); call tlr_service_set_ready() when serving.
     * A non-zero return is logged and the process exits 1. */
    int  (*start)(tlr_service *svc, void *app);
    /* Called after the loop stopped, before common teardown.  Free what
     * start created.  May be NULL. */
    void (*stop)(tlr_service *svc, void *app);
    void *app;                 /* borrowed; passed to start and stop */
} tlr_service_ops;

/* Settings several services spell alike, for their tables: TYPE is the
 * service's config struct, FIELD its member. */
#define TLR_SETTING_MAX_MESSAGE_MIB(type, field)                                        \
    { "max-message-mib", "TAILOR_MAX_MESSAGE_MIB", TLR_SET_INT, offsetof(type, field),  \
      "64", "largest message sent or accepted, in MiB", .min = 1, .max = 2048 }
#define TLR_SETTING_KUBECONFIG(type, field)                                             \
    { "kubeconfig", "KUBECONFIG", TLR_SET_STR, offsetof(type, field), NULL,             \
      "kubeconfig file (default ~/.kube/config; its current context)" }
#define TLR_SETTING_IN_CLUSTER(type, field)                                             \
    { "in-cluster", "TAILOR_IN_CLUSTER", TLR_SET_BOOL, offsetof(type, field), "false",  \
      "use the pod's service account instead of a kubeconfig" }
#define TLR_SETTING_LEASE_NAMESPACE(type, field)                                        \
    { "lease-namespace", "TAILOR_LEASE_NAMESPACE", TLR_SET_STR, offsetof(type, field),  \
      NULL, "namespace of the Lease (default: the config's)" }
/* The Lease's three durations (client-go's LeaseDuration, RenewDeadline,
 * RetryPeriod; tlr_lease.h): three table entries. */
#define TLR_SETTING_LEASE_TIMING(type, duration, deadline, retry)                       \
    { "lease-duration", "TAILOR_LEASE_DURATION", TLR_SET_DURATION, offsetof(type, duration), \
      "15s", "how long a silent leader keeps the Lease before another replica takes it", \
      .min = 1000, .max = 600000 },                                                     \
    { "lease-renew-deadline", "TAILOR_LEASE_RENEW_DEADLINE", TLR_SET_DURATION,          \
      offsetof(type, deadline), "10s",                                                  \
      "a leader acts only this long after sending its last acknowledged renewal "       \
      "(less than --lease-duration)", .min = 500, .max = 600000 },                      \
    { "lease-retry-period", "TAILOR_LEASE_RETRY_PERIOD", TLR_SET_DURATION,              \
      offsetof(type, retry), "2s", "how often the Lease is renewed or tried "           \
      "(less than --lease-renew-deadline)", .min = 100, .max = 600000 }
/* The TLS files and --insecure-transport, for tools that dial services
 * (tailorctl); services get them from the skeleton. */
#define TLR_SETTING_TLS_CA(type, field)                                                 \
    { "tls-ca", "TAILOR_TLS_CA", TLR_SET_STR, offsetof(type, field), NULL,              \
      "PEM CA bundle the peers' certificates must chain to (tls+tcp:// URLs)" }
#define TLR_SETTING_TLS_CERT(type, field)                                               \
    { "tls-cert", "TAILOR_TLS_CERT", TLR_SET_STR, offsetof(type, field), NULL,          \
      "PEM certificate presented to peers; its subject CN is this process's identity" }
#define TLR_SETTING_TLS_KEY(type, field)                                                \
    { "tls-key", "TAILOR_TLS_KEY", TLR_SET_STR, offsetof(type, field), NULL,            \
      "PEM private key of --tls-cert" }
#define TLR_SETTING_INSECURE_TRANSPORT(type, field)                                     \
    { "insecure-transport", "TAILOR_INSECURE_TRANSPORT", TLR_SET_BOOL,                  \
      offsetof(type, field), "false",                                                   \
      "allow plaintext tcp:// URLs (no encryption, no authentication)" }

/* Karpenter's MIN_VALUES_POLICY and PREFERENCE_POLICY (an enum field:
 * 0 Strict / Respect); help says what the service does with it. */
#define TLR_SETTING_MIN_VALUES_POLICY(type, field, help)                                \
    { "min-values-policy", "MIN_VALUES_POLICY", TLR_SET_ENUM, offsetof(type, field),    \
      "Strict", help, .choices = (const char *const[]){ "Strict", "BestEffort", NULL } }
#define TLR_SETTING_PREFERENCE_POLICY(type, field, help)                                \
    { "preference-policy", "PREFERENCE_POLICY", TLR_SET_ENUM, offsetof(type, field),    \
      "Respect", help, .choices = (const char *const[]){ "Respect", "Ignore", NULL } }

/* Run the service; returns the process exit code.  argv, ops: borrowed. */
int tlr_service_main(int argc, char **argv, const tlr_service_ops *ops);

/* Borrowed handles, valid between start and stop. */
tlr_loop    *tlr_service_loop(tlr_service *svc);
tlr_logger  *tlr_service_log(tlr_service *svc);
tlr_metrics *tlr_service_metrics(tlr_service *svc);
/* "solver/<hostname>/<pid>": the sender id put in envelopes. */
const char  *tlr_service_id(const tlr_service *svc);
/* Thread-safe.  reason (copied) is what /readyz says while not ready. */
void tlr_service_set_ready(tlr_service *svc, bool ready, const char *reason);
/* Thread-safe.  What Ping says in `leader`: this replica holds the Lease
 * and may act (active/passive services). */
void tlr_service_set_leader(tlr_service *svc, bool leader);
/* Ask for a clean shutdown, as SIGTERM does. */
void tlr_service_shutdown(tlr_service *svc);

#endif

/* ---- endpoints: nng sockets wired to the loop, metrics and Ping ------- */
#include "tlr_pubsub.h"
#include "tlr_rep.h"
#include "tlr_tls.h"

/* The service's certificates, for the clients and subscribers it makes
 * itself (tlr_req_opts.tls, tlr_sub_opts.tls); NULL without --tls-cert.
 * Borrowed, valid until stop returns. */
tlr_tls *tlr_service_tls(tlr_service *svc);

/* Serve routes (borrowed table; copied) on url.  Adds a Ping route that
 * reports this service's name, id, version, uptime and readiness, and
 * counts every request in tailor_rpc_requests_total{type,code} and
 * tailor_rpc_duration_seconds{type}.  Over tls+tcp:// each route's allow
 * list says which peer identities may send it (Ping: any verified peer).
 * On TLR_OK *out is new and owned: free with tlr_rep_server_free() in
 * ops->stop. */
int tlr_service_listen(tlr_service *svc, const char *url, size_t max_msg,
                       const tlr_rep_route *routes, size_t nroutes,
                       tlr_rep_server **out);

/* Publish on url (listening; with dial, dialling a subscriber that
 * listens).  allow: the subscriber identities served over TLS
 * (NULL-terminated, borrowed, must outlive the publisher; NULL = any
 * verified peer).  On TLR_OK *out is new and owned: tlr_pub_free(). */
int tlr_service_publish(tlr_service *svc, const char *url, size_t max_msg,
                        const char *const *allow, tlr_pub **out);
int tlr_service_publish_dial(tlr_service *svc, const char *url, size_t max_msg,
                             const char *const *allow, tlr_pub **out);

/* A route for a request this build does not handle yet: it answers
 * Status{UNIMPLEMENTED} naming the service and the request type. */
tlr_rep_route tlr_service_route_unimplemented(tlr_service *svc,
                                              const ProtobufCMessageDescriptor *request);
