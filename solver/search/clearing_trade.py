"""The clearing trade: a below-share queue's pool cleared of the work no tier that important counts.

On some contended clusters a fair-share tier stays well short of what a long search reaches
(benchmarks/RESULTS.md, session 37): a queue Q below its deserved share at the tier waits with
whole-node pods (8-GPU ones, on a pool of a few dozen nodes) and smaller ones, while the pool's
nodes are held partly by smaller pods the tier counts (Q's own and other queues' work of their top
priorities) and partly by pods it does not count (work below every queue's counted priorities, or
of queues at their share, which no fair-share level as important counts). Taking out the uncounted
pods alone frees no whole node: the counted small pods stay spread over the pool. Taking out the
pool's counted pods as well loses them (and the tier) unless they find room elsewhere, and the
room elsewhere is held by uncounted pods too. The long search does both at once: it moves the
counted small pods off the pool into room the uncounted pods leave elsewhere, and places Q's
whole-node pods on the nodes that frees.

So, per fair-share tier and per queue Q it can raise, with a few waiting gangs counted there
(:data:`MAX_WAITING`), one of them with its largest GPU pod on a narrow pool
(:data:`vcsat.solver.search.chain.NARROW`): elsewhere the slope trades place them, and a trade
tried is a trade a short cycle does not give to them:

- the **pool**: the nodes those gangs' GPU pods may use;
- the **movers**: the placed gangs the tier or a more important one counts (any queue, any rank)
  with a pod on the pool smaller than Q's largest waiting pod;
- the **cleared**: the placed gangs no fair-share tier as important as this one counts (of any
  rank: such work ranks below every tier in the objective) with a pod on the pool or on a node a
  mover's pods may use.

The trade takes out the movers and the cleared, places Q's waiting gangs counted at the tier
first, then the movers, then everything left out as the greedy would
(:mod:`vcsat.solver.search.exchange`, which keeps it only where the objective's first levels rank
it strictly higher). What the tier gains is Q's; what the movers fail to find room for is lost
at the tier, so the rank check alone decides: nothing here estimates it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.search.chain import NARROW, NARROW_NODES, waiting_counted

MAX_WAITING = 16
"""At most this many waiting gangs of the queue counted at the tier: a queue waiting with more (its
small pods on wide pools, on the generated clusters) is the slope trades' to serve, and a clearing
trade tried for it is refused there, a trade a short cycle does not give to them
(benchmarks/RESULTS.md, session 37)."""


@dataclass(frozen=True)
class PoolTrade:
    """One trade that takes gangs off a pool (a clearing trade, or a re-pack trade of
    :mod:`vcsat.solver.search.repack_trade`): the gangs taken out (movers and cleared), the waiting
    gangs placed first, and the movers, placed next."""

    drop: frozenset[int]
    first: frozenset[int]
    movers: frozenset[int]


def counted_upto(problem: Problem, tier: int) -> dict[str, set[int]]:
    """Per queue, the classes a fair-share level as important as ``tier`` or more counts (of any
    resource): work outside them can go without lowering any such level."""
    out: dict[str, set[int]] = {}
    for level in fair_ranks(problem):
        if level > tier:
            break
        for queue, _name, _deserved, _held, asked in fair_terms(problem, level):
            out.setdefault(queue, set()).update(asked)
    return out


def _counted(gang: Gang, counted: dict[str, set[int]]) -> bool:
    of_queue: Collection[int] = counted.get(gang.queue, ())
    return any(c in of_queue for c in gang.classes)


def clearing_trade(
    problem: Problem,
    assignment: Assignment,
    tier: int,
    queue: str,
    of_queue: dict[str, list[Gang]] | None = None,
) -> PoolTrade | None:
    """The clearing trade (module docstring) for ``queue`` at fair-share ``tier``; None where the
    queue waits with nothing the tier counts on GPUs or nothing would be cleared; ``of_queue``:
    :func:`vcsat.solver.search.chain.queued` of the problem, when kept."""
    if res.GPU not in problem.resources:
        return None
    gpu = problem.resource_index(res.GPU)
    asked = next((set(c) for q, name, _d, _h, c in fair_terms(problem, tier) if q == queue and name == res.GPU), None)
    if asked is None:
        return None
    narrow = max(NARROW_NODES, len(problem.nodes) * NARROW)
    waiting = []
    any_narrow = False
    for gang in waiting_counted(problem, assignment, queue, asked, of_queue):
        shapes = [
            problem.shapes[problem.classes[c].shape]
            for c in gang.classes
            if c in asked and problem.classes[c].pods and problem.shapes[problem.classes[c].shape].request[gpu] > 0
        ]
        if shapes:
            waiting.append((gang, shapes))
            any_narrow = any_narrow or len(max(shapes, key=lambda shape: shape.request[gpu]).nodes) <= narrow
    if not any_narrow or len(waiting) > MAX_WAITING:
        return None
    pool: set[int] = set()
    largest = 0
    for _gang, shapes in waiting:
        for shape in shapes:
            pool.update(shape.nodes)
            largest = max(largest, shape.request[gpu])
    if not pool:
        return None
    counted = counted_upto(problem, tier)
    slots = [(g, s, node) for (g, s, node), k in assignment.gang_slots.items() if k > 0]
    movers = {
        g
        for g, s, node in slots
        if node in pool and problem.shapes[s].request[gpu] < largest and _counted(problem.gangs[g], counted)
    }
    # Where the movers may go: their pods' eligible nodes, all of them, cleared as the pool is.
    reach = set(pool)
    for g, s, _node in slots:
        if g in movers:
            reach.update(problem.shapes[s].nodes)
    cleared = {g for g, _s, node in slots if node in reach and not _counted(problem.gangs[g], counted)}
    if not cleared:
        return None
    return PoolTrade(frozenset(cleared | movers), frozenset(g.index for g, _s in waiting), frozenset(movers))
