/* ec2.c - typed EC2 calls: DescribeInstances, RunInstances,
 * TerminateInstances, DescribeInstanceAttribute (userData), CreateTags,
 * CreateFleet, and their decoders.
 *
 * EC2 Query lists are 1-based "Name.N" parameters ("Filter.1.Value.2");
 * answers are <xxxSet><item>... lists.  Decoders copy what they need out
 * of the XML document so callers never hold on to it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_base64.h"
#include "tlr_ec2.h"
#include "tlr_err.h"
#include "tlr_time.h"

struct tlr_ec2 {
    tlr_aws_query *q;
};

int tlr_ec2_create(const tlr_aws_query_opts *opts, tlr_ec2 **out)
{
    tlr_aws_query *q = NULL;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    if ((rc = tlr_aws_query_create_for(opts, "ec2", TLR_EC2_API_VERSION, &q)) != TLR_OK)
        return rc;
    *out = tlr_calloc(1, sizeof(**out));
    (*out)->q = q;
    return TLR_OK;
}

void tlr_ec2_free(tlr_ec2 *e)
{
    if (e == NULL)
        return;
    tlr_aws_query_free(e->q);
    free(e);
}

/* --- instances ------------------------------------------------------- */

static void instance_clear(tlr_ec2_instance *i)
{
    free(i->id);
    free(i->type);
    free(i->state);
    free(i->zone);
    free(i->private_dns);
    free(i->private_ip);
    free(i->image_id);
    free(i->subnet_id);
    for (size_t t = 0; t < i->ntags; t++) {
        free(i->tags[t].key);
        free(i->tags[t].value);
    }
    free(i->tags);
    memset(i, 0, sizeof(*i));
}

