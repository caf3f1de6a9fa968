/* lc_fake.c - recording fakes of the launcher's ops (lc_fake.h). */
#include "lc_fake.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_labels.h"
#include "tlr_sigv4.h"

static void record(lc_fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void record(lc_fake *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tlr_strv_vaddf(&f->calls, &f->ncalls, fmt, ap);
    va_end(ap);
}

static int64_t fake_wall(void *arg)
{
    return ((lc_fake *)arg)->now_ms;
}

static tlr_ec2_tag *demo_tag(size_t *n)
{
    tlr_ec2_tag *t = tlr_calloc(1, sizeof(*t));
    t->key = tlr_strdup(TLR_TAG_DISCOVERY);
    t->value = tlr_strdup("demo");
    *n = 1;
    return t;
}

void lc_fake_init(lc_fake *f)
{
    memset(f, 0, sizeof(*f));
    f->now_ms = 1700000000000;
    f->clock.wall_ms = fake_wall;
    f->clock.mono_ms = fake_wall;
    f->clock.arg = f;
    static const struct { const char *id, *zone; int64_t ips; } sn[] = {
        { "subnet-a", "us-east-1a", 200 }, { "subnet-a2", "us-east-1a", 50 },
        { "subnet-b", "us-east-1b", 4000 }, { "subnet-c", "us-east-1c", 100 },
    };
    f->subnets.v = tlr_calloc(4, sizeof(*f->subnets.v));
    for (size_t i = 0; i < 4; i++) {
        tlr_ec2_subnet *s = &f->subnets.v[f->subnets.n++];
        s->id = tlr_strdup(sn[i].id);
        s->zone = tlr_strdup(sn[i].zone);
        s->zone_id = tlr_strdup("");
        s->vpc_id = tlr_strdup("vpc-1");
        s->available_ips = sn[i].ips;
        s->tags = demo_tag(&s->ntags);
    }
    f->sgs.v = tlr_calloc(1, sizeof(*f->sgs.v));
    f->sgs.v[0].id = tlr_strdup("sg-1");
    f->sgs.v[0].name = tlr_strdup("nodes");
    f->sgs.v[0].vpc_id = tlr_strdup("vpc-1");
    f->sgs.v[0].tags = demo_tag(&f->sgs.v[0].ntags);
    f->sgs.n = 1;
    static const char *const ami[2][2] = { { "ami-x86", "x86_64" }, { "ami-arm", "arm64" } };
    f->images.v = tlr_calloc(2, sizeof(*f->images.v));
    for (size_t i = 0; i < 2; i++) {
        tlr_ec2_image *m = &f->images.v[f->images.n++];
        m->id = tlr_strdup(ami[i][0]);
        m->name = tlr_strdup(ami[i][0]);
        m->arch = tlr_strdup(ami[i][1]);
        m->state = tlr_strdup("available");
        m->owner = tlr_strdup("123");
        m->creation_ms = 1;
        m->tags = demo_tag(&m->ntags);
    }
}

void lc_fake_clear(lc_fake *f)
{
    for (size_t i = 0; i < f->nsolve_q; i++)
        protobuf_c_message_free_unpacked(&f->solve_q[i]->base, NULL);
    for (size_t i = 0; i < f->nsnap_q; i++)
        protobuf_c_message_free_unpacked(&f->snap_q[i]->base, NULL);
    for (size_t i = 0; i < f->ncalls; i++)
        free(f->calls[i]);
    free(f->calls);
    if (f->last_solve)
        protobuf_c_message_free_unpacked(&f->last_solve->base, NULL);
    free(f->lt_user_data);
    tlr_ec2_instances_free(&f->instances);
    tlr_knodes_free(&f->nodes);
    tlr_kclaims_free(&f->claims);
    tlr_ec2_subnets_free(&f->subnets);
    tlr_ec2_security_groups_free(&f->sgs);
    tlr_ec2_images_free(&f->images);
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
        in->tags[0].key = tlr_strdup(TLR_TAG_NODECLAIM);
        in->tags[0].value = tlr_strdup(claim);
        in->ntags = 1;
    }
}

