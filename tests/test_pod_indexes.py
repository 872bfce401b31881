"""The snapshot's pod indexes carried across live cycles (``solver/pod_indexes.py``): after a pair of
snapshots sharing pods, each carried index (``pods_of_group``, ``pods_on_node``, ``pod_by_key``) is
the fresh one, keys and pods in the fresh order, for pods added, removed, bound, finished or moved to
another group, a key's first pod gone and a key new before the others; snapshots that share pods in
another order, hold a pod twice or two pods of one key are left to make their own; and nothing is
carried while the live scheduler does not carry."""

from __future__ import annotations

import random
from collections.abc import Iterator

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod, Snapshot
from vcsat.solver import changes, pod_indexes, pod_sums

INDEXES = ("pods_of_group", "pods_on_node", "pod_by_key")


@pytest.fixture(autouse=True)
def _carrying() -> Iterator[None]:
    pod_indexes.forget()
    changes.forget()
    pod_sums.carry()
    yield
    pod_sums.carry(False)
    pod_indexes.forget()
    changes.forget()


def _fresh(snapshot: Snapshot, name: str) -> list[tuple[str, object]]:
    """The index as the snapshot makes it, as (key, entry) pairs in its order."""
    index = getattr(Snapshot, name).func(snapshot)
    return list(index.items())


def _carry(before: Snapshot, after: Snapshot) -> set[str]:
    """Carry ``before`` (its indexes read, as a cycle does) then ``after``; the indexes carried."""
    pod_indexes.carry(before)
    for name in INDEXES:
        getattr(before, name)
    pod_indexes.carry(after)
    return {name for name in INDEXES if name in after.__dict__}


def _identical(carried: list[tuple[str, object]], fresh: list[tuple[str, object]]) -> bool:
    """Same keys in the same order, each entry the very pods in the same order."""

    def pods(entry: object) -> tuple[int, ...]:
        return tuple(map(id, entry)) if isinstance(entry, tuple) else (id(entry),)

    return [k for k, _ in carried] == [k for k, _ in fresh] and all(
        pods(c) == pods(f) for (_, c), (_, f) in zip(carried, fresh, strict=True)
    )


def _assert_fresh(after: Snapshot) -> None:
    for name in INDEXES:
        assert _identical(list(getattr(after, name).items()), _fresh(after, name)), name


N0, N1 = "n0", "n1"
A0 = b.pod("ns/a0", group="ns/a", node=N0)
A1 = b.pod("ns/a1", group="ns/a")
B0 = b.pod("ns/b0", group="ns/b", node=N1)
B1 = b.pod("ns/b1", group="ns/b", node=N0)
C0 = b.pod("ns/c0", node=N1)
D0 = b.pod("ns/d0", group="ns/d")
BASE = (A0, A1, B0, B1, C0, D0)

CASES: list[tuple[str, tuple[Pod, ...]]] = [
    # (what, the pods after BASE's, in the converter's order: by key)
    ("nothing", BASE),
    ("a pod added in the middle", (A0, A1, b.pod("ns/a2", group="ns/a", node=N1), B0, B1, C0, D0)),
    ("a pod added at the end", (*BASE, b.pod("ns/e0", group="ns/e", node=N1))),
    ("a new group before the others", (b.pod("ns/0", group="ns/z", node=N1), *BASE)),
    ("a pod removed", (A0, A1, B0, C0, D0)),
    ("a group's first pod removed", (A0, A1, B1, C0, D0)),
    ("a node's first pod removed", (A1, B0, B1, C0, D0)),
    ("every pod of a group removed", (B0, B1, C0, D0)),
    ("a pending pod bound", (A0, b.pod("ns/a1", group="ns/a", node=N1), B0, B1, C0, D0)),
    ("a bound pod finished", (A0, A1, B0, B1, b.pod("ns/c0", node=N1, phase="Succeeded"), D0)),
    ("a pod moved to another group", (A0, A1, B0, b.pod("ns/b1", group="ns/a", node=N0), C0, D0)),
    ("a pod moved to another node", (b.pod("ns/a0", group="ns/a", node=N1), A1, B0, B1, C0, D0)),
    ("an equal copy is another pod", (A0, A1, B0, B1, C0.model_copy(), D0)),
    ("everything new", tuple(p.model_copy() for p in BASE)),
    ("nothing left", ()),
]


