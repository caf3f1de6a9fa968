/* plancheck_test.c - tlr_plan_check on hand-built plans.
 *
 * One small scenario (an existing node n1 in zone-a, an empty node n2 in
 * zone-b, types small 2c/4G $0.10 and big 4c/8G $0.20 in zone-a) with a
 * legal plan: p0 bound to n1, p1 and p2 on one new claim [small, big], p3
 * reported unschedulable.  Each table row mutates request or plan to
 * break exactly one rule (must be caught, and the line must name the
 * rule) or to make a different legal plan (must pass).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plancheck_testkit.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_plancheck.h"

typedef struct plan {
    Tailor__V1__SolveRequest *req;
    Tailor__V1__SolveResponse *resp;
} plan;

static Tailor__V1__Pod *pod(plan *p, int i) { return p->req->pending_pods[i]; }
static Tailor__V1__NodeClaim *claim(plan *p, int i) { return p->resp->new_nodeclaims[i]; }

static Tailor__V1__InstanceTypeOption *option(const char *name, double price)
{
    Tailor__V1__InstanceTypeOption *o = tlr_malloc(sizeof(*o));
    tailor__v1__instance_type_option__init(o);
    o->name = tlr_strdup(name);
    o->price_per_hour = price;
    return o;
}

static Tailor__V1__NodeClaim *new_claim(plan *p)
{
    Tailor__V1__NodeClaim *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_claim__init(nc);
    nc->nodepool = tlr_strdup("default");
    nc->node_class = tlr_strdup("default");
    KIT_PUSH(p->resp->new_nodeclaims, p->resp->n_new_nodeclaims, nc);
    return nc;
}

static void bind_node(plan *p, const char *uid, const char *node)
{
    Tailor__V1__Binding *b = tlr_malloc(sizeof(*b));
    tailor__v1__binding__init(b);
    b->pod_uid = tlr_strdup(uid);
    b->target_case = TAILOR__V1__BINDING__TARGET_NODE_NAME;
    b->node_name = tlr_strdup(node);
    KIT_PUSH(p->resp->bindings, p->resp->n_bindings, b);
}

static void base(plan *p)
{
    Tailor__V1__SolveRequest *req = kit_request();
    kit_add_type(req, kit_type("big", 4000, 8192, 20, 0, 0.20));
    kit_add_type(req, kit_type("small", 2000, 4096, 10, 0, 0.10));
    Tailor__V1__Node *n1 = kit_node("n1", kit_res(4000, 8192, 20, 0), kit_res(1000, 1024, 1, 0));
    KIT_PUSH(n1->labels, n1->n_labels, kit_label("topology.kubernetes.io/zone", "zone-a"));
    Tailor__V1__Node *n2 = kit_node("n2", kit_res(1000, 1024, 20, 0), kit_res(1000, 1024, 1, 0));
    KIT_PUSH(n2->labels, n2->n_labels, kit_label("topology.kubernetes.io/zone", "zone-b"));
    KIT_PUSH(req->cluster->nodes, req->cluster->n_nodes, n1);
    KIT_PUSH(req->cluster->nodes, req->cluster->n_nodes, n2);
    kit_add_pod(req, kit_pod("p0", 1000, 1024, 0));
    kit_add_pod(req, kit_pod("p1", 1000, 1024, 0));
    kit_add_pod(req, kit_pod("p2", 1000, 1024, 0));
    kit_add_pod(req, kit_pod("p3", 64000, 1024, 0));
    p->req = req;

    Tailor__V1__SolveResponse *r = tlr_malloc(sizeof(*r));
    tailor__v1__solve_response__init(r);
    p->resp = r;
    bind_node(p, "p0", "n1");
    Tailor__V1__NodeClaim *nc = new_claim(p);
    KIT_PUSH(nc->instance_type_options, nc->n_instance_type_options, option("small", 0.10));
    KIT_PUSH(nc->instance_type_options, nc->n_instance_type_options, option("big", 0.20));
    KIT_PUSH(nc->planned_pod_uids, nc->n_planned_pod_uids, tlr_strdup("p1"));
    KIT_PUSH(nc->planned_pod_uids, nc->n_planned_pod_uids, tlr_strdup("p2"));
    Tailor__V1__PodError *e = tlr_malloc(sizeof(*e));
    tailor__v1__pod_error__init(e);
    e->pod_uid = tlr_strdup("p3");
    KIT_PUSH(r->pod_errors, r->n_pod_errors, e);
    r->total_cost_per_hour = 0.10;
}

/* ---- mutations that must be caught ---- */

