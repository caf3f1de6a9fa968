/* launch.c - NodeClaims -> EC2 instances (prov_int.h, lc_launch_claims).
 *
 * A burst of pending pods becomes hundreds of NodeClaims, most of them
 * alike: the same pool, the same ranked instance types, the same zone
 * rule.  Launching them one CreateFleet at a time would make the burst
 * wait for the sum of the calls.  So, in order:
 *
 *   1. decide, per claim: its NodeClass (resolved, usable), the AMI its
 *      cheapest option boots (architecture and variant: a GPU type gets
 *      the NVIDIA AMI), the user data that makes the instance join the
 *      cluster (tlr_bootstrap.h: the claim's allowed labels, its taints,
 *      startup taints and karpenter.sh/unregistered), the launch template
 *      for (AMI, user data), and the fleet request (fleet.h);
 *   2. group: claims whose requests are identical but for the per-claim
 *      tags share one CreateFleet with TotalTargetCapacity = the group's
 *      size (Karpenter's CreateFleet batcher does the same), tagged with
 *      what they share and a ClientToken made from the member names, so
 *      a retried call stays idempotent;
 *   3. act: every group's CreateFleet in parallel (cloud.create_fleets);
 *   4. hand out: instance k of a group goes to its claim k; the instances
 *      then get their claim's karpenter.sh/nodeclaim and Name tags
 *      (CreateTags, in parallel) and every claim its status, in parallel;
 *   5. whatever a group could not give an instance because of capacity
 *      is retried claim by claim, each offering that failed now in the
 *      ICE cache, falling back to other types, zones and on-demand;
 *      other errors fail the claim and pause its NodeClass (nodeclass.h).
 * A failed claim is deleted, so its pods are planned again.
 *
 * Max pods: the user data passes max_pods = 0, so the node computes its
 * own (the AMI's ENI-based default, the same figure the catalog's
 * eni_max_pods holds).  Karpenter instead groups a claim's instance types
 * by max pods and passes the figure in one launch template per group;
 * that matters only when the EC2NodeClass overrides maxPods or
 * podsPerCore -- and those are kubelet fields tailor's bootstrap writes
 * from the class itself -- so for a claim the node's own figure and
 * Karpenter's are the same, with one template instead of several.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "fleet.h"
#include "prov_int.h"
#include "tlr_alloc.h"
#include "tlr_bootstrap.h"
#include "tlr_err.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"
#include "tlr_sigv4.h"

#define MAX_SINGLE_ATTEMPTS 4

typedef struct slot {
    lc_launch_item *it;
    lc_class *cls;
    const Tailor__V1__Catalog *cat;
    const char *ami, *arch;
    const char *lt;
    char ud_hash[17];
    lc_fleet f;
    bool built;
    char key[65];
    size_t group;
} slot;

typedef struct group {
    size_t *members;              /* slot indexes */
    size_t n;
    tlr_ec2_fleet_req req;
    tlr_ec2_tag *tags;
    char token[64];
    tlr_ec2_fleet_result res;
    int rc;
    tlr_aws_error err;
} group;

static const Tailor__V1__InstanceType *first_type(const lc_claim *c,
                                                  const Tailor__V1__Catalog *cat)
{
    for (size_t i = 0; i < c->nc->n_instance_type_options; i++) {
        const Tailor__V1__InstanceType *it = lc_catalog_find(cat, c->nc->instance_type_options[i]->name);
        if (it)
            return it;
    }
    return NULL;
}

/* The AMI for claim c: the class's AMI for its cheapest known option
 * (architecture and variant, lc_class_ami_for); NULL when none fits. */
static const Tailor__V1__ResolvedAmi *ami_for(const lc_class *cls, const lc_claim *c,
                                              const Tailor__V1__Catalog *cat)
{
    const Tailor__V1__InstanceType *it = first_type(c, cat);
    const Tailor__V1__ResolvedAmi *ami = lc_class_ami_for(cls, it);
    /* A type of unknown architecture (a catalog without it): the first AMI. */
    if (!ami && (!it || !it->arch[0]) && cls->nc && cls->nc->n_amis > 0)
        ami = cls->nc->amis[0];
    return ami;
}

