/* catalogs.h - the catalogs a Simulate names: the launcher's catalog,
 * shaped per EC2NodeClass as the launcher shapes it for its Solves.
 *
 * A replacement the disruptor plans must hold its pods under its class's
 * kubelet settings (maxPods, reservations, eviction thresholds, root
 * volume; common/catalog/tlr_nodeshape.h), or it would be bought and then
 * not fit.  The request's one CatalogRef for the base catalog is split by
 * node shape: classes with the default shape keep the base catalog, the
 * others get a shaped copy, made once per (base hash, shape) and kept for
 * a catalog-miss resend.  The classes' specs come from the request's own
 * cluster state, so nothing else needs to know them.
 */
#ifndef DS_CATALOGS_H
#define DS_CATALOGS_H

#include <stddef.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tailor/v1/solver.pb-c.h"

typedef struct ds_catalogs ds_catalogs;

void ds_catalogs_create(ds_catalogs **out);    /* owned */
void ds_catalogs_free(ds_catalogs *c);         /* NULL fine */

/* The CatalogRefs req (borrowed) should carry: req's refs, the one naming
 * base->hash split by the shape of its classes.  On return *refs is a new
 * array of n new refs (free with ds_catalogs_refs_free); their hash and
 * node_classes strings are borrowed from req, c and base.  With full, each
 * ref also carries its catalog (a resend after a miss). */
void ds_catalogs_refs(ds_catalogs *c, const Tailor__V1__Catalog *base,
                      const Tailor__V1__SimulateRequest *req, int full,
                      Tailor__V1__CatalogRef ***refs, size_t *n);
void ds_catalogs_refs_free(Tailor__V1__CatalogRef **refs, size_t n);

#endif
