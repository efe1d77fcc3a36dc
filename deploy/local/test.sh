#!/usr/bin/env bash
# `npm test` (and the last step of .ci/run): build, lint, then every vitest project
# (unit, integration, e2e). The integration and e2e projects need PostgreSQL and Redis:
# `bash deploy/local/ensure-infra.sh` provides them.
set -euo pipefail
export TURBO_TELEMETRY_DISABLED=1
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

step() { printf '\n==> %s\n' "$*"; }

step "build (npx turbo run build)"
npx turbo run build

step "typecheck tests and scripts (tsc -p tsconfig.lint.json)"
npx tsc -p tsconfig.lint.json

step "lint (npx eslint .)"
npx eslint .
step "chart, image and release checks (bash deploy/k8s-checks/run.sh)"; bash deploy/k8s-checks/run.sh

# e2e runs after the rest, not beside it: its clusters and the integration files would otherwise
# compete for PostgreSQL connections and for the two cores.
mkdir -p .local
report() { echo "--reporter=default --reporter=json --outputFile.json=.local/vitest-$1.json"; }

step "tests: unit and integration (npx vitest run --project unit --project integration)"
# shellcheck disable=SC2046
npx vitest run --project unit --project integration $(report main)

step "tests: end to end (npx vitest run --project e2e)"
# shellcheck disable=SC2046
npx vitest run --project e2e $(report e2e)

# One closing line for CI: the totals of both runs.
node -e '
const fs = require("fs");
let passed = 0, failed = 0;
for (const f of [".local/vitest-main.json", ".local/vitest-e2e.json"]) {
  const r = JSON.parse(fs.readFileSync(f, "utf8"));
  passed += r.numPassedTests; failed += r.numFailedTests;
}
console.log(`tests: ${passed} passed, ${failed} failed`);
'

