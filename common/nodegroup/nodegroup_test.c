/* nodegroup_test.c - the conversion rules, table-driven: what a group's
 * data turns into, which fields are reported as not carried over, which
 * inputs are refused (and how the error names file and key), which groups
 * merge, and that the output reads back through the readers tailorctl
 * solve and the watcher use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"
#include "tlr_nodegroup.h"
#include "tlr_yaml.h"

/* A small catalog: enough shapes to tell merging from not merging. */
#define T(name, fam, cat, gen, size, arch, vcpu, mem, gpu, gname, gmk, cpu)                   \
    "{\"name\":\"" name "\",\"family\":\"" fam "\",\"category\":\"" cat "\",\"generation\":"  \
    #gen ",\"size\":\"" size "\",\"arch\":\"" arch "\",\"os\":\"linux\",\"vcpu\":" #vcpu      \
    ",\"memory_mib\":" #mem ",\"gpu_count\":" #gpu ",\"gpu_name\":" gname                    \
    ",\"gpu_manufacturer\":" gmk ",\"max_pods\":58,\"cpu_manufacturer\":\"" cpu "\","         \
    "\"allocatable_cpu_millicores\":" #vcpu "000,\"allocatable_memory_mib\":" #mem            \
    ",\"nvidia_gpu\":" #gpu ",\"od_price_usd_hr\":{\"us-east-1\":1.0}}"
static const char catalog_json[] =
    "[" T("m5.4xlarge", "m5", "m", 5, "4xlarge", "amd64", 16, 65536, 0, "null", "null", "intel")
    "," T("m5.8xlarge", "m5", "m", 5, "8xlarge", "amd64", 32, 131072, 0, "null", "null", "intel")
    "," T("m6i.8xlarge", "m6i", "m", 6, "8xlarge", "amd64", 32, 131072, 0, "null", "null", "intel")
    "," T("m7i.8xlarge", "m7i", "m", 7, "8xlarge", "amd64", 32, 131072, 0, "null", "null", "intel")
    "," T("m6a.8xlarge", "m6a", "m", 6, "8xlarge", "amd64", 32, 131072, 0, "null", "null", "amd")
    "," T("m7g.4xlarge", "m7g", "m", 7, "4xlarge", "arm64", 16, 65536, 0, "null", "null", "aws")
    "," T("m5d.4xlarge", "m5d", "m", 5, "4xlarge", "amd64", 16, 65536, 0, "null", "null", "intel")
    "," T("m7i-flex.large", "m7i-flex", "m", 7, "large", "amd64", 2, 8192, 0, "null", "null",
          "intel")
    "," T("g5.xlarge", "g5", "g", 5, "xlarge", "amd64", 4, 16384, 1, "\"a10g\"", "\"nvidia\"",
          "amd")
    "," T("g5.2xlarge", "g5", "g", 5, "2xlarge", "amd64", 8, 32768, 1, "\"a10g\"", "\"nvidia\"",
          "amd")
    "," T("g4dn.xlarge", "g4dn", "g", 4, "xlarge", "amd64", 4, 16384, 1, "\"t4\"", "\"nvidia\"",
          "intel")
    "]";

static const char *const zones[] = { "us-east-1a", "us-east-1b", "us-east-1c" };

typedef struct fx {
    Tailor__V1__Catalog *cat;
    tlr_ng_opts o;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    char err[256];
    int rc = tlr_catalog_from_json(catalog_json, strlen(catalog_json), NULL, &f->cat, err,
                                   sizeof(err));
    if (rc != TLR_OK) {
        print_error("catalog: %s\n", err);
        return -1;
    }
    f->o = (tlr_ng_opts){ .catalog = f->cat, .zones = zones, .nzones = 3, .cluster = "prod" };
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tlr_catalog_free(f->cat);
    free(f);
    return 0;
}

/* Parse one ConfigMap written as YAML. */
static int parse_yaml(const fx *f, const char *yaml, tlr_ng_group **g, char *err, size_t len)
{
    json_object *docs = NULL;
    char perr[256];
    if (tlr_yaml_parse(yaml, strlen(yaml), NULL, &docs, perr, sizeof(perr)) != TLR_OK) {
        print_error("test yaml: %s\n", perr);
        return -1;
    }
    int rc = tlr_ng_parse(json_object_array_get_idx(docs, 0), "groups.yaml", &f->o, g, err, len);
    json_object_put(docs);
    return rc;
}

