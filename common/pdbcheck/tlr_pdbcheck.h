/* tlr_pdbcheck.h - PodDisruptionBudget rules that decide whether nodes can
 * be drained: the checks `tailorctl pdb-check`, its admission webhook and
 * the Gatekeeper policies in deploy/policies/ enforce.
 *
 * Rules (docs/tailorctl.md explains each with the fix):
 *   blocks-eviction      error    maxUnavailable resolves to 0 (0, "0%",
 *                                 or a percentage of few pods rounded
 *                                 down to 0 - Kubernetes rounds up, so
 *                                 only 0 and 0% do), or minAvailable
 *                                 resolves to >= the pods it selects
 *                                 (percentages rounded up, as the
 *                                 disruption controller does)
 *   multiple-pdbs        error    a pod selected by more than one PDB:
 *                                 the Eviction API refuses to evict it
 *   selects-no-pods      warning  a PDB whose selector matches no pod
 *                                 (a typo, or a workload gone)
 *   single-replica-unprotected
 *                        warning  a Deployment, StatefulSet, ReplicaSet
 *                                 or ReplicationController with one
 *                                 replica and no PDB: a drain takes it
 *                                 down
 *
 * What the rules look at: PDBs, and pod groups - each live Pod, or, for
 * manifests, each workload's template with its replica count.  "The pods
 * a PDB selects" counts replicas of the workloads whose pods it matches
 * (the disruption controller's expected count), plus matched bare pods.
 * Objects are added as JSON (borrowed); the check itself is pure.
 */
#ifndef TLR_PDBCHECK_H
#define TLR_PDBCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "tlr_buf.h"

typedef enum tlr_pdbc_rule {
    TLR_PDBC_BLOCKS_EVICTION = 1,
    TLR_PDBC_MULTIPLE_PDBS,
    TLR_PDBC_SELECTS_NO_PODS,
    TLR_PDBC_SINGLE_REPLICA,
} tlr_pdbc_rule;

/* "blocks-eviction", "multiple-pdbs", "selects-no-pods",
 * "single-replica-unprotected". */
const char *tlr_pdbc_rule_name(tlr_pdbc_rule r);
/* Errors block node replacement; warnings are risks. */
bool tlr_pdbc_rule_is_error(tlr_pdbc_rule r);

typedef struct tlr_pdbc_finding {
    tlr_pdbc_rule rule;
    char *kind;          /* "PodDisruptionBudget", "Deployment", "Pod", ... */
    char *ns, *name;
    char *message;       /* one line: what is wrong and the fix */
    char **pdbs;         /* the PDB names involved (sorted) */
    size_t npdbs;
    long long pods;      /* pods concerned (selected, or covered twice) */
} tlr_pdbc_finding;

typedef struct tlr_pdbc_findings {
    tlr_pdbc_finding *v;   /* owned; sorted by rule, namespace, kind, name */
    size_t n;
} tlr_pdbc_findings;

void tlr_pdbc_findings_free(tlr_pdbc_findings *f);   /* contents; NULL fine */

typedef enum tlr_pdbc_mode {
    TLR_PDBC_LIVE = 0,     /* Pods are the pod groups; workloads give replicas */
    TLR_PDBC_MANIFESTS,    /* workloads' templates are the pod groups */
} tlr_pdbc_mode;

typedef struct tlr_pdbc tlr_pdbc;

/* On TLR_OK *out is new and owned: tlr_pdbc_free(). */
int  tlr_pdbc_create(tlr_pdbc_mode mode, tlr_pdbc **out);
void tlr_pdbc_free(tlr_pdbc *c);   /* NULL is fine */

/* Add a PodDisruptionBudget, Pod, Deployment, StatefulSet, ReplicaSet or
 * ReplicationController (borrowed; copied as needed).  kind: the object's
 * kind when it carries none (items of a typed list do not), else NULL.
 * Objects without a namespace get "default".  TLR_E_NOTFOUND: a kind the rules do not use
 * (nothing added); TLR_E_PARSE/INVAL: a malformed object (err names it).
 * Finished pods (Succeeded, Failed) and pods being deleted are ignored. */
int  tlr_pdbc_add(tlr_pdbc *c, const char *kind, json_object *obj, char *err, size_t errlen);

/* Run every rule.  On TLR_OK *out holds the findings (owned). */
int  tlr_pdbc_run(const tlr_pdbc *c, tlr_pdbc_findings *out);

/* Counts of what was added (for the summary line). */
size_t tlr_pdbc_count_pdbs(const tlr_pdbc *c);
size_t tlr_pdbc_count_pods(const tlr_pdbc *c);        /* pods (or replicas) */
size_t tlr_pdbc_count_workloads(const tlr_pdbc *c);

/* ---- output ------------------------------------------------------------ */

/* A table (RULE SEVERITY NAMESPACE OBJECT MESSAGE) or one JSON object
 * {"pdbs":N,"pods":N,"workloads":N,"errors":N,"warnings":N,"findings":[
 * {"rule","severity","kind","namespace","name","pdbs":[],"pods","message"}]}. */
int tlr_pdbc_findings_text(const tlr_pdbc *c, const tlr_pdbc_findings *f, tlr_buf *out);
int tlr_pdbc_findings_json(const tlr_pdbc *c, const tlr_pdbc_findings *f, tlr_buf *out);

/* ---- admission ------------------------------------------------------------ */

/* Decide an AdmissionReview v1 request (review: borrowed, the request
 * body).  PDB CREATE and UPDATE are checked: the new PDB is refused when
 * it blocks every eviction or covers pods another PDB covers; it is let
 * through with a warning when it selects no pod.  cluster (borrowed, may
 * be NULL) holds the namespace's live pods, workloads and other PDBs
 * (a PDB of the same name is replaced by the new one); without it only
 * the rules that need no cluster apply (maxUnavailable 0 or 0%,
 * minAvailable 100%).  Other kinds and operations are allowed.  On TLR_OK
 * *response is a new AdmissionReview JSON text (free()) with the request's
 * uid.  A namespace or name that is not a DNS-1123 label / subdomain is
 * refused with code 400, reason Invalid (see tlr_pdbc_review_names).
 * TLR_E_PARSE: review is not an AdmissionReview v1 request (err says why;
 * answer HTTP 400).  A plain function from a parsed body to an answer, so
 * a fuzz target can call it. */
int tlr_pdbc_admit(json_object *review, const tlr_pdbc *cluster, char **response,
                   char *err, size_t errlen);

/* The namespace and name of the PDB an AdmissionReview carries (borrowed
 * from review), so a server can load that namespace first; NULL when it
 * carries none. */
const char *tlr_pdbc_review_namespace(json_object *review);

/* Are the namespaces (request.namespace, object's and oldObject's
 * metadata.namespace: DNS-1123 labels) and names (request.name, the
 * objects' metadata.name: DNS-1123 subdomains) of review (borrowed) what
 * the API server accepts?  Empty or absent ones pass.  false: why (may be
 * NULL) names the field and the rule.  A server checks this before it
 * builds any API path from a review. */
bool tlr_pdbc_review_names(json_object *review, char *why, size_t whylen);

#endif
