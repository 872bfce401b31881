"""Carries build afresh after a snapshot sharing few objects with the last one (``solver/changes.py``'s
``*_mostly_kept``): files read one after another in one process share no object, and taking every
old pod out and putting every new one in cost more than one fresh pass. Which path a carry takes is
checked here (the change set's touched sets are read only by a carry; the tally's contributions
are asked once per pod afresh, once per pod gone or new when carried), and whichever it takes its
answer equals a fresh pass's: a table of small cases and a Hypothesis property over sequences of
snapshots that keep most objects or are read again as new objects (equal, not the same)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod, Snapshot
from vcsat.model.hypernodes import resolve_hypernodes
from vcsat.solver import admission_groups, changes, node_side
from vcsat.solver.enqueue import group_need
from vcsat.solver.pricing.pod_tally import Tally

RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "pods")


@pytest.fixture(autouse=True)
def _empty() -> Iterator[None]:
    for module in (changes, node_side, admission_groups):
        module.forget()
    yield
    for module in (changes, node_side, admission_groups):
        module.forget()


def _copy(snap: Snapshot, *, pods: int | None = None, nodes: int | None = None, groups: int | None = None) -> Snapshot:
    """``snap`` with its first ``pods`` pods (``nodes``, ``groups``; all when None) made new objects,
    equal to the old ones (as a file read again makes them), the others the very same objects."""

    def renewed(objects: Any, count: int | None) -> list[Any]:
        count = len(objects) if count is None else count
        return [o.model_copy() if i < count else o for i, o in enumerate(objects)]

    return b.snapshot(
        nodes=renewed(snap.nodes, nodes),
        pods=renewed(snap.pods, pods),
        groups=renewed(snap.podgroups, groups),
        queues=snap.queues,
    )


def _cluster(pods: int = 8, nodes: int = 4) -> Snapshot:
    made = [b.node(f"n{i}", cpu="8", gpus=2) for i in range(nodes)]
    groups = [b.group(f"ns/g{i}", min_member=1, queue="q") for i in range(pods // 2)]
    placed = [
        b.pod(f"ns/p{i}", cpu="1", gpus=i % 2, group=f"ns/g{i // 2}", node=f"n{i % nodes}" if i % 3 else None)
        for i in range(pods)
    ]
    return b.snapshot(nodes=made, pods=placed, groups=groups, queues=[b.queue("q")])


BASE = _cluster()

# (what, pods renewed, nodes renewed, groups renewed, pods kept?, nodes kept?, groups kept?)
SHARES: list[tuple[str, int, int, int, bool, bool, bool]] = [
    ("nothing renewed", 0, 0, 0, True, True, True),
    ("a quarter of the pods", 2, 0, 0, True, True, True),
    ("half the pods", 4, 0, 0, True, True, True),  # 4 gone + 4 new of 8 + 8: exactly half, carried
    ("five of eight pods", 5, 0, 0, False, True, True),
    ("every object (a file read again)", 8, 4, 4, False, False, False),
    ("every node only", 0, 4, 0, True, False, True),
    ("three of four groups", 0, 0, 3, True, True, False),
]


@pytest.mark.parametrize(("what", "pods", "nodes", "groups", "kp", "kn", "kg"), SHARES, ids=[s[0] for s in SHARES])
def test_mostly_kept_counts_the_objects_gone_and_new(
    what: str, pods: int, nodes: int, groups: int, kp: bool, kn: bool, kg: bool
) -> None:
    found = changes.between(BASE, _copy(BASE, pods=pods, nodes=nodes, groups=groups))
    assert (found.pods_mostly_kept, found.nodes_mostly_kept, found.groups_mostly_kept) == (kp, kn, kg)


class _Counted:
    """A pod's contribution (one per pod, to its key), counting how often it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self, pod: Pod) -> tuple[tuple[str, int], ...]:
        self.asked += 1
        return ((pod.node_name or "pending", 1), ("gpus", pod.gpus))


def _fresh_sums(pods: Any) -> dict[str, int]:
    return Tally(_Counted()).sums(list(pods))


# (what, pods renewed after BASE, contributions asked for the second snapshot)
TALLIES: list[tuple[str, int, int]] = [
    ("nothing renewed: nothing asked", 0, 0),
    ("two renewed: two gone and two new asked", 2, 4),
    ("half renewed: carried, eight asked", 4, 8),
    ("five renewed: afresh, eight asked (not ten)", 5, 8),
    ("all renewed: afresh, eight asked (not sixteen)", 8, 8),
]


@pytest.mark.parametrize(("what", "renewed", "asked"), TALLIES, ids=[t[0] for t in TALLIES])
def test_a_tally_counts_afresh_when_most_pods_are_new(what: str, renewed: int, asked: int) -> None:
    contribution = _Counted()
    tally: Tally[str] = Tally(contribution)
    assert tally.of_snapshot(BASE) == _fresh_sums(BASE.pods)
    after = _copy(BASE, pods=renewed)
    contribution.asked = 0
    assert tally.of_snapshot(after) == _fresh_sums(after.pods)
    assert contribution.asked == asked
    # And by pod lists (no snapshot): the same rule, the same sums.
    listed: Tally[str] = Tally(contribution)
    listed.sums(list(BASE.pods))
    contribution.asked = 0
    assert listed.sums(list(after.pods)) == _fresh_sums(after.pods)
    assert contribution.asked == asked


