/* iam.c - typed IAM instance-profile calls and their decoders (tlr_iam.h).
 *
 * Query lists are 1-based "Name.member.N" parameters; answers wrap their
 * payload in <ActionResult> and lists in <member>.  Decoders copy what
 * they keep, so callers never hold the XML document.  A write answers
 * with an empty <ActionResponse>: the root's name is checked so that the
 * wrong document (a proxy's page, another action's answer) is a parse
 * error rather than a success.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_iam.h"
#include "tlr_time.h"

#define MAX_PAGES 100

struct tlr_iam {
    tlr_aws_query *q;
};

int tlr_iam_create(const tlr_aws_query_opts *opts, tlr_iam **out)
{
    tlr_aws_query_opts o = { 0 };
    tlr_aws_query *q = NULL;
    int rc;

    if (out == NULL)
        return TLR_E_INVAL;
    if (opts != NULL)
        o = *opts;
    o.service = "iam";
    o.version = TLR_IAM_API_VERSION;
    /* Global service: signed for us-east-1 even through an endpoint override. */
    o.region = "us-east-1";
    if ((rc = tlr_aws_query_create(&o, &q)) != TLR_OK)
        return rc;
    *out = tlr_calloc(1, sizeof(**out));
    (*out)->q = q;
    return TLR_OK;
}

void tlr_iam_free(tlr_iam *c)
{
    if (c == NULL)
        return;
    tlr_aws_query_free(c->q);
    free(c);
}

/* --- decoding ----------------------------------------------------------- */

void tlr_iam_profile_free(tlr_iam_profile *p)
{
    if (p == NULL)
        return;
    free(p->name);
    free(p->id);
    free(p->arn);
    free(p->path);
    for (size_t i = 0; i < p->nroles; i++)
        free(p->roles[i]);
    free(p->roles);
    for (size_t i = 0; i < p->ntags; i++) {
        free(p->tags[i].key);
        free(p->tags[i].value);
    }
    free(p->tags);
    memset(p, 0, sizeof(*p));
}

