/* conformance_test.c - Karpenter's own scheduling tests, replayed on the
 * solver engine.
 *
 * The cases live as data in conformance/ (*.yaml) beside this file, one file
 * per Karpenter test file they come from; each names its source test
 * (file > Describe > Context > It).  conformance/README.md describes the
 * format; docs/conformance.md lists the divergences.  For each case the
 * runner builds a SolveRequest (pods, NodePools, existing nodes, in-flight
 * claims, DaemonSets, a catalog), solves it with the default strategy,
 * runs the independent plan checker, and compares what Karpenter's test
 * asserts with what the plan does.
 *
 * Catalogs:
 *   fake       Karpenter's fake cloud provider's six default types
 *              (pkg/cloudprovider/fake: default, small, gpu-vendor,
 *              gpu-vendor-b, arm, single-pod), rebuilt here from their
 *              definitions: capacity minus the 100m / 10Mi kube-reserved,
 *              prices from PriceFromResources, offerings spot in zones 1-2
 *              and on-demand in zones 1-3;
 *   assorted   fake.InstanceTypesAssorted(): cpu x memory x zone x
 *              capacity type x os x arch, one offering each;
 *   fake-N     fake.InstanceTypes(N): fake-it-i with i+1 cpu, 2(i+1) Gi,
 *              10(i+1) pods;
 *   aws        the real catalog ../shared/data/aws-instance-types.json,
 *              us-east-1 prices, zones test-zone-1a/b/c, on-demand and
 *              spot (spot priced at on-demand, as Karpenter before its
 *              first spot price);
 *   types:     a case's own list of fake types (fake.NewInstanceType
 *              semantics: 4 cpu, 4Gi, 5 pods unless said).
 *
 * What a test asserts about "the node" is checked on the node Karpenter
 * would launch for a new claim: the cheapest offering, among the claim's
 * options, in a zone and capacity type its requirements allow.
 *
 * A case marked `diverge:` must fail: when it passes, the runner says so,
 * so the mark is removed once the divergence is fixed.
 *
 * TAILOR_CONFORMANCE_CASE=<id> runs one case and prints its plan.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "solve_testkit.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_quantity.h"
#include "tlr_yaml.h"

#define MAXPL 512 /* placements (pods) a case may have */

/* ---- small helpers ----------------------------------------------------- */

static json_object *jget(json_object *o, const char *k)
{
    json_object *v = NULL;
    return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *jstr(json_object *o, const char *k, const char *def)
{
    json_object *v = jget(o, k);
    return v && !json_object_is_type(v, json_type_null) ? json_object_get_string(v) : def;
}

static int64_t jint(json_object *o, const char *k, int64_t def)
{
    json_object *v = jget(o, k);
    return v ? json_object_get_int64(v) : def;
}

static bool jbool(json_object *o, const char *k, bool def)
{
    json_object *v = jget(o, k);
    return v ? json_object_get_boolean(v) : def;
}

static size_t jlen(json_object *a)
{
    return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static json_object *jat(json_object *a, size_t i)
{
    return json_object_array_get_idx(a, i);
}

/* cpu "1", "0.5", "100m" -> millicores */
static int64_t q_milli(json_object *v, int64_t def)
{
    if (!v)
        return def;
    if (json_object_is_type(v, json_type_int))
        return json_object_get_int64(v) * 1000;
    if (json_object_is_type(v, json_type_double))
        return (int64_t)(json_object_get_double(v) * 1000 + 0.5);
    int64_t m = 0;
    if (tlr_quantity_parse_milli(json_object_get_string(v), &m) != TLR_OK)
        fail_msg("bad quantity %s", json_object_get_string(v));
    return m;
}

/* memory "4Gi", "512Mi", 3 -> bytes (a bare number is a count) */
static int64_t q_value(json_object *v, int64_t def)
{
    if (!v)
        return def;
    if (json_object_is_type(v, json_type_int))
        return json_object_get_int64(v);
    int64_t x = 0;
    if (tlr_quantity_parse_value(json_object_get_string(v), &x) != TLR_OK)
        fail_msg("bad quantity %s", json_object_get_string(v));
    return x;
}

static int op_of(const char *s)
{
    static const struct { const char *n; int op; } ops[] = {
        { "In", TK_IN }, { "NotIn", TK_NOTIN }, { "Exists", TK_EXISTS }, { "DoesNotExist", TK_DNE },
        { "Gt", TK_GT }, { "Lt", TK_LT },
        { "Gte", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GTE },
        { "Lte", TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LTE },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i].n, s))
            return ops[i].op;
    fail_msg("unknown operator %s", s);
    return 0;
}

static int effect_of(const char *s)
{
    if (!s || !*s)
        return TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED;
    if (!strcmp(s, "NoSchedule"))
        return TK_NOSCHED;
    if (!strcmp(s, "PreferNoSchedule"))
        return TK_PREFER;
    if (!strcmp(s, "NoExecute"))
        return TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE;
    fail_msg("unknown effect %s", s);
    return 0;
}

static int ct_of(const char *s)
{
    if (!strcmp(s, "spot"))
        return TK_SPOT;
    if (!strcmp(s, "on-demand"))
        return TK_OD;
    if (!strcmp(s, "reserved"))
        return TK_RESERVED;
    fail_msg("unknown capacity type %s", s);
    return 0;
}

static const char *ct_name(int ct)
{
    return ct == TK_SPOT ? "spot" : ct == TK_OD ? "on-demand" : ct == TK_RESERVED ? "reserved" : "?";
}

/* [key, op, values, minValues]; values a list or a comma string */
static Tailor__V1__NodeSelectorRequirement *nsr_of(json_object *a)
{
    const char *key = json_object_get_string(jat(a, 0));
    int op = op_of(json_object_get_string(jat(a, 1)));
    json_object *vals = jlen(a) > 2 ? jat(a, 2) : NULL;
    Tailor__V1__NodeSelectorRequirement *r = tk_nsr(key, op, NULL);
    if (vals && json_object_is_type(vals, json_type_array)) {
        for (size_t i = 0; i < jlen(vals); i++)
            TK_PUSH(r->values, r->n_values, tk_s(json_object_get_string(jat(vals, i))));
    } else if (vals && !json_object_is_type(vals, json_type_null)) {
        Tailor__V1__NodeSelectorRequirement *t = tk_nsr(key, op, json_object_get_string(vals));
        r->values = t->values;
        r->n_values = t->n_values;
        t->values = NULL;
        t->n_values = 0;
        tailor__v1__node_selector_requirement__free_unpacked(t, NULL);
    }
    if (jlen(a) > 3)
        r->min_values = (int32_t)json_object_get_int64(jat(a, 3));
    return r;
}

/* "k=v,k2=v2" or {k: v} -> label selector */
static Tailor__V1__LabelSelector *sel_of(json_object *v)
{
    Tailor__V1__LabelSelector *s = calloc(1, sizeof(*s));
    tailor__v1__label_selector__init(s);
    if (!v)
        return s;
    if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, k, val) TK_PUSH(s->match_labels, s->n_match_labels,
                                                      tk_label(k, json_object_get_string(val)));
        return s;
    }
    char *dup = strdup(json_object_get_string(v)), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (eq)
            *eq = 0;
        TK_PUSH(s->match_labels, s->n_match_labels, tk_label(t, eq ? eq + 1 : ""));
    }
    free(dup);
    return s;
}

/* ---- catalogs ---------------------------------------------------------- */

/* One fake instance type, as fake.NewInstanceType builds it. */
typedef struct fake_spec {
    const char *name;
    int64_t cpu_m, mem, pods;
    const char *arch;
    const char *os;                 /* comma list */
    const char *ext_name[2];
    int64_t ext_val[2];
    json_object *offers;            /* [[ct, zone, price?, available?]...] or NULL: the standard five */
    json_object *labels;            /* extra {key: value} */
    double price;                   /* 0 = PriceFromResources */
} fake_spec;

