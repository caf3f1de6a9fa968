/* kubelet.c - the kubelet simulator: one reconcile pass from EC2 instances
 * to Nodes (see ks_kubelet.h), and its kubesim module.
 *
 * A pass is a three-way merge on instance id, all lists sorted by id:
 *   live   - instances tagged for the cluster in state pending/running,
 *            as EC2 reports them now;
 *   nodes  - Nodes in the store carrying KS_KUBELET_INSTANCE_LABEL;
 *   seen   - the simulator's memory: when it first saw each instance,
 *            when it registered its Node, what its agents still have to
 *            do, and the instance's user data, AMI name and root volume
 *            size (they never change, so each is read from EC2 once).
 * A live running instance without a Node boots once its boot delay is
 * over: its user data goes through the AMI's agent (nodeagent.c) and the
 * Node is built from what that yields, or the instance is marked refused
 * for good.  A Node without a live instance is deleted; seen is rebuilt
 * from live.  A restarted simulator adopts existing Nodes by their label,
 * and instances that launched long ago register at once (their launch
 * time is past the boot delay).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_kubelet.h"
#include "nodeagent.h"
#include "tlr_alloc.h"
#include "tlr_awscreds.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_json.h"

#define GIB (1024LL * 1024 * 1024)

typedef struct seen {
    char *id;                 /* owned */
    int64_t first_seen_ms;    /* monotonic */
    int64_t registered_ms;    /* monotonic; 0 = not by us this run */
    char *node;               /* owned; Node name once registered */
    bool agents_pending;      /* agent taints / device resources still to do */
    json_object *ext;         /* owned {name: "count"} devices advertise; NULL = none */
    char *user_data;          /* owned; NULL = not read yet */
    char *ami_name;           /* owned; NULL = not read yet */
    int64_t root_bytes;       /* 0 = not read yet */
    int64_t data_bytes;       /* /dev/xvdb (Bottlerocket's pods' volume) */
    bool refused;             /* its bootstrap never joins it (logged once) */
} seen;

struct ks_kubelet {
    ks_store *s;
    char *cluster, *region, *cluster_tag;
    char *api_endpoint, *ca_pem;
    json_object *agent_taints;   /* owned array of taint keys */
    int64_t boot_delay_ms, boot_jitter_ms, taint_delay_ms;
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
    const ks_obj *obj;
} mnode;

int ks_kubelet_create(ks_store *s, const ks_kubelet_opts *o, const ks_kubelet_ec2_ops *ops,
                      ks_kubelet **out)
{
    ks_kubelet *k;
    size_t n;
    char *keys, *save = NULL;

    if (s == NULL || o == NULL || ops == NULL || ops->describe_instances == NULL ||
        ops->user_data == NULL || out == NULL || o->cluster == NULL || o->cluster[0] == '\0')
        return TLR_E_INVAL;
    k = tlr_calloc(1, sizeof(*k));
    k->s = s;
    k->cluster = tlr_strdup(o->cluster);
    k->region = tlr_strdup(o->region);
    k->api_endpoint = tlr_strdup(o->api_endpoint);
    k->ca_pem = tlr_strdup(o->ca_pem);
    n = strlen(o->cluster) + 32;
    k->cluster_tag = tlr_malloc(n);
    snprintf(k->cluster_tag, n, "kubernetes.io/cluster/%s", o->cluster);
    k->agent_taints = json_object_new_array();
    keys = tlr_strdup(o->agent_taints != NULL ? o->agent_taints : KS_KUBELET_AGENT_TAINTS);
    for (char *t = strtok_r(keys, ", ", &save); t != NULL; t = strtok_r(NULL, ", ", &save))
        json_object_array_add(k->agent_taints, json_object_new_string(t));
    free(keys);
    k->boot_delay_ms = o->boot_delay_ms;
    k->boot_jitter_ms = o->boot_jitter_ms;
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
    json_object_put(e->ext);
    free(e->user_data);
    free(e->ami_name);
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
    free(k->api_endpoint);
    free(k->ca_pem);
    json_object_put(k->agent_taints);
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

/* Launch to registration for instance id: the boot delay plus a share
 * of the jitter fixed by the id (FNV-1a), so a burst's nodes join over a
 * spread of time, as real ones do, the same way on every poll. */
static int64_t boot_ms(const ks_kubelet *k, const char *id)
{
    if (k->boot_jitter_ms <= 0)
        return k->boot_delay_ms;
    uint64_t h = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, id);
    return k->boot_delay_ms + (int64_t)(h % (uint64_t)(k->boot_jitter_ms + 1));
}

