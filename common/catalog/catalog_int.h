/* catalog_int.h - what catalog_file.c shares with catalog_live.c (not a
 * public header). */
#ifndef TLR_CATALOG_INT_H
#define TLR_CATALOG_INT_H

#include <json-c/json.h>

#include "tlr_catalog.h"

/* One catalog-file entry (borrowed) -> InstanceType with the file's
 * offerings (zones of o, on-demand price, spot by discount).  *out is new
 * and owned, or NULL when the type has no price in o->region.  idx names
 * the entry in errors.  TLR_E_PARSE with err filled on a bad entry. */
int tlr_catalog_parse_entry(json_object *e, size_t idx, const tlr_catalog_file_opts *o,
                            Tailor__V1__InstanceType **out, char *err, size_t errlen);

/* Sort c's types by name, refuse duplicates (TLR_E_PARSE), set the hash. */
int tlr_catalog_finish(Tailor__V1__Catalog *c, char *err, size_t errlen);

#endif
