"""The ``vcsat scheduler`` and ``vcsat dump`` commands as processes, against a
control plane of their own.

Why a private control plane: dump-replay equality needs an instance that ``vcsat solve`` reads
strictly, and the session's shared server holds other tests' leftovers (pods bound to nodes
deleted since, in namespaces that never finish terminating), which a strict read rightly refuses.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from controlplane import ControlPlane, free_port, start_control_plane
from scheduler_support import Bubble, wait_until

from vcsat.adapters.kube.client import Kube

VCSAT = [sys.executable, "-c", "from vcsat.adapters.cli.app import main; main()"]
STOP_S = 60


@pytest.fixture(scope="module")
def private_plane() -> Iterator[ControlPlane]:
    with start_control_plane() as plane:
        yield plane


@pytest.fixture
def bubble(private_plane: ControlPlane) -> Iterator[Bubble]:
    with Kube.from_kubeconfig(str(private_plane.kubeconfig)) as kube:
        namespace = f"cli-{uuid.uuid4().hex[:10]}"
        kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        space = Bubble(kube, namespace)
        yield space
        space.clean()


@contextlib.contextmanager
def vcsat_process(*args: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``vcsat ARGS`` in the background, its stderr in ``log``; stopped with SIGTERM after."""
    with log.open("wb") as stderr:
        process = subprocess.Popen([*VCSAT, *args], stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(STOP_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _log_lines(log: Path) -> list[dict[str, Any]]:
    lines = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            lines.append(json.loads(line))
    return lines


def _binders(logs: list[Path]) -> list[bool]:
    """Per log: whether that replica has logged a cycle that bound pods."""
    return [any(line.get("bound") for line in _log_lines(log)) for log in logs]


def _http(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""
    except OSError:
        return 0, ""


def _without_seconds(decision: dict[str, Any]) -> dict[str, Any]:
    return {**decision, "solver": {k: v for k, v in decision["solver"].items() if k != "seconds"}}


def _replays_as_dumped(instance: Path, policy: Path) -> dict[str, Any]:
    """``vcsat solve`` on a dumped cycle gives the decision dumped beside it; that decision."""
    live: dict[str, Any] = json.loads(
        instance.with_name(instance.name.replace(".instance.json", ".decision.json")).read_text()
    )
    replay = subprocess.run(
        [*VCSAT, "solve", str(instance), "--policy", str(policy), "--output", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert _without_seconds(json.loads(replay.stdout)) == _without_seconds(live), instance.name
    return live


def test_early_cycles_are_dumped_marked_and_replayed_as_they_bound(
    private_plane: ControlPlane, bubble: Bubble, tmp_path: Path
) -> None:
    """With room for everything the scheduler binds early, and dumping does not turn that off:
    the early cycle's dump says so and ``vcsat solve`` replays the decision it bound."""
    bubble.node("roomy", cpu="8")
    pods = [*bubble.gang("all-fit", 3, cpu="1"), "alone"]
    bubble.pod("alone", cpu="1")
    dumps = tmp_path / "dumps"
    log = tmp_path / "scheduler.log"
    args = [
        "scheduler",
        f"--kubeconfig={private_plane.kubeconfig}",
        f"--scheduler-name={bubble.scheduler_name}",
        "--no-leader-elect",
        f"--dump-dir={dumps}",
        f"--metrics-port={free_port()}",
        "--period=0.5",
        "--time-limit=5",
        "--log-format=json",
    ]
    with vcsat_process(*args, log=log) as process:
        wait_until(
            lambda: all(bubble.placement()[p] for p in pods) or process.poll() is not None,
            "the scheduler process binds every pod",
        )
        assert process.poll() is None, log.read_text()
        process.send_signal(signal.SIGTERM)
        assert process.wait(STOP_S) == 0, log.read_text()

    early_cycles = [line["cycle"] for line in _log_lines(log) if line.get("msg") == "cycle" and line.get("early")]
    assert early_cycles, "the cycle that bound was an early one"
    early_dumps = []
    for instance in sorted(dumps.glob("cycle-*.instance.json")):
        annotations = json.loads(instance.read_text())["metadata"]["annotations"]
        if annotations.get("vcsat.io/cycle") == "early":
            early_dumps.append(instance)
    assert len(early_dumps) == len(early_cycles)
    for instance in early_dumps:
        live = _replays_as_dumped(instance, dumps / "policy.yaml")
        assert live["solver"]["status"] == "FALLBACK" and live["bindings"]


def test_scheduler_command_dumps_cycles_that_vcsat_solve_replays_to_the_same_decision(
    private_plane: ControlPlane, bubble: Bubble, tmp_path: Path
) -> None:
    nodes = [bubble.node("big", cpu="4", gpus=2), bubble.node("small-a", cpu="2"), bubble.node("small-b", cpu="2")]
    fits = bubble.gang("fits", 3, cpu="1")
    bubble.gang("waits", 2, cpu="3")  # two 3-cpu pods: only one node can take one
    bubble.pod("gpu", cpu="500m", gpus=2)
    dumps = tmp_path / "dumps"
    port = free_port()
    log = tmp_path / "scheduler.log"
    args = [
        "scheduler",
        f"--kubeconfig={private_plane.kubeconfig}",
        f"--scheduler-name={bubble.scheduler_name}",
        "--no-leader-elect",
        f"--dump-dir={dumps}",
        f"--metrics-port={port}",
        "--period=0.5",
        "--time-limit=5",
        "--log-format=json",
    ]
    with vcsat_process(*args, log=log) as process:
        wait_until(
            lambda: all(bubble.placement()[p] for p in [*fits, "gpu"]) or process.poll() is not None,
            "the scheduler process binds what fits",
        )
        assert process.poll() is None, log.read_text()
        wait_until(lambda: _http(f"http://127.0.0.1:{port}/readyz")[0] == 200, "the scheduler reports ready")
        # The counter moves when the cycle's bindings return, a moment after the API shows them.
        wait_until(
            lambda: "vcsat_pods_bound_total 4.0" in _http(f"http://127.0.0.1:{port}/metrics")[1],
            "the metrics count the four bound pods",
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(STOP_S) == 0, log.read_text()

    placement = bubble.placement()
    assert placement["waits-0"] is None and placement["waits-1"] is None
    assert placement["gpu"] == nodes[0]
    lines = [json.loads(line) for line in log.read_text().splitlines() if '"msg": "cycle"' in line]
    cycles = [line["cycle"] for line in lines]
    assert cycles, "cycles are logged"
    for line in lines:
        # The process's CPU seconds of each cycle, its snapshot's and its decision's among them.
        assert line["cpu_seconds"] > 0
        assert 0 <= line["snapshot_cpu_seconds"] <= line["cpu_seconds"]
        assert 0 <= line["solve_cpu_seconds"] <= line["cpu_seconds"]
    by_cycle = {line["cycle"]: line for line in lines}

    instances = sorted(dumps.glob("cycle-*.instance.json"))
    assert instances, "cycles with pending pods are dumped"
    replayed_bindings = 0
    for instance in instances[:3]:
        document = json.loads(instance.read_text())
        assert (document["apiVersion"], document["kind"]) == ("v1", "List")
        dumped_decision = _replays_as_dumped(instance, dumps / "policy.yaml")
        replayed_bindings += len(dumped_decision["bindings"])
        # The cycle's log line says what its dump says: the steps it skipped for time and its gap.
        number = int(instance.name.split(".")[0].split("-")[1])
        if number in by_cycle:
            assert by_cycle[number]["skipped"] == dumped_decision["solver"]["skipped"], instance.name
            assert 0.0 <= by_cycle[number]["gap"] <= 1.0
    assert replayed_bindings >= 4, "the replayed cycles include the ones that bound"

    # vcsat dump: the cluster as it is now, which vcsat solve reads as the scheduler would.
    dumped = tmp_path / "now.json"
    done = subprocess.run(
        [*VCSAT, "dump", "-o", str(dumped), f"--kubeconfig={private_plane.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(dumped.read_text())
    kinds = {item["kind"] for item in document["items"]}
    assert {"Node", "Pod", "PodGroup", "Queue"} <= kinds
    assert {item["metadata"]["name"] for item in document["items"] if item["kind"] == "Node"} >= set(nodes)
    assert all("managedFields" not in item["metadata"] for item in document["items"])
    now = subprocess.run(
        [*VCSAT, "solve", str(dumped), "--policy", str(dumps / "policy.yaml"), "--output", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert now.returncode == 0, now.stderr
    decision = json.loads(now.stdout)
    assert decision["bindings"] == []
    assert [(o["podgroup"], o["phase"] != "Running") for o in decision["podgroups"]] == [
        (f"{bubble.namespace}/waits", True)
    ]


def test_two_replicas_one_leader_and_the_standby_takes_over(
    private_plane: ControlPlane, bubble: Bubble, tmp_path: Path
) -> None:
    bubble.node("n", cpu="8")
    lease = f"lease-{bubble.tag}"
    common = [
        "scheduler",
        f"--kubeconfig={private_plane.kubeconfig}",
        f"--scheduler-name={bubble.scheduler_name}",
        f"--lease-namespace={bubble.namespace}",
        f"--lease-name={lease}",
        # Not the defaults, to see them reach the Lease.
        "--lease-duration=7",
        "--renew-deadline=5",
        "--retry-period=1",
        "--metrics-port=0",
        "--period=0.5",
        "--resync=5",
        "--log-format=json",
    ]
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with vcsat_process(*common, log=logs[0]) as first, vcsat_process(*common, log=logs[1]) as second:
        first_gang = bubble.gang("first", 2, cpu="1")
        wait_until(lambda: all(bubble.placement()[p] for p in first_gang), "one replica binds")
        # The binding is visible in the API before the cycle that made it logs it.
        wait_until(lambda: any(_binders(logs)), "the binding replica logs it")
        holder = bubble.kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{bubble.namespace}/leases/{lease}")
        holder_identity = holder["spec"]["holderIdentity"]
        assert holder["spec"]["leaseDurationSeconds"] == 7
        leaders = [i for i, binds in enumerate(_binders(logs)) if binds]
        assert len(leaders) == 1, "exactly one replica binds"
        leader, standby = (first, second) if leaders == [0] else (second, first)
        assert any(line.get("identity") == holder_identity for line in _log_lines(logs[leaders[0]]))

        leader.send_signal(signal.SIGTERM)
        assert leader.wait(STOP_S) == 0
        second_gang = bubble.gang("second", 2, cpu="1")
        wait_until(lambda: all(bubble.placement()[p] for p in second_gang), "the standby takes over and binds")
        assert standby.poll() is None
        wait_until(lambda: _binders(logs)[1 - leaders[0]], "the standby logs its binding")


@pytest.mark.parametrize("command", ["scheduler", "dump"])
def test_commands_refuse_a_missing_kubeconfig_in_one_line(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    done = subprocess.run(
        [*VCSAT, command, f"--kubeconfig={missing}"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"vcsat: {missing}: no such file"
