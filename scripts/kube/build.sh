#!/usr/bin/env bash
# Builds the binaries of a single-node Kubernetes cluster from the Go module
# proxy into .kube/bin (git-ignored): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl,
# kwok, CoreDNS (only the plugins the cluster uses), crictl and a static
# pause program. There is no registry here, so nothing is downloaded as a
# release binary.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces its 31
# staging modules with local paths), so a small wrapper module requires it
# and points every staging module at its published v0.x release. Each part
# has its own module under .kube/src and a stamp of its inputs in
# .kube/bin/.stamp-PART: an unchanged part is not rebuilt, and the Go build
# cache makes a rebuild after `make clean` cheap.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

K8S_VERSION=v1.34.4
STAGING_VERSION=v0.34.4
ETCD_VERSION=v3.6.4
KWOK_VERSION=v0.8.0
COREDNS_VERSION=v1.15.0
CRICTL_VERSION=v1.34.0
out=.kube
src="$out/src"
bin="$out/bin"
mkdir -p "$src" "$bin"

# fresh PART INPUTS... : true when PART's stamp matches its inputs and its
# binaries are there (the binaries are the remaining arguments after --).
fresh() {
  local part=$1; shift
  local inputs=() bins=()
  while [ "$#" -gt 0 ] && [ "$1" != -- ]; do inputs+=("$1"); shift; done
  [ "$#" -gt 0 ] && shift
  bins=("$@")
  stamp="$(printf '%s\n' "${inputs[@]}" | sha256sum | cut -c1-16)"
  local b
  for b in "${bins[@]}"; do [ -x "$bin/$b" ] || return 1; done
  [ -f "$bin/.stamp-$part" ] && [ "$(cat "$bin/.stamp-$part")" = "$stamp" ]
}
stamped() { echo "$stamp" >"$bin/.stamp-$1"; }

# --- etcd and the Kubernetes components --------------------------------
mkdir -p "$src/k8s"
modfile="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
staging="$(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$modfile")"
k8s_gomod="$(
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
)"
k8s_tools='//go:build tools

package kubebuild

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)'
ver="k8s.io/component-base/version"
ldflags="-s -w -X $ver.gitVersion=$K8S_VERSION -X $ver.gitMajor=1 -X $ver.gitMinor=34 -X $ver.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
if fresh k8s "$k8s_gomod" "$k8s_tools" "$ldflags" -- \
  etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl; then
  echo "etcd and Kubernetes $K8S_VERSION up to date in $bin"
else
  printf '%s\n' "$k8s_gomod" >"$src/k8s/go.mod"
  printf '%s\n' "$k8s_tools" >"$src/k8s/tools.go"
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
  # go build names etcd's binary after its import path's last element
  # without the major version suffix: "server".
  mv "$bin/server" "$bin/etcd"
  stamped k8s
fi

# gomodule PART MODULE VERSION PKG OUT [LDFLAGS]: builds PKG of MODULE at
# VERSION into .kube/bin/OUT in a module of its own.
gomodule() {
  local part=$1 mod=$2 version=$3 pkg=$4 outname=$5 flags=${6:-"-s -w"}
  if fresh "$part" "$mod@$version" "$pkg" "$flags" -- "$outname"; then
    echo "$outname $version up to date in $bin"
    return 0
  fi
  mkdir -p "$src/$part"
  (
    cd "$src/$part"
    [ -f go.mod ] || go mod init "sandboxer.local/${part}build" >/dev/null 2>&1
    echo "building $outname $version"
    GOFLAGS=-mod=mod go get "$mod@$version" >/dev/null 2>&1
    GOFLAGS=-mod=mod nice go build -trimpath -ldflags "$flags" -o "../../bin/$outname" "$pkg"
  )
  stamped "$part"
}

# kwok: fake nodes for the 1,000-sandbox API scale test.
gomodule kwok sigs.k8s.io/kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok kwok
# Its "fast" stages (nodes Ready at once with lease heartbeats, pods Ready
# at once, deleted at once), as kwokctl uses them, from the module's files.
if [ ! -s "$bin/kwok-stages.yaml" ] || [ "$bin/kwok-stages.yaml" -ot "$bin/.stamp-kwok" ]; then
  kwokdir="$(cd "$src/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    echo "---"
    cat "$kwokdir/kustomize/stage/$f"
  done >"$bin/kwok-stages.yaml"
fi
# crictl: down.sh stops and removes pod sandboxes through the CRI, which
# tears down their network namespaces and CNI state properly.
gomodule crictl sigs.k8s.io/cri-tools "$CRICTL_VERSION" sigs.k8s.io/cri-tools/cmd/crictl crictl \
  "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION"

# CoreDNS with only the plugins the cluster's Corefile uses: the full
# build pulls every cloud provider's SDK.
coredns_main='package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }'
if fresh coredns "$COREDNS_VERSION" "$coredns_main" -- coredns; then
  echo "coredns $COREDNS_VERSION up to date in $bin"
else
  mkdir -p "$src/coredns"
  (
    cd "$src/coredns"
    printf '%s\n' "$coredns_main" >main.go
    [ -f go.mod ] || go mod init sandboxer.local/corednsbuild >/dev/null 2>&1
    echo "building coredns $COREDNS_VERSION"
    GOFLAGS=-mod=mod go get "github.com/coredns/coredns@$COREDNS_VERSION" >/dev/null 2>&1
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1
    GOFLAGS=-mod=mod nice go build -trimpath -ldflags "-s -w" -o ../../bin/coredns .
  )
  stamped coredns
fi

# The pod sandbox ("pause") program: sleeps until told to stop.
pause_main='package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}'
if ! fresh pause "$pause_main" -- pause; then
  mkdir -p "$src/pause"
  (
    cd "$src/pause"
    printf '%s\n' "$pause_main" >main.go
    [ -f go.mod ] || go mod init sandboxer.local/pause >/dev/null 2>&1
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o ../../bin/pause .
  )
  stamped pause
fi
echo "kube binaries ready in $bin"
