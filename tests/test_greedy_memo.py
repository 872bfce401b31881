"""The greedy room's memory between queries: the empty queries it remembers (:attr:`Room.full`)
and the kept scarce-pool rankings (:meth:`Room.cheapest_fit`) answer as the reference scan does
(tests/greedy_reference.py), through gang trials that keep or give back what they took, and
through room given back outside a trial (as the explanations do)."""

from __future__ import annotations

import random

import pytest
from greedy_reference import ScanRoom
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy
from vcsat.solver import greedy
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import Problem, Shape, build_problem

POLICY = Policy(time_limit_s=2)


@pytest.fixture(autouse=True)
def numpy_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(greedy, "SMALL_SCAN", 0)
    monkeypatch.setattr(greedy, "FEW_CHANGED", 2)  # both ways of pricing changed nodes again


def problem_of(seed: int, busy: float) -> Problem:
    options = GeneratorOptions(
        nodes=24, pending_jobs=40, seed=seed, busy_gpu_fraction=busy, rack_size=4, racks_per_spine=2
    )
    instance = generate_instance(options)
    return build_problem(snapshot_from_objects(instance["items"], source="generated"), POLICY)


def none_fits(scanned: ScanRoom, shape: Shape, within: list[int] | None) -> bool:
    nodes = shape.upper if within is None else [n for n in within if n in shape.upper]
    return not any(scanned.fits(n, shape.request) for n in nodes)


@pytest.mark.pure_only  # hands compiled code a stand-in room (greedy_reference.ScanRoom)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(seed=st.integers(0, 10_000), trials=st.integers(3, 25), busy=st.sampled_from([0.3, 0.7, 0.95]))
def test_remembered_queries_stay_empty_and_rankings_agree(seed: int, trials: int, busy: float) -> None:
    problem = problem_of(seed % 40, busy)
    scarce = scarcity.for_problem(problem)
    assume(scarce is not None)
    indexed, scanned = greedy.Room(problem), ScanRoom(problem)
    rng = random.Random(seed)
    domains = [[n] for n in range(min(4, len(problem.nodes)))] + list(indexed.tier_nodes.get(0, []))
    asked: list[tuple[Shape, list[int] | None]] = []
    kept: list[tuple[int, tuple[int, ...]]] = []

    def agree() -> None:
        for shape in rng.sample(problem.shapes, min(5, len(problem.shapes))):
            assert indexed.cheapest_fit(scarce, shape) == scanned.cheapest_fit(scarce, shape)
        for shape, within in asked:
            if indexed.query_key(shape.request, shape.fits, within) in indexed.full:
                assert none_fits(scanned, shape, within), "a remembered empty query would fit now"

    for _ in range(trials):
        if kept and rng.random() < 0.15:  # room given back outside a trial (the explanations' undo)
            node, request = kept.pop()
            indexed.give(node, request)
            scanned.give(node, request)
            agree()
            continue
        indexed.open_trial()
        taken: list[tuple[int, tuple[int, ...]]] = []
        for _ in range(rng.randint(1, 4)):
            shape = rng.choice(problem.shapes)
            within = rng.choice(domains) if domains and rng.random() < 0.4 else None
            asked.append((shape, within))
            key = indexed.query_key(shape.request, shape.fits, within)
            if key in indexed.full:
                assert none_fits(scanned, shape, within)
                continue
            if within is None:
                node = indexed.cheapest_fit(scarce, shape)
                assert node == scanned.cheapest_fit(scarce, shape)
            else:
                node = indexed.best_fit_in(shape.request, shape.fits, within)
                assert node == scanned.best_fit_in(shape.request, shape.upper, within)
            if node is None:
                indexed.note_full(key)
                continue
            indexed.take(node, shape.request)
            scanned.take(node, shape.request)
            taken.append((node, shape.request))
        keep = rng.random() < 0.5
        if not keep:
            for node, request in reversed(taken):
                indexed.give(node, request)
                scanned.give(node, request)
        indexed.close_trial(kept=keep)
        if keep:
            kept += taken
        assert indexed.free == scanned.free
        agree()
