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

#endif
