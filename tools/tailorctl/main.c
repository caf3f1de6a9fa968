/* main.c - tailorctl: dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "tailorctl.h"
#include "tlr_service.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand commands[] = {
    { "ping", cmd_ping, "check that tailor services answer, and which version they speak" },
    { "solve", cmd_solve, "plan nodes for pods offline: what they would cost, and why not" },
    { "explain", cmd_explain, "ask the disruptor why a node can or cannot be disrupted, and what it saves" },
    { "convert", cmd_convert, "convert node-group ConfigMaps to NodePools and EC2NodeClasses" },
    { "validate", cmd_validate, "check Karpenter NodePools, EC2NodeClasses, NodeClaims as tailor reads them" },
    { "pdb-check", cmd_pdb_check, "find PDBs that block draining (cluster or files); --serve: webhook" },
    { "patch-check", cmd_patch_check, "each node's AMI against its EC2NodeClass: drift, age, blockers" },
    { "migrate", cmd_migrate, "rotate ASG nodes onto tailor's: plan, run, status, rollback" },
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: tailorctl COMMAND [OPTIONS]\n\n"
                 "Operate tailor, the Kubernetes node autoscaler.\n\nCommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'tailorctl COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        tlr_version_print(stdout, "tailorctl");
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tailorctl: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
