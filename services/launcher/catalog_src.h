/* catalog_src.h - where the launcher's instance catalog comes from.
 *
 *   file   the catalog JSON file (TAILOR_CATALOG), as it is;
 *   ec2    the live catalog (tlr_catalog.h, "the live catalog"):
 *          DescribeInstanceTypes + DescribeInstanceTypeOfferings +
 *          DescribeSpotPriceHistory on EC2 and GetProducts on the Pricing
 *          API, with the file as the per-type fallback;
 *   auto   the file at once, then the live catalog when it is fetched;
 *          if EC2 cannot describe the instance types, the file stays.
 * What falls back, and when:
 *   - DescribeInstanceTypes fails: no live catalog at all (the file, or
 *     the last live one, stays in use);
 *   - DescribeInstanceTypeOfferings fails: every type offered in every
 *     configured zone;
 *   - DescribeSpotPriceHistory fails: spot at on-demand x (1 - discount);
 *   - the Pricing API fails (moto does not serve it): on-demand prices
 *     from the file; a type the file does not price is left out.
 * A fetch takes seconds (1,000+ types, 5,000+ offerings), so the launcher
 * runs it on a thread of its own with its own clients (lc_catsrc_fetch is
 * thread-safe given its own opts) and swaps the result in on its loop.
 */
#ifndef LC_CATALOG_SRC_H
#define LC_CATALOG_SRC_H

#include <stddef.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tlr_awscreds.h"
#include "tlr_catalog.h"
#include "tlr_log.h"

typedef struct lc_catsrc_opts {
    const char *region;            /* NULL = environment default */
    const char *endpoint;          /* EC2 endpoint override; NULL = AWS_ENDPOINT_URL / AWS */
    const char *pricing_endpoint;  /* NULL = AWS_ENDPOINT_URL_PRICING, AWS_ENDPOINT_URL, AWS */
    const char *pricing_region;    /* the Pricing API's region; NULL = "us-east-1" */
    tlr_aws_creds *creds;          /* borrowed; thread-safe */
    tlr_logger *log;               /* borrowed; may be NULL */
    const char *const *zones;      /* borrowed; zones to offer, NULL = all */
    size_t n_zones;
    double spot_discount;          /* fallback spot price = od x (1 - d) */
    double spot_floor;             /* history prices below od x floor are refused; 0 = 0.05 */
    int timeout_ms;                /* per AWS call; 0 = 30000 */
    bool no_spot;                  /* true: on-demand offerings only */
} lc_catsrc_opts;

/* Fetch and build the live catalog, fallback (borrowed, may be NULL) for
 * what EC2 does not say.  On TLR_OK *out is new and owned and *st (may
 * be NULL) filled; otherwise why (len bytes) says what failed. */
int lc_catsrc_fetch(const lc_catsrc_opts *o, const Tailor__V1__Catalog *fallback,
                    Tailor__V1__Catalog **out, tlr_catalog_live_stats *st, char *why,
                    size_t len);

#endif
