/* nodeshape.c - tlr_nodeshape.h: what a node of a type holds under one
 * EC2NodeClass.
 *
 * Design: each AMI family is a row of a table (does it size pods by the
 * ENIs, honour podsPerCore, reserve memory by the ENI figure; which device
 * holds pods' storage and how big it is by default), so the formulas below
 * read the row instead of branching on names.  The arithmetic copies
 * Karpenter's rounding on purpose (float products truncated for the CPU
 * tiers, ceil of float for the VM overhead and percentages): that is what
 * makes the default shape reproduce the catalog file to the byte for all
 * of its types (nodeshape_test.c checks every one).
 *
 * Settings from outside that do not parse (an evictionHard value that is
 * neither a quantity nor a percentage) keep the default: Karpenter's
 * validation refuses such a NodeClass, so the launcher never sees one
 * ready, and tailorctl should not crash on it.
 */
#include "tlr_nodeshape.h"
#include "catalog_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_catalog.h"
#include "tlr_err.h"
#include "tlr_quantity.h"

#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)
#define VM_OVERHEAD 0.075   /* Karpenter's --vm-memory-overhead-percent default */

typedef struct family {
    const char *name;
    bool eni_pods;           /* pods default to the ENI figure (else 110) */
    bool pods_per_core;      /* podsPerCore is honoured */
    bool eni_memory;         /* kube-reserved memory counts ENI pods, not maxPods */
    const char *eph_device;  /* the device pods' storage is on; NULL = unknown */
    int64_t eph_default;     /* its default size */
    /* The volumes a launch gets when the class names none (Karpenter's
     * DefaultBlockDeviceMappings), all gp3 and encrypted. */
    tlr_default_bdm bdms[2];
    size_t nbdms;
} family;

static const family families[] = {
    { "AL2023", true, true, true, "/dev/xvda", 20 * GIB, { { "/dev/xvda", 20 * GIB } }, 1 },
    { "AL2", true, true, true, "/dev/xvda", 20 * GIB, { { "/dev/xvda", 20 * GIB } }, 1 },
    /* Bottlerocket: a 4 GiB OS volume on xvda, pods on the xvdb data volume;
     * its settings TOML has no podsPerCore. */
    { "Bottlerocket", true, false, false, "/dev/xvdb", 20 * GIB,
      { { "/dev/xvda", 4 * GIB }, { "/dev/xvdb", 20 * GIB } }, 2 },
    /* Custom: the AMI's own volumes, whose sizes we cannot know. */
    { "Custom", true, true, true, NULL, 20 * GIB, { { NULL, 0 } }, 0 },
    { "Windows2019", false, true, false, "/dev/sda1", 50 * GIB, { { "/dev/sda1", 50 * GIB } }, 1 },
    { "Windows2022", false, true, false, "/dev/sda1", 50 * GIB, { { "/dev/sda1", 50 * GIB } }, 1 },
    { "Windows2025", false, true, false, "/dev/sda1", 50 * GIB, { { "/dev/sda1", 50 * GIB } }, 1 },
};

static const family *family_of(const char *name)
{
    for (size_t i = 0; name && i < sizeof(families) / sizeof(families[0]); i++)
        if (strcmp(families[i].name, name) == 0)
            return &families[i];
    return &families[0];   /* unset or unknown: the default, AL2023 */
}

size_t tlr_node_shape_default_bdms(const char *ami_family, const tlr_default_bdm **out)
{
    const family *f = family_of(ami_family);
    *out = f->bdms;
    return f->nbdms;
}

/* ---- the shape of a NodeClass ----------------------------------------- */

/* alias prefix -> spec.amiFamily, as Karpenter's EC2NodeClass.AMIFamily(). */
static const struct { const char *prefix, *family; } aliases[] = {
    { "al2023@", "AL2023" },
    { "al2@", "AL2" },
    { "bottlerocket@", "Bottlerocket" },
    { "windows2019@", "Windows2019" },
    { "windows2022@", "Windows2022" },
    { "windows2025@", "Windows2025" },
};

