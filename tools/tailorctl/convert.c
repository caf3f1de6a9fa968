/* convert.c - tailorctl convert: node-group ConfigMaps to Karpenter v1.
 *
 *   tailorctl convert --catalog FILE --cluster-name NAME PATH... > karpenter.yaml
 *
 * Reads every ConfigMap in the paths (files or directories), converts them
 * with common/nodegroup (the rules are documented there and in
 * docs/migration.md) and writes NodePools and EC2NodeClasses as a YAML
 * stream (or a JSON List) to stdout or --out.  The report - pools with
 * the groups merged into them, every field not carried over, every
 * decision taken - goes to stderr, and as JSON to --report FILE.
 *
 * Every input error is reported (file, ConfigMap, key) before exiting 2,
 * so one run lists all the bad groups; nothing is written then.
 * Exit: 0 converted; 3 converted, but --strict and some field was not
 * carried over; 2 bad usage or input; 1 the output could not be written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctlfiles.h"
#include "tailorctl.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_catalog.h"
#include "tlr_conf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"
#include "tlr_labels.h"
#include "tlr_nodegroup.h"

extern char **environ;

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_DROPPED = 3 };
#define MAX_ERRORS 100

typedef struct convert_cfg {
    char *catalog, *region, *cluster, *role, *ami_alias, *ami_family, *out, *report;
    tlr_strlist zones;
    int format;     /* 0 yaml, 1 json */
    bool strict, quiet;
} convert_cfg;

static const char *const formats[] = { "yaml", "json", NULL };