static void node_add_taint(tlr_knode *n, const char *key, const char *value, const char *effect)
{
    n->taints = tlr_realloc(n->taints, (n->ntaints + 1) * sizeof(*n->taints));
    n->taints[n->ntaints].key = tlr_strdup(key);
    n->taints[n->ntaints].value = tlr_strdup(value ? value : "");
    n->taints[n->ntaints++].effect = tlr_strdup(effect);
}

void lc_fake_add_node(lc_fake *f, const char *name, const char *provider_id, bool ready,
                      const char *taint)
{
    tlr_knodes *l = &f->nodes;
    l->v = tlr_realloc(l->v, (l->n + 1) * sizeof(*l->v));
    tlr_knode *n = &l->v[l->n++];
    memset(n, 0, sizeof(*n));
    n->name = tlr_strdup(name);
    n->provider_id = tlr_strdup(provider_id);
    n->ready = ready;
    n->resource_version = tlr_strdup("1");
    if (taint) {
        char key[256];
        const char *colon = strchr(taint, ':');
        snprintf(key, sizeof(key), "%.*s", colon ? (int)(colon - taint) : (int)strlen(taint),
                 taint);
        const char *eff = colon ? colon + 1
                          : strcmp(key, TLR_TAINT_UNREGISTERED) == 0 ? "NoExecute"
                                                                          : "NoSchedule";
        node_add_taint(n, key, "", eff);
    }
}

tlr_knode *lc_fake_node(lc_fake *f, const char *name)
{
    for (size_t i = 0; i < f->nodes.n; i++)
        if (strcmp(f->nodes.v[i].name, name) == 0)
            return &f->nodes.v[i];
    return NULL;
}

void lc_fake_node_add_extended(lc_fake *f, const char *name, const char *resource)
{
    tlr_knode *n = lc_fake_node(f, name);
    if (!n)
        return;
    n->extended = tlr_realloc(n->extended, (n->nextended + 1) * sizeof(char *));
    n->extended[n->nextended++] = tlr_strdup(resource);
}

static void node_set_label(tlr_knode *n, const char *k, const char *v)
{
    for (size_t i = 0; i < n->nlabels; i++)
        if (strcmp(n->label_keys[i], k) == 0) {
            free(n->label_values[i]);
            n->label_values[i] = tlr_strdup(v);
            return;
        }
    n->label_keys = tlr_realloc(n->label_keys, (n->nlabels + 1) * sizeof(char *));
    n->label_values = tlr_realloc(n->label_values, (n->nlabels + 1) * sizeof(char *));
    n->label_keys[n->nlabels] = tlr_strdup(k);
    n->label_values[n->nlabels++] = tlr_strdup(v);
}

static int fake_node_patch(void *arg, const char *name, const char *patch)
{
    lc_fake *f = arg;
    record(f, "node_patch %s %s", name, patch);
    if (f->node_patch_rc) {
        int rc = f->node_patch_rc;
        f->node_patch_rc = 0;
        return rc;
    }
    tlr_knode *n = lc_fake_node(f, name);
    if (!n)
        return TLR_E_NOTFOUND;
    json_object *o = json_tokener_parse(patch), *md = NULL, *x = NULL, *spec = NULL;
    if (!o)
        return TLR_E_INVAL;
    json_object_object_get_ex(o, "metadata", &md);
    if (md && json_object_object_get_ex(md, "resourceVersion", &x) &&
        strcmp(json_object_get_string(x), n->resource_version ? n->resource_version : "") != 0) {
        json_object_put(o);
        return TLR_E_CONFLICT;
    }
    if (md && json_object_object_get_ex(md, "labels", &x)) {
        json_object_object_foreach(x, k, v) node_set_label(n, k, json_object_get_string(v));
    }
    if (json_object_object_get_ex(o, "spec", &spec) &&
        json_object_object_get_ex(spec, "taints", &x)) {
        for (size_t i = 0; i < n->ntaints; i++) {
            free(n->taints[i].key);
            free(n->taints[i].value);
            free(n->taints[i].effect);
        }
        n->ntaints = 0;
        for (size_t i = 0; i < json_object_array_length(x); i++) {
            json_object *t = json_object_array_get_idx(x, i), *k, *v = NULL, *e;
            json_object_object_get_ex(t, "key", &k);
            json_object_object_get_ex(t, "value", &v);
            json_object_object_get_ex(t, "effect", &e);
            node_add_taint(n, json_object_get_string(k), v ? json_object_get_string(v) : "",
                           json_object_get_string(e));
        }
    }
    char rv[32];
    snprintf(rv, sizeof(rv), "%ld", strtol(n->resource_version ? n->resource_version : "0",
                                           NULL, 10) + 1);
    free(n->resource_version);
    n->resource_version = tlr_strdup(rv);
    json_object_put(o);
    return TLR_OK;
}

