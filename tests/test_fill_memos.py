"""The greedy's two fills of one problem share what their rooms learn of it alone
(:class:`vcsat.solver.greedy.FillMemos`), and the fill by gain orders its queues by
:class:`vcsat.solver.shares.ratio.Ratio`: each decides exactly as without them (rooms that learn
everything afresh, and keys made of :class:`fractions.Fraction`, the code before both)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy
from vcsat.solver import greedy
from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.shares.ratio import Ratio

POLICY = Policy(time_limit_s=2)


def problem_of(seed: int, busy: float) -> Problem:
    options = GeneratorOptions(
        nodes=24, pending_jobs=40, seed=seed, busy_gpu_fraction=busy, rack_size=4, racks_per_spine=2
    )
    instance = generate_instance(options)
    return build_problem(snapshot_from_objects(instance["items"], source="generated"), POLICY)


def decided(assignment: Assignment | None) -> Any:
    """Everything an assignment holds, in its order (dict order included)."""
    if assignment is None:
        return None
    return (
        sorted(assignment.placed),
        list(assignment.count.items()),
        list(assignment.shape_slots.items()),
        list(assignment.gang_slots.items()),
        list(assignment.domain_counts.items()),
    )


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ((1, 2), (2, 4)),  # equal, not reduced
        ((-1, 3), (-2, 6)),
        ((0, 5), (0, 7)),  # zero over any denominator
        ((1, 3), (1, 2)),
        ((-1, 2), (-1, 3)),  # negated gains: the larger gain is the smaller key
        ((-3, 4), (1, 1_000_000)),
        ((7, 1), (13, 2)),
    ],
)
def test_ratio_compares_as_the_fraction(left: tuple[int, int], right: tuple[int, int]) -> None:
    a, b = Ratio(*left), Ratio(*right)
    fa, fb = Fraction(*left), Fraction(*right)
    assert (a < b, a > b, a == b, a != b) == (fa < fb, fa > fb, fa == fb, fa != fb)


def test_ratio_needs_a_positive_denominator() -> None:
    with pytest.raises(ValueError, match="positive"):
        Ratio(1, 0)


numbers = st.integers(-(10**12), 10**12)
denominators = st.integers(1, 10**9)


@settings(max_examples=300, deadline=None)
@given(a=numbers, b=denominators, c=numbers, d=denominators, fa=st.integers(0, 9), fb=st.integers(0, 9))
def test_fill_keys_order_as_with_fractions(a: int, b: int, c: int, d: int, fa: int, fb: int) -> None:
    # The fill by gain's keys: ((gain as a ratio, fill), queue); the least is served next.
    left, right = ((Ratio(a, b), fa), "q1"), ((Ratio(c, d), fb), "q2")
    old_left, old_right = ((Fraction(a, b), fa), "q1"), ((Fraction(c, d), fb), "q2")
    assert (left < right, right < left) == (old_left < old_right, old_right < old_left)
    assert min([left, right]) is (left if min([old_left, old_right]) is old_left else right)


def test_memos_are_the_problems_own() -> None:
    problem, other = problem_of(1, 0.7), problem_of(2, 0.7)
    memos = greedy.FillMemos.of(problem)
    assert greedy.FillMemos.of(problem) is memos  # the cycle's second fill finds the first's
    assert greedy.FillMemos.of(other) is not memos
    with pytest.raises(ValueError, match="own problem"):
        greedy.Room(problem, memos=greedy.FillMemos(other))
    with pytest.raises(ValueError, match="own problem"):
        greedy.Room(problem, kept=greedy.KeptRankings(problem), memos=greedy.FillMemos(problem))


@pytest.mark.pure_only
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 60), busy=st.sampled_from([0.3, 0.7, 0.95]))
def test_fills_sharing_memos_decide_as_fills_learning_afresh(seed: int, busy: float) -> None:
    problem = problem_of(seed, busy)
    # Shared, as the cycle runs them: the first fill, then the second from the first's memos.
    shared = (decided(greedy.greedy(problem)), decided(greedy.greedy_by_gain(problem)))
    assert greedy.FillMemos.of(problem).class_plans  # the second fill read the first's
    with pytest.MonkeyPatch.context() as patch:
        # Afresh: every room learns everything again, and keys are fractions (the code before).
        patch.setattr(greedy.FillMemos, "of", staticmethod(greedy.FillMemos))
        patch.setattr(greedy, "Ratio", Fraction)
        afresh = (decided(greedy.greedy(problem)), decided(greedy.greedy_by_gain(problem)))
    assert shared == afresh
    # and the second fill's memos, first, leave the first fill as it was
    greedy._last_memos = None
    assert decided(greedy.greedy_by_gain(problem)) == afresh[1]
    assert decided(greedy.greedy(problem)) == afresh[0]
