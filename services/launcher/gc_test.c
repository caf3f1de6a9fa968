/* gc_test.c - which leaked instances are terminated and which orphaned
 * NodeClaims deleted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gc.h"

static void join(char **v, size_t n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? " " : "", v[i]);
}

static void test_decide(void **state)
{
    (void)state;
    const int64_t now = 1000000;
    tlr_ec2_tag t_known = { "karpenter.sh/nodeclaim", "known" };
    tlr_ec2_tag t_gone = { "karpenter.sh/nodeclaim", "deleted-claim" };
    tlr_ec2_tag t_young = { "karpenter.sh/nodeclaim", "in-flight" };
    tlr_ec2_tag t_unrecorded = { "karpenter.sh/nodeclaim", "unlaunched" };
    /* A batched launch: tagged with its pool, its claim tag not yet added. */
    tlr_ec2_tag t_pool = { "karpenter.sh/nodepool", "np" };
    tlr_ec2_instance in[] = {
        { .id = "i-known", .state = "running", .launch_ms = now - 60000, .tags = &t_known, .ntags = 1 },
        { .id = "i-leak", .state = "running", .launch_ms = now - 31000, .tags = &t_gone, .ntags = 1 },
        { .id = "i-young", .state = "pending", .launch_ms = now - 5000, .tags = &t_young, .ntags = 1 },
        { .id = "i-untagged", .state = "running", .launch_ms = now - 99000 },  /* another node group */
        { .id = "i-dead", .state = "terminated", .launch_ms = now - 99000, .tags = &t_gone, .ntags = 1 },
        { .id = "i-by-pid", .state = "running", .launch_ms = now - 99000, .tags = &t_pool, .ntags = 1 },
        { .id = "i-pool-leak", .state = "running", .launch_ms = now - 99000, .tags = &t_pool, .ntags = 1 },
        { .id = "i-in-registry", .state = "running", .launch_ms = now - 99000, .tags = &t_pool, .ntags = 1 },
        /* a second instance tagged for a claim that records another one */
        { .id = "i-double", .state = "running", .launch_ms = now - 60000, .tags = &t_known, .ntags = 1 },
        /* tagged for a claim that records no instance yet: kept */
        { .id = "i-unrecorded", .state = "running", .launch_ms = now - 60000, .tags = &t_unrecorded,
          .ntags = 1 },
    };
    tlr_ec2_instances insts = { in, sizeof(in) / sizeof(in[0]) };
    tlr_kclaim cl[] = {
        { .name = "known", .nodepool = "np", .instance_id = "i-known", .creation_ms = now - 60000 },
        /* instance gone */
        { .name = "orphan", .nodepool = "np", .instance_id = "i-vanished", .creation_ms = now - 60000 },
        /* within grace */
        { .name = "fresh", .nodepool = "np", .instance_id = "i-vanished2", .creation_ms = now - 1000 },
        /* liveness' job */
        { .name = "unlaunched", .nodepool = "np", .instance_id = "", .creation_ms = now - 90000 },
        /* instance terminated */
        { .name = "terminated-inst", .nodepool = "np", .instance_id = "i-dead", .creation_ms = now - 90000 },
        { .name = "deleting", .nodepool = "np", .instance_id = "i-vanished3", .creation_ms = now - 90000,
          .deletion_ms = now - 1000 },
        /* owns i-by-pid through its providerID only */
        { .name = "batched", .nodepool = "np", .instance_id = "i-by-pid", .creation_ms = now - 90000 },
    };
    tlr_kclaims claims = { cl, sizeof(cl) / sizeof(cl[0]) };
    const char *known[] = { "i-in-registry" };
    lc_gc_plan p;
    lc_gc_decide(&insts, &claims, known, 1, now, &p);
    char got[512];
    join(p.terminate, p.nterminate, got, sizeof(got));
    if (strcmp(got, "i-leak i-pool-leak i-double") != 0)
        fail_msg("terminate: got [%s] want [i-leak i-pool-leak i-double]", got);
    join(p.delete_claims, p.ndelete, got, sizeof(got));
    if (strcmp(got, "orphan terminated-inst") != 0)
        fail_msg("delete: got [%s] want [orphan terminated-inst]", got);
    lc_gc_plan_clear(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
