/* cloud.c - the real lc_cloud_ops over common/aws (cloud.h).
 *
 * EC2 calls go through tlr_ec2 (typed) and a second Query client for the
 * launch-template actions tlr_ec2 does not wrap.  SSM GetParameter speaks
 * the AWS JSON 1.1 protocol (POST /, X-Amz-Target:
 * AmazonSSM.GetParameter), signed here with tlr_sigv4 on a curl handle of
 * our own; it is called once per AMI parameter and cached.
 */
#include "cloud.h"

#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchtemplate.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_sigv4.h"
#include "tlr_time.h"

#define SSM_BODY_MAX (1u << 20)

struct lc_cloud {
    char *cluster, *cluster_tag, *default_ami, *k8s, *region, *ssm_url;
    tlr_aws_creds *creds;
    tlr_logger *log;
    tlr_ec2 *ec2;
    tlr_aws_query *q;   /* ec2, for launch templates */
    int timeout_ms;
};

int lc_cloud_create(const lc_cloud_opts *o, lc_cloud **out)
{
    lc_cloud *c = tlr_calloc(1, sizeof(*c));
    tlr_aws_query_opts qo = { 0 };
    qo.service = "ec2";
    qo.version = TLR_EC2_API_VERSION;
    qo.region = o->region;
    qo.endpoint = o->endpoint;
    qo.creds = o->creds;
    qo.log = o->log;
    qo.timeout_ms = o->timeout_ms;
    int rc = tlr_ec2_create(&qo, &c->ec2);
    if (rc == TLR_OK)
        rc = tlr_aws_query_create(&qo, &c->q);
    if (rc) {
        lc_cloud_free(c);
        return rc;
    }
    c->cluster = tlr_strdup(o->cluster);
    size_t n = strlen(o->cluster) + 32;
    c->cluster_tag = tlr_malloc(n);
    snprintf(c->cluster_tag, n, "kubernetes.io/cluster/%s", o->cluster);
    c->default_ami = tlr_strdup(o->default_ami && o->default_ami[0] ? o->default_ami : NULL);
    c->k8s = tlr_strdup(o->k8s_version);
    c->region = tlr_strdup(tlr_aws_query_region(c->q));
    /* SSM beside EC2: the same override host when one is set (moto serves
     * every service on one port), else the regional endpoint. */
    const char *ep = o->endpoint && o->endpoint[0] ? o->endpoint : getenv("AWS_ENDPOINT_URL");
    if (ep && ep[0]) {
        c->ssm_url = tlr_strdup(ep);
    } else {
        char url[256];
        snprintf(url, sizeof(url), "https://ssm.%s.amazonaws.com/", c->region);
        c->ssm_url = tlr_strdup(url);
    }
    c->creds = o->creds;
    c->log = o->log;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    *out = c;
    return TLR_OK;
}

void lc_cloud_free(lc_cloud *c)
{
    if (!c)
        return;
    tlr_ec2_free(c->ec2);
    tlr_aws_query_free(c->q);
    free(c->cluster);
    free(c->cluster_tag);
    free(c->default_ami);
    free(c->k8s);
    free(c->region);
    free(c->ssm_url);
    free(c);
}

/* ---- SSM ------------------------------------------------------------- */

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    return tlr_buf_add(arg, p, sz * n) == TLR_OK ? sz * n : 0;
}

