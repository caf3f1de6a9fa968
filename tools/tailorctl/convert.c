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
 *
 * An instance type missing from the catalog file (EC2 still offers types
 * a file does not list) is asked of EC2 DescribeInstanceTypes when AWS
 * credentials are available (--describe-missing, the default) and sized
 * as the launcher would size it; its price stays unknown, which convert
 * does not need.  A group whose type neither knows is left out and
 * reported by name, the rest is converted, and the exit is 3.
 *
 * Exit: 0 converted; 3 converted, but some group could not be sized, or
 * --strict and some field was not carried over; 2 bad usage or input; 1
 * the output could not be written.
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
#include "tlr_awscreds.h"
#include "tlr_catalog.h"
#include "tlr_conf.h"
#include "tlr_ec2.h"
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
    char *endpoint;
    tlr_strlist zones;
    int format;     /* 0 yaml, 1 json */
    bool strict, quiet, describe_missing;
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
    { .name = "describe-missing", .type = TLR_SET_BOOL,
      .offset = offsetof(convert_cfg, describe_missing), .def = "true",
      .help = "ask EC2 DescribeInstanceTypes for instance types the catalog lacks, when AWS "
              "credentials are available" },
    { .name = "aws-endpoint", .env = "AWS_ENDPOINT_URL", .type = TLR_SET_STR,
      .offset = offsetof(convert_cfg, endpoint),
      .help = "EC2 endpoint override (moto: http://127.0.0.1:PORT)" },
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

/* ---- instance types the catalog lacks ----------------------------------- */

static void cv_names_join(const tlr_strvec *l, tlr_buf *b)
{
    for (size_t i = 0; i < l->n; i++)
        tlr_buf_printf(b, "%s%s", i ? ", " : "", l->v[i]);
}

/* Add to missing every data.k8s_instance_type of the ConfigMaps in docs
 * (a JSON array) that cat lacks. */
static void cv_missing_types(json_object *docs, const Tailor__V1__Catalog *cat,
                             tlr_strvec *missing)
{
    for (size_t i = 0; i < json_object_array_length(docs); i++) {
        const char *t = tlr_json_str(json_object_array_get_idx(docs, i),
                                     "data.k8s_instance_type");
        if (t && t[0] && !tlr_catalog_find(cat, t) && tlr_strvec_find(missing, t) < 0)
            tlr_strvec_add(missing, t);
    }
}

static int cv_by_name(const void *a, const void *b)
{
    return strcmp((*(Tailor__V1__InstanceType *const *)a)->name,
                  (*(Tailor__V1__InstanceType *const *)b)->name);
}

/* Ask EC2 for the types in missing and move what it describes into cat
 * (kept sorted by name), sized as the launcher sizes a live catalog, at
 * an unknown ($0) price.  Says on stderr what it did and why not; a
 * failure only leaves the types missing. */
