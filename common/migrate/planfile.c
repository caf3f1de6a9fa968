/* planfile.c - the migration plan file (clusters in waves) and the gate
 * between waves (tlr_migrate.h; the format is in docs/migration.md).
 *
 *   apiVersion: tailor.dev/v1alpha1
 *   kind: MigrationPlan
 *   metadata: {name: fleet-2025}
 *   spec:
 *     defaults: {batch: 2, maxPending: 0}     # any cluster field
 *     waves:
 *     - name: dev
 *       clusters:
 *       - {context: dev-east, asg: legacy-m5}
 *     - name: prod
 *       gate: {requireDone: true, wait: 30m, approval: true}
 *       clusters:
 *       - {context: prod-east, selector: "eks.amazonaws.com/nodegroup=ng-1"}
 *
 * Read with common/json's YAML reader (libyaml, kubectl's YAML 1.1
 * rules).  Every key is known or an error naming the file and the path;
 * a cluster's own selector or asg replaces both of the defaults', so each
 * cluster ends with exactly one way of choosing its legacy nodes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_time.h"
#include "tlr_yaml.h"

#define PLAN_MAX_BYTES (4u << 20)
#define API_VERSION "tailor.dev/v1alpha1"

typedef struct pctx {
    const char *file;
    char *err;
    size_t errlen;
    int rc;
} pctx;

static void perr(pctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void perr(pctx *c, const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (c->rc != TLR_OK)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: %s: %s", c->file, path, msg);
    c->rc = TLR_E_INVAL;
}

static bool known_keys(pctx *c, json_object *o, const char *path, const char *const *keys)
{
    json_object_object_foreach(o, k, v) {
        (void)v;
        bool ok = false;
        for (size_t i = 0; keys[i] && !ok; i++)
            ok = strcmp(keys[i], k) == 0;
        if (!ok) {
            char p[512], list[512];
            size_t at = 0;
            list[0] = '\0';
            for (size_t i = 0; keys[i] && at + 1 < sizeof(list); i++)
                at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", i ? ", " : "",
                                       keys[i]);
            snprintf(p, sizeof(p), "%s%s%s", path, path[0] ? "." : "", k);
            perr(c, p, "unknown key (known: %s)", list);
            return false;
        }
    }
    return true;
}

static bool is_obj(pctx *c, json_object *o, const char *path)
{
    if (o != NULL && json_object_is_type(o, json_type_object))
        return true;
    perr(c, path, "must be a mapping");
    return false;
}

/* A string field; NULL when absent. */
static char *str_field(pctx *c, json_object *o, const char *key, const char *path)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || v == NULL)
        return NULL;
    if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) {
        char p[512];
        snprintf(p, sizeof(p), "%s.%s", path, key);
        perr(c, p, "must be a non-empty string");
        return NULL;
    }
    return tlr_strdup(json_object_get_string(v));
}

static int int_field(pctx *c, json_object *o, const char *key, const char *path, int lo,
                     int hi)
{
    int64_t v = 0;
    int rc = tlr_json_int(o, key, &v);
    if (rc == TLR_E_NOTFOUND)
        return -1;
    if (rc != TLR_OK || v < lo || v > hi) {
        char p[512];
        snprintf(p, sizeof(p), "%s.%s", path, key);
        perr(c, p, "must be an integer in %d..%d", lo, hi);
        return -1;
    }
    return (int)v;
}

static int64_t dur_field(pctx *c, json_object *o, const char *key, const char *path)
{
    json_object *v = NULL;
    int64_t ms = 0;
    if (!json_object_object_get_ex(o, key, &v) || v == NULL)
        return -1;
    if (!json_object_is_type(v, json_type_string) ||
        tlr_duration_parse(json_object_get_string(v), &ms) != TLR_OK || ms < 0) {
        char p[512];
        snprintf(p, sizeof(p), "%s.%s", path, key);
        perr(c, p, "must be a duration such as 90s, 10m or 1h30m");
        return -1;
    }
    return ms;
}