static int fake_claim_patch(void *arg, const char *name, const char *patch)
{
    record(arg, "claim_patch %s %s", name, patch);
    return TLR_OK;
}

static int fake_service_ip(void *arg, const char *ns, const char *name, char **ip)
{
    lc_fake *f = arg;
    record(f, "service_ip %s/%s", ns, name);
    if (!f->dns_ip)
        return TLR_E_NOTFOUND;
    *ip = tlr_strdup(f->dns_ip);
    return TLR_OK;
}

/* ---- solver ---- */

static int fake_solve(void *arg, const Tailor__V1__SolveRequest *req,
                      Tailor__V1__SolveResponse **resp)
{
    lc_fake *f = arg;
    const Tailor__V1__ClusterRef *ref = req->cluster ? req->cluster->by_ref : NULL;
    char cl[160] = "inline";
    if (ref)
        snprintf(cl, sizeof(cl), "ref gen=%llu base=%llu nodes=%zu removed=%zu",
                 (unsigned long long)req->cluster->generation,
                 (unsigned long long)ref->base_generation, ref->n_nodes, ref->n_removed_nodes);
    record(f, "solve pods=%zu claims=%zu ice=%zu catalog=%s cluster=%s", req->n_pending_pods,
           req->cluster ? req->cluster->n_nodeclaims : 0, req->n_unavailable_offerings,
           req->n_catalogs == 0 ? "none" : req->catalogs[0]->catalog ? "full" : "hash", cl);
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
    } else {
        *resp = f->solve_q[0];
        memmove(&f->solve_q[0], &f->solve_q[1], (--f->nsolve_q) * sizeof(f->solve_q[0]));
    }
    if (ref && !f->solver_predates_by_ref && !(*resp)->cluster_miss)
        (*resp)->cluster_generation = req->cluster->generation;
    if (!(*resp)->solver_replica_id || !*(*resp)->solver_replica_id)
        (*resp)->solver_replica_id = tlr_strdup("solver/fake/1");   /* the default "" is not freed */
    return TLR_OK;
}

lc_solver_ops lc_fake_solver(lc_fake *f)
{
    return (lc_solver_ops){ fake_solve, f };
}

/* ---- watcher ---- */

static int fake_snapshot(void *arg, const Tailor__V1__SnapshotRequest *req,
                         Tailor__V1__SnapshotResponse **resp)
{
    lc_fake *f = arg;
    record(f, "snapshot by_reference=%d epoch=%lld base=%llu", req->by_reference,
           (long long)req->watcher_epoch_unix_ms, (unsigned long long)req->delta_base_generation);
    if (f->nsnap_q == 0)
        return TLR_E_UNAVAILABLE;
    *resp = f->snap_q[0];
    memmove(&f->snap_q[0], &f->snap_q[1], (--f->nsnap_q) * sizeof(f->snap_q[0]));
    return TLR_OK;
}

lc_watcher_ops lc_fake_watcher(lc_fake *f)
{
    return (lc_watcher_ops){ fake_snapshot, f };
}

/* ---- cloud ---- */

