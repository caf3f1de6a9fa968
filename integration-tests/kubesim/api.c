/* api.c - routing and verbs: the Kubernetes REST conventions on ks_store.
 *
 * Paths:  /api/v1[/namespaces/NS]/PLURAL[/NAME[/SUB]]
 *         /apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME[/SUB]]
 * plus discovery (/version, /api, /apis, group and group/version lists)
 * and /healthz, /livez, /readyz.  Verbs map as the API conventions say:
 * GET collection = list (or watch with watch=true), POST = create, PUT =
 * update, PATCH = patch, DELETE = delete; SUB is status, binding,
 * eviction or scale.  Every error is a meta/v1 Status.
 *
 * Lists and watch events are assembled from the stored JSON text with
 * memcpy; nothing is re-serialised.  When the client asks for
 * `as=Table` (kubectl get), lists and watch events are meta.k8s.io/v1
 * Tables with the usual columns for pods, nodes and deployments, and
 * NAME/AGE for the rest.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ks_api.h"
#include "ks_hooks.h"
#include "ks_patch.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define OUT_MAX ((size_t)1 << 34)   /* our own output, not outside input */
#define WATCH_BATCH 1000
#define DEFAULT_WATCH_TIMEOUT_S 1800
#define MAX_PARAMS 256

struct ks_api {
    ks_store *store;
    char *token;
    int bookmark_ms;
    tlr_logger *log;
};

int ks_api_create(const ks_api_opts *o, ks_api **out)
{
    if (!o || !o->store || !out)
        return TLR_E_INVAL;
    ks_api *a = tlr_calloc(1, sizeof(*a));
    a->store = o->store;
    a->token = o->token && o->token[0] ? tlr_strdup(o->token) : NULL;
    a->bookmark_ms = o->bookmark_ms > 0 ? o->bookmark_ms : 60000;
    a->log = o->log;
    *out = a;
    return TLR_OK;
}

void ks_api_free(ks_api *a)
{
    if (!a)
        return;
    free(a->token);
    free(a);
}

void ks_response_free(ks_response *res)
{
    if (!res)
        return;
    tlr_buf_free(&res->body);
    ks_stream_free(res->stream);
    res->stream = NULL;
}

/* ------------------------------------------------------------------ */
/* query strings                                                       */
/* ------------------------------------------------------------------ */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static char *url_decode(const char *s, size_t n)
{
    char *out = tlr_malloc(n + 1), *w = out;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            *w++ = ' ';
        } else if (s[i] == '%') {
            int h, l;
            if (i + 2 >= n || (h = hexval(s[i + 1])) < 0 || (l = hexval(s[i + 2])) < 0 ||
                (h == 0 && l == 0)) {
                free(out);
                return NULL;
            }
            *w++ = (char)(h * 16 + l);
            i += 2;
        } else {
            *w++ = s[i];
        }
    }
    *w = 0;
    return out;
}

void ks_params_free(ks_param *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        free((char *)p[i].key);
        free((char *)p[i].value);
    }
    free(p);
}

int ks_query_parse(const char *q, ks_param **out, size_t *n)
{
    ks_param *p = NULL;
    size_t cnt = 0;
    const char *s = q ? q : "";
    while (*s) {
        size_t len = strcspn(s, "&");
        if (len) {
            if (cnt == MAX_PARAMS) {
                ks_params_free(p, cnt);
                return TLR_E_TOOBIG;
            }
            const char *eq = memchr(s, '=', len);
            size_t klen = eq ? (size_t)(eq - s) : len;
            char *k = url_decode(s, klen);
            char *v = eq ? url_decode(eq + 1, len - klen - 1) : tlr_strdup("");
            if (!k || !v) {
                free(k);
                free(v);
                ks_params_free(p, cnt);
                return TLR_E_PARSE;
            }
            p = tlr_realloc(p, (cnt + 1) * sizeof(*p));
            p[cnt++] = (ks_param){ k, v };
        }
        s += len;
        if (*s == '&')
            s++;
    }
    *out = p;
    *n = cnt;
    return TLR_OK;
}

static const char *param(const ks_request *r, const char *key)
{
    for (size_t i = 0; i < r->nparams; i++)
        if (r->params[i].key && !strcmp(r->params[i].key, key))
            return r->params[i].value ? r->params[i].value : "";
    return NULL;
}

static bool param_true(const ks_request *r, const char *key)
{
    const char *v = param(r, key);
    return v && (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "1"));
}

/* ------------------------------------------------------------------ */
/* responses                                                           */
/* ------------------------------------------------------------------ */

static void status_json(tlr_buf *b, const ks_status *st)
{
    tlr_buf_adds(b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                    "\"status\":\"Failure\",\"message\":");
    tlr_buf_add_json_str(b, st->message);
    tlr_buf_adds(b, ",\"reason\":");
    tlr_buf_add_json_str(b, st->reason ? st->reason : "InternalError");
    if (st->name[0] || st->kind || st->cause_reason || st->retry_after) {
        tlr_buf_adds(b, ",\"details\":{");
        const char *sep = "";
        if (st->name[0]) {
            tlr_buf_adds(b, "\"name\":");
            tlr_buf_add_json_str(b, st->name);
            sep = ",";
        }
        if (st->group) {
            tlr_buf_printf(b, "%s\"group\":", sep);
            tlr_buf_add_json_str(b, st->group);
            sep = ",";
        }
        if (st->kind) {
            tlr_buf_printf(b, "%s\"kind\":", sep);
            tlr_buf_add_json_str(b, st->kind);
            sep = ",";
        }
        if (st->cause_reason) {
            tlr_buf_printf(b, "%s\"causes\":[{\"reason\":", sep);
            tlr_buf_add_json_str(b, st->cause_reason);
            tlr_buf_adds(b, ",\"message\":");
            tlr_buf_add_json_str(b, st->cause_message);
            if (st->cause_field[0]) {
                tlr_buf_adds(b, ",\"field\":");
                tlr_buf_add_json_str(b, st->cause_field);
            }
            tlr_buf_adds(b, "}]");
            sep = ",";
        }
        if (st->retry_after)
            tlr_buf_printf(b, "%s\"retryAfterSeconds\":%d", sep, st->retry_after);
        tlr_buf_adds(b, "}");
    }
    tlr_buf_printf(b, ",\"code\":%d}", st->code);
}

