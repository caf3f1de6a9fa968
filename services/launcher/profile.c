/* profile.c - the managed instance profile of an EC2NodeClass (profile.h).
 *
 * ensure reads first and writes only what differs, so a steady-state pass
 * costs one GetInstanceProfile and no write; gc reads the account's
 * profile list once and a GetInstanceProfile per candidate (real IAM
 * lists no tags), and deletes only what carries all of our ownership
 * tags -- the name pattern alone is never enough.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_hash.h"

#define NTAGS 5

/* FNV-1 (multiply, then xor) 64: what hashstructure v2 hashes a string
 * with by default, hence Karpenter's profile names. */
static uint64_t fnv1_64(const char *a, const char *b)
{
    return tlr_fnv1_64_str(tlr_fnv1_64_str(TLR_FNV64_BASIS, a), b);
}

int lc_profile_name(const char *cluster, const char *region, const char *nodeclass, char *buf,
                    size_t len)
{
    char name[LC_PROFILE_NAME_MAX + 64];
    int n;

    if (cluster == NULL || cluster[0] == '\0' || region == NULL || region[0] == '\0' ||
        nodeclass == NULL || nodeclass[0] == '\0' || buf == NULL ||
        strlen(cluster) > LC_PROFILE_NAME_MAX)
        return TLR_E_INVAL;
    n = snprintf(name, sizeof(name), "%s_%llu", cluster,
                 (unsigned long long)fnv1_64(region, nodeclass));
    if (n < 0 || n > LC_PROFILE_NAME_MAX || (size_t)n >= len)
        return TLR_E_INVAL;
    memcpy(buf, name, (size_t)n + 1);
    return TLR_OK;
}

/* CLUSTER_DIGITS: a name lc_profile_name could have made for cluster. */
static bool name_is_ours(const char *name, const char *cluster)
{
    size_t n = strlen(cluster);
    const char *d;

    if (strncmp(name, cluster, n) != 0 || name[n] != '_' || name[n + 1] == '\0')
        return false;
    for (d = name + n + 1; *d; d++)
        if (!isdigit((unsigned char)*d))
            return false;
    return d - (name + n + 1) <= 20;   /* a uint64 has at most 20 digits */
}

/* The tags of a managed profile; strings in keybuf (borrowed by tags). */
typedef struct owned_tags {
    char cluster_key[LC_PROFILE_NAME_MAX + 32];
    tlr_ec2_tag t[NTAGS];
} owned_tags;

static void owned_tags_init(owned_tags *o, const char *cluster, const char *region,
                            const char *nodeclass)
{
    snprintf(o->cluster_key, sizeof(o->cluster_key), "kubernetes.io/cluster/%s", cluster);
    /* Casts: tlr_ec2_tag holds char * for the decoders that own their
     * strings; these are only read. */
    o->t[0] = (tlr_ec2_tag){ o->cluster_key, (char *)"owned" };
    o->t[1] = (tlr_ec2_tag){ (char *)LC_PROFILE_TAG_EKS_CLUSTER, (char *)cluster };
    o->t[2] = (tlr_ec2_tag){ (char *)LC_PROFILE_TAG_NODECLASS, (char *)nodeclass };
    o->t[3] = (tlr_ec2_tag){ (char *)LC_PROFILE_TAG_REGION, (char *)region };
    o->t[4] = (tlr_ec2_tag){ (char *)LC_PROFILE_TAG_MANAGED_BY, (char *)cluster };
}

static bool tag_is(const tlr_iam_profile *p, const char *key, const char *want)
{
    const char *v = tlr_ec2_tag_get(p->tags, p->ntags, key);
    return v != NULL && strcmp(v, want) == 0;
}

/* "team/NodeRole" and "arn:aws:iam::1:role/team/NodeRole" -> "NodeRole". */
static const char *role_name(const char *role)
{
    const char *slash = strrchr(role, '/');
    return slash != NULL ? slash + 1 : role;
}

/* Say which step failed in front of IAM's own message. */
static void fail(tlr_aws_error *out, const tlr_aws_error *e, const char *fmt, const char *a,
                 const char *b)
{
    char what[256];

    if (out == NULL)
        return;
    *out = *e;
    snprintf(what, sizeof(what), fmt, a, b);
    /* Truncation is fine: the step and the start of IAM's words suffice. */
    if (snprintf(out->message, sizeof(out->message), "%s: %s", what,
                 e->message[0] != '\0' ? e->message : "no answer from IAM") < 0)
        out->message[0] = '\0';
}

