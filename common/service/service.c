/* service.c - the common service skeleton (see tlr_service.h).
 *
 * Order matters at start-up: the loop is created first because it blocks
 * SIGTERM/SIGINT/SIGHUP in this thread, and every thread created later
 * (nng's, the HTTP server's) inherits that mask, so signals are only ever
 * delivered to the loop's signalfd.  Teardown runs in reverse.
 */
#include "tlr_service.h"
#include "tlr_service_internal.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_cancel.h"
#include "tlr_err.h"
#include "tlr_http.h"
#include "tlr_time.h"
#include "tlr_tls.h"

extern char **environ;

/* How often the certificate files are checked for a new version. */
#define TLS_RELOAD_MS 2000

static const tlr_setting common_settings[] = {
    { "config", "TAILOR_CONFIG", TLR_SET_CONFIG, offsetof(tlr_service_conf, config), NULL,
      "read settings from this YAML file (flat mapping of setting name to value)" },
    { "log-level", "TAILOR_LOG_LEVEL", TLR_SET_STR, offsetof(tlr_service_conf, log_level),
      "info", "least severe log level written: debug, info, warn or error" },
    { "http-listen", "TAILOR_HTTP_LISTEN", TLR_SET_STR,
      offsetof(tlr_service_conf, http_listen), NULL,
      "host:port serving /healthz, /readyz and /metrics" },
    TLR_SETTING_TLS_CA(tlr_service_conf, tls_ca),
    TLR_SETTING_TLS_CERT(tlr_service_conf, tls_cert),
    TLR_SETTING_TLS_KEY(tlr_service_conf, tls_key),
    TLR_SETTING_INSECURE_TRANSPORT(tlr_service_conf, insecure_transport),
};
#define NCOMMON (sizeof(common_settings) / sizeof(common_settings[0]))

tlr_loop *tlr_service_loop(tlr_service *svc) { return svc->loop; }
tlr_logger *tlr_service_log(tlr_service *svc) { return svc->log; }
tlr_metrics *tlr_service_metrics(tlr_service *svc) { return svc->metrics; }
const char *tlr_service_id(const tlr_service *svc) { return svc->id; }

void tlr_service_set_leader(tlr_service *svc, bool leader)
{
    atomic_store(&svc->leader, leader);
}

void tlr_service_set_ready(tlr_service *svc, bool ready, const char *reason)
{
    atomic_store(&svc->ready, ready);
    if (svc->http)
        tlr_http_set_ready(svc->http, ready, reason);
}

void tlr_service_shutdown(tlr_service *svc)
{
    tlr_shutdown_request();   /* wakes retry sleeps on every thread */
    tlr_loop_stop(svc->loop);
}

static void on_signal(tlr_loop *loop, int signo, void *arg)
{
    tlr_service *svc = arg;
    if (signo == SIGHUP) {
        TLR_INFO(svc->log, "SIGHUP ignored; restart to change settings");
        return;
    }
    TLR_INFO(svc->log, "shutting down", TLR_S("signal", signo == SIGTERM ? "SIGTERM" : "SIGINT"));
    tlr_service_set_ready(svc, false, "shutting down");
    tlr_shutdown_request();   /* wakes retry sleeps on every thread */
    tlr_loop_stop(loop);
}

/* Every nng URL among the settings' values: refuse plaintext unless
 * --insecure-transport (then warn, once per URL, when log is set); a
 * tls+tcp:// URL needs the TLS files.  On failure err says why (exit 2). */
static int check_one_url(const tlr_setting *st, const char *url, const tlr_service_conf *c,
                         tlr_logger *log, char *err, size_t errlen)
{
    bool have_tls = c->tls_cert && *c->tls_cert;
    if (tlr_tls_url_plaintext(url)) {
        if (!c->insecure_transport) {
            snprintf(err, errlen, "--%s: %s is plaintext; use tls+tcp:// with --tls-ca, "
                     "--tls-cert and --tls-key, or allow it with --insecure-transport",
                     st->name, url);
            return TLR_E_INVAL;
        }
        if (log)
            TLR_WARN(log, "insecure transport: plaintext, unauthenticated connections allowed",
                     TLR_S("setting", st->name), TLR_S("url", url));
    } else if (tlr_tls_url(url) && !have_tls) {
        snprintf(err, errlen, "--%s: %s needs --tls-ca, --tls-cert and --tls-key", st->name,
                 url);
        return TLR_E_INVAL;
    }
    return TLR_OK;
}

