/* kubesem_test.c - the placement rules of tlr_kubesem.h, table-driven:
 * each case is a requirement, selector or toleration against a label set
 * or taint, with the answer Kubernetes / Karpenter give, and providerIDs
 * with the instance id they name; a failing case prints got and want. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tlr_kubesem.h"

#define IN     TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
#define NOT_IN TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN
#define EXISTS TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS
#define DNE    TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST
#define GT     TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT
#define LT     TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT
#define GTE    TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GTE
#define LTE    TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LTE

#define NOSCHED TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE
#define NOEXEC  TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE
#define PREFER  TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE
#define ANY     TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED
#define T_EXISTS TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS
#define T_EQUAL  TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL

static bool check(const char *name, bool got, bool want)
{
    if (got != want)
        print_error("%s: got %s, want %s\n", name, got ? "true" : "false",
                    want ? "true" : "false");
    return got == want;
}

/* ---- node requirements ---------------------------------------------- */

static void test_requirement_holds(void **state)
{
    (void)state;
    static const struct {
        const char *name, *key;
        int op;
        const char *v0, *v1;   /* values (NULL = fewer) */
        bool lax, want;
    } cases[] = {
        {"In present listed", "zone", IN, "a", "b", false, true},
        {"In present unlisted", "zone", IN, "c", NULL, false, false},
        {"In absent", "missing", IN, "a", NULL, false, false},
        {"In absent lax", "missing", IN, "a", NULL, true, true},
        {"NotIn present listed", "zone", NOT_IN, "a", NULL, false, false},
        {"NotIn present unlisted", "zone", NOT_IN, "b", NULL, false, true},
        {"NotIn absent (Karpenter: holds)", "missing", NOT_IN, "a", NULL, false, true},
        {"Exists present", "zone", EXISTS, NULL, NULL, false, true},
        {"Exists absent", "missing", EXISTS, NULL, NULL, false, false},
        {"DoesNotExist absent", "missing", DNE, NULL, NULL, false, true},
        {"DoesNotExist present", "zone", DNE, NULL, NULL, false, false},
        {"DoesNotExist present lax", "zone", DNE, NULL, NULL, true, false},
        {"Gt greater", "cpu", GT, "4", NULL, false, true},
        {"Gt equal", "cpu", GT, "8", NULL, false, false},
        {"Gte equal", "cpu", GTE, "8", NULL, false, true},
        {"Lt smaller", "cpu", LT, "16", NULL, false, true},
        {"Lt equal", "cpu", LT, "8", NULL, false, false},
        {"Lte equal", "cpu", LTE, "8", NULL, false, true},
        {"Gt absent", "missing", GT, "1", NULL, false, false},
        {"Gt absent lax", "missing", GT, "1", NULL, true, true},
        {"Gt label not an integer", "zone", GT, "1", NULL, false, false},
        {"Gt value not an integer", "cpu", GT, "4x", NULL, false, false},
        {"Gt two values", "cpu", GT, "4", "5", false, false},
        {"Gt no value", "cpu", GT, NULL, NULL, false, false},
        {"Lt label overflows int64", "huge", LT, "1", NULL, false, false},
        {"unknown operator", "zone", 99, "a", NULL, false, false},
    };
    tlr_ks_labels l = {0};
    tlr_ks_labels_set(&l, "zone", "a");
    tlr_ks_labels_set(&l, "cpu", "8");
    tlr_ks_labels_set(&l, "huge", "-99999999999999999999");
    bool ok = true;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *vals[2] = {(char *)cases[i].v0, (char *)cases[i].v1};
        Tailor__V1__NodeSelectorRequirement r = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT;
        r.key = (char *)cases[i].key;
        r.operator_ = cases[i].op;
        r.values = vals;
        r.n_values = cases[i].v1 ? 2 : cases[i].v0 ? 1 : 0;
        ok &= check(cases[i].name, tlr_ks_requirement_holds(&r, &l, cases[i].lax), cases[i].want);
    }
    tlr_ks_labels_free(&l);
    assert_true(ok);
}

