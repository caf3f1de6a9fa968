/* pricing.c - on-demand EC2 prices from the Pricing API (tlr_pricing.h). */
#include "tlr_pricing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

#define MAX_PAGES 200

void tlr_prices_free(tlr_prices *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].type);
    free(p->v);
    memset(p, 0, sizeof(*p));
}

static int by_type(const void *a, const void *b)
{
    const tlr_price *x = a, *y = b;
    int c = strcmp(x->type, y->type);
    if (c != 0)
        return c;
    return (x->usd_per_hour > y->usd_per_hour) - (x->usd_per_hour < y->usd_per_hour);
}

void tlr_prices_finish(tlr_prices *p)
{
    if (p->n > 1)
        qsort(p->v, p->n, sizeof(*p->v), by_type);
    size_t w = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (w > 0 && strcmp(p->v[w - 1].type, p->v[i].type) == 0) {
            free(p->v[i].type);   /* sorted cheapest first: keep the first */
            continue;
        }
        p->v[w++] = p->v[i];
    }
    p->n = w;
}

double tlr_prices_find(const tlr_prices *p, const char *type)
{
    size_t lo = 0, hi = p ? p->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(p->v[mid].type, type);
        if (c == 0)
            return p->v[mid].usd_per_hour;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static json_object *get(json_object *o, const char *k)
{
    json_object *v = NULL;
    return o != NULL && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* The first value of an object whose keys are generated ids (terms,
 * priceDimensions). */
static json_object *first_value(json_object *o)
{
    if (o == NULL || !json_object_is_type(o, json_type_object))
        return NULL;
    json_object_object_foreach(o, k, v) {
        (void)k;
        return v;
    }
    return NULL;
}

/* One PriceList document -> (type, price); false when it prices nothing. */
static bool decode_entry(const char *text, char **type, double *price)
{
    json_object *doc = json_tokener_parse(text);
    bool ok = false;
    const char *t = json_object_get_string(get(get(get(doc, "product"), "attributes"),
                                               "instanceType"));
    json_object *dim = first_value(get(first_value(get(get(doc, "terms"), "OnDemand")),
                                       "priceDimensions"));
    const char *usd = json_object_get_string(get(get(dim, "pricePerUnit"), "USD"));
    if (t != NULL && t[0] != '\0' && usd != NULL) {
        char *end = NULL;
        double p = strtod(usd, &end);
        /* A 0.00 price is a placeholder SKU (reserved host, unused box). */
        if (end != usd && p > 0 && p < 1e6) {
            *type = tlr_strdup(t);
            *price = p;
            ok = true;
        }
    }
    json_object_put(doc);
    return ok;
}

int tlr_pricing_parse_products(json_object *resp, tlr_prices *out, char **next)
{
    json_object *list = get(resp, "PriceList");
    if (list == NULL || !json_object_is_type(list, json_type_array))
        return TLR_E_PARSE;
    size_t cap = out->n;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        /* aws_v1 sends each entry as a string; accept an object too. */
        const char *text = json_object_is_type(e, json_type_string)
                               ? json_object_get_string(e)
                               : json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN);
        char *type = NULL;
        double price = 0;
        if (!decode_entry(text, &type, &price))
            continue;
        TLR_GROW(out->v, cap, out->n + 1);
        out->v[out->n++] = (tlr_price){ type, price };
    }
    if (next != NULL) {
        const char *t = json_object_get_string(get(resp, "NextToken"));
        *next = t != NULL && t[0] != '\0' ? tlr_strdup(t) : NULL;
    }
    return TLR_OK;
}

static void filter(json_object *arr, const char *field, const char *value)
{
    json_object *f = json_object_new_object();
    json_object_object_add(f, "Type", json_object_new_string("TERM_MATCH"));
    json_object_object_add(f, "Field", json_object_new_string(field));
    json_object_object_add(f, "Value", json_object_new_string(value));
    json_object_array_add(arr, f);
}

int tlr_pricing_ec2_on_demand(tlr_aws_json *j, const char *region, tlr_prices *out,
                              tlr_aws_error *err)
{
    if (j == NULL || region == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_prices got = { 0 };
    char *token = NULL;
    int rc = TLR_OK;
    for (int page = 0; page < MAX_PAGES; page++) {
        json_object *req = json_object_new_object(), *resp = NULL;
        json_object *fs = json_object_new_array();
        filter(fs, "regionCode", region);
        filter(fs, "serviceCode", "AmazonEC2");
        filter(fs, "operatingSystem", "Linux");
        filter(fs, "tenancy", "Shared");
        filter(fs, "preInstalledSw", "NA");
        filter(fs, "capacitystatus", "Used");
        filter(fs, "marketoption", "OnDemand");
        json_object_object_add(req, "ServiceCode", json_object_new_string("AmazonEC2"));
        json_object_object_add(req, "Filters", fs);
        json_object_object_add(req, "FormatVersion", json_object_new_string("aws_v1"));
        json_object_object_add(req, "MaxResults", json_object_new_int(100));
        if (token != NULL)
            json_object_object_add(req, "NextToken", json_object_new_string(token));
        rc = tlr_aws_json_call(j, "GetProducts", req, &resp, err);
        json_object_put(req);
        free(token);
        token = NULL;
        if (rc == TLR_OK) {
            rc = tlr_pricing_parse_products(resp, &got, &token);
            if (rc != TLR_OK && err != NULL) {
                memset(err, 0, sizeof(*err));
                snprintf(err->message, sizeof(err->message),
                         "GetProducts: answer without a PriceList");
            }
        }
        json_object_put(resp);
        if (rc != TLR_OK || token == NULL)
            break;
    }
    free(token);
    if (rc == TLR_OK && got.n == 0)
        rc = TLR_E_NOTFOUND;
    if (rc != TLR_OK) {
        tlr_prices_free(&got);
        return rc;
    }
    tlr_prices_finish(&got);
    *out = got;
    return TLR_OK;
}
