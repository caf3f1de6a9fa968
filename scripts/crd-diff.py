#!/usr/bin/python3
"""crd-diff.py KARPENTER_CRD_DIR [TAILOR_CRD_DIR] - do tailor's CRDs say what Karpenter's say?

A developer tool, not a CI test (CI has neither network nor the Karpenter
sources).  It loads the NodePool, NodeClaim and EC2NodeClass CRDs from both
directories (TAILOR_CRD_DIR defaults to deploy/crds beside this script) and
prints every difference in their spec: group, names, scope, the versions
(served, storage, subresources, printer columns) and each version's
openAPIV3Schema, compared node by node (properties, type, format, enum,
pattern, bounds, required, defaults, x-kubernetes-* markers and CEL rules
with their messages).  Field descriptions and the CRD object's own
metadata (labels, annotations) are not compared: tailor's files leave the
descriptions out and carry tailor's part-of label.

Exit 0 when the specs are identical, 1 on any difference, 2 on bad usage
or an unreadable file.  Karpenter's CRDs live in aws/karpenter-provider-aws
under pkg/apis/crds (or charts/karpenter-crd/templates, which adds only
Helm annotations); deploy/README.md says how to fetch them.
"""
import os
import sys

import yaml

FILES = [
    "karpenter.sh_nodepools.yaml",
    "karpenter.sh_nodeclaims.yaml",
    "karpenter.k8s.aws_ec2nodeclasses.yaml",
]
IGNORED = {"description"}   # schema keys not compared, and why: see above


def load(path):
    with open(path) as f:
        text = f.read()
    # the chart's copies wrap metadata in Helm template lines; spec has none
    text = "\n".join(l for l in text.splitlines() if "{{" not in l)
    docs = [d for d in yaml.safe_load_all(text) if d]
    crds = [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
    if len(crds) != 1:
        raise ValueError(f"{path}: {len(crds)} CustomResourceDefinitions, want 1")
    return crds[0]


def strip(node, under_properties=False):
    """node without descriptions; property maps keep a property named description"""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if not under_properties and k in IGNORED and isinstance(v, str):
                continue
            out[k] = strip(v, k in ("properties", "definitions")
                           and not under_properties)
        return out
    if isinstance(node, list):
        return [strip(x) for x in node]
    return node


def keyed(items, key):
    """a list of named entries (versions, printer columns) as a dict, order kept apart"""
    return {str(x.get(key)): x for x in items}, [str(x.get(key)) for x in items]


def compare(a, b, path, out):
    """every difference between a (Karpenter) and b (tailor) under path"""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}"
            if k not in b:
                out.append(f"{p}: missing in tailor (Karpenter: {brief(a[k])})")
            elif k not in a:
                out.append(f"{p}: only in tailor ({brief(b[k])})")
            else:
                compare(a[k], b[k], p, out)
        return
    if isinstance(a, list) and isinstance(b, list):
        named = (all(isinstance(x, dict) and "name" in x for x in a + b) and a and b)
        ruled = (all(isinstance(x, dict) and "rule" in x for x in a + b) and a and b)
        if named or ruled:
            key = "name" if named else "rule"
            da, oa = keyed(a, key)
            db, ob = keyed(b, key)
            for k in oa:
                if k not in db:
                    out.append(f"{path}[{key}={brief(k)}]: missing in tailor")
                else:
                    compare(da[k], db[k], f"{path}[{key}={brief(k)}]", out)
            for k in ob:
                if k not in da:
                    out.append(f"{path}[{key}={brief(k)}]: only in tailor")
            if [k for k in oa if k in db] != [k for k in ob if k in da]:
                out.append(f"{path}: order differs (Karpenter {oa}, tailor {ob})")
            return
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} entries in Karpenter, {len(b)} in tailor "
                       f"(Karpenter {brief(a)}, tailor {brief(b)})")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{path}[{i}]", out)
        return
    if a != b or type(a) is not type(b):
        out.append(f"{path}: Karpenter {brief(a)}, tailor {brief(b)}")


def brief(v, n=100):
    s = repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def main(argv):
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    kdir = argv[1]
    tdir = argv[2] if len(argv) == 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "deploy", "crds")
    total = 0
    for f in FILES:
        try:
            k = load(os.path.join(kdir, f))
            t = load(os.path.join(tdir, f))
        except (OSError, ValueError, yaml.YAMLError) as e:
            print(f"crd-diff: {e}", file=sys.stderr)
            return 2
        out = []
        compare(strip(k["spec"]), strip(t["spec"]), "spec", out)
        if k.get("metadata", {}).get("name") != t.get("metadata", {}).get("name"):
            out.insert(0, f"metadata.name: Karpenter {k['metadata'].get('name')!r}, "
                          f"tailor {t['metadata'].get('name')!r}")
        for line in out:
            print(f"{f}: {line}")
        print(f"{f}: {len(out)} difference{'s' if len(out) != 1 else ''}")
        total += len(out)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
