"""Volumes as kube-scheduler v1.35 filters them, through solve() and check().

One row per rule: where each pod may land (or why it may not), with check() finding nothing wrong
in the decision and flagging the same placement moved to a node the rule refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import bind, decision, group, node, pod, snapshot
from tests.storage_builders import RWO, RWOP, RWX, csinode_limits, pdb, pv, pvc, storage_class
from vcsat.model import Decision, Node, Pod, Policy, Snapshot
from vcsat.model.storage import CSINode
from vcsat.solver import check, solve
from vcsat.solver.rules.volumes import (
    BIND_CONFLICT,
    NODE_CONFLICT,
    RWOP_CONFLICT,
    UNBOUND_IMMEDIATE,
    ZONE_CONFLICT,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
LEGACY_ZONE = "failure-domain.beta.kubernetes.io/zone"


def host(name: str, **labels: str) -> Node:
    return node(name, labels={HOST: name, **labels})


THREE = [host("a", **{ZONE: "z1"}), host("b", **{ZONE: "z1"}), host("c", **{ZONE: "z2"})]


def placed(dec: Decision) -> dict[str, str]:
    return {b.pod: b.node for b in dec.bindings} | {n.pod: n.node for n in dec.nominations}


def solved(snap: Snapshot) -> Decision:
    dec = solve(snap)
    assert check(snap, dec) == [], [str(v) for v in check(snap, dec)]
    return dec


@dataclass
class Row:
    name: str
    snap: Snapshot
    nodes: set[str] | None
    """Where ``ns/p`` may land; None: it is not placed."""
    message: str = ""
    """With ``nodes`` None: part of its PodGroup's message."""


ROWS: list[Row] = []


def row(name: str, nodes: set[str] | None, message: str = "", **objects: object) -> None:
    pods = objects.pop("pods", [pod("ns/p", claims=["data"])])
    ROWS.append(Row(name, snapshot(nodes=THREE, pods=pods, **objects), nodes, message))  # type: ignore[arg-type]


# --- VolumeBinding: bound claims ----------------------------------------------------------------

row(
    "bound to a local volume pinned to c",
    {"c"},
    claims=[pvc("ns/data", volume="local-c")],
    volumes=[pv("local-c", node_affinity=[f"{HOST} in (c)"], claim="ns/data")],
)
row(
    "bound to a volume of zone z1 by node affinity",
    {"a", "b"},
    claims=[pvc("ns/data", volume="v")],
    volumes=[pv("v", node_affinity=[f"{ZONE} in (z1)"], claim="ns/data")],
)
row(
    "bound to a volume no node matches",
    None,
    NODE_CONFLICT,
    claims=[pvc("ns/data", volume="v")],
    volumes=[pv("v", node_affinity=[f"{HOST} in (gone)"], claim="ns/data")],
)
row(
    "bound to a volume without node affinity",
    {"a", "b", "c"},
    claims=[pvc("ns/data", volume="v")],
    volumes=[pv("v", claim="ns/data")],
)
row("claim missing", None, 'persistentvolumeclaim "data" not found')
row(
    "claim lost",
    None,
    "bound to non-existent persistentvolume",
    claims=[pvc("ns/data", volume="v", lost=True)],
)
row(
    "claim being deleted",
    None,
    "is being deleted",
    claims=[pvc("ns/data", volume="v", deleting=True)],
    volumes=[pv("v", claim="ns/data")],
)

# --- VolumeBinding: unbound claims --------------------------------------------------------------

