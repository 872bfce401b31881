#!/usr/bin/env python3
"""Start a local cluster with fake GPU nodes for trying vcsat: no GPUs, no containers needed.

Runs the real etcd, kube-apiserver and kube-controller-manager plus kwok (the binaries that
tools/controlplane/build.sh builds and caches; the first run compiles them), all on loopback,
installs vcsat's CRDs and the queue `default`, creates fake nodes, writes a kubeconfig and waits
for Ctrl-C, which stops everything and removes the cluster's files.

    python3 tools/kwok-cluster.py --nodes 4 --gpus 8 --kubeconfig /tmp/kwok.kubeconfig

A pod annotated `vcsat.io/run-seconds: "30"` (e.g. in a Volcano Job's task template) runs for
30 seconds after it starts, then succeeds (see tools/controlplane/kwok/stages.yaml).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "k8s"))

from kwokcluster import kwok_node, start_kwok_cluster  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="fake nodes to create (default 4)")
    parser.add_argument("--gpus", type=int, default=8, help="nvidia.com/gpu per node (default 8)")
    parser.add_argument("--cpu", default="64", help="cpu per node (default 64)")
    parser.add_argument("--memory", default="512Gi", help="memory per node (default 512Gi)")
    parser.add_argument(
        "--kubeconfig", type=Path, default=Path("kwok.kubeconfig"), help="where to write the kubeconfig"
    )
    args = parser.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("starting etcd, kube-apiserver, kube-controller-manager and kwok ...", file=sys.stderr)
    with start_kwok_cluster() as cluster:
        nodes = [
            kwok_node(f"kwok-node-{i}", cpu=args.cpu, memory=args.memory, gpus=args.gpus) for i in range(args.nodes)
        ]
        cluster.plane.create_objects(nodes)
        shutil.copyfile(cluster.plane.kubeconfig, args.kubeconfig)
        args.kubeconfig.chmod(0o600)
        print(
            f"ready: {args.nodes} nodes with {args.gpus} GPUs each; kubeconfig {args.kubeconfig}\n"
            f"  vcsat scheduler --kubeconfig {args.kubeconfig} --no-leader-elect --metrics-port 0 &\n"
            f"  vcsat controller --kubeconfig {args.kubeconfig} --no-leader-elect --metrics-port 0 &\n"
            f"  vcsat job run --kubeconfig {args.kubeconfig} --name demo --replicas 4 "
            "--requests cpu=1,memory=1Gi,nvidia.com/gpu=2 --limits nvidia.com/gpu=2\n"
            "Ctrl-C stops the cluster.",
            file=sys.stderr,
        )
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    args.kubeconfig.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
