/* nodeagent.c - a node's boot agents, emulated: nodeadm (AL2023), AL2's
 * /etc/eks/bootstrap.sh and Bottlerocket's settings, from user data to
 * the configuration the kubelet starts with (see nodeagent.h).
 *
 * The rules are the real agents' (not their code):
 *   - user data that decodes as standard base64 is decoded first
 *     (nodeadm's decodeIfBase64: CR/LF ignored, padding required);
 *   - nodeadm: MIME multipart -> every application/node.eks.aws part is a
 *     NodeConfig (a part body that is base64 is decoded); otherwise the
 *     whole document is one NodeConfig.  apiVersion node.eks.aws/v1alpha1,
 *     kind NodeConfig.  Merged in order as mergo.WithOverride does:
 *     a non-empty later value replaces, maps merge key by key (the kubelet
 *     config deep), kubelet.flags append.  Validation as
 *     internal/api/validation.go: cluster name, apiServerEndpoint,
 *     certificateAuthority and cidr required.  Defaults as
 *     internal/kubelet/config.go: maxPods = the ENI figure; kubeReserved
 *     cpu by getCPUMillicoresToReserve, memory 11 * ENI pods + 255 Mi,
 *     ephemeral-storage 1Gi; evictionHard memory.available 100Mi,
 *     nodefs.available 10%, nodefs.inodesFree 5%.  The user's kubelet
 *     config is a drop-in over that; flags (--node-labels,
 *     --register-with-taints, --max-pods) win over both.
 *   - AL2: the /etc/eks/bootstrap.sh command line of the shell script (or
 *     of the MIME document's shell parts), VAR=value lines before it
 *     expanded; --kubelet-extra-args are kubelet flags, which replace the
 *     config's value of the same field (a flag map is the whole map).
 *   - Bottlerocket: settings.kubernetes in TOML; kube-reserved defaults
 *     per key, eviction-hard replaced as a whole when set.
 * A shell part is "run": the simulator records its first line and does
 * nothing else with it.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nodeagent.h"
#include "tlr_alloc.h"
#include "tlr_base64.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_mime.h"
#include "tlr_quantity.h"
#include "tlr_toml.h"
#include "tlr_yaml.h"

#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)
#define DEFAULT_PODS 110
#define NODECONFIG_TYPE "application/node.eks.aws"
#define NODECONFIG_API "node.eks.aws/v1alpha1"

/* The state of one boot: the configuration being built and the reason. */
typedef struct boot {
    const ks_na_hw *hw;
    const ks_na_cluster *cl;
    ks_na_config *cfg;
    char *why;
    size_t whylen;
} boot;

static int refuse(boot *b, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (b->why != NULL && b->whylen > 0)
        vsnprintf(b->why, b->whylen, fmt, ap);
    va_end(ap);
    return rc;
}

const char *ks_na_agent_name(ks_na_agent a)
{
    switch (a) {
    case KS_NA_NODEADM: return "nodeadm";
    case KS_NA_AL2: return "al2-bootstrap.sh";
    case KS_NA_BOTTLEROCKET: return "bottlerocket";
    default: return "none";
    }
}

void ks_na_config_free(ks_na_config *c)
{
    if (c == NULL)
        return;
    json_object_put(c->labels);
    json_object_put(c->taints);
    json_object_put(c->kube_reserved);
    json_object_put(c->system_reserved);
    json_object_put(c->eviction_hard);
    for (size_t i = 0; i < c->nran; i++)
        free(c->ran[i]);
    free(c->ran);
    memset(c, 0, sizeof(*c));
}

static void ran(ks_na_config *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tlr_strv_vaddf(&c->ran, &c->nran, fmt, ap);
    va_end(ap);
}

/* The first line of a script after its "#!" line, for the ran list. */
static void ran_script(ks_na_config *c, const char *what, const char *body, size_t len)
{
    size_t n = 0;

    if (len >= 2 && body[0] == '#' && body[1] == '!') {
        const char *nl = memchr(body, '\n', len);
        if (nl != NULL) {
            len -= (size_t)(nl + 1 - body);
            body = nl + 1;
        }
    }

    while (n < len && body[n] != '\n' && body[n] != '\r' && n < 120)
        n++;
    ran(c, "%s: %.*s", what, (int)n, body);
}

/* --- small text helpers ------------------------------------------------ */

static bool icontains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);

    for (; hay != NULL && *hay != '\0'; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}

static bool mem_contains(const char *d, size_t n, const char *needle)
{
    size_t k = strlen(needle);

    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(d + i, needle, k) == 0)
            return true;
    return false;
}

/* Go's base64.StdEncoding.Decode: CR and LF are skipped, everything else
 * must be the alphabet in groups of four with "=" padding only at the end.
 * That is tlr_base64_decode, which also skips blanks and tabs, so those
 * are refused first.  On success *out is new (NUL-terminated, *outlen
 * bytes). */
static bool b64_decode(const char *in, size_t n, char **out, size_t *outlen)
{
    for (size_t i = 0; i < n; i++)
        if (in[i] == ' ' || in[i] == '\t')
            return false;
    return tlr_base64_decode(in, n, out, outlen) == TLR_OK;
}

/* nodeadm's decodeIfBase64: the decoded bytes when d is base64, else a
 * copy.  *out is new and NUL-terminated. */
static void decode_if_b64(const char *d, size_t n, char **out, size_t *outlen)
{
    if (n > 0 && b64_decode(d, n, out, outlen))
        return;
    *out = tlr_malloc(n + 1);
    memcpy(*out, d, n);
    (*out)[n] = '\0';
    *outlen = n;
}

/* --- joining this cluster ---------------------------------------------- */

/* scheme://host:port of an https/http URL, lowercased, default port
 * filled in, path "/" dropped.  false when it is not such a URL. */
static bool norm_endpoint(const char *url, char *out, size_t outlen)
{
    const char *p = strstr(url, "://"), *host, *end, *colon;
    char scheme[16];
    int port;

    if (p == NULL || p == url || (size_t)(p - url) >= sizeof(scheme))
        return false;
    for (size_t i = 0; i < (size_t)(p - url); i++)
        scheme[i] = (char)tolower((unsigned char)url[i]);
    scheme[p - url] = '\0';
    if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0)
        return false;
    host = p + 3;
    end = host + strcspn(host, "/?#");
    if (*end == '/' && end[1] != '\0')
        return false;   /* an API server URL with a path is not ours */
    colon = memchr(host, ':', (size_t)(end - host));
    if (host[0] == '[')   /* [v6]:port */
        colon = memchr(host, ']', (size_t)(end - host)) ? strchr(strchr(host, ']'), ':') : NULL;
    if (colon != NULL && colon < end) {
        port = atoi(colon + 1);
    } else {
        port = strcmp(scheme, "https") == 0 ? 443 : 80;
        colon = end;
    }
    if (colon == host || port <= 0 || port > 65535)
        return false;
    snprintf(out, outlen, "%s://%.*s:%d", scheme, (int)(colon - host), host, port);
    for (char *c = out + strlen(scheme) + 3; *c != '\0'; c++)
        *c = (char)tolower((unsigned char)*c);
    return true;
}