@pytest.mark.parametrize(("what", "pods"), CASES, ids=[c[0] for c in CASES])
def test_a_carried_index_is_the_fresh_one(what: str, pods: tuple[Pod, ...]) -> None:
    before, after = b.snapshot(pods=BASE), b.snapshot(pods=pods)
    assert _carry(before, after) == set(INDEXES), "shared pods in one order: every index carried"
    _assert_fresh(after)


LEFT: list[tuple[str, tuple[Pod, ...], set[str]]] = [
    # (what, the pods after BASE's, the indexes still carried)
    ("shared pods in another order", (A1, A0, B0, B1, C0, D0), set()),
    ("one pod object twice", (*BASE, D0), set()),
    ("two pods of one key", (*BASE, b.pod("ns/d0", group="ns/e")), {"pods_of_group", "pods_on_node"}),
]


@pytest.mark.parametrize(("what", "pods", "carried"), LEFT, ids=[c[0] for c in LEFT])
def test_what_cannot_be_carried_is_left_to_the_snapshot(what: str, pods: tuple[Pod, ...], carried: set[str]) -> None:
    before, after = b.snapshot(pods=BASE), b.snapshot(pods=pods)
    assert _carry(before, after) == carried
    _assert_fresh(after)


def test_nothing_is_carried_unless_the_live_scheduler_carries() -> None:
    pod_sums.carry(False)
    assert _carry(b.snapshot(pods=BASE), b.snapshot(pods=(*BASE, b.pod("ns/e0")))) == set()


def test_an_index_never_read_is_not_carried() -> None:
    before, after = b.snapshot(pods=BASE), b.snapshot(pods=(*BASE, b.pod("ns/e0")))
    pod_indexes.carry(before)
    before.pods_on_node  # noqa: B018  (read: cached)
    pod_indexes.carry(after)
    assert {name for name in INDEXES if name in after.__dict__} == {"pods_on_node"}
    _assert_fresh(after)


# --- random sequences of snapshots --------------------------------------------------------------


def _random_pod(rng: random.Random, key: str) -> Pod:
    node = rng.choice([None, None, "n0", "n1", "n2"])
    return b.pod(
        key,
        group=rng.choice([None, "ns/g0", "ns/g1", "ns/g2", "ns/g3"]),
        node=node,
        phase="Succeeded" if node is not None and rng.random() < 0.1 else None,
    )


def _step(rng: random.Random, pods: dict[str, Pod]) -> dict[str, Pod]:
    """Some pods removed, replaced (another group, node or phase) or copied, some added; the rest the
    very objects."""
    out: dict[str, Pod] = {}
    for key, pod in pods.items():
        roll = rng.random()
        if roll < 0.15:
            continue
        out[key] = _random_pod(rng, key) if roll < 0.35 else pod.model_copy() if roll < 0.4 else pod
    for _ in range(rng.randint(0, 4)):
        key = f"ns/p{rng.randrange(40)}"
        out.setdefault(key, _random_pod(rng, key))
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(1, 8))
def test_every_carried_index_is_the_fresh_one_over_random_snapshots(seed: int, steps: int) -> None:
    """By key, as the converter orders them, every index is carried; shuffled now and then, none is;
    either way each is the fresh one."""
    rng = random.Random(seed)
    pods = {f"ns/p{i}": _random_pod(rng, f"ns/p{i}") for i in range(rng.randint(0, 12))}
    last: Snapshot | None = None
    for _ in range(steps):
        ordered = [pods[key] for key in sorted(pods)]
        shuffled = rng.random() < 0.2
        if shuffled:
            rng.shuffle(ordered)
        snapshot = b.snapshot(pods=ordered)
        carried = _carry(last, snapshot) if last is not None else set()
        if last is not None and not shuffled and list(last.pods) == sorted(last.pods, key=lambda p: p.key):
            assert carried == set(INDEXES)
        _assert_fresh(snapshot)
        last = snapshot
        pods = _step(rng, pods)
