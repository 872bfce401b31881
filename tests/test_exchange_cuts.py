"""The exchange's trades made cheaper decide exactly as before (benchmarks/RESULTS.md, session 28).

- Gangs of several pods or classes whose every node query anywhere the room knows finds nothing
  are not tried (:func:`vcsat.solver.greedy._known_not_to_fit`), and the rooms of one problem
  carry the queries known to find nothing that still find nothing in the next room
  (:meth:`vcsat.solver.greedy.KeptRankings.still_full`): trades (a drop, a top-up of a few
  waiting gangs, a top-up of the rest, on rooms that share their rankings, some kept as the next
  base) and whole exchanges decide as they do with every gang tried and nothing carried; on the
  table's crowded clusters both cuts do skip something.
- :func:`vcsat.solver.search.exchange.without` reads a dropped pod's slots from its shape's nodes:
  the same decision as the scan over every slot it replaced (kept here as the reference).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_greedy_index import generated, racked_clusters
from test_known_not_to_fit import POLICY, SLOW_OK, _facts

from vcsat.model import resources as res
from vcsat.solver import greedy
from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Gang, Problem, build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.exchange import exchange, trading_queues, trading_ranks, trading_tiers, without
from vcsat.solver.search.top_up import top_up
from vcsat.solver.solve import _lexicographic


def _trades(problem: Problem, seed: int) -> list[Any]:
    """Random trades on rooms that share their rankings, then the whole exchange, from the greedy."""
    first = greedy.greedy(problem)
    kept = greedy.KeptRankings(problem)
    rng = random.Random(seed)
    base = first
    out: list[Any] = []
    for _ in range(5):
        drop = rng.sample(sorted(base.placed), rng.randint(0, len(base.placed)))
        rest = without(problem, base, drop)
        if rest is None:
            out.append(None)
            continue
        waiting = sorted(g.index for g in problem.candidates if g.index not in rest.placed)
        only = set(rng.sample(waiting, min(len(waiting), rng.randint(0, 3))))
        trial = top_up(problem, top_up(problem, rest, only=only, kept=kept), kept=kept)
        out.append(_facts(trial))
        if rng.random() < 0.5:
            base = trial
    queues, ranks, tiers = trading_queues(problem, first), trading_ranks(problem, first), trading_tiers(problem, first)
    out.append(_facts(exchange(problem, first, _lexicographic, queues, ranks, tiers)))
    return out


def _single_pod_only(problem: Problem, gang: Gang, room: greedy.Room) -> bool:
    """The skip as it was before: one-pod gangs of one class only."""
    if len(gang.classes) != 1 or len(problem.classes[gang.classes[0]].pods) != 1:
        return False
    return _known(problem, gang, room)


_known = greedy._known_not_to_fit


def _with_and_without(snap: Any, seed: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any], int, int]:
    """The trades with the cuts, without them, and how many trials of gangs of several pods were
    skipped and known-empty queries carried with them."""
    skipped, carried = [0], [0]
    still_full = greedy.KeptRankings.still_full

    def counting(problem: Problem, gang: Gang, room: greedy.Room) -> bool:
        out = _known(problem, gang, room)
        skipped[0] += out and not _single_pod_only(problem, gang, room)
        return out

    def carrying(self: greedy.KeptRankings, room: greedy.Room) -> list[Any]:
        out = still_full(self, room)
        carried[0] += len(out)
        return out

    with monkeypatch.context() as patch:
        patch.setattr(greedy, "_known_not_to_fit", counting)
        patch.setattr(greedy.KeptRankings, "still_full", carrying)
        cut = _trades(build_problem(snap, POLICY), seed)
    with monkeypatch.context() as patch:
        patch.setattr(greedy, "_known_not_to_fit", lambda problem, gang, room: False)
        patch.setattr(greedy.KeptRankings, "still_full", lambda self, room: [])
        plain = _trades(build_problem(snap, POLICY), seed)
    return cut, plain, skipped[0], carried[0]


@pytest.mark.pure_only
@pytest.mark.parametrize(
    ("options", "seed", "several"),
    [
        ({"nodes": 30, "pending_jobs": 160, "seed": 1, "busy_gpu_fraction": 0.8, "multi_node_job_share": 0.3}, 3, True),
        ({"nodes": 24, "pending_jobs": 120, "seed": 4, "busy_gpu_fraction": 0.7, "multi_node_job_share": 0.4}, 5, True),
        (
            {"nodes": 40, "pending_jobs": 200, "seed": 8, "busy_gpu_fraction": 0.6, "multi_node_job_share": 0.2},
            11,
            False,
        ),
        ({"nodes": 16, "pending_jobs": 90, "seed": 2, "busy_gpu_fraction": 0.9, "multi_node_job_share": 0.5}, 7, False),
        (
            {"nodes": 20, "pending_jobs": 150, "seed": 6, "busy_gpu_fraction": 0.5, "multi_node_job_share": 0.5},
            2,
            False,
        ),
        ({"nodes": 24, "pending_jobs": 150, "seed": 5, "busy_gpu_fraction": 0.8, "ps_worker_job_share": 0.4}, 3, False),
        ({"nodes": 30, "pending_jobs": 200, "seed": 9, "busy_gpu_fraction": 0.7, "ps_worker_job_share": 0.3}, 4, True),
    ],
    ids=["busy", "busy-gangs", "larger", "crowded", "half-gangs", "two-tasks", "two-tasks-larger"],
)
def test_trades_decide_alike_and_the_cuts_skip(
    options: dict[str, Any], seed: int, several: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut, plain, skipped, carried = _with_and_without(generated(**options), seed, monkeypatch)
    assert cut == plain
    assert any(facts is not None and facts[0] for facts in cut), "the case places something"
    assert carried > 0, "some known-empty query is carried into the next room"
    if several:
        assert skipped > 0, "some gang of several pods is known not to fit"


@settings(max_examples=20, deadline=None, suppress_health_check=SLOW_OK)
@given(case=racked_clusters())
def test_cheaper_trades_decide_as_plain_ones(case: tuple[Any, int], monkeypatch: pytest.MonkeyPatch) -> None:
    snap, seed = case
    cut, plain, _, _ = _with_and_without(snap, seed, monkeypatch)
    assert cut == plain


def _without_scan(problem: Problem, assignment: Assignment, gangs: list[int]) -> Assignment | None:
    """:func:`without` as it was: each dropped pod's candidate slots found by a scan over every slot."""
    dropped = set(gangs)
    shape_slots = dict(assignment.shape_slots)
    gang_slots: dict[tuple[int, int, int], int] = {}
    pinned: dict[tuple[int, int], int] = {}
    for (g, s, node), k in assignment.gang_slots.items():
        if g in dropped:
            shape_slots[(s, node)] -= k
        else:
            gang_slots[(g, s, node)] = k
            pinned[(s, node)] = pinned.get((s, node), 0) + k
    by_gang: dict[tuple[int, int], int] = {}
    for (g, s, _node), k in assignment.gang_slots.items():
        if g in dropped:
            by_gang[(g, s)] = by_gang.get((g, s), 0) + k
    gpu = problem.resource_index(res.GPU) if res.GPU in problem.resources else None
    left = problem.room_left(shape_slots)
    count = dict(assignment.count)
    for g in sorted(dropped):
        for c in problem.gangs[g].classes:
            k = count.pop(c, 0)
            s = problem.classes[c].shape
            taken = min(k, by_gang.get((g, s), 0))
            by_gang[(g, s)] = by_gang.get((g, s), 0) - taken
            k -= taken
            if k <= 0:
                continue
            nodes = [node for (shape, node), n in shape_slots.items() if shape == s and n > pinned.get((s, node), 0)]
            nodes.sort(key=lambda node: (-(left[node][gpu] if gpu is not None else 0), -sum(left[node]), node))
            for node in nodes:
                if k <= 0:
                    break
                free = min(k, shape_slots[(s, node)] - pinned.get((s, node), 0))
                shape_slots[(s, node)] -= free
                for r, amount in enumerate(problem.shapes[s].request):
                    left[node][r] += free * amount
                k -= free
            if k > 0:
                return None
    return Assignment(
        placed=set(assignment.placed) - dropped,
        count=count,
        shape_slots={key: k for key, k in shape_slots.items() if k > 0},
        gang_slots=gang_slots,
        domain_counts={key: k for key, k in assignment.domain_counts.items() if key[0] not in dropped},
    )


def _unpinned(assignment: Assignment) -> Assignment:
    """The decision as a search hands it back: slots that name no gang (the drop reads ``shape_slots``)."""
    return Assignment(
        placed=set(assignment.placed),
        count=dict(assignment.count),
        shape_slots=dict(assignment.shape_slots),
        gang_slots={},
        domain_counts=dict(assignment.domain_counts),
    )


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(2, 30),
    jobs=st.integers(5, 120),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.6, 0.9]),
    pinned=st.booleans(),
)
def test_without_drops_as_the_scan(nodes: int, jobs: int, seed: int, busy: float, pinned: bool) -> None:
    snap = generated(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=busy, multi_node_job_share=0.3)
    problem = build_problem(snap, POLICY)
    first = greedy.greedy(problem)
    decision = first if pinned else _unpinned(first)
    rng = random.Random(seed)
    for _ in range(4):
        drop = rng.sample(sorted(decision.placed), rng.randint(0, len(decision.placed)))
        assert _facts(exchange_module.without(problem, decision, drop)) == _facts(
            _without_scan(problem, decision, drop)
        )