/* The base64 bodies of the CERTIFICATE blocks of pem, whitespace removed,
 * appended to a JSON array (the DER, compared as its canonical text). */
static void pem_bodies(const char *pem, json_object *arr)
{
    static const char begin[] = "-----BEGIN CERTIFICATE-----", end[] = "-----END CERTIFICATE-----";
    const char *p = pem;

    while (p != NULL && (p = strstr(p, begin)) != NULL) {
        const char *b = p + sizeof(begin) - 1, *e = strstr(b, end);
        char *body;
        size_t n = 0;

        if (e == NULL)
            return;
        body = tlr_malloc((size_t)(e - b) + 1);
        for (const char *c = b; c < e; c++)
            if (!isspace((unsigned char)*c))
                body[n++] = *c;
        body[n] = '\0';
        json_object_array_add(arr, json_object_new_string(body));
        free(body);
        p = e + sizeof(end) - 1;
    }
}

/* Does the CA bundle ca_b64 (base64 of PEM, as NodeConfig, bootstrap.sh
 * and Bottlerocket take it) hold this kubesim's CA certificate?  The
 * kubelet trusts every certificate of the bundle, so one match is enough. */
static int check_ca(boot *b, const char *field, const char *ca_b64)
{
    json_object *ours, *theirs;
    char *pem = NULL;
    size_t n;
    bool match = false;

    if (b->cl->ca_pem == NULL || b->cl->ca_pem[0] == '\0')
        return TLR_OK;
    if (!b64_decode(ca_b64, strlen(ca_b64), &pem, &n))
        return refuse(b, TLR_E_PARSE, "%s is not base64", field);
    ours = json_object_new_array();
    theirs = json_object_new_array();
    pem_bodies(b->cl->ca_pem, ours);
    pem_bodies(pem, theirs);
    for (size_t i = 0; i < json_object_array_length(theirs) && !match; i++)
        for (size_t j = 0; j < json_object_array_length(ours) && !match; j++)
            match = strcmp(json_object_get_string(json_object_array_get_idx(theirs, i)),
                           json_object_get_string(json_object_array_get_idx(ours, j))) == 0;
    n = json_object_array_length(theirs);
    json_object_put(ours);
    json_object_put(theirs);
    free(pem);
    if (n == 0)
        return refuse(b, TLR_E_PARSE, "%s holds no PEM certificate", field);
    if (!match)
        return refuse(b, TLR_E_AUTH, "%s is not this cluster's CA (TLS to the API server fails)",
                      field);
    return TLR_OK;
}

/* Cluster name, endpoint and CA against this kubesim's. */
static int check_identity(boot *b, const char *name, const char *endpoint, const char *ca_b64)
{
    char want[300], got[300];

    if (b->cl->name != NULL && strcmp(name, b->cl->name) != 0)
        return refuse(b, TLR_E_AUTH, "cluster name \"%s\" is not this cluster (\"%s\")", name,
                      b->cl->name);
    if (b->cl->endpoint != NULL && b->cl->endpoint[0] != '\0') {
        if (!norm_endpoint(endpoint, got, sizeof(got)))
            return refuse(b, TLR_E_PARSE, "API server endpoint \"%s\" is not an https URL",
                          endpoint);
        if (!norm_endpoint(b->cl->endpoint, want, sizeof(want)) || strcmp(got, want) != 0)
            return refuse(b, TLR_E_AUTH, "API server endpoint %s is not this cluster's (%s)",
                          endpoint, b->cl->endpoint);
    }
    return check_ca(b, "the cluster CA", ca_b64);
}

/* --- labels, taints, reservations -------------------------------------- */

static bool in_namespace(const char *domain, size_t n, const char *ns)
{
    size_t k = strlen(ns);

    return (n == k && strncmp(domain, ns, n) == 0) ||
           (n > k && domain[n - k - 1] == '.' && strncmp(domain + n - k, ns, k) == 0);
}

bool ks_nodeagent_label_allowed(const char *key)
{
    static const char *const exact[] = {
        "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os",
        "node.kubernetes.io/instance-type", "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone", NULL,
    };
    const char *slash = strchr(key, '/');
    size_t n;

    if (slash == NULL)
        return true;
    n = (size_t)(slash - key);
    if (!in_namespace(key, n, "kubernetes.io") && !in_namespace(key, n, "k8s.io"))
        return true;
    if (in_namespace(key, n, "node-restriction.kubernetes.io"))
        return false;
    for (size_t i = 0; exact[i] != NULL; i++)
        if (strcmp(key, exact[i]) == 0)
            return true;
    return (n == strlen("beta.kubernetes.io") && strncmp(key, "beta.kubernetes.io", n) == 0) ||
           (n == strlen("failure-domain.beta.kubernetes.io") &&
            strncmp(key, "failure-domain.beta.kubernetes.io", n) == 0) ||
           in_namespace(key, n, "kubelet.kubernetes.io") ||
           in_namespace(key, n, "node.kubernetes.io");
}

/* A label value or key name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?,
 * at most 63 characters (empty allowed for values). */
