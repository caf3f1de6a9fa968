/* migrate_cluster.c - the real world behind `tailorctl migrate`: the
 * Kubernetes and AWS clients of one cluster, snapshots of it as the
 * decisions see them, and the mig_ops the run loop acts through.
 *
 * Which nodes are legacy:
 *   --selector S  the Nodes matching the label selector S;
 *   --asg NAME    the Nodes whose providerID names a pending or running
 *                 EC2 instance tagged aws:autoscaling:groupName=NAME.
 * A node with a karpenter.sh/nodepool label is tailor's and is never
 * legacy.  Each legacy node's ASG is its instance's aws:autoscaling:
 * groupName tag (DescribeInstances, remembered per instance).
 *
 * The checkpoint is the ConfigMap <namespace>/tailor-migrate-<name>:
 * data["state.json"] (the JSON of tlr_mig_state_json) plus "phase" and
 * "summary" for `kubectl get cm`, written with the resourceVersion read
 * last, so two writers conflict instead of overwriting each other.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migctl.h"
#include "tlr_alloc.h"
#include "tlr_autoscaling.h"
#include "tlr_awscreds.h"
#include "tlr_awsjson.h"
#include "tlr_buf.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"
#include "tlr_kubesem.h"

#define EC2_CACHE_MS 2000

#define RES_REPLICASETS ((tlr_kube_res){ "apps", "v1", "replicasets", true })

typedef struct iasg {
    char *instance, *asg;    /* asg "" = in none */
} iasg;

struct mig_cluster {
    const mig_cfg *cfg;
    char name[256];
    char cm[80];
    char host[256];            /* this host, for the checkpoint's lock */
    tlr_kube *kc;
    tlr_logger *log;           /* the AWS clients' warnings, as JSON lines */
    tlr_aws_creds *creds;
    tlr_ec2 *ec2;
    tlr_asg *asg;
    tlr_aws_json *ssm;
    char *rv;                  /* the checkpoint's resourceVersion; NULL = none */
    int64_t ec2_at;            /* --asg: when members was read (mono) */
    char **members;            /* --asg: its instances, pending or running */
    size_t nmembers;
    iasg *known;               /* instance -> ASG */
    size_t nknown;
};

/* ---- snapshots ------------------------------------------------------------ */

static void errf(char *err, size_t len, const char *what, int rc, const tlr_kube_status *st)
{
    snprintf(err, len, "%s: %s%s%.300s", what, tlr_strerror(rc),
             st && st->message[0] ? ": " : "", st ? st->message : "");
}

static void aws_errf(char *err, size_t len, const char *what, int rc, const tlr_aws_error *e)
{
    snprintf(err, len, "%s: %s%s%s%s%.300s", what, tlr_strerror(rc), e->code[0] ? " (" : "",
             e->code, e->code[0] ? "): " : "", e->message);
}

typedef struct list_acc {
    json_object *arr;
} list_acc;

static int keep_item(void *arg, json_object *item)
{
    list_acc *a = arg;
    json_object_array_add(a->arr, json_object_get(item));
    return TLR_OK;
}

static int list_all(tlr_kube *kc, tlr_kube_res res, const char *label_selector,
                    json_object **out, char *err, size_t len)
{
    list_acc a = { json_object_new_array() };
    tlr_kube_status st = { 0 };
    tlr_kube_list_opts lo = { .label_selector = label_selector };
    int rc = tlr_kube_list(kc, &res, NULL, &lo, keep_item, &a, NULL, &st);
    if (rc != TLR_OK) {
        char what[128];
        snprintf(what, sizeof(what), "listing %s", res.plural);
        errf(err, len, what, rc, &st);
        json_object_put(a.arr);
        return rc;
    }
    *out = a.arr;
    return TLR_OK;
}

