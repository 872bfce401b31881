"""What admission counts evictions could free (rule 5's "preempt or reclaim can make the room"): the
running pods' requests summed per queue and priority must give, for every group, what a plain walk
over every possible victim gives."""

from __future__ import annotations

import random

from builders import group, node, pod, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Policy, Snapshot
from vcsat.model import resources as res
from vcsat.model.conformance import protection
from vcsat.solver import enqueue


def plain_freeable(
    snap: Snapshot, policy: Policy, queue_name: str, priority: int, *, same_queue: bool
) -> dict[str, int]:
    """Every possible victim walked one by one: its own queue's pods of lower priority (preempt), and
    unless ``same_queue`` what reclaimable queues above their share hold (reclaim)."""
    state = enqueue._State.of(snap, policy)
    victims = [p for p in snap.pods if p.bound and not protection(p) and snap.queue_of(p) is not None]
    freed: dict[str, int] = {}
    if policy.preempt:
        for p in victims:
            if snap.queue_of(p) == queue_name and p.priority < priority:
                freed = res.add(freed, p.requests)
    victims_of = state._victims()
    if policy.reclaim and not same_queue and queue_name in victims_of.below:
        for other, held in victims_of.reclaimable.items():
            if other != queue_name:
                freed = res.add(freed, held)
    return freed


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    """Running pods of three queues and several priorities, some protected from eviction, one
    bound pod without a PodGroup, on two nodes."""
    rng = random.Random(draw(st.integers(0, 10_000)))
    queues = [queue("a", weight=1), queue("b", weight=2), queue("c", weight=1, reclaimable=False)]
    nodes = [node("n0", cpu="64", memory="256Gi", gpus=8), node("n1", cpu="64", memory="256Gi")]
    pods, groups = [], []
    for i in range(draw(st.integers(0, 24))):
        name = f"ns/run-{i}"
        q = rng.choice(["a", "b", "c"])
        groups.append(group(name, queue=q, phase="Running"))
        on = rng.choice(nodes)
        gpus = rng.choice([0, 1, 2]) if on.name == "n0" else 0
        pods.append(
            pod(
                f"{name}-0",
                cpu=str(rng.choice([1, 2, 4])),
                gpus=gpus,
                gpu_ids=list(range(gpus)) if gpus else None,
                group=name,
                node=on.name,
                priority=rng.choice([0, 5, 10, 20]),
                preemptable=rng.random() > 0.2,
            )
        )
    pods.append(pod("ns/lone", cpu="1", node="n1", priority=5, queue_name="a"))
    return snapshot(nodes, pods, groups, queues)


@settings(max_examples=60, deadline=None)
@given(
    snap=clusters(),
    queue_name=st.sampled_from(["a", "b", "c"]),
    priority=st.sampled_from([-1, 0, 5, 7, 10, 20, 30]),
    same_queue=st.booleans(),
    preempt=st.booleans(),
)
def test_freeable_is_the_plain_sum(
    snap: Snapshot, queue_name: str, priority: int, same_queue: bool, preempt: bool
) -> None:
    policy = Policy(time_limit_s=2, preempt=preempt)
    state = enqueue._State.of(snap, policy)
    asking = group("ns/ask", queue=queue_name, priority=priority)
    expected = plain_freeable(snap, policy, queue_name, priority, same_queue=same_queue)
    got = state._freeable(asking, same_queue=same_queue)
    assert {r: a for r, a in got.items() if a} == {r: a for r, a in expected.items() if a}


def test_lower_priorities_only_and_each_pod_once() -> None:
    """A table case: two pods of priority 5 and one of 10 in queue a; a group of priority 10 may free
    the two of priority 5 (4 cpu), one of 11 all three, one of 5 nothing."""
    nodes = [node("n0", cpu="64", memory="256Gi")]
    pods = [
        pod("ns/p1-0", cpu="1", group="ns/p1", node="n0", priority=5),
        pod("ns/p2-0", cpu="3", group="ns/p2", node="n0", priority=5),
        pod("ns/p3-0", cpu="8", group="ns/p3", node="n0", priority=10),
    ]
    groups = [group(f"ns/p{i}", queue="a", phase="Running") for i in (1, 2, 3)]
    snap = snapshot(nodes, pods, groups, [queue("a")])
    state = enqueue._State.of(snap, Policy(time_limit_s=2, reclaim=False))
    for priority, cpu in [(5, 0), (10, 4000), (11, 12000)]:
        freed = state._freeable(group("ns/ask", queue="a", priority=priority), same_queue=True)
        assert freed.get("cpu", 0) == cpu
