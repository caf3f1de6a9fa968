/* config.c - where the API server is and how to authenticate to it.
 *
 * A kubeconfig names clusters, users and contexts; a context joins one
 * cluster with one user (and a namespace).  We resolve exactly one context
 * into a flat tlr_kube_config, the way client-go's clientcmd does for the
 * fields tailor supports: file paths are made absolute against the
 * kubeconfig's directory, *-data fields are base64-decoded, an `exec`
 * plugin is kept as a command to run later (the client runs it and caches
 * the token until it expires).  In-cluster configuration is the service
 * account mounted into every pod; its token is only located here, the
 * client reads it (and re-reads it when kubelet rotates the file).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "tlr_alloc.h"
#include "tlr_base64.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"
#include "tlr_time.h"
#include "tlr_yaml.h"

#define KC_MAX_FILE (16u << 20)   /* a kubeconfig over 16 MiB is not one */

static int seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

void tlr_kube_config_free(tlr_kube_config *c)
{
    if (c == NULL)
        return;
    free(c->server);
    free(c->ca_file);
    free(c->ca_data);
    free(c->cert_file);
    free(c->cert_data);
    free(c->key_file);
    if (c->key_data != NULL)
        OPENSSL_cleanse(c->key_data, c->key_len);
    free(c->key_data);
    if (c->token != NULL)
        OPENSSL_cleanse(c->token, strlen(c->token));
    free(c->token);
    free(c->token_file);
    free(c->username);
    if (c->password != NULL)
        OPENSSL_cleanse(c->password, strlen(c->password));
    free(c->password);
    if (c->exec != NULL) {
        free(c->exec->command);
        for (size_t i = 0; i < c->exec->nargs; i++)
            free(c->exec->args[i]);
        free(c->exec->args);
        for (size_t i = 0; i < c->exec->nenv; i++)
            free(c->exec->env[i]);
        free(c->exec->env);
        free(c->exec->api_version);
        free(c->exec);
    }
    free(c->namespace_);
    free(c->context);
    free(c);
}

/* The entry of the named list (clusters/users/contexts) whose name is
 * name, or NULL. */
static json_object *named(json_object *root, const char *list,
                          const char *name, const char *inner)
{
    json_object *arr = tlr_json_arr(root, list);
    if (arr == NULL)
        return NULL;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *n = tlr_json_str(e, "name");
        if (n != NULL && strcmp(n, name) == 0) {
            json_object *o = tlr_json_obj(e, inner);
            return o != NULL ? o : e;   /* no inner object: all fields absent */
        }
    }
    return NULL;
}

static char *abs_path(const char *base_dir, const char *p)
{
    if (p == NULL || p[0] == '\0')
        return NULL;
    if (p[0] == '/' || base_dir == NULL || base_dir[0] == '\0')
        return tlr_strdup(p);
    tlr_buf b;
    tlr_buf_init(&b, PATH_MAX * 2);
    if (tlr_buf_printf(&b, "%s/%s", base_dir, p) != TLR_OK) {
        tlr_buf_free(&b);
        return tlr_strdup(p);
    }
    return tlr_buf_take(&b);
}

/* A string field that must be a string when present. */
static int opt_str(json_object *o, const char *key, const char **out,
                   const char *what, char *err, size_t errlen)
{
    json_object *v = tlr_json_get(o, key);
    if (v == NULL) {
        *out = NULL;
        return TLR_OK;
    }
    if (!json_object_is_type(v, json_type_string))
        return seterr(err, errlen, TLR_E_PARSE, "%s.%s: string expected",
                      what, key);
    *out = json_object_get_string(v);
    return TLR_OK;
}

static int data_field(json_object *o, const char *key, const char *what,
                      char **data, size_t *len, char *err, size_t errlen)
{
    const char *s = NULL;   /* opt_str writes it only on success */
    int rc = opt_str(o, key, &s, what, err, errlen);
    if (rc != TLR_OK || s == NULL || s[0] == '\0')
        return rc;
    if (tlr_base64_decode(s, strlen(s), data, len) != TLR_OK)
        return seterr(err, errlen, TLR_E_INVAL, "%s.%s: bad base64", what, key);
    return TLR_OK;
}

static char *abs_path(const char *base_dir, const char *p);

/* A command with a '/' is relative to the kubeconfig (client-go's rule);
 * a bare name is looked up on PATH when it runs. */