static void reply_status(ks_response *out, const ks_status *st)
{
    out->code = st->code ? st->code : 500;
    out->content_type = "application/json";
    tlr_buf_reset(&out->body);
    status_json(&out->body, st);
}

static void reply_error(ks_response *out, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reply_error(ks_response *out, int code, const char *reason, const char *fmt, ...)
{
    ks_status st = { .code = code, .reason = reason };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st.message, sizeof(st.message), fmt, ap);
    va_end(ap);
    reply_status(out, &st);
}

static void reply_obj(ks_response *out, int code, const ks_obj *o)
{
    out->code = code;
    out->content_type = "application/json";
    tlr_buf_add(&out->body, ks_obj_json(o), ks_obj_json_len(o));
}

static void reply_text(ks_response *out, int code, const char *ct, const char *text)
{
    out->code = code;
    out->content_type = ct;
    tlr_buf_adds(&out->body, text);
}

/* ------------------------------------------------------------------ */
/* discovery                                                           */
/* ------------------------------------------------------------------ */

static void add_str_array(tlr_buf *b, const char *const *v, size_t max)
{
    tlr_buf_addc(b, '[');
    for (size_t i = 0; i < max && v[i]; i++) {
        if (i)
            tlr_buf_addc(b, ',');
        tlr_buf_add_json_str(b, v[i]);
    }
    tlr_buf_addc(b, ']');
}

static void add_subresource(tlr_buf *b, const ks_kind *k, const char *sub, const char *group,
                            const char *version, const char *kind, const char *verbs)
{
    tlr_buf_printf(b, ",{\"name\":\"%s/%s\",\"singularName\":\"\",\"namespaced\":%s,", k->plural,
                   sub, k->namespaced ? "true" : "false");
    if (group)
        tlr_buf_printf(b, "\"group\":\"%s\",\"version\":\"%s\",", group, version);
    tlr_buf_printf(b, "\"kind\":\"%s\",\"verbs\":%s}", kind, verbs);
}

static void resource_list(tlr_buf *b, const char *group, const char *version)
{
    char gv[128];
    snprintf(gv, sizeof(gv), "%s%s%s", group, group[0] ? "/" : "", version);
    tlr_buf_printf(b, "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":"
                      "\"%s\",\"resources\":[", gv);
    bool first = true;
    for (int i = 0; i < KS_KIND_COUNT; i++) {
        const ks_kind *k = ks_kind_get(i);
        if (strcmp(k->group, group) || strcmp(k->version, version))
            continue;
        tlr_buf_printf(b, "%s{\"name\":\"%s\",\"singularName\":\"%s\",\"namespaced\":%s,"
                          "\"kind\":\"%s\",\"verbs\":[\"create\",\"delete\","
                          "\"deletecollection\",\"get\",\"list\",\"patch\",\"update\","
                          "\"watch\"]",
                       first ? "" : ",", k->plural, k->singular,
                       k->namespaced ? "true" : "false", k->kind);
        first = false;
        if (k->short_names[0]) {
            tlr_buf_adds(b, ",\"shortNames\":");
            add_str_array(b, k->short_names, 3);
        }
        if (k->categories[0]) {
            tlr_buf_adds(b, ",\"categories\":");
            add_str_array(b, k->categories, 2);
        }
        tlr_buf_addc(b, '}');
        if (k->subresources & KS_SUB_STATUS)
            add_subresource(b, k, "status", NULL, NULL, k->kind,
                            "[\"get\",\"patch\",\"update\"]");
        if (k->subresources & KS_SUB_SCALE)
            add_subresource(b, k, "scale", "autoscaling", "v1", "Scale",
                            "[\"get\",\"patch\",\"update\"]");
        if (k->subresources & KS_SUB_BINDING)
            add_subresource(b, k, "binding", NULL, NULL, "Binding", "[\"create\"]");
        if (k->subresources & KS_SUB_EVICTION)
            add_subresource(b, k, "eviction", "policy", "v1", "Eviction", "[\"create\"]");
    }
    if (!group[0])
        tlr_buf_adds(b, ",{\"name\":\"bindings\",\"singularName\":\"binding\",\"namespaced\":"
                        "true,\"kind\":\"Binding\",\"verbs\":[\"create\"]}");
    tlr_buf_adds(b, "]}");
}

static void group_json(tlr_buf *b, const char *group, const char *version)
{
    tlr_buf_printf(b, "{\"name\":\"%s\",\"versions\":[{\"groupVersion\":\"%s/%s\",\"version\":"
                      "\"%s\"}],\"preferredVersion\":{\"groupVersion\":\"%s/%s\",\"version\":"
                      "\"%s\"}}",
                   group, group, version, version, group, version, version);
}

/* Distinct non-core groups in table order; returns the count. */
static size_t groups(const ks_kind **out)
{
    size_t n = 0;
    for (int i = 0; i < KS_KIND_COUNT; i++) {
        const ks_kind *k = ks_kind_get(i);
        if (!k->group[0])
            continue;
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++)
            seen = !strcmp(out[j]->group, k->group) && !strcmp(out[j]->version, k->version);
        if (!seen)
            out[n++] = k;
    }
    return n;
}

