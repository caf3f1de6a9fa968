/* ds_fake.c - recording fakes of the disruptor's ops (ds_fake.h). */
#include "ds_fake.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"
#include "tlr_solve.h"

static void record(ds_fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void record(ds_fake *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tlr_strv_vaddf(&f->calls, &f->ncalls, fmt, ap);
    va_end(ap);
}

static int64_t fake_wall(void *arg)
{
    return ((ds_fake *)arg)->now_ms;
}

void ds_fake_init(ds_fake *f)
{
    memset(f, 0, sizeof(*f));
    f->now_ms = 1800000000000LL;
    f->clock.wall_ms = fake_wall;
    f->clock.mono_ms = fake_wall;
    f->clock.arg = f;
}

void ds_fake_forget_calls(ds_fake *f)
{
    for (size_t i = 0; i < f->ncalls; i++)
        free(f->calls[i]);
    f->ncalls = 0;
}

void ds_fake_clear(ds_fake *f)
{
    ds_fake_forget_calls(f);
    free(f->calls);
    tlr_kclaims_free(&f->claims);
    tlr_knodes_free(&f->nodes);
    for (size_t i = 0; i < f->npods; i++)
        tlr_kubeobj_free(f->pods[i]);
    for (size_t i = 0; i < f->npdbs; i++)
        tlr_kubeobj_free(f->pdbs[i]);
    if (f->snap)
        protobuf_c_message_free_unpacked(&f->snap->base, NULL);
    ds_sqs_msgs_free(&f->sqs);
}

size_t ds_fake_count(const ds_fake *f, const char *prefix)
{
    size_t n = 0;
    for (size_t i = 0; i < f->ncalls; i++)
        n += strncmp(f->calls[i], prefix, strlen(prefix)) == 0;
    return n;
}

const char *ds_fake_call(const ds_fake *f, const char *prefix, size_t k)
{
    for (size_t i = 0; i < f->ncalls; i++)
        if (strncmp(f->calls[i], prefix, strlen(prefix)) == 0 && k-- == 0)
            return f->calls[i];
    return NULL;
}

/* ---- builders ---------------------------------------------------------- */

static char *pid_of(const char *instance)
{
    char b[128];
    snprintf(b, sizeof(b), "aws:///us-east-1a/%s", instance);
    return tlr_strdup(b);
}

tlr_kclaim *ds_fake_add_claim(ds_fake *f, const char *name, const char *pool, const char *instance)
{
    f->claims.v = tlr_realloc(f->claims.v, (f->claims.n + 1) * sizeof(*f->claims.v));
    tlr_kclaim *c = &f->claims.v[f->claims.n++];
    memset(c, 0, sizeof(*c));
    c->name = tlr_strdup(name);
    char uid[128];
    snprintf(uid, sizeof(uid), "uid-%s", name);
    c->uid = tlr_strdup(uid);
    c->nodepool = tlr_strdup(pool);
    c->provider_id = instance ? pid_of(instance) : tlr_strdup("");
    c->instance_id = tlr_strdup(instance ? instance : "");
    c->node_name = tlr_strdup("");
    c->creation_ms = f->now_ms - 3600000;
    c->initialized = c->launched = instance != NULL;
    return c;
}

tlr_knode *ds_fake_add_node(ds_fake *f, const char *name, const char *pool, const char *instance)
{
    f->nodes.v = tlr_realloc(f->nodes.v, (f->nodes.n + 1) * sizeof(*f->nodes.v));
    tlr_knode *n = &f->nodes.v[f->nodes.n++];
    memset(n, 0, sizeof(*n));
    n->name = tlr_strdup(name);
    char uid[128];
    snprintf(uid, sizeof(uid), "uid-%s", name);
    n->uid = tlr_strdup(uid);
    n->provider_id = pid_of(instance);
    n->nodepool = tlr_strdup(pool ? pool : "");
    n->ready = true;
    return n;
}

tlr_kclaim *ds_fake_claim(ds_fake *f, const char *name)
{
    for (size_t i = 0; i < f->claims.n; i++)
        if (!strcmp(f->claims.v[i].name, name))
            return &f->claims.v[i];
    return NULL;
}

tlr_knode *ds_fake_node(ds_fake *f, const char *name)
{
    for (size_t i = 0; i < f->nodes.n; i++)
        if (!strcmp(f->nodes.v[i].name, name))
            return &f->nodes.v[i];
    return NULL;
}

static Tailor__V1__Pod *pod_copy(const Tailor__V1__Pod *p)
{
    size_t len = tailor__v1__pod__get_packed_size(p);
    uint8_t *buf = tlr_malloc(len + 1);
    tailor__v1__pod__pack(p, buf);
    Tailor__V1__Pod *c = tailor__v1__pod__unpack(NULL, len, buf);
    free(buf);
    return c;
}

void ds_fake_add_pod(ds_fake *f, const Tailor__V1__Pod *p)
{
    f->pods[f->npods++] = pod_copy(p);
}

Tailor__V1__Pod *ds_fake_pod(ds_fake *f, const char *name)
{
    for (size_t i = 0; i < f->npods; i++)
        if (!strcmp(f->pods[i]->name, name))
            return f->pods[i];
    return NULL;
}

size_t ds_fake_pods_on(const ds_fake *f, const char *node)
{
    size_t n = 0;
    for (size_t i = 0; i < f->npods; i++)
        n += !strcmp(f->pods[i]->node_name, node);
    return n;
}

void ds_fake_add_sqs(ds_fake *f, const char *id, const char *body)
{
    f->sqs.v = tlr_realloc(f->sqs.v, (f->sqs.n + 1) * sizeof(*f->sqs.v));
    ds_sqs_msg *m = &f->sqs.v[f->sqs.n++];
    m->id = tlr_strdup(id);
    char r[128];
    snprintf(r, sizeof(r), "rh-%s", id);
    m->receipt = tlr_strdup(r);
    m->body = tlr_strdup(body);
}

/* ---- Kubernetes -------------------------------------------------------- */

static int k_claims_list(void *arg, tlr_kclaims *out)
{
    ds_fake *f = arg;
    out->v = tlr_calloc(f->claims.n + 1, sizeof(*out->v));
    out->n = f->claims.n;
    for (size_t i = 0; i < f->claims.n; i++)
        tlr_kclaim_copy(&f->claims.v[i], &out->v[i]);
    return TLR_OK;
}

static int k_nodes_list(void *arg, tlr_knodes *out)
{
    ds_fake *f = arg;
    out->v = tlr_calloc(f->nodes.n + 1, sizeof(*out->v));
    out->n = f->nodes.n;
    for (size_t i = 0; i < f->nodes.n; i++)
        tlr_knode_copy(&f->nodes.v[i], &out->v[i]);
    return TLR_OK;
}

static void drop_claim(ds_fake *f, size_t i)
{
    tlr_kclaim_clear(&f->claims.v[i]);
    f->claims.v[i] = f->claims.v[f->claims.n - 1];
    f->claims.n--;
}

static void drop_node(ds_fake *f, size_t i)
{
    tlr_knode_clear(&f->nodes.v[i]);
    f->nodes.v[i] = f->nodes.v[f->nodes.n - 1];
    f->nodes.n--;
}

static int k_finalizer(void *arg, ds_kind kind, const char *name, bool add)
{
    ds_fake *f = arg;
    record(f, "finalizer %s %s %s", kind == DS_KIND_NODE ? "node" : "nodeclaim", name,
           add ? "add" : "remove");
    if (f->finalizer_rc)
        return f->finalizer_rc;
    if (kind == DS_KIND_NODE) {
        for (size_t i = 0; i < f->nodes.n; i++)
            if (!strcmp(f->nodes.v[i].name, name)) {
                f->nodes.v[i].finalizer = add;
                if (!add && f->nodes.v[i].deletion_ms)
                    drop_node(f, i);
                return TLR_OK;
            }
    } else {
        for (size_t i = 0; i < f->claims.n; i++)
            if (!strcmp(f->claims.v[i].name, name)) {
                f->claims.v[i].finalizer = add;
                if (!add && f->claims.v[i].deletion_ms)
                    drop_claim(f, i);
                return TLR_OK;
            }
    }
    return TLR_E_NOTFOUND;
}

static int k_taint(void *arg, const char *node, bool on)
{
    ds_fake *f = arg;
    record(f, "taint %s %s", node, on ? "on" : "off");
    tlr_knode *n = ds_fake_node(f, node);
    if (!n)
        return TLR_E_NOTFOUND;
    n->tainted = on;
    return TLR_OK;
}

static int k_annotate(void *arg, ds_kind kind, const char *name, const char *key, const char *value)
{
    ds_fake *f = arg;
    record(f, "annotate %s %s=%s", name, key, value ? value : "(removed)");
    if (kind == DS_KIND_NODECLAIM && !strcmp(key, DS_TERMINATION_TS)) {
        tlr_kclaim *c = ds_fake_claim(f, name);
        if (!c)
            return TLR_E_NOTFOUND;
        tlr_time_parse(value, &c->term_ts_ms);
    }
    return TLR_OK;
}

static int k_remove(void *arg, ds_kind kind, const char *name)
{
    ds_fake *f = arg;
    record(f, "delete %s %s", kind == DS_KIND_NODE ? "node" : "nodeclaim", name);
    if (kind == DS_KIND_NODE) {
        for (size_t i = 0; i < f->nodes.n; i++)
            if (!strcmp(f->nodes.v[i].name, name)) {
                if (f->nodes.v[i].finalizer) {
                    if (!f->nodes.v[i].deletion_ms)
                        f->nodes.v[i].deletion_ms = f->now_ms;
                } else {
                    drop_node(f, i);
                }
                return TLR_OK;
            }
    } else {
        for (size_t i = 0; i < f->claims.n; i++)
            if (!strcmp(f->claims.v[i].name, name)) {
                if (f->claims.v[i].finalizer) {
                    if (!f->claims.v[i].deletion_ms)
                        f->claims.v[i].deletion_ms = f->now_ms;
                } else {
                    drop_claim(f, i);
                }
                return TLR_OK;
            }
    }
    return TLR_E_NOTFOUND;
}

static int k_event(void *arg, const char *kind, const char *ns, const char *name, const char *uid,
                   const char *type, const char *reason, const char *message)
{
    ds_fake *f = arg;
    (void)ns, (void)uid;
    record(f, "event %s %s %s %s: %s", kind, name, type, reason, message);
    return TLR_OK;
}

static int k_workload(void *arg, const char *ns, const char *owner_kind, const char *owner_name,
                      ds_workload *out)
{
    ds_fake *f = arg;
    (void)ns;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < f->nworkloads; i++) {
        const ds_fake_workload *w = &f->workloads[i];
        if (strcmp(w->owner_kind, owner_kind) || strcmp(w->owner_name, owner_name))
            continue;
        *out = w->w;
        out->kind = tlr_strdup(w->w.kind);
        out->ns = tlr_strdup(w->w.ns ? w->w.ns : "default");
        out->name = tlr_strdup(w->w.name);
        out->restarted_for = tlr_strdup(w->w.restarted_for ? w->w.restarted_for : "");
        return TLR_OK;
    }
    return TLR_E_NOTFOUND;
}

