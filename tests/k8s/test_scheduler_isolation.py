"""A solve that raises on one group does not stop the cluster's scheduling: the live scheduler sets
the group aside (reason ``SchedulerError`` on its pods, as kube-scheduler marks a pod whose
scheduling failed with an error), binds the others in the same cycle, and keeps the group out of
the next cycles without a new search for it.

Against the real API server; the solver is the real one, with only the failure injected (a wrapper
that raises while the poisoned gang waits in the snapshot, as a solver bug triggered by an odd
group would).
"""

from __future__ import annotations

from typing import Any

import pytest
from scheduler_support import Bubble, wait_cached

import vcsat.solver
from vcsat.adapters.live.scheduler import Scheduler
from vcsat.model import Decision, Snapshot


def _pod_scheduled(bubble: Bubble, name: str) -> dict[str, Any] | None:
    pod = bubble.pods()[name]
    return next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), None)


def test_a_group_the_solve_raises_on_is_set_aside_and_the_rest_binds(
    bubble: Bubble, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = bubble.node("n", cpu="8")
    poison = bubble.gang("poison", 2, cpu="1")
    healthy = [*bubble.gang("healthy", 2, cpu="1"), bubble.pod("lone", cpu="1")["metadata"]["name"]]
    real = vcsat.solver.solve
    poisoned = f"{bubble.namespace}/poison"
    solves: list[bool] = []

    def solve(snapshot: Snapshot, *args: Any, **kwargs: Any) -> Decision:
        waits = any(pod.group == poisoned and pod.pending for pod in snapshot.pods)
        solves.append(waits)
        if waits:
            raise RuntimeError("injected solver failure")
        return real(snapshot, *args, **kwargs)

    monkeypatch.setattr(vcsat.solver, "solve", solve)
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=poison + healthy)
        first = scheduler.run_cycle()
        assert first.report is not None and not first.violations
        placement = bubble.placement()
        assert all(placement[name] == node for name in healthy)
        assert not any(placement[name] for name in poison)
        assert set(scheduler.isolator.set_aside) == {poisoned}
        outcome = next(o for o in first.decision.podgroups if o.podgroup == poisoned)
        assert outcome.reason == "SchedulerError" and "injected solver failure" in outcome.message

        # The next cycle solves once, without the group, and marks its pods (a pod's second
        # cycle unplaced writes the condition): SchedulerError, not Unschedulable, so an
        # autoscaler does not add nodes for it.
        solves.clear()
        second = scheduler.run_cycle()
        assert solves == [False]
        assert second.report is not None
        for name in poison:
            condition = _pod_scheduled(bubble, name)
            assert condition is not None
            assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
            assert "injected solver failure" in condition["message"]
    finally:
        scheduler.close()
