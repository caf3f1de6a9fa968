#!/usr/bin/env python3
"""report_fixture.py OUT_DIR - a demo output folder, as scripts/demo.sh
writes it, for scripts/demo-report.py: four acts over about 130 s, six
NodeClaims with their lifecycles (four of them disrupted: consolidation,
emptiness, a spot interruption, drift; their NodeClaims deleted), their
Nodes, the decisions, samples every half second and a final.json.  Prints
the number of nodes left at the end.

Everything is derived from one list of NodeClaims and their milestones,
so the samples, the watch events and final.json agree with each other.
"""
import datetime
import json
import os
import sys

T0 = datetime.datetime(2026, 1, 15, 10, 0, 0, tzinfo=datetime.timezone.utc).timestamp()
PRICES = {"m5.large": 0.096, "m5.xlarge": 0.192, "c5.large": 0.085, "r5.large": 0.126,
          "c5.xlarge": 0.17}
PODS_PER = {"m5.large": 10, "m5.xlarge": 20, "c5.large": 8, "r5.large": 10, "c5.xlarge": 16}
SPOT = 0.4
ACTS = [
    (1, "provision a burst", 5.0, 40.0),
    (2, "scale down and consolidate under a PDB", 40.0, 70.0),
    (3, "spot interruption via SQS", 70.0, 95.0),
    (4, "AMI drift rotation", 95.0, 130.0),
]
DESIRED = [(0.0, 0), (5.0, 44), (40.0, 22), (130.0, 22)]  # pods wanted from t on
# name, type, capacity, zone, created, launched, registered, initialized,
# drained, terminated, decision reason, decision message
CLAIMS = [
    ("default-7xkq2", "m5.large", "on-demand", "us-east-1a", 6.0, 7.8, 12.1, 14.0, 100.2, 108.6,
     "Drifted", "drifted: node runs image ami-0a1b2c3d; EC2NodeClass default now resolves to "
     "ami-0f9e8d7c (AMI drift); replaced by default-q8w3n"),
    ("default-m4ztp", "m5.xlarge", "on-demand", "us-east-1b", 6.1, 8.0, 12.6, 14.4, 47.3, 56.9,
     "Underutilized", "consolidation: delete m5.xlarge default-m4ztp ($0.1920/h): its 6 pods fit "
     "on the other nodes; saves $0.1920/h; PDB web allows 1 disruption"),
    ("default-c9vbd", "c5.large", "spot", "us-east-1c", 6.1, 7.9, 12.3, 14.2, 72.4, 78.8,
     "Interrupted", "interruption: EC2 spot interruption warning for i-0c9vbd (SQS message "
     "3f2a...); node drained ahead of the reclaim; replacement default-h2j6r"),
    ("default-r2s8l", "r5.large", "on-demand", "us-east-1a", 6.2, 8.2, 12.9, 14.9, 50.1, 53.0,
     "Empty", "emptiness: r5.large default-r2s8l has had no pods for 5s (consolidateAfter 5s); "
     "delete saves $0.1260/h"),
    ("default-p5fgt", "m5.large", "spot", "us-east-1b", 6.3, 8.1, 12.4, 14.6, None, None, "", ""),
    ("default-h2j6r", "c5.large", "spot", "us-east-1b", 72.6, 74.3, 78.1, 79.9, None, None, "", ""),
    ("default-q8w3n", "m5.large", "on-demand", "us-east-1c", 97.2, 99.0, 103.4, 105.1, None, None,
     "", ""),
]


def rfc(t):
    return datetime.datetime.fromtimestamp(int(T0 + t), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def node_name(c):
    return "ip-10-0-%d-%d.ec2.internal" % (CLAIMS.index(c) + 1, 17 + 3 * CLAIMS.index(c))


def claim_obj(c, t):
    name, it, cap, zone, cr, la, re, ini, dr, te = c[:10]
    conds = []
    for key, when in (("Launched", la), ("Registered", re), ("Initialized", ini)):
        if when is not None and when <= t:
            conds.append({"type": key, "status": "True", "reason": key, "message": "",
                          "lastTransitionTime": rfc(when)})
    if c[10] == "Drifted" and dr is not None and dr - 2 <= t:
        conds.append({"type": "Drifted", "status": "True", "reason": "AMIDrift", "message": "",
                      "lastTransitionTime": rfc(dr - 2)})
    md = {"name": name, "uid": "uid-" + name, "creationTimestamp": rfc(cr),
          "labels": {"node.kubernetes.io/instance-type": it, "karpenter.sh/capacity-type": cap,
                     "karpenter.sh/nodepool": "default", "topology.kubernetes.io/zone": zone},
          "finalizers": ["karpenter.sh/termination"]}
    if dr is not None and dr <= t:
        md["deletionTimestamp"] = rfc(dr)
    status = {"conditions": conds}
    if la <= t:
        status["providerID"] = f"aws:///{zone}/i-0{name[-5:]}"
        status["imageID"] = "ami-0a1b2c3d" if cr < 95 else "ami-0f9e8d7c"
    if re <= t:
        status["nodeName"] = node_name(c)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": md,
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}},
            "status": status}


