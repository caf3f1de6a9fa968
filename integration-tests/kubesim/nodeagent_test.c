/* nodeagent_test.c - the node boot agents, table-driven: each family
 * (nodeadm YAML / base64 / merged MIME, AL2 bootstrap.sh, Bottlerocket
 * TOML) to the labels, taints, maxPods and allocatable a real node would
 * get; every refusal with its reason; the NodeRestriction label rule; the
 * kubelet's capacity arithmetic.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nodeagent.h"
#include "tlr_alloc.h"
#include "tlr_base64.h"
#include "tlr_err.h"
#include "tlr_json.h"

static const char ca_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBfjCCASSgAwIBAgIUb3VyIGt1YmVzaW0gQ0EgZm9yIHRlc3RzMAoGCCqGSM49\n"
    "BAMCMBIxEDAOBgNVBAMMB2t1YmVzaW0wHhcNMjUwMTAxMDAwMDAwWhcNMjYwMTAx\n"
    "-----END CERTIFICATE-----\n";
static const char other_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBfjCCASSgAwIBAgIUc29tZW9uZSBlbHNlJ3MgQ0EgZm9yIHRlc3RzMAoGCCqG\n"
    "-----END CERTIFICATE-----\n";
#define EP "https://127.0.0.1:6443"

/* tmpl with @CA@ -> base64 of our CA, @OTHERCA@ -> another CA's (new). */
static char *fill(const char *tmpl)
{
    char *ca = tlr_base64_encode(ca_pem, strlen(ca_pem));
    char *other = tlr_base64_encode(other_pem, strlen(other_pem));
    size_t cap = strlen(tmpl) + 8 * (strlen(ca) + strlen(other)) + 1, n = 0;
    char *out = tlr_malloc(cap);

    for (const char *p = tmpl; *p != '\0';) {
        const char *rep = NULL;
        size_t skip = 0;

        if (strncmp(p, "@CA@", 4) == 0)
            rep = ca, skip = 4;
        else if (strncmp(p, "@OTHERCA@", 9) == 0)
            rep = other, skip = 9;
        if (rep != NULL) {
            memcpy(out + n, rep, strlen(rep));
            n += strlen(rep);
            p += skip;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    free(ca);
    free(other);
    return out;
}

static const ks_na_cluster cluster = { "demo", EP, ca_pem };
static const ks_na_hw m5large = { "m5.large", 2, 8192, "amd64", 29, 0, NULL, 0 };
static const ks_na_ext gpu1[] = { { "nvidia.com/gpu", 1 } };
static const ks_na_hw g4dn = { "g4dn.xlarge", 4, 16384, "amd64", 29, 125000000000LL, gpu1, 1 };

#define NODECONFIG(extra)                                                                  \
    "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n"             \
    "    name: demo\n    apiServerEndpoint: " EP "/\n    certificateAuthority: @CA@\n"     \
    "    cidr: 10.100.0.0/16\n" extra

static const char nodeadm_yaml[] = NODECONFIG(
    "  kubelet:\n    config:\n      maxPods: 20\n      registerWithTaints:\n"
    "      - {key: dedicated, value: web, effect: NoSchedule}\n"
    "      - {key: node.cilium.io/agent-not-ready, value: \"true\", effect: NoExecute}\n"
    "    flags:\n    - --node-labels=karpenter.sh/nodepool=default,node.kubernetes.io/lifecycle=spot\n");

static const char mime_merged[] =
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
    "--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho hello\n"
    "--//\nContent-Type: application/node.eks.aws\n\n"
    "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n"
    "      kubeReserved:\n        cpu: 100m\n    flags:\n    - --node-labels=team=a,tier=web\n"
    "--//\nContent-Type: application/node.eks.aws\n\n"
    NODECONFIG("  kubelet:\n    flags:\n    - --node-labels=tier=api\n")
    "--//--\n";

static const char al2_script[] =
    "#!/bin/bash\nset -ex\nB64_CLUSTER_CA=@CA@\nAPI_SERVER_URL=" EP "\n"
    "/etc/eks/bootstrap.sh demo --apiserver-endpoint \"$API_SERVER_URL\" \\\n"
    "  --b64-cluster-ca $B64_CLUSTER_CA --use-max-pods false \\\n"
    "  --kubelet-extra-args '--node-labels=eks.amazonaws.com/nodegroup=ng1,team=a "
    "--register-with-taints=dedicated=gpu:NoSchedule --max-pods=50' # the node group\n";

static const char bottlerocket_toml[] =
    "[settings.kubernetes]\ncluster-name = \"demo\"\napi-server = \"" EP "\"\n"
    "cluster-certificate = \"@CA@\"\nmax-pods = 40\n"
    "[settings.kubernetes.node-labels]\n\"karpenter.sh/nodepool\" = \"gpu\"\n"
    "[settings.kubernetes.node-taints]\n\"nvidia.com/gpu\" = [\"true:NoSchedule\"]\n"
    "dedicated = \":NoExecute\"\n"
    "[settings.kubernetes.kube-reserved]\nmemory = \"1Gi\"\n"
    "[settings.bootstrap-commands.k8s-ephemeral-storage]\n"
    "commands = [[\"apiclient\", \"ephemeral-storage\", \"init\"], "
    "[\"apiclient\", \"ephemeral-storage\", \"bind\", \"--dirs\", \"/var/lib/containerd\"]]\n"
    "mode = \"always\"\nessential = true\n";

typedef struct tcase {
    const char *what, *ami, *ud;
    bool base64;                 /* hand the agent base64 of ud */
    const ks_na_hw *hw;
    int rc;
    const char *reason;          /* substring of the refusal */
    const char *labels;          /* "k=v,..." sorted by key, exact */
    const char *taints;          /* "k=v:E,..." in order, exact */
    int max_pods;
    const char *alloc_cpu, *alloc_mem, *alloc_pods;
    bool raid0;
    const char *ran;             /* "|"-joined ran list, exact */
} tcase;

static const tcase cases[] = {
    { "nodeadm YAML on an AL2023 AMI", "amazon-eks-node-al2023-x86_64-standard-1.31-v20250101",
      nodeadm_yaml, false, &m5large, TLR_OK, NULL,
      "karpenter.sh/nodepool=default,node.kubernetes.io/lifecycle=spot",
      "dedicated=web:NoSchedule,node.cilium.io/agent-not-ready=true:NoExecute", 20,
      /* 2000 - 60 - 10; 7577Mi - (11*29+255)Mi - 100Mi = 6903Mi */
      "1930m", "7068672Ki", "20", false, "nodeadm: NodeConfig" },
    { "the same, base64, on moto's AMI (format decides)", "amzn-ami-hvm-2018.03.0.20180811",
      nodeadm_yaml, true, &m5large, TLR_OK, NULL,
      "karpenter.sh/nodepool=default,node.kubernetes.io/lifecycle=spot",
      "dedicated=web:NoSchedule,node.cilium.io/agent-not-ready=true:NoExecute", 20, "1930m",
      "7068672Ki", "20", false, "nodeadm: NodeConfig" },
    { "MIME: shell part + partial NodeConfig + tailor's, merged", "",
      mime_merged, false, &m5large, TLR_OK, NULL, "team=a,tier=api", "", 29, "1900m",
      "7068672Ki", "29", false,
      "shell: echo hello|nodeadm: NodeConfig part 2|nodeadm: NodeConfig part 3" },
    { "MIME base64", "al2023", mime_merged, true, &m5large, TLR_OK, NULL, "team=a,tier=api", "",
      29, "1900m", "7068672Ki", "29", false,
      "shell: echo hello|nodeadm: NodeConfig part 2|nodeadm: NodeConfig part 3" },
    { "AL2 bootstrap.sh with variables, quotes, continuation", "amazon-eks-node-1.31-v20250101",
      al2_script, false, &m5large, TLR_OK, NULL, "eks.amazonaws.com/nodegroup=ng1,team=a",
      "dedicated=gpu:NoSchedule", 50, "1930m", "7068672Ki", "50", false,
      "shell: set -ex|bootstrap.sh demo" },
    { "AL2 script on moto's AMI", "amzn2-ami-hvm", al2_script, false, &m5large, TLR_OK, NULL,
      "eks.amazonaws.com/nodegroup=ng1,team=a", "dedicated=gpu:NoSchedule", 50, "1930m",
      "7068672Ki", "50", false, "shell: set -ex|bootstrap.sh demo" },
    { "Bottlerocket TOML with RAID0", "bottlerocket-aws-k8s-1.31-nvidia-x86_64-v1.26.0",
      bottlerocket_toml, false, &g4dn, TLR_OK, NULL, "karpenter.sh/nodepool=gpu",
      "nvidia.com/gpu=true:NoSchedule,dedicated:NoExecute", 40,
      /* 4000 - 60 - 10 - 10; 16384 - 1229 = 15155Mi, - 1024Mi - 100Mi = 14031Mi */
      "3920m", "14367744Ki", "40", true,
      "bottlerocket: settings.kubernetes|bootstrap-command: k8s-ephemeral-storage" },
    { "Bottlerocket TOML sniffed on moto's AMI", "ubuntu", bottlerocket_toml, true, &g4dn,
      TLR_OK, NULL, "karpenter.sh/nodepool=gpu",
      "nvidia.com/gpu=true:NoSchedule,dedicated:NoExecute", 40, "3920m", "14367744Ki", "40",
      true, "bottlerocket: settings.kubernetes|bootstrap-command: k8s-ephemeral-storage" },

    /* Refusals. */
    { "no user data", "amzn-ami-hvm", "", false, &m5large, TLR_E_NOTFOUND, "no bootstrap" },
    { "no user data, AL2023 AMI", "al2023", "", false, &m5large, TLR_E_NOTFOUND,
      "no bootstrap" },
    { "nothing recognisable", "amzn-ami-hvm", "hello world\n", false, &m5large, TLR_E_NOTFOUND,
      "no bootstrap" },
    { "another cluster's endpoint", "al2023",
      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: demo\n"
      "    apiServerEndpoint: https://ABC.gr7.us-east-1.eks.amazonaws.com\n"
      "    certificateAuthority: @CA@\n    cidr: 10.100.0.0/16\n", false, &m5large, TLR_E_AUTH,
      "is not this cluster's" },
    { "another CA", "al2023",
      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: demo\n"
      "    apiServerEndpoint: " EP "\n    certificateAuthority: @OTHERCA@\n"
      "    cidr: 10.100.0.0/16\n", false, &m5large, TLR_E_AUTH, "not this cluster's CA" },
    { "CA not base64", "al2023",
      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: demo\n"
      "    apiServerEndpoint: " EP "\n    certificateAuthority: not*base64\n"
      "    cidr: 10.100.0.0/16\n", false, &m5large, TLR_E_PARSE, "not base64" },
    { "another cluster name", "al2023",
      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: prod\n"
      "    apiServerEndpoint: " EP "\n    certificateAuthority: @CA@\n    cidr: 10.100.0.0/16\n",
      false, &m5large, TLR_E_AUTH, "cluster name \"prod\"" },
    { "cidr missing", "al2023",
      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: demo\n"
      "    apiServerEndpoint: " EP "\n    certificateAuthority: @CA@\n", false, &m5large,
      TLR_E_INVAL, "CIDR is missing" },
    { "endpoint missing", "al2023",
      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: demo\n"
      "    certificateAuthority: @CA@\n    cidr: 10.100.0.0/16\n", false, &m5large, TLR_E_INVAL,
      "Apiserver endpoint is missing" },
    { "malformed YAML", "al2023", "apiVersion: [node.eks.aws\nkind: NodeConfig\n", false,
      &m5large, TLR_E_PARSE, "malformed YAML" },
    { "wrong apiVersion", "al2023",
      "apiVersion: node.eks.aws/v1beta9\nkind: NodeConfig\nspec: {}\n", false, &m5large,
      TLR_E_PARSE, "is not node.eks.aws/v1alpha1 NodeConfig" },
    { "a kubernetes.io label the kubelet refuses", "al2023",
      NODECONFIG("  kubelet:\n    flags: [\"--node-labels=node-role.kubernetes.io/worker=true\"]\n"),
      false, &m5large, TLR_E_INVAL, "NodeRestriction" },
    { "a node-restriction.kubernetes.io label", "amazon-eks-node-1.31",
      "#!/bin/bash\n/etc/eks/bootstrap.sh demo --apiserver-endpoint " EP " --b64-cluster-ca @CA@ "
      "--kubelet-extra-args '--node-labels=node-restriction.kubernetes.io/team=a'\n", false,
      &m5large, TLR_E_INVAL, "NodeRestriction" },
    { "Windows", "Windows_Server-2022-English-Core-EKS_Optimized-1.31", nodeadm_yaml, false,
      &m5large, TLR_E_UNIMPLEMENTED, "not simulated" },
    { "bootstrap.sh asking EKS", "amazon-eks-node-1.31",
      "#!/bin/bash\n/etc/eks/bootstrap.sh demo\n", false, &m5large, TLR_E_UNIMPLEMENTED,
      "DescribeCluster" },
    { "AL2 AMI, script without bootstrap.sh", "amazon-eks-node-1.31", "#!/bin/bash\necho hi\n",
      false, &m5large, TLR_E_NOTFOUND, "no bootstrap" },
    { "Bottlerocket without a certificate", "bottlerocket-aws-k8s-1.31",
      "[settings.kubernetes]\ncluster-name = \"demo\"\napi-server = \"" EP "\"\n", false,
      &m5large, TLR_E_INVAL, "cluster-certificate is missing" },
    { "Bottlerocket, malformed TOML", "bottlerocket", "[settings.kubernetes\n", false, &m5large,
      TLR_E_PARSE, "malformed TOML" },
    { "MIME without a NodeConfig on AL2023", "al2023",
      "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
      "--//\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho hi\n--//--\n", false,
      &m5large, TLR_E_NOTFOUND, "could not find NodeConfig" },
    { "unterminated MIME", "al2023",
      "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
      "--//\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\n", false, &m5large,
      TLR_E_PARSE, "malformed MIME" },
};

/* "k=v,..." of an object, keys sorted. */
static void labels_text(json_object *o, char *out, size_t len)
{
    const char *keys[32];
    size_t n = 0, at = 0;

    json_object_object_foreach(o, k, v) {
        (void)v;
        if (n < 32)
            keys[n++] = k;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    out[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(out + at, len - at, "%s%s=%s", i ? "," : "", keys[i],
                               json_object_get_string(json_object_object_get(o, keys[i])));
}

static void taints_text(json_object *a, char *out, size_t len)
{
    size_t at = 0;

    out[0] = '\0';
    for (size_t i = 0; i < json_object_array_length(a) && at < len; i++) {
        json_object *t = json_object_array_get_idx(a, i);
        const char *v = tlr_json_str(t, "value");

        at += (size_t)snprintf(out + at, len - at, "%s%s%s%s:%s", i ? "," : "",
                               tlr_json_str(t, "key"), v ? "=" : "", v ? v : "",
                               tlr_json_str(t, "effect"));
    }
}

static void test_families_and_refusals(void **state)
{
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const tcase *c = &cases[i];
        char *ud = fill(c->ud), reason[300];
        ks_na_config cfg = { 0 };
        int rc;

        if (c->base64) {
            char *e = tlr_base64_encode(ud, strlen(ud));

            free(ud);
            ud = e;
        }
        rc = ks_nodeagent_run(ud, strlen(ud), c->ami, c->hw, &cluster, &cfg, reason,
                              sizeof(reason));
        if (rc != c->rc) {
            printf("FAIL %s: got %s (%s), want %s\n", c->what, tlr_errname(rc), reason,
                   tlr_errname(c->rc));
            failures++;
        } else if (rc != TLR_OK) {
            if (strstr(reason, c->reason) == NULL || strchr(reason, '\n') != NULL) {
                printf("FAIL %s: reason \"%s\", want it to say \"%s\"\n", c->what, reason,
                       c->reason);
                failures++;
            }
        } else {
            char labels[512], taints[512], ranl[512] = "";
            json_object *cap = NULL, *alloc = NULL;
            size_t at = 0;

            labels_text(cfg.labels, labels, sizeof(labels));
            taints_text(cfg.taints, taints, sizeof(taints));
            for (size_t r = 0; r < cfg.nran; r++)
                at += (size_t)snprintf(ranl + at, sizeof(ranl) - at, "%s%s", r ? "|" : "",
                                       cfg.ran[r]);
            ks_nodeagent_resources(&cfg, c->hw, 0, false, &cap, &alloc);
            if (strcmp(labels, c->labels) || strcmp(taints, c->taints) ||
                cfg.max_pods != c->max_pods || cfg.raid0 != c->raid0 ||
                strcmp(tlr_json_str(alloc, "cpu"), c->alloc_cpu) ||
                strcmp(tlr_json_str(alloc, "memory"), c->alloc_mem) ||
                strcmp(tlr_json_str(alloc, "pods"), c->alloc_pods) || strcmp(ranl, c->ran)) {
                printf("FAIL %s:\n  got  labels {%s} taints {%s} maxPods %d raid0 %d alloc "
                       "%s/%s/%s ran {%s}\n  want labels {%s} taints {%s} maxPods %d raid0 %d "
                       "alloc %s/%s/%s ran {%s}\n", c->what, labels, taints, cfg.max_pods,
                       cfg.raid0, tlr_json_str(alloc, "cpu"), tlr_json_str(alloc, "memory"),
                       tlr_json_str(alloc, "pods"), ranl, c->labels, c->taints, c->max_pods,
                       c->raid0, c->alloc_cpu, c->alloc_mem, c->alloc_pods, c->ran);
                failures++;
            }
            json_object_put(cap);
            json_object_put(alloc);
        }
        ks_na_config_free(&cfg);
        free(ud);
    }
    assert_int_equal(failures, 0);
}

static void test_label_rule(void **state)
{
    static const struct { const char *key; bool ok; } t[] = {
        { "team", true }, { "example.com/team", true }, { "eks.amazonaws.com/nodegroup", true },
        { "karpenter.sh/nodepool", true }, { "kubernetes.io/hostname", true },
        { "kubernetes.io/arch", true }, { "node.kubernetes.io/instance-type", true },
        { "node.kubernetes.io/lifecycle", true }, { "topology.kubernetes.io/zone", true },
        { "beta.kubernetes.io/arch", true }, { "failure-domain.beta.kubernetes.io/zone", true },
        { "kubelet.kubernetes.io/x", true }, { "x.kubelet.kubernetes.io/y", true },
        { "node-role.kubernetes.io/worker", false }, { "kubernetes.io/role", false },
        { "topology.kubernetes.io/rack", false }, { "example.k8s.io/a", false },
        { "k8s.io/a", false }, { "node-restriction.kubernetes.io/team", false },
        { "notkubernetes.io/a", true },
    };
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (ks_nodeagent_label_allowed(t[i].key) != t[i].ok) {
            printf("FAIL label %s: got %d, want %d\n", t[i].key, !t[i].ok, t[i].ok);
            failures++;
        }
    assert_int_equal(failures, 0);
}

/* Capacity: arm64 memory, podsPerCore, root volume, NVMe only with RAID0,
 * devices only once their plugin runs, percentages of capacity. */
static void test_resources(void **state)
{
    static const ks_na_hw arm = { "m6g.large", 2, 8192, "arm64", 29, 0, NULL, 0 };
    ks_na_config cfg = { 0 };
    json_object *cap = NULL, *alloc = NULL;
    char *ud = fill(NODECONFIG("  kubelet:\n    config:\n      podsPerCore: 5\n"
                               "      systemReserved: {cpu: 100m, memory: 100Mi}\n"
                               "      evictionHard: {nodefs.available: \"50%\"}\n"));
    char reason[200];

    (void)state;
    assert_int_equal(ks_nodeagent_run(ud, strlen(ud), "al2023", &arm, &cluster, &cfg, reason,
                                      sizeof(reason)), TLR_OK);
    assert_int_equal(ks_nodeagent_resources(&cfg, &arm, 8 * 1024LL * 1024 * 1024, false, &cap,
                                            &alloc), TLR_OK);
    /* 8192 - 64 = 8128; - ceil(609.6) = 7518Mi */
    assert_string_equal(tlr_json_str(cap, "memory"), "7698432Ki");
    assert_string_equal(tlr_json_str(cap, "pods"), "10");   /* min(29, 5 x 2) */
    assert_string_equal(tlr_json_str(cap, "ephemeral-storage"), "8Gi");
    /* 7518 - 574 - 100 (system) - 100 (eviction) = 6744Mi */
    assert_string_equal(tlr_json_str(alloc, "memory"), "6905856Ki");
    assert_string_equal(tlr_json_str(alloc, "cpu"), "1830m");
    /* 8Gi - 1Gi - 50% of 8Gi = 3Gi */
    assert_string_equal(tlr_json_str(alloc, "ephemeral-storage"), "3Gi");
    json_object_put(cap);
    json_object_put(alloc);
    ks_na_config_free(&cfg);
    free(ud);

    /* A GPU type without RAID0: root volume (default 20Gi), the GPU only
     * when the device plugin is up. */
    ud = fill(NODECONFIG(""));
    assert_int_equal(ks_nodeagent_run(ud, strlen(ud), "al2023", &g4dn, &cluster, &cfg, reason,
                                      sizeof(reason)), TLR_OK);
    ks_nodeagent_resources(&cfg, &g4dn, 0, false, &cap, &alloc);
    assert_string_equal(tlr_json_str(cap, "ephemeral-storage"), "20Gi");
    assert_null(tlr_json_get(cap, "nvidia\\.com/gpu"));
    json_object_put(cap);
    json_object_put(alloc);
    ks_nodeagent_resources(&cfg, &g4dn, 0, true, &cap, &alloc);
    assert_string_equal(tlr_json_str(cap, "nvidia\\.com/gpu"), "1");
    assert_string_equal(tlr_json_str(alloc, "nvidia\\.com/gpu"), "1");
    assert_string_equal(tlr_json_str(cap, "cpu"), "4");
    json_object_put(cap);
    json_object_put(alloc);
    ks_na_config_free(&cfg);
    free(ud);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families_and_refusals),
        cmocka_unit_test(test_label_rule),
        cmocka_unit_test(test_resources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
