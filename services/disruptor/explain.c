/* explain.c - the Explain request (explain.h). */
#include "explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidates.h"
#include "methods.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

static Tailor__V1__Blocker *blocker(Tailor__V1__BlockerKind kind, const char *okind, const char *ns,
                                    const char *name, const char *msg, int64_t until)
{
    Tailor__V1__Blocker *b = tlr_malloc(sizeof(*b));
    tailor__v1__blocker__init(b);
    b->kind = kind;
    b->object = tlr_malloc(sizeof(*b->object));
    tailor__v1__object_ref__init(b->object);
    b->object->kind = tlr_strdup(okind);
    b->object->namespace_ = tlr_strdup(ns ? ns : "");
    b->object->name = tlr_strdup(name);
    b->message = tlr_strdup(msg);
    b->until_unix_ms = until;
    return b;
}

static void add_blocker(Tailor__V1__ExplainResponse *r, Tailor__V1__Blocker *b)
{
    r->blockers = tlr_realloc(r->blockers, (r->n_blockers + 1) * sizeof(*r->blockers));
    r->blockers[r->n_blockers++] = b;
}

static void add_method(Tailor__V1__ExplainResponse *r, Tailor__V1__DisruptionMethod m)
{
    r->eligible_methods = tlr_realloc(r->eligible_methods,
                                      (r->n_eligible_methods + 1) * sizeof(*r->eligible_methods));
    r->eligible_methods[r->n_eligible_methods++] = m;
}

int ds_explain(ds_ctl *ctl, const ds_term *term, const Tailor__V1__ExplainRequest *req,
               Tailor__V1__ExplainResponse **out, char *err, size_t errlen)
{
    ds_view *v = NULL;
    int rc = ds_ctl_view(ctl, &v);
    if (rc) {
        snprintf(err, errlen, "no cluster state from the watcher: %s", tlr_strerror(rc));
        return rc;
    }
    ds_vnode *x = NULL;
    if (req->target_case == TAILOR__V1__EXPLAIN_REQUEST__TARGET_NODE_NAME)
        x = ds_view_node(v, req->node_name);
    else if (req->target_case == TAILOR__V1__EXPLAIN_REQUEST__TARGET_NODECLAIM_NAME)
        x = ds_view_node_of_claim(v, req->nodeclaim_name);
    if (!x) {
        snprintf(err, errlen, "no node %s in the watcher's state",
                 req->target_case == TAILOR__V1__EXPLAIN_REQUEST__TARGET_NODECLAIM_NAME
                     ? req->nodeclaim_name : req->node_name);
        ds_view_free(v);
        return TLR_E_NOTFOUND;
    }
    Tailor__V1__ExplainResponse *r = tlr_malloc(sizeof(*r));
    tailor__v1__explain_response__init(r);
    r->node_name = tlr_strdup(x->node->name);
    r->nodeclaim_name = tlr_strdup(x->claim ? x->claim->name : x->node->nodeclaim_name);
    r->nodepool = tlr_strdup(x->node->nodepool);
    r->evaluated_unix_ms = v->now_ms;

    ds_budgets b;
    ds_sim sim;
    ds_mctx m;
    ds_ctl_mctx(ctl, v, &b, &sim, &m);
    ds_blockers bl;
    ds_candidate_check(v, x, DS_USE_CONSOLIDATION, &bl);
    size_t shown = bl.n < sizeof(bl.v) / sizeof(bl.v[0]) ? bl.n : sizeof(bl.v) / sizeof(bl.v[0]);
    for (size_t i = 0; i < shown; i++)
        add_blocker(r, blocker(bl.v[i].kind, bl.v[i].obj_kind, bl.v[i].obj_ns, bl.v[i].obj_name,
                               bl.v[i].message, bl.v[i].until_ms));
    if (bl.n > shown) {
        char msg[96];
        snprintf(msg, sizeof(msg), "and %zu more blockers", bl.n - shown);
        add_blocker(r, blocker(bl.v[shown - 1].kind, "Node", "", x->node->name, msg, 0));
    }
    Tailor__V1__DisruptionReason reason = x->moving ? TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_UNDERUTILIZED
                                                    : TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_EMPTY;
    const ds_pool_budget *pb = ds_budgets_pool(&b, x->node->nodepool);
    if (pb && x->pool && !x->disrupting && ds_budgets_left(&b, x->node->nodepool, reason) < 1) {
        char msg[400];
        snprintf(msg, sizeof(msg), "NodePool %s's %s budget is spent: %s allows %d of %d nodes, %d "
                 "already disrupting or NotReady", x->node->nodepool, ds_reason_name(reason),
                 pb->why[reason][0] ? pb->why[reason] : "its budgets", pb->allowed[reason], pb->total,
                 pb->disrupting);
        add_blocker(r, blocker(TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_BUDGET, "NodePool", "",
                               x->node->nodepool, msg, 0));
    }
    r->disruptable = r->n_blockers == 0;

    int64_t exp_at = 0;
    if (ds_expired(x, v->now_ms, &exp_at))
        add_method(r, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EXPIRATION);
    char why[512];
    ds_blockers dbl;
    if (ds_candidate_check(v, x, DS_USE_DRIFT, &dbl) && ds_drifted(&m, x, why, sizeof(why)) != DS_DRIFT_NONE)
        add_method(r, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_DRIFT);
    if (r->disruptable && !x->moving)
        add_method(r, TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EMPTINESS);

    const ds_cmd *held = ds_ctl_command_for(ctl, x->node->name);
    if (held) {
        r->decision = ds_cmd_decision(held);
        r->savings_per_hour = held->savings;
    } else if (req->simulate && x->moving && x->pool && v->catalog) {
        ds_cmd *c = ds_consolidation_evaluate(&m, &x, 1, why, sizeof(why));
        if (c) {
            r->decision = ds_cmd_decision(c);
            r->decision->state = TAILOR__V1__DECISION_STATE__DECISION_STATE_UNSPECIFIED;   /* hypothetical */
            r->savings_per_hour = c->savings;
            if (r->disruptable)
                add_method(r, c->method);
            ds_cmd_free(c);
        } else {
            bool fit = !strstr(why, "no replacement saves");
            add_blocker(r, blocker(fit ? TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_PODS_WOULD_NOT_FIT
                                       : TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_NO_CHEAPER_REPLACEMENT,
                                   "Node", "", x->node->name, why, 0));
            r->disruptable = false;
        }
    }
    char st[1024];
    if (term && x->claim && ds_term_status(term, x->claim->name, st, sizeof(st)) && st[0])
        add_blocker(r, blocker(TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_ALREADY_DISRUPTING, "NodeClaim", "",
                               x->claim->name, st, 0));
    ds_budgets_clear(&b);
    ds_view_free(v);
    *out = r;
    return TLR_OK;
}
