#!/usr/bin/python3
"""crd_parity_it.py TAILORCTL CRD_DIR - tailorctl validate refuses what tailor's CRDs refuse.

deploy/crds holds Karpenter v1.14's CRDs (scripts/crd-diff.py keeps them
identical); tailorctl validate, and every tailor service through
common/kubeobj, implements their rules by hand.  This test keeps the two in
step, object by object:

1. OpenAPI rules.  Each CRD's openAPIV3Schema becomes a JSON Schema
   (python3-jsonschema) the way the API server reads it: defaults applied
   and null values of non-nullable fields dropped before validation,
   x-kubernetes-int-or-string as integer-or-string, nullable as "or null",
   x-kubernetes-preserve-unknown-fields left open, list-type set as
   uniqueItems.  Unknown fields are not refused (the API server prunes
   them; `kubectl --validate=strict` is a client option).  Of the formats,
   date-time (taints[].timeAdded) is checked as RFC 3339; int32/int64 are
   not range-checked (no case comes near the bounds).  The corpus (the
   validate fixtures plus CASES below, at least one per rule family and
   kind, and the edges of how the API server reads a schema) goes through
   the schema and through tailorctl validate; they must agree on every
   object, except the objects in TAILOR_ONLY, each with its reason: a CEL
   rule refuses it, Karpenter's runtime validation does, or tailor does.
2. CEL rules (x-kubernetes-validations): there is no CEL engine in Debian,
   so CEL_CASES maps every rule message in the CRDs to a manifest that
   breaks only that rule (the schema accepts it) and the error tailorctl
   must print.  A rule in the CRDs without a row fails the test, so does a
   row whose message the CRDs no longer have.  Transition rules (oldSelf)
   need the stored object and are listed in TRANSITION_RULES.
"""
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "validate")
CRD_FILES = {
    "NodePool": "karpenter.sh_nodepools.yaml",
    "NodeClaim": "karpenter.sh_nodeclaims.yaml",
    "EC2NodeClass": "karpenter.k8s.aws_ec2nodeclasses.yaml",
}

# --- the CRD schema as the API server applies it -----------------------------

def to_jsonschema(s):
    """openAPIV3Schema node -> JSON Schema (draft 7)"""
    out = {}
    for k, v in s.items():
        if k == "properties":
            out[k] = {p: to_jsonschema(c) for p, c in v.items()}
        elif k == "items":
            out[k] = to_jsonschema(v)
        elif k == "additionalProperties":
            out[k] = to_jsonschema(v) if isinstance(v, dict) else v
        elif k == "format" and v == "date-time":
            out[k] = v
        elif k in ("type", "enum", "pattern", "minLength", "maxLength", "minItems",
                   "maxItems", "minProperties", "maxProperties", "minimum", "maximum", "uniqueItems",
                   "exclusiveMinimum", "exclusiveMaximum", "required", "multipleOf"):
            out[k] = v
        # description, default (applied before validation, below), format
        # (see the docstring), x-kubernetes-validations (CEL, part 2),
        # x-kubernetes-list-type/map-type (merge strategy) are not checks here
    if s.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if s.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True   # the API server refuses duplicates in a set
    if s.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


# The API server checks a string's format; of the formats in the spec
# schemas only date-time (taints[].timeAdded) is a string format.  int32 and
# int64 are not range-checked here (no value in the corpus comes near).
FORMATS = jsonschema.FormatChecker(formats=())
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


@FORMATS.checks("date-time")
def _date_time(v):
    return not isinstance(v, str) or bool(RFC3339.match(v))


def default_and_prune(obj, s):
    """the API server's defaulting: nulls of non-nullable fields dropped, defaults set"""
    if isinstance(obj, dict):
        props = s.get("properties") or {}
        for k in list(obj):
            sub = props.get(k) or (s.get("additionalProperties")
                                   if isinstance(s.get("additionalProperties"), dict) else None)
            if obj[k] is None and sub is not None and not sub.get("nullable"):
                del obj[k]
            elif sub is not None:
                default_and_prune(obj[k], sub)
        for k, sub in props.items():
            if k not in obj and "default" in sub:
                obj[k] = copy.deepcopy(sub["default"])
                default_and_prune(obj[k], sub)
    elif isinstance(obj, list) and isinstance(s.get("items"), dict):
        for x in obj:
            default_and_prune(x, s["items"])


def load_crds(crd_dir):
    crds = {}
    for kind, f in CRD_FILES.items():
        with open(os.path.join(crd_dir, f)) as fh:
            crd = yaml.safe_load(fh)
        v = [v for v in crd["spec"]["versions"] if v["name"] == "v1"][0]
        crds[kind] = v["schema"]["openAPIV3Schema"]
    return crds


def schema_errors(crds, obj):
    s = crds[obj["kind"]]
    o = copy.deepcopy(obj)
    default_and_prune(o, s)
    v = jsonschema.Draft7Validator(to_jsonschema(s), format_checker=FORMATS)
    return sorted(f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
                  for e in v.iter_errors(o))


def cel_messages(crds):
    """(kind, message, rule) of every x-kubernetes-validations rule in the spec schemas"""
    out = []

    def walk(kind, s):
        if not isinstance(s, dict):
            return
        for r in s.get("x-kubernetes-validations") or []:
            out.append((kind, r["message"], r["rule"]))
        for c in (s.get("properties") or {}).values():
            walk(kind, c)
        walk(kind, s.get("items"))
        walk(kind, s.get("additionalProperties"))
    for kind, s in crds.items():
        walk(kind, s)
    return out

# --- the corpus -------------------------------------------------------------------