static int cmp_inst(const void *a, const void *b)
{
    return strcmp(((const tlr_ec2_instance *)a)->id, ((const tlr_ec2_instance *)b)->id);
}

static int cmp_mnode(const void *a, const void *b)
{
    return strcmp(((const mnode *)a)->id, ((const mnode *)b)->id);
}

static seen *find_seen(const ks_kubelet *k, const char *id)
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

/* The hardware of in's type: the catalog's facts only (none of its
 * derived allocatable or labels).  ext (room for max) gets the devices. */
static void hardware(const ks_kubelet *k, const tlr_ec2_instance *in, ks_na_hw *hw,
                     ks_na_ext *ext, size_t max)
{
    const Tailor__V1__InstanceType *t = find_type(k->catalog, in->type);

    memset(hw, 0, sizeof(*hw));
    hw->type = in->type;
    hw->ext = ext;
    if (t == NULL) {   /* unknown type: a small default machine */
        hw->vcpu = 2;
        hw->memory_mib = 4096;
        hw->arch = "amd64";
        return;
    }
    hw->vcpu = t->vcpu;
    hw->memory_mib = t->memory_mib;
    hw->arch = t->arch != NULL && t->arch[0] != '\0' ? t->arch : "amd64";
    /* The ENI figure; older catalogs only carry max_pods, which is it. */
    hw->eni_max_pods = t->eni_max_pods > 0 ? t->eni_max_pods : t->max_pods;
    hw->nvme_bytes = t->local_nvme_bytes;
    for (size_t i = 0; t->capacity != NULL && i < t->capacity->n_extended && hw->next < max; i++)
        if (t->capacity->extended[i]->value > 0) {
            ext[hw->next].name = t->capacity->extended[i]->name;
            ext[hw->next].count = t->capacity->extended[i]->value;
            hw->next++;
        }
}

/* --- building a Node ---------------------------------------------------- */

static void set_label(json_object *labels, const char *k, const char *v)
{
    if (v != NULL)
        json_object_object_add(labels, k, json_object_new_string(v));
}

static const char *os_image(ks_na_agent a)
{
    switch (a) {
    case KS_NA_NODEADM: return "Amazon Linux 2023 (kubesim)";
    case KS_NA_AL2: return "Amazon Linux 2 (kubesim)";
    case KS_NA_BOTTLEROCKET: return "Bottlerocket OS (kubesim)";
    default: return "kubesim";
    }
}

/* The Node object for in (new, owned by the caller): what its kubelet,
 * configured by cfg, registers, plus the cloud controller's labels. */
