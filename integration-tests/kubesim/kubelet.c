/* kubelet.c - the kubelet simulator: one reconcile pass from EC2 instances
 * to Nodes (see ks_kubelet.h), and its kubesim module.
 *
 * A pass is a three-way merge on instance id, all lists sorted by id:
 *   live   - instances tagged for the cluster in state pending/running,
 *            as EC2 reports them now;
 *   nodes  - Nodes in the store carrying KS_KUBELET_INSTANCE_LABEL;
 *   seen   - the simulator's memory: when it first saw each instance,
 *            when it registered its Node, the startup taints still to
 *            remove.
 * A live running instance without a Node is registered once booted; a
 * Node without a live instance is deleted; seen is rebuilt from live.
 * Memory is only an optimisation for boot timing and startup taints: a
 * restarted simulator adopts existing Nodes by their label, and
 * instances that launched long ago register at once (their launch time
 * is past the boot delay).
 *
 * NodeClaims are read only when a Node is about to be registered, so an
 * idle pass parses nothing but the EC2 answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_kubelet.h"
#include "tlr_alloc.h"
#include "tlr_awscreds.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define GIB (1024LL * 1024 * 1024)
#define MIB (1024LL * 1024)
#define KIB 1024LL

typedef struct seen {
    char *id;                 /* owned */
    int64_t first_seen_ms;    /* monotonic */
    int64_t registered_ms;    /* monotonic; 0 = not by us this run */
    char *node;               /* owned; Node name once registered */
    json_object *startup;     /* owned array of taints still to remove; NULL = none */
} seen;

struct ks_kubelet {
    ks_store *s;
    char *cluster, *region, *cluster_tag;
    int64_t boot_delay_ms, taint_delay_ms;
    tlr_clock clock;
    const Tailor__V1__Catalog *catalog;
    tlr_logger *log;
    ks_kubelet_ec2_ops ops;
    seen *seen;
    size_t nseen;
    int last_describe_rc;     /* to log EC2 failures once, not every second */
};

/* A managed Node: its instance id and name, borrowed from the ks_obj. */
typedef struct mnode {
    const char *id;
    const char *name;
} mnode;

int ks_kubelet_create(ks_store *s, const ks_kubelet_opts *o, const ks_kubelet_ec2_ops *ops,
                      ks_kubelet **out)
{
    ks_kubelet *k;
    size_t n;

    if (s == NULL || o == NULL || ops == NULL || ops->describe_instances == NULL ||
        out == NULL || o->cluster == NULL || o->cluster[0] == '\0')
        return TLR_E_INVAL;
    k = tlr_calloc(1, sizeof(*k));
    k->s = s;
    k->cluster = tlr_strdup(o->cluster);
    k->region = tlr_strdup(o->region);
    n = strlen(o->cluster) + 32;
    k->cluster_tag = tlr_malloc(n);
    snprintf(k->cluster_tag, n, "kubernetes.io/cluster/%s", o->cluster);
    k->boot_delay_ms = o->boot_delay_ms;
    k->taint_delay_ms = o->startup_taint_delay_ms;
    k->clock = o->clock != NULL ? *o->clock : tlr_clock_system;
    k->catalog = o->catalog;
    k->log = o->log;
    k->ops = *ops;
    *out = k;
    return TLR_OK;
}

static void seen_clear(seen *e)
{
    free(e->id);
    free(e->node);
    if (e->startup != NULL)
        json_object_put(e->startup);
    memset(e, 0, sizeof(*e));
}

void ks_kubelet_free(ks_kubelet *k)
{
    if (k == NULL)
        return;
    for (size_t i = 0; i < k->nseen; i++)
        seen_clear(&k->seen[i]);
    free(k->seen);
    free(k->cluster);
    free(k->region);
    free(k->cluster_tag);
    free(k);
}

/* --- deciding ---------------------------------------------------------- */

static bool tagged_for(const ks_kubelet *k, const tlr_ec2_instance *in)
{
    const char *v = tlr_ec2_instance_tag(in, k->cluster_tag);

    return (v != NULL && strcmp(v, "owned") == 0) ||
           tlr_ec2_instance_tag(in, "karpenter.sh/nodepool") != NULL;
}

