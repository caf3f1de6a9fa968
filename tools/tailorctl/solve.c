/* solve.c - tailorctl solve: the offline dry run.
 *
 * "What nodes would these pods get, at what cost, and why is this pod
 * unschedulable?"  Reads what users have - pod manifests or `kubectl get
 * pods -o json`, Deployments and friends (expanded to their replicas),
 * Karpenter NodePools and EC2NodeClasses, optionally the cluster's nodes
 * and DaemonSets, and an instance catalog file - builds one SolveRequest
 * and runs the same engine as tailor-solver (tlr_solve) in process.
 *
 * The catalog file says what a node holds under Karpenter's defaults; an
 * EC2NodeClass whose kubelet settings, AMI family or block devices change
 * that gets a catalog of its own, shaped as the launcher shapes it
 * (tlr_nodeshape.h), so the plan packs as the real nodes will.
 *
 * Every input file may hold any mix of kinds (objects are routed by kind,
 * not by the flag that named the file); kinds solve does not use are
 * skipped with a warning that names them.  Bad input is reported with the
 * file and the object and exits 2; nothing is solved then.
 *
 * Exit codes: 0 every pod placed, 3 some pods unschedulable, 2 bad usage
 * or input, 1 any other failure.  docs/tailorctl.md documents the output.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctlfiles.h"
#include "ctlprogress.h"
#include "tailorctl.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"
#include "tlr_nodeshape.h"
#include "tlr_solve.h"
#include "tlr_time.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_UNSCHED = 3 };


typedef struct solve_cfg {
    tlr_strvec pods, nodepools, nodeclasses, nodes, daemonsets;
    const char *catalog;       /* borrowed from argv */
    const char *region;
    tlr_strvec zones;
    tlr_strvec zone_ids;           /* parallel to zones; "" where --zones gave none */
    double spot_discount;
    bool spot;                 /* --spot-discount given: offer spot */
    bool json;
    bool explain;
    bool tight;
    bool no_replay;
    tlr_solve_strategy strategy;
    size_t max_pods;
    int64_t timeout_ms;
} solve_cfg;

/* What was read, ready to become a SolveRequest. */
typedef struct inputs {
    Tailor__V1__Pod **pending;        /* owned */
    size_t npending, cap_pending;
    Tailor__V1__Pod **bound;          /* owned: pods with nodeName */
    size_t nbound, cap_bound;
    Tailor__V1__Node **nodes;
    size_t nnodes, cap_nodes;
    Tailor__V1__NodePool **pools;
    size_t npools, cap_pools;
    Tailor__V1__NodeClass **classes;
    size_t nclasses, cap_classes;
    Tailor__V1__DaemonSet **ds;
    size_t nds, cap_ds;
    Tailor__V1__PodDisruptionBudget **pdbs;
    size_t npdbs, cap_pdbs;
    Tailor__V1__NodeClaim **claims;
    size_t nclaims, cap_claims;
    tlr_strvec pool_class_names;          /* "NodePool/default", ... as read */
    size_t skipped;
} inputs;

#define PUSH(arr, n, cap, x)            \
    do {                                \
        TLR_GROW(arr, cap, (n) + 1);    \
        (arr)[(n)++] = (x);             \
    } while (0)

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: tailorctl solve --pods FILE|DIR... --nodepools FILE... [OPTIONS]\n"
        "\n"
        "Plan nodes for pods offline, with the engine tailor-solver runs, and say why\n"
        "pods cannot be placed.  Each flag takes one path and may be repeated; a\n"
        "directory is read recursively (*.yaml, *.yml, *.json).  Files are YAML streams\n"
        "or JSON (kubectl get ... -o json output included) and may mix kinds: every\n"
        "object is taken by its kind, whichever flag named its file, and a file named\n"
        "twice is read once.\n"
        "\n"
        "Inputs:\n"
        "  --pods PATH          Pods, Deployments, ReplicaSets, StatefulSets, Jobs,\n"
        "                       ReplicationControllers (expanded to their replicas)\n"
        "  --nodepools PATH     karpenter.sh/v1 NodePools (required)\n"
        "  --nodeclasses PATH   karpenter.k8s.aws/v1 EC2NodeClasses\n"
        "  --nodes PATH         existing Nodes (kubectl get nodes -o json); pods from\n"
        "                       --pods with spec.nodeName set are bound to them\n"
        "  --daemonsets PATH    DaemonSets, whose pods every new node must also fit\n"
        "  --catalog FILE       instance catalog JSON (the format of\n"
        "                       aws-instance-types.json).  Required: offline there is\n"
        "                       no EC2 to ask; the services get the catalog from EC2.\n"
        "  --region NAME        catalog region for prices (default us-east-1)\n"
        "  --zones A,B,...      zones offered (default REGIONa,REGIONb,REGIONc); each\n"
        "                       may name its zone ID, A=use1-az1, which offline is\n"
        "                       the only source of topology.k8s.aws/zone-id\n"
        "  --spot-discount F    also offer spot at price*(1-F), 0<=F<1; 0 = spot at the\n"
        "                       on-demand price (default: on-demand only)\n"
        "\n"
        "Output and engine:\n"
        "  -o, --output FMT     text (default) or json\n"
        "  --strategy NAME      tailor (default) or karpenter (the baseline)\n"
        "  --explain            reasons for every NodePool, not only the first\n"
        "  --tight-bound        also certify the configuration LP's bound (whole pods\n"
        "                       per node; tighter, can take seconds)\n"
        "  --[no-]scheduler-replay  plan a batch whose nodes register together as\n"
        "                       kube-scheduler will bind it, as tailor-solver does\n"
        "                       (default on; docs/solver.md)\n"
        "  --max-pods N         refuse inputs that expand to more pods (default 1000000)\n"
        "  --timeout DURATION   solve time limit (default 60s)\n"
        "  -h, --help           this text\n"
        "\n"
        "Exit status: 0 every pod placed; 3 some pods unschedulable; 2 bad usage or\n"
        "input; 1 any other failure.\n");
}

