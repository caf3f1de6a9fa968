/* nodeclass_test.c - selector terms as EC2 filters, the catalog a class
 * buys from, and launch back-off on the class. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "claims.h"
#include "lc_fake.h"
#include "nodeclass.h"
#include "lc_testkit.h"
#include "tlr_err.h"

static Tailor__V1__Label *label(const char *k, const char *v)
{
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(k);
    l->value = tlr_strdup(v);
    return l;
}

static void filters_text(const lc_nc_filters *f, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < f->n; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s=%s", i ? " " : "", f->f[i].name,
                                f->f[i].values[0]);
}

/* Every field of a term becomes one filter; "*" asks for the key only. */
static void test_term_filters(void **state)
{
    (void)state;
    static const struct {
        lc_nc_kind kind;
        const char *id, *name, *k1, *v1, *k2, *v2;
        int rc;
        const char *want;
    } cases[] = {
        { LC_NC_SUBNETS, NULL, NULL, "karpenter.sh/discovery", "demo", NULL, NULL, TLR_OK,
          "tag:karpenter.sh/discovery=demo" },
        { LC_NC_SUBNETS, "subnet-1", NULL, NULL, NULL, NULL, NULL, TLR_OK, "subnet-id=subnet-1" },
        { LC_NC_SUBNETS, NULL, NULL, "Name", "*", "env", "prod", TLR_OK, "tag-key=Name tag:env=prod" },
        { LC_NC_SECURITY_GROUPS, "sg-1", "nodes", NULL, NULL, NULL, NULL, TLR_OK,
          "group-id=sg-1 group-name=nodes" },
        /* a name means nothing for a subnet term (the CRD has no such field) */
        { LC_NC_SUBNETS, NULL, "x", NULL, NULL, NULL, NULL, TLR_E_INVAL, "" },
        { LC_NC_SECURITY_GROUPS, NULL, NULL, NULL, NULL, NULL, NULL, TLR_E_INVAL, "" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__SelectorTerm t = TAILOR__V1__SELECTOR_TERM__INIT;
        Tailor__V1__Label *tags[2];
        t.id = (char *)(cases[i].id ? cases[i].id : "");
        t.name = (char *)(cases[i].name ? cases[i].name : "");
        if (cases[i].k1)
            tags[t.n_tags++] = label(cases[i].k1, cases[i].v1);
        if (cases[i].k2)
            tags[t.n_tags++] = label(cases[i].k2, cases[i].v2);
        t.tags = tags;
        lc_nc_filters f;
        int rc = lc_nc_term_filters(cases[i].kind, &t, &f);
        char got[512];
        filters_text(&f, got, sizeof(got));
        printf("case %zu: got rc %d [%s] want %d [%s]\n", i, rc, got, cases[i].rc, cases[i].want);
        assert_int_equal(rc, cases[i].rc);
        assert_string_equal(got, cases[i].want);
        lc_nc_filters_clear(&f);
        for (size_t k = 0; k < t.n_tags; k++)
            tailor__v1__label__free_unpacked(tags[k], NULL);
    }
}

static void test_ami_filters(void **state)
{
    (void)state;
    Tailor__V1__AmiSelectorTerm t = TAILOR__V1__AMI_SELECTOR_TERM__INIT;
    t.name = "al2023-*";
    t.owner = "amazon";
    lc_nc_filters f;
    char got[512];
    assert_int_equal(lc_nc_ami_filters(&t, &f), TLR_OK);
    filters_text(&f, got, sizeof(got));
    assert_string_equal(got, "name=al2023-* owner-alias=amazon state=available");
    lc_nc_filters_clear(&f);
    t.owner = "123456789012";
    assert_int_equal(lc_nc_ami_filters(&t, &f), TLR_OK);
    filters_text(&f, got, sizeof(got));
    assert_string_equal(got, "name=al2023-* owner-id=123456789012 state=available");
    lc_nc_filters_clear(&f);
    Tailor__V1__AmiSelectorTerm empty = TAILOR__V1__AMI_SELECTOR_TERM__INIT;
    assert_int_equal(lc_nc_ami_filters(&empty, &f), TLR_E_INVAL);
}

typedef struct fx {
    lc_fake f;
    lc_classes *cs;
    Tailor__V1__ClusterState st;
    Tailor__V1__NodeClass *nc;
} fx;

static int setup(void **state)
{
    fx *x = tlr_calloc(1, sizeof(*x));
    lc_fake_init(&x->f);
    lc_classes_opts o = { lc_fake_cloud(&x->f), lc_fake_kube(&x->f), &x->f.clock, NULL, NULL,
                          "1.31", 0 };
    lc_classes_create(&o, &x->cs);
    x->nc = lc_fake_nodeclass("default", NULL);
    tailor__v1__cluster_state__init(&x->st);
    x->st.node_classes = &x->nc;
    x->st.n_node_classes = 1;
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    lc_classes_free(x->cs);
    protobuf_c_message_free_unpacked(&x->nc->base, NULL);
    lc_fake_clear(&x->f);
    free(x);
    return 0;
}

/* The class buys in its subnets' zones only; when those are all the
 * catalog has, the catalog itself (same hash: no resend to solvers). */
static void test_catalog_view(void **state)
{
    fx *x = *state;
    Tailor__V1__Catalog *cat = tk_catalog();
    lc_classes_sync(x->cs, &x->st);
    lc_class *c = lc_classes_get(x->cs, "default");
    assert_true(c->ready);
    assert_ptr_equal(lc_class_catalog(c, cat), cat);
    /* Only zone b's subnet left: a view without a and c. */
    tlr_ec2_subnet *s = x->f.subnets.v;
    for (size_t i = 0; i < x->f.subnets.n; i++)
        if (strcmp(s[i].zone, "us-east-1b") != 0) {
            free(s[i].tags[0].value);
            s[i].tags[0].value = tlr_strdup("other");
        }
    x->f.now_ms += LC_NC_RESOLVE_TTL_MS;
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(c->nc->n_subnets, 1);
    const Tailor__V1__Catalog *v = lc_class_catalog(c, cat);
    assert_ptr_not_equal(v, cat);
    assert_string_not_equal(v->hash, cat->hash);
    for (size_t i = 0; i < v->n_instance_types; i++)
        for (size_t j = 0; j < v->instance_types[i]->n_offerings; j++)
            assert_string_equal(v->instance_types[i]->offerings[j]->zone, "us-east-1b");
    /* r5.large is offered only in c: gone from the view */
    assert_int_equal(v->n_instance_types, 2);
    assert_ptr_equal(lc_class_catalog(c, cat), v);   /* cached */
    protobuf_c_message_free_unpacked(&cat->base, NULL);
}

/* Subnets that carry zone IDs (EC2 DescribeSubnets' AvailabilityZoneId)
 * give the class's offerings theirs, so topology.k8s.aws/zone-id
 * requirements can be met; the launched claim is labelled with it. */
static void test_catalog_zone_ids(void **state)
{
    fx *x = *state;
    Tailor__V1__Catalog *cat = tk_catalog();
    tlr_ec2_subnet *s = x->f.subnets.v;
    for (size_t i = 0; i < x->f.subnets.n; i++) {
        free(s[i].zone_id);
        s[i].zone_id = tlr_strdup(!strcmp(s[i].zone, "us-east-1a") ? "use1-az4"
                                  : !strcmp(s[i].zone, "us-east-1b") ? "use1-az6" : "use1-az1");
    }
    lc_classes_sync(x->cs, &x->st);
    lc_class *c = lc_classes_get(x->cs, "default");
    const Tailor__V1__Catalog *v = lc_class_catalog(c, cat);
    assert_ptr_not_equal(v, cat);
    assert_string_not_equal(v->hash, cat->hash);
    assert_int_equal(v->n_instance_types, cat->n_instance_types);
    for (size_t i = 0; i < v->n_instance_types; i++)
        for (size_t j = 0; j < v->instance_types[i]->n_offerings; j++) {
            const Tailor__V1__Offering *o = v->instance_types[i]->offerings[j];
            const char *want = !strcmp(o->zone, "us-east-1a") ? "use1-az4"
                             : !strcmp(o->zone, "us-east-1b") ? "use1-az6" : "use1-az1";
            assert_string_equal(o->zone_id, want);
        }
    assert_ptr_equal(lc_class_catalog(c, cat), v);   /* cached */

    Tailor__V1__NodeClaim *nc = tlr_malloc(sizeof(*nc));
    tailor__v1__node_claim__init(nc);
    nc->status = tlr_malloc(sizeof(*nc->status));
    tailor__v1__node_claim_status__init(nc->status);
    nc->status->zone = tlr_strdup("us-east-1b");
    nc->status->instance_type = tlr_strdup(v->instance_types[0]->name);
    lc_claim_add_instance_labels(nc, v->instance_types[0], "us-east-1");
    assert_string_equal(lc_claim_label(nc, "topology.k8s.aws/zone-id"), "use1-az6");
    assert_string_equal(lc_claim_label(nc, "topology.kubernetes.io/region"), "us-east-1");
    protobuf_c_message_free_unpacked(&nc->base, NULL);
    protobuf_c_message_free_unpacked(&cat->base, NULL);
}

/* kubelet.maxPods 5: the class gets a catalog of its own (another hash)
 * whose every type holds 5 pods; a spec change rebuilds it, and a class
 * back to the defaults buys from the launcher's catalog again. */
static void test_catalog_shaped(void **state)
{
    fx *x = *state;
    Tailor__V1__Catalog *cat = tk_catalog();
    for (size_t i = 0; i < cat->n_instance_types; i++) {
        Tailor__V1__InstanceType *it = cat->instance_types[i];
        it->vcpu = 2;
        it->memory_mib = 8192;
        it->eni_max_pods = it->max_pods = 29;
    }
    Tailor__V1__KubeletConfig *k = tlr_malloc(sizeof(*k));
    tailor__v1__kubelet_config__init(k);
    k->max_pods = 5;
    x->nc->kubelet = k;
    lc_classes_sync(x->cs, &x->st);
    lc_class *c = lc_classes_get(x->cs, "default");
    assert_true(c->ready);
    const Tailor__V1__Catalog *v = lc_class_catalog(c, cat);
    assert_ptr_not_equal(v, cat);
    assert_string_not_equal(v->hash, cat->hash);
    assert_int_equal(v->n_instance_types, cat->n_instance_types);   /* every zone resolved */
    for (size_t i = 0; i < v->n_instance_types; i++) {
        printf("%s: pods %lld\n", v->instance_types[i]->name,
               (long long)v->instance_types[i]->allocatable->pods);
        assert_int_equal(v->instance_types[i]->allocatable->pods, 5);
        assert_int_equal(v->instance_types[i]->max_pods, 5);
    }
    char *h5 = tlr_strdup(v->hash);
    assert_ptr_equal(lc_class_catalog(c, cat), v);   /* cached */

    k->max_pods = 7;   /* a spec change: resolved again, the view rebuilt */
    lc_classes_sync(x->cs, &x->st);
    v = lc_class_catalog(c, cat);
    assert_string_not_equal(v->hash, h5);
    assert_int_equal(v->instance_types[0]->allocatable->pods, 7);

    k->max_pods = 0;   /* nothing set: the base catalog itself */
    lc_classes_sync(x->cs, &x->st);
    assert_ptr_equal(lc_class_catalog(c, cat), cat);
    free(h5);
    protobuf_c_message_free_unpacked(&cat->base, NULL);
}

/* Launch back-off: 10 s, then 20 s; a success clears it. */
static void test_launch_backoff(void **state)
{
    fx *x = *state;
    lc_classes_sync(x->cs, &x->st);
    lc_class *c = lc_classes_get(x->cs, "default");
    const char *why = NULL;
    assert_true(lc_class_usable(c, x->f.now_ms, &why));
    lc_classes_launch_failed(x->cs, "default", "UnauthorizedOperation", "no");
    assert_false(lc_class_usable(c, x->f.now_ms + 9000, &why));
    assert_non_null(strstr(why, "launches paused for 10s"));
    assert_true(lc_class_usable(c, x->f.now_ms + 10000, NULL));
    lc_classes_launch_failed(x->cs, "default", "UnauthorizedOperation", "no");
    assert_false(lc_class_usable(c, x->f.now_ms + 19000, NULL));
    lc_classes_launch_ok(x->cs, "default");
    assert_true(lc_class_usable(c, x->f.now_ms, NULL));
    char *js = lc_class_status_json(c);
    assert_non_null(strstr(js, "{\"type\":\"ValidationSucceeded\",\"status\":\"True\""));
    free(js);
}

/* A spec change resolves again at once, whatever the refresh time. */
static void test_spec_change(void **state)
{
    fx *x = *state;
    lc_classes_sync(x->cs, &x->st);
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(lc_fake_count(&x->f, "subnets "), 1);
    free(x->nc->ami_selector_terms[0]->id);
    x->nc->ami_selector_terms[0]->id = tlr_strdup("ami-arm");
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(lc_fake_count(&x->f, "subnets "), 2);
    lc_class *c = lc_classes_get(x->cs, "default");
    assert_string_equal(c->nc->amis[0]->id, "ami-arm");
    assert_string_equal(c->nc->amis[0]->arch, "arm64");
}

/* Batches come only while pods are pending: in a quiet cluster a class
 * is still resolved again once its refresh time has passed, read from
 * Kubernetes (a new AMI behind an alias reaches status.amis, which the
 * disruptor's AMI drift reads). */
static void test_refresh_without_batches(void **state)
{
    fx *x = *state;
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(lc_fake_count(&x->f, "subnets "), 1);
    lc_classes_refresh(x->cs);                       /* not due yet */
    assert_int_equal(lc_fake_count(&x->f, "nodeclass_get"), 0);
    assert_int_equal(lc_fake_count(&x->f, "subnets "), 1);
    x->f.now_ms += LC_NC_RESOLVE_TTL_MS;
    lc_classes_refresh(x->cs);
    assert_int_equal(lc_fake_count(&x->f, "nodeclass_get default"), 1);
    assert_int_equal(lc_fake_count(&x->f, "subnets "), 2);
    lc_class *c = lc_classes_get(x->cs, "default");
    assert_true(c->ready);
    assert_string_equal(c->nc->amis[0]->id, "ami-x86");
    lc_classes_refresh(x->cs);                       /* due again only after the TTL */
    assert_int_equal(lc_fake_count(&x->f, "subnets "), 2);
}

/* Set the class's observed status.conditions to the pairs type, status
 * (true/false), as the watcher's snapshot would carry them. */
static void observe(Tailor__V1__NodeClass *nc, const char *const *types, const bool *status, size_t n)
{
    for (size_t i = 0; i < nc->n_conditions; i++)
        tailor__v1__condition__free_unpacked(nc->conditions[i], NULL);
    free(nc->conditions);
    nc->conditions = tlr_calloc(n, sizeof(*nc->conditions));
    nc->n_conditions = n;
    for (size_t i = 0; i < n; i++) {
        Tailor__V1__Condition *c = tlr_malloc(sizeof(*c));
        tailor__v1__condition__init(c);
        c->type = tlr_strdup(types[i]);
        c->status = status[i] ? TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE
                              : TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE;
        c->reason = tlr_strdup("");
        c->message = tlr_strdup("");
        nc->conditions[i] = c;
    }
}

/* The watcher set ValidationSucceeded and Ready False on the class while
 * it did not convert; once it does again (the snapshot has it back,
 * resolution unchanged and not due) the launcher writes its own
 * conditions back.  Conditions as written are not written again. */
static void test_status_rewritten_when_overwritten(void **state)
{
    fx *x = *state;
    static const char *const types[] = { "SubnetsReady", "SecurityGroupsReady", "AMIsReady",
                                         "InstanceProfileReady", "ValidationSucceeded", "Ready" };
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(lc_fake_count(&x->f, "nodeclass_status "), 1);
    const bool ours[] = { true, true, true, true, true, true };
    observe(x->nc, types, ours, 6);
    lc_classes_sync(x->cs, &x->st);
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(lc_fake_count(&x->f, "nodeclass_status "), 1);
    const bool watcher[] = { true, true, true, true, false, false };
    observe(x->nc, types, watcher, 6);
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(lc_fake_count(&x->f, "nodeclass_status "), 2);
    assert_int_equal(lc_fake_count(&x->f, "subnets "), 1);     /* nothing resolved again */
    assert_int_equal(lc_fake_count(&x->f, "nodeclass_status default {\"status\""), 2);
    observe(x->nc, types, ours, 6);
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(lc_fake_count(&x->f, "nodeclass_status "), 2);
}

/* An alias is two SSM parameters (x86_64, arm64), one AMI each. */
/* An alias resolves through the SSM parameters of every architecture and
 * variant Karpenter reads; each instance type then boots its variant. */
static void test_alias(void **state)
{
    fx *x = *state;
    free(x->nc->ami_selector_terms[0]->id);
    x->nc->ami_selector_terms[0]->id = (char *)protobuf_c_empty_string;
    x->nc->ami_selector_terms[0]->alias = tlr_strdup("al2023@latest");
    lc_classes_sync(x->cs, &x->st);
    assert_int_equal(lc_fake_count(&x->f, "ssm /aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/"), 3);
    assert_int_equal(lc_fake_count(&x->f, "ssm /aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/"), 2);
    assert_int_equal(lc_fake_count(&x->f, "ssm /aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id"), 1);
    lc_class *c = lc_classes_get(x->cs, "default");
    assert_int_equal(c->nc->n_amis, 5);
    assert_true(c->ready);

    /* Which AMI each type boots: by architecture and variant. */
    Tailor__V1__InstanceType m5 = TAILOR__V1__INSTANCE_TYPE__INIT, g5 = m5, m6g = m5, inf2 = m5;
    m5.name = "m5.large", m5.arch = "amd64";
    g5.name = "g5.xlarge", g5.arch = "amd64", g5.gpu_count = 1;
    m6g.name = "m6g.large", m6g.arch = "arm64";
    Tailor__V1__Accelerator acc = TAILOR__V1__ACCELERATOR__INIT, *accs[1] = { &acc };
    acc.count = 1;
    inf2.name = "inf2.xlarge", inf2.arch = "amd64", inf2.accelerators = accs;
    inf2.n_accelerators = 1;
    struct { const Tailor__V1__InstanceType *it; const char *arch, *req_key; int op; } want[] = {
        { &m5, "amd64", "karpenter.k8s.aws/instance-gpu-count",
          TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST },
        { &g5, "amd64", "karpenter.k8s.aws/instance-gpu-count",
          TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS },
        { &m6g, "arm64", "karpenter.k8s.aws/instance-gpu-count",
          TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST },
        { &inf2, "amd64", "karpenter.k8s.aws/instance-accelerator-count",
          TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const Tailor__V1__ResolvedAmi *a = lc_class_ami_for(c, want[i].it);
        assert_non_null(a);
        bool found = false;
        for (size_t k = 0; k < a->n_requirements; k++)
            found |= strcmp(a->requirements[k]->key, want[i].req_key) == 0 &&
                     (int)a->requirements[k]->operator_ == want[i].op;
        if (strcmp(a->arch, want[i].arch) != 0 || !found)
            fail_msg("%s: got AMI %s (%s), want arch %s with %s op %d", want[i].it->name, a->id,
                     a->name, want[i].arch, want[i].req_key, want[i].op);
    }
    /* The status says the variant as Karpenter's does. */
    char *js = lc_class_status_json(c);
    assert_non_null(strstr(js, "instance-gpu-count\",\"operator\":\"Exists\""));
    free(js);
}

/* A scripted IAM: the profile exists after a create; refuse = the
 * AWS code every write answers with ("" = none). */
typedef struct fake_iam {
    bool exists;
    char role[64];
    const char *refuse;
    int writes;
} fake_iam;

static int fi_get(void *arg, const char *name, tlr_iam_profile *out, tlr_aws_error *err)
{
    fake_iam *f = arg;
    (void)err;
    if (!f->exists)
        return TLR_E_NOTFOUND;
    memset(out, 0, sizeof(*out));
    out->name = tlr_strdup(name);
    out->path = tlr_strdup("/");
    if (f->role[0]) {
        out->roles = tlr_calloc(1, sizeof(*out->roles));
        out->roles[out->nroles++] = tlr_strdup(f->role);
    }
    return TLR_OK;
}

static int fi_write(fake_iam *f, tlr_aws_error *err)
{
    f->writes++;
    if (f->refuse[0]) {
        snprintf(err->code, sizeof(err->code), "%s", f->refuse);
        snprintf(err->message, sizeof(err->message), "not allowed");
        return TLR_E_AUTH;
    }
    return TLR_OK;
}

static int fi_create(void *arg, const char *name, const char *path, const tlr_ec2_tag *tags,
                     size_t ntags, tlr_aws_error *err)
{
    fake_iam *f = arg;
    (void)name, (void)path, (void)tags, (void)ntags;
    int rc = fi_write(f, err);
    f->exists |= rc == TLR_OK;
    return rc;
}

static int fi_add_role(void *arg, const char *profile, const char *role, tlr_aws_error *err)
{
    fake_iam *f = arg;
    (void)profile;
    int rc = fi_write(f, err);
    if (rc == TLR_OK)
        snprintf(f->role, sizeof(f->role), "%s", role);
    return rc;
}

static int fi_tag(void *arg, const char *profile, const tlr_ec2_tag *tags, size_t ntags,
                  tlr_aws_error *err)
{
    (void)profile, (void)tags, (void)ntags;
    return fi_write(arg, err);
}

/* spec.role: the class gets a managed instance profile (status and the
 * resolved class carry its name); IAM refusing makes the class not Ready
 * with the AWS code as InstanceProfileReady's reason. */
static void test_instance_profile(void **state)
{
    fx *x = *state;
    fake_iam iam = { .refuse = "AccessDenied" };
    lc_classes_free(x->cs);
    lc_classes_opts o = { lc_fake_cloud(&x->f), lc_fake_kube(&x->f), &x->f.clock, NULL, NULL,
                          "1.31", 0, { 0 }, "c1", "us-east-1" };
    o.iam.get = fi_get, o.iam.create = fi_create, o.iam.add_role = fi_add_role;
    o.iam.tag = fi_tag, o.iam.arg = &iam;
    lc_classes_create(&o, &x->cs);
    x->nc->role = tlr_strdup("KarpenterNodeRole-c1");
    lc_classes_sync(x->cs, &x->st);
    lc_class *c = lc_classes_get(x->cs, "default");
    assert_false(c->ready);
    char *js = lc_class_status_json(c);
    if (!strstr(js, "\"type\":\"InstanceProfileReady\",\"status\":\"False\"") ||
        !strstr(js, "AccessDenied"))
        fail_msg("status %s: want InstanceProfileReady False, AccessDenied", js);
    free(js);

    iam.refuse = "";
    x->f.now_ms += 60 * 60 * 1000;   /* past the back-off */
    lc_classes_sync(x->cs, &x->st);
    c = lc_classes_get(x->cs, "default");
    assert_true(c->ready);
    assert_string_equal(iam.role, "KarpenterNodeRole-c1");
    assert_true(strncmp(c->nc->instance_profile, "c1_", 3) == 0);
    js = lc_class_status_json(c);
    char want[160];
    snprintf(want, sizeof(want), "\"instanceProfile\":\"%s\"", c->nc->instance_profile);
    if (!strstr(js, want))
        fail_msg("status %s lacks %s", js, want);
    free(js);
}

/* Windows families are refused with a condition, never launched. */
static void test_windows_refused(void **state)
{
    fx *x = *state;
    if (x->nc->ami_family != protobuf_c_empty_string)
        free(x->nc->ami_family);
    x->nc->ami_family = tlr_strdup("Windows2022");
    lc_classes_sync(x->cs, &x->st);
    lc_class *c = lc_classes_get(x->cs, "default");
    assert_false(c->ready);
    char *js = lc_class_status_json(c);
    if (!strstr(js, "AMIFamilyNotSupported"))
        fail_msg("status %s lacks AMIFamilyNotSupported", js);
    free(js);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_term_filters),
        cmocka_unit_test(test_ami_filters),
        cmocka_unit_test_setup_teardown(test_catalog_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refresh_without_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_catalog_shaped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_catalog_zone_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spec_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_rewritten_when_overwritten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alias, setup, teardown),
        cmocka_unit_test_setup_teardown(test_windows_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_instance_profile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
