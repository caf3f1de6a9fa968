/* tlr_kube.h - a Kubernetes API client on libcurl + json-c.
 *
 * Three layers, each usable on its own:
 *
 *   1. Configuration (tlr_kube_config): where the API server is and how to
 *      prove who we are.  Read from a kubeconfig file (current context or a
 *      named one: server, certificate-authority(-data), token / tokenFile,
 *      client-certificate(-data) / client-key(-data), `exec` credential
 *      plugins such as `aws eks get-token`, insecure-skip-tls-verify) or
 *      from the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT
 *      and /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,
 *      namespace}).
 *
 *   2. The client (tlr_kube): blocking verbs - get, list (one page at a
 *      time, or all pages through a per-item callback), watch (streamed:
 *      one event decoded at a time as bytes arrive), create, update, patch,
 *      delete, and subresources (status, eviction, binding).  Every verb is
 *      thread-safe: each call uses its own curl handle; credentials (an exec
 *      plugin's token, a rotated service-account token) are refreshed under
 *      a lock, before they expire or when the token file changes.  TLS is
 *      verified unless the kubeconfig explicitly says
 *      insecure-skip-tls-verify: true (then a warning is logged; with a
 *      certificate authority as well the kubeconfig is refused, as
 *      client-go refuses it).  Tokens are never logged, and a kubeconfig
 *      that would send credentials over plain http to a host other than
 *      this one's loopback is refused.
 *
 *   3. The informer (tlr_kube_informer): list + watch one resource kind on
 *      a background thread and hand the events to a tlr_loop thread through
 *      a bounded queue, so the handler runs on the service's loop thread and
 *      needs no locks.  See informer.c for the design.
 *
 * Errors: every verb returns TLR_OK or a TLR_E_* code mapped from the HTTP
 * status - 404 NOTFOUND, 409 CONFLICT (and AlreadyExists: EXISTS), 410
 * GONE, 401/403 AUTH, 429 THROTTLED, 5xx UNAVAILABLE, other 4xx INVAL,
 * transport failure IO, timeout TIMEOUT, a response over the size ceiling
 * TOOBIG, an unparseable body PARSE.  When st is not NULL it receives the
 * HTTP code and the Kubernetes Status reason/message for the log.
 *
 * Retry-After: a 429 or 503 carrying Retry-After (API Priority and
 * Fairness sends "Retry-After: 1"; seconds or an HTTP-date) is sent again
 * after that long, as client-go does -- each wait capped at 10 s, at most 5
 * times, never past the calling thread's deadline (tlr_cancel.h), and a
 * shutdown ends the wait with TLR_E_CANCELED.  Without Retry-After, or
 * once those run out, the 429/503 is the caller's (THROTTLED/UNAVAILABLE).
 *
 * Ownership: json_object pointers passed in are borrowed; those returned
 * through an out-parameter are new and owned by the caller (json_object_put
 * them); those passed to callbacks are borrowed for the duration of the
 * callback (json_object_get() one to keep it).
 */
#ifndef TLR_KUBE_H
#define TLR_KUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "tlr_fence.h"
#include "tlr_log.h"
#include "tlr_loop.h"

/* ------------------------------------------------------------------ */
/* Resources                                                            */

/* One resource kind, addressed the way the API server routes it. */
typedef struct tlr_kube_res {
    const char *group;      /* "" for the core group, "apps", "karpenter.sh" */
    const char *version;    /* "v1" */
    const char *plural;     /* "pods", "nodeclaims" */
    bool        namespaced;
} tlr_kube_res;

#define TLR_KUBE_RES_PODS         ((tlr_kube_res){ "", "v1", "pods", true })
#define TLR_KUBE_RES_NODES        ((tlr_kube_res){ "", "v1", "nodes", false })
#define TLR_KUBE_RES_EVENTS       ((tlr_kube_res){ "", "v1", "events", true })
#define TLR_KUBE_RES_NAMESPACES   ((tlr_kube_res){ "", "v1", "namespaces", false })
#define TLR_KUBE_RES_CONFIGMAPS   ((tlr_kube_res){ "", "v1", "configmaps", true })
#define TLR_KUBE_RES_DAEMONSETS   ((tlr_kube_res){ "apps", "v1", "daemonsets", true })
#define TLR_KUBE_RES_DEPLOYMENTS  ((tlr_kube_res){ "apps", "v1", "deployments", true })
#define TLR_KUBE_RES_PDBS         ((tlr_kube_res){ "policy", "v1", "poddisruptionbudgets", true })
#define TLR_KUBE_RES_LEASES       ((tlr_kube_res){ "coordination.k8s.io", "v1", "leases", true })
#define TLR_KUBE_RES_NODEPOOLS    ((tlr_kube_res){ "karpenter.sh", "v1", "nodepools", false })
#define TLR_KUBE_RES_NODECLAIMS   ((tlr_kube_res){ "karpenter.sh", "v1", "nodeclaims", false })
#define TLR_KUBE_RES_EC2NODECLASSES \
    ((tlr_kube_res){ "karpenter.k8s.aws", "v1", "ec2nodeclasses", false })

