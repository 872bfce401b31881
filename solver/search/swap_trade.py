"""The swap trade: a waiting gang of the highest rank placed in the GPUs of a few lower-ranked gangs.

On a saturated cluster the free room is a GPU or two on each of many nodes, and the greedy's fair
fill gives the last of it to a queue's lower-priority gangs (small-GPU pods of a queue below its
deserved share) before the higher-priority gangs of queues above theirs come: those then find no
room. The move trade (:mod:`vcsat.solver.search.relocation`) moves pods out of the way only where
they fit elsewhere, and on a saturated cluster nothing does; the trades across ranks take out every
lower-ranked gang no fair-share level needs (a hundred or more), and the refill over fragmented
room loses more than it gains. A long search instead gives up a few lower-priority gangs' GPUs for
the waiting higher-priority gang and refills their queue's share with work that fits elsewhere.

So here, for each of the oldest few waiting gangs of the highest rank any gang waits at that asks
more GPUs than the whole decision leaves free (one asking less may find room by moves or a refill,
which the other trades try; a swap tried for it takes a trade a short cycle needs for those), the fewest
placed gangs ranked below it whose GPUs add up to what the waiting gang asks: the one of the lowest
rank holding the fewest that suffice, else the largest holders of the lowest ranks until they
suffice. They are not limited to those no fair-share level needs (on a saturated cluster those hold
no GPUs): their queue's own waiting work refills its share where the refill finds room (a queue
below its share waits with small pods that fit the holes), and where it does not, the tier falls
and the trade is not kept. The trade is the exchange's: the decision without them, the waiting
gang placed first, then the rest as the greedy would; kept only where the objective ranks it
strictly higher. A gang like one already tried on the same decision (same queue, rank and pod
shapes) is not tried again. Every list is made in a fixed order, so the same decision gives the
same trades.
"""

from __future__ import annotations

from collections.abc import Iterator

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import gang_order
from vcsat.solver.problem import Problem

MAX_SWAP_LOOKS = 4
"""At most this many waiting gangs (the oldest of the rank, one per kind) are looked at for a swap on
one decision, those the free GPUs would hold included: each swap is a trade (a top-up over the whole
cluster) and a short cycle fits few; where the oldest find room enough, the cluster is not short of
GPUs and the other trades' moves are what place them."""


def swaps(problem: Problem, assignment: Assignment, tried: set[tuple[object, ...]]) -> Iterator[tuple[int, list[int]]]:
    """The swap trades to try on ``assignment``, in order: (waiting gang, gangs taken out), at most
    :data:`MAX_SWAP_LOOKS`. ``tried`` collects the kinds of waiting gang looked at (a kind tried
    on the same decision is not tried again)."""
    if res.GPU not in problem.resources:
        return
    gpu = problem.resource_index(res.GPU)
    waiting = [
        g
        for g in problem.candidates
        if g.admitted and g.index not in assignment.placed and any(problem.classes[c].pods for c in g.classes)
    ]
    if not waiting:
        return
    top = max(g.rank for g in waiting)
    held: dict[int, int] = {}
    for g in sorted(assignment.placed):
        gang = problem.gangs[g]
        if gang.rank >= top:
            continue
        amount = sum(
            assignment.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[gpu] for c in gang.classes
        )
        if amount > 0:
            held[g] = amount
    if not held:
        return
    # The GPUs the decision leaves free anywhere: a waiting gang asking no more than that may find
    # its room by moves or a refill (the other trades' work); only one asking more waits for want
    # of GPUs, and only taking them from lower-ranked work can place it.
    free = sum(max(0, row[gpu]) for row in problem.free) - sum(
        k * problem.shapes[s].request[gpu] for (s, _node), k in assignment.shape_slots.items()
    )
    looked = 0
    for gang in sorted((g for g in waiting if g.rank == top), key=gang_order):
        if looked >= MAX_SWAP_LOOKS:
            return
        shapes = tuple(sorted((problem.classes[c].shape, len(problem.classes[c].pods)) for c in gang.classes))
        key = (gang.queue, gang.rank, shapes)
        if key in tried:
            continue
        tried.add(key)
        looked += 1
        ask = sum(
            len(problem.classes[c].pods) * problem.shapes[problem.classes[c].shape].request[gpu] for c in gang.classes
        )
        if ask <= free:
            continue
        drop = _fewest(problem, held, ask)
        if drop:
            yield gang.index, drop


def _fewest(problem: Problem, held: dict[int, int], ask: int) -> list[int]:
    """The gangs of ``held`` (GPUs each holds) to take out for ``ask`` GPUs: the lowest-ranked one
    holding the fewest that suffice, else the largest holders, lowest rank first, until they do;
    none where all of them do not."""
    lowest = min(problem.gangs[g].rank for g in held)
    single = [(amount, g) for g, amount in held.items() if amount >= ask and problem.gangs[g].rank == lowest]
    if single:
        return [min(single)[1]]
    out: list[int] = []
    total = 0
    for _rank, less, g in sorted((problem.gangs[g].rank, -amount, g) for g, amount in held.items()):
        out.append(g)
        total -= less
        if total >= ask:
            return sorted(out)
    return []
