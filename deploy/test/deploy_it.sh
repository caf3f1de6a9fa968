#!/usr/bin/env bash
# deploy_it.sh KUBESIM - the deploy/ manifests parse and apply.
#
#  1. real kubectl (1.27 and 1.33) builds deploy/base, the overlays
#     deploy/overlays/prod and deploy/overlays/dev, deploy/webhook/,
#     deploy/policies/ and deploy/certs/ with its own kustomize (every
#     object parsed, with apiVersion, kind and name);
#  2. what the issue asks of them holds, on the prod overlay (probes,
#     replicas, leader election, HPA, IRSA, non-root and read-only root,
#     least-privilege RBAC without wildcards, PDBs, NetworkPolicies, IAM
#     JSON, images) and what the dev overlay changes (local images never
#     pulled, one launcher and disruptor, the local cluster's settings, no
#     IRSA);
#  3. kubectl apply --dry-run=server of both overlays, then apply of the
#     prod overlay for real, of every object whose kind kubesim serves; the kinds it does not serve (RBAC, CRDs,
#     HPA, NetworkPolicy, admission and Gatekeeper objects) are listed and
#     must be exactly the known ones, so a kind kubesim gains is applied
#     from then on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
deploy=$(cd "$here/.." && pwd)
. "$deploy/../integration-tests/lib.sh"
. "$deploy/../integration-tests/tailorctl/kubesim.sh"
kubesim=$1
work=$(mktemp -d)
trap 'stop_kubesim; rm -rf "$work"' EXIT

for v in 1.27 1.33; do
  k=/usr/lib/google-cloud-sdk/bin/kubectl.$v
  check "kubectl $v kustomize deploy/base (36 objects)" bash -c \
    "$k kustomize '$deploy/base' >'$work/base-$v.yaml' && [ \$(grep -c '^kind:' '$work/base-$v.yaml') = 36 ]"
  check "kubectl $v kustomize deploy/overlays/prod (36 objects)" bash -c \
    "$k kustomize '$deploy/overlays/prod' >'$work/all-$v.yaml' && [ \$(grep -c '^kind:' '$work/all-$v.yaml') = 36 ]"
  check "kubectl $v kustomize deploy/overlays/dev (36 objects)" bash -c \
    "$k kustomize '$deploy/overlays/dev' >'$work/dev-$v.yaml' && [ \$(grep -c '^kind:' '$work/dev-$v.yaml') = 36 ]"
  check "kubectl $v kustomize deploy/webhook (8 objects)" bash -c \
    "$k kustomize '$deploy/webhook' >'$work/webhook-$v.yaml' && [ \$(grep -c '^kind:' '$work/webhook-$v.yaml') = 8 ]"
  check "kubectl $v kustomize deploy/policies (6 objects)" bash -c \
    "$k kustomize '$deploy/policies' >'$work/policies-$v.yaml' && [ \$(grep -c '^kind:' '$work/policies-$v.yaml') = 6 ]"
  check "kubectl $v kustomize deploy/certs (8 objects)" bash -c \
    "$k kustomize '$deploy/certs' >'$work/certs-$v.yaml' && [ \$(grep -c '^kind:' '$work/certs-$v.yaml') = 8 ]"
done
cat "$work/all-1.33.yaml" >"$work/all.yaml"
printf -- '---\n' >>"$work/all.yaml"
cat "$work/webhook-1.33.yaml" >>"$work/all.yaml"

check "what the manifests must say" /usr/bin/python3 - "$work/all.yaml" "$deploy" "$work/dev-1.33.yaml" "$work/base-1.33.yaml" <<'PY'
import json, sys, glob, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
deploy = sys.argv[2]
bad = []
def need(c, what):
    if not c:
        bad.append(what)
by = {}
for d in docs:
    need(d.get("apiVersion") and d.get("kind") and d["metadata"].get("name"), f"object without identity: {d}")
    by.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
