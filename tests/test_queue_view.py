"""``queue_rows``' allocation per queue (``adapters/live/queue_view.py``) read off the solver's carried
queue sums and the decision's own pods: the same as summing every pod that holds room once the
decision is applied, with the pods' sums carried across snapshots or summed afresh."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from builders import bind, decision, evict, group, node, pod, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.live.queue_view import queue_rows
from vcsat.model import Decision, Snapshot
from vcsat.model import resources as res
from vcsat.solver import pod_sums
from vcsat.solver.shares.deserved import QueueTree


def _walked(snap: Snapshot, made: Decision) -> dict[str, dict[str, int]]:
    """Every pod that holds room once the decision is applied, summed per queue and up the tree."""
    own: dict[str, dict[str, int]] = {q.name: {} for q in snap.queues}
    placed = {b.pod for b in made.bindings}
    evicted = {e.pod for e in made.evictions}
    for p in snap.pods:
        if (p.bound and p.key not in evicted) or (p.key in placed and not p.bound):
            name = snap.queue_of(p)
            if name is not None and name in own:
                own[name] = res.add(own[name], p.requests)
    tree = QueueTree.of(snap)
    for name in tree.bottom_up():
        parent = tree.parent.get(name)
        if parent is not None:
            own[parent] = res.add(own.get(parent, {}), own.get(name, {}))
    return {name: {k: v for k, v in vector.items() if v} for name, vector in own.items()}


@pytest.fixture(params=[False, True], ids=["afresh", "carried"])
def carrying(request: pytest.FixtureRequest) -> Iterator[bool]:
    pod_sums.carry(request.param)
    yield request.param
    pod_sums.carry(False)


def _cluster() -> Snapshot:
    return snapshot(
        [node("n0", cpu="8", gpus=2), node("n1", cpu="8")],
        [
            pod("ns/a-0", cpu="2", group="ns/a", node="n0"),
            pod("ns/a-1", cpu="2", gpus=1, group="ns/a"),
            pod("ns/b-0", cpu="3", group="ns/b", node="n1"),
            pod("ns/lone", cpu="1", node="n0"),
            pod("ns/waits", cpu="1"),
            pod("ns/theirs", cpu="4", node="n1", managed=False),
            pod("ns/orphan", cpu="1", group="ns/missing", node="n1"),
            pod("ns/done", cpu="5", node="n0", phase="Succeeded"),
        ],
        [group("ns/a", 2, queue="child"), group("ns/b", 1, queue="root")],
        [queue("root"), queue("child", parent="root")],
    )


CASES = {
    "nothing decided": decision(),
    "a gang placed": decision(bindings=[bind("ns/a-1", "n0", [0])]),
    "a bound pod evicted": decision(bindings=[bind("ns/waits", "n1")], evictions=[evict("ns/b-0")]),
    "a bound pod placed again and evicted": decision(bindings=[bind("ns/lone", "n1")], evictions=[evict("ns/lone")]),
    "another scheduler's pod and a pod not there": decision(
        bindings=[bind("ns/gone", "n1")], evictions=[evict("ns/theirs")]
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_allocated_is_every_pod_holding_room(case: str, carrying: bool) -> None:
    snap, made = _cluster(), CASES[case]
    rows = {row.name: row.allocated for row in queue_rows(snap, made)}
    assert rows == _walked(snap, made)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.booleans(), st.booleans()), max_size=8),
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.booleans(), st.booleans()), max_size=8),
    st.data(),
)
def test_any_snapshot_after_any_other(
    first: list[tuple[int, int, bool, bool]], second: list[tuple[int, int, bool, bool]], data: st.DataObject
) -> None:
    """Carried across two snapshots (the second sharing nothing with the first), each with a random
    decision over its pods, the allocation is the walked one."""
    pod_sums.carry(True)
    try:
        for tag, spec in (("a", first), ("b", second)):
            pods = [
                pod(f"ns/{tag}{i}", cpu=str(cpu), group=f"ns/g{where}", node="n0" if bound else None, managed=ours)
                for i, (where, cpu, bound, ours) in enumerate(spec)
            ]
            snap = snapshot(
                [node("n0", cpu="64")],
                pods,
                [group("ns/g0", 1, queue="root"), group("ns/g1", 1, queue="child")],
                [queue("root"), queue("child", parent="root")],
            )
            keys = [p.key for p in pods]
            placed = data.draw(st.lists(st.sampled_from(keys), unique=True)) if keys else []
            evicted = data.draw(st.lists(st.sampled_from(keys), unique=True)) if keys else []
            made = decision(bindings=[bind(key, "n0") for key in placed], evictions=[evict(key) for key in evicted])
            rows = {row.name: row.allocated for row in queue_rows(snap, made)}
            assert rows == _walked(snap, made)
    finally:
        pod_sums.carry(False)
