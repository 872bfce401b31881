"""The slope trade: a fair-share tier's room moved from a flatter queue to a steeper one.

A tier's value sums each queue's concave utility of its share: a queue far below its deserved
share stands on a steeper piece than one nearer it, so a GPU given to the first and taken from the
second raises the tier, and the first may take fewer GPUs than the second gives up for the tier to
stay where it was, leaving the rest to work of a higher priority. The greedy fills the tier queue by
queue; when the steeper queue's pods are large or confined (4-GPU pods with much memory, eligible on
a hundred nodes of one kind), they find every such node's GPUs taken by the time they are tried, the
room then going to the flatter queues' smaller pods, and no single trade of the exchange frees it:
taking out only the small pods on the nodes they need leaves no room elsewhere for the larger,
more important gangs displaced with them, and taking out the flatter queues' work alone frees
room on nodes they cannot use.

So the trade takes out both: the placed gangs with a pod smaller than the steeper queue's waiting
pod on a node among that pod's eligible ones that had room for it before the cycle (any queue, any
rank), and the flatter queues' placed work counted at the tier and ranked no higher than the
steeper queue's waiting gangs (the queues whose next GPU gains the tier less than the steeper
queue's does, read where each stands). The steeper queue's waiting gangs of that pod size go first
into the room this leaves, then everything else as the greedy would (each tier's queues served
towards their shares again, the flatter queues' work back into whatever room is left). The
exchange keeps it only where the objective's first levels rank it strictly higher
(:mod:`vcsat.solver.search.exchange`).

The whole nodes the steeper queue needs may also be held by pods as large as its own, of a queue
the tier no longer rewards: one whose next GPU gains it nothing (it holds its whole deserved
share, where the utility is flat), whichever of its pods hold that share. Where it waits
with smaller pods too, those can hold the same share in the scattered room the flatter queues'
small pods held. No trade above frees those nodes: their pods are not smaller than the waiting
one, and such a queue's gang ranked above the waiting gangs is not among the flatter queues' work
taken out. So, per size, a second trade takes out those gangs on the pool's nodes as well (any
rank): the refill serves that queue towards its share again with whatever of its work fits the
room left, and the rank check refuses the trade where it cannot get back (a tier would fall). The
second forms come after every first form, and the exchange tries one only where the first form of
its size placed none of the waiting gangs: where that one found room for some, the whole nodes it
freed were what they lacked, and a trade tried is one a short cycle does not give to the trades
after it.

The second form can free too much: with the small pods on the pool's nodes and the unrewarded
queue's own lower-ranked work out as well, the steeper queue takes so many whole nodes that the
unrewarded queue, whose share the refill must give back, finds too little room for its smaller
pods and the tier falls. So, per size, a third form swaps only the unrewarded queues' whole-node
gangs whose queue waits with smaller pods of the same rank (the share they held can come back in
those) and takes out with them only the flatter work of the queues the tier still rewards: the
room the refill serves the unrewarded queue back into. The steeper queue gets the nodes those
gangs held, the unrewarded queue keeps its share in smaller pods, and the flatter queue gives up
less than the steeper one gains. The third forms come after every second form, and the exchange
tries one only where its size's second form was refused on the same decision: where the second
was kept or not tried, the third has nothing to add.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import SHARE_SCALE, fair_terms, placed_amount, utility_pieces
from vcsat.solver.problem import Problem


@dataclass(frozen=True)
class SlopeTrade:
    """One trade: the waiting pods' GPU size it is for, the gangs taken out and those placed first;
    ``whole_nodes``: the second form (module docstring), which also takes out the gangs of queues
    the tier no longer rewards holding whole pool nodes; ``swap``: the third form (module
    docstring), which takes those out with the flatter queues' work alone."""

    size: int
    drop: frozenset[int]
    first: frozenset[int]
    whole_nodes: bool = False
    swap: bool = False


def slope_at(fill: int) -> int:
    """The concave utility's slope just above a share of ``fill`` thousandths (0 at a full share):
    what one more thousandth adds there."""
    if fill >= SHARE_SCALE:
        return 0
    # The piece that is lowest at ``fill`` and, where two meet, the flatter of them (the one that
    # goes on lowest beyond it).
    return min(utility_pieces(), key=lambda piece: (piece[0] * fill + piece[1], piece[0]))[0]


