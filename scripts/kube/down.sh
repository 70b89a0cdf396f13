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

# stop NAME: TERM, up to 10 s, then KILL; by the pid in NAME's pid file.
stop() {
  local f pid i
  f="$(pidfile "$1")"
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

# Nothing may recreate pods while they go.
for d in kwok coredns kube-scheduler kube-controller-manager kubelet; do stop "$d"; done

# Stop and remove every pod sandbox through the CRI: runs CNI DEL, removes
# the network namespace and the sandbox's mounts.
if alive containerd; then
  crictl --runtime-endpoint "unix://$ctrd/containerd.sock" --timeout 20s rmp --all --force >/dev/null 2>&1 ||
    log "crictl could not remove every pod sandbox; killing what is left"
fi
stop containerd
stop kube-apiserver
stop etcd

# Shims (and through them containers) that outlived containerd: found by
# the cluster's containerd address on their command line.
for c in /proc/[0-9]*/cmdline; do
  pid="${c#/proc/}"; pid="${pid%/cmdline}"
  if { tr '\0' ' ' <"$c"; } 2>/dev/null | grep -q -- "-address $ctrd/containerd.sock"; then
    kill -KILL "$pid" 2>/dev/null
  fi
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
log "cluster stopped and host restored"
