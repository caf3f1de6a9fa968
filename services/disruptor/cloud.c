/* cloud.c - ds_cloud_ops over AWS (cloud.h). */
#include "cloud.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_ami.h"
#include "tlr_awsjson.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_sqs.h"

struct ds_cloud {
    tlr_sqs *sqs;
    tlr_ec2 *ec2;
    tlr_aws_json *ssm;
    char *k8s;
    char *queue;              /* as configured */
    char *url;                /* resolved */
    tlr_logger *log;
};

int ds_cloud_create(const ds_cloud_opts *o, ds_cloud **out)
{
    ds_cloud *c = tlr_calloc(1, sizeof(*c));
    c->log = o->log;
    /* SQS (receiving moves a message out of sight, deleting drops it)
     * only while leading; the EC2 and SSM reads serve Explain on a
     * follower too, and change nothing. */
    tlr_aws_query_opts q = { .region = o->region, .endpoint = o->endpoint, .creds = o->creds,
                             .log = o->log, .timeout_ms = 10000, .max_attempts = 2,
                             .fence = o->fence };
    int rc = tlr_sqs_create(&q, &c->sqs);
    q.fence = NULL;
    if (!rc)
        rc = tlr_ec2_create(&q, &c->ec2);
    tlr_aws_json_opts j = { .service = "ssm", .target_prefix = "AmazonSSM", .region = o->region,
                            .endpoint = o->endpoint, .creds = o->creds, .log = o->log,
                            .timeout_ms = 10000, .max_attempts = 2 };
    if (!rc)
        rc = tlr_aws_json_create(&j, &c->ssm);
    c->k8s = tlr_strdup(o->k8s_version && o->k8s_version[0] ? o->k8s_version : "1.31");
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
    tlr_ec2_free(c->ec2);
    tlr_aws_json_free(c->ssm);
    free(c->k8s);
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

static int k_images(void *arg, const char *const *ids, size_t n, char ***images)
{
    ds_cloud *c = arg;
    tlr_ec2_instances l = { 0 };
    tlr_aws_error err = { 0 };
    int rc = tlr_ec2_describe_instances(c->ec2, NULL, 0, ids, n, 0, &l, &err);
    if (rc)
        return rc;
    char **v = tlr_calloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const char *img = "";
        for (size_t k = 0; k < l.n; k++)
            if (!strcmp(l.v[k].id, ids[i]))
                img = l.v[k].image_id ? l.v[k].image_id : "";
        v[i] = tlr_strdup(img);
    }
    tlr_ec2_instances_free(&l);
    *images = v;
    return TLR_OK;
}

static int k_amis(void *arg, const Tailor__V1__NodeClass *nc, char ***ids, size_t *n)
{
    ds_cloud *c = arg;
    tlr_ami_aws clients = { c->ec2, c->ssm };
    tlr_ami_ops ops;
    tlr_ami_ops_aws(&clients, &ops);
    tlr_amis a = { 0 };
    char err[512] = "";
    int rc = tlr_ami_resolve(nc->ami_selector_terms, nc->n_ami_selector_terms, c->k8s, &ops, &a, err,
                             sizeof(err));
    if (rc) {
        TLR_DEBUG(c->log, "AMI selector terms not resolved", TLR_S("nodeclass", nc->name),
                  TLR_S("why", err), TLR_ERR(rc));
        return rc;
    }
    char **v = tlr_calloc(a.n + 1, sizeof(*v));
    for (size_t i = 0; i < a.n; i++)
        v[i] = tlr_strdup(a.v[i].id);
    *ids = v;
    *n = a.n;
    tlr_amis_free(&a);
    return TLR_OK;
}

ds_cloud_ops ds_cloud_ops_of(ds_cloud *c)
{
    return (ds_cloud_ops){ k_receive, k_delete, k_images, k_amis, c };
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
