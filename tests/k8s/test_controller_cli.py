"""``vcsat job`` and ``vcsat queue`` against the real API server (and, for suspend/resume, the controller)."""

from __future__ import annotations

import contextlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from controller_harness import Jobs, StandInScheduler, running_controller, uids
from controlplane import ControlPlane
from scheduler_support import (  # kwok_control_plane: the fixture control_plane, this module's own
    Bubble,
    kwok_control_plane,  # noqa: F401
    wait_until,
)

from vcsat.adapters.cli.app import main
from vcsat.adapters.kube.client import ApiError, Kube


@pytest.fixture
def vcsat(control_plane: ControlPlane, k8s_namespace: str) -> Any:
    """Runs ``vcsat ARGS --kubeconfig ...`` (with ``-n`` the test's namespace where it applies)."""

    def run(*args: str, namespaced: bool = True) -> Result:
        extra = ["--kubeconfig", str(control_plane.kubeconfig)]
        if namespaced:
            extra += ["-n", k8s_namespace]
        return CliRunner().invoke(main, [*args, *extra], catch_exceptions=False)

    return run


def _one_line_error(result: Result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_suspend_and_resume_from_the_cli(vcsat: Any, bubble: Bubble, kube: Kube, k8s_client: Any) -> None:
    nodes = [bubble.node("n0", cpu="16", memory="64Gi")]
    jobs = Jobs(kube, bubble)
    with contextlib.ExitStack() as stack:
        stack.enter_context(StandInScheduler(kube, bubble.namespace, nodes, bubble.scheduler_name))
        stack.enter_context(running_controller(k8s_client, bubble.namespace, bubble.scheduler_name))

        result = vcsat(
            "job",
            "run",
            "--name",
            "sleepy",
            "--replicas",
            "2",
            "--requests",
            "cpu=100m,memory=64Mi",
            "--scheduler",
            bubble.scheduler_name,
        )
        assert result.exit_code == 0, result.stderr
        assert result.stdout == "job.batch.volcano.sh/sleepy created\n"
        first = jobs.running_pods("sleepy", 2)
        jobs.wait_phase("sleepy", "Running")
        wait_until(lambda: jobs.status("sleepy").get("running") == 2, "both pods counted")

        listing = vcsat("job", "list")
        assert listing.exit_code == 0, listing.stderr
        header, row = listing.stdout.strip().splitlines()[0], listing.stdout.strip().splitlines()[-1]
        assert header.split()[:4] == ["NAME", "CREATED", "PHASE", "QUEUE"]
        assert row.split()[0] == "sleepy" and row.split()[2:6] == ["Running", "default", "2", "2"]

        suspended = vcsat("job", "suspend", "sleepy")
        assert suspended.exit_code == 0, suspended.stderr
        assert suspended.stdout.startswith("job.batch.volcano.sh/sleepy suspend requested (AbortJob")
        status = jobs.wait_phase("sleepy", "Aborted")
        wait_until(lambda: jobs.pods("sleepy") == {}, "the suspended job's pods are gone")
        assert status["state"]["reason"] == "AbortJob"

        view = vcsat("job", "view", "sleepy", "-o", "json")
        obj = json.loads(view.stdout)
        assert obj["status"]["state"]["phase"] == "Aborted"
        # The request travelled as a bus.volcano.sh Command (as vcctl's), consumed and deleted.
        commands = f"/apis/bus.volcano.sh/v1alpha1/namespaces/{bubble.namespace}/commands"
        wait_until(lambda: kube.get(commands)["items"] == [], "the Command is consumed")
        assert "annotations" not in obj["metadata"] or "vcsat.io/command" not in obj["metadata"]["annotations"]

        resumed = vcsat("job", "resume", "sleepy")
        assert resumed.exit_code == 0, resumed.stderr
        second = jobs.running_pods("sleepy", 2)
        status = jobs.wait_phase("sleepy", "Running")
        assert not set(uids(second).values()) & set(uids(first).values())
        assert status.get("retryCount", 0) == 0  # a resume uses up no retry
        phases = [c["status"] for c in status["conditions"]]
        # The history keeps each phase once, at its latest entry (as Volcano does).
        assert phases == ["Aborting", "Aborted", "Restarting", "Pending", "Running"]

        described = vcsat("job", "view", "sleepy")
        assert described.exit_code == 0, described.stderr
        text = described.stdout
        assert "Phase:" in text and "Running" in text and "History:" in text and "Events:" in text
        assert "CommandIssued" in text

        deleted = vcsat("job", "delete", "sleepy")
        assert deleted.stdout == "job.batch.volcano.sh/sleepy deleted\n"
        wait_until(lambda: jobs.pods("sleepy") == {}, "the deleted job's pods are collected")
    missing = _one_line_error(vcsat("job", "view", "sleepy"))
    assert missing == f"vcsat: Job {bubble.namespace}/sleepy: not found"


def test_job_run_from_a_file(vcsat: Any, bubble: Bubble, kube: Kube, tmp_path: Path) -> None:
    jobs = Jobs(kube, bubble)
    good = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "from-file"},
        "spec": {
            "schedulerName": "vcsat",
            "tasks": [
                {"name": "worker", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
            ],
        },
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(good), encoding="utf-8")
    result = vcsat("job", "run", "-f", str(path))
    assert result.exit_code == 0, result.stderr
    assert jobs.get("from-file")["spec"]["queue"] == "default"

    # Refused by the CRD's CEL rules: one line naming the Job and the field, exit 2.
    bad = {**good, "metadata": {"name": "dup"}}
    bad["spec"] = {**good["spec"], "tasks": good["spec"]["tasks"] * 2}
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    line = _one_line_error(vcsat("job", "run", "-f", str(path)))
    assert line.startswith(f"vcsat: Job {bubble.namespace}/dup: ")
    assert "spec.tasks" in line and "task names must be unique" in line

    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}), encoding="utf-8")
    line = _one_line_error(vcsat("job", "run", "-f", str(path)))
    assert line == f"vcsat: {path}: objects[0]: is a v1 Pod, not a batch.volcano.sh/v1alpha1 Job"

    assert "give either -f FILE or --name NAME" in vcsat("job", "run").stderr
    line = _one_line_error(vcsat("job", "run", "--name", "x", "--requests", "cpu=lots"))
    assert line == "vcsat: --requests: cpu=lots: not a quantity: 'lots'"


