"""The greedy's streamlined per-gang path decides as the plain pod-by-pod path did.

The per-gang path counts how many pods of a class the queue capabilities still take with one
division per capped resource (not a test before each pod), picks each class's node query once,
orders the equal-shares fill by whole-number keys over a common multiple of the deserved amounts
(not fractions), computes the by-gain fill's rise in whole numbers scaled by the deserved amount
(the reference takes the utility at fractional shares) and charges a gang's pods to its queue per
shape. ``tests/greedy_gang_reference.py`` keeps the path as it was; the cases below pin what the
greedy decides on small clusters where those steps matter, and the property compares both paths on
generated clusters with capped and weighted queues: the greedy, its by-gain fill and a top-up.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import greedy_gang_reference
import pytest
from builders import group, node, pod, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fair_fill import CASES as FAIR_CASES
from test_gap_bound import cluster

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy, Snapshot
from vcsat.solver import greedy
from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.top_up import top_up

POLICY = Policy(time_limit_s=2)


def digest(assignment: Assignment | None) -> tuple[Any, ...] | None:
    if assignment is None:
        return None
    return (
        sorted(assignment.placed),
        sorted(assignment.count.items()),
        sorted(assignment.shape_slots.items()),
        sorted(assignment.gang_slots.items()),
    )


def half(problem: Problem, assignment: Assignment) -> Assignment:
    """The gangs of ``assignment`` with an even index only: what a top-up then fills."""
    keep = {g for g in assignment.placed if g % 2 == 0}
    slots = {key: k for key, k in assignment.gang_slots.items() if key[0] in keep}
    shape_slots: dict[tuple[int, int], int] = {}
    for (_, s, n), k in slots.items():
        shape_slots[(s, n)] = shape_slots.get((s, n), 0) + k
    count = {c: k for c, k in assignment.count.items() if problem.classes[c].gang in keep}
    return Assignment(placed=keep, count=count, shape_slots=shape_slots, gang_slots=slots)


def decisions(snap: Snapshot) -> tuple[Any, ...]:
    """The greedy's decision, its by-gain fill's and a top-up of half the first."""
    problem = build_problem(snap, POLICY)
    first = greedy.greedy(problem)
    return (
        digest(first),
        digest(greedy.greedy_by_gain(problem)),
        digest(top_up(problem, half(problem, first))),
        digest(top_up(problem, half(problem, first), by_gain=True)),
    )


def both_paths(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """:func:`decisions` with the greedy's path; asserts the reference path decides the same."""
    ours = decisions(snap)
    with monkeypatch.context() as patch:
        greedy_gang_reference.use(patch)
        reference = decisions(snap)
    assert ours == reference
    return ours


def pods_per_group(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Per PodGroup (or queue of lone pods), the pods the greedy places; both paths alike."""
    both_paths(snap, monkeypatch)
    problem = build_problem(snap, POLICY)
    placed = greedy.greedy(problem)
    out: Counter[str] = Counter()
    for c, k in placed.count.items():
        out[problem.classes[c].pods[0].group or ""] += k
    return dict(out)


def elastic(key: str, count: int, *, min_member: int, queue_name: str, **requests: Any) -> tuple[list[Any], Any]:
    pods = [pod(f"{key}-{i}", group=key, **requests) for i in range(count)]
    return pods, group(key, min_member=min_member, queue=queue_name)


def _capped_mid_class() -> Snapshot:
    """qa may hold 3 cores; its gang of five one-core pods (minimum 2) gets three."""
    pods, g = elastic("ns/g", 5, min_member=2, queue_name="qa", cpu="1")
    return snapshot(
        nodes=[node("n1", cpu="16", memory="64Gi")],
        pods=pods,
        groups=[g],
        queues=[queue("qa", capability={"cpu": "3"})],
    )


def _capped_across_classes() -> Snapshot:
    """qa may hold 5 GPUs; its gang's 2-GPU task goes first (two pods, 4 GPUs), then one 1-GPU pod."""
    pods = [pod(f"ns/g-a{i}", group="ns/g", task="a", gpus=2) for i in range(2)]
    pods += [pod(f"ns/g-b{i}", group="ns/g", task="b", gpus=1) for i in range(3)]
    return snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=8)],
        pods=pods,
        groups=[group("ns/g", min_member=1, queue="qa")],
        queues=[queue("qa", capability={"nvidia.com/gpu": "5"})],
    )


def _two_caps_two_gangs() -> Snapshot:
    """qa may hold 4 GPUs and 3 cores: the first gang's two pods take the 3 cores and 2 GPUs, the
    second's pods ask no cores and take the 2 GPUs left (the GPU cap stops it, not the cores)."""
    first, g1 = elastic("ns/g1", 2, min_member=1, queue_name="qa", cpu="1.5", gpus=1)
    second, g2 = elastic("ns/g2", 3, min_member=1, queue_name="qa", cpu="0", gpus=1, created=1.0)
    return snapshot(
        nodes=[node("n1", cpu="16", memory="64Gi", gpus=8)],
        pods=first + second,
        groups=[g1, g2],
        queues=[queue("qa", capability={"nvidia.com/gpu": "4", "cpu": "3"})],
    )


