/* migrate_waves.c - tailorctl migrate ... --plan-file: many clusters
 * (kubeconfig contexts) in waves, low-risk environments first, with a gate
 * before each wave after the first (common/migrate/planfile.c decides):
 *
 *   requireDone  every cluster of every earlier wave has a Done checkpoint;
 *   wait         a soak time since the last of them finished;
 *   approval     --approve-wave NAME on the command line (a CI job's manual
 *                approval step passes it).
 * A closed gate exits 5 (a soak within --gate-timeout is slept through
 * unless --no-wait-gates).  Clusters already Done are skipped, so the same
 * command can be run again and again until every wave is through.
 *
 * Every cluster keeps its own checkpoint in its own cluster; the plan
 * file holds no state.  The result (stdout) is one document: the waves'
 * status, or every cluster's checks for plan.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migctl.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_time.h"

#define PLAN_FILE_MAX (4u << 20)

/* cfg with cluster k's settings over it (strings borrowed from both). */
static void cluster_cfg(const mig_cfg *base, const tlr_mig_cluster *k, mig_cfg *out)
{
    *out = *base;
    out->name = k->name;
    out->selector = k->selector;
    out->asg = k->asg;
    if (k->context)
        out->context = k->context;
    if (k->kubeconfig)
        out->kubeconfig = k->kubeconfig;
    if (k->region)
        out->region = k->region;
    if (k->aws_endpoint)
        out->endpoint = k->aws_endpoint;
    if (k->k8s_version)
        out->k8s = k->k8s_version;
    if (k->catalog)
        out->catalog = k->catalog;
    if (k->batch > 0)
        out->batch = k->batch;
    if (k->max_pending >= 0)
        out->max_pending = k->max_pending;
    if (k->max_nodes >= 0)
        out->max_nodes = k->max_nodes;
    if (k->drain_timeout_ms > 0)
        out->drain_timeout_ms = k->drain_timeout_ms;
    if (k->ready_timeout_ms > 0)
        out->ready_timeout_ms = k->ready_timeout_ms;
    if (k->health_timeout_ms > 0)
        out->health_timeout_ms = k->health_timeout_ms;
    if (k->remove_timeout_ms > 0)
        out->remove_timeout_ms = k->remove_timeout_ms;
}

