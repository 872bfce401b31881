#!/usr/bin/env bash
# Builds the real control-plane programs that vcsat's integration and end-to-end tests (tests/k8s,
# tests/e2e) run against, from the versions pinned in this folder's go.mod/go.sum:
# kube-apiserver, kube-scheduler and kube-controller-manager from k8s.io/kubernetes, and etcd.
# kwok (the kubelet of fake nodes) is pinned apart, in kwok/go.mod/go.sum: it needs newer k8s.io
# libraries than kubernetes pins, and one module would move the versions of everything else.
# kube-scheduler is the oracle of the differential test (tests/k8s/test_differential.py).
# helm (which lints and renders the chart deploy/helm/vcsat in tests/k8s/test_helm.py) is pinned
# apart too, in helm/go.mod/go.sum, for the same reason, and is built in the background while the
# others build, so that a cold cache costs little more than before.
#
# Why from source: the machines reach only package registries, so the Go module proxy is the
# one way to get genuine control-plane binaries; pinning them in a Go module keeps every
# dependency reproducible.
#
# Output: ${VCSAT_CACHE_DIR:-$HOME/.cache/vcsat}/controlplane/<k8s-version>-<etcd-version>/
#         holding kube-apiserver, kube-scheduler, kube-controller-manager, etcd and kwok, plus
#         kwok's Stage CRD and default node and pod stages copied from its module (kwok-stages/).
#         plus helm. The directory is printed as the only stdout line.
# Idempotent: when all binaries exist it does nothing but print the directory; otherwise it
# builds only the missing ones (an older cache gains just the new binaries). kwok's version is
# part of its file name's stamp (kwok.version), so bumping it in kwok/go.mod rebuilds kwok; the
# same holds for helm (helm.version, helm/go.mod).
# Safe to run concurrently (a lock serialises builders) and after an interrupted run (binaries
# are moved into place only once complete).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# The versions come from go.mod so that there is exactly one place to bump them.
mod_version() {
    awk -v m="$1" '($1 == m && $2 ~ /^v/) { print $2; exit } ($1 == "require" && $2 == m && $3 ~ /^v/) { print $3; exit }' "$2"
}
k8s_version="$(mod_version k8s.io/kubernetes go.mod)"
etcd_version="$(mod_version go.etcd.io/etcd/server/v3 go.mod)"
kwok_version="$(mod_version sigs.k8s.io/kwok kwok/go.mod)"
helm_version="$(mod_version helm.sh/helm/v3 helm/go.mod)"
helm_client_go="$(mod_version k8s.io/client-go helm/go.mod)"
if [[ -z "$k8s_version" || -z "$etcd_version" || -z "$kwok_version" || -z "$helm_version" || -z "$helm_client_go" ]]; then
    echo "build.sh: cannot read the k8s.io/kubernetes, etcd, kwok or helm version from $here/go.mod, kwok/go.mod, helm/go.mod" >&2
    exit 1
fi

cache_root="${VCSAT_CACHE_DIR:-$HOME/.cache/vcsat}/controlplane"
out="$cache_root/${k8s_version}-${etcd_version}"