static void test_label_set(void **state)
{
    (void)state;
    tlr_ks_labels l = {0};
    tlr_ks_labels_set(&l, "a", "1");
    tlr_ks_labels_set(&l, "b", "2");
    tlr_ks_labels_set(&l, "a", "3");   /* replaces */
    assert_int_equal(l.n, 2);
    assert_string_equal(tlr_ks_labels_get(&l, "a"), "3");
    assert_null(tlr_ks_labels_get(&l, "c"));
    tlr_ks_labels_reset(&l);
    assert_null(tlr_ks_labels_get(&l, "a"));
    tlr_ks_labels_free(&l);
    assert_null(l.v);
}

/* A pool pinning arch, a type with its own labels, an offering in a zone:
 * the node a launcher would buy carries all of them, later ones winning. */
static void test_labels_for_offering(void **state)
{
    (void)state;
    char *amd[] = {"amd64"}, *two[] = {"a", "b"}, *gen[] = {"6"}, *lin[] = {"linux"};
    Tailor__V1__NodeSelectorRequirement pr1 = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT,
                                        pr2 = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT,
                                        tr = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT;
    pr1.key = "team"; pr1.operator_ = IN; pr1.values = amd; pr1.n_values = 1;
    pr2.key = "multi"; pr2.operator_ = IN; pr2.values = two; pr2.n_values = 2;
    tr.key = "karpenter.k8s.aws/instance-generation"; tr.operator_ = IN;
    tr.values = gen; tr.n_values = 1;
    Tailor__V1__NodeSelectorRequirement *preqs[] = {&pr1, &pr2}, *treqs[] = {&tr};
    Tailor__V1__Label tl = TAILOR__V1__LABEL__INIT;
    tl.key = "team"; tl.value = "web";
    Tailor__V1__Label *tls[] = {&tl};
    Tailor__V1__NodePool pool = TAILOR__V1__NODE_POOL__INIT;
    pool.name = "default";
    pool.labels = tls; pool.n_labels = 1;
    pool.requirements = preqs; pool.n_requirements = 2;
    Tailor__V1__InstanceType t = TAILOR__V1__INSTANCE_TYPE__INIT;
    t.name = "m6i.large"; t.arch = "amd64";
    t.operating_systems = lin; t.n_operating_systems = 1;
    t.requirements = treqs; t.n_requirements = 1;
    Tailor__V1__Offering o = TAILOR__V1__OFFERING__INIT;
    o.zone = "us-east-1a"; o.zone_id = "use1-az1";
    o.capacity_type = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT;

    tlr_ks_labels l = {0};
    tlr_ks_labels_set(&l, "stale", "x");   /* reset drops it */
    tlr_ks_labels_for_offering(&l, &pool, &t, &o);
    static const struct { const char *key, *want; } want[] = {
        {"team", "amd64"},   /* the pool's In requirement replaced its template label */
        {"multi", NULL},     /* two values pin nothing */
        {"stale", NULL},
        {"karpenter.sh/nodepool", "default"},
        {"karpenter.k8s.aws/instance-generation", "6"},
        {"node.kubernetes.io/instance-type", "m6i.large"},
        {"kubernetes.io/arch", "amd64"},
        {"kubernetes.io/os", "linux"},
        {"topology.kubernetes.io/zone", "us-east-1a"},
        {"topology.k8s.aws/zone-id", "use1-az1"},
        {"karpenter.sh/capacity-type", "spot"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *got = tlr_ks_labels_get(&l, want[i].key);
        if (!want[i].want) {
            assert_null(got);
            continue;
        }
        assert_non_null(got);
        assert_string_equal(got, want[i].want);
    }
    assert_int_equal(l.n, 9);

    /* no offering, no pool: only the type's labels */
    tlr_ks_labels_for_offering(&l, NULL, &t, NULL);
    assert_null(tlr_ks_labels_get(&l, "topology.kubernetes.io/zone"));
    assert_null(tlr_ks_labels_get(&l, "karpenter.sh/nodepool"));
    assert_string_equal(tlr_ks_labels_get(&l, "node.kubernetes.io/instance-type"), "m6i.large");
    tlr_ks_labels_free(&l);

    assert_string_equal(tlr_ks_capacity_type_name(TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND),
                        "on-demand");
    assert_string_equal(tlr_ks_capacity_type_name(TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_RESERVED),
                        "reserved");
    assert_string_equal(tlr_ks_capacity_type_name(TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_UNSPECIFIED),
                        "");
}

static void test_pod_node_affinity(void **state)
{
    (void)state;
    char *za[] = {"a"}, *zb[] = {"b"};
    Tailor__V1__NodeSelectorRequirement ra = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT,
                                        rb = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT;
    ra.key = "zone"; ra.operator_ = IN; ra.values = za; ra.n_values = 1;
    rb.key = "zone"; rb.operator_ = IN; rb.values = zb; rb.n_values = 1;
    Tailor__V1__NodeSelectorRequirement *ta[] = {&ra}, *tb[] = {&rb};
    Tailor__V1__NodeSelectorTerm term_a = TAILOR__V1__NODE_SELECTOR_TERM__INIT,
                                 term_b = TAILOR__V1__NODE_SELECTOR_TERM__INIT,
                                 empty = TAILOR__V1__NODE_SELECTOR_TERM__INIT;
    term_a.match_expressions = ta; term_a.n_match_expressions = 1;
    term_b.match_expressions = tb; term_b.n_match_expressions = 1;
    Tailor__V1__Label sel = TAILOR__V1__LABEL__INIT;
    sel.key = "disk"; sel.value = "ssd";
    Tailor__V1__Label *sels[] = {&sel};

    tlr_ks_labels on_a = {0}, on_b = {0}, bare = {0};
    tlr_ks_labels_set(&on_a, "zone", "a");
    tlr_ks_labels_set(&on_a, "disk", "ssd");
    tlr_ks_labels_set(&on_b, "zone", "b");

    Tailor__V1__Pod p = TAILOR__V1__POD__INIT;
    assert_true(tlr_ks_pod_node_affinity_holds(&p, &bare, false));   /* no constraint */

    Tailor__V1__NodeSelectorTerm *ab[] = {&term_b, &term_a};
    p.required_node_affinity = ab; p.n_required_node_affinity = 2;   /* ORed */
    assert_true(tlr_ks_pod_node_affinity_holds(&p, &on_a, false));
    assert_true(tlr_ks_pod_node_affinity_holds(&p, &on_b, false));
    assert_false(tlr_ks_pod_node_affinity_holds(&p, &bare, false));
    assert_true(tlr_ks_pod_node_affinity_holds(&p, &bare, true));

    Tailor__V1__NodeSelectorTerm *only_empty[] = {&empty};
    p.required_node_affinity = only_empty; p.n_required_node_affinity = 1;
    assert_false(tlr_ks_pod_node_affinity_holds(&p, &on_a, false));   /* empty term: nothing */

    p.required_node_affinity = NULL; p.n_required_node_affinity = 0;
    p.node_selector = sels; p.n_node_selector = 1;
    assert_true(tlr_ks_pod_node_affinity_holds(&p, &on_a, false));
    assert_false(tlr_ks_pod_node_affinity_holds(&p, &on_b, false));
    assert_true(tlr_ks_pod_node_affinity_holds(&p, &on_b, true));   /* absent, lax */

    p.node_selector = NULL; p.n_node_selector = 0;
    p.volume_requirements = tb; p.n_volume_requirements = 1;
    assert_false(tlr_ks_pod_node_affinity_holds(&p, &on_a, false));
    assert_true(tlr_ks_pod_node_affinity_holds(&p, &on_b, false));

    tlr_ks_labels_free(&on_a);
    tlr_ks_labels_free(&on_b);
    tlr_ks_labels_free(&bare);
}

/* Karpenter's provisioner Validate: which pods it ignores, and which of
 * those it ignores without an Event. */
static void test_pod_ignored(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int where;                 /* 0 nodeSelector, 1 first required term,
                                    * 2 second required term, 3 preferred (heaviest) */
        const char *key;
        int op;
        const char *v0, *v1;
        bool fields;               /* the required term has matchFields */
        bool ignored, quiet;
    } cases[] = {
        { "plain selector", 0, "disk", IN, "ssd", NULL, false, false, false },
        { "well-known selector", 0, "karpenter.k8s.aws/instance-family", IN, "m5", NULL, false, false, false },
        { "nodepool selector", 0, "karpenter.sh/nodepool", IN, "default", NULL, false, false, false },
        { "capacity-type", 1, "karpenter.sh/capacity-type", IN, "spot", NULL, false, false, false },
        { "kubernetes.io domain", 1, "kubernetes.io/test", IN, "x", NULL, false, false, false },
        { "hostname selector", 0, "kubernetes.io/hostname", IN, "ip-10-0-0-1", NULL, false, true, false },
        { "hostname affinity", 1, "kubernetes.io/hostname", IN, "ip-10-0-0-1", NULL, false, true, false },
        { "karpenter.sh domain", 1, "karpenter.sh/test", IN, "x", NULL, false, true, false },
        { "unknown aws label", 2, "karpenter.k8s.aws/instance-foo", EXISTS, NULL, NULL, false, true, false },
        { "matchFields", 1, "disk", IN, "ssd", NULL, true, true, false },
        { "In without values", 1, "disk", IN, NULL, NULL, false, true, false },
        { "Gt two values", 1, "karpenter.k8s.aws/instance-cpu", GT, "1", "2", false, true, false },
        { "Gt negative", 1, "karpenter.k8s.aws/instance-cpu", GT, "-1", NULL, false, true, false },
        { "Lt integer", 1, "karpenter.k8s.aws/instance-cpu", LT, "8", NULL, false, false, false },
        { "avoids Karpenter", 1, "karpenter.sh/nodepool", DNE, NULL, NULL, false, true, true },
        { "prefers non-Karpenter", 3, "karpenter.sh/nodepool", DNE, NULL, NULL, false, true, true },
        { "avoids in a later term", 2, "karpenter.sh/nodepool", DNE, NULL, NULL, false, false, false },
        { "nodepool Exists", 1, "karpenter.sh/nodepool", EXISTS, NULL, NULL, false, false, false },
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *vals[2] = { (char *)cases[i].v0, (char *)cases[i].v1 };
        Tailor__V1__NodeSelectorRequirement r = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT,
                                            other = TAILOR__V1__NODE_SELECTOR_REQUIREMENT__INIT;
        r.key = (char *)cases[i].key;
        r.operator_ = cases[i].op;
        r.values = vals;
        r.n_values = cases[i].v1 ? 2 : cases[i].v0 ? 1 : 0;
        other.key = "disk";
        other.operator_ = EXISTS;
        Tailor__V1__NodeSelectorRequirement *rs[] = { &r }, *os[] = { &other }, *fs[] = { &other };
        Tailor__V1__NodeSelectorTerm t1 = TAILOR__V1__NODE_SELECTOR_TERM__INIT,
                                     t2 = TAILOR__V1__NODE_SELECTOR_TERM__INIT,
                                     light = TAILOR__V1__NODE_SELECTOR_TERM__INIT;
        Tailor__V1__PreferredSchedulingTerm p1 = TAILOR__V1__PREFERRED_SCHEDULING_TERM__INIT,
                                            p2 = TAILOR__V1__PREFERRED_SCHEDULING_TERM__INIT;
        Tailor__V1__Label sel = TAILOR__V1__LABEL__INIT;
        Tailor__V1__Label *sels[] = { &sel };
        Tailor__V1__NodeSelectorTerm *terms[] = { &t1, &t2 };
        Tailor__V1__PreferredSchedulingTerm *prefs[] = { &p1, &p2 };
        Tailor__V1__Pod p = TAILOR__V1__POD__INIT;
        t1.match_expressions = os;
        t1.n_match_expressions = 1;
        t2.match_expressions = os;
        t2.n_match_expressions = 1;
        if (cases[i].where == 0) {
            sel.key = (char *)cases[i].key;
            sel.value = (char *)cases[i].v0;
            p.node_selector = sels;
            p.n_node_selector = 1;
        } else if (cases[i].where <= 2) {
            (cases[i].where == 1 ? &t1 : &t2)->match_expressions = rs;
            p.required_node_affinity = terms;
            p.n_required_node_affinity = 2;
        } else {
            /* a lighter term first: the heaviest one counts */
            light.match_expressions = os;
            light.n_match_expressions = 1;
            p1.weight = 10;
            p1.preference = &light;
            p2.weight = 50;
            t2.match_expressions = rs;
            p2.preference = &t2;
            p.preferred_node_affinity = prefs;
            p.n_preferred_node_affinity = 2;
        }
        if (cases[i].fields) {
            t1.match_fields = fs;
            t1.n_match_fields = 1;
        }
        char buf[512];
        bool quiet = !cases[i].quiet;
        const char *why = tlr_ks_pod_ignored(&p, buf, sizeof(buf), &quiet);
        if ((why != NULL) != cases[i].ignored || quiet != cases[i].quiet ||
            (why && strncmp(why, "ignoring pod, ", 14) != 0)) {
            print_error("%s: got %s (quiet %d), want ignored %d quiet %d\n", cases[i].name,
                        why ? why : "not ignored", quiet, cases[i].ignored, cases[i].quiet);
            ok = false;
        }
        /* a DaemonSet pod is never ignored here */
        p.is_daemonset = true;
        if (tlr_ks_pod_ignored(&p, buf, sizeof(buf), &quiet)) {
            print_error("%s: a DaemonSet pod was ignored\n", cases[i].name);
            ok = false;
        }
    }
    assert_true(ok);
}

