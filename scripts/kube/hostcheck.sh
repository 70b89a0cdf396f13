#!/usr/bin/env bash
# Prints the host facts the local cluster may change, one per line and in
# a stable order, so a test can diff a run before `make kube` against a run
# after `make kube-down`:
#
#   scripts/kube/hostcheck.sh >before; make kube; make kube-down
#   scripts/kube/hostcheck.sh >after; diff before after
#
# Covered: the sysctls the kubelet and the CNI bridge plugin set, iptables
# chains and rules (v4 and v6, every table) named KUBE-/CNI- or carrying
# up.sh's comment, the CNI bridge and veth links, mounts under .kube and of
# network namespaces, kubepods cgroups, and the host paths with hard-wired
# names (/var/log/pods, /var/lib/cni, ...).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

echo "# sysctls"
for s in "${HOST_SYSCTLS[@]}"; do
  echo "sysctl $s=$(sysctl -n "$s" 2>/dev/null || echo absent)"
done

echo "# iptables (KUBE-, CNI-, $FORWARD_COMMENT)"
for cmd in iptables ip6tables; do
  for t in filter nat mangle raw; do
    "$cmd" -w 5 -t "$t" -S 2>/dev/null | grep -E "KUBE-|CNI-|$FORWARD_COMMENT" | sed "s/^/$cmd -t $t /"
  done
done

echo "# nftables tables"
nft list tables 2>/dev/null | sed 's/^/nft /' | sort

echo "# links"
ip -o link show "$BRIDGE" 2>/dev/null | awk '{print "link", $2, $3}' || true
ip -o link show type veth 2>/dev/null | awk '{print "veth", $2}' || true
ip -o link show "$BRIDGE" >/dev/null 2>&1 || echo "link $BRIDGE absent"

echo "# mounts under .kube, netns"
awk -v root="$KUBE_ROOT/.kube" '$5 ~ "^" root || $5 ~ "/netns" {print "mount", $5, $9}' /proc/self/mountinfo | sort

echo "# kubepods cgroups"
found=0
for d in /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods*; do
  [ -e "$d" ] || continue
  echo "cgroup $d"; found=1
done
[ "$found" = 1 ] || echo "cgroup kubepods absent"

echo "# host paths"
for p in "${HOST_PATHS[@]}"; do
  if [ -e "$p" ]; then
    echo "path $p present ($(find "$p" -mindepth 1 2>/dev/null | wc -l) entries)"
  else
    echo "path $p absent"
  fi
done

echo "# processes of the cluster"
for p in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kwok coredns; do
  n="$(pgrep -xc "$p" 2>/dev/null || true)"
  echo "process $p ${n:-0}"
done
n=0
for c in /proc/[0-9]*/cmdline; do
  { tr '\0' ' ' <"$c"; } 2>/dev/null | grep -q -- "$KUBE_RUN/containerd" && n=$((n + 1))
done
echo "process containerd-of-cluster $n"