tlr_node_shape tlr_node_shape_of(const Tailor__V1__NodeClass *nc)
{
    tlr_node_shape s = { "AL2023", NULL, NULL, 0, false };
    if (!nc)
        return s;
    if (nc->ami_family && nc->ami_family[0]) {
        s.ami_family = nc->ami_family;
    } else {
        for (size_t i = 0; i < nc->n_ami_selector_terms; i++) {
            const char *a = nc->ami_selector_terms[i]->alias;
            for (size_t k = 0; a && a[0] && k < sizeof(aliases) / sizeof(aliases[0]); k++)
                if (strncmp(a, aliases[k].prefix, strlen(aliases[k].prefix)) == 0) {
                    s.ami_family = aliases[k].family;
                    break;
                }
        }
    }
    s.kubelet = nc->kubelet;
    s.bdms = nc->block_device_mappings;
    s.n_bdms = nc->n_block_device_mappings;
    s.raid0 = nc->instance_store_policy == TAILOR__V1__INSTANCE_STORE_POLICY__INSTANCE_STORE_POLICY_RAID0;
    return s;
}

static const char *eviction_hard(const Tailor__V1__KubeletConfig *k, const char *signal)
{
    for (size_t i = 0; k && i < k->n_eviction_hard; i++)
        if (k->eviction_hard[i]->key && strcmp(k->eviction_hard[i]->key, signal) == 0)
            return k->eviction_hard[i]->value;
    return NULL;
}

static bool list_set(const Tailor__V1__ResourceList *l)
{
    return l && (l->cpu_millis > 0 || l->memory_bytes > 0 || l->ephemeral_storage_bytes > 0);
}

/* Does k say anything the model reads?  (clusterDNS, image GC and the
 * like change no figure.) */
static bool kubelet_shapes(const Tailor__V1__KubeletConfig *k)
{
    return k && (k->max_pods > 0 || k->pods_per_core > 0 || list_set(k->system_reserved) ||
                 list_set(k->kube_reserved) || eviction_hard(k, "memory.available") ||
                 eviction_hard(k, "nodefs.available"));
}

bool tlr_node_shape_is_default(const tlr_node_shape *s)
{
    /* AL2 sizes nodes exactly as AL2023 does (same row but the name). */
    const family *f = family_of(s->ami_family);
    return (f == &families[0] || f == &families[1]) && !kubelet_shapes(s->kubelet) &&
           s->n_bdms == 0 && !s->raid0;
}

void tlr_node_shape_key(const tlr_node_shape *s, char out[TLR_NODE_SHAPE_KEY_LEN])
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 20);
    if (!tlr_node_shape_is_default(s)) {
        const Tailor__V1__KubeletConfig *k = kubelet_shapes(s->kubelet) ? s->kubelet : NULL;
        const Tailor__V1__ResourceList z = TAILOR__V1__RESOURCE_LIST__INIT;
        const Tailor__V1__ResourceList *sr = k && k->system_reserved ? k->system_reserved : &z;
        const Tailor__V1__ResourceList *kr = k && k->kube_reserved ? k->kube_reserved : &z;
        const char *mem = eviction_hard(k, "memory.available");
        const char *fs = eviction_hard(k, "nodefs.available");
        tlr_buf_printf(&b, "%s|%d|%d|%lld,%lld,%lld|%lld,%lld,%lld|%s|%s|%d",
                       family_of(s->ami_family)->name, k ? k->max_pods : 0,
                       k ? k->pods_per_core : 0, (long long)sr->cpu_millis,
                       (long long)sr->memory_bytes, (long long)sr->ephemeral_storage_bytes,
                       (long long)kr->cpu_millis, (long long)kr->memory_bytes,
                       (long long)kr->ephemeral_storage_bytes, mem ? mem : "-", fs ? fs : "-",
                       s->raid0);
        for (size_t i = 0; i < s->n_bdms; i++) {
            const Tailor__V1__BlockDeviceMapping *m = s->bdms[i];
            tlr_buf_printf(&b, "|%s,%d,%lld", m->device_name ? m->device_name : "",
                           m->root_volume, m->ebs ? (long long)m->ebs->volume_size_bytes : 0LL);
        }
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(tlr_buf_str(&b), b.len, md, &mdlen, EVP_sha256(), NULL) != 1 ||
        mdlen != 32)
        abort();   /* SHA-256 is always there: a broken libcrypto */
    for (unsigned int i = 0; i < mdlen; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    tlr_buf_free(&b);
}

