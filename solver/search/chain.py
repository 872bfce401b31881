"""The chain trade: whole nodes of a narrow pool cleared for a below-share queue's large waiting pods.

On the contended clusters a fair-share tier stays a few points short of the best a long search
finds (benchmarks/RESULTS.md, session 33): a queue Q below its deserved share at the tier waits
with large pods (8-GPU ones) that few nodes take (a pool of 22-71 nodes of one kind), and every
node of that pool is held by gangs the greedy placed first: whole-node pods of the same size, of
any queue and of any rank, eligible on that pool and more, and small pods that count in no tier
as important as this one, or are Q's own lower-ranked work. The exchange's other trades take out
everything smaller than the waiting pod on the pool, or a queue's whole lower-priority work, and
the greedy refill that follows loses some of it and lowers a tier; the relocation and move trades
move only pods smaller than the waiting one, so the pool's whole-node pods never move. The long
search raises the tier with a chain: the whole-node pods leave the pool nodes Q's pods need for
other nodes of their own eligible ones, which are freed by taking out small pods that no tier
that important needs, or Q's own smaller, lower-ranked gangs (Q's tier counts its large pods more
than the small ones it loses).

So, per fair-share tier and per queue Q it can raise, Q's waiting gangs counted there whose largest
pod is confined to a narrow pool (:data:`NARROW`; highest rank, then oldest, first; at most
:data:`MAX_LOOKS`), each in turn, in one copy of the room:

- the pool nodes that could take the waiting pod before the cycle and can once their occupants
  holding GPUs go, one per pod: those the copy already has room on first, then those freed by
  taking out the fewest of Q's counted GPUs, then by moving the fewest GPUs; a node's occupants go
  whole: the **victims** (placed gangs ranked below the waiting gang that no fair-share level as
  important as the tier needs, handed in as ``spare``, and Q's own lower-ranked gangs whose pods
  are all smaller than the waiting pod; Q's own of the waiting gang's rank are not: the tiers
  count a queue's work of its highest priorities, so those count with it) and the **movers**
  (every other gang whose pods are no larger than the waiting pod, of any queue and rank);
- each mover's pods placed in the copy by first fit over their eligible nodes, or, where none has
  room, on a node freed by taking out victims there (the second link of the chain);
- the gang is taken into the trade only where every mover finds a place and the tier, read with
  the trade's pods of Q placed and its victims of Q lost (:func:`vcsat.solver.search.relocation.
  tier_change`), rises more than without it.

The trade is the exchange's: the decision without the movers and victims, Q's chosen waiting
gangs placed first, then the movers, then everything left out as the greedy would (victims
included, into whatever room is left), kept only where the objective's first levels rank it
strictly higher (:mod:`vcsat.solver.search.exchange`). The copy of the room only chooses which
trade to try; the top-ups decide what is placed. Every list is made in a fixed order, so the same
decision gives the same trades.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import fair_terms
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.search.relocation import Room, eject, first_fit, row_without, tier_change

MAX_LOOKS = 16
"""At most this many of a queue's waiting gangs are looked at for one chain (each reads the room on
its pool's nodes and, where a mover finds no room left, on the mover's eligible nodes)."""


NARROW = 0.125
"""A pool is narrow where its pod may use at most this share of the nodes (the pools the long
search's chains free on the contended 1,000-node files: 22-71 nodes; a pod eligible on hundreds
of nodes is the other trades' to place, and looking over its nodes costs the look its time)."""

NARROW_NODES = 16
"""On a small cluster, a pool of at most this many nodes is narrow whatever its share."""


@dataclass(frozen=True)
class Chain:
    """One trade: the waiting gangs placed first, the gangs moved (placed second) and those taken out."""

    first: frozenset[int]
    movers: frozenset[int]
    victims: frozenset[int]

    @property
    def drop(self) -> list[int]:
        """Every gang taken out, in order."""
        return sorted(self.movers | self.victims)


def waiting_counted(problem: Problem, assignment: Assignment, queue: str, counted: Collection[int]) -> list[Gang]:
    """``queue``'s gangs ``assignment`` leaves waiting with pods in a class ``counted`` (the classes a
    fair-share tier counts), in the problem's order."""
    return [
        gang
        for gang in problem.candidates
        if gang.queue == queue
        and gang.index not in assignment.placed
        and any(c in counted and problem.classes[c].pods for c in gang.classes)
    ]


def chains(problem: Problem, assignment: Assignment, tier: int, queue: str, spare: set[int]) -> Iterator[Chain]:
    """The chain trade (module docstring) for ``queue`` at fair-share ``tier``, if the copy of the
    room finds one that raises the tier; ``spare``: the placed gangs no fair-share level as
    important as ``tier`` needs (each used only where ranked below the waiting gang)."""
    if res.GPU not in problem.resources:
        return
    gpu = problem.resource_index(res.GPU)
    counted = next(
        (set(asked) for q, name, _d, _h, asked in fair_terms(problem, tier) if q == queue and name == res.GPU), None
    )
    if counted is None:
        return
    waiting = waiting_counted(problem, assignment, queue, counted)
    if not waiting:
        return

    waiting = sorted(waiting, key=lambda gang: (-gang.rank, gang.created, gang.index))[:MAX_LOOKS]
    base = problem.room_left(assignment.shape_slots)
    on_node: dict[int, list[tuple[int, int, int]]] = {}
    of_gang: dict[int, list[tuple[int, int, int]]] = {}
    for (g, s, node), k in sorted(assignment.gang_slots.items()):
        if k > 0:
            on_node.setdefault(node, []).append((g, s, k))
            of_gang.setdefault(g, []).append((s, node, k))
    largest = {
        g: max((problem.shapes[s].request[gpu] for s, _n, _k in slots), default=0) for g, slots in of_gang.items()
    }

    def counted_gpus(g: int) -> int:
        return sum(
            assignment.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[gpu]
            for c in problem.gangs[g].classes
            if c in counted
        )

    owners = {g: (problem.gangs[g].queue, problem.gangs[g].rank) for g in of_gang}
    failed: set[tuple[int, int, int]] = set()  # gangs like one that found no chain: not looked at again
    room = Room(base)
    with_room: dict[int, list[int]] = {}
    first: set[int] = set()
    movers: set[int] = set()
    victims: set[int] = set()
    gained = lost = 0
    change = 0
    for gang in waiting:
        classes = [c for c in gang.classes if problem.classes[c].pods]
        top = max(classes, key=lambda c: (problem.shapes[problem.classes[c].shape].request[gpu], -c))
        shape = problem.shapes[problem.classes[top].shape]
        size = shape.request[gpu]
        need = gang.need or sum(len(problem.classes[c].pods) for c in classes)
        kind = (gang.rank, shape.index, need)
        if size <= 0 or kind in failed or len(shape.nodes) > max(NARROW_NODES, len(problem.nodes) * NARROW):
            continue
        failed.add(kind)  # taken out again where the gang joins the trade

        def victim(g: int, size: int = size, rank: int = gang.rank) -> bool:
            other = problem.gangs[g]
            if other.rank >= rank:
                return False
            return g in spare or (other.queue == queue and largest.get(g, 0) < size)

        trial = room.copy()
        out_movers: set[int] = set()
        out_victims: set[int] = set()
        # The pool nodes that can take the pod once their occupants go, cheapest first.
        options: list[tuple[int, int, int, list[int]]] = []
        for node in shape.nodes:
            if problem.free[node][gpu] < size:
                continue
            if trial.fits(node, shape.request):
                options.append((0, 0, node, []))
                continue
            # Only the pods holding GPUs go: pods of no GPU stay where they are (where they leave
            # too little cpu or memory, the node is not one of the options).
            there = sorted(
                {
                    g
                    for g, _s, _k in on_node.get(node, ())
                    if largest.get(g, 0) > 0 and g not in movers and g not in victims
                }
            )
            if not there or any(not victim(g) and largest.get(g, 0) > size for g in there):
                continue
            if any(g in first for g in there):
                continue
            own = sum(counted_gpus(g) for g in there if victim(g) and problem.gangs[g].queue == queue)
            moved = sum(largest.get(g, 0) for g in there if not victim(g))
            options.append((own, moved, node, there))
        options.sort(key=lambda o: (o[0], o[1], o[2]))
        targets: list[int] = []
        for _own, _moved, node, there in options:
            if len(targets) == need:
                break
            going = [g for g in there if g not in out_movers and g not in out_victims]
            row = row_without(problem, trial, node, going, of_gang)
            if any(row[r] < amount for r, amount in enumerate(shape.request)):
                continue  # not room even with them gone (memory, cpu)
            for g in going:
                for s, n, k in of_gang[g]:
                    trial.add(n, problem.shapes[s].request, k)
                (out_victims if victim(g) else out_movers).add(g)
            trial.add(node, tuple(-a for a in shape.request), 1)
            targets.append(node)
        if len(targets) < need:
            continue
        # Each mover's pods into room elsewhere, or where victims there make room.
        placed_all = True
        pool: set[int] | None = None  # the victims a mover may take out, made when one first needs them
        for g in sorted(out_movers):
            for s, _node, k in of_gang[g]:
                for _ in range(k):
                    spot = first_fit(problem, s, trial, with_room)
                    if spot is None:
                        if pool is None:
                            pool = {other for other in owners if victim(other)} - movers - out_movers
                        taken: set[int] = set()
                        spot = eject(problem, s, trial, on_node, of_gang, pool - victims - out_victims, taken)
                        out_victims |= taken
                    if spot is None:
                        placed_all = False
                        break
                    trial.add(spot, tuple(-a for a in problem.shapes[s].request), 1)
                if not placed_all:
                    break
            if not placed_all:
                break
        if not placed_all:
            continue
        now_gained = gained + size * need
        now_lost = lost + sum(counted_gpus(g) for g in out_victims if problem.gangs[g].queue == queue)
        now = tier_change(problem, assignment, tier, {queue: now_gained - now_lost})
        if now <= change:
            continue
        room, gained, lost, change = trial, now_gained, now_lost, now
        first.add(gang.index)
        failed.discard(kind)
        movers |= out_movers
        victims |= out_victims
    if first:
        yield Chain(frozenset(first), frozenset(movers), frozenset(victims))