static bool has_drop(const tlr_ng_group *g, const char *key)
{
    for (size_t i = 0; i < g->ndrops; i++)
        if (!strcmp(g->drops[i].key, key))
            return true;
    return false;
}

/* ---- parse: accepted groups and what they carry ------------------------- */

typedef struct parse_ok_case {
    const char *name;
    const char *data;              /* YAML lines under data: */
    const char *want_drops;        /* comma-separated keys reported as not carried */
    size_t want_zones;
    int64_t want_iops, want_throughput;
    const char *want_note;         /* substring of some note, or NULL */
} parse_ok_case;

static const parse_ok_case parse_ok_cases[] = {
    { "the issue's example",
      "  k8s_instance_type: m6i.8xlarge\n  k8s_root_volume_size: '100'\n"
      "  k8s_root_volume_iops: '3000'\n  k8s_root_volume_type: 'gp3'\n"
      "  k8s_root_volume_throughput: '125'\n  k8s_min_node_number: '300'\n"
      "  k8s_max_node_number: '2500'\n  multi_az_provisioned_workers: 'false'\n"
      "  asg_launch_type: 'launch_template'\n  gpu_enabled: 'false'\n",
      "asg_launch_type,k8s_min_node_number", 1, 3000, 125, "pinned to us-east-1a" },
    { "multi-AZ uses every zone; min 0 is not a loss",
      "  k8s_instance_type: m5.4xlarge\n  k8s_max_node_number: '10'\n"
      "  k8s_min_node_number: '0'\n  multi_az_provisioned_workers: 'true'\n",
      "", 3, 0, 0, NULL },
    { "explicit zones win",
      "  k8s_instance_type: m5.4xlarge\n  k8s_max_node_number: '10'\n"
      "  k8s_availability_zones: 'us-east-1c, us-east-1b'\n",
      "", 2, 0, 0, NULL },
    { "iops and throughput on gp2 are reported, not carried",
      "  k8s_instance_type: m5.4xlarge\n  k8s_max_node_number: '10'\n"
      "  k8s_root_volume_type: gp2\n  k8s_root_volume_size: '50'\n"
      "  k8s_root_volume_iops: '3000'\n  k8s_root_volume_throughput: '125'\n",
      "k8s_root_volume_iops,k8s_root_volume_throughput", 3, 0, 0, NULL },
    { "reserved label domains and the EKS node-group label are reported",
      "  k8s_instance_type: m5.4xlarge\n  k8s_max_node_number: '10'\n"
      "  k8s_node_labels: 'team=web,eks.amazonaws.com/nodegroup=ng1,kubernetes.io/role=x,"
      "node.kubernetes.io/lifecycle=normal'\n",
      "k8s_node_labels", 3, 0, 0, NULL },
    { "ASG-only settings, desired count and user data are reported",
      "  k8s_instance_type: m5.4xlarge\n  k8s_max_node_number: '10'\n"
      "  k8s_desired_node_number: '5'\n  asg_termination_policies: OldestInstance\n"
      "  k8s_user_data: '#!/bin/bash'\n  k8s_ebs_optimized: 'true'\n",
      "asg_termination_policies,k8s_desired_node_number,k8s_ebs_optimized,k8s_user_data", 3, 0,
      0, NULL },
    { "unquoted numbers are read too",
      "  k8s_instance_type: m5.4xlarge\n  k8s_max_node_number: 10\n  gpu_enabled: false\n",
      "", 3, 0, 0, NULL },
    { "volume type defaults to gp3 with a note",
      "  k8s_instance_type: m5.4xlarge\n  k8s_max_node_number: '1'\n"
      "  k8s_root_volume_size: '80'\n",
      "", 3, 0, 0, "gp3" },
    { "a GPU type without gpu_enabled gets a note",
      "  k8s_instance_type: g5.xlarge\n  k8s_max_node_number: '1'\n",
      "", 3, 0, 0, "not tainted" },
    { "restricted tags are reported",
      "  k8s_instance_type: m5.4xlarge\n  k8s_max_node_number: '1'\n"
      "  k8s_tags: 'cost-center=42,kubernetes.io/cluster/prod=owned'\n",
      "k8s_tags", 3, 0, 0, NULL },
};

