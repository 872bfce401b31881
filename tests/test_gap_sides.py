"""benchmarks/gap_sides.py: the search with the fair-share levels held keeps them at the decision's
values and can only place more than the decision; the hold is undone after its block; the verdict
names each side of a gap only where the searches show it."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.scripts import load_script
from vcsat.adapters.cli import main
from vcsat.adapters.convert import instance_file

gap_sides = load_script("benchmarks/gap_sides.py", "gap_sides")
exact = importlib.import_module("vcsat.solver.search.exact")


def _instance(tmp_path: Path, seed: int) -> Path:
    path = tmp_path / f"cluster-{seed}.json"
    made = CliRunner().invoke(
        main, ["generate", "--nodes", "8", "--pending-jobs", "14", "--seed", str(seed), "-o", str(path)]
    )
    assert made.exit_code == 0, made.output
    return path


@pytest.mark.parametrize("seed", [3, 5])
def test_the_held_search_keeps_the_decisions_shares_and_places_at_least_as_much(tmp_path: Path, seed: int) -> None:
    meets, plan_stages = exact._meets, exact.plan_stages
    out = gap_sides.sides(_instance(tmp_path, seed), 1.0, 5.0)
    assert exact._meets is meets and exact.plan_stages is plan_stages  # the hold ends with its block
    decision, free, held = out["decision"], out["free"], out["held"]
    assert decision["fair"]  # the generated cluster has fair-share levels to hold
    # Held: each fair-share level at least the decision's (the stage is held at its value), and
    # the decision is one of the held search's solutions, so it places at least as much.
    assert all(held["fair"][tier] >= value for tier, value in decision["fair"].items())
    assert held["objective"] >= decision["objective"]
    # Free: its fair-share levels rank at least as high as the decision's (it starts from the same
    # warm start and keeps only what ranks higher).
    assert list(free["fair"].values()) >= list(decision["fair"].values())
    assert out["verdict"] == gap_sides.verdict(decision, free, held)


@pytest.mark.parametrize("seed", [3, 5, 8])
def test_the_decisions_assignment_measures_as_the_decision(tmp_path: Path, seed: int) -> None:
    # The held search's warm start: the decision's bindings as counts and slots, the same levels.
    snapshot = instance_file.read_snapshot(_instance(tmp_path, seed))
    policy = gap_sides.Policy(time_limit_s=1)
    made = gap_sides.solve_module.solve(snapshot, policy, wall=False)
    problem = gap_sides.build_problem(snapshot, policy)
    decided = gap_sides.decided_assignment(problem, made)
    # Counted the plain way: per class, its pods the decision binds.
    bound = {binding.pod for binding in made.bindings}
    counted = {
        c: k
        for gang in problem.candidates
        for c in gang.classes
        if (k := sum(pod.key in bound for pod in problem.classes[c].pods))
    }
    assert decided.count == counted and bound  # the decision binds some pods
    assert decided.placed == {gang.index for gang in problem.candidates if set(gang.classes) & set(counted)}
    assert sum(decided.shape_slots.values()) == sum(decided.count.values())
    assert sum(decided.gang_slots.values()) == sum(decided.count.values())
    node_names = [node.name for node in problem.nodes]
    placed_on = sorted((binding.node, binding.pod) for binding in made.bindings)
    per_node = {name: sum(1 for node, _ in placed_on if node == name) for name in node_names}
    for n, name in enumerate(node_names):
        assert sum(k for (_shape, node), k in decided.shape_slots.items() if node == n) <= per_node[name]


def test_the_held_search_starts_from_the_decision(tmp_path: Path) -> None:
    starts: list[Any] = []
    solve = gap_sides.solve_module.solve

    def recorded(snapshot: Any, policy: Any, **kwargs: Any) -> Any:
        starts.append(kwargs.get("prepared"))
        return solve(snapshot, policy, **kwargs)

    gap_sides.solve_module.solve = recorded
    try:
        out = gap_sides.sides(_instance(tmp_path, 3), 1.0, 2.0)
    finally:
        gap_sides.solve_module.solve = solve
    decision, free, held = starts  # the decision, the free search (from the greedy), the held one
    assert decision is None and free is None and held is not None
    assert gap_sides.solve_module._lexicographic(held.problem, held.hint)[: len(out["decision"]["fair"])] == tuple(
        out["decision"]["fair"][tier] for tier in sorted(out["decision"]["fair"])
    )


def test_inside_the_hold_every_fair_share_stage_is_met_at_the_given_assignments_value(tmp_path: Path) -> None:
    snapshot = instance_file.read_snapshot(_instance(tmp_path, 3))
    policy = gap_sides.Policy(time_limit_s=5, relative_gap=0)
    given = gap_sides.Assignment()  # nothing placed: far below what any search finds
    answers: list[tuple[Any, Any, Any]] = []
    with gap_sides.fair_held_at(given):
        held = exact._meets

        def recorded(problem: Any, stage: Any, hint: Any, targets: Any, gap: float) -> Any:
            answer = held(problem, stage, hint, targets, gap)
            answers.append((problem, stage, answer))
            return answer

        exact._meets = recorded
        gap_sides.solve_module.solve(snapshot, policy, wall=False)
    fair = [(p, stage, answer) for p, stage, answer in answers if stage.names.startswith("queue fair share")]
    assert fair and len(fair) < len(answers)  # the fair-share stages, and the others asked too
    assert all(answer == (True, stage.value(p, given)) for p, stage, answer in fair)
    # Each level its own stage: held on its own, not as a weighted sum a higher tier may pay for.
    assert all(len(stage.levels) == 1 for _, stage, _ in fair)
    assert len({stage.levels[0].name for _, stage, _ in fair}) > 1  # several tiers, each alone


def _run(
    objective: int, bound: int, fair: list[int], placed: dict[int, int], levels: dict[int, int] | None = None
) -> dict[str, Any]:
    return {"objective": objective, "bound": bound, "fair": dict(enumerate(fair)), "placed": placed, "levels": levels}


DECISION = _run(100, 112, [5, 7], {1000: 90, 0: 10}, {1000: 100, 0: 12})
VERDICTS = [
    # (decision, free search, held search, words the verdict has, words it has not)
    (
        _run(100, 100, [5], {1000: 100}, {1000: 100}),
        _run(100, 100, [5], {1000: 100}),
        _run(100, 100, [5], {1000: 100}),
        ["none"],
        ["fair", "placed", "bound"],
    ),
    (
        DECISION,
        _run(100, 100, [5, 8], {1000: 90, 0: 10}),
        _run(103, 103, [5, 7], {1000: 95, 0: 8}),
        ["tiers [1]", "at priority 1000", "allow 5 more", "50% of that level's"],
        ["bound", "unresolved"],
    ),
    (DECISION, DECISION, _run(100, 100, [5, 7], {1000: 90, 0: 10}), ["bound: the LP bound is above"], ["fair"]),
    (DECISION, DECISION, _run(100, 104, [5, 7], {1000: 90, 0: 10}), ["unresolved"], ["bound", "placed"]),
    (DECISION, DECISION, _run(99, 99, [5, 7], {1000: 89, 0: 10}), ["places less at priority 1000"], ["bound"]),
    (DECISION, DECISION, _run(101, 101, [6, 7], {1000: 90, 0: 11}), ["at priority 0", "50% of"], ["fair"]),
]


@pytest.mark.parametrize(("decision", "free", "held", "has", "has_not"), VERDICTS)
def test_the_verdict_names_the_sides_the_searches_show(
    decision: dict[str, Any], free: dict[str, Any], held: dict[str, Any], has: list[str], has_not: list[str]
) -> None:
    said = gap_sides.verdict(decision, free, held)
    assert all(words in said for words in has), said
    assert not any(words in said for words in has_not), said