static int read_plan(const char *path, tlr_mig_plan *p)
{
    FILE *f = fopen(path, "rb");
    char err[768];
    if (f == NULL) {
        fprintf(stderr, "tailorctl migrate: %s: %s\n", path, strerror(errno));
        return TLR_E_IO;
    }
    tlr_buf b;
    tlr_buf_init(&b, PLAN_FILE_MAX);
    char chunk[65536];
    size_t n;
    int rc = TLR_OK;
    while (rc == TLR_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = tlr_buf_add(&b, chunk, n);
    fclose(f);
    if (rc != TLR_OK) {
        fprintf(stderr, "tailorctl migrate: %s: larger than %u MiB\n", path, PLAN_FILE_MAX >> 20);
        tlr_buf_free(&b);
        return rc;
    }
    rc = tlr_mig_plan_parse(tlr_buf_str(&b), b.len, path, p, err, sizeof(err));
    if (rc != TLR_OK)
        fprintf(stderr, "tailorctl migrate: %s\n", err);
    tlr_buf_free(&b);
    return rc;
}

static bool approved(const mig_cfg *cfg, const char *wave)
{
    for (size_t i = 0; i < cfg->approve.n; i++)
        if (strcmp(cfg->approve.items[i], wave) == 0)
            return true;
    return false;
}

/* One cluster's checkpoint, for the status and the gates. */
typedef struct cstate {
    bool found;
    tlr_mig_state s;
    char err[512];
} cstate;

static void read_cstate(const mig_cfg *cfg, const tlr_mig_cluster *k, cstate *out)
{
    mig_cfg kc;
    memset(out, 0, sizeof(*out));
    cluster_cfg(cfg, k, &kc);
    int rc = mig_read_state(&kc, &out->s, out->err, sizeof(out->err));
    out->found = rc == TLR_OK;
    if (rc == TLR_E_NOTFOUND)
        snprintf(out->err, sizeof(out->err), "not started");
}

static void earlier_of(const mig_cfg *cfg, const tlr_mig_plan *p, size_t upto,
                       tlr_mig_waves_done *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t w = 0; w < upto; w++)
        for (size_t i = 0; i < p->waves[w].nclusters; i++) {
            cstate cs;
            read_cstate(cfg, &p->waves[w].clusters[i], &cs);
            out->clusters++;
            if (cs.found && cs.s.phase == TLR_MIG_PHASE_DONE) {
                out->done++;
                if (cs.s.finished_ms > out->finished_ms)
                    out->finished_ms = cs.s.finished_ms;
            }
            tlr_mig_state_clear(&cs.s);
        }
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- the summary ------------------------------------------------------------ */

static void status_doc(const mig_cfg *cfg, const tlr_mig_plan *p, tlr_buf *b)
{
    bool json = cfg->output == 1;
    if (json) {
        tlr_buf_adds(b, "{\"plan\":");
        tlr_buf_add_json_str(b, p->name);
        tlr_buf_adds(b, ",\"waves\":[");
    } else {
        tlr_buf_printf(b, "Plan %s: %zu waves\n%-12s %-20s %-20s %-10s %-7s %s\n", p->name,
                       p->nwaves, "WAVE", "CLUSTER", "CONTEXT", "PHASE", "NODES", "MESSAGE");
    }
    bool firstw = true;
    for (size_t w = 0; w < p->nwaves; w++) {
        const tlr_mig_wave *wv = &p->waves[w];
        if (cfg->wave && strcmp(cfg->wave, wv->name) != 0)
            continue;
        if (json) {
            char d[32];
            tlr_duration_format(wv->gate.wait_ms, d, sizeof(d));
            tlr_buf_adds(b, firstw ? "{\"name\":" : ",{\"name\":");
            tlr_buf_add_json_str(b, wv->name);
            tlr_buf_printf(b, ",\"gate\":{\"require_done\":%s,\"wait\":\"%s\",\"approval\":%s},"
                           "\"clusters\":[", wv->gate.require_done ? "true" : "false", d,
                           wv->gate.approval ? "true" : "false");
        }
        firstw = false;
        for (size_t i = 0; i < wv->nclusters; i++) {
            const tlr_mig_cluster *k = &wv->clusters[i];
            cstate cs;
            tlr_mig_counts c = { 0 };
            read_cstate(cfg, k, &cs);
            if (cs.found)
                tlr_mig_state_counts(&cs.s, &c);
            const char *phase = cs.found ? tlr_mig_phase_name(cs.s.phase) : "NotStarted";
            const char *msg = cs.found ? cs.s.message : cs.err;
            if (json) {
                tlr_buf_adds(b, i ? ",{\"name\":" : "{\"name\":");
                tlr_buf_add_json_str(b, k->name);
                tlr_buf_adds(b, ",\"context\":");
                tlr_buf_add_json_str(b, k->context ? k->context : "");
                tlr_buf_adds(b, ",\"phase\":");
                tlr_buf_add_json_str(b, phase);
                tlr_buf_printf(b, ",\"counts\":{\"total\":%zu,\"done\":%zu,\"in_flight\":%zu,"
                               "\"pending\":%zu,\"gone\":%zu},\"finished_ms\":%lld,\"message\":",
                               c.total, c.done, c.in_flight, c.pending, c.gone,
                               (long long)(cs.found ? cs.s.finished_ms : 0));
                tlr_buf_add_json_str(b, msg);
                tlr_buf_adds(b, "}");
            } else {
                char nodes[32];
                snprintf(nodes, sizeof(nodes), "%zu/%zu", c.done, c.total);
                tlr_buf_printf(b, "%-12s %-20s %-20s %-10s %-7s %s\n", wv->name, k->name,
                               k->context ? k->context : "-", phase, nodes, msg);
            }
            tlr_mig_state_clear(&cs.s);
        }
        if (json)
            tlr_buf_adds(b, "]}");
    }
    if (json)
        tlr_buf_adds(b, "]}\n");
}

static void print(tlr_buf *b)
{
    fputs(tlr_buf_str(b), stdout);
    fflush(stdout);
}

/* ---- the subcommands ----------------------------------------------------------- */

static int waves_plan(const mig_cfg *cfg, const tlr_mig_plan *p, tlr_buf *b)
{
    int worst = TLR_MIG_EXIT_OK;
    bool first = true;
    if (cfg->output == 1)
        tlr_buf_adds(b, "{\"plan\":");
    if (cfg->output == 1) {
        tlr_buf_add_json_str(b, p->name);
        tlr_buf_adds(b, ",\"clusters\":[");
    }
    for (size_t w = 0; w < p->nwaves; w++) {
        if (cfg->wave && strcmp(cfg->wave, p->waves[w].name) != 0)
            continue;
        for (size_t i = 0; i < p->waves[w].nclusters; i++) {
            mig_cfg kc;
            char label[300];
            const tlr_mig_cluster *k = &p->waves[w].clusters[i];
            cluster_cfg(cfg, k, &kc);
            snprintf(label, sizeof(label), "%s/%s", p->waves[w].name, k->name);
            if (cfg->output == 1 && !first)
                tlr_buf_adds(b, ",");
            size_t before = b->len;
            int code = kc.catalog == NULL ? TLR_MIG_EXIT_USAGE : mig_plan_into(&kc, label, b);
            if (kc.catalog == NULL)
                fprintf(stderr, "tailorctl migrate %s: no catalog (--catalog, TAILOR_CATALOG or "
                        "the plan's catalog)\n", label);
            if (cfg->output == 1 && b->len == before)
                tlr_buf_printf(b, "{\"cluster\":\"%s\",\"ok\":false,\"error\":true}", label);
            if (cfg->output != 1)
                tlr_buf_adds(b, "\n");
            first = false;
            /* The worst outcome wins: an error over a failed check. */
            if (code == TLR_MIG_EXIT_FAIL || code == TLR_MIG_EXIT_USAGE ||
                (code != TLR_MIG_EXIT_OK && worst == TLR_MIG_EXIT_OK))
                worst = code;
        }
    }
    if (cfg->output == 1)
        tlr_buf_printf(b, "],\"ok\":%s}\n", worst == TLR_MIG_EXIT_OK ? "true" : "false");
    return worst;
}

static int waves_run(const mig_cfg *cfg, const tlr_mig_plan *p)
{
    for (size_t w = 0; w < p->nwaves; w++) {
        const tlr_mig_wave *wv = &p->waves[w];
        if (cfg->wave && strcmp(cfg->wave, wv->name) != 0)
            continue;
        for (;;) {
            tlr_mig_waves_done earlier;
            int64_t until = 0;
            char why[512];
            earlier_of(cfg, p, w, &earlier);
            tlr_mig_gate_verdict v = tlr_mig_gate_decide(wv, w == 0, &earlier,
                                                         approved(cfg, wv->name), tlr_wall_ms(),
                                                         &until, why, sizeof(why));
            if (v == TLR_MIG_GATE_OPEN)
                break;
            fprintf(stderr, "tailorctl migrate: %s\n", why);
            int64_t left = until - tlr_wall_ms();
            if (v != TLR_MIG_GATE_WAIT || !cfg->wait_gates || left > cfg->gate_timeout_ms)
                return TLR_MIG_EXIT_GATE;
            sleep_ms(left < 30000 ? (left > 0 ? left : 1) : 30000);
        }
        fprintf(stderr, "tailorctl migrate: wave %s: %zu cluster%s\n", wv->name, wv->nclusters,
                wv->nclusters == 1 ? "" : "s");
        for (size_t i = 0; i < wv->nclusters; i++) {
            const tlr_mig_cluster *k = &wv->clusters[i];
            char label[300];
            mig_cfg kc;
            cstate cs;
            snprintf(label, sizeof(label), "%s/%s", wv->name, k->name);
            read_cstate(cfg, k, &cs);
            bool done = cs.found && cs.s.phase == TLR_MIG_PHASE_DONE;
            tlr_mig_state_clear(&cs.s);
            if (done) {
                fprintf(stderr, "tailorctl migrate %s: already Done\n", label);
                continue;
            }
            cluster_cfg(cfg, k, &kc);
            if (kc.catalog == NULL) {
                fprintf(stderr, "tailorctl migrate %s: no catalog (--catalog, TAILOR_CATALOG or "
                        "the plan's catalog)\n", label);
                return TLR_MIG_EXIT_USAGE;
            }
            tlr_mig_state s;
            int code = mig_run_cluster(&kc, label, &s);
            tlr_mig_state_clear(&s);
            if (code != TLR_MIG_EXIT_OK)
                return code;
        }
    }
    return TLR_MIG_EXIT_OK;
}

static int waves_rollback(const mig_cfg *cfg, const tlr_mig_plan *p)
{
    int worst = TLR_MIG_EXIT_OK;
    /* The reverse order: the last wave to move is the first to go back. */
    for (size_t w = p->nwaves; w-- > 0;) {
        const tlr_mig_wave *wv = &p->waves[w];
        if (cfg->wave && strcmp(cfg->wave, wv->name) != 0)
            continue;
        for (size_t i = wv->nclusters; i-- > 0;) {
            mig_cfg kc;
            char label[300];
            tlr_mig_state s;
            cluster_cfg(cfg, &wv->clusters[i], &kc);
            snprintf(label, sizeof(label), "%s/%s", wv->name, wv->clusters[i].name);
            int code = mig_rollback_cluster(&kc, label, &s);
            tlr_mig_state_clear(&s);
            if (code != TLR_MIG_EXIT_OK && worst == TLR_MIG_EXIT_OK)
                worst = code;
        }
    }
    return worst;
}

int mig_waves(const mig_cfg *cfg, const char *sub)
{
    tlr_mig_plan p;
    if (read_plan(cfg->plan_file, &p) != TLR_OK)
        return TLR_MIG_EXIT_USAGE;
    int code = TLR_MIG_EXIT_OK;
    bool found = cfg->wave == NULL;
    for (size_t w = 0; w < p.nwaves && !found; w++)
        found = strcmp(p.waves[w].name, cfg->wave) == 0;
    if (!found) {
        fprintf(stderr, "tailorctl migrate: %s has no wave %s\n", cfg->plan_file, cfg->wave);
        tlr_mig_plan_clear(&p);
        return TLR_MIG_EXIT_USAGE;
    }
    tlr_buf b;
    tlr_buf_init(&b, 1u << 26);
    if (!strcmp(sub, "plan")) {
        code = waves_plan(cfg, &p, &b);
    } else {
        if (!strcmp(sub, "run"))
            code = waves_run(cfg, &p);
        else if (!strcmp(sub, "rollback"))
            code = waves_rollback(cfg, &p);
        status_doc(cfg, &p, &b);
    }
    print(&b);
    tlr_buf_free(&b);
    tlr_mig_plan_clear(&p);
    return code;
}
