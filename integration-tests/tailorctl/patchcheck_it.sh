#!/usr/bin/env bash
# patchcheck_it.sh TAILORCTL KUBESIM - tailorctl patch-check against moto
# (EC2 and SSM) and kubesim, as an operator runs it before a patch wave.
#
# moto gets two AMI builds of our node image (an old and a new one, tagged
# and named), an SSM parameter holding the new one, and instances on
# either; kubesim gets EC2NodeClasses that select AMIs each way (SSM
# parameter, name + owner, pinned id, and an al2023 alias moto cannot
# serve), NodePools, Nodes whose providerIDs name the instances, pods
# (one with karpenter.sh/do-not-disrupt) and a PDB that allows no
# disruption.  The answer must say, per node, which AMI it runs, which it
# should, whether it drifted and what blocks it; and exit by compliance.
# Exit 77 (skipped) when no Python has moto.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/kubesim.sh"
tctl=$1
kubesim=$2
py=""
for cand in "${TAILOR_MOTO_PYTHON:-}" python3 /root/.pyenv/shims/python3; do
  [ -n "$cand" ] || continue
  if "$cand" -c 'import moto.server' 2>/dev/null; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with moto"; exit 77; }
work=$(mktemp -d)
mpid=
cleanup() {
  [ -n "$mpid" ] && kill "$mpid" 2>/dev/null && wait "$mpid" 2>/dev/null
  stop_kubesim
  rm -rf "$work"
}
trap cleanup EXIT

mport=$(free_port)
"$py" -m moto.server -H 127.0.0.1 -p "$mport" >"$work/moto.log" 2>&1 &
mpid=$!
wait_for_status "http://127.0.0.1:$mport/moto-api/" 200 30
export AWS_ACCESS_KEY_ID=AKIDPATCHCHECKTEST AWS_SECRET_ACCESS_KEY=patchchecksecret
export AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
export AWS_ENDPOINT_URL="http://127.0.0.1:$mport"

# --- EC2 and SSM: two builds of the node image, instances on each --------------
/usr/bin/python3 - "$AWS_ENDPOINT_URL" >"$work/aws.env" <<'PY'
import sys, botocore.session
s = botocore.session.get_session()
kw = dict(region_name='us-east-1', endpoint_url=sys.argv[1])
ec2, ssm = s.create_client('ec2', **kw), s.create_client('ssm', **kw)
base = ec2.describe_images(Owners=['amazon'], Filters=[{'Name': 'architecture', 'Values': ['x86_64']}])['Images'][0]['ImageId']
def build(name):
    i = ec2.run_instances(ImageId=base, MinCount=1, MaxCount=1, InstanceType='m5.large')['Instances'][0]['InstanceId']
    ami = ec2.create_image(InstanceId=i, Name=name)['ImageId']
    ec2.create_tags(Resources=[ami], Tags=[{'Key': 'team', 'Value': 'platform'}])
    ec2.terminate_instances(InstanceIds=[i])
    return ami
old = build('tailor-node-2024-01')
import time; time.sleep(1.1)           # a later CreationDate for the new build
new = build('tailor-node-2024-06')
ssm.put_parameter(Name='/tailor/golden-ami', Value=new, Type='String')
def launch(ami):
    return ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, InstanceType='m5.large',
                             Placement={'AvailabilityZone': 'us-east-1a'})['Instances'][0]['InstanceId']
print(f"OLD={old}\nNEW={new}")
for n, ami in [('A', new), ('B', old), ('C', new), ('D', old), ('E', new), ('L', old)]:
    print(f"I_{n}={launch(ami)}")
PY
. "$work/aws.env"
check "moto: two AMI builds and six instances" bash -c "[ -n '$OLD' ] && [ -n '$NEW' ] && [ -n '$I_L' ]"

# --- the cluster ------------------------------------------------------------------
start_kubesim "$kubesim" "$work"
K=$(kubectl_for 1.33)
class() {  # class NAME TERMS-YAML (amiFamily AL2023 unless the terms are an alias)
  local fam='  amiFamily: AL2023\n'
  case "$2" in *alias*) fam='' ;; esac
  printf "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: %s}\nspec:\n  role: KarpenterNodeRole-it\n$fam  amiSelectorTerms: %s\n  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: it}}]\n  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: it}}]\n---\n" "$1" "$2"
}
pool() {  # pool NAME CLASS
  printf 'apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: %s}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: %s}\n      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]\n---\n' "$1" "$2"
}
node() {  # node NAME INSTANCE POOL (POOL "" = legacy)
  local labels="\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/hostname\":\"$1\""
  [ -n "$3" ] && labels="$labels,\"karpenter.sh/nodepool\":\"$3\""
  [ -z "$3" ] && labels="$labels,\"eks.amazonaws.com/nodegroup\":\"legacy-m5\""
  printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{%s}},"spec":{"providerID":"aws:///us-east-1a/%s"},"status":{"conditions":[{"type":"Ready","status":"True"}],"allocatable":{"cpu":"2","memory":"8Gi","pods":"29"},"capacity":{"cpu":"2","memory":"8Gi","pods":"29"}}}\n' "$1" "$labels" "$2"
}
{
  class golden "[{ssmParameter: /tailor/golden-ami}]"
  class by-name "[{name: 'tailor-node-*', owner: self}]"
  class pinned "[{id: $OLD}]"
  class alias "[{alias: al2023@latest}]"
  pool golden golden
  pool by-name by-name
  pool pinned pinned
  pool alias alias
} >"$work/karpenter.yaml"
check "kubectl applies the EC2NodeClasses and NodePools" bash -c "$K apply --validate=false -f '$work/karpenter.yaml' >/dev/null"
for spec in "node-a $I_A golden" "node-b $I_B golden" "node-c $I_C by-name" "node-d $I_D pinned" \
            "node-e $I_E alias" "node-f i-0000000000000dead golden" "legacy-1 $I_L"; do
  set -- $spec
  node "$1" "$2" "${3:-}" >"$work/$1.json"
  $K create --validate=false -f "$work/$1.json" >/dev/null
