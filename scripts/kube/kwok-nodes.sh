#!/usr/bin/env bash
# Creates N fake nodes (kwok-0 .. kwok-N-1) for kwok to run, and waits
# until they are Ready. They carry the label type=kwok (the kwok
# controller manages exactly those) and the taint
# kwok.x-k8s.io/node=fake:NoSchedule, so only pods that tolerate it and
# select type=kwok land there (scripts/kube/README.md). Each node takes
# 500 pods, so the default 4 hold a 1,000-sandbox scale run with room.
#
#   scripts/kube/kwok-nodes.sh [N]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

n="${1:-$KWOK_NODES}"
for i in $(seq 0 $((n - 1))); do
  cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-$i
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node-role.kubernetes.io/agent: ""
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
spec:
  taints:
  - key: kwok.x-k8s.io/node
    value: fake
    effect: NoSchedule
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "500"}
  capacity: {cpu: "64", memory: 256Gi, pods: "500"}
EOF
done | kctl apply -f - >/dev/null

ready() {
  local got
  got="$(kctl get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')"
  [ "$got" -ge "$n" ]
}
wait_for 60 "$n kwok nodes to be Ready" ready
