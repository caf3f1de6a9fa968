/* nodeadm.c - AL2023 user data: the user's parts, then tailor's NodeConfig.
 *
 * nodeadm reads every application/node.eks.aws part of a multipart user
 * data document and merges them in order, later values winning (maps
 * merge key by key, kubelet flags append).  So tailor's NodeConfig goes
 * last: its cluster identity and kubelet settings override what the user
 * wrote, and every other field the user set survives.  Shell parts are run
 * by cloud-init, unaffected.
 *
 * The NodeConfig is built as JSON with every map's keys sorted and written
 * with tlr_yaml_write, so it is deterministic and any YAML parser reads
 * it (nodeadm uses sigs.k8s.io/yaml).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_impl.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_yaml.h"

static void add_opt(json_object *o, const char *key, json_object *v)
{
    if (v != NULL)
        json_object_object_add(o, key, v);
}

/* spec.kubelet.config, keys in sorted order. */
static json_object *kubelet_config(const tlr_bootstrap_in *in)
{
    const Tailor__V1__KubeletConfig *k = in->kubelet;
    json_object *c = json_object_new_object();
    size_t ndns;
    const char *const *dns = bs_cluster_dns(in, &ndns);
    int32_t max_pods = bs_max_pods(in);

    if (ndns > 0) {
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < ndns; i++)
            json_object_array_add(a, json_object_new_string(dns[i]));
        json_object_object_add(c, "clusterDNS", a);
    }
    if (k != NULL && k->has_cpu_cfs_quota)
        json_object_object_add(c, "cpuCFSQuota", json_object_new_boolean(k->cpu_cfs_quota));
    if (k != NULL) {
        add_opt(c, "evictionHard", bs_label_map(k->eviction_hard, k->n_eviction_hard));
        if (k->eviction_max_pod_grace_period > 0)
            json_object_object_add(c, "evictionMaxPodGracePeriod",
                                   json_object_new_int(k->eviction_max_pod_grace_period));
        add_opt(c, "evictionSoft", bs_label_map(k->eviction_soft, k->n_eviction_soft));
        add_opt(c, "evictionSoftGracePeriod",
                bs_duration_map(k->eviction_soft_grace_period, k->n_eviction_soft_grace_period));
        if (k->image_gc_high_threshold_percent > 0)
            json_object_object_add(c, "imageGCHighThresholdPercent",
                                   json_object_new_int(k->image_gc_high_threshold_percent));
        if (k->image_gc_low_threshold_percent > 0)
            json_object_object_add(c, "imageGCLowThresholdPercent",
                                   json_object_new_int(k->image_gc_low_threshold_percent));
        add_opt(c, "kubeReserved", bs_resource_map(k->kube_reserved));
    }
    if (max_pods > 0)
        json_object_object_add(c, "maxPods", json_object_new_int(max_pods));
    if (k != NULL && k->pods_per_core > 0)
        json_object_object_add(c, "podsPerCore", json_object_new_int(k->pods_per_core));
    /* Always present: tailor's taints replace any the user configured, as
     * Karpenter's registerWithTaints does. */
    json_object *taints = json_object_new_array();
    for (size_t i = 0; i < in->ntaints; i++) {
        const Tailor__V1__Taint *t = in->taints[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "effect", json_object_new_string(bs_effect_name(t->effect)));
        json_object_object_add(o, "key", json_object_new_string(t->key));
        if (t->value != NULL && t->value[0] != '\0')
            json_object_object_add(o, "value", json_object_new_string(t->value));
        json_object_array_add(taints, o);
    }
    json_object_object_add(c, "registerWithTaints", taints);
    if (k != NULL)
        add_opt(c, "systemReserved", bs_resource_map(k->system_reserved));
    return c;
}

