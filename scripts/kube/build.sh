#!/usr/bin/env bash
# Builds the binaries of a single-node Kubernetes cluster from the Go module
# proxy into .kube/bin (git-ignored): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, CoreDNS (only the
# plugins the cluster uses) and, as KUBE_PARTS asks, kubectl and
# kube-proxy, all as one program (kubeall, symlinked under each name);
# crictl; kwok (KUBE_PARTS); and a static pause program. There is no registry here, so nothing is
# downloaded as a release binary.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces its 31
# staging modules with local paths), so a small wrapper module requires it
# and points every staging module at its published v0.x release. Each part
# has a stamp of its inputs in .kube/bin/.stamp-PART: an unchanged part is
# not rebuilt, and the Go build cache makes a rebuild after `make clean`
# (or in a fresh clone on the same machine) a link of a minute or two.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

K8S_VERSION=v1.34.4
STAGING_VERSION=v0.34.4
ETCD_VERSION=v3.6.4
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

# --- one module, one go build, one link --------------------------------
# The cluster's Go parts (etcd, the Kubernetes components, CoreDNS with
# the plugins its Corefile uses) are one program that runs the part named
# by its argv[0]; .kube/bin/NAME are symlinks to it. One module means one
# version of each shared dependency (client-go, grpc, etcd's client,
# protobuf: each compiled once, not once per part), and one program means
# one link rather than seven. crictl is a second main package of the same
# build (its code is package main).
#
# Only what is used is compiled. KUBE_PARTS lists the optional parts:
#   kubectl  for people and scripts/kube/smoke.sh (up.sh uses curl)
#   kwok     fake nodes for the scale benchmark (make bench-kube); built in
#            a module of its own (no kwok release compiles against v0.34)
#   proxy    kube-proxy, only with KUBE_PROXY=1
# The default is "kubectl kwok" (plus proxy with KUBE_PROXY=1); CI, whose
# tests use none of them, sets KUBE_PARTS="".
COREDNS_VERSION=v1.13.2 # its Kubernetes libraries are v0.34, as the cluster's
KWOK_VERSION=v0.8.0
KUBE_PARTS="${KUBE_PARTS-kubectl kwok}"
[ "${KUBE_PROXY:-0}" != 1 ] || KUBE_PARTS="$KUBE_PARTS proxy"
want() { case " $KUBE_PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$src/all/kubeall"
modfile="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
staging="$(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$modfile")"
# A staging module the proxy does not serve at that version (the sample
# ones, which nothing here imports) is replaced by an empty local module,
# so the module graph still loads.
stubs=""
for m in $staging; do
  if ! go mod download "$m@$STAGING_VERSION" >/dev/null 2>&1; then
    mkdir -p "$src/all/stub/${m#k8s.io/}"
    echo "module $m" >"$src/all/stub/${m#k8s.io/}/go.mod"
    stubs="$stubs $m"
  fi
done
all_gomod="$(
  echo "module sandboxer.local/kubebuild"
  echo
  echo "go 1.24"
  echo
  echo "require ("
  echo "	k8s.io/kubernetes $K8S_VERSION"
  echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  echo "	github.com/coredns/coredns $COREDNS_VERSION"
  echo "	sigs.k8s.io/cri-tools $CRICTL_VERSION"
  for m in $staging; do case " $stubs " in *" $m "*) ;; *) echo "	$m $STAGING_VERSION" ;; esac; done
  echo ")"
  echo
  for m in $staging; do
    case " $stubs " in
    *" $m "*) echo "replace $m => ./stub/${m#k8s.io/}" ;;
    *) echo "replace $m => $m $STAGING_VERSION" ;;
    esac
  done
)"
all_main='// Command kubeall is the Go parts of the local cluster in one program:
// it runs the part its argv[0] names (scripts/kube/build.sh).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	_ "time/tzdata"

	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// parts maps a program name to its main; optional parts add themselves.
var parts = map[string]func() int{
	"etcd":                    func() int { etcdmain.Main(os.Args); return 0 },
	"kube-apiserver":          func() int { return cli.Run(apiserver.NewAPIServerCommand()) },
	"kube-controller-manager": func() int { return cli.Run(controllermanager.NewControllerManagerCommand()) },
	"kube-scheduler":          func() int { return cli.Run(scheduler.NewSchedulerCommand()) },
	"kubelet":                 func() int { return cli.Run(kubelet.NewKubeletCommand(context.Background())) },
	"coredns":                 func() int { coremain.Run(); return 0 },
}