static bool is_live(const tlr_ec2_instance *in)
{
    return strcmp(in->state, "pending") == 0 || strcmp(in->state, "running") == 0;
}

static int cmp_inst(const void *a, const void *b)
{
    return strcmp(((const tlr_ec2_instance *)a)->id, ((const tlr_ec2_instance *)b)->id);
}

static int cmp_mnode(const void *a, const void *b)
{
    return strcmp(((const mnode *)a)->id, ((const mnode *)b)->id);
}

static const seen *find_seen(const ks_kubelet *k, const char *id)
{
    size_t lo = 0, hi = k->nseen;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(k->seen[mid].id, id);

        if (c == 0)
            return &k->seen[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static const mnode *find_node(const mnode *v, size_t n, const char *id)
{
    mnode key = { .id = id };

    return n > 0 ? bsearch(&key, v, n, sizeof(*v), cmp_mnode) : NULL;
}

static const Tailor__V1__InstanceType *find_type(const Tailor__V1__Catalog *c, const char *name)
{
    size_t lo = 0, hi = c != NULL ? c->n_instance_types : 0;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(c->instance_types[mid]->name, name);

        if (r == 0)
            return c->instance_types[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* --- building a Node ---------------------------------------------------- */

static json_object *qty_millis(int64_t m)
{
    char buf[32];

    if (m % 1000 == 0)
        snprintf(buf, sizeof(buf), "%lld", (long long)(m / 1000));
    else
        snprintf(buf, sizeof(buf), "%lldm", (long long)m);
    return json_object_new_string(buf);
}

static json_object *qty_bytes(int64_t b)
{
    char buf[32];

    if (b > 0 && b % GIB == 0)
        snprintf(buf, sizeof(buf), "%lldGi", (long long)(b / GIB));
    else if (b > 0 && b % MIB == 0)
        snprintf(buf, sizeof(buf), "%lldMi", (long long)(b / MIB));
    else if (b > 0 && b % KIB == 0)
        snprintf(buf, sizeof(buf), "%lldKi", (long long)(b / KIB));
    else
        snprintf(buf, sizeof(buf), "%lld", (long long)b);
    return json_object_new_string(buf);
}

static json_object *qty_count(int64_t n)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%lld", (long long)n);
    return json_object_new_string(buf);
}

static json_object *resources(const Tailor__V1__ResourceList *r)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "cpu", qty_millis(r->cpu_millis));
    json_object_object_add(o, "memory", qty_bytes(r->memory_bytes));
    json_object_object_add(o, "pods", qty_count(r->pods));
    if (r->ephemeral_storage_bytes > 0)
        json_object_object_add(o, "ephemeral-storage", qty_bytes(r->ephemeral_storage_bytes));
    for (size_t i = 0; i < r->n_extended; i++)
        if (r->extended[i]->value > 0)
            json_object_object_add(o, r->extended[i]->name, qty_count(r->extended[i]->value));
    return o;
}

static void set_label(json_object *labels, const char *k, const char *v)
{
    if (v != NULL)
        json_object_object_add(labels, k, json_object_new_string(v));
}

/* The NodeClaim for instance in: status.providerID matches, or the
 * karpenter.sh/nodeclaim tag names it.  Borrowed from claims. */
static json_object *find_claim(json_object *claims, const tlr_ec2_instance *in,
                               const char *provider_id)
{
    const char *tag = tlr_ec2_instance_tag(in, "karpenter.sh/nodeclaim");

    for (size_t i = 0; claims != NULL && i < json_object_array_length(claims); i++) {
        json_object *c = json_object_array_get_idx(claims, i);
        const char *pid = tlr_json_str(c, "status.providerID");
        const char *name = tlr_json_str(c, "metadata.name");

        if ((pid != NULL && strcmp(pid, provider_id) == 0) ||
            (tag != NULL && name != NULL && strcmp(tag, name) == 0))
            return c;
    }
    return NULL;
}

static json_object *copy_of(json_object *o)
{
    json_object *c = NULL;

    if (o == NULL || json_object_deep_copy(o, &c, NULL) != 0)
        return NULL;
    return c;
}

/* The Node object for in (new, owned by the caller). */
static json_object *build_node(const ks_kubelet *k, const tlr_ec2_instance *in,
                               const char *name, const char *provider_id, json_object *claim)
{
    const Tailor__V1__InstanceType *t = find_type(k->catalog, in->type);
    json_object *node = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *labels = json_object_new_object();
    json_object *annotations = json_object_new_object();
    json_object *spec = json_object_new_object();
    json_object *status = json_object_new_object();
    json_object *conds = json_object_new_array();
    json_object *ready = json_object_new_object();
    json_object *addrs = json_object_new_array();
    json_object *info = json_object_new_object();
    json_object *taints = json_object_new_array();
    char region[64], now[32];
    const char *arch = "amd64";
    size_t zl = strlen(in->zone);

    ks_now_rfc3339(now, sizeof(now));
    if (k->region != NULL && k->region[0] != '\0')
        snprintf(region, sizeof(region), "%s", k->region);
    else   /* us-east-1a -> us-east-1 */
        snprintf(region, sizeof(region), "%.*s", zl > 0 ? (int)zl - 1 : 0, in->zone);

    /* Labels: the instance type's (arch, os, karpenter.k8s.aws/...), then
     * the well-known ones, then the NodeClaim's, which win. */
    if (t != NULL) {
        for (size_t i = 0; i < t->n_requirements; i++) {
            const Tailor__V1__NodeSelectorRequirement *r = t->requirements[i];

            if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN &&
                r->n_values == 1)
                set_label(labels, r->key, r->values[0]);
        }
        if (t->arch != NULL && t->arch[0] != '\0')
            arch = t->arch;
    }
    set_label(labels, "kubernetes.io/hostname", name);
    set_label(labels, "kubernetes.io/arch", arch);
    set_label(labels, "kubernetes.io/os", "linux");
    set_label(labels, "node.kubernetes.io/instance-type", in->type);
    set_label(labels, "topology.kubernetes.io/zone", in->zone);
    set_label(labels, "topology.kubernetes.io/region", region);
    set_label(labels, "karpenter.sh/capacity-type", in->spot ? "spot" : "on-demand");
    set_label(labels, "karpenter.sh/nodepool", tlr_ec2_instance_tag(in, "karpenter.sh/nodepool"));
    set_label(labels, "karpenter.k8s.aws/ec2nodeclass",
              tlr_ec2_instance_tag(in, "karpenter.k8s.aws/ec2nodeclass"));
    set_label(labels, KS_KUBELET_INSTANCE_LABEL, in->id);
    /* An EKS managed node group's kubelet runs with
     * --node-labels=eks.amazonaws.com/nodegroup=NAME; its instances carry
     * the tag eks:nodegroup-name.  Legacy (ASG) nodes are selected by it. */
    set_label(labels, KS_KUBELET_NODEGROUP_LABEL,
              tlr_ec2_instance_tag(in, KS_KUBELET_NODEGROUP_TAG));
    if (claim != NULL) {
        json_object *cl = tlr_json_obj(claim, "metadata.labels");

        json_object_object_foreach(cl, key, val) {
            if (json_object_is_type(val, json_type_string))
                set_label(labels, key, json_object_get_string(val));
        }
        for (int pass = 0; pass < 2; pass++) {
            json_object *arr = tlr_json_arr(claim, pass == 0 ? "spec.taints" : "spec.startupTaints");

            for (size_t i = 0; arr != NULL && i < json_object_array_length(arr); i++)
                json_object_array_add(taints, copy_of(json_object_array_get_idx(arr, i)));
        }
    }

    json_object_object_add(node, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(node, "kind", json_object_new_string("Node"));
    json_object_object_add(meta, "name", json_object_new_string(name));
    json_object_object_add(meta, "labels", labels);
    set_label(annotations, "kubesim.tailor.dev/image-id", in->image_id);
    json_object_object_add(meta, "annotations", annotations);
    json_object_object_add(node, "metadata", meta);

    json_object_object_add(spec, "providerID", json_object_new_string(provider_id));
    if (json_object_array_length(taints) > 0)
        json_object_object_add(spec, "taints", taints);
    else
        json_object_put(taints);
    json_object_object_add(node, "spec", spec);

    if (t != NULL && t->capacity != NULL && t->allocatable != NULL) {
        json_object_object_add(status, "capacity", resources(t->capacity));
        json_object_object_add(status, "allocatable", resources(t->allocatable));
    } else {
        /* Unknown type: a small default so the Node is usable. */
        Tailor__V1__ResourceList def = TAILOR__V1__RESOURCE_LIST__INIT;

        def.cpu_millis = 2000;
        def.memory_bytes = 4 * GIB;
        def.pods = 110;
        def.ephemeral_storage_bytes = 20 * GIB;
        json_object_object_add(status, "capacity", resources(&def));
        json_object_object_add(status, "allocatable", resources(&def));
    }
    json_object_object_add(ready, "type", json_object_new_string("Ready"));
    json_object_object_add(ready, "status", json_object_new_string("True"));
    json_object_object_add(ready, "reason", json_object_new_string("KubeletReady"));
    json_object_object_add(ready, "message",
                           json_object_new_string("kubelet is posting ready status"));
    json_object_object_add(ready, "lastHeartbeatTime", json_object_new_string(now));
    json_object_object_add(ready, "lastTransitionTime", json_object_new_string(now));
    json_object_array_add(conds, ready);
    json_object_object_add(status, "conditions", conds);
    if (in->private_ip[0] != '\0') {
        json_object *a = json_object_new_object();

        json_object_object_add(a, "type", json_object_new_string("InternalIP"));
        json_object_object_add(a, "address", json_object_new_string(in->private_ip));
        json_object_array_add(addrs, a);
    }
    {
        json_object *a = json_object_new_object();

        json_object_object_add(a, "type", json_object_new_string("Hostname"));
        json_object_object_add(a, "address", json_object_new_string(name));
        json_object_array_add(addrs, a);
    }
    json_object_object_add(status, "addresses", addrs);
    json_object_object_add(info, "architecture", json_object_new_string(arch));
    json_object_object_add(info, "operatingSystem", json_object_new_string("linux"));
    json_object_object_add(info, "osImage", json_object_new_string("kubesim"));
    json_object_object_add(info, "kernelVersion", json_object_new_string("6.1.0-kubesim"));
    json_object_object_add(info, "kubeletVersion", json_object_new_string("v1.33.0-kubesim"));
    json_object_object_add(info, "kubeProxyVersion", json_object_new_string("v1.33.0-kubesim"));
    json_object_object_add(info, "containerRuntimeVersion",
                           json_object_new_string("containerd://1.7.0-kubesim"));
    json_object_object_add(info, "machineID", json_object_new_string(in->id));
    json_object_object_add(info, "systemUUID", json_object_new_string(in->id));
    json_object_object_add(info, "bootID", json_object_new_string(in->id));
    json_object_object_add(status, "nodeInfo", info);
    json_object_object_add(status, "phase", json_object_new_string("Running"));
    json_object_object_add(node, "status", status);
    return node;
}

/* --- acting ------------------------------------------------------------ */

static bool managed_node(const ks_obj *o, void *arg)
{
    (void)arg;
    return ks_obj_label(o, KS_KUBELET_INSTANCE_LABEL) != NULL;
}

static json_object *load_claims(ks_kubelet *k)
{
    ks_objlist l = { 0 };
    json_object *arr = json_object_new_array();

    if (ks_store_list(k->s, KS_NODECLAIM, NULL, &l, NULL) == TLR_OK)
        for (size_t i = 0; i < l.n; i++) {
            json_object *c = ks_obj_parse(l.items[i]);

            if (c != NULL)
                json_object_array_add(arr, c);
        }
    ks_objlist_free(&l);
    return arr;
}

static int do_register(ks_kubelet *k, const tlr_ec2_instance *in, json_object **claims,
                       seen *e)
{
    char provider_id[256];
    const char *name = in->private_dns[0] != '\0' ? in->private_dns : in->id;
    json_object *claim, *node;
    ks_status st = { 0 };
    int rc;

    snprintf(provider_id, sizeof(provider_id), "aws:///%s/%s", in->zone, in->id);
    if (*claims == NULL)
        *claims = load_claims(k);
    claim = find_claim(*claims, in, provider_id);
    node = build_node(k, in, name, provider_id, claim);
    rc = ks_store_create_obj(k->s, KS_NODE, NULL, node, 0, NULL, &st);
    if (rc == TLR_OK) {
        json_object *startup = claim != NULL ? tlr_json_arr(claim, "spec.startupTaints") : NULL;

        e->registered_ms = k->clock.mono_ms(k->clock.arg);
        free(e->node);
        e->node = tlr_strdup(name);
        if (startup != NULL && json_object_array_length(startup) > 0)
            e->startup = copy_of(startup);
        TLR_INFO(k->log, "kubelet: node registered", TLR_S("node", name),
                 TLR_S("instance", in->id), TLR_S("type", in->type), TLR_S("zone", in->zone),
                 TLR_S("nodeclaim", claim ? tlr_json_str(claim, "metadata.name") : NULL),
                 TLR_B("known_type", find_type(k->catalog, in->type) != NULL));
    } else {
        TLR_WARN(k->log, "kubelet: node registration failed", TLR_S("node", name),
                 TLR_S("instance", in->id), TLR_S("reason", st.message), TLR_ERR(rc));
    }
    json_object_put(node);
    return rc;
}

static bool same_taint(json_object *a, json_object *b)
{
    const char *ka = tlr_json_str(a, "key"), *kb = tlr_json_str(b, "key");
    const char *ea = tlr_json_str(a, "effect"), *eb = tlr_json_str(b, "effect");

    return ka != NULL && kb != NULL && strcmp(ka, kb) == 0 &&
           strcmp(ea ? ea : "", eb ? eb : "") == 0;
}

/* ks_store_modify callback: drop the startup taints (arg) from spec.taints. */
static int drop_taints(json_object *node, void *arg, ks_status *st)
{
    json_object *startup = arg;
    json_object *spec = tlr_json_obj(node, "spec");
    json_object *taints = tlr_json_arr(node, "spec.taints");
    json_object *kept;
    bool changed = false;

    (void)st;
    if (taints == NULL)
        return TLR_E_CANCELED;
    kept = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(taints); i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        bool drop = false;

        for (size_t j = 0; j < json_object_array_length(startup) && !drop; j++)
            drop = same_taint(t, json_object_array_get_idx(startup, j));
        if (drop)
            changed = true;
        else
            json_object_array_add(kept, json_object_get(t));
    }
    if (!changed) {
        json_object_put(kept);
        return TLR_E_CANCELED;
    }
    if (json_object_array_length(kept) == 0) {
        json_object_put(kept);
        json_object_object_del(spec, "taints");
    } else {
        json_object_object_add(spec, "taints", kept);
    }
    return TLR_OK;
}

