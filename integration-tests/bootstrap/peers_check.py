#!/usr/bin/python3
"""peers_check.py - tailor's user data read by independent parsers.

Runs bootstrap_gen (argv[1]) into a temporary directory, then reads what
it wrote with Python's own parsers: the email package for the MIME
documents (AL2023, AL2), yaml (PyYAML, Debian's python3-yaml) for the
NodeConfig parts, tomllib for Bottlerocket.  It checks the values for the
fixed inputs in bootstrap_gen.c, not only that the text parses.

The NodeConfig checks restate, by hand, the structural rules of nodeadm's
CRD schema (awslabs/amazon-eks-ami, nodeadm/crds/node.eks.aws_nodeconfigs.yaml,
openAPIV3Schema, generated from nodeadm/api/v1alpha1/nodeconfig_types.go):
apiVersion and kind are strings; spec.cluster.{name, apiServerEndpoint,
cidr} are strings and certificateAuthority is a string of format "byte"
(base64); spec.kubelet.config is an object (of objects/any, preserved);
spec.kubelet.flags is an array of strings; spec.instance.localStorage.strategy
is one of RAID0, RAID10, Mount.  The schema itself is not in this
repository and CI has no network to fetch it.

Exit status: 0 all checks passed, 1 a check failed, 77 a parser is missing.
"""
import base64
import binascii
import email
import email.policy
import os
import subprocess
import sys
import tempfile

try:
    import tomllib
except ImportError:
    print("SKIP: this Python has no tomllib (needs 3.11)")
    sys.exit(77)
try:
    import yaml
except ImportError:
    yaml = None

CLUSTER = {
    "name": "peer-cluster",
    "apiServerEndpoint": "https://PEER.gr7.us-west-2.eks.amazonaws.com",
    "certificateAuthority": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
    "cidr": "10.100.0.0/16",
}
SHELL_CT = "text/x-shellscript"
NODECONFIG_CT = "application/node.eks.aws"
USER_SCRIPT = "#!/bin/bash\necho \"user's script\" > /tmp/marker"

failures = []


def check(cond, what, got=None, want=None):
    if not cond:
        msg = "FAIL " + what
        if got is not None or want is not None:
            msg += "\n  got  %r\n  want %r" % (got, want)
        failures.append(msg)
        print(msg)


def load_yaml(text):
    if yaml is not None:
        return yaml.safe_load(text)
    # Without PyYAML: tailor's NodeConfig is block YAML whose quoted scalars
    # are JSON strings; a tiny reader for exactly that subset.
    return mini_yaml(text)


def mini_yaml(text):
    import json
    lines = [l for l in text.split("\n") if l.strip() and not l.lstrip().startswith("#")]

    def scalar(s):
        s = s.strip()
        if s.startswith('"'):
            return json.loads(s)
        if s in ("true", "false"):
            return s == "true"
        if s == "null":
            return None
        if s == "{}":
            return {}
        if s == "[]":
            return []
        try:
            return int(s)
        except ValueError:
            return s

    def block(i, ind):
        if lines[i][ind:].startswith("- "):
            out = []
            while i < len(lines) and lines[i].startswith(" " * ind + "- "):
                lines[i] = " " * (ind + 2) + lines[i][ind + 2:]
                if ":" in lines[i] and not lines[i].strip().startswith('"'):
                    v, i = block(i, ind + 2)
                else:
                    v, i = scalar(lines[i]), i + 1
                out.append(v)
            return out, i
        out = {}
        while i < len(lines) and len(lines[i]) - len(lines[i].lstrip()) == ind:
            k, _, rest = lines[i].strip().partition(":")
            k = scalar(k)
            if rest.strip():
                out[k], i = scalar(rest), i + 1
            else:
                nxt = len(lines[i + 1]) - len(lines[i + 1].lstrip())
                out[k], i = block(i + 1, nxt)
        return out, i

    return block(0, 0)[0]


def parse_mime(path):
    with open(path, encoding="ascii") as f:
        text = f.read()
    msg = email.message_from_string(text, policy=email.policy.default)
    check(msg.get("MIME-Version") == "1.0", path + ": MIME-Version", msg.get("MIME-Version"), "1.0")
    check(msg.get_content_type() == "multipart/mixed", path + ": multipart/mixed",
          msg.get_content_type())
    check(msg.get_boundary() == "//", path + ": boundary", msg.get_boundary(), "//")
    check(not msg.defects, path + ": MIME defects", msg.defects, [])
    parts = list(msg.iter_parts())
    for p in parts:
        check(not p.defects, path + ": part defects", p.defects, [])
    return parts


def body(part):
    return part.get_payload(decode=False)


