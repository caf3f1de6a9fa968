/* parse.c - one node-group ConfigMap to a tlr_ng_group.
 *
 * One table row per data key the converter knows: how its value is read
 * and where it goes.  A key outside the table is an error (a typo must not
 * silently turn into a default); the message suggests the closest known
 * key.  Rows whose setting has no Karpenter equivalent still validate the
 * value, then record a drop with the reason, so the report lists every
 * field that was not carried over.  Cross-key rules (min <= max, a GPU
 * group needs a GPU type, single-AZ with one zone) run after the table.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodegroup_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_labels.h"

typedef struct pctx {
    tlr_ng_group *g;
    const tlr_ng_opts *o;
    char *err;
    size_t errlen;
    bool has_multi_az, multi_az;
    bool has_max;
} pctx;

static int fail(pctx *c, int rc, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(pctx *c, int rc, const char *key, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->err && c->errlen) {
        if (key)
            snprintf(c->err, c->errlen, "%s: ConfigMap %s: data.%s: %s", c->g->file,
                     c->g->name ? c->g->name : "?", key, msg);
        else
            snprintf(c->err, c->errlen, "%s: ConfigMap %s: %s", c->g->file,
                     c->g->name ? c->g->name : "?", msg);
    }
    return rc;
}

static void drop(pctx *c, const char *key, const char *value, const char *reason)
{
    tlr_ng_group *g = c->g;
    g->drops = tlr_realloc(g->drops, (g->ndrops + 1) * sizeof(*g->drops));
    g->drops[g->ndrops++] = (tlr_ng_drop){ tlr_strdup(key), tlr_strdup(value),
                                           tlr_strdup(reason) };
}

static void note(pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(pctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tlr_strv_vaddf(&c->g->notes, &c->g->nnotes, fmt, ap);
    va_end(ap);
}

/* ---- value readers ---------------------------------------------------- */

static int read_int(pctx *c, const char *key, const char *v, int64_t min, int64_t max,
                    int64_t *out)
{
    const char *p = v;
    int64_t x = 0;
    if (*p == '\0')
        return fail(c, TLR_E_PARSE, key, "empty, want a whole number");
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return fail(c, TLR_E_PARSE, key, "\"%.40s\" is not a whole number", v);
        if (x > (INT64_MAX - 9) / 10)
            return fail(c, TLR_E_RANGE, key, "\"%.40s\" is too large", v);
        x = x * 10 + (*p - '0');
    }
    if (x < min || x > max)
        return fail(c, TLR_E_RANGE, key, "%lld is outside %lld..%lld", (long long)x,
                    (long long)min, (long long)max);
    *out = x;
    return TLR_OK;
}

static int read_bool(pctx *c, const char *key, const char *v, bool *out)
{
    static const char *const yes[] = { "true", "yes", "1" }, *const no[] = { "false", "no", "0" };
    for (size_t i = 0; i < 3; i++) {
        if (!strcasecmp(v, yes[i])) {
            *out = true;
            return TLR_OK;
        }
        if (!strcasecmp(v, no[i])) {
            *out = false;
            return TLR_OK;
        }
    }
    return fail(c, TLR_E_PARSE, key, "\"%.40s\" is not true or false", v);
}

static int read_enum(pctx *c, const char *key, const char *v, const char *const *choices,
                     char **out)
{
    char list[256] = "";
    for (size_t i = 0; choices[i]; i++) {
        if (!strcmp(v, choices[i])) {
            free(*out);
            *out = tlr_strdup(v);
            return TLR_OK;
        }
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                 choices[i]);
    }
    return fail(c, TLR_E_PARSE, key, "\"%.40s\" is not one of %s", v, list);
}

/* Split "a, b,c" into trimmed non-empty items; calls fn for each. */
typedef int (*item_fn)(pctx *c, const char *key, const char *item);

static int each_item(pctx *c, const char *key, const char *v, item_fn fn)
{
    char *copy = tlr_strdup(v), *save = NULL;
    int rc = TLR_OK, n = 0;
    for (char *t = strtok_r(copy, ",", &save); t && rc == TLR_OK; t = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*t))
            t++;
        char *e = t + strlen(t);
        while (e > t && isspace((unsigned char)e[-1]))
            *--e = '\0';
        if (*t == '\0')
            continue;
        n++;
        rc = fn(c, key, t);
    }
    free(copy);
    if (rc == TLR_OK && n == 0)
        rc = fail(c, TLR_E_PARSE, key, "empty list");
    return rc;
}

