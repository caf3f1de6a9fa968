/* fake.c - recording fakes of the launcher's ops (fake.h). */
#include "fake.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"

static void record(lc_fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void record(lc_fake *f, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    TLR_GROW(f->calls, f->capcalls, f->ncalls + 1);
    f->calls[f->ncalls++] = tlr_strdup(buf);
}

static int64_t fake_wall(void *arg)
{
    return ((lc_fake *)arg)->now_ms;
}

void lc_fake_init(lc_fake *f)
{
    memset(f, 0, sizeof(*f));
    f->now_ms = 1700000000000;
    f->clock.wall_ms = fake_wall;
    f->clock.mono_ms = fake_wall;
    f->clock.arg = f;
}

void lc_fake_clear(lc_fake *f)
{
    for (size_t i = 0; i < f->nsolve_q; i++)
        protobuf_c_message_free_unpacked(&f->solve_q[i]->base, NULL);
    for (size_t i = 0; i < f->ncalls; i++)
        free(f->calls[i]);
    free(f->calls);
    if (f->last_solve)
        protobuf_c_message_free_unpacked(&f->last_solve->base, NULL);
    tlr_ec2_instances_free(&f->instances);
    lc_nodes_free(&f->nodes);
    lc_kclaims_free(&f->claims);
}

size_t lc_fake_count(const lc_fake *f, const char *prefix)
{
    size_t n = 0;
    for (size_t i = 0; i < f->ncalls; i++)
        n += strncmp(f->calls[i], prefix, strlen(prefix)) == 0;
    return n;
}

void lc_fake_add_instance(lc_fake *f, const char *id, const char *claim, int64_t launch_ms)
{
    tlr_ec2_instances *l = &f->instances;
    l->v = tlr_realloc(l->v, (l->n + 1) * sizeof(*l->v));
    tlr_ec2_instance *in = &l->v[l->n++];
    memset(in, 0, sizeof(*in));
    in->id = tlr_strdup(id);
    in->type = tlr_strdup("m5.large");
    in->state = tlr_strdup("running");
    in->zone = tlr_strdup("us-east-1a");
    in->private_dns = tlr_strdup("");
    in->private_ip = tlr_strdup("");
    in->image_id = tlr_strdup("ami-1");
    in->subnet_id = tlr_strdup("");
    in->launch_ms = launch_ms;
    if (claim) {
        in->tags = tlr_calloc(1, sizeof(*in->tags));
        in->tags[0].key = tlr_strdup("karpenter.sh/nodeclaim");
        in->tags[0].value = tlr_strdup(claim);
        in->ntags = 1;
    }
}

void lc_fake_add_node(lc_fake *f, const char *name, const char *provider_id, bool ready,
                      const char *taint)
{
    lc_nodes *l = &f->nodes;
    l->v = tlr_realloc(l->v, (l->n + 1) * sizeof(*l->v));
    lc_node *n = &l->v[l->n++];
    memset(n, 0, sizeof(*n));
    n->name = tlr_strdup(name);
    n->provider_id = tlr_strdup(provider_id);
    n->ready = ready;
    if (taint) {
        n->taint_keys = tlr_calloc(1, sizeof(char *));
        n->taint_keys[0] = tlr_strdup(taint);
        n->ntaints = 1;
    }
}

/* ---- solver ---- */

static int fake_solve(void *arg, const Tailor__V1__SolveRequest *req,
                      Tailor__V1__SolveResponse **resp)
{
    lc_fake *f = arg;
    record(f, "solve pods=%zu claims=%zu ice=%zu catalog=%s", req->n_pending_pods,
           req->cluster ? req->cluster->n_nodeclaims : 0, req->n_unavailable_offerings,
           req->catalogs[0]->catalog ? "full" : "hash");
    if (f->last_solve)
        protobuf_c_message_free_unpacked(&f->last_solve->base, NULL);
    size_t n = protobuf_c_message_get_packed_size(&req->base);
    uint8_t *b = tlr_malloc(n + 1);
    protobuf_c_message_pack(&req->base, b);
    f->last_solve = tailor__v1__solve_request__unpack(NULL, n, b);
    free(b);
    if (f->nsolve_q == 0) {
        Tailor__V1__SolveResponse *r = tlr_malloc(sizeof(*r));
        tailor__v1__solve_response__init(r);
        *resp = r;
        return TLR_OK;
    }
    *resp = f->solve_q[0];
    memmove(&f->solve_q[0], &f->solve_q[1], (--f->nsolve_q) * sizeof(f->solve_q[0]));
    return TLR_OK;
}

lc_solver_ops lc_fake_solver(lc_fake *f)
{
    return (lc_solver_ops){ fake_solve, f };
}

/* ---- cloud ---- */

static int fake_lt(void *arg, const Tailor__V1__NodeClass *nc, char **lt_id, tlr_aws_error *err)
{
    (void)err;
    lc_fake *f = arg;
    record(f, "launch_template %s", nc->name);
    char b[128];
    snprintf(b, sizeof(b), "lt-%s", nc->name);
    *lt_id = tlr_strdup(b);
    return TLR_OK;
}

static bool is_ice(const lc_fake *f, const char *type, const char *zone, bool spot)
{
    char key[256];
    snprintf(key, sizeof(key), "%s/%s/%s", type, zone ? zone : "", spot ? "spot" : "on-demand");
    for (size_t i = 0; i < f->nice; i++)
        if (strcmp(f->ice_offerings[i], key) == 0)
            return true;
    return false;
}

static int fake_fleet(void *arg, const tlr_ec2_fleet_req *r, tlr_ec2_fleet_result *out,
                      tlr_aws_error *err)
{
    (void)err;
    lc_fake *f = arg;
    char ov[1500] = "";
    size_t off = 0;
    for (size_t i = 0; i < r->noverrides && off < sizeof(ov) - 100; i++)
        off += (size_t)snprintf(ov + off, sizeof(ov) - off, " %s/%s@%g", r->overrides[i].instance_type,
                                r->overrides[i].zone ? r->overrides[i].zone : "",
                                r->overrides[i].priority);
    record(f, "create_fleet %s %s%s", r->client_token, r->spot ? "spot" : "on-demand", ov);
    tlr_ec2_fleet_result res = { 0 };
    res.fleet_id = tlr_strdup("fleet-1");
    res.errors = tlr_calloc(r->noverrides + 1, sizeof(*res.errors));
    for (size_t i = 0; i < r->noverrides; i++) {
        const tlr_ec2_fleet_override *o = &r->overrides[i];
        if (is_ice(f, o->instance_type, o->zone, r->spot)) {
            tlr_ec2_fleet_error *e = &res.errors[res.nerrors++];
            e->code = tlr_strdup("InsufficientInstanceCapacity");
            e->message = tlr_strdup("no capacity");
            e->instance_type = tlr_strdup(o->instance_type);
            e->zone = tlr_strdup(o->zone ? o->zone : "");
            e->subnet_id = tlr_strdup("");
            e->spot = r->spot;
            e->tlr_code = TLR_E_CAPACITY;
            continue;
        }
        char id[32];
        snprintf(id, sizeof(id), "i-%05d", ++f->next_id);
        res.instances = tlr_calloc(1, sizeof(*res.instances));
        res.instances[0].id = tlr_strdup(id);
        res.instances[0].instance_type = tlr_strdup(o->instance_type);
        res.instances[0].zone = tlr_strdup(o->zone ? o->zone : "");
        res.instances[0].subnet_id = tlr_strdup("");
        res.instances[0].spot = r->spot;
        res.ninstances = 1;
        lc_fake_add_instance(f, id, r->client_token, f->now_ms);
        break;
    }
    *out = res;
    return TLR_OK;
}

static int fake_instances(void *arg, const char *claim, tlr_ec2_instances *out,
                          tlr_aws_error *err)
{
    (void)err;
    lc_fake *f = arg;
    record(f, "instances %s", claim ? claim : "*");
    tlr_ec2_instances l = { 0 };
    l.v = tlr_calloc(f->instances.n + 1, sizeof(*l.v));
    for (size_t i = 0; i < f->instances.n; i++) {
        const tlr_ec2_instance *in = &f->instances.v[i];
        const char *t = tlr_ec2_instance_tag(in, "karpenter.sh/nodeclaim");
        if (claim && (!t || strcmp(t, claim) != 0))
            continue;
        tlr_ec2_instance *o = &l.v[l.n++];
        *o = *in;
        o->id = tlr_strdup(in->id);
        o->type = tlr_strdup(in->type);
        o->state = tlr_strdup(in->state);
        o->zone = tlr_strdup(in->zone);
        o->private_dns = tlr_strdup(in->private_dns);
        o->private_ip = tlr_strdup(in->private_ip);
        o->image_id = tlr_strdup(in->image_id);
        o->subnet_id = tlr_strdup(in->subnet_id);
        o->tags = tlr_calloc(in->ntags + 1, sizeof(*o->tags));
        for (size_t j = 0; j < in->ntags; j++) {
            o->tags[j].key = tlr_strdup(in->tags[j].key);
            o->tags[j].value = tlr_strdup(in->tags[j].value);
        }
    }
    *out = l;
    return TLR_OK;
}

static int fake_terminate(void *arg, const char *const *ids, size_t n, tlr_aws_error *err)
{
    (void)err;
    lc_fake *f = arg;
    for (size_t k = 0; k < n; k++) {
        record(f, "terminate %s", ids[k]);
        for (size_t i = 0; i < f->instances.n; i++)
            if (strcmp(f->instances.v[i].id, ids[k]) == 0) {
                free(f->instances.v[i].state);
                f->instances.v[i].state = tlr_strdup("shutting-down");
            }
    }
    return TLR_OK;
}

lc_cloud_ops lc_fake_cloud(lc_fake *f)
{
    return (lc_cloud_ops){ fake_lt, fake_fleet, fake_instances, fake_terminate, f };
}

/* ---- kube ---- */

static int fake_claim_create(void *arg, const char *name, const char *json)
{
    lc_fake *f = arg;
    record(f, "claim_create %s %s", name, json);
    if (f->kube_create_rc)
        return f->kube_create_rc;
    lc_kclaims *l = &f->claims;
    l->v = tlr_realloc(l->v, (l->n + 1) * sizeof(*l->v));
    lc_kclaim *c = &l->v[l->n++];
    memset(c, 0, sizeof(*c));
    c->name = tlr_strdup(name);
    c->nodepool = tlr_strdup("");
    c->instance_id = tlr_strdup("");
    c->creation_ms = f->now_ms;
    return TLR_OK;
}

static int fake_claim_status(void *arg, const char *name, const char *patch)
{
    record(arg, "claim_status %s %s", name, patch);
    return TLR_OK;
}

static int fake_claim_delete(void *arg, const char *name)
{
    lc_fake *f = arg;
    record(f, "claim_delete %s", name);
    for (size_t i = 0; i < f->claims.n; i++) {
        if (strcmp(f->claims.v[i].name, name) == 0) {
            free(f->claims.v[i].name);
            free(f->claims.v[i].nodepool);
            free(f->claims.v[i].instance_id);
            f->claims.v[i] = f->claims.v[--f->claims.n];
            return TLR_OK;
        }
    }
    return TLR_E_NOTFOUND;
}

static int fake_claims_list(void *arg, lc_kclaims *out)
{
    lc_fake *f = arg;
    record(f, "claims_list");
    lc_kclaims l = { tlr_calloc(f->claims.n + 1, sizeof(lc_kclaim)), f->claims.n };
    for (size_t i = 0; i < f->claims.n; i++) {
        l.v[i] = f->claims.v[i];
        l.v[i].name = tlr_strdup(f->claims.v[i].name);
        l.v[i].nodepool = tlr_strdup(f->claims.v[i].nodepool);
        l.v[i].instance_id = tlr_strdup(f->claims.v[i].instance_id);
    }
    *out = l;
    return TLR_OK;
}

static int fake_nodes_list(void *arg, lc_nodes *out)
{
    lc_fake *f = arg;
    lc_nodes l = { tlr_calloc(f->nodes.n + 1, sizeof(lc_node)), f->nodes.n };
    for (size_t i = 0; i < f->nodes.n; i++) {
        const lc_node *n = &f->nodes.v[i];
        l.v[i].name = tlr_strdup(n->name);
        l.v[i].provider_id = tlr_strdup(n->provider_id);
        l.v[i].ready = n->ready;
        l.v[i].ntaints = n->ntaints;
        l.v[i].taint_keys = tlr_calloc(n->ntaints + 1, sizeof(char *));
        for (size_t j = 0; j < n->ntaints; j++)
            l.v[i].taint_keys[j] = tlr_strdup(n->taint_keys[j]);
    }
    *out = l;
    return TLR_OK;
}

static int fake_event(void *arg, const char *kind, const char *ns, const char *name,
                      const char *uid, const char *type, const char *reason, const char *message)
{
    (void)uid;
    record(arg, "event %s %s/%s %s %s %s", kind, ns, name, type, reason, message);
    return TLR_OK;
}

lc_kube_ops lc_fake_kube(lc_fake *f)
{
    return (lc_kube_ops){ fake_claim_create, fake_claim_status, fake_claim_delete,
                          fake_claims_list, fake_nodes_list, fake_event, f };
}
