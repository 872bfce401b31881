"""Pods bound per second by ``vcsat scheduler`` against a real kube-apiserver and etcd.

1,000 nodes and 10,000 pending pods in gangs of 10 (1,000 PodGroups, minMember 10). The scheduler
runs as its own process (``vcsat scheduler``, as deployed); this process creates the objects and
watches the pods, noting when each is first seen bound. Two scenarios, each with its own
namespace and scheduler name on one control plane:

- ``created-live``: the scheduler is running while the pods are created; throughput is 10,000
  pods over the time from the first creation to the last Binding, as issue 5 asks (and as
  kube-scheduler's scheduler_perf measures, where the harness creates pods while it schedules);
- ``all-waiting``: the pods exist before the scheduler starts; throughput is 10,000 over the time
  from the scheduler's start (its caches filling included) to the last Binding.

CPU seconds of the API server, etcd, the scheduler and this process over the window, and the
requests the API server served by verb and resource (its ``apiserver_request_total``), go into
``extra_info``: on a small machine they show where the time went (every write costs the API
server and etcd CPU). The scheduler sends bindings before PodGroup statuses and Events, so
some of those land after the last binding, outside the window. Run it alone (2 cores shared):

    python -m pytest benchmarks/test_apiserver_throughput.py --benchmark-only -s

While iterating, ``VCSAT_BENCH_GANGS`` (default 1000), ``VCSAT_BENCH_NODES`` (1000) and
``VCSAT_BENCH_BIND_WORKERS`` (the scheduler's ``--bind-workers``, 32) change the run; the reported
figures are at the defaults.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "k8s"))

from controlplane import ControlPlane, free_port, start_control_plane

from vcsat.adapters.kube.client import NODES, PODGROUPS, PODS, Kube
from vcsat.adapters.kube.informer import Informer

NODE_COUNT = int(os.environ.get("VCSAT_BENCH_NODES", "1000"))
GANGS = int(os.environ.get("VCSAT_BENCH_GANGS", "1000"))
GANG_SIZE = 10
POD_COUNT = GANGS * GANG_SIZE
CREATE_WORKERS = 32
BIND_WORKERS = int(os.environ.get("VCSAT_BENCH_BIND_WORKERS", "32"))
DEADLINE_S = 300.0
VCSAT = [sys.executable, "-c", "from vcsat.adapters.cli.app import main; main()"]
NODE_RESOURCES = {"cpu": "32", "memory": "128Gi", "pods": "110"}
"""Room for both scenarios' 10,000 one-cpu pods at once."""


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    with start_control_plane() as control_plane:
        with (
            Kube.from_kubeconfig(str(control_plane.kubeconfig), pool_size=CREATE_WORKERS) as kube,
            ThreadPoolExecutor(CREATE_WORKERS) as pool,
        ):
            list(pool.map(lambda i: _node(kube, i), range(NODE_COUNT)))
        yield control_plane