binaries=(kube-apiserver kube-scheduler kube-controller-manager etcd kwok helm)
# The binaries of the list not yet in $out, one per line (kwok also when built from another
# version than kwok/go.mod pins, or without its stages beside it).
missing() {
    local b
    for b in "${binaries[@]}"; do
        if [[ "$b" == kwok ]]; then
            [[ -x "$out/kwok" && -f "$out/kwok-stages/node-not-ready.yaml" \
                && "$(cat "$out/kwok.version" 2>/dev/null)" == "$kwok_version" ]] || echo kwok
        elif [[ "$b" == helm ]]; then
            [[ -x "$out/helm" && "$(cat "$out/helm.version" 2>/dev/null)" == "$helm_version" ]] || echo helm
        else
            [[ -x "$out/$b" ]] || echo "$b"
        fi
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
helm_pid=""
# A failed build stops the background one too before its staging directory goes.
trap '[[ -z "$helm_pid" ]] || kill "$helm_pid" 2>/dev/null; wait; rm -rf "$staging"' EXIT

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

# helm's version and the Kubernetes version its lint and template assume (that of its client-go),
# set as helm's own Makefile sets them for a release.
helm_minor="${helm_client_go#v0.}"
helm_minor="${helm_minor%%.*}"
helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${helm_version}"
helm_ldflags+=" -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    helm_ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${helm_minor}"
done

# Builds one program into $staging, checks that it runs, and moves it (and what goes with it) into $out.
build_one() {
    local b="$1"
    case "$b" in
        kube-apiserver | kube-scheduler | kube-controller-manager)
            go build -trimpath -ldflags="$k8s_ldflags" -o "$staging/$b" "k8s.io/kubernetes/cmd/$b"
            ;;
        kwok)
            # Its own module (kwok/go.mod); -C builds there with that module's pins.
            go build -C kwok -trimpath -ldflags="-s -w" -o "$staging/kwok" sigs.k8s.io/kwok/cmd/kwok
            # The Stage CRD and kwok's default stages, from the very module version built.
            kwok_dir="$(cd kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
            rm -rf "$staging/kwok-stages"
            mkdir -p "$staging/kwok-stages"
            cp "$kwok_dir/kustomize/crd/bases/kwok.x-k8s.io_stages.yaml" "$staging/kwok-stages/stage-crd.yaml"
            cp "$kwok_dir/kustomize/stage/node/fast/node-initialize.yaml" "$staging/kwok-stages/node-initialize.yaml"
            # kwok renews each node's Lease, so its status heartbeat is the with-lease one (rare).
            cp "$kwok_dir/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
                "$staging/kwok-stages/node-heartbeat-with-lease.yaml"
            cp "$kwok_dir/kustomize/stage/node/chaos/node-not-ready.yaml" "$staging/kwok-stages/node-not-ready.yaml"
            for f in pod-ready pod-complete pod-delete; do
                cp "$kwok_dir/kustomize/stage/pod/fast/$f.yaml" "$staging/kwok-stages/$f.yaml"
            done
            chmod -R u+w "$staging/kwok-stages"
            ;;
        etcd)
            # Since etcd v3.5 the server module's root package is the etcd program itself.
            go build -trimpath -ldflags="-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3
            ;;
        helm)
            # Its own module (helm/go.mod), like kwok.
            go build -C helm -trimpath -ldflags="$helm_ldflags" -o "$staging/helm" helm.sh/helm/v3/cmd/helm
            ;;
    esac
    if [[ "$b" == helm ]]; then
        "$staging/helm" version >&2
    else
        "$staging/$b" --version >&2
    fi
    if [[ "$b" == kwok ]]; then
        rm -rf "$out/kwok-stages"
        mv -f "$staging/kwok-stages" "$out/kwok-stages"
        mv -f "$staging/kwok" "$out/kwok"
        echo "$kwok_version" >"$out/kwok.version"
    elif [[ "$b" == helm ]]; then
        mv -f "$staging/helm" "$out/helm"
        echo "$helm_version" >"$out/helm.version"
    else
        mv -f "$staging/$b" "$out/$b"
    fi
}

start=$SECONDS
echo "build.sh: building ${todo[*]} (kubernetes ${k8s_version}, etcd ${etcd_version}, kwok ${kwok_version}, helm ${helm_version}) into $out" >&2
mkdir -p "$out"
for b in "${todo[@]}"; do
    if [[ "$b" == helm ]]; then
        # In the background: it shares no packages with the others, so go builds both at once.
        (
            helm_start=$SECONDS
            build_one helm
            echo "build.sh: built helm in $((SECONDS - helm_start))s" >&2
        ) &
        helm_pid=$!
    fi
done
for b in "${todo[@]}"; do
    [[ "$b" == helm ]] || build_one "$b"
done
if [[ -n "$helm_pid" ]]; then
    wait "$helm_pid"
    helm_pid=""
fi
echo "build.sh: built in $((SECONDS - start))s" >&2
echo "$out"
