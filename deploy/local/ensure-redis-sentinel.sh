#!/usr/bin/env bash
# Makes sure Debian's redis-sentinel is there: the Sentinel failover test runs its own primary,
# replica and three sentinels on free ports (e2e/support/redis-sentinel.ts, decision 0123). Silent
# when it is already installed; otherwise installs the `redis-sentinel` package with apt-get (as
# root) and stops the system sentinel the package starts (the tests need none on 26379).
set -euo pipefail

say() { echo "ensure-redis-sentinel: $*" >&2; }

command -v redis-sentinel >/dev/null 2>&1 && exit 0

if ! command -v apt-get >/dev/null 2>&1 || [[ "$(id -u)" != 0 ]]; then
  say "redis-sentinel is missing and this shell cannot install it (needs root and apt-get)."
  say "Install Debian's package yourself: sudo apt-get install -y redis-sentinel"
  exit 1
fi

say "installing Debian's redis-sentinel package (apt-get install -y redis-sentinel)"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q redis-sentinel >/dev/null; then
  apt-get update -q >/dev/null
  apt-get install -y -q redis-sentinel >/dev/null
fi
command -v redis-sentinel >/dev/null 2>&1 || { say "apt-get finished but redis-sentinel is still missing"; exit 1; }
if command -v systemctl >/dev/null 2>&1; then systemctl stop redis-sentinel >/dev/null 2>&1 || true; fi
pkill -f 'redis-sentinel .*:26379' >/dev/null 2>&1 || true
say "installed: $(redis-sentinel --version 2>/dev/null | head -n 1)"