static int fake_lt(void *arg, const Tailor__V1__NodeClass *nc, const char *ami, char **lt_id,
                   tlr_aws_error *err)
{
    lc_fake *f = arg;
    char h[65];
    tlr_sigv4_sha256_hex(nc->user_data, strlen(nc->user_data), h);
    record(f, "launch_template %s %s sgs=%zu ud=%.8s", nc->name, ami, nc->n_security_groups, h);
    free(f->lt_user_data);
    f->lt_user_data = tlr_strdup(nc->user_data);
    if (f->lt_rc) {
        if (err) {
            snprintf(err->code, sizeof(err->code), "%s", f->lt_code ? f->lt_code : "AuthFailure");
            snprintf(err->message, sizeof(err->message), "not allowed");
        }
        return f->lt_rc;
    }
    char b[128];
    snprintf(b, sizeof(b), "lt-%s-%s-%.8s", nc->name, ami, h);
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
    lc_fake *f = arg;
    char ov[1500] = "";
    size_t off = 0;
    for (size_t i = 0; i < r->noverrides && off < sizeof(ov) - 100; i++)
        off += (size_t)snprintf(ov + off, sizeof(ov) - off, " %s/%s@%g", r->overrides[i].instance_type,
                                r->overrides[i].zone ? r->overrides[i].zone : "",
                                r->overrides[i].priority);
    const char *claim_tag = NULL;
    for (size_t i = 0; i < r->ntags; i++)
        if (strcmp(r->tags[i].key, TLR_TAG_NODECLAIM) == 0)
            claim_tag = r->tags[i].value;
    char count[32] = "";
    if (r->target_capacity > 1)
        snprintf(count, sizeof(count), " x%d", r->target_capacity);
    record(f, "create_fleet %s %s%s%s", r->client_token, r->spot ? "spot" : "on-demand", ov, count);
    if (f->fleet_rc) {
        if (err) {
            snprintf(err->code, sizeof(err->code), "UnauthorizedOperation");
            snprintf(err->message, sizeof(err->message), "not allowed");
        }
        return f->fleet_rc;
    }
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
        int n = r->target_capacity > 0 ? r->target_capacity : 1;
        res.instances = tlr_calloc((size_t)n, sizeof(*res.instances));
        for (int k = 0; k < n; k++) {
            char id[32];
            snprintf(id, sizeof(id), "i-%05d", ++f->next_id);
            res.instances[k].id = tlr_strdup(id);
            res.instances[k].instance_type = tlr_strdup(o->instance_type);
            res.instances[k].zone = tlr_strdup(o->zone ? o->zone : "");
            res.instances[k].subnet_id = tlr_strdup(o->subnet_id ? o->subnet_id : "");
            res.instances[k].spot = r->spot;
            lc_fake_add_instance(f, id, claim_tag, f->now_ms);
        }
        res.ninstances = (size_t)n;
        break;
    }
    *out = res;
    return TLR_OK;
}

/* Copies of the fake's instances: those tagged for claim (NULL: any),
 * with id (NULL: any), live only when asked. */