static void cv_describe_missing(const convert_cfg *cfg, const tlr_strvec *missing,
                                char *const *zones, size_t nz, Tailor__V1__Catalog *cat)
{
    tlr_aws_creds *creds = NULL;
    tlr_aws_credentials probe = { 0 };
    tlr_ec2 *ec2 = NULL;
    tlr_ec2_type_infos infos = { 0 };
    tlr_aws_error aerr = { 0 };
    Tailor__V1__Catalog *live = NULL;
    tlr_buf names;
    char err[512] = "";
    int rc;

    tlr_buf_init(&names, 1u << 20);
    cv_names_join(missing, &names);
    if ((rc = tlr_aws_creds_create(&(tlr_aws_creds_opts){ .region = cfg->region }, &creds)) ||
        (rc = tlr_aws_creds_get(creds, &probe))) {
        fprintf(stderr, "tailorctl convert: no AWS credentials (%s): not asking EC2 for %s\n",
                tlr_strerror(rc), tlr_buf_str(&names));
        goto out;
    }
    tlr_aws_credentials_clear(&probe);
    if ((rc = tlr_ec2_create(&(tlr_aws_query_opts){ .region = cfg->region,
                                                    .endpoint = cfg->endpoint,
                                                    .creds = creds },
                             &ec2))) {
        fprintf(stderr, "tailorctl convert: EC2 client: %s\n", tlr_strerror(rc));
        goto out;
    }
    tlr_ec2_filter f = { "instance-type", (const char *const *)missing->v, missing->n };
    if ((rc = tlr_ec2_describe_instance_types(ec2, &f, 1, &infos, &aerr))) {
        fprintf(stderr, "tailorctl convert: EC2 DescribeInstanceTypes for %s: %s%s%s\n",
                tlr_buf_str(&names), aerr.code[0] ? aerr.code : tlr_strerror(rc),
                aerr.message[0] ? ": " : "", aerr.message);
        goto out;
    }
    if (infos.n == 0) {
        fprintf(stderr, "tailorctl convert: EC2 describes none of %s\n", tlr_buf_str(&names));
        goto out;
    }
    tlr_catalog_live_in in = { .region = cfg->region, .types = &infos, .fallback = cat,
                               .zones = (const char *const *)zones, .n_zones = nz,
                               .no_spot = true, .keep_unpriced = true };
    tlr_catalog_live_stats st = { 0 };
    if ((rc = tlr_catalog_from_ec2(&in, &live, &st, err, sizeof(err)))) {
        fprintf(stderr, "tailorctl convert: the types EC2 describes: %s\n",
                err[0] ? err : tlr_strerror(rc));
        goto out;
    }
    cat->instance_types = tlr_realloc(cat->instance_types, (cat->n_instance_types +
                                      live->n_instance_types) * sizeof(*cat->instance_types));
    tlr_buf_reset(&names);
    for (size_t i = 0; i < live->n_instance_types; i++) {
        tlr_buf_printf(&names, "%s%s", i ? ", " : "", live->instance_types[i]->name);
        cat->instance_types[cat->n_instance_types++] = live->instance_types[i];
    }
    live->n_instance_types = 0;   /* handed over to cat */
    qsort(cat->instance_types, cat->n_instance_types, sizeof(*cat->instance_types), cv_by_name);
    fprintf(stderr, "tailorctl convert: sized from EC2 DescribeInstanceTypes (not in %s): %s\n",
            cfg->catalog, tlr_buf_str(&names));
out:
    tlr_catalog_free(live);
    tlr_ec2_type_infos_free(&infos);
    tlr_ec2_free(ec2);
    tlr_aws_creds_free(creds);
    tlr_buf_free(&names);
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
    json_object **docs = NULL;   /* per file, decoded */
    tlr_strvec missing = { 0 }, unsized = { 0 };
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
    docs = tlr_calloc(files.n + 1, sizeof(*docs));
    for (size_t f = 0; f < files.n; f++) {
        if (ctl_files_decode("convert", files.v[f], &docs[f]) != TLR_OK) {
            nerrors++;
            continue;
        }
        cv_missing_types(docs[f], cat, &missing);
    }
    if (missing.n > 0 && cfg.describe_missing)
        cv_describe_missing(&cfg, &missing, zones, nz, cat);
    for (size_t f = 0; f < files.n; f++) {
        json_object *objs = docs[f];
        if (objs == NULL)
            continue;
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
            if ((rc = tlr_ng_parse(cm, files.v[f], &o, &g, err, sizeof(err))) == TLR_E_NOTFOUND) {
                /* its instance type is in neither the catalog nor EC2 */
                fprintf(stderr, "tailorctl convert: %s: cannot size the group; left out\n", err);
                tlr_strvec_add(&unsized, err);
                continue;
            }
            if (rc != TLR_OK) {
                if (nerrors++ < MAX_ERRORS)
                    fprintf(stderr, "tailorctl convert: %s\n", err);
                continue;
            }
            groups = tlr_realloc(groups, (ngroups + 1) * sizeof(*groups));
            groups[ngroups++] = g;
        }
    }
    if (nerrors > 0) {
        fprintf(stderr, "tailorctl convert: %zu error%s%s; nothing written\n", nerrors,
                nerrors == 1 ? "" : "s", nerrors > MAX_ERRORS ? " (the first 100 shown)" : "");
        goto out;
    }
    if (ngroups == 0 && unsized.n > 0) {
        fprintf(stderr, "tailorctl convert: no node group could be sized (%zu left out); "
                "nothing written\n", unsized.n);
        exit_code = EXIT_DROPPED;
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
        rc = tlr_ng_result_report_json(r, unsized.v, unsized.n, &b);
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
    if (unsized.n > 0)
        fprintf(stderr, "tailorctl convert: %zu node group%s left out: %s not in the catalog%s "
                "(listed above)\n", unsized.n, unsized.n == 1 ? "" : "s",
                unsized.n == 1 ? "its instance type is" : "their instance types are",
                cfg.describe_missing ? " and not described by EC2" : "");
    exit_code = unsized.n > 0 || (cfg.strict && tlr_ng_result_drops(r) > 0) ? EXIT_DROPPED
                                                                             : EXIT_OK;
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
    for (size_t f = 0; docs && f < files.n; f++)
        json_object_put(docs[f]);
    free(docs);
    tlr_strvec_free(&missing);
    tlr_strvec_free(&unsized);
    ctl_files_free(&files);
    tlr_catalog_free(cat);
    tlr_conf_free(settings, NSETTINGS, &cfg);
    return exit_code;
}
