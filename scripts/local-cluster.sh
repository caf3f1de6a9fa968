#!/usr/bin/env bash
# local-cluster.sh up|down|env|status - a local cluster for tailor: moto
# (EC2, IAM, STS... with SigV4 enforced) and kubesim (Kubernetes API,
# scheduler, controllers, kubelet simulator) on loopback.
#
#   up      start moto on a free port (scripts/moto-server.py: moto plus
#           the public EKS-optimized AMIs and SSM parameters every AWS
#           region has, for $K8S_VERSION); create an IAM user with an
#           allow-all policy and an access key while moto still accepts
#           unauthenticated calls (INITIAL_NO_AUTH_ACTION_COUNT=3), so
#           from then on every call must be signed with that key; write
#           the key to $STATE_DIR/aws-credentials (a shared credentials
#           file, mode 0600, read through AWS_SHARED_CREDENTIALS_FILE);
#           check moto's default VPC has subnets in 3 zones (create them
#           if not); create the node network EC2NodeClasses select by tag
#           karpenter.sh/discovery=$DISCOVERY_TAG: one subnet per zone
#           (us-east-1a/b/c, /20, 4091 free addresses) plus a small one
#           (/24) in the first zone, and a security group; start kubesim
#           with its kubelet simulator pointed at moto; create the
#           kube-dns Service (ClusterIP $CLUSTER_DNS); print the kubectl
#           line to use.  The env file carries the cluster identity a
#           node's bootstrap needs (TAILOR_CLUSTER_ENDPOINT, _CA_BUNDLE,
#           _CIDR): kubesim's URL and CA, as EKS's DescribeCluster would
#           give them for a real cluster.
#   down    stop kubesim, then moto (TERM, then KILL after 10 s).
#   env     print export lines for services and tests.
#   status  say what runs.
#
# Settings (environment):
#   STATE_DIR          /tmp/tailor-local     pid files, logs, kubeconfig, credentials
#   CLUSTER_NAME       tailor-local          kubernetes.io/cluster/<name> tag
#   AWS_REGION         us-east-1
#   KUBESIM_BIN        newest build/*/integration-tests/kubesim/kubesim
#   MOTO_PYTHON        a python3 that imports moto (pyenv's on this machine)
#   BOOT_DELAY         2s                    instance launch -> Node Ready
#   BOOT_JITTER        0s                    up to this much more per instance
#   DISCOVERY_TAG      demo                  karpenter.sh/discovery value of the node network
#   TAILOR_SHARED_DATA <repo>/../shared/data (instance catalog)
#   K8S_VERSION        1.31                  Kubernetes version of the public AMIs seeded
#   SERVICE_CIDR       10.100.0.0/16         the cluster's service CIDR
#   CLUSTER_DNS        10.100.0.10           kube-dns ClusterIP
#   KUBESIM_TLS_SAN    (none)                more names/addresses for kubesim's server
#                                            certificate, e.g. the address containers reach it at
#   NODE_ROLES         KarpenterNodeRole-{demo,e2e,it,bench,migrate-it,$CLUSTER_NAME}
#                      IAM roles EC2NodeClasses may name (spec.role), made
#                      as a user makes the node role before installing
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
STATE_DIR=${STATE_DIR:-/tmp/tailor-local}
CLUSTER_NAME=${CLUSTER_NAME:-tailor-local}
REGION=${AWS_REGION:-us-east-1}
BOOT_DELAY=${BOOT_DELAY:-2s}
BOOT_JITTER=${BOOT_JITTER:-0s}
DISCOVERY_TAG=${DISCOVERY_TAG:-demo}
SHARED=${TAILOR_SHARED_DATA:-$repo/../shared/data}
K8S_VERSION=${K8S_VERSION:-1.31}
SERVICE_CIDR=${SERVICE_CIDR:-10.100.0.0/16}
CLUSTER_DNS=${CLUSTER_DNS:-10.100.0.10}
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$KUBECTL" ] || KUBECTL=kubectl