static int k_restart(void *arg, const char *ns, const char *deployment, const char *at,
                     const char *reason)
{
    ds_fake *f = arg;
    (void)at;
    record(f, "restart %s/%s for %s", ns, deployment, reason);
    for (size_t i = 0; i < f->nworkloads; i++)
        if (!strcmp(f->workloads[i].w.name, deployment))
        {
            snprintf(f->workloads[i].restarted, sizeof(f->workloads[i].restarted), "%s", reason);
            f->workloads[i].w.restarted_for = f->workloads[i].restarted;
        }
    return TLR_OK;
}

static int k_condition(void *arg, const char *claim, const char *type, const char *status,
                       const char *reason, const char *message)
{
    ds_fake *f = arg;
    record(f, "condition %s %s=%s %s: %s", claim, type, status ? status : "(removed)", reason,
           message ? message : "");
    tlr_kclaim *c = ds_fake_claim(f, claim);
    if (!c)
        return TLR_E_NOTFOUND;
    if (!status)
        return TLR_OK;
    if (!strcmp(type, "Drained")) {
        snprintf(c->drained, sizeof(c->drained), "%s", status);
        free(c->drained_msg);
        c->drained_msg = tlr_strdup(message ? message : "");
    } else if (!strcmp(type, "InstanceTerminating")) {
        snprintf(c->terminating, sizeof(c->terminating), "%s", status);
    }
    return TLR_OK;
}