static const tlr_setting settings[] = {
    { .name = "catalog", .env = "TAILOR_CATALOG", .type = TLR_SET_STR,
      .offset = offsetof(convert_cfg, catalog),
      .help = "instance catalog JSON (the format of aws-instance-types.json); required" },
    { .name = "region", .type = TLR_SET_STR, .offset = offsetof(convert_cfg, region),
      .def = "us-east-1", .help = "region whose catalog entries (prices) are used" },
    { .name = "zones", .type = TLR_SET_LIST, .offset = offsetof(convert_cfg, zones),
      .help = "zones of multi-AZ groups; the first also takes single-AZ groups that name no "
              "zone (default REGIONa,REGIONb,REGIONc)" },
    { .name = "cluster-name", .env = "TAILOR_CLUSTER_NAME", .type = TLR_SET_STR,
      .offset = offsetof(convert_cfg, cluster),
      .help = "cluster name: subnets and security groups are selected by the tag "
              TLR_TAG_DISCOVERY "=NAME unless a group lists ids; required" },
    { .name = "role", .type = TLR_SET_STR, .offset = offsetof(convert_cfg, role),
      .help = "node IAM role for groups that name none (default KarpenterNodeRole-CLUSTER)" },
    { .name = "ami-alias", .type = TLR_SET_STR, .offset = offsetof(convert_cfg, ami_alias),
      .def = "al2023@latest", .help = "amiSelectorTerms alias for groups without k8s_ami_id" },
    { .name = "ami-family", .type = TLR_SET_STR, .offset = offsetof(convert_cfg, ami_family),
      .def = "AL2023", .help = "amiFamily for groups with k8s_ami_id but no k8s_ami_family" },
    { .name = "out", .type = TLR_SET_STR, .offset = offsetof(convert_cfg, out),
      .help = "write the objects to FILE instead of stdout" },
    { .name = "format", .type = TLR_SET_ENUM, .offset = offsetof(convert_cfg, format),
      .def = "yaml", .help = "objects as a YAML stream or one JSON List", .choices = formats },
    { .name = "report", .type = TLR_SET_STR, .offset = offsetof(convert_cfg, report),
      .help = "also write the report as JSON to FILE" },
    { .name = "strict", .type = TLR_SET_BOOL, .offset = offsetof(convert_cfg, strict),
      .help = "exit 3 when any field could not be carried over" },
    { .name = "quiet", .type = TLR_SET_BOOL, .offset = offsetof(convert_cfg, quiet),
      .help = "no report on stderr (errors are still printed)" },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

static int write_all(const char *path, const tlr_buf *b)
{
    FILE *f = path ? fopen(path, "wb") : stdout;
    if (f == NULL) {
        fprintf(stderr, "tailorctl convert: %s: %s\n", path, strerror(errno));
        return TLR_E_IO;
    }
    size_t n = fwrite(b->data ? b->data : "", 1, b->len, f);
    int bad = n != b->len || fflush(f) != 0;
    if (path && fclose(f) != 0)
        bad = 1;
    if (bad) {
        fprintf(stderr, "tailorctl convert: %s: write failed\n", path ? path : "stdout");
        return TLR_E_IO;
    }
    return TLR_OK;
}

int cmd_convert(int argc, char **argv)
{
    convert_cfg cfg = { 0 };
    tlr_conf_result res;
    Tailor__V1__Catalog *cat = NULL;
    tlr_ng_group **groups = NULL;
    size_t ngroups = 0, nerrors = 0, nfiles = 0;
    tlr_ng_result *r = NULL;
    ctl_files files = { 0 };
    char **zones = NULL;
    int exit_code = EXIT_USAGE, rc;
    char err[TLR_NG_ERRLEN];

    rc = tlr_conf_load(settings, NSETTINGS, &cfg, argc, argv, (const char *const *)environ,
                       &res);
    if (rc || res.help || res.argc == 0 || !cfg.catalog || !cfg.cluster) {
        if (rc)
            fprintf(stderr, "tailorctl convert: %s\n", res.err);
        else if (!res.help && res.argc == 0)
            fprintf(stderr, "tailorctl convert: give the node-group files or directories\n");
        else if (!res.help)
            fprintf(stderr, "tailorctl convert: --catalog (or TAILOR_CATALOG) and "
                    "--cluster-name are required\n");
        tlr_conf_help("tailorctl convert",
                      "PATH... (files or directories): convert Cluster Autoscaler node-group ConfigMaps into Karpenter v1 "
                      "NodePools and EC2NodeClasses (docs/migration.md). Exit 0 converted, 3 "
                      "some field not carried over with --strict, 2 bad usage or input, 1 "
                      "output not written.",
                      settings, NSETTINGS, res.help && !rc ? stdout : stderr);
        exit_code = res.help && !rc ? EXIT_OK : EXIT_USAGE;
        goto out;
    }

    tlr_catalog_file_opts copts = { .region = cfg.region };
    if ((rc = tlr_catalog_file_load(cfg.catalog, &copts, &cat, err, sizeof(err))) != TLR_OK) {
        fprintf(stderr, "tailorctl convert: %s: %s\n", cfg.catalog,
                err[0] ? err : tlr_strerror(rc));
        goto out;
    }
    if (cat->n_instance_types == 0) {
        fprintf(stderr, "tailorctl convert: %s: no instance type has a price in %s\n",
                cfg.catalog, cfg.region);
        goto out;
    }
    size_t nz = cfg.zones.n ? cfg.zones.n : 3;
    zones = tlr_calloc(nz, sizeof(*zones));
    for (size_t i = 0; i < nz; i++) {
        if (cfg.zones.n) {
            zones[i] = tlr_strdup(cfg.zones.items[i]);
        } else {
            size_t l = strlen(cfg.region) + 2;
            zones[i] = tlr_malloc(l);
            snprintf(zones[i], l, "%s%c", cfg.region, (char)('a' + i));
        }
    }
    tlr_ng_opts o = { .catalog = cat, .zones = (const char *const *)zones, .nzones = nz,
                      .cluster = cfg.cluster, .role = cfg.role, .ami_alias = cfg.ami_alias,
                      .ami_family = cfg.ami_family };

    for (int i = 0; i < res.argc; i++)
        if (ctl_files_collect("convert", res.argv[i], &files) != TLR_OK)
            goto out;
    for (size_t f = 0; f < files.n; f++) {
        json_object *objs = NULL;
        if (ctl_files_decode("convert", files.v[f], &objs) != TLR_OK) {
            nerrors++;
            continue;
        }
        nfiles++;
        for (size_t i = 0; i < json_object_array_length(objs); i++) {
            json_object *cm = json_object_array_get_idx(objs, i);
            const char *kind = tlr_json_str(cm, "kind");
            if (kind && strcmp(kind, "ConfigMap")) {
                char what[256];
                tlr_kubeobj_describe(cm, what, sizeof(what));
                fprintf(stderr, "tailorctl convert: warning: %s: skipping %s: not a node-group "
                        "ConfigMap\n", files.v[f], what);
                continue;
            }
            tlr_ng_group *g = NULL;
            if ((rc = tlr_ng_parse(cm, files.v[f], &o, &g, err, sizeof(err))) != TLR_OK) {
                if (nerrors++ < MAX_ERRORS)
                    fprintf(stderr, "tailorctl convert: %s\n", err);
                continue;
            }
            groups = tlr_realloc(groups, (ngroups + 1) * sizeof(*groups));
            groups[ngroups++] = g;
        }
        json_object_put(objs);
    }
    if (nerrors > 0) {
        fprintf(stderr, "tailorctl convert: %zu error%s%s; nothing written\n", nerrors,
                nerrors == 1 ? "" : "s", nerrors > MAX_ERRORS ? " (the first 100 shown)" : "");
        goto out;
    }
    if (ngroups == 0) {
        fprintf(stderr, "tailorctl convert: no node-group ConfigMap in %zu file%s\n", nfiles,
                nfiles == 1 ? "" : "s");
        goto out;
    }
    if ((rc = tlr_ng_convert(groups, ngroups, &o, &r, err, sizeof(err))) != TLR_OK) {
        fprintf(stderr, "tailorctl convert: %s\n", err);
        goto out;
    }

    tlr_buf b;
    tlr_buf_init(&b, 1u << 30);
    rc = cfg.format == 1 ? tlr_ng_result_json(r, &b) : tlr_ng_result_yaml(r, &b);
    if (rc == TLR_OK)
        rc = write_all(cfg.out, &b);
    tlr_buf_free(&b);
    if (rc != TLR_OK) {
        exit_code = EXIT_FAIL;
        goto out;
    }
    if (cfg.report) {
        tlr_buf_init(&b, 1u << 30);
        rc = tlr_ng_result_report_json(r, &b);
        if (rc == TLR_OK)
            rc = write_all(cfg.report, &b);
        tlr_buf_free(&b);
        if (rc != TLR_OK) {
            exit_code = EXIT_FAIL;
            goto out;
        }
    }
    if (!cfg.quiet) {
        tlr_buf_init(&b, 1u << 30);
        tlr_buf_printf(&b, "tailorctl convert: %zu file%s: ", nfiles, nfiles == 1 ? "" : "s");
        tlr_ng_result_report_text(r, &b);
        fputs(tlr_buf_str(&b), stderr);
        tlr_buf_free(&b);
    }
    exit_code = cfg.strict && tlr_ng_result_drops(r) > 0 ? EXIT_DROPPED : EXIT_OK;
out:
    tlr_ng_result_free(r);
    for (size_t i = 0; i < ngroups; i++)
        tlr_ng_group_free(groups[i]);
    free(groups);
    if (zones) {
        size_t nzf = cfg.zones.n ? cfg.zones.n : 3;
        for (size_t i = 0; i < nzf; i++)
            free(zones[i]);
        free(zones);
    }
    ctl_files_free(&files);
    tlr_catalog_free(cat);
    tlr_conf_free(settings, NSETTINGS, &cfg);
    return exit_code;
}