def base(kind, name):
    if kind == "NodePool":
        return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
                "spec": {"template": {"spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                     "name": "default"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                      "values": ["on-demand"]}]}}}}
    if kind == "NodeClaim":
        return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": name},
                "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                          "name": "default"},
                         "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                           "values": ["on-demand"]}]}}
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "NodeRole",
                     "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
                     "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}]}}


DEL = object()   # a value in a mutation: delete the field


def make(kind, name, muts):
    """base(kind) with muts applied: {dotted.path: value}; [i] indexes lists; DEL deletes"""
    o = base(kind, name)
    for path, val in muts.items():
        parts = path.split(".")
        cur = o
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur.setdefault(p, {})
        last = parts[-1]
        if isinstance(cur, list):
            cur[int(last)] = val
        elif val is DEL:
            cur.pop(last, None)
        else:
            cur[last] = val
    return o


NP_T = "spec.template.spec"
REQ = lambda **kw: dict({"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                         "values": ["m5"]}, **kw)
NC_REQ0 = "spec.requirements.0"
AMI = "spec.amiSelectorTerms"

# (kind, name, rule family, mutation, schema accepts?) - OpenAPI rules
CASES = [
    # NodePool
    ("NodePool", "np-minimal", "valid", {}, True),
    ("NodePool", "np-full", "valid", {
        "spec.disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s",
                            "budgets": [{"nodes": "20%", "reasons": ["Empty", "Drifted"]},
                                        {"nodes": "0", "schedule": "@daily", "duration": "10h0m0s"}]},
        "spec.limits": {"cpu": 100, "memory": "400Gi", "nvidia.com/gpu": "8"},
        "spec.weight": 100,
        NP_T + ".taints": [{"key": "example.com/gpu", "effect": "NoSchedule"}],
        NP_T + ".startupTaints": [{"key": "init", "value": "v1.2", "effect": "NoExecute"}],
        NP_T + ".expireAfter": "Never", NP_T + ".terminationGracePeriod": "1h30m",
        "spec.template.metadata": {"labels": {"team": "a", "example.com/tier": ""},
                                   "annotations": {"note": "any text: here"}}}, True),
    ("NodePool", "np-null-disruption", "nullable (null dropped, default set)",
     {"spec.disruption": None}, True),
    ("NodePool", "np-no-template", "required", {"spec.template": DEL}, False),
    ("NodePool", "np-no-nodeclassref", "required", {NP_T + ".nodeClassRef": DEL}, False),
    ("NodePool", "np-no-requirements", "required", {NP_T + ".requirements": DEL}, False),
    ("NodePool", "np-ref-no-name", "required", {NP_T + ".nodeClassRef.name": DEL}, False),
    ("NodePool", "np-req-no-operator", "required",
     {NP_T + ".requirements": [{"key": "a", "values": ["b"]}]}, False),
    ("NodePool", "np-budget-no-nodes", "required (default)",
     {"spec.disruption": {"consolidateAfter": "1m", "budgets": [{"reasons": ["Empty"]}]}}, True),
    ("NodePool", "np-taint-no-effect", "required", {NP_T + ".taints": [{"key": "a"}]}, False),
    ("NodePool", "np-bad-operator", "enum", {NP_T + ".requirements": [REQ(operator="Within")]}, False),
    ("NodePool", "np-bad-policy", "enum", {"spec.disruption": {"consolidationPolicy": "Always",
                                                              "consolidateAfter": "1m"}}, False),
    ("NodePool", "np-bad-reason", "enum", {"spec.disruption": {
        "consolidateAfter": "1m", "budgets": [{"nodes": "1", "reasons": ["Expired"]}]}}, False),
    ("NodePool", "np-bad-effect", "enum",
     {NP_T + ".taints": [{"key": "a", "effect": "NoRun"}]}, False),
    ("NodePool", "np-bad-consolidate-after", "pattern",
     {"spec.disruption": {"consolidateAfter": "1d"}}, False),
    ("NodePool", "np-bad-budget-nodes", "pattern",
     {"spec.disruption": {"consolidateAfter": "1m", "budgets": [{"nodes": "101%"}]}}, False),
    ("NodePool", "np-bad-budget-duration", "pattern", {"spec.disruption": {
        "consolidateAfter": "1m", "budgets": [{"nodes": "1", "schedule": "@daily",
                                                "duration": "30s"}]}}, False),
    ("NodePool", "np-bad-schedule", "pattern", {"spec.disruption": {
        "consolidateAfter": "1m", "budgets": [{"nodes": "1", "schedule": "daily",
                                                "duration": "1h"}]}}, False),
    ("NodePool", "np-bad-tgp", "pattern", {NP_T + ".terminationGracePeriod": "Never"}, False),
    ("NodePool", "np-bad-limit", "pattern", {"spec.limits": {"cpu": "ten"}}, False),
    ("NodePool", "np-bad-group", "pattern", {NP_T + ".nodeClassRef.group": "a/b"}, False),
    ("NodePool", "np-bad-req-key", "pattern",
     {NP_T + ".requirements": [REQ(key="Example.com/x")]}, False),
    ("NodePool", "np-bad-label-value", "pattern",
     {"spec.template.metadata": {"labels": {"team": "-a"}}}, False),
    ("NodePool", "np-long-label-value", "maxLength",
     {"spec.template.metadata": {"labels": {"team": "a" * 64}}}, False),
    ("NodePool", "np-long-req-key", "maxLength",
     {NP_T + ".requirements": [REQ(key="a" * 317)]}, False),
    ("NodePool", "np-empty-taint-key", "minLength",
     {NP_T + ".taints": [{"key": "", "effect": "NoSchedule"}]}, False),
    ("NodePool", "np-bad-taint-value", "pattern",
     {NP_T + ".taints": [{"key": "a", "value": "b c", "effect": "NoSchedule"}]}, False),
    ("NodePool", "np-weight-0", "minimum", {"spec.weight": 0}, False),
    ("NodePool", "np-weight-101", "maximum", {"spec.weight": 101}, False),
    ("NodePool", "np-minvalues-51", "maximum",
     {NP_T + ".requirements": [REQ(values=[f"m{i}" for i in range(51)], minValues=51)]}, False),
    ("NodePool", "np-minvalues-0", "minimum", {NP_T + ".requirements": [REQ(minValues=0)]}, False),
    ("NodePool", "np-101-requirements", "maxItems",
     {NP_T + ".requirements": [REQ(key=f"example.com/k{i}") for i in range(101)]}, False),
    ("NodePool", "np-51-budgets", "maxItems",
     {"spec.disruption": {"consolidateAfter": "1m", "budgets": [{"nodes": "1"}] * 51}}, False),
    ("NodePool", "np-101-labels", "maxProperties",
     {"spec.template.metadata": {"labels": {f"l{i}": "v" for i in range(101)}}}, False),
    ("NodePool", "np-weight-string", "type", {"spec.weight": "10"}, False),
    ("NodePool", "np-values-string", "type",
     {NP_T + ".requirements": [REQ(values="m5")]}, False),
    ("NodePool", "np-labels-list", "type", {"spec.template.metadata": {"labels": ["a"]}}, False),
    ("NodePool", "np-expire-number", "type", {NP_T + ".expireAfter": 3600}, False),
    ("NodePool", "np-limit-bool", "type (int-or-string)", {"spec.limits": {"cpu": True}}, False),
    # NodeClaim
    ("NodeClaim", "nc-minimal", "valid", {}, True),
    ("NodeClaim", "nc-full", "valid", {
        "spec.resources": {"requests": {"cpu": 2, "memory": "4Gi"}},
        "spec.taints": [{"key": "a", "value": "b", "effect": "PreferNoSchedule"}],
        "spec.expireAfter": "24h", "spec.terminationGracePeriod": "5m"}, True),
    ("NodeClaim", "nc-no-requirements", "required", {"spec.requirements": DEL}, False),
    ("NodeClaim", "nc-ref-no-kind", "required", {"spec.nodeClassRef.kind": DEL}, False),
    ("NodeClaim", "nc-bad-operator", "enum", {NC_REQ0: REQ(operator="in")}, False),
    ("NodeClaim", "nc-bad-effect", "enum",
     {"spec.startupTaints": [{"key": "a", "effect": "noschedule"}]}, False),
    ("NodeClaim", "nc-bad-expire", "pattern", {"spec.expireAfter": "30d"}, False),
    ("NodeClaim", "nc-bad-request", "pattern",
     {"spec.resources": {"requests": {"cpu": "2 cores"}}}, False),
    ("NodeClaim", "nc-long-key", "maxLength", {NC_REQ0: REQ(key="k" * 317)}, False),
    ("NodeClaim", "nc-minvalues-0", "minimum", {NC_REQ0: REQ(minValues=0)}, False),
    ("NodeClaim", "nc-101-requirements", "maxItems",
     {"spec.requirements": [REQ(key=f"example.com/k{i}") for i in range(101)]}, False),
    ("NodeClaim", "nc-requirements-map", "type", {"spec.requirements": {"key": "a"}}, False),
    # EC2NodeClass
    ("EC2NodeClass", "ec2-minimal", "valid", {}, True),
    ("EC2NodeClass", "ec2-full", "valid", {
        "spec.amiSelectorTerms": [{"id": "ami-0123abcd"}, {"name": "my-ami-*", "owner": "self"},
                                  {"tags": {"team": "a"}}, {"ssmParameter": "/my/ami"}],
        "spec.amiFamily": "AL2023",
        "spec.subnetSelectorTerms": [{"id": "subnet-0abc"}],
        "spec.securityGroupSelectorTerms": [{"id": "sg-0abc"}, {"name": "nodes"}],
        "spec.blockDeviceMappings": [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
            "volumeSize": "80Gi", "volumeType": "gp3", "iops": 3000, "throughput": 125,
            "encrypted": True, "deleteOnTermination": True}}],
        "spec.metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                                 "httpPutResponseHopLimit": 2, "httpTokens": "required"},
        "spec.instanceStorePolicy": "RAID0", "spec.detailedMonitoring": True,
        "spec.associatePublicIPAddress": False, "spec.userData": "#!/bin/bash\necho hi\n",
        "spec.tags": {"team": "a", "cost-center": ""},
        "spec.kubelet": {"maxPods": 58, "podsPerCore": 2,
                         "evictionHard": {"memory.available": "5%"}}}, True),
    ("EC2NodeClass", "ec2-no-ami-terms", "required", {"spec.amiSelectorTerms": DEL}, False),
    ("EC2NodeClass", "ec2-no-subnet-terms", "required", {"spec.subnetSelectorTerms": DEL}, False),
    ("EC2NodeClass", "ec2-no-sg-terms", "required", {"spec.securityGroupSelectorTerms": DEL}, False),
    ("EC2NodeClass", "ec2-bad-family", "enum",
     {"spec.amiFamily": "Ubuntu", "spec.amiSelectorTerms": [{"id": "ami-1"}]}, False),
    ("EC2NodeClass", "ec2-bad-volume-type", "enum", {"spec.blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp4"}}]}, False),
    ("EC2NodeClass", "ec2-bad-http-tokens", "enum",
     {"spec.metadataOptions": {"httpTokens": "always"}}, False),
    ("EC2NodeClass", "ec2-bad-store-policy", "enum", {"spec.instanceStorePolicy": "RAID1"}, False),
    ("EC2NodeClass", "ec2-bad-subnet-id", "pattern",
     {"spec.subnetSelectorTerms": [{"id": "sn-123"}]}, False),
    ("EC2NodeClass", "ec2-bad-sg-id", "pattern",
     {"spec.securityGroupSelectorTerms": [{"id": "group-1"}]}, False),
    ("EC2NodeClass", "ec2-bad-ami-id", "pattern",
     {"spec.amiSelectorTerms": [{"id": "image-1"}], "spec.amiFamily": "AL2023"}, False),
    ("EC2NodeClass", "ec2-bad-volume-size", "pattern", {"spec.blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100GB"}}]}, False),
    ("EC2NodeClass", "ec2-huge-volume", "pattern", {"spec.blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "60000Gi"}}]}, False),
    ("EC2NodeClass", "ec2-bad-cr-id", "pattern",
     {"spec.capacityReservationSelectorTerms": [{"id": "cr1"}]}, False),
    ("EC2NodeClass", "ec2-bad-owner-id", "pattern",
     {"spec.capacityReservationSelectorTerms": [{"tags": {"a": "b"}, "ownerID": "12345"}]}, False),
    ("EC2NodeClass", "ec2-long-alias", "maxLength",
     {"spec.amiSelectorTerms": [{"alias": "al2023@v" + "1" * 30}]}, False),
    ("EC2NodeClass", "ec2-empty-pg-name", "minLength",
     {"spec.placementGroupSelector": {"name": ""}}, False),
    ("EC2NodeClass", "ec2-hop-limit-0", "minimum",
     {"spec.metadataOptions": {"httpPutResponseHopLimit": 0}}, False),
    ("EC2NodeClass", "ec2-hop-limit-65", "maximum",
     {"spec.metadataOptions": {"httpPutResponseHopLimit": 65}}, False),
    ("EC2NodeClass", "ec2-init-rate-99", "minimum", {"spec.blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": {"snapshotID": "snap-1",
                                             "volumeInitializationRate": 99}}]}, False),
    ("EC2NodeClass", "ec2-udp-timeout-61", "maximum",
     {"spec.connectionTracking": {"udpTimeout": 61}}, False),
    ("EC2NodeClass", "ec2-ip-prefix-negative", "minimum", {"spec.ipPrefixCount": -1}, False),
    ("EC2NodeClass", "ec2-31-subnet-terms", "maxItems",
     {"spec.subnetSelectorTerms": [{"id": f"subnet-{i}"} for i in range(31)]}, False),
    ("EC2NodeClass", "ec2-0-ami-terms", "minItems", {"spec.amiSelectorTerms": []}, False),
    ("EC2NodeClass", "ec2-51-block-devices", "maxItems", {"spec.blockDeviceMappings": [
        {"deviceName": f"/dev/xvd{i}", "ebs": {"volumeSize": "20Gi"}} for i in range(51)]}, False),
    ("EC2NodeClass", "ec2-21-tags-in-term", "maxProperties",
     {"spec.subnetSelectorTerms": [{"tags": {f"k{i}": "v" for i in range(21)}}]}, False),
    ("EC2NodeClass", "ec2-role-number", "type", {"spec.role": 7}, False),
    ("EC2NodeClass", "ec2-monitoring-string", "type", {"spec.detailedMonitoring": "true"}, False),
    ("EC2NodeClass", "ec2-tags-list", "type", {"spec.tags": ["a"]}, False),
    ("EC2NodeClass", "ec2-hop-limit-string", "type",
     {"spec.metadataOptions": {"httpPutResponseHopLimit": "2"}}, False),

    # Edges: how the API server reads a schema (nulls, defaults, int-or-string,
    # list-type set, unanchored patterns, date-time), an object written as a
    # list, and what the CEL rules let through (so tailor must too).
    ("NodePool", "np-weight-null", "nullable (null dropped)", {"spec.weight": None}, True),
    ("NodePool", "np-requirements-null", "required (null dropped)",
     {NP_T + ".requirements": None}, False),
    ("NodePool", "np-empty-requirements", "valid", {NP_T + ".requirements": []}, True),
    ("NodePool", "np-limit-quantities", "valid", {"spec.limits": {"cpu": "1e3", "memory": ".5Ti"}},
     True),
    ("NodePool", "np-limit-fraction", "type (int-or-string)", {"spec.limits": {"cpu": 1.5}}, False),
    ("NodePool", "np-weight-fraction", "type", {"spec.weight": 10.5}, False),
    ("NodePool", "np-disruption-list", "type", {"spec.disruption": []}, False),
    ("NodePool", "np-metadata-list", "type", {"spec.template.metadata": []}, False),
    ("NodePool", "np-reasons-twice", "uniqueItems (list-type set)", {"spec.disruption": {
        "consolidateAfter": "1m", "budgets": [{"nodes": "1", "reasons": ["Empty", "Empty"]}]}},
     False),
    ("NodePool", "np-consolidate-1h1s", "pattern", {"spec.disruption": {"consolidateAfter": "1h1s"}},
     True),
    ("NodePool", "np-budget-1h0s", "pattern", {"spec.disruption": {
        "consolidateAfter": "1m", "budgets": [{"nodes": "0%", "schedule": "@daily",
                                                "duration": "1h0s"}]}}, True),
    ("NodePool", "np-empty-expiry", "pattern", {NP_T + ".expireAfter": ""}, False),
    ("NodePool", "np-taint-time", "format (date-time)", {NP_T + ".taints": [
        {"key": "a", "effect": "NoSchedule", "timeAdded": "yesterday"}]}, False),
    ("NodePool", "np-taint-upper-domain", "pattern",
     {NP_T + ".taints": [{"key": "Example.com/a", "effect": "NoSchedule"}]}, False),
    ("NodePool", "np-taint-value-prefixed", "pattern",
     {NP_T + ".taints": [{"key": "a", "value": "example.com/b", "effect": "NoSchedule"}]}, True),
    ("NodePool", "np-minvalues-exists", "CEL lets through (only In is checked)",
     {NP_T + ".requirements": [REQ(operator="Exists", values=[], minValues=2)]}, True),
    ("NodePool", "np-gt-0", "CEL lets through",
     {NP_T + ".requirements": [REQ(key="karpenter.k8s.aws/instance-cpu", operator="Gt",
                                   values=["0"])]}, True),
    ("NodePool", "np-label-capacity-type", "CEL lets through",
     {"spec.template.metadata": {"labels": {"karpenter.sh/capacity-type": "spot"}}}, True),
    ("NodePool", "np-label-instance-family", "CEL lets through",
     {"spec.template.metadata": {"labels": {"karpenter.k8s.aws/instance-family": "m5"}}}, True),
    ("NodePool", "np-label-notkarpenter", "CEL (endsWith)",
     {"spec.template.metadata": {"labels": {"notkarpenter.sh/x": "x"}}}, True),
    ("NodePool", "np-req-notkarpenter", "CEL (endsWith)",
     {NP_T + ".requirements": [REQ(key="notkarpenter.k8s.aws/x")]}, True),
    ("NodePool", "np-req-nodepool", "CEL", {NP_T + ".requirements": [REQ(key="karpenter.sh/nodepool")]},
     True),
    ("NodePool", "np-values-space", "runtime", {NP_T + ".requirements": [REQ(values=["a b"])]}, True),
    ("NodePool", "np-values-64", "runtime", {NP_T + ".requirements": [REQ(values=["a" * 64])]}, True),
    ("NodePool", "np-label-key-space", "runtime",
     {"spec.template.metadata": {"labels": {"a b": "x"}}}, True),
    ("NodePool", "np-req-name-64", "runtime",
     {NP_T + ".requirements": [REQ(key="example.com/" + "a" * 64)]}, True),
    ("NodePool", "np-taint-key-name-64", "runtime",
     {NP_T + ".taints": [{"key": "example.com/" + "a" * 64, "effect": "NoSchedule"}]}, True),
    ("NodePool", "np-taint-value-64", "runtime",
     {NP_T + ".taints": [{"key": "a", "value": "a" * 64, "effect": "NoSchedule"}]}, True),
    ("NodeClaim", "nc-request-fraction", "type (int-or-string)",
     {"spec.resources": {"requests": {"cpu": 0.5}}}, False),
    ("NodeClaim", "nc-resources-list", "type", {"spec.resources": []}, False),
    ("NodeClaim", "nc-req-nodepool", "CEL lets through (NodeClaims may name their pool)",
     {NC_REQ0: REQ(key="karpenter.sh/nodepool")}, True),
    ("EC2NodeClass", "ec2-null-ami-terms", "required (null dropped)", {AMI: None}, False),
    ("EC2NodeClass", "ec2-role-null", "CEL (null dropped: neither role nor instanceProfile)",
     {"spec.role": None}, True),
    ("EC2NodeClass", "ec2-metadata-defaults", "valid (defaults)", {"spec.metadataOptions": {}}, True),
    ("EC2NodeClass", "ec2-hop-limit-64", "maximum", {"spec.metadataOptions": {
        "httpPutResponseHopLimit": 64}}, True),
    ("EC2NodeClass", "ec2-alias-30", "maxLength", {AMI: [{"alias": "al2023@v" + "1" * 22}]}, True),
    ("EC2NodeClass", "ec2-ami-id-unanchored", "pattern (unanchored)",
     {AMI: [{"id": "xami-1"}], "spec.amiFamily": "AL2023"}, True),
    ("EC2NodeClass", "ec2-subnet-id-unanchored", "pattern (unanchored)",
     {"spec.subnetSelectorTerms": [{"id": "subnet-0A"}]}, True),
    ("EC2NodeClass", "ec2-volume-58Ti", "pattern", {"spec.blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "58Ti"}}]}, True),
    ("EC2NodeClass", "ec2-volume-18Ti", "pattern (the CRD's Ti ranges skip 18, 19, 28, ...)",
     {"spec.blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "18Ti"}}]},
     False),
    ("EC2NodeClass", "ec2-volume-bare-Ti", "pattern (an empty alternative)",
     {"spec.blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "Ti"}}]},
     True),
    ("EC2NodeClass", "ec2-volume-int", "type", {"spec.blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": 20}}]}, False),
    ("EC2NodeClass", "ec2-ebs-list", "type", {"spec.blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": []}]}, False),
    ("EC2NodeClass", "ec2-subnet-terms-mixed", "CEL lets through (self.all)",
     {"spec.subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}, {"tags": {"a": "b"}}]},
     True),
    ("EC2NodeClass", "ec2-sg-terms-mixed", "CEL lets through (self.all)",
     {"spec.securityGroupSelectorTerms": [{"id": "sg-1", "name": "x"}, {"tags": {"a": "b"}}]}, True),
    ("EC2NodeClass", "ec2-cr-terms-mixed", "CEL lets through (self.all)",
     {"spec.capacityReservationSelectorTerms": [{"id": "cr-1", "ownerID": "123456789012"},
                                                {"tags": {"a": "b"}}]}, True),
    ("EC2NodeClass", "ec2-alias-custom-family", "CEL lets through",
     {AMI: [{"alias": "al2@latest"}], "spec.amiFamily": "Custom"}, True),
    ("EC2NodeClass", "ec2-alias-two-ats", "CEL lets through", {AMI: [{"alias": "al2023@latest@x"}]},
     True),
    ("EC2NodeClass", "ec2-alias-upper", "CEL (family not supported)",
     {AMI: [{"alias": "AL2023@latest"}]}, True),
    ("EC2NodeClass", "ec2-tag-cluster-prefix", "CEL (startsWith)",
     {"spec.tags": {"kubernetes.io/cluster-x": "a"}}, True),
    ("EC2NodeClass", "ec2-tag-empty-value", "CEL lets through", {"spec.tags": {"a": ""}}, True),
    ("EC2NodeClass", "ec2-efa-interface", "CEL lets through", {"spec.networkInterfaces": [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}]}, True),
    ("EC2NodeClass", "ec2-kubelet-open", "preserve-unknown-fields",
     {"spec.kubelet": {"fooBar": 1, "maxPods": 58}}, True),
    ("EC2NodeClass", "ec2-kubelet-negative", "runtime", {"spec.kubelet": {"maxPods": -1}}, True),
]

