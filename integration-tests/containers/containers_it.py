#!/usr/bin/python3
"""containers_it.py BUILD_DIR [--demo] - tailor deployed as containers.

The images `make images` builds run as separate containers (podman, each on
its own address on podman's bridge) against the local cluster (kubesim +
moto, SigV4 enforced), with the arguments, environment, volumes, security
context and probes of the Deployments that real kubectl renders from
deploy/overlays/dev (podlet.py plays kubelet and kube-proxy; nothing about a
container is typed in here).  Then, as an operator would:

  1. watcher, two solvers, launcher and disruptor start and pass the
     readiness and liveness probes the manifests declare;
  2. a burst of pods is provisioned while the solver is scaled 2 -> 4 -> 1
     (scale-in deletes the newest replicas first, as a ReplicaSet does;
     each deleted replica exits 0 on SIGTERM); no Solve fails
     (tailor_launcher_solves_total{result="error"} stays 0);
  3. the launcher is replaced as a rolling update does (the new pod ready,
     then the old one deleted) in the middle of a second burst: the new
     one takes the Lease tailor/tailor-launcher and finishes the burst;
  4. every pod Running; every instance has one NodeClaim and one Node,
     nothing leaked, no pod provisioned twice (e2e/check.py);
  5. every container stops on SIGTERM with exit code 0, and every line it
     logged is a JSON object.

--demo narrates the same run for `make demo-containers` and keeps its logs.
Exit 0 when everything holds; the state directory is kept on failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import podlet  # noqa: E402

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
T0 = time.time()
failed = []


def say(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def check(what, ok, detail=""):
    print(("PASS: " if ok else "FAIL: ") + what + (f" ({detail})" if detail else ""), flush=True)
    if not ok:
        failed.append(what)
    return ok


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def metrics(url):
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            return r.read().decode()
    except OSError:
        return ""


def metric_sum(page, name, labels=""):
    tot = 0.0
    for line in page.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            head, _, val = line.rpartition(" ")
            if head == name or head.startswith(name + "{") and labels in head:
                tot += float(val)
    return tot


def deployment(name, replicas, cpu, mem, extra=""):
    return f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{extra}
      containers:
      - {{name: c, image: app, resources: {{requests: {{cpu: "{cpu}", memory: {mem}}}}}}}
"""


