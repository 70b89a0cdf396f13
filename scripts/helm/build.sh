#!/usr/bin/env bash
# Builds helm (v3) from the Go module proxy into .kube/bin/helm
# (git-ignored), for the chart in deploy/helm and its test; there is no
# registry or release download here. Skipped when .kube/bin/helm is there
# and was built from the same inputs (.kube/bin/.stamp-helm).
#
# Its own small module, beside the cluster's (scripts/kube/build.sh), with
# the Kubernetes libraries pinned to the cluster build's STAGING_VERSION:
# helm v3.19 is the last v3 release on v0.34 (v3.20 moved to v0.35), so
# the packages both builds share (client-go, apimachinery, api, ...) come
# from the Go build cache when the cluster was built first, and the
# same flags (-trimpath, cgo as the toolchain defaults) keep their cache
# keys equal.
#
#   scripts/helm/build.sh          (make helm)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

HELM_VERSION=v3.19.5
# One source for the Kubernetes libraries' version: the cluster build's.
STAGING_VERSION="$(sed -n 's/^STAGING_VERSION=//p' scripts/kube/build.sh)"
[ -n "$STAGING_VERSION" ] || { echo "scripts/helm/build.sh: no STAGING_VERSION in scripts/kube/build.sh" >&2; exit 1; }
minor="$(echo "$STAGING_VERSION" | cut -d. -f2)"
src=.kube/src/helm
bin=.kube/bin
mkdir -p "$src" "$bin"

gomod="module sandboxer.local/helmbuild

go 1.24

require (
	helm.sh/helm/v3 $HELM_VERSION
	k8s.io/api $STAGING_VERSION
	k8s.io/apiextensions-apiserver $STAGING_VERSION
	k8s.io/apimachinery $STAGING_VERSION
	k8s.io/apiserver $STAGING_VERSION
	k8s.io/cli-runtime $STAGING_VERSION
	k8s.io/client-go $STAGING_VERSION
	k8s.io/component-base $STAGING_VERSION
	k8s.io/kubectl $STAGING_VERSION
)"
# helm's own Makefile sets these: its version, and the Kubernetes version
# lint and the capabilities of `helm template` assume (1.<minor>).
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
ldflags="$ldflags -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
ldflags="$ldflags -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
stamp="$(printf '%s\n' "$gomod" "$ldflags" | sha256sum | cut -c1-16)"

if [ -x "$bin/helm" ] && [ -f "$bin/.stamp-helm" ] && [ "$(cat "$bin/.stamp-helm")" = "$stamp" ]; then
  echo "helm $HELM_VERSION up to date in $bin"
  exit 0
fi
printf '%s\n' "$gomod" >"$src/go.mod"
rm -f "$src/go.sum"
echo "building helm $HELM_VERSION (Kubernetes libraries $STAGING_VERSION)"
(
  cd "$src"
  # -mod=mod resolves what the requirements leave open and writes go.sum.
  GOFLAGS=-mod=mod nice go build -trimpath -ldflags "$ldflags" -o "../../bin/helm.tmp" helm.sh/helm/v3/cmd/helm
)
mv "$bin/helm.tmp" "$bin/helm"
echo "$stamp" >"$bin/.stamp-helm"
echo "helm ready: $("$bin/helm" version --short)"
