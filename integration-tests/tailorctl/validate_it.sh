#!/usr/bin/env bash
# validate_it.sh TAILORCTL - tailorctl validate as a user runs it on
# Karpenter manifests before applying them: clean ones pass, each broken
# rule is an error naming the object and field, and fields tailor accepts
# but does not act on are warnings, never dropped silently.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
tctl=$1
fx=$here/fixtures/validate
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {   # NAME ARGS...: run tailorctl validate, keep its output, set RC
  local name=$1
  shift
  RC=0
  "$tctl" validate "$@" >"$work/$name.out" 2>"$work/$name.err" || RC=$?
}
has() { grep -qF -- "$2" "$work/$1.out"; }

run good "$fx/good.yaml"
check "a production NodePool and EC2NodeClass: exit 0" [ "$RC" -eq 0 ]
check "2 Karpenter objects checked, the Deployment skipped, nothing found" \
  has good "2 Karpenter objects checked (1 other object skipped): 0 errors, 0 warnings"

run bad "$fx/bad.yaml"
check "broken manifests: exit 3" [ "$RC" -eq 3 ]
check "a versioned nodeClassRef.group is an error naming the field" \
  has bad 'NodePool versioned-group: spec.template.spec.nodeClassRef: group "karpenter.k8s.aws/v1"'
check "a restricted template label is an error" has bad "NodePool restricted-label: spec.template.metadata.labels"
check "a static NodePool is refused, not run as a dynamic one" \
  has bad "NodePool static: spec.replicas: static NodePools (spec.replicas) are not supported by tailor"
check "a fractional expireAfter is refused as the CRD refuses it" has bad "NodePool fractional-expiry: spec.template.spec.expireAfter"
check "4 errors counted" has bad "4 Karpenter objects checked (0 other objects skipped): 4 errors"

run ignored "$fx/ignored.yaml"
check "fields tailor does not act on: exit 0 (warnings)" [ "$RC" -eq 0 ]
check "Balanced is accepted with a warning saying what tailor runs" \
  grep -q "warning: NodePool balanced: spec.disruption.consolidationPolicy.*WhenEmptyOrUnderutilized" "$work/ignored.out"
check "capacityReservationSelectorTerms (instanceMatchCriteria: open) is valid, with a warning" \
  has ignored "warning: EC2NodeClass reserved: spec.capacityReservationSelectorTerms: ignored"
check "placementGroupSelector is valid, with a warning" \
  has ignored "warning: EC2NodeClass reserved: spec.placementGroupSelector: ignored"
run ignored-strict --fail-on warning "$fx/ignored.yaml"
check "--fail-on warning: exit 3" [ "$RC" -eq 3 ]

run json -o json "$fx/bad.yaml" "$fx/ignored.yaml"
check "-o json: findings with severity, file, kind, name and message" \
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["findings"]
assert d["objects"] == 6, d["objects"]
assert sum(x["severity"] == "error" for x in f) == 4
assert any(x["kind"] == "EC2NodeClass" and x["name"] == "reserved" and x["severity"] == "warning" for x in f)' \
  "$work/json.out"

run missing "$fx/nope.yaml"
check "an unreadable path: exit 2" [ "$RC" -eq 2 ]
run none
check "no path: exit 2 with usage" [ "$RC" -eq 2 ]
finish
