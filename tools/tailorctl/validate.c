/* validate.c - tailorctl validate: check Karpenter manifests the way
 * tailor reads them, before they reach a cluster.
 *
 *   tailorctl validate [-o text|json] [--fail-on warning|error] PATH...
 *
 * Every NodePool, EC2NodeClass and NodeClaim in the files (a path is a
 * file or a directory, as for convert and pdb-check) goes through the same
 * conversion the services use (common/kubeobj, Karpenter v1.14's CRD
 * schema and CEL rules): an error names the object and the field, and a
 * field tailor accepts but does not act on is reported as a warning, so
 * nothing is dropped silently.  Other kinds are counted and skipped.
 * Exit 0 clean, 3 findings at or above --fail-on (default error), 2 bad
 * usage or unreadable input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlfiles.h"
#include "tailorctl.h"
#include "tlr_alloc.h"
#include "tlr_conf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"

extern char **environ;

enum { EXIT_OK = 0, EXIT_USAGE = 2, EXIT_FOUND = 3 };

typedef struct val_cfg {
    int output;      /* 0 text, 1 json */
    int fail_on;     /* 0 warning, 1 error, 2 never */
} val_cfg;

static const char *const outputs[] = { "text", "json", NULL };
static const char *const fail_ons[] = { "warning", "error", "never", NULL };