int ks_kubelet_pass(ks_kubelet *k, ks_kubelet_stats *stats)
{
    tlr_ec2_instances all = { 0 };
    tlr_ec2_instance *live = NULL;
    size_t nlive = 0;
    ks_objlist nodes = { 0 };
    ks_list_opts lo = { .filter = managed_node };
    mnode *mn = NULL;
    size_t nmn = 0;
    seen *next = NULL;
    size_t nnext = 0;
    json_object *claims = NULL;
    ks_kubelet_stats sc = { 0 };
    int64_t mono = k->clock.mono_ms(k->clock.arg);
    int64_t wall = k->clock.wall_ms(k->clock.arg);
    int rc;

    rc = k->ops.describe_instances(k->ops.arg, k->cluster, &all);
    if (rc != TLR_OK) {
        if (rc != k->last_describe_rc)
            TLR_WARN(k->log, "kubelet: cannot list EC2 instances; nodes left as they are",
                     TLR_S("cluster", k->cluster), TLR_ERR(rc));
        k->last_describe_rc = rc;
        return rc;
    }
    if (k->last_describe_rc != TLR_OK)
        TLR_INFO(k->log, "kubelet: EC2 reachable again", TLR_S("cluster", k->cluster));
    k->last_describe_rc = TLR_OK;

    /* live: tagged, pending or running, sorted by id, duplicates dropped. */
    live = tlr_calloc(all.n + 1, sizeof(*live));
    for (size_t i = 0; i < all.n; i++)
        if (tagged_for(k, &all.v[i]) && is_live(&all.v[i]))
            live[nlive++] = all.v[i];   /* shallow: strings stay owned by `all` */
    qsort(live, nlive, sizeof(*live), cmp_inst);

    if ((rc = ks_store_list(k->s, KS_NODE, &lo, &nodes, NULL)) != TLR_OK)
        goto out;
    mn = tlr_calloc(nodes.n + 1, sizeof(*mn));
    for (size_t i = 0; i < nodes.n; i++) {
        mn[nmn].id = ks_obj_label(nodes.items[i], KS_KUBELET_INSTANCE_LABEL);
        mn[nmn].name = ks_obj_name(nodes.items[i]);
        nmn++;
    }
    qsort(mn, nmn, sizeof(*mn), cmp_mnode);

    /* Register, and rebuild seen from live. */
    next = tlr_calloc(nlive + 1, sizeof(*next));
    for (size_t i = 0; i < nlive; i++) {
        const tlr_ec2_instance *in = &live[i];
        const seen *old = find_seen(k, in->id);
        seen *e = &next[nnext];

        if (nnext > 0 && strcmp(next[nnext - 1].id, in->id) == 0)
            continue;   /* listed twice */
        nnext++;
        e->id = tlr_strdup(in->id);
        if (old != NULL) {
            seen *o = (seen *)old;   /* ours: its owned parts move to next */

            e->first_seen_ms = o->first_seen_ms;
            e->registered_ms = o->registered_ms;
            e->node = o->node;
            e->startup = o->startup;
            o->node = NULL;
            o->startup = NULL;
        } else {
            e->first_seen_ms = mono;
        }
        sc.instances++;
        if (find_node(mn, nmn, in->id) != NULL || strcmp(in->state, "running") != 0)
            continue;
        if (!((in->launch_ms > 0 && wall >= in->launch_ms + k->boot_delay_ms) ||
              mono >= e->first_seen_ms + k->boot_delay_ms)) {
            sc.waiting++;
            continue;
        }
        if (do_register(k, in, &claims, e) == TLR_OK)
            sc.registered++;
    }

    /* Nodes whose instance is gone. */
    for (size_t i = 0; i < nmn; i++) {
        tlr_ec2_instance key = { .id = (char *)mn[i].id };
        ks_status st = { 0 };

        if (nlive > 0 && bsearch(&key, live, nlive, sizeof(*live), cmp_inst) != NULL)
            continue;
        rc = ks_store_delete(k->s, KS_NODE, NULL, mn[i].name, NULL, NULL, &st);
        if (rc == TLR_OK || rc == TLR_E_NOTFOUND) {
            sc.removed += rc == TLR_OK;
            TLR_INFO(k->log, "kubelet: node removed, instance gone", TLR_S("node", mn[i].name),
                     TLR_S("instance", mn[i].id));
        } else {
            TLR_WARN(k->log, "kubelet: node removal failed", TLR_S("node", mn[i].name),
                     TLR_S("reason", st.message), TLR_ERR(rc));
        }
    }
    rc = TLR_OK;

    /* Startup taints whose time has come. */
    for (size_t i = 0; i < nnext; i++) {
        seen *e = &next[i];
        ks_status st = { 0 };
        int mrc;

        if (e->startup == NULL || e->node == NULL || mono < e->registered_ms + k->taint_delay_ms)
            continue;
        mrc = ks_store_modify(k->s, KS_NODE, NULL, e->node, 0, drop_taints, e->startup, NULL,
                              &st);
        if (mrc == TLR_OK) {
            sc.untainted++;
            TLR_INFO(k->log, "kubelet: startup taints removed", TLR_S("node", e->node));
        } else if (mrc != TLR_E_NOTFOUND) {
            TLR_WARN(k->log, "kubelet: startup taint removal failed", TLR_S("node", e->node),
                     TLR_S("reason", st.message), TLR_ERR(mrc));
            continue;   /* try again next pass */
        }
        json_object_put(e->startup);
        e->startup = NULL;
    }

    for (size_t i = 0; i < k->nseen; i++)
        seen_clear(&k->seen[i]);
    free(k->seen);
    k->seen = next;
    k->nseen = nnext;
    next = NULL;
out:
    if (claims != NULL)
        json_object_put(claims);
    free(next);
    free(mn);
    ks_objlist_free(&nodes);
    free(live);
    tlr_ec2_instances_free(&all);
    if (stats != NULL)
        *stats = sc;
    return rc;
}

