#!/usr/bin/env bash
# drift_it.sh BUILD_DIR - a new AMI for the node class rotates every node,
# within the NodePool's disruption budget, without breaking a PDB.
#
# The EC2NodeClass selects its AMI through an SSM parameter, the way an
# alias (al2023@latest) resolves through AWS's public parameters, which
# moto does not serve: publishing a new image under the parameter is what
# a new AMI release for an alias is.  Then:
#   1. every node runs the old image; the launcher keeps resolving the
#      node class (status.amis) and the disruptor sees the nodes drift;
#   2. they are replaced one at a time (budget nodes: "1"): replacement
#      launched, Initialized, old node drained and terminated;
#   3. in the end every node runs the new image, all pods run, the
#      observer never saw more than one node of the pool disrupting and no
#      PDB violated, and EC2 holds one instance per NodeClaim.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:?usage: drift_it.sh BUILD_DIR}
export KUBESIM_POD_START_DELAY=1s LC_ARGS="--nodeclass-refresh 2s"
trap ds_down EXIT
ds_up "$build" || { echo "FAIL: stack did not start"; exit 1; }

ssm_put() {   # VALUE
  /usr/bin/python3 - "$1" <<'PY'
import os, sys, botocore.session
ssm = botocore.session.get_session().create_client(
    "ssm", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
ssm.put_parameter(Name="/tailor/it/node-ami", Value=sys.argv[1], Type="String", Overwrite=True)
PY
}
images() {   # the images of the running, tagged instances, sorted, unique
  /usr/bin/python3 - <<'PY'
import os, botocore.session
ec2 = botocore.session.get_session().create_client(
    "ec2", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
imgs = set()
for r in ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]},
                                         {"Name": "tag-key", "Values": ["karpenter.sh/nodepool"]}])["Reservations"]:
    for i in r["Instances"]:
        imgs.add(i["ImageId"])
print(" ".join(sorted(imgs)))
PY
}
OLD=ami-760aaa0f NEW=ami-1e749f67   # two Linux images moto has (amzn-ami-hvm, ubuntu)
ssm_put "$OLD"
{
  cat <<'YAML'
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption:
    consolidateAfter: Never
    budgets: [{nodes: "1"}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{ssmParameter: /tailor/it/node-ami}]
  role: KarpenterNodeRole-it
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
YAML
  it_deployment web 8 900m 512Mi "      terminationGracePeriodSeconds: 5"
  it_pdb web maxUnavailable 1
} >"$STATE_DIR/m.yaml"
k apply --validate=false -f "$STATE_DIR/m.yaml" >/dev/null
running() { test "$(k get pods --no-headers 2>/dev/null | grep -c ' Running ')" = "$1"; }
check "8 pods Running" wait_until 120 running 8
nodes0=$(k get nodes --no-headers | grep -c .)
check "every node runs $OLD ($nodes0 nodes)" test "$(images)" = "$OLD"
before=$(k get nodes -o name | sort)

ds_watch_start "$STATE_DIR/watch.json"
sleep 1
t0=$(date +%s)
ssm_put "$NEW"
# The NodeClaims waiting their turn carry Karpenter's Drifted condition.
drifted_claims() {   # how many NodeClaims show Drifted=True with reason AMIDrift
  k get nodeclaims -o json | json_get /dev/stdin \
    "sum(1 for c in d['items'] for x in c.get('status', {}).get('conditions', []) if x['type'] == 'Drifted' and x['status'] == 'True' and x['reason'] == 'AMIDrift')"
}
some_drifted() { [ "$(drifted_claims)" -ge 1 ]; }
check "drifted NodeClaims show the Drifted condition (reason AMIDrift)" wait_until 60 some_drifted
rotated() {
  [ "$(images)" = "$NEW" ] && running 8 &&
    [ -z "$(comm -12 <(echo "$before") <(k get nodes -o name | sort))" ] &&
    [ "$(k get nodeclaims -o json | json_get /dev/stdin "sum(1 for c in d['items'] if c['metadata'].get('deletionTimestamp'))")" = 0 ]
}
check "every node rotated onto $NEW" wait_until 240 rotated
check "no NodeClaim is left marked Drifted" test "$(drifted_claims)" = 0
t1=$(date +%s)
echo "  rotated $nodes0 nodes in $((t1 - t0)) s"
sleep 2
ds_watch_stop
maxd=$(json_get "$STATE_DIR/watch.json" "d['max_disrupting'].get('default', 0)")
check "never more than the budget (1) disrupting at once (max $maxd)" test "$maxd" = 1
viol=$(json_get "$STATE_DIR/watch.json" "d['n_pdb_violations']")
check "the observer saw no PDB violation ($viol)" test "$viol" = 0
check "drift decisions name the image" \
  grep -q "node runs image $OLD; EC2NodeClass default now resolves to $NEW" "$STATE_DIR/disruptor.log"
same() { test "$(ec2_live)" = "$(k get nodeclaims --no-headers | grep -c .)"; }
check "EC2 runs one instance per NodeClaim" wait_until 30 same
check "no node left tainted or cordoned" wait_until 30 ds_no_disrupted_node
if [ "$FAILED" != 0 ]; then
  echo "--- disruptor log (tail)"; grep -v '"level":"debug"' "$STATE_DIR/disruptor.log" | tail -n 30 | cut -c1-400
  KEEP_STATE=1
fi
finish
