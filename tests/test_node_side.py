"""The node side of the problem reused across builds (``solver/node_side.py``): over any sequence of
node and pod additions, changes and deletions, with unchanged objects kept as the very same
objects (as the live scheduler's converter keeps them), a build equals a fresh one and so does
the cycle's decision; unchanged nodes keep their room, changed ones are computed again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import HyperNode, HyperNodeMember, Node, Pod, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI, gpu_holdings
from vcsat.solver import node_side
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.rules import predicates
from vcsat.solver.solve import solve

POLICY = Policy(time_limit_s=1.0)


@contextmanager
def _cold() -> Iterator[None]:
    """A build here sees no cache, and leaves the caches as they were (the incremental chain goes on)."""
    rooms, last, indexes = node_side._rooms, dict(node_side._last), dict(predicates._INDEXES)
    node_side.forget()
    predicates._INDEXES.clear()
    try:
        yield
    finally:
        node_side._rooms = rooms
        node_side._last.clear()
        node_side._last.update(last)
        predicates._INDEXES.clear()
        predicates._INDEXES.update(indexes)


def _fresh(snap: Snapshot) -> Problem:
    with _cold():
        return build_problem(snap, POLICY)


def _view(problem: Problem) -> dict[str, Any]:
    """What a build decides from the nodes' side, and what the rest of the cycle reads from it."""
    domains = problem.domains
    return {
        "resources": problem.resources,
        "free": problem.free,
        "free_gpu_ids": problem.free_gpu_ids,
        "shared_milli": problem.shared_milli,
        "shapes": [(s.request, s.nodes, s.upper, s.preference) for s in problem.shapes],
        "classes": [(c.gang, c.shape, c.value, tuple(p.key for p in c.pods)) for c in problem.classes],
        "blocked": {g: (x.reason, x.message) for g, x in problem.blocked.items()},
        "buckets": [(x.request, x.shapes, x.nodes, x.upper) for x in problem.buckets],
        "domains": None if domains is None else (domains.tiers, domains.of_node, domains.members),
        "topology_gangs": problem.topology_gangs,
    }


def _same_decision(snap: Snapshot) -> None:
    warm = solve(snap, POLICY, wall=False)
    with _cold():
        cold = solve(snap, POLICY, wall=False)
    strip = {"solver": {"seconds"}}
    assert warm.model_dump(exclude=strip) == cold.model_dump(exclude=strip)


@dataclass
class _Cluster:
    """Model objects kept by identity while unchanged, as the converter keeps them."""

    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    racks: bool = True
    serial: int = 0

    def snapshot(self) -> Snapshot:
        snap = b.snapshot(self.nodes.values(), self.pods.values())
        if not self.racks:
            return snap
        hypernodes = (
            HyperNode(name="rack-a", tier=1, members=(HyperNodeMember(type="Node", regex="^n[0-3]$"),)),
            HyperNode(name="rack-b", tier=1, members=(HyperNodeMember(type="Node", regex="^n[4-9]$"),)),
        )
        return snap.model_copy(update={"hypernodes": hypernodes})


def _node(name: str, cpu: int, gpus: int, label: str) -> Node:
    return b.node(name, cpu=str(cpu), memory="64Gi", gpus=gpus, labels={"kind": label})


_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["add-node", "change-node", "delete-node", "bind", "unbind", "add-pending", "share"]),
        st.integers(0, 9),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=8,
)


