/* tlr_clnt.h - typed clients of tailor's services: one function per RPC
 * of proto/ (docs/contracts.md), over a tlr_req client, with one rule
 * for what comes back.  Every caller -- the launcher, the disruptor,
 * tailorctl, the integration tests -- calls a service through these.
 *
 *   TLR_OK       *resp is new and the caller's: free it with
 *                tlr_clnt_free() (every reply is unpacked from the wire,
 *                so there is one free rule).
 *   a Status     the service answered with an error: its code (NOTFOUND,
 *                INVAL, UNAVAILABLE "NotLeader", ...) is returned, and st
 *                (may be NULL) has its reason and message.
 *   local        UNAVAILABLE (no replica connected; at once with
 *                fail_fast), TIMEOUT, CANCELED (shutting down), TOOBIG,
 *                DECODE, VERSION: st says why.
 *
 * Catalogs by hash (Solve, Simulate).  A replica that does not hold a
 * catalog named by hash does not solve; it answers with catalog_miss set
 * (or, from older replicas, a bare NOTFOUND Status).  Both come back the
 * same way: TLR_OK with (*resp)->catalog_miss set and no plan.  The one
 * resend rule is tlr_clnt_cats_resend's: send the same request once more
 * with every catalog in full (CatalogRef.catalog set), which any replica
 * takes; a miss after that is an error.  A caller names its catalogs
 * with a tlr_clnt_cats, which keeps each catalog for that resend.
 *
 * Every failure but a catalog miss is logged (warn) on c->log, naming the
 * RPC.  A tlr_clnt holds nothing of its own: it borrows the tlr_req
 * client, which must outlive it. */
#ifndef TLR_CLNT_H
#define TLR_CLNT_H

#include <stdbool.h>
#include <stddef.h>

#include "tailor/v1/common.pb-c.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_envelope.h"
#include "tlr_err.h"
#include "tlr_log.h"
#include "tlr_req.h"

typedef struct tlr_clnt {
    tlr_req_client *req;   /* borrowed */
    int timeout_ms;        /* per attempt; 0 = the tlr_req client's */
    tlr_logger *log;       /* borrowed; NULL logs to stderr */
    /* No replica connected: fail at once with UNAVAILABLE instead of
     * waiting out the timeout (a caller that retries every pass). */
    bool fail_fast;
} tlr_clnt;

/* Free a reply of any of the functions below; NULL is fine. */
void tlr_clnt_free(void *resp);

/* Any service: Ping. */
int tlr_clnt_ping(const tlr_clnt *c, Tailor__V1__PingResponse **resp, tlr_status *st);

/* The solver: Solve and Simulate (catalog misses as above). */
int tlr_solver_clnt_solve(const tlr_clnt *c, const Tailor__V1__SolveRequest *req,
                          Tailor__V1__SolveResponse **resp, tlr_status *st);
int tlr_solver_clnt_simulate(const tlr_clnt *c, const Tailor__V1__SimulateRequest *req,
                             Tailor__V1__SimulateResponse **resp, tlr_status *st);

/* The catalogs a Solve or Simulate names: refs[0..n) go in the request,
 * each by hash, and cat[i] is the catalog refs[i] names, kept for the
 * resend.  The refs and their node_classes arrays are the set's (free
 * with tlr_clnt_cats_clear); hashes, class names and catalogs are
 * borrowed and must outlive the set's use.  Zero-initialize. */
typedef struct tlr_clnt_cats {
    Tailor__V1__CatalogRef **refs;
    size_t n;
    const Tailor__V1__Catalog **cat;   /* NULL for a ref passed on as it came */
    bool full;                         /* every ref carries its catalog */
    size_t cap;
} tlr_clnt_cats;

/* Name catalog cat for node class cls (NULL: for no class in particular):
 * the ref with cat's hash gains the class, or a new ref is added. */
void tlr_clnt_cats_name(tlr_clnt_cats *s, const Tailor__V1__Catalog *cat, const char *cls);
/* A ref named by someone else, passed on as it came (its catalog, if it
 * has one, goes with it; no resend can fill it in otherwise). */
void tlr_clnt_cats_pass(tlr_clnt_cats *s, const Tailor__V1__CatalogRef *ref);
/* Every ref carries its catalog from now on. */
void tlr_clnt_cats_inline(tlr_clnt_cats *s);
/* The resend rule, for a reply that had catalog_miss (and other_miss: a
 * miss of something else, which the caller resends first).  True when
 * the same request is to go again, now with every catalog in full; false
 * when there is nothing to resend -- no catalog miss, the caller's own
 * miss goes first, or the catalogs already went in full (a miss then is
 * the caller's to report). */
bool tlr_clnt_cats_resend(tlr_clnt_cats *s, bool catalog_miss, bool other_miss);
void tlr_clnt_cats_clear(tlr_clnt_cats *s);

/* Simulate with the catalogs of cats (req's own are ignored), under the
 * resend rule: a miss even in full is TLR_E_NOTFOUND, logged. */
int tlr_solver_clnt_simulate_cats(const tlr_clnt *c, const Tailor__V1__SimulateRequest *req,
                                  tlr_clnt_cats *cats, Tailor__V1__SimulateResponse **resp,
                                  tlr_status *st);

/* The launcher: Launch, Terminate, and Catalog (its catalog, unset in the
 * reply when known_hash -- may be NULL -- is the launcher's). */
int tlr_launcher_clnt_launch(const tlr_clnt *c, const Tailor__V1__LaunchRequest *req,
                             Tailor__V1__LaunchResponse **resp, tlr_status *st);
int tlr_launcher_clnt_terminate(const tlr_clnt *c, const Tailor__V1__TerminateRequest *req,
                                Tailor__V1__TerminateResponse **resp, tlr_status *st);
int tlr_launcher_clnt_catalog(const tlr_clnt *c, const char *known_hash,
                              Tailor__V1__CatalogResponse **resp, tlr_status *st);

/* The watcher: Snapshot. */
int tlr_watcher_clnt_snapshot(const tlr_clnt *c, const Tailor__V1__SnapshotRequest *req,
                              Tailor__V1__SnapshotResponse **resp, tlr_status *st);

/* The disruptor: Explain. */
int tlr_disruptor_clnt_explain(const tlr_clnt *c, const Tailor__V1__ExplainRequest *req,
                               Tailor__V1__ExplainResponse **resp, tlr_status *st);

#endif
