/* migrate_preflight.c - gather what the migration's preflight checks judge
 * (common/migrate/preflight.c decides):
 *
 *   the legacy nodes (the run's own selection) and their ASGs;
 *   the AMIs they run: DescribeInstances -> ImageId -> DescribeImages
 *   (architecture, CreationDate);
 *   every NodePool's EC2NodeClass resolved as Karpenter does
 *   (common/aws/ami.c: aliases and ssmParameter through SSM, ids, names,
 *   owners and tags through DescribeImages);
 *   a dry-run solve (tlr_solve, the engine tailor-solver runs) of the legacy
 *   nodes' pods onto tailor's existing nodes and new ones from the
 *   cluster's NodePools and the catalog file;
 *   what will hold up the drain: pods under several PDBs (never evictable),
 *   PDBs allowing no disruption now, karpenter.sh/do-not-disrupt, pods
 *   with no controller (they do not come back).
 * Nothing is changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlcluster.h"
#include "migctl.h"
#include "tlr_alloc.h"
#include "tlr_ami.h"
#include "tlr_autoscaling.h"
#include "tlr_catalog.h"
#include "tlr_drain.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"
#include "tlr_kubeobj.h"
#include "tlr_labels.h"
#include "tlr_solve.h"
#include "tlr_time.h"

typedef ctl_cluster objs;

static bool legacy_node(const mig_snap *s, const char *name)
{
    for (size_t i = 0; name && name[0] && i < s->nnodes; i++)
        if (s->nodes[i].selected && strcmp(s->nodes[i].name, name) == 0)
            return true;
    return false;
}

typedef struct resolved {
    const char *name;
    tlr_amis amis;
    bool ok;
    char err[512];
} resolved;

/* The legacy nodes' AMIs: instance -> ImageId -> the image. */
static int legacy_amis(mig_cluster *c, const mig_snap *s, tlr_ec2_instances *inst,
                       tlr_ec2_images *imgs, char *err, size_t len)
{
    const char **ids = tlr_calloc(s->nnodes + 1, sizeof(*ids));
    size_t n = 0;
    tlr_aws_error e = { 0 };
    int rc = TLR_OK;
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->nodes[i].selected && s->nodes[i].instance[0])
            ids[n++] = s->nodes[i].instance;
    if (n > 0) {
        tlr_ec2_filter f = { "instance-id", ids, n };
        rc = tlr_ec2_describe_instances(mig_cluster_ec2(c), &f, 1, NULL, 0, 0, inst, &e);
        if (rc != TLR_OK)
            snprintf(err, len, "EC2 DescribeInstances: %s %s %s", tlr_strerror(rc), e.code,
                     e.message);
    }
    free(ids);
    if (rc != TLR_OK || inst->n == 0)
        return rc;
    const char **amis = tlr_calloc(inst->n + 1, sizeof(*amis));
    size_t na = 0;
    for (size_t i = 0; i < inst->n; i++) {
        bool seen = !inst->v[i].image_id[0];
        for (size_t k = 0; k < na && !seen; k++)
            seen = strcmp(amis[k], inst->v[i].image_id) == 0;
        if (!seen)
            amis[na++] = inst->v[i].image_id;
    }
    if (na > 0) {
        tlr_ec2_filter f = { "image-id", amis, na };
        rc = tlr_ec2_describe_images(mig_cluster_ec2(c), &f, 1, NULL, 0, NULL, 0, imgs, &e);
        if (rc != TLR_OK)
            snprintf(err, len, "EC2 DescribeImages: %s %s %s", tlr_strerror(rc), e.code,
                     e.message);
    }
    free(amis);
    return rc;
}

static const tlr_mig_podv *podv_of(const mig_snap *s, const char *uid)
{
    for (size_t i = 0; uid && i < s->npods; i++)
        if (strcmp(s->pods[i].uid, uid) == 0)
            return &s->pods[i];
    return NULL;
}

