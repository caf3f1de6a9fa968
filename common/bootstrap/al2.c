/* al2.c - AL2 user data: the user's parts, then a shell part that runs
 * /etc/eks/bootstrap.sh with the cluster and kubelet settings.
 *
 * The script is Karpenter's eksbootstrap.go line for line (flags, order,
 * quoting), so a node joins the same way under either.  bootstrap.sh takes
 * its options as separate words, never "--flag=value"; the kubelet flags
 * travel as one single-quoted --kubelet-extra-args word whose map-valued
 * flags are double-quoted inside it, as Go's %q prints them.  Values are
 * quoted for the shell (a ' inside becomes '\''), so nothing in a label or
 * name can end the quoting early.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_impl.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"

/* s as one single-quoted shell word. */
static void put_sq(tlr_buf *b, const char *s)
{
    tlr_buf_addc(b, '\'');
    for (; *s != '\0'; s++) {
        if (*s == '\'')
            tlr_buf_adds(b, "'\\''");
        else
            tlr_buf_addc(b, *s);
    }
    tlr_buf_addc(b, '\'');
}

/* s double-quoted the way Go's %q does for printable ASCII. */
static void put_dq(tlr_buf *b, const char *s)
{
    tlr_buf_addc(b, '"');
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            tlr_buf_printf(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            tlr_buf_printf(b, "\\x%02x", c);
        else
            tlr_buf_addc(b, (char)c);
    }
    tlr_buf_addc(b, '"');
}

/* " name="k<sep>v,..."" from a sorted JSON map (handed over; NULL = none). */
static void put_map_arg(tlr_buf *b, const char *name, json_object *m, const char *sep)
{
    tlr_buf v;

    if (m == NULL)
        return;
    tlr_buf_init(&v, (size_t)-1);
    json_object_object_foreach(m, k, val) {
        tlr_buf_printf(&v, "%s%s%s%s", v.len > 0 ? "," : "", k, sep,
                       json_object_get_string(val));
    }
    tlr_buf_printf(b, " %s=", name);
    put_dq(b, tlr_buf_str(&v));
    tlr_buf_free(&v);
    json_object_put(m);
}

/* The --kubelet-extra-args value (kubeletExtraArgs in Karpenter). */
static char *extra_args(const tlr_bootstrap_in *in)
{
    const Tailor__V1__KubeletConfig *k = in->kubelet;
    int32_t max_pods = bs_max_pods(in);
    tlr_buf b, v;

    tlr_buf_init(&b, (size_t)-1);
    tlr_buf_init(&v, (size_t)-1);
    if (in->nlabels > 0) {
        const Tailor__V1__Label **l = bs_sorted_labels(in);
        for (size_t i = 0; i < in->nlabels; i++)
            tlr_buf_printf(&v, "%s%s=%s", i > 0 ? "," : "", l[i]->key, l[i]->value);
        free(l);
        tlr_buf_adds(&b, " --node-labels=");
        put_dq(&b, tlr_buf_str(&v));
        tlr_buf_reset(&v);
    }
    /* Always written, even empty, as Karpenter does. */
    for (size_t i = 0; i < in->ntaints; i++) {
        const Tailor__V1__Taint *t = in->taints[i];
        tlr_buf_printf(&v, "%s%s%s%s:%s", i > 0 ? "," : "", t->key,
                       t->value[0] != '\0' ? "=" : "", t->value, bs_effect_name(t->effect));
    }
    tlr_buf_adds(&b, " --register-with-taints=");
    put_dq(&b, tlr_buf_str(&v));
    tlr_buf_free(&v);
    if (max_pods > 0)
        tlr_buf_printf(&b, " --max-pods=%d", (int)max_pods);
    if (k != NULL) {
        if (k->pods_per_core > 0)
            tlr_buf_printf(&b, " --pods-per-core=%d", (int)k->pods_per_core);
        put_map_arg(&b, "--system-reserved", bs_resource_map(k->system_reserved), "=");
        put_map_arg(&b, "--kube-reserved", bs_resource_map(k->kube_reserved), "=");
        put_map_arg(&b, "--eviction-hard", bs_label_map(k->eviction_hard, k->n_eviction_hard),
                    "<");
        put_map_arg(&b, "--eviction-soft", bs_label_map(k->eviction_soft, k->n_eviction_soft),
                    "<");
        put_map_arg(&b, "--eviction-soft-grace-period",
                    bs_duration_map(k->eviction_soft_grace_period,
                                    k->n_eviction_soft_grace_period),
                    "=");
        if (k->eviction_max_pod_grace_period > 0)
            tlr_buf_printf(&b, " --eviction-max-pod-grace-period=%d",
                           (int)k->eviction_max_pod_grace_period);
        if (k->image_gc_high_threshold_percent > 0)
            tlr_buf_printf(&b, " --image-gc-high-threshold=%d",
                           (int)k->image_gc_high_threshold_percent);
        if (k->image_gc_low_threshold_percent > 0)
            tlr_buf_printf(&b, " --image-gc-low-threshold=%d",
                           (int)k->image_gc_low_threshold_percent);
        if (k->has_cpu_cfs_quota)
            tlr_buf_printf(&b, " --cpu-cfs-quota=%s", k->cpu_cfs_quota ? "true" : "false");
    }
    char *s = tlr_strdup(tlr_buf_str(&b) + 1);   /* without the first blank */
    tlr_buf_free(&b);
    return s;
}

