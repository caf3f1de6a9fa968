/* userdata_fuzz.c - libFuzzer target: arbitrary bytes as an EC2NodeClass's
 * spec.userData, through the MIME and TOML readers and the user data of
 * every AMI family.  A user's userData is outside input: it must give a
 * clear error or a document, never a crash or a leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_bootstrap.h"
#include "tlr_mime.h"
#include "tlr_toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    tlr_mime_doc d = { 0 };
    json_object *t = NULL;
    char *ud = malloc(size + 1), *out = NULL;

    if (!ud)
        return 0;
    memcpy(ud, data, size);
    ud[size] = '\0';
    if (tlr_mime_parse(ud, size, &d, err, sizeof(err)) == 0)
        tlr_mime_doc_free(&d);
    if (tlr_toml_parse(ud, size, &t, err, sizeof(err)) == 0) {
        if (tlr_toml_write(t, &out) == 0)
            free(out);
        json_object_put(t);
    }
    if (strlen(ud) == size) {   /* userData is a string: no NULs */
        tlr_cluster_identity id = { "c1", "https://127.0.0.1:6443", "Y2E=", "10.100.0.0/16",
                                    "10.100.0.10" };
        Tailor__V1__Label l = TAILOR__V1__LABEL__INIT, *ls[1] = { &l };
        Tailor__V1__Taint x = TAILOR__V1__TAINT__INIT, *ts[1] = { &x };
        l.key = "team", l.value = "a";
        x.key = "karpenter.sh/unregistered";
        x.effect = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE;
        tlr_ami_family fams[] = { TLR_AMI_FAMILY_AL2023, TLR_AMI_FAMILY_AL2,
                                  TLR_AMI_FAMILY_BOTTLEROCKET, TLR_AMI_FAMILY_CUSTOM };
        for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
            tlr_bootstrap_in in = { .family = fams[i], .cluster = &id, .labels =
                                    (const Tailor__V1__Label *const *)ls, .nlabels = 1,
                                    .taints = (const Tailor__V1__Taint *const *)ts,
                                    .ntaints = 1, .user_data = ud };
            if (tlr_bootstrap_user_data(&in, &out, err, sizeof(err)) == 0)
                free(out);
            out = NULL;
        }
    }
    free(ud);
    return 0;
}
