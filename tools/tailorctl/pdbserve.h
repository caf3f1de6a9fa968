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
 * stop, 1 when the server could not start, 2 for unreadable TLS files. */
int pdbserve_run(const pdbserve_opts *o);

/* pdbcheck.c: connect as the options say; list one namespace's (ns NULL:
 * every namespace's) PDBs, pods and workloads into c. */
int pdbc_connect(const char *kubeconfig, const char *context, bool in_cluster, tlr_kube **out,
                 char *err, size_t errlen);
int pdbc_load_live(tlr_kube *kc, const char *ns, tlr_pdbc *c, char *err, size_t errlen);

#endif