static json_object *build_node(const ks_kubelet *k, const tlr_ec2_instance *in,
                               const char *name, const char *provider_id,
                               const ks_na_config *cfg, const ks_na_hw *hw, int64_t root_bytes)
{
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
    json_object *cap = NULL, *alloc = NULL, *taints = NULL;
    char region[64], now[32];
    size_t zl = strlen(in->zone);

    ks_now_rfc3339(now, sizeof(now));
    if (k->region != NULL && k->region[0] != '\0')
        snprintf(region, sizeof(region), "%s", k->region);
    else   /* us-east-1a -> us-east-1 */
        snprintf(region, sizeof(region), "%.*s", zl > 0 ? (int)zl - 1 : 0, in->zone);

    /* The kubelet's own labels, then --node-labels (which may override
     * them), then the cloud controller manager's, then our bookkeeping. */
    set_label(labels, "kubernetes.io/hostname", name);
    set_label(labels, "kubernetes.io/arch", hw->arch);
    set_label(labels, "kubernetes.io/os", "linux");
    set_label(labels, "beta.kubernetes.io/arch", hw->arch);   /* a kubelet still sets both */
    set_label(labels, "beta.kubernetes.io/os", "linux");
    json_object_object_foreach(cfg->labels, lk, lv) {
        set_label(labels, lk, json_object_get_string(lv));
    }
    /* The cloud node controller sets the stable labels and their
     * deprecated aliases. */
    set_label(labels, "node.kubernetes.io/instance-type", in->type);
    set_label(labels, "beta.kubernetes.io/instance-type", in->type);
    set_label(labels, "topology.kubernetes.io/zone", in->zone);
    set_label(labels, "failure-domain.beta.kubernetes.io/zone", in->zone);
    set_label(labels, "topology.kubernetes.io/region", region);
    set_label(labels, "failure-domain.beta.kubernetes.io/region", region);
    set_label(labels, KS_KUBELET_INSTANCE_LABEL, in->id);

    json_object_object_add(node, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(node, "kind", json_object_new_string("Node"));
    json_object_object_add(meta, "name", json_object_new_string(name));
    json_object_object_add(meta, "labels", labels);
    set_label(annotations, "kubesim.tailor.dev/image-id", in->image_id);
    json_object_object_add(meta, "annotations", annotations);
    json_object_object_add(node, "metadata", meta);

    json_object_object_add(spec, "providerID", json_object_new_string(provider_id));
    if (json_object_array_length(cfg->taints) > 0 &&
        json_object_deep_copy(cfg->taints, &taints, NULL) == 0)
        json_object_object_add(spec, "taints", taints);
    json_object_object_add(node, "spec", spec);

    ks_nodeagent_resources(cfg, hw, root_bytes, false, &cap, &alloc);
    json_object_object_add(status, "capacity", cap);
    json_object_object_add(status, "allocatable", alloc);
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
    json_object_object_add(info, "architecture", json_object_new_string(hw->arch));
    json_object_object_add(info, "operatingSystem", json_object_new_string("linux"));
    json_object_object_add(info, "osImage", json_object_new_string(os_image(cfg->agent)));
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

/* Read what the instance knows about itself, once.  TLR_OK when all is
 * cached; an EC2 error leaves the rest for the next pass. */
static int read_instance(ks_kubelet *k, const tlr_ec2_instance *in, seen *e)
{
    int rc;

    if (e->user_data == NULL) {
        rc = k->ops.user_data(k->ops.arg, in->id, &e->user_data);
        if (rc == TLR_E_NOTFOUND)
            e->user_data = tlr_strdup("");
        else if (rc != TLR_OK)
            return rc;
    }
    if (e->ami_name == NULL) {
        rc = k->ops.image_name != NULL && in->image_id[0] != '\0'
                 ? k->ops.image_name(k->ops.arg, in->image_id, &e->ami_name)
                 : TLR_E_NOTFOUND;
        if (rc == TLR_E_NOTFOUND)
            e->ami_name = tlr_strdup("");
        else if (rc != TLR_OK)
            return rc;
    }
    if (e->root_bytes == 0 &&
        (k->ops.root_volume_bytes == NULL ||
         k->ops.root_volume_bytes(k->ops.arg, in->id, &e->root_bytes, &e->data_bytes) != TLR_OK ||
         e->root_bytes <= 0))
        e->root_bytes = 20 * GIB;
    if (e->data_bytes <= 0)
        e->data_bytes = 20 * GIB;
    return TLR_OK;
}

static bool is_agent_taint(const ks_kubelet *k, const char *key)
{
    for (size_t i = 0; key != NULL && i < json_object_array_length(k->agent_taints); i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(k->agent_taints, i)), key) ==
            0)
            return true;
    return false;
}

