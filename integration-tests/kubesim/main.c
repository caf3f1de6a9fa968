/* main.c - kubesim: settings and wiring only.
 *
 * Creates the store, starts the subsystems listed in `modules` (each
 * contributes its own settings, see ks_module.h), generates a CA and
 * server certificate for HTTPS, serves the API over HTTP and/or HTTPS,
 * writes a kubeconfig, prints the kubectl line to use, and on SIGTERM or
 * SIGINT stops everything in reverse order.
 */
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_api.h"
#include "ks_certs.h"
#include "ks_http.h"
#include "ks_kubelet.h"
#include "ks_module.h"
#include "controllers.h"
#include "pdb.h"
#include "sched.h"
#include "ks_store.h"
#include "tlr_alloc.h"
#include "tlr_base64.h"
#include "tlr_conf.h"
#include "tlr_err.h"
#include "tlr_log.h"

extern char **environ;

/* Subsystems beside the API server, started in this order: add a line
 * here for each ks_module (scheduler, controllers, kubelet). */
static const ks_module *const modules[] = {
    &ks_sched_module,
    &ks_pdb_module,
    &ks_ctl_module,
    &ks_kubelet_module,
    NULL,
};

typedef struct main_cfg {
    char *listen;
    char *tls_listen;
    char *tls_san;
    char *data_dir;
    char *token;
    char *kubeconfig_out;
    char *log_level;
    int history;
    int64_t bookmark_ms;
} main_cfg;

static const tlr_setting main_settings[] = {
    { .name = "listen", .env = "KUBESIM_LISTEN", .type = TLR_SET_STR,
      .offset = offsetof(main_cfg, listen), .def = "127.0.0.1:8080",
      .help = "plain HTTP address host:port (empty = no HTTP)" },
    { .name = "tls-listen", .env = "KUBESIM_TLS_LISTEN", .type = TLR_SET_STR,
      .offset = offsetof(main_cfg, tls_listen),
      .help = "HTTPS address host:port with a generated CA (empty = no HTTPS)" },
    { .name = "tls-san", .env = "KUBESIM_TLS_SAN", .type = TLR_SET_STR,
      .offset = offsetof(main_cfg, tls_san),
      .help = "more names and addresses for the server certificate, comma-separated "
              "(as kubeadm's certSANs: the address pods reach the API server at)" },
    { .name = "data-dir", .env = "KUBESIM_DATA_DIR", .type = TLR_SET_STR,
      .offset = offsetof(main_cfg, data_dir), .def = "/tmp/kubesim",
      .help = "where the CA, server certificate and key are written" },
    { .name = "token", .env = "KUBESIM_TOKEN", .type = TLR_SET_SECRET,
      .offset = offsetof(main_cfg, token),
      .help = "bearer token clients must send (empty = no authentication)" },
    { .name = "kubeconfig-out", .env = "KUBESIM_KUBECONFIG_OUT", .type = TLR_SET_STR,
      .offset = offsetof(main_cfg, kubeconfig_out),
      .help = "write a kubeconfig for this server to FILE" },
    { .name = "log-level", .env = "KUBESIM_LOG_LEVEL", .type = TLR_SET_STR,
      .offset = offsetof(main_cfg, log_level), .def = "info",
      .help = "debug, info, warn or error" },
    { .name = "history", .env = "KUBESIM_HISTORY", .type = TLR_SET_INT,
      .offset = offsetof(main_cfg, history), .def = "100000",
      .help = "changes kept for watch resume and paged lists", .min = 16, .max = 10000000 },
    { .name = "bookmark-interval", .env = "KUBESIM_BOOKMARK_INTERVAL", .type = TLR_SET_DURATION,
      .offset = offsetof(main_cfg, bookmark_ms), .def = "1m",
      .help = "how often idle watches get a BOOKMARK event", .min = 10, .max = 3600000 },
};

#define NMAIN (sizeof(main_settings) / sizeof(main_settings[0]))
#define NMODULES (sizeof(modules) / sizeof(modules[0]))
#define ALIGN_UP(n) (((n) + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1))