static bool label_word(const char *s, size_t n, bool empty_ok)
{
    if (n == 0)
        return empty_ok;
    if (n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

static int add_label(boot *b, const char *key, const char *value)
{
    const char *slash = strchr(key, '/');
    const char *name = slash ? slash + 1 : key;

    if ((slash != NULL && (slash == key || slash - key > 253)) ||
        !label_word(name, strlen(name), false) || !label_word(value, strlen(value), true))
        return refuse(b, TLR_E_INVAL, "node label %s=%s is not a valid label (the kubelet exits)",
                      key, value);
    if (!ks_nodeagent_label_allowed(key))
        return refuse(b, TLR_E_INVAL, "node label %s is refused by NodeRestriction (the kubelet "
                      "exits at start)", key);
    json_object_object_add(b->cfg->labels, key, json_object_new_string(value));
    return TLR_OK;
}

/* --node-labels: "a=b,c=d". */
static int add_label_list(boot *b, const char *list)
{
    char *copy = tlr_strdup(list), *save = NULL;
    int rc = TLR_OK;

    for (char *kv = strtok_r(copy, ",", &save); kv != NULL && rc == TLR_OK;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');

        if (eq == NULL) {
            rc = refuse(b, TLR_E_INVAL, "--node-labels entry \"%s\" has no '='", kv);
            break;
        }
        *eq = '\0';
        rc = add_label(b, kv, eq + 1);
    }
    free(copy);
    return rc;
}

static bool valid_effect(const char *e)
{
    return strcmp(e, "NoSchedule") == 0 || strcmp(e, "PreferNoSchedule") == 0 ||
           strcmp(e, "NoExecute") == 0;
}

static int add_taint(boot *b, const char *key, const char *value, const char *effect)
{
    json_object *t;

    if (key == NULL || key[0] == '\0' || effect == NULL || !valid_effect(effect))
        return refuse(b, TLR_E_INVAL, "taint %s=%s:%s is not valid (the kubelet exits)",
                      key ? key : "", value ? value : "", effect ? effect : "");
    t = json_object_new_object();
    json_object_object_add(t, "key", json_object_new_string(key));
    if (value != NULL && value[0] != '\0')
        json_object_object_add(t, "value", json_object_new_string(value));
    json_object_object_add(t, "effect", json_object_new_string(effect));
    json_object_array_add(b->cfg->taints, t);
    return TLR_OK;
}

/* --register-with-taints: "k=v:Effect,k2:Effect". */
static int add_taint_list(boot *b, const char *list)
{
    char *copy = tlr_strdup(list), *save = NULL;
    int rc = TLR_OK;

    for (char *s = strtok_r(copy, ",", &save); s != NULL && rc == TLR_OK;
         s = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(s, ':'), *eq;

        if (colon == NULL) {
            rc = refuse(b, TLR_E_INVAL, "taint \"%s\" has no effect", s);
            break;
        }
        *colon = '\0';
        eq = strchr(s, '=');
        if (eq != NULL)
            *eq = '\0';
        rc = add_taint(b, s, eq ? eq + 1 : "", colon + 1);
    }
    free(copy);
    return rc;
}

/* A scalar JSON value as a quantity string (YAML/TOML may give numbers). */
static bool scalar_text(json_object *v, char *out, size_t outlen)
{
    switch (json_object_get_type(v)) {
    case json_type_string:
        snprintf(out, outlen, "%s", json_object_get_string(v));
        return true;
    case json_type_int:
        snprintf(out, outlen, "%lld", (long long)json_object_get_int64(v));
        return true;
    case json_type_double:
        snprintf(out, outlen, "%g", json_object_get_double(v));
        return true;
    default:
        return false;
    }
}

/* Merge the map src (borrowed) into dst key by key; values as strings. */
static int merge_quantities(boot *b, const char *field, json_object *dst, json_object *src)
{
    if (!json_object_is_type(src, json_type_object))
        return refuse(b, TLR_E_PARSE, "%s is not a map", field);
    json_object_object_foreach(src, k, v) {
        char text[64];

        if (!scalar_text(v, text, sizeof(text)))
            return refuse(b, TLR_E_PARSE, "%s.%s is not a quantity", field, k);
        json_object_object_add(dst, k, json_object_new_string(text));
    }
    return TLR_OK;
}

/* "a=b,c=d" (kube-reserved) or "a<b,c<d" (eviction-hard) into a new map
 * that replaces *dst: a kubelet flag replaces the config's whole map. */
static int flag_map(boot *b, const char *flag, const char *list, char sep, json_object **dst)
{
    json_object *m = json_object_new_object();
    char *copy = tlr_strdup(list), *save = NULL;

    for (char *kv = strtok_r(copy, ",", &save); kv != NULL; kv = strtok_r(NULL, ",", &save)) {
        char *s = strchr(kv, sep);

        if (s == NULL) {
            free(copy);
            json_object_put(m);
            return refuse(b, TLR_E_PARSE, "%s entry \"%s\" has no '%c'", flag, kv, sep);
        }
        *s = '\0';
        json_object_object_add(m, kv, json_object_new_string(s + 1));
    }
    free(copy);
    json_object_put(*dst);
    *dst = m;
    return TLR_OK;
}

static int parse_pods(boot *b, const char *what, const char *s, int32_t *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (end == s || *end != '\0' || v < 0 || v > 100000)
        return refuse(b, TLR_E_PARSE, "%s \"%s\" is not a pod count", what, s);
    *out = (int32_t)v;
    return TLR_OK;
}

/* nodeadm's getCPUMillicoresToReserve: 6% of the first core, 1% of the
 * second, 0.5% of cores 3-4, 0.25% of the rest, in integer millicores. */
static int64_t cpu_reserve_m(int64_t vcpu)
{
    static const int64_t edge[] = { 0, 1000, 2000, 4000 }, pct[] = { 600, 100, 50, 25 };
    int64_t total = vcpu * 1000, r = 0;

    for (int i = 0; i < 4; i++) {
        int64_t hi = i < 3 ? edge[i + 1] : total;

        if (total <= edge[i])
            break;
        r += ((total < hi ? total : hi) - edge[i]) * pct[i] / 10000;
    }
    return r;
}

static int32_t eni_pods(const ks_na_hw *hw)
{
    return hw->eni_max_pods > 0 ? hw->eni_max_pods : DEFAULT_PODS;
}

/* The agent's defaults, before any user setting. */
static void set_defaults(boot *b, bool inodes)
{
    ks_na_config *c = b->cfg;
    char buf[32];

    c->labels = json_object_new_object();
    c->taints = json_object_new_array();
    c->max_pods = eni_pods(b->hw);
    c->kube_reserved = json_object_new_object();
    snprintf(buf, sizeof(buf), "%lldm", (long long)cpu_reserve_m(b->hw->vcpu));
    json_object_object_add(c->kube_reserved, "cpu", json_object_new_string(buf));
    json_object_object_add(c->kube_reserved, "ephemeral-storage", json_object_new_string("1Gi"));
    snprintf(buf, sizeof(buf), "%dMi", 11 * eni_pods(b->hw) + 255);
    json_object_object_add(c->kube_reserved, "memory", json_object_new_string(buf));
    c->system_reserved = json_object_new_object();
    c->eviction_hard = json_object_new_object();
    json_object_object_add(c->eviction_hard, "memory.available", json_object_new_string("100Mi"));
    json_object_object_add(c->eviction_hard, "nodefs.available", json_object_new_string("10%"));
    if (inodes)
        json_object_object_add(c->eviction_hard, "nodefs.inodesFree",
                               json_object_new_string("5%"));
}

/* One kubelet flag ("--name=value", or name and value apart). */
static int kubelet_flag(boot *b, const char *name, const char *value)
{
    ks_na_config *c = b->cfg;

    if (strcmp(name, "--node-labels") == 0)
        return add_label_list(b, value);
    if (strcmp(name, "--register-with-taints") == 0) {
        json_object_put(c->taints);   /* the flag replaces the config's list */
        c->taints = json_object_new_array();
        return add_taint_list(b, value);
    }
    if (strcmp(name, "--max-pods") == 0)
        return parse_pods(b, name, value, &c->max_pods);
    if (strcmp(name, "--pods-per-core") == 0)
        return parse_pods(b, name, value, &c->pods_per_core);
    if (strcmp(name, "--kube-reserved") == 0)
        return flag_map(b, name, value, '=', &c->kube_reserved);
    if (strcmp(name, "--system-reserved") == 0)
        return flag_map(b, name, value, '=', &c->system_reserved);
    if (strcmp(name, "--eviction-hard") == 0)
        return flag_map(b, name, value, '<', &c->eviction_hard);
    return TLR_OK;   /* other flags do not shape the Node */
}

/* Flags given as a list of words: "--a=b" or "--a" "b". */
static int kubelet_flags(boot *b, json_object *words)
{
    size_t n = json_object_array_length(words);

    for (size_t i = 0; i < n; i++) {
        const char *w = json_object_get_string(json_object_array_get_idx(words, i));
        const char *eq = strchr(w, '=');
        char name[64];
        int rc;

        if (strncmp(w, "--", 2) != 0)
            continue;
        if (eq != NULL) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - w), w);
            rc = kubelet_flag(b, name, eq + 1);
        } else if (i + 1 < n) {
            rc = kubelet_flag(b, w, json_object_get_string(json_object_array_get_idx(words, ++i)));
        } else {
            rc = TLR_OK;
        }
        if (rc != TLR_OK)
            return rc;
    }
    return TLR_OK;
}

