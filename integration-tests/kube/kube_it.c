/* kube_it.c KUBECONFIG - common/kube against a real kubesim over HTTPS
 * (its generated CA and bearer token, from the kubeconfig it wrote):
 * paged list, watch resume after a write, 410 Gone for an expired
 * resourceVersion, create/get/patch/update-conflict/delete, and an
 * eviction refused with 429 by a PodDisruptionBudget.  Prints PASS/FAIL
 * per check; exits 1 if any failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"

static int failed;

#define CHECK(name, cond, ...)                                               \
    do {                                                                     \
        if (cond) {                                                          \
            printf("PASS: %s\n", name);                                      \
        } else {                                                             \
            printf("FAIL: %s: ", name);                                      \
            printf(__VA_ARGS__);                                             \
            printf("\n");                                                    \
            failed++;                                                        \
        }                                                                    \
    } while (0)

static json_object *cm(const char *name, const char *value)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"it\":\"kube\"}},\"data\":{\"a\":\"%s\"}}", name, value);
    return json_tokener_parse(buf);
}

static int count_item(void *arg, json_object *item)
{
    (void)item;
    (*(int *)arg)++;
    return TLR_OK;
}

typedef struct wseen {
    const char *want;
    int events;
    bool found;
} wseen;

static int until_name(void *arg, tlr_kube_event_type t, json_object *obj)
{
    wseen *w = arg;
    w->events++;
    const char *n = tlr_json_str(obj, "metadata.name");
    if (t == TLR_KUBE_ADDED && n != NULL && strcmp(n, w->want) == 0) {
        w->found = true;
        return TLR_E_CANCELED;    /* done: stop the watch */
    }
    return TLR_OK;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: kube_it KUBECONFIG\n");
        return 2;
    }
    char err[256];
    tlr_kube *kc;
    int rc = tlr_kube_connect(argv[1], false, NULL, &kc, err, sizeof(err));
    if (rc != TLR_OK) {
        printf("FAIL: connect: %s\n", err);
        return 1;
    }
    tlr_kube_res cms = TLR_KUBE_RES_CONFIGMAPS;
    tlr_kube_status st;
    const char *ns = "default";

    /* create 7, list 2 at a time */
    for (int i = 0; i < 7; i++) {
        char name[32];
        snprintf(name, sizeof(name), "page-%d", i);
        json_object *o = cm(name, "x");
        rc = tlr_kube_create_obj(kc, &cms, ns, o, NULL, &st);
        json_object_put(o);
        CHECK("create configmap", rc == TLR_OK, "%s: %s %s", name, tlr_errname(rc), st.message);
    }
    json_object *o = cm("page-0", "x");
    rc = tlr_kube_create_obj(kc, &cms, ns, o, NULL, &st);
    json_object_put(o);
    CHECK("create existing -> EXISTS", rc == TLR_E_EXISTS, "got %s http %ld reason %s",
          tlr_errname(rc), st.http, st.reason);
    json_object *page = NULL;
    tlr_kube_list_opts lo = { .limit = 2, .label_selector = "it=kube" };
    rc = tlr_kube_list_page(kc, &cms, ns, &lo, &page, &st);
    const char *cont = page ? tlr_json_str(page, "metadata.continue") : NULL;
    CHECK("first page has 2 items and a continue token",
          rc == TLR_OK && json_object_array_length(tlr_json_arr(page, "items")) == 2 &&
              cont != NULL && cont[0] != '\0',
          "rc %s", tlr_errname(rc));
    json_object_put(page);
    int n = 0;
    char *rv = NULL;
    rc = tlr_kube_list(kc, &cms, ns, &lo, count_item, &n, &rv, &st);
    CHECK("paged list sees all 7", rc == TLR_OK && n == 7 && rv != NULL, "rc %s n %d",
          tlr_errname(rc), n);

    /* watch resume: a write after the list shows up when watching from rv */
    o = cm("after-list", "y");
    rc = tlr_kube_create_obj(kc, &cms, ns, o, NULL, &st);
    json_object_put(o);
    wseen w = { .want = "after-list" };
    tlr_kube_watch_opts wo = { .resource_version = rv, .allow_bookmarks = true, .timeout_s = 5 };
    char *last = NULL;
    rc = tlr_kube_watch(kc, &cms, ns, &wo, until_name, &w, &last, &st);
    CHECK("watch from the list's rv sees the later create", w.found && rc == TLR_E_CANCELED,
          "rc %s events %d", tlr_errname(rc), w.events);
    CHECK("watch reports the last resourceVersion", last != NULL && strcmp(last, rv) != 0,
          "last %s", last ? last : "(null)");
    free(last);

    /* 410: kubesim keeps --history events; churn past them, then resume */
    for (int i = 0; i < 40; i++) {
        char p[64];
        snprintf(p, sizeof(p), "{\"data\":{\"a\":\"v%d\"}}", i);
        tlr_kube_patch(kc, &cms, ns, "page-1", NULL, TLR_KUBE_PATCH_MERGE, p, NULL, NULL);
    }
    wseen w2 = { .want = "never" };
    rc = tlr_kube_watch(kc, &cms, ns, &wo, until_name, &w2, NULL, &st);
    CHECK("watch from an expired rv -> GONE", rc == TLR_E_GONE, "got %s http %ld %s",
          tlr_errname(rc), st.http, st.message);
    free(rv);

    /* get, patch (merge and strategic and json-patch), update conflict */
    json_object *got = NULL;
    rc = tlr_kube_get(kc, &cms, ns, "page-2", &got, &st);
    CHECK("get", rc == TLR_OK && strcmp(tlr_json_str(got, "data.a"), "x") == 0, "%s",
          tlr_errname(rc));
    json_object *patched = NULL;
    rc = tlr_kube_patch(kc, &cms, ns, "page-2", NULL, TLR_KUBE_PATCH_MERGE,
                        "{\"data\":{\"b\":\"merged\"}}", &patched, &st);
    CHECK("merge patch", rc == TLR_OK && patched &&
          strcmp(tlr_json_str(patched, "data.b"), "merged") == 0, "%s %s", tlr_errname(rc),
          st.message);
    json_object_put(patched);
    rc = tlr_kube_patch(kc, &cms, ns, "page-2", NULL, TLR_KUBE_PATCH_JSON,
                        "[{\"op\":\"replace\",\"path\":\"/data/b\",\"value\":\"jp\"}]", &patched, &st);
    CHECK("json patch", rc == TLR_OK && patched &&
          strcmp(tlr_json_str(patched, "data.b"), "jp") == 0, "%s %s", tlr_errname(rc), st.message);
    json_object_put(patched);
    patched = NULL;
    rc = tlr_kube_patch(kc, &cms, ns, "page-2", NULL, TLR_KUBE_PATCH_STRATEGIC,
                        "{\"data\":{\"c\":\"smp\"}}", &patched, &st);
    CHECK("strategic merge patch", rc == TLR_OK, "%s %s", tlr_errname(rc), st.message);
    json_object_put(patched);
    /* got still carries the old resourceVersion: PUT must conflict */
    json_object_object_add(tlr_json_obj(got, "data"), "a", json_object_new_string("stale"));
    rc = tlr_kube_update(kc, &cms, ns, "page-2", NULL, got, NULL, &st);
    CHECK("update with a stale resourceVersion -> CONFLICT", rc == TLR_E_CONFLICT,
          "got %s http %ld", tlr_errname(rc), st.http);
    json_object_put(got);
    got = NULL;
    tlr_kube_get(kc, &cms, ns, "page-2", &got, &st);
    json_object_object_add(tlr_json_obj(got, "data"), "a", json_object_new_string("fresh"));
    json_object *upd = NULL;
    rc = tlr_kube_update(kc, &cms, ns, "page-2", NULL, got, &upd, &st);
    CHECK("update with the current resourceVersion", rc == TLR_OK && upd &&
          strcmp(tlr_json_str(upd, "data.a"), "fresh") == 0, "%s %s", tlr_errname(rc), st.message);
    json_object_put(upd);
    json_object_put(got);

    rc = tlr_kube_delete(kc, &cms, ns, "page-3", "Background", &st);
    CHECK("delete", rc == TLR_OK, "%s %s", tlr_errname(rc), st.message);
    got = NULL;
    rc = tlr_kube_get(kc, &cms, ns, "page-3", &got, &st);
    CHECK("get after delete -> NOTFOUND", rc == TLR_E_NOTFOUND && st.http == 404 &&
          st.message[0] != '\0', "%s", tlr_errname(rc));
    rc = tlr_kube_delete(kc, &cms, ns, "page-3", NULL, &st);
    CHECK("delete again -> NOTFOUND", rc == TLR_E_NOTFOUND, "%s", tlr_errname(rc));

    /* eviction refused by a PDB */
    tlr_kube_res pods = TLR_KUBE_RES_PODS, pdbs = TLR_KUBE_RES_PDBS;
    o = json_tokener_parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"guarded\","
        "\"labels\":{\"app\":\"guarded\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
        "\"image\":\"x\"}]}}");
    rc = tlr_kube_create_obj(kc, &pods, ns, o, NULL, &st);
    json_object_put(o);
    CHECK("create pod", rc == TLR_OK, "%s %s", tlr_errname(rc), st.message);
    /* Pending pods may always be evicted; make it Running and Ready through
     * the status subresource so the PDB counts it. */
    rc = tlr_kube_patch(kc, &pods, ns, "guarded", "status", TLR_KUBE_PATCH_MERGE,
                        "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
                        "\"Ready\",\"status\":\"True\"}]}}", NULL, &st);
    CHECK("patch pod status", rc == TLR_OK, "%s %s", tlr_errname(rc), st.message);
    o = json_tokener_parse(
        "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":"
        "{\"name\":\"guard\"},\"spec\":{\"minAvailable\":1,\"selector\":{\"matchLabels\":"
        "{\"app\":\"guarded\"}}}}");
    rc = tlr_kube_create_obj(kc, &pdbs, ns, o, NULL, &st);
    json_object_put(o);
    CHECK("create pdb", rc == TLR_OK, "%s %s", tlr_errname(rc), st.message);
    rc = tlr_kube_evict(kc, ns, "guarded", &st);
    CHECK("eviction blocked by the PDB -> THROTTLED (429)", rc == TLR_E_THROTTLED && st.http == 429,
          "got %s http %ld %s", tlr_errname(rc), st.http, st.message);
    rc = tlr_kube_evict(kc, ns, "no-such-pod", &st);
    CHECK("eviction of a missing pod -> NOTFOUND", rc == TLR_E_NOTFOUND, "got %s",
          tlr_errname(rc));

    tlr_kube_free(kc);
    printf("%s: %d failed\n", failed ? "FAILED" : "OK", failed);
    return failed ? 1 : 0;
}
