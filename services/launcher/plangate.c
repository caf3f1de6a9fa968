/* plangate.c - the plan gate's pure parts (plangate.h). */
#include "plangate.h"

#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"

bool lc_plan_gate_pod(const Tailor__V1__Pod *pod)
{
    for (size_t i = 0; pod && i < pod->n_topology_spread_constraints; i++)
        if (pod->topology_spread_constraints[i]->when_unsatisfiable ==
            TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE)
            return true;
    return false;
}

const char *lc_plan_gate_of(const Tailor__V1__NodeClaim *nc)
{
    for (size_t i = 0; nc && i < nc->n_annotations; i++)
        if (nc->annotations[i]->key && strcmp(nc->annotations[i]->key, LC_ANNOTATION_PLAN_GATE) == 0)
            return nc->annotations[i]->value && nc->annotations[i]->value[0]
                       ? nc->annotations[i]->value : NULL;
    return NULL;
}

void lc_plan_gate_set(Tailor__V1__NodeClaim *nc, const char *gate)
{
    for (size_t i = 0; i < nc->n_annotations; i++)
        if (strcmp(nc->annotations[i]->key, LC_ANNOTATION_PLAN_GATE) == 0) {
            if (nc->annotations[i]->value != protobuf_c_empty_string)
                free(nc->annotations[i]->value);
            nc->annotations[i]->value = tlr_strdup(gate);
            return;
        }
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(LC_ANNOTATION_PLAN_GATE);
    l->value = tlr_strdup(gate);
    nc->annotations = tlr_realloc(nc->annotations, (nc->n_annotations + 1) * sizeof(*nc->annotations));
    nc->annotations[nc->n_annotations++] = l;
}
