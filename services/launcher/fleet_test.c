/* fleet_test.c - the CreateFleet request built for a claim: which
 * overrides, in which order, with which subnet, market, tags and token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "fleet.h"
#include "lc_testkit.h"
#include "tlr_err.h"

#define IN TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
#define SPOT TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT

static int64_t now_fn(void *arg) { (void)arg; return 1000; }
static const tlr_clock clk = { now_fn, now_fn, NULL };

static void add_subnet(Tailor__V1__NodeClass *nc, const char *id, const char *zone, int64_t ips)
{
    Tailor__V1__ResolvedSubnet *s = tlr_malloc(sizeof(*s));
    tailor__v1__resolved_subnet__init(s);
    s->id = tlr_strdup(id);
    s->zone = tlr_strdup(zone);
    s->available_ips = ips;
    TK_PUSH(nc->subnets, nc->n_subnets, s);
}

/* The overrides as "type/zone/subnet" joined by spaces. */
static void render(const lc_fleet *f, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < f->nov; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s/%s/%s@%g", i ? " " : "",
                                f->ov[i].instance_type, f->ov[i].zone,
                                f->ov[i].subnet_id ? f->ov[i].subnet_id : "-",
                                f->ov[i].priority);
}

static void test_overrides(void **state)
{
    (void)state;
    Tailor__V1__Catalog *cat = tk_catalog();
    struct {
        const char *name;
        const char *ct_in;       /* capacity-type In [...]; NULL = no requirement */
        const char *zone_in;     /* zone In [...]; NULL = none */
        const char *ice;         /* "type/zone" spot to mark ICE; NULL none */
        int want_rc;
        bool want_spot;
        const char *want;
    } cases[] = {
        { "spot allowed: spot offerings only, cheapest first", NULL, NULL, NULL, TLR_OK, true,
          "m5.large/us-east-1b/subnet-b2@0 m5.large/us-east-1a/subnet-a@1" },
        { "on-demand only: every type x zone by price", "on-demand", NULL, NULL, TLR_OK, false,
          "c5.large/us-east-1a/subnet-a@0 c5.large/us-east-1b/subnet-b2@1 "
          "c5.large/us-east-1c/subnet-c@2 m5.large/us-east-1a/subnet-a@3 "
          "m5.large/us-east-1b/subnet-b2@4 r5.large/us-east-1c/subnet-c@5" },
        { "zone requirement", "on-demand", "us-east-1b", NULL, TLR_OK, false,
          "c5.large/us-east-1b/subnet-b2@0 m5.large/us-east-1b/subnet-b2@1" },
        { "ICE'd spot offering skipped", "spot", NULL, "us-east-1b", TLR_OK, true,
          "m5.large/us-east-1a/subnet-a@0" },
        { "spot all ICE'd falls back to on-demand", NULL, "us-east-1a", "us-east-1a", TLR_OK,
          false, "c5.large/us-east-1a/subnet-a@0 m5.large/us-east-1a/subnet-a@1" },
        { "spot only, nothing left", "spot", "us-east-1c", NULL, TLR_E_CAPACITY, false, "" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Tailor__V1__NodeClaim *nc = tk_claim("default-abcde", 1, "m5.large", "c5.large",
                                             "r5.large");
        if (cases[i].ct_in)
            tk_req(nc, "karpenter.sh/capacity-type", IN, cases[i].ct_in, NULL);
        if (cases[i].zone_in)
            tk_req(nc, "topology.kubernetes.io/zone", IN, cases[i].zone_in, NULL);
        Tailor__V1__NodeClass cls = TAILOR__V1__NODE_CLASS__INIT;
        add_subnet(&cls, "subnet-a", "us-east-1a", 100);
        add_subnet(&cls, "subnet-b1", "us-east-1b", 10);
        add_subnet(&cls, "subnet-b2", "us-east-1b", 200);   /* most free IPs in b */
        add_subnet(&cls, "subnet-c", "us-east-1c", 0);
        lc_ice *ice;
        lc_ice_create(&clk, 0, &ice);
        if (cases[i].ice)
            lc_ice_mark(ice, "m5.large", cases[i].ice, SPOT, "InsufficientInstanceCapacity");
        lc_fleet_in in = { nc, cat, &cls, ice, "prod", "lt-1" };
        lc_fleet f;
        int rc = lc_fleet_build(&in, &f);
        char got[1024] = "";
        if (rc == TLR_OK)
            render(&f, got, sizeof(got));
        if (rc != cases[i].want_rc || strcmp(got, cases[i].want) != 0 ||
            (rc == TLR_OK && f.req.spot != cases[i].want_spot))
            fail_msg("%s:\n got rc=%d spot=%d [%s]\nwant rc=%d spot=%d [%s]", cases[i].name, rc,
                     rc == TLR_OK && f.req.spot, got, cases[i].want_rc, cases[i].want_spot,
                     cases[i].want);
        if (rc == TLR_OK)
            lc_fleet_clear(&f);
        lc_ice_free(ice);
        for (size_t j = 0; j < cls.n_subnets; j++)
            protobuf_c_message_free_unpacked(&cls.subnets[j]->base, NULL);
        free(cls.subnets);
        protobuf_c_message_free_unpacked(&nc->base, NULL);
    }
    protobuf_c_message_free_unpacked(&cat->base, NULL);
}

static void test_request_fields(void **state)
{
    (void)state;
    Tailor__V1__Catalog *cat = tk_catalog();
    Tailor__V1__NodeClaim *nc = tk_claim("gpu-pool-x7k2q", 1, "c5.large", NULL, NULL);
    free(nc->nodepool);
    nc->nodepool = tlr_strdup("gpu-pool");
    Tailor__V1__NodeClass cls = TAILOR__V1__NODE_CLASS__INIT;
    Tailor__V1__Label team = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__label__descriptor), "team", "ml" };
    Tailor__V1__Label clash = { PROTOBUF_C_MESSAGE_INIT(&tailor__v1__label__descriptor),
                                "karpenter.sh/nodepool", "spoofed" };
    Tailor__V1__Label *tags[2] = { &team, &clash };
    cls.tags = tags;
    cls.n_tags = 2;
    lc_fleet_in in = { nc, cat, &cls, NULL, "prod", "lt-9" };
    lc_fleet f;
    assert_int_equal(lc_fleet_build(&in, &f), TLR_OK);
    assert_string_equal(f.req.client_token, "gpu-pool-x7k2q");
    assert_string_equal(f.req.launch_template_id, "lt-9");
    assert_int_equal(f.req.target_capacity, 1);
    assert_false(f.req.spot);
    assert_string_equal(f.req.on_demand_allocation, "lowest-price");
    assert_string_equal(f.req.spot_allocation, "price-capacity-optimized");
    assert_null(f.ov[0].subnet_id);   /* no subnets resolved: zone only */
    struct { const char *k, *v; } want[] = {
        { "kubernetes.io/cluster/prod", "owned" },
        { "karpenter.sh/nodepool", "gpu-pool" },     /* ours wins over the class's */
        { "karpenter.sh/nodeclaim", "gpu-pool-x7k2q" },
        { "karpenter.k8s.aws/ec2nodeclass", "default" },
        { "eks:eks-cluster-name", "prod" },
        { "Name", "gpu-pool/gpu-pool-x7k2q" },
        { "team", "ml" },
    };
    assert_int_equal(f.req.ntags, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < f.req.ntags; i++)
        if (strcmp(f.req.tags[i].key, want[i].k) || strcmp(f.req.tags[i].value, want[i].v))
            fail_msg("tag %zu: got %s=%s want %s=%s", i, f.req.tags[i].key, f.req.tags[i].value,
                     want[i].k, want[i].v);
    /* The wire form: what tlr_ec2 sends for it. */
    tlr_aws_params *p;
    tlr_aws_params_create(&p);
    assert_int_equal(tlr_ec2_fleet_params(&f.req, p), TLR_OK);
    assert_true(tlr_aws_params_count(p) > 10);
    tlr_aws_params_free(p);
    assert_true(lc_fleet_price(&f, "c5.large", "us-east-1b") > 0.084);
    lc_fleet_clear(&f);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
    protobuf_c_message_free_unpacked(&cat->base, NULL);
}

static void test_rejects_claim_without_name(void **state)
{
    (void)state;
    Tailor__V1__Catalog *cat = tk_catalog();
    Tailor__V1__NodeClaim *nc = tk_claim(NULL, 1, "c5.large", NULL, NULL);
    lc_fleet_in in = { nc, cat, NULL, NULL, "prod", "lt-1" };
    lc_fleet f;
    assert_int_equal(lc_fleet_build(&in, &f), TLR_E_INVAL);
    protobuf_c_message_free_unpacked(&nc->base, NULL);
    protobuf_c_message_free_unpacked(&cat->base, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_request_fields),
        cmocka_unit_test(test_rejects_claim_without_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