static void no_outcome(plan *p) { p->resp->n_pod_errors = 0; free(p->resp->pod_errors[0]->pod_uid); free(p->resp->pod_errors[0]); }
static void two_outcomes(plan *p) { bind_node(p, "p1", "n1"); }
static void unknown_uid(plan *p)
{
    KIT_PUSH(claim(p, 0)->planned_pod_uids, claim(p, 0)->n_planned_pod_uids, tlr_strdup("ghost"));
}
static void option_too_small(plan *p)
{
    kit_add_type(p->req, kit_type("tiny", 1000, 4096, 10, 0, 0.05));
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    KIT_PUSH(nc->instance_type_options, nc->n_instance_type_options, option("tiny", 0.05));
    /* keep the ranking right: tiny first */
    Tailor__V1__InstanceTypeOption *t = nc->instance_type_options[2];
    nc->instance_type_options[2] = nc->instance_type_options[1];
    nc->instance_type_options[1] = nc->instance_type_options[0];
    nc->instance_type_options[0] = t;
    p->resp->total_cost_per_hour = 0.05;
}
static void options_unsorted(plan *p)
{
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    Tailor__V1__InstanceTypeOption *t = nc->instance_type_options[0];
    nc->instance_type_options[0] = nc->instance_type_options[1];
    nc->instance_type_options[1] = t;
    p->resp->total_cost_per_hour = 0.20;
}
static void option_mispriced(plan *p)
{
    claim(p, 0)->instance_type_options[0]->price_per_hour = 0.09;
    p->resp->total_cost_per_hour = 0.09;
}
static void option_iced(plan *p)
{
    Tailor__V1__OfferingUnavailable *u = tlr_malloc(sizeof(*u));
    tailor__v1__offering_unavailable__init(u);
    u->instance_type = tlr_strdup("small");
    u->zone = tlr_strdup("zone-a");
    u->capacity_type = KIT_OD;
    u->until_unix_ms = 5000;
    p->req->now_unix_ms = 1000;
    KIT_PUSH(p->req->unavailable_offerings, p->req->n_unavailable_offerings, u);
}
static void option_unknown(plan *p) { free(claim(p, 0)->instance_type_options[1]->name); claim(p, 0)->instance_type_options[1]->name = tlr_strdup("nope"); }
static void too_many_options(plan *p)
{
    p->req->options = tlr_malloc(sizeof(*p->req->options));
    tailor__v1__solve_options__init(p->req->options);
    p->req->options->max_instance_types = 1;
}
static void node_over_capacity(plan *p) { p->req->cluster->nodes[0]->requested->cpu_millis = 3500; }
static void node_cordoned(plan *p) { p->req->cluster->nodes[0]->unschedulable = 1; }
static void selector_violated(plan *p)
{
    KIT_PUSH(pod(p, 1)->node_selector, pod(p, 1)->n_node_selector,
             kit_label("kubernetes.io/arch", "arm64"));
}
static void affinity_on_node_violated(plan *p)
{
    Tailor__V1__NodeSelectorTerm *t = tlr_malloc(sizeof(*t));
    tailor__v1__node_selector_term__init(t);
    KIT_PUSH(t->match_expressions, t->n_match_expressions,
             kit_req_in("topology.kubernetes.io/zone", "zone-b"));
    KIT_PUSH(pod(p, 0)->required_node_affinity, pod(p, 0)->n_required_node_affinity, t);
}
static void taint_untolerated(plan *p)
{
    Tailor__V1__NodePool *pool = p->req->cluster->nodepools[0];
    KIT_PUSH(pool->taints, pool->n_taints, kit_taint("team", "ml"));
    KIT_PUSH(claim(p, 0)->taints, claim(p, 0)->n_taints, kit_taint("team", "ml"));
}
static void claim_lacks_pool_taint(plan *p)
{
    Tailor__V1__NodePool *pool = p->req->cluster->nodepools[0];
    KIT_PUSH(pool->taints, pool->n_taints, kit_taint("team", "ml"));
    for (int i = 1; i <= 2; i++)
        KIT_PUSH(pod(p, i)->tolerations, pod(p, i)->n_tolerations, kit_toleration("team", "ml"));
}
static Tailor__V1__HostPort *hostport(int port)
{
    Tailor__V1__HostPort *h = tlr_malloc(sizeof(*h));
    tailor__v1__host_port__init(h);
    h->port = port;
    return h;
}
static void host_port_clash(plan *p)
{
    KIT_PUSH(pod(p, 1)->host_ports, pod(p, 1)->n_host_ports, hostport(80));
    KIT_PUSH(pod(p, 2)->host_ports, pod(p, 2)->n_host_ports, hostport(80));
}
static void web_labels(plan *p, int i)
{
    KIT_PUSH(pod(p, i)->labels, pod(p, i)->n_labels, kit_label("app", "web"));
}
static void anti_affinity_violated(plan *p)
{
    for (int i = 1; i <= 2; i++) {
        web_labels(p, i);
        pod(p, i)->pod_anti_affinity = kit_affinity(kit_term("kubernetes.io/hostname", "web"));
    }
}
static void anti_affinity_of_existing_pod(plan *p)
{
    /* A pod already on n1 repels app=web; p0 (app=web) is bound there. */
    web_labels(p, 0);
    Tailor__V1__Pod *q = kit_pod("q", 100, 100, 0);
    q->pod_anti_affinity = kit_affinity(kit_term("kubernetes.io/hostname", "web"));
    KIT_PUSH(p->req->cluster->nodes[0]->pods, p->req->cluster->nodes[0]->n_pods, q);
}
static void pod_affinity_violated(plan *p)
{
    /* p1 must share a zone with app=db, which runs only on n2 (zone-b). */
    Tailor__V1__Pod *db = kit_pod("db", 100, 100, 0);
    KIT_PUSH(db->labels, db->n_labels, kit_label("app", "db"));
    KIT_PUSH(p->req->cluster->nodes[1]->pods, p->req->cluster->nodes[1]->n_pods, db);
    pod(p, 1)->pod_affinity = kit_affinity(kit_term("topology.kubernetes.io/zone", "db"));
}
static Tailor__V1__TopologySpreadConstraint *spread(const char *key, int skew)
{
    Tailor__V1__TopologySpreadConstraint *c = tlr_malloc(sizeof(*c));
    tailor__v1__topology_spread_constraint__init(c);
    c->max_skew = skew;
    c->topology_key = tlr_strdup(key);
    c->label_selector = tlr_malloc(sizeof(*c->label_selector));
    tailor__v1__label_selector__init(c->label_selector);
    KIT_PUSH(c->label_selector->match_labels, c->label_selector->n_match_labels,
             kit_label("app", "web"));
    return c;
}
static void spread_violated(plan *p)
{
    /* Both web pods land in zone-a (the only zone small/big are sold in);
     * n2 makes zone-b a domain with 0: skew 2 > 1. */
    for (int i = 1; i <= 2; i++) {
        web_labels(p, i);
        KIT_PUSH(pod(p, i)->topology_spread_constraints, pod(p, i)->n_topology_spread_constraints,
                 spread("topology.kubernetes.io/zone", 1));
    }
}
static void limit_exceeded(plan *p)
{
    Tailor__V1__NodePool *pool = p->req->cluster->nodepools[0];
    pool->limits = tlr_malloc(sizeof(*pool->limits));
    tailor__v1__node_pool_limits__init(pool->limits);
    pool->limits->has_cpu = 1;
    pool->limits->cpu_millis = 3000;   /* big (4c) is an option */
}
static void total_wrong(plan *p) { p->resp->total_cost_per_hour = 0.30; }
static void daemonset_overflows(plan *p)
{
    KIT_PUSH(p->req->cluster->daemonsets, p->req->cluster->n_daemonsets,
             kit_daemonset("agent", 1500, 128));
}
static void claim_without_catalog(plan *p) { free(claim(p, 0)->node_class); claim(p, 0)->node_class = tlr_strdup("other"); }

