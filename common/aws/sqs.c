/* sqs.c - SQS on the AWS Query client (tlr_sqs.h). */
#include "tlr_sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

struct tlr_sqs {
    tlr_aws_query *q;
};

int tlr_sqs_create(const tlr_aws_query_opts *opts, tlr_sqs **out)
{
    if (opts == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_aws_query *q = NULL;
    int rc = tlr_aws_query_create_for(opts, "sqs", TLR_SQS_API_VERSION, &q);
    if (rc != TLR_OK)
        return rc;
    tlr_sqs *s = tlr_calloc(1, sizeof(*s));
    s->q = q;
    *out = s;
    return TLR_OK;
}

void tlr_sqs_free(tlr_sqs *s)
{
    if (s == NULL)
        return;
    tlr_aws_query_free(s->q);
    free(s);
}

void tlr_sqs_messages_free(tlr_sqs_messages *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].id);
        free(l->v[i].receipt);
        free(l->v[i].body);
        free(l->v[i].md5);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int tlr_sqs_parse_receive(const tlr_xml_node *root, tlr_sqs_messages *out)
{
    memset(out, 0, sizeof(*out));
    if (root == NULL || strcmp(tlr_xml_name(root), "ReceiveMessageResponse") != 0)
        return TLR_E_PARSE;
    const tlr_xml_node *res = tlr_xml_find(root, "ReceiveMessageResult");
    if (res == NULL)
        return TLR_OK;   /* no messages */
    size_t cap = 0;
    for (const tlr_xml_node *m = tlr_xml_first_child(res); m != NULL; m = tlr_xml_next(m)) {
        if (strcmp(tlr_xml_name(m), "Message") != 0)
            continue;
        TLR_GROW(out->v, cap, out->n + 1);
        tlr_sqs_message *x = &out->v[out->n++];
        x->id = tlr_xml_find_dup(m, "MessageId");
        x->receipt = tlr_xml_find_dup(m, "ReceiptHandle");
        x->body = tlr_xml_find_dup(m, "Body");
        x->md5 = tlr_xml_find_dup(m, "MD5OfBody");
        if (!x->receipt[0]) {
            tlr_sqs_messages_free(out);
            return TLR_E_PARSE;   /* a message we could never delete */
        }
    }
    return TLR_OK;
}

int tlr_sqs_parse_queue_url(const tlr_xml_node *root, char **url)
{
    const char *t = root ? tlr_xml_find_text(root, "GetQueueUrlResult/QueueUrl") : NULL;
    if (t == NULL || !t[0])
        return TLR_E_PARSE;
    *url = tlr_strdup(t);
    return TLR_OK;
}

int tlr_sqs_queue_url(tlr_sqs *s, const char *name, char **url, tlr_aws_error *err)
{
    if (s == NULL || name == NULL || url == NULL)
        return TLR_E_INVAL;
    tlr_aws_params *p;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "QueueName", name);
    tlr_xml_doc *doc = NULL;
    int rc = tlr_aws_query_call(s->q, "GetQueueUrl", p, &doc, err);
    tlr_aws_params_free(p);
    if (rc != TLR_OK) {
        if (err && strstr(err->code, "NonExistentQueue"))
            rc = TLR_E_NOTFOUND;
        return rc;
    }
    rc = tlr_sqs_parse_queue_url(tlr_xml_root(doc), url);
    tlr_xml_free(doc);
    return rc;
}

int tlr_sqs_receive(tlr_sqs *s, const char *queue_url, int max, int wait_s, int visibility_s,
                    tlr_sqs_messages *out, tlr_aws_error *err)
{
    if (s == NULL || queue_url == NULL || out == NULL || max < 1 || max > 10 || wait_s < 0 ||
        wait_s > 20)
        return TLR_E_INVAL;
    tlr_aws_params *p;
    tlr_aws_params_create(&p);
    char v[16];
    tlr_aws_params_add(p, "QueueUrl", queue_url);
    snprintf(v, sizeof(v), "%d", max);
    tlr_aws_params_add(p, "MaxNumberOfMessages", v);
    snprintf(v, sizeof(v), "%d", wait_s);
    tlr_aws_params_add(p, "WaitTimeSeconds", v);
    if (visibility_s > 0) {
        snprintf(v, sizeof(v), "%d", visibility_s);
        tlr_aws_params_add(p, "VisibilityTimeout", v);
    }
    tlr_xml_doc *doc = NULL;
    int rc = tlr_aws_query_call(s->q, "ReceiveMessage", p, &doc, err);
    tlr_aws_params_free(p);
    if (rc != TLR_OK)
        return rc;
    rc = tlr_sqs_parse_receive(tlr_xml_root(doc), out);
    tlr_xml_free(doc);
    return rc;
}

int tlr_sqs_delete(tlr_sqs *s, const char *queue_url, const char *receipt, tlr_aws_error *err)
{
    if (s == NULL || queue_url == NULL || receipt == NULL)
        return TLR_E_INVAL;
    tlr_aws_params *p;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "QueueUrl", queue_url);
    tlr_aws_params_add(p, "ReceiptHandle", receipt);
    tlr_xml_doc *doc = NULL;
    int rc = tlr_aws_query_call(s->q, "DeleteMessage", p, &doc, err);
    tlr_aws_params_free(p);
    tlr_xml_free(doc);
    if (rc != TLR_OK && err &&
        strstr(err->code, "ReceiptHandleIsInvalid"))
        rc = TLR_OK;
    return rc;
}
