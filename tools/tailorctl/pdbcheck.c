/* pdbcheck.c - tailorctl pdb-check: the PDBs that will block draining.
 *
 *   tailorctl pdb-check [--kubeconfig FILE] [--namespace NS]   a live cluster
 *   tailorctl pdb-check PATH...                                manifest files
 *   tailorctl pdb-check --serve --tls-cert C --tls-key K        admission webhook
 *
 * The rules are common/pdbcheck's (tlr_pdbcheck.h); this file gathers the
 * objects (API lists or files), prints the findings as a table or JSON,
 * and maps them to an exit code for CI:
 *   0  no finding at or above --fail-on (default warning)
 *   3  findings at or above --fail-on
 *   2  bad usage or bad input (a file that does not parse, a malformed PDB)
 *   1  the cluster could not be read (or, with --serve, the server failed)
 * The webhook side is pdbserve.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctlfiles.h"
#include "pdbserve.h"
#include "tailorctl.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_conf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"
#include "tlr_pdbcheck.h"
#include "tlr_time.h"

extern char **environ;

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_FOUND = 3 };

typedef struct pdbc_cfg {
    char *kubeconfig, *context, *ns, *listen, *cert, *key;
    int output;      /* 0 text, 1 json */
    int fail_on;     /* 0 warning, 1 error, 2 never */
    bool serve, in_cluster;
} pdbc_cfg;

static const char *const outputs[] = { "text", "json", NULL };
static const char *const fail_ons[] = { "warning", "error", "never", NULL };

static const tlr_setting settings[] = {
    { .name = "kubeconfig", .type = TLR_SET_STR, .offset = offsetof(pdbc_cfg, kubeconfig),
      .help = "kubeconfig of the cluster to check (default: $KUBECONFIG, ~/.kube/config)" },
    { .name = "context", .type = TLR_SET_STR, .offset = offsetof(pdbc_cfg, context),
      .help = "kubeconfig context (default: the current one)" },
    { .name = "in-cluster", .type = TLR_SET_BOOL, .offset = offsetof(pdbc_cfg, in_cluster),
      .help = "use the pod's service account instead of a kubeconfig" },
    { .name = "namespace", .type = TLR_SET_STR, .offset = offsetof(pdbc_cfg, ns),
      .help = "check one namespace (-n); default: all namespaces" },
    { .name = "output", .type = TLR_SET_ENUM, .offset = offsetof(pdbc_cfg, output),
      .def = "text", .help = "text (a table) or json (-o)", .choices = outputs },
    { .name = "fail-on", .type = TLR_SET_ENUM, .offset = offsetof(pdbc_cfg, fail_on),
      .def = "warning", .help = "exit 3 on findings of this severity or worse: warning, error "
                                "or never", .choices = fail_ons },
    { .name = "serve", .type = TLR_SET_BOOL, .offset = offsetof(pdbc_cfg, serve),
      .help = "serve the rules as a validating admission webhook (POST /validate) over TLS" },
    { .name = "listen", .type = TLR_SET_STR, .offset = offsetof(pdbc_cfg, listen),
      .def = "0.0.0.0:8443", .help = "--serve: address to listen on" },
    { .name = "tls-cert", .env = "TAILOR_WEBHOOK_TLS_CERT", .type = TLR_SET_STR,
      .offset = offsetof(pdbc_cfg, cert), .help = "--serve: PEM certificate (chain) file" },
    { .name = "tls-key", .env = "TAILOR_WEBHOOK_TLS_KEY", .type = TLR_SET_STR,
      .offset = offsetof(pdbc_cfg, key), .help = "--serve: PEM private key file" },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

/* ---- live ------------------------------------------------------------------ */

typedef struct list_ctx {
    tlr_pdbc *c;
    const char *kind;
    size_t *seen, max;         /* objects so far, all kinds; max 0: no cap */
    int64_t deadline_ms;       /* monotonic; 0: none */
    int rc;
    char err[512];
} list_ctx;

static int on_item(void *arg, json_object *item)
{
    list_ctx *l = arg;
    if (l->max && ++*l->seen > l->max)
        return l->rc = TLR_E_TOOBIG;   /* stops the list: the namespace is too big to judge */
    if (l->deadline_ms && tlr_mono_ms() > l->deadline_ms)
        return l->rc = TLR_E_TIMEOUT;
    int rc = tlr_pdbc_add(l->c, l->kind, item, l->err, sizeof(l->err));
    if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
        /* A malformed object in the cluster is reported, not fatal. */
        fprintf(stderr, "tailorctl pdb-check: warning: %s\n", l->err);
    }
    return TLR_OK;
}