void tlr_ec2_instances_free(tlr_ec2_instances *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        instance_clear(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

const char *tlr_ec2_instance_tag(const tlr_ec2_instance *inst, const char *key)
{
    for (size_t i = 0; inst != NULL && i < inst->ntags; i++)
        if (strcmp(inst->tags[i].key, key) == 0)
            return inst->tags[i].value;
    return NULL;
}

static int decode_instance(const tlr_xml_node *it, tlr_ec2_instance *out)
{
    const char *id = tlr_xml_find_text(it, "instanceId");
    const char *launch = tlr_xml_find_text(it, "launchTime");
    const char *life = tlr_xml_find_text(it, "instanceLifecycle");
    tlr_ec2_instance inst = { 0 };
    size_t cap = 0;

    if (id == NULL || id[0] == '\0')
        return TLR_E_PARSE;
    inst.id = tlr_strdup(id);
    inst.type = tlr_xml_find_dup(it, "instanceType");
    inst.state = tlr_xml_find_dup(it, "instanceState/name");
    inst.zone = tlr_xml_find_dup(it, "placement/availabilityZone");
    inst.private_dns = tlr_xml_find_dup(it, "privateDnsName");
    inst.private_ip = tlr_xml_find_dup(it, "privateIpAddress");
    inst.image_id = tlr_xml_find_dup(it, "imageId");
    inst.subnet_id = tlr_xml_find_dup(it, "subnetId");
    inst.spot = life != NULL && strcmp(life, "spot") == 0;
    if (launch != NULL && launch[0] != '\0' && tlr_time_parse(launch, &inst.launch_ms) != TLR_OK)
        inst.launch_ms = 0;
    for (const tlr_xml_node *t = tlr_xml_find(it, "tagSet/item"); t != NULL;
         t = tlr_xml_next_named(t)) {
        const char *k = tlr_xml_find_text(t, "key");

        if (k == NULL)
            continue;
        TLR_GROW(inst.tags, cap, inst.ntags + 1);
        inst.tags[inst.ntags].key = tlr_strdup(k);
        inst.tags[inst.ntags].value = tlr_xml_find_dup(t, "value");
        inst.ntags++;
    }
    *out = inst;
    return TLR_OK;
}

static int append_set(const tlr_xml_node *set_first, tlr_ec2_instances *out, size_t *cap)
{
    for (const tlr_xml_node *it = set_first; it != NULL; it = tlr_xml_next_named(it)) {
        tlr_ec2_instance inst;
        int rc = decode_instance(it, &inst);

        if (rc != TLR_OK)
            return rc;
        TLR_GROW(out->v, *cap, out->n + 1);
        out->v[out->n++] = inst;
    }
    return TLR_OK;
}

int tlr_ec2_parse_instances(const tlr_xml_node *root, tlr_ec2_instances *out,
                            char **next_token)
{
    tlr_ec2_instances got = { 0 };
    size_t cap = 0;
    const char *name = tlr_xml_name(root);
    const char *tok;
    int rc = TLR_OK;

    if (root == NULL || out == NULL)
        return TLR_E_INVAL;
    if (strcmp(name, "DescribeInstancesResponse") == 0) {
        for (const tlr_xml_node *r = tlr_xml_find(root, "reservationSet/item");
             r != NULL && rc == TLR_OK; r = tlr_xml_next_named(r))
            rc = append_set(tlr_xml_find(r, "instancesSet/item"), &got, &cap);
    } else if (strcmp(name, "RunInstancesResponse") == 0) {
        rc = append_set(tlr_xml_find(root, "instancesSet/item"), &got, &cap);
    } else {
        rc = TLR_E_PARSE;
    }
    if (rc != TLR_OK) {
        tlr_ec2_instances_free(&got);
        return rc;
    }
    TLR_MOVE_ONTO(out->v, out->n, got.v, got.n);   /* pages accumulate */
    if (next_token != NULL) {
        tok = tlr_xml_find_text(root, "nextToken");
        *next_token = tok != NULL && tok[0] != '\0' ? tlr_strdup(tok) : NULL;
    }
    return TLR_OK;
}

static void add_filters(tlr_aws_params *p, const tlr_ec2_filter *f, size_t nf)
{
    for (size_t i = 0; i < nf; i++) {
        tlr_aws_params_addf(p, f[i].name, "Filter.%zu.Name", i + 1);
        for (size_t v = 0; v < f[i].nvalues; v++)
            tlr_aws_params_addf(p, f[i].values[v], "Filter.%zu.Value.%zu", i + 1, v + 1);
    }
}

int tlr_ec2_describe_instances(tlr_ec2 *e, const tlr_ec2_filter *filters, size_t nfilters,
                               const char *const *ids, size_t nids, int max_pages,
                               tlr_ec2_instances *out, tlr_aws_error *err)
{
    tlr_ec2_instances all = { 0 };
    char *token = NULL;
    int rc = TLR_OK, page = 0;

    if (e == NULL || out == NULL || (nfilters > 0 && filters == NULL) || (nids > 0 && ids == NULL))
        return TLR_E_INVAL;
    if (max_pages <= 0)
        max_pages = 100;
    do {
        tlr_aws_params *p;
        tlr_xml_doc *doc = NULL;
        char *next = NULL;

        tlr_aws_params_create(&p);
        add_filters(p, filters, nfilters);
        for (size_t i = 0; i < nids; i++)
            tlr_aws_params_addf(p, ids[i], "InstanceId.%zu", i + 1);
        /* MaxResults cannot be combined with instance ids. */
        if (nids == 0)
            tlr_aws_params_add(p, "MaxResults", "1000");
        if (token != NULL)
            tlr_aws_params_add(p, "NextToken", token);
        rc = tlr_aws_query_call(e->q, "DescribeInstances", p, &doc, err);
        tlr_aws_params_free(p);
        if (rc == TLR_OK) {
            rc = tlr_ec2_parse_instances(tlr_xml_root(doc), &all, &next);
            if (rc != TLR_OK && err != NULL) {
                memset(err, 0, sizeof(*err));
                snprintf(err->message, sizeof(err->message),
                         "DescribeInstances: answer is not a DescribeInstancesResponse");
            }
        }
        tlr_xml_free(doc);
        free(token);
        token = next;
    } while (rc == TLR_OK && token != NULL && ++page < max_pages);
    free(token);
    if (rc != TLR_OK) {
        tlr_ec2_instances_free(&all);
        return rc;
    }
    *out = all;
    return TLR_OK;
}

static void add_tag_spec(tlr_aws_params *p, int spec, const char *resource,
                         const tlr_ec2_tag *tags, size_t ntags)
{
    tlr_aws_params_addf(p, resource, "TagSpecification.%d.ResourceType", spec);
    for (size_t i = 0; i < ntags; i++) {
        tlr_aws_params_addf(p, tags[i].key, "TagSpecification.%d.Tag.%zu.Key", spec, i + 1);
        tlr_aws_params_addf(p, tags[i].value, "TagSpecification.%d.Tag.%zu.Value", spec, i + 1);
    }
}

int tlr_ec2_run_instances(tlr_ec2 *e, const tlr_ec2_run_opts *o, tlr_ec2_instances *out,
                          tlr_aws_error *err)
{
    tlr_aws_params *p;
    tlr_xml_doc *doc = NULL;
    tlr_ec2_instances got = { 0 };
    char count[16];
    int rc;

    if (e == NULL || o == NULL || out == NULL || o->image_id == NULL ||
        o->instance_type == NULL || o->count < 1)
        return TLR_E_INVAL;
    snprintf(count, sizeof(count), "%d", o->count);
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "ImageId", o->image_id);
    tlr_aws_params_add(p, "InstanceType", o->instance_type);
    tlr_aws_params_add(p, "MinCount", count);
    tlr_aws_params_add(p, "MaxCount", count);
    if (o->subnet_id != NULL)
        tlr_aws_params_add(p, "SubnetId", o->subnet_id);
    if (o->zone != NULL)
        tlr_aws_params_add(p, "Placement.AvailabilityZone", o->zone);
    if (o->client_token != NULL)
        tlr_aws_params_add(p, "ClientToken", o->client_token);
    if (o->ntags > 0)
        add_tag_spec(p, 1, "instance", o->tags, o->ntags);
    rc = tlr_aws_query_call(e->q, "RunInstances", p, &doc, err);
    if (rc == TLR_OK)
        rc = tlr_ec2_parse_instances(tlr_xml_root(doc), &got, NULL);
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    if (rc != TLR_OK) {
        tlr_ec2_instances_free(&got);
        return rc;
    }
    *out = got;
    return TLR_OK;
}

int tlr_ec2_terminate_instances(tlr_ec2 *e, const char *const *ids, size_t nids,
                                tlr_aws_error *err)
{
    tlr_aws_params *p;
    tlr_xml_doc *doc = NULL;
    int rc;

    if (e == NULL || (nids > 0 && ids == NULL))
        return TLR_E_INVAL;
    if (nids == 0)
        return TLR_OK;
    tlr_aws_params_create(&p);
    for (size_t i = 0; i < nids; i++)
        tlr_aws_params_addf(p, ids[i], "InstanceId.%zu", i + 1);
    rc = tlr_aws_query_call(e->q, "TerminateInstances", p, &doc, err);
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    return rc == TLR_E_NOTFOUND ? TLR_OK : rc;
}

/* --- DescribeInstanceAttribute userData ------------------------------ */

int tlr_ec2_parse_user_data(const tlr_xml_node *root, char **out)
{
    const char *v;

    if (root == NULL || out == NULL)
        return TLR_E_INVAL;
    if (strcmp(tlr_xml_name(root), "DescribeInstanceAttributeResponse") != 0)
        return TLR_E_PARSE;
    v = tlr_xml_find_text(root, "userData/value");
    if (v == NULL)
        v = "";
    /* lax: EC2 pads, but this reader has always taken short or missing padding */
    return tlr_base64_decode_lax(v, strlen(v), out, NULL);
}

int tlr_ec2_instance_user_data(tlr_ec2 *e, const char *instance_id, char **out,
                               tlr_aws_error *err)
{
    tlr_aws_params *p;
    tlr_xml_doc *doc = NULL;
    char *got = NULL;
    int rc;

    if (e == NULL || instance_id == NULL || instance_id[0] == '\0' || out == NULL)
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "InstanceId", instance_id);
    tlr_aws_params_add(p, "Attribute", "userData");
    rc = tlr_aws_query_call(e->q, "DescribeInstanceAttribute", p, &doc, err);
    if (rc == TLR_OK && (rc = tlr_ec2_parse_user_data(tlr_xml_root(doc), &got)) != TLR_OK &&
        err != NULL) {
        memset(err, 0, sizeof(*err));
        snprintf(err->message, sizeof(err->message),
                 "DescribeInstanceAttribute: answer is not a userData attribute in base64");
    }
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    if (rc != TLR_OK)
        return rc;
    *out = got;
    return TLR_OK;
}

