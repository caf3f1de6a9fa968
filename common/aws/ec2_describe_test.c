/* ec2_describe_test.c - the Describe* decoders on answers recorded from
 * moto (testdata/describe_*.xml), spot-price history paging and "keep
 * the newest", and the parameters the calls send. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aws_fixture.h"
#include "aws_testsrv.h"
#include "tlr_alloc.h"
#include "tlr_ec2.h"
#include "tlr_err.h"

static void test_subnets(void **state)
{
    (void)state;
    tlr_xml_doc *d = aws_fixture_xml("describe_subnets.xml");
    tlr_ec2_subnets l = { 0 };
    char *next = (char *)"x";
    assert_int_equal(tlr_ec2_parse_subnets(tlr_xml_root(d), &l, &next), TLR_OK);
    assert_null(next);
    assert_int_equal(l.n, 2);
    static const struct { const char *id, *zone, *zone_id; int64_t ips; const char *tag; } want[] = {
        { "subnet-fcf013cf2b02fa3de", "us-east-1c", "use1-az2", 4091, NULL },
        { "subnet-3766c04dc336fe3f4", "us-east-1c", "use1-az2", 251, "demo" },
    };
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(l.v[i].id, want[i].id);
        assert_string_equal(l.v[i].zone, want[i].zone);
        assert_string_equal(l.v[i].zone_id, want[i].zone_id);
        assert_int_equal(l.v[i].available_ips, want[i].ips);
        const char *t = tlr_ec2_tag_get(l.v[i].tags, l.v[i].ntags, "karpenter.sh/discovery");
        if (want[i].tag)
            assert_string_equal(t, want[i].tag);
        else
            assert_null(t);
    }
    tlr_ec2_subnets_free(&l);
    tlr_xml_free(d);
}

static void test_security_groups_and_images(void **state)
{
    (void)state;
    tlr_xml_doc *d = aws_fixture_xml("describe_security_groups.xml");
    tlr_ec2_security_groups g = { 0 };
    assert_int_equal(tlr_ec2_parse_security_groups(tlr_xml_root(d), &g, NULL), TLR_OK);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.v[0].id, "sg-581c0e066b35d0e35");
    assert_string_equal(g.v[0].name, "nodes2");
    assert_string_equal(tlr_ec2_tag_get(g.v[1].tags, g.v[1].ntags, "karpenter.sh/discovery"),
                        "demo");
    tlr_ec2_security_groups_free(&g);
    tlr_xml_free(d);

    d = aws_fixture_xml("describe_images.xml");
    tlr_ec2_images im = { 0 };
    assert_int_equal(tlr_ec2_parse_images(tlr_xml_root(d), &im, NULL), TLR_OK);
    assert_int_equal(im.n, 2);
    for (size_t i = 0; i < im.n; i++) {
        assert_string_equal(im.v[i].arch, "x86_64");
        assert_string_equal(im.v[i].state, "available");
        assert_true(im.v[i].creation_ms > 0);
    }
    assert_true(strcmp(im.v[0].id, "ami-12c6146b") == 0 || strcmp(im.v[1].id, "ami-12c6146b") == 0);
    tlr_ec2_images_free(&im);
    tlr_xml_free(d);
}

/* What the catalog needs from five different kinds of type. */
static void test_instance_types(void **state)
{
    (void)state;
    static const struct {
        const char *name, *arch, *cpu_maker, *gpu;
        int32_t vcpu, enis, ipv4, gpus, efa, neuron, neuron_cores;
        int64_t mem, nvme, mbps;
        bool spot;
    } want[] = {
        { "g4dn.xlarge", "x86_64", "Intel", "T4", 4, 3, 10, 1, 0, 0, 0, 16384, 125, 5000, true },
        { "inf2.xlarge", "x86_64", "AMD", "", 4, 4, 15, 0, 0, 1, 2, 16384, 0, 2083, true },
        { "m5.large", "x86_64", "Intel", "", 2, 3, 10, 0, 0, 0, 0, 8192, 0, 750, true },
        { "m6g.large", "arm64", "AWS", "", 2, 3, 10, 0, 0, 0, 0, 8192, 0, 750, true },
        /* 4 network cards of 15 ENIs: the default card's 15 count, not 60. */
        { "p4d.24xlarge", "x86_64", "Intel", "A100", 96, 15, 50, 8, 4, 0, 0, 1179648, 8000,
          100000, true },
    };
    tlr_xml_doc *d = aws_fixture_xml("describe_instance_types.xml");
    tlr_ec2_type_infos l = { 0 };
    assert_int_equal(tlr_ec2_parse_instance_types(tlr_xml_root(d), &l, NULL), TLR_OK);
    assert_int_equal(l.n, 5);
    for (size_t w = 0; w < 5; w++) {
        const tlr_ec2_type_info *t = NULL;
        for (size_t i = 0; i < l.n; i++)
            if (strcmp(l.v[i].name, want[w].name) == 0)
                t = &l.v[i];
        if (t == NULL)
            fail_msg("type %s not decoded", want[w].name);
        printf("%s: got vcpu %d mem %lld enis %d ipv4 %d gpus %d(%s) efa %d neuron %d/%d "
               "nvme %lld mbps %lld arch %s cpu %s\n", t->name, t->vcpu,
               (long long)t->memory_mib, t->max_enis, t->ipv4_per_eni, t->gpu_count, t->gpu_name,
               t->efa, t->neuron_devices, t->neuron_cores, (long long)t->local_nvme_gb,
               (long long)t->network_mbps, t->arch, t->cpu_manufacturer);
        assert_string_equal(t->arch, want[w].arch);
        assert_string_equal(t->cpu_manufacturer, want[w].cpu_maker);
        assert_string_equal(t->gpu_name, want[w].gpu);
        assert_int_equal(t->vcpu, want[w].vcpu);
        assert_int_equal(t->memory_mib, want[w].mem);
        assert_int_equal(t->max_enis, want[w].enis);
        assert_int_equal(t->ipv4_per_eni, want[w].ipv4);
        assert_int_equal(t->gpu_count, want[w].gpus);
        assert_int_equal(t->efa, want[w].efa);
        assert_int_equal(t->neuron_devices, want[w].neuron);
        assert_int_equal(t->neuron_cores, want[w].neuron_cores);
        assert_int_equal(t->local_nvme_gb, want[w].nvme);
        assert_int_equal(t->network_mbps, want[w].mbps);
        assert_true(t->spot == want[w].spot && t->on_demand && t->hvm);
    }
    tlr_ec2_type_infos_free(&l);
    tlr_xml_free(d);
}