int lc_cloud_ssm_get(lc_cloud *c, const char *name, char **value, tlr_aws_error *err)
{
    tlr_aws_credentials cr = { 0 };
    int rc = tlr_aws_creds_get(c->creds, &cr);
    if (rc)
        return rc;
    json_object *req = json_object_new_object();
    json_object_object_add(req, "Name", json_object_new_string(name));
    const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);

    /* host[:port] from the URL */
    char host[256] = "";
    const char *h = strstr(c->ssm_url, "://");
    h = h ? h + 3 : c->ssm_url;
    size_t hl = strcspn(h, "/");
    snprintf(host, sizeof(host), "%.*s", (int)hl, h);
    char date[32];
    tlr_sigv4_amz_date(tlr_wall_ms(), date);
    tlr_sigv4_header hs[5] = {
        { "host", host }, { "x-amz-date", date },
        { "content-type", "application/x-amz-json-1.1" },
        { "x-amz-target", "AmazonSSM.GetParameter" },
        { "x-amz-security-token", cr.session_token },
    };
    size_t nh = cr.session_token ? 5 : 4;
    tlr_sigv4_request sr = { "POST", "/", NULL, hs, nh, body, strlen(body), NULL, false };
    tlr_sigv4_key key = { cr.access_key_id, cr.secret_access_key, c->region, "ssm" };
    tlr_sigv4_result sig = { 0 };
    tlr_buf resp;
    tlr_buf_init(&resp, SSM_BODY_MAX);
    struct curl_slist *hdr = NULL;
    CURL *cu = NULL;
    if ((rc = tlr_sigv4_sign(&sr, &key, &sig)))
        goto out;
    char line[2048];
    for (size_t i = 1; i < nh; i++) {
        snprintf(line, sizeof(line), "%s: %s", hs[i].name, hs[i].value);
        hdr = curl_slist_append(hdr, line);
    }
    snprintf(line, sizeof(line), "Authorization: %s", sig.authorization);
    hdr = curl_slist_append(hdr, line);
    hdr = curl_slist_append(hdr, "Expect:");
    cu = curl_easy_init();
    curl_easy_setopt(cu, CURLOPT_URL, c->ssm_url);
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cu, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(cu, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(cu);
    long status = 0;
    curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
        rc = cc == CURLE_OPERATION_TIMEDOUT ? TLR_E_TIMEOUT : TLR_E_IO;
        goto out;
    }
    json_object *j = json_tokener_parse(resp.data ? resp.data : "");
    if (status != 200) {
        const char *type = "";
        json_object *t;
        if (j && json_object_object_get_ex(j, "__type", &t))
            type = json_object_get_string(t);
        const char *hash = strrchr(type, '#');
        type = hash ? hash + 1 : type;
        if (err) {
            err->http_status = (int)status;
            snprintf(err->code, sizeof(err->code), "%s", type);
        }
        rc = strcmp(type, "ParameterNotFound") == 0 ? TLR_E_NOTFOUND
                                                    : tlr_aws_error_class(type, (int)status);
        json_object_put(j);
        goto out;
    }
    json_object *pv = NULL, *v = NULL;
    if (!j || !json_object_object_get_ex(j, "Parameter", &pv) ||
        !json_object_object_get_ex(pv, "Value", &v)) {
        rc = TLR_E_PARSE;
    } else {
        *value = tlr_strdup(json_object_get_string(v));
    }
    json_object_put(j);
out:
    if (cu)
        curl_easy_cleanup(cu);
    curl_slist_free_all(hdr);
    tlr_sigv4_result_free(&sig);
    tlr_buf_free(&resp);
    json_object_put(req);
    tlr_aws_credentials_clear(&cr);
    return rc;
}

/* ---- launch templates -------------------------------------------------- */

static int resolve_ami(lc_cloud *c, const Tailor__V1__NodeClass *nc, char **ami,
                       tlr_aws_error *err)
{
    const char *direct = lc_lt_direct_ami(nc);
    if (direct) {
        *ami = tlr_strdup(direct);
        return TLR_OK;
    }
    char *param = lc_lt_ssm_parameter(nc, c->k8s, "x86_64");
    if (param) {
        int rc = lc_cloud_ssm_get(c, param, ami, err);
        if (rc && c->log)
            TLR_WARN(c->log, "AMI SSM parameter not resolved", TLR_S("nodeclass", nc->name),
                     TLR_S("parameter", param), TLR_ERR(rc));
        free(param);
        if (rc == TLR_OK)
            return rc;
        if (!c->default_ami)
            return rc;
    }
    if (!c->default_ami)
        return TLR_E_INVAL;
    *ami = tlr_strdup(c->default_ami);
    return TLR_OK;
}