def _apply(cluster: _Cluster, step: tuple[str, int, int]) -> None:
    what, n, k = step
    name = f"n{n}"
    cluster.serial += 1
    serial = cluster.serial
    if what == "add-node" and name not in cluster.nodes:
        cluster.nodes[name] = _node(name, 8 + 8 * k, 2 * k, "a" if n % 2 else "b")
    elif what == "change-node" and name in cluster.nodes:
        cluster.nodes[name] = _node(name, 16 + 8 * k, 4, "b" if k % 2 else "a")  # a new object
    elif what == "delete-node":
        cluster.nodes.pop(name, None)
    elif what == "bind" and name in cluster.nodes:
        key = f"ns/bound-{serial}"
        cluster.pods[key] = b.pod(key, cpu=str(1 + k), gpus=k % 2, node=name, group=None)
    elif what == "unbind":
        bound = sorted(key for key, pod in cluster.pods.items() if pod.node_name == name)
        if bound:
            del cluster.pods[bound[k % len(bound)]]
    elif what == "share" and name in cluster.nodes and cluster.nodes[name].gpus:
        # Shares of GPU 0 never add up to more than one GPU (a real cluster's never do).
        held = sum(p.gpu_milli for p in cluster.pods.values() if p.node_name == name and p.gpu_ids == (0,))
        if held + 250 * (k + 1) <= 1000:
            key = f"ns/share-{serial}"
            cluster.pods[key] = b.pod(key, cpu="1", gpu_milli=250 * (k + 1), node=name, gpu_ids=[0])
    elif what == "add-pending":
        key = f"ns/wait-{serial}"
        cluster.pods[key] = b.pod(key, cpu=str(2 + 3 * k), gpus=k % 3, selector={"kind": "a"} if k == 3 else None)


def _start(sizes: list[int]) -> _Cluster:
    cluster = _Cluster()
    for n, size in enumerate(sizes):
        cluster.nodes[f"n{n}"] = _node(f"n{n}", 8 + 8 * size, 2 * size, "a" if n % 2 else "b")
        if size:
            key = f"ns/run-{n}"
            cluster.pods[key] = b.pod(key, cpu="2", gpus=1, node=f"n{n}")
        cluster.pods[f"ns/p-{n}"] = b.pod(f"ns/p-{n}", cpu=str(1 + size), gpus=size % 2)
    return cluster


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=6), st.lists(_STEPS, min_size=1, max_size=4), st.booleans())
def test_incremental_build_equals_fresh(
    sizes: list[int], rounds: list[list[tuple[str, int, int]]], racks: bool
) -> None:
    node_side.forget()
    cluster = _start(sizes)
    cluster.racks = racks
    snap = cluster.snapshot()
    assert _view(build_problem(snap, POLICY)) == _view(_fresh(snap))
    for steps in rounds:
        for step in steps:
            _apply(cluster, step)
        snap = cluster.snapshot()
        assert _view(build_problem(snap, POLICY)) == _view(_fresh(snap))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=5), _STEPS)
def test_decision_after_changes_equals_fresh(sizes: list[int], steps: list[tuple[str, int, int]]) -> None:
    node_side.forget()
    cluster = _start(sizes)
    solve(cluster.snapshot(), POLICY, wall=False)
    for step in steps:
        _apply(cluster, step)
    _same_decision(cluster.snapshot())


def _rooms(snap: Snapshot) -> dict[str, node_side.NodeRoom]:
    problem = build_problem(snap, POLICY)
    return {node.name: node_side._rooms[1][node.name].room for node in problem.nodes}


def test_unchanged_nodes_keep_their_room_and_changed_ones_are_recomputed() -> None:
    node_side.forget()
    cluster = _start([1, 2, 0, 3])
    before = _rooms(cluster.snapshot())
    cluster.pods["ns/new-on-n1"] = b.pod("ns/new-on-n1", cpu="3", gpus=1, node="n1")  # a pod bound to n1
    cluster.nodes["n2"] = _node("n2", 64, 8, "a")  # n2 changed
    del cluster.pods["ns/run-3"]  # a bound pod on n3 deleted
    after = _rooms(cluster.snapshot())
    assert after["n0"] is before["n0"]
    for name in ("n1", "n2", "n3"):
        assert after[name] is not before[name]
        assert after[name] == node_side.node_room(
            cluster.nodes[name],
            cluster.snapshot().pods_on_node.get(name, ()),
            build_problem(cluster.snapshot(), POLICY).resources,
        )
    assert after["n1"].free != before["n1"].free
    assert after["n3"].free_gpu_ids == (0, 1, 2, 3, 4, 5)


