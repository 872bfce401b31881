"""Admission's free room tests one resource at a time over all nodes (column-wise); it admits
exactly what the per-node test did (``tests/admission_reference.py``), on generated clusters
where admission by fit has work to do and on small ones with overcommitted nodes."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from admission_reference import ScanFreeRoom
from builders import group, node, pod, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy, Snapshot
from vcsat.solver import admission_room, enqueue

TIGHT = Policy(time_limit_s=2, overcommit_factor=1.0)
"""No overcommit: most groups are refused by the cluster-room rule, so admission by fit decides."""
SLOW_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


def admissions(snap: Snapshot, policy: Policy, monkeypatch: pytest.MonkeyPatch, room: type) -> dict[str, Any]:
    with monkeypatch.context() as patch:
        patch.setattr(enqueue, "_FreeRoom", room)
        return enqueue.admit(snap, policy)


def same_admissions(snap: Snapshot, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> None:
    indexed = admissions(snap, policy, monkeypatch, enqueue._FreeRoom)
    scanned = admissions(snap, policy, monkeypatch, ScanFreeRoom)
    assert indexed == scanned


@settings(max_examples=10, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(8, 40),
    jobs=st.integers(20, 80),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.5, 0.8, 0.95]),
)
def test_generated_clusters_admit_alike(
    nodes: int, jobs: int, seed: int, busy: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = GeneratorOptions(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=busy)
    snap = snapshot_from_objects(generate_instance(options)["items"], source="generated")
    same_admissions(snap, TIGHT, monkeypatch)


@st.composite
def overcommitted_clusters(draw: st.DrawFn) -> Snapshot:
    """Nodes some of whose cpu or memory is held beyond allocatable by bound pods, and Pending groups
    of GPU and CPU pods (some asking no cpu: only the overcommitted cpu then keeps them off); nodes labelled
    for selectors."""
    rng = random.Random(draw(st.integers(0, 10_000)))
    nodes = [
        node(
            f"n{i}", cpu=rng.choice(["4", "8"]), memory="16Gi", gpus=rng.choice([0, 4, 8]), labels={"pool": str(i % 2)}
        )
        for i in range(draw(st.integers(1, 8)))
    ]
    pods = []
    groups = [group("q/run", min_member=1, queue="q").model_copy(update={"phase": "Running"})]
    for i, n in enumerate(nodes):
        if rng.random() < 0.5:
            cpu = rng.choice(["2", "6", "10"])  # 10 cores on a node of 4 or 8: overcommitted
            pods.append(
                pod(
                    f"q/run-{i}",
                    cpu=cpu,
                    group="q/run",
                    node=n.name,
                    gpus=min(2, n.gpus),
                    gpu_ids=[0, 1][: min(2, n.gpus)],
                )
            )
    for g in range(draw(st.integers(1, 10))):
        key = f"q/g{g}"
        size = rng.choice([1, 2, 3])
        selector = {"pool": rng.choice(["0", "1"])} if rng.random() < 0.3 else None
        for k in range(size):
            pods.append(
                pod(
                    f"{key}-{k}",
                    cpu=rng.choice(["0", "1", "3"]),
                    gpus=rng.choice([0, 1, 4]),
                    group=key,
                    selector=selector,
                )
            )
        groups.append(
            group(key, min_member=size, queue=rng.choice(["q", "r"])).model_copy(update={"created": float(g)})
        )
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=[queue("q"), queue("r", weight=2)])


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(snap=overcommitted_clusters())
def test_overcommitted_nodes_admit_alike(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    same_admissions(snap, TIGHT, monkeypatch)


@settings(max_examples=40, deadline=None)
@given(snap=overcommitted_clusters(), order=st.randoms(use_true_random=False))
def test_free_room_takes_alike(snap: Snapshot, order: random.Random) -> None:
    """Gang after gang, in a random order: the same verdict and the same room left."""
    _take_in_turn(snap, order)


def _take_in_turn(
    snap: Snapshot, order: random.Random, after_each: Callable[[admission_room.FreeRoom], None] = lambda room: None
) -> admission_room.FreeRoom:
    """Every gang but the running one, in ``order``, taken from the indexed room and the scan:
    the same verdict and the same room left each time; ``after_each`` looks at the indexed room."""
    indexed, scanned = enqueue._FreeRoom(snap), ScanFreeRoom(snap)
    after_each(indexed)
    gangs = [pods for key, pods in snap.pods_of_group.items() if key != "q/run"]
    order.shuffle(gangs)
    for pods in gangs:
        gang = [p for p in pods if not p.bound]
        assert indexed.take(gang) == scanned.take(gang)
        assert (scanned.free == indexed.free.T).all()
        after_each(indexed)
    return indexed


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(snap=overcommitted_clusters(), order=st.randoms(use_true_random=False))
def test_free_room_without_a_packed_rank_takes_alike(
    snap: Snapshot, order: random.Random, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Room too large to pack GPU and cpu into one rank: the plain narrowing picks the same nodes."""
    monkeypatch.setattr(admission_room, "_SPAN", 1)
    assert _take_in_turn(snap, order)._rank is None