static void fail_item(lc_launch_item *it, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_item(lc_launch_item *it, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->msg, sizeof(it->msg), fmt, ap);
    va_end(ap);
    it->rc = rc;
}

static bool has_taint(Tailor__V1__Taint *const *v, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i]->key, key) == 0)
            return true;
    return false;
}

/* The user data claim c boots with on class cls.  On TLR_OK *out is new
 * (owned); else msg says why and *reason is the class condition reason. */
static int user_data_for(lc_prov *p, const lc_class *cls, const lc_claim *c, char **out,
                         const char **reason, char *msg, size_t len)
{
    const Tailor__V1__NodeClaim *nc = c->nc;
    const Tailor__V1__NodeClass *ncl = cls->nc;
    tlr_ami_family fam = tlr_ami_family_of(ncl);
    /* Karpenter v1 requires amiFamily when no alias names it; tailor takes
     * the family its own aliases default to rather than refusing. */
    if (fam == TLR_AMI_FAMILY_UNKNOWN)
        fam = TLR_AMI_FAMILY_AL2023;
    const Tailor__V1__Label **labels = tlr_calloc(nc->n_labels + 1, sizeof(*labels));
    size_t nl = 0;
    for (size_t i = 0; i < nc->n_labels; i++)
        if (tlr_bootstrap_label_allowed(nc->labels[i]->key))
            labels[nl++] = nc->labels[i];
    size_t nt = 0;
    const Tailor__V1__Taint **taints =
        tlr_calloc(nc->n_taints + nc->n_startup_taints + 2, sizeof(*taints));
    for (size_t i = 0; i < nc->n_taints; i++)
        taints[nt++] = nc->taints[i];
    for (size_t i = 0; i < nc->n_startup_taints; i++)
        taints[nt++] = nc->startup_taints[i];
    Tailor__V1__Taint unreg = TAILOR__V1__TAINT__INIT;
    unreg.key = (char *)TLR_TAINT_UNREGISTERED;
    unreg.effect = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE;
    if (!has_taint(nc->taints, nc->n_taints, TLR_TAINT_UNREGISTERED) &&
        !has_taint(nc->startup_taints, nc->n_startup_taints, TLR_TAINT_UNREGISTERED))
        taints[nt++] = &unreg;
    tlr_bootstrap_in in = { 0 };
    in.family = fam;
    in.cluster = &p->id;
    in.kubelet = ncl->kubelet;
    in.max_pods = 0;   /* the node's own ENI default: see the top of this file */
    in.labels = labels;
    in.nlabels = nl;
    in.taints = taints;
    in.ntaints = nt;
    in.user_data = ncl->user_data;
    in.raid0 = ncl->instance_store_policy ==
               TAILOR__V1__INSTANCE_STORE_POLICY__INSTANCE_STORE_POLICY_RAID0;
    char err[400] = "";
    int rc = tlr_bootstrap_user_data(&in, out, err, sizeof(err));
    free(labels);
    free(taints);
    if (rc) {
        *reason = rc == TLR_E_UNIMPLEMENTED ? "AMIFamilyUnsupported" : "UserDataInvalid";
        snprintf(msg, len, "user data for EC2NodeClass %.100s (%.20s): %.300s", ncl->name,
                 tlr_ami_family_name(fam)[0] ? tlr_ami_family_name(fam) : "unknown family",
                 err[0] ? err : tlr_strerror(rc));
    }
    return rc;
}

