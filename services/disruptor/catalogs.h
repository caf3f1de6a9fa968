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
#include "tlr_clnt.h"

typedef struct ds_catalogs ds_catalogs;

void ds_catalogs_create(ds_catalogs **out);    /* owned */
void ds_catalogs_free(ds_catalogs *c);         /* NULL fine */

/* Name in out the catalogs req (borrowed) should carry: req's refs, the
 * one naming base->hash split by the shape of its classes.  Hashes and
 * class names are borrowed from req, c and base, which must outlive out;
 * each catalog is kept in out for a catalog-miss resend (tlr_clnt.h). */
void ds_catalogs_name(ds_catalogs *c, const Tailor__V1__Catalog *base,
                      const Tailor__V1__SimulateRequest *req, tlr_clnt_cats *out);

#endif
