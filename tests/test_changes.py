"""One change set between two snapshots for every carry (``solver/changes.py``): it names exactly the
objects gone and new by identity; each carry that reads it (each node's room, the groups' needs, the
pods' sums, the pricing tallies, admission's commitments) equals a fresh pass after any pair of
snapshots sharing objects (additions, removals, replacements, a node changing labels or room, a
PodGroup changing minMember); and a change hidden from the change set is caught here."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator
from typing import Any

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Node, Pod, PodGroup, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.solver import admission_commitments, admission_groups, admission_ours, changes, node_side, pod_sums
from vcsat.solver.enqueue import _State, group_need, is_ours, ours_of
from vcsat.solver.pricing import fragmentation, scarcity
from vcsat.solver.pricing.pod_tally import Tally

POLICY = Policy(time_limit_s=1.0, overcommit_factor=1.0)
RESOURCES = (res.CPU, res.MEMORY, res.GPU, res.PODS)
QUEUES = [b.queue("q"), b.queue("r", weight=2)]


@pytest.fixture(autouse=True)
def _carrying() -> Iterator[None]:
    """Every carry starts empty and carries across snapshots, as the live scheduler runs them."""
    _forget_all()
    pod_sums.carry()
    yield
    pod_sums.carry(False)
    _forget_all()


def _forget_all() -> None:
    for module in (changes, node_side, admission_groups, admission_commitments, admission_ours, pod_sums):
        module.forget()
    scarcity._DEMAND = Tally(scarcity._pod_demand)
    fragmentation._TASKS = Tally(fragmentation._task_of)


# --- the change set itself: table cases ---------------------------------------------------------

N0, N1 = b.node("n0", gpus=2), b.node("n1", gpus=2)
G = b.group("ns/g", min_member=2, queue="q")
P0 = b.pod("ns/p0", group="ns/g", node="n0")
P1 = b.pod("ns/p1", group="ns/g")
P2 = b.pod("ns/p2", node="n1")
BASE = b.snapshot(nodes=[N0, N1], pods=[P0, P1, P2], groups=[G], queues=QUEUES)

CASES: list[tuple[str, Snapshot, set[str], set[str], set[str], set[str]]] = [
    # (what, after BASE, pods gone, pods new, nodes touched, groups touched)
    ("nothing", b.snapshot(nodes=[N0, N1], pods=[P0, P1, P2], groups=[G], queues=QUEUES), set(), set(), set(), set()),
    (
        "a pending pod bound",
        b.snapshot(nodes=[N0, N1], pods=[P0, b.pod("ns/p1", group="ns/g", node="n1"), P2], groups=[G], queues=QUEUES),
        {"ns/p1"},
        {"ns/p1"},
        {"n1"},
        {"ns/g"},
    ),
    (
        "a bound pod gone",
        b.snapshot(nodes=[N0, N1], pods=[P1, P2], groups=[G], queues=QUEUES),
        {"ns/p0"},
        set(),
        {"n0"},
        {"ns/g"},
    ),
    (
        "an equal copy is another object",
        b.snapshot(nodes=[N0, N1], pods=[P0, P1, P2.model_copy()], groups=[G], queues=QUEUES),
        {"ns/p2"},
        {"ns/p2"},
        {"n1"},
        set(),
    ),
    (
        "a node's labels",
        b.snapshot(
            nodes=[N0, N1.model_copy(update={"labels": {"zone": "a"}})], pods=[P0, P1, P2], groups=[G], queues=QUEUES
        ),
        set(),
        set(),
        {"n1"},
        set(),
    ),
    (
        "a PodGroup's minMember",
        b.snapshot(nodes=[N0, N1], pods=[P0, P1, P2], groups=[G.model_copy(update={"min_member": 1})], queues=QUEUES),
        set(),
        set(),
        set(),
        {"ns/g"},
    ),
    (
        "a new node and a pod on it",
        b.snapshot(
            nodes=[N0, N1, b.node("n2")], pods=[P0, P1, P2, b.pod("ns/p3", node="n2")], groups=[G], queues=QUEUES
        ),
        set(),
        {"ns/p3"},
        {"n2"},
        set(),
    ),
]


@pytest.mark.parametrize(("what", "after", "gone", "new", "nodes", "groups"), CASES, ids=[c[0] for c in CASES])
def test_change_set_cases(
    what: str, after: Snapshot, gone: set[str], new: set[str], nodes: set[str], groups: set[str]
) -> None:
    found = changes.between(BASE, after)
    assert {p.key for p in found.pods_gone} == gone
    assert {p.key for p in found.pods_new} == new
    assert found.nodes_touched == nodes
    assert found.groups_touched == groups
    assert changes.between(BASE, after) is found  # found once for the pair
    assert changes.between(after, after).pods_new == ()  # another pair, kept with it
    assert changes.between(BASE, after) is found
    assert found.pod_ids == {id(p): p for p in after.pods}
    back = changes.between(after, BASE)  # the reverse pair: gone and new swap
    assert {p.key for p in back.pods_new} == gone and {p.key for p in back.pods_gone} == new


# --- every carry equals a fresh pass over random pairs -------------------------------------------


def _node(rng: random.Random, name: str) -> Node:
    return b.node(name, cpu=str(rng.choice([4, 8, 16])), gpus=rng.choice([0, 2, 4]), labels={"zone": rng.choice("ab")})


def _group(rng: random.Random, key: str) -> PodGroup:
    group = b.group(
        key,
        min_member=rng.choice([1, 2, 3]),
        queue=rng.choice(["q", "r"]),
        min_resources={"cpu": str(rng.choice([1, 2]))} if rng.random() < 0.3 else None,
        phase=rng.choice(["", "Inqueue", "Running"]),
    )
    # Whose a group without pods is (admission's ``is_ours``).
    return group.model_copy(update={"scheduler_name": rng.choice([None, POLICY.scheduler_name, "other"])})


def _pod(rng: random.Random, key: str, group: str | None, nodes: list[str]) -> Pod:
    bound = nodes and rng.random() < 0.5
    return b.pod(
        key,
        cpu=str(rng.choice([1, 2])),
        gpus=rng.choice([0, 0, 1]),
        group=group,
        node=rng.choice(nodes) if bound else None,
        managed=rng.random() < 0.85,
        created=float(rng.randrange(50)),
    )


class _Cluster:
    """Objects by key; a step replaces, removes and adds some and keeps the others as the very objects."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.made = 0
        self.nodes = {f"n{i}": _node(rng, f"n{i}") for i in range(rng.randint(1, 4))}
        self.groups: dict[str, PodGroup] = {}
        self.pods: dict[str, Pod] = {}
        for _ in range(rng.randint(1, 5)):
            self._add_group()

    def _add_group(self) -> None:
        key = f"ns/g{self.made}"
        self.made += 1
        self.groups[key] = _group(self.rng, key)
        for k in range(self.rng.randint(0, 3)):
            self.pods[f"{key}-{k}"] = _pod(self.rng, f"{key}-{k}", key, list(self.nodes))

    def snapshot(self) -> Snapshot:
        return b.snapshot(
            nodes=self.nodes.values(), pods=self.pods.values(), groups=self.groups.values(), queues=QUEUES
        )

    def step(self) -> None:
        rng = self.rng
        for name, node in list(self.nodes.items()):
            roll = rng.random()
            if roll < 0.1 and len(self.nodes) > 1:
                del self.nodes[name]
                self.pods = {k: p for k, p in self.pods.items() if p.node_name != name}  # as the converter
            elif roll < 0.2:
                self.nodes[name] = node.model_copy(update={"labels": {"zone": rng.choice("abc")}})
            elif roll < 0.3:
                room = dict(node.allocatable)
                room[res.CPU] = rng.choice([2000, 8000, 32000])
                self.nodes[name] = node.model_copy(update={"allocatable": room})
        if rng.random() < 0.3:
            name = f"n{len(self.nodes) + self.made}"
            self.nodes[name] = _node(rng, name)
        for key, group in list(self.groups.items()):
            roll = rng.random()
            if roll < 0.1:
                del self.groups[key]
            elif roll < 0.3:
                self.groups[key] = group.model_copy(update={"min_member": rng.choice([1, 2, 3, 4])})
        names = list(self.nodes)
        for key, pod in list(self.pods.items()):
            roll = rng.random()
            if roll < 0.15:
                del self.pods[key]
            elif roll < 0.35:
                self.pods[key] = _pod(rng, key, pod.group, names)
            elif roll < 0.45:
                self.pods[key] = pod.model_copy()
        for _ in range(rng.randint(0, 2)):
            self._add_group()


