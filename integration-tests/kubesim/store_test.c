/* store_test.c - the store: writes and their API errors, paging with
 * consistent snapshots, history and 410, finalizers, watch events under
 * concurrent writers. */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ks_store.h"
#include "tlr_err.h"
#include "tlr_json.h"

/* A patch literal and its length. */
#define P(lit) (lit), strlen(lit)

static ks_store *new_store(size_t history)
{
    ks_store *s = NULL;
    assert_int_equal(ks_store_create(&(ks_store_opts){ .history = history }, &s), TLR_OK);
    return s;
}

static int add_cm(ks_store *s, const char *ns, const char *name, const char *labels)
{
    char json[512];
    snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\",\"labels\":%s},\"data\":{}}",
             name, labels ? labels : "{}");
    return ks_store_create_text(s, KS_CONFIGMAP, ns, json, NULL, NULL);
}

typedef struct write_case {
    const char *name;
    ks_kind_id kind;
    const char *ns;
    const char *body;
    int want_rc, want_code;
} write_case;

static void test_create_errors(void **state)
{
    (void)state;
    ks_store *s = new_store(0);
    static const write_case cases[] = {
        { "ok", KS_CONFIGMAP, "default", "{\"metadata\":{\"name\":\"a\"}}", TLR_OK, 0 },
        { "exists", KS_CONFIGMAP, "default", "{\"metadata\":{\"name\":\"a\"}}", TLR_E_EXISTS, 409 },
        { "no namespace", KS_CONFIGMAP, "nope", "{\"metadata\":{\"name\":\"a\"}}", TLR_E_NOTFOUND, 404 },
        { "bad name", KS_CONFIGMAP, "default", "{\"metadata\":{\"name\":\"Bad_Name\"}}", TLR_E_INVAL, 422 },
        { "no name", KS_CONFIGMAP, "default", "{\"metadata\":{}}", TLR_E_INVAL, 422 },
        { "name not a string", KS_CONFIGMAP, "default", "{\"metadata\":{\"name\":1}}", TLR_E_PARSE, 400 },
        { "replicas string", KS_DEPLOYMENT, "default",
          "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":\"3\"}}", TLR_E_PARSE, 400 },
        { "wrong kind", KS_CONFIGMAP, "default",
          "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\"}}", TLR_E_PARSE, 400 },
        { "pod without containers", KS_POD, "default", "{\"metadata\":{\"name\":\"p\"}}", TLR_E_INVAL, 422 },
        { "namespace mismatch", KS_CONFIGMAP, "default",
          "{\"metadata\":{\"name\":\"c\",\"namespace\":\"kube-system\"}}", TLR_E_PARSE, 400 },
        /* Resources as kube-apiserver reads them. */
        { "cpu not a quantity", KS_POD, "default",
          "{\"metadata\":{\"name\":\"q1\"},\"spec\":{\"containers\":[{\"name\":\"c\","
          "\"resources\":{\"requests\":{\"cpu\":\"12abc\"}}}]}}", TLR_E_PARSE, 400 },
        { "negative cpu", KS_POD, "default",
          "{\"metadata\":{\"name\":\"q2\"},\"spec\":{\"containers\":[{\"name\":\"c\","
          "\"resources\":{\"requests\":{\"cpu\":\"-2\"}}}]}}", TLR_E_INVAL, 422 },
        { "negative init memory limit", KS_POD, "default",
          "{\"metadata\":{\"name\":\"q3\"},\"spec\":{\"containers\":[{\"name\":\"c\"}],"
          "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"memory\":\"-1Gi\"}}}]}}",
          TLR_E_INVAL, 422 },
        { "a number is a quantity", KS_POD, "default",
          "{\"metadata\":{\"name\":\"q4\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\","
          "\"resources\":{\"requests\":{\"cpu\":2,\"memory\":\"1Gi\"}}}]}}", TLR_OK, 0 },
        { "template with a negative request", KS_DEPLOYMENT, "default",
          "{\"metadata\":{\"name\":\"d2\"},\"spec\":{\"template\":{\"spec\":{\"containers\":"
          "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"-500m\"}}}]}}}}", TLR_E_INVAL, 422 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ks_status st = { 0 };
        int rc = ks_store_create_text(s, cases[i].kind, cases[i].ns, cases[i].body, NULL, &st);
        if (rc != cases[i].want_rc || (rc && st.code != cases[i].want_code))
            fail_msg("%s: got rc %d code %d (%s), want rc %d code %d", cases[i].name, rc, st.code,
                     st.message, cases[i].want_rc, cases[i].want_code);
    }
    ks_obj *o = NULL;
    assert_int_equal(ks_store_create_text(s, KS_CONFIGMAP, "default",
                                          "{\"metadata\":{\"generateName\":\"gen-\"}}", &o, NULL),
                     TLR_OK);
    assert_true(!strncmp(ks_obj_name(o), "gen-", 4) && strlen(ks_obj_name(o)) == 9);
    assert_true(strlen(ks_obj_uid(o)) == 36);
    ks_obj_unref(o);
    ks_store_free(s);
}

static void test_update_conflict_and_status(void **state)
{
    (void)state;
    ks_store *s = new_store(0);
    ks_obj *o = NULL;
    assert_int_equal(ks_store_create_text(s, KS_DEPLOYMENT, "default",
                                          "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":1},"
                                          "\"status\":{\"replicas\":0}}",
                                          &o, NULL),
                     TLR_OK);
    json_object *j = ks_obj_parse(o);
    uint64_t rv1 = ks_obj_rv(o);
    ks_obj_unref(o);
    /* a spec change bumps generation and keeps the stored status */
    json_object_object_add(tlr_json_obj(j, "spec"), "replicas", json_object_new_int(3));
    json_object_object_add(tlr_json_obj(j, "status"), "replicas", json_object_new_int(99));
    assert_int_equal(ks_store_update(s, KS_DEPLOYMENT, "default", "d", j, 0, &o, NULL), TLR_OK);
    json_object *got = ks_obj_parse(o);
    int64_t gen = 0, srep = -1;
    tlr_json_int(got, "metadata.generation", &gen);
    tlr_json_int(got, "status.replicas", &srep);
    assert_int_equal(gen, 2);
    assert_int_equal(srep, 0);
    assert_true(ks_obj_rv(o) > rv1);
    json_object_put(got);
    ks_obj_unref(o);
    /* the same body again carries the old resourceVersion: 409 */
    ks_status st;
    assert_int_equal(ks_store_update(s, KS_DEPLOYMENT, "default", "d", j, 0, NULL, &st),
                     TLR_E_CONFLICT);
    assert_int_equal(st.code, 409);
    /* status subresource changes only status */
    assert_int_equal(ks_store_patch(s, KS_DEPLOYMENT, "default", "d", KS_PATCH_MERGE,
                                    P("{\"spec\":{\"replicas\":7},\"status\":{\"replicas\":3}}"),
                                    KS_W_STATUS, &o, NULL),
                     TLR_OK);
    got = ks_obj_parse(o);
    int64_t rep = 0;
    tlr_json_int(got, "spec.replicas", &rep);
    tlr_json_int(got, "status.replicas", &srep);
    assert_int_equal(rep, 3);
    assert_int_equal(srep, 3);
    json_object_put(got);
    ks_obj_unref(o);
    json_object_put(j);
    ks_store_free(s);
}