static int describe_lt(lc_cloud *c, const char *name, char **id, tlr_aws_error *err)
{
    tlr_aws_params *p;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "LaunchTemplateName.1", name);
    tlr_xml_doc *doc = NULL;
    int rc = tlr_aws_query_call(c->q, "DescribeLaunchTemplates", p, &doc, err);
    tlr_aws_params_free(p);
    if (rc) {
        if (err && strstr(err->code, "NotFound"))
            rc = TLR_E_NOTFOUND;
        return rc;
    }
    const char *v = tlr_xml_find_text(tlr_xml_find_deep(tlr_xml_root(doc), "launchTemplates"),
                                      "item/launchTemplateId");
    rc = v && v[0] ? TLR_OK : TLR_E_NOTFOUND;
    if (rc == TLR_OK)
        *id = tlr_strdup(v);
    tlr_xml_free(doc);
    return rc;
}

static void add_param(void *arg, const char *key, const char *value)
{
    tlr_aws_params_add(arg, key, value);
}

static int cloud_lt(void *arg, const Tailor__V1__NodeClass *nc, char **lt_id,
                    tlr_aws_error *err)
{
    lc_cloud *c = arg;
    char *ami = NULL;
    int rc = resolve_ami(c, nc, &ami, err);
    if (rc)
        return rc;
    lc_lt_opts o = { c->cluster, ami };
    char name[128];
    lc_lt_name(nc, &o, name, sizeof(name));
    if ((rc = describe_lt(c, name, lt_id, err)) != TLR_E_NOTFOUND)
        goto out;
    tlr_aws_params *p;
    tlr_aws_params_create(&p);
    lc_lt_params(nc, &o, name, add_param, p);
    tlr_xml_doc *doc = NULL;
    rc = tlr_aws_query_call(c->q, "CreateLaunchTemplate", p, &doc, err);
    tlr_aws_params_free(p);
    if (rc == TLR_OK) {
        const char *v = tlr_xml_find_text(tlr_xml_find_deep(tlr_xml_root(doc), "launchTemplate"),
                                          "launchTemplateId");
        rc = v && v[0] ? TLR_OK : TLR_E_PARSE;
        if (rc == TLR_OK)
            *lt_id = tlr_strdup(v);
        tlr_xml_free(doc);
    } else if (err && strstr(err->code, "AlreadyExists")) {
        /* Another replica made it between our describe and create. */
        rc = describe_lt(c, name, lt_id, err);
    }
    if (rc == TLR_OK && c->log)
        TLR_INFO(c->log, "launch template ready", TLR_S("nodeclass", nc->name),
                 TLR_S("name", name), TLR_S("ami", ami));
out:
    free(ami);
    return rc;
}

/* ---- instances ----------------------------------------------------------- */

static int cloud_fleet(void *arg, const tlr_ec2_fleet_req *r, tlr_ec2_fleet_result *out,
                       tlr_aws_error *err)
{
    lc_cloud *c = arg;
    return tlr_ec2_create_fleet(c->ec2, r, out, err);
}

static int cloud_instances(void *arg, const char *claim, tlr_ec2_instances *out,
                           tlr_aws_error *err)
{
    lc_cloud *c = arg;
    const char *states[2] = { "pending", "running" };
    const char *keys[1] = { c->cluster_tag };
    const char *claims[1] = { claim };
    tlr_ec2_filter f[3] = {
        { "tag-key", keys, 1 },
        { "instance-state-name", states, 2 },
        { "tag:karpenter.sh/nodeclaim", claims, 1 },
    };
    return tlr_ec2_describe_instances(c->ec2, f, claim ? 3 : 2, NULL, 0, 0, out, err);
}

static int cloud_terminate(void *arg, const char *const *ids, size_t n, tlr_aws_error *err)
{
    lc_cloud *c = arg;
    return tlr_ec2_terminate_instances(c->ec2, ids, n, err);
}

lc_cloud_ops lc_cloud_ops_of(lc_cloud *c)
{
    return (lc_cloud_ops){ cloud_lt, cloud_fleet, cloud_instances, cloud_terminate, c };
}