static tlr_ec2_instances fake_list(const lc_fake *f, const char *claim, const char *id, bool live)
{
    tlr_ec2_instances l = { 0 };
    l.v = tlr_calloc(f->instances.n + 1, sizeof(*l.v));
    for (size_t i = 0; i < f->instances.n; i++) {
        const tlr_ec2_instance *in = &f->instances.v[i];
        const char *t = tlr_ec2_instance_tag(in, TLR_TAG_NODECLAIM);
        if (claim && (!t || strcmp(t, claim) != 0))
            continue;
        if (id && strcmp(in->id, id) != 0)
            continue;
        if (live && strcmp(in->state, "pending") != 0 && strcmp(in->state, "running") != 0)
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
    return l;
}

static int fake_instances(void *arg, const char *claim, tlr_ec2_instances *out,
                          tlr_aws_error *err)
{
    (void)err;
    lc_fake *f = arg;
    record(f, "instances %s", claim ? claim : "*");
    *out = fake_list(f, claim, NULL, false);
    return TLR_OK;
}

/* The fake's instances all count as the cluster's; a live one by id. */
static int fake_instance(void *arg, const char *id, tlr_ec2_instances *out, tlr_aws_error *err)
{
    (void)err;
    lc_fake *f = arg;
    record(f, "instance %s", id);
    *out = fake_list(f, NULL, id, true);
    return TLR_OK;
}

static int fake_instance_any(void *arg, const char *id, tlr_ec2_instances *out,
                             tlr_aws_error *err)
{
    (void)err;
    lc_fake *f = arg;
    record(f, "instance_any %s", id);
    *out = fake_list(f, NULL, id, false);
    return TLR_OK;
}

static int fake_terminate(void *arg, const char *const *ids, size_t n, tlr_aws_error *err)
{
    (void)err;
    lc_fake *f = arg;
    if (f->terminate_rc) {
        for (size_t k = 0; k < n; k++)
            record(f, "terminate %s refused", ids[k]);
        if (err)
            snprintf(err->code, sizeof(err->code), "UnauthorizedOperation");
        return f->terminate_rc;
    }
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

static void fake_tag(void *arg, size_t n, const char *const *ids, const tlr_ec2_tag *const *tags,
                     const size_t *ntags, int *rcs)
{
    lc_fake *f = arg;
    for (size_t i = 0; i < n; i++) {
        record(f, "tag %s %s=%s", ids[i], ntags[i] ? tags[i][0].key : "",
               ntags[i] ? tags[i][0].value : "");
        for (size_t j = 0; j < f->instances.n; j++) {
            tlr_ec2_instance *in = &f->instances.v[j];
            if (strcmp(in->id, ids[i]) != 0)
                continue;
            for (size_t t = 0; t < ntags[i]; t++) {
                in->tags = tlr_realloc(in->tags, (in->ntags + 1) * sizeof(*in->tags));
                in->tags[in->ntags].key = tlr_strdup(tags[i][t].key);
                in->tags[in->ntags++].value = tlr_strdup(tags[i][t].value);
            }
        }
        rcs[i] = TLR_OK;
    }
}

/* Does a resource with these id and tags pass every filter? */
static bool passes(const tlr_ec2_filter *fl, size_t nf, const char *id, const char *name,
                   const tlr_ec2_tag *tags, size_t ntags)
{
    for (size_t i = 0; i < nf; i++) {
        const char *want = fl[i].values[0];
        bool ok;
        if (strcmp(fl[i].name, "subnet-id") == 0 || strcmp(fl[i].name, "group-id") == 0 ||
            strcmp(fl[i].name, "image-id") == 0)
            ok = strcmp(id, want) == 0;
        else if (strcmp(fl[i].name, "group-name") == 0 || strcmp(fl[i].name, "name") == 0)
            ok = strcmp(name, want) == 0;
        else if (strcmp(fl[i].name, "tag-key") == 0)
            ok = tlr_ec2_tag_get(tags, ntags, want) != NULL;
        else if (strncmp(fl[i].name, "tag:", 4) == 0) {
            const char *v = tlr_ec2_tag_get(tags, ntags, fl[i].name + 4);
            ok = v && strcmp(v, want) == 0;
        } else
            ok = true;   /* state, owner: everything here qualifies */
        if (!ok)
            return false;
    }
    return true;
}

static void filters_text(const tlr_ec2_filter *fl, size_t nf, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < nf && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, " %s=%s", fl[i].name, fl[i].values[0]);
}

static tlr_ec2_tag *copy_tags(const tlr_ec2_tag *t, size_t n)
{
    tlr_ec2_tag *c = tlr_calloc(n + 1, sizeof(*c));
    for (size_t i = 0; i < n; i++) {
        c[i].key = tlr_strdup(t[i].key);
        c[i].value = tlr_strdup(t[i].value);
    }
    return c;
}

static int fake_subnets(void *arg, const tlr_ec2_filter *fl, size_t nf, tlr_ec2_subnets *out,
                        tlr_aws_error *err)
{
    lc_fake *f = arg;
    char ft[512];
    filters_text(fl, nf, ft, sizeof(ft));
    record(f, "subnets%s", ft);
    if (f->describe_rc) {
        snprintf(err->code, sizeof(err->code), "AuthFailure");
        snprintf(err->message, sizeof(err->message), "AWS was not able to validate the credentials");
        return f->describe_rc;
    }
    tlr_ec2_subnets l = { tlr_calloc(f->subnets.n + 1, sizeof(*l.v)), 0 };
    for (size_t i = 0; i < f->subnets.n; i++) {
        const tlr_ec2_subnet *s = &f->subnets.v[i];
        if (!passes(fl, nf, s->id, "", s->tags, s->ntags))
            continue;
        tlr_ec2_subnet *d = &l.v[l.n++];
        d->id = tlr_strdup(s->id);
        d->zone = tlr_strdup(s->zone);
        d->zone_id = tlr_strdup(s->zone_id);
        d->vpc_id = tlr_strdup(s->vpc_id);
        d->available_ips = s->available_ips;
        d->tags = copy_tags(s->tags, s->ntags);
        d->ntags = s->ntags;
    }
    *out = l;
    return TLR_OK;
}

static int fake_sgs(void *arg, const tlr_ec2_filter *fl, size_t nf, tlr_ec2_security_groups *out,
                    tlr_aws_error *err)
{
    lc_fake *f = arg;
    char ft[512];
    filters_text(fl, nf, ft, sizeof(ft));
    record(f, "security_groups%s", ft);
    if (f->describe_rc) {
        snprintf(err->code, sizeof(err->code), "AuthFailure");
        return f->describe_rc;
    }
    tlr_ec2_security_groups l = { tlr_calloc(f->sgs.n + 1, sizeof(*l.v)), 0 };
    for (size_t i = 0; i < f->sgs.n; i++) {
        const tlr_ec2_security_group *g = &f->sgs.v[i];
        if (!passes(fl, nf, g->id, g->name, g->tags, g->ntags))
            continue;
        tlr_ec2_security_group *d = &l.v[l.n++];
        d->id = tlr_strdup(g->id);
        d->name = tlr_strdup(g->name);
        d->vpc_id = tlr_strdup(g->vpc_id);
        d->tags = copy_tags(g->tags, g->ntags);
        d->ntags = g->ntags;
    }
    *out = l;
    return TLR_OK;
}

static int fake_images(void *arg, const tlr_ec2_filter *fl, size_t nf, tlr_ec2_images *out,
                       tlr_aws_error *err)
{
    lc_fake *f = arg;
    char ft[512];
    filters_text(fl, nf, ft, sizeof(ft));
    record(f, "images%s", ft);
    if (f->describe_rc) {
        snprintf(err->code, sizeof(err->code), "AuthFailure");
        return f->describe_rc;
    }
    tlr_ec2_images l = { tlr_calloc(f->images.n + 1, sizeof(*l.v)), 0 };
    for (size_t i = 0; i < f->images.n; i++) {
        const tlr_ec2_image *m = &f->images.v[i];
        if (!passes(fl, nf, m->id, m->name, m->tags, m->ntags))
            continue;
        tlr_ec2_image *d = &l.v[l.n++];
        *d = *m;
        d->id = tlr_strdup(m->id);
        d->name = tlr_strdup(m->name);
        d->arch = tlr_strdup(m->arch);
        d->state = tlr_strdup(m->state);
        d->owner = tlr_strdup(m->owner);
        d->tags = copy_tags(m->tags, m->ntags);
    }
    *out = l;
    return TLR_OK;
}

static int fake_ssm(void *arg, const char *parameter, char **ami, tlr_aws_error *err)
{
    (void)err;
    record(arg, "ssm %s", parameter);
    *ami = tlr_strdup(strstr(parameter, "arm64") ? "ami-arm" : "ami-x86");
    return TLR_OK;
}

lc_cloud_ops lc_fake_cloud(lc_fake *f)
{
    lc_cloud_ops o = { 0 };
    o.launch_template = fake_lt;
    o.create_fleet = fake_fleet;
    o.instances = fake_instances;
    o.instance = fake_instance;
    o.instance_any = fake_instance_any;
    o.terminate = fake_terminate;
    o.tag_instances = fake_tag;
    o.subnets = fake_subnets;
    o.security_groups = fake_sgs;
    o.images = fake_images;
    o.ssm_ami = fake_ssm;
    o.arg = f;
    return o;
}

/* ---- kube ---- */

static int fake_claim_create(void *arg, const char *name, const char *json)
{
    lc_fake *f = arg;
    record(f, "claim_create %s %s", name, json);
    if (f->kube_create_rc)
        return f->kube_create_rc;
    tlr_kclaims *l = &f->claims;
    l->v = tlr_realloc(l->v, (l->n + 1) * sizeof(*l->v));
    tlr_kclaim *c = &l->v[l->n++];
    memset(c, 0, sizeof(*c));
    c->name = tlr_strdup(name);
    c->nodepool = tlr_strdup("");
    c->instance_id = tlr_strdup("");
    c->provider_id = tlr_strdup("");
    c->nodeclass = tlr_strdup("default");
    c->creation_ms = f->now_ms;
    return TLR_OK;
}

void lc_fake_add_claim(lc_fake *f, const char *name, const char *instance_id, int64_t created_ms,
                       bool initialized)
{
    tlr_kclaims *l = &f->claims;
    l->v = tlr_realloc(l->v, (l->n + 1) * sizeof(*l->v));
    tlr_kclaim *c = &l->v[l->n++];
    memset(c, 0, sizeof(*c));
    c->name = tlr_strdup(name);
    c->nodepool = tlr_strdup("default");
    c->instance_id = tlr_strdup(instance_id ? instance_id : "");
    char pid[128] = "";
    if (instance_id)
        snprintf(pid, sizeof(pid), "aws:///us-east-1a/%s", instance_id);
    c->provider_id = tlr_strdup(pid);
    c->nodeclass = tlr_strdup("default");
    c->creation_ms = created_ms;
    c->initialized = initialized;
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
            tlr_kclaim_clear(&f->claims.v[i]);
            f->claims.v[i] = f->claims.v[--f->claims.n];
            return TLR_OK;
        }
    }
    return TLR_E_NOTFOUND;
}