def gains(problem: Problem, assignment: Assignment, tier: int) -> dict[str, Fraction]:
    """Per queue the tier measures on GPUs: what its next GPU adds to the tier, per GPU (the
    utility's slope where the queue stands over its deserved GPUs)."""
    gpu = problem.resource_index(res.GPU)
    out: dict[str, Fraction] = {}
    for queue, name, deserved, held, asked in fair_terms(problem, tier):
        if name != res.GPU or deserved <= 0:
            continue
        added = placed_amount(problem, assignment, asked, gpu)
        fill = min(SHARE_SCALE, SHARE_SCALE * (held + added) // deserved)
        out[queue] = Fraction(slope_at(fill), deserved)
    return out


def slope_trades(
    problem: Problem, assignment: Assignment, tier: int, queue: str, top: int, waiting: set[int]
) -> list[SlopeTrade]:
    """The slope trades (module docstring) for ``queue`` at fair-share ``tier``, whose best waiting
    gangs (``waiting``) rank ``top``: one per GPU size of their pods, the largest first, then the
    second forms likewise, where queues the tier no longer rewards hold pool nodes, then the third
    forms, where such a queue also waits with smaller pods of those gangs' rank; none where
    no queue at the tier is flatter or ``queue`` is not measured on GPUs. The small pods on the
    waiting pods' nodes are read off ``gang_slots`` (the greedy's and the trades' decisions name
    every pod's gang there; of a searched decision, only the pods the decode hands out by gang)."""
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
    unrewarded = {other for other in flatter if slopes[other] == 0}  # their next GPU gains the tier nothing
    counted = {other: set(asked) for other, _name, _deserved, _held, asked in fair_terms(problem, tier)}
    flat = {
        g
        for g in assignment.placed
        if (gang := problem.gangs[g]).queue in flatter
        and gang.rank <= top
        and any(assignment.count.get(c, 0) and c in counted[gang.queue] for c in gang.classes)
    }
    # Per GPU size of the waiting pods: the gangs of that size and the nodes such a pod may use.
    # Each shape's nodes are added once: thousands of waiting gangs share a few shapes.
    sizes: dict[int, tuple[set[int], set[int], set[int]]] = {}
    for g in sorted(waiting):
        for c in problem.gangs[g].classes:
            pod_class = problem.classes[c]
            shape = problem.shapes[pod_class.shape]
            if pod_class.pods and shape.request[gpu] > 0:
                gangs, nodes, shapes = sizes.setdefault(shape.request[gpu], (set(), set(), set()))
                gangs.add(g)
                if pod_class.shape not in shapes:
                    shapes.add(pod_class.shape)
                    nodes.update(shape.nodes)
    trades: list[SlopeTrade] = []
    # The second forms after every first form: each takes out more than its first form, and the
    # exchange tries it only where that one placed none of the waiting gangs.
    seconds: list[SlopeTrade] = []
    # The third forms after every second form: the exchange tries one only where its size's
    # second form was refused.
    thirds: list[SlopeTrade] = []
    # The unrewarded queues' own counted work stays out of the third form's drop: the room it
    # holds is where their smaller waiting pods go back to.
    others = frozenset(g for g in flat if problem.gangs[g].queue not in unrewarded)
    smaller: dict[tuple[str, int], set[int]] | None = None  # made when a second form is
    for size in sorted(sizes, reverse=True):
        gangs, nodes, _shapes = sizes[size]
        on_nodes: set[int] = set()
        whole: set[int] = set()  # ``unrewarded``'s gangs holding a pool node with a pod as large
        for (g, s, node), k in assignment.gang_slots.items():
            if k > 0 and node in nodes and problem.free[node][gpu] >= size:
                if problem.shapes[s].request[gpu] < size:
                    on_nodes.add(g)
                elif problem.gangs[g].queue in unrewarded:
                    whole.add(g)
        drop = on_nodes | flat
        if drop:
            trades.append(SlopeTrade(size, frozenset(drop), frozenset(gangs)))
        if whole - drop:
            seconds.append(SlopeTrade(size, frozenset(drop | whole), frozenset(gangs), whole_nodes=True))
            # Only the gangs whose queue waits with smaller pods of their rank: it can get back
            # the share they held with those (the rank check refuses the trade where it cannot).
            if smaller is None:
                smaller = _smaller_waiting(problem, assignment, unrewarded, gpu)
            swapped = {
                g
                for g in whole
                if any(pod < size for pod in smaller.get((problem.gangs[g].queue, problem.gangs[g].rank), ()))
            }
            if swapped:
                thirds.append(SlopeTrade(size, others | swapped, frozenset(gangs), whole_nodes=True, swap=True))
    return trades + seconds + thirds


def _smaller_waiting(
    problem: Problem, assignment: Assignment, queues: set[str], gpu: int
) -> dict[tuple[str, int], set[int]]:
    """Per (queue, rank), of ``queues``, the GPU sizes of the pods its gangs ``assignment`` leaves
    waiting (with pods to place) ask."""
    out: dict[tuple[str, int], set[int]] = {}
    for gang in problem.candidates:
        if gang.queue not in queues or gang.index in assignment.placed:
            continue
        for c in gang.classes:
            pod_class = problem.classes[c]
            if pod_class.pods:
                out.setdefault((gang.queue, gang.rank), set()).add(problem.shapes[pod_class.shape].request[gpu])
    return out
