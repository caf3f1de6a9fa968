/* kubeobj_fuzz.c - libFuzzer target for the input side of tailorctl solve
 * and the watcher: arbitrary bytes through tlr_kubeobj_decode (JSON or a
 * YAML stream), then every object through every converter and the
 * workload expansion, and the launcher's and disruptor's readers
 * (tlr_kread.h).
 *
 * Property: nothing crashes, leaks or reads out of bounds; a converter
 * either succeeds with a message that packs, or fails with a message that
 * names what it was looking at; a reader fills every string field.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_kread.h"
#include "tlr_kubeobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int rc, void *msg, const char *err)
{
    if (rc == TLR_OK) {
        size_t n = protobuf_c_message_get_packed_size(msg);
        uint8_t *buf = malloc(n ? n : 1);
        if (buf == NULL || protobuf_c_message_pack(msg, buf) != n)
            abort();
        free(buf);
        tlr_kubeobj_free(msg);
    } else if (err[0] == '\0') {
        abort();   /* every failure must explain itself */
    }
}

static void read_both(json_object *o)
{
    tlr_kclaim c;
    tlr_knode n;
    tlr_kclaim_read(o, &c);
    tlr_knode_read(o, &n);
    if (!c.name || !c.uid || !c.nodepool || !c.nodeclass || !c.provider_id || !c.instance_id ||
        !c.node_name || !c.drained_msg || !n.name || !n.uid || !n.provider_id || !n.nodepool)
        abort();
    for (size_t k = 0; k < n.ntaints; k++)
        if (!n.taints[k].key || !n.taints[k].value || !n.taints[k].effect)
            abort();
    for (size_t k = 0; k < n.nlabels; k++)
        if (!n.label_keys[k] || !n.label_values[k])
            abort();
    for (size_t k = 0; k < n.nextended; k++)
        if (!n.extended[k])
            abort();
    tlr_kclaim_clear(&c);
    tlr_knode_clear(&n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *objs = NULL;
    char err[TLR_KUBEOBJ_ERRLEN];

    if (size > 256 * 1024)
        return 0;
    if (tlr_kubeobj_decode((const char *)data, size, 256 * 1024, &objs, err, sizeof(err)) !=
        TLR_OK)
        return 0;
    for (size_t i = 0; i < json_object_array_length(objs); i++) {
        json_object *o = json_object_array_get_idx(objs, i);
        void *m;
        int rc;

        m = NULL;
        rc = tlr_kubeobj_pod(o, NULL, (Tailor__V1__Pod **)&m, err, sizeof(err));
        check(rc, m, err);
        m = NULL;
        rc = tlr_kubeobj_pod(o, &(tlr_kubeobj_opts){ .compact = true }, (Tailor__V1__Pod **)&m,
                             err, sizeof(err));
        check(rc, m, err);
        m = NULL;
        rc = tlr_kubeobj_node(o, NULL, (Tailor__V1__Node **)&m, err, sizeof(err));
        check(rc, m, err);
        m = NULL;
        rc = tlr_kubeobj_nodepool(o, NULL, (Tailor__V1__NodePool **)&m, err, sizeof(err));
        check(rc, m, err);
        m = NULL;
        rc = tlr_kubeobj_nodeclass(o, NULL, (Tailor__V1__NodeClass **)&m, err, sizeof(err));
        check(rc, m, err);
        m = NULL;
        rc = tlr_kubeobj_nodeclaim(o, NULL, (Tailor__V1__NodeClaim **)&m, err, sizeof(err));
        check(rc, m, err);
        m = NULL;
        rc = tlr_kubeobj_pdb(o, NULL, (Tailor__V1__PodDisruptionBudget **)&m, err, sizeof(err));
        check(rc, m, err);
        m = NULL;
        rc = tlr_kubeobj_daemonset(o, NULL, (Tailor__V1__DaemonSet **)&m, err, sizeof(err));
        check(rc, m, err);

        read_both(o);

        Tailor__V1__Pod **pods = NULL;
        size_t n = 0;
        rc = tlr_kubeobj_expand(o, NULL, 1000, &pods, &n, err, sizeof(err));
        if (rc == TLR_OK) {
            for (size_t k = 0; k < n; k++)
                check(TLR_OK, pods[k], err);
            free(pods);
        } else if (rc != TLR_E_NOTFOUND && err[0] == '\0') {
            abort();
        }
    }
    json_object_put(objs);
    return 0;
}
