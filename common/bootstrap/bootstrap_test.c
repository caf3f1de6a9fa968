/* bootstrap_test.c - tlr_bootstrap: user data per AMI family, merging with
 * the user's userData, determinism, and errors on malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bootstrap_impl.h"
#include "tlr_bootstrap.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_mime.h"
#include "tlr_toml.h"
#include "tlr_yaml.h"

/* ---- fixtures ---------------------------------------------------------- */

static const tlr_cluster_identity cluster = {
    .name = "prod",
    .endpoint = "https://ABC.gr7.us-west-2.eks.amazonaws.com",
    .ca_b64 = "LS0tLS1CRUdJTg==",
    .service_cidr = "10.100.0.0/16",
    .dns_ip = "10.100.0.10",
};

static Tailor__V1__Label l_pool = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__label__descriptor),
                                    "karpenter.sh/nodepool", "default" };
static Tailor__V1__Label l_team = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__label__descriptor),
                                    "team", "a" };
static Tailor__V1__Taint t_gpu = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__taint__descriptor),
                                   "nvidia.com/gpu", "true",
                                   TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE, 0 };
static Tailor__V1__Taint t_unreg = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__taint__descriptor),
                                     TLR_TAINT_UNREGISTERED, "",
                                     TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE, 0 };

/* Labels deliberately out of order: the output sorts them. */
static const Tailor__V1__Label *const labels[] = { &l_team, &l_pool };
static const Tailor__V1__Taint *const taints[] = { &t_gpu, &t_unreg };

static tlr_bootstrap_in base_in(tlr_ami_family f, const char *user_data)
{
    return (tlr_bootstrap_in){
        .family = f,
        .cluster = &cluster,
        .max_pods = 58,
        .labels = labels,
        .nlabels = 2,
        .taints = taints,
        .ntaints = 2,
        .user_data = user_data,
    };
}

/* A KubeletConfig with every field set; static storage, never freed. */
static Tailor__V1__KubeletConfig *full_kubelet(void)
{
    static Tailor__V1__ResourceList sys = TAILOR__V1__RESOURCE_LIST__INIT;
    static Tailor__V1__ResourceList kube = TAILOR__V1__RESOURCE_LIST__INIT;
    static Tailor__V1__Label eh1 = TAILOR__V1__LABEL__INIT, eh2 = TAILOR__V1__LABEL__INIT;
    static Tailor__V1__Label es1 = TAILOR__V1__LABEL__INIT;
    static Tailor__V1__SignalDuration gp = TAILOR__V1__SIGNAL_DURATION__INIT;
    static Tailor__V1__Label *eh[2], *es[1];
    static Tailor__V1__SignalDuration *gps[1];
    static char *dns[] = { "172.20.0.10" };
    static Tailor__V1__KubeletConfig k = TAILOR__V1__KUBELET_CONFIG__INIT;

    sys.cpu_millis = 1000;
    sys.memory_bytes = 100LL << 20;
    kube.cpu_millis = 250;
    kube.memory_bytes = 1LL << 30;
    kube.ephemeral_storage_bytes = 1500;
    eh1.key = "nodefs.available";
    eh1.value = "10%";
    eh2.key = "memory.available";
    eh2.value = "100Mi";
    eh[0] = &eh1;
    eh[1] = &eh2;
    es1.key = "memory.available";
    es1.value = "500Mi";
    es[0] = &es1;
    gp.signal = "memory.available";
    gp.duration_ms = 90000;
    gps[0] = &gp;
    k.max_pods = 20;   /* in->max_pods wins */
    k.pods_per_core = 4;
    k.system_reserved = &sys;
    k.kube_reserved = &kube;
    k.n_eviction_hard = 2;
    k.eviction_hard = eh;
    k.n_eviction_soft = 1;
    k.eviction_soft = es;
    k.n_eviction_soft_grace_period = 1;
    k.eviction_soft_grace_period = gps;
    k.n_cluster_dns = 1;
    k.cluster_dns = dns;
    k.image_gc_high_threshold_percent = 85;
    k.image_gc_low_threshold_percent = 80;
    k.has_cpu_cfs_quota = 1;
    k.cpu_cfs_quota = 0;
    k.eviction_max_pod_grace_period = 30;
    return &k;
}

static char *gen(const tlr_bootstrap_in *in)
{
    char *out = NULL, err[256] = "";
    int rc = tlr_bootstrap_user_data(in, &out, err, sizeof(err));
    if (rc != TLR_OK)
        printf("FAIL user data: %s (%s)\n", tlr_errname(rc), err);
    assert_int_equal(rc, TLR_OK);
    return out;
}