static int k_status(void *arg, ds_kind kind, const char *name, const char *rv, const char *status)
{
    ds_fake *f = arg;
    record(f, "status %s %s rv=%s %s", kind == DS_KIND_NODEPOOL ? "nodepool" : "object", name,
           rv, status);
    return TLR_OK;
}

ds_kube_ops ds_fake_kube(ds_fake *f)
{
    return (ds_kube_ops){ .claims_list = k_claims_list, .nodes_list = k_nodes_list,
                          .finalizer = k_finalizer, .taint = k_taint, .annotate = k_annotate,
                          .remove = k_remove, .event = k_event, .workload = k_workload,
                          .restart = k_restart, .condition = k_condition, .status = k_status,
                          .arg = f };
}

/* ---- drain ------------------------------------------------------------- */

static int d_list_pods(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n)
{
    ds_fake *f = arg;
    *pods = tlr_calloc(f->npods + 1, sizeof(**pods));
    *n = 0;
    for (size_t i = 0; i < f->npods; i++)
        if (!strcmp(f->pods[i]->node_name, node))
            (*pods)[(*n)++] = pod_copy(f->pods[i]);
    return TLR_OK;
}

static int d_list_pdbs(void *arg, Tailor__V1__PodDisruptionBudget ***pdbs, size_t *n)
{
    ds_fake *f = arg;
    *pdbs = tlr_calloc(f->npdbs + 1, sizeof(**pdbs));
    for (size_t i = 0; i < f->npdbs; i++) {
        size_t len = tailor__v1__pod_disruption_budget__get_packed_size(f->pdbs[i]);
        uint8_t *b = tlr_malloc(len + 1);
        tailor__v1__pod_disruption_budget__pack(f->pdbs[i], b);
        (*pdbs)[i] = tailor__v1__pod_disruption_budget__unpack(NULL, len, b);
        free(b);
    }
    *n = f->npdbs;
    return TLR_OK;
}

