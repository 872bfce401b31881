"""The cycle cap (vcsat.adapters.live.cycle_cap): which waiting groups a bounded cycle is given, in
which order, and how the cap adapts. Tables of small object lists, plus properties: whole groups
only, nothing but waiting pods (and PodGroups with all their pods) left out, the first group
always given."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.adapters.live.cycle_cap import CycleCap, arrived, defer, queue_order, waiting_group

NAME = "vcsat"


def pod(
    name: str,
    *,
    group: str | None = None,
    priority: int | None = None,
    created: str = "2026-01-01T00:00:00Z",
    node: str | None = None,
    scheduler: str = NAME,
    phase: str | None = None,
    namespace: str = "ns",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "creationTimestamp": created}
    if group is not None:
        metadata["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: dict[str, Any] = {"schedulerName": scheduler}
    if priority is not None:
        spec["priority"] = priority
    if node is not None:
        spec["nodeName"] = node
    status = {"phase": phase} if phase else {}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def podgroup(name: str, namespace: str = "ns") -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": namespace}, "spec": {"minMember": 1}}


def node(name: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}}


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [f"{o['kind']}:{o['metadata']['name']}" for o in objects]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod("a"), "ns/a"),
        (pod("a", group="g"), "ns/g"),
        (pod("a", node="n1"), None),  # bound
        (pod("a", scheduler="other"), None),  # another scheduler's
        (pod("a", phase="Running"), None),
        (pod("a", phase="Pending"), "ns/a"),
        ({**pod("a"), "metadata": {**pod("a")["metadata"], "deletionTimestamp": "x"}}, None),
        (podgroup("g"), None),
        (node("n1"), None),
    ],
)
def test_waiting_group(obj: dict[str, Any], expected: str | None) -> None:
    assert waiting_group(obj, NAME) == expected


@pytest.mark.parametrize(
    ("groups", "tried", "expected"),
    [
        # creation order
        (
            {"ns/b": [pod("b", created="2026-01-01T00:00:01Z")], "ns/a": [pod("a", created="2026-01-01T00:00:02Z")]},
            {},
            ["ns/b", "ns/a"],
        ),
        # priority first
        (
            {
                "ns/b": [pod("b", created="2026-01-01T00:00:01Z")],
                "ns/a": [pod("a", priority=5, created="2026-01-01T00:00:02Z")],
            },
            {},
            ["ns/a", "ns/b"],
        ),
        # a group's highest priority and earliest pod count
        (
            {
                "ns/g": [
                    pod("x", group="g", created="2026-01-01T00:00:09Z"),
                    pod("y", group="g", created="2026-01-01T00:00:00Z"),
                ],
                "ns/a": [pod("a", created="2026-01-01T00:00:05Z")],
            },
            {},
            ["ns/g", "ns/a"],
        ),
        # ties: by key
        ({"ns/b": [pod("b")], "ns/a": [pod("a")]}, {}, ["ns/a", "ns/b"]),
        # a group already given to a cycle goes behind those never given, oldest given first
        (
            {"ns/a": [pod("a", priority=9)], "ns/b": [pod("b")], "ns/c": [pod("c")]},
            {"ns/a": 3, "ns/b": 2},
            ["ns/c", "ns/b", "ns/a"],
        ),
    ],
)
def test_queue_order(groups: dict[str, list[dict[str, Any]]], tried: dict[str, int], expected: list[str]) -> None:
    assert queue_order(groups, tried) == expected


def _objects() -> list[dict[str, Any]]:
    t = "2026-01-01T00:00:0{}Z".format
    return [
        node("n1"),
        pod("bound", node="n1"),
        podgroup("g1"),
        *(pod(f"g1-{i}", group="g1", created=t(1)) for i in range(4)),
        pod("lone", created=t(2)),
        podgroup("g2"),
        *(pod(f"g2-{i}", group="g2", created=t(3)) for i in range(4)),
        podgroup("g3"),
        pod("g3-0", group="g3", node="n1"),  # a gang with a member bound
        pod("g3-1", group="g3", created=t(4)),
        podgroup("empty"),  # no pods yet: always given (its pods come once it is admitted)
    ]


@pytest.mark.parametrize(
    ("cap", "left_out", "given", "deferred"),
    [
        (None, [], 10, 0),
        (100, [], 10, 0),
        (10, [], 10, 0),
        # g1 (4) + lone (1) fit in 5; g2 (4) and g3's waiting pod (1) wait; g2's PodGroup with its
        # pods, g3's stays (a member is bound)
        (5, ["PodGroup:g2", "Pod:g2-0", "Pod:g2-1", "Pod:g2-2", "Pod:g2-3", "Pod:g3-1"], 5, 5),
        # g1 fits; lone fits; g2 does not, g3-1 does (a later, smaller group fills the room)
        (6, ["PodGroup:g2", "Pod:g2-0", "Pod:g2-1", "Pod:g2-2", "Pod:g2-3"], 6, 4),
        # the first group is given even when larger than the cap
        (1, ["Pod:lone", "PodGroup:g2", "Pod:g2-0", "Pod:g2-1", "Pod:g2-2", "Pod:g2-3", "Pod:g3-1"], 4, 6),
    ],
)
def test_defer(cap: int | None, left_out: list[str], given: int, deferred: int) -> None:
    objects = _objects()
    out = defer(objects, NAME, cap)
    assert sorted(set(names(objects)) - set(names(out.objects))) == sorted(left_out)
    assert (out.given_pods, out.deferred_pods) == (given, deferred)
    assert names(out.objects) == [n for n in names(objects) if n not in left_out]  # order kept
    assert out.waiting == {"ns/g1": 4, "ns/lone": 1, "ns/g2": 4, "ns/g3": 1}


def test_defer_with_tried_groups_gives_new_ones_first() -> None:
    out = defer(_objects(), NAME, 5, tried={"ns/g1": 1, "ns/lone": 1})
    assert out.given_groups == frozenset({"ns/g2", "ns/g3"})
    assert out.deferred_pods == 5


@pytest.mark.parametrize(
    ("target", "steps", "expected"),
    [
        # (given pods, seconds, arrivals/s) -> cap after; start 1000, least 200
        (1.0, [(1000, 9.0, 0.0)] * 3, 1000),  # fewer than 4 cycles seen: unchanged
        # fixed part 2 s, 0.01 s a pod: the pods part as long as the target
        (5.0, [(100, 2.0, 0.0), (100, 3.0, 0.0), (100, 3.0, 0.0), (100, 3.0, 0.0)], 500),
        # ... or as long as the fixed part, when that is longer
        (1.0, [(100, 3.0, 0.0), (100, 4.0, 0.0), (100, 4.0, 0.0), (100, 4.0, 0.0)], 300),
        # ... never below the least
        (0.5, [(100, 1.0, 0.0), (100, 3.0, 0.0), (100, 3.0, 0.0), (100, 3.0, 0.0)], 200),
        # ... nor below 1.5 x the arrivals of such a cycle
        (0.5, [(100, 1.0, 0.0), (100, 3.0, 0.0), (100, 3.0, 0.0), (100, 3.0, 100.0)], 450),
        # time not growing with pods: the cap doubles, at most, each cycle
        (1.0, [(100, 10.0, 0.0)] * 5, 4000),
        # a cycle given nothing teaches nothing
        (1.0, [(0, 9.0, 0.0)] * 5, 1000),
    ],
)
def test_cycle_cap_adapts(target: float, steps: list[tuple[int, float, float]], expected: int) -> None:
    cap = CycleCap(target, start=1000, least=200)
    for given_pods, seconds, rate in steps:
        cap.observe(given_pods, seconds, rate)
    assert cap.cap == expected


@pytest.mark.parametrize(
    ("before", "now", "expected"),
    [({}, {"a": 3}, 3), ({"a": 3}, {"a": 3}, 0), ({"a": 1}, {"a": 4, "b": 2}, 5), ({"a": 5}, {}, 0)],
)
def test_arrived(before: dict[str, int], now: dict[str, int], expected: int) -> None:
    assert arrived(before, now) == expected


_GROUP = st.tuples(
    st.sampled_from(["a", "b", "c", "d", "e"]),  # group name
    st.integers(1, 4),  # waiting pods
    st.integers(0, 2),  # priority
    st.integers(0, 9),  # creation second
    st.booleans(),  # a member bound
)


@given(st.lists(_GROUP, max_size=6, unique_by=lambda g: g[0]), st.integers(1, 12))
def test_defer_properties(groups: list[tuple[str, int, int, int, bool]], cap: int) -> None:
    objects: list[dict[str, Any]] = [node("n1")]
    for name, size, priority, second, has_bound in groups:
        objects.append(podgroup(name))
        if has_bound:
            objects.append(pod(f"{name}-bound", group=name, node="n1"))
        objects.extend(
            pod(f"{name}-{i}", group=name, priority=priority, created=f"2026-01-01T00:00:0{second}Z")
            for i in range(size)
        )
    out = defer(objects, NAME, cap)
    kept = {id(o) for o in out.objects}
    total = sum(size for _, size, *_ in groups)
    assert out.given_pods + out.deferred_pods == total
    assert out.given_pods <= cap or len(out.given_groups) == 1
    if groups:
        assert out.given_groups, "the first group is always given"
    for name, _, _, _, has_bound in groups:
        waiting = [o for o in objects if o["metadata"]["name"].startswith(f"{name}-") and "nodeName" not in o["spec"]]
        taken = {id(o) in kept for o in waiting}
        assert len(taken) == 1, "a group is given whole or not at all"
        given_group = taken == {True}
        assert given_group == (f"ns/{name}" in out.given_groups)
        group_obj = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == name)
        assert (id(group_obj) in kept) == (given_group or has_bound)
    # bound pods and nodes are never left out
    assert all(id(o) in kept for o in objects if o["kind"] == "Node" or o["spec"].get("nodeName"))