/* ---- the model ---------------------------------------------------------- */

/* Kubernetes' eviction signal value against capacity cap: "5%" of it
 * (100 % means the signal is off), or a quantity.  false if v is neither. */
static bool eviction_signal(int64_t cap, const char *v, int64_t *out)
{
    size_t n = v ? strlen(v) : 0;
    if (n > 1 && v[n - 1] == '%') {
        char *end = NULL;
        double p = strtod(v, &end);
        if (end != v + n - 1 || !(p >= 0 && p <= 100))
            return false;
        if (p == 100)
            p = 0;
        *out = (int64_t)ceil((double)cap / 100 * p);
        return true;
    }
    int64_t q = 0;
    if (!v || tlr_quantity_parse_value(v, &q) != TLR_OK || q < 0)
        return false;
    *out = q;
    return true;
}

/* kube-reserved CPU: 6 % of the first core, 1 % of the second, 0.5 % of
 * the next two, 0.25 % of the rest (Bottlerocket's table, as Karpenter). */
static int64_t kube_reserved_cpu(int64_t cpu)
{
    static const struct { int64_t start, end; double pct; } tiers[] = {
        { 0, 1000, 0.06 }, { 1000, 2000, 0.01 }, { 2000, 4000, 0.005 },
        { 4000, 1LL << 31, 0.0025 },
    };
    int64_t r = 0;
    for (size_t i = 0; i < sizeof(tiers) / sizeof(tiers[0]); i++) {
        if (cpu < tiers[i].start)
            break;
        double span = (double)((cpu < tiers[i].end ? cpu : tiers[i].end) - tiers[i].start);
        r += (int64_t)(span * tiers[i].pct);
    }
    return r;
}

/* Pods' storage on a node of it: see the header. */
static int64_t ephemeral_capacity(const Tailor__V1__InstanceType *it, const family *f,
                                  const tlr_node_shape *s)
{
    if (s->raid0 && it->local_nvme_bytes > 0)
        return it->local_nvme_bytes;
    if (s->n_bdms > 0) {
        for (size_t i = 0; i < s->n_bdms; i++)
            if (s->bdms[i]->root_volume && s->bdms[i]->ebs && s->bdms[i]->ebs->volume_size_bytes > 0)
                return s->bdms[i]->ebs->volume_size_bytes;
        if (!f->eph_device) {
            const Tailor__V1__BlockDeviceMapping *last = s->bdms[s->n_bdms - 1];
            return last->ebs && last->ebs->volume_size_bytes > 0 ? last->ebs->volume_size_bytes
                                                                 : f->eph_default;
        }
        for (size_t i = 0; i < s->n_bdms; i++) {
            const Tailor__V1__BlockDeviceMapping *m = s->bdms[i];
            if (m->device_name && strcmp(m->device_name, f->eph_device) == 0 && m->ebs &&
                m->ebs->volume_size_bytes > 0)
                return m->ebs->volume_size_bytes;
        }
    }
    return f->eph_default;
}

static Tailor__V1__ResourceList *list_of(Tailor__V1__ResourceList **l)
{
    if (!*l) {
        *l = tlr_malloc(sizeof(**l));
        tailor__v1__resource_list__init(*l);
    }
    return *l;
}

static int64_t floor0(int64_t v)
{
    return v > 0 ? v : 0;
}

