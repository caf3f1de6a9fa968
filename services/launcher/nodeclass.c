/* nodeclass.c - EC2NodeClass resolution, readiness, back-off and catalog
 * views (nodeclass.h). */
#include "nodeclass.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchtemplate.h"
#include "tlr_alloc.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_sigv4.h"

enum { C_SUBNETS, C_SGS, C_AMIS, C_VALID, C_READY, NCONDS };
static const char *const cond_type[NCONDS] = { "SubnetsReady", "SecurityGroupsReady",
                                               "AMIsReady", "ValidationSucceeded", "Ready" };

struct lc_classes {
    lc_classes_opts o;
    char *default_ami, *k8s;
    lc_class **v;
    size_t n, cap;
};

static int64_t now_ms(const lc_classes *cs)
{
    return cs->o.clock->wall_ms(cs->o.clock->arg);
}

/* ---- filters ------------------------------------------------------------ */

static int add_filter(lc_nc_filters *f, const char *name, char *owned_name, const char *value)
{
    if (f->n >= LC_NC_MAX_FILTERS) {
        free(owned_name);
        return TLR_E_INVAL;
    }
    f->owned[f->n] = owned_name;
    f->vals[f->n] = value;
    f->f[f->n] = (tlr_ec2_filter){ owned_name ? owned_name : name, &f->vals[f->n], 1 };
    f->n++;
    return TLR_OK;
}

static int add_tags(lc_nc_filters *f, Tailor__V1__Label *const *tags, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const Tailor__V1__Label *t = tags[i];
        int rc;
        if (strcmp(t->value, "*") == 0) {
            rc = add_filter(f, "tag-key", NULL, t->key);
        } else {
            size_t len = strlen(t->key) + 5;
            char *name = tlr_malloc(len);
            snprintf(name, len, "tag:%s", t->key);
            rc = add_filter(f, NULL, name, t->value);
        }
        if (rc)
            return rc;
    }
    return TLR_OK;
}

void lc_nc_filters_clear(lc_nc_filters *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->owned[i]);
    memset(f, 0, sizeof(*f));
}

int lc_nc_term_filters(lc_nc_kind kind, const Tailor__V1__SelectorTerm *t, lc_nc_filters *out)
{
    memset(out, 0, sizeof(*out));
    int rc = TLR_OK;
    if (t->id[0])
        rc = add_filter(out, kind == LC_NC_SUBNETS ? "subnet-id" : "group-id", NULL, t->id);
    if (rc == TLR_OK && t->name[0] && kind == LC_NC_SECURITY_GROUPS)
        rc = add_filter(out, "group-name", NULL, t->name);
    if (rc == TLR_OK)
        rc = add_tags(out, t->tags, t->n_tags);
    if (rc == TLR_OK && out->n == 0)
        rc = TLR_E_INVAL;
    if (rc)
        lc_nc_filters_clear(out);
    return rc;
}

int lc_nc_ami_filters(const Tailor__V1__AmiSelectorTerm *t, lc_nc_filters *out)
{
    memset(out, 0, sizeof(*out));
    int rc = TLR_OK;
    if (t->id[0])
        rc = add_filter(out, "image-id", NULL, t->id);
    if (rc == TLR_OK && t->name[0])
        rc = add_filter(out, "name", NULL, t->name);
    if (rc == TLR_OK && t->owner[0]) {
        /* An account id, or an alias such as "amazon" / "self". */
        bool digits = strspn(t->owner, "0123456789") == strlen(t->owner);
        rc = add_filter(out, digits ? "owner-id" : "owner-alias", NULL, t->owner);
    }
    if (rc == TLR_OK)
        rc = add_tags(out, t->tags, t->n_tags);
    if (rc == TLR_OK && out->n > 0)
        rc = add_filter(out, "state", NULL, "available");
    if (rc == TLR_OK && out->n == 0)
        rc = TLR_E_INVAL;
    if (rc)
        lc_nc_filters_clear(out);
    return rc;
}

/* ---- registry ------------------------------------------------------------- */

