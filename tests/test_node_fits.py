"""``node_fits.NodeFits`` (a shape's per-node fit counts kept as arrays) reads as the dict it stands
for: the same keys in the same order, the same counts, membership, length, mask and flags; the
build gives every shape and bucket counts equal to the plain per-node count; a cycle that stops
after the greedy makes no dict of them; and the greedy's node queries answer alike whether they
are handed a shape's ``fits`` or its ``upper`` dict."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy
from vcsat.solver import greedy
from vcsat.solver.node_fits import NodeFits
from vcsat.solver.problem import Problem, _fit_count, build_problem


@pytest.mark.parametrize(
    ("rows", "counts", "size"),
    [
        ([], [], 0),
        ([], [], 4),
        ([2], [7], 3),
        ([0, 3, 4], [1, 2, 1 << 30], 5),
        ([1, 2, 5, 9], [0, 0, 3, 1], 10),  # a bucket's nodes may count 0
    ],
)
def test_reads_as_its_dict(rows: list[int], counts: list[int], size: int) -> None:
    fits = NodeFits(np.array(rows, dtype=np.intp), np.array(counts, dtype=np.int64))
    expected = dict(zip(rows, counts, strict=True))
    assert len(fits) == len(expected)
    assert list(fits) == list(expected)
    for node in range(-1, size + 1):
        assert (node in fits) == (node in expected)  # before the dict is made: a binary search
        assert (np.int64(node) in fits) == (np.int64(node) in expected)  # NumPy's ints too, as the dict
    assert ("0" in fits) == ("0" in expected)
    assert fits.mask(size).tolist() == [n in expected for n in range(size)]
    assert fits.flags(size) == [n in expected for n in range(size)]
    made = fits.as_dict()
    assert made == expected and list(made) == rows
    assert fits.as_dict() is made  # made once
    assert all((node in fits) == (node in expected) for node in range(-1, size + 1))
    assert fits == NodeFits.of(expected)
    assert NodeFits.of(expected).as_dict() == expected


def test_equality_is_by_content() -> None:
    one = NodeFits(np.array([1, 2], dtype=np.intp), np.array([3, 4], dtype=np.int64))
    assert one == NodeFits.of({1: 3, 2: 4})
    assert one != NodeFits.of({1: 3, 2: 5})
    assert one != NodeFits.of({1: 3})
    assert one != {1: 3, 2: 4}  # not a dict: compared by its own kind only


@given(st.dictionaries(st.integers(0, 60), st.integers(0, 1 << 20), max_size=30), st.integers(61, 70))
@settings(max_examples=100, deadline=None)
def test_any_counts_read_back(counts: dict[int, int], size: int) -> None:
    ordered = dict(sorted(counts.items()))
    fits = NodeFits.of(ordered)
    assert [n for n in range(size) if n in fits] == list(ordered)
    assert np.flatnonzero(fits.mask(size)).tolist() == list(ordered)
    assert fits.as_dict() == ordered and list(fits.as_dict()) == list(ordered)


def _problem(seed: int, nodes: int = 24) -> Problem:
    options = GeneratorOptions(nodes=nodes, pending_jobs=40, seed=seed, busy_gpu_fraction=0.5, rack_size=4)
    instance = generate_instance(options)
    return build_problem(snapshot_from_objects(instance["items"], source="generated"), Policy(time_limit_s=1))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_build_counts_equal_the_per_node_count(seed: int) -> None:
    problem = _problem(seed)
    for shape in problem.shapes:
        assert shape.nodes == tuple(shape.upper)
        asks = any(amount > 0 for amount in shape.request)
        assert shape.upper == {n: _fit_count(shape.request, problem.free[n]) if asks else 1 << 30 for n in shape.nodes}
        assert all(count > 0 for count in shape.upper.values())
    for bucket in problem.buckets:
        assert bucket.nodes == tuple(bucket.upper)
        if not bucket.exact:
            assert bucket.upper == {n: _fit_count(bucket.request, problem.free[n]) for n in bucket.nodes}


@pytest.mark.parametrize("seed", [4, 5])
def test_the_greedy_makes_no_dict_of_counts(seed: int) -> None:
    problem = _problem(seed)
    greedy.greedy(problem)
    assert problem.shapes
    # ``upper`` is kept in ``_upper`` once made (getattr: a compiled class leaves it undefined until then).
    assert not [s.index for s in problem.shapes if getattr(s, "_upper", None) is not None]
    assert not [b.index for b in problem.buckets if getattr(b, "_upper", None) is not None]


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_queries_answer_alike_on_fits_and_on_upper(seed: int) -> None:
    problem = _problem(seed)
    by_fits, by_dict = greedy.Room(problem), greedy.Room(problem)
    rng = random.Random(seed)
    domains = [[n] for n in range(4)] + [rng.sample(range(len(problem.nodes)), 6) for _ in range(4)]
    for _ in range(60):
        shape = rng.choice(problem.shapes)
        within = rng.choice(domains)
        node = by_fits.best_fit_in(shape.request, shape.fits, within)
        assert node == by_dict.best_fit_in(shape.request, shape.upper, within)
        anywhere = by_fits.best_fit(shape.request, shape.gpus, shape.fits)
        assert anywhere == by_dict.best_fit(shape.request, shape.gpus, shape.upper)
        placed = anywhere if node is None else node
        if placed is not None:
            by_fits.take(placed, shape.request)
            by_dict.take(placed, shape.request)
