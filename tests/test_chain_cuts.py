"""The chain looks' room reads made cheaper, exactly: the same node and victims as before.

Most of a chain look's CPU at 1,000 nodes was three reads of the room (benchmarks/RESULTS.md,
session 36): :func:`~vcsat.solver.search.chain._cheapest` walking every node of a refill pod's
shape to find the few holding a victim, :func:`~vcsat.solver.search.relocation.first_fit` making a
set of the shape's nodes on every call, and the per-resource comparison of a row with a request.
Each is cut without changing what it answers (and ``_cheapest`` once more: its victims per node
read from the pool's side in one pass, and a node passed over unsorted where the pod fits with no
victim gone or its cheapest victim alone costs no less than the best node's); here each is
compared with the code it replaced
(main ``1a3915e``'s: ``first_fit`` and ``eject`` kept below verbatim, ``_cheapest`` from
:mod:`chain_reference`, main ``9e5da94``'s chain module, whose ``_cheapest`` ``1a3915e`` still had):

- a table of small cases per read (a node with room before the trade, one the trade freed, none;
  a victim cheapest on a later node, a node passed over for a costlier victim, a victim already
  taken, none);
- a Hypothesis property per read over small rooms drawn at random (nodes, shapes, gangs' pods,
  pools, victims already taken, costs): the same answer, the same victims added and the same room
  left as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import chain_reference
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.solver.search.chain import _cheapest, _memo
from vcsat.solver.search.relocation import Room, eject, first_fit, row_without


@dataclass(frozen=True)
class _Shape:
    index: int
    nodes: list[int]
    request: tuple[int, ...]


@dataclass(frozen=True)
class _Problem:
    shapes: list[_Shape]


def _first_fit_before(problem: _Problem, shape_index: int, room: Room, with_room: dict[int, list[int]]) -> int | None:
    """main ``1a3915e``'s ``first_fit``, verbatim."""
    shape = problem.shapes[shape_index]
    nodes = with_room.get(shape_index)
    if nodes is None:
        base = room.base
        nodes = [node for node in shape.nodes if all(base[node][r] >= a for r, a in enumerate(shape.request))]
        with_room[shape_index] = nodes
    eligible = set(shape.nodes)
    extra = sorted(node for node in room.changed if node in eligible)
    for node in [*nodes, *extra]:
        row = room.row(node)
        if all(row[r] >= amount for r, amount in enumerate(shape.request)):
            return node
    return None


def _eject_before(
    problem: _Problem,
    shape_index: int,
    room: Room,
    on_node: dict[int, list[tuple[int, int, int]]],
    of_gang: dict[int, list[tuple[int, int, int]]],
    spare: set[int],
    victims: set[int],
) -> int | None:
    """main ``1a3915e``'s ``eject``, verbatim."""
    shape = problem.shapes[shape_index]
    for node in shape.nodes:
        there = sorted({g for g, _s, _k in on_node.get(node, ()) if g in spare and g not in victims})
        if not there:
            continue
        row = row_without(problem, room, node, there, of_gang)  # type: ignore[arg-type]
        if all(row[r] >= amount for r, amount in enumerate(shape.request)):
            for g in there:
                victims.add(g)
                for s, n, k in of_gang[g]:
                    room.add(n, problem.shapes[s].request, k)
            return node
    return None


@dataclass(frozen=True)
class _Case:
    """A room of nodes (per node: its room left per resource), the shapes, the gangs' pods as
    (gang, shape, node, count), the trade's changes to the room so far as (node, shape, pods
    taken), and for ``_cheapest`` the pool, the victims already taken and each gang's cost."""

    base: list[list[int]]
    shapes: list[_Shape]
    pods: list[tuple[int, int, int, int]] = ()  # type: ignore[assignment]
    taken: list[tuple[int, int, int]] = ()  # type: ignore[assignment]
    pool: frozenset[int] = frozenset()
    victims: frozenset[int] = frozenset()
    costs: tuple[tuple[int, int], ...] = ()

    def room(self) -> Room:
        room = Room([list(row) for row in self.base])
        for node, s, k in self.taken:
            room.add(node, tuple(-a for a in self.shapes[s].request), k)
        return room

    def layout(self) -> tuple[dict[int, list[tuple[int, int, int]]], dict[int, list[tuple[int, int, int]]]]:
        on_node: dict[int, list[tuple[int, int, int]]] = {}
        of_gang: dict[int, list[tuple[int, int, int]]] = {}
        for g, s, node, k in sorted(self.pods):
            on_node.setdefault(node, []).append((g, s, k))
            of_gang.setdefault(g, []).append((s, node, k))
        return on_node, of_gang


def _one(cpu: int, gpu: int, nodes: list[int], index: int = 0) -> _Shape:
    return _Shape(index, nodes, (cpu, gpu))