static char *script(const tlr_bootstrap_in *in)
{
    const tlr_cluster_identity *c = in->cluster;
    size_t ndns;
    const char *const *dns = bs_cluster_dns(in, &ndns);
    char *args = extra_args(in);
    tlr_buf b;

    tlr_buf_init(&b, (size_t)-1);
    tlr_buf_adds(&b, "#!/bin/bash -xe\n"
                     "exec > >(tee /var/log/user-data.log|logger -t user-data -s "
                     "2>/dev/console) 2>&1\n"
                     "/etc/eks/bootstrap.sh ");
    put_sq(&b, c->name);
    tlr_buf_adds(&b, " --apiserver-endpoint ");
    put_sq(&b, c->endpoint);
    tlr_buf_adds(&b, " --b64-cluster-ca ");
    put_sq(&b, c->ca_b64);
    if (ndns > 0 && strchr(dns[0], ':') != NULL)
        tlr_buf_adds(&b, " \\\n--ip-family ipv6");
    if (ndns > 0) {
        tlr_buf_adds(&b, " \\\n--dns-cluster-ip ");
        put_sq(&b, dns[0]);
    }
    if (bs_max_pods(in) > 0)
        tlr_buf_adds(&b, " \\\n--use-max-pods false");
    if (args[0] != '\0') {
        tlr_buf_adds(&b, " \\\n--kubelet-extra-args ");
        put_sq(&b, args);
    }
    if (in->raid0)
        tlr_buf_adds(&b, " \\\n--local-disks raid0");
    free(args);
    return tlr_buf_take(&b);
}

int bs_al2(const tlr_bootstrap_in *in, char **out, char *err, size_t errlen)
{
    tlr_mime_doc doc = { 0 };
    char *sh = NULL;
    int rc;

    /* AL2 has no NodeConfig: anything that is not MIME is a shell script. */
    rc = bs_user_parts(in->user_data, NULL, &doc, err, errlen);
    if (rc != TLR_OK)
        goto out;
    sh = script(in);
    bs_doc_add(&doc, BS_CT_SHELL, sh, strlen(sh));
    rc = tlr_mime_write(doc.parts, doc.n, BS_BOUNDARY, out);
    if (rc != TLR_OK)
        rc = bs_fail(err, errlen, rc, "userData: a part contains the MIME boundary line \"--%s\"",
                     BS_BOUNDARY);
out:
    free(sh);
    tlr_mime_doc_free(&doc);
    return rc;
}
