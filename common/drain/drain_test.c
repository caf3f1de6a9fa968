/* drain_test.c - the drain policy (tiers, skips, do-not-disrupt, deadline,
 * backoff, PDB naming) as a table, and the drain pass against a recording
 * fake of the Kubernetes calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_drain.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"

#define NOW 1800000000000LL
#define MIN (60 * 1000LL)

/* ---- builders ---------------------------------------------------------- */

typedef struct pspec {
    const char *name;
    char kind;              /* 'r' ReplicaSet (default), 'd' DaemonSet, 'n' Node (mirror) */
    bool critical;
    const char *phase;      /* NULL Running, "Succeeded", "Failed" */
    const char *dnd;        /* karpenter.sh/do-not-disrupt value */
    int64_t age_ms;         /* created this long before NOW; 0 = 1h */
    int64_t deleted_ago_ms; /* deletionTimestamp this long before NOW; 0 = not deleting */
    int64_t tgp_s;          /* terminationGracePeriodSeconds; 0 = 30 */
    bool tolerates;         /* tolerates karpenter.sh/disrupted:NoSchedule */
    const char *app;        /* label app= */
} pspec;

static Tailor__V1__Label *label(const char *k, const char *v)
{
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(k);
    l->value = tlr_strdup(v);
    return l;
}

static Tailor__V1__Pod *mkpod(const pspec *s)
{
    Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
    tailor__v1__pod__init(p);
    char uid[64];
    snprintf(uid, sizeof(uid), "uid-%s", s->name);
    p->uid = tlr_strdup(uid);
    p->namespace_ = tlr_strdup("default");
    p->name = tlr_strdup(s->name);
    p->priority_class_name = tlr_strdup(s->critical ? "system-node-critical" : "");
    p->phase = !s->phase ? TAILOR__V1__POD_PHASE__POD_PHASE_RUNNING
             : !strcmp(s->phase, "Succeeded") ? TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED
                                              : TAILOR__V1__POD_PHASE__POD_PHASE_FAILED;
    p->creation_unix_ms = NOW - (s->age_ms ? s->age_ms : 60 * MIN);
    p->deletion_unix_ms = s->deleted_ago_ms ? NOW - s->deleted_ago_ms : 0;
    p->termination_grace_period_ms = (s->tgp_s ? s->tgp_s : 30) * 1000;
    Tailor__V1__OwnerReference *o = tlr_malloc(sizeof(*o));
    tailor__v1__owner_reference__init(o);
    o->kind = tlr_strdup(s->kind == 'd' ? "DaemonSet" : s->kind == 'n' ? "Node" : "ReplicaSet");
    o->api_version = tlr_strdup(s->kind == 'n' ? "v1" : "apps/v1");
    o->name = tlr_strdup("owner");
    o->controller = true;
    p->owners = tlr_malloc(sizeof(*p->owners));
    p->owners[0] = o;
    p->n_owners = 1;
    p->is_daemonset = s->kind == 'd';
    if (s->dnd) {
        p->annotations = tlr_malloc(sizeof(*p->annotations));
        p->annotations[0] = label(TLR_DRAIN_DO_NOT_DISRUPT, s->dnd);
        p->n_annotations = 1;
    }
    if (s->app) {
        p->labels = tlr_malloc(sizeof(*p->labels));
        p->labels[0] = label("app", s->app);
        p->n_labels = 1;
    }
    if (s->tolerates) {
        Tailor__V1__Toleration *t = tlr_malloc(sizeof(*t));
        tailor__v1__toleration__init(t);
        t->key = tlr_strdup(TLR_DRAIN_TAINT_KEY);
        t->operator_ = TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS;
        p->tolerations = tlr_malloc(sizeof(*p->tolerations));
        p->tolerations[0] = t;
        p->n_tolerations = 1;
    }
    return p;
}

