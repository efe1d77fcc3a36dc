#!/usr/bin/env bash
# Makes sure the toolchains of the Python and Go worker SDKs are there: Go (Debian's golang-go,
# 1.19) for libs/worker-sdk-go, and Python 3 with venv and pip for libs/worker-sdk-python, which
# the conformance kit, the SDKs' own tests and the packaging test use. Silent when both are
# there; otherwise installs the missing Debian packages with apt-get (as root), or says what to
# install and goes on: `npm run up` needs neither.
set -euo pipefail

say() { echo "ensure-sdk-toolchains: $*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

missing=()
have go || missing+=(golang-go)
have python3 || missing+=(python3)
# Debian's python3 has no ensurepip without python3-venv: `python3 -m venv` would fail.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
((${#missing[@]})) || exit 0

if ! have apt-get || [[ "$(id -u)" != 0 ]]; then
  say "missing ${missing[*]}: the Python and Go SDK tests need them."
  say "  sudo apt-get install -y ${missing[*]}"
  exit 0
fi
say "installing ${missing[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q "${missing[@]}" >/dev/null; then
  apt-get update -q >/dev/null
  apt-get install -y -q "${missing[@]}" >/dev/null
fi
have go || { say "apt-get finished but go is still missing"; exit 1; }
say "installed: $(go version), $(python3 --version)"