static void test_parse_ok(void **state)
{
    fx *f = *state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(parse_ok_cases) / sizeof(parse_ok_cases[0]); i++) {
        const parse_ok_case *c = &parse_ok_cases[i];
        char yaml[2048], err[TLR_NG_ERRLEN];
        tlr_ng_group *g = NULL;
        snprintf(yaml, sizeof(yaml), "metadata:\n  name: ng-%zu\ndata:\n%s", i, c->data);
        int rc = parse_yaml(f, yaml, &g, err, sizeof(err));
        if (rc != TLR_OK) {
            print_error("case %s: got rc %d (%s), want TLR_OK\n", c->name, rc, err);
            failed++;
            continue;
        }
        /* drops: exactly the wanted keys */
        char got[512] = "";
        for (size_t k = 0; k < g->ndrops; k++)
            if (!strstr(got, g->drops[k].key))
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
                         got[0] ? "," : "", g->drops[k].key);
        size_t nwant = 0;
        char want[512];
        snprintf(want, sizeof(want), "%s", c->want_drops);
        for (char *s = NULL, *t = strtok_r(want, ",", &s); t; t = strtok_r(NULL, ",", &s)) {
            nwant++;
            if (!has_drop(g, t)) {
                print_error("case %s: drop %s missing; got drops [%s]\n", c->name, t, got);
                failed++;
            }
        }
        size_t ndistinct = 0;
        for (size_t k = 0; k < g->ndrops; k++) {
            bool seen = false;
            for (size_t j = 0; j < k; j++)
                seen |= !strcmp(g->drops[j].key, g->drops[k].key);
            ndistinct += !seen;
        }
        if (ndistinct != nwant) {
            print_error("case %s: got drops [%s], want [%s]\n", c->name, got, c->want_drops);
            failed++;
        }
        if (g->nzones != c->want_zones || g->iops != c->want_iops ||
            g->throughput != c->want_throughput) {
            print_error("case %s: got zones %zu iops %lld throughput %lld, want %zu %lld %lld\n",
                        c->name, g->nzones, (long long)g->iops, (long long)g->throughput,
                        c->want_zones, (long long)c->want_iops, (long long)c->want_throughput);
            failed++;
        }
        if (c->want_note) {
            bool found = false;
            for (size_t k = 0; k < g->nnotes; k++)
                found |= strstr(g->notes[k], c->want_note) != NULL;
            if (!found) {
                print_error("case %s: no note mentions \"%s\" (%zu notes)\n", c->name,
                            c->want_note, g->nnotes);
                failed++;
            }
        }
        tlr_ng_group_free(g);
    }
    assert_int_equal(failed, 0);
}

/* ---- parse: refused inputs ------------------------------------------------- */

typedef struct parse_bad_case {
    const char *name;
    const char *doc;          /* the whole ConfigMap */
    int want_rc;
    const char *want_err;     /* substring */
} parse_bad_case;