static Tailor__V1__PodDisruptionBudget *mkpdb(const char *name, const char *app, int allowed)
{
    Tailor__V1__PodDisruptionBudget *b = tlr_malloc(sizeof(*b));
    tailor__v1__pod_disruption_budget__init(b);
    b->name = tlr_strdup(name);
    b->namespace_ = tlr_strdup("default");
    b->uid = tlr_strdup(name);
    b->selector = tlr_malloc(sizeof(*b->selector));
    tailor__v1__label_selector__init(b->selector);
    b->selector->match_labels = tlr_malloc(sizeof(*b->selector->match_labels));
    b->selector->match_labels[0] = label("app", app);
    b->selector->n_match_labels = 1;
    b->disruptions_allowed = allowed;
    return b;
}

/* "name=verdict[/tN][/gG][/pdb]" for every item, space-separated. */
static void plan_text(const tlr_drain_plan *p, tlr_buf *b)
{
    for (size_t i = 0; i < p->n; i++) {
        const tlr_drain_item *it = &p->items[i];
        tlr_buf_printf(b, "%s%s=%s", i ? " " : "", it->pod->name, tlr_drain_verdict_name(it->verdict));
        if (it->verdict == TLR_DRAIN_FORCE_DELETE)
            tlr_buf_printf(b, "/g%lld", (long long)it->grace_s);
        if (it->verdict == TLR_DRAIN_WAIT_BACKOFF)
            tlr_buf_printf(b, "/r+%lld", (long long)(it->retry_at_ms - NOW));
        if (it->pdb)
            tlr_buf_printf(b, "/%s%s%s", it->pdb, it->pdb_blocks ? "!" : "",
                           it->npdbs > 1 ? "+" : "");
    }
    tlr_buf_printf(b, " | tier=%d waiting=%zu done=%d", p->tier, p->waiting, p->done);
}

/* ---- decide: the table ------------------------------------------------- */

typedef struct dcase {
    const char *name;
    pspec pods[6];
    int64_t deadline_in_ms;   /* 0 = no deadline */
    const char *refused;      /* pod refused once, just now */
    bool pdbs;                /* PDBs: web (0 allowed), api (1 allowed), api2 (selects api too) */
    const char *want;
} dcase;

static const dcase dcases[] = {
    { "tiers: non-critical first, then DaemonSet, then critical",
      { { "a" }, { "ds", 'd' }, { "crit", .critical = true }, { "critds", 'd', true } }, 0, NULL,
      false, "a=evict ds=wait-tier crit=wait-tier critds=wait-tier | tier=0 waiting=4 done=0" },
    { "DaemonSet pods go once the ordinary pods are gone",
      { { "ds", 'd' }, { "crit", .critical = true } }, 0, NULL, false,
      "ds=evict crit=wait-tier | tier=1 waiting=2 done=0" },
    { "critical DaemonSet pods go last",
      { { "critds", 'd', true }, { "crit", .critical = true } }, 0, NULL, false,
      "critds=wait-tier crit=evict | tier=2 waiting=2 done=0" },
    { "terminal, mirror and tolerating pods are not waited for",
      { { "done", .phase = "Succeeded" }, { "failed", .phase = "Failed" }, { "static", 'n' },
        { "stay", .tolerates = true } }, 0, NULL, false,
      "done=skip-terminal failed=skip-terminal static=skip-mirror stay=skip-tolerates | tier=-1 "
      "waiting=0 done=1" },
    { "an empty node is drained", { { NULL } }, 0, NULL, false, " | tier=-1 waiting=0 done=1" },
    { "do-not-disrupt true is waited for, never evicted",
      { { "keep", .dnd = "true" }, { "b" }, { "ds", 'd' } }, 0, NULL, false,
      "keep=wait-do-not-disrupt b=evict ds=wait-tier | tier=0 waiting=3 done=0" },
    { "do-not-disrupt duration: still running vs elapsed vs invalid",
      { { "young", .dnd = "30m", .age_ms = 10 * MIN }, { "old", .dnd = "30m", .age_ms = 40 * MIN },
        { "bad", .dnd = "forever" } }, 0, NULL, false,
      "young=wait-do-not-disrupt old=evict bad=evict | tier=0 waiting=3 done=0" },
    { "deadline: a pod whose grace runs past it is deleted, in every tier",
      { { "slow", .tgp_s = 30 }, { "quick", .tgp_s = 10 }, { "critslow", .critical = true, .tgp_s = 60 },
        { "dnd", .dnd = "true", .tgp_s = 45 } }, 20000, NULL, false,
      "slow=force-delete/g20 quick=evict critslow=force-delete/g20 dnd=force-delete/g20 | tier=0 "
      "waiting=4 done=0" },
    { "deadline already passed: grace clamps to 1 s",
      { { "late", .tgp_s = 5 } }, -5000, NULL, false,
      "late=force-delete/g1 | tier=-1 waiting=1 done=0" },
    { "terminating pods are waited for and hold later tiers; stuck ones are not",
      { { "going", .deleted_ago_ms = 10000 }, { "stuck", .deleted_ago_ms = 2 * MIN }, { "ds", 'd' } },
      0, NULL, false, "going=wait-terminating stuck=skip-stuck ds=wait-tier | tier=0 waiting=2 done=0" },
    { "a refused pod backs off; the others are evicted",
      { { "web-1", .app = "web" }, { "b" } }, 0, "web-1", true,
      "web-1=wait-backoff/r+100/web! b=evict | tier=0 waiting=2 done=0" },
    { "the PDB selecting a pod is named, and two PDBs are noticed",
      { { "web-1", .app = "web" }, { "api-1", .app = "api" } }, 0, NULL, true,
      "web-1=evict/web! api-1=evict/api+ | tier=0 waiting=2 done=0" },
};

