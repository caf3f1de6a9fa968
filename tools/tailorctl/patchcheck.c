/* patchcheck.c - tailorctl patch-check: is every node on the AMI its
 * EC2NodeClass resolves to now, and can it be replaced?
 *
 * Reads the cluster (Nodes, NodeClaims, NodePools, EC2NodeClasses, Pods,
 * PDBs), asks EC2 which AMI each node's instance runs (the providerID's
 * instance id -> DescribeInstances ImageId), resolves each EC2NodeClass's
 * amiSelectorTerms once (common/aws/ami.c: aliases and ssmParameter
 * through SSM, ids, names, owners and tags through DescribeImages), and
 * decides per node with common/patchcheck (state, expected AMI, age,
 * blockers).  Exit codes:
 *   0  compliance >= --min-compliance
 *   3  below it (the table or JSON says which nodes)
 *   2  bad usage
 *   1  the cluster or AWS could not be read
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlcluster.h"
#include "ctlprogress.h"
#include "pdbserve.h"
#include "tailorctl.h"
#include "tlr_alloc.h"
#include "tlr_ami.h"
#include "tlr_awsjson.h"
#include "tlr_buf.h"
#include "tlr_conf.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"
#include "tlr_patchcheck.h"
#include "tlr_time.h"

extern char **environ;

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_NONCOMPLIANT = 3 };

typedef struct patch_cfg {
    char *kubeconfig, *context, *region, *endpoint, *k8s, *legacy_class;
    double min_compliance;
    int output;
    bool in_cluster;
} patch_cfg;

static const char *const outputs[] = { "text", "json", NULL };

static const tlr_setting settings[] = {
    { .name = "kubeconfig", .type = TLR_SET_STR, .offset = offsetof(patch_cfg, kubeconfig),
      .help = "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config)" },
    { .name = "context", .type = TLR_SET_STR, .offset = offsetof(patch_cfg, context),
      .help = "kubeconfig context (default: the current one)" },
    { .name = "in-cluster", .type = TLR_SET_BOOL, .offset = offsetof(patch_cfg, in_cluster),
      .help = "use the pod's service account instead of a kubeconfig" },
    { .name = "region", .env = "AWS_REGION", .type = TLR_SET_STR,
      .offset = offsetof(patch_cfg, region), .help = "AWS region (default us-east-1)" },
    { .name = "aws-endpoint", .env = "AWS_ENDPOINT_URL", .type = TLR_SET_STR,
      .offset = offsetof(patch_cfg, endpoint),
      .help = "EC2 and SSM endpoint override (moto: http://127.0.0.1:PORT)" },
    { .name = "k8s-version", .type = TLR_SET_STR, .offset = offsetof(patch_cfg, k8s),
      .help = "Kubernetes version for AMI aliases, e.g. 1.31 (default: the API server's)" },
    { .name = "legacy-nodeclass", .type = TLR_SET_STR, .offset = offsetof(patch_cfg, legacy_class),
      .help = "compare nodes without a NodePool (ASG nodes) with this EC2NodeClass's AMIs" },
    { .name = "min-compliance", .type = TLR_SET_DOUBLE, .offset = offsetof(patch_cfg, min_compliance),
      .def = "100", .help = "percent of judged nodes that must be current; below it exit 3",
      .min = 0, .max = 100 },
    { .name = "output", .type = TLR_SET_ENUM, .offset = offsetof(patch_cfg, output), .def = "text",
      .help = "text (a table) or json (-o)", .choices = outputs },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

/* ---- the cluster --------------------------------------------------------- */

typedef ctl_cluster objs;

static const char *ann(Tailor__V1__Label *const *v, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i]->key, key))
            return v[i]->value;
    return NULL;
}

/* One resolved class, cached. */
typedef struct rclass {
    const char *name;
    tlr_amis amis;
    bool ok;
    char err[512];
} rclass;

static rclass *resolve_class(rclass **cache, size_t *n, const objs *o, const char *name,
                             const char *k8s, const tlr_ami_ops *ops)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*cache)[i].name, name))
            return &(*cache)[i];
    *cache = tlr_realloc(*cache, (*n + 1) * sizeof(**cache));
    rclass *r = &(*cache)[(*n)++];
    memset(r, 0, sizeof(*r));
    r->name = name;
    const Tailor__V1__NodeClass *nc = NULL;
    for (size_t i = 0; i < o->nclasses; i++)
        if (!strcmp(o->classes[i]->name, name))
            nc = o->classes[i];
    if (!nc) {
        snprintf(r->err, sizeof(r->err), "not found in the cluster");
        return r;
    }
    r->ok = tlr_ami_resolve(nc->ami_selector_terms, nc->n_ami_selector_terms, k8s, ops,
                            &r->amis, r->err, sizeof(r->err)) == TLR_OK;
    return r;
}

