#!/usr/bin/env bash
# Builds the image of sandboxer itself, sandboxer.local/sandboxer:VERSION,
# from the two static programs `make build` puts in bin/ (sandboxer and,
# beside it, sandboxer-kubernetes, which sandboxer finds there):
#
#   images/sandboxer/build.sh [BIN_DIR]     default: bin/ of the repository
#   IMAGE=NAME:TAG images/sandboxer/build.sh  another name (tests)
#
# No registry and no base image: FROM scratch with the host's CA bundle
# and a passwd/group for uid 65532, built by Docker's classic builder.
# The binaries are copied in as they are, so an unchanged build reuses
# the cached layers and the image id stays the same. The image it
# replaces is removed once nothing is tagged with it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN_DIR=${1:-$ROOT/bin}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
export DOCKER_BUILDKIT=0 # classic builder: FROM scratch, nothing is pulled

die() { printf 'images/sandboxer/build.sh: error: %s\n' "$*" >&2; exit 1; }

for p in sandboxer sandboxer-kubernetes; do
  [ -x "$BIN_DIR/$p" ] || die "$BIN_DIR/$p is missing (make build, or make image)"
done
[ -r "$CA_BUNDLE" ] || die "no CA bundle at $CA_BUNDLE (apt-get install ca-certificates, or set CA_BUNDLE)"
# A dynamically linked program would not start on an empty base.
for p in sandboxer sandboxer-kubernetes; do
  if head -c 4096 "$BIN_DIR/$p" | grep -aq 'ld-linux'; then
    die "$BIN_DIR/$p is dynamically linked: build it with CGO_ENABLED=0 (make build does)"
  fi
done
version=$("$BIN_DIR/sandboxer" version | sed -n 's/^sandboxer v//p')
[ -n "$version" ] || die "$BIN_DIR/sandboxer version printed no version"
IMAGE=${IMAGE:-sandboxer.local/sandboxer:$version}

ctx=$(mktemp -d "${TMPDIR:-/tmp}/sandboxer-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/etc/ssl/certs" "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/tmp" "$ctx/home/sandboxer"
chmod 1777 "$ctx/rootfs/tmp"
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
  'sandboxer:x:65532:65532:sandboxer:/home/sandboxer:/sbin/nologin' >"$ctx/rootfs/etc/passwd"
printf '%s\n' 'root:x:0:' 'sandboxer:x:65532:' >"$ctx/rootfs/etc/group"
chmod 0644 "$ctx/rootfs/etc/passwd" "$ctx/rootfs/etc/group"
install -m 0644 "$CA_BUNDLE" "$ctx/rootfs/etc/ssl/certs/ca-certificates.crt"
install -m 0755 "$BIN_DIR/sandboxer" "$BIN_DIR/sandboxer-kubernetes" "$ctx/rootfs/usr/local/bin/"
# Same mtimes each build: the classic builder's cache then depends on the
# contents alone.
find "$ctx" -exec touch -h -d @0 {} +
cp "$HERE/Dockerfile" "$ctx/Dockerfile"

old=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
t0=$SECONDS
# Quiet (the classic builder warns that it is deprecated on every run);
# its output is shown when it fails.
if ! docker build \
  --label "org.opencontainers.image.title=sandboxer" \
  --label "org.opencontainers.image.version=$version" \
  -t "$IMAGE" "$ctx" >"$ctx.log" 2>&1; then
  cat "$ctx.log" >&2
  rm -f "$ctx.log"
  die "docker build of $IMAGE failed"
fi
rm -f "$ctx.log"
if [ -n "$old" ] && [ "$(docker image inspect -f '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
  docker rmi "$old" >/dev/null 2>&1 || true
fi
printf '==> %s: done in %ss (%s)\n' "$IMAGE" "$((SECONDS - t0))" \
  "$(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')" >&2
