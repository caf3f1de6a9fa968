/* ks_store.h - kubesim's object store: the one place cluster state lives.
 *
 * Everything kubesim serves, and everything its in-process controllers
 * (scheduler, workload controllers, PDB logic, kubelet simulator) read
 * and write, goes through this API.  The HTTP layer (api.c) is just one
 * more client of it.
 *
 * Kinds.  The served resource kinds are one table (ks_kind, indexed by
 * ks_kind_id): group, version, plural, singular, Kind, short names,
 * scope and subresources.  Discovery, routing and storage all read it.
 *
 * Objects.  A stored object is immutable and reference counted (ks_obj):
 * its serialised JSON text plus the few fields selectors and controllers
 * need without parsing (namespace, name, uid, labels, spec.nodeName,
 * status.phase, the controller owner's uid).  A new version replaces the
 * old one; readers that hold a reference keep a consistent copy without
 * holding any lock.  Listing 100k pods therefore takes references under
 * the lock and serialises outside it (mostly memcpy).
 *
 * Versions.  One global resourceVersion counter (uint64, starts at 1) is
 * bumped by every change; each object carries the version of its last
 * change.  Every change is also appended to a bounded history ring
 * (ks_store_opts.history events) with the previous version of the
 * object, which serves watch resumption and consistent paged lists:
 * a list "as of" version V is the current state with newer changes
 * undone from history.  Asking for a version older than the ring's
 * oldest entry is TLR_E_GONE (HTTP 410, reason Expired).
 *
 * Threads.  All functions are thread safe (one mutex).  Watchers and
 * controllers wait on a condition variable for the version to move
 * (ks_store_wait).  No store callback runs with the lock held, so any
 * function here may be called from a controller.
 *
 * Errors.  Functions return TLR_OK or a TLR_E_* code; when `st` is not
 * NULL a failure also fills it with what the API would answer (HTTP code,
 * reason such as "NotFound", and a message naming the object), so HTTP
 * handlers and controllers report the same thing.
 *   TLR_E_NOTFOUND  404 NotFound        TLR_E_EXISTS   409 AlreadyExists
 *   TLR_E_CONFLICT  409 Conflict        TLR_E_INVAL    422 Invalid / 400 BadRequest
 *   TLR_E_GONE      410 Expired         TLR_E_PARSE    400 BadRequest
 *   TLR_E_TOOBIG    413 RequestEntityTooLarge
 *   TLR_E_THROTTLED 429 TooManyRequests (eviction blocked by a PDB)
 *
 * Controllers.  ks_store_add_controller() runs fn(store, arg) on its own
 * thread every period_ms, and sooner when an object of one of the kinds
 * in `wake_kinds` changes (debounced by `min_gap_ms`).  Threads stop in
 * ks_store_free() (or ks_store_stop_controllers()).
 */
#ifndef KS_STORE_H
#define KS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tlr_log.h"

/* ------------------------------------------------------------------ */
/* Kinds                                                               */
/* ------------------------------------------------------------------ */

typedef enum ks_kind_id {
    KS_POD = 0,
    KS_NODE,
    KS_NAMESPACE,
    KS_EVENT,
    KS_CONFIGMAP,
    KS_SECRET,
    KS_SERVICE,
    KS_ENDPOINTS,
    KS_SERVICEACCOUNT,
    KS_PDB,
    KS_DEPLOYMENT,
    KS_REPLICASET,
    KS_STATEFULSET,
    KS_DAEMONSET,
    KS_CONTROLLERREVISION,
    KS_LEASE,
    KS_NODEPOOL,
    KS_NODECLAIM,
    KS_EC2NODECLASS,
    KS_KIND_COUNT
} ks_kind_id;

/* Bit for ks_kind_id k in a kind mask (ks_controller.wake_kinds ...). */
#define KS_KIND_BIT(k) (1u << (k))
#define KS_ALL_KINDS   ((1u << KS_KIND_COUNT) - 1)

