"""The greedy's fair-share level serves the same queue again without comparing the others when
a gang did not fit (:func:`vcsat.solver.greedy._fill_tier`): no key changed, so the least filled
queue is the same one. The greedy, its other fill (by gain, whose keys change with every gang)
and the exchange's top-ups decide exactly as with the queue found again before every gang (the
loop as it was, kept here as the reference), on a table of generated shapes and on random
clusters (Hypothesis).
"""

from __future__ import annotations

import math
import random
from collections import deque
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scripts import load_script
from test_greedy_index import generated
from test_known_not_to_fit import POLICY, SLOW_OK, _facts

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.model import Snapshot
from vcsat.solver import greedy
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives import fairness
from vcsat.solver.problem import Gang, Problem, build_problem
from vcsat.solver.search.exchange import without
from vcsat.solver.search.top_up import top_up

shapes = load_script("benchmarks/shapes.py", "shapes")


def _fill_tier_as_before(
    problem: Problem,
    tier: int,
    order: list[Gang],
    tried: set[int],
    room: greedy.Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
    *,
    by_gain: bool,
    largest_first: bool = False,
) -> None:
    """One queue fair-share level: the queues it can raise, the least filled first (on the
    resource the level measures; each first up to its target, :func:`_targets`, then on) or,
    ``by_gain``, the one whose next gang adds the most to the level per unit of that resource it
    takes first (the least filled among equals), each with its work of this tier's priorities in
    job order, until each is at its deserved share or out of work. Room only shrinks, so a gang
    that failed once is not tried again. (The decisions compared here fill in job order: the
    greedy, the greedy by gain, the top-ups; ``largest_first`` is never asked.)"""
    assert not largest_first
    share: dict[str, tuple[str, int]] = {}
    for queue, name, deserved, _held, _asked in fairness.fair_terms(problem, tier):
        share[queue] = (name, deserved)
    waiting: dict[str, deque[Gang]] = {}
    thresholds = {queue: fairness.tier_threshold(problem, queue, tier) for queue in share}
    for gang in order:
        if gang.queue in share and gang.index not in tried and gang.rank >= thresholds[gang.queue]:
            waiting.setdefault(gang.queue, deque()).append(gang)

    # The keys below are fractions over a queue's deserved amount, each scaled by one common
    # multiple of them all: whole numbers that compare as the fractions do, exactly, and cheaply.
    scale = math.lcm(*(deserved for _name, deserved in share.values()))

    def fill(queue: str) -> int:
        name, deserved = share[queue]
        return held.get(queue, {}).get(name, 0) * (scale // deserved)

    def gain(queue: str) -> Fraction:
        # The level sums each queue's concave utility of its filled share, so a gang adds the
        # utility's rise over the share it takes, divided by what it takes: a queue that deserves
        # less gains more per unit on the same slope, which filling every queue to equal shares
        # gives up, and a steeper slope (a less filled queue) weighs more. The rise is taken over
        # the queue's next gang whole, not its next unit: a big gang that crosses into flatter
        # pieces, or past the queue's share, gains less per unit than the slope where the queue
        # stands says, and a fill that believed the slope would spend room on it that the other
        # queues' gangs raise the level more with.
        name, deserved = share[queue]
        now = min(held.get(queue, {}).get(name, 0), deserved)
        # Work that takes none of the resource is ranked by the slope where the queue stands.
        taken = max(1, greedy._gang_asks(problem, room, waiting[queue][0], name))
        rise = greedy._scaled_utility(min(now + taken, deserved), deserved) - greedy._scaled_utility(now, deserved)
        return Fraction(rise, taken * deserved)

    # Filled equally, each queue first goes up to its target, the level's best split of the free
    # room (:mod:`vcsat.solver.shares.level_targets`), in the same order: one queue reaching its
    # target waits until the others have reached theirs, then all go on towards their shares.
    targets = {} if by_gain else greedy._targets(problem, room, share, held, waiting)

    def past_target(queue: str) -> int:
        name, _deserved = share[queue]
        return int(held.get(queue, {}).get(name, 0) >= targets[queue])

    # Each queue's order key and its name (ties go by name). The key ends with the queue's fill.
    # Filled equally, a queue's key changes only when a gang was placed for it; filled by gain, it
    # also depends on the queue's next gang, so it is made again after every gang.
    keys: dict[str, tuple[tuple[int | Fraction, ...], str]] = {}

    def key(queue: str) -> tuple[tuple[int | Fraction, ...], str]:
        return ((-gain(queue), fill(queue)) if by_gain else (past_target(queue), fill(queue))), queue

    for queue in waiting:
        keys[queue] = key(queue)
    while waiting:
        queue = min(waiting, key=keys.__getitem__)
        if keys[queue][0][-1] >= scale:
            break  # every queue left is at its share: no queue gains more at this level
        gang = waiting[queue].popleft()
        if not waiting[queue]:
            del waiting[queue]
        tried.add(gang.index)
        if (greedy._place(problem, gang, room, queue_room, assignment, held) or by_gain) and queue in waiting:
            keys[queue] = key(queue)


def _decisions(snap: Snapshot, seed: int) -> list[Any]:
    """The greedy, the greedy by gain, and two top-ups of the greedy less random gangs."""
    problem = build_problem(snap, POLICY)
    first = greedy.greedy(problem)
    by_gain = greedy.greedy_by_gain(problem)
    out = [_facts(first), _facts(by_gain)]
    rng = random.Random(seed)
    for _ in range(2):
        rest = without(problem, first, rng.sample(sorted(first.placed), rng.randint(0, len(first.placed))))
        out.append(None if rest is None else _facts(top_up(problem, rest, kept=greedy.KeptRankings(problem))))
    return out


def _both(snap: Snapshot, seed: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    now = _decisions(snap, seed)
    with monkeypatch.context() as patch:
        patch.setattr(greedy, "_fill_tier", _fill_tier_as_before)
        before = _decisions(snap, seed)
    return now, before


@pytest.mark.pure_only
@pytest.mark.parametrize(
    ("shape", "nodes", "seed"),
    [("contended", 40, 1), ("weighted", 40, 2), ("over-served", 50, 3), ("capped", 40, 5), ("default", 30, 4)],
)
def test_fill_tier_decides_as_before_on_shapes(
    shape: str, nodes: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = shapes.SHAPES[shape].instance(nodes=nodes, seed=seed)
    now, before = _both(snapshot_from_objects(instance["items"], source="generated"), seed, monkeypatch)
    assert now == before
    assert now[0] is not None and now[0][0], "the greedy places something"


@pytest.mark.pure_only
@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(2, 30),
    jobs=st.integers(5, 150),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.6, 0.9]),
    multi=st.sampled_from([0.0, 0.3]),
)
def test_fill_tier_decides_as_before_on_random_clusters(
    nodes: int, jobs: int, seed: int, busy: float, multi: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = generated(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=busy, multi_node_job_share=multi)
    now, before = _both(snap, seed, monkeypatch)
    assert now == before
