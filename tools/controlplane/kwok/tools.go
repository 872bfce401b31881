//go:build tools

// Package kwok exists only to record kwok's controller program as a dependency, so that
// `go mod tidy` keeps its whole import graph pinned in go.sum. The tools build tag keeps the
// compiler from ever trying to import this main package.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