static int check_transport(const tlr_setting *table, size_t n, const void *cfg,
                           tlr_logger *log, char *err, size_t errlen)
{
    const tlr_service_conf *c = cfg;
    bool any = (c->tls_ca && *c->tls_ca) || (c->tls_cert && *c->tls_cert) ||
               (c->tls_key && *c->tls_key);
    bool all = c->tls_ca && *c->tls_ca && c->tls_cert && *c->tls_cert && c->tls_key &&
               *c->tls_key;
    if (any && !all) {
        snprintf(err, errlen, "--tls-ca, --tls-cert and --tls-key go together");
        return TLR_E_INVAL;
    }
    for (size_t i = 0; i < n; i++) {
        const char *field = (const char *)cfg + table[i].offset;
        int rc = TLR_OK;
        if (table[i].type == TLR_SET_STR) {
            const char *v = *(char *const *)field;
            if (v)
                rc = check_one_url(&table[i], v, c, log, err, errlen);
        } else if (table[i].type == TLR_SET_LIST) {
            const tlr_strlist *l = (const tlr_strlist *)field;
            for (size_t j = 0; j < l->n && rc == TLR_OK; j++)
                rc = check_one_url(&table[i], l->items[j], c, log, err, errlen);
        }
        if (rc != TLR_OK)
            return rc;
    }
    return TLR_OK;
}

static void on_tls_reload(tlr_loop *loop, tlr_timer_id id, void *arg)
{
    (void)id;
    tlr_service *svc = arg;
    tlr_tls_reload(svc->tls);
    svc->tls_timer = tlr_loop_add_timer(loop, TLS_RELOAD_MS, on_tls_reload, svc);
}

tlr_tls *tlr_service_tls(tlr_service *svc) { return svc->tls; }

static double uptime_seconds(void *arg)
{
    const tlr_service *svc = arg;
    return (double)(tlr_mono_ms() - svc->started_ms) / 1000.0;
}

/* The whole table: common settings (offsets into the leading
 * tlr_service_conf) followed by the service's own.  The caller frees it. */
static tlr_setting *merge_settings(const tlr_service_ops *ops, size_t *n)
{
    tlr_setting *t = tlr_calloc(NCOMMON + ops->nsettings, sizeof(*t));
    memcpy(t, common_settings, sizeof(common_settings));
    t[2].def = ops->http_default;
    if (ops->nsettings)
        memcpy(t + NCOMMON, ops->settings, ops->nsettings * sizeof(*t));
    *n = NCOMMON + ops->nsettings;
    return t;
}