static bool bool_field(pctx *c, json_object *o, const char *key, const char *path, bool def)
{
    bool v = def;
    int rc = tlr_json_bool(o, key, &v);
    if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
        char p[512];
        snprintf(p, sizeof(p), "%s.%s", path, key);
        perr(c, p, "must be true or false");
    }
    return rc == TLR_OK ? v : def;
}

static const char *const cluster_keys[] = {
    "name", "context", "kubeconfig", "selector", "asg", "region", "awsEndpoint", "k8sVersion",
    "catalog", "batch", "maxPending", "maxNodes", "drainTimeout", "readyTimeout",
    "healthTimeout", "removeTimeout", NULL,
};

static void cluster_unset(tlr_mig_cluster *k)
{
    memset(k, 0, sizeof(*k));
    k->batch = k->max_pending = k->max_nodes = -1;
    k->drain_timeout_ms = k->ready_timeout_ms = k->health_timeout_ms = k->remove_timeout_ms = -1;
}

static void cluster_free(tlr_mig_cluster *k)
{
    free(k->name);
    free(k->context);
    free(k->kubeconfig);
    free(k->selector);
    free(k->asg);
    free(k->region);
    free(k->aws_endpoint);
    free(k->k8s_version);
    free(k->catalog);
    memset(k, 0, sizeof(*k));
}

static void read_cluster(pctx *c, json_object *o, const char *path, tlr_mig_cluster *k)
{
    cluster_unset(k);
    if (!is_obj(c, o, path) || !known_keys(c, o, path, cluster_keys))
        return;
    k->name = str_field(c, o, "name", path);
    k->context = str_field(c, o, "context", path);
    k->kubeconfig = str_field(c, o, "kubeconfig", path);
    k->selector = str_field(c, o, "selector", path);
    k->asg = str_field(c, o, "asg", path);
    k->region = str_field(c, o, "region", path);
    k->aws_endpoint = str_field(c, o, "awsEndpoint", path);
    k->k8s_version = str_field(c, o, "k8sVersion", path);
    k->catalog = str_field(c, o, "catalog", path);
    k->batch = int_field(c, o, "batch", path, 1, 100);
    k->max_pending = int_field(c, o, "maxPending", path, 0, 1000000);
    k->max_nodes = int_field(c, o, "maxNodes", path, 1, 1000000);
    k->drain_timeout_ms = dur_field(c, o, "drainTimeout", path);
    k->ready_timeout_ms = dur_field(c, o, "readyTimeout", path);
    k->health_timeout_ms = dur_field(c, o, "healthTimeout", path);
    k->remove_timeout_ms = dur_field(c, o, "removeTimeout", path);
}

/* k's unset fields from d. */
static void apply_defaults(tlr_mig_cluster *k, const tlr_mig_cluster *d)
{
#define S(f) if (k->f == NULL && d->f != NULL) k->f = tlr_strdup(d->f)
#define N(f) if (k->f < 0) k->f = d->f
    S(context);
    S(kubeconfig);
    S(region);
    S(aws_endpoint);
    S(k8s_version);
    S(catalog);
    if (k->selector == NULL && k->asg == NULL) {
        S(selector);
        S(asg);
    }
    N(batch);
    N(max_pending);
    N(max_nodes);
    N(drain_timeout_ms);
    N(ready_timeout_ms);
    N(health_timeout_ms);
    N(remove_timeout_ms);
#undef S
#undef N
}

static void wave_free(tlr_mig_wave *w)
{
    free(w->name);
    for (size_t i = 0; i < w->nclusters; i++)
        cluster_free(&w->clusters[i]);
    free(w->clusters);
}

void tlr_mig_plan_clear(tlr_mig_plan *p)
{
    if (p == NULL)
        return;
    free(p->name);
    for (size_t i = 0; i < p->nwaves; i++)
        wave_free(&p->waves[i]);
    free(p->waves);
    memset(p, 0, sizeof(*p));
}

static bool dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
              s[i] == '.'))
            return false;
    return true;
}

