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

A swap whose victims' queue keeps every fair-share tier whatever the refill finds comes first: a
tier counts a queue's share in whole thousandths, rounded down, so a queue holds up to a step's
worth of GPUs more than its tier value needs, and gangs holding no more than that (at every tier
that counts them) can go without any tier falling (:func:`slack_swaps`). On a saturated cluster
the oldest waiting gangs ask more than that, and their swaps lower the tier; the long search places
a younger one that fits the step instead.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import gang_order
from vcsat.solver.objectives.fairness import SHARE_SCALE, fair_ranks, fair_terms, placed_amount
from vcsat.solver.problem import Gang, Problem

MAX_SWAP_LOOKS = 4
"""At most this many waiting gangs (the oldest of the rank, one per kind) are looked at for a swap on
one decision, those the free GPUs would hold included: each swap is a trade (a top-up over the whole
cluster) and a short cycle fits few; where the oldest find room enough, the cluster is not short of
GPUs and the other trades' moves are what place them."""
MAX_SLACK_SWAPS = 4
"""At most this many slack swaps (:func:`slack_swaps`) are offered on one decision: each is a trade."""


def swaps(problem: Problem, assignment: Assignment, tried: set[tuple[object, ...]]) -> Iterator[tuple[int, list[int]]]:
    """The swap trades to try on ``assignment``, in order: (waiting gang, gangs taken out), at most
    :data:`MAX_SWAP_LOOKS`. ``tried`` collects the kinds of waiting gang looked at (a kind tried
    on the same decision is not tried again)."""
    found = _waiting_at_top(problem, assignment)
    if found is None:
        return
    gpu, waiting, top = found
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


def _waiting_at_top(problem: Problem, assignment: Assignment) -> tuple[int, list[Gang], int] | None:
    """The GPU's resource index, the admitted gangs left waiting with pods to place, and the highest
    rank among them; None when no pod asks for GPUs or nothing waits."""
    if res.GPU not in problem.resources:
        return None
    waiting = [
        g
        for g in problem.candidates
        if g.admitted and g.index not in assignment.placed and any(problem.classes[c].pods for c in g.classes)
    ]
    if not waiting:
        return None
    return problem.resource_index(res.GPU), waiting, max(g.rank for g in waiting)


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


def slack_swaps(
    problem: Problem, assignment: Assignment, tried: set[tuple[object, ...]], keep: Collection[str] = ()
) -> Iterator[tuple[int, list[int]]]:
    """The slack swaps to try on ``assignment``, in order: (waiting gang, gangs taken out), at most
    :data:`MAX_SLACK_SWAPS`: per waiting gang of the highest rank any gang waits at, oldest first,
    the lower-ranked placed gangs of one queue whose GPUs suffice for it and that the queue can lose
    without any fair-share tier falling (:func:`_slack`): the one of the lowest rank holding the
    fewest, else the largest holders of the lowest ranks until they suffice. ``tried`` collects the
    kinds of waiting gang looked at, as :func:`swaps`' does (its own keys). No gang of a queue in
    ``keep`` is taken: the step trades (:mod:`vcsat.solver.search.step_trade`) raise a tier with the
    same GPUs of the queues they give to or take from, and a tier ranks above placed work."""
    found = _waiting_at_top(problem, assignment)
    if found is None:
        return
    gpu, waiting, top = found
    slack, counted = _slack(problem, assignment)
    # Per queue, its placed lower-ranked GPU holders with what each takes off each tier's slack.
    holders: dict[str, list[tuple[int, int, dict[int, int]]]] = {}
    for g in sorted(assignment.placed):
        gang = problem.gangs[g]
        if gang.rank >= top or gang.queue in keep:
            continue
        amount, loss = _loss(problem, assignment, gang, gpu, counted)
        if amount > 0 and all(slack.get((gang.queue, level), 0) >= k for level, k in loss.items()):
            holders.setdefault(gang.queue, []).append((g, amount, loss))
    if not holders:
        return
    offered = 0
    for gang in sorted((g for g in waiting if g.rank == top), key=gang_order):
        if offered >= MAX_SLACK_SWAPS:
            return
        shapes = tuple(sorted((problem.classes[c].shape, len(problem.classes[c].pods)) for c in gang.classes))
        key = ("slack", gang.queue, gang.rank, shapes)
        if key in tried:
            continue
        tried.add(key)
        ask = sum(
            len(problem.classes[c].pods) * problem.shapes[problem.classes[c].shape].request[gpu] for c in gang.classes
        )
        if ask <= 0:
            continue
        for queue in sorted(holders):
            drop = _within(problem, holders[queue], slack, queue, ask)
            if drop:
                offered += 1
                yield gang.index, drop
                break


Slack = dict[tuple[str, int], int]
"""Per (queue, fair-share tier): GPUs the queue may lose there with the tier's value the same."""


def _slack(problem: Problem, assignment: Assignment) -> tuple[Slack, dict[tuple[str, int], set[int]]]:
    """Per (queue, fair-share tier) counting its GPUs: the GPUs it may lose there with its tier value
    the same (what it holds beyond the least that gives its share in whole thousandths; beyond its
    deserved share, what it holds above that), and the classes the tier counts of it."""
    slack: Slack = {}
    counted: dict[tuple[str, int], set[int]] = {}
    for level in fair_ranks(problem):
        for queue, name, deserved, held, asked in fair_terms(problem, level):
            if name != res.GPU:
                continue
            amount = held + placed_amount(problem, assignment, asked, problem.resource_index(name))
            fill = min(SHARE_SCALE, SHARE_SCALE * amount // deserved)
            least = -(-fill * deserved // SHARE_SCALE)
            slack[(queue, level)] = amount - least
            counted[(queue, level)] = set(asked)
    return slack, counted


def _loss(
    problem: Problem, assignment: Assignment, gang: Gang, gpu: int, counted: dict[tuple[str, int], set[int]]
) -> tuple[int, dict[int, int]]:
    """The GPUs ``gang``'s placed pods hold, and per tier that counts some of them, how many."""
    amount = 0
    loss: dict[int, int] = {}
    for c in gang.classes:
        k = assignment.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[gpu]
        if k <= 0:
            continue
        amount += k
        for (queue, level), classes in counted.items():
            if queue == gang.queue and c in classes:
                loss[level] = loss.get(level, 0) + k
    return amount, loss


def _within(
    problem: Problem,
    holders: list[tuple[int, int, dict[int, int]]],
    slack: Slack,
    queue: str,
    ask: int,
) -> list[int]:
    """Gangs of ``holders`` (one queue's) holding ``ask`` GPUs or more that the queue can lose
    together within its slack at every tier: the lowest-ranked single one holding the fewest, else
    the largest holders, lowest rank first, while the slack lasts; none where they do not suffice."""
    single = [(problem.gangs[g].rank, amount, g) for g, amount, _loss in holders if amount >= ask]
    if single:
        return [min(single)[2]]
    left = {level: k for (q, level), k in slack.items() if q == queue}
    out: list[int] = []
    total = 0
    for g, amount, loss in sorted(holders, key=lambda h: (problem.gangs[h[0]].rank, -h[1], h[0])):
        if any(left.get(level, 0) < k for level, k in loss.items()):
            continue
        for level, k in loss.items():
            left[level] -= k
        out.append(g)
        total += amount
        if total >= ask:
            return sorted(out)
    return []
