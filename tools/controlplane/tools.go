//go:build tools

// Package controlplane exists only to record the control-plane programs (etcd, kube-apiserver,
// kube-scheduler) as dependencies, so that `go mod tidy` keeps their whole import graph pinned
// in go.sum. The tools build tag keeps the compiler from ever trying to import these main
// packages.
package controlplane

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
