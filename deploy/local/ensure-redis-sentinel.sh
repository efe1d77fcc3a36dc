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
# The package may start a sentinel of its own (26379, watching 127.0.0.1:6379): stop it and keep it
# from starting at boot through the package's own service, never by process name.
if [[ -d /run/systemd/system ]]; then
  systemctl disable --now redis-sentinel >/dev/null 2>&1 || true
elif [[ -x /etc/init.d/redis-sentinel ]]; then
  /etc/init.d/redis-sentinel stop >/dev/null 2>&1 || true
  if command -v update-rc.d >/dev/null 2>&1; then update-rc.d redis-sentinel disable >/dev/null 2>&1 || true; fi
fi
say "installed: $(redis-sentinel --version 2>/dev/null | head -n 1)"
