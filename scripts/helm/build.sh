#!/usr/bin/env bash
# Builds helm (v3) from the Go module proxy into .kube/bin/helm
# (git-ignored), for the chart in deploy/helm and its test; there is no
# registry or release download here. Skipped when .kube/bin/helm is there
# and was built from the same inputs (.kube/bin/.stamp-helm).
#
# Its own small module, beside the cluster's (scripts/kube/build.sh), with
# the Kubernetes libraries pinned to the cluster build's STAGING_VERSION
# (helm v3.19 is the last v3 release on v0.34; v3.20 moved to v0.35) and
# the modules both use at the cluster build's versions, so the packages
# they share (client-go, apimachinery, api, grpc, ...) come from the Go
# build cache when the cluster was built first; the same flags (-trimpath,
# cgo as the toolchain defaults, no tags) keep their cache keys equal.
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
)

// The cluster build's versions of the modules both builds use where helm
// asks for older ones: a package's cache key covers its dependencies', so
// one older golang.org/x/sys or protobuf would make every Kubernetes
// package compile again. (Where helm asks for newer ones, e.g. spf13/pflag,
// those packages and what imports them compile here: go.mod cannot go
// lower than a dependency requires.) From go list -m all of both modules.
require (
	github.com/containerd/errdefs v1.0.0
	github.com/cpuguy83/go-md2man/v2 v2.0.7
	github.com/go-logr/logr v1.4.3
	github.com/golang-jwt/jwt/v5 v5.3.0
	github.com/google/pprof v0.0.0-20250403155104-27863c87afa6
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.27.1
	github.com/miekg/dns v1.1.68
	github.com/onsi/ginkgo/v2 v2.25.0
	github.com/onsi/gomega v1.38.0
	github.com/prometheus/client_golang v1.23.0
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.67.4
	github.com/prometheus/procfs v0.16.1
	github.com/rogpeppe/go-internal v1.14.1
	go.etcd.io/etcd/api/v3 v3.6.6
	go.etcd.io/etcd/client/pkg/v3 v3.6.6
	go.etcd.io/etcd/client/v3 v3.6.6
	go.opentelemetry.io/auto/sdk v1.2.1
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.61.0
	go.opentelemetry.io/otel v1.38.0
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.37.0
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.37.0
	go.opentelemetry.io/otel/log v0.13.0
	go.opentelemetry.io/otel/metric v1.38.0
	go.opentelemetry.io/otel/sdk v1.38.0
	go.opentelemetry.io/otel/sdk/metric v1.38.0
	go.opentelemetry.io/otel/trace v1.38.0
	go.opentelemetry.io/proto/otlp v1.7.0
	go.yaml.in/yaml/v2 v2.4.3
	golang.org/x/exp v0.0.0-20250408133849-7e4ce0ab07d0
	golang.org/x/oauth2 v0.33.0
	golang.org/x/sys v0.39.0
	golang.org/x/time v0.14.0
	google.golang.org/genproto/googleapis/api v0.0.0-20251022142026-3a174f9686a8
	google.golang.org/genproto/googleapis/rpc v0.0.0-20251124214823-79d6a2a48846
	google.golang.org/grpc v1.77.0
	google.golang.org/protobuf v1.36.10
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
