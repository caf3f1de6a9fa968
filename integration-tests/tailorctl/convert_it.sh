#!/usr/bin/env bash
# convert_it.sh TAILORCTL KUBESIM - tailorctl convert as a platform team
# runs it: a directory of 55 node-group ConfigMaps (the issue's example,
# three generations of m, r and c, AMD, Graviton, GPU, spot, storage, CI,
# a kubectl List) in; NodePools and EC2NodeClasses out, compared with the
# golden files, applied to kubesim with real kubectl 1.27 and 1.33, and
# read back by `tailorctl solve`.  Broken inputs exit 2 naming file and key.
#
# The catalog is ../shared/data/aws-instance-types.json (TAILOR_SHARED_DATA).
# UPDATE_GOLDEN=1 rewrites the golden files from this run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/kubesim.sh"
tctl=$1
kubesim=$2
fx=$here/fixtures/convert
golden=$here/golden
data=${TAILOR_SHARED_DATA:-$here/../../../shared/data}
catalog=$data/aws-instance-types.json
work=$(mktemp -d)
trap 'stop_kubesim; rm -rf "$work"' EXIT
[ -r "$catalog" ] || { echo "no catalog at $catalog"; exit 1; }

conv() {   # conv NAME ARGS...: run convert offline; stdout/stderr kept, RC set
  local name=$1
  shift
  RC=0
  env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
    -u AWS_ROLE_ARN -u AWS_WEB_IDENTITY_TOKEN_FILE AWS_EC2_METADATA_DISABLED=true \
    AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent \
    "$tctl" convert --catalog "$catalog" --cluster-name prod "$@" \
    >"$work/$name.out" 2>"$work/$name.err" || RC=$?
}
has() { grep -qF -- "$2" "$work/$1"; }
pyrep() {  # pyrep EXPR: a Python expression over the JSON report r
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$work/report.json" "$1"
}

# --- the directory ------------------------------------------------------------
conv dir "$fx" --report "$work/report.json"
check "converts: exit 0" [ "$RC" -eq 0 ]
check "reads 55 node groups from 15 files" has dir.err "15 files: 55 node groups -> 18 NodePools"
check "report: 55 groups, 18 pools, 7 classes, 37 merged away" pyrep \
  'r["node_groups"]==55 and r["nodepools"]==18 and r["ec2nodeclasses"]==7 and r["merged"]==37'
check "the example merges with the other single-AZ m5/m6i/m7i groups" pyrep \
  '[p for p in r["pools"] if "m5.8xlarge-min-300-max-2500" in p["node_groups"]][0]["families"]==["m5","m6i","m7i"]'
check "its limits: max nodes x vCPU summed over the merged groups" pyrep \
  '[p for p in r["pools"] if "m5.8xlarge-min-300-max-2500" in p["node_groups"]][0]["limits"]["cpu"]==2500*32+200*(8+16+48+16+16+32)+50*64'
check "AMD, Graviton and Intel m groups stay apart" pyrep \
  'len({p["name"] for p in r["pools"] if set(p["families"]) & {"m6a","m7a","m6g","m7g","m5"}})==4'
check "every field not carried over is reported (min, launch type, gp2 IOPS, ...)" pyrep \
  'len(r["not_carried"])==103 and {d["key"] for d in r["not_carried"]} >= {"k8s_min_node_number","asg_launch_type","k8s_root_volume_iops","k8s_user_data","k8s_desired_node_number","k8s_spot_max_price","asg_health_check_grace_period"}'
