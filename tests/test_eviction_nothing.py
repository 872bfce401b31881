"""The eviction phase's early exit (:func:`vcsat.solver.preemption.preempt.eviction_runs` at 0) is exact.

When it says "nothing", the full preempt and reclaim phase over the same waiting gangs, room and
queue usage must find nothing either: no gang placed, no pod evicted. Checked on random small
clusters with preemption and reclaim work in them (tests/test_volcano_scenarios.py's strategy),
after an allocate decision (the greedy's) and after none, and on whole cycles: the decision with
the early exit equals the decision with the full phase always run. A table of small cases shows
the test says "a run may start" where one does, so the property is not vacuous.

Its runs and their sizes, which the wall plan prices the phase by, bound the runs the full phase
starts and the preemptor gangs each run's model may hold.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from builders import gangs, group, node, pod, queue, snapshot
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_volcano_scenarios import POLICIES, clusters

from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import greedy
from vcsat.solver.preemption import preempt
from vcsat.solver.preemption.antiaffinity import evictions_may_cure, modelled_gangs
from vcsat.solver.problem import Gang, Problem, build_problem
from vcsat.solver.shares import queue_usage

flow = importlib.import_module("vcsat.solver.solve")
"""The solve module (``vcsat.solver.solve`` the attribute is its function)."""


def _inputs(problem: Problem, assignment: Assignment) -> tuple[list[Gang], list[list[int]], dict[str, dict[str, int]]]:
    """What the eviction phase starts from after ``assignment``: the gangs left waiting that
    evictions may cure, the nodes' room less the assignment, each queue's usage with it."""
    left = [gang for gang in problem.gangs if gang.index not in assignment.placed]
    modelled = modelled_gangs(problem, left)
    waiting = [gang for gang in left if evictions_may_cure(problem, gang, modelled)]
    room = [list(row) for row in problem.free]
    for (s, n), k in assignment.shape_slots.items():
        for r, amount in enumerate(problem.shapes[s].request):
            room[n][r] -= k * amount
    usage = {q: dict(held) for q, held in (problem.queue_usage or queue_usage(problem.snapshot)).items()}
    for c, k in assignment.count.items():
        held = usage.setdefault(problem.gangs[problem.classes[c].gang].queue, {})
        for r, name in enumerate(problem.resources):
            held[name] = held.get(name, 0) + k * problem.shapes[problem.classes[c].shape].request[r]
    return waiting, room, usage


def _full_phase_finds_nothing(problem: Problem, assignment: Assignment) -> tuple[bool, bool]:
    """(the early test's answer, whether the full phase placed and evicted nothing)."""
    waiting, room, usage = _inputs(problem, assignment)
    said = preempt.eviction_runs(problem, waiting, {q: dict(h) for q, h in usage.items()}) == 0
    out = preempt.preempt_and_reclaim(problem, waiting, room, usage, budget=1.0)
    return said, not out.placed and not out.evicted


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), POLICIES, st.booleans())
def test_nothing_means_the_full_phase_finds_nothing(snap: Snapshot, policy: Policy, allocate: bool) -> None:
    problem = build_problem(snap, policy)
    assignment = greedy(problem) if allocate else Assignment()
    said, found_nothing = _full_phase_finds_nothing(problem, assignment)
    event(f"early test says nothing: {said}; the full phase finds nothing: {found_nothing}")
    if said:
        assert found_nothing


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), POLICIES, st.booleans())
def test_the_runs_counted_bound_the_runs_started(snap: Snapshot, policy: Policy, allocate: bool) -> None:
    problem = build_problem(snap, policy)
    assignment = greedy(problem) if allocate else Assignment()
    waiting, room, usage = _inputs(problem, assignment)
    counted = preempt.eviction_runs(problem, waiting, {q: dict(h) for q, h in usage.items()})
    sizes = preempt.eviction_run_sizes(problem, waiting, {q: dict(h) for q, h in usage.items()})
    started: list[tuple[str, str]] = []
    held: dict[tuple[str, str], int] = {}
    run, could_run = preempt._run, preempt._could_run

    def record(*args: Any, **kwargs: Any) -> Any:
        reason, preemptors = args[5], args[1]
        key = (reason, preemptors[0].queue if reason == "preempt" and preemptors else "")
        started.append(key)
        return run(*args, **kwargs)

    def model(*args: Any, **kwargs: Any) -> Any:
        found = could_run(*args, **kwargs)
        held[started[-1]] = len(found)
        return found

    patch = pytest.MonkeyPatch()
    try:
        patch.setattr(preempt, "_run", record)
        patch.setattr(preempt, "_could_run", model)
        preempt.preempt_and_reclaim(problem, waiting, room, usage, budget=1.0)
    finally:
        patch.undo()
    event(f"runs counted: {counted}; started: {len(started)}")
    assert counted == len(sizes)
    assert len(started) <= counted
    for key in started:  # every run started is priced, at no fewer gangs than its model holds
        assert key in sizes
        assert held.get(key, 0) <= sizes[key] <= preempt.MAX_PREEMPTORS


