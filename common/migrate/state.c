/* state.c - the migration checkpoint: its lifetime, JSON form and small
 * accessors (tlr_migrate.h).
 *
 * The JSON is what `tailorctl migrate status -o json` prints and what the
 * ConfigMap's data["state.json"] holds, so its field names are a contract
 * (docs/migration.md): new fields may be added, none renamed.  Parsing is
 * strict about types (a checkpoint edited by hand into nonsense is an
 * error naming the field, never a silent reset) and lenient about absent
 * optional fields.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_json.h"

#define STATE_VERSION 1

static const char *const phase_names[] = { "Pending", "Running", "Paused", "Halted", "Done",
                                           "RolledBack" };
static const char *const node_names[] = { "pending", "draining", "replacing", "verifying",
                                          "removing", "done", "gone" };

const char *tlr_mig_phase_name(tlr_mig_phase p)
{
    return (unsigned)p < sizeof(phase_names) / sizeof(phase_names[0]) ? phase_names[p] : "?";
}

const char *tlr_mig_node_state_name(tlr_mig_node_state s)
{
    return (unsigned)s < sizeof(node_names) / sizeof(node_names[0]) ? node_names[s] : "?";
}

const char *tlr_mig_exit_name(int code)
{
    switch (code) {
#define TLR_MIG_X(name, num, msg) case num: return #name;
    TLR_MIG_EXIT_MAP(TLR_MIG_X)
#undef TLR_MIG_X
    default: return "UNKNOWN";
    }
}

const char *tlr_mig_exit_text(int code)
{
    switch (code) {
#define TLR_MIG_X(name, num, msg) case num: return msg;
    TLR_MIG_EXIT_MAP(TLR_MIG_X)
#undef TLR_MIG_X
    default: return "unknown exit code";
    }
}

static char *dup0(const char *s)
{
    return tlr_strdup(s ? s : "");
}

void tlr_mig_state_init(tlr_mig_state *s, const char *name, const char *selector,
                        const char *asg, int batch_size, int64_t now_ms)
{
    memset(s, 0, sizeof(*s));
    s->version = STATE_VERSION;
    s->name = dup0(name);
    s->selector = dup0(selector);
    s->asg = dup0(asg);
    s->message = dup0(NULL);
    s->holder.host = dup0(NULL);
    s->batch_size = batch_size;
    s->created_ms = s->updated_ms = now_ms;
}

void mig_baseline_clear(tlr_mig_state *s)
{
    for (size_t i = 0; i < s->nowners; i++) {
        free(s->owners[i].kind);
        free(s->owners[i].ns);
        free(s->owners[i].name);
    }
    free(s->owners);
    s->owners = NULL;
    s->nowners = 0;
    for (size_t i = 0; i < s->nbaseline; i++) {
        free(s->baseline[i].uid);
        free(s->baseline[i].pod);
    }
    free(s->baseline);
    s->baseline = NULL;
    s->nbaseline = 0;
}

void tlr_mig_state_clear(tlr_mig_state *s)
{
    if (s == NULL)
        return;
    free(s->name);
    free(s->selector);
    free(s->asg);
    free(s->message);
    free(s->holder.host);
    for (size_t i = 0; i < s->nasgs; i++)
        free(s->asgs[i].name);
    free(s->asgs);
    for (size_t i = 0; i < s->nnodes; i++) {
        tlr_mig_node *n = &s->nodes[i];
        free(n->name);
        free(n->instance);
        free(n->asg);
        free(n->zone);
        free(n->message);
    }
    free(s->nodes);
    mig_baseline_clear(s);
    memset(s, 0, sizeof(*s));
}

tlr_mig_node *tlr_mig_state_node(tlr_mig_state *s, const char *name)
{
    for (size_t i = 0; s != NULL && name != NULL && i < s->nnodes; i++)
        if (strcmp(s->nodes[i].name, name) == 0)
            return &s->nodes[i];
    return NULL;
}

const tlr_mig_asg *tlr_mig_state_asg(const tlr_mig_state *s, const char *name)
{
    for (size_t i = 0; s != NULL && name != NULL && i < s->nasgs; i++)
        if (strcmp(s->asgs[i].name, name) == 0)
            return &s->asgs[i];
    return NULL;
}

void tlr_mig_state_add_asg(tlr_mig_state *s, const char *name, int min, int max, int desired)
{
    if (tlr_mig_state_asg(s, name) != NULL)
        return;
    s->asgs = tlr_realloc(s->asgs, (s->nasgs + 1) * sizeof(*s->asgs));
    s->asgs[s->nasgs++] = (tlr_mig_asg){ tlr_strdup(name), min, max, desired };
}

void tlr_mig_node_set(tlr_mig_node *n, tlr_mig_node_state st, const char *message,
                      int64_t now_ms)
{
    n->state = st;
    if (message != NULL) {
        free(n->message);
        n->message = tlr_strdup(message);
    }
    if (st == TLR_MIG_NODE_DONE || st == TLR_MIG_NODE_GONE)
        n->done_ms = now_ms;
}

void tlr_mig_state_counts(const tlr_mig_state *s, tlr_mig_counts *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < s->nnodes; i++) {
        out->total++;
        switch (s->nodes[i].state) {
        case TLR_MIG_NODE_PENDING: out->pending++; break;
        case TLR_MIG_NODE_DONE: out->done++; break;
        case TLR_MIG_NODE_GONE: out->gone++; break;
        default: out->in_flight++; break;
        }
    }
}

/* ---- JSON out ----------------------------------------------------------- */

