"""The re-pack trade: a below-share queue's pool freed by moving other work to the pools it may also use.

On some contended clusters a fair-share tier stays short of what a long search reaches while
every trade before this one is refused (benchmarks/RESULTS.md, session 38): a queue Q below its
deserved share at the tier waits with GPU pods confined to some GPU models (a node selector),
while the nodes of those models are held by other work that could run on other models as well
(pods without such a selector, or with a wider one), and the other models' nodes are held partly
by work no fair-share tier as important counts. No single gang's move frees room for Q: the long
search moves the flexible work off Q's pool into the other pools, clearing uncounted work there,
and places Q's pods on what that frees. The clearing trade (:mod:`.clearing_trade`) moves only
pods smaller than Q's largest waiting one off a narrow pool; here the waiting pods may be as small
as any on the pool, and what decides whether a pod moves is whether it may run elsewhere.

So, per fair-share tier and per queue Q it can raise:

- the **pool**: the nodes Q's waiting GPU pods counted at the tier may use;
- the **chosen** pool nodes: those that leave the most room once their movers and uncounted work
  are gone (the fewest GPUs moved first), until they hold what Q's waiting gangs ask; moving work
  off every pool node loses more than it frees;
- the **movers**: the placed gangs (Q's own as well) on the chosen nodes that the tier counts, no
  more important tier does, and whose pods there may also run off the pool; no trade where more
  than :data:`MAX_MOVERS` would move (a mover that finds no room elsewhere is lost, and work a more important tier
  counts lost would lower a tier ranked above the one this trade raises);
- the **cleared**: the placed gangs no fair-share tier as important as this one counts with a pod
  on a chosen node or on a node outside the pool that a mover's pods may use (such work ranks
  below every tier in the objective, and its room is where the movers go).

The trade takes out the movers and the cleared, places Q's waiting gangs counted at the tier
first, then the movers, then everything left out as the greedy would
(:mod:`vcsat.solver.search.exchange`, which keeps it only where the objective's first levels rank
it strictly higher). Nothing here estimates whether the movers find room: the rank check decides.
"""

from __future__ import annotations

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.search.chain import waiting_counted
from vcsat.solver.search.clearing_trade import PoolTrade, counted_upto

MAX_MOVERS = 64
"""At most this many gangs move off the pool: a trade's cost is its refill, and a pool held by
more flexible work than this is one the slope trades serve (each gang moved is one more the refill
must find room for)."""


def repack_trade(
    problem: Problem,
    assignment: Assignment,
    tier: int,
    queue: str,
    of_queue: dict[str, list[Gang]] | None = None,
) -> PoolTrade | None:
    """The re-pack trade (module docstring) for ``queue`` at fair-share ``tier``; None where the
    queue waits with nothing the tier counts on GPUs, or no placed work on its pool may run
    elsewhere; ``of_queue``: :func:`vcsat.solver.search.chain.queued` of the problem, when kept."""
    if res.GPU not in problem.resources:
        return None
    gpu = problem.resource_index(res.GPU)
    asked = next((set(c) for q, name, _d, _h, c in fair_terms(problem, tier) if q == queue and name == res.GPU), None)
    if asked is None:
        return None
    pool: set[int] = set()
    first: set[int] = set()
    needed = 0
    for gang in waiting_counted(problem, assignment, queue, asked, of_queue):
        for c in gang.classes:
            shape = problem.shapes[problem.classes[c].shape]
            if c in asked and problem.classes[c].pods and shape.request[gpu] > 0:
                pool.update(shape.nodes)
                first.add(gang.index)
                needed += shape.request[gpu] * len(problem.classes[c].pods)
    if not pool:
        return None
    counted = counted_upto(problem, tier)
    # Work a more important tier counts stays: a mover that finds no room elsewhere is lost, and
    # there it would lower a tier that ranks above the one this trade raises.
    above = [level for level in fair_ranks(problem) if level < tier]
    kept_above = counted_upto(problem, above[-1]) if above else {}
    # Per pool node, the GPUs free there and those its work could leave: the flexible (a gang's
    # pod that may run off the pool) and the uncounted (no tier this important loses them).
    room = {node: problem.free[node][gpu] for node in pool}
    moved: dict[int, int] = dict.fromkeys(pool, 0)
    on_node: dict[int, set[int]] = {node: set() for node in pool}
    stuck: set[int] = set()
    for (g, s, node), k in assignment.gang_slots.items():
        if k <= 0 or node not in pool:
            continue
        shape = problem.shapes[s]
        gpus = k * shape.request[gpu]
        room[node] -= gpus
        on_node[node].add(g)
        if not _counted(problem.gangs[g], counted):
            room[node] += gpus
        elif not _counted(problem.gangs[g], kept_above) and any(n not in pool for n in shape.nodes):
            room[node] += gpus
            moved[node] += gpus
        else:
            stuck.add(g)
    # The pool nodes that leave the most room, those that move the least first, until they hold
    # what the waiting gangs ask: moving work off every pool node loses more than it frees.
    chosen: list[int] = []
    total = 0
    for node in sorted(pool, key=lambda n: (-room[n], moved[n], n)):
        if total >= needed or room[node] <= 0:
            break
        chosen.append(node)
        total += room[node]
    taken = {g for node in chosen for g in on_node[node]} - stuck
    movers = {g for g in taken if _counted(problem.gangs[g], counted)}
    if len(movers) > MAX_MOVERS or not taken:
        return None
    reach: set[int] = set()
    for (g, s, _node), k in assignment.gang_slots.items():
        if k > 0 and g in movers:
            reach.update(n for n in problem.shapes[s].nodes if n not in pool)
    cleared = {
        g
        for (g, _s, node), k in assignment.gang_slots.items()
        if k > 0 and node in reach and not _counted(problem.gangs[g], counted)
    }
    return PoolTrade(frozenset(taken | cleared), frozenset(first), frozenset(movers))


def _counted(gang: Gang, counted: dict[str, set[int]]) -> bool:
    of_queue = counted.get(gang.queue, set())
    return any(c in of_queue for c in gang.classes)
