"""The Job lifecycle as a table: (job, status, what is observed) → (next status, what to do).

Each row is one step of :func:`vcsat.adapters.controller.state.decide`, a pure function, so the
whole of Volcano's state machine (and where vcsat departs from it) is pinned down here without
a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest
from controller_support import T0, job, pod, task
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.controller.jobspec import JobSpec
from vcsat.adapters.controller.observe import Command, Observation, ObservedPod
from vcsat.adapters.controller.state import COMMAND_RESOURCE, RESTART_RESOURCE, Plan, decide
from vcsat.adapters.controller.status import JobStatus

RESTART_ON_FAILURE = [{"event": "PodFailed", "action": "RestartJob"}]


def status(phase: str, **fields: Any) -> JobStatus:
    return replace(JobStatus(min_available=fields.pop("min_available", 2)), phase=phase, **fields)


@dataclass
class Step:
    job: JobSpec
    status: JobStatus
    pods: tuple[ObservedPod, ...] = ()
    group: str | None = "Running"
    command: Command | None = None
    now_s: float = 0.0
    wait: bool = True
    expect: dict[str, Any] = field(default_factory=dict)

    def run(self) -> Plan:
        seen = Observation(self.pods, self.group, self.command, T0 + timedelta(seconds=self.now_s))
        return decide(self.job, self.status, seen, wait_for_admission=self.wait)


def _check(plan: Plan, expect: dict[str, Any]) -> None:
    for key, wanted in expect.items():
        if key in ("create", "delete"):
            got: Any = plan.create_pods if key == "create" else plan.delete_pods
            assert set(got) == set(wanted), key
        elif key in (
            "phase",
            "retry_count",
            "version",
            "reason",
            "running",
            "pending",
            "succeeded",
            "failed",
            "terminating",
        ):
            assert getattr(plan.status, key) == wanted, key
        elif key == "events":
            assert [e.reason for e in plan.events] == wanted
        elif key == "marker":
            assert plan.status.controlled_resources.get(RESTART_RESOURCE) == wanted
        else:
            assert getattr(plan, key) == wanted, key


W = "train-worker"
STEPS = [
    # --- starting -----------------------------------------------------------------------------
    pytest.param(
        Step(job(), JobStatus(), group=None, expect={"phase": "Pending", "create": [], "podgroup": "ensure"}),
        id="new-job-pending-podgroup-first",
    ),
    pytest.param(
        Step(job(), status("Pending"), group="", expect={"phase": "Pending", "create": []}),
        id="pods-wait-for-admission",
    ),
    pytest.param(
        Step(job(), status("Pending"), group="Pending", expect={"phase": "Pending", "create": []}),
        id="pods-wait-while-podgroup-pending",
    ),
    pytest.param(
        Step(job(), status("Pending"), group="Inqueue", expect={"create": [("worker", 0), ("worker", 1)]}),
        id="admitted-creates-every-pod",
    ),
    pytest.param(
        # A finished pod deleted before the job completed (the taint eviction of a node that went
        # NotReady deletes finished pods too): its PodGroup, all of whose pods left are finished,
        # reads Completed, which admits as any phase but Pending does in Volcano; made again.
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0, "Succeeded"), pod("worker", 1, "Succeeded", gone=True)),
            group="Completed",
            expect={"phase": "Running", "succeeded": 1, "create": [("worker", 1)]},
        ),
        id="finished-pod-deleted-is-made-again-under-a-completed-podgroup",
    ),
    pytest.param(
        Step(job(), status("Pending"), group=None, wait=False, expect={"create": [("worker", 0), ("worker", 1)]}),
        id="no-wait-for-admission",
    ),
    pytest.param(
        Step(job(), status("Pending"), pods=(pod("worker", 0),), group="Inqueue", expect={"create": [("worker", 1)]}),
        id="creates-only-what-is-missing",
    ),
    pytest.param(
        Step(
            job(),
            status("Pending"),
            pods=(pod("worker", 0), pod("worker", 1)),
            expect={"phase": "Running", "running": 2, "events": ["Running"]},
        ),
        id="gang-running",
    ),
    pytest.param(
        Step(
            job(tasks=[task("worker", 3)], minAvailable=2),
            status("Pending"),
            pods=(pod("worker", 0), pod("worker", 1), pod("worker", 2, "Pending")),
            expect={"phase": "Running"},
        ),
        id="running-at-minAvailable",
    ),
    # --- finishing ----------------------------------------------------------------------------
    pytest.param(
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0, "Succeeded"), pod("worker", 1, "Succeeded")),
            expect={"phase": "Completed", "succeeded": 2, "podgroup": "delete", "job_objects": "delete"},
        ),
        id="all-succeeded-completed",
    ),
    pytest.param(
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0, "Failed", exit_code=1), pod("worker", 1)),
            expect={"phase": "Running", "failed": 1, "running": 1, "delete": []},
        ),
        id="failure-without-policy-is-counted",
    ),
    pytest.param(
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0, "Failed", exit_code=1), pod("worker", 1, "Succeeded")),
            expect={"phase": "Failed", "reason": "TaskFailed"},
        ),
        id="all-done-with-a-failure-failed",
    ),
    pytest.param(
        Step(
            job(tasks=[task("worker", 3)], minSuccess=2),
            status("Running"),
            pods=(pod("worker", 0, "Succeeded"), pod("worker", 1, "Succeeded"), pod("worker", 2)),
            expect={"phase": "Completed", "reason": "MinSuccess"},
        ),
        id="minSuccess-completes-early",
    ),
    pytest.param(
        Step(
            job(tasks=[task("worker", 3)], minSuccess=2),
            status("Completed", succeeded=2, running=1),
            pods=(pod("worker", 0, "Succeeded"), pod("worker", 1, "Succeeded"), pod("worker", 2)),
            expect={"phase": "Completed", "delete": [f"{W}-2"], "version": 0},
        ),
        id="finished-job-removes-what-still-runs",
    ),
    pytest.param(
        Step(
            job(tasks=[task("worker", 3)], minAvailable=2),
            status("Running"),
            pods=(pod("worker", 0, "Pending"), pod("worker", 1, "Pending"), pod("worker", 2)),
            expect={"phase": "Pending"},
        ),
        id="running-back-to-pending",
    ),
    # --- restarts -----------------------------------------------------------------------------
    pytest.param(
        Step(
            job(policies=RESTART_ON_FAILURE),
            status("Running"),
            pods=(pod("worker", 0, "Failed", exit_code=1), pod("worker", 1)),
            expect={
                "phase": "Restarting",
                "reason": "PodFailed",
                "retry_count": 1,
                "version": 1,
                "delete": [f"{W}-0", f"{W}-1"],
                "terminating": 2,
                "podgroup": "delete",
                "job_objects": "keep",
                "events": ["RestartJob", "Restarting"],
                "marker": "job",
            },
        ),
        id="restart-job-on-failure",
    ),
    pytest.param(
        Step(
            job(policies=RESTART_ON_FAILURE),
            status(
                "Restarting",
                reason="PodFailed",
                retry_count=1,
                version=1,
                controlled_resources={RESTART_RESOURCE: "job"},
            ),
            pods=(pod("worker", 0, "Failed", version=0), pod("worker", 1, version=0)),
            group=None,
            expect={"phase": "Restarting", "retry_count": 1, "delete": [f"{W}-0", f"{W}-1"], "terminating": 2},
        ),
        id="interrupted-restart-job-is-finished",
    ),
    pytest.param(
        Step(
            job(tasks=[task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartPod"}])]),
            status(
                "Restarting", reason="PodFailed", retry_count=1, controlled_resources={RESTART_RESOURCE: f"pods:{W}-0"}
            ),
            pods=(pod("worker", 0, "Failed"), pod("worker", 1)),
            expect={"phase": "Restarting", "retry_count": 1, "delete": [f"{W}-0"], "events": []},
        ),
        id="interrupted-restart-pod-is-finished-once",
    ),
    pytest.param(
        Step(
            job(policies=RESTART_ON_FAILURE),
            status(
                "Restarting", reason="PodFailed", retry_count=1, controlled_resources={RESTART_RESOURCE: f"pods:{W}-0"}
            ),
            group=None,
            expect={"phase": "Pending", "marker": None},
        ),
        id="restart-record-cleared-on-pending",
    ),
    pytest.param(
        Step(
            job(),
            status(
                "Restarting",
                reason="ResumeJob",
                version=2,
                controlled_resources={RESTART_RESOURCE: "job-keep-finished"},
            ),
            pods=(pod("worker", 0, "Succeeded", version=1),),
            group=None,
            expect={"phase": "Pending", "delete": [], "succeeded": 1},
        ),
        id="resume-keeps-finished-pods",
    ),
    pytest.param(
        Step(
            job(policies=RESTART_ON_FAILURE),
            status("Running", retry_count=2),
            pods=(pod("worker", 0, "Failed"), pod("worker", 1, "Succeeded"), pod("worker", 2, "Running")),
            expect={"retry_count": 3, "delete": [f"{W}-2"], "failed": 1, "succeeded": 1},
        ),
        id="last-retry-keeps-finished-pods",
    ),
    pytest.param(
        Step(
            job(policies=RESTART_ON_FAILURE),
            status("Restarting", reason="PodFailed", retry_count=1),
            group=None,
            expect={"phase": "Pending", "podgroup": "ensure", "create": []},
        ),
        id="restarting-to-pending",
    ),
    pytest.param(
        Step(
            job(policies=RESTART_ON_FAILURE),
            status("Restarting", reason="PodFailed", retry_count=1),
            pods=(pod("worker", 0, deleting=True, out_of_sync=True), pod("worker", 1, deleting=True, out_of_sync=True)),
            group=None,
            expect={"phase": "Restarting", "terminating": 2},
        ),
        id="restarting-waits-for-old-pods",
    ),
    pytest.param(
        Step(
            job(policies=RESTART_ON_FAILURE),
            status("Restarting", reason="PodFailed", retry_count=3),
            group=None,
            expect={"phase": "Failed", "reason": "RetryLimitReached"},
        ),
        id="retries-exhausted-failed",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodEvicted", "action": "RestartJob"}]),
            status("Running", retry_count=2),
            pods=(pod("worker", 0, deleting=True), pod("worker", 1)),
            expect={"phase": "Restarting", "reason": "PodEvicted", "retry_count": 2, "version": 1},
        ),
        id="eviction-restarts-without-burning-a-retry",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodEvicted", "action": "RestartJob"}]),
            status("Restarting", reason="PodEvicted", retry_count=3),
            group=None,
            expect={"phase": "Pending"},
        ),
        id="eviction-restart-never-exhausts-retries",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodEvicted", "action": "RestartJob"}]),
            status("Running"),
            pods=(pod("worker", 0, gone=True), pod("worker", 1)),
            expect={"phase": "Restarting", "reason": "PodEvicted"},
        ),
        id="deleted-pod-tombstone-is-an-eviction",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodEvicted", "action": "RestartJob"}]),
            status("Running"),
            pods=(pod("worker", 0, "Failed", disrupted=True), pod("worker", 1)),
            expect={"phase": "Restarting", "reason": "PodEvicted"},
        ),
        id="kubelet-eviction-is-no-failure",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodEvicted", "action": "RestartJob"}]),
            status("Running"),
            pods=(pod("worker", 0, deleting=True, out_of_sync=True), pod("worker", 1)),
            expect={"phase": "Running", "terminating": 1, "delete": []},
        ),
        id="own-deletion-is-no-eviction",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodEvicted", "action": "RestartJob"}]),
            status("Running"),
            pods=(pod("worker", 0), pod("worker", 1), pod("worker", 2, deleting=True)),
            expect={"phase": "Running", "version": 0, "terminating": 1},
        ),
        id="scaled-away-pod-going-is-no-eviction",
    ),
    pytest.param(
        Step(
            job(policies=RESTART_ON_FAILURE),
            status("Running", version=1),
            pods=(pod("worker", 0, "Failed", version=0), pod("worker", 1, version=1)),
            expect={"phase": "Running", "failed": 1},
        ),
        id="older-version-failure-is-no-event",
    ),
    pytest.param(
        Step(
            job(
                tasks=[task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartPod"}])],
                policies=RESTART_ON_FAILURE,
            ),
            status("Running"),
            pods=(pod("worker", 0, "Failed"), pod("worker", 1)),
            expect={"phase": "Restarting", "retry_count": 1, "version": 0, "delete": [f"{W}-0"], "podgroup": "ensure"},
        ),
        id="task-policy-before-job-policy-restart-pod",
    ),
    pytest.param(
        Step(
            job(
                tasks=[
                    task(
                        "worker",
                        4,
                        partitionPolicy={"totalPartitions": 2, "partitionSize": 2},
                        policies=[{"event": "PodFailed", "action": "RestartPartition"}],
                    )
                ]
            ),
            status("Running"),
            pods=(pod("worker", 0), pod("worker", 1), pod("worker", 2, "Failed"), pod("worker", 3)),
            expect={"phase": "Restarting", "retry_count": 1, "delete": [f"{W}-2", f"{W}-3"], "running": 2},
        ),
        id="restart-partition-restarts-the-failed-pods-partition",
    ),
    pytest.param(
        Step(
            job(tasks=[task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartPartition"}])]),
            status("Running"),
            pods=(pod("worker", 0, "Failed"), pod("worker", 1)),
            expect={"phase": "Restarting", "delete": [f"{W}-0"], "running": 1},
        ),
        id="restart-partition-without-partitions-restarts-the-pod",
    ),
    pytest.param(
        Step(
            job(tasks=[task("ps", 1), task("worker", 2)], policies=[{"event": "PodFailed", "action": "RestartTask"}]),
            status("Running", min_available=3),
            pods=(pod("ps", 0), pod("worker", 0, "Failed"), pod("worker", 1)),
            expect={"phase": "Restarting", "delete": [f"{W}-0", f"{W}-1"], "running": 1},
        ),
        id="restart-task",
    ),
    pytest.param(
        Step(
            job(policies=[{"exitCode": 3, "action": "TerminateJob"}]),
            status("Running"),
            pods=(pod("worker", 0, "Failed", exit_code=3), pod("worker", 1)),
            expect={"phase": "Terminating", "version": 1, "delete": [f"{W}-1"], "job_objects": "delete"},
        ),
        id="exit-code-policy",
    ),
    pytest.param(
        Step(
            job(policies=[{"exitCode": 3, "action": "TerminateJob"}]),
            status("Running"),
            pods=(pod("worker", 0, "Failed", exit_code=1), pod("worker", 1)),
            expect={"phase": "Running"},
        ),
        id="other-exit-code-no-policy",
    ),
    pytest.param(
        Step(
            job(
                tasks=[task("master", 1), task("worker", 2)],
                policies=[{"event": "TaskCompleted", "action": "CompleteJob"}],
            ),
            status("Running", min_available=3),
            pods=(pod("master", 0, "Succeeded"), pod("worker", 0), pod("worker", 1)),
            expect={"phase": "Completing", "delete": [f"{W}-0", f"{W}-1"]},
        ),
        id="task-completed-completes-job",
    ),
    pytest.param(
        Step(
            job(),
            status("Completing", version=1),
            pods=(pod("worker", 0, "Succeeded"),),
            group=None,
            expect={"phase": "Completed", "version": 1},
        ),
        id="completing-settles",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "10m"}], minAvailable=1),
            status("Running"),
            pods=(pod("worker", 0, "Pending"), pod("worker", 1)),
            now_s=120,
            expect={"phase": "Running", "requeue_after_s": 480.0},
        ),
        id="pending-timeout-not-yet",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "10m"}]),
            status("Running"),
            pods=(pod("worker", 0, "Pending"), pod("worker", 1)),
            now_s=600,
            expect={"phase": "Aborting", "trigger": "PodPending"},
        ),
        id="pending-timeout-due",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "PodPending", "action": "AbortJob"}], minAvailable=1),
            status("Running"),
            pods=(pod("worker", 0, "Pending"), pod("worker", 1)),
            now_s=10**6,
            expect={"phase": "Running"},
        ),
        id="pending-needs-a-timeout",
    ),
    pytest.param(
        Step(
            job(policies=[{"event": "Unknown", "action": "RestartJob"}]),
            status("Running"),
            pods=(pod("worker", 0), pod("worker", 1, "Pending")),
            group="Unknown",
            expect={"phase": "Restarting", "trigger": "Unknown"},
        ),
        id="podgroup-unknown",
    ),
    # --- commands -----------------------------------------------------------------------------
    pytest.param(
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0, "Succeeded"), pod("worker", 1)),
            command=Command("c1", "AbortJob"),
            expect={
                "phase": "Aborting",
                "version": 1,
                "delete": [f"{W}-1"],
                "succeeded": 1,
                "events": ["CommandIssued", "Aborting"],
            },
        ),
        id="suspend-aborts",
    ),
    pytest.param(
        Step(
            job(),
            status("Aborting", version=1),
            pods=(pod("worker", 1, deleting=True, out_of_sync=True),),
            group=None,
            expect={"phase": "Aborting", "terminating": 1},
        ),
        id="aborting-waits",
    ),
    pytest.param(
        Step(
            job(),
            status("Aborting", version=1),
            pods=(pod("worker", 0, "Succeeded"),),
            group=None,
            expect={"phase": "Aborted", "job_objects": "delete"},
        ),
        id="aborting-settles",
    ),
    pytest.param(
        Step(
            job(),
            status("Aborted", version=1, retry_count=3, controlled_resources={COMMAND_RESOURCE: "c1"}),
            pods=(pod("worker", 0, "Succeeded"),),
            group=None,
            command=Command("c2", "ResumeJob"),
            expect={"phase": "Restarting", "reason": "ResumeJob", "retry_count": 3, "version": 2},
        ),
        id="resume-restarts-without-retry",
    ),
    pytest.param(
        Step(job(), status("Restarting", reason="ResumeJob", retry_count=3), group=None, expect={"phase": "Pending"}),
        id="resumed-restart-never-exhausts-retries",
    ),
    pytest.param(
        Step(
            job(),
            status("Aborted", controlled_resources={COMMAND_RESOURCE: "c1"}),
            group=None,
            command=Command("c1", "ResumeJob"),
            expect={"phase": "Aborted", "events": []},
        ),
        id="command-applied-once",
    ),
    pytest.param(
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0), pod("worker", 1)),
            command=Command("c3", "Explode"),
            expect={"phase": "Running", "events": ["CommandRejected"]},
        ),
        id="unknown-command-rejected",
    ),
    pytest.param(
        Step(
            job(),
            status("Completed"),
            pods=(pod("worker", 0, "Succeeded"),),
            group=None,
            command=Command("c4", "ResumeJob"),
            expect={"phase": "Completed"},
        ),
        id="finished-job-ignores-resume",
    ),
    # --- housekeeping -------------------------------------------------------------------------
    pytest.param(
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0), pod("worker", 1, owned=False)),
            expect={"delete": [f"{W}-1"], "running": 1},
        ),
        id="pod-of-an-earlier-job-removed",
    ),
    pytest.param(
        Step(
            job(),
            status("Pending", version=2),
            pods=(pod("worker", 0, version=1), pod("worker", 1, "Failed", version=1)),
            group="Inqueue",
            expect={"delete": [f"{W}-0"], "create": [], "failed": 1},
        ),
        id="live-pod-of-older-run-removed",
    ),
    pytest.param(
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0), pod("worker", 1), pod("worker", 2)),
            expect={"delete": [f"{W}-2"]},
        ),
        id="scaled-down",
    ),
    pytest.param(
        Step(
            job(),
            status("Running"),
            pods=(pod("worker", 0), pod("worker", 1, out_of_sync=True)),
            expect={"delete": [f"{W}-1"]},
        ),
        id="unfinished-kill-finished",
    ),
    pytest.param(
        Step(
            job(tasks=[task("ps", 1), task("worker", 2, dependsOn={"name": ["ps"]})]),
            status("Pending", min_available=3),
            group="Inqueue",
            expect={"create": [("ps", 0)]},
        ),
        id="depends-on-waits",
    ),
    pytest.param(
        Step(
            job(tasks=[task("ps", 1), task("worker", 2, dependsOn={"name": ["ps"]})]),
            status("Pending", min_available=3),
            pods=(pod("ps", 0),),
            group="Inqueue",
            expect={"create": [("worker", 0), ("worker", 1)]},
        ),
        id="depends-on-ready",
    ),
    pytest.param(
        Step(
            job(tasks=[task("ps", 1), task("worker", 2, dependsOn={"name": ["ps"]})]),
            status("Pending", min_available=3),
            pods=(pod("ps", 0, ready=False),),
            group="Inqueue",
            expect={"create": []},
        ),
        id="depends-on-needs-ready",
    ),
    pytest.param(
        Step(
            job(ttlSecondsAfterFinished=60),
            status("Completed", last_transition_time="2025-01-01T12:00:00Z"),
            group=None,
            now_s=30,
            expect={"delete_job": False, "requeue_after_s": 30.0},
        ),
        id="ttl-not-yet",
    ),
    pytest.param(
        Step(
            job(ttlSecondsAfterFinished=60),
            status("Failed", last_transition_time="2025-01-01T12:00:00Z"),
            group=None,
            now_s=61,
            expect={"delete_job": True},
        ),
        id="ttl-expired",
    ),
    pytest.param(
        Step(
            job(),
            status("Pending", reason="InvalidSpec", message="spec.tasks: ..."),
            group=None,
            expect={"phase": "Pending", "reason": ""},
        ),
        id="fixed-spec-clears-invalid",
    ),
]


@pytest.mark.parametrize("step", STEPS)
def test_lifecycle_step(step: Step) -> None:
    _check(step.run(), step.expect)


def test_full_restart_cycle_until_failed() -> None:
    """maxRetry 2: run, fail, restart, run, fail, Failed; the failed pod of the last run is kept."""
    spec = job(policies=RESTART_ON_FAILURE, maxRetry=2)
    phases = []
    current = JobStatus()

    def step(pods: tuple[ObservedPod, ...], group: str | None) -> Plan:
        nonlocal current
        plan = decide(spec, current, Observation(pods, group, None, T0))
        current = plan.status
        phases.append(current.phase)
        return plan

    step((), None)
    assert step((), "Inqueue").create_pods == (("worker", 0), ("worker", 1))
    step((pod("worker", 0), pod("worker", 1)), "Running")
    step((pod("worker", 0, "Failed"), pod("worker", 1)), "Running")
    step((), None)
    assert step((), "Inqueue").create_pods == (("worker", 0), ("worker", 1))
    step((pod("worker", 0, version=1), pod("worker", 1, version=1)), "Running")
    last = step((pod("worker", 0, "Failed", version=1), pod("worker", 1, version=1)), "Running")
    assert last.delete_pods == ("train-worker-1",)
    step((pod("worker", 0, "Failed", version=1),), None)
    assert phases == [
        "Pending",
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Pending",
        "Running",
        "Restarting",
        "Failed",
    ]
    assert current.retry_count == 2 and current.version == 2
    assert [c.status for c in current.conditions] == ["Pending", "Running", "Restarting", "Failed"]


# --- properties ---------------------------------------------------------------------------------

_PHASES = st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"])


@st.composite
def _pods(draw: st.DrawFn) -> tuple[ObservedPod, ...]:
    indices = draw(st.lists(st.integers(0, 4), unique=True, max_size=5))
    return tuple(
        pod(
            "worker",
            index,
            draw(_PHASES),
            version=draw(st.integers(0, 2)),
            deleting=draw(st.booleans()),
            out_of_sync=draw(st.booleans()),
            owned=draw(st.booleans()),
        )
        for index in indices
    )


@given(
    pods=_pods(),
    phase=st.sampled_from(["Pending", "Running", "Restarting", "Aborting", "Completed"]),
    version=st.integers(0, 2),
    group=st.sampled_from([None, "", "Inqueue", "Running"]),
    policies=st.sampled_from([[], RESTART_ON_FAILURE, [{"event": "*", "action": "RestartPod"}]]),
)
@settings(max_examples=150, deadline=None)
def test_every_step_is_consistent(
    pods: tuple[ObservedPod, ...], phase: str, version: int, group: str | None, policies: list[dict[str, Any]]
) -> None:
    spec = job(tasks=[task("worker", 3)], policies=policies)
    plan = decide(spec, status(phase, version=version, min_available=3), Observation(pods, group, None, T0))
    names = {p.name for p in pods}
    counted = plan.status
    # Every pod of the job is counted once: by its phase, or as terminating. A pod of the same name
    # that the job does not own (a leftover of an earlier Job) is not counted, and it is deleted.
    total = (
        counted.pending + counted.running + counted.succeeded + counted.failed + counted.unknown + counted.terminating
    )
    assert total == sum(p.owned for p in pods)
    assert {p.name for p in pods if not p.owned} <= set(plan.delete_pods)
    # Never a pod created under a name that exists, never created and deleted at once.
    assert not {f"train-{t}-{i}" for t, i in plan.create_pods} & names
    assert set(plan.delete_pods) <= names
    # The version only ever grows, by at most one per step; retries likewise.
    assert counted.version - version in (0, 1)
    assert counted.retry_count in (0, 1)


@given(pods=_pods(), group=st.sampled_from([None, "Inqueue", "Running"]))
@settings(max_examples=100, deadline=None)
def test_kill_is_not_repeated(pods: tuple[ObservedPod, ...], group: str | None) -> None:
    """After a RestartJob is decided and carried out, the next step does not restart again."""
    spec = job(tasks=[task("worker", 3)], policies=RESTART_ON_FAILURE, maxRetry=10)
    failing = (*(p for p in pods if p.index != 0), pod("worker", 0, "Failed"))
    first = decide(spec, status("Running", min_available=3), Observation(failing, group, None, T0))
    assert first.status.phase == "Restarting"
    deleted = set(first.delete_pods)
    after = tuple(replace(p, deleting=True, out_of_sync=True) if p.name in deleted else p for p in failing)
    second = decide(spec, first.status, Observation(after, None, None, T0))
    assert second.status.version == first.status.version
    assert second.status.retry_count == first.status.retry_count


@pytest.mark.parametrize(
    ("ran", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=59.6), "1m0s"),
        (timedelta(minutes=2, seconds=5), "2m5s"),
        (timedelta(hours=26, seconds=1), "26h0m1s"),
    ],
)
def test_running_duration_is_written_once_when_the_job_finishes(ran: timedelta, text: str) -> None:
    running = JobStatus().entering("Pending", T0).entering("Running", T0)
    assert running.running_duration is None and "runningDuration" not in running.to_dict()
    finished = running.entering("Completed", T0 + ran)
    assert finished.to_dict()["runningDuration"] == text
    assert JobStatus.from_dict(finished.to_dict()) == finished


def test_a_job_that_never_ran_has_no_running_duration() -> None:
    failed = JobStatus().entering("Pending", T0).entering("Failed", T0 + timedelta(minutes=5))
    assert failed.running_duration is None and "runningDuration" not in failed.to_dict()


@pytest.mark.parametrize(
    ("policies", "updated", "expect"),
    [
        ([{"event": "JobUpdated", "action": "RestartJob"}], True, {"phase": "Restarting", "retry_count": 0}),
        ([{"event": "JobUpdated", "action": "AbortJob"}], True, {"phase": "Aborting"}),
        ([{"event": "JobUpdated", "action": "RestartJob"}], False, {"phase": "Running"}),
        ([], True, {"phase": "Running"}),
    ],
    ids=["restart-without-a-retry", "abort", "no-update-no-event", "no-policy-plain-sync"],
)
def test_job_updated_maps_to_its_policy(policies: list[dict[str, Any]], updated: bool, expect: dict[str, Any]) -> None:
    spec = job(tasks=[task("worker", 2)], policies=policies)
    running = (pod("worker", 0), pod("worker", 1))
    seen = Observation(running, "Running", None, T0, job_updated=updated)
    plan = decide(spec, status("Running", running=2), seen, wait_for_admission=True)
    _check(plan, expect)
