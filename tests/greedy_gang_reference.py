"""The greedy's per-gang path as it was before it was streamlined: the plain reference
tests/test_greedy_gang_path.py holds the greedy to.

Pod by pod, every capability is tested again before each pod, the node query is chosen again for
each pod, the fair-share fill orders its queues by :class:`fractions.Fraction` keys, and each placed
pod is charged to its queue on its own. :func:`use` swaps these into :mod:`vcsat.solver.greedy`.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction
from functools import partial

import pytest

from vcsat.solver import greedy
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import DRF_PIECES, SHARE_SCALE, fair_terms, tier_threshold, utility_pieces
from vcsat.solver.problem import Gang, Problem


def use(patch: pytest.MonkeyPatch) -> None:
    """Make :mod:`vcsat.solver.greedy` place gangs with this reference path."""
    patch.setattr(greedy, "_try_gang", try_gang)
    patch.setattr(greedy, "_fill_tier", fill_tier)
    patch.setattr(greedy, "_place", place)


def try_gang(
    problem: Problem, gang: Gang, room: greedy.Room, caps: list[dict[str, int]], within: list[int] | None
) -> greedy.Taken:
    taken: greedy.Taken = []
    used: dict[str, int] = {}
    least_fragmenting, scarce = room.choosers(problem)
    classes = sorted(
        (problem.classes[c] for c in gang.classes),
        key=lambda pc: (-problem.shapes[pc.shape].gpus, pc.index),
    )
    for pod_class in classes:
        shape = problem.shapes[pod_class.shape]
        request_by_name = dict(zip(problem.resources, shape.request, strict=True))
        limited = [
            (name, request_by_name.get(name, 0), cap)
            for limits in caps
            for name, cap in limits.items()
            if request_by_name.get(name, 0) > 0
        ]
        counted = {name: amount for name, amount, _cap in limited}
        tracker = room.interpod if pod_class.index in problem.isolated else None
        spread = room.spread if room.spread is not None and pod_class.index in room.spread.of_class else None
        allow = greedy._both(
            partial(tracker.allows, pod_class.index) if tracker is not None else None,
            partial(spread.allows, pod_class.index) if spread is not None else None,
        )
        attach = room.attach if shape.volumes else None
        if attach is not None:
            allow = greedy._both(allow, partial(greedy._attach_allows, attach, shape, room))
        query = room.query_key(shape.request, shape.fits, within)
        for _ in pod_class.pods:
            if any(used.get(name, 0) + amount > cap for name, amount, cap in limited):
                break
            if tracker is not None:
                tracker.begin()
            exact = True
            if query in room.full:
                node = None
            elif within is not None:
                node = room.best_fit_in(shape.request, shape.fits, within, allow)
            elif shape.preference:
                node = room.preferred_fit(shape, allow)
            elif least_fragmenting is not None and allow is None:
                node = least_fragmenting(room, shape)
                exact = False
            elif scarce is not None and room.priced(problem, scarce, shape):
                node = room.cheapest_fit(scarce, shape, allow)
            else:
                node = room.best_fit(shape.request, shape.gpus, shape.fits, allow)
            if node is None and exact and allow is None:
                room.note_full(query)
            if node is None:
                if tracker is not None:
                    tracker.stuck = True
                break
            room.take(node, shape.request)
            if tracker is not None:
                tracker.place(pod_class.index, node)
            if spread is not None:
                spread.add(pod_class.index, node, 1)
            if attach is not None:
                room.attach_slots(node, attach.add(shape.index, node, 1))
            for name, amount in counted.items():
                used[name] = used.get(name, 0) + amount
            taken.append((pod_class.index, shape.index, node))
    return taken


def fill_tier(
    problem: Problem,
    tier: int,
    order: list[Gang],
    tried: set[int],
    room: greedy.Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
    *,
    by_gain: bool,
    largest_first: bool = False,
) -> None:
    share: dict[str, tuple[str, int]] = {}
    for queue, name, deserved, _held, _asked in fair_terms(problem, tier):
        share[queue] = (name, deserved)
    waiting: dict[str, deque[Gang]] = {}
    thresholds = {queue: tier_threshold(problem, queue, tier) for queue in share}
    for gang in order:
        if gang.queue in share and gang.index not in tried and gang.rank >= thresholds[gang.queue]:
            waiting.setdefault(gang.queue, deque()).append(gang)
    if largest_first:  # each queue's gangs by what they ask of the level's resource, most first (stable)
        for queue, gangs in waiting.items():
            r = problem.resource_index(share[queue][0])
            waiting[queue] = deque(sorted(gangs, key=lambda gang: -_asks(problem, gang, r)))

    def fill(queue: str) -> Fraction:
        name, deserved = share[queue]
        return Fraction(held.get(queue, {}).get(name, 0), deserved)

    def gain(queue: str) -> Fraction:
        # The level's rise over the queue's next gang whole, per unit of the resource it takes.
        name, deserved = share[queue]
        r = problem.resource_index(name)
        gang = waiting[queue][0]
        taken = sum(
            len(problem.classes[c].pods) * problem.shapes[problem.classes[c].shape].request[r] for c in gang.classes
        )
        taken = max(1, taken)
        now = held.get(queue, {}).get(name, 0)
        before = min(Fraction(SHARE_SCALE), Fraction(SHARE_SCALE * now, deserved))
        after = min(Fraction(SHARE_SCALE), Fraction(SHARE_SCALE * (now + taken), deserved))
        return (utility(after) - utility(before)) / taken

    targets = {} if by_gain else level_targets(problem, room, share, held, waiting)

    def past_target(queue: str) -> Fraction:
        name, _deserved = share[queue]
        return Fraction(int(held.get(queue, {}).get(name, 0) >= targets[queue]))

    keys: dict[str, tuple[Fraction, ...]] = {}

    def key(queue: str) -> tuple[Fraction, ...]:
        return (-gain(queue), fill(queue)) if by_gain else (past_target(queue), fill(queue))

    for queue in waiting:
        keys[queue] = key(queue)
    while waiting:
        queue = min(waiting, key=lambda q: (*keys[q], q))
        if keys[queue][-1] >= 1:
            break
        gang = waiting[queue].popleft()
        if not waiting[queue]:
            del waiting[queue]
        tried.add(gang.index)
        if (place(problem, gang, room, queue_room, assignment, held) or by_gain) and queue in waiting:
            keys[queue] = key(queue)  # by gain, the queue's next gang is another: its key too


def level_targets(
    problem: Problem,
    room: greedy.Room,
    share: dict[str, tuple[str, int]],
    held: dict[str, dict[str, int]],
    waiting: dict[str, deque[Gang]],
) -> dict[str, int]:
    """Per queue, the units of its resource it would hold if the room's free units (on nodes with
    nothing overcommitted) went to the steepest gain of the level's utility first, units of equal
    gain shared in proportion to how many each queue has, rounded down."""
    targets: dict[str, int] = {}
    for name in {share[queue][0] for queue in waiting}:
        r = problem.resource_index(name)
        free = sum(max(0, row[r]) for row in room.free if min(row, default=0) >= 0)
        units: dict[Fraction, dict[str, int]] = {}  # per gain, per queue: units at that gain
        for queue in waiting:
            if share[queue][0] != name:
                continue
            deserved = share[queue][1]
            now = min(held.get(queue, {}).get(name, 0), deserved)
            asks = sum(
                len(problem.classes[c].pods) * problem.shapes[problem.classes[c].shape].request[r]
                for gang in waiting[queue]
                for c in gang.classes
            )
            targets[queue] = now
            top = min(deserved, now + asks)
            for part in range(DRF_PIECES):
                # The units of the part of the utility between what the queue holds and what it
                # could hold, and the slope of the utility's line that is lowest in its middle.
                low, high = deserved * part // DRF_PIECES, deserved * (part + 1) // DRF_PIECES
                start, end = max(low, now), min(high, top)
                if end <= start:
                    continue
                middle = Fraction(SHARE_SCALE * (low + high), 2 * deserved)
                slope = min(utility_pieces(), key=lambda line: line[0] * middle + line[1])[0]
                gain = Fraction(slope, deserved)
                units.setdefault(gain, {}).setdefault(queue, 0)
                units[gain][queue] += end - start
        for gain in sorted(units, reverse=True):
            group = units[gain]
            total = sum(group.values())
            if total <= free:
                for queue, count in group.items():
                    targets[queue] += count
                free -= total
                continue
            for queue, count in group.items():
                targets[queue] += free * count // total
            break
    return targets


def utility(share: Fraction) -> Fraction:
    """The level's concave utility of a share in thousandths, at any fraction of one."""
    return min(slope * share + offset for slope, offset in utility_pieces())


def place(
    problem: Problem,
    gang: Gang,
    room: greedy.Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
) -> bool:
    lineage_caps = [queue_room[q] for q in problem.caps_of(gang.queue)]
    taken = greedy.fit_topology_first(problem, gang, room, lineage_caps)
    if taken is None:
        return False
    assignment.placed.add(gang.index)
    usage = held.setdefault(gang.queue, {})
    for class_index, shape_index, node in taken:
        assignment.count[class_index] = assignment.count.get(class_index, 0) + 1
        key = (shape_index, node)
        assignment.shape_slots[key] = assignment.shape_slots.get(key, 0) + 1
        slot = (gang.index, shape_index, node)
        assignment.gang_slots[slot] = assignment.gang_slots.get(slot, 0) + 1
        greedy.charge(problem, problem.shapes[shape_index].request, 1, usage, lineage_caps)
    return True


def _asks(problem: Problem, gang: Gang, r: int) -> int:
    """What all of the gang's pods ask of resource ``r``."""
    return sum(len(problem.classes[c].pods) * problem.shapes[problem.classes[c].shape].request[r] for c in gang.classes)
