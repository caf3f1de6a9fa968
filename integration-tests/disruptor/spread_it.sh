#!/usr/bin/env bash
# spread_it.sh BUILD_DIR - consolidation of a Deployment spread over zones
# (whenUnsatisfiable: DoNotSchedule) settles: no node is deleted whose pods
# kube-scheduler's PodTopologySpread filter would not let land elsewhere.
#
#   1. web (24 replicas, 250m / 256Mi, zone spread maxSkew 1 DoNotSchedule,
#      a PDB maxUnavailable 1) runs on c7a.large nodes (one type: no
#      replacement is ever cheaper) in us-east-1a/b/c, two per zone;
#   2. web is scaled to 6: empty nodes go, two nodes of a zone merge; once
#      each zone is down to one node, its two pods would fit on another
#      zone's node, but moving them would leave their zone at 0 against 2
#      or more (skew > 1): nothing more may go;
#   3. consolidation ends with one node per zone (the valid merges are
#      taken); after the scale-down no node is launched but a consolidation
#      replacement (before the fix the disruptor deleted a zone's last node
#      holding a web pod, "their pods fit on the other nodes"; the evicted
#      pod failed scheduling, "didn't match pod topology spread
#      constraints", the launcher bought a node for it in that zone, and the
#      next pass deleted a node left empty: a loop), no web pod fails
#      scheduling on topology spread, the cost does not go up, no pod is
#      left Pending, and the observer (watch.py) sees no PDB violation;
#   4. with zones a and b's nodes marked do-not-disrupt, zone c's last node
#      (the only candidate, its pods would fit elsewhere) is kept.
# Timings are short (consolidateAfter 5s, validation 2s, pass every 2s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:?usage: spread_it.sh BUILD_DIR}
export KUBESIM_POD_START_DELAY=1s
trap ds_down EXIT
ds_up "$build" || { echo "FAIL: stack did not start"; exit 1; }

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
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c7a.large]}
      - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 5s
    budgets: [{nodes: "50%"}]
YAML
  it_nodeclass
} >"$STATE_DIR/pool.yaml"
workload() {   # REPLICAS
  it_deployment web "$1" 250m 256Mi "      terminationGracePeriodSeconds: 2
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
         labelSelector: {matchLabels: {app: web}}}"
  it_pdb web maxUnavailable 1
}
workload 24 >"$STATE_DIR/w24.yaml"
workload 6 >"$STATE_DIR/w6.yaml"
k apply --validate=false -f "$STATE_DIR/pool.yaml" -f "$STATE_DIR/w24.yaml" >/dev/null

running() { test "$(k get pods --no-headers 2>/dev/null | grep -c ' Running ')" = "$1"; }
pending() { k get pods --no-headers 2>/dev/null | grep -c ' Pending ' || true; }
check "24 pods Running" wait_until 120 running 24

zones() {   # web pods per zone, e.g. "us-east-1a=2 us-east-1b=2 us-east-1c=2"
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.metadata.labels.topology\.kubernetes\.io/zone}{"\n"}{end}' >"$STATE_DIR/nz.tsv"
  k get pods -l app=web -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
    awk -F'\t' 'NR==FNR{z[$1]=$2; next} $1!="" {n[z[$1]]++} END{for (k in n) printf "%s=%d ", k, n[k]; print ""}' "$STATE_DIR/nz.tsv" - |
    tr ' ' '\n' | sort | tr '\n' ' '
}
cost24=$(ds_cost)
echo "  24 pods: $(ds_n_nodes) nodes, \$$cost24/h; web per zone: $(zones)"

ds_watch_start "$STATE_DIR/watch.json"
sleep 1
l0=$(wc -l <"$STATE_DIR/launcher.log")
d0=$(wc -l <"$STATE_DIR/disruptor.log")
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
k apply --validate=false -f "$STATE_DIR/w6.yaml" >/dev/null
t0=$(date +%s)

