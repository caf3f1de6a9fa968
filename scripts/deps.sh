#!/usr/bin/env bash
# deps.sh [containers] - install what building and testing tailor needs on
# Debian 12; with "containers", what building and running its images needs
# instead (scripts/images.sh: podman, buildah, mmdebstrap for the base image,
# runc).
#
# Idempotent and fast when everything is present: it asks dpkg first and
# only runs apt-get (update + install) for what is missing.  Needs root for
# the install step; without root it prints the command to run instead.
set -euo pipefail

# Build and test dependencies, one concern a line.
PACKAGES=(
  build-essential cmake pkg-config git curl ca-certificates     # toolchain
  protobuf-c-compiler libprotobuf-c-dev                          # contracts
  libnng-dev                                                     # transport
  libjson-c-dev libyaml-dev libcurl4-openssl-dev libssl-dev      # parsing, HTTP, TLS
  libexpat1-dev                                                  # EC2 XML responses
  libmicrohttpd-dev                                              # kubesim's API server
  python3-kubernetes python3-botocore                            # real clients in tests
  python3-yaml python3-jsonschema                                # CRD schema parity test
  libcmocka-dev valgrind clang                                   # tests, leak checks, libFuzzer
  prometheus jq                                                  # promtool checks /metrics; jq reads records
  python3-matplotlib chromium                                    # the demo's report, its browser test
)

# Images (scripts/images.sh, scripts/podman.sh): rootful podman needs no
# uidmap, fuse-overlayfs or slirp4netns.  Its bridge network (CNI's bridge
# and firewall plugins, which the container test uses) needs iptables.
CONTAINER_PACKAGES=(podman buildah mmdebstrap runc iptables)

case "${1:-}" in
  "") ;;
  containers) PACKAGES=("${CONTAINER_PACKAGES[@]}") ;;
  *) echo "usage: deps.sh [containers]" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: not root; run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends keeps prometheus from pulling in a desktop's worth.
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "deps: done"