int tlr_service_main(int argc, char **argv, const tlr_service_ops *ops)
{
    char prog[64];
    snprintf(prog, sizeof(prog), "tailor-%s", ops->name);
    size_t nset;
    tlr_setting *table = merge_settings(ops, &nset);
    tlr_service svc = { .ops = ops, .started_ms = tlr_mono_ms(), .started_wall_ms = tlr_wall_ms() };
    int exit_code = 1;
    bool started = false;

    tlr_conf_result res;
    int rc = tlr_conf_load(table, nset, ops->cfg, argc, argv,
                           (const char *const *)environ, &res);
    if (rc) {
        fprintf(stderr, "%s: %s\nTry '%s --help'.\n", prog, res.err, prog);
        exit_code = 2;
        goto out;
    }
    if (res.help) {
        tlr_conf_help(prog, ops->summary, table, nset, stdout);
        exit_code = 0;
        goto out;
    }
    if (res.version) {
        tlr_version_print(stdout, prog);
        exit_code = 0;
        goto out;
    }
    if (res.argc > 0) {
        fprintf(stderr, "%s: unexpected argument '%s'\nTry '%s --help'.\n", prog,
                res.argv[0], prog);
        exit_code = 2;
        goto out;
    }
    tlr_service_conf *common = ops->cfg;
    tlr_log_level level;
    if (tlr_log_level_parse(common->log_level, &level)) {
        fprintf(stderr, "%s: --log-level: unknown level \"%s\" (debug, info, warn, error)\n",
                prog, common->log_level ? common->log_level : "");
        exit_code = 2;
        goto out;
    }

    char why[512];
    if (check_transport(table, nset, ops->cfg, NULL, why, sizeof(why)) != TLR_OK) {
        fprintf(stderr, "%s: %s\n", prog, why);
        exit_code = 2;
        goto out;
    }

    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    snprintf(svc.id, sizeof(svc.id), "%s/%s/%ld", ops->name, host, (long)getpid());
    tlr_logger_create(&(tlr_log_opts){ .service = ops->name, .level = level, .fd = 2 },
                      &svc.log);

    if ((rc = tlr_loop_create(&svc.loop))) {
        TLR_ERROR(svc.log, "cannot create event loop", TLR_ERR(rc));
        goto out;
    }
    tlr_loop_on_signal(svc.loop, on_signal, &svc);

    tlr_metrics_create(&svc.metrics);
    tlr_metrics_register_process(svc.metrics);
    tlr_metrics_gauge_set(tlr_metrics_gauge(svc.metrics, "tailor_build_info",
                                            "Build and contract version of this binary.", 3,
                                            (const char *[]){ "service", "version", "contract" }),
                          (const char *[]){ ops->name, TLR_VERSION, "tailor.v1" }, 1);
    tlr_metrics_gauge_func(svc.metrics, "tailor_uptime_seconds",
                           "Seconds since this process started.", uptime_seconds, &svc);
    svc.rpc_requests = tlr_metrics_counter(svc.metrics, "tailor_rpc_requests_total",
                                           "Requests answered, by request type and result code.",
                                           2, (const char *[]){ "type", "code" });
    svc.rpc_duration = tlr_metrics_histogram(svc.metrics, "tailor_rpc_duration_seconds",
                                             "Time to answer one request, by request type.",
                                             1, (const char *[]){ "type" }, NULL, 0);

    if (common->http_listen && *common->http_listen) {
        rc = tlr_http_start(&(tlr_http_opts){ .listen = common->http_listen,
                                              .metrics = svc.metrics, .log = svc.log },
                            &svc.http);
        if (rc) {
            TLR_ERROR(svc.log, "cannot serve health and metrics", TLR_S("listen", common->http_listen),
                      TLR_ERR(rc));
            goto out;
        }
        tlr_http_set_ready(svc.http, false, "starting");
    }

    tlr_buf dump;
    tlr_buf_init(&dump, 64 * 1024);
    tlr_conf_dump_json(table, nset, ops->cfg, &dump);
    TLR_INFO(svc.log, "starting", TLR_S("id", svc.id), TLR_S("version", TLR_VERSION),
             TLR_S("commit", tlr_build_commit()), TLR_S("config_file", res.config_path),
             TLR_RAW("settings", tlr_buf_str(&dump)));
    tlr_buf_free(&dump);
    check_transport(table, nset, ops->cfg, svc.log, why, sizeof(why));   /* the warnings */

    if (common->tls_cert && *common->tls_cert) {
        tlr_tls_opts to = { .ca_file = common->tls_ca, .cert_file = common->tls_cert,
                            .key_file = common->tls_key, .log = svc.log };
        if ((rc = tlr_tls_create(&to, &svc.tls, why, sizeof(why)))) {
            exit_code = 2;   /* a bad setting; tlr_tls_create logged why */
            goto out;
        }
        char want[80];
        snprintf(want, sizeof(want), "tailor-%s", ops->name);
        if (strcmp(tlr_tls_identity(svc.tls), want) != 0)
            TLR_WARN(svc.log, "certificate identity is not this service's; peers will "
                     "authorize it as what it says", TLR_S("identity", tlr_tls_identity(svc.tls)),
                     TLR_S("expected", want));
        svc.tls_timer = tlr_loop_add_timer(svc.loop, TLS_RELOAD_MS, on_tls_reload, &svc);
    }

    if (ops->start && (rc = ops->start(&svc, ops->app))) {
        TLR_ERROR(svc.log, "start failed", TLR_ERR(rc));
        started = true;   /* start may have half-built state: let stop free it */
        goto out;
    }
    started = true;

    rc = tlr_loop_run(svc.loop);
    if (rc) {
        TLR_ERROR(svc.log, "event loop failed", TLR_ERR(rc));
        goto out;
    }
    exit_code = 0;

out:
    if (svc.http)
        tlr_http_set_ready(svc.http, false, "shutting down");
    if (started && ops->stop)
        ops->stop(&svc, ops->app);
    tlr_http_stop(svc.http);
    if (svc.tls_timer)
        tlr_loop_cancel_timer(svc.loop, svc.tls_timer);
    tlr_tls_free(svc.tls);
    if (svc.log && started)
        TLR_INFO(svc.log, "stopped", TLR_I("exit_code", exit_code));
    tlr_metrics_free(svc.metrics);
    tlr_loop_free(svc.loop);
    tlr_logger_free(svc.log);
    tlr_conf_free(table, nset, ops->cfg);
    free(table);
    nng_fini();
    return exit_code;
}
