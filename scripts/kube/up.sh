#!/usr/bin/env bash
# Starts the local single-node cluster (binaries from build.sh) with its
# data under .kube/run, and prints the kubeconfig's absolute path as the
# last line of its output. When the cluster is already up it only prints
# the path. Any failure tears down what was started (down.sh) and exits
# non-zero, so a failed start leaves the host as it was.
#
# Daemons, each niced with a pid file in .kube/run/pid and a log in
# .kube/run/log: etcd (loopback), kube-apiserver (node IP), the
# controller-manager and scheduler (no leader election, loopback ports), a
# containerd of its own (not Docker's; state and socket under .kube/run,
# its image store in .kube/containerd, kept across runs), CoreDNS (on the
# CNI bridge's address, the pods' DNS server), the kubelet, kwok (fake
# nodes labelled type=kwok; KWOK_NODES=0 for none) and, with KUBE_PROXY=1,
# kube-proxy. The project's images are imported (images.sh); pods use them
# with imagePullPolicy Never. Host facts it changes are recorded first
# (host.sh) for down.sh to restore.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$KUBE_SCRIPTS/host.sh"

[ "$(id -u)" = 0 ] || die "must run as root (the kubelet and containerd manage cgroups and mounts)"
# One up or down at a time per worktree (down.sh, run from here, inherits
# the lock).
mkdir -p "$KUBE_ROOT/.kube"
exec 8>"$KUBE_ROOT/.kube/lock"
flock 8
export KUBE_LOCKED=1
# KWOK_NODES=0: no kwok and no fake nodes.
[[ "$KWOK_NODES" =~ ^[0-9]+$ ]] || die "KWOK_NODES must be a number, not $KWOK_NODES"
daemons=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd coredns kubelet)
[ "$KWOK_NODES" = 0 ] || daemons+=(kwok)
[ "${KUBE_PROXY:-0}" != 1 ] || daemons+=(kube-proxy)
need=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet coredns crictl pause)
# kwok-nodes.sh applies the fake nodes with kubectl.
[ "$KWOK_NODES" = 0 ] || need+=(kwok kubectl)
[ "${KUBE_PROXY:-0}" != 1 ] || need+=(kube-proxy)
for b in "${need[@]}"; do
  [ -x "$KUBE_BIN/$b" ] || die "$KUBE_BIN/$b missing: run scripts/kube/build.sh (make kube does; KUBE_PARTS says which optional parts it builds)"
done

healthy() {
  local d
  for d in "${daemons[@]}"; do
    alive "$d" || return 1
  done
  [ -f "$KUBE_RUN/up-complete" ] && api /readyz >/dev/null 2>&1
}
if healthy; then
  echo "$KUBECONFIG_PATH"
  exit 0
fi
if [ -e "$KUBE_RUN" ]; then
  log "a previous cluster is half up or stopped; tearing it down first"
  "$KUBE_SCRIPTS/down.sh"
fi

# Prerequisites a fresh Debian machine may lack, from its apt sources.
missing=()
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || missing+=(containernetworking-plugins)
command -v openssl >/dev/null || missing+=(openssl)
command -v curl >/dev/null || missing+=(curl)
command -v ss >/dev/null || missing+=(iproute2)
command -v iptables >/dev/null || missing+=(iptables)
# Docker's Debian packages bring both; the cluster runs its own instance.
command -v containerd-shim-runc-v2 >/dev/null || missing+=(containerd)
command -v runc >/dev/null || missing+=(runc)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${missing[@]}" >&2; }
  apt_install || { apt-get update -qq >&2 && apt_install; }
fi

# One cluster per machine: the bridge, the DNS address and the ports are
# fixed. Another worktree's cluster must not be disturbed, so this check
# comes before anything is touched (a failure past it tears down).
if ip link show "$BRIDGE" >/dev/null 2>&1; then
  die "$BRIDGE exists: another cluster runs on this machine (make kube-down in its worktree)"
fi
for port in "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" 10250 10248 10257 10259; do
  if ss -Hltn "sport = :$port" | grep -q .; then
    die "port $port is in use: another cluster runs on this machine?"
  fi
done