/* ---- arguments ----------------------------------------------------------- */

static int parse_args(int argc, char **argv, solve_cfg *cfg, bool *help)
{
    *help = false;
    cfg->max_pods = 1000000;
    cfg->timeout_ms = 60000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char name[64];
        const char *eq = strchr(a, '=');

        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return TLR_OK;
        }
        if (!strcmp(a, "--explain")) {
            cfg->explain = true;
            continue;
        }
        if (!strcmp(a, "--tight-bound")) {
            cfg->tight = true;
            continue;
        }
        if (!strcmp(a, "--scheduler-replay") || !strcmp(a, "--no-scheduler-replay")) {
            cfg->no_replay = a[2] == 'n';
            continue;
        }
        if (a[0] != '-') {
            fprintf(stderr, "tailorctl solve: unexpected argument \"%s\" (paths go after a "
                    "flag, e.g. --pods %s)\n", a, a);
            return TLR_E_INVAL;
        }
        if (!strcmp(a, "-o")) {
            snprintf(name, sizeof(name), "--output");
        } else if (eq != NULL && strncmp(a, "--", 2) == 0) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
            val = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a);
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tailorctl solve: %s needs a value\n", name);
                return TLR_E_INVAL;
            }
            val = argv[++i];
        }
        tlr_strvec *list = NULL;
        if (!strcmp(name, "--pods"))
            list = &cfg->pods;
        else if (!strcmp(name, "--nodepools"))
            list = &cfg->nodepools;
        else if (!strcmp(name, "--nodeclasses"))
            list = &cfg->nodeclasses;
        else if (!strcmp(name, "--nodes"))
            list = &cfg->nodes;
        else if (!strcmp(name, "--daemonsets"))
            list = &cfg->daemonsets;
        if (list != NULL) {
            tlr_strvec_add(list, val);
        } else if (!strcmp(name, "--catalog")) {
            cfg->catalog = val;
        } else if (!strcmp(name, "--region")) {
            cfg->region = val;
        } else if (!strcmp(name, "--zones")) {
            char *copy = tlr_strdup(val), *save = NULL;
            for (char *z = strtok_r(copy, ",", &save); z; z = strtok_r(NULL, ",", &save)) {
                char *id = strchr(z, '=');
                if (id != NULL)
                    *id++ = '\0';
                if (z[0] == '\0' || (id != NULL && id[0] == '\0')) {
                    fprintf(stderr, "tailorctl solve: --zones: \"%s\" is not ZONE or "
                            "ZONE=ZONE_ID\n", val);
                    free(copy);
                    return TLR_E_INVAL;
                }
                tlr_strvec_add(&cfg->zones, z);
                tlr_strvec_add(&cfg->zone_ids, id != NULL ? id : "");
            }
            free(copy);
        } else if (!strcmp(name, "--spot-discount")) {
            char *end;
            cfg->spot_discount = strtod(val, &end);
            cfg->spot = true;
            if (*end != '\0' || !(cfg->spot_discount >= 0 && cfg->spot_discount < 1)) {
                fprintf(stderr, "tailorctl solve: --spot-discount: \"%s\" is not in [0, 1)\n",
                        val);
                return TLR_E_INVAL;
            }
        } else if (!strcmp(name, "--output")) {
            if (strcmp(val, "json") && strcmp(val, "text")) {
                fprintf(stderr, "tailorctl solve: --output: \"%s\" is not text or json\n", val);
                return TLR_E_INVAL;
            }
            cfg->json = !strcmp(val, "json");
        } else if (!strcmp(name, "--strategy")) {
            if (!strcmp(val, "tailor"))
                cfg->strategy = TLR_SOLVE_TAILOR;
            else if (!strcmp(val, "karpenter"))
                cfg->strategy = TLR_SOLVE_KARPENTER;
            else {
                fprintf(stderr, "tailorctl solve: --strategy: \"%s\" is not tailor or "
                        "karpenter\n", val);
                return TLR_E_INVAL;
            }
        } else if (!strcmp(name, "--max-pods")) {
            char *end;
            unsigned long long v = strtoull(val, &end, 10);
            if (*end != '\0' || v == 0 || val[0] == '-') {
                fprintf(stderr, "tailorctl solve: --max-pods: \"%s\" is not a positive count\n",
                        val);
                return TLR_E_INVAL;
            }
            cfg->max_pods = (size_t)v;
        } else if (!strcmp(name, "--timeout")) {
            if (tlr_duration_parse(val, &cfg->timeout_ms) != TLR_OK || cfg->timeout_ms <= 0) {
                fprintf(stderr, "tailorctl solve: --timeout: \"%s\" is not a duration\n", val);
                return TLR_E_INVAL;
            }
        } else {
            fprintf(stderr, "tailorctl solve: unknown flag %s\n", name);
            return TLR_E_INVAL;
        }
    }
    if (cfg->pods.n == 0 || cfg->nodepools.n == 0 || cfg->catalog == NULL) {
        fprintf(stderr, "tailorctl solve: --pods, --nodepools and --catalog are required "
                "(offline there is no EC2 to ask for instance types)\n");
        return TLR_E_INVAL;
    }
    return TLR_OK;
}

/* ---- reading files (ctlfiles.h) ------------------------------------------ */

static bool is_kind(const char *k, const char *want)
{
    return k != NULL && !strcmp(k, want);
}

/* A cluster holds one object of a kind and name: a second one (the same
 * pool in two files) would be planned twice.  TLR_E_INVAL, err set. */
