/* tlr_patchcheck.h - is each node on the AMI it should run, and what
 * would stop its replacement: the decisions behind `tailorctl
 * patch-check`, pure (facts in, a row out), so they are tested without
 * a cluster or EC2.
 *
 * Per node:
 *   state   current    the instance's AMI is one its EC2NodeClass resolves
 *                      to now (and the NodePool hash, when known, agrees)
 *           drifted    it is not (Karpenter's AMI drift), or the NodePool
 *                      changed since the node was made
 *           unknown    the instance or the class's AMIs could not be read
 *           unmanaged  no NodePool (e.g. an ASG node) and no class to
 *                      compare it with
 *   expected_ami       the resolved AMI for the node's architecture and
 *                      variant (nvidia / neuron from its capacity)
 *   blockers           what would stop a drain now: the node's or a pod's
 *                      karpenter.sh/do-not-disrupt annotation, a PDB
 *                      allowing 0 disruptions, a pod under two PDBs
 * Compliance = current / (current + drifted + unknown), over the nodes
 * that have a class to compare with.
 */
#ifndef TLR_PATCHCHECK_H
#define TLR_PATCHCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/cluster.pb-c.h"
#include "tailor/v1/node.pb-c.h"
#include "tlr_ami.h"
#include "tlr_buf.h"

typedef enum tlr_pchk_state {
    TLR_PCHK_CURRENT = 0,
    TLR_PCHK_DRIFTED,
    TLR_PCHK_UNKNOWN,
    TLR_PCHK_UNMANAGED,
} tlr_pchk_state;

const char *tlr_pchk_state_name(tlr_pchk_state s);   /* "current", ... */

typedef struct tlr_pchk_in {
    const Tailor__V1__Node *node;            /* borrowed */
    const char *nodeclass;                   /* the class to compare with; NULL: none */
    bool legacy;                             /* unmanaged node compared with nodeclass */
    const char *instance_id;                 /* from spec.providerID; NULL unknown */
    const char *ami;                         /* the instance's ImageId; NULL unknown */
    const char *ami_error;                   /* why ami is NULL */
    const tlr_amis *resolved;                /* the class's AMIs now; NULL: unresolved */
    const char *resolve_error;               /* why resolved is NULL */
    const char *pool_hash;                   /* NodePool's karpenter.sh/nodepool-hash; may be NULL */
    const char *node_pool_hash;              /* the node's (NodeClaim's); may be NULL */
    Tailor__V1__Pod *const *pods;            /* pods bound to the node */
    size_t npods;
    Tailor__V1__PodDisruptionBudget *const *pdbs;   /* every PDB, with status */
    size_t npdbs;
    int64_t now_ms;
} tlr_pchk_in;

typedef struct tlr_pchk_row {
    char *node, *nodepool, *nodeclass, *instance_id, *ami, *expected_ami, *reason;
    tlr_pchk_state state;
    bool legacy;
    int64_t age_ms;                  /* since the node was created; -1 unknown */
    int64_t expected_created_ms;     /* the expected AMI's creation; 0 unknown */
    char **blockers;                 /* owned, one line each */
    size_t nblockers;
} tlr_pchk_row;

/* Decide one node.  *out is filled (owned: tlr_pchk_row_free()). */
void tlr_pchk_decide(const tlr_pchk_in *in, tlr_pchk_row *out);
void tlr_pchk_row_free(tlr_pchk_row *r);   /* contents; NULL fine */

typedef struct tlr_pchk_summary {
    size_t nodes, current, drifted, unknown, unmanaged;
    size_t blocked;              /* nodes with at least one blocker */
    size_t drifted_blocked;      /* drifted and blocked: cannot be replaced now */
    double compliance;           /* percent, 100 when nothing to compare */
} tlr_pchk_summary;

void tlr_pchk_summarize(const tlr_pchk_row *rows, size_t n, tlr_pchk_summary *out);

/* A table and a summary line, or one JSON object {"summary":{...},
 * "min_compliance":T,"compliant":bool,"nodes":[{...}]}. */
int tlr_pchk_text(const tlr_pchk_row *rows, size_t n, const tlr_pchk_summary *s,
                  double min_compliance, tlr_buf *out);
int tlr_pchk_json(const tlr_pchk_row *rows, size_t n, const tlr_pchk_summary *s,
                  double min_compliance, tlr_buf *out);

#endif
