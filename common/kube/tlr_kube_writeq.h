/* tlr_kube_writeq.h - best-effort writes (core/v1 Events, merge patches)
 * off the caller's thread.
 *
 * A service loop must never wait on the API server to say something to a
 * user.  tlr_kube_writeq_event() and tlr_kube_writeq_patch() copy the
 * request into a bounded ring and return at once; worker threads write it.
 * Past the ceiling writes are dropped and counted: they are best effort, as
 * in client-go's event broadcaster, and a patch that matters is made again
 * by the caller's next reconcile.  Two workers may reorder writes: a patch
 * that must not overtake another carries metadata.resourceVersion.
 * Freeing the queue flushes what is queued for about two seconds, then
 * drops the rest.
 */
#ifndef TLR_KUBE_WRITEQ_H
#define TLR_KUBE_WRITEQ_H

#include <stddef.h>

#include "tlr_kube.h"

/* One Event about one object.  Every string is borrowed. */
typedef struct tlr_kube_event_spec {
    const char *kind;          /* involvedObject.kind: "NodeClaim" */
    const char *api_version;   /* involvedObject.apiVersion: "karpenter.sh/v1" */
    const char *ns;            /* NULL or "" for cluster-scoped objects */
    const char *name;
    const char *uid;           /* NULL or "" when unknown */
    const char *type;          /* "Normal" or "Warning" */
    const char *reason;        /* "Launched" */
    const char *message;       /* NULL: "" */
} tlr_kube_event_spec;

/* Write one Event now (blocking).  Cluster-scoped objects get their Events
 * in "default", where kubectl describe looks for them.  source is
 * source.component, reporting reportingComponent (both borrowed).  Errors
 * as tlr_kube_create_obj. */
int tlr_kube_event_write(tlr_kube *kc, const tlr_kube_event_spec *e, const char *source,
                         const char *reporting);

typedef struct tlr_kube_writeq tlr_kube_writeq;

typedef struct tlr_kube_writeq_opts {
    tlr_kube *kc;              /* borrowed; outlives the queue */
    tlr_logger *log;           /* borrowed; may be NULL */
    size_t max;                /* queued writes; 0: 50000 */
    int threads;               /* workers, 1..8; 0: 2 */
    const char *source;        /* borrowed (copied); source.component */
    const char *reporting;     /* borrowed (copied); reportingComponent */
} tlr_kube_writeq_opts;

/* o is borrowed.  *out is new and owned: tlr_kube_writeq_free() it. */
void tlr_kube_writeq_create(const tlr_kube_writeq_opts *o, tlr_kube_writeq **out);
/* Flush for about two seconds, drop the rest, join the workers. */
void tlr_kube_writeq_free(tlr_kube_writeq *q);         /* NULL is fine */

/* Queue one Event (copied).  TLR_E_TOOBIG, counted as dropped, when the
 * queue is full or has no worker. */
int tlr_kube_writeq_event(tlr_kube_writeq *q, const tlr_kube_event_spec *e);

/* Queue a patch (pt) of res ns/name (sub: NULL or "status"; ns NULL or ""
 * for cluster-scoped kinds) with patch, JSON text.  Strings are copied,
 * except res's, which must be static (the TLR_KUBE_RES_* constants).
 * Failures are logged, naming the object, and not retried.  TLR_E_TOOBIG as
 * tlr_kube_writeq_event. */
int tlr_kube_writeq_patch(tlr_kube_writeq *q, const tlr_kube_res *res, const char *ns,
                          const char *name, const char *sub, tlr_kube_patch_type pt,
                          const char *patch);

/* Writes dropped so far (queue full). */
size_t tlr_kube_writeq_dropped(tlr_kube_writeq *q);

#endif
