/* ping.c - tailorctl ping URL...: ask each endpoint for a PingResponse.
 *
 * Each URL is pinged on its own connection, so the output says which
 * replica answered what.  Exit 0 when every endpoint answered and is
 * ready, 1 otherwise; -o json prints one JSON object per endpoint.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <nng/nng.h>

#include "tailor/v1/common.pb-c.h"
#include "tailorctl.h"
#include "tlr_buf.h"
#include "tlr_conf.h"
#include "tlr_clnt.h"
#include "tlr_err.h"
#include "tlr_req.h"

extern char **environ;

typedef struct ping_cfg {
    int64_t timeout_ms;
    int output;     /* index into outputs */
    ctl_transport tr;
} ping_cfg;

static const char *const outputs[] = { "text", "json", NULL };

static const tlr_setting settings[] = {
    { "timeout", NULL, TLR_SET_DURATION, offsetof(ping_cfg, timeout_ms), "3s",
      "how long to wait for each endpoint", .min = 1, .max = 600000 },
    { "output", NULL, TLR_SET_ENUM, offsetof(ping_cfg, output), "text",
      "output format: text or json", .choices = outputs },
    CTL_TRANSPORT_SETTINGS(ping_cfg, tr),
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

static bool ping_one(const char *url, const ping_cfg *cfg, tlr_tls *tls, tlr_logger *quiet)
{
    tlr_req_client *c = NULL;
    Tailor__V1__PingResponse *r = NULL;
    tlr_status st = { 0 };
    bool ok = false;
    int rc = tlr_req_client_create(&(tlr_req_opts){ .urls = &url, .nurls = 1,
                                                    .timeout_ms = (int)cfg->timeout_ms,
                                                    .log = quiet, .sender = "tailorctl",
                                                    .tls = tls },
                                   &c);
    if (rc == TLR_OK)
        rc = tlr_clnt_ping(&(tlr_clnt){ c, (int)cfg->timeout_ms, quiet, false }, &r, &st);
    tlr_buf out;
    tlr_buf_init(&out, 4096);
    if (rc == TLR_OK) {
        ok = r->ready;
        if (cfg->output == 1) {
            tlr_buf_adds(&out, "{\"endpoint\":");
            tlr_buf_add_json_str(&out, url);
            tlr_buf_adds(&out, ",\"service\":");
            tlr_buf_add_json_str(&out, r->service);
            tlr_buf_adds(&out, ",\"replica\":");
            tlr_buf_add_json_str(&out, r->replica_id);
            tlr_buf_adds(&out, ",\"version\":");
            tlr_buf_add_json_str(&out, r->version);
            tlr_buf_printf(&out, ",\"contract_version\":%u,\"ready\":%s,\"uptime_ms\":%lld}",
                           r->contract_version, r->ready ? "true" : "false",
                           (long long)r->uptime_ms);
        } else {
            tlr_buf_printf(&out, "%-28s %-10s %-9s v%s contract v%u uptime %.1fs  %s",
                           url, r->service, r->ready ? "ready" : "NOT READY", r->version,
                           r->contract_version, (double)r->uptime_ms / 1000.0, r->replica_id);
        }
    } else {
        const char *why = st.message[0] ? st.message : tlr_strerror(rc);
        if (cfg->output == 1) {
            tlr_buf_adds(&out, "{\"endpoint\":");
            tlr_buf_add_json_str(&out, url);
            tlr_buf_adds(&out, ",\"error\":");
            tlr_buf_add_json_str(&out, why);
            tlr_buf_adds(&out, "}");
        } else {
            tlr_buf_printf(&out, "%-28s ERROR %s", url, why);
        }
    }
    puts(tlr_buf_str(&out));
    tlr_buf_free(&out);
    tlr_clnt_free(r);
    tlr_req_client_free(c);
    return ok;
}

int cmd_ping(int argc, char **argv)
{
    ping_cfg cfg = { 0 };
    tlr_conf_result res;
    /* The environment only for TAILOR_TLS_* (the other settings have no
     * variable). */
    int rc = tlr_conf_load(settings, NSETTINGS, &cfg, argc, argv, (const char *const *)environ,
                           &res);
    if (rc || res.help || res.argc == 0) {
        if (rc)
            fprintf(stderr, "tailorctl ping: %s\n", res.err);
        tlr_conf_help("tailorctl ping",
                      "Ping the tailor services listening on each URL (nng, e.g. tcp://127.0.0.1:7101).",
                      settings, NSETTINGS, res.help ? stdout : stderr);
        tlr_conf_free(settings, NSETTINGS, &cfg);
        return res.help && !rc ? 0 : 2;
    }
    tlr_tls *tls = NULL;
    if ((rc = ctl_transport_open("ping", &cfg.tr, (const char *const *)res.argv,
                                 (size_t)res.argc, &tls))) {
        tlr_conf_free(settings, NSETTINGS, &cfg);
        return rc;
    }
    /* Transport warnings would interleave with the table; errors are
     * reported per endpoint instead. */
    tlr_logger *quiet;
    tlr_logger_create(&(tlr_log_opts){ .service = "tailorctl", .level = TLR_LOG_FATAL, .fd = 2 },
                      &quiet);
    int failed = 0;
    for (int i = 0; i < res.argc; i++)
        failed += !ping_one(res.argv[i], &cfg, tls, quiet);
    tlr_logger_free(quiet);
    tlr_tls_free(tls);
    tlr_conf_free(settings, NSETTINGS, &cfg);
    nng_fini();
    return failed ? 1 : 0;
}
