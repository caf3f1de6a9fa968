/* profile_test.c - the managed instance profile (profile.h) on a recording
 * fake IAM: the name rule, what ensure calls in every starting state
 * (and that a profile already right costs no write at all), how IAM's
 * refusals come back, and what gc deletes and what it must never touch.
 *
 * The fake keeps profiles like IAM does (one role at most: a second add is
 * LimitExceeded; a profile holding a role cannot be deleted), records
 * every call as one line, and fails the calls a test scripts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

#define CLUSTER "prod"
#define REGION "us-west-2"
/* lc_profile_name(prod, us-west-2, default): FNV-1 64 of "us-west-2default". */
#define P_DEFAULT "prod_4067990795380418201"

/* --- the fake ----------------------------------------------------------- */

typedef struct fprofile {
    char name[160];
    char role[64];          /* "" = none */
    char keys[8][96], values[8][96];
    size_t ntags;
    int64_t created_ms;
} fprofile;

typedef struct frule {
    const char *method;     /* "get", "create", ... */
    const char *name;       /* profile; NULL = any */
    int rc;
    const char *code, *msg;
} frule;

typedef struct fake_iam {
    fprofile p[16];
    size_t n;
    char log[2048];         /* "get X;create X ...;..." */
    int writes;
    frule rules[4];
    bool race_on_create;    /* create: someone else made it (role "Old") */
} fake_iam;

static void logf_(fake_iam *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(fake_iam *f, const char *fmt, ...)
{
    size_t k = strlen(f->log);
    va_list ap;

    if (k > 0 && k + 1 < sizeof(f->log))
        f->log[k++] = ';';
    va_start(ap, fmt);
    vsnprintf(f->log + k, sizeof(f->log) - k, fmt, ap);
    va_end(ap);
}

static int scripted(fake_iam *f, const char *method, const char *name, tlr_aws_error *err)
{
    for (size_t i = 0; i < 4 && f->rules[i].method != NULL; i++) {
        const frule *r = &f->rules[i];
        if (strcmp(r->method, method) == 0 && (r->name == NULL || strcmp(r->name, name) == 0)) {
            snprintf(err->code, sizeof(err->code), "%s", r->code ? r->code : "");
            snprintf(err->message, sizeof(err->message), "%s", r->msg ? r->msg : "");
            return r->rc;
        }
    }
    return TLR_OK;
}

static fprofile *find(fake_iam *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->p[i].name, name) == 0)
            return &f->p[i];
    return NULL;
}

static int nosuch(tlr_aws_error *err, const char *what, const char *name)
{
    snprintf(err->code, sizeof(err->code), "NoSuchEntity");
    snprintf(err->message, sizeof(err->message), "%s %s not found", what, name);
    return TLR_E_NOTFOUND;
}

static void set_tag(fprofile *p, const char *k, const char *v)
{
    for (size_t i = 0; i < p->ntags; i++)
        if (strcmp(p->keys[i], k) == 0) {
            snprintf(p->values[i], sizeof(p->values[i]), "%s", v);
            return;
        }
    assert_true(p->ntags < 8);
    snprintf(p->keys[p->ntags], sizeof(p->keys[0]), "%s", k);
    snprintf(p->values[p->ntags], sizeof(p->values[0]), "%s", v);
    p->ntags++;
}

