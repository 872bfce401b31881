"""Shortcuts of the build and of admission answer as the plain definitions they replace:
``problem.FitCounts`` (a request's per-node fit counts worked out once and shared by shapes that
differ only in their eligible nodes) against the per-node count ``_fit_count``; the build's
buckets (nodes as one mask per bucket, from each shape's node array) against ``initial_buckets``
from the shapes alone; and ``enqueue.gang_pods``'s one-pod case against the general choice of a
gang's pods."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from builders import group, node, pod, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Pod, PodGroup, Policy
from vcsat.solver.enqueue import gang_pods
from vcsat.solver.problem import FitCounts, _fit_count, _several_queues, build_problem, initial_buckets

amounts = st.integers(min_value=-5, max_value=40)


def _reference_counts(request: tuple[int, ...], free: list[list[int]], eligible: list[bool]) -> dict[int, int]:
    """Per eligible node where a pod fits: how many fit there alone; every eligible node, unbounded,
    for a request that asks for nothing."""
    if not any(amount > 0 for amount in request):
        return {n: 1 << 30 for n, on in enumerate(eligible) if on}
    counts = {n: _fit_count(request, free[n]) for n, on in enumerate(eligible) if on}
    return {n: count for n, count in counts.items() if count > 0}


@given(
    rows=st.lists(st.lists(amounts, min_size=3, max_size=3), min_size=0, max_size=12),
    asks=st.lists(
        st.tuples(st.lists(st.integers(min_value=-1, max_value=9), min_size=3, max_size=3), st.integers(0, 1 << 12)),
        min_size=1,
        max_size=8,
    ),
)
@settings(max_examples=200, deadline=None)
def test_fit_counts_equal_the_per_node_count(rows: list[list[int]], asks: list[tuple[list[int], int]]) -> None:
    free = np.array(rows, dtype=np.int64).reshape(len(rows), 3)
    counts = FitCounts(free)  # one for every ask, as the build shares it between shapes
    for request, mask in asks + asks:  # asked twice: the kept per-request counts too
        eligible = [bool(mask >> n & 1) for n in range(len(rows))]
        got = counts.of(tuple(request), np.array(eligible, dtype=np.bool_))
        assert got == _reference_counts(tuple(request), rows, eligible)
        assert list(got) == sorted(got)  # the build takes the keys, in this order, as the shape's nodes


def test_fit_counts_table() -> None:
    free = np.array([[8, 100], [3, 100], [-1, 100], [8, 5], [0, 0]], dtype=np.int64)
    counts = FitCounts(free)
    every = np.ones(5, dtype=np.bool_)
    assert counts.of((2, 10), every) == {0: 4, 1: 1}
    assert counts.of((2, 10), np.array([False, True, True, True, True])) == {1: 1}
    assert counts.of((0, 0), np.array([True, False, True, False, False])) == {0: 1 << 30, 2: 1 << 30}
    assert FitCounts(np.zeros((0, 2), dtype=np.int64)).of((1, 1), np.zeros(0, dtype=np.bool_)) == {}


@given(seed=st.integers(0, 10_000), nodes=st.integers(4, 30), jobs=st.integers(10, 60))
@settings(max_examples=8, deadline=None)
def test_build_buckets_equal_those_made_from_the_shapes(seed: int, nodes: int, jobs: int) -> None:
    options = GeneratorOptions(nodes=nodes, pending_jobs=jobs, seed=seed)
    snap = snapshot_from_objects(generate_instance(options)["items"], source="generated")
    problem = build_problem(snap, Policy(time_limit_s=2))
    plain = initial_buckets(problem.shapes, list(problem.resources), problem.free)
    assert problem.buckets == plain


@pytest.mark.parametrize(
    ("first", "second", "nodes"),
    [
        ("8", "2", (0, 1)),  # the first shape fits n1 only, the second both: the bucket has both nodes
        ("2", "8", (0, 1)),
        ("8", "8", (1,)),  # one request: one shape
        ("2", "12", (0, 1)),
    ],
)
def test_bucket_nodes_are_every_member_shapes_nodes(first: str, second: str, nodes: tuple[int, ...]) -> None:
    """Shapes that differ in cpu share a bucket; its nodes are the union of theirs, in node order."""
    snap = snapshot(
        nodes=[node("n0", cpu="4"), node("n1", cpu="16")],
        pods=[pod("ns/a", cpu=first, created=0.0), pod("ns/b", cpu=second, created=1.0)],
    )
    problem = build_problem(snap, Policy(time_limit_s=2))
    (bucket,) = problem.buckets
    assert bucket.nodes == nodes
    assert set(bucket.nodes) == {n for s in bucket.shapes for n in problem.shapes[s].nodes}
    assert problem.buckets == initial_buckets(problem.shapes, list(problem.resources), problem.free)


def _reference_gang_pods(g: PodGroup, pods: Sequence[Pod]) -> list[Pod]:
    """The general choice: per task its minTaskMember oldest alive pods, then the oldest others up
    to minMember."""
    alive = sorted((p for p in pods if not p.finished), key=lambda p: (p.created, p.key))
    chosen: list[Pod] = []
    for task, minimum in sorted(g.min_task_member.items()):
        chosen.extend([p for p in alive if p.task == task][:minimum])
    taken = {p.key for p in chosen}
    rest = [p for p in alive if p.key not in taken]
    chosen.extend(rest[: max(0, g.min_member - len(chosen))])
    return chosen


@given(
    count=st.integers(0, 3),
    min_member=st.integers(0, 3),
    min_a=st.integers(0, 2),
    min_b=st.integers(0, 2),
    data=st.data(),
)
@settings(max_examples=200, deadline=None)
def test_gang_pods_as_the_general_choice(
    count: int, min_member: int, min_a: int, min_b: int, data: st.DataObject
) -> None:
    tasks = {name: minimum for name, minimum in (("a", min_a), ("b", min_b)) if minimum}
    g = group("ns/g", min_member=min_member, min_task_member=tasks or None)
    pods = [
        pod(
            f"ns/p{i}",
            group="ns/g",
            task=data.draw(st.sampled_from(["a", "b", "c"])),
            created=float(data.draw(st.integers(0, 2))),
            phase=data.draw(st.sampled_from([None, "Running", "Succeeded", "Failed"])),
            node="n0" if data.draw(st.booleans()) else None,
        )
        for i in range(count)
    ]
    got = gang_pods(g, pods)
    want = _reference_gang_pods(g, pods)
    assert [p.key for p in got] == [p.key for p in want]


def test_gang_pods_of_one_pod_table() -> None:
    alive = pod("ns/p", group="ns/g", task="a")
    done = pod("ns/q", group="ns/g", task="a", phase="Succeeded", node="n0")
    assert gang_pods(group("ns/g", min_member=1), [alive]) == [alive]
    assert gang_pods(group("ns/g", min_member=0), [alive]) == []
    assert gang_pods(group("ns/g", min_member=0, min_task_member={"a": 1}), [alive]) == [alive]
    assert gang_pods(group("ns/g", min_member=0, min_task_member={"b": 1}), [alive]) == []
    assert gang_pods(group("ns/g", min_member=1), [done]) == []


# (queue of each pending gang's group, (queue of each bound pod's group or None for none), several?)
SEVERAL_QUEUES = [
    (("a",), (), False),
    (("a", "a"), ("a",), False),
    (("a", "b"), (), True),  # the gangs alone: no pod read
    (("a",), ("a", "b"), True),
    (("a",), (None,), True),  # a bound pod without a group counts in the default queue
    (("default",), (None, None), False),
    ((), ("a", "b"), True),
]


@pytest.mark.parametrize(("pending", "bound", "several"), SEVERAL_QUEUES)
def test_several_queues_is_the_union_of_queues(
    pending: tuple[str, ...], bound: tuple[str | None, ...], several: bool
) -> None:
    """The build's early-stopping test against the plain union of the gangs' and bound pods' queues."""
    groups = [group(f"ns/p{i}", 1, q) for i, q in enumerate(pending)]
    groups += [group(f"ns/b{i}", 1, q) for i, q in enumerate(bound) if q is not None]
    pods = [pod(f"ns/p{i}-0", group=f"ns/p{i}") for i in range(len(pending))]
    pods += [pod(f"ns/b{i}-0", group=f"ns/b{i}" if q is not None else None, node="n0") for i, q in enumerate(bound)]
    names = {q for q in (*pending, *bound) if q is not None}
    snap = snapshot([node("n0", cpu="64", memory="256Gi")], pods, groups, [queue(name) for name in sorted(names)])
    problem = build_problem(snap, Policy())
    union = {gang.queue for gang in problem.gangs} | {
        q for p in snap.pods if p.bound and (q := snap.queue_of(p)) is not None
    }
    assert _several_queues(problem.gangs, snap) == several == (len(union) > 1)
