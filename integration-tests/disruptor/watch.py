#!/usr/bin/python3
"""watch.py KUBECONFIG OUT.json [--period SECONDS] [--pool NAME]

An independent observer of what the disruptor does to the cluster, for the
integration tests.  It shares no code with tailor: it polls the API server
with the official Python client until SIGTERM (or OUT.json.stop appears),
and records

  * PDB violations: a sample in which a PodDisruptionBudget has fewer
    healthy pods (Running, Ready, not deleting) than it promises --
    minAvailable, or the workload's replicas minus maxUnavailable -- while
    the workload had them before (a scale-down is not a violation);
  * single-replica outages: a sample in which a Deployment with
    spec.replicas == 1 that was Ready before has no Ready pod;
  * the most nodes of one NodePool disrupting at once: Nodes tainted
    karpenter.sh/disrupted or being deleted, NodeClaims being deleted;
  * cordoned nodes (spec.unschedulable) and tainted nodes at the end.

and writes a JSON summary to OUT.json.  Violations list when and what, so
a failing test says which PDB or which Deployment.
"""
import json
import os
import signal
import sys
import time

from kubernetes import client, config

stop = False


def on_term(*_):
    global stop
    stop = True


def ready(pod):
    if pod["metadata"].get("deletionTimestamp"):
        return False
    if pod.get("status", {}).get("phase") != "Running":
        return False
    for c in pod.get("status", {}).get("conditions", []) or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def selects(sel, labels):
    if sel is None:
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and labels.get(k) in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def intstr(v, total, round_up):
    if isinstance(v, int):
        return v
    s = str(v)
    if s.endswith("%"):
        p = int(s[:-1])
        n = total * p
        return (n + 99) // 100 if round_up else n // 100
    return int(s)


def main():
    kubeconfig, out = sys.argv[1], sys.argv[2]
    period = 0.3
    if "--period" in sys.argv:
        period = float(sys.argv[sys.argv.index("--period") + 1])
    config.load_kube_config(config_file=kubeconfig)
    api = client.ApiClient()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    def get(path):
        r = api.call_api(path, "GET", auth_settings=["BearerToken"], _preload_content=False,
                         _request_timeout=10)
        return json.loads(r[0].data)

    pdb_viol, single_viol = [], []
    max_disrupting, samples = {}, 0
    was_ok = {}        # pdb key -> had its promised healthy pods once
    single_up = {}     # deployment -> was ready once
    last_nodes = []
    t0 = time.time()
    while not stop and not os.path.exists(out + ".stop"):
        try:
            pods = get("/api/v1/pods")["items"]
            pdbs = get("/apis/policy/v1/poddisruptionbudgets")["items"]
            deps = get("/apis/apps/v1/deployments")["items"]
            nodes = get("/api/v1/nodes")["items"]
            claims = get("/apis/karpenter.sh/v1/nodeclaims")["items"]
        except Exception as e:  # the API server going away ends the run
            print("watch: poll failed: %s" % e, file=sys.stderr)
            time.sleep(period)
            continue
        samples += 1
        now = round(time.time() - t0, 1)
        by_ns = {}
        for p in pods:
            by_ns.setdefault(p["metadata"]["namespace"], []).append(p)
        dep_by = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in deps}
        for b in pdbs:
            ns, name = b["metadata"]["namespace"], b["metadata"]["name"]
            sel = b["spec"].get("selector")
            mine = [p for p in by_ns.get(ns, []) if selects(sel, p["metadata"].get("labels") or {})]
            healthy = sum(1 for p in mine if ready(p))
            # expected pods: the replicas of the Deployment whose selector
            # the PDB matches (as the disruption controller's scale lookup)
            expected = None
            for (dns, _), d in dep_by.items():
                if dns == ns and selects(sel, d["spec"]["template"]["metadata"].get("labels") or {}):
                    expected = (expected or 0) + d["spec"].get("replicas", 1)
            if expected is None:
                expected = len(mine)
            if "minAvailable" in b["spec"]:
                need = intstr(b["spec"]["minAvailable"], expected, True)
            else:
                need = expected - intstr(b["spec"].get("maxUnavailable", 0), expected, True)
            key = ns + "/" + name
            if healthy >= need:
                was_ok[key] = True
            elif was_ok.get(key):
                pdb_viol.append({"t": now, "pdb": key, "healthy": healthy, "need": need})
        for (ns, name), d in dep_by.items():
            if d["spec"].get("replicas", 1) != 1:
                single_up.pop(ns + "/" + name, None)
                continue
            sel = d["spec"].get("selector")
            up = sum(1 for p in by_ns.get(ns, []) if selects(sel, p["metadata"].get("labels") or {})
                     and ready(p))
            key = ns + "/" + name
            if up > 0:
                single_up[key] = True
            elif single_up.get(key):
                single_viol.append({"t": now, "deployment": key})
        per_pool = {}
        for n in nodes:
            pool = (n["metadata"].get("labels") or {}).get("karpenter.sh/nodepool")
            if not pool:
                continue
            taints = n.get("spec", {}).get("taints") or []
            dis = n["metadata"].get("deletionTimestamp") or any(
                t.get("key") == "karpenter.sh/disrupted" for t in taints)
            if dis:
                per_pool.setdefault(pool, set()).add(n["metadata"]["name"])
        for c in claims:
            pool = (c["metadata"].get("labels") or {}).get("karpenter.sh/nodepool")
            if pool and c["metadata"].get("deletionTimestamp"):
                per_pool.setdefault(pool, set()).add(c.get("status", {}).get("nodeName") or
                                                     "claim/" + c["metadata"]["name"])
        for pool, s in per_pool.items():
            max_disrupting[pool] = max(max_disrupting.get(pool, 0), len(s))
        last_nodes = nodes
        time.sleep(period)
    cordoned = [n["metadata"]["name"] for n in last_nodes if n.get("spec", {}).get("unschedulable")]
    tainted = [n["metadata"]["name"] for n in last_nodes
               if any(t.get("key") == "karpenter.sh/disrupted" for t in n.get("spec", {}).get("taints") or [])]
    summary = {"samples": samples, "pdb_violations": pdb_viol[:50], "n_pdb_violations": len(pdb_viol),
               "single_replica_outages": single_viol[:50], "n_single_replica_outages": len(single_viol),
               "max_disrupting": max_disrupting, "cordoned_at_end": cordoned, "tainted_at_end": tainted}
    with open(out, "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
