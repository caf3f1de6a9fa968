/* sched_podlife.c - the kubelet's part of a pod's life, simulated.
 *
 * A pod bound to a Ready node turns Running with Ready, ContainersReady,
 * Initialized and PodReadyToStartContainers True, IPs, a start time and
 * running container statuses, once it has been seen bound for the start
 * delay.  A pod on a node that is not Ready stays Pending; a Running pod
 * whose node stops being Ready turns not Ready (as the node lifecycle
 * controller marks it) and Ready again when the node recovers.  Pods on
 * nodes that do not exist are left to the pod garbage collector.
 *
 * A failure to test against: a pod annotated
 * kubesim.tailor.dev/crash-loop-on-node-label: KEY that starts on a node
 * carrying label KEY crash-loops instead -- Running, never Ready, every
 * container waiting in CrashLoopBackOff after CRASH_RESTARTS restarts (an
 * image that breaks on the new nodes, say).
 */
#include "sched.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/linkhash.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_time.h"

struct ks_podlife {
    ks_store *s;
    tlr_logger *lg;
    int64_t delay_ms;
    struct lh_table *seen;   /* uid -> first time seen bound (mono ms) */
    uint32_t next_ip;
};

typedef struct seen_entry {
    char *uid;
    int64_t since;           /* first seen bound (mono ms) */
    uint64_t checked_rv;     /* Running pods: version last found as wanted */
    bool checked_ready;      /* ... with the node in this state */
    bool live;               /* seen in the current pass */
} seen_entry;

static void seen_free(struct lh_entry *e)
{
    seen_entry *se = (seen_entry *)lh_entry_v(e);
    free(se->uid);
    free(se);
}

void ks_podlife_create(ks_store *s, tlr_logger *lg, int64_t start_delay_ms, ks_podlife **out)
{
    ks_podlife *pl = tlr_calloc(1, sizeof(*pl));
    pl->s = s;
    pl->lg = lg;
    pl->delay_ms = start_delay_ms;
    pl->seen = lh_kchar_table_new(1024, seen_free);
    pl->next_ip = 1;
    *out = pl;
}

void ks_podlife_free(ks_podlife *pl)
{
    if (!pl)
        return;
    lh_table_free(pl->seen);
    free(pl);
}

static bool cond_true(json_object *o, const char *type, bool *present)
{
    json_object *conds = tlr_json_arr(o, "status.conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        if (t && strcmp(t, type) == 0) {
            if (present)
                *present = true;
            return s && strcmp(s, "True") == 0;
        }
    }
    if (present)
        *present = false;
    return false;
}

/* Set condition type to status (keeping lastTransitionTime when equal). */
static void cond_set(json_object *status, const char *type, const char *value, const char *now)
{
    json_object *conds = tlr_json_arr(status, "conditions");
    if (!conds) {
        conds = json_object_new_array();
        json_object_object_add(status, "conditions", conds);
    }
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        if (!t || strcmp(t, type) != 0)
            continue;
        if (!s || strcmp(s, value) != 0) {
            json_object_object_add(c, "status", json_object_new_string(value));
            json_object_object_add(c, "lastTransitionTime", json_object_new_string(now));
        }
        return;
    }
    json_object *c = json_object_new_object();
    json_object_object_add(c, "type", json_object_new_string(type));
    json_object_object_add(c, "status", json_object_new_string(value));
    json_object_object_add(c, "lastProbeTime", NULL);
    json_object_object_add(c, "lastTransitionTime", json_object_new_string(now));
    json_object_array_add(conds, c);
}

static json_object *ip_list(const char *ip)
{
    json_object *a = json_object_new_array();
    json_object *e = json_object_new_object();
    json_object_object_add(e, "ip", json_object_new_string(ip));
    json_object_array_add(a, e);
    return a;
}

/* Container statuses for one list of containers (running, ready). */
static json_object *container_statuses(json_object *containers, const char *now, bool init,
                                       uint64_t seed)
{
    json_object *out = json_object_new_array();
    for (size_t i = 0; containers && i < json_object_array_length(containers); i++) {
        json_object *c = json_object_array_get_idx(containers, i);
        const char *name = tlr_json_str(c, "name"), *image = tlr_json_str(c, "image");
        const char *rp = tlr_json_str(c, "restartPolicy");
        bool sidecar = init && rp && strcmp(rp, "Always") == 0;
        bool done = init && !sidecar;
        char cid[96];
        snprintf(cid, sizeof(cid), "containerd://%016" PRIx64 "%08zx", seed, i);
        json_object *cs = json_object_new_object();
        json_object_object_add(cs, "name", json_object_new_string(name ? name : ""));
        json_object_object_add(cs, "image", json_object_new_string(image ? image : ""));
        json_object_object_add(cs, "imageID", json_object_new_string(""));
        json_object_object_add(cs, "containerID", json_object_new_string(cid));
        json_object_object_add(cs, "ready", json_object_new_boolean(!done));
        json_object_object_add(cs, "started", json_object_new_boolean(!done));
        json_object_object_add(cs, "restartCount", json_object_new_int(0));
        json_object *state = json_object_new_object(), *st = json_object_new_object();
        json_object_object_add(st, "startedAt", json_object_new_string(now));
        if (done) {
            json_object_object_add(st, "finishedAt", json_object_new_string(now));
            json_object_object_add(st, "exitCode", json_object_new_int(0));
            json_object_object_add(st, "reason", json_object_new_string("Completed"));
            json_object_object_add(state, "terminated", st);
        } else {
            json_object_object_add(state, "running", st);
        }
        json_object_object_add(cs, "state", state);
        json_object_object_add(cs, "lastState", json_object_new_object());
        json_object_array_add(out, cs);
    }
    return out;
}