static void drop_pod(ds_fake *f, const char *name)
{
    for (size_t i = 0; i < f->npods; i++)
        if (!strcmp(f->pods[i]->name, name)) {
            tlr_kubeobj_free(f->pods[i]);
            f->pods[i] = f->pods[--f->npods];
            return;
        }
}

static int d_evict(void *arg, const Tailor__V1__Pod *pod, char *msg, size_t len)
{
    ds_fake *f = arg;
    record(f, "evict %s/%s", pod->namespace_, pod->name);
    for (size_t i = 0; f->refuse_app && i < pod->n_labels; i++)
        if (!strcmp(pod->labels[i]->key, "app") && !strcmp(pod->labels[i]->value, f->refuse_app)) {
            snprintf(msg, len, "Cannot evict pod as it would violate the pod's disruption budget.");
            return TLR_E_THROTTLED;
        }
    drop_pod(f, pod->name);
    return TLR_OK;
}

static int d_delete(void *arg, const Tailor__V1__Pod *pod, int64_t grace_s, char *msg, size_t len)
{
    ds_fake *f = arg;
    (void)msg, (void)len;
    record(f, "delete pod %s/%s grace=%lld", pod->namespace_, pod->name, (long long)grace_s);
    drop_pod(f, pod->name);
    return TLR_OK;
}