static void kstr(tlr_buf *b, const char *key, const char *v, bool comma)
{
    tlr_buf_printf(b, "%s\"%s\":", comma ? "," : "", key);
    tlr_buf_add_json_str(b, v ? v : "");
}

int tlr_mig_state_json(const tlr_mig_state *s, tlr_buf *b)
{
    tlr_buf_printf(b, "{\"version\":%d", s->version);
    kstr(b, "name", s->name, true);
    kstr(b, "selector", s->selector, true);
    kstr(b, "asg", s->asg, true);
    kstr(b, "phase", tlr_mig_phase_name(s->phase), true);
    kstr(b, "message", s->message, true);
    tlr_buf_printf(b, ",\"frozen\":%s,\"batch_size\":%d,\"batch_no\":%d,\"created_ms\":%lld,"
                   "\"updated_ms\":%lld,\"finished_ms\":%lld,\"holder\":{",
                   s->frozen ? "true" : "false", s->batch_size, s->batch_no,
                   (long long)s->created_ms, (long long)s->updated_ms,
                   (long long)s->finished_ms);
    kstr(b, "host", s->holder.host, false);
    tlr_buf_printf(b, ",\"pid\":%lld,\"heartbeat_ms\":%lld},\"asgs\":[",
                   (long long)s->holder.pid, (long long)s->holder.heartbeat_ms);
    for (size_t i = 0; i < s->nasgs; i++) {
        tlr_buf_adds(b, i ? ",{" : "{");
        kstr(b, "name", s->asgs[i].name, false);
        tlr_buf_printf(b, ",\"min\":%d,\"max\":%d,\"desired\":%d}", s->asgs[i].min,
                       s->asgs[i].max, s->asgs[i].desired);
    }
    tlr_buf_adds(b, "],\"nodes\":[");
    for (size_t i = 0; i < s->nnodes; i++) {
        const tlr_mig_node *n = &s->nodes[i];
        tlr_buf_adds(b, i ? ",{" : "{");
        kstr(b, "name", n->name, false);
        kstr(b, "instance", n->instance, true);
        kstr(b, "asg", n->asg, true);
        kstr(b, "zone", n->zone, true);
        kstr(b, "state", tlr_mig_node_state_name(n->state), true);
        tlr_buf_printf(b, ",\"was_cordoned\":%s,\"batch\":%d,\"pods\":%d,\"started_ms\":%lld,"
                       "\"done_ms\":%lld", n->was_cordoned ? "true" : "false", n->batch,
                       n->pods, (long long)n->started_ms, (long long)n->done_ms);
        kstr(b, "message", n->message, true);
        tlr_buf_adds(b, "}");
    }
    tlr_buf_adds(b, "],\"owners\":[");
    for (size_t i = 0; i < s->nowners; i++) {
        const tlr_mig_owner *o = &s->owners[i];
        tlr_buf_adds(b, i ? ",{" : "{");
        kstr(b, "kind", o->kind, false);
        kstr(b, "namespace", o->ns, true);
        kstr(b, "name", o->name, true);
        tlr_buf_printf(b, ",\"ready_before\":%d,\"tailor_before\":%d,\"displaced\":%d}",
                       o->ready_before, o->tailor_before, o->displaced);
    }
    tlr_buf_adds(b, "],\"baseline\":[");
    for (size_t i = 0; i < s->nbaseline; i++) {
        const tlr_mig_restart *r = &s->baseline[i];
        tlr_buf_adds(b, i ? ",{" : "{");
        kstr(b, "uid", r->uid, false);
        kstr(b, "pod", r->pod, true);
        tlr_buf_printf(b, ",\"restarts\":%d,\"crashloop\":%s}", r->restarts,
                       r->crashloop ? "true" : "false");
    }
    return tlr_buf_adds(b, "]}");
}

