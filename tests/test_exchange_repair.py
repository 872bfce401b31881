"""A kept trade puts back the higher-priority gangs it lost (:func:`vcsat.solver.search.exchange._repaired`).

A trade that raises a fair-share tier often loses, in its refill, a placed gang of a queue above its
share: no tier counts it, so the trade is kept, and placed work at its priority falls. Where that
queue (or another) holds lower-priority gangs that no fair-share level needs, the same trade takes
those out as well and puts the lost gang back first: the tier stays, placed work ranks higher.

A table over small clusters: two 8-GPU nodes; q1 (deserved 8 GPUs) holds a running 8-GPU pod on a
third node, so its pending work counts in no tier; q2 (deserved 16, 24 with a fourth node) waits
with two (three) 8-GPU gangs. ``best`` places q1's
8-GPU priority-1000 gang on n0 and q1's ``low`` gang (eight 1-GPU pods) on n1; the trade's ``trial``
has q2's 8-GPU gang on n0 instead and has lost q1's priority-1000 gang.

- ``low`` at priority 0: no level needs it, so the repair takes it out and puts the lost gang back
  on n1; the result ranks strictly higher than the trial, every tier held.
- ``low`` at priority 1000 (not below the lost gang): nothing to take out, the trial stands.
- no gang lost (``best`` without the priority-1000 gang): the trial stands.
- two priority-1000 gangs lost (a fourth node: ``best`` has the second on n3, the trial q2's second
  gang there) and room for one: putting one back ranks higher, but not every lost gang is back, so
  the trial stands (a partial put-back changes the later trades' path).
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from builders import gangs, node, queue, snapshot
from test_gap_bound import ALLOCATE
from trade_checks import placed_on

from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.exchange import _repaired, _Run

_levels = importlib.import_module("vcsat.solver.solve")._lexicographic


def _problem(low_priority: int, highs: int = 1) -> Problem:
    nodes = [node(f"n{i}", cpu=64, memory="512Gi", gpus=8) for i in range(2 + highs)]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, kwargs in [
        ("run", dict(queue="q1", node="n2", gpus=8, created=-100)),
        ("high", dict(queue="q1", priority=1000, gpus=8, created=1)),
        ("low", dict(queue="q1", priority=low_priority, gpus=1, size=8, created=2)),
        ("q2big", dict(queue="q2", priority=0, gpus=8, created=3)),
    ]:
        p, g = gangs(prefix, highs + 1 if prefix == "q2big" else highs if prefix == "high" else 1, cpu="1", **kwargs)
        pods += p
        groups += g
    queues = [queue("q1", deserved={"nvidia.com/gpu": 8}), queue("q2", deserved={"nvidia.com/gpu": 8 * (highs + 1)})]
    return build_problem(snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues), ALLOCATE)


# (low's priority, whether ``best`` places the priority-1000 gangs, how many, whether the repair puts them back)
CASES = [(0, True, 1, True), (1000, True, 1, False), (0, False, 1, False), (0, True, 2, False)]


@pytest.mark.parametrize(("low_priority", "high_placed", "highs", "repaired"), CASES)
def test_a_kept_trade_puts_back_the_gang_it_lost(
    low_priority: int, high_placed: bool, highs: int, repaired: bool
) -> None:
    problem = _problem(low_priority, highs)
    second = {"ns/high-1": "n3"} if highs == 2 else {}
    best = placed_on(problem, {**({"ns/high-0": "n0", **second} if high_placed else {}), "ns/low-0": "n1"})
    trial = placed_on(problem, {"ns/q2big-0": "n0", **({"ns/q2big-1": "n3"} if highs == 2 else {}), "ns/low-0": "n1"})
    trial_rank = _levels(problem, trial)
    out, out_rank = _repaired(problem, _levels, best, trial, trial_rank, _Run(problem, lambda: True))
    high = next(g.index for g in problem.gangs if g.key == "ns/high-0")
    assert (high in out.placed) == repaired
    assert (out is trial) == (not repaired)
    assert out_rank == _levels(problem, out)
    if repaired:
        assert out_rank > trial_rank
        # The tiers (q2's gang on n0) are held; what ranks higher is placed work.
        q2 = next(g.index for g in problem.gangs if g.key == "ns/q2big-0")
        assert q2 in out.placed