def check_nodeconfig_schema(nc, what):
    """nodeadm's CRD openAPIV3Schema, the structural rules (see the top)."""
    check(isinstance(nc, dict), what + ": a mapping", type(nc).__name__)
    check(nc.get("apiVersion") == "node.eks.aws/v1alpha1", what + ": apiVersion", nc.get("apiVersion"))
    check(nc.get("kind") == "NodeConfig", what + ": kind", nc.get("kind"))
    spec = nc.get("spec", {})
    check(isinstance(spec, dict), what + ": spec is an object")
    cl = spec.get("cluster", {})
    check(isinstance(cl, dict), what + ": spec.cluster is an object")
    for k, v in cl.items():
        if k == "enableOutpost":
            check(isinstance(v, bool), what + ": enableOutpost is a boolean")
        else:
            check(isinstance(v, str), what + ": spec.cluster.%s is a string" % k, type(v).__name__)
    if "certificateAuthority" in cl:
        try:
            base64.b64decode(cl["certificateAuthority"], validate=True)
        except (binascii.Error, TypeError):
            check(False, what + ": certificateAuthority is base64", cl["certificateAuthority"])
    kub = spec.get("kubelet", {})
    check(isinstance(kub, dict), what + ": spec.kubelet is an object")
    if "config" in kub:
        check(isinstance(kub["config"], dict), what + ": kubelet.config is an object")
    if "flags" in kub:
        check(isinstance(kub["flags"], list) and all(isinstance(f, str) for f in kub["flags"]),
              what + ": kubelet.flags is an array of strings", kub["flags"])
    strat = spec.get("instance", {}).get("localStorage", {}).get("strategy")
    if strat is not None:
        check(strat in ("RAID0", "RAID10", "Mount"), what + ": localStorage.strategy", strat)


def check_tailor_nodeconfig(part, what, raid0, kubelet_fields):
    check(part.get_content_type() == NODECONFIG_CT, what + ": last part is a NodeConfig",
          part.get_content_type(), NODECONFIG_CT)
    text = body(part)
    check(text.startswith("# tailor generated NodeConfig\n"), what + ": header comment")
    nc = load_yaml(text)
    check_nodeconfig_schema(nc, what)
    check(nc["spec"]["cluster"] == CLUSTER, what + ": spec.cluster", nc["spec"]["cluster"], CLUSTER)
    kub = nc["spec"]["kubelet"]
    check(kub.get("flags") == ["--node-labels=karpenter.sh/nodepool=default,team=yes"],
          what + ": flags", kub.get("flags"))
    cfg = kub["config"]
    check(cfg.get("maxPods") == 29, what + ": maxPods", cfg.get("maxPods"), 29)
    check(cfg.get("clusterDNS") == ["10.100.0.10"], what + ": clusterDNS", cfg.get("clusterDNS"))
    want_taints = [{"effect": "NoSchedule", "key": "dedicated", "value": "gpu"},
                   {"effect": "NoExecute", "key": "karpenter.sh/unregistered"}]
    check(cfg.get("registerWithTaints") == want_taints, what + ": registerWithTaints",
          cfg.get("registerWithTaints"), want_taints)
    if kubelet_fields:
        check(cfg.get("systemReserved") == {"cpu": "500m", "memory": "512Mi"},
              what + ": systemReserved", cfg.get("systemReserved"))
        check(cfg.get("evictionHard") == {"memory.available": "100Mi"}, what + ": evictionHard",
              cfg.get("evictionHard"))
        check(cfg.get("imageGCHighThresholdPercent") == 85, what + ": imageGC",
              cfg.get("imageGCHighThresholdPercent"))
    strat = nc["spec"].get("instance", {}).get("localStorage", {}).get("strategy")
    check(strat == ("RAID0" if raid0 else None), what + ": RAID0", strat)


def check_al2023(d):
    parts = parse_mime(os.path.join(d, "al2023_plain"))
    check([p.get_content_type() for p in parts] == [SHELL_CT, NODECONFIG_CT],
          "al2023_plain: part types", [p.get_content_type() for p in parts])
    check(body(parts[0]) == "#!/bin/bash\necho plain\n", "al2023_plain: shell part intact",
          body(parts[0]))
    check_tailor_nodeconfig(parts[-1], "al2023_plain", True, True)

    parts = parse_mime(os.path.join(d, "al2023_mime"))
    types = [p.get_content_type() for p in parts]
    check(types == [SHELL_CT, NODECONFIG_CT, NODECONFIG_CT], "al2023_mime: part types", types)
    check(body(parts[0]) == USER_SCRIPT, "al2023_mime: user script intact", body(parts[0]),
          USER_SCRIPT)
    user_nc = load_yaml(body(parts[1]))
    check(user_nc["spec"]["kubelet"]["config"] == {"shutdownGracePeriod": "30s"},
          "al2023_mime: user NodeConfig kept", user_nc)
    check_tailor_nodeconfig(parts[-1], "al2023_mime", False, True)

    parts = parse_mime(os.path.join(d, "al2023_yaml"))
    types = [p.get_content_type() for p in parts]
    check(types == [NODECONFIG_CT, NODECONFIG_CT], "al2023_yaml: part types", types)
    user_nc = load_yaml(body(parts[0]))
    check_nodeconfig_schema(user_nc, "al2023_yaml user part")
    check(user_nc["spec"]["instance"]["localStorage"]["strategy"] == "Mount",
          "al2023_yaml: user NodeConfig kept", user_nc)
    check_tailor_nodeconfig(parts[-1], "al2023_yaml", False, False)


