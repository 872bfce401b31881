#!/usr/bin/env bash
# Copies deploy/crds/*.yaml into the Helm chart (deploy/helm/vcsat/files/crds/), which installs them
# when crds.install is true. Helm reads only files inside the chart, so the chart holds copies;
# tests/test_helm_chart.py fails while they differ from deploy/crds. Run after changing deploy/crds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$root/deploy/helm/vcsat/files/crds"
mkdir -p "$dest"
rm -f "$dest"/*.yaml
cp "$root"/deploy/crds/*.yaml "$dest"/
