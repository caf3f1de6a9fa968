/* pdb_test.c - PodDisruptionBudget status math, eviction decisions, and
 * the Eviction API end to end against a real in-process store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ks_hooks.h"
#include "pdb.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_time.h"

static json_object *J(const char *s)
{
    char *t = strdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_object *o = json_tokener_parse(t);
    if (!o)
        fail_msg("bad test JSON: %s", s);
    free(t);
    return o;
}

/* ------------------------------------------------------------------ */
/* Status math                                                         */
/* ------------------------------------------------------------------ */

/* Scale lookup for the tables: rs-a belongs to deployment d (scale 5),
 * rs-b to none (scale 2), sts (scale 3); anything else is missing. */
static int fake_scale(void *arg, const char *ns, const char *kind, const char *name,
                      const char *uid, char *scale_uid, size_t len, int32_t *scale)
{
    (void)arg;
    (void)ns;
    (void)uid;
    if (!strcmp(kind, "ReplicaSet") && !strcmp(name, "rs-a")) {
        snprintf(scale_uid, len, "uid-d");
        *scale = 5;
    } else if (!strcmp(kind, "ReplicaSet") && !strcmp(name, "rs-a2")) {
        snprintf(scale_uid, len, "uid-d");   /* the same Deployment, mid-rollout */
        *scale = 5;
    } else if (!strcmp(kind, "ReplicaSet") && !strcmp(name, "rs-b")) {
        snprintf(scale_uid, len, "uid-rs-b");
        *scale = 2;
    } else if (!strcmp(kind, "StatefulSet") && !strcmp(name, "sts")) {
        snprintf(scale_uid, len, "uid-sts");
        *scale = 3;
    } else {
        return TLR_E_NOTFOUND;
    }
    return TLR_OK;
}

#define RSA(n, r) { n, "ReplicaSet", "rs-a", "uid-rs-a", r, false }
#define RSA2(n, r) { n, "ReplicaSet", "rs-a2", "uid-rs-a2", r, false }
#define RSB(n, r) { n, "ReplicaSet", "rs-b", "uid-rs-b", r, false }
#define BARE(n, r) { n, "", "", "", r, false }

typedef struct calc_case {
    const char *name;
    const char *spec;
    ks_pdb_pod pods[6];
    size_t n;
    const char *disrupted;   /* status.disruptedPods or NULL; "NOW" = now, "OLD" = 3 min ago */
    bool failed;
    int32_t expected, desired, healthy, allowed;
} calc_case;

static const calc_case calc_cases[] = {
    { "minAvailable int: expected is the pod count", "{'minAvailable':2}",
      { RSA("a", true), RSA("b", true), RSA("c", true) }, 3, NULL, false, 3, 2, 3, 1 },
    { "minAvailable equal to healthy: none allowed", "{'minAvailable':3}",
      { RSA("a", true), RSA("b", true), RSA("c", true) }, 3, NULL, false, 3, 3, 3, 0 },
    { "not ready pods are not healthy", "{'minAvailable':1}",
      { RSA("a", true), RSA("b", false) }, 2, NULL, false, 2, 1, 1, 0 },
    { "terminating pods are not healthy", "{'minAvailable':1}",
      { RSA("a", true), { "b", "ReplicaSet", "rs-a", "uid-rs-a", true, true } }, 2, NULL, false,
      2, 1, 1, 0 },
    { "minAvailable percentage scales the controller", "{'minAvailable':'50%'}",
      { RSA("a", true), RSA("b", true), RSA("c", true) }, 3, NULL, false, 5, 3, 3, 0 },
    { "percentages round up", "{'minAvailable':'30%'}",
      { RSB("a", true), RSB("b", true) }, 2, NULL, false, 2, 1, 2, 1 },
    { "maxUnavailable int", "{'maxUnavailable':1}",
      { RSA("a", true), RSA("b", true), RSA("c", true), RSA("d", true), RSA("e", true) }, 5, NULL,
      false, 5, 4, 5, 1 },
    { "maxUnavailable percentage of two controllers", "{'maxUnavailable':'50%'}",
      { RSA("a", true), RSB("b", true), RSB("c", true) }, 3, NULL, false, 7, 3, 3, 0 },
    { "two ReplicaSets of one Deployment count once", "{'maxUnavailable':1}",
      { RSA("a", true), RSA2("b", true), RSA2("c", true) }, 3, NULL, false, 5, 4, 3, 0 },
    { "unmanaged pods are ignored in the scale", "{'maxUnavailable':0}",
      { RSB("a", true), RSB("b", true), BARE("x", true) }, 3, NULL, false, 2, 2, 3, 1 },
    { "a missing controller fails the sync", "{'maxUnavailable':1}",
      { { "a", "ReplicaSet", "gone", "uid-gone", true, false } }, 1, NULL, true, 0, 0, 0, 0 },
    { "no pods: nothing allowed", "{'maxUnavailable':1}", { BARE("x", true) }, 0, NULL, false,
      0, 0, 0, 0 },
    { "a pod just evicted is not healthy", "{'minAvailable':1}",
      { RSA("a", true), RSA("b", true), RSA("c", true) }, 3, "NOW", false, 3, 1, 2, 1 },
    { "an eviction older than 2 minutes is forgotten", "{'minAvailable':1}",
      { RSA("a", true), RSA("b", true), RSA("c", true) }, 3, "OLD", false, 3, 1, 3, 2 },
};