static int defined_once(inputs *in, const char *kind, const char *name, char *err, size_t errlen)
{
    char key[320];
    snprintf(key, sizeof(key), "%s/%s", kind, name);
    for (size_t i = 0; i < in->pool_class_names.n; i++)
        if (!strcmp(in->pool_class_names.v[i], key)) {
            snprintf(err, errlen, "%s %s is defined twice", kind, name);
            return TLR_E_INVAL;
        }
    tlr_strvec_add(&in->pool_class_names, key);
    return TLR_OK;
}

/* Route one object by kind into in.  Errors name file and object. */
static int take_object(const solve_cfg *cfg, const char *file, json_object *o, inputs *in)
{
    char err[TLR_KUBEOBJ_ERRLEN] = "", what[256];
    const char *kind = tlr_json_str(o, "kind");
    int rc = TLR_OK;

    if (is_kind(kind, "NodePool")) {
        Tailor__V1__NodePool *p = NULL;
        if ((rc = tlr_kubeobj_nodepool(o, NULL, &p, err, sizeof(err))) == TLR_OK &&
            (rc = defined_once(in, "NodePool", p->name, err, sizeof(err))) == TLR_OK)
            PUSH(in->pools, in->npools, in->cap_pools, p);
        else
            tlr_kubeobj_free(p);
    } else if (is_kind(kind, "EC2NodeClass")) {
        Tailor__V1__NodeClass *c = NULL;
        if ((rc = tlr_kubeobj_nodeclass(o, NULL, &c, err, sizeof(err))) == TLR_OK &&
            (rc = defined_once(in, "EC2NodeClass", c->name, err, sizeof(err))) == TLR_OK)
            PUSH(in->classes, in->nclasses, in->cap_classes, c);
        else
            tlr_kubeobj_free(c);
    } else if (is_kind(kind, "Node")) {
        Tailor__V1__Node *n = NULL;
        if ((rc = tlr_kubeobj_node(o, NULL, &n, err, sizeof(err))) == TLR_OK)
            PUSH(in->nodes, in->nnodes, in->cap_nodes, n);
    } else if (is_kind(kind, "DaemonSet")) {
        Tailor__V1__DaemonSet *d = NULL;
        if ((rc = tlr_kubeobj_daemonset(o, NULL, &d, err, sizeof(err))) == TLR_OK)
            PUSH(in->ds, in->nds, in->cap_ds, d);
    } else if (is_kind(kind, "PodDisruptionBudget")) {
        Tailor__V1__PodDisruptionBudget *p = NULL;
        if ((rc = tlr_kubeobj_pdb(o, NULL, &p, err, sizeof(err))) == TLR_OK)
            PUSH(in->pdbs, in->npdbs, in->cap_pdbs, p);
    } else if (is_kind(kind, "NodeClaim")) {
        Tailor__V1__NodeClaim *c = NULL;
        if ((rc = tlr_kubeobj_nodeclaim(o, NULL, &c, err, sizeof(err))) == TLR_OK)
            PUSH(in->claims, in->nclaims, in->cap_claims, c);
    } else {
        Tailor__V1__Pod **pods = NULL;
        size_t n = 0, room = cfg->max_pods - (in->npending + in->nbound);
        rc = tlr_kubeobj_expand(o, NULL, room, &pods, &n, err, sizeof(err));
        if (rc == TLR_E_NOTFOUND) {
            tlr_kubeobj_describe(o, what, sizeof(what));
            fprintf(stderr, "tailorctl solve: warning: %s: skipping %s: solve does not use "
                    "this kind\n", file, what);
            in->skipped++;
            return TLR_OK;
        }
        for (size_t i = 0; i < n; i++) {
            Tailor__V1__Pod *p = pods[i];
            bool terminal = p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED ||
                            p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_FAILED;
            if (p->node_name[0] != '\0')
                PUSH(in->bound, in->nbound, in->cap_bound, p);
            else if (!terminal && p->deletion_unix_ms == 0 && !p->is_daemonset)
                PUSH(in->pending, in->npending, in->cap_pending, p);
            else
                tlr_kubeobj_free(p);   /* finished, leaving, or the DaemonSet's business */
        }
        free(pods);
    }
    if (rc != TLR_OK)
        fprintf(stderr, "tailorctl solve: %s: %s\n", file, err);
    return rc;
}

static int read_inputs(const solve_cfg *cfg, inputs *in, ctl_progress *pg)
{
    const tlr_strvec *lists[] = { &cfg->pods, &cfg->nodepools, &cfg->nodeclasses, &cfg->nodes,
                              &cfg->daemonsets };
    ctl_files files = { 0 };
    int rc = TLR_OK;

    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]) && rc == TLR_OK; l++)
        for (size_t i = 0; i < lists[l]->n && rc == TLR_OK; i++)
            rc = ctl_files_collect("solve", lists[l]->v[i], &files);
    /* Every file is read for every kind it holds, so a file named by two
     * flags (--nodepools all.yaml --nodeclasses all.yaml) is read once. */
    struct stat *seen = tlr_calloc(files.n + 1, sizeof(*seen));
    ctl_progress_step(pg, "reading manifests", files.n);
    for (size_t f = 0; f < files.n && rc == TLR_OK; f++) {
        ctl_progress_set(pg, f);
        json_object *objs = NULL;
        bool again = false;

        if (stat(files.v[f], &seen[f]) == 0)
            for (size_t g = 0; g < f && !again; g++)
                again = seen[g].st_ino == seen[f].st_ino && seen[g].st_dev == seen[f].st_dev;
        if (again)
            continue;
        if ((rc = ctl_files_decode("solve", files.v[f], &objs)) != TLR_OK)
            break;
        for (size_t i = 0; i < json_object_array_length(objs) && rc == TLR_OK; i++)
            rc = take_object(cfg, files.v[f], json_object_array_get_idx(objs, i), in);
        json_object_put(objs);
    }
    free(seen);
    ctl_files_free(&files);
    char sum[96];
    snprintf(sum, sizeof(sum), "%zu pending pods, %zu bound, %zu nodes", in->npending,
             in->nbound, in->nnodes);
    ctl_progress_end(pg, rc == TLR_OK ? sum : tlr_strerror(rc));
    return rc;
}

