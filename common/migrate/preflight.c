/* preflight.c - what must hold before a migration moves anything
 * (tlr_migrate.h): the AMIs tailor's nodes will boot, whether its
 * NodePools can hold the legacy nodes' pods, and the rendering of the
 * checks as a table or JSON.
 *
 * AMI rules, per NodePool and the EC2NodeClass it names:
 *   ami-resolves    the class exists and its amiSelectorTerms resolve to at
 *                   least one image;
 *   ami-arch        every architecture the pool allows (its
 *                   kubernetes.io/arch requirement) has an image; a pool
 *                   that does not say needs an image of at least one;
 *   ami-deprecated  no image it would boot has a DeprecationTime in the
 *                   past (one in the future is a warning);
 *   ami-age         no image it would boot is older (CreationDate) than the
 *                   newest image of the same architecture a legacy node
 *                   runs: a migration must not roll the fleet back.
 * "Would boot": the images of the architectures the pool allows.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate_int.h"
#include "tlr_alloc.h"
#include "tlr_labels.h"
#include "tlr_time.h"


void tlr_mig_checks_add(tlr_mig_checks *c, const char *check, const char *object,
                        tlr_mig_result r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = tlr_vstrdupf(fmt, ap);
    va_end(ap);
    TLR_GROW(c->v, c->cap, c->n + 1);
    c->v[c->n++] = (tlr_mig_check){ tlr_strdup(check), tlr_strdup(object ? object : ""), r, msg };
}

void tlr_mig_checks_free(tlr_mig_checks *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].check);
        free(c->v[i].object);
        free(c->v[i].message);
    }
    free(c->v);
    memset(c, 0, sizeof(*c));
}

size_t tlr_mig_checks_count(const tlr_mig_checks *c, tlr_mig_result r)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        n += c->v[i].result == r;
    return n;
}

void tlr_mig_pool_archs(const Tailor__V1__NodePool *p, bool *amd64, bool *arm64,
                        bool *constrained)
{
    *amd64 = *arm64 = true;
    *constrained = false;
    for (size_t i = 0; i < p->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = p->requirements[i];
        if (strcmp(r->key, TLR_LABEL_ARCH) != 0)
            continue;
        bool has_amd = false, has_arm = false;
        for (size_t k = 0; k < r->n_values; k++) {
            has_amd |= strcmp(r->values[k], "amd64") == 0;
            has_arm |= strcmp(r->values[k], "arm64") == 0;
        }
        switch (r->operator_) {
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN:
            *amd64 &= has_amd;
            *arm64 &= has_arm;
            *constrained = true;
            break;
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN:
            *amd64 &= !has_amd;
            *arm64 &= !has_arm;
            *constrained = true;
            break;
        case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST:
            *amd64 = *arm64 = false;
            *constrained = true;
            break;
        default:
            break;
        }
    }
}

static void day(int64_t ms, char *buf)
{
    if (ms <= 0) {
        snprintf(buf, TLR_TIME_BUFLEN, "an unknown date");
        return;
    }
    tlr_time_format_s(ms, buf);
}

static const char *arch_list(const tlr_amis *a, const char *arch, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < a->n && at + 1 < len; i++) {
        if (arch && strcmp(a->v[i].arch, arch) != 0)
            continue;
        int w = snprintf(buf + at, len - at, "%s%s (%s)", at ? ", " : "", a->v[i].id,
                         a->v[i].arch[0] ? a->v[i].arch : "unknown arch");
        if (w < 0 || (size_t)w >= len - at)
            break;
        at += (size_t)w;
    }
    return buf;
}

void tlr_mig_check_pool(const tlr_mig_pool_in *in, tlr_mig_checks *out)
{
    char obj[600], list[1024], d1[TLR_TIME_BUFLEN], d2[TLR_TIME_BUFLEN];
    const char *pool = in->pool->name;
    snprintf(obj, sizeof(obj), "NodePool %s (EC2NodeClass %s)", pool,
             in->nodeclass ? in->nodeclass : "?");
    if (!in->class_found) {
        tlr_mig_checks_add(out, "ami-resolves", obj, TLR_MIG_FAIL,
                           "EC2NodeClass %s does not exist: the NodePool cannot launch",
                           in->nodeclass ? in->nodeclass : "(none named)");
        return;
    }
    if (in->amis == NULL || in->amis->n == 0) {
        tlr_mig_checks_add(out, "ami-resolves", obj, TLR_MIG_FAIL, "amiSelectorTerms resolve to "
                           "no image: %s", in->resolve_error && in->resolve_error[0]
                                               ? in->resolve_error : "nothing matched");
        return;
    }
    tlr_mig_checks_add(out, "ami-resolves", obj, TLR_MIG_PASS, "resolves to %zu image%s: %s",
                       in->amis->n, in->amis->n == 1 ? "" : "s",
                       arch_list(in->amis, NULL, list, sizeof(list)));

    bool amd, arm, constrained;
    tlr_mig_pool_archs(in->pool, &amd, &arm, &constrained);
    const char *archs[2];
    size_t narchs = 0;
    if (amd)
        archs[narchs++] = "amd64";
    if (arm)
        archs[narchs++] = "arm64";
    if (narchs == 0) {
        tlr_mig_checks_add(out, "ami-arch", obj, TLR_MIG_FAIL, "its %s requirement allows "
                           "neither amd64 nor arm64", TLR_LABEL_ARCH);
        return;
    }
    size_t covered = 0;
    bool arch_fail = false;
    for (size_t k = 0; k < narchs; k++) {
        bool have = tlr_amis_pick(in->amis, archs[k], "standard") != NULL;
        covered += have;
        if (!have && constrained) {
            tlr_mig_checks_add(out, "ami-arch", obj, TLR_MIG_FAIL,
                               "the NodePool allows %s but EC2NodeClass %s resolves to no %s "
                               "image (it resolves to %s): its %s nodes could not boot",
                               archs[k], in->nodeclass, archs[k],
                               arch_list(in->amis, NULL, list, sizeof(list)), archs[k]);
            arch_fail = true;
        }
    }
    if (covered == 0 && !constrained) {
        tlr_mig_checks_add(out, "ami-arch", obj, TLR_MIG_FAIL, "EC2NodeClass %s resolves to no "
                           "amd64 or arm64 image (%s)", in->nodeclass,
                           arch_list(in->amis, NULL, list, sizeof(list)));
        arch_fail = true;
    } else if (!arch_fail) {
        tlr_mig_checks_add(out, "ami-arch", obj, TLR_MIG_PASS, "%s%s%s covered%s", archs[0],
                           narchs > 1 ? ", " : "", narchs > 1 ? archs[1] : "",
                           !constrained && covered < narchs ? " (the pool does not constrain "
                           TLR_LABEL_ARCH "; it launches only the covered one)" : "");
    }

    /* The images it would boot: those of the allowed architectures. */
    size_t dep_fail = 0, dep_warn = 0, age_fail = 0, age_unknown = 0, judged = 0;
    for (size_t i = 0; i < in->amis->n; i++) {
        const tlr_ami *a = &in->amis->v[i];
        bool allowed = (amd && strcmp(a->arch, "amd64") == 0) ||
                       (arm && strcmp(a->arch, "arm64") == 0);
        if (!allowed)
            continue;
        judged++;
        if (a->deprecation_ms > 0 && a->deprecation_ms <= in->now_ms) {
            day(a->deprecation_ms, d1);
            tlr_mig_checks_add(out, "ami-deprecated", obj, TLR_MIG_FAIL,
                               "%s%s%s%s is deprecated since %s", a->id, a->name[0] ? " (" : "",
                               a->name, a->name[0] ? ")" : "", d1);
            dep_fail++;
        } else if (a->deprecation_ms > 0) {
            day(a->deprecation_ms, d1);
            tlr_mig_checks_add(out, "ami-deprecated", obj, TLR_MIG_WARN,
                               "%s will be deprecated on %s", a->id, d1);
            dep_warn++;
        }
        /* The newest image of this arch any legacy node runs. */
        const tlr_mig_legacy_ami *newest = NULL;
        for (size_t l = 0; l < in->nlegacy; l++) {
            const tlr_mig_legacy_ami *g = &in->legacy[l];
            if (g->image == NULL || strcmp(g->image->arch, a->arch) != 0 ||
                g->image->creation_ms <= 0)
                continue;
            if (newest == NULL || g->image->creation_ms > newest->image->creation_ms)
                newest = g;
        }
        if (newest == NULL)
            continue;
        if (a->creation_ms <= 0) {
            tlr_mig_checks_add(out, "ami-age", obj, TLR_MIG_WARN, "%s has no CreationDate: it "
                               "cannot be compared with the legacy nodes' %s", a->id,
                               newest->image->id);
            age_unknown++;
        } else if (a->creation_ms < newest->image->creation_ms) {
            day(a->creation_ms, d1);
            day(newest->image->creation_ms, d2);
            tlr_mig_checks_add(out, "ami-age", obj, TLR_MIG_FAIL,
                               "%s (created %s) is older than %s (created %s), which legacy "
                               "node %s runs: the migration would roll %s nodes back",
                               a->id, d1, newest->image->id, d2, newest->node, a->arch);
            age_fail++;
        }
    }
    if (dep_fail == 0 && dep_warn == 0 && judged > 0)
        tlr_mig_checks_add(out, "ami-deprecated", obj, TLR_MIG_PASS, "no image it boots is "
                           "deprecated");
    bool any_legacy = false;
    for (size_t l = 0; l < in->nlegacy; l++)
        any_legacy |= in->legacy[l].image != NULL;
    if (age_fail == 0 && age_unknown == 0 && judged > 0)
        tlr_mig_checks_add(out, "ami-age", obj, any_legacy ? TLR_MIG_PASS : TLR_MIG_WARN,
                           any_legacy ? "every image it boots is at least as new as the legacy "
                                        "nodes' of the same architecture"
                                      : "the legacy nodes' images are unknown: not compared");
}

