"""Admission by fit (enqueue rule 6): a group refused for the cluster's overcommit room is admitted when
its gang fits the nodes' free room now, after what admitted groups' gangs take of it, and its queue
stays within its deserved share; through ``admit`` and through ``solve`` with the validator."""

from __future__ import annotations

from typing import Any

import pytest
from builders import group, node, pod, queue, snapshot

from vcsat.model import Decision, Pod, PodGroup, Policy, Snapshot
from vcsat.solver import check, solve
from vcsat.solver.enqueue import admit

POLICY = Policy(time_limit_s=5, overcommit_factor=1.0, preempt=False, reclaim=False, inqueue_timeout_s=None)


def pg(key: str, phase: str = "Pending", created: float = 0.0, **kwargs: Any) -> PodGroup:
    return group(key, **kwargs).model_copy(update={"phase": phase, "created": created})


def gang(
    key: str, members: int, gpus: int, *, queue_name: str = "c", created: float = 0.0, **pod_kwargs: Any
) -> tuple[PodGroup, list[Pod]]:
    """A Pending group of ``members`` pods of ``gpus`` GPUs each, all needed (minMember)."""
    pods = [pod(f"{key}-{i}", gpus=gpus, group=key, created=created, **pod_kwargs) for i in range(members)]
    return pg(key, queue=queue_name, min_member=members, created=created), pods


def stalled(*extra: tuple[PodGroup, list[Pod]], weights: tuple[int, int, int] = (1, 1, 1)) -> Snapshot:
    """Two 8-GPU nodes (n1 labelled pool=x), 6 GPUs in use on each (queues a and b); queue a's admitted
    8-GPU gang waits for a whole node and reserves more than the 4 idle GPUs (overcommit factor 1), so
    every other group is ``ClusterOverused`` by Volcano's rule, while 2 GPUs stand free on each node."""
    nodes = [
        node("n1", cpu="64", memory="256Gi", gpus=8, labels={"pool": "x"}),
        node("n2", cpu="64", memory="256Gi", gpus=8),
    ]
    pods = [
        pod("a/run-0", gpus=6, group="a/run", node="n1", gpu_ids=list(range(6))),
        pod("b/run-0", gpus=6, group="b/run", node="n2", gpu_ids=list(range(6))),
        pod("a/big-0", gpus=8, group="a/big"),
    ]
    groups = [
        pg("a/run", "Running", queue="a"),
        pg("b/run", "Running", queue="b"),
        pg("a/big", "Inqueue", queue="a"),
    ]
    for more_group, more_pods in extra:
        groups.append(more_group)
        pods.extend(more_pods)
    queues = [queue(name, weight=weight) for name, weight in zip("abc", weights, strict=True)]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


@pytest.mark.parametrize(
    ("groups", "weights", "expected"),
    [
        # One pod of 2 GPUs fits n1 or n2: admitted although the overcommit room is used.
        ([gang("c/small", 1, 2)], (1, 1, 1), {"c/small": (True, "")}),
        # Two pods of 2 GPUs: one on each node.
        ([gang("c/pair", 2, 2)], (1, 1, 1), {"c/pair": (True, "")}),
        # Five pods of 1 GPU: 4 GPUs free in all (queue c deserves 5 of the 16).
        ([gang("c/five", 5, 1)], (1, 1, 1), {"c/five": (False, "does not fit")}),
        # 3 GPUs in one pod: 4 GPUs free in the cluster, but no node has 3.
        ([gang("c/wide", 1, 3)], (1, 1, 1), {"c/wide": (False, "does not fit")}),
        # Predicates count: both pods must go to pool x, where only 2 GPUs are free.
        ([gang("c/pinned", 2, 2, selector={"pool": "x"})], (1, 1, 1), {"c/pinned": (False, "does not fit")}),
        # Queue c deserves under one GPU at weight 1 against 10 and 10: 2 GPUs would put it above.
        ([gang("c/small", 1, 2)], (10, 10, 1), {"c/small": (False, "above its deserved share")}),
        # The room an earlier admission takes is gone for the next group (c/first is older).
        (
            [gang("c/first", 4, 1, created=1), gang("c/second", 1, 1, created=2)],
            (1, 1, 1),
            {"c/first": (True, ""), "c/second": (False, "does not fit")},
        ),
    ],
    ids=["fits", "gang-fits", "gang-too-big", "no-node-fits", "predicates", "above-share", "room-taken"],
)
def test_admission_by_fit(
    groups: list[tuple[PodGroup, list[Pod]]], weights: tuple[int, int, int], expected: dict[str, tuple[bool, str]]
) -> None:
    result = admit(stalled(*groups, weights=weights), POLICY)
    assert result["a/big"].admitted
    for key, (admitted, words) in expected.items():
        verdict = result[key]
        assert verdict.admitted == admitted, verdict
        if not admitted:
            assert verdict.reason == "ClusterOverused"
            assert words in verdict.message


def test_an_inqueue_gang_that_fits_now_takes_its_room_first() -> None:
    # Queue a's Inqueue 2-GPU gang can be placed now: its room is its, so c's pair finds only 2 GPUs.
    waiting = (pg("a/mid", "Inqueue", queue="a"), [pod("a/mid-0", gpus=2, group="a/mid")])
    result = admit(stalled(waiting, gang("c/pair", 2, 2)), POLICY)
    assert result["a/mid"].admitted
    assert (result["c/pair"].admitted, result["c/pair"].reason) == (False, "ClusterOverused")
    assert "does not fit" in result["c/pair"].message


def test_volcano_overcommit_room_still_admits_first() -> None:
    # A larger factor leaves overcommit room: admitted by Volcano's rule, fit or not.
    result = admit(stalled(gang("c/wide", 1, 3)), POLICY.model_copy(update={"overcommit_factor": 2.0}))
    assert result["c/wide"].admitted


def decide(snap: Snapshot) -> Decision:
    decision = solve(snap, POLICY)
    assert check(snap, decision, POLICY) == []
    return decision


def phase_of(decision: Decision, key: str) -> tuple[str, str]:
    found = next(o for o in decision.podgroups if o.podgroup == key)
    return found.phase, found.reason


@pytest.mark.parametrize(
    ("groups", "weights", "key", "phase", "bound"),
    [
        ([gang("c/pair", 2, 2)], (1, 1, 1), "c/pair", ("Running", ""), ["c/pair-0", "c/pair-1"]),
        ([gang("c/small", 1, 2)], (10, 10, 1), "c/small", ("Pending", "ClusterOverused"), []),
        ([gang("c/wide", 1, 3)], (1, 1, 1), "c/wide", ("Pending", "ClusterOverused"), []),
    ],
    ids=["fits-and-runs", "above-share", "no-node-fits"],
)
def test_admission_by_fit_through_solve(
    groups: list[tuple[PodGroup, list[Pod]]],
    weights: tuple[int, int, int],
    key: str,
    phase: tuple[str, str],
    bound: list[str],
) -> None:
    decision = decide(stalled(*groups, weights=weights))
    assert phase_of(decision, key) == phase
    assert phase_of(decision, "a/big") == ("Inqueue", "InsufficientResources")
    assert sorted(b.pod for b in decision.bindings) == bound


def test_without_admission_by_fit_the_overcommit_gate_is_volcano_s() -> None:
    snap = stalled(gang("c/small", 1, 2))
    by_fit = admit(snap, POLICY)["c/small"]
    volcano = admit(snap, POLICY.model_copy(update={"admit_by_fit": False}))["c/small"]
    assert (by_fit.admitted, volcano.admitted) == (True, False)
    assert volcano.reason == "ClusterOverused" and "fit" not in volcano.message
