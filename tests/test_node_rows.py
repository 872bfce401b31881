"""The greedy room's node-major rows (:class:`vcsat.solver.node_rows.NodeRows`) follow its free
room as pods come and go, their fit test answers as :meth:`Room.fits` does node by node, and a
kept ranking priced from them ranks every node as the per-node scan prices it
(``tests/greedy_reference.py``, :func:`vcsat.solver.pricing.scarcity.cheapest_fit`'s arithmetic).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from greedy_reference import ScanRoom
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_greedy_index import generated, shared_gpu_clusters

from vcsat.model import Policy, Snapshot
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver import greedy, node_rows
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import Problem, Shape, build_problem

POLICY = Policy(time_limit_s=2)
SLOW_OK = [HealthCheck.too_slow, HealthCheck.filter_too_much]


def _random_steps(problem: Problem, rooms: list[greedy.Room | ScanRoom], rng: random.Random, steps: int) -> None:
    """Pods of random shapes taken on random nodes where they fit, some given back, newest first."""
    taken: list[tuple[int, tuple[int, ...]]] = []
    for _ in range(steps):
        if taken and rng.random() < 0.3:
            where, request = taken.pop()
            for room in rooms:
                room.give(where, request)
            continue
        shape = rng.choice(problem.shapes)
        nodes = [n for n in shape.upper if rooms[0].fits(n, shape.request)]
        if nodes:
            where = rng.choice(nodes)
            for room in rooms:
                room.take(where, shape.request)
            taken.append((where, shape.request))


def _check_rows(room: greedy.Room, problem: Problem) -> None:
    """Each column of the rows as the room's lists say, node by node."""
    rows = room.rows
    for n, free in enumerate(room.free):
        row = rows.rows[n].tolist()
        shared = room.shared[n].values()
        assert row[: rows.resources] == free
        assert row[rows.whole_col] == room.whole[n]
        assert row[rows.gpu_milli_col] == room.whole[n] * FULL_GPU_MILLI + sum(FULL_GPU_MILLI - u for u in shared)
        assert row[rows.share_room_col] == max((FULL_GPU_MILLI - u for u in shared), default=-1)
        level = max(0, free[room.gpu]) if room.gpu is not None else 0
        assert row[rows.level_rank_col] == level * room.count + n
        assert not any(row[rows.level_rank_col + 1 :])
    everywhere = np.arange(room.count, dtype=np.int64)
    for shape in problem.shapes:
        fitting = room._fit_mask(everywhere, shape.request).tolist()
        assert fitting == [room.fits(n, shape.request) for n in range(room.count)]


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(
    snap=shared_gpu_clusters(),
    seed=st.integers(0, 10_000),
    steps=st.integers(0, 40),
    tiled=st.sampled_from([1, 3, 2048]),
)
def test_rows_follow_the_room_with_gpu_shares(snap: Snapshot, seed: int, steps: int, tiled: int) -> None:
    """Whole GPUs and shares taken and given back: the rows stay equal to the room's free room,
    whole devices and shared GPUs, and the fit test (asked amounts laid out for ``tiled`` nodes,
    broadcast beyond) is :meth:`Room.fits` of every node."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(node_rows, "TILED_NODES", tiled)
        problem = build_problem(snap, POLICY)
        room = greedy.Room(problem)
        _random_steps(problem, [room], random.Random(seed), steps)
        _check_rows(room, problem)


def _scan_rank(scan: ScanRoom, scarce: scarcity.Scarcity, shape: Shape, node: int, base: int) -> int:
    """The per-node scan's (price, free GPUs, node) for one pod of ``shape``, as one number."""
    if node not in shape.upper or not scan.fits(node, shape.request):
        return greedy.UNFIT
    milli = shape.request[scan.milli] if scan.milli is not None else shape.gpus * FULL_GPU_MILLI
    cost = 0
    if scarce.rate(node, shape.eligibility, milli > 0) > 0:
        row = scan.free[node]
        cpu = (shape.request[scarce.cpu], row[scarce.cpu]) if scarce.cpu is not None else (0, 0)
        memory = (shape.request[scarce.memory], row[scarce.memory]) if scarce.memory is not None else (0, 0)
        free_gpu = scarcity.free_room(scan.whole[node], scan.shared[node].values())
        cost = round(scarcity.price(scarce, node, shape.eligibility, milli, free_gpu, cpu, memory))
    level = max(0, scan.free[node][scan.gpu]) if scan.gpu is not None else 0
    return (cost * base + level) * len(scan.free) + node


@settings(max_examples=15, deadline=None, suppress_health_check=SLOW_OK)
@given(
    seed=st.integers(0, 10_000),
    steps=st.integers(1, 30),
    busy=st.sampled_from([0.2, 0.6, 0.9]),
    tiled=st.sampled_from([1, 5, 2048]),
)
def test_kept_ranks_are_the_scans_prices(seed: int, steps: int, busy: float, tiled: int) -> None:
    """Every node's rank in a kept ranking, read again after random takes and gives (its changed
    nodes priced with numpy from the rows), is the per-node scan's price, free GPUs and node."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(node_rows, "TILED_NODES", tiled)
        patch.setattr(greedy, "FEW_CHANGED", 0)  # every read through the rows
        problem = build_problem(generated(nodes=30, pending_jobs=40, seed=seed % 50, busy_gpu_fraction=busy), POLICY)
        scarce = scarcity.for_problem(problem)
        assume(scarce is not None)
        assert scarce is not None
        room, scan = greedy.Room(problem), ScanRoom(problem)
        rng = random.Random(seed)
        shapes = rng.sample(problem.shapes, min(6, len(problem.shapes)))
        for shape in shapes:
            room.cheapest_fit(scarce, shape)  # each shape's ranking made now, read after the steps
        _random_steps(problem, [room, scan], rng, steps)
        for shape in shapes:
            room.cheapest_fit(scarce, shape)
            ranks = room._ranking(scarce, shape).ranks.tolist()
            assert ranks == [_scan_rank(scan, scarce, shape, n, room._rank_base) for n in range(room.count)]