check "stderr names what was not carried, and why" has dir.err "k8s_root_volume_iops (3 node groups): only gp3, io1 and io2"
check "the name/type mismatch of the example is noted" has dir.err "the name says m5.8xlarge but k8s_instance_type is m6i.8xlarge"
check "names are DNS-1123 labels of at most 63 characters" python3 -c '
import json,re,sys,subprocess
names=re.findall(r"^  name: (.*)$", open(sys.argv[1]).read(), re.M)
ok=all(re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", n) for n in names)
print(len(names), "names"); sys.exit(0 if ok and len(names)==25 else 1)' "$work/dir.out"
check "GPU pools are tainted and restricted to GPU types" python3 -c '
import sys,re
docs=open(sys.argv[1]).read().split("\n---\n")
gpu=[d for d in docs if "kind: NodePool" in d and "nvidia.com/gpu: " in d]
amd=[d for d in docs if "kind: NodePool" in d and "amd.com/gpu: " in d]
ok=len(gpu)==5 and len(amd)==1 and all("instance-gpu-count" in d and "effect: NoSchedule" in d for d in gpu+amd)
sys.exit(0 if ok else 1)' "$work/dir.out"
check "root volumes become block device mappings" has dir.out "      volumeSize: 500Gi"
check "golden: the objects" diff -u "$golden/convert-karpenter.yaml" "$work/dir.out"
# the report names files by path: compare it with the fixture path made relative
sed "s|$fx/||g" "$work/report.json" >"$work/report.rel.json"
check "golden: the report" diff -u "$golden/convert-report.json" "$work/report.rel.json"
if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
  cp "$work/dir.out" "$golden/convert-karpenter.yaml"
  cp "$work/report.rel.json" "$golden/convert-report.json"
fi

# --- deterministic: the same files in another order, the same bytes ---------------
mapfile -t files < <(find "$fx" -type f \( -name '*.yaml' -o -name '*.json' \) | sort -r)
conv rev "${files[@]}"
check "any input order gives the same output" cmp -s "$work/dir.out" "$work/rev.out"
conv json "$fx" --format json --quiet
check "--format json is one List" python3 -c '
import json,sys; l=json.load(open(sys.argv[1])); sys.exit(0 if l["kind"]=="List" and len(l["items"])==25 else 1)' "$work/json.out"
check "--quiet prints no report" [ ! -s "$work/json.err" ]
conv strict "$fx" --strict
check "--strict: fields not carried exit 3" [ "$RC" -eq 3 ]
conv example "$fx/00-legacy-example.yaml" --out "$work/example.yaml"
check "--out writes the file; the example alone is one pool" bash -c \
  "[ ! -s '$work/example.out' ] && [ \$(grep -c '^kind: NodePool' '$work/example.yaml') = 1 ]"

# --- bad input ------------------------------------------------------------------
conv bad "$here/fixtures/convert-bad"
check "bad input: exit 2" [ "$RC" -eq 2 ]
check "unknown key: file, group and a suggestion" has bad.err \
  "convert-bad/typo.yaml: ConfigMap web-m5-large: data.k8s_root_volme_size: unknown key (did you mean k8s_root_volume_size?)"
check "bad number named" has bad.err "ConfigMap not-a-number: data.k8s_max_node_number: \"lots\" is not a whole number"
check "min above max named" has bad.err "ConfigMap min-above-max: data.k8s_min_node_number: 300 is above k8s_max_node_number 200"
check "GPU on a CPU type named" has bad.err "ConfigMap gpu-without-gpu: data.gpu_enabled: is true but m5.large has no GPU"
check "unknown instance type named" has bad.err "ConfigMap unknown-type: data.k8s_instance_type: \"m5.gigantic\" is not in the instance catalog"
check "all four errors, nothing written" bash -c "grep -q '4 errors; nothing written' '$work/bad.err' && [ ! -s '$work/bad.out' ]"

# --- instance types the catalog file lacks (p3.2xlarge, dl1.24xlarge) ------------
conv missing "$here/fixtures/convert-missing" --report "$work/missing.json"
check "offline, a type the catalog lacks: exit 3" [ "$RC" -eq 3 ]
check "offline: the other group is converted" bash -c "[ \$(grep -c '^kind: NodePool' '$work/missing.out') = 1 ] && grep -q 'converted-from: web-m5-large' '$work/missing.out'"
check "offline: says why EC2 was not asked" has missing.err "no AWS credentials (not found): not asking EC2 for dl1.24xlarge, p3.2xlarge"
check "offline: each group left out is named" bash -c "grep -q 'ConfigMap train-dl1: .*cannot size the group; left out' '$work/missing.err' && grep -q 'ConfigMap ml-p3-2xlarge: .*cannot size the group; left out' '$work/missing.err'"
check "offline: the report lists them (not_sized)" python3 -c '
import json,sys; r=json.load(open(sys.argv[1])); n=r["not_sized"]
sys.exit(0 if len(n)==2 and "train-dl1" in n[0] and "ml-p3-2xlarge" in n[1] else 1)' "$work/missing.json"
conv missing-only "$here/fixtures/convert-missing/groups.yaml" --no-describe-missing
check "--no-describe-missing: EC2 is not asked, exit 3" bash -c "[ $RC -eq 3 ] && ! grep -q 'AWS credentials' '$work/missing-only.err'"

# With credentials, EC2 DescribeInstanceTypes (moto) sizes what it knows:
# dl1.24xlarge; moto does not describe p3.2xlarge (real EC2 does), so that
# group is still left out.
moto_py=
for c in "${MOTO_PYTHON:-}" python3 "$HOME/.pyenv/shims/python3" /root/.pyenv/shims/python3; do
  [ -n "$c" ] && "$c" -c 'import moto.server' 2>/dev/null && { moto_py=$c; break; }
done
[ -n "$moto_py" ] || { echo "FAIL: no python3 with moto (set MOTO_PYTHON)"; exit 1; }
moto_port=$(free_port)
"$moto_py" -m moto.server -H 127.0.0.1 -p "$moto_port" >"$work/moto.log" 2>&1 &
moto_pid=$!
trap 'kill $moto_pid 2>/dev/null || true; stop_kubesim; rm -rf "$work"' EXIT
wait_for_status "http://127.0.0.1:$moto_port/moto-api/" 200 30 || { cat "$work/moto.log"; exit 1; }
RC=0
env AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true \
  AWS_ENDPOINT_URL="http://127.0.0.1:$moto_port" \
  "$tctl" convert --catalog "$catalog" --cluster-name prod --report "$work/online.json" \
  "$here/fixtures/convert-missing" >"$work/online.out" 2>"$work/online.err" || RC=$?
check "with credentials: EC2 sizes dl1.24xlarge" has online.err "sized from EC2 DescribeInstanceTypes (not in $catalog): dl1.24xlarge"
check "with credentials: its pool is written, restricted to dl1.24xlarge" bash -c "grep -q 'converted-from: train-dl1' '$work/online.out' && [ \$(grep -c '^kind: NodePool' '$work/online.out') = 2 ]"
check "with credentials: the type EC2 does not describe is still left out, exit 3" bash -c "[ $RC -eq 3 ] && grep -q 'ConfigMap ml-p3-2xlarge: .*left out' '$work/online.err'"
RC=0
env AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true \
  AWS_ENDPOINT_URL="http://127.0.0.1:$moto_port" \
  "$tctl" convert --catalog "$catalog" --cluster-name prod --quiet \
  "$here/fixtures/convert-missing-ec2" >"$work/online2.out" 2>"$work/online2.err" || RC=$?
check "with credentials, every type sized: exit 0" [ "$RC" -eq 0 ]
conv nocat "$fx" --catalog /nonexistent.json
check "missing catalog: exit 2" [ "$RC" -eq 2 ]
RC=0
TAILOR_CATALOG=$catalog "$tctl" convert --cluster-name prod "$fx/00-legacy-example.yaml" >/dev/null 2>&1 || RC=$?
check "TAILOR_CATALOG stands in for --catalog" [ "$RC" -eq 0 ]

# --- tailorctl solve reads the NodePools and EC2NodeClasses back -------------------
RC=0
"$tctl" solve --pods "$here/fixtures/pods" --nodepools "$work/dir.out" --catalog "$catalog" -o json \
  >"$work/solve.json" 2>"$work/solve.err" || RC=$?
check "solve accepts the converted pools (exit 0 or 3, not 2)" bash -c "[ $RC -eq 0 ] || [ $RC -eq 3 ]"
check "solve plans onto converted pools" python3 -c '
import json,sys
p=json.load(open(sys.argv[1])); pools={c["nodepool"] for c in p["nodeclaims"]}
print("pools used:", sorted(pools)); sys.exit(0 if pools and p["pods"]["on_new_nodes"]>0 else 1)' "$work/solve.json"

# --- real kubectl applies it to kubesim ------------------------------------------
start_kubesim "$kubesim" "$work"
for v in 1.27 1.33; do
  K=$(kubectl_for "$v")
  check "kubectl $v apply --dry-run=server" bash -c "$K apply --validate=false --dry-run=server -f '$work/dir.out' >/dev/null"
  check "kubectl $v apply" bash -c "$K apply --validate=false -f '$work/dir.out' >'$work/apply-$v.txt'"
  check "kubectl $v: 18 NodePools and 7 EC2NodeClasses served" bash -c \
    "[ \$($K get nodepools -o name | wc -l) = 18 ] && [ \$($K get ec2nodeclasses -o name | wc -l) = 7 ]"
  check "kubectl $v re-apply is unchanged" bash -c \
    "$K apply --validate=false -f '$work/dir.out' | grep -c unchanged | grep -qx 25"
done
K=$(kubectl_for 1.33)
check "served NodePool keeps its GPU taint and limits" bash -c \
  "$K get nodepool g-nvidia-a10g -o jsonpath='{.spec.template.spec.taints[0].key} {.spec.limits.nvidia\\.com/gpu}' | grep -qx 'nvidia.com/gpu 40'"
finish
