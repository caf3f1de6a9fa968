/* it_tls.h - certificates for the integration tests' own C programs.
 *
 * The certificates come from scripts/certs.sh: integration-tests/lib.sh
 * makes them for shell tests (TAILOR_TEST_CERTS, TAILOR_TLS_CA exported;
 * tls_as gives a program TAILOR_TLS_CERT/KEY), the ctest fixture
 * "tls_certs" for C tests (TAILOR_TEST_CERTS).
 */
#ifndef IT_TLS_H
#define IT_TLS_H

#include <stdio.h>
#include <stdlib.h>

#include "tlr_err.h"
#include "tlr_tls.h"

/* TAILOR_TLS_CA/CERT/KEY from the environment.  TLR_OK with *out NULL
 * when TAILOR_TLS_CERT is not set (a plaintext test). */
static inline int it_tls_from_env(tlr_logger *log, tlr_tls **out)
{
    const char *cert = getenv("TAILOR_TLS_CERT");
    *out = NULL;
    if (cert == NULL || cert[0] == '\0')
        return TLR_OK;
    char err[256];
    int rc = tlr_tls_create(&(tlr_tls_opts){ .ca_file = getenv("TAILOR_TLS_CA"), .cert_file = cert,
                                             .key_file = getenv("TAILOR_TLS_KEY"), .log = log },
                            out, err, sizeof(err));
    if (rc != TLR_OK)
        fprintf(stderr, "TLS: %s\n", err);
    return rc;
}

/* The three files of identity id in $TAILOR_TEST_CERTS (each len bytes). */
static inline void it_tls_files(const char *id, char *ca, char *cert, char *key, size_t len)
{
    const char *dir = getenv("TAILOR_TEST_CERTS");
    if (dir == NULL)
        dir = ".";
    snprintf(ca, len, "%s/ca.crt", dir);
    snprintf(cert, len, "%s/%s.crt", dir, id);
    snprintf(key, len, "%s/%s.key", dir, id);
}

/* A tlr_tls for identity id from $TAILOR_TEST_CERTS. */
static inline int it_tls_as(const char *id, tlr_logger *log, tlr_tls **out)
{
    char ca[512], cert[512], key[512], err[256];
    it_tls_files(id, ca, cert, key, sizeof(ca));
    int rc = tlr_tls_create(&(tlr_tls_opts){ .ca_file = ca, .cert_file = cert, .key_file = key,
                                             .log = log },
                            out, err, sizeof(err));
    if (rc != TLR_OK)
        fprintf(stderr, "TLS as %s: %s\n", id, err);
    return rc;
}

#endif