int pdbc_load_live(tlr_kube *kc, const char *ns, tlr_pdbc *c, char *err, size_t errlen)
{
    return pdbc_load_bounded(kc, ns, 0, 0, c, err, errlen);
}

int pdbc_load_bounded(tlr_kube *kc, const char *ns, size_t max_objects, int budget_ms,
                      tlr_pdbc *c, char *err, size_t errlen)
{
    size_t seen = 0;
    int64_t deadline = budget_ms > 0 ? tlr_mono_ms() + budget_ms : 0;
    static const struct { tlr_kube_res res; const char *kind; bool optional; } kinds[] = {
        { TLR_KUBE_RES_PDBS, "PodDisruptionBudget", false },
        { TLR_KUBE_RES_PODS, "Pod", false },
        { TLR_KUBE_RES_DEPLOYMENTS, "Deployment", false },
        { { "apps", "v1", "statefulsets", true }, "StatefulSet", true },
        { { "apps", "v1", "replicasets", true }, "ReplicaSet", true },
        { { "", "v1", "replicationcontrollers", true }, "ReplicationController", true },
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        list_ctx l = { c, kinds[i].kind, &seen, max_objects, deadline, TLR_OK, "" };
        tlr_kube_status st = { 0 };
        if (deadline && tlr_mono_ms() > deadline) {
            snprintf(err, errlen, "listing %s: over the %d ms budget", kinds[i].res.plural,
                     budget_ms);
            return TLR_E_TIMEOUT;
        }
        int rc = tlr_kube_list(kc, &kinds[i].res, ns, NULL, on_item, &l, NULL, &st);
        if (l.rc != TLR_OK) {
            if (l.rc == TLR_E_TOOBIG)
                snprintf(err, errlen, "more than %zu objects in the namespace", max_objects);
            else
                snprintf(err, errlen, "listing %s: over the %d ms budget", kinds[i].res.plural,
                         budget_ms);
            return l.rc;
        }
        if (rc == TLR_E_NOTFOUND && kinds[i].optional)
            continue;   /* a server that does not serve the kind has none */
        if (rc != TLR_OK) {
            snprintf(err, errlen, "listing %s: %s%s%s", kinds[i].res.plural, tlr_strerror(rc),
                     st.message[0] ? ": " : "", st.message);
            return rc;
        }
    }
    return TLR_OK;
}

int pdbc_connect(const char *kubeconfig, const char *context, bool in_cluster, int timeout_ms,
                 tlr_kube **out, char *err, size_t errlen)
{
    tlr_kube_config *cfg = NULL;
    int rc = in_cluster ? tlr_kube_config_incluster(NULL, &cfg, err, errlen)
                        : tlr_kube_config_load(kubeconfig, context, &cfg, err, errlen);
    if (rc != TLR_OK)
        return rc;
    return tlr_kube_create(cfg, &(tlr_kube_opts){ .timeout_ms = timeout_ms }, out);
}

/* -o, -n and -A as kubectl spells them, for tlr_conf's long flags. */
static char **expand_short(int argc, char **argv)
{
    char **v = tlr_calloc((size_t)argc * 2 + 1, sizeof(*v));
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o"))
            v[n++] = "--output";
        else if (!strcmp(argv[i], "-n"))
            v[n++] = "--namespace";
        else if (!strcmp(argv[i], "-A") || !strcmp(argv[i], "--all-namespaces"))
            continue;   /* the default */
        else
            v[n++] = argv[i];
    }
    v[n] = NULL;
    return v;
}

