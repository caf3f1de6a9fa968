#!/usr/bin/env bash
# build.sh [REGISTRY/]PREFIX TAG - build (and with PUSH=1 push) every image.
#   deploy/docker/build.sh public.ecr.aws/tailor 0.1.0
# Needs a Docker (or BuildKit-compatible) engine; run from anywhere.
set -euo pipefail
prefix=${1:?usage: build.sh PREFIX TAG}
tag=${2:?usage: build.sh PREFIX TAG}
root=$(cd "$(dirname "$0")/../.." && pwd)
for t in watcher solver launcher disruptor tailorctl; do
  name=tailor-$t
  [ "$t" = tailorctl ] && name=tailorctl
  docker build -f "$root/deploy/docker/Dockerfile" --target "$t" -t "$prefix/$name:$tag" "$root"
  [ "${PUSH:-}" = 1 ] && docker push "$prefix/$name:$tag"
done