static bool discovery(const char **seg, size_t nseg, bool core, ks_response *out)
{
    tlr_buf *b = &out->body;
    out->code = 200;
    out->content_type = "application/json";
    if (core && nseg == 0) {
        tlr_buf_adds(b, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
                        "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
                        "\"serverAddress\":\"127.0.0.1\"}]}");
        return true;
    }
    if (core && nseg == 1 && !strcmp(seg[0], "v1")) {
        resource_list(b, "", "v1");
        return true;
    }
    if (core)
        return false;
    const ks_kind *g[KS_KIND_COUNT];
    size_t ng = groups(g);
    if (nseg == 0) {
        tlr_buf_adds(b, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[");
        for (size_t i = 0; i < ng; i++) {
            if (i)
                tlr_buf_addc(b, ',');
            group_json(b, g[i]->group, g[i]->version);
        }
        tlr_buf_adds(b, "]}");
        return true;
    }
    for (size_t i = 0; i < ng; i++) {
        if (strcmp(g[i]->group, seg[0]))
            continue;
        if (nseg == 1) {
            tlr_buf_adds(b, "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",");
            size_t mark = b->len;
            group_json(b, g[i]->group, g[i]->version);
            /* splice: drop the inner object's opening brace */
            memmove(b->data + mark, b->data + mark + 1, b->len - mark - 1);
            b->len--;
            b->data[b->len] = 0;
            return true;
        }
        if (nseg == 2 && !strcmp(g[i]->version, seg[1])) {
            resource_list(b, g[i]->group, g[i]->version);
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* tables                                                              */
/* ------------------------------------------------------------------ */

static bool wants_table(const ks_request *r)
{
    return r->accept && strstr(r->accept, "as=Table");
}

static void age(char *buf, size_t len, const char *ts)
{
    struct tm tm = { 0 };
    if (!ts || !strptime(ts, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
        snprintf(buf, len, "<unknown>");
        return;
    }
    long d = (long)difftime(time(NULL), timegm(&tm));
    if (d < 0)
        d = 0;
    if (d < 120)
        snprintf(buf, len, "%lds", d);
    else if (d < 7200)
        snprintf(buf, len, "%ldm", d / 60);
    else if (d < 172800)
        snprintf(buf, len, "%ldh", d / 3600);
    else
        snprintf(buf, len, "%ldd", d / 86400);
}

static void table_columns(tlr_buf *b, ks_kind_id k)
{
    const char *cols;
    switch (k) {
    case KS_POD:
        cols = "[[\"Name\",\"string\"],[\"Ready\",\"string\"],[\"Status\",\"string\"],"
               "[\"Restarts\",\"string\"],[\"Age\",\"string\"],[\"IP\",\"string\"],"
               "[\"Node\",\"string\"]]";
        break;
    case KS_NODE:
        cols = "[[\"Name\",\"string\"],[\"Status\",\"string\"],[\"Roles\",\"string\"],"
               "[\"Age\",\"string\"],[\"Version\",\"string\"]]";
        break;
    case KS_DEPLOYMENT:
        cols = "[[\"Name\",\"string\"],[\"Ready\",\"string\"],[\"Up-to-date\",\"integer\"],"
               "[\"Available\",\"integer\"],[\"Age\",\"string\"]]";
        break;
    default:
        cols = "[[\"Name\",\"string\"],[\"Age\",\"string\"]]";
    }
    json_object *c = json_tokener_parse(cols);
    tlr_buf_adds(b, "\"columnDefinitions\":[");
    for (size_t i = 0; i < json_object_array_length(c); i++) {
        json_object *e = json_object_array_get_idx(c, i);
        const char *name = json_object_get_string(json_object_array_get_idx(e, 0));
        tlr_buf_printf(b, "%s{\"name\":\"%s\",\"type\":\"%s\",\"format\":\"%s\","
                          "\"description\":\"\",\"priority\":0}",
                       i ? "," : "", name,
                       json_object_get_string(json_object_array_get_idx(e, 1)),
                       !strcmp(name, "Name") ? "name" : "");
    }
    tlr_buf_adds(b, "]");
    json_object_put(c);
}

static bool cond_true(json_object *o, const char *type)
{
    json_object *conds = tlr_json_arr(o, "status.conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        if (t && s && !strcmp(t, type))
            return !strcmp(s, "True");
    }
    return false;
}

static void table_row(tlr_buf *b, const ks_obj *ob)
{
    json_object *o = ks_obj_parse(ob);
    char agebuf[32];
    age(agebuf, sizeof(agebuf), tlr_json_str(o, "metadata.creationTimestamp"));
    tlr_buf_adds(b, "{\"cells\":[");
    tlr_buf_add_json_str(b, ks_obj_name(ob));
    switch (ks_obj_kind(ob)) {
    case KS_POD: {
        json_object *ctrs = tlr_json_arr(o, "spec.containers");
        json_object *cs = tlr_json_arr(o, "status.containerStatuses");
        size_t total = ctrs ? json_object_array_length(ctrs) : 0, ready = 0;
        int64_t restarts = 0;
        for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
            bool r = false;
            int64_t rc = 0;
            tlr_json_bool(json_object_array_get_idx(cs, i), "ready", &r);
            tlr_json_int(json_object_array_get_idx(cs, i), "restartCount", &rc);
            ready += r;
            restarts += rc;
        }
        const char *phase = ks_obj_phase(ob)[0] ? ks_obj_phase(ob) : "Unknown";
        if (ks_obj_deleting(ob))
            phase = "Terminating";
        const char *ip = tlr_json_str(o, "status.podIP");
        const char *node = ks_obj_node_name(ob);
        tlr_buf_printf(b, ",\"%zu/%zu\",", ready, total);
        tlr_buf_add_json_str(b, phase);
        tlr_buf_printf(b, ",\"%" PRId64 "\",\"%s\",", restarts, agebuf);
        tlr_buf_add_json_str(b, ip ? ip : "<none>");
        tlr_buf_addc(b, ',');
        tlr_buf_add_json_str(b, node[0] ? node : "<none>");
        break;
    }
    case KS_NODE: {
        bool unsched = false;
        tlr_json_bool(o, "spec.unschedulable", &unsched);
        char st[64];
        snprintf(st, sizeof(st), "%s%s", cond_true(o, "Ready") ? "Ready" : "NotReady",
                 unsched ? ",SchedulingDisabled" : "");
        const char *ver = tlr_json_str(o, "status.nodeInfo.kubeletVersion");
        tlr_buf_printf(b, ",\"%s\",\"<none>\",\"%s\",", st, agebuf);
        tlr_buf_add_json_str(b, ver ? ver : "");
        break;
    }
    case KS_DEPLOYMENT: {
        int64_t want = 1, ready = 0, upd = 0, avail = 0;
        tlr_json_int(o, "spec.replicas", &want);
        tlr_json_int(o, "status.readyReplicas", &ready);
        tlr_json_int(o, "status.updatedReplicas", &upd);
        tlr_json_int(o, "status.availableReplicas", &avail);
        tlr_buf_printf(b, ",\"%" PRId64 "/%" PRId64 "\",%" PRId64 ",%" PRId64 ",\"%s\"", ready,
                       want, upd, avail, agebuf);
        break;
    }
    default:
        tlr_buf_printf(b, ",\"%s\"", agebuf);
    }
    tlr_buf_adds(b, "],\"object\":");
    tlr_buf_add(b, ks_obj_json(ob), ks_obj_json_len(ob));
    tlr_buf_adds(b, "}");
    json_object_put(o);
}

/* ------------------------------------------------------------------ */
/* routes                                                              */
/* ------------------------------------------------------------------ */

typedef struct route {
    const ks_kind *kind;
    const char *ns;    /* NULL for cluster scope / all namespaces */
    const char *name;  /* NULL for the collection */
    const char *sub;   /* NULL, "status", ... */
} route;

#define MAX_SEGS 12

static int split_path(char *p, const char **seg, size_t *n)
{
    *n = 0;
    char *save = NULL;
    for (char *t = strtok_r(p, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (*n == MAX_SEGS)
            return TLR_E_TOOBIG;
        seg[(*n)++] = t;
    }
    return TLR_OK;
}

static void list_body(tlr_buf *b, const ks_kind *k, const ks_objlist *l, bool table)
{
    char av[128];
    if (table) {
        tlr_buf_adds(b, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",");
    } else {
        tlr_buf_printf(b, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",", k->list_kind,
                       ks_kind_api_version(k, av, sizeof(av)));
    }
    tlr_buf_printf(b, "\"metadata\":{\"resourceVersion\":\"%" PRIu64 "\"", l->rv);
    if (l->cont)
        tlr_buf_printf(b, ",\"continue\":\"%s\"", l->cont);
    tlr_buf_adds(b, "},");
    if (table) {
        table_columns(b, k->id);
        tlr_buf_adds(b, ",\"rows\":[");
        for (size_t i = 0; i < l->n; i++) {
            if (i)
                tlr_buf_addc(b, ',');
            table_row(b, l->items[i]);
        }
    } else {
        tlr_buf_adds(b, "\"items\":[");
        for (size_t i = 0; i < l->n; i++) {
            if (i)
                tlr_buf_addc(b, ',');
            tlr_buf_add(b, ks_obj_json(l->items[i]), ks_obj_json_len(l->items[i]));
        }
    }
    tlr_buf_adds(b, "]}");
}

static int parse_selectors(const route *rt, const ks_request *r, ks_selector **labels,
                           ks_selector **fields, ks_status *st)
{
    *labels = *fields = NULL;
    int rc = ks_label_selector_parse(param(r, "labelSelector"), labels, st);
    if (!rc)
        rc = ks_field_selector_parse(rt->kind->id, param(r, "fieldSelector"), fields, st);
    if (rc) {
        ks_selector_free(*labels);
        *labels = NULL;
    }
    return rc;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 19)
        return TLR_E_PARSE;
    *out = strtoull(s, NULL, 10);
    return TLR_OK;
}

static void do_list(ks_api *a, const route *rt, const ks_request *r, ks_response *out)
{
    ks_status st = { 0 };
    ks_selector *labels = NULL, *fields = NULL;
    if (parse_selectors(rt, r, &labels, &fields, &st)) {
        reply_status(out, &st);
        return;
    }
    ks_list_opts o = { .ns = rt->ns, .labels = labels, .fields = fields,
                       .cont = param(r, "continue") };
    const char *lim = param(r, "limit");
    uint64_t limit = 0;
    if (lim && lim[0] && parse_u64(lim, &limit)) {
        reply_error(out, 400, "BadRequest", "limit: invalid value \"%.40s\"", lim);
        goto out;
    }
    o.limit = (size_t)limit;
    ks_objlist l = { 0 };
    if (ks_store_list(a->store, rt->kind->id, &o, &l, &st)) {
        reply_status(out, &st);
        goto out;
    }
    out->code = 200;
    out->content_type = "application/json";
    list_body(&out->body, rt->kind, &l, wants_table(r));
    ks_objlist_free(&l);
out:
    ks_selector_free(labels);
    ks_selector_free(fields);
}

/* ------------------------------------------------------------------ */
/* watch                                                               */
/* ------------------------------------------------------------------ */

struct ks_stream {
    ks_api *api;
    const ks_kind *kind;
    char *ns;
    ks_selector *labels, *fields;
    bool table, bookmarks, initial_end_bookmark, ended, gone;
    uint64_t rv;               /* last version sent */
    uint64_t gone_rv;
    ks_objlist initial;        /* ADDED events still to send */
    size_t initial_pos;
    struct timespec deadline, next_bookmark;
    tlr_buf pending;
    size_t pending_off;
};

void ks_stream_free(ks_stream *w)
{
    if (!w)
        return;
    free(w->ns);
    ks_selector_free(w->labels);
    ks_selector_free(w->fields);
    ks_objlist_free(&w->initial);
    tlr_buf_free(&w->pending);
    free(w);
}

static bool stream_matches(const ks_stream *w, const ks_obj *o)
{
    if (!o)
        return false;
    if (w->ns && strcmp(ks_obj_namespace(o), w->ns))
        return false;
    return ks_selector_matches_obj(w->labels, o) && ks_selector_matches_obj(w->fields, o);
}

static void stream_event(ks_stream *w, const char *type, const ks_obj *o)
{
    tlr_buf *b = &w->pending;
    tlr_buf_printf(b, "{\"type\":\"%s\",\"object\":", type);
    if (w->table) {
        tlr_buf_adds(b, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":"
                        "{\"resourceVersion\":\"");
        tlr_buf_printf(b, "%" PRIu64 "\"},", ks_obj_rv(o));
        table_columns(b, w->kind->id);
        tlr_buf_adds(b, ",\"rows\":[");
        table_row(b, o);
        tlr_buf_adds(b, "]}");
    } else {
        tlr_buf_add(b, ks_obj_json(o), ks_obj_json_len(o));
    }
    tlr_buf_adds(b, "}\n");
}

static void stream_bookmark(ks_stream *w, bool initial_end)
{
    char av[128];
    tlr_buf_printf(&w->pending,
                   "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\","
                   "\"metadata\":{\"resourceVersion\":\"%" PRIu64 "\"%s}}}\n",
                   w->kind->kind, ks_kind_api_version(w->kind, av, sizeof(av)), w->rv,
                   initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
                               : "");
}

static void ts_add_ms(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

static int64_t ms_until(const struct timespec *ts)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (ts->tv_sec - now.tv_sec) * 1000 + (ts->tv_nsec - now.tv_nsec) / 1000000;
}

/* Fill w->pending with whatever is due now; false when nothing was. */
static bool stream_produce(ks_stream *w)
{
    if (w->gone) {
        ks_status st = { .code = 410, .reason = "Expired" };
        snprintf(st.message, sizeof(st.message), "too old resource version: %" PRIu64 " (%" PRIu64 ")",
                 w->gone_rv, ks_store_oldest_rv(w->api->store));
        tlr_buf_adds(&w->pending, "{\"type\":\"ERROR\",\"object\":");
        status_json(&w->pending, &st);
        tlr_buf_adds(&w->pending, "}\n");
        w->gone = false;
        w->ended = true;
        return true;
    }
    if (w->initial_pos < w->initial.n) {
        size_t end = w->initial_pos + WATCH_BATCH;
        for (; w->initial_pos < w->initial.n && w->initial_pos < end; w->initial_pos++)
            stream_event(w, "ADDED", w->initial.items[w->initial_pos]);
        if (w->initial_pos == w->initial.n) {
            ks_objlist_free(&w->initial);
            w->initial_pos = 0;
            if (w->initial_end_bookmark)
                stream_bookmark(w, true);
        }
        return true;
    }
    ks_event *ev = NULL;
    size_t n = 0;
    uint64_t next = w->rv;
    int rc = ks_store_events_since(w->api->store, w->rv, KS_KIND_BIT(w->kind->id), WATCH_BATCH,
                                   &ev, &n, &next);
    if (rc == TLR_E_GONE) {
        w->gone = true;
        w->gone_rv = w->rv;
        return stream_produce(w);
    }
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        bool now = stream_matches(w, ev[i].obj);
        bool before = ev[i].type != KS_EV_ADDED && stream_matches(w, ev[i].prev);
        const char *type = NULL;
        if (ev[i].type == KS_EV_DELETED)
            type = now || before ? "DELETED" : NULL;
        else if (now && before)
            type = "MODIFIED";
        else if (now)
            type = "ADDED";
        else if (before)
            type = "DELETED";
        if (type) {
            stream_event(w, type, ev[i].obj);
            any = true;
        }
    }
    ks_events_free(ev, n);
    w->rv = next;
    if (!any && w->bookmarks && ms_until(&w->next_bookmark) <= 0) {
        stream_bookmark(w, false);
        any = true;
    }
    if (any && w->bookmarks)
        ts_add_ms(&w->next_bookmark, w->api->bookmark_ms);
    return any;
}

ssize_t ks_stream_read_timed(ks_stream *w, char *buf, size_t max, int wait_ms)
{
    struct timespec until;
    ts_add_ms(&until, wait_ms);
    for (;;) {
        if (w->pending_off < w->pending.len) {
            size_t n = w->pending.len - w->pending_off;
            if (n > max)
                n = max;
            memcpy(buf, w->pending.data + w->pending_off, n);
            w->pending_off += n;
            if (w->pending_off == w->pending.len) {
                tlr_buf_reset(&w->pending);
                w->pending_off = 0;
            }
            return (ssize_t)n;
        }
        if (w->ended || ms_until(&w->deadline) <= 0)
            return -1;
        if (stream_produce(w))
            continue;
        int64_t left = ms_until(&until);
        if (left <= 0)
            return 0;
        int64_t wait = left;
        int64_t dl = ms_until(&w->deadline);
        if (dl < wait)
            wait = dl;
        if (w->bookmarks && ms_until(&w->next_bookmark) < wait)
            wait = ms_until(&w->next_bookmark);
        if (wait > 1000)
            wait = 1000;
        if (wait < 1)
            wait = 1;
        if (ks_store_wait(w->api->store, w->rv, (int)wait) == TLR_E_CLOSED)
            return -1;
    }
}

ssize_t ks_stream_read(ks_stream *w, char *buf, size_t max)
{
    for (;;) {
        ssize_t n = ks_stream_read_timed(w, buf, max, 1000);
        if (n != 0)
            return n;
    }
}

static void do_watch(ks_api *a, const route *rt, const ks_request *r, ks_response *out)
{
    ks_status st = { 0 };
    ks_stream *w = tlr_calloc(1, sizeof(*w));
    tlr_buf_init(&w->pending, OUT_MAX);
    w->api = a;
    w->kind = rt->kind;
    w->ns = rt->ns ? tlr_strdup(rt->ns) : NULL;
    w->table = wants_table(r);
    w->bookmarks = param_true(r, "allowWatchBookmarks");
    if (parse_selectors(rt, r, &w->labels, &w->fields, &st)) {
        ks_stream_free(w);
        reply_status(out, &st);
        return;
    }
    const char *ts = param(r, "timeoutSeconds");
    uint64_t tsec = DEFAULT_WATCH_TIMEOUT_S;
    if (ts && ts[0] && parse_u64(ts, &tsec)) {
        ks_stream_free(w);
        reply_error(out, 400, "BadRequest", "timeoutSeconds: invalid value \"%.40s\"", ts);
        return;
    }
    if (tsec > 86400)
        tsec = 86400;
    ts_add_ms(&w->deadline, (int64_t)tsec * 1000);
    ts_add_ms(&w->next_bookmark, a->bookmark_ms);
    const char *rvs = param(r, "resourceVersion");
    bool send_initial = param_true(r, "sendInitialEvents");
    uint64_t rv = 0;
    if (rvs && rvs[0] && parse_u64(rvs, &rv)) {
        ks_stream_free(w);
        reply_error(out, 400, "BadRequest", "resourceVersion: invalid value \"%.40s\"", rvs);
        return;
    }
    if (rv == 0 || send_initial) {
        ks_list_opts o = { .ns = rt->ns, .labels = w->labels, .fields = w->fields };
        if (ks_store_list(a->store, rt->kind->id, &o, &w->initial, &st)) {
            ks_stream_free(w);
            reply_status(out, &st);
            return;
        }
        w->rv = w->initial.rv;
        w->initial_end_bookmark = send_initial && w->bookmarks;
    } else {
        w->rv = rv;
        if (rv < ks_store_oldest_rv(a->store)) {
            w->gone = true;
            w->gone_rv = rv;
        }
    }
    out->code = 200;
    out->content_type = "application/json";
    out->stream = w;
}

/* ------------------------------------------------------------------ */
/* single objects                                                      */
/* ------------------------------------------------------------------ */

static int parse_body(const ks_request *r, json_object **out, ks_status *st)
{
    if (r->content_type && r->content_type[0] &&
        strncasecmp(r->content_type, "application/json", 16) &&
        strncasecmp(r->content_type, "*/*", 3))
        return ks_status_set(st, TLR_E_UNIMPLEMENTED, 415, "UnsupportedMediaType",
                             "the body of the request was in an unknown format - accepted "
                             "media types include: application/json");
    char err[200];
    if (tlr_json_parse(r->body ? r->body : "", r->body ? r->body_len : 0, KS_MAX_BODY, out, err,
                       sizeof(err)))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "the body of the request could not be decoded: %s", err);
    return TLR_OK;
}

static unsigned write_flags(const ks_request *r)
{
    const char *dry = param(r, "dryRun");
    return dry && !strcmp(dry, "All") ? KS_W_DRY_RUN : 0;
}

static void do_scale(ks_api *a, const route *rt, const ks_request *r, ks_response *out);

static void do_delete(ks_api *a, const route *rt, const ks_request *r, ks_response *out)
{
    ks_status st = { 0 };
    ks_delete_opts o = { .grace_seconds = -1 };
    json_object *body = NULL;
    if (r->body_len) {
        if (parse_body(r, &body, &st)) {
            reply_status(out, &st);
            return;
        }
    }
    const char *prop = param(r, "propagationPolicy");
    if (!prop)
        prop = tlr_json_str(body, "propagationPolicy");
    if (prop && !strcmp(prop, "Orphan"))
        o.propagation = KS_PROPAGATE_ORPHAN;
    else if (prop && !strcmp(prop, "Foreground"))
        o.propagation = KS_PROPAGATE_FOREGROUND;
    else if (prop && strcmp(prop, "Background")) {
        json_object_put(body);
        reply_error(out, 422, "Invalid", "propagationPolicy: Unsupported value: \"%.60s\"", prop);
        return;
    }
    int64_t g;
    if (!tlr_json_int(body, "gracePeriodSeconds", &g))
        o.grace_seconds = g;
    o.precondition_uid = tlr_json_str(body, "preconditions.uid");
    o.precondition_rv = tlr_json_str(body, "preconditions.resourceVersion");
    ks_obj *res = NULL;
    if (write_flags(r) & KS_W_DRY_RUN) {
        if (ks_store_get(a->store, rt->kind->id, rt->ns, rt->name, &res, &st))
            reply_status(out, &st);
        else
            reply_obj(out, 200, res);
    } else if (ks_store_delete(a->store, rt->kind->id, rt->ns, rt->name, &o, &res, &st)) {
        reply_status(out, &st);
    } else {
        reply_obj(out, ks_obj_deleting(res) ? 202 : 200, res);
    }
    ks_obj_unref(res);
    json_object_put(body);
}

static void do_delete_collection(ks_api *a, const route *rt, const ks_request *r,
                                 ks_response *out)
{
    ks_status st = { 0 };
    ks_selector *labels = NULL, *fields = NULL;
    if (parse_selectors(rt, r, &labels, &fields, &st)) {
        reply_status(out, &st);
        return;
    }
    ks_list_opts o = { .ns = rt->ns, .labels = labels, .fields = fields };
    ks_objlist l = { 0 };
    if (ks_store_list(a->store, rt->kind->id, &o, &l, &st)) {
        reply_status(out, &st);
    } else {
        for (size_t i = 0; i < l.n; i++)
            ks_store_delete(a->store, rt->kind->id, ks_obj_namespace(l.items[i]),
                            ks_obj_name(l.items[i]), NULL, NULL, NULL);
        out->code = 200;
        out->content_type = "application/json";
        list_body(&out->body, rt->kind, &l, false);
    }
    ks_objlist_free(&l);
    ks_selector_free(labels);
    ks_selector_free(fields);
}

static void do_subresource_post(ks_api *a, const route *rt, const ks_request *r,
                                ks_response *out)
{
    ks_status st = { 0 };
    json_object *body = NULL;
    if (parse_body(r, &body, &st)) {
        reply_status(out, &st);
        return;
    }
    int rc;
    if (!strcmp(rt->sub, "binding"))
        rc = ks_pods_bind(a->store, rt->ns, rt->name, body, &st);
    else
        rc = ks_pods_evict(a->store, rt->ns, rt->name, body, &st);
    json_object_put(body);
    if (rc) {
        reply_status(out, &st);
        return;
    }
    reply_text(out, 201, "application/json",
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
               "\"Success\",\"code\":201}");
}

static void do_item(ks_api *a, const route *rt, const ks_request *r, ks_response *out)
{
    ks_status st = { 0 };
    const char *m = r->method;
    ks_kind_id kid = rt->kind->id;
    const char *sub = rt->sub;
    unsigned sub_bit = !sub ? 0
                       : !strcmp(sub, "status")   ? KS_SUB_STATUS
                       : !strcmp(sub, "scale")    ? KS_SUB_SCALE
                       : !strcmp(sub, "binding")  ? KS_SUB_BINDING
                       : !strcmp(sub, "eviction") ? KS_SUB_EVICTION
                                                  : 0;
    if (sub && !(rt->kind->subresources & sub_bit)) {
        reply_error(out, 404, "NotFound", "the server could not find the requested resource");
        return;
    }
    if (sub_bit == KS_SUB_BINDING || sub_bit == KS_SUB_EVICTION) {
        if (strcmp(m, "POST"))
            reply_error(out, 405, "MethodNotAllowed",
                        "the server does not allow this method on the requested resource");
        else
            do_subresource_post(a, rt, r, out);
        return;
    }
    if (sub_bit == KS_SUB_SCALE) {
        do_scale(a, rt, r, out);
        return;
    }
    unsigned flags = write_flags(r) | (sub_bit == KS_SUB_STATUS ? KS_W_STATUS : 0);
    ks_obj *res = NULL;
    int rc;
    if (!strcmp(m, "GET")) {
        rc = ks_store_get(a->store, kid, rt->ns, rt->name, &res, &st);
    } else if (!strcmp(m, "PUT")) {
        json_object *body = NULL;
        rc = parse_body(r, &body, &st);
        if (!rc)
            rc = ks_store_update(a->store, kid, rt->ns, rt->name, body, flags, &res, &st);
        json_object_put(body);
    } else if (!strcmp(m, "PATCH")) {
        ks_patch_type t;
        if (ks_patch_type_parse(r->content_type, &t)) {
            reply_error(out, 415, "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media "
                        "types include: application/json-patch+json, "
                        "application/merge-patch+json, application/strategic-merge-patch+json");
            return;
        }
        rc = ks_store_patch(a->store, kid, rt->ns, rt->name, t, r->body ? r->body : "",
                            r->body_len, flags, &res, &st);
    } else if (!strcmp(m, "DELETE") && !sub) {
        do_delete(a, rt, r, out);
        return;
    } else {
        reply_error(out, 405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource");
        return;
    }
    if (rc) {
        reply_status(out, &st);
    } else if (!strcmp(m, "GET") && wants_table(r)) {
        ks_objlist one = { .items = &res, .n = 1, .rv = ks_obj_rv(res) };
        out->code = 200;
        out->content_type = "application/json";
        list_body(&out->body, rt->kind, &one, true);
    } else {
        reply_obj(out, 200, res);
    }
    ks_obj_unref(res);
}

/* Scale: an autoscaling/v1 view of spec.replicas. */
typedef struct scale_arg {
    int64_t replicas;
} scale_arg;

static int scale_mutate(json_object *obj, void *arg, ks_status *st)
{
    const scale_arg *s = arg;
    json_object *spec = tlr_json_obj(obj, "spec");
    if (!spec)
        return ks_status_set(st, TLR_E_INVAL, 422, "Invalid", "object has no spec");
    json_object_object_add(spec, "replicas", json_object_new_int64(s->replicas));
    return TLR_OK;
}

static json_object *scale_of(const ks_obj *o)
{
    json_object *j = ks_obj_parse(o);
    int64_t want = 1, have = 0;
    tlr_json_int(j, "spec.replicas", &want);
    tlr_json_int(j, "status.replicas", &have);
    json_object *s = json_object_new_object();
    json_object_object_add(s, "kind", json_object_new_string("Scale"));
    json_object_object_add(s, "apiVersion", json_object_new_string("autoscaling/v1"));
    json_object *meta = json_object_new_object();
    static const char *const keep[] = { "name", "namespace", "uid", "resourceVersion",
                                        "creationTimestamp" };
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_object *v = tlr_json_get(j, "metadata");
        v = v ? json_object_object_get(v, keep[i]) : NULL;
        if (v)
            json_object_object_add(meta, keep[i], json_object_get(v));
    }
    json_object_object_add(s, "metadata", meta);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "replicas", json_object_new_int64(want));
    json_object_object_add(s, "spec", spec);
    json_object *status = json_object_new_object();
    json_object_object_add(status, "replicas", json_object_new_int64(have));
    json_object_object_add(s, "status", status);
    json_object_put(j);
    return s;
}

static void do_scale(ks_api *a, const route *rt, const ks_request *r, ks_response *out)
{
    ks_status st = { 0 };
    ks_obj *cur = NULL;
    json_object *sc = NULL, *next = NULL;
    if (ks_store_get(a->store, rt->kind->id, rt->ns, rt->name, &cur, &st)) {
        reply_status(out, &st);
        return;
    }
    sc = scale_of(cur);
    int rc = TLR_OK;
    if (!strcmp(r->method, "PUT")) {
        rc = parse_body(r, &next, &st);
    } else if (!strcmp(r->method, "PATCH")) {
        ks_patch_type t;
        if (ks_patch_type_parse(r->content_type, &t))
            rc = ks_status_set(&st, TLR_E_UNIMPLEMENTED, 415, "UnsupportedMediaType",
                               "unsupported patch type");
        else
            rc = ks_patch_apply(t == KS_PATCH_STRATEGIC ? KS_PATCH_MERGE : t, rt->kind->id, sc,
                                r->body ? r->body : "", r->body_len, &next, &st);
    } else if (strcmp(r->method, "GET")) {
        rc = ks_status_set(&st, TLR_E_INVAL, 405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource");
    }
    if (!rc && next) {
        scale_arg sa = { 0 };
        if (tlr_json_int(next, "spec.replicas", &sa.replicas) || sa.replicas < 0 ||
            sa.replicas > INT32_MAX) {
            rc = ks_status_set(&st, TLR_E_INVAL, 422, "Invalid",
                               "Scale \"%s\" is invalid: spec.replicas: Invalid value", rt->name);
        } else {
            ks_obj *res = NULL;
            rc = ks_store_modify(a->store, rt->kind->id, rt->ns, rt->name, write_flags(r),
                                 scale_mutate, &sa, &res, &st);
            if (!rc) {
                json_object_put(sc);
                sc = scale_of(res);
                ks_obj_unref(res);
            }
        }
    }
    if (rc) {
        reply_status(out, &st);
    } else {
        out->code = 200;
        out->content_type = "application/json";
        tlr_buf_adds(&out->body, tlr_json_to_string(sc, JSON_C_TO_STRING_PLAIN));
    }
    json_object_put(sc);
    json_object_put(next);
    ks_obj_unref(cur);
}

static void do_collection(ks_api *a, const route *rt, const ks_request *r, ks_response *out)
{
    const char *m = r->method;
    if (!strcmp(m, "GET")) {
        if (param_true(r, "watch"))
            do_watch(a, rt, r, out);
        else
            do_list(a, rt, r, out);
        return;
    }
    if (!strcmp(m, "POST")) {
        ks_status st = { 0 };
        json_object *body = NULL;
        ks_obj *res = NULL;
        int rc = parse_body(r, &body, &st);
        if (!rc)
            rc = ks_store_create_obj(a->store, rt->kind->id, rt->ns, body, write_flags(r), &res,
                                     &st);
        json_object_put(body);
        if (rc)
            reply_status(out, &st);
        else
            reply_obj(out, 201, res);
        ks_obj_unref(res);
        return;
    }
    if (!strcmp(m, "DELETE")) {
        do_delete_collection(a, rt, r, out);
        return;
    }
    reply_error(out, 405, "MethodNotAllowed",
                "the server does not allow this method on the requested resource");
}

/* POST /api/v1/namespaces/NS/bindings: the Binding names the pod. */
static void do_bindings(ks_api *a, const char *ns, const ks_request *r, ks_response *out)
{
    ks_status st = { 0 };
    json_object *body = NULL;
    if (parse_body(r, &body, &st)) {
        reply_status(out, &st);
        return;
    }
    const char *pod = tlr_json_str(body, "metadata.name");
    int rc = pod ? ks_pods_bind(a->store, ns, pod, body, &st)
                 : ks_status_set(&st, TLR_E_INVAL, 422, "Invalid",
                                 "Binding is invalid: metadata.name: Required value");
    json_object_put(body);
    if (rc)
        reply_status(out, &st);
    else
        reply_text(out, 201, "application/json",
                   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                   "\"Success\",\"code\":201}");
}

static bool authorized(const ks_api *a, const ks_request *r)
{
    if (!a->token)
        return true;
    const char *h = r->authorization;
    if (!h || strncasecmp(h, "Bearer ", 7))
        return false;
    const char *t = h + 7;
    size_t lt = strlen(t), la = strlen(a->token);
    unsigned diff = (unsigned)(lt ^ la);
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)a->token[i] ^ (unsigned char)(i < lt ? t[i] : 0);
    return diff == 0;
}

void ks_api_handle(ks_api *a, const ks_request *r, ks_response *out)
{
    memset(out, 0, sizeof(*out));
    tlr_buf_init(&out->body, OUT_MAX);
    const char *path = r->path ? r->path : "/";
    if (!strcmp(path, "/healthz") || !strcmp(path, "/livez") || !strcmp(path, "/readyz")) {
        reply_text(out, 200, "text/plain", "ok");
        return;
    }
    if (!strcmp(path, "/version")) {
        reply_text(out, 200, "application/json",
                   "{\"major\":\"1\",\"minor\":\"31\",\"gitVersion\":\"v1.31.0-kubesim\","
                   "\"gitCommit\":\"kubesim\",\"gitTreeState\":\"clean\",\"buildDate\":"
                   "\"2024-08-13T00:00:00Z\",\"goVersion\":\"go1.22.5\",\"compiler\":\"gc\","
                   "\"platform\":\"linux/amd64\"}");
        return;
    }
    if (!authorized(a, r)) {
        reply_error(out, 401, "Unauthorized", "Unauthorized");
        return;
    }
    if (r->body_too_big || r->body_len > KS_MAX_BODY) {
        reply_error(out, 413, "RequestEntityTooLarge",
                    "the server has received a request that is too large (limit %u bytes)",
                    KS_MAX_BODY);
        return;
    }
    if (!r->method) {
        reply_error(out, 400, "BadRequest", "no method");
        return;
    }
    size_t plen = strlen(path);
    if (plen > 4096) {
        reply_error(out, 414, "RequestURITooLong", "the request path is too long");
        return;
    }
    char *copy = tlr_strdup(path);
    const char *seg[MAX_SEGS];
    size_t n = 0;
    if (split_path(copy, seg, &n)) {
        reply_error(out, 404, "NotFound", "the server could not find the requested resource");
        goto out;
    }
    bool core = n >= 1 && !strcmp(seg[0], "api");
    bool apis = n >= 1 && !strcmp(seg[0], "apis");
    if (!core && !apis) {
        reply_error(out, 404, "NotFound", "the server could not find the requested resource");
        goto out;
    }
    const char *group = core ? "" : (n >= 2 ? seg[1] : "");
    size_t base = core ? 2 : 3; /* segments before the resource part */
    if (n < base || (core && strcmp(seg[1], "v1"))) {
        if (!strcmp(r->method, "GET") && discovery(seg + 1, n - 1, core, out))
            goto out;
        tlr_buf_reset(&out->body);
        reply_error(out, 404, "NotFound", "the server could not find the requested resource");
        goto out;
    }
    const char *version = seg[base - 1];
    if (n == base) {
        if (!strcmp(r->method, "GET") && discovery(seg + 1, n - 1, core, out))
            goto out;
        tlr_buf_reset(&out->body);
        reply_error(out, 404, "NotFound", "the server could not find the requested resource");
        goto out;
    }
    const char **rest = seg + base;
    size_t nr = n - base;
    route rt = { 0 };
    if (nr >= 3 && !strcmp(rest[0], "namespaces")) {
        const ks_kind *k = ks_kind_find(group, version, rest[2]);
        if (k && k->namespaced) {
            rt.ns = rest[1];
            rest += 2;
            nr -= 2;
        } else if (core && nr == 3 && !strcmp(rest[2], "bindings")) {
            if (strcmp(r->method, "POST"))
                reply_error(out, 405, "MethodNotAllowed", "bindings: only create is allowed");
            else
                do_bindings(a, rest[1], r, out);
            goto out;
        }
    }
    rt.kind = ks_kind_find(group, version, rest[0]);
    if (!rt.kind || nr > 3) {
        reply_error(out, 404, "NotFound", "the server could not find the requested resource");
        goto out;
    }
    if (nr >= 2)
        rt.name = rest[1];
    if (nr == 3)
        rt.sub = rest[2];
    if (rt.kind->namespaced && rt.name && !rt.ns) {
        reply_error(out, 404, "NotFound", "the server could not find the requested resource");
        goto out;
    }
    if (!rt.name)
        do_collection(a, &rt, r, out);
    else
        do_item(a, &rt, r, out);
out:
    free(copy);
    if (out->code >= 500 || (out->code >= 400 && a->log && tlr_log_enabled(a->log, TLR_LOG_DEBUG)))
        TLR_DEBUG(a->log, "request failed", TLR_S("method", r->method), TLR_S("path", path),
                  TLR_I("code", out->code));
    else if (a->log && tlr_log_enabled(a->log, TLR_LOG_DEBUG))
        /* Every request served, so a test can count the API calls a client makes. */
        TLR_DEBUG(a->log, "request", TLR_S("method", r->method), TLR_S("path", path),
                  TLR_I("code", out->code));
}