/* --- shell words (AL2 scripts, kubelet-extra-args) ---------------------- */

static bool var_char(char c, bool first)
{
    return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

/* Append $NAME / ${NAME} at *pp (just after '$') expanded from vars. */
static void expand_var(const char **pp, json_object *vars, char **w, size_t *wl, size_t *wc)
{
    const char *p = *pp, *start;
    bool brace = *p == '{';
    const char *val;
    char name[128];

    if (brace)
        p++;
    start = p;
    while (var_char(*p, p == start))
        p++;
    snprintf(name, sizeof(name), "%.*s", (int)(p - start), start);
    if (brace && *p == '}')
        p++;
    val = vars != NULL ? tlr_json_str(vars, name) : NULL;
    if (p == start && !brace)   /* a lone '$' */
        val = "$";
    for (; val != NULL && *val != '\0'; val++) {
        TLR_GROW(*w, *wc, *wl + 2);
        (*w)[(*wl)++] = *val;
    }
    *pp = p;
}

/* Split one logical line into commands of words, as sh does for the
 * simple cases user data uses: '...' literal, "..." with \ escapes and
 * $VAR, $VAR outside quotes (not word-split), backslash escapes; a '#'
 * starting a word ends the line; ';', '&', '|' end a command.  Returns a
 * JSON array of arrays of strings (new). */
static json_object *shell_words(const char *line, json_object *vars)
{
    json_object *cmds = json_object_new_array(), *cur = json_object_new_array();
    const char *p = line;
    char *w = NULL;
    size_t wl = 0, wc = 0;
    bool inword = false;

#define PUT(ch) do { TLR_GROW(w, wc, wl + 2); w[wl++] = (ch); inword = true; } while (0)
#define END_WORD() do { if (inword) { w[wl] = '\0'; \
        json_object_array_add(cur, json_object_new_string(w)); } wl = 0; inword = false; } while (0)
    TLR_GROW(w, wc, 16);
    while (*p != '\0') {
        char c = *p;

        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            END_WORD();
            p++;
        } else if (c == '#' && !inword) {
            break;
        } else if (c == ';' || c == '&' || c == '|') {
            END_WORD();
            if (json_object_array_length(cur) > 0) {
                json_object_array_add(cmds, cur);
                cur = json_object_new_array();
            }
            p++;
        } else if (c == '\'') {
            inword = true;
            for (p++; *p != '\0' && *p != '\''; p++)
                PUT(*p);
            if (*p == '\'')
                p++;
        } else if (c == '"') {
            inword = true;
            for (p++; *p != '\0' && *p != '"';) {
                if (*p == '\\' && (p[1] == '"' || p[1] == '\\' || p[1] == '$' || p[1] == '`')) {
                    PUT(p[1]);
                    p += 2;
                } else if (*p == '$') {
                    p++;
                    expand_var(&p, vars, &w, &wl, &wc);
                } else {
                    PUT(*p);
                    p++;
                }
            }
            if (*p == '"')
                p++;
        } else if (c == '\\' && p[1] != '\0') {
            PUT(p[1]);
            p += 2;
        } else if (c == '$') {
            inword = true;
            p++;
            expand_var(&p, vars, &w, &wl, &wc);
        } else {
            PUT(c);
            p++;
        }
    }
    END_WORD();
#undef PUT
#undef END_WORD
    if (json_object_array_length(cur) > 0)
        json_object_array_add(cmds, cur);
    else
        json_object_put(cur);
    free(w);
    return cmds;
}

/* A script's logical lines: backslash-newline joins lines.  New array. */
static json_object *script_lines(const char *s, size_t n)
{
    json_object *lines = json_object_new_array();
    char *buf = tlr_malloc(n + 1);
    size_t bl = 0;

    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
            i++;
            continue;
        }
        if (i < n && s[i] == '\\' && i + 2 < n && s[i + 1] == '\r' && s[i + 2] == '\n') {
            i += 2;
            continue;
        }
        if (i == n || s[i] == '\n') {
            buf[bl] = '\0';
            json_object_array_add(lines, json_object_new_string(buf));
            bl = 0;
            continue;
        }
        buf[bl++] = s[i];
    }
    free(buf);
    return lines;
}

/* NAME=value */
static bool assignment(const char *w, char *name, size_t namelen, const char **value)
{
    const char *eq = strchr(w, '=');

    if (eq == NULL || eq == w || (size_t)(eq - w) >= namelen)
        return false;
    for (const char *c = w; c < eq; c++)
        if (!var_char(*c, c == w))
            return false;
    snprintf(name, namelen, "%.*s", (int)(eq - w), w);
    *value = eq + 1;
    return true;
}

/* --- AL2: /etc/eks/bootstrap.sh ----------------------------------------- */

static bool is_bootstrap_sh(const char *w)
{
    size_t n = strlen(w), k = strlen("/etc/eks/bootstrap.sh");

    return n >= k && strcmp(w + n - k, "/etc/eks/bootstrap.sh") == 0;
}

/* Find the bootstrap.sh command in the script; on success *args is a new
 * array of the words after it.  vars carries assignments across scripts. */
static bool find_bootstrap(const char *s, size_t n, json_object *vars, json_object **args)
{
    json_object *lines = script_lines(s, n);
    bool found = false;

    for (size_t i = 0; i < json_object_array_length(lines) && !found; i++) {
        json_object *cmds = shell_words(json_object_get_string(
                                            json_object_array_get_idx(lines, i)), vars);

        for (size_t c = 0; c < json_object_array_length(cmds) && !found; c++) {
            json_object *cmd = json_object_array_get_idx(cmds, c);
            size_t nw = json_object_array_length(cmd), at = 0;
            char name[128];
            const char *val;

            /* Leading assignments: VAR=x cmd..., or a line of only them. */
            while (at < nw && assignment(json_object_get_string(json_object_array_get_idx(cmd, at)),
                                         name, sizeof(name), &val)) {
                json_object_object_add(vars, name, json_object_new_string(val));
                at++;
            }
            if (at < nw && strcmp(json_object_get_string(json_object_array_get_idx(cmd, at)),
                                  "export") == 0) {
                for (at++; at < nw; at++)
                    if (assignment(json_object_get_string(json_object_array_get_idx(cmd, at)),
                                   name, sizeof(name), &val))
                        json_object_object_add(vars, name, json_object_new_string(val));
                continue;
            }
            for (; at < nw; at++)
                if (is_bootstrap_sh(json_object_get_string(json_object_array_get_idx(cmd, at))))
                    break;
            if (at < nw) {
                *args = json_object_new_array();
                for (size_t k = at + 1; k < nw; k++)
                    json_object_array_add(*args, json_object_get(json_object_array_get_idx(cmd, k)));
                found = true;
            }
        }
        json_object_put(cmds);
    }
    json_object_put(lines);
    return found;
}