/* "key=value" (value may be empty when allow_empty) into *k, *v (new). */
static int split_kv(pctx *c, const char *key, const char *item, char sep, char **k, char **v)
{
    const char *eq = strchr(item, sep);
    if (eq == NULL || eq == item)
        return fail(c, TLR_E_PARSE, key, "\"%.60s\" is not key%cvalue", item, sep);
    *k = tlr_strndup(item, (size_t)(eq - item));
    *v = tlr_strdup(eq + 1);
    return TLR_OK;
}

/* ---- restricted label and tag domains ---------------------------------- */

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t l = strlen(suffix);
    return n >= l && !memcmp(s + n - l, suffix, l) && (n == l || s[n - l - 1] == '.');
}

/* Why a template label cannot be carried, or NULL.  Karpenter rejects
 * labels in its own and Kubernetes' domains (except node.kubernetes.io,
 * node-restriction.kubernetes.io, kops.k8s.io); eks.amazonaws.com labels
 * mark managed node groups, and `tailorctl migrate` selects legacy nodes
 * by them, so new nodes must not carry them. */
static const char *label_restricted(const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash)
        return NULL;
    size_t n = (size_t)(slash - key);
    if (!strcmp(key, TLR_LABEL_INSTANCE_TYPE))
        return "the kubelet sets this label from the instance type; the NodePool "
               "restricts instance types through its requirements";
    if ((n == 18 && !memcmp(key, "node.kubernetes.io", n)) ||
        (n == 30 && !memcmp(key, "node-restriction.kubernetes.io", n)) ||
        (n == 11 && !memcmp(key, "kops.k8s.io", n)))
        return NULL;
    if (ends_with(key, n, "kubernetes.io") || ends_with(key, n, "k8s.io") ||
        ends_with(key, n, "karpenter.sh") || ends_with(key, n, "karpenter.k8s.aws"))
        return "Karpenter reserves this label domain; it sets the well-known labels itself";
    if (ends_with(key, n, "eks.amazonaws.com"))
        return "EKS managed node group label: new nodes must not carry it (tailorctl "
               "migrate selects the legacy nodes by it)";
    return NULL;
}

static const char *tag_restricted(const char *key)
{
    if (!strncmp(key, "kubernetes.io/cluster/", 22) ||
        !strncmp(key, TLR_PREFIX_KARPENTER, sizeof(TLR_PREFIX_KARPENTER) - 1) ||
        !strcmp(key, TLR_LABEL_NODECLASS) || !strcmp(key, "eks:eks-cluster-name") ||
        !strncmp(key, "aws:", 4))
        return "Karpenter sets this tag itself (or AWS reserves it); EC2NodeClass "
               "spec.tags may not use it";
    return NULL;
}

/* ---- key handlers -------------------------------------------------------- */

typedef int (*key_fn)(pctx *c, const char *key, const char *v);

static int k_instance_type(pctx *c, const char *key, const char *v)
{
    const Tailor__V1__InstanceType *t = ng_catalog_find(c->o->catalog, v);
    if (t == NULL)
        return fail(c, TLR_E_NOTFOUND, key, "\"%.60s\" is not in the instance catalog "
                    "(region %s)", v, c->o->catalog->region && c->o->catalog->region[0]
                    ? c->o->catalog->region : "us-east-1");
    free(c->g->instance_type);
    c->g->instance_type = tlr_strdup(v);
    c->g->type = t;
    return TLR_OK;
}

static int k_min(pctx *c, const char *key, const char *v)
{
    return read_int(c, key, v, 0, 1000000, &c->g->min_nodes);
}

static int k_max(pctx *c, const char *key, const char *v)
{
    c->has_max = true;
    return read_int(c, key, v, 0, 1000000, &c->g->max_nodes);
}

static int k_desired(pctx *c, const char *key, const char *v)
{
    int64_t x;
    int rc = read_int(c, key, v, 0, 1000000, &x);
    if (rc == TLR_OK)
        drop(c, key, v, "Karpenter sizes a NodePool from pending pods; there is no desired "
             "node count");
    return rc;
}

static int k_vol_size(pctx *c, const char *key, const char *v)
{
    c->g->has_volume = true;
    return read_int(c, key, v, 1, 65536, &c->g->volume_gib);
}

