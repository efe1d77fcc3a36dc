#!/usr/bin/env bash
# `npm run test:k8s`: the chart on a real Kubernetes API server (docs/k8s-testing.md).
#   1. build.sh: the control plane's binaries, built once per machine and cached outside the repo
#      (waits for a build already running, e.g. the one deploy/local/test.sh starts in the
#      background); a machine that cannot build them skips this test, loudly;
#   2. up.sh: etcd, kube-apiserver, controller-manager, scheduler and a fake node on 127.0.0.1;
#   3. test.mjs: the checks; 4. down.sh, always (trap), also on failure or interruption.
# PO_K8S_KEEP=1 keeps the work folder (certificates, logs, etcd data) after a passing run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
HERE=deploy/k8s-local

skip() {
  printf '\n%s\n' "################################################################################"
  printf '%s\n' "##  test:k8s SKIPPED: $*" "##  The chart was NOT tested against a real API server on this machine." \
    "##  See docs/k8s-testing.md (requirements)."
  printf '%s\n\n' "################################################################################"
  skipped=1
  exit 0
}

echo "==> k8s: control plane binaries (deploy/k8s-local/build.sh)"
t0=$(date +%s)
set +e
bash "$HERE/build.sh"
rc=$?
set -e
[ "$rc" -eq 3 ] && skip "$(cat "${PO_K8S_CACHE:-$HOME/.cache/po-k8s}/unavailable" 2>/dev/null || echo 'cannot build the binaries')"
[ "$rc" -eq 0 ] || exit "$rc"
echo "    binaries ready ($(($(date +%s) - t0)) s)"

K8S_WORK=$(mktemp -d "${TMPDIR:-/tmp}/po-k8s.XXXXXX")
export K8S_WORK
passed=0
skipped=0
test_pid=
cleanup() {
  set +e # stop everything, whatever fails on the way
  [ -z "$test_pid" ] || kill "$test_pid" 2>/dev/null
  bash "$HERE/down.sh"
  if { [ "$passed" = 1 ] || [ "$skipped" = 1 ]; } && [ -z "${PO_K8S_KEEP:-}" ]; then
    rm -rf "$K8S_WORK"
  else
    echo "k8s: logs of the control plane in $K8S_WORK/logs" >&2
    [ "$passed" = 1 ] || tail -n 8 "$K8S_WORK"/logs/*.log >&2 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "==> k8s: start the control plane (deploy/k8s-local/up.sh, work folder $K8S_WORK)"
set +e
bash "$HERE/up.sh"
rc=$?
set -e
[ "$rc" -eq 3 ] && skip "$(cat "$K8S_WORK/unavailable" 2>/dev/null)"
[ "$rc" -eq 0 ] || exit "$rc"

# In the background and waited for, so a signal reaches the trap at once, not after the test.
node "$HERE/test.mjs" &
test_pid=$!
wait "$test_pid"
passed=1