int tlr_ec2_create_tags(tlr_ec2 *e, const char *const *resource_ids, size_t nids,
                        const tlr_ec2_tag *tags, size_t ntags, tlr_aws_error *err)
{
    tlr_aws_params *p;
    tlr_xml_doc *doc = NULL;
    int rc;

    if (e == NULL || nids == 0 || resource_ids == NULL || (ntags > 0 && tags == NULL))
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    for (size_t i = 0; i < nids; i++)
        tlr_aws_params_addf(p, resource_ids[i], "ResourceId.%zu", i + 1);
    for (size_t i = 0; i < ntags; i++) {
        tlr_aws_params_addf(p, tags[i].key, "Tag.%zu.Key", i + 1);
        tlr_aws_params_addf(p, tags[i].value, "Tag.%zu.Value", i + 1);
    }
    rc = tlr_aws_query_call(e->q, "CreateTags", p, &doc, err);
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    return rc;
}

/* --- CreateFleet ----------------------------------------------------- */

void tlr_ec2_fleet_result_free(tlr_ec2_fleet_result *r)
{
    if (r == NULL)
        return;
    free(r->fleet_id);
    for (size_t i = 0; i < r->ninstances; i++) {
        free(r->instances[i].id);
        free(r->instances[i].instance_type);
        free(r->instances[i].zone);
        free(r->instances[i].subnet_id);
    }
    free(r->instances);
    for (size_t i = 0; i < r->nerrors; i++) {
        free(r->errors[i].code);
        free(r->errors[i].message);
        free(r->errors[i].instance_type);
        free(r->errors[i].zone);
        free(r->errors[i].subnet_id);
    }
    free(r->errors);
    memset(r, 0, sizeof(*r));
}