# Objects tailor refuses although the OpenAPI schema accepts them: its own
# refusals and the CEL rules.  name -> why.  The fixtures' objects are named
# by file:name.
CEL = "a CEL rule refuses it: "
RUNTIME = "Karpenter's runtime validation (RuntimeValidate) refuses it, not the CRD: "
TAILOR_ONLY = {
    "bad.yaml:restricted-label": CEL + 'label "karpenter.sh/nodepool" is restricted',
    "bad.yaml:static": "tailor refuses static NodePools (spec.replicas): it only provisions "
                       "dynamically",
    "np-label-notkarpenter": CEL + 'label domain "karpenter.sh" (its endsWith matches '
                                   'notkarpenter.sh too)',
    "np-req-notkarpenter": CEL + 'label domain "karpenter.k8s.aws" (endsWith)',
    "np-req-nodepool": CEL + 'label "karpenter.sh/nodepool" is restricted',
    "ec2-role-null": CEL + "must specify exactly one of ['role', 'instanceProfile']",
    "ec2-alias-upper": CEL + "family is not supported (the family is case-sensitive)",
    "ec2-tag-cluster-prefix": CEL + "kubernetes.io/cluster/ (the rule is startsWith("
                                    "'kubernetes.io/cluster'))",
    "np-values-space": RUNTIME + "a requirement value must be a label value; the CRD's pattern "
                                 "sits on the values list, where the API server does not apply it",
    "np-values-64": RUNTIME + "a label value is at most 63 characters (maxLength on the list)",
    "np-label-key-space": RUNTIME + "a template label key must be a qualified name",
    "np-req-name-64": RUNTIME + "a requirement key must be a qualified name (name part <= 63)",
    "np-taint-key-name-64": RUNTIME + "a taint key must be a qualified name (name part <= 63)",
    "np-taint-value-64": RUNTIME + "a taint value must be a qualified name (<= 63)",
    "ec2-kubelet-negative": "Karpenter validates the kubelet map in its controller "
                            "(kubeletconfiguration_validation.go); the CRD keeps it open",
    "ec2-volume-bare-Ti": "the CRD's volumeSize pattern has an empty alternative "
                          "(([1-9]||[1-5][0-7]|58)Ti) that lets a bare Ti through; it is no "
                          "quantity and Karpenter cannot decode it either",
}

