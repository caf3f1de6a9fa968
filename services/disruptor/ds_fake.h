/* ds_fake.h - recording fakes of the disruptor's ops (ds_ops.h) for tests.
 *
 * One ds_fake plays the whole outside world: Kubernetes (NodeClaims and
 * Nodes with finalizers and deletion, the pods bound to each node, PDBs,
 * workloads), the launcher (Terminate deletes the claim as the real one
 * does; Launch adds claims), the solver (the real engine, tlr_simulate(),
 * in-process: decisions are tested against real placements), the watcher
 * (a scripted snapshot) and AWS (queued SQS messages).  Every call is
 * recorded as one line of text, in order ("evict default/web-1",
 * "terminate nc-1 i-1", ...).  Lives in the logic
 * library so every test can use it (Karpenter's cloudprovider/fake).
 */
#ifndef DS_FAKE_H
#define DS_FAKE_H

#include "ds_ops.h"
#include "tlr_time.h"

typedef struct ds_fake_workload {
    const char *owner_kind, *owner_name;   /* the pod's controller owner */
    ds_workload w;                         /* answer (strings borrowed) */
    char restarted[160];                   /* restart's reason, kept here */
} ds_fake_workload;

typedef struct ds_fake {
    /* Kubernetes */
    tlr_kclaims claims;
    tlr_knodes nodes;
    Tailor__V1__Pod *pods[256];            /* owned; node_name says where */
    size_t npods;
    Tailor__V1__PodDisruptionBudget *pdbs[8];
    size_t npdbs;
    const char *refuse_app;                /* evictions of app=<this> get 429 */
    ds_fake_workload workloads[8];
    size_t nworkloads;
    int finalizer_rc;                      /* returned by finalizer when set */
    /* launcher */
    int terminate_rc;                      /* returned by terminate when set */
    int launched;                          /* claims launched so far */
    bool launch_initialized;               /* launched claims are Initialized at once */
    /* solver */
    const Tailor__V1__Catalog *catalog;    /* borrowed: what the fake solver knows */
    int simulations;
    int simulate_delay_ms;                 /* each Simulate takes this long (wall clock) */
    /* watcher */
    Tailor__V1__SnapshotResponse *snap;    /* owned; copies handed out */
    /* AWS */
    ds_sqs_msgs sqs;
    /* record */
    char **calls;
    size_t ncalls;
    int64_t now_ms;
    tlr_clock clock;
} ds_fake;

void ds_fake_init(ds_fake *f);
void ds_fake_clear(ds_fake *f);
ds_kube_ops ds_fake_kube(ds_fake *f);
tlr_drain_ops ds_fake_drain(ds_fake *f);
ds_launcher_ops ds_fake_launcher(ds_fake *f);
ds_solver_ops ds_fake_solver(ds_fake *f);
ds_watcher_ops ds_fake_watcher(ds_fake *f);
ds_cloud_ops ds_fake_cloud(ds_fake *f);

/* Calls whose text starts with prefix; the i-th such call (or NULL). */
size_t ds_fake_count(const ds_fake *f, const char *prefix);
const char *ds_fake_call(const ds_fake *f, const char *prefix, size_t i);
void ds_fake_forget_calls(ds_fake *f);

/* Builders (copied strings).  A claim's node is linked by providerID
 * aws:///us-east-1a/<instance>. */
tlr_kclaim *ds_fake_add_claim(ds_fake *f, const char *name, const char *pool, const char *instance);
tlr_knode *ds_fake_add_node(ds_fake *f, const char *name, const char *pool, const char *instance);
tlr_kclaim *ds_fake_claim(ds_fake *f, const char *name);
tlr_knode *ds_fake_node(ds_fake *f, const char *name);
/* A pod on node (copied in; the fake owns the copy). */
void ds_fake_add_pod(ds_fake *f, const Tailor__V1__Pod *p);
Tailor__V1__Pod *ds_fake_pod(ds_fake *f, const char *name);
size_t ds_fake_pods_on(const ds_fake *f, const char *node);
void ds_fake_add_sqs(ds_fake *f, const char *id, const char *body);

#endif
