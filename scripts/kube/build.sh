#!/usr/bin/env bash
# Builds the binaries of a single-node Kubernetes cluster from the Go module
# proxy into .kube/bin (git-ignored): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl,
# kwok and a static pause program. There is no registry here, so nothing
# is downloaded as a release binary.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces its 31
# staging modules with local paths), so a small wrapper module requires it
# and points every staging module at its published v0.x release. Binaries
# are kept per wrapper content; an unchanged wrapper reuses them, and the
# Go build cache makes a rebuild after `make clean` cheap.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

K8S_VERSION=v1.34.4
STAGING_VERSION=v0.34.4
ETCD_VERSION=v3.6.4
KWOK_VERSION=v0.8.0
out=.kube
src="$out/src"
bin="$out/bin"
mkdir -p "$src/k8s" "$src/kwok" "$src/pause" "$bin"

modfile="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
staging="$(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$modfile")"

# The wrapper module for the cluster's components and etcd.
{
  echo "module sandboxer.local/kubebuild"
  echo
  echo "go 1.24"
  echo
  echo "require ("
  echo "	k8s.io/kubernetes $K8S_VERSION"
  echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  for m in $staging; do echo "	$m $STAGING_VERSION"; done
  echo ")"
  echo
  for m in $staging; do echo "replace $m => $m $STAGING_VERSION"; done
} > "$src/k8s/go.mod.new"
cat > "$src/k8s/tools.go.new" <<'GO'
//go:build tools

package kubebuild

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
key="$(cat "$src/k8s/go.mod.new" "$src/k8s/tools.go.new" "$0" | sha256sum | cut -c1-16)"
if [ -f "$bin/.key" ] && [ "$(cat "$bin/.key")" = "$key" ] && [ -x "$bin/kubelet" ] && [ -x "$bin/kwok" ] && [ -x "$bin/pause" ]; then
  echo "kube binaries up to date in $bin"
  exit 0
fi
mv "$src/k8s/go.mod.new" "$src/k8s/go.mod"
mv "$src/k8s/tools.go.new" "$src/k8s/tools.go"

ver="k8s.io/component-base/version"
ldflags="-s -w -X $ver.gitVersion=$K8S_VERSION -X $ver.gitMajor=1 -X $ver.gitMinor=34 -X $ver.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
(
  cd "$src/k8s"
  GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
  echo "building etcd and Kubernetes $K8S_VERSION (about 10 minutes on 2 idle cores the first time)"
  GOFLAGS=-mod=mod nice go build -trimpath -ldflags "$ldflags" -o ../../bin/ \
    go.etcd.io/etcd/server/v3 \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kube-proxy \
    k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kubectl
)
# go build names etcd's binary after its module path's last element.
[ -f "$bin/v3" ] && mv "$bin/v3" "$bin/etcd"

# kwok: fake nodes for the 1,000-sandbox API scale test.
(
  cd "$src/kwok"
  [ -f go.mod ] || go mod init sandboxer.local/kwokbuild >/dev/null 2>&1
  GOFLAGS=-mod=mod go get "sigs.k8s.io/kwok@$KWOK_VERSION" >/dev/null 2>&1
  GOFLAGS=-mod=mod nice go build -trimpath -ldflags "-s -w" -o ../../bin/kwok sigs.k8s.io/kwok/cmd/kwok
)

# The pod sandbox ("pause") program: sleeps until told to stop.
cat > "$src/pause/main.go" <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
GO
(
  cd "$src/pause"
  [ -f go.mod ] || go mod init sandboxer.local/pause >/dev/null 2>&1
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o ../../bin/pause .
)
echo "$key" > "$bin/.key"
echo "kube binaries built in $bin"