def test_queue_commands(vcsat: Any, kube: Kube, k8s_client: Any, k8s_namespace: str) -> None:
    name = f"q-{uuid.uuid4().hex[:8]}"
    created = vcsat("queue", "create", name, "--weight", "3", "--capability", "cpu=8,memory=16Gi", namespaced=False)
    assert created.exit_code == 0, created.stderr
    queue = kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}")
    assert queue["spec"] == {
        "weight": 3,
        "reclaimable": True,
        "capability": {"cpu": "8", "memory": "16Gi"},
        "dequeueStrategy": "traverse",  # the CRD's default, as in Volcano's
    }
    assert queue["status"]["state"] == "Open"

    updated = vcsat("queue", "update", name, "--weight", "5", "--deserved", "cpu=2", namespaced=False)
    assert updated.stdout == f"queue.scheduling.volcano.sh/{name} updated\n", updated.stderr
    spec = kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}")["spec"]
    assert spec["weight"] == 5 and spec["deserved"] == {"cpu": "2"} and spec["capability"]["cpu"] == "8"
    nothing = _one_line_error(vcsat("queue", "update", name, namespaced=False))
    assert nothing.startswith("vcsat: nothing to change")

    listing = vcsat("queue", "list", namespaced=False)
    lines = listing.stdout.strip().splitlines()
    assert lines[0].split() == [
        "NAME", "WEIGHT", "STATE", "PARENT", "CAPABILITY", "DESERVED", "ALLOCATED", "SHARE",
        "INQUEUE", "PENDING", "RUNNING", "AGE",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows[name][1:5] == ["5", "Open", "-", "cpu=8,memory=16Gi"]
    assert "default" in rows

    got = yaml.safe_load(vcsat("queue", "get", name, "-o", "yaml", namespaced=False).stdout)
    assert got["metadata"]["name"] == name and "managedFields" not in got["metadata"]

    # open and close travel as Commands (in `default`, as vcctl's), which the controller consumes.
    with running_controller(k8s_client, "default", "vcsat"):
        _queue_open_close(vcsat, kube, name)


def _queue_open_close(vcsat: Any, kube: Kube, name: str) -> None:
    path = f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}"
    refused = _one_line_error(vcsat("queue", "delete", name, namespaced=False))
    assert refused == f"vcsat: Queue {name}: is Open; close it first (vcsat queue close {name})"
    closed = vcsat("queue", "close", name, namespaced=False).stdout
    assert closed.startswith(f"queue.scheduling.volcano.sh/{name} closed requested (CloseQueue, command {name}-closeq")
    wait_until(lambda: kube.get(path)["status"]["state"] == "Closed", "the queue is closed")
    assert vcsat("queue", "open", name, namespaced=False).exit_code == 0
    wait_until(lambda: kube.get(path)["status"]["state"] == "Open", "the queue is open again")
    vcsat("queue", "close", name, namespaced=False)
    wait_until(lambda: kube.get(path)["status"]["state"] == "Closed", "the queue is closed again")
    commands = "/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands"
    wait_until(lambda: not kube.get(commands)["items"], "every Command is consumed")
    assert vcsat("queue", "delete", name, namespaced=False).exit_code == 0
    with pytest.raises(ApiError):
        kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}")

    assert _one_line_error(vcsat("queue", "delete", "default", namespaced=False)) == (
        "vcsat: Queue default: the default queue cannot be deleted"
    )
    line = _one_line_error(vcsat("queue", "create", "bad", "--capability", "cpu", namespaced=False))
    assert line == "vcsat: --capability: 'cpu' is not name=quantity (like cpu=1,memory=2Gi)"
    line = _one_line_error(vcsat("queue", "create", "Bad_Name", namespaced=False))
    assert line.startswith("vcsat: Queue Bad_Name: ")
