/* ks_certs.h - a throwaway CA and server certificate for kubesim's HTTPS.
 *
 * Generated at every start with OpenSSL (ECDSA P-256, SHA-256, valid one
 * year), written as PEM into a directory (ca.crt, server.crt, server.key)
 * and handed back in memory for the TLS server and the kubeconfig.
 */
#ifndef KS_CERTS_H
#define KS_CERTS_H

#include <stddef.h>

typedef struct ks_certs {
    char *ca_pem;      /* owned */
    char *cert_pem;    /* owned: the server certificate */
    char *key_pem;     /* owned: the server key (PKCS#8) */
} ks_certs;

/* hosts: borrowed, NULL-terminated list of DNS names and IP addresses for
 * the server certificate's subjectAltName.  dir: where the PEM files go
 * (NULL = write nothing).  On TLR_OK *out is filled (ks_certs_free);
 * otherwise err says why (TLR_E_IO for files, TLR_E_INTERNAL for OpenSSL). */
int  ks_certs_generate(const char *dir, const char *const *hosts, ks_certs *out,
                       char *err, size_t errlen);
void ks_certs_free(ks_certs *c);

#endif
