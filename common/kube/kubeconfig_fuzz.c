/* kubeconfig_fuzz.c - libFuzzer target for what the kube client reads to
 * find and prove itself to an API server: a kubeconfig (YAML or JSON,
 * tlr_kube_config_parse) and an exec plugin's ExecCredential
 * (tlr_kube_exec_credential_parse).  The first byte picks the decoder
 * (and, for a kubeconfig, whether a named context is asked for).
 *
 * Properties beyond "no crash, no leak, no UB": an accepted kubeconfig
 * has a server without a trailing '/', a refused one says why; an
 * accepted ExecCredential has a token.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 256 * 1024)
        return 0;
    uint8_t pick = data[0];
    const char *s = (const char *)data + 1;
    size--;

    if (pick & 1) {
        char *token = NULL;
        int64_t expiry = 0;
        if (tlr_kube_exec_credential_parse(s, size, &token, &expiry) == TLR_OK) {
            if (token == NULL)
                abort();
            free(token);
        }
        return 0;
    }
    tlr_kube_config *c = NULL;
    char err[256] = "";
    int rc = tlr_kube_config_parse(s, size, (pick & 2) ? "a" : NULL, "/nonexistent", &c, err,
                                   sizeof(err));
    if (rc == TLR_OK) {
        size_t n = c->server ? strlen(c->server) : 0;
        if (n == 0 || c->server[n - 1] == '/')
            abort();
        tlr_kube_config_free(c);
    } else if (err[0] == '\0') {
        abort();   /* every refusal names its reason */
    }
    return 0;
}
