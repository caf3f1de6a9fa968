/* pdbserve.c - the admission webhook behind tailorctl pdb-check --serve.
 *
 * nng's HTTP server with a TLS configuration (nng is built on mbedTLS
 * here): POST /validate takes an AdmissionReview v1, GET /healthz answers
 * "ok".  For each review the namespace's pods, workloads and PDBs are
 * listed from the API server (when a kubeconfig or the in-cluster service
 * account works), so "minAvailable >= replicas" and overlaps can be
 * judged; without a cluster only the rules that need none apply, and the
 * response says so in a warning.  The decision itself is
 * tlr_pdbc_admit(), pure and unit-tested.  Requests run on nng's threads;
 * tlr_kube is thread-safe and nothing else is shared.
 *
 * Failure policy belongs to the ValidatingWebhookConfiguration
 * (deploy/webhook/); a malformed review gets HTTP 400.
 */
#include "pdbserve.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <nng/supplemental/tls/tls.h>
#include <openssl/crypto.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_log.h"

#define REVIEW_MAX (4u << 20)

typedef struct server {
    tlr_kube *kc;           /* NULL: no cluster, static rules only */
    tlr_logger *log;
} server;

static int read_pem(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return TLR_E_IO;
    tlr_buf b;
    tlr_buf_init(&b, 1u << 20);
    char chunk[4096];
    size_t n;
    int rc = TLR_OK;
    while (rc == TLR_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = tlr_buf_add(&b, chunk, n);
    fclose(f);
    if (rc == TLR_OK && b.len == 0)
        rc = TLR_E_PARSE;
    if (rc != TLR_OK) {
        tlr_buf_free(&b);
        return rc;
    }
    *out = tlr_buf_take(&b);
    return TLR_OK;
}

static void respond(nng_aio *aio, uint16_t status, const char *type, const char *body)
{
    nng_http_res *res = NULL;
    int rv;
    if ((rv = nng_http_res_alloc(&res)) == 0 && (rv = nng_http_res_set_status(res, status)) == 0 &&
        (rv = nng_http_res_set_header(res, "Content-Type", type)) == 0 &&
        (rv = nng_http_res_copy_data(res, body, strlen(body))) == 0) {
        nng_aio_set_output(aio, 0, res);
        res = NULL;
    }
    if (res)
        nng_http_res_free(res);
    nng_aio_finish(aio, rv);
}

static void on_healthz(nng_aio *aio)
{
    respond(aio, 200, "text/plain; charset=utf-8", "ok\n");
}

static void on_validate(nng_aio *aio)
{
    nng_http_req *req = nng_aio_get_input(aio, 0);
    nng_http_handler *hd = nng_aio_get_input(aio, 1);
    server *s = nng_http_handler_get_data(hd);
    void *body = NULL;
    size_t len = 0;
    json_object *review = NULL;
    tlr_pdbc *cluster = NULL;
    char err[512] = "", *answer = NULL;

    nng_http_req_get_data(req, &body, &len);
    if (tlr_json_parse(body, len, REVIEW_MAX, &review, err, sizeof(err)) != TLR_OK) {
        TLR_WARN(s->log, "admission review is not JSON", TLR_S("cause", err));
        respond(aio, 400, "text/plain; charset=utf-8", "request body is not JSON\n");
        return;
    }
    const char *ns = tlr_pdbc_review_namespace(review);
    const char *note = NULL;
    if (s->kc && ns) {
        tlr_pdbc_create(TLR_PDBC_LIVE, &cluster);
        if (pdbc_load_live(s->kc, ns, cluster, err, sizeof(err)) != TLR_OK) {
            TLR_WARN(s->log, "cannot read the namespace; checking without it",
                     TLR_S("namespace", ns), TLR_S("cause", err));
            tlr_pdbc_free(cluster);
            cluster = NULL;
            note = "tailor pdb-check could not read the namespace: only maxUnavailable 0 and "
                   "minAvailable 100% were checked";
        }
    }
    int rc = tlr_pdbc_admit(review, cluster, &answer, err, sizeof(err));
    if (rc != TLR_OK) {
        TLR_WARN(s->log, "bad admission review", TLR_S("cause", err));
        char msg[600];
        snprintf(msg, sizeof(msg), "%s\n", err);
        respond(aio, 400, "text/plain; charset=utf-8", msg);
    } else {
        json_object *a = NULL;
        bool allowed = true;
        if (tlr_json_parse(answer, strlen(answer), REVIEW_MAX, &a, NULL, 0) == TLR_OK) {
            tlr_json_bool(a, "response.allowed", &allowed);
            if (note) {
                json_object *resp = tlr_json_obj(a, "response"), *w = tlr_json_arr(resp, "warnings");
                if (!w) {
                    w = json_object_new_array();
                    json_object_object_add(resp, "warnings", w);
                }
                json_object_array_add(w, json_object_new_string(note));
                free(answer);
                answer = tlr_strdup(tlr_json_to_string(a, JSON_C_TO_STRING_PLAIN));
            }
        }
        TLR_INFO(s->log, "admission review", TLR_S("uid", tlr_json_str(review, "request.uid")),
                 TLR_S("operation", tlr_json_str(review, "request.operation")),
                 TLR_S("namespace", ns ? ns : ""),
                 TLR_S("name", tlr_json_str(review, "request.object.metadata.name")),
                 TLR_B("allowed", allowed),
                 TLR_S("reason", tlr_json_str(a, "response.status.message")));
        json_object_put(a);
        respond(aio, 200, "application/json", answer);
    }
    free(answer);
    tlr_pdbc_free(cluster);
    json_object_put(review);
}

int pdbserve_run(const pdbserve_opts *o)
{
    server s = { 0 };
    char *cert = NULL, *key = NULL, url[300], err[512] = "";
    nng_url *u = NULL;
    nng_http_server *srv = NULL;
    nng_tls_config *tls = NULL;
    nng_http_handler *hv = NULL, *hh = NULL;
    int exit_code = 1, rv;
    sigset_t sigs;

    tlr_logger_create(&(tlr_log_opts){ .service = "tailorctl-pdb-webhook", .level = TLR_LOG_INFO,
                                       .fd = 2 }, &s.log);
    if (read_pem(o->cert, &cert) != TLR_OK || read_pem(o->key, &key) != TLR_OK) {
        TLR_ERROR(s.log, "cannot read the TLS certificate or key", TLR_S("cert", o->cert),
                  TLR_S("key", o->key), TLR_S("cause", strerror(errno)));
        exit_code = 2;
        goto out;
    }
    if (pdbc_connect(o->kubeconfig, o->context, o->in_cluster, &s.kc, err, sizeof(err)) !=
        TLR_OK) {
        TLR_WARN(s.log, "no cluster: only the rules that need none are applied",
                 TLR_S("cause", err));
        s.kc = NULL;
    }

    /* Signals go to sigwait below, not to nng's threads. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    snprintf(url, sizeof(url), "https://%s", o->listen);
    if ((rv = nng_url_parse(&u, url)) != 0 || (rv = nng_http_server_hold(&srv, u)) != 0 ||
        (rv = nng_tls_config_alloc(&tls, NNG_TLS_MODE_SERVER)) != 0 ||
        (rv = nng_tls_config_own_cert(tls, cert, key, NULL)) != 0 ||
        (rv = nng_http_server_set_tls(srv, tls)) != 0 ||
        (rv = nng_http_handler_alloc(&hv, "/validate", on_validate)) != 0 ||
        (rv = nng_http_handler_set_method(hv, "POST")) != 0 ||
        (rv = nng_http_handler_collect_body(hv, true, REVIEW_MAX)) != 0 ||
        (rv = nng_http_handler_set_data(hv, &s, NULL)) != 0 ||
        (rv = nng_http_server_add_handler(srv, hv)) != 0) {
        TLR_ERROR(s.log, "cannot set up the webhook server", TLR_S("listen", o->listen),
                  TLR_S("cause", nng_strerror(rv)));
        goto out;
    }
    hv = NULL;   /* the server owns it now */
    if ((rv = nng_http_handler_alloc(&hh, "/healthz", on_healthz)) != 0 ||
        (rv = nng_http_server_add_handler(srv, hh)) != 0) {
        TLR_ERROR(s.log, "cannot add /healthz", TLR_S("cause", nng_strerror(rv)));
        goto out;
    }
    hh = NULL;
    if ((rv = nng_http_server_start(srv)) != 0) {
        TLR_ERROR(s.log, "cannot listen", TLR_S("listen", o->listen),
                  TLR_S("cause", nng_strerror(rv)));
        goto out;
    }
    TLR_INFO(s.log, "serving PDB admission reviews", TLR_S("url", url),
             TLR_B("cluster", s.kc != NULL));
    int sig = 0;
    sigwait(&sigs, &sig);
    TLR_INFO(s.log, "stopping", TLR_I("signal", sig));
    nng_http_server_stop(srv);
    exit_code = 0;
out:
    if (hv)
        nng_http_handler_free(hv);
    if (hh)
        nng_http_handler_free(hh);
    if (srv)
        nng_http_server_release(srv);
    if (tls)
        nng_tls_config_free(tls);
    nng_url_free(u);
    tlr_kube_free(s.kc);
    free(cert);
    if (key) {
        OPENSSL_cleanse(key, strlen(key));   /* the private key does not outlive the server */
        free(key);
    }
    tlr_logger_free(s.log);
    nng_fini();
    return exit_code;
}
