"""``vcsat scheduler`` as a process on a control plane of its own, with its metrics and its web
dashboard on: the ``volcano_*`` series of a known cluster are scraped from /metrics, and the
dashboard's pages are loaded in a real headless browser (Debian's chromium), which must show the
queues and the waiting PodGroup with the reason the scheduler gave it; a screenshot is kept.

The cluster: one node of 8 cpu and 4 GPUs; queue A (weight 2) runs a gang of two 1-cpu 1-GPU pods;
queue B (weight 1, capability 6 cpu) has a gang of two 5-cpu pods, which cannot run (10 cpu over
its capability, and 6 cpu free). Deserved cpu, by weighted water-filling of the 8 cores over what
each queue can use (A: 2, B: min(6, 10) = 6): A 2000m, B 6000m, default 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from controlplane import free_port, start_control_plane
from prometheus_client.parser import text_string_to_metric_families
from scheduler_support import Bubble, wait_until

from vcsat.adapters.kube.client import QUEUES, ApiError, Kube

VCSAT = [sys.executable, "-c", "from vcsat.adapters.cli import main; main()"]
CHROMIUM = "chromium"
WINDOW = (1280, 1400)
ARTIFACTS = Path(os.environ.get("VCSAT_TEST_ARTIFACTS", "/tmp/vcsat-test-artifacts"))
"""Where the screenshots are copied after the test (pytest's own tmp dirs rotate)."""


@dataclass
class Running:
    bubble: Bubble
    queue_a: str
    queue_b: str
    metrics: str
    dashboard: str
    reason: str
    """The reason the scheduler gave the waiting gang, as its Event on the PodGroup says."""
    log: Path


def _http(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body.decode()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _queue(kube: Kube, name: str, weight: int, capability: dict[str, str] | None = None) -> None:
    spec: dict[str, Any] = {"weight": weight, "reclaimable": True}
    if capability:
        spec["capability"] = capability
    kube.post(
        QUEUES.path(),
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec},
    )


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("dashboard")
    with start_control_plane() as plane, Kube.from_kubeconfig(str(plane.kubeconfig)) as kube:
        namespace = f"dash-{uuid.uuid4().hex[:8]}"
        kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        bubble = Bubble(kube, namespace)
        queue_a, queue_b = f"team-a-{bubble.tag}", f"team-b-{bubble.tag}"
        _queue(kube, queue_a, 2)
        _queue(kube, queue_b, 1, {"cpu": "6"})
        bubble.node("gpu", cpu="8", memory="16Gi", gpus=4)
        for name, queue, cpu, gpus in (("fits", queue_a, "1", 1), ("waits", queue_b, "5", 0)):
            bubble.podgroup(name, 2, queue=queue)
            for i in range(2):
                bubble.pod(f"{name}-{i}", cpu=cpu, gpus=gpus, group=name)
        metrics_port, dashboard_port = free_port(), free_port()
        log = tmp / "scheduler.log"
        args = [
            "scheduler",
            f"--kubeconfig={plane.kubeconfig}",
            f"--scheduler-name={bubble.scheduler_name}",
            "--no-leader-elect",
            f"--metrics-port={metrics_port}",
            f"--dashboard-port={dashboard_port}",
            "--period=0.5",
            "--time-limit=5",
            "--log-format=json",
        ]
        with _process(args, log) as process:
            wait_until(
                lambda: all(bubble.placement()[p] for p in ("fits-0", "fits-1")) or process.poll() is not None,
                "the scheduler binds the gang that fits",
            )
            assert process.poll() is None, log.read_text()
            events = wait_until(lambda: bubble.events("waits"), "an Event says why the other gang waits")
            yield Running(
                bubble,
                queue_a,
                queue_b,
                f"http://127.0.0.1:{metrics_port}/metrics",
                f"http://127.0.0.1:{dashboard_port}",
                events[0]["reason"],
                log,
            )
        bubble.clean()
        for name in (queue_a, queue_b):
            with contextlib.suppress(ApiError):
                kube.delete(QUEUES.path(name=name))


@contextlib.contextmanager
def _process(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as stderr:
        process = subprocess.Popen([*VCSAT, *args], stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- metrics ----------------------------------------------------------------------------------


def test_volcano_series_of_a_known_cluster(running: Running) -> None:
    a, b = running.queue_a, running.queue_b
    ns = running.bubble.namespace
    created = _epoch(running.bubble.get_podgroup("fits")["metadata"]["creationTimestamp"])

    def value(samples: dict[Any, float], name: str, **labels: str) -> float | None:
        return samples.get((name, tuple(sorted(labels.items()))))

    def mismatches(samples: dict[Any, float]) -> list[str]:
        """What the scrape says against what the cluster is: the gauges follow the last cycle, and
        the one that first binds the gang still counts it as a job of the cycle, before its
        PodGroup's status (Running) is written and seen."""
        expected: dict[tuple[str, tuple[tuple[str, str], ...]], float | None] = {}
        for (name, queue), number in {
            ("volcano_queue_weight", a): 2,
            ("volcano_queue_weight", b): 1,
            ("volcano_queue_allocated_milli_cpu", a): 2000,
            ("volcano_queue_allocated_milli_cpu", b): 0,
            ("volcano_queue_allocated_memory_bytes", a): 200 * 2**20,
            ("volcano_queue_request_milli_cpu", a): 2000,
            ("volcano_queue_request_milli_cpu", b): 10000,
            ("volcano_queue_capacity_milli_cpu", b): 6000,
            ("volcano_queue_capacity_milli_cpu", a): None,  # no capability, no series
            ("volcano_queue_deserved_milli_cpu", a): 2000,
            ("volcano_queue_deserved_milli_cpu", b): 6000,
            ("volcano_queue_deserved_milli_cpu", "default"): 0,
            ("volcano_queue_share", a): 1.0,
            ("volcano_queue_share", b): 0.0,
            ("volcano_queue_overused", b): 0,
            ("volcano_queue_pod_group_running_count", a): 1,
            ("volcano_queue_pod_group_running_count", b): 0,
        }.items():
            expected[(name, (("queue_name", queue),))] = number
        gpus = (("queue_name", a), ("resource", "nvidia.com/gpu"))
        expected[("volcano_queue_allocated_scalar_resources", gpus)] = 2000
        expected[("volcano_unschedule_job_count", ())] = 1
        expected[("volcano_unschedule_task_count", (("job_id", "waits"),))] = 2
        expected[("volcano_unschedule_task_count", (("job_id", "fits"),))] = None  # nothing of it pending
        job = (("job_name", "fits"), ("job_namespace", ns), ("queue", a))
        expected[("volcano_e2e_job_scheduling_start_time", job)] = int(created)
        wrong = [f"{key}: {samples.get(key)} != {n}" for key, n in expected.items() if samples.get(key) != n]
        waiting = sum(
            value(samples, f"volcano_queue_pod_group_{p}_count", queue_name=b) or 0 for p in ("pending", "inqueue")
        )
        if waiting != 1:
            wrong.append(f"queue B's waiting PodGroups: {waiting} != 1")
        at_least = {
            ("vcsat_pending_podgroups", (("reason", running.reason),)): 1,
            ("volcano_schedule_attempts_total", (("result", "scheduled"),)): 2,
            ("volcano_e2e_scheduling_latency_milliseconds_count", ()): 1,
            ("volcano_e2e_job_scheduling_latency_milliseconds_count", ()): 2,
        }
        wrong += [f"{key}: {samples.get(key)} < {n}" for key, n in at_least.items() if (samples.get(key) or 0) < n]
        return wrong

    last: list[str] = []

    def settled() -> bool:
        last[:] = mismatches(_samples(_http(running.metrics)))
        return not last

    with contextlib.suppress(AssertionError):
        wait_until(settled, "the metrics show the cluster as it stands")
    assert last == []


def _epoch(timestamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


# --- the dashboard in a browser -------------------------------------------------------------


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    binary = shutil.which(CHROMIUM)
    assert binary is not None, "Debian's chromium is needed (apt-get install -y chromium chromium-driver)"
    profile = tmp / f"profile-{uuid.uuid4().hex[:6]}"
    command = [
        binary,
        "--headless",
        "--no-sandbox",  # as root in a container; the pages are our own
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done


def _dom(tmp: Path, url: str) -> str:
    return _chromium(tmp, "--dump-dom", url).stdout.decode()


def _text(dom: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


def test_dashboard_pages_in_a_headless_browser(
    running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = running.bubble.namespace
    overview = _dom(tmp_path, running.dashboard + "/")
    text = _text(overview)
    assert running.queue_a in text and running.queue_b in text
    assert f"{ns}/waits" in text and running.reason in text
    assert f'href="/jobs/{ns}/waits"' in overview
    assert f"{ns}/fits" not in text  # placed: not among the waiting

    job = _dom(tmp_path, f"{running.dashboard}/jobs/{ns}/waits")
    assert f'<span class="reason" id="reason">{running.reason}</span>' in job
    assert "What would let it run?" in job and "Its waiting pods ask 10000m cpu" in _text(job)

    nodes = _dom(tmp_path, running.dashboard + "/nodes")
    node = running.bubble.nodes[0]
    assert node in nodes
    # The map's cells (the legend's carry no title): two GPUs held by the gang, two free.
    assert len(re.findall(r'class="gpu held" title="GPU', nodes)) == 2
    assert len(re.findall(r'class="gpu free" title="GPU', nodes)) == 2

    cycles = _text(_dom(tmp_path, running.dashboard + "/cycles"))
    assert "OPTIMAL" in cycles or "FEASIBLE" in cycles

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    kept = []
    for name, path in (("overview", "/"), ("job", f"/jobs/{ns}/waits")):
        shot = tmp_path / f"dashboard-{name}.png"
        _chromium(tmp_path, f"--screenshot={shot}", running.dashboard + path)
        width, height = _png_size(shot.read_bytes())
        assert (width, height) == WINDOW
        assert shot.stat().st_size > 10_000  # drawn, not blank
        target = ARTIFACTS / shot.name
        shutil.copyfile(shot, target)
        kept.append(target)
    with capsys.disabled():
        print("\ndashboard screenshots: " + ", ".join(str(p) for p in kept))


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_process_logged_no_failure(running: Running) -> None:
    failures = []
    for line in running.log.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("level") in ("ERROR", "CRITICAL"):
                failures.append(entry)
    assert failures == []
