# Recording and restoring the host facts the cluster changes (sourced by
# up.sh and down.sh after lib.sh).
#
# up.sh calls record_host before it starts anything; the record,
# .kube/run/host-before, holds each sysctl's value, which host paths
# existed and which iptables chains there were. down.sh calls
# restore_host, which puts back only what differs from the record, so a
# fact another program changed in between is not clobbered unless the
# cluster could have done it.

HOST_BEFORE="$KUBE_RUN/host-before"

ipt_chains() { # CMD TABLE: the chain names of one table
  "$1" -w 5 -t "$2" -S 2>/dev/null | awk '$1 == "-N" || $1 == "-P" {print $2}'
}

record_host() {
  [ -f "$HOST_BEFORE" ] && return 0
  local s p cmd t
  {
    for s in "${HOST_SYSCTLS[@]}"; do
      echo "sysctl $s $(sysctl -n "$s" 2>/dev/null || echo absent)"
    done
    for p in "${HOST_PATHS[@]}"; do
      if [ -e "$p" ]; then echo "path $p present"; else echo "path $p absent"; fi
    done
    for cmd in iptables ip6tables; do
      for t in filter nat mangle raw; do
        ipt_chains "$cmd" "$t" | sed "s/^/chain $cmd $t /"
      done
    done
    nft list tables 2>/dev/null | sed 's/^table /nft /'
  } >"$HOST_BEFORE.tmp"
  mv "$HOST_BEFORE.tmp" "$HOST_BEFORE"
}

# delete_chain CMD TABLE CHAIN: removes the rules jumping to CHAIN, then
# CHAIN itself.
delete_chain() {
  local cmd=$1 t=$2 c=$3 rule
  "$cmd" -w 5 -t "$t" -S 2>/dev/null | grep -E -- "-j $c( |$)" | while read -r rule; do
    # shellcheck disable=SC2086 # the rule is iptables' own word list
    eval "$cmd -w 5 -t $t ${rule/-A /-D }" || true
  done
  "$cmd" -w 5 -t "$t" -F "$c" 2>/dev/null || true
  "$cmd" -w 5 -t "$t" -X "$c" 2>/dev/null || true
}

restore_host() {
  local kind a b cmd t c rule
  # The FORWARD rules up.sh added for pod-to-pod traffic.
  for cmd in iptables ip6tables; do
    "$cmd" -w 5 -S FORWARD 2>/dev/null | grep -F -- "--comment $FORWARD_COMMENT" | while read -r rule; do
      eval "$cmd -w 5 ${rule/-A /-D }" || true
    done
  done
  [ -f "$HOST_BEFORE" ] || return 0
  # Chains the kubelet (KUBE-*) or a CNI plugin (CNI-*) made since up.
  for cmd in iptables ip6tables; do
    for t in filter nat mangle raw; do
      for c in $(ipt_chains "$cmd" "$t" | grep -E '^(KUBE-|CNI-)'); do
        grep -qxF "chain $cmd $t $c" "$HOST_BEFORE" || delete_chain "$cmd" "$t" "$c"
      done
    done
  done
  # nftables tables the iptables-nft calls created (e.g. ip6 nat for
  # kube-proxy's ip6tables chains), once no rule is left in them.
  local fam name
  while read -r _ fam name; do
    grep -qxF "nft $fam $name" "$HOST_BEFORE" && continue
    if ! nft list table "$fam" "$name" 2>/dev/null | grep -Eq '^[[:space:]]+(jump|goto|counter|ip|ip6|meta|iifname|oifname|ct|mark|tcp|udp|fib|masquerade|dnat|snat|accept|drop|reject|return)( |$)'; then
      nft delete table "$fam" "$name" 2>/dev/null || true
    fi
  done < <(nft list tables 2>/dev/null)
  while read -r kind a b; do
    case $kind in
      sysctl)
        [ "$b" = absent ] && continue
        if [ "$(sysctl -n "$a" 2>/dev/null)" != "$b" ]; then
          log "restoring sysctl $a=$b"
          sysctl -qw "$a=$b" || log "could not restore sysctl $a"
        fi
        ;;
      path)
        if [ "$b" = absent ] && [ -e "$a" ]; then
          # Only what the cluster could have left: refuse to delete a
          # tree that still holds something live (a mount).
          if grep -q " $a[/ ]" /proc/self/mountinfo; then
            log "not removing $a: something is mounted below it"
          elif [ "$a" = /run/containerd ] || [ "$a" = /var/run/netns ]; then
            # Shared with Docker's own containerd (its shims' sockets live
            # in /run/containerd/s): only empty directories go.
            find "$a" -depth -type d -empty -delete 2>/dev/null || true
          else
            rm -rf "$a"
          fi
        fi
        ;;
    esac
  done <"$HOST_BEFORE"
}