static void test_finalizers(void **state)
{
    (void)state;
    ks_store *s = new_store(0);
    assert_int_equal(ks_store_create_text(s, KS_NODECLAIM, NULL,
                                          "{\"metadata\":{\"name\":\"nc\",\"finalizers\":[\"k\"]}}",
                                          NULL, NULL),
                     TLR_OK);
    ks_obj *o = NULL;
    assert_int_equal(ks_store_delete(s, KS_NODECLAIM, NULL, "nc", NULL, &o, NULL), TLR_OK);
    assert_true(ks_obj_deleting(o));
    ks_obj_unref(o);
    assert_int_equal(ks_store_count(s, KS_NODECLAIM), 1);
    assert_int_equal(ks_store_patch(s, KS_NODECLAIM, NULL, "nc", KS_PATCH_MERGE,
                                    P("{\"metadata\":{\"finalizers\":null}}"), 0, NULL, NULL),
                     TLR_OK);
    assert_int_equal(ks_store_count(s, KS_NODECLAIM), 0);
    ks_store_free(s);
}

static void test_paging_snapshot(void **state)
{
    (void)state;
    ks_store *s = new_store(1000);
    char name[32];
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof(name), "cm-%03d", i);
        assert_int_equal(add_cm(s, "default", name, i % 2 ? "{\"odd\":\"y\"}" : NULL), TLR_OK);
    }
    ks_list_opts o = { .ns = "default", .limit = 20 };
    ks_objlist page = { 0 };
    assert_int_equal(ks_store_list(s, KS_CONFIGMAP, &o, &page, NULL), TLR_OK);
    assert_int_equal(page.n, 20);
    assert_non_null(page.cont);
    /* changes after the first page do not show in the later pages */
    assert_int_equal(ks_store_delete(s, KS_CONFIGMAP, "default", "cm-030", NULL, NULL, NULL), TLR_OK);
    assert_int_equal(add_cm(s, "default", "cm-0255", NULL), TLR_OK);
    size_t total = page.n;
    bool saw_030 = false, saw_new = false;
    while (page.cont) {
        char *cont = strdup(page.cont);
        ks_objlist_free(&page);
        o.cont = cont;
        assert_int_equal(ks_store_list(s, KS_CONFIGMAP, &o, &page, NULL), TLR_OK);
        free(cont);
        for (size_t i = 0; i < page.n; i++) {
            saw_030 |= !strcmp(ks_obj_name(page.items[i]), "cm-030");
            saw_new |= !strcmp(ks_obj_name(page.items[i]), "cm-0255");
            if (i && strcmp(ks_obj_name(page.items[i - 1]), ks_obj_name(page.items[i])) >= 0)
                fail_msg("not sorted: %s then %s", ks_obj_name(page.items[i - 1]),
                         ks_obj_name(page.items[i]));
        }
        total += page.n;
    }
    ks_objlist_free(&page);
    if (total != 50 || !saw_030 || saw_new)
        fail_msg("snapshot: got %zu items (cm-030 %d, new %d), want 50, 1, 0", total, saw_030,
                 saw_new);
    /* label selector with paging */
    ks_selector *sel = NULL;
    assert_int_equal(ks_label_selector_parse("odd=y", &sel, NULL), TLR_OK);
    ks_list_opts lo = { .labels = sel };
    assert_int_equal(ks_store_list(s, KS_CONFIGMAP, &lo, &page, NULL), TLR_OK);
    assert_int_equal(page.n, 25); /* cm-001 .. cm-049; the deleted cm-030 is even */
    ks_objlist_free(&page);
    ks_selector_free(sel);
    ks_store_free(s);
}