/* "--node-labels=k1=v1,k2=v2", sorted by key; NULL when there are none. */
static char *node_labels_flag(const tlr_bootstrap_in *in)
{
    const Tailor__V1__Label **l;
    tlr_buf b;

    if (in->nlabels == 0)
        return NULL;
    l = bs_sorted_labels(in);
    tlr_buf_init(&b, (size_t)-1);
    tlr_buf_adds(&b, "--node-labels=");
    for (size_t i = 0; i < in->nlabels; i++)
        tlr_buf_printf(&b, "%s%s=%s", i > 0 ? "," : "", l[i]->key, l[i]->value);
    free(l);
    return tlr_buf_take(&b);
}

/* The NodeConfig document tailor adds; new. */
static int node_config_text(const tlr_bootstrap_in *in, char **out)
{
    const tlr_cluster_identity *c = in->cluster;
    json_object *nc = json_object_new_object();
    json_object *spec = json_object_new_object();
    json_object *cluster = json_object_new_object();
    json_object *kubelet = json_object_new_object();
    char *flag = node_labels_flag(in), *yaml = NULL;
    int rc;

    json_object_object_add(nc, "apiVersion", json_object_new_string("node.eks.aws/v1alpha1"));
    json_object_object_add(nc, "kind", json_object_new_string("NodeConfig"));
    json_object_object_add(cluster, "apiServerEndpoint", json_object_new_string(c->endpoint));
    /* nodeadm's field is []byte: base64 in YAML, which is what EKS gives. */
    json_object_object_add(cluster, "certificateAuthority", json_object_new_string(c->ca_b64));
    json_object_object_add(cluster, "cidr", json_object_new_string(c->service_cidr));
    json_object_object_add(cluster, "name", json_object_new_string(c->name));
    json_object_object_add(spec, "cluster", cluster);
    if (in->raid0) {
        json_object *ls = json_object_new_object(), *inst = json_object_new_object();
        json_object_object_add(ls, "strategy", json_object_new_string("RAID0"));
        json_object_object_add(inst, "localStorage", ls);
        json_object_object_add(spec, "instance", inst);
    }
    json_object_object_add(kubelet, "config", kubelet_config(in));
    if (flag != NULL) {
        json_object *flags = json_object_new_array();
        json_object_array_add(flags, json_object_new_string(flag));
        json_object_object_add(kubelet, "flags", flags);
    }
    json_object_object_add(spec, "kubelet", kubelet);
    json_object_object_add(nc, "spec", spec);
    rc = tlr_yaml_write(nc, &yaml);
    if (rc == TLR_OK) {
        tlr_buf b;
        tlr_buf_init(&b, (size_t)-1);
        tlr_buf_adds(&b, "# tailor generated NodeConfig\n");
        tlr_buf_adds(&b, yaml);
        *out = tlr_buf_take(&b);
    }
    free(yaml);
    free(flag);
    json_object_put(nc);
    return rc;
}

int bs_nodeadm(const tlr_bootstrap_in *in, char **out, char *err, size_t errlen)
{
    tlr_mime_doc doc = { 0 };
    char *nc = NULL;
    int rc;

    if (in->cluster->service_cidr == NULL || in->cluster->service_cidr[0] == '\0')
        return bs_fail(err, errlen, TLR_E_INVAL,
                       "AL2023 needs the cluster's service CIDR (nodeadm's spec.cluster.cidr)");
    rc = bs_user_parts(in->user_data, BS_CT_NODECONFIG, &doc, err, errlen);
    if (rc != TLR_OK)
        goto out;
    rc = node_config_text(in, &nc);
    if (rc != TLR_OK) {
        rc = bs_fail(err, errlen, rc, "writing the NodeConfig: %s", tlr_strerror(rc));
        goto out;
    }
    bs_doc_add(&doc, BS_CT_NODECONFIG, nc, strlen(nc));
    rc = tlr_mime_write(doc.parts, doc.n, BS_BOUNDARY, out);
    if (rc != TLR_OK)
        rc = bs_fail(err, errlen, rc, "userData: a part contains the MIME boundary line \"--%s\"",
                     BS_BOUNDARY);
out:
    free(nc);
    tlr_mime_doc_free(&doc);
    return rc;
}