static fprofile *add(fake_iam *f, const char *name, const char *role)
{
    assert_true(f->n < 16);
    fprofile *p = &f->p[f->n++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    snprintf(p->role, sizeof(p->role), "%s", role != NULL ? role : "");
    p->created_ms = 1000;
    return p;
}

/* A profile as ensure makes it for class nc (role may be NULL). */
static fprofile *add_managed(fake_iam *f, const char *cluster, const char *region,
                             const char *nc, const char *role)
{
    char name[LC_PROFILE_NAME_MAX + 1], ck[128];
    assert_int_equal(lc_profile_name(cluster, region, nc, name, sizeof(name)), TLR_OK);
    fprofile *p = add(f, name, role);
    snprintf(ck, sizeof(ck), "kubernetes.io/cluster/%s", cluster);
    set_tag(p, ck, "owned");
    set_tag(p, "eks:eks-cluster-name", cluster);
    set_tag(p, "karpenter.k8s.aws/ec2nodeclass", nc);
    set_tag(p, "topology.kubernetes.io/region", region);
    set_tag(p, "karpenter.sh/managed-by", cluster);
    return p;
}

static void to_profile(const fprofile *s, tlr_iam_profile *out)
{
    memset(out, 0, sizeof(*out));
    out->name = tlr_strdup(s->name);
    out->created_ms = s->created_ms;
    if (s->role[0] != '\0') {
        out->roles = tlr_calloc(1, sizeof(*out->roles));
        out->roles[0] = tlr_strdup(s->role);
        out->nroles = 1;
    }
    if (s->ntags > 0)
        out->tags = tlr_calloc(s->ntags, sizeof(*out->tags));
    for (size_t i = 0; i < s->ntags; i++) {
        out->tags[i].key = tlr_strdup(s->keys[i]);
        out->tags[i].value = tlr_strdup(s->values[i]);
    }
    out->ntags = s->ntags;
}

static int f_get(void *arg, const char *name, tlr_iam_profile *out, tlr_aws_error *err)
{
    fake_iam *f = arg;
    int rc;
    logf_(f, "get %s", name);
    if ((rc = scripted(f, "get", name, err)) != TLR_OK)
        return rc;
    const fprofile *p = find(f, name);
    if (p == NULL)
        return nosuch(err, "Instance profile", name);
    to_profile(p, out);
    return TLR_OK;
}

static void log_tags(fake_iam *f, const tlr_ec2_tag *tags, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(f->log);
        snprintf(f->log + k, sizeof(f->log) - k, "%s%s=%s", i ? "," : " ", tags[i].key,
                 tags[i].value);
    }
}

static int f_create(void *arg, const char *name, const char *path, const tlr_ec2_tag *tags,
                    size_t ntags, tlr_aws_error *err)
{
    fake_iam *f = arg;
    int rc;
    logf_(f, "create %s %s", name, path);
    log_tags(f, tags, ntags);
    f->writes++;
    if ((rc = scripted(f, "create", name, err)) != TLR_OK)
        return rc;
    if (f->race_on_create && find(f, name) == NULL)
        add_managed(f, CLUSTER, REGION, "default", "Old");
    if (find(f, name) != NULL) {
        snprintf(err->code, sizeof(err->code), "EntityAlreadyExists");
        return TLR_E_EXISTS;
    }
    fprofile *p = add(f, name, NULL);
    for (size_t i = 0; i < ntags; i++)
        set_tag(p, tags[i].key, tags[i].value);
    return TLR_OK;
}

static int f_add_role(void *arg, const char *profile, const char *role, tlr_aws_error *err)
{
    fake_iam *f = arg;
    int rc;
    logf_(f, "add_role %s %s", profile, role);
    f->writes++;
    if ((rc = scripted(f, "add_role", profile, err)) != TLR_OK)
        return rc;
    fprofile *p = find(f, profile);
    if (p == NULL)
        return nosuch(err, "Instance profile", profile);
    if (p->role[0] != '\0') {
        snprintf(err->code, sizeof(err->code), "LimitExceeded");
        return TLR_E_REMOTE;
    }
    snprintf(p->role, sizeof(p->role), "%s", role);
    return TLR_OK;
}

static int f_remove_role(void *arg, const char *profile, const char *role, tlr_aws_error *err)
{
    fake_iam *f = arg;
    int rc;
    logf_(f, "remove_role %s %s", profile, role);
    f->writes++;
    if ((rc = scripted(f, "remove_role", profile, err)) != TLR_OK)
        return rc;
    fprofile *p = find(f, profile);
    if (p == NULL || strcmp(p->role, role) != 0)
        return nosuch(err, "Role", role);
    p->role[0] = '\0';
    return TLR_OK;
}

