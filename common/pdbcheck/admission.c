/* admission.c - the PDB rules as a validating admission webhook's
 * decision, and the table / JSON output of findings.
 *
 * tlr_pdbc_admit is pure: the server (tailorctl pdb-check --serve) reads
 * the request, loads the namespace's pods, workloads and PDBs if it can
 * reach the API server, and hands both here.  The new PDB replaces the
 * stored one of the same name, the rules run, and only findings about
 * the new PDB count: blocks-eviction and multiple-pdbs refuse it (403,
 * with the rule's message), selects-no-pods lets it in with a warning
 * (a PDB is often created before its workload).
 *
 * Names are checked first (tlr_pdbc_review_names): the namespace must be
 * a DNS-1123 label and the object's name a DNS-1123 subdomain, as the API
 * server itself requires, because the server builds API paths from the
 * namespace.  A review that fails is answered "not allowed" (400 Invalid)
 * and no cluster lookup is made for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdbcheck_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"

const char *tlr_pdbc_review_namespace(json_object *review)
{
    const char *ns = tlr_json_str(review, "request.namespace");
    if (!ns || !ns[0])
        ns = tlr_json_str(review, "request.object.metadata.namespace");
    return ns && ns[0] ? ns : NULL;
}

bool tlr_pdbc_review_names(json_object *review, char *why, size_t whylen)
{
    static const struct { const char *path; bool label; } names[] = {
        { "request.namespace", true },
        { "request.object.metadata.namespace", true },
        { "request.oldObject.metadata.namespace", true },
        { "request.name", false },
        { "request.object.metadata.name", false },
        { "request.oldObject.metadata.name", false },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        json_object *v = NULL;
        if (!(v = tlr_json_get(review, names[i].path)) || json_object_is_type(v, json_type_null))
            continue;
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        if (s && !s[0])
            continue;   /* absent: a cluster-scoped request, or a name still to be generated */
        /* An embedded NUL would hide the rest of the string from the checks. */
        bool ok = s && (size_t)json_object_get_string_len(v) == strlen(s) &&
                  (names[i].label ? tlr_ks_dns1123_label(s, strlen(s)) : tlr_ks_dns1123_subdomain(s));
        if (!ok) {
            if (why && whylen)
                snprintf(why, whylen, "%s must be a DNS-1123 %s (lowercase letters, digits and "
                         "'-'%s; at most %d characters)", names[i].path,
                         names[i].label ? "label" : "subdomain",
                         names[i].label ? "" : ", dot-separated", names[i].label ? 63 : 253);
            return false;
        }
    }
    return true;
}

static void fail(char *err, size_t len, const char *msg)
{
    if (err && len)
        snprintf(err, len, "%s", msg);
}

static bool involves(const tlr_pdbc_finding *f, const char *name)
{
    for (size_t i = 0; i < f->npdbs; i++)
        if (!strcmp(f->pdbs[i], name))
            return true;
    return false;
}

int tlr_pdbc_admit(json_object *review, const tlr_pdbc *cluster, char **response, char *err,
                   size_t errlen)
{
    const char *api = tlr_json_str(review, "apiVersion"), *kind = tlr_json_str(review, "kind");
    const char *uid = tlr_json_str(review, "request.uid");
    if (!api || strcmp(api, "admission.k8s.io/v1") || !kind || strcmp(kind, "AdmissionReview")) {
        fail(err, errlen, "not an admission.k8s.io/v1 AdmissionReview");
        return TLR_E_PARSE;
    }
    if (!uid || !uid[0]) {
        fail(err, errlen, "request.uid is missing");
        return TLR_E_PARSE;
    }
    const char *op = tlr_json_str(review, "request.operation");
    const char *rk = tlr_json_str(review, "request.kind.kind");
    json_object *obj = tlr_json_obj(review, "request.object");
    bool allowed = true;
    char message[1200] = "";
    json_object *warnings = json_object_new_array();
    int code = 403;
    const char *reason = "Forbidden";

    if (!tlr_pdbc_review_names(review, message, sizeof(message))) {
        allowed = false;
        code = 400;
        reason = "Invalid";
    } else if (rk && !strcmp(rk, "PodDisruptionBudget") && op &&
        (!strcmp(op, "CREATE") || !strcmp(op, "UPDATE")) && obj) {
        Tailor__V1__PodDisruptionBudget *p = NULL;
        char perr[TLR_KUBEOBJ_ERRLEN];
        const char *ns = tlr_pdbc_review_namespace(review);
        tlr_kubeobj_opts ko = { .default_namespace = ns ? ns : "default" };
        if (tlr_kubeobj_pdb(obj, &ko, &p, perr, sizeof(perr)) != TLR_OK) {
            allowed = false;
            snprintf(message, sizeof(message), "%s", perr);
        } else {
            tlr_pdbc *empty = NULL;
            const tlr_pdbc *c = cluster;
            if (!c) {
                tlr_pdbc_create(TLR_PDBC_LIVE, &empty);
                c = empty;
            }
            Tailor__V1__PodDisruptionBudget **list = tlr_calloc(c->npdbs + 2, sizeof(*list));
            size_t n = 0;
            for (size_t i = 0; i < c->npdbs; i++) {
                const Tailor__V1__PodDisruptionBudget *q = c->pdbs[i].p;
                if (strcmp(q->namespace_, p->namespace_) || strcmp(q->name, p->name))
                    list[n++] = c->pdbs[i].p;
            }
            list[n++] = p;
            tlr_pdbc_findings f = { 0 };
            pdbc_run(c, list, n, &f);
            for (size_t i = 0; i < f.n; i++) {
                const tlr_pdbc_finding *x = &f.v[i];
                if (!involves(x, p->name) || strcmp(x->ns, p->namespace_))
                    continue;
                char line[1100];
                snprintf(line, sizeof(line), "%s: %s%s%s", tlr_pdbc_rule_name(x->rule),
                         strcmp(x->kind, "PodDisruptionBudget") ? x->kind : "",
                         strcmp(x->kind, "PodDisruptionBudget") ? " " : "", x->message);
                if (x->rule == TLR_PDBC_SELECTS_NO_PODS && cluster) {
                    json_object_array_add(warnings, json_object_new_string(line));
                } else if (tlr_pdbc_rule_is_error(x->rule) && allowed) {
                    allowed = false;
                    snprintf(message, sizeof(message), "PodDisruptionBudget %s/%s: %s",
                             p->namespace_, p->name, line);
                }
            }
            tlr_pdbc_findings_free(&f);
            free(list);
            tlr_pdbc_free(empty);
            tlr_kubeobj_free(p);
        }
    }

    json_object *out = json_object_new_object(), *resp = json_object_new_object();
    json_object_object_add(out, "apiVersion", json_object_new_string("admission.k8s.io/v1"));
    json_object_object_add(out, "kind", json_object_new_string("AdmissionReview"));
    json_object_object_add(resp, "uid", json_object_new_string(uid));
    json_object_object_add(resp, "allowed", json_object_new_boolean(allowed));
    if (!allowed) {
        json_object *st = json_object_new_object();
        json_object_object_add(st, "code", json_object_new_int(code));
        json_object_object_add(st, "reason", json_object_new_string(reason));
        json_object_object_add(st, "message", json_object_new_string(message));
        json_object_object_add(resp, "status", st);
    }
    if (json_object_array_length(warnings) > 0)
        json_object_object_add(resp, "warnings", warnings);
    else
        json_object_put(warnings);
    json_object_object_add(out, "response", resp);
    *response = tlr_strdup(tlr_json_to_string(out, JSON_C_TO_STRING_PLAIN));
    json_object_put(out);
    return TLR_OK;
}

