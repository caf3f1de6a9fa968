/* plangate.c - the plan gate's pure parts (plangate.h). */
#include "plangate.h"

#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

bool lc_plan_gate_pod(const Tailor__V1__Pod *pod)
{
    return tlr_ks_pod_spread_hard(pod);
}

int lc_plan_stage(const Tailor__V1__NodeClaim *nc)
{
    for (size_t i = 0; nc && i < nc->n_annotations; i++)
        if (nc->annotations[i]->key && strcmp(nc->annotations[i]->key, TLR_ANNOTATION_PLAN_STAGE) == 0)
            return nc->annotations[i]->value && strcmp(nc->annotations[i]->value, "2") == 0 ? 2 : 1;
    return 1;
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