static void test_compute(void **state)
{
    (void)state;
    int64_t now = tlr_wall_ms();
    for (size_t i = 0; i < sizeof(calc_cases) / sizeof(calc_cases[0]); i++) {
        const calc_case *c = &calc_cases[i];
        json_object *pdb = json_object_new_object();
        json_object_object_add(pdb, "spec", J(c->spec));
        char ts[32];
        if (c->disrupted) {
            tlr_time_format_s(!strcmp(c->disrupted, "NOW") ? now : now - 180000, ts);
            json_object *st = json_object_new_object(), *dp = json_object_new_object();
            json_object_object_add(dp, "a", json_object_new_string(ts));
            json_object_object_add(st, "disruptedPods", dp);
            json_object_object_add(pdb, "status", st);
        }
        ks_pdb_calc r;
        ks_pdb_compute(pdb, pdb, c->pods, c->n, fake_scale, NULL, now, &r);
        if (r.failed != c->failed ||
            (!c->failed && (r.expected != c->expected || r.desired != c->desired ||
                            r.healthy != c->healthy || r.allowed != c->allowed)))
            fail_msg("%s: got failed=%d expected=%d desired=%d healthy=%d allowed=%d (%s), "
                     "want failed=%d %d %d %d %d", c->name, r.failed, r.expected, r.desired,
                     r.healthy, r.allowed, r.err, c->failed, c->expected, c->desired, c->healthy,
                     c->allowed);
        if (c->failed && !strstr(r.err, "found no controllers for pod \"a\""))
            fail_msg("%s: error %s", c->name, r.err);
        ks_pdb_calc_clear(&r);
        json_object_put(pdb);
    }
}

static void test_apply_writes_condition(void **state)
{
    (void)state;
    json_object *pdb = J("{'metadata':{'generation':4},'spec':{'minAvailable':1}}");
    ks_pdb_calc c = { .expected = 3, .desired = 1, .healthy = 3, .allowed = 2,
                      .disrupted = json_object_new_object() };
    assert_true(ks_pdb_apply(pdb, &c, "2025-01-01T00:00:00Z"));
    assert_false(ks_pdb_apply(pdb, &c, "2025-01-01T00:00:09Z"));   /* no change, no write */
    const char *want = "{'currentHealthy':3,'desiredHealthy':1,'expectedPods':3,"
                       "'disruptionsAllowed':2,'observedGeneration':4,'conditions':[{'type':"
                       "'DisruptionAllowed','status':'True','observedGeneration':4,"
                       "'lastTransitionTime':'2025-01-01T00:00:00Z','reason':'SufficientPods',"
                       "'message':''}]}";
    json_object *w = J(want);
    if (!json_object_equal(w, tlr_json_obj(pdb, "status")))
        fail_msg("status got %s", json_object_to_json_string(tlr_json_obj(pdb, "status")));
    c.allowed = 0;
    assert_true(ks_pdb_apply(pdb, &c, "2025-01-01T00:01:00Z"));
    const char *reason = tlr_json_str(pdb, "status.conditions.0.reason");
    if (!reason || strcmp(reason, "InsufficientPods"))
        fail_msg("reason %s with none allowed", reason ? reason : "(none)");
    ks_pdb_calc_clear(&c);
    json_object_put(w);
    json_object_put(pdb);
}

