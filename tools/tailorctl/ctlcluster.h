/* ctlcluster.h - reading a live cluster into tailor.v1 protos, shared by
 * patch-check and migrate's preflight: list each kind asked for, convert
 * every object (kubeobj), and skip - with a warning on stderr naming the
 * object - what does not convert.  The Karpenter kinds and DaemonSets are
 * optional (their CRDs or the API may be absent: nothing listed);
 * Nodes, Pods and PDBs are not. */
#ifndef CTLCLUSTER_H
#define CTLCLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "tailor/v1/cluster.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"
#include "tlr_kube.h"

typedef struct ctl_cluster {   /* every array owned: ctl_cluster_free */
    Tailor__V1__NodePool **pools;
    size_t npools;
    Tailor__V1__NodeClass **classes;
    size_t nclasses;
    Tailor__V1__Node **nodes;
    size_t nnodes;
    Tailor__V1__Pod **pods;
    size_t npods;
    Tailor__V1__DaemonSet **ds;
    size_t nds;
    Tailor__V1__PodDisruptionBudget **pdbs;
    size_t npdbs;
    Tailor__V1__NodeClaim **claims;
    size_t nclaims;
} ctl_cluster;

enum {
    CTL_NODEPOOLS = 1 << 0,
    CTL_NODECLASSES = 1 << 1,
    CTL_NODES = 1 << 2,
    CTL_PODS = 1 << 3,
    CTL_DAEMONSETS = 1 << 4,
    CTL_PDBS = 1 << 5,
    CTL_NODECLAIMS = 1 << 6,
};

typedef struct ctl_cluster_opts {
    const char *cmd;             /* "patch-check": names the warnings */
    unsigned kinds;              /* CTL_* to list, in the order above */
    const char *node_selector;   /* label selector for Nodes; NULL: every Node */
    bool compact_pods;           /* pods without what placement does not read */
    struct ctl_progress *progress;   /* borrowed; NULL: none (one step per list) */
} ctl_cluster_opts;

/* List and convert into *out (zeroed by the caller).  On an error err
 * says which list failed and why; what was read so far stays in *out. */
int ctl_cluster_load(tlr_kube *kc, const ctl_cluster_opts *o, ctl_cluster *out, char *err,
                     size_t errlen);
void ctl_cluster_free(ctl_cluster *c);

/* The API server's "major.minor" ("v1.31.2-eks-..." -> "1.31") into out;
 * TLR_E_NOTFOUND when /version does not say. */
int ctl_server_version(tlr_kube *kc, char *out, size_t len);

#endif