# Nodes launched since the scale-down, and the replacements of the
# consolidation decisions carried out since: anything more was bought for
# a pod that an executed decision evicted and kube-scheduler would not
# place (the loop).
launched() { tail -n +"$((l0 + 1))" "$STATE_DIR/launcher.log" | grep -c '"msg":"launched nodeclaim"' || true; }
replacements() {
  tail -n +"$((d0 + 1))" "$STATE_DIR/disruptor.log" | /usr/bin/python3 -c '
import json, sys
repl, done = {}, set()
for l in sys.stdin:
    try:
        d = json.loads(l)
    except ValueError:
        continue
    if d.get("msg") == "disruption decision proposed":
        repl[d["decision"]] = d.get("replacements", 0)
    elif d.get("msg") == "disruption decision executed":
        done.add(d["decision"])
print(sum(repl.get(x, 0) for x in done))'
}
deleting_claims() { k get nodeclaims -o json | json_get /dev/stdin "sum(1 for c in d['items'] if c['metadata'].get('deletionTimestamp'))"; }
quiet() {   # nothing moving: 6 Running, none Pending, nothing tainted or deleting
  running 6 && [ "$(pending)" = 0 ] && ds_no_disrupted_node && [ "$(deleting_claims)" = 0 ]
}
# Let consolidation act (consolidateAfter 5s, a pass every 2 s, validation
# 2 s: the old loop went round in ~15 s) until it is down to a node per
# zone, at least 30 s, then wait for quiet.
sleep 30
merged() { [ "$(ds_n_nodes)" -le 3 ]; }
wait_until 20 merged || true
check "consolidation settles: 6 pods Running, none Pending, no node disrupting" wait_until 30 quiet
# Then the single-node path: the nodes of zones a and b may not be
# disrupted, so c's node is the only candidate; its pods fit on the others
# but must stay in c, and no cheaper type exists: nothing may happen.
for n in $(k get nodes -l 'topology.kubernetes.io/zone in (us-east-1a,us-east-1b)' -o name); do
  k annotate "$n" karpenter.sh/do-not-disrupt=true --overwrite >/dev/null
done
sleep 20
check "zone c's last node kept: still settled" quiet
t1=$(date +%s)
nl=$(launched)
nr=$(replacements)
final=$(ds_cost)
echo "  after scale-down: $(ds_n_nodes) nodes, \$$final/h in $((t1 - t0)) s; web per zone: $(zones)"
echo "  nodes launched since: $nl, replacements of executed decisions: $nr"
check "no node launched for an evicted pod ($nl launched, $nr replacements)" test "$nl" -le "$nr"
spread_failures() {
  k get events -o json | json_get /dev/stdin "sum(1 for e in d['items'] if e.get('reason') == 'FailedScheduling' and e['involvedObject'].get('name', '').startswith('web-') and 'topology spread' in e.get('message', '') and (e.get('lastTimestamp') or e['metadata'].get('creationTimestamp') or '') >= '$since')"
}
nsf=$(spread_failures)
check "no web pod failed scheduling on topology spread after the scale-down ($nsf)" test "$nsf" = 0
check "cost did not go up (\$$final vs \$$cost24)" awk -v a="$final" -v b="$cost24" 'BEGIN{exit !(a <= b + 1e-9)}'
# the valid moves were taken: a zone's two nodes merged (its pods stay in
# the zone), down to one node per zone (before the fix the search, blind
# to the spread, proposed a cross-zone delete every pass and validation
# refused it: stuck at 6 nodes)
nn=$(ds_n_nodes)
check "consolidation merged each zone's nodes ($nn nodes, want 3 at most)" test "$nn" -le 3
sleep 2
ds_watch_stop
viol=$(json_get "$STATE_DIR/watch.json" "d['n_pdb_violations']")
samples=$(json_get "$STATE_DIR/watch.json" "d['samples']")
check "the observer saw no PDB violation ($viol in $samples samples)" test "$viol" = 0
check "no pod Pending at the end" test "$(pending)" = 0
echo "  decisions executed since the scale-down:"
tail -n +"$((d0 + 1))" "$STATE_DIR/disruptor.log" | grep -E '"msg":"disruption decision (executed|aborted on validation)"' |
  /usr/bin/python3 -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    print("   ", d["msg"].split()[-1] if "executed" in d["msg"] else "aborted", d.get("method", ""), (d.get("why") or "")[:120])
' | head -n 20 || true
if [ "$FAILED" != 0 ]; then
  echo "--- launcher: launches since the scale-down"
  tail -n +"$((l0 + 1))" "$STATE_DIR/launcher.log" | grep '"msg":"launched nodeclaim"' | cut -c1-300 || true
  KEEP_STATE=1
fi
finish
