# Shared settings of the local cluster scripts (sourced, not run).
#
# Everything the cluster writes lives under .kube/run (git-ignored): data,
# logs, pid files, certificates, and host-before, the record of the host
# facts up.sh may change, so down.sh can put each back. Daemons bind to
# loopback, the node IP or the CNI bridge only.

KUBE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KUBE_BIN="$KUBE_ROOT/.kube/bin"
KUBE_RUN="$KUBE_ROOT/.kube/run"
KUBECONFIG_PATH="$KUBE_ROOT/.kube/kubeconfig"
KUBECONFIG_RESTRICTED="$KUBE_ROOT/.kube/kubeconfig-restricted"
# containerd's root (content and unpacked images), kept across runs so the
# imported images need not be copied again; nothing in it is mounted or
# running after down.sh.
KUBE_STORE="$KUBE_ROOT/.kube/containerd"
KUBE_SCRIPTS="$KUBE_ROOT/scripts/kube"

NODE_NAME=sandboxer-kube
CLUSTER_DOMAIN=cluster.local
# Ranges chosen to miss Docker's default pools (172.17-31/16, 192.168/16).
SERVICE_CIDR=10.97.0.0/16
POD_CIDR=10.244.0.0/24
BRIDGE=cni0
BRIDGE_IP=10.244.0.1
# kwok's fake pods get addresses from here; they are never routed.
KWOK_POD_CIDR=10.245.0.0/16
KWOK_NODES="${KWOK_NODES:-4}"

ETCD_PORT=23790
ETCD_PEER_PORT=23800
APISERVER_PORT=6443
DNS_READY_PORT=18181

# Every host sysctl the kubelet or the CNI bridge plugin may set.
HOST_SYSCTLS=(
  vm.overcommit_memory
  vm.panic_on_oom
  kernel.panic
  kernel.panic_on_oops
  kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes
  net.ipv4.ip_forward
  net.ipv6.conf.all.forwarding
  net.bridge.bridge-nf-call-iptables
  net.bridge.bridge-nf-call-ip6tables
)
# Host paths the kubelet, containerd's shims or libcni create with
# hard-wired names; down.sh removes the ones that were absent before up.
HOST_PATHS=(
  /var/log/containers
  /var/log/pods
  /var/lib/cni
  /var/lib/kubelet
  /etc/cni
  /run/containerd
  /var/run/netns
)
# The comment on the FORWARD rules up.sh adds (Docker's FORWARD policy is
# DROP, and br_netfilter sends bridged pod-to-pod frames through it).
FORWARD_COMMENT=sandboxer-kube

export PATH="$KUBE_BIN:/usr/local/go/bin:/usr/sbin:/sbin:$PATH"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'kube: error: %s\n' "$*" >&2; exit 1; }

# The address the node is reached at: the source of the default route,
# else the first global IPv4 address.
node_ip() {
  local ip
  ip="$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -1)"
  [ -n "$ip" ] || ip="$(ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -1)"
  [ -n "$ip" ] || return 1
  echo "$ip"
}

pidfile() { echo "$KUBE_RUN/pid/$1.pid"; }

# alive NAME: the daemon whose pid file is NAME runs.
alive() {
  local f; f="$(pidfile "$1")"
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# start NAME CMD...: runs CMD niced in its own session with its output in
# .kube/run/log/NAME.log and its pid in .kube/run/pid/NAME.pid.
start() {
  local name=$1; shift
  mkdir -p "$KUBE_RUN/log" "$KUBE_RUN/pid"
  # fd 8 is up.sh's lock: a daemon holding it would block the next run.
  setsid nice -n 10 "$@" </dev/null >"$KUBE_RUN/log/$name.log" 2>&1 8>&- &
  echo $! >"$(pidfile "$name")"
  disown $!
}

# wait_for SECONDS WHAT CMD...: polls CMD every 0.2 s.
wait_for() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "timed out after ${secs}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

kctl() { kubectl --kubeconfig "$KUBECONFIG_PATH" "$@"; }
# api PATH: GETs PATH from the API server as the admin (curl: the scripts
# that start and stop the cluster need no kubectl, which CI does not build).
api() {
  curl -fsS --max-time 10 --cacert "$KUBE_RUN/pki/ca.crt" --cert "$KUBE_RUN/pki/admin.crt" \
    --key "$KUBE_RUN/pki/admin.key" "https://$(cat "$KUBE_RUN/node-ip"):$APISERVER_PORT$1"
}