static void fake_type(Tailor__V1__SolveRequest *r, const fake_spec *f)
{
    Tailor__V1__Catalog *c = tk_catalog(r);
    Tailor__V1__InstanceType *it = calloc(1, sizeof(*it));
    tailor__v1__instance_type__init(it);
    it->name = tk_s(f->name);
    it->arch = tk_s(f->arch);
    it->vcpu = (int32_t)(f->cpu_m / 1000);
    it->memory_mib = f->mem / TK_MIB;
    it->max_pods = (int32_t)f->pods;
    it->capacity = tk_rl(f->cpu_m, f->mem, f->pods);
    /* kube-reserved 100m cpu, 10Mi memory */
    it->allocatable = tk_rl(f->cpu_m - 100, f->mem - 10 * TK_MIB, f->pods);
    double price = 0.1 * (double)f->cpu_m / 1000 + 0.1 * (double)f->mem / 1e9;
    for (int i = 0; i < 2; i++)
        if (f->ext_name[i]) {
            tk_rl_ext(it->capacity, f->ext_name[i], f->ext_val[i]);
            tk_rl_ext(it->allocatable, f->ext_name[i], f->ext_val[i]);
            price += 1.0;
        }
    if (f->price > 0)
        price = f->price;
    tk_type_label(it, K_TYPE, f->name);
    tk_type_label(it, "kubernetes.io/arch", f->arch);
    TK_PUSH(it->requirements, it->n_requirements, tk_nsr("kubernetes.io/os", TK_IN, f->os));
    bool large = f->cpu_m > 4000 && f->mem > 8 * TK_GIB;
    tk_type_label(it, "size", large ? "large" : "small");
    if (large)
        tk_type_label(it, "special", "optional");
    char n[32];
    snprintf(n, sizeof n, "%lld", (long long)(f->cpu_m / 1000));
    tk_type_label(it, "integer", n);
    if (f->labels) {
        json_object_object_foreach(f->labels, k, v) tk_type_label(it, k, json_object_get_string(v));
    }
    if (!f->offers) {
        tk_offer(it, "test-zone-1", TK_SPOT, price, true);
        tk_offer(it, "test-zone-2", TK_SPOT, price, true);
        tk_offer(it, "test-zone-1", TK_OD, price, true);
        tk_offer(it, "test-zone-2", TK_OD, price, true);
        tk_offer(it, "test-zone-3", TK_OD, price, true);
    } else {
        for (size_t i = 0; i < jlen(f->offers); i++) {
            json_object *o = jat(f->offers, i);
            double p = jlen(o) > 2 && !json_object_is_type(jat(o, 2), json_type_null)
                       ? json_object_get_double(jat(o, 2)) : price;
            bool avail = jlen(o) > 3 ? json_object_get_boolean(jat(o, 3)) : true;
            tk_offer(it, json_object_get_string(jat(o, 1)), ct_of(json_object_get_string(jat(o, 0))), p, avail);
        }
    }
    TK_PUSH(c->instance_types, c->n_instance_types, it);
}

static void fake_defaults(Tailor__V1__SolveRequest *r)
{
    const fake_spec s[] = {
        { .name = "default-instance-type" },
        { .name = "small-instance-type", .cpu_m = 2000, .mem = 2 * TK_GIB },
        { .name = "gpu-vendor-instance-type", .ext_name = { "fake.com/vendor-a" }, .ext_val = { 2 } },
        { .name = "gpu-vendor-b-instance-type", .ext_name = { "fake.com/vendor-b" }, .ext_val = { 2 } },
        { .name = "arm-instance-type", .arch = "arm64", .os = "ios,linux,windows,darwin", .cpu_m = 16000,
          .mem = 128 * TK_GIB },
        { .name = "single-pod-instance-type", .pods = 1 },
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        fake_spec f = s[i];
        f.cpu_m = f.cpu_m ? f.cpu_m : 4000;
        f.mem = f.mem ? f.mem : 4 * TK_GIB;
        f.pods = f.pods ? f.pods : 5;
        f.arch = f.arch ? f.arch : "amd64";
        f.os = f.os ? f.os : "linux,windows,darwin";
        fake_type(r, &f);
    }
}

static void fake_assorted(Tailor__V1__SolveRequest *r)
{
    static const int cpus[] = { 1, 2, 4, 8, 16, 32, 64 }, mems[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
    static const char *zones[] = { "test-zone-1", "test-zone-2", "test-zone-3" };
    static const char *cts[] = { "spot", "on-demand" }, *oss[] = { "linux", "windows" },
                      *archs[] = { "amd64", "arm64" };
    for (int a = 0; a < 7; a++)
        for (int b = 0; b < 8; b++)
            for (int z = 0; z < 3; z++)
                for (int c = 0; c < 2; c++)
                    for (int o = 0; o < 2; o++)
                        for (int h = 0; h < 2; h++) {
                            char name[128];
                            snprintf(name, sizeof name, "%d-cpu-%d-mem-%s-%s-%s-%s", cpus[a], mems[b], archs[h],
                                     oss[o], zones[z], cts[c]);
                            json_object *offers = json_object_new_array();
                            json_object *one = json_object_new_array();
                            json_object_array_add(one, json_object_new_string(cts[c]));
                            json_object_array_add(one, json_object_new_string(zones[z]));
                            json_object_array_add(offers, one);
                            fake_spec f = { .name = name, .cpu_m = cpus[a] * 1000LL, .mem = mems[b] * TK_GIB,
                                            .pods = 5, .arch = archs[h], .os = oss[o], .offers = offers };
                            fake_type(r, &f);
                            json_object_put(offers);
                        }
}

static void fake_n(Tailor__V1__SolveRequest *r, int n)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "fake-it-%d", i);
        fake_spec f = { .name = name, .cpu_m = (i + 1) * 1000LL, .mem = (i + 1) * 2 * TK_GIB, .pods = (i + 1) * 10,
                        .arch = "amd64", .os = "linux,windows,darwin" };
        fake_type(r, &f);
    }
}

static void types_of(Tailor__V1__SolveRequest *r, json_object *types)
{
    for (size_t i = 0; i < jlen(types); i++) {
        json_object *t = jat(types, i);
        fake_spec f = { .name = jstr(t, "name", "t"), .cpu_m = q_milli(jget(t, "cpu"), 4000),
                        .mem = q_value(jget(t, "mem"), 4 * TK_GIB), .pods = jint(t, "pods", 5),
                        .arch = jstr(t, "arch", "amd64"), .os = jstr(t, "os", "linux,windows,darwin"),
                        .offers = jget(t, "offers"), .labels = jget(t, "labels"),
                        .price = jget(t, "price") ? json_object_get_double(jget(t, "price")) : 0 };
        int ne = 0;
        json_object *ext = jget(t, "ext");
        if (ext) {
            json_object_object_foreach(ext, k, v)
            {
                if (ne < 2) {
                    f.ext_name[ne] = k;
                    f.ext_val[ne++] = json_object_get_int64(v);
                }
            }
        }
        fake_type(r, &f);
    }
}

/* ---- the run-wide state ------------------------------------------------ */

typedef struct suite {
    Tailor__V1__Catalog *aws;  /* owned; lent to the aws cases */
    json_object *cases;        /* owned: every case of every file */
    char dir[1024];
} suite;

static Tailor__V1__Catalog *aws_catalog(suite *s)
{
    if (s->aws)
        return s->aws;
    const char *dir = getenv("TAILOR_SHARED_DATA");
    char path[1200], err[256] = "";
    snprintf(path, sizeof path, "%s/aws-instance-types.json", dir ? dir : "../shared/data");
    static const char *const zones[] = { "test-zone-1a", "test-zone-1b", "test-zone-1c" };
    tlr_catalog_file_opts o = { .region = "us-east-1", .zones = zones, .n_zones = 3 };
    if (tlr_catalog_file_load(path, &o, &s->aws, err, sizeof err) != TLR_OK)
        fail_msg("cannot load %s: %s", path, err);
    return s->aws;
}

/* ---- building a request ------------------------------------------------ */