static void test_decide_table(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t c = 0; c < sizeof(dcases) / sizeof(dcases[0]); c++) {
        const dcase *dc = &dcases[c];
        Tailor__V1__Pod *pods[6];
        size_t n = 0;
        for (; n < 6 && dc->pods[n].name; n++)
            pods[n] = mkpod(&dc->pods[n]);
        Tailor__V1__PodDisruptionBudget *pdbs[3] = { mkpdb("web", "web", 0), mkpdb("api", "api", 1),
                                                     mkpdb("api2", "api", 1) };
        tlr_drain_state *st;
        tlr_drain_state_create(&st);
        if (dc->refused) {
            char uid[64];
            snprintf(uid, sizeof(uid), "uid-%s", dc->refused);
            tlr_drain_state_refused(st, uid, NOW, 100, 10000);
        }
        tlr_drain_opts o = { .now_ms = NOW, .deadline_ms = dc->deadline_in_ms ? NOW + dc->deadline_in_ms : 0 };
        tlr_drain_plan plan;
        tlr_drain_decide((const Tailor__V1__Pod *const *)pods, n,
                         (const Tailor__V1__PodDisruptionBudget *const *)pdbs, dc->pdbs ? 3 : 0, st,
                         &o, &plan);
        tlr_buf b;
        tlr_buf_init(&b, 4096);
        plan_text(&plan, &b);
        if (strcmp(tlr_buf_str(&b), dc->want)) {
            print_message("case \"%s\"\n   got: %s\n  want: %s\n", dc->name, tlr_buf_str(&b), dc->want);
            failed++;
        }
        tlr_buf_free(&b);
        tlr_drain_plan_clear(&plan);
        tlr_drain_state_free(st);
        for (size_t i = 0; i < n; i++)
            tlr_kubeobj_free(pods[i]);
        for (int i = 0; i < 3; i++)
            tlr_kubeobj_free(pdbs[i]);
    }
    assert_int_equal(failed, 0);
}

