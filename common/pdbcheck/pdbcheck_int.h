/* pdbcheck_int.h - what the files of common/pdbcheck share. */
#ifndef PDBCHECK_INT_H
#define PDBCHECK_INT_H

#include "tailor/v1/cluster.pb-c.h"
#include "tlr_pdbcheck.h"

typedef struct pdbc_labels {
    Tailor__V1__Label **v;   /* owned, sorted by key */
    size_t n;
} pdbc_labels;

typedef struct pdbc_pdb {
    Tailor__V1__PodDisruptionBudget *p;   /* owned */
} pdbc_pdb;

typedef struct pdbc_workload {
    char *kind, *ns, *name;
    long long replicas;
    char *owner_kind, *owner_name;    /* controller owner, or NULL */
    pdbc_labels labels;                 /* pod template labels */
    bool hidden;                      /* an RS run by a listed Deployment */
    long long top;                    /* index of the top workload (run-time) */
} pdbc_workload;

typedef struct pdbc_group {
    char *kind, *ns, *name;           /* "Pod" and the pod, or the workload */
    pdbc_labels labels;
    long long count;
    char *owner_kind, *owner_name;    /* live pods: the controller owner */
    long long workload;               /* index, or -1 (run-time for live) */
} pdbc_group;

struct tlr_pdbc {
    tlr_pdbc_mode mode;
    pdbc_pdb *pdbs;
    size_t npdbs;
    pdbc_workload *wl;
    size_t nwl;
    pdbc_group *groups;
    size_t ngroups;
};

/* Run the rules with the PDB list replaced: pdbs[0..n) (borrowed). */
int pdbc_run(const tlr_pdbc *c, Tailor__V1__PodDisruptionBudget *const *pdbs, size_t n,
           tlr_pdbc_findings *out);

/* Would this PDB block every eviction whatever it selects (maxUnavailable
 * 0 or 0%, minAvailable 100%)?  why gets the field and value. */
bool pdbc_pdb_blocks_statically(const Tailor__V1__PodDisruptionBudget *p, char *why, size_t len);

#endif