void lc_classes_create(const lc_classes_opts *o, lc_classes **out)
{
    lc_classes *cs = tlr_calloc(1, sizeof(*cs));
    cs->o = *o;
    if (cs->o.resolve_ttl_ms <= 0)
        cs->o.resolve_ttl_ms = LC_NC_RESOLVE_TTL_MS;
    cs->default_ami = tlr_strdup(o->default_ami && o->default_ami[0] ? o->default_ami : NULL);
    cs->k8s = tlr_strdup(o->k8s_version);
    cs->o.default_ami = cs->default_ami;
    cs->o.k8s_version = cs->k8s;
    *out = cs;
}

static void class_free(lc_class *c)
{
    if (!c)
        return;
    free(c->name);
    if (c->nc)
        protobuf_c_message_free_unpacked(&c->nc->base, NULL);
    free(c->spec_key);
    free(c->status_written);
    tlr_catalog_free(c->view);
    free(c->view_key);
    for (size_t i = 0; i < c->nlts; i++) {
        free(c->lts[i].ami);
        free(c->lts[i].id);
    }
    free(c->lts);
    free(c);
}

void lc_classes_free(lc_classes *cs)
{
    if (!cs)
        return;
    for (size_t i = 0; i < cs->n; i++)
        class_free(cs->v[i]);
    free(cs->v);
    free(cs->default_ami);
    free(cs->k8s);
    free(cs);
}

lc_class *lc_classes_get(lc_classes *cs, const char *name)
{
    for (size_t i = 0; i < cs->n; i++)
        if (strcmp(cs->v[i]->name, name) == 0)
            return cs->v[i];
    return NULL;
}

static Tailor__V1__NodeClass *nc_copy(const Tailor__V1__NodeClass *nc)
{
    size_t n = protobuf_c_message_get_packed_size(&nc->base);
    uint8_t *buf = tlr_malloc(n + 1);
    protobuf_c_message_pack(&nc->base, buf);
    Tailor__V1__NodeClass *c = tailor__v1__node_class__unpack(NULL, n, buf);
    free(buf);
    if (!c)
        abort();   /* packed by us */
    return c;
}

/* ---- conditions and status ------------------------------------------------ */

static void set_cond(lc_class *c, int i, int status, const char *reason, int64_t now)
{
    struct lc_cond *k = &c->conds[i];
    if (k->type[0] == '\0' || k->status != status)
        k->since_ms = now;
    snprintf(k->type, sizeof(k->type), "%s", cond_type[i]);
    k->status = status;
    snprintf(k->reason, sizeof(k->reason), "%s", reason);
}

static void recompute(lc_class *c, int64_t now)
{
    bool valid = c->blocked_until_ms <= now || c->launch_failures == 0;
    set_cond(c, C_VALID, valid, valid ? "ValidationSucceeded" : c->block_reason, now);
    int first = -1;
    for (int i = 0; i < C_READY; i++)
        if (c->conds[i].status != 1 && first < 0)
            first = i;
    set_cond(c, C_READY, first < 0, first < 0 ? "Ready" : c->conds[first].reason, now);
}

static const char *cond_message(const lc_class *c, int i)
{
    if (c->conds[i].status == 1)
        return "";
    if (i == C_VALID)
        return c->block_message;
    return c->message;
}

