/* autoscaling.c - typed Auto Scaling calls and their decoders
 * (tlr_autoscaling.h).
 *
 * Query lists are 1-based "Name.member.N" parameters; answers wrap their
 * payload in <ActionResult> and lists in <member>.  Decoders copy what
 * they keep, so callers never hold the XML document.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_autoscaling.h"
#include "tlr_err.h"

#define MAX_PAGES 100

struct tlr_asg {
    tlr_aws_query *q;
};

int tlr_asg_create(const tlr_aws_query_opts *opts, tlr_asg **out)
{
    tlr_aws_query *q = NULL;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    if ((rc = tlr_aws_query_create_for(opts, "autoscaling", TLR_ASG_API_VERSION, &q)) != TLR_OK)
        return rc;
    *out = tlr_calloc(1, sizeof(**out));
    (*out)->q = q;
    return TLR_OK;
}

void tlr_asg_free(tlr_asg *a)
{
    if (a == NULL)
        return;
    tlr_aws_query_free(a->q);
    free(a);
}

/* --- decoding ----------------------------------------------------------- */

/* A non-negative integer at path; -1 when absent or malformed. */
static int size_at(const tlr_xml_node *n, const char *path)
{
    const char *t = tlr_xml_find_text(n, path);
    char *end;
    long v;

    if (t == NULL || t[0] == '\0')
        return -1;
    v = strtol(t, &end, 10);
    return *end == '\0' && v >= 0 && v <= 1000000000L ? (int)v : -1;
}

static void instance_clear(tlr_asg_instance *i)
{
    free(i->id);
    free(i->type);
    free(i->zone);
    free(i->lifecycle);
    free(i->health);
}

static void group_clear(tlr_asg_group *g)
{
    free(g->name);
    free(g->status);
    for (size_t i = 0; i < g->ninstances; i++)
        instance_clear(&g->instances[i]);
    free(g->instances);
    for (size_t i = 0; i < g->ntags; i++) {
        free(g->tags[i].key);
        free(g->tags[i].value);
    }
    free(g->tags);
    memset(g, 0, sizeof(*g));
}

void tlr_asg_groups_free(tlr_asg_groups *g)
{
    if (g == NULL)
        return;
    for (size_t i = 0; i < g->n; i++)
        group_clear(&g->v[i]);
    free(g->v);
    g->v = NULL;
    g->n = 0;
}

const tlr_asg_group *tlr_asg_groups_find(const tlr_asg_groups *g, const char *name)
{
    for (size_t i = 0; g != NULL && name != NULL && i < g->n; i++)
        if (strcmp(g->v[i].name, name) == 0)
            return &g->v[i];
    return NULL;
}

const tlr_asg_instance *tlr_asg_group_instance(const tlr_asg_group *g, const char *id)
{
    for (size_t i = 0; g != NULL && id != NULL && i < g->ninstances; i++)
        if (strcmp(g->instances[i].id, id) == 0)
            return &g->instances[i];
    return NULL;
}

static int decode_group(const tlr_xml_node *m, tlr_asg_group *out)
{
    tlr_asg_group g = { 0 };
    const char *name = tlr_xml_find_text(m, "AutoScalingGroupName");
    size_t cap = 0;

    g.min = size_at(m, "MinSize");
    g.max = size_at(m, "MaxSize");
    g.desired = size_at(m, "DesiredCapacity");
    if (name == NULL || name[0] == '\0' || g.min < 0 || g.max < 0 || g.desired < 0)
        return TLR_E_PARSE;
    g.name = tlr_strdup(name);
    g.status = tlr_xml_find_dup(m, "Status");
    for (const tlr_xml_node *it = tlr_xml_find(m, "Instances/member"); it != NULL;
         it = tlr_xml_next_named(it)) {
        const char *id = tlr_xml_find_text(it, "InstanceId");
        const char *prot = tlr_xml_find_text(it, "ProtectedFromScaleIn");

        if (id == NULL || id[0] == '\0')
            continue;
        TLR_GROW(g.instances, cap, g.ninstances + 1);
        tlr_asg_instance *i = &g.instances[g.ninstances++];
        i->id = tlr_strdup(id);
        i->type = tlr_xml_find_dup(it, "InstanceType");
        i->zone = tlr_xml_find_dup(it, "AvailabilityZone");
        i->lifecycle = tlr_xml_find_dup(it, "LifecycleState");
        i->health = tlr_xml_find_dup(it, "HealthStatus");
        i->protected_from_scale_in = prot != NULL && strcmp(prot, "true") == 0;
    }
    cap = 0;
    for (const tlr_xml_node *t = tlr_xml_find(m, "Tags/member"); t != NULL;
         t = tlr_xml_next_named(t)) {
        const char *k = tlr_xml_find_text(t, "Key");

        if (k == NULL)
            continue;
        TLR_GROW(g.tags, cap, g.ntags + 1);
        g.tags[g.ntags].key = tlr_strdup(k);
        g.tags[g.ntags].value = tlr_xml_find_dup(t, "Value");
        g.ntags++;
    }
    *out = g;
    return TLR_OK;
}