# From here on any failure (or an interrupt) undoes everything: the EXIT
# trap sees whether the start got to the end.
completed=0
on_exit() {
  local rc=$?
  if [ "$completed" = 1 ]; then return 0; fi
  trap - EXIT INT TERM
  set +e
  if [ "$rc" = 0 ]; then rc=1; fi
  if [ -n "${images_pid:-}" ]; then kill "$images_pid" 2>/dev/null; fi
  log "start failed (exit $rc); last lines of the daemon logs:"
  local f
  for f in "$KUBE_RUN"/log/*.log; do
    [ -f "$f" ] || continue
    echo "--- $(basename "$f")" >&2
    tail -n 5 "$f" >&2
  done
  "$KUBE_SCRIPTS/down.sh" || true
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

t0=$(date +%s%3N)
elapsed() { local ms=$(($(date +%s%3N) - t0)); printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)); }
mark() { log "$1 after $(elapsed)"; }
mkdir -p "$KUBE_RUN"
record_host


NODE_IP="$(node_ip)" || die "no IPv4 address for the node"
echo "$NODE_IP" >"$KUBE_RUN/node-ip"
pki="$KUBE_RUN/pki"
"$KUBE_SCRIPTS/certs.sh" "$NODE_IP"

# --- control plane ------------------------------------------------------
start etcd etcd --name sandboxer --data-dir "$KUBE_RUN/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "sandboxer=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync --log-level warn

start kube-apiserver kube-apiserver \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$APISERVER_PORT" \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" \
  --service-cluster-ip-range "$SERVICE_CIDR" \
  --service-account-issuer "https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
  --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP,Hostname \
  --cert-dir "$pki/apiserver-generated" --profiling=false --v=1
wait_for 60 "the apiserver" api /readyz
mark "apiserver ready"

cat >"$KUBE_RUN/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: $pki/admin.kubeconfig
  qps: 1000
  burst: 2000
EOF
start kube-scheduler kube-scheduler --config "$KUBE_RUN/scheduler.yaml" \
  --bind-address 127.0.0.1 --authentication-kubeconfig "$pki/admin.kubeconfig" \
  --authorization-kubeconfig "$pki/admin.kubeconfig" --v=1
start kube-controller-manager kube-controller-manager \
  --kubeconfig "$pki/admin.kubeconfig" --authentication-kubeconfig "$pki/admin.kubeconfig" \
  --authorization-kubeconfig "$pki/admin.kubeconfig" --bind-address 127.0.0.1 \
  --leader-elect=false --service-account-private-key-file "$pki/sa.key" \
  --root-ca-file "$pki/ca.crt" --service-cluster-ip-range "$SERVICE_CIDR" \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
  --use-service-account-credentials=false --kube-api-qps 200 --kube-api-burst 400 --v=1

# --- node: network, containerd, DNS, kubelet ----------------------------
# The bridge is made here rather than by the CNI plugin so CoreDNS can bind
# its address before the first pod exists.
# Its MAC address is set, not left to the kernel: a bridge without one
# takes the lowest of its ports' and changes it as pods come and go, and a
# pod whose ARP entry for the gateway still names the old one loses every
# packet to the node (the apiserver, for serve in a pod) until the entry
# is checked again, some 30-60 s later. 0a:58 and the IP, as the CNI
# bridge plugin names addresses.
ip link add "$BRIDGE" type bridge
ip link set "$BRIDGE" address "$(printf '0a:58:%02x:%02x:%02x:%02x' ${BRIDGE_IP//./ })"
ip addr add "$BRIDGE_IP/${POD_CIDR#*/}" dev "$BRIDGE"
ip link set "$BRIDGE" up
# Docker leaves FORWARD's policy at DROP and br_netfilter passes bridged
# frames through it: accept pod-to-pod traffic on the bridge.
iptables -w 5 -I FORWARD 1 -i "$BRIDGE" -o "$BRIDGE" -m comment --comment "$FORWARD_COMMENT" -j ACCEPT

mkdir -p "$KUBE_RUN/cni/net.d" "$KUBE_RUN/cni/ipam"
cat >"$KUBE_RUN/cni/net.d/10-sandboxer.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sandboxer-kube",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$BRIDGE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$KUBE_RUN/cni/ipam"
      }
    }
  ]
}
EOF

ctrd="$KUBE_RUN/containerd"
mkdir -p "$ctrd"
cat >"$ctrd/config.toml" <<EOF
version = 2
root = "$KUBE_STORE"
state = "$ctrd/state"
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing",
]
[grpc]
  address = "$ctrd/containerd.sock"