char *lc_class_status_json(const lc_class *c)
{
    json_object *root = json_object_new_object(), *st = json_object_new_object();
    json_object_object_add(root, "status", st);
    const Tailor__V1__NodeClass *nc = c->nc;
    json_object *a = json_object_new_array();
    for (size_t i = 0; nc && i < nc->n_subnets; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(nc->subnets[i]->id));
        json_object_object_add(o, "zone", json_object_new_string(nc->subnets[i]->zone));
        if (nc->subnets[i]->zone_id[0])
            json_object_object_add(o, "zoneID", json_object_new_string(nc->subnets[i]->zone_id));
        json_object_array_add(a, o);
    }
    json_object_object_add(st, "subnets", a);
    a = json_object_new_array();
    for (size_t i = 0; nc && i < nc->n_security_groups; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(nc->security_groups[i]->id));
        if (nc->security_groups[i]->name[0])
            json_object_object_add(o, "name",
                                   json_object_new_string(nc->security_groups[i]->name));
        json_object_array_add(a, o);
    }
    json_object_object_add(st, "securityGroups", a);
    a = json_object_new_array();
    for (size_t i = 0; nc && i < nc->n_amis; i++) {
        const Tailor__V1__ResolvedAmi *m = nc->amis[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(m->id));
        if (m->name[0])
            json_object_object_add(o, "name", json_object_new_string(m->name));
        if (m->arch[0]) {
            json_object *req = json_object_new_object(), *vals = json_object_new_array();
            json_object_object_add(req, "key", json_object_new_string("kubernetes.io/arch"));
            json_object_object_add(req, "operator", json_object_new_string("In"));
            json_object_array_add(vals, json_object_new_string(m->arch));
            json_object_object_add(req, "values", vals);
            json_object *reqs = json_object_new_array();
            json_object_array_add(reqs, req);
            json_object_object_add(o, "requirements", reqs);
        }
        json_object_array_add(a, o);
    }
    json_object_object_add(st, "amis", a);
    a = json_object_new_array();
    for (int i = 0; i < NCONDS; i++) {
        const struct lc_cond *k = &c->conds[i];
        if (k->type[0] == '\0')
            continue;
        json_object *o = json_object_new_object();
        char ts[TLR_TIME_BUFLEN];
        tlr_time_format_s(k->since_ms, ts);
        json_object_object_add(o, "type", json_object_new_string(k->type));
        json_object_object_add(o, "status", json_object_new_string(k->status == 1 ? "True"
                                                                   : k->status == 0 ? "False"
                                                                   : "Unknown"));
        json_object_object_add(o, "reason", json_object_new_string(k->reason));
        json_object_object_add(o, "message", json_object_new_string(cond_message(c, i)));
        json_object_object_add(o, "lastTransitionTime", json_object_new_string(ts));
        json_object_array_add(a, o);
    }
    json_object_object_add(st, "conditions", a);
    char *out = tlr_strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    return out;
}

/* Write the status when it changed; an Event when readiness changed. */
static void publish(lc_classes *cs, lc_class *c, bool was_ready, bool first)
{
    char *js = lc_class_status_json(c);
    if (!c->status_written || strcmp(js, c->status_written) != 0) {
        int rc = cs->o.kube.nodeclass_status
                     ? cs->o.kube.nodeclass_status(cs->o.kube.arg, c->name, js) : TLR_OK;
        if (rc == TLR_OK) {
            free(c->status_written);
            c->status_written = js;
            js = NULL;
        } else {
            TLR_WARN(cs->o.log, "ec2nodeclass status not written", TLR_S("ec2nodeclass", c->name),
                     TLR_ERR(rc));
        }
    }
    free(js);
    bool ready = c->conds[C_READY].status == 1;
    if (ready == was_ready && !(first && !ready))
        return;
    const char *uid = c->nc ? c->nc->uid : "";
    char msg[700];
    if (ready) {
        snprintf(msg, sizeof(msg), "resolved %zu subnets, %zu security groups, %zu AMIs",
                 c->nc->n_subnets, c->nc->n_security_groups, c->nc->n_amis);
        TLR_INFO(cs->o.log, "ec2nodeclass ready", TLR_S("ec2nodeclass", c->name),
                 TLR_S("detail", msg));
    } else {
        const struct lc_cond *k = &c->conds[C_READY];
        int i = 0;
        while (i < C_READY && c->conds[i].status == 1)
            i++;
        snprintf(msg, sizeof(msg), "%s: %s", k->reason, cond_message(c, i < C_READY ? i : C_READY));
        TLR_WARN(cs->o.log, "ec2nodeclass not ready", TLR_S("ec2nodeclass", c->name),
                 TLR_S("why", msg));
    }
    cs->o.kube.event(cs->o.kube.arg, "EC2NodeClass", "", c->name, uid,
                     ready ? "Normal" : "Warning", ready ? "Ready" : "NotReady", msg);
}

