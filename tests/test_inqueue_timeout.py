"""Enqueue's InqueueTimeout through ``solve``: a group admitted long ago with nothing placed gives its
overcommit reservation back, so that a group that can run now is admitted and placed in its stead;
within the timeout, or without a clock, it keeps its room."""

from __future__ import annotations

from typing import Any

import pytest
from builders import group, node, pod, queue, snapshot

from vcsat.model import Decision, PodGroup, Policy, Snapshot
from vcsat.solver import check, solve
from vcsat.solver.enqueue import next_inqueue_timeout

POLICY = Policy(time_limit_s=5, overcommit_factor=1.0, preempt=False, reclaim=False, inqueue_timeout_s=600)
ADMITTED_AT = 1_000_000.0


def pg(key: str, phase: str, *, since: float | None = None, **kwargs: Any) -> PodGroup:
    return group(key, **kwargs).model_copy(update={"phase": phase, "inqueue_since": since})


def stalled_cluster(now: float | None, *, big_queue: str = "default", small_queue: str = "default") -> Snapshot:
    """Two 4-GPU nodes with 2 GPUs in use on each: ``big`` (Inqueue, one 4-GPU pod) fits no node now,
    yet reserves the cluster's 4 idle GPUs (overcommit factor 1), so ``small`` (2 GPUs) is refused."""
    nodes = [node(f"n{i}", cpu="32", memory="128Gi", gpus=4) for i in (1, 2)]
    pods = [
        pod("run/r1", gpus=2, node="n1", group="run/r", gpu_ids=[0, 1]),
        pod("run/r2", gpus=2, node="n2", group="run/r", gpu_ids=[0, 1]),
        pod("ns/big-0", gpus=4, group="ns/big"),
        pod("ns/small-0", gpus=2, group="ns/small"),
    ]
    groups = [
        pg("run/r", "Running", min_member=2, queue=small_queue),
        pg("ns/big", "Inqueue", since=ADMITTED_AT, queue=big_queue),
        pg("ns/small", "Pending", queue=small_queue),
    ]
    queues = [queue(name) for name in sorted({big_queue, small_queue} - {"default"})]
    snap = snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)
    return snap.model_copy(update={"now": now})


def outcome(decision: Decision, key: str) -> tuple[str, str]:
    found = next(o for o in decision.podgroups if o.podgroup == key)
    return found.phase, found.reason


def decide(snap: Snapshot, policy: Policy = POLICY) -> Decision:
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    return decision


@pytest.mark.parametrize(
    ("now", "timeout", "big", "small", "bound"),
    [
        # Inqueue longer than the timeout, nothing placed: back to Pending, its room goes to small.
        (ADMITTED_AT + 600, 600.0, ("Pending", "InqueueTimeout"), ("Running", ""), ["ns/small-0"]),
        (ADMITTED_AT + 7200, 600.0, ("Pending", "InqueueTimeout"), ("Running", ""), ["ns/small-0"]),
        # Within the timeout: it keeps its reservation; small waits for room (its queue is committed).
        (ADMITTED_AT + 599, 600.0, ("Inqueue", "InsufficientResources"), ("Pending", "QueueOverused"), []),
        # No clock (an instance dumped without one): nothing times out.
        (None, 600.0, ("Inqueue", "InsufficientResources"), ("Pending", "QueueOverused"), []),
        # No timeout (Volcano's behaviour).
        (ADMITTED_AT + 7200, None, ("Inqueue", "InsufficientResources"), ("Pending", "QueueOverused"), []),
    ],
)
def test_inqueue_timeout_releases_the_reservation(
    now: float | None, timeout: float | None, big: tuple[str, str], small: tuple[str, str], bound: list[str]
) -> None:
    policy = POLICY.model_copy(update={"inqueue_timeout_s": timeout})
    decision = decide(stalled_cluster(now), policy)
    assert outcome(decision, "ns/big") == big
    assert outcome(decision, "ns/small") == small
    assert [b.pod for b in decision.bindings] == bound


def test_the_timeout_message_says_how_long_it_waited() -> None:
    decision = decide(stalled_cluster(ADMITTED_AT + 900))
    message = next(o.message for o in decision.podgroups if o.podgroup == "ns/big")
    assert "Inqueue for 900s (timeout 600s) with no pod placed" in message


def test_a_group_with_a_pod_placed_never_times_out() -> None:
    snap = stalled_cluster(ADMITTED_AT + 7200)
    started = pod("ns/big-1", gpus=1, node="n1", group="ns/big", gpu_ids=[2])
    groups = [g.model_copy(update={"min_member": 2}) if g.key == "ns/big" else g for g in snap.podgroups]
    snap = snap.model_copy(update={"pods": (*snap.pods, started), "podgroups": tuple(groups)})
    snap = Snapshot.model_validate(snap.model_dump())  # fresh cached views
    assert outcome(decide(snap), "ns/big")[0] == "Inqueue"


def test_a_queue_below_its_share_keeps_its_room_from_a_queue_that_holds_its_own() -> None:
    # Queue b holds its deserved half (4 of 8 GPUs) and waits with small; queue a holds nothing:
    # releasing a's reservation would lend it to b, so big keeps it even past the timeout.
    decision = decide(stalled_cluster(ADMITTED_AT + 7200, big_queue="a", small_queue="b"))
    assert outcome(decision, "ns/big") == ("Inqueue", "InsufficientResources")
    assert outcome(decision, "ns/small") == ("Pending", "ClusterOverused")


def test_timeouts_are_deterministic_for_the_same_clock() -> None:
    snap = stalled_cluster(ADMITTED_AT + 601)
    first, second = decide(snap), decide(snap)
    assert (first.bindings, first.podgroups) == (second.bindings, second.podgroups)


@pytest.mark.parametrize(
    ("now", "timeout", "due"),
    [
        (ADMITTED_AT + 10, 600.0, ADMITTED_AT + 600),
        (ADMITTED_AT + 600, 600.0, None),  # already due: the cycle at hand acts on it
        (None, 600.0, None),
        (ADMITTED_AT, None, None),
    ],
)
def test_next_inqueue_timeout(now: float | None, timeout: float | None, due: float | None) -> None:
    policy = POLICY.model_copy(update={"inqueue_timeout_s": timeout})
    assert next_inqueue_timeout(stalled_cluster(now), policy) == due
