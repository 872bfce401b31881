"""A fill's rooms die with it: no reference cycle keeps them for the collector.

A cycle runs with the cyclic collector paused (:mod:`vcsat.solver.pauses`), and afterwards what it
made sits in the oldest generation, which a process seldom collects in full: a room caught in a
reference cycle (say, a node query it keeps that holds the room) would keep its per-node rows
until then, every fill and every exchange trade adding its rooms. Here the greedy, a top-up and a
whole cycle with trades on generated clusters (every way of choosing nodes: best fit, the scarce
pools' prices, topology domains) leave no room, ranking or node query as cyclic garbage.
"""

from __future__ import annotations

import gc

import pytest

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy, Snapshot
from vcsat.solver import solve
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import build_problem
from vcsat.solver.search.top_up import top_up

POLICY = Policy(time_limit_s=2)
KEPT_ALIVE_BY_CYCLES = {"Room", "_Ranking", "KeptRankings", "NodeRows", "methodcaller", "partial", "method"}


def _cluster(seed: int, busy: float) -> Snapshot:
    options = GeneratorOptions(
        nodes=24, pending_jobs=40, seed=seed, busy_gpu_fraction=busy, rack_size=4, racks_per_spine=2
    )
    return snapshot_from_objects(generate_instance(options)["items"], source="generated")


def _cyclic_garbage_of(call: object) -> set[str]:
    """The kinds of object ``call()`` left as cyclic garbage (the collector run before and after)."""
    assert callable(call)
    gc.collect()
    call()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return {type(thing).__name__ for thing in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize(("seed", "busy"), [(1, 0.3), (2, 0.5), (3, 0.8)])
def test_the_greedy_and_a_top_up_leave_no_room_behind(seed: int, busy: float) -> None:
    problem = build_problem(_cluster(seed, busy), POLICY)
    assert not _cyclic_garbage_of(lambda: greedy(problem)) & KEPT_ALIVE_BY_CYCLES
    assert not _cyclic_garbage_of(lambda: top_up(problem, Assignment())) & KEPT_ALIVE_BY_CYCLES


@pytest.mark.parametrize(("seed", "busy"), [(4, 0.5), (5, 0.8)])
def test_a_whole_cycle_with_its_trades_leaves_no_room_behind(seed: int, busy: float) -> None:
    snapshot = _cluster(seed, busy)
    solve(snapshot, POLICY, wall=False)  # the problem and its memos, kept on the snapshot, made first
    left = _cyclic_garbage_of(lambda: solve(snapshot, POLICY, wall=False, skip=frozenset({"exchange_trades=6"})))
    assert not left & KEPT_ALIVE_BY_CYCLES