static void free_inputs(inputs *in)
{
#define FREE_ALL(arr, n)                    \
    do {                                    \
        for (size_t i_ = 0; i_ < (n); i_++) \
            tlr_kubeobj_free((arr)[i_]);    \
        free(arr);                          \
    } while (0)
    FREE_ALL(in->pending, in->npending);
    FREE_ALL(in->bound, in->nbound);
    FREE_ALL(in->nodes, in->nnodes);
    FREE_ALL(in->pools, in->npools);
    FREE_ALL(in->classes, in->nclasses);
    FREE_ALL(in->ds, in->nds);
    FREE_ALL(in->pdbs, in->npdbs);
    FREE_ALL(in->claims, in->nclaims);
#undef FREE_ALL
    tlr_strvec_free(&in->pool_class_names);
}

/* ---- the plan, summarised ------------------------------------------------ */

typedef struct pod_name {
    const char *uid, *ns, *name;   /* borrowed from the inputs */
} pod_name;

static int cmp_uid(const void *a, const void *b)
{
    return strcmp(((const pod_name *)a)->uid, ((const pod_name *)b)->uid);
}

typedef struct claim_view {
    const Tailor__V1__NodeClaim *claim;
    const char *type, *zone, *ct;    /* borrowed; "" when unknown */
    double price;
} claim_view;

typedef struct group {
    const char *type, *zone, *ct;
    size_t count, pods;
    double price;
} group;

static const char *ct_name(Tailor__V1__CapacityType ct)
{
    switch (ct) {
    case TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT: return "spot";
    case TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND: return "on-demand";
    case TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_RESERVED: return "reserved";
    default: return "";
    }
}

/* Does the claim's requirement on key allow value? */
static bool claim_allows(const Tailor__V1__NodeClaim *c, const char *key, const char *value)
{
    for (size_t i = 0; i < c->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = c->requirements[i];
        bool in = false;
        if (strcmp(r->key, key) != 0)
            continue;
        for (size_t k = 0; k < r->n_values; k++)
            in |= !strcmp(r->values[k], value);
        if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN && !in)
            return false;
        if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN && in)
            return false;
        if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST)
            return false;
    }
    return true;
}

/* The offering a claim would most likely launch: its cheapest option's
 * cheapest available offering that the claim's zone and capacity-type
 * requirements allow. */
static void view_of(const Tailor__V1__NodeClaim *c, const Tailor__V1__Catalog *cat,
                    claim_view *v)
{
    memset(v, 0, sizeof(*v));
    v->claim = c;
    v->type = v->zone = v->ct = "";
    if (c->n_instance_type_options == 0)
        return;
    v->type = c->instance_type_options[0]->name;
    v->price = c->instance_type_options[0]->price_per_hour;
    double best = -1;
    for (size_t i = 0; i < cat->n_instance_types; i++) {
        const Tailor__V1__InstanceType *t = cat->instance_types[i];
        if (strcmp(t->name, v->type) != 0)
            continue;
        for (size_t k = 0; k < t->n_offerings; k++) {
            const Tailor__V1__Offering *o = t->offerings[k];
            if (!o->available || !claim_allows(c, TLR_LABEL_ZONE, o->zone) ||
                !claim_allows(c, TLR_LABEL_CAPACITY_TYPE, ct_name(o->capacity_type)))
                continue;
            if (best < 0 || o->price_per_hour < best) {
                best = o->price_per_hour;
                v->zone = o->zone;
                v->ct = ct_name(o->capacity_type);
            }
        }
    }
}

static const pod_name *find_pod(const pod_name *names, size_t n, const char *uid)
{
    pod_name key = { .uid = uid };
    return bsearch(&key, names, n, sizeof(*names), cmp_uid);
}

static void add_pod_ref(tlr_buf *b, const pod_name *names, size_t n, const char *uid)
{
    const pod_name *p = find_pod(names, n, uid);
    char s[600];
    snprintf(s, sizeof(s), "%s/%s", p ? p->ns : "?", p ? p->name : uid);
    tlr_buf_add_json_str(b, s);
}

static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    int c;
    if ((c = strcmp(x->type, y->type)) || (c = strcmp(x->zone, y->zone)) ||
        (c = strcmp(x->ct, y->ct)))
        return c;
    return 0;
}

/* The plan, summarised for printing (print_plan). */
typedef struct plan_summary {
    const Tailor__V1__SolveResponse *r;   /* borrowed */
    const char *strategy;
    pod_name *names;                      /* owned: the pending pods, by uid */
    size_t npods;
    claim_view *views;                    /* owned: parallel to r->new_nodeclaims */
    group *groups;                        /* owned: the new claims alike, sorted */
    size_t ngroups, placed_new, placed_existing;
    double ratio;                         /* cost/bound; 0 without a bound */
} plan_summary;