die() { echo "local-cluster: $*" >&2; exit 1; }
say() { echo "local-cluster: $*" >&2; }

free_port() {   # never the same port twice within two minutes (scripts/free-port.py)
  /usr/bin/python3 "$repo/scripts/free-port.py"
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

find_moto_python() {
  local c
  for c in "${MOTO_PYTHON:-}" python3 "$HOME/.pyenv/shims/python3" /root/.pyenv/shims/python3; do
    [ -n "$c" ] || continue
    if "$c" -c 'import moto.server' 2>/dev/null; then echo "$c"; return 0; fi
  done
  return 1
}

find_kubesim() {
  if [ -n "${KUBESIM_BIN:-}" ]; then echo "$KUBESIM_BIN"; return 0; fi
  # The most recently built kubesim in any build tree.
  ls -t "$repo"/build/*/integration-tests/kubesim/kubesim 2>/dev/null | head -n 1
}

wait_http() {   # URL SECONDS [curl args...]
  local url=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 10; i++)); do
    curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

stop_pid() {    # PIDFILE NAME
  local f=$1 name=$2 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "$name (pid $pid) ignored TERM for 10 s; killing"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    say "$name stopped"
  fi
  rm -f "$f"
}

# Create the IAM user, its policy and key during moto's unauthenticated
# window; prints "ACCESS_KEY_ID SECRET".  Debian's botocore signs with
# throw-away keys, which moto does not check yet.
bootstrap_iam() {
  /usr/bin/python3 - "$1" "$REGION" <<'EOF'
import json, sys
import botocore.session
endpoint, region = sys.argv[1], sys.argv[2]
s = botocore.session.get_session()
iam = s.create_client("iam", region_name=region, endpoint_url=endpoint,
                      aws_access_key_id="AKIABOOTSTRAP0000000",
                      aws_secret_access_key="bootstrap")
iam.create_user(UserName="tailor")
iam.put_user_policy(UserName="tailor", PolicyName="allow-all", PolicyDocument=json.dumps(
    {"Version": "2012-10-17",
     "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
k = iam.create_access_key(UserName="tailor")["AccessKey"]
print(k["AccessKeyId"], k["SecretAccessKey"])
EOF
}

# With the real key: make sure the default VPC has subnets in 3 zones,
# and create the tagged node network (subnets a, b, c + a small one in a,
# one security group).
ensure_subnets() {
  AWS_SHARED_CREDENTIALS_FILE=$STATE_DIR/aws-credentials /usr/bin/python3 - "$1" "$REGION" "$DISCOVERY_TAG" \
    "${NODE_ROLES:-KarpenterNodeRole-demo KarpenterNodeRole-e2e KarpenterNodeRole-it KarpenterNodeRole-bench KarpenterNodeRole-migrate-it KarpenterNodeRole-$CLUSTER_NAME}" <<'EOF'
import sys
import botocore.session
endpoint, region, tag = sys.argv[1], sys.argv[2], sys.argv[3]
s = botocore.session.get_session()
ec2 = s.create_client("ec2", region_name=region, endpoint_url=endpoint)
subnets = ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
zones = sorted({sn["AvailabilityZone"] for sn in subnets})
if len(zones) < 3:
    vpcs = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
    vpc = vpcs[0]["VpcId"] if vpcs else ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    for i, z in enumerate([region + c for c in "abc"]):
        if z not in zones:
            ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.%d.0/24" % (i + 1), AvailabilityZone=z)
    zones = sorted({sn["AvailabilityZone"] for sn in ec2.describe_subnets()["Subnets"]})
vpcs = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
vpc = vpcs[0]["VpcId"]
def tags(name):
    return [{"Key": "karpenter.sh/discovery", "Value": tag}, {"Key": "Name", "Value": name}]
# 172.31.0.0/16 holds the default /20s from .0 to .80; ours start at .128.
nets = [(region + "a", "172.31.128.0/20"), (region + "b", "172.31.144.0/20"),
        (region + "c", "172.31.160.0/20"), (region + "a", "172.31.176.0/24")]
for z, cidr in nets:
    ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=z,
                      TagSpecifications=[{"ResourceType": "subnet", "Tags": tags("tailor-" + cidr)}])
ec2.create_security_group(GroupName="tailor-nodes", Description="tailor nodes", VpcId=vpc,
                          TagSpecifications=[{"ResourceType": "security-group",
                                              "Tags": tags("tailor-nodes")}])
iam = s.create_client("iam", region_name=region, endpoint_url=endpoint)
trust = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}'
for role in sorted(set(sys.argv[4].split())):
    iam.create_role(RoleName=role, AssumeRolePolicyDocument=trust)
print(" ".join(zones))
EOF
}

write_env() {
  local moto_url=$1 kubeconfig=$2 endpoint ca
  endpoint=$(sed -n 's/^ *server: *//p' "$kubeconfig" | head -n 1)
  ca=$(sed -n 's/^ *certificate-authority-data: *//p' "$kubeconfig" | head -n 1)
  cat >"$STATE_DIR/env" <<EOF
export AWS_ENDPOINT_URL=$moto_url
export AWS_REGION=$REGION
export AWS_DEFAULT_REGION=$REGION
export AWS_SHARED_CREDENTIALS_FILE=$STATE_DIR/aws-credentials
export AWS_EC2_METADATA_DISABLED=true
export KUBECONFIG=$kubeconfig
export TAILOR_CLUSTER_NAME=$CLUSTER_NAME
export TAILOR_CLUSTER_ENDPOINT=$endpoint
export TAILOR_CLUSTER_CA_BUNDLE=$ca
export TAILOR_CLUSTER_CIDR=$SERVICE_CIDR
export TAILOR_K8S_VERSION=$K8S_VERSION
EOF
}

# kube-dns, as every EKS cluster has it: its ClusterIP is what nodes use
# as cluster DNS (the launcher reads it for the bootstrap).
create_kube_dns() {
  "$KUBECTL" --kubeconfig "$1" apply --validate=false -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: kube-system}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $CLUSTER_DNS
  selector: {k8s-app: kube-dns}
  ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]