deps = by["Deployment"]
for n in ["tailor-watcher", "tailor-solver", "tailor-launcher", "tailor-disruptor"]:
    d = deps[n]; p = d["spec"]["template"]["spec"]; c = p["containers"][0]
    need(c["livenessProbe"]["httpGet"]["path"] == "/healthz", f"{n}: liveness /healthz")
    need(c["readinessProbe"]["httpGet"]["path"] == "/readyz", f"{n}: readiness /readyz")
    need(c["securityContext"]["readOnlyRootFilesystem"] is True, f"{n}: read-only root")
    need(c["securityContext"]["allowPrivilegeEscalation"] is False, f"{n}: no privilege escalation")
    need(p["securityContext"]["runAsNonRoot"] is True and p["securityContext"]["runAsUser"] != 0, f"{n}: non-root")
    need(p["serviceAccountName"] == n, f"{n}: its own ServiceAccount")
    env = {e["name"]: e["value"] for e in c["env"]}
    need(env["TAILOR_HTTP_LISTEN"].startswith("0.0.0.0:"), f"{n}: HTTP on all interfaces")
    need(n in by["Service"], f"{n}: a Service for its nng endpoints")
    need(n in by["PodDisruptionBudget"], f"{n}: a PDB")
    need(n in by["NetworkPolicy"], f"{n}: a NetworkPolicy")
    urls = [u for k, v in env.items() if k in ("TAILOR_LISTEN", "TAILOR_PUBLISH", "TAILOR_WATCHER",
            "TAILOR_WATCHER_REP", "TAILOR_WATCHER_PUBLISH", "TAILOR_LAUNCHER", "TAILOR_SOLVER", "TAILOR_DECISIONS")
            for u in v.split(",")]
    need(urls and all(u.startswith("tls+tcp://") for u in urls), f"{n}: every nng URL is tls+tcp://")
    need(env.get("TAILOR_TLS_CERT") == "/etc/tailor/tls/tls.crt" and env.get("TAILOR_TLS_CA") and
         env.get("TAILOR_TLS_KEY") and "TAILOR_INSECURE_TRANSPORT" not in env, f"{n}: mutual TLS files")
    vols = {v["name"]: v for v in p["volumes"]}
    need(vols.get("tls", {}).get("secret", {}).get("secretName") == n + "-tls", f"{n}: mounts its certificate Secret")
    need(any(m["name"] == "tls" and m["mountPath"] == "/etc/tailor/tls" and "subPath" not in m
             for m in c["volumeMounts"]), f"{n}: certificate directory mounted (no subPath: renewals show)")
certs = [d for d in yaml.safe_load_all(open(deploy + "/certs/certificates.yaml")) if d]
cns = {d["spec"]["commonName"]: d for d in certs if d["kind"] == "Certificate" and not d["spec"].get("isCA")}
need(set(cns) == {"tailor-watcher", "tailor-solver", "tailor-launcher", "tailor-disruptor", "tailorctl"},
     "a Certificate per identity")
for cn, d in cns.items():
    need(d["spec"]["secretName"] == cn + "-tls" and d["spec"]["issuerRef"]["name"] == "tailor-transport-ca",
         f"{cn}: Secret {cn}-tls from the transport CA")