/* ---- tolerations ---------------------------------------------------- */

static void test_tolerations(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *tkey, *tval;
        int teff;
        const char *okey, *oval;
        int oop, oeff;
        bool want;
    } cases[] = {
        {"Equal key and value", "gpu", "true", NOSCHED, "gpu", "true", T_EQUAL, NOSCHED, true},
        {"Equal other value", "gpu", "true", NOSCHED, "gpu", "false", T_EQUAL, NOSCHED, false},
        {"Equal any effect", "gpu", "true", NOEXEC, "gpu", "true", T_EQUAL, ANY, true},
        {"effect differs", "gpu", "true", NOEXEC, "gpu", "true", T_EQUAL, NOSCHED, false},
        {"Exists key", "gpu", "x", NOSCHED, "gpu", "", T_EXISTS, ANY, true},
        {"Exists other key", "gpu", "x", NOSCHED, "tpu", "", T_EXISTS, ANY, false},
        {"Exists empty key: everything", "gpu", "x", NOEXEC, "", "", T_EXISTS, ANY, true},
        {"Exists empty key, effect differs", "gpu", "x", NOEXEC, "", "", T_EXISTS, NOSCHED, false},
        {"NULL strings read as empty", NULL, NULL, NOSCHED, NULL, NULL, T_EQUAL, ANY, true},
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__Taint t = TAILOR__V1__TAINT__INIT;
        t.key = (char *)cases[i].tkey;
        t.value = (char *)cases[i].tval;
        t.effect = cases[i].teff;
        Tailor__V1__Toleration o = TAILOR__V1__TOLERATION__INIT;
        o.key = (char *)cases[i].okey;
        o.value = (char *)cases[i].oval;
        o.operator_ = cases[i].oop;
        o.effect = cases[i].oeff;
        ok &= check(cases[i].name, tlr_ks_toleration_matches(&o, &t), cases[i].want);
    }
    assert_true(ok);

    /* A pod must tolerate every NoSchedule / NoExecute taint, never a
     * PreferNoSchedule one. */
    Tailor__V1__Taint t1 = TAILOR__V1__TAINT__INIT, t2 = TAILOR__V1__TAINT__INIT,
                      soft = TAILOR__V1__TAINT__INIT;
    t1.key = "gpu"; t1.effect = NOSCHED;
    t2.key = "spot"; t2.effect = NOEXEC;
    soft.key = "busy"; soft.effect = PREFER;
    Tailor__V1__Taint *both[] = {&t1, &t2, &soft}, *only_soft[] = {&soft};
    Tailor__V1__Toleration g = TAILOR__V1__TOLERATION__INIT;
    g.key = "gpu"; g.operator_ = T_EXISTS;
    Tailor__V1__Toleration *gs[] = {&g};
    Tailor__V1__Pod p = TAILOR__V1__POD__INIT;
    assert_true(tlr_ks_pod_tolerates(&p, only_soft, 1));
    assert_true(tlr_ks_pod_tolerates(&p, NULL, 0));
    assert_false(tlr_ks_pod_tolerates(&p, both, 3));
    p.tolerations = gs; p.n_tolerations = 1;
    assert_true(tlr_ks_pod_tolerates(&p, both, 1));
    assert_false(tlr_ks_pod_tolerates(&p, both, 3));   /* spot still untolerated */
}

