/* creds.c - tlr_aws_creds: the credential chain, caching and renewal.
 *
 * The provider keeps the last credentials it resolved.  get() returns
 * them while they are more than refresh_before_ms from expiry; otherwise
 * it walks the chain again (the chain, not just the source that answered
 * last time, so an operator who exports new keys is picked up).  When the
 * walk fails but the cached credentials have not expired yet, they are
 * returned and the failure is logged: a brief STS or IMDS outage must not
 * stop the autoscaler.  A mutex makes get() safe from several threads; a
 * refresh happens under it, so concurrent callers wait for one refresh
 * instead of starting several.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "tlr_alloc.h"
#include "tlr_awscreds.h"
#include "tlr_awsquery.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define CREDS_MAX_FILE   (1 << 20)    /* shared config files, token files */
#define CREDS_MAX_ANSWER (64 << 10)   /* IMDS answers */

struct tlr_aws_creds {
    pthread_mutex_t mu;
    bool is_static;
    char *profile, *region;
    tlr_logger *log;
    tlr_clock clock;
    int64_t refresh_before_ms;
    int http_timeout_ms;
    tlr_aws_credentials cached;   /* access_key_id NULL = none */
};

static void wipe_free(char *s)
{
    if (s != NULL) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

void tlr_aws_credentials_clear(tlr_aws_credentials *c)
{
    if (c == NULL)
        return;
    free(c->access_key_id);
    wipe_free(c->secret_access_key);
    wipe_free(c->session_token);
    memset(c, 0, sizeof(*c));
}

void tlr_aws_credentials_copy(const tlr_aws_credentials *src, tlr_aws_credentials *dst)
{
    memset(dst, 0, sizeof(*dst));
    dst->access_key_id = tlr_strdup(src->access_key_id);
    dst->secret_access_key = tlr_strdup(src->secret_access_key);
    dst->session_token = tlr_strdup(src->session_token);
    dst->expires_ms = src->expires_ms;
    memcpy(dst->source, src->source, sizeof(dst->source));
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

const char *tlr_aws_region(const char *given)
{
    const char *r = given && given[0] ? given : env_nonempty("AWS_REGION");
    if (r == NULL)
        r = env_nonempty("AWS_DEFAULT_REGION");
    return r ? r : "us-east-1";
}

const char *tlr_aws_endpoint(const char *service, const char *given)
{
    if (given && given[0])
        return given;
    char name[128];
    size_t k = (size_t)snprintf(name, sizeof(name), "AWS_ENDPOINT_URL_");
    for (const char *s = service; *s && k + 1 < sizeof(name); s++)
        name[k++] = (char)(isalnum((unsigned char)*s) ? toupper((unsigned char)*s) : '_');
    name[k] = '\0';
    const char *e = env_nonempty(name);
    return e ? e : env_nonempty("AWS_ENDPOINT_URL");
}

int tlr_aws_creds_create(const tlr_aws_creds_opts *o, tlr_aws_creds **out)
{
    tlr_aws_creds *c;

    if (out == NULL)
        return TLR_E_INVAL;
    c = tlr_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->profile = tlr_strdup(o != NULL ? o->profile : NULL);
    c->region = tlr_strdup(o != NULL ? o->region : NULL);
    c->log = o != NULL ? o->log : NULL;
    c->clock = o != NULL && o->clock != NULL ? *o->clock : tlr_clock_system;
    c->refresh_before_ms = o != NULL && o->refresh_before_ms > 0 ? o->refresh_before_ms
                                                                  : 5 * 60 * 1000;
    c->http_timeout_ms = o != NULL && o->http_timeout_ms > 0 ? o->http_timeout_ms : 0;
    *out = c;
    return TLR_OK;
}

int tlr_aws_creds_create_static(const char *access_key_id, const char *secret_access_key,
                                const char *session_token, tlr_aws_creds **out)
{
    tlr_aws_creds *c;

    if (access_key_id == NULL || secret_access_key == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_aws_creds_create(NULL, &c);
    c->is_static = true;
    c->cached.access_key_id = tlr_strdup(access_key_id);
    c->cached.secret_access_key = tlr_strdup(secret_access_key);
    c->cached.session_token = tlr_strdup(session_token);
    snprintf(c->cached.source, sizeof(c->cached.source), "static");
    *out = c;
    return TLR_OK;
}

void tlr_aws_creds_free(tlr_aws_creds *c)
{
    if (c == NULL)
        return;
    tlr_aws_credentials_clear(&c->cached);
    pthread_mutex_destroy(&c->mu);
    free(c->profile);
    free(c->region);
    free(c);
}

void tlr_aws_creds_invalidate(tlr_aws_creds *c)
{
    if (c == NULL || c->is_static)
        return;
    pthread_mutex_lock(&c->mu);
    tlr_aws_credentials_clear(&c->cached);
    pthread_mutex_unlock(&c->mu);
}

/* --- sources --------------------------------------------------------- */

static int from_env(tlr_aws_credentials *out)
{
    const char *ak = env_nonempty("AWS_ACCESS_KEY_ID");
    const char *sk = env_nonempty("AWS_SECRET_ACCESS_KEY");

    if (ak == NULL || sk == NULL)
        return TLR_E_NOTFOUND;
    memset(out, 0, sizeof(*out));
    out->access_key_id = tlr_strdup(ak);
    out->secret_access_key = tlr_strdup(sk);
    out->session_token = tlr_strdup(env_nonempty("AWS_SESSION_TOKEN"));
    snprintf(out->source, sizeof(out->source), "env");
    return TLR_OK;
}

/* Read a whole small file into an owned string; TLR_E_NOTFOUND if absent. */
static int read_file(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    tlr_buf b;
    char chunk[4096];
    size_t n;
    int rc = TLR_OK;

    if (f == NULL)
        return errno == ENOENT ? TLR_E_NOTFOUND : TLR_E_IO;
    tlr_buf_init(&b, CREDS_MAX_FILE);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && rc == TLR_OK)
        rc = tlr_buf_add(&b, chunk, n);
    if (rc == TLR_OK && ferror(f))
        rc = TLR_E_IO;
    fclose(f);
    if (rc != TLR_OK) {
        tlr_buf_free(&b);
        return rc;
    }
    *out = tlr_buf_take(&b);
    return TLR_OK;
}

static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int tlr_aws_profile_parse(const char *buf, size_t len, const char *profile, int is_config,
                          tlr_aws_credentials *out)
{
    char *text, *line, *save = NULL;
    char *ak = NULL, *sk = NULL, *tok = NULL;
    bool in_section = false;
    int rc = TLR_OK;

    if (buf == NULL || profile == NULL || out == NULL)
        return TLR_E_INVAL;
    text = tlr_malloc(len + 1);   /* strtok_r writes into it */
    memcpy(text, buf, len);
    text[len] = '\0';
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *l = trim(line), *eq;

        if (*l == '#' || *l == ';' || *l == '\0')
            continue;
        if (*l == '[') {
            char *end = strchr(l, ']');
            char *name;

            if (end == NULL)
                continue;
            *end = '\0';
            name = trim(l + 1);
            if (is_config && strcmp(profile, "default") != 0) {
                in_section = strncmp(name, "profile", 7) == 0 && isspace((unsigned char)name[7]) &&
                             strcmp(trim(name + 8), profile) == 0;
            } else if (is_config) {
                in_section = strcmp(name, "default") == 0 || strcmp(name, "profile default") == 0;
            } else {
                in_section = strcmp(name, profile) == 0;
            }
            continue;
        }
        if (!in_section || (eq = strchr(l, '=')) == NULL)
            continue;
        *eq = '\0';
        {
            char *k = trim(l), *v = trim(eq + 1);

            if (strcasecmp(k, "aws_access_key_id") == 0) {
                free(ak);
                ak = tlr_strdup(v);
            } else if (strcasecmp(k, "aws_secret_access_key") == 0) {
                wipe_free(sk);
                sk = tlr_strdup(v);
            } else if (strcasecmp(k, "aws_session_token") == 0) {
                wipe_free(tok);
                tok = tlr_strdup(v);
            }
        }
    }
    if (ak == NULL || sk == NULL || ak[0] == '\0' || sk[0] == '\0') {
        rc = TLR_E_NOTFOUND;
        free(ak);
        wipe_free(sk);
        wipe_free(tok);
    } else {
        memset(out, 0, sizeof(*out));
        out->access_key_id = ak;
        out->secret_access_key = sk;
        out->session_token = tok;
        snprintf(out->source, sizeof(out->source), "profile");
    }
    /* strtok_r cut the text at every newline: wipe all of it, not its first line. */
    OPENSSL_cleanse(text, len + 1);
    free(text);
    return rc;
}

int tlr_aws_profile_load(const char *path, const char *profile, int is_config,
                         tlr_aws_credentials *out)
{
    char *text = NULL;
    int rc;

    if (path == NULL || profile == NULL || out == NULL)
        return TLR_E_INVAL;
    if ((rc = read_file(path, &text)) != TLR_OK)
        return rc;
    rc = tlr_aws_profile_parse(text, strlen(text), profile, is_config, out);
    OPENSSL_cleanse(text, strlen(text));
    free(text);
    return rc;
}

static int from_profile(tlr_aws_creds *c, tlr_aws_credentials *out)
{
    const char *profile = c->profile ? c->profile : env_nonempty("AWS_PROFILE");
    const char *home = env_nonempty("HOME");
    const char *cred_file = env_nonempty("AWS_SHARED_CREDENTIALS_FILE");
    const char *conf_file = env_nonempty("AWS_CONFIG_FILE");
    char p1[4096], p2[4096];
    int rc;

    if (profile == NULL)
        profile = "default";
    if (cred_file == NULL && home != NULL) {
        snprintf(p1, sizeof(p1), "%s/.aws/credentials", home);
        cred_file = p1;
    }
    if (conf_file == NULL && home != NULL) {
        snprintf(p2, sizeof(p2), "%s/.aws/config", home);
        conf_file = p2;
    }
    rc = cred_file != NULL ? tlr_aws_profile_load(cred_file, profile, 0, out) : TLR_E_NOTFOUND;
    if (rc == TLR_E_NOTFOUND && conf_file != NULL)
        rc = tlr_aws_profile_load(conf_file, profile, 1, out);
    if (rc != TLR_OK && rc != TLR_E_NOTFOUND)
        TLR_WARN(c->log, "aws shared credentials file unreadable", TLR_S("profile", profile),
                 TLR_ERR(rc));
    return rc;
}

int tlr_aws_sts_creds_parse(const tlr_xml_node *root, tlr_aws_credentials *out)
{
    const tlr_xml_node *cr = tlr_xml_find(root, "AssumeRoleWithWebIdentityResult/Credentials");
    const char *ak = tlr_xml_find_text(cr, "AccessKeyId");
    const char *sk = tlr_xml_find_text(cr, "SecretAccessKey");
    const char *st = tlr_xml_find_text(cr, "SessionToken");
    const char *exp = tlr_xml_find_text(cr, "Expiration");
    int64_t expires = 0;

    if (ak == NULL || sk == NULL || st == NULL || ak[0] == '\0' || sk[0] == '\0' ||
        (exp != NULL && tlr_time_parse(exp, &expires) != TLR_OK))
        return TLR_E_PARSE;
    memset(out, 0, sizeof(*out));
    out->access_key_id = tlr_strdup(ak);
    out->secret_access_key = tlr_strdup(sk);
    out->session_token = tlr_strdup(st);
    out->expires_ms = expires;
    snprintf(out->source, sizeof(out->source), "web-identity");
    return TLR_OK;
}

static int from_web_identity(tlr_aws_creds *c, tlr_aws_credentials *out)
{
    const char *role = env_nonempty("AWS_ROLE_ARN");
    const char *token_file = env_nonempty("AWS_WEB_IDENTITY_TOKEN_FILE");
    const char *session = env_nonempty("AWS_ROLE_SESSION_NAME");
    tlr_aws_query_opts qo = {
        .service = "sts", .version = "2011-06-15", .region = c->region, .creds = NULL,
        .log = c->log, .timeout_ms = c->http_timeout_ms > 0 ? c->http_timeout_ms : 5000,
        .max_attempts = 3, .max_response = CREDS_MAX_ANSWER,
    };
    tlr_aws_query *q = NULL;
    tlr_aws_params *p = NULL;
    tlr_xml_doc *doc = NULL;
    tlr_aws_error err = { 0 };
    char *token = NULL, sessbuf[64];
    int rc;

    if (role == NULL || token_file == NULL)
        return TLR_E_NOTFOUND;
    if ((rc = read_file(token_file, &token)) != TLR_OK) {
        TLR_WARN(c->log, "aws web identity token file unreadable", TLR_S("file", token_file),
                 TLR_ERR(rc));
        return rc == TLR_E_NOTFOUND ? TLR_E_IO : rc;
    }
    if (session == NULL) {
        snprintf(sessbuf, sizeof(sessbuf), "tailor-%lld", (long long)(c->clock.wall_ms(c->clock.arg) / 1000));
        session = sessbuf;
    }
    if ((rc = tlr_aws_query_create(&qo, &q)) != TLR_OK)
        goto out;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "RoleArn", role);
    tlr_aws_params_add(p, "RoleSessionName", session);
    tlr_aws_params_add(p, "WebIdentityToken", trim(token));
    rc = tlr_aws_query_call(q, "AssumeRoleWithWebIdentity", p, &doc, &err);
    if (rc != TLR_OK) {
        TLR_WARN(c->log, "sts AssumeRoleWithWebIdentity failed", TLR_S("role", role),
                 TLR_S("aws_code", err.code), TLR_S("aws_message", err.message), TLR_ERR(rc));
        goto out;
    }
    if ((rc = tlr_aws_sts_creds_parse(tlr_xml_root(doc), out)) != TLR_OK) {
        TLR_WARN(c->log, "sts AssumeRoleWithWebIdentity answer lacks credentials",
                 TLR_S("role", role));
        goto out;
    }
out:
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    tlr_aws_query_free(q);
    wipe_free(token);
    return rc;
}

