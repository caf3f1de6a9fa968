#!/usr/bin/python3
"""demo-observer.py KUBECONFIG OUT_DIR T0 PRICES_TSV - what `make demo` records.

Started in the background by scripts/demo.sh; stops on SIGTERM (or when
OUT_DIR/observer.stop appears).  One process with one API client, so that a
sample costs three list calls and not a dozen kubectl starts:

  samples.jsonl          every SAMPLE_PERIOD (0.5 s): t (seconds since T0,
                         the demo's start), act (the number in OUT_DIR/act,
                         0 before act 1), pods pending/running/total,
                         NodeClaims (count, deleting, names, per image),
                         nodes by instance type and capacity type and how
                         many are disrupting (tainted karpenter.sh/disrupted,
                         cordoned or deleting), and the cost per hour (on-demand prices from
                         PRICES_TSV; spot at 0.4x on-demand, the launcher's
                         and disruptor's default spot discount, as the
                         catalog file carries no spot prices);
  nodeclaims-watch.jsonl one line per watch event on NodeClaims: type, t,
  nodes-watch.jsonl      act and the object as the API server sent it (so
                         a deleted NodeClaim's whole life is kept);
  events-watch.jsonl     the same for Events (the API server keeps only
                         the last one per object and reason).

The progress line demo.sh prints every second is the last sample.  Like
integration-tests/disruptor/watch.py it shares no code with tailor: it
reads the API server with the official Python client.
"""
import json
import os
import signal
import sys
import threading
import time

from kubernetes import client, config, watch

SAMPLE_PERIOD = 0.5
SPOT_FACTOR = 0.4
stop = threading.Event()


def images(claims):
    """NodeClaims per image (status.imageID, the AMI the launcher launched)."""
    out = {}
    for c in claims:
        i = (c.get("status") or {}).get("imageID") or "?"
        out[i] = out.get(i, 0) + 1
    return dict(sorted(out.items()))


def main():
    kubeconfig, out, t0, prices_tsv = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    prices = {}
    for line in open(prices_tsv):
        name, _, p = line.rstrip("\n").partition("\t")
        if p:
            prices[name] = float(p)
    config.load_kube_config(config_file=kubeconfig)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    def now():
        return round(time.time() - t0, 2)

    def act():
        try:
            return int(open(os.path.join(out, "act")).read().strip() or 0)
        except (OSError, ValueError):
            return 0

    lock = threading.Lock()

    def writer(name):
        f = open(os.path.join(out, name), "a", buffering=1)

        def put(rec):
            with lock:
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        return put

    def watch_loop(name, lister, **kw):
        """Watch one kind until stopped; on a broken stream, resume from the
        last resourceVersion seen (or relist: duplicates are harmless)."""
        put = writer(name)
        rv = None
        while not stop.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(lister, resource_version=rv, timeout_seconds=30, **kw):
                    obj = ev.get("raw_object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    put({"type": ev.get("type"), "t": now(), "act": act(), "object": obj})
                    if stop.is_set():
                        break
            except Exception as e:   # 410 Gone, a closed connection, the end of the run
                if stop.is_set():
                    break
                print("observer: %s watch: %s" % (name, e), file=sys.stderr)
                rv = None
                time.sleep(0.5)
            finally:
                w.stop()

    core = client.CoreV1Api()
    custom = client.CustomObjectsApi()
    threads = [
        threading.Thread(target=watch_loop, daemon=True,
                         args=("nodeclaims-watch.jsonl", custom.list_cluster_custom_object),
                         kwargs={"group": "karpenter.sh", "version": "v1", "plural": "nodeclaims"}),
        threading.Thread(target=watch_loop, daemon=True,
                         args=("nodes-watch.jsonl", core.list_node)),
        threading.Thread(target=watch_loop, daemon=True,
                         args=("events-watch.jsonl", core.list_event_for_all_namespaces)),
    ]
    for th in threads:
        th.start()

    api = client.ApiClient()

    def get(path):
        r = api.call_api(path, "GET", auth_settings=["BearerToken"], _preload_content=False,
                         _request_timeout=5)
        return json.loads(r[0].data)["items"]

    put = writer("samples.jsonl")
    tick = time.time()
    while not stop.is_set() and not os.path.exists(os.path.join(out, "observer.stop")):
        try:
            pods = get("/api/v1/pods")
            claims = get("/apis/karpenter.sh/v1/nodeclaims")
            nodes = get("/api/v1/nodes")
        except Exception as e:   # the API server is slow or going away: try again
            print("observer: sample failed: %s" % e, file=sys.stderr)
            time.sleep(0.2)
            continue
        running = sum(1 for p in pods if p.get("status", {}).get("phase") == "Running"
                      and not p["metadata"].get("deletionTimestamp"))
        by_type, by_cap, cost, disrupting = {}, {}, 0.0, 0
        for n in nodes:
            spec = n.get("spec") or {}
            if spec.get("unschedulable") or n["metadata"].get("deletionTimestamp") or any(
                    t.get("key") == "karpenter.sh/disrupted" for t in spec.get("taints") or []):
                disrupting += 1
            labels = n["metadata"].get("labels") or {}
            it = labels.get("node.kubernetes.io/instance-type", "?")
            cap = labels.get("karpenter.sh/capacity-type", "?")
            by_type[it] = by_type.get(it, 0) + 1
            by_cap[cap] = by_cap.get(cap, 0) + 1
            cost += prices.get(it, 0.0) * (SPOT_FACTOR if cap == "spot" else 1.0)
        put({"t": now(), "act": act(),
             "pods": {"pending": len(pods) - running, "running": running, "total": len(pods)},
             "claims": len(claims),
             "claims_deleting": sum(1 for c in claims if c["metadata"].get("deletionTimestamp")),
             "claim_names": sorted(c["metadata"]["name"] for c in claims),
             "claims_by_image": images(claims),
             "nodes": {"total": len(nodes), "by_type": dict(sorted(by_type.items())),
                       "by_capacity_type": dict(sorted(by_cap.items())),
                       "disrupting": disrupting},
             "cost_per_hour": round(cost, 4)})
        tick += SAMPLE_PERIOD
        delay = tick - time.time()
        if delay > 0:
            stop.wait(delay)
        else:
            tick = time.time()   # late (a slow API call): sample again at once
    stop.set()


if __name__ == "__main__":
    main()