static void test_backoff_doubles_to_cap(void **state)
{
    (void)state;
    tlr_drain_state *st;
    tlr_drain_state_create(&st);
    int64_t want[] = { 100, 200, 400, 800, 1000, 1000 };
    for (int i = 0; i < 6; i++) {
        int64_t at = tlr_drain_state_refused(st, "u", NOW, 100, 1000);
        assert_int_equal(at - NOW, want[i]);
    }
    assert_int_equal(tlr_drain_state_refusals(st, "u"), 6);
    const char *keep[] = { "other" };
    tlr_drain_state_keep(st, keep, 1);
    assert_int_equal(tlr_drain_state_refusals(st, "u"), 0);   /* gone pods are forgotten */
    tlr_drain_state_free(st);
}

/* ---- the pass against a recording fake ---------------------------------- */

typedef struct fake {
    Tailor__V1__Pod *pods[8];
    size_t npods;
    Tailor__V1__PodDisruptionBudget *pdbs[2];
    size_t npdbs;
    const char *refuse_app;   /* evictions of pods with this app label get 429 */
    const char *hold;         /* guard holds this pod */
    int list_rc;
    tlr_buf calls;
} fake;

static Tailor__V1__Pod *copy_pod(const Tailor__V1__Pod *p)
{
    size_t len = tailor__v1__pod__get_packed_size(p);
    uint8_t *buf = tlr_malloc(len + 1);
    tailor__v1__pod__pack(p, buf);
    Tailor__V1__Pod *c = tailor__v1__pod__unpack(NULL, len, buf);
    free(buf);
    return c;
}

static Tailor__V1__PodDisruptionBudget *copy_pdb(const Tailor__V1__PodDisruptionBudget *p)
{
    size_t len = tailor__v1__pod_disruption_budget__get_packed_size(p);
    uint8_t *buf = tlr_malloc(len + 1);
    tailor__v1__pod_disruption_budget__pack(p, buf);
    Tailor__V1__PodDisruptionBudget *c = tailor__v1__pod_disruption_budget__unpack(NULL, len, buf);
    free(buf);
    return c;
}

static int f_list_pods(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n)
{
    fake *f = arg;
    tlr_buf_printf(&f->calls, "list %s; ", node);
    if (f->list_rc)
        return f->list_rc;
    *pods = tlr_calloc(f->npods + 1, sizeof(**pods));
    for (size_t i = 0; i < f->npods; i++)
        (*pods)[i] = copy_pod(f->pods[i]);
    *n = f->npods;
    return TLR_OK;
}

static int f_list_pdbs(void *arg, Tailor__V1__PodDisruptionBudget ***pdbs, size_t *n)
{
    fake *f = arg;
    *pdbs = tlr_calloc(f->npdbs + 1, sizeof(**pdbs));
    for (size_t i = 0; i < f->npdbs; i++)
        (*pdbs)[i] = copy_pdb(f->pdbs[i]);
    *n = f->npdbs;
    return TLR_OK;
}

static void drop(fake *f, const char *name)
{
    for (size_t i = 0; i < f->npods; i++)
        if (!strcmp(f->pods[i]->name, name)) {
            tlr_kubeobj_free(f->pods[i]);
            f->pods[i] = f->pods[--f->npods];
            return;
        }
}

static int f_evict(void *arg, const Tailor__V1__Pod *pod, char *msg, size_t len)
{
    fake *f = arg;
    tlr_buf_printf(&f->calls, "evict %s; ", pod->name);
    for (size_t i = 0; i < pod->n_labels; i++)
        if (f->refuse_app && !strcmp(pod->labels[i]->value, f->refuse_app)) {
            snprintf(msg, len, "Cannot evict pod as it would violate the pod's disruption budget.");
            return TLR_E_THROTTLED;
        }
    drop(f, pod->name);
    return TLR_OK;
}

static int f_delete(void *arg, const Tailor__V1__Pod *pod, int64_t grace_s, char *msg, size_t len)
{
    fake *f = arg;
    (void)msg, (void)len;
    tlr_buf_printf(&f->calls, "delete %s grace=%lld; ", pod->name, (long long)grace_s);
    drop(f, pod->name);
    return TLR_OK;
}

