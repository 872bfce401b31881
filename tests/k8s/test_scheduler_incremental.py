"""The live scheduler's cycles reuse what did not change (the converter's models, the node side of
the problem, the pods' sums per queue and node, the PodGroups' admission parts, the PodGroups whose
status is settled); against the real API server, a cycle after a node changed and a bound pod was
deleted, or after another scheduler's pod went, a pod came before its PodGroup and a node stopped
being Ready, still decides and admits exactly as a fresh conversion and build of the same objects,
and a settled PodGroup whose pod then runs, or whose status someone else overwrites (the converter
keeps its model: nothing the solver reads changed), still gets its status written.

Cycles are run one by one (``run_cycle``), not by the loop, so each sees a known state.
"""

from __future__ import annotations

from typing import Any

from scheduler_support import Bubble, wait_cached, wait_until

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.kube.client import NODES, PODGROUPS, PODS
from vcsat.adapters.live.scheduler import Scheduler
from vcsat.model import Decision
from vcsat.solver import admission_commitments, admission_groups, admission_ours, node_side, pod_sums, solve
from vcsat.solver.rules import predicates


def _fresh_decision(scheduler: Scheduler, objects: list[dict[str, Any]]) -> Decision:
    """The decision of a fresh process: no conversion memo, no node side or node index, no pods' sums
    or admission parts or our groups kept. What the scheduler carries is put back after, so its next cycle still
    starts from what its last one left."""
    kept = (node_side._rooms, dict(node_side._last), pod_sums._carried, admission_groups._last)
    kept_parts = admission_commitments._carried
    kept_ours = admission_ours._last
    node_side.forget()
    pod_sums.forget()
    admission_groups.forget()
    admission_commitments.forget()
    admission_ours.forget()
    predicates._INDEXES.clear()
    snapshot = snapshot_from_objects(objects, scheduler_name=scheduler.policy.scheduler_name, strict=False)
    try:
        return solve(snapshot, scheduler.policy, wall=False)
    finally:
        node_side._rooms, pod_sums._carried, admission_groups._last = kept[0], kept[2], kept[3]
        node_side._last.clear()
        node_side._last.update(kept[1])
        admission_commitments._carried = kept_parts
        admission_ours._last = kept_ours


def _what(decision: Decision) -> dict[str, Any]:
    return decision.model_dump(exclude={"solver": {"seconds", "wall_stopped", "deterministic_time"}})


def test_a_cycle_after_a_node_change_and_a_deleted_bound_pod_decides_as_a_fresh_one(bubble: Bubble) -> None:
    kube = bubble.kube
    small = bubble.node("small", cpu="4")
    other = bubble.node("other", cpu="4")
    bubble.pod("running", cpu="3", node_name=small)
    bubble.pod("first", cpu="2")
    scheduler = Scheduler(kube, policy=bubble.policy(time_limit_s=5.0, search=False))
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["running", "first"])
        first = scheduler.run_cycle(wait=True)
        assert _what(first.decision)["bindings"], "the first cycle places the pod"
        wait_until(lambda: bubble.placement()["first"] is not None, "the first pod is bound")

        # The node "small" grows, the pod running on it is deleted, new pods arrive.
        grown = {"cpu": "16", "memory": "16Gi", "pods": "110"}
        kube.patch(NODES.path(name=small, subresource="status"), {"status": {"allocatable": grown, "capacity": grown}})
        kube.delete(PODS.path(bubble.namespace, "running"), gracePeriodSeconds=0)
        for name in ("wide", "narrow"):
            bubble.pod(name, cpu="6" if name == "wide" else "1")
        wait_until(
            lambda: (
                scheduler.store.get("Pod", f"{bubble.namespace}/running") is None
                and (scheduler.store.get("Node", small) or {}).get("status", {}).get("allocatable", {}).get("cpu")
                == "16"
            ),
            "the cache shows the grown node and the deleted pod",
        )
        wait_cached(scheduler, bubble.namespace, pods=["wide", "narrow"])
        second = scheduler.run_cycle(wait=True)
        fresh = _fresh_decision(scheduler, second.objects)
        assert _what(second.decision) == _what(fresh)
        bound = {binding.pod.split("/")[1]: binding.node for binding in second.decision.bindings}
        assert bound.get("wide") == small, "the 6-cpu pod fits only the grown node"
        assert other in {node.name for node in second.snapshot.nodes}
    finally:
        scheduler.close()


