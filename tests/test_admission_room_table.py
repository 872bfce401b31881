"""The free room's table (``admission_room.free_table``) as the plain per-node sums it replaces:
allocatable less every bound pod's requests, per resource of the columns, with nodes sharing their
allocatable dict and pods sharing their requests dict as the converter's do, resources some nodes
lack, pods asking for resources outside the columns, and nodes overcommitted below zero."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from builders import node, pod
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Node, Pod
from vcsat.solver.admission_room import free_table


def _plain(nodes: Sequence[Node], on_node: Mapping[str, Sequence[Pod]], columns: Mapping[str, int]) -> list[list[int]]:
    """The table as a dict of every resource per node (the way the room first built it)."""
    table = [[0] * len(nodes) for _ in columns]
    for row, n in enumerate(nodes):
        free = dict(n.allocatable)
        for p in on_node.get(n.name, ()):
            for name, amount in p.requests.items():
                free[name] = free.get(name, 0) - amount
        for name, amount in free.items():
            column = columns.get(name)
            if column is not None:
                table[column][row] = amount
    return table


def _cluster(rng: random.Random, count: int) -> tuple[list[Node], dict[str, list[Pod]]]:
    kinds = [
        node("k0", cpu="8", memory="32Gi", gpus=8),
        node("k1", cpu="4", memory="16Gi"),
        node("k2", cpu="2", memory="4Gi", extra={"example.com/fpga": "2"}),
    ]
    # Copies share the kind's allocatable dict, as nodes of one spelling do.
    nodes = [rng.choice(kinds).model_copy(update={"name": f"n{i}"}) for i in range(count)]
    specs = [
        pod("ns/s0", cpu="1", memory="1Gi"),
        pod("ns/s1", cpu="6", memory="8Gi", gpus=4),
        pod("ns/s2", cpu="1", extra={"example.com/fpga": "1"}),
        pod("ns/s3", cpu="3", extra={"example.com/asic": "1"}),  # a resource no node has
    ]
    on_node: dict[str, list[Pod]] = {}
    for i in range(rng.randint(0, 3 * count)):
        if not nodes:
            break
        where = rng.choice(nodes).name
        spec = rng.choice(specs)
        made = spec.model_copy(update={"name": f"p{i}", "node_name": where}) if rng.random() < 0.7 else spec
        on_node.setdefault(where, []).append(made)
    return nodes, on_node


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), count=st.integers(0, 12), drop=st.booleans())
def test_free_table_is_the_plain_sums(seed: int, count: int, drop: bool) -> None:
    rng = random.Random(seed)
    nodes, on_node = _cluster(rng, count)
    names = sorted({name for n in nodes for name in n.allocatable})
    if drop and names:
        names.remove(rng.choice(names))  # a resource some node has, outside the columns
    columns = {name: i for i, name in enumerate(names)}
    assert free_table(nodes, on_node, columns) == _plain(nodes, on_node, columns)


def test_table() -> None:
    a, b = node("a", cpu="4", memory="8Gi"), node("b", cpu="2", memory="8Gi", gpus=2)
    columns = {"cpu": 0, "memory": 1, "nvidia.com/gpu": 2}
    on_node = {"a": [pod("ns/p", cpu="3", memory="1Gi"), pod("ns/q", cpu="2")], "b": [pod("ns/r", gpus=1, cpu="1")]}
    table = free_table([a, b], on_node, columns)
    assert table == _plain([a, b], on_node, columns)
    assert table[0] == [4000 - 3000 - 2000 + 0, 2000 - 1000]  # cpu in millicores, overcommitted on a
    assert table[2] == [0, 1]
    assert free_table([], {}, columns) == [[], [], []]
