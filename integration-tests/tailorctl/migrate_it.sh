#!/usr/bin/env bash
# migrate_it.sh BUILD_DIR - tailorctl migrate on a real local cluster: moto
# (EC2, Auto Scaling, SSM; SigV4 enforced) + kubesim (scheduler, workload
# controllers, kubelet simulator) + the real tailor-watcher, tailor-solver
# and tailor-launcher.
#
#   1. an Auto Scaling Group of $LEGACY m5.large instances whose Nodes
#      (eks.amazonaws.com/nodegroup=legacy-main) run Deployments behind PDBs
#      (maxUnavailable 1; a single replica with minAvailable 1) and a
#      DaemonSet; tailor's NodePool and EC2NodeClass (AMI from SSM);
#   2. the EC2NodeClass's SSM parameter points at an arm64 image for an
#      amd64 NodePool: `plan` and `run` exit 3 and touch nothing;
#   3. pointed at a newer amd64 build: `plan` passes (text and JSON);
#   4. `run --asg legacy-main --batch 4` is killed with SIGKILL mid-run and
#      run again: it resumes, never drains a finished node again, and
#      finishes: every pod Running on tailor's nodes, the ASG at desired 0,
#      no legacy node left; watch.py (integration-tests/disruptor, an
#      independent observer on the Python client) saw no PDB violated and
#      the single replica never without a Ready pod;
#   5. a second group (--selector eks.amazonaws.com/nodegroup=legacy-b):
#      `run --max-nodes 1` pauses (exit 7) after one node, `rollback`
#      uncordons the rest and restores min/max/desired;
#   6. a third group (legacy-c) runs a Deployment that crash-loops on
#      tailor's nodes (kubesim's crash-loop annotation): the run halts
#      (exit 4) as soon as the displaced pod crash-loops, naming it, with
#      the group's other node undrained and the ASG not shrunk; rollback
#      restores it;
#   7. a plan file with two waves (two kubeconfig contexts): the second
#      wave's approval gate exits 5 until --approve-wave names it.
# Exit 77 (skipped) when moto is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../lib.sh"
build=${1:?usage: migrate_it.sh BUILD_DIR}
fx=$here/fixtures/migrate
LEGACY=${LEGACY:-20}
tctl=$build/tools/tailorctl
export STATE_DIR=$(mktemp -d /tmp/migr_it.XXXXXX)
export CLUSTER_NAME=migrate-it BOOT_DELAY=1s
export KUBESIM_BIN=${KUBESIM_BIN:-$build/integration-tests/kubesim/kubesim}
export KUBESIM_POD_START_DELAY=1s
catalog=${TAILOR_SHARED_DATA:-$repo/../shared/data}/aws-instance-types.json
export TAILOR_CATALOG=$catalog
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$KUBECTL" ] || KUBECTL=kubectl
[ -x "$KUBESIM_BIN" ] || { echo "FAIL: no kubesim at $KUBESIM_BIN"; exit 1; }
have_moto=0
for c in "${MOTO_PYTHON:-}" python3 /root/.pyenv/shims/python3; do
  [ -n "$c" ] && "$c" -c 'import moto.server' 2>/dev/null && { have_moto=1; break; }
done
[ "$have_moto" = 1 ] || { echo "SKIP: no python3 with moto"; exit 77; }
pids=()
watch_pid=
run_pid=
cleanup() {
  [ -n "$run_pid" ] && kill -9 "$run_pid" 2>/dev/null || true
  [ -n "$watch_pid" ] && kill -TERM "$watch_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$repo/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
  if [ "${KEEP_STATE:-0}" = 1 ]; then echo "state kept in $STATE_DIR"; else rm -rf "$STATE_DIR"; fi
}
trap cleanup EXIT
t_start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t_start ))s"; }

"$repo/scripts/local-cluster.sh" up >"$STATE_DIR/up.log" 2>&1 || { cat "$STATE_DIR/up.log"; exit 1; }
eval "$("$repo/scripts/local-cluster.sh" env)"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
aws() { /usr/bin/python3 "$fx/aws.py" "$@"; }
jq_() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