/* ---- resolution ------------------------------------------------------------ */

static void push_subnet(Tailor__V1__NodeClass *nc, const tlr_ec2_subnet *s)
{
    for (size_t i = 0; i < nc->n_subnets; i++)
        if (strcmp(nc->subnets[i]->id, s->id) == 0)
            return;
    Tailor__V1__ResolvedSubnet *r = tlr_malloc(sizeof(*r));
    tailor__v1__resolved_subnet__init(r);
    r->id = tlr_strdup(s->id);
    r->zone = tlr_strdup(s->zone);
    r->zone_id = tlr_strdup(s->zone_id);
    r->available_ips = s->available_ips;
    nc->subnets = tlr_realloc(nc->subnets, (nc->n_subnets + 1) * sizeof(r));
    nc->subnets[nc->n_subnets++] = r;
}

static void push_sg(Tailor__V1__NodeClass *nc, const tlr_ec2_security_group *g)
{
    for (size_t i = 0; i < nc->n_security_groups; i++)
        if (strcmp(nc->security_groups[i]->id, g->id) == 0)
            return;
    Tailor__V1__ResolvedSecurityGroup *r = tlr_malloc(sizeof(*r));
    tailor__v1__resolved_security_group__init(r);
    r->id = tlr_strdup(g->id);
    r->name = tlr_strdup(g->name);
    nc->security_groups = tlr_realloc(nc->security_groups,
                                      (nc->n_security_groups + 1) * sizeof(r));
    nc->security_groups[nc->n_security_groups++] = r;
}

static const char *k8s_arch(const char *ec2_arch)
{
    if (strcmp(ec2_arch, "x86_64") == 0)
        return "amd64";
    if (strcmp(ec2_arch, "arm64") == 0)
        return "arm64";
    return "";
}

/* Keep the newest image per architecture (Karpenter: the newest wins). */
static void push_ami(Tailor__V1__NodeClass *nc, const char *id, const char *name,
                     const char *arch, int64_t created)
{
    for (size_t i = 0; i < nc->n_amis; i++) {
        Tailor__V1__ResolvedAmi *m = nc->amis[i];
        if (strcmp(m->id, id) == 0)
            return;
        if (strcmp(m->arch, arch) == 0) {
            if (created > m->creation_unix_ms) {
                free(m->id);
                free(m->name);
                m->id = tlr_strdup(id);
                m->name = tlr_strdup(name);
                m->creation_unix_ms = created;
            }
            return;
        }
    }
    Tailor__V1__ResolvedAmi *m = tlr_malloc(sizeof(*m));
    tailor__v1__resolved_ami__init(m);
    m->id = tlr_strdup(id);
    m->name = tlr_strdup(name);
    m->arch = tlr_strdup(arch);
    m->creation_unix_ms = created;
    nc->amis = tlr_realloc(nc->amis, (nc->n_amis + 1) * sizeof(m));
    nc->amis[nc->n_amis++] = m;
}

static void clear_resolved(Tailor__V1__NodeClass *nc)
{
    for (size_t i = 0; i < nc->n_subnets; i++)
        tailor__v1__resolved_subnet__free_unpacked(nc->subnets[i], NULL);
    free(nc->subnets);
    nc->subnets = NULL;
    nc->n_subnets = 0;
    for (size_t i = 0; i < nc->n_security_groups; i++)
        tailor__v1__resolved_security_group__free_unpacked(nc->security_groups[i], NULL);
    free(nc->security_groups);
    nc->security_groups = NULL;
    nc->n_security_groups = 0;
    for (size_t i = 0; i < nc->n_amis; i++)
        tailor__v1__resolved_ami__free_unpacked(nc->amis[i], NULL);
    free(nc->amis);
    nc->amis = NULL;
    nc->n_amis = 0;
}

typedef struct failure {
    int rc;
    char reason[64], message[512];
} failure;

