/* tailorctl.h - what the subcommands share: the signature main.c
 * dispatches to.  Each subcommand parses its own flags (tlr_conf) and
 * returns the process exit code: 0 success, 1 the operation failed,
 * 2 bad usage. */
#ifndef TAILORCTL_H
#define TAILORCTL_H

int cmd_ping(int argc, char **argv);
/* solve.c: exit 0 every pod placed, 3 some unschedulable, 2 bad usage or
 * input, 1 other failure. */
int cmd_solve(int argc, char **argv);
/* explain.c: exit 0 disruptable, 3 blocked, 2 bad usage, 1 no answer. */
int cmd_explain(int argc, char **argv);
/* convert.c: exit 0 converted, 3 fields not carried over (--strict), 2 bad
 * usage or input, 1 output not written. */
int cmd_convert(int argc, char **argv);
/* pdbcheck.c: exit 0 no finding at --fail-on, 3 findings, 2 bad usage or
 * input, 1 the cluster could not be read (or the server failed). */
int cmd_pdb_check(int argc, char **argv);
int cmd_validate(int argc, char **argv);
/* patchcheck.c: exit 0 compliant, 3 below --min-compliance, 2 bad usage,
 * 1 the cluster or EC2 could not be read. */
int cmd_patch_check(int argc, char **argv);
/* migrate.c: plan|run|status|rollback; exit codes TLR_MIG_EXIT_MAP
 * (common/migrate/tlr_migrate.h). */
int cmd_migrate(int argc, char **argv);

/* transport.c: the TLS settings of the commands that dial services (ping,
 * explain).  Identity: the certificate's CN, tailorctl. */
#include <stdbool.h>
#include "tlr_service.h"
typedef struct ctl_transport {
    char *ca, *cert, *key;
    bool insecure;
} ctl_transport;
#define CTL_TRANSPORT_SETTINGS(type, field)                                    \
    TLR_SETTING_TLS_CA(type, field.ca), TLR_SETTING_TLS_CERT(type, field.cert), \
    TLR_SETTING_TLS_KEY(type, field.key),                                      \
    TLR_SETTING_INSECURE_TRANSPORT(type, field.insecure)
/* Check urls against t (plaintext tcp:// only with --insecure-transport,
 * which warns on stderr; tls+tcp:// needs the files) and load the
 * certificate.  On 0 *out is new and owned (NULL when no URL needs TLS):
 * tlr_tls_free().  Otherwise the exit code (2) after a message on stderr
 * naming cmd. */
int ctl_transport_open(const char *cmd, const ctl_transport *t, const char *const *urls,
                       size_t n, tlr_tls **out);

#endif