s_rep=$(free_port) w_rep=$(free_port) w_pub=$(free_port) l_rep=$(free_port) l_pub=$(free_port)
$(tls_as tailor-solver) "$build/services/tailor-solver" --listen "tls+tcp://127.0.0.1:$s_rep" --http-listen "127.0.0.1:$(free_port)" \
  >"$STATE_DIR/solver.log" 2>&1 & pids+=($!)
$(tls_as tailor-watcher) "$build/services/tailor-watcher" --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$w_rep" \
  --publish "tls+tcp://127.0.0.1:$w_pub" --http-listen "127.0.0.1:$(free_port)" \
  --batch-idle 500ms --batch-max 2s --resync 5s >"$STATE_DIR/watcher.log" 2>&1 & pids+=($!)
$(tls_as tailor-launcher) "$build/services/tailor-launcher" --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$l_rep" \
  --publish "tls+tcp://127.0.0.1:$l_pub" --http-listen "127.0.0.1:$(free_port)" \
  --solver "tls+tcp://127.0.0.1:$s_rep" --watcher "tls+tcp://127.0.0.1:$w_pub" \
  --watcher-rep "tls+tcp://127.0.0.1:$w_rep" \
  --cluster-name "$TAILOR_CLUSTER_NAME" --catalog "$catalog" --lifecycle-interval 500ms \
  >"$STATE_DIR/launcher.log" 2>&1 & pids+=($!)

echo "--- 1. $LEGACY legacy ASG nodes with workloads; tailor's NodePool ($(elapsed))"
aws images >"$STATE_DIR/images.env"
. "$STATE_DIR/images.env"
aws ssm /tailor/migrate-it/node-ami "$NEW_AMI"
aws asg legacy-main "$LEGACY" "$CLUSTER_NAME" "$OLD_AMI" legacy-main
legacy_nodes() { k get nodes -l eks.amazonaws.com/nodegroup="$1" --no-headers 2>/dev/null | grep -c . || true; }
nodes_ready() { test "$(legacy_nodes legacy-main)" = "$LEGACY"; }
check "the kubelet registered $LEGACY legacy nodes labelled eks.amazonaws.com/nodegroup" \
  wait_until 60 nodes_ready
k apply --validate=false -f "$fx/workloads.yaml" >/dev/null
running_app() {   # APP COUNT: COUNT pods Running and Ready
  k get pods -l app="$1" -o json | jq_ "sum(1 for p in d['items'] if p['status'].get('phase') == 'Running' and not p['metadata'].get('deletionTimestamp') and any(c['type'] == 'Ready' and c['status'] == 'True' for c in p['status'].get('conditions', [])))" | grep -qx "$2"
}
all_running() { running_app web 8 && running_app api 6 && running_app solo 1 && running_app agent "$LEGACY"; }
check "web 8, api 6, solo 1 and $LEGACY agent pods Running on the legacy nodes" wait_until 90 all_running
k apply --validate=false -f "$fx/karpenter.yaml" >/dev/null
legacy_ami() { k get nodes -l eks.amazonaws.com/nodegroup=legacy-main -o jsonpath='{.items[0].metadata.annotations.kubesim\.tailor\.dev/image-id}'; }
check "the legacy nodes run the old image ($OLD_AMI)" test "$(legacy_ami)" = "$OLD_AMI"

echo "--- 2. a wrong-architecture image: plan and run refuse, nothing touched ($(elapsed))"
aws ssm /tailor/migrate-it/node-ami "$ARM_AMI"
RC=0; "$tctl" migrate plan --asg legacy-main --k8s-version 1.31 >"$STATE_DIR/bad.out" 2>"$STATE_DIR/bad.err" || RC=$?
check "plan exits 3" test "$RC" = 3
check "plan says why: amd64 NodePool, arm64 image" \
  grep -q "FAIL .*ami-arch .*NodePool general.*allows amd64 but EC2NodeClass general resolves to no amd64 image.*$ARM_AMI (arm64)" "$STATE_DIR/bad.out"