static int run_bootstrap_sh(boot *b, json_object *args)
{
    const char *cluster = NULL, *endpoint = NULL, *ca = NULL, *extra = NULL;
    bool use_max_pods = true;
    size_t n = json_object_array_length(args);
    int rc;

    for (size_t i = 0; i < n; i++) {
        const char *w = json_object_get_string(json_object_array_get_idx(args, i));
        const char *eq = strchr(w, '='), *val;
        char name[64];

        if (strncmp(w, "--", 2) != 0) {
            if (cluster == NULL)
                cluster = w;
            continue;
        }
        if (eq != NULL) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - w), w);
            val = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", w);
            if (i + 1 >= n)
                return refuse(b, TLR_E_PARSE, "bootstrap.sh: %s needs a value", w);
            val = json_object_get_string(json_object_array_get_idx(args, ++i));
        }
        if (strcmp(name, "--apiserver-endpoint") == 0)
            endpoint = val;
        else if (strcmp(name, "--b64-cluster-ca") == 0)
            ca = val;
        else if (strcmp(name, "--use-max-pods") == 0)
            use_max_pods = strcmp(val, "false") != 0;
        else if (strcmp(name, "--local-disks") == 0)
            b->cfg->raid0 = strcmp(val, "raid0") == 0;
        else if (strcmp(name, "--kubelet-extra-args") == 0)
            extra = val;
    }
    if (cluster == NULL || cluster[0] == '\0')
        return refuse(b, TLR_E_INVAL, "bootstrap.sh: no cluster name");
    if (endpoint == NULL || ca == NULL)
        return refuse(b, TLR_E_UNIMPLEMENTED, "bootstrap.sh without --apiserver-endpoint and "
                      "--b64-cluster-ca asks EKS DescribeCluster (not simulated)");
    if ((rc = check_identity(b, cluster, endpoint, ca)) != TLR_OK)
        return rc;
    /* bootstrap.sh writes maxPods from the ENI table unless told not to;
     * then the kubelet's own default, 110.  kubeReserved memory always
     * follows the ENI figure. */
    b->cfg->max_pods = use_max_pods ? eni_pods(b->hw) : DEFAULT_PODS;
    if (extra != NULL) {
        json_object *cmds = shell_words(extra, NULL);

        for (size_t i = 0; i < json_object_array_length(cmds) && rc == TLR_OK; i++)
            rc = kubelet_flags(b, json_object_array_get_idx(cmds, i));
        json_object_put(cmds);
        if (rc != TLR_OK)
            return rc;
    }
    ran(b->cfg, "bootstrap.sh %s", cluster);
    return TLR_OK;
}

static bool is_script_part(const tlr_mime_part *p)
{
    char mt[128];

    tlr_mime_media_type(p->content_type, mt, sizeof(mt));
    return strcmp(mt, "text/x-shellscript") == 0 || (p->len > 1 && p->body[0] == '#' &&
                                                      p->body[1] == '!');
}

static int run_al2(boot *b, const char *d, size_t n)
{
    json_object *vars = json_object_new_object(), *args = NULL;
    char err[200];
    int rc = TLR_OK;

    if (tlr_mime_looks_like(d, n)) {
        tlr_mime_doc doc = { 0 };

        if (tlr_mime_parse(d, n, &doc, err, sizeof(err)) != TLR_OK) {
            json_object_put(vars);
            return refuse(b, TLR_E_PARSE, "malformed MIME user data: %s", err);
        }
        for (size_t i = 0; i < doc.n; i++) {
            if (!is_script_part(&doc.parts[i]))
                continue;
            ran_script(b->cfg, "shell", doc.parts[i].body, doc.parts[i].len);
            if (args == NULL)
                find_bootstrap(doc.parts[i].body, doc.parts[i].len, vars, &args);
        }
        tlr_mime_doc_free(&doc);
    } else {
        ran_script(b->cfg, "shell", d, n);
        find_bootstrap(d, n, vars, &args);
    }
    if (args == NULL)
        rc = refuse(b, TLR_E_NOTFOUND, "no bootstrap in user data (no /etc/eks/bootstrap.sh "
                    "command in its shell script)");
    else
        rc = run_bootstrap_sh(b, args);
    json_object_put(args);
    json_object_put(vars);
    return rc;
}

/* --- nodeadm ------------------------------------------------------------- */

static bool is_empty(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return true;
    case json_type_string: return json_object_get_string_len(v) == 0;
    case json_type_int: return json_object_get_int64(v) == 0;
    case json_type_double: return json_object_get_double(v) == 0;
    case json_type_boolean: return !json_object_get_boolean(v);
    case json_type_array: return json_object_array_length(v) == 0;
    case json_type_object: return json_object_object_length(v) == 0;
    }
    return true;
}

/* mergo.Merge(dst, src, WithOverride) with nodeadm's transformers: maps
 * (the kubelet config included) merge key by key, kubelet.flags append,
 * any other non-empty value of src replaces dst's. */
static void merge_nodeconfig(json_object *dst, json_object *src, const char *path)
{
    json_object_object_foreach(src, k, sv) {
        json_object *dv = NULL;
        char sub[128];

        snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", k);
        json_object_object_get_ex(dst, k, &dv);
        if (json_object_is_type(sv, json_type_object) && json_object_is_type(dv, json_type_object)) {
            merge_nodeconfig(dv, sv, sub);
        } else if (strcmp(sub, "spec.kubelet.flags") == 0 &&
                   json_object_is_type(sv, json_type_array) &&
                   json_object_is_type(dv, json_type_array)) {
            for (size_t i = 0; i < json_object_array_length(sv); i++)
                json_object_array_add(dv, json_object_get(json_object_array_get_idx(sv, i)));
        } else if (!is_empty(sv) || dv == NULL) {
            json_object *copy = NULL;

            json_object_deep_copy(sv, &copy, NULL);
            json_object_object_add(dst, k, copy);
        }
    }
}