static bool has_str(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static const char *known_asg(const mig_cluster *c, const char *instance)
{
    for (size_t i = 0; instance && i < c->nknown; i++)
        if (strcmp(c->known[i].instance, instance) == 0)
            return c->known[i].asg;
    return NULL;
}

static void remember(mig_cluster *c, const char *instance, const char *asg)
{
    if (known_asg(c, instance) != NULL)
        return;
    c->known = tlr_realloc(c->known, (c->nknown + 1) * sizeof(*c->known));
    c->known[c->nknown++] = (iasg){ tlr_strdup(instance), tlr_strdup(asg ? asg : "") };
}

/* --asg: the group's live instances (cached a moment: the loop polls). */
static int asg_members(mig_cluster *c, char *err, size_t len)
{
    int64_t now = tlr_mono_ms();
    if (c->members != NULL && now - c->ec2_at < EC2_CACHE_MS)
        return TLR_OK;
    const char *vals[1] = { c->cfg->asg };
    const char *const states[] = { "pending", "running" };
    char tag[64];
    snprintf(tag, sizeof(tag), "tag:%s", TLR_ASG_NAME_TAG);
    tlr_ec2_filter f[2] = { { tag, vals, 1 }, { "instance-state-name", states, 2 } };
    tlr_ec2_instances in = { 0 };
    tlr_aws_error e = { 0 };
    int rc = tlr_ec2_describe_instances(c->ec2, f, 2, NULL, 0, 0, &in, &e);
    if (rc != TLR_OK) {
        aws_errf(err, len, "EC2 DescribeInstances", rc, &e);
        return rc;
    }
    for (size_t i = 0; i < c->nmembers; i++)
        free(c->members[i]);
    free(c->members);
    c->members = tlr_calloc(in.n + 1, sizeof(*c->members));
    c->nmembers = 0;
    for (size_t i = 0; i < in.n; i++) {
        c->members[c->nmembers++] = tlr_strdup(in.v[i].id);
        remember(c, in.v[i].id, c->cfg->asg);
    }
    c->members[c->nmembers] = NULL;
    c->ec2_at = now;
    tlr_ec2_instances_free(&in);
    return TLR_OK;
}

/* --selector: the ASG of instances not seen before. */
static int learn_asgs(mig_cluster *c, const char *const *ids, size_t n, char *err, size_t len)
{
    const char **ask = tlr_calloc(n + 1, sizeof(*ask));
    size_t nask = 0;
    int rc = TLR_OK;
    for (size_t i = 0; i < n; i++)
        if (known_asg(c, ids[i]) == NULL)
            ask[nask++] = ids[i];
    if (nask > 0) {
        tlr_ec2_filter f = { "instance-id", ask, nask };
        tlr_ec2_instances in = { 0 };
        tlr_aws_error e = { 0 };
        rc = tlr_ec2_describe_instances(c->ec2, &f, 1, NULL, 0, 0, &in, &e);
        if (rc == TLR_OK) {
            for (size_t i = 0; i < in.n; i++)
                remember(c, in.v[i].id, tlr_ec2_instance_tag(&in.v[i], TLR_ASG_NAME_TAG));
            for (size_t i = 0; i < nask; i++)
                remember(c, ask[i], "");   /* EC2 does not know it: no ASG */
        } else {
            aws_errf(err, len, "EC2 DescribeInstances", rc, &e);
        }
        tlr_ec2_instances_free(&in);
    }
    free(ask);
    return rc;
}

static bool pod_ready(json_object *p)
{
    json_object *conds = tlr_json_arr(p, "status.conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        if (t && strcmp(t, "Ready") == 0)
            return s && strcmp(s, "True") == 0;
    }
    return false;
}

static void pod_restarts(json_object *p, int *restarts, bool *crashloop)
{
    *restarts = 0;
    *crashloop = false;
    static const char *const lists[] = { "status.containerStatuses",
                                         "status.initContainerStatuses" };
    for (size_t l = 0; l < 2; l++) {
        json_object *cs = tlr_json_arr(p, lists[l]);
        for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
            json_object *c = json_object_array_get_idx(cs, i);
            int64_t n = 0;
            if (tlr_json_int(c, "restartCount", &n) == TLR_OK && n > 0 && n < 1000000)
                *restarts += (int)n;
            const char *why = tlr_json_str(c, "state.waiting.reason");
            if (why && strcmp(why, "CrashLoopBackOff") == 0)
                *crashloop = true;
        }
    }
}