int tlr_asg_parse_groups(const tlr_xml_node *root, tlr_asg_groups *out, char **next)
{
    const tlr_xml_node *res;
    tlr_asg_groups got = { 0 };
    size_t cap = 0;
    int rc = TLR_OK;

    if (next != NULL)
        *next = NULL;
    if (root == NULL || out == NULL ||
        strcmp(tlr_xml_name(root), "DescribeAutoScalingGroupsResponse") != 0 ||
        (res = tlr_xml_find(root, "DescribeAutoScalingGroupsResult")) == NULL)
        return TLR_E_PARSE;
    for (const tlr_xml_node *m = tlr_xml_find(res, "AutoScalingGroups/member");
         m != NULL && rc == TLR_OK; m = tlr_xml_next_named(m)) {
        tlr_asg_group g;

        if ((rc = decode_group(m, &g)) == TLR_OK) {
            TLR_GROW(got.v, cap, got.n + 1);
            got.v[got.n++] = g;
        }
    }
    if (rc != TLR_OK) {
        tlr_asg_groups_free(&got);
        return rc;
    }
    TLR_MOVE_ONTO(out->v, out->n, got.v, got.n);   /* pages accumulate */
    if (next != NULL) {
        const char *t = tlr_xml_find_text(res, "NextToken");
        *next = t != NULL && t[0] != '\0' ? tlr_strdup(t) : NULL;
    }
    return TLR_OK;
}

void tlr_asg_activity_free(tlr_asg_activity *a)
{
    if (a == NULL)
        return;
    free(a->id);
    free(a->group);
    free(a->status);
    free(a->description);
    memset(a, 0, sizeof(*a));
}

int tlr_asg_parse_activity(const tlr_xml_node *root, tlr_asg_activity *out)
{
    const tlr_xml_node *act;

    if (root == NULL || out == NULL ||
        strcmp(tlr_xml_name(root), "TerminateInstanceInAutoScalingGroupResponse") != 0 ||
        (act = tlr_xml_find(root, "TerminateInstanceInAutoScalingGroupResult/Activity")) == NULL)
        return TLR_E_PARSE;
    out->id = tlr_xml_find_dup(act, "ActivityId");
    out->group = tlr_xml_find_dup(act, "AutoScalingGroupName");
    out->status = tlr_xml_find_dup(act, "StatusCode");
    out->description = tlr_xml_find_dup(act, "Description");
    return TLR_OK;
}

/* --- parameters --------------------------------------------------------- */

void tlr_asg_describe_params(const char *const *names, size_t nnames, const char *next_token,
                             tlr_aws_params *p)
{
    for (size_t i = 0; i < nnames; i++)
        tlr_aws_params_addf(p, names[i], "AutoScalingGroupNames.member.%zu", i + 1);
    /* 100 is the API's largest page. */
    tlr_aws_params_add(p, "MaxRecords", "100");
    if (next_token != NULL)
        tlr_aws_params_add(p, "NextToken", next_token);
}

int tlr_asg_update_params(const char *group, const tlr_asg_sizes *s, tlr_aws_params *p)
{
    char v[16];

    if (group == NULL || group[0] == '\0' || s == NULL ||
        (s->min < 0 && s->max < 0 && s->desired < 0))
        return TLR_E_INVAL;
    tlr_aws_params_add(p, "AutoScalingGroupName", group);
    if (s->min >= 0) {
        snprintf(v, sizeof(v), "%d", s->min);
        tlr_aws_params_add(p, "MinSize", v);
    }
    if (s->max >= 0) {
        snprintf(v, sizeof(v), "%d", s->max);
        tlr_aws_params_add(p, "MaxSize", v);
    }
    if (s->desired >= 0) {
        snprintf(v, sizeof(v), "%d", s->desired);
        tlr_aws_params_add(p, "DesiredCapacity", v);
    }
    return TLR_OK;
}