static int k_vol_type(pctx *c, const char *key, const char *v)
{
    static const char *const types[] = { "gp3", "gp2", "io1", "io2", "st1", "sc1",
                                         "standard", NULL };
    c->g->has_volume = true;
    return read_enum(c, key, v, types, &c->g->volume_type);
}

static int k_vol_iops(pctx *c, const char *key, const char *v)
{
    c->g->has_volume = true;
    return read_int(c, key, v, 100, 256000, &c->g->iops);
}

static int k_vol_throughput(pctx *c, const char *key, const char *v)
{
    c->g->has_volume = true;
    return read_int(c, key, v, 125, 2000, &c->g->throughput);
}

static int k_vol_encrypted(pctx *c, const char *key, const char *v)
{
    bool b = false;
    int rc = read_bool(c, key, v, &b);
    if (rc == TLR_OK) {
        c->g->has_volume = true;
        c->g->encrypted = b;
    }
    return rc;
}

static int k_vol_kms(pctx *c, const char *key, const char *v)
{
    if (strncmp(v, "arn:", 4) && strspn(v, "0123456789abcdef-") != strlen(v))
        return fail(c, TLR_E_PARSE, key, "\"%.60s\" is not a KMS key ARN or id", v);
    c->g->has_volume = true;
    free(c->g->kms_key);
    c->g->kms_key = tlr_strdup(v);
    return TLR_OK;
}

static int k_vol_device(pctx *c, const char *key, const char *v)
{
    if (strncmp(v, "/dev/", 5) || strlen(v) < 6 || strlen(v) > 32)
        return fail(c, TLR_E_PARSE, key, "\"%.40s\" is not a device name like /dev/xvda", v);
    c->g->has_volume = true;
    free(c->g->device_name);
    c->g->device_name = tlr_strdup(v);
    return TLR_OK;
}

static int k_multi_az(pctx *c, const char *key, const char *v)
{
    c->has_multi_az = true;
    return read_bool(c, key, v, &c->multi_az);
}

static int zone_item(pctx *c, const char *key, const char *z)
{
    size_t n = strlen(z);
    bool ok = n >= 4 && n <= 32 && isalpha((unsigned char)z[n - 1]) &&
              isdigit((unsigned char)z[n - 2]);
    for (size_t i = 0; ok && i < n; i++)
        ok = islower((unsigned char)z[i]) || isdigit((unsigned char)z[i]) || z[i] == '-';
    if (!ok)
        return fail(c, TLR_E_PARSE, key, "\"%.40s\" is not a zone name like us-east-1a", z);
    ng_strset_add(&c->g->zones, &c->g->nzones, z);
    return TLR_OK;
}

static int k_zones(pctx *c, const char *key, const char *v)
{
    return each_item(c, key, v, zone_item);
}

static int k_launch_type(pctx *c, const char *key, const char *v)
{
    static const char *const kinds[] = { "launch_template", "launch_configuration",
                                         "mixed_instances_policy", NULL };
    char *tmp = NULL;
    int rc = read_enum(c, key, v, kinds, &tmp);
    free(tmp);
    if (rc == TLR_OK)
        drop(c, key, v, "Karpenter launches each node with EC2 CreateFleet from a launch "
             "template it generates from the EC2NodeClass; there is no ASG launch type");
    return rc;
}

static int k_gpu(pctx *c, const char *key, const char *v)
{
    return read_bool(c, key, v, &c->g->gpu);
}

static int k_capacity(pctx *c, const char *key, const char *v)
{
    static const char *const kinds[] = { "on-demand", "spot", "mixed", NULL };
    return read_enum(c, key, v, kinds, &c->g->capacity);
}

static int label_item(pctx *c, const char *key, const char *item)
{
    char *k = NULL, *v = NULL;
    int rc = split_kv(c, key, item, '=', &k, &v);
    if (rc)
        return rc;
    const char *why;
    if (!tlr_ng_is_label_key(k))
        rc = fail(c, TLR_E_PARSE, key, "\"%.60s\" is not a valid label key", k);
    else if (!tlr_ng_is_label_value(v))
        rc = fail(c, TLR_E_PARSE, key, "label %s: \"%.70s\" is not a valid label value "
                  "(at most 63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)", k, v);
    else if ((why = label_restricted(k)) != NULL) {
        char what[300];
        snprintf(what, sizeof(what), "%s=%s", k, v);
        drop(c, key, what, why);
    } else {
        tlr_ng_group *g = c->g;
        for (size_t i = 0; i < g->nlabels; i++)
            if (!strcmp(g->labels[i].key, k)) {
                rc = fail(c, TLR_E_INVAL, key, "label %s is given twice", k);
                goto out;
            }
        g->labels = tlr_realloc(g->labels, (g->nlabels + 1) * sizeof(*g->labels));
        g->labels[g->nlabels++] = (tlr_ng_kv){ k, v };
        k = v = NULL;
    }
out:
    free(k);
    free(v);
    return rc;
}