def _decision_json(decision: Decision) -> str:
    data = json.loads(decision.model_dump_json())
    data["solver"].pop("seconds", None)
    return json.dumps(data, sort_keys=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), POLICIES)
def test_the_early_exit_keeps_the_decision(snap: Snapshot, policy: Policy) -> None:
    with_exit = flow.solve(snap, policy, wall=False)
    patch = pytest.MonkeyPatch()
    try:
        patch.setattr(
            flow, "eviction_run_sizes", lambda *args: {("preempt", "a"): 1, ("preempt", "b"): 1, ("reclaim", ""): 1}
        )
        without = flow.solve(snap, policy, wall=False)
    finally:
        patch.undo()
    assert _decision_json(with_exit) == _decision_json(without)


# --- a table: where a run may start, the test says so --------------------------------------------

NODE = node("n1", cpu="4", memory="64Gi")
POLICY = Policy(time_limit_s=2, enqueue=False)


def _running(name: str, priority: int, queue_name: str = "qa", **kwargs: Any) -> tuple[list[Any], list[Any]]:
    return (
        [pod(f"ns/{name}-0", cpu=1, group=f"ns/{name}", node="n1", priority=priority, **kwargs)],
        [group(f"ns/{name}", 1, queue_name, priority=priority, phase="Running")],
    )


@pytest.mark.parametrize(
    ("case", "running_priority", "waiting_priority", "running_queue", "kwargs", "expected"),
    [
        ("lower priority in the queue: preempt may run", 1, 10, "qa", {}, False),
        ("equal priority: nothing", 10, 10, "qa", {}, True),
        ("higher priority: nothing", 20, 10, "qa", {}, True),
        ("protected lower priority: nothing", 1, 10, "qa", {"preemptable": False}, True),
        ("lower priority in a queue within its share: nothing", 1, 10, "qb", {}, True),
    ],
)
def test_the_early_test_on_small_cases(
    case: str, running_priority: int, waiting_priority: int, running_queue: str, kwargs: dict[str, Any], expected: bool
) -> None:
    """Four 1-core pods fill the node; one 1-core gang waits in qa. With qb holding a quarter of the
    cluster while it deserves half, reclaim has nothing to take from it."""
    pods: list[Any] = []
    groups: list[Any] = []
    for i in range(3):
        p, g = _running(f"fill{i}", 100, "qa")
        pods += p
        groups += g
    p, g = _running("target", running_priority, running_queue, **kwargs)
    pods += p
    groups += g
    waiting, waiting_groups = gangs("want", queue="qa", priority=waiting_priority, phase="Inqueue")
    snap = snapshot(
        nodes=[NODE], pods=pods + waiting, groups=groups + waiting_groups, queues=[queue("qa"), queue("qb")]
    )
    problem = build_problem(snap, POLICY)
    said, found_nothing = _full_phase_finds_nothing(problem, greedy(problem))
    assert said is expected, case
    assert found_nothing is expected, case


@pytest.mark.parametrize(
    ("case", "waiting_gangs", "queues", "expected"),
    [
        ("one gang, one preempt run", {"qa": 1}, 1, {("preempt", "qa"): 1}),
        ("three gangs, one run of three", {"qa": 3}, 1, {("preempt", "qa"): 3}),
        ("more gangs than a model holds", {"qa": 20}, 1, {("preempt", "qa"): preempt.MAX_PREEMPTORS}),
        ("two queues, a run each", {"qa": 2, "qb": 5}, 2, {("preempt", "qa"): 2, ("preempt", "qb"): 5}),
    ],
)
def test_each_run_is_sized_by_its_queues_waiting_gangs(
    case: str, waiting_gangs: dict[str, int], queues: int, expected: dict[tuple[str, str], int]
) -> None:
    """A node full of priority-1 pods of each queue; the waiting gangs (priority 10) of a queue
    make one preempt run, as big as its gangs up to a full model. No queue has a share to reclaim."""
    pods: list[Any] = []
    groups: list[Any] = []
    names = sorted(waiting_gangs)
    for name in names:
        for i in range(4 // queues):
            p, g = _running(f"low-{name}-{i}", 1, name)
            pods += p
            groups += g
    for name, count in waiting_gangs.items():
        for i in range(count):
            w, wg = gangs(f"want-{name}-{i}", queue=name, priority=10, phase="Inqueue")
            pods += w
            groups += wg
    snap = snapshot(nodes=[NODE], pods=pods, groups=groups, queues=[queue(name) for name in names])
    problem = build_problem(snap, POLICY.model_copy(update={"reclaim": False}))
    waiting, _, usage = _inputs(problem, Assignment())
    assert preempt.eviction_run_sizes(problem, waiting, usage) == expected, case