/* The controller owner reference of o: kind and name (borrowed). */
static bool controller_of(json_object *o, const char **kind, const char **name)
{
    json_object *refs = tlr_json_arr(o, "metadata.ownerReferences");
    for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        bool ctl = false;
        if (tlr_json_bool(r, "controller", &ctl) == TLR_OK && ctl) {
            *kind = tlr_json_str(r, "kind");
            *name = tlr_json_str(r, "name");
            return *kind && *name;
        }
    }
    return false;
}

int mig_cluster_snapshot(mig_cluster *c, mig_snap *out, char *err, size_t len)
{
    json_object *nodes = NULL, *sel = NULL, *pods = NULL, *rss = NULL;
    mig_snap s = { 0 };
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = list_all(c->kc, TLR_KUBE_RES_NODES, NULL, &nodes, err, len)) != TLR_OK)
        goto out;
    if (c->cfg->selector &&
        (rc = list_all(c->kc, TLR_KUBE_RES_NODES, c->cfg->selector, &sel, err, len)) != TLR_OK)
        goto out;
    if (c->cfg->asg && (rc = asg_members(c, err, len)) != TLR_OK)
        goto out;
    if ((rc = list_all(c->kc, TLR_KUBE_RES_PODS, NULL, &pods, err, len)) != TLR_OK)
        goto out;

    size_t nn = json_object_array_length(nodes);
    s.nodes = tlr_calloc(nn + 1, sizeof(*s.nodes));
    const char **ids = tlr_calloc(nn + 1, sizeof(*ids));
    size_t nids = 0;
    for (size_t i = 0; i < nn; i++) {
        json_object *n = json_object_array_get_idx(nodes, i);
        const char *name = tlr_json_str(n, "metadata.name");
        if (name == NULL)
            continue;
        tlr_mig_nodev *v = &s.nodes[s.nnodes++];
        const char *inst = tlr_provider_id_instance(tlr_json_str(n, "spec.providerID"));
        bool unsched = false;
        tlr_json_bool(n, "spec.unschedulable", &unsched);
        v->name = mig_snap_str(&s, name);
        v->instance = mig_snap_str(&s, inst ? inst : "");
        const char *zone = tlr_json_str(n, "metadata.labels.topology\\.kubernetes\\.io/zone");
        v->zone = mig_snap_str(&s, zone ? zone : "");
        v->tailor = tlr_json_str(n, "metadata.labels.karpenter\\.sh/nodepool") != NULL;
        v->unschedulable = unsched;
        v->asg = "";
        if (v->tailor)
            continue;
        if (c->cfg->asg) {
            v->selected = inst && has_str(c->members, c->nmembers, inst);
        } else {
            for (size_t k = 0; sel && k < json_object_array_length(sel) && !v->selected; k++) {
                const char *sn = tlr_json_str(json_object_array_get_idx(sel, k), "metadata.name");
                v->selected = sn && strcmp(sn, name) == 0;
            }
        }
        if (v->selected && inst)
            ids[nids++] = v->instance;
    }
    if (c->cfg->selector && nids > 0 && (rc = learn_asgs(c, ids, nids, err, len)) != TLR_OK) {
        free(ids);
        goto out;
    }
    free(ids);
    for (size_t i = 0; i < s.nnodes; i++)
        if (s.nodes[i].selected) {
            const char *a = known_asg(c, s.nodes[i].instance);
            s.nodes[i].asg = mig_snap_str(&s, a ? a : "");
        }

    size_t np = json_object_array_length(pods);
    bool need_rs = false;
    for (size_t i = 0; i < np && !need_rs; i++) {
        const char *k = NULL, *n = NULL;
        need_rs = controller_of(json_object_array_get_idx(pods, i), &k, &n) &&
                  strcmp(k, "ReplicaSet") == 0;
    }
    if (need_rs && (rc = list_all(c->kc, RES_REPLICASETS, NULL, &rss, err, len)) != TLR_OK)
        goto out;
    s.pods = tlr_calloc(np + 1, sizeof(*s.pods));
    for (size_t i = 0; i < np; i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        tlr_mig_podv *v = &s.pods[s.npods++];
        const char *ns = tlr_json_str(p, "metadata.namespace");
        const char *kind = NULL, *oname = NULL;
        const char *phase = tlr_json_str(p, "status.phase");
        const char *node = tlr_json_str(p, "spec.nodeName");
        const char *uid = tlr_json_str(p, "metadata.uid");
        const char *name = tlr_json_str(p, "metadata.name");
        v->uid = mig_snap_str(&s, uid ? uid : "");
        v->ns = mig_snap_str(&s, ns ? ns : "default");
        v->name = mig_snap_str(&s, name ? name : "");
        v->node = mig_snap_str(&s, node ? node : "");
        if (controller_of(p, &kind, &oname) && strcmp(kind, "ReplicaSet") == 0) {
            /* A Deployment's ReplicaSet changes with every rollout: the
             * workload is the Deployment. */
            for (size_t k = 0; rss && k < json_object_array_length(rss); k++) {
                json_object *rs = json_object_array_get_idx(rss, k);
                const char *rn = tlr_json_str(rs, "metadata.name");
                const char *rns = tlr_json_str(rs, "metadata.namespace");
                const char *dk = NULL, *dn = NULL;
                if (rn && rns && strcmp(rn, oname) == 0 && strcmp(rns, v->ns) == 0 &&
                    controller_of(rs, &dk, &dn) && strcmp(dk, "Deployment") == 0) {
                    kind = dk;
                    oname = dn;
                    break;
                }
            }
        }
        v->owner_kind = mig_snap_str(&s, kind ? kind : "");
        v->owner_name = mig_snap_str(&s, oname ? oname : "");
        v->terminal = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
        v->deleting = tlr_json_str(p, "metadata.deletionTimestamp") != NULL;
        v->ready = pod_ready(p);
        pod_restarts(p, &v->restarts, &v->crashloop);
    }
    *out = s;
    memset(&s, 0, sizeof(s));
