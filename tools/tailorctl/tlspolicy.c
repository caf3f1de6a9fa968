/* tlspolicy.c - the TLS 1.2 cipher suites of every nng TLS endpoint in
 * tailorctl: ECDHE key exchange with an AEAD cipher (AES-GCM,
 * ChaCha20-Poly1305) only.
 *
 * nng (1.5) serves TLS through mbedTLS and offers no setting for cipher
 * suites; mbedTLS's defaults include static-RSA and CBC suites such as
 * AES128-SHA.  nng's engine builds each configuration with
 * mbedtls_ssl_config_defaults() and never sets a suite list itself, so
 * tailorctl defines that function: the dynamic linker binds nng's call to
 * the executable's definition, which calls mbedTLS's own (found with
 * RTLD_NEXT) and then narrows the list.  Everything nng does after that
 * (version range, certificates) is untouched.  The webhook's TLS test
 * (integration-tests/tailorctl/pdbcheck_it.sh) shows AES128-SHA refused,
 * so a change in nng or mbedTLS that bypasses this cannot go unnoticed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <mbedtls/ssl.h>
#include <mbedtls/ssl_ciphersuites.h>

/* Preference order; zero-terminated; static: mbedTLS keeps the pointer. */
static const int ecdhe_aead[] = {
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    0,
};

typedef int (*config_defaults_fn)(mbedtls_ssl_config *, int, int, int);

int mbedtls_ssl_config_defaults(mbedtls_ssl_config *conf, int endpoint, int transport, int preset)
{
    config_defaults_fn real = (config_defaults_fn)dlsym(RTLD_NEXT, "mbedtls_ssl_config_defaults");
    if (!real) {
        /* Without mbedTLS's own there is no TLS at all: a broken install. */
        fprintf(stderr, "tailorctl: mbedtls_ssl_config_defaults not found: %s\n", dlerror());
        abort();
    }
    int rc = real(conf, endpoint, transport, preset);
    if (rc == 0)
        mbedtls_ssl_conf_ciphersuites(conf, ecdhe_aead);
    return rc;
}