int lc_profile_ensure(const lc_iam_ops *ops, const char *cluster, const char *region,
                      const char *nodeclass, const char *role, char **name_out,
                      tlr_aws_error *err)
{
    char name[LC_PROFILE_NAME_MAX + 1];
    tlr_iam_profile p = { 0 };
    tlr_aws_error e = { 0 };
    owned_tags ot;
    tlr_ec2_tag missing[NTAGS];
    size_t nmissing = 0;
    bool has_role = false, fresh = false;
    int rc;

    if (err != NULL)
        memset(err, 0, sizeof(*err));
    if (ops == NULL || role == NULL || role_name(role)[0] == '\0' ||
        lc_profile_name(cluster, region, nodeclass, name, sizeof(name)) != TLR_OK)
        return TLR_E_INVAL;
    role = role_name(role);
    owned_tags_init(&ot, cluster, region, nodeclass);

    rc = ops->get(ops->arg, name, &p, &e);
    if (rc == TLR_E_NOTFOUND) {
        memset(&e, 0, sizeof(e));
        rc = ops->create(ops->arg, name, "/", ot.t, NTAGS, &e);
        if (rc == TLR_OK) {
            fresh = true;   /* our tags and no role */
        } else if (rc == TLR_E_EXISTS) {
            /* Another writer got there first: take what it made. */
            memset(&e, 0, sizeof(e));
            rc = ops->get(ops->arg, name, &p, &e);
            if (rc != TLR_OK) {
                fail(err, &e, "reading instance profile %s%s", name, "");
                goto out;
            }
        } else {
            fail(err, &e, "creating instance profile %s%s", name, "");
            goto out;
        }
    } else if (rc != TLR_OK) {
        fail(err, &e, "reading instance profile %s%s", name, "");
        goto out;
    }

    for (size_t i = 0; i < NTAGS && !fresh; i++)
        if (!tag_is(&p, ot.t[i].key, ot.t[i].value))
            missing[nmissing++] = ot.t[i];
    if (nmissing > 0) {
        memset(&e, 0, sizeof(e));
        if ((rc = ops->tag(ops->arg, name, missing, nmissing, &e)) != TLR_OK) {
            fail(err, &e, "tagging instance profile %s%s", name, "");
            goto out;
        }
    }

    /* At most one role; anything that is not ours goes first, or the add
     * fails with LimitExceeded. */
    for (size_t i = 0; i < p.nroles; i++) {
        if (strcmp(p.roles[i], role) == 0) {
            has_role = true;
            continue;
        }
        memset(&e, 0, sizeof(e));
        rc = ops->remove_role(ops->arg, name, p.roles[i], &e);
        if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
            fail(err, &e, "removing role %s from instance profile %s", p.roles[i], name);
            goto out;
        }
    }
    rc = TLR_OK;
    if (!has_role) {
        memset(&e, 0, sizeof(e));
        if ((rc = ops->add_role(ops->arg, name, role, &e)) != TLR_OK) {
            fail(err, &e, "adding role %s to instance profile %s", role, name);
            goto out;
        }
    }
    if (name_out != NULL)
        *name_out = tlr_strdup(name);
out:
    tlr_iam_profile_free(&p);
    return rc;
}

static bool is_live(const lc_profile_gc_opts *o, const char *nodeclass)
{
    for (size_t i = 0; i < o->nlive; i++)
        if (o->live[i] != NULL && strcmp(o->live[i], nodeclass) == 0)
            return true;
    return false;
}

/* Delete one listed profile if it is an orphan of ours: 1 when deleted,
 * 0 when kept or gone, or a TLR_E_* code with *err filled. */
static int collect_one(const lc_iam_ops *ops, const lc_profile_gc_opts *o, const char *name,
                       tlr_aws_error *err)
{
    char cluster_key[LC_PROFILE_NAME_MAX + 32];
    tlr_iam_profile p = { 0 };
    tlr_aws_error e = { 0 };
    const char *nc;
    int rc;

    rc = ops->get(ops->arg, name, &p, &e);
    if (rc == TLR_E_NOTFOUND)
        return 0;
    if (rc != TLR_OK) {
        fail(err, &e, "reading instance profile %s%s", name, "");
        return rc;
    }
    snprintf(cluster_key, sizeof(cluster_key), "kubernetes.io/cluster/%s", o->cluster);
    nc = tlr_ec2_tag_get(p.tags, p.ntags, LC_PROFILE_TAG_NODECLASS);
    if (!tag_is(&p, LC_PROFILE_TAG_MANAGED_BY, o->cluster) || !tag_is(&p, cluster_key, "owned") ||
        !tag_is(&p, LC_PROFILE_TAG_REGION, o->region) || nc == NULL || nc[0] == '\0' ||
        is_live(o, nc)) {
        rc = 0;
        goto out;
    }
    for (size_t i = 0; i < p.nroles; i++) {
        memset(&e, 0, sizeof(e));
        rc = ops->remove_role(ops->arg, name, p.roles[i], &e);
        if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
            fail(err, &e, "removing role %s from instance profile %s", p.roles[i], name);
            goto out;
        }
    }
    memset(&e, 0, sizeof(e));
    rc = ops->delete_profile(ops->arg, name, &e);
    if (rc == TLR_OK)
        rc = 1;
    else if (rc == TLR_E_NOTFOUND)
        rc = 0;
    else
        fail(err, &e, "deleting instance profile %s%s", name, "");
out:
    tlr_iam_profile_free(&p);
    return rc;
}

int lc_profile_gc(const lc_iam_ops *ops, const lc_profile_gc_opts *o, size_t *deleted,
                  tlr_aws_error *err)
{
    tlr_iam_profiles all = { 0 };
    tlr_aws_error e = { 0 };
    size_t n = 0;
    int rc, first = TLR_OK;

    if (err != NULL)
        memset(err, 0, sizeof(*err));
    if (deleted != NULL)
        *deleted = 0;
    if (ops == NULL || o == NULL || o->cluster == NULL || o->cluster[0] == '\0' ||
        o->region == NULL || o->region[0] == '\0' || (o->nlive > 0 && o->live == NULL))
        return TLR_E_INVAL;
    if ((rc = ops->list(ops->arg, &all, &e)) != TLR_OK) {
        fail(err, &e, "listing instance profiles%s%s", "", "");
        return rc;
    }
    for (size_t i = 0; i < all.n; i++) {
        const tlr_iam_profile *p = &all.v[i];
        tlr_aws_error one = { 0 };

        if (!name_is_ours(p->name, o->cluster))
            continue;
        if (o->min_age_ms > 0 && p->created_ms > 0 && o->now_ms - p->created_ms < o->min_age_ms)
            continue;
        rc = collect_one(ops, o, p->name, &one);
        if (rc == 1) {
            n++;
        } else if (rc != 0 && first == TLR_OK) {
            first = rc;
            if (err != NULL)
                *err = one;
        }
    }
    tlr_iam_profiles_free(&all);
    if (deleted != NULL)
        *deleted = n;
    return first;
}
