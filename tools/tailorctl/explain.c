/* explain.c - tailorctl explain node NAME | nodeclaim NAME: ask the
 * disruptor whether a node can be disrupted, what blocks it (which PDB,
 * which annotation, which budget, until when) and what consolidation
 * would do with it and save -- the dry run Karpenter users ask for.
 *
 * Exit 0 when the node could be disrupted now, 3 when something blocks
 * it, 1 when the disruptor could not answer, 2 for bad usage.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tailor/v1/disruptor.pb-c.h"
#include "tailorctl.h"
#include "tlr_buf.h"
#include "tlr_conf.h"
#include "tlr_err.h"
#include "tlr_log.h"
#include "tlr_clnt.h"
#include "tlr_req.h"
#include "tlr_time.h"

typedef struct explain_cfg {
    char *disruptor;
    int64_t timeout_ms;
    bool simulate;
    int output;
    ctl_transport tr;
} explain_cfg;

static const char *const outputs[] = { "text", "json", NULL };

static const tlr_setting settings[] = {
    { "disruptor", "TAILOR_DISRUPTOR", TLR_SET_STR, offsetof(explain_cfg, disruptor),
      "tls+tcp://127.0.0.1:7131", "the disruptor's REP URL" },
    { "timeout", NULL, TLR_SET_DURATION, offsetof(explain_cfg, timeout_ms), "30s",
      "how long to wait for the answer", .min = 100, .max = 600000 },
    { "simulate", NULL, TLR_SET_BOOL, offsetof(explain_cfg, simulate), "true",
      "simulate what consolidation would do with the node (--no-simulate is faster)" },
    { "output", NULL, TLR_SET_ENUM, offsetof(explain_cfg, output), "text",
      "output format: text or json", .choices = outputs },
    CTL_TRANSPORT_SETTINGS(explain_cfg, tr),
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

static const char *const disruptor_only[] = { TLR_ID_DISRUPTOR, NULL };

static const char *kind_name(Tailor__V1__BlockerKind k)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&tailor__v1__blocker_kind__descriptor, k);
    return v ? v->name + strlen("BLOCKER_KIND_") : "UNKNOWN";
}

static const char *method_name(Tailor__V1__DisruptionMethod m)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&tailor__v1__disruption_method__descriptor, m);
    return v ? v->name + strlen("DISRUPTION_METHOD_") : "UNKNOWN";
}

static void print_text(const Tailor__V1__ExplainResponse *r)
{
    printf("node %s (NodeClaim %s, NodePool %s)\n", r->node_name, r->nodeclaim_name[0] ? r->nodeclaim_name : "-",
           r->nodepool[0] ? r->nodepool : "-");
    printf("disruptable: %s\n", r->disruptable ? "yes" : "no");
    if (r->n_blockers) {
        printf("blocked by:\n");
        for (size_t i = 0; i < r->n_blockers; i++) {
            const Tailor__V1__Blocker *b = r->blockers[i];
            printf("  %-22s %s", kind_name(b->kind), b->message);
            if (b->until_unix_ms) {
                char t[TLR_TIME_BUFLEN];
                tlr_time_format_s(b->until_unix_ms, t);
                printf(" (until %s)", t);
            }
            printf("\n");
        }
    }
    if (r->n_eligible_methods) {
        printf("eligible for:");
        for (size_t i = 0; i < r->n_eligible_methods; i++)
            printf(" %s", method_name(r->eligible_methods[i]));
        printf("\n");
    }
    const Tailor__V1__DisruptionDecision *d = r->decision;
    if (d) {
        bool pending = d->state != TAILOR__V1__DECISION_STATE__DECISION_STATE_UNSPECIFIED;
        printf("%s: %s\n", pending ? "decision in flight" : "consolidation would", d->reason);
        if (d->n_replacements && d->replacements[0]->n_instance_type_options)
            printf("  replacement: %s ($%.4f/h; %zu options)\n",
                   d->replacements[0]->instance_type_options[0]->name,
                   d->replacements[0]->instance_type_options[0]->price_per_hour,
                   d->replacements[0]->n_instance_type_options);
        printf("  cost $%.4f/h -> $%.4f/h, saves $%.4f/h\n", d->cost_before_per_hour,
               d->cost_after_per_hour, d->savings_per_hour);
    }
}

static void print_json(const Tailor__V1__ExplainResponse *r)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 20);
    tlr_buf_adds(&b, "{\"node\":");
    tlr_buf_add_json_str(&b, r->node_name);
    tlr_buf_adds(&b, ",\"nodeclaim\":");
    tlr_buf_add_json_str(&b, r->nodeclaim_name);
    tlr_buf_adds(&b, ",\"nodepool\":");
    tlr_buf_add_json_str(&b, r->nodepool);
    tlr_buf_printf(&b, ",\"disruptable\":%s,\"blockers\":[", r->disruptable ? "true" : "false");
    for (size_t i = 0; i < r->n_blockers; i++) {
        const Tailor__V1__Blocker *x = r->blockers[i];
        tlr_buf_printf(&b, "%s{\"kind\":\"%s\",\"object\":{\"kind\":", i ? "," : "", kind_name(x->kind));
        tlr_buf_add_json_str(&b, x->object ? x->object->kind : "");
        tlr_buf_adds(&b, ",\"namespace\":");
        tlr_buf_add_json_str(&b, x->object ? x->object->namespace_ : "");
        tlr_buf_adds(&b, ",\"name\":");
        tlr_buf_add_json_str(&b, x->object ? x->object->name : "");
        tlr_buf_adds(&b, "},\"message\":");
        tlr_buf_add_json_str(&b, x->message);
        tlr_buf_printf(&b, ",\"until_unix_ms\":%lld}", (long long)x->until_unix_ms);
    }
    tlr_buf_adds(&b, "],\"eligible_methods\":[");
    for (size_t i = 0; i < r->n_eligible_methods; i++)
        tlr_buf_printf(&b, "%s\"%s\"", i ? "," : "", method_name(r->eligible_methods[i]));
    tlr_buf_adds(&b, "]");
    const Tailor__V1__DisruptionDecision *d = r->decision;
    if (d) {
        tlr_buf_printf(&b, ",\"decision\":{\"method\":\"%s\",\"in_flight\":%s,\"reason\":",
                       method_name(d->method),
                       d->state != TAILOR__V1__DECISION_STATE__DECISION_STATE_UNSPECIFIED ? "true" : "false");
        tlr_buf_add_json_str(&b, d->reason);
        tlr_buf_printf(&b, ",\"cost_before_per_hour\":%.6f,\"cost_after_per_hour\":%.6f,"
                       "\"savings_per_hour\":%.6f,\"replacement\":",
                       d->cost_before_per_hour, d->cost_after_per_hour, d->savings_per_hour);
        if (d->n_replacements && d->replacements[0]->n_instance_type_options)
            tlr_buf_add_json_str(&b, d->replacements[0]->instance_type_options[0]->name);
        else
            tlr_buf_adds(&b, "null");
        tlr_buf_adds(&b, "}");
    }
    tlr_buf_adds(&b, "}\n");
    fputs(tlr_buf_str(&b), stdout);
    tlr_buf_free(&b);
}

int cmd_explain(int argc, char **argv)
{
    explain_cfg cfg = { 0 };
    tlr_conf_result res = { 0 };
    extern char **environ;
    const char *what = NULL, *name = NULL;
    int rc = tlr_conf_load(settings, NSETTINGS, &cfg, argc, argv, (const char *const *)environ, &res);
    if (rc == TLR_OK && res.argc == 2) {
        what = res.argv[0];
        name = res.argv[1];
    }
    if (rc == TLR_OK && res.help) {   /* --help: on stdout, success */
        tlr_conf_help("tailorctl explain node|nodeclaim NAME",
                      "Ask the disruptor whether a node can be disrupted, what blocks it, and "
                      "what consolidation would do with it.",
                      settings, NSETTINGS, stdout);
        tlr_conf_free(settings, NSETTINGS, &cfg);
        return 0;
    }
    if (rc || !what) {   /* a usage error: one line on stderr */
        fprintf(stderr, "tailorctl explain: %s\nUsage: tailorctl explain node|nodeclaim NAME [OPTIONS] "
                "(--help for more)\n", rc ? res.err : "say 'node NAME' or 'nodeclaim NAME'");
        tlr_conf_free(settings, NSETTINGS, &cfg);
        return 2;
    }
    Tailor__V1__ExplainRequest req = TAILOR__V1__EXPLAIN_REQUEST__INIT;
    if (!strcmp(what, "node")) {
        req.target_case = TAILOR__V1__EXPLAIN_REQUEST__TARGET_NODE_NAME;
        req.node_name = (char *)name;
    } else if (!strcmp(what, "nodeclaim")) {
        req.target_case = TAILOR__V1__EXPLAIN_REQUEST__TARGET_NODECLAIM_NAME;
        req.nodeclaim_name = (char *)name;
    } else {
        fprintf(stderr, "tailorctl explain: say 'node NAME' or 'nodeclaim NAME', not '%s'\n", what);
        tlr_conf_free(settings, NSETTINGS, &cfg);
        return 2;
    }
    req.simulate = cfg.simulate;
    tlr_tls *tls = NULL;
    if ((rc = ctl_transport_open("explain", &cfg.tr, (const char *const *)&cfg.disruptor, 1,
                                 &tls))) {
        tlr_conf_free(settings, NSETTINGS, &cfg);
        return rc;
    }
    tlr_logger *quiet;
    tlr_logger_create(&(tlr_log_opts){ .service = "tailorctl", .level = TLR_LOG_FATAL, .fd = 2 }, &quiet);
    const char *url = cfg.disruptor;
    tlr_req_client *c = NULL;
    Tailor__V1__ExplainResponse *r = NULL;
    tlr_status st = { 0 };
    int out = 1;
    rc = tlr_req_client_create(&(tlr_req_opts){ .urls = &url, .nurls = 1, .timeout_ms = (int)cfg.timeout_ms,
                                                .log = quiet, .sender = "tailorctl",
                                                .tls = tls, .allow = disruptor_only },
                               &c);
    if (rc == TLR_OK)
        rc = tlr_disruptor_clnt_explain(&(tlr_clnt){ c, (int)cfg.timeout_ms, quiet, false },
                                        &req, &r, &st);
    if (rc) {
        fprintf(stderr, "tailorctl explain: %s: %s%s%s\n", url, tlr_strerror(rc),
                st.message[0] ? ": " : "", st.message);
    } else {
        if (cfg.output == 1)
            print_json(r);
        else
            print_text(r);
        out = r->disruptable ? 0 : 3;
        tlr_clnt_free(r);
    }
    tlr_req_client_free(c);
    tlr_logger_free(quiet);
    tlr_tls_free(tls);
    tlr_conf_free(settings, NSETTINGS, &cfg);
    return out;
}