/* Parse one NodeConfig document (YAML); on TLR_OK *out is new. */
static int decode_nodeconfig(boot *b, const char *d, size_t n, const char *where,
                             json_object **out)
{
    json_object *docs = NULL, *doc, *copy = NULL;
    char err[200];
    const char *api, *kind;

    if (tlr_yaml_parse(d, n, NULL, &docs, err, sizeof(err)) != TLR_OK)
        return refuse(b, TLR_E_PARSE, "%s: malformed YAML: %s", where, err);
    doc = json_object_array_length(docs) > 0 ? json_object_array_get_idx(docs, 0) : NULL;
    if (!json_object_is_type(doc, json_type_object)) {
        json_object_put(docs);
        return refuse(b, TLR_E_PARSE, "%s: not a NodeConfig document", where);
    }
    api = tlr_json_str(doc, "apiVersion");
    kind = tlr_json_str(doc, "kind");
    if (api == NULL || strcmp(api, NODECONFIG_API) != 0 || kind == NULL ||
        strcmp(kind, "NodeConfig") != 0) {
        refuse(b, TLR_E_PARSE, "%s: apiVersion %s kind %s is not " NODECONFIG_API " NodeConfig",
               where, api ? api : "(none)", kind ? kind : "(none)");
        json_object_put(docs);
        return TLR_E_PARSE;
    }
    json_object_deep_copy(doc, &copy, NULL);   /* the parse may share aliased nodes */
    json_object_put(docs);
    *out = copy;
    return TLR_OK;
}

/* The merged NodeConfig into the node configuration. */
static int apply_nodeconfig(boot *b, json_object *nc)
{
    static const char *const required[][2] = {
        { "spec.cluster.name", "Name is missing in cluster configuration" },
        { "spec.cluster.apiServerEndpoint", "Apiserver endpoint is missing in cluster configuration" },
        { "spec.cluster.certificateAuthority",
          "Certificate authority is missing in cluster configuration" },
        { "spec.cluster.cidr", "CIDR is missing in cluster configuration" },
    };
    ks_na_config *c = b->cfg;
    json_object *kc = tlr_json_obj(nc, "spec.kubelet.config"), *flags, *v;
    const char *strategy = tlr_json_str(nc, "spec.instance.localStorage.strategy");
    int64_t i64;
    int rc;

    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        const char *s = tlr_json_str(nc, required[i][0]);

        if (s == NULL || s[0] == '\0')
            return refuse(b, TLR_E_INVAL, "nodeadm: %s", required[i][1]);
    }
    if ((rc = check_identity(b, tlr_json_str(nc, "spec.cluster.name"),
                             tlr_json_str(nc, "spec.cluster.apiServerEndpoint"),
                             tlr_json_str(nc, "spec.cluster.certificateAuthority"))) != TLR_OK)
        return rc;
    c->raid0 = strategy != NULL && strcmp(strategy, "RAID0") == 0;
    if (kc != NULL) {
        if (tlr_json_int(kc, "maxPods", &i64) == TLR_OK)
            c->max_pods = (int32_t)i64;
        if (tlr_json_int(kc, "podsPerCore", &i64) == TLR_OK)
            c->pods_per_core = (int32_t)i64;
        if ((v = tlr_json_get(kc, "kubeReserved")) != NULL &&
            (rc = merge_quantities(b, "kubeReserved", c->kube_reserved, v)) != TLR_OK)
            return rc;
        if ((v = tlr_json_get(kc, "systemReserved")) != NULL &&
            (rc = merge_quantities(b, "systemReserved", c->system_reserved, v)) != TLR_OK)
            return rc;
        if ((v = tlr_json_get(kc, "evictionHard")) != NULL &&
            (rc = merge_quantities(b, "evictionHard", c->eviction_hard, v)) != TLR_OK)
            return rc;
        if ((v = tlr_json_get(kc, "registerWithTaints")) != NULL) {
            if (!json_object_is_type(v, json_type_array))
                return refuse(b, TLR_E_PARSE, "registerWithTaints is not a list");
            for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *t = json_object_array_get_idx(v, i);

                if ((rc = add_taint(b, tlr_json_str(t, "key"), tlr_json_str(t, "value"),
                                    tlr_json_str(t, "effect"))) != TLR_OK)
                    return rc;
            }
        }
    }
    flags = tlr_json_arr(nc, "spec.kubelet.flags");
    if (flags != NULL) {
        /* Each flag is one word "--a=b"; split "--a b" too. */
        json_object *words = json_object_new_array();

        for (size_t i = 0; i < json_object_array_length(flags); i++) {
            json_object *cmds = shell_words(json_object_get_string(
                                                json_object_array_get_idx(flags, i)), NULL);

            for (size_t j = 0; j < json_object_array_length(cmds); j++) {
                json_object *cmd = json_object_array_get_idx(cmds, j);

                for (size_t k = 0; k < json_object_array_length(cmd); k++)
                    json_object_array_add(words, json_object_get(json_object_array_get_idx(cmd, k)));
            }
            json_object_put(cmds);
        }
        rc = kubelet_flags(b, words);
        json_object_put(words);
        if (rc != TLR_OK)
            return rc;
    }
    return TLR_OK;
}

static int run_nodeadm(boot *b, const char *d, size_t n)
{
    json_object *merged = NULL, *one;
    char err[200], where[64];
    int rc = TLR_OK, nparts = 0;

    if (tlr_mime_looks_like(d, n)) {
        tlr_mime_doc doc = { 0 };

        if (tlr_mime_parse(d, n, &doc, err, sizeof(err)) != TLR_OK)
            return refuse(b, TLR_E_PARSE, "malformed MIME user data: %s", err);
        for (size_t i = 0; i < doc.n && rc == TLR_OK; i++) {
            tlr_mime_part *p = &doc.parts[i];
            char mt[128], *body;
            size_t blen;

            tlr_mime_media_type(p->content_type, mt, sizeof(mt));
            if (strcmp(mt, NODECONFIG_TYPE) != 0) {
                if (is_script_part(p))
                    ran_script(b->cfg, "shell", p->body, p->len);
                continue;
            }
            snprintf(where, sizeof(where), "NodeConfig part %zu", i + 1);
            decode_if_b64(p->body, p->len, &body, &blen);
            one = NULL;
            rc = decode_nodeconfig(b, body, blen, where, &one);
            free(body);
            if (rc != TLR_OK)
                break;
            nparts++;
            ran(b->cfg, "nodeadm: %s", where);
            if (merged == NULL) {
                merged = one;
            } else {
                merge_nodeconfig(merged, one, "");
                json_object_put(one);
            }
        }
        tlr_mime_doc_free(&doc);
        if (rc == TLR_OK && nparts == 0)
            rc = refuse(b, TLR_E_NOTFOUND, "no bootstrap in user data (nodeadm: could not find "
                        "NodeConfig within UserData)");
    } else {
        rc = decode_nodeconfig(b, d, n, "user data", &merged);
        if (rc == TLR_OK)
            ran(b->cfg, "nodeadm: NodeConfig");
    }
    if (rc == TLR_OK)
        rc = apply_nodeconfig(b, merged);
    json_object_put(merged);
    return rc;
}

/* --- Bottlerocket ------------------------------------------------------- */

static bool is_ephemeral_init(json_object *cmd)
{
    static const char *const want[] = { "apiclient", "ephemeral-storage", "init" };

    if (!json_object_is_type(cmd, json_type_array) || json_object_array_length(cmd) < 3)
        return false;
    for (size_t i = 0; i < 3; i++) {
        json_object *w = json_object_array_get_idx(cmd, i);

        if (!json_object_is_type(w, json_type_string) ||
            strcmp(json_object_get_string(w), want[i]) != 0)
            return false;
    }
    return true;
}

