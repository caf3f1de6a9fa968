/* hash.c - the drift hashes (hash.h). */
#include "hash.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"

static void digest(const tlr_buf *b, char *buf, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(tlr_buf_str(b), b->len, md, &mdlen, EVP_sha256(), NULL);
    size_t at = 0;
    for (unsigned i = 0; i < 8 && at + 2 < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%02x", md[i]);
}

static void labels(tlr_buf *b, const char *what, Tailor__V1__Label *const *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tlr_buf_printf(b, "%s:%s=%s\n", what, l[i]->key, l[i]->value);
}

static void taints(tlr_buf *b, const char *what, Tailor__V1__Taint *const *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tlr_buf_printf(b, "%s:%s=%s:%d\n", what, t[i]->key, t[i]->value, t[i]->effect);
}

static void res(tlr_buf *b, const char *what, const Tailor__V1__ResourceList *r)
{
    if (r)
        tlr_buf_printf(b, "%s:%lld/%lld/%lld/%lld\n", what, (long long)r->cpu_millis,
                       (long long)r->memory_bytes, (long long)r->pods,
                       (long long)r->ephemeral_storage_bytes);
}

void ds_hash_nodepool(const Tailor__V1__NodePool *p, char *buf, size_t len)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 20);
    labels(&b, "label", p->labels, p->n_labels);
    labels(&b, "annotation", p->annotations, p->n_annotations);
    taints(&b, "taint", p->taints, p->n_taints);
    taints(&b, "startup", p->startup_taints, p->n_startup_taints);
    if (p->node_class_ref)
        tlr_buf_printf(&b, "class:%s/%s/%s\n", p->node_class_ref->group, p->node_class_ref->kind,
                       p->node_class_ref->name);
    tlr_buf_printf(&b, "expire:%lld:%d\ntgp:%lld\n", (long long)p->expire_after_ms, p->expire_never,
                   (long long)p->termination_grace_period_ms);
    digest(&b, buf, len);
    tlr_buf_free(&b);
}

void ds_hash_nodeclass(const Tailor__V1__NodeClass *c, char *buf, size_t len)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 20);
    /* the resolved profile is status: only a spec'd one counts */
    tlr_buf_printf(&b, "role:%s\nprofile:%s\nud:%s\n", c->role, c->role[0] ? "" : c->instance_profile,
                   c->user_data);
    for (size_t i = 0; i < c->n_block_device_mappings; i++) {
        const Tailor__V1__BlockDeviceMapping *m = c->block_device_mappings[i];
        tlr_buf_printf(&b, "bdm:%s:%d", m->device_name, m->root_volume);
        if (m->ebs)
            tlr_buf_printf(&b, ":%lld:%s:%d:%d:%d%d:%s:%s:%d%d", (long long)m->ebs->volume_size_bytes,
                           m->ebs->volume_type, m->ebs->iops, m->ebs->throughput_mibps,
                           m->ebs->has_encrypted, m->ebs->encrypted, m->ebs->kms_key_id,
                           m->ebs->snapshot_id, m->ebs->has_delete_on_termination,
                           m->ebs->delete_on_termination);
        tlr_buf_adds(&b, "\n");
    }
    if (c->metadata_options)
        tlr_buf_printf(&b, "md:%s:%s:%d:%s\n", c->metadata_options->http_endpoint,
                       c->metadata_options->http_protocol_ipv6,
                       c->metadata_options->http_put_response_hop_limit,
                       c->metadata_options->http_tokens);
    labels(&b, "tag", c->tags, c->n_tags);
    const Tailor__V1__KubeletConfig *k = c->kubelet;
    if (k) {
        tlr_buf_printf(&b, "kubelet:%d:%d:%d:%d:%d%d\n", k->max_pods, k->pods_per_core,
                       k->image_gc_high_threshold_percent, k->image_gc_low_threshold_percent,
                       k->has_cpu_cfs_quota, k->cpu_cfs_quota);
        res(&b, "sysres", k->system_reserved);
        res(&b, "kuberes", k->kube_reserved);
        labels(&b, "evhard", k->eviction_hard, k->n_eviction_hard);
        labels(&b, "evsoft", k->eviction_soft, k->n_eviction_soft);
        for (size_t i = 0; i < k->n_eviction_soft_grace_period; i++)
            tlr_buf_printf(&b, "evgrace:%s=%lld\n", k->eviction_soft_grace_period[i]->signal,
                           (long long)k->eviction_soft_grace_period[i]->duration_ms);
        for (size_t i = 0; i < k->n_cluster_dns; i++)
            tlr_buf_printf(&b, "dns:%s\n", k->cluster_dns[i]);
    }
    tlr_buf_printf(&b, "store:%d\nmon:%d\npub:%d:%d\n", c->instance_store_policy, c->detailed_monitoring,
                   c->has_associate_public_ip_address, c->associate_public_ip_address);
    digest(&b, buf, len);
    tlr_buf_free(&b);
}

