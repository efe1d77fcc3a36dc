#!/usr/bin/env bash
# Makes sure Debian's Chromium (/usr/bin/chromium) is there for the dashboard's browser tests
# (e2e/dashboard.e2e.test.ts drives it with playwright-core; no browser is ever downloaded).
# Silent when it is already installed; otherwise installs the `chromium` package with apt-get
# (as root), and says clearly what to do when it cannot.
set -euo pipefail

CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
say() { echo "ensure-chromium: $*" >&2; }

[[ -x "$CHROMIUM" ]] && exit 0

if [[ "$CHROMIUM" != /usr/bin/chromium ]]; then
  say "CHROMIUM_PATH=$CHROMIUM is not an executable file; point it at a Chromium or unset it."
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || [[ "$(id -u)" != 0 ]]; then
  say "/usr/bin/chromium is missing and this shell cannot install it (needs root and apt-get)."
  say "Install Debian's package yourself: sudo apt-get install -y chromium"
  exit 1
fi

say "installing Debian's chromium package (apt-get install -y chromium)"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet: try the install, update the lists once if it fails.
if ! apt-get install -y chromium >/dev/null; then
  apt-get update -q >/dev/null
  apt-get install -y chromium >/dev/null
fi
[[ -x "$CHROMIUM" ]] || { say "apt-get finished but $CHROMIUM is still missing"; exit 1; }
say "installed: $("$CHROMIUM" --version 2>/dev/null || echo chromium)"
