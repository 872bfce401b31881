"""A tiny stand-in for kubelets, like KWOK: pods bound to our fake nodes start, run and end.

Test clusters (and demos) have Nodes as API objects only; nothing would ever run a bound pod,
so a PodGroup would never count running members, a Job would never finish, and an evicted pod
would stay Terminating forever, holding its room. :class:`PodLifecycleDriver` watches pods and
does what a kubelet would, as far as the API shows it:

- a bound, Pending pod becomes Running: phase, the conditions PodScheduled, Initialized,
  ContainersReady and Ready, podIP, hostIP, startTime, and a running status for each container;
- a pod being deleted (``deletionTimestamp`` set) is finalized with ``gracePeriodSeconds=0``, as a
  kubelet does once its containers have stopped;
- on request, :meth:`succeed` and :meth:`fail` end a pod's containers with an exit code.

``node_names`` limits it to pods on those nodes, so tests sharing one API server each drive their own.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import click

from vcsat.adapters.informer import Informer
from vcsat.adapters.kube import NODES, PODS, ApiError, Kube, now_rfc3339

log = logging.getLogger("vcsat.podlife")

CONTAINER_RUNTIME = "vcsat-podlife"


class PodLifecycleDriver:
    """Moves pods through their lifecycle on behalf of kubelets that do not exist."""

    def __init__(self, api_client: Any, *, node_names: Iterable[str] | None = None, workers: int = 4) -> None:
        self.kube = Kube.from_api_client(api_client, pool_size=workers + 2)
        self.node_names = frozenset(node_names) if node_names is not None else None
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="podlife")
        self._informer = Informer(self.kube, PODS, on_list=self._on_list, on_event=self._on_event)
        self._lock = threading.Lock()
        self._busy: set[tuple[str, str]] = set()
        self._host_ips: dict[str, str] = {}
        self._ips = itertools.count(1)

    def start(self) -> None:
        self._informer.start()

    def stop(self) -> None:
        self._informer.stop()
        self._informer.join(5.0)
        self._pool.shutdown(wait=True)
        self.kube.close()

    def __enter__(self) -> PodLifecycleDriver:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --- ending pods on request ---------------------------------------------------------------

    def succeed(self, namespace: str, name: str, exit_code: int = 0) -> None:
        """The pod's containers exit with ``exit_code`` (0 by default): phase Succeeded."""
        self._terminate(namespace, name, exit_code, "Completed", "Succeeded")

    def fail(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> None:
        """The pod's containers exit with ``exit_code``: phase Failed."""
        self._terminate(namespace, name, exit_code, reason, "Failed")

    def _terminate(self, namespace: str, name: str, exit_code: int, reason: str, phase: str) -> None:
        pod = self.kube.get(PODS.path(namespace, name))
        now = now_rfc3339()
        status = pod.get("status") or {}
        started = status.get("startTime") or now
        terminated = {"exitCode": exit_code, "reason": reason, "startedAt": started, "finishedAt": now}
        containers = [
            {
                **_container_base(pod, container),
                "ready": False,
                "started": False,
                "state": {"terminated": {**terminated, "containerID": _container_id(pod, container["name"])}},
            }
            for container in (pod.get("spec") or {}).get("containers") or ()
        ]
        done = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        conditions = [
            _keep(status, "PodScheduled", now),
            {"type": "Initialized", "status": "True", "lastTransitionTime": started},
            {"type": "ContainersReady", "status": "False", "reason": done, "lastTransitionTime": now},
            {"type": "Ready", "status": "False", "reason": done, "lastTransitionTime": now},
        ]
        body = {"status": {"phase": phase, "conditions": conditions, "containerStatuses": containers}}
        self.kube.patch(PODS.path(namespace, name, "status"), body)

    # --- watching -----------------------------------------------------------------------------

    def _on_list(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self._consider(pod)

    def _on_event(self, event_type: str, pod: dict[str, Any]) -> None:
        if event_type != "DELETED":
            self._consider(pod)

    def _consider(self, pod: Mapping[str, Any]) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (self.node_names is not None and node not in self.node_names):
            return
        metadata = pod.get("metadata") or {}
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if metadata.get("deletionTimestamp"):
            self._once(pod, "finalize", self._finalize)
        elif phase == "Pending":
            self._once(pod, "start", self._start)

    def _once(self, pod: Mapping[str, Any], action: str, work: Any) -> None:
        key = (str((pod.get("metadata") or {}).get("uid")), action)
        with self._lock:
            if key in self._busy:
                return
            self._busy.add(key)

        def run() -> None:
            try:
                work(pod)
            except ApiError as error:
                if error.status not in (404, 409):
                    log.warning("pod lifecycle step failed", extra={"action": action, "error": str(error)})
            finally:
                with self._lock:
                    self._busy.discard(key)

        self._pool.submit(run)

    def _finalize(self, pod: Mapping[str, Any]) -> None:
        metadata = pod.get("metadata") or {}
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": metadata.get("uid")},
        }
        self.kube.delete(PODS.path(metadata.get("namespace"), metadata.get("name")), body)

    def _start(self, pod: Mapping[str, Any]) -> None:
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        now = now_rfc3339()
        host_ip = self._host_ip(spec["nodeName"])
        pod_ip = self._pod_ip()
        containers = [
            {
                **_container_base(pod, container),
                "ready": True,
                "started": True,
                "state": {"running": {"startedAt": now}},
            }
            for container in spec.get("containers") or ()
        ]
        init_containers = []
        for container in spec.get("initContainers") or ():
            sidecar = container.get("restartPolicy") == "Always"
            state = (
                {"running": {"startedAt": now}}
                if sidecar
                else {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}
            )
            init_containers.append(
                {**_container_base(pod, container), "ready": sidecar, "started": sidecar, "state": state}
            )
        body: dict[str, Any] = {
            "status": {
                "phase": "Running",
                "conditions": [
                    _keep(status, "PodScheduled", now),
                    {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                    {"type": "Ready", "status": "True", "lastTransitionTime": now},
                ],
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": now,
                "containerStatuses": containers,
            }
        }
        if init_containers:
            body["status"]["initContainerStatuses"] = init_containers
        self.kube.patch(PODS.path(metadata.get("namespace"), metadata.get("name"), "status"), body)

    def _host_ip(self, node: str) -> str:
        with self._lock:
            known = self._host_ips.get(node)
        if known is not None:
            return known
        address = ""
        try:
            status = (self.kube.get(NODES.path(name=node)) or {}).get("status") or {}
            for entry in status.get("addresses") or ():
                if entry.get("type") == "InternalIP":
                    address = entry.get("address") or ""
                    break
        except ApiError:
            pass
        if not address:
            digest = hashlib.sha256(node.encode()).digest()
            address = f"10.{digest[0]}.{digest[1]}.{1 + digest[2] % 254}"
        with self._lock:
            self._host_ips[node] = address
        return address

    def _pod_ip(self) -> str:
        n = next(self._ips)
        return f"172.{16 + (n >> 16) % 16}.{(n >> 8) % 256}.{n % 256}"


def _container_base(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    name = container.get("name", "")
    return {
        "name": name,
        "image": container.get("image") or "unknown",
        "imageID": "",
        "restartCount": 0,
        "containerID": _container_id(pod, name),
    }


def _container_id(pod: Mapping[str, Any], name: str) -> str:
    return f"{CONTAINER_RUNTIME}://{(pod.get('metadata') or {}).get('uid', '')}-{name}"


def _keep(status: Mapping[str, Any], kind: str, now: str) -> dict[str, Any]:
    """The pod's existing condition of ``kind`` (PodScheduled, set by the binding), else a True one."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == kind:
            return dict(condition)
    return {"type": kind, "status": "True", "lastTransitionTime": now}


@click.command("podlife")
@click.option("--kubeconfig", metavar="FILE", help="Default: in-cluster credentials, else ~/.kube/config.")
@click.option(
    "--node", "nodes", multiple=True, metavar="NAME", help="Only pods on this node (repeatable); default all."
)
def podlife_cmd(kubeconfig: str | None, nodes: tuple[str, ...]) -> None:
    """Act as the kubelets of fake nodes: bound pods start Running, deleted pods are finalized."""
    from kubernetes.client import ApiClient

    from vcsat.adapters.kube import load_configuration
    from vcsat.adapters.logs import setup_logging

    setup_logging("text", "INFO")
    stop = threading.Event()
    with ApiClient(load_configuration(kubeconfig)) as api_client:
        driver = PodLifecycleDriver(api_client, node_names=nodes or None)
        driver.start()
        click.echo(
            "podlife: driving pods" + (f" on {', '.join(nodes)}" if nodes else "") + "; Ctrl-C stops",
            err=True,
        )
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
        finally:
            driver.stop()