row(
    "unbound claim of an Immediate class",
    None,
    UNBOUND_IMMEDIATE,
    claims=[pvc("ns/data", storage_class="fast")],
    storage_classes=[storage_class("fast", mode="Immediate")],
)
row(
    "unbound claim of no class",
    None,
    UNBOUND_IMMEDIATE,
    claims=[pvc("ns/data")],
)
row(
    "pre-bound by volumeName, bind not completed",
    None,
    UNBOUND_IMMEDIATE,
    claims=[pvc("ns/data", storage_class="local", volume="v", bound=False)],
    volumes=[pv("v", storage_class="local")],
    storage_classes=[storage_class("local", provisioner="kubernetes.io/no-provisioner")],
)
_local = storage_class("local", provisioner="kubernetes.io/no-provisioner")
row(
    "WaitForFirstConsumer: the one available local volume is on b",
    {"b"},
    claims=[pvc("ns/data", "5Gi", storage_class="local")],
    volumes=[
        pv("v-a", "1Gi", storage_class="local", node_affinity=[f"{HOST} in (a)"]),
        pv("v-b", "10Gi", storage_class="local", node_affinity=[f"{HOST} in (b)"]),
        pv("v-c", "10Gi", storage_class="other", node_affinity=[f"{HOST} in (c)"]),
    ],
    storage_classes=[_local],
)
row(
    "WaitForFirstConsumer: a volume already claimed by another claim does not count",
    None,
    BIND_CONFLICT,
    claims=[pvc("ns/data", storage_class="local")],
    volumes=[pv("v-a", storage_class="local", node_affinity=[f"{HOST} in (a)"], claim="ns/other")],
    storage_classes=[_local],
)
row(
    "WaitForFirstConsumer: access modes must be offered",
    {"c"},
    claims=[pvc("ns/data", storage_class="local", modes=[RWX])],
    volumes=[
        pv("v-a", storage_class="local", node_affinity=[f"{HOST} in (a)"], modes=[RWO]),
        pv("v-c", storage_class="local", node_affinity=[f"{HOST} in (c)"], modes=[RWO, RWX]),
    ],
    storage_classes=[_local],
)
row(
    "WaitForFirstConsumer: a volume pre-bound to the claim",
    {"a"},
    claims=[pvc("ns/data", storage_class="local")],
    volumes=[pv("v-a", storage_class="local", node_affinity=[f"{HOST} in (a)"], claim="ns/data", phase="Available")],
    storage_classes=[_local],
)
row(
    "WaitForFirstConsumer: no volume and no provisioner",
    None,
    BIND_CONFLICT,
    claims=[pvc("ns/data", storage_class="local")],
    storage_classes=[_local],
)
row(
    "WaitForFirstConsumer: provisioned where allowedTopologies allow",
    {"c"},
    claims=[pvc("ns/data", storage_class="zonal")],
    storage_classes=[storage_class("zonal", topologies=[f"{ZONE} in (z2)"])],
)
row(
    "WaitForFirstConsumer: provisioned anywhere without allowedTopologies",
    {"a", "b", "c"},
    claims=[pvc("ns/data", storage_class="zonal")],
    storage_classes=[storage_class("zonal")],
)
row(
    "WaitForFirstConsumer: selected node already chosen",
    {"b"},
    claims=[pvc("ns/data", storage_class="zonal", selected_node="b")],
    storage_classes=[storage_class("zonal")],
)

# --- VolumeRestrictions -------------------------------------------------------------------------

row(
    "ReadWriteOncePod claim in use by a running pod",
    None,
    RWOP_CONFLICT,
    pods=[pod("ns/p", claims=["data"]), pod("ns/old", node="a", claims=["data"])],
    claims=[pvc("ns/data", volume="v", modes=[RWOP])],
    volumes=[pv("v", claim="ns/data", modes=[RWOP])],
)
row(
    "ReadWriteOnce claim shared with a running pod",
    {"a", "b", "c"},
    pods=[pod("ns/p", claims=["data"]), pod("ns/old", node="a", claims=["data"])],
    claims=[pvc("ns/data", volume="v")],
    volumes=[pv("v", claim="ns/data")],
)

# --- VolumeZone ---------------------------------------------------------------------------------

row(
    "volume labelled zone z2",
    {"c"},
    claims=[pvc("ns/data", volume="v")],
    volumes=[pv("v", claim="ns/data", labels={ZONE: "z2"})],
)
row(
    "volume with the legacy zone label matches the GA node label",
    {"a", "b"},
    claims=[pvc("ns/data", volume="v")],
    volumes=[pv("v", claim="ns/data", labels={LEGACY_ZONE: "z1"})],
)
row(
    "volume in two zones",
    {"a", "b", "c"},
    claims=[pvc("ns/data", volume="v")],
    volumes=[pv("v", claim="ns/data", labels={ZONE: "z1__z2"})],
)
row(
    "volume of a region no node is in",
    None,
    ZONE_CONFLICT,
    claims=[pvc("ns/data", volume="v")],
    volumes=[pv("v", claim="ns/data", labels={REGION: "eu"})],
)