/* Does node o (its compact JSON) carry an agent taint?  A running agent
 * takes its taint off whenever it appears -- e.g. put back by whoever
 * syncs startup taints at registration -- not only once. */
static bool has_agent_taint(const ks_kubelet *k, const ks_obj *o)
{
    const char *js = o != NULL ? ks_obj_json(o) : NULL;
    char pat[300];

    for (size_t i = 0; js != NULL && i < json_object_array_length(k->agent_taints); i++) {
        snprintf(pat, sizeof(pat), "\"key\":\"%s\"",
                 json_object_get_string(json_object_array_get_idx(k->agent_taints, i)));
        if (strstr(js, pat) != NULL)
            return true;
    }
    return false;
}

/* Boot in and register its Node.  TLR_E_CANCELED: refused (now or
 * before); other errors: try again next pass. */
static int do_register(ks_kubelet *k, const tlr_ec2_instance *in, seen *e)
{
    char provider_id[256], reason[300];
    const char *name = in->private_dns[0] != '\0' ? in->private_dns : in->id;
    ks_na_ext ext[8];
    ks_na_hw hw;
    ks_na_config cfg = { 0 };
    json_object *node;
    ks_status st = { 0 };
    int rc;

    if (e->refused)
        return TLR_E_CANCELED;
    if ((rc = read_instance(k, in, e)) != TLR_OK) {
        TLR_DEBUG(k->log, "kubelet: cannot read the instance's user data or AMI yet",
                  TLR_S("instance", in->id), TLR_ERR(rc));
        return rc;
    }
    hardware(k, in, &hw, ext, sizeof(ext) / sizeof(ext[0]));
    rc = ks_nodeagent_run(e->user_data, strlen(e->user_data), e->ami_name, &hw,
                          &(ks_na_cluster){ k->cluster, k->api_endpoint, k->ca_pem }, &cfg,
                          reason, sizeof(reason));
    if (rc != TLR_OK) {
        e->refused = true;
        TLR_WARN(k->log, "kubelet: instance never joins: its bootstrap fails",
                 TLR_S("instance", in->id), TLR_S("ami", e->ami_name), TLR_S("reason", reason),
                 TLR_ERR(rc));
        return TLR_E_CANCELED;
    }
    /* Pods' data lives on the root volume, or on Bottlerocket's data
     * volume (xvdb). */
    snprintf(provider_id, sizeof(provider_id), "aws:///%s/%s", in->zone, in->id);
    node = build_node(k, in, name, provider_id, &cfg, &hw,
                      cfg.agent == KS_NA_BOTTLEROCKET ? e->data_bytes : e->root_bytes);
    rc = ks_store_create_obj(k->s, KS_NODE, NULL, node, KS_W_ALL, NULL, &st);
    if (rc == TLR_OK) {
        e->registered_ms = k->clock.mono_ms(k->clock.arg);
        free(e->node);
        e->node = tlr_strdup(name);
        json_object_put(e->ext);
        e->ext = NULL;
        if (hw.next > 0) {
            e->ext = json_object_new_object();
            for (size_t i = 0; i < hw.next; i++)
                json_object_object_add(e->ext, hw.ext[i].name,
                                       json_object_new_int64(hw.ext[i].count));
        }
        e->agents_pending = e->ext != NULL;
        for (size_t i = 0; i < json_object_array_length(cfg.taints); i++)
            if (is_agent_taint(k, tlr_json_str(json_object_array_get_idx(cfg.taints, i), "key")))
                e->agents_pending = true;
        /* What the node's agent ran, in order: the user's shell parts and
         * the NodeConfigs it merged (the tests read it here). */
        char ran[1024] = "";
        size_t off = 0;
        for (size_t i = 0; i < cfg.nran && off < sizeof(ran); i++)
            off += (size_t)snprintf(ran + off, sizeof(ran) - off, "%s%s", i ? "; " : "",
                                    cfg.ran[i]);
        TLR_INFO(k->log, "kubelet: node registered", TLR_S("node", name),
                 TLR_S("instance", in->id), TLR_S("type", in->type), TLR_S("zone", in->zone),
                 TLR_S("agent", ks_na_agent_name(cfg.agent)), TLR_S("ami", e->ami_name),
                 TLR_I("max_pods", cfg.max_pods), TLR_S("ran", ran),
                 TLR_B("known_type", find_type(k->catalog, in->type) != NULL));
    } else {
        TLR_WARN(k->log, "kubelet: node registration failed", TLR_S("node", name),
                 TLR_S("instance", in->id), TLR_S("reason", st.message), TLR_ERR(rc));
    }
    json_object_put(node);
    ks_na_config_free(&cfg);
    return rc;
}