RC=0; "$tctl" migrate run --asg legacy-main --k8s-version 1.31 --poll 500ms >"$STATE_DIR/badrun.out" 2>"$STATE_DIR/badrun.err" || RC=$?
check "run exits 3 before touching anything" test "$RC" = 3
check "run says nothing was touched" grep -q "nothing was touched" "$STATE_DIR/badrun.err"
cordoned() { k get nodes -o json | jq_ "sum(1 for n in d['items'] if n['spec'].get('unschedulable'))"; }
check "no node was cordoned" test "$(cordoned)" = 0
check "no checkpoint was written" bash -c "! '$KUBECTL' --kubeconfig '$KUBECONFIG' -n tailor-system get cm tailor-migrate-legacy-main >/dev/null 2>&1"
check "the ASG is untouched ($(aws sizes legacy-main))" test "$(aws sizes legacy-main)" = "$LEGACY $((LEGACY + 2)) $LEGACY $LEGACY"

echo "--- 3. the new build: plan passes ($(elapsed))"
aws ssm /tailor/migrate-it/node-ami "$NEW_AMI"
RC=0; "$tctl" migrate plan --asg legacy-main --k8s-version 1.31 >"$STATE_DIR/plan.out" 2>"$STATE_DIR/plan.err" || RC=$?
check "plan exits 0" test "$RC" = 0
sed 's/^/    /' "$STATE_DIR/plan.out"
RC=0; "$tctl" migrate plan --asg legacy-main --k8s-version 1.31 -o json >"$STATE_DIR/plan.json" 2>/dev/null || RC=$?
check "plan -o json: ok, the AMI checks and the coverage passed" bash -c "[ $RC = 0 ] && /usr/bin/python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); r={(c[\"check\"],c[\"result\"]) for c in d[\"checks\"]}
sys.exit(0 if d[\"ok\"] and (\"ami-arch\",\"PASS\") in r and (\"ami-age\",\"PASS\") in r and (\"coverage\",\"PASS\") in r and (\"legacy-nodes\",\"PASS\") in r else 1)' '$STATE_DIR/plan.json'"

echo "--- 4. run, SIGKILL mid-run, run again ($(elapsed))"
/usr/bin/python3 "$repo/integration-tests/disruptor/watch.py" "$KUBECONFIG" "$STATE_DIR/watch.json" \
  --period 0.25 >"$STATE_DIR/watch.log" 2>&1 &
watch_pid=$!
run_args=(--asg legacy-main --k8s-version 1.31 --batch 4 --poll 500ms --drain-timeout 3m
          --ready-timeout 3m --health-timeout 1m --remove-timeout 1m)
"$tctl" migrate run "${run_args[@]}" >"$STATE_DIR/run1.out" 2>"$STATE_DIR/run1.err" &
run_pid=$!
state() { k -n tailor-system get cm tailor-migrate-legacy-main -o jsonpath='{.data.state\.json}' 2>/dev/null; }
midway() {   # at least one batch done and the next one in flight
  state | jq_ "1 if sum(1 for n in d['nodes'] if n['state'] == 'done') >= 4 and any(n['state'] in ('draining', 'replacing') for n in d['nodes']) else 0" | grep -qx 1
}
check "the first run got a batch done and the next one draining" wait_until 120 midway
state >"$STATE_DIR/before-kill.json"
kill -9 "$run_pid"
wait "$run_pid" 2>/dev/null || true
run_pid=
done_before=$(jq_ "' '.join(n['name'] for n in d['nodes'] if n['state'] == 'done')" <"$STATE_DIR/before-kill.json")
holder=$(jq_ "d['holder']['pid']" <"$STATE_DIR/before-kill.json")
echo "    killed pid $holder with $(echo "$done_before" | wc -w) nodes done"
RC=0
"$tctl" migrate run "${run_args[@]}" -o json >"$STATE_DIR/run2.json" 2>"$STATE_DIR/run2.err" || RC=$?
check "the second run exits 0" test "$RC" = 0
check "it took the dead run's lock and resumed" grep -q "resuming a Running migration" "$STATE_DIR/run2.err"
redrained=0
for n in $done_before; do grep -q "draining $n\|$n drained\|terminated .* ($n)" "$STATE_DIR/run2.err" && redrained=$((redrained + 1)); done
check "no node finished before the kill was drained or terminated again" test "$redrained" = 0
kill -TERM "$watch_pid"; wait "$watch_pid" 2>/dev/null || true; watch_pid=
check "status: Done, every legacy node done" bash -c "jq() { /usr/bin/python3 -c \"import json,sys; d=json.load(open('$STATE_DIR/run2.json')); sys.exit(0 if \$1 else 1)\"; }; jq \"d['phase'] == 'Done' and d['counts']['done'] == $LEGACY and d['counts']['total'] == $LEGACY\""
on_tailor() {   # every pod of the Deployments Running and Ready on a tailor node
  local nodes
  nodes=$(k get nodes -l karpenter.sh/nodepool -o jsonpath='{.items[*].metadata.name}')
  k get pods -l 'app in (web,api,solo)' -o json | /usr/bin/python3 -c "
import json,sys; d=json.load(sys.stdin); t=set(sys.argv[1].split())
ok=[p for p in d['items'] if p['status'].get('phase')=='Running' and p['spec'].get('nodeName') in t and not p['metadata'].get('deletionTimestamp')]
sys.exit(0 if len(ok)==15 and len(d['items'])==15 else 1)" "$nodes"
}
check "web, api and solo: all 15 pods Running on tailor's nodes" wait_until 30 on_tailor
check "no legacy node left" test "$(legacy_nodes legacy-main)" = 0
check "the ASG shrank to desired 0 ($(aws sizes legacy-main))" bash -c "set -- \$(/usr/bin/python3 '$fx/aws.py' sizes legacy-main); [ \$1 = 0 ] && [ \$3 = 0 ] && [ \$4 = 0 ]"
viol=$(jq_ "d['n_pdb_violations']" <"$STATE_DIR/watch.json")
outs=$(jq_ "d['n_single_replica_outages']" <"$STATE_DIR/watch.json")
samples=$(jq_ "d['samples']" <"$STATE_DIR/watch.json")
check "watch.py: no PDB violated ($viol violations in $samples samples)" bash -c "[ '$viol' = 0 ] && [ '$samples' -gt 20 ]"
check "watch.py: the single replica always had a Ready pod ($outs outages)" test "$outs" = 0
check "the single replica was rolled, not evicted" grep -q "Deployment default/solo has one Ready pod" "$STATE_DIR/run1.err" "$STATE_DIR/run2.err"
RC=0; "$tctl" migrate status --asg legacy-main >"$STATE_DIR/status.out" 2>&1 || RC=$?
check "status (table) exits 0 and says Done" bash -c "[ $RC = 0 ] && grep -q '^Migration legacy-main: Done' '$STATE_DIR/status.out'"

echo "--- 5. a second group: pause after one node, roll back ($(elapsed))"
aws asg legacy-b 2 "$CLUSTER_NAME" "$OLD_AMI" legacy-b
b_ok() { test "$(legacy_nodes legacy-b)" = 2; }
check "2 legacy-b nodes" wait_until 60 b_ok
sel=eks.amazonaws.com/nodegroup=legacy-b
RC=0; "$tctl" migrate run --selector "$sel" --k8s-version 1.31 --max-nodes 1 --poll 500ms \
  -o json >"$STATE_DIR/b.json" 2>"$STATE_DIR/b.err" || RC=$?
check "run --max-nodes 1 pauses: exit 7" test "$RC" = 7
check "one node rotated, the ASG shrank by one ($(aws sizes legacy-b))" bash -c "set -- \$(/usr/bin/python3 '$fx/aws.py' sizes legacy-b); [ \$1 = 0 ] && [ \$3 = 1 ]"
b_cordoned() { k get nodes -l "$sel" -o json | jq_ "sum(1 for n in d['items'] if n['spec'].get('unschedulable'))"; }
check "the other legacy-b node is cordoned" test "$(b_cordoned)" = 1
RC=0; "$tctl" migrate rollback --selector "$sel" -o json >"$STATE_DIR/rb.json" 2>"$STATE_DIR/rb.err" || RC=$?
check "rollback exits 0, phase RolledBack" bash -c "[ $RC = 0 ] && grep -q '\"phase\":\"RolledBack\"' '$STATE_DIR/rb.json'"
check "rollback restored min 2, max 4, desired 2 ($(aws sizes legacy-b))" bash -c "set -- \$(/usr/bin/python3 '$fx/aws.py' sizes legacy-b); [ \$1 = 2 ] && [ \$2 = 4 ] && [ \$3 = 2 ]"
check "no legacy-b node is cordoned" test "$(b_cordoned)" = 0
check "the ASG replaced the rotated instance: 2 legacy-b nodes again" wait_until 30 b_ok

echo "--- 6. a workload that crash-loops on the new nodes: the run halts ($(elapsed))"
aws asg legacy-c 2 "$CLUSTER_NAME" "$OLD_AMI" legacy-c
c_ok() { test "$(legacy_nodes legacy-c)" = 2; }
check "2 legacy-c nodes" wait_until 60 c_ok
k apply --validate=false -f "$fx/fragile.yaml" >/dev/null
check "fragile: 2 pods Running and Ready on the legacy-c nodes" wait_until 60 running_app fragile 2
csel=eks.amazonaws.com/nodegroup=legacy-c
t6=$(date +%s)
RC=0; "$tctl" migrate run --selector "$csel" --k8s-version 1.31 --poll 500ms --ready-timeout 3m \
  -o json >"$STATE_DIR/c.json" 2>"$STATE_DIR/c.err" || RC=$?
t6=$(( $(date +%s) - t6 ))
check "run halts: exit 4" test "$RC" = 4
check "it names the crash-looping pod" \
  grep -q 'batch 1: the health gate failed: pod default/fragile-[a-z0-9-]* is in CrashLoopBackOff' "$STATE_DIR/c.json"
check "it halted at once, not at the 3-minute ready timeout (${t6} s)" test "$t6" -lt 90
fragile_on_legacy() {
  local on
  on=$(k get nodes -l "$csel" -o jsonpath='{.items[*].metadata.name}')
  k get pods -l app=fragile -o json | jq_ "sum(1 for p in d['items'] if p['spec'].get('nodeName') in '$on'.split() and p['status'].get('phase') == 'Running' and not p['metadata'].get('deletionTimestamp'))"
}
check "the group's other node was not drained: one fragile pod still Running on legacy-c" \
  test "$(fragile_on_legacy)" = 1
check "the ASG was not shrunk ($(aws sizes legacy-c))" bash -c "set -- \$(/usr/bin/python3 '$fx/aws.py' sizes legacy-c); [ \$3 = 2 ]"
RC=0; "$tctl" migrate rollback --selector "$csel" -o json >"$STATE_DIR/crb.json" 2>"$STATE_DIR/crb.err" || RC=$?
check "rollback restored min 2, max 4, desired 2 ($(aws sizes legacy-c))" bash -c "[ $RC = 0 ] && set -- \$(/usr/bin/python3 '$fx/aws.py' sizes legacy-c) && [ \$1 = 2 ] && [ \$2 = 4 ] && [ \$3 = 2 ]"
c_cordoned() { k get nodes -l "$csel" -o json | jq_ "sum(1 for n in d['items'] if n['spec'].get('unschedulable'))"; }
check "no legacy-c node is cordoned" test "$(c_cordoned)" = 0
k delete deployment fragile >/dev/null 2>&1 || true

echo "--- 7. a plan file in waves: dev, then prod behind an approval gate ($(elapsed))"
/usr/bin/python3 - "$KUBECONFIG" "$STATE_DIR/kc-waves" <<'PY'
import sys, yaml
kc = yaml.safe_load(open(sys.argv[1]))
ctx = kc["contexts"][0]
kc["contexts"] = [dict(name=n, context=dict(ctx["context"])) for n in ("dev", "prod")]
kc["current-context"] = "dev"
yaml.safe_dump(kc, open(sys.argv[2], "w"))
PY
aws asg legacy-dev 1 "$CLUSTER_NAME" "$OLD_AMI" legacy-dev
aws asg legacy-prod 1 "$CLUSTER_NAME" "$OLD_AMI" legacy-prod
waves_ready() { test "$(legacy_nodes legacy-dev)" = 1 && test "$(legacy_nodes legacy-prod)" = 1; }
check "one legacy-dev and one legacy-prod node" wait_until 60 waves_ready
sed "s#@KUBECONFIG@#$STATE_DIR/kc-waves#" "$fx/plan.yaml" >"$STATE_DIR/plan.yaml"
RC=0; "$tctl" migrate plan --plan-file "$STATE_DIR/plan.yaml" --k8s-version 1.31 -o json >"$STATE_DIR/wplan.json" 2>/dev/null || RC=$?
check "plan over the plan file: exit 0, both clusters ok" bash -c "[ $RC = 0 ] && /usr/bin/python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d[\"ok\"] and [c[\"cluster\"] for c in d[\"clusters\"]]==[\"dev/dev-1\",\"prod/prod-1\"] and all(c[\"ok\"] for c in d[\"clusters\"]) else 1)' '$STATE_DIR/wplan.json'"
RC=0; "$tctl" migrate run --plan-file "$STATE_DIR/plan.yaml" --k8s-version 1.31 --poll 500ms -o json \
  >"$STATE_DIR/w1.json" 2>"$STATE_DIR/w1.err" || RC=$?
check "run: wave dev done, then exit 5 at prod's approval gate" bash -c "[ $RC = 5 ] && grep -q 'wave prod needs an approval: run again with --approve-wave prod' '$STATE_DIR/w1.err'"
check "status after the gate: dev-1 Done, prod-1 NotStarted" /usr/bin/python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); p={c["name"]:c["phase"] for w in d["waves"] for c in w["clusters"]}
sys.exit(0 if p=={"dev-1":"Done","prod-1":"NotStarted"} else 1)' "$STATE_DIR/w1.json"
check "the prod node was not touched" bash -c "[ \"\$('$KUBECTL' --kubeconfig '$KUBECONFIG' get nodes -l eks.amazonaws.com/nodegroup=legacy-prod -o jsonpath='{.items[0].spec.unschedulable}')\" != true ]"
RC=0; "$tctl" migrate run --plan-file "$STATE_DIR/plan.yaml" --k8s-version 1.31 --poll 500ms \
  --approve-wave prod -o json >"$STATE_DIR/w2.json" 2>"$STATE_DIR/w2.err" || RC=$?
check "run --approve-wave prod: exit 0, dev skipped as Done, prod Done" bash -c "[ $RC = 0 ] && grep -q 'dev/dev-1: already Done' '$STATE_DIR/w2.err' && /usr/bin/python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); p={c[\"name\"]:c[\"phase\"] for w in d[\"waves\"] for c in w[\"clusters\"]}
sys.exit(0 if p=={\"dev-1\":\"Done\",\"prod-1\":\"Done\"} else 1)' '$STATE_DIR/w2.json'"
check "both wave ASGs at desired 0" bash -c "[ \"\$(/usr/bin/python3 '$fx/aws.py' sizes legacy-dev | cut -d' ' -f3)\" = 0 ] && [ \"\$(/usr/bin/python3 '$fx/aws.py' sizes legacy-prod | cut -d' ' -f3)\" = 0 ]"
RC=0; "$tctl" migrate run --plan-file "$STATE_DIR/nope.yaml" >/dev/null 2>"$STATE_DIR/nope.err" || RC=$?
check "a missing plan file: exit 2" test "$RC" = 2

echo "--- done in $(elapsed)"
if [ "$FAILED" != 0 ]; then
  for f in run1.err run2.err b.err rb.err c.err crb.err w1.err w2.err; do
    [ -f "$STATE_DIR/$f" ] && { echo "--- $f (tail)"; tail -n 25 "$STATE_DIR/$f"; }
  done
  KEEP_STATE=1
fi
finish
