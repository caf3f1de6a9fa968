/* certs.c - CA and server certificate generation (see ks_certs.h). */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ks_certs.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

void ks_certs_free(ks_certs *c)
{
    if (!c)
        return;
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    c->ca_pem = c->cert_pem = c->key_pem = NULL;
}

static char *bio_text(BIO *b)
{
    char *p = NULL;
    long n = BIO_get_mem_data(b, &p);
    return tlr_strndup(p, (size_t)n);
}

static char *cert_pem(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    char *s = bio_text(b);
    BIO_free(b);
    return s;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
    if (!ex)
        return -1;
    int ok = X509_add_ext(cert, ex, -1);
    X509_EXTENSION_free(ex);
    return ok ? 0 : -1;
}

/* A certificate for key, signed by (issuer, ikey), or self-signed. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey, bool ca,
                       const char *san)
{
    X509 *x = X509_new();
    unsigned char serial[16];
    RAND_bytes(serial, sizeof(serial));
    serial[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    BN_free(bn);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 365L * 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509 *iss = issuer ? issuer : x;
    int bad = 0;
    if (ca) {
        bad |= add_ext(x, iss, NID_basic_constraints, "critical,CA:TRUE");
        bad |= add_ext(x, iss, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
        bad |= add_ext(x, iss, NID_subject_key_identifier, "hash");
    } else {
        bad |= add_ext(x, iss, NID_basic_constraints, "critical,CA:FALSE");
        bad |= add_ext(x, iss, NID_key_usage, "critical,digitalSignature,keyEncipherment");
        bad |= add_ext(x, iss, NID_ext_key_usage, "serverAuth");
        bad |= add_ext(x, iss, NID_subject_alt_name, san);
        bad |= add_ext(x, iss, NID_authority_key_identifier, "keyid:always");
    }
    if (bad || !X509_sign(x, ikey ? ikey : key, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static int write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return TLR_E_IO;
    chmod(path, mode);
    int ok = fputs(text, f) >= 0;
    ok &= fclose(f) == 0;
    return ok ? TLR_OK : TLR_E_IO;
}

int ks_certs_generate(const char *dir, const char *const *hosts, ks_certs *out, char *err,
                      size_t errlen)
{
    int rc = TLR_E_INTERNAL;
    EVP_PKEY *cakey = EVP_EC_gen("P-256"), *key = EVP_EC_gen("P-256");
    X509 *ca = NULL, *srv = NULL;
    char san[2048] = "";
    size_t used = 0;
    for (size_t i = 0; hosts && hosts[i]; i++) {
        unsigned char buf[16];
        bool ip = inet_pton(AF_INET, hosts[i], buf) == 1 || inet_pton(AF_INET6, hosts[i], buf) == 1;
        int n = snprintf(san + used, sizeof(san) - used, "%s%s:%s", used ? "," : "",
                         ip ? "IP" : "DNS", hosts[i]);
        if (n < 0 || (size_t)n >= sizeof(san) - used) {
            snprintf(err, errlen, "too many certificate host names");
            goto out;
        }
        used += (size_t)n;
    }
    if (!cakey || !key || !used) {
        snprintf(err, errlen, "key generation failed or no host names");
        goto out;
    }
    ca = make_cert(cakey, "kubesim-ca", NULL, NULL, true, NULL);
    srv = ca ? make_cert(key, "kubesim", ca, cakey, false, san) : NULL;
    if (!srv) {
        snprintf(err, errlen, "certificate signing failed: %s",
                 ERR_error_string(ERR_get_error(), NULL));
        goto out;
    }
    ks_certs c = { cert_pem(ca), cert_pem(srv), NULL };
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
    c.key_pem = bio_text(b);
    BIO_free(b);
    if (dir) {
        mkdir(dir, 0700);
        if (write_file(dir, "ca.crt", c.ca_pem, 0644) ||
            write_file(dir, "server.crt", c.cert_pem, 0644) ||
            write_file(dir, "server.key", c.key_pem, 0600)) {
            snprintf(err, errlen, "cannot write certificates into %s", dir);
            ks_certs_free(&c);
            rc = TLR_E_IO;
            goto out;
        }
    }
    *out = c;
    rc = TLR_OK;
out:
    X509_free(ca);
    X509_free(srv);
    EVP_PKEY_free(cakey);
    EVP_PKEY_free(key);
    return rc;
}
