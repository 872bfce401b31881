"""The API server's ceiling: a "scheduler" that binds pods as fast as it can, deciding nothing.

It watches the unbound pods of one namespace with one ``spec.schedulerName`` and binds each, as
soon as it is seen, to the next node of its kind in turn (nodes labelled ``vcsat-bench/kind=gpu``
for pods that ask for GPUs, ``cpu`` for the others): no filtering, no scoring, no gangs. Whatever
rate it reaches is what the API server, etcd and the watch machinery allow on this machine, the
ceiling any scheduler's throughput is measured against (benchmarks/kwok_throughput.py).

Run as a process of its own, as a scheduler would be, until SIGTERM:

    python3 benchmarks/trivial_binder.py KUBECONFIG NAMESPACE SCHEDULER_NAME [WORKERS]
"""

from __future__ import annotations

import itertools
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vcsat.adapters.kube.client import NODES, PODS, ApiError, Kube
from vcsat.adapters.kube.informer import Informer

KIND_LABEL = "vcsat-bench/kind"
RESYNC_S = 5.0


def main(kubeconfig: str, namespace: str, scheduler_name: str, workers: int = 32) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with Kube.from_kubeconfig(kubeconfig, pool_size=workers) as kube, ThreadPoolExecutor(workers) as pool:
        nodes, _ = kube.list(NODES)
        by_kind = {
            kind: itertools.cycle(sorted(n["metadata"]["name"] for n in nodes if _kind(n) == kind))
            for kind in ("gpu", "cpu")
        }
        seen: set[str] = set()
        """Pods whose binding is queued, sent or done (a failed one is taken out and sent again)."""
        lock = threading.Lock()

        def bind(pod: dict[str, Any]) -> None:
            metadata = pod["metadata"]
            kind = "gpu" if _asks_gpu(pod) else "cpu"
            with lock:
                node = next(by_kind[kind])
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": metadata["name"], "namespace": namespace, "uid": metadata["uid"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            }
            try:
                kube.post(PODS.path(namespace, metadata["name"], "binding"), body)
            except ApiError as error:
                print(f"binding {metadata['name']} failed: {error}", file=sys.stderr, flush=True)
                if error.status != 409:
                    with lock:
                        seen.discard(metadata["name"])  # the next list sends it again

        def event(kind: str, pod: dict[str, Any]) -> None:
            if kind == "DELETED" or pod["spec"].get("nodeName"):
                return
            name = pod["metadata"]["name"]
            with lock:
                if name in seen:
                    return  # queued, sent, or bound already
                seen.add(name)
            pool.submit(bind, pod)

        informer = Informer(
            kube,
            PODS,
            on_list=lambda pods: [event("LIST", pod) for pod in pods],
            on_event=event,
            params={
                "fieldSelector": f"metadata.namespace={namespace},spec.schedulerName={scheduler_name},spec.nodeName="
            },
        )
        informer.start()
        # The watch is the fast path; a list of the unbound pods every few seconds catches any
        # pod a watch that broke and resumed did not deliver (and any whose binding failed).
        while not stop.wait(RESYNC_S):
            try:
                pods, _ = kube.list(PODS, fieldSelector=informer.params["fieldSelector"])
            except ApiError:
                continue
            for pod in pods:
                event("RESYNC", pod)
        informer.stop()


def _kind(node: dict[str, Any]) -> str:
    return str((node["metadata"].get("labels") or {}).get(KIND_LABEL, ""))


def _asks_gpu(pod: dict[str, Any]) -> bool:
    return any(
        "nvidia.com/gpu" in ((container.get("resources") or {}).get("requests") or {})
        for container in pod["spec"]["containers"]
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], *(int(arg) for arg in sys.argv[4:5]))
