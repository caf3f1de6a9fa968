/* xml_fuzz.c - libFuzzer target: tlr_xml_parse on arbitrary bytes, then
 * the readers AWS answers go through (error parsing, EC2 decoders).
 * Bad input must give an error, never a crash or a leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "tlr_awsquery.h"
#include "tlr_ec2.h"
#include "tlr_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tlr_xml_limits lim = { .max_bytes = 1 << 20, .max_nodes = 20000, .max_depth = 32 };
    tlr_xml_doc *doc = NULL;
    char err[128];

    if (tlr_xml_parse((const char *)data, size, &lim, &doc, err, sizeof(err)) == 0) {
        const tlr_xml_node *root = tlr_xml_root(doc);
        tlr_aws_error e;
        tlr_ec2_instances l = { 0 };
        tlr_ec2_fleet_result f = { 0 };
        char *tok = NULL;

        (void)tlr_aws_error_parse(root, 400, &e);
        if (tlr_ec2_parse_instances(root, &l, &tok) == 0) {
            tlr_ec2_instances_free(&l);
            free(tok);
        }
        if (tlr_ec2_parse_create_fleet(root, &f) == 0)
            tlr_ec2_fleet_result_free(&f);
        tlr_xml_free(doc);
    }
    return 0;
}
