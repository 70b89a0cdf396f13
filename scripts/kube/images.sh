#!/usr/bin/env bash
# Imports images into the cluster's containerd (namespace k8s.io), since
# there is no registry to pull from:
#   - localhost/pause:3.10, the pod sandbox image, an image archive written
#     here around the static pause program build.sh made;
#   - the project's local images (images/build.sh and its variants, and
#     sandboxer's own of make image, all named sandboxer.local/...), under
#     the same names as in Docker, via `docker save`. Pods use them with
#     imagePullPolicy Never or IfNotPresent.
# The cluster's image store (.kube/containerd) outlives `make kube-down`,
# and an image whose Docker id was imported before is skipped, so only the
# first start pays for the copy (~45 s for the 2 GB of the image matrix)
# and running this again after `make images` imports only what changed:
#
#   scripts/kube/images.sh [pause|project]   (the cluster's containerd must run)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
what="${1:-all}"

sock="$KUBE_RUN/containerd/containerd.sock"
[ -S "$sock" ] || die "the cluster's containerd is not running (make kube)"
ctrk() { ctr --address "$sock" --namespace k8s.io "$@"; }
work="$(mktemp -d "$KUBE_ROOT/.kube/images.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The pause image as a `docker save` archive: one layer holding /pause.
if [ "$what" != project ] && ! ctrk images ls -q | grep -qx localhost/pause:3.10; then
  mkdir -p "$work/pause/rootfs"
  cp "$KUBE_BIN/pause" "$work/pause/rootfs/pause"
  tar -C "$work/pause/rootfs" --owner=0 --group=0 --numeric-owner -cf "$work/pause/layer.tar" pause
  diff_id="sha256:$(sha256sum "$work/pause/layer.tar" | cut -d' ' -f1)"
  cat >"$work/pause/config.json" <<EOF
{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["$diff_id"]},"history":[{"created_by":"scripts/kube/images.sh"}]}
EOF
  cfg="$(sha256sum "$work/pause/config.json" | cut -d' ' -f1)"
  mv "$work/pause/config.json" "$work/pause/$cfg.json"
  mkdir -p "$work/pause/${diff_id#sha256:}"
  mv "$work/pause/layer.tar" "$work/pause/${diff_id#sha256:}/layer.tar"
  printf '[{"Config":"%s.json","RepoTags":["localhost/pause:3.10"],"Layers":["%s/layer.tar"]}]\n' \
    "$cfg" "${diff_id#sha256:}" >"$work/pause/manifest.json"
  tar -C "$work/pause" -cf "$work/pause.tar" manifest.json "$cfg.json" "${diff_id#sha256:}"
  ctrk images import "$work/pause.tar" >/dev/null
  log "imported localhost/pause:3.10"
fi

[ "$what" = pause ] && exit 0

# The project's images: everything Docker has under sandboxer.local/ but
# the bare Debian bases (their layers come with the images built on them).
mapfile -t refs < <(docker images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null |
  grep '^sandboxer\.local/' | grep -v '^sandboxer\.local/base-' | sort -u)
if [ "${#refs[@]}" -eq 0 ]; then
  log "no sandboxer.local/ images in Docker (make images); none imported"
  exit 0
fi
case " ${refs[*]} " in
*" sandboxer.local/sandboxer:"*) ;;
*) log "no sandboxer.local/sandboxer image (make image builds it, for deploy/helm's chart)" ;;
esac
seen="$KUBE_STORE.imported"
touch "$seen"
have="$(ctrk images ls -q)"
todo=()
for r in "${refs[@]}"; do
  id="$(docker image inspect --format '{{.Id}}' "$r")"
  if ! grep -qxF "$r $id" "$seen" || ! grep -qxF "$r" <<<"$have"; then
    todo+=("$r")
  fi
done
[ "${#todo[@]}" -gt 0 ] || exit 0
# Streamed: the export from Docker and the unpack here overlap.
docker save "${todo[@]}" | ctrk images import - >/dev/null
for r in "${todo[@]}"; do
  grep -v "^$r " "$seen" >"$seen.tmp" || true
  echo "$r $(docker image inspect --format '{{.Id}}' "$r")" >>"$seen.tmp"
  mv "$seen.tmp" "$seen"
done
log "imported ${todo[*]}"
