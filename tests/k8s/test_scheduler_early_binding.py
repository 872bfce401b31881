"""Early binding against the real API server: with a backlog, the greedy's sure placements are
bound by a cycle of their own before the full cycle runs, whole gangs only, each pod once.

Every pod exists before the scheduler starts (its caches list them all at once). The scheduler's
loop runs in a thread (scheduler_support.running_scheduler); every cycle's result
is recorded by an observer. The assertions are about the cycles' structure and order (the early
cycle's bindings were sent before the full cycle took its snapshot, which already shows them
bound), never about wall times.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from scheduler_support import Bubble, running_scheduler, wait_cached, wait_until

from vcsat.adapters.live.scheduler import CycleResult, Scheduler

pytestmark = pytest.mark.k8s


class _Cycles:
    """Every cycle's result, in the order the loop observed them."""

    def __init__(self) -> None:
        self.results: list[CycleResult] = []

    def __call__(self, result: CycleResult) -> None:
        self.results.append(result)

    def bound(self) -> Counter[str]:
        """Per pod key: how many cycles report it bound."""
        return Counter(pod for result in self.results if result.report for pod in result.report.bound)


def _scheduler(
    bubble: Bubble,
    cycles: _Cycles,
    early_min_pending: int,
    *,
    full_cycle_every_s: float = 0.0,
    period_s: float = 1.0,
    **policy: Any,
) -> Scheduler:
    return Scheduler(
        bubble.kube,
        policy=bubble.policy(**policy),
        observers=(cycles,),
        early_min_pending=early_min_pending,
        full_cycle_every_s=full_cycle_every_s,
        period_s=period_s,
    )


def _bound_of(bubble: Bubble, names: list[str]) -> int:
    placement = bubble.placement()
    return sum(1 for name in names if placement.get(name))


def test_a_backlog_that_fits_is_bound_by_an_early_cycle_before_the_full_one(bubble: Bubble) -> None:
    for index in range(3):
        bubble.node(f"n{index}", cpu="16")
    gangs = {f"job{g}": bubble.gang(f"job{g}", 4, cpu="2") for g in range(4)}
    lone = [bubble.pod(f"lone{i}")["metadata"]["name"] for i in range(4)]
    everything = [*(pod for pods in gangs.values() for pod in pods), *lone]
    cycles = _Cycles()
    scheduler = _scheduler(bubble, cycles, early_min_pending=10)
    with running_scheduler(scheduler):
        wait_until(lambda: _bound_of(bubble, everything) == len(everything), "every pod bound")
        wait_until(lambda: len(cycles.results) >= 2, "the full cycle after the early one")

    early, full = cycles.results[0], cycles.results[1]
    assert early.early and early.trigger == "start"
    assert early.report is not None and sorted(early.report.bound) == sorted(
        f"{bubble.namespace}/{name}" for name in everything
    )
    assert early.report.failed == {} and early.report.stale == {}
    # The full cycle came straight after, and its snapshot already showed every pod bound: the
    # bindings were sent (and assumed) before it took it.
    assert not full.early and (full.trigger, full.why) == ("follow-up", "early")
    assert full.number == early.number + 1
    assert not any(pod.pending for pod in full.snapshot.pods if pod.namespace == bubble.namespace)
    assert full.decision.bindings == []
    assert max(cycles.bound().values()) == 1  # no pod bound twice
    for name in gangs:  # the early cycle wrote the statuses of the gangs it bound
        wait_until(
            lambda name=name: (bubble.get_podgroup(name).get("status") or {}).get("phase") == "Running",
            f"PodGroup {name} Running",
        )


def test_a_stream_is_bound_by_early_cycles_in_a_row_then_a_full_cycle(bubble: Bubble) -> None:
    # A full cycle is not due for an hour, nor a follow-up by the period: only new pods start a cycle.
    # The old rule (a full cycle straight after each early one) would run one after the first.
    for index in range(3):
        bubble.node(f"n{index}", cpu="32")
    first = [pod for g in range(2) for pod in bubble.gang(f"a{g}", 4, cpu="2")]
    cycles = _Cycles()
    scheduler = _scheduler(bubble, cycles, early_min_pending=1, full_cycle_every_s=3600.0, period_s=3600.0)
    with running_scheduler(scheduler):
        wait_until(lambda: _bound_of(bubble, first) == len(first), "the first pods bound")
        # Lone pods: a cycle that sees any of them waiting can bind it (a gang's pods may be seen
        # before its last one is created, and a cycle that finds nothing to bind is a full one).
        second = [bubble.pod(f"lone{i}", cpu="2")["metadata"]["name"] for i in range(6)]
        wait_until(lambda: _bound_of(bubble, second) == len(second), "the pods created later bound")
        wait_until(lambda: all(result.report is not None for result in cycles.results), "every cycle applied")
    binding = [result for result in cycles.results if result.report and result.report.bound]
    assert len(binding) >= 2 and all(result.early for result in binding)
    # No early cycle was followed at once by a full one: only new pods started a cycle, and every
    # cycle that found pods of ours waiting bound them early.
    assert {result.trigger for result in cycles.results} <= {"start", "change"}
    ours = [
        result
        for result in cycles.results
        if any(pod.pending and pod.namespace == bubble.namespace for pod in result.snapshot.pods)
    ]
    assert len(ours) >= 2 and all(result.early for result in ours)
    assert max(cycles.bound().values()) == 1  # no pod bound twice
    assert sorted(cycles.bound()) == sorted(f"{bubble.namespace}/{name}" for name in [*first, *second])