static void drain_checks(const objs *o, const mig_snap *s, bool restart_single,
                         tlr_mig_checks *out)
{
    for (size_t i = 0; i < o->npods; i++) {
        const Tailor__V1__Pod *p = o->pods[i];
        if (!legacy_node(s, p->node_name) || p->is_daemonset || tlr_drain_pod_terminal(p) ||
            tlr_drain_pod_mirror(p))
            continue;
        char obj[600];
        snprintf(obj, sizeof(obj), "pod %s/%s", p->namespace_, p->name);
        const Tailor__V1__Pod *one[1] = { p };
        tlr_drain_plan plan;
        tlr_drain_decide(one, 1, (const Tailor__V1__PodDisruptionBudget *const *)o->pdbs,
                         o->npdbs, NULL, &(tlr_drain_opts){ .now_ms = tlr_wall_ms() }, &plan);
        const tlr_drain_item *it = plan.n ? &plan.items[0] : NULL;
        const tlr_mig_podv *pv = podv_of(s, p->uid);
        bool rolled = restart_single && pv && tlr_mig_needs_restart(pv, s->pods, s->npods);
        if (rolled) {
            tlr_mig_checks_add(out, "single-replica", obj, TLR_MIG_PASS, "the only Ready pod of "
                               "Deployment %s/%s: it gets a rolling restart (the new pod Ready "
                               "on tailor's nodes first), not an eviction%s", pv->ns,
                               pv->owner_name, it && it->pdb_blocks ? "; its PDB allows no "
                               "eviction, so this is the only way it moves" : "");
        } else if (it && it->npdbs > 1) {
            tlr_mig_checks_add(out, "drain-blockers", obj, TLR_MIG_FAIL, "%d PodDisruptionBudgets "
                               "select it: the Eviction API refuses to evict it, so its node "
                               "can never drain (keep one PDB per pod)", it->npdbs);
        } else if (it && it->verdict == TLR_DRAIN_WAIT_DO_NOT_DISRUPT) {
            tlr_mig_checks_add(out, "drain-blockers", obj, TLR_MIG_WARN, "has %s: its node waits "
                               "until it finishes or the annotation goes (the drain times out "
                               "otherwise)", TLR_DRAIN_DO_NOT_DISRUPT);
        } else if (it && it->pdb_blocks) {
            tlr_mig_checks_add(out, "drain-blockers", obj, TLR_MIG_WARN, "PodDisruptionBudget "
                               "%s/%s allows no disruption now: its eviction waits until it "
                               "does", p->namespace_, it->pdb ? it->pdb : "?");
        }
        tlr_drain_plan_clear(&plan);
        bool owned = false;
        for (size_t k = 0; k < p->n_owners; k++)
            owned |= p->owners[k]->controller;
        if (!owned) {
            tlr_mig_checks_add(out, "orphan-pods", obj, TLR_MIG_WARN, "has no controller: once "
                               "evicted it does not come back anywhere");
        }
    }
}