typedef struct agents_arg {
    const ks_kubelet *k;
    json_object *ext;   /* borrowed; may be NULL */
} agents_arg;

/* ks_store_modify callback: the node's agents are up: their taints go,
 * the device plugins' resources appear in capacity and allocatable. */
static int agents_up(json_object *node, void *argp, ks_status *st)
{
    agents_arg *a = argp;
    json_object *spec = tlr_json_obj(node, "spec");
    json_object *taints = tlr_json_arr(node, "spec.taints");
    bool changed = false;

    (void)st;
    if (taints != NULL) {
        json_object *kept = json_object_new_array();

        for (size_t i = 0; i < json_object_array_length(taints); i++) {
            json_object *t = json_object_array_get_idx(taints, i);

            if (is_agent_taint(a->k, tlr_json_str(t, "key")))
                changed = true;
            else
                json_object_array_add(kept, json_object_get(t));
        }
        if (!changed)
            json_object_put(kept);
        else if (json_object_array_length(kept) == 0) {
            json_object_put(kept);
            json_object_object_del(spec, "taints");
        } else {
            json_object_object_add(spec, "taints", kept);
        }
    }
    if (a->ext != NULL) {
        json_object *cap = tlr_json_obj(node, "status.capacity");
        json_object *alloc = tlr_json_obj(node, "status.allocatable");

        json_object_object_foreach(a->ext, name, count) {
            char buf[24];

            snprintf(buf, sizeof(buf), "%lld", (long long)json_object_get_int64(count));
            if (cap != NULL)
                json_object_object_add(cap, name, json_object_new_string(buf));
            if (alloc != NULL)
                json_object_object_add(alloc, name, json_object_new_string(buf));
            changed = true;
        }
    }
    return changed ? TLR_OK : TLR_E_CANCELED;
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
        mn[nmn].obj = nodes.items[i];
        nmn++;
    }
    qsort(mn, nmn, sizeof(*mn), cmp_mnode);

    /* Register, and rebuild seen from live. */
    next = tlr_calloc(nlive + 1, sizeof(*next));
    struct { const tlr_ec2_instance *in; size_t e; } *todo = tlr_calloc(nlive + 1, sizeof(*todo));
    size_t ntodo = 0;
    for (size_t i = 0; i < nlive; i++) {
        const tlr_ec2_instance *in = &live[i];
        seen *old = find_seen(k, in->id);
        seen *e = &next[nnext];

        if (nnext > 0 && strcmp(next[nnext - 1].id, in->id) == 0)
            continue;   /* listed twice */
        nnext++;
        if (old != NULL) {   /* its owned parts move to next; its id stays for the search */
            char *id = old->id;

            *e = *old;
            e->id = tlr_strdup(id);
            memset(old, 0, sizeof(*old));
            old->id = id;
        } else {
            e->id = tlr_strdup(in->id);
            e->first_seen_ms = mono;
        }
        sc.instances++;
        if (find_node(mn, nmn, in->id) != NULL || strcmp(in->state, "running") != 0)
            continue;
        int64_t boot = boot_ms(k, in->id);
        if (!((in->launch_ms > 0 && wall >= in->launch_ms + boot) ||
              mono >= e->first_seen_ms + boot)) {
            sc.waiting++;
            continue;
        }
        /* Read now, register below: nodes booted together join together
         * (reading an instance takes EC2 calls; registering one by one as
         * they are read would stagger them by seconds across a burst). */
        if (e->refused || read_instance(k, in, e) == TLR_OK) {
            todo[ntodo].in = in;
            todo[ntodo++].e = nnext - 1;
        }
    }
    for (size_t t = 0; t < ntodo; t++) {
        rc = do_register(k, todo[t].in, &next[todo[t].e]);
        if (rc == TLR_OK)
            sc.registered++;
        else if (rc == TLR_E_CANCELED)
            sc.refused++;
    }
    free(todo);

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

    /* The nodes' own agents, once they have had time to start. */
    for (size_t i = 0; i < nnext; i++) {
        seen *e = &next[i];
        ks_status st = { 0 };
        agents_arg aa = { k, NULL };
        int mrc;

        if (e->node == NULL || mono < e->registered_ms + k->taint_delay_ms)
            continue;
        if (!e->agents_pending) {
            const mnode *m = find_node(mn, nmn, e->id);
            if (m == NULL || !has_agent_taint(k, m->obj))
                continue;
        }
        aa.ext = e->ext;
        mrc = ks_store_modify(k->s, KS_NODE, NULL, e->node, KS_W_ALL, agents_up, &aa, NULL, &st);
        if (mrc == TLR_OK) {
            sc.untainted++;
            TLR_INFO(k->log, "kubelet: node agents up (agent taints removed, devices added)",
                     TLR_S("node", e->node));
        } else if (mrc != TLR_E_NOTFOUND) {
            TLR_WARN(k->log, "kubelet: node agent update failed", TLR_S("node", e->node),
                     TLR_S("reason", st.message), TLR_ERR(mrc));
            continue;   /* try again next pass */
        }
        e->agents_pending = false;
    }

    for (size_t i = 0; i < k->nseen; i++)
        seen_clear(&k->seen[i]);
    free(k->seen);
    k->seen = next;
    k->nseen = nnext;
    next = NULL;