static int run_bottlerocket(boot *b, const char *d, size_t n)
{
    ks_na_config *c = b->cfg;
    json_object *doc = NULL, *k, *v;
    char err[200];
    const char *name, *api, *ca;
    int64_t i64;
    int rc;

    if (tlr_toml_parse(d, n, &doc, err, sizeof(err)) != TLR_OK)
        return refuse(b, TLR_E_PARSE, "malformed TOML user data: %s", err);
    k = tlr_json_obj(doc, "settings.kubernetes");
    name = k ? tlr_json_str(k, "cluster-name") : NULL;
    api = k ? tlr_json_str(k, "api-server") : NULL;
    ca = k ? tlr_json_str(k, "cluster-certificate") : NULL;
    if (name == NULL || api == NULL || ca == NULL) {
        rc = refuse(b, TLR_E_INVAL, "bottlerocket: settings.kubernetes.%s is missing",
                    name == NULL ? "cluster-name" : api == NULL ? "api-server"
                                                                : "cluster-certificate");
        goto out;
    }
    if ((rc = check_identity(b, name, api, ca)) != TLR_OK)
        goto out;
    if ((v = tlr_json_get(k, "node-labels")) != NULL) {
        if (!json_object_is_type(v, json_type_object)) {
            rc = refuse(b, TLR_E_PARSE, "settings.kubernetes.node-labels is not a table");
            goto out;
        }
        json_object_object_foreach(v, lk, lv) {
            char text[256];

            if (!scalar_text(lv, text, sizeof(text))) {
                rc = refuse(b, TLR_E_PARSE, "node-labels.%s is not a string", lk);
                goto out;
            }
            if ((rc = add_label(b, lk, text)) != TLR_OK)
                goto out;
        }
    }
    if ((v = tlr_json_get(k, "node-taints")) != NULL) {
        if (!json_object_is_type(v, json_type_object)) {
            rc = refuse(b, TLR_E_PARSE, "settings.kubernetes.node-taints is not a table");
            goto out;
        }
        json_object_object_foreach(v, tk, tv) {
            bool list = json_object_is_type(tv, json_type_array);
            size_t cnt = list ? json_object_array_length(tv) : 1;

            for (size_t i = 0; i < cnt; i++) {
                json_object *e = list ? json_object_array_get_idx(tv, i) : tv;
                const char *s = json_object_is_type(e, json_type_string)
                                    ? json_object_get_string(e) : NULL;
                const char *colon = s ? strrchr(s, ':') : NULL;
                char value[256];

                if (colon == NULL) {
                    rc = refuse(b, TLR_E_PARSE, "node-taints.%s: want \"value:Effect\"", tk);
                    goto out;
                }
                snprintf(value, sizeof(value), "%.*s", (int)(colon - s), s);
                if ((rc = add_taint(b, tk, value, colon + 1)) != TLR_OK)
                    goto out;
            }
        }
    }
    if (tlr_json_int(k, "max-pods", &i64) == TLR_OK)
        c->max_pods = (int32_t)i64;
    if ((v = tlr_json_get(k, "kube-reserved")) != NULL &&
        (rc = merge_quantities(b, "kube-reserved", c->kube_reserved, v)) != TLR_OK)
        goto out;
    if ((v = tlr_json_get(k, "system-reserved")) != NULL &&
        (rc = merge_quantities(b, "system-reserved", c->system_reserved, v)) != TLR_OK)
        goto out;
    if ((v = tlr_json_get(k, "eviction-hard")) != NULL) {
        json_object *m = json_object_new_object();

        if ((rc = merge_quantities(b, "eviction-hard", m, v)) != TLR_OK) {
            json_object_put(m);
            goto out;
        }
        json_object_put(c->eviction_hard);   /* the setting replaces the default map */
        c->eviction_hard = m;
    }
    ran(c, "bottlerocket: settings.kubernetes");
    if ((v = tlr_json_obj(doc, "settings.bootstrap-commands")) != NULL) {
        json_object_object_foreach(v, bk, bv) {
            json_object *cmds = tlr_json_arr(bv, "commands");

            ran(c, "bootstrap-command: %s", bk);
            for (size_t i = 0; cmds != NULL && i < json_object_array_length(cmds); i++)
                if (is_ephemeral_init(json_object_array_get_idx(cmds, i)))
                    c->raid0 = true;
        }
    }
    rc = TLR_OK;
out:
    json_object_put(doc);
    return rc;
}

/* --- which agent ---------------------------------------------------------- */

/* For an AMI that does not say: what the user data's format is made for. */
static ks_na_agent sniff(const char *d, size_t n)
{
    json_object *o = NULL;
    char err[8];
    ks_na_agent a = KS_NA_NONE;

    if (n == 0)
        return KS_NA_NONE;
    if (tlr_mime_looks_like(d, n)) {
        tlr_mime_doc doc = { 0 };

        if (tlr_mime_parse(d, n, &doc, err, sizeof(err)) != TLR_OK)
            return KS_NA_NODEADM;   /* it reports the malformed document */
        for (size_t i = 0; i < doc.n; i++) {
            char mt[128];

            tlr_mime_media_type(doc.parts[i].content_type, mt, sizeof(mt));
            if (strcmp(mt, NODECONFIG_TYPE) == 0)
                a = KS_NA_NODEADM;
            else if (a == KS_NA_NONE && is_script_part(&doc.parts[i]) &&
                     mem_contains(doc.parts[i].body, doc.parts[i].len, "/etc/eks/bootstrap.sh"))
                a = KS_NA_AL2;
        }
        tlr_mime_doc_free(&doc);
        return a;
    }
    if (mem_contains(d, n, "/etc/eks/bootstrap.sh"))
        return KS_NA_AL2;
    if (tlr_yaml_parse(d, n, NULL, &o, err, sizeof(err)) == TLR_OK) {
        json_object *doc = json_object_array_length(o) > 0 ? json_object_array_get_idx(o, 0) : NULL;
        const char *kind = tlr_json_str(doc, "kind");

        if (kind != NULL && strcmp(kind, "NodeConfig") == 0)
            a = KS_NA_NODEADM;
        json_object_put(o);
        o = NULL;
        if (a != KS_NA_NONE)
            return a;
    }
    if (tlr_toml_parse(d, n, &o, err, sizeof(err)) == TLR_OK) {
        if (tlr_json_obj(o, "settings") != NULL)
            a = KS_NA_BOTTLEROCKET;
        json_object_put(o);
    }
    return a;
}

static ks_na_agent by_ami(const char *ami, bool *windows)
{
    *windows = false;
    if (ami == NULL)
        return KS_NA_NONE;
    if (icontains(ami, "windows")) {
        *windows = true;
        return KS_NA_NONE;
    }
    if (icontains(ami, "bottlerocket"))
        return KS_NA_BOTTLEROCKET;
    if (icontains(ami, "al2023"))   /* before AL2: amazon-eks-node-al2023-... */
        return KS_NA_NODEADM;
    if (icontains(ami, "amazon-eks-node-") || icontains(ami, "amazon-eks-gpu-node-") ||
        icontains(ami, "amazon-eks-arm64-node-"))
        return KS_NA_AL2;
    return KS_NA_NONE;
}

