"""The allocate cycle's warm start, LP bound, eviction filter and budgets, each on a small case.

- the greedy follows the objective's queue fair-share tiers: a queue's top-priority work comes
  before another queue's lower-priority work (the contended benchmark's 57% gap came from not
  doing so);
- the LP bound ties a gang's classes together: it cannot take a gang's cheap pods without the rest
  of its minimum;
- the preempt phase considers only waiting gangs that could fit were every victim gone;
- the search's budgets are deterministic seconds, so a tight time limit still gives the same
  decision twice.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import gangs, group, node, pod, queue, snapshot

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy, Snapshot
from vcsat.model.cluster import DEFAULT_QUEUE
from vcsat.solver import check, solve
from vcsat.solver.greedy import greedy
from vcsat.solver.preemption.preempt import EligibleNodes, _could_run
from vcsat.solver.problem import build_problem
from vcsat.solver.search.bound import lp_level_bounds

ALLOCATE_ONLY = Policy(enqueue=False, preempt=False, reclaim=False, time_limit_s=2)


def contended() -> Snapshot:
    """16 cores; queue c holds 10 (above its third), b holds 4 of its 5.33, a nothing; 2 cores free.
    a waits with one high-priority job and six low-priority ones, b with three high-priority ones."""
    c_run, c_groups = gangs("c-run", 10, queue="c", node="n1", created=-10)
    c_run = [p.model_copy(update={"node_name": "n1" if i < 8 else "n2"}) for i, p in enumerate(c_run)]
    b_run, b_groups = gangs("b-run", 4, queue="b", node="n2", priority=100, created=-5)
    a_high, a_high_groups = gangs("a-high", 1, queue="a", priority=100, created=0)
    a_low, a_low_groups = gangs("a-low", 6, queue="a", priority=0, created=1)
    b_high, b_high_groups = gangs("b-high", 3, queue="b", priority=100, created=2)
    return snapshot(
        nodes=[node("n1", cpu=8, memory="64Gi"), node("n2", cpu=8, memory="64Gi")],
        pods=[*c_run, *b_run, *a_high, *a_low, *b_high],
        groups=[*c_groups, *b_groups, *a_high_groups, *a_low_groups, *b_high_groups],
        queues=[queue("a"), queue("b"), queue("c")],
    )


def test_greedy_fills_every_queues_top_priority_before_lower_tiers() -> None:
    # Water-filling a over all its work would give both free cores to a (it is the least served);
    # the first fair-share level counts only each queue's top priority, so b's job goes first.
    problem = build_problem(contended(), ALLOCATE_ONLY)
    placed = sorted(problem.gangs[g].key for g in greedy(problem).placed)
    assert placed == ["ns/a-high-0", "ns/b-high-0"]


def test_solve_agrees_with_the_greedy_on_the_contended_case() -> None:
    snap = contended()
    decision = solve(snap, ALLOCATE_ONLY)
    assert check(snap, decision, ALLOCATE_ONLY) == []
    assert sorted(b.pod for b in decision.bindings) == ["ns/a-high-0-0", "ns/b-high-0-0"]
    assert decision.solver.status == "OPTIMAL"
    assert decision.solver.bound == decision.solver.objective


@pytest.mark.parametrize("free_gpus", [1, 2])
def test_lp_bound_keeps_a_gangs_classes_together(free_gpus: int) -> None:
    # A launcher (cpu only) and three 1-GPU workers, minMember 4, on a node with the GPUs for them
    # but a queue capability of too few: the gang cannot run. Counting its classes apart, the LP
    # would place the launcher whole and fill the capability with workers; tied to one fraction z
    # of the gang, both are at most z's share. (With too few GPUs on the nodes instead, the LP
    # leaves the gang out: tests/test_bound_gang_room.py.)
    launcher = pod("ns/job-launcher", cpu="1", group="ns/job", task="launcher")
    workers = [pod(f"ns/job-worker-{i}", cpu="1", gpus=1, group="ns/job", task="worker") for i in range(3)]
    snap = snapshot(
        nodes=[node("n1", cpu=32, memory="128Gi", gpus=3)],
        pods=[launcher, *workers],
        groups=[group("ns/job", 4)],
        queues=[queue(DEFAULT_QUEUE, capability={"nvidia.com/gpu": free_gpus})],
    )
    problem = build_problem(snap, ALLOCATE_ONLY)
    value = {problem.classes[c].task: problem.classes[c].value for c in problem.gangs[0].classes}
    fraction = free_gpus / 3
    expected = math.floor(fraction * value["launcher"] + free_gpus * value["worker"] + 1e-6)
    assert lp_level_bounds(problem, {}) == {0: expected}
    assert expected < value["launcher"] + free_gpus * value["worker"]


def test_preempt_considers_only_gangs_that_could_fit_with_every_victim_gone() -> None:
    # One 2-GPU node whose GPUs a low-priority pod holds: a 1-GPU job could run after evicting
    # it, a 4-GPU job never can; the filter keeps the first only.
    victim = pod("ns/low", cpu="1", gpus=2, node="n1", priority=-10)
    small, small_groups = gangs("small", 1, priority=100, gpus=1)
    big, big_groups = gangs("big", 1, priority=100, gpus=4, created=1)
    snap = snapshot(
        nodes=[node("n1", cpu=8, memory="32Gi", gpus=2)],
        pods=[victim, *small, *big],
        groups=[*small_groups, *big_groups],
    )
    problem = build_problem(snap, Policy())
    room = [list(row) for row in problem.free]
    freeable = {
        0: [amount + victim.requests.get(name, 0) for name, amount in zip(problem.resources, room[0], strict=True)]
    }
    kept = _could_run(problem, sorted(problem.gangs, key=lambda g: g.created), room, freeable)
    assert [g.key for g in kept] == ["ns/small-0"]
    # The room as the runs hold it (an array) and the phase's eligible nodes read once: the same.
    eligible = EligibleNodes(problem)
    as_array = np.array(room, dtype=np.int64)
    again = _could_run(problem, sorted(problem.gangs, key=lambda g: g.created), as_array, freeable, eligible)
    assert [g.key for g in again] == ["ns/small-0"]
    for shape in problem.shapes:
        assert eligible(shape.eligibility).tolist() == problem.eligible_nodes(shape.eligibility)
        assert eligible(shape.eligibility) is eligible(shape.eligibility)


def test_a_tight_time_limit_still_decides_the_same_twice() -> None:
    # Budgets are CP-SAT's deterministic seconds, never what the wall clock says is left.
    options = GeneratorOptions(nodes=48, pending_jobs=96, busy_gpu_fraction=0.8, high_priority_share=0.2, seed=3)
    snap = snapshot_from_objects(generate_instance(options)["items"])
    policy = Policy(time_limit_s=0.3, relative_gap=0.01)
    first, second = solve(snap, policy), solve(snap, policy)
    assert check(snap, first, policy) == []
    assert first.model_copy(update={"solver": None}) == second.model_copy(update={"solver": None})
    assert first.solver.model_copy(update={"seconds": 0}) == second.solver.model_copy(update={"seconds": 0})


@pytest.mark.parametrize(("phase", "placed"), [("Succeeded", ["ns/job-1"]), ("Failed", [])])
def test_a_succeeded_member_counts_toward_its_gang(phase: str, placed: list[str]) -> None:
    # A 2-pod gang whose first pod finished and whose second was made again (its finished pod was
    # deleted before the job completed): Volcano counts a Succeeded member as ready, so the one
    # pending pod completes the gang and is placed; a Failed member does not count.
    done = pod("ns/job-0", cpu="1", group="ns/job", node="n1", phase=phase)
    again = pod("ns/job-1", cpu="1", group="ns/job")
    snap = snapshot(
        nodes=[node("n1", cpu=8, memory="32Gi")],
        pods=[done, again],
        groups=[group("ns/job", 2, phase="Completed")],
    )
    decision = solve(snap, Policy())
    assert check(snap, decision, Policy()) == []
    assert sorted(b.pod for b in decision.bindings) == placed
