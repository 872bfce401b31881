"""A gang of one pod is placed by its one node query, as its general trial placed it.

The greedy places a gang that is one pod (no topology, no rule between pods, whole alone) without
the trial the other gangs go through (:func:`vcsat.solver.greedy._fit_one`). The cases pin which
gangs take that way and what it decides on small clusters where the capabilities, a full query and
a task minimum matter; the property compares it with the general trial (the way switched off) on
generated clusters: the greedy, its by-gain fill and the top-ups decide the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import group, node, pod, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_greedy_gang_path import _generated, decisions

from vcsat.model import Policy, Snapshot
from vcsat.solver import greedy
from vcsat.solver.problem import build_problem

POLICY = Policy(time_limit_s=2)


def without_one_pod_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(greedy, "_one_pod", lambda problem, gang, room: None)


def placed_groups(snap: Snapshot) -> dict[str, int]:
    """Per PodGroup, the pods the greedy places."""
    problem = build_problem(snap, POLICY)
    placed = greedy.greedy(problem)
    out: dict[str, int] = {}
    for c, k in placed.count.items():
        name = problem.classes[c].pods[0].group or ""
        out[name] = out.get(name, 0) + k
    return out


def lone(key: str, queue_name: str = "default", created: float = 0.0, **requests: Any) -> tuple[Any, Any]:
    return pod(key, group=key, **requests), group(key, queue=queue_name, created=created)


def _capped() -> Snapshot:
    """qa may hold 3 cores: admission lets in an elastic gang (minimum one of three one-core pods)
    and two one-core pods after it; the gang's three pods take the 3 cores, so the greedy's
    capability stops the lone pods (admission counted the gang's minimum only)."""
    elastic = [pod(f"ns/g-{i}", group="ns/g", cpu="1") for i in range(3)]
    items = [lone(f"ns/p{i}", "qa", float(1 + i), cpu="1") for i in range(2)]
    return snapshot(
        nodes=[node("n1", cpu="16", memory="64Gi")],
        pods=elastic + [p for p, _ in items],
        groups=[group("ns/g", min_member=1, queue="qa"), *(g for _, g in items)],
        queues=[queue("qa", capability={"cpu": "3"})],
    )


def _full_then_smaller() -> Snapshot:
    """Two 4-GPU pods onto one node with 6 free GPUs: the second finds no node (and a third of its
    shape is not asked again); a 2-GPU pod after them fits."""
    items = [lone("ns/a", gpus=4, created=0.0), lone("ns/b", gpus=4, created=1.0)]
    items += [lone("ns/c", gpus=4, created=2.0), lone("ns/d", gpus=2, created=3.0)]
    return snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=6)], pods=[p for p, _ in items], groups=[g for _, g in items]
    )


def _short_of_its_minimum() -> Snapshot:
    """A one-pod gang whose minimum is two members never is whole; a one-pod gang whose task
    minimum is its own pod is."""
    short = pod("ns/short-0", group="ns/short")
    tasked = pod("ns/tasked-0", group="ns/tasked", task="w")
    return snapshot(
        nodes=[node("n1", cpu="16", memory="64Gi")],
        pods=[short, tasked],
        groups=[group("ns/short", min_member=2), group("ns/tasked", min_task_member={"w": 1})],
    )


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (_capped, {"ns/g": 3}),
        (_full_then_smaller, {"ns/a": 1, "ns/d": 1}),
        (_short_of_its_minimum, {"ns/tasked": 1}),
    ],
    ids=["capped", "full-then-smaller", "short-of-its-minimum"],
)
def test_small_cases(case: Any, expected: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    assert placed_groups(case()) == expected
    with monkeypatch.context() as patch:
        without_one_pod_way(patch)
        assert placed_groups(case()) == expected


def test_which_gangs_take_the_one_pod_way() -> None:
    problem = build_problem(_short_of_its_minimum(), POLICY)
    room = greedy.Room(problem)
    taken = {
        problem.classes[gang.classes[0]].pods[0].group: greedy._one_pod(problem, gang, room) is not None
        for gang in problem.gangs
    }
    assert taken == {"ns/short": False, "ns/tasked": True}
    problem = build_problem(_full_then_smaller(), POLICY)
    room = greedy.Room(problem)
    assert all(greedy._one_pod(problem, gang, room) is not None for gang in problem.gangs)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(6, 30),
    jobs=st.integers(10, 70),
    multi=st.sampled_from([0.0, 0.2, 0.5]),
    caps=st.lists(st.one_of(st.none(), st.tuples(st.integers(1, 40), st.integers(0, 60))), min_size=3, max_size=3),
)
def test_generated_clusters_decide_as_the_general_trial(
    seed: int, nodes: int, jobs: int, multi: float, caps: list[tuple[int, int] | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = _generated(seed, nodes, jobs, multi, caps)
    ours = decisions(snap)
    with monkeypatch.context() as patch:
        without_one_pod_way(patch)
        assert decisions(snap) == ours
