"""The solver with topology on: HyperNode locality, hard networkTopology, GPU choice, GPU shares.

Small clusters built directly; every decision also passes the solver-independent validator.
"""

from __future__ import annotations

import pytest

from vcsat.model import (
    HyperNode,
    HyperNodeMember,
    NetworkTopology,
    Node,
    Pod,
    PodGroup,
    Policy,
    Queue,
    Snapshot,
)
from vcsat.solver import check, solve

GPU = "nvidia.com/gpu"
MIB = 2**20
SHARE = "vcsat.io/gpu-milli"


def gpu_node(name: str, rack: str = "", gpus: int = 8, topology: str | None = None) -> Node:
    return Node(
        name=name,
        labels={"rack": rack} if rack else {},
        allocatable={"cpu": 96000, "memory": (1 << 20) * MIB, "pods": 110, GPU: gpus},
        gpu_topology=topology,
    )


def gpu_pod(
    key: str,
    gpus: int = 8,
    *,
    cpu: int = 4000,
    group: str | None = None,
    node: str | None = None,
    ids: tuple[int, ...] | None = None,
    milli: int = 0,
    created: float = 0.0,
) -> Pod:
    namespace, name = key.split("/")
    requests = {"cpu": cpu, "memory": 1000 * MIB, "pods": 1}
    if gpus:
        requests[GPU] = gpus
    if milli:
        requests[SHARE] = milli
    return Pod(
        namespace=namespace,
        name=name,
        requests=requests,
        group=group,
        node_name=node,
        phase="Running" if node else "Pending",
        gpu_ids=ids,
        created=created,
    )


RACKS = (
    HyperNode(name="r1", tier=1, members=(HyperNodeMember(type="Node", regex="^a"),)),
    HyperNode(name="r2", tier=1, members=(HyperNodeMember(type="Node", regex="^b"),)),
    HyperNode(
        name="spine",
        tier=2,
        members=(
            HyperNodeMember(type="HyperNode", exact_name="r1"),
            HyperNodeMember(type="HyperNode", exact_name="r2"),
        ),
    ),
)


def solved(snapshot: Snapshot, policy: Policy | None = None) -> dict[str, str]:
    policy = policy or Policy(time_limit_s=3)
    decision = solve(snapshot, policy)
    assert check(snapshot, decision, policy) == []
    return {binding.pod: binding.node for binding in decision.bindings}


def cluster(pods: list[Pod], groups: list[PodGroup], nodes: tuple[Node, ...]) -> Snapshot:
    return Snapshot(
        nodes=nodes, pods=tuple(pods), podgroups=tuple(groups), queues=(Queue(name="default"),), hypernodes=RACKS
    )


NODES = tuple(gpu_node(n, "r1" if n[0] == "a" else "r2") for n in ("a1", "a2", "b1", "b2", "b3"))
BUSY = [gpu_pod("x/busy-a1", node="a1", ids=tuple(range(8))), gpu_pod("x/busy-b1", node="b1", ids=tuple(range(8)))]


@pytest.mark.parametrize("mode", ["hard", "soft", None])
def test_a_two_node_gang_stays_inside_one_rack_when_one_has_room(mode: str | None) -> None:
    topology = NetworkTopology(mode=mode, highest_tier_allowed=1) if mode else None
    gang = [gpu_pod(f"d/g{i}", group="d/g", created=5) for i in range(2)]
    group = PodGroup(namespace="d", name="g", min_member=2, network_topology=topology)
    placed = solved(cluster(BUSY + gang, [group], NODES))
    assert sorted(placed.values()) == ["b2", "b3"]  # r1 has one free node, r2 two


def test_hard_mode_waits_rather_than_span_racks_and_soft_mode_spans() -> None:
    three = [gpu_pod(f"d/g{i}", group="d/g", created=5) for i in range(3)]
    nodes = NODES[:4]  # a1 busy, a2 free, b1 busy, b2 free: no rack has three free nodes
    for mode, expected in (("hard", 0), ("soft", 0)):
        group = PodGroup(
            namespace="d", name="g", min_member=3, network_topology=NetworkTopology(mode=mode, highest_tier_allowed=1)
        )
        snapshot = cluster(BUSY[:1] + three, [group], nodes)
        decision = solve(snapshot, Policy(time_limit_s=3))
        assert check(snapshot, decision, Policy(time_limit_s=3)) == []
        if mode == "hard":
            assert decision.bindings == [] and decision.podgroups[0].reason == "NetworkTopologyUnsatisfied"
        else:
            assert len(decision.bindings) == 3 + expected  # spans the spine: a2, b1 and b2


def test_topology_gangs_and_others_share_a_bucket_without_overfilling_a_node() -> None:
    """Regression: a topology gang's pods and another gang's pods of a different cpu request (one
    bucket) once landed on the same 8-GPU node."""
    gang = [gpu_pod(f"d/g{i}", cpu=32000, group="d/g", created=5) for i in range(3)]
    other = gpu_pod("d/other", cpu=80000, created=6)
    nodes = tuple(gpu_node(n, "r1" if n[0] == "a" else "r2") for n in ("a1", "a2", "a3", "b1", "b2"))
    group = PodGroup(namespace="d", name="g", min_member=3)
    placed = solved(cluster([*gang, other], [group], nodes))
    assert len(placed) == 4 and len(set(placed.values())) == 4
    assert {placed[f"d/g{i}"] for i in range(3)} == {"a1", "a2", "a3"}


def test_dgx1_pods_get_nvlinked_gpus() -> None:
    node = gpu_node("dgx", topology="preset:dgx1-v100")
    pods = [gpu_pod("d/quad", 4, created=1), gpu_pod("d/pair", 2, created=2)]
    snapshot = Snapshot(nodes=(node,), pods=tuple(pods), queues=(Queue(name="default"),))
    decision = solve(snapshot, Policy(time_limit_s=3))
    gpus = {binding.pod: set(binding.gpus) for binding in decision.bindings}
    assert gpus["d/quad"] in ({0, 1, 2, 3}, {4, 5, 6, 7})  # a fully NVLinked quad
    assert frozenset(gpus["d/pair"]) in {
        frozenset(p) for p in ((0, 3), (0, 4), (1, 2), (1, 5), (2, 3), (4, 7), (5, 6), (6, 7))
    }


def test_two_half_gpu_pods_share_one_gpu_so_a_whole_gpu_pod_still_fits() -> None:
    node = gpu_node("n", gpus=2)
    pods = [
        gpu_pod("d/half-a", 0, milli=500, created=1),
        gpu_pod("d/half-b", 0, milli=500, created=2),
        gpu_pod("d/whole", 1, created=3),
    ]
    snapshot = Snapshot(nodes=(node,), pods=tuple(pods), queues=(Queue(name="default"),))
    decision = solve(snapshot, Policy(time_limit_s=3))
    assert check(snapshot, decision, Policy(time_limit_s=3)) == []
    gpus = {binding.pod: binding.gpus for binding in decision.bindings}
    assert set(gpus) == {"d/half-a", "d/half-b", "d/whole"}
    assert gpus["d/half-a"] == gpus["d/half-b"] and gpus["d/whole"] != gpus["d/half-a"]