/* minValues: small and big are of different families; the pool asks for
 * families (pool requirement) or types (claim requirement) with minValues. */
static Tailor__V1__NodeSelectorRequirement *req_min(const char *key, const char *v1,
                                                    const char *v2, int32_t mv)
{
    Tailor__V1__NodeSelectorRequirement *r = kit_req_in(key, v1);
    if (v2)
        KIT_PUSH(r->values, r->n_values, tlr_strdup(v2));
    r->min_values = mv;
    return r;
}
static void families(plan *p, int32_t mv)
{
    Tailor__V1__Catalog *cat = p->req->catalogs[0]->catalog;
    for (size_t i = 0; i < cat->n_instance_types; i++) {
        Tailor__V1__InstanceType *t = cat->instance_types[i];
        KIT_PUSH(t->requirements, t->n_requirements,
                 kit_req_in("karpenter.k8s.aws/instance-family",
                            strcmp(t->name, "big") == 0 ? "fam-b" : "fam-s"));
    }
    Tailor__V1__NodePool *pool = p->req->cluster->nodepools[0];
    KIT_PUSH(pool->requirements, pool->n_requirements,
             req_min("karpenter.k8s.aws/instance-family", "fam-b", "fam-s", mv));
}
static void min_values_short(plan *p) { families(p, 3); }
static void min_values_one_option(plan *p)
{
    families(p, 2);
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    free(nc->instance_type_options[1]->name);
    free(nc->instance_type_options[1]);
    nc->n_instance_type_options = 1;
}
static void min_values_on_claim_type(plan *p)
{
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    KIT_PUSH(nc->requirements, nc->n_requirements,
             req_min("node.kubernetes.io/instance-type", "small", "big", 3));
}
static void min_values_policy(plan *p, Tailor__V1__MinValuesPolicy pol)
{
    p->req->options = tlr_malloc(sizeof(*p->req->options));
    tailor__v1__solve_options__init(p->req->options);
    p->req->options->min_values_policy = pol;
}
static void relaxed_annotation(plan *p)
{
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    KIT_PUSH(nc->annotations, nc->n_annotations,
             kit_label("karpenter.sh/nodeclaim-min-values-relaxed", "true"));
}
static void min_values_relaxed_under_strict(plan *p)
{
    min_values_short(p);
    relaxed_annotation(p);
}
/* Zone spread with a nodeSelector, p1 and p2 both on the zone-a claim; n2
 * (zone-b, running a pod the spread does not select) is a domain with 0
 * matching pods only when the selector is ignored. */