int tlr_ec2_fleet_params(const tlr_ec2_fleet_req *r, tlr_aws_params *p)
{
    char buf[64];

    if (r == NULL || p == NULL || r->target_capacity < 1 || r->noverrides == 0 ||
        r->overrides == NULL || (r->launch_template_id == NULL && r->launch_template_name == NULL))
        return TLR_E_INVAL;
    tlr_aws_params_add(p, "Type", "instant");
    snprintf(buf, sizeof(buf), "%d", r->target_capacity);
    tlr_aws_params_add(p, "TargetCapacitySpecification.TotalTargetCapacity", buf);
    tlr_aws_params_add(p, "TargetCapacitySpecification.DefaultTargetCapacityType",
                       r->spot ? "spot" : "on-demand");
    if (r->spot) {
        tlr_aws_params_add(p, "TargetCapacitySpecification.SpotTargetCapacity", buf);
        tlr_aws_params_add(p, "SpotOptions.AllocationStrategy",
                           r->spot_allocation ? r->spot_allocation : "price-capacity-optimized");
    } else {
        tlr_aws_params_add(p, "TargetCapacitySpecification.OnDemandTargetCapacity", buf);
        tlr_aws_params_add(p, "OnDemandOptions.AllocationStrategy",
                           r->on_demand_allocation ? r->on_demand_allocation : "lowest-price");
    }
    if (r->launch_template_id != NULL)
        tlr_aws_params_add(p, "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId",
                           r->launch_template_id);
    else
        tlr_aws_params_add(p,
                           "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName",
                           r->launch_template_name);
    tlr_aws_params_add(p, "LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version",
                       r->launch_template_version ? r->launch_template_version : "$Latest");
    for (size_t i = 0; i < r->noverrides; i++) {
        const tlr_ec2_fleet_override *o = &r->overrides[i];

        if (o->instance_type == NULL)
            return TLR_E_INVAL;
        tlr_aws_params_addf(p, o->instance_type, "LaunchTemplateConfigs.1.Overrides.%zu.InstanceType",
                            i + 1);
        if (o->subnet_id != NULL)
            tlr_aws_params_addf(p, o->subnet_id, "LaunchTemplateConfigs.1.Overrides.%zu.SubnetId",
                                i + 1);
        if (o->zone != NULL)
            tlr_aws_params_addf(p, o->zone,
                                "LaunchTemplateConfigs.1.Overrides.%zu.AvailabilityZone", i + 1);
        if (o->priority >= 0) {
            snprintf(buf, sizeof(buf), "%.6g", o->priority);
            tlr_aws_params_addf(p, buf, "LaunchTemplateConfigs.1.Overrides.%zu.Priority", i + 1);
        }
    }
    if (r->ntags > 0) {
        add_tag_spec(p, 1, "instance", r->tags, r->ntags);
        add_tag_spec(p, 2, "volume", r->tags, r->ntags);
        add_tag_spec(p, 3, "fleet", r->tags, r->ntags);
    }
    if (r->client_token != NULL)
        tlr_aws_params_add(p, "ClientToken", r->client_token);
    return TLR_OK;
}

