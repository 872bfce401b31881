//go:build tools

// Package helm exists only to record helm's command-line program as a dependency, so that
// `go mod tidy` keeps its whole import graph pinned in go.sum. The tools build tag keeps the
// compiler from ever trying to import this main package.
package helm

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