/* --- the module: real EC2, settings, controller ------------------------- */

typedef struct kubelet_cfg {
    char *aws_endpoint;
    char *aws_region;
    char *cluster_name;
    char *catalog;
    int64_t poll_ms;
    int64_t boot_delay_ms;
    int64_t taint_delay_ms;
} kubelet_cfg;

static const tlr_setting kubelet_settings[] = {
    { .name = "aws-endpoint", .env = "KUBESIM_AWS_ENDPOINT", .type = TLR_SET_STR,
      .offset = offsetof(kubelet_cfg, aws_endpoint),
      .help = "EC2 endpoint the kubelet simulator polls (moto: http://127.0.0.1:PORT); "
              "empty = AWS_ENDPOINT_URL, and the simulator stays off when both are empty" },
    { .name = "aws-region", .env = "AWS_REGION", .type = TLR_SET_STR,
      .offset = offsetof(kubelet_cfg, aws_region), .def = "us-east-1",
      .help = "AWS region of the instances" },
    { .name = "cluster-name", .env = "KUBESIM_CLUSTER_NAME", .type = TLR_SET_STR,
      .offset = offsetof(kubelet_cfg, cluster_name), .def = "kubesim",
      .help = "instances tagged kubernetes.io/cluster/NAME=owned (or with a "
              "karpenter.sh/nodepool tag) become Nodes" },
    { .name = "catalog", .env = "KUBESIM_CATALOG", .type = TLR_SET_STR,
      .offset = offsetof(kubelet_cfg, catalog),
      .help = "instance-type catalog JSON (format of aws-instance-types.json); empty = "
              "$TAILOR_SHARED_DATA/aws-instance-types.json" },
    { .name = "kubelet-poll", .env = "KUBESIM_KUBELET_POLL", .type = TLR_SET_DURATION,
      .offset = offsetof(kubelet_cfg, poll_ms), .def = "1s", .min = 10, .max = 3600000,
      .help = "how often the kubelet simulator polls EC2" },
    { .name = "boot-delay", .env = "KUBESIM_BOOT_DELAY", .type = TLR_SET_DURATION,
      .offset = offsetof(kubelet_cfg, boot_delay_ms), .def = "2s", .min = 0, .max = 3600000,
      .help = "time from instance launch to its Node registering" },
    { .name = "startup-taint-delay", .env = "KUBESIM_STARTUP_TAINT_DELAY",
      .type = TLR_SET_DURATION, .offset = offsetof(kubelet_cfg, taint_delay_ms), .def = "1s",
      .min = 0, .max = 3600000,
      .help = "time from Node registration to the removal of its NodeClaim's startup taints" },
};

