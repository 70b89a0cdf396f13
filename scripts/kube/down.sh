#!/usr/bin/env bash
# Stops the local cluster and puts the host back as up.sh found it: the
# daemons (by their pid files), the pods' sandboxes (through the CRI, so
# CNI and network namespaces are torn down), leftover shims and pod
# processes, mounts under .kube/run, the CNI bridge, the kubepods cgroups,
# iptables chains the kubelet or CNI made (v4 and v6), the sysctls and
# host paths recorded in .kube/run/host-before. Then .kube/run goes.
# Safe to run when nothing is up, and again after a failed run.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$KUBE_SCRIPTS/host.sh"

[ -d "$KUBE_RUN" ] || exit 0
[ "$(id -u)" = 0 ] || die "must run as root"
if [ "${KUBE_LOCKED:-}" != 1 ]; then
  exec 8>"$KUBE_ROOT/.kube/lock"
  flock 8
fi
ctrd="$KUBE_RUN/containerd"
t0=$(date +%s%3N)
elapsed() { local ms=$(($(date +%s%3N) - t0)); printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)); }

# stop NAME...: TERM to each daemon by the pid in its pid file, up to 10 s
# for all of them together, then KILL.
stop() {
  local name f pids=() pid i
  for name in "$@"; do
    f="$(pidfile "$name")"
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    rm -f "$f"
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for i in $(seq 1 50); do
    local left=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
    [ "${#left[@]}" -eq 0 ] && return 0
    pids=("${left[@]}")
    sleep 0.2
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

# Nothing may recreate pods while they go.
stop kwok kube-proxy coredns kube-scheduler kube-controller-manager kubelet
log "node daemons stopped after $(elapsed)"

# Stop and remove every pod sandbox through the CRI: runs CNI DEL, removes
# the network namespace and the sandbox's mounts.
if alive containerd; then
  crictl --runtime-endpoint "unix://$ctrd/containerd.sock" --timeout 20s rmp --all --force >/dev/null 2>&1 ||
    log "crictl could not remove every pod sandbox; killing what is left"
fi
log "pod sandboxes removed after $(elapsed)"
# The control plane's data is deleted below, so it need not shut down
# gracefully (the apiserver can take a minute draining its watches).
kill_now() {
  local f
  for name in "$@"; do
    f="$(pidfile "$name")"
    [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
    rm -f "$f"
  done
}
kill_now kube-apiserver etcd
stop containerd
log "containerd and the control plane stopped after $(elapsed)"

# Shims (and through them containers) that outlived containerd: found by
# the cluster's containerd address on their command line. A killed shim
# leaves its socket in /run/containerd/s (shared with Docker's
# containerd), named by containerd 1.6 as sha256(ADDRESS/NAMESPACE/ID).
for c in /proc/[0-9]*/cmdline; do
  pid="${c#/proc/}"; pid="${pid%/cmdline}"
  args="$({ tr '\0' ' ' <"$c"; } 2>/dev/null || true)"
  case "$args" in
    *"-address $ctrd/containerd.sock"*) ;;
    *) continue ;;
  esac
  kill -KILL "$pid" 2>/dev/null
  id="$(sed -n 's/.* -id \([^ ]*\) .*/\1/p' <<<"$args")"
  [ -n "$id" ] || continue
  sockname="$(printf '%s' "$ctrd/containerd.sock/k8s.io/$id" | sha256sum | cut -d' ' -f1)"
  rm -f "/run/containerd/s/$sockname"
done
# Pod processes left in the kubepods cgroups, then the cgroups themselves.
for pass in 1 2 3; do
  left=0
  for procs in $(find /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods* -name cgroup.procs 2>/dev/null); do
    for pid in $(cat "$procs" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null && left=1
    done
  done
  [ "$left" = 0 ] && break
  sleep 0.5
done
for d in /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods*; do
  [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
  [ -d "$d" ] && log "could not remove cgroup $d"
done

# Mounts under .kube/run (network namespaces, shm, rootfs overlays, the
# kubelet's volumes and the bind mount of its root dir), deepest first.
for pass in 1 2 3; do
  mapfile -t mnts < <(awk -v root="$KUBE_RUN" '$5 == root || index($5, root "/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
  [ "${#mnts[@]}" -eq 0 ] && break
  for m in "${mnts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
done

# Veths die with their namespaces; the bridge is ours.
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"

restore_host
rm -rf "$KUBE_RUN"
log "cluster stopped and host restored in $(elapsed)"
