#!/usr/bin/env bash
# podman.sh ARGS... - podman as every script in this repository calls it.
#   scripts/podman.sh run --rm localhost/tailor/tailorctl:dev --version
# Passes ARGS through unchanged after the options this host needs: runc
# (crun refuses its hybrid cgroups), cgroupfs, and deploy/docker/
# containers.conf (no default ulimits) unless CONTAINERS_CONF is set.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/deploy/docker/containers.conf}
exec podman --runtime runc --cgroup-manager cgroupfs "$@"