static int f_guard(void *arg, const Tailor__V1__Pod *pod, char *why, size_t len)
{
    fake *f = arg;
    if (f->hold && !strcmp(pod->name, f->hold)) {
        snprintf(why, len, "its replacement is not Ready yet");
        return TLR_E_BUSY;
    }
    return TLR_OK;
}

static tlr_drain_ops fake_ops(fake *f)
{
    return (tlr_drain_ops){ f_list_pods, f_list_pdbs, f_evict, f_delete, f, f_guard, f };
}

static void fake_add(fake *f, const pspec *s)
{
    f->pods[f->npods++] = mkpod(s);
}

static void fake_clear(fake *f)
{
    for (size_t i = 0; i < f->npods; i++)
        tlr_kubeobj_free(f->pods[i]);
    for (size_t i = 0; i < f->npdbs; i++)
        tlr_kubeobj_free(f->pdbs[i]);
    tlr_buf_free(&f->calls);
}

static void assert_calls(fake *f, const char *want)
{
    if (strcmp(tlr_buf_str(&f->calls), want))
        fail_msg("calls\n   got: %s\n  want: %s", tlr_buf_str(&f->calls), want);
    tlr_buf_reset(&f->calls);
}

static void test_pass_pdb_blocks_then_backoff(void **state)
{
    (void)state;
    fake f = { 0 };
    tlr_buf_init(&f.calls, 4096);
    fake_add(&f, &(pspec){ "web-1", .app = "web" });
    fake_add(&f, &(pspec){ "b" });
    fake_add(&f, &(pspec){ "ds", 'd' });
    f.pdbs[f.npdbs++] = mkpdb("web-pdb", "web", 0);
    f.refuse_app = "web";
    tlr_drain_ops ops = fake_ops(&f);
    tlr_drain_state *st;
    tlr_drain_state_create(&st);
    tlr_drain_report r;

    /* pass 1: b is evicted, web-1 refused and named with its PDB; ds waits */
    int rc = tlr_drain_pass(&ops, "n1", st, &(tlr_drain_opts){ .now_ms = NOW }, &r);
    assert_int_equal(rc, TLR_OK);
    assert_calls(&f, "list n1; evict web-1; evict b; ");
    assert_int_equal(r.evicted, 1);
    assert_int_equal(r.refused, 1);
    assert_false(r.done);
    assert_int_equal(r.nblockers, 1);
    assert_int_equal(r.blockers[0].kind, TLR_DRAIN_BLOCK_PDB);
    assert_string_equal(r.blockers[0].object, "default/web-pdb");
    assert_non_null(strstr(r.blockers[0].message, "pod default/web-1"));
    assert_non_null(strstr(r.blockers[0].message, "PodDisruptionBudget default/web-pdb"));
    tlr_drain_report_clear(&r);

    /* pass 2, 50 ms later: web-1 is in backoff (no call), still reported; ds still waits */
    rc = tlr_drain_pass(&ops, "n1", st, &(tlr_drain_opts){ .now_ms = NOW + 50 }, &r);
    assert_calls(&f, "list n1; ");
    assert_int_equal(r.nblockers, 1);
    assert_string_equal(r.blockers[0].object, "default/web-pdb");
    assert_int_equal(r.waiting, 2);
    tlr_drain_report_clear(&r);

    /* pass 3, after the backoff: tried again, refused again (backoff doubles) */
    rc = tlr_drain_pass(&ops, "n1", st, &(tlr_drain_opts){ .now_ms = NOW + 150 }, &r);
    assert_calls(&f, "list n1; evict web-1; ");
    assert_int_equal(tlr_drain_state_refusals(st, "uid-web-1"), 2);
    tlr_drain_report_clear(&r);

    /* the PDB relents: web-1 goes, then ds (next tier), then drained */
    f.refuse_app = NULL;
    rc = tlr_drain_pass(&ops, "n1", st, &(tlr_drain_opts){ .now_ms = NOW + 400 }, &r);
    assert_calls(&f, "list n1; evict web-1; ");
    tlr_drain_report_clear(&r);
    rc = tlr_drain_pass(&ops, "n1", st, &(tlr_drain_opts){ .now_ms = NOW + 500 }, &r);
    assert_calls(&f, "list n1; evict ds; ");
    assert_int_equal(r.tier, 1);
    tlr_drain_report_clear(&r);
    rc = tlr_drain_pass(&ops, "n1", st, &(tlr_drain_opts){ .now_ms = NOW + 600 }, &r);
    assert_calls(&f, "list n1; ");
    assert_true(r.done);
    assert_int_equal(r.nblockers, 0);
    tlr_drain_report_clear(&r);
    tlr_drain_state_free(st);
    fake_clear(&f);
}