def test_early_cycles_in_a_row_end_with_a_full_cycle(bubble: Bubble) -> None:
    # With the usual period, the early cycles of a stream are followed by a full one (nothing sure
    # is left to bind), which reports on what waits: here a gang short of its minMember.
    bubble.node("n0", cpu="32")
    names = [pod for g in range(2) for pod in bubble.gang(f"job{g}", 4)]
    bubble.podgroup("short", 4)
    bubble.pod("short-0", group="short")
    cycles = _Cycles()
    scheduler = _scheduler(bubble, cycles, early_min_pending=1, full_cycle_every_s=3600.0)
    with running_scheduler(scheduler):
        wait_until(lambda: _bound_of(bubble, names) == len(names), "every complete gang bound")
        wait_until(
            lambda: any(not r.early and r.report is not None for r in cycles.results), "a full cycle after the early"
        )
    early = cycles.results[0]
    assert early.early and early.report is not None and len(early.report.bound) == len(names)
    full = next(result for result in cycles.results if not result.early)
    assert full.number > early.number and full.decision.bindings == []
    assert [pod.name for pod in full.snapshot.pods if pod.pending and pod.namespace == bubble.namespace] == ["short-0"]
    assert _bound_of(bubble, ["short-0"]) == 0
    assert max(cycles.bound().values()) == 1


def test_an_incomplete_gang_is_left_to_a_later_cycle_and_bound_whole(bubble: Bubble) -> None:
    bubble.node("n0", cpu="32")
    for g in range(3):
        bubble.gang(f"job{g}", 4)
    bubble.podgroup("late", 4)
    late = [bubble.pod(f"late-{i}", group="late")["metadata"]["name"] for i in range(3)]  # 3 of 4
    cycles = _Cycles()
    scheduler = _scheduler(bubble, cycles, early_min_pending=10)
    with running_scheduler(scheduler):
        wait_until(lambda: len(cycles.results) >= 2 and cycles.results[0].report is not None, "two cycles")
        first = cycles.results[0]
        assert first.early and first.report is not None
        assert len(first.report.bound) == 12
        assert _bound_of(bubble, late) == 0
        late.append(bubble.pod("late-3", group="late")["metadata"]["name"])
        wait_until(lambda: _bound_of(bubble, late) == 4, "the completed gang bound whole")
    assert max(cycles.bound().values()) == 1
    binding_cycles = {
        result.number for result in cycles.results if result.report and any("/late-" in p for p in result.report.bound)
    }
    assert len(binding_cycles) == 1  # the late gang went in one cycle, all four pods


def test_contention_makes_no_early_cycle(bubble: Bubble) -> None:
    # Room for two of three gangs and admission off: the greedy cannot be sure, the search decides.
    bubble.node("n0", cpu="8")
    bubble.node("n1", cpu="8")
    names = [pod for g in range(3) for pod in bubble.gang(f"job{g}", 4, cpu="2")]
    cycles = _Cycles()
    scheduler = _scheduler(bubble, cycles, early_min_pending=4, enqueue=False)
    with running_scheduler(scheduler):
        wait_until(lambda: _bound_of(bubble, names) == 8, "two gangs bound")
        wait_until(lambda: cycles.results and cycles.results[0].report is not None, "the first cycle applied")
    first = cycles.results[0]
    assert not first.early and first.report is not None and len(first.report.bound) == 8
    assert not any(result.early for result in cycles.results)


def test_early_binding_off_binds_in_the_full_cycle(bubble: Bubble) -> None:
    bubble.node("n0", cpu="32")
    names = [pod for g in range(3) for pod in bubble.gang(f"job{g}", 4)]
    cycles = _Cycles()
    scheduler = _scheduler(bubble, cycles, early_min_pending=0)
    with running_scheduler(scheduler):
        wait_until(lambda: _bound_of(bubble, names) == 12, "every pod bound")
        wait_until(lambda: cycles.results and cycles.results[0].report is not None, "the first cycle applied")
    first = cycles.results[0]
    assert not first.early and first.report is not None and len(first.report.bound) == 12


def test_an_early_cycle_admits_a_podgroup_that_has_no_pods_yet(bubble: Bubble) -> None:
    # A Job controller creates a job's pods only once its PodGroup is Inqueue: while a stream binds
    # early, the admission must not wait for the next full cycle.
    bubble.node("n0", cpu="32")
    lone = bubble.pod("lone", cpu="2")["metadata"]["name"]
    bubble.podgroup("job", 4)
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(), full_cycle_every_s=3600.0)
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=[lone], podgroups=["job"])
        result = scheduler.run_cycle(early=True)
    finally:
        scheduler.close()
    assert result.early and result.report is not None
    assert result.report.bound == [f"{bubble.namespace}/{lone}"]
    assert f"{bubble.namespace}/job" not in {outcome.podgroup for outcome in result.decision.podgroups}
    assert (bubble.get_podgroup("job").get("status") or {}).get("phase") == "Inqueue"


def test_an_early_cycle_leaves_a_podgroup_that_is_not_admitted_to_the_full_cycle(bubble: Bubble) -> None:
    # What waits is the full cycle's to report: an early cycle writes admissions only.
    bubble.node("n0", cpu="4")
    lone = bubble.pod("lone", cpu="2")["metadata"]["name"]
    bubble.podgroup("big", 4, minResources={"cpu": "64"})
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(), full_cycle_every_s=3600.0)
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=[lone], podgroups=["big"])
        result = scheduler.run_cycle(early=True)
        assert result.early and result.report is not None
        assert result.report.bound == [f"{bubble.namespace}/{lone}"]
        assert not (bubble.get_podgroup("big").get("status") or {}).get("phase")
        full = scheduler.run_cycle()
    finally:
        scheduler.close()
    assert not full.early and full.report is not None
    assert (bubble.get_podgroup("big").get("status") or {}).get("phase") == "Pending"