static int parse_exec(json_object *ex, tlr_kube_exec **out, const char *what,
                      const char *base_dir, char *err, size_t errlen)
{
    const char *cmd = tlr_json_str(ex, "command");
    if (cmd == NULL || cmd[0] == '\0')
        return seterr(err, errlen, TLR_E_PARSE, "%s.exec.command: missing", what);
    tlr_kube_exec *e = tlr_calloc(1, sizeof(*e));
    e->command = strchr(cmd, '/') ? abs_path(base_dir, cmd) : tlr_strdup(cmd);
    e->api_version = tlr_strdup(tlr_json_str(ex, "apiVersion"));
    json_object *args = tlr_json_arr(ex, "args");
    if (args != NULL) {
        size_t n = json_object_array_length(args);
        e->args = tlr_calloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++) {
            json_object *a = json_object_array_get_idx(args, i);
            e->args[e->nargs++] = tlr_strdup(json_object_get_string(a));
        }
    }
    json_object *env = tlr_json_arr(ex, "env");
    if (env != NULL) {
        size_t n = json_object_array_length(env);
        e->env = tlr_calloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++) {
            json_object *v = json_object_array_get_idx(env, i);
            const char *name = tlr_json_str(v, "name");
            const char *val = tlr_json_str(v, "value");
            if (name == NULL)
                continue;
            tlr_buf b;
            tlr_buf_init(&b, 1u << 20);
            tlr_buf_printf(&b, "%s=%s", name, val ? val : "");
            e->env[e->nenv++] = tlr_buf_take(&b);
        }
    }
    *out = e;
    return TLR_OK;
}

/* Is server an http:// URL to a host other than this one's loopback
 * (localhost, 127.x.y.z, [::1])? */
static bool plain_http_remote(const char *server)
{
    if (strncmp(server, "http://", 7) != 0)
        return false;
    const char *h = server + 7;
    if (strncmp(h, "[::1]", 5) == 0)
        return !(h[5] == '\0' || h[5] == ':' || h[5] == '/');
    size_t n = strcspn(h, ":/");
    if (n == 9 && strncmp(h, "localhost", 9) == 0)
        return false;
    if (n < 4 || strncmp(h, "127.", 4) != 0)
        return true;
    for (size_t k = 4; k < n; k++)
        if (!(h[k] == '.' || (h[k] >= '0' && h[k] <= '9')))
            return true;
    return false;
}

