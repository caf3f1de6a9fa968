/* ice.h - the insufficient-capacity (ICE) cache.
 *
 * When EC2 answers InsufficientInstanceCapacity (or another capacity
 * error) for an offering -- instance type x zone x capacity type -- the
 * launcher must not plan onto that offering again for a while (3 minutes,
 * Karpenter's TTL), or every re-plan would pick the same cheapest,
 * unavailable offering.  The cache is sent whole in every Solve
 * (SolveRequest.unavailable_offerings) and merged with what the disruptor
 * sends in a LaunchRequest.
 *
 * Time comes from an injected tlr_clock (wall milliseconds, because the
 * entries cross processes as until_unix_ms).  Expired entries are dropped
 * lazily.  The cache holds at most LC_ICE_MAX entries; past that the entry
 * that expires first is replaced.
 */
#ifndef LC_ICE_H
#define LC_ICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tlr_time.h"

#define LC_ICE_TTL_MS (3 * 60 * 1000)
#define LC_ICE_MAX 4096

typedef struct lc_ice lc_ice;

/* clock borrowed (must outlive the cache); ttl_ms 0 = LC_ICE_TTL_MS.
 * *out new and owned: lc_ice_free(). */
void lc_ice_create(const tlr_clock *clock, int64_t ttl_ms, lc_ice **out);
void lc_ice_free(lc_ice *c);   /* NULL is fine */

/* Mark (type, zone, ct) unavailable until now + ttl (extends an existing
 * entry).  reason (borrowed, copied; may be NULL) is the EC2 error code. */
void lc_ice_mark(lc_ice *c, const char *type, const char *zone,
                 Tailor__V1__CapacityType ct, const char *reason);
/* Merge an entry received from elsewhere, keeping the later deadline; a
 * deadline further than this cache's TTL from now is cut to the TTL. */
void lc_ice_merge(lc_ice *c, const Tailor__V1__OfferingUnavailable *u);

bool lc_ice_unavailable(lc_ice *c, const char *type, const char *zone,
                        Tailor__V1__CapacityType ct);
size_t lc_ice_count(lc_ice *c);   /* live entries */

/* The live entries as protobuf messages for a SolveRequest.  On return
 * *out is a new array of *n new messages, owned by the caller: free with
 * lc_ice_list_free(). */
void lc_ice_list(lc_ice *c, Tailor__V1__OfferingUnavailable ***out, size_t *n);
void lc_ice_list_free(Tailor__V1__OfferingUnavailable **v, size_t n);

#endif
