#!/usr/bin/env bash
# images.sh [TAG [PREFIX]] - build tailor's five container images from
# deploy/docker/Dockerfile: PREFIX/tailor-watcher:TAG, -solver, -launcher,
# -disruptor and PREFIX/tailorctl:TAG (TAG "dev", PREFIX "localhost/tailor"
# by default).  `make images` runs it.
#
#   scripts/images.sh                       podman on this machine, Debian 12
#                                           base made with mmdebstrap
#   ENGINE=docker scripts/images.sh 0.1.0 public.ecr.aws/your-org
#                                           a Docker engine, FROM
#                                           debian:bookworm-slim; PUSH=1 pushes
#
# IMAGE_BASE overrides the base of the build stages (podman:
# localhost/debian:bookworm, made here if missing; docker:
# debian:bookworm-slim).  The build stage is shared by the five targets, so
# the code is compiled once; layers are cached, so a call with nothing
# changed takes seconds.  Calls are serialized by a lock (build/images.lock).
# Prints each step with the elapsed time, then the image sizes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tag=${1:-dev}
prefix=${2:-localhost/tailor}
engine=${ENGINE:-podman}
case "$engine" in
  podman) run=("$root/scripts/podman.sh"); base=${IMAGE_BASE:-localhost/debian:bookworm} ;;
  docker) run=(docker); base=${IMAGE_BASE:-debian:bookworm-slim} ;;
  *) echo "images: ENGINE must be podman or docker, not '$engine'" >&2; exit 2 ;;
esac

start=$SECONDS
step() { printf 'images: [%4ss] %s\n' "$((SECONDS - start))" "$*"; }

mkdir -p "$root/build/images"
exec 9>"$root/build/images.lock"
if ! flock -n 9; then
  step "waiting for another images.sh (build/images.lock)"
  flock 9
fi

if [ "$engine" = podman ]; then
  step "dependencies (scripts/deps.sh containers)"
  bash "$root/scripts/deps.sh" containers
  if ! "${run[@]}" image exists "$base"; then
    [ "$base" = localhost/debian:bookworm ] ||
      { echo "images: base image $base is missing" >&2; exit 1; }
    step "base image $base: mmdebstrap bookworm (Debian's packages)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mmdebstrap --quiet --variant=apt bookworm "$tmp/rootfs.tar"
    "${run[@]}" import --quiet "$tmp/rootfs.tar" "$base" >/dev/null
    rm -rf "$tmp"
  fi
fi

# The commit --version and the revision label name, as CMake would find it.
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  commit+=-dirty
fi
source_url=$(git -C "$root" remote get-url origin 2>/dev/null || true)

args=(-f "$root/deploy/docker/Dockerfile" --build-arg "BASE=$base"
      --build-arg "GIT_COMMIT=$commit" --build-arg "SOURCE=$source_url")
[ "$engine" = podman ] && args+=(--layers)

images=()
for t in watcher solver launcher disruptor tailorctl; do
  name=tailor-$t
  [ "$t" = tailorctl ] && name=tailorctl
  image=$prefix/$name:$tag
  log=$root/build/images/$name.log
  step "building $image (commit $commit, log build/images/$name.log)"
  if ! "${run[@]}" build "${args[@]}" --target "$t" -t "$image" "$root" >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "images: building $image failed (build/images/$name.log)" >&2
    exit 1
  fi
  images+=("$image")
done

if [ "${PUSH:-}" = 1 ]; then
  for image in "${images[@]}"; do
    step "pushing $image"
    "${run[@]}" push "$image"
  done
fi

step "done"
printf '%-45s %10s\n' IMAGE SIZE
for image in "${images[@]}"; do
  bytes=$("${run[@]}" image inspect --format '{{.Size}}' "$image")
  printf '%-45s %8.1f MB\n' "$image" "$(awk -v b="$bytes" 'BEGIN { print b / 1000000 }')"
done
echo "images: built ${#images[@]} images in $((SECONDS - start)) s"