static Tailor__V1__Pod *pod_of(json_object *j, const char *name)
{
    int64_t cpu = q_milli(jget(j, "cpu"), 0), mem = q_value(jget(j, "mem"), 0);
    Tailor__V1__Pod *p = tk_pod_new(name, 0, 0);
    p->requests->cpu_millis = cpu;
    p->requests->memory_bytes = mem;
    p->requests->ephemeral_storage_bytes = q_value(jget(j, "eph"), 0);
    json_object *ext = jget(j, "ext");
    if (ext) {
        json_object_object_foreach(ext, k, v) tk_pod_ext(p, k, json_object_get_int64(v));
    }
    json_object *o;
    if ((o = jget(j, "init"))) {
        /* an init container bigger than the sum of the regular ones */
        Tailor__V1__ContainerRequests *c[2];
        for (int i = 0; i < 2; i++) {
            c[i] = calloc(1, sizeof(*c[i]));
            tailor__v1__container_requests__init(c[i]);
            c[i]->name = tk_s(i ? "init" : "main");
            c[i]->kind = i ? TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_INIT
                           : TAILOR__V1__CONTAINER_KIND__CONTAINER_KIND_REGULAR;
            c[i]->requests = i ? tk_rl(q_milli(jget(o, "cpu"), 0), q_value(jget(o, "mem"), 0), 0)
                               : tk_rl(cpu, mem, 0);
            TK_PUSH(p->containers, p->n_containers, c[i]);
        }
        tailor__v1__resource_list__free_unpacked(p->requests, NULL);
        p->requests = NULL;
    }
    if ((o = jget(j, "overhead"))) {
        /* RuntimeClass overhead; Pod.requests already counts it (pod.proto) */
        p->overhead = tk_rl(q_milli(jget(o, "cpu"), 0), q_value(jget(o, "mem"), 0), 0);
        if (p->requests) {
            p->requests->cpu_millis += p->overhead->cpu_millis;
            p->requests->memory_bytes += p->overhead->memory_bytes;
        }
    }
    if ((o = jget(j, "labels"))) {
        json_object_object_foreach(o, k, v) tk_pod_label(p, k, json_object_get_string(v));
    }
    if ((o = jget(j, "sel"))) {
        json_object_object_foreach(o, k, v) tk_pod_selector(p, k, json_object_get_string(v));
    }
    /* req: one required term, its expressions ANDed (test.PodOptions
     * NodeRequirements); terms: ORed terms */
    if ((o = jget(j, "req"))) {
        Tailor__V1__NodeSelectorTerm *t = calloc(1, sizeof(*t));
        tailor__v1__node_selector_term__init(t);
        for (size_t i = 0; i < jlen(o); i++)
            TK_PUSH(t->match_expressions, t->n_match_expressions, nsr_of(jat(o, i)));
        TK_PUSH(p->required_node_affinity, p->n_required_node_affinity, t);
    }
    if ((o = jget(j, "terms")))
        for (size_t k = 0; k < jlen(o); k++) {
            Tailor__V1__NodeSelectorTerm *t = calloc(1, sizeof(*t));
            tailor__v1__node_selector_term__init(t);
            for (size_t i = 0; i < jlen(jat(o, k)); i++)
                TK_PUSH(t->match_expressions, t->n_match_expressions, nsr_of(jat(jat(o, k), i)));
            TK_PUSH(p->required_node_affinity, p->n_required_node_affinity, t);
        }
    /* pref: one preferred term of weight 1 (NodePreferences); prefs:
     * [{w, exprs}] */
    json_object *prefs = jget(j, "prefs");
    if ((o = jget(j, "pref"))) {
        prefs = json_object_new_array();
        json_object *one = json_object_new_object();
        json_object_object_add(one, "w", json_object_new_int(1));
        json_object_object_add(one, "exprs", json_object_get(o));
        json_object_array_add(prefs, one);
    }
    for (size_t k = 0; k < jlen(prefs); k++) {
        json_object *e = jat(prefs, k);
        Tailor__V1__PreferredSchedulingTerm *t = calloc(1, sizeof(*t));
        tailor__v1__preferred_scheduling_term__init(t);
        t->weight = (int32_t)jint(e, "w", 1);
        t->preference = calloc(1, sizeof(*t->preference));
        tailor__v1__node_selector_term__init(t->preference);
        json_object *ex = jget(e, "exprs");
        for (size_t i = 0; i < jlen(ex); i++)
            TK_PUSH(t->preference->match_expressions, t->preference->n_match_expressions, nsr_of(jat(ex, i)));
        TK_PUSH(p->preferred_node_affinity, p->n_preferred_node_affinity, t);
    }
    if (o && prefs)
        json_object_put(prefs);
    if ((o = jget(j, "tol")))
        for (size_t i = 0; i < jlen(o); i++) {
            json_object *t = jat(o, i);
            const char *k = jlen(t) > 0 ? json_object_get_string(jat(t, 0)) : NULL;
            const char *v = jlen(t) > 1 && !json_object_is_type(jat(t, 1), json_type_null)
                            ? json_object_get_string(jat(t, 1)) : NULL;
            const char *e = jlen(t) > 2 ? json_object_get_string(jat(t, 2)) : NULL;
            tk_pod_tolerate(p, k, v, effect_of(e));
        }
    if ((o = jget(j, "spread")))
        for (size_t i = 0; i < jlen(o); i++) {
            json_object *s = jat(o, i);
            Tailor__V1__TopologySpreadConstraint *t = calloc(1, sizeof(*t));
            tailor__v1__topology_spread_constraint__init(t);
            t->max_skew = (int32_t)jint(s, "skew", 1);
            t->topology_key = tk_s(jstr(s, "key", K_ZONE));
            t->when_unsatisfiable =
                jbool(s, "soft", false)
                ? TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_SCHEDULE_ANYWAY
                : TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE;
            t->label_selector = sel_of(jget(s, "sel"));
            t->min_domains = (int32_t)jint(s, "min_domains", 0);
            const char *pol = jstr(s, "affinity_policy", NULL);
            if (pol)
                t->node_affinity_policy = !strcmp(pol, "Ignore")
                                          ? TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_IGNORE
                                          : TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_HONOR;
            pol = jstr(s, "taints_policy", NULL);
            if (pol)
                t->node_taints_policy = !strcmp(pol, "Ignore")
                                        ? TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_IGNORE
                                        : TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_HONOR;
            json_object *mlk = jget(s, "match_label_keys");
            for (size_t m = 0; m < jlen(mlk); m++)
                TK_PUSH(t->match_label_keys, t->n_match_label_keys, tk_s(json_object_get_string(jat(mlk, m))));
            TK_PUSH(p->topology_spread_constraints, p->n_topology_spread_constraints, t);
        }
    /* aff / anti: [{key, sel}]; paff / panti: [{key, sel, w}] */
    static const char *const kinds[4] = { "aff", "anti", "paff", "panti" };
    for (int kind = 0; kind < 4; kind++) {
        json_object *a = jget(j, kinds[kind]);
        for (size_t i = 0; i < jlen(a); i++) {
            json_object *e = jat(a, i);
            bool anti = kind & 1;
            Tailor__V1__PodAffinity **pa = anti ? &p->pod_anti_affinity : &p->pod_affinity;
            if (!*pa) {
                *pa = calloc(1, sizeof(**pa));
                tailor__v1__pod_affinity__init(*pa);
            }
            Tailor__V1__PodAffinityTerm *t = calloc(1, sizeof(*t));
            tailor__v1__pod_affinity_term__init(t);
            t->topology_key = tk_s(jstr(e, "key", K_ZONE));
            t->label_selector = sel_of(jget(e, "sel"));
            json_object *ns = jget(e, "namespaces");
            for (size_t m = 0; m < jlen(ns); m++)
                TK_PUSH(t->namespaces, t->n_namespaces, tk_s(json_object_get_string(jat(ns, m))));
            if (kind < 2) {
                TK_PUSH((*pa)->required, (*pa)->n_required, t);
            } else {
                Tailor__V1__WeightedPodAffinityTerm *wt = calloc(1, sizeof(*wt));
                tailor__v1__weighted_pod_affinity_term__init(wt);
                wt->weight = (int32_t)jint(e, "w", 1);
                wt->term = t;
                TK_PUSH((*pa)->preferred, (*pa)->n_preferred, wt);
            }
        }
    }
    if ((o = jget(j, "ports")))
        for (size_t i = 0; i < jlen(o); i++)
            tk_pod_port(p, (int)json_object_get_int64(jat(o, i)));
    if (jget(j, "namespace")) {
        free(p->namespace_);
        p->namespace_ = tk_s(jstr(j, "namespace", "default"));
    }
    p->priority = (int32_t)jint(j, "priority", 0);
    return p;
}

