/* nodeclass.c - EC2NodeClass resolution, readiness, back-off and catalog
 * views (nodeclass.h). */
#include "nodeclass.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchtemplate.h"
#include "tlr_alloc.h"
#include "tlr_ami.h"
#include "tlr_catalog.h"
#include "tlr_nodeshape.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"
#include "tlr_sigv4.h"

enum { C_SUBNETS, C_SGS, C_AMIS, C_PROFILE, C_VALID, C_READY, NCONDS };
static const char *const cond_type[NCONDS] = { "SubnetsReady", "SecurityGroupsReady",
                                               "AMIsReady", "InstanceProfileReady",
                                               "ValidationSucceeded", "Ready" };

struct lc_classes {
    lc_classes_opts o;
    char *default_ami, *k8s, *cluster, *region;
    int64_t profile_gc_ms;           /* next instance-profile GC (wall) */
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
    cs->cluster = tlr_strdup(o->cluster ? o->cluster : "");
    cs->region = tlr_strdup(o->region ? o->region : "");
    cs->o.cluster = cs->cluster;
    cs->o.region = cs->region;
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
    free(cs->cluster);
    free(cs->region);
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
        if (m->n_requirements > 0) {
            static const char *const ops[] = { "", "In", "NotIn", "Exists", "DoesNotExist",
                                               "Gt", "Lt", "Gte", "Lte" };
            json_object *reqs = json_object_new_array();
            for (size_t k = 0; k < m->n_requirements; k++) {
                const Tailor__V1__NodeSelectorRequirement *r = m->requirements[k];
                json_object *req = json_object_new_object();
                json_object_object_add(req, "key", json_object_new_string(r->key));
                json_object_object_add(req, "operator",
                                       json_object_new_string((unsigned)r->operator_ < 9
                                                                  ? ops[r->operator_] : ""));
                if (r->n_values > 0) {
                    json_object *vals = json_object_new_array();
                    for (size_t v = 0; v < r->n_values; v++)
                        json_object_array_add(vals, json_object_new_string(r->values[v]));
                    json_object_object_add(req, "values", vals);
                }
                json_object_array_add(reqs, req);
            }
            json_object_object_add(o, "requirements", reqs);
        }
        json_object_array_add(a, o);
    }
    json_object_object_add(st, "amis", a);
    if (nc && nc->role[0] && nc->instance_profile[0])
        json_object_object_add(st, "instanceProfile", json_object_new_string(nc->instance_profile));
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
static void nc_publish(lc_classes *cs, lc_class *c, bool was_ready, bool first)
{
    char *js = lc_class_status_json(c);
    if (!c->status_written || c->rewrite || strcmp(js, c->status_written) != 0) {
        int rc = cs->o.kube.nodeclass_status
                     ? cs->o.kube.nodeclass_status(cs->o.kube.arg, c->name, js) : TLR_OK;
        if (rc == TLR_OK) {
            free(c->status_written);
            c->status_written = js;
            c->rewrite = false;
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

/* The variant an AMI serves, as Karpenter's requirements say it:
 * standard - no GPU, no accelerator; nvidia - a GPU; neuron - an
 * accelerator (Inferentia, Trainium).  "" = any type of its arch. */
static const char *const VARIANT_KEYS[] = { TLR_LABEL_INSTANCE_GPU_COUNT,
                                            TLR_LABEL_INSTANCE_ACCELERATOR_COUNT };

static void add_req(Tailor__V1__ResolvedAmi *m, const char *key,
                    Tailor__V1__SelectorOperator op, const char *value)
{
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup(key);
    r->operator_ = op;
    if (value) {
        r->values = tlr_calloc(1, sizeof(*r->values));
        r->values[r->n_values++] = tlr_strdup(value);
    }
    m->requirements = tlr_realloc(m->requirements, (m->n_requirements + 1) * sizeof(r));
    m->requirements[m->n_requirements++] = r;
}

/* The variant of a resolved AMI, read back from its requirements. */
static const char *ami_variant(const Tailor__V1__ResolvedAmi *m)
{
    for (size_t i = 0; i < m->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = m->requirements[i];
        if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS)
            return strcmp(r->key, VARIANT_KEYS[0]) == 0 ? "nvidia" : "neuron";
        if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST)
            return "standard";
    }
    return "";
}

/* Keep the newest image per architecture and variant (Karpenter: the
 * newest wins). */
static void push_ami(Tailor__V1__NodeClass *nc, const char *id, const char *name,
                     const char *arch, const char *variant, int64_t created)
{
    for (size_t i = 0; i < nc->n_amis; i++) {
        Tailor__V1__ResolvedAmi *m = nc->amis[i];
        if (strcmp(m->id, id) == 0 && strcmp(ami_variant(m), variant) == 0)
            return;
        if (strcmp(m->arch, arch) == 0 && strcmp(ami_variant(m), variant) == 0) {
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
    if (arch[0])
        add_req(m, TLR_LABEL_ARCH, TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN, arch);
    if (strcmp(variant, "standard") == 0) {
        add_req(m, VARIANT_KEYS[0], TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST,
                NULL);
        add_req(m, VARIANT_KEYS[1], TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST,
                NULL);
    } else if (strcmp(variant, "nvidia") == 0) {
        add_req(m, VARIANT_KEYS[0], TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS, NULL);
    } else if (strcmp(variant, "neuron") == 0) {
        add_req(m, VARIANT_KEYS[1], TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS, NULL);
    }
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

/* tlr_ami_ops over the launcher's cloud ops, so the launcher resolves
 * amiSelectorTerms with the same rules (aliases of every family, per
 * architecture and variant) as the rest of tailor (common/aws/ami.c). */
static int ami_ssm_get(void *arg, const char *name, char **value, tlr_aws_error *err)
{
    const lc_classes *cs = arg;
    return cs->o.cloud.ssm_ami(cs->o.cloud.arg, name, value, err);
}

static int ami_describe(void *arg, const tlr_ec2_filter *f, size_t nf, const char *const *ids,
                        size_t nids, const char *const *owners, size_t nowners,
                        tlr_ec2_images *out, tlr_aws_error *err)
{
    const lc_classes *cs = arg;
    tlr_ec2_filter all[LC_NC_MAX_FILTERS + 2];
    size_t n = 0;
    for (size_t i = 0; i < nf && n < LC_NC_MAX_FILTERS; i++)
        all[n++] = f[i];
    if (nids > 0)
        all[n++] = (tlr_ec2_filter){ "image-id", ids, nids };
    if (nowners > 0) {
        /* An account id is owner-id; "self", "amazon"... are owner-alias. */
        bool id = strspn(owners[0], "0123456789") == strlen(owners[0]);
        all[n++] = (tlr_ec2_filter){ id ? "owner-id" : "owner-alias", owners, nowners };
    }
    return cs->o.cloud.images(cs->o.cloud.arg, all, n, out, err);
}

static void resolve_amis(lc_classes *cs, Tailor__V1__NodeClass *nc, failure *w)
{
    /* A Windows node would need a Windows bootstrap tailor does not
     * write: refuse the class rather than launch half-configured nodes. */
    if (strncmp(nc->ami_family, "Windows", 7) == 0) {
        char m[160];
        snprintf(m, sizeof(m), "amiFamily %s is not supported by tailor (Linux nodes only: "
                 "AL2023, AL2, Bottlerocket, Custom)", nc->ami_family);
        fail(w, TLR_E_UNIMPLEMENTED, "AMIFamilyNotSupported", NULL, m);
        return;
    }
    tlr_ami_ops ops = { ami_ssm_get, ami_describe, cs };
    tlr_amis a = { 0 };
    char err[512] = "";
    bool via_ssm = false;
    for (size_t i = 0; i < nc->n_ami_selector_terms; i++)
        via_ssm |= nc->ami_selector_terms[i]->alias[0] || nc->ami_selector_terms[i]->ssm_parameter[0];
    int rc = tlr_ami_resolve(nc->ami_selector_terms, nc->n_ami_selector_terms, cs->k8s, &ops,
                             &a, err, sizeof(err));
    if (rc == TLR_E_NOTFOUND && via_ssm && cs->default_ami) {
        /* The documented fallback: aliases SSM cannot resolve use
         * --default-ami (of unknown architecture and variant). */
        push_ami(nc, cs->default_ami, "default-ami", "", "", 0);
        return;
    }
    if (rc == TLR_E_NOTFOUND) {
        char m[500];
        snprintf(m, sizeof(m), "AMISelector did not match any AMIs%s%.400s", err[0] ? ": " : "",
                 err);
        fail(w, rc, "AMINotFound", NULL, m);
        return;
    }
    if (rc != TLR_OK) {
        fail(w, rc, rc == TLR_E_INVAL ? "AMISelectorInvalid" : "AMIsNotResolved", NULL, err);
        return;
    }
    int64_t now = now_ms(cs);
    for (size_t i = 0; i < a.n; i++)
        if (a.v[i].deprecation_ms == 0 || a.v[i].deprecation_ms > now)
            push_ami(nc, a.v[i].id, a.v[i].name, a.v[i].arch, a.v[i].variant, a.v[i].creation_ms);
    /* Deprecated images are used only when nothing else is left. */
    for (size_t i = 0; nc->n_amis == 0 && i < a.n; i++)
        push_ami(nc, a.v[i].id, a.v[i].name, a.v[i].arch, a.v[i].variant, a.v[i].creation_ms);
    tlr_amis_free(&a);
}

/* spec.role: the class's instance profile, made or reused (profile.h);
 * the resolved copy carries its name for the launch template and the
 * status.  A class that names spec.instanceProfile keeps it. */
static void resolve_profile(lc_classes *cs, Tailor__V1__NodeClass *nc, failure *w)
{
    if (!nc->role[0] || !cs->o.iam.get)
        return;
    char *name = NULL;
    tlr_aws_error e = { 0 };
    int rc = lc_profile_ensure(&cs->o.iam, cs->o.cluster, cs->o.region, nc->name, nc->role,
                               &name, &e);
    if (rc) {
        fail(w, rc, e.code[0] ? e.code : tlr_errname(rc), &e, tlr_strerror(rc));
        return;
    }
    if (nc->instance_profile != protobuf_c_empty_string)
        free(nc->instance_profile);
    nc->instance_profile = name;
}

static void nc_resolve(lc_classes *cs, lc_class *c, const Tailor__V1__NodeClass *in)
{
    int64_t now = now_ms(cs);
    bool was_ready = c->conds[C_READY].status == 1, first = c->status_written == NULL;
    Tailor__V1__NodeClass *nc = nc_copy(in);
    clear_resolved(nc);
    failure w[4] = { { 0 }, { 0 }, { 0 }, { 0 } };
    resolve_subnets(cs, nc, &w[0]);
    resolve_sgs(cs, nc, &w[1]);
    resolve_amis(cs, nc, &w[2]);
    resolve_profile(cs, nc, &w[3]);
    if (c->nc)
        protobuf_c_message_free_unpacked(&c->nc->base, NULL);
    c->nc = nc;
    c->reason[0] = c->message[0] = '\0';
    bool failed_call = false;
    for (int i = 0; i < 4; i++) {
        set_cond(c, i, w[i].rc == 0, w[i].rc ? w[i].reason : cond_type[i], now);
        if (w[i].rc && !c->reason[0]) {
            snprintf(c->reason, sizeof(c->reason), "%s", w[i].reason);
            snprintf(c->message, sizeof(c->message), "%s", w[i].message);
        }
        failed_call |= w[i].rc != 0;
    }
    recompute(c, now);
    c->ready = w[0].rc == 0 && w[1].rc == 0 && w[2].rc == 0 && w[3].rc == 0;
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
    nc_publish(cs, c, was_ready, first);
}

/* Does the status the cluster holds disagree with the conditions we last
 * wrote?  Someone else wrote over them: the watcher sets
 * ValidationSucceeded and Ready False on a class that does not convert
 * (and the snapshot keeps its last good version, so we would not notice
 * otherwise); once it converts again our conditions must be written
 * back, even when nothing we resolve changed.  A condition the snapshot
 * does not have yet is our write not seen yet, not a disagreement; a
 * snapshot that lags behind our write costs a patch that changes
 * nothing. */
static bool status_overwritten(const lc_class *c, const Tailor__V1__NodeClass *in)
{
    if (!c->status_written)
        return false;
    for (int i = 0; i < NCONDS; i++) {
        const struct lc_cond *k = &c->conds[i];
        if (k->type[0] == '\0')
            continue;
        const Tailor__V1__Condition *have =
            tlr_ks_condition(in->conditions, in->n_conditions, k->type);
        bool have_true = have && have->status == TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE;
        if (have && have_true != (k->status == 1))
            return true;
    }
    return false;
}

/* What resolution depends on: the spec, not the status we write (which
 * changes resource_version) -- the class packed without its status. */
static void spec_key_of(const Tailor__V1__NodeClass *nc, char *hex)
{
    Tailor__V1__NodeClass *k = nc_copy(nc);
    clear_resolved(k);
    if (k->role[0] && k->instance_profile != protobuf_c_empty_string) {
        free(k->instance_profile);   /* read back from our own status */
        k->instance_profile = (char *)protobuf_c_empty_string;
    }
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

/* Instance profiles this cluster made for classes that no longer exist
 * are deleted, every LC_NC_PROFILE_GC_MS, never younger than that (a
 * class created a moment ago may not be in st yet). */
static void profile_gc(lc_classes *cs, const Tailor__V1__ClusterState *st, int64_t now)
{
    if (!cs->o.iam.list || !st || now < cs->profile_gc_ms)
        return;
    cs->profile_gc_ms = now + LC_NC_PROFILE_GC_MS;
    const char **live = tlr_calloc(st->n_node_classes + 1, sizeof(*live));
    for (size_t i = 0; i < st->n_node_classes; i++)
        live[i] = st->node_classes[i]->name;
    lc_profile_gc_opts g = { cs->o.cluster, cs->o.region, live, st->n_node_classes, now,
                             LC_NC_PROFILE_GC_MS };
    size_t deleted = 0;
    tlr_aws_error e = { 0 };
    int rc = lc_profile_gc(&cs->o.iam, &g, &deleted, &e);
    if (cs->o.log && (rc || deleted))
        TLR_INFO(cs->o.log, "instance profiles of deleted EC2NodeClasses collected",
                 TLR_I("deleted", (int64_t)deleted), TLR_S("aws_code", e.code),
                 TLR_S("aws_message", e.message), TLR_ERR(rc));
    free(live);
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

/* One class as in says it is now: resolved again when its spec changed
 * or its refresh is due (now >= retry_ms), else only its status rewritten
 * when someone overwrote it. */
static void nc_sync_one(lc_classes *cs, lc_class *c, const Tailor__V1__NodeClass *in,
                        int64_t now)
{
    char key[65];
    spec_key_of(in, key);
    bool changed = !c->spec_key || strcmp(c->spec_key, key) != 0;
    c->rewrite = c->rewrite || status_overwritten(c, in);
    if (!changed && now < c->retry_ms) {
        if (c->rewrite)
            nc_publish(cs, c, c->conds[C_READY].status == 1, false);
        return;
    }
    free(c->spec_key);
    c->spec_key = tlr_strdup(key);
    if (changed)
        c->resolve_failures = 0;
    nc_resolve(cs, c, in);
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
        nc_sync_one(cs, c, in, now);
    }
    profile_gc(cs, st, now);
}

void lc_classes_refresh(lc_classes *cs)
{
    int64_t now = now_ms(cs);
    for (size_t i = 0; i < cs->n; i++) {
        lc_class *c = cs->v[i];
        if (!c->nc || now < c->retry_ms)
            continue;
        Tailor__V1__NodeClass *nc = NULL;
        if (!cs->o.kube.nodeclass_get ||
            cs->o.kube.nodeclass_get(cs->o.kube.arg, c->name, &nc) != TLR_OK) {
            c->retry_ms = now + LC_NC_BACKOFF_MIN_MS;
            continue;
        }
        nc_sync_one(cs, c, nc, now);   /* due: resolved again */
        protobuf_c_message_free_unpacked(&nc->base, NULL);
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
    nc_resolve(cs, c, nc);
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
    nc_publish(cs, c, was_ready, false);
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
    nc_publish(cs, c, was_ready, false);
}

/* The zone ID of zone among the class's subnets ("" when none says). */
static const char *zone_id_of(const Tailor__V1__NodeClass *nc, const char *zone)
{
    for (size_t i = 0; i < nc->n_subnets; i++)
        if (!strcmp(nc->subnets[i]->zone, zone) && nc->subnets[i]->zone_id[0])
            return nc->subnets[i]->zone_id;
    return "";
}

const Tailor__V1__Catalog *lc_class_catalog(lc_class *c, const Tailor__V1__Catalog *base)
{
    if (!c || !c->nc)
        return base;
    /* What a node holds depends on the class's kubelet settings, AMI
     * family and disks: a class that changes them gets its own catalog. */
    tlr_node_shape shape = tlr_node_shape_of(c->nc);
    bool shaped = !tlr_node_shape_is_default(&shape);
    if (c->nc->n_subnets == 0 && !shaped)
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
    /* base hash, shape, zones: the shape before the zones, which may be
     * cut short by the buffer. */
    char key[1024], skey[TLR_NODE_SHAPE_KEY_LEN];
    tlr_node_shape_key(&shape, skey);
    size_t off = (size_t)snprintf(key, sizeof(key), "%s,%s", base->hash, skey);
    for (size_t i = 0; i < nz && off < sizeof(key); i++)
        off += (size_t)snprintf(key + off, sizeof(key) - off, ",%s=%s", zones[i],
                                zone_id_of(c->nc, zones[i]));
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
    Tailor__V1__Catalog *v = cut ? tlr_catalog_restrict_zones(base, zones, nz) : NULL;
    if (shaped) {
        Tailor__V1__Catalog *s = tlr_catalog_shaped(v ? v : base, &shape);
        tlr_catalog_free(v);
        v = s;
    }
    /* Offerings carry the zone IDs of the class's subnets, as Karpenter
     * takes them (topology.k8s.aws/zone-id requirements, node labels). */
    bool ids = false;
    for (size_t i = 0; i < nz && !ids; i++)
        ids = zone_id_of(c->nc, zones[i])[0] != '\0';
    if (ids) {
        if (!v)
            v = tlr_catalog_restrict_zones(base, zones, nz);
        for (size_t i = 0; i < v->n_instance_types; i++)
            for (size_t j = 0; j < v->instance_types[i]->n_offerings; j++) {
                Tailor__V1__Offering *o = v->instance_types[i]->offerings[j];
                const char *id = zone_id_of(c->nc, o->zone);
                if (id[0] && (!o->zone_id || !o->zone_id[0])) {
                    if (o->zone_id != protobuf_c_empty_string)
                        free(o->zone_id);
                    o->zone_id = tlr_strdup(id);
                }
            }
        tlr_catalog_set_hash(v);
    }
    c->view = v;
    return c->view ? c->view : base;
}

/* The variant instance type it needs: any GPU -> nvidia (Karpenter's
 * standard variant requires no gpu-count label at all), an accelerator
 * (Neuron) -> neuron, else standard. */
static const char *type_variant(const Tailor__V1__InstanceType *it)
{
    if (it->gpu_count > 0)
        return "nvidia";
    for (size_t i = 0; i < it->n_accelerators; i++)
        if (it->accelerators[i]->count > 0)
            return "neuron";
    return "standard";
}

const Tailor__V1__ResolvedAmi *lc_class_ami_for(const lc_class *c,
                                                const Tailor__V1__InstanceType *it)
{
    const Tailor__V1__NodeClass *nc = c ? c->nc : NULL;
    const Tailor__V1__ResolvedAmi *best = NULL;
    if (!nc || nc->n_amis == 0)
        return NULL;
    if (!it)
        return nc->amis[0];
    const char *want = type_variant(it);
    for (size_t i = 0; i < nc->n_amis; i++) {
        const Tailor__V1__ResolvedAmi *m = nc->amis[i];
        const char *v = ami_variant(m);
        if ((m->arch[0] && strcmp(m->arch, it->arch) != 0) || (v[0] && strcmp(v, want) != 0))
            continue;
        /* A variant match beats an AMI for any type; then the newest. */
        if (!best || (v[0] && !ami_variant(best)[0]) ||
            (!v[0] == !ami_variant(best)[0] && m->creation_unix_ms > best->creation_unix_ms))
            best = m;
    }
    return best;
}

/* The cache key: "<ami>/<user-data hash>" in the entry's ami field. */
static bool lt_key_is(const char *key, const char *ami, const char *ud_hash)
{
    size_t n = strlen(ami);
    return strncmp(key, ami, n) == 0 && key[n] == '/' && strcmp(key + n + 1, ud_hash) == 0;
}

const char *lc_class_lt_get(const lc_class *c, const char *ami, const char *ud_hash)
{
    for (size_t i = 0; c && i < c->nlts; i++)
        if (lt_key_is(c->lts[i].ami, ami, ud_hash ? ud_hash : ""))
            return c->lts[i].id;
    return NULL;
}

void lc_class_lt_put(lc_class *c, const char *ami, const char *ud_hash, const char *lt_id)
{
    size_t n = strlen(ami) + (ud_hash ? strlen(ud_hash) : 0) + 2;
    TLR_GROW(c->lts, c->caplts, c->nlts + 1);
    c->lts[c->nlts].ami = tlr_malloc(n);
    snprintf(c->lts[c->nlts].ami, n, "%s/%s", ami, ud_hash ? ud_hash : "");
    c->lts[c->nlts++].id = tlr_strdup(lt_id);
}
