/* launchtemplate.c - launch template parameters per node class
 * (launchtemplate.h). */
#include "launchtemplate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_base64.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_labels.h"
#include "tlr_nodeshape.h"
#include "tlr_sigv4.h"

/* The configuration that makes two templates the same, as canonical text. */
static void config_text(const Tailor__V1__NodeClass *nc, const lc_lt_opts *o, tlr_buf *b)
{
    tlr_buf_printf(b, "ami=%s\nud=%s\nprofile=%s\nrole=%s\nmon=%d\npub=%d:%d\n", o->ami,
                 nc->user_data, nc->instance_profile, nc->role, nc->detailed_monitoring,
                 nc->has_associate_public_ip_address, nc->associate_public_ip_address);
    for (size_t i = 0; i < nc->n_security_groups; i++)
        tlr_buf_printf(b, "sg=%s\n", nc->security_groups[i]->id);
    const tlr_default_bdm *d;
    size_t nd = nc->n_block_device_mappings ? 0 : tlr_node_shape_default_bdms(nc->ami_family, &d);
    for (size_t i = 0; i < nd; i++)
        tlr_buf_printf(b, "bdm-default=%s:%lld\n", d[i].device, (long long)d[i].size_bytes);
    for (size_t i = 0; i < nc->n_block_device_mappings; i++) {
        const Tailor__V1__BlockDeviceMapping *m = nc->block_device_mappings[i];
        const Tailor__V1__EbsVolume *e = m->ebs;
        tlr_buf_printf(b, "bdm=%s:%d", m->device_name, m->root_volume);
        if (e)
            tlr_buf_printf(b, ":%lld:%s:%d:%d:%d%d:%s:%s:%d%d", (long long)e->volume_size_bytes,
                         e->volume_type, e->iops, e->throughput_mibps, e->has_encrypted,
                         e->encrypted, e->kms_key_id, e->snapshot_id,
                         e->has_delete_on_termination, e->delete_on_termination);
        tlr_buf_add(b, "\n", 1);
    }
    const Tailor__V1__MetadataOptions *mo = nc->metadata_options;
    if (mo)
        tlr_buf_printf(b, "imds=%s:%s:%d:%s\n", mo->http_endpoint, mo->http_protocol_ipv6,
                     mo->http_put_response_hop_limit, mo->http_tokens);
    for (size_t i = 0; i < nc->n_tags; i++)
        tlr_buf_printf(b, "tag=%s=%s\n", nc->tags[i]->key, nc->tags[i]->value);
}

void lc_lt_name(const Tailor__V1__NodeClass *nc, const lc_lt_opts *o, char *buf, size_t len)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 20);
    config_text(nc, o, &b);
    char hex[65];
    tlr_sigv4_sha256_hex(b.data ? b.data : "", b.len, hex);
    tlr_buf_free(&b);
    snprintf(buf, len, "tailor/%s/%.16s", o->cluster, hex);
}

typedef struct sink {
    lc_lt_add_fn add;
    void *arg;
} sink;