#define CM(d) "metadata:\n  name: ng\ndata:\n  k8s_instance_type: m5.4xlarge\n" d
static const parse_bad_case parse_bad_cases[] = {
    { "unknown key, with a suggestion",
      CM("  k8s_max_node_number: '1'\n  k8s_root_volme_size: '100'\n"), TLR_E_INVAL,
      "groups.yaml: ConfigMap ng: data.k8s_root_volme_size: unknown key (did you mean "
      "k8s_root_volume_size?)" },
    { "unknown key, far from any", CM("  k8s_max_node_number: '1'\n  colour: blue\n"),
      TLR_E_INVAL, "data.colour: unknown key" },
    { "not a number", CM("  k8s_max_node_number: 'lots'\n"), TLR_E_PARSE,
      "data.k8s_max_node_number: \"lots\" is not a whole number" },
    { "negative", CM("  k8s_max_node_number: '-3'\n"), TLR_E_PARSE, "is not a whole number" },
    { "max required", CM("  k8s_min_node_number: '1'\n"), TLR_E_INVAL,
      "data.k8s_max_node_number: is required" },
    { "type required", "metadata:\n  name: ng\ndata:\n  k8s_max_node_number: '3'\n",
      TLR_E_INVAL, "data.k8s_instance_type: is required" },
    { "type not in the catalog",
      "metadata:\n  name: ng\ndata:\n  k8s_instance_type: m5.huge\n  k8s_max_node_number: '1'\n",
      TLR_E_NOTFOUND, "data.k8s_instance_type: \"m5.huge\" is not in the instance catalog" },
    { "min above max", CM("  k8s_min_node_number: '300'\n  k8s_max_node_number: '200'\n"),
      TLR_E_INVAL, "data.k8s_min_node_number: 300 is above k8s_max_node_number 200" },
    { "bad boolean", CM("  k8s_max_node_number: '1'\n  gpu_enabled: 'maybe'\n"), TLR_E_PARSE,
      "data.gpu_enabled: \"maybe\" is not true or false" },
    { "gpu on a type without GPU", CM("  k8s_max_node_number: '1'\n  gpu_enabled: 'true'\n"),
      TLR_E_INVAL, "data.gpu_enabled: is true but m5.4xlarge has no GPU" },
    { "bad volume type", CM("  k8s_max_node_number: '1'\n  k8s_root_volume_type: ssd\n"),
      TLR_E_PARSE, "data.k8s_root_volume_type: \"ssd\" is not one of gp3, gp2" },
    { "gp3 iops out of range",
      CM("  k8s_max_node_number: '1'\n  k8s_root_volume_type: gp3\n"
         "  k8s_root_volume_iops: '1000'\n"), TLR_E_RANGE,
      "data.k8s_root_volume_iops: 1000 is outside 3000..80000 for gp3" },
    { "volume too small for st1",
      CM("  k8s_max_node_number: '1'\n  k8s_root_volume_type: st1\n"
         "  k8s_root_volume_size: '20'\n"), TLR_E_RANGE, "20 GiB is outside 125..16384 for st1" },
    { "single AZ with two zones",
      CM("  k8s_max_node_number: '1'\n  multi_az_provisioned_workers: 'false'\n"
         "  k8s_availability_zones: us-east-1a,us-east-1b\n"), TLR_E_INVAL,
      "data.k8s_availability_zones: lists 2 zones but multi_az_provisioned_workers is false" },
    { "bad label value", CM("  k8s_max_node_number: '1'\n  k8s_node_labels: 'team=-web'\n"),
      TLR_E_PARSE, "data.k8s_node_labels: label team: \"-web\" is not a valid label value" },
    { "bad taint effect",
      CM("  k8s_max_node_number: '1'\n  k8s_node_taints: 'dedicated=db:Never'\n"), TLR_E_PARSE,
      "effect \"Never\" is not NoSchedule" },
    { "bad AMI id", CM("  k8s_max_node_number: '1'\n  k8s_ami_id: ami-xyz\n"), TLR_E_PARSE,
      "data.k8s_ami_id: \"ami-xyz\" is not an AMI id" },
    { "role and profile", CM("  k8s_max_node_number: '1'\n  k8s_iam_role: r\n"
                             "  k8s_iam_instance_profile: p\n"), TLR_E_INVAL, "not both" },
    { "a list value", CM("  k8s_max_node_number: [1]\n"), TLR_E_PARSE,
      "data.k8s_max_node_number: want a string, got a list" },
    { "no data", "metadata:\n  name: ng\n", TLR_E_INVAL, "ConfigMap ng: no data mapping" },
    { "no name", "data:\n  k8s_max_node_number: '1'\n", TLR_E_INVAL, "metadata.name is required" },
    { "another kind", "kind: Secret\nmetadata:\n  name: s\ndata: {}\n", TLR_E_INVAL,
      "kind Secret is not a node-group ConfigMap" },
};

static void test_parse_bad(void **state)
{
    fx *f = *state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(parse_bad_cases) / sizeof(parse_bad_cases[0]); i++) {
        const parse_bad_case *c = &parse_bad_cases[i];
        char err[TLR_NG_ERRLEN] = "";
        tlr_ng_group *g = NULL;
        int rc = parse_yaml(f, c->doc, &g, err, sizeof(err));
        if (rc != c->want_rc || !strstr(err, c->want_err)) {
            print_error("case %s: got rc %d \"%s\", want rc %d with \"%s\"\n", c->name, rc, err,
                        c->want_rc, c->want_err);
            failed++;
        }
        tlr_ng_group_free(g);
    }
    assert_int_equal(failed, 0);
}

/* ---- names --------------------------------------------------------------------- */