for n in ["tailor-launcher", "tailor-disruptor"]:
    d = deps[n]; env = {e["name"]: e["value"] for e in d["spec"]["template"]["spec"]["containers"][0]["env"]}
    need(d["spec"]["replicas"] == 2, f"{n}: 2 replicas")
    need(env.get("TAILOR_LEADER_ELECT") == "true", f"{n}: leader election on")
    sa = by["ServiceAccount"][n]
    need(sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::"), f"{n}: IRSA role")
need(by["HorizontalPodAutoscaler"]["tailor-solver"]["spec"]["scaleTargetRef"]["name"] == "tailor-solver", "solver HPA")
need(by["ServiceAccount"]["tailor-solver"].get("automountServiceAccountToken") is False, "solver: no API token")
need("tailor-default-deny" in by["NetworkPolicy"], "default-deny NetworkPolicy")
for n in ["nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"]:
    need(n in by["CustomResourceDefinition"], f"CRD {n}")
for kind in ["ClusterRole", "Role"]:
    for n, r in by[kind].items():
        for rule in r["rules"]:
            need("*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule.get("apiGroups", []),
                 f"{kind} {n}: no wildcards")
ev = [r for r in by["ClusterRole"]["tailor-disruptor"]["rules"] if "pods/eviction" in r["resources"]]
need(ev and ev[0]["verbs"] == ["create"], "disruptor evicts through the Eviction API")
need(not any("pods/eviction" in r["resources"] for r in by["ClusterRole"]["tailor-launcher"]["rules"]), "launcher never evicts")
watcher_writes = {(res, v) for r in by["ClusterRole"]["tailor-watcher"]["rules"] for res in r["resources"]
                  for v in r["verbs"] if v not in ("get", "list", "watch")}
need(watcher_writes == {("events", "create"), ("events", "patch"), ("nodepools/status", "patch"),
                        ("ec2nodeclasses/status", "patch")},
     "watcher writes only Events and NodePool/EC2NodeClass status")
need(by["ValidatingWebhookConfiguration"]["tailor-pdb-check"]["webhooks"][0]["admissionReviewVersions"] == ["v1"], "webhook: AdmissionReview v1")
for f in glob.glob(deploy + "/iam/*.json"):
    pol = json.load(open(f))
    for st in pol["Statement"]:
        acts = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        need(all("*" not in a for a in acts), f"{f}: no wildcard actions")
launcher = json.load(open(deploy + "/iam/tailor-launcher-policy.json"))
acts = {a for st in launcher["Statement"] for a in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])}
need({"ec2:CreateFleet", "ec2:TerminateInstances", "ssm:GetParameter", "pricing:GetProducts", "iam:PassRole", "eks:DescribeCluster", "iam:CreateInstanceProfile", "iam:AddRoleToInstanceProfile"} <= acts, "launcher IAM actions")
disr = json.load(open(deploy + "/iam/tailor-disruptor-policy.json"))
acts = {a for st in disr["Statement"] for a in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])}
need({"sqs:ReceiveMessage", "sqs:DeleteMessage"} <= acts, "disruptor IAM actions")
need(not ({"ec2:DescribeImages", "ec2:DescribeInstances", "ssm:GetParameter"} & acts),
     "disruptor: no AMI or instance reads (AMI drift reads the launcher's status.amis)")
df = open(deploy + "/docker/Dockerfile").read()
for t in ["watcher", "solver", "launcher", "disruptor", "tailorctl"]:
    need(f"AS {t}\n" in df, f"Dockerfile target {t}")
need("USER 65532:65532" in df and df.count("FROM ") >= 7, "Dockerfile: multi-stage, non-root")
# The dev overlay: the base with local images and the local cluster's settings.
dev = {}
for d in yaml.safe_load_all(open(sys.argv[3])):
    if d:
        dev.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
for n in ["tailor-watcher", "tailor-solver", "tailor-launcher", "tailor-disruptor"]:
    c = dev["Deployment"][n]["spec"]["template"]["spec"]["containers"][0]
    need(c["image"] == f"localhost/{n.replace('tailor-', 'tailor/tailor-')}:dev" and
         c["imagePullPolicy"] == "Never", f"dev {n}: the local image, never pulled")
    need(c["livenessProbe"] == deps[n]["spec"]["template"]["spec"]["containers"][0]["livenessProbe"],
         f"dev {n}: the base's probes")