static int f_tag(void *arg, const char *profile, const tlr_ec2_tag *tags, size_t ntags,
                 tlr_aws_error *err)
{
    fake_iam *f = arg;
    int rc;
    logf_(f, "tag %s", profile);
    log_tags(f, tags, ntags);
    f->writes++;
    if ((rc = scripted(f, "tag", profile, err)) != TLR_OK)
        return rc;
    fprofile *p = find(f, profile);
    if (p == NULL)
        return nosuch(err, "Instance profile", profile);
    for (size_t i = 0; i < ntags; i++)
        set_tag(p, tags[i].key, tags[i].value);
    return TLR_OK;
}

static int f_delete(void *arg, const char *profile, tlr_aws_error *err)
{
    fake_iam *f = arg;
    int rc;
    logf_(f, "delete %s", profile);
    f->writes++;
    if ((rc = scripted(f, "delete", profile, err)) != TLR_OK)
        return rc;
    fprofile *p = find(f, profile);
    if (p == NULL)
        return nosuch(err, "Instance profile", profile);
    if (p->role[0] != '\0') {
        snprintf(err->code, sizeof(err->code), "DeleteConflict");
        return TLR_E_REMOTE;
    }
    *p = f->p[--f->n];
    return TLR_OK;
}

/* Like real IAM: names, roles and dates, no tags. */
static int f_list(void *arg, tlr_iam_profiles *out, tlr_aws_error *err)
{
    fake_iam *f = arg;
    int rc;
    logf_(f, "list");
    if ((rc = scripted(f, "list", "", err)) != TLR_OK)
        return rc;
    out->n = f->n;
    out->v = tlr_calloc(f->n + 1, sizeof(*out->v));
    for (size_t i = 0; i < f->n; i++) {
        fprofile bare = f->p[i];
        bare.ntags = 0;
        to_profile(&bare, &out->v[i]);
    }
    return TLR_OK;
}

static lc_iam_ops ops_for(fake_iam *f)
{
    return (lc_iam_ops){ .get = f_get, .create = f_create, .add_role = f_add_role,
                         .remove_role = f_remove_role, .tag = f_tag,
                         .delete_profile = f_delete, .list = f_list, .arg = f };
}

/* --- the name ----------------------------------------------------------- */

static void test_name(void **state)
{
    (void)state;
    char longc[120];
    memset(longc, 'c', sizeof(longc) - 1);
    longc[sizeof(longc) - 1] = '\0';
    const struct {
        const char *what, *cluster, *region, *nc;
        int rc;
        const char *want;
    } t[] = {
        { "Karpenter's rule", CLUSTER, REGION, "default", TLR_OK, P_DEFAULT },
        /* FNV-1 64("foobar") = 0x340d8765a4dda9c2, the FNV reference vector. */
        { "the FNV-1 reference", "x", "foo", "bar", TLR_OK, "x_3750802935296928194" },
        { "region and class are concatenated, as Karpenter does", "x", "foob", "ar", TLR_OK,
          "x_3750802935296928194" },
        { "no region", CLUSTER, "", "default", TLR_E_INVAL, NULL },
        { "no class", CLUSTER, REGION, NULL, TLR_E_INVAL, NULL },
        { "past 128 characters", longc, REGION, "default", TLR_E_INVAL, NULL },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char buf[LC_PROFILE_NAME_MAX + 1] = "";
        int rc = lc_profile_name(t[i].cluster, t[i].region, t[i].nc, buf, sizeof(buf));
        if (rc != t[i].rc || (t[i].want != NULL && strcmp(buf, t[i].want) != 0)) {
            printf("FAIL %s: got %s %s, want %s %s\n", t[i].what, tlr_errname(rc), buf,
                   tlr_errname(t[i].rc), t[i].want ? t[i].want : "");
            failures++;
        }
    }
    char small[8];
    assert_int_equal(lc_profile_name(CLUSTER, REGION, "default", small, sizeof(small)),
                     TLR_E_INVAL);
    assert_int_equal(failures, 0);
}