static int k_labels(pctx *c, const char *key, const char *v)
{
    return each_item(c, key, v, label_item);
}

/* "key=value:Effect" or "key:Effect" */
static int taint_item(pctx *c, const char *key, const char *item)
{
    const char *colon = strrchr(item, ':');
    if (colon == NULL)
        return fail(c, TLR_E_PARSE, key, "\"%.60s\" is not key[=value]:Effect", item);
    const char *eff = colon + 1;
    if (strcmp(eff, "NoSchedule") && strcmp(eff, "PreferNoSchedule") && strcmp(eff, "NoExecute"))
        return fail(c, TLR_E_PARSE, key, "taint \"%.60s\": effect \"%.20s\" is not NoSchedule, "
                    "PreferNoSchedule or NoExecute", item, eff);
    char *kv = tlr_strndup(item, (size_t)(colon - item));
    char *eq = strchr(kv, '='), *val = eq ? eq + 1 : "";
    if (eq)
        *eq = '\0';
    int rc = TLR_OK;
    if (!tlr_ng_is_label_key(kv))
        rc = fail(c, TLR_E_PARSE, key, "taint \"%.60s\": \"%.60s\" is not a valid key", item, kv);
    else if (!tlr_ng_is_label_value(val))
        rc = fail(c, TLR_E_PARSE, key, "taint \"%.60s\": \"%.60s\" is not a valid value", item,
                  val);
    if (rc == TLR_OK) {
        tlr_ng_group *g = c->g;
        for (size_t i = 0; i < g->ntaints; i++)
            if (!strcmp(g->taints[i].key, kv) && !strcmp(g->taints[i].effect, eff))
                rc = fail(c, TLR_E_INVAL, key, "taint %s:%s is given twice", kv, eff);
        if (rc == TLR_OK) {
            g->taints = tlr_realloc(g->taints, (g->ntaints + 1) * sizeof(*g->taints));
            g->taints[g->ntaints++] = (tlr_ng_taint){ tlr_strdup(kv), tlr_strdup(val),
                                                      tlr_strdup(eff) };
        }
    }
    free(kv);
    return rc;
}

static int k_taints(pctx *c, const char *key, const char *v)
{
    return each_item(c, key, v, taint_item);
}

static int tag_item(pctx *c, const char *key, const char *item)
{
    char *k = NULL, *v = NULL;
    int rc = split_kv(c, key, item, '=', &k, &v);
    if (rc)
        return rc;
    const char *why;
    if (strlen(k) > 128 || strlen(v) > 256) {
        rc = fail(c, TLR_E_RANGE, key, "tag %.60s: keys are at most 128 and values 256 "
                  "characters", k);
    } else if ((why = tag_restricted(k)) != NULL) {
        drop(c, key, item, why);
    } else {
        tlr_ng_group *g = c->g;
        for (size_t i = 0; i < g->ntags; i++)
            if (!strcmp(g->tags[i].key, k)) {
                rc = fail(c, TLR_E_INVAL, key, "tag %s is given twice", k);
                goto out;
            }
        g->tags = tlr_realloc(g->tags, (g->ntags + 1) * sizeof(*g->tags));
        g->tags[g->ntags++] = (tlr_ng_kv){ k, v };
        k = v = NULL;
    }
out:
    free(k);
    free(v);
    return rc;
}

static int k_tags(pctx *c, const char *key, const char *v)
{
    return each_item(c, key, v, tag_item);
}

/* "prefix-" followed by 8 or 17 lowercase hex digits. */
static bool aws_id(const char *v, const char *prefix)
{
    size_t p = strlen(prefix), n = strlen(v);
    if (strncmp(v, prefix, p) || (n - p != 8 && n - p != 17))
        return false;
    return strspn(v + p, "0123456789abcdef") == n - p;
}

static int k_ami(pctx *c, const char *key, const char *v)
{
    if (!aws_id(v, "ami-"))
        return fail(c, TLR_E_PARSE, key, "\"%.40s\" is not an AMI id (ami- and 8 or 17 hex "
                    "digits)", v);
    free(c->g->ami_id);
    c->g->ami_id = tlr_strdup(v);
    return TLR_OK;
}

