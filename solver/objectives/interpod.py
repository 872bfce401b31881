"""Preferred inter-pod affinity and anti-affinity: kube-scheduler's InterPodAffinity score.

For each isolated class, the bound pods give every eligible node a raw score
(:meth:`vcsat.solver.rules.interpod.InterPod.preference`: the class's preferred terms with their weights,
and bound pods' required affinity at weight 1 and preferred terms toward it). kube-scheduler
normalises a pod's scores over the nodes to 0..100 (the best node 100, the worst 0); so does this
level, and it maximises the sum over placed pods. Ranked below placed work, fairness and locality
and above packing: a preference only chooses between placements of equal worth.

Preferences between pods placed in the same cycle are not scored (only bound pods score).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Bucket, Problem
from vcsat.solver.rules.interpod import INTERPOD, InterPod
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

MAX_SCORE = 100


def preference_scores(problem: Problem) -> dict[int, dict[int, int]]:
    """Per isolated class, per eligible node: the normalised score (0..100), nonzero ones only."""
    if problem.interpod_scores is not None:
        return problem.interpod_scores
    state = problem.isolation.state(INTERPOD)
    out: dict[int, dict[int, int]] = {}
    if isinstance(state, InterPod):
        for c in sorted(problem.isolated):
            shape = problem.shapes[problem.classes[c].shape]
            raw = state.preference(problem.classes[c].pods[0], shape.nodes)
            if not raw:
                continue
            values = [raw.get(node, 0) for node in shape.nodes]
            low, high = min(values), max(values)
            if high == low:
                continue
            scaled = {node: MAX_SCORE * (raw.get(node, 0) - low) // (high - low) for node in shape.nodes}
            out[c] = {node: score for node, score in scaled.items() if score}
    problem.interpod_scores = out
    return out


def preference_levels(problem: Problem, v: Variables, buckets: list[Bucket]) -> list[Level]:
    scores = preference_scores(problem)
    if not scores:
        return []
    bucket_of = {s: b.index for b in buckets for s in b.shapes}
    terms: list[tuple[cp_model.IntVar, int]] = []
    for c, by_node in sorted(scores.items()):
        b = bucket_of.get(problem.classes[c].shape)
        for node, score in sorted(by_node.items()):
            var = v.slot.get((b, node)) if b is not None else None
            if var is not None:
                terms.append((var, score))
    if not terms:
        return []
    return [make_level("inter-pod preferences", terms, upper_of=v.upper, measure=preference_value)]


def preference_value(problem: Problem, assignment: Assignment) -> int:
    scores = preference_scores(problem)
    total = 0
    for (s, node), k in assignment.shape_slots.items():
        c = problem.shapes[s].isolated
        if c is not None and c in scores:
            total += k * scores[c].get(node, 0)
    return total