static void fail(failure *w, int rc, const char *reason, const tlr_aws_error *e, const char *fallback)
{
    if (w->rc)
        return;   /* the first failure explains */
    w->rc = rc;
    snprintf(w->reason, sizeof(w->reason), "%s", reason);
    if (e && (e->code[0] || e->message[0]))
        snprintf(w->message, sizeof(w->message), "%.64s: %.400s",
                 e->code[0] ? e->code : tlr_strerror(rc), e->message);
    else
        snprintf(w->message, sizeof(w->message), "%s", fallback);
}

static void resolve_subnets(lc_classes *cs, Tailor__V1__NodeClass *nc, failure *w)
{
    for (size_t i = 0; i < nc->n_subnet_selector_terms; i++) {
        lc_nc_filters f;
        if (lc_nc_term_filters(LC_NC_SUBNETS, nc->subnet_selector_terms[i], &f)) {
            fail(w, TLR_E_INVAL, "SubnetsNotFound", NULL, "a subnetSelectorTerm selects nothing");
            return;
        }
        tlr_ec2_subnets l = { 0 };
        tlr_aws_error e = { 0 };
        int rc = cs->o.cloud.subnets(cs->o.cloud.arg, f.f, f.n, &l, &e);
        lc_nc_filters_clear(&f);
        if (rc) {
            fail(w, rc, "SubnetsNotResolved", &e, tlr_strerror(rc));
            return;
        }
        for (size_t j = 0; j < l.n; j++)
            push_subnet(nc, &l.v[j]);
        tlr_ec2_subnets_free(&l);
    }
    if (nc->n_subnets == 0)
        fail(w, TLR_E_NOTFOUND, "SubnetsNotFound", NULL,
             "SubnetSelector did not match any Subnets");
}

static void resolve_sgs(lc_classes *cs, Tailor__V1__NodeClass *nc, failure *w)
{
    for (size_t i = 0; i < nc->n_security_group_selector_terms; i++) {
        lc_nc_filters f;
        if (lc_nc_term_filters(LC_NC_SECURITY_GROUPS, nc->security_group_selector_terms[i], &f)) {
            fail(w, TLR_E_INVAL, "SecurityGroupsNotFound", NULL,
                 "a securityGroupSelectorTerm selects nothing");
            return;
        }
        tlr_ec2_security_groups l = { 0 };
        tlr_aws_error e = { 0 };
        int rc = cs->o.cloud.security_groups(cs->o.cloud.arg, f.f, f.n, &l, &e);
        lc_nc_filters_clear(&f);
        if (rc) {
            fail(w, rc, "SecurityGroupsNotResolved", &e, tlr_strerror(rc));
            return;
        }
        for (size_t j = 0; j < l.n; j++)
            push_sg(nc, &l.v[j]);
        tlr_ec2_security_groups_free(&l);
    }
    if (nc->n_security_groups == 0)
        fail(w, TLR_E_NOTFOUND, "SecurityGroupsNotFound", NULL,
             "SecurityGroupSelector did not match any SecurityGroups");
}

static void images(lc_classes *cs, Tailor__V1__NodeClass *nc, const lc_nc_filters *f, failure *w)
{
    tlr_ec2_images l = { 0 };
    tlr_aws_error e = { 0 };
    int rc = cs->o.cloud.images(cs->o.cloud.arg, f->f, f->n, &l, &e);
    if (rc) {
        fail(w, rc, "AMIsNotResolved", &e, tlr_strerror(rc));
        return;
    }
    for (size_t j = 0; j < l.n; j++)
        if (l.v[j].deprecation_ms == 0 || l.v[j].deprecation_ms > now_ms(cs))
            push_ami(nc, l.v[j].id, l.v[j].name, k8s_arch(l.v[j].arch), l.v[j].creation_ms);
    tlr_ec2_images_free(&l);
}

