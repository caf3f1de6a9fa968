/* migrate.c - tailorctl migrate plan|run|status|rollback: flags and
 * dispatch.
 *
 *   plan      the preflight checks, nothing changed (exit 3 on a failure)
 *   run       the checks, then rotate the legacy nodes onto tailor's, a
 *             batch at a time, resuming from the checkpoint
 *   status    the checkpoint, as a table or JSON
 *   rollback  uncordon and restore the ASGs' sizes
 *
 * One cluster (--selector or --asg) or a plan file of clusters in waves
 * (--plan-file).  Exit codes are common/migrate's TLR_MIG_EXIT_MAP,
 * documented in docs/tailorctl.md.  Progress goes to stderr, results to
 * stdout, so `-o json` output can be piped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migctl.h"
#include "tailorctl.h"
#include "tlr_alloc.h"
#include "tlr_conf.h"
#include "tlr_err.h"

extern char **environ;

static const char *const outputs[] = { "text", "json", NULL };
static const char *const cordons[] = { "all", "batch", NULL };

static const tlr_setting settings[] = {
    { .name = "kubeconfig", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, kubeconfig),
      .help = "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config)" },
    { .name = "context", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, context),
      .help = "kubeconfig context (default: the current one)" },
    { .name = "in-cluster", .type = TLR_SET_BOOL, .offset = offsetof(mig_cfg, in_cluster),
      .help = "use the pod's service account instead of a kubeconfig" },
    { .name = "selector", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, selector),
      .help = "legacy nodes by label selector, e.g. eks.amazonaws.com/nodegroup=ng-1" },
    { .name = "asg", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, asg),
      .help = "legacy nodes by Auto Scaling Group: its instances' nodes (providerID)" },
    { .name = "name", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, name),
      .help = "migration name: checkpoint ConfigMap tailor-migrate-NAME (default: the ASG, "
              "or the selector's value)" },
    { .name = "namespace", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, ns),
      .def = MIG_NAMESPACE_DEFAULT, .help = "namespace of the checkpoint ConfigMap" },
    { .name = "catalog", .env = "TAILOR_CATALOG", .type = TLR_SET_STR,
      .offset = offsetof(mig_cfg, catalog),
      .help = "instance catalog JSON (aws-instance-types.json format) for the dry-run solve; "
              "required by plan and run" },
    { .name = "region", .env = "AWS_REGION", .type = TLR_SET_STR,
      .offset = offsetof(mig_cfg, region), .help = "AWS region (default us-east-1)" },
    { .name = "aws-endpoint", .env = "AWS_ENDPOINT_URL", .type = TLR_SET_STR,
      .offset = offsetof(mig_cfg, endpoint),
      .help = "EC2, Auto Scaling and SSM endpoint override (moto: http://127.0.0.1:PORT)" },
    { .name = "k8s-version", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, k8s),
      .help = "Kubernetes version for AMI aliases, e.g. 1.31 (default: the API server's)" },
    { .name = "batch", .type = TLR_SET_INT, .offset = offsetof(mig_cfg, batch), .def = "1",
      .min = 1, .max = 100, .help = "legacy nodes rotated together" },
    { .name = "max-nodes", .type = TLR_SET_INT, .offset = offsetof(mig_cfg, max_nodes),
      .def = "0", .min = 0, .max = 1000000,
      .help = "start at most this many nodes in this run, then pause (exit 7); 0 = all" },
    { .name = "max-pending", .type = TLR_SET_INT, .offset = offsetof(mig_cfg, max_pending),
      .def = "0", .min = 0, .max = 1000000,
      .help = "health gate: pending pods allowed after a batch" },
    { .name = "restart-threshold", .type = TLR_SET_INT,
      .offset = offsetof(mig_cfg, restart_threshold), .def = "1", .min = 1, .max = 1000000,
      .help = "health gate: container restarts since the batch began that make a pod unhealthy" },
    { .name = "cordon", .type = TLR_SET_ENUM, .offset = offsetof(mig_cfg, cordon), .def = "all",
      .choices = cordons,
      .help = "all: cordon every legacy node first, so displaced pods land on tailor's nodes; "
              "batch: only the batch's" },
    { .name = "restart-single-replica", .type = TLR_SET_BOOL,
      .offset = offsetof(mig_cfg, restart_single), .def = "true",
      .help = "rolling-restart a Deployment with one Ready pod instead of evicting it "
              "(--no-restart-single-replica: evict)" },
    { .name = "drain-timeout", .type = TLR_SET_DURATION,
      .offset = offsetof(mig_cfg, drain_timeout_ms), .def = "10m", .min = 1, .max = 86400000,
      .help = "per batch: evicting its pods" },
    { .name = "ready-timeout", .type = TLR_SET_DURATION,
      .offset = offsetof(mig_cfg, ready_timeout_ms), .def = "10m", .min = 1, .max = 86400000,
      .help = "per batch: the displaced pods Ready on tailor's nodes" },
    { .name = "health-timeout", .type = TLR_SET_DURATION,
      .offset = offsetof(mig_cfg, health_timeout_ms), .def = "2m", .min = 1, .max = 86400000,
      .help = "per batch: the health gate turning green" },
    { .name = "remove-timeout", .type = TLR_SET_DURATION,
      .offset = offsetof(mig_cfg, remove_timeout_ms), .def = "5m", .min = 1, .max = 86400000,
      .help = "per batch: terminated nodes leaving the cluster" },
    { .name = "poll", .type = TLR_SET_DURATION, .offset = offsetof(mig_cfg, poll_ms),
      .def = "2s", .min = 10, .max = 600000, .help = "how often a waiting step looks again" },
    { .name = "lock-timeout", .type = TLR_SET_DURATION, .offset = offsetof(mig_cfg, lock_ttl_ms),
      .def = "2m", .min = 1000, .max = 86400000,
      .help = "take over a checkpoint whose holder has not written for this long (a dead "
              "holder on this host is taken over at once)" },
    { .name = "plan-file", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, plan_file),
      .help = "clusters in waves (docs/migration.md) instead of one cluster" },
    { .name = "wave", .type = TLR_SET_STR, .offset = offsetof(mig_cfg, wave),
      .help = "--plan-file: only this wave (its gate still applies to run)" },
    { .name = "approve-wave", .type = TLR_SET_LIST, .offset = offsetof(mig_cfg, approve),
      .help = "--plan-file: open these waves' approval gates (comma-separated)" },
    { .name = "wait-gates", .type = TLR_SET_BOOL, .offset = offsetof(mig_cfg, wait_gates),
      .def = "true", .help = "--plan-file: sleep through a soak gate (--no-wait-gates: exit 5)" },
    { .name = "gate-timeout", .type = TLR_SET_DURATION,
      .offset = offsetof(mig_cfg, gate_timeout_ms), .def = "2h", .min = 0, .max = 604800000,
      .help = "--plan-file: longest soak to sleep through; longer ones exit 5" },
    { .name = "output", .type = TLR_SET_ENUM, .offset = offsetof(mig_cfg, output), .def = "text",
      .choices = outputs, .help = "text (tables) or json (-o)" },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

static const struct {
    const char *name, *summary;
} subs[] = {
    { "plan", "check what the new nodes boot and that tailor's NodePools hold the legacy "
              "nodes' pods; nothing changes (exit 3 when a check fails)" },
    { "run", "the checks, then rotate the legacy nodes onto tailor's a batch at a time: cordon, "
             "drain (PDBs), wait for the pods on tailor's nodes, health gate, shrink the ASG; "
             "resumes from the checkpoint" },
    { "status", "the checkpoint: every legacy node's progress (table or -o json)" },
    { "rollback", "uncordon the legacy nodes and restore the ASGs' min/max/desired" },
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: tailorctl migrate plan|run|status|rollback [--selector S | --asg NAME | "
                 "--plan-file F] [OPTIONS]\n\nMove a cluster from Auto Scaling Group nodes to "
                 "tailor's, without downtime.\n\nSubcommands:\n");
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        fprintf(out, "  %-9s %s\n", subs[i].name, subs[i].summary);
    fprintf(out, "\nExit status:\n");
    for (int c = 0; c <= 7; c++)
        fprintf(out, "  %d  %s\n", c, tlr_mig_exit_text(c));
    fprintf(out, "\nRun 'tailorctl migrate SUBCOMMAND --help' for the options.\n");
}

int cmd_migrate(int argc, char **argv)
{
    mig_cfg cfg = { 0 };
    tlr_conf_result res;
    int code = TLR_MIG_EXIT_USAGE;

    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? TLR_MIG_EXIT_USAGE : TLR_MIG_EXIT_OK;
    }
    const char *sub = argv[1];
    size_t k;
    for (k = 0; k < sizeof(subs) / sizeof(subs[0]); k++)
        if (!strcmp(sub, subs[k].name))
            break;
    if (k == sizeof(subs) / sizeof(subs[0])) {
        fprintf(stderr, "tailorctl migrate: unknown subcommand '%s'\n", sub);
        usage(stderr);
        return TLR_MIG_EXIT_USAGE;
    }
    /* argv[1] (the subcommand) stands where tlr_conf expects the program. */
    int n = argc - 1;
    char **args = tlr_calloc((size_t)n + 1, sizeof(*args));
    for (int i = 0; i < n; i++)
        args[i] = !strcmp(argv[i + 1], "-o") ? "--output" : argv[i + 1];
    int rc = tlr_conf_load(settings, NSETTINGS, &cfg, n, args, (const char *const *)environ,
                           &res);
    char prog[64];
    snprintf(prog, sizeof(prog), "tailorctl migrate %s", sub);
    if (rc || res.help || res.argc > 0) {
        if (rc)
            fprintf(stderr, "%s: %s\n", prog, res.err);
        else if (!res.help)
            fprintf(stderr, "%s: unexpected argument %s\n", prog, res.argv[0]);
        tlr_conf_help(prog, subs[k].summary, settings, NSETTINGS,
                      res.help && !rc ? stdout : stderr);
        code = res.help && !rc ? TLR_MIG_EXIT_OK : TLR_MIG_EXIT_USAGE;
        goto out;
    }
    int ways = (cfg.plan_file != NULL) + (cfg.selector != NULL) + (cfg.asg != NULL);
    if (ways != 1) {
        fprintf(stderr, "%s: give exactly one of --selector, --asg and --plan-file\n", prog);
        goto out;
    }
    if (cfg.plan_file == NULL && (cfg.wave || cfg.approve.n > 0)) {
        fprintf(stderr, "%s: --wave and --approve-wave go with --plan-file\n", prog);
        goto out;
    }
    if (cfg.plan_file == NULL && (!strcmp(sub, "plan") || !strcmp(sub, "run")) &&
        cfg.catalog == NULL) {
        fprintf(stderr, "%s: --catalog (or TAILOR_CATALOG) is required: the dry-run solve needs "
                "the instance types (the format of aws-instance-types.json)\n", prog);
        goto out;
    }
    if (cfg.plan_file)
        code = mig_waves(&cfg, sub);
    else if (!strcmp(sub, "plan"))
        code = mig_cmd_plan(&cfg, NULL);
    else if (!strcmp(sub, "run"))
        code = mig_cmd_run(&cfg, NULL);
    else if (!strcmp(sub, "status"))
        code = mig_cmd_status(&cfg, NULL);
    else
        code = mig_cmd_rollback(&cfg, NULL);
out:
    tlr_conf_free(settings, NSETTINGS, &cfg);
    free(args);
    return code;
}
