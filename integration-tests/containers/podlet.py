"""podlet.py - run the pods of rendered Deployments as podman containers,
doing what a kubelet and kube-proxy do with the same objects, and nothing
they would not.

The container test (containers_it.py) and `make demo-containers` render
deploy/overlays/dev with real kubectl and hand the objects here; nothing
about a container is typed in by hand.  For a pod of a Deployment:

  kubelet      image (imagePullPolicy Never: it must exist locally), command
               and args, env (value, fieldRef, secretKeyRef/configMapKeyRef
               and envFrom read from the API server; $(VAR) expansion; the
               service-link variables of the namespace's Services; and
               KUBERNETES_SERVICE_HOST/PORT), volumes (emptyDir -> tmpfs,
               secret -> files with defaultMode owned by root:fsGroup,
               hostPath -> a directory under the node's root, the
               ServiceAccount token unless automountServiceAccountToken is
               false), the security context (runAsUser/Group, fsGroup,
               readOnlyRootFilesystem, allowPrivilegeEscalation,
               capabilities), the memory limit, hostname = pod name, the
               termination grace period for SIGTERM, and the readiness and
               liveness probes (httpGet, named ports, delays, periods,
               thresholds), probed against the container's own address;
  kube-proxy   each Service port listens on the bridge gateway; a new
               connection goes to one ready endpoint (round robin) among the
               pods the selector matches, at the targetPort (by name through
               the pod's container ports); established connections stay where
               they are, as with iptables; a pod leaves the endpoints when it
               is not ready or is being deleted;
  DNS          <svc>, <svc>.<ns>, <svc>.<ns>.svc and .svc.cluster.local of each
               Service (and any external name added) resolve to the gateway.

Each container has its own network namespace on podman's bridge, so every
replica listens on the ports its manifest says.  Usage: see containers_it.py.
"""
import base64
import itertools
import json
import os
import random
import re
import shutil
import socket
import string
import subprocess
import threading
import time
import urllib.request


