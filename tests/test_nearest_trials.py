"""The greedy's trials for a gang with pods running, nearest them first (solver/nearest_trials.py):
the running rack, then the other racks and the running spine, then the rest, the greedy's own order
(one node, then racks, then spines) kept on ties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.model import HyperNode, HyperNodeMember, Node, Queue, Snapshot
from vcsat.solver.nearest_trials import nearest_first
from vcsat.solver.problem import Domains, _domains

NODES = tuple(Node(name=f"{rack}{i}", allocatable={"cpu": 1000}) for rack in ("a", "b", "c", "d") for i in (1, 2))
"""Racks ra (a1, a2) and rb under spine s1; rc and rd under s2."""


def _spine(name: str, racks: tuple[str, str]) -> HyperNode:
    return HyperNode(
        name=name, tier=2, members=tuple(HyperNodeMember(type="HyperNode", exact_name=rack) for rack in racks)
    )


TREE = (
    *(HyperNode(name=f"r{x}", tier=1, members=(HyperNodeMember(type="Node", regex=f"^{x}"),)) for x in "abcd"),
    _spine("s1", ("ra", "rb")),
    _spine("s2", ("rc", "rd")),
)


def _tree() -> Domains:
    domains = _domains(Snapshot(nodes=NODES, queues=(Queue(name="default"),), hypernodes=TREE))
    assert domains is not None
    return domains


DOMAINS = _tree()
NAMES = {tier: DOMAINS.domains(tier) for tier in DOMAINS.tiers}
LISTS = {tier: [DOMAINS.nodes_in(tier, name) for name in NAMES[tier]] for tier in DOMAINS.tiers}
INDEX = {node.name: i for i, node in enumerate(NODES)}


def _named(lists: list[list[int]]) -> list[str]:
    return [",".join(NODES[n].name for n in nodes) for nodes in lists]


# Running pods' racks and spines; the one-node trials (head); the expected order.
CASES = [
    ({"rc"}, ["d1"], ["c1,c2", "d1", "d1,d2", "c1,c2,d1,d2", "a1,a2", "b1,b2", "a1,a2,b1,b2"]),
    ({"ra"}, ["c1"], ["a1,a2", "b1,b2", "a1,a2,b1,b2", "c1", "c1,c2", "d1,d2", "c1,c2,d1,d2"]),
    ({"ra", "rc"}, [], ["a1,a2", "c1,c2", "b1,b2", "d1,d2", "a1,a2,b1,b2", "c1,c2,d1,d2"]),
]


@pytest.mark.parametrize(("racks", "head", "expected"), CASES)
def test_trials_nearest_the_running_pods_first(racks: set[str], head: list[str], expected: list[str]) -> None:
    near = {1: frozenset(racks), 2: frozenset(DOMAINS.parent(1, rack, 2) for rack in racks)}
    tiers = [(tier, np.arange(len(NAMES[tier]), dtype=np.int64)) for tier in DOMAINS.tiers]
    got = nearest_first(DOMAINS, near, [[INDEX[n]] for n in head], tiers, NAMES, LISTS)
    assert _named(got) == expected


@given(
    racks=st.sets(st.sampled_from(["ra", "rb", "rc", "rd"]), min_size=1),
    order=st.permutations(range(4)),
    spines=st.permutations(range(2)),
)
def test_trials_are_the_greedys_in_cost_order(racks: set[str], order: list[int], spines: list[int]) -> None:
    """Every trial kept once, and the new domains each would span never fall back in the order."""
    near = {1: frozenset(racks), 2: frozenset(DOMAINS.parent(1, rack, 2) for rack in racks)}
    tiers = [(1, np.array(order, dtype=np.int64)), (2, np.array(spines, dtype=np.int64))]
    got = nearest_first(DOMAINS, near, [], tiers, NAMES, LISTS)
    given_lists = [LISTS[1][i] for i in order] + [LISTS[2][i] for i in spines]
    assert sorted(map(tuple, got)) == sorted(map(tuple, given_lists))

    def cost(nodes: list[int]) -> tuple[int, int]:
        spine = int(DOMAINS.of_node[nodes[0]][2] not in near[2])
        racks = {DOMAINS.of_node[n][1] for n in nodes}
        return (spine, int(len(racks) > 1 or not racks <= near[1]))  # a spine's trial: a new rack

    costs = [cost(nodes) for nodes in got]
    assert costs == sorted(costs)
