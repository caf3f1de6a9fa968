/* pdbserve.h - tailorctl pdb-check --serve: the PDB rules as a validating
 * admission webhook (AdmissionReview v1, POST /validate, over TLS). */
#ifndef PDBSERVE_H
#define PDBSERVE_H

#include <stdbool.h>

#include "tlr_kube.h"
#include "tlr_pdbcheck.h"

typedef struct pdbserve_opts {
    const char *listen;       /* "0.0.0.0:8443" */
    const char *cert, *key;   /* PEM files */
    const char *kubeconfig;   /* NULL: $KUBECONFIG / ~/.kube/config */
    const char *context;
    bool in_cluster;
} pdbserve_opts;

/* Serve until SIGINT or SIGTERM.  Returns the exit code: 0 after a clean
 * stop, 1 when the server could not start, 2 for TLS files that cannot be used (unreadable, not PEM, or
 * a key that does not belong to the certificate). */
int pdbserve_run(const pdbserve_opts *o);

/* pdbcheck.c: connect as the options say (timeout_ms per request; 0: the
 * client's default); list one namespace's (ns NULL: every namespace's)
 * PDBs, pods and workloads into c.  pdbc_load_bounded stops with
 * TLR_E_TOOBIG after max_objects objects of all kinds (0: no cap) and with
 * TLR_E_TIMEOUT after budget_ms (0: none); err says which. */
int pdbc_connect(const char *kubeconfig, const char *context, bool in_cluster, int timeout_ms,
                 tlr_kube **out, char *err, size_t errlen);
int pdbc_load_live(tlr_kube *kc, const char *ns, tlr_pdbc *c, char *err, size_t errlen);
int pdbc_load_bounded(tlr_kube *kc, const char *ns, size_t max_objects, int budget_ms,
                      tlr_pdbc *c, char *err, size_t errlen);

#endif
