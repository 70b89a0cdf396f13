#!/usr/bin/env bash
# Build the test image matrix: small variants of the local images that copy
# what real users' images do differently (images/variants/README.md).
#
#   images/variants/build.sh          build (or refresh from the build cache) every variant
#   images/variants/build.sh NAME...  just these (directory names under images/variants)
#
# Each variant is a `docker build` of images/variants/NAME/Dockerfile on top
# of the local base images (images/build.sh makes those first), tagged
# sandboxer.local/variant:NAME. The classic builder is used, which never
# pulls: it only sees local images. A variant whose Dockerfile and base did
# not change comes from the build cache in about a second.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export DOCKER_BUILDKIT=0

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'variants/build.sh: error: %s\n' "$*" >&2; exit 1; }

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for d in "$HERE"/*/; do names+=("$(basename "$d")"); done
fi

for name in "${names[@]}"; do
  [ -f "$HERE/$name/Dockerfile" ] || die "no variant $name (want a directory under $HERE)"
  image=sandboxer.local/variant:$name
  old=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
  logf=$(mktemp)
  if ! docker build -t "$image" "$HERE/$name" >"$logf" 2>&1; then
    tail -n 30 "$logf" >&2
    rm -f "$logf"
    die "docker build of $name failed (last lines above; the base images come from images/build.sh)"
  fi
  rm -f "$logf"
  new=$(docker image inspect -f '{{.Id}}' "$image")
  if [ -n "$old" ] && [ "$old" != "$new" ]; then # drop the replaced image unless it is still used
    docker rmi "$old" >/dev/null 2>&1 || true
  fi
  log "variant $image ready"
done
