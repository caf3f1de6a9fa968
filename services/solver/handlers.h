/* handlers.h - tailor-solver's request handlers: Solve and Simulate over
 * the REP socket, and the catalog cache that makes "catalog by hash" work.
 *
 * Catalog protocol (proto/tailor/v1/solver.proto, docs/contracts.md): a
 * request names its catalogs by CatalogRef.hash.  A hash the cache holds is
 * used from the cache; a CatalogRef that carries its catalog is stored
 * (evicting the least recently used entries beyond the bounds) and used;
 * any other hash makes the reply a catalog miss (catalog_miss = true,
 * missing_catalog_hashes, status NOTFOUND "CatalogMiss") without solving.
 *
 * Cluster protocol: a request's ClusterState with by_ref names a state
 * (watcher epoch, generation) held here or built from its delta
 * (tlr_cstate.h); one that can be neither is answered without solving:
 * cluster_miss with the generations held (status NOTFOUND "ClusterMiss"),
 * or INVAL "Invalid" for a delta that makes no sense.
 */
#ifndef SOLVER_HANDLERS_H
#define SOLVER_HANDLERS_H

#include <stdbool.h>
#include <stddef.h>

#include "tlr_metrics.h"
#include "tlr_rep.h"
#include "tlr_solve.h"

typedef struct solver_handlers solver_handlers;

typedef struct solver_handlers_opts {
    size_t cache_entries;          /* most catalogs kept; 0 = 16 */
    size_t cache_bytes;            /* most packed bytes kept; 0 = 1 GiB */
    tlr_solve_strategy strategy;   /* TLR_SOLVE_TAILOR unless told */
    size_t lower_bound_max_pods;   /* fill SolveResponse.lower_bound_cost_per_hour
                                    * for requests with at most this many
                                    * pending pods; 0 = never */
    size_t cluster_states;         /* cluster states by reference kept; 0 = 4 */
    bool scheduler_replay;         /* tlr_solve_opts.replay for Solve */
    const char *replica_id;        /* copied; put in every reply */
    tlr_metrics *metrics;          /* borrowed; may be NULL */
} solver_handlers_opts;

/* On return *out is new and owned: free with solver_handlers_free() after
 * the REP server that uses its routes is gone. */
void solver_handlers_create(const solver_handlers_opts *o, solver_handlers **out);
void solver_handlers_free(solver_handlers *h);   /* NULL is fine */

/* The routes to hand to tlr_service_listen(); they borrow h. */
tlr_rep_route solver_handlers_solve_route(solver_handlers *h);
tlr_rep_route solver_handlers_simulate_route(solver_handlers *h);

/* Catalogs currently cached (for tests and metrics). */
size_t solver_handlers_cached(const solver_handlers *h);

#endif