def _q(v):
    """A Kubernetes quantity of memory -> bytes (for --memory)."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(v))
    if not m:
        raise ValueError(f"memory quantity {v!r}")
    mult = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[m.group(2)]
    return int(m.group(1)) * mult


def _env_name(svc):
    return svc.upper().replace("-", "_")


def gateway(podman):
    """The bridge gateway of podman's default network: the address the
    containers reach the host (and so every Service) at."""
    out = subprocess.run(podman + ["network", "inspect", "podman"], capture_output=True,
                         text=True, check=True).stdout
    net = json.loads(out)[0]
    gw = None
    for sub in net.get("subnets") or []:
        gw = sub.get("gateway")
    if not gw:   # CNI config: plugins[0].ipam.ranges[0][0].gateway
        for p in net.get("plugins", []):
            for r in (p.get("ipam") or {}).get("ranges", []):
                gw = r[0].get("gateway") or gw
    if not gw:
        raise RuntimeError("podman network 'podman' has no gateway")
    return gw


class Pod:
    def __init__(self, name, dep):
        self.name = name
        self.dep = dep
        self.spec = dep["spec"]["template"]["spec"]
        self.labels = dict(dep["spec"]["template"]["metadata"].get("labels") or {})
        self.ip = None
        self.ready = False
        self.deleting = False
        self.exit_code = None
        self.started = None
        self.live_failures = 0
        self.ready_since = None
        self.probe_log = []
        self.ports = {p["name"]: p["containerPort"]
                      for c in self.spec["containers"] for p in c.get("ports", []) if p.get("name")}

    def port(self, p):
        return p if isinstance(p, int) else self.ports[p]


class ServicePort:
    """One listening port of a Service: connections go to ready endpoints."""

    def __init__(self, podlet, addr, port, pick):
        self.podlet, self.pick = podlet, pick
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, port))
        self.sock.listen(128)
        self.conns = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            target = self.pick()
            if target is None:       # no ready endpoint: refused, as iptables REJECTs
                c.close()
                continue
            try:
                b = socket.create_connection(target, timeout=5)
                b.settimeout(None)
            except OSError:
                c.close()
                continue
            self.conns += 1
            for src, dst in ((c, b), (b, c)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                dst.sendall(d)
        except OSError:
            pass
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        src.close()

    def close(self):
        self.sock.close()


class Podlet:
    def __init__(self, objects, *, podman, kubectl, state_dir, node_root, api, run_id, say=print):
        """objects: the rendered manifests; podman/kubectl: argv lists;
        api: {"port": kubesim's HTTPS port on 127.0.0.1, "ca": CA PEM path,
        "token": bearer token}; run_id labels every container of this run."""
        self.objects = objects
        self.podman, self.kubectl = podman, kubectl
        self.state, self.node_root, self.api = state_dir, node_root, api
        self.run_id, self.say = run_id, say
        self.pods = {}
        self.ports = []
        self.hosts = []
        self._rr = itertools.count()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.gateway = self._gateway()
        # The API server as the Service kubernetes.default (443 on the gateway).
        self._listen(443, lambda: ("127.0.0.1", api["port"]))
        self.hosts += ["kubernetes", "kubernetes.default", "kubernetes.default.svc",
                       "kubernetes.default.svc.cluster.local"]
        for svc in self.kind("Service"):
            self._service(svc)

    # --- objects ------------------------------------------------------------
    def kind(self, kind):
        return [o for o in self.objects if o.get("kind") == kind]

    def deployment(self, name):
        for d in self.kind("Deployment"):
            if d["metadata"]["name"] == name:
                return d
        raise KeyError(f"no Deployment {name} in the rendered manifests")

    def _api_get(self, kind, ns, name):
        out = subprocess.run(self.kubectl + ["get", kind, name, "-n", ns, "-o", "json"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{kind} {ns}/{name}: {out.stderr.strip()}")
        return json.loads(out.stdout)

    # --- network ------------------------------------------------------------
    def _gateway(self):
        return gateway(self.podman)

    def _listen(self, port, pick):
        self.ports.append(ServicePort(self, self.gateway, port, pick))

    def add_external(self, names, port, target):
        """A name the containers resolve to the gateway, port forwarded to target."""
        self._listen(port, lambda: target)
        self.hosts += list(names)

    def _service(self, svc):
        ns, name = svc["metadata"].get("namespace", "default"), svc["metadata"]["name"]
        sel = svc["spec"].get("selector") or {}
        self.hosts += [name, f"{name}.{ns}", f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"]
        for p in svc["spec"]["ports"]:
            tp = p.get("targetPort", p["port"])

            def pick(sel=sel, tp=tp, ns=ns):
                with self._lock:
                    eps = [q for q in self.pods.values()
                           if q.ready and not q.deleting and q.dep["metadata"].get("namespace") == ns
                           and all(q.labels.get(k) == v for k, v in sel.items())]
                    if not eps:
                        return None
                    q = eps[next(self._rr) % len(eps)]
                    return (q.ip, q.port(tp))
            self._listen(p["port"], pick)

    def service_env(self, ns):
        """The service-link variables a kubelet sets for the namespace's Services."""
        env = {}
        for svc in self.kind("Service"):
            if svc["metadata"].get("namespace", "default") != ns:
                continue
            n = _env_name(svc["metadata"]["name"])
            ports = svc["spec"]["ports"]
            env[f"{n}_SERVICE_HOST"] = self.gateway
            env[f"{n}_SERVICE_PORT"] = str(ports[0]["port"])
            env[f"{n}_PORT"] = f"tcp://{self.gateway}:{ports[0]['port']}"
            for p in ports:
                if p.get("name"):
                    env[f"{n}_SERVICE_PORT_{_env_name(p['name'])}"] = str(p["port"])
                pre = f"{n}_PORT_{p['port']}_{p.get('protocol', 'TCP')}"
                env[pre] = f"tcp://{self.gateway}:{p['port']}"
                env[pre + "_PROTO"] = p.get("protocol", "TCP").lower()
                env[pre + "_PORT"] = str(p["port"])
                env[pre + "_ADDR"] = self.gateway
        return env

    # --- pods -----------------------------------------------------------------
    def _pm(self, *args, check=True):
        out = subprocess.run(self.podman + list(args), capture_output=True, text=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args[:2])}: {out.stderr.strip()[-400:]}")
        return out.stdout

    def run_pod(self, dep_name, name=None):
        dep = self.deployment(dep_name)
        if name is None:
            name = dep_name + "-" + "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
        pod = Pod(name, dep)
        ns = dep["metadata"].get("namespace", "default")
        spec = pod.spec
        if len(spec["containers"]) != 1 or spec.get("initContainers"):
            raise RuntimeError(f"{dep_name}: only one container and no init containers are run here")
        c = spec["containers"][0]
        if c.get("imagePullPolicy") != "Never":
            raise RuntimeError(f"{dep_name}: imagePullPolicy {c.get('imagePullPolicy')}: "
                               "there is no registry here; the dev overlay says Never")
        if subprocess.run(self.podman + ["image", "exists", c["image"]]).returncode != 0:
            raise RuntimeError(f"{name}: ErrImageNeverPull: {c['image']} is not present (make images)")
        pdir = os.path.join(self.state, "pods", name)
        os.makedirs(pdir)
        psc, csc = spec.get("securityContext") or {}, c.get("securityContext") or {}
        uid = csc.get("runAsUser", psc.get("runAsUser"))
        gid = csc.get("runAsGroup", psc.get("runAsGroup"))
        fsgroup = psc.get("fsGroup")
        args = ["run", "-d", "--name", name, "--hostname", name,
                "--label", f"tailor.test/run={self.run_id}", "--label", f"io.kubernetes.pod.name={name}",
                "--stop-timeout", str(spec.get("terminationGracePeriodSeconds", 30))]
        for h in self.hosts:
            args += ["--add-host", f"{h}:{self.gateway}"]
        if uid is not None:
            args += ["--user", f"{uid}:{gid if gid is not None else 0}"]
        if (csc.get("runAsNonRoot", psc.get("runAsNonRoot"))) and not uid:
            raise RuntimeError(f"{name}: runAsNonRoot without a non-zero runAsUser")
        if fsgroup is not None:
            args += ["--group-add", str(fsgroup)]
        if csc.get("readOnlyRootFilesystem"):
            args += ["--read-only", "--read-only-tmpfs=false"]
        if csc.get("allowPrivilegeEscalation") is False:
            args += ["--security-opt", "no-new-privileges"]
        caps = csc.get("capabilities") or {}
        for cap in caps.get("drop", []):
            args += ["--cap-drop", cap.lower()]
        for cap in caps.get("add", []):
            args += ["--cap-add", cap.lower()]
        mem = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        if mem:
            args += ["--memory", str(_q(mem))]
        # Volumes.
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        for m in c.get("volumeMounts", []):
            v = vols[m["name"]]
            ro = ":ro" if m.get("readOnly") else ""
            if "subPath" in m:
                raise RuntimeError(f"{name}: subPath mounts are not run here")
            if "emptyDir" in v:
                size = (v["emptyDir"] or {}).get("sizeLimit")
                opt = f"rw,mode=1777" + (f",size={_q(size)}" if size else "")
                args += ["--tmpfs", f"{m['mountPath']}:{opt}"]
            elif "secret" in v:
                d = self._secret_dir(pdir, m["name"], ns, v["secret"], fsgroup)
                args += ["-v", f"{d}:{m['mountPath']}{ro}"]
            elif "hostPath" in v:
                hp = v["hostPath"]
                src = os.path.join(self.node_root, hp["path"].lstrip("/"))
                if hp.get("type") == "Directory" and not os.path.isdir(src):
                    raise RuntimeError(f"{name}: hostPath {hp['path']} is not a directory on the node")
                args += ["-v", f"{src}:{m['mountPath']}{ro}"]
            else:
                raise RuntimeError(f"{name}: volume {m['name']}: kind not run here")
        sa_auto = spec.get("automountServiceAccountToken", True)
        if sa_auto:
            d = os.path.join(pdir, "serviceaccount")
            os.makedirs(d)
            for fn, data in (("token", self.api["token"]), ("ca.crt", open(self.api["ca"]).read()),
                             ("namespace", ns)):
                self._write(os.path.join(d, fn), data, 0o440 if fn == "token" else 0o444, fsgroup)
            args += ["-v", f"{d}:/var/run/secrets/kubernetes.io/serviceaccount:ro"]
        # Environment: service links, then envFrom, then env (later wins).
        env = {}
        if spec.get("enableServiceLinks", True):
            env.update(self.service_env(ns))
        env["KUBERNETES_SERVICE_HOST"] = self.gateway
        env["KUBERNETES_SERVICE_PORT"] = "443"
        env["KUBERNETES_SERVICE_PORT_HTTPS"] = "443"
        env["KUBERNETES_PORT"] = f"tcp://{self.gateway}:443"
        for ef in c.get("envFrom", []):
            pre = ef.get("prefix", "")
            if "configMapRef" in ef or "secretRef" in ef:
                ref = ef.get("configMapRef") or ef.get("secretRef")
                kind = "configmap" if "configMapRef" in ef else "secret"
                try:
                    obj = self._api_get(kind, ns, ref["name"])
                except RuntimeError:
                    if ref.get("optional"):
                        continue
                    raise
                for k, val in (obj.get("data") or {}).items():
                    env[pre + k] = base64.b64decode(val).decode() if kind == "secret" else val
        for e in c.get("env", []):
            env[e["name"]] = self._env_value(e, pod, ns, env)
        envfile = os.path.join(pdir, "env")
        with open(os.open(envfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            for k, val in env.items():
                if "\n" in val:
                    raise RuntimeError(f"{name}: env {k} has a newline (not passed here)")
                f.write(f"{k}={val}\n")
        args += ["--env-file", envfile]
        if c.get("command"):
            args += ["--entrypoint", json.dumps(c["command"])]
        args.append(c["image"])
        args += [self._expand(a, env) for a in c.get("args", [])]
        self._pm(*args)
        pod.started = time.time()
        pod.ip = self._pm("inspect", "-f", "{{.NetworkSettings.IPAddress}}", name).strip()
        with self._lock:
            self.pods[name] = pod
        threading.Thread(target=self._prober, args=(pod, c), daemon=True).start()
        return pod

    def _write(self, path, data, mode, fsgroup):
        with open(path, "w") as f:
            f.write(data)
        os.chmod(path, mode)
        if fsgroup is not None:
            os.chown(path, 0, fsgroup)

    def _secret_dir(self, pdir, vname, ns, sv, fsgroup):
        d = os.path.join(pdir, "volumes", vname)
        os.makedirs(d)
        os.chmod(d, 0o755)
        sec = self._api_get("secret", ns, sv["secretName"])
        mode = sv.get("defaultMode", 0o644)
        items = sv.get("items")
        data = sec.get("data") or {}
        pairs = [(it["key"], it["path"]) for it in items] if items else [(k, k) for k in data]
        for key, path in pairs:
            self._write(os.path.join(d, path), base64.b64decode(data[key]).decode(), mode, fsgroup)
        return d

    @staticmethod
    def _expand(s, env):
        return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                      lambda m: env.get(m.group(1), m.group(0)), s)

    def _env_value(self, e, pod, ns, env):
        if "value" in e:
            return self._expand(str(e["value"]), env)
        vf = e.get("valueFrom") or {}
        if "fieldRef" in vf:
            path = vf["fieldRef"]["fieldPath"]
            fields = {"metadata.name": pod.name, "metadata.namespace": ns,
                      "spec.serviceAccountName": pod.spec.get("serviceAccountName", "default"),
                      "spec.nodeName": "podlet"}
            m = re.fullmatch(r"metadata\.labels\['(.+)'\]", path)
            if m:
                return pod.labels.get(m.group(1), "")
            if path not in fields:
                raise RuntimeError(f"{pod.name}: env {e['name']}: fieldRef {path} not run here")
            return fields[path]
        for key, kind in (("secretKeyRef", "secret"), ("configMapKeyRef", "configmap")):
            if key in vf:
                ref = vf[key]
                obj = self._api_get(kind, ns, ref["name"])
                val = (obj.get("data") or {})[ref["key"]]
                return base64.b64decode(val).decode() if kind == "secret" else val
        raise RuntimeError(f"{pod.name}: env {e['name']}: valueFrom not run here")

    # --- probes ---------------------------------------------------------------
    def http_probe(self, pod, probe):
        hg = probe["httpGet"]
        url = f"http://{pod.ip}:{pod.port(hg['port'])}{hg.get('path', '/')}"
        try:
            with urllib.request.urlopen(url, timeout=probe.get("timeoutSeconds", 1)) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return 0

    def _prober(self, pod, c):
        rp, lp = c.get("readinessProbe"), c.get("livenessProbe")
        nxt_r = pod.started + (rp or {}).get("initialDelaySeconds", 0)
        nxt_l = pod.started + (lp or {}).get("initialDelaySeconds", 0)
        r_fail = r_ok = l_fail = 0
        while not self._stop.is_set() and pod.exit_code is None and not pod.deleting:
            now = time.time()
            if rp and now >= nxt_r:
                ok = 200 <= self.http_probe(pod, rp) < 400
                r_ok, r_fail = (r_ok + 1, 0) if ok else (0, r_fail + 1)
                if not pod.ready and r_ok >= rp.get("successThreshold", 1):
                    pod.ready, pod.ready_since = True, time.time()
                if pod.ready and r_fail >= rp.get("failureThreshold", 3):
                    pod.ready = False
                nxt_r = now + rp.get("periodSeconds", 10)
            if lp and now >= nxt_l:
                ok = 200 <= self.http_probe(pod, lp) < 400
                l_fail = 0 if ok else l_fail + 1
                if l_fail >= lp.get("failureThreshold", 3):
                    pod.live_failures += 1   # a kubelet would restart it; the test fails
                    l_fail = 0
                nxt_l = now + lp.get("periodSeconds", 10)
            time.sleep(0.2)
        pod.ready = False

    def wait_ready(self, pod, secs):
        t0 = time.time()
        while time.time() - t0 < secs:
            if pod.ready:
                return True
            if self.exited(pod) is not None:
                return False
            time.sleep(0.2)
        return False

    def exited(self, pod):
        st = self._pm("inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", pod.name,
                      check=False).split()
        if st and st[0] in ("exited", "stopped"):
            pod.exit_code = int(st[1])
        return pod.exit_code

    # --- deletion ---------------------------------------------------------------
    def delete_pod(self, pod):
        """As the API server and kubelet do on delete: out of the endpoints,
        SIGTERM, SIGKILL after the grace period; returns the exit code."""
        pod.deleting = True
        pod.ready = False
        grace = pod.spec.get("terminationGracePeriodSeconds", 30)
        self._pm("stop", "-t", str(grace), pod.name, check=False)
        for _ in range(50):
            if self.exited(pod) is not None:
                break
            time.sleep(0.1)
        self.save_log(pod)
        with self._lock:
            self.pods.pop(pod.name, None)
        return pod.exit_code

    def save_log(self, pod):
        out = subprocess.run(self.podman + ["logs", pod.name], capture_output=True, text=True)
        path = os.path.join(self.state, f"{pod.name}.log")
        with open(path, "w") as f:
            f.write(out.stdout + out.stderr)
        return path

    def logs(self, pod):
        out = subprocess.run(self.podman + ["logs", pod.name], capture_output=True, text=True)
        return out.stdout + out.stderr

    def scale(self, dep_name, n):
        """Reconcile the Deployment to n running pods as a ReplicaSet does:
        new pods to scale up; on scale down the newest ready pods go first
        (the ReplicaSet's ranking among equally ready pods).  Returns
        (started, [(pod, exit code)] deleted)."""
        mine = sorted((p for p in self.pods.values() if p.dep["metadata"]["name"] == dep_name
                       and not p.deleting), key=lambda p: p.started)
        started, deleted = [], []
        for _ in range(n - len(mine)):
            started.append(self.run_pod(dep_name))
        for p in reversed(mine[n:] if n < len(mine) else []):
            deleted.append((p, self.delete_pod(p)))
        return started, deleted

    def close(self):
        self._stop.set()
        for sp in self.ports:
            sp.close()
        ids = self._pm("ps", "-aq", "--filter", f"label=tailor.test/run={self.run_id}",
                       check=False).split()
        if ids:
            self._pm("rm", "-f", "-t", "2", *ids, check=False)
        shutil.rmtree(os.path.join(self.state, "pods"), ignore_errors=True)
