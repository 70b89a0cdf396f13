#!/usr/bin/env bash
# Proves that the cluster leaves the host as it found it, on success and on
# failure: with no cluster up, records hostcheck.sh, then
#   1. a start that fails late on purpose (KUBE_TEST_FAIL=after-node, with
#      every daemon but kwok running) must exit non-zero and restore it;
#   2. make kube, the smoke test, a pod left running, make kube-down must
#      restore it;
# each compared with diff (printed); exit 1 on any difference.
#
#   scripts/kube/cycletest.sh      (make kube-cycle)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ ! -e "$KUBE_RUN" ] || die "a cluster is up here: make kube-down first"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bash "$KUBE_SCRIPTS/build.sh" >&2
"$KUBE_SCRIPTS/hostcheck.sh" >"$work/before"
status=0

if KUBE_TEST_FAIL=after-node "$KUBE_SCRIPTS/up.sh" >"$work/failed-up.log" 2>&1; then
  echo "cycletest: the start meant to fail succeeded" >&2
  "$KUBE_SCRIPTS/down.sh"
  status=1
fi
"$KUBE_SCRIPTS/hostcheck.sh" >"$work/after-failed-up"
if diff "$work/before" "$work/after-failed-up"; then
  echo "cycletest: failed start: host identical"
else
  echo "cycletest: failed start: host differs (above)"; status=1
fi

"$KUBE_SCRIPTS/up.sh" >/dev/null
"$KUBE_SCRIPTS/smoke.sh" || status=1
# down.sh must also clear pods that still run (their sandboxes, veths,
# mounts, cgroups).
kctl run cycletest-left-running --image sandboxer.local/redis:7 --image-pull-policy Never \
  --restart Never >/dev/null
kctl wait --for=condition=Ready pod/cycletest-left-running --timeout=60s >/dev/null || status=1
"$KUBE_SCRIPTS/down.sh"
"$KUBE_SCRIPTS/hostcheck.sh" >"$work/after-down"
if diff "$work/before" "$work/after-down"; then
  echo "cycletest: up, smoke, down: host identical"
else
  echo "cycletest: up, smoke, down: host differs (above)"; status=1
fi
exit "$status"