@pytest.mark.parametrize("r", ROWS, ids=[r.name for r in ROWS])
def test_volume_rule(r: Row) -> None:
    dec = solved(r.snap)
    where = placed(dec).get("ns/p")
    if r.nodes is None:
        assert where is None
        outcome = next(o for o in dec.podgroups if o.podgroup == "ns/p")
        assert r.message in outcome.message, outcome.message
        assert outcome.reason == "Unschedulable"
    else:
        assert where in r.nodes
    # The validator refuses the pod on every node the rule refuses.
    for name in ("a", "b", "c"):
        if r.nodes is not None and name in r.nodes:
            continue
        moved = decision(r.snap, bindings=[bind("ns/p", name)])
        assert check(r.snap, moved), f"check accepts ns/p on {name}"


def test_local_volume_pinned_to_b_is_not_placed_on_a() -> None:
    """Issue 10: a pod whose PVC is bound to a local PV pinned to node B was placed on node A
    (the emptier node, where packing alone would put it)."""
    snap = snapshot(
        nodes=[node("a", cpu="64", labels={HOST: "a"}), node("b", cpu="2", labels={HOST: "b"})],
        pods=[pod("ns/db", cpu="1", claims=["data"])],
        claims=[pvc("ns/data", "10Gi", storage_class="local", volume="local-b")],
        volumes=[pv("local-b", "10Gi", storage_class="local", claim="ns/data", node_affinity=[f"{HOST} in (b)"])],
    )
    assert placed(solved(snap)) == {"ns/db": "b"}
    assert [v.rule for v in check(snap, decision(snap, bindings=[bind("ns/db", "a")]))] == ["VolumeBinding"]


def test_two_pending_pods_share_one_read_write_once_pod_claim() -> None:
    snap = snapshot(
        nodes=THREE,
        pods=[pod("ns/p", claims=["data"], created=1), pod("ns/q", claims=["data"], created=2)],
        claims=[pvc("ns/data", storage_class="zonal", modes=[RWOP])],
        storage_classes=[storage_class("zonal")],
    )
    dec = solved(snap)
    assert placed(dec).keys() == {"ns/p"}
    outcome = next(o for o in dec.podgroups if o.podgroup == "ns/q")
    assert RWOP_CONFLICT in outcome.message


def test_two_claims_do_not_count_on_one_local_volume() -> None:
    """Both pods could bind the one volume on a; only one may count on it."""
    snap = snapshot(
        nodes=THREE,
        pods=[pod("ns/p", claims=["d1"], created=1), pod("ns/q", claims=["d2"], created=2)],
        claims=[pvc("ns/d1", storage_class="local"), pvc("ns/d2", storage_class="local")],
        volumes=[pv("v-a", storage_class="local", node_affinity=[f"{HOST} in (a)"])],
        storage_classes=[_local],
    )
    assert placed(solved(snap)) == {"ns/p": "a"}


def test_local_volumes_one_per_node_for_a_gang() -> None:
    """A gang of three, each with its own claim, and one local volume per node on two nodes."""
    pods = [pod(f"ns/w{i}", claims=[f"d{i}"], created=i) for i in range(2)]
    snap = snapshot(
        nodes=THREE,
        pods=pods,
        claims=[pvc(f"ns/d{i}", storage_class="local", volume=f"v{i}") for i in range(2)],
        volumes=[
            pv(f"v{i}", storage_class="local", claim=f"ns/d{i}", node_affinity=[f"{HOST} in ({n})"])
            for i, n in enumerate("ac")
        ],
    )
    assert placed(solved(snap)) == {"ns/w0": "a", "ns/w1": "c"}


def test_csi_volume_limit_spreads_pods() -> None:
    """Node a attaches one ebs volume and holds one already; b attaches two."""
    snap = snapshot(
        nodes=[host("a", **{ZONE: "z1"}), host("b", **{ZONE: "z1"})],
        pods=[
            pod("ns/old", node="a", claims=["c0"]),
            *(pod(f"ns/p{i}", claims=[f"c{i}"], created=i) for i in (1, 2, 3)),
        ],
        claims=[pvc(f"ns/c{i}", volume=f"v{i}") for i in range(4)],
        volumes=[pv(f"v{i}", claim=f"ns/c{i}", csi=("ebs.csi.aws.com", f"h{i}")) for i in range(4)],
        csinodes=[csinode_of("a", 1), csinode_of("b", 2)],
    )
    where = placed(solved(snap))
    assert sorted(where.values()) == ["b", "b"]


