#!/usr/bin/python3
"""check.py STATE_JSON CLUSTER - what a user would check after provisioning.

STATE_JSON is `kubectl get pods,nodes,nodeclaims,events -A -o json`; EC2
is read from moto (AWS_ENDPOINT_URL, the shared credentials file) with
botocore.  Prints one JSON object of figures:

  instances       live (pending/running) EC2 instances tailor launched
                  (tagged karpenter.sh/nodepool for the cluster)
  claims, nodes   NodeClaims (not being deleted), Nodes
  leaked          instances no NodeClaim's providerID names
  claims_without_instance, instances_without_node, duplicate_claims
                  (two NodeClaims naming one instance)
  pods, running   pods, Running pods
  double_provisioned  pods nominated onto a second NodeClaim while the
                  first, still in flight (its Node not up yet), went on to
                  get an instance too: capacity bought twice for one pod;
                  double_how: the first five (pod, both claims, when)
  reprovisioned   pods nominated onto a second NodeClaim after the first
                  one's Node was up: the scheduler gave their room to other
                  pods, so they needed new capacity (not a double launch)
  zones           {zone: nodes}; capacity_types {spot|on-demand: nodes}
  types           {instance type: nodes}; cpu (vCPUs of the nodes)
  spread_skew     for pods labelled app=<spread>: max - min pods per zone
"""
import json
import os
import sys
from collections import Counter, defaultdict

import botocore.session


def main():
    state = json.load(open(sys.argv[1]))
    cluster = sys.argv[2]
    spread_app = sys.argv[3] if len(sys.argv) > 3 else ""
    items = state.get("items", [])
    kinds = defaultdict(list)
    for it in items:
        kinds[it.get("kind")].append(it)

    ec2 = botocore.session.get_session().create_client(
        "ec2", region_name=os.environ.get("AWS_REGION", "us-east-1"),
        endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    inst = {}
    pages = ec2.get_paginator("describe_instances").paginate(Filters=[
        {"Name": "instance-state-name", "Values": ["pending", "running"]},
        {"Name": "tag-key", "Values": ["karpenter.sh/nodepool"]}])
    for page in pages:
        for r in page["Reservations"]:
            for i in r["Instances"]:
                tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                if tags.get("kubernetes.io/cluster/" + cluster) is None:
                    continue
                inst[i["InstanceId"]] = i

    def iid(pid):
        return pid.rsplit("/", 1)[-1] if pid else ""

    claims = [c for c in kinds["NodeClaim"] if not c["metadata"].get("deletionTimestamp")]
    claim_inst = [iid(c.get("status", {}).get("providerID", "")) for c in claims]
    by_inst = Counter(x for x in claim_inst if x)
    nodes = kinds["Node"]
    node_inst = {iid(n.get("spec", {}).get("providerID", "")) for n in nodes}
    live_claims = {c["metadata"]["name"] for c, x in zip(claims, claim_inst) if x in inst}

    def ts(t):
        from datetime import datetime
        return datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ").timestamp() if t else None

    node_up = {}   # claim -> when its Node was created
    by_pid = {n.get("spec", {}).get("providerID", ""): n for n in nodes}
    for c in claims:
        n = by_pid.get(c.get("status", {}).get("providerID", ""))
        if n:
            node_up[c["metadata"]["name"]] = ts(n["metadata"].get("creationTimestamp"))
    nominated = defaultdict(list)
    for e in kinds["Event"]:
        if e.get("reason") != "Nominated":
            continue
        msg = e.get("message", "")
        if "nodeclaim/" in msg:
            key = e["involvedObject"].get("uid") or e["involvedObject"]["name"]
            nominated[key].append((ts(e.get("firstTimestamp") or e.get("eventTime")),
                                   msg.split("nodeclaim/", 1)[1].strip()))
    double, reprov, double_how = [], [], []
    for p, noms in nominated.items():
        noms.sort()
        first_of = {}
        for t, c in noms:
            first_of.setdefault(c, t)
        order = sorted(first_of.items(), key=lambda x: x[1])
        for (a, ta), (b, tb) in zip(order, order[1:]):
            if a not in live_claims or b not in live_claims:
                continue
            up = node_up.get(a)
            if up is not None and up <= tb:
                reprov.append(p)
            else:
                double.append(p)
                double_how.append({"pod": p, "first": a, "first_at": ta, "second": b,
                                   "second_at": tb, "first_node_up": up})
            break
    pods = kinds["Pod"]
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
    node_of = {n["metadata"]["name"]: n for n in nodes}
    zones, cts, types = Counter(), Counter(), Counter()
    cpu = 0
    for n in nodes:
        lab = n["metadata"].get("labels", {})
        zones[lab.get("topology.kubernetes.io/zone", "")] += 1
        cts[lab.get("karpenter.sh/capacity-type", "")] += 1
        types[lab.get("node.kubernetes.io/instance-type", "")] += 1
        c = n.get("status", {}).get("capacity", {}).get("cpu", "0")
        cpu += float(c[:-1]) / 1000 if c.endswith("m") else float(c)
    skew = None
    if spread_app:
        per = Counter()
        for p in running:
            if p["metadata"].get("labels", {}).get("app") == spread_app:
                nd = node_of.get(p["spec"].get("nodeName", ""))
                per[nd["metadata"]["labels"].get("topology.kubernetes.io/zone", "") if nd else ""] += 1
        if per:
            vals = [per.get(z, 0) for z in zones] or [0]
            skew = max(vals) - min(vals)
    out = {
        "instances": len(inst), "claims": len(claims), "nodes": len(nodes),
        "leaked": sorted(set(inst) - {x for x in claim_inst if x}),
        "claims_without_instance": sorted(c["metadata"]["name"] for c, x in zip(claims, claim_inst)
                                          if x not in inst),
        "instances_without_node": sorted(set(inst) - node_inst),
        "duplicate_claims": sorted(x for x, n in by_inst.items() if n > 1),
        "pods": len(pods), "running": len(running),
        "double_provisioned": len(double), "reprovisioned": len(reprov),
        "double_how": double_how[:5],
        "zones": dict(zones), "capacity_types": dict(cts), "types": dict(types),
        "cpu": cpu, "spread_skew": skew,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