static void test_offerings(void **state)
{
    (void)state;
    tlr_xml_doc *d = aws_fixture_xml("describe_type_offerings.xml");
    tlr_ec2_type_offerings l = { 0 };
    assert_int_equal(tlr_ec2_parse_type_offerings(tlr_xml_root(d), &l, NULL), TLR_OK);
    assert_int_equal(l.n, 10);
    size_t m5 = 0;
    for (size_t i = 0; i < l.n; i++) {
        m5 += strcmp(l.v[i].type, "m5.large") == 0;
        assert_string_not_equal(l.v[i].zone, "us-east-1e");   /* neither is offered there */
    }
    assert_int_equal(m5, 5);
    tlr_ec2_type_offerings_free(&l);
    tlr_xml_free(d);
}

static const char spot1[] =
    "<DescribeSpotPriceHistoryResponse><spotPriceHistorySet>"
    "<item><availabilityZone>us-east-1a</availabilityZone><instanceType>m5.large</instanceType>"
    "<spotPrice>0.0400</spotPrice><timestamp>2026-01-02T10:00:00.000Z</timestamp></item>"
    "<item><availabilityZone>us-east-1a</availabilityZone><instanceType>m5.large</instanceType>"
    "<spotPrice>0.0300</spotPrice><timestamp>2026-01-02T09:00:00.000Z</timestamp></item>"
    "</spotPriceHistorySet><nextToken>p2</nextToken></DescribeSpotPriceHistoryResponse>";
static const char spot2[] =
    "<DescribeSpotPriceHistoryResponse><spotPriceHistorySet>"
    "<item><availabilityZone>us-east-1a</availabilityZone><instanceType>m5.large</instanceType>"
    "<spotPrice>0.0450</spotPrice><timestamp>2026-01-02T11:00:00.000Z</timestamp></item>"
    "<item><availabilityZone>us-east-1b</availabilityZone><instanceType>m5.large</instanceType>"
    "<spotPrice>0.0350</spotPrice><timestamp>2026-01-02T08:00:00.000Z</timestamp></item>"
    "</spotPriceHistorySet></DescribeSpotPriceHistoryResponse>";