static void resolve_amis(lc_classes *cs, Tailor__V1__NodeClass *nc, failure *w)
{
    bool via_ssm = false;
    for (size_t i = 0; i < nc->n_ami_selector_terms && !w->rc; i++) {
        const Tailor__V1__AmiSelectorTerm *t = nc->ami_selector_terms[i];
        if (t->alias[0] || t->ssm_parameter[0]) {
            via_ssm = true;
            /* One parameter per architecture for an alias. */
            static const char *const arches[] = { "x86_64", "arm64" };
            for (size_t a = 0; a < (t->alias[0] ? 2u : 1u); a++) {
                Tailor__V1__NodeClass one = TAILOR__V1__NODE_CLASS__INIT;
                Tailor__V1__AmiSelectorTerm *terms[1] = { (Tailor__V1__AmiSelectorTerm *)t };
                one.ami_selector_terms = terms;
                one.n_ami_selector_terms = 1;
                char *param = lc_lt_ssm_parameter(&one, cs->k8s, arches[a]);
                if (!param)
                    continue;
                char *ami = NULL;
                tlr_aws_error e = { 0 };
                int rc = cs->o.cloud.ssm_ami(cs->o.cloud.arg, param, &ami, &e);
                if (rc == TLR_OK) {
                    lc_nc_filters f = { 0 };
                    add_filter(&f, "image-id", NULL, ami);
                    size_t before = nc->n_amis;
                    images(cs, nc, &f, w);
                    lc_nc_filters_clear(&f);
                    /* Known to SSM but not described: keep it, arch from the alias. */
                    if (!w->rc && nc->n_amis == before)
                        push_ami(nc, ami, param, k8s_arch(arches[a]), 0);
                } else if (cs->o.log) {
                    TLR_WARN(cs->o.log, "AMI SSM parameter not resolved",
                             TLR_S("ec2nodeclass", nc->name), TLR_S("parameter", param),
                             TLR_S("aws_code", e.code), TLR_ERR(rc));
                }
                free(ami);
                free(param);
            }
            continue;
        }
        lc_nc_filters f;
        if (lc_nc_ami_filters(t, &f)) {
            fail(w, TLR_E_INVAL, "AMINotFound", NULL, "an amiSelectorTerm selects nothing");
            return;
        }
        images(cs, nc, &f, w);
        lc_nc_filters_clear(&f);
    }
    /* The documented local fallback: an alias SSM cannot resolve (moto has
     * no EKS parameters) uses --default-ami. */
    if (!w->rc && nc->n_amis == 0 && via_ssm && cs->default_ami)
        push_ami(nc, cs->default_ami, "default-ami", "", 0);
    if (!w->rc && nc->n_amis == 0)
        fail(w, TLR_E_NOTFOUND, "AMINotFound", NULL, "AMISelector did not match any AMIs");
}

static void resolve(lc_classes *cs, lc_class *c, const Tailor__V1__NodeClass *in)
{
    int64_t now = now_ms(cs);
    bool was_ready = c->conds[C_READY].status == 1, first = c->status_written == NULL;
    Tailor__V1__NodeClass *nc = nc_copy(in);
    clear_resolved(nc);
    failure w[3] = { { 0 }, { 0 }, { 0 } };
    resolve_subnets(cs, nc, &w[0]);
    resolve_sgs(cs, nc, &w[1]);
    resolve_amis(cs, nc, &w[2]);
    if (c->nc)
        protobuf_c_message_free_unpacked(&c->nc->base, NULL);
    c->nc = nc;
    c->reason[0] = c->message[0] = '\0';
    bool failed_call = false;
    for (int i = 0; i < 3; i++) {
        set_cond(c, i, w[i].rc == 0, w[i].rc ? w[i].reason : cond_type[i], now);
        if (w[i].rc && !c->reason[0]) {
            snprintf(c->reason, sizeof(c->reason), "%s", w[i].reason);
            snprintf(c->message, sizeof(c->message), "%s", w[i].message);
        }
        failed_call |= w[i].rc != 0;
    }
    recompute(c, now);
    c->ready = w[0].rc == 0 && w[1].rc == 0 && w[2].rc == 0;
    c->resolved_ms = now;
    if (c->ready) {
        c->resolve_failures = 0;
        c->retry_ms = now + cs->o.resolve_ttl_ms;
    } else {
        int64_t d = LC_NC_BACKOFF_MIN_MS << (c->resolve_failures < 5 ? c->resolve_failures : 5);
        c->retry_ms = now + (d < LC_NC_BACKOFF_MAX_MS ? d : LC_NC_BACKOFF_MAX_MS);
        c->resolve_failures++;
    }
    (void)failed_call;
    publish(cs, c, was_ready, first);
}

