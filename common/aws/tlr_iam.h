/* tlr_iam.h - typed IAM instance-profile calls on the AWS Query client.
 *
 * What the launcher needs to manage the instance profile of an
 * EC2NodeClass that names a role (Karpenter's spec.role): read one
 * profile, create it with tags, put its one role in or take it out, tag
 * it, delete it, and list the account's profiles.  API version
 * 2010-05-08, signing name "iam".  IAM is global: the endpoint is
 * https://iam.amazonaws.com/ (unless AWS_ENDPOINT_URL_IAM or
 * AWS_ENDPOINT_URL says otherwise, e.g. moto) and requests are always
 * signed for us-east-1, whatever region the caller runs in (the
 * commercial partition only: China and GovCloud are not handled).
 *
 * IAM answers in <ActionResponse><ActionResult>...: lists are <member>
 * elements, errors <ErrorResponse><Error>; a missing profile or role is
 * NoSuchEntity, which comes back as TLR_E_NOTFOUND with err->code and
 * err->message saying which (as every error: tlr_aws_error).
 *
 * Tags: GetInstanceProfile answers with the profile's tags;
 * ListInstanceProfiles does not in real IAM (moto does), so a caller that
 * needs the tags of a listed profile reads it with tlr_iam_get_profile().
 *
 * Result structs own their strings; free them with the *_free() below.
 * A tlr_iam client is one tlr_aws_query: one per thread.
 */
#ifndef TLR_IAM_H
#define TLR_IAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tlr_awsquery.h"
#include "tlr_ec2.h"
#include "tlr_xml.h"

#define TLR_IAM_API_VERSION "2010-05-08"
/* IAM's ceilings: 50 tags on a profile; 1000 items on a list page. */
#define TLR_IAM_MAX_TAGS 50

typedef struct tlr_iam_profile {
    char *name;            /* "prod_1234" */
    char *id;              /* "AIPA..." */
    char *arn;             /* "arn:aws:iam::123456789012:instance-profile/prod_1234" */
    char *path;            /* "/" */
    int64_t created_ms;    /* CreateDate, wall ms; 0 when absent or malformed */
    char **roles;          /* role names (an instance profile holds at most one) */
    size_t nroles;
    tlr_ec2_tag *tags;     /* as answered (none from a real ListInstanceProfiles) */
    size_t ntags;
} tlr_iam_profile;

typedef struct tlr_iam_profiles {
    tlr_iam_profile *v;
    size_t n;
} tlr_iam_profiles;

void tlr_iam_profile_free(tlr_iam_profile *p);     /* contents; NULL fine */
void tlr_iam_profiles_free(tlr_iam_profiles *l);   /* contents; NULL fine */

typedef struct tlr_iam tlr_iam;

/* opts->service, ->version and ->region are filled in (iam, 2010-05-08,
 * us-east-1); the rest as tlr_aws_query_create.  On TLR_OK *out is new
 * and owned: tlr_iam_free(). */
int  tlr_iam_create(const tlr_aws_query_opts *opts, tlr_iam **out);
void tlr_iam_free(tlr_iam *c);   /* NULL is fine */

/* GetInstanceProfile.  On TLR_OK *out is filled (owned by the caller:
 * tlr_iam_profile_free()).  TLR_E_NOTFOUND (NoSuchEntity) when there is
 * no such profile. */
int tlr_iam_get_profile(tlr_iam *c, const char *name, tlr_iam_profile *out, tlr_aws_error *err);

/* CreateInstanceProfile name under path (NULL = "/") with tags[0..ntags)
 * (borrowed; at most TLR_IAM_MAX_TAGS).  On TLR_OK *out (may be NULL) gets
 * the new profile, owned.  TLR_E_EXISTS (EntityAlreadyExists) when a
 * profile of that name exists. */
int tlr_iam_create_profile(tlr_iam *c, const char *name, const char *path,
                           const tlr_ec2_tag *tags, size_t ntags, tlr_iam_profile *out,
                           tlr_aws_error *err);

/* AddRoleToInstanceProfile.  role is a role name, not an ARN or a path.
 * TLR_E_NOTFOUND (NoSuchEntity) when the role or the profile does not
 * exist (err->message says which); TLR_E_REMOTE with err->code
 * "LimitExceeded" when the profile already holds a role. */
int tlr_iam_add_role(tlr_iam *c, const char *profile, const char *role, tlr_aws_error *err);

/* RemoveRoleFromInstanceProfile.  TLR_E_NOTFOUND when the profile, the
 * role, or the role in the profile is not there. */
int tlr_iam_remove_role(tlr_iam *c, const char *profile, const char *role, tlr_aws_error *err);

/* TagInstanceProfile: add or overwrite tags[0..ntags) (1..TLR_IAM_MAX_TAGS). */
int tlr_iam_tag_profile(tlr_iam *c, const char *profile, const tlr_ec2_tag *tags, size_t ntags,
                        tlr_aws_error *err);

/* DeleteInstanceProfile.  The profile must hold no role (else TLR_E_REMOTE,
 * err->code "DeleteConflict").  TLR_E_NOTFOUND when it does not exist. */
int tlr_iam_delete_profile(tlr_iam *c, const char *profile, tlr_aws_error *err);

/* ListInstanceProfiles under path_prefix (NULL = "/", every profile),
 * following Marker while IsTruncated (at most max_pages pages of 1000;
 * 0 = 100; more is TLR_E_TOOBIG rather than a partial answer).  On TLR_OK
 * *out is filled (owned by the caller). */
int tlr_iam_list_profiles(tlr_iam *c, const char *path_prefix, int max_pages,
                          tlr_iam_profiles *out, tlr_aws_error *err);

/* --- parameters and decoders (exposed for tests) ----------------------- */

/* Tags.member.N.Key / .Value for tags[0..ntags) (p from tlr_aws_params_create). */
void tlr_iam_tag_params(const tlr_ec2_tag *tags, size_t ntags, tlr_aws_params *p);

/* Decode the <InstanceProfile> of a Get/CreateInstanceProfileResponse
 * root (action "GetInstanceProfile" / "CreateInstanceProfile").  TLR_E_PARSE
 * for another document or a profile without a name. */
int tlr_iam_parse_profile(const tlr_xml_node *root, const char *action, tlr_iam_profile *out);

/* Append the profiles of a ListInstanceProfilesResponse root to *out;
 * *marker (may be NULL) gets an owned Marker when IsTruncated is true, or
 * NULL.  TLR_E_PARSE for another document, a nameless profile, or
 * IsTruncated without a Marker. */
int tlr_iam_parse_profiles(const tlr_xml_node *root, tlr_iam_profiles *out, char **marker);

#endif
