"""The admission time survives a restart: the scheduler writes an ``Inqueued`` condition when it
admits a PodGroup, a new scheduler process reads it back, times the group out by its clock, and the
cycle it dumps replays offline to the same verdict."""

from __future__ import annotations

import time
from pathlib import Path

from scheduler_support import Bubble, wait_cached, wait_until

from vcsat.adapters.convert.clock import INQUEUED_CONDITION, parse_clock, wall_clock
from vcsat.adapters.convert.instance_file import read_snapshot
from vcsat.adapters.live.scheduler import Scheduler
from vcsat.solver import solve


def _inqueued(bubble: Bubble, name: str) -> dict[str, str] | None:
    status = bubble.get_podgroup(name).get("status") or {}
    return next((c for c in status.get("conditions") or () if c.get("type") == INQUEUED_CONDITION), None)


def test_the_inqueue_time_survives_a_restart_and_replays(bubble: Bubble, tmp_path: Path) -> None:
    node = bubble.node("n", cpu="4")
    # Another scheduler's pod holds half the node: big (3 cpu) is admitted at overcommit 1.5 but fits
    # nowhere now, so it waits Inqueue with nothing placed.
    bubble.pod("hog", cpu="2", scheduler="someone-else", node_name=node)
    bubble.podgroup("big", 1)
    bubble.pod("big-0", cpu="3", group="big")
    first = Scheduler(bubble.kube, policy=bubble.policy(overcommit_factor=1.5))
    first.start()
    try:
        wait_cached(first, bubble.namespace, pods=["hog", "big-0"], podgroups=["big"])
        result = first.run_cycle()
        assert result.report is not None and result.report.bound == []
    finally:
        first.close()
    condition = wait_until(lambda: _inqueued(bubble, "big"), "big's Inqueued condition is written")
    assert bubble.get_podgroup("big")["status"]["phase"] == "Inqueue"
    admitted_at = parse_clock(condition["lastTransitionTime"])
    wait_until(lambda: wall_clock() > admitted_at + 0.01, "the clock passes the (tiny) timeout")

    # A new process, with a timeout already past: it reads the admission time from the cluster.
    second = Scheduler(
        bubble.kube, policy=bubble.policy(overcommit_factor=1.5, inqueue_timeout_s=0.01), dump_dir=tmp_path
    )
    second.start()
    try:
        wait_cached(second, bubble.namespace, pods=["hog", "big-0"], podgroups=["big"])
        result = second.run_cycle()
    finally:
        second.close()
    outcome = next(o for o in result.decision.podgroups if o.podgroup == f"{bubble.namespace}/big")
    assert (outcome.phase, outcome.reason) == ("Pending", "InqueueTimeout")
    wait_until(lambda: bubble.get_podgroup("big")["status"]["phase"] == "Pending", "big goes back to Pending")
    assert _inqueued(bubble, "big") is None

    (dumped,) = sorted(tmp_path.glob("cycle-*.instance.json"))
    replayed = read_snapshot(dumped, scheduler_name=bubble.scheduler_name)
    assert replayed.now is not None and replayed.now >= admitted_at
    assert solve(replayed, second.policy).podgroups == result.decision.podgroups


def test_an_idle_scheduler_is_due_again_when_an_admission_times_out(bubble: Bubble) -> None:
    node = bubble.node("n", cpu="4")
    bubble.pod("hog", cpu="2", scheduler="someone-else", node_name=node)
    bubble.podgroup("big", 1)
    bubble.pod("big-0", cpu="3", group="big")
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(overcommit_factor=1.5, inqueue_timeout_s=3600))
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["hog", "big-0"], podgroups=["big"])
        # Cycles until one sees big Inqueue with its admission time: from then on the loop knows
        # when the clock alone will change the decision.
        wait_until(
            lambda: scheduler.run_cycle() and "inqueue-timeout" in scheduler.deadlines(),
            "the admission's timeout is a deadline of the loop",
        )
        admitted_at = parse_clock(
            wait_until(lambda: _inqueued(bubble, "big"), "the Inqueued condition")["lastTransitionTime"]
        )
        left = scheduler.deadlines()["inqueue-timeout"] - time.monotonic()
        assert abs(left - (admitted_at + 3600 - wall_clock())) <= 1.0, "due when the hour since admission ends"
    finally:
        scheduler.close()