int tlr_kube_config_parse(const char *yaml, size_t len, const char *context,
                          const char *base_dir, tlr_kube_config **out,
                          char *err, size_t errlen)
{
    json_object *docs = NULL;
    tlr_kube_config *c = NULL;
    char yerr[256];
    int rc;

    if (yaml == NULL || out == NULL)
        return TLR_E_INVAL;
    rc = tlr_yaml_parse(yaml, len, NULL, &docs, yerr, sizeof(yerr));
    if (rc != TLR_OK) {
        seterr(err, errlen, rc, "kubeconfig: %s", yerr);
        goto out;
    }
    json_object *root = json_object_array_length(docs) > 0
                            ? json_object_array_get_idx(docs, 0) : NULL;
    if (root == NULL || !json_object_is_type(root, json_type_object)) {
        rc = seterr(err, errlen, TLR_E_PARSE, "kubeconfig: not a mapping");
        goto out;
    }
    if (context == NULL || context[0] == '\0')
        context = tlr_json_str(root, "current-context");
    if (context == NULL || context[0] == '\0') {
        rc = seterr(err, errlen, TLR_E_NOTFOUND,
                    "kubeconfig: no current-context and none given");
        goto out;
    }
    json_object *ctx = named(root, "contexts", context, "context");
    if (ctx == NULL) {
        rc = seterr(err, errlen, TLR_E_NOTFOUND, "kubeconfig: context %s not found",
                    context);
        goto out;
    }
    const char *cname = tlr_json_str(ctx, "cluster");
    const char *uname = tlr_json_str(ctx, "user");
    json_object *cl = cname ? named(root, "clusters", cname, "cluster") : NULL;
    if (cl == NULL) {
        rc = seterr(err, errlen, TLR_E_NOTFOUND,
                    "kubeconfig: cluster %s of context %s not found",
                    cname ? cname : "(none)", context);
        goto out;
    }
    json_object *us = NULL;
    if (uname != NULL && uname[0] != '\0') {
        us = named(root, "users", uname, "user");
        if (us == NULL) {
            rc = seterr(err, errlen, TLR_E_NOTFOUND,
                        "kubeconfig: user %s of context %s not found", uname,
                        context);
            goto out;
        }
    }

    c = tlr_calloc(1, sizeof(*c));
    c->context = tlr_strdup(context);
    const char *s = NULL;   /* opt_str writes it only on success */
    if ((rc = opt_str(cl, "server", &s, "cluster", err, errlen)) != TLR_OK)
        goto out;
    if (s == NULL || s[0] == '\0') {
        rc = seterr(err, errlen, TLR_E_INVAL, "kubeconfig: cluster %s has no server",
                    cname);
        goto out;
    }
    c->server = tlr_strdup(s);
    size_t sl = strlen(c->server);
    while (sl > 0 && c->server[sl - 1] == '/')
        c->server[--sl] = '\0';
    if ((rc = opt_str(cl, "certificate-authority", &s, "cluster", err, errlen)))
        goto out;
    c->ca_file = abs_path(base_dir, s);
    if ((rc = data_field(cl, "certificate-authority-data", "cluster", &c->ca_data,
                         &c->ca_len, err, errlen)))
        goto out;
    bool b;
    if (tlr_json_bool(cl, "insecure-skip-tls-verify", &b) == TLR_OK)
        c->insecure = b;
    if (c->insecure && (c->ca_file != NULL || c->ca_data != NULL)) {
        /* client-go refuses the pair too: one would silently win. */
        rc = seterr(err, errlen, TLR_E_INVAL,
                    "kubeconfig: cluster %s: insecure-skip-tls-verify with a certificate "
                    "authority: specifying a root certificates file with the insecure flag is "
                    "not allowed", cname);
        goto out;
    }
    s = tlr_json_str(ctx, "namespace");
    c->namespace_ = tlr_strdup(s != NULL && s[0] ? s : NULL);

    if (us != NULL) {
        if ((rc = opt_str(us, "token", &s, "user", err, errlen)))
            goto out;
        c->token = tlr_strdup(s != NULL && s[0] ? s : NULL);
        if ((rc = opt_str(us, "tokenFile", &s, "user", err, errlen)))
            goto out;
        c->token_file = abs_path(base_dir, s);
        if ((rc = opt_str(us, "client-certificate", &s, "user", err, errlen)))
            goto out;
        c->cert_file = abs_path(base_dir, s);
        if ((rc = opt_str(us, "client-key", &s, "user", err, errlen)))
            goto out;
        c->key_file = abs_path(base_dir, s);
        if ((rc = data_field(us, "client-certificate-data", "user", &c->cert_data,
                             &c->cert_len, err, errlen)))
            goto out;
        if ((rc = data_field(us, "client-key-data", "user", &c->key_data,
                             &c->key_len, err, errlen)))
            goto out;
        if ((rc = opt_str(us, "username", &s, "user", err, errlen)))
            goto out;
        c->username = tlr_strdup(s);
        if ((rc = opt_str(us, "password", &s, "user", err, errlen)))
            goto out;
        c->password = tlr_strdup(s);
        json_object *ex = tlr_json_obj(us, "exec");
        if (ex != NULL && (rc = parse_exec(ex, &c->exec, "user", base_dir, err, errlen)))
            goto out;
    }
    if ((c->token || c->token_file || c->password || c->exec) && plain_http_remote(c->server)) {
        rc = seterr(err, errlen, TLR_E_INVAL,
                    "kubeconfig: cluster %s: server %s is plain http and not this host: the "
                    "user's credentials would cross the network unencrypted", cname, c->server);
        goto out;
    }
    *out = c;
    c = NULL;
    rc = TLR_OK;
out:
    tlr_kube_config_free(c);
    json_object_put(docs);
    return rc;
}

static int read_file(const char *path, size_t max, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return errno == ENOENT ? TLR_E_NOTFOUND : TLR_E_IO;
    tlr_buf b;
    tlr_buf_init(&b, max);
    char chunk[8192];
    size_t n;
    int rc = TLR_OK;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if ((rc = tlr_buf_add(&b, chunk, n)) != TLR_OK)
            break;
    if (rc == TLR_OK && ferror(f))
        rc = TLR_E_IO;
    fclose(f);
    if (rc != TLR_OK) {
        tlr_buf_free(&b);
        return rc;
    }
    *len = b.len;
    *data = tlr_buf_take(&b);
    return TLR_OK;
}

