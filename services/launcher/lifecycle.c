/* lifecycle.c - NodeClaim phase decisions (lifecycle.h). */
#include "lifecycle.h"

#include <stdlib.h>
#include <string.h>

static bool has_taint(const lc_node *n, const char *key)
{
    for (size_t i = 0; i < n->ntaints; i++)
        if (strcmp(n->taint_keys[i], key) == 0)
            return true;
    return false;
}

static bool initialized(const lc_claim *c, const lc_node *n)
{
    if (!n->ready || has_taint(n, "karpenter.sh/unregistered") ||
        has_taint(n, "node.kubernetes.io/not-ready"))
        return false;
    for (size_t i = 0; i < c->nc->n_startup_taints; i++)
        if (has_taint(n, c->nc->startup_taints[i]->key))
            return false;
    return true;
}

lc_life_action lc_lifecycle_decide(const lc_claim *c, const lc_node *node, int64_t now_ms)
{
    if (!c->launched_ms)
        return now_ms - c->created_ms >= LC_LAUNCH_TTL_MS ? LC_LIFE_LAUNCH_TIMEOUT
                                                          : LC_LIFE_NONE;
    if (!c->registered_ms) {
        if (node)
            return LC_LIFE_REGISTERED;
        return now_ms - c->launched_ms >= LC_REGISTER_TTL_MS ? LC_LIFE_REGISTER_TIMEOUT
                                                             : LC_LIFE_NONE;
    }
    if (!c->initialized_ms && node && initialized(c, node))
        return LC_LIFE_INITIALIZED;
    return LC_LIFE_NONE;
}

const lc_node *lc_node_for_instance(const lc_nodes *nodes, const char *instance_id)
{
    if (!instance_id || !instance_id[0])
        return NULL;
    size_t idlen = strlen(instance_id);
    for (size_t i = 0; i < nodes->n; i++) {
        const char *p = nodes->v[i].provider_id;
        size_t plen = p ? strlen(p) : 0;
        /* aws:///us-east-1a/i-0abc: the id is the last path element. */
        if (plen > idlen && p[plen - idlen - 1] == '/' && strcmp(p + plen - idlen, instance_id) == 0)
            return &nodes->v[i];
    }
    return NULL;
}

void lc_nodes_free(lc_nodes *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        free(l->v[i].provider_id);
        for (size_t j = 0; j < l->v[i].ntaints; j++)
            free(l->v[i].taint_keys[j]);
        free(l->v[i].taint_keys);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}