out:
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
    int64_t boot_delay_ms, boot_jitter_ms;
    int64_t taint_delay_ms;
    char *agent_taints;
    /* Not settings: main.c fills these (ks_kubelet_cfg_set_apiserver). */
    const char *api_endpoint;   /* borrowed */
    const char *ca_pem;         /* borrowed */
} kubelet_cfg;

void ks_kubelet_cfg_set_apiserver(void *cfg, const char *endpoint, const char *ca_pem)
{
    kubelet_cfg *c = cfg;

    c->api_endpoint = endpoint;
    c->ca_pem = ca_pem;
}

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
    { .name = "boot-jitter", .env = "KUBESIM_BOOT_JITTER", .type = TLR_SET_DURATION,
      .offset = offsetof(kubelet_cfg, boot_jitter_ms), .def = "0s", .min = 0, .max = 3600000,
      .help = "up to this much more boot time per instance (a fixed share of it per instance "
              "id): instances launched together do not all boot at once" },
    { .name = "startup-taint-delay", .env = "KUBESIM_STARTUP_TAINT_DELAY",
      .type = TLR_SET_DURATION, .offset = offsetof(kubelet_cfg, taint_delay_ms), .def = "1s",
      .min = 0, .max = 3600000,
      .help = "time from Node registration to its agents running (taints go, GPUs appear)" },
    { .name = "agent-taints", .env = "KUBESIM_AGENT_TAINTS", .type = TLR_SET_STR,
      .offset = offsetof(kubelet_cfg, agent_taints), .def = KS_KUBELET_AGENT_TAINTS,
      .help = "taint keys (a,b) the node's agents remove" },
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