void tlr_node_shape_apply(Tailor__V1__InstanceType *it, const tlr_node_shape *s)
{
    const family *f = family_of(s->ami_family);
    const Tailor__V1__KubeletConfig *k = s->kubelet;
    const Tailor__V1__ResourceList none = TAILOR__V1__RESOURCE_LIST__INIT;
    const Tailor__V1__ResourceList *sr = k && k->system_reserved ? k->system_reserved : &none;
    const Tailor__V1__ResourceList *kr = k && k->kube_reserved ? k->kube_reserved : &none;

    int64_t eni = it->eni_max_pods > 0 ? it->eni_max_pods : 110;
    int64_t pods = k && k->max_pods > 0 ? k->max_pods : f->eni_pods ? eni : 110;
    if (k && k->pods_per_core > 0 && f->pods_per_core) {
        int64_t ppc = (int64_t)k->pods_per_core * it->vcpu;
        if (ppc < pods)
            pods = ppc;
    }

    int64_t cpu = (int64_t)it->vcpu * 1000;
    int64_t mib = it->memory_mib;
    if (it->arch && strcmp(it->arch, "arm64") == 0)
        mib -= 64;   /* Graviton's CMA reservation */
    int64_t mem = mib * MIB;
    mem -= (int64_t)ceil((double)mem * VM_OVERHEAD / 1024 / 1024) * MIB;
    int64_t eph = ephemeral_capacity(it, f, s);

    int64_t kr_pods = f->eni_memory ? eni : pods;
    int64_t kr_cpu = kr->cpu_millis > 0 ? kr->cpu_millis : kube_reserved_cpu(cpu);
    int64_t kr_mem = kr->memory_bytes > 0 ? kr->memory_bytes : (11 * kr_pods + 255) * MIB;
    int64_t kr_eph = kr->ephemeral_storage_bytes > 0 ? kr->ephemeral_storage_bytes : GIB;

    int64_t ev_mem = 100 * MIB, ev_eph = (int64_t)ceil((double)eph / 100 * 10), v;
    if (eviction_signal(mem, eviction_hard(k, "memory.available"), &v))
        ev_mem = v;
    if (eviction_signal(eph, eviction_hard(k, "nodefs.available"), &v))
        ev_eph = v;

    Tailor__V1__ResourceList *cap = list_of(&it->capacity), *al = list_of(&it->allocatable);
    Tailor__V1__ResourceList *ov = list_of(&it->overhead);
    it->max_pods = (int32_t)pods;
    cap->cpu_millis = cpu;
    cap->memory_bytes = mem;
    cap->pods = pods;
    cap->ephemeral_storage_bytes = eph;
    al->cpu_millis = floor0(cpu - kr_cpu - sr->cpu_millis);
    al->memory_bytes = floor0(mem - kr_mem - sr->memory_bytes - ev_mem);
    al->pods = pods;
    al->ephemeral_storage_bytes = floor0(eph - kr_eph - sr->ephemeral_storage_bytes - ev_eph);
    ov->cpu_millis = cap->cpu_millis - al->cpu_millis;
    ov->memory_bytes = cap->memory_bytes - al->memory_bytes;
    ov->pods = 0;
    ov->ephemeral_storage_bytes = cap->ephemeral_storage_bytes - al->ephemeral_storage_bytes;
}

Tailor__V1__Catalog *tlr_catalog_shaped(const Tailor__V1__Catalog *c, const tlr_node_shape *s)
{
    /* A deep copy by pack/unpack, as tlr_catalog_restrict_zones. */
    size_t n = protobuf_c_message_get_packed_size(&c->base);
    uint8_t *buf = tlr_malloc(n + 1);
    protobuf_c_message_pack(&c->base, buf);
    Tailor__V1__Catalog *r = tailor__v1__catalog__unpack(NULL, n, buf);
    free(buf);
    if (!r)
        abort();   /* we packed it ourselves */
    if (tlr_node_shape_is_default(s))
        return r;
    for (size_t i = 0; i < r->n_instance_types; i++)
        tlr_node_shape_apply(r->instance_types[i], s);
    tlr_catalog_set_hash(r);
    return r;
}
