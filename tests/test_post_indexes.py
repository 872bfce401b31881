"""The array paths after the greedy answer as the scans they replaced: the eviction models'
candidate nodes (:func:`vcsat.solver.preemption.preempt._likeliest` against a scan of every eligible node,
the first ``limit`` of them when asked)
and the LP bound's nesting of node sets (:func:`vcsat.solver.search.bound.nested` against a test per
pair of sets)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.solver.preemption.preempt import _likeliest
from vcsat.solver.search.bound import nested


def fits_scan(request: tuple[int, ...], room: list[int]) -> int:
    """How many pods of ``request`` fit in ``room``: the per-node test the eviction models used."""
    fit: int | None = None
    for amount, left in zip(request, room, strict=True):
        if amount <= 0:
            continue
        if left < amount:
            return 0
        fit = left // amount if fit is None else min(fit, left // amount)
    return fit or 0


def likeliest_scan(
    request: tuple[int, ...], nodes: list[int], best: list[list[int]], now: list[list[int]], victims: list[int]
) -> list[tuple[int, int]]:
    fitting = []
    for node in nodes:
        fit = fits_scan(request, best[node])
        if fit:
            fitting.append((0 if fits_scan(request, now[node]) else 1, victims[node], node, fit))
    fitting.sort()
    return [(node, fit) for _, _, node, fit in fitting]


Case = tuple[tuple[int, ...], list[int], list[list[int]], list[list[int]], list[int]]


@st.composite
def rooms(draw: st.DrawFn) -> Case:
    count = draw(st.integers(1, 12))
    width = draw(st.integers(1, 4))
    request = tuple(draw(st.lists(st.integers(0, 4), min_size=width, max_size=width)))
    now = [draw(st.lists(st.integers(-3, 9), min_size=width, max_size=width)) for _ in range(count)]
    freed = [draw(st.lists(st.integers(0, 6), min_size=width, max_size=width)) for _ in range(count)]
    best = [[a + b for a, b in zip(row, more, strict=True)] for row, more in zip(now, freed, strict=True)]
    victims = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
    nodes = sorted(draw(st.sets(st.integers(0, count - 1))))
    return request, nodes, best, now, victims


def _likeliest_of(case: Case, limit: int | None = None) -> list[tuple[int, int]]:
    """:func:`_likeliest` on a drawn case, its lists as the arrays the eviction phase passes."""
    request, nodes, best, now, victims = case
    width = len(request)
    arrays = (
        np.array(nodes, dtype=np.int64),
        np.array(best, dtype=np.int64).reshape(len(best), width),
        np.array(now, dtype=np.int64).reshape(len(now), width),
        np.array(victims, dtype=np.int64),
    )
    return _likeliest(request, *arrays, limit)


@settings(max_examples=300, deadline=None)
@given(rooms())
def test_candidate_nodes_are_those_of_the_scan(case: Case) -> None:
    request, nodes, best, now, victims = case
    assert _likeliest_of(case) == likeliest_scan(request, nodes, best, now, victims)


@settings(max_examples=200, deadline=None)
@given(rooms(), st.integers(0, 14))
def test_a_limit_keeps_the_first_candidates_of_the_scan(case: Case, limit: int) -> None:
    request, nodes, best, now, victims = case
    got = _likeliest_of(case, limit)
    assert got == likeliest_scan(request, nodes, best, now, victims)[:limit]
    assert all(type(node) is int and type(fit) is int for node, fit in got)


def test_a_node_that_fits_now_comes_before_one_that_needs_evictions() -> None:
    best = np.array([[4], [8], [4]], dtype=np.int64)
    now = np.array([[0], [0], [4]], dtype=np.int64)
    got = _likeliest((2,), np.array([0, 1, 2], dtype=np.int64), best, now, np.array([2, 1, 0], dtype=np.int64))
    assert got == [(2, 2), (1, 4), (0, 2)]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 40).flatmap(
        lambda n: st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=1, max_size=8)
    )
)
def test_nesting_of_node_sets_is_that_of_a_test_per_pair(rows: list[list[bool]]) -> None:
    sets = [np.array(row, dtype=np.bool_) for row in rows]
    got = nested(sets, len(rows[0]))
    for a, outer in enumerate(sets):
        for b, inner in enumerate(sets):
            assert bool(got[a, b]) == (not np.any(inner & ~outer))