int tlr_mig_plan_parse(const char *buf, size_t len, const char *file, tlr_mig_plan *out,
                       char *err, size_t errlen)
{
    static const char *const top_keys[] = { "apiVersion", "kind", "metadata", "spec", NULL };
    static const char *const spec_keys[] = { "defaults", "waves", NULL };
    static const char *const wave_keys[] = { "name", "gate", "clusters", NULL };
    static const char *const gate_keys[] = { "requireDone", "wait", "approval", NULL };
    pctx c = { file ? file : "plan", err, errlen, TLR_OK };
    json_object *docs = NULL, *root, *spec, *waves;
    tlr_mig_plan p = { 0 };
    tlr_mig_cluster defaults;
    char yerr[256], path[256];

    cluster_unset(&defaults);
    if (err && errlen)
        err[0] = '\0';
    int rc = tlr_yaml_parse(buf, len, &(tlr_yaml_limits){ .max_bytes = PLAN_MAX_BYTES }, &docs,
                            yerr, sizeof(yerr));
    if (rc != TLR_OK) {
        snprintf(err, errlen, "%s: %s", c.file, yerr);
        return TLR_E_PARSE;
    }
    if (json_object_array_length(docs) != 1) {
        snprintf(err, errlen, "%s: want one YAML document (a MigrationPlan), found %zu", c.file,
                 json_object_array_length(docs));
        json_object_put(docs);
        return TLR_E_PARSE;
    }
    root = json_object_array_get_idx(docs, 0);
    if (!is_obj(&c, root, "(top)") || !known_keys(&c, root, "", top_keys))
        goto out;
    const char *av = tlr_json_str(root, "apiVersion"), *kind = tlr_json_str(root, "kind");
    if (av == NULL || strcmp(av, API_VERSION) != 0)
        perr(&c, "apiVersion", "must be %s", API_VERSION);
    if (kind == NULL || strcmp(kind, "MigrationPlan") != 0)
        perr(&c, "kind", "must be MigrationPlan");
    const char *name = tlr_json_str(root, "metadata.name");
    p.name = tlr_strdup(name ? name : "plan");
    spec = tlr_json_get(root, "spec");
    if (c.rc != TLR_OK || !is_obj(&c, spec, "spec") || !known_keys(&c, spec, "spec", spec_keys))
        goto out;
    json_object *d = tlr_json_get(spec, "defaults");
    if (d != NULL) {
        read_cluster(&c, d, "spec.defaults", &defaults);
        if (defaults.name != NULL)
            perr(&c, "spec.defaults.name", "a name is per cluster");
    }
    waves = tlr_json_get(spec, "waves");
    if (waves == NULL || !json_object_is_type(waves, json_type_array) ||
        json_object_array_length(waves) == 0) {
        perr(&c, "spec.waves", "must be a non-empty list of waves");
        goto out;
    }
    size_t nw = json_object_array_length(waves);
    p.waves = tlr_calloc(nw, sizeof(*p.waves));
    for (size_t i = 0; i < nw && c.rc == TLR_OK; i++) {
        json_object *wo = json_object_array_get_idx(waves, i);
        snprintf(path, sizeof(path), "spec.waves[%zu]", i);
        if (!is_obj(&c, wo, path) || !known_keys(&c, wo, path, wave_keys))
            break;
        tlr_mig_wave *w = &p.waves[p.nwaves++];
        w->name = str_field(&c, wo, "name", path);
        w->gate.require_done = true;
        if (c.rc == TLR_OK && (w->name == NULL || !dns_label(w->name))) {
            char pp[300];
            snprintf(pp, sizeof(pp), "%s.name", path);
            perr(&c, pp, "every wave needs a name of lowercase letters, digits and '-'");
        }
        for (size_t k = 0; k + 1 < p.nwaves && c.rc == TLR_OK; k++)
            if (w->name && p.waves[k].name && strcmp(p.waves[k].name, w->name) == 0)
                perr(&c, path, "wave %s is named twice", w->name);
        json_object *g = tlr_json_get(wo, "gate");
        if (g != NULL) {
            char gp[300];
            snprintf(gp, sizeof(gp), "%s.gate", path);
            if (is_obj(&c, g, gp) && known_keys(&c, g, gp, gate_keys)) {
                w->gate.require_done = bool_field(&c, g, "requireDone", gp, true);
                w->gate.approval = bool_field(&c, g, "approval", gp, false);
                int64_t ms = dur_field(&c, g, "wait", gp);
                w->gate.wait_ms = ms > 0 ? ms : 0;
            }
        }
        json_object *cl = tlr_json_get(wo, "clusters");
        if (cl == NULL || !json_object_is_type(cl, json_type_array) ||
            json_object_array_length(cl) == 0) {
            char cp[300];
            snprintf(cp, sizeof(cp), "%s.clusters", path);
            perr(&c, cp, "must be a non-empty list of clusters");
            break;
        }
        size_t nc = json_object_array_length(cl);
        w->clusters = tlr_calloc(nc, sizeof(*w->clusters));
        for (size_t j = 0; j < nc && c.rc == TLR_OK; j++) {
            char cp[300];
            snprintf(cp, sizeof(cp), "%s.clusters[%zu]", path, j);
            tlr_mig_cluster *k = &w->clusters[w->nclusters++];
            read_cluster(&c, json_object_array_get_idx(cl, j), cp, k);
            if (c.rc != TLR_OK)
                break;
            apply_defaults(k, &defaults);
            if (k->name == NULL && k->context != NULL)
                k->name = tlr_strdup(k->context);
            if (k->context == NULL && k->kubeconfig == NULL)
                perr(&c, cp, "needs a context or a kubeconfig");
            else if (k->name == NULL)
                perr(&c, cp, "needs a name (there is no context to name it after)");
            else if ((k->selector == NULL) == (k->asg == NULL))
                perr(&c, cp, "needs exactly one of selector and asg");
            /* Names key the status table and the checkpoints. */
            for (size_t a = 0; a < p.nwaves && c.rc == TLR_OK; a++)
                for (size_t b = 0; b < p.waves[a].nclusters; b++) {
                    const tlr_mig_cluster *o = &p.waves[a].clusters[b];
                    if (o != k && o->name && strcmp(o->name, k->name) == 0)
                        perr(&c, cp, "cluster %s is listed twice (give each a distinct name)",
                             k->name);
                }
        }
    }
out:
    cluster_free(&defaults);
    json_object_put(docs);
    if (c.rc != TLR_OK) {
        tlr_mig_plan_clear(&p);
        return c.rc;
    }
    *out = p;
    return TLR_OK;
}