/* Subresources a kind serves (ks_kind.subresources). */
enum {
    KS_SUB_STATUS   = 1 << 0,  /* <plural>/status: PUT/PATCH change only .status */
    KS_SUB_SCALE    = 1 << 1,  /* <plural>/scale (autoscaling/v1 Scale) */
    KS_SUB_BINDING  = 1 << 2,  /* pods/binding  -> ks_pods_bind() */
    KS_SUB_EVICTION = 1 << 3,  /* pods/eviction -> ks_pods_evict() */
};

typedef struct ks_kind {
    ks_kind_id  id;
    const char *group;        /* "" for core, "apps", "karpenter.sh" ... */
    const char *version;      /* "v1" */
    const char *plural;       /* "pods": the URL segment and resource name */
    const char *singular;     /* "pod" */
    const char *kind;         /* "Pod" */
    const char *list_kind;    /* "PodList" */
    bool        namespaced;
    unsigned    subresources; /* KS_SUB_* */
    const char *short_names[3]; /* NULL-terminated: "po", "deploy" ... */
    const char *categories[2];  /* NULL-terminated: "all" ... */
} ks_kind;

/* The table entry for id; NULL when id is out of range. */
const ks_kind *ks_kind_get(ks_kind_id id);
/* Look a kind up by group ("" = core), version and plural (exact match);
 * NULL when not served. */