/* ------------------------------------------------------------------ */
/* Eviction decisions                                                  */
/* ------------------------------------------------------------------ */

typedef struct dec_case {
    const char *name;
    const char *status;    /* the PDB's status */
    int64_t generation;
    int rc;
    int code;
    const char *cause;     /* substring of details.causes[0].message */
} dec_case;

static const dec_case dec_cases[] = {
    { "allowed", "{'observedGeneration':1,'disruptionsAllowed':1,'currentHealthy':3,"
      "'desiredHealthy':2}", 1, TLR_OK, 0, NULL },
    { "none allowed", "{'observedGeneration':1,'disruptionsAllowed':0,'currentHealthy':3,"
      "'desiredHealthy':3}", 1, TLR_E_THROTTLED, 429,
      "The disruption budget web needs 3 healthy pods and has 3 currently" },
    { "not yet processed", "{'observedGeneration':1,'disruptionsAllowed':5}", 2,
      TLR_E_THROTTLED, 429, "The disruption budget web is still being processed by the server." },
    { "negative", "{'observedGeneration':1,'disruptionsAllowed':-1}", 1, TLR_E_AUTH, 403, NULL },
};

static void test_check_and_decrement(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(dec_cases) / sizeof(dec_cases[0]); i++) {
        const dec_case *c = &dec_cases[i];
        json_object *pdb = J("{'metadata':{'name':'web'}}");
        json_object_object_add(json_object_object_get(pdb, "metadata"), "generation",
                               json_object_new_int64(c->generation));
        json_object_object_add(pdb, "status", J(c->status));
        json_object *before = NULL;
        json_object_deep_copy(pdb, &before, NULL);
        ks_status st = { 0 };
        int rc = ks_pdb_check_and_decrement(pdb, "pod-1", "2025-01-01T00:00:00Z", &st);
        if (rc != c->rc || (rc && st.code != c->code))
            fail_msg("%s: got rc %d code %d, want %d %d", c->name, rc, st.code, c->rc, c->code);
        if (c->cause && (!st.cause_reason || strcmp(st.cause_reason, "DisruptionBudget") ||
                         !strstr(st.cause_message, c->cause)))
            fail_msg("%s: cause %s %s", c->name, st.cause_reason ? st.cause_reason : "(none)",
                     st.cause_message);
        if (rc == TLR_E_THROTTLED &&
            strcmp(st.message, "Cannot evict pod as it would violate the pod's disruption budget."))
            fail_msg("%s: message %s", c->name, st.message);
        if (rc == TLR_OK) {
            int64_t left = -1;
            assert_int_equal(tlr_json_int(pdb, "status.disruptionsAllowed", &left), TLR_OK);
            if (left != 0 || !tlr_json_str(pdb, "status.disruptedPods.pod-1"))
                fail_msg("%s: after: %s", c->name, json_object_to_json_string(pdb));
        } else if (!json_object_equal(before, pdb)) {
            fail_msg("%s: refused but changed the budget", c->name);
        }
        json_object_put(before);
        json_object_put(pdb);
    }
}

typedef struct ignore_case {
    const char *pod;
    bool ignore;      /* ks_evict_can_ignore_pdb */
    const char *pdb;  /* for ks_evict_unhealthy_ok */
    bool unhealthy_ok;
} ignore_case;

