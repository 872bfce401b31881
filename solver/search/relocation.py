"""The relocation trade: pods that may go elsewhere moved off the nodes a confined waiting gang needs.

On a crowded cluster a queue below its deserved share often waits with pods that few nodes take
(4-GPU pods with much memory, eligible on a hundred nodes of one kind, out of a thousand), while
the holes those nodes have left (1 to 3 GPUs) hold other pods, of any queue, eligible on many more
nodes: the greedy placed them first, and best fit sent them into those holes. The exchange's other
trades take out every small pod on the waiting pods' nodes, or a queue's whole lower-priority
work, and the greedy fill that follows loses some of it: hundreds of gangs placed again over a
cluster with no room to spare. A search finds the few moves that help, but not in a 1 s cycle.

So this trade moves only what must move, for one waiting gang at a time (an ejection chain of depth
one or two): the nodes among the waiting pod's eligible ones with the fewest GPUs to free, one per
pod it needs, and on those the placed gangs with a smaller GPU pod eligible on more nodes than the
waiting pod (the movers). Before the trade is tried, the movers' pods are placed, in a copy of the
room, onto other nodes with room (first fit over their eligible nodes); where one finds none, the
placed gangs that no fair-share level needs (the exchange's trades across queues take the same
set: taken out together, every queue still holds its deserved share at every level they count in,
whatever their rank; the caller hands them in) on a node
where it would then fit are taken out as well (the second link of the chain). Where even that
leaves some mover without room, the trade is tried only where the fair-share tier, with the waiting
pods placed and those movers lost, would rise (:func:`tier_change`; each lost mover counted as if
the tier counted it, which errs towards not trying). The trade itself is the exchange's: the decision
without the movers and those others, the waiting gang placed first, then the movers, then
everything left out as the greedy would (:mod:`vcsat.solver.search.top_up`), kept only where the
objective's first levels rank it strictly higher (:mod:`vcsat.solver.search.exchange`). The copy of
the room only chooses which trades to try; the top-ups decide what is placed.

The waiting gangs are those a fair-share tier can still raise (:func:`vcsat.solver.search.
exchange.trading_tiers`: their queue below its deserved share there, counted there), most important
tier first, then by rank and age; a gang like one already tried on the same decision (same queue,
rank, pod shape and count) is not tried again. Every list is made in a fixed order, so the same
decision gives the same trades.

The move trade (:func:`moves`) is the same chain for a gang no fair-share tier can raise: a
top-priority gang of whole-node pods (8-GPU ones) whose queue is at or above its deserved share
waits while the whole nodes it needs hold other queues' smaller pods placed this cycle. The trades
that free whole nodes by taking such pods out lose some of them in the refill and lower a tier, so
they are refused, and nothing else places it (benchmarks/RESULTS.md, sessions 31 and 32). Here the
waiting gangs are those of the highest rank any gang waits at, of the queues no tier can raise,
oldest first; the movers any placed gang with a smaller GPU pod on the chosen nodes (wherever else
it may go); the second link's gangs only those ranked below the waiting gang that no fair-share
level needs; and the trade is tried only where the copy of the room finds every mover a place, so
that it moves work and loses none (a tier can then only stay or rise, and placed work at the
waiting gang's rank rises). It is kept on the exchange's terms, as every trade.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from operator import ge

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import SHARE_SCALE, fair_terms, placed_amount, share_utility
from vcsat.solver.problem import Problem

MAX_LOOKS = 48
"""At most this many waiting gangs are looked at on one decision (each look reads the room around
its nodes, about a millisecond at 1,000 nodes: 27-55 ms for 48 on the contended and over-served
1k files): the trades kept on the tuning files were all among the first 50 tried, and a cycle with
no trade to make stops looking soon (benchmarks/RESULTS.md, session 29)."""

MAX_MOVE_LOOKS = 8
"""At most this many waiting gangs of the highest rank are looked at for a move trade on one
decision (a look at 1,000 nodes: 10-20 ms for the room and the first gangs, benchmarks/RESULTS.md,
session 32)."""


@dataclass(frozen=True)
class Relocation:
    """One trade: the waiting gang placed first, the gangs moved off its nodes (placed second), and
    the gangs no fair-share level needs taken out to make room for them elsewhere."""

    gang: int
    movers: frozenset[int]
    victims: frozenset[int]

    @property
    def drop(self) -> list[int]:
        """Every gang taken out, in order."""
        return sorted(self.movers | self.victims)


class Room:
    """The room a decision leaves, per node, with changes kept aside (a trial's copy)."""

    def __init__(self, base: list[list[int]]) -> None:
        self.base = base
        self.changed: dict[int, list[int]] = {}

    def copy(self) -> Room:
        """A copy to try changes on, leaving this one as it is."""
        out = Room(self.base)
        out.changed = {node: list(row) for node, row in self.changed.items()}
        return out

    def row(self, node: int) -> list[int]:
        return self.changed.get(node) or self.base[node]

    def add(self, node: int, request: tuple[int, ...], k: int) -> None:
        row = self.changed.setdefault(node, list(self.base[node]))
        for r, amount in enumerate(request):
            row[r] += k * amount

    def fits(self, node: int, request: tuple[int, ...]) -> bool:
        # Pairwise in C (``map``): the looks and moves ask this tens of thousands of times a decision.
        return all(map(ge, self.row(node), request))


def tier_change(problem: Problem, assignment: Assignment, tier: int, gpus: dict[str, int]) -> int:
    """How much the fair-share ``tier`` would change were each queue of ``gpus`` to hold that many
    more GPUs (fewer, where negative) counted there than ``assignment`` gives it: each queue's
    concave utility read at its share before and after, as the tier's value sums them."""
    gpu = problem.resource_index(res.GPU)
    change = 0
    for queue, name, deserved, held, asked in fair_terms(problem, tier):
        if name != res.GPU or deserved <= 0 or not gpus.get(queue):
            continue
        now = held + placed_amount(problem, assignment, asked, gpu)
        before = min(SHARE_SCALE, SHARE_SCALE * now // deserved)
        after = min(SHARE_SCALE, SHARE_SCALE * max(0, now + gpus[queue]) // deserved)
        change += share_utility(after) - share_utility(before)
    return change


def _waiting(problem: Problem, assignment: Assignment, tiers: list[int]) -> list[tuple[int, int]]:
    """The waiting gangs a fair-share tier of ``tiers`` can raise (module docstring), in order, each
    with the first such tier."""
    if res.GPU not in problem.resources:
        return []
    gpu = problem.resource_index(res.GPU)
    out: list[tuple[int, int]] = []
    seen: set[int] = set()
    for tier in tiers:
        below: dict[str, set[int]] = {}
        for queue, name, deserved, held, asked in fair_terms(problem, tier):
            if name != res.GPU:
                continue
            if held + placed_amount(problem, assignment, asked, gpu) < deserved:
                below[queue] = set(asked)
        gangs = [
            gang
            for gang in problem.candidates
            if gang.queue in below
            and gang.index not in assignment.placed
            and gang.index not in seen
            and any(c in below[gang.queue] and problem.classes[c].pods for c in gang.classes)
        ]
        gangs.sort(key=lambda gang: (-gang.rank, gang.created, gang.index))
        for gang in gangs:
            seen.add(gang.index)
            out.append((gang.index, tier))
    return out


def relocations(
    problem: Problem, assignment: Assignment, tiers: list[int], spare: set[int], tried: set[tuple[object, ...]]
) -> Iterator[Relocation]:
    """The relocation trades (module docstring) on ``assignment`` for the gangs ``tiers`` can raise,
    in order; ``spare``: the placed gangs no fair-share level needs (the second link's); ``tried``:
    the kinds of waiting gang already tried on this decision, added to as each is yielded."""
    yield from _trades(problem, assignment, _waiting(problem, assignment, tiers)[:MAX_LOOKS], spare, tried)


def moves(
    problem: Problem,
    assignment: Assignment,
    spare: set[int],
    tried: set[tuple[object, ...]],
    raisable: Collection[str] = (),
) -> Iterator[Relocation]:
    """The move trades (module docstring) on ``assignment``: for the waiting gangs of the highest
    rank any gang waits at, whatever their queue's share, oldest first, those where the copy of
    the room finds every mover a place (``spare``: the placed gangs ranked below them that no
    fair-share level needs, the second link's); ``tried`` as for :func:`relocations`."""
    waiting = [
        gang
        for gang in problem.candidates
        if gang.index not in assignment.placed and any(problem.classes[c].pods for c in gang.classes)
    ]
    if not waiting:
        return
    top = max(gang.rank for gang in waiting)
    first = sorted(
        (gang for gang in waiting if gang.rank == top and gang.queue not in raisable),
        key=lambda gang: (gang.created, gang.index),
    )
    yield from _trades(problem, assignment, [(gang.index, None) for gang in first[:MAX_MOVE_LOOKS]], spare, tried)


def _trades(
    problem: Problem,
    assignment: Assignment,
    waiting: Sequence[tuple[int, int | None]],
    spare: set[int],
    tried: set[tuple[object, ...]],
) -> Iterator[Relocation]:
    """The trades for ``waiting`` (gang, the fair-share tier that can rise with it; None for a
    move trade, which tries only where every mover finds a place), in order."""
    if res.GPU not in problem.resources:
        return
    gpu = problem.resource_index(res.GPU)
    base = problem.room_left(assignment.shape_slots)
    on_node: dict[int, list[tuple[int, int, int]]] = {}
    for (g, s, node), k in sorted(assignment.gang_slots.items()):
        if k > 0:
            on_node.setdefault(node, []).append((g, s, k))
    of_gang: dict[int, list[tuple[int, int, int]]] = {}
    for node, slots in on_node.items():
        for g, s, k in slots:
            of_gang.setdefault(g, []).append((s, node, k))
    with_room: dict[int, list[int]] = {}  # per shape, its nodes with room for one pod in ``base``
    for index, tier in waiting:
        gang = problem.gangs[index]
        classes = [c for c in gang.classes if problem.classes[c].pods]
        largest = max(classes, key=lambda c: (problem.shapes[problem.classes[c].shape].request[gpu], -c))
        shape = problem.shapes[problem.classes[largest].shape]
        size = shape.request[gpu]
        need = gang.need or sum(len(problem.classes[c].pods) for c in classes)
        kind = (gang.queue, gang.rank, shape.index, need)
        if size <= 0 or kind in tried:
            continue
        tried.add(kind)
        trade = _relocation(
            problem, index, shape.index, need, base, on_node, of_gang, spare, with_room, None if tier is not None else 0
        )
        if trade is None:
            continue
        relocation, lost = trade
        if lost:
            if tier is None:
                continue  # a move trade moves, it loses nothing
            # Some movers would find no room: tried only where the tier, with the waiting pods
            # placed and those movers lost, would rise (each queue's utility read where it ends).
            lost[gang.queue] = lost.get(gang.queue, 0) - size * need
            if tier_change(problem, assignment, tier, {queue: -amount for queue, amount in lost.items()}) <= 0:
                continue
        yield relocation


def _relocation(
    problem: Problem,
    gang: int,
    shape_index: int,
    need: int,
    base: list[list[int]],
    on_node: dict[int, list[tuple[int, int, int]]],
    of_gang: dict[int, list[tuple[int, int, int]]],
    spare: set[int],
    with_room: dict[int, list[int]],
    eligible: int | None = None,
) -> tuple[Relocation, dict[str, int]] | None:
    """The trade for one waiting gang whose largest pod has shape ``shape_index`` and which needs
    ``need`` pods, with the GPUs per queue of the movers the copy of the room finds no place for;
    None where its nodes cannot take its pods (module docstring). Movers are the placed gangs with
    a smaller GPU pod eligible on more than ``eligible`` nodes (the waiting pod's own count when
    not given)."""
    gpu = problem.resource_index(res.GPU)
    shape = problem.shapes[shape_index]
    size = shape.request[gpu]
    if eligible is None:
        eligible = len(shape.nodes)
    # The nodes that cannot take the pod now but can once their movers go: fewest GPUs to free first.
    chosen: list[tuple[int, int, int]] = []
    for node in shape.nodes:
        free = base[node][gpu]
        if free >= size or problem.free[node][gpu] < size:
            continue
        movable = sum(
            k * problem.shapes[s].request[gpu]
            for g, s, k in on_node.get(node, ())
            if 0 < problem.shapes[s].request[gpu] < size and len(problem.shapes[s].nodes) > eligible
        )
        if free + movable >= size:
            chosen.append((size - free, -free, node))
    chosen.sort()
    if len(chosen) < need:
        return None
    targets = [node for _, _, node in chosen[:need]]
    movers = {
        g
        for node in targets
        for g, s, _k in on_node.get(node, ())
        if 0 < problem.shapes[s].request[gpu] < size and len(problem.shapes[s].nodes) > eligible
    }
    room = Room(base)
    for g in sorted(movers):
        for s, node, k in of_gang.get(g, ()):
            room.add(node, problem.shapes[s].request, k)
    taken = tuple(-amount for amount in shape.request)
    for node in targets:
        if not room.fits(node, shape.request):
            return None  # not room for the waiting pod even with the movers gone (memory, cpu)
        room.add(node, taken, 1)
    victims: set[int] = set()
    lost: dict[str, int] = {}
    for g in sorted(movers):
        queue = problem.gangs[g].queue
        for s, _node, k in of_gang.get(g, ()):
            mover = problem.shapes[s]
            for _ in range(k):
                spot = first_fit(problem, mover.index, room, with_room)
                if spot is None:
                    spot = eject(problem, mover.index, room, on_node, of_gang, spare - movers, victims)
                if spot is None:
                    lost[queue] = lost.get(queue, 0) + mover.request[gpu]
                else:
                    room.add(spot, tuple(-amount for amount in mover.request), 1)
    return Relocation(gang, frozenset(movers), frozenset(victims)), lost


def first_fit(problem: Problem, shape_index: int, room: Room, with_room: dict[int, list[int]]) -> int | None:
    """The first node (by index) among the shape's eligible ones with room for one of its pods in
    ``room``: those with room before the trade, then those the trade changed (the waiting gang's
    pods already taken there)."""
    shape = problem.shapes[shape_index]
    nodes = with_room.get(shape_index)
    if nodes is None:
        base = room.base
        nodes = [node for node in shape.nodes if all(map(ge, base[node], shape.request))]
        with_room[shape_index] = nodes
    for node in nodes:
        if room.fits(node, shape.request):
            return node
    # The changed nodes are read only where none of those fits: the set of the shape's nodes (up
    # to every node) made on every call was most of a call's cost in the chain looks, which ask
    # thousands of times a decision, and the first node with room before the trade that the
    # trade left alone fits (benchmarks/RESULTS.md, session 36).
    if not room.changed:
        return None
    eligible = set(shape.nodes)
    for node in sorted(node for node in room.changed if node in eligible):
        if room.fits(node, shape.request):
            return node
    return None


def row_without(
    problem: Problem, room: Room, node: int, gangs: Collection[int], of_gang: dict[int, list[tuple[int, int, int]]]
) -> list[int]:
    """``node``'s room left in ``room`` with ``gangs``' pods on it taken out (per resource)."""
    row = list(room.row(node))
    for g in gangs:
        for s, n, k in of_gang[g]:
            if n == node:
                for r, amount in enumerate(problem.shapes[s].request):
                    row[r] += k * amount
    return row


def eject(
    problem: Problem,
    shape_index: int,
    room: Room,
    on_node: dict[int, list[tuple[int, int, int]]],
    of_gang: dict[int, list[tuple[int, int, int]]],
    spare: set[int],
    victims: set[int],
) -> int | None:
    """A node among the shape's eligible ones where one of its pods fits once the ``spare`` gangs
    there are taken out (added to ``victims``, their room freed in ``room``); None if there is none."""
    shape = problem.shapes[shape_index]
    # The nodes holding a ``spare`` gang, where those are fewer than the shape's nodes: the others
    # are passed over without reading their pods (as :func:`vcsat.solver.search.chain._cheapest`).
    marked = (
        {n for g in spare if g not in victims for _s, n, _k in of_gang.get(g, ())}
        if len(spare) < len(shape.nodes)
        else None
    )
    for node in shape.nodes:
        if marked is not None and node not in marked:
            continue
        there = sorted({g for g, _s, _k in on_node.get(node, ()) if g in spare and g not in victims})
        if not there:
            continue
        row = row_without(problem, room, node, there, of_gang)
        if all(map(ge, row, shape.request)):
            for g in there:
                victims.add(g)
                for s, n, k in of_gang[g]:
                    room.add(n, problem.shapes[s].request, k)
            return node
    return None
