#!/usr/bin/env bash
# CI checks of the delivery files, without a Docker engine or a cluster (deploy/README.md):
#   the image's Dockerfile lint, the release checks (chart README drift, licence, one version,
#   Artifact Hub annotations, changesets), then the Helm chart checks with a pinned helm binary,
#   and the Grafana dashboard (its PromQL, its data source variable, its ConfigMap).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

node deploy/docker/lint.mjs
node deploy/k8s-checks/release.mjs
HELM="$PWD/$(bash deploy/k8s-checks/fetch-helm.sh)" node deploy/k8s-checks/check-chart.mjs
HELM="$PWD/$(bash deploy/k8s-checks/fetch-helm.sh)" node deploy/k8s-checks/grafana-dashboard.mjs
