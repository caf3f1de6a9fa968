/* bottlerocket.c - Bottlerocket user data: the user's TOML settings with
 * tailor's settings.kubernetes values laid over them.
 *
 * Karpenter's rules (bottlerocket.go): the cluster identity is always
 * tailor's; node-labels are merged with tailor's winning; node-taints are
 * replaced by tailor's; each kubelet field tailor has a value for
 * overrides the user's, and a field tailor leaves unset keeps the user's.
 * Unlike Karpenter, which re-encodes settings.kubernetes through a typed
 * struct and so drops keys it does not know, every key the user wrote is
 * kept.  settings.kubernetes is written with its keys sorted, so the
 * result does not depend on where in the user's file a key stood.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_impl.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_toml.h"

/* The table at key under parent, created when absent; NULL when the user
 * put something else there. */
static json_object *table_at(json_object *parent, const char *key)
{
    json_object *t = NULL;

    if (!json_object_object_get_ex(parent, key, &t) || t == NULL) {
        t = json_object_new_object();
        json_object_object_add(parent, key, t);
        return t;
    }
    return json_object_is_type(t, json_type_object) ? t : NULL;
}

static void set_str(json_object *o, const char *key, const char *v)
{
    json_object_object_add(o, key, json_object_new_string(v));
}

/* Replace key by v (handed over) when v is not NULL. */
static void set_opt(json_object *o, const char *key, json_object *v)
{
    if (v != NULL)
        json_object_object_add(o, key, v);
}

static json_object *raid0_command(void)
{
    static const char *const init[] = { "apiclient", "ephemeral-storage", "init", NULL };
    static const char *const bind[] = { "apiclient", "ephemeral-storage", "bind", "--dirs",
                                        "/var/lib/containerd", "/var/lib/kubelet",
                                        "/var/log/pods", NULL };
    const char *const *cmds[] = { init, bind };
    json_object *c = json_object_new_object(), *all = json_object_new_array();

    for (size_t i = 0; i < 2; i++) {
        json_object *argv = json_object_new_array();
        for (const char *const *a = cmds[i]; *a != NULL; a++)
            json_object_array_add(argv, json_object_new_string(*a));
        json_object_array_add(all, argv);
    }
    json_object_object_add(c, "commands", all);
    json_object_object_add(c, "essential", json_object_new_boolean(1));
    json_object_object_add(c, "mode", json_object_new_string("always"));
    return c;
}

/* Lay tailor's values over settings.kubernetes k (borrowed). */
static void set_kubernetes(const tlr_bootstrap_in *in, json_object *k)
{
    const Tailor__V1__KubeletConfig *kc = in->kubelet;
    size_t ndns;
    const char *const *dns = bs_cluster_dns(in, &ndns);
    int32_t max_pods = bs_max_pods(in);
    char num[16];

    set_str(k, "api-server", in->cluster->endpoint);
    set_str(k, "cluster-certificate", in->cluster->ca_b64);
    set_str(k, "cluster-name", in->cluster->name);
    if (ndns > 0)
        set_str(k, "cluster-dns-ip", dns[0]);

    /* node-labels: the user's, then tailor's on top. */
    json_object *labels = json_object_new_object(), *user = NULL;
    if (json_object_object_get_ex(k, "node-labels", &user) &&
        json_object_is_type(user, json_type_object)) {
        json_object_object_foreach(user, lk, lv) {
            json_object_object_add(labels, lk, json_object_get(lv));
        }
    }
    for (size_t i = 0; i < in->nlabels; i++)
        set_str(labels, in->labels[i]->key, in->labels[i]->value);
    json_object_object_del(k, "node-labels");
    if (json_object_object_length(labels) > 0)
        json_object_object_add(k, "node-labels", bs_sorted(labels));
    json_object_put(labels);

    /* node-taints: tailor's only; key -> ["value:Effect", ...]. */
    json_object_object_del(k, "node-taints");
    if (in->ntaints > 0) {
        json_object *taints = json_object_new_object();
        for (size_t i = 0; i < in->ntaints; i++) {
            const Tailor__V1__Taint *t = in->taints[i];
            json_object *list = json_object_object_get(taints, t->key);
            char *v = tlr_malloc(strlen(t->value) + 20);
            if (list == NULL) {
                list = json_object_new_array();
                json_object_object_add(taints, t->key, list);
            }
            sprintf(v, "%s:%s", t->value, bs_effect_name(t->effect));
            json_object_array_add(list, json_object_new_string(v));
            free(v);
        }
        json_object_object_add(k, "node-taints", bs_sorted(taints));
        json_object_put(taints);
    }
    if (max_pods > 0)
        json_object_object_add(k, "max-pods", json_object_new_int(max_pods));
    if (kc == NULL)
        return;
    set_opt(k, "kube-reserved", bs_resource_map(kc->kube_reserved));
    set_opt(k, "system-reserved", bs_resource_map(kc->system_reserved));
    set_opt(k, "eviction-hard", bs_label_map(kc->eviction_hard, kc->n_eviction_hard));
    set_opt(k, "eviction-soft", bs_label_map(kc->eviction_soft, kc->n_eviction_soft));
    set_opt(k, "eviction-soft-grace-period",
            bs_duration_map(kc->eviction_soft_grace_period, kc->n_eviction_soft_grace_period));
    if (kc->eviction_max_pod_grace_period > 0)
        json_object_object_add(k, "eviction-max-pod-grace-period",
                               json_object_new_int(kc->eviction_max_pod_grace_period));
    /* Bottlerocket models these two as strings. */
    if (kc->image_gc_high_threshold_percent > 0) {
        snprintf(num, sizeof(num), "%d", (int)kc->image_gc_high_threshold_percent);
        set_str(k, "image-gc-high-threshold-percent", num);
    }
    if (kc->image_gc_low_threshold_percent > 0) {
        snprintf(num, sizeof(num), "%d", (int)kc->image_gc_low_threshold_percent);
        set_str(k, "image-gc-low-threshold-percent", num);
    }
    if (kc->has_cpu_cfs_quota)
        json_object_object_add(k, "cpu-cfs-quota-enforced",
                               json_object_new_boolean(kc->cpu_cfs_quota));
}

int bs_bottlerocket(const tlr_bootstrap_in *in, char **out, char *err, size_t errlen)
{
    const char *ud = in->user_data != NULL ? in->user_data : "";
    json_object *doc = NULL, *settings, *k;
    char why[200];
    int rc;

    rc = tlr_toml_parse(ud, strlen(ud), &doc, why, sizeof(why));
    if (rc != TLR_OK)
        return bs_fail(err, errlen, rc, "userData: %s", why);
    settings = table_at(doc, "settings");
    k = settings != NULL ? table_at(settings, "kubernetes") : NULL;
    if (k == NULL) {
        rc = bs_fail(err, errlen, TLR_E_PARSE, "userData: %s is not a table",
                     settings == NULL ? "settings" : "settings.kubernetes");
        goto out;
    }
    set_kubernetes(in, k);
    json_object_object_add(settings, "kubernetes", bs_sorted(k));
    if (in->raid0) {
        json_object *bc = table_at(settings, "bootstrap-commands");
        if (bc == NULL) {
            rc = bs_fail(err, errlen, TLR_E_PARSE,
                         "userData: settings.bootstrap-commands is not a table");
            goto out;
        }
        json_object_object_add(bc, "000-mount-instance-storage", raid0_command());
    }
    rc = tlr_toml_write(doc, out);
    if (rc != TLR_OK)
        rc = bs_fail(err, errlen, rc, "writing the settings: %s", tlr_strerror(rc));
out:
    json_object_put(doc);
    return rc;
}
