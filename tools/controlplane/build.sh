#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd that vcsat's integration tests (tests/k8s) run
# against, from the versions pinned in this folder's go.mod/go.sum.
#
# Why from source: the machines reach only package registries, so the Go module proxy is the
# one way to get genuine control-plane binaries; pinning them in a Go module keeps every
# dependency reproducible.
#
# Output: ${VCSAT_CACHE_DIR:-$HOME/.cache/vcsat}/controlplane/<k8s-version>-<etcd-version>/
#         holding kube-apiserver and etcd. The directory is printed as the only stdout line.
# Idempotent: when both binaries exist it does nothing but print the directory. Safe to run
# concurrently (a lock serialises builders) and after an interrupted run (binaries are
# moved into place only once complete).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# The versions come from go.mod so that there is exactly one place to bump them.
mod_version() {
    awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' go.mod
}
k8s_version="$(mod_version k8s.io/kubernetes)"
etcd_version="$(mod_version go.etcd.io/etcd/server/v3)"
if [[ -z "$k8s_version" || -z "$etcd_version" ]]; then
    echo "build.sh: cannot read the k8s.io/kubernetes or etcd version from $here/go.mod" >&2
    exit 1
fi

cache_root="${VCSAT_CACHE_DIR:-$HOME/.cache/vcsat}/controlplane"
out="$cache_root/${k8s_version}-${etcd_version}"

if [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]]; then
    echo "$out"
    exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.build.lock"
flock 9
# Another builder may have finished while this one waited for the lock.
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]]; then
    echo "$out"
    exit 0
fi

if ! command -v go >/dev/null 2>&1; then
    echo "build.sh: the go command is required to build the control plane" >&2
    exit 1
fi

staging="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$staging"' EXIT

export CGO_ENABLED=0
# readonly: go.mod and go.sum are the pins; a build must never quietly change them.
export GOFLAGS="-mod=readonly -buildvcs=false"

# Without these the apiserver reports a v0.0.0-master version, which clients and the
# discovery/version endpoints then show.
minor="${k8s_version#v1.}"
minor="${minor%%.*}"
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ldflags+=" -X ${pkg}.gitVersion=${k8s_version}"
    k8s_ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    k8s_ldflags+=" -X ${pkg}.gitTreeState=clean"
done

start=$SECONDS
echo "build.sh: building kube-apiserver ${k8s_version} and etcd ${etcd_version} into $out" >&2
go build -trimpath -ldflags="$k8s_ldflags" -o "$staging/kube-apiserver" \
    k8s.io/kubernetes/cmd/kube-apiserver
# Since etcd v3.5 the server module's root package is the etcd program itself.
go build -trimpath -ldflags="-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3

"$staging/etcd" --version >&2
"$staging/kube-apiserver" --version >&2

mkdir -p "$out"
mv -f "$staging/etcd" "$out/etcd"
mv -f "$staging/kube-apiserver" "$out/kube-apiserver"
echo "build.sh: built in $((SECONDS - start))s" >&2
echo "$out"