const ks_kind *ks_kind_find(const char *group, const char *version, const char *plural);
/* Look a kind up by its Kind ("Pod") and apiVersion ("v1", "apps/v1"). */
const ks_kind *ks_kind_by_kind(const char *api_version, const char *kind);
/* "v1" or "apps/v1": the apiVersion written into objects of this kind. */
const char *ks_kind_api_version(const ks_kind *k, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Errors as the API reports them                                      */
/* ------------------------------------------------------------------ */

typedef struct ks_status {
    int  code;             /* HTTP status: 404, 409, 422 ... */
    const char *reason;    /* static: "NotFound", "AlreadyExists", ... */
    char message[512];     /* for the user, names the object */
    /* Status.details, optional (zero = omitted): */
    char name[256];           /* details.name */
    const char *kind;         /* details.kind: the plural ("pods"); static */
    const char *group;        /* details.group; static */
    const char *cause_reason; /* details.causes[0].reason ("DisruptionBudget"); static */
    char cause_message[256];  /* details.causes[0].message */
    char cause_field[160];    /* details.causes[0].field ("metadata.name"); "" = omitted */
    int  retry_after;         /* details.retryAfterSeconds; 0 = omitted */
} ks_status;

/* Fill st (if not NULL) and return rc; the message is printf-formatted. */
int ks_status_set(ks_status *st, int rc, int code, const char *reason,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Set details.kind/group from k and details.name (st may be NULL). */
void ks_status_details(ks_status *st, const ks_kind *k, const char *name);

/* ------------------------------------------------------------------ */
/* Stored objects                                                      */
/* ------------------------------------------------------------------ */

typedef struct ks_obj ks_obj;

/* Immutable fields of one stored object version; all borrowed from obj,
 * valid while a reference is held.  Absent strings are "" (never NULL). */
const char *ks_obj_json(const ks_obj *o);       /* full object, compact JSON */
size_t      ks_obj_json_len(const ks_obj *o);
ks_kind_id  ks_obj_kind(const ks_obj *o);
const char *ks_obj_namespace(const ks_obj *o);
const char *ks_obj_name(const ks_obj *o);
const char *ks_obj_uid(const ks_obj *o);
const char *ks_obj_node_name(const ks_obj *o);  /* spec.nodeName (pods) */
const char *ks_obj_phase(const ks_obj *o);      /* status.phase */
const char *ks_obj_owner_uid(const ks_obj *o);  /* controller ownerReference uid */
uint64_t    ks_obj_rv(const ks_obj *o);         /* metadata.resourceVersion */
bool        ks_obj_deleting(const ks_obj *o);   /* has deletionTimestamp */
/* The value of label key, or NULL when the object has no such label. */
const char *ks_obj_label(const ks_obj *o, const char *key);
/* Parse the object: a new json_object owned by the caller (json_object_put). */
json_object *ks_obj_parse(const ks_obj *o);

void ks_obj_ref(ks_obj *o);
void ks_obj_unref(ks_obj *o);                   /* NULL is fine */

/* An array of references handed to the caller by list calls. */
typedef struct ks_objlist {
    ks_obj **items;   /* owned, each holds one reference */
    size_t   n;
    uint64_t rv;      /* the list's resourceVersion */
    char    *cont;    /* owned; continue token for the next page, NULL at end */
    size_t   remaining; /* items after this page (metadata.remainingItemCount) */
} ks_objlist;
void ks_objlist_free(ks_objlist *l);            /* frees contents; l itself is the caller's */

/* ------------------------------------------------------------------ */
/* Selectors (selector.c)                                              */
/* ------------------------------------------------------------------ */

typedef struct ks_selector ks_selector;

/* Parse a labelSelector query string ("app=web,tier in (a,b),!canary").
 * On TLR_OK *out is new and owned (ks_selector_free); "" or NULL selects
 * everything.  TLR_E_PARSE with st filled (400 BadRequest) otherwise. */
int  ks_label_selector_parse(const char *text, ks_selector **out, ks_status *st);
/* Parse a fieldSelector ("spec.nodeName=n1,status.phase!=Running").
 * Supported fields: metadata.name, metadata.namespace, and for pods
 * spec.nodeName, status.phase; anything else is TLR_E_PARSE (400, "field
 * label not supported"), as the real API answers. */
int  ks_field_selector_parse(ks_kind_id kind, const char *text, ks_selector **out,
                             ks_status *st);
/* Build a label selector from a LabelSelector object (matchLabels +
 * matchExpressions, as in Deployments and PDBs); json borrowed.  A NULL
 * json selects nothing when `null_selects_all` is false (PDB semantics
 * differ by field; callers decide). */
int  ks_label_selector_from_json(json_object *sel, bool null_selects_all,
                                 ks_selector **out, ks_status *st);
bool ks_selector_matches_obj(const ks_selector *s, const ks_obj *o); /* labels or fields, as parsed */
/* Match a label selector against a json labels map (borrowed, may be NULL). */
bool ks_selector_matches_labels(const ks_selector *s, json_object *labels);
bool ks_selector_empty(const ks_selector *s);   /* NULL or no requirements */
void ks_selector_free(ks_selector *s);          /* NULL is fine */

/* ------------------------------------------------------------------ */
/* The store                                                           */
/* ------------------------------------------------------------------ */

typedef struct ks_store ks_store;

typedef struct ks_store_opts {
    size_t history;       /* events kept for watch resume; 0 = 100000 */
    tlr_logger *log;      /* borrowed, may be NULL */
} ks_store_opts;

/* On TLR_OK *out is new and owned: free with ks_store_free().  The store
 * starts with namespaces default, kube-system, kube-public, kube-node-lease. */
int  ks_store_create(const ks_store_opts *o, ks_store **out);
/* Stops controller threads, wakes and fails every waiter, frees all. */
void ks_store_free(ks_store *s);            /* NULL is fine */
/* Mark the store closing: ks_store_wait returns TLR_E_CLOSED from now on. */
void ks_store_close(ks_store *s);

uint64_t ks_store_rv(ks_store *s);          /* the current resourceVersion */
/* Oldest resourceVersion a watch may resume from (older is TLR_E_GONE). */
uint64_t ks_store_oldest_rv(ks_store *s);
size_t   ks_store_count(ks_store *s, ks_kind_id kind);

/* --- reads --------------------------------------------------------- */

/* The current version of kind ns/name (ns ignored for cluster-scoped
 * kinds).  On TLR_OK *out holds a new reference (ks_obj_unref). */
int ks_store_get(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                 ks_obj **out, ks_status *st);
/* Same, parsed: *out is a new json_object owned by the caller. */
int ks_store_get_json(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                      json_object **out, ks_status *st);

typedef struct ks_list_opts {
    const char *ns;              /* NULL or "": all namespaces */
    const ks_selector *labels;   /* borrowed, NULL = all */
    const ks_selector *fields;   /* borrowed, NULL = all */
    size_t limit;                /* 0 = no paging */
    const char *cont;            /* continue token from a previous page, or NULL */
    /* Optional extra filter on each candidate; runs with the store lock
     * held, so it must not call the store. */
    bool (*filter)(const ks_obj *o, void *arg);
    void *filter_arg;
} ks_list_opts;

/* Objects of kind matching o (NULL = all), sorted by namespace/name as
 * etcd orders keys.  With o->limit, one page; out->cont continues it
 * consistently at the first page's resourceVersion (TLR_E_GONE, 410
 * Expired, once history no longer covers it; TLR_E_PARSE for a
 * malformed token).  On TLR_OK *out is filled (ks_objlist_free). */
int ks_store_list(ks_store *s, ks_kind_id kind, const ks_list_opts *o,
                  ks_objlist *out, ks_status *st);

/* --- writes ---------------------------------------------------------
 * obj/patch arguments are borrowed; on TLR_OK *out (when not NULL) holds
 * a new reference to the stored version.  The store fills metadata as the
 * API server does: uid, creationTimestamp, resourceVersion, generation
 * (bumped on spec changes), namespace (from ns; a different
 * metadata.namespace is 400 BadRequest), generateName, apiVersion and kind.
 */

/* Flags for writes. */
enum {
    KS_W_STATUS   = 1 << 0, /* status subresource: change only .status (and
                               labels/annotations are kept as stored) */
    KS_W_NO_RV    = 1 << 1, /* update: ignore metadata.resourceVersion
                               (last write wins, like a PUT without it) */
    KS_W_DRY_RUN  = 1 << 2, /* validate and build the result, store nothing */
    KS_W_ALL      = 1 << 3, /* update spec AND status in one write (one event);
                               for in-process controllers, never set by HTTP */
};

/* Create.  TLR_E_EXISTS (409 AlreadyExists), TLR_E_INVAL (422 Invalid:
 * missing name, bad types, a negative container request or limit in a Pod
 * or a workload's pod template), TLR_E_PARSE (400: a field of the wrong
 * JSON type, a resource value that is not a quantity, as kube-apiserver
 * fails to decode it), TLR_E_NOTFOUND (404: namespace absent).  Updates
 * check the same. */
int ks_store_create_obj(ks_store *s, ks_kind_id kind, const char *ns,
                        json_object *obj, unsigned flags, ks_obj **out, ks_status *st);
/* Replace (PUT).  name must equal metadata.name.  A non-empty
 * metadata.resourceVersion must equal the stored one, else TLR_E_CONFLICT
 * (409 Conflict "the object has been modified").  Without KS_W_STATUS,
 * .status is kept as stored for kinds with a status subresource; with it
 * only .status changes.  Removing the last finalizer of an object being
 * deleted deletes it. */
int ks_store_update(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                    json_object *obj, unsigned flags, ks_obj **out, ks_status *st);

typedef enum ks_patch_type {
    KS_PATCH_MERGE = 0,   /* application/merge-patch+json (RFC 7386) */
    KS_PATCH_STRATEGIC,   /* application/strategic-merge-patch+json */
    KS_PATCH_JSON,        /* application/json-patch+json (RFC 6902) */
} ks_patch_type;

/* Patch: read, apply (patch.c), write back with optimistic concurrency,
 * retrying internally on a concurrent change.  A resourceVersion inside
 * the patch is a precondition (409 on mismatch).  Bad patches:
 * TLR_E_PARSE (400) / TLR_E_INVAL (422). */
int ks_store_patch(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                   ks_patch_type type, const char *patch, size_t len,
                   unsigned flags, ks_obj **out, ks_status *st);

/* Mutate callback for ks_store_modify: edit obj (owned by the store's
 * copy; do not keep it) and return TLR_OK to write it back, TLR_E_CANCELED
 * to leave the object as it is (ks_store_modify then returns TLR_OK with
 * *out the unchanged version), or any other code (with st) to fail. */
typedef int (*ks_mutate_fn)(json_object *obj, void *arg, ks_status *st);
/* Read-modify-write without races: fn runs on a fresh parsed copy, may run
 * more than once if another writer got there first.  flags as for update. */
int ks_store_modify(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                    unsigned flags, ks_mutate_fn fn, void *arg, ks_obj **out,
                    ks_status *st);

typedef enum ks_propagation {
    KS_PROPAGATE_BACKGROUND = 0, /* default: dependents deleted after */
    KS_PROPAGATE_FOREGROUND,     /* treated as background (no GC wait) */
    KS_PROPAGATE_ORPHAN,         /* dependents keep running */
} ks_propagation;

typedef struct ks_delete_opts {
    ks_propagation propagation;
    const char *precondition_uid;  /* NULL or must match (409 Conflict) */
    const char *precondition_rv;   /* NULL or must match (409 Conflict) */
    int64_t grace_seconds;         /* recorded; -1 = default */
} ks_delete_opts;

/* Delete.  An object with finalizers gets metadata.deletionTimestamp and
 * stays (MODIFIED) until an update removes the last finalizer; otherwise
 * it is removed (DELETED).  Dependents (ownerReferences with this uid)
 * are deleted in turn unless propagation is ORPHAN; deleting a namespace
 * deletes everything in it.  o may be NULL.  On TLR_OK *out (if not NULL)
 * holds the last version: deleting or with deletionTimestamp set. */
int ks_store_delete(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                    const ks_delete_opts *o, ks_obj **out, ks_status *st);

/* Convenience for controllers: create/update from JSON text. */
int ks_store_create_text(ks_store *s, ks_kind_id kind, const char *ns,
                         const char *json, ks_obj **out, ks_status *st);

/* --- changes and watch ---------------------------------------------- */

typedef enum ks_event_type {
    KS_EV_ADDED = 0,
    KS_EV_MODIFIED,
    KS_EV_DELETED,
} ks_event_type;

typedef struct ks_event {
    ks_event_type type;
    uint64_t rv;        /* the change's resourceVersion */
    ks_obj  *obj;       /* the new version (for DELETED: the last one) */
    ks_obj  *prev;      /* the version before (NULL for ADDED) */
} ks_event;

/* Events after resourceVersion `since` for kinds in kind_mask, oldest
 * first, at most max (0 = no cap).  On TLR_OK *out is a new array of *n
 * events, each holding references (ks_events_free), and *next is the
 * resourceVersion to pass next time (the last event returned, or the
 * store's version when none matched and nothing is pending).
 * TLR_E_GONE when `since` is older than the history ring. */
int  ks_store_events_since(ks_store *s, uint64_t since, unsigned kind_mask,
                           size_t max, ks_event **out, size_t *n, uint64_t *next);
void ks_events_free(ks_event *ev, size_t n);

/* Block until the store's resourceVersion is above `rv`, timeout_ms
 * passes (TLR_E_TIMEOUT) or the store closes (TLR_E_CLOSED). */
int ks_store_wait(ks_store *s, uint64_t rv, int timeout_ms);

/* --- controllers ---------------------------------------------------- */

typedef struct ks_controller {
    const char *name;             /* for logs; copied */
    int period_ms;                /* run at least this often; > 0 */
    unsigned wake_kinds;          /* KS_KIND_BIT mask: also run soon after these change */
    int min_gap_ms;               /* at least this long between runs (0 = 50) */
    void (*fn)(ks_store *s, void *arg);
    void *arg;                    /* borrowed; must outlive the store */
} ks_controller;

/* Start a thread running c->fn (c copied).  TLR_E_INVAL on bad fields. */
int  ks_store_add_controller(ks_store *s, const ks_controller *c);
/* Stop and join every controller thread (also done by ks_store_free). */
void ks_store_stop_controllers(ks_store *s);

tlr_logger *ks_store_log(ks_store *s);      /* borrowed; may be NULL */

/* Current time as RFC 3339 with second precision ("2024-05-01T10:00:00Z"),
 * as metadata timestamps are written.  buf needs 32 bytes. */
const char *ks_now_rfc3339(char *buf, size_t len);

#endif