/* --- IMDSv2 ---------------------------------------------------------- */

static size_t imds_sink(char *ptr, size_t size, size_t nmemb, void *ud)
{
    return tlr_buf_add(ud, ptr, size * nmemb) == TLR_OK ? size * nmemb : 0;
}

/* One IMDS request; *body (owned) on a 200. */
static int imds_do(CURL *h, const char *url, bool put, const char *token, int timeout_ms,
                   char **body)
{
    struct curl_slist *hl = NULL;
    char hdr[1200];
    tlr_buf b;
    long status = 0;
    CURLcode cc;
    int rc = TLR_OK;

    tlr_buf_init(&b, CREDS_MAX_ANSWER);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, imds_sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (put) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        hl = curl_slist_append(hl, "X-aws-ec2-metadata-token-ttl-seconds: 21600");
    } else {
        snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s", token);
        hl = curl_slist_append(hl, hdr);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    cc = curl_easy_perform(h);
    if (cc != CURLE_OK)
        rc = cc == CURLE_OPERATION_TIMEDOUT ? TLR_E_TIMEOUT : TLR_E_IO;
    else if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status), status == 404)
        rc = TLR_E_NOTFOUND;
    else if (status == 401 || status == 403)
        rc = TLR_E_AUTH;
    else if (status != 200)
        rc = TLR_E_IO;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    OPENSSL_cleanse(hdr, sizeof(hdr));
    if (rc == TLR_OK)
        *body = tlr_buf_take(&b);
    tlr_buf_free(&b);
    return rc;
}

