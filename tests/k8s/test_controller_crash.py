"""A controller that dies in the middle of a reconcile, and the one that comes after it.

The first controller is made to die at a chosen write (its write hook raises, and every write
after that would too, as from a dead process); a second controller with empty memory then takes
over. Nothing may be duplicated (a pod name is created once: the pods made before the crash keep
their uids) and nothing lost (the retry count and job version written before the crash stand;
a half-done restart is finished, not counted twice). The last test kills a real ``vcsat
controller`` process with SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from controller_harness import Jobs, StandInScheduler, job_body, running_controller, task_body, uids
from controlplane import ControlPlane
from kwokcluster import PodEnds
from scheduler_support import (  # kwok_control_plane: the fixture control_plane, this module's own
    Bubble,
    kwok_control_plane,  # noqa: F401
    wait_until,
)

from vcsat.adapters.controller.commands import command_body
from vcsat.adapters.kube.client import Kube

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


class Crash(BaseException):
    """Kills the worker thread that hits it, like SIGKILL kills a process: no cleanup, no retry."""


class CrashAt:
    """A write hook that crashes at the ``nth`` write matching (verb, kind), once ``armed``."""

    def __init__(self, verb: str, kind: str, nth: int = 1, *, armed: bool = True) -> None:
        self.verb = verb
        self.kind = kind
        self.nth = nth
        self.armed = threading.Event()
        if armed:
            self.armed.set()
        self.seen = 0
        self.crashed = threading.Event()
        self.writes: list[tuple[str, str, str]] = []

    def __call__(self, verb: str, kind: str, name: str) -> None:
        if self.crashed.is_set():
            raise Crash("already dead")
        self.writes.append((verb, kind, name))
        if self.armed.is_set() and (verb, kind) == (self.verb, self.kind):
            self.seen += 1
            if self.seen == self.nth:
                self.crashed.set()
                raise Crash(f"killed before {verb} {kind} {name}")


@pytest.fixture
def cluster(bubble: Bubble, kube: Kube, k8s_client: Any) -> Iterator[tuple[Jobs, PodEnds]]:
    """Nodes, kubelets and a stand-in scheduler, but no controller: each test runs its own."""
    nodes = [bubble.node("n0", cpu="16", memory="64Gi")]
    with contextlib.ExitStack() as stack:
        life = PodEnds(k8s_client)
        stack.enter_context(StandInScheduler(kube, bubble.namespace, nodes, bubble.scheduler_name))
        yield Jobs(kube, bubble), life


def test_killed_while_creating_pods_creates_no_duplicates(
    cluster: tuple[Jobs, PodEnds], bubble: Bubble, k8s_client: Any
) -> None:
    jobs, _ = cluster
    hook = CrashAt("create", "Pod", nth=3)
    with running_controller(k8s_client, bubble.namespace, bubble.scheduler_name, on_write=hook, workers=1):
        jobs.create(job_body("wide", bubble.scheduler_name, [task_body("worker", 5)]))
        wait_until(hook.crashed.is_set, "the first controller dies at its third pod")
    before = jobs.pods("wide")
    assert sorted(before) == ["wide-worker-0", "wide-worker-1"]
    assert jobs.phase("wide") == "Pending"

    with running_controller(k8s_client, bubble.namespace, bubble.scheduler_name):
        after = jobs.running_pods("wide", 5)
        jobs.wait_phase("wide", "Running")
    assert sorted(after) == [f"wide-worker-{i}" for i in range(5)]
    # The two pods made before the crash are the same objects, not replacements.
    assert {name: uid for name, uid in uids(after).items() if name in before} == uids(before)


def test_killed_between_recording_a_restart_and_doing_it_restarts_once(
    cluster: tuple[Jobs, PodEnds], bubble: Bubble, k8s_client: Any
) -> None:
    jobs, life = cluster
    # Armed later: dies at the first pod deletion, right after the status said Restarting.
    hook = CrashAt("mark", "Pod", armed=False)
    body = job_body(
        "flaky",
        bubble.scheduler_name,
        [task_body("worker", 2)],
        maxRetry=3,
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
    )
    with running_controller(k8s_client, bubble.namespace, bubble.scheduler_name, on_write=hook, workers=1):
        jobs.create(body)
        first = jobs.running_pods("flaky", 2)
        jobs.wait_phase("flaky", "Running")
        hook.armed.set()
        life.fail(bubble.namespace, "flaky-worker-0")
        wait_until(hook.crashed.is_set, "the first controller dies at its first pod deletion")
    status = jobs.status("flaky")
    assert status["state"]["phase"] == "Restarting"
    assert (status["retryCount"], status["version"]) == (1, 1)
    assert uids(jobs.pods("flaky", live=True)) == uids(first)  # nothing deleted yet

    with running_controller(k8s_client, bubble.namespace, bubble.scheduler_name):
        second = wait_until(
            lambda: (
                (pods := jobs.running_pods("flaky", 2))
                and not set(uids(pods).values()) & set(uids(first).values())
                and pods
            ),
            "the restart is finished with new pods",
        )
        status = jobs.wait_phase("flaky", "Running")
    # One failure, one retry: the interrupted restart was finished, not decided again.
    assert (status["retryCount"], status["version"]) == (1, 1)
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in second.values()} == {"1"}


def test_killed_between_applying_a_command_and_deleting_it_applies_it_once(
    cluster: tuple[Jobs, PodEnds], bubble: Bubble, k8s_client: Any, kube: Kube
) -> None:
    jobs, _ = cluster
    hook = CrashAt("delete", "Command")
    commands = f"/apis/bus.volcano.sh/v1alpha1/namespaces/{bubble.namespace}/commands"
    with running_controller(k8s_client, bubble.namespace, bubble.scheduler_name, on_write=hook, workers=1):
        jobs.create(job_body("cmd", bubble.scheduler_name, [task_body("worker", 2)]))
        first = jobs.running_pods("cmd", 2)
        jobs.wait_phase("cmd", "Running")
        # RestartJob, made as vcctl makes a Command: not idempotent (each one is a new job version).
        kube.post(commands, command_body(jobs.get("cmd"), "RestartJob", namespace=bubble.namespace))
        wait_until(hook.crashed.is_set, "the first controller dies before deleting the Command")
    assert jobs.status("cmd")["version"] == 1
    assert len(kube.get(commands)["items"]) == 1  # recorded as applied, not yet deleted

    with running_controller(k8s_client, bubble.namespace, bubble.scheduler_name):
        wait_until(lambda: not kube.get(commands)["items"], "the Command is deleted")
        second = wait_until(
            lambda: (
                (pods := jobs.running_pods("cmd", 2))
                and not set(uids(pods).values()) & set(uids(first).values())
                and pods
            ),
            "the restart is finished with new pods",
        )
        status = jobs.wait_phase("cmd", "Running")
    assert status["version"] == 1, "the command was applied once"
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in second.values()} == {"1"}


def test_controller_process_killed_and_restarted(
    cluster: tuple[Jobs, PodEnds], bubble: Bubble, control_plane: ControlPlane
) -> None:
    jobs, life = cluster
    command = [
        sys.executable,
        "-c",
        "from vcsat.adapters.cli.app import main; main()",
        "controller",
        "--kubeconfig",
        str(control_plane.kubeconfig),
        "--namespace",
        bubble.namespace,
        "--scheduler-name",
        bubble.scheduler_name,
        "--no-leader-elect",
        "--metrics-port",
        "0",
    ]

    def start() -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    jobs.create(job_body("proc", bubble.scheduler_name, [task_body("ps", 1), task_body("worker", 3)]))
    first = start()
    try:
        before = wait_until(lambda: jobs.pods("proc") or None, "the first process creates pods")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    second = start()
    try:
        pods = jobs.running_pods("proc", 4)
        jobs.wait_phase("proc", "Running")
        assert {name: uid for name, uid in uids(pods).items() if name in before} == uids(before)
        for name in pods:
            life.succeed(bubble.namespace, name)
        status = jobs.wait_phase("proc", "Completed")
        assert status["succeeded"] == 4
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(30)
        except subprocess.TimeoutExpired:
            second.kill()
            second.wait(10)
        errors = (second.stderr.read() if second.stderr else b"").decode(errors="replace")
    assert second.returncode == 0, errors
    assert "Traceback" not in errors, errors


def test_controller_command_acts_only_while_it_holds_the_lease(
    cluster: tuple[Jobs, PodEnds], bubble: Bubble, control_plane: ControlPlane, kube: Kube
) -> None:
    jobs, _ = cluster
    lease = f"/apis/coordination.k8s.io/v1/namespaces/{bubble.namespace}/leases/vcsat-controller"
    command = [
        sys.executable,
        "-c",
        "from vcsat.adapters.cli.app import main; main()",
        "controller",
        "--kubeconfig",
        str(control_plane.kubeconfig),
        "--namespace",
        bubble.namespace,
        "--scheduler-name",
        bubble.scheduler_name,
        "--leader-elect",
        "--lease-namespace",
        bubble.namespace,
        "--metrics-port",
        "0",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        jobs.create(job_body("led", bubble.scheduler_name, [task_body("worker", 2)]))
        jobs.running_pods("led", 2)
        jobs.wait_phase("led", "Running")
        holder = kube.get(lease)["spec"]["holderIdentity"]
        assert holder
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    errors = (process.stderr.read() if process.stderr else b"").decode(errors="replace")
    assert process.returncode == 0, errors
    # A clean stop hands the lease over at once instead of letting it expire.
    assert not kube.get(lease)["spec"].get("holderIdentity")