out:
    mig_snap_free(&s);
    if (nodes)
        json_object_put(nodes);
    if (sel)
        json_object_put(sel);
    if (pods)
        json_object_put(pods);
    if (rss)
        json_object_put(rss);
    return rc;
}

/* ---- the ops -------------------------------------------------------------------- */

static int o_snapshot(void *arg, mig_snap *out, char *err, size_t len)
{
    return mig_cluster_snapshot(arg, out, err, len);
}

static int o_cordon(void *arg, const char *node, bool on, char *err, size_t len)
{
    mig_cluster *c = arg;
    tlr_kube_res res = TLR_KUBE_RES_NODES;
    tlr_kube_status st = { 0 };
    int rc = tlr_kube_patch(c->kc, &res, NULL, node, NULL, TLR_KUBE_PATCH_MERGE,
                            on ? "{\"spec\":{\"unschedulable\":true}}"
                               : "{\"spec\":{\"unschedulable\":null}}", NULL, &st);
    if (rc != TLR_OK)
        errf(err, len, on ? "cordon" : "uncordon", rc, &st);
    return rc;
}

static int o_load(void *arg, tlr_mig_state *out, char *err, size_t len)
{
    mig_cluster *c = arg;
    tlr_kube_res res = TLR_KUBE_RES_CONFIGMAPS;
    tlr_kube_status st = { 0 };
    json_object *cm = NULL;
    int rc = tlr_kube_get(c->kc, &res, c->cfg->ns, c->cm, &cm, &st);
    free(c->rv);
    c->rv = NULL;
    if (rc == TLR_E_NOTFOUND)
        return rc;
    if (rc != TLR_OK) {
        errf(err, len, "reading the checkpoint ConfigMap", rc, &st);
        return rc;
    }
    const char *text = tlr_json_str(cm, "data.state\\.json");
    const char *rv = tlr_json_str(cm, "metadata.resourceVersion");
    c->rv = tlr_strdup(rv);
    char perr[512];
    if (text == NULL) {
        snprintf(err, len, "ConfigMap %s/%s has no data[\"state.json\"]: not a checkpoint",
                 c->cfg->ns, c->cm);
        rc = TLR_E_PARSE;
    } else if ((rc = tlr_mig_state_parse(text, strlen(text), out, perr, sizeof(perr))) !=
               TLR_OK) {
        snprintf(err, len, "ConfigMap %s/%s: data[\"state.json\"]: %s", c->cfg->ns, c->cm, perr);
    }
    json_object_put(cm);
    return rc;
}