static void test_dns_label(void **state)
{
    (void)state;
    static const struct { const char *in; size_t max; const char *want; } cases[] = {
        { "m5.8xlarge-min-300-max-2500", 63, "m5-8xlarge-min-300-max-2500" },
        { "GPU__Pool!!", 63, "gpu-pool" },
        { "--x--", 63, "x" },
        { "...", 63, "x" },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        tlr_ng_dns_label(cases[i].in, cases[i].max, out);
        if (strcmp(out, cases[i].want) || !tlr_ng_is_dns_label(out)) {
            print_error("dns_label(%s): got %s, want %s\n", cases[i].in, out, cases[i].want);
            failed++;
        }
    }
    /* Long names are cut to 63 and stay distinct. */
    char a[64], b[64];
    tlr_ng_dns_label("a-very-long-node-group-name-that-goes-on-and-on-and-on-for-ever-one", 63, a);
    tlr_ng_dns_label("a-very-long-node-group-name-that-goes-on-and-on-and-on-for-ever-two", 63, b);
    if (strlen(a) > 63 || strlen(b) > 63 || !strcmp(a, b) || !tlr_ng_is_dns_label(a)) {
        print_error("long: got %s / %s\n", a, b);
        failed++;
    }
    static const struct { const char *s; bool value, key; } labels[] = {
        { "team", true, true }, { "a.b_c-d", true, true }, { "-x", false, false },
        { "example.com/team", false, true }, { "Example.com/team", false, false },
        { "example.com/", false, false }, { "", true, false },
        { "0123456789012345678901234567890123456789012345678901234567890123", false, false },
    };
    for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
        if (tlr_ng_is_label_value(labels[i].s) != labels[i].value ||
            tlr_ng_is_label_key(labels[i].s) != labels[i].key) {
            print_error("label rules(%s): got value %d key %d, want %d %d\n", labels[i].s,
                        tlr_ng_is_label_value(labels[i].s), tlr_ng_is_label_key(labels[i].s),
                        labels[i].value, labels[i].key);
            failed++;
        }
    assert_int_equal(failed, 0);
}

static void test_shape(void **state)
{
    fx *f = *state;
    static const struct { const char *type, *want_name, *same_as; } cases[] = {
        { "m5.4xlarge", "m-intel", "m7i.8xlarge" },   /* generation and size only */
        { "m6i.8xlarge", "m-intel", "m5.8xlarge" },
        { "m6a.8xlarge", "m-amd", NULL },
        { "m7g.4xlarge", "m-graviton", NULL },
        { "m5d.4xlarge", "m-intel-d", NULL },
        { "m7i-flex.large", "m-intel-flex", NULL },
        { "g5.xlarge", "g-nvidia-a10g", "g5.2xlarge" },
        { "g4dn.xlarge", "g-nvidia-t4-dn", NULL },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const Tailor__V1__InstanceType *t = NULL;
        for (size_t k = 0; k < f->cat->n_instance_types; k++)
            if (!strcmp(f->cat->instance_types[k]->name, cases[i].type))
                t = f->cat->instance_types[k];
        assert_non_null(t);
        char key[128], name[64];
        tlr_ng_shape(t, key, sizeof(key), name, sizeof(name));
        if (strcmp(name, cases[i].want_name)) {
            print_error("shape(%s): got %s, want %s\n", cases[i].type, name, cases[i].want_name);
            failed++;
        }
        /* A different shape must have a different key from every other. */
        for (size_t k = 0; k < f->cat->n_instance_types; k++) {
            const Tailor__V1__InstanceType *u = f->cat->instance_types[k];
            char key2[128], name2[64];
            tlr_ng_shape(u, key2, sizeof(key2), name2, sizeof(name2));
            bool want_same = !strcmp(u->name, t->name) ||
                             (cases[i].same_as && !strcmp(u->name, cases[i].same_as)) ||
                             !strcmp(name2, name);
            if ((strcmp(key, key2) == 0) != want_same) {
                print_error("shape(%s) vs %s: same key %d, want %d\n", t->name, u->name,
                            !strcmp(key, key2), want_same);
                failed++;
            }
        }
    }
    assert_int_equal(failed, 0);
}

/* ---- convert ------------------------------------------------------------------ */

typedef struct group_src {
    const char *name, *type, *max, *extra;
} group_src;