/* Two pages against a scripted server: one price per offering, the newest. */
static void test_spot_history_pages(void **state)
{
    (void)state;
    const testsrv_resp resp[] = { { 200, spot1 }, { 200, spot2 } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    tlr_ec2 *e = NULL;
    tlr_ec2_spot_prices l = { 0 };
    char url[64];
    testsrv_start(&s, resp, 2);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKID", "SECRET", NULL, &cr), TLR_OK);
    assert_int_equal(tlr_ec2_create(&(tlr_aws_query_opts){ .endpoint = url, .creds = cr,
                                                          .region = "us-east-1" }, &e), TLR_OK);
    assert_int_equal(tlr_ec2_describe_spot_price_history(e, 1767348000000LL, &l, NULL), TLR_OK);
    testsrv_stop(&s);
    assert_int_equal(l.n, 2);
    for (size_t i = 0; i < l.n; i++) {
        double want = strcmp(l.v[i].zone, "us-east-1a") == 0 ? 0.045 : 0.035;
        printf("%s %s: got %.4f want %.4f\n", l.v[i].type, l.v[i].zone, l.v[i].price, want);
        assert_true(l.v[i].price > want - 1e-9 && l.v[i].price < want + 1e-9);
    }
    assert_non_null(strstr(s.req[0], "Action=DescribeSpotPriceHistory"));
    assert_non_null(strstr(s.req[0], "ProductDescription.1=Linux%2FUNIX"));
    assert_non_null(strstr(s.req[0], "StartTime=2026-01-02T10%3A00%3A00Z"));
    assert_non_null(strstr(s.req[1], "NextToken=p2"));
    tlr_ec2_spot_prices_free(&l);
    tlr_ec2_free(e);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
}

/* Subnet filters and ids go out numbered from 1. */
static void test_subnet_params(void **state)
{
    (void)state;
    static const char empty[] = "<DescribeSubnetsResponse><subnetSet/></DescribeSubnetsResponse>";
    const testsrv_resp resp[] = { { 200, empty }, { 400, "<Response><Errors><Error><Code>"
                                                         "InvalidSubnetID.NotFound</Code>"
                                                         "<Message>no</Message></Error></Errors>"
                                                         "</Response>" } };
    testsrv s;
    tlr_aws_creds *cr = NULL;
    tlr_ec2 *e = NULL;
    tlr_ec2_subnets l = { 0 };
    tlr_aws_error err = { 0 };
    char url[64];
    testsrv_start(&s, resp, 2);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    assert_int_equal(tlr_aws_creds_create_static("AKID", "SECRET", NULL, &cr), TLR_OK);
    assert_int_equal(tlr_ec2_create(&(tlr_aws_query_opts){ .endpoint = url, .creds = cr }, &e),
                     TLR_OK);
    const char *v[] = { "demo" };
    const tlr_ec2_filter f[] = { { "tag:karpenter.sh/discovery", v, 1 } };
    assert_int_equal(tlr_ec2_describe_subnets(e, f, 1, NULL, 0, &l, &err), TLR_OK);
    assert_int_equal(l.n, 0);
    const char *ids[] = { "subnet-1", "subnet-2" };
    assert_int_equal(tlr_ec2_describe_subnets(e, NULL, 0, ids, 2, &l, &err), TLR_E_NOTFOUND);
    assert_string_equal(err.code, "InvalidSubnetID.NotFound");
    testsrv_stop(&s);
    assert_non_null(strstr(s.req[0], "Filter.1.Name=tag%3Akarpenter.sh%2Fdiscovery"
                                     "&Filter.1.Value.1=demo&MaxResults=1000"));
    assert_non_null(strstr(s.req[1], "SubnetId.1=subnet-1&SubnetId.2=subnet-2"));
    assert_null(strstr(s.req[1], "MaxResults"));
    tlr_ec2_free(e);
    tlr_aws_creds_free(cr);
    testsrv_free(&s);
}

static void test_wrong_answer(void **state)
{
    (void)state;
    static const char *const docs[] = {
        "<DescribeInstancesResponse/>",
        "<DescribeSubnetsResponse><subnetSet><item><zone>a</zone></item></subnetSet>"
        "</DescribeSubnetsResponse>",
    };
    for (size_t i = 0; i < 2; i++) {
        tlr_xml_doc *d = NULL;
        tlr_ec2_subnets l = { 0 };
        assert_int_equal(tlr_xml_parse(docs[i], strlen(docs[i]), NULL, &d, NULL, 0), TLR_OK);
        assert_int_equal(tlr_ec2_parse_subnets(tlr_xml_root(d), &l, NULL), TLR_E_PARSE);
        tlr_ec2_subnets_free(&l);
        tlr_xml_free(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subnets),
        cmocka_unit_test(test_security_groups_and_images),
        cmocka_unit_test(test_instance_types),
        cmocka_unit_test(test_offerings),
        cmocka_unit_test(test_spot_history_pages),
        cmocka_unit_test(test_subnet_params),
        cmocka_unit_test(test_wrong_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