#define READY(s) "'conditions':[{'type':'Ready','status':'" s "'}]"
static const ignore_case ignore_cases[] = {
    { "{'status':{'phase':'Pending'}}", true, "{}", false },
    { "{'status':{'phase':'Succeeded'}}", true, "{}", false },
    { "{'status':{'phase':'Running'," READY("True") "}}", false, "{'status':{'currentHealthy':3,'desiredHealthy':2}}", false },
    { "{'metadata':{'deletionTimestamp':'2025-01-01T00:00:00Z'},'status':{'phase':'Running'}}", true, "{}", false },
    { "{'status':{'phase':'Running'," READY("False") "}}", false,
      "{'status':{'currentHealthy':3,'desiredHealthy':2}}", true },
    { "{'status':{'phase':'Running'," READY("False") "}}", false,
      "{'status':{'currentHealthy':1,'desiredHealthy':2}}", false },
    { "{'status':{'phase':'Running'," READY("False") "}}", false,
      "{'spec':{'unhealthyPodEvictionPolicy':'AlwaysAllow'},'status':{'currentHealthy':1,'desiredHealthy':2}}",
      true },
};

static void test_eviction_rules(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ignore_cases) / sizeof(ignore_cases[0]); i++) {
        const ignore_case *c = &ignore_cases[i];
        json_object *pod = J(c->pod), *pdb = J(c->pdb);
        bool ig = ks_evict_can_ignore_pdb(pod), uh = ks_evict_unhealthy_ok(pod, pdb);
        if (ig != c->ignore || (!ig && uh != c->unhealthy_ok))
            fail_msg("case %zu %s: ignore %d unhealthy_ok %d, want %d %d", i, c->pod, ig, uh,
                     c->ignore, c->unhealthy_ok);
        json_object_put(pod);
        json_object_put(pdb);
    }
    /* which budgets apply */
    json_object *labels = J("{'app':'web'}");
    json_object *p1 = J("{'spec':{'selector':{'matchLabels':{'app':'web'}}}}");
    json_object *p2 = J("{'spec':{'selector':{}}}");
    json_object *p3 = J("{'spec':{}}");
    assert_true(ks_pdb_selects(p1, labels, true));
    assert_false(ks_pdb_selects(p2, labels, true));   /* eviction: {} matches nothing */
    assert_true(ks_pdb_selects(p2, labels, false));   /* controller: {} matches all */
    assert_false(ks_pdb_selects(p3, labels, false));  /* nil matches nothing */
    json_object_put(labels);
    json_object_put(p1);
    json_object_put(p2);
    json_object_put(p3);
}

/* ------------------------------------------------------------------ */
/* The Eviction API over a store                                       */
/* ------------------------------------------------------------------ */

static void create(ks_store *s, ks_kind_id kind, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    ks_status st;
    if (ks_store_create_text(s, kind, "default", buf, NULL, &st) != TLR_OK)
        fail_msg("create failed: %s: %s", st.message, buf);
}

static void running_pod(ks_store *s, const char *name, const char *app, bool ready)
{
    create(s, KS_POD, "{'metadata':{'name':'%s','labels':{'app':'%s'}},'spec':{'nodeName':'n1',"
           "'containers':[{'name':'c','image':'x'}]},'status':{'phase':'Running',"
           "'conditions':[{'type':'Ready','status':'%s'}]}}", name, app, ready ? "True" : "False");
}

static void pdb_obj(ks_store *s, const char *name, const char *app, int min_available)
{
    create(s, KS_PDB, "{'metadata':{'name':'%s'},'spec':{'minAvailable':%d,'selector':"
           "{'matchLabels':{'app':'%s'}}}}", name, min_available, app);
}

/* Run the disruption controller's computation once for every PDB. */
static void sync_pdbs(ks_store *s)
{
    ks_pdb_sync(s, NULL);
}

static bool exists(ks_store *s, const char *name)
{
    ks_obj *o = NULL;
    int rc = ks_store_get(s, KS_POD, "default", name, &o, NULL);
    ks_obj_unref(o);
    return rc == TLR_OK;
}

