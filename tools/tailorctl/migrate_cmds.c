/* migrate_cmds.c - the four subcommands for one cluster: plan (preflight
 * only), run (preflight, then the run loop), status (the checkpoint) and
 * rollback.  Results go to stdout (a table, or JSON with -o json),
 * progress and the run's preflight table to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migctl.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_time.h"

static int open_cluster(const mig_cfg *cfg, mig_cluster **c)
{
    char err[768] = "";
    int rc = mig_cluster_open(cfg, c, err, sizeof(err));
    if (rc != TLR_OK) {
        fprintf(stderr, "tailorctl migrate: %s\n", err[0] ? err : tlr_strerror(rc));
        return TLR_MIG_EXIT_FAIL;
    }
    return TLR_MIG_EXIT_OK;
}

static void print_buf(const tlr_buf *b)
{
    fputs(tlr_buf_str(b), stdout);
    if (b->len == 0 || b->data[b->len - 1] != '\n')
        fputc('\n', stdout);
    fflush(stdout);
}

/* Is there a checkpoint to resume (not rolled back)? */
static bool resuming(mig_cluster *c)
{
    mig_ops ops;
    tlr_mig_state s;
    char err[512];
    mig_cluster_ops(c, &ops);
    if (ops.load(ops.arg, &s, err, sizeof(err)) != TLR_OK)
        return false;
    bool r = s.phase != TLR_MIG_PHASE_ROLLED_BACK && s.phase != TLR_MIG_PHASE_PENDING;
    tlr_mig_state_clear(&s);
    return r;
}

/* The checks into b, as output says (0 text, 1 json). */
static int checks(mig_cluster *c, int output, const char *label, tlr_buf *b)
{
    tlr_mig_checks ch = { 0 };
    char err[768] = "";
    int rc = mig_preflight(c, resuming(c), &ch, err, sizeof(err));
    int code;
    if (rc != TLR_OK) {
        fprintf(stderr, "tailorctl migrate %s: preflight: %s\n", label, err);
        code = rc == TLR_E_INVAL ? TLR_MIG_EXIT_USAGE : TLR_MIG_EXIT_FAIL;
    } else {
        if (output == 1)
            tlr_mig_checks_json(&ch, label, b);
        else
            tlr_mig_checks_text(&ch, label, b);
        code = tlr_mig_checks_count(&ch, TLR_MIG_FAIL) > 0 ? TLR_MIG_EXIT_INVALID
                                                           : TLR_MIG_EXIT_OK;
    }
    tlr_mig_checks_free(&ch);
    return code;
}

int mig_plan_into(const mig_cfg *cfg, const char *label, tlr_buf *out)
{
    mig_cluster *c = NULL;
    int code = open_cluster(cfg, &c);
    if (code != TLR_MIG_EXIT_OK)
        return code;
    code = checks(c, cfg->output, label ? label : mig_cluster_name(c), out);
    mig_cluster_free(c);
    return code;
}

int mig_cmd_plan(const mig_cfg *cfg, const char *label)
{
    tlr_buf b;
    tlr_buf_init(&b, 1u << 26);
    int code = mig_plan_into(cfg, label, &b);
    if (b.len > 0)
        print_buf(&b);
    tlr_buf_free(&b);
    return code;
}

static void print_state(const mig_cfg *cfg, const tlr_mig_state *s)
{
    tlr_buf b;
    tlr_buf_init(&b, 1u << 26);
    if (cfg->output == 1)
        tlr_mig_status_json(s, &b);
    else
        tlr_mig_status_text(s, tlr_wall_ms(), &b);
    print_buf(&b);
    tlr_buf_free(&b);
}

int mig_run_cluster(const mig_cfg *cfg, const char *label, tlr_mig_state *final)
{
    mig_cluster *c = NULL;
    memset(final, 0, sizeof(*final));
    int code = open_cluster(cfg, &c);
    if (code != TLR_MIG_EXIT_OK)
        return code;
    const char *lbl = label ? label : mig_cluster_name(c);
    tlr_buf b;
    tlr_buf_init(&b, 1u << 26);
    /* Before anything moves: the same checks as plan, on stderr. */
    code = checks(c, 0, lbl, &b);
    fputs(tlr_buf_str(&b), stderr);
    if (code != TLR_MIG_EXIT_OK) {
        fprintf(stderr, "tailorctl migrate %s: the preflight checks failed; nothing was "
                "touched\n", lbl);
    } else {
        mig_ops ops;
        mig_run_opts o;
        mig_cluster_ops(c, &ops);
        mig_run_opts_from(cfg, c, lbl, &o);
        code = mig_run(&ops, &o, final);
    }
    tlr_buf_free(&b);
    mig_cluster_free(c);
    return code;
}

int mig_cmd_run(const mig_cfg *cfg, const char *label)
{
    tlr_mig_state s;
    int code = mig_run_cluster(cfg, label, &s);
    if (s.name != NULL)
        print_state(cfg, &s);
    tlr_mig_state_clear(&s);
    return code;
}

int mig_read_state(const mig_cfg *cfg, tlr_mig_state *out, char *err, size_t len)
{
    mig_cluster *c = NULL;
    int rc = mig_cluster_open(cfg, &c, err, len);
    if (rc != TLR_OK)
        return rc;
    mig_ops ops;
    mig_cluster_ops(c, &ops);
    rc = ops.load(ops.arg, out, err, len);
    if (rc == TLR_E_NOTFOUND)
        snprintf(err, len, "no migration named %s (no checkpoint ConfigMap in %s)",
                 mig_cluster_name(c), cfg->ns);
    mig_cluster_free(c);
    return rc;
}

int mig_cmd_status(const mig_cfg *cfg, const char *label)
{
    tlr_mig_state s;
    char err[768] = "";
    int rc = mig_read_state(cfg, &s, err, sizeof(err));
    if (rc != TLR_OK) {
        fprintf(stderr, "tailorctl migrate%s%s: %s\n", label ? " " : "", label ? label : "",
                err[0] ? err : tlr_strerror(rc));
        return TLR_MIG_EXIT_FAIL;
    }
    print_state(cfg, &s);
    tlr_mig_state_clear(&s);
    return TLR_MIG_EXIT_OK;
}

int mig_rollback_cluster(const mig_cfg *cfg, const char *label, tlr_mig_state *final)
{
    mig_cluster *c = NULL;
    memset(final, 0, sizeof(*final));
    int code = open_cluster(cfg, &c);
    if (code != TLR_MIG_EXIT_OK)
        return code;
    mig_ops ops;
    mig_run_opts o;
    mig_cluster_ops(c, &ops);
    mig_run_opts_from(cfg, c, label, &o);
    code = mig_rollback(&ops, &o, final);
    mig_cluster_free(c);
    return code;
}

int mig_cmd_rollback(const mig_cfg *cfg, const char *label)
{
    tlr_mig_state s;
    int code = mig_rollback_cluster(cfg, label, &s);
    if (s.name != NULL)
        print_state(cfg, &s);
    tlr_mig_state_clear(&s);
    return code;
}
