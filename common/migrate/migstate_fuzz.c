/* migstate_fuzz.c - libFuzzer target for what tailorctl migrate reads
 * back: its checkpoint (the JSON in the ConfigMap tailor-migrate-<name>,
 * which anyone with write access to the namespace can change:
 * tlr_mig_state_parse) and a plan file (tlr_mig_plan_parse, YAML or
 * JSON).  The first byte picks the decoder.
 *
 * Properties beyond "no crash, no leak, no UB": a checkpoint that parses
 * writes back (tlr_mig_state_json) to JSON that parses again and writes
 * the same bytes -- what tailorctl saves, it reads back unchanged; a
 * refusal says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_migrate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void state(const char *s, size_t size)
{
    tlr_mig_state st, again;
    char err[256] = "";
    tlr_buf a, b;

    memset(&st, 0, sizeof(st));
    memset(&again, 0, sizeof(again));
    if (tlr_mig_state_parse(s, size, &st, err, sizeof(err)) != TLR_OK) {
        if (err[0] == '\0')
            abort();
        tlr_mig_state_clear(&st);
        return;
    }
    tlr_buf_init(&a, 64u << 20);
    tlr_buf_init(&b, 64u << 20);
    if (tlr_mig_state_json(&st, &a) != TLR_OK)
        abort();
    if (tlr_mig_state_parse(a.data, a.len, &again, err, sizeof(err)) != TLR_OK)
        abort();   /* what tailorctl wrote, it cannot read back */
    if (tlr_mig_state_json(&again, &b) != TLR_OK)
        abort();
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
        abort();   /* the checkpoint changed on the way through */
    tlr_buf_free(&a);
    tlr_buf_free(&b);
    tlr_mig_state_clear(&st);
    tlr_mig_state_clear(&again);
}

static void plan(const char *s, size_t size)
{
    tlr_mig_plan p;
    char err[512] = "";

    memset(&p, 0, sizeof(p));
    if (tlr_mig_plan_parse(s, size, "plan.yaml", &p, err, sizeof(err)) != TLR_OK) {
        if (err[0] == '\0')
            abort();
    } else if (p.nwaves > 0 && p.waves == NULL) {
        abort();
    }
    tlr_mig_plan_clear(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 256 * 1024)
        return 0;
    if (data[0] & 1)
        plan((const char *)data + 1, size - 1);
    else
        state((const char *)data + 1, size - 1);
    return 0;
}
