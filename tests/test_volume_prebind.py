"""VolumeRules.bind_plan: what the live scheduler's VolumeBinding PreBind writes for a placed pod.

A table of small cases (kube-scheduler's rules: smallest claim first, the pre-bound volume else the
smallest suiting one on the node, else provisioning where the class allows it), and a property:
every pod the solver places can have its claims bound on its node, pod after pod in queue order,
without two pods being promised one volume.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings

from tests.builders import node, pod, snapshot
from tests.storage_builders import pv, pvc, storage_class
from tests.test_volumes import HOST, ZONE, instances
from vcsat.model import Node, Policy, Snapshot
from vcsat.model.storage import PersistentVolume, PersistentVolumeClaim
from vcsat.solver import solve
from vcsat.solver.rules.volumes import BIND_CONFLICT, UNBOUND_IMMEDIATE, VolumePlan, VolumeRules


def host(name: str, **labels: str) -> Node:
    return node(name, labels={HOST: name, **labels})


def pinned(name: str, capacity: str, where: str, claim: str | None = None) -> PersistentVolume:
    return pv(name, capacity, storage_class="local", node_affinity=[f"{HOST} in ({where})"], claim=claim)


LOCAL = storage_class("local", provisioner="kubernetes.io/no-provisioner")
EBS = storage_class("ebs", provisioner="ebs.csi.aws.com")
ZONAL = storage_class("zonal", provisioner="ebs.csi.aws.com", topologies=[f"{ZONE} in (z1)"])
NOW = storage_class("now", provisioner="ebs.csi.aws.com", mode="Immediate")
NODES = [host("a", **{ZONE: "z1"}), host("b", **{ZONE: "z2"})]


@dataclass
class Case:
    name: str
    claims: list[PersistentVolumeClaim]
    volumes: list[PersistentVolume]
    node: str
    expected: tuple[tuple[tuple[str, str], ...], tuple[str, ...]] | str
    """((claim, volume) bindings, claims provisioned), or part of the refusal."""
    taken: frozenset[str] = frozenset()
    claim_names: tuple[str, ...] = ("data",)


CASES = [
    Case("bound claims: nothing to do", [pvc("ns/data", volume="v1")], [pv("v1", claim="ns/data")], "a", ((), ())),
    Case(
        "the smallest local volume that suits, on the node",
        [pvc("ns/data", "2Gi", storage_class="local")],
        [
            pinned("big", "8Gi", "b"),
            pinned("small", "4Gi", "b"),
            pinned("tiny", "1Gi", "b"),
            pinned("there", "2Gi", "a"),
        ],
        "b",
        ((("data", "small"),), ()),
    ),
    Case(
        "a volume pre-bound to the claim wins over a smaller one",
        [pvc("ns/data", "1Gi", storage_class="local")],
        [pinned("small", "1Gi", "b"), pinned("mine", "8Gi", "b", claim="ns/data")],
        "b",
        ((("data", "mine"),), ()),
    ),
    Case(
        "a volume promised to another pod is not given",
        [pvc("ns/data", "1Gi", storage_class="local")],
        [pinned("v1", "1Gi", "b"), pinned("v2", "2Gi", "b")],
        "b",
        ((("data", "v2"),), ()),
        taken=frozenset({"v1"}),
    ),
    Case(
        "no volume on the node and no provisioner",
        [pvc("ns/data", "1Gi", storage_class="local")],
        [pinned("v1", "1Gi", "b")],
        "a",
        BIND_CONFLICT,
    ),
    Case(
        "smaller claim first: it takes the small volume, the big claim the big one",
        [pvc("ns/big", "3Gi", storage_class="local"), pvc("ns/small", "1Gi", storage_class="local")],
        [pinned("v4", "4Gi", "a"), pinned("v1", "1Gi", "a")],
        "a",
        ((("small", "v1"), ("big", "v4")), ()),
        claim_names=("big", "small"),
    ),
    Case("provisioned by the class", [pvc("ns/data", storage_class="ebs")], [], "b", ((), ("data",))),
    Case(
        "a static volume before provisioning",
        [pvc("ns/data", storage_class="ebs")],
        [pv("e1", "5Gi", storage_class="ebs")],
        "b",
        ((("data", "e1"),), ()),
    ),
    Case("allowed topologies admit the node", [pvc("ns/data", storage_class="zonal")], [], "a", ((), ("data",))),
    Case("allowed topologies refuse the node", [pvc("ns/data", storage_class="zonal")], [], "b", BIND_CONFLICT),
    Case(
        "being provisioned for this node",
        [pvc("ns/data", storage_class="ebs", selected_node="b")],
        [],
        "b",
        ((), ("data",)),
    ),
    Case(
        "being provisioned for another node",
        [pvc("ns/data", storage_class="ebs", selected_node="a")],
        [],
        "b",
        "being provisioned for node a",
    ),
    Case("an unbound Immediate claim", [pvc("ns/data", storage_class="now")], [], "a", UNBOUND_IMMEDIATE),
    Case("a missing claim", [], [], "a", "not found"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bind_plan(case: Case) -> None:
    the_pod = pod("ns/p", claims=list(case.claim_names))
    snap = snapshot(
        nodes=NODES,
        pods=[the_pod],
        claims=case.claims,
        volumes=case.volumes,
        storage_classes=[LOCAL, EBS, ZONAL, NOW],
    )
    found = VolumeRules(snap, ()).bind_plan(snap.pod_by_key["ns/p"], snap.node_by_name[case.node], case.taken)
    if isinstance(case.expected, str):
        assert isinstance(found, str) and case.expected in found
        return
    assert isinstance(found, VolumePlan)
    bindings, provisions = case.expected
    assert tuple((claim.name, volume.name) for claim, volume in found.bindings) == bindings
    assert tuple(claim.name for claim in found.provisions) == provisions
    assert bool(found) == bool(bindings or provisions)


def prebind_in_queue_order(snap: Snapshot, where: dict[str, str]) -> list[str]:
    """bind_plan for each placed pod in queue order, each volume promised once; the refusals."""
    rules = VolumeRules(snap, ())
    taken: set[str] = set()
    refused: list[str] = []
    placed = sorted((snap.pod_by_key[key] for key in where), key=lambda p: (-p.priority, p.created, p.key))
    for the_pod in placed:
        found = rules.bind_plan(the_pod, snap.node_by_name[where[the_pod.key]], frozenset(taken))
        if isinstance(found, str):
            refused.append(f"{the_pod.key} on {where[the_pod.key]}: {found}")
            continue
        for _, volume in found.bindings:
            assert volume.name not in taken
            taken.add(volume.name)
    return refused


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_every_placed_pod_can_bind_its_claims(snap: Snapshot) -> None:
    dec = solve(snap, Policy(time_limit_s=2))
    assert prebind_in_queue_order(snap, {b.pod: b.node for b in dec.bindings}) == []


def test_two_pods_one_local_volume_each() -> None:
    """Two replicas and two local volumes on one node: each gets its own, in queue order."""
    snap = snapshot(
        nodes=NODES,
        pods=[pod(f"ns/p{i}", claims=[f"d{i}"], created=i) for i in range(2)],
        claims=[pvc(f"ns/d{i}", storage_class="local") for i in range(2)],
        volumes=[pinned("v1", "1Gi", "a"), pinned("v2", "1Gi", "a")],
        storage_classes=[LOCAL],
    )
    dec = solve(snap)
    assert sorted(b.node for b in dec.bindings) == ["a", "a"]
    assert prebind_in_queue_order(snap, {b.pod: b.node for b in dec.bindings}) == []