int ks_nodeagent_run(const char *ud, size_t len, const char *ami_name, const ks_na_hw *hw,
                     const ks_na_cluster *cluster, ks_na_config *out, char *reason,
                     size_t reasonlen)
{
    ks_na_config cfg = { 0 };
    boot b = { hw, cluster, &cfg, reason, reasonlen };
    char *d = NULL;
    size_t n = 0;
    bool windows;
    ks_na_agent a;
    int rc;

    if (reason != NULL && reasonlen > 0)
        reason[0] = '\0';
    if (hw == NULL || cluster == NULL || out == NULL || (ud == NULL && len > 0))
        return refuse(&b, TLR_E_INVAL, "bad arguments");
    a = by_ami(ami_name, &windows);
    if (windows)
        return refuse(&b, TLR_E_UNIMPLEMENTED, "Windows AMI %s: Windows nodes are not simulated",
                      ami_name);
    decode_if_b64(ud != NULL ? ud : "", len, &d, &n);
    if (a == KS_NA_NONE)
        a = sniff(d, n);
    if (a == KS_NA_NONE || n == 0) {
        free(d);
        return refuse(&b, TLR_E_NOTFOUND, "no bootstrap in user data%s",
                      n == 0 ? " (none)" : " (no NodeConfig, bootstrap.sh or Bottlerocket "
                                           "settings)");
    }
    cfg.agent = a;
    set_defaults(&b, a != KS_NA_BOTTLEROCKET);
    switch (a) {
    case KS_NA_NODEADM: rc = run_nodeadm(&b, d, n); break;
    case KS_NA_AL2: rc = run_al2(&b, d, n); break;
    default: rc = run_bottlerocket(&b, d, n); break;
    }
    free(d);
    if (rc != TLR_OK) {
        ks_na_config_free(&cfg);
        return rc;
    }
    *out = cfg;
    return TLR_OK;
}

/* --- the kubelet's arithmetic --------------------------------------------- */

static void put_qty(json_object *o, const char *key, int64_t v, bool milli)
{
    char buf[32];

    if (milli) {
        if (v % 1000 == 0)
            snprintf(buf, sizeof(buf), "%lld", (long long)(v / 1000));
        else
            snprintf(buf, sizeof(buf), "%lldm", (long long)v);
    } else if (v > 0 && v % GIB == 0 && strcmp(key, "memory") != 0) {
        snprintf(buf, sizeof(buf), "%lldGi", (long long)(v / GIB));
    } else if (v > 0 && v % 1024 == 0) {
        snprintf(buf, sizeof(buf), "%lldKi", (long long)(v / 1024));
    } else {
        snprintf(buf, sizeof(buf), "%lld", (long long)v);
    }
    json_object_object_add(o, key, json_object_new_string(buf));
}

/* m[key] as an amount: millicores when milli, else bytes; a percentage
 * ("10%") is of cap.  Absent or unparsable: 0. */
static int64_t amount(json_object *m, const char *key, bool milli, int64_t cap)
{
    json_object *v = NULL;
    const char *s;
    size_t n;
    int64_t out = 0;

    if (m == NULL || !json_object_object_get_ex(m, key, &v))
        return 0;
    s = json_object_get_string(v);
    n = strlen(s);
    if (n > 1 && s[n - 1] == '%')
        return (int64_t)((double)cap * strtod(s, NULL) / 100.0);
    if ((milli ? tlr_quantity_parse_milli(s, &out) : tlr_quantity_parse_value(s, &out)) != TLR_OK)
        return 0;
    return out;
}

int ks_nodeagent_resources(const ks_na_config *c, const ks_na_hw *hw, int64_t root_bytes,
                           bool with_ext, json_object **capacity, json_object **allocatable)
{
    json_object *cap, *alloc;
    int64_t cpu, mem_mib, mem, eph, pods;

    if (c == NULL || hw == NULL || capacity == NULL || allocatable == NULL)
        return TLR_E_INVAL;
    cpu = (int64_t)(hw->vcpu > 0 ? hw->vcpu : 1) * 1000;
    /* The simulator's hardware model of what the OS reports: arm64
     * firmware keeps 64 MiB, then the kernel ~7.5 % (rounded up). */
    mem_mib = hw->memory_mib - (hw->arch != NULL && strcmp(hw->arch, "arm64") == 0 ? 64 : 0);
    mem_mib -= (mem_mib * 75 + 999) / 1000;
    mem = (mem_mib > 0 ? mem_mib : 0) * MIB;
    eph = c->raid0 && hw->nvme_bytes > 0 ? hw->nvme_bytes : root_bytes > 0 ? root_bytes : 20 * GIB;
    pods = c->max_pods;
    if (c->pods_per_core > 0 && (int64_t)c->pods_per_core * (cpu / 1000) < pods)
        pods = (int64_t)c->pods_per_core * (cpu / 1000);

    cap = json_object_new_object();
    put_qty(cap, "cpu", cpu, true);
    put_qty(cap, "memory", mem, false);
    put_qty(cap, "ephemeral-storage", eph, false);
    {
        char buf[24];

        snprintf(buf, sizeof(buf), "%lld", (long long)pods);
        json_object_object_add(cap, "pods", json_object_new_string(buf));
    }
    alloc = json_object_new_object();
    {
        int64_t a_cpu = cpu - amount(c->kube_reserved, "cpu", true, cpu) -
                        amount(c->system_reserved, "cpu", true, cpu);
        int64_t a_mem = mem - amount(c->kube_reserved, "memory", false, mem) -
                        amount(c->system_reserved, "memory", false, mem) -
                        amount(c->eviction_hard, "memory.available", false, mem);
        int64_t a_eph = eph - amount(c->kube_reserved, "ephemeral-storage", false, eph) -
                        amount(c->system_reserved, "ephemeral-storage", false, eph) -
                        amount(c->eviction_hard, "nodefs.available", false, eph);

        put_qty(alloc, "cpu", a_cpu > 0 ? a_cpu : 0, true);
        put_qty(alloc, "memory", a_mem > 0 ? a_mem : 0, false);
        put_qty(alloc, "ephemeral-storage", a_eph > 0 ? a_eph : 0, false);
        json_object_object_add(alloc, "pods",
                               json_object_get(json_object_object_get(cap, "pods")));
    }
    for (size_t i = 0; with_ext && i < hw->next; i++) {
        char buf[24];

        if (hw->ext[i].count <= 0)
            continue;
        snprintf(buf, sizeof(buf), "%lld", (long long)hw->ext[i].count);
        json_object_object_add(cap, hw->ext[i].name, json_object_new_string(buf));
        json_object_object_add(alloc, hw->ext[i].name, json_object_new_string(buf));
    }
    *capacity = cap;
    *allocatable = alloc;
    return TLR_OK;
}
