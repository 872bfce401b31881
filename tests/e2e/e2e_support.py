"""Helpers of the end-to-end scenarios: vcsat's daemons as processes, a pod watch that records
every change in the API server's order, and Volcano Job builders.

Plain module beside conftest.py (tests/k8s is on sys.path too).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
from controlplane import free_port
from kubernetes import client, watch
from kwokcluster import RUN_SECONDS, KwokCluster, kwok_node

VCSAT = [sys.executable, "-c", "from vcsat.adapters.cli.app import main; main()"]
STOP_S = 30.0
WAIT_S = 90.0
"""The most any condition is waited for: a bound on a hung test, not a speed requirement."""
JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
REQUEST_TIMEOUT_S = 30.0
"""The test's own requests give up after this (the kubernetes client waits forever by default)."""


def transient(error: BaseException) -> bool:
    """Whether an error of the test's own request says "not now" rather than "no": the API server
    (or its etcd) restarting or slow: no answer in time, a refused or reset connection, 429, 5xx."""
    if isinstance(error, client.ApiException):
        return not error.status or error.status == 429 or error.status >= 500
    return isinstance(error, urllib3.exceptions.HTTPError | OSError)


def retried(call: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
    """``call()``, repeated while it fails with a :func:`transient` error, for ``timeout_s`` at most.

    Only for calls that are safe to repeat: reads, and creates that treat AlreadyExists as done
    (:func:`create_or_get`); any other error is raised at once.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except Exception as error:
            if not transient(error):
                raise
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: the API server kept failing: {error!r}") from error
            time.sleep(0.5)


def create_or_get(create: Callable[[], Any], read: Callable[[], Any], what: str) -> Any:
    """Create an object of a fixed name, retried while the API server is not answering; a create
    whose answer was lost may have landed, so AlreadyExists on a retry reads it instead."""

    def once() -> Any:
        try:
            return create()
        except client.ApiException as error:
            if error.status == 409:
                return read()
            raise

    return retried(once, what)


def tolerant(condition: Callable[[], Any]) -> Callable[[], Any]:
    """``condition`` polled across API server trouble: a :func:`transient` error reads as "not yet"
    (a lasting one still ends the wait, as the condition never comes true)."""

    def poll() -> Any:
        try:
            return condition()
        except Exception as error:
            if transient(error):
                return False
            raise

    return poll


def wait_until(condition: Callable[[], Any], what: str, timeout_s: float = WAIT_S, logs: tuple[Path, ...] = ()) -> Any:
    """Poll ``condition`` until it returns something truthy; fail naming ``what`` (and logs) if never."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            tails = "".join(f"\n--- {log.name} ---\n{_tail(log)}" for log in logs)
            raise AssertionError(f"never happened: {what}{tails}")
        time.sleep(0.1)


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def vcsat_daemon(
    command: str, kubeconfig: Path, log: Path, *args: str, ready: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """``vcsat COMMAND`` as a process (no leader election); SIGTERM after.

    With ``ready``, it serves /readyz on a free loopback port and is waited for until it answers
    200 (its watches have listed the cluster): what a measurement that starts now needs. Without,
    it serves no metrics port and the with-block starts at once.
    """
    port = free_port() if ready else 0
    argv = [
        *VCSAT,
        command,
        f"--kubeconfig={kubeconfig}",
        "--no-leader-elect",
        f"--metrics-port={port}",
        "--log-format=json",
        *args,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            if ready:
                wait_until(lambda: process.poll() is not None or _answers(port), f"vcsat {command} ready", logs=(log,))
                assert process.poll() is None, f"vcsat {command} exited: {_tail(log)}"
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(STOP_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@dataclass(frozen=True)
class PodChange:
    """One watch event of a pod, as seen in the API server's order."""

    kind: str
    name: str
    uid: str
    job: str
    node: str
    phase: str
    deleting: bool
    gpus: int = 0
    """``nvidia.com/gpu`` the pod asks (its containers' requests)."""
    at: float = 0.0
    """``time.monotonic()`` when the watch delivered the change."""
    wall: float = 0.0
    """``time.time()`` then: what log lines' timestamps compare with."""


@dataclass
class PodWatch:
    """Every change to a namespace's pods, recorded from before the scenario starts."""

    api: client.ApiClient
    namespace: str
    changes: list[PodChange] = field(default_factory=list)
    error: str | None = None
    """Why the watch stopped recording (it could not resume), or None."""
    _version: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> PodWatch:
        core = client.CoreV1Api(self.api)
        listed = retried(
            lambda: core.list_namespaced_pod(self.namespace, _request_timeout=REQUEST_TIMEOUT_S), "list the pods"
        )
        version = listed.metadata.resource_version
        self._thread = threading.Thread(target=self._run, args=(core, version), daemon=True, name="pod-watch")
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self, core: client.CoreV1Api, version: str) -> None:
        # Resumes from the last version seen after a watch ends or breaks (the API server slow or
        # restarting), so no change is missed; a watch that cannot resume (410 Gone) ends the record
        # and makes every later snapshot fail, rather than leave a test waiting on a dead thread.
        self._version = version
        while not self._stop.is_set():
            try:
                self._watch_once(core)
            except Exception as error:
                if not transient(error):
                    self.error = f"the pod watch ended: {error!r}"
                    return
                self._stop.wait(0.5)

    def _watch_once(self, core: client.CoreV1Api) -> None:
        stream = watch.Watch()
        for event in stream.stream(
            core.list_namespaced_pod,
            self.namespace,
            resource_version=self._version,
            timeout_seconds=2,
            allow_watch_bookmarks=False,
            _request_timeout=REQUEST_TIMEOUT_S,
        ):
            pod = event["object"]
            self._version = pod.metadata.resource_version
            change = PodChange(
                kind=event["type"],
                name=pod.metadata.name,
                uid=pod.metadata.uid,
                job=(pod.metadata.labels or {}).get("volcano.sh/job-name", ""),
                node=pod.spec.node_name or "",
                phase=(pod.status.phase if pod.status else "") or "",
                deleting=pod.metadata.deletion_timestamp is not None,
                gpus=pod_gpus(pod),
                at=time.monotonic(),
                wall=time.time(),
            )
            with self._lock:
                self.changes.append(change)
            if self._stop.is_set():
                stream.stop()

    def snapshot(self) -> list[PodChange]:
        """Every change so far; fails when the watch ended before all were recorded."""
        if self.error is not None:
            raise AssertionError(self.error)
        with self._lock:
            return list(self.changes)


def pod_gpus(pod: Any) -> int:
    """The GPUs a pod (a kubernetes.client V1Pod) asks: its containers' ``nvidia.com/gpu`` requests."""
    total = 0
    for container in pod.spec.containers or []:
        requests = (container.resources.requests if container.resources else None) or {}
        total += int(requests.get("nvidia.com/gpu", 0))
    return total


def bindings(changes: list[PodChange]) -> list[PodChange]:
    """The first change of each pod (by UID) that shows it bound, in order."""
    seen: set[str] = set()
    found: list[PodChange] = []
    for change in changes:
        if change.node and change.uid not in seen:
            seen.add(change.uid)
            found.append(change)
    return found


def nodes_by_uid(changes: list[PodChange]) -> dict[str, set[str]]:
    """Every node each pod (by UID) was ever seen bound to: one per pod, or it was bound twice."""
    nodes: dict[str, set[str]] = {}
    for change in changes:
        if change.node:
            nodes.setdefault(change.uid, set()).add(change.node)
    return nodes


def gpu_job(name: str, replicas: int, *, gpus: int, run_seconds: float, **spec: Any) -> dict[str, Any]:
    """A Volcano Job of one task: ``replicas`` pods as one gang, each asking ``gpus`` GPUs and
    running ``run_seconds`` on a kwok node before it succeeds."""
    resources = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    template = {
        "metadata": {"annotations": {RUN_SECONDS: f"{run_seconds:g}"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/trainer:1",
                    "resources": {"requests": dict(resources), "limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "vcsat",
            "queue": "default",
            "minAvailable": replicas,
            "tasks": [{"name": "worker", "replicas": replicas, "template": template}],
            **spec,
        },
    }


def job_phase(api: client.ApiClient, namespace: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        *JOBS[:2], namespace, JOBS[2], name, _request_timeout=REQUEST_TIMEOUT_S
    )
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


@contextlib.contextmanager
def gpu_nodes(cluster: KwokCluster, gpus: list[int], *, cpu: str = "16", memory: str = "64Gi") -> Iterator[list[str]]:
    """One kwok node per entry of ``gpus`` with that many GPUs, Ready; deleted after."""
    tag = uuid.uuid4().hex[:6]
    names = [f"kwok-{tag}-{i}" for i in range(len(gpus))]
    cluster.plane.create_objects(
        [kwok_node(n, cpu=cpu, memory=memory, gpus=g) for n, g in zip(names, gpus, strict=True)]
    )
    with cluster.plane.api_client() as api:
        core = client.CoreV1Api(api)

        def ready() -> bool:
            wanted = set(names)
            conditions = [
                {c.type: c.status for c in node.status.conditions or []}
                for node in core.list_node().items
                if node.metadata.name in wanted
            ]
            return len(conditions) == len(names) and all(c.get("Ready") == "True" for c in conditions)

        wait_until(ready, "kwok reports its nodes Ready", logs=(cluster.kwok_log,))
        try:
            yield names
        finally:
            for name in names:
                with contextlib.suppress(client.ApiException):
                    core.delete_node(name)


class GangStart:
    """Plays a distributed job's workload: its pods compute only once all of them run.

    TensorFlow's synchronous workers and MPI ranks wait for every peer before the first step; a pod
    placed without its peers holds its resources and does nothing. kwok runs a pod for the seconds
    its ``vcsat.io/run-seconds`` annotation says; the templates here carry none (the pods would run
    forever), and this thread adds it to all pods of a Job at once, when all ``sizes[job]`` of them
    are Running. ``started[job]`` is when that happened (``time.monotonic()``).
    """

    def __init__(self, api: client.ApiClient, namespace: str, sizes: dict[str, int], run_seconds: float) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.sizes = sizes
        self.run_seconds = run_seconds
        self.started: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="gang-start")

    def __enter__(self) -> GangStart:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            running: dict[str, list[str]] = {}
            for pod in self.core.list_namespaced_pod(self.namespace).items:
                job = (pod.metadata.labels or {}).get("volcano.sh/job-name", "")
                if pod.metadata.deletion_timestamp is None and pod.status.phase == "Running":
                    running.setdefault(job, []).append(pod.metadata.name)
            for job, size in self.sizes.items():
                names = running.get(job, [])
                if job in self.started or len(names) < size:
                    continue
                self.started[job] = time.monotonic()
                annotations = {"metadata": {"annotations": {RUN_SECONDS: f"{self.run_seconds:g}"}}}
                for name in names:
                    self.core.patch_namespaced_pod(name, self.namespace, annotations)