static void test_history_gone(void **state)
{
    (void)state;
    ks_store *s = new_store(16);
    ks_list_opts o = { .limit = 2 };
    ks_objlist page = { 0 };
    for (int i = 0; i < 5; i++) {
        char n[16];
        snprintf(n, sizeof(n), "a%d", i);
        add_cm(s, "default", n, NULL);
    }
    assert_int_equal(ks_store_list(s, KS_CONFIGMAP, &o, &page, NULL), TLR_OK);
    char *cont = strdup(page.cont);
    ks_objlist_free(&page);
    uint64_t since = ks_store_rv(s);
    for (int i = 0; i < 40; i++) {
        char n[16];
        snprintf(n, sizeof(n), "b%d", i);
        add_cm(s, "default", n, NULL);
    }
    ks_status st;
    o.cont = cont;
    assert_int_equal(ks_store_list(s, KS_CONFIGMAP, &o, &page, &st), TLR_E_GONE);
    assert_int_equal(st.code, 410);
    assert_string_equal(st.reason, "Expired");
    free(cont);
    ks_event *ev = NULL;
    size_t n = 0;
    uint64_t next = 0;
    assert_int_equal(ks_store_events_since(s, since, KS_ALL_KINDS, 0, &ev, &n, &next), TLR_E_GONE);
    assert_int_equal(ks_store_events_since(s, ks_store_rv(s) - 10, KS_ALL_KINDS, 0, &ev, &n, &next),
                     TLR_OK);
    assert_int_equal(n, 10);
    assert_int_equal(next, ks_store_rv(s));
    ks_events_free(ev, n);
    ks_store_free(s);
}