def test_a_build_never_shares_its_mutable_rows_with_the_cache() -> None:
    node_side.forget()
    cluster = _start([2, 2])
    snap = cluster.snapshot()
    first = build_problem(snap, POLICY)
    first.free[0][0] = -999
    first.shared_milli[0][7] = 1
    second = build_problem(snap, POLICY)
    assert second.free == _fresh(snap).free
    assert second.shared_milli == _fresh(snap).shared_milli
    assert greedy(second).count == greedy(_fresh(snap)).count


def test_resources_changing_between_builds_recompute_every_room() -> None:
    node_side.forget()
    cluster = _start([1, 1])
    build_problem(cluster.snapshot(), POLICY)
    cluster.pods["ns/wants-ephemeral"] = b.pod("ns/wants-ephemeral", cpu="1", extra={"ephemeral-storage": "1Gi"})
    snap = cluster.snapshot()
    assert _view(build_problem(snap, POLICY)) == _view(_fresh(snap))


def test_shares_added_between_builds_change_the_room_of_their_node_only() -> None:
    node_side.forget()
    cluster = _start([0, 3])
    for step in [("share", 1, 0), ("share", 1, 0), ("share", 1, 2)]:  # the last would overfill GPU 0
        _apply(cluster, step)
        snap = cluster.snapshot()
        assert _view(build_problem(snap, POLICY)) == _view(_fresh(snap))
    assert node_side._rooms[1]["n1"].room.shared_milli == {0: 500}
    _same_decision(cluster.snapshot())


def _room_of_every_pod(node: Node, bound: list[Pod], resources: tuple[str, ...]) -> node_side.NodeRoom:
    """A node's room with the GPU indices found over all its bound pods (what :func:`node_side.node_room`
    finds over only the pods that hold GPUs or shares)."""
    row = [node.allocatable.get(name, 0) for name in resources]
    for pod in bound:
        for name, amount in pod.requests.items():
            if name in resources:
                row[resources.index(name)] -= amount
    holdings = gpu_holdings(node.gpus, bound)
    free_ids = holdings.free_whole(node.gpus)
    if res.GPU_MILLI in resources:
        row[resources.index(res.GPU_MILLI)] = FULL_GPU_MILLI * len(free_ids) + sum(
            FULL_GPU_MILLI - used for used in holdings.share_milli.values()
        )
    if res.GPU in resources:
        row[resources.index(res.GPU)] = min(row[resources.index(res.GPU)], len(free_ids))
    return node_side.NodeRoom(tuple(row), free_ids, dict(holdings.share_milli))


_GPU_NODE = b.node("n", cpu="64", memory="256Gi", gpus=4)


@pytest.mark.parametrize(
    "bound",
    [
        [],  # no pod: every GPU free
        [b.pod("ns/cpu", cpu="2", node="n")],  # pods without GPUs hold none
        [b.pod("ns/cpu", node="n"), b.pod("ns/annotated", gpus=2, node="n", gpu_ids=[1, 3])],
        [b.pod("ns/unannotated", gpus=1, node="n", created=2.0), b.pod("ns/older", gpus=2, node="n", created=1.0)],
        [b.pod("ns/share", gpu_milli=300, node="n", gpu_ids=[2]), b.pod("ns/cpu", node="n")],
        [b.pod("ns/share", gpu_milli=600, node="n"), b.pod("ns/share2", gpu_milli=600, node="n")],
        [b.pod("ns/too-many", gpus=8, node="n"), b.pod("ns/cpu", node="n")],  # unplaceable: holds nothing
    ],
)
def test_a_nodes_room_reads_the_gpu_indices_off_the_pods_that_hold_gpus(bound: list[Pod]) -> None:
    for resources in ((res.CPU, res.MEMORY, res.GPU, res.GPU_MILLI), (res.CPU, res.GPU), (res.CPU,)):
        expected = _room_of_every_pod(_GPU_NODE, bound, resources)
        assert node_side.node_room(_GPU_NODE, bound, resources) == expected
        index = {name: i for i, name in enumerate(resources)}
        assert node_side.node_room(_GPU_NODE, bound, resources, index) == expected