def _weights_short_room() -> Snapshot:
    """Weights 1 and 3, four one-core jobs each, four cores: the fill gives 1 and 3."""
    pods: list[Any] = []
    groups: list[Any] = []
    for name in ("qa", "qb"):
        for j in range(4):
            more, g = elastic(f"ns/{name}-{j}", 1, min_member=1, queue_name=name, cpu="1")
            pods += more
            groups.append(g)
    return snapshot(
        nodes=[node("n1", cpu="4", memory="64Gi")],
        pods=pods,
        groups=groups,
        queues=[queue("qa", weight=1), queue("qb", weight=3)],
    )


@pytest.mark.pure_only
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (_capped_mid_class, {"ns/g": 3}),
        (_capped_across_classes, {"ns/g": 3}),
        (_two_caps_two_gangs, {"ns/g1": 2, "ns/g2": 2}),
        (_weights_short_room, {"ns/qa-0": 1, "ns/qb-0": 1, "ns/qb-1": 1, "ns/qb-2": 1}),
    ],
    ids=["capped-mid-class", "capped-across-classes", "two-caps-two-gangs", "weights-short-room"],
)
def test_small_cases(case: Any, expected: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    assert pods_per_group(case(), monkeypatch) == expected


def _generated(seed: int, nodes: int, jobs: int, multi: float, caps: list[tuple[int, int] | None]) -> Snapshot:
    options = GeneratorOptions(
        nodes=nodes,
        pending_jobs=jobs,
        seed=seed,
        multi_node_job_share=multi,
        rack_size=4,
        queues=(("qa", 1), ("qb", 3), ("qc", 2)),
    )
    instance = generate_instance(options)
    queues = [item for item in instance["items"] if item["kind"] == "Queue" and item["metadata"]["name"] != "default"]
    for item, cap in zip(queues, caps, strict=False):
        if cap is not None:
            gpus, cores = cap
            item["spec"]["capability"] = {"nvidia.com/gpu": str(gpus), **({"cpu": str(cores)} if cores else {})}
    return snapshot_from_objects(instance["items"], source="generated")


@pytest.mark.pure_only
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(6, 30),
    jobs=st.integers(10, 70),
    multi=st.sampled_from([0.0, 0.2, 0.5]),
    caps=st.lists(st.one_of(st.none(), st.tuples(st.integers(1, 40), st.integers(0, 60))), min_size=3, max_size=3),
)
def test_generated_clusters_decide_as_the_reference(
    seed: int, nodes: int, jobs: int, multi: float, caps: list[tuple[int, int] | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    both_paths(_generated(seed, nodes, jobs, multi, caps), monkeypatch)


@st.composite
def small_clusters(draw: st.DrawFn) -> Snapshot:
    """A few nodes, two weighted queues with drawn capabilities, and elastic gangs of one or two
    tasks whose pods the capabilities may stop mid-class."""
    nodes = [
        node(f"n{i}", cpu=str(draw(st.integers(2, 16))), memory="64Gi", gpus=draw(st.sampled_from([0, 2, 4, 8])))
        for i in range(draw(st.integers(1, 4)))
    ]
    queues = []
    for name in ("qa", "qb"):
        capability: dict[str, str] = {}
        if draw(st.booleans()):
            capability["cpu"] = str(draw(st.integers(1, 12)))
        if draw(st.booleans()):
            capability["nvidia.com/gpu"] = str(draw(st.integers(1, 10)))
        queues.append(queue(name, weight=draw(st.integers(1, 3)), capability=capability or None))
    pods: list[Any] = []
    groups: list[Any] = []
    for g in range(draw(st.integers(1, 6))):
        key = f"ns/g{g}"
        size = 0
        for task in ("a", "b")[: draw(st.integers(1, 2))]:
            cpu = draw(st.sampled_from(["0.5", "1", "2", "3"]))
            gpus = draw(st.integers(0, 2))
            for i in range(draw(st.integers(1, 4))):
                pods.append(pod(f"{key}-{task}{i}", group=key, task=task, cpu=cpu, gpus=gpus, created=float(g)))
                size += 1
        groups.append(
            group(
                key, min_member=draw(st.integers(1, size)), queue=draw(st.sampled_from(["qa", "qb"])), created=float(g)
            )
        )
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


@pytest.mark.pure_only
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(snap=small_clusters())
def test_small_capped_clusters_decide_as_the_reference(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    both_paths(snap, monkeypatch)


@pytest.mark.pure_only
@pytest.mark.parametrize("name", sorted(FAIR_CASES))
def test_short_room_decides_as_the_reference(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the free room is short of what the waiting queues lack (the fair fill's cases), the
    equal-shares fill's targets decide its order; each path computes them its own way."""
    both_paths(cluster(*FAIR_CASES[name]), monkeypatch)
