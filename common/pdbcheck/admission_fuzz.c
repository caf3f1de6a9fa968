/* admission_fuzz.c - libFuzzer target for the PDB admission webhook's
 * decoding (what `tailorctl pdb-serve` does with a request body): the body
 * as JSON (tlr_json_parse, the server's 4 MiB ceiling), the namespace it
 * names (tlr_pdbc_review_namespace) and the decision (tlr_pdbc_admit).
 * The API server sends the AdmissionReview, but anyone who reaches the
 * webhook's port can send anything.
 *
 * The first byte says whether the namespace's live objects are known: if
 * so, the review's own top-level "items" (pods, workloads, PDBs) are
 * added to a cluster first (tlr_pdbc_add), so the rules that compare the
 * new PDB with what is there run too.
 *
 * Properties beyond "no crash, no leak, no UB": an answer is an
 * admission.k8s.io/v1 AdmissionReview whose response carries the
 * request's uid and a boolean allowed; a refusal says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_pdbcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *review = NULL, *answer = NULL;
    tlr_pdbc *cluster = NULL;
    char err[512] = "", *text = NULL;

    if (size < 1 || size > 1 << 20)
        return 0;
    if (tlr_json_parse((const char *)data + 1, size - 1, 4u << 20, &review, err, sizeof(err)) !=
        TLR_OK)
        return 0;
    (void)tlr_pdbc_review_namespace(review);
    if (data[0] & 1) {
        json_object *items = tlr_json_arr(review, "items");
        tlr_pdbc_create(TLR_PDBC_LIVE, &cluster);
        for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++)
            (void)tlr_pdbc_add(cluster, NULL, json_object_array_get_idx(items, i), err,
                               sizeof(err));
    }
    err[0] = '\0';
    if (tlr_pdbc_admit(review, cluster, &text, err, sizeof(err)) == TLR_OK) {
        bool allowed;
        if (text == NULL || tlr_json_parse(text, strlen(text), 8u << 20, &answer, NULL, 0) != TLR_OK)
            abort();
        const char *uid = tlr_json_str(answer, "response.uid");
        const char *want = tlr_json_str(review, "request.uid");
        if (uid == NULL || want == NULL || strcmp(uid, want) != 0 ||
            tlr_json_bool(answer, "response.allowed", &allowed) != TLR_OK)
            abort();
        json_object_put(answer);
    } else if (err[0] == '\0') {
        abort();
    }
    free(text);
    tlr_pdbc_free(cluster);
    json_object_put(review);
    return 0;
}