def _order_of(room: admission_room.FreeRoom) -> list[int]:
    """The sorted order a fresh build of the room's current state would have."""
    assert room._rank is not None
    rows = range(room.free.shape[1])
    if room._overcommitted is not None:
        rows = [row for row in rows if not room._overcommitted[row]]
    return sorted(int(room._rank[row]) * room._count + row for row in rows)


def _gpu_levels_of(room: admission_room.FreeRoom) -> tuple[dict[int, int], int]:
    """The counts per positive GPU room, and the most, that a fresh build of the room's state would have."""
    column = room.columns.get("nvidia.com/gpu")
    left = room.free[column].tolist() if column is not None else []
    levels = {level: left.count(level) for level in set(left) if level > 0}
    return levels, max(levels, default=0)


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(
    snap=overcommitted_clusters(),
    order=st.randoms(use_true_random=False),
    scan=st.sampled_from([0, 1, 3, 10_000]),
)
def test_sorted_search_takes_alike(
    snap: Snapshot, order: random.Random, scan: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The best node by the sorted order, falling back to the argmin after ``scan`` misses (0: at
    once; 10,000: never): the same verdicts and room as the scan, and the order stays that of the
    room (a stale entry would make a later pod skip or pick the wrong node)."""
    monkeypatch.setattr(admission_room, "_SCAN", scan)

    def in_order(room: admission_room.FreeRoom) -> None:
        assert room._sorted == _order_of(room)
        assert (room._gpu_levels, room._gpu_most) == _gpu_levels_of(room)

    _take_in_turn(snap, order, in_order)


@settings(max_examples=10, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(8, 60),
    jobs=st.integers(20, 120),
    seed=st.integers(0, 10_000),
    scan=st.sampled_from([None, 0, 10_000]),
)
def test_generated_gangs_take_alike(
    nodes: int, jobs: int, seed: int, scan: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every generated gang in turn (many GPU levels, cpu remainders and selectors, many sharing
    shapes, some refused and given back), with the default search, the sorted search alone or the
    argmin alone: the same verdict and the same room left as the scan, pod after pod."""
    if scan is not None:
        monkeypatch.setattr(admission_room, "_SCAN", scan)
    options = GeneratorOptions(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=0.5)
    snap = snapshot_from_objects(generate_instance(options)["items"], source="generated")
    indexed, scanned = enqueue._FreeRoom(snap), ScanFreeRoom(snap)
    for pods in snap.pods_of_group.values():
        gang = [p for p in pods if not p.bound]
        assert indexed.take(gang) == scanned.take(gang)
        assert (scanned.free == indexed.free.T).all()
        assert (indexed._gpu_levels, indexed._gpu_most) == _gpu_levels_of(indexed)
    assert indexed._sorted == _order_of(indexed)