/* Step 1 for one claim.  false: the item failed (rc, msg set). */
static bool prepare(lc_prov *p, slot *s)
{
    lc_claim *c = s->it->c;
    const char *why = NULL;
    s->cls = lc_classes_get(p->classes, c->nc->node_class);
    if (!lc_class_usable(s->cls, lc_prov_now(p), &why)) {
        fail_item(s->it, TLR_E_UNAVAILABLE, "EC2NodeClass %.100s: %.300s", c->nc->node_class,
                  why ? why : "not usable");
        return false;
    }
    s->cat = lc_class_catalog(s->cls, p->catalog);
    const Tailor__V1__ResolvedAmi *ami = ami_for(s->cls, c, s->cat);
    if (!ami) {
        fail_item(s->it, TLR_E_INVAL, "EC2NodeClass %.100s has no AMI for this claim's types",
                  c->nc->node_class);
        return false;
    }
    s->ami = ami->id;
    s->arch = ami->arch;
    char *ud = NULL, msg[512];
    const char *reason = NULL;
    int rc = user_data_for(p, s->cls, c, &ud, &reason, msg, sizeof(msg));
    if (rc) {
        /* The class is broken, not the claim: pause it so its pools are
         * out of the next SolveRequests, and say why in its status. */
        fail_item(s->it, rc, "%s", msg);
        lc_classes_launch_failed(p->classes, c->nc->node_class, reason, msg);
        return false;
    }
    char hex[65];
    tlr_sigv4_sha256_hex(ud, strlen(ud), hex);
    snprintf(s->ud_hash, sizeof(s->ud_hash), "%.16s", hex);
    s->lt = lc_class_lt_get(s->cls, s->ami, s->ud_hash);
    if (!s->lt) {
        /* The class as launched: its userData replaced by the bootstrap
         * user data, which the template carries and its name hashes. */
        Tailor__V1__NodeClass launched = *s->cls->nc;
        launched.user_data = ud;
        char *lt = NULL;
        tlr_aws_error err = { 0 };
        int64_t t0 = lc_prov_mono(p);
        rc = p->o.cloud.launch_template(p->o.cloud.arg, &launched, s->ami, &lt, &err);
        lc_prov_observe(p, "LaunchTemplate", rc, t0);
        if (rc) {
            fail_item(s->it, rc, "launch template for %.64s: %.64s %.300s", c->nc->node_class,
                      err.code, err.message);
            lc_classes_launch_failed(p->classes, c->nc->node_class, err.code,
                                     s->it->msg);
            free(ud);
            return false;
        }
        lc_class_lt_put(s->cls, s->ami, s->ud_hash, lt);
        free(lt);
        s->lt = lc_class_lt_get(s->cls, s->ami, s->ud_hash);
    }
    free(ud);
    return true;
}

static bool build(lc_prov *p, slot *s)
{
    lc_fleet_in in = { s->it->c->nc, s->cat, s->cls->nc, p->ice, p->cluster, s->lt, s->arch };
    int rc = lc_fleet_build(&in, &s->f);
    if (rc) {
        fail_item(s->it, rc, "no available offering left among %zu instance types",
                  s->it->c->nc->n_instance_type_options);
        return false;
    }
    s->built = true;
    return true;
}

/* ---- recording an outcome -------------------------------------------------- */

static void add_failed(Tailor__V1__LaunchResult *r, const tlr_ec2_fleet_error *e,
                       Tailor__V1__CapacityType ct, int64_t until)
{
    if (!r)
        return;
    Tailor__V1__OfferingUnavailable *u = tlr_malloc(sizeof(*u));
    tailor__v1__offering_unavailable__init(u);
    u->instance_type = tlr_strdup(e->instance_type);
    u->zone = tlr_strdup(e->zone);
    u->capacity_type = ct;
    u->reason = tlr_strdup(e->code);
    u->until_unix_ms = until;
    r->failed_offerings = tlr_realloc(r->failed_offerings,
                                      (r->n_failed_offerings + 1) * sizeof(u));
    r->failed_offerings[r->n_failed_offerings++] = u;
}

