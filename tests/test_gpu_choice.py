"""Choosing GPU indices on a node: best-connected sets, several pods jointly, deterministically."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model.gpu_topology import GpuTopology, gpu_topology, parse_gpu_topology, preset
from vcsat.solver.placement import gpu_choice
from vcsat.solver.placement.gpu_choice import NodePlan, bottleneck, choose_gpus, plan_node, total_bandwidth

DGX1 = preset("dgx1-v100")
HGX = preset("hgx-h100-8")
PCIE = preset("pcie-2x4")


@pytest.mark.parametrize(
    ("topology", "free", "counts", "expected"),
    [
        # DGX-1: a 4-GPU pod gets a fully NVLinked quad, a 2-GPU pod an NV2 pair.
        (DGX1, range(8), [4], [(0, 1, 2, 3)]),
        (DGX1, range(8), [2], [(0, 3)]),
        (DGX1, [1, 2, 4, 5, 6, 7], [4], [(4, 5, 6, 7)]),
        # Two 2-GPU pods leave the other quad whole rather than two scattered pairs.
        (DGX1, range(8), [2, 2], [(0, 3), (1, 2)]),
        # Both pairs here are NV2; the one that leaves a quad behind wins.
        (DGX1, [0, 1, 2, 3, 5, 6], [2], [(5, 6)]),
        # A 1-GPU pod takes the GPU whose loss keeps the rest a fully NVLinked quad.
        (DGX1, [0, 1, 2, 3, 4], [1], [(4,)]),
        # Bigger pods first, answers in the order asked.
        (DGX1, range(8), [1, 2, 4], [(5,), (4, 7), (0, 1, 2, 3)]),
        # HGX: all pairs equal, so the lowest indices.
        (HGX, range(8), [3], [(0, 1, 2)]),
        (HGX, range(8), [2, 3], [(3, 4), (0, 1, 2)]),
        (HGX, [1, 3, 5, 7], [2, 2], [(1, 3), (5, 7)]),
        # PCIe 2x4: a 4-GPU pod stays under one switch.
        (PCIE, range(8), [4], [(0, 1, 2, 3)]),
        (PCIE, [0, 1, 4, 5, 6, 7], [4], [(4, 5, 6, 7)]),
        (PCIE, [0, 2, 3, 5, 6, 7], [3, 2], [(0, 2, 3), (5, 6)]),
        # Two 2-GPU pods share one switch so the other stays whole for a 4-GPU pod.
        (PCIE, range(8), [2, 2], [(0, 1), (2, 3)]),
        (PCIE, range(8), [2, 4, 2], [(4, 5), (0, 1, 2, 3), (6, 7)]),
        # No GPUs asked.
        (DGX1, range(8), [0, 2, 0], [(), (0, 3), ()]),
        (DGX1, [], [], []),
    ],
)
def test_choice(topology: GpuTopology, free: Sequence[int], counts: list[int], expected: list[tuple[int, ...]]) -> None:
    assert choose_gpus(topology, free, counts) == expected


def test_joint_choice_keeps_the_remainder_well_connected() -> None:
    sets = choose_gpus(DGX1, range(8), [2, 2])
    left = sorted(set(range(8)) - {g for s in sets for g in s})
    assert left == [4, 5, 6, 7]
    assert bottleneck(DGX1, left) == 25.0  # still a fully NVLinked quad
    assert all(bottleneck(DGX1, s) == 50.0 for s in sets)


@pytest.mark.parametrize(
    ("topology", "gpus", "slowest", "total"),
    [
        (DGX1, [0, 1, 2, 3], 25.0, 225.0),
        (DGX1, [0, 3], 50.0, 50.0),
        (DGX1, [0, 5], 10.0, 10.0),
        (HGX, range(8), 450.0, 28 * 450.0),
        (PCIE, [0, 4], 10.0, 10.0),
        (DGX1, [6], math.inf, 0.0),
        (DGX1, [], math.inf, 0.0),
    ],
)
def test_bottleneck_and_total(topology: GpuTopology, gpus: Sequence[int], slowest: float, total: float) -> None:
    assert bottleneck(topology, gpus) == slowest
    assert total_bandwidth(topology, gpus) == total


@pytest.mark.parametrize(
    ("free", "counts", "reason"),
    [
        (range(8), [5, 4], r"pods ask 9 GPU\(s\) but only 8 are free"),
        ([0, 0, 1], [1], "GPU 0 listed twice"),
        ([0, 8], [1], "GPU index 8 is not among the node's 8 GPUs"),
        ([-1, 0], [1], "GPU index -1 is not among"),
        (range(8), [-1], "pod 0: GPU count must not be negative"),
    ],
)
def test_bad_requests(free: Sequence[int], counts: list[int], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        choose_gpus(DGX1, free, counts)


def test_beyond_exact_reach_a_greedy_still_keeps_pods_on_one_island() -> None:
    # 12 GPUs: two NVSwitch islands of six, joined over PCIe.
    vertices = [{"id": f"g{i}", "kind": "gpu", "index": i} for i in range(12)]
    vertices += [{"id": "nvs0", "kind": "nvswitch"}, {"id": "nvs1", "kind": "nvswitch"}]
    vertices += [{"id": "cpu", "kind": "cpu"}]
    edges = [{"source": f"g{i}", "target": f"nvs{i // 6}", "bandwidth": 300} for i in range(12)]
    edges += [{"source": f"g{i}", "target": "cpu", "bandwidth": 16} for i in range(12)]
    topology = parse_gpu_topology(json.dumps({"nodes": vertices, "edges": edges}))
    assert len(range(12)) > gpu_choice.EXACT_MAX_FREE
    first, second = choose_gpus(topology, range(12), [4, 6])
    assert bottleneck(topology, first) == 300.0
    assert bottleneck(topology, second) == 300.0
    assert first == (6, 7, 8, 9) or first == (0, 1, 2, 3)


# --- joint plans with GPU shares -------------------------------------------------------------------


def test_two_half_gpu_shares_leave_a_whole_gpu_free() -> None:
    plan = plan_node(gpu_topology(None, 2), [0, 1], [1], shares=[500, 500])
    assert plan == NodePlan(whole=((0,),), shares=(1, 1))


def test_shares_fill_an_already_shared_gpu_before_opening_one() -> None:
    plan = plan_node(DGX1, [0, 1, 2, 3, 4, 5, 6], [4], shares=[300, 200], shared={7: 500})
    assert plan.whole == ((0, 1, 2, 3),)
    assert plan.shares == (7, 7)


def test_a_fresh_gpu_for_shares_is_the_one_whose_loss_hurts_least() -> None:
    # After the quad, one GPU of {4..7} goes to shares; the two left must still be an NV2 pair.
    plan = plan_node(DGX1, range(8), [4, 1], shares=[600])
    (quad, single), (shared_gpu,) = plan.whole, plan.shares
    assert quad == (0, 1, 2, 3)
    assert shared_gpu is not None
    left = sorted(set(range(4, 8)) - {single[0], shared_gpu})
    assert bottleneck(DGX1, left) == 50.0


def test_shares_that_find_no_room_get_none() -> None:
    plan = plan_node(gpu_topology(None, 2), [0, 1], [1], shares=[700, 700])
    assert plan.whole == ((0,),)
    assert sorted(plan.shares, key=str) == [1, None]


# --- properties ---------------------------------------------------------------------------------


@st.composite
def matrix_topologies(draw: st.DrawFn, max_gpus: int = 8) -> GpuTopology:
    """GPUs joined directly, pair by pair, with a few distinct bandwidths (ties are likely)."""
    count = draw(st.integers(min_value=1, max_value=max_gpus))
    vertices = [{"id": i, "kind": "gpu", "index": i} for i in range(count)]
    edges = [
        {"source": a, "target": b, "bandwidth": draw(st.sampled_from([10, 16, 25, 50]))}
        for a, b in itertools.combinations(range(count), 2)
    ]
    return parse_gpu_topology(json.dumps({"nodes": vertices, "edges": edges}))


@st.composite
def choice_cases(draw: st.DrawFn, max_gpus: int = 8) -> tuple[GpuTopology, list[int], list[int]]:
    topology = draw(matrix_topologies(max_gpus))
    free = sorted(draw(st.sets(st.integers(0, topology.gpu_count - 1))))
    counts: list[int] = []
    left = len(free)
    for _ in range(draw(st.integers(0, 3))):
        count = draw(st.integers(0, left))
        counts.append(count)
        left -= count
    return topology, free, counts


@settings(max_examples=80, deadline=None)
@given(choice_cases())
def test_sets_are_disjoint_free_and_of_the_asked_size(case: tuple[GpuTopology, list[int], list[int]]) -> None:
    topology, free, counts = case
    sets = choose_gpus(topology, free, counts)
    chosen = [g for s in sets for g in s]
    assert len(chosen) == len(set(chosen))  # no GPU index twice
    assert set(chosen) <= set(free)
    assert [len(s) for s in sets] == counts
    assert all(list(s) == sorted(s) for s in sets)


@settings(max_examples=60, deadline=None)
@given(choice_cases())
def test_choice_is_deterministic_and_independent_of_the_pods_order(
    case: tuple[GpuTopology, list[int], list[int]],
) -> None:
    topology, free, counts = case
    first = choose_gpus(topology, free, counts)
    gpu_choice._choose.cache_clear()
    assert choose_gpus(topology, list(reversed(free)), counts) == first
    assert sorted(choose_gpus(topology, free, counts[::-1])) == sorted(first)


@settings(max_examples=80, deadline=None)
@given(choice_cases())
def test_a_single_pod_gets_a_set_no_other_set_beats(case: tuple[GpuTopology, list[int], list[int]]) -> None:
    topology, free, counts = case
    count = counts[0] if counts else len(free)
    (chosen,) = choose_gpus(topology, free, [count])
    mine = (bottleneck(topology, chosen), total_bandwidth(topology, chosen))
    for other in itertools.combinations(free, count):
        theirs = (bottleneck(topology, other), total_bandwidth(topology, other))
        assert mine[0] >= theirs[0]
        if mine[0] == theirs[0]:
            assert mine[1] >= theirs[1] - 1e-6


def _value(topology: GpuTopology, free: list[int], sizes: list[int], sets: Sequence[Sequence[int]]) -> tuple:
    """The lexicographic objective of gpu_choice, computed the slow way."""
    own = [(bottleneck(topology, s), round(total_bandwidth(topology, s), 6)) for s in sets]
    left = [g for g in free if not any(g in s for s in sets)]
    quality = []
    for k in range(len(left), 1, -1):
        options = itertools.combinations(left, k)
        quality.append(max((bottleneck(topology, c), round(total_bandwidth(topology, c), 6)) for c in options))
    return (*own, *quality)


def _all_assignments(free: list[int], sizes: list[int]) -> list[list[tuple[int, ...]]]:
    if not sizes:
        return [[]]
    out = []
    for first in itertools.combinations(free, sizes[0]):
        rest = [g for g in free if g not in first]
        out += [[first, *tail] for tail in _all_assignments(rest, sizes[1:])]
    return out


@settings(max_examples=40, deadline=None)
@given(choice_cases(max_gpus=6))
def test_joint_choice_is_the_exact_lexicographic_optimum(
    case: tuple[GpuTopology, list[int], list[int]],
) -> None:
    topology, free, counts = case
    sizes = sorted((c for c in counts if c > 0), reverse=True)
    sets = choose_gpus(topology, free, sizes)
    best = max(_value(topology, free, sizes, option) for option in _all_assignments(free, sizes))
    assert _value(topology, free, sizes, sets) == best