/* ---- label selectors ------------------------------------------------ */

static void test_selector(void **state)
{
    (void)state;
    Tailor__V1__Label app = TAILOR__V1__LABEL__INIT, tier = TAILOR__V1__LABEL__INIT;
    app.key = "app"; app.value = "web";
    tier.key = "tier"; tier.value = "front";
    Tailor__V1__Label *labels[] = {&app, &tier};

    assert_false(tlr_ks_selector_matches(NULL, labels, 2));   /* nil: nothing */
    Tailor__V1__LabelSelector s = TAILOR__V1__LABEL_SELECTOR__INIT;
    assert_true(tlr_ks_selector_matches(&s, labels, 2));      /* empty: everything */
    assert_true(tlr_ks_selector_matches(&s, NULL, 0));

    static const struct {
        const char *name, *key;
        int op;
        const char *v0;
        bool want;
    } cases[] = {
        {"In listed", "app", IN, "web", true},
        {"In unlisted", "app", IN, "db", false},
        {"In absent", "zone", IN, "web", false},
        {"NotIn absent holds", "zone", NOT_IN, "web", true},
        {"NotIn listed", "app", NOT_IN, "web", false},
        {"Exists", "tier", EXISTS, NULL, true},
        {"Exists absent", "zone", EXISTS, NULL, false},
        {"DoesNotExist", "zone", DNE, NULL, true},
        {"DoesNotExist present", "app", DNE, NULL, false},
        {"Gt is no label selector operator", "app", GT, "1", false},
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *vals[] = {(char *)cases[i].v0};
        Tailor__V1__LabelSelectorRequirement r = TAILOR__V1__LABEL_SELECTOR_REQUIREMENT__INIT;
        r.key = (char *)cases[i].key;
        r.operator_ = cases[i].op;
        r.values = vals;
        r.n_values = cases[i].v0 ? 1 : 0;
        Tailor__V1__LabelSelectorRequirement *rs[] = {&r};
        Tailor__V1__LabelSelector x = TAILOR__V1__LABEL_SELECTOR__INIT;
        x.match_expressions = rs;
        x.n_match_expressions = 1;
        ok &= check(cases[i].name, tlr_ks_selector_matches(&x, labels, 2), cases[i].want);
    }
    assert_true(ok);

    Tailor__V1__Label want = TAILOR__V1__LABEL__INIT;
    want.key = "app"; want.value = "web";
    Tailor__V1__Label *ml[] = {&want};
    s.match_labels = ml; s.n_match_labels = 1;
    assert_true(tlr_ks_selector_matches(&s, labels, 2));
    want.value = "db";
    assert_false(tlr_ks_selector_matches(&s, labels, 2));
    assert_false(tlr_ks_selector_matches(&s, NULL, 0));
}