tlr_drain_ops ds_fake_drain(ds_fake *f)
{
    return (tlr_drain_ops){ .list_pods = d_list_pods, .list_pdbs = d_list_pdbs, .evict = d_evict,
                            .delete_pod = d_delete, .arg = f };
}

/* ---- launcher ---------------------------------------------------------- */

static int l_launch(void *arg, const Tailor__V1__LaunchRequest *req, Tailor__V1__LaunchResponse **out)
{
    ds_fake *f = arg;
    Tailor__V1__LaunchResponse *resp = tlr_malloc(sizeof(*resp));
    tailor__v1__launch_response__init(resp);
    resp->results = tlr_calloc(req->n_nodeclaims + 1, sizeof(*resp->results));
    for (size_t i = 0; i < req->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *nc = req->nodeclaims[i];
        record(f, "launch %s %s (%s)", nc->name,
               nc->n_instance_type_options ? nc->instance_type_options[0]->name : "?", req->reason);
        char inst[64];
        snprintf(inst, sizeof(inst), "i-new%d", ++f->launched);
        if (!ds_fake_claim(f, nc->name)) {
            tlr_kclaim *c = ds_fake_add_claim(f, nc->name, nc->nodepool, inst);
            c->creation_ms = f->now_ms;
            c->initialized = f->launch_initialized;
        }
        Tailor__V1__LaunchResult *r = tlr_malloc(sizeof(*r));
        tailor__v1__launch_result__init(r);
        r->nodeclaim_name = tlr_strdup(nc->name);
        r->status = tlr_malloc(sizeof(*r->status));
        tailor__v1__status__init(r->status);
        r->instance_id = tlr_strdup(inst);
        resp->results[resp->n_results++] = r;
    }
    *out = resp;
    return TLR_OK;
}

static int l_terminate(void *arg, const Tailor__V1__TerminateRequest *req,
                       Tailor__V1__TerminateResponse **out)
{
    ds_fake *f = arg;
    for (size_t i = 0; i < req->n_items; i++)
        record(f, "terminate %s %s", req->items[i]->nodeclaim_name, req->items[i]->instance_id);
    if (f->terminate_rc)
        return f->terminate_rc;
    Tailor__V1__TerminateResponse *resp = tlr_malloc(sizeof(*resp));
    tailor__v1__terminate_response__init(resp);
    resp->results = tlr_calloc(req->n_items + 1, sizeof(*resp->results));
    for (size_t i = 0; i < req->n_items; i++) {
        const char *name = req->items[i]->nodeclaim_name;
        tlr_kclaim *c = name[0] ? ds_fake_claim(f, name) : NULL;
        if (c && !c->deletion_ms)
            c->deletion_ms = f->now_ms;   /* the launcher deletes the claim too */
        Tailor__V1__TerminateResult *r = tlr_malloc(sizeof(*r));
        tailor__v1__terminate_result__init(r);
        r->nodeclaim_name = tlr_strdup(name);
        r->status = tlr_malloc(sizeof(*r->status));
        tailor__v1__status__init(r->status);
        resp->results[resp->n_results++] = r;
    }
    *out = resp;
    return TLR_OK;
}

ds_launcher_ops ds_fake_launcher(ds_fake *f)
{
    return (ds_launcher_ops){ l_launch, l_terminate, f };
}

/* ---- solver: the real engine, in-process ------------------------------ */