static int ensure_namespace(mig_cluster *c, char *err, size_t len)
{
    tlr_kube_res res = TLR_KUBE_RES_NAMESPACES;
    tlr_kube_status st = { 0 };
    json_object *ns = NULL;
    if (tlr_kube_get(c->kc, &res, NULL, c->cfg->ns, &ns, NULL) == TLR_OK) {
        json_object_put(ns);
        return TLR_OK;
    }
    json_object *body = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object_object_add(body, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(body, "kind", json_object_new_string("Namespace"));
    json_object_object_add(meta, "name", json_object_new_string(c->cfg->ns));
    json_object_object_add(body, "metadata", meta);
    int rc = tlr_kube_create_obj(c->kc, &res, NULL, body, NULL, &st);
    json_object_put(body);
    if (rc == TLR_E_EXISTS)
        rc = TLR_OK;
    if (rc != TLR_OK)
        errf(err, len, "creating namespace", rc, &st);
    return rc;
}

static int o_save(void *arg, const tlr_mig_state *s, char *err, size_t len)
{
    mig_cluster *c = arg;
    tlr_kube_res res = TLR_KUBE_RES_CONFIGMAPS;
    tlr_kube_status st = { 0 };
    tlr_buf b;
    tlr_mig_counts n;
    char summary[256];
    tlr_buf_init(&b, 1u << 20);   /* a ConfigMap holds at most 1 MiB */
    if (tlr_mig_state_json(s, &b) != TLR_OK) {
        snprintf(err, len, "the checkpoint is over 1 MiB");
        tlr_buf_free(&b);
        return TLR_E_TOOBIG;
    }
    tlr_mig_state_counts(s, &n);
    snprintf(summary, sizeof(summary), "%zu/%zu nodes done, %zu in flight, batch %d",
             n.done, n.total, n.in_flight, s->batch_no);
    json_object *cm = json_object_new_object(), *meta = json_object_new_object();
    json_object *labels = json_object_new_object(), *data = json_object_new_object();
    json_object_object_add(cm, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(cm, "kind", json_object_new_string("ConfigMap"));
    json_object_object_add(meta, "name", json_object_new_string(c->cm));
    json_object_object_add(meta, "namespace", json_object_new_string(c->cfg->ns));
    json_object_object_add(labels, "app.kubernetes.io/managed-by",
                           json_object_new_string("tailorctl"));
    json_object_object_add(labels, "tailor.dev/migration", json_object_new_string("true"));
    json_object_object_add(meta, "labels", labels);
    if (c->rv)
        json_object_object_add(meta, "resourceVersion", json_object_new_string(c->rv));
    json_object_object_add(cm, "metadata", meta);
    json_object_object_add(data, "state.json", json_object_new_string(tlr_buf_str(&b)));
    json_object_object_add(data, "phase", json_object_new_string(tlr_mig_phase_name(s->phase)));
    json_object_object_add(data, "summary", json_object_new_string(summary));
    json_object_object_add(cm, "data", data);
    tlr_buf_free(&b);
    json_object *got = NULL;
    int rc;
    if (c->rv == NULL) {
        rc = tlr_kube_create_obj(c->kc, &res, c->cfg->ns, cm, &got, &st);
        if (rc == TLR_E_NOTFOUND && ensure_namespace(c, err, len) == TLR_OK)
            rc = tlr_kube_create_obj(c->kc, &res, c->cfg->ns, cm, &got, &st);
        if (rc == TLR_E_EXISTS)
            rc = TLR_E_CONFLICT;   /* someone created it since we looked */
    } else {
        rc = tlr_kube_update(c->kc, &res, c->cfg->ns, c->cm, NULL, cm, &got, &st);
    }
    json_object_put(cm);
    if (rc == TLR_OK) {
        free(c->rv);
        c->rv = tlr_strdup(tlr_json_str(got, "metadata.resourceVersion"));
    } else {
        errf(err, len, "writing the checkpoint ConfigMap", rc, &st);
    }
    if (got)
        json_object_put(got);
    return rc;
}

/* "0", 0, "0%" */
static bool zero_intstr(json_object *v)
{
    if (v == NULL)
        return false;
    if (json_object_is_type(v, json_type_int))
        return json_object_get_int64(v) == 0;
    const char *s = json_object_get_string(v);
    return s && (strcmp(s, "0") == 0 || strcmp(s, "0%") == 0);
}

static int o_restart(void *arg, const char *ns, const char *name, const char *token,
                     bool *started, char *err, size_t len)
{
    mig_cluster *c = arg;
    tlr_kube_res res = TLR_KUBE_RES_DEPLOYMENTS;
    tlr_kube_status st = { 0 };
    json_object *d = NULL;
    *started = false;
    int rc = tlr_kube_get(c->kc, &res, ns, name, &d, &st);
    if (rc != TLR_OK) {
        errf(err, len, "reading the Deployment", rc, &st);
        return rc;
    }
    const char *type = tlr_json_str(d, "spec.strategy.type");
    json_object *surge = tlr_json_get(d, "spec.strategy.rollingUpdate.maxSurge");
    const char *done = tlr_json_str(d, "spec.template.metadata.annotations.tailor\\.dev/"
                                       "restarted-for");
    bool can = !(type && strcmp(type, "Recreate") == 0) && !zero_intstr(surge);
    bool already = done && strcmp(done, token) == 0;
    json_object_put(d);
    if (!can)
        return TLR_E_UNIMPLEMENTED;
    if (already)
        return TLR_OK;
    char now[TLR_TIME_BUFLEN];
    tlr_time_format_s(tlr_wall_ms(), now);
    tlr_buf b;
    tlr_buf_init(&b, 4096);
    tlr_buf_printf(&b, "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{"
                   "\"kubectl.kubernetes.io/restartedAt\":\"%s\",\"tailor.dev/restarted-for\":",
                   now);
    tlr_buf_add_json_str(&b, token);
    tlr_buf_adds(&b, "}}}}}");
    rc = tlr_kube_patch(c->kc, &res, ns, name, NULL, TLR_KUBE_PATCH_MERGE, tlr_buf_str(&b), NULL,
                        &st);
    tlr_buf_free(&b);
    if (rc != TLR_OK) {
        errf(err, len, "patching the Deployment", rc, &st);
        return rc;
    }
    *started = true;
    return TLR_OK;
}

static int o_asg_describe(void *arg, const char *asg, mig_asg_view *out, char *err, size_t len)
{
    mig_cluster *c = arg;
    tlr_asg_groups g = { 0 };
    tlr_aws_error e = { 0 };
    const char *names[1] = { asg };
    int rc = tlr_asg_describe(c->asg, names, 1, 0, &g, &e);
    if (rc != TLR_OK) {
        aws_errf(err, len, "Auto Scaling DescribeAutoScalingGroups", rc, &e);
        return rc;
    }
    const tlr_asg_group *gr = tlr_asg_groups_find(&g, asg);
    if (gr == NULL) {
        snprintf(err, len, "Auto Scaling Group %s does not exist", asg);
        tlr_asg_groups_free(&g);
        return TLR_E_NOTFOUND;
    }
    memset(out, 0, sizeof(*out));
    out->min = gr->min;
    out->max = gr->max;
    out->desired = gr->desired;
    out->instances = tlr_calloc(gr->ninstances + 1, sizeof(*out->instances));
    for (size_t i = 0; i < gr->ninstances; i++)
        if (strncmp(gr->instances[i].lifecycle, "Terminat", 8) != 0)
            out->instances[out->ninstances++] = tlr_strdup(gr->instances[i].id);
    tlr_asg_groups_free(&g);
    return TLR_OK;
}

static int o_asg_update(void *arg, const char *asg, int min, int max, int desired, char *err,
                        size_t len)
{
    mig_cluster *c = arg;
    tlr_aws_error e = { 0 };
    int rc = tlr_asg_update(c->asg, asg, &(tlr_asg_sizes){ min, max, desired }, &e);
    if (rc != TLR_OK)
        aws_errf(err, len, "Auto Scaling UpdateAutoScalingGroup", rc, &e);
    return rc;
}

static int o_asg_terminate(void *arg, const char *instance, char *err, size_t len)
{
    mig_cluster *c = arg;
    tlr_aws_error e = { 0 };
    int rc = tlr_asg_terminate_instance(c->asg, instance, true, NULL, &e);
    if (rc != TLR_OK && rc != TLR_E_NOTFOUND)
        aws_errf(err, len, "Auto Scaling TerminateInstanceInAutoScalingGroup", rc, &e);
    c->ec2_at = 0;   /* membership changed: read it again */
    return rc;
}

static void o_sleep(void *arg, int64_t ms)
{
    (void)arg;
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static bool o_alive(void *arg, int64_t pid)
{
    (void)arg;
    if (pid <= 0)
        return false;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

void mig_cluster_ops(mig_cluster *c, mig_ops *out)
{
    *out = (mig_ops){
        .snapshot = o_snapshot, .cordon = o_cordon, .load = o_load, .save = o_save,
        .restart = o_restart, .asg_describe = o_asg_describe, .asg_update = o_asg_update,
        .asg_terminate = o_asg_terminate, .drain = tlr_drain_kube_ops(c->kc),
        .sleep_ms = o_sleep, .alive = o_alive, .clock = tlr_clock_system, .arg = c,
    };
}

/* ---- open / close ----------------------------------------------------------------- */

int mig_cluster_open(const mig_cfg *cfg, mig_cluster **out, char *err, size_t len)
{
    mig_cluster *c = tlr_calloc(1, sizeof(*c));
    tlr_kube_config *kcfg = NULL;
    int rc;
    c->cfg = cfg;
    if (cfg->name)
        snprintf(c->name, sizeof(c->name), "%s", cfg->name);
    else if (cfg->asg)
        snprintf(c->name, sizeof(c->name), "%s", cfg->asg);
    else {
        /* "eks.amazonaws.com/nodegroup=ng-1" -> "ng-1" */
        const char *eq = cfg->selector ? strrchr(cfg->selector, '=') : NULL;
        snprintf(c->name, sizeof(c->name), "%s", eq ? eq + 1 : cfg->selector ? cfg->selector : "");
    }
    tlr_mig_configmap_name(c->name, c->cm, sizeof(c->cm));
    if (gethostname(c->host, sizeof(c->host) - 1) != 0 || !c->host[0])
        snprintf(c->host, sizeof(c->host), "unknown-host");
    /* Progress is ours to print; the clients only speak up for trouble. */
    tlr_logger_create(&(tlr_log_opts){ .service = "tailorctl", .level = TLR_LOG_WARN, .fd = 2 },
                      &c->log);
    rc = cfg->in_cluster ? tlr_kube_config_incluster(NULL, &kcfg, err, len)
                         : tlr_kube_config_load(cfg->kubeconfig, cfg->context, &kcfg, err, len);
    if (rc == TLR_OK)
        rc = tlr_kube_create(kcfg, &(tlr_kube_opts){ .timeout_ms = 30000, .log = c->log,
                                                     .user_agent = "tailorctl-migrate" }, &c->kc);
    if (rc != TLR_OK) {
        if (!err[0])
            snprintf(err, len, "kubeconfig: %s", tlr_strerror(rc));
        goto fail;
    }
    if ((rc = tlr_aws_creds_create(&(tlr_aws_creds_opts){ .region = cfg->region, .log = c->log },
                                   &c->creds)) ||
        (rc = tlr_ec2_create(&(tlr_aws_query_opts){ .region = cfg->region,
                                                    .endpoint = cfg->endpoint,
                                                    .creds = c->creds, .log = c->log }, &c->ec2)) ||
        (rc = tlr_asg_create(&(tlr_aws_query_opts){ .region = cfg->region,
                                                    .endpoint = cfg->endpoint,
                                                    .creds = c->creds, .log = c->log }, &c->asg)) ||
        (rc = tlr_aws_json_create(&(tlr_aws_json_opts){ .service = "ssm",
                                                        .target_prefix = "AmazonSSM",
                                                        .region = cfg->region,
                                                        .endpoint = cfg->endpoint,
                                                        .creds = c->creds, .log = c->log },
                                  &c->ssm))) {
        snprintf(err, len, "AWS clients: %s", tlr_strerror(rc));
        goto fail;
    }
    *out = c;
    return TLR_OK;
fail:
    mig_cluster_free(c);
    return rc;
}

void mig_cluster_free(mig_cluster *c)
{
    if (c == NULL)
        return;
    tlr_kube_free(c->kc);
    tlr_aws_json_free(c->ssm);
    tlr_asg_free(c->asg);
    tlr_ec2_free(c->ec2);
    tlr_aws_creds_free(c->creds);
    tlr_logger_free(c->log);
    free(c->rv);
    for (size_t i = 0; i < c->nmembers; i++)
        free(c->members[i]);
    free(c->members);
    for (size_t i = 0; i < c->nknown; i++) {
        free(c->known[i].instance);
        free(c->known[i].asg);
    }
    free(c->known);
    free(c);
}

const char *mig_cluster_name(const mig_cluster *c)
{
    return c->name;
}

tlr_kube *mig_cluster_kube(mig_cluster *c)
{
    return c->kc;
}

tlr_ec2 *mig_cluster_ec2(mig_cluster *c)
{
    return c->ec2;
}

tlr_aws_json *mig_cluster_ssm(mig_cluster *c)
{
    return c->ssm;
}

const mig_cfg *mig_cluster_cfg(const mig_cluster *c)
{
    return c->cfg;
}

void mig_run_opts_from(const mig_cfg *cfg, mig_cluster *c, const char *label,
                       mig_run_opts *out)
{
    *out = (mig_run_opts){
        .name = c->name, .label = label ? label : c->name, .selector = cfg->selector,
        .asg = cfg->asg, .batch = cfg->batch, .max_nodes = cfg->max_nodes,
        .max_pending = cfg->max_pending, .restart_threshold = cfg->restart_threshold,
        .cordon_all = cfg->cordon == 0, .restart_single = cfg->restart_single,
        .drain_timeout_ms = cfg->drain_timeout_ms, .ready_timeout_ms = cfg->ready_timeout_ms,
        .health_timeout_ms = cfg->health_timeout_ms,
        .remove_timeout_ms = cfg->remove_timeout_ms, .poll_ms = cfg->poll_ms,
        .lock_ttl_ms = cfg->lock_ttl_ms, .heartbeat_ms = 10000, .host = c->host,
        .pid = (int64_t)getpid(), .progress = stderr, .progress_json = cfg->output == 1,
    };
}