static const tlr_setting settings[] = {
    { .name = "output", .type = TLR_SET_ENUM, .offset = offsetof(val_cfg, output),
      .def = "text", .help = "text (one line per finding) or json (-o)", .choices = outputs },
    { .name = "fail-on", .type = TLR_SET_ENUM, .offset = offsetof(val_cfg, fail_on),
      .def = "error", .help = "exit 3 on findings of this severity or worse: warning, error or "
                              "never", .choices = fail_ons },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

typedef struct finding {
    const char *severity;   /* "error" | "warning" */
    char *file, *kind, *name, *message;
} finding;

typedef struct val_run {
    finding *v;
    size_t n, cap;
    const char *file, *kind, *name;   /* the object being converted */
    size_t objects, skipped;
} val_run;

static void add(val_run *r, const char *severity, const char *message)
{
    TLR_GROW(r->v, r->cap, r->n + 1);
    finding *f = &r->v[r->n++];
    f->severity = severity;
    f->file = tlr_strdup(r->file);
    f->kind = tlr_strdup(r->kind);
    f->name = tlr_strdup(r->name);
    f->message = tlr_strdup(message);
}

static void on_warn(void *arg, const char *msg)
{
    add(arg, "warning", msg);
}

static void check_object(val_run *r, json_object *o)
{
    const char *api = tlr_json_str(o, "apiVersion");
    const char *kind = tlr_json_str(o, "kind");
    const char *name = tlr_json_str(o, "metadata.name");
    r->kind = kind ? kind : "";
    r->name = name ? name : "";
    bool sh = api && !strcmp(api, "karpenter.sh/v1");
    bool aws = api && !strcmp(api, "karpenter.k8s.aws/v1");
    tlr_kubeobj_opts opts = { .warn = on_warn, .warn_arg = r };
    char err[TLR_KUBEOBJ_ERRLEN];
    int rc;
    void *m = NULL;
    if (sh && kind && !strcmp(kind, "NodePool"))
        rc = tlr_kubeobj_nodepool(o, &opts, (Tailor__V1__NodePool **)&m, err, sizeof(err));
    else if (sh && kind && !strcmp(kind, "NodeClaim"))
        rc = tlr_kubeobj_nodeclaim(o, &opts, (Tailor__V1__NodeClaim **)&m, err, sizeof(err));
    else if (aws && kind && !strcmp(kind, "EC2NodeClass"))
        rc = tlr_kubeobj_nodeclass(o, &opts, (Tailor__V1__NodeClass **)&m, err, sizeof(err));
    else if (api && (!strncmp(api, "karpenter.sh/", 13) || !strncmp(api, "karpenter.k8s.aws/", 18))) {
        char msg[256];
        snprintf(msg, sizeof(msg), "%s %s: %s is not served by tailor (karpenter.sh/v1 NodePool, "
                 "NodeClaim and karpenter.k8s.aws/v1 EC2NodeClass are)", r->kind, r->name, api);
        add(r, "error", msg);
        r->objects++;
        return;
    } else {
        r->skipped++;
        return;
    }
    r->objects++;
    if (rc)
        add(r, "error", err);
    tlr_kubeobj_free(m);
}

static void print(const val_run *r, int output)
{
    if (output == 1) {
        json_object *root = json_object_new_object(), *a = json_object_new_array();
        for (size_t i = 0; i < r->n; i++) {
            json_object *f = json_object_new_object();
            json_object_object_add(f, "severity", json_object_new_string(r->v[i].severity));
            json_object_object_add(f, "file", json_object_new_string(r->v[i].file));
            json_object_object_add(f, "kind", json_object_new_string(r->v[i].kind));
            json_object_object_add(f, "name", json_object_new_string(r->v[i].name));
            json_object_object_add(f, "message", json_object_new_string(r->v[i].message));
            json_object_array_add(a, f);
        }
        json_object_object_add(root, "objects", json_object_new_int64((int64_t)r->objects));
        json_object_object_add(root, "skipped", json_object_new_int64((int64_t)r->skipped));
        json_object_object_add(root, "findings", a);
        printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
        return;
    }
    size_t errors = 0;
    for (size_t i = 0; i < r->n; i++) {
        printf("%s: %s: %s\n", r->v[i].file, r->v[i].severity, r->v[i].message);
        errors += !strcmp(r->v[i].severity, "error");
    }
    printf("%zu Karpenter object%s checked (%zu other object%s skipped): %zu error%s, %zu "
           "warning%s\n", r->objects, r->objects == 1 ? "" : "s", r->skipped,
           r->skipped == 1 ? "" : "s", errors, errors == 1 ? "" : "s", r->n - errors,
           r->n - errors == 1 ? "" : "s");
}

int cmd_validate(int argc, char **argv)
{
    val_cfg cfg = { 0 };
    tlr_conf_result res;
    ctl_files files = { 0 };
    val_run r = { 0 };
    int exit_code = EXIT_USAGE;
    char **args = tlr_calloc((size_t)argc + 1, sizeof(*args));
    int nargs = 0;
    for (int i = 0; i < argc; i++)
        args[nargs++] = !strcmp(argv[i], "-o") ? "--output" : argv[i];

    int rc = tlr_conf_load(settings, NSETTINGS, &cfg, nargs, args, (const char *const *)environ,
                           &res);
    if (rc || res.help || res.argc == 0) {
        if (rc)
            fprintf(stderr, "tailorctl validate: %s\n", res.err);
        else if (!res.help)
            fprintf(stderr, "tailorctl validate: give the manifest files or directories\n");
        tlr_conf_help("tailorctl validate",
                      "PATH...: check Karpenter NodePools, EC2NodeClasses and NodeClaims as "
                      "tailor reads them (Karpenter v1.14's CRD schema and CEL rules). Errors "
                      "name the object and field; fields tailor accepts but does not act on "
                      "are warnings. Exit 0 clean, 3 findings at or above --fail-on, 2 bad "
                      "usage or unreadable input.",
                      settings, NSETTINGS, res.help && !rc ? stdout : stderr);
        exit_code = res.help && !rc ? EXIT_OK : EXIT_USAGE;
        goto out;
    }
    for (int i = 0; i < res.argc; i++)
        if (ctl_files_collect("validate", res.argv[i], &files) != TLR_OK)
            goto out;
    for (size_t k = 0; k < files.n; k++) {
        json_object *objs = NULL;
        if (ctl_files_decode("validate", files.v[k], &objs) != TLR_OK)
            goto out;
        r.file = files.v[k];
        for (size_t i = 0; i < json_object_array_length(objs); i++)
            check_object(&r, json_object_array_get_idx(objs, i));
        json_object_put(objs);
    }
    print(&r, cfg.output);
    exit_code = EXIT_OK;
    for (size_t i = 0; i < r.n && cfg.fail_on < 2; i++)
        if (cfg.fail_on == 0 || !strcmp(r.v[i].severity, "error"))
            exit_code = EXIT_FOUND;
out:
    for (size_t i = 0; i < r.n; i++) {
        free(r.v[i].file);
        free(r.v[i].kind);
        free(r.v[i].name);
        free(r.v[i].message);
    }
    free(r.v);
    ctl_files_free(&files);
    tlr_conf_free(settings, NSETTINGS, &cfg);
    free(args);
    return exit_code;
}