def node_obj(c, t):
    name, it, cap, zone, cr, la, re, ini, dr, te = c[:10]
    taints = []
    if dr is not None and dr <= t:
        taints.append({"key": "karpenter.sh/disrupted", "effect": "NoSchedule"})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node_name(c), "creationTimestamp": rfc(re),
                         "labels": {"node.kubernetes.io/instance-type": it,
                                    "karpenter.sh/capacity-type": cap,
                                    "karpenter.sh/nodepool": "default",
                                    "topology.kubernetes.io/zone": zone,
                                    "kubernetes.io/hostname": node_name(c)}},
            "spec": {"providerID": f"aws:///{zone}/i-0{name[-5:]}", "taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ini <= t else "False"}]}}


def alive(c, t, start):  # from milestone index `start` until terminated
    return c[start] <= t and (c[9] is None or t < c[9])


def desired(t):
    return [n for at, n in DESIRED if at <= t][-1]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "prices.tsv"), "w") as f:
        for k, v in sorted(PRICES.items()):
            f.write(f"{k}\t{v}\n")

    samples = []
    t = 0.0
    while t <= 130.0:
        nodes = [c for c in CLAIMS if alive(c, t, 6)]
        serving = [c for c in CLAIMS if alive(c, t, 7) and (c[8] is None or t < c[8])]
        want = desired(t)
        running = min(want, sum(PODS_PER[c[1]] for c in serving))
        by_type, by_cap = {}, {}
        for c in nodes:
            by_type[c[1]] = by_type.get(c[1], 0) + 1
            by_cap[c[2]] = by_cap.get(c[2], 0) + 1
        cost = sum(PRICES[c[1]] * (SPOT if c[2] == "spot" else 1) for c in nodes)
        act = [a for a, _, s, e in ACTS if s <= t] or [0]
        samples.append({"t": round(t, 2), "act": act[-1],
                        "pods": {"pending": want - running, "running": running, "total": want},
                        "claims": sum(1 for c in CLAIMS if alive(c, t, 4)),
                        "nodes": {"total": len(nodes), "by_type": by_type,
                                  "by_capacity_type": by_cap},
                        "cost_per_hour": round(cost, 4)})
        t += 0.5
    with open(os.path.join(out, "samples.jsonl"), "w") as f:
        for s in samples:
            f.write(json.dumps(s) + "\n")

    def cost_at(t):
        return min(samples, key=lambda s: abs(s["t"] - t))["cost_per_hour"]

    acts = []
    for n, name, s, e in ACTS:
        acts.append({"act": n, "name": name, "start": s, "end": e, "ok": True,
                     "launched": sum(1 for c in CLAIMS if s <= c[4] < e),
                     "removed": sum(1 for c in CLAIMS if c[9] is not None and s <= c[9] < e),
                     "cost_before": cost_at(s), "cost_after": cost_at(e), "pdb_violations": 0,
                     "detail": {1: "44 pods pending -> 5 NodeClaims, all running in 15 s",
                                2: "22 pods; 2 nodes removed, web PDB (maxUnavailable 1) held",
                                3: "spot interruption for default-c9vbd; replaced before reclaim",
                                4: "AMI al2023 bumped; 1 drifted node rotated"}[n]})
    with open(os.path.join(out, "acts.json"), "w") as f:
        json.dump(acts, f, indent=1)

    claim_ev, node_ev = [], []
    for c in CLAIMS:
        name, it, cap, zone, cr, la, re, ini, dr, te = c[:10]
        claim_ev.append((cr + 0.05, "ADDED", claim_obj(c, cr)))
        for when in (la, re, ini, dr):
            if when is not None:
                claim_ev.append((when + 0.05, "MODIFIED", claim_obj(c, when)))
        if te is not None:
            claim_ev.append((te + 0.05, "DELETED", claim_obj(c, te)))
        node_ev.append((re + 0.1, "ADDED", node_obj(c, re)))
        node_ev.append((ini + 0.1, "MODIFIED", node_obj(c, ini)))
        if dr is not None:
            node_ev.append((dr + 0.1, "MODIFIED", node_obj(c, dr)))
        if te is not None:
            node_ev.append((te - 0.5, "DELETED", node_obj(c, te)))
    for fname, evs in (("nodeclaims-watch.jsonl", claim_ev), ("nodes-watch.jsonl", node_ev)):
        with open(os.path.join(out, fname), "w") as f:
            for t, typ, obj in sorted(evs, key=lambda e: e[0]):
                f.write(json.dumps({"t": round(t, 3), "type": typ, "object": obj}) + "\n")

    with open(os.path.join(out, "decisions.jsonl"), "w") as f:
        for c in sorted((c for c in CLAIMS if c[10]), key=lambda c: c[8]):
            f.write(json.dumps({"t": round(c[8] - 0.3, 2), "node": node_name(c), "nodeclaim": c[0],
                                "reason": c[10], "message": c[11]}) + "\n")

    end = 130.0
    left = [c for c in CLAIMS if c[9] is None]
    items = [node_obj(c, end) for c in left] + [claim_obj(c, end) for c in left]
    placed = {}
    capacity = {node_name(c): PODS_PER[c[1]] for c in left}
    apps = ["web", "api", "worker", "cache"]
    for i in range(desired(end)):
        node = next(n for n in capacity if placed.get(n, 0) < capacity[n])
        placed[node] = placed.get(node, 0) + 1
        app = apps[i % len(apps)]
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"{app}-5d8f9-{i:03d}", "namespace": "default",
                                   "labels": {"app": app}},
                      "spec": {"nodeName": node}, "status": {"phase": "Running"}})
    with open(os.path.join(out, "final.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f, indent=1)
    print(len(left))


if __name__ == "__main__":
    main()