static void plan_summarise(const solve_cfg *cfg, const inputs *in, const Tailor__V1__Catalog *cat,
                           const Tailor__V1__SolveResponse *r, plan_summary *s)
{
    size_t npods = in->npending;
    pod_name *names = tlr_calloc(npods + 1, sizeof(*names));
    claim_view *views = tlr_calloc(r->n_new_nodeclaims + 1, sizeof(*views));
    group *groups = tlr_calloc(r->n_new_nodeclaims + 1, sizeof(*groups));
    size_t ngroups = 0, placed_new = 0;

    for (size_t i = 0; i < npods; i++)
        names[i] = (pod_name){ in->pending[i]->uid, in->pending[i]->namespace_,
                               in->pending[i]->name };
    qsort(names, npods, sizeof(*names), cmp_uid);
    for (size_t i = 0; i < r->n_new_nodeclaims; i++) {
        view_of(r->new_nodeclaims[i], cat, &views[i]);
        placed_new += r->new_nodeclaims[i]->n_planned_pod_uids;
        group g = { views[i].type, views[i].zone, views[i].ct, 1,
                    r->new_nodeclaims[i]->n_planned_pod_uids, views[i].price };
        size_t k;
        for (k = 0; k < ngroups; k++)
            if (!cmp_group(&groups[k], &g) && groups[k].price == g.price)
                break;
        if (k == ngroups)
            groups[ngroups++] = g;
        else {
            groups[k].count++;
            groups[k].pods += g.pods;
        }
    }
    qsort(groups, ngroups, sizeof(*groups), cmp_group);
    *s = (plan_summary){
        .r = r,
        .strategy = cfg->strategy == TLR_SOLVE_KARPENTER ? "karpenter" : "tailor",
        .names = names,
        .npods = npods,
        .views = views,
        .groups = groups,
        .ngroups = ngroups,
        .placed_new = placed_new,
        .placed_existing = r->n_bindings,
        .ratio = r->lower_bound_cost_per_hour > 0
                     ? r->total_cost_per_hour / r->lower_bound_cost_per_hour : 0,
    };
}

static void plan_summary_free(plan_summary *s)
{
    free(s->names);
    free(s->views);
    free(s->groups);
}

/* ---- --json ---- */

static void plan_json_groups(tlr_buf *b, const plan_summary *s)
{
    for (size_t k = 0; k < s->ngroups; k++) {
        const group *g = &s->groups[k];
        tlr_buf_printf(b, "%s{\"instance_type\":", k ? "," : "");
        tlr_buf_add_json_str(b, g->type);
        tlr_buf_adds(b, ",\"zone\":");
        tlr_buf_add_json_str(b, g->zone);
        tlr_buf_adds(b, ",\"capacity_type\":");
        tlr_buf_add_json_str(b, g->ct);
        tlr_buf_printf(b, ",\"count\":%zu,\"pods\":%zu,\"price_per_hour\":%.6f,"
                       "\"cost_per_hour\":%.6f}", g->count, g->pods,
                       g->price, g->price * (double)g->count);
    }
}

static void plan_json_claims(tlr_buf *b, const plan_summary *s)
{
    const Tailor__V1__SolveResponse *r = s->r;
    tlr_ks_labels lab = { 0 };
    for (size_t i = 0; i < r->n_new_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = r->new_nodeclaims[i];
        const claim_view *v = &s->views[i];
        tlr_buf_printf(b, "%s{\"nodepool\":", i ? "," : "");
        tlr_buf_add_json_str(b, c->nodepool);
        tlr_buf_adds(b, ",\"instance_type\":");
        tlr_buf_add_json_str(b, v->type);
        tlr_buf_adds(b, ",\"zone\":");
        tlr_buf_add_json_str(b, v->zone);
        tlr_buf_adds(b, ",\"capacity_type\":");
        tlr_buf_add_json_str(b, v->ct);
        tlr_buf_printf(b, ",\"price_per_hour\":%.6f,\"options\":[", v->price);
        for (size_t k = 0; k < c->n_instance_type_options; k++) {
            tlr_buf_adds(b, k ? "," : "");
            tlr_buf_add_json_str(b, c->instance_type_options[k]->name);
        }
        /* The labels the claim gives its node besides the instance
         * type's: its own, and each requirement it pins to one value. */
        tlr_ks_labels_reset(&lab);
        for (size_t k = 0; k < c->n_labels; k++)
            tlr_ks_labels_set(&lab, c->labels[k]->key, c->labels[k]->value);
        tlr_ks_labels_set_single_in(&lab, c->requirements, c->n_requirements, true);
        tlr_buf_adds(b, "],\"labels\":{");
        for (size_t k = 0; k < lab.n; k++) {
            tlr_buf_adds(b, k ? "," : "");
            tlr_buf_add_json_str(b, lab.v[k].key);
            tlr_buf_adds(b, ":");
            tlr_buf_add_json_str(b, lab.v[k].value);
        }
        tlr_buf_adds(b, "},\"pods\":[");
        for (size_t k = 0; k < c->n_planned_pod_uids; k++) {
            tlr_buf_adds(b, k ? "," : "");
            add_pod_ref(b, s->names, s->npods, c->planned_pod_uids[k]);
        }
        tlr_buf_adds(b, "]}");
    }
    tlr_ks_labels_free(&lab);
}

static void plan_json_bindings(tlr_buf *b, const plan_summary *s)
{
    for (size_t i = 0; i < s->r->n_bindings; i++) {
        const Tailor__V1__Binding *bd = s->r->bindings[i];
        tlr_buf_printf(b, "%s{\"pod\":", i ? "," : "");
        add_pod_ref(b, s->names, s->npods, bd->pod_uid);
        if (bd->target_case == TAILOR__V1__BINDING__TARGET_NODECLAIM_NAME) {
            tlr_buf_adds(b, ",\"nodeclaim\":");
            tlr_buf_add_json_str(b, bd->nodeclaim_name);
        } else {
            tlr_buf_adds(b, ",\"node\":");
            tlr_buf_add_json_str(b, bd->node_name);
        }
        tlr_buf_adds(b, "}");
    }
}