int tlr_aws_imds_creds_parse(const char *doc, size_t len, tlr_aws_credentials *out,
                             char *code_out, size_t code_len)
{
    json_object *j = NULL;
    int64_t expires = 0;
    int rc;

    if (code_out != NULL && code_len > 0)
        code_out[0] = '\0';
    if ((rc = tlr_json_parse(doc, len, CREDS_MAX_ANSWER, &j, NULL, 0)) != TLR_OK)
        return rc;
    const char *code = tlr_json_str(j, "Code");
    const char *ak = tlr_json_str(j, "AccessKeyId");
    const char *sk = tlr_json_str(j, "SecretAccessKey");
    const char *st = tlr_json_str(j, "Token");
    const char *exp = tlr_json_str(j, "Expiration");
    if (code != NULL && code_out != NULL && code_len > 0)
        snprintf(code_out, code_len, "%s", code);
    if ((code != NULL && strcmp(code, "Success") != 0) || ak == NULL || sk == NULL ||
        (exp != NULL && tlr_time_parse(exp, &expires) != TLR_OK)) {
        rc = TLR_E_INVAL;
        goto out;
    }
    memset(out, 0, sizeof(*out));
    out->access_key_id = tlr_strdup(ak);
    out->secret_access_key = tlr_strdup(sk);
    out->session_token = tlr_strdup(st);
    out->expires_ms = expires;
    snprintf(out->source, sizeof(out->source), "imds");
out:
    /* json-c's copies of the strings held the secret too; the caller wipes doc. */
    json_object_put(j);
    return rc;
}

