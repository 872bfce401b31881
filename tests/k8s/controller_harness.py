"""Harness for the Job controller's tests against the real API server.

Each test gets its own namespace, nodes and scheduler name (a :class:`~scheduler_support.Bubble`),
a controller restricted to that namespace, kwok as the kubelet of its nodes (the module's cluster
is scheduler_support.kwok_control_plane: bound pods start Running, deleted ones go away, and
kwokcluster.PodEnds ``succeed``/``fail`` end them), and either
the real ``vcsat scheduler`` or :class:`StandInScheduler`, which only does the two things the
controller waits for (admit a PodGroup: phase Inqueue; bind a pod) with no solving at all.
Plain module, beside controlplane.py.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from scheduler_support import Bubble, wait_until

from vcsat.adapters.controller.controller import JobController
from vcsat.adapters.kube.client import PODGROUPS, PODS, ApiError, Kube
from vcsat.adapters.kube.status_subresource import StatusWriter

JOBS_PATH = "/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs"


class StandInScheduler:
    """Admits every PodGroup of a namespace and binds its pods round-robin to given nodes."""

    def __init__(self, kube: Kube, namespace: str, nodes: list[str], scheduler_name: str) -> None:
        self.kube = kube
        self.statuses = StatusWriter(kube)
        self.namespace = namespace
        self.nodes = nodes
        self.scheduler_name = scheduler_name
        self.admitting = threading.Event()
        self.admitting.set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stand-in-scheduler", daemon=True)
        self._next = 0

    def __enter__(self) -> StandInScheduler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            with contextlib.suppress(ApiError):
                self._cycle()

    def _cycle(self) -> None:
        if self.admitting.is_set():
            for group in self.kube.get(PODGROUPS.path(self.namespace))["items"]:
                if (group.get("status") or {}).get("phase") not in ("Inqueue", "Running"):
                    name = group["metadata"]["name"]
                    with contextlib.suppress(ApiError):
                        self.statuses.patch_status(PODGROUPS, self.namespace, name, {"phase": "Inqueue"})
        for pod in self.kube.get(PODS.path(self.namespace))["items"]:
            spec = pod.get("spec") or {}
            if spec.get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            if spec.get("schedulerName") != self.scheduler_name:
                continue
            node = self.nodes[self._next % len(self.nodes)]
            self._next += 1
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod["metadata"]["name"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            }
            with contextlib.suppress(ApiError):
                self.kube.post(PODS.path(self.namespace, pod["metadata"]["name"], "binding"), binding)


@contextlib.contextmanager
def running_controller(api_client: Any, namespace: str, scheduler_name: str, **options: Any) -> Iterator[JobController]:
    """A JobController for one namespace in a thread; stopped (and its thread joined) after the block."""
    controller = JobController(
        api_client,
        namespace=namespace,
        scheduler_name=scheduler_name,
        resync_s=options.pop("resync_s", 5.0),
        **options,
    )
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), name="test-controller", daemon=True)
    thread.start()
    try:
        wait_until(controller.synced, "the controller's watches listed")
        yield controller
    finally:
        stop.set()
        thread.join(30)


class Jobs:
    """Reading a namespace's Jobs and what the controller made of them."""

    def __init__(self, kube: Kube, bubble: Bubble) -> None:
        self.kube = kube
        self.bubble = bubble
        self.namespace = bubble.namespace

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.kube.post(JOBS_PATH.format(namespace=self.namespace), body)
        return created

    def get(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.kube.get(JOBS_PATH.format(namespace=self.namespace) + f"/{name}")
        return found

    def status(self, name: str) -> dict[str, Any]:
        return self.get(name).get("status") or {}

    def phase(self, name: str) -> str:
        return str((self.status(name).get("state") or {}).get("phase") or "")

    def wait_phase(self, name: str, *phases: str) -> dict[str, Any]:
        """Wait until the Job is in one of ``phases``; its status then."""

        def reached() -> dict[str, Any] | None:
            status = self.status(name)
            return status if (status.get("state") or {}).get("phase") in phases else None

        result: dict[str, Any] = wait_until(
            reached, f"Job {name} in phase {' or '.join(phases)} (now {self.phase(name)!r})"
        )
        return result

    def pods(self, job: str, *, live: bool = False) -> dict[str, dict[str, Any]]:
        """The job's pods by name (``live``: without those being deleted)."""
        items = self.kube.get(PODS.path(self.namespace), labelSelector=f"volcano.sh/job-name={job}")["items"]
        return {p["metadata"]["name"]: p for p in items if not (live and p["metadata"].get("deletionTimestamp"))}

    def running_pods(self, job: str, count: int) -> dict[str, dict[str, Any]]:
        """Wait until ``count`` live pods of the job run; them."""

        def running() -> dict[str, dict[str, Any]] | None:
            pods = self.pods(job, live=True)
            ok = [p for p in pods.values() if (p.get("status") or {}).get("phase") == "Running"]
            return pods if len(ok) == count and len(pods) == count else None

        result: dict[str, dict[str, Any]] = wait_until(running, f"{count} pods of Job {job} running")
        return result

    def podgroup(self, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self.kube.get(PODGROUPS.path(self.namespace, name))
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        return found

    def events(self, job: str) -> list[dict[str, Any]]:
        return [e for e in self.bubble.events(job) if e["involvedObject"].get("kind") == "Job"]


def uids(pods: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {name: pod["metadata"]["uid"] for name, pod in pods.items()}


def job_body(name: str, scheduler: str, tasks: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"schedulerName": scheduler, "tasks": tasks, **spec},
    }


def task_body(
    name: str, replicas: int, *, cpu: str = "100m", node_selector: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "containers": [
            {
                "name": "main",
                "image": "registry.invalid/app:1",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }
        ],
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"name": name, "replicas": replicas, "template": {"spec": spec}, **extra}