static void plan_json_unschedulable(tlr_buf *b, const plan_summary *s)
{
    for (size_t i = 0; i < s->r->n_pod_errors; i++) {
        const Tailor__V1__PodError *e = s->r->pod_errors[i];
        char name[600];
        snprintf(name, sizeof(name), "%s/%s", e->namespace_, e->name);
        tlr_buf_printf(b, "%s{\"pod\":", i ? "," : "");
        tlr_buf_add_json_str(b, name);
        tlr_buf_adds(b, ",\"uid\":");
        tlr_buf_add_json_str(b, e->pod_uid);
        tlr_buf_adds(b, ",\"reason\":");
        tlr_buf_add_json_str(b, e->status ? e->status->reason : "");
        tlr_buf_adds(b, ",\"message\":");
        tlr_buf_add_json_str(b, e->status ? e->status->message : "");
        tlr_buf_adds(b, ",\"nodepools\":[");
        for (size_t k = 0; k < e->n_reasons; k++) {
            tlr_buf_adds(b, k ? ",{\"nodepool\":" : "{\"nodepool\":");
            tlr_buf_add_json_str(b, e->reasons[k]->nodepool);
            tlr_buf_adds(b, ",\"reason\":");
            tlr_buf_add_json_str(b, e->reasons[k]->reason);
            tlr_buf_adds(b, "}");
        }
        tlr_buf_adds(b, "]}");
    }
}

static void plan_json(tlr_buf *b, const plan_summary *s)
{
    const Tailor__V1__SolveResponse *r = s->r;
    tlr_buf_printf(b, "{\"strategy\":\"%s\",\"pods\":{\"pending\":%zu,\"on_existing\":%zu,"
                   "\"on_new_nodes\":%zu,\"unschedulable\":%zu},\"new_nodes\":[",
                   s->strategy, s->npods, s->placed_existing, s->placed_new, r->n_pod_errors);
    plan_json_groups(b, s);
    tlr_buf_adds(b, "],\"nodeclaims\":[");
    plan_json_claims(b, s);
    tlr_buf_adds(b, "],\"bindings\":[");
    plan_json_bindings(b, s);
    tlr_buf_printf(b, "],\"total_cost_per_hour\":%.6f,\"lower_bound_cost_per_hour\":%.6f,"
                   "\"cost_bound_ratio\":%.4f,\"unschedulable\":[",
                   r->total_cost_per_hour, r->lower_bound_cost_per_hour, s->ratio);
    plan_json_unschedulable(b, s);
    tlr_buf_printf(b, "],\"timed_out\":%s,\"solve_duration_ms\":%lld}\n",
                   r->timed_out ? "true" : "false", (long long)r->solve_duration_ms);
}

/* ---- text ---- */

static void plan_text_groups(tlr_buf *b, const plan_summary *s)
{
    if (s->ngroups == 0) {
        tlr_buf_adds(b, "New nodes: none\n");
        return;
    }
    tlr_buf_printf(b, "New nodes (%zu):\n  %5s  %-18s %-14s %-10s %5s %10s %10s\n",
                   s->r->n_new_nodeclaims, "COUNT", "INSTANCE TYPE", "ZONE", "CAPACITY",
                   "PODS", "$/H EACH", "$/HOUR");
    for (size_t k = 0; k < s->ngroups; k++) {
        const group *g = &s->groups[k];
        tlr_buf_printf(b, "  %5zu  %-18s %-14s %-10s %5zu %10.4f %10.4f\n",
                       g->count, g->type, g->zone, g->ct, g->pods, g->price,
                       g->price * (double)g->count);
    }
}

static void plan_text_bindings(tlr_buf *b, const plan_summary *s)
{
    const Tailor__V1__SolveResponse *r = s->r;
    if (r->n_bindings == 0)
        return;
    tlr_buf_printf(b, "\nPods on existing nodes (%zu):\n", r->n_bindings);
    for (size_t i = 0; i < r->n_bindings; i++) {
        const Tailor__V1__Binding *bd = r->bindings[i];
        const pod_name *p = find_pod(s->names, s->npods, bd->pod_uid);
        tlr_buf_printf(b, "  %s/%s -> %s%s\n", p ? p->ns : "?", p ? p->name : bd->pod_uid,
                       bd->target_case == TAILOR__V1__BINDING__TARGET_NODECLAIM_NAME
                           ? "nodeclaim " : "",
                       bd->target_case == TAILOR__V1__BINDING__TARGET_NODECLAIM_NAME
                           ? bd->nodeclaim_name : bd->node_name);
    }
}

static void plan_text_totals(tlr_buf *b, const plan_summary *s)
{
    const Tailor__V1__SolveResponse *r = s->r;
    tlr_buf_printf(b, "\nTotal: $%.4f/hour for %zu new nodes (%zu pods on new nodes, %zu on "
                   "existing)\n", r->total_cost_per_hour, r->n_new_nodeclaims, s->placed_new,
                   s->placed_existing);
    if (r->lower_bound_cost_per_hour > 0)
        tlr_buf_printf(b, "Lower bound: $%.4f/hour (cost/bound %.3f)\n",
                       r->lower_bound_cost_per_hour, s->ratio);
    else
        tlr_buf_adds(b, "Lower bound: not computed\n");
    if (r->timed_out)
        tlr_buf_adds(b, "WARNING: the solve timed out; the plan is partial\n");
}