static int k_ami_family(pctx *c, const char *key, const char *v)
{
    static const char *const fams[] = { "AL2023", "AL2", "Bottlerocket", "Windows2019",
                                        "Windows2022", "Custom", NULL };
    return read_enum(c, key, v, fams, &c->g->ami_family);
}

static int subnet_item(pctx *c, const char *key, const char *v)
{
    if (!aws_id(v, "subnet-"))
        return fail(c, TLR_E_PARSE, key, "\"%.40s\" is not a subnet id", v);
    ng_strset_add(&c->g->subnets, &c->g->nsubnets, v);
    return TLR_OK;
}

static int k_subnets(pctx *c, const char *key, const char *v)
{
    return each_item(c, key, v, subnet_item);
}

static int sg_item(pctx *c, const char *key, const char *v)
{
    if (!aws_id(v, "sg-"))
        return fail(c, TLR_E_PARSE, key, "\"%.40s\" is not a security group id", v);
    ng_strset_add(&c->g->security_groups, &c->g->nsecurity_groups, v);
    return TLR_OK;
}

static int k_sgs(pctx *c, const char *key, const char *v)
{
    return each_item(c, key, v, sg_item);
}

static bool iam_name(const char *v)
{
    size_t n = strlen(v);
    return n >= 1 && n <= 128 && strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789+=,.@_-") == n;
}

static int k_profile(pctx *c, const char *key, const char *v)
{
    if (!iam_name(v))
        return fail(c, TLR_E_PARSE, key, "\"%.60s\" is not an instance profile name", v);
    free(c->g->instance_profile);
    c->g->instance_profile = tlr_strdup(v);
    return TLR_OK;
}

static int k_role(pctx *c, const char *key, const char *v)
{
    if (!iam_name(v))
        return fail(c, TLR_E_PARSE, key, "\"%.60s\" is not an IAM role name", v);
    free(c->g->role);
    c->g->role = tlr_strdup(v);
    return TLR_OK;
}

static int k_max_pods(pctx *c, const char *key, const char *v)
{
    return read_int(c, key, v, 1, 1000, &c->g->max_pods);
}

static int k_monitoring(pctx *c, const char *key, const char *v)
{
    bool b = false;
    int rc = read_bool(c, key, v, &b);
    if (rc == TLR_OK)
        c->g->detailed_monitoring = b;
    return rc;
}

static int k_ebs_optimized(pctx *c, const char *key, const char *v)
{
    bool b = false;
    int rc = read_bool(c, key, v, &b);
    if (rc == TLR_OK)
        drop(c, key, v, "EC2NodeClass has no EBS-optimized switch: current instance types "
             "are EBS-optimized by default");
    return rc;
}

static int k_user_data(pctx *c, const char *key, const char *v)
{
    char what[64];
    snprintf(what, sizeof(what), "(%zu bytes)", strlen(v));
    drop(c, key, what, "bootstrap user data depends on the AMI family (AL2023 boots with "
         "nodeadm, not bootstrap.sh): review it and set EC2NodeClass spec.userData by hand");
    return TLR_OK;
}

static int k_asg_only(pctx *c, const char *key, const char *v)
{
    drop(c, key, v, "an Auto Scaling Group setting with no NodePool equivalent: Karpenter "
         "manages instances directly, not through an ASG");
    return TLR_OK;
}

static int k_spot_price(pctx *c, const char *key, const char *v)
{
    drop(c, key, v, "Karpenter buys spot with the price-capacity-optimized strategy and "
         "never above the on-demand price; there is no maximum spot price");
    return TLR_OK;
}

typedef struct key_row {
    const char *key;
    key_fn fn;
} key_row;