static int fake_claims_list(void *arg, tlr_kclaims *out)
{
    lc_fake *f = arg;
    record(f, "claims_list");
    if (f->on_claims_list)
        f->on_claims_list(f, ++f->nclaims_list);
    tlr_kclaims l = { tlr_calloc(f->claims.n + 1, sizeof(tlr_kclaim)), f->claims.n };
    for (size_t i = 0; i < f->claims.n; i++)
        tlr_kclaim_copy(&f->claims.v[i], &l.v[i]);
    *out = l;
    return TLR_OK;
}

static int fake_nodes_list(void *arg, tlr_knodes *out)
{
    lc_fake *f = arg;
    tlr_knodes l = { tlr_calloc(f->nodes.n + 1, sizeof(tlr_knode)), f->nodes.n };
    for (size_t i = 0; i < f->nodes.n; i++)
        tlr_knode_copy(&f->nodes.v[i], &l.v[i]);
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

static int fake_nodeclass_status(void *arg, const char *name, const char *patch)
{
    record(arg, "nodeclass_status %s %s", name, patch);
    return TLR_OK;
}

static Tailor__V1__SelectorTerm *demo_term(void)
{
    Tailor__V1__SelectorTerm *t = tlr_malloc(sizeof(*t));
    tailor__v1__selector_term__init(t);
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(TLR_TAG_DISCOVERY);
    l->value = tlr_strdup("demo");
    t->tags = tlr_calloc(1, sizeof(*t->tags));
    t->tags[0] = l;
    t->n_tags = 1;
    return t;
}

Tailor__V1__NodeClass *lc_fake_nodeclass(const char *name, const char *ami_id)
{
    Tailor__V1__NodeClass *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_class__init(nc);
    nc->name = tlr_strdup(name);
    nc->uid = tlr_strdup("uid-nc");
    nc->subnet_selector_terms = tlr_calloc(1, sizeof(*nc->subnet_selector_terms));
    nc->subnet_selector_terms[nc->n_subnet_selector_terms++] = demo_term();
    nc->security_group_selector_terms = tlr_calloc(1, sizeof(*nc->security_group_selector_terms));
    nc->security_group_selector_terms[nc->n_security_group_selector_terms++] = demo_term();
    Tailor__V1__AmiSelectorTerm *a = tlr_malloc(sizeof(*a));
    tailor__v1__ami_selector_term__init(a);
    a->id = tlr_strdup(ami_id ? ami_id : "ami-x86");
    nc->ami_selector_terms = tlr_calloc(1, sizeof(*nc->ami_selector_terms));
    nc->ami_selector_terms[nc->n_ami_selector_terms++] = a;
    return nc;
}

static int fake_nodeclass_get(void *arg, const char *name, Tailor__V1__NodeClass **out)
{
    record(arg, "nodeclass_get %s", name);
    if (strcmp(name, "default") != 0)
        return TLR_E_NOTFOUND;
    *out = lc_fake_nodeclass(name, NULL);
    return TLR_OK;
}

lc_kube_ops lc_fake_kube(lc_fake *f)
{
    lc_kube_ops o = { 0 };
    o.claim_create = fake_claim_create;
    o.claim_status = fake_claim_status;
    o.claim_delete = fake_claim_delete;
    o.claims_list = fake_claims_list;
    o.nodes_list = fake_nodes_list;
    o.event = fake_event;
    o.nodeclass_status = fake_nodeclass_status;
    o.nodeclass_get = fake_nodeclass_get;
    o.claim_patch = fake_claim_patch;
    o.node_patch = fake_node_patch;
    o.service_ip = fake_service_ip;
    o.arg = f;
    return o;
}
