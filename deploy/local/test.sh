#!/usr/bin/env bash
# `npm test` (and the last step of .ci/run): build, lint, then every vitest project
# (unit, integration, e2e). The integration and e2e projects need PostgreSQL and Redis:
# `bash deploy/local/ensure-infra.sh` provides them.
set -euo pipefail
export TURBO_TELEMETRY_DISABLED=1
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

step() { printf '\n==> %s\n' "$*"; }
# The real-cluster test's binaries are built once per machine (~10 min of both cores): on a cold
# cache the build starts now at the lowest priority, and the k8s step near the end waits for it.
bash deploy/k8s-local/build.sh --background

step "build (npx turbo run build)"
npx turbo run build

# e2e runs after the rest, not beside it: its clusters and the integration files would otherwise
# compete for PostgreSQL connections and for the two cores.
mkdir -p .local
report() { echo "--reporter=default --reporter=json --outputFile.json=.local/vitest-$1.json"; }

# The Redis-outage files mostly wait (issue 28; one cluster at a time, on Redis servers of their
# own): they run in the background from here, beside the checks, the SDK, unit and integration
# tests, and their output is printed after the e2e files' (decision 0126). Beside the e2e files
# instead, they made a third cluster on the two cores while the e2e step was the critical path.
bash deploy/local/ensure-redis-sentinel.sh # the Sentinel failover test runs its own sentinels
step "tests: end to end, Redis outages (npx vitest run --project e2e-outage), in the background"
# shellcheck disable=SC2046
npx vitest run --project e2e-outage $(report e2e-outage) > .local/e2e-outage.log 2>&1 &
outage=$!
# A step below that fails ends the script: not before the outage files have stopped what they started.
trap 'wait "$outage" 2>/dev/null || true' EXIT

# Four single-threaded checks, side by side on the two cores (about a minute instead of two).
bash deploy/local/ensure-sdk-toolchains.sh
step "typecheck (tsc -p tsconfig.lint.json), lint (eslint .), chart checks (deploy/k8s-checks/run.sh), the Go and Python SDKs (go vet, go test; python3 -m unittest), side by side"
checks=(typecheck lint chart sdks)
check() {
  case $1 in
    typecheck) npx tsc -p tsconfig.lint.json ;;
    lint) npx eslint . ;;
    chart) bash deploy/k8s-checks/run.sh ;;
    # No module proxy is reachable and the SDKs need none: a download attempt fails instead of hanging.
    sdks) (cd libs/worker-sdk-go && GOPROXY=off GOFLAGS= go vet ./... && GOPROXY=off GOFLAGS= go test ./...) &&
      python3 -m unittest discover -s libs/worker-sdk-python/tests -t libs/worker-sdk-python ;;
  esac
}
declare -A check_pid
for c in "${checks[@]}"; do
  check "$c" > ".local/check-$c.log" 2>&1 &
  check_pid[$c]=$!
done
checks_failed=0
for c in "${checks[@]}"; do
  status=0
  wait "${check_pid[$c]}" || status=$?
  printf -- '--- %s: %s\n' "$c" "$([[ $status -eq 0 ]] && echo ok || echo "FAILED (exit $status)")"
  cat ".local/check-$c.log"
  [[ $status -eq 0 ]] || checks_failed=1
done
[[ $checks_failed -eq 0 ]] || exit 1

# The chart on a real API server uses about a third of the two cores for ~85 s, and the unit and
# integration tests less than one core (they wait on PostgreSQL): it runs beside them, in the
# background, instead of last on its own (decision 0126). Its output is printed at the end.
step "tests: the chart on a real Kubernetes API server (npm run test:k8s), in the background"
bash deploy/k8s-local/run.sh > .local/k8s.log 2>&1 &
k8s=$!
trap 'wait "$outage" 2>/dev/null || true; wait "$k8s" 2>/dev/null || true' EXIT

# Unit and integration once, on Node 24, the image's runtime (decisions 0096, 0126): first on PATH,
# so vitest, its workers and any `node` a test starts run on it. The binary comes from the npm
# registry, cached per machine. The machine's Node (20 on these machines) runs every service of the
# e2e tests below, and tsc checks the code against @types/node 20; the unit suite used to run on it
# a second time as well, 45-60 s that repeated the same in-process code (decision 0126, amended).
bash deploy/local/ensure-pgbouncer.sh # the pooler tests run their own PgBouncer (decision 0116)
node24="$(bash deploy/local/ensure-node24.sh)"
step "tests: unit and integration on Node $("$node24/node" --version) (the image's runtime)"
# shellcheck disable=SC2046
PATH="$node24:$PATH" node_modules/.bin/vitest run --project unit --project integration $(report main)

step "tests: end to end (npx vitest run --project e2e)"
bash deploy/local/ensure-chromium.sh # the dashboard's browser tests run Debian's Chromium
e2e_status=0
npx vitest run --project e2e $(report e2e) || e2e_status=$?
outage_status=0
wait "$outage" || outage_status=$?
cat .local/e2e-outage.log
# Files that time a service against its own deadlines run alone, after the others (vitest.config.ts).
step "tests: end to end, one at a time (npx vitest run --project e2e-solo)"
solo_status=0
# shellcheck disable=SC2046
npx vitest run --project e2e-solo $(report e2e-solo) || solo_status=$?
step "tests: the chart on a real Kubernetes API server (npm run test:k8s), its output"
k8s_status=0
wait "$k8s" || k8s_status=$?
cat .local/k8s.log
if [[ $e2e_status -ne 0 || $outage_status -ne 0 || $solo_status -ne 0 || $k8s_status -ne 0 ]]; then exit 1; fi

# One closing line for CI: the totals of the three runs.
node -e '
const fs = require("fs");
let passed = 0, failed = 0;
for (const f of [".local/vitest-main.json", ".local/vitest-e2e.json", ".local/vitest-e2e-outage.json", ".local/vitest-e2e-solo.json"]) {
  const r = JSON.parse(fs.readFileSync(f, "utf8"));
  passed += r.numPassedTests; failed += r.numFailedTests;
}
console.log(`tests: ${passed} passed, ${failed} failed`);
'

