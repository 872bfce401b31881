"""A live scheduler left alone does not re-solve an unchanged cluster, yet does on time all that the
clock asks of it, and still acts at once on a change.

The loop runs in a thread against this module's own control plane (so no other test's objects
wake it). Nothing here measures time: "idle" is counted by the loop itself (``idle_periods``: the
periods in which a loop on a period would have run a cycle), and every wait has a generous
deadline only so that a broken scheduler fails instead of hanging.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from scheduler_support import (
    Bubble,
    own_control_plane,  # noqa: F401 (the fixture control_plane: this module's own)
    running_scheduler,
    wait_until,
)

from vcsat.adapters.kube.client import PODS
from vcsat.adapters.live.metrics import Metrics
from vcsat.adapters.live.scheduler import Scheduler

PERIOD_S = 0.1
NEVER_S = 3600.0
"""A resync that never comes during a test: only changes and clock deadlines start cycles."""
IDLE_PERIODS = 30
"""Periods watched without a cycle: three seconds of a loop that would otherwise re-solve 30 times."""
SETTLING_CYCLES = 5
"""The most cycles an unschedulable pod costs before the loop idles: the first (it is seen), the
second a period later (a deadline: its PodScheduled condition and Event are written from the second
cycle on), the one after a write, and one more if the watch shows our condition write only after
that one started; one spare."""


def _pod_scheduled(bubble: Bubble, name: str) -> dict[str, Any] | None:
    pod = bubble.kube.get(PODS.path(bubble.namespace, name))
    return next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), None)


def _warning_count(bubble: Bubble, involved: str) -> int:
    return sum(e.get("count") or 1 for e in bubble.events(involved) if e["type"] == "Warning")


def _sample(metrics: Metrics, line: str) -> float:
    for text in metrics.exposition().decode().splitlines():
        name, _, value = text.rpartition(" ")
        if name == line:
            return float(value)
    raise AssertionError(f"no sample {line}")


def test_an_idle_scheduler_stops_solving_yet_marks_the_pod_and_binds_it_at_once_on_a_change(bubble: Bubble) -> None:
    bubble.node("small", cpu="2")
    bubble.pod("big", cpu="8")
    metrics = Metrics()
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(), period_s=PERIOD_S, resync_s=NEVER_S, metrics=metrics)
    with running_scheduler(scheduler):
        wait_until(
            lambda: (_pod_scheduled(bubble, "big") or {}).get("status") == "False",
            "the pod left out is marked PodScheduled=False, though nothing changed after its first cycle",
        )
        wait_until(lambda: scheduler.idle_until is not None, "the loop idles")
        cycles, idle = scheduler.cycles, scheduler.idle_periods
        assert cycles <= SETTLING_CYCLES, scheduler.triggers
        wait_until(lambda: scheduler.idle_periods >= idle + IDLE_PERIODS, f"{IDLE_PERIODS} more idle periods")
        assert scheduler.cycles == cycles, f"nothing changed, yet cycles ran: {scheduler.triggers}"
        assert _sample(metrics, "vcsat_idle_periods_skipped_total") >= idle + IDLE_PERIODS

        changes, deadlines = scheduler.triggers["change"], scheduler.triggers["deadline"]
        node = bubble.node("huge", cpu="16")
        # Well before the first clock deadline (the Event's refresh, 60 s after it was written):
        # only the change can have started the cycle that binds it.
        wait_until(lambda: bubble.placement()["big"] == node, "the pod is bound once room appears", timeout_s=30)
        assert scheduler.triggers["change"] > changes
        assert (scheduler.triggers["deadline"], scheduler.triggers["resync"]) == (deadlines, 0)
        assert _sample(metrics, 'vcsat_cycles_total{trigger="change"}') == scheduler.triggers["change"]
        assert (_pod_scheduled(bubble, "big") or {}).get("status") == "True"


def test_a_waiting_groups_event_is_refreshed_when_its_window_ends_with_nothing_changing(bubble: Bubble) -> None:
    """The Event of a waiting group is refreshed (count, lastTimestamp) once per ``event_refresh_s``:
    a clock rule, so the idle loop wakes for it, and only for it."""
    bubble.node("small", cpu="2")
    bubble.gang("g", 2, cpu="4")
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(), period_s=PERIOD_S, resync_s=NEVER_S)
    scheduler.applier.event_refresh_s = 1.0
    with running_scheduler(scheduler):
        wait_until(lambda: _warning_count(bubble, "g") >= 1, "the waiting group's Event is written")
        wait_until(lambda: scheduler.idle_until is not None, "the loop idles")
        before, written = Counter(scheduler.triggers), _warning_count(bubble, "g")
        wait_until(lambda: _warning_count(bubble, "g") > written, "the Event is refreshed")
        wait_until(lambda: scheduler.idle_until is not None, "the loop idles again")
        since = Counter(scheduler.triggers) - before
        assert since["deadline"] >= 1
        # Each refresh: the cycle at its deadline (it writes), and the one after a write.
        assert since.total() <= 2 * since["deadline"], since
        assert set(since) <= {"deadline", "follow-up"}, since
        assert len([e for e in bubble.events("g") if e["type"] == "Warning"]) == 1, "refreshed, not repeated"