static int s_simulate(void *arg, const Tailor__V1__SimulateRequest *req,
                      Tailor__V1__SimulateResponse **resp)
{
    ds_fake *f = arg;
    char names[512] = "";
    size_t at = 0;
    for (size_t i = 0; i < req->n_remove_node_names && at + 1 < sizeof(names); i++)
        at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", i ? "," : "",
                               req->remove_node_names[i]);
    record(f, "simulate remove=%s replace=%d", names, req->allow_replacement);
    f->simulations++;
    if (f->simulate_delay_ms > 0)
        nanosleep(&(struct timespec){ f->simulate_delay_ms / 1000, (f->simulate_delay_ms % 1000) * 1000000L },
                  NULL);
    Tailor__V1__SimulateRequest copy = *req;
    Tailor__V1__CatalogRef ref = TAILOR__V1__CATALOG_REF__INIT, *refs[1] = { &ref };
    if (f->catalog) {
        /* whatever hash the request names, the fake solver has the catalog */
        ref.hash = f->catalog->hash;
        ref.catalog = (Tailor__V1__Catalog *)f->catalog;
        ref.node_classes = req->n_catalogs ? req->catalogs[0]->node_classes : NULL;
        ref.n_node_classes = req->n_catalogs ? req->catalogs[0]->n_node_classes : 0;
        copy.catalogs = refs;
        copy.n_catalogs = 1;
    }
    /* a miss or bad request: status says so.  The engine's answer goes
     * through the wire form, so it is freed as a real reply is. */
    Tailor__V1__SimulateResponse *eng = NULL;
    tlr_simulate(&copy, NULL, &eng);
    size_t len = tailor__v1__simulate_response__get_packed_size(eng);
    uint8_t *b = tlr_malloc(len + 1);
    tailor__v1__simulate_response__pack(eng, b);
    tlr_simulate_response_free(eng);
    *resp = tailor__v1__simulate_response__unpack(NULL, len, b);
    free(b);
    return *resp ? TLR_OK : TLR_E_DECODE;
}

ds_solver_ops ds_fake_solver(ds_fake *f)
{
    return (ds_solver_ops){ s_simulate, f };
}

/* ---- watcher ------------------------------------------------------------ */

static int w_snapshot(void *arg, const Tailor__V1__SnapshotRequest *req,
                      Tailor__V1__SnapshotResponse **resp)
{
    ds_fake *f = arg;
    (void)req;
    record(f, "snapshot");
    if (!f->snap)
        return TLR_E_UNAVAILABLE;
    size_t len = tailor__v1__snapshot_response__get_packed_size(f->snap);
    uint8_t *b = tlr_malloc(len + 1);
    tailor__v1__snapshot_response__pack(f->snap, b);
    *resp = tailor__v1__snapshot_response__unpack(NULL, len, b);
    free(b);
    return TLR_OK;
}

ds_watcher_ops ds_fake_watcher(ds_fake *f)
{
    return (ds_watcher_ops){ w_snapshot, f };
}

/* ---- AWS ---------------------------------------------------------------- */

static int c_receive(void *arg, int max, ds_sqs_msgs *out)
{
    ds_fake *f = arg;
    record(f, "sqs receive");
    size_t n = f->sqs.n < (size_t)max ? f->sqs.n : (size_t)max;
    out->v = tlr_calloc(n + 1, sizeof(*out->v));
    out->n = n;
    for (size_t i = 0; i < n; i++) {
        out->v[i].id = tlr_strdup(f->sqs.v[i].id);
        out->v[i].receipt = tlr_strdup(f->sqs.v[i].receipt);
        out->v[i].body = tlr_strdup(f->sqs.v[i].body);
    }
    return TLR_OK;
}

static int c_delete(void *arg, const char *receipt)
{
    ds_fake *f = arg;
    record(f, "sqs delete %s", receipt);
    for (size_t i = 0; i < f->sqs.n; i++)
        if (!strcmp(f->sqs.v[i].receipt, receipt)) {
            free(f->sqs.v[i].id), free(f->sqs.v[i].receipt), free(f->sqs.v[i].body);
            f->sqs.v[i] = f->sqs.v[--f->sqs.n];
            return TLR_OK;
        }
    return TLR_OK;
}

ds_cloud_ops ds_fake_cloud(ds_fake *f)
{
    return (ds_cloud_ops){ c_receive, c_delete, f };
}

