"""The LP bound's room rows picked as arrays are the rows picked item by item (session 29).

:class:`vcsat.solver.search.bound._Relaxation` writes, per node set, a room row per resource and a
block row per GPU size over the items confined to the set; at 10,000 nodes those rows hold about
300,000 coefficients, which were picked one item at a time. They are picked as arrays now, and
each item's node mask is its shape's fit counts' mask rather than one made from the node tuple.
The reference below is the loop as it was: every row handed to the builder (bounds, variables and
coefficients, in order) is the same, on generated clusters (Hypothesis), on shape files in
miniature with capped queues and several GPU sizes, and each item's nodes are its shape's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from shape_files import ALLOCATE, shape_problem
from test_greedy_index import generated
from test_known_not_to_fit import SLOW_OK

from vcsat.model import resources as res
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search import bound

Row = tuple[float, float, list[int], list[float]]


def _reference_rows(problem: Problem, items: list[Any]) -> list[Row]:
    """The room, block and capability rows as the loop picked them item by item (the variables of
    the items are the builder's first, so item ``i`` is variable ``i``); none without items."""
    rows: list[Row] = []
    if not items:
        return rows
    units = problem.units
    free = np.maximum(np.array(problem.free, dtype=np.int64).reshape(len(problem.nodes), -1), 0)
    gpu = problem.resource_index(res.GPU) if res.GPU in problem.resources else None

    def add(indices: list[int], coefs: list[float], upper: float, *, room: bool = False) -> None:
        # A room or block row that all its items' pods keep binds nothing and is left out (session 49).
        if indices and not (room and sum(c * items[i].pods for i, c in zip(indices, coefs, strict=True)) <= upper):
            rows.append((-math.inf, upper, list(indices), coefs))

    by_set: dict[bytes, list[int]] = {}
    masks: dict[bytes, Any] = {}
    for i, item in enumerate(items):
        key = item.nodes.tobytes()
        by_set.setdefault(key, []).append(i)
        masks[key] = item.nodes
    sets = list(masks.values())
    members_of = list(by_set.values())
    contains = bound.nested(sets, len(problem.nodes))
    requests = np.array([item.request for item in items], dtype=np.int64).reshape(len(items), -1)
    small_of = [
        [float(units.request(r, amount)) if amount > 0 else 0.0 for r, amount in enumerate(item.request)]
        for item in items
    ]
    gpus_of = np.array([item.gpus for item in items], dtype=np.int64)
    for a, mask in enumerate(sets):
        inside = np.array([i for b in np.flatnonzero(contains[a]) for i in members_of[b]], dtype=np.int64)
        room = free[mask].sum(axis=0)
        for r in range(len(problem.resources)):
            asked = [int(i) for i in inside[requests[inside, r] > 0]]
            add(asked, [small_of[i][r] for i in asked], float(units.room(r, int(room[r]))), room=True)
        if gpu is not None:
            largest = int(gpus_of[inside].max()) if len(inside) else 0
            free_gpus = free[mask][:, gpu]
            for g in range(2, largest + 1):
                big = [int(i) for i in inside[gpus_of[inside] >= g]]
                add(big, [float(items[i].gpus // g) for i in big], float((free_gpus // g).sum()), room=True)
    for queue, caps in problem.queue_room.items():
        members = [i for i, item in enumerate(items) if queue in problem.lineage(item.queue)]
        for name, left in caps.items():
            if name in problem.resources:
                r = problem.resource_index(name)
                asked = [i for i in members if items[i].request[r] > 0]
                add(
                    asked,
                    [float(units.request(r, items[i].request[r])) for i in asked],
                    float(units.room(r, max(0, left))),
                )
    # Then each priority's floor, highest first, loaded with a lower bound of 0 (session 31).
    for priority in sorted({item.priority for item in items}, reverse=True):
        at = [i for i, item in enumerate(items) if item.priority == priority]
        rows.append((0.0, math.inf, at, [float(items[i].value) for i in at]))
    return rows


def _rows_handed(problem: Problem, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Row], list[Any]]:
    """The rows the relaxation hands the builder in one call each (``_Builder.row``), in order."""
    handed: list[Row] = []
    row = bound._Builder.row

    def recording(self: Any, lower: float, upper: float, variables: list[int], coefficients: list[float]) -> None:
        assert all(type(v) is int for v in variables) and all(type(c) is float for c in coefficients)
        handed.append((lower, upper, list(variables), list(coefficients)))
        row(self, lower, upper, variables, coefficients)

    items = bound._items(problem)
    if not items:
        # A cluster with nothing the LP could place (every waiting pod known not to fit): the
        # cycle's bound builds no relaxation at all, so no row is handed.
        assert bound.lp_bounds(problem, {})._relaxation is None
        return handed, items
    priorities = sorted({item.priority for item in items}, reverse=True)
    with monkeypatch.context() as patch:
        patch.setattr(bound._Builder, "row", recording)
        bound._Relaxation(problem, items, priorities, fair_share_values(problem, greedy(problem)))
    return handed, items


def _same(problem: Problem, monkeypatch: pytest.MonkeyPatch) -> int:
    handed, items = _rows_handed(problem, monkeypatch)
    # Each item's mask is the mask of some shape's node tuple, of the item's request (as it was made).
    made: list[tuple[tuple[int, ...], Any]] = []
    for s in problem.shapes:
        mask = np.zeros(len(problem.nodes), dtype=np.bool_)
        mask[list(s.nodes)] = True
        made.append((s.request, mask))
    for item in items:
        assert any(request == item.request and np.array_equal(mask, item.nodes) for request, mask in made)
    # The fair-share rows follow (handed at once too since session 49; test_lp_objective_changes).
    reference = _reference_rows(problem, items)
    assert handed[: len(reference)] == reference
    return sum(len(variables) for _, _, variables, _ in handed)


@pytest.mark.pure_only  # swaps a method of search/bound.py's classes, which compiled callers do not see
@pytest.mark.parametrize(
    ("shape", "nodes", "seed"),
    [("contended", 60, 1), ("capped", 50, 2), ("big-gangs", 40, 3), ("over-served", 50, 4), ("default", 40, 5)],
)
def test_rows_as_picked_item_by_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, nodes: int, seed: int
) -> None:
    problem = shape_problem(tmp_path, shape, nodes, seed)
    assert _same(problem, monkeypatch) > 0


@pytest.mark.pure_only  # swaps a method of search/bound.py's classes, which compiled callers do not see
@settings(max_examples=20, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(2, 40),
    jobs=st.integers(5, 150),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.6, 0.9]),
    multi=st.sampled_from([0.1, 0.4]),
)
@example(nodes=4, jobs=5, seed=1223, busy=0.9, multi=0.4)  # no item at all: no relaxation is built
def test_rows_as_the_reference_on_generated_clusters(
    monkeypatch: pytest.MonkeyPatch, nodes: int, jobs: int, seed: int, busy: float, multi: float
) -> None:
    snap = generated(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=busy, multi_node_job_share=multi)
    _same(build_problem(snap, ALLOCATE), monkeypatch)
