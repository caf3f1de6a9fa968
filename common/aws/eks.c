/* eks.c - EKS DescribeCluster (tlr_eks.h): a REST-JSON GET through
 * tlr_aws_json, which does the signing, retrying and error mapping. */
#include "tlr_eks.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_awsjson.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_sigv4.h"

#define EKS_MAX_RESPONSE ((size_t)4 << 20)

struct tlr_eks {
    tlr_aws_json *j;
};

int tlr_eks_create(const tlr_eks_opts *o, tlr_eks **out)
{
    if (!o || !out || !o->creds)
        return TLR_E_INVAL;
    /* EKS's own defaults; the endpoint is tlr_aws_json's rule for "eks". */
    tlr_aws_json_opts jo = {
        .service = "eks",
        .region = o->region,
        .endpoint = o->endpoint,
        .creds = o->creds,
        .log = o->log,
        .timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 15000,
        .max_attempts = o->max_attempts > 0 ? o->max_attempts : 4,
        .backoff_base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : 200,
        .backoff_cap_ms = o->backoff_cap_ms > 0 ? o->backoff_cap_ms : 5000,
        .max_response = EKS_MAX_RESPONSE,
    };
    tlr_aws_json *j;
    int rc = tlr_aws_json_create(&jo, &j);
    if (rc != TLR_OK)
        return rc;
    tlr_eks *e = tlr_calloc(1, sizeof(*e));
    e->j = j;
    *out = e;
    return TLR_OK;
}

void tlr_eks_free(tlr_eks *e)
{
    if (!e)
        return;
    tlr_aws_json_free(e->j);
    free(e);
}

const char *tlr_eks_endpoint(const tlr_eks *e)
{
    return tlr_aws_json_origin(e->j);
}

void tlr_eks_cluster_clear(tlr_eks_cluster *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->endpoint);
    free(c->status);
    free(c->version);
    free(c->ca_b64);
    free(c->service_cidr_v4);
    free(c->service_cidr_v6);
    memset(c, 0, sizeof(*c));
}

static char *jdup(json_object *o, const char *a, const char *b)
{
    json_object *x = NULL, *y = NULL;
    if (o && json_object_object_get_ex(o, a, &x)) {
        if (!b && json_object_is_type(x, json_type_string))
            return tlr_strdup(json_object_get_string(x));
        if (b && json_object_object_get_ex(x, b, &y) && json_object_is_type(y, json_type_string))
            return tlr_strdup(json_object_get_string(y));
    }
    return tlr_strdup("");
}

/* The cluster of a parsed DescribeCluster answer (root borrowed). */
static int cluster_read(json_object *root, tlr_eks_cluster *out)
{
    json_object *c = NULL;
    if (!root || !json_object_object_get_ex(root, "cluster", &c) ||
        !json_object_is_type(c, json_type_object))
        return TLR_E_PARSE;
    tlr_eks_cluster r = { 0 };
    r.name = jdup(c, "name", NULL);
    r.endpoint = jdup(c, "endpoint", NULL);
    r.status = jdup(c, "status", NULL);
    r.version = jdup(c, "version", NULL);
    r.ca_b64 = jdup(c, "certificateAuthority", "data");
    r.service_cidr_v4 = jdup(c, "kubernetesNetworkConfig", "serviceIpv4Cidr");
    r.service_cidr_v6 = jdup(c, "kubernetesNetworkConfig", "serviceIpv6Cidr");
    *out = r;
    return TLR_OK;
}

int tlr_eks_cluster_parse(const char *body, size_t len, tlr_eks_cluster *out)
{
    json_tokener *tok = json_tokener_new_ex(64);
    json_object *root = json_tokener_parse_ex(tok, body ? body : "", (int)len);
    json_tokener_free(tok);
    int rc = cluster_read(root, out);
    json_object_put(root);
    return rc;
}

int tlr_eks_describe_cluster(tlr_eks *e, const char *name, tlr_eks_cluster *out,
                             tlr_aws_error *err)
{
    if (!e || !name || !name[0] || !out)
        return TLR_E_INVAL;
    tlr_buf pb;
    tlr_buf_init(&pb, 4096);
    tlr_buf_adds(&pb, "/clusters/");
    if (tlr_sigv4_uri_encode(&pb, name, strlen(name), false) != TLR_OK) {
        tlr_buf_free(&pb);
        return TLR_E_INVAL;
    }
    tlr_aws_error ae = { 0 };
    json_object *root = NULL;
    int rc = tlr_aws_json_rest(e->j, "DescribeCluster", "GET", tlr_buf_str(&pb), NULL, &root,
                               &ae);
    tlr_buf_free(&pb);
    if (rc == TLR_OK && (rc = cluster_read(root, out)) != TLR_OK) {
        memset(&ae, 0, sizeof(ae));
        ae.http_status = 200;
        snprintf(ae.message, sizeof(ae.message), "eks DescribeCluster: malformed answer");
    }
    json_object_put(root);
    if (rc != TLR_OK && err)
        *err = ae;
    return rc;
}