# CEL rules that compare with the stored object: one manifest cannot break them.
TRANSITION_RULES = {
    ("NodePool", "Cannot transition NodePool between static (replicas set) and dynamic "
                 "(replicas unset) provisioning modes"),
    ("NodePool", "nodeClassRef.group is immutable"),
    ("NodePool", "nodeClassRef.kind is immutable"),
    ("NodeClaim", "spec is immutable"),
}

NP_REQ = NP_T + ".requirements"
NP_LABELS = "spec.template.metadata"

# (kind, CEL message, mutation that breaks only that rule, tailorctl error substring)
CEL_CASES = [
    # NodePool
    ("NodePool", "only 'limits.nodes' is supported on static NodePools",
     {"spec.replicas": 2, "spec.limits": {"cpu": "10"}}, "static NodePools"),
    ("NodePool", "'weight' is not supported on static NodePools",
     {"spec.replicas": 2, "spec.weight": 5}, "static NodePools"),
    ("NodePool", "'schedule' must be set with 'duration'",
     {"spec.disruption": {"consolidateAfter": "1m", "budgets": [{"nodes": "1",
                                                                 "schedule": "@daily"}]}},
     "schedule and duration must be set together"),
    ("NodePool", "label domain \"karpenter.sh\" is restricted",
     {NP_LABELS: {"labels": {"karpenter.sh/custom": "x"}}}, 'label domain "karpenter.sh" is restricted'),
    ("NodePool", "label \"karpenter.sh/nodepool\" is restricted",
     {NP_LABELS: {"labels": {"karpenter.sh/nodepool": "x"}}}, 'label "karpenter.sh/nodepool" is restricted'),
    ("NodePool", "label \"kubernetes.io/hostname\" is restricted",
     {NP_LABELS: {"labels": {"kubernetes.io/hostname": "x"}}}, 'label "kubernetes.io/hostname" is restricted'),
    ("NodePool", "label domain \"karpenter.k8s.aws\" is restricted",
     {NP_LABELS: {"labels": {"karpenter.k8s.aws/custom": "x"}}}, 'label domain "karpenter.k8s.aws" is restricted'),
    ("NodePool", "group may not be empty", {NP_T + ".nodeClassRef.group": ""},
     "group may not be empty"),
    ("NodePool", "kind may not be empty", {NP_T + ".nodeClassRef.kind": ""},
     "kind may not be empty"),
    ("NodePool", "name may not be empty", {NP_T + ".nodeClassRef.name": ""},
     "name may not be empty"),
    ("NodePool", "requirements with operator 'In' must have a value defined",
     {NP_REQ: [REQ(values=[])]}, "operator In needs at least one value"),
    ("NodePool", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single "
                 "positive integer value",
     {NP_REQ: [REQ(key="karpenter.k8s.aws/instance-cpu", operator="Gt", values=["-1"])]},
     "single non-negative integer value"),
    ("NodePool", "requirements with 'minValues' must have at least that many values "
                 "specified in the 'values' field",
     {NP_REQ: [REQ(values=["m5", "c5"], minValues=3)]},
     "minValues is larger than the number of values"),
    # NodeClaim
    ("NodeClaim", "group may not be empty", {"spec.nodeClassRef.group": ""},
     "group may not be empty"),
    ("NodeClaim", "kind may not be empty", {"spec.nodeClassRef.kind": ""},
     "kind may not be empty"),
    ("NodeClaim", "name may not be empty", {"spec.nodeClassRef.name": ""},
     "name may not be empty"),
    ("NodeClaim", "requirements with operator 'In' must have a value defined",
     {NC_REQ0: REQ(values=[])}, "operator In needs at least one value"),
    ("NodeClaim", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single "
                  "positive integer value",
     {NC_REQ0: REQ(key="karpenter.k8s.aws/instance-cpu", operator="Lt", values=["4", "8"])},
     "operator Lt needs exactly one integer value"),
    ("NodeClaim", "requirements with 'minValues' must have at least that many values "
                  "specified in the 'values' field",
     {NC_REQ0: REQ(values=["m5"], minValues=2)}, "minValues is larger than the number of values"),
    ("NodeClaim", "label domain \"karpenter.sh\" is restricted",
     {NC_REQ0: REQ(key="karpenter.sh/custom")}, 'label domain "karpenter.sh" is restricted'),
    ("NodeClaim", "label \"kubernetes.io/hostname\" is restricted",
     {NC_REQ0: REQ(key="kubernetes.io/hostname")}, 'label "kubernetes.io/hostname" is restricted'),
    ("NodeClaim", "label domain \"karpenter.k8s.aws\" is restricted",
     {NC_REQ0: REQ(key="karpenter.k8s.aws/custom")}, 'label domain "karpenter.k8s.aws" is restricted'),
    # EC2NodeClass
    ("EC2NodeClass", "must specify exactly one of ['role', 'instanceProfile']",
     {"spec.instanceProfile": "Profile"}, "exactly one of role and instanceProfile must be set"),
    ("EC2NodeClass", "if set, amiFamily must be 'AL2' or 'Custom' when using an AL2 alias",
     {AMI: [{"alias": "al2@latest"}], "spec.amiFamily": "AL2023"}, "must be 'AL2' or 'Custom'"),
    ("EC2NodeClass", "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias",
     {"spec.amiFamily": "AL2"}, "must be 'AL2023' or 'Custom'"),
    ("EC2NodeClass", "if set, amiFamily must be 'Bottlerocket' or 'Custom' when using a "
                     "Bottlerocket alias",
     {AMI: [{"alias": "bottlerocket@latest"}], "spec.amiFamily": "AL2"},
     "must be 'Bottlerocket' or 'Custom'"),
    ("EC2NodeClass", "if set, amiFamily must be 'Windows2019' or 'Custom' when using a "
                     "Windows2019 alias",
     {AMI: [{"alias": "windows2019@latest"}], "spec.amiFamily": "Windows2022"},
     "must be 'Windows2019' or 'Custom'"),
    ("EC2NodeClass", "if set, amiFamily must be 'Windows2022' or 'Custom' when using a "
                     "Windows2022 alias",
     {AMI: [{"alias": "windows2022@latest"}], "spec.amiFamily": "Windows2019"},
     "must be 'Windows2022' or 'Custom'"),
    ("EC2NodeClass", "if set, amiFamily must be 'Windows2025' or 'Custom' when using a "
                     "Windows2025 alias",
     {AMI: [{"alias": "windows2025@latest"}], "spec.amiFamily": "Windows2022"},
     "must be 'Windows2025' or 'Custom'"),
    ("EC2NodeClass", "must specify amiFamily if amiSelectorTerms does not contain an alias",
     {AMI: [{"id": "ami-123"}]}, "must be set when amiSelectorTerms has no alias"),
    ("EC2NodeClass", "expected at least one, got none, ['tags', 'id', 'name', 'alias', "
                     "'ssmParameter']",
     {AMI: [{"owner": "self"}], "spec.amiFamily": "AL2023"},
     "a term must set alias, id, name, tags or ssmParameter"),
    ("EC2NodeClass", "'id' is mutually exclusive, cannot be set with a combination of other "
                     "fields in amiSelectorTerms",
     {AMI: [{"id": "ami-123", "owner": "self"}], "spec.amiFamily": "AL2023"},
     "'id' is mutually exclusive"),
    ("EC2NodeClass", "'alias' is mutually exclusive, cannot be set with a combination of other "
                     "fields in amiSelectorTerms",
     {AMI: [{"alias": "al2023@latest", "owner": "self"}]},
     "alias must be the only term and the only field"),
    ("EC2NodeClass", "'alias' is mutually exclusive, cannot be set with a combination of other "
                     "amiSelectorTerms",
     {AMI: [{"alias": "al2023@latest"}, {"id": "ami-123"}]},
     "alias must be the only term and the only field"),
    ("EC2NodeClass", "'alias' is improperly formatted, must match the format 'family@version'",
     {AMI: [{"alias": "al2023"}]}, "is not family@version"),
    ("EC2NodeClass", "family is not supported, must be one of the following: 'al2', 'al2023', "
                     "'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
     {AMI: [{"alias": "ubuntu@latest"}], "spec.amiFamily": "Custom"},
     "is not one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025"),
    ("EC2NodeClass", "windows families may only specify version 'latest'",
     {AMI: [{"alias": "windows2022@v20240101"}]},
     "windows families may only specify version 'latest'"),
    ("EC2NodeClass", "empty tag keys or values aren't supported",
     {"spec.subnetSelectorTerms": [{"tags": {"a": ""}}]},
     "empty tag keys or values aren't supported"),
    ("EC2NodeClass", "must have only one blockDeviceMappings with rootVolume",
     {"spec.blockDeviceMappings": [
         {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
         {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}}]},
     "must have only one blockDeviceMappings with rootVolume"),
    ("EC2NodeClass", "snapshotID or volumeSize must be defined",
     {"spec.blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeType": "gp3"}}]},
     "snapshotID or volumeSize must be defined"),
    ("EC2NodeClass", "snapshotID must be set when volumeInitializationRate is set",
     {"spec.blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {
         "volumeSize": "20Gi", "volumeInitializationRate": 200}}]},
     "snapshotID must be set when volumeInitializationRate is set"),
    ("EC2NodeClass", "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",
     {"spec.capacityReservationSelectorTerms": [{"ownerID": "123456789012"}]},
     "a term must set id, instanceMatchCriteria or tags"),
    ("EC2NodeClass", "'id' is mutually exclusive, cannot be set along with other fields in a "
                     "capacity reservation selector term",
     {"spec.capacityReservationSelectorTerms": [{"id": "cr-123", "ownerID": "123456789012"}]},
     "'id' is mutually exclusive"),
    ("EC2NodeClass", "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout "
                     "must be set", {"spec.connectionTracking": {}},
     "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"),
    ("EC2NodeClass", "instanceProfile cannot be empty",
     {"spec.role": DEL, "spec.instanceProfile": ""}, "spec.instanceProfile: cannot be empty"),
    ("EC2NodeClass", "networkInterfaces must include a primary interface with "
                     "interfaceType='interface'",
     {"spec.networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0,
                                  "interfaceType": "efa-only"}]},
     "networkInterfaces must include a primary interface"),
    ("EC2NodeClass", "networkInterfaces must not have duplicate networkCardIndex and "
                     "deviceIndex pairs, and can have at most one efa device per network card",
     {"spec.networkInterfaces": [
         {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
         {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]},
     "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs"),
    ("EC2NodeClass", "expected at least one, got none, ['name', 'id']",
     {"spec.placementGroupSelector": {}}, "set exactly one of name and id"),
    ("EC2NodeClass", "'name' and 'id' are mutually exclusive",
     {"spec.placementGroupSelector": {"name": "pg", "id": "pg-123"}},
     "set exactly one of name and id"),
    ("EC2NodeClass", "role cannot be empty", {"spec.role": ""}, "spec.role: cannot be empty"),
    ("EC2NodeClass", "securityGroupSelectorTerms cannot be empty",
     {"spec.securityGroupSelectorTerms": []},
     "spec.securityGroupSelectorTerms: at least one term is required"),
    ("EC2NodeClass", "expected at least one, got none, ['tags', 'id', 'name']",
     {"spec.securityGroupSelectorTerms": [{}]}, "a term must set id, name or tags"),
    ("EC2NodeClass", "'id' is mutually exclusive, cannot be set with a combination of other "
                     "fields in a security group selector term",
     {"spec.securityGroupSelectorTerms": [{"id": "sg-123", "name": "nodes"}]},
     "'id' is mutually exclusive"),
    ("EC2NodeClass", "'name' is mutually exclusive, cannot be set with a combination of other "
                     "fields in a security group selector term",
     {"spec.securityGroupSelectorTerms": [{"name": "nodes", "tags": {"a": "b"}}]},
     "'name' is mutually exclusive"),
    ("EC2NodeClass", "subnetSelectorTerms cannot be empty",
     {"spec.subnetSelectorTerms": []}, "spec.subnetSelectorTerms: at least one term is required"),
    ("EC2NodeClass", "expected at least one, got none, ['tags', 'id']",
     {"spec.subnetSelectorTerms": [{}]}, "a term must set id or tags"),
    ("EC2NodeClass", "'id' is mutually exclusive, cannot be set with a combination of other "
                     "fields in a subnet selector term",
     {"spec.subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}]},
     "'id' is mutually exclusive"),
    ("EC2NodeClass", "empty tag keys aren't supported", {"spec.tags": {"": "x"}},
     "empty tag keys aren't supported"),
    ("EC2NodeClass", "tag contains a restricted tag matching eks:eks-cluster-name",
     {"spec.tags": {"eks:eks-cluster-name": "x"}},
     "restricted tag matching eks:eks-cluster-name"),
    ("EC2NodeClass", "tag contains a restricted tag matching kubernetes.io/cluster/",
     {"spec.tags": {"kubernetes.io/cluster/demo": "owned"}},
     "restricted tag matching kubernetes.io/cluster"),
    ("EC2NodeClass", "tag contains a restricted tag matching karpenter.sh/nodepool",
     {"spec.tags": {"karpenter.sh/nodepool": "x"}}, "restricted tag matching karpenter.sh/nodepool"),
    ("EC2NodeClass", "tag contains a restricted tag matching karpenter.sh/nodeclaim",
     {"spec.tags": {"karpenter.sh/nodeclaim": "x"}},
     "restricted tag matching karpenter.sh/nodeclaim"),
    ("EC2NodeClass", "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass",
     {"spec.tags": {"karpenter.k8s.aws/ec2nodeclass": "x"}},
     "restricted tag matching karpenter.k8s.aws/ec2nodeclass"),
]

# --- running -------------------------------------------------------------------

def tailor_errors(tctl, objs, work, fname):
    """{(kind, name): [error messages]} from tailorctl validate -o json on objs"""
    path = os.path.join(work, fname)
    with open(path, "w") as f:
        yaml.safe_dump_all(objs, f, sort_keys=False)
    p = subprocess.run([tctl, "validate", "-o", "json", "--fail-on", "never", path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"tailorctl validate {path}: exit {p.returncode}: {p.stderr}")
    out = {}
    for f in json.loads(p.stdout)["findings"]:
        if f["severity"] == "error":
            out.setdefault((f["kind"], f["name"]), []).append(f["message"])
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tctl, crd_dir = argv[1], argv[2]
    crds = load_crds(crd_dir)
    failed = 0
    checks = 0

    def check(ok, what):
        nonlocal failed, checks
        checks += 1
        if not ok:
            failed += 1
            print(f"FAIL: {what}")

    with tempfile.TemporaryDirectory() as work:
        # 1. OpenAPI: the fixtures and CASES through both
        corpus = []   # (label, object, expected schema verdict or None)
        for path in sorted(glob.glob(os.path.join(FIXTURES, "*.yaml"))):
            with open(path) as f:
                for o in yaml.safe_load_all(f):
                    if o and o.get("kind") in CRD_FILES:
                        corpus.append((f"{os.path.basename(path)}:{o['metadata']['name']}", o, None))
        for kind, name, family, muts, ok in CASES:
            corpus.append((name, make(kind, name, muts), ok))
        families = {(k, fam.split(" ")[0]) for k, _, fam, _, ok in CASES if not ok}
        for kind in CRD_FILES:
            for fam in ("required", "enum", "pattern", "maxItems", "type"):
                check((kind, fam) in families, f"{kind}: a case for the {fam} rules")
        # the fixture files are validated as they are, so names stay per file
        verdicts = {}
        for path in sorted(glob.glob(os.path.join(FIXTURES, "*.yaml"))):
            with open(path) as f:
                objs = [o for o in yaml.safe_load_all(f) if o and o.get("kind") in CRD_FILES]
            got = tailor_errors(tctl, objs, work, os.path.basename(path))
            for o in objs:
                verdicts[f"{os.path.basename(path)}:{o['metadata']['name']}"] = \
                    got.get((o["kind"], o["metadata"]["name"]), [])
        got = tailor_errors(tctl, [o for label, o, _ in corpus if ":" not in label], work,
                            "cases.yaml")
        for label, o, _ in corpus:
            if ":" not in label:
                verdicts[label] = got.get((o["kind"], label), [])
        agree = 0
        for label, o, want in corpus:
            serr = schema_errors(crds, o)
            terr = verdicts[label]
            if want is not None:
                check((not serr) == want, f"{o['kind']} {label}: schema "
                      f"{'accepts' if not serr else 'refuses'} it, the case says it "
                      f"{'accepts' if want else 'refuses'} ({serr})")
            if label in TAILOR_ONLY:
                check(not serr and terr, f"{o['kind']} {label}: listed as refused by tailor "
                      f"only, but schema errors {serr}, tailor errors {terr}")
                continue
            same = bool(serr) == bool(terr)
            agree += same
            check(same, f"{o['kind']} {label}: schema {serr or 'accepts'}; tailorctl "
                        f"{terr or 'accepts'}")
        print(f"OpenAPI: {agree} of {len(corpus) - len(TAILOR_ONLY)} objects judged alike "
              f"by the schema and tailorctl validate ({len(TAILOR_ONLY)} refused by tailor only)")

        # 2. CEL: every rule message has a case tailor refuses
        rules = cel_messages(crds)
        table = {(k, m) for k, m, _, _ in CEL_CASES}
        for kind, msg, rule in rules:
            check((kind, msg) in table or (kind, msg) in TRANSITION_RULES,
                  f"{kind}: CEL rule without a case in CEL_CASES: {msg!r} ({rule})")
        crd_msgs = {(k, m) for k, m, _ in rules}
        for key in sorted(table | TRANSITION_RULES):
            check(key in crd_msgs, f"{key[0]}: no CEL rule in the CRDs says {key[1]!r}")
        objs = [make(k, f"cel-{i}", muts) for i, (k, _, muts, _) in enumerate(CEL_CASES)]
        got = tailor_errors(tctl, objs, work, "cel.yaml")
        refused = 0
        for o, (kind, msg, _, want) in zip(objs, CEL_CASES):
            name = o["metadata"]["name"]
            serr = schema_errors(crds, o)
            check(not serr, f"{kind} {name} ({msg}): breaks OpenAPI rules too: {serr}")
            terr = got.get((kind, name), [])
            ok = any(want in e for e in terr)
            refused += ok
            check(ok, f"{kind} {name}: CEL {msg!r}: want a tailorctl error with {want!r}, "
                      f"got {terr or 'none'}")
        print(f"CEL: {refused} of {len(CEL_CASES)} rule cases refused by tailorctl validate "
              f"({len(rules)} rules in the CRDs, {len(TRANSITION_RULES)} transition rules "
              f"not checkable on one object)")
    print(f"{checks - failed} of {checks} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
