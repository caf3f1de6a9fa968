/* lc_cloud.c - the real lc_cloud_ops over common/aws (lc_cloud.h).
 *
 * EC2 calls go through tlr_ec2 (typed) and its Query client for the
 * launch-template actions tlr_ec2 does not wrap.  SSM GetParameter speaks
 * the AWS JSON 1.1 protocol (tlr_awsjson).  The parallel verbs use one
 * EC2 client per worker thread, made at creation (worker 0 is the loop
 * thread's own client).
 */
#include "lc_cloud.h"

#include <json-c/json.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchtemplate.h"
#include "par.h"
#include "tlr_alloc.h"
#include "tlr_awsjson.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_time.h"

struct lc_cloud {
    char *cluster, *cluster_tag, *region;
    tlr_aws_creds *creds;
    tlr_logger *log;
    tlr_ec2 *ec2[LC_PAR_MAX];   /* [0] is the loop thread's */
    int parallel;
    tlr_aws_json *ssm;
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
    qo.fence = o->fence;
    c->parallel = o->parallel > 0 ? o->parallel : 8;
    if (c->parallel > LC_PAR_MAX)
        c->parallel = LC_PAR_MAX;
    int rc = TLR_OK;
    for (int i = 0; i < c->parallel && rc == TLR_OK; i++)
        rc = tlr_ec2_create(&qo, &c->ec2[i]);
    if (rc == TLR_OK) {
        /* SSM beside EC2: the same override host when one is set (moto
         * serves every service on one port), else the regional endpoint. */
        const char *ep = o->endpoint && o->endpoint[0] ? o->endpoint : NULL;
        tlr_aws_json_opts jo = { .service = "ssm", .target_prefix = "AmazonSSM",
                                 .region = tlr_aws_query_region(tlr_ec2_query(c->ec2[0])),
                                 .endpoint = ep, .creds = o->creds, .log = o->log,
                                 .timeout_ms = o->timeout_ms, .fence = o->fence };
        rc = tlr_aws_json_create(&jo, &c->ssm);
    }
    if (rc) {
        lc_cloud_free(c);
        return rc;
    }
    c->cluster = tlr_strdup(o->cluster);
    size_t n = strlen(o->cluster) + 32;
    c->cluster_tag = tlr_malloc(n);
    snprintf(c->cluster_tag, n, "kubernetes.io/cluster/%s", o->cluster);
    c->region = tlr_strdup(tlr_aws_query_region(tlr_ec2_query(c->ec2[0])));
    c->creds = o->creds;
    c->log = o->log;
    *out = c;
    return TLR_OK;
}

void lc_cloud_free(lc_cloud *c)
{
    if (!c)
        return;
    for (int i = 0; i < LC_PAR_MAX; i++)
        tlr_ec2_free(c->ec2[i]);
    tlr_aws_json_free(c->ssm);
    free(c->cluster);
    free(c->cluster_tag);
    free(c->region);
    free(c);
}

/* ---- SSM ------------------------------------------------------------- */

int lc_cloud_ssm_get(lc_cloud *c, const char *name, char **value, tlr_aws_error *err)
{
    json_object *req = json_object_new_object(), *resp = NULL;
    json_object_object_add(req, "Name", json_object_new_string(name));
    int rc = tlr_aws_json_call(c->ssm, "GetParameter", req, &resp, err);
    json_object_put(req);
    if (rc != TLR_OK)
        return rc;
    json_object *pv = NULL, *v = NULL;
    if (!json_object_object_get_ex(resp, "Parameter", &pv) ||
        !json_object_object_get_ex(pv, "Value", &v))
        rc = TLR_E_PARSE;
    else
        *value = tlr_strdup(json_object_get_string(v));
    json_object_put(resp);
    return rc;
}

static int cloud_ssm_ami(void *arg, const char *parameter, char **ami, tlr_aws_error *err)
{
    return lc_cloud_ssm_get(arg, parameter, ami, err);
}

/* ---- launch templates -------------------------------------------------- */

static int describe_lt(lc_cloud *c, const char *name, char **id, tlr_aws_error *err)
{
    tlr_aws_params *p;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "LaunchTemplateName.1", name);
    tlr_xml_doc *doc = NULL;
    int rc = tlr_aws_query_call(tlr_ec2_query(c->ec2[0]), "DescribeLaunchTemplates", p, &doc,
                                err);
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

static int cloud_lt(void *arg, const Tailor__V1__NodeClass *nc, const char *ami, char **lt_id,
                    tlr_aws_error *err)
{
    lc_cloud *c = arg;
    int rc;
    if (!ami || !ami[0])
        return TLR_E_INVAL;
    lc_lt_opts o = { c->cluster, ami };
    char name[128];
    lc_lt_name(nc, &o, name, sizeof(name));
    if ((rc = describe_lt(c, name, lt_id, err)) != TLR_E_NOTFOUND)
        goto out;
    tlr_aws_params *p;
    tlr_aws_params_create(&p);
    lc_lt_params(nc, &o, name, add_param, p);
    tlr_xml_doc *doc = NULL;
    rc = tlr_aws_query_call(tlr_ec2_query(c->ec2[0]), "CreateLaunchTemplate", p, &doc, err);
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
    return rc;
}

/* ---- instances ----------------------------------------------------------- */

static int cloud_fleet(void *arg, const tlr_ec2_fleet_req *r, tlr_ec2_fleet_result *out,
                       tlr_aws_error *err)
{
    lc_cloud *c = arg;
    return tlr_ec2_create_fleet(c->ec2[0], r, out, err);
}

typedef struct fleets_job {
    lc_cloud *c;
    const tlr_ec2_fleet_req *const *reqs;
    tlr_ec2_fleet_result *outs;
    int *rcs;
    tlr_aws_error *errs;
    _Atomic int64_t last_issued;
} fleets_job;