/* Mark the capacity errors of res in the ICE cache; true when every error
 * was a capacity error (so another offering may still work). */
static bool mark_ice(lc_prov *p, const lc_fleet *f, const tlr_ec2_fleet_result *res,
                     Tailor__V1__LaunchResult *r, char *msg, size_t len)
{
    bool capacity = res->nerrors > 0;
    int64_t ttl = p->o.ice_ttl_ms > 0 ? p->o.ice_ttl_ms : LC_ICE_TTL_MS;
    for (size_t i = 0; i < res->nerrors; i++) {
        const tlr_ec2_fleet_error *e = &res->errors[i];
        lc_prov_count_launch_failure(p, e->zone, f->capacity_type, e->code, e->message);
        if (e->tlr_code != TLR_E_CAPACITY) {
            capacity = false;
            snprintf(msg, len, "CreateFleet: %.64s %.300s", e->code, e->message);
            continue;
        }
        if (e->instance_type[0]) {
            lc_ice_mark(p->ice, e->instance_type, e->zone, f->capacity_type, e->code);
            add_failed(r, e, f->capacity_type, lc_prov_now(p) + ttl);
        } else {
            /* An error without its override: every override failed. */
            for (size_t j = 0; j < f->nov; j++)
                lc_ice_mark(p->ice, f->ov[j].instance_type, f->ov[j].zone, f->capacity_type,
                            e->code);
        }
    }
    if (res->nerrors == 0)
        snprintf(msg, len, "CreateFleet returned neither an instance nor an error");
    return capacity;
}

static Tailor__V1__ResourceList *rl_copy(const Tailor__V1__ResourceList *r)
{
    if (!r)
        return NULL;
    size_t n = protobuf_c_message_get_packed_size(&r->base);
    uint8_t *b = tlr_malloc(n ? n : 1);
    protobuf_c_message_pack(&r->base, b);
    Tailor__V1__ResourceList *c = tailor__v1__resource_list__unpack(NULL, n, b);
    free(b);
    if (!c)
        abort();   /* we packed it: a failure is a bug */
    return c;
}

/* Claim c got instance fi from fleet f: fill its status, capacity and
 * allocatable (the launched type's entry in the class's catalog cat) and
 * its instance labels (written after the launch pass). */
static void got_instance(lc_prov *p, lc_claim *c, const lc_fleet *f,
                         const tlr_ec2_fleet_instance *fi, const char *ami,
                         const Tailor__V1__Catalog *cat)
{
    const char *zone = fi->zone[0] ? fi->zone : NULL;
    /* moto and EC2 may leave the zone out: take the override's. */
    for (size_t i = 0; !zone && i < f->nov; i++)
        if (strcmp(f->ov[i].instance_type, fi->instance_type) == 0)
            zone = f->ov[i].zone;
    Tailor__V1__NodeClaimStatus *st = lc_prov_status_of(c);
    char pid[256];
    tlr_provider_id_format(pid, sizeof(pid), zone ? zone : "", fi->id);
    st->instance_id = tlr_strdup(fi->id);
    st->provider_id = tlr_strdup(pid);
    st->instance_type = tlr_strdup(fi->instance_type);
    st->zone = tlr_strdup(zone ? zone : "");
    st->capacity_type = f->capacity_type;
    st->price_per_hour = lc_fleet_price(f, fi->instance_type, zone);
    st->image_id = tlr_strdup(ami);
    const Tailor__V1__InstanceType *it = cat ? lc_catalog_find(cat, fi->instance_type) : NULL;
    if (it) {
        st->capacity = rl_copy(it->capacity);
        st->allocatable = rl_copy(it->allocatable);
    }
    lc_claim_add_instance_labels(c->nc, it, cat && cat->region[0] ? cat->region : NULL);
    c->launched_ms = lc_prov_now(p);
}