/* Call fn for each pod of list (a pod with count: n expands to name-0 ..
 * name-(n-1)). */
static void pods_each(json_object *list, void (*fn)(void *, Tailor__V1__Pod *), void *arg)
{
    for (size_t i = 0; i < jlen(list); i++) {
        json_object *j = jat(list, i);
        int64_t n = jint(j, "count", 1);
        const char *name = jstr(j, "name", "pod");
        for (int64_t k = 0; k < n; k++) {
            char nm[128];
            if (jget(j, "count"))
                snprintf(nm, sizeof nm, "%s-%lld", name, (long long)k);
            else
                snprintf(nm, sizeof nm, "%s", name);
            fn(arg, pod_of(j, nm));
        }
    }
}

static void add_pending(void *arg, Tailor__V1__Pod *p)
{
    Tailor__V1__SolveRequest *r = arg;
    TK_PUSH(r->pending_pods, r->n_pending_pods, p);
}

static void add_running(void *arg, Tailor__V1__Pod *p)
{
    Tailor__V1__Node *n = arg;
    p->node_name = tk_s(n->name);
    p->phase = TAILOR__V1__POD_PHASE__POD_PHASE_RUNNING;
    p->unschedulable = false;
    if (p->requests) {
        n->requested->cpu_millis += p->requests->cpu_millis;
        n->requested->memory_bytes += p->requests->memory_bytes;
    }
    n->requested->pods++;
    TK_PUSH(n->pods, n->n_pods, p);
}

static void pool_of(Tailor__V1__SolveRequest *r, json_object *j)
{
    Tailor__V1__NodePool *p = tk_pool(r, jstr(j, "name", "default"), (int)jint(j, "weight", 0));
    json_object *o;
    if ((o = jget(j, "reqs")))
        for (size_t i = 0; i < jlen(o); i++)
            TK_PUSH(p->requirements, p->n_requirements, nsr_of(jat(o, i)));
    if ((o = jget(j, "labels"))) {
        json_object_object_foreach(o, k, v) TK_PUSH(p->labels, p->n_labels, tk_label(k, json_object_get_string(v)));
    }
    if ((o = jget(j, "taints")))
        for (size_t i = 0; i < jlen(o); i++) {
            json_object *t = jat(o, i);
            tk_pool_taint(p, json_object_get_string(jat(t, 0)),
                          json_object_is_type(jat(t, 1), json_type_null) ? "" : json_object_get_string(jat(t, 1)),
                          effect_of(json_object_get_string(jat(t, 2))));
        }
    if ((o = jget(j, "startup_taints")))
        for (size_t i = 0; i < jlen(o); i++) {
            json_object *t = jat(o, i);
            TK_PUSH(p->startup_taints, p->n_startup_taints,
                    tk_taint(json_object_get_string(jat(t, 0)), json_object_get_string(jat(t, 1)),
                             effect_of(json_object_get_string(jat(t, 2)))));
        }
    if ((o = jget(j, "limits"))) {
        p->limits = calloc(1, sizeof(*p->limits));
        tailor__v1__node_pool_limits__init(p->limits);
        if (jget(o, "cpu")) {
            p->limits->has_cpu = true;
            p->limits->cpu_millis = q_milli(jget(o, "cpu"), 0);
        }
        if (jget(o, "memory")) {
            p->limits->has_memory = true;
            p->limits->memory_bytes = q_value(jget(o, "memory"), 0);
        }
        if (jget(o, "pods")) {
            p->limits->has_pods = true;
            p->limits->pods = jint(o, "pods", 0);
        }
        if (jget(o, "nodes")) {
            p->limits->has_nodes = true;
            p->limits->nodes = jint(o, "nodes", 0);
        }
    }
    if ((o = jget(j, "usage"))) {
        p->status = calloc(1, sizeof(*p->status));
        tailor__v1__node_pool_status__init(p->status);
        p->status->ready = true;
        p->status->usage = tk_rl(q_milli(jget(o, "cpu"), 0), q_value(jget(o, "memory"), 0), jint(o, "pods", 0));
        p->status->nodes = jint(o, "nodes", 0);
    }
    if (jget(j, "ready") && !jbool(j, "ready", true)) {
        if (!p->status) {
            p->status = calloc(1, sizeof(*p->status));
            tailor__v1__node_pool_status__init(p->status);
        }
        p->status->ready = false;
        /* as Karpenter's test: the Ready condition set False */
        Tailor__V1__Condition *c = calloc(1, sizeof(*c));
        tailor__v1__condition__init(c);
        c->type = tk_s("Ready");
        c->status = TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE;
        c->reason = tk_s("NodeClassNotReady");
        p->status->conditions = calloc(1, sizeof(*p->status->conditions));
        p->status->conditions[0] = c;
        p->status->n_conditions = 1;
    }
}

/* Karpenter's in-flight node cases make the node with its NodeClaim
 * (bindings.Get(pod).NodeClaim), registered and not yet initialized; a
 * node without a claim is not Karpenter's (StateNode.Managed) and counts
 * as initialized.  So a pool node the case marks uninitialized gets its
 * claim: linked by name, with its NodePool's startup taints, the node
 * labelled registered. */
static void claim_for_node(Tailor__V1__SolveRequest *r, Tailor__V1__Node *n, const char *type,
                           const char *zone)
{
    char name[256];
    snprintf(name, sizeof(name), "%s-claim", n->name);
    Tailor__V1__NodeClaim *c = tk_inflight(r, name, n->nodepool, type ? type : "default-instance-type", zone);
    for (size_t i = 0; i < r->cluster->n_nodepools; i++) {
        const Tailor__V1__NodePool *np = r->cluster->nodepools[i];
        if (strcmp(np->name, n->nodepool))
            continue;
        for (size_t k = 0; k < np->n_startup_taints; k++)
            TK_PUSH(c->startup_taints, c->n_startup_taints,
                    tk_taint(np->startup_taints[k]->key, np->startup_taints[k]->value,
                             np->startup_taints[k]->effect));
    }
    c->status = calloc(1, sizeof(*c->status));
    tailor__v1__node_claim_status__init(c->status);
    c->status->node_name = tk_s(n->name);
    c->status->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_REGISTERED;
    n->nodeclaim_name = tk_s(name);
    TK_PUSH(n->labels, n->n_labels, tk_label("karpenter.sh/registered", "true"));
}

static void node_of(Tailor__V1__SolveRequest *r, json_object *j)
{
    const char *name = jstr(j, "name", "node");
    Tailor__V1__Node *n = tk_node(r, name, jstr(j, "zone", "test-zone-1"), q_milli(jget(j, "cpu"), 4000), 0);
    n->allocatable->memory_bytes = n->capacity->memory_bytes = q_value(jget(j, "mem"), 4 * TK_GIB);
    n->allocatable->pods = n->capacity->pods = jint(j, "pods", 110);
    const char *type = jstr(j, "type", NULL);
    if (type) {
        n->instance_type = tk_s(type);
        TK_PUSH(n->labels, n->n_labels, tk_label(K_TYPE, type));
    }
    const char *pool = jstr(j, "pool", NULL);
    if (pool) {
        n->managed = true;
        n->nodepool = tk_s(pool);
        TK_PUSH(n->labels, n->n_labels, tk_label("karpenter.sh/nodepool", pool));
    }
    const char *ct = jstr(j, "ct", NULL);
    if (ct) {
        n->capacity_type = ct_of(ct);
        TK_PUSH(n->labels, n->n_labels, tk_label(K_CT, ct));
    }
    json_object *o;
    if ((o = jget(j, "labels"))) {
        json_object_object_foreach(o, k, v) TK_PUSH(n->labels, n->n_labels, tk_label(k, json_object_get_string(v)));
    }
    if ((o = jget(j, "taints")))
        for (size_t i = 0; i < jlen(o); i++) {
            json_object *t = jat(o, i);
            TK_PUSH(n->taints, n->n_taints,
                    tk_taint(json_object_get_string(jat(t, 0)),
                             json_object_is_type(jat(t, 1), json_type_null) ? "" : json_object_get_string(jat(t, 1)),
                             effect_of(json_object_get_string(jat(t, 2)))));
        }
    n->ready = jbool(j, "ready", true);
    n->initialized = jbool(j, "initialized", true);
    n->unschedulable = jbool(j, "unschedulable", false);
    n->marked_for_deletion = jbool(j, "deleting", false);
    pods_each(jget(j, "running"), add_running, n);
    if (pool && !n->initialized)
        claim_for_node(r, n, type, jstr(j, "zone", "test-zone-1"));
}