static void push(ds_stamps *s, ds_kind kind, const char *name, const char *key, const char *value)
{
    TLR_GROW(s->v, s->cap, s->n + 1);
    ds_stamp *x = &s->v[s->n++];
    x->kind = kind;
    snprintf(x->name, sizeof(x->name), "%s", name);
    x->key = key;
    snprintf(x->value, sizeof(x->value), "%s", value);
}

void ds_hash_plan(const ds_view *v, ds_stamps *out)
{
    memset(out, 0, sizeof(*out));
    const Tailor__V1__ClusterState *cs = v->cs;
    if (!cs)
        return;
    for (size_t i = 0; i < cs->n_nodepools; i++) {
        const Tailor__V1__NodePool *p = cs->nodepools[i];
        char h[32];
        ds_hash_nodepool(p, h, sizeof(h));
        bool ours = !strcmp(p->hash_version, DS_HASH_VERSION);
        if (!ours)
            push(out, DS_KIND_NODEPOOL, p->name, DS_POOL_HASH_VERSION, DS_HASH_VERSION);
        if (strcmp(p->hash, h))
            push(out, DS_KIND_NODEPOOL, p->name, DS_POOL_HASH, h);
        for (size_t k = 0; k < cs->n_nodeclaims; k++) {
            const Tailor__V1__NodeClaim *c = cs->nodeclaims[k];
            if (strcmp(c->nodepool, p->name) || c->deletion_unix_ms)
                continue;
            if (!ours ? strcmp(c->nodepool_hash, h) : !c->nodepool_hash[0])
                push(out, DS_KIND_NODECLAIM, c->name, DS_POOL_HASH, h);
        }
    }
    for (size_t i = 0; i < cs->n_node_classes; i++) {
        const Tailor__V1__NodeClass *nc = cs->node_classes[i];
        char h[32];
        ds_hash_nodeclass(nc, h, sizeof(h));
        bool ours = !strcmp(nc->hash_version, DS_HASH_VERSION);
        if (!ours)
            push(out, DS_KIND_NODECLASS, nc->name, DS_CLASS_HASH_VERSION, DS_HASH_VERSION);
        if (strcmp(nc->hash, h))
            push(out, DS_KIND_NODECLASS, nc->name, DS_CLASS_HASH, h);
        for (size_t k = 0; k < cs->n_nodeclaims; k++) {
            const Tailor__V1__NodeClaim *c = cs->nodeclaims[k];
            if (strcmp(c->node_class, nc->name) || c->deletion_unix_ms)
                continue;
            if (!ours ? strcmp(c->node_class_hash, h) : !c->node_class_hash[0])
                push(out, DS_KIND_NODECLAIM, c->name, DS_CLASS_HASH, h);
        }
    }
}

int ds_hash_apply(const ds_stamps *s, const ds_kube_ops *kube)
{
    int ok = 0;
    for (size_t i = 0; i < s->n; i++)
        if (kube->annotate(kube->arg, s->v[i].kind, s->v[i].name, s->v[i].key, s->v[i].value) == TLR_OK)
            ok++;
    return ok;
}
