/* patchcheck.c - per-node AMI decisions and their report (tlr_patchcheck.h). */
#include "tlr_patchcheck.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"
#include "tlr_time.h"


const char *tlr_pchk_state_name(tlr_pchk_state s)
{
    switch (s) {
    case TLR_PCHK_CURRENT: return "current";
    case TLR_PCHK_DRIFTED: return "drifted";
    case TLR_PCHK_UNKNOWN: return "unknown";
    case TLR_PCHK_UNMANAGED: return "unmanaged";
    }
    return "?";
}

static const char *label(Tailor__V1__Label *const *v, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i]->key, key))
            return v[i]->value;
    return NULL;
}

static int64_t extended(const Tailor__V1__ResourceList *r, const char *name)
{
    for (size_t i = 0; r && i < r->n_extended; i++)
        if (!strcmp(r->extended[i]->name, name))
            return r->extended[i]->value;
    return 0;
}

static void blocker(tlr_pchk_row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void blocker(tlr_pchk_row *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tlr_strv_vaddf(&r->blockers, &r->nblockers, fmt, ap);
    va_end(ap);
}

/* The value means "do not disrupt": "true", or a duration (Karpenter v1
 * accepts a grace period such as "30m"; until it passes it blocks too). */
static bool dnd_set(const char *v)
{
    int64_t ms;
    return v && (!strcmp(v, "true") || (tlr_duration_parse(v, &ms) == TLR_OK && ms > 0));
}

static void blockers(const tlr_pchk_in *in, tlr_pchk_row *r)
{
    const Tailor__V1__Node *n = in->node;
    if (dnd_set(label(n->annotations, n->n_annotations, TLR_ANNOTATION_DO_NOT_DISRUPT)))
        blocker(r, "node has %s", TLR_ANNOTATION_DO_NOT_DISRUPT);
    for (size_t i = 0; i < in->npods; i++) {
        const Tailor__V1__Pod *p = in->pods[i];
        if (p->is_daemonset || p->deletion_unix_ms ||
            p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED ||
            p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_FAILED)
            continue;   /* drains skip these; they do not hold a node */
        if (dnd_set(label(p->annotations, p->n_annotations, TLR_ANNOTATION_DO_NOT_DISRUPT)))
            blocker(r, "pod %s/%s has %s", p->namespace_, p->name, TLR_ANNOTATION_DO_NOT_DISRUPT);
        const Tailor__V1__PodDisruptionBudget *first = NULL;
        size_t matched = 0;
        char names[300] = "";
        for (size_t k = 0; k < in->npdbs; k++) {
            const Tailor__V1__PodDisruptionBudget *b = in->pdbs[k];
            if (strcmp(b->namespace_, p->namespace_) ||
                !tlr_ks_selector_matches(b->selector, p->labels, p->n_labels))
                continue;
            if (!first)
                first = b;
            matched++;
            snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                     matched > 1 ? ", " : "", b->name);
        }
        if (matched > 1)
            blocker(r, "pod %s/%s is selected by %zu PDBs (%s): the Eviction API refuses it",
                    p->namespace_, p->name, matched, names);
        else if (first && first->disruptions_allowed <= 0)
            blocker(r, "pod %s/%s: PDB %s allows 0 disruptions now", p->namespace_, p->name,
                    first->name);
    }
}