/* The NodeConfig part of an AL2023 document as JSON (owned). */
static json_object *node_config_of(const tlr_mime_part *p)
{
    json_object *docs = NULL, *nc;
    char err[256] = "";
    int rc = tlr_yaml_parse(p->body, p->len, NULL, &docs, err, sizeof(err));
    if (rc != TLR_OK)
        printf("FAIL NodeConfig does not parse: %s\n%s\n", err, p->body);
    assert_int_equal(rc, TLR_OK);
    assert_int_equal(json_object_array_length(docs), 1);
    nc = json_object_get(json_object_array_get_idx(docs, 0));
    json_object_put(docs);
    return nc;
}

static int expect_str(const char *what, const char *got, const char *want)
{
    if (got != NULL && want != NULL && strcmp(got, want) == 0)
        return 0;
    if (got == NULL && want == NULL)
        return 0;
    printf("FAIL %s:\n  got  %s\n  want %s\n", what, got ? got : "(null)", want ? want : "(null)");
    return 1;
}

/* got (borrowed) equals the JSON text want, members in any order. */
static int expect_json(const char *what, json_object *got, const char *want)
{
    json_object *w = json_tokener_parse(want);
    int bad = !json_object_equal(got, w);
    if (bad)
        printf("FAIL %s:\n  got  %s\n  want %s\n", what,
               tlr_json_to_string(got, JSON_C_TO_STRING_PLAIN), want);
    json_object_put(w);
    return bad;
}

/* ---- families and labels ----------------------------------------------- */

static void test_families(void **state)
{
    static const struct {
        const char *s;
        tlr_ami_family want;
    } t[] = {
        { "AL2023", TLR_AMI_FAMILY_AL2023 },  { "al2023", TLR_AMI_FAMILY_AL2023 },
        { "AL2", TLR_AMI_FAMILY_AL2 },        { "bottlerocket", TLR_AMI_FAMILY_BOTTLEROCKET },
        { "Custom", TLR_AMI_FAMILY_CUSTOM },  { "windows2022", TLR_AMI_FAMILY_WINDOWS2022 },
        { "Windows2019", TLR_AMI_FAMILY_WINDOWS2019 },
        { "Windows2025", TLR_AMI_FAMILY_WINDOWS2025 },
        { "AL3", TLR_AMI_FAMILY_UNKNOWN },    { "", TLR_AMI_FAMILY_UNKNOWN },
        { NULL, TLR_AMI_FAMILY_UNKNOWN },
    };
    static const struct {
        const char *family, *alias;
        tlr_ami_family want;
    } of[] = {
        { "Bottlerocket", "al2023@latest", TLR_AMI_FAMILY_BOTTLEROCKET },
        { "", "al2023@latest", TLR_AMI_FAMILY_AL2023 },
        { "", "bottlerocket@v1.20", TLR_AMI_FAMILY_BOTTLEROCKET },
        { "", "al2@v20240807", TLR_AMI_FAMILY_AL2 },
        { "", "windows2022@latest", TLR_AMI_FAMILY_WINDOWS2022 },
        { "", "", TLR_AMI_FAMILY_UNKNOWN },
        { "", "nonsense@1", TLR_AMI_FAMILY_UNKNOWN },
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_ami_family got = tlr_ami_family_parse(t[i].s);
        if (got != t[i].want) {
            printf("FAIL family_parse(%s): got %d, want %d\n", t[i].s ? t[i].s : "NULL", got,
                   t[i].want);
            failures++;
        }
    }
    for (size_t i = 0; i < sizeof(of) / sizeof(of[0]); i++) {
        Tailor__V1__NodeClass nc = TAILOR__V1__NODE_CLASS__INIT;
        Tailor__V1__AmiSelectorTerm id = TAILOR__V1__AMI_SELECTOR_TERM__INIT;
        Tailor__V1__AmiSelectorTerm alias = TAILOR__V1__AMI_SELECTOR_TERM__INIT;
        Tailor__V1__AmiSelectorTerm *terms[] = { &id, &alias };
        id.id = "ami-123";
        alias.alias = (char *)of[i].alias;
        nc.ami_family = (char *)of[i].family;
        nc.n_ami_selector_terms = 2;
        nc.ami_selector_terms = terms;
        tlr_ami_family got = tlr_ami_family_of(&nc);
        if (got != of[i].want) {
            printf("FAIL family_of(%s, %s): got %d, want %d\n", of[i].family, of[i].alias, got,
                   of[i].want);
            failures++;
        }
    }
    failures += expect_str("name", tlr_ami_family_name(TLR_AMI_FAMILY_BOTTLEROCKET),
                           "Bottlerocket");
    failures += expect_str("name", tlr_ami_family_name(TLR_AMI_FAMILY_UNKNOWN), "");
    assert_int_equal(tlr_ami_family_of(NULL), TLR_AMI_FAMILY_UNKNOWN);
    assert_int_equal(failures, 0);
}