int cmd_pdb_check(int argc, char **argv)
{
    pdbc_cfg cfg = { 0 };
    tlr_conf_result res;
    tlr_pdbc *c = NULL;
    tlr_kube *kc = NULL;
    ctl_files files = { 0 };
    tlr_pdbc_findings f = { 0 };
    int exit_code = EXIT_USAGE, rc, nargs = 0;
    char err[512];
    char **args = expand_short(argc, argv);
    for (nargs = 0; args[nargs]; nargs++)
        ;

    rc = tlr_conf_load(settings, NSETTINGS, &cfg, nargs, args, (const char *const *)environ,
                       &res);
    if (rc || res.help) {
        if (rc)
            fprintf(stderr, "tailorctl pdb-check: %s\n", res.err);
        tlr_conf_help("tailorctl pdb-check",
                      "[PATH...]: find the PodDisruptionBudgets that will block draining nodes: PDBs that "
                      "allow no eviction, select no pods or overlap, and single-replica "
                      "workloads without one. Checks the cluster, or the manifest files given. "
                      "-o json for CI. Exit 0 clean, 3 findings (see --fail-on), 2 bad usage "
                      "or input, 1 cluster unreadable. --serve runs the same rules as a "
                      "validating admission webhook (docs/tailorctl.md).",
                      settings, NSETTINGS, res.help && !rc ? stdout : stderr);
        exit_code = res.help && !rc ? EXIT_OK : EXIT_USAGE;
        goto out;
    }
    if (cfg.serve) {
        if (res.argc > 0 || !cfg.cert || !cfg.key) {
            fprintf(stderr, "tailorctl pdb-check: --serve needs --tls-cert and --tls-key and "
                    "takes no paths\n");
            goto out;
        }
        exit_code = pdbserve_run(&(pdbserve_opts){ .listen = cfg.listen, .cert = cfg.cert,
                                                   .key = cfg.key, .kubeconfig = cfg.kubeconfig,
                                                   .context = cfg.context,
                                                   .in_cluster = cfg.in_cluster });
        goto out;
    }

    if (res.argc > 0) {
        tlr_pdbc_create(TLR_PDBC_MANIFESTS, &c);
        for (int i = 0; i < res.argc; i++)
            if (ctl_files_collect("pdb-check", res.argv[i], &files) != TLR_OK)
                goto out;
        for (size_t k = 0; k < files.n; k++) {
            json_object *objs = NULL;
            if (ctl_files_decode("pdb-check", files.v[k], &objs) != TLR_OK)
                goto out;
            for (size_t i = 0; i < json_object_array_length(objs); i++) {
                json_object *o = json_object_array_get_idx(objs, i);
                const char *ns = tlr_json_str(o, "metadata.namespace");
                if (cfg.ns && strcmp(ns ? ns : "default", cfg.ns))
                    continue;
                rc = tlr_pdbc_add(c, NULL, o, err, sizeof(err));
                if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
                    fprintf(stderr, "tailorctl pdb-check: %s: %s\n", files.v[k], err);
                    json_object_put(objs);
                    goto out;
                }
            }
            json_object_put(objs);
        }
    } else {
        tlr_pdbc_create(TLR_PDBC_LIVE, &c);
        err[0] = '\0';
        if ((rc = pdbc_connect(cfg.kubeconfig, cfg.context, cfg.in_cluster, 0, &kc, err,
                               sizeof(err))) != TLR_OK) {
            fprintf(stderr, "tailorctl pdb-check: kubeconfig: %s\n", err[0] ? err
                    : tlr_strerror(rc));
            exit_code = EXIT_FAIL;
            goto out;
        }
        if ((rc = pdbc_load_live(kc, cfg.ns, c, err, sizeof(err))) != TLR_OK) {
            fprintf(stderr, "tailorctl pdb-check: %s\n", err);
            exit_code = EXIT_FAIL;
            goto out;
        }
    }

    tlr_pdbc_run(c, &f);
    tlr_buf b;
    tlr_buf_init(&b, 1u << 30);
    if (cfg.output == 1)
        tlr_pdbc_findings_json(c, &f, &b);
    else
        tlr_pdbc_findings_text(c, &f, &b);
    fputs(tlr_buf_str(&b), stdout);
    fflush(stdout);
    tlr_buf_free(&b);
    size_t errors = 0;
    for (size_t i = 0; i < f.n; i++)
        errors += tlr_pdbc_rule_is_error(f.v[i].rule);
    exit_code = (cfg.fail_on == 0 && f.n > 0) || (cfg.fail_on == 1 && errors > 0) ? EXIT_FOUND
                                                                                  : EXIT_OK;
out:
    tlr_pdbc_findings_free(&f);
    tlr_pdbc_free(c);
    tlr_kube_free(kc);
    ctl_files_free(&files);
    tlr_conf_free(settings, NSETTINGS, &cfg);
    free(args);
    return exit_code;
}