void tlr_pchk_decide(const tlr_pchk_in *in, tlr_pchk_row *r)
{
    const Tailor__V1__Node *n = in->node;
    memset(r, 0, sizeof(*r));
    r->node = tlr_strdup(n->name);
    r->nodepool = tlr_strdup(n->nodepool);
    r->nodeclass = tlr_strdup(in->nodeclass ? in->nodeclass : "");
    r->instance_id = tlr_strdup(in->instance_id ? in->instance_id : "");
    r->ami = tlr_strdup(in->ami ? in->ami : "");
    r->legacy = in->legacy;
    r->age_ms = n->creation_unix_ms > 0 && in->now_ms >= n->creation_unix_ms
                    ? in->now_ms - n->creation_unix_ms : -1;
    blockers(in, r);

    const char *arch = label(n->labels, n->n_labels, TLR_LABEL_ARCH);
    const char *variant = extended(n->capacity, "nvidia.com/gpu") > 0 ? "nvidia"
                          : extended(n->capacity, "aws.amazon.com/neuron") > 0 ? "neuron"
                                                                               : "standard";
    const tlr_ami *want = in->resolved ? tlr_amis_pick(in->resolved, arch, variant) : NULL;
    r->expected_ami = tlr_strdup(want ? want->id : "");
    r->expected_created_ms = want ? want->creation_ms : 0;
    char why[700];

    if (!in->nodeclass) {
        r->state = TLR_PCHK_UNMANAGED;
        r->reason = tlr_strdup("no NodePool: not launched by tailor or Karpenter (give "
                               "--legacy-nodeclass to compare it with a class)");
        return;
    }
    if (!in->ami) {
        r->state = TLR_PCHK_UNKNOWN;
        snprintf(why, sizeof(why), "its AMI is unknown: %s", in->ami_error ? in->ami_error : "?");
        r->reason = tlr_strdup(why);
        return;
    }
    if (!in->resolved) {
        r->state = TLR_PCHK_UNKNOWN;
        snprintf(why, sizeof(why), "EC2NodeClass %s: %s", in->nodeclass,
                 in->resolve_error ? in->resolve_error : "not resolved");
        r->reason = tlr_strdup(why);
        return;
    }
    if (!tlr_amis_find(in->resolved, in->ami)) {
        r->state = TLR_PCHK_DRIFTED;
        if (want)
            snprintf(why, sizeof(why), "runs %s; EC2NodeClass %s now resolves to %s%s%s%s",
                     in->ami, in->nodeclass, want->id, want->name[0] ? " (" : "", want->name,
                     want->name[0] ? ")" : "");
        else
            snprintf(why, sizeof(why), "runs %s; EC2NodeClass %s resolves to no AMI for %s",
                     in->ami, in->nodeclass, arch ? arch : "its architecture");
        r->reason = tlr_strdup(why);
        return;
    }
    if (in->pool_hash && in->node_pool_hash && in->pool_hash[0] && in->node_pool_hash[0] &&
        strcmp(in->pool_hash, in->node_pool_hash)) {
        r->state = TLR_PCHK_DRIFTED;
        snprintf(why, sizeof(why), "NodePool %s changed since the node was made (hash %s, "
                 "node %s)", n->nodepool, in->pool_hash, in->node_pool_hash);
        r->reason = tlr_strdup(why);
        return;
    }
    r->state = TLR_PCHK_CURRENT;
    r->reason = tlr_strdup("");
}

void tlr_pchk_row_free(tlr_pchk_row *r)
{
    if (!r)
        return;
    free(r->node);
    free(r->nodepool);
    free(r->nodeclass);
    free(r->instance_id);
    free(r->ami);
    free(r->expected_ami);
    free(r->reason);
    for (size_t i = 0; i < r->nblockers; i++)
        free(r->blockers[i]);
    free(r->blockers);
    memset(r, 0, sizeof(*r));
}

void tlr_pchk_summarize(const tlr_pchk_row *rows, size_t n, tlr_pchk_summary *s)
{
    memset(s, 0, sizeof(*s));
    s->nodes = n;
    for (size_t i = 0; i < n; i++) {
        const tlr_pchk_row *r = &rows[i];
        switch (r->state) {
        case TLR_PCHK_CURRENT: s->current++; break;
        case TLR_PCHK_DRIFTED: s->drifted++; break;
        case TLR_PCHK_UNKNOWN: s->unknown++; break;
        case TLR_PCHK_UNMANAGED: s->unmanaged++; break;
        }
        if (r->nblockers) {
            s->blocked++;
            s->drifted_blocked += r->state == TLR_PCHK_DRIFTED;
        }
    }
    size_t judged = s->current + s->drifted + s->unknown;
    s->compliance = judged ? 100.0 * (double)s->current / (double)judged : 100.0;
}

static void age_text(int64_t ms, char *buf, size_t len)
{
    if (ms < 0)
        snprintf(buf, len, "?");
    else if (ms >= 86400000LL)
        snprintf(buf, len, "%lldd", (long long)(ms / 86400000LL));
    else if (ms >= 3600000LL)
        snprintf(buf, len, "%lldh", (long long)(ms / 3600000LL));
    else
        snprintf(buf, len, "%lldm", (long long)(ms / 60000LL));
}