/* docs/migration.md lists these keys; keep the two in step. */
static const key_row keys[] = {
    { "k8s_instance_type", k_instance_type },
    { "k8s_min_node_number", k_min },
    { "k8s_max_node_number", k_max },
    { "k8s_desired_node_number", k_desired },
    { "k8s_root_volume_size", k_vol_size },
    { "k8s_root_volume_type", k_vol_type },
    { "k8s_root_volume_iops", k_vol_iops },
    { "k8s_root_volume_throughput", k_vol_throughput },
    { "k8s_root_volume_encrypted", k_vol_encrypted },
    { "k8s_root_volume_kms_key_id", k_vol_kms },
    { "k8s_root_volume_device_name", k_vol_device },
    { "multi_az_provisioned_workers", k_multi_az },
    { "k8s_availability_zones", k_zones },
    { "asg_launch_type", k_launch_type },
    { "gpu_enabled", k_gpu },
    { "k8s_capacity_type", k_capacity },
    { "k8s_node_labels", k_labels },
    { "k8s_node_taints", k_taints },
    { "k8s_tags", k_tags },
    { "k8s_ami_id", k_ami },
    { "k8s_ami_family", k_ami_family },
    { "k8s_subnet_ids", k_subnets },
    { "k8s_security_group_ids", k_sgs },
    { "k8s_iam_instance_profile", k_profile },
    { "k8s_iam_role", k_role },
    { "k8s_kubelet_max_pods", k_max_pods },
    { "k8s_detailed_monitoring", k_monitoring },
    { "k8s_ebs_optimized", k_ebs_optimized },
    { "k8s_user_data", k_user_data },
    { "k8s_spot_max_price", k_spot_price },
    { "asg_health_check_type", k_asg_only },
    { "asg_health_check_grace_period", k_asg_only },
    { "asg_termination_policies", k_asg_only },
    { "asg_suspended_processes", k_asg_only },
    { "asg_default_cooldown", k_asg_only },
    { "asg_capacity_rebalance", k_asg_only },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[80];
    if (la >= 79 || lb >= 79)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

static int unknown_key(pctx *c, const char *key)
{
    const char *best = NULL;
    size_t bd = 99;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t d = edit_distance(key, keys[i].key);
        if (d < bd) {
            bd = d;
            best = keys[i].key;
        }
    }
    if (best && bd <= 3)
        return fail(c, TLR_E_INVAL, key, "unknown key (did you mean %s?)", best);
    return fail(c, TLR_E_INVAL, key, "unknown key (docs/migration.md lists the keys "
                "tailorctl convert reads)");
}

/* The value as text: ConfigMap data are strings, but hand-written files
 * often leave numbers and booleans unquoted. */
static int value_text(pctx *c, const char *key, json_object *v, char *buf, size_t len,
                      const char **out)
{
    switch (json_object_get_type(v)) {
    case json_type_string:
        *out = json_object_get_string(v);
        return TLR_OK;
    case json_type_int:
        snprintf(buf, len, "%lld", (long long)json_object_get_int64(v));
        *out = buf;
        return TLR_OK;
    case json_type_boolean:
        *out = json_object_get_boolean(v) ? "true" : "false";
        return TLR_OK;
    case json_type_double:
        return fail(c, TLR_E_PARSE, key, "%s is not a whole number", json_object_get_string(v));
    case json_type_null:
        return fail(c, TLR_E_PARSE, key, "empty value");
    default:
        return fail(c, TLR_E_PARSE, key, "want a string, got a %s",
                    json_object_get_type(v) == json_type_array ? "list" : "mapping");
    }
}

/* ---- cross-key rules ------------------------------------------------------ */