/* What resolution depends on: the spec, not the status we write (which
 * changes resource_version) -- the class packed without its status. */
static void spec_key_of(const Tailor__V1__NodeClass *nc, char *hex)
{
    Tailor__V1__NodeClass *k = nc_copy(nc);
    clear_resolved(k);
    for (size_t i = 0; i < k->n_conditions; i++)
        tailor__v1__condition__free_unpacked(k->conditions[i], NULL);
    free(k->conditions);
    k->conditions = NULL;
    k->n_conditions = 0;
    k->ready = false;
    if (k->resource_version != protobuf_c_empty_string)
        free(k->resource_version);
    k->resource_version = (char *)protobuf_c_empty_string;
    size_t n = protobuf_c_message_get_packed_size(&k->base);
    uint8_t *buf = tlr_malloc(n + 1);
    protobuf_c_message_pack(&k->base, buf);
    tlr_sigv4_sha256_hex(buf, n, hex);
    free(buf);
    protobuf_c_message_free_unpacked(&k->base, NULL);
}

static lc_class *class_new(lc_classes *cs, const char *name)
{
    lc_class *c = tlr_calloc(1, sizeof(*c));
    c->name = tlr_strdup(name);
    for (int k = 0; k < NCONDS; k++)
        c->conds[k].status = -1;
    TLR_GROW(cs->v, cs->cap, cs->n + 1);
    cs->v[cs->n++] = c;
    return c;
}

void lc_classes_sync(lc_classes *cs, const Tailor__V1__ClusterState *st)
{
    int64_t now = now_ms(cs);
    /* Forget classes that are gone. */
    for (size_t i = 0; i < cs->n;) {
        bool present = false;
        for (size_t j = 0; st && j < st->n_node_classes && !present; j++)
            present = strcmp(st->node_classes[j]->name, cs->v[i]->name) == 0;
        if (present) {
            i++;
            continue;
        }
        class_free(cs->v[i]);
        cs->v[i] = cs->v[--cs->n];
    }
    for (size_t j = 0; st && j < st->n_node_classes; j++) {
        const Tailor__V1__NodeClass *in = st->node_classes[j];
        lc_class *c = lc_classes_get(cs, in->name);
        if (!c)
            c = class_new(cs, in->name);
        char key[65];
        spec_key_of(in, key);
        bool changed = !c->spec_key || strcmp(c->spec_key, key) != 0;
        if (!changed && now < c->retry_ms)
            continue;
        free(c->spec_key);
        c->spec_key = tlr_strdup(key);
        if (changed)
            c->resolve_failures = 0;
        resolve(cs, c, in);
    }
}

lc_class *lc_classes_ensure(lc_classes *cs, const char *name)
{
    lc_class *c = lc_classes_get(cs, name);
    if (c && c->nc)
        return c;
    Tailor__V1__NodeClass *nc = NULL;
    if (!cs->o.kube.nodeclass_get ||
        cs->o.kube.nodeclass_get(cs->o.kube.arg, name, &nc) != TLR_OK)
        return c;
    if (!c)
        c = class_new(cs, name);
    char key[65];
    spec_key_of(nc, key);
    free(c->spec_key);
    c->spec_key = tlr_strdup(key);
    resolve(cs, c, nc);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
    return c;
}

bool lc_class_usable(const lc_class *c, int64_t now_ms, const char **why)
{
    if (!c || !c->nc) {
        if (why)
            *why = "EC2NodeClass not resolved yet";
        return false;
    }
    if (!c->ready) {
        if (why)
            *why = c->message[0] ? c->message : "EC2NodeClass not ready";
        return false;
    }
    if (c->blocked_until_ms > now_ms) {
        if (why)
            *why = c->block_message;
        return false;
    }
    return true;
}