static void test_pass_deadline_forces_past_pdb_and_dnd(void **state)
{
    (void)state;
    fake f = { 0 };
    tlr_buf_init(&f.calls, 4096);
    fake_add(&f, &(pspec){ "web-1", .app = "web", .tgp_s = 30 });
    fake_add(&f, &(pspec){ "keep", .dnd = "true", .tgp_s = 30 });
    f.pdbs[f.npdbs++] = mkpdb("web-pdb", "web", 0);
    f.refuse_app = "web";
    tlr_drain_ops ops = fake_ops(&f);
    tlr_drain_report r;
    /* 60 s before the deadline: graceful; web-1 refused, keep held by its annotation */
    tlr_drain_pass(&ops, "n1", NULL, &(tlr_drain_opts){ .now_ms = NOW, .deadline_ms = NOW + 60000 }, &r);
    assert_calls(&f, "list n1; evict web-1; ");
    assert_int_equal(r.nblockers, 2);
    assert_int_equal(r.blockers[1].kind, TLR_DRAIN_BLOCK_DO_NOT_DISRUPT);
    assert_non_null(strstr(r.blockers[1].message, "karpenter.sh/do-not-disrupt=true"));
    tlr_drain_report_clear(&r);
    /* 25 s before: each pod's 30 s grace would run past it -> deleted with 25 s */
    tlr_drain_pass(&ops, "n1", NULL, &(tlr_drain_opts){ .now_ms = NOW + 35000, .deadline_ms = NOW + 60000 },
                   &r);
    assert_calls(&f, "list n1; delete web-1 grace=25; delete keep grace=25; ");
    assert_int_equal(r.deleted, 2);
    tlr_drain_report_clear(&r);
    fake_clear(&f);
}

static void test_pass_guard_holds_and_list_error(void **state)
{
    (void)state;
    fake f = { 0 };
    tlr_buf_init(&f.calls, 4096);
    fake_add(&f, &(pspec){ "single" });
    fake_add(&f, &(pspec){ "other" });
    f.hold = "single";
    tlr_drain_ops ops = fake_ops(&f);
    tlr_drain_report r;
    tlr_drain_pass(&ops, "n1", NULL, &(tlr_drain_opts){ .now_ms = NOW }, &r);
    assert_calls(&f, "list n1; evict other; ");
    assert_int_equal(r.nblockers, 1);
    assert_int_equal(r.blockers[0].kind, TLR_DRAIN_BLOCK_GUARD);
    char sum[512];
    tlr_drain_report_summary(&r, 3, sum, sizeof(sum));
    assert_string_equal(sum, "pod default/single waits: its replacement is not Ready yet");
    tlr_drain_report_clear(&r);
    f.list_rc = TLR_E_UNAVAILABLE;
    assert_int_equal(tlr_drain_pass(&ops, "n1", NULL, &(tlr_drain_opts){ .now_ms = NOW }, &r),
                     TLR_E_UNAVAILABLE);
    assert_calls(&f, "list n1; ");
    fake_clear(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide_table),
        cmocka_unit_test(test_backoff_doubles_to_cap),
        cmocka_unit_test(test_pass_pdb_blocks_then_backoff),
        cmocka_unit_test(test_pass_deadline_forces_past_pdb_and_dnd),
        cmocka_unit_test(test_pass_guard_holds_and_list_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