#define CRASH_ANNOTATION "kubesim.tailor.dev/crash-loop-on-node-label"
#define CRASH_RESTARTS 3

/* Does pod crash-loop on a node with these labels? */
static bool crashes_on(json_object *pod, json_object *node_labels)
{
    json_object *ann = tlr_json_obj(pod, "metadata.annotations"), *v;
    const char *key = NULL;
    if (ann && json_object_object_get_ex(ann, CRASH_ANNOTATION, &v))
        key = json_object_get_string(v);
    return key && key[0] && node_labels && json_object_object_get_ex(node_labels, key, NULL);
}

/* Turn fresh container statuses into a crash loop. */
static void crash_loop(json_object *statuses, const char *now)
{
    for (size_t i = 0; statuses && i < json_object_array_length(statuses); i++) {
        json_object *cs = json_object_array_get_idx(statuses, i);
        json_object_object_add(cs, "ready", json_object_new_boolean(false));
        json_object_object_add(cs, "started", json_object_new_boolean(false));
        json_object_object_add(cs, "restartCount", json_object_new_int(CRASH_RESTARTS));
        json_object *state = json_object_new_object(), *w = json_object_new_object();
        json_object_object_add(w, "reason", json_object_new_string("CrashLoopBackOff"));
        json_object_object_add(w, "message",
                               json_object_new_string("back-off 40s restarting failed container"));
        json_object_object_add(state, "waiting", w);
        json_object_object_add(cs, "state", state);
        json_object *last = json_object_new_object(), *t = json_object_new_object();
        json_object_object_add(t, "exitCode", json_object_new_int(1));
        json_object_object_add(t, "reason", json_object_new_string("Error"));
        json_object_object_add(t, "finishedAt", json_object_new_string(now));
        json_object_object_add(last, "terminated", t);
        json_object_object_add(cs, "lastState", last);
    }
}

typedef struct life_arg {
    json_object *node_labels;   /* borrowed; may be NULL */
    const char *host_ip;
    char pod_ip[32];
    bool start;       /* Pending -> Running */
    bool ready;       /* wanted Ready value for a Running pod */
} life_arg;

static int life_mutate(json_object *pod, void *arg, ks_status *st)
{
    (void)st;
    const life_arg *a = arg;
    char now[32];
    ks_now_rfc3339(now, sizeof(now));
    json_object *status = tlr_json_obj(pod, "status");
    if (!status) {
        status = json_object_new_object();
        json_object_object_add(pod, "status", status);
    }
    const char *phase = tlr_json_str(status, "phase");
    if (tlr_json_str(pod, "metadata.deletionTimestamp"))
        return TLR_E_CANCELED;
    if (a->start) {
        if (phase && strcmp(phase, "Pending") != 0)
            return TLR_E_CANCELED;
        json_object_object_add(status, "phase", json_object_new_string("Running"));
        json_object_object_add(status, "hostIP", json_object_new_string(a->host_ip));
        json_object_object_add(status, "hostIPs", ip_list(a->host_ip));
        json_object_object_add(status, "podIP", json_object_new_string(a->pod_ip));
        json_object_object_add(status, "podIPs", ip_list(a->pod_ip));
        json_object_object_add(status, "startTime", json_object_new_string(now));
        uint64_t seed = (uint64_t)tlr_wall_ms();
        json_object *cs = container_statuses(tlr_json_arr(pod, "spec.containers"), now, false,
                                             seed);
        bool crash = crashes_on(pod, a->node_labels);
        if (crash)
            crash_loop(cs, now);
        json_object_object_add(status, "containerStatuses", cs);
        json_object *ic = tlr_json_arr(pod, "spec.initContainers");
        if (ic && json_object_array_length(ic) > 0)
            json_object_object_add(status, "initContainerStatuses",
                                   container_statuses(ic, now, true, seed + 1));
        cond_set(status, "PodReadyToStartContainers", "True", now);
        cond_set(status, "Initialized", "True", now);
        cond_set(status, "Ready", crash ? "False" : "True", now);
        cond_set(status, "ContainersReady", crash ? "False" : "True", now);
        cond_set(status, "PodScheduled", "True", now);
        return TLR_OK;
    }
    if (!phase || strcmp(phase, "Running") != 0)
        return TLR_E_CANCELED;
    bool ready = a->ready && !crashes_on(pod, a->node_labels);
    bool present = false;
    if (cond_true(pod, "Ready", &present) == ready && present)
        return TLR_E_CANCELED;
    cond_set(status, "Ready", ready ? "True" : "False", now);
    cond_set(status, "ContainersReady", ready ? "True" : "False", now);
    json_object *cs = tlr_json_arr(status, "containerStatuses");
    for (size_t i = 0; cs && i < json_object_array_length(cs); i++)
        json_object_object_add(json_object_array_get_idx(cs, i), "ready",
                               json_object_new_boolean(ready));
    return TLR_OK;
}

