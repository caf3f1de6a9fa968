/* main.c - tailor-launcher: settings and wiring only.
 *
 * The launcher owns NodeClaims and the cloud: it subscribes to the
 * watcher's pending batches, plans them on the solvers, writes NodeClaims
 * and launches their EC2 instances, tracks them to Initialized, answers
 * Launch and Terminate on its REP socket, publishes the "launch" topic and
 * garbage-collects leaks.  The parts: provision.c (the core), fleet.c,
 * launch.c, launchtemplate.c, ice.c, claims.c, nodeclass.c, lifecycle.c,
 * gc.c, leader.c, catalog_src.c, par.c; the real clients lc_cloud.c, lc_kube.c
 * and the typed service clients (tlr_clnt.h); lc_app.c puts them together.
 * docs/launcher.md describes it.
 */
#include <stddef.h>

#include "lc_app.h"
#include "tlr_service.h"

static const tlr_setting settings[] = {
    { "listen", "TAILOR_LISTEN", TLR_SET_STR, offsetof(lc_app_cfg, listen),
      "tls+tcp://127.0.0.1:7121", "nng URL to answer Launch and Terminate on" },
    { "publish", "TAILOR_PUBLISH", TLR_SET_STR, offsetof(lc_app_cfg, publish),
      "tls+tcp://127.0.0.1:7122", "nng URL to publish the launch topic on" },
    TLR_SETTING_MAX_MESSAGE_MIB(lc_app_cfg, max_msg_mib),
    { "solver", "TAILOR_SOLVER", TLR_SET_LIST, offsetof(lc_app_cfg, solvers),
      "tls+tcp://127.0.0.1:7101", "solver replica URLs (comma-separated)" },
    { "watcher", "TAILOR_WATCHER", TLR_SET_STR, offsetof(lc_app_cfg, watcher),
      "tls+tcp://127.0.0.1:7112", "the watcher's PUB URL (pending batches)" },
    { "watcher-rep", "TAILOR_WATCHER_REP", TLR_SET_STR, offsetof(lc_app_cfg, watcher_rep),
      "tls+tcp://127.0.0.1:7111",
      "the watcher's REP URL: a Snapshot when a batch's cluster delta is from a state this "
      "launcher does not hold (start, a lost batch)" },
    { "decisions", "TAILOR_DECISIONS", TLR_SET_STR, offsetof(lc_app_cfg, decisions), "",
      "the watcher's decisions listener to send each plan's per-pod outcome to, for "
      "Karpenter's pod provisioning metrics (e.g. tcp://tailor-watcher:7113; empty: not sent)" },
    TLR_SETTING_KUBECONFIG(lc_app_cfg, kubeconfig),
    TLR_SETTING_IN_CLUSTER(lc_app_cfg, in_cluster),
    { "cluster-name", "TAILOR_CLUSTER_NAME", TLR_SET_STR, offsetof(lc_app_cfg, cluster),
      "tailor-local", "cluster name: kubernetes.io/cluster/<name> tag on every instance" },
    { "aws-region", "AWS_REGION", TLR_SET_STR, offsetof(lc_app_cfg, region), "us-east-1",
      "AWS region" },
    { "aws-endpoint", "TAILOR_AWS_ENDPOINT", TLR_SET_STR, offsetof(lc_app_cfg, endpoint), NULL,
      "EC2/SSM endpoint override (moto: http://127.0.0.1:PORT); default AWS_ENDPOINT_URL" },
    { "catalog", "TAILOR_CATALOG", TLR_SET_STR, offsetof(lc_app_cfg, catalog),
      "../shared/data/aws-instance-types.json",
      "instance-type catalog JSON file (the fallback for what EC2 does not say)" },
    { "catalog-source", "TAILOR_CATALOG_SOURCE", TLR_SET_STR,
      offsetof(lc_app_cfg, catalog_source), "auto",
      "auto (the file, then EC2's own catalog when fetched), ec2 (EC2 at start), or file" },
    { "catalog-refresh", "TAILOR_CATALOG_REFRESH", TLR_SET_DURATION,
      offsetof(lc_app_cfg, catalog_refresh_ms), "12h",
      "how often the live catalog is fetched again", .min = 1000, .max = 7LL * 24 * 3600 * 1000 },
    { "pricing-endpoint", "AWS_ENDPOINT_URL_PRICING", TLR_SET_STR,
      offsetof(lc_app_cfg, pricing_endpoint), NULL,
      "Pricing API endpoint override (default AWS_ENDPOINT_URL, then AWS)" },
    { "pricing-region", "TAILOR_PRICING_REGION", TLR_SET_STR,
      offsetof(lc_app_cfg, pricing_region), "us-east-1",
      "region of the Pricing API endpoint (us-east-1, ap-south-1, eu-central-1)" },
    { "spot-price-floor", "TAILOR_SPOT_PRICE_FLOOR", TLR_SET_DOUBLE,
      offsetof(lc_app_cfg, spot_floor), "0.05",
      "spot prices below on-demand x this are not believed (the discount is used)" },
    { "zones", "TAILOR_ZONES", TLR_SET_LIST, offsetof(lc_app_cfg, zones),
      "us-east-1a,us-east-1b,us-east-1c", "zones offered in the catalog" },
    TLR_SETTING_MIN_VALUES_POLICY(lc_app_cfg, min_values_policy,
          "Karpenter's MIN_VALUES_POLICY: Strict (no NodeClaim that cannot meet minValues) or "
          "BestEffort (relax minValues, annotate the claim)"),
    TLR_SETTING_PREFERENCE_POLICY(lc_app_cfg, preference_policy,
          "Karpenter's PREFERENCE_POLICY: Respect (preferences held, relaxed one at a time) or "
          "Ignore"),
    { "spot-discount", "TAILOR_SPOT_DISCOUNT", TLR_SET_DOUBLE,
      offsetof(lc_app_cfg, spot_discount), "0.6",
      "spot price = on-demand * (1 - discount) where EC2 gives none (and for the file); 0 = the "
      "on-demand price (Karpenter's assumption without a spot price)" },
    { "spot", "TAILOR_SPOT", TLR_SET_BOOL, offsetof(lc_app_cfg, spot), "true",
      "offer spot capacity in the catalog; --no-spot: on-demand offerings only" },
    { "default-ami", "TAILOR_DEFAULT_AMI", TLR_SET_STR, offsetof(lc_app_cfg, default_ami), NULL,
      "AMI used when a NodeClass's amiSelectorTerms resolve to none" },
    { "kubernetes-version", "TAILOR_K8S_VERSION", TLR_SET_STR,
      offsetof(lc_app_cfg, k8s_version), "1.31", "for AMI aliases (al2023@latest)" },
    { "solve-timeout", "TAILOR_SOLVE_TIMEOUT", TLR_SET_DURATION,
      offsetof(lc_app_cfg, solve_timeout_ms), "30s", "per Solve attempt",
      .min = 100, .max = 600000 },
    { "solver-connection-age", "TAILOR_SOLVER_CONNECTION_AGE", TLR_SET_DURATION,
      offsetof(lc_app_cfg, solver_conn_age_ms), "1m",
      "close the oldest solver connection past this age before a Solve (when another is "
      "up): a redial through the Service reaches solver replicas added since; 0 = keep",
      .min = 0, .max = 86400000 },
    { "lifecycle-interval", "TAILOR_LIFECYCLE_INTERVAL", TLR_SET_DURATION,
      offsetof(lc_app_cfg, lifecycle_every_ms), "2s", "NodeClaim lifecycle pass period",
      .min = 100, .max = 600000 },
    { "gc-interval", "TAILOR_GC_INTERVAL", TLR_SET_DURATION, offsetof(lc_app_cfg, gc_every_ms),
      "60s", "garbage-collection pass period", .min = 1000, .max = 3600000 },
    { "ice-ttl", "TAILOR_ICE_TTL", TLR_SET_DURATION, offsetof(lc_app_cfg, ice_ttl_ms), "3m",
      "how long an offering that answered insufficient capacity is skipped",
      .min = 1000, .max = 3600000 },
    { "nodeclass-refresh", "TAILOR_NODECLASS_REFRESH", TLR_SET_DURATION,
      offsetof(lc_app_cfg, resolve_ttl_ms), "60s",
      "how often EC2NodeClass subnets, security groups and AMIs are resolved again",
      .min = 1000, .max = 3600000 },
    { "parallel-calls", "TAILOR_PARALLEL_CALLS", TLR_SET_INT, offsetof(lc_app_cfg, parallel), "32",
      "concurrent CreateFleet / CreateTags / NodeClaim writes of one batch", .min = 1,
      .max = 64 },
    { "fleet-batching", "TAILOR_FLEET_BATCHING", TLR_SET_BOOL,
      offsetof(lc_app_cfg, fleet_batching), "true",
      "launch identical NodeClaims with one CreateFleet (TotalTargetCapacity = their count)" },
    { "leader-elect", "TAILOR_LEADER_ELECT", TLR_SET_BOOL, offsetof(lc_app_cfg, leader_elect),
      "true", "hold a coordination.k8s.io Lease; only the holder launches" },
    { "cluster-endpoint", "TAILOR_CLUSTER_ENDPOINT", TLR_SET_STR,
      offsetof(lc_app_cfg, cluster_endpoint), NULL,
      "API server URL nodes join (default: EKS DescribeCluster of --cluster-name)" },
    /* Not a secret, but kilobytes of base64: kept out of the settings line
     * (the log names its size and SHA-256 when the identity is resolved). */
    { "cluster-ca-bundle", "TAILOR_CLUSTER_CA_BUNDLE", TLR_SET_SECRET,
      offsetof(lc_app_cfg, cluster_ca), NULL,
      "the cluster CA (PEM), base64-encoded as EKS gives it (default: DescribeCluster)" },
    { "cluster-cidr", "TAILOR_CLUSTER_CIDR", TLR_SET_STR, offsetof(lc_app_cfg, cluster_cidr),
      NULL, "the cluster's service CIDR, e.g. 10.100.0.0/16 (default: DescribeCluster)" },
    { "cluster-dns", "TAILOR_CLUSTER_DNS", TLR_SET_STR, offsetof(lc_app_cfg, cluster_dns), NULL,
      "cluster DNS IP for the kubelet (default: the ClusterIP of kube-system/kube-dns; "
      "none: the node's default)" },
    { "registration-ttl", "TAILOR_REGISTRATION_TTL", TLR_SET_DURATION,
      offsetof(lc_app_cfg, registration_ttl_ms), "15m",
      "a launched NodeClaim whose Node has not registered by then is deleted and its "
      "instance terminated", .min = 1000, .max = 24LL * 3600 * 1000 },
    { "plan-gate-timeout", "TAILOR_PLAN_GATE_TIMEOUT", TLR_SET_DURATION,
      offsetof(lc_app_cfg, plan_gate_ms), "90s",
      "the nodes launched for one plan's spread pods register together; a node waits at most "
      "this long after its launch for the others (0: no waiting)",
      .min = 0, .max = 3600000 },
    TLR_SETTING_LEASE_NAMESPACE(lc_app_cfg, lease_namespace),
    TLR_SETTING_LEASE_TIMING(lc_app_cfg, lease_ms, lease_renew_deadline_ms, lease_retry_ms),
};

int main(int argc, char **argv)
{
    lc_app_cfg cfg = { 0 };
    lc_app *app = lc_app_new(&cfg);
    const tlr_service_ops ops = {
        .name = "launcher",
        .summary = "Owns NodeClaims and the cloud: launches and terminates EC2 instances.",
        .http_default = "127.0.0.1:8121",
        .settings = settings,
        .nsettings = sizeof(settings) / sizeof(settings[0]),
        .cfg = &cfg,
        .start = lc_app_start,
        .stop = lc_app_stop,
        .app = app,
    };
    int rc = tlr_service_main(argc, argv, &ops);
    lc_app_delete(app);
    return rc;
}