/* Writers on two threads, a reader following events: every change seen
 * once, in order. */
typedef struct writer_arg {
    ks_store *s;
    int id, n;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *w = p;
    for (int i = 0; i < w->n; i++) {
        char n[32];
        snprintf(n, sizeof(n), "w%d-%d", w->id, i);
        if (add_cm(w->s, "default", n, NULL))
            abort();
    }
    return NULL;
}

static void test_concurrent_watch(void **state)
{
    (void)state;
    ks_store *s = new_store(100000);
    uint64_t since = ks_store_rv(s);
    pthread_t th[2];
    writer_arg wa[2] = { { s, 0, 2000 }, { s, 1, 2000 } };
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, writer, &wa[i]);
    size_t seen = 0;
    uint64_t last = since;
    while (seen < 4000) {
        ks_event *ev = NULL;
        size_t n = 0;
        uint64_t next;
        assert_int_equal(ks_store_events_since(s, last, KS_KIND_BIT(KS_CONFIGMAP), 500, &ev, &n, &next),
                         TLR_OK);
        for (size_t i = 0; i < n; i++) {
            if (ev[i].rv <= last)
                fail_msg("event %" PRIu64 " after %" PRIu64, ev[i].rv, last);
            last = ev[i].rv;
            assert_int_equal(ev[i].type, KS_EV_ADDED);
        }
        seen += n;
        ks_events_free(ev, n);
        last = next;
        if (seen < 4000)
            ks_store_wait(s, last, 1000);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(seen, 4000);
    assert_int_equal(ks_store_count(s, KS_CONFIGMAP), 4000);
    ks_store_free(s);
}

/* Readers and read-modify-writers on one object.  Every write frees the
 * object's skip-list node, so ks_store_get must take both its reference
 * and the pointer it returns before dropping the lock: otherwise ASan
 * reports the freed node read, and without ASan the caller gets another
 * version (or garbage) and drops a reference it never took.  The final
 * count checks that no modify was lost. */
typedef struct hot_arg {
    ks_store *s;
    int n;
    bool modify;
    int done;       /* successful modifies */
} hot_arg;

static int hot_bump(json_object *o, void *arg, ks_status *st)
{
    (void)arg;
    (void)st;
    json_object *data = tlr_json_obj(o, "data");
    const char *cur = tlr_json_str(o, "data.n");   /* ConfigMap data are strings */
    char buf[24];
    snprintf(buf, sizeof(buf), "%lld", (cur ? strtoll(cur, NULL, 10) : 0) + 1);
    json_object_object_add(data, "n", json_object_new_string(buf));
    return TLR_OK;
}

static void *hot_worker(void *p)
{
    hot_arg *a = p;
    for (int i = 0; i < a->n; i++) {
        ks_obj *o = NULL;
        int rc = a->modify ? ks_store_modify(a->s, KS_CONFIGMAP, "default", "hot", 0, hot_bump,
                                             NULL, &o, NULL)
                           : ks_store_get(a->s, KS_CONFIGMAP, "default", "hot", &o, NULL);
        if (rc == TLR_E_CONFLICT)
            continue;
        if (rc != TLR_OK || strcmp(ks_obj_name(o), "hot") != 0)
            abort();
        json_object_put(ks_obj_parse(o));
        ks_obj_unref(o);
        a->done += a->modify;
    }
    return NULL;
}

static void test_get_while_modified(void **state)
{
    (void)state;
    ks_store *s = new_store(64);
    assert_int_equal(ks_store_create_text(s, KS_CONFIGMAP, "default",
                                          "{\"metadata\":{\"name\":\"hot\"},\"data\":{}}", NULL,
                                          NULL),
                     TLR_OK);
    enum { NT = 4 };
    pthread_t th[NT];
    hot_arg ha[NT];
    for (int i = 0; i < NT; i++) {
        ha[i] = (hot_arg){ .s = s, .n = 10000, .modify = i % 2 == 0 };
        pthread_create(&th[i], NULL, hot_worker, &ha[i]);
    }
    int want = 0;
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        want += ha[i].done;
    }
    json_object *j = NULL;
    assert_int_equal(ks_store_get_json(s, KS_CONFIGMAP, "default", "hot", &j, NULL), TLR_OK);
    const char *got = tlr_json_str(j, "data.n");
    char wbuf[24];
    snprintf(wbuf, sizeof(wbuf), "%d", want);
    if (!got || strcmp(got, wbuf) != 0)
        fail_msg("data.n = %s after %d modifies, want %s", got ? got : "(none)", want, wbuf);
    json_object_put(j);
    ks_store_free(s);
}