static void test_evict_honours_budget(void **state)
{
    (void)state;
    ks_store *s;
    assert_int_equal(ks_store_create(&(ks_store_opts){ 0 }, &s), TLR_OK);
    running_pod(s, "a", "web", true);
    running_pod(s, "b", "web", true);
    running_pod(s, "c", "web", true);
    pdb_obj(s, "web", "web", 2);
    sync_pdbs(s);
    json_object *ev = J("{'apiVersion':'policy/v1','kind':'Eviction','metadata':{'name':'a'}}");
    ks_status st = { 0 };
    /* one disruption allowed: the first eviction passes, the second is 429
     * even though the controller has not run in between */
    assert_int_equal(ks_pods_evict(s, "default", "a", ev, &st), TLR_OK);
    assert_false(exists(s, "a"));
    json_object_object_add(json_object_object_get(ev, "metadata"), "name",
                           json_object_new_string("b"));
    int rc = ks_pods_evict(s, "default", "b", ev, &st);
    if (rc != TLR_E_THROTTLED || st.code != 429 || !st.cause_reason ||
        strcmp(st.cause_reason, "DisruptionBudget") || !strstr(st.cause_message, "web"))
        fail_msg("second eviction: rc %d code %d cause %s %s", rc, st.code,
                 st.cause_reason ? st.cause_reason : "", st.cause_message);
    assert_true(exists(s, "b"));
    /* a pod that is not running yet costs nothing */
    create(s, KS_POD, "{'metadata':{'name':'pending','labels':{'app':'web'}},'spec':{'containers':"
           "[{'name':'c','image':'x'}]},'status':{'phase':'Pending'}}");
    json_object_object_add(json_object_object_get(ev, "metadata"), "name",
                           json_object_new_string("pending"));
    assert_int_equal(ks_pods_evict(s, "default", "pending", ev, &st), TLR_OK);
    assert_false(exists(s, "pending"));
    /* two budgets over one pod: 500 */
    pdb_obj(s, "web2", "web", 0);
    json_object_object_add(json_object_object_get(ev, "metadata"), "name",
                           json_object_new_string("c"));
    rc = ks_pods_evict(s, "default", "c", ev, &st);
    if (rc == TLR_OK || st.code != 500 || !strstr(st.message, "more than one PodDisruptionBudget"))
        fail_msg("two budgets: rc %d code %d %s", rc, st.code, st.message);
    /* absent pod, mismatched name */
    assert_int_equal(ks_pods_evict(s, "default", "nope", ev, &st), TLR_E_PARSE);
    assert_int_equal(st.code, 400);
    json_object_object_del(ev, "metadata");
    assert_int_equal(ks_pods_evict(s, "default", "nope", ev, &st), TLR_E_NOTFOUND);
    assert_int_equal(st.code, 404);
    json_object_put(ev);
    ks_store_free(s);
}

static void test_relaxed_budget_allows(void **state)
{
    (void)state;
    ks_store *s;
    assert_int_equal(ks_store_create(&(ks_store_opts){ 0 }, &s), TLR_OK);
    running_pod(s, "a", "web", true);
    running_pod(s, "b", "web", true);
    pdb_obj(s, "web", "web", 2);
    sync_pdbs(s);
    json_object *ev = J("{'metadata':{'name':'a'}}");
    ks_status st;
    assert_int_equal(ks_pods_evict(s, "default", "a", ev, &st), TLR_E_THROTTLED);
    ks_status pst;
    assert_int_equal(ks_store_patch(s, KS_PDB, "default", "web", KS_PATCH_MERGE,
                                    "{\"spec\":{\"minAvailable\":1}}", strlen("{\"spec\":{\"minAvailable\":1}}"), 0, NULL, &pst), TLR_OK);
    /* until the controller has seen the new generation: 429, "still being processed" */
    assert_int_equal(ks_pods_evict(s, "default", "a", ev, &st), TLR_E_THROTTLED);
    if (!strstr(st.cause_message, "still being processed"))
        fail_msg("stale budget: cause %s", st.cause_message);
    sync_pdbs(s);
    assert_int_equal(ks_pods_evict(s, "default", "a", ev, &st), TLR_OK);
    assert_false(exists(s, "a"));
    json_object_put(ev);
    ks_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compute),
        cmocka_unit_test(test_apply_writes_condition),
        cmocka_unit_test(test_check_and_decrement),
        cmocka_unit_test(test_eviction_rules),
        cmocka_unit_test(test_evict_honours_budget),
        cmocka_unit_test(test_relaxed_budget_allows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
