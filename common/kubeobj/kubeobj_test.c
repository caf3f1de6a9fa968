/* kubeobj_test.c - Kubernetes objects to tailor.v1: effective requests,
 * placement constraints, Karpenter objects with their defaults, workload
 * expansion, decoding, and the errors that name object and field.
 *
 * Each table row is a manifest (YAML, as users write them) and either a
 * summary of the converted message that must match, or the error code and
 * a substring of the message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"

/* The first object of a YAML manifest; fails the test if it does not parse. */
static json_object *obj_of(const char *yaml)
{
    json_object *objs = NULL, *o;
    char err[256];

    if (tlr_kubeobj_decode(yaml, strlen(yaml), 1 << 20, &objs, err, sizeof(err)) != TLR_OK)
        fail_msg("fixture does not parse: %s\n%s", err, yaml);
    o = json_object_get(json_object_array_get_idx(objs, 0));
    json_object_put(objs);
    return o;
}

static void add_res(tlr_buf *b, const char *name, const Tailor__V1__ResourceList *r)
{
    if (r == NULL) {
        tlr_buf_printf(b, "%s=nil ", name);
        return;
    }
    tlr_buf_printf(b, "%s{cpu=%lld mem=%lld pods=%lld eph=%lld", name, (long long)r->cpu_millis,
                   (long long)r->memory_bytes, (long long)r->pods,
                   (long long)r->ephemeral_storage_bytes);
    for (size_t i = 0; i < r->n_extended; i++)
        tlr_buf_printf(b, " %s=%lld", r->extended[i]->name, (long long)r->extended[i]->value);
    tlr_buf_adds(b, "} ");
}

static const char *const ops[] = { "?", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt",
                                   "Gte", "Lte" };

static void add_reqs(tlr_buf *b, Tailor__V1__NodeSelectorRequirement **r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tlr_buf_printf(b, "%s %s", r[i]->key, ops[r[i]->operator_]);
        for (size_t k = 0; k < r[i]->n_values; k++)
            tlr_buf_printf(b, "%s%s", k ? "," : " ", r[i]->values[k]);
        if (r[i]->min_values)
            tlr_buf_printf(b, " min=%d", r[i]->min_values);
        tlr_buf_adds(b, "; ");
    }
}

/* ---- pods ---------------------------------------------------------------- */

static char *pod_summary(const Tailor__V1__Pod *p)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 16);
    tlr_buf_printf(&b, "%s/%s ", p->namespace_, p->name);
    add_res(&b, "req", p->requests);
    return tlr_buf_take(&b);
}

typedef struct pcase {
    const char *name;
    const char *yaml;
    int rc;
    const char *want;   /* OK: summary; else substring of the error */
} pcase;

#define POD(spec) "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" spec

static void test_pod_requests(void **state)
{
    static const pcase t[] = {
        { "containers add up",
          POD("  containers:\n"
              "  - {name: a, resources: {requests: {cpu: 100m, memory: 1Gi}}}\n"
              "  - {name: b, resources: {requests: {cpu: 200m, memory: 512Mi}}}\n"),
          TLR_OK, "default/p req{cpu=300 mem=1610612736 pods=1 eph=0} " },
        { "an init container larger than the containers wins",
          POD("  initContainers: [{name: i, resources: {requests: {cpu: 500m}}}]\n"
              "  containers: [{name: a, resources: {requests: {cpu: 100m, memory: 1Gi}}}]\n"),
          TLR_OK, "default/p req{cpu=500 mem=1073741824 pods=1 eph=0} " },
        { "a sidecar adds to the containers and to later init containers",
          POD("  initContainers:\n"
              "  - {name: s, restartPolicy: Always, resources: {requests: {cpu: 50m}}}\n"
              "  - {name: i, resources: {requests: {cpu: 120m}}}\n"
              "  containers: [{name: a, resources: {requests: {cpu: 100m}}}]\n"),
          TLR_OK, "default/p req{cpu=170 mem=0 pods=1 eph=0} " },
        { "a sidecar does not add to init containers before it",
          POD("  initContainers:\n"
              "  - {name: i, resources: {requests: {cpu: 300m}}}\n"
              "  - {name: s, restartPolicy: Always, resources: {requests: {cpu: 100m}}}\n"
              "  containers: [{name: a, resources: {requests: {cpu: 100m}}}]\n"),
          TLR_OK, "default/p req{cpu=300 mem=0 pods=1 eph=0} " },
        { "sidecars and containers beat a small init container",
          POD("  initContainers:\n"
              "  - {name: s1, restartPolicy: Always, resources: {requests: {cpu: 100m}}}\n"
              "  - {name: s2, restartPolicy: Always, resources: {requests: {cpu: 100m}}}\n"
              "  - {name: i, resources: {requests: {cpu: 150m}}}\n"
              "  containers: [{name: a, resources: {requests: {cpu: 1}}}]\n"),
          TLR_OK, "default/p req{cpu=1200 mem=0 pods=1 eph=0} " },
        { "max is per resource",
          POD("  initContainers: [{name: i, resources: {requests: {cpu: 2, memory: 1Mi}}}]\n"
              "  containers: [{name: a, resources: {requests: {cpu: 1, memory: 1Gi}}}]\n"),
          TLR_OK, "default/p req{cpu=2000 mem=1073741824 pods=1 eph=0} " },
        { "overhead is added last",
          POD("  overhead: {cpu: 100m, memory: 64Mi}\n"
              "  initContainers: [{name: i, resources: {requests: {cpu: 2}}}]\n"
              "  containers: [{name: a, resources: {requests: {cpu: 250m}}}]\n"),
          TLR_OK, "default/p req{cpu=2100 mem=67108864 pods=1 eph=0} " },
        { "limits stand in for missing requests",
          POD("  containers:\n"
              "  - {name: a, resources: {limits: {cpu: 1, memory: 2Gi, nvidia.com/gpu: 2},"
              " requests: {cpu: 500m}}}\n"),
          TLR_OK, "default/p req{cpu=500 mem=2147483648 pods=1 eph=0 nvidia.com/gpu=2} " },
        { "extended resources and hugepages, sorted",
          POD("  containers:\n"
              "  - name: a\n"
              "    resources: {requests: {vpc.amazonaws.com/pod-eni: 1, hugepages-2Mi: 4Mi,"
              " ephemeral-storage: 1G}}\n"),
          TLR_OK, "default/p req{cpu=0 mem=0 pods=1 eph=1000000000 hugepages-2Mi=4194304 "
                  "vpc.amazonaws.com/pod-eni=1} " },
        { "YAML numbers are quantities too",
          POD("  containers: [{name: a, resources: {requests: {cpu: 0.1, memory: 1e3}}}]\n"),
          TLR_OK, "default/p req{cpu=100 mem=1000 pods=1 eph=0} " },
        { "no requests: only the pod slot",
          "kind: Pod\nmetadata: {name: p, namespace: team}\nspec: {containers: [{name: a}]}\n",
          TLR_OK, "team/p req{cpu=0 mem=0 pods=1 eph=0} " },
        /* impossible values */
        { "negative quantity",
          POD("  containers:\n  - {name: a}\n  - {name: b, resources: {requests: {cpu: \"-1\"}}}\n"),
          TLR_E_PARSE,
          "Pod p: spec.containers[1].resources.requests.cpu: \"-1\" is negative" },
        { "garbage quantity",
          POD("  containers: [{name: a, resources: {requests: {memory: lots}}}]\n"),
          TLR_E_PARSE, "spec.containers[0].resources.requests.memory: \"lots\" is not a quantity" },
        { "absurd quantity",
          POD("  containers: [{name: a, resources: {requests: {memory: 100E}}}]\n"),
          TLR_E_RANGE, "spec.containers[0].resources.requests.memory: \"100E\" is too large" },
        { "request above limit",
          POD("  containers: [{name: a, resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]\n"),
          TLR_E_INVAL, "spec.containers[0].resources.requests: cpu request is above its limit" },
        { "quantity of the wrong type",
          POD("  containers: [{name: a, resources: {requests: {cpu: [1]}}}]\n"),
          TLR_E_PARSE, "requests.cpu: \"[ 1 ]\" is not a quantity" },
        { "restartPolicy on a regular container",
          POD("  containers: [{name: a, restartPolicy: Always}]\n"),
          TLR_E_INVAL, "spec.containers[0]: restartPolicy \"Always\" is only allowed" },
        { "no containers",
          POD("  containers: []\n"), TLR_E_INVAL, "spec.containers: at least one container" },
        { "no name",
          "kind: Pod\nspec: {containers: [{name: a}]}\n", TLR_E_INVAL,
          "Pod (no name): metadata.name: is required" },
        { "not a pod", "kind: Node\nmetadata: {name: n}\n", TLR_E_INVAL, "kind: want Pod" },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *o = obj_of(t[i].yaml);
        Tailor__V1__Pod *p = NULL;
        char err[TLR_KUBEOBJ_ERRLEN] = "";
        int rc = tlr_kubeobj_pod(o, NULL, &p, err, sizeof(err));

        if (rc != t[i].rc) {
            printf("FAIL %s: got %s (%s), want %s\n", t[i].name, tlr_errname(rc), err,
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc == TLR_OK) {
            char *got = pod_summary(p);
            if (strcmp(got, t[i].want) != 0) {
                printf("FAIL %s:\n  got  %s\n  want %s\n", t[i].name, got, t[i].want);
                failures++;
            }
            free(got);
        } else if (strstr(err, t[i].want) == NULL) {
            printf("FAIL %s: got \"%s\", want it to contain \"%s\"\n", t[i].name, err,
                   t[i].want);
            failures++;
        }
        if (rc != TLR_OK && p != NULL) {
            printf("FAIL %s: *out written on error\n", t[i].name);
            failures++;
        }
        tlr_kubeobj_free(p);
        json_object_put(o);
    }
    assert_int_equal(failures, 0);
}

/* Placement constraints: everything the solver needs, with its validation. */
static char *placement_summary(const Tailor__V1__Pod *p)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 16);
    for (size_t i = 0; i < p->n_node_selector; i++)
        tlr_buf_printf(&b, "sel %s=%s; ", p->node_selector[i]->key, p->node_selector[i]->value);
    for (size_t i = 0; i < p->n_required_node_affinity; i++) {
        tlr_buf_printf(&b, "term%zu: ", i);
        add_reqs(&b, p->required_node_affinity[i]->match_expressions,
                 p->required_node_affinity[i]->n_match_expressions);
    }
    for (size_t i = 0; i < p->n_preferred_node_affinity; i++) {
        tlr_buf_printf(&b, "pref w%d: ", p->preferred_node_affinity[i]->weight);
        add_reqs(&b, p->preferred_node_affinity[i]->preference->match_expressions,
                 p->preferred_node_affinity[i]->preference->n_match_expressions);
    }
    for (size_t i = 0; i < p->n_tolerations; i++)
        tlr_buf_printf(&b, "tol %s op%d %s eff%d%s; ", p->tolerations[i]->key,
                       p->tolerations[i]->operator_, p->tolerations[i]->value,
                       p->tolerations[i]->effect,
                       p->tolerations[i]->has_toleration_seconds ? " secs" : "");
    for (size_t i = 0; i < p->n_topology_spread_constraints; i++) {
        Tailor__V1__TopologySpreadConstraint *t = p->topology_spread_constraints[i];
        tlr_buf_printf(&b, "tsc %s skew%d when%d min%d sel%s; ", t->topology_key, t->max_skew,
                       t->when_unsatisfiable, t->min_domains,
                       t->label_selector ? "" : "=nil");
    }
    const Tailor__V1__PodAffinity *aff[2] = { p->pod_affinity, p->pod_anti_affinity };
    for (int k = 0; k < 2; k++) {
        if (aff[k] == NULL)
            continue;
        for (size_t i = 0; i < aff[k]->n_required; i++)
            tlr_buf_printf(&b, "%s req %s all=%d ns=%zu; ", k ? "anti" : "aff",
                           aff[k]->required[i]->topology_key, aff[k]->required[i]->all_namespaces,
                           aff[k]->required[i]->n_namespaces);
        for (size_t i = 0; i < aff[k]->n_preferred; i++)
            tlr_buf_printf(&b, "%s pref w%d %s; ", k ? "anti" : "aff", aff[k]->preferred[i]->weight,
                           aff[k]->preferred[i]->term->topology_key);
    }
    for (size_t i = 0; i < p->n_host_ports; i++)
        tlr_buf_printf(&b, "port %d/%d; ", p->host_ports[i]->port, p->host_ports[i]->protocol);
    tlr_buf_printf(&b, "prio %d ds %d unsched %d phase %d node %s owners %zu ann %zu",
                   p->priority, p->is_daemonset, p->unschedulable, p->phase, p->node_name,
                   p->n_owners, p->n_annotations);
    return tlr_buf_take(&b);
}