void lc_classes_launch_failed(lc_classes *cs, const char *name, const char *code,
                              const char *message)
{
    lc_class *c = lc_classes_get(cs, name);
    if (!c)
        return;
    int64_t now = now_ms(cs);
    int64_t d = LC_NC_BACKOFF_MIN_MS << (c->launch_failures < 5 ? c->launch_failures : 5);
    c->blocked_until_ms = now + (d < LC_NC_BACKOFF_MAX_MS ? d : LC_NC_BACKOFF_MAX_MS);
    c->launch_failures++;
    snprintf(c->block_reason, sizeof(c->block_reason), "%s", code && code[0] ? code
                                                                              : "LaunchFailed");
    snprintf(c->block_message, sizeof(c->block_message), "launches paused for %llds: %s",
             (long long)((c->blocked_until_ms - now) / 1000), message ? message : "");
    bool was_ready = c->conds[C_READY].status == 1;
    recompute(c, now);
    publish(cs, c, was_ready, false);
}

void lc_classes_launch_ok(lc_classes *cs, const char *name)
{
    lc_class *c = lc_classes_get(cs, name);
    if (!c || c->launch_failures == 0)
        return;
    c->launch_failures = 0;
    c->blocked_until_ms = 0;
    bool was_ready = c->conds[C_READY].status == 1;
    recompute(c, now_ms(cs));
    publish(cs, c, was_ready, false);
}

const Tailor__V1__Catalog *lc_class_catalog(lc_class *c, const Tailor__V1__Catalog *base)
{
    if (!c || !c->nc || c->nc->n_subnets == 0)
        return base;
    /* The zone set, sorted and unique, is the view's identity. */
    const char *zones[64];
    size_t nz = 0;
    for (size_t i = 0; i < c->nc->n_subnets && nz < 64; i++) {
        const char *z = c->nc->subnets[i]->zone;
        size_t k = 0;
        while (k < nz && strcmp(zones[k], z) < 0)
            k++;
        if (k < nz && strcmp(zones[k], z) == 0)
            continue;
        memmove(zones + k + 1, zones + k, (nz - k) * sizeof(*zones));
        zones[k] = z;
        nz++;
    }
    char key[1024];
    size_t off = (size_t)snprintf(key, sizeof(key), "%s", base->hash);
    for (size_t i = 0; i < nz && off < sizeof(key); i++)
        off += (size_t)snprintf(key + off, sizeof(key) - off, ",%s", zones[i]);
    if (c->view_key && strcmp(c->view_key, key) == 0)
        return c->view ? c->view : base;
    tlr_catalog_free(c->view);
    free(c->view_key);
    c->view = NULL;
    c->view_key = tlr_strdup(key);
    /* The base itself (same hash: no catalog miss) when every offering is
     * in the class's zones already. */
    bool cut = false;
    for (size_t i = 0; i < base->n_instance_types && !cut; i++) {
        const Tailor__V1__InstanceType *it = base->instance_types[i];
        for (size_t j = 0; j < it->n_offerings && !cut; j++) {
            bool in = false;
            for (size_t z = 0; z < nz && !in; z++)
                in = strcmp(it->offerings[j]->zone, zones[z]) == 0;
            cut = !in;
        }
    }
    if (cut)
        c->view = tlr_catalog_restrict_zones(base, zones, nz);
    return c->view ? c->view : base;
}

const char *lc_class_lt_get(const lc_class *c, const char *ami)
{
    for (size_t i = 0; c && i < c->nlts; i++)
        if (strcmp(c->lts[i].ami, ami) == 0)
            return c->lts[i].id;
    return NULL;
}

void lc_class_lt_put(lc_class *c, const char *ami, const char *lt_id)
{
    TLR_GROW(c->lts, c->caplts, c->nlts + 1);
    c->lts[c->nlts].ami = tlr_strdup(ami);
    c->lts[c->nlts++].id = tlr_strdup(lt_id);
}