typedef struct kubelet_state {
    tlr_aws_creds *creds;
    tlr_ec2 *ec2;
    Tailor__V1__Catalog *catalog;
    ks_kubelet *k;
    tlr_logger *log;   /* borrowed */
} kubelet_state;

static int real_describe(void *arg, const char *cluster, tlr_ec2_instances *out)
{
    kubelet_state *ks = arg;
    char tag[300];
    const char *keys[2] = { tag, "karpenter.sh/nodepool" };
    const char *const states[] = { "pending", "running" };
    tlr_ec2_filter f[2] = { { "tag-key", keys, 2 }, { "instance-state-name", states, 2 } };
    tlr_aws_error err = { 0 };
    int rc;

    snprintf(tag, sizeof(tag), "kubernetes.io/cluster/%s", cluster);
    rc = tlr_ec2_describe_instances(ks->ec2, f, 2, NULL, 0, 0, out, &err);
    if (rc != TLR_OK)
        TLR_DEBUG(ks->log, "kubelet: DescribeInstances failed", TLR_S("aws_code", err.code),
                  TLR_S("aws_message", err.message), TLR_ERR(rc));
    return rc;
}

static void kubelet_run(ks_store *s, void *arg)
{
    (void)s;
    ks_kubelet_pass(arg, NULL);
}

