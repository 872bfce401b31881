"""Pods a cycle leaves unplaced show ``PodScheduled=False``, reason ``Unschedulable``, as
kube-scheduler marks them (cluster-autoscaler scales up for exactly these pods), with the
decision's reason code and message; the condition is written when it changes, not every cycle.

One ``run_cycle`` at a time, so each test knows which cycle wrote what. A pod's first cycle
unplaced writes nothing (a gang whose pods are still being created is a passing state).
"""

from __future__ import annotations

from typing import Any

import pytest
from scheduler_support import Bubble, wait_cached, wait_until

from vcsat.adapters.kube.applier import Applier
from vcsat.adapters.kube.client import NODES, PODS
from vcsat.adapters.kube.informer import SCHEDULING_KINDS, Store
from vcsat.adapters.live.scheduler import Scheduler
from vcsat.model import Binding, Decision, PodGroupOutcome, Snapshot, SolverStats
from vcsat.model.cluster import Pod


def _pod_scheduled(bubble: Bubble, name: str) -> dict[str, Any] | None:
    pod = bubble.kube.get(PODS.path(bubble.namespace, name))
    return next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), None)


def _versions(bubble: Bubble) -> dict[str, str]:
    return {name: pod["metadata"]["resourceVersion"] for name, pod in bubble.pods().items()}


@pytest.mark.parametrize("case", ["too-big", "gang-short"])
def test_unplaced_pods_are_marked_unschedulable_once_and_bound_later(bubble: Bubble, case: str) -> None:
    bubble.node("n", cpu="4")
    if case == "too-big":
        names = [bubble.pod("big", cpu="16")["metadata"]["name"]]
        group = f"{bubble.namespace}/big"
    else:
        names = bubble.gang("g", 2, min_member=3, cpu="1")
        group = f"{bubble.namespace}/g"
    keys = sorted(f"{bubble.namespace}/{name}" for name in names)
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=names)

        first = scheduler.run_cycle()
        assert first.report is not None and first.report.bound == []
        assert first.report.unschedulable == [], "the first cycle unplaced writes nothing"
        assert "unschedulable-second-cycle" in first.report.follow_ups, "but the next one is due to"
        assert all(_pod_scheduled(bubble, name) is None for name in names)

        second = scheduler.run_cycle()
        assert second.report is not None and sorted(second.report.unschedulable) == keys
        outcome = next(o for o in second.decision.podgroups if o.podgroup == group)
        assert outcome.reason
        for name in names:
            condition = _pod_scheduled(bubble, name)
            assert condition is not None
            assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
            assert condition["message"] == f"{outcome.reason}: {outcome.message or outcome.reason}"
            assert condition["lastTransitionTime"]

        # Unchanged: no write, whether or not the watch has shown ours yet.
        written = _versions(bubble)
        for _ in range(2):
            again = scheduler.run_cycle()
            assert again.report is not None and again.report.unschedulable == []
            # Nothing more is due but the waiting Event's refresh, a minute after it was written.
            assert set(again.report.follow_ups) == {"event-refresh"}
        assert _versions(bubble) == written

        # Room (or the missing member) arrives: the marked pods bind, and the server turns
        # PodScheduled True with the binding.
        if case == "too-big":
            bubble.node("huge", cpu="32")
        else:
            names.append(bubble.pod("g-2", cpu="1", group="g")["metadata"]["name"])
            wait_cached(scheduler, bubble.namespace, pods=names)
        wait_until(
            lambda: (result := scheduler.run_cycle()).report is not None and len(result.report.bound) == len(names),
            "the pods are bound",
        )
        assert all(bubble.placement().values())
        assert all((_pod_scheduled(bubble, name) or {}).get("status") == "True" for name in names)
    finally:
        scheduler.close()


def test_a_pod_marked_unschedulable_binds_before_the_watch_shows_the_mark(bubble: Bubble) -> None:
    """The binding carries the pod's resourceVersion: after our own status write it must carry
    the new one even when the cache still holds the old pod."""
    node = bubble.node("n", cpu="4")
    created = bubble.pod("p", cpu="1")
    store = Store(SCHEDULING_KINDS)  # fed by hand: it never sees our write
    for kind in SCHEDULING_KINDS:
        store.replace(kind, [])
    store.replace("Pod", [{**created, "kind": "Pod", "apiVersion": "v1"}])
    store.replace("Node", [{**bubble.kube.get(NODES.path(name=node)), "kind": "Node", "apiVersion": "v1"}])
    applier = Applier(bubble.kube, store)
    pod = Pod(namespace=bubble.namespace, name="p", uid=created["metadata"]["uid"], requests={"cpu": 1000, "pods": 1})
    snapshot = Snapshot(pods=(pod,), generation=store.generation)
    waiting = Decision(
        podgroups=[PodGroupOutcome(podgroup=pod.key, phase="Pending", reason="Unschedulable", message="no room")],
        solver=SolverStats(status="OPTIMAL", objective=0.0, bound=0.0, seconds=0.0),
    )
    try:
        assert applier.apply(waiting, snapshot).unschedulable == []  # first sighting
        assert applier.apply(waiting, snapshot).unschedulable == [pod.key]
        assert (_pod_scheduled(bubble, "p") or {}).get("message") == "Unschedulable: no room"
        assert applier.apply(waiting, snapshot).unschedulable == [], "the cache lags, but we know what we wrote"

        binding = Decision(
            bindings=[Binding(pod=pod.key, node=node, gpus=[])],
            solver=SolverStats(status="OPTIMAL", objective=1.0, bound=1.0, seconds=0.0),
        )
        report = applier.apply(binding, snapshot)
        assert report.bound == [pod.key], report.failed
        assert bubble.placement() == {"p": node}
    finally:
        applier.close()
