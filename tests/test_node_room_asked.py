"""A node's room reads each requests dict once per build, skips the GPU holdings where no pod holds one (session 31).

:func:`vcsat.solver.node_side.node_room` subtracted every bound pod's requests name by name,
looking each name up among the problem's resources, and worked out the node's GPU holdings
whatever its pods. Now the amounts of the problem's resources are read once per requests dict
(pods of one spec share theirs) and kept for the build's other nodes, and a node none of whose
bound pods holds a whole GPU or a share has every GPU index free without the holdings' tables.
The reference below is the function as it was: the same room for every node, on a table of small
nodes (whole GPUs annotated or not, shares, resources the problem does not count) and on generated
clusters (Hypothesis), read through one shared cache as a build reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_greedy_index import generated
from test_known_not_to_fit import SLOW_OK

from vcsat.model import Node, Pod
from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI, gpu_holdings
from vcsat.solver import node_side
from vcsat.solver.node_side import NodeRoom, node_room


def _node_room_as_was(
    node: Node, bound: Sequence[Pod], resources: Sequence[str], resource_index: Mapping[str, int] | None = None
) -> NodeRoom:
    """``node_room`` as it was before session 31."""
    if resource_index is None:
        resource_index = {name: i for i, name in enumerate(resources)}
    row = [node.allocatable.get(name, 0) for name in resources]
    for pod in bound:
        for name, amount in pod.requests.items():
            i = resource_index.get(name)
            if i is not None:
                row[i] -= amount
    holdings = gpu_holdings(node.gpus, bound)
    free_ids = holdings.free_whole(node.gpus)
    milli_index = resource_index.get(res.GPU_MILLI)
    if milli_index is not None:
        row[milli_index] = FULL_GPU_MILLI * len(free_ids) + sum(
            FULL_GPU_MILLI - used for used in holdings.share_milli.values()
        )
    gpu_index = resource_index.get(res.GPU)
    if gpu_index is not None:
        row[gpu_index] = min(row[gpu_index], len(free_ids))
    return NodeRoom(tuple(row), free_ids, dict(holdings.share_milli))


WITH_SHARES = sorted([res.CPU, res.MEMORY, res.PODS, res.GPU, res.GPU_MILLI])
WHOLE_ONLY = sorted([res.CPU, res.MEMORY, res.PODS, res.GPU])
CPU_ONLY = sorted([res.CPU, res.MEMORY, res.PODS])

CASES: list[tuple[str, Node, list[Pod]]] = [
    ("empty GPU node", b.node("n", gpus=8), []),
    ("CPU pods on a GPU node", b.node("n", gpus=8), [b.pod("a/p1", "2", node="n"), b.pod("a/p2", "1", node="n")]),
    ("whole GPUs annotated", b.node("n", gpus=8), [b.pod("a/p1", gpus=2, node="n", gpu_ids=[3, 5])]),
    (
        "whole GPUs unannotated",
        b.node("n", gpus=4),
        [b.pod("a/p1", gpus=1, node="n", created=2.0), b.pod("a/p2", gpus=2, node="n", created=1.0)],
    ),
    (
        "shares and a whole GPU",
        b.node("n", gpus=4),
        [
            b.pod("a/s1", gpu_milli=300, node="n", gpu_ids=[1]),
            b.pod("a/s2", gpu_milli=500, node="n", gpu_ids=[1]),
            b.pod("a/w", gpus=1, node="n", gpu_ids=[0]),
        ],
    ),
    ("an unannotated share", b.node("n", gpus=2), [b.pod("a/s", gpu_milli=250, node="n")]),
    ("more GPUs held than the node has", b.node("n", gpus=1), [b.pod("a/p", gpus=2, node="n")]),
    (
        "a resource the problem does not count",
        b.node("n", gpus=2, extra={"example.com/fpga": 4}),
        [b.pod("a/p", node="n", extra={"example.com/fpga": 1})],
    ),
    ("a node without GPUs", b.node("n"), [b.pod("a/p", "3", node="n")]),
]


@pytest.mark.parametrize("resources", [WITH_SHARES, WHOLE_ONLY, CPU_ONLY], ids=["shares", "whole", "cpu"])
def test_rooms_as_the_function_was(resources: list[str]) -> None:
    asked: node_side.Asked = {}  # one cache over every case, as one build's nodes share it
    index = {name: i for i, name in enumerate(resources)}
    for _name, node, bound in CASES:
        for _ in range(2):  # the second time every requests dict is already read
            assert node_room(node, bound, resources, index, asked) == _node_room_as_was(node, bound, resources)
    assert asked  # the cache was filled and read


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(1, 40),
    jobs=st.integers(5, 120),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.0, 0.3, 0.9]),
    shares=st.booleans(),
)
def test_a_builds_rooms_as_the_function_was_on_generated_clusters(
    nodes: int, jobs: int, seed: int, busy: float, shares: bool
) -> None:
    snap = generated(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=busy)
    resources = WITH_SHARES if shares else WHOLE_ONLY
    node_side.forget()
    try:
        rooms = node_side.node_rooms(snap, resources)
    finally:
        node_side.forget()
    on_node = snap.pods_on_node
    assert rooms == [_node_room_as_was(n, on_node.get(n.name, ()), resources) for n in snap.nodes]