void tlr_iam_profiles_free(tlr_iam_profiles *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        tlr_iam_profile_free(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* One <InstanceProfile> or list <member>. */
static int decode_profile(const tlr_xml_node *m, tlr_iam_profile *out)
{
    tlr_iam_profile p = { 0 };
    const char *name = tlr_xml_find_text(m, "InstanceProfileName");
    const char *created = tlr_xml_find_text(m, "CreateDate");
    size_t cap = 0;

    if (name == NULL || name[0] == '\0')
        return TLR_E_PARSE;
    p.name = tlr_strdup(name);
    p.id = tlr_xml_find_dup(m, "InstanceProfileId");
    p.arn = tlr_xml_find_dup(m, "Arn");
    p.path = tlr_xml_find_dup(m, "Path");
    if (created == NULL || tlr_time_parse(created, &p.created_ms) != TLR_OK)
        p.created_ms = 0;
    for (const tlr_xml_node *r = tlr_xml_find(m, "Roles/member"); r != NULL;
         r = tlr_xml_next_named(r)) {
        const char *rn = tlr_xml_find_text(r, "RoleName");

        if (rn == NULL || rn[0] == '\0')
            continue;
        TLR_GROW(p.roles, cap, p.nroles + 1);
        p.roles[p.nroles++] = tlr_strdup(rn);
    }
    cap = 0;
    for (const tlr_xml_node *t = tlr_xml_find(m, "Tags/member"); t != NULL;
         t = tlr_xml_next_named(t)) {
        const char *k = tlr_xml_find_text(t, "Key");

        if (k == NULL)
            continue;
        TLR_GROW(p.tags, cap, p.ntags + 1);
        p.tags[p.ntags].key = tlr_strdup(k);
        p.tags[p.ntags].value = tlr_xml_find_dup(t, "Value");
        p.ntags++;
    }
    *out = p;
    return TLR_OK;
}

int tlr_iam_parse_profile(const tlr_xml_node *root, const char *action, tlr_iam_profile *out)
{
    char want[96], result[96];
    const tlr_xml_node *res, *ip;

    if (root == NULL || action == NULL || out == NULL)
        return TLR_E_PARSE;
    snprintf(want, sizeof(want), "%sResponse", action);
    snprintf(result, sizeof(result), "%sResult", action);
    if (strcmp(tlr_xml_name(root), want) != 0 || (res = tlr_xml_find(root, result)) == NULL ||
        (ip = tlr_xml_find(res, "InstanceProfile")) == NULL)
        return TLR_E_PARSE;
    return decode_profile(ip, out);
}

int tlr_iam_parse_profiles(const tlr_xml_node *root, tlr_iam_profiles *out, char **marker)
{
    const tlr_xml_node *res;
    tlr_iam_profiles got = { 0 };
    const char *trunc, *mk;
    size_t cap = 0;
    int rc = TLR_OK;

    if (marker != NULL)
        *marker = NULL;
    if (root == NULL || out == NULL ||
        strcmp(tlr_xml_name(root), "ListInstanceProfilesResponse") != 0 ||
        (res = tlr_xml_find(root, "ListInstanceProfilesResult")) == NULL)
        return TLR_E_PARSE;
    trunc = tlr_xml_find_text(res, "IsTruncated");
    mk = tlr_xml_find_text(res, "Marker");
    /* Truncated without a marker would loop or stop short: neither is safe. */
    if (trunc != NULL && strcmp(trunc, "true") == 0 && (mk == NULL || mk[0] == '\0'))
        return TLR_E_PARSE;
    for (const tlr_xml_node *m = tlr_xml_find(res, "InstanceProfiles/member");
         m != NULL && rc == TLR_OK; m = tlr_xml_next_named(m)) {
        tlr_iam_profile p;

        if ((rc = decode_profile(m, &p)) == TLR_OK) {
            TLR_GROW(got.v, cap, got.n + 1);
            got.v[got.n++] = p;
        }
    }
    if (rc != TLR_OK) {
        tlr_iam_profiles_free(&got);
        return rc;
    }
    TLR_MOVE_ONTO(out->v, out->n, got.v, got.n);   /* pages accumulate */
    if (marker != NULL && trunc != NULL && strcmp(trunc, "true") == 0)
        *marker = tlr_strdup(mk);
    return TLR_OK;
}

/* --- parameters --------------------------------------------------------- */

void tlr_iam_tag_params(const tlr_ec2_tag *tags, size_t ntags, tlr_aws_params *p)
{
    for (size_t i = 0; i < ntags; i++) {
        tlr_aws_params_addf(p, tags[i].key, "Tags.member.%zu.Key", i + 1);
        tlr_aws_params_addf(p, tags[i].value, "Tags.member.%zu.Value", i + 1);
    }
}

static bool valid_name(const char *s)
{
    /* IAM names are 1..128 characters; the service checks the alphabet. */
    return s != NULL && s[0] != '\0' && strlen(s) <= 128;
}

static bool valid_tags(const tlr_ec2_tag *tags, size_t ntags)
{
    if (ntags > TLR_IAM_MAX_TAGS || (ntags > 0 && tags == NULL))
        return false;
    for (size_t i = 0; i < ntags; i++)
        if (tags[i].key == NULL || tags[i].key[0] == '\0')
            return false;
    return true;
}

/* --- calls -------------------------------------------------------------- */

/* A write: the answer must be <ActionResponse>, nothing else to read. */
static int simple_call(tlr_iam *c, const char *action, tlr_aws_params *p, tlr_aws_error *err)
{
    tlr_xml_doc *doc = NULL;
    char want[96];
    int rc = tlr_aws_query_call(c->q, action, p, &doc, err);

    snprintf(want, sizeof(want), "%sResponse", action);
    if (rc == TLR_OK && strcmp(tlr_xml_name(tlr_xml_root(doc)), want) != 0)
        rc = TLR_E_PARSE;
    tlr_xml_free(doc);
    return rc;
}

int tlr_iam_get_profile(tlr_iam *c, const char *name, tlr_iam_profile *out, tlr_aws_error *err)
{
    tlr_aws_params *p = NULL;
    tlr_xml_doc *doc = NULL;
    int rc;

    if (c == NULL || !valid_name(name) || out == NULL)
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "InstanceProfileName", name);
    rc = tlr_aws_query_call(c->q, "GetInstanceProfile", p, &doc, err);
    tlr_aws_params_free(p);
    if (rc == TLR_OK)
        rc = tlr_iam_parse_profile(tlr_xml_root(doc), "GetInstanceProfile", out);
    tlr_xml_free(doc);
    return rc;
}

int tlr_iam_create_profile(tlr_iam *c, const char *name, const char *path,
                           const tlr_ec2_tag *tags, size_t ntags, tlr_iam_profile *out,
                           tlr_aws_error *err)
{
    tlr_aws_params *p = NULL;
    tlr_xml_doc *doc = NULL;
    tlr_iam_profile got = { 0 };
    int rc;

    if (c == NULL || !valid_name(name) || !valid_tags(tags, ntags))
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "InstanceProfileName", name);
    tlr_aws_params_add(p, "Path", path != NULL && path[0] != '\0' ? path : "/");
    tlr_iam_tag_params(tags, ntags, p);
    rc = tlr_aws_query_call(c->q, "CreateInstanceProfile", p, &doc, err);
    tlr_aws_params_free(p);
    if (rc == TLR_OK)
        rc = tlr_iam_parse_profile(tlr_xml_root(doc), "CreateInstanceProfile", &got);
    tlr_xml_free(doc);
    if (rc == TLR_OK && out != NULL)
        *out = got;
    else
        tlr_iam_profile_free(&got);
    return rc;
}