static void kv(const sink *s, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void kv(const sink *s, const char *value, const char *fmt, ...)
{
    char key[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(key, sizeof(key), fmt, ap);
    va_end(ap);
    s->add(s->arg, key, value);
}

int lc_lt_params(const Tailor__V1__NodeClass *nc, const lc_lt_opts *o, const char *name,
                 lc_lt_add_fn add, void *arg)
{
    sink sk = { add, arg };
    const sink *p = &sk;
    if (!o->ami || !o->ami[0])
        return TLR_E_INVAL;
    const char *D = "LaunchTemplateData";
    kv(p, name, "LaunchTemplateName");
    kv(p, o->ami, "%s.ImageId", D);
    if (nc->user_data[0]) {
        char *b64 = tlr_base64_encode(nc->user_data, strlen(nc->user_data));
        kv(p, b64, "%s.UserData", D);
        free(b64);
    }
    /* IMDSv2 by default, hop limit 1: pods cannot reach the node's role. */
    const Tailor__V1__MetadataOptions *mo = nc->metadata_options;
    char num[32];
    kv(p, mo && mo->http_endpoint[0] ? mo->http_endpoint : "enabled",
                        "%s.MetadataOptions.HttpEndpoint", D);
    kv(p, mo && mo->http_tokens[0] ? mo->http_tokens : "required",
                        "%s.MetadataOptions.HttpTokens", D);
    snprintf(num, sizeof(num), "%d", mo && mo->http_put_response_hop_limit > 0
                                         ? mo->http_put_response_hop_limit : 1);
    kv(p, num, "%s.MetadataOptions.HttpPutResponseHopLimit", D);
    kv(p, mo && mo->http_protocol_ipv6[0] ? mo->http_protocol_ipv6 : "disabled",
                        "%s.MetadataOptions.HttpProtocolIpv6", D);
    for (size_t i = 0; i < nc->n_block_device_mappings; i++) {
        const Tailor__V1__BlockDeviceMapping *m = nc->block_device_mappings[i];
        const Tailor__V1__EbsVolume *e = m->ebs;
        size_t k = i + 1;
        kv(p, m->device_name, "%s.BlockDeviceMapping.%zu.DeviceName", D, k);
        if (!e)
            continue;
        if (e->volume_size_bytes > 0) {
            /* EC2 takes GiB; round up so the volume is never smaller. */
            snprintf(num, sizeof(num), "%lld",
                     (long long)((e->volume_size_bytes + (1LL << 30) - 1) >> 30));
            kv(p, num, "%s.BlockDeviceMapping.%zu.Ebs.VolumeSize", D, k);
        }
        if (e->volume_type[0])
            kv(p, e->volume_type, "%s.BlockDeviceMapping.%zu.Ebs.VolumeType", D, k);
        if (e->iops > 0) {
            snprintf(num, sizeof(num), "%d", e->iops);
            kv(p, num, "%s.BlockDeviceMapping.%zu.Ebs.Iops", D, k);
        }
        if (e->throughput_mibps > 0) {
            snprintf(num, sizeof(num), "%d", e->throughput_mibps);
            kv(p, num, "%s.BlockDeviceMapping.%zu.Ebs.Throughput", D, k);
        }
        if (e->has_encrypted)
            kv(p, e->encrypted ? "true" : "false",
                                "%s.BlockDeviceMapping.%zu.Ebs.Encrypted", D, k);
        if (e->kms_key_id[0])
            kv(p, e->kms_key_id, "%s.BlockDeviceMapping.%zu.Ebs.KmsKeyId", D, k);
        if (e->snapshot_id[0])
            kv(p, e->snapshot_id, "%s.BlockDeviceMapping.%zu.Ebs.SnapshotId", D, k);
        kv(p, !e->has_delete_on_termination || e->delete_on_termination
                                   ? "true" : "false",
                            "%s.BlockDeviceMapping.%zu.Ebs.DeleteOnTermination", D, k);
    }
    /* No blockDeviceMappings: the family's default volumes, as Karpenter
     * launches them (the AMI's own sizes are not what the node model and
     * the bootstrap assume). */
    const tlr_default_bdm *d;
    size_t nd = nc->n_block_device_mappings ? 0 : tlr_node_shape_default_bdms(nc->ami_family, &d);
    for (size_t i = 0; i < nd; i++) {
        size_t k = i + 1;
        kv(p, d[i].device, "%s.BlockDeviceMapping.%zu.DeviceName", D, k);
        snprintf(num, sizeof(num), "%lld", (long long)(d[i].size_bytes >> 30));
        kv(p, num, "%s.BlockDeviceMapping.%zu.Ebs.VolumeSize", D, k);
        kv(p, "gp3", "%s.BlockDeviceMapping.%zu.Ebs.VolumeType", D, k);
        kv(p, "true", "%s.BlockDeviceMapping.%zu.Ebs.Encrypted", D, k);
        kv(p, "true", "%s.BlockDeviceMapping.%zu.Ebs.DeleteOnTermination", D, k);
    }
    for (size_t i = 0; i < nc->n_security_groups; i++)
        kv(p, nc->security_groups[i]->id, "%s.SecurityGroupId.%zu", D, i + 1);
    if (nc->instance_profile[0])
        kv(p, nc->instance_profile, "%s.IamInstanceProfile.Name", D);
    if (nc->detailed_monitoring)
        kv(p, "true", "%s.Monitoring.Enabled", D);
    kv(p, "launch-template", "TagSpecification.1.ResourceType");
    size_t t = 1;
    char key[300];
    snprintf(key, sizeof(key), "kubernetes.io/cluster/%s", o->cluster);
    kv(p, key, "TagSpecification.1.Tag.%zu.Key", t);
    kv(p, "owned", "TagSpecification.1.Tag.%zu.Value", t++);
    kv(p, TLR_LABEL_NODECLASS, "TagSpecification.1.Tag.%zu.Key", t);
    kv(p, nc->name, "TagSpecification.1.Tag.%zu.Value", t++);
    for (size_t i = 0; i < nc->n_tags; i++) {
        kv(p, nc->tags[i]->key, "TagSpecification.1.Tag.%zu.Key", t);
        kv(p, nc->tags[i]->value, "TagSpecification.1.Tag.%zu.Value", t++);
    }
    return TLR_OK;
}
