/* envelope_fuzz.c - libFuzzer target for what every receiver decodes:
 * the Envelope, then its payload as each v1 request and published message.
 *
 * Properties checked beyond "no crash, no leak, no UB":
 *   - an accepted envelope has a type and contract version 1;
 *   - a payload that decodes re-packs, and when the re-packed bytes decode
 *     again they pack to the same bytes (packing is deterministic).  They
 *     need not decode: protobuf-c keeps an unknown field with the invalid
 *     number 0 verbatim and refuses it on the next decode -- harmless for
 *     tailor, whose receivers reject such bytes with DECODE either way.
 * The first input byte picks a descriptor so the fuzzer also hits each
 * payload decoder directly, without having to build an envelope first.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/disruptor.pb-c.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_envelope.h"
#include "tlr_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ProtobufCMessageDescriptor *const descs[] = {
    &tailor__v1__solve_request__descriptor,
    &tailor__v1__solve_response__descriptor,
    &tailor__v1__simulate_request__descriptor,
    &tailor__v1__pending_batch__descriptor,
    &tailor__v1__snapshot_response__descriptor,
    &tailor__v1__launch_request__descriptor,
    &tailor__v1__terminate_request__descriptor,
    &tailor__v1__explain_request__descriptor,
    &tailor__v1__explain_response__descriptor,
    /* every other message a service decodes from its sockets */
    &tailor__v1__simulate_response__descriptor,
    &tailor__v1__snapshot_request__descriptor,
    &tailor__v1__cluster_change__descriptor,
    &tailor__v1__launch_response__descriptor,
    &tailor__v1__terminate_response__descriptor,
    &tailor__v1__catalog_request__descriptor,
    &tailor__v1__catalog_response__descriptor,
    &tailor__v1__launch_event__descriptor,
    &tailor__v1__scheduling_decisions__descriptor,
    &tailor__v1__disruption_event__descriptor,
    &tailor__v1__ping_request__descriptor,
    &tailor__v1__ping_response__descriptor,
};
#define NDESCS (sizeof(descs) / sizeof(descs[0]))

static void check_repack(const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *a = malloc(n ? n : 1);
    protobuf_c_message_pack(m, a);
    ProtobufCMessage *again = protobuf_c_message_unpack(m->descriptor, NULL, n, a);
    if (!again) {
        free(a);
        return;
    }
    size_t n2 = protobuf_c_message_get_packed_size(again);
    uint8_t *b = malloc(n2 ? n2 : 1);
    protobuf_c_message_pack(again, b);
    if (n2 != n || memcmp(a, b, n) != 0)
        abort();
    free(a);
    free(b);
    protobuf_c_message_free_unpacked(again, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    /* Path 1: a raw payload for one descriptor. */
    const ProtobufCMessageDescriptor *d = descs[data[0] % NDESCS];
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, size - 1, data + 1);
    if (m) {
        check_repack(m);
        protobuf_c_message_free_unpacked(m, NULL);
    }

    /* Path 2: the whole input as an envelope, as a receiver sees it. */
    Tailor__V1__Envelope *env = NULL;
    char err[256];
    int rc = tlr_envelope_unpack(data, size, 1 << 20, &env, err, sizeof(err));
    if (rc != TLR_OK)
        return 0;
    if (!env->type || !*env->type || env->contract_version != TLR_CONTRACT_VERSION)
        abort();
    for (size_t i = 0; i < NDESCS; i++) {
        ProtobufCMessage *p = NULL;
        if (tlr_envelope_payload(env, descs[i], &p, err, sizeof(err)) == TLR_OK) {
            check_repack(p);
            protobuf_c_message_free_unpacked(p, NULL);
        }
    }
    tailor__v1__envelope__free_unpacked(env, NULL);
    return 0;
}