int tlr_ec2_parse_create_fleet(const tlr_xml_node *root, tlr_ec2_fleet_result *out)
{
    tlr_ec2_fleet_result res = { 0 };
    size_t icap = 0, ecap = 0;

    if (root == NULL || out == NULL)
        return TLR_E_INVAL;
    if (strcmp(tlr_xml_name(root), "CreateFleetResponse") != 0)
        return TLR_E_PARSE;
    res.fleet_id = tlr_xml_find_dup(root, "fleetId");
    for (const tlr_xml_node *it = tlr_xml_find(root, "fleetInstanceSet/item"); it != NULL;
         it = tlr_xml_next_named(it)) {
        const tlr_xml_node *ov = tlr_xml_find(it, "launchTemplateAndOverrides/overrides");
        const char *life = tlr_xml_find_text(it, "lifecycle");
        const char *type = tlr_xml_find_text(it, "instanceType");

        for (const tlr_xml_node *id = tlr_xml_find(it, "instanceIds/item"); id != NULL;
             id = tlr_xml_next_named(id)) {
            tlr_ec2_fleet_instance *fi;

            if (tlr_xml_text(id)[0] == '\0')
                continue;
            TLR_GROW(res.instances, icap, res.ninstances + 1);
            fi = &res.instances[res.ninstances++];
            fi->id = tlr_strdup(tlr_xml_text(id));
            fi->instance_type =
                type != NULL ? tlr_strdup(type) : tlr_xml_find_dup(ov, "instanceType");
            fi->zone = tlr_xml_find_dup(ov, "availabilityZone");
            fi->subnet_id = tlr_xml_find_dup(ov, "subnetId");
            fi->spot = life != NULL && strcmp(life, "spot") == 0;
        }
    }
    for (const tlr_xml_node *it = tlr_xml_find(root, "errorSet/item"); it != NULL;
         it = tlr_xml_next_named(it)) {
        const tlr_xml_node *ov = tlr_xml_find(it, "launchTemplateAndOverrides/overrides");
        const char *life = tlr_xml_find_text(it, "lifecycle");
        tlr_ec2_fleet_error *fe;

        TLR_GROW(res.errors, ecap, res.nerrors + 1);
        fe = &res.errors[res.nerrors++];
        fe->code = tlr_xml_find_dup(it, "errorCode");
        fe->message = tlr_xml_find_dup(it, "errorMessage");
        fe->instance_type = tlr_xml_find_dup(ov, "instanceType");
        fe->zone = tlr_xml_find_dup(ov, "availabilityZone");
        fe->subnet_id = tlr_xml_find_dup(ov, "subnetId");
        fe->spot = life != NULL && strcmp(life, "spot") == 0;
        fe->tlr_code = tlr_aws_error_class(fe->code, 0);
    }
    *out = res;
    return TLR_OK;
}

int tlr_ec2_create_fleet(tlr_ec2 *e, const tlr_ec2_fleet_req *r, tlr_ec2_fleet_result *out,
                         tlr_aws_error *err)
{
    tlr_aws_params *p;
    tlr_xml_doc *doc = NULL;
    int rc;

    if (e == NULL || out == NULL)
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    rc = tlr_ec2_fleet_params(r, p);
    if (rc == TLR_OK)
        rc = tlr_aws_query_call(e->q, "CreateFleet", p, &doc, err);
    if (rc == TLR_OK)
        rc = tlr_ec2_parse_create_fleet(tlr_xml_root(doc), out);
    tlr_xml_free(doc);
    tlr_aws_params_free(p);
    return rc;
}

tlr_aws_query *tlr_ec2_query(tlr_ec2 *e)
{
    return e != NULL ? e->q : NULL;
}