FIRST_FIT = {
    # node 1 had room before the trade and the trade left it alone: the first such.
    "room before, untouched": (_Case([[2, 0], [4, 8], [4, 8]], [_one(1, 4, [0, 1, 2])]), 1),
    # node 1 had room before, but the trade took it; node 2 still has it.
    "room before, taken": (_Case([[4, 8], [4, 8], [4, 8]], [_one(1, 4, [1, 2])], taken=[(1, 0, 2)]), 2),
    # no node had room before; the trade freed node 2 (a negative take gives room back).
    "freed by the trade": (_Case([[4, 0], [4, 0], [4, 0]], [_one(1, 4, [0, 1, 2])], taken=[(2, 0, -1)]), 2),
    # the trade freed node 0, which the shape may not use.
    "freed, not eligible": (_Case([[4, 0], [4, 0], [4, 0]], [_one(1, 4, [1, 2])], taken=[(0, 0, -1)]), None),
    "none": (_Case([[4, 2], [4, 2]], [_one(1, 4, [0, 1])]), None),
}


# pure_only: hands the compiled first_fit, _cheapest and eject a stand-in _Problem (its shapes only),
# which compiled code's type check refuses; the compiled run still has test_fits_as_before and the memo's.
@pytest.mark.pure_only
@pytest.mark.parametrize("name", list(FIRST_FIT))
def test_first_fit_table(name: str) -> None:
    case, expected = FIRST_FIT[name]
    problem = _Problem(case.shapes)
    got = first_fit(problem, 0, case.room(), {})  # type: ignore[arg-type]
    assert got == expected
    assert got == _first_fit_before(problem, 0, case.room(), {})


_SMALL = _one(1, 1, [0, 1, 2], index=1)
CHEAPEST = {
    # one 4-GPU pod; node 0 holds gang 7 (cost 3), node 1 gang 8 (cost 1): node 1, gang 8 out.
    "cheapest victim": (
        _Case(
            [[4, 0], [4, 0], [4, 0]],
            [_one(1, 4, [0, 1, 2]), _SMALL],
            pods=[(7, 1, 0, 4), (8, 1, 1, 4)],
            pool=frozenset({7, 8}),
            costs=((7, 3), (8, 1)),
        ),
        1,
        {8},
    ),
    # node 0's victims cost 0+2 (two needed); node 2's one victim costs 1: node 2.
    "fewer, cheaper": (
        _Case(
            [[4, 0], [4, 0], [4, 0]],
            [_one(1, 4, [0, 1, 2]), _SMALL],
            pods=[(5, 1, 0, 2), (6, 1, 0, 2), (9, 1, 2, 4)],
            pool=frozenset({5, 6, 9}),
            costs=((5, 0), (6, 2), (9, 1)),
        ),
        2,
        {9},
    ),
    # gang 8 on node 1 is taken already (a victim before): node 0's, costlier, goes.
    "taken before": (
        _Case(
            [[4, 0], [4, 4], [4, 0]],
            [_one(1, 4, [0, 1, 2]), _SMALL],
            pods=[(7, 1, 0, 4), (8, 1, 1, 4)],
            pool=frozenset({7, 8}),
            victims=frozenset({8}),
            costs=((7, 3), (8, 1)),
        ),
        0,
        {7, 8},
    ),
    # node 0 takes the pod with its victim staying: no victim is taken there; node 1's goes.
    "room with a victim there": (
        _Case(
            [[4, 8], [4, 0], [4, 0]],
            [_one(1, 4, [0, 1, 2]), _SMALL],
            pods=[(7, 1, 0, 4), (8, 1, 1, 4)],
            pool=frozenset({7, 8}),
            costs=((7, 0), (8, 1)),
        ),
        1,
        {8},
    ),
    # nodes 1 and 2's cheapest victims cost no less than node 0's: node 0 stays the best (the first).
    "no cheaper later": (
        _Case(
            [[4, 0], [4, 0], [4, 0]],
            [_one(1, 4, [0, 1, 2]), _SMALL],
            pods=[(7, 1, 0, 4), (8, 1, 1, 4), (9, 1, 2, 2), (6, 1, 2, 2)],
            pool=frozenset({6, 7, 8, 9}),
            costs=((7, 2), (8, 2), (9, 3), (6, 4)),
        ),
        0,
        {7},
    ),
    # gang 4 holds node 1 but is not in the pool; gang 7's node is not the shape's.
    "no victim": (
        _Case(
            [[4, 0], [4, 0], [4, 0]],
            [_one(1, 4, [1, 2]), _SMALL],
            pods=[(7, 1, 0, 4), (4, 1, 1, 4)],
            pool=frozenset({7}),
            costs=((7, 0), (4, 0)),
        ),
        None,
        set(),
    ),
}