func main() {
	name := filepath.Base(os.Args[0])
	run, ok := parts[name]
	if !ok {
		var names []string
		for n := range parts {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "kubeall: run me as one of %v (a symlink), not %q\n", names, name)
		os.Exit(2)
	}
	os.Exit(run())
}'
kubectl_main='//go:build kubectl

package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
)

func init() {
	parts["kubectl"] = func() int {
		logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) // nolint:errcheck
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
		return 0
	}
}'
proxy_main='//go:build kubeproxy

package main

import (
	"k8s.io/component-base/cli"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
)

func init() { parts["kube-proxy"] = func() int { return cli.Run(proxy.NewProxyCommand()) } }'
ver="k8s.io/component-base/version"
ldflags="-s -w -X $ver.gitVersion=$K8S_VERSION -X $ver.gitMajor=1 -X $ver.gitMinor=34 -X $ver.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION"
names=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet coredns)
tags=""
if want kubectl; then names+=(kubectl); tags="$tags,kubectl"; fi
if want proxy; then names+=(kube-proxy); tags="$tags,kubeproxy"; fi
tags="${tags#,}"
if fresh all "$all_gomod" "$all_main" "$kubectl_main" "$proxy_main" "$ldflags" "$tags" -- kubeall crictl "${names[@]}"; then
  echo "the cluster's programs (Kubernetes $K8S_VERSION, etcd $ETCD_VERSION, CoreDNS $COREDNS_VERSION, crictl $CRICTL_VERSION${tags:+, $tags}) up to date in $bin"
else
  printf '%s\n' "$all_gomod" >"$src/all/go.mod"
  printf '%s\n' "$all_main" >"$src/all/kubeall/main.go"
  printf '%s\n' "$kubectl_main" >"$src/all/kubeall/kubectl.go"
  printf '%s\n' "$proxy_main" >"$src/all/kubeall/proxy.go"
  (
    cd "$src/all"
    echo "building the cluster's programs in one go build (Kubernetes $K8S_VERSION, etcd, CoreDNS, crictl${tags:+, $tags})"
    # -mod=mod resolves what the requirements above leave open and writes
    # go.sum; no tidy (it would fetch every dependency's test imports).
    GOFLAGS=-mod=mod nice go build -tags "$tags" -trimpath -ldflags "$ldflags" -o ../../bin/ \
      ./kubeall sigs.k8s.io/cri-tools/cmd/crictl
  )
  rm -f "$bin/kubectl" "$bin/kube-proxy"
  for p in "${names[@]}"; do ln -sf kubeall "$bin/$p"; done
  stamped all
fi

# kwok: fake nodes for the scale benchmark, in a module of its own.
if want kwok; then
  if fresh kwok "sigs.k8s.io/kwok@$KWOK_VERSION" -- kwok; then
    echo "kwok $KWOK_VERSION up to date in $bin"
  else
    mkdir -p "$src/kwok"
    (
      cd "$src/kwok"
      [ -f go.mod ] || go mod init sandboxer.local/kwokbuild >/dev/null 2>&1
      echo "building kwok $KWOK_VERSION"
      GOFLAGS=-mod=mod go get "sigs.k8s.io/kwok@$KWOK_VERSION" >/dev/null 2>&1
      GOFLAGS=-mod=mod nice go build -trimpath -ldflags "-s -w" -o ../../bin/kwok sigs.k8s.io/kwok/cmd/kwok
    )
    stamped kwok
  fi
  # Its "fast" stages (nodes Ready at once with lease heartbeats, pods
  # Ready at once, deleted at once), as kwokctl uses them, from its module.
  if [ ! -s "$bin/kwok-stages.yaml" ] || [ "$bin/kwok-stages.yaml" -ot "$bin/.stamp-kwok" ]; then
    kwokdir="$(cd "$src/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
      pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      echo "---"
      cat "$kwokdir/kustomize/stage/$f"
    done >"$bin/kwok-stages.yaml"
  fi
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