static void record_failure(lc_prov *p, lc_launch_item *it)
{
    lc_claim *c = it->c;
    TLR_WARN(p->o.log, "launch failed", TLR_S("nodeclaim", c->nc->name), TLR_S("why", it->msg),
             TLR_ERR(it->rc));
    lc_prov_event(p, "NodeClaim", "", c->nc->name, c->nc->uid, "Warning",
                  it->rc == TLR_E_CAPACITY ? "InsufficientCapacity" : "LaunchFailed", it->msg);
    lc_prov_set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_FAILED);
    p->o.kube.claim_delete(p->o.kube.arg, c->nc->name);
    lc_prov_count_terminated(p, c->nc->nodepool, c->nc);
    lc_claims_remove(p->claims, c->nc->name);
    it->c = NULL;
}

/* ---- one claim, with ICE fallback ------------------------------------------- */

/* Returns the CreateFleet calls made. */
static size_t launch_single(lc_prov *p, slot *s)
{
    lc_launch_item *it = s->it;
    size_t calls = 0;
    for (int attempt = 0; attempt < MAX_SINGLE_ATTEMPTS; attempt++) {
        if (!s->built && !build(p, s))
            return calls;
        calls++;
        p->fleets_issued_mono = lc_prov_mono(p);
        tlr_ec2_fleet_result res = { 0 };
        tlr_aws_error err = { 0 };
        int64_t t0 = lc_prov_mono(p);
        int rc = p->o.cloud.create_fleet(p->o.cloud.arg, &s->f.req, &res, &err);
        lc_prov_fleet_batch(p, 1, 0);        /* a retry: one claim, no window */
        lc_prov_observe(p, "Create", rc, t0);
        if (p->m_fleets)
            tlr_metrics_counter_inc(p->m_fleets, NULL);
        if (rc) {
            fail_item(it, rc, "CreateFleet: %.64s %.300s", err.code, err.message);
            if (rc != TLR_E_CAPACITY && rc != TLR_E_THROTTLED)
                lc_classes_launch_failed(p->classes, it->c->nc->node_class, err.code, it->msg);
            return calls;
        }
        if (res.ninstances > 0) {
            /* EC2 tried cheaper overrides first: what failed is unavailable. */
            char ignored[64];
            if (res.nerrors > 0)
                mark_ice(p, &s->f, &res, it->r, ignored, sizeof(ignored));
            got_instance(p, it->c, &s->f, &res.instances[0], s->ami, s->cat);
            tlr_ec2_fleet_result_free(&res);
            it->rc = TLR_OK;
            return calls;
        }
        bool capacity = mark_ice(p, &s->f, &res, it->r, it->msg, sizeof(it->msg));
        tlr_ec2_fleet_result_free(&res);
        lc_fleet_clear(&s->f);
        s->built = false;
        if (!capacity) {
            it->rc = TLR_E_REMOTE;
            lc_classes_launch_failed(p->classes, it->c->nc->node_class, "CreateFleet", it->msg);
            return calls;
        }
        lc_prov_publish(p, TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_OFFERING_UNAVAILABLE,
                        it->c, 0, "insufficient capacity");
    }
    fail_item(it, TLR_E_CAPACITY, "insufficient capacity in every offering tried");
    return calls;
}

/* ---- the batch ---------------------------------------------------------------- */

static void group_token(group *g, const slot *slots, char *out)
{
    char hex[65];
    size_t total = 0;
    for (size_t k = 0; k < g->n; k++)
        total += strlen(slots[g->members[k]].it->c->nc->name) + 1;
    char *names = tlr_malloc(total + 1), *w = names;
    for (size_t k = 0; k < g->n; k++)
        w += sprintf(w, "%s,", slots[g->members[k]].it->c->nc->name);
    tlr_sigv4_sha256_hex(names, (size_t)(w - names), hex);
    free(names);
    /* ClientToken: at most 64 ASCII characters. */
    snprintf(out, 64, "tailor-%.40s", hex);
}

