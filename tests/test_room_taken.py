"""A greedy room made with pods already taken (``Room(problem, taken)``, what the top-up starts
from) is the room that taking them one by one in the same order leaves: the free room, every
index over it, and each free-GPU bucket's order (which best fit reads), on random generated
clusters with the pods of a random part of the greedy's decision in a random order."""

from __future__ import annotations

import random

import numpy as np
import pytest
from builders import node, pod, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy
from vcsat.solver.greedy import Room, greedy, shares_gpu
from vcsat.solver.problem import Problem, build_problem


def problem_of(seed: int, busy: float, nodes: int) -> Problem:
    options = GeneratorOptions(
        nodes=nodes, pending_jobs=2 * nodes, seed=seed, busy_gpu_fraction=busy, rack_size=4, racks_per_spine=2
    )
    instance = generate_instance(options)
    return build_problem(snapshot_from_objects(instance["items"], source="generated"), Policy(time_limit_s=2))


def same_room(one: Room, other: Room) -> None:
    assert one.free == other.free
    assert one.whole == other.whole
    # Each bucket's nodes in its order (empty buckets left behind by moves say nothing).
    assert {level: list(nodes) for level, nodes in one.levels.items() if nodes} == {
        level: list(nodes) for level, nodes in other.levels.items() if nodes
    }
    assert list(np.argsort(one.arrival, kind="stable")) == list(np.argsort(other.arrival, kind="stable"))
    for name in ("free_cols", "negative", "whole_array", "level_array", "level_rank", "share_room", "share_free"):
        assert np.array_equal(getattr(one, name), getattr(other, name)), name
    assert set(one.tier_free) == set(other.tier_free)
    for tier, free in one.tier_free.items():
        assert np.array_equal(free, other.tier_free[tier])
    assert one.level_classes.key_of == other.level_classes.key_of
    assert one.level_classes.count == other.level_classes.count
    for gpus in range(9):
        assert one.fullest_with(gpus) == other.fullest_with(gpus)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.5, 0.9]),
    nodes=st.integers(6, 40),
    share=st.sampled_from([0.3, 0.7, 1.0]),
)
def test_a_room_made_with_pods_taken_is_the_room_taking_them_leaves(
    seed: int, busy: float, nodes: int, share: float
) -> None:
    problem = problem_of(seed, busy, nodes)
    rng = random.Random(seed)
    slots = [
        (key, k)
        for key, k in greedy(problem).shape_slots.items()
        if not shares_gpu(problem, problem.shapes[key[0]].request) and rng.random() < share
    ]
    rng.shuffle(slots)
    taken = dict(slots)
    one_by_one = Room(problem)
    for (s, at), k in taken.items():
        for _ in range(k):
            one_by_one.take(at, problem.shapes[s].request)
    same_room(Room(problem, taken), one_by_one)


def test_a_share_is_refused() -> None:
    problem = build_problem(
        snapshot([node("n0", gpus=2)], [pod("a/share", gpu_milli=500), pod("a/whole", gpus=1)]), Policy()
    )
    shared = [shape.index for shape in problem.shapes if shares_gpu(problem, shape.request)]
    whole = [shape.index for shape in problem.shapes if not shares_gpu(problem, shape.request)]
    assert len(shared) == 1 and len(whole) == 1
    assert Room(problem, {(whole[0], 0): 1}).whole == [1]
    with pytest.raises(ValueError, match="shares"):
        Room(problem, {(shared[0], 0): 1})