def main():
    build = os.path.abspath(sys.argv[1])
    demo = "--demo" in sys.argv
    state = tempfile.mkdtemp(prefix="ctr.", dir="/tmp")
    os.chmod(state, 0o755)
    podman = [os.path.join(REPO, "scripts/podman.sh")]
    run_id = os.path.basename(state)
    pl = None
    env = dict(os.environ)
    cluster_up = False
    try:
        say("dependencies (scripts/deps.sh containers)")
        run([os.path.join(REPO, "scripts/deps.sh"), "containers"])
        say("images (scripts/images.sh dev)")
        t = time.time()
        run([os.path.join(REPO, "scripts/images.sh"), "dev"])
        say(f"images ready in {time.time() - t:.0f}s")
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short=7", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        for img in ["tailor-watcher", "tailor-solver", "tailor-launcher", "tailor-disruptor"]:
            out = subprocess.run(podman + ["run", "--rm", "--read-only", f"localhost/tailor/{img}:dev",
                                           "--version"], capture_output=True, text=True)
            check(f"{img} image: --version names commit {commit}",
                  out.returncode == 0 and commit and commit in out.stdout, out.stdout.strip())

        say("certificates (scripts/certs.sh) and the local cluster (kubesim + moto)")
        certs = os.path.join(state, "certs")
        run([os.path.join(REPO, "scripts/certs.sh"), certs], stdout=subprocess.DEVNULL)
        # The bridge exists once a container has run (above); the API
        # server's certificate must name the address containers reach it at.
        gw = podlet.gateway(podman)
        cl = os.path.join(state, "cluster")
        env.update(STATE_DIR=cl, CLUSTER_NAME="tailor-local", BOOT_DELAY="1s",
                   KUBESIM_BIN=os.path.join(build, "integration-tests/kubesim/kubesim"),
                   KUBESIM_TLS_SAN=gw)
        run([os.path.join(REPO, "scripts/local-cluster.sh"), "up"], env=env,
            stdout=open(os.path.join(state, "up.log"), "w"), stderr=subprocess.STDOUT)
        cluster_up = True
        out = run([os.path.join(REPO, "scripts/local-cluster.sh"), "env"], env=env,
                  capture_output=True).stdout
        for line in out.splitlines():
            m = re.match(r"(?:export )?([A-Z_][A-Z0-9_]*)=(.*)", line)
            if m:
                env[m.group(1)] = m.group(2).strip("'\"")
        kube = [KUBECTL, "--kubeconfig", env["KUBECONFIG"]]
        kc = yaml.safe_load(open(env["KUBECONFIG"]))
        server = kc["clusters"][0]["cluster"]["server"]
        api = {"port": int(server.rsplit(":", 1)[1]), "ca": os.path.join(cl, "kubesim", "ca.crt"),
               "token": kc["users"][0]["user"]["token"]}
        moto_port = int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])

        say("deploy/overlays/dev rendered by kubectl; Namespace, ServiceAccounts, Services, PDBs applied")
        rendered = run([KUBECTL, "kustomize", os.path.join(REPO, "deploy/overlays/dev")],
                       capture_output=True).stdout
        objects = [o for o in yaml.safe_load_all(rendered) if o]
        apply = [o for o in objects if o["kind"] in ("Namespace", "ServiceAccount", "Service",
                                                      "PodDisruptionBudget")]
        run(kube + ["apply", "--validate=false", "-f", "-"], input=yaml.safe_dump_all(apply),
            stdout=subprocess.DEVNULL)
        # What the dev overlay says the environment provides (its header).
        # kubectl create sends protobuf, which kubesim does not read: the
        # objects are made client-side and applied as JSON.
        def create(*args):
            obj = run(kube + ["-n", "tailor", "create", *args, "--dry-run=client", "-o", "json"],
                      capture_output=True).stdout
            run(kube + ["apply", "--validate=false", "-f", "-"], input=obj, stdout=subprocess.DEVNULL)
        for svc in ["watcher", "solver", "launcher", "disruptor"]:
            create("secret", "generic", f"tailor-{svc}-tls", f"--from-file=ca.crt={certs}/ca.crt",
                   f"--from-file=tls.crt={certs}/tailor-{svc}.crt",
                   f"--from-file=tls.key={certs}/tailor-{svc}.key")
        create("secret", "generic", "tailor-aws-credentials",
               f"--from-file=credentials={env['AWS_SHARED_CREDENTIALS_FILE']}")
        create("configmap", "tailor-local-cluster",
               *[f"--from-literal={k}={env[k]}" for k in
                 ("TAILOR_CLUSTER_ENDPOINT", "TAILOR_CLUSTER_CA_BUNDLE", "TAILOR_CLUSTER_CIDR")])
        node = os.path.join(state, "node")
        catdir = os.path.join(node, "var/lib/tailor-dev/catalog")
        os.makedirs(catdir)
        shared = os.environ.get("TAILOR_SHARED_DATA") or os.path.join(REPO, "../shared/data")
        shutil.copy(os.path.join(shared, "aws-instance-types.json"), catdir)
        os.chmod(catdir, 0o755)

        pl = podlet.Podlet(objects, podman=podman, kubectl=kube, state_dir=state, node_root=node,
                           api=api, run_id=run_id, say=say)
        pl.add_external(["moto.tailor-dev.svc"], 5000, ("127.0.0.1", moto_port))

        # --- 1. start ----------------------------------------------------------
        order = ["tailor-watcher", "tailor-solver", "tailor-launcher", "tailor-disruptor"]
        for d in order:
            n = pl.deployment(d)["spec"]["replicas"]
            started, _ = pl.scale(d, n)
            say(f"{d}: {n} pod(s) started: " + ", ".join(f"{p.name} at {p.ip}" for p in started))
        for p in list(pl.pods.values()):
            ok = pl.wait_ready(p, 60)
            check(f"{p.name} ready (its readinessProbe) in {time.time() - p.started:.1f}s", ok,
                  "" if ok else pl.logs(p)[-600:])
        for p in list(pl.pods.values()):
            c = p.spec["containers"][0]
            for kind in ("livenessProbe", "readinessProbe"):
                pr = c[kind]
                code = pl.http_probe(p, pr)
                check(f"{p.name}: {kind} GET {pr['httpGet']['path']} on port "
                      f"{pr['httpGet']['port']} answers 200", code == 200, f"got {code}")
            page = metrics(f"http://{p.ip}:{p.port('http')}/metrics")
            check(f"{p.name}: /metrics on the http port", "# TYPE" in page)
        if failed:
            return

        pools = f"""apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: general}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
      - {{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}}
      - {{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}}
      - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
      - {{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}}
  limits: {{cpu: "2000"}}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: default}}
spec:
  amiSelectorTerms: [{{alias: al2023@latest}}]
  role: KarpenterNodeRole-tailor-local
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: demo}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: demo}}}}]
"""
        run(kube + ["apply", "--validate=false", "-f", "-"], input=pools, stdout=subprocess.DEVNULL)
        want = 0

        def pods(apps):
            nonlocal want
            y = "".join(deployment(*a) for a in apps)
            want += sum(a[1] for a in apps)
            run(kube + ["apply", "--validate=false", "-f", "-"], input=y, stdout=subprocess.DEVNULL)

        def status():
            items = json.loads(run(kube + ["get", "pods,nodeclaims,nodes", "-A", "-o", "json"],
                                   capture_output=True).stdout)["items"]
            pend = sum(1 for i in items if i["kind"] == "Pod" and i["status"].get("phase") != "Running")
            runn = sum(1 for i in items if i["kind"] == "Pod" and i["status"].get("phase") == "Running")
            return runn, pend, sum(i["kind"] == "NodeClaim" for i in items), sum(i["kind"] == "Node" for i in items)

        def wait_running(secs):
            t = time.time()
            last = 0
            while time.time() - t < secs:
                r, p, c, n = status()
                if r >= want and p == 0:
                    say(f"all {r}/{want} pods Running after {time.time() - t:.0f}s ({c} NodeClaims, {n} Nodes)")
                    return True
                if time.time() - last >= 5:
                    say(f"  {r}/{want} Running, {p} pending, {c} NodeClaims, {n} Nodes")
                    last = time.time()
                time.sleep(1)
            return False

        launcher = next(p for p in pl.pods.values() if p.dep["metadata"]["name"] == "tailor-launcher")

        def solver_counts():
            return {p.name: metric_sum(metrics(f"http://{p.ip}:{p.port('http')}/metrics"),
                                       "karpenter_scheduler_scheduling_duration_seconds_count",
                                       'controller="provisioner"')
                    for p in pl.pods.values() if p.dep["metadata"]["name"] == "tailor-solver"}

        # --- 2. burst while the solver scales 2 -> 4 -> 1 -----------------------
        say("burst 1: 100 pods; the solver scales 2 -> 4")
        pods([("web", 40, "500m", "1Gi", "      topologySpreadConstraints:\n      - {maxSkew: 1, "
               "topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, "
               "labelSelector: {matchLabels: {app: web}}}"),
              ("api", 30, "1", "2Gi"), ("batch", 30, "250m", "512Mi")])
        started, _ = pl.scale("tailor-solver", 4)
        for p in started:
            check(f"{p.name} (scale-out) ready", pl.wait_ready(p, 60))
        # The launcher closes a solver connection older than
        # TAILOR_SOLVER_CONNECTION_AGE before a Solve; its redial through the
        # Service may reach a new replica.  Waves of pods, one Solve each,
        # until a new replica has served one (at most 10 waves).
        say("burst 2: waves of 8 pods while the solver has 4 replicas, until a new replica solves")
        new_names = {p.name for p in started}
        served = {}
        for wave in range(10):
            pods([(f"wave{wave}", 8, "500m", "1Gi")])
            time.sleep(2.5)
            served = solver_counts()
            if any(served.get(n, 0) > 0 for n in new_names):
                break
        say("solves served so far by replica: " + json.dumps(served))
        check(f"a replica added by the scale-out served Solves after {wave + 1} wave(s)",
              any(served.get(n, 0) > 0 for n in new_names))
        pods([("worker", 40, "2", "4Gi"), ("cache", 40, "500m", "3Gi")])
        time.sleep(1.5)
        say("the solver scales 4 -> 1 (newest first), then burst 3: 40 pods")
        _, deleted = pl.scale("tailor-solver", 1)
        for p, code in deleted:
            check(f"{p.name} deleted: SIGTERM, exit code 0", code == 0, f"exit {code}")
        pods([("queue", 40, "250m", "256Mi")])
        check(f"all {want} pods of bursts 1-3 Running", wait_running(180))
        page = metrics(f"http://{launcher.ip}:{launcher.port('http')}/metrics")
        ok_n = metric_sum(page, "tailor_launcher_solves_total", 'result="ok"')
        err_n = metric_sum(page, "tailor_launcher_solves_total", 'result="error"')
        check(f"no failed Solve across the scaling ({ok_n:.0f} ok, {err_n:.0f} failed)",
              ok_n > 0 and err_n == 0)
        check("the launcher logged no failed Solve",
              '"msg":"request failed","request":"Solve"' not in pl.logs(launcher))
        say("solves served by the remaining replica: " + json.dumps(solver_counts()))

        # --- 3. launcher replaced mid-burst -------------------------------------
        say("the launcher is replaced as a rolling update does it: a new pod, ready (standby)...")
        new_l, _ = pl.scale("tailor-launcher", 2)
        new_l = new_l[0]
        check(f"{new_l.name} (standby) ready", pl.wait_ready(new_l, 60))
        say("...burst 4 (60 pods), and at once the old launcher is deleted")
        pods([("web2", 30, "1", "1Gi"), ("api2", 30, "500m", "2Gi")])
        t = time.time()
        code = pl.delete_pod(launcher)
        check(f"{launcher.name} deleted: SIGTERM, exit code 0 in {time.time() - t:.1f}s", code == 0,
              f"exit {code}")
        holder = ""
        t = time.time()
        while time.time() - t < 30:
            holder = subprocess.run(kube + ["-n", "tailor", "get", "lease", "tailor-launcher", "-o",
                                            "jsonpath={.spec.holderIdentity}"],
                                    capture_output=True, text=True).stdout.strip()
            # holderIdentity is <service>/<hostname = pod name>/<pid>
            if new_l.name in holder.split("/"):
                break
            time.sleep(0.2)
        check(f"{new_l.name} holds the Lease tailor/tailor-launcher {time.time() - t:.1f}s after "
              f"the old launcher exited", new_l.name in holder.split("/"), f"holder {holder!r}")
        check(f"all {want} pods Running after the handover", wait_running(180))
        page = metrics(f"http://{new_l.ip}:{new_l.port('http')}/metrics")
        check("the new launcher solved and launched burst 4 without a failed Solve",
              metric_sum(page, "tailor_launcher_solves_total", 'result="ok"') > 0 and
              metric_sum(page, "tailor_launcher_solves_total", 'result="error"') == 0)

        # --- 4. consistency ---------------------------------------------------------
        figs = {}
        for _ in range(31):
            st = run(kube + ["get", "pods,nodes,nodeclaims,events", "-A", "-o", "json"],
                     capture_output=True).stdout
            with open(os.path.join(state, "state.json"), "w") as f:
                f.write(st)
            figs = json.loads(run(["/usr/bin/python3", os.path.join(REPO, "integration-tests/e2e/check.py"),
                                   os.path.join(state, "state.json"), "tailor-local"], env=env,
                                  capture_output=True).stdout)
            if not figs["leaked"] and not figs["instances_without_node"] and not figs["claims_without_instance"]:
                break
            time.sleep(1)
        say("figures: " + json.dumps({k: figs[k] for k in ("instances", "claims", "nodes", "pods", "running",
                                                             "double_provisioned", "zones", "capacity_types")}))
        check(f"every pod Running ({figs['running']}/{want})", figs["running"] == want == figs["pods"])
        check(f"every instance has one NodeClaim ({figs['instances']} instances, {figs['claims']} claims)",
              figs["instances"] == figs["claims"] and not figs["leaked"] and not figs["duplicate_claims"])
        check(f"every NodeClaim's Node joined ({figs['nodes']} nodes)",
              figs["nodes"] == figs["claims"] and not figs["claims_without_instance"])
        check("no pod provisioned twice", figs["double_provisioned"] == 0)

        # --- 5. stop -------------------------------------------------------------
        say("every container stopped with SIGTERM")
        for p in sorted(pl.pods.values(), key=lambda p: order.index(p.dep["metadata"]["name"]), reverse=True):
            live = p.live_failures
            code = pl.delete_pod(p)
            check(f"{p.name}: exit code 0 on SIGTERM", code == 0, f"exit {code}")
            check(f"{p.name}: liveness never failed", live == 0, f"{live} failures")
        for fn in sorted(os.listdir(state)):
            if not fn.endswith(".log") or not fn.startswith("tailor-"):
                continue
            lines = [ln for ln in open(os.path.join(state, fn)).read().splitlines() if ln.strip()]
            bad = [ln for ln in lines if not ln.startswith("{") or not _json(ln)]
            errs = [ln for ln in lines if '"level":"error"' in ln]
            check(f"{fn[:-4]}: all {len(lines)} log lines are JSON", not bad, bad[:1])
            check(f"{fn[:-4]}: no error logged", not errs, errs[:2])
    except (subprocess.CalledProcessError, RuntimeError, KeyError, OSError) as e:
        check("the run completed", False, f"{type(e).__name__}: {e}")
    finally:
        if pl:
            pl.close()
        if cluster_up:
            subprocess.run([os.path.join(REPO, "scripts/local-cluster.sh"), "down"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if failed or demo or os.environ.get("KEEP"):
            print(f"--- state and container logs kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)
    say(f"{'FAILED: ' + str(len(failed)) if failed else 'all passed'}")


def _json(line):
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


if __name__ == "__main__":
    main()
    sys.exit(1 if failed else 0)