def test_cycles_after_load_leaves_a_pod_precedes_its_group_and_a_node_fails_decide_as_fresh_ones(
    bubble: Bubble,
) -> None:
    kube = bubble.kube
    first_node = bubble.node("n0", cpu="8")
    second_node = bubble.node("n1", cpu="8")
    # Another scheduler's pod is load: in the room admission counts as used, out of the queues' share.
    bubble.pod("theirs", cpu="5", scheduler="default-scheduler", node_name=first_node)
    bubble.gang("a", 2, cpu="2")
    # No overcommit: whether a PodGroup is admitted turns on the cluster's used and reserved room.
    policy = bubble.policy(time_limit_s=5.0, search=False, overcommit_factor=1.0, admit_by_fit=False)
    scheduler = Scheduler(kube, policy=policy)
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["theirs", "a-0", "a-1"], podgroups=["a"])
        first = scheduler.run_cycle(wait=True)
        assert _what(first.decision) == _what(_fresh_decision(scheduler, first.objects))
        wait_until(lambda: bubble.placement()["a-0"] and bubble.placement()["a-1"], "the gang is bound")

        # The other scheduler's pod goes; a pod shows before its PodGroup; a group without pods
        # asks for room that is there only once that pod is gone; the second node stops being Ready.
        kube.delete(PODS.path(bubble.namespace, "theirs"), gracePeriodSeconds=0)
        bubble.pod("late-0", cpu="1", group="late")
        bubble.podgroup("big", 1, minResources={"cpu": "6"})
        failed = {"type": "Ready", "status": "False", "reason": "Test", "message": "test"}
        kube.patch(NODES.path(name=second_node, subresource="status"), {"status": {"conditions": [failed]}})
        wait_until(
            lambda: scheduler.store.get("Pod", f"{bubble.namespace}/theirs") is None,
            "the cache shows the other scheduler's pod gone",
        )
        wait_cached(scheduler, bubble.namespace, pods=["late-0"], podgroups=["big"])
        second = scheduler.run_cycle(wait=True)
        assert _what(second.decision) == _what(_fresh_decision(scheduler, second.objects))

        # The late pod's PodGroup arrives: the pod now counts for its queue and is placed.
        bubble.podgroup("late", 1)
        wait_cached(scheduler, bubble.namespace, podgroups=["late"])
        third = scheduler.run_cycle(wait=True)
        assert _what(third.decision) == _what(_fresh_decision(scheduler, third.objects))
        assert "late" in {o.podgroup.split("/")[1] for o in third.decision.podgroups}
        # A PodGroup without pods is admitted or refused by the status the scheduler writes.
        wait_until(lambda: bubble.get_podgroup("big").get("status", {}).get("phase"), "the pod-less group's status")
    finally:
        scheduler.close()


def test_a_settled_podgroup_still_gets_its_status_when_its_pod_starts_running(bubble: Bubble) -> None:
    kube = bubble.kube
    bubble.node("n", cpu="8")
    pods = bubble.gang("job", 2)
    scheduler = Scheduler(kube, policy=bubble.policy(time_limit_s=5.0, search=False))
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=pods, podgroups=["job"])
        scheduler.run_cycle(wait=True)
        wait_until(lambda: all(bubble.placement()[name] for name in pods), "the gang is bound")
        wait_until(lambda: bubble.get_podgroup("job").get("status", {}).get("phase") == "Running", "Running")
        key = f"{bubble.namespace}/job"
        # The watch shows what this scheduler wrote; a cycle with nothing new then finds the group settled.
        wait_until(
            lambda: (scheduler.store.get("PodGroup", key) or {}).get("status", {}).get("phase") == "Running",
            "the cache shows the group Running",
        )
        scheduler.run_cycle(wait=True)
        scheduler.run_cycle(wait=True)
        assert key in scheduler.applier._quiet, "a settled group is not looked at again while unchanged"

        kube.patch(PODS.path(bubble.namespace, pods[0], "status"), {"status": {"phase": "Running"}})
        wait_until(
            lambda: (
                (scheduler.store.get("Pod", f"{bubble.namespace}/{pods[0]}") or {}).get("status", {}).get("phase")
                == "Running"
            ),
            "the cache shows the pod running",
        )
        scheduler.run_cycle(wait=True)
        assert bubble.get_podgroup("job")["status"].get("running") == 1
    finally:
        scheduler.close()


