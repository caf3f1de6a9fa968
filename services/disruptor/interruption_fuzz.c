/* interruption_fuzz.c - libFuzzer target for the disruptor's reading of an
 * SQS message body: the EventBridge event (spot interruption warning,
 * scheduled change, instance state change, rebalance recommendation)
 * that anyone able to send to the queue can write (ds_intr_parse).
 *
 * Properties beyond "no crash, no leak, no UB": an event that is acted on
 * names an instance (an "i-" id that fits its field) and has a metric
 * label; a refusal says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interruption.h"
#include "tlr_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024)
        return 0;
    char *body = malloc(size + 1);   /* an SQS body arrives as a C string */
    if (body == NULL)
        abort();
    memcpy(body, data, size);
    body[size] = '\0';

    ds_intr_msg m;
    char err[256] = "";
    memset(&m, 0xa5, sizeof(m));
    int rc = ds_intr_parse(body, &m, err, sizeof(err));
    if (rc == TLR_OK) {
        if (memchr(m.instance, 0, sizeof(m.instance)) == NULL ||
            memchr(m.state, 0, sizeof(m.state)) == NULL ||
            memchr(m.type, 0, sizeof(m.type)) == NULL)
            abort();
        if (m.kind != DS_INTR_NONE && m.instance[0] == '\0')
            abort();
        if (ds_intr_kind_name(m.kind, m.state) == NULL)
            abort();
    } else if (err[0] == '\0') {
        abort();
    }
    free(body);
    return 0;
}