static void test_label_allowed(void **state)
{
    static const struct {
        const char *key;
        bool want;
    } t[] = {
        { "team", true },
        { "karpenter.sh/nodepool", true },
        { "example.com/x", true },
        { "notkubernetes.io/x", true },
        { "kubernetes.io/hostname", false },
        { "node.kubernetes.io/instance-type", false },
        { "node-restriction.kubernetes.io/x", false },
        { "k8s.io/x", false },
        { "a.b.K8S.io/x", false },
        { "", false },
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        bool got = tlr_bootstrap_label_allowed(t[i].key);
        if (got != t[i].want) {
            printf("FAIL label_allowed(%s): got %d, want %d\n", t[i].key, got, t[i].want);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_formats(void **state)
{
    static const struct {
        int64_t v;
        const char *dur, *cpu, *bytes;
    } t[] = {
        { 0, "0s", "0", "0" },
        { 1, "1ms", "1m", "1" },
        { 500, "500ms", "500m", "500" },
        { 1000, "1s", "1", "1000" },
        { 1500, "1.5s", "1500m", "1500" },
        { 1024, "1.024s", "1024m", "1Ki" },
        { 90000, "1m30s", "90", "90000" },
        { 3600000, "1h0m0s", "3600", "3600000" },
        { 3723004, "1h2m3.004s", "3723004m", "3723004" },
        { 1LL << 20, "17m28.576s", "1048576m", "1Mi" },
        { 3LL << 30, "894h47m5.472s", "3221225472m", "3Gi" },
        { -90000, "-1m30s", "-90", "-90000" },
    };
    int failures = 0;
    char buf[64];
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        bs_duration_str(t[i].v, buf, sizeof(buf));
        failures += expect_str("duration", buf, t[i].dur);
        bs_cpu_str(t[i].v, buf, sizeof(buf));
        failures += expect_str("cpu", buf, t[i].cpu);
        bs_bytes_str(t[i].v, buf, sizeof(buf));
        failures += expect_str("bytes", buf, t[i].bytes);
    }
    assert_int_equal(failures, 0);
}

/* ---- AL2023 ------------------------------------------------------------ */

static void test_al2023_exact(void **state)
{
    tlr_bootstrap_in in = base_in(TLR_AMI_FAMILY_AL2023, NULL);
    char *got;
    const char *want =
        "MIME-Version: 1.0\n"
        "Content-Type: multipart/mixed; boundary=\"//\"\n"
        "\n"
        "--//\n"
        "Content-Type: application/node.eks.aws\n"
        "\n"
        "# tailor generated NodeConfig\n"
        "apiVersion: node.eks.aws/v1alpha1\n"
        "kind: NodeConfig\n"
        "spec:\n"
        "  cluster:\n"
        "    apiServerEndpoint: https://ABC.gr7.us-west-2.eks.amazonaws.com\n"
        "    certificateAuthority: LS0tLS1CRUdJTg==\n"
        "    cidr: 10.100.0.0/16\n"
        "    name: prod\n"
        "  instance:\n"
        "    localStorage:\n"
        "      strategy: RAID0\n"
        "  kubelet:\n"
        "    config:\n"
        "      clusterDNS:\n"
        "        - \"10.100.0.10\"\n"
        "      maxPods: 58\n"
        "      registerWithTaints:\n"
        "        - effect: NoSchedule\n"
        "          key: nvidia.com/gpu\n"
        "          value: \"true\"\n"
        "        - effect: NoExecute\n"
        "          key: karpenter.sh/unregistered\n"
        "    flags:\n"
        "      - \"--node-labels=karpenter.sh/nodepool=default,team=a\"\n"
        "\n"
        "--//--\n";
    (void)state;

    in.raid0 = true;
    got = gen(&in);
    if (strcmp(got, want) != 0)
        printf("FAIL AL2023:\n  got  <<%s>>\n  want <<%s>>\n", got, want);
    assert_string_equal(got, want);
    free(got);
}

static void test_al2023_kubelet(void **state)
{
    tlr_bootstrap_in in = base_in(TLR_AMI_FAMILY_AL2023, "");
    tlr_mime_doc d = { 0 };
    char err[256] = "";
    char *got;
    int failures = 0;
    (void)state;

    in.kubelet = full_kubelet();
    in.nlabels = 0;
    got = gen(&in);
    assert_int_equal(tlr_mime_parse(got, strlen(got), &d, err, sizeof(err)), TLR_OK);
    assert_int_equal(d.n, 1);
    json_object *nc = node_config_of(&d.parts[0]);
    failures += expect_str(
        "kubelet.config",
        tlr_json_to_string(tlr_json_get(nc, "spec.kubelet.config"), JSON_C_TO_STRING_PLAIN),
        "{\"clusterDNS\":[\"172.20.0.10\"],\"cpuCFSQuota\":false,"
        "\"evictionHard\":{\"memory.available\":\"100Mi\",\"nodefs.available\":\"10%\"},"
        "\"evictionMaxPodGracePeriod\":30,\"evictionSoft\":{\"memory.available\":\"500Mi\"},"
        "\"evictionSoftGracePeriod\":{\"memory.available\":\"1m30s\"},"
        "\"imageGCHighThresholdPercent\":85,\"imageGCLowThresholdPercent\":80,"
        "\"kubeReserved\":{\"cpu\":\"250m\",\"ephemeral-storage\":\"1500\",\"memory\":\"1Gi\"},"
        "\"maxPods\":58,\"podsPerCore\":4,"
        "\"registerWithTaints\":[{\"effect\":\"NoSchedule\",\"key\":\"nvidia.com/gpu\","
        "\"value\":\"true\"},{\"effect\":\"NoExecute\",\"key\":\"karpenter.sh/unregistered\"}],"
        "\"systemReserved\":{\"cpu\":\"1\",\"memory\":\"100Mi\"}}");
    if (tlr_json_get(nc, "spec.kubelet.flags") != NULL || tlr_json_get(nc, "spec.instance")) {
        printf("FAIL no labels and no RAID0: got %s\n",
               tlr_json_to_string(nc, JSON_C_TO_STRING_PLAIN));
        failures++;
    }
    /* spec.kubelet.maxPods alone is used when the caller gives none */
    in.max_pods = 0;
    free(got);
    tlr_mime_doc_free(&d);
    json_object_put(nc);
    got = gen(&in);
    assert_int_equal(tlr_mime_parse(got, strlen(got), &d, err, sizeof(err)), TLR_OK);
    nc = node_config_of(&d.parts[0]);
    int64_t mp = 0;
    assert_int_equal(tlr_json_int(nc, "spec.kubelet.config.maxPods", &mp), TLR_OK);
    assert_int_equal(mp, 20);
    json_object_put(nc);
    tlr_mime_doc_free(&d);
    free(got);
    assert_int_equal(failures, 0);
}

/* The user's userData, in each form, and where its parts end up. */
static void test_al2023_merge(void **state)
{
    static const char user_mime[] =
        "MIME-Version: 1.0\n"
        "Content-Type: multipart/mixed; boundary=\"BOUNDARY\"\n"
        "\n"
        "--BOUNDARY\n"
        "Content-Type: text/x-shellscript; charset=\"us-ascii\"\n"
        "\n"
        "#!/bin/bash\necho 'user script'\n"
        "--BOUNDARY\n"
        "Content-Type: application/node.eks.aws\n"
        "\n"
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n"
        "    config:\n      shutdownGracePeriod: 30s\n"
        "--BOUNDARY--\n";
    static const struct {
        const char *name, *user;
        size_t nparts;
        const char *first_ct, *first_body;
    } t[] = {
        { "MIME", user_mime, 3, "text/x-shellscript; charset=\"us-ascii\"",
          "#!/bin/bash\necho 'user script'" },
        { "shell", "#!/bin/bash\necho hi\n", 2, BS_CT_SHELL, "#!/bin/bash\necho hi\n" },
        { "YAML NodeConfig",
          "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance:\n"
          "    localStorage:\n      strategy: Mount\n",
          2, BS_CT_NODECONFIG,
          "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance:\n"
          "    localStorage:\n      strategy: Mount\n" },
        /* valid YAML but not a mapping: a script */
        { "YAML scalar", "echo hello", 2, BS_CT_SHELL, "echo hello" },
        { "leading blank MIME", "\n\nMIME-Version: 1.0\nContent-Type: multipart/mixed; "
          "boundary=b\n\n--b\nContent-Type: text/cloud-config\n\n#cloud-config\n--b--\n",
          2, "text/cloud-config", "#cloud-config" },
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_bootstrap_in in = base_in(TLR_AMI_FAMILY_AL2023, t[i].user);
        tlr_mime_doc d = { 0 };
        char err[256] = "";
        char *got = gen(&in), *again = gen(&in);
        if (strcmp(got, again) != 0) {
            printf("FAIL %s: not deterministic\n", t[i].name);
            failures++;
        }
        assert_int_equal(tlr_mime_parse(got, strlen(got), &d, err, sizeof(err)), TLR_OK);
        if (d.n != t[i].nparts) {
            printf("FAIL %s: got %zu parts, want %zu\n%s\n", t[i].name, d.n, t[i].nparts, got);
            failures++;
        } else {
            failures += expect_str(t[i].name, d.parts[0].content_type, t[i].first_ct);
            failures += expect_str(t[i].name, d.parts[0].body, t[i].first_body);
            const tlr_mime_part *last = &d.parts[d.n - 1];
            failures += expect_str(t[i].name, last->content_type, BS_CT_NODECONFIG);
            if (strncmp(last->body, "# tailor generated NodeConfig\n", 30) != 0) {
                printf("FAIL %s: last part is not tailor's:\n%s\n", t[i].name, last->body);
                failures++;
            }
        }
        if (i == 0 && d.n == 3) {
            /* the user's partial NodeConfig is kept as written */
            json_object *nc = node_config_of(&d.parts[1]);
            failures += expect_str("user NodeConfig",
                                   tlr_json_str(nc, "spec.kubelet.config.shutdownGracePeriod"),
                                   "30s");
            json_object_put(nc);
        }
        tlr_mime_doc_free(&d);
        free(got);
        free(again);
    }
    assert_int_equal(failures, 0);
}

/* ---- AL2 --------------------------------------------------------------- */

static void test_al2(void **state)
{
    tlr_bootstrap_in in = base_in(TLR_AMI_FAMILY_AL2, "#!/bin/bash\necho pre\n");
    tlr_mime_doc d = { 0 };
    char err[256] = "";
    char *got;
    int failures = 0;
    const char *want_script =
        "#!/bin/bash -xe\n"
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
        "/etc/eks/bootstrap.sh 'prod' --apiserver-endpoint "
        "'https://ABC.gr7.us-west-2.eks.amazonaws.com' --b64-cluster-ca 'LS0tLS1CRUdJTg==' \\\n"
        "--dns-cluster-ip '172.20.0.10' \\\n"
        "--use-max-pods false \\\n"
        "--kubelet-extra-args '--node-labels=\"karpenter.sh/nodepool=default,team=a\" "
        "--register-with-taints=\"nvidia.com/gpu=true:NoSchedule,"
        "karpenter.sh/unregistered:NoExecute\" --max-pods=58 --pods-per-core=4 "
        "--system-reserved=\"cpu=1,memory=100Mi\" "
        "--kube-reserved=\"cpu=250m,ephemeral-storage=1500,memory=1Gi\" "
        "--eviction-hard=\"memory.available<100Mi,nodefs.available<10%\" "
        "--eviction-soft=\"memory.available<500Mi\" "
        "--eviction-soft-grace-period=\"memory.available=1m30s\" "
        "--eviction-max-pod-grace-period=30 --image-gc-high-threshold=85 "
        "--image-gc-low-threshold=80 --cpu-cfs-quota=false' \\\n"
        "--local-disks raid0";
    (void)state;

    in.kubelet = full_kubelet();
    in.raid0 = true;
    got = gen(&in);
    assert_int_equal(tlr_mime_parse(got, strlen(got), &d, err, sizeof(err)), TLR_OK);
    assert_int_equal(d.n, 2);
    failures += expect_str("AL2 user part", d.parts[0].body, "#!/bin/bash\necho pre\n");
    failures += expect_str("AL2 user ct", d.parts[0].content_type, BS_CT_SHELL);
    failures += expect_str("AL2 script", d.parts[1].body, want_script);
    failures += expect_str("AL2 script ct", d.parts[1].content_type, BS_CT_SHELL);
    tlr_mime_doc_free(&d);
    free(got);

    /* minimal: no kubelet, no labels, IPv6 DNS, a quote in the name */
    static const tlr_cluster_identity c6 = { .name = "it's", .endpoint = "https://e",
                                             .ca_b64 = "Q0E=", .dns_ip = "fd00::a" };
    tlr_bootstrap_in min = { .family = TLR_AMI_FAMILY_AL2, .cluster = &c6 };
    got = gen(&min);
    assert_int_equal(tlr_mime_parse(got, strlen(got), &d, err, sizeof(err)), TLR_OK);
    assert_int_equal(d.n, 1);
    failures += expect_str(
        "AL2 minimal", d.parts[0].body,
        "#!/bin/bash -xe\n"
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
        "/etc/eks/bootstrap.sh 'it'\\''s' --apiserver-endpoint 'https://e' --b64-cluster-ca "
        "'Q0E=' \\\n--ip-family ipv6 \\\n--dns-cluster-ip 'fd00::a' \\\n"
        "--kubelet-extra-args '--register-with-taints=\"\"'");
    tlr_mime_doc_free(&d);
    free(got);
    assert_int_equal(failures, 0);
}

/* ---- Bottlerocket ------------------------------------------------------ */

static void test_bottlerocket(void **state)
{
    static const char user[] =
        "# user settings\n"
        "[settings.host-containers.admin]\n"
        "enabled = true\n"
        "\n"
        "[settings.kubernetes]\n"
        "cluster-name = \"someone-else\"\n"
        "allowed-unsafe-sysctls = [\"net.core.somaxconn\"]\n"
        "max-pods = 10\n"
        "[settings.kubernetes.node-labels]\n"
        "team = \"user\"\n"
        "user-only = \"kept\"\n"
        "[settings.kubernetes.node-taints]\n"
        "dropped = [\"x:NoSchedule\"]\n";
    tlr_bootstrap_in in = base_in(TLR_AMI_FAMILY_BOTTLEROCKET, user);
    json_object *o = NULL;
    char err[256] = "", *got, *again;
    int failures = 0;
    (void)state;

    in.raid0 = true;
    got = gen(&in);
    again = gen(&in);
    failures += expect_str("Bottlerocket determinism", got, again);
    int rc = tlr_toml_parse(got, strlen(got), &o, err, sizeof(err));
    if (rc != TLR_OK)
        printf("FAIL output is not TOML: %s\n%s\n", err, got);
    assert_int_equal(rc, TLR_OK);
    failures += expect_json(
        "settings.kubernetes", tlr_json_get(o, "settings.kubernetes"),
        "{\"allowed-unsafe-sysctls\":[\"net.core.somaxconn\"],"
        "\"api-server\":\"https://ABC.gr7.us-west-2.eks.amazonaws.com\","
        "\"cluster-certificate\":\"LS0tLS1CRUdJTg==\",\"cluster-dns-ip\":\"10.100.0.10\","
        "\"cluster-name\":\"prod\",\"max-pods\":58,"
        "\"node-labels\":{\"karpenter.sh/nodepool\":\"default\",\"team\":\"a\","
        "\"user-only\":\"kept\"},"
        "\"node-taints\":{\"karpenter.sh/unregistered\":[\":NoExecute\"],"
        "\"nvidia.com/gpu\":[\"true:NoSchedule\"]}}");
    failures += expect_str(
        "host-containers",
        tlr_json_to_string(tlr_json_get(o, "settings.host-containers"), JSON_C_TO_STRING_PLAIN),
        "{\"admin\":{\"enabled\":true}}");
    failures += expect_str(
        "bootstrap-commands",
        tlr_json_to_string(tlr_json_get(o, "settings.bootstrap-commands"),
                           JSON_C_TO_STRING_PLAIN),
        "{\"000-mount-instance-storage\":{\"commands\":[[\"apiclient\",\"ephemeral-storage\","
        "\"init\"],[\"apiclient\",\"ephemeral-storage\",\"bind\",\"--dirs\","
        "\"/var/lib/containerd\",\"/var/lib/kubelet\",\"/var/log/pods\"]],"
        "\"essential\":true,\"mode\":\"always\"}}");
    json_object_put(o);
    free(got);
    free(again);

    /* no userData; the kubelet fields */
    in = base_in(TLR_AMI_FAMILY_BOTTLEROCKET, NULL);
    in.kubelet = full_kubelet();
    in.ntaints = 0;
    got = gen(&in);
    assert_int_equal(tlr_toml_parse(got, strlen(got), &o, err, sizeof(err)), TLR_OK);
    failures += expect_json(
        "kubelet fields", tlr_json_get(o, "settings.kubernetes"),
        "{\"api-server\":\"https://ABC.gr7.us-west-2.eks.amazonaws.com\","
        "\"cluster-certificate\":\"LS0tLS1CRUdJTg==\",\"cluster-dns-ip\":\"172.20.0.10\","
        "\"cluster-name\":\"prod\",\"cpu-cfs-quota-enforced\":false,"
        "\"eviction-hard\":{\"memory.available\":\"100Mi\",\"nodefs.available\":\"10%\"},"
        "\"eviction-max-pod-grace-period\":30,\"eviction-soft\":{\"memory.available\":\"500Mi\"},"
        "\"eviction-soft-grace-period\":{\"memory.available\":\"1m30s\"},"
        "\"image-gc-high-threshold-percent\":\"85\",\"image-gc-low-threshold-percent\":\"80\","
        "\"kube-reserved\":{\"cpu\":\"250m\",\"ephemeral-storage\":\"1500\",\"memory\":\"1Gi\"},"
        "\"max-pods\":58,\"node-labels\":{\"karpenter.sh/nodepool\":\"default\",\"team\":\"a\"},"
        "\"system-reserved\":{\"cpu\":\"1\",\"memory\":\"100Mi\"}}");
    if (json_object_object_length(o) != 1 || tlr_json_get(o, "settings.bootstrap-commands")) {
        printf("FAIL unexpected keys: %s\n", tlr_json_to_string(o, JSON_C_TO_STRING_PLAIN));
        failures++;
    }
    json_object_put(o);
    free(got);
    assert_int_equal(failures, 0);
}

/* ---- Custom, Windows and errors ---------------------------------------- */

typedef struct ecase {
    const char *name;
    tlr_ami_family family;
    const char *user;
    const tlr_cluster_identity *cluster;
    int rc;
    const char *want;   /* substring of err */
} ecase;

static void test_errors(void **state)
{
    static const tlr_cluster_identity no_cidr = { .name = "c", .endpoint = "https://e",
                                                  .ca_b64 = "Q0E=" };
    static const tlr_cluster_identity no_name = { .endpoint = "https://e", .ca_b64 = "Q0E=",
                                                  .service_cidr = "10.0.0.0/16" };
    static const tlr_cluster_identity no_ca = { .name = "c", .endpoint = "https://e",
                                                .service_cidr = "10.0.0.0/16" };
    static const tlr_cluster_identity no_ep = { .name = "c", .ca_b64 = "Q0E=" };
    static const ecase t[] = {
        { "windows", TLR_AMI_FAMILY_WINDOWS2022, NULL, &cluster, TLR_E_UNIMPLEMENTED,
          "Windows AMI families are not supported by tailor" },
        { "unknown", TLR_AMI_FAMILY_UNKNOWN, NULL, &cluster, TLR_E_INVAL, "unknown AMI family" },
        { "no cidr", TLR_AMI_FAMILY_AL2023, NULL, &no_cidr, TLR_E_INVAL, "service CIDR" },
        { "no name", TLR_AMI_FAMILY_AL2, NULL, &no_name, TLR_E_INVAL, "cluster name" },
        { "no CA", TLR_AMI_FAMILY_BOTTLEROCKET, NULL, &no_ca, TLR_E_INVAL, "CA bundle" },
        { "no endpoint", TLR_AMI_FAMILY_AL2023, NULL, &no_ep, TLR_E_INVAL, "cluster endpoint" },
        { "no cluster", TLR_AMI_FAMILY_AL2023, NULL, NULL, TLR_E_INVAL, "cluster name" },
        { "bad MIME", TLR_AMI_FAMILY_AL2023,
          "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n\nx\n",
          &cluster, TLR_E_PARSE, "userData: line 6: unexpected end: no closing delimiter" },
        { "MIME not multipart", TLR_AMI_FAMILY_AL2, "Content-Type: text/plain\n\nx", &cluster,
          TLR_E_PARSE, "userData: Content-Type \"text/plain\" is not multipart" },
        { "bad TOML", TLR_AMI_FAMILY_BOTTLEROCKET, "[settings]\nfoo = \n", &cluster,
          TLR_E_PARSE, "userData: line 2: expected a value" },
        { "settings not a table", TLR_AMI_FAMILY_BOTTLEROCKET, "settings = 1", &cluster,
          TLR_E_PARSE, "userData: settings is not a table" },
        { "kubernetes not a table", TLR_AMI_FAMILY_BOTTLEROCKET, "settings.kubernetes = [1]",
          &cluster, TLR_E_PARSE, "userData: settings.kubernetes is not a table" },
        { "boundary in a user part", TLR_AMI_FAMILY_AL2023, "#!/bin/sh\necho\n--//\n",
          &cluster, TLR_E_INVAL, "MIME boundary" },
    };
    int failures = 0;
    (void)state;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlr_bootstrap_in in = { .family = t[i].family, .cluster = t[i].cluster,
                                .user_data = t[i].user };
        char *out = NULL, err[256] = "";
        int rc = tlr_bootstrap_user_data(&in, &out, err, sizeof(err));
        if (rc != t[i].rc || strstr(err, t[i].want) == NULL) {
            printf("FAIL %s: got %s \"%s\", want %s containing \"%s\"\n", t[i].name,
                   tlr_errname(rc), err, tlr_errname(t[i].rc), t[i].want);
            failures++;
        }
        if (out != NULL) {
            printf("FAIL %s: out written on error\n", t[i].name);
            failures++;
            free(out);
        }
    }
    /* a taint without an effect */
    Tailor__V1__Taint bad = TAILOR__V1__TAINT__INIT;
    const Tailor__V1__Taint *const bt[] = { &bad };
    bad.key = "k";
    tlr_bootstrap_in in = base_in(TLR_AMI_FAMILY_AL2023, NULL);
    in.taints = bt;
    in.ntaints = 1;
    char *out = NULL, err[256] = "";
    assert_int_equal(tlr_bootstrap_user_data(&in, &out, err, sizeof(err)), TLR_E_INVAL);
    assert_non_null(strstr(err, "no key or effect"));
    assert_int_equal(tlr_bootstrap_user_data(NULL, &out, err, sizeof(err)), TLR_E_INVAL);
    assert_int_equal(failures, 0);
}

static void test_custom(void **state)
{
    tlr_bootstrap_in in = { .family = TLR_AMI_FAMILY_CUSTOM };
    char *got;
    (void)state;

    got = gen(&in);   /* no cluster needed, no userData: "" */
    assert_string_equal(got, "");
    free(got);
    in.user_data = "anything\n--//\n";
    got = gen(&in);
    assert_string_equal(got, "anything\n--//\n");
    free(got);
}

/* Many user parts, large userData: limits hold, no crash. */
static void test_limits(void **state)
{
    char *big = malloc(TLR_TOML_MAX_BYTES + 16), *out = NULL, err[256] = "";
    tlr_bootstrap_in in = base_in(TLR_AMI_FAMILY_BOTTLEROCKET, NULL);
    (void)state;

    memset(big, '#', TLR_TOML_MAX_BYTES + 8);
    big[TLR_TOML_MAX_BYTES + 8] = '\0';
    in.user_data = big;
    assert_int_equal(tlr_bootstrap_user_data(&in, &out, err, sizeof(err)), TLR_E_TOOBIG);
    assert_non_null(strstr(err, "userData: "));
    free(big);

    tlr_buf b;
    tlr_buf_init(&b, (size_t)-1);
    tlr_buf_adds(&b, "Content-Type: multipart/mixed; boundary=b\n\n");
    for (int i = 0; i < TLR_MIME_MAX_PARTS + 1; i++)
        tlr_buf_adds(&b, "--b\n\nx\n");
    tlr_buf_adds(&b, "--b--\n");
    in = base_in(TLR_AMI_FAMILY_AL2023, tlr_buf_str(&b));
    assert_int_equal(tlr_bootstrap_user_data(&in, &out, err, sizeof(err)), TLR_E_TOOBIG);
    assert_non_null(strstr(err, "userData: more than 64 parts"));
    assert_null(out);
    tlr_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families),     cmocka_unit_test(test_label_allowed),
        cmocka_unit_test(test_formats),      cmocka_unit_test(test_al2023_exact),
        cmocka_unit_test(test_al2023_kubelet), cmocka_unit_test(test_al2023_merge),
        cmocka_unit_test(test_al2),          cmocka_unit_test(test_bottlerocket),
        cmocka_unit_test(test_errors),       cmocka_unit_test(test_custom),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
