/* awsxml_fuzz.c - libFuzzer target for every reader of an AWS Query/XML
 * answer: EC2 (instances, fleets, user data, subnets, security groups,
 * images, instance types, offerings, spot prices), Auto Scaling (groups,
 * activity), IAM (instance profiles), STS (web-identity credentials), SQS
 * (ReceiveMessage, GetQueueUrl) and the error document.  xml_fuzz covers
 * the XML parser itself; this one starts from documents shaped like
 * answers (corpus/awsxml_fuzz) so the fuzzer spends its time inside the
 * readers.  Every reader sees every document: a reader handed another
 * action's answer must refuse it, not misread it.
 *
 * Properties beyond "no crash, no leak, no UB": a result struct is freed
 * whatever its reader returned (a failed reader leaves nothing that the
 * free cannot take back); an accepted list has no NULL identity; an error
 * document's code, message and request id are NUL-terminated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_autoscaling.h"
#include "tlr_awscreds.h"
#include "tlr_awsquery.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_iam.h"
#include "tlr_sqs.h"
#include "tlr_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void ec2(const tlr_xml_node *root)
{
    char *next = NULL;
    {
        tlr_ec2_instances l = { 0 };
        if (tlr_ec2_parse_instances(root, &l, &next) == TLR_OK)
            for (size_t i = 0; i < l.n; i++)
                if (l.v[i].id == NULL)
                    abort();
        tlr_ec2_instances_free(&l);
        free(next);
        next = NULL;
    }
    {
        tlr_ec2_fleet_result f = { 0 };
        (void)tlr_ec2_parse_create_fleet(root, &f);
        tlr_ec2_fleet_result_free(&f);
    }
    {
        char *ud = NULL;
        if (tlr_ec2_parse_user_data(root, &ud) == TLR_OK && ud == NULL)
            abort();
        free(ud);
    }
    {
        tlr_ec2_subnets l = { 0 };
        (void)tlr_ec2_parse_subnets(root, &l, &next);
        tlr_ec2_subnets_free(&l);
        free(next);
        next = NULL;
    }
    {
        tlr_ec2_security_groups l = { 0 };
        (void)tlr_ec2_parse_security_groups(root, &l, &next);
        tlr_ec2_security_groups_free(&l);
        free(next);
        next = NULL;
    }
    {
        tlr_ec2_images l = { 0 };
        (void)tlr_ec2_parse_images(root, &l, &next);
        tlr_ec2_images_free(&l);
        free(next);
        next = NULL;
    }
    {
        tlr_ec2_type_infos l = { 0 };
        (void)tlr_ec2_parse_instance_types(root, &l, &next);
        tlr_ec2_type_infos_free(&l);
        free(next);
        next = NULL;
    }
    {
        tlr_ec2_type_offerings l = { 0 };
        (void)tlr_ec2_parse_type_offerings(root, &l, &next);
        tlr_ec2_type_offerings_free(&l);
        free(next);
        next = NULL;
    }
    {
        tlr_ec2_spot_prices l = { 0 };
        (void)tlr_ec2_parse_spot_prices(root, &l, &next);
        /* a second page appends and keeps the newest per (type, zone) */
        char *next2 = NULL;
        (void)tlr_ec2_parse_spot_prices(root, &l, &next2);
        tlr_ec2_spot_prices_free(&l);
        free(next);
        free(next2);
        next = NULL;
    }
}

static void others(const tlr_xml_node *root)
{
    char *next = NULL;
    {
        tlr_asg_groups g = { 0 };
        (void)tlr_asg_parse_groups(root, &g, &next);
        tlr_asg_groups_free(&g);
        free(next);
        next = NULL;
        tlr_asg_activity a = { 0 };
        (void)tlr_asg_parse_activity(root, &a);
        tlr_asg_activity_free(&a);
    }
    {
        tlr_iam_profile p = { 0 };
        if (tlr_iam_parse_profile(root, "GetInstanceProfile", &p) == TLR_OK && p.name == NULL)
            abort();
        tlr_iam_profile_free(&p);
        memset(&p, 0, sizeof(p));
        (void)tlr_iam_parse_profile(root, "CreateInstanceProfile", &p);
        tlr_iam_profile_free(&p);
        tlr_iam_profiles l = { 0 };
        (void)tlr_iam_parse_profiles(root, &l, &next);
        tlr_iam_profiles_free(&l);
        free(next);
        next = NULL;
    }
    {
        tlr_aws_credentials c = { 0 };
        if (tlr_aws_sts_creds_parse(root, &c) == TLR_OK &&
            (c.access_key_id == NULL || c.secret_access_key == NULL))
            abort();
        tlr_aws_credentials_clear(&c);
    }
    {
        tlr_sqs_messages m = { 0 };
        (void)tlr_sqs_parse_receive(root, &m);
        tlr_sqs_messages_free(&m);
        char *url = NULL;
        (void)tlr_sqs_parse_queue_url(root, &url);
        free(url);
    }
    {
        tlr_aws_error e;
        memset(&e, 0xff, sizeof(e));
        if (tlr_aws_error_parse(root, 400, &e) == TLR_OK &&
            (memchr(e.code, 0, sizeof(e.code)) == NULL ||
            memchr(e.message, 0, sizeof(e.message)) == NULL ||
            memchr(e.request_id, 0, sizeof(e.request_id)) == NULL))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tlr_xml_limits lim = { .max_bytes = 1 << 20, .max_nodes = 20000, .max_depth = 32 };
    tlr_xml_doc *doc = NULL;
    char err[128];

    if (tlr_xml_parse((const char *)data, size, &lim, &doc, err, sizeof(err)) != TLR_OK)
        return 0;
    const tlr_xml_node *root = tlr_xml_root(doc);
    ec2(root);
    others(root);
    tlr_xml_free(doc);
    return 0;
}
