/* gc.c - garbage collection decisions (gc.h). */
#include "gc.h"

#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_labels.h"

static bool is_live(const char *state)
{
    return strcmp(state, "pending") == 0 || strcmp(state, "running") == 0;
}

void lc_gc_decide(const tlr_ec2_instances *inst, const tlr_kclaims *claims,
                  const char *const *known, size_t nknown, int64_t now_ms, lc_gc_plan *out)
{
    lc_gc_plan p = { 0 };
    p.terminate = tlr_calloc(inst->n + 1, sizeof(char *));
    p.delete_claims = tlr_calloc(claims->n + 1, sizeof(char *));
    for (size_t i = 0; i < inst->n; i++) {
        const tlr_ec2_instance *in = &inst->v[i];
        const char *owner = tlr_ec2_instance_tag(in, TLR_TAG_NODECLAIM);
        bool ours = owner || tlr_ec2_instance_tag(in, TLR_LABEL_NODEPOOL);
        if (!ours || !is_live(in->state) || now_ms - in->launch_ms < LC_GC_GRACE_MS)
            continue;
        /* Owned: a claim records this instance, or the tag names a claim
         * that records none yet (its launch is not written back).  A
         * claim that records another instance does not own this one: a
         * second launch for the same claim (a retry after a crash) would
         * otherwise run unaccounted for ever. */
        bool owned = false;
        for (size_t j = 0; j < claims->n && !owned; j++) {
            const char *id = claims->v[j].instance_id;
            owned = (id && strcmp(id, in->id) == 0) ||
                    (owner && strcmp(claims->v[j].name, owner) == 0 && (!id || !id[0]));
        }
        for (size_t j = 0; j < nknown && !owned; j++)
            owned = strcmp(known[j], in->id) == 0;
        if (!owned)
            p.terminate[p.nterminate++] = tlr_strdup(in->id);
    }
    for (size_t j = 0; j < claims->n; j++) {
        const tlr_kclaim *c = &claims->v[j];
        if (!c->instance_id || !c->instance_id[0] || c->deletion_ms != 0 ||
            now_ms - c->creation_ms < LC_GC_GRACE_MS)
            continue;
        bool found = false;
        for (size_t i = 0; i < inst->n && !found; i++)
            found = strcmp(inst->v[i].id, c->instance_id) == 0 && is_live(inst->v[i].state);
        if (!found)
            p.delete_claims[p.ndelete++] = tlr_strdup(c->name);
    }
    *out = p;
}

void lc_gc_plan_clear(lc_gc_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nterminate; i++)
        free(p->terminate[i]);
    for (size_t i = 0; i < p->ndelete; i++)
        free(p->delete_claims[i]);
    free(p->terminate);
    free(p->delete_claims);
    memset(p, 0, sizeof(*p));
}