void tlr_mig_check_coverage(const Tailor__V1__SolveResponse *r, size_t pods,
                            tlr_mig_checks *out)
{
    if (r->n_pod_errors == 0) {
        size_t on_new = 0;
        for (size_t i = 0; i < r->n_new_nodeclaims; i++)
            on_new += r->new_nodeclaims[i]->n_planned_pod_uids;
        tlr_mig_checks_add(out, "coverage", "legacy pods", TLR_MIG_PASS,
                           "all %zu pods fit: %zu on tailor's nodes now, %zu on %zu new "
                           "node%s ($%.4f/hour)%s", pods, r->n_bindings, on_new,
                           r->n_new_nodeclaims, r->n_new_nodeclaims == 1 ? "" : "s",
                           r->total_cost_per_hour, r->timed_out ? "; the solve timed out" : "");
        return;
    }
    for (size_t i = 0; i < r->n_pod_errors; i++) {
        const Tailor__V1__PodError *e = r->pod_errors[i];
        char obj[600], reasons[1400];
        size_t at = 0;
        reasons[0] = '\0';
        for (size_t k = 0; k < e->n_reasons && at + 1 < sizeof(reasons); k++) {
            int w = snprintf(reasons + at, sizeof(reasons) - at, "%s%s%s%s", at ? "; " : "",
                             e->reasons[k]->nodepool[0] ? e->reasons[k]->nodepool : "",
                             e->reasons[k]->nodepool[0] ? ": " : "", e->reasons[k]->reason);
            if (w < 0 || (size_t)w >= sizeof(reasons) - at)
                break;
            at += (size_t)w;
        }
        snprintf(obj, sizeof(obj), "pod %s/%s", e->namespace_, e->name);
        const char *msg = e->status && e->status->message[0] ? e->status->message
                          : e->status && e->status->reason[0] ? e->status->reason
                          : "unschedulable";
        tlr_mig_checks_add(out, "coverage", obj, TLR_MIG_FAIL, "no NodePool can run it: %s%s%s",
                           msg, reasons[0] ? "; " : "", reasons);
    }
}