/* ---- JSON in ------------------------------------------------------------- */

typedef struct rd {
    char *err;
    size_t errlen;
    int rc;
} rd;

static void bad(rd *r, const char *path, const char *what)
{
    if (r->rc == TLR_OK)
        snprintf(r->err, r->errlen, "%s: %s", path, what);
    r->rc = TLR_E_PARSE;
}

static char *gstr(rd *r, json_object *o, const char *key, const char *path)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || v == NULL)
        return tlr_strdup("");
    if (!json_object_is_type(v, json_type_string)) {
        char p[256];
        snprintf(p, sizeof(p), "%s%s", path, key);
        bad(r, p, "not a string");
        return tlr_strdup("");
    }
    return tlr_strdup(json_object_get_string(v));
}

static int64_t gint(rd *r, json_object *o, const char *key, const char *path)
{
    int64_t v = 0;
    int rc = tlr_json_int(o, key, &v);
    if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
        char p[256];
        snprintf(p, sizeof(p), "%s%s", path, key);
        bad(r, p, "not an integer");
        return 0;
    }
    return v;
}

static bool gbool(rd *r, json_object *o, const char *key, const char *path)
{
    bool v = false;
    int rc = tlr_json_bool(o, key, &v);
    if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
        char p[256];
        snprintf(p, sizeof(p), "%s%s", path, key);
        bad(r, p, "not a boolean");
        return false;
    }
    return v;
}

static int small(int64_t v)
{
    return v < 0 ? -1 : v > 1000000000 ? 1000000000 : (int)v;
}

static int enum_of(rd *r, const char *v, const char *const *names, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0)
            return (int)i;
    bad(r, path, "unknown value");
    return 0;
}

static json_object *garr(rd *r, json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || v == NULL)
        return NULL;
    if (!json_object_is_type(v, json_type_array)) {
        bad(r, key, "not a list");
        return NULL;
    }
    return v;
}

static bool item_ok(rd *r, json_object *it, const char *path)
{
    if (json_object_is_type(it, json_type_object))
        return true;
    bad(r, path, "not an object");
    return false;
}