static void spread_with_selector(plan *p, Tailor__V1__NodeInclusionPolicy pol)
{
    spread_violated(p);
    Tailor__V1__Node *n2 = p->req->cluster->nodes[1];
    KIT_PUSH(n2->pods, n2->n_pods, kit_pod("other", 100, 100, 0));
    for (int i = 1; i <= 2; i++) {
        KIT_PUSH(pod(p, i)->node_selector, pod(p, i)->n_node_selector,
                 kit_label("topology.kubernetes.io/zone", "zone-a"));
        pod(p, i)->topology_spread_constraints[0]->node_affinity_policy = pol;
    }
}
static void spread_selector_ignored(plan *p)
{
    spread_with_selector(p, TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_IGNORE);
}
/* n2 (zone-b) tainted: it still counts under the default nodeTaintsPolicy
 * (Ignore), not under Honor. */
static void spread_taints(plan *p, Tailor__V1__NodeInclusionPolicy pol)
{
    spread_violated(p);
    KIT_PUSH(p->req->cluster->nodes[1]->taints, p->req->cluster->nodes[1]->n_taints,
             kit_taint("dedicated", "db"));
    for (int i = 1; i <= 2; i++)
        pod(p, i)->topology_spread_constraints[0]->node_taints_policy = pol;
}
static void spread_taints_default(plan *p)
{
    spread_taints(p, TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_UNSPECIFIED);
}
/* A claim labelled with one zone whose zone requirement says another. */
static void claim_label_contradicts(plan *p)
{
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    KIT_PUSH(nc->labels, nc->n_labels, kit_label("topology.kubernetes.io/zone", "zone-b"));
    KIT_PUSH(nc->requirements, nc->n_requirements, kit_req_in("topology.kubernetes.io/zone", "zone-a"));
}
static void claim_label_contradicts_pool(plan *p)
{
    Tailor__V1__NodePool *pool = p->req->cluster->nodepools[0];
    KIT_PUSH(pool->requirements, pool->n_requirements, kit_req_in("team", "a"));
    KIT_PUSH(claim(p, 0)->labels, claim(p, 0)->n_labels, kit_label("team", "b"));
}