void tlr_asg_terminate_params(const char *instance_id, bool decrement, tlr_aws_params *p)
{
    tlr_aws_params_add(p, "InstanceId", instance_id);
    tlr_aws_params_add(p, "ShouldDecrementDesiredCapacity", decrement ? "true" : "false");
}

/* --- calls -------------------------------------------------------------- */

int tlr_asg_describe(tlr_asg *a, const char *const *names, size_t nnames, int max_pages,
                     tlr_asg_groups *out, tlr_aws_error *err)
{
    tlr_asg_groups all = { 0 };
    char *token = NULL;
    int rc = TLR_OK, page = 0;

    if (a == NULL || out == NULL || (nnames > 0 && names == NULL))
        return TLR_E_INVAL;
    if (max_pages <= 0)
        max_pages = MAX_PAGES;
    do {
        tlr_aws_params *p = NULL;
        tlr_xml_doc *doc = NULL;
        char *next = NULL;

        tlr_aws_params_create(&p);
        tlr_asg_describe_params(names, nnames, token, p);
        rc = tlr_aws_query_call(a->q, "DescribeAutoScalingGroups", p, &doc, err);
        tlr_aws_params_free(p);
        if (rc == TLR_OK)
            rc = tlr_asg_parse_groups(tlr_xml_root(doc), &all, &next);
        tlr_xml_free(doc);
        free(token);
        token = next;
        page++;
    } while (rc == TLR_OK && token != NULL && page < max_pages);
    if (rc == TLR_OK && token != NULL)
        rc = TLR_E_TOOBIG;   /* more pages than allowed: refuse a partial answer */
    free(token);
    if (rc != TLR_OK) {
        tlr_asg_groups_free(&all);
        return rc;
    }
    *out = all;
    return TLR_OK;
}

static int simple_call(tlr_asg *a, const char *action, tlr_aws_params *p, const char *want,
                       tlr_aws_error *err)
{
    tlr_xml_doc *doc = NULL;
    int rc = tlr_aws_query_call(a->q, action, p, &doc, err);

    if (rc == TLR_OK && strcmp(tlr_xml_name(tlr_xml_root(doc)), want) != 0)
        rc = TLR_E_PARSE;
    tlr_xml_free(doc);
    return rc;
}

int tlr_asg_update(tlr_asg *a, const char *group, const tlr_asg_sizes *s, tlr_aws_error *err)
{
    tlr_aws_params *p = NULL;
    int rc;

    if (a == NULL)
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    rc = tlr_asg_update_params(group, s, p);
    if (rc == TLR_OK)
        rc = simple_call(a, "UpdateAutoScalingGroup", p, "UpdateAutoScalingGroupResponse", err);
    tlr_aws_params_free(p);
    return rc;
}

int tlr_asg_set_desired(tlr_asg *a, const char *group, int desired, bool honor_cooldown,
                        tlr_aws_error *err)
{
    tlr_aws_params *p = NULL;
    char v[16];
    int rc;

    if (a == NULL || group == NULL || desired < 0)
        return TLR_E_INVAL;
    snprintf(v, sizeof(v), "%d", desired);
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "AutoScalingGroupName", group);
    tlr_aws_params_add(p, "DesiredCapacity", v);
    tlr_aws_params_add(p, "HonorCooldown", honor_cooldown ? "true" : "false");
    rc = simple_call(a, "SetDesiredCapacity", p, "SetDesiredCapacityResponse", err);
    tlr_aws_params_free(p);
    return rc;
}

int tlr_asg_terminate_instance(tlr_asg *a, const char *instance_id, bool decrement,
                               tlr_asg_activity *out, tlr_aws_error *err)
{
    tlr_aws_params *p = NULL;
    tlr_xml_doc *doc = NULL;
    tlr_aws_error e = { 0 };
    int rc;

    if (a == NULL || instance_id == NULL || instance_id[0] == '\0')
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    tlr_asg_terminate_params(instance_id, decrement, p);
    rc = tlr_aws_query_call(a->q, "TerminateInstanceInAutoScalingGroup", p, &doc, &e);
    tlr_aws_params_free(p);
    /* "Instance Id not found - No managed instance found for instance ID". */
    if (rc == TLR_E_INVAL && strcmp(e.code, "ValidationError") == 0 &&
        strstr(e.message, "not found") != NULL)
        rc = TLR_E_NOTFOUND;
    if (rc == TLR_OK && out != NULL) {
        memset(out, 0, sizeof(*out));
        rc = tlr_asg_parse_activity(tlr_xml_root(doc), out);
    }
    tlr_xml_free(doc);
    if (err != NULL)
        *err = e;
    return rc;
}