size_t lc_launch_claims(lc_prov *p, lc_launch_item *items, size_t n)
{
    if (n == 0)
        return 0;
    slot *slots = tlr_calloc(n, sizeof(*slots));
    group *groups = tlr_calloc(n, sizeof(*groups));
    size_t ngroups = 0;
    int64_t t0 = lc_prov_mono(p);

    /* 1 + 2: decide and group. */
    for (size_t i = 0; i < n; i++) {
        slot *s = &slots[i];
        s->it = &items[i];
        s->it->rc = TLR_OK;
        s->it->msg[0] = '\0';
        if (!prepare(p, s) || !build(p, s))
            continue;
        lc_fleet_key(&s->f, s->key);
        size_t g = ngroups;
        if (!p->o.no_fleet_batching)
            for (g = 0; g < ngroups; g++)
                if (strcmp(slots[groups[g].members[0]].key, s->key) == 0)
                    break;
        if (g == ngroups) {
            groups[g].members = tlr_calloc(n, sizeof(size_t));
            ngroups++;
        }
        groups[g].members[groups[g].n++] = i;
        s->group = g;
    }
    for (size_t g = 0; g < ngroups; g++) {
        group *gr = &groups[g];
        const slot *s0 = &slots[gr->members[0]];
        gr->req = s0->f.req;
        if (gr->n > 1) {
            gr->tags = tlr_calloc(s0->f.ntags + 1, sizeof(*gr->tags));
            gr->req.tags = gr->tags;
            gr->req.ntags = lc_fleet_shared_tags(&s0->f, gr->tags);
            gr->req.target_capacity = (int)gr->n;
            group_token(gr, slots, gr->token);
            gr->req.client_token = gr->token;
        }
    }

    /* 3: every group's CreateFleet, in parallel when the cloud can. */
    const tlr_ec2_fleet_req **reqs = tlr_calloc(ngroups + 1, sizeof(*reqs));
    tlr_ec2_fleet_result *outs = tlr_calloc(ngroups + 1, sizeof(*outs));
    int *rcs = tlr_calloc(ngroups + 1, sizeof(*rcs));
    tlr_aws_error *errs = tlr_calloc(ngroups + 1, sizeof(*errs));
    for (size_t g = 0; g < ngroups; g++)
        reqs[g] = &groups[g].req;
    int64_t tf = lc_prov_mono(p), issued = 0;
    if (ngroups > 0 && p->o.cloud.create_fleets) {
        p->o.cloud.create_fleets(p->o.cloud.arg, ngroups, reqs, outs, rcs, errs, &issued);
    } else {
        for (size_t g = 0; g < ngroups; g++) {
            issued = lc_prov_mono(p);
            rcs[g] = p->o.cloud.create_fleet(p->o.cloud.arg, reqs[g], &outs[g], &errs[g]);
        }
    }
    /* The clocks agree: tlr_mono_ms() is what the service's clock reads. */
    if (ngroups > 0)
        p->fleets_issued_mono = issued;
    for (size_t g = 0; g < ngroups; g++) {
        lc_prov_fleet_batch(p, groups[g].n, tf - t0);
        lc_prov_observe(p, "Create", rcs[g], tf);
        if (p->m_fleets)
            tlr_metrics_counter_inc(p->m_fleets, NULL);
    }

    /* 4: hand the instances out; note who needs a second try. */
    size_t *retry = tlr_calloc(n + 1, sizeof(size_t));
    size_t nretry = 0;
    for (size_t g = 0; g < ngroups; g++) {
        group *gr = &groups[g];
        size_t given = 0;
        if (rcs[g] == TLR_OK && outs[g].ninstances > 0 && outs[g].nerrors > 0) {
            /* Partly fulfilled: the overrides EC2 tried and failed are
             * unavailable, for the retries below and the next Solve. */
            char ignored[64];
            mark_ice(p, &slots[gr->members[0]].f, &outs[g], slots[gr->members[0]].it->r, ignored,
                     sizeof(ignored));
        }
        if (rcs[g] == TLR_OK)
            for (; given < gr->n && given < outs[g].ninstances; given++) {
                slot *s = &slots[gr->members[given]];
                got_instance(p, s->it->c, &s->f, &outs[g].instances[given], s->ami, s->cat);
                s->it->batched = gr->n > 1;
            }
        if (given == gr->n)
            continue;
        char msg[512] = "";
        bool capacity;
        if (rcs[g] != TLR_OK) {
            snprintf(msg, sizeof(msg), "CreateFleet: %.64s %.300s", errs[g].code,
                     errs[g].message);
            capacity = rcs[g] == TLR_E_CAPACITY || rcs[g] == TLR_E_THROTTLED;
        } else {
            slot *s0 = &slots[gr->members[given]];
            capacity = mark_ice(p, &s0->f, &outs[g], s0->it->r, msg, sizeof(msg));
            if (capacity)
                lc_prov_publish(p,
                                TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_OFFERING_UNAVAILABLE,
                                s0->it->c, 0, "insufficient capacity");
        }
        for (size_t k = given; k < gr->n; k++) {
            slot *s = &slots[gr->members[k]];
            if (capacity) {
                lc_fleet_clear(&s->f);
                s->built = false;
                retry[nretry++] = gr->members[k];
            } else {
                fail_item(s->it, rcs[g] ? rcs[g] : TLR_E_REMOTE, "%s", msg);
            }
        }
        if (!capacity)
            lc_classes_launch_failed(p->classes, slots[gr->members[0]].it->c->nc->node_class,
                                     errs[g].code[0] ? errs[g].code : "CreateFleet", msg);
    }
    /* 5: capacity shortfalls, claim by claim, with the ICE cache. */
    size_t calls = ngroups;
    for (size_t k = 0; k < nretry; k++)
        calls += launch_single(p, &slots[retry[k]]);
    int64_t launched_at = lc_prov_mono(p);
    p->fleets_done_mono = launched_at;

    /* Record: tags for batched instances, status for every launched claim
     * (in parallel when the clients can), then events and phases. */
    size_t nok = 0, nbatched = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i].rc == TLR_OK && items[i].c) {
            nok++;
            nbatched += items[i].batched;
        }
    if (nbatched > 0 && p->o.cloud.tag_instances) {
        const char **ids = tlr_calloc(nbatched, sizeof(*ids));
        tlr_ec2_tag(*tags)[2] = tlr_calloc(nbatched, sizeof(*tags));
        const tlr_ec2_tag **tagp = tlr_calloc(nbatched, sizeof(*tagp));
        size_t *ntags = tlr_calloc(nbatched, sizeof(*ntags));
        char **names = tlr_calloc(nbatched, sizeof(*names));
        int *trc = tlr_calloc(nbatched, sizeof(*trc));
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (items[i].rc != TLR_OK || !items[i].c || !items[i].batched)
                continue;
            const Tailor__V1__NodeClaim *nc = items[i].c->nc;
            size_t len = strlen(nc->nodepool) + strlen(nc->name) + 2;
            names[k] = tlr_malloc(len);
            snprintf(names[k], len, "%s/%s", nc->nodepool, nc->name);
            ids[k] = nc->status->instance_id;
            tags[k][0] = (tlr_ec2_tag){ (char *)TLR_TAG_NODECLAIM, nc->name };
            tags[k][1] = (tlr_ec2_tag){ (char *)"Name", names[k] };
            tagp[k] = tags[k];
            ntags[k] = 2;
            k++;
        }
        p->o.cloud.tag_instances(p->o.cloud.arg, k, ids, tagp, ntags, trc);
        for (size_t j = 0; j < k; j++) {
            if (trc[j])
                TLR_WARN(p->o.log, "instance not tagged with its nodeclaim", TLR_S("instance", ids[j]),
                         TLR_ERR(trc[j]));
            free(names[j]);
        }
        free(ids);
        free(tags);
        free(tagp);
        free(ntags);
        free(names);
        free(trc);
    }
    if (nok > 0) {
        const char **names = tlr_calloc(nok, sizeof(*names));
        char **patches = tlr_calloc(nok, sizeof(*patches));
        int *src = tlr_calloc(nok, sizeof(*src));
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (items[i].rc != TLR_OK || !items[i].c)
                continue;
            lc_prov_set_phase(p, items[i].c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_LAUNCHED);
            names[k] = items[i].c->nc->name;
            patches[k++] = lc_claim_status_json(items[i].c);
        }
        if (p->o.kube.claims_status_n) {
            p->o.kube.claims_status_n(p->o.kube.arg, k, names, (const char *const *)patches, src);
        } else {
            for (size_t j = 0; j < k; j++)
                src[j] = p->o.kube.claim_status(p->o.kube.arg, names[j], patches[j]);
        }
        for (size_t j = 0; j < k; j++) {
            if (src[j])
                TLR_WARN(p->o.log, "nodeclaim status update failed", TLR_S("nodeclaim", names[j]),
                         TLR_ERR(src[j]));
            free(patches[j]);
        }
        /* The instance's labels on the claim (kubectl get nodeclaims shows
         * type, zone, capacity type from them), in parallel as the status. */
        k = 0;
        for (size_t i = 0; i < n && p->o.kube.claim_patch; i++) {
            if (items[i].rc != TLR_OK || !items[i].c)
                continue;
            names[k] = items[i].c->nc->name;
            patches[k++] = lc_claim_labels_patch(items[i].c->nc);
        }
        if (p->o.kube.claims_patch_n) {
            p->o.kube.claims_patch_n(p->o.kube.arg, k, names, (const char *const *)patches, src);
        } else {
            for (size_t j = 0; j < k; j++)
                src[j] = p->o.kube.claim_patch(p->o.kube.arg, names[j], patches[j]);
        }
        for (size_t j = 0; j < k; j++) {
            if (src[j])
                TLR_WARN(p->o.log, "nodeclaim labels not written", TLR_S("nodeclaim", names[j]),
                         TLR_ERR(src[j]));
            free(patches[j]);
        }
        free(names);
        free(patches);
        free(src);
    }
    for (size_t i = 0; i < n; i++) {
        lc_launch_item *it = &items[i];
        if (!it->c)
            continue;
        if (it->rc != TLR_OK) {
            record_failure(p, it);
            continue;
        }
        const Tailor__V1__NodeClaimStatus *st = it->c->nc->status;
        char m[256];
        snprintf(m, sizeof(m), "Launched %s (%s) in %s", st->instance_id, st->instance_type,
                 st->zone);
        lc_prov_event(p, "NodeClaim", "", it->c->nc->name, it->c->nc->uid, "Normal", "Launched",
                      m);
        TLR_INFO(p->o.log, "launched nodeclaim", TLR_S("nodeclaim", it->c->nc->name),
                 TLR_S("instance", st->instance_id), TLR_S("type", st->instance_type),
                 TLR_S("zone", st->zone), TLR_B("batched", it->batched));
        lc_classes_launch_ok(p->classes, it->c->nc->node_class);
    }
    TLR_DEBUG(p->o.log, "launch pass", TLR_I("claims", (int64_t)n),
              TLR_I("fleets", (int64_t)ngroups), TLR_I("retried", (int64_t)nretry),
              TLR_I("launch_ms", launched_at - t0));

    for (size_t g = 0; g < ngroups; g++) {
        tlr_ec2_fleet_result_free(&outs[g]);
        free(groups[g].members);
        free(groups[g].tags);
    }
    for (size_t i = 0; i < n; i++)
        lc_fleet_clear(&slots[i].f);
    free(retry);
    free(reqs);
    free(outs);
    free(rcs);
    free(errs);
    free(groups);
    free(slots);
    return calls;
}
