/* tlr_awscreds.h - where AWS credentials come from, and when to renew them.
 *
 * A provider resolves credentials through the usual chain, first hit wins:
 *   1. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
 *      (+ AWS_SESSION_TOKEN);
 *   2. shared files: the profile AWS_PROFILE (else "default") in
 *      AWS_SHARED_CREDENTIALS_FILE (else ~/.aws/credentials), then in
 *      AWS_CONFIG_FILE (else ~/.aws/config, where it is "[profile x]",
 *      "[default]" for the default profile); keys aws_access_key_id,
 *      aws_secret_access_key, aws_session_token;
 *   3. web identity (IRSA): AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE
 *      (AWS_ROLE_SESSION_NAME optional) -> STS AssumeRoleWithWebIdentity,
 *      an unsigned POST to the STS endpoint (AWS_ENDPOINT_URL_STS, else
 *      AWS_ENDPOINT_URL, else https://sts.REGION.amazonaws.com); the token
 *      file is re-read on every refresh because kubelet rotates it;
 *   4. IMDSv2: PUT /latest/api/token, then GET
 *      /latest/meta-data/iam/security-credentials/[ROLE] with that token,
 *      at AWS_EC2_METADATA_SERVICE_ENDPOINT (else http://169.254.169.254);
 *      skipped when AWS_EC2_METADATA_DISABLED=true.
 * Temporary credentials are renewed refresh_before_ms before they expire;
 * if renewal fails while the old ones are still valid they keep being
 * used (and the failure is logged).  A provider is thread-safe.
 *
 * Secrets never reach the log: they are written as TLR_SECRET.
 */
#ifndef TLR_AWSCREDS_H
#define TLR_AWSCREDS_H

#include <stddef.h>
#include <stdint.h>

#include "tlr_log.h"
#include "tlr_time.h"

/* One set of credentials; every string owned. */
typedef struct tlr_aws_credentials {
    char   *access_key_id;
    char   *secret_access_key;
    char   *session_token;     /* NULL for long-term keys */
    int64_t expires_ms;        /* wall clock; 0 = does not expire */
    char    source[24];        /* "env", "profile", "web-identity", "imds", "static" */
} tlr_aws_credentials;

/* Frees the strings (secrets wiped first) and zeroes *c.  NULL is fine. */
void tlr_aws_credentials_clear(tlr_aws_credentials *c);
/* A deep copy into *dst (owned by the caller). */
void tlr_aws_credentials_copy(const tlr_aws_credentials *src, tlr_aws_credentials *dst);

typedef struct tlr_aws_creds tlr_aws_creds;

typedef struct tlr_aws_creds_opts {
    tlr_logger *log;              /* borrowed; may be NULL */
    const char *profile;          /* NULL = AWS_PROFILE or "default" */
    const char *region;           /* for STS; NULL = AWS_REGION, AWS_DEFAULT_REGION, us-east-1 */
    const tlr_clock *clock;       /* borrowed; NULL = system clock */
    int64_t refresh_before_ms;    /* 0 = 5 minutes */
    int     http_timeout_ms;      /* STS and IMDS; 0 = 5000 (IMDS: 1000) */
} tlr_aws_creds_opts;

/* A provider that walks the chain above.  Nothing is resolved until the
 * first tlr_aws_creds_get().  On TLR_OK *out is new and owned: free with
 * tlr_aws_creds_free().  o may be NULL. */
int  tlr_aws_creds_create(const tlr_aws_creds_opts *o, tlr_aws_creds **out);

/* A provider that always returns the given keys (copied); session_token
 * may be NULL.  For tests and for explicit configuration. */
int  tlr_aws_creds_create_static(const char *access_key_id, const char *secret_access_key,
                                 const char *session_token, tlr_aws_creds **out);

void tlr_aws_creds_free(tlr_aws_creds *c);   /* NULL is fine */

/* Current credentials, resolved or renewed as needed; on TLR_OK *out is a
 * copy owned by the caller (tlr_aws_credentials_clear()).
 * TLR_E_NOTFOUND: no source in the chain had credentials.  TLR_E_AUTH:
 * STS refused the web identity token.  TLR_E_PARSE: a malformed answer or
 * file (the log says which).  TLR_E_IO / TLR_E_TIMEOUT: a source could
 * not be reached. */
int  tlr_aws_creds_get(tlr_aws_creds *c, tlr_aws_credentials *out);

/* Forget cached credentials so the next get resolves again (after an
 * AuthFailure, say). */
void tlr_aws_creds_invalidate(tlr_aws_creds *c);

/* Look up profile in one shared file (credentials or config format;
 * is_config selects "[profile x]" sections).  Exposed for tests.
 * TLR_E_NOTFOUND: no such file, profile or keys in it. */
int  tlr_aws_profile_load(const char *path, const char *profile, int is_config,
                          tlr_aws_credentials *out);
/* The same on the file's text buf[0..len) (borrowed; a NUL ends it). */
int  tlr_aws_profile_parse(const char *buf, size_t len, const char *profile, int is_config,
                           tlr_aws_credentials *out);

/* The IMDS credentials document doc[0..len) (borrowed JSON: Code,
 * AccessKeyId, SecretAccessKey, Token, Expiration).  On TLR_OK *out is
 * filled (owned).  TLR_E_INVAL: JSON, but no usable credentials (Code not
 * Success, a key missing, Expiration not a time); else tlr_json_parse's
 * error.  code_out (may be NULL) gets IMDS's Code ("" without one). */
int  tlr_aws_imds_creds_parse(const char *doc, size_t len, tlr_aws_credentials *out,
                              char *code_out, size_t code_len);

/* The Credentials of an STS AssumeRoleWithWebIdentity answer (root
 * borrowed).  On TLR_OK *out is filled (owned); TLR_E_PARSE when a key
 * is missing or Expiration is not a time. */
struct tlr_xml_node;
int  tlr_aws_sts_creds_parse(const struct tlr_xml_node *root, tlr_aws_credentials *out);

/* Where an AWS client goes, as the AWS SDKs resolve it.  The region:
 * given when set, else $AWS_REGION, else $AWS_DEFAULT_REGION, else
 * "us-east-1".  The endpoint of service: given when set, else
 * $AWS_ENDPOINT_URL_<SERVICE> (upper-cased, other characters as '_'),
 * else $AWS_ENDPOINT_URL; NULL when none says (the service's public
 * endpoint then).  Both return given or the environment's string. */
const char *tlr_aws_region(const char *given);
const char *tlr_aws_endpoint(const char *service, const char *given);

#endif