static void plan_text_unschedulable(tlr_buf *b, const plan_summary *s)
{
    const Tailor__V1__SolveResponse *r = s->r;
    if (r->n_pod_errors == 0)
        return;
    tlr_buf_printf(b, "\nUnschedulable pods (%zu):\n", r->n_pod_errors);
    for (size_t i = 0; i < r->n_pod_errors; i++) {
        const Tailor__V1__PodError *e = r->pod_errors[i];
        tlr_buf_printf(b, "  %s/%s: %s\n", e->namespace_, e->name,
                       e->status && e->status->message[0] ? e->status->message
                       : e->status ? e->status->reason : "unschedulable");
        for (size_t k = 0; k < e->n_reasons; k++) {
            const char *np = e->reasons[k]->nodepool;
            tlr_buf_printf(b, "    %s%s%s%s\n", np[0] ? "nodepool " : "", np,
                           np[0] ? ": " : "", e->reasons[k]->reason);
        }
    }
}

static void plan_text(tlr_buf *b, const plan_summary *s, const inputs *in, const Tailor__V1__Catalog *cat)
{
    tlr_buf_printf(b, "Plan (strategy %s): %zu pending pods, %zu node pools, %zu existing "
                   "nodes, %zu instance types\n\n", s->strategy, s->npods, in->npools, in->nnodes,
                   cat->n_instance_types);
    plan_text_groups(b, s);
    plan_text_bindings(b, s);
    plan_text_totals(b, s);
    plan_text_unschedulable(b, s);
}

static void print_plan(const solve_cfg *cfg, const inputs *in, const Tailor__V1__Catalog *cat,
                       const Tailor__V1__SolveResponse *r)
{
    plan_summary s;
    plan_summarise(cfg, in, cat, r, &s);
    tlr_buf b;
    tlr_buf_init(&b, (size_t)1 << 30);
    if (cfg->json)
        plan_json(&b, &s);
    else
        plan_text(&b, &s, in, cat);
    fputs(tlr_buf_str(&b), stdout);
    tlr_buf_free(&b);
    plan_summary_free(&s);
}

/* ---- the request --------------------------------------------------------- */

static void bind_pods(inputs *in)
{
    size_t orphans = 0;
    for (size_t i = 0; i < in->nbound; i++) {
        size_t k;
        for (k = 0; k < in->nnodes; k++)
            if (!strcmp(in->nodes[k]->name, in->bound[i]->node_name))
                break;
        if (k < in->nnodes)
            tlr_kubeobj_node_add_pod(in->nodes[k], in->bound[i]);
        else
            orphans++;
    }
    if (orphans > 0 && in->nnodes > 0)
        fprintf(stderr, "tailorctl solve: warning: %zu bound pods name nodes not in --nodes; "
                "they are ignored\n", orphans);
}

/* The catalogs of a request: refs[0] the file's, then one per distinct
 * shape.  Everything owned here, names borrowed from the inputs. */
typedef struct catalogs {
    Tailor__V1__CatalogRef **refs;
    size_t n;
    Tailor__V1__Catalog **shaped;   /* owned; refs[i]->catalog for i >= 1 */
} catalogs;

static bool in_refs(const catalogs *cs, const char *name);

static void ref_add(Tailor__V1__CatalogRef *r, const char *name)
{
    r->node_classes = tlr_realloc(r->node_classes, (r->n_node_classes + 1) * sizeof(char *));
    r->node_classes[r->n_node_classes++] = (char *)name;
}

static Tailor__V1__CatalogRef *ref_new(catalogs *cs, Tailor__V1__Catalog *cat)
{
    Tailor__V1__CatalogRef *r = tlr_malloc(sizeof(*r));
    tailor__v1__catalog_ref__init(r);
    r->hash = cat->hash;
    r->catalog = cat;
    cs->refs = tlr_realloc(cs->refs, (cs->n + 1) * sizeof(*cs->refs));
    cs->shaped = tlr_realloc(cs->shaped, (cs->n + 1) * sizeof(*cs->shaped));
    cs->shaped[cs->n] = NULL;
    cs->refs[cs->n++] = r;
    return r;
}

/* One CatalogRef per shape among the classes given (each class in exactly
 * one); classes that change nothing, and those the pools name but no file
 * defines, buy from base.  A base ref left without a class is dropped
 * unless it is the only one. */
static void catalogs_build(const inputs *in, Tailor__V1__Catalog *base, catalogs *cs)
{
    memset(cs, 0, sizeof(*cs));
    Tailor__V1__CatalogRef *dflt = ref_new(cs, base);
    for (size_t i = 0; i < in->nclasses; i++) {
        const Tailor__V1__NodeClass *nc = in->classes[i];
        if (in_refs(cs, nc->name))
            continue;
        tlr_node_shape shape = tlr_node_shape_of(nc);
        if (tlr_node_shape_is_default(&shape)) {
            ref_add(dflt, nc->name);
            continue;
        }
        Tailor__V1__Catalog *c = tlr_catalog_shaped(base, &shape);
        size_t k = 1;
        while (k < cs->n && strcmp(cs->refs[k]->hash, c->hash) != 0)
            k++;
        if (k < cs->n) {
            tlr_catalog_free(c);   /* another class shapes nodes alike */
        } else {
            ref_new(cs, c);
            cs->shaped[k] = c;
        }
        ref_add(cs->refs[k], nc->name);
    }
    for (size_t i = 0; i < in->npools; i++)
        if (!in_refs(cs, in->pools[i]->node_class_ref->name))
            ref_add(dflt, in->pools[i]->node_class_ref->name);
    if (dflt->n_node_classes == 0 && cs->n > 1) {
        free(dflt);
        memmove(cs->refs, cs->refs + 1, (cs->n - 1) * sizeof(*cs->refs));
        memmove(cs->shaped, cs->shaped + 1, (cs->n - 1) * sizeof(*cs->shaped));
        cs->n--;
    }
}

static void catalogs_free(catalogs *cs)
{
    for (size_t i = 0; i < cs->n; i++) {
        tlr_catalog_free(cs->shaped[i]);
        free(cs->refs[i]->node_classes);
        free(cs->refs[i]);
    }
    free(cs->refs);
    free(cs->shaped);
    memset(cs, 0, sizeof(*cs));
}