static void test_pod_placement(void **state)
{
    static const pcase t[] = {
        { "everything at once",
          "kind: Pod\n"
          "metadata:\n"
          "  name: p\n"
          "  annotations: {karpenter.sh/do-not-disrupt: \"true\", other: x}\n"
          "  ownerReferences: [{kind: DaemonSet, name: ds, uid: u1, controller: true}]\n"
          "spec:\n"
          "  priority: 1000\n"
          "  nodeSelector: {kubernetes.io/arch: arm64}\n"
          "  affinity:\n"
          "    nodeAffinity:\n"
          "      requiredDuringSchedulingIgnoredDuringExecution:\n"
          "        nodeSelectorTerms:\n"
          "        - matchExpressions: [{key: zone, operator: In, values: [a, b]}]\n"
          "        - matchExpressions: [{key: cpu, operator: Gt, values: [\"4\"]}]\n"
          "      preferredDuringSchedulingIgnoredDuringExecution:\n"
          "      - weight: 10\n"
          "        preference: {matchExpressions: [{key: ct, operator: Exists}]}\n"
          "    podAffinity:\n"
          "      requiredDuringSchedulingIgnoredDuringExecution:\n"
          "      - {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {a: b}},"
          " namespaceSelector: {}}\n"
          "    podAntiAffinity:\n"
          "      preferredDuringSchedulingIgnoredDuringExecution:\n"
          "      - weight: 50\n"
          "        podAffinityTerm: {topologyKey: kubernetes.io/hostname, namespaces: [x, z]}\n"
          "  tolerations:\n"
          "  - {key: gpu, operator: Exists, effect: NoSchedule}\n"
          "  - {key: k, value: v, effect: NoExecute, tolerationSeconds: 30}\n"
          "  - {operator: Exists}\n"
          "  topologySpreadConstraints:\n"
          "  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 3,"
          " labelSelector: {matchLabels: {app: a}}}\n"
          "  - {maxSkew: 2, topologyKey: host, whenUnsatisfiable: ScheduleAnyway}\n"
          "  containers:\n"
          "  - name: a\n"
          "    ports: [{containerPort: 80, hostPort: 8080}, {containerPort: 53, hostPort: 53,"
          " protocol: UDP}, {containerPort: 9}]\n"
          "status:\n"
          "  phase: Pending\n"
          "  conditions: [{type: PodScheduled, status: \"False\", reason: Unschedulable}]\n",
          TLR_OK,
          "sel kubernetes.io/arch=arm64; term0: zone In a,b; term1: cpu Gt 4; "
          "pref w10: ct Exists; tol gpu op2  eff1; tol k op1 v eff3 secs; tol  op2  eff0; "
          "tsc zone skew1 when1 min3 sel; tsc host skew2 when2 min0 sel=nil; "
          "aff req topology.kubernetes.io/zone all=1 ns=0; "
          "anti pref w50 kubernetes.io/hostname; port 8080/1; port 53/2; "
          "prio 1000 ds 1 unsched 1 phase 1 node  owners 1 ann 1" },
        { "bound and running",
          "kind: Pod\nmetadata: {name: p}\nspec: {nodeName: n1, containers: [{name: a}]}\n"
          "status:\n  phase: Running\n  conditions: [{type: PodScheduled, status: \"True\"}]\n",
          TLR_OK, "prio 0 ds 0 unsched 0 phase 2 node n1 owners 0 ann 0" },
        { "deprecated label aliases read as the stable keys (Karpenter's NormalizedLabels)",
          POD("  nodeSelector: {beta.kubernetes.io/os: linux, team: a}\n"
              "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " {nodeSelectorTerms: [{matchExpressions: [{key: failure-domain.beta.kubernetes.io/zone,"
              " operator: In, values: [us-east-1a]}, {key: beta.kubernetes.io/instance-type,"
              " operator: NotIn, values: [t3.micro]}]}]},"
              " preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference:"
              " {matchExpressions: [{key: beta.kubernetes.io/arch, operator: In, values: [arm64]},"
              " {key: failure-domain.beta.kubernetes.io/region, operator: Exists}]}}]}}\n"
              "  containers: [{name: a}]\n"),
          TLR_OK,
          "sel kubernetes.io/os=linux; sel team=a; term0: topology.kubernetes.io/zone In us-east-1a; "
          "node.kubernetes.io/instance-type NotIn t3.micro; pref w1: kubernetes.io/arch In arm64; "
          "topology.kubernetes.io/region Exists; prio 0 ds 0 unsched 0 phase 0 node  owners 0 ann 0" },
        { "unknown node affinity operator",
          POD("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Near,"
              " values: [a]}]}]}}}\n  containers: [{name: a}]\n"),
          TLR_E_PARSE, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                       ".nodeSelectorTerms[0].matchExpressions[0]: unknown operator \"Near\"" },
        { "Gte is Karpenter-only",
          POD("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Gte,"
              " values: [\"1\"]}]}]}}}\n  containers: [{name: a}]\n"),
          TLR_E_PARSE, "unknown operator \"Gte\"" },
        { "In without values",
          POD("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: In}]}]}}}\n"
              "  containers: [{name: a}]\n"),
          TLR_E_INVAL, "operator In needs at least one value (key k)" },
        { "Gt with a word",
          POD("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Gt,"
              " values: [many]}]}]}}}\n  containers: [{name: a}]\n"),
          TLR_E_INVAL, "operator Gt needs exactly one integer value" },
        { "maxSkew 0",
          POD("  topologySpreadConstraints: [{maxSkew: 0, topologyKey: z,"
              " whenUnsatisfiable: DoNotSchedule}]\n  containers: [{name: a}]\n"),
          TLR_E_INVAL, "spec.topologySpreadConstraints[0].maxSkew: must be greater than zero" },
        { "minDomains with ScheduleAnyway",
          POD("  topologySpreadConstraints: [{maxSkew: 1, topologyKey: z, minDomains: 2,"
              " whenUnsatisfiable: ScheduleAnyway}]\n  containers: [{name: a}]\n"),
          TLR_E_INVAL, "minDomains: only allowed with whenUnsatisfiable DoNotSchedule" },
        { "whenUnsatisfiable missing",
          POD("  topologySpreadConstraints: [{maxSkew: 1, topologyKey: z}]\n"
              "  containers: [{name: a}]\n"),
          TLR_E_INVAL, "whenUnsatisfiable \"\" is not DoNotSchedule or ScheduleAnyway" },
        { "toleration operator",
          POD("  tolerations: [{key: k, operator: Maybe}]\n  containers: [{name: a}]\n"),
          TLR_E_PARSE, "spec.tolerations[0]: unknown operator \"Maybe\"" },
        { "toleration effect",
          POD("  tolerations: [{key: k, operator: Exists, effect: Sometimes}]\n"
              "  containers: [{name: a}]\n"),
          TLR_E_PARSE, "spec.tolerations[0]: effect \"Sometimes\"" },
        { "preferred weight out of range",
          POD("  affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution:"
              " [{weight: 101, podAffinityTerm: {topologyKey: z}}]}}\n"
              "  containers: [{name: a}]\n"),
          TLR_E_RANGE, "preferredDuringSchedulingIgnoredDuringExecution[0]: 101 is outside 1..100" },
        { "pod affinity term without topologyKey",
          POD("  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " [{labelSelector: {}}]}}\n  containers: [{name: a}]\n"),
          TLR_E_INVAL, "topologyKey is required" },
        { "host port out of range",
          POD("  containers: [{name: a, ports: [{containerPort: 1, hostPort: 70000}]}]\n"),
          TLR_E_RANGE, "spec.containers[0].ports[0]: 70000 is outside 0..65535" },
        { "nodeSelector value not a string",
          POD("  nodeSelector: {a: [1]}\n  containers: [{name: a}]\n"),
          TLR_E_PARSE, "spec.nodeSelector: value of \"a\": want a string, got a list" },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *o = obj_of(t[i].yaml);
        Tailor__V1__Pod *p = NULL;
        char err[TLR_KUBEOBJ_ERRLEN] = "";
        int rc = tlr_kubeobj_pod(o, NULL, &p, err, sizeof(err));

        if (rc != t[i].rc) {
            printf("FAIL %s: got %s (%s), want %s\n", t[i].name, tlr_errname(rc), err,
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc == TLR_OK) {
            char *got = placement_summary(p);
            if (strcmp(got, t[i].want) != 0) {
                printf("FAIL %s:\n  got  %s\n  want %s\n", t[i].name, got, t[i].want);
                failures++;
            }
            free(got);
        } else if (strstr(err, t[i].want) == NULL) {
            printf("FAIL %s: got \"%s\", want it to contain \"%s\"\n", t[i].name, err,
                   t[i].want);
            failures++;
        }
        tlr_kubeobj_free(p);
        json_object_put(o);
    }
    assert_int_equal(failures, 0);
}

/* ---- Karpenter objects, nodes, PDBs, DaemonSets -------------------------- */

typedef char *(*summarize_fn)(json_object *o, int *rc, char *err, size_t errlen);

static char *sum_nodepool(json_object *o, int *rc, char *err, size_t errlen)
{
    Tailor__V1__NodePool *p = NULL;
    tlr_buf b;

    if ((*rc = tlr_kubeobj_nodepool(o, NULL, &p, err, errlen)) != TLR_OK)
        return NULL;
    tlr_buf_init(&b, 1 << 16);
    tlr_buf_printf(&b, "%s w%d class %s/%s/%s exp %lld never %d tgp %lld | ", p->name,
                   p->weight, p->node_class_ref->group, p->node_class_ref->kind,
                   p->node_class_ref->name, (long long)p->expire_after_ms, p->expire_never,
                   (long long)p->termination_grace_period_ms);
    add_reqs(&b, p->requirements, p->n_requirements);
    for (size_t i = 0; i < p->n_labels; i++)
        tlr_buf_printf(&b, "label %s=%s; ", p->labels[i]->key, p->labels[i]->value);
    for (size_t i = 0; i < p->n_taints; i++)
        tlr_buf_printf(&b, "taint %s:%d; ", p->taints[i]->key, p->taints[i]->effect);
    for (size_t i = 0; i < p->n_startup_taints; i++)
        tlr_buf_printf(&b, "startup %s; ", p->startup_taints[i]->key);
    tlr_buf_printf(&b, "| policy %d after %lld never %d budgets", p->disruption->consolidation_policy,
                   (long long)p->disruption->consolidate_after_ms,
                   p->disruption->consolidate_after_never);
    for (size_t i = 0; i < p->disruption->n_budgets; i++)
        tlr_buf_printf(&b, " %s/%s/%lld/%zu", p->disruption->budgets[i]->nodes,
                       p->disruption->budgets[i]->schedule,
                       (long long)p->disruption->budgets[i]->duration_ms,
                       p->disruption->budgets[i]->n_reasons);
    if (p->limits != NULL)
        tlr_buf_printf(&b, " | limits cpu %d:%lld mem %d:%lld nodes %d:%lld ext %zu",
                       p->limits->has_cpu, (long long)p->limits->cpu_millis, p->limits->has_memory,
                       (long long)p->limits->memory_bytes, p->limits->has_nodes,
                       (long long)p->limits->nodes, p->limits->n_extended);
    tlr_kubeobj_free(p);
    return tlr_buf_take(&b);
}

static char *sum_nodeclass(json_object *o, int *rc, char *err, size_t errlen)
{
    Tailor__V1__NodeClass *n = NULL;
    tlr_buf b;

    if ((*rc = tlr_kubeobj_nodeclass(o, NULL, &n, err, errlen)) != TLR_OK)
        return NULL;
    tlr_buf_init(&b, 1 << 16);
    tlr_buf_printf(&b, "%s %s ami %s subnets %zu sgs %zu role %s prof %s tags %zu bdm %zu",
                   n->name, n->ami_family, n->ami_selector_terms[0]->alias,
                   n->n_subnet_selector_terms,
                   n->n_security_group_selector_terms, n->role, n->instance_profile, n->n_tags,
                   n->n_block_device_mappings);
    if (n->n_block_device_mappings > 0 && n->block_device_mappings[0]->ebs != NULL)
        tlr_buf_printf(&b, " vol %lld %s iops %d tp %d enc %d/%d",
                       (long long)n->block_device_mappings[0]->ebs->volume_size_bytes,
                       n->block_device_mappings[0]->ebs->volume_type,
                       n->block_device_mappings[0]->ebs->iops,
                       n->block_device_mappings[0]->ebs->throughput_mibps,
                       n->block_device_mappings[0]->ebs->has_encrypted,
                       n->block_device_mappings[0]->ebs->encrypted);
    tlr_buf_printf(&b, " md %s/%s/%d/%s", n->metadata_options->http_endpoint,
                   n->metadata_options->http_protocol_ipv6,
                   n->metadata_options->http_put_response_hop_limit,
                   n->metadata_options->http_tokens);
    if (n->kubelet != NULL)
        tlr_buf_printf(&b, " kubelet maxPods %d", n->kubelet->max_pods);
    tlr_buf_printf(&b, " status amis %zu subnets %zu ready %d", n->n_amis, n->n_subnets, n->ready);
    if (n->n_subnets > 0)
        tlr_buf_printf(&b, " zone %s", n->subnets[0]->zone);
    tlr_kubeobj_free(n);
    return tlr_buf_take(&b);
}

static char *sum_node(json_object *o, int *rc, char *err, size_t errlen)
{
    Tailor__V1__Node *n = NULL;
    tlr_buf b;

    if ((*rc = tlr_kubeobj_node(o, NULL, &n, err, errlen)) != TLR_OK)
        return NULL;
    tlr_buf_init(&b, 1 << 16);
    tlr_buf_printf(&b, "%s managed %d pool %s type %s zone %s ct %d claim %s ready %d unsched %d "
                   "init %d marked %d taints %zu pid %s ",
                   n->name, n->managed, n->nodepool, n->instance_type, n->zone, n->capacity_type,
                   n->nodeclaim_name, n->ready, n->unschedulable, n->initialized,
                   n->marked_for_deletion, n->n_taints, n->provider_id);
    add_res(&b, "alloc", n->allocatable);
    tlr_kubeobj_free(n);
    return tlr_buf_take(&b);
}

static char *sum_pdb(json_object *o, int *rc, char *err, size_t errlen)
{
    Tailor__V1__PodDisruptionBudget *p = NULL;
    tlr_buf b;

    if ((*rc = tlr_kubeobj_pdb(o, NULL, &p, err, errlen)) != TLR_OK)
        return NULL;
    tlr_buf_init(&b, 1 << 16);
    tlr_buf_printf(&b, "%s/%s sel %s min %s max %s allowed %d policy %d", p->namespace_, p->name,
                   p->selector ? "set" : "nil",
                   p->min_available == NULL ? "unset"
                   : p->min_available->value_case == TAILOR__V1__INT_OR_STRING__VALUE_STR_VALUE
                       ? p->min_available->str_value : "int",
                   p->max_unavailable == NULL ? "unset" : "set", p->disruptions_allowed,
                   p->unhealthy_pod_eviction_policy);
    tlr_kubeobj_free(p);
    return tlr_buf_take(&b);
}

static char *sum_daemonset(json_object *o, int *rc, char *err, size_t errlen)
{
    Tailor__V1__DaemonSet *d = NULL;
    tlr_buf b;

    if ((*rc = tlr_kubeobj_daemonset(o, NULL, &d, err, errlen)) != TLR_OK)
        return NULL;
    tlr_buf_init(&b, 1 << 16);
    tlr_buf_printf(&b, "%s/%s ds %d tol %zu ", d->namespace_, d->name, d->pod_template->is_daemonset,
                   d->pod_template->n_tolerations);
    add_res(&b, "req", d->pod_template->requests);
    tlr_kubeobj_free(d);
    return tlr_buf_take(&b);
}

static char *sum_nodeclaim(json_object *o, int *rc, char *err, size_t errlen)
{
    Tailor__V1__NodeClaim *n = NULL;
    tlr_buf b;

    if ((*rc = tlr_kubeobj_nodeclaim(o, NULL, &n, err, errlen)) != TLR_OK)
        return NULL;
    tlr_buf_init(&b, 1 << 16);
    tlr_buf_printf(&b, "%s pool %s class %s phase %d type %s iid %s ", n->name, n->nodepool,
                   n->node_class, n->status->phase, n->status->instance_type,
                   n->status->instance_id);
    add_reqs(&b, n->requirements, n->n_requirements);
    add_res(&b, "req", n->resources_requested);
    tlr_kubeobj_free(n);
    return tlr_buf_take(&b);
}

typedef struct ocase {
    const char *name;
    summarize_fn fn;
    const char *yaml;
    int rc;
    const char *want;
} ocase;

#define NP_HEAD "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: general}\n"
#define NP_REF "  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, " \
               "kind: EC2NodeClass, name: default}\n"
#define NP_TMPL NP_REF "      requirements: []\n"
#define NC_HEAD "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\n"

static void test_objects(void **state)
{
    static const ocase t[] = {
        { "NodePool with defaults", sum_nodepool, NP_HEAD "spec:\n" NP_TMPL, TLR_OK,
          "general w0 class karpenter.k8s.aws/EC2NodeClass/default exp 2592000000 never 0 tgp 0 "
          "| | policy 2 after 0 never 0 budgets 10%//0/0" },
        { "NodePool, everything", sum_nodepool,
          NP_HEAD
          "spec:\n"
          "  weight: 50\n"
          "  limits: {cpu: 1000, memory: 1000Gi, nodes: 10}\n"
          "  disruption:\n"
          "    consolidationPolicy: WhenEmpty\n"
          "    consolidateAfter: 5m\n"
          "    budgets:\n"
          "    - nodes: \"20%\"\n"
          "      reasons: [Empty, Drifted]\n"
          "    - {nodes: \"0\", schedule: \"@daily\", duration: 10m}\n"
          "  template:\n"
          "    metadata: {labels: {team: a}}\n"
          "    spec:\n"
          "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
          "      expireAfter: Never\n"
          "      terminationGracePeriod: 48h\n"
          "      taints: [{key: gpu, effect: NoSchedule}]\n"
          "      startupTaints: [{key: init, effect: NoExecute}]\n"
          "      requirements:\n"
          "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5, r5],"
          " minValues: 2}\n"
          "      - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: [\"4\"]}\n"
          "      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}\n",
          TLR_OK,
          "general w50 class karpenter.k8s.aws/EC2NodeClass/default exp 2592000000 never 1 "
          "tgp 172800000 | karpenter.k8s.aws/instance-family In m5,c5,r5 min=2; "
          "karpenter.k8s.aws/instance-cpu Gte 4; karpenter.sh/capacity-type In spot,on-demand; "
          "label team=a; taint gpu:1; startup init; | policy 1 after 300000 never 0 budgets "
          "20%//0/2 0/@daily/600000/0 | limits cpu 1:1000000 mem 1:1073741824000 nodes 1:10 "
          "ext 0" },
        { "NodePool weight out of range", sum_nodepool,
          NP_HEAD "spec:\n  weight: 300\n" NP_TMPL, TLR_E_RANGE,
          "NodePool general: spec.weight: 300 is outside 1..100" },
        { "NodePool weight 0 is not a weight", sum_nodepool,
          NP_HEAD "spec:\n  weight: 0\n" NP_TMPL, TLR_E_RANGE, "spec.weight: 0 is outside 1..100" },
        { "NodePool disruption written as a list", sum_nodepool,
          NP_HEAD "spec:\n  disruption: []\n" NP_TMPL, TLR_E_PARSE,
          "NodePool general: spec.disruption: want an object, got a list" },
        { "NodePool template metadata written as a list", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    metadata: []\n    spec:\n"
          "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
          "      requirements: []\n", TLR_E_PARSE,
          "NodePool general: spec.template.metadata: want an object, got a list" },
        { "NodePool limit of 1.5 (a number, not int-or-string)", sum_nodepool,
          NP_HEAD "spec:\n  limits: {cpu: 1.5}\n" NP_TMPL, TLR_E_PARSE,
          "NodePool general: spec.limits.cpu: want an integer or a quantity string, got the "
          "number 1.5" },
        { "NodePool taint value longer than a qualified name", sum_nodepool,
          NP_HEAD "spec:\n" NP_TMPL "      taints: [{key: a, effect: NoSchedule, value: "
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}]\n", TLR_E_PARSE,
          "NodePool general: spec.template.spec.taints[0]: value \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" is not a qualified name" },
        { "NodePool without nodeClassRef", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    spec: {requirements: []}\n", TLR_E_INVAL,
          "NodePool general: spec.template.spec.nodeClassRef: is required" },
        { "NodePool minValues beyond its values", sum_nodepool,
          NP_HEAD "spec:\n" NP_REF
          "      requirements: [{key: f, operator: In, values: [a], minValues: 2}]\n",
          TLR_E_INVAL, "requirements[0]: operator In minValues is larger than the number" },
        { "NodePool bad budget", sum_nodepool,
          NP_HEAD "spec:\n  disruption: {consolidateAfter: 0s, budgets: [{nodes: lots}]}\n" NP_TMPL, TLR_E_PARSE,
          "spec.disruption.budgets[0]: nodes \"lots\" is not a count or a percentage" },
        { "NodePool schedule without duration", sum_nodepool,
          NP_HEAD "spec:\n  disruption: {consolidateAfter: 0s, budgets: [{nodes: \"1\", schedule: \"@daily\"}]}\n"
          NP_TMPL, TLR_E_INVAL, "schedule and duration must be set together" },
        { "NodePool bad expireAfter", sum_nodepool,
          NP_HEAD "spec:\n" NP_TMPL "      expireAfter: soon\n", TLR_E_PARSE,
          "spec.template.spec.expireAfter: \"soon\" is not a duration in h, m and s" },
        { "NodePool negative limit", sum_nodepool,
          NP_HEAD "spec:\n  limits: {cpu: \"-5\"}\n" NP_TMPL, TLR_E_PARSE,
          "spec.limits.cpu: \"-5\" is negative" },
        { "NodePool without a name", sum_nodepool,
          "kind: NodePool\nspec:\n" NP_TMPL, TLR_E_INVAL, "metadata.name: is required" },

        { "EC2NodeClass", sum_nodeclass,
          NC_HEAD
          "spec:\n"
          "  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c1}}, {id: subnet-1}]\n"
          "  securityGroupSelectorTerms: [{name: sg}]\n"
          "  role: KarpenterNodeRole\n"
          "  tags: {team: a}\n"
          "  kubelet: {maxPods: 110}\n"
          "  blockDeviceMappings:\n"
          "  - deviceName: /dev/xvda\n"
          "    rootVolume: true\n"
          "    ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 3000, throughput: 125,"
          " encrypted: true}\n"
          "status:\n"
          "  subnets: [{id: subnet-1, zone: us-east-1a, zoneID: use1-az1}]\n"
          "  amis: [{id: ami-1, name: al2023, requirements: [{key: kubernetes.io/arch,"
          " operator: In, values: [amd64]}]}]\n"
          "  conditions: [{type: Ready, status: \"True\"}]\n",
          TLR_OK,
          "default AL2023 ami al2023@latest subnets 2 sgs 1 role KarpenterNodeRole prof  tags 1 bdm 1 "
          "vol 107374182400 gp3 iops 3000 tp 125 enc 1/1 md enabled/disabled/1/required "
          "kubelet maxPods 110 status amis 1 subnets 1 ready 1 zone us-east-1a" },
        { "EC2NodeClass with neither role nor profile", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n",
          TLR_E_INVAL, "EC2NodeClass default: spec.role: exactly one of role and instanceProfile" },
        { "EC2NodeClass alias mixed with id", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest, id: ami-1}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "spec.amiSelectorTerms[0]: alias must be the only term" },
        { "EC2NodeClass without subnets", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{id: ami-1}]\n"
          "  securityGroupSelectorTerms: [{id: sg-1}]\n  role: r\n",
          TLR_E_INVAL, "spec.subnetSelectorTerms: at least one term is required" },
        { "EC2NodeClass empty selector term", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{id: ami-1}]\n  subnetSelectorTerms: [{}]\n"
          "  securityGroupSelectorTerms: [{id: sg-1}]\n  role: r\n",
          TLR_E_INVAL, "spec.subnetSelectorTerms[0]: a term must set id or tags" },
        { "EC2NodeClass garbage volume size", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{id: ami-1}]\n  subnetSelectorTerms: [{id: subnet-1}]\n"
          "  securityGroupSelectorTerms: [{id: sg-1}]\n  instanceProfile: p\n"
          "  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: huge}}]\n",
          TLR_E_PARSE, "spec.blockDeviceMappings[0].ebs.volumeSize: \"huge\" is not a size" },
        { "EC2NodeClass id term with amiFamily", sum_nodeclass,
          NC_HEAD "spec:\n  amiFamily: Bottlerocket\n  amiSelectorTerms: [{id: ami-1}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  kubelet: {maxPods: 5, evictionMaxPodGracePeriod: 30}\n",
          TLR_OK, "default Bottlerocket ami  subnets 1 sgs 1 role r prof  tags 0 bdm 0 "
          "md enabled/disabled/1/required kubelet maxPods 5 status amis 0 subnets 0 ready 0" },
        { "EC2NodeClass id term without amiFamily", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{id: ami-1}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "spec.amiFamily: must be set when amiSelectorTerms has no alias" },
        { "EC2NodeClass amiFamily against its alias", sum_nodeclass,
          NC_HEAD "spec:\n  amiFamily: AL2\n  amiSelectorTerms: [{alias: bottlerocket@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "spec.amiFamily: must be 'Bottlerocket' or 'Custom' when using the alias" },
        { "EC2NodeClass Custom with an alias", sum_nodeclass,
          NC_HEAD "spec:\n  amiFamily: Custom\n  amiSelectorTerms: [{alias: al2023@v20250101}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_OK, "default Custom ami al2023@v20250101 subnets 1 sgs 1 role r prof  tags 0 bdm 0 "
          "md enabled/disabled/1/required status amis 0 subnets 0 ready 0" },
        { "EC2NodeClass unknown amiFamily", sum_nodeclass,
          NC_HEAD "spec:\n  amiFamily: Ubuntu\n  amiSelectorTerms: [{id: ami-1}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "spec.amiFamily: \"Ubuntu\" is not one of AL2, AL2023" },
        { "EC2NodeClass unknown alias family", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: ubuntu@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "alias: family of \"ubuntu@latest\" is not one of" },
        { "EC2NodeClass hop limit", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{id: ami-1}]\n  subnetSelectorTerms: [{id: subnet-1}]\n"
          "  securityGroupSelectorTerms: [{id: sg-1}]\n  role: r\n"
          "  metadataOptions: {httpPutResponseHopLimit: 99}\n",
          TLR_E_RANGE, "spec.metadataOptions: 99 is outside 1..64" },

        { "Node from Karpenter", sum_node,
          "kind: Node\n"
          "metadata:\n"
          "  name: ip-10-0-1-1\n"
          "  labels: {karpenter.sh/nodepool: general, node.kubernetes.io/instance-type: m5.large,"
          " topology.kubernetes.io/zone: us-east-1a, karpenter.sh/capacity-type: spot,"
          " karpenter.sh/initialized: \"true\"}\n"
          "  ownerReferences: [{kind: NodeClaim, name: general-abcde, uid: u}]\n"
          "spec:\n"
          "  providerID: aws:///us-east-1a/i-0abc\n"
          "  taints: [{key: karpenter.sh/disrupted, effect: NoSchedule}]\n"
          "status:\n"
          "  allocatable: {cpu: 1930m, memory: 7068912Ki, pods: \"29\"}\n"
          "  conditions: [{type: Ready, status: \"True\"}]\n",
          TLR_OK,
          "ip-10-0-1-1 managed 1 pool general type m5.large zone us-east-1a ct 2 claim "
          "general-abcde ready 1 unsched 0 init 1 marked 1 taints 1 pid aws:///us-east-1a/i-0abc "
          "alloc{cpu=1930 mem=7238565888 pods=29 eph=0} " },
        { "Node not managed, cordoned", sum_node,
          "kind: Node\nmetadata: {name: n1}\nspec: {unschedulable: true}\n", TLR_OK,
          "n1 managed 0 pool  type  zone  ct 0 claim  ready 0 unsched 1 init 0 marked 0 taints 0 "
          "pid  alloc{cpu=0 mem=0 pods=0 eph=0} " },
        { "Node taint without effect", sum_node,
          "kind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: a}]}\n", TLR_E_PARSE,
          "Node n1: spec.taints[0]: effect \"\" is not NoSchedule" },

        { "PDB", sum_pdb,
          "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: a}\n"
          "spec: {minAvailable: \"50%\", selector: {matchLabels: {app: web}}}\n"
          "status: {disruptionsAllowed: 2}\n",
          TLR_OK, "a/web sel set min 50% max unset allowed 2 policy 1" },
        { "PDB both bounds", sum_pdb,
          "kind: PodDisruptionBudget\nmetadata: {name: web}\n"
          "spec: {minAvailable: 1, maxUnavailable: 1}\n",
          TLR_E_INVAL, "PodDisruptionBudget web: spec: minAvailable and maxUnavailable cannot" },
        { "PDB bad percentage", sum_pdb,
          "kind: PodDisruptionBudget\nmetadata: {name: web}\nspec: {maxUnavailable: \"150%\"}\n",
          TLR_E_PARSE, "spec.maxUnavailable: \"150%\" is not a count or a percentage" },

        { "DaemonSet", sum_daemonset,
          "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: kube-system}\n"
          "spec:\n  template:\n    metadata: {labels: {app: agent}}\n    spec:\n"
          "      tolerations: [{operator: Exists}]\n"
          "      containers: [{name: a, resources: {requests: {cpu: 100m, memory: 128Mi}}}]\n",
          TLR_OK, "kube-system/agent ds 1 tol 1 req{cpu=100 mem=134217728 pods=1 eph=0} " },
        { "DaemonSet with a bad template", sum_daemonset,
          "kind: DaemonSet\nmetadata: {name: agent}\nspec:\n  template:\n    spec:\n"
          "      containers: [{name: a, resources: {requests: {cpu: x}}}]\n",
          TLR_E_PARSE,
          "DaemonSet agent: spec.template.spec.containers[0].resources.requests.cpu: \"x\"" },

        { "NodeClaim", sum_nodeclaim,
          "apiVersion: karpenter.sh/v1\nkind: NodeClaim\n"
          "metadata:\n  name: general-x\n  labels: {karpenter.sh/nodepool: general,"
          " node.kubernetes.io/instance-type: c5.large}\n"
          "spec:\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
          "  requirements: [{key: node.kubernetes.io/instance-type, operator: In,"
          " values: [c5.large, m5.large]}]\n"
          "  resources: {requests: {cpu: 500m}}\n"
          "status:\n  providerID: aws:///us-east-1a/i-0123\n"
          "  conditions: [{type: Launched, status: \"True\"}, {type: Registered,"
          " status: \"True\"}]\n",
          TLR_OK,
          "general-x pool general class default phase 3 type c5.large iid i-0123 "
          "node.kubernetes.io/instance-type In c5.large,m5.large; "
          "req{cpu=500 mem=0 pods=0 eph=0} " },

        /* ---- Karpenter v1.14 CRD rules (issue 13) ---- */
        { "NodePool consolidationPolicy Balanced is valid", sum_nodepool,
          NP_HEAD "spec:\n  disruption: {consolidationPolicy: Balanced, consolidateAfter: 1m}\n"
          NP_TMPL, TLR_OK,
          "general w0 class karpenter.k8s.aws/EC2NodeClass/default exp 2592000000 never 0 tgp 0 "
          "| | policy 2 after 60000 never 0 budgets 10%//0/0" },
        { "NodePool unknown consolidationPolicy", sum_nodepool,
          NP_HEAD "spec:\n  disruption: {consolidationPolicy: Always, consolidateAfter: 1m}\n"
          NP_TMPL, TLR_E_PARSE,
          "spec.disruption.consolidationPolicy: \"Always\" is not WhenEmpty, "
          "WhenEmptyOrUnderutilized or Balanced" },
        { "NodePool disruption without consolidateAfter", sum_nodepool,
          NP_HEAD "spec:\n  disruption: {consolidationPolicy: WhenEmpty}\n" NP_TMPL, TLR_E_INVAL,
          "NodePool general: spec.disruption.consolidateAfter: is required" },
        { "NodePool nodeClassRef group with a version", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    spec:\n      requirements: []\n"
          "      nodeClassRef: {group: karpenter.k8s.aws/v1, kind: EC2NodeClass, name: default}\n",
          TLR_E_PARSE, "NodePool general: spec.template.spec.nodeClassRef: group "
          "\"karpenter.k8s.aws/v1\" is an API group, without a version" },
        { "NodePool nodeClassRef without kind", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    spec:\n      requirements: []\n"
          "      nodeClassRef: {group: karpenter.k8s.aws, name: default}\n",
          TLR_E_INVAL, "spec.template.spec.nodeClassRef.kind: is required" },
        { "NodePool nodeClassRef empty group", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    spec:\n      requirements: []\n"
          "      nodeClassRef: {group: \"\", kind: EC2NodeClass, name: default}\n",
          TLR_E_INVAL, "spec.template.spec.nodeClassRef.group: group may not be empty" },
        { "NodePool without requirements", sum_nodepool, NP_HEAD "spec:\n" NP_REF, TLR_E_INVAL,
          "NodePool general: spec.template.spec.requirements: is required" },
        { "NodePool static (replicas)", sum_nodepool, NP_HEAD "spec:\n  replicas: 3\n" NP_TMPL,
          TLR_E_INVAL, "NodePool general: spec.replicas: static NodePools (spec.replicas) are "
          "not supported by tailor" },
        { "NodePool label karpenter.sh/nodepool", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    metadata: {labels: {karpenter.sh/nodepool: x}}\n"
          "    spec:\n      nodeClassRef: {group: g, kind: k, name: np}\n      requirements: []\n",
          TLR_E_INVAL, "spec.template.metadata.labels[karpenter.sh/nodepool]: label "
          "\"karpenter.sh/nodepool\" is restricted" },
        { "NodePool label kubernetes.io/hostname", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    metadata: {labels: {kubernetes.io/hostname: x}}\n"
          "    spec:\n      nodeClassRef: {group: g, kind: k, name: np}\n      requirements: []\n",
          TLR_E_INVAL, "label \"kubernetes.io/hostname\" is restricted" },
        { "NodePool label in a karpenter.sh subdomain", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    metadata: {labels: {team.karpenter.sh/x: y}}\n"
          "    spec:\n      nodeClassRef: {group: g, kind: k, name: np}\n      requirements: []\n",
          TLR_E_INVAL, "label domain \"karpenter.sh\" is restricted" },
        { "NodePool label karpenter.k8s.aws not on the list", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    metadata: {labels: {karpenter.k8s.aws/mine: y}}\n"
          "    spec:\n      nodeClassRef: {group: g, kind: k, name: np}\n      requirements: []\n",
          TLR_E_INVAL, "label domain \"karpenter.k8s.aws\" is restricted" },
        { "NodePool allowed labels", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    metadata: {labels: {karpenter.sh/capacity-type: spot,"
          " karpenter.k8s.aws/instance-family: m5, node.kubernetes.io/role: w}}\n"
          "    spec:\n      nodeClassRef: {group: g, kind: k, name: np}\n      requirements: []\n",
          TLR_OK, "general w0 class g/k/np exp 2592000000 never 0 tgp 0 | "
          "label karpenter.k8s.aws/instance-family=m5; label karpenter.sh/capacity-type=spot; "
          "label node.kubernetes.io/role=w; | policy 2 after 0 never 0 budgets 10%//0/0" },
        { "NodePool label value not a label value", sum_nodepool,
          NP_HEAD "spec:\n  template:\n    metadata: {labels: {team: \"a b\"}}\n"
          "    spec:\n      nodeClassRef: {group: g, kind: k, name: np}\n      requirements: []\n",
          TLR_E_PARSE, "spec.template.metadata.labels[team]: value \"a b\" is not a label value" },
        { "NodePool requirement on kubernetes.io/hostname", sum_nodepool,
          NP_HEAD "spec:\n" NP_REF
          "      requirements: [{key: kubernetes.io/hostname, operator: Exists}]\n",
          TLR_E_INVAL, "spec.template.spec.requirements[0]: key kubernetes.io/hostname: label "
          "\"kubernetes.io/hostname\" is restricted" },
        { "NodePool requirement on karpenter.sh/nodepool", sum_nodepool,
          NP_HEAD "spec:\n" NP_REF
          "      requirements: [{key: karpenter.sh/nodepool, operator: Exists}]\n",
          TLR_E_INVAL, "label \"karpenter.sh/nodepool\" is restricted" },
        { "NodePool requirement key not a qualified name", sum_nodepool,
          NP_HEAD "spec:\n" NP_REF "      requirements: [{key: \"-bad\", operator: Exists}]\n",
          TLR_E_PARSE, "requirements[0]: key \"-bad\" is not a qualified name" },
        { "NodePool Gt a negative integer", sum_nodepool,
          NP_HEAD "spec:\n" NP_REF
          "      requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt,"
          " values: [\"-1\"]}]\n",
          TLR_E_INVAL, "need a single non-negative integer value" },
        { "NodePool capacity-type with no known value", sum_nodepool,
          NP_HEAD "spec:\n" NP_REF
          "      requirements: [{key: karpenter.sh/capacity-type, operator: In,"
          " values: [spotty]}]\n",
          TLR_E_INVAL, "karpenter.sh/capacity-type: none of the values is one Karpenter knows" },
        { "NodePool expireAfter in Go-only units", sum_nodepool,
          NP_HEAD "spec:\n" NP_TMPL "      expireAfter: 1.5h\n", TLR_E_PARSE,
          "spec.template.spec.expireAfter: \"1.5h\" is not a duration in h, m and s" },
        { "NodePool terminationGracePeriod Never", sum_nodepool,
          NP_HEAD "spec:\n" NP_TMPL "      terminationGracePeriod: Never\n", TLR_E_PARSE,
          "spec.template.spec.terminationGracePeriod: \"Never\" is not a duration" },
        { "NodePool consolidateAfter in ms", sum_nodepool,
          NP_HEAD "spec:\n  disruption: {consolidateAfter: 500ms}\n" NP_TMPL, TLR_E_PARSE,
          "spec.disruption.consolidateAfter: \"500ms\" is not a duration" },
        { "NodePool budget duration in seconds", sum_nodepool,
          NP_HEAD "spec:\n  disruption:\n    consolidateAfter: 0s\n    budgets: [{nodes: \"1\","
          " schedule: \"@daily\", duration: 30s}]\n" NP_TMPL, TLR_E_PARSE,
          "spec.disruption.budgets[0].duration: \"30s\" is not a duration in whole hours" },
        { "NodePool budget schedule not cron", sum_nodepool,
          NP_HEAD "spec:\n  disruption:\n    consolidateAfter: 0s\n    budgets: [{nodes: \"1\","
          " schedule: daily, duration: 1h}]\n" NP_TMPL, TLR_E_PARSE,
          "spec.disruption.budgets[0].schedule: \"daily\" is not a cron schedule" },
        { "NodePool budget cron and reasons", sum_nodepool,
          NP_HEAD "spec:\n  disruption:\n    consolidateAfter: 0s\n    budgets: [{nodes: \"1\","
          " schedule: \"0 9 * * mon-fri\", duration: 8h30m, reasons: [Empty]}]\n" NP_TMPL, TLR_OK,
          "general w0 class karpenter.k8s.aws/EC2NodeClass/default exp 2592000000 never 0 tgp 0 "
          "| | policy 2 after 0 never 0 budgets 1/0 9 * * mon-fri/30600000/1" },
        { "NodePool budget reason twice", sum_nodepool,
          NP_HEAD "spec:\n  disruption:\n    consolidateAfter: 0s\n    budgets: [{nodes: \"1\","
          " reasons: [Empty, Empty]}]\n" NP_TMPL, TLR_E_INVAL, "reason Empty is listed twice" },
        { "NodePool taint key not a qualified name", sum_nodepool,
          NP_HEAD "spec:\n" NP_TMPL "      taints: [{key: \"a b\", effect: NoSchedule}]\n",
          TLR_E_PARSE, "spec.template.spec.taints[0]: key \"a b\" is not a qualified name" },
        { "NodePool taint in both lists", sum_nodepool,
          NP_HEAD "spec:\n" NP_TMPL "      taints: [{key: gpu, effect: NoSchedule}]\n"
          "      startupTaints: [{key: gpu, effect: NoSchedule}]\n",
          TLR_E_INVAL, "spec.template.spec.startupTaints[0]: duplicate taint key/effect pair" },

        { "EC2NodeClass capacity reservation by instanceMatchCriteria", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  capacityReservationSelectorTerms: [{instanceMatchCriteria: open}]\n",
          TLR_OK, "default AL2023 ami al2023@latest subnets 1 sgs 1 role r prof  tags 0 bdm 0 "
          "md enabled/disabled/1/required status amis 0 subnets 0 ready 0" },
        { "EC2NodeClass capacity reservation bad criteria", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  capacityReservationSelectorTerms: [{instanceMatchCriteria: any}]\n",
          TLR_E_PARSE, "spec.capacityReservationSelectorTerms[0]: instanceMatchCriteria \"any\" "
          "is not open or targeted" },
        { "EC2NodeClass capacity reservation id with owner", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  capacityReservationSelectorTerms: [{id: cr-1, ownerID: \"123456789012\"}]\n",
          TLR_E_INVAL, "spec.capacityReservationSelectorTerms: 'id' is mutually exclusive" },
        { "EC2NodeClass AMI owner alone", sum_nodeclass,
          NC_HEAD "spec:\n  amiFamily: AL2023\n  amiSelectorTerms: [{owner: self}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "spec.amiSelectorTerms[0]: a term must set alias, id, name, tags" },
        { "EC2NodeClass AMI id with owner", sum_nodeclass,
          NC_HEAD "spec:\n  amiFamily: AL2023\n  amiSelectorTerms: [{id: ami-1, owner: self}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "'id' is mutually exclusive" },
        { "EC2NodeClass windows alias pinned", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: windows2022@v20250101}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "windows families may only specify version 'latest'" },
        { "EC2NodeClass subnet id pattern", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: sn-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_PARSE, "spec.subnetSelectorTerms[0]: id \"sn-1\" is not a subnet id" },
        { "EC2NodeClass security group name with tags", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n"
          "  securityGroupSelectorTerms: [{name: web, tags: {a: b}}]\n  role: r\n",
          TLR_E_INVAL, "spec.securityGroupSelectorTerms: 'name' is mutually exclusive" },
        { "EC2NodeClass empty tag value in a term", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{tags: {a: \"\"}}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n",
          TLR_E_INVAL, "spec.subnetSelectorTerms[0].tags: empty tag keys or values" },
        { "EC2NodeClass restricted tag", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  tags: {kubernetes.io/cluster/c1: owned}\n",
          TLR_E_INVAL, "spec.tags: tag contains a restricted tag matching kubernetes.io/cluster" },
        { "EC2NodeClass empty role beside a profile", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: \"\"\n  instanceProfile: p\n",
          TLR_E_INVAL, "exactly one of role and instanceProfile" },
        { "EC2NodeClass two root volumes", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  blockDeviceMappings:\n"
          "  - {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}\n"
          "  - {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 20Gi}}\n",
          TLR_E_INVAL, "must have only one blockDeviceMappings with rootVolume" },
        { "EC2NodeClass ebs without size or snapshot", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]\n",
          TLR_E_INVAL, "spec.blockDeviceMappings[0].ebs: snapshotID or volumeSize must be defined" },
        { "EC2NodeClass volume too large", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 70000Gi}}]\n",
          TLR_E_PARSE, "volumeSize: \"70000Gi\" is not a size" },
        { "EC2NodeClass unknown volume type", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  blockDeviceMappings: [{deviceName: /dev/xvda,"
          " ebs: {volumeSize: 20Gi, volumeType: gp9}}]\n",
          TLR_E_PARSE, "volumeType \"gp9\" is not one of" },
        { "EC2NodeClass kubelet unknown eviction signal", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  kubelet: {evictionHard: {memory.free: 100Mi}}\n",
          TLR_E_INVAL, "spec.kubelet.evictionHard[memory.free]: \"memory.free\" isn't a valid "
          "eviction signal" },
        { "EC2NodeClass kubelet soft without grace", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  kubelet: {evictionSoft: {memory.available: 5%}}\n",
          TLR_E_INVAL, "spec.kubelet.evictionSoft[memory.available]: has no matching "
          "evictionSoftGracePeriod" },
        { "EC2NodeClass kubelet threshold percent", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  kubelet: {evictionHard: {nodefs.available: 150%}}\n",
          TLR_E_PARSE, "\"150%\" must be a percentage or a resource quantity" },
        { "EC2NodeClass kubelet reserved gpu", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  kubelet: {kubeReserved: {nvidia.com/gpu: \"1\"}}\n",
          TLR_E_INVAL, "spec.kubelet.kubeReserved: \"nvidia.com/gpu\" isn't a reservable resource" },
        { "EC2NodeClass kubelet GC thresholds equal", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  kubelet: {imageGCHighThresholdPercent: 0, imageGCLowThresholdPercent: 0}\n",
          TLR_E_INVAL, "imageGCHighThresholdPercent (0) must be greater than" },
        { "EC2NodeClass kubelet registerWithTaints", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  kubelet: {registerWithTaints: []}\n",
          TLR_E_INVAL, "spec.kubelet.registerWithTaints: can't be set" },
        { "EC2NodeClass placement group by name and id", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  placementGroupSelector: {name: pg, id: pg-1}\n",
          TLR_E_INVAL, "spec.placementGroupSelector: set exactly one of name and id" },
        { "EC2NodeClass network interfaces without a primary", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  networkInterfaces: [{deviceIndex: 1, networkCardIndex: 0,"
          " interfaceType: efa-only}]\n",
          TLR_E_INVAL, "networkInterfaces must include a primary interface" },
        { "EC2NodeClass connection tracking out of range", sum_nodeclass,
          NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
          "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
          "  role: r\n  connectionTracking: {udpTimeout: 5}\n",
          TLR_E_RANGE, "spec.connectionTracking.udpTimeout: 5 is outside 30..60" },

        { "NodeClaim without nodeClassRef group", sum_nodeclaim,
          "kind: NodeClaim\nmetadata: {name: c}\n"
          "spec:\n  nodeClassRef: {kind: EC2NodeClass, name: default}\n  requirements: []\n",
          TLR_E_INVAL, "NodeClaim c: spec.nodeClassRef.group: is required" },
        { "NodeClaim may require its nodepool", sum_nodeclaim,
          "kind: NodeClaim\nmetadata: {name: c}\n"
          "spec:\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n"
          "  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [general]}]\n",
          TLR_OK, "c pool  class d phase 1 type  iid  karpenter.sh/nodepool In general; "
          "req{cpu=0 mem=0 pods=0 eph=0} " },
        { "NodeClaim resources written as a list", sum_nodeclaim,
          "kind: NodeClaim\nmetadata: {name: c}\n"
          "spec:\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n"
          "  requirements: []\n  resources: []\n",
          TLR_E_PARSE, "NodeClaim c: spec.resources: want an object, got a list" },
        { "NodeClaim request of 0.5 (a number, not int-or-string)", sum_nodeclaim,
          "kind: NodeClaim\nmetadata: {name: c}\n"
          "spec:\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n"
          "  requirements: []\n  resources: {requests: {cpu: 0.5}}\n",
          TLR_E_PARSE, "NodeClaim c: spec.resources.requests.cpu: want an integer or a quantity "
          "string, got the number 0.5 (write it as a string: \"0.5\")" },
        { "NodeClaim requirement on hostname", sum_nodeclaim,
          "kind: NodeClaim\nmetadata: {name: c}\n"
          "spec:\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n"
          "  requirements: [{key: kubernetes.io/hostname, operator: In, values: [h]}]\n",
          TLR_E_INVAL, "spec.requirements[0]: key kubernetes.io/hostname" },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *o = obj_of(t[i].yaml);
        char err[TLR_KUBEOBJ_ERRLEN] = "";
        int rc = -1;
        char *got = t[i].fn(o, &rc, err, sizeof(err));

        if (rc != t[i].rc) {
            printf("FAIL %s: got %s (%s), want %s\n", t[i].name, tlr_errname(rc), err,
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc == TLR_OK && strcmp(got, t[i].want) != 0) {
            printf("FAIL %s:\n  got  %s\n  want %s\n", t[i].name, got, t[i].want);
            failures++;
        } else if (rc != TLR_OK && strstr(err, t[i].want) == NULL) {
            printf("FAIL %s: got \"%s\", want it to contain \"%s\"\n", t[i].name, err,
                   t[i].want);
            failures++;
        }
        free(got);
        json_object_put(o);
    }
    assert_int_equal(failures, 0);
}

/* Warnings: valid fields tailor does not act on are reported through
 * opts.warn, and the conversion still succeeds. */
typedef struct warns { char all[2048]; int n; } warns;

static void collect(void *arg, const char *msg)
{
    warns *w = arg;
    size_t len = strlen(w->all);
    snprintf(w->all + len, sizeof(w->all) - len, "%s\n", msg);
    w->n++;
}

static void test_warnings(void **state)
{
    warns w = { "", 0 };
    tlr_kubeobj_opts opts = { .warn = collect, .warn_arg = &w };
    char err[TLR_KUBEOBJ_ERRLEN];
    (void)state;

    json_object *o = obj_of(NP_HEAD "spec:\n  disruption: {consolidationPolicy: Balanced,"
                            " consolidateAfter: 0s}\n" NP_TMPL);
    Tailor__V1__NodePool *p = NULL;
    assert_int_equal(tlr_kubeobj_nodepool(o, &opts, &p, err, sizeof(err)), TLR_OK);
    assert_int_equal(p->disruption->consolidation_policy,
                     TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_WHEN_EMPTY_OR_UNDERUTILIZED);
    assert_int_equal(p->disruption->consolidation_policy_as_written,
                     TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_BALANCED);
    assert_int_equal(w.n, 1);
    assert_non_null(strstr(w.all, "NodePool general: spec.disruption.consolidationPolicy: "
                                  "Balanced is run as WhenEmptyOrUnderutilized"));
    tlr_kubeobj_free(p);
    json_object_put(o);

    /* a plain pool warns about nothing, and says what it runs */
    w.all[0] = '\0';
    w.n = 0;
    o = obj_of(NP_HEAD "spec:\n" NP_TMPL);
    assert_int_equal(tlr_kubeobj_nodepool(o, &opts, &p, err, sizeof(err)), TLR_OK);
    assert_int_equal(p->disruption->consolidation_policy_as_written,
                     p->disruption->consolidation_policy);
    assert_int_equal(w.n, 0);
    tlr_kubeobj_free(p);
    json_object_put(o);

    o = obj_of(NC_HEAD "spec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
               "  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
               "  role: r\n  capacityReservationSelectorTerms: [{instanceMatchCriteria: open}]\n"
               "  placementGroupSelector: {name: pg}\n  ipPrefixCount: 1\n  context: c\n"
               "  cpuOptions: {nestedVirtualization: enabled}\n"
               "  connectionTracking: {udpTimeout: 30}\n"
               "  networkInterfaces: [{deviceIndex: 0, networkCardIndex: 0,"
               " interfaceType: interface}]\n"
               "  kubelet: {maxPods: 20, containerLogMaxSize: 50Mi,"
               " evictionMinimumReclaim: {memory.available: 1Gi}}\n"
               "  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {snapshotID: snap-1,"
               " volumeInitializationRate: 200}}]\n"
               "  detailedMonitoring: true\n  associatePublicIPAddress: false\n"
               "  instanceStorePolicy: RAID0\n");
    Tailor__V1__NodeClass *nc = NULL;
    w.all[0] = '\0';
    w.n = 0;
    assert_int_equal(tlr_kubeobj_nodeclass(o, &opts, &nc, err, sizeof(err)), TLR_OK);
    static const char *const want[] = {
        "EC2NodeClass default: spec.capacityReservationSelectorTerms: ignored",
        "EC2NodeClass default: spec.placementGroupSelector: ignored",
        "EC2NodeClass default: spec.ipPrefixCount: ignored",
        "EC2NodeClass default: spec.context: ignored",
        "EC2NodeClass default: spec.cpuOptions: ignored",
        "EC2NodeClass default: spec.connectionTracking: ignored",
        "EC2NodeClass default: spec.networkInterfaces: ignored",
        "EC2NodeClass default: spec.kubelet.containerLogMaxSize: ignored",
        "EC2NodeClass default: spec.kubelet.evictionMinimumReclaim: ignored",
        "EC2NodeClass default: spec.blockDeviceMappings[0].ebs: volumeInitializationRate",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(w.all, want[i]) == NULL)
            printf("FAIL warnings: want \"%s\" in\n%s", want[i], w.all);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_non_null(strstr(w.all, want[i]));
    /* detailedMonitoring, associatePublicIPAddress, instanceStorePolicy and
     * maxPods are acted on: no warning */
    assert_int_equal(w.n, (int)(sizeof(want) / sizeof(want[0])));
    tlr_kubeobj_free(nc);
    json_object_put(o);
}

/* ---- workloads ----------------------------------------------------------- */

typedef struct wcase {
    const char *name;
    const char *yaml;
    size_t max;
    int rc;
    size_t npods;
    const char *first;    /* OK: "namespace/name owner-kind/owner-name" of pod 0 */
    const char *errsub;
} wcase;

static void test_expand(void **state)
{
    static const wcase t[] = {
        { "Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
          "spec:\n  replicas: 3\n  template:\n    metadata: {labels: {app: web}}\n"
          "    spec: {containers: [{name: a, resources: {requests: {cpu: 1}}}]}\n",
          0, TLR_OK, 3, "default/web-", NULL },
        { "Deployment default replicas", "kind: Deployment\nmetadata: {name: w, namespace: team}\n"
          "spec: {template: {spec: {containers: [{name: a}]}}}\n", 0, TLR_OK, 1, "team/w-", NULL },
        { "StatefulSet", "kind: StatefulSet\nmetadata: {name: db}\n"
          "spec: {replicas: 2, template: {spec: {containers: [{name: a}]}}}\n",
          0, TLR_OK, 2, "default/db-0 StatefulSet/db", NULL },
        { "Job parallelism capped by completions", "kind: Job\nmetadata: {name: j}\n"
          "spec: {parallelism: 5, completions: 2, template: {spec: {containers: [{name: a}]}}}\n",
          0, TLR_OK, 2, "default/j-", NULL },
        { "zero replicas", "kind: ReplicaSet\nmetadata: {name: r}\n"
          "spec: {replicas: 0, template: {spec: {containers: [{name: a}]}}}\n",
          0, TLR_OK, 0, NULL, NULL },
        { "bare Pod", "kind: Pod\nmetadata: {name: solo}\nspec: {containers: [{name: a}]}\n",
          0, TLR_OK, 1, "default/solo", NULL },
        { "Pod with an empty name and no generateName (found by fuzzing: crashed)",
          "kind: Pod\nmetadata: {name: \"\", namespace: x}\nspec: {containers: [{name: a}]}\n",
          0, TLR_E_INVAL, 0, NULL, "metadata.name: is required" },
        { "too many", "kind: Deployment\nmetadata: {name: big}\n"
          "spec: {replicas: 1000000, template: {spec: {containers: [{name: a}]}}}\n",
          1000, TLR_E_TOOBIG, 0, NULL, "Deployment big: spec.replicas: 1000000 pods are more" },
        { "negative replicas", "kind: Deployment\nmetadata: {name: neg}\n"
          "spec: {replicas: -1, template: {spec: {containers: [{name: a}]}}}\n",
          0, TLR_E_RANGE, 0, NULL, "Deployment neg: spec.replicas: -1 is outside" },
        { "bad template", "kind: Deployment\nmetadata: {name: bad}\n"
          "spec: {template: {spec: {containers: [{name: a, resources: {requests:"
          " {memory: -1Gi}}}]}}}\n",
          0, TLR_E_PARSE, 0, NULL,
          "Deployment bad: spec.template.spec.containers[0].resources.requests.memory" },
        { "not a workload", "kind: ConfigMap\nmetadata: {name: c}\n", 0, TLR_E_NOTFOUND, 0, NULL,
          NULL },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *o = obj_of(t[i].yaml);
        Tailor__V1__Pod **pods = NULL;
        size_t n = 0;
        char err[TLR_KUBEOBJ_ERRLEN] = "";
        int rc = tlr_kubeobj_expand(o, NULL, t[i].max, &pods, &n, err, sizeof(err));

        if (rc != t[i].rc) {
            printf("FAIL %s: got %s (%s), want %s\n", t[i].name, tlr_errname(rc), err,
                   tlr_errname(t[i].rc));
            failures++;
        } else if (rc == TLR_OK) {
            if (n != t[i].npods) {
                printf("FAIL %s: got %zu pods, want %zu\n", t[i].name, n, t[i].npods);
                failures++;
            }
            for (size_t k = 0; k < n; k++) {
                char got[300];
                snprintf(got, sizeof(got), "%s/%s %s/%s", pods[k]->namespace_, pods[k]->name,
                         pods[k]->n_owners ? pods[k]->owners[0]->kind : "-",
                         pods[k]->n_owners ? pods[k]->owners[0]->name : "-");
                if (k == 0 && strncmp(got, t[i].first, strlen(t[i].first)) != 0) {
                    printf("FAIL %s: pod 0 is \"%s\", want prefix \"%s\"\n", t[i].name, got,
                           t[i].first);
                    failures++;
                }
                if (pods[k]->uid[0] == '\0' || pods[k]->phase != 1 ||
                    (strcmp(t[i].name, "bare Pod") != 0 && !pods[k]->unschedulable)) {
                    printf("FAIL %s: pod %zu: uid \"%s\" phase %d unschedulable %d\n",
                           t[i].name, k, pods[k]->uid, pods[k]->phase, pods[k]->unschedulable);
                    failures++;
                }
                for (size_t j = 0; j < k; j++)
                    if (!strcmp(pods[j]->uid, pods[k]->uid) ||
                        !strcmp(pods[j]->name, pods[k]->name)) {
                        printf("FAIL %s: pods %zu and %zu share a name or uid\n", t[i].name, j,
                               k);
                        failures++;
                    }
            }
        } else if (t[i].errsub != NULL && strstr(err, t[i].errsub) == NULL) {
            printf("FAIL %s: got \"%s\", want it to contain \"%s\"\n", t[i].name, err,
                   t[i].errsub);
            failures++;
        }
        for (size_t k = 0; k < n; k++)
            tlr_kubeobj_free(pods[k]);
        free(pods);
        json_object_put(o);
    }
    assert_int_equal(failures, 0);

    /* Deterministic: the same manifest expands to the same names and uids. */
    json_object *o = obj_of(t[0].yaml);
    Tailor__V1__Pod **a = NULL, **b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(tlr_kubeobj_expand(o, NULL, 0, &a, &na, NULL, 0), TLR_OK);
    assert_int_equal(tlr_kubeobj_expand(o, NULL, 0, &b, &nb, NULL, 0), TLR_OK);
    assert_int_equal(na, nb);
    for (size_t k = 0; k < na; k++) {
        assert_string_equal(a[k]->uid, b[k]->uid);
        assert_string_equal(a[k]->name, b[k]->name);
        tlr_kubeobj_free(a[k]);
        tlr_kubeobj_free(b[k]);
    }
    free(a);
    free(b);
    json_object_put(o);
}

/* Binding pods to a node: requests add up, terminal pods do not count,
 * and the copy is compact. */
static void test_node_add_pod(void **state)
{
    (void)state;
    json_object *no = obj_of("kind: Node\nmetadata: {name: n1}\n"
                             "status: {allocatable: {cpu: \"4\", memory: 8Gi}}\n");
    json_object *p1 = obj_of(POD("  nodeName: n1\n  tolerations: [{operator: Exists}]\n"
                                 "  topologySpreadConstraints: [{maxSkew: 1, topologyKey:"
                                 " topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,"
                                 " labelSelector: {matchLabels: {app: web}}}]\n"
                                 "  containers: [{name: a, resources: {requests: {cpu: 1,"
                                 " nvidia.com/gpu: 1}}}]\n"));
    json_object *p2 = obj_of("kind: Pod\nmetadata: {name: done}\nspec: {containers: [{name: a,"
                             " resources: {requests: {cpu: 3}}}]}\nstatus: {phase: Succeeded}\n");
    Tailor__V1__Node *n = NULL;
    Tailor__V1__Pod *a = NULL, *b = NULL;

    assert_int_equal(tlr_kubeobj_node(no, NULL, &n, NULL, 0), TLR_OK);
    assert_int_equal(tlr_kubeobj_pod(p1, NULL, &a, NULL, 0), TLR_OK);
    assert_int_equal(tlr_kubeobj_pod(p2, NULL, &b, NULL, 0), TLR_OK);
    tlr_kubeobj_node_add_pod(n, a);
    tlr_kubeobj_node_add_pod(n, a);
    tlr_kubeobj_node_add_pod(n, b);
    assert_int_equal(n->n_pods, 2);
    assert_int_equal(n->requested->cpu_millis, 2000);
    assert_int_equal(n->requested->pods, 2);
    assert_int_equal(n->requested->n_extended, 1);
    assert_int_equal(n->requested->extended[0]->value, 2);
    assert_int_equal(n->pods[0]->n_tolerations, 0);   /* compact */
    /* but where the pod itself may go when it is moved stays */
    assert_int_equal(n->pods[0]->n_topology_spread_constraints, 1);
    assert_int_equal(n->pods[0]->topology_spread_constraints[0]->max_skew, 1);
    assert_int_equal(n->pods[0]->requests->cpu_millis, 1000);
    tlr_kubeobj_free(n);
    tlr_kubeobj_free(a);
    tlr_kubeobj_free(b);
    json_object_put(no);
    json_object_put(p1);
    json_object_put(p2);
}

static void test_decode(void **state)
{
    static const struct {
        const char *in;
        int rc;
        const char *want;   /* kinds joined by ',' or an error substring */
    } t[] = {
        { "{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\"},{\"kind\":\"Node\"}]}", TLR_OK,
          "Pod,Node" },
        { "{\"kind\":\"PodList\",\"items\":[]}", TLR_OK, "" },
        { "kind: A\n---\nkind: B\n---\nkind: List\nitems: [{kind: C}]\n", TLR_OK, "A,B,C" },
        { "[{\"kind\":\"A\"}]", TLR_OK, "A" },
        { "kind: A\n---\n- 1\n", TLR_E_PARSE, "document 2 is not an object (it is int)" },
        { "kind: A\n---\njust words\n", TLR_E_PARSE, "document 2 is not an object" },
        { "{\"kind\": }", TLR_E_PARSE, "offset 9" },
        { "kind: [A\n", TLR_E_PARSE, "line 2, column 1" },
        { "kind: List\nitems: 5\n", TLR_E_PARSE, "List items is not a list" },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_object *objs = NULL;
        char err[256] = "", got[256] = "";
        int rc = tlr_kubeobj_decode(t[i].in, strlen(t[i].in), 1 << 20, &objs, err, sizeof(err));
        if (rc == TLR_OK) {
            for (size_t k = 0; k < json_object_array_length(objs); k++) {
                const char *kind = tlr_json_str(json_object_array_get_idx(objs, k), "kind");
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? "," : "",
                         kind ? kind : "?");
            }
        }
        if (rc != t[i].rc || strstr(rc == TLR_OK ? got : err, t[i].want) == NULL ||
            (rc == TLR_OK && strcmp(got, t[i].want) != 0)) {
            printf("FAIL decode(%s): got %s \"%s\", want %s \"%s\"\n", t[i].in, tlr_errname(rc),
                   rc == TLR_OK ? got : err, tlr_errname(t[i].rc), t[i].want);
            failures++;
        }
        json_object_put(objs);
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_requests),
        cmocka_unit_test(test_pod_placement),
        cmocka_unit_test(test_objects),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_node_add_pod),
        cmocka_unit_test(test_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