static int role_call(tlr_iam *c, const char *action, const char *profile, const char *role,
                     tlr_aws_error *err)
{
    tlr_aws_params *p = NULL;
    int rc;

    if (c == NULL || !valid_name(profile) || !valid_name(role))
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "InstanceProfileName", profile);
    tlr_aws_params_add(p, "RoleName", role);
    rc = simple_call(c, action, p, err);
    tlr_aws_params_free(p);
    return rc;
}

int tlr_iam_add_role(tlr_iam *c, const char *profile, const char *role, tlr_aws_error *err)
{
    return role_call(c, "AddRoleToInstanceProfile", profile, role, err);
}

int tlr_iam_remove_role(tlr_iam *c, const char *profile, const char *role, tlr_aws_error *err)
{
    return role_call(c, "RemoveRoleFromInstanceProfile", profile, role, err);
}

int tlr_iam_tag_profile(tlr_iam *c, const char *profile, const tlr_ec2_tag *tags, size_t ntags,
                        tlr_aws_error *err)
{
    tlr_aws_params *p = NULL;
    int rc;

    if (c == NULL || !valid_name(profile) || ntags == 0 || !valid_tags(tags, ntags))
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "InstanceProfileName", profile);
    tlr_iam_tag_params(tags, ntags, p);
    rc = simple_call(c, "TagInstanceProfile", p, err);
    tlr_aws_params_free(p);
    return rc;
}

int tlr_iam_delete_profile(tlr_iam *c, const char *profile, tlr_aws_error *err)
{
    tlr_aws_params *p = NULL;
    int rc;

    if (c == NULL || !valid_name(profile))
        return TLR_E_INVAL;
    tlr_aws_params_create(&p);
    tlr_aws_params_add(p, "InstanceProfileName", profile);
    rc = simple_call(c, "DeleteInstanceProfile", p, err);
    tlr_aws_params_free(p);
    return rc;
}

int tlr_iam_list_profiles(tlr_iam *c, const char *path_prefix, int max_pages,
                          tlr_iam_profiles *out, tlr_aws_error *err)
{
    tlr_iam_profiles all = { 0 };
    char *marker = NULL;
    int rc = TLR_OK, page = 0;

    if (c == NULL || out == NULL)
        return TLR_E_INVAL;
    if (max_pages <= 0)
        max_pages = MAX_PAGES;
    do {
        tlr_aws_params *p = NULL;
        tlr_xml_doc *doc = NULL;
        char *next = NULL;

        tlr_aws_params_create(&p);
        tlr_aws_params_add(p, "PathPrefix",
                           path_prefix != NULL && path_prefix[0] != '\0' ? path_prefix : "/");
        /* 1000 is the API's largest page. */
        tlr_aws_params_add(p, "MaxItems", "1000");
        if (marker != NULL)
            tlr_aws_params_add(p, "Marker", marker);
        rc = tlr_aws_query_call(c->q, "ListInstanceProfiles", p, &doc, err);
        tlr_aws_params_free(p);
        if (rc == TLR_OK)
            rc = tlr_iam_parse_profiles(tlr_xml_root(doc), &all, &next);
        tlr_xml_free(doc);
        free(marker);
        marker = next;
        page++;
    } while (rc == TLR_OK && marker != NULL && page < max_pages);
    if (rc == TLR_OK && marker != NULL)
        rc = TLR_E_TOOBIG;   /* more pages than allowed: refuse a partial answer */
    free(marker);
    if (rc != TLR_OK) {
        tlr_iam_profiles_free(&all);
        return rc;
    }
    *out = all;
    return TLR_OK;
}