tlr_mig_gate_verdict tlr_mig_gate_decide(const tlr_mig_wave *w, bool first,
                                         const tlr_mig_waves_done *earlier, bool approved,
                                         int64_t now_ms, int64_t *until_ms, char *why,
                                         size_t len)
{
    char d[32];
    *until_ms = 0;
    if (len)
        why[0] = '\0';
    if (!first && w->gate.require_done && earlier->done < earlier->clusters) {
        snprintf(why, len, "wave %s waits: %zu of %zu clusters of the earlier waves are Done",
                 w->name, earlier->done, earlier->clusters);
        return TLR_MIG_GATE_BLOCKED;
    }
    if (!first && w->gate.wait_ms > 0) {
        /* Without a finish time (requireDone: false and nothing done yet)
         * the soak counts from now: the gate opens no earlier than asked. */
        int64_t from = earlier->finished_ms > 0 ? earlier->finished_ms : now_ms;
        if (now_ms < from + w->gate.wait_ms) {
            *until_ms = from + w->gate.wait_ms;
            tlr_duration_format(*until_ms - now_ms, d, sizeof(d));
            snprintf(why, len, "wave %s waits %s more: the soak time after the earlier waves",
                     w->name, d);
            return TLR_MIG_GATE_WAIT;
        }
    }
    if (w->gate.approval && !approved) {
        snprintf(why, len, "wave %s needs an approval: run again with --approve-wave %s",
                 w->name, w->name);
        return TLR_MIG_GATE_APPROVAL;
    }
    return TLR_MIG_GATE_OPEN;
}