def _node(kube: Kube, index: int) -> None:
    name = f"bench-{index:04d}"
    kube.post(NODES.path(), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    kube.patch(
        NODES.path(name=name, subresource="status"),
        {
            "status": {
                "capacity": NODE_RESOURCES,
                "allocatable": NODE_RESOURCES,
                "conditions": [{"type": "Ready", "status": "True", "reason": "Bench", "message": "bench"}],
            }
        },
    )


class _BoundClock:
    """Watches pods of one namespace and notes when each is first seen bound."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.namespace = namespace
        self.bound: dict[str, float] = {}
        self.done = threading.Event()
        self._lock = threading.Lock()
        # Only this namespace's bound pods: the API server filters, so this watch costs it (and
        # this process) one event per pod instead of two, as a harness sharing the scheduler's
        # informer (scheduler_perf) costs nothing extra.
        self._informer = Informer(
            kube,
            PODS,
            on_list=self._list,
            on_event=self._event,
            params={"fieldSelector": f"metadata.namespace={namespace},spec.nodeName!="},
        )

    def _list(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self._event("LIST", pod)

    def _event(self, _kind: str, pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        if metadata.get("namespace") != self.namespace or not pod["spec"].get("nodeName"):
            return
        with self._lock:
            self.bound.setdefault(metadata["name"], time.monotonic())
            if len(self.bound) >= POD_COUNT:
                self.done.set()

    def __enter__(self) -> _BoundClock:
        self._informer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._informer.stop()
        self._informer.join(5)


def _create_gang(kube: Kube, namespace: str, scheduler: str, gang: int) -> None:
    name = f"job-{gang:04d}"
    kube.post(
        PODGROUPS.path(namespace),
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": GANG_SIZE},
        },
    )
    for index in range(GANG_SIZE):
        kube.post(
            PODS.path(namespace),
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{index}",
                    "namespace": namespace,
                    "annotations": {"scheduling.k8s.io/group-name": name},
                },
                "spec": {
                    "schedulerName": scheduler,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.invalid/bench:1",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                        }
                    ],
                },
            },
        )


def _create_all(kube: Kube, namespace: str, scheduler: str) -> float:
    """Create the 1,000 gangs; the time it took."""
    started = time.monotonic()
    with ThreadPoolExecutor(CREATE_WORKERS) as pool:
        list(pool.map(lambda gang: _create_gang(kube, namespace, scheduler, gang), range(GANGS)))
    return time.monotonic() - started


@contextlib.contextmanager
def _scheduler(plane: ControlPlane, name: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    port = free_port()
    args = [
        "scheduler",
        f"--kubeconfig={plane.kubeconfig}",
        f"--scheduler-name={name}",
        "--no-leader-elect",
        f"--metrics-port={port}",
        "--log-format=json",
        "--time-limit=10",
        f"--bind-workers={BIND_WORKERS}",
    ]
    with log.open("wb") as stderr:
        process = subprocess.Popen([*VCSAT, *args], stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            deadline = time.monotonic() + 120
            while not _ready(port):
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            yield process
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


class _CpuMeter:
    """CPU seconds used by the API server, etcd, the scheduler process and this one, over a window."""

    def __init__(self, plane: ControlPlane, scheduler: subprocess.Popen[bytes] | None = None) -> None:
        self.pids = {"apiserver": _pid_of("kube-apiserver", plane), "etcd": _pid_of("etcd", plane)}
        if scheduler is not None:
            self.pids["scheduler"] = scheduler.pid
        self.pids["benchmark"] = os.getpid()
        self.start = {name: _cpu_seconds(pid) for name, pid in self.pids.items()}

    def used(self) -> dict[str, float]:
        return {f"cpu_s_{name}": round(_cpu_seconds(pid) - self.start[name], 2) for name, pid in self.pids.items()}


def _pid_of(binary: str, plane: ControlPlane) -> int:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if argv and argv[0].endswith(binary.encode()) and str(plane.workdir).encode() in b" ".join(argv):
                return int(entry.name)
    return 0


def _cpu_seconds(pid: int) -> float:
    if not pid:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cycles(log: Path) -> dict[str, Any]:
    cycles = []
    for line in log.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("msg") == "cycle":
                cycles.append(entry)
    return {
        "cycles_that_bound": sum(1 for c in cycles if c.get("bound")),
        "cycle_seconds_total": round(sum(c.get("seconds", 0) for c in cycles), 2),
        "solver_seconds_total": round(sum(c.get("solver_seconds", 0) for c in cycles), 2),
        "bind_failures": sum(c.get("failed", 0) for c in cycles),
    }


def _writes(kube: Kube, namespace: str) -> dict[str, Any]:
    """Events by reason and PodGroups with a status: the writes besides the bindings."""
    events = kube.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    reasons: dict[str, int] = {}
    for event in events:
        reasons[event["reason"]] = reasons.get(event["reason"], 0) + 1
    return {f"events_{reason}": count for reason, count in sorted(reasons.items())}


class _RequestMeter:
    """Requests the API server served over a window, by verb and resource (its own
    ``apiserver_request_total``): every write costs the API server and etcd CPU, so this shows
    which ones a run made besides the pods and their bindings."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.start = self._counts()

    def _counts(self) -> dict[str, float]:
        context = ssl.create_default_context(cafile=str(self.plane.ca_file))
        request = urllib.request.Request(
            f"{self.plane.server}/metrics", headers={"Authorization": f"Bearer {self.plane.token}"}
        )
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            text = response.read().decode()
        counts: dict[str, float] = {}
        for line in text.splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels = dict(_LABEL.findall(line))
            if labels.get("verb") in ("WATCH", "CONNECT"):
                continue
            subresource = f"/{labels['subresource']}" if labels.get("subresource") else ""
            key = f"requests_{labels.get('verb', '').lower()}_{labels.get('resource', '')}{subresource}"
            counts[key] = counts.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
        return counts

    def used(self) -> dict[str, int]:
        now = self._counts()
        made = {key: int(count - self.start.get(key, 0.0)) for key, count in sorted(now.items())}
        return {key: count for key, count in made.items() if count}


_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _namespace(kube: Kube) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def created_live(plane: ControlPlane, log: Path) -> dict[str, Any]:
    with Kube.from_kubeconfig(str(plane.kubeconfig), pool_size=CREATE_WORKERS) as kube:
        namespace = _namespace(kube)
        scheduler = f"bench-{namespace}"
        with _scheduler(plane, scheduler, log) as process, _BoundClock(kube, namespace) as clock:
            requests = _RequestMeter(plane)  # before the CPU window: reading /metrics costs the API server
            meter = _CpuMeter(plane, process)
            first_created = time.monotonic()
            creating = _create_all(kube, namespace, scheduler)
            assert clock.done.wait(DEADLINE_S), f"only {len(clock.bound)} of {POD_COUNT} pods bound"
            used = meter.used()
            made = requests.used()
        last_bound = max(clock.bound.values())
        return {
            "pods": POD_COUNT,
            "nodes": NODE_COUNT,
            "pods_per_second": round(POD_COUNT / (last_bound - first_created), 1),
            "creation_pods_per_second": round(POD_COUNT / creating, 1),
            "seconds_creation_to_last_binding": round(last_bound - first_created, 2),
            "seconds_last_creation_to_last_binding": round(last_bound - first_created - creating, 2),
            **_cycles(log),
            **_writes(kube, namespace),
            **used,
            **made,
        }


def all_waiting(plane: ControlPlane, log: Path) -> dict[str, Any]:
    with Kube.from_kubeconfig(str(plane.kubeconfig), pool_size=CREATE_WORKERS) as kube:
        namespace = _namespace(kube)
        scheduler = f"bench-{namespace}"
        creating = _create_all(kube, namespace, scheduler)
        with _BoundClock(kube, namespace) as clock:
            started = time.monotonic()
            with _scheduler(plane, scheduler, log) as process:
                requests = _RequestMeter(plane)
                meter = _CpuMeter(plane, process)
                assert clock.done.wait(DEADLINE_S), f"only {len(clock.bound)} of {POD_COUNT} pods bound"
                used = meter.used()
                made = requests.used()
        last_bound = max(clock.bound.values())
        first_bound = min(clock.bound.values())
        return {
            "pods": POD_COUNT,
            "nodes": NODE_COUNT,
            "pods_per_second": round(POD_COUNT / (last_bound - started), 1),
            "binding_phase_pods_per_second": round(POD_COUNT / (last_bound - first_bound), 1),
            "seconds_start_to_first_binding": round(first_bound - started, 2),
            "creation_pods_per_second": round(POD_COUNT / creating, 1),
            **_cycles(log),
            **_writes(kube, namespace),
            **used,
            **made,
        }


@pytest.mark.parametrize("scenario", [created_live, all_waiting], ids=["created-live", "all-waiting"])
def test_apiserver_throughput(benchmark: Any, plane: ControlPlane, tmp_path: Path, scenario: Any) -> None:
    log = tmp_path / "scheduler.log"
    result = benchmark.pedantic(scenario, args=(plane, log), rounds=1, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update(result)
    print(f"\n{scenario.__name__}: {json.dumps(result)}")
    assert result["bind_failures"] == 0