/* ---- variants that must pass ---- */

static void nothing(plan *p) { (void)p; }
static void daemonset_fits(plan *p)
{
    KIT_PUSH(p->req->cluster->daemonsets, p->req->cluster->n_daemonsets,
             kit_daemonset("agent", 100, 128));
    /* small has 2c: 2 x 1c + 0.1c does not fit, so only big may stay. */
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    free(nc->instance_type_options[0]->name);
    free(nc->instance_type_options[0]);
    nc->instance_type_options[0] = nc->instance_type_options[1];
    nc->n_instance_type_options = 1;
    p->resp->total_cost_per_hour = 0.20;
}
static void anti_affinity_split(plan *p)
{
    anti_affinity_violated(p);
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    nc->n_planned_pod_uids = 1;
    char *moved = nc->planned_pod_uids[1];
    Tailor__V1__NodeClaim *nc2 = new_claim(p);
    KIT_PUSH(nc2->instance_type_options, nc2->n_instance_type_options, option("small", 0.10));
    KIT_PUSH(nc2->planned_pod_uids, nc2->n_planned_pod_uids, moved);
    p->resp->total_cost_per_hour = 0.20;
}
static void spread_balanced(plan *p)
{
    /* Sell both types in zone-b as well, pin claim 0 to zone-a and put p2
     * on a claim pinned to zone-b: 1 / 1. */
    Tailor__V1__Catalog *cat = p->req->catalogs[0]->catalog;
    for (size_t i = 0; i < cat->n_instance_types; i++)
        kit_offer(cat->instance_types[i], "zone-b", KIT_OD,
                  cat->instance_types[i]->offerings[0]->price_per_hour);
    spread_violated(p);
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    KIT_PUSH(nc->requirements, nc->n_requirements, kit_req_in("topology.kubernetes.io/zone", "zone-a"));
    nc->n_planned_pod_uids = 1;
    char *moved = nc->planned_pod_uids[1];
    Tailor__V1__NodeClaim *nc2 = new_claim(p);
    KIT_PUSH(nc2->requirements, nc2->n_requirements, kit_req_in("topology.kubernetes.io/zone", "zone-b"));
    KIT_PUSH(nc2->instance_type_options, nc2->n_instance_type_options, option("small", 0.10));
    KIT_PUSH(nc2->planned_pod_uids, nc2->n_planned_pod_uids, moved);
    p->resp->total_cost_per_hour = 0.20;
}
static void toleration_present(plan *p)
{
    taint_untolerated(p);
    for (int i = 1; i <= 2; i++)
        KIT_PUSH(pod(p, i)->tolerations, pod(p, i)->n_tolerations, kit_toleration("team", "ml"));
}

static void min_values_met(plan *p) { families(p, 2); }
static void min_values_relaxed(plan *p)
{
    min_values_short(p);
    relaxed_annotation(p);
    min_values_policy(p, TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT);
}
static void spread_selector_honored(plan *p)
{
    spread_with_selector(p, TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_UNSPECIFIED);
}
static void spread_taints_honored(plan *p)
{
    spread_taints(p, TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_HONOR);
}
static void claim_label_agrees(plan *p)
{
    Tailor__V1__NodeClaim *nc = claim(p, 0);
    KIT_PUSH(nc->labels, nc->n_labels, kit_label("topology.kubernetes.io/zone", "zone-a"));
    KIT_PUSH(nc->requirements, nc->n_requirements, kit_req_in("topology.kubernetes.io/zone", "zone-a"));
}

typedef struct pccase {
    const char *name;
    void (*mutate)(plan *p);
    const char *want;      /* NULL = must pass; else a substring of the report */
} pccase;

