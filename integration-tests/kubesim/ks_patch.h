/* ks_patch.h - the three patch formats the API accepts (patch.c).
 *
 *   merge      application/merge-patch+json, RFC 7386
 *   strategic  application/strategic-merge-patch+json: like merge, but
 *              lists with a merge key (containers by name, conditions by
 *              type, ...) merge item by item, metadata.finalizers merges
 *              as a set, and the directives $patch (replace/delete/merge),
 *              $setElementOrder/<list>, $deleteFromPrimitiveList/<list>
 *              and $retainKeys are understood.  Only built-in kinds: for
 *              karpenter kinds it is 415 UnsupportedMediaType, as for CRDs.
 *   json       application/json-patch+json, RFC 6902 (add, remove,
 *              replace, move, copy, test).
 */
#ifndef KS_PATCH_H
#define KS_PATCH_H

#include <stddef.h>

#include <json-c/json.h>

#include "ks_store.h"

/* Largest patch document accepted (the API's request body limit). */
#define KS_PATCH_MAX (3u << 20)

/* Apply patch[0..len) to doc (borrowed, unchanged).  On TLR_OK *out is a
 * new object owned by the caller.  TLR_E_PARSE (400 BadRequest: malformed
 * JSON, wrong document shape), TLR_E_INVAL (422 Invalid: a failed test
 * op, a path that does not exist), TLR_E_UNIMPLEMENTED (415) with st. */
int ks_patch_apply(ks_patch_type type, ks_kind_id kind, json_object *doc,
                   const char *patch, size_t len, json_object **out, ks_status *st);

/* Parse a Content-Type header into a patch type; TLR_E_INVAL if it names none. */
int ks_patch_type_parse(const char *content_type, ks_patch_type *out);

#endif
