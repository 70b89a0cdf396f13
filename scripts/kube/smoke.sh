#!/usr/bin/env bash
# Smoke test of the local cluster (make kube first): in a namespace of its
# own, a PostgreSQL pod from the locally imported image (imagePullPolicy
# Never, non-root, no privilege escalation) behind a headless Service;
# waits for it to be Ready; then a second pod resolves
# <service>.<namespace>.svc.cluster.local through the cluster DNS and
# reaches the server there (pg_isready over TCP, pod to pod). Prints the
# times taken; the namespace goes at the end, also on failure.
#
#   scripts/kube/smoke.sh     exit 0 when all of it worked
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -f "$KUBECONFIG_PATH" ] || die "no cluster ($KUBECONFIG_PATH missing): make kube"
IMAGE="${SMOKE_IMAGE:-sandboxer.local/postgres:17}"
ns="kube-smoke-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
cleanup() {
  kctl delete namespace "$ns" --wait=true --timeout=60s >/dev/null 2>&1 ||
    log "namespace $ns not deleted in time"
}
trap cleanup EXIT
ms() { date +%s%3N; }

kctl create namespace "$ns" >/dev/null
kctl -n "$ns" wait --for=create serviceaccount/default --timeout=30s >/dev/null

t0=$(ms)
kctl -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: pg
spec:
  clusterIP: None
  selector: {app: pg-smoke}
  ports: [{name: postgres, port: 5432}]
---
apiVersion: v1
kind: Pod
metadata:
  name: pg
  labels: {app: pg-smoke}
spec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  securityContext: {runAsUser: 999, runAsGroup: 999, runAsNonRoot: true}
  containers:
  - name: postgres
    image: $IMAGE
    imagePullPolicy: Never
    env:
    - {name: POSTGRES_HOST_AUTH_METHOD, value: trust}
    ports: [{containerPort: 5432}]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    readinessProbe:
      exec: {command: [pg_isready, -h, 127.0.0.1, -q]}
      periodSeconds: 1
    resources:
      limits: {memory: 256Mi}
EOF
kctl -n "$ns" wait --for=condition=Ready pod/pg --timeout=90s >/dev/null ||
  { kctl -n "$ns" describe pod pg >&2; kctl -n "$ns" logs pg >&2 || true; exit 1; }
ready_ms=$(($(ms) - t0))

name="pg.$ns.svc.$CLUSTER_DOMAIN"
t1=$(ms)
kctl -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  securityContext: {runAsUser: 999, runAsGroup: 999, runAsNonRoot: true}
  containers:
  - name: client
    image: $IMAGE
    imagePullPolicy: Never
    command: [sh, -c, 'getent hosts $name && pg_isready -h $name -p 5432 -t 10']
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
EOF
phase=""
for _ in $(seq 1 300); do
  phase="$(kctl -n "$ns" get pod client -o jsonpath='{.status.phase}')"
  [ "$phase" = Succeeded ] || [ "$phase" = Failed ] && break
  sleep 0.2
done
client_ms=$(($(ms) - t1))
out="$(kctl -n "$ns" logs client 2>&1 || true)"
pod_ip="$(kctl -n "$ns" get pod pg -o jsonpath='{.status.podIP}')"
echo "$out"
[ "$phase" = Succeeded ] || die "client pod ended $phase"
echo "$out" | grep -q "^$pod_ip " || die "$name did not resolve to the pod IP $pod_ip"
echo "$out" | grep -q "accepting connections" || die "pg_isready did not reach $name"
echo "smoke: postgres pod Ready in ${ready_ms} ms; DNS name $name -> $pod_ip and pg_isready from a second pod in ${client_ms} ms"
