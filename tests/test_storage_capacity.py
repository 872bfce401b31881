"""Storage capacity tracking: VolumeBinding provisions a WaitForFirstConsumer claim only where a
CSIStorageCapacity of its class reaches the node with room for the claim.

kube-scheduler v1.35 checks this for a provisioner that is a CSIDriver with
``spec.storageCapacity: true`` (no CSIDriver object, or the field false: no check): some
CSIStorageCapacity whose ``storageClassName`` is the claim's class, whose ``nodeTopology``
selects the node's labels (absent: no node) and whose ``maximumVolumeSize`` (else ``capacity``;
neither: nothing) is at least the claim's request. A node without one is refused with "node(s)
did not have enough free storage". Three nodes: a and b in zone z1, c in z2; the pod asks 5Gi.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import bind, decision, node, pod, snapshot
from tests.storage_builders import pvc, size, storage_class
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model import Decision, Node, Policy, Snapshot
from vcsat.model.selectors import label_selector
from vcsat.model.storage import CSIDriver, CSIStorageCapacity
from vcsat.solver import check, solve
from vcsat.solver.rules.volumes import NOT_ENOUGH_SPACE

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DRIVER = "csi.example.com"
NODES = [
    node("a", labels={HOST: "a", ZONE: "z1"}),
    node("b", labels={HOST: "b", ZONE: "z1"}),
    node("c", labels={HOST: "c", ZONE: "z2"}),
]


def report(
    zone: str | None, capacity: str | None = "10Gi", largest: str | None = None, cls: str = "fast"
) -> CSIStorageCapacity:
    return CSIStorageCapacity(
        namespace="kube-system",
        name=f"cap-{zone}-{capacity}-{largest}-{cls}",
        storage_class=cls,
        node_topology=label_selector({ZONE: zone}) if zone is not None else None,
        capacity_bytes=size(capacity) if capacity is not None else None,
        maximum_volume_size_bytes=size(largest) if largest is not None else None,
    )


def cluster(
    reports: list[CSIStorageCapacity], *, tracked: bool | None = True, request: str = "5Gi", pods: int = 1
) -> Snapshot:
    return snapshot(
        nodes=NODES,
        pods=[pod(f"ns/p{i}", claims=[f"data{i}"]) for i in range(pods)],
        claims=[pvc(f"ns/data{i}", request, storage_class="fast") for i in range(pods)],
        storage_classes=[storage_class("fast", provisioner=DRIVER)],
        csi_drivers=[CSIDriver(name=DRIVER, storage_capacity=tracked)] if tracked is not None else [],
        storage_capacities=reports,
    )


def placed(dec: Decision) -> dict[str, str]:
    return {b.pod: b.node for b in dec.bindings}


ROWS = [
    # (case, reports, tracked, nodes ns/p0 may use; None: not placed)
    ("room in z2 only", [report("z2")], True, {"c"}),
    ("room in z1 only", [report("z1")], True, {"a", "b"}),
    ("too little everywhere", [report("z1", "4Gi"), report("z2", "1Gi")], True, None),
    ("exactly the request", [report("z2", "5Gi")], True, {"c"}),
    (
        "maximumVolumeSize decides over capacity",
        [report("z1", "100Gi", "4Gi"), report("z2", "1Gi", "8Gi")],
        True,
        {"c"},
    ),
    ("neither capacity nor maximumVolumeSize", [report("z1", None)], True, None),
    ("a report with no nodeTopology reaches no node", [report(None, "100Gi")], True, None),
    ("another class's report does not count", [report("z1", cls="slow")], True, None),
    ("no report at all", [], True, None),
    ("the driver does not track capacity", [], False, {"a", "b", "c"}),
    ("no CSIDriver object: no check", [], None, {"a", "b", "c"}),
]


@pytest.mark.parametrize("case, reports, tracked, nodes", ROWS, ids=[r[0] for r in ROWS])
def test_storage_capacity(
    case: str, reports: list[CSIStorageCapacity], tracked: bool | None, nodes: set[str] | None
) -> None:
    snap = cluster(reports, tracked=tracked)
    dec = solve(snap, Policy(time_limit_s=2))
    assert check(snap, dec) == [], case
    where = placed(dec).get("ns/p0")
    if nodes is None:
        assert where is None, case
        outcome = next(o for o in dec.podgroups if o.podgroup == "ns/p0")
        assert NOT_ENOUGH_SPACE in outcome.message, outcome.message
    else:
        assert where in nodes, case
    # The validator refuses the pod on every node without room.
    for name in ("a", "b", "c"):
        if nodes is not None and name in nodes:
            continue
        found = check(snap, decision(snap, bindings=[bind("ns/p0", name)]))
        assert [v.rule for v in found] == ["VolumeBinding"], (case, name, found)


def test_the_converter_reads_csidrivers_and_capacities() -> None:
    objects = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": DRIVER},
            "spec": {"storageCapacity": True},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap", "namespace": "kube-system"},
            "storageClassName": "fast",
            "nodeTopology": {"matchLabels": {ZONE: "z2"}},
            "capacity": "10Gi",
            "maximumVolumeSize": "1500M",
        },
    ]
    snap = snapshot_from_objects(objects)
    assert snap.csi_drivers == (CSIDriver(name=DRIVER, storage_capacity=True),)
    (capacity,) = snap.storage_capacities
    assert (capacity.storage_class, capacity.capacity_bytes, capacity.maximum_volume_size_bytes) == (
        "fast",
        10 * 2**30,
        1_500_000_000,
    )
    assert capacity.node_topology is not None and capacity.node_topology.matches({ZONE: "z2"})
    bad = [{**objects[0], "spec": {"storageCapacity": "yes"}}]
    with pytest.raises(InputError, match="storageCapacity"):
        snapshot_from_objects(bad)


@st.composite
def instances(draw: st.DrawFn) -> Snapshot:
    reports = [
        report(
            draw(st.sampled_from(["z1", "z2", None])),
            draw(st.sampled_from(["1Gi", "5Gi", "6Gi", "10Gi", None])),
            draw(st.sampled_from([None, None, "4Gi", "8Gi"])),
            draw(st.sampled_from(["fast", "fast", "slow"])),
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    return cluster(
        reports,
        tracked=draw(st.sampled_from([True, True, False, None])),
        request=draw(st.sampled_from(["1Gi", "5Gi", "7Gi"])),
        pods=draw(st.integers(1, 3)),
    )


def _has_room(snap: Snapshot, node: Node, request: int) -> bool:
    """The test's own reading of the rule (see the module docstring)."""
    if not snap.csi_drivers or not snap.csi_drivers[0].storage_capacity:
        return True
    for r in snap.storage_capacities:
        limit = r.maximum_volume_size_bytes if r.maximum_volume_size_bytes is not None else r.capacity_bytes
        reaches = r.node_topology is not None and r.node_topology.matches(node.labels)
        if r.storage_class == "fast" and reaches and limit is not None and limit >= request:
            return True
    return False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_random_capacities_place_only_where_storage_reaches(snap: Snapshot) -> None:
    """No violation in check(); every placed pod's node has a report with room, and a pod is left
    unplaced only when no node has one; check() flags a pod moved to a node without room."""
    dec = solve(snap, Policy(time_limit_s=2))
    assert check(snap, dec) == []
    request = snap.claims[0].request_bytes
    where = placed(dec)
    for key, name in where.items():
        assert _has_room(snap, snap.node_by_name[name], request), (key, name)
    if not any(_has_room(snap, n, request) for n in snap.nodes):
        assert not where
    else:
        assert where  # one pod at least: 1 cpu each on 3 idle nodes
    for n in snap.nodes:
        if not _has_room(snap, n, request):
            assert check(snap, decision(snap, bindings=[bind("ns/p0", n.name)]))