for n in ["tailor-launcher", "tailor-disruptor"]:
    d = dev["Deployment"][n]; c = d["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    need(d["spec"]["replicas"] == 1, f"dev {n}: one replica")
    need(env["TAILOR_CLUSTER_NAME"] == "tailor-local" and env["TAILOR_AWS_ENDPOINT"].startswith("http://")
         and env["AWS_SHARED_CREDENTIALS_FILE"].startswith("/etc/tailor/aws/"), f"dev {n}: the local cluster's moto")
    need("eks.amazonaws.com/role-arn" not in (dev["ServiceAccount"][n]["metadata"].get("annotations") or {}),
         f"dev {n}: no IRSA role")
need(dev["Deployment"]["tailor-solver"]["spec"]["replicas"] == 2, "dev: two solvers")
need(dev["Namespace"]["tailor"]["metadata"]["labels"]["pod-security.kubernetes.io/warn"] == "restricted",
     "dev: the namespace still warns about what Pod Security restricted refuses")
base = [d for d in yaml.safe_load_all(open(sys.argv[4])) if d]
need(not any("eks.amazonaws.com/role-arn" in (d["metadata"].get("annotations") or {}) for d in base),
     "base: no account-specific IRSA role")
for b in bad:
    print("  missing:", b)
sys.exit(1 if bad else 0)
PY

# --- kubesim: apply what it serves -------------------------------------------
start_kubesim "$kubesim" "$work"
K=$(kubectl_for 1.33)
$K api-resources --no-headers 2>/dev/null | awk '{print $NF}' | sort -u >"$work/served"
/usr/bin/python3 - "$work/all.yaml" "$work/served" "$work/apply.yaml" "$work/skipped" <<'PY'
import sys, yaml
served = set(open(sys.argv[2]).read().split())
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
keep = [d for d in docs if d["kind"] in served]
open(sys.argv[3], "w").write(yaml.safe_dump_all(keep, sort_keys=False))
open(sys.argv[4], "w").write("\n".join(sorted({d["kind"] for d in docs if d["kind"] not in served})) + "\n")
PY
echo "kinds kubesim does not serve (not applied): $(tr '\n' ' ' <"$work/skipped")"
check "only the known kinds are not served" bash -c "[ \"\$(tr '\n' ' ' <'$work/skipped')\" = \
'ClusterRole ClusterRoleBinding CustomResourceDefinition HorizontalPodAutoscaler NetworkPolicy Role RoleBinding ValidatingWebhookConfiguration ' ]"
# A server-side dry run of namespaced objects needs their namespace to
# exist (as on a real API server): create it, then dry-run the rest.
check "kubectl create the namespace" bash -c "$K apply --validate=false -f '$deploy/base/namespace.yaml' >/dev/null"
check "kubectl apply --dry-run=server of the served objects" bash -c \
  "$K apply --validate=false --dry-run=server -f '$work/apply.yaml' >'$work/dry.txt' 2>&1 || { cat '$work/dry.txt'; false; }"
/usr/bin/python3 - "$work/dev-1.33.yaml" "$work/served" "$work/apply-dev.yaml" <<'PY'
import sys, yaml
served = set(open(sys.argv[2]).read().split())
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] in served]
open(sys.argv[3], "w").write(yaml.safe_dump_all(docs, sort_keys=False))
PY
check "kubectl apply --dry-run=server of the dev overlay's served objects" bash -c \
  "$K apply --validate=false --dry-run=server -f '$work/apply-dev.yaml' >'$work/dry-dev.txt' 2>&1 || { cat '$work/dry-dev.txt'; false; }"
check "the dry run created nothing" bash -c "! $K get deploy -n tailor -o name 2>/dev/null | grep -q ."
check "kubectl apply of the served objects" bash -c "$K apply --validate=false -f '$work/apply.yaml' >'$work/apply.txt' 2>&1 || { cat '$work/apply.txt'; false; }"
check "five Deployments, five Services, five PDBs, five ServiceAccounts in tailor" bash -c \
  "[ \$($K get deploy -n tailor -o name | wc -l) = 5 ] && [ \$($K get svc -n tailor -o name | wc -l) = 5 ] && \
   [ \$($K get pdb -n tailor -o name | wc -l) = 5 ] && [ \$($K get sa -n tailor -o name | grep -c tailor-) = 5 ]"
# kubesim reports its PDBs "configured" on every re-apply (a kubesim
# quirk, not the manifests'); everything else must be unchanged.
check "re-apply leaves Deployments, Services and ServiceAccounts unchanged" bash -c \
  "$K apply --validate=false -f '$work/apply.yaml' | grep -v '^poddisruptionbudget' | grep -vc unchanged | grep -qx 0"
check "the launcher keeps its IRSA annotation" bash -c \
  "$K get sa tailor-launcher -n tailor -o jsonpath='{.metadata.annotations.eks\\.amazonaws\\.com/role-arn}' | grep -q '^arn:aws:iam::'"
finish
