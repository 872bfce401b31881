"""The queues' trades (:func:`vcsat.solver.search.exchange._queue_trades`) start with the queues a
fair-share tier can raise with their waiting gangs: a short cycle fits a few trades, and a trade
that raises a tier ranks above any that raises placed work only.

Two nodes of 8 GPUs. ``qa`` holds all of ``n0`` (its deserved share, so no tier counts it) and has
``ap`` (priority 0, 1 GPU) on ``n1``, waiting with ``aw`` (priority 1000, 1 GPU); ``qb`` has four
1-GPU pods of priority −100 on ``n1`` and waits with ``bw`` (priority 0, one pod of 4 GPUs): its
first tier counts ``bw`` and nothing it holds. Both queues have a waiting gang ranked above a
placed one of theirs, ``qa`` first by name. With one trade, ``qb``'s goes first and ``bw`` runs.
"""

from __future__ import annotations

import importlib
from typing import Any

from builders import gangs, node, queue, snapshot
from test_gap_bound import ALLOCATE
from trade_checks import assert_a_kept_trade, placed_on

from vcsat.model import Snapshot
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.exchange import trading_queues

_levels = importlib.import_module("vcsat.solver.solve")._lexicographic


def _case() -> Snapshot:
    nodes = [node(f"n{i}", cpu=64, memory="512Gi", gpus=8) for i in range(2)]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("ra", 1, dict(queue="qa", node="n0", gpus=8, priority=1000, created=-100, cpu="1")),
        ("ap", 1, dict(queue="qa", priority=0, gpus=1, cpu="1", created=1)),
        ("aw", 1, dict(queue="qa", priority=1000, gpus=1, cpu="1", created=2)),
        ("bp", 4, dict(queue="qb", priority=-100, gpus=1, cpu="1", created=3)),
        ("bw", 1, dict(queue="qb", priority=0, gpus=4, cpu="1", created=10)),
    ]:
        p, g = gangs(prefix, count, **kwargs)
        pods += p
        groups += g
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=[queue("qa"), queue("qb")])


def _trades(count: int) -> tuple[Any, Any, Any]:
    """The problem, the hand-made decision (``ap`` and ``bp`` on ``n1``), and the queues' trades on
    it with ``count`` trades allowed."""
    problem = build_problem(_case(), ALLOCATE)
    start = placed_on(problem, {"ns/ap-0": "n1", **{f"ns/bp-{j}": "n1" for j in range(4)}})
    left = [count]

    def go() -> bool:
        left[0] -= 1
        return left[0] >= 0

    queues = trading_queues(problem, start)
    assert [q for q, _ in queues] == ["qa", "qb"]  # both may trade, qa first by name
    run = exchange_module._Run(problem, go)
    result, _rank = exchange_module._queue_trades(problem, _levels, start, _levels(problem, start), queues, run)
    return problem, start, result


def test_the_queue_a_tier_can_raise_trades_first() -> None:
    problem, start, result = _trades(1)
    assert_a_kept_trade(problem, start, result, _levels)
    bw = next(g.index for g in problem.gangs if g.key == "ns/bw-0")
    assert bw in result.placed  # qb's trade ran with the one trade there was
    assert list(fair_share_values(problem, result).values()) > list(fair_share_values(problem, start).values())


def test_with_no_trade_allowed_nothing_changes() -> None:
    _problem, start, result = _trades(0)
    assert result is start
