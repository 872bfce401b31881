"""A trade's fixed costs cut, exactly (benchmarks/RESULTS.md, session 34): each new computation
against the one it replaced, kept here as the reference.

- :func:`vcsat.solver.room_taken.take_all` takes a decision's slots in arrays: the same room left,
  free whole GPUs and order of bucket changes as the slot-by-slot loop (``Room._take_all`` as it was).
- :func:`vcsat.solver.search.top_up.charged_less`: a standing decision's charges less a trade's
  dropped classes are :func:`vcsat.solver.search.top_up.charged` of the decision without them.
- :meth:`vcsat.solver.problem.Problem.room_left` in arrays: the same rows as the loop over slots.
- A room's free whole GPUs per topology domain, summed in one array pass a tier: the per-list sums.
- :func:`vcsat.solver.search.exchange.without` makes its tables for unpinned pods only when one is
  dropped: the same decision left as the scan it replaced, on partly pinned decisions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_exchange_cuts import _without_scan
from test_exchange_one_room import _shape_problem
from test_greedy_index import generated
from test_known_not_to_fit import POLICY, SLOW_OK, _facts
from test_room_taken import problem_of

from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import KeptRankings, Room, greedy, shares_gpu
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.room_taken import Requests, take_all
from vcsat.solver.search.exchange import without
from vcsat.solver.search.top_up import charged, charged_less, charges


def _take_slot_by_slot(
    free: list[list[int]], whole: list[int], taken: Mapping[tuple[int, int], int], requests: Requests, gpu: int | None
) -> list[int]:
    """The reference: ``Room._take_all`` as it was (one slot at a time, resource by resource)."""
    moved: dict[int, None] = {}
    for (s, node), k in taken.items():
        if k <= 0:
            continue
        if requests.shares[s]:
            raise ValueError("GPU shares are placed one by one (Room.take)")
        row = free[node]
        before = max(0, row[gpu]) if gpu is not None else 0
        for i, amount in enumerate(requests.amounts[s].tolist()):
            if amount:
                row[i] -= k * amount
        whole[node] -= k * int(requests.whole[s])
        if gpu is not None and max(0, row[gpu]) != before:
            moved.pop(node, None)
            moved[node] = None
    return list(moved)


def _requests(rows: list[list[int]], gpu: int | None) -> Requests:
    amounts = np.array(rows, dtype=np.int64)
    wholes = amounts[:, gpu].copy() if gpu is not None else np.zeros(len(rows), dtype=np.int64)
    return Requests(amounts, wholes, np.zeros(len(rows), dtype=np.bool_))


def _both(
    free: list[list[int]], taken: dict[tuple[int, int], int], rows: list[list[int]], gpu: int | None
) -> tuple[tuple[list[list[int]], list[int], list[int]], tuple[list[list[int]], list[int], list[int]]]:
    requests = _requests(rows, gpu)
    whole = [max(0, row[gpu]) if gpu is not None else 0 for row in free]
    ref_free, ref_whole = [list(row) for row in free], list(whole)
    ref_moved = _take_slot_by_slot(ref_free, ref_whole, taken, requests, gpu)
    new_free, new_whole = np.array(free, dtype=np.int64), np.array(whole, dtype=np.int64)
    new_moved = take_all(new_free, new_whole, taken, requests, gpu)
    return (ref_free, ref_whole, ref_moved), (new_free.tolist(), new_whole.tolist(), new_moved)


# (free rows [gpu, cpu], shapes' requests [gpu, cpu], slots in order, the nodes moved, oldest first)
TAKE_CASES = [
    # Two shapes on node 0, one on node 1: node 0 changes bucket twice, last at the second slot.
    ([[2, 10], [8, 10]], [[1, 1], [2, 1]], {(0, 0): 1, (0, 1): 3, (1, 0): 1}, [1, 0]),
    # Node 0 reaches 0 GPUs at its first slot: the second takes none (still 0), no later change.
    ([[1, 10], [4, 10]], [[1, 1], [1, 1]], {(0, 0): 1, (0, 1): 1, (1, 0): 2}, [0, 1]),
    # A shape of no GPUs changes no bucket; a count of 0 takes nothing.
    ([[4, 10], [4, 10]], [[0, 3], [2, 1]], {(0, 0): 2, (1, 1): 0, (0, 1): 1}, []),
    # Already overcommitted on GPUs (free below 0): its bucket is 0 before and after.
    ([[-1, 10], [3, 10]], [[1, 1]], {(0, 0): 1, (0, 1): 1}, [1]),
    # The order of last change, not of first: node 1 changed first, then node 0, then node 1 again.
    ([[8, 10], [8, 10]], [[1, 1], [2, 2]], {(0, 1): 1, (0, 0): 1, (1, 1): 1}, [0, 1]),
]


@pytest.mark.parametrize(("free", "rows", "taken", "moved"), TAKE_CASES)
def test_taking_at_once_is_taking_slot_by_slot(
    free: list[list[int]], rows: list[list[int]], taken: dict[tuple[int, int], int], moved: list[int]
) -> None:
    reference, new = _both(free, taken, rows, 0)
    assert new == reference
    assert new[2] == moved


def test_taking_without_gpus_moves_no_bucket() -> None:
    reference, new = _both([[5, 3], [2, 2]], {(0, 0): 2, (0, 1): 1}, [[1, 1]], None)
    assert new == reference and new[2] == []


def test_a_share_is_refused_at_once() -> None:
    requests = Requests(np.array([[1, 500]]), np.array([0]), np.array([True]))
    with pytest.raises(ValueError, match="shares"):
        take_all(np.zeros((1, 2), dtype=np.int64), np.zeros(1, dtype=np.int64), {(0, 0): 1}, requests, 0)


@settings(max_examples=200, deadline=None)
@given(
    nodes=st.integers(1, 6),
    shapes=st.integers(1, 4),
    data=st.data(),
)
def test_taking_at_once_is_taking_slot_by_slot_on_random_slots(nodes: int, shapes: int, data: st.DataObject) -> None:
    free = [[data.draw(st.integers(-2, 8)), data.draw(st.integers(0, 20))] for _ in range(nodes)]
    rows = [[data.draw(st.integers(0, 3)), data.draw(st.integers(0, 4))] for _ in range(shapes)]
    keys = data.draw(
        st.lists(st.tuples(st.integers(0, shapes - 1), st.integers(0, nodes - 1)), unique=True, max_size=12)
    )
    taken = {key: data.draw(st.integers(-1, 4)) for key in keys}
    reference, new = _both(free, taken, rows, 0)
    assert new == reference


def _drop_cases() -> list[tuple[str, int, int]]:
    return [("capped", 24, 3), ("capped", 30, 11), ("contended", 24, 5), ("over-served", 20, 7), ("weighted", 24, 2)]


@pytest.mark.parametrize(("shape", "nodes", "seed"), _drop_cases())
def test_charges_less_a_drop_are_the_decision_without_it_charged(shape: str, nodes: int, seed: int) -> None:
    problem = _shape_problem(shape, nodes, seed)
    decision = greedy(problem)
    kept = KeptRankings(problem)
    base = charges(problem, decision, kept)
    rng = random.Random(seed)
    placed = sorted(decision.placed)
    queues = {problem.gangs[g].queue for g in placed}
    drops = [
        [],
        rng.sample(placed, len(placed) // 3),
        placed,  # every queue's classes gone: each gets the problem's held work back, or none
        *([g for g in placed if problem.gangs[g].queue == queue] for queue in sorted(queues)),
    ]
    for drop in drops:
        rest = without(problem, decision, drop)
        assert rest is not None
        less = {c: decision.count[c] for g in drop for c in problem.gangs[g].classes if c in decision.count}
        assert charged_less(problem, base, less, kept) == charged(problem, rest, kept)
        assert charged_less(problem, base, less) == charged(problem, rest)


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(4, 30),
    seed=st.integers(0, 10_000),
    shape=st.sampled_from(["capped", "over-served", "contended", "weighted"]),
    share=st.floats(0, 1),
)
def test_charges_less_a_random_drop_are_charged_afresh(nodes: int, seed: int, shape: str, share: float) -> None:
    problem = _shape_problem(shape, nodes, seed)
    decision = greedy(problem)
    rng = random.Random(seed)
    drop = [g for g in sorted(decision.placed) if rng.random() < share]
    rest = without(problem, decision, drop)
    assert rest is not None
    less = {c: decision.count[c] for g in drop for c in problem.gangs[g].classes if c in decision.count}
    assert charged_less(problem, charges(problem, decision), less) == charged(problem, rest)


def _room_left_by_slot(problem: Problem, shape_slots: Mapping[tuple[int, int], int]) -> list[list[int]]:
    """The reference: :meth:`Problem.room_left` as it was."""
    room = [list(row) for row in problem.free]
    for (s, node), k in shape_slots.items():
        for r, amount in enumerate(problem.shapes[s].request):
            room[node][r] -= k * amount
    return room


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(seed=st.integers(0, 10_000), busy=st.sampled_from([0.2, 0.5, 0.9]), nodes=st.integers(4, 30))
def test_room_left_in_arrays_is_the_loop_over_slots(seed: int, busy: float, nodes: int) -> None:
    problem = problem_of(seed, busy, nodes)
    decision = greedy(problem)
    rng = random.Random(seed)
    slots = {key: k for key, k in decision.shape_slots.items() if rng.random() < 0.7}
    for shape_slots in (slots, decision.shape_slots, {}):
        assert problem.room_left(shape_slots) == _room_left_by_slot(problem, shape_slots)


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(seed=st.integers(0, 10_000), busy=st.sampled_from([0.2, 0.5, 0.9]), nodes=st.integers(6, 30))
def test_a_rooms_free_gpus_per_domain_are_the_per_list_sums(seed: int, busy: float, nodes: int) -> None:
    problem = problem_of(seed, busy, nodes)
    assert problem.domains is not None
    decision = greedy(problem)
    taken = {
        key: k for key, k in decision.shape_slots.items() if not shares_gpu(problem, problem.shapes[key[0]].request)
    }
    for room in (Room(problem), Room(problem, taken), Room(problem, taken, KeptRankings(problem))):
        assert set(room.tier_free) == set(problem.domains.tiers)
        for tier, lists in room.tier_nodes.items():
            want = [sum(max(0, room.whole[n]) for n in nodes) for nodes in lists]
            assert room.tier_free[tier].tolist() == want


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(2, 30),
    jobs=st.integers(5, 120),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.6, 0.9]),
)
def test_without_on_a_partly_pinned_decision_drops_as_the_scan(nodes: int, jobs: int, seed: int, busy: float) -> None:
    """Some gangs' pods pinned by their gang slots, the others' not (the tables for unpinned pods
    are made only when one is dropped): the same decision left as the scan it replaced."""
    snap = generated(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=busy, multi_node_job_share=0.3)
    problem = build_problem(snap, POLICY)
    first = greedy(problem)
    rng = random.Random(seed)
    named = {g for g in first.placed if rng.random() < 0.5}
    decision = Assignment(
        placed=set(first.placed),
        count=dict(first.count),
        shape_slots=dict(first.shape_slots),
        gang_slots={key: k for key, k in first.gang_slots.items() if key[0] in named},
        domain_counts=dict(first.domain_counts),
    )
    for _ in range(4):
        drop = rng.sample(sorted(decision.placed), rng.randint(0, len(decision.placed)))
        assert _facts(without(problem, decision, drop)) == _facts(_without_scan(problem, decision, drop))