static void count_run(ks_store *s, void *arg)
{
    (void)s;
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_RELAXED);
}

static void test_controller_wakes(void **state)
{
    (void)state;
    ks_store *s = new_store(0);
    int runs = 0;
    ks_controller c = { .name = "t", .period_ms = 60000, .wake_kinds = KS_KIND_BIT(KS_CONFIGMAP),
                        .min_gap_ms = 1, .fn = count_run, .arg = &runs };
    assert_int_equal(ks_store_add_controller(s, &c), TLR_OK);
    for (int i = 0; i < 100 && __atomic_load_n(&runs, __ATOMIC_RELAXED) < 1; i++)
        ks_store_wait(s, UINT64_MAX - 1, 10);
    int before = __atomic_load_n(&runs, __ATOMIC_RELAXED);
    add_cm(s, "default", "wake", NULL);
    for (int i = 0; i < 200 && __atomic_load_n(&runs, __ATOMIC_RELAXED) == before; i++)
        ks_store_wait(s, UINT64_MAX - 1, 10);
    ks_store_stop_controllers(s);
    if (runs <= before)
        fail_msg("controller ran %d times after a change, want > %d", runs, before);
    ks_store_free(s);
}

/* What kube-apiserver's validation refuses, refused the same way: 422
 * Invalid, the field in the message and in details.causes[0].field. */
