#!/usr/bin/python3
"""bigcluster.py KUBECONFIG NODES PODS - fill a local cluster with NODES
Nodes and PODS bound pods (spread evenly), through the API server, as an
existing cluster the autoscaler did not make.

Each node is 4 vCPU / 16 GiB / pods = PODS/NODES; its pods fill it (130m,
256Mi each), so new pending pods need new capacity.  Pods are created
with spec.nodeName set, as a scheduler's binding would leave them; the
nodes have no kubelet (no instance behind them), so the pods stay bound
and Pending, which the autoscaler counts as capacity in use.

Requests go over a few keep-alive HTTPS connections in parallel; progress
is printed every 10%.
"""
import base64
import http.client
import json
import os
import ssl
import sys
import tempfile
import threading
import time


def kubeconfig(path):
    server = ca = token = None
    for line in open(path):
        s = line.strip()
        if s.startswith("server:"):
            server = s.split(":", 1)[1].strip()
        elif s.startswith("certificate-authority-data:"):
            ca = base64.b64decode(s.split(":", 1)[1].strip())
        elif s.startswith("token:"):
            token = s.split(":", 1)[1].strip()
    if not (server and ca and token):
        sys.exit("bigcluster: kubeconfig %s lacks server, CA data or token" % path)
    host, port = server.split("//", 1)[1].rsplit(":", 1)
    f = tempfile.NamedTemporaryFile(delete=False, suffix=".crt")
    f.write(ca)
    f.close()
    return host, int(port), f.name, token


def node(i, pods):
    name = "existing-%05d" % i
    zone = "us-east-1" + "abc"[i % 3]
    res = {"cpu": "4", "memory": "16Gi", "pods": str(pods), "ephemeral-storage": "100Gi"}
    return name, {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": zone,
            "node.kubernetes.io/instance-type": "m5.xlarge"}},
        "spec": {"providerID": "aws:///%s/i-0e%015x" % (zone, i)},
        "status": {"capacity": res, "allocatable": res,
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(i, node_name):
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "bg-%06d" % i, "namespace": "default",
                     "labels": {"app": "bg-%d" % (i % 40)}},
        "spec": {"nodeName": node_name, "containers": [{
            "name": "c", "image": "app",
            "resources": {"requests": {"cpu": "130m", "memory": "256Mi"}}}]},
    }


def main():
    path, nodes, pods = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    host, port, cafile, token = kubeconfig(path)
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    per = -(-pods // nodes)
    work = [("/api/v1/nodes", node(i, per)[1]) for i in range(nodes)]
    work += [("/api/v1/namespaces/default/pods", pod(i, "existing-%05d" % (i % nodes)))
             for i in range(pods)]
    total, lock, done, errors = len(work), threading.Lock(), [0], []
    t0 = time.time()

    def run(items):
        c = http.client.HTTPSConnection(host, port, context=ctx, timeout=60)
        hdr = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        for url, obj in items:
            c.request("POST", url, body=json.dumps(obj), headers=hdr)
            r = c.getresponse()
            body = r.read()
            if r.status not in (200, 201, 409):
                with lock:
                    errors.append("%s %d %s" % (obj["metadata"]["name"], r.status, body[:200]))
            with lock:
                done[0] += 1
                if done[0] % max(total // 10, 1) == 0:
                    print("bigcluster: %d/%d objects (%.0f s)" % (done[0], total, time.time() - t0),
                          flush=True)

    # nodes first (pods name them), then pods over 4 connections
    run(work[:nodes])
    rest = work[nodes:]
    ts = [threading.Thread(target=run, args=(rest[k::4],)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os.unlink(cafile)
    if errors:
        sys.exit("bigcluster: %d refused, e.g. %s" % (len(errors), errors[0]))
    print("bigcluster: %d nodes, %d pods in %.1f s" % (nodes, pods, time.time() - t0), flush=True)


main()