/* --- ensure ------------------------------------------------------------- */

#define TAGS_CREATE                                                                    \
    " kubernetes.io/cluster/prod=owned,eks:eks-cluster-name=prod,"                    \
    "karpenter.k8s.aws/ec2nodeclass=default,topology.kubernetes.io/region=us-west-2," \
    "karpenter.sh/managed-by=prod"

enum seed { NONE, RIGHT, NO_ROLE, OLD_ROLE, KARPENTERS, BARE };

static void test_ensure(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        enum seed seed;
        const char *role;
        frule rule;
        bool race;
        int rc;
        const char *calls;
        const char *code, *msg;    /* want in err when rc != OK */
    } t[] = {
        { "absent: create with the tags, add the role", NONE, "NodeRole", { 0 }, false, TLR_OK,
          "get " P_DEFAULT ";create " P_DEFAULT " /" TAGS_CREATE ";add_role " P_DEFAULT
          " NodeRole" },
        { "all right: one read, no write", RIGHT, "NodeRole", { 0 }, false, TLR_OK,
          "get " P_DEFAULT },
        { "no role: add it", NO_ROLE, "NodeRole", { 0 }, false, TLR_OK,
          "get " P_DEFAULT ";add_role " P_DEFAULT " NodeRole" },
        { "another role: replace it", OLD_ROLE, "NodeRole", { 0 }, false, TLR_OK,
          "get " P_DEFAULT ";remove_role " P_DEFAULT " Old;add_role " P_DEFAULT " NodeRole" },
        { "Karpenter's profile: adopted with our tag", KARPENTERS, "NodeRole", { 0 }, false,
          TLR_OK, "get " P_DEFAULT ";tag " P_DEFAULT " karpenter.sh/managed-by=prod" },
        { "untagged profile of our name: tagged", BARE, "NodeRole", { 0 }, false, TLR_OK,
          "get " P_DEFAULT ";tag " P_DEFAULT TAGS_CREATE },
        { "a role with a path is added by name", RIGHT, "team/NodeRole", { 0 }, false, TLR_OK,
          "get " P_DEFAULT },
        { "a role ARN is added by name", NONE, "arn:aws:iam::123456789012:role/x/NodeRole",
          { 0 }, false, TLR_OK,
          "get " P_DEFAULT ";create " P_DEFAULT " /" TAGS_CREATE ";add_role " P_DEFAULT
          " NodeRole" },
        { "lost a create race: take the other's profile", NONE, "NodeRole", { 0 }, true, TLR_OK,
          "get " P_DEFAULT ";create " P_DEFAULT " /" TAGS_CREATE ";get " P_DEFAULT
          ";remove_role " P_DEFAULT " Old;add_role " P_DEFAULT " NodeRole" },
        { "create refused", NONE, "NodeRole",
          { "create", NULL, TLR_E_AUTH, "AccessDenied",
            "User: arn:aws:sts::1:assumed-role/tailor/x is not authorized to perform: "
            "iam:CreateInstanceProfile" }, false, TLR_E_AUTH,
          "get " P_DEFAULT ";create " P_DEFAULT " /" TAGS_CREATE, "AccessDenied",
          "creating instance profile " P_DEFAULT ": User: arn:aws:sts::1:assumed-role/tailor/x "
          "is not authorized to perform: iam:CreateInstanceProfile" },
        { "the role does not exist", NO_ROLE, "Nope",
          { "add_role", NULL, TLR_E_NOTFOUND, "NoSuchEntity",
            "The role with name Nope cannot be found." }, false, TLR_E_NOTFOUND,
          "get " P_DEFAULT ";add_role " P_DEFAULT " Nope", "NoSuchEntity",
          "adding role Nope to instance profile " P_DEFAULT
          ": The role with name Nope cannot be found." },
        { "a role IAM will not take", NO_ROLE, "NodeRole",
          { "add_role", NULL, TLR_E_REMOTE, "LimitExceeded",
            "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1" }, false,
          TLR_E_REMOTE, "get " P_DEFAULT ";add_role " P_DEFAULT " NodeRole", "LimitExceeded",
          "adding role NodeRole to instance profile " P_DEFAULT
          ": Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1" },
        { "the old role cannot be removed", OLD_ROLE, "NodeRole",
          { "remove_role", NULL, TLR_E_AUTH, "AccessDenied", "denied" }, false, TLR_E_AUTH,
          "get " P_DEFAULT ";remove_role " P_DEFAULT " Old", "AccessDenied",
          "removing role Old from instance profile " P_DEFAULT ": denied" },
        { "tagging refused", KARPENTERS, "NodeRole",
          { "tag", NULL, TLR_E_AUTH, "AccessDenied", "denied" }, false, TLR_E_AUTH,
          "get " P_DEFAULT ";tag " P_DEFAULT " karpenter.sh/managed-by=prod", "AccessDenied",
          "tagging instance profile " P_DEFAULT ": denied" },
        { "cannot read: no write", RIGHT, "NodeRole",
          { "get", NULL, TLR_E_IO, NULL, NULL }, false, TLR_E_IO, "get " P_DEFAULT, "",
          "reading instance profile " P_DEFAULT ": no answer from IAM" },
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        fake_iam f = { 0 };
        fprofile *p = NULL;
        switch (t[i].seed) {
        case NONE: break;
        case RIGHT: add_managed(&f, CLUSTER, REGION, "default", "NodeRole"); break;
        case NO_ROLE: add_managed(&f, CLUSTER, REGION, "default", NULL); break;
        case OLD_ROLE: add_managed(&f, CLUSTER, REGION, "default", "Old"); break;
        case KARPENTERS:
            p = add_managed(&f, CLUSTER, REGION, "default", "NodeRole");
            p->ntags--;   /* karpenter.sh/managed-by is the last one */
            break;
        case BARE: add(&f, P_DEFAULT, "NodeRole"); break;
        }
        f.rules[0] = t[i].rule;
        f.race_on_create = t[i].race;
        lc_iam_ops ops = ops_for(&f);
        tlr_aws_error err = { 0 };
        char *name = NULL;
        int rc = lc_profile_ensure(&ops, CLUSTER, REGION, "default", t[i].role, &name, &err);
        bool ok = rc == t[i].rc && strcmp(f.log, t[i].calls) == 0;
        if (rc == TLR_OK)
            ok = ok && name != NULL && strcmp(name, P_DEFAULT) == 0 &&
                 strcmp(find(&f, P_DEFAULT)->role, "NodeRole") == 0;
        else
            ok = ok && name == NULL && strcmp(err.code, t[i].code) == 0 &&
                 strcmp(err.message, t[i].msg) == 0;
        if (!ok) {
            printf("FAIL %s:\n  got  %s %s [%s] %s\n  want %s %s [%s] %s\n", t[i].what,
                   tlr_errname(rc), f.log, err.code, err.message, tlr_errname(t[i].rc),
                   t[i].calls, t[i].code ? t[i].code : "", t[i].msg ? t[i].msg : "");
            failures++;
        }
        free(name);
    }
    assert_int_equal(failures, 0);
}