static void test_validation(void **state)
{
    (void)state;
    ks_store *s = new_store(0);
    static const struct {
        const char *name;
        ks_kind_id kind;
        const char *body;
        const char *field;    /* NULL: accepted */
        const char *cause;
    } cases[] = {
#define POD(meta, ctrs) "{\"metadata\":{" meta "},\"spec\":{\"containers\":[" ctrs "]}}"
#define C(n) "{\"name\":\"" n "\",\"image\":\"busybox\"}"
        { "a valid pod", KS_POD, POD("\"name\":\"ok.pod-1\"", C("a") "," C("b")), NULL, NULL },
        { "a pod name of 71 characters without a dot (only the whole is limited)", KS_POD,
          POD("\"name\":\"checkout-frontend-canary-eu-west-with-a-very-long-deployment-name-abcde\"",
              C("a")), NULL, NULL },
        { "name with a double dot", KS_POD, POD("\"name\":\"a..b\"", C("a")), "metadata.name",
          "FieldValueInvalid" },
        { "name with .- ", KS_CONFIGMAP, "{\"metadata\":{\"name\":\"a.-b\"}}", "metadata.name",
          "FieldValueInvalid" },
        { "a name over 253 characters", KS_CONFIGMAP,
          "{\"metadata\":{\"name\":\"" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}",
          "metadata.name", "FieldValueInvalid" },
        { "service name starting with a digit (DNS-1035)", KS_SERVICE,
          "{\"metadata\":{\"name\":\"1svc\"},\"spec\":{\"ports\":[{\"port\":80}]}}",
          "metadata.name", "FieldValueInvalid" },
        { "namespace with a dot (DNS-1123 label)", KS_NAMESPACE,
          "{\"metadata\":{\"name\":\"a.b\"}}", "metadata.name", "FieldValueInvalid" },
        { "generateName ending in '-'", KS_CONFIGMAP, "{\"metadata\":{\"generateName\":\"web-\"}}",
          NULL, NULL },
        { "generateName with upper case", KS_CONFIGMAP,
          "{\"metadata\":{\"generateName\":\"Web-\"}}", "metadata.generateName", "FieldValueInvalid" },
        { "container without a name", KS_POD, POD("\"name\":\"p1\"", "{\"image\":\"busybox\"}"),
          "spec.containers[0].name", "FieldValueRequired" },
        { "container name not a label", KS_POD, POD("\"name\":\"p2\"", C("My_C")),
          "spec.containers[0].name", "FieldValueInvalid" },
        { "two containers with one name", KS_POD, POD("\"name\":\"p3\"", C("a") "," C("a")),
          "spec.containers[1].name", "FieldValueDuplicate" },
        { "an init container with a container's name", KS_POD,
          "{\"metadata\":{\"name\":\"p4\"},\"spec\":{\"containers\":[" C("a") "],"
          "\"initContainers\":[" C("a") "]}}", "spec.initContainers[0].name", "FieldValueDuplicate" },
        { "container without an image", KS_POD, POD("\"name\":\"p5\"", "{\"name\":\"a\"}"),
          "spec.containers[0].image", "FieldValueRequired" },
        { "template container without an image", KS_DEPLOYMENT,
          "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":{\"containers\":"
          "[{\"name\":\"a\"}]}}}}", "spec.template.spec.containers[0].image", "FieldValueRequired" },
        { "pod with no containers", KS_POD, "{\"metadata\":{\"name\":\"p6\"},\"spec\":{\"containers\":[]}}",
          "spec.containers", "FieldValueRequired" },
        { "label key with two slashes", KS_POD, POD("\"name\":\"p7\",\"labels\":{\"a/b/c\":\"x\"}", C("a")),
          "metadata.labels", "FieldValueInvalid" },
        { "label key prefix not a subdomain", KS_CONFIGMAP,
          "{\"metadata\":{\"name\":\"l1\",\"labels\":{\"Ex.com/app\":\"x\"}}}", "metadata.labels",
          "FieldValueInvalid" },
        { "label value with a space", KS_CONFIGMAP,
          "{\"metadata\":{\"name\":\"l2\",\"labels\":{\"app\":\"a b\"}}}", "metadata.labels",
          "FieldValueInvalid" },
        { "label value of 64 characters", KS_CONFIGMAP,
          "{\"metadata\":{\"name\":\"l3\",\"labels\":{\"app\":\""
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}}", "metadata.labels",
          "FieldValueInvalid" },
        { "valid labels: prefixed key, empty value, dots and underscores", KS_CONFIGMAP,
          "{\"metadata\":{\"name\":\"l4\",\"labels\":{\"app.kubernetes.io/name\":\"My_App.v1\","
          "\"empty\":\"\"}}}", NULL, NULL },
        { "template label invalid", KS_DEPLOYMENT,
          "{\"metadata\":{\"name\":\"d2\"},\"spec\":{\"template\":{\"metadata\":{\"labels\":"
          "{\"app\":\"-x\"}},\"spec\":{\"containers\":[" C("a") "]}}}}",
          "spec.template.metadata.labels", "FieldValueInvalid" },
#undef POD
#undef C
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ks_status st = { 0 };
        int rc = ks_store_create_text(s, cases[i].kind, "default", cases[i].body, NULL, &st);
        bool ok = cases[i].field
                      ? rc == TLR_E_INVAL && st.code == 422 && !strcmp(st.reason, "Invalid") &&
                            !strcmp(st.cause_field, cases[i].field) && st.cause_reason &&
                            !strcmp(st.cause_reason, cases[i].cause) &&
                            strstr(st.message, cases[i].field) && strstr(st.message, " is invalid: ")
                      : rc == TLR_OK;
        if (!ok) {
            print_error("%s: got rc %d code %d field \"%s\" cause %s (%s), want %s %s\n",
                        cases[i].name, rc, st.code, st.cause_field,
                        st.cause_reason ? st.cause_reason : "-", st.message,
                        cases[i].field ? cases[i].field : "accepted",
                        cases[i].cause ? cases[i].cause : "");
            failed++;
        }
    }
    ks_store_free(s);
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_errors),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_update_conflict_and_status),
        cmocka_unit_test(test_finalizers),
        cmocka_unit_test(test_paging_snapshot),
        cmocka_unit_test(test_history_gone),
        cmocka_unit_test(test_concurrent_watch),
        cmocka_unit_test(test_get_while_modified),
        cmocka_unit_test(test_controller_wakes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