static tlr_ng_group *mk(const fx *f, const group_src *s)
{
    char yaml[2048], err[TLR_NG_ERRLEN];
    tlr_ng_group *g = NULL;
    snprintf(yaml, sizeof(yaml),
             "metadata:\n  name: %s\ndata:\n  k8s_instance_type: %s\n  k8s_max_node_number: '%s'\n"
             "  multi_az_provisioned_workers: 'true'\n%s",
             s->name, s->type, s->max, s->extra ? s->extra : "");
    if (parse_yaml(f, yaml, &g, err, sizeof(err)) != TLR_OK) {
        print_error("group %s: %s\n", s->name, err);
        return NULL;
    }
    return g;
}

#define VOL100 "  k8s_root_volume_size: '100'\n  k8s_root_volume_type: gp3\n"
static const group_src fleet[] = {
    { "m5.8xlarge-min-300-max-2500", "m6i.8xlarge", "2500", VOL100 },
    { "m5.4xlarge-min-1-max-10", "m5.4xlarge", "10", VOL100 },
    { "m7i-8x", "m7i.8xlarge", "5", VOL100 },
    { "m5-4x-small-disk", "m5.4xlarge", "4", "  k8s_root_volume_size: '50'\n" },
    { "amd", "m6a.8xlarge", "3", VOL100 },
    { "arm", "m7g.4xlarge", "3", VOL100 },
    { "gpu-a", "g5.xlarge", "2", "  gpu_enabled: 'true'\n" },
    { "gpu-b", "g5.2xlarge", "3", "  gpu_enabled: 'true'\n" },
    { "gpu-t4", "g4dn.xlarge", "1", "  gpu_enabled: 'true'\n" },
    { "labelled", "m5.4xlarge", "7", VOL100 "  k8s_node_labels: team=db\n" },
};
#define NFLEET (sizeof(fleet) / sizeof(fleet[0]))

static json_object *find_obj(json_object *objs, const char *kind, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(objs); i++) {
        json_object *o = json_object_array_get_idx(objs, i);
        if (!strcmp(tlr_json_str(o, "kind"), kind) && !strcmp(tlr_json_str(o, "metadata.name"), name))
            return o;
    }
    return NULL;
}

static void convert_fleet(const fx *f, const size_t *order, tlr_ng_group **groups,
                          tlr_ng_result **r)
{
    for (size_t i = 0; i < NFLEET; i++) {
        groups[i] = mk(f, &fleet[order[i]]);
        assert_non_null(groups[i]);
    }
    char err[TLR_NG_ERRLEN];
    assert_int_equal(tlr_ng_convert(groups, NFLEET, &f->o, r, err, sizeof(err)), TLR_OK);
}

static void free_fleet(tlr_ng_group **groups, tlr_ng_result *r)
{
    tlr_ng_result_free(r);
    for (size_t i = 0; i < NFLEET; i++)
        tlr_ng_group_free(groups[i]);
}

