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

Where that finds no chain for the queue, a second look (``flatter``) may take one more kind of
victim: the placed work, of the waiting gang's rank or below, of the queues at the tier whose next
GPU gains the tier less than Q's does (flatter: :func:`vcsat.solver.search.slope_trade.gains`; a
queue with a larger deserved share, or one at its share), counted at this tier and at no more
important one. On the contended files a queue a few GPUs short of its share waits with 8- and
4-GPU pods on a pool whose whole-node pods have nowhere to go but nodes held by a queue further
below its share with a larger deserved share (benchmarks/RESULTS.md, session 34): the long search
gives that queue's GPUs to the nearer one, which raises the tier. The movers' second link then
takes, on the node where they cost the tier least, only as many victims as the pod needs
(:func:`_cheapest`), and a gang joins only where the tier, read with Q's change and every flatter
queue's loss, rises. The first look runs first so that where it finds a chain, the trades are
those it finds. The two looks read once what they share (:class:`Layout`: the decision's room and
pods, each queue's waiting gangs at a tier, the nodes with room per shape), and a queue with no
waiting gang a look would look at (none with a GPU pod on a narrow pool) stops both before the
flatter queues are read (the second look's walk over them is its dear part at 10,000 nodes:
benchmarks/RESULTS.md, sessions 34-35). A look's victims for a pod that finds no room
(:func:`_cheapest`) are read only on the nodes holding one (a refill pod's shape spans hundreds of
nodes, a few of which hold a victim), and each victim's cost once per look (:func:`_memo`):
those reads were most of the second and third looks' time at 1,000 nodes (session 36).

Where neither finds one, a third look (``swap``) may take the placed work, of any rank, of the
queues at their deserved share at the tier and at every more important level counting them
(:func:`_at_share`: their share is capped there, so GPUs beyond it add nothing): a victim ranked
above the waiting gang, which no look before takes. On the contended files such a queue holds
whole-node pods of its top priority on the pool the waiting pods need while its own small gangs
of the same rank wait; the long search drops the former, places the latter, and the queue below
its share takes the pool (benchmarks/RESULTS.md, session 35). A gang joins only where the at-share
queues it takes from are made up (:func:`_refill`): their own waiting gangs counted at the tier,
highest rank first, placed whole in the copy of the room (into room left, or room that victims of
the first look's kinds give up, the cheapest first) until, at every level up to the tier, what
they lose is within what they held beyond their share plus what is placed back; the tier is then
read with the waiting queue's gain alone (the at-share queues' terms stay capped). Target nodes
freed by victims alone go before those whose occupants must move (a mover needs room the refill
needs too).

Where none of the three finds one, a fourth look (``patient``, with the flatter look's victims)
carries each waiting gang on where its step does not raise the tier as read, instead of leaving it
out: the copy of the room counts a victim gang as lost whole, while the trade's top-up puts back
every victim that fits whole into the room left. On the contended files the second look's first
gang reads as a loss (the flatter queue's 4-pod gangs go whole for one mover's pod) although the
long search makes the same move and the flatter queue keeps its work elsewhere
(benchmarks/RESULTS.md, session 41). So, after the last gang, the victims that fit whole back into
the copy by first fit (:func:`_put_back`) give back what they cost, and the trade is offered where
the tier read so rises; otherwise the trade as at the last gang that raised the tier, if any.

The trade is the exchange's: the decision without the movers and victims, Q's chosen waiting
gangs placed first, then the movers, then everything left out as the greedy would (victims
included, into whatever room is left), kept only where the objective's first levels rank it
strictly higher (:mod:`vcsat.solver.search.exchange`). The copy of the room only chooses which
trade to try; the top-ups decide what is placed. Every list is made in a fixed order, so the same
decision gives the same trades.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from operator import ge

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms, placed_amount
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.search.relocation import Room, eject, first_fit, row_without, tier_change
from vcsat.solver.search.slope_trade import gains

MAX_LOOKS = 16
"""At most this many of a queue's waiting gangs are looked at for one chain (each reads the room on
its pool's nodes and, where a mover finds no room left, on the mover's eligible nodes)."""


REFILL_PODS = 128
"""The third look (``swap``) places at most this many pods of the at-share queues' waiting gangs
in its copy of the room, over all the waiting gangs it looks at: each reads the room over the pod's
eligible nodes (hundreds for the small pods that refill), and a look is asked of the deadline
only before it starts; where they run out, the look offers what it has found."""

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


@dataclass(frozen=True)
class Layout:
    """Where a decision's pods are, as the chain's looks read it: the room each node has left, the
    placed pods per node and per gang, each placed gang's largest pod's GPUs, and per node the
    gangs there holding GPUs. It depends on the decision alone, so the exchange makes it once per
    decision and every look on that decision (per tier, per queue, and the second look with the
    flatter queues' work) reads it: made per look, it was most of a look's time on a large cluster.
    What the looks derive from it alone is kept with it as they first ask (the nodes with room for
    each shape, each queue's waiting gangs counted at a tier), so the second look reads what the
    first made. Read only (a look's trial room keeps its changes aside,
    :class:`~vcsat.solver.search.relocation.Room`)."""

    base: list[list[int]]
    on_node: dict[int, list[tuple[int, int, int]]]
    of_gang: dict[int, list[tuple[int, int, int]]]
    largest: dict[int, int]
    holding: dict[int, list[int]] = field(default_factory=dict)
    """Per node, the gangs with a pod holding GPUs there, in index order."""
    queued: dict[str, list[Gang]] | None = None
    """:func:`queued` of the problem, when the caller keeps it (made per call otherwise)."""
    with_room: dict[int, list[int]] = field(default_factory=dict)
    """Per shape, its eligible nodes with room for one of its pods in :attr:`base`
    (:func:`~vcsat.solver.search.relocation.first_fit`'s, made as the looks first ask)."""
    waiting: dict[tuple[int, str], list[Gang]] = field(default_factory=dict)
    """Per (tier, queue), :func:`waiting_counted` of the decision, made as the looks first ask."""

    @staticmethod
    def of(problem: Problem, assignment: Assignment, queued: dict[str, list[Gang]] | None = None) -> Layout:
        """``assignment``'s layout (GPU sizes read only where the problem has GPUs); ``queued``:
        :func:`queued` of ``problem``, shared by every layout of one exchange."""
        on_node: dict[int, list[tuple[int, int, int]]] = {}
        of_gang: dict[int, list[tuple[int, int, int]]] = {}
        for (g, s, node), k in sorted(assignment.gang_slots.items()):
            if k > 0:
                on_node.setdefault(node, []).append((g, s, k))
                of_gang.setdefault(g, []).append((s, node, k))
        gpu = problem.resource_index(res.GPU) if res.GPU in problem.resources else None
        largest = (
            {g: max((problem.shapes[s].request[gpu] for s, _n, _k in slots), default=0) for g, slots in of_gang.items()}
            if gpu is not None
            else {}
        )
        holding = {node: sorted({g for g, _s, _k in there if largest.get(g, 0) > 0}) for node, there in on_node.items()}
        return Layout(problem.room_left(assignment.shape_slots), on_node, of_gang, largest, holding, queued)

    def waiting_at(
        self, problem: Problem, assignment: Assignment, tier: int, queue: str, counted: Collection[int]
    ) -> list[Gang]:
        """:func:`waiting_counted` of the layout's decision for ``queue`` at ``tier`` (whose counted
        classes are ``counted``), made once and read by every look. Callers only read it."""
        found = self.waiting.get((tier, queue))
        if found is None:
            found = self.waiting[(tier, queue)] = waiting_counted(problem, assignment, queue, counted, self.queued)
        return found


def queued(problem: Problem) -> dict[str, list[Gang]]:
    """Per queue, its candidate gangs with pods to place, in the problem's order: what
    :func:`waiting_counted` walks, instead of every candidate of every queue (tens of thousands at
    10,000 nodes) on each call."""
    out: dict[str, list[Gang]] = {}
    for gang in problem.candidates:
        if any(problem.classes[c].pods for c in gang.classes):
            out.setdefault(gang.queue, []).append(gang)
    return out


def waiting_counted(
    problem: Problem,
    assignment: Assignment,
    queue: str,
    counted: Collection[int],
    of_queue: dict[str, list[Gang]] | None = None,
) -> list[Gang]:
    """``queue``'s gangs ``assignment`` leaves waiting with pods in a class ``counted`` (the classes a
    fair-share tier counts), in the problem's order; ``of_queue``: :func:`queued` of the problem,
    when the caller keeps it (the same gangs, read off the queue's own)."""
    gangs = of_queue.get(queue, []) if of_queue is not None else problem.candidates
    return [
        gang
        for gang in gangs
        if gang.queue == queue
        and gang.index not in assignment.placed
        and any(c in counted and problem.classes[c].pods for c in gang.classes)
    ]


def chains(
    problem: Problem,
    assignment: Assignment,
    tier: int,
    queue: str,
    spare: set[int],
    *,
    flatter: bool = False,
    swap: bool = False,
    patient: bool = False,
    layout: Callable[[], Layout] | None = None,
    passed: list[int] | None = None,
) -> Iterator[Chain]:
    """The chain trade (module docstring) for ``queue`` at fair-share ``tier``, if the copy of the
    room finds one that raises the tier; ``spare``: the placed gangs no fair-share level as
    important as ``tier`` needs (each used only where ranked below the waiting gang); ``flatter``:
    the flatter queues' work counted at the tier may be taken out too (module docstring); ``swap``:
    the work of the queues at their share may be taken out where their own waiting gangs take its
    place (module docstring); ``patient``: gangs carried on where the tier as read does not rise,
    the victims that fit back counted at the end (module docstring); ``layout``: gives
    :meth:`Layout.of` ``assignment`` where the caller keeps it (made here otherwise); ``passed``,
    when given, is told the waiting gangs a look that is not patient leaves out because the tier as
    read does not rise with them (where there are none, the patient look finds what this one does:
    it carries only such gangs)."""
    if res.GPU not in problem.resources:
        return
    gpu = problem.resource_index(res.GPU)
    of_queue = {q: set(asked) for q, name, _d, _h, asked in fair_terms(problem, tier) if name == res.GPU}
    counted = of_queue.get(queue)
    if counted is None:
        return
    found = layout() if layout is not None else Layout.of(problem, assignment)
    waiting = found.waiting_at(problem, assignment, tier, queue, counted)
    waiting = sorted(waiting, key=lambda gang: (-gang.rank, gang.created, gang.index))[:MAX_LOOKS]
    if not any(_looked_at(problem, gang, gpu) for gang in waiting):
        return  # no gang the loop below would look at: nothing for either look, the flatter queues unread
    flat = _flatter(problem, assignment, tier, queue, of_queue) if flatter else {}
    if flatter and not flat:
        return
    swaps = _at_share(problem, assignment, tier, queue) if swap else {}
    if swap and not swaps:
        return
    base, on_node, of_gang, largest = found.base, found.on_node, found.of_gang, found.largest

    def counted_gpus(g: int, counted: Collection[int] = counted) -> int:
        return sum(
            assignment.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[gpu]
            for c in problem.gangs[g].classes
            if c in counted
        )

    def cost_of(g: int) -> int:
        """What taking victim ``g`` out costs the tier's counted GPUs (its queue's, ``queue``'s or a
        flatter one's); for a queue at its share, its GPUs (its own waiting gangs must make them up)."""
        if problem.gangs[g].queue == queue:
            return counted_gpus(g)
        levels = swaps.get(problem.gangs[g].queue)
        return counted_gpus(g, levels[-1][0]) if levels else flat_gpus(g)

    cost = _memo(cost_of)

    def flat_gpus(g: int) -> int:
        """What taking ``g`` out costs a flatter queue's term at the tier (0 where it is no flat victim)."""
        of = flat.get(problem.gangs[g].queue)
        return counted_gpus(g, of) if of is not None else 0

    failed: set[tuple[int, int, int]] = set()  # gangs like one that found no chain: not looked at again
    pools: dict[tuple[int, int], set[int]] = {}  # per (size, rank) of a waiting gang, its movers' victims
    room = Room(base)
    with_room = found.with_room  # of ``base``, which no look changes: shared by every look on it
    first: set[int] = set()
    movers: set[int] = set()
    victims: set[int] = set()
    gained = lost = 0
    flat_lost: dict[str, int] = {}  # per flatter queue, the GPUs its victims take from its term (negative)
    # Per queue at its share, per level it is counted at: its share's slack there less what its
    # victims take, plus what its own waiting gangs placed in the copy of the room give back.
    slack = {other: [left for _counted, left in levels] for other, levels in swaps.items()}
    refilled: set[int] = set()  # the at-share queues' waiting gangs placed in the copy
    budget = [REFILL_PODS]  # the refill pods the look may still place (:data:`REFILL_PODS`)
    change = 0
    chosen: Chain | None = None  # the trade as at the last gang that raised the tier
    for gang in waiting:
        if swaps and budget[0] <= 0:
            break
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
            if other.queue in swaps:
                return True  # a queue at its share: its own waiting gangs must make up what it loses
            if other.queue in flat and other.rank <= rank and flat_gpus(g) > 0:
                return True  # a flatter queue's work of the waiting gang's rank or below, counted here only
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
            there = [g for g in found.holding.get(node, ()) if g not in movers and g not in victims]
            if not there:
                continue
            # One pass, ``victim`` asked once per gang: what its victims cost, what its movers
            # carry, and whether one mover is larger than the waiting pod (then not an option).
            own = moved = 0
            for g in there:
                if victim(g):
                    own += cost(g)
                else:
                    carried = largest.get(g, 0)
                    if carried > size:
                        break
                    moved += carried
            else:
                if not any(g in first for g in there):
                    options.append((own, moved, node, there))
        # A queue at its share is made up by its own waiting gangs, where a mover must find room:
        # the nodes its victims free go first.
        options.sort(key=(lambda o: (o[1], o[0], o[2])) if swaps else (lambda o: (o[0], o[1], o[2])))
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
                            # The victims of a gang of this size and rank are those of the gangs
                            # before of the same (``victim`` reads nothing else that changes).
                            of_kind = pools.get((size, gang.rank))
                            if of_kind is None:
                                of_kind = pools[(size, gang.rank)] = {other for other in of_gang if victim(other)}
                            pool = of_kind - movers - out_movers
                        taken: set[int] = set()
                        free = pool - victims - out_victims
                        if flat or swaps:
                            spot = _cheapest(problem, s, trial, on_node, of_gang, free, taken, cost)
                        else:
                            spot = eject(problem, s, trial, on_node, of_gang, free, taken)
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
        now_slack = slack
        now_refilled: set[int] = set()
        if swaps:
            # The victims a refill pod may take out, made when one first needs them.
            refill_pool: list[set[int]] = []
            taken_before = movers | out_movers | victims

            def spot_for(
                s: int,
                trial: Room = trial,
                out_victims: set[int] = out_victims,
                victim: Callable[[int], bool] = victim,
                taken_before: set[int] = taken_before,
                refill_pool: list[set[int]] = refill_pool,
            ) -> int | None:
                """A node for one of a queue at its share's own waiting pods: room left, or room
                the victims no more important level needs leave (not the queues at their share's);
                none once the look's refill pods are spent."""
                if budget[0] <= 0:
                    return None
                budget[0] -= 1
                spot = first_fit(problem, s, trial, with_room)
                if spot is None:
                    if not refill_pool:
                        refill_pool.append(
                            {g for g in of_gang if problem.gangs[g].queue not in swaps and victim(g)} - taken_before
                        )
                    taken: set[int] = set()
                    spot = _cheapest(problem, s, trial, on_node, of_gang, refill_pool[0] - out_victims, taken, cost)
                    out_victims |= taken
                return spot

            found_back = _refill(
                problem, assignment, trial, spot_for, swaps, slack, out_victims, refilled, counted_gpus, found.queued
            )
            if found_back is None:
                continue  # a queue at its share would fall below it at a level as important as the tier
            now_slack, now_refilled = found_back
        now_gained = gained + size * need
        now_lost = lost + sum(counted_gpus(g) for g in out_victims if problem.gangs[g].queue == queue)
        now_flat = dict(flat_lost)
        for g in out_victims:
            if problem.gangs[g].queue in flat:
                now_flat[problem.gangs[g].queue] = now_flat.get(problem.gangs[g].queue, 0) - flat_gpus(g)
        now = tier_change(problem, assignment, tier, {**now_flat, queue: now_gained - now_lost})
        if now <= change and not patient:
            if passed is not None:
                passed.append(gang.index)
            continue
        room, gained, lost, flat_lost = trial, now_gained, now_lost, now_flat
        slack = now_slack
        refilled |= now_refilled
        first.add(gang.index)
        failed.discard(kind)
        movers |= out_movers
        victims |= out_victims
        if now > change:
            change = now
            chosen = Chain(frozenset(first), frozenset(movers), frozenset(victims))
    if patient and first and (chosen is None or chosen.first != first):
        # The gangs carried past the last rise: their victims' gangs that fit whole into the room
        # the copy has left go back (the trade's top-up places them last, as the greedy would), and
        # the tier is read again with what they give back.
        back_lost, back_flat = lost, dict(flat_lost)
        for g in _put_back(problem, room, victims, of_gang, with_room):
            if problem.gangs[g].queue == queue:
                back_lost -= counted_gpus(g)
            elif problem.gangs[g].queue in back_flat:
                back_flat[problem.gangs[g].queue] += flat_gpus(g)
        if tier_change(problem, assignment, tier, {**back_flat, queue: gained - back_lost}) > change:
            chosen = Chain(frozenset(first), frozenset(movers), frozenset(victims))
    if chosen is not None:
        yield chosen


def _put_back(
    problem: Problem,
    room: Room,
    victims: Collection[int],
    of_gang: dict[int, list[tuple[int, int, int]]],
    with_room: dict[int, list[int]],
) -> list[int]:
    """The ``victims`` whose pods all fit, by first fit, into ``room`` as the ones before left it
    (lowest index first; ``room`` itself is not changed)."""
    trial = room.copy()
    back: list[int] = []
    for g in sorted(victims):
        attempt = trial.copy()
        for s, _node, k in of_gang[g]:
            request = problem.shapes[s].request
            for _ in range(k):
                spot = first_fit(problem, s, attempt, with_room)
                if spot is None:
                    break
                attempt.add(spot, tuple(-a for a in request), 1)
            else:
                continue
            break
        else:
            trial = attempt
            back.append(g)
    return back


def _memo(read: Callable[[int], int]) -> Callable[[int], int]:
    """``read`` remembered per gang: a look asks a victim's cost again for every pod it weighs that
    victim for (:func:`_cheapest`, per node of each pod's shape), and what the cost reads (the
    decision, the tier's counted classes, the flatter and at-share queues) stays while the look runs."""
    known: dict[int, int] = {}

    def remembered(g: int) -> int:
        value = known.get(g)
        if value is None:
            value = known[g] = read(g)
        return value

    return remembered


def _looked_at(problem: Problem, gang: Gang, gpu: int) -> bool:
    """Whether :func:`chains` looks at waiting ``gang`` whatever the decision: its largest pod asks
    GPUs and is confined to a narrow pool (:data:`NARROW`)."""
    classes = [c for c in gang.classes if problem.classes[c].pods]
    if not classes:
        return False
    top = max(classes, key=lambda c: (problem.shapes[problem.classes[c].shape].request[gpu], -c))
    shape = problem.shapes[problem.classes[top].shape]
    return shape.request[gpu] > 0 and len(shape.nodes) <= max(NARROW_NODES, len(problem.nodes) * NARROW)


def _flatter(
    problem: Problem, assignment: Assignment, tier: int, queue: str, of_queue: dict[str, set[int]]
) -> dict[str, set[int]]:
    """Per queue at ``tier`` whose next GPU gains the tier less than ``queue``'s does (flatter:
    :func:`vcsat.solver.search.slope_trade.gains`), the classes the tier counts and no more
    important fair-share level does: the flatter queue's work taking which lowers no level above."""
    slopes = gains(problem, assignment, tier)
    mine = slopes.get(queue)
    if mine is None:
        return {}
    flatter = sorted(other for other, gain in slopes.items() if other != queue and gain < mine)
    if not flatter:
        return {}
    above: dict[str, set[int]] = {}
    for level in fair_ranks(problem):
        if level >= tier:
            break
        for q, _name, _d, _h, asked in fair_terms(problem, level):
            above.setdefault(q, set()).update(asked)
    return {other: of_queue[other] - above.get(other, set()) for other in flatter if other in of_queue}


def _at_share(problem: Problem, assignment: Assignment, tier: int, queue: str) -> dict[str, list[tuple[set[int], int]]]:
    """Per queue other than ``queue`` that ``tier`` counts on GPUs and that holds at least its
    deserved GPUs at ``tier`` and at every more important fair-share level counting it (where its
    share is capped: GPUs it holds beyond it add nothing), each such level's counted classes and
    slack (the GPUs held beyond the deserved ones), most important first, ``tier`` last."""
    gpu = problem.resource_index(res.GPU)
    out: dict[str, list[tuple[set[int], int]]] = {}
    short: set[str] = set()
    for level in fair_ranks(problem):
        if level > tier:
            break
        for other, name, deserved, held, asked in fair_terms(problem, level):
            if other == queue or other in short:
                continue
            left = held + placed_amount(problem, assignment, asked, gpu) - deserved if name == res.GPU else -1
            if left < 0:
                short.add(other)
                out.pop(other, None)
                continue
            out.setdefault(other, []).append((set(asked), left))
    at_tier = {other for other, name, _d, _h, _a in fair_terms(problem, tier) if name == res.GPU}
    return {other: levels for other, levels in out.items() if other in at_tier}


def _refill(
    problem: Problem,
    assignment: Assignment,
    trial: Room,
    spot_for: Callable[[int], int | None],
    swaps: dict[str, list[tuple[set[int], int]]],
    slack: dict[str, list[int]],
    victims: Collection[int],
    refilled: set[int],
    counted_gpus: Callable[[int, Collection[int]], int],
    of_queue: dict[str, list[Gang]] | None = None,
) -> tuple[dict[str, list[int]], set[int]] | None:
    """Whether the queues at their share that lose ``victims`` stay at it: per such queue, its own
    waiting gangs counted at the tier (highest rank, then oldest, first; whole, each pod by first fit
    in ``trial``, which keeps them) placed until, at every level it is counted at (``swaps``), what
    its victims take is within the slack left (``slack``) plus what they give back. The slack left
    after and the gangs placed; None where a queue stays short at some level. ``of_queue``:
    :func:`queued` of the problem, when the caller keeps it (each queue's own gangs walked, not all)."""
    gpu = problem.resource_index(res.GPU)
    now = {other: list(left) for other, left in slack.items()}
    placed: set[int] = set()
    for other in sorted({problem.gangs[g].queue for g in victims} & swaps.keys()):
        levels = swaps[other]
        left = now[other]
        for i, (counted, _left) in enumerate(levels):
            left[i] -= sum(counted_gpus(g, counted) for g in victims if problem.gangs[g].queue == other)
        if min(left) >= 0:
            continue
        waiting = sorted(
            (
                gang
                for gang in waiting_counted(problem, assignment, other, levels[-1][0], of_queue)
                if gang.index not in refilled
            ),
            key=lambda gang: (-gang.rank, gang.created, gang.index),
        )

        def gives(gang: Gang, counted: set[int]) -> int:
            return sum(
                len(problem.classes[c].pods) * problem.shapes[problem.classes[c].shape].request[gpu]
                for c in gang.classes
                if c in counted
            )

        # All of them placed would not make it up: no refill tried (most looks end here, cheaply).
        if any(left[i] + sum(gives(gang, counted) for gang in waiting) < 0 for i, (counted, _l) in enumerate(levels)):
            return None
        full: set[int] = set()  # shapes a pod found no node for: later pods of them are not tried
        for gang in waiting:
            pods = [(c, pod) for c in gang.classes for pod in problem.classes[c].pods]
            # Only gangs that give back at a level still short: the others would take room for nothing.
            if not any(left[i] < 0 and any(c in counted for c, _pod in pods) for i, (counted, _l) in enumerate(levels)):
                continue
            if any(problem.classes[c].shape in full for c, _pod in pods):
                continue
            spots: list[tuple[int, int]] = []
            for c, _pod in pods:
                s = problem.classes[c].shape
                spot = spot_for(s)
                if spot is None:
                    full.add(s)
                    break
                trial.add(spot, tuple(-a for a in problem.shapes[s].request), 1)
                spots.append((s, spot))
            if len(spots) < len(pods):
                for s, spot in spots:  # not whole: its pods taken back out
                    trial.add(spot, problem.shapes[s].request, 1)
                continue
            placed.add(gang.index)
            for i, (counted, _left) in enumerate(levels):
                left[i] += sum(
                    problem.shapes[problem.classes[c].shape].request[gpu] for c, _pod in pods if c in counted
                )
            if min(left) >= 0:
                break
        if min(left) < 0:
            return None
    return now, placed


def _cheapest(
    problem: Problem,
    shape_index: int,
    room: Room,
    on_node: dict[int, list[tuple[int, int, int]]],
    of_gang: dict[int, list[tuple[int, int, int]]],
    pool: set[int],
    victims: set[int],
    cost: Callable[[int], int],
) -> int | None:
    """Like :func:`vcsat.solver.search.relocation.eject`, for victims that cost the tier: the node
    among the shape's eligible ones where one of its pods fits once the cheapest victims there go
    (cheapest first, only as many as the pod needs), the node whose victims cost least (the first
    such); those victims added to ``victims``, their room freed in ``room``. None if there is none."""
    shape = problem.shapes[shape_index]
    request = shape.request
    best: tuple[int, int, list[int]] | None = None
    # Per node, the victims of ``pool`` there not taken yet. Where the pool is the smaller (a few of
    # the shape's hundreds of nodes hold one on the contended files), read from the pool's side in
    # one pass (``of_gang`` is ``on_node`` inverted): the other nodes are passed over unread.
    held: dict[int, set[int]] | None = None
    if len(pool) < len(shape.nodes):
        held = {}
        for g in pool:
            if g not in victims:
                for _s, n, _k in of_gang.get(g, ()):
                    at = held.get(n)
                    if at is None:
                        held[n] = {g}
                    else:
                        at.add(g)
    for node in shape.nodes if held is None else [n for n in shape.nodes if n in held]:
        free = (
            held[node]
            if held is not None
            else {g for g, _s, _k in on_node.get(node, ()) if g in pool and g not in victims}
        )
        if not free:
            continue
        row = room.row(node)
        if all(map(ge, row, request)):
            continue  # the pod fits with no victim gone: a node no victim is taken on
        if best is not None and min(map(cost, free)) >= best[1]:
            continue  # costs are never negative: its cheapest victim alone costs no less than the best
        there = sorted(free, key=lambda g: (cost(g), g))
        row = list(row)
        going: list[int] = []
        spent = 0
        for g in there:
            if all(map(ge, row, request)):
                break
            if best is not None and spent >= best[1]:
                break  # costs are never negative: this node can no longer cost less than the best
            going.append(g)
            spent += cost(g)
            for s, n, k in of_gang[g]:
                if n == node:
                    for r, amount in enumerate(problem.shapes[s].request):
                        row[r] += k * amount
        fits = all(map(ge, row, request))
        if going and fits and (best is None or spent < best[1]):
            best = (node, spent, going)
            if spent == 0:
                break  # none cheaper
    if best is None:
        return None
    for g in best[2]:
        victims.add(g)
        for s, n, k in of_gang[g]:
            room.add(n, problem.shapes[s].request, k)
    return best[0]