int tlr_kube_config_load(const char *path, const char *context,
                         tlr_kube_config **out, char *err, size_t errlen)
{
    char *owned = NULL, *data = NULL, *dir = NULL;
    size_t len;
    int rc;

    if (path == NULL || path[0] == '\0') {
        const char *env = getenv("KUBECONFIG");
        if (env != NULL && env[0] != '\0') {
            const char *colon = strchr(env, ':');
            owned = colon ? tlr_strndup(env, (size_t)(colon - env)) : tlr_strdup(env);
        } else {
            const char *home = getenv("HOME");
            tlr_buf b;
            tlr_buf_init(&b, PATH_MAX);
            tlr_buf_printf(&b, "%s/.kube/config", home ? home : "");
            owned = tlr_buf_take(&b);
        }
        path = owned;
    }
    rc = read_file(path, KC_MAX_FILE, &data, &len);
    if (rc != TLR_OK) {
        seterr(err, errlen, rc, "kubeconfig %s: %s", path, tlr_strerror(rc));
        goto out;
    }
    dir = tlr_strdup(path);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    else {
        free(dir);
        dir = NULL;
    }
    rc = tlr_kube_config_parse(data, len, context, dir, out, err, errlen);
out:
    free(owned);
    free(data);
    free(dir);
    return rc;
}

int tlr_kube_config_incluster(const tlr_kube_incluster_opts *o,
                              tlr_kube_config **out, char *err, size_t errlen)
{
    const char *host = o && o->host ? o->host : getenv("KUBERNETES_SERVICE_HOST");
    const char *port = o && o->port ? o->port : getenv("KUBERNETES_SERVICE_PORT");
    const char *dir = o && o->sa_dir ? o->sa_dir
                                     : "/var/run/secrets/kubernetes.io/serviceaccount";
    if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
        return seterr(err, errlen, TLR_E_NOTFOUND,
                      "in-cluster: KUBERNETES_SERVICE_HOST/PORT not set");
    tlr_kube_config *c = tlr_calloc(1, sizeof(*c));
    tlr_buf b;
    tlr_buf_init(&b, PATH_MAX * 2);
    /* An IPv6 service address needs brackets in a URL. */
    if (strchr(host, ':') != NULL && host[0] != '[')
        tlr_buf_printf(&b, "https://[%s]:%s", host, port);
    else
        tlr_buf_printf(&b, "https://%s:%s", host, port);
    c->server = tlr_buf_take(&b);
    tlr_buf_printf(&b, "%s/token", dir);
    c->token_file = tlr_buf_take(&b);
    tlr_buf_printf(&b, "%s/ca.crt", dir);
    c->ca_file = tlr_buf_take(&b);
    tlr_buf_printf(&b, "%s/namespace", dir);
    char *nspath = tlr_buf_take(&b);
    c->in_cluster = true;
    struct stat st;
    if (stat(c->token_file, &st) != 0) {
        int rc = seterr(err, errlen, TLR_E_NOTFOUND, "in-cluster: no token at %s",
                        c->token_file);
        free(nspath);
        tlr_kube_config_free(c);
        return rc;
    }
    char *ns = NULL;
    size_t nslen;
    if (read_file(nspath, 4096, &ns, &nslen) == TLR_OK) {
        while (nslen > 0 && (ns[nslen - 1] == '\n' || ns[nslen - 1] == ' '))
            ns[--nslen] = '\0';
        if (nslen > 0)
            c->namespace_ = ns;
        else
            free(ns);
    }
    free(nspath);
    *out = c;
    return TLR_OK;
}

int tlr_kube_exec_credential_parse(const char *json, size_t len, char **token,
                                   int64_t *expiry_ms)
{
    json_object *o = NULL;
    int rc = tlr_json_parse(json, len, 1u << 20, &o, NULL, 0);
    if (rc != TLR_OK)
        return TLR_E_PARSE;
    const char *tok = tlr_json_str(o, "status.token");
    const char *exp = tlr_json_str(o, "status.expirationTimestamp");
    int64_t ms = 0;
    if (tok == NULL || tok[0] == '\0' ||
        (exp != NULL && exp[0] != '\0' && tlr_time_parse(exp, &ms) != TLR_OK)) {
        json_object_put(o);
        return TLR_E_PARSE;
    }
    *token = tlr_strdup(tok);
    *expiry_ms = ms;
    json_object_put(o);
    return TLR_OK;
}