def test_a_settled_podgroup_whose_status_is_overwritten_gets_it_written_again(bubble: Bubble) -> None:
    bubble.node("n", cpu="8")
    pods = bubble.gang("job", 2)
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(time_limit_s=5.0, search=False))
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=pods, podgroups=["job"])
        scheduler.run_cycle(wait=True)
        key = f"{bubble.namespace}/job"
        wait_until(
            lambda: (scheduler.store.get("PodGroup", key) or {}).get("status", {}).get("phase") == "Running",
            "the cache shows the group Running",
        )
        scheduler.run_cycle(wait=True)
        scheduler.run_cycle(wait=True)
        assert key in scheduler.applier._quiet, "a settled group is not looked at again while unchanged"
        group = scheduler.last.snapshot.podgroup_by_key[key] if scheduler.last is not None else None

        # Someone else writes counts and conditions no reader converts: the model stays the same object.
        overwritten = {"phase": "Running", "running": 7, "conditions": []}
        scheduler.applier.statuses.patch_status(PODGROUPS, bubble.namespace, "job", overwritten)
        wait_until(
            lambda: (scheduler.store.get("PodGroup", key) or {}).get("status", {}).get("running") == 7,
            "the cache shows the overwritten status",
        )
        scheduler.run_cycle(wait=True)
        assert scheduler.last is not None and scheduler.last.snapshot.podgroup_by_key[key] is group
        wait_until(
            lambda: (
                [c.get("type") for c in bubble.get_podgroup("job")["status"].get("conditions") or ()] == ["Scheduled"]
            ),
            "the scheduler writes its status again",
        )
    finally:
        scheduler.close()


def test_a_node_holding_pods_that_stops_being_ready_and_comes_back_admits_as_a_fresh_process(
    bubble: Bubble,
) -> None:
    """The cluster's room that admission counts (the Ready nodes' allocatable less what is bound on
    them) is carried across cycles (``pod_sums``): while a node holding another scheduler's pod
    is not Ready a new gang is refused, once it is Ready again it is admitted, each cycle exactly as
    a fresh process decides on the same objects."""
    kube = bubble.kube
    first_node = bubble.node("n0", cpu="8")
    second_node = bubble.node("n1", cpu="8")
    bubble.pod("theirs", cpu="5", scheduler="default-scheduler", node_name=second_node)
    bubble.pod("mine", cpu="2", node_name=first_node)
    bubble.pod("one", cpu="1")
    policy = bubble.policy(time_limit_s=5.0, search=False, overcommit_factor=1.0, admit_by_fit=False)
    scheduler = Scheduler(kube, policy=policy)
    scheduler.start()

    def cycle() -> Decision:
        result = scheduler.run_cycle(wait=True)
        assert _what(result.decision) == _what(_fresh_decision(scheduler, result.objects))
        return result.decision

    def phase_of(decision: Decision, gang: str) -> tuple[str, str]:
        (outcome,) = [o for o in decision.podgroups if o.podgroup == f"{bubble.namespace}/{gang}"]
        return outcome.phase, outcome.reason

    def set_ready(status: str) -> None:
        condition = {"type": "Ready", "status": status, "reason": "Test", "message": "test"}
        kube.patch(NODES.path(name=second_node, subresource="status"), {"status": {"conditions": [condition]}})
        wait_until(
            lambda: any(
                c.get("type") == "Ready" and c.get("status") == status
                for c in (scheduler.store.get("Node", second_node) or {}).get("status", {}).get("conditions", [])
            ),
            f"the cache shows n1 Ready={status}",
        )

    try:
        wait_cached(scheduler, bubble.namespace, pods=["theirs", "mine", "one"])
        assert cycle().bindings, "the lone pod is placed (8 cpu now held: 16 - 8 idle)"
        wait_until(lambda: bubble.placement()["one"] is not None, "the lone pod is bound")
        # The gang needs 8 cpu: refused while only n0 counts (its queue's share of the cluster is
        # then 8, of which 2 or 3 are held), admitted once n1 is Ready again (16 less the other
        # scheduler's 5 for the queues, 16 - 8 idle), then waiting for room (no node has 4 free twice).
        set_ready("False")
        bubble.gang("a", 2, cpu="4")
        wait_cached(scheduler, bubble.namespace, pods=["a-0", "a-1"], podgroups=["a"])
        assert phase_of(cycle(), "a") == ("Pending", "QueueOverused")
        set_ready("True")
        assert phase_of(cycle(), "a")[0] == "Inqueue"
    finally:
        scheduler.close()