def csinode_of(name: str, count: int) -> CSINode:
    return csinode_limits(name, {"ebs.csi.aws.com": count})


def test_csi_volumes_of_unbound_claims_count_by_provisioner() -> None:
    snap = snapshot(
        nodes=[host("a")],
        pods=[pod(f"ns/p{i}", claims=[f"c{i}"], created=i) for i in range(3)],
        claims=[pvc(f"ns/c{i}", storage_class="ebs") for i in range(3)],
        storage_classes=[storage_class("ebs", provisioner="ebs.csi.aws.com")],
        csinodes=[csinode_of("a", 2)],
    )
    dec = solved(snap)
    assert len(placed(dec)) == 2
    outcome = next(o for o in dec.podgroups if o.podgroup not in placed(dec))
    assert outcome.phase == "Pending"


# --- property: random small instances with volumes, never a violation ---------------------------


@st.composite
def instances(draw: st.DrawFn) -> Snapshot:
    zones = ["z1", "z2"]
    nodes = [host(f"n{i}", cpu="2", **{ZONE: draw(st.sampled_from(zones))}) for i in range(draw(st.integers(1, 4)))]
    names = [n.name for n in nodes]
    classes = [
        storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        storage_class("disk", provisioner="kubernetes.io/no-provisioner"),
        storage_class("zonal", topologies=[f"{ZONE} in ({draw(st.sampled_from(zones))})"]),
        storage_class("now", mode="Immediate"),
        storage_class("ebs", provisioner="ebs"),
    ]
    volumes = []
    for i in range(draw(st.integers(0, 6))):
        pinned = [f"{HOST} in ({draw(st.sampled_from(names))})"]
        storage = draw(st.sampled_from(["local", "disk", "disk", "zonal", ""]))
        volumes.append(
            pv(
                f"v{i}",
                f"{draw(st.integers(1, 4))}Gi",
                storage_class=storage,
                # Class disk: every volume pinned to one node (counted per node).
                node_affinity=pinned if storage == "disk" else draw(st.sampled_from([None, pinned])),
                labels=draw(st.sampled_from([{}, {ZONE: draw(st.sampled_from(zones))}])),
                modes=draw(st.sampled_from([[RWO], [RWO, RWX], [RWOP]])),
                csi=draw(st.sampled_from([None, ("ebs", f"h{i}")])),
            )
        )
    claims = []
    for i in range(draw(st.integers(0, draw(st.sampled_from([3, 8]))))):  # few claims: often shared
        bound_to = draw(st.sampled_from([None, *[v.name for v in volumes]]))
        claims.append(
            pvc(
                f"ns/c{i}",
                f"{draw(st.integers(1, 4))}Gi",
                storage_class=draw(st.sampled_from(["local", "disk", "zonal", "now", "ebs", "missing"])),
                volume=bound_to or "",
                modes=draw(st.sampled_from([[RWO], [RWOP], [RWX]])),
                selected_node=draw(st.sampled_from([None, None, None, *names])),
            )
        )
    claim_names = [c.name for c in claims] + ["ghost"]
    pods: list[Pod] = []
    groups = []
    for i in range(draw(st.integers(1, 7))):
        used = draw(st.lists(st.sampled_from(claim_names), max_size=2))
        running = draw(st.booleans()) and i % 2 == 0
        gang = None if running or not draw(st.booleans()) else f"ns/g{i % 2}"
        pods.append(
            pod(
                f"ns/p{i}",
                cpu="1",
                claims=used,
                node=draw(st.sampled_from(names)) if running else None,
                created=i,
                priority=draw(st.integers(0, 2)),
                group=gang,
                labels=draw(st.sampled_from([{}, {"app": "db"}])),
            )
        )
    for key in sorted({p.group for p in pods if p.group}):
        members = sum(1 for p in pods if p.group == key)
        groups.append(group(key, min_member=draw(st.integers(1, members)), phase="Inqueue"))
    limits = [csinode_limits(n, {"ebs": draw(st.integers(0, 2))}) for n in names if draw(st.booleans())]
    budgets = [pdb("ns/db", draw(st.integers(0, 1)), {"app": "db"})] if draw(st.booleans()) else []
    return snapshot(
        nodes=nodes,
        pods=pods,
        groups=groups,
        claims=claims,
        volumes=volumes,
        storage_classes=classes,
        csinodes=limits,
        disruption_budgets=budgets,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_random_volume_instances_have_no_violations(snap: Snapshot) -> None:
    dec = solve(snap, Policy(time_limit_s=2))
    assert check(snap, dec) == [], [str(v) for v in check(snap, dec)]


def test_local_volumes_are_counted_per_node() -> None:
    """Three replicas, each with its own waiting claim of a local-volume class: node a has two
    volumes, b one, c none. Each replica binds a distinct volume, so all three go, at most two on
    a, none on c."""
    snap = snapshot(
        nodes=THREE,
        pods=[pod(f"ns/r{i}", claims=[f"data-{i}"], created=i) for i in range(3)],
        claims=[pvc(f"ns/data-{i}", "5Gi", storage_class="local") for i in range(3)],
        volumes=[
            pv(f"v{i}", "10Gi", storage_class="local", node_affinity=[f"{HOST} in ({n})"]) for i, n in enumerate("aab")
        ],
        storage_classes=[_local],
    )
    where = placed(solved(snap))
    assert sorted(where.values()) == ["a", "a", "b"]


def test_local_volumes_too_few_for_every_replica() -> None:
    snap = snapshot(
        nodes=THREE,
        pods=[pod(f"ns/r{i}", claims=[f"data-{i}"], created=i) for i in range(3)],
        claims=[pvc(f"ns/data-{i}", storage_class="local") for i in range(3)],
        volumes=[pv(f"v{i}", storage_class="local", node_affinity=[f"{HOST} in ({n})"]) for i, n in enumerate("ab")],
        storage_classes=[_local],
    )
    dec = solved(snap)
    assert sorted(placed(dec).values()) == ["a", "b"]
    waiting = [o for o in dec.podgroups if o.phase != "Running"]
    assert len(waiting) == 1


def test_volumes_shared_by_several_nodes_go_to_the_first_claim_in_queue_order() -> None:
    """A volume any node may use, two waiting claims that both suit it: only the older pod counts on
    it this cycle (the other waits, conservatively)."""
    snap = snapshot(
        nodes=THREE,
        pods=[pod("ns/p", claims=["d1"], created=1), pod("ns/q", claims=["d2"], created=2)],
        claims=[pvc("ns/d1", storage_class="nfs"), pvc("ns/d2", storage_class="nfs")],
        volumes=[pv("shared", storage_class="nfs")],
        storage_classes=[storage_class("nfs", provisioner="kubernetes.io/no-provisioner")],
    )
    dec = solved(snap)
    assert placed(dec).keys() == {"ns/p"}
    outcome = next(o for o in dec.podgroups if o.podgroup == "ns/q")
    assert BIND_CONFLICT in outcome.message


def test_pods_sharing_one_waiting_claim_are_not_placed_apart() -> None:
    """A ReadWriteMany claim not bound yet, two pods using it, a local volume on each node: placed
    at once, they could pick two nodes for the one claim. The older goes, the other waits."""
    snap = snapshot(
        nodes=[host("a", cpu="1"), host("b", cpu="1")],
        pods=[pod("ns/p", claims=["shared"], created=1), pod("ns/q", claims=["shared"], created=2)],
        claims=[pvc("ns/shared", storage_class="local", modes=[RWX])],
        volumes=[pv(f"v{n}", storage_class="local", modes=[RWX], node_affinity=[f"{HOST} in ({n})"]) for n in "ab"],
        storage_classes=[_local],
    )
    dec = solved(snap)
    assert placed(dec).keys() == {"ns/p"}
    outcome = next(o for o in dec.podgroups if o.podgroup == "ns/q")
    assert BIND_CONFLICT in outcome.message
    both = decision(snap, bindings=[bind("ns/p", "a"), bind("ns/q", "b")])
    assert [v.rule for v in check(snap, both)] == ["VolumeBinding"]
