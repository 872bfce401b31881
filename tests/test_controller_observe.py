"""What the controller reads back: the Job status (round trip), pods as events, commands; and its work queue."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from controller_support import T0, UID

from vcsat.adapters.controller.commands import command_body, read_command_object
from vcsat.adapters.controller.controller import WorkQueue
from vcsat.adapters.controller.observe import observe_pod
from vcsat.adapters.controller.status import Condition, JobStatus

FULL_STATUS = {
    "state": {"phase": "Running", "reason": "PodFailed", "message": "m", "lastTransitionTime": "2025-01-01T12:00:00Z"},
    "minAvailable": 3,
    "pending": 1,
    "running": 2,
    "retryCount": 1,
    "version": 2,
    "taskStatusCount": {"ps": {"phase": {"Running": 1}}, "worker": {"phase": {"Pending": 1, "Running": 1}}},
    "conditions": [{"status": "Pending", "lastTransitionTime": "2025-01-01T11:00:00Z"}, {"status": "Running"}],
    "controlledResources": {"plugin-ssh": "ssh", "vcsat.io/command": "c1"},
}


def test_status_round_trips_exactly() -> None:
    status = JobStatus.from_dict(FULL_STATUS)
    assert status.to_dict() == FULL_STATUS
    assert status.conditions[1] == Condition("Running", None)


@pytest.mark.parametrize("raw", [None, {}, {"state": "weird", "running": -3, "conditions": [{}]}])
def test_broken_status_reads_as_empty(raw: Any) -> None:
    assert JobStatus.from_dict(raw).phase == ""
    assert JobStatus.from_dict(raw).running == 0


def test_entering_a_phase_keeps_one_history_entry_per_phase() -> None:
    status = JobStatus.from_dict(FULL_STATUS).entering("Pending", T0, reason="r")
    assert [c.status for c in status.conditions] == ["Running", "Pending"]
    assert (status.phase, status.reason, status.last_transition_time) == ("Pending", "r", "2025-01-01T12:00:00Z")


def _pod(phase: str = "Running", **status: Any) -> dict[str, Any]:
    metadata = status.pop("metadata", {})
    return {
        "metadata": {
            "name": "j-worker-1",
            "creationTimestamp": "2025-01-01T11:00:00Z",
            "annotations": {
                "volcano.sh/task-spec": "worker",
                "volcano.sh/task-index": "1",
                "volcano.sh/job-version": "4",
            },
            "ownerReferences": [
                {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": UID, "controller": True}
            ],
            **metadata,
        },
        "status": {"phase": phase, **status},
    }


def _terminated(code: int, finished: str = "2025-01-01T11:30:00Z") -> dict[str, Any]:
    return {
        "name": "main",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": {"exitCode": code, "finishedAt": finished}},
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(_pod(), {"task": "worker", "index": 1, "version": 4, "owned": True, "ready": True}, id="running"),
        pytest.param(
            _pod("Failed", containerStatuses=[_terminated(0), {**_terminated(137), "name": "side"}]),
            {"exit_code": 137, "since": "2025-01-01T11:30:00+00:00", "disrupted": False},
            id="failed-first-non-zero-exit-code",
        ),
        pytest.param(_pod("Failed", reason="Evicted"), {"disrupted": True}, id="kubelet-eviction"),
        pytest.param(
            _pod(conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]),
            {"disrupted": True},
            id="preempted",
        ),
        pytest.param(
            _pod(
                metadata={
                    "deletionTimestamp": "2025-01-01T11:59:00Z",
                    "annotations": {"volcano.sh/controller-out-of-sync": "true"},
                }
            ),
            {"deleting": True, "out_of_sync": True, "version": None},
            id="marked-and-deleting",
        ),
        pytest.param(_pod(metadata={"ownerReferences": []}), {"owned": False}, id="not-ours"),
        pytest.param(
            _pod(containerStatuses=[{"name": "main", "ready": False, "restartCount": 2}]),
            {"ready": False, "restarts": 2},
            id="not-ready-restarted",
        ),
        pytest.param(_pod("Pending"), {"since": "2025-01-01T11:00:00+00:00"}, id="pending-since-creation"),
    ],
)
def test_observe_pod(obj: dict[str, Any], expected: dict[str, Any]) -> None:
    observed = observe_pod(obj, job_uid=UID)
    for key, value in expected.items():
        got = getattr(observed, key)
        assert (got.isoformat() if key == "since" else got) == value, key


@pytest.mark.parametrize(
    ("target", "job", "queue"),
    [
        ({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": "u"}, True, False),
        ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": "q", "uid": "u"}, False, True),
        ({"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u"}, False, False),
    ],
)
def test_command_objects_round_trip(target: dict[str, Any], job: bool, queue: bool) -> None:
    owner = {
        "apiVersion": target["apiVersion"],
        "kind": target["kind"],
        "metadata": {"name": target["name"], "uid": "u"},
    }
    body = command_body(owner, "AbortJob", namespace="ns")
    assert body["metadata"]["generateName"] == f"{target['name']}-abortjob-"
    assert body["metadata"]["ownerReferences"] == [body["target"]] and body["target"]["controller"] is True
    read = read_command_object({**body, "metadata": {**body["metadata"], "name": "x", "uid": "c1"}})
    assert read is not None and read.action == "AbortJob" and read.uid == "c1" and read.target_name == target["name"]
    assert (read.for_job, read.for_queue) == (job, queue)
    assert read_command_object({"metadata": {"name": "x"}, "action": "AbortJob"}) is None


def test_work_queue_dedupes_delays_and_never_hands_out_a_key_twice() -> None:
    queue = WorkQueue()
    queue.add(("ns", "a"), 60.0)
    queue.add(("ns", "a"))  # an earlier add wins
    queue.add(("ns", "a"))
    assert len(queue) == 1
    assert queue.get() == ("ns", "a")
    queue.add(("ns", "a"))  # while a worker holds it: comes back after done()
    assert len(queue) == 0
    taken: list[Any] = []
    worker = threading.Thread(target=lambda: taken.append(queue.get()))
    worker.start()
    queue.done(("ns", "a"))
    worker.join(10)
    assert taken == [("ns", "a")]
    queue.close()
    assert queue.get() is None


def test_work_queue_holds_a_delayed_key_until_an_earlier_add() -> None:
    queue = WorkQueue()
    queue.add(("ns", "later"), 3600.0)
    taken: list[Any] = []
    worker = threading.Thread(target=lambda: taken.append(queue.get()))
    worker.start()
    worker.join(0.2)
    assert worker.is_alive() and taken == []  # not due yet
    queue.add(("ns", "later"))
    worker.join(10)
    assert taken == [("ns", "later")]