[ttrpc]
  address = "$ctrd/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$ctrd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:3.10"
  # This VM drops CAP_SYS_RESOURCE: runc cannot lower oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$ctrd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$KUBE_RUN/cni/net.d"
EOF
start containerd containerd --config "$ctrd/config.toml"
wait_for 30 "containerd" ctr --address "$ctrd/containerd.sock" version
"$KUBE_SCRIPTS/images.sh" pause
# The project's images are copied while the node comes up.
"$KUBE_SCRIPTS/images.sh" project >"$KUBE_RUN/log/images.log" 2>&1 &
images_pid=$!
mark "containerd up"

cat >"$KUBE_RUN/Corefile" <<EOF
.:53 {
    bind $BRIDGE_IP
    errors
    ready 127.0.0.1:$DNS_READY_PORT
    kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
        kubeconfig $pki/admin.kubeconfig sandboxer-kube
        pods insecure
        ttl 5
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
}
EOF
start coredns coredns -conf "$KUBE_RUN/Corefile"

kl="$KUBE_RUN/kubelet"
mkdir -p "$kl" "$KUBE_RUN/pod-logs"
cat >"$KUBE_RUN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $pki/ca.crt}
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://$ctrd/containerd.sock
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
# Keeps the kubelet from adding KUBE-FIREWALL and friends to the host.
makeIPTablesUtilChains: false
clusterDomain: $CLUSTER_DOMAIN
clusterDNS: [$BRIDGE_IP]
resolvConf: /etc/resolv.conf
podLogsDir: $KUBE_RUN/pod-logs
oomScoreAdj: 0
maxPods: 250
serializeImagePulls: false
# The imported images cannot be pulled again: never garbage-collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2%
  imagefs.available: 2%
nodeStatusUpdateFrequency: 4s
shutdownGracePeriod: 0s
EOF
start kubelet kubelet --config "$KUBE_RUN/kubelet.yaml" --kubeconfig "$pki/kubelet.kubeconfig" \
  --root-dir "$kl" --cert-dir "$kl/pki" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v=1

node_ready() {
  api "/api/v1/nodes/$NODE_NAME" 2>/dev/null | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}
wait_for 90 "the node to be Ready" node_ready
mark "node $NODE_NAME Ready"
# For cycletest.sh: a start that fails late, with everything running.
if [ "${KUBE_TEST_FAIL:-}" = after-node ]; then die "failing on purpose (KUBE_TEST_FAIL=after-node)"; fi
wait_for 30 "CoreDNS" curl -fsS "http://127.0.0.1:$DNS_READY_PORT/ready"
wait_for 30 "the default service account" api /api/v1/namespaces/default/serviceaccounts/default

# --- kube-proxy (KUBE_PROXY=1): routes ClusterIP Services ---------------
# Off by default: sandboxes use headless Services, and kube-proxy adds
# dozens of iptables chains. Conntrack sysctls and localhost NodePorts
# (route_localnet) are left alone.
if [ "${KUBE_PROXY:-0}" = 1 ]; then
  cat >"$KUBE_RUN/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $pki/admin.kubeconfig
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [primary]
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
  start kube-proxy kube-proxy --config "$KUBE_RUN/kube-proxy.yaml" --v=1
  wait_for 30 "kube-proxy" curl -fsS "http://127.0.0.1:10256/healthz"
  mark "kube-proxy up"
fi

# --- kwok: fake nodes for scale tests -----------------------------------
if [ "$KWOK_NODES" != 0 ]; then
  [ -x "$KUBE_BIN/kwok" ] || die "$KUBE_BIN/kwok missing: run scripts/kube/build.sh"
  start kwok kwok --kubeconfig "$pki/admin.kubeconfig" --config "$KUBE_BIN/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-label-selector type=kwok \
    --cidr "$KWOK_POD_CIDR" --node-ip "$NODE_IP" --server-address 127.0.0.1:10247
  "$KUBE_SCRIPTS/kwok-nodes.sh" "$KWOK_NODES"
  mark "kwok nodes Ready"
fi

wait "$images_pid" || { cat "$KUBE_RUN/log/images.log" >&2; die "importing the project's images failed"; }
cat "$KUBE_RUN/log/images.log" >&2
mark "project images imported"

touch "$KUBE_RUN/up-complete"
completed=1
log "cluster up in $(elapsed); export KUBECONFIG=$KUBECONFIG_PATH"
echo "$KUBECONFIG_PATH"
