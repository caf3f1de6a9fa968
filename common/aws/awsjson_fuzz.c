/* awsjson_fuzz.c - libFuzzer target for the readers of AWS JSON answers:
 * the answer itself (tlr_aws_json_answer_parse, what SSM GetParameter,
 * Pricing GetProducts and EKS answers go through), an error answer
 * (tlr_aws_json_error_parse), Pricing's PriceList (whose entries are
 * JSON documents in strings, parsed again: tlr_pricing_parse_products),
 * and EKS DescribeCluster (tlr_eks_cluster_parse).
 *
 * Properties beyond "no crash, no leak, no UB": prices are finite and not
 * negative, each names a type, and after tlr_prices_finish the list is
 * sorted with one entry per type that tlr_prices_find finds; an error
 * answer's fields are NUL-terminated.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_awsjson.h"
#include "tlr_eks.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_pricing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void prices(json_object *resp)
{
    tlr_prices p = { 0 };
    char *next = NULL;

    if (tlr_pricing_parse_products(resp, &p, &next) == TLR_OK) {
        for (size_t i = 0; i < p.n; i++)
            if (p.v[i].type == NULL || !isfinite(p.v[i].usd_per_hour) || p.v[i].usd_per_hour < 0)
                abort();
        tlr_prices_finish(&p);
        for (size_t i = 0; i < p.n; i++) {
            if (i > 0 && strcmp(p.v[i - 1].type, p.v[i].type) >= 0)
                abort();
            if (tlr_prices_find(&p, p.v[i].type) != p.v[i].usd_per_hour)
                abort();
        }
    }
    tlr_prices_free(&p);
    free(next);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    json_object *resp = NULL;

    if (size > 1 << 20)
        return 0;
    if (tlr_aws_json_answer_parse(body, size, &resp) == TLR_OK) {
        const char *ssm = tlr_json_str(resp, "Parameter.Value");   /* SSM GetParameter */
        if (ssm != NULL && strlen(ssm) > size)
            abort();
        prices(resp);
        json_object_put(resp);
    }

    tlr_aws_error e;
    memset(&e, 0xa5, sizeof(e));
    tlr_aws_json_error_parse(body, size, size > 0 && data[0] == '{' ? NULL : "Throttling:x", 400,
                             &e);
    if (memchr(e.code, 0, sizeof(e.code)) == NULL ||
        memchr(e.message, 0, sizeof(e.message)) == NULL ||
        memchr(e.request_id, 0, sizeof(e.request_id)) == NULL)
        abort();

    tlr_eks_cluster c = { 0 };
    (void)tlr_eks_cluster_parse(body, size, &c);
    tlr_eks_cluster_clear(&c);
    return 0;
}