int tlr_mig_state_parse(const char *text, size_t len, tlr_mig_state *out, char *err,
                        size_t errlen)
{
    json_object *root = NULL, *a;
    tlr_mig_state s;
    rd r = { err, errlen, TLR_OK };
    char path[96], perr[256];
    char *v;

    if (err && errlen)
        err[0] = '\0';
    if (tlr_json_parse(text, len, 1u << 24, &root, perr, sizeof(perr)) != TLR_OK) {
        snprintf(err, errlen, "not JSON: %s", perr);
        return TLR_E_PARSE;
    }
    if (!json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        snprintf(err, errlen, "not a JSON object");
        return TLR_E_PARSE;
    }
    memset(&s, 0, sizeof(s));
    s.version = (int)gint(&r, root, "version", "");
    if (r.rc == TLR_OK && s.version > STATE_VERSION) {
        snprintf(err, errlen, "version %d: written by a newer tailorctl (this one reads %d)",
                 s.version, STATE_VERSION);
        json_object_put(root);
        return TLR_E_VERSION;
    }
    s.name = gstr(&r, root, "name", "");
    s.selector = gstr(&r, root, "selector", "");
    s.asg = gstr(&r, root, "asg", "");
    v = gstr(&r, root, "phase", "");
    s.phase = (tlr_mig_phase)enum_of(&r, v[0] ? v : "Pending", phase_names,
                                     sizeof(phase_names) / sizeof(phase_names[0]), "phase");
    free(v);
    s.message = gstr(&r, root, "message", "");
    s.frozen = gbool(&r, root, "frozen", "");
    s.batch_size = small(gint(&r, root, "batch_size", ""));
    s.batch_no = small(gint(&r, root, "batch_no", ""));
    s.created_ms = gint(&r, root, "created_ms", "");
    s.updated_ms = gint(&r, root, "updated_ms", "");
    s.finished_ms = gint(&r, root, "finished_ms", "");
    json_object *h = tlr_json_obj(root, "holder");
    s.holder.host = h ? gstr(&r, h, "host", "holder.") : tlr_strdup("");
    if (h) {
        s.holder.pid = gint(&r, h, "pid", "holder.");
        s.holder.heartbeat_ms = gint(&r, h, "heartbeat_ms", "holder.");
    }
    if ((a = garr(&r, root, "asgs")) != NULL) {
        size_t n = json_object_array_length(a);
        s.asgs = tlr_calloc(n + 1, sizeof(*s.asgs));
        for (size_t i = 0; i < n && r.rc == TLR_OK; i++) {
            json_object *it = json_object_array_get_idx(a, i);
            snprintf(path, sizeof(path), "asgs[%zu].", i);
            if (!item_ok(&r, it, path))
                break;
            tlr_mig_asg *g = &s.asgs[s.nasgs++];
            g->name = gstr(&r, it, "name", path);
            g->min = small(gint(&r, it, "min", path));
            g->max = small(gint(&r, it, "max", path));
            g->desired = small(gint(&r, it, "desired", path));
        }
    }
    if ((a = garr(&r, root, "nodes")) != NULL) {
        size_t n = json_object_array_length(a);
        s.nodes = tlr_calloc(n + 1, sizeof(*s.nodes));
        for (size_t i = 0; i < n && r.rc == TLR_OK; i++) {
            json_object *it = json_object_array_get_idx(a, i);
            snprintf(path, sizeof(path), "nodes[%zu].", i);
            if (!item_ok(&r, it, path))
                break;
            tlr_mig_node *nd = &s.nodes[s.nnodes++];
            nd->name = gstr(&r, it, "name", path);
            nd->instance = gstr(&r, it, "instance", path);
            nd->asg = gstr(&r, it, "asg", path);
            nd->zone = gstr(&r, it, "zone", path);
            v = gstr(&r, it, "state", path);
            char sp[128];
            snprintf(sp, sizeof(sp), "%sstate", path);
            nd->state = (tlr_mig_node_state)enum_of(&r, v[0] ? v : "pending", node_names,
                                                    sizeof(node_names) / sizeof(node_names[0]),
                                                    sp);
            free(v);
            nd->was_cordoned = gbool(&r, it, "was_cordoned", path);
            nd->batch = small(gint(&r, it, "batch", path));
            nd->pods = small(gint(&r, it, "pods", path));
            nd->started_ms = gint(&r, it, "started_ms", path);
            nd->done_ms = gint(&r, it, "done_ms", path);
            nd->message = gstr(&r, it, "message", path);
            if (r.rc == TLR_OK && nd->name[0] == '\0')
                bad(&r, path, "a node without a name");
        }
    }
    if ((a = garr(&r, root, "owners")) != NULL) {
        size_t n = json_object_array_length(a);
        s.owners = tlr_calloc(n + 1, sizeof(*s.owners));
        for (size_t i = 0; i < n && r.rc == TLR_OK; i++) {
            json_object *it = json_object_array_get_idx(a, i);
            snprintf(path, sizeof(path), "owners[%zu].", i);
            if (!item_ok(&r, it, path))
                break;
            tlr_mig_owner *o = &s.owners[s.nowners++];
            o->kind = gstr(&r, it, "kind", path);
            o->ns = gstr(&r, it, "namespace", path);
            o->name = gstr(&r, it, "name", path);
            o->ready_before = small(gint(&r, it, "ready_before", path));
            o->tailor_before = small(gint(&r, it, "tailor_before", path));
            o->displaced = small(gint(&r, it, "displaced", path));
        }
    }
    if ((a = garr(&r, root, "baseline")) != NULL) {
        size_t n = json_object_array_length(a);
        s.baseline = tlr_calloc(n + 1, sizeof(*s.baseline));
        for (size_t i = 0; i < n && r.rc == TLR_OK; i++) {
            json_object *it = json_object_array_get_idx(a, i);
            snprintf(path, sizeof(path), "baseline[%zu].", i);
            if (!item_ok(&r, it, path))
                break;
            tlr_mig_restart *b = &s.baseline[s.nbaseline++];
            b->uid = gstr(&r, it, "uid", path);
            b->pod = gstr(&r, it, "pod", path);
            b->restarts = small(gint(&r, it, "restarts", path));
            b->crashloop = gbool(&r, it, "crashloop", path);
        }
    }
    json_object_put(root);
    if (r.rc == TLR_OK && (s.batch_size < 0 || s.batch_no < 0))
        bad(&r, "batch_size", "negative");
    if (r.rc != TLR_OK) {
        tlr_mig_state_clear(&s);
        return r.rc;
    }
    *out = s;
    return TLR_OK;
}