static void inflight_of(Tailor__V1__SolveRequest *r, json_object *j)
{
    Tailor__V1__NodeClaim *c = tk_inflight(r, jstr(j, "name", "claim"), jstr(j, "pool", "default"),
                                           jstr(j, "type", "default-instance-type"), jstr(j, "zone", "test-zone-1"));
    const char *ct = jstr(j, "ct", NULL);
    if (ct)
        TK_PUSH(c->requirements, c->n_requirements, tk_nsr(K_CT, TK_IN, ct));
    json_object *o;
    if ((o = jget(j, "labels"))) {
        json_object_object_foreach(o, k, v) TK_PUSH(c->labels, c->n_labels, tk_label(k, json_object_get_string(v)));
    }
    c->resources_requested->cpu_millis = q_milli(jget(j, "requested_cpu"), 0);
}

static Tailor__V1__SolveRequest *request_of(suite *s, json_object *c, bool *borrowed)
{
    Tailor__V1__SolveRequest *r = tk_new();
    const char *cat = jstr(c, "catalog", "fake");
    *borrowed = false;
    if (jget(c, "types"))
        types_of(r, jget(c, "types"));
    else if (!strcmp(cat, "fake"))
        fake_defaults(r);
    else if (!strcmp(cat, "assorted"))
        fake_assorted(r);
    else if (!strncmp(cat, "fake-", 5))
        fake_n(r, atoi(cat + 5));
    else if (!strcmp(cat, "aws")) {
        Tailor__V1__CatalogRef *ref = calloc(1, sizeof(*ref));
        tailor__v1__catalog_ref__init(ref);
        ref->catalog = aws_catalog(s);
        ref->hash = tk_s(ref->catalog->hash);
        TK_PUSH(ref->node_classes, ref->n_node_classes, tk_s("default"));
        TK_PUSH(r->catalogs, r->n_catalogs, ref);
        *borrowed = true;
    } else
        fail_msg("unknown catalog %s", cat);
    json_object *pools = jget(c, "pools");
    if (!pools) {
        /* the suite's default NodePool */
        Tailor__V1__NodePool *p = tk_pool(r, "default", 0);
        tk_pool_req(p, K_CT, TK_IN, "spot,on-demand,reserved", 0);
    }
    for (size_t i = 0; i < jlen(pools); i++)
        pool_of(r, jat(pools, i));
    json_object *o;
    if ((o = jget(c, "nodes")))
        for (size_t i = 0; i < jlen(o); i++)
            node_of(r, jat(o, i));
    if ((o = jget(c, "inflight")))
        for (size_t i = 0; i < jlen(o); i++)
            inflight_of(r, jat(o, i));
    if ((o = jget(c, "daemonsets")))
        for (size_t i = 0; i < jlen(o); i++) {
            Tailor__V1__Pod *t = pod_of(jat(o, i), "");
            t->is_daemonset = true;
            Tailor__V1__DaemonSet *d = calloc(1, sizeof(*d));
            tailor__v1__daemon_set__init(d);
            d->name = tk_s(jstr(jat(o, i), "name", "ds"));
            d->namespace_ = tk_s("kube-system");
            d->pod_template = t;
            TK_PUSH(r->cluster->daemonsets, r->cluster->n_daemonsets, d);
        }
    pods_each(jget(c, "pods"), add_pending, r);
    if ((o = jget(c, "unavailable")))
        for (size_t i = 0; i < jlen(o); i++) {
            json_object *u = jat(o, i);
            Tailor__V1__OfferingUnavailable *x = calloc(1, sizeof(*x));
            tailor__v1__offering_unavailable__init(x);
            x->instance_type = tk_s(json_object_get_string(jat(u, 0)));
            x->zone = tk_s(json_object_get_string(jat(u, 1)));
            x->capacity_type = ct_of(json_object_get_string(jat(u, 2)));
            x->until_unix_ms = r->now_unix_ms + 3600000;
            TK_PUSH(r->unavailable_offerings, r->n_unavailable_offerings, x);
        }
    return r;
}

/* ---- reading the plan -------------------------------------------------- */

/* Where a pod went.  kind: 0 nowhere, 1 existing node, 2 in-flight claim,
 * 3 new claim. */
typedef struct placement {
    const char *pod;
    int kind;
    const char *target;                        /* node or in-flight claim name */
    const Tailor__V1__NodeClaim *claim;        /* new claim */
    int claim_idx;
} placement;

typedef struct plan {
    const Tailor__V1__SolveRequest *req;
    const Tailor__V1__SolveResponse *resp;
    placement pl[MAXPL];
    int npl;
} plan;

static const Tailor__V1__InstanceType *type_find(const Tailor__V1__SolveRequest *r, const char *name)
{
    for (size_t c = 0; c < r->n_catalogs; c++) {
        const Tailor__V1__Catalog *cat = r->catalogs[c]->catalog;
        for (size_t i = 0; i < cat->n_instance_types; i++)
            if (!strcmp(cat->instance_types[i]->name, name))
                return cat->instance_types[i];
    }
    return NULL;
}

static const Tailor__V1__NodeSelectorRequirement *req_find(Tailor__V1__NodeSelectorRequirement **rs, size_t n,
                                                           const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rs[i]->key, key) && rs[i]->operator_ == TK_IN)
            return rs[i];
    return NULL;
}

static bool in_list(const Tailor__V1__NodeSelectorRequirement *q, const char *v)
{
    if (!q)
        return true;
    for (size_t i = 0; i < q->n_values; i++)
        if (!strcmp(q->values[i], v))
            return true;
    return false;
}

/* The node Karpenter launches for claim c: the cheapest offering of its
 * options in a zone and capacity type it allows.  Writes the type and
 * offering; false when none. */
static bool launched(const Tailor__V1__SolveRequest *r, const Tailor__V1__NodeClaim *c,
                     const Tailor__V1__InstanceType **type, const Tailor__V1__Offering **off)
{
    const Tailor__V1__NodeSelectorRequirement *zq = req_find(c->requirements, c->n_requirements, K_ZONE);
    const Tailor__V1__NodeSelectorRequirement *cq = req_find(c->requirements, c->n_requirements, K_CT);
    double best = 1e300;
    *type = NULL;
    *off = NULL;
    for (size_t i = 0; i < c->n_instance_type_options; i++) {
        const Tailor__V1__InstanceType *t = type_find(r, c->instance_type_options[i]->name);
        for (size_t k = 0; t && k < t->n_offerings; k++) {
            const Tailor__V1__Offering *o = t->offerings[k];
            if (!o->available || !in_list(zq, o->zone) || !in_list(cq, ct_name(o->capacity_type)))
                continue;
            if (o->price_per_hour < best) {
                best = o->price_per_hour;
                *type = t;
                *off = o;
            }
        }
    }
    return *type != NULL;
}

