/* catalog_src.c - fetch the live catalog from EC2 and Pricing
 * (catalog_src.h). */
#include "catalog_src.h"

#include <stdio.h>
#include <string.h>

#include "tlr_awsjson.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_pricing.h"
#include "tlr_time.h"

int lc_catsrc_fetch(const lc_catsrc_opts *o, const Tailor__V1__Catalog *fallback,
                    Tailor__V1__Catalog **out, tlr_catalog_live_stats *st, char *why,
                    size_t len)
{
    tlr_aws_query_opts qo = { .service = "ec2", .version = TLR_EC2_API_VERSION,
                              .region = o->region, .endpoint = o->endpoint, .creds = o->creds,
                              .log = o->log, .timeout_ms = o->timeout_ms,
                              .max_response = (size_t)128 << 20 };
    tlr_ec2 *ec2 = NULL;
    tlr_aws_json *pj = NULL;
    tlr_ec2_type_infos types = { 0 };
    tlr_ec2_type_offerings offs = { 0 };
    tlr_ec2_spot_prices spot = { 0 };
    tlr_prices od = { 0 };
    tlr_aws_error err = { 0 };
    int rc = tlr_ec2_create(&qo, &ec2);
    if (rc) {
        snprintf(why, len, "EC2 client: %s", tlr_strerror(rc));
        return rc;
    }
    const char *region = tlr_aws_query_region(tlr_ec2_query(ec2));
    int64_t t0 = tlr_mono_ms();
    if ((rc = tlr_ec2_describe_instance_types(ec2, NULL, 0, &types, &err))) {
        snprintf(why, len, "DescribeInstanceTypes: %s %s", err.code[0] ? err.code
                                                                       : tlr_strerror(rc),
                 err.message);
        goto out;
    }
    bool have_offs = true, have_spot = true, have_od = false;
    memset(&err, 0, sizeof(err));
    if (tlr_ec2_describe_instance_type_offerings(ec2, &offs, &err)) {
        have_offs = false;
        TLR_WARN(o->log, "catalog: DescribeInstanceTypeOfferings failed; every type offered "
                 "in every zone", TLR_S("aws_code", err.code), TLR_S("why", err.message));
    }
    memset(&err, 0, sizeof(err));
    if (tlr_ec2_describe_spot_price_history(ec2, 0, &spot, &err)) {
        have_spot = false;
        TLR_WARN(o->log, "catalog: DescribeSpotPriceHistory failed; spot prices from the "
                 "discount", TLR_S("aws_code", err.code), TLR_S("why", err.message));
    }
    tlr_aws_json_opts jo = { .service = "pricing", .target_prefix = "AWSPriceListService",
                             .host_prefix = "api.pricing",
                             .region = o->pricing_region ? o->pricing_region : "us-east-1",
                             .endpoint = o->pricing_endpoint, .creds = o->creds, .log = o->log,
                             .timeout_ms = o->timeout_ms, .max_attempts = 3 };
    memset(&err, 0, sizeof(err));
    int prc = tlr_aws_json_create(&jo, &pj);
    if (prc == TLR_OK)
        prc = tlr_pricing_ec2_on_demand(pj, region, &od, &err);
    if (prc == TLR_OK)
        have_od = true;
    else
        TLR_WARN(o->log, "catalog: Pricing API unavailable; on-demand prices from the catalog "
                 "file", TLR_S("aws_code", err.code), TLR_S("why", err.message), TLR_ERR(prc));
    tlr_catalog_live_in in = { .region = region, .types = &types,
                               .offerings = have_offs ? &offs : NULL,
                               .spot = have_spot ? &spot : NULL,
                               .on_demand = have_od ? &od : NULL, .fallback = fallback,
                               .zones = o->zones, .n_zones = o->n_zones,
                               .spot_discount = o->spot_discount, .spot_floor = o->spot_floor,
                               .no_spot = o->no_spot };
    rc = tlr_catalog_from_ec2(&in, out, st, why, len);
    if (rc == TLR_OK)
        TLR_INFO(o->log, "catalog fetched from EC2", TLR_I("ms", tlr_mono_ms() - t0),
                 TLR_I("described", (int64_t)types.n), TLR_I("offerings", (int64_t)offs.n),
                 TLR_I("spot_prices", (int64_t)spot.n), TLR_I("od_prices", (int64_t)od.n));
out:
    tlr_prices_free(&od);
    tlr_ec2_spot_prices_free(&spot);
    tlr_ec2_type_offerings_free(&offs);
    tlr_ec2_type_infos_free(&types);
    tlr_aws_json_free(pj);
    tlr_ec2_free(ec2);
    return rc;
}
