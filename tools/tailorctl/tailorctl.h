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

#endif