int tlr_pchk_text(const tlr_pchk_row *rows, size_t n, const tlr_pchk_summary *s,
                  double min_compliance, tlr_buf *out)
{
    tlr_buf_printf(out, "%-30s %-18s %-22s %-22s %-6s %-9s %s\n", "NODE", "NODEPOOL", "AMI",
                   "EXPECTED AMI", "AGE", "STATE", "BLOCKED BY");
    for (size_t i = 0; i < n; i++) {
        const tlr_pchk_row *r = &rows[i];
        char age[16];
        age_text(r->age_ms, age, sizeof(age));
        tlr_buf_printf(out, "%-30s %-18s %-22s %-22s %-6s %-9s %s\n", r->node,
                       r->nodepool[0] ? r->nodepool : r->legacy ? "(legacy)" : "-",
                       r->ami[0] ? r->ami : "?", r->expected_ami[0] ? r->expected_ami : "-",
                       age, tlr_pchk_state_name(r->state),
                       r->nblockers ? r->blockers[0] : "-");
        for (size_t k = 1; k < r->nblockers; k++)
            tlr_buf_printf(out, "%-30s %-18s %-22s %-22s %-6s %-9s %s\n", "", "", "", "", "", "",
                           r->blockers[k]);
        if (r->reason[0] && r->state != TLR_PCHK_CURRENT)
            tlr_buf_printf(out, "    %s\n", r->reason);
    }
    return tlr_buf_printf(out, "\n%zu nodes: %zu current, %zu drifted (%zu of them blocked), "
                          "%zu unknown, %zu unmanaged; %zu blocked in all. Compliance %.1f%% "
                          "(minimum %.1f%%): %s\n", s->nodes, s->current, s->drifted,
                          s->drifted_blocked, s->unknown, s->unmanaged, s->blocked,
                          s->compliance, min_compliance,
                          s->compliance + 1e-9 >= min_compliance ? "compliant" : "NOT COMPLIANT");
}

int tlr_pchk_json(const tlr_pchk_row *rows, size_t n, const tlr_pchk_summary *s,
                  double min_compliance, tlr_buf *out)
{
    json_object *o = json_object_new_object(), *sum = json_object_new_object(),
                *arr = json_object_new_array();
#define SUM(k, v) json_object_object_add(sum, k, json_object_new_int64((int64_t)(v)))
    SUM("nodes", s->nodes);
    SUM("current", s->current);
    SUM("drifted", s->drifted);
    SUM("unknown", s->unknown);
    SUM("unmanaged", s->unmanaged);
    SUM("blocked", s->blocked);
    SUM("drifted_blocked", s->drifted_blocked);
#undef SUM
    json_object_object_add(sum, "compliance_percent", json_object_new_double(s->compliance));
    json_object_object_add(o, "summary", sum);
    json_object_object_add(o, "min_compliance_percent", json_object_new_double(min_compliance));
    json_object_object_add(o, "compliant",
                           json_object_new_boolean(s->compliance + 1e-9 >= min_compliance));
    for (size_t i = 0; i < n; i++) {
        const tlr_pchk_row *r = &rows[i];
        json_object *e = json_object_new_object(), *b = json_object_new_array();
        json_object_object_add(e, "node", json_object_new_string(r->node));
        json_object_object_add(e, "nodepool", json_object_new_string(r->nodepool));
        json_object_object_add(e, "ec2nodeclass", json_object_new_string(r->nodeclass));
        json_object_object_add(e, "legacy", json_object_new_boolean(r->legacy));
        json_object_object_add(e, "instance_id", json_object_new_string(r->instance_id));
        json_object_object_add(e, "ami", json_object_new_string(r->ami));
        json_object_object_add(e, "expected_ami", json_object_new_string(r->expected_ami));
        json_object_object_add(e, "age_seconds",
                               json_object_new_int64(r->age_ms < 0 ? -1 : r->age_ms / 1000));
        if (r->expected_created_ms > 0) {
            char ts[40];
            tlr_time_format_s(r->expected_created_ms, ts);
            json_object_object_add(e, "expected_ami_created", json_object_new_string(ts));
        }
        json_object_object_add(e, "state", json_object_new_string(tlr_pchk_state_name(r->state)));
        json_object_object_add(e, "reason", json_object_new_string(r->reason));
        for (size_t k = 0; k < r->nblockers; k++)
            json_object_array_add(b, json_object_new_string(r->blockers[k]));
        json_object_object_add(e, "blocked_by", b);
        json_object_array_add(arr, e);
    }
    json_object_object_add(o, "nodes", arr);
    int rc = tlr_buf_adds(out, tlr_json_to_string(o, JSON_C_TO_STRING_PLAIN));
    if (rc == TLR_OK)
        rc = tlr_buf_addc(out, '\n');
    json_object_put(o);
    return rc;
}
