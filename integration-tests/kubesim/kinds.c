/* kinds.c - the table of served resource kinds.
 *
 * One row per kind: discovery (api.c), routing and storage (store.c) all
 * read this table, so adding a kind is adding a row here (and an enum
 * value in ks_store.h).  Verbs are the same for every kind; the
 * subresources column says which of status/scale/binding/eviction exist.
 */
#include <stdio.h>
#include <string.h>

#include "ks_store.h"

static const ks_kind kinds[KS_KIND_COUNT] = {
    [KS_POD] = { KS_POD, "", "v1", "pods", "pod", "Pod", "PodList", true,
                 KS_SUB_STATUS | KS_SUB_BINDING | KS_SUB_EVICTION, { "po" }, { "all" } },
    [KS_NODE] = { KS_NODE, "", "v1", "nodes", "node", "Node", "NodeList", false,
                  KS_SUB_STATUS, { "no" } },
    [KS_NAMESPACE] = { KS_NAMESPACE, "", "v1", "namespaces", "namespace", "Namespace",
                       "NamespaceList", false, KS_SUB_STATUS, { "ns" } },
    [KS_EVENT] = { KS_EVENT, "", "v1", "events", "event", "Event", "EventList", true, 0,
                   { "ev" } },
    [KS_CONFIGMAP] = { KS_CONFIGMAP, "", "v1", "configmaps", "configmap", "ConfigMap",
                       "ConfigMapList", true, 0, { "cm" } },
    [KS_SECRET] = { KS_SECRET, "", "v1", "secrets", "secret", "Secret", "SecretList", true, 0 },
    [KS_SERVICE] = { KS_SERVICE, "", "v1", "services", "service", "Service", "ServiceList",
                     true, KS_SUB_STATUS, { "svc" }, { "all" } },
    [KS_ENDPOINTS] = { KS_ENDPOINTS, "", "v1", "endpoints", "endpoints", "Endpoints",
                       "EndpointsList", true, 0, { "ep" } },
    [KS_SERVICEACCOUNT] = { KS_SERVICEACCOUNT, "", "v1", "serviceaccounts", "serviceaccount",
                            "ServiceAccount", "ServiceAccountList", true, 0, { "sa" } },
    [KS_PDB] = { KS_PDB, "policy", "v1", "poddisruptionbudgets", "poddisruptionbudget",
                 "PodDisruptionBudget", "PodDisruptionBudgetList", true, KS_SUB_STATUS,
                 { "pdb" } },
    [KS_DEPLOYMENT] = { KS_DEPLOYMENT, "apps", "v1", "deployments", "deployment", "Deployment",
                        "DeploymentList", true, KS_SUB_STATUS | KS_SUB_SCALE, { "deploy" },
                        { "all" } },
    [KS_REPLICASET] = { KS_REPLICASET, "apps", "v1", "replicasets", "replicaset", "ReplicaSet",
                        "ReplicaSetList", true, KS_SUB_STATUS | KS_SUB_SCALE, { "rs" },
                        { "all" } },
    [KS_STATEFULSET] = { KS_STATEFULSET, "apps", "v1", "statefulsets", "statefulset",
                         "StatefulSet", "StatefulSetList", true, KS_SUB_STATUS | KS_SUB_SCALE,
                         { "sts" }, { "all" } },
    [KS_DAEMONSET] = { KS_DAEMONSET, "apps", "v1", "daemonsets", "daemonset", "DaemonSet",
                       "DaemonSetList", true, KS_SUB_STATUS, { "ds" }, { "all" } },
    [KS_CONTROLLERREVISION] = { KS_CONTROLLERREVISION, "apps", "v1", "controllerrevisions",
                                "controllerrevision", "ControllerRevision",
                                "ControllerRevisionList", true, 0 },
    [KS_LEASE] = { KS_LEASE, "coordination.k8s.io", "v1", "leases", "lease", "Lease",
                   "LeaseList", true, 0 },
    [KS_NODEPOOL] = { KS_NODEPOOL, "karpenter.sh", "v1", "nodepools", "nodepool", "NodePool",
                      "NodePoolList", false, KS_SUB_STATUS, { 0 }, { "karpenter" } },
    [KS_NODECLAIM] = { KS_NODECLAIM, "karpenter.sh", "v1", "nodeclaims", "nodeclaim",
                       "NodeClaim", "NodeClaimList", false, KS_SUB_STATUS, { 0 },
                       { "karpenter" } },
    [KS_EC2NODECLASS] = { KS_EC2NODECLASS, "karpenter.k8s.aws", "v1", "ec2nodeclasses",
                          "ec2nodeclass", "EC2NodeClass", "EC2NodeClassList", false,
                          KS_SUB_STATUS, { "ec2nc", "ec2ncs" }, { "karpenter" } },
};

const ks_kind *ks_kind_get(ks_kind_id id)
{
    if ((unsigned)id >= KS_KIND_COUNT)
        return NULL;
    return &kinds[id];
}

const ks_kind *ks_kind_find(const char *group, const char *version, const char *plural)
{
    if (!group || !version || !plural)
        return NULL;
    for (int i = 0; i < KS_KIND_COUNT; i++)
        if (!strcmp(kinds[i].group, group) && !strcmp(kinds[i].version, version) &&
            !strcmp(kinds[i].plural, plural))
            return &kinds[i];
    return NULL;
}

const char *ks_kind_api_version(const ks_kind *k, char *buf, size_t len)
{
    if (k->group[0])
        snprintf(buf, len, "%s/%s", k->group, k->version);
    else
        snprintf(buf, len, "%s", k->version);
    return buf;
}

const ks_kind *ks_kind_by_kind(const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return NULL;
    char buf[128];
    for (int i = 0; i < KS_KIND_COUNT; i++)
        if (!strcmp(kinds[i].kind, kind) &&
            !strcmp(ks_kind_api_version(&kinds[i], buf, sizeof(buf)), api_version))
            return &kinds[i];
    return NULL;
}
