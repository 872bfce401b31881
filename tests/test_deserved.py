"""Deserved shares: weighted water-filling per resource, capped by demand and capability, raised to
guarantee, explicit shares, hierarchy, and the invariants stated in solver/shares/deserved.py."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from builders import group, node, pod, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Queue, Snapshot
from vcsat.model import resources as res
from vcsat.solver.shares import (
    cluster_total,
    deserved_shares,
    fair_shares,
    queue_demand,
    queue_usage,
    water_fill,
)
from vcsat.solver.shares.deserved import Claim, QueueTree, split

CPU = res.CPU


def demand_snapshot(
    queues: list[Queue], cpu_demand: Mapping[str, int], *, cpu_held: Mapping[str, int] | None = None
) -> Snapshot:
    """One pending pod per queue asking ``cpu_demand[q]`` millicores (and one held pod per
    ``cpu_held``), on a node of 100 cores; memory asks nothing worth sharing."""
    pods = []
    groups = []
    for name, milli in cpu_demand.items():
        if milli:
            pods.append(pod(f"ns/{name}-want", cpu_milli=milli, memory_mib=0, group=f"ns/{name}"))
            groups.append(group(f"ns/{name}", queue=name))
    for name, milli in (cpu_held or {}).items():
        pods.append(pod(f"ns/{name}-held", cpu_milli=milli, memory_mib=0, group=f"ns/{name}-run", node="n1"))
        groups.append(group(f"ns/{name}-run", queue=name))
    return snapshot(nodes=[node("n1", cpu="100", memory="1Ti")], pods=pods, groups=groups, queues=queues)


def cpu_shares(snap: Snapshot, total_cpu: int) -> dict[str, int]:
    return {name: vector[CPU] for name, vector in deserved_shares(snap, {CPU: total_cpu}).items()}


# --- tables -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "queues", "demand", "total", "expected"),
    [
        (
            "two queues by weight 1:3",
            [queue("a", weight=1), queue("b", weight=3)],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 2000, "b": 6000},
        ),
        (
            "equal weights, equal split",
            [queue("a"), queue("b")],
            {"a": 9000, "b": 9000},
            8000,
            {"a": 4000, "b": 4000},
        ),
        (
            "demand below share: the rest flows to the other queue",
            [queue("a"), queue("b")],
            {"a": 1000, "b": 100_000},
            8000,
            {"a": 1000, "b": 7000},
        ),
        (
            "capability caps a queue and its excess is redistributed",
            [queue("a", weight=3, capability={"cpu": 2}), queue("b")],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 2000, "b": 6000},
        ),
        (
            "everyone capped: the rest of the cluster is nobody's",
            [queue("a", capability={"cpu": 1}), queue("b", capability={"cpu": 2})],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 1000, "b": 2000},
        ),
        (
            "a queue without demand deserves nothing",
            [queue("a"), queue("b")],
            {"a": 0, "b": 3000},
            8000,
            {"a": 0, "b": 3000},
        ),
        (
            "guarantee raises a queue above its weighted share",
            [queue("a", guarantee={"cpu": 6}), queue("b")],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 6000, "b": 2000},
        ),
        (
            "guarantee is a floor, above it the level is common",
            [queue("a", guarantee={"cpu": 4}), queue("b"), queue("c")],
            {"a": 100_000, "b": 1000, "c": 100_000},
            10_000,
            {"a": 4500, "b": 1000, "c": 4500},
        ),
        (
            "guarantee holds even without demand (reserved, lent out)",
            [queue("a", guarantee={"cpu": 3}), queue("b")],
            {"a": 0, "b": 100_000},
            8000,
            {"a": 3000, "b": 5000},
        ),
        (
            "guarantee never above capability",
            [queue("a", guarantee={"cpu": 6}, capability={"cpu": 2}), queue("b")],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 2000, "b": 6000},
        ),
        (
            "guarantees beyond the total are shared by weight",
            [queue("a", guarantee={"cpu": 6}), queue("b", guarantee={"cpu": 6}, weight=3)],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 2000, "b": 6000},
        ),
        (
            "explicit deserved is honoured, the rest goes by weight",
            [queue("a", deserved={"cpu": 2}, weight=10), queue("b"), queue("c")],
            {"a": 100_000, "b": 100_000, "c": 100_000},
            8000,
            {"a": 2000, "b": 3000, "c": 3000},
        ),
        (
            "explicit deserved capped by demand; the unused part is redistributed",
            [queue("a", deserved={"cpu": 6}), queue("b")],
            {"a": 1000, "b": 100_000},
            8000,
            {"a": 1000, "b": 7000},
        ),
        (
            "explicit queue gets leftovers only after weighted queues are satisfied",
            [queue("a", deserved={"cpu": 2}), queue("b")],
            {"a": 100_000, "b": 3000},
            8000,
            {"a": 5000, "b": 3000},
        ),
        (
            "explicit shares beyond the total are water-filled",
            [queue("a", deserved={"cpu": 6}), queue("b", deserved={"cpu": 6})],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 4000, "b": 4000},
        ),
        (
            "rounding hands out every unit, ties by name",
            [queue("a"), queue("b"), queue("c")],
            {"a": 100_000, "b": 100_000, "c": 100_000},
            10,
            {"a": 4, "b": 3, "c": 3},
        ),
    ],
)
def test_flat_shares(
    case: str,
    queues: list[Queue],
    demand: dict[str, int],
    total: int,
    expected: dict[str, int],
) -> None:
    shares = cpu_shares(demand_snapshot(queues, demand), total)
    assert {name: shares[name] for name in expected} == expected, case
    assert shares["default"] == 0


@pytest.mark.parametrize(
    ("case", "queues", "demand", "total", "expected"),
    [
        (
            "the total splits among roots by weight, then each root among its children",
            [
                queue("eng", weight=3),
                queue("ops", weight=1),
                queue("eng-a", parent="eng"),
                queue("eng-b", parent="eng", weight=2),
                queue("ops-a", parent="ops"),
            ],
            {"eng-a": 100_000, "eng-b": 100_000, "ops-a": 100_000},
            12_000,
            {"eng": 9000, "ops": 3000, "eng-a": 3000, "eng-b": 6000, "ops-a": 3000},
        ),
        (
            "a parent's capability caps its whole subtree",
            [
                queue("eng", capability={"cpu": 4}),
                queue("ops"),
                queue("eng-a", parent="eng"),
                queue("eng-b", parent="eng"),
            ],
            {"eng-a": 100_000, "eng-b": 100_000, "ops": 100_000},
            12_000,
            {"eng": 4000, "ops": 8000, "eng-a": 2000, "eng-b": 2000},
        ),
        (
            "what a subtree cannot use goes to the other roots",
            [queue("eng"), queue("ops"), queue("eng-a", parent="eng")],
            {"eng-a": 1000, "ops": 100_000},
            12_000,
            {"eng": 1000, "ops": 11_000, "eng-a": 1000},
        ),
        (
            "a child's guarantee raises its parent",
            [queue("eng"), queue("ops"), queue("eng-a", parent="eng", guarantee={"cpu": 9})],
            {"eng-a": 100_000, "ops": 100_000},
            12_000,
            {"eng": 9000, "ops": 3000, "eng-a": 9000},
        ),
        (
            "a queue named root is the top of the tree",
            [queue("root"), queue("x", weight=3), queue("y", parent="root")],
            {"x": 100_000, "y": 100_000},
            8000,
            {"root": 8000, "x": 6000, "y": 2000},
        ),
        (
            "an inner queue's own pods compete as one more child of weight 1",
            [queue("eng"), queue("eng-a", parent="eng")],
            {"eng": 100_000, "eng-a": 100_000},
            8000,
            {"eng": 8000, "eng-a": 4000},
        ),
        (
            "a missing parent reads as top-level",
            [queue("a", parent="nowhere"), queue("b")],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 4000, "b": 4000},
        ),
        (
            "queues on a cycle of parents read as top-level",
            [queue("a", parent="b"), queue("b", parent="a")],
            {"a": 100_000, "b": 100_000},
            8000,
            {"a": 4000, "b": 4000},
        ),
    ],
)
def test_hierarchical_shares(
    case: str,
    queues: list[Queue],
    demand: dict[str, int],
    total: int,
    expected: dict[str, int],
) -> None:
    shares = cpu_shares(demand_snapshot(queues, demand), total)
    assert {name: shares[name] for name in expected} == expected, case


def test_demand_is_what_is_held_plus_what_pending_pods_ask() -> None:
    snap = demand_snapshot([queue("a"), queue("b")], {"a": 3000}, cpu_held={"a": 2000, "b": 1000})
    assert queue_usage(snap)["a"][CPU] == 2000
    assert queue_demand(snap)["a"][CPU] == 5000
    assert queue_demand(snap)["b"][CPU] == 1000
    shares = cpu_shares(snap, 100_000)
    assert shares == {"a": 5000, "b": 1000, "default": 0}


def test_closed_queue_demands_only_what_it_holds() -> None:
    snap = demand_snapshot([queue("a", open=False), queue("b")], {"a": 50_000, "b": 50_000}, cpu_held={"a": 1000})
    assert queue_demand(snap)["a"][CPU] == 1000
    assert cpu_shares(snap, 8000) == {"a": 1000, "b": 7000, "default": 0}


def test_pods_belong_to_their_podgroups_queue_default_or_none() -> None:
    snap = snapshot(
        nodes=[node("n1")],
        pods=[
            pod("ns/grouped", cpu="1", group="ns/g", node="n1"),
            pod("ns/lone", cpu="2", node="n1"),
            pod("ns/orphan", cpu="4", group="ns/missing", node="n1"),
            pod("ns/foreign", cpu="3", node="n1", managed=False),
            pod("ns/done", cpu="5", node="n1", phase="Succeeded"),
        ],
        groups=[group("ns/g", queue="q")],
        queues=[queue("q")],
    )
    usage = queue_usage(snap)
    assert usage["q"][CPU] == 1000
    assert usage["default"][CPU] == 2000
    # A pod of a PodGroup not in the snapshot, a foreign pod and a finished pod count nowhere.
    assert sum(vector.get(CPU, 0) for vector in usage.values()) == 3000


def test_cluster_total_leaves_out_foreign_pods_and_unready_nodes() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8", ready=False)],
        pods=[pod("kube-system/ds", cpu="1", node="n1", managed=False), pod("ns/mine", cpu="2", node="n1")],
    )
    total = cluster_total(snap)
    assert total[CPU] == 7000
    assert deserved_shares(snap)["default"][CPU] == 2000


def test_pods_count_and_gpu_shares_are_not_shared() -> None:
    snap = snapshot(
        nodes=[node("n1", gpus=8)],
        pods=[pod("ns/p", cpu="1", gpus=1, gpu_milli=500)],
    )
    shares = deserved_shares(snap)["default"]
    assert res.PODS not in shares
    assert res.GPU_MILLI not in shares
    assert shares[res.GPU] == 1
    assert shares[CPU] == 1000


def test_queue_share_reports_its_inputs() -> None:
    snap = demand_snapshot([queue("a", guarantee={"cpu": 5}), queue("b")], {"a": 2000, "b": 100_000})
    share = fair_shares(snap, {CPU: 8000})["a"]
    assert share.deserved[CPU] == 5000
    assert share.capped_demand[CPU] == 2000
    assert share.guarantee[CPU] == 5000
    assert share.entitled[CPU] == 2000


def test_subtree_usage_adds_descendants() -> None:
    snap = demand_snapshot(
        [queue("eng"), queue("eng-a", parent="eng"), queue("eng-b", parent="eng")],
        {},
        cpu_held={"eng-a": 1000, "eng-b": 2000},
    )
    assert queue_usage(snap, subtree=True)["eng"][CPU] == 3000
    assert queue_usage(snap)["eng"] == {}


def test_tree_lists_children_after_descendants() -> None:
    snap = snapshot(queues=[queue("a"), queue("b", parent="a"), queue("c", parent="b"), queue("d", parent="a")])
    tree = QueueTree.of(snap)
    order = tree.bottom_up()
    assert order.index("c") < order.index("b") < order.index("a")
    assert order.index("d") < order.index("a")
    assert sorted(order) == ["a", "b", "c", "d", "default"]


@pytest.mark.parametrize(
    ("amount", "weights", "floors", "caps", "expected"),
    [
        (100, [1, 1, 1], [40, 0, 0], [1000, 10, 1000], [45, 10, 45]),
        (10, [1, 1, 1], [0, 0, 0], [100, 100, 100], [4, 3, 3]),
        (10, [1, 2], [0, 0], [100, 100], [3, 7]),
        (50, [1, 1], [0, 0], [10, 20], [10, 20]),
        (0, [1, 1], [0, 0], [10, 20], [0, 0]),
        (7, [1, 1], [3, 4], [3, 4], [3, 4]),
    ],
)
def test_water_fill(amount: int, weights: list[int], floors: list[int], caps: list[int], expected: list[int]) -> None:
    assert water_fill(amount, weights, floors, caps) == expected


def test_water_fill_refuses_floors_beyond_the_amount() -> None:
    with pytest.raises(ValueError, match="floors"):
        water_fill(5, [1, 1], [3, 3], [10, 10])


# --- properties -------------------------------------------------------------------------------

claims_strategy = st.lists(
    st.builds(
        lambda weight, demand, guarantee, explicit: Claim("", weight, demand, guarantee, explicit),
        st.integers(1, 5),
        st.integers(0, 60),
        st.sampled_from([0, 0, 0, 5, 20]),
        st.sampled_from([None, None, None, 0, 10, 40]),
    ),
    min_size=1,
    max_size=6,
).map(lambda claims: [Claim(f"q{i}", c.weight, c.capped_demand, c.guarantee, c.explicit) for i, c in enumerate(claims)])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 150), claims_strategy)
def test_split_invariants(amount: int, claims: list[Claim]) -> None:
    """(I1) Σ shares = min(amount, Σ max(G, C)); (I2) no share above max(G, C); (I3) shares at
    least G when the guarantees fit; (I4) weighted max-min among weighted siblings, to one unit."""
    shares = split(amount, claims)
    tops = [max(c.guarantee, c.capped_demand) for c in claims]
    assert sum(shares) == min(amount, sum(tops))
    assert all(0 <= share <= top for share, top in zip(shares, tops, strict=True))
    if sum(c.guarantee for c in claims) <= amount:
        assert all(share >= c.guarantee for share, c in zip(shares, claims, strict=True))
        weighted = [(c, s) for c, s in zip(claims, shares, strict=True) if c.explicit is None]
        for ci, di in weighted:
            if di >= max(ci.guarantee, ci.capped_demand):
                continue  # i is satisfied: nothing to envy
            for cj, dj in weighted:
                if dj > cj.guarantee:
                    assert (dj - 1) * ci.weight < cj.weight * (di + 1)


queue_names = ["a", "b", "c", "d"]


@st.composite
def queue_snapshots(draw: st.DrawFn) -> tuple[Snapshot, int]:
    queues: list[Queue] = []
    for i, name in enumerate(queue_names):
        parent = draw(st.sampled_from([None, *queue_names[:i]]))
        capability = draw(st.sampled_from([None, None, {"cpu": 2}, {"cpu": 5}]))
        guarantee = draw(st.sampled_from([None, None, None, {"cpu": 1}, {"cpu": 3}]))
        deserved = draw(st.sampled_from([None, None, None, {"cpu": 2}]))
        weight = draw(st.integers(1, 4))
        queues.append(
            queue(
                name,
                parent=parent,
                capability=capability,
                guarantee=guarantee,
                deserved=deserved,
                weight=weight,
            )
        )
    demand = {name: draw(st.sampled_from([0, 500, 1000, 3000, 7000])) for name in queue_names}
    held = {name: draw(st.sampled_from([0, 0, 1000])) for name in queue_names}
    total = draw(st.integers(0, 12_000))
    return demand_snapshot(queues, demand, cpu_held={k: v for k, v in held.items() if v}), total


@settings(max_examples=200, deadline=None)
@given(queue_snapshots())
def test_tree_invariants(case: tuple[Snapshot, int]) -> None:
    """Over whole trees: Σ top-level shares ≤ total; each parent's children add up to at most its
    share; no queue above max(G, C) ≤ max(guarantee, min(demand, capability)); work-conserving:
    at every parent the children get min(share, Σ max(G, C)) (its own pods included)."""
    snap, total = case
    shares = fair_shares(snap, {CPU: total})
    tree = QueueTree.of(snap)
    queues = snap.queue_by_name
    own = queue_demand(snap)

    def top(name: str) -> int:
        return max(shares[name].guarantee[CPU], shares[name].capped_demand[CPU])

    roots = tree.children[None]
    handed_out = sum(shares[name].deserved[CPU] for name in roots)
    assert handed_out == min(total, sum(top(name) for name in roots))
    if any(shares[name].deserved[CPU] < top(name) for name in roots):
        assert handed_out == total  # someone wants more: nothing is left idle
    for name, share in shares.items():
        deserved = share.deserved[CPU]
        assert deserved <= top(name)
        capability = queues[name].capability
        limit = share.demand[CPU] if capability is None else min(share.demand[CPU], capability["cpu"])
        assert deserved <= max(limit, share.guarantee[CPU])
        children = tree.children.get(name, [])
        if children:
            own_pods = own.get(name, {}).get(CPU, 0)
            if capability is not None:
                own_pods = min(own_pods, capability["cpu"])
            given_out = sum(shares[c].deserved[CPU] for c in children)
            wanted = sum(top(c) for c in children) + own_pods
            assert given_out <= deserved
            if sum(shares[c].guarantee[CPU] for c in children) <= deserved:
                # Work-conserving: the children's shares plus what the own pods got fill the share.
                assert given_out <= min(deserved, wanted)
                assert given_out >= min(deserved, wanted) - own_pods