int cmd_patch_check(int argc, char **argv)
{
    patch_cfg cfg = { 0 };
    tlr_conf_result res;
    tlr_kube *kc = NULL;
    tlr_aws_creds *creds = NULL;
    tlr_ec2 *ec2 = NULL;
    tlr_aws_json *ssm = NULL;
    objs o = { 0 };
    rclass *cache = NULL;
    size_t ncache = 0;
    tlr_pchk_row *rows = NULL;
    tlr_ec2_instances inst = { 0 };
    ctl_progress *progress = NULL;
    int exit_code = EXIT_USAGE, rc;
    char err[512] = "", k8s[32] = "";
    char **args = tlr_calloc((size_t)argc + 1, sizeof(*args));
    for (int i = 0; i < argc; i++)
        args[i] = !strcmp(argv[i], "-o") ? "--output" : argv[i];

    rc = tlr_conf_load(settings, NSETTINGS, &cfg, argc, args, (const char *const *)environ, &res);
    if (rc || res.help || res.argc > 0) {
        if (rc)
            fprintf(stderr, "tailorctl patch-check: %s\n", res.err);
        else if (!res.help)
            fprintf(stderr, "tailorctl patch-check: unexpected argument %s\n", res.argv[0]);
        tlr_conf_help("tailorctl patch-check",
                      "For every node: its AMI (EC2), the AMI its EC2NodeClass resolves to now "
                      "(SSM, EC2), its age, whether it drifted and what blocks its replacement "
                      "(PDBs, karpenter.sh/do-not-disrupt). Exit 0 compliant, 3 below "
                      "--min-compliance, 2 bad usage, 1 cluster or AWS unreadable.",
                      settings, NSETTINGS, res.help && !rc ? stdout : stderr);
        exit_code = res.help && !rc ? EXIT_OK : EXIT_USAGE;
        goto out;
    }
    exit_code = EXIT_FAIL;
    if ((rc = pdbc_connect(cfg.kubeconfig, cfg.context, cfg.in_cluster, 0, &kc, err,
                           sizeof(err))) != TLR_OK) {
        fprintf(stderr, "tailorctl patch-check: kubeconfig: %s\n", err[0] ? err : tlr_strerror(rc));
        goto out;
    }
    progress = ctl_progress_new("patch-check", cfg.output == 1);
    ctl_cluster_opts lo = { .cmd = "patch-check", .compact_pods = true, .progress = progress,
                            .kinds = CTL_NODES | CTL_NODECLAIMS | CTL_NODEPOOLS |
                                     CTL_NODECLASSES | CTL_PODS | CTL_PDBS };
    if ((rc = ctl_cluster_load(kc, &lo, &o, err, sizeof(err))) != TLR_OK) {
        fprintf(stderr, "tailorctl patch-check: %s\n", err);
        goto out;
    }
    if (cfg.k8s)
        snprintf(k8s, sizeof(k8s), "%s", cfg.k8s);
    else if (ctl_server_version(kc, k8s, sizeof(k8s)) != TLR_OK)
        fprintf(stderr, "tailorctl patch-check: warning: the API server's /version did not say "
                "its version; AMI aliases cannot be resolved (give --k8s-version)\n");

    if ((rc = tlr_aws_creds_create(&(tlr_aws_creds_opts){ .region = cfg.region }, &creds)) ||
        (rc = tlr_ec2_create(&(tlr_aws_query_opts){ .region = cfg.region,
                                                    .endpoint = cfg.endpoint, .creds = creds },
                             &ec2)) ||
        (rc = tlr_aws_json_create(&(tlr_aws_json_opts){ .service = "ssm",
                                                        .target_prefix = "AmazonSSM",
                                                        .region = cfg.region,
                                                        .endpoint = cfg.endpoint,
                                                        .creds = creds },
                                  &ssm))) {
        fprintf(stderr, "tailorctl patch-check: AWS clients: %s\n", tlr_strerror(rc));
        goto out;
    }
    tlr_ami_aws clients = { ec2, ssm };
    tlr_ami_ops ops;
    tlr_ami_ops_aws(&clients, &ops);

    /* Every node's instance, in one filtered call (missing ids are simply
     * absent, not an error as they would be with InstanceId.N). */
    const char **ids = tlr_calloc(o.nnodes + 1, sizeof(*ids));
    size_t nids = 0;
    for (size_t i = 0; i < o.nnodes; i++) {
        const char *id = tlr_provider_id_instance(o.nodes[i]->provider_id);
        if (id)
            ids[nids++] = id;
    }
    tlr_aws_error ae = { 0 };
    if (nids > 0) {
        tlr_ec2_filter f = { "instance-id", ids, nids };
        ctl_progress_step(progress, "EC2 DescribeInstances", nids);
        rc = tlr_ec2_describe_instances(ec2, &f, 1, NULL, 0, 0, &inst, &ae);
        ctl_progress_set(progress, inst.n);
        ctl_progress_end(progress, rc == TLR_OK ? NULL : tlr_strerror(rc));
        if (rc != TLR_OK) {
            fprintf(stderr, "tailorctl patch-check: EC2 DescribeInstances: %s%s%s\n",
                    tlr_strerror(rc), ae.code[0] ? ": " : "", ae.code);
            free(ids);
            goto out;
        }
    }
    free(ids);

    rows = tlr_calloc(o.nnodes + 1, sizeof(*rows));
    Tailor__V1__Pod **mine = tlr_calloc(o.npods + 1, sizeof(*mine));
    int64_t now = tlr_wall_ms();
    ctl_progress_step(progress, "judging nodes", o.nnodes);
    for (size_t i = 0; i < o.nnodes; i++) {
        ctl_progress_set(progress, i);
        const Tailor__V1__Node *n = o.nodes[i];
        const Tailor__V1__NodeClaim *claim = NULL;
        for (size_t k = 0; k < o.nclaims && !claim; k++)
            if (!strcmp(o.claims[k]->status ? o.claims[k]->status->node_name : "", n->name) ||
                (n->provider_id[0] && o.claims[k]->status &&
                 !strcmp(o.claims[k]->status->provider_id, n->provider_id)) ||
                (n->nodeclaim_name[0] && !strcmp(o.claims[k]->name, n->nodeclaim_name)))
                claim = o.claims[k];
        const Tailor__V1__NodePool *pool = NULL;
        for (size_t k = 0; k < o.npools && n->nodepool[0] && !pool; k++)
            if (!strcmp(o.pools[k]->name, n->nodepool))
                pool = o.pools[k];
        const char *cls = NULL;
        if (claim && claim->node_class[0])
            cls = claim->node_class;
        if (!cls && n->nodepool[0])
            cls = ann(n->labels, n->n_labels, TLR_LABEL_NODECLASS);
        if (!cls && pool && pool->node_class_ref)
            cls = pool->node_class_ref->name;
        bool legacy = false;
        if (!cls && !n->nodepool[0] && cfg.legacy_class) {
            cls = cfg.legacy_class;
            legacy = true;
        }
        const char *iid = tlr_provider_id_instance(n->provider_id), *ami = NULL, *ami_err = NULL;
        for (size_t k = 0; iid && k < inst.n && !ami; k++)
            if (!strcmp(inst.v[k].id, iid))
                ami = inst.v[k].image_id;
        if (!iid)
            ami_err = n->provider_id[0] ? "the providerID names no EC2 instance"
                                        : "the node has no providerID";
        else if (!ami)
            ami_err = "EC2 does not know its instance";
        rclass *rc_ = cls ? resolve_class(&cache, &ncache, &o, cls, k8s, &ops) : NULL;
        size_t nmine = 0;
        for (size_t k = 0; k < o.npods; k++)
            if (!strcmp(o.pods[k]->node_name, n->name))
                mine[nmine++] = o.pods[k];
        tlr_pchk_in in = {
            .node = n, .nodeclass = cls, .legacy = legacy, .instance_id = iid, .ami = ami,
            .ami_error = ami_err, .resolved = rc_ && rc_->ok ? &rc_->amis : NULL,
            .resolve_error = rc_ ? rc_->err : NULL,
            .pool_hash = pool ? pool->hash : NULL,
            .node_pool_hash = claim ? claim->nodepool_hash
                                    : ann(n->annotations, n->n_annotations,
                                          TLR_ANNOTATION_NODEPOOL_HASH),
            .pods = mine, .npods = nmine, .pdbs = o.pdbs, .npdbs = o.npdbs, .now_ms = now,
        };
        tlr_pchk_decide(&in, &rows[i]);
    }
    ctl_progress_set(progress, o.nnodes);
    ctl_progress_free(progress);
    progress = NULL;
    free(mine);

    tlr_pchk_summary s;
    tlr_pchk_summarize(rows, o.nnodes, &s);
    tlr_buf b;
    tlr_buf_init(&b, 1u << 30);
    if (cfg.output == 1)
        tlr_pchk_json(rows, o.nnodes, &s, cfg.min_compliance, &b);
    else
        tlr_pchk_text(rows, o.nnodes, &s, cfg.min_compliance, &b);
    fputs(tlr_buf_str(&b), stdout);
    tlr_buf_free(&b);
    exit_code = s.compliance + 1e-9 >= cfg.min_compliance ? EXIT_OK : EXIT_NONCOMPLIANT;
out:
    ctl_progress_free(progress);
    for (size_t i = 0; rows && i < o.nnodes; i++)
        tlr_pchk_row_free(&rows[i]);
    free(rows);
    for (size_t i = 0; i < ncache; i++)
        tlr_amis_free(&cache[i].amis);
    free(cache);
    tlr_ec2_instances_free(&inst);
    ctl_cluster_free(&o);
    tlr_aws_json_free(ssm);
    tlr_ec2_free(ec2);
    tlr_aws_creds_free(creds);
    tlr_kube_free(kc);
    tlr_conf_free(settings, NSETTINGS, &cfg);
    free(args);
    return exit_code;
}
