/* catalogs.c - per-class shaped catalogs for Simulate (catalogs.h). */
#include "catalogs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_catalog.h"
#include "tlr_nodeshape.h"

/* A cached shaped catalog: base hash + shape key -> catalog. */
typedef struct shaped {
    char *key;
    Tailor__V1__Catalog *cat;   /* owned */
} shaped;

struct ds_catalogs {
    shaped *v;
    size_t n, cap;
};

/* Kept small: one entry per class shape in use; a new base catalog makes
 * the old entries useless, so past this many the cache starts over. */
#define MAX_SHAPED 16

void ds_catalogs_create(ds_catalogs **out)
{
    *out = tlr_calloc(1, sizeof(**out));
}

static void clear(ds_catalogs *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].key);
        tlr_catalog_free(c->v[i].cat);
    }
    c->n = 0;
}

void ds_catalogs_free(ds_catalogs *c)
{
    if (!c)
        return;
    clear(c);
    free(c->v);
    free(c);
}

/* The catalog of shape s over base, cached. */
static const Tailor__V1__Catalog *shaped_of(ds_catalogs *c, const Tailor__V1__Catalog *base,
                                            const tlr_node_shape *s)
{
    char sk[TLR_NODE_SHAPE_KEY_LEN];
    tlr_node_shape_key(s, sk);
    size_t klen = strlen(base->hash) + 1 + strlen(sk) + 1;
    char *key = tlr_malloc(klen);
    snprintf(key, klen, "%s/%s", base->hash, sk);
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].key, key) == 0) {
            free(key);
            return c->v[i].cat;
        }
    if (c->n >= MAX_SHAPED)
        clear(c);
    TLR_GROW(c->v, c->cap, c->n + 1);
    c->v[c->n].key = key;
    c->v[c->n].cat = tlr_catalog_shaped(base, s);
    return c->v[c->n++].cat;
}

static const Tailor__V1__NodeClass *class_named(const Tailor__V1__SimulateRequest *req,
                                                const char *name)
{
    const Tailor__V1__ClusterState *cs = req->cluster;
    for (size_t i = 0; cs && i < cs->n_node_classes; i++)
        if (strcmp(cs->node_classes[i]->name, name) == 0)
            return cs->node_classes[i];
    return NULL;
}

void ds_catalogs_name(ds_catalogs *c, const Tailor__V1__Catalog *base,
                      const Tailor__V1__SimulateRequest *req, tlr_clnt_cats *out)
{
    for (size_t i = 0; i < req->n_catalogs; i++) {
        const Tailor__V1__CatalogRef *in = req->catalogs[i];
        if (!base || strcmp(in->hash, base->hash) != 0) {
            tlr_clnt_cats_pass(out, in);   /* not the launcher's catalog */
            continue;
        }
        for (size_t k = 0; k < in->n_node_classes; k++) {
            const Tailor__V1__NodeClass *nc = class_named(req, in->node_classes[k]);
            tlr_node_shape s = nc ? tlr_node_shape_of(nc) : (tlr_node_shape){ 0 };
            const Tailor__V1__Catalog *cat =
                nc && !tlr_node_shape_is_default(&s) ? shaped_of(c, base, &s) : base;
            tlr_clnt_cats_name(out, cat, in->node_classes[k]);
        }
        if (in->n_node_classes == 0)
            tlr_clnt_cats_name(out, base, NULL);
    }
}