def _carried(snap: Snapshot) -> dict[str, Any]:
    """What each carry gives for ``snap`` (carrying on, the change set read since the last one)."""
    need, held = admission_groups.needs_and_holdings(snap, group_need)
    ours = {g.key for g in snap.podgroups if is_ours(g, snap, POLICY.scheduler_name)}
    state = _State.of(snap, POLICY, ours)
    return {
        "rooms": node_side.node_rooms(snap, RESOURCES),
        "needs": (need, held),
        "queue sums": pod_sums.queue_sums(snap),
        "ready room": pod_sums.ready_room(snap),
        "demand": scarcity._DEMAND.of_snapshot(snap),
        "tasks": fragmentation._TASKS.of_snapshot(snap),
        "commitments": admission_commitments.commitments(
            snap, state.need, state.held, state.reserving, POLICY.scheduler_name
        ),
        "ours": admission_ours.ours(snap, POLICY.scheduler_name, ours_of, is_ours),
    }


def _fresh(snap: Snapshot) -> dict[str, Any]:
    """The same, each computed afresh from ``snap`` alone."""
    pods_of = snap.pods_of_group
    on_node = snap.pods_on_node
    need = {g.key: group_need(g, pods_of.get(g.key, ())) for g in snap.podgroups}
    held = {g.key: admission_groups.holdings(pods_of.get(g.key, ())) for g in snap.podgroups}
    ours = {g.key for g in snap.podgroups if is_ours(g, snap, POLICY.scheduler_name)}
    state = _State.of(snap, POLICY, ours)
    closed = {queue.name for queue in snap.queues if not queue.open}
    return {
        "rooms": [node_side.node_room(n, on_node.get(n.name, ()), RESOURCES) for n in snap.nodes],
        "needs": (need, held),
        "queue sums": pod_sums._fresh_queue_sums(snap, closed),
        "ready room": pod_sums._fresh_ready(snap),
        "demand": Tally(scarcity._pod_demand).sums(snap.pods),
        "tasks": Tally(fragmentation._task_of).sums(snap.pods),
        "commitments": admission_commitments._fresh(snap.podgroups, need, held, state.reserving),
        "ours": ours,
    }