static int real_user_data(void *arg, const char *id, char **out)
{
    kubelet_state *ks = arg;
    tlr_aws_error err = { 0 };
    int rc = tlr_ec2_instance_user_data(ks->ec2, id, out, &err);

    if (rc != TLR_OK && rc != TLR_E_NOTFOUND)
        TLR_DEBUG(ks->log, "kubelet: DescribeInstanceAttribute failed", TLR_S("instance", id),
                  TLR_S("aws_code", err.code), TLR_S("aws_message", err.message), TLR_ERR(rc));
    return rc;
}

static int real_image_name(void *arg, const char *image_id, char **out)
{
    kubelet_state *ks = arg;
    tlr_ec2_images imgs = { 0 };
    tlr_aws_error err = { 0 };
    int rc = tlr_ec2_describe_images(ks->ec2, NULL, 0, &image_id, 1, NULL, 0, &imgs, &err);

    if (rc == TLR_OK && imgs.n == 0)
        rc = TLR_E_NOTFOUND;
    if (rc == TLR_OK)
        *out = tlr_strdup(imgs.v[0].name != NULL ? imgs.v[0].name : "");
    else if (rc != TLR_E_NOTFOUND)
        TLR_DEBUG(ks->log, "kubelet: DescribeImages failed", TLR_S("image", image_id),
                  TLR_S("aws_code", err.code), TLR_S("aws_message", err.message), TLR_ERR(rc));
    tlr_ec2_images_free(&imgs);
    return rc;
}

/* DescribeVolumes of the volumes attached to the instance: the root one
 * (/dev/xvda or /dev/sda1; else the first listed).  moto creates an 8 GiB
 * root volume, or the launch template's size. */
static int real_root_volume(void *arg, const char *id, int64_t *root_out, int64_t *data_out)
{
    kubelet_state *ks = arg;
    tlr_aws_params *p;
    tlr_xml_doc *doc = NULL;
    tlr_aws_error err = { 0 };
    int64_t root = 0, data = 0, any = 0;
    int rc;

    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "Filter.1.Name", "attachment.instance-id");
    tlr_aws_params_add(p, "Filter.1.Value.1", id);
    rc = tlr_aws_query_call(tlr_ec2_query(ks->ec2), "DescribeVolumes", p, &doc, &err);
    tlr_aws_params_free(p);
    if (rc == TLR_OK) {
        for (const tlr_xml_node *v = tlr_xml_find(tlr_xml_root(doc), "volumeSet/item"); v != NULL;
             v = tlr_xml_next_named(v)) {
            const char *dev = tlr_xml_find_text(v, "attachmentSet/item/device");
            const char *size = tlr_xml_find_text(v, "size");
            int64_t gib = size != NULL ? strtoll(size, NULL, 10) : 0;

            if (dev == NULL || gib <= 0)
                continue;
            if (strcmp(dev, "/dev/xvda") == 0 || strcmp(dev, "/dev/sda1") == 0)
                root = gib;
            else if (strcmp(dev, "/dev/xvdb") == 0)
                data = gib;
            else if (any == 0)
                any = gib;
        }
    }
    tlr_xml_free(doc);
    if (root == 0)
        root = any;
    if (rc != TLR_OK || root <= 0)
        return rc != TLR_OK ? rc : TLR_E_NOTFOUND;
    *root_out = root * GIB;
    *data_out = data * GIB;
    return TLR_OK;
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
                               .api_endpoint = cfg->api_endpoint, .ca_pem = cfg->ca_pem,
                               .agent_taints = cfg->agent_taints,
                               .boot_delay_ms = cfg->boot_delay_ms,
                               .boot_jitter_ms = cfg->boot_jitter_ms,
                               .startup_taint_delay_ms = cfg->taint_delay_ms,
                               .catalog = ks->catalog, .log = lg },
                           &(ks_kubelet_ec2_ops){ .describe_instances = real_describe,
                                                  .user_data = real_user_data,
                                                  .image_name = real_image_name,
                                                  .root_volume_bytes = real_root_volume,
                                                  .arg = ks },
                           &ks->k);
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
             TLR_S("api_endpoint", cfg->api_endpoint), TLR_B("ca", cfg->ca_pem != NULL),
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
