/* pubsub_fuzz.c - libFuzzer target for what a subscriber decodes from its
 * socket: "<topic>" NUL <Envelope> (tlr_sub_decode), on any bytes a
 * publisher -- or anyone who can reach the subscriber's port -- sends.
 *
 * Properties beyond "no crash, no leak, no UB": an accepted message has a
 * topic of 1..TLR_TOPIC_MAX bytes with no NUL, equal to the bytes before
 * the first NUL, and an envelope with a type; a refused one has a reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_pubsub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char topic[TLR_TOPIC_MAX + 1];
    char err[256] = "";
    Tailor__V1__Envelope *env = NULL;

    int rc = tlr_sub_decode(data, size, 1 << 20, topic, &env, err, sizeof(err));
    if (rc == TLR_OK) {
        size_t n = strlen(topic);
        if (n == 0 || n > TLR_TOPIC_MAX || n >= size || data[n] != 0 ||
            memcmp(topic, data, n) != 0)
            abort();
        if (env == NULL || env->type == NULL || env->type[0] == '\0')
            abort();
        tailor__v1__envelope__free_unpacked(env, NULL);
    } else if (err[0] == '\0') {
        abort();
    }
    return 0;
}
