/* ds_cloud.c - ds_cloud_ops over AWS (ds_cloud.h). */
#include "ds_cloud.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_sqs.h"

struct ds_cloud {
    tlr_sqs *sqs;
    char *queue;              /* as configured */
    char *url;                /* resolved */
    tlr_logger *log;
};

int ds_cloud_create(const ds_cloud_opts *o, ds_cloud **out)
{
    ds_cloud *c = tlr_calloc(1, sizeof(*c));
    c->log = o->log;
    /* SQS only while leading: receiving moves a message out of sight,
     * deleting drops it. */
    tlr_aws_query_opts q = { .region = o->region, .endpoint = o->endpoint, .creds = o->creds,
                             .log = o->log, .timeout_ms = 10000, .max_attempts = 2,
                             .fence = o->fence };
    int rc = tlr_sqs_create(&q, &c->sqs);
    if (rc) {
        ds_cloud_free(c);
        return rc;
    }
    c->queue = tlr_strdup(o->queue && o->queue[0] ? o->queue : NULL);
    if (c->queue && strstr(c->queue, "://"))
        c->url = tlr_strdup(c->queue);
    *out = c;
    return TLR_OK;
}

void ds_cloud_free(ds_cloud *c)
{
    if (!c)
        return;
    tlr_sqs_free(c->sqs);
    free(c->queue);
    free(c->url);
    free(c);
}

static int queue_url(ds_cloud *c)
{
    if (c->url)
        return TLR_OK;
    if (!c->queue)
        return TLR_E_NOTFOUND;
    tlr_aws_error err = { 0 };
    int rc = tlr_sqs_queue_url(c->sqs, c->queue, &c->url, &err);
    if (rc)
        TLR_WARN(c->log, "interruption queue not found", TLR_S("queue", c->queue),
                 TLR_S("aws_code", err.code), TLR_ERR(rc));
    return rc;
}

static int k_receive(void *arg, int max, ds_sqs_msgs *out)
{
    ds_cloud *c = arg;
    memset(out, 0, sizeof(*out));
    int rc = queue_url(c);
    if (rc)
        return rc;
    tlr_sqs_messages m = { 0 };
    tlr_aws_error err = { 0 };
    /* Short polls: the loop is shared; a message waits at most one period.
     * Visibility 30 s: a message we fail on comes back. */
    rc = tlr_sqs_receive(c->sqs, c->url, max > 10 ? 10 : max, 0, 30, &m, &err);
    if (rc) {
        TLR_WARN(c->log, "interruption queue not read", TLR_S("aws_code", err.code), TLR_ERR(rc));
        return rc;
    }
    out->v = tlr_calloc(m.n + 1, sizeof(*out->v));
    for (size_t i = 0; i < m.n; i++) {
        out->v[i].id = m.v[i].id;
        out->v[i].receipt = m.v[i].receipt;
        out->v[i].body = m.v[i].body;
        m.v[i].id = m.v[i].receipt = m.v[i].body = NULL;
    }
    out->n = m.n;
    tlr_sqs_messages_free(&m);
    return TLR_OK;
}

static int k_delete(void *arg, const char *receipt)
{
    ds_cloud *c = arg;
    int rc = queue_url(c);
    if (rc)
        return rc;
    tlr_aws_error err = { 0 };
    return tlr_sqs_delete(c->sqs, c->url, receipt, &err);
}

ds_cloud_ops ds_cloud_ops_of(ds_cloud *c)
{
    return (ds_cloud_ops){ k_receive, k_delete, c };
}

void ds_sqs_msgs_free(ds_sqs_msgs *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].id);
        free(l->v[i].receipt);
        free(l->v[i].body);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}