static int finish(pctx *c)
{
    tlr_ng_group *g = c->g;
    const Tailor__V1__InstanceType *t = g->type;

    if (t == NULL)
        return fail(c, TLR_E_INVAL, "k8s_instance_type", "is required");
    if (!c->has_max)
        return fail(c, TLR_E_INVAL, "k8s_max_node_number", "is required");
    if (g->min_nodes > g->max_nodes)
        return fail(c, TLR_E_INVAL, "k8s_min_node_number", "%lld is above "
                    "k8s_max_node_number %lld", (long long)g->min_nodes,
                    (long long)g->max_nodes);
    if (g->min_nodes > 0) {
        char v[32];
        snprintf(v, sizeof(v), "%lld", (long long)g->min_nodes);
        drop(c, "k8s_min_node_number", v, "a NodePool has no minimum size: Karpenter launches "
             "nodes for pending pods only (keep warm capacity with a low-priority placeholder "
             "Deployment)");
    }
    if (g->instance_profile && g->role)
        return fail(c, TLR_E_INVAL, "k8s_iam_role", "set k8s_iam_role or "
                    "k8s_iam_instance_profile, not both (an EC2NodeClass takes one)");
    if (g->gpu && t->gpu_count == 0)
        return fail(c, TLR_E_INVAL, "gpu_enabled", "is true but %s has no GPU", t->name);
    if (g->gpu && strcmp(t->gpu_manufacturer, "nvidia") && strcmp(t->gpu_manufacturer, "amd"))
        return fail(c, TLR_E_INVAL, "gpu_enabled", "%s's GPU maker \"%s\" has no device "
                    "plugin taint convert knows (nvidia, amd)", t->name, t->gpu_manufacturer);
    if (!g->gpu && t->gpu_count > 0)
        note(c, "%s has %d GPU(s) but gpu_enabled is not true: the NodePool is restricted to "
             "its GPU type but not tainted", t->name, t->gpu_count);
    if (g->ami_family && !g->ami_id)
        return fail(c, TLR_E_INVAL, "k8s_ami_family", "needs k8s_ami_id (with the default "
                    "alias the family comes from the alias)");

    /* Zones. */
    if (c->has_multi_az && !c->multi_az) {
        if (g->nzones > 1)
            return fail(c, TLR_E_INVAL, "k8s_availability_zones", "lists %zu zones but "
                        "multi_az_provisioned_workers is false", g->nzones);
        if (g->nzones == 0) {
            ng_strset_add(&g->zones, &g->nzones, c->o->zones[0]);
            note(c, "single-AZ group: the NodePool is pinned to %s (the first zone given); "
                 "set k8s_availability_zones to choose", c->o->zones[0]);
        }
    } else if (g->nzones == 0) {
        for (size_t i = 0; i < c->o->nzones; i++)
            ng_strset_add(&g->zones, &g->nzones, c->o->zones[i]);
        if (!c->has_multi_az)
            note(c, "multi_az_provisioned_workers not set: the NodePool may use every zone "
                 "given (%zu)", c->o->nzones);
    }

    /* Root volume: what EC2 accepts for the type. */
    if (g->has_volume) {
        if (g->volume_type == NULL) {
            g->volume_type = tlr_strdup("gp3");
            note(c, "k8s_root_volume_type not set: gp3 (Karpenter's default)");
        }
        const char *vt = g->volume_type;
        bool gp3 = !strcmp(vt, "gp3"), pio = !strcmp(vt, "io1") || !strcmp(vt, "io2");
        if (g->volume_gib == 0) {
            g->volume_gib = 20;
            note(c, "k8s_root_volume_size not set: 20 GiB (Karpenter's default)");
        }
        int64_t lo = 1, hi = 16384;
        if (pio)
            lo = 4;
        if (!strcmp(vt, "st1") || !strcmp(vt, "sc1"))
            lo = 125;
        if (!strcmp(vt, "standard"))
            hi = 1024;
        if (gp3 || !strcmp(vt, "io2"))
            hi = 65536;
        if (g->volume_gib < lo || g->volume_gib > hi)
            return fail(c, TLR_E_RANGE, "k8s_root_volume_size", "%lld GiB is outside %lld..%lld "
                        "for %s", (long long)g->volume_gib, (long long)lo, (long long)hi, vt);
        if (g->iops && !gp3 && !pio) {
            char v[32];
            snprintf(v, sizeof(v), "%lld", (long long)g->iops);
            drop(c, "k8s_root_volume_iops", v, "only gp3, io1 and io2 volumes take "
                 "provisioned IOPS; EC2 would refuse it on this volume type");
            g->iops = 0;
        }
        if (gp3 && g->iops && (g->iops < 3000 || g->iops > 80000))
            return fail(c, TLR_E_RANGE, "k8s_root_volume_iops", "%lld is outside 3000..80000 "
                        "for gp3", (long long)g->iops);
        if (pio && g->iops == 0)
            return fail(c, TLR_E_INVAL, "k8s_root_volume_iops", "is required for %s volumes",
                        vt);
        if (g->throughput && !gp3) {
            char v[32];
            snprintf(v, sizeof(v), "%lld", (long long)g->throughput);
            drop(c, "k8s_root_volume_throughput", v, "only gp3 volumes take a throughput; "
                 "EC2 would refuse it on this volume type");
            g->throughput = 0;
        }
    }

    if (!g->capacity)
        g->capacity = tlr_strdup("on-demand");

    /* A name like "m5.8xlarge-min-300-max-2500" that names another type
     * than the data is a common leftover of copy-paste: say which wins. */
    const char *dash = strchr(g->name, '-');
    if (dash && memchr(g->name, '.', (size_t)(dash - g->name))) {
        char named[64];
        snprintf(named, sizeof(named), "%.*s", (int)(dash - g->name), g->name);
        if (ng_catalog_find(c->o->catalog, named) && strcmp(named, t->name))
            note(c, "the name says %s but k8s_instance_type is %s: converted as %s", named,
                 t->name, t->name);
    }
    ng_kv_sort(g->labels, g->nlabels);
    ng_kv_sort(g->tags, g->ntags);
    ng_taint_sort(g->taints, g->ntaints);
    return TLR_OK;
}

