"""One-pod gangs whose node query the room already knows finds nothing are not tried
(:func:`vcsat.solver.greedy._known_not_to_fit`): the greedy, its other fill, and the exchange's
top-ups decide as they do when every gang is tried, and the room is left as it was."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_greedy_index import generated

from vcsat.model import Policy
from vcsat.solver import greedy
from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.exchange import without
from vcsat.solver.search.top_up import top_up

POLICY = Policy(time_limit_s=2)
SLOW_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


def _facts(decision: Assignment | None) -> Any:
    if decision is None:
        return None
    return (
        sorted(decision.placed),
        sorted(decision.count.items()),
        sorted(decision.shape_slots.items()),
        sorted(decision.gang_slots.items()),
    )


def _decisions(problem: Problem, seed: int) -> list[Any]:
    """The greedy, the greedy by gain, and two top-ups of the greedy less random gangs."""
    first = greedy.greedy(problem)
    out = [_facts(first), _facts(greedy.greedy_by_gain(problem))]
    rng = random.Random(seed)
    for _ in range(2):
        drop = rng.sample(sorted(first.placed), rng.randint(0, len(first.placed)))
        rest = without(problem, first, drop)
        out.append(None if rest is None else _facts(top_up(problem, rest)))
    return out


def _with_and_without(snap: Any, seed: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any], int]:
    """The decisions with the skip, how many trials it skipped, and the decisions without it; a
    gang of one pod goes through the skip too (its own way, :func:`greedy._fit_one`, asks the same
    look-up first, and tests/test_greedy_one_pod.py compares that way with the general trial)."""
    skipped = [0]
    known = greedy._known_not_to_fit

    def counting(problem: Problem, gang: Any, room: greedy.Room) -> bool:
        out = known(problem, gang, room)
        skipped[0] += out
        return out

    with monkeypatch.context() as patch:
        patch.setattr(greedy, "_one_pod", lambda problem, gang, room: None)
        patch.setattr(greedy, "_known_not_to_fit", counting)
        skipping = _decisions(build_problem(snap, POLICY), seed)
    with monkeypatch.context() as patch:
        patch.setattr(greedy, "_one_pod", lambda problem, gang, room: None)
        patch.setattr(greedy, "_known_not_to_fit", lambda problem, gang, room: False)
        trying = _decisions(build_problem(snap, POLICY), seed)
    return skipping, trying, skipped[0]


@pytest.mark.pure_only
@pytest.mark.parametrize(
    "options",
    [
        {"nodes": 30, "pending_jobs": 120, "seed": 1, "busy_gpu_fraction": 0.8},
        {"nodes": 24, "pending_jobs": 90, "seed": 4, "anti_affinity_share": 0.3, "busy_gpu_fraction": 0.7},
        {"nodes": 24, "pending_jobs": 90, "seed": 5, "spread_job_share": 0.3, "rack_size": 8},
        {"nodes": 24, "pending_jobs": 90, "seed": 3, "multi_node_job_share": 0.3, "rack_size": 4},
    ],
    ids=["busy", "anti-affinity", "spread", "multi-node"],
)
def test_crowded_clusters_decide_alike_and_trials_are_skipped(
    options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    skipping, trying, skipped = _with_and_without(generated(**options), 7, monkeypatch)
    assert skipping == trying
    assert skipping[0] is not None and skipping[0][0], "the case places something"
    assert skipped > 0, "more waits than fits: some one-pod gangs are known not to fit"


@pytest.mark.pure_only
@settings(max_examples=15, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(4, 30),
    jobs=st.integers(10, 120),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.5, 0.9]),
    multi=st.sampled_from([0.05, 0.3]),
    anti=st.sampled_from([0.0, 0.3]),
)
def test_skipping_the_known_misfits_decides_as_trying_them(
    nodes: int, jobs: int, seed: int, busy: float, multi: float, anti: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = generated(
        nodes=nodes,
        pending_jobs=jobs,
        seed=seed,
        busy_gpu_fraction=busy,
        multi_node_job_share=multi,
        anti_affinity_share=anti,
        rack_size=4,
        racks_per_spine=2,
    )
    skipping, trying, _ = _with_and_without(snap, seed, monkeypatch)
    assert skipping == trying
