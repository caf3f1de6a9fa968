#!/usr/bin/python3
"""python_it.py KUBESIM - the official Python kubernetes client against
kubesim over HTTPS with a token: list, watch, patch, evict.
Prints PASS/FAIL lines and 'N passed, N failed' like lib.sh."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from kubernetes import client, config, watch

passed = failed = 0


def check(name, cond):
    global passed, failed
    if cond:
        passed += 1
        print("PASS:", name)
    else:
        failed += 1
        print("FAIL:", name)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp()
    port, tport = free_port(), free_port()
    kc = os.path.join(work, "kc")
    err = open(os.path.join(work, "err"), "w")
    proc = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--tls-listen",
                             f"127.0.0.1:{tport}", "--data-dir", work, "--token", "py-token",
                             "--kubeconfig-out", kc], stdout=subprocess.PIPE, stderr=err)
    try:
        proc.stdout.readline()  # "kubesim ready: ..." once the kubeconfig is written
        config.load_kube_config(config_file=kc)
        v1 = client.CoreV1Api()
        names = [n.metadata.name for n in v1.list_namespace().items]
        check("list namespaces", "default" in names and "kube-system" in names)

        node = client.V1Node(metadata=client.V1ObjectMeta(name="py-node"),
                             status=client.V1NodeStatus(conditions=[
                                 client.V1NodeCondition(type="Ready", status="True")]))
        v1.create_node(node)
        pod = client.V1Pod(metadata=client.V1ObjectMeta(name="py-pod", labels={"app": "py"}),
                           spec=client.V1PodSpec(containers=[client.V1Container(
                               name="c", image="busybox")]))
        v1.create_namespaced_pod("default", pod)
        pods = v1.list_namespaced_pod("default", label_selector="app in (py)")
        check("list pods by set-based selector", [p.metadata.name for p in pods.items] == ["py-pod"])
        page = v1.list_namespace(limit=2)
        check("paged list has a continue token", len(page.items) == 2 and page.metadata._continue)

        # watch sees a label change made by another thread
        seen = []

        def change():
            time.sleep(0.5)
            v1.patch_namespaced_pod("py-pod", "default", {"metadata": {"labels": {"seen": "yes"}}})

        changer = threading.Thread(target=change)
        changer.start()
        w = watch.Watch()
        rv = pods.metadata.resource_version
        for ev in w.stream(v1.list_namespaced_pod, "default", resource_version=rv,
                           timeout_seconds=5):
            seen.append((ev["type"], ev["object"].metadata.labels.get("seen")))
            # the scheduler may bind the pod first: wait for our change
            if ev["type"] == "MODIFIED" and seen[-1][1] == "yes":
                w.stop()
        changer.join()
        check("watch sees MODIFIED", ("MODIFIED", "yes") in seen)

        # strategic merge patch on a node: cordon and a condition merged by type
        v1.patch_node("py-node", {"spec": {"unschedulable": True}})
        v1.patch_node_status("py-node", {"status": {"conditions": [
            {"type": "MemoryPressure", "status": "False"}]}})
        n = v1.read_node("py-node")
        types = sorted(c.type for c in n.status.conditions)
        check("patch node spec", n.spec.unschedulable is True)
        check("patch node status merges conditions", types == ["MemoryPressure", "Ready"])

        # conflict on a stale resourceVersion
        stale = v1.read_namespaced_pod("py-pod", "default")
        v1.patch_namespaced_pod("py-pod", "default", {"metadata": {"labels": {"x": "1"}}})
        try:
            v1.replace_namespaced_pod("py-pod", "default", stale)
            check("stale update gets 409", False)
        except client.exceptions.ApiException as e:
            check("stale update gets 409", e.status == 409)

        # eviction (no PodDisruptionBudget covers the pod): it goes away
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name="py-pod", namespace="default"))
        v1.create_namespaced_pod_eviction("py-pod", "default", body)
        gone = False
        for _ in range(50):
            try:
                p = v1.read_namespaced_pod("py-pod", "default")
                if p.metadata.deletion_timestamp:
                    gone = True
                    break
            except client.exceptions.ApiException as e:
                if e.status == 404:
                    gone = True
                    break
            time.sleep(0.1)
        check("evicted pod is deleted", gone)
        try:
            v1.read_namespaced_pod("nope", "default")
            check("missing pod is 404", False)
        except client.exceptions.ApiException as e:
            check("missing pod is 404", e.status == 404 and "not found" in e.body)
    finally:
        proc.terminate()
        rc = proc.wait(timeout=20)
        check("clean exit on SIGTERM", rc == 0)
        err.close()
        if failed or sys.exc_info()[0]:
            print("kubesim log (tail):")
            print(open(os.path.join(work, "err")).read()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
