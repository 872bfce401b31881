"""The exchange's set-up made once where it was made again decides exactly as before (session 29).

- :func:`vcsat.solver.search.slope_trade.slope_trades` adds each shape's nodes once per GPU size,
  not once per waiting gang of that shape: the same trades as the reference below (the loop as it
  was), for every tier and queue the tier can raise, on the greedy's decision and on decisions
  with random gangs taken out.
- The exchange's run (``_Run.raisable``) keeps :func:`_raisable` per tier while one decision stands
  (the slope trades' two passes and the fair trades ask for the same): whole exchanges decide as
  with it made afresh at every asking, on small contended clusters where trades are kept (so the
  decision that stands changes and the kept lists must be let go) and the memo is read again.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shape_files import shape_problem
from test_known_not_to_fit import SLOW_OK, _facts

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms
from vcsat.solver.problem import Problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search import slope_trade
from vcsat.solver.search.slope_trade import SlopeTrade, gains
from vcsat.solver.solve import _lexicographic


def _reference_slope_trades(
    problem: Problem, assignment: Assignment, tier: int, queue: str, top: int, waiting: set[int]
) -> list[SlopeTrade]:
    """:func:`slope_trades` as it was: every waiting gang's class adds its shape's nodes (the sizes'
    second forms after every first form, the third forms after those)."""
    if res.GPU not in problem.resources:
        return []
    gpu = problem.resource_index(res.GPU)
    slopes = gains(problem, assignment, tier)
    mine = slopes.get(queue)
    if mine is None:
        return []
    flatter = {other for other, gain in slopes.items() if other != queue and gain < mine}
    if not flatter:
        return []
    counted = {other: set(asked) for other, _name, _deserved, _held, asked in fair_terms(problem, tier)}
    flat = {
        g
        for g in assignment.placed
        if (gang := problem.gangs[g]).queue in flatter
        and gang.rank <= top
        and any(assignment.count.get(c, 0) and c in counted[gang.queue] for c in gang.classes)
    }
    sizes: dict[int, tuple[set[int], set[int]]] = {}
    for g in sorted(waiting):
        for c in problem.gangs[g].classes:
            shape = problem.shapes[problem.classes[c].shape]
            if problem.classes[c].pods and shape.request[gpu] > 0:
                gangs, nodes = sizes.setdefault(shape.request[gpu], (set(), set()))
                gangs.add(g)
                nodes.update(shape.nodes)
    trades: list[SlopeTrade] = []
    seconds: list[SlopeTrade] = []
    thirds: list[SlopeTrade] = []
    for size in sorted(sizes, reverse=True):
        gangs, nodes = sizes[size]
        on_nodes = {
            g
            for (g, s, node), k in assignment.gang_slots.items()
            if k > 0 and node in nodes and problem.free[node][gpu] >= size and problem.shapes[s].request[gpu] < size
        }
        drop = on_nodes | flat
        if drop:
            trades.append(SlopeTrade(size, frozenset(drop), frozenset(gangs)))
        # The second form: also the gangs, of queues the tier no longer rewards, with a pod as large
        # on such a node.
        whole = {
            g
            for (g, s, node), k in assignment.gang_slots.items()
            if k > 0
            and node in nodes
            and problem.free[node][gpu] >= size
            and problem.shapes[s].request[gpu] >= size
            and slopes.get(problem.gangs[g].queue, mine) == 0
            and problem.gangs[g].queue != queue
        }
        if whole - drop:
            seconds.append(SlopeTrade(size, frozenset(drop | whole), frozenset(gangs), whole_nodes=True))
            # The third form: those of the whole-node gangs whose queue waits with smaller pods of
            # their rank, with the flatter work of the queues the tier still rewards.
            swapped = {
                g
                for g in whole
                if any(
                    gang.queue == problem.gangs[g].queue
                    and gang.rank == problem.gangs[g].rank
                    and gang.index not in assignment.placed
                    and problem.classes[c].pods
                    and problem.shapes[problem.classes[c].shape].request[gpu] < size
                    for gang in problem.candidates
                    for c in gang.classes
                )
            }
            rewarded = {g for g in flat if slopes[problem.gangs[g].queue] != 0}
            if swapped:
                thirds.append(
                    SlopeTrade(size, frozenset(rewarded | swapped), frozenset(gangs), whole_nodes=True, swap=True)
                )
    return trades + seconds + thirds


def _asked(problem: Problem, decision: Assignment) -> int:
    """Every tier's raisable queues' slope trades on ``decision``, against the reference; how many
    were made (the case must make some for the comparison to say anything)."""
    made = 0
    for tier in fair_ranks(problem):
        for queue, top, first, _largest in exchange_module._raisable(problem, decision, tier):
            trades = slope_trade.slope_trades(problem, decision, tier, queue, top, first)
            assert trades == _reference_slope_trades(problem, decision, tier, queue, top, first)
            made += len(trades)
    return made


@settings(max_examples=12, deadline=None, suppress_health_check=SLOW_OK)
@given(nodes=st.sampled_from([40, 64, 80]), seed=st.integers(1, 60), drops=st.integers(0, 3))
def test_slope_trades_as_the_reference(
    tmp_path_factory: pytest.TempPathFactory, nodes: int, seed: int, drops: int
) -> None:
    problem = shape_problem(tmp_path_factory.mktemp("slope"), "contended", nodes, seed)
    decision = greedy(problem)
    _asked(problem, decision)
    rng = random.Random(seed)
    for _ in range(drops):
        rest = exchange_module.without(
            problem, decision, rng.sample(sorted(decision.placed), len(decision.placed) // 3)
        )
        if rest is not None:
            _asked(problem, rest)


def test_slope_trades_are_made_on_the_table_case(tmp_path: Path) -> None:
    """The contended shape in miniature (as tests/test_slope_trade.py) has slope trades to compare."""
    problem = shape_problem(tmp_path, "contended", 80, 1)
    assert _asked(problem, greedy(problem)) > 0


def _exchanged(problem: Problem) -> Any:
    start = greedy(problem)
    queues = exchange_module.trading_queues(problem, start)
    ranks = exchange_module.trading_ranks(problem, start)
    tiers = exchange_module.trading_tiers(problem, start)
    return _facts(exchange_module.exchange(problem, start, _lexicographic, queues, ranks, tiers))


# pure_only (both): swaps a function of the exchange, which the compiled exchange calls bound.
@pytest.mark.pure_only
@pytest.mark.parametrize(("nodes", "seed"), [(80, 1), (64, 3), (80, 7), (48, 11)])
def test_kept_raisable_decides_as_made_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes: int, seed: int
) -> None:
    asked: list[int] = []
    raisable = exchange_module._raisable

    def counting(problem: Problem, assignment: Assignment, tier: int, *of_queue: Any) -> Any:
        asked.append(tier)
        return raisable(problem, assignment, tier, *of_queue)

    with monkeypatch.context() as patch:
        patch.setattr(exchange_module, "_raisable", counting)
        kept = _exchanged(shape_problem(tmp_path, "contended", nodes, seed))
        with_memo = len(asked)
        patch.setattr(
            exchange_module._Run, "raisable", lambda self, assignment, tier: counting(self.problem, assignment, tier)
        )
        afresh = _exchanged(shape_problem(tmp_path, "contended", nodes, seed))
    assert kept == afresh
    assert kept is not None and kept[0], "the case places something"
    assert 0 < with_memo < len(asked) - with_memo, "the memo saves some making"


@pytest.mark.pure_only
def test_the_kept_raisable_is_read_again_and_let_go_when_a_trade_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the table's first case a slope trade is kept (tests/test_slope_trade.py): the memo is read
    more often than it is made, and is made again for the decision the kept trade leaves."""
    made: list[int] = []
    read: list[int] = []
    raisable = exchange_module._Run.raisable

    def counting(self: Any, assignment: Assignment, tier: int) -> Any:
        read.append(tier)
        return raisable(self, assignment, tier)

    plain = exchange_module._raisable

    def making(problem: Problem, assignment: Assignment, tier: int, *of_queue: Any) -> Any:
        made.append(id(assignment))
        return plain(problem, assignment, tier, *of_queue)

    problem = shape_problem(tmp_path, "contended", 80, 1)
    start = greedy(problem)
    tiers = exchange_module.trading_tiers(problem, start)
    with monkeypatch.context() as patch:
        patch.setattr(exchange_module._Run, "raisable", counting)
        patch.setattr(exchange_module, "_raisable", making)
        decided = exchange_module.exchange(problem, start, _lexicographic, [], [], tiers)
    assert _lexicographic(problem, decided) > _lexicographic(problem, start), "a trade is kept"
    assert len(read) > len(made) > 0
    assert len(set(made)) > 1, "made again for the decision a kept trade leaves"
