"""The explanations' reasons read off totals, asked once per queue and gang signature (session 29).

:func:`vcsat.solver.explain.outcomes` keeps :func:`_short_of_room` per (queue, gang signature): it
reads the queue's capabilities left after the decision and the gang's minimum alone, and at 10,000
nodes 12,801 waiting gangs asked it one by one. Every gang gets the outcome it gets when each gang
asks on its own (the reference: the memo keyed by the gang), on capped clusters (one queue's
capability leaves little, others have none) and on uncapped ones, and the memo is read more often
than it is filled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shape_files import shape_problem
from test_known_not_to_fit import SLOW_OK

from vcsat.solver import explain
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import Problem


def _compare(problem: Problem, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    """Every outcome with the memo and with each gang asking on its own (the reference); (waiting
    gangs, times the memo asked, gangs the totals alone found short of room)."""
    asked: list[int] = []
    short = explain._short_of_room

    def counting(*args: Any) -> Any:
        asked.append(args[1].index)
        return short(*args)

    assignment = greedy(problem)
    with monkeypatch.context() as patch:
        patch.setattr(explain, "_short_of_room", counting)
        got = explain.outcomes(problem, assignment, full=True)
        shared = len(asked)
        patch.setattr(explain, "_short_key", lambda gang, signature: gang.index)
        alone = explain.outcomes(problem, assignment, full=True)
    assert got == alone
    waiting = sum(1 for outcome in got if outcome.phase != "Running")
    found = sum(1 for outcome in got if outcome.reason in ("QueueOverused", "InsufficientResources"))
    return waiting, shared, found


@pytest.mark.pure_only
@pytest.mark.parametrize(
    ("shape", "nodes", "seed"),
    [
        ("capped", 60, 1),
        ("capped", 30, 3),
        ("capped", 16, 1),
        ("capped", 16, 49),
        ("contended", 60, 2),
        ("over-served", 50, 3),
    ],
)
def test_reasons_read_off_totals_as_asked_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, nodes: int, seed: int
) -> None:
    waiting, asked, short = _compare(shape_problem(tmp_path, shape, nodes, seed), monkeypatch)
    assert 0 < asked < waiting, "waiting gangs share their queue and signature"
    assert short > 0 or shape != "capped", "the capped cases have gangs short of their queue's room"


@pytest.mark.pure_only
@settings(max_examples=10, deadline=None, suppress_health_check=SLOW_OK)
@given(
    shape=st.sampled_from(["capped", "contended", "over-served", "big-gangs"]),
    nodes=st.integers(16, 60),
    seed=st.integers(1, 500),
)
def test_memo_answers_as_the_reference(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, shape: str, nodes: int, seed: int
) -> None:
    _compare(shape_problem(tmp_path_factory.mktemp("short"), shape, nodes, seed), monkeypatch)