/* The value of label key on the node pod i is on; NULL when absent. */
static const char *node_label(const plan *pl, int i, const char *key, char *buf, size_t len)
{
    const placement *p = &pl->pl[i];
    if (p->kind == 1) {
        for (size_t n = 0; n < pl->req->cluster->n_nodes; n++) {
            const Tailor__V1__Node *nd = pl->req->cluster->nodes[n];
            if (strcmp(nd->name, p->target))
                continue;
            for (size_t l = 0; l < nd->n_labels; l++)
                if (!strcmp(nd->labels[l]->key, key))
                    return nd->labels[l]->value;
        }
        return NULL;
    }
    if (p->kind == 2) {
        for (size_t n = 0; n < pl->req->cluster->n_nodeclaims; n++) {
            const Tailor__V1__NodeClaim *c = pl->req->cluster->nodeclaims[n];
            if (strcmp(c->name, p->target))
                continue;
            if (!strcmp(key, K_HOST))
                return c->name;
            for (size_t l = 0; l < c->n_labels; l++)
                if (!strcmp(c->labels[l]->key, key))
                    return c->labels[l]->value;
            const Tailor__V1__NodeSelectorRequirement *q = req_find(c->requirements, c->n_requirements, key);
            return q && q->n_values ? q->values[0] : NULL;
        }
        return NULL;
    }
    if (p->kind != 3)
        return NULL;
    const Tailor__V1__NodeClaim *c = p->claim;
    if (!strcmp(key, K_HOST)) {
        snprintf(buf, len, "new-%d", p->claim_idx);
        return buf;
    }
    for (size_t l = 0; l < c->n_labels; l++)
        if (!strcmp(c->labels[l]->key, key))
            return c->labels[l]->value;
    const Tailor__V1__InstanceType *t;
    const Tailor__V1__Offering *o;
    if (!launched(pl->req, c, &t, &o))
        return NULL;
    if (!strcmp(key, K_ZONE))
        return o->zone;
    if (!strcmp(key, K_CT))
        return ct_name(o->capacity_type);
    const Tailor__V1__NodeSelectorRequirement *q = req_find(t->requirements, t->n_requirements, key);
    if (q && q->n_values)
        return q->values[0];
    /* the claim's requirements on key that leave one value make a label */
    const char *only = NULL;
    bool any = false;
    for (size_t r = 0; r < c->n_requirements; r++) {
        q = c->requirements[r];
        if (strcmp(q->key, key) || q->operator_ != TK_IN)
            continue;
        for (size_t v = 0; v < q->n_values; v++) {
            bool all = true;
            for (size_t k = 0; k < c->n_requirements && all; k++) {
                const Tailor__V1__NodeSelectorRequirement *o2 = c->requirements[k];
                if (strcmp(o2->key, key))
                    continue;
                bool in = false;
                for (size_t w = 0; w < o2->n_values && !in; w++)
                    in = !strcmp(o2->values[w], q->values[v]);
                all = o2->operator_ == TK_IN ? in : o2->operator_ == TK_NOTIN ? !in : true;
            }
            if (!all)
                continue;
            if (any && strcmp(only, q->values[v]))
                return NULL;   /* more than one value left */
            only = q->values[v];
            any = true;
        }
    }
    return only;
}

static void plan_read(plan *pl, const Tailor__V1__SolveRequest *req, const Tailor__V1__SolveResponse *resp)
{
    pl->req = req;
    pl->resp = resp;
    pl->npl = 0;
    for (size_t i = 0; i < req->n_pending_pods && pl->npl < MAXPL; i++) {
        placement *p = &pl->pl[pl->npl++];
        memset(p, 0, sizeof *p);
        p->pod = req->pending_pods[i]->uid;
        for (size_t b = 0; b < resp->n_bindings; b++) {
            const Tailor__V1__Binding *x = resp->bindings[b];
            if (strcmp(x->pod_uid, p->pod))
                continue;
            bool node = x->target_case == TAILOR__V1__BINDING__TARGET_NODE_NAME;
            p->kind = node ? 1 : 2;
            p->target = node ? x->node_name : x->nodeclaim_name;
        }
        int c = tk_claim_of(resp, p->pod);
        if (c >= 0) {
            p->kind = 3;
            p->claim = resp->new_nodeclaims[c];
            p->claim_idx = c;
        }
    }
}

static int pl_find(const plan *pl, const char *pod)
{
    for (int i = 0; i < pl->npl; i++)
        if (!strcmp(pl->pl[i].pod, pod))
            return i;
    return -1;
}

static void pl_where(const plan *pl, int i, char *buf, size_t len)
{
    const placement *p = &pl->pl[i];
    switch (p->kind) {
    case 1: snprintf(buf, len, "node:%s", p->target); break;
    case 2: snprintf(buf, len, "inflight:%s", p->target); break;
    case 3: snprintf(buf, len, "new-%d", p->claim_idx); break;
    default: snprintf(buf, len, "unscheduled"); break;
    }
}

/* ---- checking the wants ------------------------------------------------ */

typedef struct report {
    char buf[4096];
    size_t len;
    int n;
} report;

static void miss(report *rp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (rp->len < sizeof rp->buf - 2) {
        int w = vsnprintf(rp->buf + rp->len, sizeof rp->buf - rp->len, fmt, ap);
        rp->len += w > 0 ? (size_t)w : 0;
        if (rp->len < sizeof rp->buf - 1) {
            rp->buf[rp->len++] = '\n';
            rp->buf[rp->len] = 0;
        } else
            rp->len = sizeof rp->buf - 1;
    }
    va_end(ap);
    rp->n++;
}

/* want "v": exactly v; "a|b": one of; "!": absent; "!v": anything but v. */
static bool label_ok(const char *want, const char *got)
{
    if (!strcmp(want, "!"))
        return !got;
    if (want[0] == '!')
        return !got || strcmp(got, want + 1);
    if (!got)
        return false;
    char *dup = strdup(want), *save = NULL;
    bool ok = false;
    for (char *t = strtok_r(dup, "|", &save); t && !ok; t = strtok_r(NULL, "|", &save))
        ok = !strcmp(t, got);
    free(dup);
    return ok;
}

/* The pods a want names: a list, a single name, "all", or a prefix
 * "name-*" for counted pods. */
static int names_of(const plan *pl, json_object *v, const char **out, int max)
{
    int n = 0;
    if (!v)
        return 0;
    if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < jlen(v); i++)
            n += names_of(pl, jat(v, i), out + n, max - n);
        return n;
    }
    const char *s = json_object_get_string(v);
    size_t sl = strlen(s);
    if (!strcmp(s, "all")) {
        for (int i = 0; i < pl->npl && n < max; i++)
            out[n++] = pl->pl[i].pod;
        return n;
    }
    if (sl > 1 && s[sl - 1] == '*') {
        for (int i = 0; i < pl->npl && n < max; i++)
            if (!strncmp(pl->pl[i].pod, s, sl - 1))
                out[n++] = pl->pl[i].pod;
        return n;
    }
    if (n < max)
        out[n++] = s;
    return n;
}

static int cmp_int_desc(const void *a, const void *b)
{
    return *(const int *)b - *(const int *)a;
}

/* Group the pods named by v by placement; counts[] sorted descending. */
static int group_counts(const plan *pl, json_object *sel, int *counts, int max)
{
    const char *names[MAXPL];
    int nn = names_of(pl, sel, names, MAXPL);
    char keys[MAXPL][64];
    int nk = 0;
    for (int i = 0; i < nn; i++) {
        int x = pl_find(pl, names[i]);
        if (x < 0 || !pl->pl[x].kind)
            continue;
        char w[64];
        pl_where(pl, x, w, sizeof w);
        int k = 0;
        while (k < nk && strcmp(keys[k], w))
            k++;
        if (k == nk && nk < max) {
            snprintf(keys[nk], sizeof keys[nk], "%s", w);
            counts[nk++] = 0;
        }
        if (k < max)
            counts[k]++;
    }
    qsort(counts, (size_t)nk, sizeof(int), cmp_int_desc);
    return nk;
}

static bool pod_matches(const Tailor__V1__Pod *p, const char *sel)
{
    bool ok = true;
    char *dup = strdup(sel), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (eq)
            *eq = 0;
        bool found = false;
        for (size_t l = 0; l < p->n_labels && !found; l++)
            found = !strcmp(p->labels[l]->key, t) && (!eq || !strcmp(p->labels[l]->value, eq + 1));
        ok = found;
    }
    free(dup);
    return ok;
}

/* Karpenter's ExpectSkew: pods matching sel, counted by the value of key on
 * their node (existing pods included); zero domains are not listed. */
