"""While a decision's writes are still going out, the live scheduler does not re-solve the cluster
on the period, yet acts at once on a change, and a restart in the middle loses nothing.

A slow API server may take minutes over the PodGroup statuses of a whole cluster; a cycle repeated
meanwhile would decide the same and write only what is already queued. Here the PodGroup status
write is held at a gate (the API server answers everything else), so "still being applied" lasts
as long as the test wants. Our own status writes, echoed back by the watch, are not changes that
wake the loop either: Volcano's PodGroup CRD has no status subresource, so each bumps the group's
``metadata.generation``. Nothing here measures time: the loop counts its own idle periods, and
every wait has a generous deadline only so that a broken scheduler fails instead of hanging.
"""

from __future__ import annotations

import threading
from typing import Any

from scheduler_support import (
    WAIT_S,
    Bubble,
    own_control_plane,  # noqa: F401 (the fixture control_plane: this module's own)
    running_scheduler,
    wait_until,
)

from vcsat.adapters.kube.client import ApiError
from vcsat.adapters.live.scheduler import Scheduler

PERIOD_S = 0.1
NEVER_S = 3600.0
"""A resync that never comes during a test: only changes and clock deadlines start cycles."""
IDLE_PERIODS = 30
"""Periods watched without a cycle while the status write is held."""


class _HeldStatusWrites:
    """The applier's PodGroup status writes wait at a gate; once it opens they go through, or,
    ``lost``, fail as a write the process died before sending."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.gate = threading.Event()
        self.held = threading.Event()
        self.lost = False
        self._write = scheduler.applier.statuses.patch_status
        scheduler.applier.statuses.patch_status = self._held  # type: ignore[method-assign]

    def _held(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.held.set()
        self.gate.wait(WAIT_S)
        if self.lost:
            raise ApiError(0, "", "the scheduler process died before sending it")
        return self._write(*args, **kwargs)


def _phase(bubble: Bubble, group: str) -> str | None:
    status: dict[str, Any] = bubble.get_podgroup(group).get("status") or {}
    return status.get("phase")


def test_a_decision_being_applied_is_not_re_solved_on_the_period_yet_a_change_starts_a_cycle(bubble: Bubble) -> None:
    bubble.node("n", cpu="8")
    members = bubble.gang("g", 2, cpu="1")
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(), period_s=PERIOD_S, resync_s=NEVER_S)
    writes = _HeldStatusWrites(scheduler)
    try:
        with running_scheduler(scheduler):
            wait_until(lambda: all(bubble.placement()[pod] for pod in members), "the gang is bound")
            wait_until(writes.held.is_set, "its PodGroup's status write is held")
            wait_until(lambda: scheduler.idle_until is not None, "the loop idles while the decision is applied")
            cycles, idle = scheduler.cycles, scheduler.idle_periods
            wait_until(lambda: scheduler.idle_periods >= idle + IDLE_PERIODS, f"{IDLE_PERIODS} idle periods")
            assert scheduler.cycles == cycles, f"cycles ran while nothing changed: {scheduler.triggers}"
            assert scheduler.applying()

            changes = scheduler.triggers["change"]
            bubble.pod("late", cpu="1")
            wait_until(lambda: bubble.placement()["late"], "a pod arriving meanwhile is bound")
            assert scheduler.triggers["change"] > changes

            writes.gate.set()
            wait_until(lambda: _phase(bubble, "g") == "Running", "the group's status is written once let through")
            wait_until(
                lambda: not scheduler.applying() and scheduler.idle_until is not None, "the loop settles once applied"
            )
            cycles = scheduler.cycles
            wait_until(lambda: scheduler.idle_until is not None and scheduler.cycles == cycles, "it stays idle")
            # The PodGroup's creation is the only change of it that woke the loop: our status
            # write came back with a new metadata.generation, and it is not a change.
            assert scheduler.store.relevant_by_kind()["PodGroup"] == 1, scheduler.store.relevant_by_kind()
    finally:
        writes.gate.set()


def test_a_scheduler_stopped_before_its_statuses_went_out_loses_nothing(bubble: Bubble) -> None:
    """The first process binds the gang and dies before its status write; the next one writes it."""
    bubble.node("n", cpu="8")
    members = bubble.gang("g", 2, cpu="1")
    first = Scheduler(bubble.kube, policy=bubble.policy(), period_s=PERIOD_S, resync_s=NEVER_S)
    writes = _HeldStatusWrites(first)
    try:
        with running_scheduler(first):
            wait_until(lambda: all(bubble.placement()[pod] for pod in members), "the gang is bound")
            wait_until(writes.held.is_set, "its PodGroup's status write is held")
            writes.lost = True  # this write, and any it retries, fail: the process is gone
            writes.gate.set()
    finally:
        writes.gate.set()
    assert _phase(bubble, "g") != "Running"

    second = Scheduler(bubble.kube, policy=bubble.policy(), period_s=PERIOD_S, resync_s=NEVER_S)
    with running_scheduler(second):
        wait_until(lambda: _phase(bubble, "g") == "Running", "the next process writes the group's status")
        wait_until(lambda: second.idle_until is not None, "and then idles")
    assert all(bubble.placement()[pod] for pod in members)