/* The steady state: after one pass made everything, the next passes (a
 * restart, a resync) read once and write nothing. */
static void test_reuse_writes_nothing(void **state)
{
    (void)state;
    fake_iam f = { 0 };
    lc_iam_ops ops = ops_for(&f);
    tlr_aws_error err = { 0 };
    char *a = NULL, *b = NULL;
    assert_int_equal(lc_profile_ensure(&ops, CLUSTER, REGION, "default", "NodeRole", &a, &err),
                     TLR_OK);
    assert_int_equal(f.writes, 2);   /* create, add role */
    for (int pass = 0; pass < 3; pass++) {
        f.writes = 0;
        f.log[0] = '\0';
        assert_int_equal(lc_profile_ensure(&ops, CLUSTER, REGION, "default", "NodeRole", &b, &err),
                         TLR_OK);
        assert_int_equal(f.writes, 0);
        assert_string_equal(f.log, "get " P_DEFAULT);
        assert_string_equal(a, b);
        free(b);
        b = NULL;
    }
    /* The role changes: the same profile, the new role in the old one's place. */
    f.log[0] = '\0';
    assert_int_equal(lc_profile_ensure(&ops, CLUSTER, REGION, "default", "NewRole", &b, &err),
                     TLR_OK);
    assert_string_equal(f.log, "get " P_DEFAULT ";remove_role " P_DEFAULT " NodeRole;add_role "
                        P_DEFAULT " NewRole");
    assert_string_equal(a, b);
    assert_int_equal(f.n, 1);
    free(a);
    free(b);
    assert_int_equal(lc_profile_ensure(NULL, CLUSTER, REGION, "default", "R", NULL, &err),
                     TLR_E_INVAL);
    assert_int_equal(lc_profile_ensure(&ops, CLUSTER, REGION, "default", "team/", NULL, &err),
                     TLR_E_INVAL);
}

