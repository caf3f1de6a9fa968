/* bootstrap_gen.c - writes tailor's user data for a few fixed inputs into
 * the directory named by argv[1], for peers_check.py to read with
 * independent parsers (Python's email, yaml and tomllib).
 *
 * Files: al2023_plain, al2023_mime, al2023_yaml, al2_mime, bottlerocket,
 * bottlerocket_raid0.  The inputs are fixed here; peers_check.py knows
 * them and checks the values, not just the syntax.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_bootstrap.h"
#include "tlr_err.h"

static const tlr_cluster_identity cluster = {
    .name = "peer-cluster",
    .endpoint = "https://PEER.gr7.us-west-2.eks.amazonaws.com",
    .ca_b64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
    .service_cidr = "10.100.0.0/16",
    .dns_ip = "10.100.0.10",
};

static Tailor__V1__Label l1 = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__label__descriptor),
                                "karpenter.sh/nodepool", "default" };
static Tailor__V1__Label l2 = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__label__descriptor),
                                "team", "yes" };   /* a YAML 1.1 boolean look-alike */
static Tailor__V1__Taint t1 = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__taint__descriptor),
                                "dedicated", "gpu",
                                TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE, 0 };
static Tailor__V1__Taint t2 = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__taint__descriptor),
                                TLR_TAINT_UNREGISTERED, "",
                                TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE, 0 };
static const Tailor__V1__Label *const labels[] = { &l2, &l1 };
static const Tailor__V1__Taint *const taints[] = { &t1, &t2 };

static const char user_mime[] =
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=\"==USER==\"\n"
    "\n"
    "--==USER==\n"
    "Content-Type: text/x-shellscript; charset=\"us-ascii\"\n"
    "\n"
    "#!/bin/bash\n"
    "echo \"user's script\" > /tmp/marker\n"
    "--==USER==\n"
    "Content-Type: application/node.eks.aws\n"
    "\n"
    "apiVersion: node.eks.aws/v1alpha1\n"
    "kind: NodeConfig\n"
    "spec:\n"
    "  kubelet:\n"
    "    config:\n"
    "      shutdownGracePeriod: 30s\n"
    "--==USER==--\n";

static const char user_yaml[] =
    "apiVersion: node.eks.aws/v1alpha1\n"
    "kind: NodeConfig\n"
    "spec:\n"
    "  instance:\n"
    "    localStorage:\n"
    "      strategy: Mount\n";

static const char user_toml[] =
    "[settings.host-containers.admin]\n"
    "enabled = true\n"
    "[settings.kubernetes]\n"
    "cluster-name = \"wrong\"\n"
    "[settings.kubernetes.node-labels]\n"
    "team = \"user\"\n"
    "user-only = \"kept\"\n";

static int write_one(const char *dir, const char *name, tlr_ami_family f, const char *ud,
                     const Tailor__V1__KubeletConfig *k, int raid0)
{
    tlr_bootstrap_in in = {
        .family = f,
        .cluster = &cluster,
        .kubelet = k,
        .max_pods = 29,
        .labels = labels,
        .nlabels = 2,
        .taints = taints,
        .ntaints = 2,
        .user_data = ud,
        .raid0 = raid0 != 0,
    };
    char *out = NULL, err[256] = "", path[4096];
    int rc = tlr_bootstrap_user_data(&in, &out, err, sizeof(err));
    FILE *fp;

    if (rc != TLR_OK) {
        fprintf(stderr, "%s: %s: %s\n", name, tlr_errname(rc), err);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fp = fopen(path, "w");
    if (fp == NULL || fputs(out, fp) < 0 || fclose(fp) != 0) {
        perror(path);
        free(out);
        return 1;
    }
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    Tailor__V1__ResourceList sys = TAILOR__V1__RESOURCE_LIST__INIT;
    Tailor__V1__Label eh = TAILOR__V1__LABEL__INIT;
    Tailor__V1__Label *ehs[] = { &eh };
    Tailor__V1__KubeletConfig k = TAILOR__V1__KUBELET_CONFIG__INIT;
    int bad = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    sys.cpu_millis = 500;
    sys.memory_bytes = 512LL << 20;
    eh.key = "memory.available";
    eh.value = "100Mi";
    k.system_reserved = &sys;
    k.n_eviction_hard = 1;
    k.eviction_hard = ehs;
    k.image_gc_high_threshold_percent = 85;

    bad |= write_one(argv[1], "al2023_plain", TLR_AMI_FAMILY_AL2023,
                     "#!/bin/bash\necho plain\n", &k, 1);
    bad |= write_one(argv[1], "al2023_mime", TLR_AMI_FAMILY_AL2023, user_mime, &k, 0);
    bad |= write_one(argv[1], "al2023_yaml", TLR_AMI_FAMILY_AL2023, user_yaml, NULL, 0);
    bad |= write_one(argv[1], "al2_mime", TLR_AMI_FAMILY_AL2, user_mime, &k, 1);
    bad |= write_one(argv[1], "bottlerocket", TLR_AMI_FAMILY_BOTTLEROCKET, user_toml, &k, 0);
    bad |= write_one(argv[1], "bottlerocket_raid0", TLR_AMI_FAMILY_BOTTLEROCKET, NULL, NULL, 1);
    return bad;
}