static const char *result_name(tlr_mig_result r)
{
    return r == TLR_MIG_FAIL ? "FAIL" : r == TLR_MIG_WARN ? "WARN" : "PASS";
}

void tlr_mig_checks_text(const tlr_mig_checks *c, const char *context, tlr_buf *b)
{
    size_t wc = 5, wo = 6;
    for (size_t i = 0; i < c->n; i++) {
        if (strlen(c->v[i].check) > wc)
            wc = strlen(c->v[i].check);
        if (strlen(c->v[i].object) > wo)
            wo = strlen(c->v[i].object);
    }
    if (wo > 48)
        wo = 48;
    if (context)
        tlr_buf_printf(b, "Cluster %s\n", context);
    tlr_buf_printf(b, "%-6s %-*s %-*s %s\n", "RESULT", (int)wc, "CHECK", (int)wo, "OBJECT",
                   "MESSAGE");
    for (size_t i = 0; i < c->n; i++)
        tlr_buf_printf(b, "%-6s %-*s %-*s %s\n", result_name(c->v[i].result), (int)wc,
                       c->v[i].check, (int)wo, c->v[i].object, c->v[i].message);
    size_t f = tlr_mig_checks_count(c, TLR_MIG_FAIL), w = tlr_mig_checks_count(c, TLR_MIG_WARN);
    tlr_buf_printf(b, "%zu checks: %zu passed, %zu warnings, %zu failed: %s\n", c->n,
                   c->n - f - w, w, f, f ? "NOT READY, nothing was touched" : "ready to migrate");
}

void tlr_mig_checks_json(const tlr_mig_checks *c, const char *context, tlr_buf *b)
{
    size_t f = tlr_mig_checks_count(c, TLR_MIG_FAIL), w = tlr_mig_checks_count(c, TLR_MIG_WARN);
    tlr_buf_adds(b, "{");
    if (context) {
        tlr_buf_adds(b, "\"cluster\":");
        tlr_buf_add_json_str(b, context);
        tlr_buf_adds(b, ",");
    }
    tlr_buf_printf(b, "\"ok\":%s,\"passed\":%zu,\"warnings\":%zu,\"failed\":%zu,\"checks\":[",
                   f ? "false" : "true", c->n - f - w, w, f);
    for (size_t i = 0; i < c->n; i++) {
        tlr_buf_adds(b, i ? ",{\"check\":" : "{\"check\":");
        tlr_buf_add_json_str(b, c->v[i].check);
        tlr_buf_adds(b, ",\"object\":");
        tlr_buf_add_json_str(b, c->v[i].object);
        tlr_buf_printf(b, ",\"result\":\"%s\",\"message\":", result_name(c->v[i].result));
        tlr_buf_add_json_str(b, c->v[i].message);
        tlr_buf_adds(b, "}");
    }
    tlr_buf_adds(b, "]}");
}
