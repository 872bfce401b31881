"""Bounded cycles against the real API server (vcsat.adapters.live.cycle_cap): a backlog larger
than the cap is bound over several short cycles that follow each other at once, whole gangs only,
each pod once; waiting pods that cannot be placed do not hide new ones that can; a scheduler
stopped between capped cycles loses nothing (a new one decides what is left).

The cap is fixed here (a stand-in for :class:`CycleCap` that never adapts), so the cycles'
structure does not depend on how fast the machine is. Assertions are about which cycle bound what
and why it ran, never about wall times.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from scheduler_support import Bubble, running_scheduler, wait_until

from vcsat.adapters.live.scheduler import CycleResult, Scheduler

pytestmark = pytest.mark.k8s


class _FixedCap:
    """A cap that stays what it is."""

    def __init__(self, cap: int) -> None:
        self.cap = cap

    def observe(self, given_pods: int, seconds: float, arrivals_per_s: float = 0.0) -> int:
        return self.cap


class _Cycles:
    def __init__(self) -> None:
        self.results: list[CycleResult] = []

    def __call__(self, result: CycleResult) -> None:
        self.results.append(result)

    def bound(self) -> Counter[str]:
        return Counter(pod for result in self.results if result.report for pod in result.report.bound)

    def binding(self, pod: str) -> list[int]:
        """The cycles that report ``pod`` (a key) bound."""
        return [r.number for r in self.results if r.report and pod in r.report.bound]


def _scheduler(bubble: Bubble, cycles: _Cycles, cap: int | None, **policy: Any) -> Scheduler:
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(**policy), observers=(cycles,), early_min_pending=0)
    scheduler.cap = _FixedCap(cap) if cap is not None else None  # type: ignore[assignment]
    return scheduler


def _bound_of(bubble: Bubble, names: list[str]) -> int:
    placement = bubble.placement()
    return sum(1 for name in names if placement.get(name))


def test_a_backlog_over_the_cap_is_bound_in_short_cycles_whole_gangs_each_pod_once(bubble: Bubble) -> None:
    for index in range(3):
        bubble.node(f"n{index}", cpu="16")
    gangs = {f"job{g}": bubble.gang(f"job{g}", 4, cpu="1") for g in range(5)}
    lone = [bubble.pod(f"lone{i}")["metadata"]["name"] for i in range(3)]
    everything = [*(pod for pods in gangs.values() for pod in pods), *lone]
    cycles = _Cycles()
    scheduler = _scheduler(bubble, cycles, cap=8)
    with running_scheduler(scheduler):
        wait_until(lambda: _bound_of(bubble, everything) == len(everything), "every pod bound")
        wait_until(lambda: len(cycles.bound()) == len(everything), "every binding reported")

    binding = [r for r in cycles.results if r.report and r.report.bound]
    assert len(binding) >= 3  # 23 pods, at most about 8 a cycle
    first = cycles.results[0]
    assert first.deferred == len(everything) - sum(1 for p in first.snapshot.pods if p.pending)
    assert first.deferred > 0
    for result in binding:
        # whole groups: up to the cap, or one group alone
        assert sum(1 for p in result.snapshot.pods if p.pending) <= 8
    # each cycle that left pods waiting was followed at once, not after a period
    for before, after in zip(cycles.results, cycles.results[1:], strict=False):
        if before.deferred:
            assert (after.trigger, after.why) == ("follow-up", "capped")
    assert max(cycles.bound().values()) == 1  # no pod bound twice
    for name, pods in gangs.items():  # each gang bound by one cycle, all of its pods
        numbers = {n for pod in pods for n in cycles.binding(f"{bubble.namespace}/{pod}")}
        assert len(numbers) == 1, name


def test_waiting_pods_that_cannot_be_placed_do_not_hide_a_new_one_that_can(bubble: Bubble) -> None:
    bubble.node("n0", cpu="8")
    stuck = [pod for g in range(3) for pod in bubble.gang(f"big{g}", 4, cpu="100")]  # never fit
    cycles = _Cycles()
    scheduler = _scheduler(bubble, cycles, cap=4, enqueue=False)
    with running_scheduler(scheduler):
        wait_until(lambda: len(cycles.results) >= 3, "three cycles over the gangs that do not fit")
        late = bubble.pod("late")["metadata"]["name"]
        wait_until(lambda: _bound_of(bubble, [late]) == 1, "the pod that fits bound")
    assert _bound_of(bubble, stuck) == 0
    assert max(cycles.bound().values()) == 1


def test_a_scheduler_stopped_between_capped_cycles_loses_nothing(bubble: Bubble) -> None:
    for index in range(2):
        bubble.node(f"n{index}", cpu="16")
    gangs = {f"job{g}": bubble.gang(f"job{g}", 4) for g in range(4)}
    everything = [pod for pods in gangs.values() for pod in pods]
    first_cycles = _Cycles()
    first = _scheduler(bubble, first_cycles, cap=4)
    first.start()
    try:
        wait_until(first.ready, "caches synced")
        wait_until(
            lambda: (
                len([p for p in first.store.objects("Pod") if p["metadata"]["namespace"] == bubble.namespace])
                == len(everything)
            ),
            "every pod cached",
        )
        one = first.run_cycle()  # one capped cycle, applied
        assert one.deferred == len(everything) - 4 and one.report is not None and len(one.report.bound) == 4
        # The next capped cycle decides and assumes its bindings, then the process dies before
        # any is written (stop is set before the applier sends them).
        stop = threading.Event()
        stop.set()
        two = first.run_cycle(stop=stop)
        assert len(two.decision.bindings) == 4 and two.report is not None and not two.report.bound
    finally:
        first.close()
    assert _bound_of(bubble, everything) == 4  # only the applied cycle's gang is on the API server
    second_cycles = _Cycles()
    second = _scheduler(bubble, second_cycles, cap=None)
    with running_scheduler(second):
        wait_until(lambda: _bound_of(bubble, everything) == len(everything), "every pod bound")
    both = Counter(one.report.bound) + second_cycles.bound()
    assert sorted(both) == sorted(f"{bubble.namespace}/{pod}" for pod in everything)
    assert max(both.values()) == 1  # no pod bound twice across the two schedulers
    placement = bubble.placement()
    for name, pods in gangs.items():
        assert all(placement.get(pod) for pod in pods), name
