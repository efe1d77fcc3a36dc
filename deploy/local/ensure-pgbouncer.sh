#!/usr/bin/env bash
# Makes sure Debian's PgBouncer (/usr/sbin/pgbouncer, 1.18 on Debian 12) is there: the tests run
# their own instances in front of PostgreSQL (libs/testing/src/pgbouncer.ts), and `npm run up`
# starts one when DATABASE_URL names a local pooler (ensure-infra.sh, decision 0116). Silent when
# it is already installed; otherwise installs the `pgbouncer` package with apt-get (as root), and
# says clearly what to do when it cannot.
set -euo pipefail

say() { echo "ensure-pgbouncer: $*" >&2; }

command -v pgbouncer >/dev/null 2>&1 && exit 0

if ! command -v apt-get >/dev/null 2>&1 || [[ "$(id -u)" != 0 ]]; then
  say "pgbouncer is missing and this shell cannot install it (needs root and apt-get)."
  say "Install Debian's package yourself: sudo apt-get install -y pgbouncer"
  exit 1
fi

say "installing Debian's pgbouncer package (apt-get install -y pgbouncer)"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet: try the install, update the lists once if it fails.
if ! apt-get install -y -q pgbouncer >/dev/null; then
  apt-get update -q >/dev/null
  apt-get install -y -q pgbouncer >/dev/null
fi
command -v pgbouncer >/dev/null 2>&1 || { say "apt-get finished but pgbouncer is still missing"; exit 1; }
say "installed: $(pgbouncer --version 2>/dev/null | head -n 1)"
