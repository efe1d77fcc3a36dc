#!/usr/bin/env bash
# `npm run up`: from a fresh clone to the whole product running locally, in one command.
# Checks Node, installs dependencies when needed, makes sure PostgreSQL and Redis answer, migrates,
# builds, then hands over to stack.mjs (Ctrl-C stops everything). Arguments go to stack.mjs
# (`npm run up -- --no-demo`). See docs/decisions/0004-local-stack.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
[[ -t 1 && -z "${NO_COLOR:-}" ]] || step() { printf '\n==> %s\n' "$*"; }

export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/pipeline_orchestration}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"

required=20.19
if ! command -v node >/dev/null 2>&1; then
  echo "up: Node.js ${required} or newer is required, and 'node' is not on PATH." >&2
  exit 1
fi
node_version="$(node -p 'process.versions.node')"
IFS=. read -r major minor _ <<<"$node_version"
if ((major < 20 || (major == 20 && minor < 19))); then
  echo "up: Node.js ${required} or newer is required; this is ${node_version} ($(command -v node))." >&2
  echo "up: install Node 20.19+ (e.g. 'nvm install 20' or 'fnm use 20'), then run 'npm run up' again." >&2
  exit 1
fi

if [[ ! -d node_modules || ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  step "npm install"
  npm install --no-audit --no-fund
  # npm may write package-lock.json after node_modules/.package-lock.json: do not reinstall each time
  if [[ -f node_modules/.package-lock.json ]]; then touch node_modules/.package-lock.json; fi
fi

step "PostgreSQL and Redis"
bash deploy/local/ensure-infra.sh

step "npm run migrate"
npm run migrate

step "npm run build"
npm run build

step "starting the services"
exec node deploy/local/stack.mjs "$@"
