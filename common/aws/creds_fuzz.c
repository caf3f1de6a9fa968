/* creds_fuzz.c - libFuzzer target for the credential sources that are
 * read from text: the shared credentials / config INI files
 * (tlr_aws_profile_parse, both formats, the default and a named profile)
 * and the IMDS security-credentials document (tlr_aws_imds_creds_parse).
 * The first byte picks the decoder and the profile.
 *
 * Properties beyond "no crash, no leak, no UB": accepted credentials have
 * a non-empty key id and secret and say where they came from; IMDS's
 * Code is NUL-terminated in its buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_awscreds.h"
#include "tlr_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int rc, tlr_aws_credentials *c, bool imds)
{
    if (rc != TLR_OK)
        return;
    if (c->access_key_id == NULL || c->secret_access_key == NULL ||
        (!imds && (c->access_key_id[0] == '\0' || c->secret_access_key[0] == '\0')) ||
        c->source[0] == '\0')
        abort();
    tlr_aws_credentials_clear(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 256 * 1024)
        return 0;
    uint8_t pick = data[0];
    const char *s = (const char *)data + 1;
    size--;

    tlr_aws_credentials c = { 0 };
    if (pick & 1) {
        char code[16];
        memset(code, 0xa5, sizeof(code));
        int rc = tlr_aws_imds_creds_parse(s, size, &c, code, sizeof(code));
        if (memchr(code, 0, sizeof(code)) == NULL)
            abort();
        check(rc, &c, true);
        return 0;
    }
    const char *profile = (pick & 2) ? "dev" : "default";
    check(tlr_aws_profile_parse(s, size, profile, (pick & 4) != 0, &c), &c, false);
    return 0;
}