static void test_convert_merges(void **state)
{
    fx *f = *state;
    size_t order[NFLEET];
    for (size_t i = 0; i < NFLEET; i++)
        order[i] = i;
    tlr_ng_group *groups[NFLEET];
    tlr_ng_result *r = NULL;
    convert_fleet(f, order, groups, &r);

    /* Which groups share a pool. */
    static const struct { const char *a, *b; bool same; } pairs[] = {
        { "m5.8xlarge-min-300-max-2500", "m5.4xlarge-min-1-max-10", true },   /* size+gen */
        { "m5.8xlarge-min-300-max-2500", "m7i-8x", true },                    /* generation */
        { "m5.4xlarge-min-1-max-10", "m5-4x-small-disk", false },             /* root volume */
        { "m5.4xlarge-min-1-max-10", "amd", false },                          /* CPU maker */
        { "m5.4xlarge-min-1-max-10", "arm", false },                          /* arch */
        { "gpu-a", "gpu-b", true },                                           /* GPU size */
        { "gpu-a", "gpu-t4", false },                                         /* GPU model */
        { "m5.4xlarge-min-1-max-10", "labelled", false },                     /* labels */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        const char *pa = tlr_ng_result_pool_of(r, pairs[i].a), *pb = tlr_ng_result_pool_of(r, pairs[i].b);
        if (!pa || !pb || (strcmp(pa, pb) == 0) != pairs[i].same) {
            print_error("%s (%s) and %s (%s): same pool %d, want %d\n", pairs[i].a, pa, pairs[i].b,
                        pb, pa && pb && !strcmp(pa, pb), pairs[i].same);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
    assert_int_equal(tlr_ng_result_groups(r), NFLEET);
    assert_int_equal(tlr_ng_result_nodepools(r), 7);     /* 10 groups, 3 merged away */
    assert_int_equal(tlr_ng_result_nodeclasses(r), 3);   /* gp3-100, gp3-50, default */

    json_object *objs = tlr_ng_result_objects(r);
    const char *intel = tlr_ng_result_pool_of(r, "m7i-8x");
    json_object *np = find_obj(objs, "NodePool", intel);
    assert_non_null(np);
    /* limits: 2500*32 + 10*16 + 5*32 vCPU; memory likewise; nodes 2515 */
    assert_string_equal(tlr_json_str(np, "spec.limits.cpu"), "80320");
    assert_string_equal(tlr_json_str(np, "spec.limits.memory"), "321280Gi");
    assert_string_equal(tlr_json_str(np, "spec.limits.nodes"), "2515");
    json_object *req0 = tlr_json_get(np, "spec.template.spec.requirements.0");
    assert_string_equal(tlr_json_str(req0, "key"), "karpenter.k8s.aws/instance-family");
    assert_string_equal(tlr_json_to_string(tlr_json_get(req0, "values"), JSON_C_TO_STRING_PLAIN),
                        "[\"m5\",\"m6i\",\"m7i\"]");
    assert_string_equal(tlr_json_to_string(tlr_json_get(np, "spec.template.spec.requirements.1.values"),
                                           JSON_C_TO_STRING_PLAIN), "[\"4xlarge\",\"8xlarge\"]");

    /* GPU pool: tainted, restricted to GPU types, GPU limit. */
    json_object *gp = find_obj(objs, "NodePool", tlr_ng_result_pool_of(r, "gpu-a"));
    assert_non_null(gp);
    assert_string_equal(tlr_json_str(gp, "spec.template.spec.taints.0.key"), "nvidia.com/gpu");
    assert_string_equal(tlr_json_str(gp, "spec.template.spec.taints.0.effect"), "NoSchedule");
    assert_string_equal(tlr_json_str(gp, "spec.limits.nvidia\\.com/gpu"), "5");
    bool gpu_req = false;
    json_object *reqs = tlr_json_arr(gp, "spec.template.spec.requirements");
    for (size_t i = 0; i < json_object_array_length(reqs); i++)
        gpu_req |= !strcmp(tlr_json_str(json_object_array_get_idx(reqs, i), "key"),
                           "karpenter.k8s.aws/instance-gpu-count");
    assert_true(gpu_req);
    /* A CPU pool is not tainted. */
    assert_null(tlr_json_get(np, "spec.template.spec.taints"));

    /* Root volume into the class's block device mapping. */
    const char *cls = tlr_json_str(np, "spec.template.spec.nodeClassRef.name");
    json_object *nc = find_obj(objs, "EC2NodeClass", cls);
    assert_non_null(nc);
    assert_string_equal(tlr_json_str(nc, "spec.blockDeviceMappings.0.ebs.volumeSize"), "100Gi");
    assert_string_equal(tlr_json_str(nc, "spec.blockDeviceMappings.0.ebs.volumeType"), "gp3");
    assert_string_equal(tlr_json_str(nc, "spec.blockDeviceMappings.0.deviceName"), "/dev/xvda");
    assert_string_equal(tlr_json_str(nc, "spec.subnetSelectorTerms.0.tags.karpenter\\.sh/discovery"),
                        "prod");

    /* Every name is a DNS-1123 label; every object reads back through the
     * converters tailorctl solve and the watcher use. */
    for (size_t i = 0; i < json_object_array_length(objs); i++) {
        json_object *o = json_object_array_get_idx(objs, i);
        assert_true(tlr_ng_is_dns_label(tlr_json_str(o, "metadata.name")));
    }
    tlr_buf b;
    tlr_buf_init(&b, 1u << 24);
    assert_int_equal(tlr_ng_result_yaml(r, &b), TLR_OK);
    json_object *back = NULL;
    char err[512];
    assert_int_equal(tlr_yaml_parse(b.data, b.len, NULL, &back, err, sizeof(err)), TLR_OK);
    assert_int_equal(json_object_array_length(back), json_object_array_length(objs));
    for (size_t i = 0; i < json_object_array_length(back); i++) {
        json_object *o = json_object_array_get_idx(back, i);
        /* read back as exactly what was written: no string became a number */
        if (!json_object_equal(o, json_object_array_get_idx(objs, i))) {
            print_error("object %zu changed through YAML:\n%s\n", i, b.data);
            fail();
        }
        void *msg = NULL;
        int rc = !strcmp(tlr_json_str(o, "kind"), "NodePool")
                     ? tlr_kubeobj_nodepool(o, NULL, (Tailor__V1__NodePool **)&msg, err, sizeof(err))
                     : tlr_kubeobj_nodeclass(o, NULL, (Tailor__V1__NodeClass **)&msg, err,
                                             sizeof(err));
        if (rc != TLR_OK) {
            print_error("read back object %zu: %s\n", i, err);
            fail();
        }
        tlr_kubeobj_free(msg);
    }
    json_object_put(back);
    tlr_buf_free(&b);
    free_fleet(groups, r);
}

static void test_convert_deterministic(void **state)
{
    fx *f = *state;
    size_t fwd[NFLEET], rev[NFLEET];
    for (size_t i = 0; i < NFLEET; i++) {
        fwd[i] = i;
        rev[i] = NFLEET - 1 - i;
    }
    tlr_ng_group *g1[NFLEET], *g2[NFLEET];
    tlr_ng_result *r1 = NULL, *r2 = NULL;
    convert_fleet(f, fwd, g1, &r1);
    convert_fleet(f, rev, g2, &r2);
    tlr_buf a, b;
    tlr_buf_init(&a, 1u << 24);
    tlr_buf_init(&b, 1u << 24);
    assert_int_equal(tlr_ng_result_yaml(r1, &a), TLR_OK);
    assert_int_equal(tlr_ng_result_yaml(r2, &b), TLR_OK);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    tlr_buf_reset(&a);
    tlr_buf_reset(&b);
    assert_int_equal(tlr_ng_result_report_json(r1, NULL, 0, &a), TLR_OK);
    assert_int_equal(tlr_ng_result_report_json(r2, NULL, 0, &b), TLR_OK);
    assert_string_equal(tlr_buf_str(&a), tlr_buf_str(&b));
    tlr_buf_free(&a);
    tlr_buf_free(&b);
    free_fleet(g1, r1);
    free_fleet(g2, r2);
}

static void test_convert_duplicate(void **state)
{
    fx *f = *state;
    group_src s = { "same", "m5.4xlarge", "1", NULL };
    tlr_ng_group *g[2] = { mk(f, &s), mk(f, &s) };
    tlr_ng_result *r = NULL;
    char err[TLR_NG_ERRLEN];
    assert_int_equal(tlr_ng_convert(g, 2, &f->o, &r, err, sizeof(err)), TLR_E_INVAL);
    assert_non_null(strstr(err, "node group same is defined twice"));
    tlr_ng_group_free(g[0]);
    tlr_ng_group_free(g[1]);
}

/* Strings YAML would retype are quoted; the rest stay plain. */
static void test_yaml_quoting(void **state)
{
    (void)state;
    static const struct { const char *s, *want; } cases[] = {
        { "100", "- \"100\"\n" }, { "true", "- \"true\"\n" }, { "no", "- \"no\"\n" },
        { "", "- \"\"\n" }, { "1e3", "- \"1e3\"\n" }, { "null", "- \"null\"\n" },
        { "100Gi", "- 100Gi\n" }, { "gp3", "- gp3\n" }, { "a: b", "- \"a: b\"\n" },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *docs = json_object_new_array(), *seq = json_object_new_array();
        json_object_array_add(seq, json_object_new_string(cases[i].s));
        json_object_array_add(docs, seq);
        tlr_buf b;
        tlr_buf_init(&b, 4096);
        assert_int_equal(tlr_ng_yaml_write(docs, &b), TLR_OK);
        const char *got = strstr(tlr_buf_str(&b), "- ");
        if (!got || strcmp(got, cases[i].want)) {
            print_error("yaml(%s): got %s, want %s\n", cases[i].s, tlr_buf_str(&b), cases[i].want);
            failed++;
        }
        tlr_buf_free(&b);
        json_object_put(docs);
    }
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_dns_label),
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_convert_merges),
        cmocka_unit_test(test_convert_deterministic),
        cmocka_unit_test(test_convert_duplicate),
        cmocka_unit_test(test_yaml_quoting),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