static void one_fleet(void *arg, size_t i, int worker)
{
    fleets_job *j = arg;
    int64_t t = tlr_mono_ms(), seen = atomic_load(&j->last_issued);
    while (t > seen && !atomic_compare_exchange_weak(&j->last_issued, &seen, t))
        ;
    j->rcs[i] = tlr_ec2_create_fleet(j->c->ec2[worker], j->reqs[i], &j->outs[i], &j->errs[i]);
}

static void cloud_fleets(void *arg, size_t n, const tlr_ec2_fleet_req *const *reqs,
                         tlr_ec2_fleet_result *outs, int *rcs, tlr_aws_error *errs,
                         int64_t *last_issued_mono)
{
    lc_cloud *c = arg;
    fleets_job j = { c, reqs, outs, rcs, errs, 0 };
    lc_par_run(n, c->parallel, one_fleet, &j);
    if (last_issued_mono)
        *last_issued_mono = atomic_load(&j.last_issued);
}

typedef struct tags_job {
    lc_cloud *c;
    const char *const *ids;
    const tlr_ec2_tag *const *tags;
    const size_t *ntags;
    int *rcs;
} tags_job;

static void one_tag(void *arg, size_t i, int worker)
{
    tags_job *j = arg;
    const char *id[1] = { j->ids[i] };
    j->rcs[i] = tlr_ec2_create_tags(j->c->ec2[worker], id, 1, j->tags[i], j->ntags[i], NULL);
}

static void cloud_tag(void *arg, size_t n, const char *const *ids, const tlr_ec2_tag *const *tags,
                      const size_t *ntags, int *rcs)
{
    lc_cloud *c = arg;
    tags_job j = { c, ids, tags, ntags, rcs };
    lc_par_run(n, c->parallel, one_tag, &j);
}

/* Live (pending/running) instances tagged for the cluster; only those
 * tagged karpenter.sh/nodeclaim=claim when claim is set, only id when id
 * is set. */
static int live_instances(lc_cloud *c, const char *claim, const char *id, tlr_ec2_instances *out,
                          tlr_aws_error *err)
{
    const char *states[2] = { "pending", "running" };
    const char *keys[1] = { c->cluster_tag };
    const char *claims[1] = { claim };
    const char *ids[1] = { id };
    tlr_ec2_filter f[3] = {
        { "tag-key", keys, 1 },
        { "instance-state-name", states, 2 },
        { "tag:karpenter.sh/nodeclaim", claims, 1 },
    };
    return tlr_ec2_describe_instances(c->ec2[0], f, claim ? 3 : 2, id ? ids : NULL, id ? 1 : 0, 0,
                                      out, err);
}

static int cloud_instances(void *arg, const char *claim, tlr_ec2_instances *out,
                           tlr_aws_error *err)
{
    return live_instances(arg, claim, NULL, out, err);
}

static int cloud_instance(void *arg, const char *id, tlr_ec2_instances *out, tlr_aws_error *err)
{
    int rc = live_instances(arg, NULL, id, out, err);
    if (rc == TLR_E_NOTFOUND || (rc && !strncmp(err->code, "InvalidInstanceID.", 18)))
        return TLR_OK;   /* no such instance: nothing of ours */
    return rc;
}

static int cloud_instance_any(void *arg, const char *id, tlr_ec2_instances *out,
                              tlr_aws_error *err)
{
    lc_cloud *c = arg;
    const char *keys[1] = { c->cluster_tag };
    const char *ids[1] = { id };
    tlr_ec2_filter f[1] = { { "tag-key", keys, 1 } };
    int rc = tlr_ec2_describe_instances(c->ec2[0], f, 1, ids, 1, 0, out, err);
    if (rc == TLR_E_NOTFOUND || (rc && !strncmp(err->code, "InvalidInstanceID.", 18)))
        return TLR_OK;   /* no such instance: nothing of ours */
    return rc;
}

static int cloud_terminate(void *arg, const char *const *ids, size_t n, tlr_aws_error *err)
{
    lc_cloud *c = arg;
    return tlr_ec2_terminate_instances(c->ec2[0], ids, n, err);
}

static int cloud_subnets(void *arg, const tlr_ec2_filter *f, size_t nf, tlr_ec2_subnets *out,
                         tlr_aws_error *err)
{
    lc_cloud *c = arg;
    return tlr_ec2_describe_subnets(c->ec2[0], f, nf, NULL, 0, out, err);
}

static int cloud_sgs(void *arg, const tlr_ec2_filter *f, size_t nf,
                     tlr_ec2_security_groups *out, tlr_aws_error *err)
{
    lc_cloud *c = arg;
    return tlr_ec2_describe_security_groups(c->ec2[0], f, nf, NULL, 0, out, err);
}

static int cloud_images(void *arg, const tlr_ec2_filter *f, size_t nf, tlr_ec2_images *out,
                        tlr_aws_error *err)
{
    lc_cloud *c = arg;
    return tlr_ec2_describe_images(c->ec2[0], f, nf, NULL, 0, NULL, 0, out, err);
}

lc_cloud_ops lc_cloud_ops_of(lc_cloud *c)
{
    lc_cloud_ops o = { 0 };
    o.launch_template = cloud_lt;
    o.create_fleet = cloud_fleet;
    o.instances = cloud_instances;
    o.instance = cloud_instance;
    o.instance_any = cloud_instance_any;
    o.terminate = cloud_terminate;
    o.create_fleets = cloud_fleets;
    o.tag_instances = cloud_tag;
    o.subnets = cloud_subnets;
    o.security_groups = cloud_sgs;
    o.images = cloud_images;
    o.ssm_ami = cloud_ssm_ami;
    o.arg = c;
    return o;
}