/* ---- output ------------------------------------------------------------------ */

static size_t count_errors(const tlr_pdbc_findings *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += tlr_pdbc_rule_is_error(f->v[i].rule);
    return n;
}

int tlr_pdbc_findings_text(const tlr_pdbc *c, const tlr_pdbc_findings *f, tlr_buf *out)
{
    size_t ne = count_errors(f);
    tlr_buf_printf(out, "%zu PDBs, %zu pods, %zu workloads: %zu error%s, %zu warning%s\n",
                   c->npdbs, tlr_pdbc_count_pods(c), c->nwl, ne, ne == 1 ? "" : "s", f->n - ne,
                   f->n - ne == 1 ? "" : "s");
    if (f->n == 0)
        return tlr_buf_adds(out, "No PDB blocks draining.\n");
    tlr_buf_printf(out, "%-28s %-8s %-16s %s\n", "RULE", "SEVERITY", "NAMESPACE", "OBJECT");
    for (size_t i = 0; i < f->n; i++) {
        const tlr_pdbc_finding *x = &f->v[i];
        tlr_buf_printf(out, "%-28s %-8s %-16s %s/%s\n    %s\n", tlr_pdbc_rule_name(x->rule),
                       tlr_pdbc_rule_is_error(x->rule) ? "error" : "warning", x->ns, x->kind,
                       x->name, x->message);
    }
    return TLR_OK;
}

int tlr_pdbc_findings_json(const tlr_pdbc *c, const tlr_pdbc_findings *f, tlr_buf *out)
{
    json_object *o = json_object_new_object(), *arr = json_object_new_array();
    size_t ne = count_errors(f);
    json_object_object_add(o, "pdbs", json_object_new_int64((int64_t)c->npdbs));
    json_object_object_add(o, "pods", json_object_new_int64((int64_t)tlr_pdbc_count_pods(c)));
    json_object_object_add(o, "workloads", json_object_new_int64((int64_t)c->nwl));
    json_object_object_add(o, "errors", json_object_new_int64((int64_t)ne));
    json_object_object_add(o, "warnings", json_object_new_int64((int64_t)(f->n - ne)));
    for (size_t i = 0; i < f->n; i++) {
        const tlr_pdbc_finding *x = &f->v[i];
        json_object *e = json_object_new_object(), *p = json_object_new_array();
        json_object_object_add(e, "rule", json_object_new_string(tlr_pdbc_rule_name(x->rule)));
        json_object_object_add(e, "severity", json_object_new_string(
                                                  tlr_pdbc_rule_is_error(x->rule) ? "error"
                                                                                  : "warning"));
        json_object_object_add(e, "kind", json_object_new_string(x->kind));
        json_object_object_add(e, "namespace", json_object_new_string(x->ns));
        json_object_object_add(e, "name", json_object_new_string(x->name));
        for (size_t k = 0; k < x->npdbs; k++)
            json_object_array_add(p, json_object_new_string(x->pdbs[k]));
        json_object_object_add(e, "pdbs", p);
        json_object_object_add(e, "pods", json_object_new_int64(x->pods));
        json_object_object_add(e, "message", json_object_new_string(x->message));
        json_object_array_add(arr, e);
    }
    json_object_object_add(o, "findings", arr);
    int rc = tlr_buf_adds(out, tlr_json_to_string(o, JSON_C_TO_STRING_PLAIN));
    if (rc == TLR_OK)
        rc = tlr_buf_addc(out, '\n');
    json_object_put(o);
    return rc;
}