static const pccase cases[] = {
    {"valid plan", nothing, NULL},
    {"valid: daemonset fits the only option", daemonset_fits, NULL},
    {"valid: anti-affinity pods on separate claims", anti_affinity_split, NULL},
    {"valid: zone spread balanced", spread_balanced, NULL},
    {"valid: taint tolerated", toleration_present, NULL},
    {"valid: minValues 2 families met by [small, big]", min_values_met, NULL},
    {"valid: minValues short but relaxed (BestEffort)", min_values_relaxed, NULL},
    {"valid: spread domains narrowed to the nodeSelector (Honor)", spread_selector_honored, NULL},
    {"valid: spread leaves out an untolerated node (taints Honor)", spread_taints_honored, NULL},
    {"valid: claim label within its requirement", claim_label_agrees, NULL},
    {"pod without outcome", no_outcome, "neither bound"},
    {"pod with two outcomes", two_outcomes, "more than one outcome"},
    {"unknown uid planned", unknown_uid, "not a pending pod"},
    {"an option too small", option_too_small, "do not fit"},
    {"options not ranked by price", options_unsorted, "ranked after"},
    {"option mispriced", option_mispriced, "cheapest allowed offering"},
    {"option only in the ICE cache", option_iced, "no available offering"},
    {"option not in catalog", option_unknown, "not in the catalog"},
    {"more options than max_instance_types", too_many_options, "max_instance_types"},
    {"existing node over capacity", node_over_capacity, "node n1: requested"},
    {"binding to a cordoned node", node_cordoned, "cordoned"},
    {"node selector not satisfied by claim", selector_violated, "node selector/affinity"},
    {"node affinity not satisfied by node", affinity_on_node_violated, "node n1"},
    {"taint not tolerated", taint_untolerated, "does not tolerate"},
    {"claim lacks its pool's taint", claim_lacks_pool_taint, "lacks taint"},
    {"host port clash", host_port_clash, "host port 80"},
    {"anti-affinity on one claim", anti_affinity_violated, "anti-affinity"},
    {"anti-affinity of an existing pod", anti_affinity_of_existing_pod, "anti-affinity"},
    {"pod affinity unmet", pod_affinity_violated, "pod affinity"},
    {"zone spread skewed", spread_violated, "topology spread"},
    {"nodepool cpu limit", limit_exceeded, "over its limit"},
    {"total cost wrong", total_wrong, "total_cost_per_hour"},
    {"daemonset overhead overflows small", daemonset_overflows, "daemonsets do not fit"},
    {"no catalog for the node class", claim_without_catalog, "no catalog"},
    {"minValues 3 families, options have 2", min_values_short,
     "minValues 3 for karpenter.k8s.aws/instance-family not met: its 2 options have 2 distinct"},
    {"minValues 2 families, one option", min_values_one_option,
     "minValues 2 for karpenter.k8s.aws/instance-family not met: its 1 options have 1"},
    {"minValues 3 types on the claim's requirement", min_values_on_claim_type,
     "minValues 3 for node.kubernetes.io/instance-type"},
    {"relaxed annotation under Strict", min_values_relaxed_under_strict, "but min_values_policy is Strict"},
    {"spread with nodeSelector, affinity policy Ignore", spread_selector_ignored, "topology spread"},
    {"spread, tainted node counts (taints policy Ignore)", spread_taints_default, "topology spread"},
    {"claim label contradicts its zone requirement", claim_label_contradicts,
     "label topology.kubernetes.io/zone=zone-b contradicts its requirement"},
    {"claim label contradicts its nodepool's requirement", claim_label_contradicts_pool,
     "label team=b contradicts its nodepool's requirement team In [a]"},
};

static void test_table(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        plan p = {0};
        base(&p);
        cases[i].mutate(&p);
        tlr_buf out;
        tlr_buf_init(&out, 1 << 20);
        int n = tlr_plan_check(p.req, p.resp, &out);
        const char *rep = tlr_buf_str(&out);
        bool ok = cases[i].want ? n > 0 && strstr(rep, cases[i].want) != NULL : n == 0;
        if (!ok) {
            printf("case '%s': got %d violation(s):\n%s  want %s\n", cases[i].name, n, rep,
                   cases[i].want ? cases[i].want : "none");
            failed++;
        }
        tlr_buf_free(&out);
        tailor__v1__solve_request__free_unpacked(p.req, NULL);
        tailor__v1__solve_response__free_unpacked(p.resp, NULL);
    }
    assert_int_equal(failed, 0);
}

static void test_null_buffer_still_counts(void **state)
{
    (void)state;
    plan p = {0};
    base(&p);
    total_wrong(&p);
    assert_int_equal(tlr_plan_check(p.req, p.resp, NULL), 1);
    tailor__v1__solve_request__free_unpacked(p.req, NULL);
    tailor__v1__solve_response__free_unpacked(p.resp, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_null_buffer_still_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
