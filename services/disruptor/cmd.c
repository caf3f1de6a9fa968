/* cmd.c - disruption commands (cmd.h). */
#include "cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidates.h"
#include "tlr_alloc.h"

static Tailor__V1__NodeClaim *claim_copy(const Tailor__V1__NodeClaim *nc)
{
    size_t len = tailor__v1__node_claim__get_packed_size(nc);
    uint8_t *b = tlr_malloc(len + 1);
    tailor__v1__node_claim__pack(nc, b);
    Tailor__V1__NodeClaim *c = tailor__v1__node_claim__unpack(NULL, len, b);
    free(b);
    if (!c)
        abort();   /* we packed it: cannot fail */
    return c;
}

ds_cmd *ds_cmd_new(Tailor__V1__DisruptionMethod m, Tailor__V1__DisruptionReason r, int64_t now_ms,
                   unsigned seq)
{
    ds_cmd *c = tlr_calloc(1, sizeof(*c));
    c->method = m;
    c->reason = r;
    c->created_ms = now_ms;
    snprintf(c->id, sizeof(c->id), "d-%lld-%u", (long long)now_ms, seq);
    return c;
}

void ds_cmd_free(ds_cmd *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->c[i].node);
        free(c->c[i].claim);
        free(c->c[i].pool);
        free(c->c[i].type);
        free(c->c[i].zone);
    }
    free(c->c);
    for (size_t i = 0; i < c->nrepl; i++)
        protobuf_c_message_free_unpacked(&c->repl[i]->base, NULL);
    free(c->repl);
    free(c);
}

void ds_cmd_add(ds_cmd *c, const ds_vnode *x)
{
    TLR_GROW(c->c, c->cap, c->n + 1);
    ds_cand_ref *r = &c->c[c->n++];
    const Tailor__V1__Node *n = x->node;
    r->node = tlr_strdup(n->name);
    r->claim = tlr_strdup(x->claim ? x->claim->name : n->nodeclaim_name);
    r->pool = tlr_strdup(n->nodepool);
    r->type = tlr_strdup(n->instance_type);
    r->zone = tlr_strdup(n->zone);
    r->ct = n->capacity_type;
    r->price = x->price;
    r->cost = ds_node_disruption_cost(x);
    c->before += x->price;
}

bool ds_cmd_has_node(const ds_cmd *c, const char *node)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->c[i].node, node))
            return true;
    return false;
}

void ds_cmd_set_replacements(ds_cmd *c, const Tailor__V1__SimulateResponse *r, double after)
{
    for (size_t i = 0; i < c->nrepl; i++)
        protobuf_c_message_free_unpacked(&c->repl[i]->base, NULL);
    free(c->repl);
    c->repl = NULL;
    c->nrepl = 0;
    if (r && r->n_replacements) {
        c->repl = tlr_calloc(r->n_replacements, sizeof(*c->repl));
        for (size_t i = 0; i < r->n_replacements; i++)
            c->repl[c->nrepl++] = claim_copy(r->replacements[i]);
    }
    c->after = after;
    c->savings = c->before - after;
}

const char **ds_cmd_nodes(const ds_cmd *c)
{
    const char **v = tlr_calloc(c->n + 1, sizeof(*v));
    for (size_t i = 0; i < c->n; i++)
        v[i] = c->c[i].node;
    return v;
}

const char *ds_method_name(Tailor__V1__DisruptionMethod m)
{
    switch (m) {
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EMPTINESS:
        return "emptiness";
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EXPIRATION:
        return "expiration";
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_DRIFT:
        return "drift";
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_INTERRUPTION:
        return "interruption";
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE:
        return "consolidation-delete";
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE:
        return "consolidation-replace";
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_NODE_REPAIR:
        return "node-repair";
    case TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_MANUAL:
        return "manual";
    default:
        return "unspecified";
    }
}

static Tailor__V1__DecisionState state_of(ds_cmd_state s)
{
    switch (s) {
    case DS_CMD_PROPOSED:
        return TAILOR__V1__DECISION_STATE__DECISION_STATE_PROPOSED;
    case DS_CMD_WAITING:
        return TAILOR__V1__DECISION_STATE__DECISION_STATE_EXECUTING;
    case DS_CMD_DONE:
        return TAILOR__V1__DECISION_STATE__DECISION_STATE_SUCCEEDED;
    case DS_CMD_ABORTED:
        return TAILOR__V1__DECISION_STATE__DECISION_STATE_ABORTED;
    case DS_CMD_FAILED:
        return TAILOR__V1__DECISION_STATE__DECISION_STATE_FAILED;
    }
    return TAILOR__V1__DECISION_STATE__DECISION_STATE_UNSPECIFIED;
}

Tailor__V1__DisruptionDecision *ds_cmd_decision(const ds_cmd *c)
{
    Tailor__V1__DisruptionDecision *d = tlr_malloc(sizeof(*d));
    tailor__v1__disruption_decision__init(d);
    d->id = tlr_strdup(c->id);
    d->method = c->method;
    d->state = state_of(c->state);
    d->reason = tlr_strdup(c->why);
    d->savings_per_hour = c->savings;
    d->cost_before_per_hour = c->before;
    d->cost_after_per_hour = c->after;
    d->created_unix_ms = c->created_ms;
    d->validated_unix_ms = c->validated_ms;
    d->candidates = tlr_calloc(c->n + 1, sizeof(*d->candidates));
    for (size_t i = 0; i < c->n; i++) {
        Tailor__V1__DisruptionCandidate *x = tlr_malloc(sizeof(*x));
        tailor__v1__disruption_candidate__init(x);
        x->node_name = tlr_strdup(c->c[i].node);
        x->nodeclaim_name = tlr_strdup(c->c[i].claim);
        x->nodepool = tlr_strdup(c->c[i].pool);
        x->instance_type = tlr_strdup(c->c[i].type);
        x->zone = tlr_strdup(c->c[i].zone);
        x->capacity_type = c->c[i].ct;
        x->price_per_hour = c->c[i].price;
        x->disruption_cost = c->c[i].cost;
        d->candidates[d->n_candidates++] = x;
    }
    d->replacements = tlr_calloc(c->nrepl + 1, sizeof(*d->replacements));
    for (size_t i = 0; i < c->nrepl; i++)
        d->replacements[d->n_replacements++] = claim_copy(c->repl[i]);
    if (c->reason) {
        /* one BudgetUsage per pool the decision takes nodes from */
        d->budgets = tlr_calloc(c->n + 1, sizeof(*d->budgets));
        for (size_t i = 0; i < c->n; i++) {
            Tailor__V1__BudgetUsage *u = NULL;
            for (size_t k = 0; k < d->n_budgets; k++)
                if (!strcmp(d->budgets[k]->nodepool, c->c[i].pool))
                    u = d->budgets[k];
            if (!u) {
                u = tlr_malloc(sizeof(*u));
                tailor__v1__budget_usage__init(u);
                u->nodepool = tlr_strdup(c->c[i].pool);
                u->reason = c->reason;
                d->budgets[d->n_budgets++] = u;
            }
            u->consumed++;
        }
    }
    return d;
}