static void kubelet_stop(void *state)
{
    kubelet_state *ks = state;

    if (ks == NULL)
        return;
    ks_kubelet_free(ks->k);
    tlr_ec2_free(ks->ec2);
    tlr_aws_creds_free(ks->creds);
    tlr_catalog_free(ks->catalog);
    free(ks);
}

static int kubelet_start(ks_store *s, const void *cfgp, tlr_logger *lg, void **state)
{
    const kubelet_cfg *cfg = cfgp;
    const char *endpoint = cfg->aws_endpoint;
    kubelet_state *ks;
    char path[4096], err[256];
    const char *shared;
    int rc;

    if (endpoint == NULL || endpoint[0] == '\0')
        endpoint = getenv("AWS_ENDPOINT_URL");
    if (endpoint == NULL || endpoint[0] == '\0') {
        TLR_INFO(lg, "kubelet simulator off: no --aws-endpoint");
        *state = NULL;
        return TLR_OK;
    }
    ks = tlr_calloc(1, sizeof(*ks));
    ks->log = lg;
    if (cfg->catalog != NULL && cfg->catalog[0] != '\0') {
        snprintf(path, sizeof(path), "%s", cfg->catalog);
    } else {
        shared = getenv("TAILOR_SHARED_DATA");
        snprintf(path, sizeof(path), "%s/aws-instance-types.json",
                 shared != NULL && shared[0] ? shared : "../shared/data");
    }
    rc = tlr_catalog_file_load(path, &(tlr_catalog_file_opts){ .region = cfg->aws_region },
                               &ks->catalog, err, sizeof(err));
    if (rc != TLR_OK)
        TLR_WARN(lg, "kubelet: no instance catalog; nodes get a default shape",
                 TLR_S("path", path), TLR_S("reason", err), TLR_ERR(rc));
    tlr_aws_creds_create(&(tlr_aws_creds_opts){ .log = lg, .region = cfg->aws_region },
                         &ks->creds);
    rc = tlr_ec2_create(&(tlr_aws_query_opts){ .endpoint = endpoint, .region = cfg->aws_region,
                                               .creds = ks->creds, .log = lg,
                                               .timeout_ms = 10000, .max_attempts = 2 },
                        &ks->ec2);
    if (rc != TLR_OK) {
        TLR_ERROR(lg, "kubelet: bad --aws-endpoint", TLR_S("endpoint", endpoint), TLR_ERR(rc));
        kubelet_stop(ks);
        return rc;
    }
    rc = ks_kubelet_create(s, &(ks_kubelet_opts){
                               .cluster = cfg->cluster_name, .region = cfg->aws_region,
                               .boot_delay_ms = cfg->boot_delay_ms,
                               .startup_taint_delay_ms = cfg->taint_delay_ms,
                               .catalog = ks->catalog, .log = lg },
                           &(ks_kubelet_ec2_ops){ real_describe, ks }, &ks->k);
    if (rc == TLR_OK)
        rc = ks_store_add_controller(s, &(ks_controller){
                                            .name = "kubelet", .period_ms = (int)cfg->poll_ms,
                                            .wake_kinds = 0, .fn = kubelet_run, .arg = ks->k });
    if (rc != TLR_OK) {
        kubelet_stop(ks);
        return rc;
    }
    TLR_INFO(lg, "kubelet simulator on", TLR_S("endpoint", endpoint),
             TLR_S("cluster", cfg->cluster_name), TLR_I("boot_delay_ms", cfg->boot_delay_ms),
             TLR_I("instance_types", ks->catalog ? (long long)ks->catalog->n_instance_types : 0));
    *state = ks;
    return TLR_OK;
}

const ks_module ks_kubelet_module = {
    .name = "kubelet",
    .cfg_size = sizeof(kubelet_cfg),
    .settings = kubelet_settings,
    .nsettings = sizeof(kubelet_settings) / sizeof(kubelet_settings[0]),
    .start = kubelet_start,
    .stop = kubelet_stop,
};