/* ---- the ConfigMap name ------------------------------------------------ */

void tlr_mig_configmap_name(const char *name, char *buf, size_t len)
{
    static const char prefix[] = "tailor-migrate-";
    char clean[256];
    size_t n = 0;
    uint32_t h = tlr_fnv1a32_str(TLR_FNV32_BASIS, name);   /* of the original, for the suffix */
    bool dash = false;

    for (const char *p = name ? name : ""; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!ok) {
            if (n > 0 && !dash && n + 1 < sizeof(clean))
                clean[n++] = '-', dash = true;
            continue;
        }
        if (n + 1 < sizeof(clean))
            clean[n++] = (char)c;
        dash = false;
    }
    while (n > 0 && clean[n - 1] == '-')
        n--;
    clean[n] = '\0';
    size_t room = 63 - (sizeof(prefix) - 1);
    bool changed = n == 0 || strcmp(clean, name ? name : "") != 0;
    if (n > room || (changed && n == 0)) {
        /* Keep a readable head and make the name unique with the hash. */
        size_t keep = room - 9;
        if (n > keep)
            n = keep;
        while (n > 0 && clean[n - 1] == '-')
            n--;
        snprintf(buf, len, "%s%.*s%s%08x", prefix, (int)n, clean, n ? "-" : "", h);
        return;
    }
    snprintf(buf, len, "%s%s", prefix, clean);
}
