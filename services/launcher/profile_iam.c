/* profile_iam.c - lc_iam_ops on the real IAM client (tlr_iam.h). */
#include "profile.h"

static int iam_get(void *arg, const char *name, tlr_iam_profile *out, tlr_aws_error *err)
{
    return tlr_iam_get_profile(arg, name, out, err);
}

static int iam_create(void *arg, const char *name, const char *path, const tlr_ec2_tag *tags,
                      size_t ntags, tlr_aws_error *err)
{
    return tlr_iam_create_profile(arg, name, path, tags, ntags, NULL, err);
}

static int iam_add_role(void *arg, const char *profile, const char *role, tlr_aws_error *err)
{
    return tlr_iam_add_role(arg, profile, role, err);
}

static int iam_remove_role(void *arg, const char *profile, const char *role, tlr_aws_error *err)
{
    return tlr_iam_remove_role(arg, profile, role, err);
}

static int iam_tag(void *arg, const char *profile, const tlr_ec2_tag *tags, size_t ntags,
                   tlr_aws_error *err)
{
    return tlr_iam_tag_profile(arg, profile, tags, ntags, err);
}

static int iam_delete(void *arg, const char *profile, tlr_aws_error *err)
{
    return tlr_iam_delete_profile(arg, profile, err);
}

static int iam_list(void *arg, tlr_iam_profiles *out, tlr_aws_error *err)
{
    return tlr_iam_list_profiles(arg, "/", 0, out, err);
}

void lc_iam_ops_init(lc_iam_ops *ops, tlr_iam *iam)
{
    *ops = (lc_iam_ops){
        .get = iam_get,
        .create = iam_create,
        .add_role = iam_add_role,
        .remove_role = iam_remove_role,
        .tag = iam_tag,
        .delete_profile = iam_delete,
        .list = iam_list,
        .arg = iam,
    };
}