/* Write the request path for res into buf (len bytes, NUL-terminated):
 * "/api/v1/namespaces/ns/pods/name/status".  ns may be NULL or "" (all
 * namespaces; ignored for cluster-scoped kinds), name and sub may be NULL.
 * TLR_E_TOOBIG if it does not fit; TLR_E_INVAL for a name or namespace
 * holding '/', '?', '#' or '%' (they would change the route). */
int tlr_kube_path(const tlr_kube_res *res, const char *ns, const char *name,
                  const char *sub, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Configuration                                                        */

/* An exec credential plugin (client.authentication.k8s.io ExecConfig). */
typedef struct tlr_kube_exec {
    char  *command;         /* owned; resolved on PATH if it has no '/' */
    char **args;            /* owned; nargs entries */
    size_t nargs;
    char **env;             /* owned; "NAME=value" entries added to the env */
    size_t nenv;
    char  *api_version;     /* owned; echoed in KUBERNETES_EXEC_INFO */
} tlr_kube_exec;

/* Everything needed to reach and authenticate to one API server.  Every
 * string is owned by the config (NULL when absent); *_data fields hold the
 * decoded bytes (PEM), *_file fields paths made absolute against the
 * kubeconfig's directory. */
typedef struct tlr_kube_config {
    char *server;           /* "https://10.0.0.1:443", no trailing '/' */
    char *ca_file;
    char *ca_data;   size_t ca_len;
    char *cert_file;
    char *cert_data; size_t cert_len;
    char *key_file;
    char *key_data;  size_t key_len;     /* secret */
    char *token;                         /* secret: never log it */
    char *token_file;                    /* re-read when it changes */
    char *username, *password;           /* basic auth; secret */
    tlr_kube_exec *exec;                 /* owned; NULL without a plugin */
    char *namespace_;                    /* context namespace or SA namespace */
    char *context;                       /* the context used (kubeconfig) */
    bool  insecure;                      /* insecure-skip-tls-verify: true */
    bool  in_cluster;
} tlr_kube_config;

/* Parse kubeconfig YAML/JSON text yaml[0..len) (borrowed).  context: the
 * context to use (NULL: current-context).  base_dir: directory relative
 * file paths are resolved against (NULL: the working directory).
 * On TLR_OK *out is new and owned: tlr_kube_config_free() it.
 * TLR_E_PARSE: malformed YAML or wrong types; TLR_E_NOTFOUND: the context,
 * its cluster or its user is missing; TLR_E_INVAL: no server, or bad
 * base64 in a *-data field.  A one-line reason naming the field goes to
 * err (errlen bytes) when err is not NULL. */
int tlr_kube_config_parse(const char *yaml, size_t len, const char *context,
                          const char *base_dir, tlr_kube_config **out,
                          char *err, size_t errlen);

/* Read the kubeconfig at path (NULL: $KUBECONFIG's first entry, else
 * ~/.kube/config).  Errors as tlr_kube_config_parse, plus TLR_E_IO. */
int tlr_kube_config_load(const char *path, const char *context,
                         tlr_kube_config **out, char *err, size_t errlen);

/* Where the in-cluster configuration comes from; NULL fields take the
 * real defaults (env KUBERNETES_SERVICE_HOST / _PORT, and
 * /var/run/secrets/kubernetes.io/serviceaccount). Tests override them. */
typedef struct tlr_kube_incluster_opts {
    const char *host;       /* borrowed */
    const char *port;       /* borrowed */
    const char *sa_dir;     /* borrowed; holds token, ca.crt, namespace */
} tlr_kube_incluster_opts;

/* In-cluster configuration: server https://host:port, CA file
 * sa_dir/ca.crt, token_file sa_dir/token (the token itself is read by the
 * client, and re-read when the file changes), namespace from
 * sa_dir/namespace.  o may be NULL.  TLR_E_NOTFOUND when not running in a
 * cluster (no host/port or no token file). */
int tlr_kube_config_incluster(const tlr_kube_incluster_opts *o,
                              tlr_kube_config **out, char *err, size_t errlen);

void tlr_kube_config_free(tlr_kube_config *c);     /* NULL is fine */

/* Parse an ExecCredential JSON document (the plugin's stdout).  On TLR_OK
 * *token is new and owned (secret) and *expiry_ms is the Unix ms of
 * status.expirationTimestamp, or 0 when it has none.  TLR_E_PARSE for
 * malformed JSON or a missing status.token. */
int tlr_kube_exec_credential_parse(const char *json, size_t len,
                                   char **token, int64_t *expiry_ms);

/* ------------------------------------------------------------------ */
/* The client                                                           */

typedef struct tlr_kube tlr_kube;

typedef struct tlr_kube_opts {
    tlr_logger *log;           /* borrowed; may be NULL */
    size_t   max_response;     /* ceiling on one response body / one watch
                                  event; 0: 64 MiB */
    int      timeout_ms;       /* per request (not watches); 0: 30 s */
    int      connect_timeout_ms; /* 0: 10 s */
    const char *user_agent;    /* borrowed; NULL: "tailor/1" */
    const tlr_fence *fence;    /* borrowed; NULL: unfenced.  Every write (any
                                  method but GET) is refused with
                                  TLR_E_CANCELED, unsent, once the fence has
                                  run out, and is cut when it runs out
                                  (tlr_fence.h, tlr_lease.h) */
} tlr_kube_opts;

/* Create a client for cfg, which is handed over (the client owns and frees
 * it, also on error).  o is borrowed and may be NULL.  On TLR_OK *out is
 * new and owned: tlr_kube_free() it.  Nothing is contacted yet. */
int  tlr_kube_create(tlr_kube_config *cfg, const tlr_kube_opts *o,
                     tlr_kube **out);
/* The usual service wiring: in_cluster ? tlr_kube_config_incluster(NULL)
 * : tlr_kube_config_load(kubeconfig, NULL), then tlr_kube_create(). */
int  tlr_kube_connect(const char *kubeconfig, bool in_cluster,
                      const tlr_kube_opts *o, tlr_kube **out,
                      char *err, size_t errlen);
void tlr_kube_free(tlr_kube *kc);                    /* NULL is fine */

/* The namespace of the config (context namespace, the service account's
 * namespace, else "default").  Borrowed: lives as long as kc. */
const char *tlr_kube_namespace(const tlr_kube *kc);

/* What the API server said when a call failed (or succeeded). */
typedef struct tlr_kube_status {
    long http;                 /* HTTP status, 0 if no response */
    char reason[64];           /* Status.reason: "NotFound", "Conflict" */
    char message[512];         /* Status.message, or the curl error */
} tlr_kube_status;

/* The TLR_E_* code for an HTTP status (200..299 -> TLR_OK). */
int  tlr_kube_http_err(long http);

/* GET one object.  ns: NULL/"" for cluster-scoped kinds.  On TLR_OK *out
 * is new and owned.  st may be NULL (true for every verb below). */
int  tlr_kube_get(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                  const char *name, json_object **out, tlr_kube_status *st);

typedef struct tlr_kube_list_opts {
    const char *label_selector;     /* borrowed; NULL: none */
    const char *field_selector;     /* borrowed; NULL: none */
    int64_t     limit;              /* page size; 0: 500 */
    const char *continue_token;     /* borrowed; tlr_kube_list_page only */
    const char *resource_version;   /* borrowed; NULL: most recent */
} tlr_kube_list_opts;

/* One page of a list: on TLR_OK *out is the List object (new, owned); its
 * metadata.continue is the token for the next page ("" or absent at the
 * end).  TLR_E_GONE when the continue token expired. */
int  tlr_kube_list_page(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                        const tlr_kube_list_opts *lo, json_object **out,
                        tlr_kube_status *st);

/* Called once per item; item is borrowed.  Return TLR_OK to go on,
 * anything else stops the list and is returned. */
typedef int (*tlr_kube_item_cb)(void *arg, json_object *item);

/* List every page (lo->limit items at a time, so memory is bounded by one
 * page), calling cb for each item.  On TLR_OK, if rv is not NULL, *rv is
 * the list's resourceVersion (new, owned: free()) - where a watch resumes. */
int  tlr_kube_list(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                   const tlr_kube_list_opts *lo, tlr_kube_item_cb cb,
                   void *arg, char **rv, tlr_kube_status *st);

typedef enum tlr_kube_event_type {
    TLR_KUBE_ADDED = 1,
    TLR_KUBE_MODIFIED,
    TLR_KUBE_DELETED,
    TLR_KUBE_BOOKMARK,
    TLR_KUBE_ERROR,           /* obj is a Status; 410 -> the watch ends GONE */
    TLR_KUBE_RELIST_START,    /* informer only: a full list begins */
    TLR_KUBE_RELIST_DONE,     /* informer only: it ended; objects not seen
                                 since RELIST_START are gone */
} tlr_kube_event_type;

const char *tlr_kube_event_name(tlr_kube_event_type t);  /* "ADDED" */

/* One watch event; obj is borrowed for the callback.  Return TLR_OK to go
 * on; anything else ends the watch and is returned by tlr_kube_watch. */
typedef int (*tlr_kube_event_cb)(void *arg, tlr_kube_event_type type,
                                 json_object *obj);

/* A watch with allowWatchBookmarks hears from the API server at least
 * once a minute (kube-apiserver sends a BOOKMARK about every 60 s), so 90 s
 * of silence means the connection is dead, however quiet the kind.  TCP
 * keepalive (idle 30 s, then every 10 s) also catches a peer that
 * vanished. */
#define TLR_KUBE_WATCH_IDLE_S 90

typedef struct tlr_kube_watch_opts {
    const char *label_selector;     /* borrowed */
    const char *field_selector;     /* borrowed */
    const char *resource_version;   /* borrowed; resume point */
    bool        allow_bookmarks;
    int         timeout_s;          /* server-side timeoutSeconds; 0: 300 */
    /* A stream that delivers no byte for this long (plus up to 6 s: curl
     * averages its speed over a few seconds) is given up (curl's
     * low-speed limit) and tlr_kube_watch returns TLR_OK, to be resumed
     * from last_rv like one the server ended.  0: TLR_KUBE_WATCH_IDLE_S.
     * Keep it above the bookmark interval when allow_bookmarks is set. */
    int         idle_s;
    /* Polled about once a second; when it returns true the watch ends with
     * TLR_E_CANCELED.  NULL: never. */
    bool (*cancel)(void *arg);
    void *cancel_arg;
} tlr_kube_watch_opts;

/* Stream a watch, calling cb for each event as it arrives (events are
 * decoded incrementally; none is held beyond its callback).  Returns
 * TLR_OK when the server ends the stream normally (timeout), TLR_E_GONE
 * on 410 or an ERROR event with code 410 (relist), the callback's code,
 * TLR_E_CANCELED, or a transport/HTTP error.  If last_rv is not NULL, it
 * is set to the last resourceVersion seen (new, owned; NULL if none). */
int  tlr_kube_watch(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                    const tlr_kube_watch_opts *wo, tlr_kube_event_cb cb,
                    void *arg, char **last_rv, tlr_kube_status *st);

/* POST body (borrowed) to create an object.  On TLR_OK, if out is not
 * NULL, *out is the created object (new, owned).  TLR_E_EXISTS when it
 * already exists. */
int  tlr_kube_create_obj(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                         json_object *body, json_object **out,
                         tlr_kube_status *st);

/* PUT body (borrowed; must carry metadata.name and, for optimistic
 * concurrency, metadata.resourceVersion).  sub: NULL or "status".
 * TLR_E_CONFLICT when the resourceVersion is stale. */
int  tlr_kube_update(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                     const char *name, const char *sub, json_object *body,
                     json_object **out, tlr_kube_status *st);

typedef enum tlr_kube_patch_type {
    TLR_KUBE_PATCH_MERGE = 0,       /* application/merge-patch+json */
    TLR_KUBE_PATCH_STRATEGIC,       /* application/strategic-merge-patch+json */
    TLR_KUBE_PATCH_JSON,            /* application/json-patch+json */
} tlr_kube_patch_type;

/* PATCH with patch (borrowed JSON text).  sub: NULL or "status". */
int  tlr_kube_patch(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                    const char *name, const char *sub, tlr_kube_patch_type pt,
                    const char *patch, json_object **out, tlr_kube_status *st);

/* DELETE.  propagation: NULL, "Background", "Foreground" or "Orphan".
 * TLR_E_NOTFOUND when already gone (callers that only want it gone treat
 * that as success). */
int  tlr_kube_delete(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                     const char *name, const char *propagation,
                     tlr_kube_status *st);

/* POST an Eviction for pod ns/name.  TLR_E_THROTTLED (429) when a PDB
 * forbids it now; TLR_E_NOTFOUND when the pod is gone. */
int  tlr_kube_evict(tlr_kube *kc, const char *ns, const char *name,
                    tlr_kube_status *st);

/* POST a Binding of pod ns/name to node. */
int  tlr_kube_bind(tlr_kube *kc, const char *ns, const char *name,
                   const char *node, tlr_kube_status *st);

/* Any request: method "GET"/"POST"/..., path from tlr_kube_path (plus a
 * query string), content_type for body (NULL: application/json), body
 * (borrowed, NULL for none).  On TLR_OK, if out is not NULL, *out is the
 * parsed response (new, owned; NULL for an empty body). */
int  tlr_kube_request(tlr_kube *kc, const char *method, const char *path,
                      const char *content_type, const char *body,
                      json_object **out, tlr_kube_status *st);

/* ------------------------------------------------------------------ */
/* The incremental watch decoder (used by tlr_kube_watch; public for tests
 * and fuzzing).  Bytes go in as they arrive, in chunks of any size; each
 * complete {"type":...,"object":...} document yields one callback. */

typedef struct tlr_kube_wdec tlr_kube_wdec;

/* max_event: ceiling on one event's bytes (0: 64 MiB).  On TLR_OK *out is
 * new and owned: tlr_kube_wdec_free() it. */
int  tlr_kube_wdec_create(size_t max_event, tlr_kube_wdec **out);
void tlr_kube_wdec_free(tlr_kube_wdec *d);           /* NULL is fine */
/* Feed buf[0..len) (borrowed).  Calls cb for every event completed by
 * these bytes.  TLR_E_PARSE: not JSON, or an event without a known type
 * or an object; TLR_E_TOOBIG: one event over max_event; otherwise the
 * callback's code.  After an error the decoder is unusable. */
int  tlr_kube_wdec_feed(tlr_kube_wdec *d, const char *buf, size_t len,
                        tlr_kube_event_cb cb, void *arg);
/* Bytes held of an incomplete event (0 between events). */
size_t tlr_kube_wdec_pending(const tlr_kube_wdec *d);

/* ------------------------------------------------------------------ */
/* The informer                                                         */

typedef struct tlr_kube_informer tlr_kube_informer;

typedef struct tlr_kube_informer_opts {
    tlr_kube_res res;
    const char  *ns;               /* borrowed (copied); NULL: all */
    const char  *label_selector;   /* borrowed (copied) */
    const char  *field_selector;   /* borrowed (copied) */
    int64_t      page_limit;       /* 0: 500 */
    size_t       queue_max;        /* events buffered for the loop; 0: 4096 */
    int          backoff_min_ms;   /* 0: 200 */
    int          backoff_max_ms;   /* 0: 30000 */
    int          watch_timeout_s;  /* 0: 300 */
    int          watch_idle_s;     /* silence that ends a watch; 0:
                                    * TLR_KUBE_WATCH_IDLE_S */
    /* Runs on the loop thread, in order: RELIST_START, ADDED for every
     * object listed, RELIST_DONE (the handler drops objects it holds that
     * were not listed), then ADDED/MODIFIED/DELETED/BOOKMARK as the watch
     * reports them; again from RELIST_START after a 410.  obj is borrowed
     * (NULL for RELIST_*).  The return value is ignored. */
    tlr_kube_event_cb handler;
    void        *arg;
    tlr_logger  *log;              /* borrowed */
} tlr_kube_informer_opts;

/* Start list+watch of o->res on a new background thread; the handler runs
 * on loop's thread (an eventfd registered with tlr_loop_add_fd).  kc and
 * loop are borrowed and must outlive the informer.  On TLR_OK *out is new
 * and owned: tlr_kube_informer_free() it (on the loop thread, before the
 * loop is freed). */
int  tlr_kube_informer_start(tlr_kube *kc, tlr_loop *loop,
                             const tlr_kube_informer_opts *o,
                             tlr_kube_informer **out);
/* True once the first RELIST_DONE has been handed to the handler. */
bool tlr_kube_informer_synced(const tlr_kube_informer *inf);
/* Watches restarted (errors, 410s, server timeouts) since start. */
uint64_t tlr_kube_informer_restarts(const tlr_kube_informer *inf);
/* Stop the thread (it notices within about a second), drop queued events. */
void tlr_kube_informer_free(tlr_kube_informer *inf);  /* NULL is fine */

#endif