def _run_cheapest(fn: Callable[..., int | None], case: _Case) -> tuple[int | None, set[int], dict[int, list[int]]]:
    problem = _Problem(case.shapes)
    on_node, of_gang = case.layout()
    room = case.room()
    victims = set(case.victims)
    costs = dict(case.costs)
    got = fn(problem, 0, room, on_node, of_gang, set(case.pool), victims, lambda g: costs.get(g, 0))
    return got, victims, room.changed


def _run_eject(fn: Callable[..., int | None], case: _Case) -> tuple[int | None, set[int], dict[int, list[int]]]:
    problem = _Problem(case.shapes)
    on_node, of_gang = case.layout()
    room = case.room()
    victims = set(case.victims)
    got = fn(problem, 0, room, on_node, of_gang, set(case.pool), victims)
    return got, victims, room.changed


@pytest.mark.pure_only
@pytest.mark.parametrize("name", list(CHEAPEST))
def test_cheapest_table(name: str) -> None:
    case, node, victims = CHEAPEST[name]
    got = _run_cheapest(_cheapest, case)
    assert got[0] == node
    assert got[1] == victims
    assert got == _run_cheapest(chain_reference._cheapest, case)


# eject takes every spare gang on the first node where that makes room: the cases above, by node order.
EJECT = {
    "cheapest victim": 0,
    "fewer, cheaper": 0,
    "taken before": 0,
    "no victim": None,
}


@pytest.mark.pure_only
@pytest.mark.parametrize("name", list(EJECT))
def test_eject_table(name: str) -> None:
    case = CHEAPEST[name][0]
    got = _run_eject(eject, case)
    assert got[0] == EJECT[name]
    assert got == _run_eject(_eject_before, case)


@st.composite
def _cases(draw: st.DrawFn) -> _Case:
    nodes = draw(st.integers(1, 7))
    base = [[draw(st.integers(-1, 6)), draw(st.integers(-1, 8))] for _ in range(nodes)]
    shapes = [
        _Shape(
            i,
            sorted(draw(st.sets(st.integers(0, nodes - 1), min_size=1))),
            (draw(st.integers(0, 3)), draw(st.integers(0, 8))),
        )
        for i in range(draw(st.integers(1, 3)))
    ]
    pods = draw(
        st.lists(
            st.tuples(st.integers(0, 6), st.integers(0, len(shapes) - 1), st.integers(0, nodes - 1), st.integers(1, 3)),
            max_size=10,
            unique_by=lambda p: (p[0], p[1], p[2]),
        )
    )
    taken = draw(
        st.lists(st.tuples(st.integers(0, nodes - 1), st.integers(0, len(shapes) - 1), st.integers(-2, 2)), max_size=3)
    )
    gangs = sorted({g for g, *_ in pods})
    pool = frozenset(draw(st.sets(st.sampled_from(gangs)))) if gangs else frozenset()
    victims = frozenset(draw(st.sets(st.sampled_from(gangs)))) if gangs else frozenset()
    costs = tuple((g, draw(st.integers(0, 4))) for g in gangs)
    return _Case(base, shapes, pods, taken, pool, victims, costs)


@pytest.mark.pure_only
@settings(max_examples=300, deadline=None)
@given(_cases())
def test_first_fit_as_before(case: _Case) -> None:
    problem = _Problem(case.shapes)
    with_room: dict[int, list[int]] = {}
    before: dict[int, list[int]] = {}
    for s in range(len(case.shapes)):
        room = case.room()
        assert first_fit(problem, s, room, with_room) == _first_fit_before(problem, s, room, before)  # type: ignore[arg-type]
    assert with_room == before


@pytest.mark.pure_only
@settings(max_examples=1000, deadline=None)
@given(_cases())
def test_cheapest_as_before(case: _Case) -> None:
    assert _run_cheapest(_cheapest, case) == _run_cheapest(chain_reference._cheapest, case)


@pytest.mark.pure_only
@settings(max_examples=300, deadline=None)
@given(_cases())
def test_eject_as_before(case: _Case) -> None:
    assert _run_eject(eject, case) == _run_eject(_eject_before, case)


@settings(max_examples=200, deadline=None)
@given(_cases())
def test_fits_as_before(case: _Case) -> None:
    room = case.room()
    for node in range(len(case.base)):
        row = room.row(node)
        for shape in case.shapes:
            assert room.fits(node, shape.request) == all(row[r] >= a for r, a in enumerate(shape.request))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 20), st.integers(0, 9), min_size=1), st.data())
def test_memo_reads_each_once_as_fresh(costs: dict[int, int], data: st.DataObject) -> None:
    """The look's remembered costs (:func:`~vcsat.solver.search.chain._memo`) answer what a fresh
    read answers, in any order of asking, reading each gang once."""
    reads: list[int] = []

    def read(g: int) -> int:
        reads.append(g)
        return costs[g]

    cost = _memo(read)
    asked = data.draw(st.lists(st.sampled_from(sorted(costs)), max_size=30))
    assert [cost(g) for g in asked] == [costs[g] for g in asked]
    assert sorted(reads) == sorted(set(asked))
