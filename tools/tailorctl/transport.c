/* transport.c - TLS for the tailorctl commands that dial services: the
 * same rules the services apply at start (see tlr_service.h). */
#include <stdio.h>

#include "tailorctl.h"
#include "tlr_err.h"
#include "tlr_tls.h"

int ctl_transport_open(const char *cmd, const ctl_transport *t, const char *const *urls,
                       size_t n, tlr_tls **out)
{
    bool need = false;
    for (size_t i = 0; i < n; i++) {
        if (tlr_tls_url_plaintext(urls[i])) {
            if (!t->insecure) {
                fprintf(stderr, "tailorctl %s: %s is plaintext; use tls+tcp:// with --tls-ca, "
                        "--tls-cert and --tls-key, or allow it with --insecure-transport\n",
                        cmd, urls[i]);
                return 2;
            }
            fprintf(stderr, "tailorctl %s: warning: insecure transport to %s (plaintext, "
                    "unauthenticated)\n", cmd, urls[i]);
        }
        need = need || tlr_tls_url(urls[i]);
    }
    *out = NULL;
    if (!need)
        return 0;
    char err[512];
    tlr_logger *quiet;
    tlr_logger_create(&(tlr_log_opts){ .service = "tailorctl", .level = TLR_LOG_FATAL, .fd = 2 },
                      &quiet);
    /* The reloads' log lines would go to quiet, but a CLI never reloads. */
    int rc = tlr_tls_create(&(tlr_tls_opts){ .ca_file = t->ca, .cert_file = t->cert,
                                             .key_file = t->key, .log = quiet },
                            out, err, sizeof(err));
    tlr_logger_free(quiet);
    if (rc != TLR_OK) {
        fprintf(stderr, "tailorctl %s: TLS: %s\n", cmd, err);
        return 2;
    }
    return 0;
}