static int write_kubeconfig(const char *path, const char *server, const char *ca_pem,
                            const char *token)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return TLR_E_IO;
    fprintf(f, "apiVersion: v1\nkind: Config\nclusters:\n- name: kubesim\n  cluster:\n"
               "    server: %s\n", server);
    if (ca_pem) {
        char *b64 = tlr_base64_encode(ca_pem, strlen(ca_pem));
        fprintf(f, "    certificate-authority-data: %s\n", b64);
        free(b64);
    }
    fprintf(f, "contexts:\n- name: kubesim\n  context:\n    cluster: kubesim\n"
               "    user: kubesim\n    namespace: default\ncurrent-context: kubesim\n"
               "users:\n- name: kubesim\n  user:\n");
    if (token && token[0])
        fprintf(f, "    token: %s\n", token);
    else
        fprintf(f, "    {}\n");
    return fclose(f) ? TLR_E_IO : TLR_OK;
}

int main(int argc, char **argv)
{
    int status = 1;
    size_t nmod = 0, total = ALIGN_UP(sizeof(main_cfg));
    size_t offsets[NMODULES + 1];
    size_t nset = NMAIN;
    for (size_t i = 0; i < NMODULES && modules[i]; i++, nmod++) {
        offsets[i] = total;
        total += ALIGN_UP(modules[i]->cfg_size);
        nset += modules[i]->nsettings;
    }
    char *block = tlr_calloc(1, total);
    main_cfg *cfg = (main_cfg *)(void *)block;
    tlr_setting *table = tlr_calloc(nset, sizeof(tlr_setting));
    memcpy(table, main_settings, sizeof(main_settings));
    size_t at = NMAIN;
    for (size_t i = 0; i < nmod; i++)
        for (size_t j = 0; j < modules[i]->nsettings; j++) {
            table[at] = modules[i]->settings[j];
            table[at++].offset += offsets[i];
        }
    void *states[NMODULES + 1] = { 0 };
    size_t started = 0;
    tlr_logger *lg = NULL;
    ks_store *store = NULL;
    ks_api *api = NULL;
    ks_http *http = NULL, *https = NULL;
    ks_certs certs = { 0 };

    /* Before --help: scripts run `kubesim --help | grep -q ...`, and a
     * help text longer than one pipe write must not die of SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    tlr_conf_result res;
    if (tlr_conf_load(table, nset, block, argc, argv, (const char *const *)environ, &res)) {
        fprintf(stderr, "kubesim: %s\n", res.err);
        goto out_nolog;
    }
    if (res.help) {
        tlr_conf_help("kubesim", "A Kubernetes API server subset with a scheduler and "
                                 "kubelet simulator, for tailor's tests and benchmarks.",
                      table, nset, stdout);
        status = 0;
        goto out_nolog;
    }
    if (res.version) {
        printf("kubesim 0.1.0 (serves v1.31.0-kubesim)\n");
        status = 0;
        goto out_nolog;
    }
    tlr_log_level level = TLR_LOG_INFO;
    if (tlr_log_level_parse(cfg->log_level, &level)) {
        fprintf(stderr, "kubesim: --log-level: unknown level \"%s\"\n", cfg->log_level);
        goto out_nolog;
    }
    tlr_logger_create(&(tlr_log_opts){ .service = "kubesim", .level = level, .fd = 2 }, &lg);

    /* Signals go to sigwait below, never to a worker thread. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = ks_store_create(&(ks_store_opts){ .history = (size_t)cfg->history, .log = lg },
                             &store);
    if (rc) {
        TLR_ERROR(lg, "cannot create the store", TLR_ERR(rc));
        goto out;
    }
    ks_api_create(&(ks_api_opts){ .store = store, .token = cfg->token,
                                  .bookmark_ms = (int)cfg->bookmark_ms, .log = lg },
                  &api);
    /* The CA and the URL nodes reach us at exist before the modules start:
     * the kubelet simulator checks nodes' bootstrap against them. */
    char server[300] = "";
    if (cfg->listen && cfg->listen[0])
        snprintf(server, sizeof(server), "http://%s", cfg->listen);
    if (cfg->tls_listen && cfg->tls_listen[0]) {
        char host[256];
        snprintf(host, sizeof(host), "%s", cfg->tls_listen);
        char *colon = strrchr(host, ':');
        if (colon)
            *colon = 0;
        /* localhost, 127.0.0.1, kubesim, the listen host, up to 16 of --tls-san. */
        const char *hosts[4 + 16 + 1] = { "localhost", "127.0.0.1", "kubesim" };
        size_t nh = 3;
        if (host[0])
            hosts[nh++] = host;
        char sans[1024];
        snprintf(sans, sizeof(sans), "%s", cfg->tls_san ? cfg->tls_san : "");
        for (char *save = NULL, *t = strtok_r(sans, ",", &save); t && nh < 4 + 16;
             t = strtok_r(NULL, ",", &save))
            if (*t)
                hosts[nh++] = t;
        hosts[nh] = NULL;
        char err[256];
        rc = ks_certs_generate(cfg->data_dir, hosts, &certs, err, sizeof(err));
        if (rc) {
            TLR_ERROR(lg, "cannot create certificates", TLR_S("reason", err), TLR_ERR(rc));
            goto out;
        }
        snprintf(server, sizeof(server), "https://%s", cfg->tls_listen);
    }
    for (size_t i = 0; i < nmod; i++) {
        if (modules[i] == &ks_kubelet_module)
            ks_kubelet_cfg_set_apiserver(block + offsets[i], server, certs.ca_pem);
        rc = modules[i]->start(store, block + offsets[i], lg, &states[i]);
        if (rc) {
            TLR_ERROR(lg, "module failed to start", TLR_S("module", modules[i]->name),
                      TLR_ERR(rc));
            goto out;
        }
        started++;
    }
    if (cfg->listen && cfg->listen[0]) {
        rc = ks_http_start(api, cfg->listen, NULL, NULL, lg, &http);
        if (rc) {
            TLR_ERROR(lg, "cannot listen", TLR_S("listen", cfg->listen), TLR_ERR(rc));
            goto out;
        }
        TLR_INFO(lg, "serving HTTP", TLR_S("listen", cfg->listen));
    }
    if (cfg->tls_listen && cfg->tls_listen[0]) {
        rc = ks_http_start(api, cfg->tls_listen, certs.cert_pem, certs.key_pem, lg, &https);
        if (rc) {
            TLR_ERROR(lg, "cannot listen (TLS)", TLR_S("listen", cfg->tls_listen),
                      TLR_ERR(rc));
            goto out;
        }
        TLR_INFO(lg, "serving HTTPS", TLR_S("listen", cfg->tls_listen),
                 TLR_S("ca", cfg->data_dir));
    }
    if (!server[0]) {
        TLR_ERROR(lg, "nothing to serve: set --listen and/or --tls-listen");
        goto out;
    }
    if (cfg->kubeconfig_out && cfg->kubeconfig_out[0]) {
        rc = write_kubeconfig(cfg->kubeconfig_out, server, certs.ca_pem, cfg->token);
        if (rc) {
            TLR_ERROR(lg, "cannot write kubeconfig", TLR_S("path", cfg->kubeconfig_out),
                      TLR_ERR(rc));
            goto out;
        }
        printf("kubesim ready: kubectl --kubeconfig %s get nodes\n", cfg->kubeconfig_out);
    } else {
        printf("kubesim ready: kubectl --server %s%s get nodes\n", server,
               cfg->token && cfg->token[0] ? " --token <token>" : "");
    }
    fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
    TLR_INFO(lg, "stopping", TLR_I("signal", sig));
    status = 0;
out:
    if (store)
        ks_store_close(store); /* ends every watch stream */
    ks_http_stop(https);
    ks_http_stop(http);
    if (store)
        ks_store_stop_controllers(store);
    for (size_t i = started; i-- > 0;)
        if (modules[i]->stop)
            modules[i]->stop(states[i]);
    ks_api_free(api);
    ks_store_free(store);
    ks_certs_free(&certs);
    tlr_logger_free(lg);
out_nolog:
    tlr_conf_free(table, nset, block);
    free(table);
    free(block);
    return status;
}
