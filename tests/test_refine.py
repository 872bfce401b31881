"""Bucket refinement reaches the optimum: plain pods of different cpu requests on a few nodes.

Pods that differ only in cpu share a bucket counted at its least request; the decode then finds
the relaxation too loose and the search refines it. Whatever the order the decode hands buckets
out, the refinement must end on the true optimum, which a brute force over every placement
computes here. Node sizes divide the value scale (2, 4, 8 cores), so a pod's value is exactly
proportional to its cpu and the most work placed is the most cpu placed.
"""

from __future__ import annotations

import itertools

import pytest
from builders import node, pod, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Policy
from vcsat.solver.solve import solve
from vcsat.solver.validator.check import check


def _most_cpu(nodes: list[int], pods: list[int]) -> int:
    """The most cpu any placement of ``pods`` (each on one node or none) fits on ``nodes``."""
    best = 0
    for choice in itertools.product(range(len(nodes) + 1), repeat=len(pods)):
        load = [0] * len(nodes)
        for cpu, where in zip(pods, choice, strict=True):
            if where < len(nodes):
                load[where] += cpu
        if all(used <= room for used, room in zip(load, nodes, strict=True)):
            best = max(best, sum(cpu for cpu, where in zip(pods, choice, strict=True) if where < len(nodes)))
    return best


def _placed_cpu(nodes: list[int], pods: list[int]) -> int:
    zones = "abcd"
    snap = snapshot(
        nodes=[node(f"n{i}", cpu=str(c), labels={"zone": zones[i]}) for i, c in enumerate(nodes)],
        pods=[pod(f"ns/p{i}", cpu=c) for i, c in enumerate(pods)],
    )
    decision = solve(snap, Policy())
    assert check(snap, decision) == []
    cpu_of = {f"ns/p{i}": c for i, c in enumerate(pods)}
    return sum(cpu_of[b.pod] for b in decision.bindings)


@pytest.mark.parametrize(
    ("nodes", "pods"),
    [
        ([4, 4, 4], [1, 2, 3, 4, 4]),  # the optimum is {4}, {4}, {1, 3}; greedy places 10 of 12
        ([4, 4], [1, 2, 3, 3]),
        ([4, 4], [3, 3, 2, 2]),
        ([4, 4, 4, 4], [1, 2, 3, 3, 3, 4]),
        ([8, 4], [5, 3, 3, 2]),
        ([4, 4, 4], [2, 3, 3, 1, 1, 2]),
        ([2, 4, 8], [3, 5, 2, 2, 1, 1]),
    ],
)
def test_refinement_places_the_most_cpu(nodes: list[int], pods: list[int]) -> None:
    assert _placed_cpu(nodes, pods) == _most_cpu(nodes, pods)


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=4),
    pods=st.lists(st.integers(1, 8), min_size=1, max_size=6),
)
def test_tiny_clusters_get_the_brute_force_optimum(nodes: list[int], pods: list[int]) -> None:
    assert _placed_cpu(nodes, pods) == _most_cpu(nodes, pods)