int mig_preflight(mig_cluster *c, bool resuming, tlr_mig_checks *out, char *err, size_t len)
{
    const mig_cfg *cfg = mig_cluster_cfg(c);
    tlr_kube *kc = mig_cluster_kube(c);
    mig_snap snap = { 0 };
    objs o = { 0 };
    tlr_ec2_instances inst = { 0 };
    tlr_ec2_images imgs = { 0 };
    resolved *res = NULL;
    size_t nres = 0;
    tlr_mig_legacy_ami *legacy = NULL;
    Tailor__V1__Catalog *cat = NULL;
    Tailor__V1__Pod **pending = NULL;
    Tailor__V1__SolveResponse *resp = NULL;
    char k8s[32] = "", e2[512];
    int rc;

    if ((rc = mig_cluster_snapshot(c, &snap, err, len)) != TLR_OK)
        goto out;
    ctl_cluster_opts lo = { .cmd = "migrate", .node_selector = TLR_LABEL_NODEPOOL,
                            .kinds = CTL_NODEPOOLS | CTL_NODECLASSES | CTL_NODES | CTL_PODS |
                                     CTL_DAEMONSETS | CTL_PDBS | CTL_NODECLAIMS };
    if ((rc = ctl_cluster_load(kc, &lo, &o, err, len)) != TLR_OK)
        goto out;

    /* The legacy nodes, their pods and their ASGs. */
    size_t nlegacy = 0, nlpods = 0, no_asg = 0;
    for (size_t i = 0; i < snap.nnodes; i++)
        if (snap.nodes[i].selected) {
            nlegacy++;
            no_asg += !snap.nodes[i].asg[0];
        }
    for (size_t i = 0; i < o.npods; i++)
        if (legacy_node(&snap, o.pods[i]->node_name) && !o.pods[i]->is_daemonset &&
            !tlr_drain_pod_terminal(o.pods[i]))
            nlpods++;
    const char *how = cfg->asg ? "--asg" : "--selector";
    const char *what = cfg->asg ? cfg->asg : cfg->selector;
    if (nlegacy == 0)
        tlr_mig_checks_add(out, "legacy-nodes", what, resuming ? TLR_MIG_PASS : TLR_MIG_FAIL,
                           resuming ? "no legacy node left to move"
                                    : "%s %s selects no node: nothing to migrate", how, what);
    else
        tlr_mig_checks_add(out, "legacy-nodes", what, TLR_MIG_PASS,
                           "%zu legacy node%s with %zu pods to move (DaemonSet pods stay)",
                           nlegacy, nlegacy == 1 ? "" : "s", nlpods);
    if (cfg->asg) {
        mig_ops ops;
        mig_asg_view v = { 0 };
        mig_cluster_ops(c, &ops);
        rc = ops.asg_describe(ops.arg, cfg->asg, &v, e2, sizeof(e2));
        if (rc == TLR_E_NOTFOUND)
            tlr_mig_checks_add(out, "asg", cfg->asg, TLR_MIG_FAIL,
                               "Auto Scaling Group %s does not exist", cfg->asg);
        else if (rc != TLR_OK) {
            snprintf(err, len, "%s", e2);
            goto out;
        } else
            tlr_mig_checks_add(out, "asg", cfg->asg, TLR_MIG_PASS,
                               "min %d, max %d, desired %d, %zu instances in service", v.min,
                               v.max, v.desired, v.ninstances);
        mig_asg_view_free(&v);
        rc = TLR_OK;
    } else if (no_asg > 0) {
        tlr_mig_checks_add(out, "asg", what, TLR_MIG_WARN, "%zu legacy node%s in no Auto Scaling "
                           "Group: drained and left cordoned, not terminated", no_asg,
                           no_asg == 1 ? " is" : "s are");
    }

    /* Before the solve below rebinds the legacy pods. */
    drain_checks(&o, &snap, cfg->restart_single, out);

    /* The AMIs the legacy nodes run. */
    if ((rc = legacy_amis(c, &snap, &inst, &imgs, err, len)) != TLR_OK)
        goto out;
    tlr_ami *limgs = tlr_calloc(imgs.n + 1, sizeof(*limgs));
    for (size_t i = 0; i < imgs.n; i++)
        limgs[i] = (tlr_ami){ .id = imgs.v[i].id, .name = imgs.v[i].name,
                              .arch = (char *)tlr_ami_k8s_arch(imgs.v[i].arch),
                              .variant = (char *)"", .source = (char *)"",
                              .creation_ms = imgs.v[i].creation_ms,
                              .deprecation_ms = imgs.v[i].deprecation_ms };
    legacy = tlr_calloc(snap.nnodes + 1, sizeof(*legacy));
    size_t nl = 0;
    for (size_t i = 0; i < snap.nnodes; i++) {
        if (!snap.nodes[i].selected)
            continue;
        const char *ami = "";
        for (size_t k = 0; k < inst.n; k++)
            if (strcmp(inst.v[k].id, snap.nodes[i].instance) == 0)
                ami = inst.v[k].image_id;
        const tlr_ami *img = NULL;
        for (size_t k = 0; k < imgs.n && ami[0]; k++)
            if (strcmp(limgs[k].id, ami) == 0)
                img = &limgs[k];
        legacy[nl++] = (tlr_mig_legacy_ami){ snap.nodes[i].name, ami, img };
    }

    /* Every NodePool's images. */
    if (o.npools == 0)
        tlr_mig_checks_add(out, "nodepools", "", TLR_MIG_FAIL, "the cluster has no NodePool: "
                           "tailor has nowhere to put the pods");
    if (cfg->k8s)
        snprintf(k8s, sizeof(k8s), "%s", cfg->k8s);
    else if (ctl_server_version(kc, k8s, sizeof(k8s)) != TLR_OK)
        fprintf(stderr, "tailorctl migrate: warning: the API server did not say its version; "
                "AMI aliases cannot be resolved (give --k8s-version)\n");
    tlr_ami_aws clients = { mig_cluster_ec2(c), mig_cluster_ssm(c) };
    tlr_ami_ops aops;
    tlr_ami_ops_aws(&clients, &aops);
    res = tlr_calloc(o.npools + 1, sizeof(*res));
    for (size_t i = 0; i < o.npools; i++) {
        const Tailor__V1__NodePool *p = o.pools[i];
        const char *cls = p->node_class_ref ? p->node_class_ref->name : NULL;
        const Tailor__V1__NodeClass *nc = NULL;
        for (size_t k = 0; cls && k < o.nclasses; k++)
            if (strcmp(o.classes[k]->name, cls) == 0)
                nc = o.classes[k];
        resolved *r = NULL;
        for (size_t k = 0; cls && k < nres && !r; k++)
            if (strcmp(res[k].name, cls) == 0)
                r = &res[k];
        if (r == NULL && nc != NULL) {
            r = &res[nres++];
            r->name = cls;
            r->ok = tlr_ami_resolve(nc->ami_selector_terms, nc->n_ami_selector_terms, k8s, &aops,
                                    &r->amis, r->err, sizeof(r->err)) == TLR_OK;
        }
        tlr_mig_pool_in in = { .pool = p, .nodeclass = cls, .class_found = nc != NULL,
                               .amis = r && r->ok ? &r->amis : NULL,
                               .resolve_error = r ? r->err : NULL, .legacy = legacy,
                               .nlegacy = nl, .now_ms = tlr_wall_ms() };
        tlr_mig_check_pool(&in, out);
    }

    /* Coverage: the dry-run solve. */
    rc = tlr_catalog_file_load(cfg->catalog, &(tlr_catalog_file_opts){ .region = cfg->region },
                               &cat, e2, sizeof(e2));
    if (rc != TLR_OK) {
        snprintf(err, len, "catalog %s: %s", cfg->catalog, e2[0] ? e2 : tlr_strerror(rc));
        rc = TLR_E_INVAL;
        free(limgs);
        goto out;
    }
    pending = tlr_calloc(o.npods + 1, sizeof(*pending));
    size_t npending = 0;
    for (size_t i = 0; i < o.npods; i++) {
        Tailor__V1__Pod *p = o.pods[i];
        if (legacy_node(&snap, p->node_name)) {
            if (p->is_daemonset || tlr_drain_pod_terminal(p) || tlr_drain_pod_mirror(p))
                continue;
            /* As it will be once evicted: pending, unschedulable. */
            free(p->node_name);
            p->node_name = tlr_strdup("");
            p->phase = TAILOR__V1__POD_PHASE__POD_PHASE_PENDING;
            p->unschedulable = true;
            p->ready = false;
            pending[npending++] = p;
            continue;
        }
        for (size_t k = 0; k < o.nnodes; k++)
            if (p->node_name[0] && strcmp(o.nodes[k]->name, p->node_name) == 0)
                tlr_kubeobj_node_add_pod(o.nodes[k], p);
    }
    if (npending == 0) {
        tlr_mig_checks_add(out, "coverage", "legacy pods", TLR_MIG_PASS,
                           "no pods to move");
    } else if (o.npools > 0) {
        char **classes = tlr_calloc(o.npools + o.nclasses + 1, sizeof(*classes));
        size_t ncl = 0;
        for (size_t i = 0; i < o.nclasses; i++)
            classes[ncl++] = o.classes[i]->name;
        Tailor__V1__CatalogRef ref = TAILOR__V1__CATALOG_REF__INIT;
        ref.hash = cat->hash;
        ref.catalog = cat;
        ref.node_classes = classes;
        ref.n_node_classes = ncl;
        Tailor__V1__CatalogRef *refs[1] = { &ref };
        Tailor__V1__ClusterState cluster = TAILOR__V1__CLUSTER_STATE__INIT;
        cluster.nodes = o.nodes;
        cluster.n_nodes = o.nnodes;
        cluster.nodeclaims = o.claims;
        cluster.n_nodeclaims = o.nclaims;
        cluster.nodepools = o.pools;
        cluster.n_nodepools = o.npools;
        cluster.node_classes = o.classes;
        cluster.n_node_classes = o.nclasses;
        cluster.pdbs = o.pdbs;
        cluster.n_pdbs = o.npdbs;
        cluster.daemonsets = o.ds;
        cluster.n_daemonsets = o.nds;
        cluster.synced = true;
        Tailor__V1__SolveOptions sopts = TAILOR__V1__SOLVE_OPTIONS__INIT;
        sopts.explain = true;
        sopts.timeout_ms = 60000;
        Tailor__V1__SolveRequest req = TAILOR__V1__SOLVE_REQUEST__INIT;
        req.batch_id = "tailorctl-migrate";
        req.pending_pods = pending;
        req.n_pending_pods = npending;
        req.cluster = &cluster;
        req.catalogs = refs;
        req.n_catalogs = 1;
        req.options = &sopts;
        req.now_unix_ms = tlr_wall_ms();
        rc = tlr_solve(&req, &(tlr_solve_opts){ .replica_id = "tailorctl", .no_lower_bound = true },
                       &resp);
        free(classes);
        if (rc != TLR_OK || resp == NULL || (resp->status && resp->status->code != TLR_OK)) {
            tlr_mig_checks_add(out, "coverage", "legacy pods", TLR_MIG_FAIL, "the dry-run solve "
                               "failed: %s", resp && resp->status && resp->status->message[0]
                               ? resp->status->message : tlr_strerror(rc));
        } else {
            tlr_mig_check_coverage(resp, npending, out);
        }
        rc = TLR_OK;
    }
    free(limgs);
out:
    tlr_solve_response_free(resp);
    free(pending);
    tlr_catalog_free(cat);
    for (size_t i = 0; i < nres; i++)
        tlr_amis_free(&res[i].amis);
    free(res);
    free(legacy);
    tlr_ec2_images_free(&imgs);
    tlr_ec2_instances_free(&inst);
    ctl_cluster_free(&o);
    mig_snap_free(&snap);
    return rc;
}
