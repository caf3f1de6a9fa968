/* tlr_sqs.h - typed SQS calls on the AWS Query client (API 2012-11-05).
 *
 * What an interruption handler needs from the queue EventBridge fills:
 * resolve a queue name to its URL, receive (short or long poll) and
 * delete.  Requests are POST form bodies signed with SigV4 (service
 * "sqs") to the endpoint, the queue named by its QueueUrl parameter, and
 * the XML answers are decoded here (tlr_sqs_parse_* are exposed for tests).
 * A tlr_sqs is a tlr_aws_query: one per thread.
 */
#ifndef TLR_SQS_H
#define TLR_SQS_H

#include <stddef.h>

#include "tlr_awsquery.h"
#include "tlr_xml.h"

#define TLR_SQS_API_VERSION "2012-11-05"

typedef struct tlr_sqs tlr_sqs;

typedef struct tlr_sqs_message {
    char *id;          /* MessageId */
    char *receipt;     /* ReceiptHandle: what DeleteMessage takes */
    char *body;        /* the message, e.g. an EventBridge event (JSON) */
    char *md5;         /* MD5OfBody, as sent ("" when absent) */
} tlr_sqs_message;

typedef struct tlr_sqs_messages {
    tlr_sqs_message *v;
    size_t n;
} tlr_sqs_messages;

void tlr_sqs_messages_free(tlr_sqs_messages *l);   /* contents; NULL fine */

/* opts->service and ->version are filled in (sqs, 2012-11-05); the rest as
 * tlr_aws_query_create.  On TLR_OK *out is new and owned. */
int  tlr_sqs_create(const tlr_aws_query_opts *opts, tlr_sqs **out);
void tlr_sqs_free(tlr_sqs *s);   /* NULL is fine */

/* GetQueueUrl.  On TLR_OK *url is new and owned (free()).  TLR_E_NOTFOUND
 * for AWS.SimpleQueueService.NonExistentQueue. */
int tlr_sqs_queue_url(tlr_sqs *s, const char *name, char **url, tlr_aws_error *err);

/* ReceiveMessage from queue_url: at most max (1..10) messages, waiting up
 * to wait_s seconds for one (0 = short poll), hidden from other receivers
 * for visibility_s (0 = the queue's default).  On TLR_OK *out is filled
 * (possibly empty) and owned by the caller. */
int tlr_sqs_receive(tlr_sqs *s, const char *queue_url, int max, int wait_s, int visibility_s,
                    tlr_sqs_messages *out, tlr_aws_error *err);

/* DeleteMessage.  A receipt that is no longer valid is success: the
 * message is gone either way. */
int tlr_sqs_delete(tlr_sqs *s, const char *queue_url, const char *receipt, tlr_aws_error *err);

/* Decoders of the answers' root elements. */
int tlr_sqs_parse_receive(const tlr_xml_node *root, tlr_sqs_messages *out);
int tlr_sqs_parse_queue_url(const tlr_xml_node *root, char **url);

#endif
