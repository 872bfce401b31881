"""The per-snapshot context (``solver/cycle.py``): one per snapshot, shared by the build and
admission, never a key from another pod object, and the last snapshot's let go with the next."""

from __future__ import annotations

import gc
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import group, node, pod, snapshot
from vcsat.model import Policy
from vcsat.solver import cycle, enqueue
from vcsat.solver.problem import build_problem
from vcsat.solver.rules.predicates import eligibility_key

ZONE = "topology.kubernetes.io/zone"
NODES = [node(f"n{i}", cpu="8", gpus=2, labels={ZONE: "a" if i % 2 else "b"}) for i in range(4)]


def test_one_context_per_snapshot() -> None:
    first = snapshot(nodes=NODES, pods=[pod("ns/p")])
    second = snapshot(nodes=NODES, pods=[pod("ns/p")])
    context = cycle.of(first)
    assert cycle.of(first) is context
    assert cycle.of(second) is not context
    assert cycle.of(second).snapshot is second


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"selector": {ZONE: "a"}}, {"selector": {ZONE: "b"}}),
        ({"affinity": f"{ZONE} in (a)"}, {"affinity": f"{ZONE} in (b)"}),
        ({}, {"selector": {ZONE: "b"}}),
        ({"tolerations": ["gpu=yes:NoSchedule"]}, {}),
    ],
)
def test_a_changed_pod_gets_its_own_key(before: dict[str, object], after: dict[str, object]) -> None:
    # A watch event makes a new pod object: its key is its own, in this cycle's context and the next.
    old, new = pod("ns/p", **before), pod("ns/p", **after)  # type: ignore[arg-type]
    keys = cycle.of(snapshot(nodes=NODES, pods=[old])).keys
    assert keys.of(old) == eligibility_key(old)
    assert keys.of(new) == eligibility_key(new) != eligibility_key(old)
    assert cycle.of(snapshot(nodes=NODES, pods=[new])).keys.of(new) == eligibility_key(new)


def test_the_build_and_admission_share_the_keys() -> None:
    pods = [pod(f"ns/p{i}", gpus=1, selector={ZONE: "a"}, group="ns/g") for i in range(3)]
    snap = snapshot(nodes=NODES, pods=pods, groups=[group("ns/g", min_member=3)])
    build_problem(snap, Policy(time_limit_s=1.0))
    made = cycle.of(snap).keys._by_pod
    assert {id(p) for p in pods} <= made.keys()
    # Admission's keys are the context's own object, so it looks up what the build made.
    state = enqueue._State.of(snap, Policy(time_limit_s=1.0), None)
    assert state.placeable.keys is cycle.of(snap).keys


def test_the_last_snapshot_is_let_go() -> None:
    first = snapshot(nodes=NODES, pods=[pod("ns/p")])
    cycle.of(first).keys.of(first.pods[0])
    gone = weakref.ref(first.pods[0])
    cycle.of(snapshot(nodes=NODES, pods=[pod("ns/q")]))
    del first
    gc.collect()
    assert gone() is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([None, "a", "b"]), st.sampled_from([(), ("gpu=yes:NoSchedule",)])),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.integers(0, 39), max_size=24),
)
def test_keys_equal_the_plain_ones(specs: list[tuple[str | None, tuple[str, ...]]], asks: list[int]) -> None:
    made = [
        pod(f"ns/p{i}", selector={ZONE: zone} if zone else None, tolerations=list(tolerations))
        for i, (zone, tolerations) in enumerate(specs)
    ]
    # Mates sharing some of a pod's spec objects (as the converter's pods of one spec share them all).
    other = pod("ns/other", selector={ZONE: "c"}, affinity=f"{ZONE} in (c)", tolerations=["x:NoSchedule"])
    pods = [
        mate
        for i, p in enumerate(made)
        for mate in (
            p,
            p.model_copy(update={"name": f"same-{i}"}),
            p.model_copy(update={"name": f"sel-{i}", "node_selector": other.node_selector}),
            p.model_copy(update={"name": f"aff-{i}", "affinity": other.affinity}),
            p.model_copy(update={"name": f"tol-{i}", "tolerations": other.tolerations}),
        )
    ]
    keys = cycle.of(snapshot(nodes=NODES, pods=pods)).keys
    for i in asks:
        p = pods[i % len(pods)]
        assert keys.of(p) == eligibility_key(p)
