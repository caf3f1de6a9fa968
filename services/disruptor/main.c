/* main.c - tailor-disruptor: settings and wiring only.
 *
 * The disruptor is the only evictor.  termination.c drains and removes
 * NodeClaims being deleted (finalizer, taint, common/drain, Terminate on
 * the launcher); controller.c runs the disruption methods in order --
 * expiration.c, interruption.c (the SQS queue), drift.c, emptiness.c,
 * consolidation.c -- under the NodePools' budgets (budget.c), validates
 * each decision again and executes it; protect.c keeps single-replica
 * workloads up; explain.c answers Explain.  The real clients are ds_kube.c,
 * clients.c and ds_cloud.c; ds_app.c puts them together.
 */
#include <stddef.h>

#include "ds_app.h"
#include "tlr_service.h"

static const char *const rebalance_choices[] = { "event", "drain", NULL };

static const tlr_setting settings[] = {
    { "listen", "TAILOR_LISTEN", TLR_SET_STR, offsetof(ds_app_cfg, listen),
      "tls+tcp://127.0.0.1:7131", "nng URL to answer Explain on" },
    { "publish", "TAILOR_PUBLISH", TLR_SET_STR, offsetof(ds_app_cfg, publish),
      "tls+tcp://127.0.0.1:7132", "nng URL to publish the disruption topic on" },
    TLR_SETTING_MAX_MESSAGE_MIB(ds_app_cfg, max_msg_mib),
    TLR_SETTING_KUBECONFIG(ds_app_cfg, kubeconfig),
    TLR_SETTING_IN_CLUSTER(ds_app_cfg, in_cluster),
    { "watcher", "TAILOR_WATCHER_REP", TLR_SET_STR, offsetof(ds_app_cfg, watcher),
      "tls+tcp://127.0.0.1:7111", "the watcher's REP URL (snapshots)" },
    { "watcher-publish", "TAILOR_WATCHER_PUB", TLR_SET_STR, offsetof(ds_app_cfg, watcher_pub),
      "tls+tcp://127.0.0.1:7112", "the watcher's PUB URL (cluster changes: consolidateAfter timers)" },
    { "launcher", "TAILOR_LAUNCHER", TLR_SET_STR, offsetof(ds_app_cfg, launcher),
      "tls+tcp://127.0.0.1:7121", "the launcher's REP URL (Launch, Terminate, Catalog)" },
    { "solver", "TAILOR_SOLVER", TLR_SET_LIST, offsetof(ds_app_cfg, solvers),
      "tls+tcp://127.0.0.1:7101", "solver replica URLs (comma-separated; Simulate)" },
    { "catalog", "TAILOR_CATALOG", TLR_SET_STR, offsetof(ds_app_cfg, catalog),
      "../shared/data/aws-instance-types.json",
      "instance-type catalog JSON file: prices nodes until the launcher's catalog arrives" },
    { "catalog-refresh", "TAILOR_CATALOG_REFRESH", TLR_SET_DURATION,
      offsetof(ds_app_cfg, catalog_every_ms), "30s",
      "ask the launcher for the catalog it plans with this often (every 10 s until it answers)",
      .min = 1000, .max = 86400000 },
    { "zones", "TAILOR_ZONES", TLR_SET_LIST, offsetof(ds_app_cfg, zones),
      "us-east-1a,us-east-1b,us-east-1c", "zones offered in the catalog (as the launcher's)" },
    { "spot-discount", "TAILOR_SPOT_DISCOUNT", TLR_SET_DOUBLE,
      offsetof(ds_app_cfg, spot_discount), "0.6",
      "catalog file only: spot price = on-demand * (1 - discount) (as the launcher's)" },
    { "aws-region", "AWS_REGION", TLR_SET_STR, offsetof(ds_app_cfg, region), "us-east-1",
      "AWS region" },
    { "aws-endpoint", "TAILOR_AWS_ENDPOINT", TLR_SET_STR, offsetof(ds_app_cfg, endpoint), NULL,
      "SQS endpoint override (moto: http://127.0.0.1:PORT); default AWS_ENDPOINT_URL" },
    { "interruption-queue", "TAILOR_INTERRUPTION_QUEUE", TLR_SET_STR,
      offsetof(ds_app_cfg, queue), NULL,
      "SQS queue (name or URL) EventBridge feeds with EC2 interruption events; unset = off" },
    { "termination-interval", "TAILOR_TERMINATION_INTERVAL", TLR_SET_DURATION,
      offsetof(ds_app_cfg, termination_every_ms), "1s", "termination (drain) pass period",
      .min = 50, .max = 600000 },
    { "termination-idle-interval", "TAILOR_TERMINATION_IDLE_INTERVAL", TLR_SET_DURATION,
      offsetof(ds_app_cfg, termination_idle_ms), "10s",
      "termination pass period while nothing terminates (a NodeClaim or Node change from the "
      "watcher starts a pass at once); 0 = always --termination-interval", .min = 0,
      .max = 3600000 },
    { "disruption-interval", "TAILOR_DISRUPTION_INTERVAL", TLR_SET_DURATION,
      offsetof(ds_app_cfg, disruption_every_ms), "10s",
      "disruption pass period (Karpenter polls every 10 s)", .min = 50, .max = 3600000 },
    { "interruption-interval", "TAILOR_INTERRUPTION_INTERVAL", TLR_SET_DURATION,
      offsetof(ds_app_cfg, interruption_every_ms), "2s", "how often the queue is read",
      .min = 50, .max = 600000 },
    { "validation-delay", "TAILOR_VALIDATION_DELAY", TLR_SET_DURATION,
      offsetof(ds_app_cfg, validation_ms), "15s",
      "wait this long, then re-check a decision before acting (Karpenter: 15 s)", .min = 0,
      .max = 600000 },
    { "min-drain-time", "TAILOR_MIN_DRAIN_TIME", TLR_SET_DURATION,
      offsetof(ds_app_cfg, min_drain_ms), "5s",
      "a drained node stays this long before termination (catches late bindings)", .min = 0,
      .max = 600000 },
    { "replacement-timeout", "TAILOR_REPLACEMENT_TIMEOUT", TLR_SET_DURATION,
      offsetof(ds_app_cfg, replace_timeout_ms), "10m",
      "give a decision up when its replacements are not Initialized by then", .min = 1000,
      .max = 7200000 },
    { "event-interval", "TAILOR_EVENT_INTERVAL", TLR_SET_DURATION,
      offsetof(ds_app_cfg, event_every_ms), "60s",
      "repeat an unchanged 'drain blocked' Event at most this often", .min = 100, .max = 3600000 },
    { "min-savings", "TAILOR_MIN_SAVINGS", TLR_SET_DOUBLE, offsetof(ds_app_cfg, min_savings),
      "0.1", "a replacement must cut the replaced nodes' cost by at least this share", .min = 0,
      .max = 1 },
    { "spot-to-spot-consolidation", "TAILOR_SPOT_TO_SPOT_CONSOLIDATION", TLR_SET_BOOL,
      offsetof(ds_app_cfg, spot_to_spot), "false",
      "let consolidation replace spot nodes by spot nodes (then only with 15 cheaper types)" },
    { "max-candidates", "TAILOR_MAX_CANDIDATES", TLR_SET_INT,
      offsetof(ds_app_cfg, max_candidates), "100",
      "nodes one multi-node consolidation considers (Karpenter: 100)", .min = 1, .max = 100000 },
    TLR_SETTING_MIN_VALUES_POLICY(ds_app_cfg, min_values_policy,
          "Karpenter's MIN_VALUES_POLICY for replacements: Strict or BestEffort (set it as the "
          "launcher's)"),
    TLR_SETTING_PREFERENCE_POLICY(ds_app_cfg, preference_policy,
          "Karpenter's PREFERENCE_POLICY for simulations: Respect or Ignore (set it as the "
          "launcher's)"),
    { "rebalance", "TAILOR_REBALANCE", TLR_SET_ENUM, offsetof(ds_app_cfg, rebalance), "event",
      "on a rebalance recommendation: event (Karpenter) or drain", .choices = rebalance_choices },
    { "leader-elect", "TAILOR_LEADER_ELECT", TLR_SET_BOOL, offsetof(ds_app_cfg, leader_elect),
      "true", "hold a coordination.k8s.io Lease; only the holder disrupts" },
    TLR_SETTING_LEASE_NAMESPACE(ds_app_cfg, lease_namespace),
    TLR_SETTING_LEASE_TIMING(ds_app_cfg, lease_ms, lease_renew_deadline_ms, lease_retry_ms),
    { "dry-run", "TAILOR_DRY_RUN", TLR_SET_BOOL, offsetof(ds_app_cfg, dry_run), "false",
      "decide and explain, but never taint, evict or terminate" },
    { "rpc-timeout", "TAILOR_RPC_TIMEOUT", TLR_SET_DURATION, offsetof(ds_app_cfg, rpc_timeout_ms),
      "30s", "per request to the watcher, solvers and launcher", .min = 100, .max = 600000 },
    { "solver-connection-age", "TAILOR_SOLVER_CONNECTION_AGE", TLR_SET_DURATION,
      offsetof(ds_app_cfg, solver_conn_age_ms), "1m",
      "close the oldest solver connection past this age before a request (when another is "
      "up): a redial through the Service reaches solver replicas added since; 0 = keep",
      .min = 0, .max = 86400000 },
};

int main(int argc, char **argv)
{
    ds_app_cfg cfg = { 0 };
    ds_app *app = ds_app_new(&cfg);
    const tlr_service_ops ops = {
        .name = "disruptor",
        .summary = "Drains and removes nodes safely: emptiness, expiration, drift, interruption, "
                   "consolidation.",
        .http_default = "127.0.0.1:8131",
        .settings = settings,
        .nsettings = sizeof(settings) / sizeof(settings[0]),
        .cfg = &cfg,
        .start = ds_app_start,
        .stop = ds_app_stop,
        .app = app,
    };
    int rc = tlr_service_main(argc, argv, &ops);
    ds_app_delete(app);
    return rc;
}