def _touched_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which of the change set's touched sets are read from now on (only a carry reads them)."""
    read: list[str] = []
    for name in ("nodes_touched", "groups_touched"):
        prop = changes.Changes.__dict__[name]

        def reading(self: changes.Changes, prop: Any = prop, name: str = name) -> frozenset[str]:
            read.append(name)
            return prop.func(self)  # type: ignore[no-any-return]

        monkeypatch.setattr(changes.Changes, name, property(reading))
    return read


# (what, pods renewed, nodes renewed, groups renewed, node rooms carried?, group sums carried?)
CARRIES: list[tuple[str, int, int, int, bool, bool]] = [
    ("two pods renewed: both carry", 2, 0, 0, True, True),
    ("a file read again: both afresh", 8, 4, 4, False, False),
    ("every node renewed: rooms afresh, groups carried", 0, 4, 0, False, True),
    ("three groups renewed: rooms carried, groups afresh", 0, 0, 3, True, False),
    ("five pods renewed: both afresh", 5, 0, 0, False, False),
]


@pytest.mark.parametrize(("what", "pods", "nodes", "groups", "rooms", "sums"), CARRIES, ids=[c[0] for c in CARRIES])
def test_node_rooms_and_group_sums_carry_only_what_is_mostly_kept(
    what: str, pods: int, nodes: int, groups: int, rooms: bool, sums: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    node_side.node_rooms(BASE, RESOURCES)
    admission_groups.needs_and_holdings(BASE, group_need)
    after = _copy(BASE, pods=pods, nodes=nodes, groups=groups)
    read = _touched_read(monkeypatch)
    carried_rooms = node_side.node_rooms(after, RESOURCES)
    assert ("nodes_touched" in read) == rooms
    carried_sums = admission_groups.needs_and_holdings(after, group_need)
    assert ("groups_touched" in read) == sums
    assert carried_rooms == _fresh_rooms(after)
    assert carried_sums == _fresh_group_sums(after)


def _fresh_rooms(snap: Snapshot) -> list[node_side.NodeRoom]:
    on_node = snap.pods_on_node
    return [node_side.node_room(n, on_node.get(n.name, ()), RESOURCES) for n in snap.nodes]


def _fresh_group_sums(snap: Snapshot) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    pods_of = snap.pods_of_group
    need = {g.key: group_need(g, pods_of.get(g.key, ())) for g in snap.podgroups}
    held = {g.key: admission_groups.holdings(pods_of.get(g.key, ())) for g in snap.podgroups}
    return need, held


def _step(rng: random.Random, snap: Snapshot) -> Snapshot:
    """The next snapshot: read again (every object new), or some objects renewed, some pods bound or
    gone, a new pod; the others the very same objects."""
    if rng.random() < 0.3:
        return _copy(snap)
    names = [n.name for n in snap.nodes]
    pods: list[Pod] = []
    for pod in snap.pods:
        roll = rng.random()
        if roll < 0.1:
            continue
        if roll < 0.3 and not pod.bound:
            pod = pod.model_copy(update={"node_name": rng.choice(names)})
        elif roll < 0.4:
            pod = pod.model_copy()
        pods.append(pod)
    key = f"ns/x{rng.randrange(10**6)}"
    pods.append(b.pod(key, cpu=str(rng.choice([1, 2])), gpus=rng.choice([0, 1]), group=snap.podgroups[0].key))
    nodes = [n.model_copy() if rng.random() < 0.2 else n for n in snap.nodes]
    groups = [g.model_copy() if rng.random() < 0.2 else g for g in snap.podgroups]
    return b.snapshot(nodes=nodes, pods=pods, groups=groups, queues=snap.queues)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(1, 6), size=st.integers(2, 24))
def test_carried_or_afresh_every_answer_is_a_fresh_passes(seed: int, steps: int, size: int) -> None:
    rng = random.Random(seed)
    for module in (changes, node_side, admission_groups):
        module.forget()
    tally: Tally[str] = Tally(_Counted())
    snap = _cluster(pods=size, nodes=rng.randint(1, 5))
    for _ in range(steps):
        assert tally.of_snapshot(snap) == _fresh_sums(snap.pods)
        assert node_side.node_rooms(snap, RESOURCES) == _fresh_rooms(snap)
        assert admission_groups.needs_and_holdings(snap, group_need) == _fresh_group_sums(snap)
        snap = _step(rng, snap)


def test_the_hypernode_tree_is_kept_for_the_same_nodes_not_for_equal_ones() -> None:
    """Equal nodes read again are other objects: the tree is resolved again (equal to the last one),
    not found by comparing every node's fields; the very same nodes get the very same tree."""
    nodes = [b.node(f"n{i}", labels={"rack": f"r{i % 2}"}) for i in range(4)]
    first = resolve_hypernodes([], nodes)
    assert resolve_hypernodes([], list(nodes)) is first
    again = resolve_hypernodes([], [n.model_copy() for n in nodes])
    assert again is not first
    assert again == first