/* --- gc ----------------------------------------------------------------- */

static bool logged(const fake_iam *f, const char *call)
{
    return strstr(f->log, call) != NULL;
}

static void test_gc(void **state)
{
    (void)state;
    fake_iam f = { 0 };
    char live_name[160], gone[160], gone2[160], young[160], other_region[160], karp[160],
        untagged_class[160], dev[160];
    fprofile *p;

    strcpy(live_name, add_managed(&f, CLUSTER, REGION, "default", "NodeRole")->name);
    strcpy(gone, add_managed(&f, CLUSTER, REGION, "deleted", "OldRole")->name);
    strcpy(gone2, add_managed(&f, CLUSTER, REGION, "deleted2", NULL)->name);
    p = add_managed(&f, CLUSTER, REGION, "brand-new", NULL);
    p->created_ms = 1000000;   /* made a moment before now_ms below */
    strcpy(young, p->name);
    strcpy(other_region, add_managed(&f, CLUSTER, "eu-west-1", "deleted", "R")->name);
    p = add_managed(&f, CLUSTER, REGION, "karpenters", "R");
    p->ntags--;   /* no karpenter.sh/managed-by: Karpenter made it */
    strcpy(karp, p->name);
    p = add_managed(&f, CLUSTER, REGION, "x", NULL);
    p->ntags = 1;   /* only kubernetes.io/cluster/prod=owned */
    strcpy(untagged_class, p->name);
    strcpy(dev, add_managed(&f, "dev", REGION, "deleted", NULL)->name);
    add(&f, "prod_web", NULL);
    add(&f, "prod-4067990795380418201", NULL);

    const char *live[] = { "default", "brand-new" };
    const char *live_no_new[] = { "default" };
    lc_profile_gc_opts o = { .cluster = CLUSTER, .region = REGION, .live = live_no_new,
                             .nlive = 1, .now_ms = 1000000 + 5000, .min_age_ms = 60000 };
    lc_iam_ops ops = ops_for(&f);
    tlr_aws_error err = { 0 };
    size_t deleted = 99;
    char want[400];

    assert_int_equal(lc_profile_gc(&ops, &o, &deleted, &err), TLR_OK);
    assert_int_equal(deleted, 2);
    assert_null(find(&f, gone));
    assert_null(find(&f, gone2));
    /* The role goes first, then the profile. */
    snprintf(want, sizeof(want), "remove_role %s OldRole;delete %s", gone, gone);
    if (!logged(&f, want))
        printf("FAIL: want %s in %s\n", want, f.log);
    assert_true(logged(&f, want));
    /* Kept: live, too young, another region, Karpenter's, without a class tag. */
    const char *kept[] = { live_name, young, other_region, karp, untagged_class, dev,
                           "prod_web", "prod-4067990795380418201" };
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        snprintf(want, sizeof(want), "delete %s", kept[i]);
        if (find(&f, kept[i]) == NULL || logged(&f, want))
            printf("FAIL: %s deleted\n", kept[i]);
        assert_non_null(find(&f, kept[i]));
    }
    /* Names that cannot be ours, and the young one, are not even read. */
    const char *unread[] = { dev, "prod_web", "prod-4067990795380418201", young };
    for (size_t i = 0; i < sizeof(unread) / sizeof(unread[0]); i++) {
        snprintf(want, sizeof(want), "get %s", unread[i]);
        if (logged(&f, want))
            printf("FAIL: read %s: %s\n", unread[i], f.log);
        assert_false(logged(&f, want));
    }

    /* Later, the young one's class is gone too -- unless it is live. */
    o.now_ms = 1000000 + 120000;
    o.live = live;
    o.nlive = 2;
    f.log[0] = '\0';
    assert_int_equal(lc_profile_gc(&ops, &o, &deleted, &err), TLR_OK);
    assert_int_equal(deleted, 0);
    assert_non_null(find(&f, young));
    o.live = live_no_new;
    o.nlive = 1;
    assert_int_equal(lc_profile_gc(&ops, &o, &deleted, &err), TLR_OK);
    assert_int_equal(deleted, 1);
    assert_null(find(&f, young));
}

