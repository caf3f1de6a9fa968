/* catalogs_test.c - Simulate's catalogs per class shape (catalogs.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "catalogs.h"
#include "ds_testkit.h"

static Tailor__V1__NodeClass *nodeclass(const char *name, int max_pods)
{
    Tailor__V1__NodeClass *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_class__init(nc);
    nc->name = tlr_strdup(name);
    nc->ami_family = tlr_strdup("AL2023");
    if (max_pods > 0) {
        nc->kubelet = tlr_malloc(sizeof(*nc->kubelet));
        tailor__v1__kubelet_config__init(nc->kubelet);
        nc->kubelet->max_pods = max_pods;
    }
    return nc;
}

/* Two classes on the launcher's catalog: the default one keeps it, the one
 * with kubelet.maxPods 5 gets a shaped copy (every type 5 pods), made
 * once and kept; a resend carries both catalogs in full. */
static void test_split_by_shape(void **state)
{
    (void)state;
    Tailor__V1__Catalog *base = tk_catalog();
    Tailor__V1__NodeClass *ncs[2] = { nodeclass("default", 0), nodeclass("small", 5) };
    Tailor__V1__ClusterState cs = TAILOR__V1__CLUSTER_STATE__INIT;
    cs.node_classes = ncs;
    cs.n_node_classes = 2;
    char *names[2] = { "default", "small" };
    Tailor__V1__CatalogRef ref = TAILOR__V1__CATALOG_REF__INIT, *refs_in[1] = { &ref };
    ref.hash = base->hash;
    ref.node_classes = names;
    ref.n_node_classes = 2;
    Tailor__V1__SimulateRequest req = TAILOR__V1__SIMULATE_REQUEST__INIT;
    req.cluster = &cs;
    req.catalogs = refs_in;
    req.n_catalogs = 1;

    ds_catalogs *c;
    ds_catalogs_create(&c);
    tlr_clnt_cats cats = { 0 };
    ds_catalogs_name(c, base, &req, &cats);
    Tailor__V1__CatalogRef **refs = cats.refs;
    assert_int_equal(cats.n, 2);
    assert_string_equal(refs[0]->hash, base->hash);
    assert_int_equal(refs[0]->n_node_classes, 1);
    assert_string_equal(refs[0]->node_classes[0], "default");
    assert_null(refs[0]->catalog);
    assert_string_not_equal(refs[1]->hash, base->hash);
    assert_string_equal(refs[1]->node_classes[0], "small");
    char hash[65];
    snprintf(hash, sizeof(hash), "%s", refs[1]->hash);
    tlr_clnt_cats_clear(&cats);

    /* the resend: a miss by hash puts both in full */
    ds_catalogs_name(c, base, &req, &cats);
    assert_true(tlr_clnt_cats_resend(&cats, true, false));
    refs = cats.refs;
    assert_int_equal(cats.n, 2);
    assert_ptr_equal(refs[0]->catalog, base);
    assert_non_null(refs[1]->catalog);
    assert_string_equal(refs[1]->hash, hash);   /* the cached copy */
    for (size_t i = 0; i < refs[1]->catalog->n_instance_types; i++)
        assert_int_equal(refs[1]->catalog->instance_types[i]->allocatable->pods, 5);
    assert_false(tlr_clnt_cats_resend(&cats, true, false));   /* once only */
    tlr_clnt_cats_clear(&cats);

    ds_catalogs_free(c);
    for (int i = 0; i < 2; i++)
        tailor__v1__node_class__free_unpacked(ncs[i], NULL);
    tailor__v1__catalog__free_unpacked(base, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_by_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