static int from_imds(tlr_aws_creds *c, tlr_aws_credentials *out)
{
    const char *disabled = env_nonempty("AWS_EC2_METADATA_DISABLED");
    const char *base = env_nonempty("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    int timeout = c->http_timeout_ms > 0 ? c->http_timeout_ms : 1000;
    char url[1024], root[900];
    char *token = NULL, *role = NULL, *doc = NULL, *nl;
    CURL *h;
    int rc;

    if (disabled != NULL && strcasecmp(disabled, "true") == 0)
        return TLR_E_NOTFOUND;
    snprintf(root, sizeof(root), "%s", base != NULL ? base : "http://169.254.169.254");
    if (root[0] != '\0' && root[strlen(root) - 1] == '/')
        root[strlen(root) - 1] = '\0';
    h = curl_easy_init();
    if (h == NULL)
        abort();
    snprintf(url, sizeof(url), "%s/latest/api/token", root);
    if ((rc = imds_do(h, url, true, NULL, timeout, &token)) != TLR_OK)
        goto out;
    trim(token);
    snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/", root);
    if ((rc = imds_do(h, url, false, token, timeout, &role)) != TLR_OK)
        goto out;
    if ((nl = strchr(role, '\n')) != NULL)
        *nl = '\0';
    trim(role);
    if (role[0] == '\0' || strchr(role, '/') != NULL || strlen(role) > 128) {
        rc = TLR_E_NOTFOUND;
        goto out;
    }
    snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/%s", root, role);
    if ((rc = imds_do(h, url, false, token, timeout, &doc)) != TLR_OK)
        goto out;
    char code[64];
    rc = tlr_aws_imds_creds_parse(doc, strlen(doc), out, code, sizeof(code));
    if (rc == TLR_E_INVAL) {
        TLR_WARN(c->log, "imds credentials answer unusable", TLR_S("role", role),
                 TLR_S("imds_code", code[0] ? code : NULL));
        rc = TLR_E_PARSE;
        goto out;
    } else if (rc != TLR_OK) {
        TLR_WARN(c->log, "imds credentials answer malformed", TLR_S("role", role));
        goto out;
    }
out:
    wipe_free(doc);
    wipe_free(token);
    free(role);
    curl_easy_cleanup(h);
    return rc;
}

/* --- the chain ------------------------------------------------------- */

static int creds_resolve(tlr_aws_creds *c, tlr_aws_credentials *out)
{
    int rc, last = TLR_E_NOTFOUND;

    if ((rc = from_env(out)) != TLR_E_NOTFOUND)
        return rc;
    if ((rc = from_profile(c, out)) == TLR_OK)
        return rc;
    if ((rc = from_web_identity(c, out)) != TLR_E_NOTFOUND)
        return rc;   /* configured but failing: do not fall through to IMDS */
    if ((rc = from_imds(c, out)) == TLR_OK)
        return rc;
    /* IMDS unreachable just means "not on EC2". */
    if (rc != TLR_E_IO && rc != TLR_E_TIMEOUT)
        last = rc;
    return last;
}

int tlr_aws_creds_get(tlr_aws_creds *c, tlr_aws_credentials *out)
{
    tlr_aws_credentials fresh = { 0 };
    int64_t now;
    int rc = TLR_OK;

    if (c == NULL || out == NULL)
        return TLR_E_INVAL;
    pthread_mutex_lock(&c->mu);
    now = c->clock.wall_ms(c->clock.arg);
    if (c->cached.access_key_id != NULL &&
        (c->is_static || c->cached.expires_ms == 0 ||
         now < c->cached.expires_ms - c->refresh_before_ms)) {
        tlr_aws_credentials_copy(&c->cached, out);
        goto out;
    }
    rc = creds_resolve(c, &fresh);
    if (rc == TLR_OK) {
        bool first = c->cached.access_key_id == NULL;

        tlr_aws_credentials_clear(&c->cached);
        c->cached = fresh;
        if (first)
            TLR_INFO(c->log, "aws credentials resolved", TLR_S("source", c->cached.source),
                     TLR_S("access_key_id", c->cached.access_key_id),
                     TLR_SECRET("secret_access_key"), TLR_I("expires_ms", c->cached.expires_ms));
        tlr_aws_credentials_copy(&c->cached, out);
    } else if (c->cached.access_key_id != NULL && now < c->cached.expires_ms) {
        TLR_WARN(c->log, "aws credentials refresh failed; using the current ones until expiry",
                 TLR_S("source", c->cached.source), TLR_I("expires_ms", c->cached.expires_ms),
                 TLR_ERR(rc));
        tlr_aws_credentials_copy(&c->cached, out);
        rc = TLR_OK;
    } else {
        TLR_WARN(c->log, "no aws credentials", TLR_ERR(rc));
    }
out:
    pthread_mutex_unlock(&c->mu);
    return rc;
}