/* One refusal does not stop the others; the first error comes back. */
static void test_gc_errors(void **state)
{
    (void)state;
    fake_iam f = { 0 };
    char a[160], b[160];
    strcpy(a, add_managed(&f, CLUSTER, REGION, "gone-a", "R")->name);
    strcpy(b, add_managed(&f, CLUSTER, REGION, "gone-b", "R")->name);
    f.rules[0] = (frule){ "delete", a, TLR_E_AUTH, "AccessDenied", "no" };
    lc_iam_ops ops = ops_for(&f);
    lc_profile_gc_opts o = { .cluster = CLUSTER, .region = REGION };
    tlr_aws_error err = { 0 };
    size_t deleted = 0;
    char msg[300];

    assert_int_equal(lc_profile_gc(&ops, &o, &deleted, &err), TLR_E_AUTH);
    assert_int_equal(deleted, 1);
    assert_null(find(&f, b));
    assert_non_null(find(&f, a));
    assert_string_equal(err.code, "AccessDenied");
    snprintf(msg, sizeof(msg), "deleting instance profile %s: no", a);
    assert_string_equal(err.message, msg);

    /* A profile that vanished between list and delete is not an error. */
    f.rules[0] = (frule){ "delete", a, TLR_E_NOTFOUND, "NoSuchEntity", "gone" };
    assert_int_equal(lc_profile_gc(&ops, &o, &deleted, &err), TLR_OK);
    assert_int_equal(deleted, 0);

    /* No list, nothing else. */
    f.rules[0] = (frule){ "list", NULL, TLR_E_THROTTLED, "Throttling", "Rate exceeded" };
    f.log[0] = '\0';
    assert_int_equal(lc_profile_gc(&ops, &o, &deleted, &err), TLR_E_THROTTLED);
    assert_string_equal(f.log, "list");
    assert_string_equal(err.code, "Throttling");
    assert_string_equal(err.message, "listing instance profiles: Rate exceeded");
    assert_int_equal(lc_profile_gc(&ops, &(lc_profile_gc_opts){ .cluster = CLUSTER }, NULL, &err),
                     TLR_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_ensure),
        cmocka_unit_test(test_reuse_writes_nothing),
        cmocka_unit_test(test_gc),
        cmocka_unit_test(test_gc_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