def _same(carried: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """The carries whose answer differs from the fresh one (zero amounts are absent amounts)."""
    return [name for name in fresh if _nonzero(carried[name]) != _nonzero(fresh[name])]


def _nonzero(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _nonzero(v) for k, v in value.items() if v != 0}
    if isinstance(value, (tuple, list)):
        return type(value)(_nonzero(v) for v in value)
    return value


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(1, 6))
def test_every_carry_equals_a_fresh_pass(seed: int, steps: int) -> None:
    rng = random.Random(seed)
    cluster = _Cluster(rng)
    for _ in range(steps):
        snap = cluster.snapshot()
        assert _same(_carried(snap), _fresh(snap)) == []
        if rng.random() < 0.1:
            cluster = _Cluster(rng)  # any snapshot may follow any other: nothing shared
        else:
            cluster.step()


# --- a change hidden from the change set is caught ----------------------------------------------


def _hiding(found: changes.Changes) -> changes.Changes:
    """The change set with nothing gone or new: every carry keeps its last answer."""
    return dataclasses.replace(
        found, pods_gone=(), pods_new=(), nodes_gone=(), nodes_new=(), groups_gone=(), groups_new=()
    )


def _base(
    pods: tuple[Pod, ...] = (), nodes: tuple[Node, ...] | None = None, groups: tuple[PodGroup, ...] | None = None
) -> Snapshot:
    """A snapshot of :data:`BASE`'s very objects (its pods all ours), with ``pods`` added and the
    nodes or groups given instead of its own."""
    return b.snapshot(
        nodes=BASE.nodes if nodes is None else nodes,
        pods=(*OURS, *pods),
        groups=BASE.podgroups if groups is None else groups,
        queues=QUEUES,
    )


OURS = (P0, P1, P2)
G1 = G.model_copy(update={"min_member": 1})
G_OTHER = G.model_copy(update={"scheduler_name": "other"})
HIDDEN: list[tuple[str, Callable[[], Snapshot]]] = [
    # (the carry that goes stale, the next snapshot after BASE)
    ("rooms", lambda: _base(pods=(b.pod("ns/p9", node="n0"),))),
    ("rooms", lambda: _base(nodes=(N0.model_copy(update={"allocatable": {"cpu": 1}}), N1))),
    ("needs", lambda: _base(groups=(G1,))),
    ("queue sums", lambda: _base(pods=(b.pod("ns/p9", group="ns/g"),))),
    ("ready room", lambda: _base(nodes=(N0, N1.model_copy(update={"allocatable": {"cpu": 64000}})))),
    ("demand", lambda: _base(pods=(b.pod("ns/p9", gpus=1, group="ns/g"),))),
    ("tasks", lambda: _base(pods=(b.pod("ns/p9", gpus=1, group="ns/g"),))),
    ("commitments", lambda: _base(groups=(G.model_copy(update={"queue": "r"}),))),
    # A group of ours (BASE's pods) loses them all and is named for another scheduler.
    ("ours", lambda: b.snapshot(nodes=BASE.nodes, pods=(P2,), groups=(G_OTHER,), queues=QUEUES)),
]


@pytest.mark.parametrize(("carry", "change"), HIDDEN, ids=[f"{c}-{i}" for i, (c, _) in enumerate(HIDDEN)])
def test_a_change_hidden_from_the_change_set_is_caught(
    carry: str, change: Callable[[], Snapshot], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The carry reads the change set: with the change hidden from it, its answer is stale and the
    comparison above fails; with the change set as found, it is a fresh pass's."""
    base, after = _base(), change()
    _carried(base)
    truth = changes.between
    monkeypatch.setattr(changes, "between", lambda before, now: _hiding(truth(before, now)))
    assert carry in _same(_carried(after), _fresh(after))
    _forget_all()
    monkeypatch.setattr(changes, "between", truth)
    _carried(base)
    assert _same(_carried(after), _fresh(after)) == []