/* Node name -> (ready, internal IP) for this pass. */
typedef struct node_state {
    bool ready;
    char ip[64];
    json_object *labels;   /* owned reference; may be NULL */
} node_state;

static void node_state_free(struct lh_entry *e)
{
    node_state *st = (node_state *)lh_entry_v(e);
    free((void *)lh_entry_k(e));
    json_object_put(st->labels);
    free(st);
}

static bool bound_filter(const ks_obj *o, void *arg)
{
    (void)arg;
    return ks_obj_node_name(o)[0] && !ks_obj_deleting(o);
}

size_t ks_podlife_pass(ks_podlife *pl)
{
    ks_objlist nodes = { 0 }, pods = { 0 };
    size_t changed = 0;
    struct lh_table *ns = lh_kchar_table_new(64, node_state_free);
    ks_list_opts lo = { .filter = bound_filter };
    if (ks_store_list(pl->s, KS_NODE, NULL, &nodes, NULL) != TLR_OK ||
        ks_store_list(pl->s, KS_POD, &lo, &pods, NULL) != TLR_OK)
        goto out;
    for (size_t i = 0; i < nodes.n; i++) {
        json_object *n = ks_obj_parse(nodes.items[i]);
        node_state *st = tlr_calloc(1, sizeof(*st));
        st->ready = cond_true(n, "Ready", NULL);
        st->labels = json_object_get(tlr_json_obj(n, "metadata.labels"));
        json_object *addrs = tlr_json_arr(n, "status.addresses");
        for (size_t k = 0; addrs && k < json_object_array_length(addrs); k++) {
            json_object *a = json_object_array_get_idx(addrs, k);
            const char *t = tlr_json_str(a, "type"), *v = tlr_json_str(a, "address");
            if (t && v && strcmp(t, "InternalIP") == 0)
                snprintf(st->ip, sizeof(st->ip), "%s", v);
        }
        if (!st->ip[0])   /* a stable made-up address per node */
            snprintf(st->ip, sizeof(st->ip), "10.0.%zu.%zu", (i / 250) % 250, i % 250 + 1);
        lh_table_insert(ns, tlr_strdup(ks_obj_name(nodes.items[i])), st);
        json_object_put(n);
    }
    {
        struct lh_entry *e, *tmp;
        lh_foreach_safe(pl->seen, e, tmp) ((seen_entry *)lh_entry_v(e))->live = false;
    }
    int64_t now = tlr_mono_ms();
    for (size_t i = 0; i < pods.n; i++) {
        ks_obj *o = pods.items[i];
        void *v = NULL;
        if (!lh_table_lookup_ex(ns, ks_obj_node_name(o), &v))
            continue;
        const node_state *nst = v;
        const char *phase = ks_obj_phase(o);
        bool pending = !*phase || strcmp(phase, "Pending") == 0;
        if (!pending && strcmp(phase, "Running") != 0)
            continue;
        life_arg a = { .node_labels = nst->labels, .host_ip = nst->ip, .ready = nst->ready };
        seen_entry *se;
        if (lh_table_lookup_ex(pl->seen, ks_obj_uid(o), &v)) {
            se = v;
        } else {
            se = tlr_calloc(1, sizeof(*se));
            se->uid = tlr_strdup(ks_obj_uid(o));
            se->since = now;
            lh_table_insert(pl->seen, se->uid, se);
        }
        se->live = true;
        if (pending) {
            if (!nst->ready || now - se->since < pl->delay_ms)
                continue;
            a.start = true;
            uint32_t ip = pl->next_ip++;
            snprintf(a.pod_ip, sizeof(a.pod_ip), "10.%u.%u.%u", 64 + (ip >> 16) % 64,
                     (ip >> 8) & 255, ip & 255);
        } else if (se->checked_rv == ks_obj_rv(o) && se->checked_ready == nst->ready) {
            continue;   /* nothing moved since we last looked */
        }
        ks_obj *after = NULL;
        if (ks_store_modify(pl->s, KS_POD, ks_obj_namespace(o), ks_obj_name(o), KS_W_STATUS,
                            life_mutate, &a, &after, NULL) == TLR_OK && after) {
            if (ks_obj_rv(after) != ks_obj_rv(o))
                changed++;
            if (!a.start) {
                se->checked_rv = ks_obj_rv(after);
                se->checked_ready = nst->ready;
            }
        }
        ks_obj_unref(after);
    }
    {
        struct lh_entry *e, *tmp;
        lh_foreach_safe(pl->seen, e, tmp) if (!((seen_entry *)lh_entry_v(e))->live)
            lh_table_delete(pl->seen, lh_entry_k(e));
    }
out:
    lh_table_free(ns);
    ks_objlist_free(&nodes);
    ks_objlist_free(&pods);
    return changed;
}