static bool in_refs(const catalogs *cs, const char *name)
{
    for (size_t i = 0; i < cs->n; i++)
        for (size_t k = 0; k < cs->refs[i]->n_node_classes; k++)
            if (!strcmp(cs->refs[i]->node_classes[k], name))
                return true;
    return false;
}

int cmd_solve(int argc, char **argv)
{
    solve_cfg cfg = { 0 };
    inputs in = { 0 };
    Tailor__V1__Catalog *cat = NULL;
    catalogs cats = { 0 };
    Tailor__V1__SolveResponse *resp = NULL;
    ctl_progress *pg = NULL;
    bool help;
    int exit_code = EXIT_USAGE, rc;
    char err[512];

    rc = parse_args(argc, argv, &cfg, &help);
    if (help || rc != TLR_OK) {
        usage(help ? stdout : stderr);
        exit_code = help ? EXIT_OK : EXIT_USAGE;
        goto out;
    }
    pg = ctl_progress_new("solve", cfg.json);
    if ((rc = read_inputs(&cfg, &in, pg)) != TLR_OK)
        goto out;
    if (in.npools == 0) {
        fprintf(stderr, "tailorctl solve: no NodePool found in the --nodepools files\n");
        goto out;
    }
    tlr_catalog_file_opts copts = { .region = cfg.region,
                                    .zones = (const char *const *)cfg.zones.v,
                                    .n_zones = cfg.zones.n,
                                    .zone_ids = (const char *const *)cfg.zone_ids.v,
                                    .spot_discount = cfg.spot_discount,
                                    .no_spot = !cfg.spot };
    rc = tlr_catalog_file_load(cfg.catalog, &copts, &cat, err, sizeof(err));
    if (rc != TLR_OK) {
        fprintf(stderr, "tailorctl solve: %s: %s\n", cfg.catalog, err[0] ? err : tlr_strerror(rc));
        goto out;
    }
    if (cat->n_instance_types == 0) {
        fprintf(stderr, "tailorctl solve: %s: no instance type has a price in %s\n", cfg.catalog,
                cfg.region ? cfg.region : "us-east-1");
        goto out;
    }
    bind_pods(&in);

    catalogs_build(&in, cat, &cats);

    Tailor__V1__ClusterState cluster = TAILOR__V1__CLUSTER_STATE__INIT;
    cluster.nodes = in.nodes;
    cluster.n_nodes = in.nnodes;
    cluster.nodeclaims = in.claims;
    cluster.n_nodeclaims = in.nclaims;
    cluster.nodepools = in.pools;
    cluster.n_nodepools = in.npools;
    cluster.node_classes = in.classes;
    cluster.n_node_classes = in.nclasses;
    cluster.pdbs = in.pdbs;
    cluster.n_pdbs = in.npdbs;
    cluster.daemonsets = in.ds;
    cluster.n_daemonsets = in.nds;
    cluster.synced = true;

    Tailor__V1__SolveOptions sopts = TAILOR__V1__SOLVE_OPTIONS__INIT;
    sopts.explain = cfg.explain;
    sopts.timeout_ms = cfg.timeout_ms;
    Tailor__V1__SolveRequest req = TAILOR__V1__SOLVE_REQUEST__INIT;
    req.batch_id = "tailorctl";
    req.pending_pods = in.pending;
    req.n_pending_pods = in.npending;
    req.cluster = &cluster;
    req.catalogs = cats.refs;
    req.n_catalogs = cats.n;
    req.options = &sopts;
    req.now_unix_ms = tlr_wall_ms();

    char step[64];
    snprintf(step, sizeof(step), "solving %zu pending pods", in.npending);
    ctl_progress_step(pg, step, 0);
    rc = tlr_solve(&req, &(tlr_solve_opts){ .strategy = cfg.strategy, .replica_id = "tailorctl",
                                          .replay = !cfg.no_replay },
                   &resp);
    ctl_progress_end(pg, rc == TLR_OK ? "done" : tlr_strerror(rc));
    if (rc != TLR_OK || resp == NULL ||
        (resp->status != NULL && resp->status->code != TLR_OK)) {
        fprintf(stderr, "tailorctl solve: the solver failed: %s\n",
                resp && resp->status && resp->status->message[0] ? resp->status->message
                                                                 : tlr_strerror(rc));
        exit_code = rc == TLR_E_INVAL ? EXIT_USAGE : EXIT_FAIL;
        goto out;
    }
    if (cfg.tight) {
        ctl_progress_step(pg, "the tight lower bound", 0);
        double tight = 0;
        if (tlr_solve_lower_bound_placed(&req, resp, true, &tight) == TLR_OK &&
            tight > resp->lower_bound_cost_per_hour)
            resp->lower_bound_cost_per_hour = tight;
        ctl_progress_end(pg, NULL);
    }
    ctl_progress_free(pg);
    pg = NULL;
    print_plan(&cfg, &in, cat, resp);
    exit_code = resp->n_pod_errors > 0 ? EXIT_UNSCHED : EXIT_OK;
out:
    ctl_progress_free(pg);
    tlr_solve_response_free(resp);
    catalogs_free(&cats);
    tlr_catalog_free(cat);
    free_inputs(&in);
    tlr_strvec_free(&cfg.pods);
    tlr_strvec_free(&cfg.nodepools);
    tlr_strvec_free(&cfg.nodeclasses);
    tlr_strvec_free(&cfg.nodes);
    tlr_strvec_free(&cfg.daemonsets);
    tlr_strvec_free(&cfg.zones);
    tlr_strvec_free(&cfg.zone_ids);
    return exit_code;
}