done
cat >"$work/pods.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: batch-job
  namespace: default
  labels: {app: batch}
  annotations: {karpenter.sh/do-not-disrupt: "true"}
spec:
  nodeName: node-b
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: default, labels: {app: db}}
spec:
  nodeName: node-a
  containers: [{name: c, image: postgres, resources: {requests: {cpu: 100m}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: db}}
YAML
$K apply --validate=false -f "$work/pods.yaml" >/dev/null
for _ in $(seq 50); do
  [ "$($K get pdb db -o jsonpath='{.status.currentHealthy}' 2>/dev/null)" = 1 ] && break
  sleep 0.2
done
check "kubesim counts db-0 healthy: its PDB allows 0 disruptions" \
  [ "$($K get pdb db -o jsonpath='{.status.disruptionsAllowed}')" = 0 ]

# --- patch-check ---------------------------------------------------------------
run() {  # run NAME ARGS...
  local name=$1
  shift
  RC=0
  "$tctl" patch-check --kubeconfig "$KS_KC" "$@" >"$work/$name.out" 2>"$work/$name.err" || RC=$?
}
row() {  # row NAME NODE EXPR: a Python expression over node NODE's entry n of the JSON answer
  python3 -c 'import json,sys
a=json.load(open(sys.argv[1])); n=[x for x in a["nodes"] if x["node"]==sys.argv[2]][0]
sys.exit(0 if eval(sys.argv[3]) else 1)' "$work/$1.out" "$2" "$3"
}
run json -o json --k8s-version 1.31
check "below 100% compliance: exit 3" [ "$RC" -eq 3 ]
check "node-a runs the AMI the SSM parameter names: current" row json node-a \
  "n['state']=='current' and n['ami']=='$NEW' and n['expected_ami']=='$NEW'"
check "node-b runs the old build: drifted, expected the new one" row json node-b \
  "n['state']=='drifted' and n['ami']=='$OLD' and n['expected_ami']=='$NEW' and 'now resolves to $NEW (tailor-node-2024-06)' in n['reason']"
check "name + owner selects the newest build" row json node-c \
  "n['state']=='current' and n['expected_ami']=='$NEW'"
check "a pinned id keeps the old build current" row json node-d \
  "n['state']=='current' and n['expected_ami']=='$OLD'"
check "an alias SSM cannot serve: unknown, and says why" row json node-e \
  "n['state']=='unknown' and 'no SSM parameter found' in n['reason'] and '/aws/service/eks/optimized-ami/1.31/amazon-linux-2023' in n['reason']"
check "an instance EC2 does not know: unknown" row json node-f \
  "n['state']=='unknown' and 'EC2 does not know its instance' in n['reason']"
check "the ASG node is unmanaged" row json legacy-1 "n['state']=='unmanaged' and n['ami']=='$OLD'"
check "do-not-disrupt on a pod blocks node-b" row json node-b \
  "n['blocked_by']==['pod default/batch-job has karpenter.sh/do-not-disrupt']"
check "the PDB at 0 allowed disruptions blocks node-a" row json node-a \
  "n['blocked_by']==['pod default/db-0: PDB db allows 0 disruptions now']"
check "nodes have an age" row json node-a "0 <= n['age_seconds'] < 3600"
check "summary: 3 current, 1 drifted (blocked), 2 unknown, 1 unmanaged, 50%" python3 -c '
import json,sys; s=json.load(open(sys.argv[1]))["summary"]
sys.exit(0 if (s["current"],s["drifted"],s["drifted_blocked"],s["unknown"],s["unmanaged"])==(3,1,1,2,1) and abs(s["compliance_percent"]-50)<0.01 else 1)' "$work/json.out"
run ok --k8s-version 1.31 --min-compliance 50
check "--min-compliance 50: exit 0" [ "$RC" -eq 0 ]
check "the table says compliant and shows the blockers" bash -c \
  "grep -q 'Compliance 50.0% (minimum 50.0%): compliant' '$work/ok.out' && grep -q 'node-b .*drifted .*pod default/batch-job has karpenter.sh/do-not-disrupt' '$work/ok.out'"
run legacy -o json --k8s-version 1.31 --legacy-nodeclass golden
check "--legacy-nodeclass: the ASG node is judged against golden and drifted" row legacy legacy-1 \
  "n['state']=='drifted' and n['legacy'] and n['expected_ami']=='$NEW'"
run noversion -o json
check "no --k8s-version: kubesim's /version is used for the alias" row noversion node-e \
  "n['state']=='unknown' and 'optimized-ami/' in n['reason']"
RC=0
AWS_ENDPOINT_URL=http://127.0.0.1:1 "$tctl" patch-check --kubeconfig "$KS_KC" >/dev/null 2>"$work/noaws.err" || RC=$?
check "EC2 unreachable: exit 1, saying so" bash -c "[ $RC -eq 1 ] && grep -q 'DescribeInstances' '$work/noaws.err'"
finish