int tlr_ng_parse(json_object *cm, const char *file, const tlr_ng_opts *o, tlr_ng_group **out,
                 char *err, size_t errlen)
{
    tlr_ng_group *g = tlr_calloc(1, sizeof(*g));
    pctx c = { g, o, err, errlen, false, false, false };
    int rc = TLR_OK;

    g->file = tlr_strdup(file ? file : "-");
    g->encrypted = -1;
    g->detailed_monitoring = -1;
    if (err && errlen)
        err[0] = '\0';
    if (o == NULL || o->catalog == NULL || o->nzones == 0 || cm == NULL) {
        rc = fail(&c, TLR_E_INVAL, NULL, "no catalog or zones");
        goto out;
    }
    const char *kind = tlr_json_str(cm, "kind"), *name = tlr_json_str(cm, "metadata.name");
    g->name = tlr_strdup(name);
    if (!json_object_is_type(cm, json_type_object)) {
        rc = fail(&c, TLR_E_INVAL, NULL, "not a mapping");
        goto out;
    }
    if (kind && strcmp(kind, "ConfigMap")) {
        rc = fail(&c, TLR_E_INVAL, NULL, "kind %s is not a node-group ConfigMap", kind);
        goto out;
    }
    if (name == NULL || name[0] == '\0') {
        free(g->name);
        g->name = NULL;
        rc = fail(&c, TLR_E_INVAL, NULL, "metadata.name is required");
        goto out;
    }
    json_object *data = tlr_json_obj(cm, "data");
    if (data == NULL) {
        rc = fail(&c, TLR_E_INVAL, NULL, "no data mapping");
        goto out;
    }
    /* Keys in a fixed order (the table's), so the first error reported
     * for a file does not depend on how its keys were written. */
    json_object_object_foreach(data, dk, dv) {
        size_t i;
        for (i = 0; i < NKEYS; i++)
            if (!strcmp(dk, keys[i].key))
                break;
        if (i == NKEYS) {
            rc = unknown_key(&c, dk);
            goto out;
        }
        (void)dv;
    }
    for (size_t i = 0; i < NKEYS && rc == TLR_OK; i++) {
        json_object *v;
        if (!json_object_object_get_ex(data, keys[i].key, &v))
            continue;
        char num[32];
        const char *text = NULL;
        if ((rc = value_text(&c, keys[i].key, v, num, sizeof(num), &text)) == TLR_OK)
            rc = keys[i].fn(&c, keys[i].key, text);
    }
    if (rc == TLR_OK)
        rc = finish(&c);
out:
    if (rc != TLR_OK) {
        tlr_ng_group_free(g);
        return rc;
    }
    *out = g;
    return TLR_OK;
}

void tlr_ng_group_free(tlr_ng_group *g)
{
    if (!g)
        return;
    free(g->file);
    free(g->name);
    free(g->instance_type);
    free(g->volume_type);
    free(g->kms_key);
    free(g->device_name);
    ng_strv_free(g->zones, g->nzones);
    free(g->capacity);
    for (size_t i = 0; i < g->nlabels; i++) {
        free(g->labels[i].key);
        free(g->labels[i].value);
    }
    free(g->labels);
    for (size_t i = 0; i < g->ntaints; i++) {
        free(g->taints[i].key);
        free(g->taints[i].value);
        free(g->taints[i].effect);
    }
    free(g->taints);
    for (size_t i = 0; i < g->ntags; i++) {
        free(g->tags[i].key);
        free(g->tags[i].value);
    }
    free(g->tags);
    free(g->ami_id);
    free(g->ami_family);
    ng_strv_free(g->subnets, g->nsubnets);
    ng_strv_free(g->security_groups, g->nsecurity_groups);
    free(g->instance_profile);
    free(g->role);
    for (size_t i = 0; i < g->ndrops; i++) {
        free(g->drops[i].key);
        free(g->drops[i].value);
        free(g->drops[i].reason);
    }
    free(g->drops);
    ng_strv_free(g->notes, g->nnotes);
    free(g);
}