/* ---- provider IDs --------------------------------------------------- */

static void test_provider_id(void **state)
{
    (void)state;
    static const struct { const char *pid, *want; } cases[] = {
        {"aws:///us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0"},
        {"aws:///us-east-1a/i-1", "i-1"},
        {"aws:///i-1", "i-1"},                    /* no zone: still the last element */
        {"aws://", NULL},
        {"aws:///us-east-1a/", NULL},             /* nothing after the last '/' */
        {"aws:///us-east-1a/i-", NULL},
        {"aws:///us-east-1a/4f0cdb4bd5e1b0f3/fargate-ip-192-168-9-1.ec2.internal", NULL},
        {"aws:///us-east-1a/mi-0123", NULL},      /* not an EC2 instance */
        {"kind://docker/kind/kind-worker", NULL}, /* not AWS */
        {"i-0123", NULL},
        {"", NULL},
        {NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = tlr_provider_id_instance(cases[i].pid);
        if (!cases[i].want) {
            if (got)
                print_error("%s: got %s, want NULL\n", cases[i].pid ? cases[i].pid : "(null)", got);
            assert_null(got);
            continue;
        }
        assert_non_null(got);
        assert_string_equal(got, cases[i].want);
    }
    /* borrowed: points into the argument */
    const char *pid = "aws:///us-east-1b/i-9";
    assert_ptr_equal(tlr_provider_id_instance(pid), pid + strlen(pid) - 3);
    char buf[64];
    assert_string_equal(tlr_provider_id_format(buf, sizeof(buf), "us-east-1a", "i-0abc"),
                        "aws:///us-east-1a/i-0abc");
    assert_string_equal(tlr_provider_id_instance(buf), "i-0abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requirement_holds),
        cmocka_unit_test(test_label_set),
        cmocka_unit_test(test_labels_for_offering),
        cmocka_unit_test(test_pod_node_affinity),
        cmocka_unit_test(test_pod_ignored),
        cmocka_unit_test(test_tolerations),
        cmocka_unit_test(test_selector),
        cmocka_unit_test(test_provider_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