def check_al2(d):
    parts = parse_mime(os.path.join(d, "al2_mime"))
    types = [p.get_content_type() for p in parts]
    check(types == [SHELL_CT, NODECONFIG_CT, SHELL_CT], "al2_mime: part types", types)
    check(body(parts[0]) == USER_SCRIPT, "al2_mime: user script intact", body(parts[0]))
    script = body(parts[-1])
    check(script.startswith("#!/bin/bash -xe\n"), "al2_mime: shebang", script[:20])
    for want in ("/etc/eks/bootstrap.sh 'peer-cluster' --apiserver-endpoint "
                 "'https://PEER.gr7.us-west-2.eks.amazonaws.com' --b64-cluster-ca "
                 "'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=='",
                 "--dns-cluster-ip '10.100.0.10'", "--use-max-pods false",
                 "--node-labels=\"karpenter.sh/nodepool=default,team=yes\"",
                 "--register-with-taints=\"dedicated=gpu:NoSchedule,"
                 "karpenter.sh/unregistered:NoExecute\"",
                 "--max-pods=29", "--system-reserved=\"cpu=500m,memory=512Mi\"",
                 "--eviction-hard=\"memory.available<100Mi\"", "--image-gc-high-threshold=85",
                 "--local-disks raid0"):
        check(want in script, "al2_mime: script has %r" % want, script)
    # The script is one shell command line: bash must accept its quoting.
    r = subprocess.run(["/bin/bash", "-n", "-c", script], capture_output=True, text=True)
    check(r.returncode == 0, "al2_mime: bash -n accepts the script", r.stderr)


def check_bottlerocket(d):
    with open(os.path.join(d, "bottlerocket"), "rb") as f:
        doc = tomllib.load(f)
    s = doc["settings"]
    check(s.get("host-containers") == {"admin": {"enabled": True}},
          "bottlerocket: the user's other settings kept", s.get("host-containers"))
    k = s["kubernetes"]
    for key, want in (("cluster-name", "peer-cluster"),
                      ("api-server", CLUSTER["apiServerEndpoint"]),
                      ("cluster-certificate", CLUSTER["certificateAuthority"]),
                      ("cluster-dns-ip", "10.100.0.10"),
                      ("max-pods", 29),
                      ("node-labels", {"karpenter.sh/nodepool": "default", "team": "yes",
                                       "user-only": "kept"}),
                      ("node-taints", {"dedicated": ["gpu:NoSchedule"],
                                       "karpenter.sh/unregistered": [":NoExecute"]}),
                      ("system-reserved", {"cpu": "500m", "memory": "512Mi"}),
                      ("eviction-hard", {"memory.available": "100Mi"}),
                      ("image-gc-high-threshold-percent", "85")):
        check(k.get(key) == want, "bottlerocket: settings.kubernetes.%s" % key, k.get(key), want)
    check("bootstrap-commands" not in s, "bottlerocket: no RAID0 command")

    with open(os.path.join(d, "bottlerocket_raid0"), "rb") as f:
        doc = tomllib.load(f)
    cmd = doc["settings"]["bootstrap-commands"]["000-mount-instance-storage"]
    want = {"commands": [["apiclient", "ephemeral-storage", "init"],
                         ["apiclient", "ephemeral-storage", "bind", "--dirs",
                          "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]],
            "essential": True, "mode": "always"}
    check(cmd == want, "bottlerocket_raid0: bootstrap command", cmd, want)


def main():
    if len(sys.argv) != 2:
        print("usage: peers_check.py BOOTSTRAP_GEN")
        return 2
    print("yaml parser:", "PyYAML " + yaml.__version__ if yaml else "built-in JSON-subset reader")
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.argv[1], d], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL bootstrap_gen:", r.stdout, r.stderr)
            return 1
        # Same inputs, same bytes.
        with tempfile.TemporaryDirectory() as d2:
            subprocess.run([sys.argv[1], d2], check=True)
            for name in sorted(os.listdir(d)):
                with open(os.path.join(d, name), "rb") as a, open(os.path.join(d2, name), "rb") as b:
                    check(a.read() == b.read(), name + ": deterministic")
        check_al2023(d)
        check_al2(d)
        check_bottlerocket(d)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all peer checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