static int skew_counts(const plan *pl, const char *key, const char *sel, int *counts, int max,
                       char vals[][64])
{
    int nv = 0;
    char buf[64];
    const Tailor__V1__ClusterState *cs = pl->req->cluster;
    for (size_t n = 0; n < cs->n_nodes; n++) {
        const Tailor__V1__Node *nd = cs->nodes[n];
        const char *v = NULL;
        for (size_t l = 0; l < nd->n_labels; l++)
            if (!strcmp(nd->labels[l]->key, key))
                v = nd->labels[l]->value;
        for (size_t k = 0; v && k < nd->n_pods; k++) {
            if (!pod_matches(nd->pods[k], sel))
                continue;
            int i = 0;
            while (i < nv && strcmp(vals[i], v))
                i++;
            if (i == nv && nv < max) {
                snprintf(vals[nv], 64, "%s", v);
                counts[nv++] = 0;
            }
            if (i < max)
                counts[i]++;
        }
    }
    for (int i = 0; i < pl->npl; i++) {
        if (!pl->pl[i].kind || !pod_matches(pl->req->pending_pods[i], sel))
            continue;
        const char *v = node_label(pl, i, key, buf, sizeof buf);
        if (!v)
            continue;
        int k = 0;
        while (k < nv && strcmp(vals[k], v))
            k++;
        if (k == nv && nv < max) {
            snprintf(vals[nv], 64, "%s", v);
            counts[nv++] = 0;
        }
        if (k < max)
            counts[k]++;
    }
    return nv;
}

static void counts_str(const int *c, int n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%d", i ? "," : "", c[i]);
}

static void want_counts(json_object *w, int *c, int *n)
{
    *n = 0;
    for (size_t i = 0; i < jlen(w) && *n < 64; i++)
        c[(*n)++] = (int)json_object_get_int64(jat(w, i));
    qsort(c, (size_t)*n, sizeof(int), cmp_int_desc);
}

static void check_wants(const plan *pl, json_object *w, report *rp)
{
    const char *names[MAXPL];
    char where[64], buf[64];
    int n;
    n = names_of(pl, jget(w, "scheduled"), names, MAXPL);
    for (int i = 0; i < n; i++) {
        int x = pl_find(pl, names[i]);
        if (x < 0)
            miss(rp, "scheduled: no pod %s", names[i]);
        else if (!pl->pl[x].kind)
            miss(rp, "scheduled %s: got unscheduled (%s)", names[i],
                 tk_reasons(tk_error_of(pl->resp, names[i])));
    }
    n = names_of(pl, jget(w, "unscheduled"), names, MAXPL);
    for (int i = 0; i < n; i++) {
        int x = pl_find(pl, names[i]);
        if (x < 0)
            miss(rp, "unscheduled: no pod %s", names[i]);
        else if (pl->pl[x].kind) {
            pl_where(pl, x, where, sizeof where);
            miss(rp, "unscheduled %s: got %s", names[i], where);
        }
    }
    /* Ignored: Karpenter's provisioner drops the pod before scheduling
     * (its Validate); want the solver's "Ignored" error. */
    n = names_of(pl, jget(w, "ignored"), names, MAXPL);
    for (int i = 0; i < n; i++) {
        const Tailor__V1__PodError *e = tk_error_of(pl->resp, names[i]);
        if (!e || !e->status || strcmp(e->status->reason, "Ignored") != 0)
            miss(rp, "ignored %s: got %s", names[i],
                 e && e->status ? e->status->reason : "no pod error");
    }
    json_object *o;
    if ((o = jget(w, "claims")) && (int64_t)pl->resp->n_new_nodeclaims != json_object_get_int64(o))
        miss(rp, "claims: got %zu, want %lld", pl->resp->n_new_nodeclaims, (long long)json_object_get_int64(o));
    if ((o = jget(w, "bound"))) {
        json_object_object_foreach(o, pod, node)
        {
            int x = pl_find(pl, pod);
            const char *want = json_object_get_string(node);
            if (x < 0) {
                miss(rp, "bound: no pod %s", pod);
                continue;
            }
            pl_where(pl, x, where, sizeof where);
            /* "node:n", "inflight:c", "new" (any new claim) */
            bool ok = !strcmp(want, "new") ? pl->pl[x].kind == 3 : !strcmp(where, want);
            if (!ok)
                miss(rp, "bound %s: got %s, want %s", pod, where, want);
        }
    }
    /* same / diff: groups of pods on one node / on distinct nodes */
    static const char *const gk[2] = { "same", "diff" };
    for (int g = 0; g < 2; g++) {
        json_object *groups = jget(w, gk[g]);
        for (size_t k = 0; k < jlen(groups); k++) {
            n = names_of(pl, jat(groups, k), names, MAXPL);
            char first[64] = "";
            for (int i = 0; i < n; i++) {
                int x = pl_find(pl, names[i]);
                if (x < 0 || !pl->pl[x].kind) {
                    miss(rp, "%s: %s not placed", gk[g], names[i]);
                    continue;
                }
                pl_where(pl, x, where, sizeof where);
                if (!g) {
                    if (!first[0])
                        snprintf(first, sizeof first, "%s", where);
                    else if (strcmp(first, where))
                        miss(rp, "same: %s on %s, not with the others on %s", names[i], where, first);
                } else {
                    for (int j = 0; j < i; j++) {
                        int y = pl_find(pl, names[j]);
                        char w2[64];
                        if (y < 0 || !pl->pl[y].kind)
                            continue;
                        pl_where(pl, y, w2, sizeof w2);
                        if (!strcmp(w2, where))
                            miss(rp, "diff: %s and %s both on %s", names[i], names[j], where);
                    }
                }
            }
        }
    }
    /* node: {pod-or-pattern: {key: want}} on the node each pod runs on */
    if ((o = jget(w, "node"))) {
        json_object_object_foreach(o, podsel, kv)
        {
            json_object *ps = json_object_new_string(podsel);
            n = names_of(pl, ps, names, MAXPL);
            for (int i = 0; i < n; i++) {
                int x = pl_find(pl, names[i]);
                if (x < 0 || !pl->pl[x].kind) {
                    miss(rp, "node %s: not placed", names[i]);
                    continue;
                }
                json_object_object_foreach(kv, key, val)
                {
                    const char *got = node_label(pl, x, key, buf, sizeof buf);
                    if (!label_ok(json_object_get_string(val), got))
                        miss(rp, "node %s: %s=%s, want %s", names[i], key, got ? got : "(absent)",
                             json_object_get_string(val));
                }
            }
            json_object_put(ps);   /* names[] point into it */
        }
    }
    /* options: {pod: {key: want}}: every instance-type option of the pod's
     * new claim has that label (as the claim's CreateCall would) */
    if ((o = jget(w, "options"))) {
        json_object_object_foreach(o, podsel, kv)
        {
            json_object *ps = json_object_new_string(podsel);
            n = names_of(pl, ps, names, MAXPL);
            for (int i = 0; i < n; i++) {
                int x = pl_find(pl, names[i]);
                if (x < 0 || pl->pl[x].kind != 3) {
                    miss(rp, "options %s: not on a new claim", names[i]);
                    continue;
                }
                const Tailor__V1__NodeClaim *c = pl->pl[x].claim;
                json_object_object_foreach(kv, key, val)
                {
                    const char *want = json_object_get_string(val);
                    if (!strcmp(key, "count")) {
                        if (c->n_instance_type_options != (size_t)json_object_get_int64(val))
                            miss(rp, "options %s: %zu types, want %s", names[i], c->n_instance_type_options, want);
                        continue;
                    }
                    if (!strcmp(key, "min_count")) {
                        if (c->n_instance_type_options < (size_t)json_object_get_int64(val))
                            miss(rp, "options %s: %zu types, want >= %s", names[i], c->n_instance_type_options,
                                 want);
                        continue;
                    }
                    if (!strcmp(key, K_ZONE) || !strcmp(key, K_CT)) {
                        const Tailor__V1__NodeSelectorRequirement *q =
                            req_find(c->requirements, c->n_requirements, key);
                        for (size_t v = 0; q && v < q->n_values; v++)
                            if (!label_ok(want, q->values[v]))
                                miss(rp, "options %s: claim allows %s=%s, want %s", names[i], key, q->values[v],
                                     want);
                        continue;
                    }
                    for (size_t t = 0; t < c->n_instance_type_options; t++) {
                        const Tailor__V1__InstanceType *it = type_find(pl->req, c->instance_type_options[t]->name);
                        const Tailor__V1__NodeSelectorRequirement *q =
                            it ? req_find(it->requirements, it->n_requirements, key) : NULL;
                        const char *got = q && q->n_values ? q->values[0] : NULL;
                        if (!label_ok(want, got)) {
                            miss(rp, "options %s: type %s has %s=%s, want %s", names[i],
                                 c->instance_type_options[t]->name, key, got ? got : "(absent)", want);
                            break;
                        }
                    }
                }
            }
            json_object_put(ps);   /* names[] point into it */
        }
    }
    /* pods_per_node: pod counts per target, all placed pending pods */
    if ((o = jget(w, "pods_per_node"))) {
        json_object *all = json_object_new_string("all");
        int got[MAXPL], want[64], ng, nw;
        ng = group_counts(pl, all, got, MAXPL);
        json_object_put(all);
        want_counts(o, want, &nw);
        char a[256], b[256];
        counts_str(got, ng, a, sizeof a);
        counts_str(want, nw, b, sizeof b);
        if (strcmp(a, b))
            miss(rp, "pods_per_node: got [%s], want [%s]", a, b);
    }
    /* skew: [{key, sel, counts}] as ExpectSkew */
    json_object *sk = jget(w, "skew");
    for (size_t k = 0; k < jlen(sk); k++) {
        json_object *s = jat(sk, k);
        int got[64], want[64], ng, nw;
        char vals[64][64];
        ng = skew_counts(pl, jstr(s, "key", K_ZONE), jstr(s, "sel", ""), got, 64, vals);
        qsort(got, (size_t)ng, sizeof(int), cmp_int_desc);
        want_counts(jget(s, "counts"), want, &nw);
        char a[256], b[256];
        counts_str(got, ng, a, sizeof a);
        counts_str(want, nw, b, sizeof b);
        if (strcmp(a, b))
            miss(rp, "skew %s %s: got [%s], want [%s]", jstr(s, "key", K_ZONE), jstr(s, "sel", ""), a, b);
    }
}

