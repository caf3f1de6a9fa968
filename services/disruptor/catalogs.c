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

/* The ref in out[0..*n) for catalog cat, added when absent. */
static Tailor__V1__CatalogRef *ref_for(Tailor__V1__CatalogRef **out, size_t *n,
                                       const Tailor__V1__Catalog *cat, int full, size_t max)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(out[i]->hash, cat->hash) == 0)
            return out[i];
    Tailor__V1__CatalogRef *r = tlr_malloc(sizeof(*r));
    tailor__v1__catalog_ref__init(r);
    r->hash = cat->hash;
    r->catalog = full ? (Tailor__V1__Catalog *)cat : NULL;
    r->node_classes = tlr_calloc(max + 1, sizeof(char *));
    out[(*n)++] = r;
    return r;
}

void ds_catalogs_refs(ds_catalogs *c, const Tailor__V1__Catalog *base,
                      const Tailor__V1__SimulateRequest *req, int full,
                      Tailor__V1__CatalogRef ***refs, size_t *n)
{
    size_t max = 0;
    for (size_t i = 0; i < req->n_catalogs; i++)
        max += req->catalogs[i]->n_node_classes + 1;
    Tailor__V1__CatalogRef **out = tlr_calloc(max + 1, sizeof(*out));
    size_t nout = 0;
    for (size_t i = 0; i < req->n_catalogs; i++) {
        const Tailor__V1__CatalogRef *in = req->catalogs[i];
        if (!base || strcmp(in->hash, base->hash) != 0) {
            /* Not the launcher's catalog: passed on as it is. */
            Tailor__V1__CatalogRef *r = tlr_malloc(sizeof(*r));
            *r = *in;
            r->node_classes = tlr_calloc(in->n_node_classes + 1, sizeof(char *));
            memcpy(r->node_classes, in->node_classes, in->n_node_classes * sizeof(char *));
            out[nout++] = r;
            continue;
        }
        for (size_t k = 0; k < in->n_node_classes; k++) {
            const Tailor__V1__NodeClass *nc = class_named(req, in->node_classes[k]);
            tlr_node_shape s = nc ? tlr_node_shape_of(nc) : (tlr_node_shape){ 0 };
            const Tailor__V1__Catalog *cat =
                nc && !tlr_node_shape_is_default(&s) ? shaped_of(c, base, &s) : base;
            Tailor__V1__CatalogRef *r = ref_for(out, &nout, cat, full, max);
            r->node_classes[r->n_node_classes++] = in->node_classes[k];
        }
        if (in->n_node_classes == 0)
            ref_for(out, &nout, base, full, max);
    }
    *refs = out;
    *n = nout;
}

void ds_catalogs_refs_free(Tailor__V1__CatalogRef **refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(refs[i]->node_classes);
        free(refs[i]);
    }
    free(refs);
}
