/* tlr_pricing.h - EC2 on-demand prices from the AWS Price List (Pricing)
 * API, GetProducts, on the JSON 1.1 client.
 *
 * The query is Karpenter's: ServiceCode AmazonEC2 and TERM_MATCH filters
 * regionCode=<region>, operatingSystem=Linux, tenancy=Shared,
 * preInstalledSw=NA, capacitystatus=Used, marketoption=OnDemand; pages of
 * 100 followed through NextToken.  Each PriceList entry is a JSON document
 * in a string; from it we keep product.attributes.instanceType and the
 * USD pricePerUnit of its OnDemand term.  The Pricing endpoint lives in
 * us-east-1 (also ap-south-1, eu-central-1); the client passed in decides
 * which (tlr_aws_json_opts.region), the filter names the region priced.
 */
#ifndef TLR_PRICING_H
#define TLR_PRICING_H

#include <json-c/json.h>
#include <stddef.h>

#include "tlr_awsjson.h"

typedef struct tlr_price {
    char *type;          /* "m5.large" */
    double usd_per_hour;
} tlr_price;

typedef struct tlr_prices {
    tlr_price *v;        /* sorted by type once complete */
    size_t n;
} tlr_prices;

void tlr_prices_free(tlr_prices *p);   /* contents; NULL fine */
/* Price of type in a sorted list (binary search); < 0 when absent. */
double tlr_prices_find(const tlr_prices *p, const char *type);

/* GetProducts for region (e.g. "us-east-1") through j (service "pricing",
 * target "AWSPriceListService").  On TLR_OK *out is filled (owned, sorted
 * by type; a type listed twice keeps its lowest price).  TLR_E_NOTFOUND
 * when the API answered but priced nothing; other errors as
 * tlr_aws_json_call. */
int tlr_pricing_ec2_on_demand(tlr_aws_json *j, const char *region, tlr_prices *out,
                              tlr_aws_error *err);

/* Append the prices of one GetProducts answer (borrowed) to *out; *next
 * gets an owned copy of NextToken or NULL.  TLR_E_PARSE when resp has no
 * PriceList array; entries without a type or a USD price are skipped. */
int tlr_pricing_parse_products(json_object *resp, tlr_prices *out, char **next);

/* Sort by type and keep one (the lowest) price per type. */
void tlr_prices_finish(tlr_prices *p);

#endif