static void plan_print(const plan *pl)
{
    char where[64];
    const Tailor__V1__SolveResponse *s = pl->resp;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = s->new_nodeclaims[i];
        printf("    new-%zu pool=%s pods=%zu options=", i, c->nodepool, c->n_planned_pod_uids);
        for (size_t k = 0; k < c->n_instance_type_options && k < 6; k++)
            printf("%s%s", k ? "," : "", c->instance_type_options[k]->name);
        if (c->n_instance_type_options > 6)
            printf(",...(%zu)", c->n_instance_type_options);
        printf(" zone=%s", tk_claim_req(c, K_ZONE) ? tk_claim_req(c, K_ZONE) : "-");
        printf(" ct=%s\n", tk_claim_req(c, K_CT) ? tk_claim_req(c, K_CT) : "-");
    }
    for (int i = 0; i < pl->npl; i++) {
        pl_where(pl, i, where, sizeof where);
        printf("    %s -> %s", pl->pl[i].pod, where);
        if (!pl->pl[i].kind)
            printf(" (%s)", tk_reasons(tk_error_of(s, pl->pl[i].pod)));
        printf("\n");
    }
}

/* ---- the runner -------------------------------------------------------- */

/* Run case c; true when every want holds.  rp gets the misses. */
static bool run_case(suite *s, json_object *c, report *rp, bool verbose)
{
    bool borrowed;
    Tailor__V1__SolveRequest *req = request_of(s, c, &borrowed);
    Tailor__V1__SolveResponse *resp = NULL;
    tlr_solve_opts o = { .no_lower_bound = true };
    int rc = tlr_solve(req, &o, &resp);
    if (rc != TLR_OK || !resp) {
        miss(rp, "tlr_solve: %s", tlr_strerror(rc));
    } else {
        static plan pl;
        plan_read(&pl, req, resp);
        tlr_buf b;
        tlr_buf_init(&b, 1 << 16);
        int v = tlr_plan_check(req, resp, &b);
        if (v)
            miss(rp, "plan check: %d violation(s): %.300s", v, tlr_buf_str(&b));
        tlr_buf_free(&b);
        check_wants(&pl, jget(c, "want"), rp);
        if (verbose)
            plan_print(&pl);
    }
    tlr_solve_response_free(resp);
    if (borrowed)
        req->catalogs[0]->catalog = NULL;
    tk_free(req);
    return rp->n == 0;
}

static int load_cases(suite *s)
{
    const char *env = getenv("TAILOR_CONFORMANCE_DIR");
    if (env)
        snprintf(s->dir, sizeof s->dir, "%s", env);
    else {
        /* beside this source file */
        snprintf(s->dir, sizeof s->dir, "%s", __FILE__);
        char *sl = strrchr(s->dir, '/');
        if (sl)
            snprintf(sl + 1, sizeof s->dir - (size_t)(sl + 1 - s->dir), "conformance");
        else
            snprintf(s->dir, sizeof s->dir, "conformance");
    }
    DIR *d = opendir(s->dir);
    if (!d) {
        printf("FAIL: cannot open %s\n", s->dir);
        return -1;
    }
    char *files[64];
    int nf = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nf < 64) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".yaml"))
            files[nf++] = strdup(e->d_name);
    }
    closedir(d);
    /* a stable order: by file name */
    for (int i = 1; i < nf; i++)
        for (int j = i; j > 0 && strcmp(files[j - 1], files[j]) > 0; j--) {
            char *t = files[j];
            files[j] = files[j - 1];
            files[j - 1] = t;
        }
    s->cases = json_object_new_array();
    int rc = 0;
    for (int f = 0; f < nf; f++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", s->dir, files[f]);
        FILE *fp = fopen(path, "rb");
        char *buf = NULL;
        long len = 0;
        if (fp && !fseek(fp, 0, SEEK_END) && (len = ftell(fp)) >= 0 && !fseek(fp, 0, SEEK_SET)) {
            buf = malloc((size_t)len + 1);
            if (fread(buf, 1, (size_t)len, fp) != (size_t)len)
                len = -1;
        }
        if (fp)
            fclose(fp);
        json_object *docs = NULL;
        char err[256] = "";
        if (!buf || len < 0 || tlr_yaml_parse(buf, (size_t)len, NULL, &docs, err, sizeof err) != TLR_OK) {
            printf("FAIL: %s: %s\n", path, err);
            rc = -1;
        }
        for (size_t i = 0; docs && i < jlen(docs); i++) {
            json_object *list = jat(docs, i);
            for (size_t k = 0; k < jlen(list); k++) {
                json_object *c = jat(list, k);
                json_object_object_add(c, "file", json_object_new_string(files[f]));
                json_object_array_add(s->cases, json_object_get(c));
            }
        }
        json_object_put(docs);
        free(buf);
        free(files[f]);
    }
    return rc;
}

static int setup(void **state)
{
    suite *s = calloc(1, sizeof(*s));
    *state = s;
    return load_cases(s);
}

static int teardown(void **state)
{
    suite *s = *state;
    json_object_put(s->cases);
    tlr_catalog_free(s->aws);
    free(s);
    return 0;
}

static void test_conformance(void **state)
{
    suite *s = *state;
    const char *only = getenv("TAILOR_CONFORMANCE_CASE");
    int total = 0, pass = 0, div = 0, bad = 0;
    size_t n = jlen(s->cases);
    for (size_t i = 0; i < n; i++) {
        json_object *c = jat(s->cases, i);
        const char *id = jstr(c, "id", "?");
        if (only && strcmp(only, id))
            continue;
        /* ids are unique: docs/conformance.md refers to them */
        for (size_t k = 0; k < i; k++)
            if (!strcmp(id, jstr(jat(s->cases, k), "id", "")))
                fail_msg("duplicate case id %s", id);
        if (!jstr(c, "src", NULL) || !jget(c, "want"))
            fail_msg("case %s: src and want are required", id);
        total++;
        report rp = { .len = 0 };
        bool ok = run_case(s, c, &rp, only != NULL);
        const char *dv = jstr(c, "diverge", NULL);
        if (ok && !dv) {
            pass++;
        } else if (!ok && dv) {
            div++;
            if (only)
                printf("  %s diverges (%s):\n%s", id, dv, rp.buf);
        } else if (ok && dv) {
            bad++;
            printf("FIXED? %s [%s] is marked divergent (%s) but now passes: remove the mark\n", id,
                   jstr(c, "file", ""), dv);
        } else {
            bad++;
            printf("FAIL %s [%s] %s\n%s", id, jstr(c, "file", ""), jstr(c, "src", ""), rp.buf);
        }
    }
    printf("conformance: %d cases, %d pass, %d known divergences, %d wrong\n", total, pass, div, bad);
    assert_true(total > 0);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conformance),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