EOF
}

cmd_up() {
  local py kubesim moto_port moto_url keys ak sk ks_port token zones i
  mkdir -p "$STATE_DIR"
  chmod 700 "$STATE_DIR"
  if alive "$STATE_DIR/moto.pid" || alive "$STATE_DIR/kubesim.pid"; then
    say "already up (state in $STATE_DIR); '$0 down' first to restart"
    cmd_env
    return 0
  fi
  py=$(find_moto_python) || die "no python3 with moto (pip install 'moto[server]'); set MOTO_PYTHON"
  kubesim=$(find_kubesim)
  [ -n "$kubesim" ] && [ -x "$kubesim" ] ||
    die "no kubesim binary; build it (cmake --build build/<dir> --target kubesim) or set KUBESIM_BIN"

  moto_port=$(free_port)
  moto_url=http://127.0.0.1:$moto_port
  INITIAL_NO_AUTH_ACTION_COUNT=3 setsid "$py" "$repo/scripts/moto-server.py" -H 127.0.0.1 \
    -p "$moto_port" --region "$REGION" --k8s-versions "$K8S_VERSION" \
    >"$STATE_DIR/moto.log" 2>&1 </dev/null &
  echo $! >"$STATE_DIR/moto.pid"
  # /moto-api/ is moto's dashboard; it does not use up the unauthenticated calls.
  wait_http "$moto_url/moto-api/" 30 || { tail -n 20 "$STATE_DIR/moto.log" >&2; cmd_down; die "moto did not start"; }
  say "moto on $moto_url (pid $(cat "$STATE_DIR/moto.pid"))"

  keys=$(bootstrap_iam "$moto_url") || { cmd_down; die "IAM bootstrap failed"; }
  read -r ak sk <<<"$keys"
  (umask 077 && printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
    "$ak" "$sk" >"$STATE_DIR/aws-credentials")
  chmod 600 "$STATE_DIR/aws-credentials"
  say "IAM user 'tailor' with key $ak; SigV4 now enforced; credentials in $STATE_DIR/aws-credentials"
  zones=$(ensure_subnets "$moto_url") || { cmd_down; die "subnet check failed"; }
  say "default subnets in zones: $zones; node subnets in ${REGION}a/b/c tagged karpenter.sh/discovery=$DISCOVERY_TAG"

  ks_port=$(free_port)
  token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  # HTTPS with kubesim's generated CA: kubectl sends a bearer token only
  # over TLS.
  local ks_args=(--listen "" --tls-listen "127.0.0.1:$ks_port" --token "$token"
                 --kubeconfig-out "$STATE_DIR/kubeconfig" --data-dir "$STATE_DIR/kubesim")
  if "$kubesim" --help 2>&1 | grep -q -- '--aws-endpoint'; then
    ks_args+=(--aws-endpoint "$moto_url" --aws-region "$REGION" --cluster-name "$CLUSTER_NAME"
              --boot-delay "$BOOT_DELAY" --boot-jitter "$BOOT_JITTER")
    [ -f "$SHARED/aws-instance-types.json" ] && ks_args+=(--catalog "$SHARED/aws-instance-types.json")
  else
    say "warning: this kubesim has no kubelet simulator (no --aws-endpoint flag); EC2 instances will not join"
  fi
  AWS_SHARED_CREDENTIALS_FILE=$STATE_DIR/aws-credentials AWS_EC2_METADATA_DISABLED=true \
    AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= AWS_SESSION_TOKEN= AWS_PROFILE= \
    setsid "$kubesim" "${ks_args[@]}" >"$STATE_DIR/kubesim.log" 2>&1 </dev/null &
  echo $! >"$STATE_DIR/kubesim.pid"
  for ((i = 0; i < 300; i++)); do
    [ -s "$STATE_DIR/kubeconfig" ] && break
    alive "$STATE_DIR/kubesim.pid" || break
    sleep 0.1
  done
  wait_http "https://127.0.0.1:$ks_port/version" 30 -k -H "Authorization: Bearer $token" ||
    { tail -n 20 "$STATE_DIR/kubesim.log" >&2; cmd_down; die "kubesim did not start"; }
  [ -s "$STATE_DIR/kubeconfig" ] || { cmd_down; die "kubesim wrote no kubeconfig"; }
  chmod 600 "$STATE_DIR/kubeconfig"
  say "kubesim on https://127.0.0.1:$ks_port (pid $(cat "$STATE_DIR/kubesim.pid"))"
  write_env "$moto_url" "$STATE_DIR/kubeconfig"
  create_kube_dns "$STATE_DIR/kubeconfig" || say "warning: kube-dns Service not created"
  echo "$KUBECTL --kubeconfig $STATE_DIR/kubeconfig get nodes"
  echo "# environment for services and tests: eval \"\$($0 env)\""
}

cmd_down() {
  stop_pid "$STATE_DIR/kubesim.pid" kubesim
  stop_pid "$STATE_DIR/moto.pid" moto
  rm -f "$STATE_DIR/aws-credentials" "$STATE_DIR/env"
}

cmd_env() {
  [ -f "$STATE_DIR/env" ] || die "not up (no $STATE_DIR/env)"
  cat "$STATE_DIR/env"
}

cmd_status() {
  local n
  for n in moto kubesim; do
    if alive "$STATE_DIR/$n.pid"; then echo "$n: running (pid $(cat "$STATE_DIR/$n.pid"))"
    else echo "$n: stopped"; fi
  done
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  status) cmd_status ;;
  *) echo "usage: $0 up|down|env|status" >&2; exit 2 ;;
esac
