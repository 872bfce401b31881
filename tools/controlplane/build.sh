#!/usr/bin/env bash
# Builds the real kube-apiserver, kube-scheduler and etcd that vcsat's integration tests
# (tests/k8s) run against, from the versions pinned in this folder's go.mod/go.sum.
# kube-scheduler is the oracle of the differential test (tests/k8s/test_differential.py).
#
# Why from source: the machines reach only package registries, so the Go module proxy is the
# one way to get genuine control-plane binaries; pinning them in a Go module keeps every
# dependency reproducible.
#
# Output: ${VCSAT_CACHE_DIR:-$HOME/.cache/vcsat}/controlplane/<k8s-version>-<etcd-version>/
#         holding kube-apiserver, kube-scheduler and etcd. The directory is printed as the only
#         stdout line.
# Idempotent: when all three binaries exist it does nothing but print the directory; otherwise
# it builds only the missing ones (a cache from before kube-scheduler was added gains just that
# binary). Safe to run concurrently (a lock serialises builders) and after an interrupted run
# (binaries are moved into place only once complete).
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

binaries=(kube-apiserver kube-scheduler etcd)
# The binaries of the list not yet in $out, one per line.
missing() {
    local b
    for b in "${binaries[@]}"; do
        [[ -x "$out/$b" ]] || echo "$b"
    done
}

if [[ -z "$(missing)" ]]; then
    echo "$out"
    exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.build.lock"
flock 9
# Another builder may have finished while this one waited for the lock.
mapfile -t todo < <(missing)
if [[ ${#todo[@]} -eq 0 ]]; then
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
echo "build.sh: building ${todo[*]} (kubernetes ${k8s_version}, etcd ${etcd_version}) into $out" >&2
mkdir -p "$out"
for b in "${todo[@]}"; do
    case "$b" in
        kube-apiserver | kube-scheduler)
            go build -trimpath -ldflags="$k8s_ldflags" -o "$staging/$b" "k8s.io/kubernetes/cmd/$b"
            ;;
        etcd)
            # Since etcd v3.5 the server module's root package is the etcd program itself.
            go build -trimpath -ldflags="-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3
            ;;
    esac
    "$staging/$b" --version >&2
    mv -f "$staging/$b" "$out/$b"
done
echo "build.sh: built in $((SECONDS - start))s" >&2
echo "$out"
