"""The array forms building the problem uses answer exactly as the plain per-node and per-pod scans
they replace: a bucket's fit counts on a room matrix, a predicates mask as a boolean row, and the
per-queue sums of what pods hold and ask, made in one pass and shared by the callers."""

from __future__ import annotations

import numpy as np
from builders import group, node, pod, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod, Snapshot
from vcsat.solver.enqueue import _bits
from vcsat.solver.problem import _fit_count, _fit_counts_at
from vcsat.solver.shares import queue_demand, queue_usage

amounts = st.integers(min_value=-5, max_value=40)


@given(
    request=st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=4),
    rows=st.lists(st.lists(amounts, min_size=4, max_size=4), min_size=1, max_size=12),
    pick=st.data(),
)
@settings(max_examples=200, deadline=None)
def test_fit_counts_on_the_room_matrix_equal_the_per_node_count(
    request: list[int], rows: list[list[int]], pick: st.DataObject
) -> None:
    width = len(request)
    free = [row[:width] for row in rows]
    nodes = tuple(sorted(pick.draw(st.sets(st.integers(min_value=0, max_value=len(free) - 1)))))
    room = np.array(free, dtype=np.int64).reshape(len(free), width)
    assert _fit_counts_at(tuple(request), room, nodes) == {n: _fit_count(tuple(request), free[n]) for n in nodes}


def test_fit_counts_table() -> None:
    free = [[8, 100], [3, 100], [-1, 100], [8, 5], [0, 0]]
    room = np.array(free, dtype=np.int64)
    assert _fit_counts_at((2, 10), room, (0, 1, 2, 3, 4)) == {0: 4, 1: 1, 2: 0, 3: 0, 4: 0}
    assert _fit_counts_at((0, 0), room, (0, 2)) == {0: 0, 2: 0}  # nothing asked: no count, as _fit_count
    assert _fit_counts_at((1, 1), room, ()) == {}


@given(mask=st.integers(min_value=0, max_value=(1 << 70) - 1), count=st.integers(min_value=0, max_value=70))
@settings(max_examples=200, deadline=None)
def test_mask_bits_equal_the_bit_by_bit_reading(mask: int, count: int) -> None:
    mask &= (1 << count) - 1
    assert _bits(mask, count).tolist() == [bool(mask >> i & 1) for i in range(count)]


def _naive(snap: Snapshot, *, asking: bool) -> dict[str, dict[str, int]]:
    closed = {q.name for q in snap.queues if not q.open}
    out: dict[str, dict[str, int]] = {q.name: {} for q in snap.queues}

    def counts(p: Pod) -> bool:
        if p.bound:
            return True
        return asking and p.pending and snap.queue_of(p) not in closed

    for p in snap.pods:
        name = snap.queue_of(p)
        if name is None or not counts(p):
            continue
        vector = out.setdefault(name, {})
        for resource, amount in p.requests.items():
            vector[resource] = vector.get(resource, 0) + amount
    return out


@given(
    specs=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", None]),  # the PodGroup's queue (None: no PodGroup)
            st.sampled_from([None, "n1", "n2"]),  # bound where
            st.sampled_from([None, "Succeeded", "Running"]),
            st.booleans(),  # managed
            st.integers(min_value=1, max_value=4),
        ),
        max_size=12,
    ),
    closed=st.sets(st.sampled_from(["a", "b", "c"])),
)
@settings(max_examples=100, deadline=None)
def test_queue_sums_equal_the_per_pod_scan(
    specs: list[tuple[str | None, str | None, str | None, bool, int]], closed: set[str]
) -> None:
    pods, groups = [], []
    for i, (where, bound_on, phase, managed, cpu) in enumerate(specs):
        key = None
        if where is not None:
            key = f"ns/g{i}"
            groups.append(group(key, 1, where))
        pods.append(pod(f"ns/p{i}", str(cpu), group=key, node=bound_on, phase=phase, managed=managed))  # type: ignore[arg-type]
    snap = snapshot(
        [node("n1", "64", "64Gi"), node("n2", "64", "64Gi")],
        pods,
        groups,
        [queue(name, open=name not in closed) for name in ("a", "b", "c")] + [queue("default")],
    )
    assert queue_usage(snap) == _naive(snap, asking=False)
    assert queue_demand(snap) == _naive(snap, asking=True)
    assert list(queue_demand(snap)) == list(_naive(snap, asking=True))  # the same order too
    # Callers get their own copies of the shared sums.
    queue_usage(snap)["a"]["cpu"] = -1
    assert queue_usage(snap) == _naive(snap, asking=False)
